import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Writing an `application/x-www-form-urlencoded` body in the charset its `Content-Type` names.
///
/// `.form` fields are percent-encoded as UTF-8 bytes. A connector that sets
/// `Content-Type: application/x-www-form-urlencoded; charset=iso-8859-1` talks to a server that decodes the escapes as
/// Latin-1: `é` sent as `%C3%A9` arrives as `Ã©`, a silent wrong answer. The fields are therefore escaped as the bytes
/// of the charset named (as OkHttp's `FormBody.Builder(charset)` does), and a character that charset cannot hold, or a
/// charset this does not write, is refused with a typed error rather than replaced by `?` or sent as UTF-8.
enum FormBodyCharset {
    /// The encoding a form body goes in when its `Content-Type` is `contentType`: `nil` for UTF-8 (no `charset`, or
    /// `utf-8`), the one named otherwise.
    ///
    /// - Throws: ``ConnectError/InvalidRequestReason/bodyEncodingFailed(_:)`` for a charset this does not write.
    static func encoding(of contentType: String, request: @autoclosure () -> URLRequest) throws -> String.Encoding? {
        guard let label = MimeType(rawValue: contentType).parameter("charset") else { return nil }
        let name = label.trimmingCharacters(in: .whitespaces).lowercased()
        if name == "utf-8" || name == "utf8" { return nil }
        if let encoding = encodings[name] { return encoding }
        throw ConnectError.invalidRequest(
            .bodyEncodingFailed(
                "the form fields cannot be written in charset \(SingleLineText.make(label.debugDescription, limit: 40)), "
                    + "which the Content-Type names: SwiftConnect writes UTF-8, US-ASCII, ISO-8859-1 and windows-1252"),
            request: request())
    }

    /// `form`, a body written as UTF-8 (`key=value&…`, every byte outside RFC 3986 *unreserved* escaped, a space as
    /// `+`), with each field escaped as the bytes of `encoding` instead.
    ///
    /// - Throws: ``ConnectError/InvalidRequestReason/invalidParameter(key:reason:)`` naming the field whose name or
    ///   value has a character `encoding` cannot hold (the value itself is not repeated: it may be a secret).
    static func reencoded(
        _ form: [UInt8], as encoding: String.Encoding, charset: String, request: @autoclosure () -> URLRequest
    ) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(form.count)
        for (index, pair) in form.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false).enumerated() {
            if index > 0 { out.append(UInt8(ascii: "&")) }
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            let key = decoded(parts[0])
            guard let keyBytes = key.data(using: encoding, allowLossyConversion: false) else {
                throw unencodable(key: key, part: "name", charset: charset, request: request())
            }
            PercentEncoding.append(bytes: keyBytes, to: &out, spaceAsPlus: true)
            guard parts.count > 1 else { continue }
            out.append(UInt8(ascii: "="))
            guard let valueBytes = decoded(parts[1]).data(using: encoding, allowLossyConversion: false) else {
                throw unencodable(key: key, part: "value", charset: charset, request: request())
            }
            PercentEncoding.append(bytes: valueBytes, to: &out, spaceAsPlus: true)
        }
        return out
    }

    /// The text of one name or value as `PercentEncoding` wrote it: `+` a space, `%XX` a UTF-8 byte.
    private static func decoded(_ encoded: ArraySlice<UInt8>) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(encoded.count)
        var index = encoded.startIndex
        while index < encoded.endIndex {
            let byte = encoded[index]
            if byte == UInt8(ascii: "%"), encoded.endIndex - index >= 3,
                PercentEncoding.isHexDigit(encoded[index + 1]), PercentEncoding.isHexDigit(encoded[index + 2]),
                let value = UInt8(String(decoding: encoded[(index + 1)...(index + 2)], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                index += 3
            } else {
                bytes.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The error for a field whose `part` (name or value) `charset` cannot hold.
    private static func unencodable(key: String, part: String, charset: String, request: URLRequest) -> ConnectError {
        ConnectError.invalidRequest(
            .invalidParameter(
                key: key,
                reason:
                    "the .form field's \(part) has a character that charset "
                    + "\(SingleLineText.make(charset, limit: 40)), which the Content-Type names, cannot hold: send "
                    + "charset=utf-8, or text that charset can write"),
            request: request)
    }

    /// Whether two `charset` labels name the same charset: compared without case or surrounding blanks, the names
    /// of UTF-8 and the labels of each charset a form is written in (`cp1252` and `windows-1252`, `iso_8859-1:1987`
    /// and `latin1`) taken as one.
    static func namesSameCharset(_ first: String, _ second: String) -> Bool {
        func canonical(_ label: String) -> String {
            let name = label.trimmingCharacters(in: .whitespaces).lowercased()
            if name == "utf-8" || name == "utf8" { return "utf-8" }
            return encodings[name].map { "encoding \($0.rawValue)" } ?? name
        }
        return canonical(first) == canonical(second)
    }

    /// Whether `label` names a charset a form body is written in (US-ASCII, ISO-8859-1 or windows-1252, by any of
    /// their names): one that writes ASCII as ASCII's bytes.
    static func isWritten(_ label: String) -> Bool {
        encodings[label.trimmingCharacters(in: .whitespaces).lowercased()] != nil
    }

    /// The labels of the charsets a form body is written in, and their encodings: exact, not as a browser reads a
    /// label (`iso-8859-1` is Latin-1 here, not windows-1252), so that a server decoding the label it sent gets the
    /// text back.
    private static let encodings: [String: String.Encoding] = {
        var table: [String: String.Encoding] = [:]
        let labels: [(String.Encoding, [String])] = [
            (.ascii, ["us-ascii", "ascii", "ansi_x3.4-1968", "iso-ir-6", "iso646-us", "csascii", "us"]),
            (
                .isoLatin1,
                [
                    "iso-8859-1", "iso8859-1", "iso_8859-1", "iso_8859-1:1987", "latin1", "l1", "cp819", "ibm819",
                    "iso-ir-100", "csisolatin1",
                ]
            ),
            (.windowsCP1252, ["windows-1252", "cp1252", "x-cp1252"]),
        ]
        for (encoding, names) in labels {
            for name in names { table[name] = encoding }
        }
        return table
    }()
}
