import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension ConnectError: CustomReflectable {
    /// What `dump`, `Mirror` and debuggers show of the error: every field, with the request, the response, the body
    /// and the underlying error as text with their secrets hidden (by name, and by the values the request
    /// carried), never the objects themselves. Reflection to any depth therefore cannot reach a credential
    /// header, a secret in the URL or a secret body field; code that needs them reads ``request``, ``response``
    /// and ``body``, which keep everything.
    ///
    /// ```swift
    /// dump(error)  // request: "GET https://api.example.com/me?token=<redacted> Authorization: <redacted>"
    /// ```
    public var customMirror: Mirror {
        let secrets = secretsAreShown ? nil : secrets()
        let hide = { (text: String) in secrets?.hiding(in: text) ?? text }
        let children: KeyValuePairs<String, Any> = [
            "kind": kind,
            // `message` hides the request's secret values; the URLs it quotes are redacted as the description's.
            "message": SingleLineText.make(secrets == nil ? message : Redaction.urlsInText(message)),
            "invalidRequestReason": invalidRequestReason.map { hide("\($0)") } as Any,
            "request": request.map { hide(Self.reflected($0, redacting: secrets != nil)) } as Any,
            "response": response.map { hide(Self.reflected($0, redacting: secrets != nil)) } as Any,
            "body": bodyExcerpt(hiding: secrets) as Any,
            "underlyingError": underlyingError.map {
                SingleLineText.make(underlyingText($0, hiding: secrets), limit: ConnectError.underlyingLimit)
            } as Any,
            "codingPath": codingPath.map { SingleLineText.make(shownCodingPath($0, hiding: secrets)) } as Any,
            "attempts": attempts,
            // Its source URL reflects with its secrets hidden (``ShownURL``).
            "partialDownload": partialDownload as Any,
        ]
        return Mirror(self, children: children, displayStyle: .struct)
    }

    /// The method, the URL and the header fields of `request`, secrets named as such hidden if `redacting`.
    private static func reflected(_ request: URLRequest, redacting: Bool) -> String {
        var text = request.httpMethod ?? "GET"
        if let url = request.url { text += " " + Redaction.url(url, redacting: redacting) }
        for (name, value) in (request.allHTTPHeaderFields ?? [:]).sorted(by: { $0.key < $1.key }) {
            text += " \(shown(name, redacting: redacting)): "
            text += Redaction.headerValue(value, name: name, redacting: redacting)
        }
        let bodyCount = request.httpBody?.count ?? 0
        if bodyCount > 0 { text += " (body: \(bodyCount) bytes)" }
        return text
    }

    /// The status, the URL and the header fields of `response`, secrets named as such hidden if `redacting`.
    private static func reflected(_ response: HTTPURLResponse, redacting: Bool) -> String {
        var text = "HTTP \(response.statusCode)"
        if let url = response.url { text += " " + Redaction.url(url, redacting: redacting) }
        var fields: [(String, String)] = []
        for case (let name as String, let value as String) in response.allHeaderFields { fields.append((name, value)) }
        for (name, value) in fields.sorted(by: { $0.0 < $1.0 }) {
            text += " \(shown(name, redacting: redacting)): "
            text += Redaction.headerValue(value, name: name, redacting: redacting)
        }
        return text
    }

    /// A field name as reflection shows it: if `redacting`, cut where a value could start, as cURL output cuts it
    /// (``HTTPHeader/shownName(_:)``), so that a header line pasted in as the name shows no secret.
    private static func shown(_ name: String, redacting: Bool) -> String {
        redacting ? HTTPHeader.shownName(name) : name
    }
}
