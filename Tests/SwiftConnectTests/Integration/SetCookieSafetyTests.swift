import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A `Set-Cookie` field that FoundationNetworking's cookie parser cannot read (`😀=`, see `SetCookieFields`) neither
/// stops the process nor loses the other cookies of the response, on every engine.
final class SetCookieSafetyTests: IntegrationTestCase {
    func testAResponseSettingAnUnreadableCookieArrivesAndItsOtherCookiesAreKept() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        let name = "kept\(UInt32.random(in: 0...UInt32.max))"
        server.route("GET", "/set") { _ in
            LocalServer.Response(
                status: 200, headers: [("Set-Cookie", "😀="), ("Set-Cookie", "\(name)=1; Path=/")],
                body: Data("{}".utf8))
        }
        server.route("GET", "/echo") { request in .text(request.header("Cookie") ?? "none") }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        defer {
            HTTPCookieStorage.shared.cookies?.filter { $0.name == name }.forEach(HTTPCookieStorage.shared.deleteCookie)
        }

        let response = try connect.request(Route("/set", baseURL: server.baseURL, timeout: 10)).wait(timeout: 20)
        let echoed = try connect.request(Route("/echo", baseURL: server.baseURL, timeout: 10)).wait(timeout: 20)

        XCTAssertEqual(response, Data("{}".utf8))
        if TransportUnderTest.isURLSession {
            // The session's cookie storage (`HTTPCookieStorage.shared`, which may hold other cookies for this host)
            // kept the readable cookie.
            let sent = String(decoding: echoed, as: UTF8.self).split(separator: ";").map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            XCTAssertTrue(sent.contains("\(name)=1"), "sent: \(sent)")
        } else {
            XCTAssertEqual(String(decoding: echoed, as: UTF8.self), "none", "no cookie store across requests")
        }
    }

    /// Two `Cookie` fields a middleware added reach the server as cookies it can read, on every engine: joined with
    /// `"; "` (RFC 6265 5.4), never with the `", "` other fields join with, which would make `b=2` part of `a`'s value.
    func testTwoCookieFieldsOfARequestReachTheServerAsTwoCookies() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/echo") { request in
            .text(request.headers.filter { $0.name.lowercased() == "cookie" }.map(\.value).joined(separator: " | "))
        }
        let both = AnyMiddleware.adapter { request in
            request.headerFields.append(HeaderField(name: .cookie, value: "a=1"))
            request.headerFields.append(HeaderField(name: .cookie, value: "b=2"))
        }
        let connect = Connect(transport: TransportUnderTest.make(), middlewares: [both], retryPolicy: nil)

        let echoed = try connect.request(Route("/echo", baseURL: server.baseURL, timeout: 10)).wait(timeout: 20)

        // One field; URLSession may add cookies it stored for this host (`HTTPCookieStorage.shared`) after these.
        let fields = String(decoding: echoed, as: UTF8.self).components(separatedBy: " | ")
        XCTAssertEqual(fields.count, 1, "Cookie fields: \(fields)")
        XCTAssertEqual(fields.first?.components(separatedBy: "; ").prefix(2), ["a=1", "b=2"], "\(fields)")
    }

    func testARedirectSettingAnUnreadableCookieIsFollowed() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/login") { _ in
            LocalServer.Response(
                status: 302, headers: [("Location", "/home"), ("Set-Cookie", "😀="), ("Set-Cookie", "s=r1; Path=/")])
        }
        server.route("GET", "/home") { request in .text(request.header("Cookie") ?? "none") }
        let connect = Connect(transport: TransportUnderTest.makeCookieless(), retryPolicy: nil)

        let home = try connect.request(Route("/login", baseURL: server.baseURL, timeout: 10)).wait(timeout: 20)

        XCTAssertEqual(server.requests.map(\.path), ["/login", "/home"])
        if !TransportUnderTest.isURLSession {
            XCTAssertEqual(String(decoding: home, as: UTF8.self), "s=r1", "the readable cookie went on the next hop")
        }
    }

    /// Each hop of a redirected exchange gets the cookies its redirects set that apply to it, not the hop before
    /// it's: a cookie for `/app` does not go to `/public`, and one a later 3xx deletes is not sent after it.
    func testEachHopGetsOnlyTheRedirectCookiesThatApplyToIt() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/login") { _ in
            LocalServer.Response(
                status: 302,
                headers: [("Location", "/app/step"), ("Set-Cookie", "scoped=1; Path=/app"), ("Set-Cookie", "sid=1")])
        }
        server.route("GET", "/app/step") { _ in
            LocalServer.Response(
                status: 302, headers: [("Location", "/public"), ("Set-Cookie", "scoped=; Max-Age=0; Path=/app")])
        }
        server.route("GET", "/public") { _ in .redirect(to: "/app/end") }
        server.route("GET", "/app/end") { request in .text(request.header("Cookie") ?? "none") }
        let connect = Connect(transport: TransportUnderTest.makeCookieless(), retryPolicy: nil)

        let end = try connect.request(Route("/login", baseURL: server.baseURL, timeout: 10)).wait(timeout: 20)

        XCTAssertEqual(server.requests.map(\.path), ["/login", "/app/step", "/public", "/app/end"])
        #if canImport(FoundationNetworking)
            let followedByTheCore = true  // URLSessionTransport hands every 3xx to the core on Linux
        #else
            let followedByTheCore = !TransportUnderTest.isURLSession
        #endif
        if followedByTheCore {
            let sent = server.requests.map { $0.header("Cookie") ?? "none" }
            XCTAssertEqual(sent, ["none", "scoped=1; sid=1", "sid=1", "sid=1"])
            XCTAssertEqual(String(decoding: end, as: UTF8.self), "sid=1")
        }
    }
}
