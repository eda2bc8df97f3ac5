import Foundation
import XCTest

@testable import SwiftConnect

/// `ResponseBodyStream`, the engine's side of a streamed body, read directly.
final class ResponseBodyStreamTests: XCTestCase {
    /// Two `send` calls that wait at once (a transport that sends from two tasks) both go on once the reader has
    /// caught up: one kept alone left the other waiting for ever.
    func testTwoSendsWaitingAtOnceBothGoOnOnceTheReaderCatchesUp() async throws {
        let body = ResponseBodyStream(options: StreamingOptions(bufferLimit: 100))
        XCTAssertTrue(body.offer(Data(count: 100)))
        let bothSent = Promise<[Bool]>()
        let senders = Task {
            async let first = body.send(Data(count: 5))
            async let second = body.send(Data(count: 5))
            bothSent.succeed(await [first, second])
        }
        // Both wait: 100 bytes or more are unread.
        while body.waitingSendCount < 2 { await Task.yield() }
        var total = 0
        while total < 110, let chunk = try await body.next() { total += chunk.count }
        XCTAssertEqual(total, 110)
        let results = try await bothSent.future.value(timeout: 5)
        XCTAssertEqual(results, [true, true])
        await senders.value
    }
}
