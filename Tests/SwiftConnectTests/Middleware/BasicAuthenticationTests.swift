import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `BasicAuthentication` and the per-route opt-out `RequestOptions.requiresAuthentication`, which the client's
/// `AuthenticationMiddleware` honours too.
final class BasicAuthenticationTests: XCTestCase {
    private let base = URL(string: "https://api.test")

    func testEveryRequestIsSignedWithBasicCredentialsReplacingItsOwn() throws {
        // Given
        let transport = FakeTransport()
        transport.stub("/profile", with: .status(204))
        let connect = Connect(
            transport: transport, middlewares: [.basicAuthentication(username: "gate", password: "s3cret")])

        // When
        _ = value(of: connect.request(Route("/profile", baseURL: base, headers: [.authorization("Bearer old")])))

        // Then: base64("gate:s3cret")
        let sent = try XCTUnwrap(transport.requests.first)
        XCTAssertEqual(sent.value(forHTTPHeaderField: "Authorization"), "Basic Z2F0ZTpzM2NyZXQ=")
        XCTAssertFalse(String(describing: BasicAuthentication(username: "gate", password: "s3cret")).contains("s3cret"))
    }

    func testARouteThatRequiresNoAuthenticationGoesUnsigned() throws {
        // Given
        let transport = FakeTransport()
        transport.stub("/v1/tokens", with: .status(201))
        let connect = Connect(
            transport: transport, middlewares: [.basicAuthentication(username: "gate", password: "s3cret")])
        let tokenRoute = Route(
            "/v1/tokens", baseURL: base, method: .post, options: RequestOptions(requiresAuthentication: false))

        // When
        _ = value(of: connect.request(tokenRoute))

        // Then
        let sent = try XCTUnwrap(transport.requests.first)
        XCTAssertNil(sent.value(forHTTPHeaderField: "Authorization"))
    }

    func testAUsernameWithAColonFailsUnsent() {
        // Given
        let transport = FakeTransport()
        let connect = Connect(
            transport: transport, middlewares: [.basicAuthentication(username: "a:b", password: "c")])

        // When
        let error = connectError(of: connect.request(Route("/profile", baseURL: base)))

        // Then
        XCTAssertEqual(error?.kind, .invalidRequest)
        XCTAssertEqual(error?.invalidRequestReason, .invalidHeader(name: "Authorization"))
        XCTAssertTrue(transport.requests.isEmpty)
    }

    func testTheRefreshingMiddlewareLeavesAnOptedOutRouteUnsignedAndDoesNotRefreshIts401() throws {
        // Given: a sign-in route the server answers 401 (wrong password)
        let transport = FakeTransport()
        transport.stub(.post, "/sign-in", with: .status(401))
        let refreshes = Protected(0)
        let auth = AuthenticationMiddleware(credential: .bearer(token: "t1")) { _ in
            refreshes.withLock { $0 += 1 }
            return Future(value: .bearer(token: "t2"))
        }
        let connect = Connect(transport: transport, middlewares: [auth])
        let signIn = Route(
            "/sign-in", baseURL: base, method: .post, options: RequestOptions(requiresAuthentication: false))

        // When
        let error = connectError(of: connect.request(signIn))

        // Then: the 401 is the answer, sent once, unsigned, and nothing was refreshed
        XCTAssertEqual(error?.statusCode, 401)
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertNil(transport.requests.first?.value(forHTTPHeaderField: "Authorization"))
        XCTAssertEqual(refreshes.snapshot, 0)
        XCTAssertEqual(auth.credential, .bearer(token: "t1"))
    }

    func testTheCallLevelOptionWinsOverTheConnectors() throws {
        // Given: a connector that opts out, a call that opts back in
        let transport = FakeTransport()
        transport.stub("/mixed", with: .status(204))
        let connect = Connect(
            transport: transport, middlewares: [.basicAuthentication(username: "gate", password: "s3cret")])
        let route = Route("/mixed", baseURL: base, options: RequestOptions(requiresAuthentication: false))

        // When
        _ = value(of: connect.request(route, options: RequestOptions(requiresAuthentication: true)))

        // Then
        XCTAssertNotNil(transport.requests.first?.value(forHTTPHeaderField: "Authorization"))
    }
}
