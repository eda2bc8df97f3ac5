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

    // MARK: - Requests made while the held ones are let go

    /// A request made while the held ones go (here inside the first one's pipeline) goes after them, in the order
    /// the calls were made: it once went straight through, ahead of the held requests still to go.
    func testARequestMadeDuringTheReleaseGoesAfterTheHeldOnes() throws {
        let network = FakeConnectivityMonitor(.disconnected)
        let client = Guarded<Connect?>(nil)
        let late = Guarded<Future<Data>?>(nil)
        let connect = Connect(
            transport: transport,
            middlewares: [
                ConnectivityMiddleware(monitor: network, policy: .waitForConnectivity),
                onFirstPass(of: "/items/1") {
                    let future = client.snapshot?.request(Item(id: 4))
                    late.withLock { $0 = future }
                },
            ],
            retryPolicy: nil)
        client.withLock { $0 = connect }
        defer { client.withLock { $0 = nil } }
        let futures = (1...3).map { connect.request(Item(id: $0)) }

        network.goOnline()

        for future in futures { XCTAssertNoThrow(try future.wait(timeout: 5)) }
        XCTAssertNoThrow(try XCTUnwrap(late.snapshot).wait(timeout: 5))
        XCTAssertEqual(paths, ["/items/1", "/items/2", "/items/3", "/items/4"])
    }

    /// The same for a request made on another thread while the release is under way: it waits for the held
    /// requests before it, and then goes.
    func testARequestMadeOnAnotherThreadDuringTheReleaseWaitsForTheHeldOnes() throws {
        let network = FakeConnectivityMonitor(.disconnected)
        let entered = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let passed = Guarded<[String]>([])
        let connect = Connect(
            transport: transport,
            middlewares: [
                ConnectivityMiddleware(monitor: network, policy: .waitForConnectivity),
                // Records what the connectivity middleware let through; holds the thread letting /items/1 go.
                AnyMiddleware { request, _, next in
                    passed.withLock { $0.append(request.url.path) }
                    if request.url.path == "/items/1" {
                        entered.signal()
                        proceed.wait()
                    }
                    return next(request)
                },
            ],
            retryPolicy: nil)
        let futures = (1...3).map { connect.request(Item(id: $0)) }
        DispatchQueue.global().async { network.goOnline() }
        XCTAssertEqual(entered.wait(timeout: .now() + 5), .success)

        // While /items/1 is being let go, another thread (this one) makes a request.
        let late = connect.request(Item(id: 4))
        XCTAssertEqual(passed.snapshot, ["/items/1"], "the new request overtook the held ones")
        proceed.signal()

        for future in futures + [late] { XCTAssertNoThrow(try future.wait(timeout: 5)) }
        XCTAssertEqual(passed.snapshot, ["/items/1", "/items/2", "/items/3", "/items/4"])
        XCTAssertEqual(paths, ["/items/1", "/items/2", "/items/3", "/items/4"])
    }

    /// A request made during the release and cancelled before its turn is not sent.
    func testARequestMadeDuringTheReleaseAndCancelledBeforeItsTurnIsNotSent() throws {
        let network = FakeConnectivityMonitor(.disconnected)
        let client = Guarded<Connect?>(nil)
        let late = Guarded<Future<Data>?>(nil)
        let connect = Connect(
            transport: transport,
            middlewares: [
                ConnectivityMiddleware(monitor: network, policy: .waitForConnectivity),
                onFirstPass(of: "/items/1") {
                    let future = client.snapshot?.request(Item(id: 4))
                    future?.cancel()
                    late.withLock { $0 = future }
                },
            ],
            retryPolicy: nil)
        client.withLock { $0 = connect }
        defer { client.withLock { $0 = nil } }
        let futures = (1...3).map { connect.request(Item(id: $0)) }

        network.goOnline()

        for future in futures { XCTAssertNoThrow(try future.wait(timeout: 5)) }
        guard case .failure(let error) = try XCTUnwrap(late.snapshot).waitForResult(timeout: 5) else {
            return XCTFail("it was sent")
        }
        XCTAssertEqual((error as? ConnectError)?.kind, .cancelled, "\(error)")
        XCTAssertEqual(paths, ["/items/1", "/items/2", "/items/3"])
    }

    /// A held request whose deadline passes while the ones before it are let go fails `timedOut`, unsent; the
    /// release goes on with the next one.
    func testAHeldRequestWhoseDeadlinePassesDuringTheReleaseIsNotSent() throws {
        let network = FakeConnectivityMonitor(.disconnected)
        let expiring = Guarded<Future<Data>?>(nil)
        let connect = Connect(
            transport: transport,
            middlewares: [
                ConnectivityMiddleware(monitor: network, policy: .waitForConnectivity),
                // Lets /items/1 go on only once /items/2 has reached its deadline.
                onFirstPass(of: "/items/1") { _ = try? expiring.snapshot?.waitForResult(timeout: 5) },
            ],
            retryPolicy: nil)
        let first = connect.request(Item(id: 1))
        let second = connect.request(Item(id: 2, timeout: 0.3))
        let third = connect.request(Item(id: 3))
        expiring.withLock { $0 = second }

        network.goOnline()

        XCTAssertNoThrow(try first.wait(timeout: 5))
        XCTAssertNoThrow(try third.wait(timeout: 5))
        guard case .failure(let error) = try second.waitForResult(timeout: 5) else { return XCTFail("it was sent") }
        XCTAssertEqual((error as? ConnectError)?.kind, .timedOut, "\(error)")
        XCTAssertEqual(paths, ["/items/1", "/items/3"])
    }

    /// A request made during the release keeps its policy if the network goes before its turn: under fail fast it
    /// fails `notConnected`, unsent; one that waits for the network goes after the held ones when it returns.
    func testARequestMadeDuringTheReleaseKeepsItsPolicyWhenTheNetworkGoesBeforeItsTurn() throws {
        let network = ImmediateMonitor()
        let client = Guarded<Connect?>(nil)
        let late = Guarded<[Future<Data>]>([])
        let connect = Connect(
            transport: transport,
            middlewares: [
                ConnectivityMiddleware(monitor: network, policy: .waitForConnectivity),
                onFirstPass(of: "/items/1") {
                    var failFast = Item(id: 4)
                    failFast.options = RequestOptions(connectivity: .failFast)
                    let futures = [failFast, Item(id: 5)].compactMap { client.snapshot?.request($0) }
                    late.withLock { $0 = futures }
                    network.set(.disconnected)
                },
            ],
            retryPolicy: nil)
        client.withLock { $0 = connect }
        defer { client.withLock { $0 = nil } }
        let futures = (1...3).map { connect.request(Item(id: $0)) }

        network.set(.connected)

        XCTAssertNoThrow(try futures[0].wait(timeout: 5))
        let made = late.snapshot
        XCTAssertEqual(made.count, 2)
        guard case .failure(let error) = try XCTUnwrap(made.first).waitForResult(timeout: 5) else {
            return XCTFail("the fail-fast request was sent")
        }
        XCTAssertEqual((error as? ConnectError)?.kind, .notConnected, "\(error)")
        XCTAssertFalse(futures[1].isCompleted)
        XCTAssertFalse(made[1].isCompleted)
        network.set(.connected)
        for future in futures + [made[1]] { XCTAssertNoThrow(try future.wait(timeout: 5)) }
        XCTAssertEqual(paths, ["/items/1", "/items/2", "/items/3", "/items/5"])
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
        let queue = RequestQueue(maxConcurrentRequests: 1)
        try assertAWaitingRequestGoesWhenTheNetworkReturns(
            afterItsClientIsReleased: { queue }, whileOffline: { XCTAssertTrue(queue.isPaused) })
    }

    /// The same with a queue only the client held (made where the client is): the middleware holds the queue weakly,
    /// so that a queue the app paused and let go of is freed, but strongly while it holds it for the network. Held
    /// weakly all along, the queue went with the client, and its `deinit` failed the waiting request `cancelled`.
    func testARequestWaitingInAHeldQueueOnlyItsClientHeldGoesWhenTheNetworkReturns() throws {
        try assertAWaitingRequestGoesWhenTheNetworkReturns(afterItsClientIsReleased: {
            RequestQueue(maxConcurrentRequests: 1)
        })
    }

    /// Sends `/items/1` (held until its client is released offline) and `/items/2`, waiting in the queue `makeQueue`
    /// makes, through a client whose connectivity middleware pauses it while offline; goes offline, lets the client
    /// go, then the first answer; runs `whileOffline`; goes online, and checks the waiting request goes.
    private func assertAWaitingRequestGoesWhenTheNetworkReturns(
        afterItsClientIsReleased makeQueue: () -> RequestQueue, whileOffline: () -> Void = {}, line: UInt = #line
    ) throws {
        let network = FakeConnectivityMonitor(.connected)
        let gate = Promise<Void>()
        transport.stub("/items/1", with: FakeResponse.json(["ok": true]).released(by: gate.future))
        var connect: Connect? = {
            let queue = makeQueue()
            return Connect(
                transport: transport, middlewares: [ConnectivityMiddleware(monitor: network, pausing: queue)],
                retryPolicy: nil, requestQueue: queue)
        }()
        let running = try XCTUnwrap(connect, line: line).request(Item(id: 1))
        let waiting = try XCTUnwrap(connect, line: line).request(Item(id: 2))
        network.goOffline()
        connect = nil
        gate.succeed(())
        XCTAssertNoThrow(try running.wait(timeout: 5), line: line)

        whileOffline()
        XCTAssertFalse(waiting.isCompleted, line: line)
        network.goOnline()
        XCTAssertNoThrow(try waiting.wait(timeout: 5), line: line)
        XCTAssertEqual(paths, ["/items/1", "/items/2"], line: line)
    }
}
