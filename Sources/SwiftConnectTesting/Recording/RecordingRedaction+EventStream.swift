import Foundation
import SwiftConnect

// MARK: - Server-sent events

extension RecordingRedaction {
    /// Whether `contentType` is a server-sent event stream (`text/event-stream`).
    static func isEventStream(_ contentType: String?) -> Bool {
        guard let type = contentType?.split(separator: ";").first else { return false }
        return type.trimmingCharacters(in: .whitespaces).lowercased() == "text/event-stream"
    }

    /// An event stream's text with the secrets of each event's data that is JSON replaced as a JSON answer's are: the
    /// data (its `data:` lines joined, as a reader joins them) re-serialised with sorted keys, its secret keys'
    /// values placeholders, on the event's first `data:` line, and its other `data:` lines left out. Data that starts
    /// like JSON and does not parse (`[DONE]`, an event cut short) is kept, the strings it holds under secret keys
    /// hidden by value (``SwiftConnect/SecretValues``: not those under 4 characters). Every other line, and an event
    /// whose data holds no secret, as it came.
    static func redactedEventStream(_ text: String) -> String {
        // A byte order mark starts no field: kept, and the stream after it read as a reader reads it.
        if text.unicodeScalars.first == "\u{FEFF}" {
            return "\u{FEFF}" + redactedEventStream(String(text.unicodeScalars.dropFirst()))
        }
        var lines = eventStreamLines(text)
        for event in events(in: lines) {
            let data = Data(event.data.utf8)
            let replacement: String
            if !JSONDepth.exceeds(data, limit: Redaction.maximumJSONDepth), let json = parsedJSON(data) {
                guard containsSecretKey(json) else { continue }
                let options: JSONSerialization.WritingOptions = [.sortedKeys, .withoutEscapingSlashes]
                replacement =
                    (try? JSONSerialization.data(withJSONObject: redactingSecretKeys(json), options: options))
                    .map { String(decoding: $0, as: UTF8.self) } ?? placeholder("body")
            } else {
                // Not JSON after all (`[DONE]`), or cut short: kept, the strings under its secret keys hidden by value.
                let scanned = SecretValues(values: secretStringsScanned(in: data))
                for index in event.lines { lines[index].text = scanned.hiding(in: lines[index].text) }
                continue
            }
            lines[event.lines[0]].text = "data: " + replacement
            for index in event.lines.dropFirst() { lines[index] = (text: "", end: "") }
        }
        return lines.map { $0.text + $0.end }.joined()
    }

    /// The secret values an event stream hands out: the strings under a secret key of each event's data that is
    /// JSON (read token by token when it does not parse).
    static func secretsHandedOut(byEventStream text: String) -> [String] {
        if text.unicodeScalars.first == "\u{FEFF}" {
            return secretsHandedOut(byEventStream: String(text.unicodeScalars.dropFirst()))
        }
        var found: [String] = []
        for event in events(in: eventStreamLines(text)) {
            let data = Data(event.data.utf8)
            if !JSONDepth.exceeds(data, limit: Redaction.maximumJSONDepth), let json = parsedJSON(data) {
                collectSecretStrings(json, underSecretKey: false, into: &found)
            } else {
                found += secretStringsScanned(in: data)
            }
        }
        return found
    }

    /// `text` as lines, each with the line end that follows it (CRLF, LF or CR, as the format allows; empty for the
    /// last line when the text does not end with one).
    private static func eventStreamLines(_ text: String) -> [(text: String, end: String)] {
        var lines: [(text: String, end: String)] = []
        let scalars = text.unicodeScalars
        var start = scalars.startIndex
        var index = scalars.startIndex
        while index < scalars.endIndex {
            let scalar = scalars[index]
            guard scalar == "\n" || scalar == "\r" else {
                index = scalars.index(after: index)
                continue
            }
            var next = scalars.index(after: index)
            if scalar == "\r", next < scalars.endIndex, scalars[next] == "\n" { next = scalars.index(after: next) }
            lines.append((String(scalars[start..<index]), String(scalars[index..<next])))
            start = next
            index = next
        }
        if start < scalars.endIndex { lines.append((String(scalars[start...]), "")) }
        return lines
    }

    /// The events of an event stream whose data starts like JSON: the indices of their `data:` lines, and their data
    /// (each line's value after `data:` and one space, joined with line feeds). An event ends at a blank line, or
    /// with the text.
    private static func events(in lines: [(text: String, end: String)]) -> [(lines: [Int], data: String)] {
        var events: [(lines: [Int], data: String)] = []
        var current: [Int] = []
        func close() {
            defer { current = [] }
            guard !current.isEmpty else { return }
            let data = current.map { index -> Substring in
                var value = lines[index].text.dropFirst(4)
                if value.first == ":" { value = value.dropFirst() }
                return value.first == " " ? value.dropFirst() : value
            }.joined(separator: "\n")
            if startsLikeJSON(Data(data.utf8)) { events.append((current, data)) }
        }
        for (index, line) in lines.enumerated() {
            if line.text.isEmpty {
                close()
            } else if line.text == "data" || line.text.hasPrefix("data:") {
                current.append(index)
            }
        }
        close()
        return events
    }
}
