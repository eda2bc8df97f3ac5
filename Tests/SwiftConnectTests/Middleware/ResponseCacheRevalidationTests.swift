import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How the ``ResponseCache`` revalidates a stored response that is no longer fresh (RFC 9111 §4.3): a conditional
/// request with its validators, a `304 Not Modified` served as the stored response with updated headers.
final class ResponseCacheRevalidationTests: XCTestCase {
    private let base = URL(string: "https://api.example.com")!
    private let rule = RequestOptions(cache: CacheRule(timeToLive: 60))

    /// A server whose resource has a version: a request whose `If-None-Match` or `If-Modified-Since` names the
    /// current one is answered 304, any other 200 with the body `version <n>`.
    private final class Server: @unchecked Sendable {
        // @unchecked Sendable: `lock` protects every var.
        private let lock = NSLock()
        private var _version = 1
        private var _failure: Int?
        private var _notModifiedETag: String?
        private var _extraHeaders: [String: String] = [:]
        private var _notModifiedHeaders: [String: String] = [:]
        private var _sendsETag = true

        /// Headers of every 200.
        var extraHeaders: [String: String] {
            get { lock.withLock { _extraHeaders } }
            set { lock.withLock { _extraHeaders = newValue } }
        }

        /// Headers of every 304.
        var notModifiedHeaders: [String: String] {
            get { lock.withLock { _notModifiedHeaders } }
            set { lock.withLock { _notModifiedHeaders = newValue } }
        }

        /// Whether its answers carry an `ETag`.
        var sendsETag: Bool {
            get { lock.withLock { _sendsETag } }
            set { lock.withLock { _sendsETag = newValue } }
        }

        var version: Int {
            get { lock.withLock { _version } }
            set { lock.withLock { _version = newValue } }
        }

        /// A status every request is answered with instead, while set (a 503 outage).
        var failure: Int? {
            get { lock.withLock { _failure } }
            set { lock.withLock { _failure = newValue } }
        }

        /// The `ETag` a 304 names instead of the current one, while set.
        var notModifiedETag: String? {
            get { lock.withLock { _notModifiedETag } }
            set { lock.withLock { _notModifiedETag = newValue } }
        }

        let lastModified = "Mon, 12 Jan 1970 13:46:40 GMT"

        func answer(_ request: URLRequest) -> Result<ConnectResponse, any Error> {
            let (version, failure, notModifiedETag) = lock.withLock { (_version, _failure, _notModifiedETag) }
            let (extraHeaders, notModifiedHeaders, sendsETag) = lock.withLock {
                (_extraHeaders, _notModifiedHeaders, _sendsETag)
            }
            if let failure { return .success(ConnectResponse(request: request, statusCode: failure)!) }
            let etag = "\"v\(version)\""
            let matches =
                request.value(forHTTPHeaderField: "If-None-Match") == etag
                || (request.value(forHTTPHeaderField: "If-None-Match") == nil
                    && request.value(forHTTPHeaderField: "If-Modified-Since") == lastModified && version == 1)
            if matches {
                var headers = notModifiedHeaders
                if sendsETag { headers["ETag"] = notModifiedETag ?? etag }
                headers["Content-Length"] = "0"
                return .success(ConnectResponse(request: request, statusCode: 304, headers: headers)!)
            }
            let body = Data("version \(version)".utf8)
            var headers = extraHeaders
            if sendsETag { headers["ETag"] = etag }
            headers["Content-Length"] = String(body.count)
            headers["Content-Type"] = "text/plain"
            return .success(ConnectResponse(request: request, statusCode: 200, headers: headers, data: body)!)
        }
    }

    private func client(
        _ server: Server, clock: ManualClock, storage: (any ResponseCacheStorage)? = nil,
        observer: ConnectObserverTests.RecordingObserver? = nil
    ) -> (Connect, FakeTransport, ResponseCache) {
        let transport = FakeTransport.answering(.handler { server.answer($0) })
        let cache = ResponseCache(maxBytes: 1_000_000, storage: storage, now: { clock.now })
        let settings = Connect.Settings(observers: observer.map { [$0] } ?? [])
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache, settings: settings)
        return (connect, transport, cache)
    }

    private func get(
        _ connect: Connect, headers: [HTTPHeader] = [], options: RequestOptions? = nil
    ) throws -> ConnectResponse {
        try connect.response(for: Route("/a", baseURL: base, headers: headers), options: options ?? rule)
            .wait(timeout: 5)
    }

    // MARK: - Conditional requests

    /// A stale response with an `ETag` is revalidated with `If-None-Match`; the 304 serves the stored status and body,
    /// with the stored headers updated by the 304's (but not its `Content-Length`), and the response is fresh again
    /// for the rule's time to live, counted from the 304.
    func testAStaleResponseWithAnETagIsRevalidatedAndA304ServesTheStoredBody() throws {
        let server = Server()
        server.extraHeaders = ["X-Served": "first"]
        server.notModifiedHeaders = ["X-Served": "revalidated", "Cache-Control": "max-age=60"]
        let clock = ManualClock()
        let (connect, transport, cache) = client(server, clock: clock)
        _ = try get(connect)

        clock.advance(61)
        let revalidated = try get(connect)

        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v1\"")
        XCTAssertEqual(revalidated.statusCode, 200)
        XCTAssertEqual(String(decoding: revalidated.data, as: UTF8.self), "version 1")
        XCTAssertEqual(revalidated.header("X-Served"), "revalidated", "the 304's headers update the stored ones")
        XCTAssertEqual(revalidated.header("Cache-Control"), "max-age=60")
        XCTAssertEqual(revalidated.header("Content-Length"), "9", "the 304's Content-Length is not the body's")
        XCTAssertEqual(revalidated.header("Content-Type"), "text/plain")
        XCTAssertNil(
            revalidated.sentRequest.value(forHTTPHeaderField: "If-None-Match"),
            "the caller's response names the request it made")

        // Fresh again: served from memory for 60 seconds from the 304, then revalidated once more.
        clock.advance(59)
        let served = try get(connect)
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(String(decoding: served.data, as: UTF8.self), "version 1")
        XCTAssertEqual(served.header("X-Served"), "revalidated")
        XCTAssertEqual(cache.hitCount, 1)
        clock.advance(2)
        _ = try get(connect)
        XCTAssertEqual(transport.requests.count, 3)
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v1\"")
    }

    /// A stale response with only a `Last-Modified` is revalidated with `If-Modified-Since`.
    func testAStaleResponseWithLastModifiedIsRevalidatedWithIfModifiedSince() throws {
        let server = Server()
        server.sendsETag = false
        server.extraHeaders = ["Last-Modified": server.lastModified]
        let clock = ManualClock()
        let (connect, transport, _) = client(server, clock: clock)
        _ = try get(connect)
        clock.advance(61)
        let revalidated = try get(connect)

        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertNil(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"))
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-Modified-Since"), server.lastModified)
        XCTAssertEqual(revalidated.statusCode, 200)
        XCTAssertEqual(String(decoding: revalidated.data, as: UTF8.self), "version 1")
    }

    /// A 200 answer to the revalidation replaces the stored response.
    func testA200AnswerToARevalidationReplacesTheStoredResponse() throws {
        let server = Server()
        let clock = ManualClock()
        let (connect, transport, _) = client(server, clock: clock)
        _ = try get(connect)
        server.version = 2
        clock.advance(61)

        let changed = try get(connect)
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v1\"")
        XCTAssertEqual(String(decoding: changed.data, as: UTF8.self), "version 2")
        clock.advance(30)
        XCTAssertEqual(String(decoding: try get(connect).data, as: UTF8.self), "version 2")
        XCTAssertEqual(transport.requests.count, 2)
        clock.advance(31)
        _ = try get(connect)
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v2\"")
    }

    /// A request whose caller set conditional headers of its own goes out untouched: the cache adds none of its own.
    func testACallersOwnConditionalHeadersAreLeftAlone() throws {
        let server = Server()
        server.extraHeaders = ["Last-Modified": server.lastModified]
        let clock = ManualClock()
        let (connect, transport, _) = client(server, clock: clock)
        _ = try get(connect)
        clock.advance(61)
        server.version = 2

        let answer = try get(connect, headers: [HTTPHeader(name: "If-None-Match", value: "\"mine\"")])
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"mine\"")
        XCTAssertNil(transport.requests.last?.value(forHTTPHeaderField: "If-Modified-Since"))
        XCTAssertEqual(String(decoding: answer.data, as: UTF8.self), "version 2")
    }

    /// RFC 9111 §4.3.4: a 304 to the caller's own conditional request that validates the stored response refreshes
    /// it, as the cache's own revalidation would: its headers updated by the 304's, fresh again from now.
    func testA304ToACallersOwnConditionalRequestRefreshesTheStoredResponse() throws {
        let server = Server()
        server.notModifiedHeaders = ["X-Refreshed": "yes"]
        let clock = ManualClock()
        let (connect, transport, _) = client(server, clock: clock)
        _ = try get(connect)
        clock.advance(61)

        let answer = try? get(connect, headers: [HTTPHeader(name: "If-None-Match", value: "\"v1\"")])
        XCTAssertNotEqual(answer?.statusCode, 200)
        XCTAssertEqual(transport.requests.count, 2)

        let served = try get(connect)
        XCTAssertEqual(transport.requests.count, 2, "served fresh, without the network")
        XCTAssertEqual(String(decoding: served.data, as: UTF8.self), "version 1")
        XCTAssertEqual(served.header("X-Refreshed"), "yes")
    }

    /// The same for a stale response a cache started again reads from its storage: the refreshed response goes to
    /// memory and to the storage.
    func testA304ToACallersOwnConditionalRequestRefreshesAResponseReadFromTheStorage() throws {
        let server = Server()
        let clock = ManualClock()
        let storage = MemoryResponseStorage()
        _ = try get(client(server, clock: clock, storage: storage).0)
        clock.advance(61)
        let (connect, transport, _) = client(server, clock: clock, storage: storage)

        _ = try? get(connect, headers: [HTTPHeader(name: "If-None-Match", value: "\"v1\"")])
        XCTAssertEqual(String(decoding: try get(connect).data, as: UTF8.self), "version 1")
        let (restarted, restartedTransport, _) = client(server, clock: clock, storage: storage)
        XCTAssertEqual(String(decoding: try get(restarted).data, as: UTF8.self), "version 1")
        XCTAssertEqual(transport.requests.count, 1, "served fresh, without the network")
        XCTAssertEqual(restartedTransport.requests.count, 0, "served fresh from the storage")
    }

    /// A 304 without validators to the caller's own `If-Modified-Since` naming the stored `Last-Modified` validates it.
    func testA304WithoutValidatorsToACallersIfModifiedSinceRefreshesTheStoredResponse() throws {
        let server = Server()
        server.sendsETag = false
        server.extraHeaders = ["Last-Modified": server.lastModified]
        let clock = ManualClock()
        let (connect, transport, _) = client(server, clock: clock)
        _ = try get(connect)
        clock.advance(61)

        _ = try? get(connect, headers: [HTTPHeader(name: "If-Modified-Since", value: server.lastModified)])
        XCTAssertEqual(transport.requests.count, 2)

        XCTAssertEqual(String(decoding: try get(connect).data, as: UTF8.self), "version 1")
        XCTAssertEqual(transport.requests.count, 2, "served fresh, without the network")
    }

    /// A 304 to the caller's own conditional request that names another representation leaves the stored one stale.
    func testA304ForAnotherRepresentationToACallersConditionalRequestLeavesTheStoredResponseStale() throws {
        let server = Server()
        let clock = ManualClock()
        let (connect, transport, _) = client(server, clock: clock)
        _ = try get(connect)
        clock.advance(61)
        server.version = 2

        _ = try? get(connect, headers: [HTTPHeader(name: "If-None-Match", value: "\"v2\"")])
        XCTAssertEqual(transport.requests.count, 2)

        XCTAssertEqual(String(decoding: try get(connect).data, as: UTF8.self), "version 2")
        XCTAssertEqual(transport.requests.count, 3)
    }

    /// A stored response without a validator is fetched again as before, with no conditional header.
    func testAStaleResponseWithoutAValidatorIsFetchedAgain() throws {
        let clock = ManualClock()
        let transport = FakeTransport.answering(.json(string: "{}"))
        let cache = ResponseCache(maxBytes: 1_000_000, now: { clock.now })
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        _ = try get(connect)
        clock.advance(61)
        _ = try get(connect)
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertNil(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"))
        XCTAssertNil(transport.requests.last?.value(forHTTPHeaderField: "If-Modified-Since"))
    }

    /// A 304 naming another `ETag` than the stored response's does not answer for it: the request is sent again
    /// without conditions, and that answer served and stored.
    func testA304ForAnotherETagSendsTheRequestAgainUnconditionally() throws {
        let server = Server()
        let clock = ManualClock()
        let (connect, transport, _) = client(server, clock: clock)
        _ = try get(connect)
        clock.advance(61)
        server.notModifiedETag = "\"other\""

        let answer = try get(connect)
        XCTAssertEqual(transport.requests.count, 3)
        let sent = transport.requests.map { $0.value(forHTTPHeaderField: "If-None-Match") }
        XCTAssertEqual(sent, [nil, "\"v1\"", nil], "the first request, the revalidation, the same without conditions")
        XCTAssertEqual(answer.statusCode, 200)
        XCTAssertEqual(String(decoding: answer.data, as: UTF8.self), "version 1")
    }

    /// A revalidation the transport followed to another resource (`/a` now redirects to `/b`), where a 304 names the
    /// same `ETag` (a version number, `"0"`, as many servers write it), validates nothing of `/a`: it served `/a`'s
    /// old body as the answer and stored it fresh again. The request is sent again without conditions.
    func testA304FromAnotherResourceARedirectLedToValidatesNothing() throws {
        let redirected = Guarded(false)
        let other = URL(string: "https://api.example.com/b")!
        let transport = FakeTransport.answering(
            .handler { request in
                let conditional = request.value(forHTTPHeaderField: "If-None-Match") != nil
                guard redirected.withLock({ $0 }) else {
                    let response = ConnectResponse(
                        request: request, statusCode: 200, headers: ["ETag": "\"0\""], data: Data("a".utf8))
                    return .success(response!)
                }
                // Followed from /a: the answer is /b's.
                let answer = ConnectResponse(
                    request: request, statusCode: conditional ? 304 : 200, headers: ["ETag": "\"0\""],
                    data: Data(conditional ? "".utf8 : "b".utf8), url: other)
                return .success(answer!)
            })
        let clock = ManualClock()
        let cache = ResponseCache(maxBytes: 1_000_000, now: { clock.now })
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        XCTAssertEqual(String(decoding: try get(connect).data, as: UTF8.self), "a")
        redirected.withLock { $0 = true }
        clock.advance(61)

        let answer = try get(connect)

        XCTAssertEqual(String(decoding: answer.data, as: UTF8.self), "b")
        let sent = transport.requests.map { $0.value(forHTTPHeaderField: "If-None-Match") }
        XCTAssertEqual(sent, [nil, "\"0\"", nil], "the first request, the revalidation, the same without conditions")
    }

    /// A server error during revalidation fails the call as before (the stale response is not served in its place)
    /// and leaves the stored response, which a later 304 still serves.
    func testAServerErrorDuringRevalidationFailsAndKeepsTheStoredResponse() throws {
        let server = Server()
        let clock = ManualClock()
        let (connect, transport, cache) = client(server, clock: clock)
        _ = try get(connect)
        clock.advance(61)
        server.failure = 503

        XCTAssertThrowsError(try get(connect)) { error in
            XCTAssertEqual((error as? ConnectError)?.statusCode, 503)
        }
        XCTAssertEqual(cache.count, 1)
        server.failure = nil
        let revalidated = try get(connect)
        XCTAssertEqual(transport.requests.count, 3)
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v1\"")
        XCTAssertEqual(String(decoding: revalidated.data, as: UTF8.self), "version 1")
    }

    // MARK: - Requests that ask to revalidate

    /// `GET /a` of the tests' server under a cache policy of its own.
    private struct Reloading: Connector {
        var cachePolicy: URLRequest.CachePolicy
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/a" }
    }

    /// The ways a request asks to revalidate what is stored (RFC 9111 §5.2.1.4, §5.2.1.1, §5.4; URLRequest's
    /// `.reloadRevalidatingCacheData`), each with how to send it.
    private var revalidatingRequests: [(name: String, send: (Connect, RequestOptions) throws -> ConnectResponse)] {
        let base = self.base
        func asking(_ name: String, _ value: String) -> (Connect, RequestOptions) throws -> ConnectResponse {
            { connect, options in
                let route = Route("/a", baseURL: base, headers: [HTTPHeader(name: name, value: value)])
                return try connect.response(for: route, options: options).wait(timeout: 5)
            }
        }
        let reloading: (Connect, RequestOptions) throws -> ConnectResponse = { connect, options in
            try connect.response(for: Reloading(cachePolicy: .reloadRevalidatingCacheData), options: options)
                .wait(timeout: 5)
        }
        return [
            ("no-cache", asking("Cache-Control", "no-cache")), ("max-age=0", asking("Cache-Control", "max-age=0")),
            ("Pragma: no-cache", asking("Pragma", "no-cache")), ("reloadRevalidatingCacheData", reloading),
        ]
    }

    /// A request that asks to revalidate (`Cache-Control: no-cache`, `max-age=0`, `Pragma: no-cache`,
    /// `.reloadRevalidatingCacheData`) is not served a fresh stored response as it is, but sends a conditional
    /// request for it: a 304 serves the stored body, fresh again from the 304.
    func testARequestThatAsksToRevalidateSendsAConditionalRequestForAFreshResponse() throws {
        for (name, send) in revalidatingRequests {
            let server = Server()
            let clock = ManualClock()
            let (connect, transport, cache) = client(server, clock: clock)
            _ = try get(connect)
            clock.advance(30)

            let revalidated = try send(connect, rule)
            XCTAssertEqual(transport.requests.count, 2, name)
            XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v1\"", name)
            XCTAssertEqual(revalidated.statusCode, 200, name)
            XCTAssertEqual(String(decoding: revalidated.data, as: UTF8.self), "version 1", name)
            XCTAssertEqual(cache.hitCount, 0, name)

            // Fresh again for 60 seconds from the 304, not from the first answer.
            clock.advance(59)
            XCTAssertEqual(String(decoding: try get(connect).data, as: UTF8.self), "version 1", name)
            XCTAssertEqual(transport.requests.count, 2, name)
            XCTAssertEqual(cache.hitCount, 1, name)
        }
    }

    /// A request that asks to revalidate gets the new representation when it changed, which replaces the stored one.
    func testARequestThatAsksToRevalidateGetsAChangedResponse() throws {
        for (name, send) in revalidatingRequests {
            let server = Server()
            let clock = ManualClock()
            let (connect, transport, _) = client(server, clock: clock)
            _ = try get(connect)
            server.version = 2

            let changed = try send(connect, rule)
            XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v1\"", name)
            XCTAssertEqual(String(decoding: changed.data, as: UTF8.self), "version 2", name)
            XCTAssertEqual(String(decoding: try get(connect).data, as: UTF8.self), "version 2", name)
            XCTAssertEqual(transport.requests.count, 2, name)
        }
    }

    /// A request that asks to revalidate a stored response without a validator fetches it in full, and stores it.
    func testARequestThatAsksToRevalidateAResponseWithoutAValidatorFetchesInFull() throws {
        for (name, send) in revalidatingRequests {
            let server = Server()
            server.sendsETag = false
            let clock = ManualClock()
            let (connect, transport, _) = client(server, clock: clock)
            _ = try get(connect)
            server.version = 2

            let fetched = try send(connect, rule)
            XCTAssertEqual(transport.requests.count, 2, name)
            XCTAssertNil(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), name)
            XCTAssertNil(transport.requests.last?.value(forHTTPHeaderField: "If-Modified-Since"), name)
            XCTAssertEqual(String(decoding: fetched.data, as: UTF8.self), "version 2", name)
            XCTAssertEqual(String(decoding: try get(connect).data, as: UTF8.self), "version 2", name)
            XCTAssertEqual(transport.requests.count, 2, name)
        }
    }

    /// A fresh response in the storage (a new cache over it: an app started again) is revalidated too for a request
    /// that asks to revalidate, and not served as it is.
    func testARequestThatAsksToRevalidateRevalidatesAResponseInTheStorage() throws {
        for (name, send) in revalidatingRequests {
            let server = Server()
            let clock = ManualClock()
            let storage = MemoryResponseStorage()
            let (first, _, _) = client(server, clock: clock, storage: storage)
            _ = try get(first)
            clock.advance(10)

            let (second, transport, _) = client(server, clock: clock, storage: storage)
            let revalidated = try send(second, rule)
            XCTAssertEqual(transport.requests.count, 1, name)
            XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v1\"", name)
            XCTAssertEqual(String(decoding: revalidated.data, as: UTF8.self), "version 1", name)
            XCTAssertEqual(
                storage.response(forKey: "GET https://api.example.com/a")?.expiry, clock.now.addingTimeInterval(60),
                name)
        }
    }

    /// A rule that bypasses the cache, and the policies that ignore local cache data, fetch in full without
    /// conditions whatever is stored, as they promise: the server sends the whole response.
    func testBypassingAndIgnoringLocalDataFetchInFullWithoutConditions() throws {
        let bypassing = RequestOptions(cache: CacheRule(timeToLive: 60, bypassesCache: true))
        let ways: [(String, (Connect) throws -> ConnectResponse)] = [
            ("bypassesCache", { try self.get($0, options: bypassing) }),
            (
                "reloadIgnoringLocalCacheData",
                {
                    try $0.response(for: Reloading(cachePolicy: .reloadIgnoringLocalCacheData), options: self.rule)
                        .wait(timeout: 5)
                }
            ),
            (
                "reloadIgnoringLocalAndRemoteCacheData",
                {
                    try $0.response(
                        for: Reloading(cachePolicy: .reloadIgnoringLocalAndRemoteCacheData), options: self.rule
                    ).wait(timeout: 5)
                }
            ),
        ]
        for (name, send) in ways {
            let server = Server()
            server.extraHeaders = ["Last-Modified": server.lastModified]
            let clock = ManualClock()
            let (connect, transport, _) = client(server, clock: clock)
            _ = try get(connect)
            clock.advance(61)

            let fetched = try send(connect)
            XCTAssertEqual(transport.requests.count, 2, name)
            XCTAssertNil(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), name)
            XCTAssertNil(transport.requests.last?.value(forHTTPHeaderField: "If-Modified-Since"), name)
            XCTAssertEqual(fetched.statusCode, 200, name)
            XCTAssertEqual(String(decoding: fetched.data, as: UTF8.self), "version 1", name)
        }
    }

    // MARK: - no-cache

    /// A response that says `no-cache` and has a validator is stored, and revalidated before every use: never
    /// served as it is, even to a request that accepts a stale one.
    func testANoCacheResponseWithAValidatorIsStoredAndAlwaysRevalidated() throws {
        let server = Server()
        server.extraHeaders = ["Cache-Control": "no-cache"]
        server.notModifiedHeaders = ["Cache-Control": "no-cache"]
        let clock = ManualClock()
        let (connect, transport, cache) = client(server, clock: clock)
        _ = try get(connect)
        XCTAssertEqual(cache.count, 1)

        let revalidated = try get(connect)
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v1\"")
        XCTAssertEqual(String(decoding: revalidated.data, as: UTF8.self), "version 1")

        _ = try get(connect, headers: [HTTPHeader(name: "Cache-Control", value: "max-stale")])
        XCTAssertEqual(transport.requests.count, 3, "max-stale does not serve a no-cache response unvalidated")
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v1\"")
        XCTAssertEqual(cache.hitCount, 0)
    }

    /// A response stale on arrival (`max-age=0, private, must-revalidate`, as many frameworks send by default; an
    /// `Expires` of `0`) with a validator is stored, and revalidated on every request; without `must-revalidate`,
    /// a `max-stale` request may still be served it as it is.
    func testAResponseStaleOnArrivalWithAValidatorIsStoredAndRevalidated() throws {
        for headers in [["Cache-Control": "max-age=0, private, must-revalidate"], ["Expires": "0"]] {
            let server = Server()
            server.extraHeaders = headers
            server.notModifiedHeaders = headers
            let clock = ManualClock()
            let (connect, transport, cache) = client(server, clock: clock)
            _ = try get(connect)
            XCTAssertEqual(cache.count, 1, "\(headers)")

            let revalidated = try get(connect)
            XCTAssertEqual(transport.requests.count, 2, "\(headers)")
            XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v1\"", "\(headers)")
            XCTAssertEqual(String(decoding: revalidated.data, as: UTF8.self), "version 1", "\(headers)")
            XCTAssertEqual(cache.count, 1, "\(headers)")

            _ = try get(connect, headers: [HTTPHeader(name: "Cache-Control", value: "max-stale")])
            let mustRevalidate = headers["Cache-Control"] != nil
            XCTAssertEqual(transport.requests.count, mustRevalidate ? 3 : 2, "\(headers)")
        }
    }

    /// Without a validator, a response stale on arrival is still not stored.
    func testAResponseStaleOnArrivalWithoutAValidatorIsNotStored() throws {
        let server = Server()
        server.sendsETag = false
        server.extraHeaders = ["Cache-Control": "max-age=0"]
        let (connect, _, cache) = client(server, clock: ManualClock())
        _ = try get(connect)
        XCTAssertEqual(cache.count, 0)
    }

    // MARK: - Keys, credentials, storage

    /// A revalidation goes out under the caller's credentials, for the caller's own stored response: another user's
    /// stale response is neither revalidated for nor served to them.
    func testARevalidationStaysWithinOneSetOfCredentials() throws {
        let server = Server()
        let clock = ManualClock()
        let (connect, transport, _) = client(server, clock: clock)
        let alice = [HTTPHeader(name: "Authorization", value: "Bearer alice")]
        let bob = [HTTPHeader(name: "Authorization", value: "Bearer bob")]
        _ = try get(connect, headers: alice)
        clock.advance(61)

        _ = try get(connect, headers: bob)
        XCTAssertNil(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "bob has nothing stored")
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "Authorization"), "Bearer bob")

        let revalidated = try get(connect, headers: alice)
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v1\"")
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "Authorization"), "Bearer alice")
        XCTAssertEqual(String(decoding: revalidated.data, as: UTF8.self), "version 1")
    }

    /// A stale response in the storage (after a restart: a new cache over the same storage) is revalidated too, and
    /// the 304 makes the stored copy fresh again there.
    func testAStaleResponseInTheStorageIsRevalidatedAndRefreshed() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("revalidation-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        try assertRevalidated(in: MemoryResponseStorage())
        try assertRevalidated(in: DiskResponseStorage(directory: folder))
    }

    private func assertRevalidated(
        in storage: any ResponseCacheStorage, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let server = Server()
        let clock = ManualClock()
        let (first, _, _) = client(server, clock: clock, storage: storage)
        _ = try get(first)
        clock.advance(61)

        let (second, transport, _) = client(server, clock: clock, storage: storage)
        let revalidated = try get(second)
        XCTAssertEqual(transport.requests.count, 1, file: file, line: line)
        XCTAssertEqual(
            transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v1\"", file: file, line: line)
        XCTAssertEqual(String(decoding: revalidated.data, as: UTF8.self), "version 1", file: file, line: line)
        let key = "GET https://api.example.com/a"
        XCTAssertEqual(
            storage.response(forKey: key)?.expiry, clock.now.addingTimeInterval(60), file: file, line: line)

        let (third, thirdTransport, _) = client(server, clock: clock, storage: storage)
        clock.advance(30)
        XCTAssertEqual(String(decoding: try get(third).data, as: UTF8.self), "version 1", file: file, line: line)
        XCTAssertEqual(thirdTransport.requests.count, 0, "fresh again in the storage", file: file, line: line)
    }

    /// A stored response that varies on a header the request has another value of is not revalidated for it: the
    /// request goes out unconditional, and its answer replaces the variant.
    func testAVariantForOtherHeaderValuesIsNotRevalidated() throws {
        let server = Server()
        server.extraHeaders = ["Vary": "Accept-Language"]
        let clock = ManualClock()
        let (connect, transport, _) = client(server, clock: clock)
        let english = [HTTPHeader(name: "Accept-Language", value: "en")]
        _ = try get(connect, headers: english)
        clock.advance(61)

        _ = try get(connect, headers: [HTTPHeader(name: "Accept-Language", value: "fr")])
        XCTAssertNil(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"))
        clock.advance(61)
        _ = try get(connect, headers: [HTTPHeader(name: "Accept-Language", value: "fr")])
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v1\"")
    }

    /// A stale response read from the storage before the app removed everything (a logout's `removeAll()` while the
    /// read was slow) is not revalidated: the request goes out without conditions, so no 304 can serve the removed
    /// response, and nothing is stored again over the removal.
    func testAStaleStorageReadOvertakenByARemoveAllIsNotRevalidated() throws {
        let server = Server()
        let clock = ManualClock()
        let storage = SlowReadStorage()
        let (first, _, _) = client(server, clock: clock, storage: storage)
        _ = try get(first)
        clock.advance(61)

        let (second, transport, cache) = client(server, clock: clock, storage: storage)
        storage.armNextRead()
        let answered = DispatchSemaphore(value: 0)
        let answer = Guarded<ConnectResponse?>(nil)
        let (base, rule) = (self.base, self.rule)
        DispatchQueue.global().async {
            let response = try? second.response(for: Route("/a", baseURL: base), options: rule).wait(timeout: 5)
            answer.withLock { $0 = response }
            answered.signal()
        }
        XCTAssertEqual(storage.readTaken.wait(timeout: .now() + 10), .success)
        cache.removeAll()
        storage.release.signal()
        XCTAssertEqual(answered.wait(timeout: .now() + 10), .success)

        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertNil(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "nothing left to revalidate")
        XCTAssertEqual(answer.withLock { $0?.statusCode }, 200)
        XCTAssertEqual(cache.count, 0)
        XCTAssertNil(storage.response(forKey: "GET https://api.example.com/a"))
    }

    /// A stale HEAD response is revalidated by a HEAD, and the 304 serves it (a 200 with the stored headers and no
    /// body); it answers no GET.
    func testAStaleHeadResponseIsRevalidatedByAHead() throws {
        let server = Server()
        let clock = ManualClock()
        let (connect, transport, _) = client(server, clock: clock)
        let head = Route("/a", baseURL: base, method: .head)
        let first = try connect.response(for: head, options: rule).wait(timeout: 5)
        clock.advance(61)

        let revalidated = try connect.response(for: head, options: rule).wait(timeout: 5)
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(transport.requests.last?.httpMethod, "HEAD")
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v1\"")
        XCTAssertEqual(revalidated.statusCode, 200)
        XCTAssertEqual(revalidated.header("ETag"), "\"v1\"")
        XCTAssertEqual(revalidated.header("Content-Length"), "9")
        XCTAssertEqual(revalidated.data, first.data)

        _ = try get(connect)
        XCTAssertEqual(transport.requests.count, 3)
        XCTAssertEqual(transport.requests.last?.httpMethod, "GET")
        XCTAssertNil(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "a HEAD answers no GET")
    }

    /// A 304 that (against RFC 9110 §15.4.5) carries a body, and a `Content-Length` and `Content-Encoding` of its
    /// own: the stored body is served, with the stored framing fields, and stored again as it was.
    func testA304WithABodyServesTheStoredBody() throws {
        let clock = ManualClock()
        let transport = FakeTransport.answering(
            .handler { request in
                if request.value(forHTTPHeaderField: "If-None-Match") == "\"v1\"" {
                    return .success(
                        ConnectResponse(
                            request: request, statusCode: 304,
                            headers: ["ETag": "\"v1\"", "Content-Length": "5", "Content-Encoding": "gzip"],
                            data: Data("stray".utf8))!)
                }
                return .success(
                    ConnectResponse(
                        request: request, statusCode: 200,
                        headers: ["ETag": "\"v1\"", "Content-Length": "9", "Content-Type": "text/plain"],
                        data: Data("version 1".utf8))!)
            })
        let cache = ResponseCache(maxBytes: 1_000_000, now: { clock.now })
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        _ = try get(connect)
        clock.advance(61)

        for _ in 0..<2 {
            let served = try get(connect)
            XCTAssertEqual(served.statusCode, 200)
            XCTAssertEqual(String(decoding: served.data, as: UTF8.self), "version 1")
            XCTAssertEqual(served.header("Content-Length"), "9")
            XCTAssertNil(served.header("Content-Encoding"))
        }
        XCTAssertEqual(transport.requests.count, 2, "the second served from memory, as the 304 refreshed it")
    }

    /// The fields a 304's `Connection` names belong to the connection that carried it (RFC 9110 §7.6.1), not to the
    /// representation: they do not update the stored response (RFC 9111 §3.2, §3.1), served then and after.
    func testTheFieldsA304sConnectionNamesDoNotUpdateTheStoredResponse() throws {
        // Given a stored response with ETag "v1", stale
        let clock = ManualClock()
        let transport = FakeTransport.answering(
            .handler { request in
                guard request.value(forHTTPHeaderField: "If-None-Match") == "\"v1\"" else {
                    return .success(ConnectResponse(request: request, statusCode: 200, headers: ["ETag": "\"v1\""])!)
                }
                let headers = ["ETag": "\"v1\"", "Connection": "X-Hop , close", "X-Hop": "1", "X-Kept": "2"]
                return .success(ConnectResponse(request: request, statusCode: 304, headers: headers)!)
            })
        let connect = Connect(
            transport: transport, retryPolicy: nil,
            responseCache: ResponseCache(maxBytes: 1_000_000, now: { clock.now }))
        _ = try get(connect)
        clock.advance(61)

        // When a 304 that names X-Hop in its Connection field revalidates it
        for _ in 0..<2 {
            let served = try get(connect)

            // Then X-Hop and Connection are not among the stored response's fields, the 304's other fields are
            XCTAssertEqual(served.statusCode, 200)
            XCTAssertEqual(served.header("X-Kept"), "2")
            XCTAssertNil(served.header("X-Hop"))
            XCTAssertNil(served.header("Connection"))
        }
        XCTAssertEqual(transport.requests.count, 2)
    }

    /// A 304 served as the stored response ends a progress bar with the body served, as a hit does: the last report
    /// is the stored body's size of itself, not the 304's empty body (0 of 0), which left the bar at nothing.
    func testA304ServedFromTheStoreReportsTheStoredBodyAsProgress() throws {
        let clock = ManualClock()
        let (connect, transport, _) = client(Server(), clock: clock)
        _ = try get(connect)
        clock.advance(61)

        let log = Recorder<TransferProgress>()
        var options = rule
        options.progress = { log.append($0) }
        let served = try get(connect, options: options)

        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v1\"")
        XCTAssertEqual(String(decoding: served.data, as: UTF8.self), "version 1")
        XCTAssertEqual(log.values.last?.bytesReceived, 9)
        XCTAssertEqual(log.values.last?.totalBytesToReceive, 9)
        XCTAssertEqual(log.values.last?.downloadFraction, 1)
    }

    /// A 304 with a `Vary` of its own updates what the stored response varies on: a request with another value of
    /// the newly named header is not served it.
    func testAVaryFromA304UpdatesWhatTheStoredResponseVariesOn() throws {
        let server = Server()
        server.notModifiedHeaders = ["Vary": "Accept-Language"]
        let clock = ManualClock()
        let (connect, transport, _) = client(server, clock: clock)
        let english = [HTTPHeader(name: "Accept-Language", value: "en")]
        _ = try get(connect, headers: english)
        clock.advance(61)
        let revalidated = try get(connect, headers: english)
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v1\"")
        XCTAssertEqual(revalidated.header("Vary"), "Accept-Language")

        _ = try get(connect, headers: english)
        XCTAssertEqual(transport.requests.count, 2, "served to the same language")
        _ = try get(connect, headers: [HTTPHeader(name: "Accept-Language", value: "fr")])
        XCTAssertEqual(transport.requests.count, 3, "not to another")
        XCTAssertNil(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"))
    }

    /// A response stored under a rule's custom key is revalidated under that key.
    func testAResponseUnderACustomKeyIsRevalidated() throws {
        let server = Server()
        let clock = ManualClock()
        let (connect, transport, cache) = client(server, clock: clock)
        let keyed = RequestOptions(cache: CacheRule(timeToLive: 60, key: "settings"))
        _ = try get(connect, options: keyed)
        clock.advance(61)
        let revalidated = try get(connect, options: keyed)
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v1\"")
        XCTAssertEqual(String(decoding: revalidated.data, as: UTF8.self), "version 1")
        clock.advance(1)
        _ = try get(connect, options: keyed)
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(cache.hitCount, 1)
    }

    /// A successful write to the resource while its revalidation is in flight: the caller still gets the validated
    /// response, but it is not stored again over the removal.
    func testAWriteDuringARevalidationKeepsItsResponseOutOfTheCache() throws {
        let server = Server()
        let clock = ManualClock()
        let gate = Promise<Void>()
        let transport = FakeTransport()
        let revalidation = FakeResponse.handler { server.answer($0) }.released(by: gate.future)
        transport.stub(.get, "/a", with: [.handler { server.answer($0) }, revalidation])
        transport.stub(.put, "/a", with: .status(204))
        let cache = ResponseCache(maxBytes: 1_000_000, now: { clock.now })
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        _ = try get(connect)
        clock.advance(61)

        let revalidating = connect.response(for: Route("/a", baseURL: base), options: rule)
        _ = try transport.requestsReceived(count: 2).wait(timeout: 5)
        _ = try connect.response(for: Route("/a", baseURL: base, method: .put)).wait(timeout: 5)
        XCTAssertEqual(cache.count, 0)
        gate.succeed(())

        let answer = try revalidating.wait(timeout: 5)
        XCTAssertEqual(String(decoding: answer.data, as: UTF8.self), "version 1")
        XCTAssertEqual(cache.count, 0, "not stored over the write's removal")
        XCTAssertEqual(transport.requests[1].value(forHTTPHeaderField: "If-None-Match"), "\"v1\"")
    }

    /// The app removes everything (a logout's `removeAll()`) while a revalidation is in flight: the 304 that comes
    /// after validates a body the cache no longer has, which is not served (it served the body stored before the
    /// removal); the request goes again without conditions and the caller gets the network's answer, never the 304's
    /// empty body as if it were the resource. Nothing is stored again over the removal, in memory or in the storage.
    func testARemoveAllDuringARevalidationSendsTheRequestAgainAndStoresNothing() throws {
        // Given: a stale response, and its revalidation held at the server
        let server = Server()
        let clock = ManualClock()
        let gate = Promise<Void>()
        let transport = FakeTransport()
        let revalidation = FakeResponse.handler { server.answer($0) }.released(by: gate.future)
        transport.stub(
            .get, "/a", with: [.handler { server.answer($0) }, revalidation, .handler { server.answer($0) }])
        let storage = MemoryResponseStorage()
        let cache = ResponseCache(maxBytes: 1_000_000, storage: storage, now: { clock.now })
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        _ = try get(connect)
        clock.advance(61)
        let revalidating = connect.response(for: Route("/a", baseURL: base), options: rule)
        _ = try transport.requestsReceived(count: 2).wait(timeout: 5)
        // When
        cache.removeAll()
        gate.succeed(())
        // Then
        let answer = try revalidating.wait(timeout: 5)
        XCTAssertEqual(transport.requests[1].value(forHTTPHeaderField: "If-None-Match"), "\"v1\"")
        XCTAssertEqual(transport.requests.count, 3, "the 304 of a removed body sends the request again")
        XCTAssertNil(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "without conditions")
        XCTAssertEqual(answer.statusCode, 200)
        XCTAssertEqual(String(decoding: answer.data, as: UTF8.self), "version 1")
        XCTAssertEqual(cache.count, 0)
        XCTAssertNil(storage.response(forKey: "GET https://api.example.com/a"))
    }

    /// The same after `removeResponse(forKey:)` of the revalidated response: what the app removed is not served.
    func testARemovalOfTheRevalidatedResponseSendsTheRequestAgain() throws {
        // Given
        let server = Server()
        let clock = ManualClock()
        let gate = Promise<Void>()
        let transport = FakeTransport()
        let revalidation = FakeResponse.handler { server.answer($0) }.released(by: gate.future)
        transport.stub(
            .get, "/a", with: [.handler { server.answer($0) }, revalidation, .handler { server.answer($0) }])
        let cache = ResponseCache(maxBytes: 1_000_000, now: { clock.now })
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        _ = try get(connect)
        clock.advance(61)
        let revalidating = connect.response(for: Route("/a", baseURL: base), options: rule)
        _ = try transport.requestsReceived(count: 2).wait(timeout: 5)
        // When
        cache.removeResponse(forKey: "GET https://api.example.com/a")
        gate.succeed(())
        // Then
        let answer = try revalidating.wait(timeout: 5)
        XCTAssertEqual(transport.requests.count, 3)
        XCTAssertNil(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"))
        XCTAssertEqual(String(decoding: answer.data, as: UTF8.self), "version 1")
    }

    /// The removal of another key while a revalidation is in flight: the 304 validates a body the cache still has, so
    /// it is served without sending the request again, and the revalidated response is stored again.
    func testARemovalOfAnotherKeyLetsTheRevalidationServeTheStoredBody() throws {
        // Given
        let server = Server()
        let clock = ManualClock()
        let gate = Promise<Void>()
        let transport = FakeTransport()
        let revalidation = FakeResponse.handler { server.answer($0) }.released(by: gate.future)
        transport.stub(
            .get, "/a", with: [.handler { server.answer($0) }, revalidation, .handler { server.answer($0) }])
        let cache = ResponseCache(maxBytes: 1_000_000, now: { clock.now })
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        _ = try get(connect)
        clock.advance(61)
        let revalidating = connect.response(for: Route("/a", baseURL: base), options: rule)
        _ = try transport.requestsReceived(count: 2).wait(timeout: 5)
        // When
        cache.removeResponse(forKey: "GET https://api.example.com/b")
        cache.removeResponse(forKey: "GET https://api.example.com/a/")
        gate.succeed(())
        // Then
        let answer = try revalidating.wait(timeout: 5)
        XCTAssertEqual(String(decoding: answer.data, as: UTF8.self), "version 1")
        XCTAssertEqual(transport.requests.count, 2, "the 304 is served: no request sent again")
        XCTAssertEqual(cache.count, 1, "the revalidated response is stored again")
        _ = try get(connect)
        XCTAssertEqual(transport.requests.count, 2, "served from the cache")
    }

    /// The removal of the revalidated response under the key its rule names, while its request carries credentials
    /// (stored under the key and a digest of them): the 304 is not served, as for the key alone.
    func testARemovalOfTheKeyOfARevalidationWithCredentialsSendsTheRequestAgain() throws {
        // Given
        let server = Server()
        let clock = ManualClock()
        let gate = Promise<Void>()
        let transport = FakeTransport()
        let revalidation = FakeResponse.handler { server.answer($0) }.released(by: gate.future)
        transport.stub(
            .get, "/a", with: [.handler { server.answer($0) }, revalidation, .handler { server.answer($0) }])
        let cache = ResponseCache(maxBytes: 1_000_000, now: { clock.now })
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        let token = [HTTPHeader(name: "Authorization", value: "Bearer amy")]
        _ = try get(connect, headers: token)
        clock.advance(61)
        let revalidating = connect.response(for: Route("/a", baseURL: base, headers: token), options: rule)
        _ = try transport.requestsReceived(count: 2).wait(timeout: 5)
        // When
        cache.removeResponse(forKey: "GET https://api.example.com/a")
        gate.succeed(())
        // Then
        let answer = try revalidating.wait(timeout: 5)
        XCTAssertEqual(transport.requests.count, 3)
        XCTAssertNil(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"))
        XCTAssertEqual(String(decoding: answer.data, as: UTF8.self), "version 1")
    }

    /// Identical stale requests in flight together share one conditional request when the client coalesces them,
    /// and each gets the stored body.
    func testCoalescedRevalidationsShareOneConditionalRequest() throws {
        let server = Server()
        let clock = ManualClock()
        let gate = Promise<Void>()
        let transport = FakeTransport()
        let revalidation = FakeResponse.handler { server.answer($0) }.released(by: gate.future)
        transport.stub(.get, "/a", with: [.handler { server.answer($0) }, revalidation])
        let cache = ResponseCache(maxBytes: 1_000_000, now: { clock.now })
        let connect = Connect(
            transport: transport, retryPolicy: nil, responseCache: cache,
            settings: Connect.Settings(coalescesIdenticalRequests: true))
        _ = try get(connect)
        clock.advance(61)

        let first = connect.response(for: Route("/a", baseURL: base), options: rule)
        _ = try transport.requestsReceived(count: 2).wait(timeout: 5)
        let second = connect.response(for: Route("/a", baseURL: base), options: rule)
        gate.succeed(())

        for answer in [try first.wait(timeout: 5), try second.wait(timeout: 5)] {
            XCTAssertEqual(answer.statusCode, 200)
            XCTAssertEqual(String(decoding: answer.data, as: UTF8.self), "version 1")
        }
        XCTAssertEqual(transport.requests.count, 2, "one shared conditional request")
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"), "\"v1\"")
    }

    /// `only-if-cached` never sends a revalidation: a stale response is not served, and nothing is sent.
    func testOnlyIfCachedSendsNoRevalidation() throws {
        let server = Server()
        let clock = ManualClock()
        let (connect, transport, _) = client(server, clock: clock)
        _ = try get(connect)
        clock.advance(61)
        XCTAssertThrowsError(try get(connect, headers: [HTTPHeader(name: "Cache-Control", value: "only-if-cached")]))
        XCTAssertEqual(transport.requests.count, 1)
        let stale = try get(connect, headers: [HTTPHeader(name: "Cache-Control", value: "max-stale")])
        XCTAssertEqual(transport.requests.count, 1, "max-stale serves the stale response as before")
        XCTAssertEqual(String(decoding: stale.data, as: UTF8.self), "version 1")
    }

    // MARK: - Observation

    /// What an observer sees of a revalidation: a cache miss, an attempt that ended 304, and a call that ended with
    /// the stored response's status.
    func testAnObserverSeesTheMissThe304AndTheServedStatus() throws {
        let server = Server()
        let clock = ManualClock()
        let observer = ConnectObserverTests.RecordingObserver()
        let (connect, _, _) = client(server, clock: clock, observer: observer)
        _ = try get(connect)
        clock.advance(61)
        _ = try get(connect)

        XCTAssertEqual(
            observer.events.values,
            [
                "cache miss", "start 1 -", "end 1 200", "call 200 after 1",
                "cache miss", "start 1 -", "end 1 304", "call 200 after 1",
            ])
    }

    // MARK: - A caller's conditional request answered from a fresh stored response (RFC 9111 §4.3.2)

    /// What reached the caller: the response, or the status, fields and body of the error it came as.
    private func outcome(
        _ connect: Connect, headers: [HTTPHeader]
    ) -> (status: Int?, headers: [String: String], body: Data, error: ConnectError.Kind?) {
        do {
            let response = try get(connect, headers: headers)
            var fields: [String: String] = [:]
            for field in response.head.headerFields { fields[field.name.canonicalName] = field.value }
            return (response.statusCode, fields, response.data, nil)
        } catch let error as ConnectError {
            var fields: [String: String] = [:]
            for (name, value) in error.headers { fields[name.lowercased()] = value }
            return (error.statusCode, fields, error.body ?? Data(), error.kind)
        } catch {
            XCTFail("\(error)")
            return (nil, [:], Data(), nil)
        }
    }

    /// RFC 9111 §4.3.2: a caller's `If-None-Match` naming the `ETag` of a fresh stored response is answered by the
    /// cache with a 304, without the network: the stored response's validator and cache fields, no body, reaching the
    /// caller as a server's 304 to the same request does.
    func testAFreshStoredResponseAnswersACallersMatchingIfNoneMatchWith304() throws {
        let server = Server()
        let fields = ["Last-Modified": server.lastModified, "Cache-Control": "max-age=60", "Date": server.lastModified]
        server.extraHeaders = fields
        server.notModifiedHeaders = fields
        let clock = ManualClock()
        // What a server's 304 to the caller's conditional request looks like to the caller (nothing stored).
        let (uncached, _, _) = client(server, clock: clock)
        let fromServer = outcome(uncached, headers: [HTTPHeader(name: "If-None-Match", value: "\"v1\"")])
        XCTAssertEqual(fromServer.status, 304)

        let (connect, transport, cache) = client(server, clock: clock)
        _ = try get(connect)
        for value in ["\"v1\"", "W/\"v1\"", "\"v0\", \"v1\"", "*"] {
            let served = outcome(connect, headers: [HTTPHeader(name: "If-None-Match", value: value)])
            XCTAssertEqual(transport.requests.count, 1, "answered from memory: \(value)")
            XCTAssertEqual(served.status, 304, value)
            XCTAssertEqual(served.error, fromServer.error, "as a server's 304 reaches the caller: \(value)")
            XCTAssertTrue(served.body.isEmpty, value)
            XCTAssertEqual(served.headers["etag"], "\"v1\"", value)
            XCTAssertEqual(served.headers["last-modified"], server.lastModified, value)
            XCTAssertEqual(served.headers["cache-control"], "max-age=60", value)
            XCTAssertEqual(served.headers["date"], server.lastModified, value)
            XCTAssertNil(served.headers["content-type"], "no representation metadata: \(value)")
            XCTAssertNil(served.headers["content-length"], value)
        }
        XCTAssertEqual(cache.hitCount, 4)
        // The stored response is still served whole to an unconditional request.
        XCTAssertEqual(String(decoding: try get(connect).data, as: UTF8.self), "version 1")
        XCTAssertEqual(transport.requests.count, 1)
    }

    /// An `If-None-Match` that names none of the stored `ETag`s is answered with the stored 200, and its
    /// `If-Modified-Since` is not evaluated (RFC 9110 §13.2.2: `If-None-Match` wins).
    func testAFreshStoredResponseAnswersACallersOtherIfNoneMatchWithItsBody() throws {
        let server = Server()
        server.extraHeaders = ["Last-Modified": server.lastModified]
        let clock = ManualClock()
        let (connect, transport, _) = client(server, clock: clock)
        _ = try get(connect)

        let served = outcome(
            connect,
            headers: [
                HTTPHeader(name: "If-None-Match", value: "\"v0\""),
                HTTPHeader(name: "If-Modified-Since", value: server.lastModified),
            ])
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(served.status, 200)
        XCTAssertEqual(String(decoding: served.body, as: UTF8.self), "version 1")
    }

    /// An `If-Modified-Since` not older than the stored `Last-Modified` is answered with a 304; an older one (or one
    /// that is no HTTP-date) with the stored 200.
    func testAFreshStoredResponseAnswersACallersIfModifiedSince() throws {
        let server = Server()
        server.sendsETag = false
        server.extraHeaders = ["Last-Modified": server.lastModified]
        let clock = ManualClock()
        let (connect, transport, _) = client(server, clock: clock)
        _ = try get(connect)

        for (value, status) in [
            (server.lastModified, 304), ("Tue, 13 Jan 1970 00:00:00 GMT", 304), ("Mon, 12 Jan 1970 13:46:39 GMT", 200),
            ("yesterday", 200),
        ] {
            let served = outcome(connect, headers: [HTTPHeader(name: "If-Modified-Since", value: value)])
            XCTAssertEqual(transport.requests.count, 1, value)
            XCTAssertEqual(served.status, status, value)
            XCTAssertEqual(served.body.isEmpty, status == 304, value)
            if status == 304 { XCTAssertEqual(served.headers["last-modified"], server.lastModified, value) }
        }
    }
}
