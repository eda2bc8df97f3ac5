import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A session whose configuration turns cookies off sends no cookie that a redirect sets on the call's next hops, as
/// URLSession's own redirects would not: the core's exchange follows every redirect of `URLSessionTransport`, and it
/// added a redirect's cookies whatever the configuration said. Through a real session to LocalServer, on the plain
/// path (a GET handed to the core at its first 3xx) and on the core's exchange from the start (a size limit).
final class RedirectCookieSettingsTests: XCTestCase {
    private var server: LocalServer!
    private let cookie = "t\(UInt32.random(in: 0...UInt32.max))redirect"

    override func setUpWithError() throws {
        server = try LocalServer.started()
        server.route("GET", "/echo") { request in .text(request.header("Cookie") ?? "") }
        server.route("GET", "/login") { [cookie] _ in
            LocalServer.Response(status: 302, headers: [("Location", "/echo"), ("Set-Cookie", "\(cookie)=1; Path=/")])
        }
    }

    override func tearDown() {
        server?.stop()
        let storage = HTTPCookieStorage.shared
        storage.cookies?.filter { $0.name == cookie }.forEach(storage.deleteCookie)
    }

    /// What `/echo` saw at the end of `/login`'s redirect, with the request's own `Cookie: mine=0`, on both paths.
    private func sentAfterRedirect(_ configuration: URLSessionConfiguration) throws -> [String] {
        let transport = URLSessionTransport(configuration: configuration)
        var request = URLRequest(url: server.baseURL.appendingPathComponent("login"))
        request.setValue("mine=0", forHTTPHeaderField: "Cookie")
        var limited = TransferOptions()
        limited.maxResponseBytes = 1 << 20
        return try [TransferOptions(), limited].map { transfer in
            let response = try transport.send(try ConnectRequest(request), transfer: transfer).wait(timeout: 20)
            XCTAssertEqual(response.statusCode, 200)
            // Only this test's cookies: the shared storage may hold others for this host, from other tests.
            return String(decoding: response.data, as: UTF8.self).split(separator: ";")
                .map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { $0.hasPrefix("mine=") || $0.hasPrefix(cookie + "=") }.joined(separator: "; ")
        }
    }

    private func configuration(_ change: (URLSessionConfiguration) -> Void) -> URLSessionConfiguration {
        let configuration = URLSessionTransport.defaultConfiguration
        change(configuration)
        return configuration
    }

    func testNoRedirectCookieGoesOnWhenTheSessionSendsNoCookies() throws {
        let sent = try sentAfterRedirect(configuration { $0.httpShouldSetCookies = false })
        XCTAssertEqual(sent, ["mine=0", "mine=0"])
    }

    func testNoRedirectCookieGoesOnWhenTheSessionAcceptsNoCookies() throws {
        let sent = try sentAfterRedirect(configuration { $0.httpCookieAcceptPolicy = .never })
        XCTAssertEqual(sent, ["mine=0", "mine=0"])
        XCTAssertFalse(HTTPCookieStorage.shared.cookies?.contains { $0.name == cookie } ?? false)
    }

    func testNoRedirectCookieGoesOnWithoutACookieStorage() throws {
        let sent = try sentAfterRedirect(configuration { $0.httpCookieStorage = nil })
        XCTAssertEqual(sent, ["mine=0", "mine=0"])
    }

    /// The storage's own policy counts too, as it is when the call is made.
    func testNoRedirectCookieGoesOnWhenTheStorageAcceptsNoCookies() throws {
        let storage = HTTPCookieStorage.sharedCookieStorage(forGroupContainerIdentifier: "swiftconnect.\(cookie)")
        storage.cookieAcceptPolicy = .never
        let sent = try sentAfterRedirect(configuration { $0.httpCookieStorage = storage })
        XCTAssertEqual(sent, ["mine=0", "mine=0"])
        XCTAssertEqual(storage.cookies ?? [], [])
    }

    /// The default configuration: the redirect's cookie goes on, after the request's own.
    func testTheRedirectCookieGoesOnByDefault() throws {
        let sent = try sentAfterRedirect(URLSessionTransport.defaultConfiguration)
        XCTAssertEqual(sent, ["mine=0; \(cookie)=1", "mine=0; \(cookie)=1"])
    }
}
