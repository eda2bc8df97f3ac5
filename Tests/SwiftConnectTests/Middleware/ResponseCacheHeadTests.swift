import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// RFC 9111 §4.3.5: a `200` answer to a HEAD tells the ``ResponseCache`` about the GET response it stores for the same
/// URL: when the HEAD's `ETag`, `Last-Modified` or `Content-Length` differs from the stored response's, the stored
/// body is not the resource's any more, and is not served again; when they agree, the HEAD's header fields update the
/// stored response's, as a 304's do, and with them its freshness.
final class ResponseCacheHeadTests: XCTestCase {
    private let rule = RequestOptions(cache: CacheRule(timeToLive: 300))

    /// A transport whose GETs of `/a` answer `{"version":N}` with `getHeaders(N)`, N counting up, and whose HEADs of
    /// `/a` answer `head` in turn.
    private func server(
        getHeaders: @escaping (Int) -> [String: String] = { ["ETag": #""v\#($0)""#] }, head: [FakeResponse]
    ) -> FakeTransport {
        let transport = FakeTransport()
        transport.stub(.get, "/a", with: (1...4).map { .json(string: #"{"version":\#($0)}"#, headers: getHeaders($0)) })
        transport.stub(.head, "/a", with: head)
        return transport
    }

    private func client(_ transport: FakeTransport, cache: ResponseCache = ResponseCache()) -> Connect {
        Connect(
            transport: transport, retryPolicy: nil, responseCache: cache,
            configuration: ServerConfiguration(host: "api.example.com"))
    }

    /// The body of `GET /a` under the cache rule, with `headers`.
    private func get(_ connect: Connect, headers: [HTTPHeader] = []) throws -> String {
        String(
            decoding: try connect.request(Route("/a", headers: headers), options: rule).wait(timeout: 5), as: UTF8.self)
    }

    /// `HEAD /a` with `headers`, under the cache rule unless `cached` is `false`, or under `options` when given.
    private func head(
        _ connect: Connect, headers: [HTTPHeader] = [], cached: Bool = true, options: RequestOptions? = nil
    ) throws {
        let route = Route("/a", method: .head, headers: headers)
        _ = try connect.response(for: route, options: options ?? (cached ? rule : RequestOptions())).wait(timeout: 5)
    }

    /// The response to `GET /a` under the cache rule.
    private func getResponse(_ connect: Connect) throws -> ConnectResponse {
        try connect.response(for: Route("/a"), options: rule).wait(timeout: 5)
    }

    /// How many GETs reached `transport`.
    private func gets(_ transport: FakeTransport) -> Int {
        transport.requests.filter { $0.httpMethod == "GET" }.count
    }

    func testAHeadWithAnotherETagKeepsTheStoredGetFromBeingServed() throws {
        // Given a stored GET response with ETag "v1"
        let transport = server(head: [.status(200, headers: ["ETag": #""v2""#])])
        let connect = client(transport)
        XCTAssertEqual(try get(connect), #"{"version":1}"#)

        // When a HEAD of its URL is answered with ETag "v2"
        try head(connect)

        // Then the next GET goes to the network, and its answer is stored
        XCTAssertEqual(try get(connect), #"{"version":2}"#)
        XCTAssertEqual(try get(connect), #"{"version":2}"#)
        XCTAssertEqual(gets(transport), 2)
    }

    func testAHeadWithAnotherLastModifiedOrLengthKeepsTheStoredGetFromBeingServed() throws {
        let monday = "Mon, 01 Jan 2024 00:00:00 GMT"
        let tuesday = "Tue, 02 Jan 2024 00:00:00 GMT"
        for answer in [
            ["Last-Modified": tuesday],
            ["Last-Modified": monday, "Content-Length": "99"],
            ["ETag": #""v1""#, "Content-Length": "99"],
        ] {
            // Given a stored GET response with Last-Modified on Monday, ETag "v1" and a body of 13 bytes
            let transport = server(
                getHeaders: { ["Last-Modified": monday, "ETag": #""v\#($0)""#, "Content-Length": "13"] },
                head: [.status(200, headers: answer)])
            let connect = client(transport)
            XCTAssertEqual(try get(connect), #"{"version":1}"#)

            // When a HEAD is answered with another Last-Modified, or another Content-Length
            try head(connect)

            // Then the next GET goes to the network
            XCTAssertEqual(try get(connect), #"{"version":2}"#, "\(answer)")
        }
    }

    func testAHeadThatAgreesWithTheStoredGetLeavesItServed() throws {
        for answer in [
            ["ETag": #""v1""#, "Content-Length": "13"],
            ["ETag": #"W/"v1""#],
            [:],
            ["Content-Type": "text/plain"],
        ] {
            // Given a stored GET response with ETag "v1" and a body of 13 bytes
            let transport = server(head: [.status(200, headers: answer)])
            let connect = client(transport)
            XCTAssertEqual(try get(connect), #"{"version":1}"#)

            // When a HEAD is answered with the same validators and length, or with none
            try head(connect)

            // Then the stored response is still served
            XCTAssertEqual(try get(connect), #"{"version":1}"#, "\(answer)")
            XCTAssertEqual(gets(transport), 1, "\(answer)")
        }
    }

    func testAHeadAnsweredOtherwiseThan200LeavesTheStoredGet() throws {
        // Given a stored GET response with ETag "v1"
        let transport = server(head: [.status(204, headers: ["ETag": #""v2""#])])
        let connect = client(transport)
        XCTAssertEqual(try get(connect), #"{"version":1}"#)

        // When a HEAD is answered with another status than 200 (RFC 9111 §4.3.5 speaks of a 200 only)
        try head(connect)

        // Then the stored response is still served
        XCTAssertEqual(try get(connect), #"{"version":1}"#)
        XCTAssertEqual(gets(transport), 1)
    }

    func testAHeadAnswered404Or410KeepsTheStoredGetFromBeingServed() throws {
        // A GET answered 404 or 410 removes what is stored for it: a HEAD's is the same word that the resource is gone.
        for status in [404, 410] {
            for cached in [true, false] {
                // Given a stored GET response, in memory and in a storage
                let storage = MemoryResponseStorage()
                let transport = server(head: [.status(status)])
                let connect = client(transport, cache: ResponseCache(storage: storage))
                XCTAssertEqual(try get(connect), #"{"version":1}"#)

                // When a HEAD of its URL, under the cache rule or not, is answered 404 or 410
                XCTAssertThrowsError(try head(connect, cached: cached))

                // Then a cache started again on the storage goes to the network, and this one's memory serves nothing
                // old (it reads the storage, which now holds the new answer)
                let restarted = client(transport, cache: ResponseCache(storage: storage))
                XCTAssertEqual(try get(restarted), #"{"version":2}"#, "\(status), rule: \(cached)")
                XCTAssertEqual(try get(connect), #"{"version":2}"#, "\(status), rule: \(cached)")
                XCTAssertEqual(gets(transport), 2, "\(status), rule: \(cached)")
            }
        }
    }

    func testAHeadAnswered404UnderASharedCustomKeyRemovesTheStoredGetFromMemoryToo() throws {
        // Given a GET response stored under a custom key that HEAD and GET share, in memory and in a storage
        let storage = MemoryResponseStorage()
        let shared = RequestOptions(cache: CacheRule(timeToLive: 300, key: "a"))
        let transport = server(head: [.status(404)])
        let connect = client(transport, cache: ResponseCache(storage: storage))
        let getA = { try connect.request(Route("/a"), options: shared).wait(timeout: 5) }
        XCTAssertEqual(String(decoding: try getA(), as: UTF8.self), #"{"version":1}"#)

        // When a HEAD under that key is answered 404
        XCTAssertThrowsError(try head(connect, options: shared))

        // Then memory does not serve the GET response the storage lost: the next GET goes to the network
        XCTAssertEqual(String(decoding: try getA(), as: UTF8.self), #"{"version":2}"#)
        XCTAssertEqual(gets(transport), 2)
    }

    /// Under a custom key HEAD and GET share, a HEAD's `200` that is not stored (`no-store`, `Vary: *`) is checked
    /// against the GET response stored there as any HEAD's is (RFC 9111 §4.3.5): memory and the storage lose it
    /// together, or keep it together, never one without the other.
    func testAHeadAnsweredUnstorableUnderASharedCustomKeyTreatsMemoryAndStorageAlike() throws {
        let answers: [[String: String]] = [
            ["ETag": #""v1""#, "Cache-Control": "no-store"], ["ETag": #""v2""#, "Cache-Control": "no-store"],
            ["ETag": #""v2""#, "Vary": "*"], ["ETag": #""v1""#, "Vary": "*"],
        ]
        for headers in answers {
            // Given a GET response stored under a custom key that HEAD and GET share, in memory and in a storage
            let storage = MemoryResponseStorage()
            let shared = RequestOptions(cache: CacheRule(timeToLive: 300, key: "a"))
            let transport = server(head: [.status(200, headers: headers)])
            let connect = client(transport, cache: ResponseCache(storage: storage))
            let getA = { (connect: Connect) in
                String(decoding: try connect.request(Route("/a"), options: shared).wait(timeout: 5), as: UTF8.self)
            }
            XCTAssertEqual(try getA(connect), #"{"version":1}"#)

            // When a HEAD under that key is answered 200 with fields that keep it out of the cache
            try head(connect, options: shared)

            // Then neither memory nor the storage (read when memory has nothing) serves the stored GET: it goes to
            // the network, and a cache started again on the storage is served its answer
            XCTAssertEqual(try getA(connect), #"{"version":2}"#, "\(headers)")
            XCTAssertEqual(gets(transport), 2, "\(headers)")
            XCTAssertEqual(try getA(client(transport, cache: ResponseCache(storage: storage))), #"{"version":2}"#)
            XCTAssertEqual(gets(transport), 2, "\(headers)")
        }
    }

    /// The same for a HEAD that asks for nothing to be stored (`Cache-Control: no-store`): its 404, or its 200 with
    /// another `ETag`, removes the GET response stored under the shared key, from memory and from the storage.
    func testAHeadAskingNoStoreUnderASharedCustomKeyChecksTheStoredGet() throws {
        for answer in [FakeResponse.status(404), .status(410), .status(200, headers: ["ETag": #""v2""#])] {
            let storage = MemoryResponseStorage()
            let shared = RequestOptions(cache: CacheRule(timeToLive: 300, key: "a"))
            let transport = server(head: [answer])
            let connect = client(transport, cache: ResponseCache(storage: storage))
            let getA = { (connect: Connect) in
                String(decoding: try connect.request(Route("/a"), options: shared).wait(timeout: 5), as: UTF8.self)
            }
            XCTAssertEqual(try getA(connect), #"{"version":1}"#)

            _ = try? head(connect, headers: [HTTPHeader(name: "Cache-Control", value: "no-store")], options: shared)

            XCTAssertEqual(try getA(connect), #"{"version":2}"#, "\(answer)")
            XCTAssertEqual(gets(transport), 2, "\(answer)")
            XCTAssertEqual(try getA(client(transport, cache: ResponseCache(storage: storage))), #"{"version":2}"#)
            XCTAssertEqual(gets(transport), 2, "\(answer)")
        }
    }

    /// An answer of another method under a shared custom key that is not stored (a POST search answered `no-store`)
    /// leaves the GET response stored there in memory, and so in the storage: a cache started again serves it too.
    func testAnUnstoredAnswerOfAnotherMethodUnderASharedKeyLeavesTheStorageAsMemory() throws {
        let storage = MemoryResponseStorage()
        let shared = RequestOptions(cache: CacheRule(timeToLive: 300, key: "a"))
        let transport = server(head: [])
        transport.stub(.post, "/a", with: .json(string: "{}", headers: ["Cache-Control": "no-store"]))
        let connect = client(transport, cache: ResponseCache(storage: storage))
        let getA = { (connect: Connect) in
            String(decoding: try connect.request(Route("/a"), options: shared).wait(timeout: 5), as: UTF8.self)
        }
        XCTAssertEqual(try getA(connect), #"{"version":1}"#)

        _ = try connect.request(Route("/a", method: .post), options: shared).wait(timeout: 5)

        XCTAssertEqual(try getA(connect), #"{"version":1}"#)
        XCTAssertEqual(try getA(client(transport, cache: ResponseCache(storage: storage))), #"{"version":1}"#)
        XCTAssertEqual(gets(transport), 1)
    }

    func testAHeadAnsweredWithAnotherErrorLeavesTheStoredGet() throws {
        // Given a stored GET response
        let transport = server(head: [.status(503), .status(401)])
        let connect = client(transport)
        XCTAssertEqual(try get(connect), #"{"version":1}"#)

        // When HEADs of its URL are answered 503 and 401 (they say nothing of the resource)
        XCTAssertThrowsError(try head(connect))
        XCTAssertThrowsError(try head(connect))

        // Then the stored response is still served
        XCTAssertEqual(try get(connect), #"{"version":1}"#)
        XCTAssertEqual(gets(transport), 1)
    }

    func testAHeadTheCacheDoesNotStoreStillKeepsTheStoredGetFromBeingServed() throws {
        // Given a stored GET response with ETag "v1"
        let transport = server(head: [.status(200, headers: ["ETag": #""v2""#])])
        let connect = client(transport)
        XCTAssertEqual(try get(connect), #"{"version":1}"#)

        // When a HEAD without a cache rule is answered with ETag "v2"
        try head(connect, cached: false)

        // Then the next GET goes to the network
        XCTAssertEqual(try get(connect), #"{"version":2}"#)
        XCTAssertEqual(gets(transport), 2)
    }

    func testAHeadForAnotherVariantLeavesTheStoredGet() throws {
        // Given a stored GET response that varies on Accept, asked with Accept: application/json
        let transport = server(
            getHeaders: { ["ETag": #""v\#($0)""#, "Vary": "Accept"] },
            head: [.status(200, headers: ["ETag": #""csv""#, "Vary": "Accept"])])
        let connect = client(transport)
        let json = [HTTPHeader(name: "Accept", value: "application/json")]
        XCTAssertEqual(try get(connect, headers: json), #"{"version":1}"#)

        // When a HEAD asking for text/csv is answered with another ETag (it could not have chosen that response)
        try head(connect, headers: [HTTPHeader(name: "Accept", value: "text/csv")])

        // Then the stored response is still served to its variant
        XCTAssertEqual(try get(connect, headers: json), #"{"version":1}"#)
        XCTAssertEqual(gets(transport), 1)
    }

    func testAHeadWithAnotherETagKeepsTheStorageRecordFromBeingServed() throws {
        // Given a GET response kept by a storage, read by a cache started again (nothing in its memory)
        let storage = MemoryResponseStorage()
        let transport = server(head: [.status(200, headers: ["ETag": #""v2""#])])
        XCTAssertEqual(try get(client(transport, cache: ResponseCache(storage: storage))), #"{"version":1}"#)
        let restarted = client(transport, cache: ResponseCache(storage: storage))

        // When a HEAD is answered with another ETag
        try head(restarted)

        // Then the next GET, by this cache or by one started again, goes to the network
        XCTAssertEqual(try get(restarted), #"{"version":2}"#)
        XCTAssertEqual(gets(transport), 2)
        XCTAssertEqual(try get(client(transport, cache: ResponseCache(storage: storage))), #"{"version":2}"#)
        XCTAssertEqual(gets(transport), 2)
    }

    /// A HEAD that agrees but whose fields keep the updated response out of the cache (`no-store`, `Vary: *`) removes
    /// a GET response only the storage has, as it removes one memory has
    /// (`testAHeadThatAgreesButMayNotBeStoredKeepsTheStoredGetFromBeingServed`).
    func testAHeadThatAgreesButMayNotBeStoredKeepsTheStorageRecordFromBeingServed() throws {
        for field in [HTTPHeader(name: "Cache-Control", value: "no-store"), HTTPHeader(name: "Vary", value: "*")] {
            let storage = MemoryResponseStorage()
            let transport = server(head: [.status(200, headers: ["ETag": #""v1""#, field.name: field.value])])
            XCTAssertEqual(try get(client(transport, cache: ResponseCache(storage: storage))), #"{"version":1}"#)
            let restarted = client(transport, cache: ResponseCache(storage: storage))

            try head(restarted)

            XCTAssertEqual(try get(restarted), #"{"version":2}"#, "\(field.name): \(field.value)")
            XCTAssertEqual(gets(transport), 2, "\(field.name): \(field.value)")
        }
    }

    /// Unless a redirect led the HEAD to another resource: its fields update nothing, in the storage as in memory.
    func testAHeadThatAgreesButMayNotBeStoredFromAnotherResourceLeavesTheStorageRecord() throws {
        let other = try XCTUnwrap(URL(string: "https://api.example.com/b"))
        let redirectedHead = FakeResponse.handler { request in
            let answer = ConnectResponse(
                request: request, statusCode: 200, headers: ["Cache-Control": "no-store"], data: Data(), url: other)
            return .success(answer!)
        }
        let storage = MemoryResponseStorage()
        let transport = server(head: [redirectedHead])
        XCTAssertEqual(try get(client(transport, cache: ResponseCache(storage: storage))), #"{"version":1}"#)
        let restarted = client(transport, cache: ResponseCache(storage: storage))

        try head(restarted)

        XCTAssertEqual(try get(restarted), #"{"version":1}"#)
        XCTAssertEqual(gets(transport), 1)
    }

    // MARK: - Updating the stored GET (RFC 9111 §4.3.5, §3.2)

    func testAHeadThatAgreesRefreshesTheStoredGetsHeadersAndFreshness() throws {
        // Given a stored GET response with ETag "v1", fresh for 60 seconds, now stale
        let clock = ManualClock()
        let transport = server(
            getHeaders: { ["ETag": #""v\#($0)""#, "Cache-Control": "max-age=60"] },
            head: [.status(200, headers: ["ETag": #""v1""#, "Cache-Control": "max-age=120", "X-Version": "2"])])
        let connect = client(transport, cache: ResponseCache(now: { clock.now }))
        XCTAssertEqual(try get(connect), #"{"version":1}"#)
        clock.advance(100)

        // When a HEAD of its URL is answered with the same ETag, a new max-age and another field
        try head(connect)

        // Then the stored response is served fresh, with the HEAD's fields, for the HEAD's max-age from now
        let served = try getResponse(connect)
        XCTAssertEqual(String(decoding: served.data, as: UTF8.self), #"{"version":1}"#)
        XCTAssertEqual(served.header("X-Version"), "2")
        XCTAssertEqual(served.header("Cache-Control"), "max-age=120")
        XCTAssertEqual(gets(transport), 1)
        clock.advance(121)
        XCTAssertEqual(try get(connect), #"{"version":2}"#)
        XCTAssertEqual(gets(transport), 2)
    }

    /// A HEAD that a redirect led to another resource (`/a` now answers `302` to `/b`) says nothing about `/a`'s stored
    /// GET: its `200` merged `/b`'s fields into it and served it fresh again, as a 304 from there is refused to do.
    func testAHeadAnsweredByAnotherResourceRefreshesNothing() throws {
        // Given a stored GET response with ETag "v1", fresh for 60 seconds, now stale
        let clock = ManualClock()
        let other = try XCTUnwrap(URL(string: "https://api.example.com/b"))
        let redirectedHead = FakeResponse.handler { request in
            let answer = ConnectResponse(
                request: request, statusCode: 200,
                headers: ["ETag": #""v1""#, "Cache-Control": "max-age=3600", "Content-Type": "text/html"], data: Data(),
                url: other)
            return .success(answer!)
        }
        let transport = server(
            getHeaders: { ["ETag": #""v\#($0)""#, "Cache-Control": "max-age=60"] }, head: [redirectedHead])
        let connect = client(transport, cache: ResponseCache(now: { clock.now }))
        XCTAssertEqual(try get(connect), #"{"version":1}"#)
        clock.advance(100)

        // When a HEAD of its URL is followed to /b, which answers with the same ETag and a long max-age
        try head(connect)

        // Then the stored GET is neither refreshed nor relabelled: the next GET goes to the network
        XCTAssertEqual(try get(connect), #"{"version":2}"#)
        XCTAssertEqual(gets(transport), 2)
        XCTAssertNotEqual(try getResponse(connect).header("Content-Type"), "text/html")
    }

    /// One that contradicts the stored GET still removes it: a GET of the URL would not be answered so now.
    func testAHeadAnsweredByAnotherResourceThatContradictsStillRemovesTheStoredGet() throws {
        let other = try XCTUnwrap(URL(string: "https://api.example.com/b"))
        let redirectedHead = FakeResponse.handler { request in
            let answer = ConnectResponse(
                request: request, statusCode: 200, headers: ["ETag": #""v9""#], data: Data(), url: other)
            return .success(answer!)
        }
        let transport = server(
            getHeaders: { ["ETag": #""v\#($0)""#, "Cache-Control": "max-age=3600"] }, head: [redirectedHead])
        let connect = client(transport)
        XCTAssertEqual(try get(connect), #"{"version":1}"#)

        try head(connect)

        XCTAssertEqual(try get(connect), #"{"version":2}"#)
        XCTAssertEqual(gets(transport), 2)
    }

    /// Nor does a HEAD answered directly refresh a stored GET response that a redirect led to another resource.
    func testAHeadRefreshesNoStoredGetThatARedirectLedElsewhere() throws {
        let clock = ManualClock()
        let other = try XCTUnwrap(URL(string: "https://api.example.com/b"))
        let versions = Guarded(0)
        let transport = FakeTransport()
        let redirectedGet = FakeResponse.handler { request in
            let version = versions.withLock { count -> Int in
                count += 1
                return count
            }
            let answer = ConnectResponse(
                request: request, statusCode: 200, headers: ["ETag": #""v1""#, "Cache-Control": "max-age=60"],
                data: Data("b\(version)".utf8), url: other)
            return .success(answer!)
        }
        transport.stub(.get, "/a", with: redirectedGet)
        transport.stub(.head, "/a", with: [.status(200, headers: ["ETag": #""v1""#, "Cache-Control": "max-age=3600"])])
        let connect = client(transport, cache: ResponseCache(now: { clock.now }))
        XCTAssertEqual(try get(connect), "b1")
        clock.advance(100)

        try head(connect)

        XCTAssertEqual(try get(connect), "b2")
        XCTAssertEqual(gets(transport), 2)
    }

    func testAHeadRefreshLastsNoLongerThanTheStoredGetsRule() throws {
        // Given a GET response stored under a rule of 300 seconds, now stale
        let clock = ManualClock()
        let transport = server(head: [.status(200, headers: ["ETag": #""v1""#, "Cache-Control": "max-age=3600"])])
        let connect = client(transport, cache: ResponseCache(now: { clock.now }))
        XCTAssertEqual(try get(connect), #"{"version":1}"#)
        clock.advance(301)

        // When a HEAD under a rule of an hour is answered with the same ETag and max-age=3600
        try head(connect, options: RequestOptions(cache: CacheRule(timeToLive: 3600)))

        // Then the GET is fresh again for its own rule's 300 seconds, not for the HEAD's rule or max-age
        XCTAssertEqual(try get(connect), #"{"version":1}"#)
        clock.advance(301)
        XCTAssertEqual(try get(connect), #"{"version":2}"#)
        XCTAssertEqual(gets(transport), 2)
    }

    func testAHeadThatAgreesButMayNotBeStoredKeepsTheStoredGetFromBeingServed() throws {
        // `no-store` forbids storing the updated response; `Vary: *` makes it answer no request (RFC 9111 §4.1).
        for field in [HTTPHeader(name: "Cache-Control", value: "no-store"), HTTPHeader(name: "Vary", value: "*")] {
            // Given a stored GET response with ETag "v1"
            let transport = server(head: [.status(200, headers: ["ETag": #""v1""#, field.name: field.value])])
            let connect = client(transport)
            XCTAssertEqual(try get(connect), #"{"version":1}"#)

            // When a HEAD is answered with the same ETag and the field
            try head(connect)

            // Then the next GET goes to the network
            XCTAssertEqual(try get(connect), #"{"version":2}"#, "\(field.name): \(field.value)")
            XCTAssertEqual(gets(transport), 2, "\(field.name): \(field.value)")
        }
    }

    func testAHeadThatAgreesWithANewVaryServesTheStoredGetToTheHeadsVariantOnly() throws {
        // Given a stored GET response with ETag "v1" that varies on nothing
        let transport = server(head: [.status(200, headers: ["ETag": #""v1""#, "Vary": "Accept-Language"])])
        let connect = client(transport)
        XCTAssertEqual(try get(connect), #"{"version":1}"#)

        // When a HEAD asking for French is answered with the same ETag and Vary: Accept-Language
        try head(connect, headers: [HTTPHeader(name: "Accept-Language", value: "fr")])

        // Then the stored response answers a GET asking for French, and one asking for German goes to the network
        XCTAssertEqual(try get(connect, headers: [HTTPHeader(name: "accept-language", value: "fr")]), #"{"version":1}"#)
        XCTAssertEqual(try get(connect, headers: [HTTPHeader(name: "Accept-Language", value: "de")]), #"{"version":2}"#)
        XCTAssertEqual(gets(transport), 2)
    }

    func testAHeadRefreshReachesTheStorage() throws {
        // Given a stored GET response, fresh for 60 seconds, in memory and in a storage, now stale
        let clock = ManualClock()
        let storage = MemoryResponseStorage()
        let transport = server(
            getHeaders: { ["ETag": #""v\#($0)""#, "Cache-Control": "max-age=60"] },
            head: [.status(200, headers: ["ETag": #""v1""#, "Cache-Control": "max-age=120"])])
        let connect = client(transport, cache: ResponseCache(storage: storage, now: { clock.now }))
        XCTAssertEqual(try get(connect), #"{"version":1}"#)
        clock.advance(100)

        // When a HEAD is answered with the same ETag and a new max-age
        try head(connect)

        // Then a cache started again on the storage serves the refreshed response without the network
        let restarted = client(transport, cache: ResponseCache(storage: storage, now: { clock.now }))
        XCTAssertEqual(try get(restarted), #"{"version":1}"#)
        XCTAssertEqual(gets(transport), 1)
    }

    // MARK: - A HEAD is not answered from the stored GET

    func testAHeadGoesToTheNetworkWhileTheStoredGetIsFresh() throws {
        // Given a fresh stored GET response with ETag "v1"
        let transport = server(head: [.status(200, headers: ["ETag": #""v1""#, "X-Answered-By": "head"])])
        let connect = client(transport)
        XCTAssertEqual(try get(connect), #"{"version":1}"#)

        // When a HEAD of its URL is made under the same rule, twice
        let route = Route("/a", method: .head)
        let first = try connect.response(for: route, options: rule).wait(timeout: 5)
        let second = try connect.response(for: route, options: rule).wait(timeout: 5)

        // Then the first is the server's answer to a HEAD (no body), the second the HEAD response stored for it
        XCTAssertEqual(transport.requests.filter { $0.httpMethod == "HEAD" }.count, 1)
        for answer in [first, second] {
            XCTAssertEqual(answer.header("X-Answered-By"), "head")
            XCTAssertTrue(answer.data.isEmpty)
        }
        XCTAssertEqual(gets(transport), 1)
    }
}
