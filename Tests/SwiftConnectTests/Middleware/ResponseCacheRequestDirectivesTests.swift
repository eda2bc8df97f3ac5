import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// RFC 9111 §5.2.1 and §5.4: the request's own `Cache-Control` (or, without one, its `Pragma`) as it reaches the
/// ``ResponseCache``: `no-store` neither stores nor serves, `no-cache`, `max-age=0` and `Pragma: no-cache` fetch
/// fresh and store what comes.
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
}
