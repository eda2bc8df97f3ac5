import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// A cached response is served without a second hit on a real server.
final class CacheIntegrationTests: IntegrationTestCase {
    private struct Endpoint: Connector {
        var baseURL: URL
        var endpoint: String { "/config" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
        var options: RequestOptions { RequestOptions(cache: CacheRule(timeToLive: 300)) }
    }

    func testCachedResponseIsServedWithoutASecondServerHit() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/config") { _ in .json(["theme": "dark"]) }
        let cache = ResponseCache()
        let connect = Connect(transport: TransportUnderTest.make(), responseCache: cache)

        let first = try connect.request(Endpoint(baseURL: server.baseURL)).decoded(toType: [String: String].self).wait()
        let second = try connect.request(Endpoint(baseURL: server.baseURL)).decoded(toType: [String: String].self)
            .wait()

        XCTAssertEqual(first, ["theme": "dark"])
        XCTAssertEqual(second, first)
        XCTAssertEqual(server.requestCount(for: "GET", path: "/config"), 1)
        XCTAssertEqual(cache.hitCount, 1)
    }
}
