import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A runnable cURL command that repeats `request`, for logs and bug reports.
///
/// Secrets are hidden unless `redactingSecrets` is `false`: sensitive headers (`Authorization`, `Cookie`,
/// `*-Token`…), sensitive query values and JSON or form fields named like `password` or `token`, and any
/// `user:password@` in the URL. Arguments are single-quoted, so the command is safe to paste into a shell.
///
/// ```swift
/// let request = try TodoConnector.get(id: 1).asURLRequest()
/// print(cURLCommand(for: request))
/// // curl -v \
/// //     -X GET \
/// //     'https://jsonplaceholder.typicode.com/todos/1'
/// ```
///
/// - Parameters:
///   - request: The request to describe.
///   - redactingSecrets: Whether to hide secrets. Defaults to `true`.
/// - Returns: The command, one argument per line.
public func cURLCommand(for request: URLRequest, redactingSecrets: Bool = true) -> String {
    var lines = ["curl -v"]
    lines.append("-X \(request.httpMethod ?? "GET")")
    let headers = (request.allHTTPHeaderFields ?? [:]).sorted { $0.key.lowercased() < $1.key.lowercased() }
    for (name, value) in headers {
        let shown = Redaction.headerValue(value, name: name, redacting: redactingSecrets)
        lines.append("-H \(shellQuoted("\(name): \(shown)"))")
    }
    var note = ""
    if let body = request.httpBody, !body.isEmpty {
        let contentType = request.value(forHTTPHeaderField: "Content-Type")
        if String(data: body, encoding: .utf8) == nil {
            lines.append("--data-binary @body.bin")
            // After the last argument: a comment before a line continuation would swallow it.
            note = "  # body.bin: the \(body.count)-byte binary body"
        } else {
            let text = Redaction.bodyText(
                body,
                contentType: contentType,
                redacting: redactingSecrets,
                pretty: false,
                limit: .max
            )
            lines.append("--data-raw \(shellQuoted(text))")
        }
    }
    if let url = request.url {
        lines.append(shellQuoted(Redaction.url(url, redacting: redactingSecrets)))
    }
    return lines.joined(separator: " \\\n    ") + note
}

/// `text` in single quotes for a POSIX shell; an embedded `'` becomes `'\''`.
func shellQuoted(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
}
