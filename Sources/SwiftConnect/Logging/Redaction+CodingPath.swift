import Foundation

// MARK: - The value a decoding error failed on

extension Redaction {
    /// The JSON value `data` holds at `path`, when a key along the path names a secret (``isSensitiveField(_:)``: a
    /// `password`, an `access_token`) or is the `value` of a name/value pair that names one
    /// (``isNamedSecretValue(_:in:)``); `nil` when none does, or when `data` is not JSON (the limits of
    /// ``secretStrings(ofBody:limit:)``).
    ///
    /// A decoding error can quote the value it failed on (the standard library's "Cannot initialize Mode from invalid
    /// String value …", a type's own `init(from:)`): under a secret name, that value is a secret however it reads. A
    /// key is found as the path names it or, for a key strategy's name (`accessToken` for `access_token`), ignoring
    /// case, `_` and `-`. A path that goes on past what the body holds ends at the last value found.
    static func valueUnderSecretName(at path: [any CodingKey], inJSON data: Data, limit: Int = 1 << 20) -> Any? {
        guard !path.isEmpty, let json = jsonObject(data, limit: limit) else { return nil }
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

    /// The JSON value of a body of at most `limit` bytes that starts like JSON and is not deeper than
    /// ``maximumJSONDepth``.
    private static func jsonObject(_ data: Data, limit: Int) -> Any? {
        guard !data.isEmpty, data.count <= limit, startsLikeJSON(data),
            !JSONDepth.exceeds(data, limit: maximumJSONDepth)
        else { return nil }
        return try? JSONSerialization.jsonObject(with: withoutBOM(data), options: [.fragmentsAllowed])
    }
}
