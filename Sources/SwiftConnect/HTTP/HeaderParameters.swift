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
    ///
    /// A quoted string starts only where a parameter's value does, right after its `=` (blanks allowed between, as
    /// ``value(of:in:)`` trims them): a `"` anywhere else, in the value itself or inside a token
    /// (`charset=utf-8"`, `filename=a"b.txt`), is an ordinary character, as browsers read such fields (RFC 9110
    /// §5.6.6, RFC 6266), so that the parameters after it are still read. A quoted string that never closes ends at
    /// the next `;` after its opening quote, as the cache's `Cache-Control` reading does: `name="a; size=3` still
    /// has `size`.
    private static func items(of headerValue: String) -> [Substring] {
        var items: [Substring] = []
        let bytes = headerValue.utf8
        var start = bytes.startIndex
        var index = bytes.startIndex
        // Where a parameter's value may open a quoted string: after its `=` and any blanks, not in the value itself.
        var isValueStart = false
        // Whether this parameter's `=` was read: a later one is part of its value.
        var hasEquals = false
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: ";") {
                items.append(headerValue[start..<index])
                start = bytes.index(after: index)
                isValueStart = false
                hasEquals = false
            } else if byte == UInt8(ascii: "="), !items.isEmpty, !hasEquals {
                hasEquals = true
                isValueStart = true
            } else if byte == UInt8(ascii: "\""), isValueStart {
                isValueStart = false
                if let end = closingQuote(in: bytes, after: index) {
                    index = end
                } else if let semicolon = bytes[index...].firstIndex(of: UInt8(ascii: ";")) {
                    // Unclosed: the value ends at the next `;`, which the loop reads next.
                    index = semicolon
                    continue
                } else {
                    break
                }
            } else if byte != UInt8(ascii: " "), byte != UInt8(ascii: "\t") {
                isValueStart = false
            }
            bytes.formIndex(after: &index)
        }
        items.append(headerValue[start...])
        return items
    }

    /// The index of the quote that closes the quoted string opened at `opening`, skipping backslash escapes; `nil`
    /// when it never closes.
    private static func closingQuote(in bytes: String.UTF8View, after opening: String.Index) -> String.Index? {
        var index = bytes.index(after: opening)
        var isEscaped = false
        while index < bytes.endIndex {
            let byte = bytes[index]
            if isEscaped {
                isEscaped = false
            } else if byte == UInt8(ascii: "\\") {
                isEscaped = true
            } else if byte == UInt8(ascii: "\"") {
                return index
            }
            bytes.formIndex(after: &index)
        }
        return nil
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
