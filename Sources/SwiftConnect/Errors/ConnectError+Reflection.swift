import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension ConnectError: CustomReflectable {
    /// What `dump`, `Mirror` and debuggers show of the error: every field, with the request, the response, the body
    /// and the underlying error as text with their secrets hidden, never the objects themselves. Reflection to any
    /// depth therefore cannot reach a credential header, a secret in the URL or a secret body field; code that
    /// needs them reads ``request``, ``response`` and ``body``, which keep everything.
    ///
    /// ```swift
    /// dump(error)  // request: "GET https://api.example.com/me?token=<redacted> Authorization: <redacted>"
    /// ```
    public var customMirror: Mirror {
        let children: KeyValuePairs<String, Any> = [
            "kind": kind,
            "message": SingleLineText.make(message),
            "invalidRequestReason": invalidRequestReason.map { "\($0)" } as Any,
            "request": request.map(Self.reflected(_:)) as Any,
            "response": response.map(Self.reflected(_:)) as Any,
            "body": body.map { body in
                Redaction.bodyText(
                    body, contentType: response?.value(forHTTPHeaderField: "Content-Type"), redacting: true,
                    pretty: false, limit: ConnectError.excerptLimit)
            } as Any,
            "underlyingError": underlyingError.map(reflected(_:)) as Any,
            "codingPath": codingPath as Any,
            "attempts": attempts,
        ]
        return Mirror(self, children: children, displayStyle: .struct)
    }

    /// The method, the URL and the header fields of `request`, secrets hidden.
    private static func reflected(_ request: URLRequest) -> String {
        var text = request.httpMethod ?? "GET"
        if let url = request.url { text += " " + Redaction.url(url, redacting: true) }
        for (name, value) in (request.allHTTPHeaderFields ?? [:]).sorted(by: { $0.key < $1.key }) {
            text += " \(name): \(Redaction.headerValue(value, name: name, redacting: true))"
        }
        let bodyCount = request.httpBody?.count ?? 0
        if bodyCount > 0 { text += " (body: \(bodyCount) bytes)" }
        return text
    }

    /// The status, the URL and the header fields of `response`, secrets hidden.
    private static func reflected(_ response: HTTPURLResponse) -> String {
        var text = "HTTP \(response.statusCode)"
        if let url = response.url { text += " " + Redaction.url(url, redacting: true) }
        var fields: [(String, String)] = []
        for case (let name as String, let value as String) in response.allHeaderFields { fields.append((name, value)) }
        for (name, value) in fields.sorted(by: { $0.0 < $1.0 }) {
            text += " \(name): \(Redaction.headerValue(value, name: name, redacting: true))"
        }
        return text
    }

    /// The underlying error as text, with the request's and the response's URLs hidden as the description hides
    /// them (platform errors quote the failing URL verbatim).
    private func reflected(_ error: any Error) -> String {
        var text = error is ConnectError ? String(reflecting: error) : "\(error)"
        for url in [request?.url, response?.url].compactMap({ $0 }) {
            text = text.replacingOccurrences(of: url.absoluteString, with: Redaction.url(url, redacting: true))
        }
        return SingleLineText.make(text, limit: ConnectError.underlyingLimit)
    }
}
