import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The text `debugResponse: true` logs for a request and its outcome.
enum DebugOutput {
    static let rule = "======================================="

    /// The request as a `curl` command; with `redacting`, `declared` (``ConnectRequest/declaredSecrets``, which a
    /// `URLRequest` cannot carry) hidden too.
    static func request(_ request: URLRequest, redacting: Bool, declared: [String] = []) -> String {
        let text = "\(rule)\n$ \(cURLCommand(for: request, redactingSecrets: redacting))\n\(rule)"
        return redacting && !declared.isEmpty ? SecretValues(values: declared).hiding(in: text) : text
    }

    /// The response's status, headers and body; with `redacting`, secrets hidden by name and the values of
    /// `secrets` hidden wherever they appear (a body that echoes the request's token). The server's text is
    /// ``printable(_:keepingLineBreaks:)``: each header on its line, the body with its own line breaks.
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
            let line = "\(shown): \(Redaction.headerValue(value, name: name, redacting: redacting))"
            lines.append(printable(line, keepingLineBreaks: false))
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
        return printable(secrets.hiding(in: lines.joined(separator: "\n")), keepingLineBreaks: true)
    }

    /// The response (also the one inside an error-status failure), or the failure.
    static func outcome(
        _ result: Result<ConnectResponse, any Error>, of request: URLRequest, redacting: Bool, declared: [String] = []
    ) -> String {
        // The values of the request as built and as sent (after the middlewares that add credentials), and those its
        // builder declared (``ConnectRequest/declaredSecrets``).
        var secrets = redacting ? SecretValues(of: request).union(SecretValues(values: declared)) : SecretValues()
        switch result {
        case .success(let response):
            if redacting { secrets = secrets.union(SecretValues(of: response.request)) }
            return self.response(response, redacting: redacting, secrets: secrets)
        case .failure(let error as ConnectError):
            if redacting { secrets = secrets.union(error.secrets()) }
            guard let httpResponse = error.response else {
                return failure(error, for: request, redacting: redacting, declared: declared)
            }
            let response = ConnectResponse(
                request: error.request ?? request,
                response: httpResponse,
                data: error.body ?? Data()
            )
            return self.response(response, redacting: redacting, secrets: secrets) + "\n"
                + failure(error, for: request, redacting: redacting, declared: declared)
        case .failure(let error):
            return failure(error, for: request, redacting: redacting, declared: declared)
        }
    }

    static func failure(_ error: any Error, for request: URLRequest?, redacting: Bool, declared: [String] = [])
        -> String
    {
        let target = request.flatMap { request in
            request.url.map { "\(request.httpMethod ?? "GET") \(Redaction.url($0, redacting: redacting))" }
        }
        // A `ConnectError` hides its own secrets; another error's text (a middleware's `DecodingError` quoting a URL, a
        // platform error's failing URL) is shown with the secrets of the URLs it quotes hidden by name, as
        // `ConnectError` shows an underlying error's.
        let shown = redacting && !(error is ConnectError) ? Redaction.urlsInText("\(error)") : "\(error)"
        let text = "\(rule)\nFAILED \(target ?? ""): \(shown)\n\(rule)"
        let secrets = SecretValues(of: request).union(SecretValues(values: declared))
        return printable(redacting ? secrets.hiding(in: text) : text, keepingLineBreaks: true)
    }

    /// `text` with what would act on the terminal or log viewer that shows it, rather than be read, written as an
    /// escape (`\u{1B}`): the scalars ``SingleLineText`` replaces (control characters, so ESC and a lone CR that
    /// writes over its line; the Unicode line separators; the bidirectional overrides), but the tab and, with
    /// `keepingLineBreaks`, a line feed, a CR LF becoming one. The server's text (a body, a header value, an error's
    /// message) can then send no escape sequence and hide nothing, though a body's own lines stay lines of the block.
    static func printable(_ text: String, keepingLineBreaks: Bool) -> String {
        // Most output is printable ASCII, tabs and line feeds: check the bytes first.
        if text.utf8.allSatisfy({ (0x20..<0x7F).contains($0) || $0 == 0x09 || (keepingLineBreaks && $0 == 0x0A) }) {
            return text
        }
        var shown = String.UnicodeScalarView()
        var scalars = text.unicodeScalars.makeIterator()
        var next = scalars.next()
        while let scalar = next {
            next = scalars.next()
            if scalar == "\t" || (keepingLineBreaks && scalar == "\n") || !SingleLineText.isUnsafe(scalar) {
                shown.append(scalar)
            } else if keepingLineBreaks && scalar == "\r" && next == "\n" {
                continue  // the line feed after it ends the line
            } else {
                shown.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            }
        }
        return String(shown)
    }
}
