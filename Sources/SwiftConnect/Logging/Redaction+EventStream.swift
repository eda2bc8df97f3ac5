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
    /// name (``secretStrings(of:underSensitiveKey:)``) is hidden by value wherever the stream quotes it again (a later
    /// event's message, a comment), as a JSON body hides it.
    static func redactedEventStream(_ text: String) -> String {
        // Split at each LF as bytes: in a `String`, CRLF is one `Character`.
        var lines: [String?] = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map {
            String(Substring($0))
        }
        var event: [Int] = []
        var handedOut: [String] = []
        for index in lines.indices {
            guard var line = lines[index] else { continue }
            if line.hasSuffix("\r") { line = String(line.dropLast()) }
            if line.isEmpty {
                handedOut += shownEventData(at: event, of: &lines)
                event = []
            } else if line.hasPrefix("data:") {
                event.append(index)
            }
        }
        handedOut += shownEventData(at: event, of: &lines)
        let shown = lines.compactMap { $0 }.map { urlsInText($0) }.joined(separator: "\n")
        return handedOut.isEmpty ? shown : SecretValues(values: handedOut).hiding(in: shown)
    }

    /// Rewrites the `data:` lines at `indices` of `lines` (one event's) as ``redactedEventStream(_:)`` shows them, and
    /// returns the secrets the event's JSON data hands out under a secret name.
    private static func shownEventData(at indices: [Int], of lines: inout [String?]) -> [String] {
        guard let first = indices.first else { return [] }
        let values = indices.map { index -> String in
            var line = lines[index] ?? ""
            if line.hasSuffix("\r") { line = String(line.dropLast()) }
            let value = line.dropFirst("data:".count)
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
            var hidden = readsAsForm(joined) ? redactedQuery(joined) : joined
            if let credential = plainTextCredential(in: hidden, contentType: nil) {
                hidden.replaceSubrange(credential, with: placeholder)
            }
            guard hidden != joined else { return [] }
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
        let end = lines[first]?.hasSuffix("\r") == true ? "\r" : ""
        lines[first] = "data: " + shown + end
        // The event's other data lines, left out with their line ends.
        for index in indices.dropFirst() { lines[index] = nil }
        return handedOut
    }
}
