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
            // The path as the client's setting shows it: the error is made here, where the setting is known.
            let shown = redactsSecrets ? Redaction.urlText(path) : path
            var error = ConnectError.invalidRequest(.invalidURL(shown))
            error.message = "'\(shown)' is relative and this client has no ServerConfiguration (use Connect(host:))"
            return body(of: Future(error: redactsSecrets ? error : ConnectError.showingSecrets(error)))
        }
        return request(
            Route(path, method: method, parameters: parameters, headers: headers), debugResponse: debugResponse)
    }

    /// Calls an endpoint of the client's server with parameters written by key, as `[String: Any]` was in Remotli,
    /// Konex and JustAPIs: query items for GET, HEAD and DELETE (Konex sent a DELETE's in the body), the body
    /// otherwise (see ``JSONObject``).
    ///
    /// ```swift
    /// api.request("/login", method: .post, parameters: ["username": name, "password": password])
    ///     .decoded(toType: Session.self)
    /// api.request("/todos", parameters: ["page": 2], headers: ["Accept-Language": "fr"])
    ///     .decoded(toType: JSONValue.self)
    /// ```
    ///
    /// - Parameters:
    ///   - path: The endpoint; relative to the client's ``ServerConfiguration``.
    ///   - method: The method; GET by default.
    ///   - parameters: The values by key.
    ///   - headers: Headers by name.
    ///   - debugResponse: Logs the request and response.
    /// - Returns: A future of the response body, which knows its response (see ``Future/decoded(toType:decoder:)``).
    public func request(
        _ path: String,
        method: HTTPMethod = .get,
        parameters: JSONObject,
        headers: [String: String] = [:],
        debugResponse: Bool = false
    ) -> Future<Data> {
        request(
            path, method: method, parameters: parameters as JSONObject?, headers: HTTPHeader.list(headers),
            debugResponse: debugResponse)
    }

    /// Calls an endpoint of the client's server with headers by name, as the libraries that took
    /// `[String: String]` did.
    ///
    /// ```swift
    /// api.request("/me", headers: ["Accept": "application/json"]).decoded(toType: User.self)
    /// ```
    ///
    /// - Parameters:
    ///   - path: The endpoint, with `{placeholders}` for `.path` parameters; relative to the client's
    ///     ``ServerConfiguration``.
    ///   - method: The method; GET by default.
    ///   - parameters: Path values, query items and body.
    ///   - headers: Headers by name.
    ///   - debugResponse: Logs the request and response.
    /// - Returns: A future of the response body, which knows its response (see ``Future/decoded(toType:decoder:)``).
    public func request(
        _ path: String,
        method: HTTPMethod = .get,
        parameters: (any ParametersRepresentable)? = nil,
        headers: [String: String],
        debugResponse: Bool = false
    ) -> Future<Data> {
        request(
            path, method: method, parameters: parameters, headers: HTTPHeader.list(headers),
            debugResponse: debugResponse)
    }
}
