import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How old a response the ``ResponseCache`` serves says it is (RFC 9111 §5.1, §4.2.3).
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
}
