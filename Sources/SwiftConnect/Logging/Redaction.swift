import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Hides secrets in what SwiftConnect logs: header values, query values and body fields that look like
/// credentials. Used by `debugResponse` output and ``cURLCommand(for:redactingSecrets:)``.
enum Redaction {
    /// What a hidden value is replaced with.
    static let placeholder = "<redacted>"

    /// Fragments that mark a query item or JSON/form field name as secret, matched ignoring case.
    private static let sensitiveFieldFragments = [
        "password", "passwd", "secret", "token", "apikey", "api_key", "api-key", "authorization", "cookie",
        "credential", "session", "signature", "private_key", "privatekey",
    ]

    /// Whether a query item or body field with this name holds a secret.
    static func isSensitiveField(_ name: String) -> Bool {
        let lowered = name.lowercased()
        return sensitiveFieldFragments.contains { lowered.contains($0) }
    }

    /// The header value to show: the value, or the placeholder for a sensitive header.
    static func headerValue(_ value: String, name: String, redacting: Bool) -> String {
        redacting && HTTPHeader.isSensitive(name: name) ? placeholder : value
    }

    /// The URL to show: without `user:password@`, and with sensitive query values hidden.
    static func url(_ url: URL, redacting: Bool) -> String {
        guard redacting, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return url.absoluteString
        }
        components.user = nil
        components.password = nil
        guard let query = components.percentEncodedQuery else { return components.string ?? url.redactingUserInfo }
        // The placeholder is not valid in a percent-encoded query, so the display string is assembled by hand.
        let fragment = components.percentEncodedFragment
        components.percentEncodedQuery = nil
        components.percentEncodedFragment = nil
        let base = components.string ?? url.redactingUserInfo
        return base + "?" + redactedQuery(query) + (fragment.map { "#" + $0 } ?? "")
    }

    /// A percent-encoded query (or form body) with the values of sensitive names hidden.
    static func redactedQuery(_ query: String) -> String {
        query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            guard parts.count == 2, isSensitiveField(name) else { return String(pair) }
            return "\(parts[0])=\(placeholder)"
        }.joined(separator: "&")
    }

    /// A body as text for logs: JSON pretty-printed (sensitive fields hidden), forms with sensitive values
    /// hidden, other text as is, binary as a byte count. Long bodies are cut at `limit` bytes.
    static func bodyText(_ data: Data, contentType: String?, redacting: Bool, pretty: Bool, limit: Int = 64 * 1024)
        -> String
    {
        if data.isEmpty { return "" }
        let type = contentType?.lowercased() ?? ""
        if let json = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]),
            pretty || (redacting && containsSensitiveField(json))
        {
            // Re-serialised only to pretty-print or to hide a field; otherwise the exact bytes are shown.
            let shown = redacting ? redactJSON(json) : json
            var options: JSONSerialization.WritingOptions = [.fragmentsAllowed, .withoutEscapingSlashes]
            if pretty { options.formUnion([.prettyPrinted, .sortedKeys]) }
            if let output = try? JSONSerialization.data(withJSONObject: shown, options: options) {
                return truncated(String(decoding: output, as: UTF8.self), limit: limit)
            }
        }
        guard let text = String(data: data, encoding: .utf8) else {
            return "<\(data.count) bytes of binary data>"
        }
        if redacting && type.hasPrefix("application/x-www-form-urlencoded") {
            return truncated(redactedQuery(text), limit: limit)
        }
        return truncated(text, limit: limit)
    }

    /// Whether a JSON value has a sensitive key at any depth.
    static func containsSensitiveField(_ value: Any) -> Bool {
        if let object = value as? [String: Any] {
            return object.contains { key, child in isSensitiveField(key) || containsSensitiveField(child) }
        }
        if let array = value as? [Any] { return array.contains(where: containsSensitiveField) }
        return false
    }

    /// A JSON value with the values of sensitive keys replaced, at any depth.
    static func redactJSON(_ value: Any) -> Any {
        if let object = value as? [String: Any] {
            var result: [String: Any] = [:]
            for (key, child) in object {
                result[key] = isSensitiveField(key) ? placeholder : redactJSON(child)
            }
            return result
        }
        if let array = value as? [Any] { return array.map(redactJSON) }
        return value
    }

    private static func truncated(_ text: String, limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        let prefix = String(decoding: text.utf8.prefix(limit), as: UTF8.self)
        return prefix + "\n… (\(text.utf8.count) bytes in all)"
    }
}
