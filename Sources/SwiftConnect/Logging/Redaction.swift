import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Hides secrets in what SwiftConnect logs: header values, query values and body fields that look like
/// credentials. Used by `debugResponse` output and ``cURLCommand(for:redactingSecrets:)``.
enum Redaction {
    /// What a hidden value is replaced with.
    static let placeholder = "<redacted>"

    /// Whether a query item or body field with this name holds a secret: by the same list of fragments
    /// (``HTTPHeader/sensitiveNameFragments``) as a header name.
    static func isSensitiveField(_ name: String) -> Bool {
        HTTPHeader.isSensitive(name: name)
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

    /// A URL as text that need not parse as a `URL` (the subject of an invalid-URL error), hidden as
    /// ``url(_:redacting:)`` hides a URL: without `user:password@`, and with sensitive query values hidden.
    static func urlText(_ text: String) -> String {
        var rest = Substring(text)
        var fragment: Substring = ""
        if let hash = rest.firstIndex(of: "#") {
            fragment = rest[hash...]
            rest = rest[..<hash]
        }
        var query: Substring?
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        if let schemeEnd = rest.range(of: "://") {
            let authority = rest[schemeEnd.upperBound...].prefix { $0 != "/" }
            if let at = authority.lastIndex(of: "@") {
                rest = rest[..<schemeEnd.upperBound] + rest[rest.index(after: at)...]
            }
        }
        return String(rest) + (query.map { "?" + redactedQuery(String($0)) } ?? "") + fragment
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

    /// The deepest JSON that logs parse and re-serialise. Both recurse once per level, and Foundation's writer
    /// overflows a 512 KiB thread stack (Apple's dispatch worker threads, where responses are logged) from
    /// about 300 levels: 128 leaves a wide margin and is plenty to read.
    static let maximumJSONDepth = 128

    /// A body as text for logs: JSON pretty-printed (sensitive fields hidden), forms (URL-encoded or
    /// multipart) with sensitive values hidden, other text as is, binary as a byte count. Long bodies are cut at `limit` bytes. Text nested
    /// deeper than ``maximumJSONDepth`` is not parsed: shown as is, or withheld when redacting, since the
    /// secrets in it cannot be found.
    static func bodyText(_ data: Data, contentType: String?, redacting: Bool, pretty: Bool, limit: Int = 64 * 1024)
        -> String
    {
        if data.isEmpty { return "" }
        let type = contentType?.lowercased() ?? ""
        let tooDeep = JSONDepth.exceeds(data, limit: maximumJSONDepth)
        if !tooDeep, let json = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]),
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
        if tooDeep && redacting {
            return "<\(data.count) bytes nested deeper than \(maximumJSONDepth) levels, not shown: secrets stay hidden>"
        }
        if redacting && type.hasPrefix("application/x-www-form-urlencoded") {
            return truncated(redactedQuery(text), limit: limit)
        }
        if redacting && type.hasPrefix("multipart/form-data"), let contentType {
            return truncated(redactedMultipart(text, contentType: contentType), limit: limit)
        }
        return truncated(text, limit: limit)
    }

    /// A `multipart/form-data` body (RFC 7578) with the content of each part whose field name is sensitive
    /// hidden. Parts are found by the boundary of `contentType`; text that does not parse is left as is.
    static func redactedMultipart(_ text: String, contentType: String) -> String {
        guard let boundary = parameter("boundary", of: contentType), !boundary.isEmpty else { return text }
        let delimiter = "--" + boundary
        var parts = text.components(separatedBy: delimiter)
        for index in parts.indices.dropFirst() {
            let part = parts[index]
            guard let headEnd = part.range(of: "\r\n\r\n") else { continue }
            let disposition = part[..<headEnd.lowerBound].components(separatedBy: "\r\n")
                .first { $0.lowercased().hasPrefix("content-disposition:") }
            guard let disposition, let name = parameter("name", of: disposition), isSensitiveField(name) else {
                continue
            }
            // The part's content ends with the CRLF that belongs to the next delimiter.
            parts[index] = String(part[..<headEnd.upperBound]) + placeholder + (part.hasSuffix("\r\n") ? "\r\n" : "")
        }
        return parts.joined(separator: delimiter)
    }

    /// The value of a `; name=value` or `; name="value"` parameter of a header value, such as a
    /// `Content-Type`'s boundary or a `Content-Disposition`'s field name.
    private static func parameter(_ name: String, of headerValue: String) -> String? {
        for item in headerValue.split(separator: ";").dropFirst() {
            let pair = item.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == name else {
                continue
            }
            let value = pair[1].trimmingCharacters(in: .whitespaces)
            guard value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") else { return value }
            return String(value.dropFirst().dropLast())
        }
        return nil
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
