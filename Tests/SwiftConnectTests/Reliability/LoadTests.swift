import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Reliability item 4: thousands of requests through real `URLSession` to `LocalServer`, 64 in flight.
///
/// The window is kept by the client's own ``RequestQueue`` (`maxConcurrentRequests: 64`), not by the test: the
/// test submits every request at once, so the queue is under load too. The transport's session allows 64
/// connections per host, so the server really sees up to 64 requests at once.
///
/// Every request asks for its own id (`/items/{id}`); the server counts per id what it served, and the test
/// records per id every result its observer received. No test measures time: waits are bounded, generously.
/// Under a sanitizer the suite runs at a reduced size (``requestCount``).
final class LoadTests: XCTestCase {
    private struct Item: Codable, Equatable, Sendable {
        let id: Int
    }

    private struct GetItem: TypedConnector {
        typealias Response = Item
        let baseURL: URL
        let id: Int
        var endpoint: String { "/items/{id}" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { Parameter.path(key: "id", value: "\(id)") }
    }

    /// 2,000 requests; 400 under ThreadSanitizer or AddressSanitizer, which slow everything down many times.
    private static let requestCount = ProcessMemory.isSanitized ? 400 : 2_000
    /// The requests in flight at once.
    private static let window = 64
    /// The longest wait for all the requests of one run: far above what they need, so only a hang trips it.
    private static let runTimeout: TimeInterval = 180

    private var server: LocalServer!

    override func setUpWithError() throws {
        server = LocalServer(recordsRequests: false)
        try server.start()
    }

    override func tearDown() {
        server.stop()
        server = nil
    }

    // MARK: - Tests

    func testTwoThousandRequestsSixtyFourInFlightAreEachServedAndObservedExactlyOnce() throws {
        // Given: a server that answers each id with that id, and a client capped at 64 in flight
        let ledger = ServerLedger()
        server.route("GET", "/items/:id") { request in
            let id = Int(request.pathParameters["id"] ?? "") ?? -1
            ledger.served(id)
            return .json(Item(id: id))
        }
        let client = makeClient(retryPolicy: nil)
        let (connect, queue, gauge) = (client.connect, client.queue, client.gauge)
        let count = Self.requestCount
        let outcomes = Outcomes()

        // When: every request is submitted at once
        let futures = submit(count, to: connect, recordingIn: outcomes)

        // Then: every observer ran once, with the value of its own id
        assertEachObservedOnceWithItsValue(futures, outcomes: outcomes, count: count)
        // And: the server served each id exactly once, and nothing else
        let served = ledger.snapshot.served
        XCTAssertEqual(server.requestCount, count)
        XCTAssertEqual(served.count, count)
        XCTAssertEqual(served.filter { $0.value != 1 }, [:], "ids served other than once")
        // And: the cap held; nothing is left in flight
        XCTAssertLessThanOrEqual(gauge.peak, Self.window, "never more than 64 requests in the transport at once")
        XCTAssertGreaterThan(gauge.peak, 1, "requests did run side by side")
        XCTAssertEqual(connect.requestsInFlight, 0)
        XCTAssertEqual(queue.runningCount, 0)
        XCTAssertEqual(queue.pendingCount, 0)
    }

    func testTwoThousandRequestsWithRetriesAndOneTokenRefreshAllSucceedEachServedOnce() throws {
        // Given: a server that rejects the stale token (401) and answers 503 to the first attempt of every
        // seventh id, whatever its token
        let ledger = ServerLedger()
        server.route("GET", "/items/:id") { request in
            let id = Int(request.pathParameters["id"] ?? "") ?? -1
            return ledger.answer(id, authorized: request.header("Authorization") == "Bearer fresh")
        }
        let refreshes = Counter()
        let auth = AuthenticationMiddleware(credential: .bearer(token: "stale")) { _ in
            refreshes.increment()
            let promise = Promise<AuthorizationToken>()
            DispatchQueue.global().async { promise.succeed(.bearer(token: "fresh")) }
            return promise.future
        }
        // The default policy, with a 1 ms base delay so the test does not wait on real backoff.
        let client = makeClient(retryPolicy: RetryPolicy(baseDelay: 0.001), middlewares: [auth])
        let (connect, queue, gauge) = (client.connect, client.queue, client.gauge)
        let count = Self.requestCount
        let outcomes = Outcomes()

        // When
        let futures = submit(count, to: connect, recordingIn: outcomes)

        // Then: all succeed, each observed once with its own value
        assertEachObservedOnceWithItsValue(futures, outcomes: outcomes, count: count)
        // And: one refresh for all the rejected requests
        XCTAssertEqual(refreshes.value, 1, "exactly one refresh")
        XCTAssertEqual(auth.credential, .bearer(token: "fresh"))
        // And: each id was served successfully exactly once; each seventh id got its 503 once and was retried
        let ledgerState = ledger.snapshot
        XCTAssertEqual(ledgerState.served.count, count)
        XCTAssertEqual(ledgerState.served.filter { $0.value != 1 }, [:], "ids served successfully other than once")
        let sevenths = (0..<count).filter { $0 % 7 == 0 }
        XCTAssertEqual(ledgerState.unavailable, Dictionary(uniqueKeysWithValues: sevenths.map { ($0, 1) }))
        XCTAssertGreaterThanOrEqual(ledgerState.unauthorized, 1, "the stale token was rejected")
        XCTAssertLessThanOrEqual(ledgerState.unauthorized, count, "no request was rejected twice")
        XCTAssertEqual(
            server.requestCount,
            count + sevenths.count + ledgerState.unauthorized,
            "each request was sent once, plus one retry per 503 and one replay per 401"
        )
        // And: the cap held; nothing is left in flight
        XCTAssertLessThanOrEqual(gauge.peak, Self.window)
        XCTAssertEqual(connect.requestsInFlight, 0)
        XCTAssertEqual(queue.runningCount, 0)
        XCTAssertEqual(queue.pendingCount, 0)
    }

    func testCancelAllRequestsFromOtherThreadsDuringLoadLeavesNothingHanging() throws {
        // Given: once the server has seen a quarter of the requests, it holds every request it gets until the
        // test has cancelled: some requests are then running (held), the others waiting in the queue
        let count = Self.requestCount
        let threshold = count / 4
        let ledger = ServerLedger()
        let thresholdReached = DispatchSemaphore(value: 0)
        let gate = Gate()
        defer { gate.open() }  // never leave server threads held, whatever happens
        server.route("GET", "/items/:id") { request in
            let id = Int(request.pathParameters["id"] ?? "") ?? -1
            let arrival = ledger.arrived()
            if arrival == threshold { thresholdReached.signal() }
            if arrival >= threshold { gate.wait(timeout: 120) }
            return ledger.answer(id, authorized: true)
        }
        // Retries wait on a serial queue of the test's, so the test can wait for a retry under way to finish.
        let retryQueue = DispatchQueue(label: "LoadTests.retries")
        let client = makeClient(
            retryPolicy: RetryPolicy(baseDelay: 0.001, clock: DispatchRetryClock(queue: retryQueue)))
        let (connect, queue, gauge) = (client.connect, client.queue, client.gauge)
        let outcomes = Outcomes()
        let futures = submit(count, to: connect, recordingIn: outcomes)
        XCTAssertEqual(thresholdReached.wait(timeout: .now() + Self.runTimeout), .success, "the load got going")

        // When: two threads cancel everything at the same time
        let cancelling = DispatchGroup()
        for _ in 0..<2 {
            DispatchQueue.global().async(group: cancelling) { connect.cancelAllRequests() }
        }
        XCTAssertEqual(cancelling.wait(timeout: .now() + Self.runTimeout), .success, "cancelAllRequests returned")
        gate.open()

        // Then: every future completed exactly once, with its own value or as cancelled
        XCTAssertEqual(
            outcomes.waitForCompletions(count, timeout: Self.runTimeout), count, "no future was left hanging")
        XCTAssertTrue(futures.allSatisfy(\.isCompleted))
        let observed = outcomes.byID
        XCTAssertEqual(observed.count, count)
        var cancelled = 0
        for id in 0..<count {
            switch observed[id] ?? [] {
            case [.value(id)]: break
            case [.cancelled]: cancelled += 1
            case let other: XCTFail("request \(id) was observed as \(other)")
            }
        }
        // Only requests answered before the threshold can have succeeded: the others were held until after cancelling.
        XCTAssertGreaterThanOrEqual(cancelled, count - threshold, "the held and the waiting requests were cancelled")
        XCTAssertEqual(ledger.snapshot.served.filter { $0.value != 1 }, [:], "no id was served twice")
        XCTAssertLessThan(server.requestCount, count, "cancelled requests never reached the server")
        // And: nothing is left in flight. The client forgot every request at once. The queue and the transport
        // let go of a request cancelled while another thread was starting it (a retry, or the next request
        // started by a response) when that thread is done: the only such threads are the retry queue and the
        // session's delegate queue, so the test waits for both.
        XCTAssertEqual(connect.requestsInFlight, 0)
        retryQueue.sync {}
        let delegateQueue = client.transport.session.delegateQueue
        delegateQueue.addOperation {}
        delegateQueue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(queue.runningCount, 0)
        XCTAssertEqual(queue.pendingCount, 0)
        XCTAssertEqual(gauge.current, 0, "no request left inside the transport")

        // And: the client still works
        let next = connect.send(GetItem(baseURL: server.baseURL, id: count))
        XCTAssertEqual(try next.wait(timeout: 60), Item(id: count))
        XCTAssertEqual(connect.requestsInFlight, 0)
    }

    // MARK: - Helpers

    /// A client and the parts the tests look at.
    private struct Client {
        let connect: Connect
        let queue: RequestQueue
        let gauge: GaugedTransport
        let transport: URLSessionTransport
    }

    /// A client over `URLSession` with room for 64 connections, its queue capping it at 64 in flight, and a gauge
    /// around its transport.
    private func makeClient(retryPolicy: RetryPolicy?, middlewares: [any Middleware] = []) -> Client {
        let configuration = URLSessionTransport.defaultConfiguration
        configuration.httpMaximumConnectionsPerHost = Self.window
        let transport = URLSessionTransport(configuration: configuration)
        let gauge = GaugedTransport(transport)
        let queue = RequestQueue(maxConcurrentRequests: Self.window)
        let connect = Connect(
            transport: gauge,
            middlewares: middlewares,
            retryPolicy: retryPolicy,
            requestQueue: queue
        )
        return Client(connect: connect, queue: queue, gauge: gauge, transport: transport)
    }

    /// Sends requests for ids `0..<count` at once; each observer records its result under its own id.
    /// Waits for every request, then checks that each future completed and its observer ran exactly once, with
    /// the value of its own id.
    private func assertEachObservedOnceWithItsValue(
        _ futures: [Future<Item>], outcomes: Outcomes, count: Int, line: UInt = #line
    ) {
        XCTAssertEqual(
            outcomes.waitForCompletions(count, timeout: Self.runTimeout), count, "no future was lost", line: line)
        XCTAssertTrue(futures.allSatisfy(\.isCompleted), line: line)
        let observed = outcomes.byID
        XCTAssertEqual(observed.count, count, line: line)
        for id in 0..<count where observed[id] != [.value(id)] {
            XCTFail("request \(id) was observed as \(observed[id] ?? [])", line: line)
        }
    }

    private func submit(_ count: Int, to connect: Connect, recordingIn outcomes: Outcomes) -> [Future<Item>] {
        let baseURL = server.baseURL
        return (0..<count).map { id in
            let future = connect.send(GetItem(baseURL: baseURL, id: id))
            future.observe { result in outcomes.record(result.map(\.id), for: id) }
            return future
        }
    }
}

// MARK: - Doubles

/// What the server did, per id.
private final class ServerLedger: Sendable {
    struct State {
        /// Successful answers per id.
        var served: [Int: Int] = [:]
        /// Attempts per id, whatever the answer.
        var attempts: [Int: Int] = [:]
        /// 503 answers per id.
        var unavailable: [Int: Int] = [:]
        /// 401 answers in all.
        var unauthorized = 0
        /// Requests that arrived, in all.
        var arrivals = 0
    }

    private let state = Protected(State())

    var snapshot: State { state.snapshot }

    /// Counts a successful answer for `id`.
    func served(_ id: Int) {
        state.withLock { $0.served[id, default: 0] += 1 }
    }

    /// Counts an arrival and returns its number, 1 for the first.
    func arrived() -> Int {
        state.withLock { state in
            state.arrivals += 1
            return state.arrivals
        }
    }

    /// 503 for the first attempt of every seventh id, then 401 unless `authorized`, then the item.
    func answer(_ id: Int, authorized: Bool) -> LocalServer.Response {
        state.withLock { state in
            state.attempts[id, default: 0] += 1
            if id % 7 == 0, state.attempts[id] == 1 {
                state.unavailable[id, default: 0] += 1
                return .json(string: #"{"error":"try again"}"#, status: 503)
            }
            guard authorized else {
                state.unauthorized += 1
                return .json(string: #"{"error":"token expired"}"#, status: 401)
            }
            state.served[id, default: 0] += 1
            return .json(["id": id])
        }
    }
}

/// What the observers received, per id, and a count of completions to wait for.
private final class Outcomes: Sendable {
    enum Outcome: Equatable {
        case value(Int)
        case cancelled
        case failed(String)
    }

    private let outcomes = Protected<[Int: [Outcome]]>([:])
    private let completions = DispatchSemaphore(value: 0)

    var byID: [Int: [Outcome]] { outcomes.snapshot }

    /// Records the result of the request for `id`: the id its value carries, or its error.
    func record(_ result: Result<Int, any Error>, for id: Int) {
        let outcome: Outcome
        switch result {
        case .success(let value):
            outcome = .value(value)
        case .failure(let error as ConnectError) where error.kind == .cancelled:
            outcome = .cancelled
        case .failure(let error):
            outcome = .failed("\(error)")
        }
        outcomes.withLock { $0[id, default: []].append(outcome) }
        completions.signal()
    }

    /// Waits for up to `count` completions, `timeout` seconds at most in all.
    ///
    /// - Returns: How many completions arrived in time.
    func waitForCompletions(_ count: Int, timeout: TimeInterval) -> Int {
        let deadline = DispatchTime.now() + timeout
        for arrived in 0..<count where completions.wait(timeout: deadline) == .timedOut {
            return arrived
        }
        return count
    }
}

/// Wraps a transport and measures how many requests are inside it at once.
///
/// Its callback is registered on the transport's future before the request queue's, so it counts a request out
/// before the queue frees its slot: ``peak`` is exact, with no race against the next request.
private final class GaugedTransport: Transport {
    private let base: any Transport
    private let state = Protected((current: 0, peak: 0))

    init(_ base: any Transport) {
        self.base = base
    }

    /// The most requests that were inside the transport at once.
    var peak: Int { state.withLock { $0.peak } }

    /// The requests inside the transport now.
    var current: Int { state.withLock { $0.current } }

    func send(_ request: URLRequest) -> Future<ConnectResponse> {
        state.withLock { state in
            state.current += 1
            state.peak = max(state.peak, state.current)
        }
        let future = base.send(request)
        future.observe { [state] _ in state.withLock { $0.current -= 1 } }
        return future
    }
}
