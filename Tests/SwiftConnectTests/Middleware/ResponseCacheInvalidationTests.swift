import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// RFC 9111 §4.4: a non-error answer to an unsafe request (any method but GET, HEAD, OPTIONS and TRACE) removes
/// what the ``ResponseCache`` stored for its URL, and for the same-origin URLs its `Location` and
/// `Content-Location` name, whatever the keys and credentials they were stored under.
final class ResponseCacheInvalidationTests: XCTestCase {
    private let rule = RequestOptions(cache: CacheRule(timeToLive: 300))

    /// A transport whose GETs of `/items/1`, `/items/2` and `/items/3` answer `{"version":N}`, N counting up per
    /// path, and whose `method` requests to `path` answer `write`.
    private func server(_ writes: [(HTTPMethod, String, [FakeResponse])] = []) -> FakeTransport {
        let transport = FakeTransport()
        for path in ["/items/1", "/items/2", "/items/3"] {
            transport.stub(.get, path, with: (1...5).map { .json(string: #"{"version":\#($0)}"#) })
        }
        for (method, path, answers) in writes { transport.stub(method, path, with: answers) }
        return transport
    }

    private func client(_ transport: any Transport, cache: ResponseCache = ResponseCache()) -> Connect {
        Connect(
            transport: transport, retryPolicy: nil, responseCache: cache,
            configuration: ServerConfiguration(host: "api.example.com"))
    }

    /// The body of a cached GET of `path`.
    private func get(_ path: String, on connect: Connect, headers: [HTTPHeader] = [], rule: RequestOptions? = nil)
        throws -> String
    {
        let data = try connect.request(Route(path, headers: headers), options: rule ?? self.rule).wait(timeout: 5)
        return String(decoding: data, as: UTF8.self)
    }

    /// How many GETs reached `transport`.
    private func gets(_ transport: FakeTransport) -> Int {
        transport.requests.filter { $0.httpMethod == "GET" }.count
    }

    func testASuccessfulWriteRemovesTheStoredResponseOfItsURL() throws {
        // Given a stored response to GET /items/1
        let transport = server([(.put, "/items/1", [.status(200)])])
        let connect = client(transport)
        XCTAssertEqual(try get("/items/1", on: connect), #"{"version":1}"#)
        XCTAssertEqual(try get("/items/1", on: connect), #"{"version":1}"#)

        // When a PUT to it is answered 200
        XCTAssertNoThrow(try connect.request(Route("/items/1", method: .put)).wait(timeout: 5))

        // Then the next GET goes to the network
        XCTAssertEqual(try get("/items/1", on: connect), #"{"version":2}"#)
        XCTAssertEqual(gets(transport), 2)
    }

    func testAFailedWriteLeavesTheStoredResponse() throws {
        // Given a stored response to GET /items/1
        let transport = server([(.put, "/items/1", [.status(500)])])
        let connect = client(transport)
        _ = try get("/items/1", on: connect)

        // When a PUT to it is answered 500
        XCTAssertThrowsError(try connect.request(Route("/items/1", method: .put)).wait(timeout: 5))

        // Then the stored response is still served
        XCTAssertEqual(try get("/items/1", on: connect), #"{"version":1}"#)
        XCTAssertEqual(gets(transport), 1)
    }

    func testEveryUnsafeMethodRemovesAndNoSafeOneDoes() throws {
        let unsafe: [HTTPMethod] = [.post, .put, .patch, .delete, "PURGE"]
        for method in unsafe + [.options, .trace] {
            // Given a stored response to GET /items/1
            let transport = server([(method, "/items/1", [.status(204)])])
            let connect = client(transport)
            _ = try get("/items/1", on: connect)

            // When a request of `method` to it succeeds
            XCTAssertNoThrow(try connect.request(Route("/items/1", method: method)).wait(timeout: 5))

            // Then it is fetched again after an unsafe method only
            _ = try get("/items/1", on: connect)
            XCTAssertEqual(gets(transport), unsafe.contains(method) ? 2 : 1, "\(method)")
        }
    }

    /// RFC 9111 §4.4 asks for a non-error status: a redirect answering a write (a POST's `303 See Other`) removes
    /// too, although the call fails with its 3xx; a 4xx does not.
    func testAWriteAnsweredWithARedirectRemovesAndOneAnswered4xxDoesNot() throws {
        for (status, removes) in [(303, true), (404, false)] {
            // Given a stored response to GET /items/1
            let transport = server([(.post, "/items/1", [.status(status, headers: ["Location": "/items/1"])])])
            let connect = client(transport)
            _ = try get("/items/1", on: connect)

            // When a POST to it is answered `status` (an error to the caller either way)
            XCTAssertThrowsError(try connect.request(Route("/items/1", method: .post)).wait(timeout: 5))

            // Then the next GET goes to the network after the redirect only
            _ = try get("/items/1", on: connect)
            XCTAssertEqual(gets(transport), removes ? 2 : 1, "\(status)")
        }
    }

    func testTheResponsesOfEveryUserAndKeyForTheURLAreRemoved() throws {
        // Given /items/1 stored for two users, and under a custom key
        let transport = server([(.delete, "/items/1", [.status(204)])])
        let cache = ResponseCache()
        let connect = client(transport, cache: cache)
        let keyed = RequestOptions(cache: CacheRule(timeToLive: 300, key: "item"))
        _ = try get("/items/1", on: connect, headers: [.authorization(bearerToken: "alice")])
        _ = try get("/items/1", on: connect, headers: [.authorization(bearerToken: "bob")])
        _ = try get("/items/1", on: connect, rule: keyed)
        XCTAssertEqual(cache.count, 3)

        // When a DELETE without credentials succeeds
        XCTAssertNoThrow(try connect.request(Route("/items/1", method: .delete)).wait(timeout: 5))

        // Then none is served any more
        XCTAssertEqual(cache.count, 0)
        _ = try get("/items/1", on: connect, headers: [.authorization(bearerToken: "alice")])
        _ = try get("/items/1", on: connect, headers: [.authorization(bearerToken: "bob")])
        _ = try get("/items/1", on: connect, rule: keyed)
        XCTAssertEqual(gets(transport), 6)
    }

    func testLocationAndContentLocationOnTheSameOriginAreRemovedToo() throws {
        // Given /items/1, /items/2 and another origin's /items/3 stored
        let elsewhere = try XCTUnwrap(URL(string: "https://other.example.com"))
        let created: [FakeResponse] = [
            .status(201, headers: ["Location": "/items/1", "Content-Location": "https://API.example.com:443/items/2"]),
            .status(201, headers: ["Location": "https://other.example.com/items/3"]),
        ]
        let transport = server([(.post, "/items", created)])
        let connect = client(transport)
        _ = try get("/items/1", on: connect)
        _ = try get("/items/2", on: connect)
        _ = try connect.request(Route("/items/3", baseURL: elsewhere), options: rule).wait(timeout: 5)

        // When two POSTs succeed, naming the first two and the other origin's
        XCTAssertNoThrow(try connect.request(Route("/items", method: .post)).wait(timeout: 5))
        XCTAssertNoThrow(try connect.request(Route("/items", method: .post)).wait(timeout: 5))

        // Then the first two are fetched again, and the other origin's is still served
        XCTAssertEqual(try get("/items/1", on: connect), #"{"version":2}"#)
        XCTAssertEqual(try get("/items/2", on: connect), #"{"version":2}"#)
        let other = try connect.request(Route("/items/3", baseURL: elsewhere), options: rule).wait(timeout: 5)
        XCTAssertEqual(String(decoding: other, as: UTF8.self), #"{"version":1}"#)
        XCTAssertEqual(gets(transport), 5)
    }

    /// A write whose answer is streamed steps past the cache, yet removes what is stored for its URL.
    func testAStreamedWriteRemovesTheStoredResponseOfItsURL() async throws {
        // Given a stored response to GET /items/1
        let transport = server([(.post, "/items/1", [.json(string: #"{"accepted":true}"#)])])
        let connect = client(transport)
        _ = try get("/items/1", on: connect)

        // When a POST to it, read as a stream, is answered 200
        let stream = connect.stream(Route("/items/1", method: .post))
        let answer = try await stream.response
        XCTAssertEqual(answer.statusCode, 200)

        // Then the next GET goes to the network
        XCTAssertEqual(try get("/items/1", on: connect), #"{"version":2}"#)
        XCTAssertEqual(gets(transport), 2)
    }

    /// A GET sent before a write's answer may carry the state before the write: it is served to its caller, not
    /// stored.
    func testAGETAnsweredAfterASuccessfulWriteIsNotStored() throws {
        // Given a GET and a PUT of /items/1 in flight
        let transport = ManualTransport()
        let connect = client(transport)
        let read = connect.request(Route("/items/1"), options: rule)
        let write = connect.request(Route("/items/1", method: .put))
        XCTAssertEqual(transport.requests.count, 2)
        guard transport.requests.count == 2 else { return }

        // When the PUT is answered first, then the GET
        transport.respond(to: 1, status: 200)
        XCTAssertNotNil(value(of: write))
        transport.respond(to: 0, body: Data("before".utf8))
        XCTAssertEqual(value(of: read), Data("before".utf8))

        // Then the next GET goes to the network
        _ = connect.request(Route("/items/1"), options: rule)
        XCTAssertEqual(transport.requests.count, 3)
    }

    /// Two GETs of one URL overlap, and the later one's answer removes what is stored (`no-store`, a 404, a 410):
    /// the earlier one's answer, coming after it, is older than that removal and is served to its caller, not stored.
    func testAnOlderAnswerComingAfterANewerOneThatRemovedTheKeyIsNotStored() throws {
        for (status, headers) in [(200, ["Cache-Control": "no-store"]), (404, [:]), (410, [:])] {
            // Given two GETs of /items/1 in flight
            let transport = ManualTransport()
            let cache = ResponseCache()
            let connect = client(transport, cache: cache)
            let older = connect.request(Route("/items/1"), options: rule)
            let newer = connect.request(Route("/items/1"), options: rule)
            XCTAssertTrue(transport.wait(forRequests: 2))

            // When the newer is answered first, with `status`, then the older
            transport.respond(to: 1, status: status, headers: headers, body: Data("newer".utf8))
            _ = result(of: newer)
            transport.respond(to: 0, body: Data("older".utf8))
            XCTAssertEqual(value(of: older), Data("older".utf8), "\(status)")

            // Then nothing is stored: the next GET goes to the network
            XCTAssertEqual(cache.count, 0, "\(status)")
            _ = connect.request(Route("/items/1"), options: rule)
            XCTAssertTrue(transport.wait(forRequests: 3), "\(status)")
        }
    }

    /// Two GETs of one URL overlap; the later one's answer is stored, then evicted by the size limit, then the
    /// earlier one's answer comes: it is older than an answer the cache already had, and is served to its caller,
    /// not stored.
    func testAnOlderAnswerComingAfterANewerOneWasEvictedIsNotStored() throws {
        // Given two GETs of /items/1 in flight, in a cache with room for one response
        let transport = ManualTransport()
        let cache = ResponseCache(maxBytes: 150)
        let connect = client(transport, cache: cache)
        let older = connect.request(Route("/items/1"), options: rule)
        let newer = connect.request(Route("/items/1"), options: rule)
        XCTAssertTrue(transport.wait(forRequests: 2))

        // When the newer is answered and stored, then evicted by /items/2's response, then the older is answered
        let padding = String(repeating: "-", count: 60)
        transport.respond(to: 1, body: Data("newer\(padding)".utf8))
        XCTAssertEqual(value(of: newer), Data("newer\(padding)".utf8))
        let other = connect.request(Route("/items/2"), options: rule)
        XCTAssertTrue(transport.wait(forRequests: 3))
        transport.respond(to: 2, body: Data("other\(padding)".utf8))
        XCTAssertNotNil(value(of: other))
        XCTAssertEqual(cache.count, 1, "/items/1's response was evicted")
        transport.respond(to: 0, body: Data("older".utf8))
        XCTAssertEqual(value(of: older), Data("older".utf8))

        // Then the older answer is not served: the next GET of /items/1 goes to the network
        let next = connect.request(Route("/items/1"), options: rule)
        XCTAssertEqual(transport.requests.count, 4, "the older answer was stored and served")
        transport.respond(to: min(3, transport.requests.count - 1), body: Data("network".utf8))
        XCTAssertEqual(value(of: next), Data("network".utf8))
    }

    /// The cache's record of evicted answers is bounded: past it, an answer older than one whose record went is
    /// still not stored.
    func testTheRecordOfEvictedAnswersIsBoundedAndStillKeepsOlderAnswersOut() throws {
        // Given two GETs of /items/0 in flight, in a cache with room for one response; the newer is answered
        let transport = ManualTransport()
        let cache = ResponseCache(maxBytes: 150)
        let connect = client(transport, cache: cache)
        let older = connect.request(Route("/items/0"), options: rule)
        let newer = connect.request(Route("/items/0"), options: rule)
        XCTAssertTrue(transport.wait(forRequests: 2))
        let padding = String(repeating: "-", count: 60)
        transport.respond(to: 1, body: Data("newer\(padding)".utf8))
        XCTAssertNotNil(value(of: newer))

        // When 300 other URLs are stored, each evicting the one before, then the older is answered
        for index in 1...300 {
            let other = connect.request(Route("/items/\(index)"), options: rule)
            XCTAssertTrue(transport.wait(forRequests: index + 2))
            transport.respond(to: index + 1, body: Data("other\(padding)".utf8))
            XCTAssertNotNil(value(of: other))
        }
        XCTAssertLessThanOrEqual(cache.evictionRecordCount, 256)
        transport.respond(to: 0, body: Data("older".utf8))
        XCTAssertEqual(value(of: older), Data("older".utf8))

        // Then the older answer is not stored: the next GET of /items/0 goes to the network
        _ = connect.request(Route("/items/0"), options: rule)
        XCTAssertTrue(transport.wait(forRequests: 303), "the older answer was stored and served")
    }

    /// As above, with a storage: the newer answer, evicted from memory, is still in the storage, and the older one
    /// neither replaces it there nor is served from memory in its place.
    func testAnOlderAnswerDoesNotReplaceANewerOneMemoryEvictedButTheStorageKeeps() throws {
        // Given two GETs of /items/1 in flight, in a cache with room in memory for one response, over a storage
        let transport = ManualTransport()
        let storage = MemoryResponseStorage()
        let connect = client(transport, cache: ResponseCache(maxBytes: 150, storage: storage))
        let older = connect.request(Route("/items/1"), options: rule)
        let newer = connect.request(Route("/items/1"), options: rule)
        XCTAssertTrue(transport.wait(forRequests: 2))

        // When the newer is answered and stored, then evicted from memory by /items/2's response, then the older is
        // answered
        let padding = String(repeating: "-", count: 60)
        transport.respond(to: 1, body: Data("newer\(padding)".utf8))
        XCTAssertNotNil(value(of: newer))
        let other = connect.request(Route("/items/2"), options: rule)
        XCTAssertTrue(transport.wait(forRequests: 3))
        transport.respond(to: 2, body: Data("other\(padding)".utf8))
        XCTAssertNotNil(value(of: other))
        transport.respond(to: 0, body: Data("older".utf8))
        XCTAssertEqual(value(of: older), Data("older".utf8))

        // Then the newer answer is served, from the storage, by this cache and by one started again over it
        XCTAssertEqual(try get("/items/1", on: connect), "newer\(padding)")
        let restarted = client(
            FakeTransport.answering(.data(Data("network".utf8))), cache: ResponseCache(storage: storage))
        XCTAssertEqual(try get("/items/1", on: restarted), "newer\(padding)")
        XCTAssertEqual(transport.requests.count, 3)
    }

    /// Two GETs of one URL overlap and are answered in order: the earlier one's answer is stored, and while its
    /// storage write is under way the later one's answer says `no-store`. The earlier one's file does not stay, to be
    /// served after a restart.
    func testAFileWrittenWhileANewerAnswerRemovedTheKeyDoesNotStay() throws {
        // Given two GETs of /items/1 in flight, the first answered first, its storage write held
        let transport = ManualTransport()
        let storage = SlowWriteStorage()
        let connect = client(transport, cache: ResponseCache(storage: storage))
        let older = connect.request(Route("/items/1"), options: rule)
        let newer = connect.request(Route("/items/1"), options: rule)
        XCTAssertTrue(transport.wait(forRequests: 2))
        storage.armNextWrite()
        DispatchQueue.global().async { transport.respond(to: 0, body: Data("older".utf8)) }
        XCTAssertEqual(storage.writeEntered.wait(timeout: .now() + 10), .success)

        // When the second is answered `no-store` meanwhile, then the first's write goes on
        transport.respond(to: 1, headers: ["Cache-Control": "no-store"], body: Data("newer".utf8))
        XCTAssertEqual(value(of: newer), Data("newer".utf8))
        storage.release.signal()
        XCTAssertEqual(value(of: older), Data("older".utf8))

        // Then a cache started again over the storage does not serve the older answer
        let restarted = client(
            FakeTransport.answering(.data(Data("network".utf8))), cache: ResponseCache(storage: storage))
        XCTAssertEqual(try get("/items/1", on: restarted), "network")
    }

    /// A storage of the app's own, which the cache can search only by key, loses the responses stored under a
    /// GET's key for the URL, even when the cache that stored them is gone.
    func testAStorageOfTheAppsOwnLosesTheURLsResponses() throws {
        // Given /items/1 in a storage, stored by another cache
        let storage = KeyOnlyStorage()
        let transport = server([(.patch, "/items/1", [.status(200)])])
        _ = try get("/items/1", on: client(transport, cache: ResponseCache(storage: storage)))
        let connect = client(transport, cache: ResponseCache(storage: storage))

        // When a PATCH to it succeeds
        XCTAssertNoThrow(try connect.request(Route("/items/1", method: .patch)).wait(timeout: 5))

        // Then the storage no longer serves it
        XCTAssertEqual(try get("/items/1", on: connect), #"{"version":2}"#)
        XCTAssertEqual(gets(transport), 2)
    }
}

/// A ``ResponseCacheStorage`` as an app would write one: by key only.
private final class KeyOnlyStorage: ResponseCacheStorage {
    private let base = MemoryResponseStorage()

    func response(forKey key: String) -> StoredResponse? { base.response(forKey: key) }

    func store(_ response: StoredResponse, forKey key: String) { base.store(response, forKey: key) }

    func removeResponses(forKey key: String) { base.removeResponses(forKey: key) }

    func removeAll() { base.removeAll() }
}

/// A storage whose next read, once armed, takes what is stored and then waits to be let go: a slow disk read that a
/// refetch overtakes.
final class SlowReadStorage: ResponseCacheStorage, @unchecked Sendable {
    // @unchecked Sendable: `lock` protects `isArmed`; the semaphores and `base` are thread-safe.
    private let base = MemoryResponseStorage()
    private let lock = NSLock()
    private var isArmed = false
    /// Signalled when an armed read has taken what is stored.
    let readTaken = DispatchSemaphore(value: 0)
    /// Lets an armed read return.
    let release = DispatchSemaphore(value: 0)

    func armNextRead() {
        lock.withLock { isArmed = true }
    }

    func response(forKey key: String) -> StoredResponse? {
        let found = base.response(forKey: key)
        let armed = lock.withLock {
            defer { isArmed = false }
            return isArmed
        }
        if armed {
            readTaken.signal()
            release.wait()
        }
        return found
    }

    func store(_ response: StoredResponse, forKey key: String) { base.store(response, forKey: key) }

    func removeResponses(forKey key: String) { base.removeResponses(forKey: key) }

    func removeAll() { base.removeAll() }
}

final class ResponseCacheStorageRaceTests: XCTestCase {
    /// A storage read that a refetch overtakes serves what it read, but does not put it in memory over the refetch's
    /// newer answer: the next request gets the newer one.
    func testAStorageReadOvertakenByARefetchDoesNotReplaceItsAnswer() throws {
        // Given version 1 in a storage, and a new cache (an app started again) over it
        let transport = FakeTransport()
        transport.stub(.get, "/items/1", with: (1...3).map { .json(string: #"{"version":\#($0)}"#) })
        let storage = SlowReadStorage()
        let rule = RequestOptions(cache: CacheRule(timeToLive: 300))
        func client() -> Connect {
            Connect(
                transport: transport, retryPolicy: nil, responseCache: ResponseCache(storage: storage),
                configuration: ServerConfiguration(host: "api.example.com"))
        }
        @Sendable func get(_ connect: Connect, headers: [HTTPHeader] = []) -> String? {
            let data = try? connect.request(Route("/items/1", headers: headers), options: rule).wait(timeout: 5)
            return data.map { String(decoding: $0, as: UTF8.self) }
        }
        XCTAssertEqual(get(client()), #"{"version":1}"#)
        let connect = client()

        // When a GET reads the storage slowly, and a refetch (`no-cache`) stores version 2 meanwhile
        storage.armNextRead()
        let slow = Guarded<String?>(nil)
        let slowDone = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let body = get(connect)
            slow.withLock { $0 = body }
            slowDone.signal()
        }
        XCTAssertEqual(storage.readTaken.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(get(connect, headers: [HTTPHeader(name: "Cache-Control", value: "no-cache")]), #"{"version":2}"#)
        storage.release.signal()
        XCTAssertEqual(slowDone.wait(timeout: .now() + 10), .success)

        // Then the slow GET got what it read, and the next one the newer answer, from memory
        XCTAssertEqual(slow.withLock { $0 }, #"{"version":1}"#)
        XCTAssertEqual(get(connect), #"{"version":2}"#)
        XCTAssertEqual(transport.requests.count, 2)
    }

    /// As above, and the refetch's answer is evicted from memory by the size limit before the slow read ends: what the
    /// read found is still not put in memory, and the next request gets the newer answer, from the storage.
    func testAStorageReadOvertakenByARefetchThenEvictedDoesNotReplaceItsAnswer() throws {
        // Given version 1 in a storage, and a new cache (an app started again) over it, with room for one response
        let transport = FakeTransport()
        transport.stub(.get, "/items/1", with: (1...3).map { .json(string: #"{"version":\#($0)}"#) })
        transport.stub(.get, "/items/2", with: [.json(string: #"{"other":1}"#)])
        let storage = SlowReadStorage()
        let rule = RequestOptions(cache: CacheRule(timeToLive: 300))
        func client(maxBytes: Int) -> Connect {
            Connect(
                transport: transport, retryPolicy: nil,
                responseCache: ResponseCache(maxBytes: maxBytes, storage: storage),
                configuration: ServerConfiguration(host: "api.example.com"))
        }
        @Sendable func get(_ connect: Connect, _ path: String = "/items/1", headers: [HTTPHeader] = []) -> String? {
            let data = try? connect.request(Route(path, headers: headers), options: rule).wait(timeout: 5)
            return data.map { String(decoding: $0, as: UTF8.self) }
        }
        XCTAssertEqual(get(client(maxBytes: 1_000_000)), #"{"version":1}"#)
        let cache = ResponseCache(maxBytes: 1_000_000, storage: storage)
        let size = Connect(
            transport: FakeTransport.answering(.json(string: #"{"version":1}"#)), retryPolicy: nil,
            responseCache: cache, configuration: ServerConfiguration(host: "api.example.com"))
        _ = get(size)
        let connect = client(maxBytes: cache.totalBytes + 10)

        // When a GET reads the storage slowly, a refetch (`no-cache`) stores version 2 meanwhile, and another URL's
        // response evicts it from memory
        storage.armNextRead()
        let slow = Guarded<String?>(nil)
        let slowDone = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let body = get(connect)
            slow.withLock { $0 = body }
            slowDone.signal()
        }
        XCTAssertEqual(storage.readTaken.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(get(connect, headers: [HTTPHeader(name: "Cache-Control", value: "no-cache")]), #"{"version":2}"#)
        XCTAssertEqual(get(connect, "/items/2"), #"{"other":1}"#)
        storage.release.signal()
        XCTAssertEqual(slowDone.wait(timeout: .now() + 10), .success)

        // Then the slow GET got what it read, and the next one the newer answer
        XCTAssertEqual(slow.withLock { $0 }, #"{"version":1}"#)
        XCTAssertEqual(get(connect), #"{"version":2}"#)
        XCTAssertEqual(transport.requests.count, 3)
    }

    /// A storage read that a refetch answered `no-store` overtakes: what it read is older than that answer, which
    /// removed it. It is neither served nor put in memory: the request goes to the network.
    func testAStorageReadOvertakenByARefetchAnsweredNoStoreIsNotKept() throws {
        // Given version 1 in a storage, and a new cache (an app started again) over it
        let transport = FakeTransport()
        transport.stub(
            .get, "/items/1",
            with: [
                .json(string: #"{"version":1}"#),
                .json(string: #"{"version":2}"#, headers: ["Cache-Control": "no-store"]),
                .json(string: #"{"version":3}"#), .json(string: #"{"version":4}"#),
            ])
        let storage = SlowReadStorage()
        let rule = RequestOptions(cache: CacheRule(timeToLive: 300))
        func client() -> Connect {
            Connect(
                transport: transport, retryPolicy: nil, responseCache: ResponseCache(storage: storage),
                configuration: ServerConfiguration(host: "api.example.com"))
        }
        @Sendable func get(_ connect: Connect, options: RequestOptions) -> String? {
            let data = try? connect.request(Route("/items/1"), options: options).wait(timeout: 5)
            return data.map { String(decoding: $0, as: UTF8.self) }
        }
        XCTAssertEqual(get(client(), options: rule), #"{"version":1}"#)
        let connect = client()

        // When a GET reads the storage slowly, and a refetch answered `no-store` removes the key meanwhile
        storage.armNextRead()
        let slow = Guarded<String?>(nil)
        let slowDone = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let body = get(connect, options: rule)
            slow.withLock { $0 = body }
            slowDone.signal()
        }
        XCTAssertEqual(storage.readTaken.wait(timeout: .now() + 10), .success)
        var refetch = CacheRule(timeToLive: 300)
        refetch.bypassesCache = true
        XCTAssertEqual(get(connect, options: RequestOptions(cache: refetch)), #"{"version":2}"#)
        storage.release.signal()
        XCTAssertEqual(slowDone.wait(timeout: .now() + 10), .success)

        // Then the slow GET was answered by the network, and so is the next one (the slow GET's answer, of a fetch
        // started before the removal, is not stored either)
        XCTAssertEqual(slow.withLock { $0 }, #"{"version":3}"#)
        XCTAssertEqual(get(connect, options: rule), #"{"version":4}"#)
        XCTAssertEqual(transport.requests.count, 4)
    }

    /// Two fetches of one key whose storage writes cross: the older answer, written last, does not stay in the
    /// storage over the newer one that memory holds, to be served after a restart.
    func testAnOlderAnswerWrittenAfterANewerOneDoesNotStayInTheStorage() throws {
        // Given two refetches of one URL in flight, the first answered first, its storage write held
        let transport = HeldTransport()
        let storage = SlowWriteStorage()
        let connect = Connect(
            transport: transport, retryPolicy: nil, responseCache: ResponseCache(storage: storage),
            configuration: ServerConfiguration(host: "api.example.com"))
        var refetch = CacheRule(timeToLive: 300)
        refetch.bypassesCache = true
        let first = connect.request(Route("/items/1"), options: RequestOptions(cache: refetch))
        XCTAssertEqual(transport.sent.wait(timeout: .now() + 10), .success)
        let second = connect.request(Route("/items/1"), options: RequestOptions(cache: refetch))
        XCTAssertEqual(transport.sent.wait(timeout: .now() + 10), .success)
        storage.armNextWrite()
        DispatchQueue.global().async { transport.answer(0, with: "older") }
        XCTAssertEqual(storage.writeEntered.wait(timeout: .now() + 10), .success)

        // When the second is answered and written meanwhile, then the first's write goes on
        transport.answer(1, with: "newer")
        XCTAssertEqual(String(decoding: try second.wait(timeout: 5), as: UTF8.self), "newer")
        storage.release.signal()
        XCTAssertEqual(String(decoding: try first.wait(timeout: 5), as: UTF8.self), "older")

        // Then a cache started again over the storage does not serve the older answer
        let restarted = Connect(
            transport: FakeTransport.answering(.data(Data("network".utf8))), retryPolicy: nil,
            responseCache: ResponseCache(storage: storage),
            configuration: ServerConfiguration(host: "api.example.com"))
        let served = try restarted.request(
            Route("/items/1"), options: RequestOptions(cache: CacheRule(timeToLive: 300))
        )
        .wait(timeout: 5)
        XCTAssertNotEqual(String(decoding: served, as: UTF8.self), "older")
    }
}

/// A transport that holds each answer until the test gives it (``answer(_:with:)``).
private final class HeldTransport: Transport, @unchecked Sendable {
    // @unchecked Sendable: `lock` protects `held`; the semaphore is thread-safe.
    private let lock = NSLock()
    private var held: [(request: URLRequest, promise: Promise<ConnectResponse>)] = []
    /// Signalled each time a request is sent.
    let sent = DispatchSemaphore(value: 0)

    func send(_ request: URLRequest) -> Future<ConnectResponse> {
        let promise = Promise<ConnectResponse>()
        lock.withLock { held.append((request, promise)) }
        sent.signal()
        return promise.future
    }

    /// Answers the request sent `index`th (from 0) with a 200 of `body`.
    func answer(_ index: Int, with body: String) {
        let (request, promise) = lock.withLock { held[index] }
        _ = promise.succeed(
            ConnectResponse(
                request: request,
                response: HTTPURLResponse(
                    url: request.url!, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:])!,
                data: Data(body.utf8)))
    }
}

/// A storage whose next write, once armed, waits to be let go before it writes: a slow disk write that a newer
/// answer's write overtakes.
private final class SlowWriteStorage: ResponseCacheStorage, @unchecked Sendable {
    // @unchecked Sendable: `lock` protects `isArmed`; the semaphores and `base` are thread-safe.
    private let base = MemoryResponseStorage()
    private let lock = NSLock()
    private var isArmed = false
    /// Signalled when an armed write has begun.
    let writeEntered = DispatchSemaphore(value: 0)
    /// Lets an armed write go on.
    let release = DispatchSemaphore(value: 0)

    func armNextWrite() {
        lock.withLock { isArmed = true }
    }

    func response(forKey key: String) -> StoredResponse? { base.response(forKey: key) }

    func store(_ response: StoredResponse, forKey key: String) {
        let armed = lock.withLock {
            defer { isArmed = false }
            return isArmed
        }
        if armed {
            writeEntered.signal()
            release.wait()
        }
        base.store(response, forKey: key)
    }

    func removeResponses(forKey key: String) { base.removeResponses(forKey: key) }

    func removeAll() { base.removeAll() }
}
