import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The ``ConnectivityMiddleware`` letting its held requests go: a drop delivered meanwhile keeps the rest waiting, in
/// the order they came, instead of sending them into a dead network; cancellations, deadlines and a released client.
final class ConnectivityReleaseTests: XCTestCase {
    struct Item: Connector {
        var id: Int
        var timeout: TimeInterval = 10
        var options = RequestOptions()
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/items/\(id)" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
    }

    /// A monitor that calls its observers at once, on the thread that reports a change, even inside an observer
    /// (a monitor of the app's may: the protocol asks only for one call per change, in order).
    final class ImmediateMonitor: ConnectivityMonitor, Sendable {
        private let state = Guarded<(current: Connectivity, handlers: [@Sendable (Connectivity) -> Void])>(
            (.disconnected, []))
        var current: Connectivity { state.snapshot.current }
        func observe(_ handler: @escaping @Sendable (Connectivity) -> Void) -> ConnectivityObservation {
            state.withLock { $0.handlers.append(handler) }
            return ConnectivityObservation {}
        }
        func set(_ new: Connectivity) {
            let handlers = state.withLock { state -> [@Sendable (Connectivity) -> Void] in
                guard state.current != new else { return [] }
                state.current = new
                return state.handlers
            }
            for handler in handlers { handler(new) }
        }
    }

    private var transport: FakeTransport!

    override func setUp() {
        transport = FakeTransport(fallback: .json(["ok": true]))
    }

    private var paths: [String] { transport.requests.compactMap { $0.url?.path } }

    /// A stage after the connectivity middleware that runs `action` once, when the request for `path` passes it.
    private func onFirstPass(of path: String, _ action: @escaping @Sendable () -> Void) -> AnyMiddleware {
        let done = Guarded(false)
        return AnyMiddleware { request, _, next in
            let runs =
                request.url.path == path
                && done.withLock { done in
                    defer { done = true }
                    return !done
                }
            if runs { action() }
            return next(request)
        }
    }

    /// A monitor that delivers the drop at once, inside the release.
    func testADropDeliveredInsideTheReleaseKeepsTheRestWaiting() throws {
        let network = ImmediateMonitor()
        let connect = Connect(
            transport: transport,
            middlewares: [
                ConnectivityMiddleware(monitor: network, policy: .waitForConnectivity),
                onFirstPass(of: "/items/1") { network.set(.disconnected) },
            ],
            retryPolicy: nil)
        let futures = (1...3).map { connect.request(Item(id: $0)) }

        network.set(.connected)

        XCTAssertNoThrow(try futures[0].wait(timeout: 5))
        XCTAssertEqual(paths, ["/items/1"])
        XCTAssertFalse(futures[1].isCompleted)
        network.set(.connected)
        for future in futures { XCTAssertNoThrow(try future.wait(timeout: 5)) }
        XCTAssertEqual(paths, ["/items/1", "/items/2", "/items/3"])
    }

    /// A waiting request cancelled while the others are released (from the first one's pipeline) is not sent; it
    /// fails `cancelled` at once, and the one after it still goes.
    func testARequestCancelledDuringTheReleaseIsNotSent() throws {
        let network = FakeConnectivityMonitor(.disconnected)
        let cancelled = Guarded<Future<Data>?>(nil)
        let connect = Connect(
            transport: transport,
            middlewares: [
                ConnectivityMiddleware(monitor: network, policy: .waitForConnectivity),
                onFirstPass(of: "/items/1") { cancelled.snapshot?.cancel() },
            ],
            retryPolicy: nil)
        let first = connect.request(Item(id: 1))
        let second = connect.request(Item(id: 2))
        let third = connect.request(Item(id: 3))
        cancelled.withLock { $0 = second }

        network.goOnline()

        XCTAssertNoThrow(try first.wait(timeout: 5))
        XCTAssertNoThrow(try third.wait(timeout: 5))
        guard case .failure(let error) = try second.waitForResult(timeout: 5) else { return XCTFail("it was sent") }
        XCTAssertEqual((error as? ConnectError)?.kind, .cancelled, "\(error)")
        XCTAssertEqual(paths, ["/items/1", "/items/3"])
    }

    // MARK: - A client released while its requests wait

    /// A request waiting for the network when its client is released still ends: at its deadline, unsent…
    func testARequestWaitingWhenItsClientIsReleasedEndsAtItsDeadline() throws {
        let network = FakeConnectivityMonitor(.disconnected)
        var connect: Connect? = Connect(
            transport: transport, middlewares: [ConnectivityMiddleware(monitor: network)], retryPolicy: nil)
        let future = try XCTUnwrap(connect).request(Item(id: 1, timeout: 0.3))
        connect = nil

        guard case .failure(let error) = try future.waitForResult(timeout: 5) else { return XCTFail("it was sent") }
        XCTAssertEqual((error as? ConnectError)?.kind, .timedOut, "\(error)")
        network.goOnline()
        XCTAssertTrue(transport.requests.isEmpty)
    }

    /// …or when the network returns first, sent.
    func testARequestWaitingWhenItsClientIsReleasedGoesWhenTheNetworkReturns() throws {
        let network = FakeConnectivityMonitor(.disconnected)
        var connect: Connect? = Connect(
            transport: transport, middlewares: [ConnectivityMiddleware(monitor: network)], retryPolicy: nil)
        let future = try XCTUnwrap(connect).request(Item(id: 1))
        connect = nil

        network.goOnline()
        XCTAssertNoThrow(try future.wait(timeout: 5))
        XCTAssertEqual(paths, ["/items/1"])
    }

    /// A request waiting in the queue the middleware holds when the client is released keeps the hold (it is still
    /// the client's call), and starts when the network returns.
    func testARequestWaitingInTheHeldQueueWhenItsClientIsReleasedGoesWhenTheNetworkReturns() throws {
        let network = FakeConnectivityMonitor(.connected)
        let gate = Promise<Void>()
        transport.stub("/items/1", with: FakeResponse.json(["ok": true]).released(by: gate.future))
        let queue = RequestQueue(maxConcurrentRequests: 1)
        var connect: Connect? = Connect(
            transport: transport,
            middlewares: [ConnectivityMiddleware(monitor: network, pausing: queue)],
            retryPolicy: nil, requestQueue: queue)
        let running = try XCTUnwrap(connect).request(Item(id: 1))
        let waiting = try XCTUnwrap(connect).request(Item(id: 2))
        network.goOffline()
        connect = nil
        gate.succeed(())
        XCTAssertNoThrow(try running.wait(timeout: 5))

        XCTAssertTrue(queue.isPaused)
        XCTAssertFalse(waiting.isCompleted)
        network.goOnline()
        XCTAssertNoThrow(try waiting.wait(timeout: 5))
        XCTAssertEqual(paths, ["/items/1", "/items/2"])
    }
}
