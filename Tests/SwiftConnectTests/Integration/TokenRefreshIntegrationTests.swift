import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `AuthenticationMiddleware` through real `URLSession` to a real HTTP server on 127.0.0.1.
final class TokenRefreshIntegrationTests: IntegrationTestCase {
    private struct Endpoint: Connector {
        var baseURL: URL
        var endpoint: String
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
    }

    private var server: LocalServer!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        server.route("GET", "/secret/:id") { request in
            guard request.header("Authorization") == "Bearer fresh" else {
                return .json(string: #"{"error":"token expired"}"#, status: 401)
            }
            return .json(["id": request.pathParameters["id"] ?? ""])
        }
    }

    override func tearDown() {
        server.stop()
        server = nil
    }

    func testTwentyConcurrentRequestsRefreshOnceAndAllSucceedWithTheFreshToken() throws {
        // Given: a refresh that counts its calls and completes later, from a background queue
        let refreshes = Counter()
        let auth = AuthenticationMiddleware(credential: .bearer(token: "stale")) { expired in
            refreshes.increment()
            XCTAssertEqual(expired, .bearer(token: "stale"))
            let promise = Promise<AuthorizationToken>()
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) {
                promise.succeed(.bearer(token: "fresh"))
            }
            return promise.future
        }
        let connect = Connect(transport: TransportUnderTest.make(), middlewares: [auth])
        defer { connect.cancelAllRequests() }
        let baseURL = server.baseURL

        // When
        let futures = (0..<20).map { index in
            connect.request(Endpoint(baseURL: baseURL, endpoint: "/secret/\(index)")).decoded(
                toType: [String: String].self)
        }

        // Then
        for (index, future) in futures.enumerated() {
            XCTAssertEqual(value(of: future), ["id": "\(index)"])
        }
        XCTAssertEqual(refreshes.value, 1, "one refresh for every rejected request")
        XCTAssertEqual(auth.credential, .bearer(token: "fresh"))
        let received = server.requests.filter { $0.path.hasPrefix("/secret/") }
        let fresh = received.filter { $0.header("Authorization") == "Bearer fresh" }
        XCTAssertEqual(fresh.count, 20, "each request succeeded exactly once, with the fresh token")
        XCTAssertEqual(Set(fresh.map(\.path)).count, 20)
        let others = received.filter { $0.header("Authorization") != "Bearer fresh" }
        XCTAssertTrue(others.allSatisfy { $0.header("Authorization") == "Bearer stale" }, "nothing else was sent")
        XCTAssertLessThanOrEqual(others.count, 20, "no request went out twice with the stale token")
        XCTAssertGreaterThanOrEqual(others.count, 1)
    }
}
