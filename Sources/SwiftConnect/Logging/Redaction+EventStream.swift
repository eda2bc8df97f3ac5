import Foundation

// MARK: - Server-sent events

extension Redaction {
    /// An event stream's text (`text/event-stream`) as logs show it: each event whose data (its `data:` lines joined
    /// with a line feed, as a reader joins them) is JSON with a sensitive field shown as a JSON body is, compact and
    /// with those fields hidden (``redactJSON(_:)``), on the event's first `data:` line, its other `data:` lines left
    /// out. Data that starts like JSON, does not parse and holds a string (an event cut short, JSON deeper than
    /// ``maximumJSONDepth``) is shown as the placeholder, since its secrets cannot be found; data without one
    /// (`[DONE]`) as it came. Data of one line that reads as a URL-encoded form (``readsAsForm(_:)``) has its secret
    /// fields hidden as a form's, and data that reads as credentials (``plainTextCredential(in:contentType:)``:
    /// `Bearer …`) its credential, as a plain-text body's. Every line's URLs are hidden as
    /// ``urlsInText(_:showing:)`` hides them; line ends are kept. A secret an event's data hands out under a secret
    /// name (``secretStrings(of:underSensitiveKey:)``), or as a form's secret field or a credential, is hidden by
    /// value wherever the stream quotes it again (a later event's message, a comment), as a JSON body hides it. Lines
    /// end at CRLF, LF or a lone CR, as the stream's reader reads them.
    static func redactedEventStream(_ text: String) -> String {
        // Lines end at CRLF, LF or a lone CR, as an event stream's reader reads them (the WHATWG spec allows all
        // three): each kept with its own end, to show as it came.
        var lines: [String?] = []
        var ends: [String] = []
        let bytes = Array(text.utf8)
        var start = 0
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") else {
                index += 1
                continue
            }
            let isCRLF = byte == UInt8(ascii: "\r") && index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "\n")
            lines.append(String(decoding: bytes[start..<index], as: UTF8.self))
            ends.append(isCRLF ? "\r\n" : byte == UInt8(ascii: "\n") ? "\n" : "\r")
            index += isCRLF ? 2 : 1
            start = index
        }
        lines.append(String(decoding: bytes[start...], as: UTF8.self))
        ends.append("")
        var event: [Int] = []
        var handedOut: [String] = []
        for index in lines.indices {
            guard let line = lines[index] else { continue }
            if line.isEmpty {
                handedOut += shownEventData(at: event, of: &lines)
                event = []
            } else if line.hasPrefix("data:") {
                event.append(index)
            }
        }
        handedOut += shownEventData(at: event, of: &lines)
        // A line left out goes with its end.
        let shown = lines.indices.compactMap { index in lines[index].map { urlsInText($0) + ends[index] } }.joined()
        return handedOut.isEmpty ? shown : SecretValues(values: handedOut).hiding(in: shown)
    }

    /// Rewrites the `data:` lines at `indices` of `lines` (one event's) as ``redactedEventStream(_:)`` shows them, and
    /// returns the secrets the event's JSON data hands out under a secret name.
    private static func shownEventData(at indices: [Int], of lines: inout [String?]) -> [String] {
        guard let first = indices.first else { return [] }
        let values = indices.map { index -> String in
            let value = (lines[index] ?? "").dropFirst("data:".count)
            return String(value.hasPrefix(" ") ? value.dropFirst() : value)
        }
        let joined = values.joined(separator: "\n")
        let data = Data(joined.utf8)
        let start = data.first { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }
        let shown: String
        var handedOut: [String] = []
        if start != UInt8(ascii: "{") && start != UInt8(ascii: "[") {
            // Data of one line that is not JSON: a form's secret fields (`access_token=…&expires_in=3600`) hidden as
            // a `text/plain` body's are, and the credential of `Bearer …` as a header's is.
            guard !joined.contains(where: \.isNewline) else { return [] }
            let isForm = readsAsForm(joined)
            var hidden = isForm ? redactedQuery(joined) : joined
            if let credential = plainTextCredential(in: hidden, contentType: nil) {
                handedOut.append(String(hidden[credential]))
                hidden.replaceSubrange(credential, with: placeholder)
            }
            guard hidden != joined else { return [] }
            // What it hands out is hidden where the stream quotes it again, as a JSON event's secrets are.
            if isForm { handedOut += SecretValues.formSecrets(joined) }
            shown = hidden
        } else if !JSONDepth.exceeds(data, limit: maximumJSONDepth),
            let json = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        {
            guard containsSensitiveField(json) else { return [] }
            shown = serialised(redactJSON(json), pretty: false) ?? placeholder
            handedOut = secretStrings(of: json)
        } else {
            guard data.contains(UInt8(ascii: "\"")) else { return [] }
            shown = placeholder
        }
        lines[first] = "data: " + shown
        // The event's other data lines, left out with their line ends.
        for index in indices.dropFirst() { lines[index] = nil }
        return handedOut
    }
}
