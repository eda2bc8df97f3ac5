import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A queue letting its waiting requests go (``RequestQueue/resume()``) while something holds it again, and waiting
/// requests that leave by cancellation or deadline.
final class RequestQueueReleaseTests: XCTestCase {
    private static func ok(_ request: URLRequest) -> Result<ConnectResponse, any Error> {
        .success(ConnectResponse(request: request, statusCode: 200, data: Data("{}".utf8))!)
    }

    private func paths(_ transport: FakeTransport) -> [String] { transport.requests.compactMap { $0.url?.path } }

    /// `pause()` called by the first request `resume()` starts (its answer comes at once): the others stay.
    func testAPauseDuringResumeStopsTheRestInOrder() throws {
        let transport = FakeTransport(fallback: .json(["ok": true]))
        let queue = RequestQueue(maxConcurrentRequests: 1)
        transport.stub(
            "/r/0",
            with: .handler { request in
                queue.pause()
                return Self.ok(request)
            })
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        queue.pause()
        let futures = (0..<3).map { connect.request(ClientFixtures.Endpoint(endpoint: "/r/\($0)")) }

        queue.resume()

        XCTAssertNoThrow(try futures[0].wait(timeout: 5))
        XCTAssertEqual(paths(transport), ["/r/0"])
        XCTAssertEqual(queue.pendingCount, 2)
        queue.resume()
        for future in futures { XCTAssertNoThrow(try future.wait(timeout: 5)) }
        XCTAssertEqual(paths(transport), ["/r/0", "/r/1", "/r/2"])
    }

    /// A hold for the network taken by the first request `resume()` starts: the others stay.
    func testAHoldForTheNetworkDuringResumeStopsTheRest() throws {
        let transport = FakeTransport(fallback: .json(["ok": true]))
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let holder = ObjectIdentifier(self)
        transport.stub(
            "/r/0",
            with: .handler { request in
                queue.holdForNetwork(true, by: holder)
                return Self.ok(request)
            })
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        queue.pause()
        let futures = (0..<3).map { connect.request(ClientFixtures.Endpoint(endpoint: "/r/\($0)")) }

        queue.resume()

        XCTAssertNoThrow(try futures[0].wait(timeout: 5))
        XCTAssertEqual(paths(transport), ["/r/0"])
        XCTAssertEqual(queue.pendingCount, 2)
        queue.holdForNetwork(false, by: holder)
        for future in futures { XCTAssertNoThrow(try future.wait(timeout: 5)) }
        XCTAssertEqual(paths(transport), ["/r/0", "/r/1", "/r/2"])
    }

    /// A waiting request whose deadline passes fails `timedOut`, leaves the queue, and is never sent.
    func testAWaitingRequestPastItsDeadlineLeavesTheQueue() throws {
        let transport = FakeTransport(fallback: .json(["ok": true]))
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        queue.pause()
        var endpoint = ClientFixtures.Endpoint(endpoint: "/late")
        endpoint.timeout = 0.2
        let kept = connect.request(ClientFixtures.Endpoint(endpoint: "/kept"))
        let late = connect.request(endpoint)

        guard case .failure(let error) = try late.waitForResult(timeout: 5) else { return XCTFail("it was sent") }
        XCTAssertEqual((error as? ConnectError)?.kind, .timedOut, "\(error)")
        XCTAssertEqual(queue.waitingRequests.map(\.url.path), ["/kept"])
        queue.resume()
        XCTAssertNoThrow(try kept.wait(timeout: 5))
        XCTAssertEqual(paths(transport), ["/kept"])
    }
}
