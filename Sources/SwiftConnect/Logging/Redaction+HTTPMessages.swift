import Foundation

// MARK: - HTTP messages a body carries

extension Redaction {
    /// Whether a body of this media type (lowercased, without parameters) can carry whole HTTP messages, their header
    /// lines and request lines written out: a batch (`multipart/mixed`, as Google's and OData's batch endpoints take
    /// and answer, and every other `multipart/` type but `multipart/form-data`, whose parts are fields) of
    /// `application/http` parts, or one such message as the body (`application/http`, `message/http`).
    package static func carriesHTTPMessages(mediaType type: String) -> Bool {
        (type.hasPrefix("multipart/") && !type.hasPrefix("multipart/form-data")) || type == "application/http"
            || type == "message/http"
    }

    /// `text`, the body of a type that ``carriesHTTPMessages(mediaType:)``, with each of its lines shown by the rules
    /// of an outer message: a header line (`Name: value`, its name a token) as `Name: ` and the value `field` shows
    /// for it, a request line (`GET /v1/me?access_token=… HTTP/1.1`) with its target shown by `target`, and every
    /// other line (a part's content, a status line) by `other`. Each line end (LF, or CRLF) is kept as it was.
    ///
    /// Every line that reads as a header line is shown so, inner body lines too: a line of text that starts with a
    /// token and a colon (`Note: …`) is shown as the field it looks like, which hides no more than its secrets would.
    package static func httpMessageLines(
        _ text: String,
        field: (_ name: String, _ value: String) -> String,
        target: (String) -> String,
        other: (String) -> String
    ) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        // Split at each LF as bytes: in a `String`, CRLF is one `Character`.
        let lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        for (index, bytes) in lines.enumerated() {
            if index > 0 { result += "\n" }
            var line = Substring(bytes)
            let hasCR = line.utf8.last == UInt8(ascii: "\r")
            if hasCR { line = Substring(line.utf8.dropLast()) }
            result += shownLine(line, field: field, target: target, other: other) + (hasCR ? "\r" : "")
        }
        return result
    }

    /// One line, without its line end, as ``httpMessageLines(_:field:target:other:)`` shows it.
    private static func shownLine(
        _ line: Substring, field: (String, String) -> String, target: (String) -> String, other: (String) -> String
    ) -> String {
        // Not a URL on a line of its own (`https://…`), whose scheme reads as a field's name.
        if let colon = line.firstIndex(of: ":"), colon > line.startIndex, !line[colon...].hasPrefix("://"),
            HTTPHeader.isValidName(String(line[..<colon]))
        {
            let name = String(line[..<colon])
            let rest = line[line.index(after: colon)...]
            let blanks = rest.prefix { $0 == " " || $0 == "\t" }
            let value = String(rest[blanks.endIndex...])
            return name + ":" + blanks + field(name, value)
        }
        let words = line.split(separator: " ", omittingEmptySubsequences: false)
        if words.count == 3, words[2].hasPrefix("HTTP/"), !words[1].isEmpty, HTTPHeader.isValidName(String(words[0])) {
            return words[0] + " " + target(String(words[1])) + " " + words[2]
        }
        return other(String(line))
    }

    /// `text` with the lines of the HTTP messages it carries hidden as the logs hide an outer message's: each header
    /// line's value as ``headerValue(_:name:redacting:)`` shows it, a request line's target as ``urlText(_:)``, every
    /// other line's URLs as ``urlsInText(_:showing:)``.
    static func redactedHTTPMessages(_ text: String) -> String {
        httpMessageLines(
            text, field: { headerValue($1, name: $0, redacting: true) }, target: { urlText($0) },
            other: { urlsInText($0) })
    }
}
