import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Secrets a client adds to every request (a `ServerConfiguration`'s default headers and query items, a middleware's
/// API key, an `AuthenticationMiddleware`'s credential, its session configuration's secret `httpAdditionalHeaders`)
/// are the request's too: a server that echoes them (as JSON, or as plain text) cannot make an error of that client
/// show them.
final class ConfigurationSecretEchoTests: IntegrationTestCase {
    private var server: LocalServer!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        server.route("GET", "/echo") { request in .echo(request, status: 401) }
        server.route("GET", "/plain") { request in
            .text("invalid credentials: " + request.headers.map(\.value).joined(separator: " "), status: 403)
        }
    }

    override func tearDown() {
        server.stop()
    }

    struct Call: Connector {
        var baseURL: URL
        var endpoint: String
        var method: HTTPMethod { .get }
        var timeout: TimeInterval { 10 }
    }

    private static func texts(of error: ConnectError) -> [String] {
        var dumped = ""
        dump(error, to: &dumped)
        return [
            error.message, error.description, error.debugDescription, String(reflecting: error), dumped,
            error.localizedDescription,
        ]
    }

    private func failure(_ connect: Connect, _ endpoint: String) throws -> ConnectError {
        let result = try connect.request(Call(baseURL: server.baseURL, endpoint: endpoint)).waitForResult(timeout: 20)
        var failure: (any Error)?
        if case .failure(let error) = result { failure = error }
        return try XCTUnwrap(failure as? ConnectError, "expected a ConnectError, got \(result)")
    }

    func testDefaultHeadersAndQueryItemsOfTheServerConfigurationAreHidden() throws {
        var configuration = try XCTUnwrap(
            ServerConfiguration(
                baseURL: server.baseURL,
                defaultHeaders: [HTTPHeader(name: "Authorization", value: "Bearer cfg-bearer-1111")]))
        configuration.defaultQueryItems = [URLQueryItem(name: "api_key", value: "cfg-qu3ry-2222")]
        let connect = Connect(
            transport: TransportUnderTest.makeCookieless(), retryPolicy: nil, configuration: configuration)
        for endpoint in ["/echo", "/plain"] {
            let error = try failure(connect, endpoint)
            for text in Self.texts(of: error) {
                for secret in ["cfg-bearer-1111", "cfg-qu3ry-2222"] where text.contains(secret) {
                    XCTFail("\(endpoint): \(secret) shows in:\n\(text)")
                }
            }
        }
    }

    func testAMiddlewaresKeyIsHidden() throws {
        let connect = Connect(
            transport: TransportUnderTest.makeCookieless(),
            middlewares: [
                AnyMiddleware.adapter { request in
                    request.headerFields.append(HeaderField(name: "X-Api-Key", value: "mw-ap1-key-3333"))
                }
            ], retryPolicy: nil)
        for endpoint in ["/echo", "/plain"] {
            let error = try failure(connect, endpoint)
            for text in Self.texts(of: error) where text.contains("mw-ap1-key-3333") {
                XCTFail("\(endpoint): shows in:\n\(text)")
            }
        }
    }

    /// An API key a `URLRequest` adapter adds to the query, under a name no rule knows, is hidden by value.
    struct QueryKeyAdapter: ConnectMiddlewareProtocol {
        func adapt(_ request: URLRequest) throws -> URLRequest {
            var request = request
            var components = URLComponents(url: request.url!, resolvingAgainstBaseURL: false)!
            components.queryItems =
                (components.queryItems ?? []) + [URLQueryItem(name: "apikey", value: "ad4pter-qk-4444")]
            request.url = components.url
            return request
        }
    }

    func testAURLRequestAdaptersQueryKeyIsHidden() throws {
        let connect = Connect(
            transport: TransportUnderTest.makeCookieless(), middlewares: [QueryKeyAdapter()], retryPolicy: nil)
        for endpoint in ["/echo", "/plain"] {
            let error = try failure(connect, endpoint)
            for text in Self.texts(of: error) where text.contains("ad4pter-qk-4444") {
                XCTFail("\(endpoint): shows in:\n\(text)")
            }
        }
    }

    func testTheSessionsAdditionalHeadersAreHidden() throws {
        let configuration = URLSessionTransport.defaultConfiguration
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpAdditionalHeaders = ["Authorization": "Bearer sess-bearer-5555"]
        let connect = Connect(transport: URLSessionTransport(configuration: configuration), retryPolicy: nil)
        for endpoint in ["/echo", "/plain"] {
            let error = try failure(connect, endpoint)
            for text in Self.texts(of: error) where text.contains("sess-bearer-5555") {
                XCTFail("\(endpoint): shows in:\n\(text)")
            }
        }
    }

    /// A session of the app's (``URLSessionTransport/init(session:)``) keeps its headers, and sends them itself: its
    /// secret ones are hidden all the same.
    func testTheAdditionalHeadersOfASessionOfTheAppsAreHidden() throws {
        let configuration = URLSessionTransport.defaultConfiguration
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpAdditionalHeaders = ["X-Api-Key": "app-sess-k3y-6666"]
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let connect = Connect(transport: URLSessionTransport(session: session), retryPolicy: nil)
        for endpoint in ["/echo", "/plain"] {
            let error = try failure(connect, endpoint)
            XCTAssertTrue(
                String(decoding: error.body ?? Data(), as: UTF8.self).contains("app-sess-k3y-6666"),
                "\(endpoint): the server did not get the session's header")
            for text in Self.texts(of: error) where text.contains("app-sess-k3y-6666") {
                XCTFail("\(endpoint): shows in:\n\(text)")
            }
        }
    }

    /// A secret header of the session's configuration is the request's: removed on a redirect to another origin
    /// (another port), kept on one to the same origin; its other headers are left to the session.
    func testTheSessionsSecretHeadersDoNotFollowARedirectToAnotherOrigin() throws {
        let other = try LocalServer.started()
        defer { other.stop() }
        other.route("GET", "/landing") { _ in .json(["ok": true]) }
        server.route("GET", "/away") { _ in .redirect(to: "\(other.baseURL.absoluteString)/landing") }
        server.route("GET", "/home") { _ in .redirect(to: "/landing") }
        server.route("GET", "/landing") { _ in .json(["ok": true]) }
        let configuration = URLSessionTransport.defaultConfiguration
        configuration.httpAdditionalHeaders = [
            "Authorization": "Bearer sess-bearer-5555", "X-App": "demo", "Proxy-Authorization": "Basic cHJveHk6cHc=",
        ]
        let connect = Connect(transport: URLSessionTransport(configuration: configuration), retryPolicy: nil)
        _ = try connect.request(Call(baseURL: server.baseURL, endpoint: "/away")).wait(timeout: 20)
        let landed = try XCTUnwrap(other.requests.last)
        XCTAssertNil(landed.header("Authorization"), "the session's credential followed to another origin")
        XCTAssertEqual(landed.header("X-App"), "demo")
        // The proxy's credential is for the proxy, whatever the origin: the session keeps sending it, as before.
        XCTAssertEqual(landed.header("Proxy-Authorization"), "Basic cHJveHk6cHc=")
        XCTAssertEqual(server.requests.last?.header("Authorization"), "Bearer sess-bearer-5555")
        _ = try connect.request(Call(baseURL: server.baseURL, endpoint: "/home")).wait(timeout: 20)
        XCTAssertEqual(server.requests.last?.path, "/landing")
        XCTAssertEqual(server.requests.last?.header("Authorization"), "Bearer sess-bearer-5555")
        // The configuration passed in is not changed.
        XCTAssertEqual(configuration.httpAdditionalHeaders?["Authorization"] as? String, "Bearer sess-bearer-5555")
    }

    func testAnAuthenticationMiddlewaresCredentialsAreHidden() throws {
        let auth = AuthenticationMiddleware(credential: .bearer(token: "auth-t0ken-6666")) { _ in
            Future(value: .bearer(token: "auth-t0ken-7777"))
        }
        let connect = Connect(transport: TransportUnderTest.makeCookieless(), middlewares: [auth], retryPolicy: nil)
        for endpoint in ["/echo", "/plain"] {
            let error = try failure(connect, endpoint)
            for text in Self.texts(of: error) {
                for secret in ["auth-t0ken-6666", "auth-t0ken-7777"] where text.contains(secret) {
                    XCTFail("\(endpoint): \(secret) shows in:\n\(text)")
                }
            }
        }
    }

    func testACredentialWhoseRefreshFailedIsHidden() throws {
        struct RefreshFailed: Error {}
        let auth = AuthenticationMiddleware(credential: .bearer(token: "auth-t0ken-8888")) { _ in
            Future(error: RefreshFailed())
        }
        let connect = Connect(transport: TransportUnderTest.makeCookieless(), middlewares: [auth], retryPolicy: nil)
        for endpoint in ["/echo", "/plain"] {
            let error = try failure(connect, endpoint)
            // `/plain` answers 403, which the middleware does not take for an expired credential.
            XCTAssertEqual(
                error.kind, endpoint == "/echo" ? .authenticationFailed : .httpStatus, "\(endpoint): \(error)")
            for text in Self.texts(of: error) where text.contains("auth-t0ken-8888") {
                XCTFail("\(endpoint): shows in:\n\(text)")
            }
        }
    }
}
