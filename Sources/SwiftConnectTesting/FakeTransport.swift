import Dispatch
import Foundation
import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A ``SwiftConnect/Transport`` that answers from canned responses and records every request, for unit
/// tests without a network.
///
/// ```swift
/// let transport = FakeTransport()
/// transport.stub(.get, "/todos/1", with: .json(Todo(id: 1, title: "Test")))
/// transport.stub(.get, "/todos/2", with: .status(404))
/// transport.stub(.get, "/flaky", with: [.failure(URLError(.networkConnectionLost)), .json(["ok": true])])
///
/// let connect = Connect(transport: transport)
/// let todo = try connect.request(TodoConnector.get(id: 1)).decoded(toType: Todo.self).wait()
/// XCTAssertEqual(transport.requests.count, 1)
/// ```
///
/// Routes match by method, path and (optionally) query items; the most recent matching stub wins. A
/// route given several responses serves them in order and then repeats the last. Unmatched requests get
/// the fallback (404 by default).
///
/// It stands where the network would, not where an engine would: a stubbed 3xx is the answer (real transports
/// follow it under the redirect rules), and it enforces no timeout (the client's deadline still ends a call). Like
/// every engine, it hands over the answer to a `HEAD`, and a `1xx`, `204` or `304`, without a body, whatever the stub
/// holds: a stub that answers every method shows a `HEAD` what the app will see.
///
/// For code that sends from another thread or task, ``requestsReceived(count:)`` is a future of the requests
/// once they have arrived, so a test waits for them without sleeping; an answer that takes time
/// (``FakeResponse/never``, ``FakeResponse/released(by:)``) is kept pending like a real network task, and
/// ``cancelledRequests`` lists those the client cancelled.
///
/// `Connect` retries by default (``SwiftConnect/RetryPolicy/default``): a request safe to replay (an idempotent
/// method such as `GET`, an `Idempotency-Key`, or `isRetrySafe`) that gets a stubbed 408, 429, 500, 502, 503 or
/// 504 (``SwiftConnect/RetryPolicy/retryableStatusCodes``) or a transient `URLError` is sent up to three times, with real waits between attempts (about a second in all), and
/// ``requests`` lists every attempt. Make the client with `retryPolicy: nil` to get the first answer at once, or
/// with an ``ImmediateRetryClock`` to test the retries without waiting.
public final class FakeTransport: Transport, Sendable {
    private struct Route {
        let method: HTTPMethod?
        let target: StubTarget
        var responses: [FakeResponse]
        var served = 0

        func matches(_ request: URLRequest) -> Bool {
            guard let url = request.url else { return false }
            if let method, request.httpMethod != method.rawValue { return false }
            return target.matches(url)
        }
    }

    /// What a stub (or ``requests(to:)``) names: a path, as ``stubPath(_:)`` normalises it, and the query items a
    /// request must have, `nil` for any query.
    struct StubTarget {
        let path: String
        let query: [(name: String, value: String)]?

        /// The target of a stub for `path` with `query`. A query written in the path (`/search?q=swift`, as in a
        /// URL) is required as `query`'s items are, beside them, and a fragment (`#top`, never sent) is left out:
        /// escaped into the path, they made a path no request has, so that the stub silently matched nothing.
        init(_ path: String, query: [String: String]?) {
            var path = Substring(path)
            if let fragment = path.firstIndex(of: "#") { path = path[..<fragment] }
            var items: [(name: String, value: String)]?
            if let mark = path.firstIndex(of: "?") {
                items = FakeTransport.queryItems(ofQuery: path[path.index(after: mark)...])
                path = path[..<mark]
            }
            if let query {
                items = (items ?? []) + query.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
            }
            self.path = FakeTransport.stubPath(String(path))
            self.query = items
        }

        /// Whether a request to `url` is one to this target.
        func matches(_ url: URL) -> Bool {
            guard FakeTransport.path(of: url) == path else { return false }
            guard let query else { return true }
            let items = FakeTransport.queryItems(of: url)
            // Compared byte for byte, as a server compares them (and as paths are): `caf\u{E9}` and `cafe\u{301}`,
            // one string to Swift's `==`, are two values on the wire.
            return query.allSatisfy { required in
                items.contains {
                    $0.name.utf8.elementsEqual(required.name.utf8) && $0.value.utf8.elementsEqual(required.value.utf8)
                }
            }
        }
    }

    private struct State {
        var routes: [Route] = []
        var requests: [URLRequest] = []
        var cancelledRequests: [URLRequest] = []
        /// The futures of answers not given yet, kept as a real transport keeps its tasks: the pipeline holds the
        /// transport's future weakly, so without this a `.never` answer was freed and cancelling never reached it.
        var pending: [ObjectIdentifier: Future<ConnectResponse>] = [:]
        /// ``requestsReceived(count:)`` futures not complete yet.
        var waiters: [(count: Int, promise: Promise<[URLRequest]>)] = []
        var fallback: FakeResponse
    }

    private let state: Protected<State>

    /// Creates a transport with no stubs.
    ///
    /// - Parameter fallback: The response to unmatched requests. Defaults to a 404 with a JSON message.
    public init(fallback: FakeResponse = .json(string: #"{"error":"no stub for this request"}"#, status: 404)) {
        state = Protected(State(fallback: fallback))
    }

    /// A transport answering every request with `response`.
    ///
    /// - Parameter response: The response.
    /// - Returns: The transport.
    public static func answering(_ response: FakeResponse) -> FakeTransport {
        FakeTransport(fallback: response)
    }

    /// Answers requests to `path` with `response`.
    ///
    /// - Parameters:
    ///   - method: The method to match; `nil` matches any.
    ///   - path: The URL path to match exactly, such as `/todos/1`, as it is sent: percent-encoded, and with its
    ///     trailing slash, if any (`/notes/` and `/notes` are different paths). A query written after it
    ///     (`/search?q=swift`) is required as `query`'s items are, and a fragment (`#top`) is ignored. `/files/a%2Fb`
    ///     (one segment) and `/files/a/b` (two) are different paths, and so are `x;y` and `x%3By`; hex digits match in
    ///     either case, and an escaped unreserved character (`%7E`) matches the character (RFC 3986 §6.2.2). Text a URL
    ///     cannot hold as it is (a space, `é`) stands for its UTF-8 escapes (`%20`, `%C3%A9`). `""` and `/` both match
    ///     the root, and a path written without its first `/` (`todos/1`) is the same as with it. The path is the
    ///     whole URL's: a server configuration's base path included (`/v1/todos/1` for a base URL of
    ///     `https://api.example.com/v1`).
    ///   - query: Query items the request must have, by name and value as a server reads them (a `+` in the query is
    ///     a space, `%2B` a plus, and an item without `=`, `?done`, has the value `""`), in any order, compared byte
    ///     for byte (`caf\u{E9}` is not `cafe\u{301}`); `nil` ignores the query.
    ///   - response: The response.
    public func stub(_ method: HTTPMethod?, _ path: String, query: [String: String]? = nil, with response: FakeResponse)
    {
        stub(method, path, query: query, with: [response])
    }

    /// Answers requests of any method to `path` with `response`.
    ///
    /// - Parameters:
    ///   - path: The URL path to match.
    ///   - query: Query items the request must have; `nil` ignores the query.
    ///   - response: The response.
    public func stub(_ path: String, query: [String: String]? = nil, with response: FakeResponse) {
        stub(nil, path, query: query, with: [response])
    }

    /// Answers successive requests of any method to `path` with `responses` in order, then repeats the last.
    ///
    /// - Parameters:
    ///   - path: The URL path to match.
    ///   - query: Query items the request must have; `nil` ignores the query.
    ///   - responses: The responses, in order.
    public func stub(_ path: String, query: [String: String]? = nil, with responses: [FakeResponse]) {
        stub(nil, path, query: query, with: responses)
    }

    /// Answers successive requests to `path` with `responses` in order, then repeats the last one.
    ///
    /// - Parameters:
    ///   - method: The method to match; `nil` matches any.
    ///   - path: The URL path to match.
    ///   - query: Query items the request must have; `nil` ignores the query.
    ///   - responses: The responses, in order. Empty is a mistake in the test: the route's requests then fail with
    ///     a ``SwiftConnect/ConnectError`` saying the stub has no responses.
    public func stub(
        _ method: HTTPMethod?, _ path: String, query: [String: String]? = nil, with responses: [FakeResponse]
    ) {
        var responses = responses
        if responses.isEmpty {
            // Not ignored: requests would silently get an earlier stub's answer or the fallback.
            let route = "\(method?.rawValue ?? "any method") \(path)"
            let message = "FakeTransport: the stub for \(route) has no responses"
            responses = [.failure(ConnectError(.transport, message: message))]
        }
        let target = StubTarget(path, query: query)
        state.withLock { $0.routes.append(Route(method: method, target: target, responses: responses)) }
    }

    /// Every request sent so far, in order.
    public var requests: [URLRequest] { state.withLock { $0.requests } }

    /// The requests sent to `path` so far, in order.
    ///
    /// - Parameter path: The URL path, compared as a stub's path is: as sent (percent-encoded), trailing slash
    ///   included, and a query written after `?` required as a stub requires it.
    /// - Returns: The matching requests.
    public func requests(to path: String) -> [URLRequest] {
        let target = StubTarget(path, query: nil)
        return requests.filter { $0.url.map(target.matches) ?? false }
    }

    /// The path of `url` as a stub matches it: percent-encoded as sent (a decoded path made `a%2Fb` and `a/b` one
    /// path, so a test passed although the app sent the other URL), normalised as ``normalizedPath(_:)`` says; with
    /// its trailing slash (which `URL.path` drops, so a stub for `/notes/` never matched), and `/` for no path.
    static func path(of url: URL) -> String {
        // The whole URL's (one made `relativeTo:` a base gives only its relative part otherwise), as it is sent.
        let encoded = URLComponents(url: url.absoluteURL, resolvingAgainstBaseURL: false)?.percentEncodedPath
        return rootedPath(normalizedPath(encoded ?? url.path))
    }

    /// A stub's path as ``path(of:)`` gives a request's.
    static func stubPath(_ path: String) -> String {
        rootedPath(normalizedPath(path))
    }

    /// `path` in the one form two equivalent paths share (RFC 3986 §6.2.2): escapes with upper-case hex digits, an
    /// escaped unreserved character (`%7E`, `%41`) as the character, and every byte a path cannot hold as it is (a
    /// space, non-ASCII text as its UTF-8 bytes, a `%` that starts no escape) escaped. A reserved character and its
    /// escape (`/` and `%2F`, `;` and `%3B`) stay different: servers read them differently.
    static func normalizedPath(_ path: String) -> String {
        let bytes = Array(path.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = PercentEncoding.hexValue(bytes[index + 1]),
                let low = PercentEncoding.hexValue(bytes[index + 2])
            {
                let value = high << 4 | low
                if PercentEncoding.unreserved.contains(value) {
                    out.append(value)
                } else {
                    PercentEncoding.appendEscape(value, to: &out)
                }
                index += 3
                continue
            }
            if pathCharacters.contains(byte) { out.append(byte) } else { PercentEncoding.appendEscape(byte, to: &out) }
            index += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The query items of `url` as a server reads them (`application/x-www-form-urlencoded`): split at `&`, then at
    /// the first `=`, a `+` read as a space, escapes decoded. An item without `=` (`?done`, a `URLQueryItem` with a
    /// `nil` value) has the empty value, as servers read it (and ``LocalServer``): it had none, so that no stub could
    /// match it.
    static func queryItems(of url: URL) -> [(name: String, value: String)] {
        guard let query = URLComponents(url: url.absoluteURL, resolvingAgainstBaseURL: false)?.percentEncodedQuery
        else {
            return []
        }
        return queryItems(ofQuery: Substring(query))
    }

    /// The items of a percent-encoded `query`, read as ``queryItems(of:)`` reads a URL's.
    static func queryItems(ofQuery query: Substring) -> [(name: String, value: String)] {
        func decoded(_ text: Substring) -> String {
            let spaced = text.replacingOccurrences(of: "+", with: " ")
            return spaced.removingPercentEncoding ?? spaced
        }
        return query.split(separator: "&").map { item in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (decoded(parts[0]), parts.count > 1 ? decoded(parts[1]) : "")
        }
    }

    /// The bytes a path holds as they are (RFC 3986 `pchar` and `/`): unreserved, sub-delims, `:` and `@`.
    private static let pathCharacters = ASCIIByteSet(ASCIIByteSet.alphanumerics + "-._~!$&'()*+,;=:@/")

    /// `path` from the root: `/` for the empty path (both name the root), and a `/` before one written without it
    /// (`todos/1`, as an endpoint may be written), which never matched a request.
    static func rootedPath(_ path: String) -> String {
        path.hasPrefix("/") ? path : "/" + path
    }

    /// The requests whose answer was still pending when the client cancelled them (`future.cancel()`, a
    /// cancelled `Task` awaiting the value, `cancelAllRequests()`…), in the order cancelled.
    ///
    /// Only answers that take time can be cancelled: ``FakeResponse/never``, and answers made with
    /// ``FakeResponse/released(by:)`` or ``FakeResponse/delayed(by:)`` before they are given.
    ///
    /// ```swift
    /// transport.stub(.get, "/todos", with: .never)
    /// let task = Task { try await connect.send(ListTodos()).value }
    /// _ = try await transport.requestsReceived(count: 1).value(timeout: 5)
    /// task.cancel()
    /// _ = await task.result
    /// XCTAssertEqual(transport.cancelledRequests.count, 1)
    /// ```
    public var cancelledRequests: [URLRequest] { state.withLock { $0.cancelledRequests } }

    /// A future of the first `count` recorded requests, complete once that many have been sent (at once if they
    /// have been already): lets a test wait, without sleeping, for code that sends from another thread or task.
    ///
    /// ```swift
    /// let loading = Task { await viewModel.load() }
    /// let sent = try await transport.requestsReceived(count: 1).value(timeout: 5)
    /// XCTAssertTrue(viewModel.isLoading)
    /// ```
    ///
    /// It completes as the transport receives the last of them, which can be before the client's `request` or
    /// `send` call has returned on the sending thread: the client may not count that request yet in
    /// ``SwiftConnect/Connect/requestsInFlight``. ``SwiftConnect/Connect/cancelAllRequests()`` reaches it all the
    /// same: a request started before that call is cancelled as soon as the client has its future.
    ///
    /// - Parameter count: How many requests to wait for; 0 or less completes at once with none.
    /// - Returns: A future of the first `count` entries of ``requests``. It stays pending until they arrive: await
    ///   it with a timeout (`value(timeout:)`, `wait(timeout:)`).
    public func requestsReceived(count: Int) -> Future<[URLRequest]> {
        let promise = Promise<[URLRequest]>()
        let received: [URLRequest]? = state.withLock { state in
            guard state.requests.count < count else { return Array(state.requests.prefix(max(0, count))) }
            state.waiters.append((count, promise))
            return nil
        }
        if let received { promise.succeed(received) }
        return promise.future
    }

    /// Forgets the recorded requests and cancellations (the stubs stay).
    public func removeRecordedRequests() {
        state.withLock { state in
            state.requests.removeAll()
            state.cancelledRequests.removeAll()
        }
    }

    /// Records the request and answers with the matching stub, or the fallback.
    ///
    /// A one-shot body (`httpBodyStream`, a ``SwiftConnect/ConnectRequest/OneShotStream``) is read whole first, as a
    /// server receives it: the request is recorded, matched and handed to a stub's handler with its bytes as
    /// `httpBody`. A body that fails, or has another length than it announced (its own, or a `Content-Length`), fails
    /// the call with the core's error (``SwiftConnect/ConnectError/Kind/invalidRequest``, the stream's error as its
    /// underlying error), as on an engine, and the request is not recorded; nor is one cancelled while its body is
    /// read (the reading stops), which ``cancelledRequests`` does not list either: it never arrived.
    public func send(_ request: URLRequest) -> Future<ConnectResponse> {
        if request.httpBody == nil, request.httpBodyStream != nil { return sendReadingBody(of: request) }
        var satisfied: [(promise: Promise<[URLRequest]>, requests: [URLRequest])] = []
        let response: FakeResponse = state.withLock { state in
            state.requests.append(request)
            if !state.waiters.isEmpty {
                let count = state.requests.count
                for waiter in state.waiters where waiter.count <= count {
                    satisfied.append((waiter.promise, Array(state.requests.prefix(waiter.count))))
                }
                state.waiters.removeAll { $0.count <= count }
            }
            guard let index = state.routes.lastIndex(where: { $0.matches(request) }) else { return state.fallback }
            let route = state.routes[index]
            state.routes[index].served += 1
            return route.responses[min(route.served, route.responses.count - 1)]
        }
        for (promise, requests) in satisfied { promise.succeed(requests) }
        let answer = response.answer(request)
        // Given already (the usual stub): nothing to cancel, and nothing more to do on this path.
        if let result = answer.result { return Future(result: Self.asReceived(result, for: request)) }
        return recordingCancellation(of: answer, for: request)
    }

    /// `result`, the answer a stub gives `request`, as an engine hands it over: without a body where none goes (the
    /// answer to a `HEAD`, a `1xx`, `204` or `304`, RFC 9110 §6.4.1), whatever the stub holds. A test whose stub
    /// answers every method with a body then sees a `HEAD`'s answer as the app will, empty.
    static func asReceived(_ result: Result<ConnectResponse, any Error>, for request: URLRequest)
        -> Result<ConnectResponse, any Error>
    {
        guard case .success(var response) = result else { return result }
        let status = response.statusCode
        guard request.httpMethod?.uppercased() == "HEAD" || status < 200 || status == 204 || status == 304 else {
            return result
        }
        response.data = Data()
        if let stream = response.bodyStream {
            stream.cancel()
            let empty = ResponseBodyStream()
            empty.finish()
            response.bodyStream = empty
        }
        return .success(response)
    }

    /// Reads the one-shot body of `request` whole, through the core's length check (`RequestBodyChunks.counted`, as an
    /// engine's exchange reads it), then sends the request with the bytes as its body. The fake read no such body: a
    /// stub's handler and ``requests`` saw none, so a test could not check what its app uploads.
    private func sendReadingBody(of request: URLRequest) -> Future<ConnectResponse> {
        let stream: ConnectRequest.OneShotStream
        let length: Int64?
        do {
            let model = try ConnectRequest(request)
            guard case .stream(let body) = model.body else { return send(request) }
            stream = body
            // A stream of unknown length is held to the `Content-Length` its caller set, as an engine's exchange
            // holds it.
            length = model.announcedLength(of: body)
        } catch {
            return Future(error: error)
        }
        return stream.readingWhole(announcing: length) { bytes in
            var whole = request
            whole.httpBodyStream = nil
            whole.httpBody = bytes
            return self.send(whole)
        }
    }

    /// A future with `answer`'s result, kept until it completes, whose cancellation is recorded in
    /// ``cancelledRequests`` and cancels `answer`.
    private func recordingCancellation(
        of answer: Future<ConnectResponse>,
        for request: URLRequest
    ) -> Future<ConnectResponse> {
        let promise = Promise<ConnectResponse>()
        let id = ObjectIdentifier(promise.future)
        // Weak: whoever is to give the answer keeps it, and the transport keeps the future; neither may keep the
        // other alive once the transport is gone.
        promise.setCancelHandler { [weak state, weak answer] in
            state?.withLock { $0.cancelledRequests.append(request) }
            answer?.cancel()
        }
        state.withLock { $0.pending[id] = promise.future }
        promise.future.observe { [weak state] _ in
            state?.withLock { $0.pending[id] = nil }
        }
        answer.observe { promise.completeIfPending(with: Self.asReceived($0, for: request)) }
        return promise.future
    }
}

/// A canned answer of a ``FakeTransport``.
public struct FakeResponse: Sendable {
    let answer: @Sendable (URLRequest) -> Future<ConnectResponse>

    /// An answer computed by `body` from the request.
    ///
    /// ```swift
    /// .handler { request in .success(ConnectResponse(request: request, statusCode: 200, data: request.httpBody ?? Data())!) }
    /// ```
    ///
    /// - Parameter body: Returns the response or the transport error.
    /// - Returns: The answer.
    public static func handler(_ body: @escaping @Sendable (URLRequest) -> Result<ConnectResponse, any Error>)
        -> FakeResponse
    {
        FakeResponse { request in Future(result: body(request)) }
    }

    /// A response with a status, headers and body.
    ///
    /// - Parameters:
    ///   - data: The body.
    ///   - status: The status code. Defaults to 200. One not of three digits (0, 42, 1000) fails the request as an
    ///     engine fails on such a status line: a ``SwiftConnect/ConnectError/Kind/badResponse``.
    ///   - headers: The headers. A name that is not an RFC 9110 token, or a value with a control character other than
    ///     the tab (CR, LF, NUL), fails the request as an engine fails on such a field: a
    ///     ``SwiftConnect/ConnectError/Kind/badResponse`` naming it.
    /// - Returns: The answer.
    public static func data(_ data: Data, status: Int = 200, headers: [String: String] = [:]) -> FakeResponse {
        .handler { request in
            if let problem = headerProblem(in: headers, request: request) { return .failure(problem) }
            guard let response = ConnectResponse(request: request, statusCode: status, headers: headers, data: data)
            else {
                return .failure(ConnectError.notAnHTTPStatus(status, request: request))
            }
            return .success(response)
        }
    }

    /// The failure of an answer with a header field no server can send: a name that is not an RFC 9110 token, or a
    /// value with a control character other than the tab (CR or LF would split the field's line, NUL cut it). An
    /// engine fails on such a line as on a malformed answer (``SwiftConnect/ConnectError/Kind/badResponse``); the fake
    /// fails the same way, naming the field, where it would otherwise hand it over as one field (a `Set-Cookie`
    /// smuggled in a value's `\r\n` included). `nil` when every field is valid.
    static func headerProblem(in headers: [String: String], request: URLRequest) -> ConnectError? {
        // Sorted: a dictionary's order changes from run to run, and the error names the first.
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            let field = HeaderField(name: HeaderField.Name(name), value: value)
            guard !field.isValid else { continue }
            let what =
                field.name.isValid
                ? "a value with a control character (such as CR, LF or NUL)" : "a name that is not an RFC 9110 token"
            return ConnectError(
                .badResponse,
                message: "the server's header \(field.name.description.debugDescription) has \(what), which no "
                    + "HTTP answer can carry (a FakeResponse's header fails as an engine fails on such a field)",
                request: request, underlyingError: URLError(.badServerResponse))
        }
        return nil
    }

    /// A streamed answer: the head at once, then the body as `producer` writes it to the stream, for code that
    /// reads with ``SwiftConnect/Connect/stream(_:options:streaming:)``.
    ///
    /// ```swift
    /// transport.stub(.get, "/events", with: .stream(headers: ["Content-Type": "text/event-stream"]) { body in
    ///     for token in ["Hel", "lo"] {
    ///         guard await body.send(Data("data: \(token)\n\n".utf8)) else { return }
    ///     }
    ///     body.finish()
    /// })
    /// ```
    ///
    /// - Parameters:
    ///   - status: The status code. Defaults to 200. One not of three digits fails as in ``data(_:status:headers:)``.
    ///   - headers: The headers; one no server can send fails as in ``data(_:status:headers:)``.
    ///   - producer: Writes the body with ``SwiftConnect/ResponseBodyStream/send(_:)`` (which waits while the reader
    ///     is behind, and returns `false` once it stopped reading), then ends it with `finish(throwing:)`. It runs
    ///     in a task of its own.
    /// - Returns: The answer.
    public static func stream(
        status: Int = 200, headers: [String: String] = [:],
        _ producer: @escaping @Sendable (ResponseBodyStream) async -> Void
    ) -> FakeResponse {
        FakeResponse { request in
            if let problem = headerProblem(in: headers, request: request) { return Future(error: problem) }
            guard var response = ConnectResponse(request: request, statusCode: status, headers: headers) else {
                return Future(error: ConnectError.notAnHTTPStatus(status, request: request))
            }
            let body = ResponseBodyStream()
            let producing = Task { await producer(body) }
            body.setCancelHandler { producing.cancel() }
            response.bodyStream = body
            return Future(value: response)
        }
    }

    /// A streamed answer whose body is `chunks`, then the end (or `failure`, as a transfer that broke). The chunks
    /// are buffered for the reader, as an engine with back-pressure buffers them: it waits only once 256 KiB or
    /// more are unread (the stream's pause threshold).
    ///
    /// - Parameters:
    ///   - chunks: The pieces of the body, in order.
    ///   - status: The status code. Defaults to 200.
    ///   - headers: The headers.
    ///   - failure: The error the body ends with; `nil` for a complete body.
    /// - Returns: The answer.
    public static func stream(
        _ chunks: [Data], status: Int = 200, headers: [String: String] = [:], endingWith failure: (any Error)? = nil
    ) -> FakeResponse {
        .stream(status: status, headers: headers) { body in
            for chunk in chunks {
                guard await body.send(chunk) else { return }
            }
            body.finish(throwing: failure)
        }
    }

    /// A JSON response encoding `value`.
    ///
    /// Pass the encoder that matches how your API writes JSON, so the client's decoder reads the stub as it reads
    /// the real server:
    ///
    /// ```swift
    /// let encoder = JSONEncoder()
    /// encoder.dateEncodingStrategy = .iso8601
    /// encoder.keyEncodingStrategy = .convertToSnakeCase
    /// transport.stub(.get, "/events/1", with: .json(event, encoder: encoder))
    /// ```
    ///
    /// - Parameters:
    ///   - value: The body. It is encoded once, now: later changes to `encoder` do not affect the stub. If
    ///     encoding fails, requests answered by the stub fail with a ``SwiftConnect/ConnectError`` saying why.
    ///   - encoder: The encoder. Defaults to a plain `JSONEncoder` (dates as seconds since 2001, keys as
    ///     declared).
    ///   - status: The status code. Defaults to 200.
    ///   - headers: More headers (`Content-Type: application/json` is added unless they set one).
    /// - Returns: The answer.
    public static func json(
        _ value: some Encodable & Sendable,
        encoder: JSONEncoder = JSONEncoder(),
        status: Int = 200,
        headers: [String: String] = [:]
    ) -> FakeResponse {
        do {
            return json(data: try encoder.encode(value), status: status, headers: headers)
        } catch {
            return failure(ConnectError(.transport, message: "FakeTransport could not encode the stub: \(error)"))
        }
    }

    /// A JSON response with a literal body.
    ///
    /// - Parameters:
    ///   - string: The JSON text.
    ///   - status: The status code. Defaults to 200.
    ///   - headers: More headers (`Content-Type: application/json` is added unless they set one).
    /// - Returns: The answer.
    public static func json(string: String, status: Int = 200, headers: [String: String] = [:]) -> FakeResponse {
        json(data: Data(string.utf8), status: status, headers: headers)
    }

    private static func json(data: Data, status: Int, headers: [String: String]) -> FakeResponse {
        var headers = headers
        if headers.keys.first(where: { $0.lowercased() == "content-type" }) == nil {
            headers["Content-Type"] = "application/json"
        }
        return .data(data, status: status, headers: headers)
    }

    /// A response with a status code and an empty body.
    ///
    /// - Parameters:
    ///   - status: The status code; one not of three digits fails as in ``data(_:status:headers:)``.
    ///   - headers: The headers.
    /// - Returns: The answer.
    public static func status(_ status: Int, headers: [String: String] = [:]) -> FakeResponse {
        .data(Data(), status: status, headers: headers)
    }

    /// A transport failure, such as `URLError(.notConnectedToInternet)`.
    ///
    /// - Parameter error: The error the transport fails with.
    /// - Returns: The answer.
    public static func failure(_ error: any Error) -> FakeResponse {
        FakeResponse { _ in Future(error: error) }
    }

    /// No answer at all: the request completes only when cancelled.
    public static var never: FakeResponse {
        FakeResponse { _ in Promise<ConnectResponse>().future }
    }

    /// This answer, given only once `gate` completes: lets a test decide exactly when a response arrives.
    ///
    /// ```swift
    /// let gate = Promise<Void>()
    /// transport.stub(.get, "/slow", with: FakeResponse.status(200).released(by: gate.future))
    /// // … assert on the in-flight state …
    /// gate.succeed(())
    /// ```
    ///
    /// - Parameter gate: The future to wait for.
    /// - Returns: The gated answer.
    public func released(by gate: Future<Void>) -> FakeResponse {
        let answer = self.answer
        return FakeResponse { request in
            // Not `gate.flatMap`: cancelling one request must not cancel the gate other requests share.
            let promise = Promise<ConnectResponse>()
            gate.observe { _ in answer(request).observe { FakeResponse.give($0, to: promise) } }
            return promise.future
        }
    }

    /// Completes `promise` with a gated or delayed answer; a streamed body nobody will get (its request was
    /// cancelled meanwhile) is stopped, as an engine stops the transfer of a cancelled request.
    private static func give(_ answer: Result<ConnectResponse, any Error>, to promise: Promise<ConnectResponse>) {
        if !promise.completeIfPending(with: answer), case .success(let response) = answer {
            response.bodyStream?.cancel()
        }
    }

    /// This answer, given after `seconds` on a background queue.
    ///
    /// - Parameter seconds: The delay; zero or negative gives the answer at once, on the background queue. NaN is
    ///   a mistake in the test: the requests fail at once with a ``SwiftConnect/ConnectError`` saying so.
    /// - Returns: The delayed answer.
    public func delayed(by seconds: TimeInterval) -> FakeResponse {
        // Dispatch reads NaN seconds as "never": the request stayed pending until the test timed out.
        guard !seconds.isNaN else {
            return .failure(ConnectError(.transport, message: "FakeTransport: delayed(by:) was given NaN seconds"))
        }
        let answer = self.answer
        return FakeResponse { request in
            let promise = Promise<ConnectResponse>()
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
                answer(request).observe { FakeResponse.give($0, to: promise) }
            }
            return promise.future
        }
    }
}
