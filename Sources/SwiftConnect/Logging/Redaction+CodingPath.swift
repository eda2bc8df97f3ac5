import Foundation

// MARK: - The value a decoding error failed on

extension Redaction {
    /// The JSON value `data` holds at `path`, when a key along the path names a secret (``isSensitiveField(_:)``: a
    /// `password`, an `access_token`) or is the `value` of a name/value pair that names one
    /// (``isNamedSecretValue(_:in:)``); `nil` when none does, or when `data` is not JSON. It is read as
    /// ``jsonBody(_:contentType:limit:)`` reads it: in the encoding the decoder read it in.
    ///
    /// A decoding error can quote the value it failed on (the standard library's "Cannot initialize Mode from invalid
    /// String value …", a type's own `init(from:)`): under a secret name, that value is a secret however it reads. A
    /// key is found as the path names it or, for a key strategy's name (`accessToken` for `access_token`), ignoring
    /// case, `_` and `-`. A path that goes on past what the body holds ends at the last value found.
    static func valueUnderSecretName(
        at path: [any CodingKey], inJSON data: Data, contentType: String? = nil, limit: Int = bodySecretScanLimit
    ) -> Any? {
        guard !path.isEmpty, let json = jsonBody(data, contentType: contentType, limit: limit) else { return nil }
        var value = json
        var underSecret = false
        for key in path {
            if let object = value as? [String: Any] {
                guard let name = memberName(key.stringValue, in: object), let child = object[name] else {
                    underSecret = underSecret || isSensitiveField(key.stringValue)
                    break
                }
                underSecret = underSecret || isSensitiveField(name) || isNamedSecretValue(name, in: object)
                value = child
            } else if let array = value as? [Any], let index = key.intValue, array.indices.contains(index) {
                value = array[index]
            } else {
                break
            }
        }
        return underSecret ? value : nil
    }

    /// The keys of a decoding error's `path` that are a map's data under a secret name, to hide as its secret values:
    /// each key after one that names a secret (``isSensitiveField(_:)``: `tokens`, `apiKeys`, `password`) that is not
    /// an array's index nor a case without associated values of a `CodingKey` enum.
    ///
    /// A map's key made of digits (`{"tokens": {"48213977": …}}`) has an `intValue` as an array's index has:
    /// decoders name an index otherwise (`Index 3`), so a key whose text is its integer is the data's.
    ///
    /// A model's names are such cases (a synthesized `CodingKeys` too): `credentials.kind` shows its `kind`. The keys
    /// of a `[String: T]`, and of a type that reads its keys from the data with a key type of its own, are the data's:
    /// under a secret name a map can be keyed by the secrets themselves (`{"tokens": {"<the token>": …}}`), which the
    /// path, the message and the underlying error would otherwise quote.
    static func dataKeysUnderSecretName(in path: [any CodingKey]) -> [String] {
        var underSecret = false
        var keys: [String] = []
        for key in path where !key.isArrayIndex {
            if underSecret && !isModelName(key) { keys.append(key.stringValue) }
            underSecret = underSecret || isSensitiveField(key.stringValue)
        }
        return keys
    }

    /// Whether `key` is a case without associated values of an enum: a model's name rather than a key from the data,
    /// which decoders make as structs (`Dictionary`'s) or as an enum case that holds the text (`JSONDecoder`'s).
    private static func isModelName(_ key: any CodingKey) -> Bool {
        let mirror = Mirror(reflecting: key)
        return mirror.displayStyle == .enum && mirror.children.isEmpty
    }

    /// The strings and numbers `value` holds at any depth, as text: what an error that quotes a value shows of it.
    static func scalarTexts(of value: Any) -> [String] {
        if let object = value as? [String: Any] { return object.values.flatMap(scalarTexts) }
        if let array = value as? [Any] { return array.flatMap(scalarTexts) }
        if let string = value as? String { return [string] }
        if let number = value as? NSNumber { return [number.stringValue] }
        return []
    }

    /// The member of `object` that `key` names: itself, or the one that reads as it ignoring case, `_` and `-`.
    private static func memberName(_ key: String, in object: [String: Any]) -> String? {
        if object[key] != nil { return key }
        let folded = foldedMemberName(key)
        return object.keys.first { foldedMemberName($0) == folded }
    }

    private static func foldedMemberName(_ name: String) -> String {
        String(name.lowercased().unicodeScalars.filter { $0 != "_" && $0 != "-" })
    }

}

extension CodingKey {
    /// Whether this key is an array's index: it has an integer value and its text is not that integer (decoders
    /// name an index `Index 3`). A map's key made of digits (`"48213977"`) has an integer value too, but is the
    /// data's text.
    var isArrayIndex: Bool {
        guard let index = intValue else { return false }
        return stringValue != String(index)
    }
}
