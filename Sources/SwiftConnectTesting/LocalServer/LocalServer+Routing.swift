/// One registered route: a method, a path pattern and its handler.
///
/// Patterns are split into segments once, at registration. A segment is a literal (compared with the decoded
/// request segment), a `:name` capture, or, in last position only, `*` (any rest of the path, possibly nothing)
/// or `text*` (a rest of the path starting with `text`). What `*` stands for is captured under the key `"*"`.
struct Route: Sendable {
    private enum Segment: Sendable {
        case literal(String)
        case capture(String)
    }

    private enum Tail: Sendable {
        /// The path must have exactly as many segments as the pattern.
        case exact
        /// Any further segments, or none, are accepted; the last segment must start with the string.
        case prefix(String)
    }

    /// What the route runs, and how it wants the request body.
    enum Handler: Sendable {
        /// Gets the request with its whole body read.
        case buffered(@Sendable (LocalServer.Request) -> LocalServer.Response)
        /// Gets the request's head and reads the body itself.
        case streaming(@Sendable (LocalServer.Request, LocalServer.BodyReader) -> LocalServer.Response)
    }

    let method: String
    private let segments: [Segment]
    private let tail: Tail
    let handler: Handler

    init(method: String, pattern: String, handler: Handler) {
        self.method = method
        self.handler = handler
        var parts = LocalServer.Request.segments(of: pattern)
        if let last = parts.last, last.hasSuffix("*") {
            parts.removeLast()
            tail = .prefix(String(last.dropLast()))
        } else {
            tail = .exact
        }
        segments = parts.map { $0.hasPrefix(":") ? .capture(String($0.dropFirst())) : .literal(String($0)) }
    }

    /// Whether the route accepts `method` and `path`; if so, the captured path parameters.
    ///
    /// - Parameters:
    ///   - method: The request method, compared exactly unless the route's method is `"*"`.
    ///   - path: The decoded path segments.
    func match(method: String, path: [String]) -> [String: String]? {
        guard self.method == "*" || self.method == method else { return nil }
        switch tail {
        case .exact: guard path.count == segments.count else { return nil }
        case .prefix:
            guard path.count > segments.count || (path.count == segments.count && isEmptyPrefix) else {
                return nil
            }
        }
        var parameters: [String: String] = [:]
        for (segment, value) in zip(segments, path) {
            switch segment {
            case .literal(let literal): guard literal == value else { return nil }
            case .capture(let name):
                // An empty segment is no value (`/users/` for `/users/:id`, a client's empty ID), as Express, Vapor
                // and Go's ServeMux read it: the request is not this route's.
                guard !value.isEmpty else { return nil }
                parameters[name] = value
            }
        }
        if case .prefix(let prefix) = tail {
            let rest = path[segments.count...]
            guard rest.first.map({ $0.hasPrefix(prefix) }) ?? true else { return nil }
            parameters["*"] = String(rest.joined(separator: "/").dropFirst(prefix.count))
        }
        return parameters
    }

    private var isEmptyPrefix: Bool {
        if case .prefix("") = tail { return true }
        return false
    }
}
