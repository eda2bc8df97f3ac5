import Foundation

/// The text fields of a multipart upload taken from a connector's `.jsonObject`: one per key of the top-level
/// JSON object, in the order the encoder wrote them.
enum JSONFormFields {
    /// The fields of a URL-encoded form, in order: `+` read as a space and percent escapes undone.
    static func fields(ofForm form: Data) -> [(String, String)] {
        func decoded(_ text: Substring) -> String {
            let spaced = text.replacingOccurrences(of: "+", with: " ")
            return spaced.removingPercentEncoding ?? spaced
        }
        return String(decoding: form, as: UTF8.self).split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (decoded(parts[0]), parts.count > 1 ? decoded(parts[1]) : "")
        }
    }

    /// The fields of `json`, an encoded top-level JSON object: a string value as is, any other value (number,
    /// `true`/`false`, `null`, an object or an array) as its JSON text.
    ///
    /// - Throws: ``ConnectError/InvalidRequestReason/bodyEncodingFailed(_:)`` when `json` is not a JSON object.
    static func fields(of json: Data) throws -> [(String, String)] {
        guard (try? JSONSerialization.jsonObject(with: json, options: [.fragmentsAllowed])) is [String: Any] else {
            throw ConnectError.invalidRequest(
                .bodyEncodingFailed(
                    "upload(files:to:) sends a .jsonObject as form fields, one per key, so its top level must be a "
                        + "JSON object"))
        }
        // Valid JSON, checked above: the scan only has to find where each key and value starts and ends.
        let bytes = [UInt8](json)
        var index = 0
        var fields: [(String, String)] = []
        skipWhitespace(bytes, &index)
        index += 1  // {
        while true {
            skipWhitespace(bytes, &index)
            guard index < bytes.count, bytes[index] != UInt8(ascii: "}") else { break }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            let keyStart = index
            skipValue(bytes, &index)
            let key = try decodedString(bytes[keyStart..<index])
            skipWhitespace(bytes, &index)
            index += 1  // :
            skipWhitespace(bytes, &index)
            let valueStart = index
            skipValue(bytes, &index)
            let value = bytes[valueStart..<index]
            if value.first == UInt8(ascii: "\"") {
                fields.append((key, try decodedString(value)))
            } else {
                fields.append((key, String(decoding: value, as: UTF8.self)))
            }
        }
        return fields
    }

    private static func skipWhitespace(_ bytes: [UInt8], _ index: inout Int) {
        while index < bytes.count, isWhitespace(bytes[index]) { index += 1 }
    }

    /// Whether `byte` is JSON whitespace (space, tab, LF, CR).
    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// Moves past one JSON value (a string, an object or array with everything inside, or a scalar).
    private static func skipValue(_ bytes: [UInt8], _ index: inout Int) {
        var depth = 0
        var inString = false
        while index < bytes.count {
            let byte = bytes[index]
            if inString {
                if byte == UInt8(ascii: "\\") {
                    index += 1
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                    if depth == 0 {
                        index += 1
                        return
                    }
                }
            } else {
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    if depth == 0 { return }  // the end of the enclosing object
                    depth -= 1
                    if depth == 0 {
                        index += 1
                        return
                    }
                case UInt8(ascii: ","), 0x20, 0x09, 0x0A, 0x0D:
                    if depth == 0 { return }
                default: break
                }
            }
            index += 1
        }
    }

    /// The text of a JSON string literal (quotes included in `literal`), its escapes resolved.
    private static func decodedString(_ literal: ArraySlice<UInt8>) throws -> String {
        guard let text = try? JSONSerialization.jsonObject(with: Data(literal), options: [.fragmentsAllowed]) as? String
        else {
            throw ConnectError.invalidRequest(
                .bodyEncodingFailed("a key or string value of the .jsonObject is invalid"))
        }
        return text
    }
}
