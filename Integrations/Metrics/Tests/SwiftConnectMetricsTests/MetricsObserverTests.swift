import CoreMetrics
import Foundation
import MetricsTestKit
import SwiftConnect
import SwiftConnectTesting
import XCTest

@testable import SwiftConnectMetrics

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The metrics `MetricsObserver` records, name by name and label by label, through URLSession to a server on
/// 127.0.0.1, or the fake transport where a stage is the point.
final class MetricsObserverTests: XCTestCase {
    private var server: LocalServer!
    private var metrics: TestMetrics!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        metrics = TestMetrics()
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

    private var todo: GetTodo { GetTodo(baseURL: server.baseURL) }

    private func client(
        _ transport: any Transport = URLSessionTransport(), middlewares: [any Middleware] = [],
        queue: RequestQueue? = nil, cache: ResponseCache? = nil, knownMethods: Set<String>? = nil
    ) -> Connect {
        Connect(
            transport: transport, middlewares: middlewares, retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            requestQueue: queue, responseCache: cache,
            settings: Connect.Settings(observers: [MetricsObserver(factory: metrics, knownMethods: knownMethods)]))
    }

    /// The labels every metric of a call to `todo` carries.
    private var base: [(String, String)] {
        [("http.request.method", "GET"), ("url.template", "/todos/{id}"), ("server.address", "127.0.0.1")]
    }

    /// The `http.client.active_requests` meter of calls to `todo`.
    private func activeRequests() throws -> TestMeter {
        try metrics.expectMeter("http.client.active_requests", base + [("server.port", String(server.port))])
    }

    /// The `http.client.request.body.size` (`direction` "request") or `http.client.response.body.size` (`"response"`)
    /// recorder of calls to `todo` answered `200`.
    private func bodySizes(_ direction: String) throws -> TestRecorder {
        try metrics.expectRecorder(
            "http.client.\(direction).body.size",
            base + [("server.port", String(server.port)), ("http.response.status_code", "200")])
    }

    private func durations(_ outcome: (String, String)) -> [Int64] {
        metrics.timers(
            label: "http.client.request.duration", dimensions: base + [("server.port", String(server.port)), outcome]
        )
        .flatMap(\.values)
    }

    /// A backend without meters of its own (statsd's, opentelemetry-swift's) gets swift-metrics' default meter, which
    /// keeps the count in the meter object and records it through a recorder: one meter for every change recorded 1
    /// and -1, never the number of requests in flight.
    func testTheActiveCountIsKeptOnABackendWithoutMeters() throws {
        // Given
        final class RecordersOnly: MetricsFactory {
            let base: TestMetrics
            init(_ base: TestMetrics) { self.base = base }
            func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
                base.makeCounter(label: label, dimensions: dimensions)
            }
            func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
                base.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
            }
            func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
                base.makeTimer(label: label, dimensions: dimensions)
            }
            func destroyCounter(_ handler: any CounterHandler) { base.destroyCounter(handler) }
            func destroyRecorder(_ handler: any RecorderHandler) { base.destroyRecorder(handler) }
            func destroyTimer(_ handler: any TimerHandler) { base.destroyTimer(handler) }
        }
        server.route("GET", "/todos/:id") { _ in .json(string: #"{"id":7}"#) }
        let observer = MetricsObserver(factory: RecordersOnly(metrics))
        let connect = Connect(retryPolicy: nil, settings: Connect.Settings(observers: [observer]))

        // When
        _ = try connect.request(todo).wait()
        _ = try connect.request(todo).wait()

        // Then
        let active = try metrics.expectRecorder(
            "http.client.active_requests", base + [("server.port", String(server.port))])
        XCTAssertEqual(active.values, [1, 0, 1, 0])
    }

    func testA200IsOneDurationTheActiveCountBackToZeroAndItsSizes() throws {
        server.route("GET", "/todos/:id") { _ in .json(string: #"{"id":7}"#) }
        _ = try client().request(todo).wait()
        XCTAssertEqual(durations(("http.response.status_code", "200")).count, 1)
        let active = try activeRequests()
        XCTAssertEqual(active.values, [1, 0])
        // The sizes carry `server.port`, as OpenTelemetry's conventions ask of them as of the duration.
        let received = try bodySizes("response")
        XCTAssertEqual(received.values, [8])
        let sent = try bodySizes("request")
        XCTAssertEqual(sent.values, [0])
    }

    /// Once no send is active, no meter is kept for the factory: every factory made (one per test here, per screen in
    /// an app) and a meter per label set, one per host a client ever called, were kept for the life of the process.
    /// The count goes on from 0 on the next send.
    func testNoMeterIsKeptOnceNoSendIsActive() throws {
        server.route("GET", "/todos/:id") { _ in .json(string: #"{"id":7}"#) }
        let connect = client()
        _ = try connect.request(todo).wait()
        XCTAssertEqual(ActiveRequestMeters.shared.keptLabelSets(of: metrics), 0)
        _ = try connect.request(todo).wait()
        XCTAssertEqual(ActiveRequestMeters.shared.keptLabelSets(of: metrics), 0)
        XCTAssertEqual(try activeRequests().values, [1, 0, 1, 0])
    }

    /// Two calls that share one request (coalescing) record one send: one duration, one active request, one set of
    /// sizes, as the wire saw one request.
    func testCallsThatShareOneRequestRecordOneSend() throws {
        let gate = Promise<Void>()
        let transport = FakeTransport()
        transport.stub("/todos/7", with: FakeResponse.json(string: #"{"id":7}"#).released(by: gate.future))
        let connect = Connect(
            transport: transport, retryPolicy: nil,
            settings: Connect.Settings(
                coalescesIdenticalRequests: true, observers: [MetricsObserver(factory: metrics)]))
        let calls = [connect.request(todo), connect.request(todo)]
        gate.succeed(())
        for call in calls { _ = try call.wait(timeout: 10) }
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(durations(("http.response.status_code", "200")).count, 1)
        let active = try activeRequests()
        XCTAssertEqual(active.values, [1, 0])
        let received = try bodySizes("response")
        XCTAssertEqual(received.values, [8])
    }

    /// OpenTelemetry's `http.client.request.duration` is in seconds: the timer asks the backend to show it so (a
    /// loopback call takes far more than 60 nanoseconds, and far less than 60 seconds).
    func testTheDurationIsShownInSeconds() throws {
        server.route("GET", "/todos/:id") { _ in .json(string: #"{"id":7}"#) }
        _ = try client().request(todo).wait()
        let duration = try metrics.expectTimer(
            "http.client.request.duration",
            base + [("server.port", String(server.port)), ("http.response.status_code", "200")])
        XCTAssertEqual(duration.values.count, 1)
        let shown = duration.valueInPreferredUnit(atIndex: 0)
        XCTAssertGreaterThan(shown, 0)
        XCTAssertLessThan(shown, 60, "the duration is not shown in seconds")
    }

    /// A 4xx or 5xx is a response and a failure: OpenTelemetry labels it by its status code and by that code as its
    /// `error.type`, both, on the duration and on the body sizes.
    func testA404IsLabelledByItsStatusCodeAndByItAsItsErrorType() throws {
        // Given
        server.route("GET", "/todos/:id") { _ in .json(string: #"{"message":"no"}"#, status: 404) }
        let outcome = [("http.response.status_code", "404"), ("error.type", "404")]
        // When
        let result = try client().request(todo).waitForResult()
        // Then
        guard case .failure = result else { return XCTFail("expected the 404 to fail the call") }
        let duration = try metrics.expectTimer(
            "http.client.request.duration", base + [("server.port", String(server.port))] + outcome)
        XCTAssertEqual(duration.values.count, 1)
        let port = [("server.port", String(server.port))]
        XCTAssertEqual(
            try metrics.expectRecorder("http.client.response.body.size", base + port + outcome).values, [16])
        XCTAssertEqual(try metrics.expectRecorder("http.client.request.body.size", base + port + outcome).values, [0])
        XCTAssertEqual(metrics.timers(label: "http.client.request.duration").count, 1, "no duration without error.type")
    }

    /// A method OpenTelemetry does not know is `_OTHER`, and its name is on no metric: a label's values stay bounded.
    func testAMethodOpenTelemetryDoesNotKnowIsLabelledOther() throws {
        // Given
        server.route("PROPFIND", "/todos/:id") { _ in .json(string: "{}") }
        var propfind = todo
        propfind.method = "PROPFIND"
        let other = [
            ("http.request.method", "_OTHER"), ("url.template", "/todos/{id}"), ("server.address", "127.0.0.1"),
        ]
        // When
        _ = try client().request(propfind).wait()
        // Then
        let duration = try metrics.expectTimer(
            "http.client.request.duration",
            other + [("server.port", String(server.port)), ("http.response.status_code", "200")])
        XCTAssertEqual(duration.values.count, 1)
        XCTAssertEqual(
            try metrics.expectMeter("http.client.active_requests", other + [("server.port", String(server.port))])
                .values, [1, 0])
        let labels =
            metrics.timers(label: "http.client.request.duration").flatMap(\.dimensions)
            + metrics.meters(label: "http.client.active_requests").flatMap(\.dimensions)
            + metrics.recorders(label: "http.client.response.body.size").flatMap(\.dimensions)
        XCTAssertFalse(labels.contains { $0.1 == "PROPFIND" }, "\(labels)")
        XCTAssertFalse(labels.contains { $0.0 == "http.request.method_original" }, "\(labels)")
    }

    /// A middleware that changes the method an attempt goes out with (a `PATCH` tunnelled through `POST` with
    /// `X-HTTP-Method-Override`) makes the attempt's metrics labelled by the method sent, as `TracingObserver`'s span
    /// says it: they were labelled by the connector's method (`PATCH`), which never went out.
    func testAnAttemptsMetricsAreLabelledByTheMethodItWentOutWith() throws {
        // Given: the first attempt refused with a 503, the second answered
        let transport = FakeTransport()
        transport.stub(
            "/todos/7", with: [FakeResponse.status(503, headers: ["Retry-After": "0"]), .json(string: "{}")])
        let tunnel = AnyMiddleware { request, _, next in
            var request = request
            request.setValue(request.method.rawValue, forHTTPHeaderField: "X-HTTP-Method-Override")
            request.method = .post
            return next(request)
        }
        var patch = todo
        patch.method = .patch
        let sent = [("http.request.method", "POST"), ("url.template", "/todos/{id}"), ("server.address", "127.0.0.1")]
        let port = [("server.port", String(server.port))]
        // A `PATCH` with an `Idempotency-Key` is sent again after a 503.
        let connect = Connect(
            transport: transport, middlewares: [tunnel],
            retryPolicy: RetryPolicy(addsIdempotencyKey: true, clock: ImmediateRetryClock()),
            settings: Connect.Settings(observers: [MetricsObserver(factory: metrics)]))
        // When
        _ = try connect.request(patch).wait()
        // Then
        XCTAssertEqual(transport.requests.map(\.httpMethod), ["POST", "POST"])
        let ok = try metrics.expectTimer(
            "http.client.request.duration", sent + port + [("http.response.status_code", "200")])
        XCTAssertEqual(ok.values.count, 1)
        XCTAssertEqual(try metrics.expectMeter("http.client.active_requests", sent + port).values, [1, 0, 1, 0])
        XCTAssertEqual(
            try metrics.expectRecorder(
                "http.client.response.body.size", sent + port + [("http.response.status_code", "200")]
            ).values, [2])
        XCTAssertEqual(metrics.counterTotal(label: "swiftconnect.client.retries", dimensions: sent), 1)
        let labels =
            metrics.timers(label: "http.client.request.duration").flatMap(\.dimensions)
            + metrics.meters(label: "http.client.active_requests").flatMap(\.dimensions)
            + metrics.recorders(label: "http.client.request.body.size").flatMap(\.dimensions)
            + metrics.recorders(label: "http.client.response.body.size").flatMap(\.dimensions)
            + metrics.counters(label: "swiftconnect.client.retries").flatMap(\.dimensions)
        XCTAssertFalse(labels.contains { $0 == "http.request.method" && $1 == "PATCH" }, "\(labels)")
    }

    /// A send the call's end cut short (cancelled here) is told ended after the call's end: its body's size is labelled
    /// by the method it went out with, as its duration is. It was labelled by the connector's method (`PATCH`).
    func testTheSizeOfASendCutShortIsLabelledByTheMethodItWentOutWith() throws {
        // Given: a transport that never answers, and a `PATCH` tunnelled through `POST`
        let transport = FakeTransport.answering(.never)
        let tunnel = AnyMiddleware { request, _, next in
            var request = request
            request.setValue(request.method.rawValue, forHTTPHeaderField: "X-HTTP-Method-Override")
            request.method = .post
            return next(request)
        }
        var patch = todo
        patch.method = .patch
        // When: the app cancels the call once it is sent
        let call = client(transport, middlewares: [tunnel]).request(patch)
        XCTAssertEqual(transport.requests.count, 1)
        call.cancel()
        XCTAssertNotNil(try? call.waitForResult(timeout: 5))
        // Then
        let methods = { (metrics: [[(String, String)]]) in
            metrics.flatMap { $0 }.filter { $0.0 == "http.request.method" }.map(\.1)
        }
        XCTAssertEqual(methods(metrics.timers(label: "http.client.request.duration").map(\.dimensions)), ["POST"])
        XCTAssertEqual(methods(metrics.recorders(label: "http.client.request.body.size").map(\.dimensions)), ["POST"])
    }

    /// The observer's own list of known methods replaces OpenTelemetry's: a method on it is its own label, one off
    /// it (`GET` here) `_OTHER`.
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
        let methods = metrics.timers(label: "http.client.request.duration").flatMap(\.dimensions)
            .filter { $0.0 == "http.request.method" }.map(\.1)
        XCTAssertEqual(Set(methods), ["PROPFIND", "_OTHER"])
    }

    func testARetryIsCountedAndEachAttemptTimed() throws {
        let attempts = Locked(0)
        server.route("GET", "/todos/:id") { _ in
            attempts.withLock { count -> Int in
                count += 1
                return count
            } == 1 ? LocalServer.Response.status(503).withHeader("Retry-After", "0") : .json(string: "{}")
        }
        _ = try client().request(todo).wait()
        XCTAssertEqual(durations(("http.response.status_code", "503")).count, 1)
        XCTAssertEqual(durations(("http.response.status_code", "200")).count, 1)
        XCTAssertEqual(metrics.counterTotal(label: "swiftconnect.client.retries", dimensions: base), 1)
    }

    /// A retry whose attempt a middleware sends twice (a hedge) is still one retry: the counter counted each send.
    func testAHedgedRetryIsCountedOnce() throws {
        // Given: both sends of the first attempt are refused, both of the second answered
        let requests = Locked(0)
        server.route("GET", "/todos/:id") { _ in
            requests.withLock { count -> Int in
                count += 1
                return count
            } <= 2 ? LocalServer.Response.status(503).withHeader("Retry-After", "0") : .json(string: "{}")
        }
        let hedge = AnyMiddleware { request, _, next in
            let first = next(request)
            let second = next(request)
            return first.flatMap { response in second.map { _ in response } }
        }
        // When
        _ = try client(middlewares: [hedge]).request(todo).wait(timeout: 10)
        // Then
        XCTAssertEqual(requests.withLock { $0 }, 4)
        XCTAssertEqual(metrics.counterTotal(label: "swiftconnect.client.retries", dimensions: base), 1)
    }

    func testATokenRefreshIsCounted() throws {
        server.route("GET", "/todos/:id") { request in
            request.header("Authorization") == "Bearer new" ? .json(string: "{}") : .status(401)
        }
        let auth = AuthenticationMiddleware(credential: .bearer(token: "old")) { _ in
            Future(value: .bearer(token: "new"))
        }
        _ = try client(middlewares: [auth]).request(todo).wait()
        XCTAssertEqual(
            metrics.counterTotal(
                label: "swiftconnect.client.token_refreshes", dimensions: base + [("outcome", "success")]), 1)
    }

    func testATimeoutIsItsErrorTypeAndLeavesNoActiveRequest() throws {
        server.route("GET", "/todos/:id") { _ in LocalServer.Response.json(string: "{}").delayed(by: 5) }
        var slow = todo
        slow.timeout = 0.3
        guard case .failure(let error) = try client().request(slow).waitForResult() else {
            return XCTFail("expected the deadline to fail the call")
        }
        XCTAssertEqual((error as? ConnectError)?.kind, .timedOut)
        XCTAssertEqual(durations(("error.type", "timedOut")).count, 1)
        let active = try activeRequests()
        XCTAssertEqual(active.lastValue, 0)
    }

    /// An attempt abandoned at its `attemptTimeout` and retried with no wait is told ended after the next one
    /// started (a stage that maps the response sits between): both attempts end, and no request stays active.
    func testAnAttemptAbandonedAtItsTimeoutAndRetriedAtOnceEndsToo() throws {
        let transport = FakeTransport()
        transport.stub("/todos/7", with: [.never, .json(string: "{}")])
        let passThrough = AnyMiddleware { request, _, next in next(request).map { $0 } }
        let connect = Connect(
            transport: transport, middlewares: [passThrough],
            retryPolicy: RetryPolicy(maxAttempts: 2, attemptTimeout: 0.2, clock: ImmediateRetryClock()),
            settings: Connect.Settings(observers: [MetricsObserver(factory: metrics)]))

        _ = try connect.request(todo).wait(timeout: 10)

        XCTAssertEqual(durations(("error.type", "timedOut")).count, 1)
        XCTAssertEqual(durations(("http.response.status_code", "200")).count, 1)
        let active = try activeRequests()
        XCTAssertEqual(active.lastValue, 0)
    }

    func testCacheLookupsAndQueueWaitsAreRecorded() throws {
        server.route("GET", "/todos/:id") { _ in .json(string: "{}") }
        let connect = client(
            queue: RequestQueue(maxConcurrentRequests: 1), cache: ResponseCache(defaultRule: CacheRule(timeToLive: 60)))
        _ = try connect.request(todo).wait()
        _ = try connect.request(todo).wait()
        XCTAssertEqual(
            metrics.counterTotal(label: "swiftconnect.client.cache.lookups", dimensions: base + [("outcome", "miss")]),
            1)
        XCTAssertEqual(
            metrics.counterTotal(label: "swiftconnect.client.cache.lookups", dimensions: base + [("outcome", "hit")]), 1
        )
        XCTAssertEqual(
            metrics.timers(label: "swiftconnect.client.queue.wait", dimensions: base).flatMap(\.values).count, 1)
    }

    /// The waits are durations, as `http.client.request.duration` is: they ask the backend to show them in seconds,
    /// OpenTelemetry's unit for a duration, not in the nanoseconds a swift-metrics timer records.
    func testTheWaitsAreShownInSeconds() throws {
        // Given: a queue, and a network that is gone until the request is held (a loopback host is never held: a
        // fake transport stands for a remote server)
        let monitor = FakeConnectivityMonitor(.disconnected)
        let connect = client(
            FakeTransport.answering(.json(string: "{}")), middlewares: [ConnectivityMiddleware(monitor: monitor)],
            queue: RequestQueue(maxConcurrentRequests: 1))
        // When
        let call = connect.request(GetTodo(baseURL: URL(string: "https://api.example.com")!))
        monitor.set(.connected)
        _ = try call.wait()
        // Then
        let labels = [
            ("http.request.method", "GET"), ("url.template", "/todos/{id}"), ("server.address", "api.example.com"),
        ]
        for name in ["swiftconnect.client.queue.wait", "swiftconnect.client.offline.wait"] {
            let wait = try metrics.expectTimer(name, labels)
            XCTAssertEqual(wait.values.count, 1, name)
            XCTAssertEqual(wait.displayUnit, .seconds, name)
        }
    }

    /// A host names one server whatever its case (DNS names are case-insensitive, RFC 4343): `API.Example.com` and
    /// `api.example.com` are one `server.address`, not two series.
    func testTheServerAddressIsTheHostInLowerCase() throws {
        let connect = client(FakeTransport.answering(.json(string: "{}")))
        for host in ["API.Example.com", "api.example.com"] {
            _ = try connect.request(GetTodo(baseURL: URL(string: "https://\(host)")!)).wait()
        }
        let labels = [
            ("http.request.method", "GET"), ("url.template", "/todos/{id}"), ("server.address", "api.example.com"),
            ("server.port", "443"), ("http.response.status_code", "200"),
        ]
        let durations = metrics.timers(label: "http.client.request.duration")
        XCTAssertEqual(try metrics.expectTimer("http.client.request.duration", labels).values.count, 2, "\(durations)")
    }

    /// A request built elsewhere has no path template: it is labelled by its name as `swiftconnect.call`, and has
    /// no `url.template`, which OpenTelemetry defines as a path template (it was the name).
    func testARequestBuiltElsewhereIsLabelledByItsNameNotByATemplate() throws {
        server.route("GET", "/todos/:id") { _ in .json(string: "{}") }
        let request = ConnectRequest(url: server.baseURL.appendingPathComponent("todos/7"))
        _ = try client().response(for: request, name: "getTodo").wait()
        let labels = metrics.timers(label: "http.client.request.duration").flatMap(\.dimensions)
        XCTAssertTrue(labels.contains { $0 == "swiftconnect.call" && $1 == "getTodo" }, "\(labels)")
        XCTAssertFalse(labels.contains { $0.0 == "url.template" }, "\(labels)")
    }

    /// `url.template` is a path template: a query written into the connector's endpoint is no part of it.
    func testAQueryInTheEndpointIsNoPartOfTheTemplate() throws {
        let connect = client(FakeTransport.answering(.json(string: "{}")))
        _ = try connect.request(Route("/search?type=x", baseURL: URL(string: "https://api.example.com")!)).wait()
        let templates = metrics.timers(label: "http.client.request.duration").flatMap(\.dimensions)
            .filter { $0.0 == "url.template" }.map(\.1)
        XCTAssertEqual(templates, ["/search"])
    }

    /// A middleware that sends an attempt's request twice (a hedge) has two requests active, then none, and two
    /// durations: the gauge stayed at 1 and one duration was recorded.
    func testEachSendOfAHedgedAttemptIsActiveAndTimed() throws {
        // Given
        let transport = FakeTransport.answering(FakeResponse.json(string: "{}").delayed(by: 0.1))
        let hedge = AnyMiddleware { request, _, next in
            let first = next(request)
            let second = next(request)
            return first.flatMap { response in second.map { _ in response } }
        }
        // When
        _ = try client(transport, middlewares: [hedge]).request(todo).wait(timeout: 10)
        // Then
        XCTAssertEqual(transport.requests.count, 2)
        let active = try activeRequests()
        XCTAssertEqual(active.values, [1, 2, 1, 0])
        XCTAssertEqual(durations(("http.response.status_code", "200")).count, 2)
    }

    func testNoLabelCarriesTheURLOrTheID() throws {
        server.route("GET", "/todos/:id") { _ in .json(string: "{}") }
        _ = try client().request(todo).wait()
        let labels =
            metrics.timers(label: "http.client.request.duration").flatMap(\.dimensions)
            + metrics.meters(label: "http.client.active_requests").flatMap(\.dimensions)
            + metrics.recorders(label: "http.client.response.body.size").flatMap(\.dimensions)
        XCTAssertFalse(labels.isEmpty)
        for (name, value) in labels {
            XCTAssertFalse(value.contains("/todos/7"), "\(name)=\(value)")
            XCTAssertFalse(value.contains("http://"), "\(name)=\(value)")
        }
    }

    /// A send that a middleware's own error cut short is timed with the call's reason, as one its deadline cut short
    /// is: the error's type as `error.type`, not `cancelled`, which nobody did.
    func testASendCutShortByAMiddlewaresErrorIsLabelledWithThatErrorsType() throws {
        struct QuotaExceeded: Error {}
        let transport = FakeTransport.answering(FakeResponse.json(string: "{}").delayed(by: 30))
        let failing = AnyMiddleware { request, _, next in
            _ = next(request)
            return Future(error: QuotaExceeded())
        }
        let connect = Connect(
            transport: transport, middlewares: [failing], retryPolicy: RetryPolicy(maxAttempts: 1),
            settings: Connect.Settings(observers: [MetricsObserver(factory: metrics)]))

        XCTAssertThrowsError(try connect.request(todo).wait(timeout: 10)) { XCTAssertTrue($0 is QuotaExceeded) }

        XCTAssertEqual(durations(("error.type", "QuotaExceeded")).count, 1)
        XCTAssertEqual(durations(("error.type", "cancelled")).count, 0)
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
