import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

/// A stored response and the request's redirect limit (`RequestOptions.maxRedirects`).
final class ResponseCacheRedirectLimitTests: XCTestCase {
    /// A redirected response is stored under the URL asked for. A request that takes a redirect as its answer
    /// (`maxRedirects = 0`, a link shortener read for its `Location`) asked for the 3xx, not for where it points.
    func testARequestThatTakesARedirectAsItsAnswerIsNotServedTheRedirectedResponse() throws {
        // Given: /s/x7 redirects to /landing, whose answer the cache stored under /s/x7
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/s/x7") { _ in .redirect(to: "/landing") }
        server.route("GET", "/landing") { _ in .json(["page": "landing"]) }
        let connect = Connect(
            transport: URLSessionTransport(), retryPolicy: nil,
            responseCache: ResponseCache(defaultRule: CacheRule(timeToLive: 60)))
        let link = Route("/s/x7", baseURL: server.baseURL)
        XCTAssertEqual(try connect.response(for: link).wait().statusCode, 200)
        // When
        var options = RequestOptions(acceptsEveryStatus: true)
        options.maxRedirects = 0
        let response = try connect.response(for: link, options: options).wait()
        // Then
        XCTAssertEqual(response.statusCode, 302)
        XCTAssertEqual(response.header("Location"), "/landing")
        XCTAssertEqual(server.requests.map(\.path), ["/s/x7", "/landing", "/s/x7"])
    }

    /// The same for a response read back from a storage, by a cache whose memory does not have it.
    func testARequestThatTakesARedirectAsItsAnswerIsNotServedTheRedirectedResponseFromTheStorage() throws {
        // Given: the redirected answer written to a disk storage by one cache, read by another
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/s/x7") { _ in .redirect(to: "/landing") }
        server.route("GET", "/landing") { _ in .json(["page": "landing"]) }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let rule = CacheRule(timeToLive: 60)
        let writer = Connect(
            transport: URLSessionTransport(), retryPolicy: nil,
            responseCache: ResponseCache(defaultRule: rule, storage: try DiskResponseStorage(directory: folder)))
        let link = Route("/s/x7", baseURL: server.baseURL)
        XCTAssertEqual(try writer.response(for: link).wait().statusCode, 200)
        let reader = ResponseCache(defaultRule: rule, storage: try DiskResponseStorage(directory: folder))
        let connect = Connect(transport: URLSessionTransport(), retryPolicy: nil, responseCache: reader)
        // When
        var options = RequestOptions(acceptsEveryStatus: true)
        options.maxRedirects = 0
        let response = try connect.response(for: link, options: options).wait()
        // Then: the 302, and the stored answer is still there for a request that follows redirects
        XCTAssertEqual(response.statusCode, 302)
        XCTAssertEqual(try connect.response(for: link).wait().statusCode, 200)
        XCTAssertEqual(server.requests.map(\.path), ["/s/x7", "/landing", "/s/x7"])
        XCTAssertEqual(reader.hitCount, 1)
    }

    /// A response no redirect led to is served to a request with a redirect limit as to any other.
    func testAResponseThatWasNotRedirectedIsServedToARequestWithARedirectLimit() throws {
        // Given
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/config") { _ in .json(["theme": "dark"]) }
        let cache = ResponseCache(defaultRule: CacheRule(timeToLive: 60))
        let connect = Connect(transport: URLSessionTransport(), retryPolicy: nil, responseCache: cache)
        let config = Route("/config", baseURL: server.baseURL)
        XCTAssertEqual(try connect.response(for: config).wait().statusCode, 200)
        // When
        var options = RequestOptions()
        options.maxRedirects = 0
        let response = try connect.response(for: config, options: options).wait()
        // Then
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(server.requests.map(\.path), ["/config"])
        XCTAssertEqual(cache.hitCount, 1)
    }
}
