import Foundation

extension LocalServer {
    /// What a route answers: a status, headers and a body, optionally delayed or broken on purpose.
    ///
    /// The server adds `Content-Length` (unless the body is chunked or the header is already set) and a
    /// `Connection` header. Build one with a convenience constructor, then adjust it:
    ///
    /// ```swift
    /// server.route("GET", "/slow") { _ in .text("finally").delayed(by: 0.5) }
    /// server.route("GET", "/broken") { _ in .text("0123456789").withFault(.closeMidBody(afterBytes: 4)) }
    /// ```
    public struct Response: Sendable {
        /// The status code.
        public var status: Int

        /// Header fields, in order. `Content-Length` and `Connection` are added when missing.
        public var headers: [(name: String, value: String)]

        /// The body. Never sent for `HEAD` requests nor for 1xx, 204 and 304 statuses.
        public var body: Data

        /// How long the server waits before writing anything, in seconds. Ended early by ``LocalServer/stop()``
        /// or by the client disconnecting.
        public var delay: TimeInterval

        /// How the response is sent, or deliberately not sent.
        public var fault: Fault

        /// A way to send a response, mostly misbehaviours to exercise a client's error handling.
        public enum Fault: Sendable {
            /// A well-formed response with a `Content-Length`.
            case normal
            /// Closes the connection without writing a byte.
            case closeBeforeHeaders
            /// Sends the headers with the full `Content-Length`, then `afterBytes` bytes of the body, then closes.
            case closeMidBody(afterBytes: Int)
            /// Declares a `Content-Length` `extra` bytes larger than the body sent, then keeps the connection
            /// open (without closing) until the client gives up or the server stops, which resets it.
            case lieAboutLength(extra: Int)
            /// Sends part of the status line and headers, then hangs until the client gives up or the server stops,
            /// which resets the connection (a clean close there would crash `URLSession` on Linux).
            case neverFinishHeaders
            /// Sends a chunked response whose chunks are `chunk`, one every `interval` seconds, for ever:
            /// until the client disconnects or the server stops, which resets the connection. The first chunk
            /// goes out at once; an empty `chunk` sends nothing.
            case trickle(chunk: Data, interval: TimeInterval)
            /// Sends the body with `Transfer-Encoding: chunked`, in a few chunks.
            case chunked
        }

        /// Creates a response.
        ///
        /// - Parameters:
        ///   - status: The status code; 200 by default.
        ///   - headers: Header fields, in order.
        ///   - body: The body.
        ///   - delay: Seconds to wait before answering.
        ///   - fault: How to send it; ``Fault/normal`` by default.
        public init(
            status: Int = 200,
            headers: [(name: String, value: String)] = [],
            body: Data = Data(),
            delay: TimeInterval = 0,
            fault: Fault = .normal
        ) {
            self.status = status
            self.headers = headers
            self.body = body
            self.delay = delay
            self.fault = fault
        }

        /// The value of the first header field called `name`, compared case-insensitively.
        ///
        /// - Parameter name: The field name.
        /// - Returns: The value, or `nil` if there is no such field.
        public func header(_ name: String) -> String? {
            headers.first { $0.name.caseInsensitiveEquals(name) }?.value
        }
    }
}

// MARK: - Convenience constructors

extension LocalServer.Response {
    /// A JSON response encoding `value` with sorted keys and unescaped slashes.
    ///
    /// - Parameters:
    ///   - value: The value to encode. If encoding fails the response is a 500 with the error as text.
    ///   - status: The status code; 200 by default.
    /// - Returns: A response with `Content-Type: application/json`.
    public static func json(_ value: some Encodable & Sendable, status: Int = 200) -> Self {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return .data(try encoder.encode(value), contentType: "application/json", status: status)
        } catch {
            return .text("LocalServer could not encode the JSON response: \(error)", status: 500)
        }
    }

    /// A JSON response whose body is `string`, sent as is.
    ///
    /// - Parameters:
    ///   - string: The JSON text; not validated, so it can be deliberately malformed.
    ///   - status: The status code; 200 by default.
    /// - Returns: A response with `Content-Type: application/json`.
    public static func json(string: String, status: Int = 200) -> Self {
        .data(Data(string.utf8), contentType: "application/json", status: status)
    }

    /// A text response.
    ///
    /// - Parameters:
    ///   - text: The body, encoded as UTF-8.
    ///   - status: The status code; 200 by default.
    ///   - contentType: The `Content-Type`; `text/plain; charset=utf-8` by default.
    /// - Returns: The response.
    public static func text(_ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8")
        -> Self
    {
        .data(Data(text.utf8), contentType: contentType, status: status)
    }

    /// A response with an empty body.
    ///
    /// - Parameter status: The status code.
    /// - Returns: The response.
    public static func status(_ status: Int) -> Self {
        Self(status: status)
    }

    /// A redirect with a `Location` header.
    ///
    /// - Parameters:
    ///   - location: The `Location` value: absolute, or relative to the request.
    ///   - status: The status code; 302 by default.
    /// - Returns: The response.
    public static func redirect(to location: String, status: Int = 302) -> Self {
        Self(status: status, headers: [("Location", location)])
    }

    /// A response carrying `data`.
    ///
    /// - Parameters:
    ///   - data: The body.
    ///   - contentType: The `Content-Type`; `application/octet-stream` by default.
    ///   - status: The status code; 200 by default.
    /// - Returns: The response.
    public static func data(_ data: Data, contentType: String = "application/octet-stream", status: Int = 200) -> Self {
        Self(status: status, headers: [("Content-Type", contentType)], body: data)
    }
}

// MARK: - Modifiers

extension LocalServer.Response {
    /// This response, sent after waiting `seconds`.
    ///
    /// - Parameter seconds: The delay before anything is written.
    /// - Returns: A copy with ``delay`` set.
    public func delayed(by seconds: TimeInterval) -> Self {
        var copy = self
        copy.delay = seconds
        return copy
    }

    /// This response, sent with `fault`.
    ///
    /// - Parameter fault: How to send, or break, the response.
    /// - Returns: A copy with ``fault`` set.
    public func withFault(_ fault: Fault) -> Self {
        var copy = self
        copy.fault = fault
        return copy
    }

    /// This response with one more header field.
    ///
    /// - Parameters:
    ///   - name: The field name.
    ///   - value: The field value.
    /// - Returns: A copy with the field appended.
    public func withHeader(_ name: String, _ value: String) -> Self {
        var copy = self
        copy.headers.append((name, value))
        return copy
    }
}
