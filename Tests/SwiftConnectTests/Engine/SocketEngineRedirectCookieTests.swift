import Foundation
@_spi(Engine) import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The cookies a redirect sets, through the core's exchange over an engine with no cookie settings of its own
/// (`SocketEngine`, as `AsyncHTTPClientTransport`): `Domain=.` makes a host-only cookie that goes on, and a request
/// that handles no cookies (`httpShouldHandleCookies = false`) gets none.
final class SocketEngineRedirectCookieTests: XCTestCase {
    private var server: LocalServer!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        server.route("GET", "/echo") { request in .text(request.header("Cookie") ?? "") }
        server.route("GET", "/login") { _ in
            LocalServer.Response(
                status: 302,
                headers: [
                    ("Location", "/echo"), ("Set-Cookie", "dot=1; Domain=.; Path=/"),
                    ("Set-Cookie", "empty=1; Domain=; Path=/"),
                ])
        }
    }

    override func tearDown() { server?.stop() }

    private func sent(handlingCookies: Bool) throws -> String {
        var request = URLRequest(url: server.baseURL.appendingPathComponent("login"))
        request.httpShouldHandleCookies = handlingCookies
        request.timeoutInterval = 10
        let response = try SocketEngine().send(request).wait(timeout: 20)
        XCTAssertEqual(response.statusCode, 200)
        return String(decoding: response.data, as: UTF8.self)
    }

    func testALoneDotOrEmptyDomainCookieGoesOnToItsHost() throws {
        XCTAssertEqual(try sent(handlingCookies: true), "dot=1; empty=1")
    }

    func testARequestThatHandlesNoCookiesGetsNoneFromARedirect() throws {
        XCTAssertEqual(try sent(handlingCookies: false), "")
    }
}
