import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The `Set-Cookie` fields of a response, made safe to hand to `HTTPCookie.cookies(withResponseHeaderFields:for:)`.
///
/// FoundationNetworking's cookie parser (Linux) offsets a `String` by characters with a count of UTF-16 units: a
/// cookie whose name holds a character outside the Basic Multilingual Plane (`Set-Cookie: 😀=`) makes it index past
/// the end, which stops the process. Any server could send one. Every cookie the library hands to that parser goes
/// through ``readable(_:)`` first, which keeps only cookies written in visible ASCII, space and tab: RFC 6265 §4.1.1
/// allows nothing else in a cookie, and on such text characters and UTF-16 units are one and the same.
package enum SetCookieFields {
    /// The readable `Set-Cookie` fields of `response`, ready for `HTTPCookie.cookies(withResponseHeaderFields:for:)`;
    /// empty when it sets no cookie that can be read.
    static func readable(of response: HTTPURLResponse) -> [String: String] {
        var fields: [String: String] = [:]
        for case (let name as String, let value as String) in response.allHeaderFields
        where name.caseInsensitiveCompare("Set-Cookie") == .orderedSame {
            fields[name] = value
        }
        return fields.isEmpty ? fields : readable(fields)
    }

    /// The readable `Set-Cookie` fields of `head`, joined as one field as `HTTPURLResponse` joins them, ready for
    /// `HTTPCookie.cookies(withResponseHeaderFields:for:)`; empty when it sets no cookie that can be read.
    static func readable(of head: ResponseHead) -> [String: String] {
        let values = head.headerFields[values: "Set-Cookie"]
        return values.isEmpty ? [:] : readable(["Set-Cookie": values.joined(separator: ", ")])
    }

    /// `fields` with every cookie of its `Set-Cookie` fields that is not written in visible ASCII removed, and a
    /// `Set-Cookie` field left with none removed. Other fields are kept as they are.
    ///
    /// Repeated `Set-Cookie` fields arrive joined with commas (as `HTTPURLResponse` joins them); a comma inside an
    /// `Expires` date does not start a cookie.
    static func readable(_ fields: [String: String]) -> [String: String] {
        var readable = fields
        for (name, value) in fields where name.caseInsensitiveCompare("Set-Cookie") == .orderedSame {
            let kept = cookies(in: value).filter(isVisibleASCII)
            readable[name] = kept.isEmpty ? nil : kept.joined(separator: ",")
        }
        return readable
    }

    /// The cookies of a `Set-Cookie` value, split at the commas that join repeated fields.
    ///
    /// A piece whose text before its first `;` or `,` has no `=` is not a cookie: it is the rest of the one before it, cut
    /// at the comma of an `Expires` date (`Expires=Wed, 09 Jun 2021 10:18:14 GMT`).
    package static func cookies(in value: String) -> [Substring] {
        var cookies: [Substring] = []
        var start = value.startIndex
        var index = value.startIndex
        while index < value.endIndex {
            if value[index] == ",", startsACookie(value[value.index(after: index)...]) {
                cookies.append(value[start..<index])
                start = value.index(after: index)
            }
            index = value.index(after: index)
        }
        cookies.append(value[start...])
        return cookies
    }

    /// Whether `text` begins with a `name=` pair: an `=` before any `;` or `,`.
    private static func startsACookie(_ text: Substring) -> Bool {
        for character in text {
            if character == "=" { return true }
            if character == ";" || character == "," { return false }
        }
        return false
    }

    /// Whether `cookie` has only visible ASCII, spaces and tabs.
    static func isVisibleASCII(_ cookie: Substring) -> Bool {
        cookie.utf8.allSatisfy { $0 == 0x09 || (0x20...0x7E).contains($0) }
    }
}
