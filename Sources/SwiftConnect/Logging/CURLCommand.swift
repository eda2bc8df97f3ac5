import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A runnable cURL command that repeats `request`, for logs and bug reports.
///
/// Secrets are hidden unless `redactingSecrets` is `false`: sensitive headers (`Authorization`, `Cookie`,
/// `*-Token`…), sensitive query values and JSON or form fields named like `password` or `token`, and any
/// `user:password@` in the URL; and the values of those, wherever else in the request they appear (a token
/// quoted in another header or body field). Values under 6 characters are hidden only as whole words, and
/// under 4 only in their own fields (see SECURITY.md). Every argument taken from the request (method, headers, body, URL) is
/// single-quoted unless it is a plain word, so the command is safe to paste into a shell whatever the request
/// holds: quotes, `$(…)`, backticks, `;` or newlines in it reach curl as text, never run.
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
    // The request's secret values, hidden wherever they show up (a custom header or body field quoting a token).
    let secrets = redactingSecrets ? SecretValues(of: request) : SecretValues()
    let method = request.httpMethod ?? "GET"
    let body = request.httpBody.flatMap { $0.isEmpty ? nil : $0 }
    if method == "HEAD" && body == nil {
        // `-X HEAD` only renames the method: curl still waits for the body the Content-Length announces.
        lines.append("--head")
    } else {
        lines.append("-X \(shellWord(method))")
    }
    let headers = (request.allHTTPHeaderFields ?? [:]).sorted { $0.key.lowercased() < $1.key.lowercased() }
    for (field, value) in headers {
        // A name that is not a token is cut where a value could start: it may be a whole pasted header line.
        let name = HTTPHeader.shownName(field)
        let shown = secrets.hiding(in: Redaction.headerValue(value, name: field, redacting: redactingSecrets))
        // curl drops `Name:` with nothing after it; `Name;` is how it sends an empty value.
        let isEmpty = shown.utf8.allSatisfy { $0 == 0x20 || $0 == 0x09 }
        lines.append("-H \(shellQuoted(isEmpty ? "\(name);" : "\(name): \(shown)"))")
    }
    var note = ""
    if let body {
        let contentType = request.value(forHTTPHeaderField: "Content-Type")
        // A shell argument cannot hold a NUL byte: such a body is binary here even when it is valid UTF-8.
        if body.contains(0) || String(data: body, encoding: .utf8) == nil {
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
            lines.append("--data-raw \(shellQuoted(secrets.hiding(in: text)))")
        }
    } else if request.httpBodyStream != nil
        || (request.value(forHTTPHeaderField: "Content-Length").flatMap { ContentLength.value(of: $0) } ?? 0) > 0
    {
        // A body sent from a stream or a file (an upload from disk): not in the request to show, but announced. The
        // command still sends one, or curl would announce a length and send nothing, and the server wait for it.
        lines.append("--data-binary @body.bin")
        let length = request.value(forHTTPHeaderField: "Content-Length").flatMap { ContentLength.value(of: $0) }
        note = "  # body.bin: the \(length.map { "\($0)-byte " } ?? "")body, sent from a file or a stream (not shown)"
    }
    if let url = request.url {
        lines.append(shellQuoted(secrets.hiding(in: Redaction.url(url, redacting: redactingSecrets))))
    }
    return lines.joined(separator: " \\\n    ") + note
}

/// `text` in single quotes for a POSIX shell; an embedded `'` becomes `'\''`.
func shellQuoted(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
}

/// `text` as one shell word: as is when it is a plain word (ASCII letters, digits, `-`, `_`, `.`), which no
/// shell reads specially, such as the usual methods; otherwise ``shellQuoted(_:)``.
func shellWord(_ text: String) -> String {
    let isPlain =
        !text.isEmpty
        && text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2D || byte == 0x5F || byte == 0x2E
        }
    return isPlain ? text : shellQuoted(text)
}
