import Foundation
import SwiftConnect

/// The `charset` of an XML response's `Content-Type`, made visible to the XML parser (RFC 7303 §3.2, §8.3).
///
/// The parser reads a document's encoding from its byte order mark, else its XML declaration, else takes UTF-8; a
/// `charset` parameter is not in the body, so an ISO-8859-1 document served as `text/xml; charset=ISO-8859-1` with no
/// declaration came out as mojibake (or failed as invalid UTF-8). RFC 7303 ranks them: the byte order mark first, then
/// the `charset` parameter, then the declaration. So, with a `charset` and no byte order mark, the document's
/// declaration is rewritten to name that charset (or one is added), and the parser decodes the bytes itself: every
/// encoding it knows works, and one it does not know fails as a decoding error. A document in UTF-16 or UTF-32 with no
/// byte order mark is first turned into UTF-8 (an ASCII declaration cannot be put in front of it). A US-ASCII one is
/// read as UTF-8, which reads it as it is, and reads a non-ASCII character in it (sent as UTF-8 under the wrong label)
/// with or without a declaration.
enum XMLCharset {
    /// Why a body cannot be read as its `Content-Type` says.
    struct Problem: Error, CustomStringConvertible {
        /// What is wrong, in words.
        var description: String
    }

    /// `data` ready for the XML parser, given the response's `Content-Type`: unchanged when there is no `charset`,
    /// when a byte order mark decides, or when the declaration already says the same.
    ///
    /// A body with a UTF-32 byte order mark is turned into UTF-8 whatever its `charset`: the mark decides, but the
    /// parser knows none for UTF-32 (it takes `FF FE 00 00` for UTF-16's). So is one in UTF-32 with no mark and no
    /// `charset`, in the byte order its first `<` shows.
    ///
    /// - Throws: ``Problem`` for a `charset` that is not an encoding name, or a UTF-16 or UTF-32 body that is not
    ///   valid in that encoding.
    static func prepared(_ data: Data, contentType: String?) throws -> Data {
        if let wide = utf32Encoding(markedIn: data) {
            guard let text = String(data: data.dropFirst(4), encoding: wide) else {
                throw Problem(description: "the response body is not valid UTF-32, as its byte order mark says")
            }
            return declaring("UTF-8", in: Data(text.utf8))
        }
        let charset = contentType.flatMap(charset(of:))
        if charset == nil, !hasByteOrderMark(data), let wide = utf32Encoding(shownBy: data) {
            // Nor does the parser read a document's UTF-32 declaration (`encoding="UTF-32"`), nor little-endian
            // UTF-32 at all: the first `<` shows the byte order (XML 1.0 Appendix F).
            guard let text = String(data: data, encoding: wide) else {
                throw Problem(description: "the response body is not valid UTF-32, as its first character shows")
            }
            return declaring("UTF-8", in: Data(text.utf8))
        }
        guard let charset, !hasByteOrderMark(data) else { return data }
        guard isEncodingName(charset) else {
            throw Problem(
                description: "the response's Content-Type names a charset that is not an encoding name: "
                    + printable(charset))
        }
        let declaredEncoding: String
        var body = data
        if let wide = wideEncoding(charset, of: data) {
            guard let text = String(data: data, encoding: wide) else {
                throw Problem(description: "the response body is not valid \(charset), as its Content-Type says")
            }
            body = Data(text.utf8)
            declaredEncoding = "UTF-8"
        } else if ["us-ascii", "ascii"].contains(charset.lowercased()) {
            // UTF-8 reads every US-ASCII body as it is; a non-ASCII character in one is read as UTF-8 whether the body
            // has a declaration or not (the parser in US-ASCII stopped at it).
            declaredEncoding = "UTF-8"
        } else {
            declaredEncoding = charset
        }
        return declaring(declaredEncoding, in: body)
    }

    /// At most 64 characters of `text` (a server's), each outside printable ASCII shown as `?`: fit for a message.
    private static func printable(_ text: String) -> String {
        String(text.unicodeScalars.prefix(64).map { (0x20..<0x7F).contains($0.value) ? Character($0) : "?" })
    }

    /// The value of the `charset` parameter of `contentType` (name in any case, value quoted or not), or `nil`. A
    /// `;` inside another parameter's quoted value separates nothing (RFC 9110 §5.6.6).
    static func charset(of contentType: String) -> String? {
        guard let value = MimeType(rawValue: contentType).parameter("charset"), !value.isEmpty else { return nil }
        return value
    }

    /// The UTF-32 encoding whose byte order mark `data` starts with, if any.
    private static func utf32Encoding(markedIn data: Data) -> String.Encoding? {
        if data.starts(with: [0x00, 0x00, 0xFE, 0xFF]) { return .utf32BigEndian }
        if data.starts(with: [0xFF, 0xFE, 0x00, 0x00]) { return .utf32LittleEndian }
        return nil
    }

    /// The UTF-32 encoding in which `data`, with no byte order mark, starts with `<`, if any.
    private static func utf32Encoding(shownBy data: Data) -> String.Encoding? {
        if data.starts(with: [0x3C, 0x00, 0x00, 0x00]) { return .utf32LittleEndian }
        if data.starts(with: [0x00, 0x00, 0x00, 0x3C]) { return .utf32BigEndian }
        return nil
    }

    /// Whether `data` starts with a byte order mark of UTF-8, UTF-16 or UTF-32.
    private static func hasByteOrderMark(_ data: Data) -> Bool {
        let marks: [[UInt8]] = [[0xEF, 0xBB, 0xBF], [0xFE, 0xFF], [0xFF, 0xFE], [0x00, 0x00, 0xFE, 0xFF]]
        return marks.contains { data.starts(with: $0) }
    }

    /// Whether `name` is an XML `EncName`: `[A-Za-z] ([A-Za-z0-9._] | '-')*`, what a declaration can hold.
    private static func isEncodingName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, isLetter(first) else { return false }
        return bytes.allSatisfy {
            isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: ".")
                || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
        }
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    /// The Foundation encoding of a charset that is not ASCII-compatible (UTF-16 and UTF-32), or `nil` for any other.
    /// A charset that names no byte order is read in the one the document's first `<` shows, as the XML parser reads
    /// it (XML 1.0 Appendix F: `3C 00` is little-endian), else big-endian (RFC 2781 §4.3).
    private static func wideEncoding(_ charset: String, of data: Data) -> String.Encoding? {
        switch charset.lowercased() {
        // UCS-2 is UTF-16 without surrogates: the same bytes.
        case "utf-16", "ucs-2", "iso-10646-ucs-2", "csunicode":
            return data.starts(with: [0x3C, 0x00]) ? .utf16LittleEndian : .utf16BigEndian
        case "utf-16be": return .utf16BigEndian
        case "utf-16le": return .utf16LittleEndian
        case "utf-32": return data.starts(with: [0x3C, 0x00, 0x00, 0x00]) ? .utf32LittleEndian : .utf32BigEndian
        case "utf-32be": return .utf32BigEndian
        case "utf-32le": return .utf32LittleEndian
        default: return nil
        }
    }

    /// The Foundation encoding a request body is written in for `charset` (``XMLBodyEncoder``), or `nil` for a
    /// charset it does not write. UTF-16 and UTF-32 without a byte order are written with a byte order mark.
    static func writableEncoding(_ charset: String) -> String.Encoding? {
        switch charset.lowercased() {
        case "us-ascii", "ascii": return .ascii
        case "iso-8859-1", "iso_8859-1", "latin1", "l1": return .isoLatin1
        case "utf-16": return .utf16
        case "utf-16be": return .utf16BigEndian
        case "utf-16le": return .utf16LittleEndian
        case "utf-32": return .utf32
        case "utf-32be": return .utf32BigEndian
        case "utf-32le": return .utf32LittleEndian
        default: return nil
        }
    }

    /// `data` whose XML declaration names `encoding`: the declaration's own encoding replaced (its version and
    /// `standalone` kept), or a declaration added in front when there is none. A declaration this cannot read is
    /// left for the parser to report.
    private static func declaring(_ encoding: String, in data: Data) -> Data {
        let start = Array("<?xml".utf8)
        // `<?xml` followed by white space; `<?xml-stylesheet` is a processing instruction, not a declaration.
        guard data.starts(with: start), data.count > start.count, isSpace(data[data.startIndex + start.count]) else {
            // No declaration: UTF-8 is what the parser takes then, and ASCII is a part of it.
            if ["utf-8", "utf8"].contains(encoding.lowercased()) { return data }
            return Data(#"<?xml version="1.0" encoding="\#(encoding)"?>"#.utf8) + data
        }
        let head = Array(data.prefix(1_024))
        guard let declaration = pseudoAttributes(in: head, from: start.count),
            let version = declaration.attributes.first(where: { $0.name == "version" })?.value
        else { return data }
        let declared = declaration.attributes.first { $0.name == "encoding" }?.value
        if declared?.lowercased() == encoding.lowercased() { return data }
        var rewritten = #"<?xml version="\#(version)" encoding="\#(encoding)""#
        if let standalone = declaration.attributes.first(where: { $0.name == "standalone" })?.value {
            rewritten += #" standalone="\#(standalone)""#
        }
        rewritten += "?>"
        return Data(rewritten.utf8) + data.dropFirst(declaration.end)
    }

    /// The pseudo-attributes of the declaration in `bytes` (`name="value"` or `name='value'`, white space between)
    /// from `index` to its `?>`, and the index after that; `nil` when it is not of that form.
    private static func pseudoAttributes(in bytes: [UInt8], from index: Int) -> (
        attributes: [(name: String, value: String)], end: Int
    )? {
        var index = index
        var attributes: [(name: String, value: String)] = []
        func skipSpaces() { while index < bytes.count, isSpace(bytes[index]) { index += 1 } }
        while true {
            skipSpaces()
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "?") {
                guard index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: ">") else { return nil }
                return (attributes, index + 2)
            }
            let nameStart = index
            while index < bytes.count, isLetter(bytes[index]) { index += 1 }
            guard index > nameStart else { return nil }
            let name = String(decoding: bytes[nameStart..<index], as: UTF8.self)
            skipSpaces()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else { return nil }
            index += 1
            skipSpaces()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else {
                return nil
            }
            let quote = bytes[index]
            index += 1
            let valueStart = index
            while index < bytes.count, bytes[index] != quote {
                // A value is ASCII (VersionNum, EncName, yes or no), with no quote of either kind: anything else is
                // not a declaration to rewrite (it is written back between double quotes).
                guard bytes[index] < 0x80, bytes[index] != UInt8(ascii: "<"), bytes[index] != UInt8(ascii: "\""),
                    bytes[index] != UInt8(ascii: "'")
                else { return nil }
                index += 1
            }
            guard index < bytes.count else { return nil }
            attributes.append((name, String(decoding: bytes[valueStart..<index], as: UTF8.self)))
            index += 1
        }
    }

    /// XML's white space: space, tab, carriage return, line feed.
    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A
    }
}
