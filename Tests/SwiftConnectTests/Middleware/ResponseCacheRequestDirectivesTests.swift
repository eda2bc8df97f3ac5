import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// RFC 9111 §5.2.1 and §5.4: the request's own `Cache-Control` (or, without one, its `Pragma`) as it reaches the
/// ``ResponseCache``: `no-store` neither stores nor serves, `no-cache`, `max-age=0` and `Pragma: no-cache` fetch
/// fresh and store what comes (a stored response without a validator, as here; one with a validator is revalidated,
/// see `ResponseCacheRevalidationTests`), `min-fresh` asks for a response fresh that much longer, `max-stale` accepts
/// one past its time, and `only-if-cached` never reaches the network.
final class ResponseCacheRequestDirectivesTests: XCTestCase {
    /// What the cache did with a request carrying some headers, asked after a plain request stored a response.
    private enum Outcome: Equatable {
        /// The stored response was served.
        case served
        /// A fresh response was fetched, and stored in place of the old one.
        case fetchedAndStored
        /// A fresh response was fetched, and not stored: the old one is still served.
        case fetchedNotStored
    }

    /// Stores a response to `GET /a`, asks again with `headers` (appended as they are, repeated names included,
    /// by a middleware before the cache), then once more without them.
    private func outcome(of headers: [(String, String)], file: StaticString = #filePath, line: UInt = #line) throws
        -> Outcome
    {
        let transport = FakeTransport()
        transport.stub(.get, "/a", with: (1...3).map { .json(string: #"{"version":\#($0)}"#) })
        let adding = AnyMiddleware { request, _, next in
            var request = request
            if request.value(forHTTPHeaderField: "X-Directives") != nil {
                request.setValue(nil, forHTTPHeaderField: "X-Directives")
                for (name, value) in headers {
                    request.headerFields.append(HeaderField(name: HeaderField.Name(name), value: value))
                }
            }
            return next(request)
        }
        let connect = Connect(
            transport: transport, middlewares: [adding], retryPolicy: nil, responseCache: ResponseCache(),
            configuration: ServerConfiguration(host: "api.example.com"))
        let rule = RequestOptions(cache: CacheRule(timeToLive: 300))
        func get(withDirectives: Bool) throws -> String {
            let marker = withDirectives ? [HTTPHeader(name: "X-Directives", value: "1")] : []
            let data = try connect.request(Route("/a", headers: marker), options: rule).wait(timeout: 5)
            return String(decoding: data, as: UTF8.self)
        }
        XCTAssertEqual(try get(withDirectives: false), #"{"version":1}"#, file: file, line: line)
        let asked = try get(withDirectives: true)
        let after = try get(withDirectives: false)
        switch (asked, after) {
        case (#"{"version":1}"#, #"{"version":1}"#): return .served
        case (#"{"version":2}"#, #"{"version":2}"#): return .fetchedAndStored
        case (#"{"version":2}"#, #"{"version":1}"#): return .fetchedNotStored
        default:
            XCTFail("asked: \(asked), after: \(after)", file: file, line: line)
            return .served
        }
    }

    func testNoStoreNeitherServesNorStores() throws {
        // Given a stored response; when a request asks `no-store`, in any case; then it goes to the network and its
        // answer is not stored
        XCTAssertEqual(try outcome(of: [("Cache-Control", "no-store")]), .fetchedNotStored)
        XCTAssertEqual(try outcome(of: [("cache-control", "No-Store")]), .fetchedNotStored)
        XCTAssertEqual(try outcome(of: [("Cache-Control", "max-age=60, NO-STORE")]), .fetchedNotStored)
    }

    func testNoStoreOnTheFirstRequestStoresNothing() throws {
        // Given an empty cache
        let transport = FakeTransport.answering(.json(string: "{}"))
        let cache = ResponseCache()
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        let route = Route(
            "/a", baseURL: try XCTUnwrap(URL(string: "https://api.example.com")),
            headers: [HTTPHeader(name: "Cache-Control", value: "no-store")],
            options: RequestOptions(cache: CacheRule(timeToLive: 300)))

        // When a request asking `no-store` is answered
        _ = try connect.request(route).wait(timeout: 5)

        // Then nothing is stored
        XCTAssertEqual(cache.count, 0)
    }

    func testNoCacheFetchesFreshAndStores() throws {
        XCTAssertEqual(try outcome(of: [("Cache-Control", "no-cache")]), .fetchedAndStored)
        XCTAssertEqual(try outcome(of: [("CACHE-CONTROL", "No-Cache")]), .fetchedAndStored)
        XCTAssertEqual(try outcome(of: [("Cache-Control", #"no-cache="Authorization", private"#)]), .fetchedAndStored)
    }

    func testMaxAgeZeroFetchesFreshAndStores() throws {
        XCTAssertEqual(try outcome(of: [("Cache-Control", "max-age=0")]), .fetchedAndStored)
        XCTAssertEqual(try outcome(of: [("Cache-Control", #"private, MAX-AGE="0""#)]), .fetchedAndStored)
        XCTAssertEqual(try outcome(of: [("Cache-Control", "max-age=60")]), .served)
    }

    func testPragmaNoCacheCountsOnlyWithoutCacheControl() throws {
        XCTAssertEqual(try outcome(of: [("Pragma", "no-cache")]), .fetchedAndStored)
        XCTAssertEqual(try outcome(of: [("pragma", "NO-CACHE")]), .fetchedAndStored)
        XCTAssertEqual(try outcome(of: [("Pragma", "no-cache"), ("Cache-Control", "max-age=60")]), .served)
    }

    func testRepeatedFieldsReadAsOneList() throws {
        XCTAssertEqual(
            try outcome(of: [("Cache-Control", "max-age=60"), ("cache-control", "no-cache")]), .fetchedAndStored)
        XCTAssertEqual(
            try outcome(of: [("Cache-Control", "max-age=60"), ("Cache-Control", "no-store")]), .fetchedNotStored)
    }

    func testADirectiveIsMatchedWholeNotAsPartOfAnother() throws {
        XCTAssertEqual(try outcome(of: [("Cache-Control", "no-cache-please")]), .served)
        XCTAssertEqual(try outcome(of: [("Cache-Control", #"ext="no-cache, no-store""#)]), .served)
        XCTAssertEqual(try outcome(of: [("X-Cache-Control", "no-store")]), .served)
    }

    func testMinFreshServesOnlyAResponseFreshThatMuchLonger() throws {
        // Given a response stored for 300 seconds, asked again at once
        XCTAssertEqual(try outcome(of: [("Cache-Control", "min-fresh=60")]), .served)
        XCTAssertEqual(try outcome(of: [("Cache-Control", "MIN-FRESH=\"120\"")]), .served)
        // When it asks for more than the response has left, then a fresh one is fetched (and stored)
        XCTAssertEqual(try outcome(of: [("Cache-Control", "min-fresh=301")]), .fetchedAndStored)
        // An argument that is not a number asked for more freshness than it could say
        XCTAssertEqual(try outcome(of: [("Cache-Control", "min-fresh=soon")]), .fetchedAndStored)
        XCTAssertEqual(try outcome(of: [("Cache-Control", "min-fresh")]), .fetchedAndStored)
    }

    /// A client whose cache reads `clock`, over `transport`, storing `GET /a` for 60 seconds; `storage` as its second
    /// tier.
    private func clockedClient(
        _ transport: FakeTransport, clock: Guarded<Date>, storage: (any ResponseCacheStorage)? = nil
    ) -> (Connect, ResponseCache) {
        let cache = ResponseCache(storage: storage, now: { clock.withLock { $0 } })
        let connect = Connect(
            transport: transport, retryPolicy: nil, responseCache: cache,
            configuration: ServerConfiguration(host: "api.example.com"))
        return (connect, cache)
    }

    /// `GET /a` with a rule of 60 seconds and `Cache-Control: directives` (none when `nil`): its body, or its error.
    private func get(_ connect: Connect, _ directives: String?) -> Result<String, Error> {
        let headers = directives.map { [HTTPHeader(name: "Cache-Control", value: $0)] } ?? []
        let route = Route("/a", headers: headers, options: RequestOptions(cache: CacheRule(timeToLive: 60)))
        return Result { String(decoding: try connect.request(route).wait(timeout: 5), as: UTF8.self) }
    }

    func testMaxStaleServesAResponsePastItsTimeByAsMuchAsItSays() throws {
        // Given a response stored for 60 seconds, 100 seconds ago (40 seconds stale)
        let clock = Guarded(Date(timeIntervalSince1970: 1_000))
        let transport = FakeTransport()
        transport.stub(.get, "/a", with: (1...3).map { .json(string: #"{"version":\#($0)}"#) })
        let (connect, _) = clockedClient(transport, clock: clock)
        XCTAssertEqual(try get(connect, nil).get(), #"{"version":1}"#)
        clock.withLock { $0.addTimeInterval(100) }

        // When requests accept staleness, then it is served: without a bound, or with one of 40 seconds or more
        XCTAssertEqual(try get(connect, "max-stale").get(), #"{"version":1}"#)
        XCTAssertEqual(try get(connect, "Max-Stale=40").get(), #"{"version":1}"#)
        XCTAssertEqual(try get(connect, #"max-stale="3600""#).get(), #"{"version":1}"#)
        XCTAssertEqual(transport.requests.count, 1)

        // When the bound is shorter, or not a number, then it goes to the network, and the answer is stored
        XCTAssertEqual(try get(connect, "max-stale=39").get(), #"{"version":2}"#)
        XCTAssertEqual(try get(connect, nil).get(), #"{"version":2}"#)
        clock.withLock { $0.addTimeInterval(100) }
        XCTAssertEqual(try get(connect, "max-stale=ten").get(), #"{"version":3}"#)
        XCTAssertEqual(transport.requests.count, 3)
    }

    func testAFreshResponseNotFreshEnoughForOneRequestStaysForTheOthers() throws {
        // Given a response stored for 60 seconds, and a server that fails next
        let clock = Guarded(Date(timeIntervalSince1970: 1_000))
        let transport = FakeTransport()
        transport.stub(
            .get, "/a", with: [.json(string: #"{"version":1}"#), .status(503), .json(string: #"{"version":3}"#)])
        let (connect, cache) = clockedClient(transport, clock: clock)
        _ = try get(connect, nil).get()

        // When a request's min-fresh is more than the 30 seconds it has left, and its fetch fails
        clock.withLock { $0.addTimeInterval(30) }
        XCTAssertThrowsError(try get(connect, "min-fresh=45").get())

        // Then the stored response is still served to a plain request
        XCTAssertEqual(try get(connect, nil).get(), #"{"version":1}"#)
        XCTAssertEqual(cache.count, 1)

        // When a plain request finds it stale, then it goes, and is fetched again
        clock.withLock { $0.addTimeInterval(31) }
        XCTAssertEqual(try get(connect, nil).get(), #"{"version":3}"#)
        XCTAssertEqual(transport.requests.count, 3)
    }

    func testMaxStaleAndMinFreshCountForTheSecondTierToo() throws {
        // Given a response kept only in a storage (a restart: a new cache over the same storage)
        let clock = Guarded(Date(timeIntervalSince1970: 1_000))
        let storage = MemoryResponseStorage()
        let transport = FakeTransport()
        transport.stub(.get, "/a", with: (1...3).map { .json(string: #"{"version":\#($0)}"#) })
        _ = try get(clockedClient(transport, clock: clock, storage: storage).0, nil).get()
        clock.withLock { $0.addTimeInterval(30) }

        // When a request asks for more freshness than it has left, then it is not served from the storage
        XCTAssertEqual(
            try get(clockedClient(transport, clock: clock, storage: storage).0, "min-fresh=45").get(),
            #"{"version":2}"#)

        // When one accepts a stale response, then the storage's is served, past its time
        clock.withLock { $0.addTimeInterval(90) }
        XCTAssertEqual(
            try get(clockedClient(transport, clock: clock, storage: storage).0, "max-stale=60").get(),
            #"{"version":2}"#)
        XCTAssertEqual(transport.requests.count, 2)
    }

    func testOnlyIfCachedServesWhatIsStoredOrFailsWithNothingSent() throws {
        // Given an empty cache
        let clock = Guarded(Date(timeIntervalSince1970: 1_000))
        let transport = FakeTransport()
        transport.stub(.get, "/a", with: .json(string: #"{"version":1}"#))
        let (connect, _) = clockedClient(transport, clock: clock)

        // When a request asks only-if-cached, then it fails, typed, and nothing is sent
        func failure(_ directives: String) -> ConnectError? {
            guard case .failure(let error) = get(connect, directives) else { return nil }
            return error as? ConnectError
        }
        let error = try XCTUnwrap(failure("only-if-cached"))
        XCTAssertEqual(error.kind, .transport)
        XCTAssertEqual((error.underlyingError as? URLError)?.code, .resourceUnavailable)
        XCTAssertTrue(error.message.contains("only-if-cached"), error.message)
        XCTAssertTrue(transport.requests.isEmpty)

        // Given a stored response; then it is served, and nothing else is
        XCTAssertEqual(try get(connect, nil).get(), #"{"version":1}"#)
        XCTAssertEqual(try get(connect, "ONLY-IF-CACHED").get(), #"{"version":1}"#)
        XCTAssertNotNil(failure("only-if-cached, no-cache"), "no-cache needs the network")
        // RFC 9111 §5.2.1.5: no-store keeps this exchange out of the cache, not the stored response from it.
        XCTAssertEqual(try get(connect, "only-if-cached, no-store").get(), #"{"version":1}"#)
        XCTAssertNotNil(failure("only-if-cached, min-fresh=61"))

        // When it is stale, then only max-stale lets it be served
        clock.withLock { $0.addTimeInterval(61) }
        XCTAssertEqual(try get(connect, "only-if-cached, max-stale").get(), #"{"version":1}"#)
        XCTAssertNotNil(failure("only-if-cached"))
        XCTAssertEqual(transport.requests.count, 1)
    }

    func testTheOfflineFirstExampleOfTheDocumentation() throws {
        // The example of ResponseCache's documentation, as written there.
        let offline = [HTTPHeader(name: "Cache-Control", value: "only-if-cached, max-stale")]
        let clock = Guarded(Date(timeIntervalSince1970: 1_000))
        let transport = FakeTransport()
        transport.stub(.get, "/a", with: .json(string: #"{"version":1}"#))
        let (connect, _) = clockedClient(transport, clock: clock)
        let route = Route("/a", headers: offline, options: RequestOptions(cache: CacheRule(timeToLive: 60)))
        XCTAssertThrowsError(try connect.request(route).wait(timeout: 5))
        _ = try get(connect, nil).get()
        clock.withLock { $0.addTimeInterval(1_000_000) }
        XCTAssertEqual(String(decoding: try connect.request(route).wait(timeout: 5), as: UTF8.self), #"{"version":1}"#)
        XCTAssertEqual(transport.requests.count, 1)
    }

    func testAResponseThatMustBeRevalidatedIsNeverServedStale() throws {
        // Given a response stored for 60 seconds that says must-revalidate, in memory and in a storage
        let clock = Guarded(Date(timeIntervalSince1970: 1_000))
        let storage = MemoryResponseStorage()
        let transport = FakeTransport()
        transport.stub(
            .get, "/a",
            with: (1...3).map {
                .json(string: #"{"version":\#($0)}"#, headers: ["Cache-Control": "max-age=60, Must-Revalidate"])
            })
        let (connect, _) = clockedClient(transport, clock: clock, storage: storage)
        _ = try get(connect, nil).get()
        XCTAssertEqual(try get(connect, "max-stale").get(), #"{"version":1}"#, "fresh: served")

        // When it is stale, then max-stale does not get it, from memory or from the storage
        clock.withLock { $0.addTimeInterval(61) }
        XCTAssertNotNil(failureOf(get(connect, "only-if-cached, max-stale")))
        let restarted = clockedClient(transport, clock: clock, storage: storage).0
        XCTAssertNotNil(failureOf(get(restarted, "only-if-cached, max-stale")))
        XCTAssertEqual(try get(connect, "max-stale").get(), #"{"version":2}"#)
    }

    func testAStaleResponseThatMustBeRevalidatedIsNotServedWhenTheNetworkFails() throws {
        // Given a stale stored response that says must-revalidate, with a validator, and a network that is down
        let clock = Guarded(Date(timeIntervalSince1970: 1_000))
        let transport = FakeTransport()
        let headers = ["Cache-Control": "max-age=60, must-revalidate", "ETag": "\"v1\""]
        transport.stub(
            .get, "/a",
            with: [.json(string: #"{"version":1}"#, headers: headers), .failure(URLError(.notConnectedToInternet))])
        let (connect, _) = clockedClient(transport, clock: clock)
        _ = try get(connect, nil).get()
        clock.withLock { $0.addTimeInterval(61) }

        // When a request accepting stale responses goes out, then it fails with the network's error, not served stale
        let failure = failureOf(get(connect, "max-stale"))
        XCTAssertEqual((failure?.underlyingError as? URLError)?.code, .notConnectedToInternet)
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v1\"")
    }

    /// The error of `result`, as a ``ConnectError``; `nil` for a success.
    private func failureOf(_ result: Result<String, Error>) -> ConnectError? {
        guard case .failure(let error) = result else { return nil }
        return error as? ConnectError
    }

    func testAStaleResponseStaysForARequestThatAcceptsIt() throws {
        // Given a response stored for 60 seconds, now stale, and a server that fails next (offline)
        let clock = Guarded(Date(timeIntervalSince1970: 1_000))
        let transport = FakeTransport()
        transport.stub(.get, "/a", with: [.json(string: #"{"version":1}"#), .status(503)])
        let (connect, _) = clockedClient(transport, clock: clock)
        _ = try get(connect, nil).get()
        clock.withLock { $0.addTimeInterval(100) }

        // When a plain request finds it stale and its fetch fails
        XCTAssertThrowsError(try get(connect, nil).get())

        // Then the offline fallback still has it
        XCTAssertEqual(try get(connect, "only-if-cached, max-stale").get(), #"{"version":1}"#)
        XCTAssertEqual(transport.requests.count, 2)
    }

    func testMinFreshAndMaxStaleTogetherAcceptTheStalenessLessTheFreshnessAsked() throws {
        // Given a response stored for 60 seconds
        let clock = Guarded(Date(timeIntervalSince1970: 1_000))
        let transport = FakeTransport()
        transport.stub(.get, "/a", with: .json(string: #"{"version":1}"#))
        let (connect, _) = clockedClient(transport, clock: clock)
        _ = try get(connect, nil).get()

        // Then min-fresh=10 with max-stale=60 accepts it 5 seconds before its expiry and 50 seconds after, no later
        let both = "only-if-cached, min-fresh=10, max-stale=60"
        clock.withLock { $0.addTimeInterval(55) }
        XCTAssertEqual(try get(connect, both).get(), #"{"version":1}"#)
        clock.withLock { $0.addTimeInterval(55) }
        XCTAssertEqual(try get(connect, both).get(), #"{"version":1}"#)
        clock.withLock { $0.addTimeInterval(1) }
        XCTAssertNotNil(failureOf(get(connect, both)))
        XCTAssertEqual(transport.requests.count, 1)
    }

    func testAMinFreshThatIsNotANumberIsMetByNothingStoredWhateverMaxStaleAccepts() throws {
        // Given a response stored for 60 seconds
        let clock = Guarded(Date(timeIntervalSince1970: 1_000))
        let transport = FakeTransport()
        transport.stub(.get, "/a", with: (1...2).map { .json(string: #"{"version":\#($0)}"#) })
        let (connect, _) = clockedClient(transport, clock: clock)
        _ = try get(connect, nil).get()

        // When a request accepts any staleness but asks a min-fresh it cannot say (not a number, negative, none),
        // then nothing stored meets it, fresh or stale, as with the longest max-stale it could write
        for minFresh in ["min-fresh=soon", "min-fresh=-1", "min-fresh", #"min-fresh="""#] {
            for maxStale in ["max-stale", "max-stale=2147483648"] {
                let asks = "only-if-cached, \(minFresh), \(maxStale)"
                XCTAssertNotNil(failureOf(get(connect, asks)), "fresh: \(asks)")
                clock.withLock { $0.addTimeInterval(1_000) }
                XCTAssertNotNil(failureOf(get(connect, asks)), "stale: \(asks)")
                clock.withLock { $0 = Date(timeIntervalSince1970: 1_000) }
            }
        }

        // Then a min-fresh that is a number, with max-stale, still accepts any staleness
        clock.withLock { $0.addTimeInterval(1_000) }
        XCTAssertEqual(try get(connect, "only-if-cached, min-fresh=10, max-stale").get(), #"{"version":1}"#)
        // And without only-if-cached, the request goes to the network
        XCTAssertEqual(try get(connect, "min-fresh=soon, max-stale").get(), #"{"version":2}"#)
        XCTAssertEqual(transport.requests.count, 2)
    }

    // MARK: - max-age (RFC 9111 §5.2.1.1)

    func testMaxAgeServesOnlyAResponseNoOlderThanItSays() throws {
        // Given a response stored for 60 seconds, 30 seconds ago, that was 10 seconds old when it came (Age)
        let clock = Guarded(Date(timeIntervalSince1970: 1_000))
        let transport = FakeTransport()
        transport.stub(
            .get, "/a",
            with: [
                .json(string: #"{"version":1}"#, headers: ["Age": "10"]), .json(string: #"{"version":2}"#),
                .json(string: #"{"version":3}"#),
            ])
        let (connect, _) = clockedClient(transport, clock: clock)
        _ = try get(connect, nil).get()
        clock.withLock { $0.addTimeInterval(30) }

        // When a request accepts 40 seconds of age or more, then it is served
        XCTAssertEqual(try get(connect, "max-age=40").get(), #"{"version":1}"#)
        XCTAssertEqual(try get(connect, #"Max-Age="3600""#).get(), #"{"version":1}"#)
        XCTAssertEqual(transport.requests.count, 1)

        // When one accepts less, then it goes to the network, and the answer (0 seconds old) is stored
        XCTAssertEqual(try get(connect, "max-age=39").get(), #"{"version":2}"#)
        XCTAssertEqual(try get(connect, "max-age=1").get(), #"{"version":2}"#)
        XCTAssertEqual(transport.requests.count, 2)

        // Then a stale response is not served to max-age alone, however young: max-stale must say so
        clock.withLock { $0.addTimeInterval(61) }
        XCTAssertNotNil(failureOf(get(connect, "only-if-cached, max-age=3600")))
        XCTAssertEqual(try get(connect, "only-if-cached, max-age=61, max-stale").get(), #"{"version":2}"#)
        XCTAssertNotNil(failureOf(get(connect, "only-if-cached, max-age=60, max-stale")))
        XCTAssertEqual(transport.requests.count, 2)
    }

    func testMaxAgeCountsTheAgeOfAResponseFromTheSecondTier() throws {
        // Given a response kept only in a storage, stored 30 seconds before a restart
        let clock = Guarded(Date(timeIntervalSince1970: 1_000))
        let storage = MemoryResponseStorage()
        let transport = FakeTransport()
        transport.stub(.get, "/a", with: (1...2).map { .json(string: #"{"version":\#($0)}"#) })
        _ = try get(clockedClient(transport, clock: clock, storage: storage).0, nil).get()
        clock.withLock { $0.addTimeInterval(30) }

        // Then a request accepting 30 seconds of age gets it from the storage; one accepting 29 does not
        XCTAssertEqual(
            try get(clockedClient(transport, clock: clock, storage: storage).0, "max-age=30").get(), #"{"version":1}"#)
        XCTAssertEqual(
            try get(clockedClient(transport, clock: clock, storage: storage).0, "max-age=29").get(), #"{"version":2}"#)
        XCTAssertEqual(transport.requests.count, 2)
    }

    func testAStoredResponseWithoutItsArrivalIsDatedByItsDateOrNeverAnswersMaxAge() throws {
        // Given a storage holding responses stored before `receivedAt` existed: one with a `Date` 30 seconds ago,
        // one with none
        let clock = Guarded(Date(timeIntervalSince1970: 1_000_030))
        let storage = MemoryResponseStorage()
        let transport = FakeTransport()
        transport.stub(.get, "/a", with: .json(string: #"{"version":2}"#))
        let (connect, cache) = clockedClient(transport, clock: clock, storage: storage)
        let url = URL(string: "https://api.example.com/a")!
        let key = ResponseCache.key(for: URLRequest(url: url), rule: CacheRule(timeToLive: 60))
        func store(date: String?) {
            let headers = date.map { [StoredResponse.HeaderPair(name: "Date", value: $0)] } ?? []
            storage.store(
                StoredResponse(
                    url: url, method: "GET", statusCode: 200, headers: headers, body: Data(#"{"version":1}"#.utf8),
                    expiry: Date(timeIntervalSince1970: 1_000_060), varying: []),
                forKey: key)
        }
        store(date: "Mon, 12 Jan 1970 13:46:40 GMT")  // 1,000,000 seconds after 1970

        // Then its Date tells its age
        XCTAssertEqual(try get(connect, "only-if-cached, max-age=30").get(), #"{"version":1}"#)
        cache.removeAll()
        store(date: "Mon, 12 Jan 1970 13:46:40 GMT")
        XCTAssertNotNil(failureOf(get(connect, "only-if-cached, max-age=29")))

        // When it has no Date, then its age is unknown: it answers a plain request, never one with max-age
        cache.removeAll()
        store(date: nil)
        XCTAssertNotNil(failureOf(get(connect, "only-if-cached, max-age=3600")))
        XCTAssertEqual(try get(connect, "only-if-cached").get(), #"{"version":1}"#)
        XCTAssertEqual(transport.requests.count, 0)
    }

    func testAStoredResponseKeepsItsArrivalThroughCodableAndDecodesWithoutIt() throws {
        // Given a stored response with its arrival
        var stored = StoredResponse(
            url: URL(string: "https://api.example.com/a")!, method: "GET", statusCode: 200, headers: [],
            body: Data("{}".utf8), expiry: Date(timeIntervalSince1970: 2_000), varying: [])
        stored.receivedAt = Date(timeIntervalSince1970: 1_000)

        // Then it survives encoding, and an encoding from before the property decodes with none
        let data = try JSONEncoder().encode(stored)
        XCTAssertEqual(try JSONDecoder().decode(StoredResponse.self, from: data), stored)
        var object = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        object["receivedAt"] = nil
        let older = try JSONDecoder().decode(StoredResponse.self, from: JSONSerialization.data(withJSONObject: object))
        XCTAssertNil(older.receivedAt)
        XCTAssertEqual(older.expiry, stored.expiry)
    }
}
