import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `AuthenticationMiddleware` over a real transport and two local servers: a response from another origin, where a
/// redirect led the request without its credential, is no verdict on the credential.
final class AuthenticationRedirectTests: XCTestCase {
    func testA401FromTheOriginARedirectLedToStartsNoRefresh() throws {
        // Given: the server redirects to a sign-in page on another origin (another port), which answers 401
        let origin = try LocalServer.started()
        addTeardownBlock { origin.stop() }
        let other = try LocalServer.started()
        addTeardownBlock { other.stop() }
        other.route("GET", "/sign-in") { _ in .status(401) }
        origin.route("GET", "/items") { _ in .redirect(to: "http://127.0.0.1:\(other.port)/sign-in") }
        let refreshes = Counter()
        let authentication = AuthenticationMiddleware(credential: .bearer(token: "secret-token")) { _ in
            refreshes.increment()
            return Future(value: .bearer(token: "renewed"))
        }
        let connect = Connect(
            transport: TransportUnderTest.makeCookieless(), middlewares: [authentication], retryPolicy: nil)
        // When
        let result = try connect.request(Route("/items", baseURL: origin.baseURL, timeout: 10)).waitForResult(
            timeout: 20)
        // Then: the 401 is the answer, the credential untouched, nothing sent again
        guard case .failure(let error as ConnectError) = result else { return XCTFail("expected a 401, got \(result)") }
        XCTAssertEqual(error.kind, .httpStatus)
        XCTAssertEqual(error.statusCode, 401)
        XCTAssertEqual(refreshes.value, 0, "another origin's 401 renewed the server's credential")
        XCTAssertEqual(authentication.credential, .bearer(token: "secret-token"))
        XCTAssertEqual(origin.requests.count, 1)
        XCTAssertEqual(other.requests.count, 1)
        XCTAssertNil(other.requests.first?.header("Authorization"))
    }

    func testARenewedCredentialDoesNotFollowARedirectToAnotherOrigin() throws {
        // Given: the server rejects the old token, and redirects the request carrying the renewed one to another
        // origin (another port)
        let origin = try LocalServer.started()
        addTeardownBlock { origin.stop() }
        let other = try LocalServer.started()
        addTeardownBlock { other.stop() }
        other.route("GET", "/landing") { _ in .json(["ok": true]) }
        origin.route("GET", "/items") { request in
            guard request.header("Authorization") == "Bearer renewed-secret" else { return .status(401) }
            return .redirect(to: "http://127.0.0.1:\(other.port)/landing")
        }
        let authentication = AuthenticationMiddleware(credential: .bearer(token: "old-secret")) { _ in
            Future(value: .bearer(token: "renewed-secret"))
        }
        let connect = Connect(
            transport: TransportUnderTest.makeCookieless(), middlewares: [authentication], retryPolicy: nil)
        // When
        XCTAssertNoThrow(try connect.request(Route("/items", baseURL: origin.baseURL, timeout: 10)).wait(timeout: 20))
        // Then: the origin saw both tokens, the other origin neither
        XCTAssertEqual(
            origin.requests.map { $0.header("Authorization") }, ["Bearer old-secret", "Bearer renewed-secret"])
        XCTAssertEqual(other.requests.count, 1)
        XCTAssertNil(other.requests.first?.header("Authorization"))
    }

    func testARoundTripThroughAnotherOriginThatEndsIn401StartsNoRefresh() throws {
        // Given: the server redirects to another origin, which redirects back; the request comes back without its
        // credential (it left the origin), and the server answers that 401
        let origin = try LocalServer.started()
        addTeardownBlock { origin.stop() }
        let other = try LocalServer.started()
        addTeardownBlock { other.stop() }
        origin.route("GET", "/start") { _ in .redirect(to: "http://127.0.0.1:\(other.port)/bounce") }
        other.route("GET", "/bounce") { _ in .redirect(to: "http://127.0.0.1:\(origin.port)/back") }
        origin.route("GET", "/back") { request in
            request.header("Authorization") == nil ? .status(401) : .json(["ok": true])
        }
        let refreshes = Counter()
        let authentication = AuthenticationMiddleware(credential: .bearer(token: "secret-token")) { _ in
            refreshes.increment()
            return Future(value: .bearer(token: "renewed"))
        }
        let connect = Connect(
            transport: TransportUnderTest.makeCookieless(), middlewares: [authentication], retryPolicy: nil)
        // When
        let result = try connect.request(Route("/start", baseURL: origin.baseURL, timeout: 10)).waitForResult(
            timeout: 20)
        // Then
        guard case .failure(let error as ConnectError) = result else { return XCTFail("expected a 401, got \(result)") }
        XCTAssertEqual(error.statusCode, 401)
        XCTAssertEqual(refreshes.value, 0, "a 401 to a request that came back without its credential renewed it")
        XCTAssertEqual(origin.requests.map(\.path), ["/start", "/back"])
    }
}
