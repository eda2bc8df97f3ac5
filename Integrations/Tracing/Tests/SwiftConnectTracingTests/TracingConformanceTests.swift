import Foundation
import InMemoryTracing
import SwiftConnect
import SwiftConnectTesting
import SwiftConnectTracing
import Tracing
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The spans `TracingObserver` makes, pinned name by name and attribute by attribute, for each kind of call: through
/// URLSession to a server on 127.0.0.1 where a server is involved (AsyncHTTPClient in the subclass, the same checks),
/// through the test kit's fake transport where a failure is.
class TracingConformanceTests: XCTestCase {
    /// The engine the checks run over; a subclass runs them all over another.
    func makeTransport(pins: CertificatePins = CertificatePins()) -> any Transport {
        URLSessionTransport(configuration: URLSessionTransport.defaultConfiguration, pins: pins)
    }

    private var server: LocalServer!
    private var tracer: InMemoryTracer!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        tracer = InMemoryTracer()
    }

    override func tearDown() {
        server.stop()
    }

    private struct GetTodo: Connector {
        var baseURL: URL
        var endpoint: String { "/todos/{id}" }
        var method: HTTPMethod = .get
        var headers: [HTTPHeader] { [] }
        var parameters: ParametersRepresentable? { Parameter.path(key: "id", value: "7") }
        var timeout: TimeInterval = 60
    }

    private func client(
        _ transport: (any Transport)? = nil, middlewares: [any Middleware] = [], maxResponseBytes: Int? = nil,
        knownMethods: Set<String>? = nil
    ) -> Connect {
        Connect(
            transport: transport ?? makeTransport(), middlewares: middlewares,
            retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            settings: Connect.Settings(
                maxResponseBytes: maxResponseBytes,
                observers: [TracingObserver(tracer: tracer, knownMethods: knownMethods)])
        )
    }

    private var todo: GetTodo { GetTodo(baseURL: server.baseURL) }

    /// The attributes of `span` as plain values.
    private func attributes(of span: FinishedInMemorySpan) -> [String: String] {
        var values: [String: String] = [:]
        // `SpanAttributes` is not a sequence: `forEach` is the only way through it.
        // swift-format-ignore: ReplaceForEachWithForLoop
        span.attributes.forEach { key, attribute in
            switch attribute {
            case .string(let value): values[key] = value
            case .int64(let value): values[key] = String(value)
            case .bool(let value): values[key] = String(value)
            case .double(let value): values[key] = String(value)
            default: values[key] = "\(attribute)"
            }
        }
        return values
    }

    // MARK: - Answers

    /// An attempt abandoned at its `attemptTimeout` and retried with no wait ends its span, timed out, before the
    /// next attempt's starts (a stage that maps the response sits between the transport and the retry loop).
    func testAnAttemptAbandonedAtItsTimeoutEndsItsSpanTimedOut() throws {
        let transport = FakeTransport()
        transport.stub("/todos/7", with: [.never, .json(string: "{}")])
        let passThrough = AnyMiddleware { request, _, next in next(request).map { $0 } }
        let connect = Connect(
            transport: transport, middlewares: [passThrough],
            retryPolicy: RetryPolicy(maxAttempts: 2, attemptTimeout: 0.2, clock: ImmediateRetryClock()),
            settings: Connect.Settings(observers: [TracingObserver(tracer: tracer)]))

        _ = try connect.request(todo).wait(timeout: 10)

        XCTAssertEqual(tracer.activeSpans.count, 0, "every span ended")
        XCTAssertEqual(tracer.finishedSpans.map { attributes(of: $0)["error.type"] }, ["timedOut", nil])
        XCTAssertEqual(tracer.finishedSpans.last.map { attributes(of: $0)["http.response.status_code"] }, "200")
    }

    /// Two identical GETs that share one request (coalescing) are a span each, both ended: the one that joined the
    /// other's request made none.
    func testACallThatSharesAnIdenticalRequestHasItsSpan() throws {
        let gate = Promise<Void>()
        let transport = FakeTransport()
        transport.stub("/todos/7", with: FakeResponse.json(string: "{}").released(by: gate.future))
        let connect = Connect(
            transport: transport, retryPolicy: nil,
            settings: Connect.Settings(coalescesIdenticalRequests: true, observers: [TracingObserver(tracer: tracer)]))
        let calls = [connect.request(todo), connect.request(todo)]
        gate.succeed(())
        for call in calls { _ = try call.wait(timeout: 10) }

        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(tracer.activeSpans.count, 0, "every span ended")
        XCTAssertEqual(tracer.finishedSpans.map(\.operationName), ["GET /todos/{id}", "GET /todos/{id}"])
        XCTAssertEqual(tracer.finishedSpans.map { attributes(of: $0)["http.response.status_code"] }, ["200", "200"])
        // The joined call's span is marked: the request on the wire carries the other's context, not its own.
        XCTAssertEqual(
            tracer.finishedSpans.map { attributes(of: $0)["swiftconnect.request.shared"] ?? "-" }.sorted(),
            ["-", "true"])
        let unmarked = try XCTUnwrap(
            tracer.finishedSpans.first { attributes(of: $0)["swiftconnect.request.shared"] == nil })
        XCTAssertEqual(transport.requests.first?.value(forHTTPHeaderField: InMemoryTracer.spanIDKey), unmarked.spanID)
    }

    /// `url.template` and the span's name are the template of the URL's whole path: a base URL's `/v1` was left out.
    func testTheTemplateStartsWithTheBaseURLsPath() throws {
        server.route("GET", "/v1/todos/:id") { _ in .json(string: "{}") }
        _ = try client().request(GetTodo(baseURL: server.baseURL.appendingPathComponent("v1"))).wait()
        let span = try XCTUnwrap(tracer.finishedSpans.first)
        XCTAssertEqual(span.operationName, "GET /v1/todos/{id}")
        XCTAssertEqual(attributes(of: span)["url.template"], "/v1/todos/{id}")
        XCTAssertEqual(attributes(of: span)["http.response.status_code"], "200")
    }

    func test200IsOneClientSpanWithTheConventionsAttributesAndItsContextSent() throws {
        server.route("GET", "/todos/:id") { _ in .json(string: "{}") }
        _ = try client().request(todo).wait()
        let span = try XCTUnwrap(tracer.finishedSpans.first)
        XCTAssertEqual(tracer.finishedSpans.count, 1)
        XCTAssertEqual(span.operationName, "GET /todos/{id}")
        XCTAssertEqual(span.kind, .client)
        XCTAssertNil(span.status)
        XCTAssertEqual(
            attributes(of: span),
            [
                "http.request.method": "GET", "server.address": "127.0.0.1", "server.port": String(server.port),
                "url.full": server.baseURL.absoluteString + "/todos/7", "url.template": "/todos/{id}",
                "swiftconnect.call": "GetTodo", "http.response.status_code": "200",
            ])
        // The span's context reached the server, as the tracer writes it.
        let received = try XCTUnwrap(server.requests.last)
        XCTAssertEqual(received.header(InMemoryTracer.spanIDKey), span.spanID)
        XCTAssertEqual(received.header(InMemoryTracer.traceIDKey), span.traceID)
    }

    func test404IsAnErrorSpanWithTheStatusAsItsType() throws {
        server.route("GET", "/todos/:id") { _ in .json(string: #"{"message":"no"}"#, status: 404) }
        XCTAssertNotNil(connectError(of: client().request(todo)))
        let span = try XCTUnwrap(tracer.finishedSpans.first)
        XCTAssertEqual(attributes(of: span)["http.response.status_code"], "404")
        XCTAssertEqual(attributes(of: span)["error.type"], "404")
        XCTAssertEqual(span.status?.code, .error)
    }

    /// A method OpenTelemetry does not know is `_OTHER`, the method itself beside it, and the span is named `HTTP`
    /// and the template: the span names stay bounded.
    func testAMethodOpenTelemetryDoesNotKnowIsOtherWithTheOriginalBesideIt() throws {
        // Given
        server.route("PROPFIND", "/todos/:id") { _ in .json(string: "{}") }
        var propfind = todo
        propfind.method = "PROPFIND"
        // When
        _ = try client().request(propfind).wait()
        // Then
        let span = try XCTUnwrap(tracer.finishedSpans.first)
        XCTAssertEqual(tracer.finishedSpans.count, 1)
        XCTAssertEqual(span.operationName, "HTTP /todos/{id}")
        XCTAssertEqual(attributes(of: span)["http.request.method"], "_OTHER")
        XCTAssertEqual(attributes(of: span)["http.request.method_original"], "PROPFIND")
        XCTAssertEqual(server.requests.last?.method, "PROPFIND", "sent as it is")
    }

    /// The observer's own list of known methods replaces OpenTelemetry's: a method on it names its span and is its
    /// own `http.request.method`; one off it (`GET` here) is `_OTHER`, its span `HTTP`.
    func testTheObserversKnownMethodsReplaceTheDefault() throws {
        // Given
        server.route("PROPFIND", "/todos/:id") { _ in .json(string: "{}") }
        server.route("GET", "/todos/:id") { _ in .json(string: "{}") }
        var propfind = todo
        propfind.method = "PROPFIND"
        let connect = client(knownMethods: ["PROPFIND"])
        // When
        _ = try connect.request(propfind).wait()
        _ = try connect.request(todo).wait()
        // Then
        let spans = tracer.finishedSpans
        XCTAssertEqual(spans.map(\.operationName), ["PROPFIND /todos/{id}", "HTTP /todos/{id}"])
        XCTAssertEqual(spans.map { attributes(of: $0)["http.request.method"] }, ["PROPFIND", "_OTHER"])
        XCTAssertEqual(spans.map { attributes(of: $0)["http.request.method_original"] }, [nil, "GET"])
    }

    func testARetriedCallIsTwoSpansInTheCallersTraceTheSecondCountedAsAResend() throws {
        let attempts = Locked(0)
        server.route("GET", "/todos/:id") { _ in
            attempts.withLock { count -> Int in
                count += 1
                return count
            } == 1
                ? LocalServer.Response.status(503).withHeader("Retry-After", "0") : .json(string: "{}")
        }
        let parent = tracer.startSpan("caller")
        let future = InstrumentationContext.$current.withValue(parent.context) { client().request(todo) }
        _ = try future.wait()
        parent.end()
        let spans = tracer.finishedSpans.filter { $0.operationName == "GET /todos/{id}" }
        XCTAssertEqual(spans.count, 2)
        XCTAssertEqual(spans.map { attributes(of: $0)["http.response.status_code"] }, ["503", "200"])
        XCTAssertEqual(spans.map { attributes(of: $0)["http.request.resend_count"] }, [nil, "1"])
        XCTAssertEqual(spans.map(\.parentSpanID), [parent.spanID, parent.spanID], "children of the caller's span")
        XCTAssertEqual(Set(spans.map(\.traceID)), [parent.traceID])
    }

    func testATokenRefreshIsAnEventOfTheAttemptAfterIt() throws {
        server.route("GET", "/todos/:id") { request in
            request.header("Authorization") == "Bearer new" ? .json(string: "{}") : .status(401)
        }
        let auth = AuthenticationMiddleware(credential: .bearer(token: "old")) { _ in
            Future(value: .bearer(token: "new"))
        }
        _ = try client(middlewares: [auth]).request(todo).wait()
        let spans = tracer.finishedSpans
        XCTAssertEqual(spans.map { attributes(of: $0)["http.response.status_code"] }, ["401", "200"])
        XCTAssertEqual(spans[0].events.map(\.name), [])
        XCTAssertEqual(spans[1].events.map(\.name), ["token refresh started", "token refresh ended"])
    }

    func testARedirectIsAnEventOfItsAttempt() throws {
        server.route("GET", "/todos/:id") { _ in .redirect(to: "/moved?token=abc") }
        server.route("GET", "/moved") { _ in .json(string: "{}") }
        _ = try client().request(todo).wait()
        let span = try XCTUnwrap(tracer.finishedSpans.first)
        XCTAssertEqual(tracer.finishedSpans.count, 1)
        XCTAssertEqual(span.events.map(\.name), ["redirect"])
        XCTAssertEqual(
            span.events.first?.attributes.get("url.full"),
            .string(server.baseURL.absoluteString + "/moved?token=<redacted>"))
        XCTAssertEqual(attributes(of: span)["http.response.status_code"], "200")
    }

    /// One span covers the hops of its attempt: its `url.full`, `server.address` and `server.port` are the last hop's,
    /// whose status it carries (they were the first's, beside the last's status), and the next hop sends the span's
    /// context again.
    func testARedirectedAttemptsSpanDescribesTheLastHop() throws {
        let other = try LocalServer.started()
        defer { other.stop() }
        other.route("GET", "/moved") { _ in .json(string: "{}") }
        server.route("GET", "/todos/:id") { _ in .redirect(to: other.baseURL.absoluteString + "/moved") }
        _ = try client().request(todo).wait()
        let span = try XCTUnwrap(tracer.finishedSpans.first)
        XCTAssertEqual(tracer.finishedSpans.count, 1)
        XCTAssertEqual(span.events.map(\.name), ["redirect"])
        let attributes = attributes(of: span)
        XCTAssertEqual(attributes["url.full"], other.baseURL.absoluteString + "/moved")
        XCTAssertEqual(attributes["server.address"], "127.0.0.1")
        XCTAssertEqual(attributes["server.port"], String(other.port))
        XCTAssertEqual(attributes["http.response.status_code"], "200")
        XCTAssertEqual(server.requests.last?.header(InMemoryTracer.spanIDKey), span.spanID)
        XCTAssertEqual(other.requests.last?.header(InMemoryTracer.spanIDKey), span.spanID)
    }

    /// A redirect event's `url.full` hides the attempt's secret values, as the span's own does: a token the server
    /// echoes in the URL it redirects to was shown.
    func testARedirectEventHidesTheAttemptsSecretValues() throws {
        server.route("GET", "/todos/:id") { _ in .redirect(to: "/moved?state=tok-ECHO-27182") }
        server.route("GET", "/moved") { _ in .json(string: "{}") }
        let auth = AuthenticationMiddleware(credential: .bearer(token: "tok-ECHO-27182")) { _ in
            Future(error: URLError(.userAuthenticationRequired))
        }
        _ = try client(middlewares: [auth]).request(todo).wait()
        let span = try XCTUnwrap(tracer.finishedSpans.first)
        let shown = "\(span.events.first?.attributes.get("url.full").map { "\($0)" } ?? "")"
        XCTAssertTrue(shown.contains("/moved?state="), shown)
        XCTAssertFalse(shown.contains("tok-ECHO-27182"), shown)
    }

    func testAnEventStreamsSpanEndsWithItsHead() async throws {
        server.route("GET", "/todos/:id") { _ in .serverSentEvents([ServerSentEvent(data: "a")]) }
        var events: [String] = []
        for try await event in client().stream(todo).events { events.append(event.data) }
        XCTAssertEqual(events, ["a"])
        XCTAssertEqual(tracer.finishedSpans.map { attributes(of: $0)["http.response.status_code"] }, ["200"])
    }

    // MARK: - Failures

    func testATimeoutEndsTheSpanAsTimedOut() throws {
        server.route("GET", "/todos/:id") { _ in LocalServer.Response.json(string: "{}").delayed(by: 5) }
        var slow = todo
        slow.timeout = 0.3
        XCTAssertEqual(connectError(of: client().request(slow))?.kind, .timedOut)
        let span = try XCTUnwrap(tracer.finishedSpans.first)
        XCTAssertEqual(attributes(of: span)["error.type"], "timedOut")
        XCTAssertEqual(span.status?.code, .error)
    }

    func testACancelledCallEndsItsSpanAsCancelled() throws {
        let transport = FakeTransport.answering(FakeResponse.json(string: "{}").released(by: Promise<Void>().future))
        let future = client(transport).request(todo)
        future.cancel()
        XCTAssertEqual(connectError(of: future)?.kind, .cancelled)
        let span = try XCTUnwrap(tracer.finishedSpans.first)
        XCTAssertEqual(attributes(of: span)["error.type"], "cancelled")
    }

    func testARefusedConnectionIsItsKind() throws {
        let port = server.port
        server.stop()
        let gone = GetTodo(baseURL: URL(string: "http://127.0.0.1:\(port)")!)
        let connect = Connect(
            transport: makeTransport(), retryPolicy: RetryPolicy(maxAttempts: 1),
            settings: Connect.Settings(observers: [TracingObserver(tracer: tracer)]))
        XCTAssertEqual(connectError(of: connect.request(gone))?.kind, .cannotConnect)
        XCTAssertEqual(tracer.finishedSpans.map { attributes(of: $0)["error.type"] }, ["cannotConnect"])
    }

    func testAPinTheEngineCannotCheckIsAPinningFailure() throws {
        let pins = try CertificatePins(["127.0.0.1": [String(repeating: "A", count: 43) + "="]])
        let connect = Connect(
            transport: makeTransport(pins: pins),
            retryPolicy: RetryPolicy(maxAttempts: 1),
            settings: Connect.Settings(observers: [TracingObserver(tracer: tracer)]))
        // Plain http to a pinned host: no certificate to check, refused by every engine before anything is sent.
        let plain = GetTodo(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!)
        XCTAssertEqual(connectError(of: connect.request(plain))?.kind, .certificatePinning)
        XCTAssertEqual(tracer.finishedSpans.map { attributes(of: $0)["error.type"] }, ["certificatePinning"])
    }

    func testASizeLimitIsResponseTooLarge() throws {
        server.route("GET", "/todos/:id") { _ in .data(Data(repeating: 1, count: 4096)) }
        XCTAssertEqual(connectError(of: client(maxResponseBytes: 100).request(todo))?.kind, .responseTooLarge)
        XCTAssertEqual(tracer.finishedSpans.map { attributes(of: $0)["error.type"] }, ["responseTooLarge"])
    }

    func testARequestHeldWhileOfflineSaysSoOnItsSpan() throws {
        // Loopback hosts are never held: a fake transport stands for a remote server.
        let monitor = FakeConnectivityMonitor(.disconnected)
        let connect = client(
            FakeTransport.answering(.json(string: "{}")), middlewares: [ConnectivityMiddleware(monitor: monitor)])
        let future = connect.request(GetTodo(baseURL: URL(string: "https://api.example.com")!))
        XCTAssertEqual(tracer.finishedSpans.count + tracer.activeSpans.count, 0, "held: no attempt yet")
        monitor.set(.connected)
        _ = try future.wait()
        let span = try XCTUnwrap(tracer.finishedSpans.first)
        XCTAssertEqual(span.events.map(\.name), ["held while offline"])
        XCTAssertEqual(attributes(of: span)["server.address"], "api.example.com")
        XCTAssertEqual(attributes(of: span)["server.port"], "443")
    }

    /// A host names one server whatever its case (RFC 4343): `server.address` is the same for `API.Example.com` as
    /// for `api.example.com`, as the metrics' label is.
    func testTheServerAddressIsTheHostInLowerCase() throws {
        let connect = client(FakeTransport.answering(.json(string: "{}")))
        _ = try connect.request(GetTodo(baseURL: URL(string: "https://API.Example.com")!)).wait()
        let span = try XCTUnwrap(tracer.finishedSpans.first)
        XCTAssertEqual(attributes(of: span)["server.address"], "api.example.com")
    }

    func testACacheHitMakesNoSpan() throws {
        server.route("GET", "/todos/:id") { _ in .json(string: "{}") }
        let connect = Connect(
            transport: makeTransport(), responseCache: ResponseCache(defaultRule: CacheRule(timeToLive: 60)),
            settings: Connect.Settings(observers: [TracingObserver(tracer: tracer)]))
        _ = try connect.request(todo).wait()
        _ = try connect.request(todo).wait()
        XCTAssertEqual(tracer.finishedSpans.count, 1)
    }

    /// A call the cache answers after it was held offline sends nothing either: no CLIENT span, and the wait is told
    /// on an INTERNAL span, as any event no send followed is, not lost. (Held because nothing was stored yet: a call
    /// the cache would answer as it is goes on to it offline, unheld. The first call let go stores the answer the
    /// second is then served: the fake transport answers at once.)
    func testACacheHitAfterAnOfflineHoldTellsTheWaitOnAnInternalSpan() throws {
        // Loopback hosts are never held: a fake transport stands for a remote server.
        let monitor = FakeConnectivityMonitor(.disconnected)
        let remote = GetTodo(baseURL: URL(string: "https://api.example.com")!)
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(
            transport: transport, middlewares: [ConnectivityMiddleware(monitor: monitor)],
            responseCache: ResponseCache(defaultRule: CacheRule(timeToLive: 60)),
            settings: Connect.Settings(observers: [TracingObserver(tracer: tracer)]))
        let sent = connect.request(remote)
        let served = connect.request(remote)
        monitor.set(.connected)
        _ = try sent.wait()
        _ = try served.wait()
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(tracer.finishedSpans.map(\.kind), [.client, .internal])
        XCTAssertEqual(tracer.finishedSpans.last?.events.map(\.name), ["held while offline"])
    }

    /// A call the cache answers as it is goes on to it offline, unheld: no span at all.
    func testACacheHitOfflineIsNotHeldAndMakesNoSpan() throws {
        let monitor = FakeConnectivityMonitor(.connected)
        let remote = GetTodo(baseURL: URL(string: "https://api.example.com")!)
        let connect = Connect(
            transport: FakeTransport.answering(.json(string: "{}")),
            middlewares: [ConnectivityMiddleware(monitor: monitor, policy: .failFast)],
            responseCache: ResponseCache(defaultRule: CacheRule(timeToLive: 60)),
            settings: Connect.Settings(observers: [TracingObserver(tracer: tracer)]))
        _ = try connect.request(remote).wait()
        monitor.set(.disconnected)
        _ = try connect.request(remote).wait()
        XCTAssertEqual(tracer.finishedSpans.map(\.kind), [.client])
    }
}

/// A value behind a lock, for the server's handlers.
final class Locked<Value>: @unchecked Sendable {
    // `lock` protects `value`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

/// The `ConnectError` `future` fails with, or `nil` when it succeeds.
func connectError<Value>(of future: Future<Value>) -> ConnectError? {
    guard case .failure(let error)? = try? future.waitForResult() else { return nil }
    return error as? ConnectError
}
