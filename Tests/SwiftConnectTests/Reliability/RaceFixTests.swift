import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Orderings a review of the state machines found wrong, each made to happen deterministically: a connectivity
/// change between reading the monitor and applying it, a request cancelled while the network returns, a cached
/// response stored after the app removed it, a stream refused by a validator, a server's huge `retry:`.
final class RaceFixTests: XCTestCase {
    private struct Item: Connector {
        var path: String
        var options = RequestOptions()
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { path }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
    }

    // MARK: - Connectivity

    /// A monitor whose state, read by a new client, is stale: a change to offline is delivered between the
    /// observer's registration and the read's result, as a monitor's queue can deliver it on another thread.
    private final class StaleReadMonitor: ConnectivityMonitor, Sendable {
        let observers = ConnectivityObservers(initial: .connected)
        var current: Connectivity {
            let stale = observers.current
            observers.update(.disconnected)
            return stale
        }
        func observe(_ handler: @escaping @Sendable (Connectivity) -> Void) -> ConnectivityObservation {
            observers.add(handler)
        }
    }

    /// A client dumped (`dump(_:)`, a debugger) while its calls start, end and are cancelled on other threads: its
    /// locked state (the calls in flight, their futures) is read under its locks, as ThreadSanitizer checks in CI.
    func testAClientDumpedWhileItsCallsRunReadsItsStateUnderItsLocks() {
        let transport = FakeTransport()
        transport.stub(.get, "/slow", with: .never)
        transport.stub(.get, "/fast", with: .json(string: "{}"))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let finished = DispatchGroup()
        DispatchQueue.global().async(group: finished) {
            for index in 0..<300 {
                let path = index.isMultiple(of: 2) ? "/slow" : "/fast"
                let call: Future<Data> = connect.request(ClientFixtures.Endpoint(endpoint: path))
                call.cancel()
            }
        }
        var text = ""
        repeat {
            text = ""
            dump(connect, to: &text)
        } while finished.wait(timeout: .now()) == .timedOut
        XCTAssertTrue(text.contains("Connect"), text)
    }

    func testAChangeDeliveredWhileTheClientReadsTheStateWins() throws {
        let transport = FakeTransport(fallback: .json(["ok": true]))
        let connect = Connect(
            transport: transport,
            middlewares: [ConnectivityMiddleware(monitor: StaleReadMonitor(), policy: .failFast)])
        let result = try connect.request(Item(path: "/a")).waitForResult(timeout: 5)
        guard case .failure(let error as ConnectError) = result else { return XCTFail("sent while offline: \(result)") }
        XCTAssertEqual(error.kind, .notConnected)
        XCTAssertTrue(transport.requests.isEmpty)
    }

    func testARequestCancelledWhileTheNetworkReturnsIsNotSent() throws {
        // Given: two requests waiting for the network; the first one's sending cancels the second
        let network = FakeConnectivityMonitor(.disconnected)
        let second = Protected<Future<Data>?>(nil)
        let transport = FakeTransport.answering(
            .handler { request in
                if request.url?.path == "/first" { second.snapshot?.cancel() }
                return .success(ConnectResponse(request: request, statusCode: 200)!)
            })
        let connect = Connect(
            transport: transport, middlewares: [ConnectivityMiddleware(monitor: network)], retryPolicy: nil)
        let first = connect.request(Item(path: "/first"))
        second.withLock { $0 = connect.request(Item(path: "/second")) }
        // When: the network returns; the gate takes both out, sends the first, which cancels the second
        network.goOnline()
        // Then
        XCTAssertNoThrow(try first.wait(timeout: 5))
        let result = try XCTUnwrap(second.snapshot).waitForResult(timeout: 5)
        guard case .failure(let error as ConnectError) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(error.kind, .cancelled)
        XCTAssertEqual(transport.requests.map { $0.url?.path }, ["/first"], "a cancelled request was sent")
    }

    func testCancellingARequestReleasedByTheNetworkCancelsItsTransfer() throws {
        let network = FakeConnectivityMonitor(.disconnected)
        let transport = FakeTransport(fallback: .never)
        let connect = Connect(
            transport: transport, middlewares: [ConnectivityMiddleware(monitor: network)], retryPolicy: nil)
        let future = connect.request(Item(path: "/slow"))
        network.goOnline()
        _ = try transport.requestsReceived(count: 1).wait(timeout: 5)
        future.cancel()
        XCTAssertEqual(transport.cancelledRequests.map { $0.url?.path }, ["/slow"])
    }

    // MARK: - Cache

    func testAResponseArrivingAfterRemoveAllIsNotStored() throws {
        // Given: a cached GET in flight
        let gate = Promise<Void>()
        let transport = FakeTransport()
        transport.stub(.get, "/me", with: [.json(["user": "amy"]).released(by: gate.future), .json(["user": "bob"])])
        let cache = ResponseCache()
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        let rule = RequestOptions(cache: CacheRule(timeToLive: 300))
        let amy = connect.request(Item(path: "/me", options: rule))
        // When: the app clears the cache (a sign-out), then the old answer arrives
        cache.removeAll()
        gate.succeed(())
        XCTAssertNoThrow(try amy.wait(timeout: 5))
        // Then: the next request goes to the network, not to the answer fetched before the removal
        let next = try connect.request(Item(path: "/me", options: rule)).wait(timeout: 5)
        XCTAssertEqual(String(decoding: next, as: UTF8.self), #"{"user":"bob"}"#)
        XCTAssertEqual(transport.requests.count, 2)
    }

    func testAnOlderFetchEndingLastDoesNotReplaceANewerOne() throws {
        // Given: a cached GET in flight, then a refetch that bypasses the cache and ends first
        let gate = Promise<Void>()
        let transport = FakeTransport()
        transport.stub(.get, "/price", with: [.json(["v": 1]).released(by: gate.future), .json(["v": 2])])
        let cache = ResponseCache()
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        let old = connect.request(Item(path: "/price", options: RequestOptions(cache: CacheRule(timeToLive: 300))))
        let refetch = RequestOptions(cache: CacheRule(timeToLive: 300, bypassesCache: true))
        XCTAssertNoThrow(try connect.request(Item(path: "/price", options: refetch)).wait(timeout: 5))
        // When: the older fetch ends last
        gate.succeed(())
        XCTAssertNoThrow(try old.wait(timeout: 5))
        // Then: the cache serves the newer answer
        let cached = try connect.request(
            Item(path: "/price", options: RequestOptions(cache: CacheRule(timeToLive: 300)))
        )
        .wait(timeout: 5)
        XCTAssertEqual(String(decoding: cached, as: UTF8.self), #"{"v":2}"#)
        XCTAssertEqual(transport.requests.count, 2, "served from the cache")
    }

    // MARK: - Streams

    /// A transport that answers with a streamed head whose body never ends, and says when it was stopped.
    private struct EndlessStream: Transport {
        let body = ResponseBodyStream(options: StreamingOptions())
        func send(_ request: URLRequest) -> Future<ConnectResponse> {
            send(request, transfer: TransferOptions())
        }
        func send(_ request: URLRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
            var response = ConnectResponse(
                request: request, statusCode: 200, headers: ["Content-Type": "text/plain"])!
            response.bodyStream = body
            return Future(value: response)
        }
    }

    func testAStreamedHeadAValidatorRefusesStopsItsTransfer() async throws {
        let transport = EndlessStream()
        let stopped = Promise<Void>()
        transport.body.setCancelHandler { stopped.succeed(()) }
        let refuse = AnyResponseValidator { _ in throw URLError(.cannotParseResponse) }
        let connect = Connect(transport: transport, retryPolicy: nil)
        let stream = connect.stream(Item(path: "/feed", options: RequestOptions(validators: [refuse])))
        do {
            _ = try await stream.response
            XCTFail("the validator refused the head")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .rejected)
        }
        XCTAssertNoThrow(try stopped.future.wait(timeout: 5), "nobody stopped the body nobody will read")
        XCTAssertFalse(transport.body.isOpen)
    }

    func testAProducerWaitingOnASlowReaderIsAlwaysLetGo() async throws {
        // Every chunk fills the buffer to its threshold: each send waits until the reader takes it.
        let body = ResponseBodyStream(options: StreamingOptions(bufferLimit: 64))
        let count = 20_000
        let producer = Task {
            for _ in 0..<count {
                guard await body.send(Data(count: 64)) else { return }
            }
            body.finish()
        }
        var head = ConnectResponse(
            request: URLRequest(url: URL(string: "https://api.example.com/feed")!), statusCode: 200)!
        head.bodyStream = body
        let answer = head
        let transport = FakeTransport(fallback: .handler { _ in .success(answer) })
        let stream = Connect(transport: transport, retryPolicy: nil).stream(Item(path: "/feed"))
        let done = Promise<Int>()
        Task {
            var received = 0
            do {
                for try await chunk in stream { received += chunk.count }
                done.succeed(received)
            } catch {
                done.fail(error)
            }
        }
        let received = try await done.future.value(timeout: 60)
        XCTAssertEqual(received, count * 64)
        await producer.value
    }

    func testAServersHugeRetryIsALongWaitNotACrash() async throws {
        let transport = FakeTransport()
        transport.stub(
            .get, "/events",
            with: .stream(
                [Data("retry: 99999999999999999999\ndata: a\n\n".utf8)],
                headers: ["Content-Type": "text/event-stream"]))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let first = Promise<Void>()
        let reading = Task {
            for try await _ in connect.eventSource(Item(path: "/events")) { first.succeed(()) }
        }
        try await first.future.value(timeout: 5)
        // The stream ended: the source now waits the server's retry (capped) before reconnecting; stop it.
        reading.cancel()
        let outcome = await reading.result
        guard case .failure = outcome else { return XCTFail("the source ended without being stopped") }
        XCTAssertEqual(transport.requests.count, 1)
    }
}
