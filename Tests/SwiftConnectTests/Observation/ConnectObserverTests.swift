import Foundation
@_spi(Observability) import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The event seam (`ConnectObserver`): what a client tells its observers about each call, in order, and what an
/// observer may add to each attempt.
final class ConnectObserverTests: XCTestCase {
    /// Keeps every call it is asked about and every event of each.
    final class RecordingObserver: ConnectObserver {
        let calls = Recorder<ConnectCall>()
        let events = Recorder<String>()
        /// A value read from the caller's task when the call starts.
        let taskValues = Recorder<String?>()
        let addsTraceparent: Bool

        init(addsTraceparent: Bool = false) {
            self.addsTraceparent = addsTraceparent
        }

        @TaskLocal static var traceID: String?

        func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? {
            calls.append(call)
            taskValues.append(Self.traceID)
            return Call(events: events, addsTraceparent: addsTraceparent)
        }

        struct Call: ConnectCallObserver {
            let events: Recorder<String>
            let addsTraceparent: Bool

            func record(_ event: ConnectEvent) {
                events.append(Self.describe(event))
            }

            func headerFields(forAttempt attempt: Int) -> HeaderFields {
                addsTraceparent ? ["traceparent": "00-trace-span\(attempt)-01"] : [:]
            }

            static func describe(_ event: ConnectEvent) -> String {
                switch event {
                case .attemptStarted(let attempt, let request):
                    // A call that shares another's request (coalescing) is marked: it sent nothing of its own.
                    let shared = request.sharesAnotherCallsRequest ? " shared" : ""
                    return "start \(attempt) \(request.value(forHTTPHeaderField: "traceparent") ?? "-")\(shared)"
                case .attemptEnded(let attempt, let status, let error, _, _):
                    return "end \(attempt) \(status.map(String.init) ?? error.map { "\($0.kind)" } ?? "?")"
                case .redirected(let status, let location): return "redirect \(status) \(location.path)"
                case .queueWaited: return "queued"
                case .connectivityWaited: return "held offline"
                case .cacheLookup(let hit): return hit ? "cache hit" : "cache miss"
                case .tokenRefreshStarted: return "refresh"
                case .tokenRefreshEnded(let succeeded): return "refreshed \(succeeded)"
                case .callEnded(let status, let error, let attempts):
                    let outcome = status.map(String.init) ?? (error as? ConnectError).map { "\($0.kind)" } ?? "?"
                    return "call \(outcome) after \(attempts)"
                }
            }
        }
    }

    private struct GetTodo: Connector {
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/todos/{id}" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: ParametersRepresentable? { Parameter.path(key: "id", value: "7") }
    }

    private func client(
        _ transport: some Transport, observer: RecordingObserver, middlewares: [any Middleware] = [],
        queue: RequestQueue? = nil, cache: ResponseCache? = nil
    ) -> Connect {
        Connect(
            transport: transport, middlewares: middlewares,
            retryPolicy: RetryPolicy(clock: ImmediateRetryClock()), requestQueue: queue, responseCache: cache,
            settings: Connect.Settings(observers: [observer]))
    }

    // MARK: - Attempts and the call

    func testAPlainCallIsOneAttemptThenItsEndNamedByTheConnectorAndItsTemplate() throws {
        let observer = RecordingObserver()
        let connect = client(FakeTransport.answering(.json(string: "{}")), observer: observer)
        _ = try connect.request(GetTodo()).wait()
        XCTAssertEqual(observer.events.values, ["start 1 -", "end 1 200", "call 200 after 1"])
        let call = try XCTUnwrap(observer.calls.values.first)
        XCTAssertEqual(call.name, "GetTodo")
        XCTAssertEqual(call.pathTemplate, "/todos/{id}")
        XCTAssertEqual(call.method, .get)
        XCTAssertEqual(call.request.url.path, "/todos/7")
    }

    /// A secret written into an endpoint's query reached every span name, metric label and log line that carries the
    /// template; it is hidden there as in the URL.
    /// A middleware that sends the attempt's request again (`next` twice) makes two sends of one attempt: each is told
    /// started and ended. The second's end was dropped as a repeat, so a tracer's span for it stayed open until the
    /// call ended, and was ended as cancelled.
    func testEachSendOfAnAttemptIsToldEnded() throws {
        let observer = RecordingObserver()
        let transport = FakeTransport()
        transport.stub("/todos/7", with: [.status(503), .json(string: "{}")])
        let connect = Connect(
            transport: transport, middlewares: [SendingAgainAfter503()], retryPolicy: nil,
            settings: Connect.Settings(observers: [observer]))
        _ = try connect.request(GetTodo()).wait()
        XCTAssertEqual(
            observer.events.values, ["start 1 -", "end 1 503", "start 1 -", "end 1 200", "call 200 after 1"])
    }

    /// The body size an attempt reports is the body's as it came: none for one that came content-encoded, decoded on
    /// its way (OpenTelemetry's `http.client.response.body.size` counts the bytes on the wire, and got the decoded
    /// size, several times more).
    func testAContentEncodedBodyReportsNoSize() throws {
        final class Sizes: ConnectObserver, ConnectCallObserver {
            let received = Recorder<Int64?>()
            func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? { self }
            func record(_ event: ConnectEvent) {
                if case .attemptEnded(_, _, _, _, let bytes) = event { received.append(bytes) }
            }
        }
        let sizes = Sizes()
        let transport = FakeTransport()
        transport.stub("/plain", with: .json(string: "{}"))
        transport.stub("/zipped", with: .json(string: "{}", headers: ["Content-Encoding": "gzip"]))
        let connect = Connect(
            transport: transport, retryPolicy: nil, settings: Connect.Settings(observers: [sizes]))
        let base = URL(string: "https://api.example.com")!
        _ = try connect.request(Route("/plain", baseURL: base)).wait()
        _ = try connect.request(Route("/zipped", baseURL: base)).wait()
        XCTAssertEqual(sizes.received.values, [2, nil])
    }

    private struct SendingAgainAfter503: Middleware {
        func intercept(_ request: ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
            ConnectResponse
        > {
            next(request).flatMap { $0.statusCode == 503 ? next(request) : Future(value: $0) }
        }
    }

    /// A call ends after each of its sends is told ended. A hedge waiting for its second send, which completed on
    /// another thread while that thread was still telling the observers, heard of it first: the call ended, and was
    /// told ended, before that send was (a metrics observer then counted a send answered 202 as cancelled).
    func testACallIsToldEndedAfterEachOfItsSends() throws {
        final class SlowToHearTheSecondEnd: ConnectObserver, ConnectCallObserver {
            let events = Recorder<String>()
            let hearingTheSecondEnd = DispatchSemaphore(value: 0)
            let callEnded = DispatchSemaphore(value: 0)
            func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? { self }
            func record(_ event: ConnectEvent) {
                if case .attemptEnded(_, 202?, _, _, _) = event {
                    hearingTheSecondEnd.signal()
                    // Without the order kept, the call ends meanwhile; with it, it cannot until this returns.
                    _ = callEnded.wait(timeout: .now() + 0.5)
                }
                if case .callEnded = event { callEnded.signal() }
                events.append(RecordingObserver.Call.describe(event))
            }
        }
        struct Hedge: Middleware {
            func intercept(_ request: ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
                ConnectResponse
            > {
                let first = next(request)
                let second = next(request)
                return first.flatMap { response in second.map { _ in response } }
            }
        }
        // Given: two sends of one attempt, each answered when its gate opens
        let (firstGate, secondGate) = (Promise<Void>(), Promise<Void>())
        let transport = FakeTransport()
        transport.stub(
            "/todos/7",
            with: [
                .json(string: "{}").released(by: firstGate.future),
                .json(string: "{}", status: 202).released(by: secondGate.future),
            ])
        let observer = SlowToHearTheSecondEnd()
        let connect = Connect(
            transport: transport, middlewares: [Hedge()], retryPolicy: nil,
            settings: Connect.Settings(observers: [observer]))
        let call = connect.request(GetTodo())
        // When: the second send completes on another thread, whose observers are still hearing of it when the first
        // completes here
        DispatchQueue.global().async { secondGate.succeed(()) }
        XCTAssertEqual(observer.hearingTheSecondEnd.wait(timeout: .now() + 10), .success)
        firstGate.succeed(())
        // Then
        _ = try call.wait(timeout: 10)
        XCTAssertEqual(
            observer.events.values, ["start 1 -", "start 1 -", "end 1 200", "end 1 202", "call 200 after 1"])
    }

    /// A hedge: a middleware that sends its attempt's request twice and cancels the slower send once the other is
    /// answered. The slower send ends as cancelled (the middleware cancelled it; the core cannot tell a hedge's loser
    /// from any other send a middleware cancels), after the call's end, which did not wait for it and tells how the
    /// call went, as `ConnectCallObserver` documents.
    func testTheLosingSendOfAHedgeEndsAsCancelledAfterTheCallsEnd() throws {
        struct Hedge: Middleware {
            func intercept(_ request: ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
                ConnectResponse
            > {
                let first = next(request)
                let second = next(request)
                let promise = Promise<ConnectResponse>()
                // The first answer wins; then the other send is cancelled.
                first.observe { result in
                    promise.completeIfPending(with: result)
                    second.cancel()
                }
                second.observe { result in
                    promise.completeIfPending(with: result)
                    first.cancel()
                }
                return promise.future
            }
        }
        // Given: two sends of one attempt; the second is answered first
        let transport = ManualTransport()
        let observer = RecordingObserver()
        let connect = Connect(
            transport: transport, middlewares: [Hedge()], retryPolicy: nil,
            settings: Connect.Settings(observers: [observer]))
        let call = connect.request(GetTodo())
        XCTAssertEqual(transport.requests.count, 2)
        // When
        transport.respond(to: 1, body: Data("{}".utf8))
        // Then
        _ = try call.wait(timeout: 10)
        XCTAssertEqual(transport.cancellations.value, 1, "the slower send was cancelled")
        XCTAssertEqual(
            observer.events.values, ["start 1 -", "start 1 -", "end 1 200", "call 200 after 1", "end 1 cancelled"])
    }

    /// A hedge whose second send leaves the queue after the call ended (the first send answered it): the call's end
    /// is its last event. The second send's queue wait was told after the call's end (an observer that closes its
    /// span or its figures at the end heard of a wait of a call already over).
    func testAHedgesSecondSendLeavingTheQueueAfterTheCallsEndIsNotTold() throws {
        struct LateHedge: Middleware {
            let second: Future<Void>
            func intercept(_ request: ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
                ConnectResponse
            > {
                let first = next(request)
                // The second send goes when the test says, and nobody cancels it.
                second.observe { _ in _ = next(request) }
                return first
            }
        }
        // Given: a queue of one slot; the hedged call's first send holds it, another client's call waits in it, then
        // the hedge's second send waits behind that call
        let transport = ManualTransport()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let secondSend = Promise<Void>()
        let observer = RecordingObserver()
        let hedged = Connect(
            transport: transport, middlewares: [LateHedge(second: secondSend.future)], retryPolicy: nil,
            requestQueue: queue, settings: Connect.Settings(observers: [observer]))
        let other = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let call = hedged.request(GetTodo())
        let otherCall = other.request(GetTodo())
        secondSend.succeed(())
        // When: the first send answers (the call ends), then the other call's request, which lets the second send out
        // of the queue
        transport.respond(to: 0, body: Data("{}".utf8))
        XCTAssertNotNil(value(of: call))
        transport.respond(to: 1, body: Data("{}".utf8))
        XCTAssertNotNil(value(of: otherCall))
        // Then: the second send was not sent, and its wait was not told after the call's end
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(observer.events.values, ["queued", "start 1 -", "end 1 200", "call 200 after 1"])
    }

    /// A request a stage hands on after the call's deadline passed is not sent. It went to the transport and was
    /// cancelled there, and observers heard of a send starting after the call's end (a metrics observer counted an
    /// active request and a cancelled one for a call that had timed out with none).
    func testNothingIsSentAfterTheCallEnded() throws {
        final class Ends: ConnectObserver, ConnectCallObserver {
            let events = Recorder<String>()
            let callEnded = DispatchSemaphore(value: 0)
            func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? { self }
            func record(_ event: ConnectEvent) {
                events.append(RecordingObserver.Call.describe(event))
                if case .callEnded = event { callEnded.signal() }
            }
        }
        // Given: a stage that hands the request on only once the call's deadline has passed
        let observer = Ends()
        let slowStage = AnyMiddleware { request, _, next in
            _ = observer.callEnded.wait(timeout: .now() + 10)
            return next(request)
        }
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(
            transport: transport, middlewares: [slowStage], retryPolicy: nil,
            settings: Connect.Settings(observers: [observer]))
        var options = RequestOptions()
        options.timeout = 0.1
        // When
        let result = try connect.request(GetTodo(), options: options).waitForResult(timeout: 10)
        // Then
        guard case .failure(let error) = result else { return XCTFail("expected the deadline to end the call") }
        XCTAssertEqual((error as? ConnectError)?.kind, .timedOut)
        XCTAssertEqual(transport.requests.count, 0)
        XCTAssertEqual(observer.events.values, ["call timedOut after 0"], "no attempt was sent")
    }

    func testATemplateHidesTheSensitiveValuesOfItsQuery() throws {
        let observer = RecordingObserver()
        let connect = client(FakeTransport.answering(.json(string: "{}")), observer: observer)
        let route = Route("/items?api_key=SECRET-KEY-1&page=2", baseURL: URL(string: "https://api.example.com")!)
        _ = try connect.request(route).wait()
        let call = try XCTUnwrap(observer.calls.values.first)
        XCTAssertEqual(call.pathTemplate, "/items?api_key=<redacted>&page=2")
    }

    /// OpenTelemetry's `url.template` is the template of the URL's whole path: a base URL's `/v1` was left out, so
    /// `/v1/todos/{id}` and `/v2/todos/{id}` shared one label.
    func testATemplateStartsWithTheBaseURLsPathJoinedAsTheURLIs() throws {
        let cases: [(base: String, endpoint: String, template: String, path: String)] = [
            ("https://api.example.com/v1", "/todos/{id}", "/v1/todos/{id}", "/v1/todos/7"),
            ("https://api.example.com/v1/", "/todos/{id}", "/v1/todos/{id}", "/v1/todos/7"),
            ("https://api.example.com/v1//", "todos/{id}", "/v1/todos/{id}", "/v1/todos/7"),
            ("https://api.example.com", "todos/{id}", "/todos/{id}", "/todos/7"),
            ("https://api.example.com/v1?tenant=3", "/todos/{id}?page=2", "/v1/todos/{id}?page=2", "/v1/todos/7"),
            ("https://api.example.com/v1/items", "?id={id}", "/v1/items?id={id}", "/v1/items"),
        ]
        for (base, endpoint, template, path) in cases {
            let observer = RecordingObserver()
            let connect = client(FakeTransport.answering(.json(string: "{}")), observer: observer)
            let route = Route(endpoint, baseURL: URL(string: base)!, parameters: Parameter.path(key: "id", value: "7"))
            _ = try connect.request(route).wait()
            let call = try XCTUnwrap(observer.calls.values.first)
            XCTAssertEqual(call.pathTemplate, template, "\(base) + \(endpoint)")
            XCTAssertEqual(call.request.url.path, path, "\(base) + \(endpoint)")
        }
    }

    /// A relative connector takes the path of the client's server.
    func testARelativeConnectorsTemplateStartsWithTheServersPath() throws {
        let observer = RecordingObserver()
        let connect = Connect(
            transport: FakeTransport.answering(.json(string: "{}")),
            configuration: ServerConfiguration(baseURL: URL(string: "https://api.example.com/api/v2/")!),
            settings: Connect.Settings(observers: [observer]))
        _ = try connect.request(Route("/todos/{id}", parameters: Parameter.path(key: "id", value: "7"))).wait()
        let call = try XCTUnwrap(observer.calls.values.first)
        XCTAssertEqual(call.pathTemplate, "/api/v2/todos/{id}")
        XCTAssertEqual(call.request.url.path, "/api/v2/todos/7")
    }

    func testARequestBuiltElsewhereIsNamedByItsNameNotByItsConcretePath() throws {
        let observer = RecordingObserver()
        let connect = client(FakeTransport.answering(.json(string: "{}")), observer: observer)
        let request = ConnectRequest(url: URL(string: "https://api.example.com/todos/7")!)
        _ = try connect.response(for: request, name: "getTodo").wait()
        let call = try XCTUnwrap(observer.calls.values.first)
        XCTAssertEqual(call.name, "getTodo")
        XCTAssertEqual(call.pathTemplate, "", "the concrete path holds an ID: no label may carry it")
    }

    func testARetriedCallTellsEachAttempt() throws {
        let transport = FakeTransport()
        transport.stub("/todos/7", with: [.status(503, headers: ["Retry-After": "0"]), .json(string: "{}")])
        let observer = RecordingObserver()
        _ = try client(transport, observer: observer).request(GetTodo()).wait()
        XCTAssertEqual(
            observer.events.values, ["start 1 -", "end 1 503", "start 2 -", "end 2 200", "call 200 after 2"])
    }

    func testAFailureBeforeAnyResponseIsTheAttemptsAndTheCallsEnd() throws {
        let observer = RecordingObserver()
        let connect = Connect(
            transport: FakeTransport.answering(.failure(URLError(.cannotConnectToHost))),
            retryPolicy: RetryPolicy(maxAttempts: 1), settings: Connect.Settings(observers: [observer]))
        XCTAssertNotNil(connectError(of: connect.request(GetTodo())))
        XCTAssertEqual(observer.events.values, ["start 1 -", "end 1 cannotConnect", "call cannotConnect after 1"])
    }

    func testAnErrorStatusTheHandlerTurnsIntoAnErrorStillEndsWithItsStatus() throws {
        let observer = RecordingObserver()
        let connect = client(FakeTransport.answering(.status(404)), observer: observer)
        XCTAssertEqual(connectError(of: connect.request(GetTodo()))?.statusCode, 404)
        XCTAssertEqual(observer.events.values, ["start 1 -", "end 1 404", "call 404 after 1"])
    }

    func testAnAttemptsEndSaysHowManyBodyBytesWentEachWay() throws {
        final class Sizes: ConnectObserver, ConnectCallObserver {
            let sizes = Recorder<String>()
            func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? { self }
            func record(_ event: ConnectEvent) {
                guard case .attemptEnded(_, _, _, let sent, let received) = event else { return }
                sizes.append("\(sent.map(String.init) ?? "-") \(received.map(String.init) ?? "-")")
            }
        }
        let observer = Sizes()
        let connect = Connect(
            transport: FakeTransport.answering(.json(string: #"{"id":1}"#)),
            settings: Connect.Settings(observers: [observer]))
        var request = ConnectRequest(method: .post, url: URL(string: "https://api.example.com/todos")!)
        request.body = .bytes(Data("abc".utf8))
        _ = try connect.response(for: request).wait()
        _ = try connect.request(GetTodo()).wait()
        // A stream of known length went out as that many bytes (its `Content-Length`); one of unknown length is
        // not known here.
        let chunks = AsyncStream<Data> { continuation in
            continuation.yield(Data("ab".utf8))
            continuation.yield(Data("cde".utf8))
            continuation.finish()
        }
        request.body = .stream(ConnectRequest.OneShotStream(chunks, length: 5))
        _ = try connect.response(for: request).wait()
        request.body = .stream(ConnectRequest.OneShotStream(AsyncStream<Data> { $0.finish() }))
        _ = try connect.response(for: request).wait()
        XCTAssertEqual(observer.sizes.values, ["3 8", "0 8", "5 8", "- 8"])

        // An attempt that failed before anything was sent (no connection, no name, no TLS) sent no body: its size
        // is not told, which metrics recorded as the whole body for each attempt. One lost on the way may have.
        for (code, told) in [
            (URLError.Code.cannotConnectToHost, "-"), (.cannotFindHost, "-"), (.networkConnectionLost, "3"),
        ] {
            let failing = Connect(
                transport: FakeTransport.answering(.failure(URLError(code))), retryPolicy: nil,
                settings: Connect.Settings(observers: [observer]))
            request.body = .bytes(Data("abc".utf8))
            _ = try failing.response(for: request).waitForResult(timeout: 10)
            XCTAssertEqual(observer.sizes.values.last, "\(told) -", "\(code)")
        }
    }

    // MARK: - Stages

    func testATokenRefreshIsToldBetweenTheAttempts() throws {
        let transport = FakeTransport()
        transport.stub("/todos/7", with: [.status(401), .json(string: "{}")])
        let auth = AuthenticationMiddleware(credential: .bearer(token: "old")) { _ in
            Future(value: .bearer(token: "new"))
        }
        let observer = RecordingObserver()
        _ = try client(transport, observer: observer, middlewares: [auth]).request(GetTodo()).wait()
        XCTAssertEqual(
            observer.events.values,
            ["start 1 -", "end 1 401", "refresh", "refreshed true", "start 2 -", "end 2 200", "call 200 after 2"])
    }

    func testTheCacheTellsAHitAndAMissAndAHitSendsNothing() throws {
        let observer = RecordingObserver()
        let connect = client(
            FakeTransport.answering(.json(string: "{}")), observer: observer,
            cache: ResponseCache(defaultRule: CacheRule(timeToLive: 60)))
        _ = try connect.request(GetTodo()).wait()
        _ = try connect.request(GetTodo()).wait()
        XCTAssertEqual(
            observer.events.values,
            ["cache miss", "start 1 -", "end 1 200", "call 200 after 1", "cache hit", "call 200 after 1"])
    }

    func testTheQueueTellsTheWait() throws {
        let observer = RecordingObserver()
        let connect = client(
            FakeTransport.answering(.json(string: "{}")), observer: observer,
            queue: RequestQueue(maxConcurrentRequests: 1))
        _ = try connect.request(GetTodo()).wait()
        XCTAssertEqual(observer.events.values, ["queued", "start 1 -", "end 1 200", "call 200 after 1"])
    }

    func testARequestHeldWhileOfflineIsTold() throws {
        let monitor = FakeConnectivityMonitor(.disconnected)
        let observer = RecordingObserver()
        let connect = client(
            FakeTransport.answering(.json(string: "{}")), observer: observer,
            middlewares: [ConnectivityMiddleware(monitor: monitor)])
        let future = connect.request(GetTodo())
        XCTAssertEqual(observer.events.values, [], "held: nothing sent yet")
        monitor.set(.connected)
        _ = try future.wait()
        XCTAssertEqual(observer.events.values, ["held offline", "start 1 -", "end 1 200", "call 200 after 1"])
    }

    func testARedirectTheCoreFollowsIsTold() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/old") { _ in .redirect(to: "/new") }
        server.route("GET", "/new") { _ in .json(string: "{}") }
        let observer = RecordingObserver()
        let connect = client(URLSessionTransport(), observer: observer)
        _ = try connect.request(ClientFixtures.Endpoint(baseURL: server.baseURL, endpoint: "/old")).wait()
        XCTAssertEqual(
            observer.events.values, ["start 1 -", "redirect 302 /new", "end 1 200", "call 200 after 1"])
    }

    // MARK: - What an observer adds, and the caller's context

    func testAnObserverAddsItsFieldsToEachAttempt() throws {
        let transport = FakeTransport()
        transport.stub("/todos/7", with: [.status(503, headers: ["Retry-After": "0"]), .json(string: "{}")])
        let observer = RecordingObserver(addsTraceparent: true)
        _ = try client(transport, observer: observer).request(GetTodo()).wait()
        XCTAssertEqual(
            transport.requests.map { $0.value(forHTTPHeaderField: "traceparent") },
            ["00-trace-span1-01", "00-trace-span2-01"])
        XCTAssertEqual(observer.events.values.first, "start 1 00-trace-span1-01")
    }

    // MARK: - Coalescing

    /// Keeps the events of each call apart, in the order the calls started.
    final class PerCallObserver: ConnectObserver {
        private let calls = Recorder<Recorder<String>>()
        /// Whether each call adds a field to its attempts' requests, and notes `fields N` when asked for it.
        let addsFields: Bool

        init(addsFields: Bool = false) {
            self.addsFields = addsFields
        }

        struct Call: ConnectCallObserver {
            let events: Recorder<String>
            let addsFields: Bool

            func record(_ event: ConnectEvent) {
                events.append(RecordingObserver.Call.describe(event))
            }

            func headerFields(forAttempt attempt: Int) -> HeaderFields {
                guard addsFields else { return [:] }
                events.append("fields \(attempt)")
                return ["traceparent": "00-trace-span\(attempt)-01"]
            }
        }

        func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? {
            let events = Recorder<String>()
            calls.append(events)
            return Call(events: events, addsFields: addsFields)
        }

        func events(ofCall index: Int) -> [String] {
            let calls = calls.values
            return index < calls.count ? calls[index].values : []
        }
    }

    private func coalescing(_ transport: some Transport, observer: PerCallObserver) -> Connect {
        Connect(
            transport: transport, retryPolicy: nil,
            settings: Connect.Settings(coalescesIdenticalRequests: true, observers: [observer]))
    }

    /// A call that joins an identical one in flight (coalescing) is one attempt to its observers, as its end says
    /// (`attempts: 1`), its start marked as sharing the other's request: a tracer makes its span, metrics count no
    /// request of its own.
    func testACallThatJoinsAnIdenticalOneIsToldItsAttempt() throws {
        let observer = PerCallObserver()
        let transport = ManualTransport()
        let connect = coalescing(transport, observer: observer)
        let first = connect.request(GetTodo())
        let joined = connect.request(GetTodo())
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(observer.events(ofCall: 1), ["start 1 - shared"], "the shared request is at the transport")
        transport.respond(to: 0, body: Data("{}".utf8))
        XCTAssertNotNil(value(of: first))
        XCTAssertNotNil(value(of: joined))
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(observer.events(ofCall: 0), ["start 1 -", "end 1 200", "call 200 after 1"])
        XCTAssertEqual(observer.events(ofCall: 1), ["start 1 - shared", "end 1 200", "call 200 after 1"])
    }

    /// A call that joined one waiting in the queue starts its attempt when the shared request reaches the transport.
    func testACallThatJoinsOneWaitingInTheQueueStartsWithIt() throws {
        let observer = PerCallObserver()
        let transport = ManualTransport()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        queue.pause()
        let connect = Connect(
            transport: transport, retryPolicy: nil, requestQueue: queue,
            settings: Connect.Settings(coalescesIdenticalRequests: true, observers: [observer]))
        let first = connect.request(GetTodo())
        let joined = connect.request(GetTodo())
        XCTAssertEqual(observer.events(ofCall: 1), [], "nothing is sent yet")
        queue.resume()
        XCTAssertEqual(observer.events(ofCall: 1), ["queued", "start 1 - shared"])
        transport.respond(to: 0, status: 503)
        XCTAssertEqual(connectError(of: first)?.statusCode, 503)
        XCTAssertEqual(connectError(of: joined)?.statusCode, 503)
        XCTAssertEqual(observer.events(ofCall: 1), ["queued", "start 1 - shared", "end 1 503", "call 503 after 1"])
    }

    /// A call that joined one waiting in the queue waited in it too: it hears its wait, from when it joined, before
    /// its attempt starts, as the call whose request it is does (a tracer's span shows why the attempt began late).
    func testACallThatJoinsOneWaitingInTheQueueHearsItsWait() throws {
        // Given: two identical calls sharing a request that waits in the queue
        let observer = PerCallObserver()
        let waits = QueueWaits()
        let transport = ManualTransport()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        queue.pause()
        let connect = Connect(
            transport: transport, retryPolicy: nil, requestQueue: queue,
            settings: Connect.Settings(coalescesIdenticalRequests: true, observers: [observer, waits]))
        let first = connect.request(GetTodo())
        let joined = connect.request(GetTodo())
        // When
        queue.resume()
        transport.respond(to: 0, body: Data("{}".utf8))
        // Then
        XCTAssertNotNil(value(of: first))
        XCTAssertNotNil(value(of: joined))
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(observer.events(ofCall: 0), ["queued", "start 1 -", "end 1 200", "call 200 after 1"])
        XCTAssertEqual(observer.events(ofCall: 1), ["queued", "start 1 - shared", "end 1 200", "call 200 after 1"])
        let seconds = waits.calls.values.map(\.values)
        XCTAssertEqual(seconds.map(\.count), [1, 1])
        if seconds.map(\.count) == [1, 1] {
            XCTAssertLessThanOrEqual(seconds[1][0], seconds[0][0], "the call that joined waited from when it joined")
        }
    }

    /// Keeps, per call, the seconds of each queue wait it hears.
    private final class QueueWaits: ConnectObserver {
        let calls = Recorder<Recorder<TimeInterval>>()

        struct Call: ConnectCallObserver {
            let waits: Recorder<TimeInterval>

            func record(_ event: ConnectEvent) {
                if case .queueWaited(let seconds) = event { waits.append(seconds) }
            }
        }

        func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? {
            let waits = Recorder<TimeInterval>()
            calls.append(waits)
            return Call(waits: waits)
        }
    }

    /// An observer of a call that joined a shared request may cancel that call as it hears its attempt start (a budget
    /// spent, a test that stops there): the call ends, cancelled, instead of waiting for a lock its own thread holds
    /// while it tells its observers.
    func testAnObserverThatCancelsAJoinedCallAsItStartsEndsIt() throws {
        // Given: two identical calls sharing a request that waits in the queue; an observer that cancels the second
        // call when it hears its attempt start
        let joined = Guarded<Future<Data>?>(nil)
        let observer = PerCallObserver()
        let canceller = CancellingOnStart(call: 1) { joined.snapshot?.cancel() }
        let transport = ManualTransport()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        queue.pause()
        let connect = Connect(
            transport: transport, retryPolicy: nil, requestQueue: queue,
            settings: Connect.Settings(coalescesIdenticalRequests: true, observers: [observer, canceller]))
        let first = connect.request(GetTodo())
        joined.withLock { $0 = connect.request(GetTodo()) }
        // When: the shared request reaches the transport's door (on another thread: a hang fails the test, bounded)
        let resumed = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            queue.resume()
            resumed.signal()
        }
        // Then
        XCTAssertEqual(resumed.wait(timeout: .now() + 5), .success, "the call's own thread waited for itself")
        XCTAssertEqual(connectError(of: joined.snapshot!)?.kind, .cancelled)
        XCTAssertEqual(transport.requests.count, 1)
        guard transport.requests.count == 1 else { return }
        transport.respond(to: 0, body: Data("{}".utf8))
        XCTAssertNotNil(value(of: first))
        // As any call cut short hears it (see the test of a call that leaves a shared request).
        XCTAssertEqual(
            observer.events(ofCall: 1), ["queued", "start 1 - shared", "call cancelled after 1", "end 1 cancelled"])
    }

    /// Runs `cancel` when the call it was asked about in position `call` (from 0) hears its attempt start.
    private final class CancellingOnStart: ConnectObserver {
        let call: Int
        let cancel: @Sendable () -> Void
        private let asked = Counter()

        init(call: Int, cancel: @escaping @Sendable () -> Void) {
            self.call = call
            self.cancel = cancel
        }

        struct Call: ConnectCallObserver {
            let cancel: (@Sendable () -> Void)?

            func record(_ event: ConnectEvent) {
                if case .attemptStarted = event { cancel?() }
            }
        }

        func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? {
            asked.increment()
            return Call(cancel: asked.value == self.call + 1 ? cancel : nil)
        }
    }

    /// A call that joined a shared request the wire check then refuses (a middleware's field with a line break) hears
    /// its attempt start at the transport's door and end with the refusal, as the call whose request it is does, and
    /// as it would alone: not its call's end only.
    func testACallThatJoinsARequestTheWireCheckRefusesIsToldItsAttempt() throws {
        // Given: two identical calls sharing a request that waits in the queue
        let observer = PerCallObserver()
        let transport = ManualTransport()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        queue.pause()
        let connect = Connect(
            transport: transport, middlewares: [.adapter { $0.setValue("a\nb", forHTTPHeaderField: "X-A") }],
            retryPolicy: nil, requestQueue: queue,
            settings: Connect.Settings(coalescesIdenticalRequests: true, observers: [observer]))
        let first = connect.request(GetTodo())
        let joined = connect.request(GetTodo())
        // When: the shared request reaches the wire check
        queue.resume()
        // Then
        XCTAssertEqual(connectError(of: first)?.kind, .invalidRequest)
        XCTAssertEqual(connectError(of: joined)?.kind, .invalidRequest)
        XCTAssertEqual(transport.requests.count, 0)
        let alone = ["start 1 -", "end 1 invalidRequest", "call invalidRequest after 1"]
        XCTAssertEqual(observer.events(ofCall: 0), ["queued"] + alone, "the call whose request waited in the queue")
        XCTAssertEqual(
            observer.events(ofCall: 1), ["queued", "start 1 - shared"] + alone.dropFirst(),
            "the call that waited with it")
    }

    /// A call that leaves a shared request (cancelled) hears its attempt end after its own end, as cancelled, as any
    /// call cut short does; the call still sharing it hears the answer.
    func testACallThatLeavesASharedRequestIsToldItsAttemptEndedCancelled() throws {
        let observer = PerCallObserver()
        let transport = ManualTransport()
        let connect = coalescing(transport, observer: observer)
        let first = connect.request(GetTodo())
        let joined = connect.request(GetTodo())
        joined.cancel()
        XCTAssertEqual(connectError(of: joined)?.kind, .cancelled)
        XCTAssertEqual(observer.events(ofCall: 1), ["start 1 - shared", "call cancelled after 1", "end 1 cancelled"])
        transport.respond(to: 0, body: Data("{}".utf8))
        XCTAssertNotNil(value(of: first))
        XCTAssertEqual(observer.events(ofCall: 1), ["start 1 - shared", "call cancelled after 1", "end 1 cancelled"])
        XCTAssertEqual(observer.events(ofCall: 0), ["start 1 -", "end 1 200", "call 200 after 1"])
    }

    /// The call whose request the others share hears nothing of it once it has left (cancelled): its attempt ends
    /// after its own end, as cancelled, and the answer that comes later for the others is not told to it as its own.
    func testTheCallWhoseRequestIsSharedHearsNothingOfItAfterItLeft() throws {
        let observer = PerCallObserver()
        let transport = ManualTransport()
        let connect = coalescing(transport, observer: observer)
        let first = connect.request(GetTodo())
        let joined = connect.request(GetTodo())
        first.cancel()
        XCTAssertEqual(connectError(of: first)?.kind, .cancelled)
        transport.respond(to: 0, body: Data("{}".utf8))
        XCTAssertNotNil(value(of: joined))
        XCTAssertEqual(observer.events(ofCall: 0), ["start 1 -", "call cancelled after 1", "end 1 cancelled"])
        XCTAssertEqual(observer.events(ofCall: 1), ["start 1 - shared", "end 1 200", "call 200 after 1"])
    }

    /// The same, when it leaves before the shared request reaches the transport (waiting in the queue): it hears of
    /// no send after its end, and is not asked for fields to add to it (a tracer would start a span nothing ends). The
    /// request then goes for the call that joined it, whose start is not marked shared: metrics count it as sent.
    func testTheCallWhoseQueuedRequestIsSharedHearsOfNoSendAfterItLeft() throws {
        let observer = PerCallObserver(addsFields: true)
        let transport = ManualTransport()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        queue.pause()
        let connect = Connect(
            transport: transport, retryPolicy: nil, requestQueue: queue,
            settings: Connect.Settings(coalescesIdenticalRequests: true, observers: [observer]))
        let first = connect.request(GetTodo())
        let joined = connect.request(GetTodo())
        first.cancel()
        queue.resume()
        transport.respond(to: 0, body: Data("{}".utf8))
        XCTAssertNotNil(value(of: joined))
        XCTAssertEqual(observer.events(ofCall: 0), ["call cancelled after 0"], "it sent nothing")
        // The request went for the joined call: with its fields (its trace context), as it would have alone.
        XCTAssertEqual(
            observer.events(ofCall: 1),
            ["queued", "fields 1", "start 1 00-trace-span1-01", "end 1 200", "call 200 after 1"])
        XCTAssertEqual(transport.requests.first?.value(forHTTPHeaderField: "traceparent"), "00-trace-span1-01")
    }

    /// A middleware that sends its attempt's request twice at once (a hedge) gets one request when they are identical
    /// and coalesced: its call hears one send, not a second that never went out.
    func testAHedgeThatJoinsItsOwnSendIsToldOneSend() throws {
        struct SendingTwiceAtOnce: Middleware {
            func intercept(_ request: ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
                ConnectResponse
            > {
                let first = next(request)
                let second = next(request)
                return first.flatMap { _ in second }
            }
        }
        let observer = PerCallObserver()
        let transport = ManualTransport()
        let connect = Connect(
            transport: transport, middlewares: [SendingTwiceAtOnce()], retryPolicy: nil,
            settings: Connect.Settings(coalescesIdenticalRequests: true, observers: [observer]))
        let call = connect.request(GetTodo())
        XCTAssertEqual(transport.requests.count, 1)
        transport.respond(to: 0, body: Data("{}".utf8))
        XCTAssertNotNil(value(of: call))
        XCTAssertEqual(observer.events(ofCall: 0), ["start 1 -", "end 1 200", "call 200 after 1"])
    }

    func testAFutureCallIsObservedInTheCallersTask() throws {
        let observer = RecordingObserver()
        let connect = client(FakeTransport.answering(.json(string: "{}")), observer: observer)
        let future = RecordingObserver.$traceID.withValue("trace-1") { connect.request(GetTodo()) }
        _ = try future.wait()
        XCTAssertEqual(observer.taskValues.values, ["trace-1"])
    }

    func testAnObserverThatDeclinesACallHearsNothing() throws {
        struct Declining: ConnectObserver {
            func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? { nil }
        }
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(transport: transport, settings: Connect.Settings(observers: [Declining()]))
        _ = try connect.request(GetTodo()).wait()
        XCTAssertEqual(transport.requests.count, 1)
    }

    func testTheDocumentationsExampleRuns() throws {
        // `ConnectObserver`'s example, as written there (it prints the call's time).
        let connect = Connect(
            transport: FakeTransport.answering(.json(string: "{}")), settings: Connect.Settings(observers: [Timing()]))
        _ = try connect.request(GetTodo()).wait()
    }
}

// `ConnectObserver`'s documentation example.
struct Timing: ConnectObserver {
    func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? {
        TimingCall(name: call.name, started: .now())
    }
}

final class TimingCall: ConnectCallObserver {
    let name: String
    let started: DispatchTime
    init(name: String, started: DispatchTime) {
        self.name = name
        self.started = started
    }
    func record(_ event: ConnectEvent) {
        if case .callEnded = event {
            print(name, Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e6, "ms")
        }
    }
}
