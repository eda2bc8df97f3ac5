import Foundation

extension LocalServer {
    /// One HTTP request as the server received it.
    ///
    /// Raw forms (``target``, ``path``) keep their percent-encoding exactly as sent, so a test can check what a
    /// client put on the wire; the decoded forms (``decodedPathSegments``, ``queryItems``, ``pathParameters``)
    /// are what a handler usually wants.
    public struct Request: Sendable {
        /// The request method, as sent (`"GET"`, `"POST"`, …).
        public let method: String

        /// The request target exactly as received, for example `/items/a%2Fb?q=1`.
        public let target: String

        /// The path part of ``target``, still percent-encoded, without the query. Absolute-form targets
        /// (`http://host/p`) are reduced to their path.
        public let path: String

        /// The segments of ``path`` between slashes, each percent-decoded: `/items/a%2Fb` gives `["items", "a/b"]`,
        /// `/` gives `[]`.
        public let decodedPathSegments: [String]

        /// The query items, in order, names and values percent-decoded. `+` is kept as is, like `URLComponents`
        /// does; an item without `=` has an empty value.
        ///
        /// A `+` means a space only in form encoding (`application/x-www-form-urlencoded`, as an HTML form sends
        /// a query); `URLComponents` sends a literal `+` unencoded, so reading it as a space would be wrong for
        /// most clients. To read a form-encoded query, decode it from ``target`` yourself: replace `+` with a space
        /// in each name and value, then remove the percent-encoding.
        public let queryItems: [(name: String, value: String)]

        /// Every header field, in the order received, with names as sent.
        public let headers: [(name: String, value: String)]

        /// The body, after any chunked transfer coding was removed. Empty when there is none, and for a request
        /// to a streaming route (whose handler reads the body from a ``LocalServer/BodyReader``).
        public internal(set) var body: Data

        /// The length of the body in bytes, after any chunked transfer coding was removed.
        ///
        /// `body.count` for a request whose body was read whole. For a request to a streaming route, `nil` in the
        /// request its handler gets; in ``LocalServer/requests``, `nil` until the body has been read, then the
        /// number of bytes it had (or that arrived before the connection failed). A request sent with
        /// `Expect: 100-continue` whose handler read nothing records 0: the server never asked for its body.
        public internal(set) var bodyLength: Int?

        /// The values captured by the route's `:name` segments, percent-decoded. A trailing `*` captures the
        /// rest of the path (decoded, joined with `/`) under the key `"*"`.
        public internal(set) var pathParameters: [String: String]

        /// Identifies the connection the request came on: requests sharing a keep-alive connection share it.
        /// Numbers start at 1 and keep growing for the life of the server.
        public let connectionID: Int

        /// Creates a request; the server does this for you, tests of handlers may too.
        ///
        /// - Parameters:
        ///   - method: The request method.
        ///   - target: The raw request target, percent-encoding intact.
        ///   - headers: The header fields, in order.
        ///   - body: The body bytes.
        ///   - connectionID: The connection number to report.
        public init(
            method: String,
            target: String,
            headers: [(name: String, value: String)] = [],
            body: Data = Data(),
            connectionID: Int = 0
        ) {
            self.method = method
            self.target = target
            self.headers = headers
            self.body = body
            self.bodyLength = body.count
            self.connectionID = connectionID
            self.pathParameters = [:]

            var pathAndQuery = Substring(target)
            if target.first != "/", let schemeEnd = target.range(of: "://") {
                let authorityAndPath = target[schemeEnd.upperBound...]
                pathAndQuery =
                    authorityAndPath.firstIndex(where: { $0 == "/" || $0 == "?" })
                    .map { authorityAndPath[$0...] } ?? "/"
            }
            let queryStart = pathAndQuery.firstIndex(of: "?")
            let rawPath = queryStart.map { pathAndQuery[..<$0] } ?? pathAndQuery
            self.path = String(rawPath)
            self.decodedPathSegments = Request.segments(of: rawPath).map(Request.percentDecoded)
            let rawQuery = queryStart.map { pathAndQuery[pathAndQuery.index(after: $0)...] } ?? ""
            self.queryItems = rawQuery.split(separator: "&").map { item in
                let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                return (Request.percentDecoded(parts[0]), parts.count > 1 ? Request.percentDecoded(parts[1]) : "")
            }
        }

        /// The value of the first header field called `name`, compared case-insensitively.
        ///
        /// - Parameter name: The field name, in any case: `header("content-type")`.
        /// - Returns: The value, or `nil` if the request has no such field.
        public func header(_ name: String) -> String? {
            headers.first { $0.name.caseInsensitiveEquals(name) }?.value
        }

        /// The value of the first query item called `name`.
        ///
        /// Decoded as in ``queryItems``: a `+` stays a `+`.
        ///
        /// - Parameter name: The decoded item name, compared exactly.
        /// - Returns: The decoded value, or `nil` if there is no such item.
        public func queryItem(_ name: String) -> String? {
            queryItems.first { $0.name == name }?.value
        }

        /// The body decoded as UTF-8.
        public var bodyText: String {
            String(decoding: body, as: UTF8.self)
        }

        /// Splits a raw or pattern path into its segments: `/` gives `[]`, `/a/` gives `["a", ""]`.
        static func segments(of path: some StringProtocol) -> [Substring] {
            var path = Substring(path)
            if path.first == "/" { path = path.dropFirst() }
            if path.isEmpty { return [] }
            return path.split(separator: "/", omittingEmptySubsequences: false)
        }

        static func percentDecoded(_ text: some StringProtocol) -> String {
            let text = String(text)
            guard text.contains("%") else { return text }
            return text.removingPercentEncoding ?? text
        }
    }
}
