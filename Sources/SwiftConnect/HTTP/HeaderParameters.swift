import Foundation

/// The `; name=value` parameters of a header value, such as a `Content-Type`'s `charset` and `boundary` or a
/// `Content-Disposition`'s `name` (RFC 9110 §5.6.6): the one reading of them that the core's redaction and
/// ``MimeType/parameter(_:)`` share.
package enum HeaderParameters {
    /// The value of the parameter `name` (compared ignoring ASCII case) in `headerValue`, without the quotes and
    /// backslash escapes of a quoted string; `nil` when it has none. A quoted value may hold `;`, `=` and escaped
    /// characters (`name="user;password"`, `name="a\"b"`): a `;` inside one separates nothing.
    package static func value(of name: String, in headerValue: String) -> String? {
        let name = name.lowercased()
        for item in items(of: headerValue).dropFirst() {
            guard let equals = item.firstIndex(of: "=") else { continue }
            guard item[..<equals].trimmingCharacters(in: .whitespaces).lowercased() == name else { continue }
            return unquoted(item[item.index(after: equals)...].trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    /// `headerValue` split at each `;` outside a quoted string: the value itself, then each parameter.
    private static func items(of headerValue: String) -> [Substring] {
        var items: [Substring] = []
        var start = headerValue.startIndex
        var isQuoted = false
        var isEscaped = false
        for index in headerValue.indices {
            let character = headerValue[index]
            if isEscaped {
                isEscaped = false
            } else if isQuoted, character == "\\" {
                isEscaped = true
            } else if character == "\"" {
                isQuoted.toggle()
            } else if character == ";", !isQuoted {
                items.append(headerValue[start..<index])
                start = headerValue.index(after: index)
            }
        }
        items.append(headerValue[start...])
        return items
    }

    /// `value` without the quotes and backslash escapes of a quoted string; as it is when not quoted.
    private static func unquoted(_ value: String) -> String {
        guard value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") else { return value }
        var result = ""
        var isEscaped = false
        for character in value.dropFirst().dropLast() {
            if !isEscaped, character == "\\" {
                isEscaped = true
                continue
            }
            isEscaped = false
            result.append(character)
        }
        return result
    }
}
