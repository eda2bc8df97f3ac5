import Foundation
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `SetCookieFields`: only cookies written in visible ASCII reach `HTTPCookie`'s parser, which on Linux stops the
/// process on a cookie name with a character outside the Basic Multilingual Plane.
final class SetCookieFieldsTests: XCTestCase {
    /// Values that stopped FoundationNetworking's parser (`String index is out of bounds`), found by fuzzing.
    static let unreadable = ["😀=", "ab😀😀=x", "\r\n\u{1D}idata:llo\r\r\r\n\r\n\ri%\u{01}{\"g\u{00}da="]

    private let url = URL(string: "https://api.example.com/login")!

    func testTheCookiesTheParserCannotReadAreRemovedAndTheOthersKept() throws {
        let joined = "a=1; Expires=Wed, 09 Jun 2077 10:18:14 GMT; Path=/, 😀=, b=2; Path=/, ab😀😀=x"

        let readable = SetCookieFields.readable(["Set-Cookie": joined, "Content-Type": "text/plain; 😀"])

        XCTAssertEqual(readable["Set-Cookie"], "a=1; Expires=Wed, 09 Jun 2077 10:18:14 GMT; Path=/, b=2; Path=/")
        XCTAssertEqual(readable["Content-Type"], "text/plain; 😀", "other fields are left as they are")
        let cookies = HTTPCookie.cookies(withResponseHeaderFields: readable, for: url)
        XCTAssertEqual(cookies.map(\.name).sorted(), ["a", "b"])
        let expires = try XCTUnwrap(cookies.first { $0.name == "a" }?.expiresDate, "the date's comma split it")
        XCTAssertEqual(Calendar(identifier: .gregorian).component(.year, from: expires), 2077)
    }

    func testAFieldLeftWithoutCookiesIsRemovedWhateverTheCaseOfItsName() {
        for name in ["Set-Cookie", "set-cookie", "SET-COOKIE"] {
            XCTAssertNil(SetCookieFields.readable([name: "😀="])[name], name)
        }
    }

    func testACommaOutsideAnExpiresDateSeparatesCookies() {
        XCTAssertEqual(SetCookieFields.cookies(in: "a=1, b=2,c=3"), ["a=1", " b=2", "c=3"])
        XCTAssertEqual(
            SetCookieFields.cookies(in: "a=1; Expires=Sun, 06 Nov 2077 08:49:37 GMT, b=2"),
            ["a=1; Expires=Sun, 06 Nov 2077 08:49:37 GMT", " b=2"])
        XCTAssertEqual(SetCookieFields.cookies(in: ""), [""])
    }

    /// Foundation's joined list is split only where a comma is followed by a cookie's `name=`: a comma in a value, a
    /// quoted value, an attribute or a date is its cookie's. A quoted `"x, y=z"` and `k=v, w x=y` were cut in two.
    func testACommaSplitsTheJoinedListOnlyBeforeACookiesName() {
        XCTAssertEqual(SetCookieFields.cookies(in: "a=b,c, d=1"), ["a=b,c", " d=1"])
        XCTAssertEqual(SetCookieFields.cookies(in: #"q="x, y=z"; Path=/, d=1"#), [#"q="x, y=z"; Path=/"#, " d=1"])
        XCTAssertEqual(SetCookieFields.cookies(in: #"q = "x,y=z",d=1"#), [#"q = "x,y=z""#, "d=1"])
        XCTAssertEqual(SetCookieFields.cookies(in: "k=v, w x=y, d=1"), ["k=v, w x=y", " d=1"])
        XCTAssertEqual(SetCookieFields.cookies(in: "d=2; Comment=one, two; Path=/"), ["d=2; Comment=one, two; Path=/"])
        XCTAssertEqual(
            SetCookieFields.cookies(in: "e=1; Expires=Wed, 09-Jun-2077 10:18:14 GMT,\tf =2"),
            ["e=1; Expires=Wed, 09-Jun-2077 10:18:14 GMT", "\tf =2"])
        // An unclosed quote, or one closed after the next `;`, quotes nothing
        XCTAssertEqual(SetCookieFields.cookies(in: #"q="x, d=1"#), [#"q="x"#, " d=1"])
        XCTAssertEqual(SetCookieFields.cookies(in: #"q="x; a, d="1""#), [#"q="x; a"#, #" d="1""#])
        // A name outside ASCII splits too, so that dropping it keeps its neighbours
        XCTAssertEqual(SetCookieFields.cookies(in: "a=1, 😀=2"), ["a=1", " 😀=2"])
        // The limit: a field's own comma before `name=` cannot be told from two fields joined
        XCTAssertEqual(SetCookieFields.cookies(in: "a=1, b=2"), ["a=1", " b=2"])
    }

    func testValuesThatStoppedTheParserReachItAsNothing() {
        for value in Self.unreadable {
            let readable = SetCookieFields.readable(["Set-Cookie": value])
            XCTAssertTrue(HTTPCookie.cookies(withResponseHeaderFields: readable, for: url).isEmpty, value)
        }
    }

    /// The redirect rules (AsyncHTTPClientTransport's) send the readable cookies of a redirect on the next hop.
    func testARedirectSettingAnUnreadableCookieKeepsTheReadableOnes() throws {
        for value in Self.unreadable {
            let response = try XCTUnwrap(
                HTTPURLResponse(
                    url: url, statusCode: 302, httpVersion: "HTTP/1.1",
                    headerFields: ["Location": "/home", "Set-Cookie": value + ", session=s1; Path=/"]))

            let answer = ConnectResponse(request: URLRequest(url: url), response: response, data: Data())
            let next = try XCTUnwrap(RedirectRule.next(after: ConnectRequest(url: url), answeredBy: answer))

            XCTAssertEqual(next.request.value(forHTTPHeaderField: "Cookie"), "session=s1", value)
        }
    }

    /// Linux: the transport's session neither parses nor sends a cookie itself; the transport does both, as the
    /// configuration says; the configuration it was given is left unchanged.
    func testTheSessionOfATransportNeitherParsesNorSendsCookiesOnLinux() throws {
        let configuration = URLSessionConfiguration.default
        configuration.httpCookieAcceptPolicy = .always

        let (used, cookies) = SessionCookies.takingOver(configuration)

        XCTAssertEqual(configuration.httpCookieAcceptPolicy, .always)
        XCTAssertTrue(configuration.httpShouldSetCookies)
        #if canImport(FoundationNetworking)
            XCTAssertEqual(used.httpCookieAcceptPolicy, .never)
            XCTAssertFalse(used.httpShouldSetCookies)
            XCTAssertTrue(cookies?.storage === configuration.httpCookieStorage)
            XCTAssertEqual(cookies?.accepts, true)
            XCTAssertEqual(cookies?.sends, true)
            // One that keeps no new cookie still sends the stored ones, by the transport's rules
            let never = URLSessionConfiguration.default
            never.httpCookieAcceptPolicy = .never
            XCTAssertEqual(SessionCookies.takingOver(never).1?.accepts, false)
            XCTAssertEqual(SessionCookies.takingOver(never).1?.sends, true)
            XCTAssertEqual(SessionCookies.takingOver(never).0.httpShouldSetCookies, false)
            // One without a storage gets a session that parses no cookie all the same (its parser stops the process)
            let none = URLSessionConfiguration.default
            none.httpCookieStorage = nil
            XCTAssertNil(SessionCookies.takingOver(none).1)
            XCTAssertEqual(SessionCookies.takingOver(none).0.httpCookieAcceptPolicy, .never)
        #else
            XCTAssertTrue(used === configuration)
            XCTAssertNil(cookies)
        #endif
        let neither = URLSessionConfiguration.default
        neither.httpCookieAcceptPolicy = .never
        neither.httpShouldSetCookies = false
        XCTAssertNil(SessionCookies.takingOver(neither).1, "a configuration that neither keeps nor sends cookies")
    }
}
