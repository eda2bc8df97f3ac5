import Foundation

/// Decodes a response body into a `Decodable` type. `JSONDecoder` is one; register others (XML, property
/// lists, MessagePack…) with ``ResponseDecoders``.
public protocol ResponseBodyDecoder: Sendable {
    /// Decodes `type` from `data`.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - data: The body.
    /// - Returns: The decoded value.
    /// - Throws: Why the body could not be decoded.
    func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T

    /// Decodes `type` from `data`, the body of a response whose `Content-Type` is `contentType`, parameters and
    /// all: what a decoder for a format that can come in several character sets (XML, CSV) needs to read
    /// `charset`, with ``MimeType/parameter(_:)``. The client calls this one for a response's body; by default it
    /// calls ``decode(_:from:)``.
    ///
    /// ```swift
    /// let charset = contentType.flatMap { MimeType(rawValue: $0).parameter("charset") } ?? "utf-8"
    /// ```
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - data: The body.
    ///   - contentType: The response's `Content-Type` as it came (`text/xml; charset=ISO-8859-1`); `nil` when the
    ///     response had none, or the body is not known to come from a response.
    /// - Returns: The decoded value.
    /// - Throws: Why the body could not be decoded.
    func decode<T: Decodable>(_ type: T.Type, from data: Data, contentType: String?) throws -> T
}

extension ResponseBodyDecoder {
    /// Decodes with ``decode(_:from:)``: the content type changes nothing for most formats.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - data: The body.
    ///   - contentType: The response's `Content-Type`, unread.
    /// - Returns: The decoded value.
    /// - Throws: Why the body could not be decoded.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data, contentType: String?) throws -> T {
        try decode(type, from: data)
    }
}

extension JSONDecoder: ResponseBodyDecoder {}

/// Property lists, for ``ResponseDecoders/register(_:for:)`` (such as `application/x-plist`).
extension PropertyListDecoder: ResponseBodyDecoder {}

/// Which decoder ``Future/decoded(toType:decoder:)`` uses for a response, chosen by its `Content-Type`.
///
/// JSON is built in, for `application/json` and every `…+json` type (`application/problem+json`,
/// `application/vnd.api+json`…). A response whose type has no registered decoder, or no `Content-Type`,
/// uses the ``fallback``: the decoder registered for `application/json`, unless you set another.
///
/// ```swift
/// var decoders = ResponseDecoders.default
/// decoders.register(PropertyListDecoder(), for: "application/x-plist")
/// let connect = Connect(settings: Connect.Settings(decoders: decoders))
/// ```
///
/// The client's JSON decoder, with your strategies, is registered for `application/json`; it then decodes `…+json`
/// types and, as the fallback, answers sent as `text/plain` or without a `Content-Type` too:
///
/// ```swift
/// let json = JSONDecoder()
/// json.keyDecodingStrategy = .convertFromSnakeCase
/// json.dateDecodingStrategy = .iso8601
/// var decoders = ResponseDecoders.default
/// decoders.register(json, for: "application/json")
/// ```
public struct ResponseDecoders: Sendable {
    private var decoders: [String: any ResponseBodyDecoder] {
        didSet { soleDecoder = Self.soleDecoder(of: decoders, fallback: fallback) }
    }
    /// The decoder for types with no registered decoder: the one registered for `application/json` until you set
    /// another (registering a JSON decoder with your strategies makes it the fallback too).
    public var fallback: any ResponseBodyDecoder {
        // `application/json` is always registered (``default`` does, and nothing removes it).
        get { chosenFallback ?? decoders["application/json"] ?? JSONDecoder() }
        set {
            chosenFallback = newValue
            soleDecoder = Self.soleDecoder(of: decoders, fallback: newValue)
        }
    }
    /// The fallback set by hand; `nil` while it is the decoder registered for `application/json`.
    private var chosenFallback: (any ResponseBodyDecoder)?
    /// The decoder every media type gets, when the registered decoders and the fallback are one instance (as in
    /// ``default``): then no response's `Content-Type` needs to be read to choose.
    private var soleDecoder: (any ResponseBodyDecoder)?

    private init(decoders: [String: any ResponseBodyDecoder]) {
        self.decoders = decoders
        soleDecoder = Self.soleDecoder(of: decoders, fallback: decoders["application/json"] ?? JSONDecoder())
    }

    /// JSON for `application/json` and `…+json`, and JSON as the fallback.
    public static var `default`: ResponseDecoders {
        ResponseDecoders(decoders: ["application/json": JSONDecoder()])
    }

    /// Uses `decoder` for responses of `mediaType`.
    ///
    /// - Parameters:
    ///   - decoder: The decoder.
    ///   - mediaType: A media type such as `application/xml` (matched ignoring case and parameters, on either
    ///     side: `application/xml; charset=utf-8` registers `application/xml`), or a structured suffix such as
    ///     `+xml` for every type ending with it.
    public mutating func register(_ decoder: any ResponseBodyDecoder, for mediaType: String) {
        decoders[ConnectResponse.mediaType(of: mediaType)] = decoder
    }

    /// The decoder for a media type (`application/json`, already without parameters).
    ///
    /// - Parameter mediaType: The response's media type, or `nil` when it has none.
    /// - Returns: The registered decoder, the one for its `+suffix`, `application/json`'s for `+json`, or the
    ///   fallback.
    public func decoder(for mediaType: String?) -> any ResponseBodyDecoder {
        guard let mediaType = mediaType?.lowercased() else { return fallback }
        if let decoder = decoders[mediaType] { return decoder }
        if let plus = mediaType.lastIndex(of: "+") {
            let suffix = String(mediaType[plus...])
            if let decoder = decoders[suffix] { return decoder }
            if suffix == "+json", let json = decoders["application/json"] { return json }
        }
        return fallback
    }

    /// The decoder for `response`'s media type; its `Content-Type` is read only when the choice depends on it.
    @usableFromInline
    func decoder(for response: ConnectResponse) -> any ResponseBodyDecoder {
        soleDecoder ?? decoder(for: response.mediaType)
    }

    /// `fallback` if every registered decoder is that same instance, else `nil`. Only class instances can be
    /// told to be the same; two values of a struct decoder never are, which only costs the shortcut.
    private static func soleDecoder(
        of decoders: [String: any ResponseBodyDecoder],
        fallback: any ResponseBodyDecoder
    ) -> (any ResponseBodyDecoder)? {
        guard type(of: fallback) is AnyClass else { return nil }
        let sole = fallback as AnyObject
        return decoders.values.allSatisfy { type(of: $0) is AnyClass && ($0 as AnyObject) === sole } ? fallback : nil
    }
}

/// Reading a JSON body as `JSONDecoder` does (its encoding, whether it is blank), and explaining why a body is not
/// JSON, for a decoding failure.
enum JSONSyntax {
    /// UTF-32LE's byte order mark, which begins with UTF-16LE's (`FF FE`): read first.
    static let utf32LittleEndianMark: [UInt8] = [0xFF, 0xFE, 0x00, 0x00]
    /// UTF-32BE's byte order mark.
    static let utf32BigEndianMark: [UInt8] = [0x00, 0x00, 0xFE, 0xFF]

    /// Whether `byte` is JSON's white space (RFC 8259: space, tab, line feed, carriage return).
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    /// Whether `byte` may start a body ``isBlank(_:)`` finds blank: white space, or the first byte of a byte order
    /// mark or of a UTF-16 or UTF-32 white space character.
    static func mayStartBlank(_ byte: UInt8) -> Bool {
        isWhitespace(byte) || byte == 0xEF || byte == 0xFE || byte == 0xFF || byte == 0x00
    }

    /// Whether `data` is nothing but JSON white space: no value to decode. Read as `JSONDecoder` reads a body
    /// (``utf8(_:)``): a lone byte order mark, or `0A 00` (a UTF-16 line feed), is as blank as an empty body.
    static func isBlank(_ data: Data) -> Bool {
        // UTF-8 is checked in place, up to its first byte that is not white space; only UTF-16 and UTF-32 transcode.
        utf8(data)?.allSatisfy(isWhitespace) ?? false
    }

    /// A JSON body in UTF-8, without its byte order mark, as `JSONDecoder` reads it: UTF-8 after its mark if any, or
    /// the UTF-32 or UTF-16 its mark names (UTF-32's first: little-endian, it begins with UTF-16's), or, without a
    /// mark, the one the zeros of its first character say, which JSON keeps in ASCII (RFC 4627, 3): `00 00 00 7B` is
    /// UTF-32BE, `00 7B` UTF-16BE, `7B 00 00 00` UTF-32LE, `7B 00` UTF-16LE. `nil` when the bytes are not in the
    /// encoding they say.
    static func utf8(_ data: Data) -> Data? {
        if data.starts(with: [0xEF, 0xBB, 0xBF]) { return data.dropFirst(3) }
        let start = data.startIndex
        let width: Int
        let bigEndian: Bool
        var units = data
        if data.starts(with: utf32BigEndianMark) || data.starts(with: utf32LittleEndianMark) {
            (width, bigEndian) = (4, data[start] == 0)
            units = data.dropFirst(4)
        } else if data.starts(with: [0xFE, 0xFF]) || data.starts(with: [0xFF, 0xFE]) {
            (width, bigEndian) = (2, data[start] == 0xFE)
            units = data.dropFirst(2)
        } else if data.count >= 2, data[start] == 0 || data[start + 1] == 0 {
            bigEndian = data[start] == 0
            // Two zeros in a row at the start of a character make it UTF-32 (a UTF-16 body of two bytes is `0A 00`).
            let isUTF32 =
                data.count >= 4 && (bigEndian ? data[start + 1] == 0 : data[start + 2] == 0 && data[start + 3] == 0)
            width = isUTF32 ? 4 : 2
        } else {
            return data
        }
        // Transcoded here, not by `String(data:encoding:)`: FoundationNetworking's drops a trailing odd byte and
        // ends at a zero character, where a body cut short or holding a NUL must not read as a shorter one.
        guard units.count % width == 0 else { return nil }
        let values = stride(from: units.startIndex, to: units.endIndex, by: width).lazy.map { index in
            (0..<width).reduce(UInt32(0)) { value, offset in
                value | UInt32(units[index + offset]) << (8 * (bigEndian ? width - 1 - offset : offset))
            }
        }
        var utf8 = Data()
        utf8.reserveCapacity(units.count / width)
        let failed =
            width == 2
            ? transcode(
                values.map { UInt16(truncatingIfNeeded: $0) }.makeIterator(), from: UTF16.self, to: UTF8.self,
                stoppingOnError: true, into: { utf8.append($0) })
            : transcode(
                values.makeIterator(), from: UTF32.self, to: UTF8.self, stoppingOnError: true,
                into: { utf8.append($0) })
        return failed ? nil : utf8
    }

    /// What the JSON parser objects to in `data` and where (`Invalid value around character 0.`), on one line;
    /// `nil` when `data` parses. Parses the whole body again: call it for a failure only.
    static func problem(in data: Data) -> String? {
        do {
            _ = try JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed)
            return nil
        } catch {
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String
            return SingleLineText.make(detail ?? error.localizedDescription, limit: 200)
        }
    }

    /// ` (the response's Content-Type is text/html)` when the response declared a media type that is not JSON,
    /// else nothing.
    static func declaredTypeNote(_ mediaType: String?) -> String {
        guard let mediaType, !mediaType.isEmpty, mediaType != "application/json", !mediaType.hasSuffix("+json")
        else { return "" }
        return " (the response's Content-Type is \(SingleLineText.make(mediaType, limit: 100)))"
    }
}
