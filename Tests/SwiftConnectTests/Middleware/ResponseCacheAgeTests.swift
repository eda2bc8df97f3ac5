import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How old a response the ``ResponseCache`` serves says it is (RFC 9111 §5.1, §4.2.3), and how that age counts
/// against the rule's time to live.
final class ResponseCacheAgeTests: XCTestCase {
    private let route = Route("/a", baseURL: URL(string: "https://api.example.com")!)

    /// A client over `transport` with a cache on `clock` (and `storage`), and the rule of its requests.
    private func client(
        _ transport: FakeTransport, clock: ManualClock, storage: (any ResponseCacheStorage)? = nil
    ) -> Connect {
        let cache = ResponseCache(maxBytes: 1_000_000, storage: storage, now: { clock.now })
        return Connect(transport: transport, retryPolicy: nil, responseCache: cache)
    }

    private let rule = RequestOptions(cache: CacheRule(timeToLive: 3600))

    // MARK: - The Age of a served response

    /// A response served from memory says how long it has been stored, in whole seconds: the time since it came by
    /// the cache's clock.
    func testAResponseServedFromMemoryCarriesItsAge() throws {
        let clock = ManualClock()
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = client(transport, clock: clock)
        let first = try connect.response(for: route, options: rule).wait(timeout: 5)
        XCTAssertNil(first.header("Age"), "the network's answer is passed on as it came")

        clock.advance(7.9)
        let served = try connect.response(for: route, options: rule).wait(timeout: 5)

        XCTAssertEqual(transport.requests.count, 1, "served from the cache")
        XCTAssertEqual(served.header("Age"), "7")
        XCTAssertEqual(served.head.headerFields[values: "Age"], ["7"])
        XCTAssertEqual(served.response.value(forHTTPHeaderField: "Age"), "7")
        XCTAssertEqual(served.header("Content-Type"), "application/json", "the other headers are kept")
        XCTAssertEqual(served.statusCode, 200)
        XCTAssertEqual(served.data, Data("{}".utf8))

        clock.advance(100)
        XCTAssertEqual(try connect.response(for: route, options: rule).wait(timeout: 5).header("Age"), "107")
    }

    /// A response served at once says `Age: 0`.
    func testAResponseServedAtOnceSaysAgeZero() throws {
        let clock = ManualClock()
        let connect = client(FakeTransport.answering(.json(string: "{}")), clock: clock)
        _ = try connect.response(for: route, options: rule).wait(timeout: 5)
        XCTAssertEqual(try connect.response(for: route, options: rule).wait(timeout: 5).header("Age"), "0")
    }

    /// The `Age` the response came with (the time it spent in caches before this one) is added to, and replaced:
    /// the served response has one `Age` field, whatever its case and however many fields came.
    func testTheAgeItCameWithIsReplacedNotDuplicated() throws {
        for (name, value) in [("Age", "100"), ("age", "100"), ("AGE", " 100 "), ("Age", "100, 100")] {
            let clock = ManualClock()
            let transport = FakeTransport.answering(
                .json(string: "{}", headers: [name: value, "Cache-Control": "max-age=3600"]))
            let connect = client(transport, clock: clock)
            _ = try connect.response(for: route, options: rule).wait(timeout: 5)
            clock.advance(5)
            let served = try connect.response(for: route, options: rule).wait(timeout: 5)
            XCTAssertEqual(transport.requests.count, 1, "\(name): \(value)")
            XCTAssertEqual(served.head.headerFields[values: "Age"], ["105"], "\(name): \(value)")
        }
    }

    /// A response an engine reported as Foundation's `HTTPURLResponse` (URLSession's) is served with its headers, its
    /// `Age` replaced, in Foundation's form too.
    func testAFoundationResponseIsServedWithItsAge() throws {
        let clock = ManualClock()
        let transport = FakeTransport.answering(
            .handler { request in
                let head = HTTPURLResponse(
                    url: request.url!, statusCode: 200, httpVersion: "HTTP/1.1",
                    headerFields: ["age": "10", "Content-Type": "text/plain", "ETag": #""v1""#])!
                return .success(ConnectResponse(request: request, response: head, data: Data("hi".utf8)))
            })
        let connect = client(transport, clock: clock)
        _ = try connect.response(for: route, options: rule).wait(timeout: 5)
        clock.advance(5)
        let served = try connect.response(for: route, options: rule).wait(timeout: 5)
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(served.head.headerFields[values: "Age"], ["15"])
        let ages = served.response.allHeaderFields.keys.compactMap { $0 as? String }.filter { $0.lowercased() == "age" }
        XCTAssertEqual(ages.count, 1)
        XCTAssertEqual(served.response.value(forHTTPHeaderField: "Age"), "15")
        XCTAssertEqual(served.header("ETag"), #""v1""#)
        XCTAssertEqual(served.header("Content-Type"), "text/plain")
        XCTAssertEqual(served.response.url, URL(string: "https://api.example.com/a"))
        XCTAssertEqual(served.data, Data("hi".utf8))
    }

    /// An `Age` that is not a non-negative integer counts as 0, and is replaced by the cache's own.
    func testAnInvalidAgeItCameWithIsReplaced() throws {
        for value in ["abc", "-5", "1.5", ""] {
            let clock = ManualClock()
            let connect = client(FakeTransport.answering(.json(string: "{}", headers: ["Age": value])), clock: clock)
            _ = try connect.response(for: route, options: rule).wait(timeout: 5)
            clock.advance(3)
            let served = try connect.response(for: route, options: rule).wait(timeout: 5)
            XCTAssertEqual(served.head.headerFields[values: "Age"], ["3"], "Age: \(value)")
        }
    }

    /// An `Age` too large for any integer saturates at 2³¹ (RFC 9111 §1.2.2), never a crash; with a rule that
    /// keeps a response for ever it is still served, saying so.
    func testAHugeAgeSaturates() throws {
        let clock = ManualClock()
        let transport = FakeTransport.answering(.json(string: "{}", headers: ["Age": "99999999999999999999999999"]))
        let connect = client(transport, clock: clock)
        let forever = RequestOptions(cache: CacheRule(timeToLive: .infinity))
        _ = try connect.response(for: route, options: forever).wait(timeout: 5)
        clock.advance(10)
        let served = try connect.response(for: route, options: forever).wait(timeout: 5)
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(served.header("Age"), "2147483648")
    }

    /// A clock set back after the response came (a user fixing the time) makes no negative `Age`.
    func testAClockSetBackGivesAgeZero() throws {
        let clock = ManualClock()
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = client(transport, clock: clock)
        _ = try connect.response(for: route, options: rule).wait(timeout: 5)
        clock.advance(-30)
        let served = try connect.response(for: route, options: rule).wait(timeout: 5)
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(served.header("Age"), "0")
    }

    /// A response read from the storage (another cache on it, as after a restart) is as old as the time since the
    /// first cache received it, plus the `Age` it came with; the storage keeps the `Age` it came with, not the
    /// served one.
    func testAResponseServedFromTheStorageCarriesItsAge() throws {
        let clock = ManualClock()
        let storage = MemoryResponseStorage()
        let transport = FakeTransport.answering(.json(string: "{}", headers: ["Age": "20"]))
        _ = try client(transport, clock: clock, storage: storage).response(for: route, options: rule).wait(timeout: 5)

        clock.advance(40)
        let later = client(transport, clock: clock, storage: storage)
        let served = try later.response(for: route, options: rule).wait(timeout: 5)
        XCTAssertEqual(transport.requests.count, 1, "served from the storage")
        XCTAssertEqual(served.head.headerFields[values: "Age"], ["60"])
        // Now in the second cache's memory: it ages from the same arrival.
        clock.advance(1)
        XCTAssertEqual(try later.response(for: route, options: rule).wait(timeout: 5).header("Age"), "61")
        let key = ResponseCache.key(
            for: ConnectRequest(url: URL(string: "https://api.example.com/a")!), rule: CacheRule(timeToLive: 3600))
        let kept = storage.response(forKey: key)?.headers.filter { $0.name.lowercased() == "age" }.map(\.value)
        XCTAssertEqual(kept, ["20"])
    }

    /// A stale response served to a request that accepts one (`max-stale`, `.returnCacheDataElseLoad`) says how
    /// old it is too: older than its lifetime.
    func testAStaleResponseServedCarriesItsAge() throws {
        let clock = ManualClock()
        let transport = FakeTransport.answering(.json(string: "{}", headers: ["Cache-Control": "max-age=10"]))
        let connect = client(transport, clock: clock)
        _ = try connect.response(for: route, options: rule).wait(timeout: 5)
        clock.advance(25)
        var stale = rule
        stale.headers = [HTTPHeader(name: "Cache-Control", value: "max-stale")]
        let served = try connect.response(for: route, options: stale).wait(timeout: 5)
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(served.header("Age"), "25")
    }

    // MARK: - Age against the rule's time to live

    /// Without `max-age` or `Expires`, the rule's time to live is the response's freshness lifetime: the `Age` it
    /// came with counts against it, as RFC 9111's heuristic freshness does. A CDN's answer already 3000 s old under
    /// a rule of an hour is fresh for 600 s more, not 3600.
    func testTheAgeItCameWithCountsAgainstTheRulesTimeToLive() throws {
        try assertServed(["Age": "3000"], timeToLive: 3600, at: 599, notAt: 601)
        try assertServed(["Age": "50"], timeToLive: 60, at: 9, notAt: 11)
    }

    /// The time to live bounds the lifetime a `max-age` or `Expires` gives, and the age counts against the smaller:
    /// a long `max-age` does not restart the rule's time to live at the response's arrival.
    func testTheAgeCountsAgainstTheRulesTimeToLiveUnderALongerMaxAge() throws {
        try assertServed(["Age": "3000", "Cache-Control": "max-age=86400"], timeToLive: 3600, at: 599, notAt: 601)
        try assertServed(["Age": "3000", "Cache-Control": "max-age=3300"], timeToLive: 3600, at: 299, notAt: 301)
    }

    /// A response whose `Age` is the rule's time to live or more is stale on arrival: not stored, and the next
    /// request goes to the network.
    func testAResponseOlderThanTheRulesTimeToLiveIsNotStored() throws {
        for age in ["60", "61", "99999999999999999999999999"] {
            let clock = ManualClock()
            let transport = FakeTransport.answering(.json(string: "{}", headers: ["Age": age]))
            let cache = ResponseCache(maxBytes: 1_000_000, now: { clock.now })
            let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
            let short = RequestOptions(cache: CacheRule(timeToLive: 60))
            _ = try connect.response(for: route, options: short).wait(timeout: 5)
            XCTAssertEqual(cache.count, 0, "Age: \(age)")
            _ = try connect.response(for: route, options: short).wait(timeout: 5)
            XCTAssertEqual(transport.requests.count, 2, "Age: \(age)")
        }
    }

    /// Asserts a response with `headers` under a rule of `timeToLive` seconds is served from the cache `at` seconds
    /// after it came, and not `notAt` seconds after.
    private func assertServed(
        _ headers: [String: String], timeToLive: TimeInterval, at served: TimeInterval, notAt expired: TimeInterval,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        for (after, isServed) in [(served, true), (expired, false)] {
            let clock = ManualClock()
            let transport = FakeTransport.answering(.json(string: "{}", headers: headers))
            let connect = client(transport, clock: clock)
            let options = RequestOptions(cache: CacheRule(timeToLive: timeToLive))
            _ = try connect.response(for: route, options: options).wait(timeout: 5)
            clock.advance(after)
            _ = try connect.response(for: route, options: options).wait(timeout: 5)
            XCTAssertEqual(
                transport.requests.count == 1, isServed, "\(headers) after \(after) s", file: file, line: line)
        }
    }
}
