/// One header field of a request or a response: a name and a value.
///
/// The core's own HTTP model keeps Foundation out of the seam between SwiftConnect and an engine. Its shape is
/// that of swift-http-types' `HTTPField`, so converting between the two is a field-by-field copy; its name is its
/// own, so that a file importing SwiftConnect beside HTTPTypes or NIOHTTP1 has no ambiguous type:
///
/// ```swift
/// let field = HeaderField(name: .contentType, value: "application/json")
/// ```
///
/// Names compare without regard to ASCII case (`Content-Type` and `content-type` are one name, RFC 9110 §5.1) and keep
/// the spelling they were given. Values are stored as given: a name that is not an RFC 9110 token, or a value with
/// CR, LF, NUL or another control character, is refused when the request is sent, with
/// ``ConnectError/InvalidRequestReason/invalidHeader(name:)``, on every engine. The spaces and tabs around a value are
/// not part of it (RFC 9110 §5.5): a request's transport gets its values without them, after every middleware.
public struct HeaderField: Sendable, Hashable, CustomStringConvertible {
    /// A field's name: case-insensitive, spelled as given.
    public struct Name: Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
        /// The name as it was given, sent as it is on HTTP/1.1.
        public let rawName: String

        /// A name spelled as `name`. Whether it is a valid RFC 9110 token is checked when a request is sent.
        public init(_ name: String) {
            rawName = name
        }

        /// A name from a string literal: `"X-Request-ID"`.
        public init(stringLiteral value: String) {
            self.init(value)
        }

        /// Whether the name is an RFC 9110 token: not empty, made of letters, digits and the characters
        /// `!#$%&'*+-.^_|~` and the backtick only.
        public var isValid: Bool { HTTPHeader.isValidName(rawName) }

        /// The name as given when it is a token (``isValid``); otherwise cut where a value could start (`:`, `=`, a
        /// blank or a control character) and ended with `…`, as ``HeaderField/description`` and cURL output show it, so
        /// that a header line pasted in as the name (`Authorization: Bearer …`) shows no secret. ``rawName`` keeps it
        /// whole.
        public var description: String { HTTPHeader.shownName(rawName) }

        /// The name in lower case: how HTTP/2 and HTTP/3 send it.
        public var canonicalName: String {
            guard rawName.utf8.contains(where: Self.isUpper) else { return rawName }
            return String(decoding: rawName.utf8.map { Self.isUpper($0) ? $0 + 32 : $0 }, as: UTF8.self)
        }

        /// Names are equal ignoring ASCII case, without making a lower-case copy of either.
        public static func == (lhs: Name, rhs: Name) -> Bool {
            HTTPHeader.asciiCaseInsensitiveEquals(lhs.rawName, rhs.rawName)
        }

        /// Hashes the lower-case bytes, so that equal names hash alike.
        public func hash(into hasher: inout Hasher) {
            for byte in rawName.utf8 { hasher.combine(Self.isUpper(byte) ? byte + 32 : byte) }
        }

        private static func isUpper(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") }
    }

    /// The field's name.
    public var name: Name
    /// The field's value, as given.
    public var value: String

    /// A field named `name` with `value`.
    public init(name: Name, value: String) {
        self.name = name
        self.value = value
    }

    /// Whether the name is a token and the value free of control characters other than the horizontal tab.
    public var isValid: Bool { name.isValid && HTTPHeader.isValidValue(value) }

    /// `Name: value`, with the value of a secret field (`Authorization`, `Cookie`, API keys…) hidden as in every
    /// output SwiftConnect writes. A name that is not a token is cut where a value could start, as cURL output cuts it:
    /// a whole header line pasted in as the name (`Authorization: Bearer …`) shows no secret either.
    public var description: String {
        "\(HTTPHeader.shownName(name.rawName)): \(Redaction.headerValue(value, name: name.rawName, redacting: true))"
    }
}

extension HeaderField: CustomReflectable {
    /// The name and the value as ``description`` shows them, so that `dump(field)`, and a debugger, show no secret
    /// (as ``HTTPHeader``'s mirror).
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "name": HTTPHeader.shownName(name.rawName),
                "value": Redaction.headerValue(value, name: name.rawName, redacting: true),
            ])
    }
}

extension HeaderField.Name: CustomReflectable {
    /// The name as ``description`` shows it, and no children: `dump(name)`, and a debugger, do not show ``rawName``
    /// whole either.
    public var customMirror: Mirror {
        Mirror(self, children: [:])
    }
}

extension HeaderField.Name {
    /// `Accept`.
    public static let accept: Self = "Accept"
    /// `Authorization`: a secret, hidden in every output SwiftConnect writes.
    public static let authorization: Self = "Authorization"
    /// `Content-Length`.
    public static let contentLength: Self = "Content-Length"
    /// `Content-Type`.
    public static let contentType: Self = "Content-Type"
    /// `Cookie`: a secret; repeated fields join with `"; "`.
    public static let cookie: Self = "Cookie"
    /// `Location`.
    public static let location: Self = "Location"
    /// `Retry-After`.
    public static let retryAfter: Self = "Retry-After"
    /// `Set-Cookie`: never joined, each field is one cookie.
    public static let setCookie: Self = "Set-Cookie"
    /// `User-Agent`.
    public static let userAgent: Self = "User-Agent"
}

/// The header fields of a request or a response, in order, repeated names kept.
///
/// ```swift
/// var fields: HeaderFields = [.accept: "application/json", "X-Trace": "1"]
/// fields.append(HeaderField(name: .setCookie, value: "a=1"))
/// fields.append(HeaderField(name: .setCookie, value: "b=2"))
/// fields[.accept]                // "application/json"
/// fields[values: .setCookie]     // ["a=1", "b=2"]
/// fields[.accept] = nil          // removes every Accept field
/// ```
///
/// Looking a name up ignores ASCII case. Reading a repeated name through `fields[name]` joins its values with
/// `", "` (`"; "` for `Cookie`), as RFC 9110 §5.3 allows for every field but `Set-Cookie`; read
/// ``subscript(values:)`` to get them one by one. The shape is swift-http-types' `HTTPFields`, so an engine or an
/// integration converts one into the other field by field.
public struct HeaderFields: Sendable, Hashable, RandomAccessCollection, ExpressibleByDictionaryLiteral {
    private var fields: [HeaderField]

    /// No fields.
    public init() {
        fields = []
    }

    /// The given fields, in order.
    public init(_ fields: some Sequence<HeaderField>) {
        self.fields = Array(fields)
    }

    /// The fields of a literal, in its order: `[.contentType: "application/json"]`.
    public init(dictionaryLiteral elements: (HeaderField.Name, String)...) {
        fields = elements.map { HeaderField(name: $0.0, value: $0.1) }
    }

    /// The position of the first field.
    public var startIndex: Int { fields.startIndex }
    /// The position after the last field.
    public var endIndex: Int { fields.endIndex }
    /// The field at `position`.
    public subscript(position: Int) -> HeaderField { fields[position] }

    /// The value of the fields named `name`, joined when the name repeats; `nil` when there is none.
    /// Setting a value replaces every field of that name with one, where the first stood; `nil` removes them.
    public subscript(name: HeaderField.Name) -> String? {
        get {
            var joined: String?
            let separator = name == .cookie ? "; " : ", "
            for field in fields where field.name == name {
                joined = joined.map { $0 + separator + field.value } ?? field.value
            }
            return joined
        }
        set {
            if let newValue {
                self[values: name] = [newValue]
            } else {
                fields.removeAll { $0.name == name }
            }
        }
    }

    /// The values of the fields named `name`, in order. Setting them replaces those fields, where the first stood.
    public subscript(values name: HeaderField.Name) -> [String] {
        get { fields.filter { $0.name == name }.map(\.value) }
        set {
            let first = fields.firstIndex { $0.name == name } ?? fields.endIndex
            let before = fields[..<first].count
            fields.removeAll { $0.name == name }
            fields.insert(contentsOf: newValue.map { HeaderField(name: name, value: $0) }, at: before)
        }
    }

    /// Whether a field is named `name`.
    public func contains(_ name: HeaderField.Name) -> Bool {
        fields.contains { $0.name == name }
    }

    /// Makes room for `count` fields, so that an engine copying a head field by field allocates once.
    public mutating func reserveCapacity(_ count: Int) {
        fields.reserveCapacity(count)
    }

    /// Adds `field` after the others, keeping any of the same name.
    public mutating func append(_ field: HeaderField) {
        fields.append(field)
    }

    /// Removes the spaces and tabs around each value: they are not part of a field value (RFC 9110 §5.5), HTTP/2
    /// forbids them (RFC 9113 §8.2.1), and engines differ on them (libcurl leaves out a field whose value is blanks
    /// only, which the others send empty). Done by the core before a request reaches its transport, so every engine
    /// sends the same value. Costs a look at each value's ends when none has blanks there.
    mutating func trimBlanks() {
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        for index in fields.indices {
            let utf8 = fields[index].value.utf8
            guard let first = utf8.first, let last = utf8.last, isBlank(first) || isBlank(last) else { continue }
            var trimmed = Substring(fields[index].value).utf8
            while let byte = trimmed.first, isBlank(byte) { trimmed = trimmed.dropFirst() }
            while let byte = trimmed.last, isBlank(byte) { trimmed = trimmed.dropLast() }
            fields[index].value = String(Substring(trimmed))
        }
    }

    /// Removes each `Content-Type` field whose value is empty or blanks only: it names no media type, so the request
    /// goes as one without the field, as a connector's blank `Content-Type` goes (`Connector.isBlankContentType(_:)`),
    /// never with an empty field. Done by the core for a request built by hand or changed by a middleware, before
    /// a transport gets it.
    mutating func removeBlankContentTypes() {
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        fields.removeAll { $0.name == .contentType && $0.value.utf8.allSatisfy(isBlank) }
    }

    /// The first field that is not valid (``HeaderField/isValid``): what the core refuses to send.
    public var firstInvalid: HeaderField? {
        fields.first { !$0.isValid }
    }
}

extension HeaderFields: CustomStringConvertible {
    /// One `Name: value` line a field, secret values hidden (``HeaderField/description``).
    public var description: String { fields.map(\.description).joined(separator: "\n") }
}

extension HeaderFields {
    /// The fields with each value as a request's description shows it: hidden by its field's name
    /// (``HeaderField/description``), then with the request's `secrets` hidden wherever they show, as cURL output
    /// hides them. A field whose name is not secret may quote a credential of another (`X-Upstream-Auth: Bearer …`
    /// repeating the `Authorization` token).
    func hidingValues(_ secrets: SecretValues) -> HeaderFields {
        guard !secrets.isEmpty else { return self }
        return HeaderFields(
            fields.map { field in
                let shown = Redaction.headerValue(field.value, name: field.name.rawName, redacting: true)
                return HeaderField(name: field.name, value: secrets.hiding(in: shown))
            })
    }
}
