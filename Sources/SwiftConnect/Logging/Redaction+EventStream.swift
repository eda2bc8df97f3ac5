import Foundation

// MARK: - Server-sent events

extension Redaction {
    /// An event stream's text (`text/event-stream`) as logs show it: each event whose data (its `data:` lines joined
    /// with a line feed, as a reader joins them) is JSON with a sensitive field shown as a JSON body is, compact and
    /// with those fields hidden (``redactJSON(_:)``), on the event's first `data:` line, its other `data:` lines left
    /// out. Data that starts like JSON, does not parse and holds a string (an event cut short, JSON deeper than
    /// ``maximumJSONDepth``) is shown as the placeholder, since its secrets cannot be found; data without one (`[DONE]`)
    /// as it came. Every line's URLs are hidden as ``urlsInText(_:showing:)`` hides them; line ends are kept.
    static func redactedEventStream(_ text: String) -> String {
        // Split at each LF as bytes: in a `String`, CRLF is one `Character`.
        var lines: [String?] = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map {
            String(Substring($0))
        }
        var event: [Int] = []
        for index in lines.indices {
            guard var line = lines[index] else { continue }
            if line.hasSuffix("\r") { line = String(line.dropLast()) }
            if line.isEmpty {
                shownEventData(at: event, of: &lines)
                event = []
            } else if line.hasPrefix("data:") {
                event.append(index)
            }
        }
        shownEventData(at: event, of: &lines)
        return lines.compactMap { $0 }.map { urlsInText($0) }.joined(separator: "\n")
    }

    /// Rewrites the `data:` lines at `indices` of `lines` (one event's) as ``redactedEventStream(_:)`` shows them.
    private static func shownEventData(at indices: [Int], of lines: inout [String?]) {
        guard let first = indices.first else { return }
        let values = indices.map { index -> String in
            var line = lines[index] ?? ""
            if line.hasSuffix("\r") { line = String(line.dropLast()) }
            let value = line.dropFirst("data:".count)
            return String(value.hasPrefix(" ") ? value.dropFirst() : value)
        }
        let data = Data(values.joined(separator: "\n").utf8)
        let start = data.first { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }
        guard start == UInt8(ascii: "{") || start == UInt8(ascii: "[") else { return }
        let shown: String
        if !JSONDepth.exceeds(data, limit: maximumJSONDepth),
            let json = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        {
            guard containsSensitiveField(json) else { return }
            shown = serialised(redactJSON(json), pretty: false) ?? placeholder
        } else {
            guard data.contains(UInt8(ascii: "\"")) else { return }
            shown = placeholder
        }
        let end = lines[first]?.hasSuffix("\r") == true ? "\r" : ""
        lines[first] = "data: " + shown + end
        // The event's other data lines, left out with their line ends.
        for index in indices.dropFirst() { lines[index] = nil }
    }
}
