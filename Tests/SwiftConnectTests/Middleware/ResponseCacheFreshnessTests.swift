import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the response's own `Cache-Control`, `Expires`, `Age` and `Pragma` headers do to the ``ResponseCache``: they
/// can keep a response out of it or shorten its rule's time to live, never lengthen it.
final class ResponseCacheFreshnessTests: XCTestCase {
    /// The clocks' starting time.
    private static let start = Date(timeIntervalSince1970: 1_000_000)

    /// `date` as an IMF-fixdate (`Mon, 12 Jan 1970 13:46:40 GMT`).
    private static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    /// What a cache made of a response with `headers`, stored under a rule of `timeToLive` seconds: the response
    /// is requested once, then again `after` seconds later (each on a fresh client, cache and clock).
    private struct Outcome {
        /// Whether the first response was stored.
        var isStored: Bool
        /// Whether the second request was served from the cache.
        var isServed: Bool
    }

    private func outcome(
        of headers: [String: String], status: Int = 200, timeToLive: TimeInterval = 60, after seconds: TimeInterval = 1,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> Outcome {
        let clock = ManualClock()
        let transport = FakeTransport.answering(.json(string: "{}", status: status, headers: headers))
        let cache = ResponseCache(maxBytes: 1_000_000, now: { clock.now })
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        let route = Route("/a", baseURL: try XCTUnwrap(URL(string: "https://api.example.com")))
        let rule = RequestOptions(cache: CacheRule(timeToLive: timeToLive))
        _ = try connect.request(route, options: rule).wait(timeout: 5)
        let isStored = cache.count == 1
        clock.advance(seconds)
        _ = try connect.request(route, options: rule).wait(timeout: 5)
        let isServed = transport.requests.count == 1
        XCTAssertEqual(cache.hitCount, isServed ? 1 : 0, "hits", file: file, line: line)
        XCTAssertEqual(cache.missCount, isServed ? 1 : 2, "misses", file: file, line: line)
        return Outcome(isStored: isStored, isServed: isServed)
    }

    /// Asserts a response with `headers` is not stored at all.
    private func assertNotStored(
        _ headers: [String: String], status: Int = 200, timeToLive: TimeInterval = 60,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let result = try outcome(of: headers, status: status, timeToLive: timeToLive, after: 0, file: file, line: line)
        XCTAssertFalse(result.isStored, "\(headers) stored", file: file, line: line)
        XCTAssertFalse(result.isServed, "\(headers) served", file: file, line: line)
    }

    /// Asserts a response with `headers` is served `servedAt` seconds after it was stored but not `expiredAt`.
    private func assertLifetime(
        _ headers: [String: String], status: Int = 200, timeToLive: TimeInterval = 60, servedAt: TimeInterval,
        expiredAt: TimeInterval, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let early = try outcome(
            of: headers, status: status, timeToLive: timeToLive, after: servedAt, file: file, line: line)
        XCTAssertTrue(early.isServed, "\(headers) not served after \(servedAt) s", file: file, line: line)
        let late = try outcome(
            of: headers, status: status, timeToLive: timeToLive, after: expiredAt, file: file, line: line)
        XCTAssertTrue(late.isStored, "\(headers) not stored", file: file, line: line)
        XCTAssertFalse(late.isServed, "\(headers) still served after \(expiredAt) s", file: file, line: line)
    }

    // MARK: - Cache-Control as a list of directives

    /// `no-store` is a directive, in any case and position, not a substring: an extension directive or a quoted
    /// value that contains the letters does not keep the response out.
    func testNoStoreIsADirectiveNotASubstring() throws {
        try assertNotStored(["Cache-Control": "no-store"])
        try assertNotStored(["Cache-Control": "max-age=60, NO-STORE"])
        try assertNotStored(["Cache-Control": "private,no-store , max-age=60"])
        try assertLifetime(["Cache-Control": "x-no-store-ext"], servedAt: 59, expiredAt: 61)
        try assertLifetime(["Cache-Control": #"ext="no-store", max-age=30"#], servedAt: 29, expiredAt: 31)
        try assertLifetime(["Cache-Control": #"ext="a, no-store", max-age=30"#], servedAt: 29, expiredAt: 31)
    }

    /// `no-cache`, with or without field names, asks for revalidation before every reuse: a response without a
    /// validator (`ETag`, `Last-Modified`) to revalidate it with is not stored (with one, see
    /// `ResponseCacheRevalidationTests`).
    func testNoCacheResponsesAreNotStored() throws {
        try assertNotStored(["Cache-Control": "no-cache"])
        try assertNotStored(["Cache-Control": "max-age=60, No-Cache"])
        try assertNotStored(["Cache-Control": #"no-cache="Set-Cookie""#])
        try assertNotStored(["Cache-Control": #"public, no-cache="Set-Cookie, Authorization", max-age=60"#])
        try assertLifetime(["Cache-Control": "no-cache-ext, max-age=30"], servedAt: 29, expiredAt: 31)
    }

    /// Directives that concern shared caches, revalidation after expiry or reloads change nothing.
    func testDirectivesWithoutMeaningForThisCacheChangeNothing() throws {
        let headers = ["Cache-Control": "public, private, must-revalidate, proxy-revalidate, immutable, s-maxage=0"]
        try assertLifetime(headers, servedAt: 59, expiredAt: 61)
        try assertLifetime(["Cache-Control": ""], servedAt: 59, expiredAt: 61)
        try assertLifetime(["Cache-Control": " , ,"], servedAt: 59, expiredAt: 61)
    }

    // MARK: - max-age and Age

    /// `max-age` shortens the rule's time to live, and never lengthens it.
    func testMaxAgeShortensTheRulesTimeToLiveButNeverLengthensIt() throws {
        try assertLifetime(["Cache-Control": "max-age=10"], servedAt: 9, expiredAt: 11)
        try assertLifetime(["Cache-Control": "public, MAX-AGE = 10"], servedAt: 9, expiredAt: 11)
        try assertLifetime(["Cache-Control": #"max-age="10""#], servedAt: 9, expiredAt: 11)
        try assertLifetime(["Cache-Control": "max-age=3600"], servedAt: 59, expiredAt: 61)
        try assertLifetime(["Cache-Control": "max-age=3600"], timeToLive: 5, servedAt: 4, expiredAt: 6)
    }

    /// Of several `max-age` directives (several `Cache-Control` lines the platform joined with commas), the first
    /// counts.
    func testTheFirstMaxAgeCounts() throws {
        try assertLifetime(["Cache-Control": "max-age=10, max-age=100"], servedAt: 9, expiredAt: 11)
        try assertLifetime(
            ["Cache-Control": "max-age=100, public, max-age=10"], timeToLive: 600, servedAt: 99, expiredAt: 101)
        try assertNotStored(["Cache-Control": "max-age=0, max-age=100"])
    }

    /// A quoted string that never closes (a malformed value) does not hide the directives after it: it ends at the
    /// next comma, and `no-store`, `no-cache` and `max-age` after it still count.
    func testAQuotedStringThatNeverClosesHidesNoDirective() throws {
        try assertNotStored(["Cache-Control": #"ext="x, no-store"#])
        try assertNotStored(["Cache-Control": #"max-age=60, ext="x, no-cache"#])
        try assertLifetime(["Cache-Control": #"ext="x, max-age=10"#], servedAt: 9, expiredAt: 11)
        // A quoted string that closes still keeps its commas: this one is a single extension directive.
        try assertLifetime(["Cache-Control": #"ext="x, no-store", max-age=10"#], servedAt: 9, expiredAt: 11)
    }

    /// A `"` inside an unquoted argument or a name opens no quoted string: it hid every directive up to the next `"`,
    /// and a response that said `no-store` was stored.
    func testAStrayQuoteInATokenHidesNoDirective() throws {
        try assertNotStored(["Cache-Control": #"ext=a"b, no-store, other="c""#])
        try assertNotStored(["Cache-Control": #"ext"=1, no-cache, other="c""#])
        try assertLifetime(["Cache-Control": #"ext=a"b, max-age=10, other="c""#], servedAt: 9, expiredAt: 11)
        // A quoted argument after blanks still keeps its commas
        try assertLifetime(["Cache-Control": #"ext= "x, no-store", max-age=10"#], servedAt: 9, expiredAt: 11)
    }

    /// The time the response already spent in other caches (`Age`) is taken off `max-age`.
    func testAgeIsTakenOffMaxAge() throws {
        try assertLifetime(["Cache-Control": "max-age=30", "Age": "25"], servedAt: 4, expiredAt: 6)
        try assertNotStored(["Cache-Control": "max-age=30", "Age": "30"])
        try assertNotStored(["Cache-Control": "max-age=30", "Age": "31"])
        try assertNotStored(["Cache-Control": "max-age=60", "Age": "99999999999999999999999999"])
    }

    /// `Age` is a singleton, but two fields joined arrive as a list: the first member counts (RFC 9111 §5.1); the
    /// list was read as invalid, so the response counted as new.
    func testAListOfAgesCountsItsFirst() throws {
        try assertLifetime(
            ["Cache-Control": "max-age=3630", "Age": "3600, 3600"], timeToLive: 7200, servedAt: 29, expiredAt: 31)
        try assertLifetime(
            ["Cache-Control": "max-age=3630", "Age": "3600,1"], timeToLive: 7200, servedAt: 29, expiredAt: 31)
        try assertNotStored(["Cache-Control": "max-age=30", "Age": "30, 0"])
    }

    /// An `Age` that is not a non-negative integer is ignored.
    func testAnInvalidAgeIsIgnored() throws {
        for age in ["abc", "-5", "1.5", "", "10 s"] {
            try assertLifetime(["Cache-Control": "max-age=30", "Age": age], servedAt: 29, expiredAt: 31)
        }
    }

    /// A `max-age` of 0, or one that is not a non-negative integer, makes the response stale at once: not stored.
    func testAZeroOrInvalidMaxAgeIsNotStored() throws {
        for value in ["max-age=0", "max-age=-1", "max-age=abc", "max-age", "max-age=", #"max-age="""#, "max-age=1.5"] {
            try assertNotStored(["Cache-Control": value])
        }
    }

    /// A `max-age` too large for any integer type is clamped, not a crash, and the rule still bounds the lifetime.
    func testAHugeMaxAgeIsClamped() throws {
        try assertLifetime(["Cache-Control": "max-age=99999999999999999999999999999"], servedAt: 59, expiredAt: 61)
    }

    // MARK: - Expires and Pragma

    /// Without `max-age`, an `Expires` not after the response's `Date` (or, without one, the current time) or
    /// that is not an HTTP-date makes the response stale at once: not stored.
    func testAnExpiresNotInTheFutureOrInvalidIsNotStored() throws {
        let start = Self.start
        try assertNotStored(["Expires": Self.httpDate(start - 1)])
        try assertNotStored(["Expires": Self.httpDate(start)])
        try assertNotStored(["Expires": Self.httpDate(start + 100), "Date": Self.httpDate(start + 100)])
        try assertNotStored(["Expires": "0"])
        try assertNotStored(["Expires": "tomorrow"])
        try assertNotStored(["Expires": "0", "Cache-Control": "public"])
    }

    /// Text that is not ASCII is no HTTP-date, and never reaches DateFormatter, which on Linux stops the process on
    /// some of it (a combining mark after a space, found by fuzzing): the response is stale, and the client goes on.
    func testAnExpiresOrDateThatIsNotASCIIIsNoDate() throws {
        try assertNotStored(["Expires": " \u{0657} "])
        try assertLifetime(
            ["Expires": Self.httpDate(Self.start + 10), "Date": " \u{0657} "], servedAt: 9, expiredAt: 11)
    }

    /// An `Expires` in the future shortens the rule's time to live to the time from the response's `Date` (or the
    /// current time) to it, and never lengthens it.
    func testAFutureExpiresShortensTheRulesTimeToLive() throws {
        let start = Self.start
        try assertLifetime(["Expires": Self.httpDate(start + 10)], servedAt: 9, expiredAt: 11)
        try assertLifetime(
            ["Expires": Self.httpDate(start + 10), "Date": Self.httpDate(start)], servedAt: 9, expiredAt: 11)
        try assertLifetime(["Expires": Self.httpDate(start + 3600)], servedAt: 59, expiredAt: 61)
        try assertLifetime(
            ["Expires": Self.httpDate(start + 10), "Date": Self.httpDate(start), "Age": "5"], servedAt: 4, expiredAt: 6)
        // A server clock an hour behind ours: the lifetime is measured from its `Date`, not from our clock.
        try assertLifetime(
            ["Expires": Self.httpDate(start - 3590), "Date": Self.httpDate(start - 3600)], servedAt: 9, expiredAt: 11)
        // The obsolete asctime form is an HTTP-date too (12 January 1970, 13:46:50 is `start` + 10 s).
        try assertLifetime(["Expires": "Mon Jan 12 13:46:50 1970"], servedAt: 9, expiredAt: 11)
    }

    /// `max-age` takes precedence over `Expires`, even an invalid or past one.
    func testMaxAgeTakesPrecedenceOverExpires() throws {
        let start = Self.start
        try assertLifetime(["Cache-Control": "max-age=30", "Expires": "0"], servedAt: 29, expiredAt: 31)
        try assertLifetime(
            ["Cache-Control": "max-age=30", "Expires": Self.httpDate(start - 10)], servedAt: 29, expiredAt: 31)
        try assertLifetime(
            ["Cache-Control": "max-age=10", "Expires": Self.httpDate(start + 3600)], servedAt: 9, expiredAt: 11)
    }

    /// `Pragma: no-cache` keeps a response without `Cache-Control` out of the cache (HTTP/1.0); with a
    /// `Cache-Control`, it is ignored.
    func testPragmaNoCacheCountsOnlyWithoutCacheControl() throws {
        try assertNotStored(["Pragma": "no-cache"])
        try assertNotStored(["Pragma": "x-ext, NO-CACHE"])
        try assertLifetime(["Pragma": "no-cache", "Cache-Control": "max-age=30"], servedAt: 29, expiredAt: 31)
        try assertLifetime(["Pragma": "x-no-cache"], servedAt: 59, expiredAt: 61)
    }

    /// A response without any freshness header is kept for the rule's whole time to live, less the `Age` it came
    /// with: the rule's time to live is its freshness lifetime.
    func testWithoutFreshnessHeadersTheRuleDecides() throws {
        try assertLifetime([:], servedAt: 59, expiredAt: 61)
        try assertLifetime(["Age": "50"], servedAt: 9, expiredAt: 11)
        try assertNotStored(["Age": "60"])
    }

    // MARK: - Status

    /// The rule's time to live alone stores only the 2xx statuses HTTP defines as heuristically cacheable (200,
    /// 203, 204; RFC 9110 §15.1): a `202 Accepted` (its work is not done: a client polls until a 200) or a
    /// `201 Created` is not served again unless its headers give it a lifetime (`max-age`, `Expires`) or say
    /// `public` (RFC 9111 §4.2.2), as URLCache does not store them either.
    func testAStatusNotHeuristicallyCacheableNeedsALifetimeFromItsHeaders() throws {
        for status in [201, 202, 205, 207, 226, 299] {
            try assertNotStored([:], status: status)
            try assertNotStored(["Cache-Control": "private"], status: status)
            try assertLifetime(["Cache-Control": "max-age=30"], status: status, servedAt: 29, expiredAt: 31)
            try assertLifetime(["Cache-Control": "public"], status: status, servedAt: 59, expiredAt: 61)
            try assertLifetime(["Expires": Self.httpDate(Self.start + 10)], status: status, servedAt: 9, expiredAt: 11)
        }
        for status in [200, 203, 204] {
            try assertLifetime([:], status: status, servedAt: 59, expiredAt: 61)
        }
    }

    /// `no-cache` gives a response no lifetime (RFC 9111 §3): a `202 Accepted` that says it, with a validator, is not
    /// stored to be revalidated (a `.returnCacheData…` call would be served the unfinished work's answer from the
    /// cache); one whose headers also give it a lifetime or say `public` is, as a 200 that says it is.
    func testNoCacheGivesAStatusNotHeuristicallyCacheableNoLifetime() throws {
        let validator = ["ETag": #""v1""#]
        for status in [201, 202] {
            try assertNotStored(validator.merging(["Cache-Control": "no-cache"]) { $1 }, status: status)
            try assertNotStored(validator.merging(["Cache-Control": "private, no-cache"]) { $1 }, status: status)
            for lifetime in [["Cache-Control": "no-cache, max-age=30"], ["Cache-Control": "public, no-cache"]] {
                let result = try outcome(of: validator.merging(lifetime) { $1 }, status: status)
                XCTAssertTrue(result.isStored, "\(status) \(lifetime) not stored")
                XCTAssertFalse(result.isServed, "\(status) \(lifetime) served without revalidation")
            }
        }
        XCTAssertTrue(try outcome(of: validator.merging(["Cache-Control": "no-cache"]) { $1 }).isStored)
    }

    /// A fresh answer that may not be stored (a refetch answered `no-store`, a shorter `max-age` now 0) replaces
    /// the stored one by nothing: the older response is not served in its place afterwards.
    func testAFreshAnswerThatMayNotBeStoredRemovesTheOlderOne() throws {
        // Given: a stored response, then a server that now answers `no-store`
        let transport = FakeTransport()
        transport.stub(
            "/a",
            with: [
                .json(string: #"{"v":1}"#), .json(string: #"{"v":2}"#, headers: ["Cache-Control": "no-store"]),
                .json(string: #"{"v":3}"#),
            ])
        let cache = ResponseCache(maxBytes: 1_000_000)
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        let route = Route("/a", baseURL: try XCTUnwrap(URL(string: "https://api.example.com")))
        let rule = CacheRule(timeToLive: 60)
        let first = try connect.request(route, options: RequestOptions(cache: rule)).wait(timeout: 5)
        XCTAssertEqual(String(decoding: first, as: UTF8.self), #"{"v":1}"#)
        XCTAssertEqual(cache.count, 1)
        // When: a refetch gets the `no-store` answer
        var refetch = rule
        refetch.bypassesCache = true
        let fresh = try connect.request(route, options: RequestOptions(cache: refetch)).wait(timeout: 5)
        XCTAssertEqual(String(decoding: fresh, as: UTF8.self), #"{"v":2}"#)
        // Then: the first answer is gone; the next request goes to the server
        XCTAssertEqual(cache.count, 0)
        let next = try connect.request(route, options: RequestOptions(cache: rule)).wait(timeout: 5)
        XCTAssertEqual(String(decoding: next, as: UTF8.self), #"{"v":3}"#)
        XCTAssertEqual(transport.requests.count, 3)
    }

    /// A refetch answered `404 Not Found` or `410 Gone` (the server's newest word: the resource is not there) removes
    /// the response stored for it: the older one is not served in its place afterwards. A server error leaves it (the
    /// server said nothing about the resource).
    func testANotFoundOrGoneAnswerRemovesTheOlderOne() throws {
        for (status, isRemoved) in [(404, true), (410, true), (500, false), (503, false)] {
            // Given: a stored response, then a server that answers `status`
            let transport = FakeTransport()
            transport.stub(
                "/a",
                with: [
                    .json(string: #"{"v":1}"#), .json(string: #"{"error":true}"#, status: status),
                    .json(string: #"{"v":3}"#),
                ])
            let cache = ResponseCache(maxBytes: 1_000_000)
            let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
            let route = Route("/a", baseURL: try XCTUnwrap(URL(string: "https://api.example.com")))
            let rule = CacheRule(timeToLive: 60)
            _ = try connect.request(route, options: RequestOptions(cache: rule)).wait(timeout: 5)
            XCTAssertEqual(cache.count, 1, "\(status)")
            // When: a refetch gets the error
            var refetch = rule
            refetch.bypassesCache = true
            XCTAssertThrowsError(
                try connect.request(route, options: RequestOptions(cache: refetch)).wait(timeout: 5), "\(status)")
            // Then: after a 404 or a 410, the next request goes to the server
            XCTAssertEqual(cache.count, isRemoved ? 0 : 1, "\(status)")
            let next = try connect.request(route, options: RequestOptions(cache: rule)).wait(timeout: 5)
            XCTAssertEqual(String(decoding: next, as: UTF8.self), isRemoved ? #"{"v":3}"# : #"{"v":1}"#, "\(status)")
            XCTAssertEqual(transport.requests.count, isRemoved ? 3 : 2, "\(status)")
        }
    }
}
