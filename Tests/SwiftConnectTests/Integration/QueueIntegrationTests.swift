import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The request queue and coalescing through real `URLSession` to a real HTTP server on 127.0.0.1: the
/// server's own counters show what reached the network.
final class QueueIntegrationTests: IntegrationTestCase {
    private struct Item: Codable, Equatable, Sendable {
        var id: Int
        var name: String
    }

    private struct Endpoint: Connector {
        var baseURL: URL
        var endpoint: String
        var method: HTTPMethod = .get
        var headers: [HTTPHeader] = []
        var parameters: (any ParametersRepresentable)?
    }

    private var server: LocalServer!

    override func setUpWithError() throws {
        server = try LocalServer.started()
    }

    override func tearDown() {
        server.stop()
        server = nil
    }

    func testQueueCapsTheRequestsTheServerSeesAtOnce() throws {
        // Given
        server.route("GET", "/items/:id") { request in
            LocalServer.Response.json(Item(id: Int(request.pathParameters["id"] ?? "") ?? -1, name: "slow"))
                .delayed(by: 0.05)
        }
        let queue = RequestQueue(maxConcurrentRequests: 3)
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil, requestQueue: queue)
        defer { connect.cancelAllRequests() }
        // When
        let items = (0..<20).map { id in
            connect.request(
                Endpoint(
                    baseURL: server.baseURL,
                    endpoint: "/items/{id}",
                    parameters: Parameter.path(key: "id", value: "\(id)")
                )
            ).decoded(toType: Item.self)
        }
        // Then
        for (id, item) in items.enumerated() {
            XCTAssertEqual(try item.wait(timeout: 20), Item(id: id, name: "slow"))
        }
        XCTAssertEqual(server.requestCount, 20)
        XCTAssertLessThanOrEqual(server.maxConcurrentRequests, 3, "never more than the cap at once")
        XCTAssertGreaterThanOrEqual(server.maxConcurrentRequests, 2, "requests do run side by side")
        XCTAssertEqual(queue.runningCount, 0)
        XCTAssertEqual(queue.pendingCount, 0)
    }

    func testIdenticalConcurrentGetsMakeOneServerRequest() throws {
        // Given: a delay keeps the first request in flight while the others arrive
        server.route("GET", "/shared") { _ in
            LocalServer.Response.json(Item(id: 7, name: "shared")).delayed(by: 0.2)
        }
        let connect = Connect(
            transport: TransportUnderTest.make(), retryPolicy: nil,
            settings: Connect.Settings(coalescesIdenticalRequests: true))
        defer { connect.cancelAllRequests() }
        let endpoint = Endpoint(baseURL: server.baseURL, endpoint: "/shared")
        // When
        let items = (0..<10).map { _ in connect.request(endpoint).decoded(toType: Item.self) }
        // Then
        for item in items {
            XCTAssertEqual(try item.wait(timeout: 20), Item(id: 7, name: "shared"))
        }
        XCTAssertEqual(server.requestCount(for: "GET", path: "/shared"), 1)
    }
}
