import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Cancelling the Task that awaits a request, through real `URLSession` to a real server on 127.0.0.1, with the
/// client's default retry policy: the request must end, not keep running.
final class AsyncCancellationIntegrationTests: IntegrationTestCase {
    private struct Slow: TypedConnector {
        typealias Response = [String: Bool]
        let baseURL: URL
        var endpoint: String { "/slow" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
    }

    func testCancellingTheAwaitingTaskCancelsTheURLSessionTask() async throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        let arrived = Promise<Void>()
        server.route("GET", "/slow") { _ in
            arrived.completeIfPending(with: .success(()))
            return LocalServer.Response.json(["late": true]).delayed(by: 60)
        }
        let client = Connect(transport: TransportUnderTest.make())

        let task = Task { try await client.send(Slow(baseURL: server.baseURL)).value }
        try await arrived.future.value(timeout: 10)
        task.cancel()
        let result = await task.result

        XCTAssertThrowsError(try result.get()) { XCTAssertEqual(($0 as? ConnectError)?.kind, .cancelled) }
        XCTAssertEqual(client.requestsInFlight, 0)
        // The transport's task was cancelled: its connection closed long before the 60 s answer. (Asked of the
        // server, not of `URLSession.getAllTasks`, which FoundationNetworking can crash in right after a cancel.)
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the cancelled request still holds its connection")
    }
}
