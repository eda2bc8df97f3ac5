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

    /// The cookies of a `Set-Cookie` value that Foundation joined from repeated fields (`HTTPURLResponse` joins them
    /// with `", "`), split again where one field ended.
    ///
    /// A comma splits only where a cookie's `name=` follows it (optional spaces or tabs, then a token or nothing, then
    /// `=`): a comma in a value (`a=b,c`), in an attribute (`Comment=one, two`) or in an `Expires` date (`Expires=Wed,
    /// 09 Jun 2077 10:18:14 GMT`) is part of its cookie, and so is any comma inside a quoted value (`q="x, y=z"`, up to
    /// its closing quote before the next `;`). A name that is not a token (`k=v, w x=y`) starts no cookie, but for one
    /// with characters outside ASCII (``startsACookie(_:)``). What stays ambiguous once joined: a field whose own comma
    /// is followed by `name=` (`a=1, b=2` in one field, or `Path=/x,y=z`) reads as two, since two fields `a=1` and
    /// `b=2` are joined to the same text. An engine that hands the core each field (AsyncHTTPClient) needs no split:
    /// each field is one cookie there.
    package static func cookies(in value: String) -> [Substring] {
        var cookies: [Substring] = []
        var start = value.startIndex
        var index = value.startIndex
        // Before the cookie's first `;` and its first `=`: the `=` that ends its name is still to come.
        var inName = true
        while index < value.endIndex {
            switch value[index] {
            case ";":
                inName = false
            case "=" where inName:
                inName = false
                if let close = closingQuote(ofValueAfter: index, in: value) { index = close }
            case "," where startsACookie(value[value.index(after: index)...]):
                cookies.append(value[start..<index])
                start = value.index(after: index)
                inName = true
            default:
                break
            }
            index = value.index(after: index)
        }
        cookies.append(value[start...])
        return cookies
    }

    /// The closing `"` of a quoted cookie value that starts after the `=` at `equals` (optional spaces or tabs, then
    /// `"`), when it comes before the next `;`; `nil` for a value that is not quoted, or whose quote is not closed.
    private static func closingQuote(ofValueAfter equals: String.Index, in value: String) -> String.Index? {
        let rest = value[value.index(after: equals)...].drop { $0 == " " || $0 == "\t" }
        guard rest.first == "\"" else { return nil }
        for index in rest.indices.dropFirst() {
            if rest[index] == "\"" { return index }
            if rest[index] == ";" { return nil }
        }
        return nil
    }

    /// Whether `text` begins with a cookie's `name=`: optional spaces or tabs, a name (a token, RFC 9110 §5.6.2, or
    /// nothing), optional spaces or tabs, then `=`. A name with characters outside ASCII counts too: no such cookie is
    /// kept (``isVisibleASCII(_:)``), but split off, it takes none of its neighbours with it.
    private static func startsACookie(_ text: Substring) -> Bool {
        let name = text.drop { $0 == " " || $0 == "\t" }.drop(while: isNameCharacter)
        return name.drop { $0 == " " || $0 == "\t" }.first == "="
    }

    /// Whether `character` may be part of a cookie's name where a comma may split: a `tchar` of RFC 9110 §5.6.2 (a
    /// letter, a digit or one of ``!#$%&'*+-.^_`|~``), or any character outside ASCII.
    private static func isNameCharacter(_ character: Character) -> Bool {
        guard let ascii = character.asciiValue else { return !character.isASCII }
        switch ascii {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(ascii)
        }
    }

    /// Whether `cookie` has only visible ASCII, spaces and tabs.
    static func isVisibleASCII(_ cookie: Substring) -> Bool {
        cookie.utf8.allSatisfy { $0 == 0x09 || (0x20...0x7E).contains($0) }
    }
}
