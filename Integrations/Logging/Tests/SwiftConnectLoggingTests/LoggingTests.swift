import Foundation
import InMemoryLogging
import Logging
import SwiftConnect
import SwiftConnectLogging
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What `LoggingObserver` and `SwiftLogConnectLogger` write: levels, messages, metadata and redaction.
final class LoggingTests: LoggingTestCase {
    private struct GetTodo: Connector {
        var baseURL: URL
        var endpoint: String { "/todos/{id}" }
        var method: HTTPMethod = .get
        var headers: [HTTPHeader] { [] }
        var parameters: ParametersRepresentable? {
            CompositeParameters(
                .path(key: "id", value: "7"), .query(key: "api_key", value: "s3cr3t"), .query(key: "page", value: "2"))
        }
    }

    private func client(middlewares: [any Middleware] = [], knownMethods: Set<String>? = nil) -> Connect {
        Connect(
            middlewares: middlewares, retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            settings: Connect.Settings(
                logger: SwiftLogConnectLogger(logger),
                observers: [LoggingObserver(logger, knownMethods: knownMethods)]))
    }

    private var lines: [(Logger.Level, String)] { handler.entries.map { ($0.level, "\($0.message)") } }

    func testASucceededCallIsDebugWithTheCallsMetadataAndNoSecret() throws {
        server.route("GET", "/todos/:id") { _ in .json(string: "{}") }
        _ = try client().request(GetTodo(baseURL: server.baseURL)).wait()
        XCTAssertEqual(lines.map(\.0), [.debug, .debug])
        XCTAssertEqual(lines.map(\.1), ["attempt 1 answered 200", "call succeeded with 200"])
        let metadata = try XCTUnwrap(handler.entries.last?.metadata)
        XCTAssertEqual(metadata["swiftconnect.call"], "GetTodo")
        XCTAssertEqual(metadata["url.template"], "/todos/{id}")
        XCTAssertEqual(metadata["http.request.method"], "GET")
        XCTAssertNil(metadata["http.request.method_original"], "only for a method OpenTelemetry does not know")
        let url = "\(metadata["url.full"] ?? "")"
        XCTAssertTrue(url.contains("page=2"), url)
        XCTAssertFalse(url.contains("s3cr3t"), url)
    }

    /// `url.template` is a path template, as on the spans and metrics: a query written into the endpoint is cut off.
    func testAQueryInTheEndpointIsNoPartOfTheTemplate() throws {
        struct Search: Connector {
            var baseURL: URL
            var endpoint: String { "/search?type=x" }
            var method: HTTPMethod { .get }
            var headers: [HTTPHeader] { [] }
            var parameters: ParametersRepresentable? { nil }
        }
        server.route("GET", "/search") { _ in .json(string: "{}") }
        _ = try client().request(Search(baseURL: server.baseURL)).wait()
        XCTAssertEqual(handler.entries.last?.metadata["url.template"], "/search")
    }

    /// A redirect's `Location` is logged with the request's secret values hidden, as its URL is: a server that echoes
    /// the token it was sent in the URL it redirects to showed it (only secrets known by name were hidden).
    func testARedirectsLocationHidesTheRequestsSecretValues() throws {
        server.route("GET", "/todos/:id") { _ in .redirect(to: "/moved?state=tok-ECHO-31415") }
        server.route("GET", "/moved") { _ in .json(string: "{}") }
        let auth = AuthenticationMiddleware(credential: .bearer(token: "tok-ECHO-31415")) { _ in
            Future(error: URLError(.userAuthenticationRequired))
        }
        _ = try client(middlewares: [auth]).request(GetTodo(baseURL: server.baseURL)).wait()
        let redirect = try XCTUnwrap(handler.entries.first { "\($0.message)".contains("redirect") })
        let location = "\(redirect.metadata["location"] ?? "")"
        XCTAssertTrue(location.contains("/moved?state="), location)
        XCTAssertFalse(location.contains("tok-ECHO-31415"), location)
    }

    /// Every line carries the call's `url.full`, redacted, the redirect's line too (it had only its `location`).
    func testARedirectsLineCarriesTheCallsURLRedacted() throws {
        server.route("GET", "/todos/:id") { _ in .redirect(to: "/moved") }
        server.route("GET", "/moved") { _ in .json(string: "{}") }
        _ = try client().request(GetTodo(baseURL: server.baseURL)).wait()
        let observed = handler.entries.filter { $0.metadata["swiftconnect.call"] != nil }
        XCTAssertEqual(
            observed.map { "\($0.message)" },
            ["followed a 302 redirect", "attempt 1 answered 200", "call succeeded with 200"])
        for entry in observed {
            let url = "\(entry.metadata["url.full"] ?? "")"
            XCTAssertTrue(url.contains("/todos/7?") && url.contains("page=2"), "\(entry.message): \(url)")
            XCTAssertFalse(url.contains("s3cr3t"), "\(entry.message): \(url)")
        }
    }

    /// A method OpenTelemetry does not know is `_OTHER` on every line, the method itself beside it.
    func testAMethodOpenTelemetryDoesNotKnowIsOtherWithTheOriginalBesideIt() throws {
        // Given
        server.route("PROPFIND", "/todos/:id") { _ in .json(string: "{}") }
        var propfind = GetTodo(baseURL: server.baseURL)
        propfind.method = "PROPFIND"
        // When
        _ = try client().request(propfind).wait()
        // Then
        XCTAssertEqual(lines.map(\.1), ["attempt 1 answered 200", "call succeeded with 200"])
        XCTAssertEqual(handler.entries.map { $0.metadata["http.request.method"] }, ["_OTHER", "_OTHER"])
        XCTAssertEqual(handler.entries.map { $0.metadata["http.request.method_original"] }, ["PROPFIND", "PROPFIND"])
    }

    /// A middleware that changes the method an attempt goes out with (a `PATCH` tunnelled through `POST` with
    /// `X-HTTP-Method-Override`) makes each attempt's line carry the method sent, as `TracingObserver`'s span says it,
    /// with no `http.request.method_original` of the connector's; the call's own line keeps the connector's method
    /// (`_OTHER` here, off the observer's list). Every line carried the connector's, which never went out.
    func testAnAttemptsLinesCarryTheMethodItWentOutWith() throws {
        // Given
        let answers = Locked([503, 200])
        server.route("POST", "/todos/:id") { request in
            guard request.header("X-HTTP-Method-Override") == "PATCH" else { return .status(400) }
            let status = answers.withLock { $0.removeFirst() }
            return LocalServer.Response.status(status).withHeader("Retry-After", "0")
        }
        let tunnel = AnyMiddleware { request, _, next in
            var request = request
            request.setValue(request.method.rawValue, forHTTPHeaderField: "X-HTTP-Method-Override")
            request.method = .post
            return next(request)
        }
        var patch = GetTodo(baseURL: server.baseURL)
        patch.method = .patch
        // A `PATCH` with an `Idempotency-Key` is sent again after a 503.
        let connect = Connect(
            middlewares: [tunnel], retryPolicy: RetryPolicy(addsIdempotencyKey: true, clock: ImmediateRetryClock()),
            settings: Connect.Settings(observers: [LoggingObserver(logger, knownMethods: ["GET", "POST"])]))
        // When
        _ = try connect.request(patch).wait()
        // Then
        let observed = handler.entries.filter { $0.metadata["swiftconnect.call"] != nil }
        XCTAssertEqual(
            observed.map { "\($0.message)" },
            [
                "attempt 1 answered 503", "sending again (attempt 2)", "attempt 2 answered 200",
                "call succeeded with 200",
            ])
        XCTAssertEqual(observed.map { $0.metadata["http.request.method"] }, ["POST", "POST", "POST", "_OTHER"])
        XCTAssertEqual(observed.map { $0.metadata["http.request.method_original"] }, [nil, nil, nil, "PATCH"])
    }

    /// The observer's own list of known methods replaces OpenTelemetry's: a method on it is itself, one off it
    /// (`POST` here) `_OTHER`.
    func testTheObserversKnownMethodsReplaceTheDefault() throws {
        // Given
        server.route("PROPFIND", "/todos/:id") { _ in .json(string: "{}") }
        server.route("POST", "/todos/:id") { _ in .json(string: "{}") }
        var propfind = GetTodo(baseURL: server.baseURL)
        propfind.method = "PROPFIND"
        var post = propfind
        post.method = .post
        let connect = client(knownMethods: ["GET", "PROPFIND"])
        // When
        _ = try connect.request(propfind).wait()
        _ = try connect.request(post).wait()
        // Then
        XCTAssertEqual(
            handler.entries.map { $0.metadata["http.request.method"] }, ["PROPFIND", "PROPFIND", "_OTHER", "_OTHER"])
        XCTAssertEqual(
            handler.entries.map { $0.metadata["http.request.method_original"] }, [nil, nil, "POST", "POST"])
    }

    func testARetryIsInfoAndAFinal503IsAWarning() throws {
        server.route("GET", "/todos/:id") { _ in LocalServer.Response.status(503).withHeader("Retry-After", "0") }
        XCTAssertNotNil(try? client().request(GetTodo(baseURL: server.baseURL)).waitForResult())
        XCTAssertEqual(
            lines.filter { $0.0 == .info }.map(\.1), ["sending again (attempt 2)", "sending again (attempt 3)"])
        XCTAssertEqual(lines.filter { $0.0 == .warning }.map(\.1), ["call ended with status 503 after 3 attempts"])
    }

    /// A retry whose attempt a middleware sends twice (a hedge) is one retry: one `info` line says it is sent again,
    /// as `swiftconnect.client.retries` counts it once. Each send of the attempt said it, so one retry read as two.
    func testAHedgedRetryIsOneLineSayingItIsSentAgain() throws {
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
        _ = try client(middlewares: [hedge]).request(GetTodo(baseURL: server.baseURL)).wait(timeout: 10)
        // Then
        XCTAssertEqual(requests.withLock { $0 }, 4)
        XCTAssertEqual(lines.filter { $0.0 == .info }.map(\.1), ["sending again (attempt 2)"])
        XCTAssertEqual(lines.filter { $0.1.hasPrefix("attempt ") }.count, 4, "each send's end is its own line")
    }

    /// An attempt answered 4xx or 5xx failed, as OpenTelemetry has it: its line says so in `error.type` (the status
    /// code), as the call's line and the tracing and metrics observers do; a 2xx attempt's line has none.
    func testAnAttemptAnsweredWithAFailureStatusCarriesItsErrorType() throws {
        let answers = Locked([503, 200])
        server.route("GET", "/todos/:id") { _ in
            let status = answers.withLock { $0.removeFirst() }
            return LocalServer.Response.status(status).withHeader("Retry-After", "0")
        }
        _ = try? client().request(GetTodo(baseURL: server.baseURL)).waitForResult()
        let attempts = handler.entries.filter { "\($0.message)".hasPrefix("attempt ") }
        XCTAssertEqual(attempts.map { "\($0.message)" }, ["attempt 1 answered 503", "attempt 2 answered 200"])
        XCTAssertEqual(attempts.map { $0.metadata["error.type"] }, ["503", nil])
    }

    func testA404IsInfoNotAWarning() throws {
        server.route("GET", "/todos/:id") { _ in .json(string: #"{"message":"no"}"#, status: 404) }
        XCTAssertNotNil(try? client().request(GetTodo(baseURL: server.baseURL)).waitForResult())
        XCTAssertEqual(lines.last?.0, .info)
        XCTAssertEqual(lines.last?.1, "call ended with status 404 after 1 attempt")
    }

    func testARefusedConnectionIsAWarningNamingItsKind() throws {
        let port = server.port
        server.stop()
        let connect = Connect(
            retryPolicy: RetryPolicy(maxAttempts: 1),
            settings: Connect.Settings(observers: [LoggingObserver(logger)]))
        XCTAssertNotNil(
            try? connect.request(GetTodo(baseURL: URL(string: "http://127.0.0.1:\(port)")!)).waitForResult())
        XCTAssertEqual(lines.map(\.0), [.info, .warning])
        XCTAssertEqual(lines.last?.1, "call failed after 1 attempt: cannotConnect")
        XCTAssertEqual(handler.entries.last?.metadata["error.type"], "cannotConnect")
    }

    func testACancelledCallIsDebugNotAWarning() throws {
        // Given: a transport that never answers
        let transport = FakeTransport.answering(.never)
        let connect = Connect(
            transport: transport, retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            settings: Connect.Settings(observers: [LoggingObserver(logger)]))
        // When: the app cancels the call once it is sent
        let call = connect.request(GetTodo(baseURL: server.baseURL))
        XCTAssertEqual(transport.requests.count, 1)
        call.cancel()
        XCTAssertNotNil(try? call.waitForResult(timeout: 5))
        // Then
        XCTAssertEqual(lines.map(\.0), [.debug, .debug], "\(lines)")
        XCTAssertTrue(lines.contains { $0.1 == "call cancelled after 1 attempt: cancelled" }, "\(lines)")
    }

    func testATokenRefreshIsInfo() throws {
        server.route("GET", "/todos/:id") { request in
            request.header("Authorization") == "Bearer new" ? .json(string: "{}") : .status(401)
        }
        let auth = AuthenticationMiddleware(credential: .bearer(token: "old")) { _ in
            Future(value: .bearer(token: "new"))
        }
        _ = try client(middlewares: [auth]).request(GetTodo(baseURL: server.baseURL)).wait()
        XCTAssertEqual(
            lines.filter { $0.0 == .info }.map(\.1),
            ["the server rejected the credential: refreshing it", "credential refreshed", "sending again (attempt 2)"])
    }

    func testAFailedTokenRefreshIsAWarningThatSaysWhatItMeans() throws {
        // Given: a server that rejects the credential, and a refresh that fails
        server.route("GET", "/todos/:id") { _ in .status(401) }
        struct SignedOut: Error {}
        let auth = AuthenticationMiddleware(credential: .bearer(token: "old")) { _ in
            Future(error: SignedOut())
        }
        // When
        XCTAssertThrowsError(try client(middlewares: [auth]).request(GetTodo(baseURL: server.baseURL)).wait())
        // Then: the warning also names the other way a refresh ends with no credential in use
        XCTAssertTrue(
            lines.contains {
                $0 == (.warning, "refreshing the credential gave none in use: it failed, or the app set another")
            }, "\(lines)")
    }

    /// Each line of a call carries what the logger's metadata provider gave on the task that made the call (a trace
    /// or request ID, read from a task local), though the events come from the engine's threads, where the provider
    /// finds none of that task's values.
    func testEachLineCarriesTheProvidersMetadataOfTheTaskThatMadeTheCall() throws {
        // Given: a logger whose provider reads a task-local request ID
        server.route("GET", "/todos/:id") { _ in .json(string: "{}") }
        var logger = self.logger!
        logger.handler.metadataProvider = Logger.MetadataProvider {
            RequestID.current.map { ["request.id": .string($0)] } ?? [:]
        }
        let connect = Connect(settings: Connect.Settings(observers: [LoggingObserver(logger)]))

        // When: a call is made with a request ID
        try RequestID.$current.withValue("r-42") {
            _ = try connect.request(GetTodo(baseURL: server.baseURL)).wait()
        }

        // Then
        XCTAssertEqual(lines.map(\.1), ["attempt 1 answered 200", "call succeeded with 200"])
        XCTAssertEqual(handler.entries.map { $0.metadata["request.id"] }, ["r-42", "r-42"])
    }

    /// A logger that logs none of a call's lines (its level above `warning`, the highest the observer writes) costs
    /// the call nothing: the observer declines the call, so no logger is made ready with its metadata and no event is
    /// handled for it. Each call's logger was made, and each attempt's request kept, for lines never written.
    func testALoggerAboveWarningIsMadeNothingForACall() throws {
        // Given: a call that ends with a 5xx after retries, whose lines go up to `warning`
        server.route("GET", "/todos/:id") { _ in LocalServer.Response.status(503).withHeader("Retry-After", "0") }
        let recorder = RecordingLogHandler()
        var logger = Logger(label: "tests") { _ in recorder }
        logger.logLevel = .error
        let connect = Connect(
            retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            settings: Connect.Settings(observers: [LoggingObserver(logger)]))
        // When
        XCTAssertNotNil(try? connect.request(GetTodo(baseURL: server.baseURL)).waitForResult())
        // Then
        XCTAssertEqual(recorder.events.count, 0)
        XCTAssertEqual(recorder.metadataSetCount, 0)
    }

    func testDebugOutputGoesThroughTheLoggerRedacted() throws {
        server.route("GET", "/todos/:id") { _ in .json(string: "{}") }
        let connect = Connect(settings: Connect.Settings(logger: SwiftLogConnectLogger(logger)))
        _ = try connect.request(GetTodo(baseURL: server.baseURL), debugResponse: true).wait()
        XCTAssertFalse(lines.isEmpty)
        XCTAssertTrue(lines.allSatisfy { $0.0 == .debug })
        XCTAssertTrue(lines.contains { $0.1.contains("/todos/7") })
        XCTAssertFalse(lines.contains { $0.1.contains("s3cr3t") })
    }
}

/// The request ID a metadata provider reads.
enum RequestID {
    @TaskLocal static var current: String?
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
