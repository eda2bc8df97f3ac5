import Foundation

/// Measures how deeply JSON text nests, in one pass over its bytes, without parsing it and without recursion.
///
/// Foundation's JSON parser refuses more than ``foundationLimit`` levels with an error, but what SwiftConnect
/// does with a parsed value (re-serialising it for debug output, walking it to hide secrets) recurses once per
/// level, and the Foundation writer overflows a 512 KiB thread stack (the size of Apple's dispatch worker
/// threads) from about 300 levels of objects. Check a body with ``exceeds(_:limit:)`` before such work.
package enum JSONDepth {
    /// The deepest nesting `JSONSerialization` and `JSONDecoder` accept; one level more is an error.
    static let foundationLimit = 512

    /// Whether `data`, read as JSON, has more than `limit` arrays or objects open inside one another.
    ///
    /// Brackets inside strings, escaped quotes included, do not count. The text is not validated: malformed
    /// JSON is measured as far as it goes, and a stray closing bracket never takes the depth below zero.
    ///
    /// - Parameters:
    ///   - data: The JSON text, in UTF-8 (any byte of a multi-byte character is above ASCII, so never a bracket), or
    ///     in the UTF-16 or UTF-32 its byte order mark or its first character says, as Foundation's parser reads it
    ///     (measured once transcoded: `∀` is `22 00` in UTF-16LE, a quote to a byte scan, which then never left the
    ///     "string" and let 500 levels through).
    ///   - limit: The deepest nesting allowed.
    /// - Returns: `true` as soon as the nesting goes beyond `limit`.
    package static func exceeds(_ data: Data, limit: Int) -> Bool {
        let start = data.startIndex
        if data.count >= 2, data[start] == 0 || data[start + 1] == 0 || data[start] == 0xFE || data[start] == 0xFF {
            // Text that does not transcode is no JSON Foundation parses: measured as its bytes, as before.
            return scanExceeds(JSONSyntax.utf8(data) ?? data, limit: limit)
        }
        return scanExceeds(data, limit: limit)
    }

    /// ``exceeds(_:limit:)`` for UTF-8 text.
    private static func scanExceeds(_ data: Data, limit: Int) -> Bool {
        data.withUnsafeBytes { bytes in
            var depth = 0
            var inString = false
            var escaped = false
            for byte in bytes {
                if inString {
                    if escaped {
                        escaped = false
                    } else if byte == backslash {
                        escaped = true
                    } else if byte == quote {
                        inString = false
                    }
                    continue
                }
                switch byte {
                case quote:
                    inString = true
                case openBracket, openBrace:
                    depth += 1
                    if depth > limit { return true }
                case closeBracket, closeBrace:
                    depth = max(0, depth - 1)
                default:
                    break
                }
            }
            return false
        }
    }

    private static let quote = UInt8(ascii: "\"")
    private static let backslash = UInt8(ascii: "\\")
    private static let openBracket = UInt8(ascii: "[")
    private static let closeBracket = UInt8(ascii: "]")
    private static let openBrace = UInt8(ascii: "{")
    private static let closeBrace = UInt8(ascii: "}")
}
