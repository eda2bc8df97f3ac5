import Foundation
import XCTest

@testable import SwiftConnect

/// What a stream's idle timeout means for the time its error body is read, and for the request's idle timeout, when
/// it is a value that sets no limit (zero, negative, NaN, infinity: documented as none, like `nil`).
final class StreamingIdleTimeoutValueTests: XCTestCase {
    /// A value that sets no limit reads an error body for ten seconds, as `nil` does: `min(0, 10)` and `min(.nan, 10)`
    /// gave a limit the deadline refused, so the body was read with none, and a trickling 503 held a stream of
    /// `timeout: .infinity` for ever. It also leaves the request's idle timeout to apply, as `nil` does.
    func testAValueThatSetsNoLimitReadsAnErrorBodyForTenSecondsAndLeavesTheRequestsIdleTimeout() {
        for value: TimeInterval? in [nil, 0, -1, -.infinity, .nan, .infinity] {
            let options = StreamingOptions(idleTimeout: value)
            XCTAssertNil(options.usableIdleTimeout, "\(String(describing: value))")
            XCTAssertEqual(options.errorExcerptTime, 10, "\(String(describing: value))")
            XCTAssertEqual(options.takingIdleTimeout(5).usableIdleTimeout, 5, "\(String(describing: value))")
        }
        XCTAssertEqual(StreamingOptions(idleTimeout: 0.5).errorExcerptTime, 0.5)
        XCTAssertEqual(StreamingOptions(idleTimeout: 30).errorExcerptTime, 10)
        XCTAssertEqual(StreamingOptions(idleTimeout: 0.5).takingIdleTimeout(5).usableIdleTimeout, 0.5, "its own wins")
    }
}
