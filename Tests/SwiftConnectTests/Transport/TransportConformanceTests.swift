import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// `URLSessionTransport` against the transport contract (`TransportConformance`), each platform exception named
/// with the defect behind it. A known defect that starts passing fails this test, so the exception goes.
final class TransportConformanceTests: XCTestCase {
    /// What FoundationNetworking (libcurl) cannot do, and why.
    static var knownDefects: [String: String] {
        #if canImport(FoundationNetworking)
            return [
                "cookie set by a redirect":
                    "FoundationNetworking does not store a cookie set by a response it redirects from, so the next "
                    + "hop goes without it",
                "size limit stops reading":
                    "FoundationNetworking cannot abort a transfer under way; the transport invalidates the "
                    + "request's own session, which stops it in some runs only: otherwise the rest is read and dropped",
                "reset of a POST on a reused connection":
                    "FoundationNetworking waits for the whole timeout when the server closes a reused connection "
                    + "under a POST",
            ]
        #else
            return [:]
        #endif
    }

    func testURLSessionTransportKeepsTheContract() {
        let outcomes = TransportConformance.run(knownDefects: Self.knownDefects) { URLSessionTransport() }

        XCTAssertEqual(outcomes.count, TransportConformance.checks.count)
        for outcome in outcomes {
            print(outcome)
            // The size limit is stopped by a race between invalidating the session and libcurl reading on: either
            // outcome is seen on Linux (1 pass in 4 runs here), so it is not held to one.
            if outcome.check == "size limit stops reading", Self.knownDefects[outcome.check] != nil { continue }
            XCTAssertTrue(outcome.isAsExpected, outcome.description)
        }
    }
}
