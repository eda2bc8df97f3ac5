import Foundation

/// JSON that `JSONSerialization` refuses for one value it cannot hold, though JSON's grammar (RFC 8259) allows it.
///
/// Foundation refuses a whole document for a number beyond `Double`'s range (`1e400`: "Number 1e400 is not
/// representable in Swift.") and for a lone surrogate escape (`"\ud800"` without its low half, a `\udc00` without its
/// high half), wherever they are. An error body with one of them in a field nobody reads lost its message with it;
/// the secrets it hands out could not be found either. ``value(of:)`` reads such a document with those values
/// replaced, and nothing else: text that is not JSON stays so.
extension JSONSyntax {
    /// The value of JSON text as `JSONSerialization` reads it, fragments allowed; when it refuses the text, the value
    /// of ``representable(_:)``'s copy, if that finds a value to replace. `nil` for text that is not JSON.
    ///
    /// Callers bound the text first (its size, ``JSONDepth``): it is parsed once, and a second time only after a
    /// failure for which a value was replaced.
    static func value(of data: Data) -> Any? {
        if let value = try? JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed) { return value }
        guard let representable = representable(data) else { return nil }
        return try? JSONSerialization.jsonObject(with: representable, options: .fragmentsAllowed)
    }

    /// `data` with the values `JSONSerialization` cannot hold replaced by values it reads: a number beyond `Double`'s
    /// range by `null` (no number stands for it, and a string would make a message of a number), a lone surrogate
    /// escape by `\ufffd`, U+FFFD, as decoders of UTF-16 read one. `nil` when there is none.
    ///
    /// One pass over the bytes, without recursion. Everything else is copied as it is: a number is replaced only when
    /// it is one by JSON's grammar, an escape only when it is `\u` and four hexadecimal digits, so text that is not
    /// JSON is not made JSON.
    static func representable(_ data: Data) -> Data? {
        let bytes = [UInt8](data)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var replaced = false
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == quote {
                output.append(byte)
                index = copyString(bytes, from: index + 1, into: &output, replaced: &replaced)
            } else if byte == minus || isDigit(byte) {
                var end = index
                while end < bytes.count, isNumberByte(bytes[end]) { end += 1 }
                let token = bytes[index..<end]
                if isNumber(token), let number = Double(String(decoding: token, as: UTF8.self)), !number.isFinite {
                    output.append(contentsOf: Array("null".utf8))
                    replaced = true
                } else {
                    output.append(contentsOf: token)
                }
                index = end
            } else {
                output.append(byte)
                index += 1
            }
        }
        return replaced ? Data(output) : nil
    }

    /// Copies the rest of a string that starts at `start` (after its opening quote), its closing quote included, with
    /// its lone surrogate escapes replaced; returns the index after it.
    private static func copyString(
        _ bytes: [UInt8], from start: Int, into output: inout [UInt8], replaced: inout Bool
    ) -> Int {
        var index = start
        while index < bytes.count {
            let byte = bytes[index]
            if byte == quote {
                output.append(byte)
                return index + 1
            }
            guard byte == backslash else {
                output.append(byte)
                index += 1
                continue
            }
            guard let unit = escapedUnit(bytes, at: index) else {
                // Another escape (a malformed one is left for the parser to refuse): the backslash and what it escapes.
                output.append(contentsOf: bytes[index..<min(index + 2, bytes.count)])
                index += 2
                continue
            }
            if highSurrogates.contains(unit), let next = escapedUnit(bytes, at: index + 6),
                lowSurrogates.contains(next)
            {
                output.append(contentsOf: bytes[index..<index + 12])
                index += 12
            } else if highSurrogates.contains(unit) || lowSurrogates.contains(unit) {
                output.append(contentsOf: Array(#"\ufffd"#.utf8))
                replaced = true
                index += 6
            } else {
                output.append(contentsOf: bytes[index..<index + 6])
                index += 6
            }
        }
        return index
    }

    /// The UTF-16 code unit of the `\uXXXX` escape at `index`, or `nil` when there is none there.
    private static func escapedUnit(_ bytes: [UInt8], at index: Int) -> UInt16? {
        guard index + 6 <= bytes.count, bytes[index] == backslash, bytes[index + 1] == UInt8(ascii: "u") else {
            return nil
        }
        var unit: UInt16 = 0
        for byte in bytes[index + 2..<index + 6] {
            guard let digit = PercentEncoding.hexValue(byte) else { return nil }
            unit = unit << 4 | UInt16(digit)
        }
        return unit
    }

    /// Whether `token` is a number by JSON's grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    private static func isNumber(_ token: ArraySlice<UInt8>) -> Bool {
        var rest = token[...]
        if rest.first == minus { rest = rest.dropFirst() }
        guard let first = rest.first, isDigit(first) else { return false }
        rest = first == UInt8(ascii: "0") ? rest.dropFirst() : rest.drop(while: isDigit)
        if rest.first == UInt8(ascii: ".") {
            let fraction = rest.dropFirst()
            rest = fraction.drop(while: isDigit)
            guard rest.count < fraction.count else { return false }
        }
        if rest.first == UInt8(ascii: "e") || rest.first == UInt8(ascii: "E") {
            var exponent = rest.dropFirst()
            if exponent.first == UInt8(ascii: "+") || exponent.first == minus { exponent = exponent.dropFirst() }
            rest = exponent.drop(while: isDigit)
            guard rest.count < exponent.count else { return false }
        }
        return rest.isEmpty
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }

    /// Whether `byte` can be part of a number's token: a digit, a sign, a point or an exponent's letter.
    private static func isNumberByte(_ byte: UInt8) -> Bool {
        isDigit(byte) || byte == minus || byte == UInt8(ascii: "+") || byte == UInt8(ascii: ".")
            || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
    }

    private static let quote = UInt8(ascii: "\"")
    private static let backslash = UInt8(ascii: "\\")
    private static let minus = UInt8(ascii: "-")
    private static let highSurrogates: ClosedRange<UInt16> = 0xD800...0xDBFF
    private static let lowSurrogates: ClosedRange<UInt16> = 0xDC00...0xDFFF
}
