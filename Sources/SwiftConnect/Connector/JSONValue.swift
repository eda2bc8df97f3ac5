import Foundation

/// Any JSON value, as a `Sendable` Swift value: what Remotli, Konex and JustAPIs handed out as `[String: Any]`
/// or `Any`, for code that does not want a model type.
///
/// Decode a response into it when no model fits, and read it by key and index:
///
/// ```swift
/// connect.request(Route("/config")).decoded(toType: JSONValue.self).observe { result in
///     let config = try? result.get()
///     let title = config?["app"]?["title"]?.stringValue        // "Demo"
///     let first = config?["servers"]?[0]?["port"]?.intValue     // 8080
/// }
/// ```
///
/// It is written with literals too (`let value: JSONValue = ["a": [1, 2.5, "x", nil]]`). To send values by
/// key, as those libraries' `parameters:` did, use ``JSONObject``, which also takes variables and `Encodable`
/// values.
///
/// Whole numbers that fit an `Int` decode as ``int(_:)`` (`2`, and `2.0` or `1e3` too: JSON does not tell them
/// apart), others as ``double(_:)``, and so does `-0`, whose sign an `Int` would lose (`JSONDecoder` reads it as `-0.0`);
/// ``intValue`` and ``doubleValue`` read either, and equal numbers are equal values (`.int(2) == .double(2.0)`,
/// `.int(0) == .double(-0.0)`), so a value compares equal after a round trip through JSON. A `Double` keeps 17
/// significant digits: an integer beyond `Int`'s range (a `UInt64` ID over 2⁶³) or a longer decimal is read rounded,
/// and written back so; decode a model with a `UInt64` or `Decimal` property where those digits matter.
///
/// A value nested deeper than 128 levels fails to decode (a `DecodingError`) and to encode (an `EncodingError`, for a
/// value built in code), rather than exhausting the stack of the thread that decodes or encodes it.
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number without a fraction that fits an `Int`.
    case int(Int)
    /// Any other number.
    case double(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object. (``description`` writes its keys sorted; `JSONEncoder` writes them in an order of its own unless
    /// told `.sortedKeys`.)
    case object([String: JSONValue])

    // MARK: Reading

    /// The member named `key` of an object; `nil` for a missing key or a value that is not an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    /// The element at `index` of an array; `nil` out of bounds or for a value that is not an array.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    /// The string, if this is one.
    public var stringValue: String? {
        guard case .string(let value) = self else { return nil }
        return value
    }

    /// The number as an `Int`, if this is an integer (or a `double` with no fraction that fits).
    public var intValue: Int? {
        switch self {
        case .int(let value): return value
        case .double(let value): return Int(exactly: value)
        default: return nil
        }
    }

    /// The number as a `Double`, if this is a number.
    public var doubleValue: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }

    /// The Boolean, if this is one.
    public var boolValue: Bool? {
        guard case .bool(let value) = self else { return nil }
        return value
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        guard case .array(let value) = self else { return nil }
        return value
    }

    /// The members, if this is an object.
    public var objectValue: [String: JSONValue]? {
        guard case .object(let value) = self else { return nil }
        return value
    }

    /// Whether this is `null`.
    public var isNull: Bool { self == .null }

    /// This value decoded into a model, for the part of an untyped answer that has one.
    ///
    /// ```swift
    /// let user = try answer["user"]?.decoded(as: User.self)
    /// ```
    ///
    /// The model gets the numbers as this value holds them: an integer beyond `Int`'s range was read rounded to a
    /// `Double` when the answer was decoded into a `JSONValue`, and a `UInt64` property decoded from it gets the rounded
    /// number (`10000000000000000001` arrives as `10000000000000000000`), without an error. Where such digits matter,
    /// decode the response body into the model itself (`decoded(toType:)`), which reads them exact.
    ///
    /// - Parameters:
    ///   - type: The model type.
    ///   - decoder: The decoder; a plain `JSONDecoder` by default.
    /// - Throws: The decoder's `DecodingError` when the value does not fit the model. A number that does not fit its
    ///   property's type (`1.5` for an `Int`, `-1` for a `UInt`), which `JSONDecoder` reports as "The given data was
    ///   not valid JSON." with no coding path, is a `dataCorrupted` error with the path to the number, saying which.
    public func decoded<T: Decodable>(as type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        let data = try JSONEncoder().encode(self)
        do {
            return try decoder.decode(T.self, from: data)
        } catch let error where JSONNumberFit.isMisfitReport(error, decoding: data) {
            let misfit = JSONNumberFit.locate(type, in: data, with: decoder)
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: misfit?.codingPath ?? [],
                    debugDescription: JSONNumberFit.explanation(of: misfit, namingItsPath: false),
                    underlyingError: error))
        }
    }
}

// MARK: - Coding

extension JSONValue: Codable {
    /// The deepest nesting decoded: each level is a call, and a dispatch thread's 512 KiB stack ran out at about
    /// 175 (the limit the redaction of bodies keeps too).
    static let maximumDepth = Redaction.maximumJSONDepth

    /// The value a decoder gave as `value` for `container`: a number, unless it is a NaN or an infinity, which no JSON
    /// number is, and which came from a string the decoder's non-conforming float strategy converts (`"NaN"` under
    /// `.convertFromString(…, nan: "NaN")`): a string here. Apart from the decoder's frame, which every level of
    /// nesting repeats on the stack.
    @inline(never)
    private static func double(_ value: Double, in container: any SingleValueDecodingContainer) -> JSONValue {
        guard !value.isFinite, let text = try? container.decode(String.self) else { return .double(value) }
        return .string(text)
    }

    /// Decodes any JSON value.
    public init(from decoder: any Decoder) throws {
        guard decoder.codingPath.count <= Self.maximumDepth else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath,
                    debugDescription: "JSONValue decodes JSON nested at most \(Self.maximumDepth) levels deep"))
        }
        let container = try decoder.singleValueContainer()
        // The reason a value of the right kind could not be read (a number out of range, a string that is not
        // UTF-8; Foundation throws its own error types for those): thrown rather than the last attempt's type
        // mismatch, which would name a kind the value is not.
        var corrupted: (any Error)?
        func attempt<Value: Decodable>(_ type: Value.Type) -> Value? {
            do {
                return try container.decode(type)
            } catch DecodingError.typeMismatch {
                return nil
            } catch {
                if corrupted == nil {
                    corrupted =
                        error as? DecodingError
                        ?? DecodingError.dataCorrupted(
                            DecodingError.Context(
                                codingPath: decoder.codingPath,
                                debugDescription: "the value cannot be read: \(error)", underlyingError: error))
                }
                return nil
            }
        }
        if container.decodeNil() {
            self = .null
        } else if let value = attempt(Bool.self) {
            self = .bool(value)
        } else if let value = attempt(Int.self) {
            // `-0` is whole, but an `Int` has no sign for zero: kept as the `Double` it is (`JSONDecoder` reads it as
            // `-0.0`), so that it is written back as `-0`, not `0`. It still equals `.int(0)`.
            if value == 0, let zero = attempt(Double.self), zero.sign == .minus {
                self = .double(zero)
            } else {
                self = .int(value)
            }
        } else if let value = attempt(Double.self) {
            self = Self.double(value, in: container)
        } else if let value = attempt(String.self) {
            self = .string(value)
        } else {
            do {
                self = .array(try container.decode([JSONValue].self))
            } catch DecodingError.typeMismatch {
                // Not an array (an element's own failure is thrown as it is): an object, or the error saying why not.
                do {
                    self = .object(try container.decode([String: JSONValue].self))
                } catch let error as DecodingError {
                    guard case .typeMismatch = error, let corrupted else { throw error }
                    throw corrupted
                }
            }
        }
    }

    /// Encodes the value. An object's keys are written as they are, as a `[String: …]` dictionary's are: an
    /// encoder's `keyEncodingStrategy` (`.convertToSnakeCase`) renames the keys of types, not of JSON data.
    ///
    /// - Throws: `EncodingError.invalidValue` for a value nested deeper than 128 levels (as deep as one decodes),
    ///   which would otherwise exhaust the stack of the thread that encodes it.
    public func encode(to encoder: any Encoder) throws {
        try Self.checkEncodingDepth(encoder)
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let members): try container.encode(members)
        }
    }
}

extension JSONValue {
    /// Throws when `encoder` is deeper than `limit` (``maximumDepth`` by default): each level of a value built in
    /// code (a tree, a thread of replies) is several calls of the encoder, and a dispatch thread's 512 KiB stack ran
    /// out at about 180 levels of a `JSONValue`, and under 127 of a ``JSONObject``, whose levels take more.
    static func checkEncodingDepth(_ encoder: any Encoder, limit: Int = maximumDepth) throws {
        guard encoder.codingPath.count > limit else { return }
        // The depth, not the value: an error's description shows its value, which may hold a password.
        throw EncodingError.invalidValue(
            encoder.codingPath.count,
            EncodingError.Context(
                codingPath: Array(encoder.codingPath.prefix(8)),
                debugDescription: "this JSON is encoded at most \(limit) levels deep"))
    }
}

// MARK: - Equality

extension JSONValue {
    /// Whether both are the same JSON value; numbers are compared by value, so `.int(2) == .double(2.0)`.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.int(let a), .int(let b)): a == b
        case (.double(let a), .double(let b)): a == b
        case (.int(let a), .double(let b)), (.double(let b), .int(let a)): Int(exactly: b) == a
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a == b
        default: false
        }
    }

    /// Hashes the value; a whole `double` hashes as the `int` it equals.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let value): hasher.combine(value)
        case .int(let value): hasher.combine(value)
        case .double(let value):
            if let whole = Int(exactly: value) { hasher.combine(whole) } else { hasher.combine(value) }
        case .string(let value): hasher.combine(value)
        case .array(let value): hasher.combine(value)
        case .object(let value): hasher.combine(value)
        }
    }
}

// MARK: - Literals

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// `null`.
    public init(nilLiteral: ()) { self = .null }
    /// A Boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer.
    public init(integerLiteral value: Int) { self = .int(value) }
    /// A number with a fraction.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// An object; a key given twice keeps its last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSONValue: CustomStringConvertible, CustomReflectable {
    /// The value as compact JSON, keys sorted, with what a key named like a secret holds (`password`, `access_token`,
    /// `api_key`…, the names SwiftConnect's output hides in a body) shown as `"<redacted>"`, at any depth: what
    /// `print(value)` shows, so that a decoded answer leaks no credential into a log. The value itself keeps
    /// everything: `value["access_token"]?.stringValue` reads the token. A value that does not encode (nested deeper
    /// than 128 levels, or holding a `.nan`) shows as `<not encodable as JSON>`.
    ///
    /// ```swift
    /// let answer: JSONValue = ["access_token": "abc", "expires_in": 3600]
    /// print(answer)  // {"access_token":"<redacted>","expires_in":3600}
    /// ```
    public var description: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Measured first, without recursion: `redacted` walks the whole value, one call per level.
        guard !nests(deeperThan: Self.maximumDepth), let data = try? encoder.encode(redacted) else {
            return "<not encodable as JSON>"
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Whether an element lies deeper than `limit` levels (what fails to encode), measured with a stack of our own
    /// rather than the thread's.
    func nests(deeperThan limit: Int) -> Bool {
        var pending: [(value: JSONValue, depth: Int)] = [(self, 0)]
        while let (value, depth) = pending.popLast() {
            switch value {
            case .array(let elements):
                guard elements.isEmpty || depth < limit else { return true }
                pending.append(contentsOf: elements.map { ($0, depth + 1) })
            case .object(let members):
                guard members.isEmpty || depth < limit else { return true }
                pending.append(contentsOf: members.values.map { ($0, depth + 1) })
            default:
                continue
            }
        }
        return false
    }

    /// The case and what it holds, as the default reflection shows them, but with what a secret key holds shown as
    /// `"<redacted>"` (as in ``description``), so that `dump(value)` and a debugger show no secret either.
    public var customMirror: Mirror {
        let child: Mirror.Child? =
            switch self {
            case .null: nil
            case .bool(let value): ("bool", value)
            case .int(let value): ("int", value)
            case .double(let value): ("double", value)
            // As ``redacted`` shows it: a token, a `Bearer` credential, JSON carried as a string hidden whatever the key.
            case .string(let value): ("string", Redaction.redactedString(value))
            // The elements and members keep their own mirrors, which hide the secrets deeper in.
            case .array(let elements): ("array", elements)
            case .object(let members): ("object", Self.hidingSecretMembers(members))
            }
        return Mirror(self, children: child.map { [$0] } ?? [], displayStyle: .enum)
    }

    /// The value with what each secret key holds replaced by ``Redaction/placeholder``, and its other strings as
    /// ``Redaction/redactedString(_:embedding:)`` shows them (a JSON Web Token or a `Bearer` credential hidden whatever
    /// the key, JSON carried as a string redacted, the secrets of the URLs quoted hidden), at any depth: the rule
    /// ``Redaction/redactJSON(_:embedding:)`` applies to the bodies SwiftConnect prints.
    var redacted: JSONValue {
        switch self {
        case .array(let elements): .array(elements.map(\.redacted))
        case .object(let members): .object(Self.hidingSecretMembers(members).mapValues(\.redacted))
        case .string(let value): .string(Redaction.redactedString(value))
        default: self
        }
    }

    /// `value` as reflection shows a value given to be sent as JSON (a parameter, a member of a ``JSONObject``): as the
    /// JSON value it encodes to, with what secret keys hold hidden at any depth (``redacted``); its type's name when it
    /// cannot be encoded.
    ///
    /// What a secret key holds is also hidden wherever else in the value it shows (a password's confirmation, a token
    /// quoted in a note), as in the request body the value becomes when the request is printed.
    static func reflected(_ value: any Encodable) -> Any {
        guard let json = encoded(value) else { return RedactedText("<\(type(of: value)), not encodable as JSON>") }
        var secrets: [String] = []
        json.collectSecrets(underSecretKey: false, into: &secrets)
        return json.redacted.hidingValues(SecretValues(values: secrets))
    }

    /// `value` as the JSON value `JSONEncoder` encodes it to, or `nil` if it cannot.
    static func encoded(_ value: any Encodable) -> JSONValue? {
        guard let data = try? JSONEncoder().encode(value) else { return nil }
        return try? JSONDecoder().decode(JSONValue.self, from: data)
    }

    /// Appends every string and number under a secret key (``Redaction/isSensitiveField(_:)``) at any depth, or every
    /// one if `underSecretKey`: the values ``SecretValues`` takes from a JSON body.
    func collectSecrets(underSecretKey: Bool, into found: inout [String]) {
        switch self {
        // A JSON Web Token is a credential whatever its key (Strapi's `jwt`, SimpleJWT's `access`, `refresh`).
        case .string(let value): if underSecretKey || Redaction.isJSONWebToken(value) { found.append(value) }
        case .int(let value): if underSecretKey { found.append(String(value)) }
        case .double(let value): if underSecretKey { found.append(String(value)) }
        case .array(let elements):
            for element in elements { element.collectSecrets(underSecretKey: underSecretKey, into: &found) }
        case .object(let members):
            let strings = Self.strings(of: members)
            for (key, member) in members {
                let secret = Redaction.isSensitiveField(key) || Redaction.isNamedSecretValue(key, in: strings)
                member.collectSecrets(underSecretKey: underSecretKey || secret, into: &found)
            }
        case .null, .bool: break
        }
    }

    /// The value with `secrets` hidden wherever they show: in strings, keys, and numbers (a number that is one becomes
    /// the string ``Redaction/placeholder``).
    func hidingValues(_ secrets: SecretValues) -> JSONValue {
        guard !secrets.isEmpty else { return self }
        switch self {
        case .string(let value): return .string(secrets.hiding(in: value))
        case .int(let value): return Self.hidingNumber(String(value), secrets) ?? self
        case .double(let value): return Self.hidingNumber(String(value), secrets) ?? self
        case .array(let elements): return .array(elements.map { $0.hidingValues(secrets) })
        case .object(let members):
            return .object(
                Dictionary(
                    members.map { (secrets.hiding(in: $0.key), $0.value.hidingValues(secrets)) },
                    uniquingKeysWith: { first, _ in first }))
        case .null, .bool: return self
        }
    }

    /// The number's text with `secrets` hidden, as a string, if that hides anything; `nil` otherwise.
    private static func hidingNumber(_ text: String, _ secrets: SecretValues) -> JSONValue? {
        let hidden = secrets.hiding(in: text)
        return hidden == text ? nil : .string(hidden)
    }

    /// `members` with what each secret key holds (and the `value` of a name/value pair named like a secret,
    /// ``Redaction/isNamedSecretValue(_:in:)``) replaced by ``Redaction/placeholder``; the others as they are.
    private static func hidingSecretMembers(_ members: [String: JSONValue]) -> [String: JSONValue] {
        var shown = members
        let strings = strings(of: members)
        for key in members.keys where Redaction.isSensitiveField(key) || Redaction.isNamedSecretValue(key, in: strings)
        {
            shown[key] = .string(Redaction.placeholder)
        }
        return shown
    }

    /// The members of an object that hold a string, as strings: what a name/value pair's name is read from.
    private static func strings(of members: [String: JSONValue]) -> [String: Any] {
        members.compactMapValues { member -> Any? in
            guard case .string(let text) = member else { return nil }
            return text
        }
    }
}
