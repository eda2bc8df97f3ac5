import Foundation
import SwiftConnect

// MARK: - JSON that cannot be read

extension RecordingRedaction {
    /// What a body that is or claims to be JSON, but cannot be read, is recorded as: the secrets in it cannot be found,
    /// so none of it is kept.
    static let unreadableJSONBody = "<redacted: unreadable JSON body>"

    /// Whether `data` is, or claims to be, JSON that cannot be read: of a JSON media type (`application/json`,
    /// `application/problem+json`…) or, without one, starting with `{` or `[` after a byte order mark and white
    /// space; and it does not parse as JSON nor as JSON lines (a body cut short), or it nests deeper than
    /// ``SwiftConnect/Redaction/maximumJSONDepth`` levels, where the logs stop reading JSON too (walking it recurses
    /// once per level). White space alone is not unreadable: it holds no secret. Nor is a body not declared JSON
    /// holding a control byte JSON text never holds (NUL…): binary content whose first byte happens to be `{` or `[`
    /// (a BSON document), recorded and matched byte for byte. Nor is text declared of another type (`text/plain`)
    /// that names nothing secret: text that merely starts with a bracket (a README's badge, an INI section, a
    /// `[INFO]` log), kept as text (withheld whole, a replay handed the app the placeholder for it, and two such
    /// request bodies matched alike). Such text that names a secret (`{"access_token"=>"…"}`, a Ruby hash printed;
    /// JSON mislabelled and cut short) is withheld: where its value is, in a syntax of its own, cannot be told.
    static func isUnreadableJSON(_ data: Data, contentType: String?) -> Bool {
        startsAsUnreadableJSON(data, contentType: contentType)
            && (!isOtherDeclaredType(contentType) || mentionsSecretName(data))
    }

    /// Whether `data` names a secret anywhere, as a header's name would (``SwiftConnect/HTTPHeader/isSensitive(name:)``
    /// on the whole text: ASCII case and the separators `-`, `_`, `.`, `+` and space ignored, so `access_token`,
    /// `API Key` and `Session` all count). Wider than any one syntax's keys on purpose: text that names one is
    /// withheld, and too much withheld only costs a replay its text.
    private static func mentionsSecretName(_ data: Data) -> Bool {
        // A line end after it: a public type's suffix (`token_type`) ends no text here, and counts as the name it is.
        HTTPHeader.isSensitive(name: String(decoding: data, as: UTF8.self) + "\n")
    }

    /// Whether `contentType` names a type, and not a JSON one.
    private static func isOtherDeclaredType(_ contentType: String?) -> Bool {
        let type = contentType?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        return !type.isEmpty && !type.contains("json")
    }

    /// ``isUnreadableJSON(_:contentType:)`` whatever the declared type.
    private static func startsAsUnreadableJSON(_ data: Data, contentType: String?) -> Bool {
        guard let first = withoutBOM(data).first(where: { !jsonWhitespace.contains($0) }) else { return false }
        let type = contentType?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        if type.hasPrefix("application/x-www-form-urlencoded") || type.hasPrefix("multipart/") { return false }
        guard type.contains("json") || first == UInt8(ascii: "{") || first == UInt8(ascii: "[") else { return false }
        if !type.contains("json"), data.contains(where: { $0 < 0x20 && !jsonWhitespace.contains($0) }) {
            return false
        }
        if JSONDepth.exceeds(data, limit: Redaction.maximumJSONDepth) { return true }
        return parsedJSON(data) == nil && jsonLines(data) == nil
    }

    /// The JSON value `data` is (after a byte order mark), or `nil` when it does not parse.
    static func parsedJSON(_ data: Data) -> Any? {
        try? JSONSerialization.jsonObject(with: withoutBOM(data), options: [.fragmentsAllowed])
    }

    /// `data` without a leading UTF-8 byte order mark, which the JSON parser may refuse.
    static func withoutBOM(_ data: Data) -> Data {
        data.starts(with: [0xEF, 0xBB, 0xBF]) ? data.dropFirst(3) : data
    }

    /// JSON's white space: space, tab, line feed, carriage return.
    static let jsonWhitespace: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]

    /// The secret values of a request whose body is JSON that cannot be read (``isUnreadableJSON(_:contentType:)``),
    /// which ``SwiftConnect/SecretValues`` does not look into: found token by token
    /// (``secretStringsScanned(in:)``), to hide wherever the answer echoes them.
    static func secretsOfUnreadableJSONBody(of request: ConnectRequest) -> [String] {
        guard case .bytes(let body) = request.body,
            isUnreadableJSON(body, contentType: request.headerFields[.contentType])
        else { return [] }
        return secretStringsScanned(in: body)
    }

    /// The strings under a secret key (``SwiftConnect/HTTPHeader/isSensitive(name:)``), at any depth, of JSON text
    /// read token by token without parsing it: what a body that does not parse (cut short) or nests too deep to walk
    /// hands out. One pass, without recursion; a string cut short counts as far as it goes.
    ///
    /// A string followed by `:` is a key; the values after a secret key, and every value inside an object or array
    /// that follows one, are under it until the next `,` of the object that holds the key.
    static func secretStringsScanned(in data: Data) -> [String] {
        /// An open object or array: whether its values are under a secret key, and, for an object, whether its
        /// current member's key is one.
        struct Container {
            var isObject: Bool
            var isUnderSecret: Bool
            var keyIsSecret = false

            var valueIsUnderSecret: Bool { isUnderSecret || (isObject && keyIsSecret) }
        }
        var found: [String] = []
        var open: [Container] = []
        let bytes = [UInt8](data)
        var index = 0
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let isUnderSecret = open.last?.valueIsUnderSecret ?? false
                open.append(Container(isObject: bytes[index] == UInt8(ascii: "{"), isUnderSecret: isUnderSecret))
                index += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if !open.isEmpty { open.removeLast() }
                index += 1
            case UInt8(ascii: ","):
                if !open.isEmpty { open[open.count - 1].keyIsSecret = false }
                index += 1
            case UInt8(ascii: "\""):
                let (string, end) = scannedString(in: bytes, from: index + 1)
                index = end
                var next = index
                while next < bytes.count, jsonWhitespace.contains(bytes[next]) { next += 1 }
                if next < bytes.count, bytes[next] == UInt8(ascii: ":"), open.last?.isObject == true {
                    open[open.count - 1].keyIsSecret = HTTPHeader.isSensitive(name: string)
                    index = next + 1
                } else if open.last?.valueIsUnderSecret == true, !string.isEmpty {
                    found.append(string)
                }
            default:
                index += 1
            }
        }
        return found
    }

    /// The JSON string whose text starts at `start` (after its opening quote), its escapes undone, and the index after
    /// its closing quote; a string cut short ends with the bytes.
    private static func scannedString(in bytes: [UInt8], from start: Int) -> (String, end: Int) {
        var scalars = String.UnicodeScalarView()
        var text: [UInt8] = []
        // Raw bytes are gathered in `text` and decoded as UTF-8 at each escape and at the end.
        func flush() {
            scalars.append(contentsOf: String(decoding: text, as: UTF8.self).unicodeScalars)
            text.removeAll(keepingCapacity: true)
        }
        var index = start
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                break
            }
            guard byte == UInt8(ascii: "\\"), index + 1 < bytes.count else {
                text.append(byte)
                index += 1
                continue
            }
            flush()
            let escaped = bytes[index + 1]
            index += 2
            switch escaped {
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                guard let unit = hexUnit(bytes, at: index) else { continue }
                index += 4
                if (0xD800..<0xDC00).contains(unit), index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                    bytes[index + 1] == UInt8(ascii: "u"), let low = hexUnit(bytes, at: index + 2),
                    (0xDC00..<0xE000).contains(low)
                {
                    index += 6
                    scalars.append(Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)) ?? "\u{FFFD}")
                } else {
                    scalars.append(Unicode.Scalar(unit) ?? "\u{FFFD}")
                }
            default:
                // `\"`, `\\`, `\/`, and what JSON does not define, read as the character itself.
                scalars.append(Unicode.Scalar(escaped))
            }
        }
        flush()
        return (String(scalars), index)
    }

    /// The value of the four hexadecimal digits at `index`, or `nil` when there are not four.
    private static func hexUnit(_ bytes: [UInt8], at index: Int) -> UInt32? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for byte in bytes[index..<index + 4] {
            guard let digit = Character(Unicode.Scalar(byte)).hexDigitValue else { return nil }
            value = value << 4 | UInt32(digit)
        }
        return value
    }
}
