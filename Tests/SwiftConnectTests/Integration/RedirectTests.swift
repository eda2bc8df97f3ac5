import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Credentials never follow a redirect to another origin.
final class RedirectTests: XCTestCase {
    private struct Endpoint: Connector, AuthorizedConnector {
        var baseURL: URL
        var endpoint: String
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [HTTPHeader(name: "Cookie", value: "session=abc")] }
        var parameters: (any ParametersRepresentable)? { nil }
        var authorizationToken: AuthorizationToken? { .bearer(token: "secret-token") }
    }

    /// Two servers: `origin` answers `/start` with a redirect to `/landing` on `other`, a different port.
    private func startRedirectingToAnotherOrigin() throws -> (origin: LocalServer, other: LocalServer) {
        let origin = try LocalServer.started()
        let other = try LocalServer.started()
        other.route("GET", "/landing") { _ in .json(["ok": true]) }
        origin.route("GET", "/start") { _ in
            .redirect(to: other.baseURL.appendingPathComponent("landing").absoluteString)
        }
        return (origin, other)
    }

    func testAuthorizationIsDroppedWhenARedirectChangesHost() throws {
        let (origin, other) = try startRedirectingToAnotherOrigin()
        defer {
            origin.stop()
            other.stop()
        }

        let connect = Connect(transport: URLSessionTransport(), retryPolicy: nil)
        XCTAssertNoThrow(try connect.request(Endpoint(baseURL: origin.baseURL, endpoint: "/start")).wait())

        XCTAssertEqual(origin.requests.first?.header("Authorization"), "Bearer secret-token")
        let landed = try XCTUnwrap(other.requests.first)
        XCTAssertNil(landed.header("Authorization"), "credentials must not reach another origin")
        XCTAssertNil(landed.header("Cookie"))
    }

    func testEveryHeaderNamedLikeASecretIsDroppedWhenARedirectChangesHost() throws {
        let (origin, other) = try startRedirectingToAnotherOrigin()
        defer {
            origin.stop()
            other.stop()
        }
        let secrets = [
            "X-Authorization", "X-Session-Id", "X-Credential", "X-Signature", "X-Passwd", "X-Client-Cookie",
            "X-Private-Key", "X-Api-Key", "X-Auth-Token",
        ]
        let headers = secrets.map { HTTPHeader(name: $0, value: "secret-of-\($0)") }
        let start = Route(
            "/start", baseURL: origin.baseURL, headers: headers + [HTTPHeader(name: "X-Trace", value: "trace-1")])

        let connect = Connect(transport: URLSessionTransport(), retryPolicy: nil)
        XCTAssertNoThrow(try connect.request(start).wait())

        let sent = try XCTUnwrap(origin.requests.first)
        let landed = try XCTUnwrap(other.requests.first)
        for name in secrets {
            XCTAssertEqual(sent.header(name), "secret-of-\(name)", "the origin gets \(name)")
            XCTAssertNil(landed.header(name), "\(name) must not reach another origin")
        }
        XCTAssertEqual(landed.header("X-Trace"), "trace-1", "other headers still follow")
    }

    func testAuthorizationIsKeptOnASameOriginRedirect() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/landing") { _ in .json(["ok": true]) }
        server.route("GET", "/start") { _ in .redirect(to: "/landing") }

        let connect = Connect(transport: URLSessionTransport(), retryPolicy: nil)
        XCTAssertNoThrow(try connect.request(Endpoint(baseURL: server.baseURL, endpoint: "/start")).wait())
        XCTAssertEqual(server.requests.last?.header("Authorization"), "Bearer secret-token")
    }

    func testRedirectRuleForDowngradeAndPorts() {
        var request = URLRequest(url: URL(string: "http://example.com/next")!)
        request.setValue("Bearer x", forHTTPHeaderField: "Authorization")
        let fromHTTPS = URLRequest(url: URL(string: "https://example.com/start")!)
        XCTAssertNil(RedirectGuard.redirect(request, from: fromHTTPS).value(forHTTPHeaderField: "Authorization"))
        let samePortImplicit = URLRequest(url: URL(string: "http://example.com:80/start")!)
        XCTAssertEqual(
            RedirectGuard.redirect(request, from: samePortImplicit).value(forHTTPHeaderField: "Authorization"),
            "Bearer x"
        )
    }
}
