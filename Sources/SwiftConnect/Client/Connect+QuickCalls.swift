import Foundation

// MARK: - Quick calls

extension Connect {
    /// Calls an endpoint of the client's server without writing a connector type.
    ///
    /// ```swift
    /// let api = Connect(host: "api.example.com")
    /// api.request("/todos", method: .post, parameters: Parameter.jsonObject(value: newTodo))
    ///     .decoded(toType: Todo.self)
    /// ```
    ///
    /// - Parameters:
    ///   - path: The endpoint, with `{placeholders}` for `.path` parameters; relative to the client's
    ///     ``ServerConfiguration`` (without one, the call fails with ``ConnectError/Kind/invalidRequest``).
    ///   - method: The method; GET by default.
    ///   - parameters: Path values, query items and body.
    ///   - headers: Headers.
    ///   - debugResponse: Logs the request and response.
    /// - Returns: A future of the response body, which knows its response (see ``Future/decoded(toType:decoder:)``).
    public func request(
        _ path: String,
        method: HTTPMethod = .get,
        parameters: (any ParametersRepresentable)? = nil,
        headers: [HTTPHeader] = [],
        debugResponse: Bool = false
    ) -> Future<Data> {
        guard configuration != nil else {
            let shown = Redaction.urlText(path)
            var error = ConnectError.invalidRequest(.invalidURL(shown))
            error.message = "'\(shown)' is relative and this client has no ServerConfiguration (use Connect(host:))"
            return body(of: Future(error: error))
        }
        return request(
            Route(path, method: method, parameters: parameters, headers: headers), debugResponse: debugResponse)
    }
}
