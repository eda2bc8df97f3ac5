import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Caching as Remotli, Konex and JustAPIs had it (issue 38, item 3, in part): a custom key for any method, a POST
/// whose key names its body, and the request's own cache policy honoured.
final class CacheKeysAndPoliciesTests: XCTestCase {
    private func client(_ transport: FakeTransport, cache: ResponseCache) -> Connect {
        Connect(transport: transport, responseCache: cache, configuration: ServerConfiguration(host: "api.test"))
    }

    private func search(_ query: String, rule: CacheRule) -> Route {
        Route(
            "/search", method: .post, parameters: ["q": query] as JSONObject,
            options: RequestOptions(cache: rule))
    }

    private func answers(_ count: Int) -> FakeTransport {
        let transport = FakeTransport()
        transport.stub("/search", with: (1...count).map { .json(string: #"{"answer":\#($0)}"#) })
        transport.stub("/todos", with: (1...count).map { .json(string: #"{"answer":\#($0)}"#) })
        return transport
    }

    private func body(_ future: Future<Data>) -> String? {
        value(of: future).map { String(decoding: $0, as: UTF8.self) }
    }

    func testAPOSTIsCachedPerBodyWhenTheKeyNamesIt() {
        let transport = answers(3)
        let connect = client(transport, cache: ResponseCache())
        let rule = CacheRule(timeToLive: 60, keyIncludesBody: true)
        XCTAssertEqual(body(connect.request(search("swift", rule: rule))), #"{"answer":1}"#)
        XCTAssertEqual(body(connect.request(search("swift", rule: rule))), #"{"answer":1}"#, "served from the cache")
        XCTAssertEqual(body(connect.request(search("rust", rule: rule))), #"{"answer":2}"#, "another body, fetched")
        XCTAssertEqual(transport.requests.count, 2)
    }

    /// A `Host` field that names another authority than the URL's asks for another resource (a virtual host reached at
    /// an address, RFC 9112 §3.3): one tenant's answer is not served to another, and removing the URL's key forgets
    /// every host's. A `Host` that is the URL's own changes nothing.
    func testAVirtualHostIsPartOfTheKey() throws {
        let transport = answers(4)
        let cache = ResponseCache()
        let connect = client(transport, cache: cache)
        let options = RequestOptions(cache: CacheRule(timeToLive: 60))
        func get(host: String?) throws -> String {
            var request = ConnectRequest(url: try XCTUnwrap(URL(string: "https://10.0.0.5/todos")))
            if let host { request.setValue(host, forHTTPHeaderField: "Host") }
            return String(
                decoding: try connect.response(for: request, options: options).wait(timeout: 5).data, as: UTF8.self)
        }
        XCTAssertEqual(try get(host: "tenant-a.example"), #"{"answer":1}"#)
        XCTAssertEqual(try get(host: "tenant-b.example"), #"{"answer":2}"#, "another tenant's resource")
        XCTAssertEqual(try get(host: "Tenant-A.example"), #"{"answer":1}"#, "a host is named in any case")
        XCTAssertEqual(try get(host: nil), #"{"answer":3}"#)
        XCTAssertEqual(try get(host: "10.0.0.5"), #"{"answer":3}"#, "the URL's own authority")
        XCTAssertEqual(transport.requests.count, 3)
        cache.removeResponse(forKey: "GET https://10.0.0.5/todos")
        XCTAssertEqual(try get(host: "tenant-a.example"), #"{"answer":4}"#, "removed with the URL's key")
    }

    /// The fragment is never sent (RFC 9110 §4.2.5): a request that differs from a stored one only there is served the
    /// stored response, as the answer to its own request (its URL naming its own fragment), and the key leaves it out.
    func testARequestThatDiffersOnlyInItsFragmentIsServedFromTheCache() throws {
        // Given a response stored for `/todos#a`
        let transport = answers(2)
        let cache = ResponseCache()
        let connect = client(transport, cache: cache)
        let options = RequestOptions(cache: CacheRule(timeToLive: 60))
        func get(_ url: String) throws -> ConnectResponse {
            try connect.response(for: ConnectRequest(url: XCTUnwrap(URL(string: url))), options: options)
                .wait(timeout: 5)
        }
        XCTAssertEqual(String(decoding: try get("https://api.test/todos#a").data, as: UTF8.self), #"{"answer":1}"#)

        // When the same resource is asked for with another fragment, or none
        let other = try get("https://api.test/todos#b")
        let none = try get("https://api.test/todos")

        // Then both are served from the cache, each naming its own fragment
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(String(decoding: other.data, as: UTF8.self), #"{"answer":1}"#)
        XCTAssertEqual(other.response.url?.absoluteString, "https://api.test/todos#b")
        XCTAssertEqual(other.sentRequest.url.fragment, "b")
        XCTAssertEqual(none.response.url?.absoluteString, "https://api.test/todos")
        let rule = CacheRule(timeToLive: 60)
        let key = ResponseCache.key(
            for: ConnectRequest(url: try XCTUnwrap(URL(string: "https://api.test/t#x"))), rule: rule)
        XCTAssertEqual(key, "GET https://api.test/t")

        // And removing the key as written with a fragment removes the stored response
        cache.removeResponse(forKey: "GET https://api.test/todos#c")
        XCTAssertEqual(cache.count, 0)
    }

    /// Removing the key the app knows removes the responses stored with their body's digest in the key, for every
    /// body and every set of credentials.
    func testRemovingAKeyRemovesTheResponsesStoredPerBody() {
        // Given two searches stored per body, the second one signed
        let transport = answers(4)
        let cache = ResponseCache()
        let connect = client(transport, cache: cache)
        let rule = CacheRule(timeToLive: 60, keyIncludesBody: true)
        let signed = Route(
            "/search", method: .post, parameters: ["q": "rust"] as JSONObject,
            headers: [.authorization(bearerToken: "t0ken")], options: RequestOptions(cache: rule))
        _ = body(connect.request(search("swift", rule: rule)))
        _ = body(connect.request(signed))
        XCTAssertEqual(cache.count, 2)

        // When the app removes the key of the endpoint
        cache.removeResponse(forKey: "POST https://api.test/search")

        // Then both are gone: the next searches go to the network
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(body(connect.request(search("swift", rule: rule))), #"{"answer":3}"#)
        XCTAssertEqual(body(connect.request(signed)), #"{"answer":4}"#)
        XCTAssertEqual(transport.requests.count, 4)
    }

    /// Sets a stream of its `X-Query` header's value as the request's body, as a middleware of the app may.
    private struct StreamedBody: Middleware {
        func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next)
            -> Future<ConnectResponse>
        {
            let query = request.value(forHTTPHeaderField: "X-Query") ?? ""
            request.httpBodyStream = InputStream(data: Data(query.utf8))
            return next(request)
        }
    }

    /// A body from a stream cannot be named, whatever the method: a request whose rule keys on its body is not cached
    /// (two streamed bodies shared the digest of an empty body, and one's answer was served for the other). A GET's or
    /// a HEAD's body never goes: the wire check refuses it (`ResponseFramingTests`).
    func testARequestWithAStreamedBodyIsNotCachedByItsBody() {
        let rule = RequestOptions(cache: CacheRule(timeToLive: 60, keyIncludesBody: true))
        let keyed = RequestOptions(cache: CacheRule(timeToLive: 60, key: "search", keyIncludesBody: true))
        for options in [rule, keyed] {
            for method in [HTTPMethod.post, .put, .patch] {
                let transport = FakeTransport.answering(.json(string: "{}"))
                let connect = Connect(
                    transport: transport, middlewares: [StreamedBody()], responseCache: ResponseCache(),
                    configuration: ServerConfiguration(host: "api.test"))
                for query in ["swift", "rust"] {
                    let route = Route(
                        "/search", method: method, headers: [HTTPHeader(name: "X-Query", value: query)],
                        options: options)
                    XCTAssertNotNil(value(of: connect.response(for: route)), "\(method) \(query)")
                }
                XCTAssertEqual(transport.requests.count, 2, "\(method): the second body was sent")
            }
        }
    }

    /// A storage that keeps nothing and counts what it was given.
    private final class CountingStorage: ResponseCacheStorage, @unchecked Sendable {
        // `stored` is read and written under `lock`.
        private let lock = NSLock()
        private var stored = 0
        var count: Int { lock.withLock { stored } }
        func response(forKey key: String) -> StoredResponse? { nil }
        func store(_ response: StoredResponse, forKey key: String) { lock.withLock { stored += 1 } }
        func removeResponses(forKey key: String) {}
        func removeAll() {}
        func removeResponses(forResources resources: Set<String>) {}
    }

    /// Credentials in a body (a form's `access_token`, RFC 6750 §2.2) are credentials as in a query or a header: two
    /// users asking under one custom key are stored apart, and such a response never reaches the app's storage (its
    /// key would keep a digest of the token).
    func testCredentialsInABodyKeepUsersApartAndOutOfTheStorage() {
        let transport = FakeTransport()
        transport.stub("/feed", with: (1...2).map { .json(string: #"{"user":\#($0)}"#) })
        let storage = CountingStorage()
        let connect = client(transport, cache: ResponseCache(storage: storage))
        for user in ["A", "B"] {
            let route = Route(
                "/feed", method: .post, parameters: Parameter.form(key: "access_token", value: user),
                options: RequestOptions(cache: CacheRule(timeToLive: 60, key: "feed")))
            XCTAssertEqual(body(connect.request(route)), user == "A" ? #"{"user":1}"# : #"{"user":2}"#, user)
        }
        XCTAssertEqual(transport.requests.count, 2, "B was not served A's response")
        XCTAssertEqual(storage.count, 0)
    }

    func testAPOSTIsNotCachedUnlessTheRuleNamesItsKey() {
        let transport = answers(2)
        let connect = client(transport, cache: ResponseCache())
        let rule = CacheRule(timeToLive: 60)
        _ = body(connect.request(search("swift", rule: rule)))
        XCTAssertEqual(body(connect.request(search("swift", rule: rule))), #"{"answer":2}"#)
        XCTAssertEqual(transport.requests.count, 2)
    }

    func testACustomKeyCachesAnyMethod() {
        let transport = answers(2)
        let connect = client(transport, cache: ResponseCache())
        let rule = CacheRule(timeToLive: 60, key: "search:all")
        _ = body(connect.request(search("a", rule: rule)))
        XCTAssertEqual(body(connect.request(search("b", rule: rule))), #"{"answer":1}"#, "the key the app chose")
        XCTAssertEqual(transport.requests.count, 1)
    }

    private struct Todos: Connector {
        var cachePolicy: URLRequest.CachePolicy
        var headers: [HTTPHeader] = []
        var baseURL: URL { URL(string: "https://api.test")! }
        var endpoint: String { "/todos" }
        var options: RequestOptions { RequestOptions(cache: CacheRule(timeToLive: 60)) }
    }

    func testTheRequestsCachePolicyIsHonoured() {
        var now = Date(timeIntervalSince1970: 1_000)
        let clock = Guarded(now)
        let transport = answers(3)
        let connect = client(transport, cache: ResponseCache(now: { clock.withLock { $0 } }))
        XCTAssertEqual(body(connect.request(Todos(cachePolicy: .useProtocolCachePolicy))), #"{"answer":1}"#)
        // A reload fetches fresh and stores what it got.
        XCTAssertEqual(body(connect.request(Todos(cachePolicy: .reloadIgnoringLocalCacheData))), #"{"answer":2}"#)
        XCTAssertEqual(body(connect.request(Todos(cachePolicy: .useProtocolCachePolicy))), #"{"answer":2}"#)
        // Past its time to live, `returnCacheData…` still serves it.
        now.addTimeInterval(120)
        clock.withLock { $0 = now }
        XCTAssertEqual(body(connect.request(Todos(cachePolicy: .returnCacheDataDontLoad))), #"{"answer":2}"#)
        XCTAssertEqual(body(connect.request(Todos(cachePolicy: .returnCacheDataElseLoad))), #"{"answer":2}"#)
        XCTAssertEqual(transport.requests.count, 2)
    }

    func testReturnCacheDataDontLoadWithNothingStoredFailsUnsent() {
        let transport = answers(1)
        let error = connectError(
            of: client(transport, cache: ResponseCache()).request(Todos(cachePolicy: .returnCacheDataDontLoad)))
        XCTAssertEqual(error?.kind, .transport)
        XCTAssertEqual((error?.underlyingError as? URLError)?.code, .resourceUnavailable)
        XCTAssertTrue(transport.requests.isEmpty)
    }

    /// A call's rule bounds what it is served: a response stored 100 seconds ago under a rule of 300 seconds does not
    /// answer a call whose rule says 10 (the network does, and its answer is stored for 10), and does answer one whose
    /// rule says 300 or more.
    func testTheCallsTimeToLiveBoundsWhatItIsServed() {
        let clock = Guarded(Date(timeIntervalSince1970: 1_000))
        let transport = FakeTransport()
        transport.stub("/a", with: (1...3).map { .json(string: #"{"answer":\#($0)}"#) })
        let connect = client(transport, cache: ResponseCache(now: { clock.withLock { $0 } }))
        func get(ttl: TimeInterval) -> String? {
            body(connect.request(Route("/a", options: RequestOptions(cache: CacheRule(timeToLive: ttl)))))
        }
        XCTAssertEqual(get(ttl: 300), #"{"answer":1}"#)
        clock.withLock { $0.addTimeInterval(100) }
        XCTAssertEqual(get(ttl: 3_600), #"{"answer":1}"#, "a longer rule never lengthens a lifetime, nor cuts it")
        XCTAssertEqual(get(ttl: 300), #"{"answer":1}"#)
        XCTAssertEqual(get(ttl: 10), #"{"answer":2}"#, "100 seconds old is past this call's 10")
        XCTAssertEqual(transport.requests.count, 2)
        clock.withLock { $0.addTimeInterval(11) }
        XCTAssertEqual(get(ttl: 300), #"{"answer":3}"#, "the answer stored under the 10-second rule has expired")
    }

    /// `.returnCacheDataDontLoad` forbids the network whatever the request's `Cache-Control` says: with `no-store`
    /// it is answered as `only-if-cached, no-store` is, from what is stored (nothing stored of it), or fails unsent.
    func testReturnCacheDataDontLoadWithNoStoreNeverSends() {
        let transport = answers(2)
        let connect = client(transport, cache: ResponseCache())
        let noStore = [HTTPHeader(name: "Cache-Control", value: "no-store")]
        let error = connectError(of: connect.request(Todos(cachePolicy: .returnCacheDataDontLoad, headers: noStore)))
        XCTAssertEqual(error?.kind, .transport)
        XCTAssertEqual((error?.underlyingError as? URLError)?.code, .resourceUnavailable)
        XCTAssertTrue(transport.requests.isEmpty)

        XCTAssertEqual(body(connect.request(Todos(cachePolicy: .useProtocolCachePolicy))), #"{"answer":1}"#)
        XCTAssertEqual(
            body(connect.request(Todos(cachePolicy: .returnCacheDataDontLoad, headers: noStore))), #"{"answer":1}"#)
        XCTAssertEqual(transport.requests.count, 1)
    }

    /// A default rule that names the body (or a key) still caches reads only: a DELETE or a POST under it goes out each
    /// time and invalidates what a GET stored, where it was served from the cache as a read would be, the second
    /// DELETE never sent and the GET after it answered with the resource as it was before.
    func testADefaultRuleWithAKeyCachesOnlyGETAndHEAD() {
        for rule in [CacheRule(timeToLive: 60, keyIncludesBody: true), CacheRule(timeToLive: 60, key: "items")] {
            let transport = FakeTransport()
            transport.stub("/items/1", with: (1...4).map { .json(string: #"{"answer":\#($0)}"#) })
            let connect = client(transport, cache: ResponseCache(defaultRule: rule))
            let item = Route(url: URL(string: "https://api.test/items/1")!)
            let delete = Route(url: URL(string: "https://api.test/items/1")!, method: .delete)
            _ = body(connect.request(item))
            _ = body(connect.request(delete))
            _ = body(connect.request(delete))
            _ = body(connect.request(item))
            XCTAssertEqual(transport.requests.map(\.httpMethod), ["GET", "DELETE", "DELETE", "GET"], "\(rule)")
        }
    }

    /// A rule of the client's own options (`Settings.options`, which every request of the client gets) that names the
    /// body or a key still caches reads only, as the cache's default rule does: a DELETE or a POST under it goes out
    /// each time and invalidates what a GET stored, where it was served from the cache as a read of its key, the
    /// second DELETE (and POST) never sent and the GET after them answered with the resource as it was before.
    func testAClientWideRuleWithAKeyCachesOnlyGETAndHEAD() {
        for rule in [CacheRule(timeToLive: 60, keyIncludesBody: true), CacheRule(timeToLive: 60, key: "items")] {
            let transport = FakeTransport()
            transport.stub("/items/1", with: (1...7).map { .json(string: #"{"answer":\#($0)}"#) })
            let connect = Connect(
                transport: transport, responseCache: ResponseCache(),
                configuration: ServerConfiguration(host: "api.test"),
                settings: Connect.Settings(options: RequestOptions(cache: rule)))
            let item = Route(url: URL(string: "https://api.test/items/1")!)
            let delete = Route(url: URL(string: "https://api.test/items/1")!, method: .delete)
            let post = Route(
                url: URL(string: "https://api.test/items/1")!, method: .post, parameters: ["n": 1] as JSONObject)
            XCTAssertEqual(body(connect.request(item)), #"{"answer":1}"#)
            XCTAssertEqual(body(connect.request(item)), #"{"answer":1}"#, "a GET is a read under it: \(rule)")
            XCTAssertEqual(body(connect.request(delete)), #"{"answer":2}"#)
            XCTAssertEqual(body(connect.request(delete)), #"{"answer":3}"#, "a DELETE is sent: \(rule)")
            XCTAssertEqual(body(connect.request(item)), #"{"answer":4}"#, "not the GET stored before: \(rule)")
            XCTAssertEqual(body(connect.request(post)), #"{"answer":5}"#)
            XCTAssertEqual(body(connect.request(post)), #"{"answer":6}"#, "a POST is sent: \(rule)")
            // Sent through the client as a request built elsewhere, too.
            let built = ConnectRequest(method: .delete, url: URL(string: "https://api.test/items/1")!)
            XCTAssertEqual(
                value(of: connect.response(for: built)).map { String(decoding: $0.data, as: UTF8.self) },
                #"{"answer":7}"#, "a built DELETE is sent: \(rule)")
            XCTAssertEqual(
                transport.requests.map(\.httpMethod), ["GET", "DELETE", "DELETE", "GET", "POST", "POST", "DELETE"],
                "\(rule)")
        }
    }

    /// A custom key names one response. A rule no request brings itself (the client's own options, the cache's default
    /// rule) is the rule of every GET: its key would make them all one entry, `/b` answered with `/a`'s body. Such a
    /// rule stores each GET under its own method and URL.
    func testAKeyOfARuleForEveryRequestDoesNotMakeEveryGETOneEntry() {
        let keyed = CacheRule(timeToLive: 60, key: "everything")
        for settingIt in ["client-wide", "default rule"] {
            let transport = FakeTransport()
            transport.stub("/a", with: [.json(string: #"{"path":"a"}"#), .json(string: #"{"path":"a2"}"#)])
            transport.stub("/b", with: [.json(string: #"{"path":"b"}"#), .json(string: #"{"path":"b2"}"#)])
            let connect = Connect(
                transport: transport,
                responseCache: settingIt == "default rule" ? ResponseCache(defaultRule: keyed) : ResponseCache(),
                configuration: ServerConfiguration(host: "api.test"),
                settings: Connect.Settings(options: settingIt == "client-wide" ? RequestOptions(cache: keyed) : .init())
            )
            XCTAssertEqual(body(connect.request(Route("/a"))), #"{"path":"a"}"#, settingIt)
            XCTAssertEqual(body(connect.request(Route("/b"))), #"{"path":"b"}"#, "\(settingIt): /b is not /a's entry")
            XCTAssertEqual(body(connect.request(Route("/a"))), #"{"path":"a"}"#, "\(settingIt): /a still cached")
            XCTAssertEqual(body(connect.request(Route("/b"))), #"{"path":"b"}"#, "\(settingIt): /b cached too")
            XCTAssertEqual(transport.requests.map { $0.url?.path }, ["/a", "/b"], settingIt)
        }
    }

    /// A connector's, a call's or the client's rule for one method (`Settings.methodOptions`) is given on purpose: under
    /// a client-wide rule too, it caches a POST search by its body.
    func testARuleGivenForTheRequestStillCachesAPOSTUnderAClientWideRule() {
        let transport = answers(4)
        let byBody = CacheRule(timeToLive: 60, keyIncludesBody: true)
        let connect = Connect(
            transport: transport, responseCache: ResponseCache(), configuration: ServerConfiguration(host: "api.test"),
            settings: Connect.Settings(options: RequestOptions(cache: CacheRule(timeToLive: 60, key: "everything"))))
        XCTAssertEqual(body(connect.request(search("swift", rule: byBody))), #"{"answer":1}"#)
        XCTAssertEqual(body(connect.request(search("swift", rule: byBody))), #"{"answer":1}"#, "the connector's rule")
        let plain = Route("/search", method: .post, parameters: ["q": "rust"] as JSONObject)
        XCTAssertEqual(body(connect.request(plain, options: RequestOptions(cache: byBody))), #"{"answer":2}"#)
        XCTAssertEqual(
            body(connect.request(plain, options: RequestOptions(cache: byBody))), #"{"answer":2}"#, "the call's rule")
        let perMethod = Connect(
            transport: transport, responseCache: ResponseCache(), configuration: ServerConfiguration(host: "api.test"),
            settings: Connect.Settings(
                options: RequestOptions(cache: CacheRule(timeToLive: 60, key: "everything")),
                methodOptions: [.post: RequestOptions(cache: byBody)]))
        XCTAssertEqual(body(perMethod.request(plain)), #"{"answer":3}"#)
        XCTAssertEqual(body(perMethod.request(plain)), #"{"answer":3}"#, "the client's rule for POST")
        XCTAssertEqual(transport.requests.count, 3)
    }

    /// One setting caches every GET of the client; a request's own rule still wins.
    func testADefaultRuleCachesEveryGETInOneSetting() {
        let transport = answers(3)
        let connect = client(transport, cache: ResponseCache(defaultRule: CacheRule(timeToLive: 60)))
        let plain = Route(url: URL(string: "https://api.test/todos")!)
        _ = body(connect.request(plain))
        XCTAssertEqual(body(connect.request(plain)), #"{"answer":1}"#, "cached without a rule of its own")
        let fresh = RequestOptions(cache: CacheRule(timeToLive: 60, bypassesCache: true))
        XCTAssertEqual(body(connect.request(plain, options: fresh)), #"{"answer":2}"#, "the call's rule wins")
        _ = body(connect.request(search("a", rule: CacheRule(timeToLive: 0))))
        XCTAssertEqual(transport.requests.count, 3)
    }
}
