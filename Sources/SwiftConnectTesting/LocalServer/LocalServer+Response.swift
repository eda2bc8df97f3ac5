import Foundation
import SwiftConnect

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
        /// The status code, from 200 to 999: for any other, the server sends a 500 instead, whose body says why (a
        /// 1xx is an interim answer, after which a client waits for another). Send a 1xx with ``Fault/raw(_:)``.
        public var status: Int

        /// Header fields, in order. `Content-Length` and `Connection` are added when missing.
        ///
        /// A name that is not a valid field name, or a value containing CR, LF or NUL, would split the response:
        /// the server sends a 500 instead, whose body says which header is wrong, and writes that on standard
        /// error. So does a `Content-Length` other than the body's length, or a `Transfer-Encoding`, on a body sent
        /// with no fault (a `HEAD`'s answer, a 204 and a 304 have no body, and may declare the resource's length).
        /// To send a malformed response on purpose, use a ``Fault`` (``Fault/raw(_:)`` sends any bytes).
        public var headers: [(name: String, value: String)]

        /// The body. Never sent for `HEAD` requests nor for 1xx, 204 and 304 statuses.
        public var body: Data

        /// A body produced piece by piece while it is sent, instead of ``body``, which it replaces when set.
        public var streamedBody: StreamedBody?

        /// How long the server waits before writing anything, in seconds. Ended early by ``LocalServer/stop()``
        /// or by the client disconnecting.
        public var delay: TimeInterval

        /// How the response is sent, or deliberately not sent.
        public var fault: Fault

        /// Why the body as a convenience constructor built it cannot be sent as asked (an event
        /// ``serverSentEvents(_:interval:)`` cannot write), or `nil`: see ``mistake``.
        var bodyMistake: String?

        /// A body written piece by piece by a producer while the response is sent, so it is never held in memory.
        ///
        /// Build one with ``LocalServer/Response/stream(contentLength:contentType:status:producer:)`` or
        /// ``LocalServer/Response/generatedBytes(count:seed:contentType:status:)``. The producer runs on the
        /// connection's thread after the head was sent, and is not run at all when no body is sent (`HEAD`, 204…).
        ///
        /// With a known ``contentLength`` the body is sent with that `Content-Length`: bytes written beyond it are
        /// dropped, and a producer that writes fewer leaves the client with a short body and a closed connection.
        /// With `nil` the body is sent chunked, one chunk per non-empty write (an empty write sends nothing); to an
        /// HTTP/1.0 request, which cannot read chunked (RFC 9112 §6.1), it is sent as written, without
        /// `Transfer-Encoding`, and ended by closing the connection.
        public struct StreamedBody: Sendable {
            /// The number of bytes the producer writes, or `nil` if unknown (the body is then sent chunked, or to an
            /// HTTP/1.0 request ended by closing the connection).
            public var contentLength: Int?

            /// Writes the body by calling `write` with successive pieces, then returns. `write` sends a piece at
            /// once and returns whether all of it was sent: `false` when the client left, the server is stopping,
            /// or the piece went beyond ``contentLength``, and the producer should then return.
            public var producer: @Sendable (_ write: (Data) -> Bool) -> Void {
                // A producer set in its place knows no wait of the server's.
                didSet { pacedProducer = nil }
            }

            /// ``producer`` with a wait of its own, which the server runs instead when set: `wait(seconds)` returns
            /// `true` after that long, or `false` as soon as the client leaves or the server stops (the producer
            /// should then return), so that a body paced by waits does not hold ``LocalServer/stop()`` for the rest
            /// of a wait.
            var pacedProducer: (@Sendable (_ write: (Data) -> Bool, _ wait: (TimeInterval) -> Bool) -> Void)?

            /// Creates a streamed body.
            ///
            /// - Parameters:
            ///   - contentLength: The number of bytes `producer` writes, or `nil` to send the body chunked.
            ///   - producer: Writes the body, see ``producer``.
            public init(contentLength: Int?, producer: @escaping @Sendable (_ write: (Data) -> Bool) -> Void) {
                self.contentLength = contentLength
                self.producer = producer
            }

            /// Creates a streamed body whose producer waits between pieces, see ``pacedProducer``. Its ``producer``,
            /// called outside a connection, waits with nothing to end a wait early but its time.
            init(
                contentLength: Int?,
                pacedProducer: @escaping @Sendable (_ write: (Data) -> Bool, _ wait: (TimeInterval) -> Bool) -> Void
            ) {
                self.contentLength = contentLength
                self.producer = { write in
                    pacedProducer(write) { seconds in
                        Thread.sleep(forTimeInterval: seconds)
                        return true
                    }
                }
                self.pacedProducer = pacedProducer
            }
        }

        /// A way to send a response, mostly misbehaviours to exercise a client's error handling.
        ///
        /// With a ``StreamedBody``: ``chunked`` sends every write as a chunk; ``closeMidBody(afterBytes:)`` stops
        /// after that many bytes (declaring the length, or chunked if unknown); ``lieAboutLength(extra:)`` declares
        /// the length plus `extra` (and with an unknown length sends chunks without the final one) then hangs.
        public enum Fault: Sendable {
            /// A well-formed response with a `Content-Length`.
            case normal
            /// Closes the connection without writing a byte.
            case closeBeforeHeaders
            /// Sends the headers with the full `Content-Length`, then `afterBytes` bytes of the body, then closes. A
            /// cut that leaves a body of known length whole (`afterBytes` at or past its length), or below zero, is a
            /// mistake: the server answers 500 instead, saying why (on standard error too).
            case closeMidBody(afterBytes: Int)
            /// Declares a `Content-Length` `extra` bytes larger than the body sent, then keeps the connection
            /// open (without closing) until the client gives up or the server stops, which resets it. For a body of
            /// known length, an `extra` below 1 or a declared length beyond `Int.max` is a mistake: the server
            /// answers 500 instead, saying why (on standard error too).
            case lieAboutLength(extra: Int)
            /// Sends part of the status line and headers, then hangs until the client gives up or the server stops,
            /// which resets the connection (a clean close there would crash `URLSession` on Linux).
            case neverFinishHeaders
            /// Sends a chunked response whose chunks are `chunk`, one every `interval` seconds, for ever:
            /// until the client disconnects or the server stops, which resets the connection. The first chunk
            /// goes out at once; an empty `chunk` sends nothing. To an HTTP/1.0 request, each `chunk` goes as it
            /// is, without `Transfer-Encoding`. An `interval` that is NaN, zero or negative is a mistake: the server
            /// answers 500 instead, saying why (on standard error too).
            case trickle(chunk: Data, interval: TimeInterval)
            /// Sends the body with `Transfer-Encoding: chunked`, in a few chunks (to an HTTP/1.0 request, which
            /// cannot read chunked: without `Transfer-Encoding`, ended by closing the connection).
            case chunked
            /// Sends `bytes` as the whole response, status line and headers included, exactly as given (no header
            /// is added, whatever the method or status), then closes the connection: for answers a well-behaved
            /// server never gives, such as a 204 with a body or a reply that is not HTTP at all.
            case raw(Data)
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
            self.streamedBody = nil
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

    /// A JSON response that echoes `request`, as httpbin's `/anything` does and as many error messages do: its
    /// method, target, headers and body, and a `message` quoting all of them.
    ///
    /// For tests of what a client shows when a server repeats the request's secrets back: with an error `status`,
    /// the error handler takes `message` as the server's message.
    ///
    /// ```swift
    /// server.route("POST", "/login") { request in .echo(request, status: 401) }
    /// // {"body":"…","headers":{"Authorization":"Bearer …"},"message":"rejected POST /login with …","method":"POST",…}
    /// ```
    ///
    /// - Parameters:
    ///   - request: The request to echo.
    ///   - status: The status code; 200 by default.
    /// - Returns: A response with `Content-Type: application/json`.
    public static func echo(_ request: LocalServer.Request, status: Int = 200) -> Self {
        struct Echo: Encodable, Sendable {
            let method: String
            let target: String
            let headers: [String: String]
            let body: String
            let message: String
        }
        var headers: [String: String] = [:]
        for (name, value) in request.headers {
            headers[name] = headers[name].map { $0 + ", " + value } ?? value
        }
        let quoted = request.headers.map { "\($0.name): \($0.value)" }.joined(separator: "; ")
        let verb = (200..<300).contains(status) ? "received" : "rejected"
        let message = "\(verb) \(request.method) \(request.target) with \(quoted); body: \(request.bodyText)"
        let echo = Echo(
            method: request.method, target: request.target, headers: headers, body: request.bodyText,
            message: message)
        return .json(echo, status: status)
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

    /// A response whose body is written piece by piece by `producer` while it is sent, never held in memory.
    ///
    /// ```swift
    /// server.route("GET", "/numbers") { _ in
    ///     .stream(contentLength: nil, contentType: "text/plain") { write in
    ///         for n in 1...1_000 { guard write(Data("\(n)\n".utf8)) else { return } }
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - contentLength: The number of bytes `producer` writes, sent as `Content-Length`; `nil` sends the body
    ///     with `Transfer-Encoding: chunked` (to an HTTP/1.0 request: without it, ended by closing the connection).
    ///   - contentType: The `Content-Type`; `application/octet-stream` by default.
    ///   - status: The status code; 200 by default.
    ///   - producer: Writes the body by calling `write`, and returns when done or once `write` returns `false`.
    ///     It runs on the connection's thread, after the head was sent. See ``StreamedBody``.
    /// - Returns: The response.
    public static func stream(
        contentLength: Int?,
        contentType: String = "application/octet-stream",
        status: Int = 200,
        producer: @escaping @Sendable (_ write: (Data) -> Bool) -> Void
    ) -> Self {
        var response = Self(status: status, headers: [("Content-Type", contentType)])
        response.streamedBody = StreamedBody(contentLength: contentLength, producer: producer)
        return response
    }

    /// A `text/event-stream` of server-sent events, each written as a chunk of its own after waiting `interval`
    /// seconds: a language-model API streaming tokens, a live feed.
    ///
    /// ```swift
    /// server.route("GET", "/chat") { _ in
    ///     .serverSentEvents(["Hel", "lo"].map { ServerSentEvent(data: $0) }, interval: 0.05)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - events: The events, written as `event:` (unless `message`; an empty type arrives as `message`), `id:`
    ///     (unless `nil`: the event then arrives with the ID of the one before it, the last ID in effect), `retry:`
    ///     and one `data:` line per line of data, then a blank line. A line of data ends with LF, CR or CRLF, as
    ///     the client's parser reads them: the format cannot carry a CR, so the client reads each line end of the
    ///     data as an LF. A type or an ID with a CR or an LF (which would end its line, the rest becoming another
    ///     field or event), an ID with a NUL (which a client ignores) or a negative `retry` (not a number of
    ///     milliseconds a client reads) cannot be written: the server answers 500 instead, saying which event and
    ///     why (on standard error too).
    ///   - interval: The wait before each event, in seconds; ended early, with no more events sent, when the client
    ///     leaves or the server stops (``LocalServer/stop()`` does not wait it out).
    /// - Returns: The response, sent with `Transfer-Encoding: chunked` (to an HTTP/1.0 request: without it, ended
    ///   by closing the connection).
    public static func serverSentEvents(_ events: [ServerSentEvent], interval: TimeInterval = 0) -> Self {
        var response = Self(headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")])
        // The wait ends when the client leaves or the server stops: `stop()` does not wait out the interval.
        response.streamedBody = StreamedBody(contentLength: nil) { write, wait in
            for event in events {
                if interval > 0 { guard wait(interval) else { return } }
                guard write(Data(serialized(event).utf8)) else { return }
            }
        }
        for (index, event) in events.enumerated() {
            guard let why = unwritable(event) else { continue }
            response.bodyMistake = "event \(index) of serverSentEvents cannot be written: \(why)"
            break
        }
        return response
    }

    /// Why `event` cannot go on the wire as it is, or `nil`: the client would read something else.
    static func unwritable(_ event: ServerSentEvent) -> String? {
        let endsLine: (UInt8) -> Bool = { $0 == 0x0D || $0 == 0x0A }
        if event.event.utf8.contains(where: endsLine) {
            return "its type \(event.event.debugDescription) contains CR or LF, which would end the `event:` line"
        }
        if let id = event.id, id.utf8.contains(where: endsLine) {
            return "its id \(id.debugDescription) contains CR or LF, which would end the `id:` line"
        }
        if let id = event.id, id.utf8.contains(0) {
            return "its id \(id.debugDescription) contains NUL, for which a client ignores the `id:` field"
        }
        if let retry = event.retry, retry < 0 {
            return "its retry \(retry) is negative: a client ignores a `retry:` field that is not all digits"
        }
        return nil
    }

    /// An event as it goes on the wire.
    static func serialized(_ event: ServerSentEvent) -> String {
        var text = ""
        if event.event != "message" { text += "event: \(event.event)\n" }
        if let id = event.id { text += "id: \(id)\n" }
        if let retry = event.retry { text += "retry: \(retry)\n" }
        // CR, LF and CRLF each end a line of the stream, and nothing escapes a CR: a line of data is what lies
        // between any two of them, as the client's parser reads it.
        let lines = event.data.replacingOccurrences(of: "\r\n", with: "\n")
            .split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r" }
        for line in lines {
            text += "data: \(line)\n"
        }
        return text + "\n"
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
    ///   - name: The field name: a token such as `X-Request-ID`.
    ///   - value: The field value, without CR, LF or NUL (see ``headers``).
    /// - Returns: A copy with the field appended.
    public func withHeader(_ name: String, _ value: String) -> Self {
        var copy = self
        copy.headers.append((name, value))
        return copy
    }
}

// MARK: - Checking

extension LocalServer.Response {
    /// Why the server cannot send this response as the handler built it, or `nil` if it can.
    ///
    /// A line break in a header would split the response: the client would read injected fields, or a second
    /// response. A test gets a broken response from a deliberate ``Fault``, never from a mistake in a handler.
    /// The status must be a final one, from 200 to 999, a ``Fault/trickle(chunk:interval:)`` must have an
    /// interval more than zero, the length a ``Fault/lieAboutLength(extra:)`` declares must be one from 0 to
    /// `Int.max`, and the events of ``serverSentEvents(_:interval:)`` must be ones the format can carry.
    /// ``Fault/raw(_:)`` and ``Fault/closeBeforeHeaders`` send none of it, so anything goes.
    var mistake: String? {
        switch fault {
        case .raw, .closeBeforeHeaders: return nil  // Neither sends the status nor the headers.
        default: break
        }
        // An event a test meant the client to get, which it would read as something else.
        if let bodyMistake { return bodyMistake }
        // A final 1xx left the client waiting for the real answer; other codes are not HTTP at all.
        guard (200...999).contains(status) else {
            return "the status \(status) is not a final status code from 200 to 999 (a client takes a 1xx for an "
                + "interim answer and waits for another)"
        }
        // A NaN, zero or negative interval sent chunks in a tight loop, until the client gave up.
        if case .trickle(_, let interval) = fault, !(interval > 0) {
            return "the trickle interval \(interval) is not a positive number of seconds"
        }
        // A length past `Int.max` stopped the test process with an overflow; one below zero is no length at all. A
        // streamed body of unknown length declares none (it is sent chunked).
        if case .lieAboutLength(let extra) = fault {
            let length = streamedBody.map { $0.contentLength.map { max(0, $0) } } ?? body.count
            if let length {
                let (declared, overflows) = length.addingReportingOverflow(extra)
                if overflows || declared < 0 {
                    return "lieAboutLength(extra: \(extra)) on a body of \(length) bytes declares a length that is not "
                        + "from 0 to Int.max"
                }
                // No more than the body: the client got it whole (no stall), or the rest as the next response.
                if extra <= 0 {
                    return "lieAboutLength(extra: \(extra)) on a body of \(length) bytes declares no more than the "
                        + "body: extra must be 1 or more"
                }
            }
        }
        // A cut at or past the end of a body of known length sent it whole: the client saw no fault at all.
        if case .closeMidBody(let afterBytes) = fault {
            let length = streamedBody.map { $0.contentLength.map { max(0, $0) } } ?? body.count
            if afterBytes < 0 {
                return "closeMidBody(afterBytes: \(afterBytes)) cuts the body before its start"
            }
            if let length, afterBytes >= length {
                return "closeMidBody(afterBytes: \(afterBytes)) on a body of \(length) bytes cuts nothing: the client "
                    + "would get the whole body"
            }
        }
        for (name, value) in headers {
            if name.isEmpty || !name.utf8.allSatisfy(HTTPParser.isTokenCharacter) {
                return "the header name \(name.debugDescription) is not a valid field name"
            }
            if value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) {
                return "the value of the header \(name) contains CR, LF or NUL: \(value.debugDescription)"
            }
        }
        return nil
    }
}
