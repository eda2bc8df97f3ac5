import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Probes of what plugins hear: per retry, redirect, cache hit and revalidation, coalesced, cancelled, refused and
/// streamed calls, calls that end while a stage holds them, and many calls at once.
final class PluginLifecycleTests: XCTestCase {
    typealias Endpoint = ClientFixtures.Endpoint

    /// A plugin that records "will <path>", "did <status>" and "fail <kind>".
    private func recording(_ events: Recorder<String>, tag: String = "") -> AnyPlugin {
        AnyPlugin(
            willSend: { request, context in events.append("\(tag)will \(request.url?.path ?? "") #\(context.attempt)")
            },
            didReceive: { response, _ in events.append("\(tag)did \(response.statusCode)") },
            didFail: { error, _, _ in
                events.append("\(tag)fail \((error as? ConnectError).map { "\($0.kind)" } ?? "\(error)")")
            })
    }

    /// Waits until `events` holds `count` values, then until the plugin queue has run every event handed to it so
    /// far. The calls under test have ended by then, and a call's events are handed to the queue before its future
    /// completes (the notifier's callback on the response runs before the stages' above it): one that should not
    /// come would be in `events` now.
    private func settle(_ events: Recorder<String>, count: Int, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(events.wait(forCount: count), "\(events.values)", file: file, line: line)
        Connect.pluginQueue.sync {}
    }

    // MARK: - Order

    func testEachAttemptIsToldInOrderWithItsNumber() throws {
        let events = Recorder<String>()
        let transport = FakeTransport()
        transport.stub("/items", with: [.status(503), .failure(URLError(.networkConnectionLost)), .status(200)])
        let connect = Connect(
            transport: transport, retryPolicy: RetryPolicy(maxAttempts: 3, clock: ImmediateRetryClock()),
            settings: Connect.Settings(options: RequestOptions(plugins: [recording(events)])))
        _ = try connect.request(Endpoint()).wait(timeout: 5)
        settle(events, count: 6)
        XCTAssertEqual(
            events.values,
            [
                "will /items #1", "did 503", "will /items #2", "fail connectionLost", "will /items #3", "did 200",
            ])
    }

    func testACacheHitTellsPluginsNothingAndARevalidationTellsThemOfThe304() throws {
        let events = Recorder<String>()
        let transport = FakeTransport()
        transport.stub(
            "/items",
            with: .handler { request in
                if request.value(forHTTPHeaderField: "If-None-Match") == "\"v1\"" {
                    return .success(ConnectResponse(request: request, statusCode: 304, headers: ["ETag": "\"v1\""])!)
                }
                return .success(
                    ConnectResponse(
                        request: request, statusCode: 200,
                        headers: ["ETag": "\"v1\"", "Cache-Control": "no-cache"], data: Data("body".utf8))!)
            })
        let connect = Connect(
            transport: transport, retryPolicy: nil, responseCache: ResponseCache(maxBytes: 1 << 20),
            settings: Connect.Settings(options: RequestOptions(plugins: [recording(events)])))
        let rule = RequestOptions(cache: CacheRule(timeToLive: 60))
        XCTAssertEqual(try connect.request(Endpoint(), options: rule).wait(timeout: 5), Data("body".utf8))
        XCTAssertEqual(try connect.request(Endpoint(), options: rule).wait(timeout: 5), Data("body".utf8))
        settle(events, count: 4)
        XCTAssertEqual(events.values, ["will /items #1", "did 200", "will /items #1", "did 304"])

        // A fresh hit: nothing reaches the wire, so nothing is told.
        let fresh = Recorder<String>()
        let hits = FakeTransport.answering(.json(string: "{}", headers: ["Cache-Control": "max-age=60"]))
        let cached = Connect(
            transport: hits, retryPolicy: nil, responseCache: ResponseCache(maxBytes: 1 << 20),
            settings: Connect.Settings(options: RequestOptions(plugins: [recording(fresh)])))
        _ = try cached.request(Endpoint(), options: rule).wait(timeout: 5)
        _ = try cached.request(Endpoint(), options: rule).wait(timeout: 5)
        settle(fresh, count: 2)
        XCTAssertEqual(fresh.values, ["will /items #1", "did 200"])
        XCTAssertEqual(hits.requests.count, 1)
    }

    func testCoalescedCallsAreOneAttemptForTheClientsPlugins() throws {
        let events = Recorder<String>()
        let gate = Promise<Void>()
        let transport = FakeTransport()
        transport.stub("/items", with: FakeResponse.status(200).released(by: gate.future))
        let connect = Connect(
            transport: transport, retryPolicy: nil,
            settings: Connect.Settings(
                coalescesIdenticalRequests: true, options: RequestOptions(plugins: [recording(events)])))
        let calls = (0..<3).map { _ in connect.request(Endpoint()) }
        gate.succeed(())
        for call in calls { _ = try call.wait(timeout: 5) }
        settle(events, count: 2)
        XCTAssertEqual(events.values, ["will /items #1", "did 200"])
        XCTAssertEqual(transport.requests.count, 1)
    }

    /// The first of two coalesced calls is cancelled while their shared request waits in the queue: the second still
    /// wants the answer, so the shared request goes when the queue lets it, and the plugins hear of it.
    func testASharedRequestGoesForTheCallersLeftWhenTheFirstIsCancelledInTheQueue() throws {
        let events = Recorder<String>()
        let transport = ManualTransport()
        let connect = Connect(
            transport: transport, retryPolicy: nil, requestQueue: RequestQueue(maxConcurrentRequests: 1),
            settings: Connect.Settings(
                coalescesIdenticalRequests: true, options: RequestOptions(plugins: [recording(events)])))
        let busy = connect.request(Endpoint(endpoint: "/busy"))
        let first = connect.request(Endpoint())
        let second = connect.request(Endpoint())
        XCTAssertEqual(transport.requests.count, 1)
        first.cancel()
        XCTAssertEqual(connectError(of: first)?.kind, .cancelled)
        transport.respond(to: 0)
        XCTAssertNotNil(value(of: busy))
        transport.wait(forRequests: 2)
        XCTAssertEqual(transport.requests.map { $0.url?.path }, ["/busy", "/items"])
        if transport.requests.count == 2 { transport.respond(to: 1, body: Data("x".utf8)) }
        XCTAssertEqual(value(of: second), Data("x".utf8))
        settle(events, count: 4)
        XCTAssertEqual(events.values, ["will /busy #1", "did 200", "will /items #1", "did 200"])
    }

    func testAMethodsPluginsAreToldAfterTheClientsAndBeforeTheCalls() throws {
        let events = Recorder<String>()
        let connect = Connect(
            transport: FakeTransport.answering(.status(200)), retryPolicy: nil,
            settings: Connect.Settings(
                options: RequestOptions(plugins: [recording(events, tag: "client.")]),
                methodOptions: [.get: RequestOptions(plugins: [recording(events, tag: "get.")])]))
        _ = try connect.request(Endpoint(), options: RequestOptions(plugins: [recording(events, tag: "call.")]))
            .wait(timeout: 5)
        settle(events, count: 6)
        XCTAssertEqual(
            events.values,
            [
                "client.will /items #1", "get.will /items #1", "call.will /items #1",
                "client.did 200", "get.did 200", "call.did 200",
            ])
        // Only the method's: a POST hears nothing from the GET's plugin.
        let post = Recorder<String>()
        let other = Connect(
            transport: FakeTransport.answering(.status(200)), retryPolicy: nil,
            settings: Connect.Settings(methodOptions: [.get: RequestOptions(plugins: [recording(post)])]))
        var endpoint = Endpoint()
        endpoint.method = .post
        _ = try other.request(endpoint).wait(timeout: 5)
        settle(post, count: 0)
        XCTAssertEqual(post.values, [])
    }

    // MARK: - Calls that fail before they are sent

    func testACallsHeaderWithCRLFFailsBeforeAnyStageAndTellsNoPlugin() throws {
        let events = Recorder<String>()
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(
            transport: transport, retryPolicy: nil,
            settings: Connect.Settings(options: RequestOptions(plugins: [recording(events)])))
        let error = connectError(
            of: connect.request(
                Endpoint(), options: RequestOptions(headers: [HTTPHeader(name: "X-A", value: "a\r\nX-B: b")])))
        XCTAssertEqual(error?.kind, .invalidRequest)
        XCTAssertEqual(error?.invalidRequestReason, .invalidHeader(name: "X-A"))
        settle(events, count: 0)
        XCTAssertEqual(events.values, [])
        XCTAssertTrue(transport.requests.isEmpty)
    }

    func testAMiddlewaresHeaderWithCRLFIsToldAsRefused() throws {
        let events = Recorder<String>()
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(
            transport: transport, middlewares: [.adapter { $0.setValue("a\nb", forHTTPHeaderField: "X-A") }],
            retryPolicy: nil, settings: Connect.Settings(options: RequestOptions(plugins: [recording(events)])))
        let error = connectError(of: connect.request(Endpoint()))
        XCTAssertEqual(error?.invalidRequestReason, .invalidHeader(name: "X-A"))
        settle(events, count: 2)
        XCTAssertEqual(events.values, ["will /items #1", "fail invalidRequest"])
        XCTAssertTrue(transport.requests.isEmpty)
    }

    /// The same with a response cache: its stage refused the request itself, before the plugins' and observers'
    /// stage, which heard nothing (a monitor missed the failure, an observer saw a call end after no attempt).
    func testAMiddlewaresHeaderWithCRLFIsToldAsRefusedWithACache() throws {
        let events = Recorder<String>()
        let transport = FakeTransport.answering(.status(200))
        let observer = ConnectObserverTests.RecordingObserver()
        let connect = Connect(
            transport: transport, middlewares: [.adapter { $0.setValue("a\nb", forHTTPHeaderField: "X-A") }],
            retryPolicy: nil, responseCache: ResponseCache(defaultRule: CacheRule(timeToLive: 60)),
            settings: Connect.Settings(options: RequestOptions(plugins: [recording(events)]), observers: [observer]))
        let error = connectError(of: connect.request(Endpoint()))
        XCTAssertEqual(error?.invalidRequestReason, .invalidHeader(name: "X-A"))
        settle(events, count: 2)
        XCTAssertEqual(events.values, ["will /items #1", "fail invalidRequest"])
        XCTAssertEqual(observer.events.values.filter { $0.hasPrefix("start") || $0.hasPrefix("end") }.count, 2)
        XCTAssertTrue(transport.requests.isEmpty)
    }

    /// The call's deadline passes while a slow middleware holds the request, which it then hands on: nothing is sent
    /// (the call is over). Plugins heard of a send, then of a failure as "cancelled": a monitor counted a timeout as
    /// the user's cancellation, and a send that never happened. Now they hear nothing, as observers do.
    func testARequestHandedOnAfterTheDeadlineIsNotToldAsACancellation() throws {
        let events = Recorder<String>()
        let transport = FakeTransport.answering(.status(200))
        // Holds the request until the test has seen the deadline pass, then hands it on.
        let release = Gate()
        let handedOn = expectation(description: "the held request was handed on and answered")
        let slow = AnyMiddleware { request, _, next in
            let promise = Promise<ConnectResponse>()
            let held = request
            DispatchQueue.global().async {
                release.wait(timeout: 10)
                next(held).whenComplete {
                    promise.completeIfPending(with: $0)
                    handedOn.fulfill()
                }
            }
            return promise.future
        }
        let connect = Connect(
            transport: transport, middlewares: [slow], retryPolicy: nil,
            settings: Connect.Settings(options: RequestOptions(plugins: [recording(events)])))
        let error = connectError(of: connect.request(Endpoint(timeout: 0.05)))
        XCTAssertEqual(error?.kind, .timedOut)
        release.open()
        wait(for: [handedOn], timeout: 10)
        Connect.pluginQueue.sync {}
        XCTAssertTrue(transport.requests.isEmpty)
        XCTAssertEqual(events.values, [], "told of a send after the call's end")
    }

    /// An attempt its own timeout abandons is told failed before the next attempt is told sent, when the retry
    /// starts at once (no backoff): each `willSend` is followed by its own end, as the plugin documentation has it,
    /// also behind a middleware that maps the response (the cancellation reaches its future first).
    func testAnAttemptItsOwnTimeoutAbandonedIsToldEndedBeforeTheRetryIsToldSent() throws {
        let events = Recorder<String>()
        let transport = FakeTransport()
        transport.stub("/items", with: [.never, .status(200)])
        let mapping = AnyMiddleware { request, _, next in next(request).map { $0 } }
        let connect = Connect(
            transport: transport, middlewares: [mapping],
            retryPolicy: RetryPolicy(maxAttempts: 2, baseDelay: 0, attemptTimeout: 0.05),
            settings: Connect.Settings(options: RequestOptions(plugins: [recording(events)])))
        _ = try connect.request(Endpoint(timeout: 10)).wait(timeout: 5)
        settle(events, count: 4)
        XCTAssertEqual(events.values, ["will /items #1", "fail timedOut", "will /items #2", "did 200"])
    }

    // MARK: - Cancellation

    func testACallCancelledWhileQueuedTellsNothingAndOneCancelledInFlightIsBalanced() throws {
        let events = Recorder<String>()
        let transport = ManualTransport()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let connect = Connect(
            transport: transport, retryPolicy: nil, requestQueue: queue,
            settings: Connect.Settings(options: RequestOptions(plugins: [recording(events)])))
        let running = connect.request(Endpoint(endpoint: "/running"))
        let waiting = connect.request(Endpoint(endpoint: "/waiting"))
        waiting.cancel()
        running.cancel()
        XCTAssertEqual(connectError(of: waiting)?.kind, .cancelled)
        XCTAssertEqual(connectError(of: running)?.kind, .cancelled)
        settle(events, count: 2)
        XCTAssertEqual(events.values, ["will /running #1", "fail cancelled"])
        XCTAssertEqual(transport.requests.count, 1)
    }

    // MARK: - Streams

    func testAStreamIsToldAtItsHeadOnce() async throws {
        let events = Recorder<String>()
        let transport = FakeTransport.answering(
            .stream([Data("a".utf8), Data("b".utf8)]))
        let connect = Connect(
            transport: transport, retryPolicy: nil,
            settings: Connect.Settings(options: RequestOptions(plugins: [recording(events)])))
        var body = Data()
        for try await chunk in connect.stream(ConnectRequest(url: URL(string: "https://api.example.com/items")!)) {
            body.append(chunk)
        }
        XCTAssertEqual(body, Data("ab".utf8))
        settle(events, count: 2)
        XCTAssertEqual(events.values, ["will /items #1", "did 200"])
    }

    // MARK: - Many calls at once

    func testAHundredConcurrentCallsAreToldOneEventAtATimeAndBalanced() throws {
        final class Tally: ConnectPlugin, @unchecked Sendable {
            // @unchecked Sendable: what the plugin queue promises (one event at a time); `inside` checks it, and
            // under the thread sanitizer two events at once are a reported race on these vars.
            var inside = 0
            var overlaps = 0
            var sent: Set<String> = []
            var ended: Set<String> = []
            var endedBeforeSent = 0
            let done = DispatchSemaphore(value: 0)

            private func enter() {
                inside += 1
                if inside > 1 { overlaps += 1 }
            }

            func willSend(_ request: URLRequest, context: RequestContext) {
                enter()
                sent.insert(request.url!.path)
                inside -= 1
            }
            func didReceive(_ response: ConnectResponse, context: RequestContext) {
                enter()
                let path = response.response.url?.path ?? ""
                if !sent.contains(path) { endedBeforeSent += 1 }
                ended.insert(path)
                inside -= 1
                done.signal()
            }
            func didFail(_ error: any Error, request: URLRequest, context: RequestContext) {
                enter()
                ended.insert(request.url!.path)
                inside -= 1
                done.signal()
            }
        }
        let tally = Tally()
        let transport = FakeTransport(fallback: FakeResponse.status(200).delayed(by: 0.01))
        let connect = Connect(
            transport: transport, retryPolicy: nil,
            settings: Connect.Settings(options: RequestOptions(plugins: [tally])))
        let calls = Recorder<Future<Data>>()
        DispatchQueue.concurrentPerform(iterations: 100) { index in
            calls.append(connect.request(Endpoint(endpoint: "/items/\(index)")))
        }
        for call in calls.values { _ = try call.wait(timeout: 10) }
        for _ in 0..<100 { XCTAssertEqual(tally.done.wait(timeout: .now() + 10), .success) }
        // Any event told after the last end would have run by now.
        Connect.pluginQueue.sync {}
        XCTAssertEqual(tally.overlaps, 0)
        XCTAssertEqual(tally.sent.count, 100)
        XCTAssertEqual(tally.ended.count, 100)
        XCTAssertEqual(tally.endedBeforeSent, 0)
    }
}
