import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// Revalidation through a real engine (``TransportUnderTest``) to a server on 127.0.0.1 that answers
/// `If-None-Match` with `304 Not Modified`.
final class ResponseCacheRevalidationIntegrationTests: IntegrationTestCase {
    /// A stale response goes back to the server conditional on its `ETag`, under the caller's credentials; the
    /// server's 304 (no body) serves the stored body with the 304's headers, fresh again for the rule's time to live.
    func testAStaleResponseIsRevalidatedAndTheServers304ServesTheStoredBody() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        let seen = Recorder<(ifNoneMatch: String?, authorization: String?)>()
        server.route("GET", "/config") { request in
            seen.append((request.header("If-None-Match"), request.header("Authorization")))
            if request.header("If-None-Match") == "\"v1\"" {
                return LocalServer.Response(
                    status: 304, headers: [("ETag", "\"v1\""), ("X-Checked", "again"), ("Cache-Control", "max-age=60")])
            }
            return LocalServer.Response(
                headers: [("ETag", "\"v1\""), ("X-Checked", "once"), ("Content-Type", "application/json")],
                body: Data(#"{"theme":"dark"}"#.utf8))
        }
        let clock = ManualClock()
        let cache = ResponseCache(now: { clock.now })
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil, responseCache: cache)
        let route = Route(
            "/config", baseURL: server.baseURL, headers: [HTTPHeader(name: "Authorization", value: "Bearer alice")],
            options: RequestOptions(cache: CacheRule(timeToLive: 60)))

        let first = try connect.response(for: route).wait(timeout: 10)
        clock.advance(61)
        let revalidated = try connect.response(for: route).wait(timeout: 10)
        clock.advance(30)
        let served = try connect.response(for: route).wait(timeout: 10)

        XCTAssertEqual(server.requestCount(for: "GET", path: "/config"), 2, "the third is served from memory")
        let requests = seen.values
        XCTAssertEqual(requests.map(\.ifNoneMatch), [nil, "\"v1\""])
        XCTAssertEqual(requests.map(\.authorization), ["Bearer alice", "Bearer alice"])
        XCTAssertEqual(revalidated.statusCode, 200)
        XCTAssertEqual(revalidated.data, first.data)
        XCTAssertEqual(String(decoding: revalidated.data, as: UTF8.self), #"{"theme":"dark"}"#)
        XCTAssertEqual(revalidated.header("X-Checked"), "again")
        XCTAssertEqual(revalidated.header("Content-Length"), "16")
        XCTAssertEqual(served.data, first.data)
        XCTAssertEqual(served.header("X-Checked"), "again")
        XCTAssertEqual(cache.hitCount, 1)
    }

    /// A GET with `Range` through a real engine reaches the server although a fresh complete response is stored, and
    /// gets the server's 206, the part it asked for; the stored 200 keeps answering plain GETs whole.
    func testARangeRequestReachesTheServerAndGetsItsPartialResponse() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        let ranges = Recorder<String?>()
        server.route("GET", "/file") { request in
            ranges.append(request.header("Range"))
            guard request.header("Range") == "bytes=0-2" else {
                return LocalServer.Response(headers: [("ETag", "\"v1\"")], body: Data("0123456789".utf8))
            }
            return LocalServer.Response(
                status: 206, headers: [("ETag", "\"v1\""), ("Content-Range", "bytes 0-2/10")], body: Data("012".utf8))
        }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil, responseCache: ResponseCache())
        let rule = RequestOptions(cache: CacheRule(timeToLive: 300))
        let whole = Route("/file", baseURL: server.baseURL, options: rule)
        let part = Route(
            "/file", baseURL: server.baseURL, headers: [HTTPHeader(name: "Range", value: "bytes=0-2")], options: rule)

        XCTAssertEqual(try connect.request(whole).wait(timeout: 10), Data("0123456789".utf8))
        let partial = try connect.response(for: part).wait(timeout: 10)
        XCTAssertEqual(partial.statusCode, 206)
        XCTAssertEqual(partial.data, Data("012".utf8))
        XCTAssertEqual(try connect.request(whole).wait(timeout: 10), Data("0123456789".utf8))
        XCTAssertEqual(ranges.values, [nil, "bytes=0-2"], "the last GET is served from memory")
    }

    /// RFC 9111 §4.3.5 through a real engine: a HEAD whose `ETag` and `Content-Length` (the engine's, as the server
    /// sent them without a body) agree with the stored GET response leaves it served; once the document changed, a
    /// HEAD's answer with the new `ETag` keeps the stored body from being served to the next GET. The HEAD has no cache
    /// rule.
    func testAHeadThatShowsTheDocumentChangedKeepsTheStoredGetFromBeingServed() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        let version = Guarded(1)
        let answer: @Sendable (LocalServer.Request) -> LocalServer.Response = { _ in
            let current = version.withLock { $0 }
            return LocalServer.Response(
                headers: [("ETag", "\"v\(current)\""), ("Content-Type", "application/json")],
                body: Data(#"{"version":\#(current)}"#.utf8))
        }
        server.route("GET", "/doc", handler: answer)
        server.route("HEAD", "/doc", handler: answer)
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil, responseCache: ResponseCache())
        let rule = RequestOptions(cache: CacheRule(timeToLive: 300))
        let get = Route("/doc", baseURL: server.baseURL, options: rule)
        // A HEAD that checks for a change is not cached itself.
        let head = Route("/doc", baseURL: server.baseURL, method: .head)
        let body = { String(decoding: try connect.request(get).wait(timeout: 10), as: UTF8.self) }

        XCTAssertEqual(try body(), #"{"version":1}"#)
        _ = try connect.response(for: head).wait(timeout: 10)
        XCTAssertEqual(try body(), #"{"version":1}"#)
        XCTAssertEqual(server.requestCount(for: "GET", path: "/doc"), 1, "the HEAD agreed: served from memory")

        version.withLock { $0 = 2 }
        let changed = try connect.response(for: head).wait(timeout: 10)
        XCTAssertEqual(changed.header("ETag"), "\"v2\"")
        XCTAssertEqual(try body(), #"{"version":2}"#)
        XCTAssertEqual(server.requestCount(for: "GET", path: "/doc"), 2)
    }

    /// A response that came gzip-encoded is stored decoded (the engine decoded it on its way), and a 304 to its
    /// revalidation serves that decoded body again: not decoded twice, not the 304's empty body.
    func testA304ToAGzipEncodedResponseServesItsDecodedBody() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        // `"conformance " × 100`, gzip-compressed.
        let gzipped = try XCTUnwrap(
            Data(base64Encoded: "H4sIAAAAAAACA0vOz0vLL8pNzEtOVUgeZY+yR9mj7EHMBgBfY9NSsAQAAA=="))
        let expected = String(repeating: "conformance ", count: 100)
        server.route("GET", "/text") { request in
            if request.header("If-None-Match") == "\"v1\"" {
                return LocalServer.Response(status: 304, headers: [("ETag", "\"v1\""), ("Content-Encoding", "gzip")])
            }
            return LocalServer.Response(
                headers: [("ETag", "\"v1\""), ("Content-Type", "text/plain"), ("Content-Encoding", "gzip")],
                body: gzipped)
        }
        let clock = ManualClock()
        let storage = MemoryResponseStorage()
        let cache = ResponseCache(storage: storage, now: { clock.now })
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil, responseCache: cache)
        let route = Route(
            "/text", baseURL: server.baseURL, headers: [HTTPHeader(name: "Accept-Encoding", value: "gzip")],
            options: RequestOptions(cache: CacheRule(timeToLive: 60)))

        let first = try connect.response(for: route).wait(timeout: 10)
        XCTAssertEqual(String(decoding: first.data, as: UTF8.self), expected)
        let key = "GET " + route.baseURL.appendingPathComponent("text").absoluteString
        XCTAssertEqual(storage.response(forKey: key)?.body, Data(expected.utf8), "stored decoded")
        clock.advance(61)
        let revalidated = try connect.response(for: route).wait(timeout: 10)

        XCTAssertEqual(server.requestCount(for: "GET", path: "/text"), 2)
        XCTAssertEqual(revalidated.statusCode, 200)
        XCTAssertEqual(String(decoding: revalidated.data, as: UTF8.self), expected)
        XCTAssertEqual(storage.response(forKey: key)?.body, Data(expected.utf8))
    }

    /// RFC 9111 §4.3.2 through a real engine: a fresh stored response does not answer `If-Match` or `If-Range`, which
    /// only the server can judge. The server gets them, and its 412 and 206 reach the caller and leave the stored 200,
    /// which the next plain GET is served from memory, whole.
    func testConditionsForTheServerReachItAndItsAnswersLeaveTheStoredResponse() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        let seen = Recorder<(ifMatch: String?, ifRange: String?)>()
        server.route("GET", "/doc") { request in
            seen.append((request.header("If-Match"), request.header("If-Range")))
            if request.header("If-Match") != nil { return LocalServer.Response(status: 412) }
            if request.header("If-Range") == "\"v1\"", request.header("Range") == "bytes=0-3" {
                return LocalServer.Response(
                    status: 206, headers: [("ETag", "\"v1\""), ("Content-Range", "bytes 0-3/11")],
                    body: Data("{\"ve".utf8))
            }
            return LocalServer.Response(headers: [("ETag", "\"v1\"")], body: Data(#"{"version"}"#.utf8))
        }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil, responseCache: ResponseCache())
        let rule = RequestOptions(cache: CacheRule(timeToLive: 300))
        let route = { (headers: [HTTPHeader]) in Route("/doc", baseURL: server.baseURL, headers: headers, options: rule)
        }

        XCTAssertEqual(try connect.response(for: route([])).wait(timeout: 10).statusCode, 200)
        XCTAssertThrowsError(
            try connect.response(for: route([HTTPHeader(name: "If-Match", value: "\"v0\"")])).wait(timeout: 10)
        ) { XCTAssertEqual(($0 as? ConnectError)?.statusCode, 412) }
        let partial = try connect.response(
            for: route([HTTPHeader(name: "Range", value: "bytes=0-3"), HTTPHeader(name: "If-Range", value: "\"v1\"")])
        ).wait(timeout: 10)
        XCTAssertEqual(partial.statusCode, 206)
        XCTAssertEqual(String(decoding: partial.data, as: UTF8.self), "{\"ve")

        let served = try connect.response(for: route([])).wait(timeout: 10)
        XCTAssertEqual(server.requestCount(for: "GET", path: "/doc"), 3, "the last is served from memory")
        XCTAssertEqual(seen.values.map(\.ifMatch), [nil, "\"v0\"", nil])
        XCTAssertEqual(seen.values.map(\.ifRange), [nil, nil, "\"v1\""])
        XCTAssertEqual(served.statusCode, 200)
        XCTAssertEqual(String(decoding: served.data, as: UTF8.self), #"{"version"}"#)
    }
}
