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

/// How `TracingObserver` names its spans and splits them by send, through the test kit's fake transport: the
/// engine is not the point.
final class TracingObserverTests: XCTestCase {
    private var tracer: InMemoryTracer!

    override func setUp() {
        tracer = InMemoryTracer()
    }

    private struct Search: Connector {
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/search?type=x" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: ParametersRepresentable? { nil }
        var timeout: TimeInterval { 60 }
    }

    private func client(_ transport: any Transport, middlewares: [any Middleware] = []) -> Connect {
        Connect(
            transport: transport, middlewares: middlewares, retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            settings: Connect.Settings(observers: [TracingObserver(tracer: tracer)]))
    }

    /// The attribute `key` of `span` as plain text.
    private func string(_ key: String, of span: FinishedInMemorySpan) -> String? {
        switch span.attributes.get(key) {
        case .string(let value)?: return value
        case .int64(let value)?: return String(value)
        case let other?: return "\(other)"
        case nil: return nil
        }
    }

    /// A request built elsewhere and given no name has no low-cardinality target: its span is named by its method
    /// alone, as OpenTelemetry says, not `"GET "`.
    func testAnUnnamedBuiltRequestsSpanIsNamedByItsMethodAlone() throws {
        let connect = client(FakeTransport.answering(.json(string: "{}")))
        _ = try connect.response(for: ConnectRequest(url: URL(string: "https://api.example.com/todos/7")!)).wait()
        _ = try connect.response(
            for: ConnectRequest(url: URL(string: "https://api.example.com/todos/7")!), name: "getTodo"
        ).wait()
        XCTAssertEqual(tracer.finishedSpans.map(\.operationName), ["GET", "GET getTodo"])
        XCTAssertEqual(tracer.finishedSpans.map { string("url.template", of: $0) }, [nil, nil])
    }

    /// `url.template` is a path template: a query written into the connector's endpoint is no part of it, nor of the
    /// span's name.
    func testAQueryInTheEndpointIsNoPartOfTheTemplate() throws {
        _ = try client(FakeTransport.answering(.json(string: "{}"))).request(Search()).wait()
        let span = try XCTUnwrap(tracer.finishedSpans.first)
        XCTAssertEqual(span.operationName, "GET /search")
        XCTAssertEqual(string("url.template", of: span), "/search")
        XCTAssertEqual(string("url.full", of: span), "https://api.example.com/search?type=x")
    }

    /// A middleware that changes the method an attempt goes out with (a `PATCH` tunnelled through `POST` with
    /// `X-HTTP-Method-Override`, for a proxy that refuses `PATCH`) makes a span named by the method sent, which its
    /// `http.request.method` says: OpenTelemetry names the span `{http.request.method} {url.template}`. It was named by
    /// the connector's method (`PATCH /search` beside `http.request.method` `POST`).
    func testASpanIsNamedByTheMethodItsAttemptWentOutWith() throws {
        // Given
        struct Patch: Connector {
            var baseURL: URL { URL(string: "https://api.example.com")! }
            var endpoint: String { "/search" }
            var method: HTTPMethod { .patch }
            var headers: [HTTPHeader] { [] }
            var parameters: ParametersRepresentable? { nil }
        }
        let tunnel = AnyMiddleware { request, _, next in
            var request = request
            request.setValue(request.method.rawValue, forHTTPHeaderField: "X-HTTP-Method-Override")
            request.method = .post
            return next(request)
        }
        let transport = FakeTransport.answering(.json(string: "{}"))
        // When
        _ = try client(transport, middlewares: [tunnel]).request(Patch()).wait()
        _ = try client(transport, middlewares: [tunnel]).request(
            Route("/search", baseURL: URL(string: "https://api.example.com")!, method: "PROPPATCH")
        ).wait()
        // Then
        XCTAssertEqual(transport.requests.map(\.httpMethod), ["POST", "POST"])
        let spans = tracer.finishedSpans
        XCTAssertEqual(spans.map(\.operationName), ["POST /search", "POST /search"])
        XCTAssertEqual(spans.map { string("http.request.method", of: $0) }, ["POST", "POST"])
        XCTAssertEqual(spans.map { string("http.request.method_original", of: $0) }, [nil, nil])
    }

    /// A middleware that sends an attempt's request twice (a hedge) makes a span per send, each ended, each send
    /// carrying its own span's context: one span covered both, and both requests carried its context.
    func testEachSendOfAHedgedAttemptIsASpanOfItsOwn() throws {
        // Given
        let transport = FakeTransport.answering(FakeResponse.json(string: "{}").delayed(by: 0.1))
        let hedge = AnyMiddleware { request, _, next in
            let first = next(request)
            let second = next(request)
            return first.flatMap { response in second.map { _ in response } }
        }
        // When
        _ = try client(transport, middlewares: [hedge]).request(Search()).wait(timeout: 10)
        // Then
        XCTAssertEqual(tracer.activeSpans.count, 0, "every span ended")
        let spans = tracer.finishedSpans
        XCTAssertEqual(spans.count, 2)
        XCTAssertEqual(Set(spans.map(\.spanID)).count, 2, "two spans, not one ended twice")
        XCTAssertEqual(spans.map { string("http.request.method", of: $0) }, ["GET", "GET"])
        XCTAssertEqual(spans.map { string("http.response.status_code", of: $0) }, ["200", "200"])
        let sent = transport.requests.map { $0.value(forHTTPHeaderField: InMemoryTracer.spanIDKey) }
        XCTAssertEqual(sent.count, 2)
        XCTAssertEqual(Set(sent.compactMap { $0 }), Set(spans.map(\.spanID)), "each send carries its own span")
        // OpenTelemetry counts every send after the first as a resend, whatever its cause: the second send is one.
        XCTAssertEqual(
            spans.map { string("http.request.resend_count", of: $0) }.sorted { ($0 ?? "") < ($1 ?? "") }, [nil, "1"])
    }

    /// A token refresh that fails after the call's last `401` has no send after it to be told on: its events go on an
    /// INTERNAL span of the call's name, with the call's `error.type`, rather than being dropped.
    func testAFailedRefreshAfterTheLastAttemptIsToldOnASpanOfItsOwn() throws {
        let transport = FakeTransport.answering(.status(401))
        let auth = AuthenticationMiddleware(credential: .bearer(token: "old")) { _ in
            Future(error: URLError(.userAuthenticationRequired))
        }
        _ = try? client(transport, middlewares: [auth]).request(Search()).wait(timeout: 10)

        XCTAssertEqual(tracer.activeSpans.count, 0, "a span left open")
        let spans = tracer.finishedSpans
        XCTAssertEqual(spans.map(\.kind), [.client, .internal])
        XCTAssertEqual(spans.last?.events.map(\.name), ["token refresh started", "token refresh ended"])
        XCTAssertEqual(spans.last?.operationName, spans.first?.operationName)
        XCTAssertNotNil(spans.last.flatMap { string("error.type", of: $0) })
        XCTAssertEqual(spans.first?.events.map(\.name), [], "the 401's span tells no refresh that came after it")
    }

    /// The INTERNAL span of a refresh that fails after the last `401` is named as the attempts' spans are when a
    /// middleware changed the method they went out with (a `PATCH` tunnelled through `POST`): it was named by the
    /// connector's method (`PATCH /search` beside the attempt's `POST /search`).
    func testAFailedRefreshsSpanIsNamedAsTheAttemptsOfATunnelledCall() throws {
        // Given
        struct Patch: Connector {
            var baseURL: URL { URL(string: "https://api.example.com")! }
            var endpoint: String { "/search" }
            var method: HTTPMethod { .patch }
            var headers: [HTTPHeader] { [] }
            var parameters: ParametersRepresentable? { nil }
        }
        let tunnel = AnyMiddleware { request, _, next in
            var request = request
            request.setValue(request.method.rawValue, forHTTPHeaderField: "X-HTTP-Method-Override")
            request.method = .post
            return next(request)
        }
        let auth = AuthenticationMiddleware(credential: .bearer(token: "old")) { _ in
            Future(error: URLError(.userAuthenticationRequired))
        }
        let transport = FakeTransport.answering(.status(401))
        // When
        _ = try? client(transport, middlewares: [tunnel, auth]).request(Patch()).wait(timeout: 10)
        // Then
        XCTAssertEqual(tracer.activeSpans.count, 0, "a span left open")
        let spans = tracer.finishedSpans
        XCTAssertEqual(spans.map(\.kind), [.client, .internal])
        XCTAssertEqual(spans.map(\.operationName), ["POST /search", "POST /search"])
    }

    /// A call on its one attempt answers with its `401` without waiting for the refresh it starts: the refresh's end,
    /// told after the call ended, is on an INTERNAL span of its own, not lost.
    func testTheEndOfARefreshToldAfterTheCallEndedIsOnASpanOfItsOwn() throws {
        let transport = FakeTransport.answering(.status(401))
        let renewal = Promise<AuthorizationToken>()
        let auth = AuthenticationMiddleware(credential: .bearer(token: "old")) { _ in renewal.future }
        let connect = Connect(
            transport: transport, middlewares: [auth], retryPolicy: RetryPolicy(maxAttempts: 1),
            settings: Connect.Settings(observers: [TracingObserver(tracer: tracer)]))
        _ = try? connect.request(Search()).wait(timeout: 10)
        renewal.succeed(.bearer(token: "new"))

        XCTAssertEqual(tracer.activeSpans.count, 0, "a span left open")
        let events = tracer.finishedSpans.map { "\($0.kind): \($0.events.map(\.name))" }
        XCTAssertEqual(
            events, ["client: []", "internal: [\"token refresh started\"]", "internal: [\"token refresh ended\"]"])
    }
    /// A call that a middleware fails with an error of its own while the attempt is in flight ends that attempt's span
    /// with the call's reason, as a deadline does: the error's type, not `cancelled`, which nobody did.
    func testAnAttemptCutShortByAMiddlewaresErrorEndsWithThatErrorsType() throws {
        struct QuotaExceeded: Error {}
        let transport = FakeTransport.answering(FakeResponse.json(string: "{}").delayed(by: 30))
        let failing = AnyMiddleware { request, _, next in
            _ = next(request)
            return Future(error: QuotaExceeded())
        }
        let connect = Connect(
            transport: transport, middlewares: [failing], retryPolicy: RetryPolicy(maxAttempts: 1),
            settings: Connect.Settings(observers: [TracingObserver(tracer: tracer)]))

        XCTAssertThrowsError(try connect.request(Search()).wait(timeout: 10)) { XCTAssertTrue($0 is QuotaExceeded) }

        let span = try XCTUnwrap(tracer.finishedSpans.first)
        XCTAssertEqual(tracer.finishedSpans.count, 1)
        XCTAssertEqual(string("error.type", of: span), "QuotaExceeded")
        XCTAssertEqual(span.status, SpanStatus(code: .error, message: "QuotaExceeded"))
    }

    /// A first caller of a coalesced request that leaves once its observers were asked for the shared request's fields
    /// at the transport's door, and before they hear it start (a joined caller keeps the request going), leaves no span
    /// unended: the span its fields started after the call had ended was never ended, as no start, and no end, of it
    /// came.
    func testAFirstCallerThatLeavesBetweenItsFieldsAndItsStartLeavesNoSpanOpen() throws {
        // Given: a queue of one slot, held by a blocker until the test lets it go; an observer, asked for the fields
        // before the tracer is, that cancels the first /search call when its shared request reaches the door
        let transport = FakeTransport()
        let blocker = Promise<Void>()
        transport.stub("/blocker", with: FakeResponse.json(string: "{}").released(by: blocker.future))
        transport.stub("/search", with: FakeResponse.json(string: "{}"))
        let first = Locked<Future<ConnectResponse>?>(nil)
        let leave = LeaveAtTheDoor { first.withLock { $0 }?.cancel() }
        let connect = Connect(
            transport: transport, retryPolicy: nil, requestQueue: RequestQueue(maxConcurrentRequests: 1),
            settings: Connect.Settings(
                coalescesIdenticalRequests: true, observers: [leave, TracingObserver(tracer: tracer)]))
        let blocked = connect.response(for: ConnectRequest(url: URL(string: "https://api.example.com/blocker")!))
        first.withLock { $0 = connect.response(for: Search()) }
        let second = connect.response(for: Search())
        // When: the slot frees, and the shared request reaches the transport's door
        blocker.succeed(())
        _ = try blocked.wait(timeout: 10)
        _ = try second.wait(timeout: 10)
        // Then
        XCTAssertEqual(transport.requests.map { $0.url?.path }, ["/blocker", "/search"])
        XCTAssertThrowsError(try first.withLock { $0 }?.wait(timeout: 10))
        XCTAssertEqual(tracer.activeSpans.map(\.operationName), [], "a span left open")
        // The blocker's span, the INTERNAL span of the first call's queue wait (no send of its own followed it), and the
        // joined call's span.
        XCTAssertEqual(
            tracer.finishedSpans.map {
                "\($0.kind) \($0.operationName): \(string("http.response.status_code", of: $0) ?? "-")"
            }.sorted(),
            ["client GET /search: 200", "client GET: 200", "internal GET /search: -"])
    }
}

extension TracingObserverTests {
    /// A first caller that leaves while the shared request waits in the queue leaves it to the call that joined it: the
    /// request goes with that call's trace context, and its span is a send of its own (not marked shared).
    func testARequestWhoseFirstCallerLeftInTheQueueCarriesTheJoinedCallsContext() throws {
        // Given: a queue of one slot, held by a blocker; two identical calls waiting for it, the first then cancelled
        let transport = FakeTransport()
        let blocker = Promise<Void>()
        transport.stub("/blocker", with: FakeResponse.json(string: "{}").released(by: blocker.future))
        transport.stub("/search", with: FakeResponse.json(string: "{}"))
        let connect = Connect(
            transport: transport, retryPolicy: nil, requestQueue: RequestQueue(maxConcurrentRequests: 1),
            settings: Connect.Settings(coalescesIdenticalRequests: true, observers: [TracingObserver(tracer: tracer)]))
        let blocked = connect.response(for: ConnectRequest(url: URL(string: "https://api.example.com/blocker")!))
        let first = connect.response(for: Search())
        let second = connect.response(for: Search())
        first.cancel()
        // When: the slot frees
        blocker.succeed(())
        _ = try blocked.wait(timeout: 10)
        _ = try second.wait(timeout: 10)
        // Then: the request carries the span of the call it went for
        let sent = try XCTUnwrap(transport.requests.last)
        XCTAssertEqual(sent.url?.path, "/search")
        let span = try XCTUnwrap(tracer.finishedSpans.first { $0.kind == .client && $0.operationName == "GET /search" })
        XCTAssertEqual(sent.value(forHTTPHeaderField: InMemoryTracer.spanIDKey), span.spanID)
        XCTAssertEqual(sent.value(forHTTPHeaderField: InMemoryTracer.traceIDKey), span.traceID)
        XCTAssertNil(string("swiftconnect.request.shared", of: span))
        XCTAssertEqual(tracer.activeSpans.map(\.operationName), [], "a span left open")
    }
}

/// An observer that runs `leave` when a call to `/search` is first asked for its fields at the transport's door:
/// before the observers after it are asked, and before any of them hears the attempt start.
private struct LeaveAtTheDoor: ConnectObserver {
    let leave: @Sendable () -> Void

    func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? {
        call.request.url.path == "/search" ? Call(leave: leave) : nil
    }

    final class Call: ConnectCallObserver, Sendable {
        let leave: @Sendable () -> Void
        /// Whether `leave` has run: once per call.
        private let hasLeft = Locked(false)

        init(leave: @escaping @Sendable () -> Void) {
            self.leave = leave
        }

        func record(_ event: ConnectEvent) {}

        func headerFields(forAttempt attempt: Int) -> HeaderFields {
            let isFirst = hasLeft.withLock { hasLeft -> Bool in
                defer { hasLeft = true }
                return !hasLeft
            }
            if isFirst { leave() }
            return [:]
        }
    }
}
