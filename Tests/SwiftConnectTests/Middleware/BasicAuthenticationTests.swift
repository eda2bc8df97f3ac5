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

    /// A client with a server signs only the requests that go to it: a one-off call to another host (a pre-signed
    /// upload URL) goes unsigned, its 401 is an answer, not a reason to refresh, unless its options opt in.
    func testCredentialsGoOnlyToTheClientsServerUnlessARequestOptsIn() throws {
        let other = URL(string: "https://uploads.other.test")
        let refreshes = Protected(0)
        let refreshing = AuthenticationMiddleware(credential: .bearer(token: "t1")) { _ in
            refreshes.withLock { $0 += 1 }
            return Future(value: .bearer(token: "t2"))
        }
        let stages: [any Middleware] = [refreshing, BasicAuthentication(username: "gate", password: "s3cret")]
        for stage in stages {
            let transport = FakeTransport()
            transport.stub("/profile", with: .status(204))
            transport.stub("/upload", with: .status(401))
            let connect = Connect(
                transport: transport, middlewares: [stage], configuration: ServerConfiguration(host: "api.test"))

            _ = value(of: connect.request(Route("/profile")))
            let unsigned = connectError(of: connect.request(Route("/upload", baseURL: other, method: .put)))
            _ = connectError(
                of: connect.request(
                    Route(
                        "/upload", baseURL: other, method: .put, options: RequestOptions(requiresAuthentication: true)))
            )

            let sent = transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") }
            XCTAssertEqual(sent.count, stage is BasicAuthentication ? 3 : 4, "\(stage)")
            XCTAssertNotNil(sent[0], "the server's request is signed")
            XCTAssertNil(sent[1], "another host's is not")
            XCTAssertNotNil(sent[2], "unless it opts in")
            XCTAssertEqual(unsigned?.statusCode, 401)
        }
        XCTAssertEqual(refreshes.snapshot, 1, "only the opted-in request's 401 was refreshed")
    }

    func testAMiddlewareThatSendsTheRequestToAnotherOriginGetsNoCredentials() throws {
        // Given: a stage before the signing one that moves some requests to a CDN, others within the server
        let cdn = URL(string: "https://cdn.other.test/assets/logo.png")!
        let moving = AnyMiddleware.adapter { request in
            if request.url.path == "/logo" { request.url = cdn } else { request.url.appendPathComponent("v2") }
        }
        let stages: [any Middleware] = [
            AuthenticationMiddleware(credential: .bearer(token: "t1")) { _ in Future(value: .bearer(token: "t2")) },
            BasicAuthentication(username: "gate", password: "s3cret"),
        ]
        for stage in stages {
            let transport = FakeTransport(fallback: .status(204))
            let connect = Connect(
                transport: transport, middlewares: [moving, stage], configuration: ServerConfiguration(host: "api.test")
            )
            // When
            _ = value(of: connect.request(Route("/logo")))
            _ = value(of: connect.request(Route("/profile")))
            // Then: the request that left the server's origin went unsigned; the one that stayed was signed
            let sent = transport.requests.map { ($0.url?.host, $0.value(forHTTPHeaderField: "Authorization")) }
            XCTAssertEqual(sent.count, 2, "\(stage)")
            XCTAssertEqual(sent.first?.0, "cdn.other.test")
            XCTAssertNil(sent.first?.1, "\(stage) signed a request a middleware sent to another origin")
            XCTAssertEqual(sent.last?.0, "api.test")
            XCTAssertNotNil(sent.last?.1, "\(stage)")
        }
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

    /// The client's own options reach the stages' context too (``RequestContext/options``): a client that opts out
    /// sends unsigned, and a route that opts in wins over it.
    func testTheClientsOptionIsReadByTheSigningStagesAndARouteWinsOverIt() throws {
        // Given: a client whose options opt out
        let transport = FakeTransport()
        transport.stub("/open", with: .status(204))
        transport.stub("/signed", with: .status(204))
        let connect = Connect(
            transport: transport, middlewares: [.basicAuthentication(username: "gate", password: "s3cret")],
            settings: Connect.Settings(options: RequestOptions(requiresAuthentication: false)))

        // When
        _ = value(of: connect.request(Route("/open", baseURL: base)))
        _ = value(
            of: connect.request(Route("/signed", baseURL: base, options: RequestOptions(requiresAuthentication: true))))

        // Then
        XCTAssertEqual(
            transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") }, [nil, "Basic Z2F0ZTpzM2NyZXQ="])
    }
}
