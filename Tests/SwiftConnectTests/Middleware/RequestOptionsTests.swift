import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Plugins, validators, processors and middlewares at client, connector and call level, in a defined order.
final class RequestOptionsTests: XCTestCase {
    private struct Endpoint: Connector {
        var connectorOptions = RequestOptions()
        var method: HTTPMethod = .get
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/items" }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
        var options: RequestOptions { connectorOptions }
    }

    /// `Connector.options`' documented example, as written there.
    private struct DocumentedOptions: Connector {
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/items" }
        var method: HTTPMethod { .post }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
        var options: RequestOptions {
            let requireETag = AnyResponseValidator { response in
                if response.header("ETag") == nil { throw URLError(.badServerResponse) }
            }
            return RequestOptions(validators: [requireETag], isRetrySafe: true)
        }
    }

    private struct Tagging: Middleware {
        let tag: String
        let log: Recorder<String>
        func intercept(_ request: ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
            ConnectResponse
        > {
            log.append("→\(tag)")
            return next(request).map { response in
                self.log.append("←\(tag)")
                return response
            }
        }
    }

    private struct AnyMiddlewareProbe: Middleware {
        let body: @Sendable (RequestContext) -> Void
        func intercept(_ request: ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
            ConnectResponse
        > {
            body(context)
            return next(request)
        }
    }

    private func recordingPlugin(_ tag: String, _ log: Recorder<String>, _ events: XCTestExpectation) -> AnyPlugin {
        AnyPlugin(
            willSend: { _, _ in
                log.append("\(tag).willSend")
                events.fulfill()
            },
            didReceive: { response, _ in
                log.append("\(tag).didReceive \(response.statusCode)")
                events.fulfill()
            },
            didFail: { _, _, _ in
                log.append("\(tag).didFail")
                events.fulfill()
            }
        )
    }

    /// Options keep value semantics although their values sit behind one shared reference: changing a copy
    /// leaves the original alone, and options set back to nothing behave as options never set.
    func testOptionsAreValuesAndChangingACopyLeavesTheOriginal() throws {
        let log = Recorder<String>()
        var original = RequestOptions(isRetrySafe: true, maxResponseBytes: 10)
        var copy = original
        copy.maxResponseBytes = 20
        copy.middlewares.append(Tagging(tag: "copy", log: log))
        copy.cache = CacheRule(timeToLive: 5, key: "k")
        XCTAssertEqual(original.maxResponseBytes, 10)
        XCTAssertTrue(original.middlewares.isEmpty)
        XCTAssertNil(original.cache)
        XCTAssertEqual(copy.maxResponseBytes, 20)
        XCTAssertEqual(copy.middlewares.count, 1)
        XCTAssertEqual(copy.cache?.key, "k")
        XCTAssertEqual(copy.isRetrySafe, true)

        // Cleared again, the original sends like a call without options; the copy sends with its middleware.
        original.isRetrySafe = nil
        original.maxResponseBytes = nil
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(transport: transport, retryPolicy: nil)
        var post = Endpoint()
        post.method = .post
        _ = try connect.request(post, options: original).wait(timeout: 5)
        _ = try connect.request(post, options: copy).wait(timeout: 5)
        XCTAssertEqual(log.values, ["→copy", "←copy"])
        XCTAssertEqual(transport.requests.count, 2)
    }

    func testMiddlewaresNestClientThenConnectorThenCall() throws {
        let log = Recorder<String>()
        let connect = Connect(
            transport: FakeTransport.answering(.status(200)),
            middlewares: [Tagging(tag: "client", log: log)],
            retryPolicy: nil
        )
        let endpoint = Endpoint(connectorOptions: RequestOptions(middlewares: [Tagging(tag: "connector", log: log)]))
        _ = try connect.request(endpoint, options: RequestOptions(middlewares: [Tagging(tag: "call", log: log)])).wait()
        XCTAssertEqual(log.values, ["→client", "→connector", "→call", "←call", "←connector", "←client"])
    }

    func testPluginsAreToldInLevelOrderAndBalanced() throws {
        let log = Recorder<String>()
        let events = expectation(description: "plugin events")
        events.expectedFulfillmentCount = 12
        let transport = FakeTransport()
        transport.stub(nil, "/items", with: [.status(200), .failure(URLError(.notConnectedToInternet))])
        let connect = Connect(
            transport: transport, retryPolicy: nil,
            settings: Connect.Settings(options: RequestOptions(plugins: [recordingPlugin("client", log, events)])))
        let endpoint = Endpoint(connectorOptions: RequestOptions(plugins: [recordingPlugin("connector", log, events)]))
        let call = RequestOptions(plugins: [recordingPlugin("call", log, events)])
        _ = try connect.request(endpoint, options: call).wait()
        XCTAssertThrowsError(try connect.request(endpoint, options: call).wait())
        wait(for: [events], timeout: 5)
        XCTAssertEqual(
            log.values,
            [
                "client.willSend", "connector.willSend", "call.willSend",
                "client.didReceive 200", "connector.didReceive 200", "call.didReceive 200",
                "client.willSend", "connector.willSend", "call.willSend",
                "client.didFail", "connector.didFail", "call.didFail",
            ]
        )
    }

    func testASlowPluginDoesNotStallRequests() throws {
        let gate = DispatchSemaphore(value: 0)
        let blocking = AnyPlugin(willSend: { _, _ in gate.wait() })
        let connect = Connect(
            transport: FakeTransport.answering(.status(200)), retryPolicy: nil,
            settings: Connect.Settings(options: RequestOptions(plugins: [blocking])))
        for _ in 0..<5 {
            XCTAssertNoThrow(
                try connect.request(Endpoint()).wait(timeout: 5), "requests complete while the plugin blocks")
        }
        for _ in 0..<5 { gate.signal() }
    }

    func testValidatorsRunInLevelOrderAndTheFirstRejectionWins() throws {
        struct Rejected: Error, Equatable { let by: String }
        let log = Recorder<String>()
        func validator(_ tag: String, rejects: Bool = false) -> AnyResponseValidator {
            AnyResponseValidator { _ in
                log.append(tag)
                if rejects { throw Rejected(by: tag) }
            }
        }
        let connect = Connect(
            transport: FakeTransport.answering(.status(200)), retryPolicy: nil,
            settings: Connect.Settings(options: RequestOptions(validators: [validator("client")])))
        let endpoint = Endpoint(connectorOptions: RequestOptions(validators: [validator("connector", rejects: true)]))
        let error = try XCTUnwrap(
            self.error(of: connect.request(endpoint, options: RequestOptions(validators: [validator("call")])))
                as? ConnectError
        )
        XCTAssertEqual(log.values, ["client", "connector"])
        XCTAssertEqual(error.kind, .rejected)
        XCTAssertEqual(error.underlyingError as? Rejected, Rejected(by: "connector"))
        XCTAssertEqual(error.statusCode, 200)
    }

    func testValidatorsDoNotRunOnErrorStatuses() {
        let ran = Counter()
        let connect = Connect(
            transport: FakeTransport.answering(.status(404)), retryPolicy: nil,
            settings: Connect.Settings(
                options: RequestOptions(validators: [AnyResponseValidator { _ in ran.increment() }])))
        XCTAssertThrowsError(try connect.request(Endpoint()).wait()) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .httpStatus)
        }
        XCTAssertEqual(ran.value, 0)
    }

    func testProcessorsChainInLevelOrderBeforeDecoding() throws {
        func appending(_ suffix: String) -> AnyResponseProcessor {
            AnyResponseProcessor { response in
                var response = response
                response.data += Data(suffix.utf8)
                return response
            }
        }
        let connect = Connect(
            transport: FakeTransport.answering(.data(Data("[".utf8))), retryPolicy: nil,
            settings: Connect.Settings(options: RequestOptions(processors: [appending("\"client\"")])))
        let endpoint = Endpoint(connectorOptions: RequestOptions(processors: [appending(",\"connector\"")]))
        let values = try connect.request(endpoint, options: RequestOptions(processors: [appending("]")]))
            .decoded(toType: [String].self)
            .wait()
        XCTAssertEqual(values, ["client", "connector"])
    }

    func testAThrowingProcessorRejects() {
        struct Broken: Error {}
        let connect = Connect(transport: FakeTransport.answering(.status(200)), retryPolicy: nil)
        let options = RequestOptions(processors: [AnyResponseProcessor { _ in throw Broken() }])
        XCTAssertThrowsError(try connect.request(Endpoint(), options: options).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .rejected)
            XCTAssertTrue((error as? ConnectError)?.underlyingError is Broken)
        }
    }

    func testCallLevelRetrySafetyOverridesConnectorAndMethod() {
        var context = RequestContext(method: .post, connectorName: "X")
        XCTAssertFalse(context.isRetrySafe)
        context.options = RequestOptions(isRetrySafe: true)
        XCTAssertTrue(context.isRetrySafe)
        XCTAssertTrue(RequestContext(method: .put, connectorName: "X").isRetrySafe)

        let seen = Recorder<Bool>()
        let probe = AnyMiddlewareProbe { context in seen.append(context.isRetrySafe) }
        let connect = Connect(transport: FakeTransport.answering(.status(200)), middlewares: [probe], retryPolicy: nil)
        let endpoint = Endpoint(connectorOptions: RequestOptions(isRetrySafe: true), method: .post)
        _ = try? connect.request(endpoint).wait()
        _ = try? connect.request(endpoint, options: RequestOptions(isRetrySafe: false)).wait()
        XCTAssertEqual(seen.values, [true, false], "the call's setting wins over the connector's")
    }

    func testHeadersAMiddlewareAddsAreCheckedBeforeTheWire() throws {
        struct Injecting: Middleware {
            func intercept(
                _ request: ConnectRequest,
                context: RequestContext,
                next: @escaping Next
            ) -> Future<ConnectResponse> {
                var request = request
                request.setValue("a\r\nX-Evil: 1", forHTTPHeaderField: "X-Trace")
                return next(request)
            }
        }
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(transport: transport, middlewares: [Injecting()], retryPolicy: nil)
        let result = try connect.request(Endpoint()).waitForResult()
        // The core's model keeps the value on every platform: the check before the wire refuses it.
        guard case .failure(let error as ConnectError) = result else { return XCTFail("sent: \(result)") }
        XCTAssertEqual(error.invalidRequestReason, .invalidHeader(name: "X-Trace"))
        XCTAssertTrue(transport.requests.isEmpty)
    }

    func testAURLRequestAdapterCannotSetALineBreakOnAnyPlatform() throws {
        // The guide's adapter speaks URLRequest, whose own rules apply when it sets a value.
        struct Injecting: ConnectMiddlewareProtocol {
            func adapt(_ request: URLRequest) throws -> URLRequest {
                var request = request
                request.setValue("old", forHTTPHeaderField: "X-Trace")
                request.setValue("a\r\nX-Evil: 1", forHTTPHeaderField: "X-Trace")
                return request
            }
        }
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(transport: transport, middlewares: [Injecting()], retryPolicy: nil)
        let result = try connect.request(Endpoint()).waitForResult()
        #if canImport(FoundationNetworking)
            // FoundationNetworking's `setValue` discards such a value and keeps the one before it: the core never
            // sees it. Documented on `ConnectMiddlewareProtocol.adapt(_:)`; a `ConnectRequest` middleware fails.
            XCTAssertNoThrow(try result.get())
            let sent = try XCTUnwrap(transport.requests.first?.allHTTPHeaderFields)
            XCTAssertEqual(sent["X-Trace"], "old")
            XCTAssertNil(sent["X-Evil"])
        #else
            // Apple's URLRequest keeps the value: the check before the wire refuses it.
            guard case .failure(let error as ConnectError) = result else { return XCTFail("sent: \(result)") }
            XCTAssertEqual(error.invalidRequestReason, .invalidHeader(name: "X-Trace"))
            XCTAssertTrue(transport.requests.isEmpty)
        #endif
    }

    func testConnectorOptionsDocumentedExampleCompilesAndValidates() throws {
        let transport = FakeTransport(fallback: .json(string: "{}"))
        transport.stub(.post, "/items", with: [.json(string: "{}", status: 503), .json(string: "{}")])
        let connect = Connect(transport: transport, retryPolicy: RetryPolicy(clock: ImmediateRetryClock()))

        XCTAssertThrowsError(try connect.request(DocumentedOptions()).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .rejected)
        }
        XCTAssertEqual(transport.requests.count, 2, "isRetrySafe: the POST was retried after the 503")
    }

    /// `RequestOptions`' single values: the most specific level that sets one wins, the client's included.
    func testTheClientsCacheRuleAndRetrySafetyApplyUnlessTheConnectorOrCallSetsTheirOwn() throws {
        // Given: a cache rule and retry safety set on the client only
        let transport = FakeTransport()
        transport.stub(.get, "/items", with: .status(200))
        transport.stub(.post, "/items", with: [.status(503), .status(200)])
        let cache = ResponseCache()
        let connect = Connect(
            transport: transport, retryPolicy: RetryPolicy(maxAttempts: 2, clock: ImmediateRetryClock()),
            responseCache: cache,
            settings: Connect.Settings(options: RequestOptions(isRetrySafe: true, cache: CacheRule(timeToLive: 60))))
        // When
        _ = try connect.request(ClientFixtures.Endpoint()).wait(timeout: 5)
        _ = try connect.request(ClientFixtures.Endpoint()).wait(timeout: 5)
        let uncached = RequestOptions(cache: CacheRule(timeToLive: 0))
        _ = try connect.request(ClientFixtures.Endpoint(), options: uncached).wait(timeout: 5)
        XCTAssertEqual(cache.hitCount, 1)
        let post = connect.request(ClientFixtures.Endpoint(method: .post))
        // Then
        XCTAssertNotNil(value(of: post))
        XCTAssertEqual(transport.requests(to: "/items").map(\.httpMethod), ["GET", "GET", "POST", "POST"])
    }

    // MARK: - Values of a user's own stages

    private enum Sampling: RequestOptionKey { typealias Value = Double }

    /// Tags add up across levels instead of the most specific level winning.
    private enum Tags: RequestOptionKey {
        typealias Value = [String]
        static func combine(_ earlier: [String], _ later: [String]) -> [String] { earlier + later }
    }

    private static func options(sampling: Double? = nil, tags: [String]? = nil) -> RequestOptions {
        var options = RequestOptions()
        options[Sampling.self] = sampling
        options[Tags.self] = tags
        return options
    }

    func testAUserStageReadsItsValuesAsTheBuiltInsDoAtEveryLevel() {
        // Given: a value at the client, another at the connector, another for one call
        let transport = FakeTransport.answering(.status(200))
        let seen = Recorder<String>()
        let probe = AnyMiddlewareProbe { context in
            let sampling = context.options[Sampling.self].map { "\($0)" } ?? "-"
            seen.append("\(sampling) \(context.options[Tags.self] ?? [])")
        }
        let connect = Connect(
            transport: transport, middlewares: [probe], retryPolicy: nil,
            settings: Connect.Settings(options: Self.options(sampling: 1, tags: ["client"])))
        let connector = Endpoint(connectorOptions: Self.options(tags: ["connector"]))

        // When
        _ = value(of: connect.request(Endpoint()))
        _ = value(of: connect.request(connector))
        _ = value(of: connect.request(connector, options: Self.options(sampling: 0.1, tags: ["call"])))

        // Then: the most specific value wins, or the key combines them
        XCTAssertEqual(
            seen.values,
            ["1.0 [\"client\"]", "1.0 [\"client\", \"connector\"]", "0.1 [\"client\", \"connector\", \"call\"]"])
    }

    func testBuiltInOptionsAreKeyedValuesThatReadAndClearLikeAnyOther() {
        var options = RequestOptions(isRetrySafe: true, cache: CacheRule(timeToLive: 60), connectivity: .failFast)
        XCTAssertEqual(options.isRetrySafe, true)
        XCTAssertEqual(options.cache, CacheRule(timeToLive: 60))
        XCTAssertEqual(options.connectivity, .failFast)
        options.cache = nil
        options.isRetrySafe = nil
        options.connectivity = nil
        options[Sampling.self] = 0.5
        XCTAssertNil(options.cache)
        XCTAssertEqual(options[Sampling.self], 0.5)
        options[Sampling.self] = nil
        XCTAssertNil(options[Sampling.self])
    }
}
