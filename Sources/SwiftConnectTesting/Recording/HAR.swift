import Foundation

/// An HTTP Archive (HAR 1.2): the file format ``RecordingTransport`` records to and replays from, and the one
/// browsers export from their network panel.
///
/// The model holds the part of the format an exchange needs (the log, its entries, their request, response and
/// timings). Reading is lenient, so that a browser's export replays: unknown fields are ignored and missing optional
/// ones take their HAR defaults. Writing is strict: every field HAR 1.2 requires is present, `time` is the sum of the
/// entry's non-negative timings, and a body that is not UTF-8 text is base64-encoded. What HAR has no field for is
/// written in `_`-prefixed custom fields, as the format allows: a failure (`_failure`), a request body's encoding
/// (`postData._encoding`) and the URL that answered after redirects (`response._url`).
///
/// ```swift
/// let har = try HAR(contentsOf: fileURL)
/// for entry in har.log.entries {
///     print(entry.request.method, entry.request.url, entry.response.status)
/// }
/// ```
public struct HAR: Codable, Sendable, Equatable {
    /// The archive's one log.
    public var log: Log

    /// An archive of `entries`, created by SwiftConnect.
    ///
    /// - Parameter entries: The exchanges, in the order they were made.
    public init(entries: [Entry] = []) {
        log = Log(entries: entries)
    }

    /// The archive in `data`, as a browser or ``RecordingTransport`` wrote it.
    ///
    /// - Parameter data: The JSON text of a HAR file.
    /// - Throws: A `DecodingError` when the text is not JSON, lacks the fields a replay needs (an entry's
    ///   request method and URL, its response status), or is of a version other than HAR 1's.
    public init(data: Data) throws {
        self = try JSONDecoder().decode(HAR.self, from: data)
    }

    /// The archive in the file at `url`.
    ///
    /// - Parameter url: A HAR file.
    /// - Throws: The error of reading the file, or of ``init(data:)``.
    public init(contentsOf url: URL) throws {
        try self.init(data: Data(contentsOf: url))
    }

    /// The archive as a human reads and edits it: pretty-printed JSON with sorted keys and unescaped slashes.
    ///
    /// - Returns: The JSON text, ending with a newline.
    /// - Throws: An `EncodingError` for a number JSON cannot hold (a timing that is not finite).
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        var data = try encoder.encode(self)
        data.append(0x0A)
        return data
    }

    /// The log of an archive: who wrote it and the exchanges.
    public struct Log: Codable, Sendable, Equatable {
        /// The format's version: `1.2`.
        public var version: String
        /// The program that wrote the archive.
        public var creator: Creator
        /// The exchanges, in the order they were made.
        public var entries: [Entry]
        /// A comment for the reader.
        public var comment: String?

        /// A log of `entries`, version 1.2, created by SwiftConnect.
        ///
        /// - Parameter entries: The exchanges.
        public init(entries: [Entry]) {
            version = "1.2"
            creator = Creator(name: "SwiftConnect RecordingTransport", version: "1.0")
            self.entries = entries
        }

        /// Reads a log, taking HAR's defaults for what a lenient writer left out.
        ///
        /// - Throws: A `DecodingError` for a version other than HAR 1's (`1.1`, `1.2`): another format, whose fields
        ///   may mean something else.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            version = try container.value(.version, default: "1.2")
            guard version == "1" || version.hasPrefix("1.") else {
                throw DecodingError.dataCorruptedError(
                    forKey: .version, in: container,
                    debugDescription: "HAR version \(version) is not one this library reads (1.1 and 1.2 are)")
            }
            creator = try container.value(.creator, default: Creator(name: "unknown", version: ""))
            entries = try container.value(.entries, default: [])
            comment = try container.decodeIfPresent(String.self, forKey: .comment)
        }
    }

    /// The program that wrote an archive.
    public struct Creator: Codable, Sendable, Equatable {
        /// Its name.
        public var name: String
        /// Its version.
        public var version: String
        /// A comment for the reader.
        public var comment: String?

        /// A creator named `name`, at `version`.
        ///
        /// - Parameters:
        ///   - name: The program's name.
        ///   - version: The program's version.
        public init(name: String, version: String) {
            self.name = name
            self.version = version
        }
    }

    /// A header field or a query item: a name and a value.
    public struct NameValue: Codable, Sendable, Equatable {
        /// The name, as sent (headers) or percent-decoded (query items).
        public var name: String
        /// The value, as sent (headers) or percent-decoded (query items).
        public var value: String
        /// A comment for the reader.
        public var comment: String?

        /// A pair of `name` and `value`.
        ///
        /// - Parameters:
        ///   - name: The name.
        ///   - value: The value.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }

        /// Reads a pair; a missing value (some exports write none for an empty one) is empty.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            value = try container.value(.value, default: "")
            comment = try container.decodeIfPresent(String.self, forKey: .comment)
        }
    }

    /// A cookie sent or set. ``RecordingTransport`` writes the cookies a response sets with their values replaced
    /// by placeholders.
    public struct Cookie: Codable, Sendable, Equatable {
        /// The cookie's name.
        public var name: String
        /// The cookie's value.
        public var value: String
        /// The path it applies to.
        public var path: String?
        /// The domain it applies to.
        public var domain: String?
        /// When it expires, in ISO 8601.
        public var expires: String?
        /// Whether scripts cannot read it.
        public var httpOnly: Bool?
        /// Whether it is sent over HTTPS only.
        public var secure: Bool?
        /// A comment for the reader.
        public var comment: String?

        /// A cookie named `name` with `value`.
        ///
        /// - Parameters:
        ///   - name: The name.
        ///   - value: The value.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }
}

extension KeyedDecodingContainer {
    /// The value under `key`, or `fallback` when the key is absent or `null`.
    func value<Value: Decodable>(_ key: Key, default fallback: @autoclosure () -> Value) throws -> Value {
        try decodeIfPresent(Value.self, forKey: key) ?? fallback()
    }
}
