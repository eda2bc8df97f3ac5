import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The retry policy, rule by rule, with a fake transport and a clock that never waits.
final class RetryPolicyTests: XCTestCase {
    private typealias Endpoint = ClientFixtures.Endpoint

    private var fake: FakeTransport!
    private var clock: ImmediateRetryClock!

    override func setUp() {
        fake = FakeTransport()
        clock = ImmediateRetryClock()
    }

    override func tearDown() {
        fake = nil
        clock = nil
    }

    /// A client retrying by `policy` (the test clock and no jitter unless the test says otherwise).
    private func client(
        _ policy: RetryPolicy? = nil,
        errorHandler: any ErrorHandling = ErrorHandler()
    ) -> Connect {
        Connect(
            transport: fake,
            errorHandler: errorHandler,
            retryPolicy: policy ?? RetryPolicy(jitter: RetryPolicy.noJitter, clock: clock)
        )
    }

    /// A policy that retries nothing by itself and allows 10 attempts: a guide middleware's answers decide.
    private var hookOnly: RetryPolicy {
        RetryPolicy(maxAttempts: 10, retryableStatusCodes: [], retryableFailures: [], clock: clock)
    }

    private func policy(
        maxAttempts: Int = 3,
        jitter: @escaping @Sendable (ClosedRange<Double>) -> Double = RetryPolicy.noJitter,
        retryableFailures: Set<ConnectError.Kind> = RetryPolicy.defaultRetryableFailures,
        honorsRetryAfter: Bool = true,
        maxRetryAfter: TimeInterval = 60,
        addsIdempotencyKey: Bool = false
    ) -> RetryPolicy {
        RetryPolicy(
            maxAttempts: maxAttempts,
            jitter: jitter,
            retryableFailures: retryableFailures,
            honorsRetryAfter: honorsRetryAfter,
            maxRetryAfter: maxRetryAfter,
            addsIdempotencyKey: addsIdempotencyKey,
            clock: clock
        )
    }

    private static let ok = FakeResponse.json(string: #"{"ok":true}"#)

    // MARK: - Defaults

    func testDefaultPolicyValues() {
        let policy = RetryPolicy.default
        XCTAssertEqual(policy.maxAttempts, 3)
        XCTAssertEqual(policy.baseDelay, 0.5)
        XCTAssertEqual(policy.multiplier, 2)
        XCTAssertEqual(policy.maxDelay, 30)
        XCTAssertTrue(policy.honorsRetryAfter)
        XCTAssertEqual(policy.maxRetryAfter, 60)
        XCTAssertFalse(policy.addsIdempotencyKey)
        XCTAssertEqual(policy.retryableStatusCodes, [408, 429, 500, 502, 503, 504])
        XCTAssertTrue(policy.clock is DispatchRetryClock)
        XCTAssertEqual(
            policy.retryableFailures,
            [.timedOut, .connectionLost, .cannotConnect, .nameResolution, .secureConnection, .badResponse])
        XCTAssertEqual(RetryPolicy.none.retryableStatusCodes, [])
        XCTAssertEqual(RetryPolicy.none.retryableFailures, [])
    }

    func testDefaultClientRetriesAGetOn503() {
        // Given: the client as users make it, with the real clock (one wait of at most 0.5 s)
        fake.stub(.get, "/items", with: [.status(503), Self.ok])
        let connect = Connect(transport: fake)
        // When
        let data = value(of: connect.request(Endpoint()))
        // Then
        XCTAssertEqual(data.map { String(decoding: $0, as: UTF8.self) }, #"{"ok":true}"#)
        XCTAssertEqual(fake.requests.count, 2)
    }

    // MARK: - Bounded attempts

    func testRetriesUntilSuccess() {
        // Given
        fake.stub(.get, "/items", with: [.status(503), .status(503), Self.ok])
        // When
        let data = value(of: client().request(Endpoint()))
        // Then
        XCTAssertNotNil(data)
        XCTAssertEqual(fake.requests.count, 3)
        XCTAssertEqual(clock.delays, [0.5, 1.0])
    }

    func testStopsAfterMaxAttempts() {
        // Given
        fake.stub(.get, "/items", with: .status(503))
        // When
        let error = connectError(of: client(policy(maxAttempts: 4)).request(Endpoint()))
        // Then
        XCTAssertEqual(fake.requests.count, 4)
        XCTAssertEqual(clock.delays.count, 3, "no wait after the last attempt")
        XCTAssertEqual(error?.kind, .httpStatus)
        XCTAssertEqual(error?.statusCode, 503)
    }

    func testExhaustedAttemptsReportTheLastResponse() {
        // Given: three different failures, each with its own message
        fake.stub(
            .get, "/items",
            with: [
                .json(string: #"{"message":"first"}"#, status: 500),
                .json(string: #"{"message":"second"}"#, status: 502),
                .json(string: #"{"message":"third"}"#, status: 503),
            ])
        let handled = Counter()
        let connect = client(errorHandler: CountingErrorHandler(count: handled))
        // When
        let error = connectError(of: connect.request(Endpoint()))
        // Then: the error the call ends with is the last response's (the loop asked the handler about the first
        // two, to know whether it accepted them)
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "third")
        XCTAssertEqual(error?.statusCode, 503)
        XCTAssertEqual(handled.value, 3)
    }

    func testAnErrorHandlerThatAcceptsAStatusStopsThePolicyRetryingIt() {
        // Given: an error handler that accepts 500, which the policy would retry
        fake.stub(.get, "/items", with: [.json(string: "{}", status: 500), .status(500), .status(500)])
        let handled = Counter()
        let connect = client(errorHandler: Accepting500(count: handled))
        // When
        let body = value(of: connect.request(Endpoint()))
        // Then: the accepted response is the answer; it is not retried
        XCTAssertEqual(body, Data("{}".utf8))
        XCTAssertEqual(fake.requests.count, 1)
        XCTAssertEqual(clock.delays, [])
        XCTAssertGreaterThanOrEqual(handled.value, 1)
    }

    func testAStatusLeftOutOfTheRetryableStatusesIsSentOnceAndGoesToTheErrorHandler() {
        // Given: the documented way to accept 500 without retrying it
        fake.stub(.get, "/items", with: [.json(string: "{}", status: 500), .status(200)])
        var noRetryOn500 = policy()
        noRetryOn500.retryableStatusCodes.remove(500)
        let handled = Counter()
        let connect = client(noRetryOn500, errorHandler: Accepting500(count: handled))
        // When
        let body = value(of: connect.request(Endpoint()))
        // Then
        XCTAssertEqual(body, Data("{}".utf8))
        XCTAssertEqual(fake.requests.count, 1)
        XCTAssertEqual(handled.value, 1)
    }

    func testExhaustedAttemptsWithEmptyBodiesGiveHTTPStatus() {
        fake.stub(.get, "/items", with: [.status(500), .status(504)])
        let error = connectError(of: client(policy(maxAttempts: 2)).request(Endpoint()))
        XCTAssertEqual(error?.kind, .httpStatus)
        XCTAssertEqual(error?.statusCode, 504)
    }

    func testExhaustedAttemptsReportTheLastTransportError() {
        fake.stub(.get, "/items", with: [.failure(URLError(.timedOut)), .failure(URLError(.networkConnectionLost))])
        let error = connectError(of: client(policy(maxAttempts: 2)).request(Endpoint()))
        XCTAssertEqual(error?.kind, .connectionLost)
        XCTAssertEqual(error?.urlError?.code, .networkConnectionLost)
    }

    func testPolicyNoneRetriesNothingByItself() {
        fake.stub(.get, "/items", with: [.status(503), Self.ok])
        let error = connectError(of: client(RetryPolicy.none).request(Endpoint()))
        XCTAssertEqual(error?.statusCode, 503)
        XCTAssertEqual(fake.requests.count, 1)
    }

    func testMaxAttemptsBelowOneMeansOneAttempt() {
        fake.stub(.get, "/items", with: [.status(503), Self.ok])
        _ = connectError(of: client(policy(maxAttempts: 0)).request(Endpoint()))
        XCTAssertEqual(fake.requests.count, 1)
        XCTAssertEqual(clock.delays, [])
    }

    func testNilPolicyNeverRetries() {
        fake.stub(.get, "/items", with: [.status(503), Self.ok])
        let connect = Connect(transport: fake, retryPolicy: nil)
        _ = connectError(of: connect.request(Endpoint()))
        XCTAssertEqual(fake.requests.count, 1)
    }

    // MARK: - Backoff and jitter

    func testDelaysGrowExponentiallyAndAreCapped() {
        // Given
        fake.stub(.get, "/items", with: .status(503))
        let policy = RetryPolicy(
            maxAttempts: 6, baseDelay: 1, multiplier: 3, maxDelay: 20, jitter: RetryPolicy.noJitter, clock: clock)
        // When
        _ = connectError(of: client(policy).request(Endpoint()))
        // Then
        XCTAssertEqual(clock.delays, [1, 3, 9, 20, 20])
    }

    /// A growth factor or a cap that is not a usable number does not make the waits jump between none and a huge one
    /// from one attempt to the next: a multiplier below 0 or not a number counts as 1 (the base delay each time), a
    /// cap that is not a number as 0 (no wait, as a base delay that is not one).
    func testAMultiplierOrACapThatIsNotAUsableNumberGivesSteadyWaits() {
        let attempts = [1, 2, 3, 50, 1100, Int.max]
        for (multiplier, maxDelay, expected) in [
            (-2.0, 30.0, 1.0), (.nan, 30, 1), (-.infinity, 30, 1), (2, .nan, 0), (.nan, .nan, 0),
        ] as [(Double, Double, Double)] {
            let policy = RetryPolicy(
                baseDelay: 1, multiplier: multiplier, maxDelay: maxDelay, jitter: RetryPolicy.noJitter)
            XCTAssertEqual(
                attempts.map { policy.backoffDelay(afterAttempt: $0) }, attempts.map { _ in expected },
                "multiplier \(multiplier), maxDelay \(maxDelay)")
        }
    }

    /// The settings out of their range count as their documentation says: a base delay that is not a positive number
    /// is no wait and an infinite one the cap, a cap below 0 is 0, whatever the attempt's number.
    func testABaseDelayOrACapOutOfRangeIsClampedAsDocumented() {
        let attempts = [1, 2, 50, Int.max]
        for (baseDelay, maxDelay, expected) in [
            (-1.0, 30.0, 0.0), (0, 30, 0), (.nan, 30, 0), (-.infinity, 30, 0), (.infinity, 30, 30), (1, -5, 0),
            (1, -.infinity, 0),
        ] as [(Double, Double, Double)] {
            let policy = RetryPolicy(baseDelay: baseDelay, maxDelay: maxDelay, jitter: RetryPolicy.noJitter)
            XCTAssertEqual(
                attempts.map { policy.backoffDelay(afterAttempt: $0) }, attempts.map { _ in expected },
                "baseDelay \(baseDelay), maxDelay \(maxDelay)")
        }
    }

    /// A `maxRetryAfter` below 0 or not a number counts as 0: a `Retry-After` of no wait is still retried, any other
    /// ends the call with its response at once.
    func testAMaxRetryAfterBelowZeroOrNotANumberAcceptsOnlyNoWait() {
        for maxRetryAfter in [-5, -.infinity, .nan] as [TimeInterval] {
            fake.removeRecordedRequests()
            fake.stub(.get, "/items", with: [.status(503, headers: ["Retry-After": "0"]), Self.ok])
            XCTAssertNotNil(value(of: client(policy(maxRetryAfter: maxRetryAfter)).request(Endpoint())))
            XCTAssertEqual(fake.requests.count, 2, "\(maxRetryAfter)")
            fake.removeRecordedRequests()
            fake.stub(.get, "/items", with: [.status(503, headers: ["Retry-After": "1"]), Self.ok])
            let error = connectError(of: client(policy(maxRetryAfter: maxRetryAfter)).request(Endpoint()))
            XCTAssertEqual(error?.statusCode, 503, "\(maxRetryAfter)")
            XCTAssertEqual(fake.requests.count, 1, "\(maxRetryAfter)")
        }
        XCTAssertEqual(clock.delays, [])
    }

    func testEqualJitterOffersHalfTheDelayToTheFullDelay() {
        // Given: a jitter source that records its ranges and picks the bottom
        let ranges = Recorder<ClosedRange<Double>>()
        let jitter: @Sendable (ClosedRange<Double>) -> Double = { range in
            ranges.append(range)
            return range.lowerBound
        }
        fake.stub(.get, "/items", with: .status(503))
        // When
        _ = connectError(of: client(policy(maxAttempts: 4, jitter: jitter)).request(Endpoint()))
        // Then
        XCTAssertEqual(ranges.values, [0.25...0.5, 0.5...1.0, 1.0...2.0])
        XCTAssertEqual(clock.delays, [0.25, 0.5, 1.0])
    }

    func testRandomJitterStaysWithinBounds() {
        // Given
        fake.stub(.get, "/items", with: .status(503))
        let policy = RetryPolicy(maxAttempts: 8, maxDelay: 10, clock: clock)
        // When
        for _ in 0..<20 { _ = connectError(of: client(policy).request(Endpoint())) }
        // Then
        let delays = clock.delays
        XCTAssertEqual(delays.count, 20 * 7)
        for (index, delay) in delays.enumerated() {
            let retry = index % 7
            let ceiling = min(10, 0.5 * pow(2, Double(retry)))
            XCTAssertGreaterThanOrEqual(delay, ceiling / 2)
            XCTAssertLessThanOrEqual(delay, ceiling)
        }
    }

    func testJitterOutsideItsRangeIsClamped() {
        fake.stub(.get, "/items", with: .status(503))
        _ = connectError(of: client(policy(maxAttempts: 3, jitter: { _ in 1000 })).request(Endpoint()))
        _ = connectError(of: client(policy(maxAttempts: 2, jitter: { _ in -5 })).request(Endpoint()))
        XCTAssertEqual(clock.delays, [0.5, 1.0, 0.25])
    }

    // MARK: - Retry-After

    func testRetryAfterSecondsReplacesTheBackoff() {
        fake.stub(
            .get, "/items",
            with: [.status(503, headers: ["Retry-After": "7"]), .status(429, headers: ["Retry-After": " 2 "]), Self.ok])
        XCTAssertNotNil(value(of: client().request(Endpoint())))
        XCTAssertEqual(clock.delays, [7, 2])
    }

    func testARetryAfterLongerThanMaxRetryAfterEndsTheCallWithTheResponseAtOnce() {
        // Given: a server that asks for an hour, and policies that accept 10 s and 60 s
        fake.stub(.get, "/items", with: [.status(503, headers: ["Retry-After": "3600"]), Self.ok])
        let first = error(of: client(policy(maxRetryAfter: 10)).request(Endpoint())) as? ConnectError
        fake.stub(.get, "/items", with: [.status(429, headers: ["Retry-After": "99999999999999999999999"]), Self.ok])
        let second = error(of: client().request(Endpoint(timeout: 600))) as? ConnectError
        // Then: neither is retried early; each call ends with its answer, whose Retry-After the app can read
        XCTAssertEqual(first?.statusCode, 503)
        XCTAssertEqual(first?.headers["Retry-After"], "3600")
        XCTAssertEqual(second?.statusCode, 429)
        XCTAssertEqual(clock.delays, [])
        XCTAssertEqual(fake.requests.count, 2)
        // And: a wait at the limit is still waited
        fake.stub(.get, "/items", with: [.status(503, headers: ["Retry-After": "10"]), Self.ok])
        XCTAssertNotNil(value(of: client(policy(maxRetryAfter: 10)).request(Endpoint())))
        XCTAssertEqual(clock.delays, [10])
    }

    func testRetryAfterHTTPDateIsMeasuredFromNow() {
        // Given: the clock's now is 2024-01-01 00:00:00 GMT
        XCTAssertEqual(clock.now, Date(timeIntervalSince1970: 1_704_067_200))
        fake.stub(
            .get, "/items", with: [.status(503, headers: ["Retry-After": "Mon, 01 Jan 2024 00:00:45 GMT"]), Self.ok])
        // When
        XCTAssertNotNil(value(of: client().request(Endpoint())))
        // Then
        XCTAssertEqual(clock.delays, [45])
    }

    /// A server whose clock is off dates its `Retry-After` and its `Date` by the same clock: the wait is the time
    /// between them, not between the date and this device's clock (an hour slow here: it was no wait at all).
    func testRetryAfterHTTPDateIsMeasuredFromTheResponsesDateWhenItHasOne() {
        // Given: the clock's now is 2024-01-01 00:00:00 GMT; the server's clock says an hour earlier
        fake.stub(
            .get, "/items",
            with: [
                .status(
                    503,
                    headers: [
                        "Retry-After": "Sun, 31 Dec 2023 23:00:30 GMT", "Date": "Sun, 31 Dec 2023 23:00:00 GMT",
                    ]),
                .status(503, headers: ["Retry-After": "Mon, 01 Jan 2024 00:00:20 GMT", "Date": "not a date"]),
                Self.ok,
            ])
        // When
        XCTAssertNotNil(value(of: client().request(Endpoint())))
        // Then: 30 s by the server's clock; an unreadable `Date` leaves the device's clock to measure from
        XCTAssertEqual(clock.delays, [30, 20])
    }

    func testRetryAfterHTTPDateBeyondTheLimitIsNotRetried() {
        // Given: a date a day after the clock's now, and the default 60 s limit
        fake.stub(
            .get, "/items", with: [.status(503, headers: ["Retry-After": "Tue, 02 Jan 2024 00:00:00 GMT"]), Self.ok])
        // Then: the 503 stands at once
        XCTAssertEqual((error(of: client().request(Endpoint(timeout: 600))) as? ConnectError)?.statusCode, 503)
        XCTAssertEqual(clock.delays, [])
    }

    func testRetryAfterInThePastMeansNoWait() {
        fake.stub(
            .get, "/items",
            with: [
                .status(503, headers: ["Retry-After": "Sun, 31 Dec 2023 23:59:00 GMT"]),
                .status(503, headers: ["Retry-After": "-5"]),
                Self.ok,
            ])
        XCTAssertNotNil(value(of: client().request(Endpoint())))
        // The past date: no wait (and no clock). "-5" is not a valid value: the backoff before attempt 3 applies.
        XCTAssertEqual(clock.delays, [1.0])
    }

    func testUnreadableRetryAfterFallsBackToBackoff() {
        fake.stub(
            .get, "/items",
            with: [
                .status(503, headers: ["Retry-After": "soon"]),
                .status(503, headers: ["Retry-After": "Sunday, 31-Dec-23 23:59:00 CET"]),  // an HTTP-date is in GMT
                Self.ok,
            ])
        XCTAssertNotNil(value(of: client().request(Endpoint())))
        XCTAssertEqual(clock.delays, [0.5, 1.0])
    }

    /// Repeated `Retry-After` fields (the app's and an edge proxy's), which engines join with `", "`: the joined value
    /// is neither form, and the policy fell back to its backoff, retrying in half a second a server that asked for an
    /// hour. The longest wait asked for counts.
    func testRepeatedRetryAfterFieldsCountAsTheLongestWait() {
        // The clock's now is 2024-01-01 00:00:00 GMT: the date asks for 25 seconds (within the call's 60 with the 20).
        let date = "Mon, 01 Jan 2024 00:00:25 GMT"
        fake.stub(
            .get, "/items",
            with: [
                .status(503, headers: ["Retry-After": "20, 20"]),
                .status(503, headers: ["Retry-After": "\(date), 10"]),
                Self.ok,
            ])
        XCTAssertNotNil(value(of: client().request(Endpoint())))
        XCTAssertEqual(clock.delays, [20, 25])

        // An hour, twice, is over `maxRetryAfter`: the answer comes back at once.
        fake.stub(.get, "/hour", with: [.status(429, headers: ["Retry-After": "3600, 3600"]), Self.ok])
        XCTAssertEqual(connectError(of: client().request(Endpoint(endpoint: "/hour")))?.statusCode, 429)
        XCTAssertEqual(fake.requests(to: "/hour").count, 1)
    }

    func testRetryAfterIgnoredWhenNotHonoured() {
        fake.stub(.get, "/items", with: [.status(503, headers: ["Retry-After": "30"]), Self.ok])
        XCTAssertNotNil(value(of: client(policy(honorsRetryAfter: false)).request(Endpoint())))
        XCTAssertEqual(clock.delays, [0.5])
    }

    func testRetryAfterOnANonRetryableStatusDoesNotRetry() {
        fake.stub(.get, "/items", with: [.status(400, headers: ["Retry-After": "1"]), Self.ok])
        XCTAssertEqual(connectError(of: client().request(Endpoint()))?.statusCode, 400)
        XCTAssertEqual(fake.requests.count, 1)
    }

    func testRetryAfterParsing() {
        let now = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        XCTAssertEqual(RetryAfter.delay(from: "Sun, 06 Nov 1994 08:49:37 GMT", now: now), 0)
        XCTAssertEqual(RetryAfter.delay(from: "Sun, 06 Nov 1994 08:50:37 GMT", now: now), 60)
        XCTAssertEqual(RetryAfter.delay(from: "120", now: now), 120)
        XCTAssertEqual(RetryAfter.delay(from: "0", now: now), 0)
        XCTAssertNil(RetryAfter.delay(from: "", now: now))
        XCTAssertNil(RetryAfter.delay(from: "1.5", now: now))
        XCTAssertNil(RetryAfter.delay(from: "Sun Nov  6 08:49:37 1994 GMT", now: now))
        XCTAssertNil(RetryAfter.delay(from: "Sun, 06 Nov 1994 08:49:37 PST", now: now))
    }

    /// Text that is not ASCII is no HTTP-date: it never reaches DateFormatter, which on Linux stops the process on
    /// some of it (" \u{0657} ", a combining mark after a space, found by fuzzing the header parsers).
    func testARetryAfterThatIsNotASCIIIsNoDate() {
        let now = Date(timeIntervalSince1970: 784_111_777)
        for text in [" \u{0657} ", "\u{0657}", "Sun, 06 Nov 1994 08:49:37 GMT\u{0301}"] {
            XCTAssertNil(HTTPDate.date(from: text, now: now), text)
            XCTAssertNil(RetryAfter.delay(from: text, now: now), text)
        }
        XCTAssertNil(HTTPDate.date(from: "Sun, 06 Nov 1994 08:49:37 GMT" + String(repeating: " ", count: 40), now: now))
        fake.stub(.get, "/items", with: [.status(503, headers: ["Retry-After": " \u{0657} "]), Self.ok])
        XCTAssertNotNil(value(of: client().request(Endpoint())))
        XCTAssertEqual(fake.requests.count, 2)
    }

    func testRetryAfterReadsTheObsoleteHTTPDateForms() {
        // RFC 9110 §5.6.7: a recipient must accept all three HTTP-date forms.
        let now = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        XCTAssertEqual(RetryAfter.delay(from: "Sunday, 06-Nov-94 08:50:37 GMT", now: now), 60)  // RFC 850
        XCTAssertEqual(RetryAfter.delay(from: "Sun Nov  6 08:50:37 1994", now: now), 60)  // asctime
        XCTAssertEqual(RetryAfter.delay(from: "Sun Nov 16 08:49:37 1994", now: now), 864_000)
        // A two-digit year more than 50 years ahead is the latest past year with those digits: already past.
        let in2024 = Date(timeIntervalSince1970: 1_704_067_200)  // Mon, 01 Jan 2024 00:00:00 GMT
        XCTAssertEqual(RetryAfter.delay(from: "Monday, 01-Jan-24 00:00:45 GMT", now: in2024), 45)
        XCTAssertEqual(RetryAfter.delay(from: "Tuesday, 01-Jan-74 00:00:45 GMT", now: in2024), 0)
        XCTAssertNil(RetryAfter.delay(from: "Sunday, 06-Nov-94 08:50:37 PST", now: now))
        XCTAssertNil(RetryAfter.delay(from: "Sun Nov  6 25:50:37 1994", now: now))
    }

    func testAnHTTPDateTakesALeapSecondAndOnlyFourDigitYearsInItsFixedForms() {
        let now = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        // RFC 9110 §5.6.7 allows second 60: the second after 59
        let newYear2017 = Date(timeIntervalSince1970: 1_483_228_800)
        XCTAssertEqual(HTTPDate.date(from: "Sat, 31 Dec 2016 23:59:60 GMT", now: now), newYear2017)
        XCTAssertEqual(HTTPDate.date(from: "Sat Dec 31 23:59:60 2016", now: now), newYear2017)
        XCTAssertEqual(HTTPDate.date(from: "Saturday, 31-Dec-16 23:59:60 GMT", now: now), newYear2017)
        // A year of other than four digits is no IMF-fixdate or asctime date (it read as the year 25, 94, -1994)
        for text in [
            "Sun, 06 Nov 25 08:49:37 GMT", "Sun Nov  6 08:49:37 94", "Sun, 06 Nov -1994 08:49:37 GMT",
            "Sun, 06 Nov 01994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:60:00 GMT",
        ] {
            XCTAssertNil(HTTPDate.date(from: text, now: now), text)
        }
        // So a Retry-After with one is no date: the policy's own delay applies, not an immediate retry
        XCTAssertNil(RetryAfter.delay(from: "Sun, 06 Nov 25 08:49:37 GMT", now: now))
    }

    func testRetryAfterInTheRFC850FormIsHonoured() {
        fake.stub(
            .get, "/items", with: [.status(503, headers: ["Retry-After": "Monday, 01-Jan-24 00:00:07 GMT"]), Self.ok])
        XCTAssertNotNil(value(of: client().request(Endpoint())))
        XCTAssertEqual(clock.delays, [7])
    }

    func testRetryAfterWithNonASCIIDigitsIsUnreadable() {
        let now = Date(timeIntervalSince1970: 784_111_777)
        // A digit with a combining mark is one Character that sorts between "0" and "9", but is no DIGIT.
        XCTAssertNil(RetryAfter.delay(from: "5\u{301}", now: now))
        XCTAssertNil(RetryAfter.delay(from: "-1\u{301}", now: now))
        XCTAssertNil(RetryAfter.delay(from: "\u{661}\u{662}", now: now))  // Arabic-Indic digits
        XCTAssertEqual(RetryAfter.delay(from: "0120", now: now), 120)
    }

    // MARK: - Which requests are replayed

    func testPostIsNotReplayed() {
        fake.stub(.post, "/items", with: [.status(503), Self.ok])
        let error = connectError(of: client().request(Endpoint(method: .post)))
        XCTAssertEqual(error?.statusCode, 503)
        XCTAssertEqual(fake.requests.count, 1)
        XCTAssertEqual(clock.delays, [])
    }

    func testPatchAfterTransportFailureIsNotReplayed() {
        fake.stub(.patch, "/items", with: [.failure(URLError(.networkConnectionLost)), Self.ok])
        XCTAssertEqual(connectError(of: client().request(Endpoint(method: .patch)))?.kind, .connectionLost)
        XCTAssertEqual(fake.requests.count, 1)
    }

    func testIdempotentMethodsAreReplayed() {
        for method: HTTPMethod in [.get, .head, .put, .delete, .options] {
            fake.stub(method, "/items", with: [.status(503), Self.ok])
            fake.removeRecordedRequests()
            XCTAssertNotNil(value(of: client().request(Endpoint(method: method))), method.rawValue)
            XCTAssertEqual(fake.requests.count, 2, method.rawValue)
        }
    }

    func testPostMarkedRetrySafeIsReplayed() {
        fake.stub(.post, "/items", with: [.status(503), Self.ok])
        let data = value(of: client().request(Endpoint(method: .post), options: RequestOptions(isRetrySafe: true)))
        XCTAssertNotNil(data)
        XCTAssertEqual(fake.requests.count, 2)
    }

    func testPutMarkedNotRetrySafeIsNotReplayed() {
        fake.stub(.put, "/items", with: [.status(503), Self.ok])
        _ = connectError(of: client().request(Endpoint(method: .put), options: RequestOptions(isRetrySafe: false)))
        XCTAssertEqual(fake.requests.count, 1)
    }

    func testPostWithIdempotencyKeyIsReplayedWithTheSameKey() {
        fake.stub(.post, "/items", with: [.status(503), .status(502), Self.ok])
        let endpoint = Endpoint(method: .post, headers: [.idempotencyKey("order-42")])
        XCTAssertNotNil(value(of: client().request(endpoint)))
        XCTAssertEqual(
            fake.requests.map { $0.value(forHTTPHeaderField: "Idempotency-Key") }, ["order-42", "order-42", "order-42"])
    }

    /// A key a middleware adds (the migration guides' adapter, a request preparer turned middleware) makes the POST as
    /// replay-safe as a connector's: the policy reads the request as it reaches the transport. An explicit
    /// `isRetrySafe: false` still wins, and a middleware that adds no key leaves the POST sent once.
    func testAPostKeyedByAMiddlewareIsReplayed() {
        let keying = AnyMiddleware.adapter { $0.setValue("order-42", forHTTPHeaderField: "Idempotency-Key") }
        func call(adding middleware: AnyMiddleware, _ options: RequestOptions = RequestOptions()) -> Future<Data> {
            fake.removeRecordedRequests()
            fake.stub(.post, "/items", with: [.status(503), Self.ok])
            let connect = Connect(transport: fake, middlewares: [middleware], retryPolicy: RetryPolicy(clock: clock))
            return connect.request(Endpoint(method: .post), options: options)
        }
        XCTAssertNotNil(value(of: call(adding: keying)))
        XCTAssertEqual(fake.requests.map { $0.value(forHTTPHeaderField: "Idempotency-Key") }, ["order-42", "order-42"])

        XCTAssertEqual(connectError(of: call(adding: keying, RequestOptions(isRetrySafe: false)))?.statusCode, 503)
        XCTAssertEqual(fake.requests.count, 1)

        XCTAssertEqual(connectError(of: call(adding: AnyMiddleware.adapter { _ in }))?.statusCode, 503)
        XCTAssertEqual(fake.requests.count, 1)
    }

    func testAnIdempotencyKeyDoesNotOverrideAnExplicitIsRetrySafeFalse() {
        // Given: a keyed POST the call marks as not safe to replay, and a client-level `false` with a keyed POST
        fake.stub(.post, "/items", with: [.status(503), Self.ok])
        let keyed = Endpoint(method: .post, headers: [.idempotencyKey("order-42")])
        // When
        let error = connectError(of: client().request(keyed, options: RequestOptions(isRetrySafe: false)))
        // Then: the explicit choice wins over the header
        XCTAssertEqual(error?.statusCode, 503)
        XCTAssertEqual(fake.requests.count, 1)
        XCTAssertEqual(clock.delays, [])

        // The same when the client says so for all its calls
        fake.removeRecordedRequests()
        fake.stub(.post, "/items", with: [.status(503), Self.ok])
        let cautious = Connect(
            transport: fake, retryPolicy: RetryPolicy(clock: clock),
            settings: Connect.Settings(options: RequestOptions(isRetrySafe: false)))
        XCTAssertEqual(connectError(of: cautious.request(keyed))?.statusCode, 503)
        XCTAssertEqual(fake.requests.count, 1)
    }

    func testAddsIdempotencyKeyReusedOnEveryAttempt() throws {
        // Given
        fake.stub(.post, "/items", with: [.status(503), .status(503), Self.ok])
        // When
        XCTAssertNotNil(value(of: client(policy(addsIdempotencyKey: true)).request(Endpoint(method: .post))))
        // Then
        let keys = fake.requests.map { $0.value(forHTTPHeaderField: "Idempotency-Key") }
        XCTAssertEqual(keys.count, 3)
        let key = try XCTUnwrap(keys.first ?? nil)
        XCTAssertNotNil(UUID(uuidString: key), key)
        XCTAssertEqual(Set(keys), [key])
    }

    /// An `Idempotency-Key` left empty or blank (it goes on the wire empty) names no key: the server cannot tell two
    /// sends apart by it, so the `POST` is sent once, as one without the header.
    func testAPostWithAnEmptyOrBlankIdempotencyKeyIsNotReplayed() {
        for key in ["", " ", "\t "] {
            // Given
            fake.removeRecordedRequests()
            fake.stub(.post, "/items", with: [.status(503), Self.ok])
            // When
            let error = connectError(of: client().request(Endpoint(method: .post, headers: [.idempotencyKey(key)])))
            // Then
            XCTAssertEqual(error?.statusCode, 503, key.debugDescription)
            XCTAssertEqual(fake.requests.count, 1, key.debugDescription)
        }
        XCTAssertEqual(clock.delays, [])
    }

    func testAddsIdempotencyKeyReplacesAnEmptyOrBlankOne() throws {
        // Given
        fake.stub(.post, "/items", with: [.status(503), Self.ok])
        let endpoint = Endpoint(method: .post, headers: [.idempotencyKey(" ")])
        // When
        XCTAssertNotNil(value(of: client(policy(addsIdempotencyKey: true)).request(endpoint)))
        // Then: both attempts carry the same UUID
        let keys = fake.requests.map { $0.value(forHTTPHeaderField: "Idempotency-Key") }
        XCTAssertEqual(keys.count, 2)
        let key = try XCTUnwrap(keys.first ?? nil)
        XCTAssertNotNil(UUID(uuidString: key), key)
        XCTAssertEqual(Set(keys), [key])
    }

    func testAddsIdempotencyKeyToPatchButNotToGetOrToAKeyedPost() {
        let connect = client(policy(addsIdempotencyKey: true))
        fake.stub("/items", with: Self.ok)
        _ = value(of: connect.request(Endpoint(method: .patch)))
        _ = value(of: connect.request(Endpoint(method: .get)))
        _ = value(of: connect.request(Endpoint(method: .post, headers: [.idempotencyKey("mine")])))
        let keys = fake.requests.map { $0.value(forHTTPHeaderField: "Idempotency-Key") }
        XCTAssertNotNil(keys[0])
        XCTAssertNil(keys[1])
        XCTAssertEqual(keys[2], "mine")
    }

    func testEachRequestGetsItsOwnIdempotencyKey() {
        let connect = client(policy(addsIdempotencyKey: true))
        fake.stub("/items", with: Self.ok)
        _ = value(of: connect.request(Endpoint(method: .post)))
        _ = value(of: connect.request(Endpoint(method: .post)))
        let keys = fake.requests.compactMap { $0.value(forHTTPHeaderField: "Idempotency-Key") }
        XCTAssertEqual(Set(keys).count, 2)
    }

    // MARK: - Which failures are retried

    func testEachRetryableStatusIsRetried() {
        for status in [408, 429, 500, 502, 503, 504] {
            fake.stub(.get, "/items", with: [.status(status), Self.ok])
            fake.removeRecordedRequests()
            XCTAssertNotNil(value(of: client().request(Endpoint())), "\(status)")
            XCTAssertEqual(fake.requests.count, 2, "\(status)")
        }
    }

    func testOtherStatusesAreNotRetried() {
        for status in [400, 401, 403, 404, 409, 422, 501, 505] {
            fake.stub(.get, "/items", with: [.status(status), Self.ok])
            fake.removeRecordedRequests()
            XCTAssertEqual(connectError(of: client().request(Endpoint()))?.statusCode, status)
            XCTAssertEqual(fake.requests.count, 1, "\(status)")
        }
        XCTAssertEqual(clock.delays, [])
    }

    func testCustomRetryableStatusCodes() {
        fake.stub(.get, "/items", with: [.status(404), .status(503), Self.ok])
        let policy = RetryPolicy(maxAttempts: 3, retryableStatusCodes: [404], clock: clock)
        XCTAssertEqual(connectError(of: client(policy).request(Endpoint()))?.statusCode, 503)
        XCTAssertEqual(fake.requests.count, 2)
    }

    func testEachRetryableURLErrorCodeIsRetried() {
        let codes: [URLError.Code] = [
            .timedOut, .networkConnectionLost, .cannotConnectToHost, .notConnectedToInternet, .dnsLookupFailed,
            .cannotFindHost, .secureConnectionFailed, .badServerResponse,
        ]
        for code in codes {
            // As the bare URLError a transport may fail with…
            fake.stub(.get, "/items", with: [.failure(URLError(code)), Self.ok])
            fake.removeRecordedRequests()
            XCTAssertNotNil(value(of: client().request(Endpoint())), "URLError \(code.rawValue)")
            XCTAssertEqual(fake.requests.count, 2, "URLError \(code.rawValue)")
            // …wrapped in a ConnectError of its kind, as URLSessionTransport reports it…
            let wrapped = ConnectError(ConnectError.Kind(code), message: "failed", underlyingError: URLError(code))
            XCTAssertTrue(RetryPolicy.defaultRetryableFailures.contains(wrapped.kind), "\(code.rawValue)")
            fake.stub(.get, "/items", with: [.failure(wrapped), Self.ok])
            fake.removeRecordedRequests()
            XCTAssertNotNil(value(of: client().request(Endpoint())), "ConnectError \(code.rawValue)")
            XCTAssertEqual(fake.requests.count, 2, "ConnectError \(code.rawValue)")
        }
    }

    func testATransportFailureOfTheOldKindIsJudgedByItsURLError() {
        // A transport of a user's, written before the finer kinds, reports `.transport` with the URLError.
        let lost = ConnectError(.transport, message: "reset", underlyingError: URLError(.networkConnectionLost))
        fake.stub(.get, "/items", with: [.failure(lost), Self.ok])
        XCTAssertNotNil(value(of: client().request(Endpoint())))
        XCTAssertEqual(fake.requests.count, 2)
        // …and one whose code is not retryable stays unretried.
        let untrusted = ConnectError(
            .transport, message: "bad cert", underlyingError: URLError(.serverCertificateUntrusted))
        fake.stub(.get, "/items", with: [.failure(untrusted), Self.ok])
        fake.removeRecordedRequests()
        XCTAssertEqual(connectError(of: client().request(Endpoint()))?.kind, .transport)
        XCTAssertEqual(fake.requests.count, 1)
    }

    func testRemovingAKindStopsItsRetries() {
        var policy = policy()
        policy.retryableFailures.remove(.nameResolution)
        fake.stub(.get, "/items", with: [.failure(URLError(.cannotFindHost)), Self.ok])
        XCTAssertEqual(connectError(of: client(policy).request(Endpoint()))?.kind, .nameResolution)
        XCTAssertEqual(fake.requests.count, 1)
    }

    func testTheDeprecatedURLErrorCodesAdaptToKinds() {
        (self as any LegacyRetryPolicyUse).checkDeprecatedURLErrorCodes()
    }

    func testOtherURLErrorCodesAreNotRetried() {
        let codes: [URLError.Code] = [
            .badURL, .unsupportedURL, .resourceUnavailable, .serverCertificateUntrusted, .userAuthenticationRequired,
        ]
        for code in codes {
            fake.stub(.get, "/items", with: [.failure(URLError(code)), Self.ok])
            fake.removeRecordedRequests()
            XCTAssertEqual(connectError(of: client().request(Endpoint()))?.urlError?.code, code)
            XCTAssertEqual(fake.requests.count, 1, "\(code.rawValue)")
        }
    }

    func testTransportTimeoutFromTheDeadlineIsRetried() {
        // What URLSessionTransport fails with when a request's own timeout passes
        let timedOut = ConnectError(.timedOut, message: "no complete response", underlyingError: URLError(.timedOut))
        fake.stub(.get, "/items", with: [.failure(timedOut), Self.ok])
        XCTAssertNotNil(value(of: client().request(Endpoint())))
        XCTAssertEqual(fake.requests.count, 2)
    }

    /// A transport of yours that reports its timeout as a `ConnectError` of its own, with its request but no engine
    /// error beneath, is retried like any timeout; the timeout of `Future.timeout(after:)` (a middleware's limit on
    /// `next`) is not, as the policy says.
    func testATransportsOwnTimeoutErrorIsRetriedAndAFuturesTimeoutIsNot() throws {
        // Given: a transport's own timeout, with its request and no underlying error
        let request = try URLRequest(url: XCTUnwrap(URL(string: "https://api.example.com/items")))
        let reported = ConnectError(.timedOut, message: "the server did not answer in time", request: request)
        fake.stub(.get, "/items", with: [.failure(reported), Self.ok])
        // When, then: retried
        XCTAssertNotNil(value(of: client().request(Endpoint())))
        XCTAssertEqual(fake.requests.count, 2)

        // Given: a middleware that gives up on `next` with Future.timeout(after:)
        let gate = Promise<ConnectResponse>()
        let limiting = AnyMiddleware { _, _, _ in gate.future.timeout(after: 0.01) }
        let connect = Connect(
            transport: fake, middlewares: [limiting],
            retryPolicy: RetryPolicy(jitter: RetryPolicy.noJitter, clock: clock))
        // When
        let error = connectError(of: connect.request(Endpoint()))
        // Then: not retried
        XCTAssertEqual(error?.kind, .timedOut)
        XCTAssertEqual(error?.attempts, 1)
        XCTAssertEqual(clock.delays, [0.5], "only the transport's timeout was retried")
    }

    func testErrorsThatAreNotTransportFailuresAreNotRetried() {
        let errors: [any Error] = [
            ConnectError(.transport, message: "not an HTTP response"),  // no URLError to judge by
            ConnectError(.rejected, message: "a middleware said no", underlyingError: URLError(.timedOut)),
            TestError(7),
        ]
        for error in errors {
            fake.stub(.get, "/items", with: [.failure(error), Self.ok])
            fake.removeRecordedRequests()
            XCTAssertNotNil(self.error(of: client().request(Endpoint())))
            XCTAssertEqual(fake.requests.count, 1, "\(error)")
        }
    }

    func testCancellationErrorsAreNeverRetried() {
        // Given: a policy that (wrongly) lists .cancelled
        let policy = policy(retryableFailures: [.cancelled, .timedOut])
        let errors: [any Error] = [
            ConnectError.cancelled(),
            ConnectError(.cancelled, message: "cancelled", underlyingError: URLError(.cancelled)),
            ConnectError(.transport, message: "cancelled", underlyingError: URLError(.cancelled)),
            URLError(.cancelled),
        ]
        for error in errors {
            fake.stub(.get, "/items", with: [.failure(error), Self.ok])
            fake.removeRecordedRequests()
            XCTAssertNotNil(self.error(of: client(policy).request(Endpoint())))
            XCTAssertEqual(fake.requests.count, 1, "\(error)")
        }
        XCTAssertEqual(clock.delays, [])
    }

    // MARK: - Cancellation

    func testCancellingDuringBackoffStopsEverything() {
        // Given: a clock that holds the wait before attempt 2
        let clock = ImmediateRetryClock(holdsActions: true)
        fake.stub(.get, "/items", with: .status(503))
        let connect = client(RetryPolicy(clock: clock))
        let future = connect.request(Endpoint())
        XCTAssertEqual(fake.requests.count, 1)
        XCTAssertEqual(clock.pendingActionCount, 1)
        // When
        future.cancel()
        // Then
        XCTAssertEqual(connectError(of: future)?.kind, .cancelled)
        XCTAssertEqual(clock.cancelledActionCount, 1)
        XCTAssertEqual(clock.pendingActionCount, 0)
        XCTAssertEqual(clock.runPendingActions(), 0)
        XCTAssertEqual(fake.requests.count, 1, "no attempt after cancellation")
    }

    func testCancelAllRequestsDuringBackoffStopsEverything() {
        let clock = ImmediateRetryClock(holdsActions: true)
        fake.stub(.get, "/items", with: .status(503))
        let connect = client(RetryPolicy(clock: clock))
        let future = connect.request(Endpoint()).decoded(toType: [String: Bool].self)
        connect.cancelAllRequests()
        XCTAssertEqual(connectError(of: future)?.kind, .cancelled)
        XCTAssertEqual(clock.cancelledActionCount, 1)
        clock.runPendingActions()
        XCTAssertEqual(fake.requests.count, 1)
        XCTAssertEqual(connect.requestsInFlight, 0)
    }

    func testHeldBackoffRunsTheNextAttemptWhenTheClockFires() {
        let clock = ImmediateRetryClock(holdsActions: true)
        fake.stub(.get, "/items", with: [.status(503), Self.ok])
        let future = client(RetryPolicy(clock: clock)).request(Endpoint())
        XCTAssertFalse(future.isCompleted)
        XCTAssertEqual(clock.runPendingActions(), 1)
        XCTAssertNotNil(value(of: future))
        XCTAssertEqual(fake.requests.count, 2)
    }

    func testCancellingDuringARetryCancelsTheAttemptInFlight() {
        // Given: attempt 1 fails with 503, attempt 2 is in flight
        let transport = ManualTransport()
        let connect = Connect(transport: transport, retryPolicy: RetryPolicy(clock: clock))
        let future = connect.request(Endpoint())
        transport.respond(to: 0, status: 503)
        XCTAssertEqual(transport.requests.count, 2)
        // When
        future.cancel()
        // Then
        XCTAssertEqual(connectError(of: future)?.kind, .cancelled)
        XCTAssertEqual(transport.cancellations.value, 1)
        XCTAssertTrue(transport.futures[1].isCancelled)
        XCTAssertEqual(transport.requests.count, 2, "no third attempt")
        XCTAssertEqual(clock.delays.count, 1)
    }

    func testCancellingTheFirstAttemptDoesNotRetry() {
        let transport = ManualTransport()
        let connect = Connect(transport: transport, retryPolicy: RetryPolicy(clock: clock))
        let future = connect.request(Endpoint())
        future.cancel()
        XCTAssertEqual(connectError(of: future)?.kind, .cancelled)
        XCTAssertEqual(transport.cancellations.value, 1)
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(clock.delays, [])
    }

    func testCancellingWhileTheFirstFailureIsJudgedSendsNoFurtherAttempt() {
        // Given: the first attempt answers 503 later, and the caller cancels (as from another thread) just as
        // the policy asks the clock for the wait before attempt 2
        let target = Protected<Future<ConnectResponse>?>(nil)
        let clock = CancellingRetryClock(target: target)
        let transport = ManualTransport()
        let future = Connect(transport: transport, retryPolicy: RetryPolicy(clock: clock))
            .response(for: Endpoint())
        target.withLock { $0 = future }
        // When
        transport.respond(to: 0, status: 503)
        // Then
        XCTAssertEqual(connectError(of: future)?.kind, .cancelled)
        XCTAssertEqual(transport.requests.count, 1, "no attempt after cancellation")
    }

    // MARK: - The loop on its own

    func testManyAttemptsWithAnImmediateClockAndTransportDoNotGrowTheStack() {
        // Given: a clock and a `next` that both finish synchronously, and a huge attempt limit
        let sent = Counter()
        let transport = FakeTransport.answering(
            .handler { request in
                sent.increment()
                return .success(ConnectResponse(request: request, statusCode: 503)!)
            })
        let connect = Connect(
            transport: transport, retryPolicy: RetryPolicy(maxAttempts: 20_000, baseDelay: 0, clock: clock))
        // When
        let future = connect.request(Endpoint(timeout: .infinity))
        // Then: every attempt ran, one after the other, without one stack frame set per attempt
        XCTAssertEqual(connectError(of: future)?.statusCode, 503)
        XCTAssertEqual(sent.value, 20_000)
        XCTAssertEqual(clock.delays, [], "no wait: each attempt starts at once")
    }

    // MARK: - Clocks

    func testDispatchClockRunsTheAction() {
        let ran = expectation(description: "action runs")
        _ = DispatchRetryClock().schedule(after: 0.01) { ran.fulfill() }
        wait(for: [ran], timeout: 5)
    }

    func testDispatchClockCancelReleasesTheAction() {
        // Given
        var token: Token? = Token()
        weak let watched = token
        let ran = Counter()
        let scheduled = DispatchRetryClock().schedule(after: 60) { [token] in
            _ = token
            ran.increment()
        }
        token = nil
        XCTAssertNotNil(watched, "the pending action keeps its captures")
        // When
        scheduled.cancel()
        // Then
        XCTAssertNil(watched, "cancelling releases them at once, not at the deadline")
        XCTAssertEqual(ran.value, 0)
    }

    /// A clock of the app's that runs a wait's action twice (against ``RetryClock``'s contract) starts one attempt: the
    /// second run, while that attempt is in flight, does not send the request again beside it.
    func testAClockThatRunsAnActionTwiceStartsOneAttempt() {
        // Given: attempt 1 failed with 503, and the clock holds the wait's action
        let clock = KeepingClock()
        let transport = ManualTransport()
        let connect = Connect(transport: transport, retryPolicy: RetryPolicy(clock: clock))
        let future = connect.request(Endpoint())
        transport.respond(to: 0, status: 503)
        let actions = clock.actions.withLock { $0 }
        XCTAssertEqual(actions.count, 1)
        let action = actions.first
        // When: the action runs, and runs again while attempt 2 is in flight
        action?()
        XCTAssertEqual(transport.requests.count, 2)
        action?()
        // Then: no attempt beside attempt 2, whose answer ends the call
        XCTAssertEqual(transport.requests.count, 2, "a second attempt in flight at once")
        transport.respond(to: 1, status: 200)
        XCTAssertNotNil(value(of: future))
        XCTAssertEqual(transport.requests.count, 2)
    }

    // MARK: - The usage guide's retry hook

    func testGuideMiddlewareRetriesAndReadaptsEachAttempt() {
        // Given
        fake.stub(.get, "/items", with: [.status(503), Self.ok])
        let middleware = GuideRetrying { _, error, attempt in
            (error as? ConnectError)?.statusCode == 503 && attempt == 1 ? .retry : .doNotRetry
        }
        let connect = Connect(transport: fake, middlewares: [middleware], retryPolicy: nil)
        // When
        XCTAssertNotNil(value(of: connect.request(Endpoint())))
        // Then
        XCTAssertEqual(fake.requests.map { $0.value(forHTTPHeaderField: "X-Adapted") }, ["1", "2"])
        XCTAssertEqual(middleware.adapted.value, 2)
    }

    func testGuideMiddlewareIsAskedWithAnHTTPStatusErrorAndTheSentRequest() {
        fake.stub(.get, "/items", with: [.json(string: #"{"message":"busy"}"#, status: 503), Self.ok])
        let asked = Recorder<String>()
        let middleware = GuideRetrying { request, error, attempt in
            let error = error as? ConnectError
            asked.append(
                "\(attempt) \(error?.kind.rawValue ?? "-") \(error?.statusCode ?? 0) \(request.value(forHTTPHeaderField: "X-Adapted") ?? "-")"
            )
            return .retryAfter(0.01)
        }
        let connect = Connect(transport: fake, middlewares: [middleware], retryPolicy: nil)
        XCTAssertNotNil(value(of: connect.request(Endpoint())))
        XCTAssertEqual(asked.values, ["1 httpStatus 503 1"])
    }

    func testGuideMiddlewareSeesTransportErrorsAsTheyAre() {
        fake.stub(.get, "/items", with: [.failure(URLError(.networkConnectionLost)), Self.ok])
        let asked = Recorder<URLError.Code?>()
        let middleware = GuideRetrying { _, error, _ in
            asked.append((error as? URLError)?.code)
            return .retry
        }
        let connect = Connect(transport: fake, middlewares: [middleware], retryPolicy: nil)
        XCTAssertNotNil(value(of: connect.request(Endpoint())))
        XCTAssertEqual(asked.values, [.networkConnectionLost])
    }

    func testGuideMiddlewareDefaultDoesNotRetry() {
        fake.stub(.get, "/items", with: [.status(503), Self.ok])
        let connect = Connect(transport: fake, middlewares: [ConnectMiddleware()], retryPolicy: nil)
        XCTAssertEqual(connectError(of: connect.request(Endpoint()))?.statusCode, 503)
        XCTAssertEqual(fake.requests.count, 1)
    }

    func testGuideMiddlewareIsCappedAtFiveAttempts() {
        fake.stub(.get, "/items", with: .status(503))
        let middleware = GuideRetrying { _, _, _ in .retry }
        let connect = Connect(transport: fake, middlewares: [middleware], retryPolicy: hookOnly)
        XCTAssertEqual(connectError(of: connect.request(Endpoint()))?.statusCode, 503)
        XCTAssertEqual(fake.requests.count, 5)
        XCTAssertEqual(GuideRetrying.maxRetryAttempts, 5)
    }

    func testGuideMiddlewareIsNotAskedAboutSuccessOrCancellation() {
        let asked = Counter()
        let middleware = GuideRetrying { _, _, _ in
            asked.increment()
            return .retry
        }
        fake.stub(.get, "/ok", with: Self.ok)
        fake.stub(.get, "/cancelled", with: .failure(ConnectError.cancelled()))
        let connect = Connect(transport: fake, middlewares: [middleware], retryPolicy: nil)
        XCTAssertNotNil(value(of: connect.request(Endpoint(endpoint: "/ok"))))
        XCTAssertEqual(connectError(of: connect.request(Endpoint(endpoint: "/cancelled")))?.kind, .cancelled)
        XCTAssertEqual(asked.value, 0)
        XCTAssertEqual(fake.requests.count, 2)
    }

    /// The call's deadline stops the attempt in flight failing it as timed out, not cancelled: the hook is not asked
    /// about it (its documentation says so), before the caller hears the outcome or after.
    func testGuideMiddlewareIsNotAskedAboutAnAttemptTheCallsDeadlineStopped() throws {
        let asked = Recorder<String>()
        let middleware = GuideRetrying { _, error, attempt in
            asked.append("\((error as? ConnectError).map { "\($0.kind)" } ?? "\(error)") #\(attempt)")
            return .retry
        }
        fake.stub(.get, "/items", with: [.never, Self.ok])
        let connect = Connect(transport: fake, middlewares: [middleware], retryPolicy: hookOnly)
        // The call's end cancels the attempt, and runs what that cancellation runs, before its future completes.
        let error = try XCTUnwrap(connectError(of: connect.request(Endpoint(timeout: 0.2))))
        XCTAssertEqual(error.kind, .timedOut)
        XCTAssertEqual(asked.values, [])
        XCTAssertEqual(fake.requests.count, 1)
        XCTAssertEqual(fake.cancelledRequests.count, 1)
    }

    func testGuideMiddlewareAdaptFailingOnARetryFailsTheRequest() {
        fake.stub(.get, "/items", with: .status(503))
        let middleware = GuideRetrying(failsAfter: 1) { _, _, _ in .retry }
        let connect = Connect(transport: fake, middlewares: [middleware], retryPolicy: nil)
        XCTAssertEqual(error(of: connect.request(Endpoint())) as? TestError, TestError(401))
        XCTAssertEqual(fake.requests.count, 1)
    }

    /// A guide middleware's `retryAfter` waits on the client's retry loop, with the policy's clock: a test's clock
    /// records the delays, and no time passes.
    func testGuideMiddlewareWaitsOnThePolicysClock() {
        fake.stub(.get, "/items", with: [.status(503), .status(503), Self.ok])
        let middleware = GuideRetrying { _, _, attempt in .retryAfter(TimeInterval(attempt) * 30) }
        let connect = Connect(transport: fake, middlewares: [middleware], retryPolicy: hookOnly)
        XCTAssertNotNil(value(of: connect.request(Endpoint(timeout: 600))))
        XCTAssertEqual(clock.delays, [30, 60])
        XCTAssertEqual(fake.requests.count, 3)
    }

    /// `retryAfter` of 0 or less retries at once; one that is not a finite number (infinity, NaN) asks for no retry.
    func testGuideMiddlewaresRetryAfterOfNoTimeRetriesAtOnceAndOfNoNumberNotAtAll() {
        for (asked, requests) in [(-3.0, 2), (0, 2), (.infinity, 1), (.nan, 1)] as [(TimeInterval, Int)] {
            fake.stub(.get, "/items", with: [.status(503), Self.ok])
            let before = fake.requests.count
            let middleware = GuideRetrying { _, _, _ in .retryAfter(asked) }
            let connect = Connect(transport: fake, middlewares: [middleware], retryPolicy: hookOnly)
            _ = try? connect.request(Endpoint()).wait()
            XCTAssertEqual(fake.requests.count - before, requests, "retryAfter(\(asked))")
        }
        XCTAssertEqual(clock.delays, [], "no wait was asked of the clock")
    }

    func testCancellingDuringTheGuideMiddlewaresWaitStopsEverything() {
        fake.stub(.get, "/items", with: .status(503))
        let middleware = GuideRetrying { _, _, _ in .retryAfter(30) }
        let connect = Connect(transport: fake, middlewares: [middleware], retryPolicy: nil)
        let future = connect.request(Endpoint())
        future.cancel()
        XCTAssertEqual(connectError(of: future)?.kind, .cancelled)
        XCTAssertEqual(fake.requests.count, 1)
    }

    // MARK: - The final error says how many attempts were made

    func testA503RetriedUntilAttemptsRunOutSaysHowManyAttempts() {
        // Given
        fake.stub(.get, "/items", with: .status(503))
        // When
        let error = connectError(of: client(policy(maxAttempts: 3)).request(Endpoint()))
        // Then
        XCTAssertEqual(fake.requests.count, 3)
        XCTAssertEqual(error?.kind, .httpStatus)
        XCTAssertEqual(error?.statusCode, 503)
        XCTAssertEqual(error?.attempts, 3)
        XCTAssertEqual(
            error?.description.hasSuffix("(HTTP 503) (after 3 attempts)"), true, "\(error.map(\.description) ?? "")")
    }

    func testATimeoutRetriedUntilAttemptsRunOutSaysHowManyAttempts() {
        // Given: what URLSessionTransport fails with when a request's own timeout passes, on every attempt
        let timedOut = ConnectError(
            .timedOut, message: "no complete response within 0.5 s", underlyingError: URLError(.timedOut))
        fake.stub(.get, "/items", with: .failure(timedOut))
        // When
        let error = connectError(of: client().request(Endpoint()))
        // Then
        XCTAssertEqual(fake.requests.count, 3)
        XCTAssertEqual(error?.kind, .timedOut)
        XCTAssertEqual(error?.attempts, 3)
        XCTAssertEqual(error?.description, "Timed out: no complete response within 0.5 s (after 3 attempts)")
    }

    /// A transport of yours that fails with a bare `URLError`: the loop makes it a ``ConnectError`` as the call ends,
    /// counting the attempts it made.
    func testAURLErrorOfACustomTransportRetriedUntilAttemptsRunOutSaysHowManyAttempts() {
        // Given
        fake.stub(.get, "/items", with: .failure(URLError(.networkConnectionLost)))
        // When
        let error = connectError(of: client().request(Endpoint()))
        // Then
        XCTAssertEqual(fake.requests.count, 3)
        XCTAssertEqual(error?.kind, .connectionLost)
        XCTAssertEqual(error?.attempts, 3)
    }

    func testAnAttemptThatEndsTheRetriesWithAnotherStatusCountsEveryAttempt() {
        // Given: two retryable answers, then one that is not retried
        fake.stub(.get, "/items", with: [.status(503), .status(502), .status(404)])
        // When
        let error = connectError(of: client().request(Endpoint()))
        // Then
        XCTAssertEqual(error?.statusCode, 404)
        XCTAssertEqual(error?.attempts, 3)
    }

    func testAFailureSentOnceKeepsOneAttemptAndItsDescription() {
        // Given: a status that is not retried, and a POST that is not replayed
        fake.stub(.get, "/items", with: [.status(404), Self.ok])
        fake.stub(.post, "/items", with: [.status(503), Self.ok])
        let connect = client()
        // When
        let notRetried = connectError(of: connect.request(Endpoint()))
        let notReplayed = connectError(of: connect.request(Endpoint(method: .post)))
        // Then: one attempt each, and the description as it has always been
        XCTAssertEqual(fake.requests.count, 2)
        for (error, line) in [
            (notRetried, "GET https://api.example.com/items] (HTTP 404)"),
            (notReplayed, "POST https://api.example.com/items] (HTTP 503)"),
        ] {
            XCTAssertEqual(error?.attempts, 1)
            XCTAssertEqual(error?.description, error.map { "HTTP error status: \($0.message) [\(line)" })
        }
    }

    func testARetriedRequestThatSucceedsIsASuccess() {
        fake.stub(.get, "/items", with: [.status(503), .failure(URLError(.networkConnectionLost)), Self.ok])
        let data = value(of: client().request(Endpoint()))
        XCTAssertEqual(data.map { String(decoding: $0, as: UTF8.self) }, #"{"ok":true}"#)
        XCTAssertEqual(fake.requests.count, 3)
    }

    func testAnErrorHandlersOwnConnectErrorAfterRetriesSaysHowManyAttempts() {
        // Given: a handler that builds its ConnectError itself
        fake.stub(.get, "/items", with: .status(500))
        let connect = client(
            errorHandler: ClosureErrorHandler { ConnectError(.serverMessage, message: "status \($0.statusCode)") })
        // When
        let error = connectError(of: connect.request(Endpoint()))
        // Then
        XCTAssertEqual(error?.message, "status 500")
        XCTAssertEqual(error?.attempts, 3)
    }

    func testAnErrorHandlersOwnErrorTypeAfterRetriesIsPassedOnUnchanged() {
        fake.stub(.get, "/items", with: .status(503))
        let connect = client(errorHandler: ClosureErrorHandler { TestError($0.statusCode) })
        XCTAssertEqual(error(of: connect.request(Endpoint())) as? TestError, TestError(503))
        XCTAssertEqual(fake.requests.count, 3)
    }

    func testAnAttemptEndedByACancellationAfterARetrySaysHowManyAttempts() {
        // Given: the second attempt fails with a cancellation the caller did not ask for (the transport's own)
        fake.stub(.get, "/items", with: [.status(503), .failure(ConnectError.cancelled())])
        // When
        let error = connectError(of: client().request(Endpoint()))
        // Then
        XCTAssertEqual(error?.kind, .cancelled)
        XCTAssertEqual(error?.attempts, 2)
    }

    func testCancellingDuringBackoffFailsWithTheCancelledFuturesOwnError() {
        // Given: waiting before attempt 2
        let clock = ImmediateRetryClock(holdsActions: true)
        fake.stub(.get, "/items", with: .status(503))
        let future = client(RetryPolicy(clock: clock)).request(Endpoint())
        // When
        future.cancel()
        // Then: the error the cancelled future fails with, which knows nothing of attempts (documented)
        let error = connectError(of: future)
        XCTAssertEqual(error?.kind, .cancelled)
        XCTAssertEqual(error?.attempts, 1)
    }

    func testGuideMiddlewareRetriesUntilItsCapSaysHowManyAttempts() {
        fake.stub(.get, "/items", with: .status(503))
        let middleware = GuideRetrying { _, _, _ in .retry }
        let connect = Connect(transport: fake, middlewares: [middleware], retryPolicy: hookOnly)
        let error = connectError(of: connect.request(Endpoint()))
        XCTAssertEqual(error?.statusCode, 503)
        XCTAssertEqual(error?.attempts, 5)
        XCTAssertEqual(error?.description.hasSuffix("(after 5 attempts)"), true, "\(error.map(\.description) ?? "")")
    }

    func testGuideMiddlewareRetryingATransportFailureSaysHowManyAttempts() {
        let failure = ConnectError(
            .transport, message: "connection reset", underlyingError: URLError(.networkConnectionLost))
        fake.stub(.get, "/items", with: .failure(failure))
        let middleware = GuideRetrying { _, _, attempt in attempt < 2 ? .retry : .doNotRetry }
        let connect = Connect(transport: fake, middlewares: [middleware], retryPolicy: nil)
        let error = connectError(of: connect.request(Endpoint()))
        XCTAssertEqual(error?.kind, .transport)
        XCTAssertEqual(error?.attempts, 2)
    }

    func testGuideMiddlewaresOwnErrorTypeAfterRetriesIsPassedOnUnchanged() {
        fake.stub(.get, "/items", with: .failure(TestError(7)))
        let middleware = GuideRetrying { _, _, _ in .retry }
        let connect = Connect(transport: fake, middlewares: [middleware], retryPolicy: hookOnly)
        XCTAssertEqual(error(of: connect.request(Endpoint())) as? TestError, TestError(7))
        XCTAssertEqual(fake.requests.count, 5)
    }

    func testAnAdaptFailingOnARetryCountsTheAttemptsSent() {
        // Given: adapt throws a ConnectError on the third attempt, after two were sent
        fake.stub(.get, "/items", with: .status(503))
        let middleware = GuideRetrying(
            failsAfter: 2, failure: ConnectError(.rejected, message: "no token")
        ) {
            _, _, _ in .retry
        }
        let connect = Connect(transport: fake, middlewares: [middleware], retryPolicy: nil)
        // When
        let error = connectError(of: connect.request(Endpoint()))
        // Then: two sent; the third attempt, whose adapt failed, counts as an attempt made
        XCTAssertEqual(fake.requests.count, 2)
        XCTAssertEqual(error?.kind, .rejected)
        XCTAssertEqual(error?.attempts, 3)
    }

    func testAGuideMiddlewareAndThePolicyShareOneLoopAndOneCap() {
        // Given: the policy's 3 attempts, and a guide middleware that asks for a retry after the first
        fake.stub(.get, "/items", with: .status(503))
        let middleware = GuideRetrying { _, _, attempt in attempt < 2 ? .retry : .doNotRetry }
        let connect = Connect(transport: fake, middlewares: [middleware], retryPolicy: policy())
        // When
        let error = connectError(of: connect.request(Endpoint()))
        // Then: the attempts do not multiply; the policy's cap holds
        XCTAssertEqual(fake.requests.count, 3)
        XCTAssertEqual(error?.attempts, 3)
        XCTAssertEqual(
            clock.delays, [1.0], "the middleware asked for no wait after attempt 1; the policy waits after 2")
    }

    // MARK: - Progress of a retried call

    /// A retried attempt's error body is not the call's body: its end is not reported as the end of the transfer,
    /// which a caller acts on (a bar at 100 %, a downloaded file opened).
    func testARetriedAttemptsBodyEndIsNotReportedAsTheCallsEnd() throws {
        // Given: a 503 with a body of its own, then the answer
        fake.stub(.get, "/items", with: [.data(Data(count: 100), status: 503), .data(Data(count: 500))])
        let reports = Recorder<TransferProgress>()
        // When
        _ = try client().request(Endpoint(), options: RequestOptions(progress: { reports.append($0) })).wait()
        // Then: one end, the answer's, in the last report
        XCTAssertEqual(fake.requests.count, 2)
        XCTAssertEqual(reports.values.filter { $0.downloadFraction == 1 }.map(\.bytesReceived), [500])
        XCTAssertEqual(reports.values.last?.bytesReceived, 500)
        XCTAssertEqual(reports.values.last?.downloadFraction, 1)
    }

    /// The attempt the call ends with reports its end, an error answer after the last retry included, and a call
    /// cancelled while it waits to retry reports no end at all.
    func testTheLastAttemptsBodyEndIsReportedOnceAndACancelledWaitReportsNone() throws {
        // Given: two attempts, both answered 503
        fake.stub(.get, "/items", with: [.data(Data(count: 100), status: 503), .data(Data(count: 300), status: 503)])
        let reports = Recorder<TransferProgress>()
        // When
        let error = connectError(
            of: client(policy(maxAttempts: 2)).request(
                Endpoint(), options: RequestOptions(progress: { reports.append($0) })))
        // Then
        XCTAssertEqual(error?.statusCode, 503)
        XCTAssertEqual(reports.values.filter { $0.downloadFraction == 1 }.map(\.bytesReceived), [300])
        XCTAssertEqual(reports.values.last?.downloadFraction, 1)

        // Given: a clock that holds the wait before the second attempt
        let held = ImmediateRetryClock(holdsActions: true)
        fake.stub(.get, "/items", with: [.data(Data(count: 100), status: 503), .data(Data(count: 500))])
        let cancelledReports = Recorder<TransferProgress>()
        let future = client(RetryPolicy(jitter: RetryPolicy.noJitter, clock: held)).request(
            Endpoint(), options: RequestOptions(progress: { cancelledReports.append($0) }))
        XCTAssertEqual(held.pendingActionCount, 1)
        // When
        future.cancel()
        // Then
        XCTAssertEqual(held.runPendingActions(), 0)
        XCTAssertEqual(cancelledReports.values.filter { $0.downloadFraction == 1 }, [])
    }
}

// MARK: - Doubles

/// An error handler that counts the responses it is given, then does what ``ErrorHandler`` does.
private struct CountingErrorHandler: ErrorHandling {
    let count: Counter

    func handle(response: [String: Any]) -> (any Error)? {
        ErrorHandler().handle(response: response)
    }

    func handle(_ response: ConnectResponse) -> (any Error)? {
        count.increment()
        return ErrorHandler().handle(response)
    }
}

/// An error handler that fails every error response with what `makeError` makes of it.
private struct ClosureErrorHandler: ErrorHandling {
    let makeError: @Sendable (ConnectResponse) -> any Error

    init(_ makeError: @escaping @Sendable (ConnectResponse) -> any Error) {
        self.makeError = makeError
    }

    func handle(response: [String: Any]) -> (any Error)? {
        ErrorHandler().handle(response: response)
    }

    func handle(_ response: ConnectResponse) -> (any Error)? {
        makeError(response)
    }
}

/// A middleware that sends every request as a `POST` (as a method-override scheme might).
private struct SendsAsPost: Middleware {
    func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
        ConnectResponse
    > {
        var request = request
        request.httpMethod = "POST"
        return next(request)
    }
}

/// An error handler that counts the responses it is given and treats a 500 as a success.
private struct Accepting500: ErrorHandling {
    let count: Counter

    func handle(response: [String: Any]) -> (any Error)? {
        ErrorHandler().handle(response: response)
    }

    func handle(_ response: ConnectResponse) -> (any Error)? {
        count.increment()
        return response.statusCode == 500 ? nil : ErrorHandler().handle(response)
    }
}

/// A usage-guide middleware: numbers each adaptation in `X-Adapted`, and retries as `decide` says.
private struct GuideRetrying: ConnectMiddlewareProtocol {
    let adapted = Counter()
    let failsAfter: Int?
    /// What `adapt` throws after `failsAfter` adaptations.
    let failure: any Error
    let decide: @Sendable (URLRequest, any Error, Int) -> RetryDecision

    init(
        failsAfter: Int? = nil, failure: any Error = TestError(401),
        decide: @escaping @Sendable (URLRequest, any Error, Int) -> RetryDecision
    ) {
        self.failsAfter = failsAfter
        self.failure = failure
        self.decide = decide
    }

    func adapt(_ request: URLRequest) throws -> URLRequest {
        if let failsAfter, adapted.value >= failsAfter { throw failure }
        adapted.increment()
        var request = request
        request.setValue("\(adapted.value)", forHTTPHeaderField: "X-Adapted")
        return request
    }

    func retry(_ request: URLRequest, dueTo error: any Error, attempt: Int) -> RetryDecision {
        decide(request, error, attempt)
    }
}

/// A clock that cancels `target` when asked to wait (a cancellation racing the decision to retry), then runs
/// the action at once.
private struct CancellingRetryClock: RetryClock {
    let target: Protected<Future<ConnectResponse>?>

    func schedule(after seconds: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any RetryCancellable {
        target.withLock { $0 }?.cancel()
        action()
        return RetryCancellables.none
    }
}

/// A clock that keeps every wait's action for the test to run, as often as it likes.
private final class KeepingClock: RetryClock {
    let actions = Protected<[@Sendable () -> Void]>([])

    func schedule(after seconds: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any RetryCancellable {
        actions.withLock { $0.append(action) }
        return RetryCancellables.none
    }
}

/// Calls the deprecated `URLError` API of `RetryPolicy` through a protocol requirement, so that the test checks the
/// adapter without a deprecation warning (CI builds with warnings as errors).
private protocol LegacyRetryPolicyUse {
    func checkDeprecatedURLErrorCodes()
}

extension RetryPolicyTests: LegacyRetryPolicyUse {
    @available(*, deprecated, message: "exercises the deprecated URLError adapter")
    func checkDeprecatedURLErrorCodes() {
        // The codes of the default kinds, the old defaults among them.
        let defaults = RetryPolicy.defaultRetryableURLErrorCodes
        for code: URLError.Code in [
            .timedOut, .networkConnectionLost, .cannotConnectToHost, .notConnectedToInternet, .dnsLookupFailed,
            .cannotFindHost, .secureConnectionFailed, .badServerResponse,
        ] {
            XCTAssertTrue(defaults.contains(code), "\(code.rawValue)")
        }
        XCTAssertFalse(defaults.contains(.cancelled))
        XCTAssertFalse(defaults.contains(.serverCertificateUntrusted))
        XCTAssertEqual(RetryPolicy.default.retryableURLErrorCodes, defaults)
        XCTAssertEqual(RetryPolicy.none.retryableURLErrorCodes, [])
        // Setting codes sets their kinds; `.cancelled` is never one of them.
        var policy = RetryPolicy()
        policy.retryableURLErrorCodes = [.timedOut, .cancelled]
        XCTAssertEqual(policy.retryableFailures, [.timedOut])
        let made = RetryPolicy(retryableURLErrorCodes: [.networkConnectionLost])
        XCTAssertEqual(made.retryableFailures, [.connectionLost])
        // Every other setting of the deprecated initializer goes through, the attempt timeout among them.
        let timed = RetryPolicy(retryableURLErrorCodes: [.timedOut], attemptTimeout: 5)
        XCTAssertEqual(timed.attemptTimeout, 5)
    }
}
