import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

final class AuthorizationTokenTests: XCTestCase {
    // MARK: - Header values

    func testBearerTokenHeaderValue() {
        XCTAssertEqual(AuthorizationToken.bearer(token: "abc.def").headerValue, "Bearer abc.def")
    }

    func testBasicTokenIsBase64OfUsernameColonPassword() {
        // RFC 7617's example.
        XCTAssertEqual(
            AuthorizationToken.basic(username: "Aladdin", password: "open sesame").headerValue,
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
        // UTF-8, as RFC 7617 §2.1 recommends.
        XCTAssertEqual(
            AuthorizationToken.basic(username: "test", password: "123\u{A3}").headerValue, "Basic dGVzdDoxMjPCow==")
    }

    /// RFC 7617: a user-id containing a colon is invalid. Sent, "ann:admin" / "pw" reads as the user "ann" with
    /// the password "admin:pw": someone else's sign-in. It is a typed error instead, and nothing is sent.
    func testABasicUsernameWithAColonIsATypedErrorNotAnotherUsersSignIn() throws {
        func assertRefused(_ expression: @autoclosure () throws -> some Any, _ label: String) {
            XCTAssertThrowsError(try expression(), label) { error in
                XCTAssertEqual((error as? ConnectError)?.kind, .invalidRequest, label)
                XCTAssertEqual(
                    (error as? ConnectError)?.invalidRequestReason, .invalidHeader(name: "Authorization"), label)
                XCTAssertFalse("\(error)".contains("admin"), "the credentials stay out of the message")
            }
        }
        let signed = SignedMe(token: .basic(username: "ann:admin", password: "pw"))
        assertRefused(try signed.asURLRequest(), "AuthorizedConnector")

        let transport = FakeTransport.answering(.status(200))
        let viaConnector = Connect(transport: transport, retryPolicy: nil)
        assertRefused(try viaConnector.request(signed).wait(timeout: 5), "Connect + AuthorizedConnector")
        let auth = AuthenticationMiddleware(credential: .basic(username: "ann:admin", password: "pw")) { _ in
            Future(error: URLError(.userAuthenticationRequired))
        }
        let viaMiddleware = Connect(transport: transport, middlewares: [auth], retryPolicy: nil)
        let base = URL(string: "https://a.example")!
        let route = Route("/me", baseURL: base)
        assertRefused(try viaMiddleware.request(route).wait(timeout: 5), "AuthenticationMiddleware")
        XCTAssertTrue(transport.requests.isEmpty)
        // A colon in the password is fine.
        let colonInPassword = Route("/me", baseURL: base, authorizationToken: .basic(username: "ann", password: "a:b"))
        XCTAssertNoThrow(try viaConnector.request(colonInPassword).wait(timeout: 5))
    }

    /// A colon followed by a combining mark (`:\u{301}`) is one `Character` that is not `":"`, but its UTF-8 still
    /// holds the colon a server splits the credentials at: "ann:\u{301}admin" / "pw" would sign in as "ann". Refused as
    /// a plain colon is, nothing sent.
    func testABasicUsernameWithAColonBeforeACombiningMarkIsRefused() throws {
        let token = AuthorizationToken.basic(username: "ann:\u{301}admin", password: "pw")
        let decoded = try XCTUnwrap(Data(base64Encoded: String(token.headerValue.dropFirst("Basic ".count))))
        XCTAssertEqual(decoded.split(separator: UInt8(ascii: ":"), maxSplits: 1).first, Data("ann".utf8))
        XCTAssertThrowsError(try SignedMe(token: token).asURLRequest()) { error in
            XCTAssertEqual((error as? ConnectError)?.invalidRequestReason, .invalidHeader(name: "Authorization"))
            XCTAssertTrue("\(error)".contains("RFC 7617"), "\(error)")
        }
    }

    /// RFC 7617: neither the user-id nor the password may contain a control character. A password read from a file
    /// with its trailing newline is no CR or LF of the header once base64-encoded: it went out as a well-formed
    /// `Authorization`, and the server answered 401 for a newline no one could see. It is a typed error instead, and
    /// nothing is sent, whichever stage signs the request.
    func testBasicCredentialsWithAControlCharacterAreATypedErrorNotSentEncoded() throws {
        let transport = FakeTransport.answering(.status(200))
        let base = URL(string: "https://a.example")!
        let pairs = [
            ("ann", "s3cret\n"), ("ann\r\n", "s3cret"), ("ann", "s3\0cret"), ("ann", "s3\tcret"),
            ("ann", "s3cret\u{7F}"),
        ]
        for (username, password) in pairs {
            let label = "\(username.debugDescription) / \(password.debugDescription)"
            let token = AuthorizationToken.basic(username: username, password: password)
            func assertRefused(_ outcome: () throws -> Void, _ stage: String) {
                XCTAssertThrowsError(try outcome(), "\(stage), \(label)") { error in
                    let connectError = error as? ConnectError
                    XCTAssertEqual(connectError?.kind, .invalidRequest, "\(stage), \(label)")
                    XCTAssertEqual(
                        connectError?.invalidRequestReason, .invalidHeader(name: "Authorization"), "\(stage), \(label)")
                    XCTAssertTrue("\(error)".contains("control character"), "\(stage), \(label): \(error)")
                    XCTAssertFalse("\(error)".contains("cret"), "the credentials stay out of the message: \(error)")
                    XCTAssertFalse("\(error)".contains(token.headerValue), "\(error)")
                }
            }
            assertRefused({ _ = try SignedMe(token: token).asURLRequest() }, "AuthorizedConnector")
            let viaConnector = Connect(transport: transport, retryPolicy: nil)
            assertRefused({ _ = try viaConnector.request(SignedMe(token: token)).wait(timeout: 5) }, "Connect")
            let viaBasic = Connect(
                transport: transport, middlewares: [.basicAuthentication(username: username, password: password)],
                retryPolicy: nil)
            assertRefused({ _ = try viaBasic.request(Route("/me", baseURL: base)).wait(timeout: 5) }, "Basic")
            let auth = AuthenticationMiddleware(credential: token) { _ in
                Future(error: URLError(.userAuthenticationRequired))
            }
            let viaMiddleware = Connect(transport: transport, middlewares: [auth], retryPolicy: nil)
            assertRefused(
                { _ = try viaMiddleware.request(Route("/me", baseURL: base)).wait(timeout: 5) }, "middleware")
        }
        XCTAssertTrue(transport.requests.isEmpty)
        // Text that is not ASCII goes as UTF-8 (RFC 7617 §2.1), and an empty password as an empty one.
        let connect = Connect(transport: transport, retryPolicy: nil)
        for (username, password) in [("zoë", "pässwörd"), ("ann", "")] {
            let token = AuthorizationToken.basic(username: username, password: password)
            _ = try connect.request(SignedMe(token: token)).wait(timeout: 5)
            XCTAssertEqual(
                transport.requests.last?.value(forHTTPHeaderField: "Authorization"),
                "Basic " + Data("\(username):\(password)".utf8).base64EncodedString())
        }
        XCTAssertEqual(transport.requests.count, 2)
    }

    /// `.bearer(token: "")` is sent as it is, not refused when the request is built: an app whose token store is
    /// still empty before the first refresh signs its connectors with it, and the request must reach the
    /// `AuthenticationMiddleware`, whose 401 starts the refresh.
    func testAnEmptyBearerTokenIsSentSoThatARefreshCanReplaceIt() throws {
        // Given
        let fake = FakeTransport.answering(
            .handler { request in
                let status = request.value(forHTTPHeaderField: "Authorization") == "Bearer fresh" ? 200 : 401
                return .success(ConnectResponse(request: request, statusCode: status, data: Data())!)
            })
        let auth = AuthenticationMiddleware(credential: nil) { _ in Future(value: .bearer(token: "fresh")) }
        let connect = Connect(transport: fake, middlewares: [auth], retryPolicy: nil)
        // When
        let response = value(of: connect.response(for: SignedMe(token: .bearer(token: ""))))
        // Then
        XCTAssertEqual(response?.statusCode, 200)
        XCTAssertEqual(fake.requests.count, 2)
        XCTAssertEqual(fake.requests.last?.value(forHTTPHeaderField: "Authorization"), "Bearer fresh")
        XCTAssertEqual(auth.credential, .bearer(token: "fresh"))
    }

    /// The same with the middleware's own credential empty (a token store still empty at start-up) or ending in a
    /// blank: the request went out trimmed (`Bearer`), which the middleware took for another stage's credential, so
    /// its 401 started no refresh, and every call failed until the app set a credential itself.
    func testAMiddlewareCredentialEmptyOrEndingInABlankIsRefreshedOnItsRejection() throws {
        for start in [AuthorizationToken.bearer(token: ""), .bearer(token: "stale "), .custom(token: "Token x\t")] {
            let fake = FakeTransport.answering(
                .handler { request in
                    let status = request.value(forHTTPHeaderField: "Authorization") == "Bearer fresh" ? 200 : 401
                    return .success(ConnectResponse(request: request, statusCode: status, data: Data())!)
                })
            let auth = AuthenticationMiddleware(credential: start) { _ in Future(value: .bearer(token: "fresh")) }
            let connect = Connect(transport: fake, middlewares: [auth], retryPolicy: nil)
            let me = Route("/me", baseURL: URL(string: "https://api.example.com")!)
            let response = value(of: connect.response(for: me))
            XCTAssertEqual(response?.statusCode, 200, "\(start)")
            XCTAssertEqual(fake.requests.count, 2, "\(start)")
            XCTAssertEqual(auth.credential, .bearer(token: "fresh"), "\(start)")
        }
    }

    func testCustomTokenIsUsedAsIs() {
        XCTAssertEqual(AuthorizationToken.custom(token: "Token xyz").headerValue, "Token xyz")
    }

    func testTokenHeaderIsAuthorization() {
        XCTAssertEqual(
            AuthorizationToken.bearer(token: "t").header, HTTPHeader(name: "Authorization", value: "Bearer t"))
    }

    func testAuthorizationHeaderFactoriesMatchTokens() {
        XCTAssertEqual(HTTPHeader.authorization(bearerToken: "t"), AuthorizationToken.bearer(token: "t").header)
        XCTAssertEqual(
            HTTPHeader.authorization(username: "Aladdin", password: "open sesame").value,
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
        XCTAssertEqual(HTTPHeader.authorization("Digest x"), HTTPHeader(name: "Authorization", value: "Digest x"))
    }

    func testTokensAreHashableByValue() {
        XCTAssertEqual(AuthorizationToken.bearer(token: "a"), .bearer(token: "a"))
        XCTAssertNotEqual(AuthorizationToken.bearer(token: "a"), .custom(token: "a"))
        XCTAssertEqual(
            Set([AuthorizationToken.basic(username: "u", password: "p"), .basic(username: "u", password: "p")]).count, 1
        )
    }

    // MARK: - Secrets never printed

    func testTokenDescriptionsNeverContainTheSecret() {
        let tokens: [AuthorizationToken] = [
            .bearer(token: "s3cr3t-bearer"), .basic(username: "s3cr3t-user", password: "s3cr3t-pass"),
            .custom(token: "s3cr3t-custom"),
        ]
        for token in tokens {
            var dumped = ""
            dump(token, to: &dumped)
            for text in [
                token.description, String(describing: token), String(reflecting: token), "\(token)", dumped,
                "\([token])",
            ] {
                XCTAssertFalse(text.contains("s3cr3t"), text)
                XCTAssertFalse(text.contains(token.headerValue), text)
                XCTAssertTrue(text.contains("<redacted>"), text)
            }
        }
        XCTAssertEqual(AuthorizationToken.bearer(token: "x").description, "bearer(<redacted>)")
    }

    func testSensitiveHeaderDescriptionsAreRedacted() {
        let sensitive = [
            HTTPHeader.authorization(bearerToken: "s3cr3t"), HTTPHeader(name: "Proxy-Authorization", value: "s3cr3t"),
            HTTPHeader(name: "cookie", value: "s3cr3t"), HTTPHeader(name: "Set-Cookie", value: "s3cr3t"),
            HTTPHeader(name: "X-Auth-Token", value: "s3cr3t"), HTTPHeader(name: "X-API-Key", value: "s3cr3t"),
            HTTPHeader(name: "Client-Secret", value: "s3cr3t"), HTTPHeader(name: "X-PASSWORD", value: "s3cr3t"),
        ]
        for header in sensitive {
            var dumped = ""
            dump(header, to: &dumped)
            XCTAssertEqual(header.description, "\(header.name): <redacted>")
            XCTAssertFalse(dumped.contains("s3cr3t"), dumped)
            XCTAssertFalse("\([header])".contains("s3cr3t"))
        }
        XCTAssertEqual(HTTPHeader.accept("application/json").description, "Accept: application/json")
    }

    func testIsSensitiveIgnoresCaseAndMatchesFragments() {
        for name in [
            "Authorization", "AUTHORIZATION", "proxy-authorization", "Cookie", "set-cookie", "X-Refresh-Token",
            "token", "x-secret-id", "Password", "x-api-key", "X_API_KEY", "apikey", "X-Authorization",
            "X-Session-Id", "X-Credential", "X-Signature", "X-Passwd", "X-Client-Cookie", "X-Private-Key",
            "X-Access-Key",
            "Api.Key", "api key", "Pass_Word", "X-Cookies-Enabled-Version", "Authorization-Hint",
        ] {
            XCTAssertTrue(HTTPHeader.isSensitive(name: name), name)
        }
        for name in [
            "Accept", "Accept-Encoding", "Accept-Language", "Content-Type", "Content-Length", "User-Agent",
            "Cache-Control", "Idempotency-Key", "If-None-Match", "Keep-Alive", "Transfer-Encoding",
            "WWW-Authenticate", "Sec-WebSocket-Key", "X-Request-ID", "X-Forwarded-For", "",
        ] {
            XCTAssertFalse(HTTPHeader.isSensitive(name: name), name)
        }
    }

    // MARK: - Common headers

    func testCommonHeaderFactories() {
        XCTAssertEqual(HTTPHeader.contentType("text/plain"), HTTPHeader(name: "Content-Type", value: "text/plain"))
        XCTAssertEqual(HTTPHeader.accept("a/b"), HTTPHeader(name: "Accept", value: "a/b"))
        XCTAssertEqual(HTTPHeader.acceptLanguage("en"), HTTPHeader(name: "Accept-Language", value: "en"))
        XCTAssertEqual(HTTPHeader.userAgent("App/1"), HTTPHeader(name: "User-Agent", value: "App/1"))
        XCTAssertEqual(HTTPHeader.idempotencyKey("k1"), HTTPHeader(name: "Idempotency-Key", value: "k1"))
    }
}

/// GET https://api.example.com/me, signed with `token`.
private struct SignedMe: Connector, AuthorizedConnector {
    let token: AuthorizationToken

    var baseURL: URL { URL(string: "https://api.example.com")! }
    var endpoint: String { "/me" }
    var method: HTTPMethod { .get }
    var headers: [HTTPHeader] { [] }
    var parameters: (any ParametersRepresentable)? { nil }
    var authorizationToken: AuthorizationToken? { token }
}
