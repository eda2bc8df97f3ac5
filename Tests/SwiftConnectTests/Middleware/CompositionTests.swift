import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Composition at run time: closure middlewares and adapters, and a client derived from another with more stages,
/// sharing its transport, queue and cache.
final class CompositionTests: XCTestCase {
    private let base = URL(string: "https://api.test")

    func testAnAdapterPreparesEveryRequestAndItsErrorFailsTheCallUnsent() throws {
        // Given
        struct NoLocale: Error {}
        let transport = FakeTransport()
        transport.stub("/a", with: .status(204))
        let adapting = Connect(
            transport: transport,
            middlewares: [.adapter { $0.setValue("fr-CH", forHTTPHeaderField: "Accept-Language") }])
        let refusing = Connect(transport: transport, middlewares: [.adapter { _ in throw NoLocale() }])

        // When
        _ = try adapting.request(Route("/a", baseURL: base)).wait(timeout: 10)
        let result = try refusing.request(Route("/a", baseURL: base)).waitForResult(timeout: 10)

        // Then
        XCTAssertEqual(transport.requests.map { $0.value(forHTTPHeaderField: "Accept-Language") }, ["fr-CH"])
        guard case .failure(let error) = result else { return XCTFail("sent despite the adapter's error") }
        XCTAssertTrue(error is NoLocale, "\(error)")
    }

    func testAClosureMiddlewareSeesTheRequestAndTheResponse() throws {
        let transport = FakeTransport()
        transport.stub("/a", with: .status(204))
        let seen = Recorder<String>()
        let connect = Connect(
            transport: transport,
            middlewares: [
                AnyMiddleware { request, context, next in
                    seen.append("→ \(request.url.path) \(context.connectorName)")
                    return next(request).map { response in
                        seen.append("← \(response.statusCode)")
                        return response
                    }
                }
            ])

        _ = try connect.request(Route("/a", baseURL: base)).wait(timeout: 10)

        XCTAssertEqual(seen.values, ["→ /a Route", "← 204"])
    }

    /// A plugin a derived client keeps from its parent is told by one serial queue, whichever client sent: each
    /// client had its own, so the two told it at once (a data race in a plugin that counts, as the documentation's
    /// example does). The first call's plugin holds the queue; the derived client's call, answered meanwhile, is
    /// told only once it lets go.
    func testAPluginSharedByADerivedClientIsNeverToldConcurrently() throws {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let events = Recorder<String>()
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let secondTold = DispatchSemaphore(value: 0)
        let plugin = AnyPlugin(willSend: { request, _ in
            let path = request.url?.path ?? ""
            events.append("start \(path)")
            if path == "/first" {
                entered.signal()
                _ = release.wait(timeout: .now() + 10)
            } else {
                secondTold.signal()
            }
            events.append("end \(path)")
        })
        let api = Connect(
            transport: transport, retryPolicy: nil,
            settings: Connect.Settings(options: RequestOptions(plugins: [plugin])))
        let derived = api.adding(middlewares: [.adapter { $0.setValue("1", forHTTPHeaderField: "X-Derived") }])
        _ = try api.request(Route("/first", baseURL: base)).wait(timeout: 10)
        XCTAssertEqual(entered.wait(timeout: .now() + 10), .success)
        _ = try derived.request(Route("/second", baseURL: base)).wait(timeout: 10)
        // The derived client's call is answered; its plugin event waits behind the first one's (1 s for one that
        // would come at once on a queue of its own).
        XCTAssertEqual(secondTold.wait(timeout: .now() + 1), .timedOut, "told while the first was told")
        release.signal()
        XCTAssertEqual(secondTold.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(events.values.prefix(3), ["start /first", "end /first", "start /second"])
    }

    func testADerivedClientAddsStagesAndSharesTheTransportQueueAndCache() throws {
        // Given: a client with a queue and a cache
        let transport = FakeTransport()
        transport.stub("/config", with: .json(["v": 1]))
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let cache = ResponseCache(maxBytes: 1 << 20)
        let events = Recorder<String>()
        let pluginTold = expectation(description: "the derived client's plugin")
        pluginTold.assertForOverFulfill = false  // told again for the request the paused queue held
        let api = Connect(
            transport: transport, middlewares: [.adapter { $0.setValue("api", forHTTPHeaderField: "X-Client") }],
            requestQueue: queue, responseCache: cache)
        struct MissingVersion: Error {}

        // When: a derived client with a middleware, a plugin and a validator of its own
        let audited = api.adding(
            middlewares: [.adapter { $0.setValue("1", forHTTPHeaderField: "X-Audit") }],
            plugins: [
                AnyPlugin(willSend: { request, _ in
                    events.append("sent \(request.url?.path ?? "")")
                    pluginTold.fulfill()
                })
            ],
            validators: [
                AnyResponseValidator { response in if response.header("X-Version") == nil { throw MissingVersion() } }
            ])
        let cached = RequestOptions(cache: CacheRule(timeToLive: 60))
        _ = try api.request(Route("/config", baseURL: base), options: cached).wait(timeout: 10)
        let fromCache = try audited.request(Route("/config", baseURL: base), options: cached).waitForResult(timeout: 10)
        _ = try audited.request(Route("/config", baseURL: base)).waitForResult(timeout: 10)

        // Then: the cache the two share answered the derived client (its validator still ran on the answer)
        guard case .failure(let error) = fromCache else { return XCTFail("the derived client's validator did not run") }
        XCTAssertEqual((error as? ConnectError)?.kind, .rejected)
        XCTAssertEqual(cache.hitCount, 1)
        // The uncached call went out through both clients' middlewares, and the derived client's plugin saw it
        XCTAssertEqual(transport.requests.count, 2)
        let last = try XCTUnwrap(transport.requests.last)
        XCTAssertEqual(last.value(forHTTPHeaderField: "X-Client"), "api")
        XCTAssertEqual(last.value(forHTTPHeaderField: "X-Audit"), "1")
        XCTAssertNil(transport.requests.first?.value(forHTTPHeaderField: "X-Audit"), "the first client is unchanged")
        wait(for: [pluginTold], timeout: 10)  // plugins are told on their own queue
        XCTAssertEqual(events.values, ["sent /config"])
        // The two share the queue: a paused queue holds the derived client's request
        queue.pause()
        let held = audited.request(Route("/config", baseURL: base))
        XCTAssertEqual(queue.pendingCount, 1)
        queue.resume()
        _ = try held.waitForResult(timeout: 10)
        XCTAssertEqual(transport.requests.count, 3)
    }

    /// `adding(middlewares:plugins:)` adds client-level stages: after the client's own and its options', before the
    /// more specific levels (the client's options for a method, a connector's, a call's), as `RequestOptions` orders
    /// every level. Its documentation said "after every middleware of this client", which a method's are not.
    func testADerivedClientsStagesComeBeforeTheMethodsTheConnectorsAndTheCalls() throws {
        // Given: a client with a middleware and a plugin at every level, and one derived from it
        let events = Recorder<String>()
        let told = Recorder<String>()
        func stage(_ name: String) -> RecordingMiddleware { RecordingMiddleware(name: name, events: events) }
        func plugin(_ name: String) -> AnyPlugin { AnyPlugin(willSend: { _, _ in told.append(name) }) }
        let api = Connect(
            transport: FakeTransport.answering(.status(204)), middlewares: [stage("client")], retryPolicy: nil,
            settings: Connect.Settings(
                options: RequestOptions(middlewares: [stage("options")], plugins: [plugin("options")]),
                methodOptions: [.get: RequestOptions(middlewares: [stage("method")], plugins: [plugin("method")])]))
        let derived = api.adding(middlewares: [stage("added")], plugins: [plugin("added")])
        let route = Route(
            "/items", baseURL: base,
            options: RequestOptions(middlewares: [stage("connector")], plugins: [plugin("connector")]))

        // When
        _ = try derived.request(
            route, options: RequestOptions(middlewares: [stage("call")], plugins: [plugin("call")])
        ).wait(timeout: 10)

        // Then
        XCTAssertEqual(
            events.values.filter { $0.hasPrefix("→") },
            ["→client", "→options", "→added", "→method", "→connector", "→call"])
        XCTAssertTrue(told.wait(forCount: 5))
        XCTAssertEqual(told.values, ["options", "added", "method", "connector", "call"])
    }
}
