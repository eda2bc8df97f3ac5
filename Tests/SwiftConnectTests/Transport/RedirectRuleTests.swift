import Foundation
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `RedirectRule`, the redirect rules a transport that follows redirects itself applies (AsyncHTTPClientTransport).
final class RedirectRuleTests: XCTestCase {
    private let origin = URL(string: "https://api.example.com/start")!

    private func redirect(_ status: Int, to location: String?, headers: [String: String] = [:]) -> ConnectResponse {
        var fields = headers
        if let location { fields["Location"] = location }
        return ConnectResponse(request: ConnectRequest(url: origin), statusCode: status, headers: fields)!
    }

    private func request(_ method: String = "GET", body: Data? = nil, headers: [String: String] = [:])
        -> ConnectRequest
    {
        var request = ConnectRequest(url: origin)
        request.httpMethod = method
        request.httpBody = body
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    func testA307KeepsTheMethodAndTheBodyAndA303BecomesAGET() throws {
        let post = request("POST", body: Data("x=1".utf8), headers: ["Content-Type": "text/plain"])

        let kept = try XCTUnwrap(RedirectRule.next(after: post, answeredBy: redirect(307, to: "/next")))
        let changed = try XCTUnwrap(RedirectRule.next(after: post, answeredBy: redirect(303, to: "/next")))

        XCTAssertEqual(kept.request.httpMethod, "POST")
        XCTAssertEqual(kept.request.httpBody, Data("x=1".utf8))
        XCTAssertTrue(kept.keepsBody)
        XCTAssertEqual(changed.request.httpMethod, "GET")
        XCTAssertNil(changed.request.httpBody)
        XCTAssertNil(changed.request.value(forHTTPHeaderField: "Content-Type"))
        XCTAssertFalse(changed.keepsBody)
        XCTAssertEqual(changed.request.url.absoluteString, "https://api.example.com/next")
    }

    func testCredentialsStayHome() throws {
        let signed = request(headers: ["Authorization": "Bearer t", "X-Api-Key": "k", "Accept": "application/json"])

        let sameOrigin = try XCTUnwrap(RedirectRule.next(after: signed, answeredBy: redirect(302, to: "/b")))
        let elsewhere = try XCTUnwrap(
            RedirectRule.next(after: signed, answeredBy: redirect(302, to: "https://other.example.com/b")))

        XCTAssertEqual(sameOrigin.request.value(forHTTPHeaderField: "Authorization"), "Bearer t")
        XCTAssertNil(elsewhere.request.value(forHTTPHeaderField: "Authorization"))
        XCTAssertNil(elsewhere.request.value(forHTTPHeaderField: "X-Api-Key"))
        XCTAssertEqual(elsewhere.request.value(forHTTPHeaderField: "Accept"), "application/json")
    }

    func testRedirectsThatAreNoRedirectsAreNotFollowed() {
        for location in [nil, "", "   ", "http://[::1", "file:///etc/passwd", "https://user:pw@evil.example.com/"] {
            XCTAssertNil(
                RedirectRule.next(after: request(), answeredBy: redirect(302, to: location)), "\(location ?? "nil")")
        }
        XCTAssertNil(RedirectRule.next(after: request(), answeredBy: redirect(200, to: "/b")))
        XCTAssertNil(RedirectRule.next(after: request(), answeredBy: redirect(304, to: "/b")))
    }

    func testARedirectToNoHostOrToAHostNoNameCouldBeIsNotFollowed() throws {
        for location in ["///x", "//a%20b/x", "//a%2Fb/x", "//a%00b/x", "//a%40b/x", "http://exa%0Dmple.com/"] {
            XCTAssertNil(RedirectRule.next(after: request(), answeredBy: redirect(302, to: location)), location)
        }
        // Host names and IP addresses, IPv6 among them, are followed.
        for location in ["//[::1]:8443/x", "//[fe80::1%25eth0]/x", "//10.0.0.1/x", "//a_b.example-1.com/x"] {
            XCTAssertNotNil(RedirectRule.next(after: request(), answeredBy: redirect(302, to: location)), location)
        }
    }

    /// A port outside 1...65535 (`:0`, `:99999`) names no server: the 3xx is the answer, and its message says why.
    /// It was followed, and failed as a transport error of the engine's making (URLSession: `badURL`, blamed on the
    /// first URL).
    func testARedirectToAPortNoConnectionCanUseIsNotFollowed() throws {
        for location in ["https://api.example.com:0/x", "//api.example.com:99999/x", "http://10.0.0.1:65536/"] {
            let response = redirect(302, to: location)
            XCTAssertNil(RedirectRule.next(after: request(), answeredBy: response), location)
            XCTAssertTrue(RedirectRules.notFollowed(response).hasSuffix(": its port is not in 1...65535"), location)
        }
        for location in ["https://api.example.com:1/x", "//api.example.com:65535/x", "http://10.0.0.1:8080/"] {
            XCTAssertNotNil(RedirectRule.next(after: request(), answeredBy: redirect(302, to: location)), location)
        }
    }

    /// Several `Location` fields that differ name no one target (RFC 9110 §10.2.2 allows one field): the 3xx is the
    /// answer, as browsers refuse to follow it, and the error says why. Their values joined (`/one, /two`) were
    /// followed to `/one,%20/two`, a URL neither field named: URLSession hands them over joined, so a `,` followed by
    /// whitespace separates fields. The same value repeated is that value.
    func testSeveralLocationFieldsThatDifferAreNoRedirect() throws {
        func answer(_ locations: [String]) -> ConnectResponse {
            let fields = HeaderFields(locations.map { HeaderField(name: .location, value: $0) })
            return ConnectResponse(request: request(), head: ResponseHead(status: 302, headerFields: fields))!
        }

        XCTAssertNil(RedirectRule.next(after: request(), answeredBy: answer(["/one", "/two"])))
        XCTAssertNil(RedirectRule.next(after: request(), answeredBy: answer(["/one", "https://other.example.com/"])))
        let repeated = try XCTUnwrap(RedirectRule.next(after: request(), answeredBy: answer(["/one", " /one"])))
        XCTAssertEqual(repeated.request.url.absoluteString, "https://api.example.com/one")
        // As URLSession hands them over: joined into one value with ", ".
        XCTAssertNil(RedirectRule.next(after: request(), answeredBy: answer(["/one, /two"])))
        XCTAssertNil(RedirectRule.next(after: request(), answeredBy: answer(["/one,\t/two"])))
        XCTAssertNil(RedirectRule.next(after: request(), answeredBy: answer(["/one, "])))
        XCTAssertNil(RedirectRule.next(after: request(), answeredBy: answer(["/one, /one", "/two"])))
        let joined = try XCTUnwrap(RedirectRule.next(after: request(), answeredBy: answer(["/one, /one"])))
        XCTAssertEqual(joined.request.url.absoluteString, "https://api.example.com/one")
        XCTAssertTrue(
            RedirectRules.notFollowed(answer(["/one, /two"])).hasSuffix(": it has several Location fields"),
            RedirectRules.notFollowed(answer(["/one, /two"])))
        // A comma on its own is part of a URL: one target.
        let comma = try XCTUnwrap(RedirectRule.next(after: request(), answeredBy: answer(["/one,two?a=1,2"])))
        XCTAssertEqual(comma.request.url.absoluteString, "https://api.example.com/one,two?a=1,2")
        XCTAssertTrue(
            RedirectRules.notFollowed(answer(["/one", "/two"])).hasSuffix(": it has several Location fields"),
            RedirectRules.notFollowed(answer(["/one", "/two"])))
    }

    /// A redirect that turns a POST into a GET drops every field that described the body, as fetch drops its
    /// request-body-header names: `Content-*` and the body's digests, whether the body was empty or not. They went
    /// on with the GET (all of them for an empty body; `Content-Language`, `Content-Location`, `Content-MD5` and the
    /// digests for any), describing a body that request does not have. A GET keeps its fields: its body did not change.
    func testARedirectThatDropsTheBodyDropsEveryFieldDescribingIt() throws {
        let describing = [
            "Content-Type": "text/plain", "Content-Language": "en", "Content-Location": "/drafts/1",
            "Content-MD5": "Q2hlY2sgSW50ZWdyaXR5IQ==", "Content-Digest": "sha-256=:AAAA:",
            "Repr-Digest": "sha-256=:AAAA:",
            "Digest": "SHA-256=AAAA",
        ]
        let others = ["Accept": "application/json", "X-Trace": "trace-1"]
        for body in [Data("x=1".utf8), nil] {
            let post = request("POST", body: body, headers: describing.merging(others) { first, _ in first })
            for status in [301, 302, 303] {
                let context = "\(status), body \(body?.count ?? 0)"
                let next = try XCTUnwrap(
                    RedirectRule.next(after: post, answeredBy: redirect(status, to: "/b")), context)

                XCTAssertEqual(next.request.httpMethod, "GET", context)
                for name in describing.keys {
                    XCTAssertNil(next.request.value(forHTTPHeaderField: name), "\(name) went on, \(context)")
                }
                for (name, value) in others {
                    XCTAssertEqual(next.request.value(forHTTPHeaderField: name), value, "\(name), \(context)")
                }
            }
        }
        let get = request(headers: ["Content-Type": "application/json"])
        let next = try XCTUnwrap(RedirectRule.next(after: get, answeredBy: redirect(302, to: "/b")))
        XCTAssertEqual(next.request.value(forHTTPHeaderField: "Content-Type"), "application/json")
    }

    func testABodyFromAStreamIsNotSentAgain() {
        var streamed = request("POST")
        streamed.httpBodyStream = InputStream(data: Data("x".utf8))

        XCTAssertNil(RedirectRule.next(after: streamed, answeredBy: redirect(307, to: "/b")))
    }

    func testACookieSetByTheRedirectGoesOnTheNextHopOnlyWhereItApplies() throws {
        let response = redirect(302, to: "/home", headers: ["Set-Cookie": "session=abc; Path=/"])
        let withCookie = request(headers: ["Cookie": "theme=dark; session=old"])

        let next = try XCTUnwrap(RedirectRule.next(after: withCookie, answeredBy: response))
        let elsewhere = try XCTUnwrap(
            RedirectRule.next(
                after: request(),
                answeredBy: redirect(
                    302, to: "https://other.example.com/", headers: ["Set-Cookie": "session=abc; Path=/"])))

        XCTAssertEqual(next.request.value(forHTTPHeaderField: "Cookie"), "theme=dark; session=abc")
        XCTAssertNil(elsewhere.request.value(forHTTPHeaderField: "Cookie"))

        // The request's own pieces go on as written: a nameless cookie, one written `=x`
        let nameless = request(headers: ["Cookie": "consent; =x; session=old"])
        let kept = try XCTUnwrap(RedirectRule.next(after: nameless, answeredBy: response))
        XCTAssertEqual(kept.request.value(forHTTPHeaderField: "Cookie"), "consent; =x; session=abc")
    }

    /// A cookie whose `Domain` is the setting host itself is a domain cookie (RFC 6265 §5.3, step 6; §4.1.2.3: a
    /// `Domain` of `example.com` goes to `example.com` and `www.example.com`): a login on the apex that sets its
    /// session so on a 302 to `www.` has it there, as in a browser. It was kept host-only, and the next hop went
    /// without it. A cookie without `Domain` stays with its host.
    func testACookieForTheSettersOwnDomainGoesToItsSubdomains() throws {
        let login = ConnectRequest(url: URL(string: "https://example.com/login")!)
        let fields = HeaderFields([
            HeaderField(name: .location, value: "https://www.example.com/home"),
            HeaderField(name: "Set-Cookie", value: "session=s1; Domain=example.com; Path=/"),
            HeaderField(name: "Set-Cookie", value: "apex=a1; Path=/"),
        ])
        let response = try XCTUnwrap(
            ConnectResponse(request: login, head: ResponseHead(status: 302, headerFields: fields)))

        let next = try XCTUnwrap(RedirectRule.next(after: login, answeredBy: response))

        XCTAssertEqual(next.request.url.host, "www.example.com")
        XCTAssertEqual(next.request.value(forHTTPHeaderField: "Cookie"), "session=s1")
    }

    /// RFC 6265 §5.3: a cookie the 3xx deletes (`Max-Age=0`, an `Expires` in the past) leaves the next hop's
    /// header; one whose path ends in `/` goes to that very path; a cookie with `Max-Age` counts as set.
    func testACookieTheRedirectDeletesLeavesTheNextHopAndPathsKeepTheirSlash() throws {
        let withCookies = request(headers: ["Cookie": "sid=abc; theme=dark"])
        for deleting in ["sid=x; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=/", "sid=; Max-Age=0; Path=/"] {
            let next = try XCTUnwrap(
                RedirectRule.next(
                    after: withCookies, answeredBy: redirect(302, to: "/home", headers: ["Set-Cookie": deleting])))
            XCTAssertEqual(next.request.value(forHTTPHeaderField: "Cookie"), "theme=dark", deleting)
        }
        let onlyCookie = request(headers: ["Cookie": "sid=abc"])
        let emptied = try XCTUnwrap(
            RedirectRule.next(
                after: onlyCookie, answeredBy: redirect(302, to: "/home", headers: ["Set-Cookie": "sid=; Max-Age=0"])))
        XCTAssertNil(emptied.request.value(forHTTPHeaderField: "Cookie"))

        let slashed = try XCTUnwrap(
            RedirectRule.next(
                after: request(),
                answeredBy: redirect(302, to: "/api/", headers: ["Set-Cookie": "k=1; Path=/api/; Max-Age=60"])))
        XCTAssertEqual(slashed.request.value(forHTTPHeaderField: "Cookie"), "k=1")
    }

    /// The cookies of an exchange's redirects are kept apart from the request's own header: each hop gets those that
    /// apply to its URL, a later cookie of the same name, domain and path replaces an earlier one, and a deleted one
    /// takes its name out of the caller's header only where it applies.
    func testRedirectCookiesApplyHopByHop() throws {
        func answer(_ hop: ConnectRequest, to location: String, setting cookies: String) -> ConnectResponse {
            ConnectResponse(
                request: ConnectRequest(url: hop.url), statusCode: 302,
                headers: ["Location": location, "Set-Cookie": cookies])!
        }
        var cookies = RedirectCookies()
        let first = request(headers: ["Cookie": "mine=0"])

        let step = try XCTUnwrap(
            RedirectRule.next(
                after: first, answeredBy: answer(first, to: "/app/step", setting: "scoped=1; Path=/app"),
                cookies: &cookies))
        XCTAssertEqual(step.request.value(forHTTPHeaderField: "Cookie"), "mine=0", "the hop keeps its own header")
        XCTAssertEqual(cookies.applied(to: step.request).value(forHTTPHeaderField: "Cookie"), "mine=0; scoped=1")

        let deleting = answer(step.request, to: "/public", setting: "mine=; Max-Age=0; Path=/app")
        let open = try XCTUnwrap(RedirectRule.next(after: step.request, answeredBy: deleting, cookies: &cookies))
        XCTAssertEqual(cookies.applied(to: open.request).value(forHTTPHeaderField: "Cookie"), "mine=0")

        let replacing = answer(open.request, to: "/app/end", setting: "scoped=2; Path=/app")
        let end = try XCTUnwrap(RedirectRule.next(after: open.request, answeredBy: replacing, cookies: &cookies))
        XCTAssertEqual(cookies.applied(to: end.request).value(forHTTPHeaderField: "Cookie"), "scoped=2")
        // The replacement keeps the place of the one it replaced (RFC 6265 §5.3, step 11.3)
        XCTAssertEqual(cookies.cookies.map(\.name), ["scoped", "mine"])
    }

    /// RFC 6265bis §5.7, step 16: a cookie set over plain http neither replaces nor deletes a `Secure` one of the
    /// same name whose domain and path it covers. A chain https → http → https where the http hop answered
    /// `sid=evil` (or `Max-Age=0`) sent the attacker's value (or no session) back to the https origin.
    func testACookieFromPlainHTTPNeitherReplacesNorDeletesASecureOne() throws {
        func answer(_ hop: ConnectRequest, to location: String, setting cookies: [String]) -> ConnectResponse {
            let fields = HeaderFields(
                [HeaderField(name: .location, value: location)]
                    + cookies.map { HeaderField(name: .setCookie, value: $0) })
            return ConnectResponse(request: hop, head: ResponseHead(status: 302, headerFields: fields))!
        }
        var cookies = RedirectCookies()
        let first = request()
        let login = answer(first, to: "http://api.example.com/plain", setting: ["sid=good; Secure; Path=/"])
        let plain = try XCTUnwrap(RedirectRule.next(after: first, answeredBy: login, cookies: &cookies))

        let tossing = answer(
            plain.request, to: "https://api.example.com/back",
            setting: ["sid=evil; Path=/", "sid=; Max-Age=0; Path=/app", "theme=dark; Path=/"])
        let back = try XCTUnwrap(RedirectRule.next(after: plain.request, answeredBy: tossing, cookies: &cookies))

        XCTAssertEqual(cookies.applied(to: back.request).value(forHTTPHeaderField: "Cookie"), "sid=good; theme=dark")
        // Over https, the same name may be replaced.
        let renewing = answer(back.request, to: "/end", setting: ["sid=renewed; Path=/"])
        let end = try XCTUnwrap(RedirectRule.next(after: back.request, answeredBy: renewing, cookies: &cookies))
        // It keeps the replaced one's place (RFC 6265 §5.3, step 11.3): set first, it goes first
        XCTAssertEqual(cookies.applied(to: end.request).value(forHTTPHeaderField: "Cookie"), "sid=renewed; theme=dark")
    }

    /// A cookie set over plain http leaves alone a `Secure` one of the transport's storage, not only one the chain
    /// set: it would go in the next hop's `Cookie` header, ahead of the stored one of its name.
    func testACookieFromPlainHTTPLeavesAStoredSecureOneAlone() throws {
        let stored = try XCTUnwrap(
            HTTPCookie(properties: [
                .name: "sid", .value: "good", .domain: "api.example.com", .path: "/", .secure: "TRUE",
            ]))
        var cookies = RedirectCookies(stored: { [stored] })
        let first = ConnectRequest(method: .get, url: try XCTUnwrap(URL(string: "http://api.example.com/plain")))
        let fields = HeaderFields([
            HeaderField(name: .location, value: "https://api.example.com/back"),
            HeaderField(name: .setCookie, value: "sid=evil; Path=/"),
            HeaderField(name: .setCookie, value: "theme=dark; Path=/"),
        ])
        let tossing = try XCTUnwrap(
            ConnectResponse(request: first, head: ResponseHead(status: 302, headerFields: fields)))
        let back = try XCTUnwrap(RedirectRule.next(after: first, answeredBy: tossing, cookies: &cookies))
        XCTAssertEqual(cookies.applied(to: back.request).value(forHTTPHeaderField: "Cookie"), "theme=dark")
        // Over https, a stored Secure cookie's name may be set again, as the storage would let it.
        let renewing = try XCTUnwrap(
            ConnectResponse(
                request: back.request,
                head: ResponseHead(
                    status: 302,
                    headerFields: HeaderFields([
                        HeaderField(name: .location, value: "/end"), HeaderField(name: .setCookie, value: "sid=new"),
                    ]))))
        let end = try XCTUnwrap(RedirectRule.next(after: back.request, answeredBy: renewing, cookies: &cookies))
        XCTAssertEqual(cookies.applied(to: end.request).value(forHTTPHeaderField: "Cookie"), "theme=dark; sid=new")
    }

    /// RFC 6265 §5.4: a redirect's cookies go in the order the first request's go, the longer paths first, then the
    /// older first; a cookie that replaces another keeps its place (§5.3, step 11.3), and cookies of one name but
    /// other paths are each sent. They were appended as they were set, a replacement last, one per name.
    func testRedirectCookiesGoLongerPathsFirstThenOldestFirst() throws {
        func answer(_ hop: ConnectRequest, to location: String, setting cookies: [String]) -> ConnectResponse {
            let fields = HeaderFields(
                [HeaderField(name: .location, value: location)]
                    + cookies.map { HeaderField(name: .setCookie, value: $0) })
            return ConnectResponse(request: hop, head: ResponseHead(status: 302, headerFields: fields))!
        }
        var cookies = RedirectCookies()
        let first = request(headers: ["Cookie": "mine=0"])
        let setting = answer(
            first, to: "/app/x/step",
            setting: ["a=1; Path=/", "k=1; Path=/", "b=1; Path=/", "deep=1; Path=/app/x", "k=2; Path=/app"])
        let step = try XCTUnwrap(RedirectRule.next(after: first, answeredBy: setting, cookies: &cookies))
        XCTAssertEqual(
            cookies.applied(to: step.request).value(forHTTPHeaderField: "Cookie"),
            "mine=0; deep=1; k=2; a=1; k=1; b=1")

        let replacing = answer(step.request, to: "/end", setting: ["a=2; Path=/"])
        let end = try XCTUnwrap(RedirectRule.next(after: step.request, answeredBy: replacing, cookies: &cookies))
        XCTAssertEqual(cookies.applied(to: end.request).value(forHTTPHeaderField: "Cookie"), "mine=0; a=2; k=1; b=1")
    }

    /// RFC 6265 §6.1's minimums as the bound on what one exchange's redirects keep: 50 cookies per domain and 3000 in
    /// all. A server that set 500 cookies on each of 20 redirects had every one sent on the hops after. Past a limit a
    /// new cookie evicts the oldest (an expired one, kept to take its name out of the request's header, first), as a
    /// session's storage does: the newest were ignored, so a login's cookie set after many others never went on. A
    /// deletion does not count against its domain's bound.
    func testTheCookiesOneExchangesRedirectsKeepAreBoundedEvictingTheOldest() throws {
        func response(from url: URL, setting cookies: [String]) -> ConnectResponse {
            let fields = HeaderFields(
                [HeaderField(name: .location, value: "/next")]
                    + cookies.map { HeaderField(name: .setCookie, value: $0) })
            return ConnectResponse(
                request: ConnectRequest(url: url), head: ResponseHead(status: 302, headerFields: fields))!
        }
        func sent(_ cookies: RedirectCookies, to url: URL = URL(string: "https://api.example.com/next")!) -> [String] {
            CookieRules.pairs(of: cookies.applied(to: ConnectRequest(url: url)).value(forHTTPHeaderField: "Cookie"))
                .map { "\($0.name)=\($0.value)" }
        }
        var cookies = RedirectCookies()
        cookies.take(setBy: response(from: origin, setting: (0..<60).map { "c\($0)=1; Path=/" }))
        XCTAssertEqual(sent(cookies), (10..<60).map { "c\($0)=1" }, "the last 50 of one domain")

        cookies.take(setBy: response(from: origin, setting: ["c10=2; Path=/", "c11=; Max-Age=0; Path=/", "late=1"]))
        XCTAssertEqual(
            sent(cookies), ["c10=2"] + (12..<60).map { "c\($0)=1" } + ["late=1"],
            "a kept cookie is replaced and deleted; the deletion leaves room for a new one")

        // Another domain (the parent's domain cookies) has 50 of its own.
        cookies.take(setBy: response(from: origin, setting: (0..<60).map { "d\($0)=1; Domain=example.com; Path=/" }))
        XCTAssertEqual(sent(cookies).count, 50 + 50)

        // 3000 in all, whatever the domains: 70 hosts of 50 each evict the deletion, then the oldest.
        for host in 0..<70 {
            let url = URL(string: "https://h\(host).example.org/")!
            cookies.take(setBy: response(from: url, setting: (0..<50).map { "e\($0)=1; Path=/" }))
        }
        XCTAssertEqual(cookies.cookies.count, 3000)
        XCTAssertEqual(sent(cookies, to: URL(string: "https://h69.example.org/")!).count, 50, "the newest kept")
        XCTAssertEqual(sent(cookies, to: URL(string: "https://h10.example.org/")!).count, 50)
        XCTAssertEqual(sent(cookies, to: URL(string: "https://h9.example.org/")!), [], "the oldest evicted")
        XCTAssertEqual(sent(cookies), [], "the oldest evicted")
    }

    /// A request that handles no cookies (`httpShouldHandleCookies = false`) gets none from a redirect either.
    func testARequestThatHandlesNoCookiesGetsNoneFromARedirect() throws {
        var plain = URLRequest(url: origin)
        plain.httpShouldHandleCookies = false
        let next = try XCTUnwrap(
            RedirectRule.next(
                after: ConnectRequest(plain),
                answeredBy: redirect(302, to: "/home", headers: ["Set-Cookie": "session=abc; Path=/"])))
        XCTAssertNil(next.request.value(forHTTPHeaderField: "Cookie"))
    }

    /// An engine reports repeated `Set-Cookie` fields one by one (AsyncHTTPClient does): each cookie reaches the
    /// next hop, read from the core's head without a Foundation response.
    func testCookiesOfRepeatedSetCookieFieldsAllGoOnTheNextHop() throws {
        let head = ResponseHead(
            status: 302,
            headerFields: [
                "Location": "/home", "Set-Cookie": "a=1; Path=/",
                "Set-Cookie": "b=2; Expires=Sun, 06 Nov 2077 08:49:37 GMT",
            ])
        let response = try XCTUnwrap(ConnectResponse(request: request(), head: head))

        let next = try XCTUnwrap(RedirectRule.next(after: request(), answeredBy: response))

        XCTAssertEqual(next.request.value(forHTTPHeaderField: "Cookie"), "a=1; b=2")
        guard case .parts(let parts) = response.storedHead else { return XCTFail("made Foundation's response") }
        XCTAssertFalse(parts.isMadeForTesting)
    }

    /// A 303, or a 301/302 of a POST, sends no body: a body from a stream does not stop it, and the headers that
    /// described that body go with it (a GET announcing a length would leave the server waiting for it).
    func testARedirectThatDropsTheBodyIsFollowedForABodyFromAStream() throws {
        for status in [301, 302, 303] {
            var streamed = request("POST", headers: ["Content-Length": "1", "Content-Type": "text/plain"])
            streamed.httpBodyStream = InputStream(data: Data("x".utf8))

            let next = try XCTUnwrap(RedirectRule.next(after: streamed, answeredBy: redirect(status, to: "/b")))

            XCTAssertEqual(next.request.httpMethod, "GET", "\(status)")
            XCTAssertNil(next.request.httpBodyStream, "\(status)")
            XCTAssertNil(next.request.value(forHTTPHeaderField: "Content-Length"), "\(status)")
            XCTAssertNil(next.request.value(forHTTPHeaderField: "Content-Type"), "\(status)")
            XCTAssertFalse(next.keepsBody)
        }
        var put = request("PUT")
        put.httpBodyStream = InputStream(data: Data("x".utf8))
        XCTAssertNil(RedirectRule.next(after: put, answeredBy: redirect(302, to: "/b")), "a 302 keeps a PUT's body")
    }

    /// A cookie is taken from a redirect only for the host that set it or a domain that host is in: another site's
    /// domain, a top-level domain or part of an IP address is refused (RFC 6265, 5.3).
    func testACookieForADomainTheRedirectIsNotInIsNotTaken() throws {
        func cookie(_ domain: String, to location: String) throws -> String? {
            let response = redirect(302, to: location, headers: ["Set-Cookie": "session=x; Path=/; Domain=\(domain)"])
            return try XCTUnwrap(RedirectRule.next(after: request(), answeredBy: response))
                .request.value(forHTTPHeaderField: "Cookie")
        }

        XCTAssertNil(try cookie("bank.example.org", to: "https://bank.example.org/"))
        XCTAssertNil(try cookie("com", to: "https://bank.com/"))
        XCTAssertEqual(try cookie("example.com", to: "https://www.example.com/"), "session=x")
        XCTAssertEqual(try cookie("api.example.com", to: "/home"), "session=x")
    }

    /// A cookie's path covers the path itself and those below it, not every path that starts with its letters.
    func testACookiesPathCoversOnlyThePathsBelowIt() throws {
        func cookie(to location: String) throws -> String? {
            let response = redirect(302, to: location, headers: ["Set-Cookie": "a=1; Path=/api"])
            return try XCTUnwrap(RedirectRule.next(after: request(), answeredBy: response))
                .request.value(forHTTPHeaderField: "Cookie")
        }

        XCTAssertEqual(try cookie(to: "/api"), "a=1")
        XCTAssertEqual(try cookie(to: "/api/items"), "a=1")
        XCTAssertNil(try cookie(to: "/apiary"))
        XCTAssertTrue(CookieRules.pathMatches("/docs/x", "/docs/"))
        XCTAssertFalse(CookieRules.pathMatches("/", "/api"))
    }

    /// A `Location` without a fragment keeps the request's (RFC 9110, 10.2.2); one with its own keeps its own.
    func testTheRequestsFragmentFollowsARedirectThatNamesNone() throws {
        let marked = ConnectRequest(url: URL(string: "https://api.example.com/start#section%202")!)

        let kept = try XCTUnwrap(RedirectRule.next(after: marked, answeredBy: redirect(302, to: "/landing")))
        let own = try XCTUnwrap(RedirectRule.next(after: marked, answeredBy: redirect(302, to: "/landing#top")))

        XCTAssertEqual(kept.request.url.absoluteString, "https://api.example.com/landing#section%202")
        XCTAssertEqual(own.request.url.absoluteString, "https://api.example.com/landing#top")
    }

    /// A host written with escapes is the host it names, compared as an engine is sent to it: `localhos%74` is
    /// `localhost`, `b%C3%BCcher` is its punycode name; an escaped other name is another origin, and escapes that
    /// make no host name share no origin and name no host a redirect could go to.
    func testAnEscapedHostIsComparedAsTheNameItStandsFor() throws {
        func url(_ text: String) throws -> URL { try XCTUnwrap(URL(string: text)) }
        let sameOrigins = [
            ("http://localhos%74:8080/a", "http://localhost:8080/b"),
            ("https://%41PI.example/a", "https://api.example/"),
            ("https://b%C3%BCcher.example/a", "https://xn--bcher-kva.example/b"),
        ]
        for (escaped, plain) in sameOrigins {
            XCTAssertTrue(try url(escaped).hasSameOrigin(as: url(plain)), escaped)
            XCTAssertTrue(try url(plain).hasSameOrigin(as: url(escaped)), escaped)
            XCTAssertFalse(RedirectRules.namesNoHost(ConnectRequest(url: try url(escaped))), escaped)
        }
        let otherOrigins = [
            ("http://127.0.0.%31:8080/a", "http://localhost:8080/"),
            ("http://localhost%2Eevil.example/", "http://localhost/"),
            ("http://localhos%74%2F:8080/", "http://localhost:8080/"),
            ("http://localhos%74%00/", "http://localhost/"),
        ]
        for (escaped, plain) in otherOrigins {
            XCTAssertFalse(try url(escaped).hasSameOrigin(as: url(plain)), escaped)
            XCTAssertFalse(try url(plain).hasSameOrigin(as: url(escaped)), escaped)
        }
        for noName in ["http://localhos%74%2F:8080/", "http://a%40b.example/", "http://%FF.example/"] {
            XCTAssertFalse(try url(noName).hasSameOrigin(as: url(noName)), noName)
            XCTAssertTrue(RedirectRules.namesNoHost(ConnectRequest(url: try url(noName))), noName)
        }
    }
}
