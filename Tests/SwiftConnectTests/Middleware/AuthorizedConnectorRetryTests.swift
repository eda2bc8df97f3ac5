import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An ``AuthorizedConnector``'s token is read once per call, when its request is built on the caller's thread: a
/// connector need not be `Sendable`, so the retry loop, which runs on whatever thread the previous attempt ended, never
/// reads it again. A retry hook that refreshes a token store then resends the token the call started with; a middleware
/// that signs each attempt (``AuthenticationMiddleware``, or a hook's own `adapt`) sends the new one.
final class AuthorizedConnectorRetryTests: XCTestCase {
    /// Where the app keeps its current token.
    private final class TokenStore: @unchecked Sendable {
        /// Protects `current`.
        private let lock = NSLock()
        private var current: String

        init(_ token: String) { current = token }

        var token: String {
            get { lock.withLock { current } }
            set { lock.withLock { current = newValue } }
        }
    }

    /// A connector that signs its request with the store's token, as the usage guide's `AuthorizedConnector` does.
    private struct Profile: Connector, AuthorizedConnector {
        let tokens: TokenStore
        var baseURL: URL { URL(string: "https://api.test")! }
        var endpoint: String { "/me" }
        var authorizationToken: AuthorizationToken? { .bearer(token: tokens.token) }
    }

    /// A user's retry hook, as ``ConnectMiddlewareProtocol``'s documentation has it: on a first 401, refreshes the store and asks for another attempt; with `signs`, its `adapt`
    /// also signs each attempt from the store.
    private struct RefreshOn401: ConnectMiddlewareProtocol {
        let tokens: TokenStore
        var signs = false

        func adapt(_ request: URLRequest) throws -> URLRequest {
            guard signs else { return request }
            var request = request
            request.setValue("Bearer \(tokens.token)", forHTTPHeaderField: "Authorization")
            return request
        }

        func retry(_ request: URLRequest, dueTo error: any Error, attempt: Int) -> RetryDecision {
            guard (error as? ConnectError)?.statusCode == 401, attempt == 1 else { return .doNotRetry }
            tokens.token = "new"
            return .retry
        }
    }

    /// A server that accepts only the new token.
    private func server() -> FakeTransport {
        FakeTransport.answering(
            .handler { request in
                let status = request.value(forHTTPHeaderField: "Authorization") == "Bearer new" ? 200 : 401
                return .success(ConnectResponse(request: request, statusCode: status, data: Data())!)
            })
    }

    /// The documented behaviour: the retry carries the token read when the call began, and the call ends with the
    /// server's second 401.
    func testARetryHookThatRefreshesTheStoreResendsTheConnectorsFirstToken() {
        let tokens = TokenStore("old")
        let transport = server()
        let connect = Connect(transport: transport, middlewares: [RefreshOn401(tokens: tokens)], retryPolicy: nil)

        let error = connectError(of: connect.request(Profile(tokens: tokens)))

        XCTAssertEqual(error?.statusCode, 401)
        XCTAssertEqual(
            transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") },
            [
                "Bearer old", "Bearer old",
            ])
        XCTAssertEqual(tokens.token, "new", "the hook did refresh the store")
        // The next call reads the store again.
        XCTAssertNotNil(value(of: connect.request(Profile(tokens: tokens))))
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "Authorization"), "Bearer new")
    }

    /// The recommended pattern: the hook's `adapt` signs each attempt, so the retry carries the refreshed token, over
    /// the connector's own.
    func testARetryHookThatSignsEachAttemptSendsTheRefreshedToken() {
        let tokens = TokenStore("old")
        let transport = server()
        let connect = Connect(
            transport: transport, middlewares: [RefreshOn401(tokens: tokens, signs: true)], retryPolicy: nil)

        XCTAssertNotNil(value(of: connect.request(Profile(tokens: tokens))))

        XCTAssertEqual(
            transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") },
            [
                "Bearer old", "Bearer new",
            ])
    }

    /// The recommended pattern: an ``AuthenticationMiddleware`` signs each attempt and refreshes on a 401, replacing
    /// the connector's token.
    func testAnAuthenticationMiddlewareSignsTheRetryWithTheRefreshedToken() {
        let tokens = TokenStore("old")
        let transport = server()
        let auth = AuthenticationMiddleware(credential: .bearer(token: "old")) { _ in
            tokens.token = "new"
            return Future(value: .bearer(token: "new"))
        }
        let connect = Connect(transport: transport, middlewares: [auth], retryPolicy: nil)

        XCTAssertNotNil(value(of: connect.request(Profile(tokens: tokens))))

        XCTAssertEqual(
            transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") },
            [
                "Bearer old", "Bearer new",
            ])
    }

    /// The "One token per call" example of ``AuthorizedConnector``'s documentation, its lines as written there (over
    /// a fake server): the refresh goes through a client without the middleware, and the retry carries its token.
    func testTheOneTokenPerCallExampleSignsTheRetryWithTheRefreshedToken() {
        struct Session: Sendable {
            var accessToken: String
            var refreshToken: String
        }
        struct Renewed: Decodable, Sendable { let accessToken: String }
        struct RefreshSession: TypedConnector {
            typealias Response = Renewed
            let refreshToken: String
            var baseURL: URL { URL(string: "https://auth.test")! }
            var endpoint: String { "/refresh" }
            var method: HTTPMethod { .post }
        }
        let transport = FakeTransport.answering(
            .handler { request in
                if request.url?.path == "/refresh" {
                    return .success(
                        ConnectResponse(
                            request: request, statusCode: 200, headers: ["Content-Type": "application/json"],
                            data: Data(#"{"accessToken": "new"}"#.utf8))!)
                }
                let status = request.value(forHTTPHeaderField: "Authorization") == "Bearer new" ? 200 : 401
                return .success(ConnectResponse(request: request, statusCode: status, data: Data())!)
            })
        let session = Session(accessToken: "old", refreshToken: "r1")
        let authClient = Connect(transport: transport, retryPolicy: nil)

        // The documentation's lines, but for the transport:
        let auth = AuthenticationMiddleware(credential: .bearer(token: session.accessToken)) { expired in
            // A client without this middleware: the refresh call must not wait for itself.
            authClient.send(RefreshSession(refreshToken: session.refreshToken)).map { .bearer(token: $0.accessToken) }
        }
        let connect = Connect(transport: transport, middlewares: [auth], retryPolicy: nil)

        XCTAssertNotNil(value(of: connect.request(Profile(tokens: TokenStore("old")))))
        XCTAssertEqual(
            transport.requests.map { "\($0.url?.path ?? "") \($0.value(forHTTPHeaderField: "Authorization") ?? "-")" },
            ["/me Bearer old", "/refresh -", "/me Bearer new"])
    }
}
