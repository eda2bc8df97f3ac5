import Foundation

/// Reading a text body whose `Content-Type` names a single-byte charset (`charset=ISO-8859-1`, `windows-1252`…).
///
/// JSON is UTF-8 (RFC 8259 §8.1), and Foundation's parsers also tell UTF-16 and UTF-32 by their bytes; but servers
/// on older stacks send JSON and error pages in Latin-1 and say so. Their bytes above 127 are not UTF-8, so the
/// parsers refused the whole body: an error's message was lost and a valid answer failed to decode.
///
/// Only a body that is not valid UTF-8 is converted: a UTF-8 body labelled Latin-1 (a common misconfiguration) is read
/// as UTF-8, as before, rather than turned into mojibake.
enum BodyCharset {
    /// `data` as UTF-8 text: converted from the single-byte charset `contentType` names when `data` is not valid
    /// UTF-8; `data` itself otherwise (no `Content-Type`, no `charset`, one this does not know, a byte order mark,
    /// or valid UTF-8).
    ///
    /// - Parameters:
    ///   - data: The body.
    ///   - contentType: The response's `Content-Type`, parameters and all.
    /// - Returns: The body in UTF-8, or `data` unchanged.
    static func utf8(_ data: Data, contentType: String?) -> Data {
        guard let contentType, let encoding = singleByteEncoding(of: contentType), !data.isEmpty,
            !startsWithByteOrderMark(data), String(data: data, encoding: .utf8) == nil,
            // windows-1252 leaves five bytes undefined, which Foundation refuses: Latin-1 reads every byte.
            let text = String(data: data, encoding: encoding)
                ?? (encoding == .windowsCP1252 ? String(data: data, encoding: .isoLatin1) : nil)
        else { return data }
        return Data(text.utf8)
    }

    /// The Foundation encoding of the single-byte `charset` a `Content-Type` names, or `nil` for none, UTF-8, or a
    /// charset this does not know.
    static func singleByteEncoding(of contentType: String) -> String.Encoding? {
        guard let charset = MimeType(rawValue: contentType).parameter("charset") else { return nil }
        return encodings[charset.trimmingCharacters(in: .whitespaces).lowercased()]
    }

    /// Charset labels and their encodings. As the WHATWG Encoding Standard reads them (and browsers do), Latin-1 and
    /// ASCII labels are windows-1252, which gives 0x80...0x9F the characters servers mean by them (`€`, `’`)
    /// rather than control characters.
    private static let encodings: [String: String.Encoding] = {
        var table: [String: String.Encoding] = [:]
        let labels: [(String.Encoding, [String])] = [
            (
                .windowsCP1252,
                [
                    "windows-1252", "cp1252", "x-cp1252", "iso-8859-1", "iso8859-1", "iso_8859-1", "iso_8859-1:1987",
                    "latin1", "l1", "cp819", "ibm819", "iso-ir-100", "csisolatin1", "us-ascii", "ascii",
                    "ansi_x3.4-1968",
                ]
            ),
            (.isoLatin2, ["iso-8859-2", "iso8859-2", "iso_8859-2", "latin2", "l2", "csisolatin2", "iso-ir-101"]),
            (.windowsCP1250, ["windows-1250", "cp1250", "x-cp1250"]),
            (.windowsCP1251, ["windows-1251", "cp1251", "x-cp1251"]),
            (.windowsCP1253, ["windows-1253", "cp1253", "x-cp1253"]),
            (.windowsCP1254, ["windows-1254", "cp1254", "x-cp1254", "iso-8859-9", "latin5", "l5"]),
        ]
        for (encoding, names) in labels {
            for name in names { table[name] = encoding }
        }
        return table
    }()

    /// Whether `data` starts with a byte order mark of UTF-8, UTF-16 or UTF-32, which says its encoding itself.
    private static func startsWithByteOrderMark(_ data: Data) -> Bool {
        data.starts(with: [0xEF, 0xBB, 0xBF]) || data.starts(with: [0xFE, 0xFF]) || data.starts(with: [0xFF, 0xFE])
            || data.starts(with: [0x00, 0x00, 0xFE, 0xFF])
    }
}
