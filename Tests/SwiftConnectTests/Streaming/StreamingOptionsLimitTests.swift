import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `StreamingOptions`' limits set through their properties after `init`, which clamps them: a limit the stream's
/// arithmetic cannot use never stops the process or leaves the engine waiting for ever.
final class StreamingOptionsLimitTests: XCTestCase {
    struct Feed: Connector {
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/feed" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
    }

    func testLimitsSetThroughTheirPropertiesAreClampedAsTheInitializerClampsThem() {
        var options = StreamingOptions()
        options.bufferLimit = 0
        XCTAssertEqual(options.bufferLimit, 1)
        options.bufferLimit = .min
        XCTAssertEqual(options.bufferLimit, 1)
        options.errorBodyLimit = -1
        XCTAssertEqual(options.errorBodyLimit, 0)
        options.errorBodyLimit = .min
        XCTAssertEqual(options.errorBodyLimit, 0)
        // Values in range are kept.
        options.bufferLimit = 5
        options.errorBodyLimit = 7
        XCTAssertEqual(options, StreamingOptions(bufferLimit: 5, errorBodyLimit: 7))
    }

    /// A negative error-body limit cut the body with a negative length, which stops the process.
    func testANegativeErrorBodyLimitSetAfterInitKeepsNoBodyInsteadOfStoppingTheProcess() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/feed", with: .stream([Data("quota exceeded".utf8)], status: 500))
        var options = StreamingOptions()
        options.errorBodyLimit = -1
        let stream = Connect(transport: transport, retryPolicy: nil).stream(Feed(), streaming: options)
        do {
            for try await _ in stream {}
            XCTFail("a 500 must fail the stream")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .httpStatus)
            XCTAssertEqual(error.statusCode, 500)
            XCTAssertEqual(error.body?.count ?? 0, 0)
        }
    }

    /// A buffer limit of `Int.min` overflowed the buffer's arithmetic on the first chunk offered.
    func testABufferLimitOfIntMinSetAfterInitFailsTheStreamAsTooLargeInsteadOfStoppingTheProcess() async throws {
        var options = StreamingOptions()
        options.bufferLimit = .min
        let body = ResponseBodyStream(options: options)
        XCTAssertTrue(body.offer(Data("a".utf8)), "one byte fits a limit of 1")
        XCTAssertFalse(body.offer(Data("b".utf8)), "a second does not")
        let buffered = try await body.next()
        XCTAssertEqual(buffered, Data("a".utf8), "the byte buffered before the overflow comes first")
        do {
            _ = try await body.next()
            XCTFail("the stream must fail once its buffer is full")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .responseTooLarge)
        }
    }

    /// A buffer limit of 0 made an engine that pauses wait for ever: its consumer, having taken every byte, left 0
    /// bytes buffered, which is not under a limit of 0.
    func testABufferLimitOfZeroSetAfterInitLetsAnEngineThatPausesGoOn() async throws {
        var options = StreamingOptions()
        options.bufferLimit = 0
        let body = ResponseBodyStream(options: options)
        let finished = expectation(description: "every chunk sent and the stream finished")
        let producer = Task {
            for text in ["a", "b", "c"] {
                guard await body.send(Data(text.utf8)) else { return }
            }
            body.finish()
            finished.fulfill()
        }
        let consumer = Task {
            var received = ""
            while let chunk = try await body.next() { received += String(decoding: chunk, as: UTF8.self) }
            return received
        }
        // The wait is met as soon as the reader takes the chunks; its length only bounds a failure, which then
        // cancels the stream so that neither task is left waiting.
        await fulfillment(of: [finished], timeout: 30)
        body.cancel()
        await producer.value
        let received = try await consumer.value
        XCTAssertEqual(received, "abc")
    }
}
