import Foundation
import NIOCore
import NIOPosix
import SwiftConnect
import SwiftConnectTesting
import XCTest

@testable import SwiftConnectAsyncHTTPClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Which event loop each request's callbacks run on: one loop while few requests are in flight, the least busy one
/// past ``LoopAffinity/fill``, and every loop given back however a request ends.
final class LoopAffinityTests: XCTestCase {
    private var group: MultiThreadedEventLoopGroup!

    override func setUp() {
        group = MultiThreadedEventLoopGroup(numberOfThreads: 3)
    }

    override func tearDown() async throws {
        try await group.shutdownGracefully()
    }

    /// Requests one after another all name the same loop: the one whose connection the previous request left idle.
    func testSequentialRequestsKeepToOneLoop() {
        let affinity = LoopAffinity(group: group)
        let first = affinity.take()
        affinity.release(first.ticket)
        for _ in 0..<100 {
            let next = affinity.take()
            XCTAssertTrue(next.loop === first.loop)
            affinity.release(next.ticket)
        }
        XCTAssertEqual(affinity.inFlight, [0, 0, 0])
    }

    /// Up to `fill` requests in flight share a loop; the next goes to the least busy loop, and later ones stay there
    /// (the requests ending on the first loop do not pull new ones back while the new loop is not full).
    func testPastFillRequestsSpillToTheLeastBusyLoop() {
        let affinity = LoopAffinity(group: group)
        var tickets: [Int?] = []
        for _ in 0..<LoopAffinity.fill { tickets.append(affinity.take().ticket) }
        XCTAssertEqual(Set(tickets.compactMap { $0 }).count, 1, "fill requests on one loop")
        let spilled = affinity.take()
        XCTAssertNotEqual(spilled.ticket, tickets[0])
        XCTAssertEqual(affinity.inFlight.sorted(), [0, 1, LoopAffinity.fill])
        affinity.release(tickets.removeLast())
        let after = affinity.take()
        XCTAssertEqual(after.ticket, spilled.ticket, "the new loop stays current")
        affinity.release(after.ticket)
        affinity.release(spilled.ticket)
        for ticket in tickets { affinity.release(ticket) }
        XCTAssertEqual(affinity.inFlight, [0, 0, 0])
    }

    /// A group that lists no loops still gives one, with nothing to count.
    func testAGroupWithoutLoopsStillGivesALoop() {
        let loop = group.next()
        let affinity = LoopAffinity(group: loop)
        let taken = affinity.take()
        XCTAssertTrue(taken.loop === loop)
        affinity.release(taken.ticket)
        XCTAssertEqual(affinity.inFlight, [0])
    }

    /// Through the transport, every way a request ends gives its loop back: an answer, an error status, a refused
    /// connection, a deadline passed mid-body, a cancelled call. And sequential requests use one connection.
    func testEveryEndGivesTheLoopBack() async throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/ok") { _ in .json(["ok": true]) }
        server.route("GET", "/missing") { _ in .json(["error": "no"], status: 404) }
        server.route("GET", "/endless") { _ in
            .stream(contentLength: nil) { write in
                while write(Data(count: 1 << 12)) { usleep(1_000) }
            }
        }
        let transport = AsyncHTTPClientTransport(eventLoopGroup: group)
        func request(_ path: String, timeout: TimeInterval = 10) -> URLRequest {
            URLRequest(url: server.baseURL.appendingPathComponent(path), timeoutInterval: timeout)
        }
        for _ in 0..<20 {
            let response = try await transport.send(request("ok")).value
            XCTAssertEqual(response.statusCode, 200)
        }
        XCTAssertEqual(server.connectionCount, 1, "sequential requests share one connection")
        let missing = try await transport.send(request("missing")).value
        XCTAssertEqual(missing.statusCode, 404)

        let closed = try LocalServer.started()
        let refusedURL = closed.baseURL.appendingPathComponent("ok")
        closed.stop()
        do {
            _ = try await transport.send(URLRequest(url: refusedURL)).value
            XCTFail("a refused connection fails")
        } catch {}

        do {
            _ = try await transport.send(request("endless", timeout: 0.3)).value
            XCTFail("an endless body outlives its deadline")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .timedOut)
        }

        let cancelled = transport.send(request("endless"))
        cancelled.cancel()
        _ = await cancelled.resultValue

        try await transport.shutdown()
        XCTAssertEqual(transport.affinity.inFlight.reduce(0, +), 0, "\(transport.affinity.inFlight)")
    }
}
