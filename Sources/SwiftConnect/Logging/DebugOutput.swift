import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The text `debugResponse: true` logs for a request and its outcome.
enum DebugOutput {
    static let rule = "======================================="

    static func request(_ request: URLRequest, redacting: Bool) -> String {
        "\(rule)\n$ \(cURLCommand(for: request, redactingSecrets: redacting))\n\(rule)"
    }

    /// The response's status, headers and body; with `redacting`, secrets hidden by name and the values of
    /// `secrets` hidden wherever they appear (a body that echoes the request's token).
    static func response(_ response: ConnectResponse, redacting: Bool, secrets: SecretValues) -> String {
        // And those the response hands out in its fields (a login's `X-Auth-Token`), wherever its body quotes them.
        let secrets = redacting ? secrets.union(SecretValues(handedOutIn: response.head.headerFields)) : secrets
        var lines = [rule]
        let method = response.request.httpMethod ?? "GET"
        let url = response.request.url.map { Redaction.url($0, redacting: redacting) } ?? "?"
        let reason = HTTPURLResponse.localizedString(forStatusCode: response.statusCode)
        lines.append("HTTP \(response.statusCode) \(reason) ← \(method) \(url) (\(response.data.count) bytes)")
        let headers = response.response.allHeaderFields.compactMap { key, value -> (String, String)? in
            guard let key = key as? String else { return nil }
            return (key, "\(value)")
        }.sorted { $0.0.lowercased() < $1.0.lowercased() }
        for (name, value) in headers {
            // A name that is not a token is cut where a value could start, as the request's names are: it may be a
            // whole pasted header line.
            let shown = redacting ? HTTPHeader.shownName(name) : name
            lines.append("\(shown): \(Redaction.headerValue(value, name: name, redacting: redacting))")
        }
        let body = Redaction.bodyText(
            response.data,
            contentType: response.header("Content-Type"),
            redacting: redacting,
            pretty: true,
            hiding: redacting ? secrets : nil
        )
        if !body.isEmpty {
            lines.append("")
            lines.append(body)
        }
        lines.append(rule)
        return secrets.hiding(in: lines.joined(separator: "\n"))
    }

    /// The response (also the one inside an error-status failure), or the failure.
    static func outcome(_ result: Result<ConnectResponse, any Error>, of request: URLRequest, redacting: Bool)
        -> String
    {
        // The values of the request as built and as sent (after the middlewares that add credentials).
        var secrets = redacting ? SecretValues(of: request) : SecretValues()
        switch result {
        case .success(let response):
            if redacting { secrets = secrets.union(SecretValues(of: response.request)) }
            return self.response(response, redacting: redacting, secrets: secrets)
        case .failure(let error as ConnectError):
            if redacting { secrets = secrets.union(error.secrets()) }
            guard let httpResponse = error.response else { return failure(error, for: request, redacting: redacting) }
            let response = ConnectResponse(
                request: error.request ?? request,
                response: httpResponse,
                data: error.body ?? Data()
            )
            return self.response(response, redacting: redacting, secrets: secrets) + "\n"
                + failure(error, for: request, redacting: redacting)
        case .failure(let error):
            return failure(error, for: request, redacting: redacting)
        }
    }

    static func failure(_ error: any Error, for request: URLRequest?, redacting: Bool) -> String {
        let target = request.flatMap { request in
            request.url.map { "\(request.httpMethod ?? "GET") \(Redaction.url($0, redacting: redacting))" }
        }
        // A `ConnectError` hides its own secrets; another error's text (a middleware's `DecodingError` quoting a URL, a
        // platform error's failing URL) is shown with the secrets of the URLs it quotes hidden by name, as
        // `ConnectError` shows an underlying error's.
        let shown = redacting && !(error is ConnectError) ? Redaction.urlsInText("\(error)") : "\(error)"
        let text = "\(rule)\nFAILED \(target ?? ""): \(shown)\n\(rule)"
        return redacting ? SecretValues(of: request).hiding(in: text) : text
    }
}
