import Foundation
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// RFC 6265's storing (§5.2, §5.3) and sending (§5.4) rules, as `CookieRules` applies them for redirects on every
/// engine and for the session's storage on Linux.
final class CookieRulesTests: XCTestCase {
    private let now = Date(timeIntervalSince1970: 1_800_000_000)
    private let page = URL(string: "https://a.example.com/dir/page")!

    private func cookie(_ text: String, from url: URL? = nil) -> HTTPCookie? {
        CookieRules.cookie(from: Substring(text), setBy: url ?? page, now: now)
    }

    // MARK: - Storing

    func testMaxAgeWinsOverExpiresAndZeroOrLessExpiresTheCookie() throws {
        XCTAssertEqual(cookie("a=1; Max-Age=60")?.expiresDate, now.addingTimeInterval(60))
        // Max-Age wins whatever the order; the last of each counts
        XCTAssertEqual(
            cookie("a=1; Max-Age=60; Expires=Thu, 01 Jan 2037 00:00:00 GMT")?.expiresDate, now.addingTimeInterval(60))
        XCTAssertEqual(
            cookie("a=1; Expires=Thu, 01 Jan 2037 00:00:00 GMT; Max-Age=10; max-age=20")?.expiresDate,
            now.addingTimeInterval(20))
        // 0 or less: already expired (it deletes the stored one it replaces)
        for text in ["a=; Max-Age=0", "a=; Max-Age=-5", "a=1; Max-Age=0; Expires=Thu, 01 Jan 2037 00:00:00 GMT"] {
            let expiry = try XCTUnwrap(cookie(text)?.expiresDate, text)
            XCTAssertLessThan(expiry, now, text)
        }
        // A Max-Age that is not a number is ignored: Expires, or a session cookie
        XCTAssertEqual(
            cookie("a=1; Max-Age=soon; Expires=Thu, 01 Jan 2037 00:00:00 GMT")?.expiresDate,
            Date(timeIntervalSince1970: 2_114_380_800))
        XCTAssertNil(try XCTUnwrap(cookie("a=1; Max-Age=1e3")).expiresDate)
    }

    func testExpiresIsReadAsACookieDate() {
        let endOf2037 = Date(timeIntervalSince1970: 2_145_916_799)  // Thu, 31 Dec 2037 23:59:59 GMT
        for text in [
            "Thu, 31 Dec 2037 23:59:59 GMT", "Thursday, 31-Dec-37 23:59:59 GMT", "Thu Dec 31 23:59:59 2037",
            "31 Dec 2037 23:59:59", "Thu, 31-Dec-2037 23:59:59 GMT",
        ] {
            XCTAssertEqual(CookieRules.cookieDate(text), endOf2037, text)
        }
        // Two-digit years: 70 to 99 in the 1900s
        XCTAssertEqual(CookieRules.cookieDate("Thu, 01-Jan-70 00:00:00 GMT"), Date(timeIntervalSince1970: 0))
        // Out of range, or a day past the month's end
        for text in [
            "Thu, 30 Feb 2037 00:00:00 GMT", "Thu, 31 Dec 2037 24:00:00 GMT", "Thu, 31 Dec 1600 00:00:00 GMT",
            "Thu, 31 Dec 2037", "31 Dec 23:59:59", "tomorrow",
        ] {
            XCTAssertNil(CookieRules.cookieDate(text), text)
        }
    }

    func testACookieWithoutANameOrWithoutEqualsIsIgnored() {
        XCTAssertNil(cookie("flag"))
        XCTAssertNil(cookie("=value"))
        XCTAssertNil(cookie("; Path=/"))
        XCTAssertEqual(cookie(" a = b c ; Path=/")?.value, "b c")
    }

    /// RFC 6265bis §5.6: a name and value over 4096 octets together make the cookie ignored; an attribute whose value
    /// is over 1024 octets is ignored, the cookie kept. A 100 KB cookie was stored and sent back on every request.
    func testCookiesAndAttributesOverTheSizeLimitsAreIgnored() {
        XCTAssertNil(cookie("big=\(String(repeating: "v", count: 100_000))"))
        XCTAssertNil(cookie("n=\(String(repeating: "v", count: 4096))"), "4097 octets")
        XCTAssertEqual(cookie("n=\(String(repeating: "v", count: 4095))")?.value.count, 4095, "4096 octets")
        XCTAssertNil(cookie("n=\(String(repeating: "é", count: 2048))"), "counted in octets, not characters")
        XCTAssertNil(cookie("\(String(repeating: "n", count: 4097))="), "the name counts too")

        let longPath = "/" + String(repeating: "p", count: 1024)
        XCTAssertEqual(cookie("a=1; Path=/ok; Path=\(longPath)")?.path, "/ok", "the long attribute alone is ignored")
        XCTAssertEqual(cookie("a=1; Path=\(longPath.dropLast())")?.path, String(longPath.dropLast()), "1024 octets")
        XCTAssertEqual(
            cookie("a=1; Max-Age=60; Max-Age=\(String(repeating: "9", count: 1025))")?.expiresDate,
            now.addingTimeInterval(60))
        XCTAssertEqual(cookie("a=1; Domain=\(String(repeating: "x", count: 1025)).com")?.domain, "a.example.com")
    }

    /// A `Max-Age` with a sign other than `-` is no number (ignored), one with huge digits saturates: no trap, and a
    /// `SameSite` in any case leaves the cookie stored.
    func testOddMaxAgesAndSameSiteValuesNeitherTrapNorDropTheCookie() throws {
        XCTAssertNil(try XCTUnwrap(cookie("a=1; Max-Age=+60")).expiresDate)
        let far = try XCTUnwrap(cookie("a=1; Max-Age=\(String(repeating: "9", count: 400))")?.expiresDate)
        XCTAssertGreaterThan(far, now.addingTimeInterval(365 * 24 * 3600))
        let past = try XCTUnwrap(cookie("a=1; Max-Age=-\(String(repeating: "9", count: 400))")?.expiresDate)
        XCTAssertLessThan(past, now)
        for sameSite in ["Lax", "STRICT", "none", "bogus", ""] {
            XCTAssertEqual(cookie("a=1; SameSite=\(sameSite)")?.value, "1", sameSite)
        }
    }

    #if canImport(FoundationNetworking)
        /// §5.3 step 10: `HttpOnly` sets the cookie's http-only flag. On Linux the session's storage keeps the
        /// cookies `CookieRules` reads, and an app that reads them there saw `isHTTPOnly` false where
        /// FoundationNetworking's own parser said true; the last of an attribute counts, and it takes no value.
        func testHttpOnlyIsKept() throws {
            XCTAssertEqual(try XCTUnwrap(cookie("a=1; HttpOnly")).isHTTPOnly, true)
            XCTAssertEqual(try XCTUnwrap(cookie("a=1; path=/; httponly=yes; Secure")).isHTTPOnly, true)
            XCTAssertEqual(try XCTUnwrap(cookie("a=1; Path=/")).isHTTPOnly, false)
            XCTAssertEqual(try XCTUnwrap(cookie("a=1; HttpOnlyX")).isHTTPOnly, false)
        }
    #endif

    func testTheDefaultPathIsTheRequestsDirectory() {
        XCTAssertEqual(cookie("a=1")?.path, "/dir")
        XCTAssertEqual(cookie("a=1; Path=relative")?.path, "/dir")
        XCTAssertEqual(cookie("a=1; Path=")?.path, "/dir")
        XCTAssertEqual(cookie("a=1; Path=/x/")?.path, "/x/")
        XCTAssertEqual(cookie("a=1", from: URL(string: "https://a.example.com/page")!)?.path, "/")
        XCTAssertEqual(cookie("a=1", from: URL(string: "https://a.example.com")!)?.path, "/")
        XCTAssertEqual(cookie("a=1", from: URL(string: "https://a.example.com/d/e/")!)?.path, "/d/e")
    }

    func testADomainMustHoldTheHostHaveMoreThanOneLabelAndNeverSuffixAnAddress() {
        XCTAssertEqual(cookie("a=1; Domain=example.com")?.domain, ".example.com")
        XCTAssertEqual(cookie("a=1; Domain=.Example.COM")?.domain, ".example.com")
        XCTAssertEqual(cookie("a=1; Domain=a.example.com")?.domain, ".a.example.com", "the host itself: its domain")
        XCTAssertEqual(cookie("a=1; Domain=localhost", from: URL(string: "http://localhost/")!)?.domain, "localhost")
        XCTAssertEqual(cookie("a=1")?.domain, "a.example.com")
        XCTAssertNil(cookie("a=1; Domain=com"), "a top-level domain")
        // A host written fully qualified keeps its trailing dot; its top-level domain is still one label.
        let qualified = URL(string: "https://evil.com./")!
        XCTAssertNil(cookie("a=1; Domain=com.", from: qualified), "a top-level domain, fully qualified")
        XCTAssertNil(cookie("a=1; Domain=com..", from: URL(string: "https://evil.com../")!), "dots are no labels")
        XCTAssertEqual(cookie("a=1; Domain=com.", from: URL(string: "https://com./")!)?.domain, "com.", "host-only")
        XCTAssertEqual(cookie("a=1; Domain=evil.com.", from: qualified)?.domain, ".evil.com.")
        XCTAssertNil(cookie("a=1; Domain=other.com"), "a domain the host is not in")
        XCTAssertNil(cookie("a=1; Domain=ample.com"), "a suffix that is no label")
        // One leading dot is ignored (RFC 6265bis §5.6.3), not every one: `..example.com` is no domain of the host.
        XCTAssertNil(cookie("a=1; Domain=..example.com"), "a domain with an empty label")
        let address = URL(string: "http://10.1.2.3/")!
        XCTAssertNil(cookie("a=1; Domain=1.2.3", from: address), "an IP address's suffix")
        XCTAssertEqual(cookie("a=1; Domain=10.1.2.3", from: address)?.domain, "10.1.2.3")
    }

    /// RFC 6265 §5.2.3 and §5.3 step 6: `Domain=` (empty) is ignored, and `Domain=.` leaves an empty domain once its
    /// dot is removed: both make a host-only cookie, as no `Domain` does (`Domain=.` was ignored whole). The last
    /// `Domain` counts: `Domain=.` after a domain makes the cookie host-only, an empty one after a domain changes
    /// nothing.
    func testAnEmptyDomainOrALoneDotMakesAHostOnlyCookie() throws {
        for text in ["a=1; Domain=", "a=1; Domain=.", "a=1; Domain = . ", "a=1; Domain=example.com; Domain=."] {
            let made = cookie(text)
            XCTAssertEqual(made?.domain, "a.example.com", text)
            XCTAssertEqual(made?.value, "1", text)
        }
        XCTAssertEqual(cookie("a=1; Domain=example.com; Domain=")?.domain, ".example.com")
        let address = URL(string: "http://10.1.2.3/")!
        XCTAssertEqual(cookie("a=1; Domain=.", from: address)?.domain, "10.1.2.3")
        // Host-only, it goes to its host alone, never to a host below it.
        let hostOnly = try XCTUnwrap(cookie("a=1; Domain=."))
        XCTAssertTrue(CookieRules.sends(hostOnly, to: page, now: now))
        XCTAssertFalse(CookieRules.sends(hostOnly, to: URL(string: "https://b.a.example.com/dir/page")!, now: now))
    }

    /// RFC 6265bis's storage model (the latest draft) asks of a `__Host-` cookie that its host-only flag be set, not
    /// that it carry no `Domain`: `Domain=.` (empty once its dot is removed) and `Domain=` (ignored) leave it
    /// host-only, so the cookie is kept, for its host alone; a `Domain` that names a domain, the host's own name
    /// included, makes a domain cookie and the `__Host-` cookie is refused.
    func testAHostPrefixedCookieWithAnEmptyDomainIsKeptHostOnly() throws {
        for text in [
            "__Host-sid=x; Secure; Path=/; Domain=.", "__Host-sid=x; Secure; Path=/; Domain=",
            "__Host-sid=x; Domain=.; Secure; Path=/",
        ] {
            let made = try XCTUnwrap(cookie(text), text)
            XCTAssertEqual(made.domain, "a.example.com", text)
            XCTAssertTrue(made.isSecure, text)
            XCTAssertFalse(CookieRules.sends(made, to: URL(string: "https://b.a.example.com/")!, now: now), text)
        }
        XCTAssertNil(cookie("__Host-sid=x; Secure; Path=/; Domain=a.example.com"), "the host's own name as Domain")
        XCTAssertNil(cookie("__Host-sid=x; Secure; Path=/; Domain=.a.example.com"), "the host's own name, dotted")
        XCTAssertNil(cookie("__Host-sid=x; Path=/; Domain=."), "not Secure")
        XCTAssertNil(cookie("__Host-sid=x; Secure; Domain=."), "no Path=/")
    }

    /// RFC 6265bis §4.1.3, as browsers enforce the prefixes: a sibling host cannot toss a `__Host-` cookie to its
    /// parent domain, nor plain http set a `__Secure-` one.
    func testCookiePrefixesAreEnforced() {
        XCTAssertNil(cookie("__Host-sid=x; Secure; Path=/; Domain=example.com"), "a __Host- cookie with a Domain")
        XCTAssertNil(cookie("__Host-sid=x; Path=/"), "a __Host- cookie that is not Secure")
        XCTAssertNil(cookie("__Host-sid=x; Secure"), "a __Host- cookie without Path=/")
        XCTAssertNil(cookie("__host-sid=x; Secure; Path=/app"), "a __Host- cookie of another path, any case")
        XCTAssertEqual(cookie("__Host-sid=x; Secure; Path=/")?.domain, "a.example.com")
        XCTAssertNil(cookie("__Secure-id=x"), "a __Secure- cookie that is not Secure")
        XCTAssertNil(cookie("__Secure-id=x", from: URL(string: "http://a.example.com/")!))
        XCTAssertEqual(cookie("__Secure-id=x; Secure; Domain=example.com")?.domain, ".example.com")
    }

    func testASecureCookieIsTakenOnlyFromASecureOrigin() {
        XCTAssertEqual(cookie("a=1; Secure")?.isSecure, true)
        XCTAssertNil(cookie("a=1; Secure", from: URL(string: "http://a.example.com/")!))
        XCTAssertEqual(cookie("a=1", from: URL(string: "http://a.example.com/")!)?.isSecure, false)
    }

    /// Loopback origins are secure contexts for cookies, as browsers treat them (Chrome 89, Firefox 75; W3C Secure
    /// Contexts' "potentially trustworthy" origins, which RFC 6265bis leaves to the client): a `Secure` cookie is taken
    /// from, and sent to, http to `127.0.0.0/8`, `::1` and `localhost`, a developer's local server. No other
    /// plain-http host: not an address or a name that only looks local, nor `*.localhost`, which a browser resolves to
    /// loopback itself but the engines leave to the system's resolver (which may ask DNS).
    func testLoopbackOriginsAreSecureForCookies() throws {
        let loopback = [
            "http://127.0.0.1:8080/", "http://127.1.2.3/", "http://[::1]:8080/", "http://localhost:3000/",
            "http://LOCALHOST./", "ws://127.0.0.1/",
        ]
        for text in loopback {
            let url = try XCTUnwrap(URL(string: text))
            let secure = try XCTUnwrap(cookie("a=1; Secure", from: url), "taken from \(text)")
            XCTAssertTrue(secure.isSecure, text)
            XCTAssertTrue(CookieRules.sends(secure, to: url, now: now), "sent to \(text)")
            XCTAssertEqual(cookie("__Secure-id=x; Secure", from: url)?.isSecure, true, text)
        }
        let elsewhere = [
            "http://a.example.com/", "http://10.0.0.1/", "http://192.168.1.1/", "http://[::2]/", "http://0.0.0.0/",
            "http://localhost.example.com/", "http://127.0.0.1.example.com/", "http://notlocalhost/",
            "http://app.localhost/", "http://app.localhost./",
        ]
        for text in elsewhere {
            let url = try XCTUnwrap(URL(string: text))
            XCTAssertNil(cookie("a=1; Secure", from: url), "taken from \(text)")
            let https = try XCTUnwrap(URL(string: text.replacingOccurrences(of: "http://", with: "https://")))
            let secure = try XCTUnwrap(cookie("a=1; Secure", from: https), "taken from \(https)")
            XCTAssertTrue(CookieRules.sends(secure, to: https, now: now), "sent to \(https)")
            XCTAssertFalse(CookieRules.sends(secure, to: url, now: now), "sent to \(text)")
        }
        // A plain-http loopback response may replace its own Secure cookie, as https may.
        let local = try XCTUnwrap(URL(string: "http://127.0.0.1/"))
        let plain = try XCTUnwrap(cookie("a=2", from: local))
        XCTAssertFalse(
            CookieRules.overwritesSecureCookie(
                plain, setBy: local, in: [stored("a", "127.0.0.1", secure: true)], now: now))
    }

    // MARK: - Bounds

    /// A stored cookie for `domain` (a leading `.` for a domain cookie), `Secure` or not, expired or not.
    private func stored(_ name: String, _ domain: String, secure: Bool = false, expired: Bool = false) -> HTTPCookie {
        var properties: [HTTPCookiePropertyKey: Any] = [.name: name, .value: "1", .domain: domain, .path: "/"]
        if secure { properties[.secure] = "TRUE" }
        properties[.expires] = expired ? now.addingTimeInterval(-60) : now.addingTimeInterval(3600)
        return HTTPCookie(properties: properties)!
    }

    private func evictions(_ new: HTTPCookie, _ cookies: [HTTPCookie], perDomain: Int = 3, total: Int = 100)
        -> [String]
    {
        CookieRules.evictions(toStore: new, in: cookies, now: now, maxPerDomain: perDomain, maxTotal: total)
            .map(\.name).sorted()
    }

    /// RFC 6265 §6.1 and 6265bis's eviction order: past a domain's bound, a new cookie makes room by evicting that
    /// domain's expired cookies first, then those that are not `Secure`, then the others; a host-only cookie and a
    /// domain cookie of one name count together; another domain's cookies are left alone.
    func testANewCookiePastItsDomainsBoundEvictsExpiredThenPlainCookiesOfThatDomain() {
        let new = stored("new", "a.example.com")
        let others = (0..<5).map { stored("other\($0)", "b.example.com") }
        XCTAssertEqual(
            evictions(
                new,
                others + [
                    stored("gone", "a.example.com", expired: true), stored("s1", "a.example.com", secure: true),
                    stored("p1", ".a.example.com"),
                ]),
            ["gone"])
        XCTAssertEqual(
            evictions(
                new,
                others + [
                    stored("s1", "a.example.com", secure: true), stored("p1", ".a.example.com"),
                    stored("s2", "a.example.com", secure: true),
                ]),
            ["p1"])
        let secure = (0..<3).map { stored("s\($0)", "a.example.com", secure: true) }
        XCTAssertEqual(evictions(new, others + secure).count, 1)
        // Under the bound, or replacing a stored cookie, or deleting one (expired): nothing is evicted
        XCTAssertEqual(evictions(new, others + secure.dropLast()), [])
        XCTAssertEqual(evictions(stored("s0", "a.example.com", secure: true), others + secure), [])
        XCTAssertEqual(evictions(stored("x", "a.example.com", expired: true), others + secure), [])
        // Past the bound already (a storage filled by others): down to one under it
        let many = (0..<6).map { stored("m\($0)", "a.example.com") }
        XCTAssertEqual(evictions(new, many).count, 4)
    }

    /// Past the bound in all, a new cookie evicts expired cookies first, then any.
    func testANewCookiePastTheTotalBoundEvictsExpiredCookiesFirst() {
        let new = stored("new", "c.example.com")
        let full = [
            stored("a1", "a.example.com"), stored("a2", "a.example.com"), stored("b1", "b.example.com"),
            stored("b2", "b.example.com", expired: true),
        ]
        XCTAssertEqual(evictions(new, full, perDomain: 3, total: 4), ["b2"])
        let live = full.dropLast() + [stored("b3", "b.example.com")]
        XCTAssertEqual(evictions(new, Array(live), perDomain: 3, total: 4).count, 1)
        XCTAssertEqual(evictions(new, Array(live), perDomain: 3, total: 5), [])
    }

    // MARK: - Sending

    private func stored(
        _ name: String, domain: String = "a.example.com", path: String = "/", secure: Bool = false,
        expires: Date? = nil
    ) -> HTTPCookie {
        var properties: [HTTPCookiePropertyKey: Any] = [.name: name, .value: "v", .domain: domain, .path: path]
        if secure { properties[.secure] = "TRUE" }
        if let expires { properties[.expires] = expires }
        return HTTPCookie(properties: properties)!
    }

    private func header(_ url: String, _ cookies: [HTTPCookie], keeping existing: String? = nil) -> String? {
        CookieRules.header(for: URL(string: url)!, from: cookies, keeping: existing, now: now)
    }

    /// RFC 6265bis §5.7, step 16: over plain http, a cookie of a `Secure` one's name is ignored when the domains
    /// match one way or the other and its path is the `Secure` one's or below; any other cookie is taken.
    func testACookieFromPlainHTTPIsIgnoredInPlaceOfASecureOne() throws {
        let plain = URL(string: "http://a.example.com/dir/page")!
        let secure = try XCTUnwrap(cookie("sid=1; Secure; Domain=example.com; Path=/dir"))
        func overwrites(_ text: String, from url: URL = plain, stored: [HTTPCookie]? = nil) throws -> Bool {
            let new = try XCTUnwrap(cookie(text, from: url), text)
            return CookieRules.overwritesSecureCookie(new, setBy: url, in: stored ?? [secure], now: now)
        }
        for text in ["sid=2", "sid=2; Path=/dir/sub", "sid=; Max-Age=0", "sid=2; Domain=a.example.com"] {
            XCTAssertTrue(try overwrites(text), text)
        }
        // Another name, a path above the Secure one's, an https setter, an expired or a plain stored cookie
        XCTAssertFalse(try overwrites("other=2"))
        XCTAssertFalse(try overwrites("sid=2; Path=/"))
        XCTAssertFalse(try overwrites("sid=2", from: URL(string: "https://a.example.com/dir/page")!))
        let expired = try XCTUnwrap(cookie("sid=1; Secure; Path=/dir; Max-Age=0"))
        XCTAssertFalse(try overwrites("sid=2", stored: [expired]))
        let unsecured = try XCTUnwrap(cookie("sid=1; Path=/dir", from: plain))
        XCTAssertFalse(try overwrites("sid=2", stored: [unsecured]))
        // A host the Secure cookie's domain does not cover
        XCTAssertFalse(try overwrites("sid=2", from: URL(string: "http://b.other.com/dir/page")!))
    }

    func testASecureCookieGoesOverHTTPSOnly() {
        let cookies = [stored("s", secure: true), stored("p")]
        XCTAssertEqual(header("https://a.example.com/", cookies), "s=v; p=v")
        XCTAssertEqual(header("http://a.example.com/", cookies), "p=v")
    }

    func testHostOnlyDomainPathAndExpiryDecide() {
        let cookies = [
            stored("host"), stored("domain", domain: ".example.com"), stored("admin", path: "/admin"),
            stored("slash", path: "/api/"), stored("old", expires: now), stored("later", expires: now + 1),
        ]
        XCTAssertEqual(header("https://a.example.com/", cookies), "host=v; domain=v; later=v")
        XCTAssertEqual(header("https://b.example.com/admin/x", cookies), "domain=v")
        XCTAssertEqual(header("https://example.com/", cookies), "domain=v")
        XCTAssertNil(header("https://notexample.com/", cookies))
        XCTAssertEqual(header("https://a.example.com/admin/x", cookies), "admin=v; host=v; domain=v; later=v")
        XCTAssertEqual(header("https://a.example.com/adminx", cookies), "host=v; domain=v; later=v")
        // A path's trailing slash counts (URL.path drops it on Linux)
        XCTAssertEqual(header("https://a.example.com/api/", cookies), "slash=v; host=v; domain=v; later=v")
        // An IP address gets a domain cookie only as its own host
        let address = [stored("ip", domain: ".1.2.3")]
        XCTAssertNil(header("http://10.1.2.3/", address))
    }

    #if canImport(FoundationNetworking)
        /// §5.4: of cookies whose paths are as long, the oldest goes first, whatever order the storage lists them in
        /// (FoundationNetworking's lists them from a dictionary). `HTTPCookie` records when it was made (`Created`).
        func testCookiesOfEqualPathLengthGoOldestFirst() throws {
            var made: [HTTPCookie] = []
            for name in ["a", "b", "c", "d", "e"] {
                // Each one made after the clock has moved on from the one before: no two alike
                let before = made.last.flatMap(CookieRules.creationTime(of:)) ?? 0
                while Date().timeIntervalSinceReferenceDate <= before {}
                made.append(stored(name, path: name == "c" ? "/x" : "/"))
            }
            let created = made.map { CookieRules.creationTime(of: $0) }
            XCTAssertEqual(created.compactMap { $0 }.count, made.count, "HTTPCookie records no creation time")
            let listed = [made[4], made[1], made[3], made[2], made[0]]
            XCTAssertEqual(header("https://a.example.com/x", listed), "c=v; a=v; b=v; d=v; e=v")
        }
    #endif

    func testTheRequestsOwnCookiesComeFirstAndWin() {
        let cookies = [stored("a"), stored("b")]
        XCTAssertEqual(header("https://a.example.com/", cookies, keeping: "b=mine; c=3"), "b=mine; c=3; a=v")
        XCTAssertEqual(header("https://a.example.com/", [], keeping: "c=3"), "c=3")
        XCTAssertNil(header("https://a.example.com/", []))
    }

    /// The caller's own header goes as written, but for the blanks around its pieces: a nameless cookie (`consent`,
    /// RFC 6265bis) is not rewritten as a cookie named `consent` (`consent=`), nor one written `=abc` dropped.
    func testTheRequestsOwnPiecesGoAsWritten() {
        let cookies = [stored("a")]
        XCTAssertEqual(
            header("https://a.example.com/", cookies, keeping: " consent ;=abc; b = 1 ;;"), "consent; =abc; b = 1; a=v")
        XCTAssertEqual(header("https://a.example.com/", cookies, keeping: "a=mine; x"), "a=mine; x")
    }
}
