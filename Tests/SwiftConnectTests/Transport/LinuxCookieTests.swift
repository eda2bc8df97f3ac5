import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking

    /// Linux: `URLSessionTransport` keeps and sends its session's cookies itself, by RFC 6265 (`SessionCookies`),
    /// where FoundationNetworking sent a `Secure` cookie over plain http, ignored `Max-Age` and `Path` when sending,
    /// defaulted a cookie's path to `/`, and replaced the request's own `Cookie` header. Through a real session to
    /// LocalServer, in the shared storage (every cookie named for the test and removed after it).
    final class LinuxCookieTests: XCTestCase {
        private var server: LocalServer!
        private let prefix = "t\(UInt32.random(in: 0...UInt32.max))"

        override func setUpWithError() throws {
            server = try LocalServer.started()
            server.route("GET", "/echo") { request in .text(request.header("Cookie") ?? "") }
            server.route("GET", "/dir/echo") { request in .text(request.header("Cookie") ?? "") }
        }

        override func tearDown() {
            server?.stop()
            let storage = HTTPCookieStorage.shared
            storage.cookies?.filter { $0.name.hasPrefix(prefix) }.forEach(storage.deleteCookie)
        }

        private func name(_ suffix: String) -> String { prefix + suffix }

        /// Stores a cookie for the server's host, as an earlier response of another origin may have.
        private func store(_ suffix: String, secure: Bool = false, path: String = "/") {
            var properties: [HTTPCookiePropertyKey: Any] = [
                .name: name(suffix), .value: "1", .domain: server.baseURL.host ?? "127.0.0.1", .path: path,
            ]
            if secure { properties[.secure] = "TRUE" }
            HTTPCookieStorage.shared.setCookie(HTTPCookie(properties: properties)!)
        }

        /// The test's cookies the server saw for `GET path` with `headers` (the shared storage may hold others for
        /// this host, from other tests), in order.
        private func sent(_ path: String, headers: [HTTPHeader] = []) throws -> [String] {
            let connect = Connect(transport: URLSessionTransport(), retryPolicy: nil)
            let data = try connect.request(Route(path, baseURL: server.baseURL, headers: headers, timeout: 10))
                .wait(timeout: 20)
            return String(decoding: data, as: UTF8.self).split(separator: ";")
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix(prefix) }
        }

        private func stored(_ suffix: String) -> HTTPCookie? {
            HTTPCookieStorage.shared.cookies?.first { $0.name == name(suffix) }
        }

        /// Stores the `Secure` cookie `suffix` (named for the test) of `a.example.com`, path `/`, as an https
        /// response of that host set it; returns its name.
        private func storeSecure(_ suffix: String, value: String = "1") throws -> String {
            let secure: [HTTPCookiePropertyKey: Any] = [
                .name: name(suffix), .value: value, .domain: "a.example.com", .path: "/", .secure: "TRUE",
            ]
            HTTPCookieStorage.shared.setCookie(try XCTUnwrap(HTTPCookie(properties: secure)))
            return name(suffix)
        }

        /// Has `cookies` keep what a `200` from `url` with `Set-Cookie: setCookie` sets.
        private func keep(_ setCookie: String, from url: String, in cookies: SessionCookies) throws {
            let response = try XCTUnwrap(
                HTTPURLResponse(
                    url: try XCTUnwrap(URL(string: url)), statusCode: 200, httpVersion: nil,
                    headerFields: ["Set-Cookie": setCookie]))
            cookies.keep(from: response, of: nil)
        }

        /// A `Secure` cookie goes over plain http to a loopback host, a secure context as browsers treat it (a
        /// developer's local server), which may set one too; no other plain-http host gets one or sets one (the
        /// session's part asked directly: the test reaches no host but loopback).
        func testASecureCookieGoesOverPlainHTTPOnlyToALoopbackHost() throws {
            store("secure", secure: true)
            store("plain")
            XCTAssertEqual(Set(try sent("/echo")), ["\(name("plain"))=1", "\(name("secure"))=1"])
            let set = name("set")
            server.route("GET", "/set") { _ in
                LocalServer.Response(status: 200, headers: [("Set-Cookie", "\(set)=1; Secure; Path=/")])
            }
            _ = try sent("/set")
            XCTAssertEqual(stored("set")?.isSecure, true, "the loopback server's Secure cookie was refused")

            let cookies = SessionCookies(storage: .shared, accepts: true, sends: true)
            let remote: [HTTPCookiePropertyKey: Any] = [
                .name: name("remote"), .value: "1", .domain: "a.example.com", .path: "/", .secure: "TRUE",
            ]
            HTTPCookieStorage.shared.setCookie(try XCTUnwrap(HTTPCookie(properties: remote)))
            let header = { (url: String) in
                cookies.adding(to: URLRequest(url: URL(string: url)!)).value(forHTTPHeaderField: "Cookie") ?? ""
            }
            XCTAssertTrue(header("https://a.example.com/").contains(name("remote")))
            XCTAssertFalse(header("http://a.example.com/").contains(name("remote")), "sent over plain http")
            let response = try XCTUnwrap(
                HTTPURLResponse(
                    url: try XCTUnwrap(URL(string: "http://a.example.com/set")), statusCode: 200, httpVersion: nil,
                    headerFields: ["Set-Cookie": "\(name("taken"))=1; Secure; Path=/"]))
            cookies.keep(from: response, of: nil)
            XCTAssertNil(stored("taken"), "taken from plain http")
        }

        func testAPathScopedCookieGoesOnlyToItsPathAndBelow() throws {
            store("dir", path: "/dir")
            XCTAssertEqual(try sent("/echo"), [])
            XCTAssertEqual(try sent("/dir/echo"), ["\(name("dir"))=1"])
        }

        func testTheRequestsOwnCookieHeaderIsKeptBesideTheStoredCookies() throws {
            store("stored")
            let own = HTTPHeader(name: "Cookie", value: "\(name("own"))=2")
            XCTAssertEqual(try sent("/echo", headers: [own]), ["\(name("own"))=2", "\(name("stored"))=1"])
        }

        /// RFC 6265 §5.4: the longer path first, then the older cookie, though the shared storage lists them in its
        /// dictionary's order.
        func testCookiesOfEqualPathLengthAreSentOldestFirst() throws {
            let order = ["b", "e", "a", "d", "c", "f"]
            var last = 0.0
            for suffix in order {
                // Each stored after the clock has moved on from the one before, so no two were made alike
                while Date().timeIntervalSinceReferenceDate <= last {}
                store(suffix)
                last = try XCTUnwrap(stored(suffix).flatMap(CookieRules.creationTime(of:)))
            }
            store("deep", path: "/dir")
            XCTAssertEqual(try sent("/dir/echo"), (["deep"] + order).map { "\(name($0))=1" })
        }

        /// RFC 6265 §5.3, step 11.3: a cookie that replaces a stored one (same name, domain and path) keeps the old
        /// one's creation time, and so its place among cookies of equal path length (the oldest first, §5.4).
        func testAReplacingCookieKeepsTheCreationTimeOfTheOneItReplaces() throws {
            let first = name("first")
            store("first")
            let created = try XCTUnwrap(stored("first").flatMap(CookieRules.creationTime(of:)))
            // The second made after the clock has moved on from the first, the replacement after the second
            while Date().timeIntervalSinceReferenceDate <= created {}
            store("second")
            let second = try XCTUnwrap(stored("second").flatMap(CookieRules.creationTime(of:)))
            while Date().timeIntervalSinceReferenceDate <= second {}
            server.route("GET", "/renew") { _ in
                LocalServer.Response(status: 200, headers: [("Set-Cookie", "\(first)=2; Path=/")])
            }
            _ = try sent("/renew")
            let renewed = try XCTUnwrap(stored("first"))
            XCTAssertEqual(renewed.value, "2")
            XCTAssertEqual(CookieRules.creationTime(of: renewed), created)
            XCTAssertEqual(try sent("/echo"), ["\(first)=2", "\(name("second"))=1"])
            // Replaced again, it still keeps the first one's time
            server.route("GET", "/renew") { _ in
                LocalServer.Response(status: 200, headers: [("Set-Cookie", "\(first)=3; Path=/")])
            }
            _ = try sent("/renew")
            XCTAssertEqual(stored("first").flatMap(CookieRules.creationTime(of:)), created)
            XCTAssertEqual(try sent("/echo"), ["\(first)=3", "\(name("second"))=1"])
        }

        /// A response from a host written another way (`127.1` for `127.0.0.1`, `[0:0::1]` for `[::1]`) sets its
        /// cookie for the host it is (`ComparableHost`), and the cookie is stored: the storage's
        /// `setCookies(_:for:mainDocumentURL:)` compared it with the URL's host as written and dropped it without a
        /// word. (FoundationNetworking cannot send to `127.1`: the session's part is asked directly.)
        func testACookieFromAHostWrittenAnotherWayIsStoredForTheHostItIs() throws {
            let cookies = SessionCookies(storage: .shared, accepts: true, sends: true)
            for (url, host) in [("http://127.1:8/set", "127.0.0.1"), ("http://[0:0::1]:8/set", "[::1]")] {
                let spelled = name("spelled")
                let response = try XCTUnwrap(
                    HTTPURLResponse(
                        url: try XCTUnwrap(URL(string: url)), statusCode: 200, httpVersion: nil,
                        headerFields: ["Set-Cookie": "\(spelled)=1; Path=/"]))
                cookies.keep(from: response, of: nil)
                XCTAssertNotNil(stored("spelled"), url)
                let request = cookies.adding(to: URLRequest(url: try XCTUnwrap(URL(string: "http://\(host):8/echo"))))
                let sent = (request.value(forHTTPHeaderField: "Cookie") ?? "").split(separator: ";")
                    .map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix(prefix) }
                XCTAssertEqual(sent, ["\(spelled)=1"], url)
                stored("spelled").map(HTTPCookieStorage.shared.deleteCookie)
            }
        }

        func testMaxAgeGivesAnExpiryAndMaxAgeZeroDeletes() throws {
            let kept = name("kept")
            server.route("GET", "/set") { _ in
                LocalServer.Response(status: 200, headers: [("Set-Cookie", "\(kept)=1; Max-Age=600; Path=/")])
            }
            server.route("GET", "/delete") { _ in
                LocalServer.Response(status: 200, headers: [("Set-Cookie", "\(kept)=; Max-Age=0; Path=/")])
            }
            // When a response sets a cookie for 600 seconds, then it is stored with that expiry and sent
            let before = Date()
            _ = try sent("/set")
            let expiry = try XCTUnwrap(stored("kept")?.expiresDate, "Max-Age gave no expiry")
            XCTAssertEqual(expiry.timeIntervalSince(before), 600, accuracy: 30)
            XCTAssertEqual(try sent("/echo"), ["\(kept)=1"])
            // When one deletes it with Max-Age=0, then it is gone
            _ = try sent("/delete")
            XCTAssertNil(stored("kept"))
            XCTAssertEqual(try sent("/echo"), [])
        }

        func testACookieWithoutAPathIsForTheDirectoryThatSetIt() throws {
            let scoped = name("scoped")
            server.route("GET", "/dir/set") { _ in
                LocalServer.Response(status: 200, headers: [("Set-Cookie", "\(scoped)=1")])
            }
            _ = try sent("/dir/set")
            XCTAssertEqual(stored("scoped")?.path, "/dir")
            XCTAssertEqual(try sent("/echo"), [])
            XCTAssertEqual(try sent("/dir/echo"), ["\(scoped)=1"])
        }

        /// A request whose `URLRequest` says `httpShouldHandleCookies = false` gets no stored cookie, on the plain
        /// path and on the core's exchange (a size limit sends it there), where each hop's `URLRequest` is made anew
        /// and said `true`.
        func testARequestThatHandlesNoCookiesGetsNoneOnEveryPath() throws {
            store("stored")
            var request = URLRequest(url: server.baseURL.appendingPathComponent("echo"))
            request.httpShouldHandleCookies = false
            let transport = URLSessionTransport()
            var limited = TransferOptions()
            limited.maxResponseBytes = 1 << 20
            for transfer in [TransferOptions(), limited] {
                let response = try transport.send(try ConnectRequest(request), transfer: transfer).wait(timeout: 20)
                XCTAssertFalse(
                    String(decoding: response.data, as: UTF8.self).contains(name("stored")),
                    "plain: \(transfer.isPlain)")
            }
            request.httpShouldHandleCookies = true
            let sent = try transport.send(try ConnectRequest(request), transfer: limited).wait(timeout: 20)
            XCTAssertTrue(String(decoding: sent.data, as: UTF8.self).contains(name("stored")))
        }

        /// "Whether cookies will be sent with and set for this request": a request that handles no cookies keeps
        /// none its response sets, on the plain path and on the core's exchange alike (both kept them).
        func testARequestThatHandlesNoCookiesKeepsNoneItsResponseSets() throws {
            let cookie = name("unwanted")
            server.route("GET", "/set") { _ in
                LocalServer.Response(status: 200, headers: [("Set-Cookie", "\(cookie)=1; Path=/")])
            }
            var request = URLRequest(url: server.baseURL.appendingPathComponent("set"))
            request.httpShouldHandleCookies = false
            let transport = URLSessionTransport()
            var limited = TransferOptions()
            limited.maxResponseBytes = 1 << 20
            for transfer in [TransferOptions(), limited] {
                _ = try transport.send(try ConnectRequest(request), transfer: transfer).wait(timeout: 20)
                XCTAssertNil(stored("unwanted"), "plain: \(transfer.isPlain)")
            }
            XCTAssertEqual(try sent("/echo"), [])
            request.httpShouldHandleCookies = true
            _ = try transport.send(try ConnectRequest(request), transfer: TransferOptions()).wait(timeout: 20)
            XCTAssertNotNil(stored("unwanted"), "a request that handles cookies keeps them")
        }

        /// RFC 6265bis §5.7, step 16: a plain-http response can neither replace nor delete (`Max-Age=0`) a `Secure`
        /// cookie of the same name, which only a secure origin may set; a cookie of another name it sets is kept. The
        /// session's part asked directly, for a host that is not loopback (the test's server is: a secure origin for
        /// cookies, which may replace them).
        func testAPlainHTTPResponseNeitherReplacesNorDeletesASecureCookie() throws {
            let sid = try storeSecure("sid")
            let other = name("other")
            let cookies = SessionCookies(storage: .shared, accepts: true, sends: true)
            for setCookie in ["\(sid)=evil; Path=/, \(other)=1; Path=/", "\(sid)=; Max-Age=0; Path=/"] {
                try keep(setCookie, from: "http://a.example.com/toss", in: cookies)
            }
            let kept = try XCTUnwrap(stored("sid"), "a plain-http response deleted the Secure cookie")
            XCTAssertTrue(kept.isSecure)
            XCTAssertEqual(kept.value, "1")
            XCTAssertEqual(stored("other")?.value, "1")
        }

        /// FoundationNetworking's storage keys a cookie by domain, path and name run together: `sid` of path `/` and
        /// `d` of path `/si` are one key there. A plain-http response setting (or deleting) the second replaced the
        /// stored `Secure` `sid`, and a later `sid=evil` passed, no `Secure` one left to guard.
        func testAPlainHTTPCookieWhoseStorageKeyIsASecureOnesLeavesItAlone() throws {
            let sid = try storeSecure("sid")
            defer {
                let storage = HTTPCookieStorage.shared
                storage.cookies?.filter { $0.name == "d" && $0.domain == "a.example.com" }.forEach(storage.deleteCookie)
            }
            let cookies = SessionCookies(storage: .shared, accepts: true, sends: true)
            // `<prefix>si` + `d` is `<prefix>sid`: the path ends where the name's start would.
            let collider = String(sid.dropLast())
            let setCookies = [
                "d=x; Path=/\(collider)", "d=; Max-Age=0; Path=/\(collider)", "\(sid)=evil; Path=/",
            ]
            for (index, setCookie) in setCookies.enumerated() {
                try keep(setCookie, from: "http://a.example.com/\(collider)/toss\(index)", in: cookies)
            }
            let kept = try XCTUnwrap(stored("sid"), "a plain-http response deleted the Secure cookie")
            XCTAssertTrue(kept.isSecure)
            XCTAssertEqual(kept.value, "1")
            XCTAssertNil(HTTPCookieStorage.shared.cookies?.first { $0.name == "d" && $0.domain == "a.example.com" })
        }

        /// A redirect answered over plain http cannot replace a stored `Secure` cookie on the next hop either: the
        /// storage refused its cookie, but the call's redirect cookies kept it and wrote it into the next hop's
        /// `Cookie` header, where the storage's cookie of its name gave way to it (counted as the caller's own).
        func testARedirectOverPlainHTTPDoesNotReplaceAStoredSecureCookieOnTheNextHop() throws {
            let sid = try storeSecure("sid", value: "good")
            let configuration = URLSessionConfiguration.default
            configuration.httpCookieStorage = .shared
            var jar = RedirectCookieConsent(configuration).redirectCookies()
            let first = ConnectRequest(method: .get, url: try XCTUnwrap(URL(string: "http://a.example.com/start")))
            let fields = HeaderFields([
                HeaderField(name: .location, value: "https://a.example.com/account"),
                HeaderField(name: .setCookie, value: "\(sid)=evil; Path=/"),
                HeaderField(name: .setCookie, value: "\(name("theme"))=dark; Path=/"),
            ])
            let redirect = try XCTUnwrap(
                ConnectResponse(request: first, head: ResponseHead(status: 302, headerFields: fields)))
            let next = try XCTUnwrap(RedirectRule.next(after: first, answeredBy: redirect, cookies: &jar))
            let sent = SessionCookies(storage: .shared, accepts: true, sends: true)
                .adding(to: jar.applied(to: next.request).urlRequest)
            let header = sent.value(forHTTPHeaderField: "Cookie") ?? ""
            let pairs = header.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            XCTAssertEqual(pairs.filter { $0.hasPrefix(prefix) }.sorted(), ["\(sid)=good", "\(name("theme"))=dark"])
        }

        /// A cookie a redirect sets is stored before the redirect is followed: the next hop carries it, and the
        /// storage keeps it for later requests; one with a comma in its value (the storage's joined fields split
        /// again) keeps its whole value, and one over 4096 octets is not kept.
        func testARedirectsCookiesAreStoredBeforeTheNextHop() throws {
            let login = name("login")
            let comma = name("comma")
            let big = name("big")
            server.route("GET", "/login") { _ in
                LocalServer.Response(
                    status: 302,
                    headers: [
                        ("Location", "/echo"), ("Set-Cookie", "\(login)=1; Path=/"),
                        ("Set-Cookie", "\(comma)=a,b; Path=/"),
                        ("Set-Cookie", "\(big)=\(String(repeating: "x", count: 5000)); Path=/"),
                    ])
            }
            // Paths of one length: RFC 6265 §5.4 only asks (SHOULD) for the older first
            XCTAssertEqual(try sent("/login").sorted(), ["\(comma)=a,b", "\(login)=1"])
            XCTAssertEqual(stored("login")?.value, "1")
            XCTAssertEqual(stored("comma")?.value, "a,b")
            XCTAssertNil(stored("big"))
            XCTAssertEqual(try sent("/echo").sorted(), ["\(comma)=a,b", "\(login)=1"])
        }

        /// RFC 6265 §6.1: the session's storage keeps at most 50 cookies per domain. A server that set a new cookie
        /// on each of 55 calls had all 55 kept (and sent back on every request), and thousands grew the storage
        /// without bound; now each past the 50th evicts the least recently set of its domain.
        func testTheSessionKeepsAtMostFiftyCookiesPerDomainEvictingTheLeastRecentlySet() throws {
            let cookies = SessionCookies(storage: .shared, accepts: true, sends: true)
            let host = "bound-\(prefix).example"
            let url = try XCTUnwrap(URL(string: "http://\(host)/set"))
            let count = CookieRules.maxCookiesPerDomain + 5
            var last = 0.0
            for index in 0..<count {
                // Each set after the clock has moved on from the one before, so that their order is known
                while Date().timeIntervalSinceReferenceDate <= last {}
                let response = try XCTUnwrap(
                    HTTPURLResponse(
                        url: url, statusCode: 200, httpVersion: nil,
                        headerFields: ["Set-Cookie": "\(name("n\(index)"))=1; Path=/"]))
                cookies.keep(from: response, of: nil)
                last = try XCTUnwrap(stored("n\(index)").flatMap(CookieRules.creationTime(of:)), "n\(index)")
            }
            let kept = Set((HTTPCookieStorage.shared.cookies ?? []).filter { $0.domain == host }.map(\.name))
            XCTAssertEqual(kept.count, CookieRules.maxCookiesPerDomain)
            XCTAssertEqual(kept, Set((5..<count).map { name("n\($0)") }))
        }

        /// RFC 6265 §5.4 step 3 and §6.1: sending a cookie makes it the most recently used, and the storage evicts
        /// the least recently used first. A cookie sent on every request (a session's login) was evicted as the
        /// oldest set, ahead of 49 that were never sent.
        func testSendingACookieKeepsItFromEvictionAheadOfThoseNotSent() throws {
            let cookies = SessionCookies(storage: .shared, accepts: true, sends: true)
            let host = "access-\(prefix).example"
            func keep(_ field: String) throws {
                let url = try XCTUnwrap(URL(string: "http://\(host)/set"))
                let response = try XCTUnwrap(
                    HTTPURLResponse(url: url, statusCode: 200, httpVersion: nil, headerFields: ["Set-Cookie": field]))
                cookies.keep(from: response, of: nil)
            }
            var last = 0.0
            for index in 0..<CookieRules.maxCookiesPerDomain {
                // Each set after the clock has moved on from the one before, so that their order is known
                while Date().timeIntervalSinceReferenceDate <= last {}
                try keep("\(name("n\(index)"))=1; Path=\(index == 0 ? "/used" : "/other")")
                last = try XCTUnwrap(stored("n\(index)").flatMap(CookieRules.creationTime(of:)), "n\(index)")
            }
            while Date().timeIntervalSinceReferenceDate <= last {}
            // The oldest is sent (alone: the others are for another path), after all of them were set.
            let request = cookies.adding(to: URLRequest(url: try XCTUnwrap(URL(string: "http://\(host)/used/page"))))
            XCTAssertEqual(request.value(forHTTPHeaderField: "Cookie"), "\(name("n0"))=1")
            try keep("\(name("new"))=1; Path=/")
            XCTAssertNotNil(stored("n0"), "the cookie just sent is the most recently used")
            XCTAssertNil(stored("n1"), "the least recently used is evicted")
            XCTAssertNotNil(stored("new"))
        }

        /// An expired cookie in the storage (it expired after it was stored) is never sent, and is evicted before
        /// any cookie still alive when room is needed.
        func testAnExpiredCookieIsNeitherSentNorKeptAheadOfALiveOne() throws {
            let host = "expired-\(prefix).example"
            let now = Date()
            func cookie(_ suffix: String, expires: Date?) throws -> HTTPCookie {
                var properties: [HTTPCookiePropertyKey: Any] = [
                    .name: name(suffix), .value: "1", .domain: host, .path: "/",
                ]
                if let expires { properties[.expires] = expires }
                return try XCTUnwrap(HTTPCookie(properties: properties))
            }
            // Stored when alive, expired since (as seen from `later`).
            let later = now.addingTimeInterval(120)
            let stale = try cookie("stale", expires: now.addingTimeInterval(60))
            let live = try (0..<(CookieRules.maxCookiesPerDomain - 1)).map { try cookie("l\($0)", expires: nil) }
            let url = try XCTUnwrap(URL(string: "http://\(host)/"))
            XCTAssertNil(CookieRules.header(for: url, from: [stale], keeping: nil, now: later))
            let evicted = CookieRules.evictions(
                toStore: try cookie("new", expires: nil), in: live + [stale], now: later)
            XCTAssertEqual(evicted.map(\.name), [name("stale")])
        }

        func testACookieForAnAddressSuffixOrAnotherDomainIsNotKept() throws {
            let suffix = name("suffix")
            let other = name("other")
            server.route("GET", "/set") { _ in
                LocalServer.Response(
                    status: 200,
                    headers: [
                        ("Set-Cookie", "\(suffix)=1; Domain=0.0.1; Path=/"),
                        ("Set-Cookie", "\(other)=1; Domain=example.com; Path=/"),
                    ])
            }
            _ = try sent("/set")
            XCTAssertNil(stored("suffix"))
            XCTAssertNil(stored("other"))
        }
    }
#endif
