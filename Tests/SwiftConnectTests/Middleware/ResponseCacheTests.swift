import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The opt-in in-memory response cache: TTL, bypass, keys, byte bound with LRU, concurrency.
final class ResponseCacheTests: XCTestCase {
    private struct Item: Connector {
        var path: String
        var method: HTTPMethod = .get
        var rule: CacheRule? = CacheRule(timeToLive: 60)
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { path }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
        var options: RequestOptions { RequestOptions(cache: rule) }
    }

    private func makeClient(maxBytes: Int = 1_000_000, clock: ManualClock = ManualClock()) -> (
        Connect, FakeTransport, ResponseCache
    ) {
        let transport = FakeTransport()
        transport.stub(nil, "/a", with: .json(string: #"{"v":"a"}"#))
        transport.stub(nil, "/b", with: .json(string: #"{"v":"b"}"#))
        transport.stub(nil, "/c", with: .json(string: #"{"v":"c"}"#))
        transport.stub(nil, "/error", with: .status(500))
        let cache = ResponseCache(maxBytes: maxBytes, now: { clock.now })
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        return (connect, transport, cache)
    }

    /// A response served from the cache still ends a progress bar: one report of the whole body, as the network's
    /// last one read. It came from no report at all, leaving a bar at zero until the call completed.
    func testAHitReportsTheWholeBodyOnceAsTheNetworkDid() throws {
        let (connect, transport, _) = makeClient()
        var reports: [[TransferProgress]] = []
        for _ in 0..<2 {
            let log = Recorder<TransferProgress>()
            var options = RequestOptions(cache: CacheRule(timeToLive: 60))
            options.progress = { log.append($0) }
            XCTAssertEqual(
                try connect.request(Item(path: "/a"), options: options).wait(timeout: 5), Data(#"{"v":"a"}"#.utf8))
            reports.append(log.values)
        }
        XCTAssertEqual(transport.requests.count, 1, "the second call is a hit")
        XCTAssertEqual(reports[0].last?.downloadFraction, 1)
        XCTAssertEqual(reports[1], [reports[0].last].compactMap { $0 })
    }

    /// A hit's report reaches the handler on another thread than the caller's, as an engine's does: a handler that
    /// takes a lock its caller holds while it calls waited for itself.
    func testAHitReportsItsProgressOffTheCallersThread() throws {
        let (connect, transport, _) = makeClient()
        var options = RequestOptions(cache: CacheRule(timeToLive: 60))
        _ = try connect.request(Item(path: "/a"), options: options).wait(timeout: 5)
        let callerLock = NSLock()
        let reported = Recorder<Bool>()
        options.progress = { _ in
            // Taken and let go at once when free; held by the caller, it is not free on the caller's thread.
            let free = callerLock.lock(before: Date().addingTimeInterval(5))
            if free { callerLock.unlock() }
            reported.append(free)
        }
        // When: the hit is asked for while the caller holds the lock
        callerLock.lock()
        let call = connect.request(Item(path: "/a"), options: options)
        callerLock.unlock()
        // Then
        XCTAssertEqual(try call.wait(timeout: 10), Data(#"{"v":"a"}"#.utf8))
        XCTAssertEqual(transport.requests.count, 1, "the second call is a hit")
        XCTAssertEqual(reported.values, [true], "the handler waited for the lock its caller held")
    }

    /// One user's cached response is never served to another: requests with credentials are stored apart for
    /// each set of credentials, and removing a key removes every user's copy.
    /// A stored answer never makes a request the wire would refuse succeed: a field with CR/LF from the call's
    /// options fails as the request is built, one a middleware adds fails at the cache stage; nothing more is sent.
    func testARequestWithAFieldTheWireRefusesIsNotServedFromTheCache() throws {
        let transport = FakeTransport.answering(.json(string: #"{"n":1}"#))
        let injecting = AnyMiddleware { request, context, next in
            var request = request
            if context.options.headers.isEmpty { request.setValue("a\r\nX-Admin: 1", forHTTPHeaderField: "X-Tag") }
            return next(request)
        }
        let connect = Connect(
            transport: transport, middlewares: [injecting], retryPolicy: nil, responseCache: ResponseCache())
        let route = Route("/a", baseURL: URL(string: "https://api.example.com")!)
        let stored = RequestOptions(cache: CacheRule(timeToLive: 60), headers: [HTTPHeader(name: "X-Ok", value: "1")])
        _ = try connect.request(route, options: stored).wait(timeout: 5)
        XCTAssertEqual(transport.requests.count, 1)

        let fromOptions = RequestOptions(
            cache: CacheRule(timeToLive: 60), headers: [HTTPHeader(name: "X-Note", value: "a\r\nX-Admin: 1")])
        XCTAssertEqual(
            connectError(of: connect.request(route, options: fromOptions))?.invalidRequestReason,
            .invalidHeader(name: "X-Note"))
        let fromMiddleware = connectError(
            of: connect.request(route, options: RequestOptions(cache: CacheRule(timeToLive: 60))))
        XCTAssertEqual(fromMiddleware?.invalidRequestReason, .invalidHeader(name: "X-Tag"))
        XCTAssertEqual(transport.requests.count, 1, "nothing more was sent")
    }

    func testResponsesToRequestsWithCredentialsAreKeptApartPerCredential() throws {
        let transport = FakeTransport.answering(
            .handler { request in
                let user = request.value(forHTTPHeaderField: "Authorization") ?? "anonymous"
                let cookie = request.value(forHTTPHeaderField: "Cookie") ?? "-"
                return .success(
                    ConnectResponse(
                        request: request, statusCode: 200, headers: [:],
                        data: Data(#"{"user":"\#(user)","cookie":"\#(cookie)"}"#.utf8))!)
            })
        let cache = ResponseCache(maxBytes: 1_000_000)
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        let base = try XCTUnwrap(URL(string: "https://api.example.com"))
        let rule = RequestOptions(cache: CacheRule(timeToLive: 300))
        func me(_ token: String?, cookie: String? = nil) throws -> String {
            let route = Route(
                "/me", baseURL: base, headers: cookie.map { [HTTPHeader(name: "Cookie", value: $0)] } ?? [],
                authorizationToken: token.map { .bearer(token: $0) })
            return String(decoding: try connect.request(route, options: rule).wait(timeout: 5), as: UTF8.self)
        }
        XCTAssertEqual(try me("alice"), #"{"user":"Bearer alice","cookie":"-"}"#)
        XCTAssertEqual(try me("bob"), #"{"user":"Bearer bob","cookie":"-"}"#)
        XCTAssertEqual(try me(nil), #"{"user":"anonymous","cookie":"-"}"#)
        XCTAssertEqual(try me(nil, cookie: "s=1"), #"{"user":"anonymous","cookie":"s=1"}"#)
        XCTAssertEqual(transport.requests.count, 4, "four sets of credentials, four requests")
        XCTAssertEqual(try me("alice"), #"{"user":"Bearer alice","cookie":"-"}"#)
        XCTAssertEqual(try me(nil, cookie: "s=1"), #"{"user":"anonymous","cookie":"s=1"}"#)
        XCTAssertEqual(transport.requests.count, 4, "each served again from its own entry")

        cache.removeResponse(forKey: "GET https://api.example.com/me")
        _ = try me("alice")
        _ = try me("bob")
        _ = try me(nil)
        XCTAssertEqual(transport.requests.count, 7, "removing the key removed every user's copy")
    }

    /// Credentials in the URL (user info, a secret query item) key the response too: removing the key the app knows
    /// for the resource, without them, forgets every user's copy, as for credentials in headers. The URL's other
    /// query items still tell resources apart.
    func testRemovingAKeyForgetsTheResponsesOfEveryCredentialInTheURL() throws {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let cache = ResponseCache()
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        let rule = RequestOptions(cache: CacheRule(timeToLive: 300))
        let urls = [
            "https://amy:pw@api.example.com/me", "https://api.example.com/me?access_token=T1",
            "https://api.example.com/me?access_token=T2", "https://api.example.com/me?page=2&api_key=K",
        ]
        func getAll() throws {
            for url in urls {
                _ = try connect.response(for: ConnectRequest(url: try XCTUnwrap(URL(string: url))), options: rule)
                    .wait(timeout: 5)
            }
        }
        try getAll()
        try getAll()
        XCTAssertEqual(transport.requests.count, 4, "each stored under its own credentials")

        cache.removeResponse(forKey: "GET https://api.example.com/me")
        try getAll()
        XCTAssertEqual(transport.requests.count, 7, "the three of /me fetched again; /me?page=2 is another resource")
        cache.removeResponse(forKey: "GET https://api.example.com/me?page=2")
        try getAll()
        XCTAssertEqual(transport.requests.count, 8)
    }

    /// A custom key replaces the method and URL, not the credentials in the URL: two users whose token is a query
    /// item are stored apart under one custom key, and neither is served the other's response.
    func testACustomKeyKeepsUsersWithATokenInTheQueryApart() throws {
        // Given a server that answers with the token it was sent, and a rule with a custom key
        let transport = FakeTransport.answering(
            .handler { request in
                let items = request.url.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: false)?.queryItems }
                let token = items?.first { $0.name == "access_token" }?.value ?? "anonymous"
                return .success(ConnectResponse(request: request, statusCode: 200, data: Data(token.utf8))!)
            })
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: ResponseCache())
        let rule = RequestOptions(cache: CacheRule(timeToLive: 300, key: "me"))
        let base = try XCTUnwrap(URL(string: "https://api.example.com"))
        func me(_ token: String) throws -> String {
            let data = try connect.request(Route("/me?access_token=\(token)", baseURL: base), options: rule)
                .wait(timeout: 5)
            return String(decoding: data, as: UTF8.self)
        }

        // When Alice asks, then Bob
        let alice = try me("alice")
        let bob = try me("bob")

        // Then each got their own answer from the network, and each is served again from their own entry
        XCTAssertEqual(alice, "alice")
        XCTAssertEqual(bob, "bob", "Bob was not served Alice's response")
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(try me("alice"), "alice")
        XCTAssertEqual(try me("bob"), "bob")
        XCTAssertEqual(transport.requests.count, 2)
    }

    /// A query's pairs are read as redaction reads them, split at `;` too: a token after one keeps users apart.
    func testATokenAfterASemicolonKeepsUsersApartUnderACustomKey() throws {
        let rule = CacheRule(timeToLive: 300, key: "me")
        func key(_ token: String) throws -> String {
            let url = try XCTUnwrap(URL(string: "https://api.example.com/me?user=1;access_token=\(token)"))
            return ResponseCache.key(for: ConnectRequest(url: url), rule: rule)
        }
        XCTAssertNotEqual(try key("A"), try key("B"))
        XCTAssertEqual(try key("A"), try key("A"))
    }

    /// User info in the URL keeps users apart under a custom key too.
    func testACustomKeyKeepsUsersWithUserInfoInTheURLApart() throws {
        // Given a server that answers with the user it was sent, and a rule with a custom key
        let transport = FakeTransport.answering(
            .handler { request in
                let user = request.url?.user ?? "anonymous"
                return .success(ConnectResponse(request: request, statusCode: 200, data: Data(user.utf8))!)
            })
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: ResponseCache())
        let rule = RequestOptions(cache: CacheRule(timeToLive: 300, key: "me"))
        func me(_ user: String) throws -> String {
            let route = Route("/me", baseURL: try XCTUnwrap(URL(string: "https://\(user):pw@api.example.com")))
            return String(decoding: try connect.request(route, options: rule).wait(timeout: 5), as: UTF8.self)
        }

        // When Amy asks, then Ben
        let amy = try me("amy")
        let ben = try me("ben")

        // Then Ben got his own answer
        XCTAssertEqual(amy, "amy")
        XCTAssertEqual(ben, "ben", "Ben was not served Amy's response")
        XCTAssertEqual(transport.requests.count, 2)
    }

    /// The credential an `AuthenticationMiddleware` adds after the cache counts in the key too: after a switch of
    /// user, the other user's response is not served.
    func testTheCredentialOfTheClientsAuthenticationMiddlewareKeepsUsersApart() throws {
        let transport = answeringWithTheAuthorizationHeader()
        let auth = signedInAsAlice()
        let connect = Connect(
            transport: transport, middlewares: [auth], retryPolicy: nil,
            responseCache: ResponseCache(maxBytes: 1_000_000))
        let route = Route(
            "/me", baseURL: try XCTUnwrap(URL(string: "https://api.example.com")),
            options: RequestOptions(cache: CacheRule(timeToLive: 300)))
        func me() throws -> String { String(decoding: try connect.request(route).wait(timeout: 5), as: UTF8.self) }
        XCTAssertEqual(try me(), "Bearer alice")
        auth.setCredential(.bearer(token: "bob"))
        XCTAssertEqual(try me(), "Bearer bob")
        auth.setCredential(.bearer(token: "alice"))
        XCTAssertEqual(try me(), "Bearer alice")
        XCTAssertEqual(transport.requests.count, 2, "alice's second request was served from her own entry")
    }

    func testASecondRequestIsServedFromTheCache() throws {
        let (connect, transport, cache) = makeClient()
        let first = try connect.request(Item(path: "/a")).wait()
        let second = try connect.request(Item(path: "/a")).wait()
        XCTAssertEqual(first, second)
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(cache.hitCount, 1)
        XCTAssertEqual(cache.missCount, 1)
    }

    func testRequestsWithoutARuleAreNotCached() throws {
        let (connect, transport, cache) = makeClient()
        _ = try connect.request(Item(path: "/a", rule: nil)).wait()
        _ = try connect.request(Item(path: "/a", rule: nil)).wait()
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(cache.count, 0)
    }

    func testEntriesExpireAfterTheirTimeToLive() throws {
        let clock = ManualClock()
        let (connect, transport, _) = makeClient(clock: clock)
        _ = try connect.request(Item(path: "/a")).wait()
        clock.advance(59)
        _ = try connect.request(Item(path: "/a")).wait()
        XCTAssertEqual(transport.requests.count, 1)
        clock.advance(2)
        _ = try connect.request(Item(path: "/a")).wait()
        XCTAssertEqual(transport.requests.count, 2, "expired after 60 s")
    }

    func testBypassFetchesFreshAndStores() throws {
        let (connect, transport, cache) = makeClient()
        _ = try connect.request(Item(path: "/a")).wait()
        _ = try connect.request(Item(path: "/a", rule: CacheRule(timeToLive: 60, bypassesCache: true))).wait()
        XCTAssertEqual(transport.requests.count, 2)
        _ = try connect.request(Item(path: "/a")).wait()
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(cache.count, 1)
    }

    func testCallLevelRuleOverridesAndCustomKeysShareEntries() throws {
        let (connect, transport, _) = makeClient()
        let shared = RequestOptions(cache: CacheRule(timeToLive: 60, key: "shared"))
        _ = try connect.request(Item(path: "/a", rule: nil), options: shared).wait()
        let fromB = try connect.request(Item(path: "/b", rule: nil), options: shared).wait()
        XCTAssertEqual(transport.requests.count, 1, "same custom key, one network call")
        XCTAssertEqual(String(decoding: fromB, as: UTF8.self), #"{"v":"a"}"#)
    }

    func testOnlySuccessfulGETsAreStored() throws {
        let (connect, transport, cache) = makeClient()
        XCTAssertThrowsError(try connect.request(Item(path: "/error")).wait())
        XCTAssertThrowsError(try connect.request(Item(path: "/error")).wait())
        _ = try connect.request(Item(path: "/a", method: .post)).wait()
        _ = try connect.request(Item(path: "/a", method: .post)).wait()
        XCTAssertEqual(transport.requests.count, 4)
        XCTAssertEqual(cache.count, 0)
    }

    func testNoStoreResponsesAreNotKept() throws {
        let transport = FakeTransport.answering(.json(string: "{}", headers: ["Cache-Control": "no-store"]))
        let cache = ResponseCache()
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        _ = try connect.request(Item(path: "/a")).wait()
        _ = try connect.request(Item(path: "/a")).wait()
        XCTAssertEqual(transport.requests.count, 2)
    }

    func testLeastRecentlyUsedIsEvictedWhenFull() throws {
        // Each entry is about 60 bytes with its URL and headers; room for two.
        let (connect, transport, cache) = makeClient(maxBytes: 150)
        _ = try connect.request(Item(path: "/a")).wait()
        _ = try connect.request(Item(path: "/b")).wait()
        _ = try connect.request(Item(path: "/a")).wait()  // a is now more recent than b
        XCTAssertEqual(transport.requests.count, 2)
        _ = try connect.request(Item(path: "/c")).wait()  // evicts b
        XCTAssertEqual(cache.count, 2)
        XCTAssertLessThanOrEqual(cache.totalBytes, 150)
        _ = try connect.request(Item(path: "/a")).wait()
        XCTAssertEqual(transport.requests.count, 3, "a survived")
        _ = try connect.request(Item(path: "/b")).wait()
        XCTAssertEqual(transport.requests.count, 4, "b was evicted")
    }

    func testAResponseLargerThanTheCacheIsNotStored() throws {
        let transport = FakeTransport.answering(.data(Data(count: 10_000)))
        let cache = ResponseCache(maxBytes: 1_000)
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        _ = try connect.request(Item(path: "/big")).wait()
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(cache.totalBytes, 0)
    }

    func testConcurrentUseStaysConsistent() throws {
        let (connect, _, cache) = makeClient(maxBytes: 200)
        let paths = ["/a", "/b", "/c"]
        DispatchQueue.concurrentPerform(iterations: 300) { index in
            _ = try? connect.request(Item(path: paths[index % 3])).wait()
            if index % 50 == 0 { cache.removeResponse(forKey: "GET https://api.example.com/a") }
        }
        XCTAssertLessThanOrEqual(cache.totalBytes, 200)
        XCTAssertLessThanOrEqual(cache.count, 3)
        XCTAssertEqual(cache.hitCount + cache.missCount, 300)
        cache.removeAll()
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(cache.totalBytes, 0)
    }

    /// A download's response has its body in a file, not in memory: serving it again would hand the next download
    /// the first one's file, and a plain request an empty body.
    func testDownloadsAreNeitherServedFromNorStoredInTheCache() throws {
        let (connect, transport, cache) = makeClient()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = folder.appendingPathComponent("first.json")
        let second = folder.appendingPathComponent("second.json")

        XCTAssertEqual(try connect.download(Item(path: "/a"), to: first).wait(timeout: 5), first)
        XCTAssertEqual(try connect.download(Item(path: "/a"), to: second).wait(timeout: 5), second)
        XCTAssertEqual(try Data(contentsOf: second), Data(#"{"v":"a"}"#.utf8))
        let plain = try connect.request(Item(path: "/a")).wait(timeout: 5)
        XCTAssertEqual(String(decoding: plain, as: UTF8.self), #"{"v":"a"}"#)
        XCTAssertEqual(transport.requests.count, 3)
        XCTAssertEqual(cache.count, 1, "only the plain request's response is stored")
    }

    /// A stored response larger than a later call's `maxResponseBytes` is not served to that call: it fails as the
    /// network would make it fail.
    func testAStoredResponseOverTheCallsSizeLimitIsNotServed() throws {
        let (connect, _, _) = makeClient()
        _ = try connect.request(Item(path: "/a")).wait(timeout: 5)
        let limited = connect.request(Item(path: "/a"), options: RequestOptions(maxResponseBytes: 3))
        XCTAssertEqual(connectError(of: limited)?.kind, .responseTooLarge)
    }

    /// A request looked up under one user's credential but signed with another's (the user changed while it waited
    /// for a refresh) is not stored under the first user's key: that user is not served the other's response.
    func testAResponseSignedWithACredentialSetWhileInFlightIsNotStoredUnderThePreviousOne() {
        let transport = ManualTransport()
        let refresh = Promise<AuthorizationToken>()
        let auth = AuthenticationMiddleware(credential: .bearer(token: "alice")) { _ in refresh.future }
        let cache = ResponseCache(maxBytes: 1_000_000)
        let connect = Connect(transport: transport, middlewares: [auth], retryPolicy: nil, responseCache: cache)
        let me = Item(path: "/me")
        // alice's request is rejected and waits for a refresh; meanwhile bob signs in
        let first = connect.request(me)
        transport.respond(to: 0, status: 401)
        auth.setCredential(.bearer(token: "bob"))
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "Authorization"), "Bearer bob")
        transport.respond(to: 1, body: Data("bob".utf8))
        XCTAssertEqual(value(of: first), Data("bob".utf8))
        // alice is back
        auth.setCredential(.bearer(token: "alice"))
        let second = connect.request(me)
        XCTAssertEqual(transport.requests.count, 3, "alice's request goes to the network")
        guard transport.requests.count == 3 else { return }
        transport.respond(to: 2, body: Data("alice".utf8))
        XCTAssertEqual(value(of: second), Data("alice".utf8))
    }

    /// An `AuthenticationMiddleware` among the client's options' middlewares signs requests after the cache too:
    /// its credential keeps users apart as one in `middlewares` does.
    func testTheCredentialOfAnAuthenticationMiddlewareInTheClientsOptionsKeepsUsersApart() throws {
        let transport = answeringWithTheAuthorizationHeader()
        let auth = signedInAsAlice()
        let connect = Connect(
            transport: transport, retryPolicy: nil, responseCache: ResponseCache(maxBytes: 1_000_000),
            settings: Connect.Settings(options: RequestOptions(middlewares: [auth])))
        func me() throws -> String {
            String(decoding: try connect.request(Item(path: "/me")).wait(timeout: 5), as: UTF8.self)
        }
        XCTAssertEqual(try me(), "Bearer alice")
        auth.setCredential(.bearer(token: "bob"))
        XCTAssertEqual(try me(), "Bearer bob")
    }

    /// A 206 holds part of the body only: it is not stored, so a later request for the whole resource is not
    /// served the part.
    func testPartialContentIsNotStored() throws {
        let transport = FakeTransport.answering(
            .handler { request in
                let isRange = request.value(forHTTPHeaderField: "Range") != nil
                return .success(
                    ConnectResponse(
                        request: request, statusCode: isRange ? 206 : 200, data: Data((isRange ? "ab" : "abcd").utf8))!)
            })
        let cache = ResponseCache()
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        let rule = RequestOptions(cache: CacheRule(timeToLive: 60))
        let range = ClientFixtures.Endpoint(headers: [HTTPHeader(name: "Range", value: "bytes=0-1")])
        XCTAssertEqual(try connect.request(range, options: rule).wait(timeout: 5), Data("ab".utf8))
        let whole = try connect.request(ClientFixtures.Endpoint(), options: rule).wait(timeout: 5)
        XCTAssertEqual(whole, Data("abcd".utf8))
        XCTAssertEqual(cache.count, 1)
    }

    /// A response whose `Vary` names a request header is served only to requests with the same value of it, and
    /// one with `Vary: *` is not stored.
    func testVaryIsHonoured() throws {
        let transport = FakeTransport.answering(
            .handler { request in
                let accept = request.value(forHTTPHeaderField: "Accept") ?? "-"
                let vary = request.url?.path == "/star" ? "*" : "Accept-Language, accept"
                let response = ConnectResponse(
                    request: request, statusCode: 200, headers: ["Vary": vary], data: Data(accept.utf8))
                return .success(response!)
            })
        let cache = ResponseCache()
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        let rule = RequestOptions(cache: CacheRule(timeToLive: 60))
        func get(_ path: String = "/items", accept: String? = nil) throws -> String {
            let headers = accept.map { [HTTPHeader.accept($0)] } ?? []
            let data = try connect.request(ClientFixtures.Endpoint(endpoint: path, headers: headers), options: rule)
                .wait(timeout: 5)
            return String(decoding: data, as: UTF8.self)
        }
        XCTAssertEqual(try get(), "application/json")
        XCTAssertEqual(try get(), "application/json")
        XCTAssertEqual(transport.requests.count, 1, "same Accept: served from the cache")
        XCTAssertEqual(try get(accept: "text/csv"), "text/csv")
        XCTAssertEqual(transport.requests.count, 2, "another Accept: to the network")
        XCTAssertEqual(try get(accept: "text/csv"), "text/csv")
        XCTAssertEqual(transport.requests.count, 2)

        _ = try get("/star")
        _ = try get("/star")
        XCTAssertEqual(transport.requests.count, 4, "Vary: * is never served from the cache")
    }

    /// A rule's custom key does not name the method: a HEAD response (no body) is not served to a GET sharing
    /// the key, nor a GET response to a HEAD.
    func testAHeadAndAGetSharingACustomKeyAreNotServedEachOthersResponse() throws {
        let transport = FakeTransport.answering(
            .handler { request in
                let body = request.httpMethod == "HEAD" ? Data() : Data("body".utf8)
                return .success(ConnectResponse(request: request, statusCode: 200, data: body)!)
            })
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: ResponseCache())
        let shared = RequestOptions(cache: CacheRule(timeToLive: 60, key: "a"))
        _ = try connect.response(for: Item(path: "/a", method: .head, rule: nil), options: shared).wait(timeout: 5)
        let get = try connect.request(Item(path: "/a", rule: nil), options: shared).wait(timeout: 5)
        XCTAssertEqual(String(decoding: get, as: UTF8.self), "body")
        _ = try connect.response(for: Item(path: "/a", method: .head, rule: nil), options: shared).wait(timeout: 5)
        XCTAssertEqual(transport.requests.map(\.httpMethod), ["HEAD", "GET", "HEAD"])
    }

    /// As above, through a storage read by a cache started again: the record under a shared custom key names its
    /// method, and a HEAD's record (no body) answers no GET, nor a GET's a HEAD, whichever was written last.
    func testAHeadAndAGetSharingACustomKeyAreNotServedEachOthersStoredRecord() throws {
        let transport = FakeTransport.answering(
            .handler { request in
                let body = request.httpMethod == "HEAD" ? Data() : Data("body".utf8)
                return .success(ConnectResponse(request: request, statusCode: 200, data: body)!)
            })
        let storage = MemoryResponseStorage()
        let shared = RequestOptions(cache: CacheRule(timeToLive: 60, key: "a"))
        func restarted() -> Connect {
            Connect(transport: transport, retryPolicy: nil, responseCache: ResponseCache(storage: storage))
        }
        func head() throws -> Int {
            try restarted().response(for: Item(path: "/a", method: .head, rule: nil), options: shared).wait(timeout: 5)
                .data.count
        }
        func get() throws -> String {
            String(
                decoding: try restarted().request(Item(path: "/a", rule: nil), options: shared).wait(timeout: 5),
                as: UTF8.self)
        }
        XCTAssertEqual(try head(), 0)
        XCTAssertEqual(try get(), "body", "a HEAD's record answers no GET")
        XCTAssertEqual(try head(), 0, "a GET's record answers no HEAD")
        XCTAssertEqual(try get(), "body")
        XCTAssertEqual(transport.requests.map(\.httpMethod), ["HEAD", "GET", "HEAD", "GET"])
    }

    /// A transport answering every request with its `Authorization` header (or "anonymous") as the body.
    private func answeringWithTheAuthorizationHeader() -> FakeTransport {
        FakeTransport.answering(
            .handler { request in
                let user = request.value(forHTTPHeaderField: "Authorization") ?? "anonymous"
                return .success(ConnectResponse(request: request, statusCode: 200, data: Data(user.utf8))!)
            })
    }

    /// An `AuthenticationMiddleware` signing as "alice", whose refresh always fails.
    private func signedInAsAlice() -> AuthenticationMiddleware {
        AuthenticationMiddleware(credential: .bearer(token: "alice")) { _ in
            Future(error: URLError(.userAuthenticationRequired))
        }
    }
}
