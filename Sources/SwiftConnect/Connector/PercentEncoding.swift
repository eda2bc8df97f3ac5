/// A set of ASCII bytes stored as two 64-bit masks, so membership is a shift and an AND (no table lookups
/// through a lazily initialised global, no `CharacterSet` bridging).
package struct ASCIIByteSet: Sendable {
    /// Bit `n` set means byte `n` (0..<64) is in the set.
    let low: UInt64
    /// Bit `n` set means byte `64 + n` (64..<128) is in the set.
    let high: UInt64

    /// `A-Z a-z 0-9`.
    package static let alphanumerics = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

    /// Creates the set of the given ASCII characters.
    package init(_ characters: String) {
        var low: UInt64 = 0
        var high: UInt64 = 0
        for byte in characters.utf8 {
            precondition(byte < 128, "ASCIIByteSet holds ASCII only")
            if byte < 64 { low |= 1 << UInt64(byte) } else { high |= 1 << UInt64(byte - 64) }
        }
        self.low = low
        self.high = high
    }

    /// Whether `byte` is in the set (never for a non-ASCII byte).
    @inline(__always)
    package func contains(_ byte: UInt8) -> Bool {
        if byte < 64 { return low & (1 << UInt64(byte)) != 0 }
        if byte < 128 { return high & (1 << UInt64(byte &- 64)) != 0 }
        return false
    }
}

/// Percent-encoding (RFC 3986 §2.1) into byte buffers.
///
/// Everything here encodes every byte outside the RFC 3986 *unreserved* set (`A-Z a-z 0-9 - . _ ~`), so an
/// encoded string is a single opaque path segment, query name or query value: it can never contain a `/`,
/// `?`, `#`, `&`, `=`, `+` or `%` that a parser would read as structure. Non-ASCII text is encoded as its
/// UTF-8 bytes. Hex digits are uppercase.
package enum PercentEncoding {
    /// RFC 3986 unreserved characters: the only bytes left as they are.
    package static let unreserved = ASCIIByteSet(ASCIIByteSet.alphanumerics + "-._~")

    /// The characters an endpoint may contain literally, outside `{placeholders}`: unreserved, sub-delims
    /// (`!$&'()*+,;=`), `:`, `@`, `/`, and the `?` and `#` that start a query and a fragment. `%` is allowed
    /// separately, when two hex digits follow; `[` and `]` are percent-encoded (`filter[status]=open`), and so is
    /// non-ASCII text, as its UTF-8 bytes.
    static let endpointLiteral = ASCIIByteSet(ASCIIByteSet.alphanumerics + "-._~!$&'()*+,;=:@/?#")

    /// Appends the percent-encoded UTF-8 of `string` to `buffer`.
    ///
    /// - Parameters:
    ///   - string: The text to encode.
    ///   - buffer: Where the encoded bytes go.
    ///   - spaceAsPlus: Whether a space becomes `+` (the `application/x-www-form-urlencoded` convention)
    ///     instead of `%20`. A literal `+` is always encoded as `%2B`, so both decode unambiguously.
    @inline(__always)
    static func append(_ string: String, to buffer: inout [UInt8], spaceAsPlus: Bool = false) {
        let unreserved = self.unreserved
        for byte in string.utf8 {
            if unreserved.contains(byte) {
                buffer.append(byte)
            } else if spaceAsPlus && byte == 0x20 {
                buffer.append(0x2B)
            } else {
                appendEscape(byte, to: &buffer)
            }
        }
    }

    /// Appends `bytes` percent-encoded, as ``append(_:to:spaceAsPlus:)`` appends a string's UTF-8: for text already
    /// written in another charset (a form body in the charset its `Content-Type` names).
    static func append(bytes: some Sequence<UInt8>, to buffer: inout [UInt8], spaceAsPlus: Bool = false) {
        for byte in bytes {
            if unreserved.contains(byte) {
                buffer.append(byte)
            } else if spaceAsPlus && byte == 0x20 {
                buffer.append(0x2B)
            } else {
                appendEscape(byte, to: &buffer)
            }
        }
    }

    /// Appends `value` encoded as the content of one path segment.
    ///
    /// Like ``append(_:to:spaceAsPlus:)``, and a value made only of dots (`...`) has its dots encoded as `%2E`.
    /// Encoding does not make `.` or `..` safe (`%2E%2E` is still a dot-segment to URL normalisers): the request
    /// builder refuses a segment that ``isDotSegment(_:)``.
    ///
    /// - Parameters:
    ///   - value: The path value.
    ///   - buffer: Where the encoded bytes go.
    static func appendPathSegment(_ value: String, to buffer: inout [UInt8]) {
        if isOnlyDots(value) {
            for _ in value.utf8 { appendEscape(0x2E, to: &buffer) }
        } else {
            append(value, to: &buffer)
        }
    }

    /// `string` percent-encoded, as a `String`.
    static func encoded(_ string: String, spaceAsPlus: Bool = false) -> String {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(string.utf8.count * 3)
        append(string, to: &buffer, spaceAsPlus: spaceAsPlus)
        return String(decoding: buffer, as: UTF8.self)
    }

    /// `value` encoded as one path segment, as a `String`.
    static func encodedPathSegment(_ value: String) -> String {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(value.utf8.count * 3)
        appendPathSegment(value, to: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    /// Whether `segment` (one path segment, encoded) is a dot-segment, `.` or `..`, reading `%2E` in either case
    /// as a dot, as RFC 3986 §6.2.2 normalisers and WHATWG URL parsers do.
    static func isDotSegment(_ segment: ArraySlice<UInt8>) -> Bool {
        guard (1...6).contains(segment.count) else { return false }
        var dots = 0
        var index = segment.startIndex
        while index < segment.endIndex {
            if segment[index] == 0x2E {  // .
                index += 1
            } else if segment[index] == 0x25, segment.endIndex - index >= 3, segment[index + 1] == 0x32,
                segment[index + 2] | 0x20 == 0x65  // %2E or %2e
            {
                index += 3
            } else {
                return false
            }
            dots += 1
        }
        return dots <= 2
    }

    /// Whether `path` (encoded) has a segment that ``isDotSegment(_:)``, such as `/a/../b` or `/a/%2E/b`.
    static func hasDotSegment(inPath path: String) -> Bool {
        Array(path.utf8).split(separator: UInt8(ascii: "/")).contains(where: isDotSegment)
    }

    /// Whether `byte` is an ASCII hex digit.
    @inline(__always)
    static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }

    /// `text` with each byte of its non-ASCII characters' UTF-8 written as a `%XX` escape, as `appendEscape(_:to:)`
    /// writes those of an endpoint's own text (`/städte` → `/st%C3%A4dte`), not normalized; its ASCII, escapes
    /// included, as it is. For a ``ServerConfiguration``'s base path, which then meets the rules of an endpoint's path.
    static func escapingNonASCII(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 >= 0x80 }) else { return text }
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 2)
        for byte in text.utf8 {
            if byte >= 0x80 { appendEscape(byte, to: &out) } else { out.append(byte) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The value of the hex digit `byte` (`0-9 A-F a-f`), or `nil` for any other byte (a sign included).
    @inline(__always)
    package static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte &- 0x30  // 0-9
        case 0x41...0x46: byte &- 0x37  // A-F
        case 0x61...0x66: byte &- 0x57  // a-f
        default: nil
        }
    }

    /// Appends `byte` as a `%XX` escape, with upper-case hex digits.
    @inline(__always)
    package static func appendEscape(_ byte: UInt8, to buffer: inout [UInt8]) {
        buffer.append(0x25)  // %
        buffer.append(hexDigit(byte >> 4))
        buffer.append(hexDigit(byte & 0x0F))
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? 0x30 + nibble : 0x37 + nibble  // "0"... / "A"...
    }

    private static func isOnlyDots(_ value: String) -> Bool {
        var sawDot = false
        for byte in value.utf8 {
            guard byte == 0x2E else { return false }
            sawDot = true
        }
        return sawDot
    }
}
