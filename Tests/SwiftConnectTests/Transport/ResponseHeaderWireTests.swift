import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The `Set-Cookie` and `Location` fields of a response as a server writes them on the wire, read by the core through
/// both kinds of engine: URLSession, which hands the core repeated fields joined with `", "` (`HTTPURLResponse`), and
/// `SocketEngine`, which hands them one by one as AsyncHTTPClient does. Each test starts its own `LocalServer` and
/// sends raw header lines.
final class ResponseHeaderWireTests: XCTestCase {
    /// The engines under test, by name: URLSession without a cookie store of its own (only the core's redirect
    /// cookies count) and `SocketEngine`.
    private let engines: [(name: String, make: () -> any Transport)] = [
        ("URLSession", TransportUnderTest.makeCookieless), ("SocketEngine", { SocketEngine() }),
    ]

    /// A started server, stopped when the test ends.
    private func startedServer() throws -> LocalServer {
        let server = try LocalServer.started()
        addTeardownBlock { server.stop() }
        return server
    }

    /// The cookies the hop after a 302 setting `setCookies` (one field each) carried, in order, on each engine.
    private func cookiesSentAfterARedirect(setting setCookies: [String]) throws -> [String: [String]] {
        let server = try startedServer()
        server.route("GET", "/login") { _ in
            LocalServer.Response(
                status: 302, headers: [("Location", "/home")] + setCookies.map { ("Set-Cookie", $0) })
        }
        server.route("GET", "/home") { request in .text(request.header("Cookie") ?? "") }
        var sent: [String: [String]] = [:]
        for engine in engines {
            let connect = Connect(transport: engine.make(), retryPolicy: nil)
            let body = try connect.request(Route("/login", baseURL: server.baseURL, timeout: 10)).wait(timeout: 20)
            let header = String(decoding: body, as: UTF8.self)
            sent[engine.name] = header.isEmpty ? [] : header.components(separatedBy: "; ")
        }
        return sent
    }

    // MARK: - Set-Cookie

    /// A comma inside one `Set-Cookie` field (in the value, a quoted value, an attribute, an `Expires` date) is part
    /// of that cookie on both engines: URLSession's joined list is split only where a comma is followed by a cookie's
    /// `name=`. A value `"x, y=z"` was cut in two on every engine; `k=v, w x=y` made a cookie named `w x`.
    func testACommaInsideOneSetCookieFieldStaysInThatCookieOnEveryEngine() throws {
        let sent = try cookiesSentAfterARedirect(setting: [
            "a=b,c; Path=/", #"q="x, y=z"; Path=/"#, "e=1; Expires=Wed, 09 Jun 2077 10:18:14 GMT; Path=/",
            "d=2; Comment=one, two; Path=/", "k=v, w x=y; Path=/", "last=1",
        ])

        let expected = ["a=b,c", #"q="x, y=z""#, "e=1", "d=2", "k=v, w x=y", "last=1"]
        XCTAssertEqual(sent["URLSession"], expected)
        XCTAssertEqual(sent["SocketEngine"], expected)
    }

    /// An engine that hands the core each field (AsyncHTTPClient, `SocketEngine`) gets one cookie a field, as RFC
    /// 6265 and browsers read them: `a=1, b=2` in one field is the cookie `a` with the value `1, b=2`. URLSession
    /// joins repeated fields with `", "` before the core sees them, so there one field written that way cannot be
    /// told from two: it is read as two (the documented limit of `SetCookieFields.cookies(in:)`).
    func testOneSetCookieFieldIsOneCookieOnAnEngineThatKeepsFieldsApart() throws {
        let sent = try cookiesSentAfterARedirect(setting: ["a=1, b=2; Path=/"])

        XCTAssertEqual(sent["SocketEngine"], ["a=1, b=2"])
        XCTAssertEqual(sent["URLSession"], ["a=1", "b=2"], "joined fields: the limit")
    }

    /// RFC 6265bis §5.6: a cookie whose name and value are over 4096 octets together is ignored, and so is an
    /// attribute whose value is over 1024 octets (the attribute, not the cookie). A 100 KB cookie was kept and sent
    /// on every later hop; a 2000-octet `Path` scoped the cookie to a path nothing requests. The big cookie here is
    /// 60 KB: its field stays under `SocketEngine`'s 64 KiB line limit, which refuses the whole answer otherwise.
    func testCookiesAndAttributesOverTheSizeLimitsAreIgnoredOnEveryEngine() throws {
        let huge = String(repeating: "h", count: 60_000)
        let sent = try cookiesSentAfterARedirect(setting: [
            "big=\(huge); Path=/", "edge=\(String(repeating: "e", count: 4092))",
            "over=\(String(repeating: "o", count: 4093))", "longpath=1; Path=/\(String(repeating: "p", count: 2000))",
            "small=1",
        ])

        let expected = ["edge=\(String(repeating: "e", count: 4092))", "longpath=1", "small=1"]
        XCTAssertEqual(sent["URLSession"], expected)
        XCTAssertEqual(sent["SocketEngine"], expected)
    }

    // MARK: - Location

    /// The 302 answering a `Location` of `location`, written as raw bytes, on each engine: the outcome of the call.
    private func follow(rawLocation location: String) throws -> [String: Result<ConnectResponse, any Error>] {
        let server = try startedServer()
        server.route("GET", "/landing") { _ in .text("landed") }
        let head = "HTTP/1.1 302 Found\r\nLocation:\(location)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        server.route("GET", "/go") { _ in LocalServer.Response().withFault(.raw(Data(head.utf8))) }
        var outcomes: [String: Result<ConnectResponse, any Error>] = [:]
        for engine in engines {
            let connect = Connect(transport: engine.make(), retryPolicy: nil)
            outcomes[engine.name] = try connect.response(for: Route("/go", baseURL: server.baseURL, timeout: 10))
                .waitForResult(timeout: 20)
        }
        return outcomes
    }

    /// RFC 9110 §5.5: the spaces and tabs around a field value are no part of it: a `Location` written
    /// `Location:\t/landing\t` is followed to `/landing` on every engine.
    func testALocationWithBlanksAroundItIsFollowed() throws {
        for location in ["\t/landing\t", " /landing ", "\t /landing \t"] {
            for (engine, outcome) in try follow(rawLocation: location) {
                guard case .success(let response) = outcome else {
                    XCTFail("\(engine) \(location.debugDescription): \(outcome)")
                    continue
                }
                XCTAssertEqual(response.statusCode, 200, "\(engine) \(location.debugDescription)")
                XCTAssertEqual(
                    String(decoding: response.data, as: UTF8.self), "landed", "\(engine) \(location.debugDescription)")
            }
        }
    }

    /// A `Location` with a space, a tab or another control character inside is no URI reference (RFC 3986): the
    /// redirect is not followed on any engine, and the 3xx, the answer, reaches the caller as a typed error that
    /// names it. Nothing reaches `/landing`, nor a target cut at the character. A NUL is refused with the whole
    /// answer, by the core (`SocketEngine`) or libcurl (URLSession).
    func testALocationWithBlanksOrControlCharactersInsideIsNotFollowed() throws {
        let locations = [
            " /land ing", " /land\ting", " /land\u{00}ing", " /land\u{01}ing", " /land\u{7F}ing", " /landing\u{0B}",
        ]
        for location in locations {
            for (engine, outcome) in try follow(rawLocation: location) {
                guard case .failure(let error as ConnectError) = outcome else {
                    XCTFail("\(engine) \(location.debugDescription): \(outcome)")
                    continue
                }
                // A NUL makes the head invalid: every engine refuses the answer itself, with a typed error
                if location.contains("\u{00}") { continue }
                XCTAssertEqual(error.statusCode, 302, "\(engine) \(location.debugDescription): \(error)")
                XCTAssertTrue(
                    error.message.contains("not followed: it has a space or a control character inside"),
                    "\(engine) \(location.debugDescription): \(error)")
            }
        }
    }
}
