import Foundation

/// Parameters by key, written as a dictionary literal: the `parameters: [String: Any]` of Remotli, Konex and
/// JustAPIs, as a `Sendable` value that keeps the order it was written in.
///
/// Values may be literals, variables and any `Encodable & Sendable` value (models, dates, arrays, dictionaries):
///
/// ```swift
/// let name = "ada"
/// api.request("/login", method: .post, parameters: ["username": name, "remember": true, "attempt": 2])
/// // POST /login, body {"username":"ada","remember":true,"attempt":2}
///
/// api.request("/todos", parameters: ["page": 2, "tags": ["home", "work"], "filter": nil])
/// // GET /todos?page=2&tags=home&tags=work
/// ```
///
/// **Where the values go** is decided by the request's method and `Content-Type`, as Remotli and JustAPIs did (Konex
/// sent a DELETE's values in a JSON body: wrap the object in ``Parameter/jsonObject(value:)`` for that):
/// - **GET, HEAD and DELETE**: query items, in the order written, after any query of the endpoint.
/// - **Any other method**: the body, as a JSON object with the keys as written, in that order (an object nested as a
///   value, or in an array that is one, too), each value encoded with the connector's `jsonEncoder` (so its date and
///   key strategies apply inside values); or as `application/x-www-form-urlencoded` fields when the request's
///   `Content-Type` says so (the connector's headers, its or the call's options, or a default of the client).
///
/// **In a query or a form**, a value is written as text: a string as it is, a number as Swift prints it (`2`,
/// `2.5`), a Boolean as `true` or `false`, any other `Encodable` value as the connector's `jsonEncoder` encodes
/// it (a `Date`, by its date strategy). An array of such values repeats its key (`tags=home&tags=work`; name the
/// key `tags[]` if the server wants brackets); an empty array, like `nil`, writes no item at all, as Alamofire's
/// encoders do (send a filter that matches nothing some other way). `nil` (or JSON `null`) leaves the key out, as
/// Alamofire's form encoder does; in a JSON body it is sent as `null`. A value a query cannot carry (an object, or an array
/// holding arrays or objects) is never dropped or flattened by guesswork: the request fails with
/// ``ConnectError/InvalidRequestReason/invalidParameter(key:reason:)``, nothing sent. So does a key written twice,
/// and a number that is not finite (a `Double.nan`, `JSONValue.double(.infinity)`, a `Decimal.nan`): `nan` is a word,
/// not a number a server reads.
///
/// A dictionary literal nested in a value must say its type when its values mix types
/// (`["user": ["name": name, "age": 3] as JSONObject]`); one whose values share a type needs nothing
/// (`["ids": [1, 2, 3]]`).
///
/// To send it as a JSON body whatever its `Content-Type`, wrap it: `Parameter.jsonObject(value: object)`, alone or in a
/// ``CompositeParameters``, keeps the order written too (on a GET or HEAD that fails with
/// ``ConnectError/InvalidRequestReason/bodyNotAllowed(method:)``, as any body does).
public struct JSONObject: Sendable, ParametersRepresentable {
    /// A value as given: `nil` for JSON `null`.
    public typealias Value = (any Encodable & Sendable)?

    /// The members, in the order written.
    public private(set) var members: [(key: String, value: Value)]
    /// The first key written twice, which makes the request fail (a literal cannot throw).
    private var repeatedKey: String?
    /// The deepest an object is encoded: each level takes the encoder more calls than one of a ``JSONValue``.
    static let maximumDepth = 64

    /// An object with these members, in order. A key given twice makes the request fail with
    /// ``ConnectError/InvalidRequestReason/invalidParameter(key:reason:)``.
    public init(_ members: [(key: String, value: Value)]) {
        self.members = []
        self.members.reserveCapacity(members.count)
        for (key, value) in members {
            if repeatedKey == nil, self.members.contains(where: { $0.key == key }) { repeatedKey = key }
            self.members.append((key, value))
        }
    }

    /// An object with the members of `dictionary`, sorted by key (a dictionary has no order of its own).
    public init(_ dictionary: [String: Value]) {
        self.init(dictionary.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) })
    }

    /// The keys, in the order written.
    public var keys: [String] { members.map(\.key) }

    /// The value of `key`: `nil` when absent or `null`. Setting replaces the value in place, or appends the key;
    /// setting `nil` removes the key, as it does from a `[String: Any]` (which this object replaces): a PATCH built
    /// with `object["nickname"] = user.nickname` leaves out a nickname the user has not got, rather than sending
    /// `null`, which a server reads as "clear it". To send `null`, set ``JSONValue/null``, or write `nil` in a literal.
    ///
    /// ```swift
    /// var changes: JSONObject = ["name": "Ada"]
    /// changes["nickname"] = nickname          // nil: no "nickname" member
    /// changes["avatar"] = JSONValue.null      // "avatar": null, to clear it
    /// ```
    public subscript(key: String) -> Value {
        get { members.first { $0.key == key }?.value ?? nil }
        set {
            let index = members.firstIndex { $0.key == key }
            switch (index, newValue) {
            case (let index?, nil):
                members.remove(at: index)
                // Another key may be written twice still: the request fails for it.
                if repeatedKey == key { repeatedKey = Self.firstRepeatedKey(in: members) }
            case (nil, nil):
                break
            case (let index?, let value):
                members[index].value = value
            case (nil, let value):
                members.append((key, value))
            }
        }
    }

    /// The first key of `members` written a second time, or `nil`.
    private static func firstRepeatedKey(in members: [(key: String, value: Value)]) -> String? {
        var seen = Set<String>()
        return members.first { !seen.insert($0.key).inserted }?.key
    }

    /// As a JSON body. A client places the object by method instead (see above); this is what other uses of
    /// parameters, such as a multipart upload's fields, read.
    public var parameterList: [Parameter] { [.jsonObject(value: self)] }

    /// The object as a ``JSONValue``, each member encoded with `encoder`.
    ///
    /// - Throws: The encoder's error for a value it cannot encode (a `Double.nan`, a model that throws).
    public func jsonValue(encoder: JSONEncoder = JSONEncoder()) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: encoder.encode(self))
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    /// An object written as a literal, in the order written.
    public init(dictionaryLiteral elements: (String, Value)...) {
        self.init(elements.map { (key: $0.0, value: $0.1) })
    }
}

extension JSONObject: Encodable {
    /// Encodes the members (a `nil` value as `null`), their keys as they are, as a `[String: …]` dictionary's are: an
    /// encoder's `keyEncodingStrategy` renames the keys of the values' own types, not these. `JSONEncoder` writes
    /// keys in an order of its own; as a request's parameters or body, the object (and one nested as a member's value)
    /// is written in the order given.
    ///
    /// - Throws: `EncodingError.invalidValue` for a key given twice, or for objects nested deeper than 64 levels,
    ///   which would otherwise exhaust the stack of the thread that encodes them.
    public func encode(to encoder: any Encoder) throws {
        try JSONValue.checkEncodingDepth(encoder, limit: Self.maximumDepth)
        if let repeatedKey {
            throw EncodingError.invalidValue(
                self,
                EncodingError.Context(
                    codingPath: encoder.codingPath, debugDescription: "the key \"\(repeatedKey)\" is given twice"))
        }
        var container = encoder.singleValueContainer()
        try container.encode(
            Dictionary(members.map { ($0.key, Member(value: $0.value)) }, uniquingKeysWith: { first, _ in first }))
    }

    /// One member's value, encoded as the encoder encodes it on its own (a `Date` by its date strategy).
    private struct Member: Encodable {
        let value: Value

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            if let value { try container.encode(value) } else { try container.encodeNil() }
        }
    }
}

extension JSONObject: CustomReflectable {
    /// The members in the order written, each as the JSON it is sent as, with what a key named like a secret holds
    /// (`password`, `access_token`…) shown as `"<redacted>"`, at any depth, as SwiftConnect's output hides a body's
    /// fields: what `print(parameters)` and `dump(parameters)` show, so that a login's password reaches no log.
    ///
    /// What a secret key holds is also hidden wherever else in the object it shows (a password's confirmation, a token
    /// quoted in a note), as in the request the object is sent in when that request is printed.
    ///
    /// ```swift
    /// let login: JSONObject = ["username": "ada", "password": password]
    /// print(login)  // JSONObject(username: "ada", password: "<redacted>")
    /// ```
    public var customMirror: Mirror {
        let secrets = SecretValues(values: secretValues)
        let children = members.map { key, value -> Mirror.Child in
            let label = secrets.hiding(in: key)
            if Redaction.isSensitiveQueryItem(key) {
                return (label: label, value: JSONValue.string(Redaction.placeholder))
            }
            guard let value else { return (label: label, value: JSONValue.null) }
            let shown = JSONValue.reflected(value)
            return (label: label, value: (shown as? JSONValue)?.hidingValues(secrets) ?? shown)
        }
        return Mirror(self, children: children, displayStyle: .struct)
    }
}

extension JSONObject {
    /// What a secret key holds, at any depth (a key named like a secret at the top, as a query item's name, and as a
    /// JSON field's name below): the values the object's reflection hides wherever they show.
    var secretValues: [String] {
        var found: [String] = []
        for (key, value) in members {
            guard let value, let json = JSONValue.encoded(value) else { continue }
            json.collectSecrets(underSecretKey: Redaction.isSensitiveQueryItem(key), into: &found)
        }
        return found
    }

    /// The object with `secrets` hidden wherever they show in its keys and in the JSON its values encode to, for the
    /// reflection of what holds it (a ``Route``): members that do not encode, and what secret keys hold (which the
    /// object's reflection hides by name), are kept as they are.
    func hidingValues(_ secrets: SecretValues) -> JSONObject {
        guard !secrets.isEmpty else { return self }
        return JSONObject(
            members.map { key, value in
                guard let value, !Redaction.isSensitiveQueryItem(key), let json = JSONValue.encoded(value) else {
                    return (key: secrets.hiding(in: key), value: value)
                }
                return (key: secrets.hiding(in: key), value: json.hidingValues(secrets))
            })
    }
}

// MARK: - Placement

extension JSONObject {
    /// Whether `method`'s parameters go in the query: GET, HEAD and DELETE.
    static func placesInQuery(method: String) -> Bool {
        method == "GET" || method == "HEAD" || method == "DELETE"
    }

    /// The parameters the object makes for a request with `method` whose `Content-Type` header is `contentType`:
    /// query items, form fields or one JSON body.
    ///
    /// - Throws: ``ConnectError/InvalidRequestReason/invalidParameter(key:reason:)`` for a key written twice, a
    ///   value a query or form cannot carry, or one the encoder cannot encode.
    func parameters(method: String, contentType: String?, encoder: JSONEncoder) throws -> [Parameter] {
        if let repeatedKey {
            throw ConnectError.invalidRequest(
                .invalidParameter(key: repeatedKey, reason: "the key is given more than once"))
        }
        let inQuery = Self.placesInQuery(method: method)
        let isForm =
            !inQuery && contentType.map(ConnectResponse.mediaType(of:)) == "application/x-www-form-urlencoded"
        guard inQuery || isForm else {
            return [.body(try jsonBody(encoder: encoder), contentType: "application/json")]
        }
        var parameters: [Parameter] = []
        parameters.reserveCapacity(members.count)
        for (key, value) in members {
            for text in try Self.texts(of: value, key: key, encoder: encoder, where: inQuery ? "query" : "form") {
                parameters.append(inQuery ? .query(key: key, value: text) : .form(key: key, value: text))
            }
        }
        return parameters
    }

    /// The object as a JSON body: its keys as written and in that order (sorted if `encoder` sorts keys), each value
    /// as `encoder` encodes it, so its date and data strategies apply, and an object nested as a member's value (or
    /// in an array that is one) written the same way, in its order too. (`JSONEncoder` keeps no order of its own.)
    ///
    /// - Throws: ``ConnectError/InvalidRequestReason/invalidParameter(key:reason:)`` naming the member whose value
    ///   could not be encoded.
    func jsonBody(encoder: JSONEncoder) throws -> Data {
        try jsonBody(encoder: encoder, depth: 0) { key, error in
            var failure = ConnectError.invalidRequest(
                .invalidParameter(key: key, reason: "its value could not be encoded: \(error)"))
            failure.underlyingError = error
            return failure
        }
    }

    /// The object as ``jsonBody(encoder:)`` writes it, for a ``Parameter/jsonObject(value:)`` that wraps it: in the
    /// order written, where encoding it as a dictionary would not keep that order.
    ///
    /// - Throws: What ``encode(to:)`` throws: `EncodingError.invalidValue` for a key given twice, or the encoder's
    ///   error for a value, with the path to it.
    func orderedJSON(encoder: JSONEncoder) throws -> Data {
        try jsonBody(encoder: encoder, depth: 0) { key, error in
            guard case EncodingError.invalidValue(let value, let context) = error else { return error }
            return EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: [MemberKey(stringValue: key)] + context.codingPath,
                    debugDescription: context.debugDescription, underlyingError: context.underlyingError))
        }
    }

    /// ``jsonBody(encoder:)`` at `depth` levels of nested objects, with `failure` making the error for a member
    /// whose value could not be encoded.
    private func jsonBody(
        encoder: JSONEncoder, depth: Int, failure: (String, any Error) -> any Error
    ) throws -> Data {
        if let repeatedKey {
            throw EncodingError.invalidValue(
                self,
                EncodingError.Context(codingPath: [], debugDescription: "the key \"\(repeatedKey)\" is given twice"))
        }
        guard depth <= Self.maximumDepth else {
            throw EncodingError.invalidValue(
                depth,
                EncodingError.Context(
                    codingPath: [], debugDescription: "this JSON is encoded at most \(Self.maximumDepth) levels deep"))
        }
        let sorts = encoder.outputFormatting.contains(.sortedKeys)
        let ordered = sorts ? members.sorted { $0.key < $1.key } : members
        var body = Data("{".utf8)
        let keyEncoder = JSONEncoder()
        for (index, (key, value)) in ordered.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            do {
                body.append(try keyEncoder.encode(key))
                body.append(UInt8(ascii: ":"))
                switch value {
                case nil:
                    body.append(contentsOf: "null".utf8)
                case let object as JSONObject:
                    body.append(try object.jsonBody(encoder: encoder, depth: depth + 1) { $1 })
                case let objects as [JSONObject]:
                    body.append(UInt8(ascii: "["))
                    for (index, object) in objects.enumerated() {
                        if index > 0 { body.append(UInt8(ascii: ",")) }
                        body.append(try object.jsonBody(encoder: encoder, depth: depth + 1) { $1 })
                    }
                    body.append(UInt8(ascii: "]"))
                case let value?:
                    body.append(try JSONSyntax.encoded(value, by: encoder))
                }
            } catch {
                throw failure(key, error)
            }
        }
        body.append(UInt8(ascii: "}"))
        return body
    }

    /// A member's key in the coding path of an error.
    private struct MemberKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// The texts `value` is sent as in a query or form: one, several for an array, none for `nil`.
    private static func texts(of value: Value, key: String, encoder: JSONEncoder, where place: String) throws
        -> [String]
    {
        switch value {
        case nil: return []
        case let text as String: return [text]
        case let flag as Bool: return [flag ? "true" : "false"]
        case let number as Int: return [String(number)]
        case let json as JSONValue: return try texts(of: json, key: key, place: place)
        // Numbers a `Double` cannot hold exactly (`UInt64.max`, a `Decimal` of 20 digits) as Swift prints them: read
        // back through JSON they would come out rounded, in exponent form.
        case let number as any BinaryInteger: return [String(describing: number)]
        case let number as Decimal: return [try text(of: number, key: key, place: place)]
        case let numbers as [any BinaryInteger]: return numbers.map { String(describing: $0) }
        case let numbers as [Decimal]: return try numbers.map { try text(of: $0, key: key, place: place) }
        case let value?:
            func encodingFailure(_ error: any Error) -> ConnectError {
                var failure = ConnectError.invalidRequest(
                    .invalidParameter(key: key, reason: "its value could not be encoded: \(error)"))
                failure.underlyingError = error
                return failure
            }
            let encoded: Data
            do { encoded = try encoder.encode(value) } catch { throw encodingFailure(error) }
            // A type of the caller's that encodes as one number, or as an array (a `Set`, optionals): each number's
            // text as the encoder wrote it, exactly. Read back as a `Double`, `UInt64.max` came out rounded.
            if let number = Self.numberText(encoded) { return [number] }
            let json: JSONValue
            do { json = try JSONDecoder().decode(JSONValue.self, from: encoded) } catch { throw encodingFailure(error) }
            if case .array(let elements) = json, let texts = Self.arrayElementTexts(encoded),
                texts.count == elements.count
            {
                return try zip(elements, texts).compactMap { element, text in
                    if case .array = element { throw unsendable(key: key, place: place) }
                    return try Self.numberText(text) ?? self.text(of: element, key: key, place: place)
                }
            }
            return try texts(of: json, key: key, place: place)
        }
    }

    /// The text of each element of `json`, a JSON array as an encoder wrote it (valid, so strings are skipped by
    /// their quotes and escapes), white space around it left out; `nil` when `json` is not an array.
    private static func arrayElementTexts(_ json: Data) -> [Data]? {
        let bytes = [UInt8](json)
        func trimmed(_ range: Range<Int>) -> Data {
            var range = range
            while let first = range.first, JSONSyntax.isWhitespace(bytes[first]) { range = range.dropFirst() }
            while let last = range.last, JSONSyntax.isWhitespace(bytes[last]) { range = range.dropLast() }
            return Data(bytes[range])
        }
        guard let open = bytes.firstIndex(where: { !JSONSyntax.isWhitespace($0) }), bytes[open] == UInt8(ascii: "[")
        else { return nil }
        var elements: [Data] = []
        var depth = 0
        var inString = false
        var escaped = false
        var start = open + 1
        for index in open..<bytes.count {
            let byte = bytes[index]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth -= 1
                guard depth == 0 else { continue }
                let last = trimmed(start..<index)
                if !last.isEmpty || !elements.isEmpty { elements.append(last) }
                return elements
            case UInt8(ascii: ",") where depth == 1:
                elements.append(trimmed(start..<index))
                start = index + 1
            default:
                break
            }
        }
        return nil
    }

    /// `json` when it is a single JSON number (`-12.5e3`), as written; `nil` for anything else.
    private static func numberText(_ json: Data) -> String? {
        guard let first = json.first, first == UInt8(ascii: "-") || (0x30...0x39).contains(first),
            json.allSatisfy({ byte in
                (0x30...0x39).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+")
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
            })
        else { return nil }
        return String(decoding: json, as: UTF8.self)
    }

    private static func texts(of value: JSONValue, key: String, place: String) throws -> [String] {
        if case .array(let elements) = value {
            return try elements.compactMap { element in
                if case .array = element { throw unsendable(key: key, place: place) }
                return try text(of: element, key: key, place: place)
            }
        }
        return try text(of: value, key: key, place: place).map { [$0] } ?? []
    }

    private static func text(of value: JSONValue, key: String, place: String) throws -> String? {
        switch value {
        case .null: return nil
        case .bool(let flag): return flag ? "true" : "false"
        case .int(let number): return String(number)
        case .double(let number):
            guard number.isFinite else { throw notFinite(String(number), key: key, place: place) }
            return String(number)
        case .string(let text): return text
        case .array, .object: throw unsendable(key: key, place: place)
        }
    }

    /// `number` as Swift prints it; a `Decimal.nan` is refused, as `nan` is for a `Double`.
    private static func text(of number: Decimal, key: String, place: String) throws -> String {
        guard !number.isNaN else { throw notFinite(number.description, key: key, place: place) }
        return number.description
    }

    /// The error for a number that is not finite: its text (`nan`, `inf`) is a word, not a number a server reads,
    /// so it is refused as the encoder refuses a `Double.nan`, rather than sent.
    private static func notFinite(_ text: String, key: String, place: String) -> ConnectError {
        ConnectError.invalidRequest(
            .invalidParameter(
                key: key, reason: "its value \(text) is not a finite number, which a \(place) cannot carry as one"))
    }

    private static func unsendable(key: String, place: String) -> ConnectError {
        ConnectError.invalidRequest(
            .invalidParameter(
                key: key,
                reason: "its value holds an object or nested array, which a \(place) cannot carry: send it in a "
                    + "JSON body (POST, PUT, PATCH) or flatten it into keys of your own"))
    }
}

// MARK: - A number JSON cannot hold

extension JSONSyntax {
    /// `value` encoded by `encoder`, refusing what is not JSON: FoundationEssentials' `JSONEncoder` writes a
    /// `Decimal.nan` as a bare `NaN` (whatever its non-conforming float strategy), a body no server can parse.
    ///
    /// - Throws: The encoder's error, or `EncodingError.invalidValue` for a bare `NaN`.
    static func encoded(_ value: any Encodable, by encoder: JSONEncoder) throws -> Data {
        let data = try encoder.encode(value)
        // A scan for the letters, then a parse only if they occur (in a string, most likely): a body without them
        // costs one pass of `memchr`.
        if mayHoldBareNaN(data), problem(in: data) != nil {
            // The number, not `value`: an error's description shows its value, and the body may hold a password.
            throw EncodingError.invalidValue(
                Decimal.nan,
                EncodingError.Context(
                    codingPath: [],
                    debugDescription:
                        "a number that is not finite (a Decimal.nan) was written as NaN, which is not JSON"))
        }
        return data
    }

    /// Whether `data` holds the bytes `NaN` anywhere.
    private static func mayHoldBareNaN(_ data: Data) -> Bool {
        data.withUnsafeBytes { raw in
            guard let base = raw.baseAddress, raw.count >= 3 else { return false }
            var start = 0
            while start <= raw.count - 3 {
                guard let found = memchr(base + start, Int32(UInt8(ascii: "N")), raw.count - 2 - start) else {
                    return false
                }
                let index = base.distance(to: UnsafeRawPointer(found))
                if raw[index + 1] == UInt8(ascii: "a"), raw[index + 2] == UInt8(ascii: "N") { return true }
                start = index + 1
            }
            return false
        }
    }
}
