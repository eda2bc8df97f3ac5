import Foundation
import SwiftConnectTesting
import XCTest

@testable @_spi(Engine) import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `RequestOptions.idleTimeout`, applied once by the core's exchange for every engine: a quiet network fails the
/// attempt with `.timedOut` naming `idleTimeout`, long before the call's deadline; the retry policy sees a timeout;
/// invalid values are refused as `timeout`'s are, nothing sent.
final class ExchangeIdleTimeoutTests: XCTestCase {
    typealias ScriptedEngine = EngineExchangeTests.ScriptedEngine

    /// An engine that takes the request and never answers: its hop waits until the exchange cancels it.
    final class SilentEngine: HTTPEngine, Sendable {
        /// Completed when the exchange cancels the hop.
        let cancelled = Promise<Void>()

        func send(_ hop: EngineRequest) async throws -> EngineResponse<AsyncThrowingStream<Data, any Error>> {
            let (never, continuation) = AsyncStream<Void>.makeStream()
            try await withTaskCancellationHandler {
                for await _ in never {}
                try Task.checkCancellation()
            } onCancel: { [cancelled] in
                _ = cancelled.succeed(())
                continuation.finish()
            }
            throw CancellationError()
        }
    }

    private func request(_ path: String, timeout: TimeInterval = 60) -> URLRequest {
        var request = URLRequest(url: URL(string: "https://example.test" + path)!)
        request.timeoutInterval = timeout
        return request
    }

    private func failure(of future: Future<some Any>) throws -> ConnectError {
        switch try future.waitForResult(timeout: 10) {
        case .success(let value): throw EngineExchangeTests.ExpectedAnError(description: "expected an error: \(value)")
        case .failure(let error): return try XCTUnwrap(error as? ConnectError, "\(error)")
        }
    }

    /// A body that sends its first part and then stalls fails after the idle timeout, not at the 60 s deadline,
    /// with `.timedOut` whose message names `idleTimeout` and the seconds, worded for the body.
    func testABodyThatStallsFailsWithTheIdleTimeout() throws {
        let engine = ScriptedEngine([.init(status: 200, chunks: [Data("first".utf8)], ends: false)])
        var transfer = TransferOptions()
        transfer.idleTimeout = 0.3
        let error = try failure(of: engine.send(request("/stall"), transfer: transfer))
        XCTAssertEqual(error.kind, .timedOut, "\(error)")
        XCTAssertEqual(error.urlError?.code, .timedOut)
        XCTAssertTrue(error.message.contains("RequestOptions.idleTimeout"), error.message)
        XCTAssertTrue(error.message.contains("received no bytes for 0.3 s"), error.message)
        XCTAssertEqual(error.request?.url?.path, "/stall")
    }

    /// A server that never answers fails after the idle timeout with the head's wording, and the engine's hop is
    /// cancelled (the transfer stops).
    func testAHeadThatNeverComesFailsWithTheIdleTimeoutAndStopsTheHop() throws {
        let engine = SilentEngine()
        var transfer = TransferOptions()
        transfer.idleTimeout = 0.3
        let error = try failure(of: engine.send(request("/silent"), transfer: transfer))
        XCTAssertEqual(error.kind, .timedOut, "\(error)")
        XCTAssertTrue(error.message.contains("no response head within 0.3 s"), error.message)
        XCTAssertTrue(error.message.contains("RequestOptions.idleTimeout"), error.message)
        XCTAssertNoThrow(try engine.cancelled.future.wait(timeout: 10), "the hop is cancelled")
    }

    /// Through a client: the call's option reaches the exchange, the attempt fails as a timeout, and the retry policy
    /// retries it as one (a GET is safe to replay): the second attempt's answer is the call's.
    func testTheRetryPolicySeesAnIdleTimeoutAsATimeout() throws {
        let engine = ScriptedEngine([
            .init(status: 200, chunks: [Data("partial".utf8)], ends: false),
            .init(status: 200, fields: [.contentLength: "2"], chunks: [Data("ok".utf8)]),
        ])
        let connect = Connect(transport: engine, retryPolicy: RetryPolicy(maxAttempts: 2, clock: ImmediateRetryClock()))
        let response = try connect.response(
            for: Route("/flaky", baseURL: URL(string: "https://example.test")!, timeout: 60),
            options: RequestOptions(idleTimeout: 0.3)
        ).wait(timeout: 20)
        XCTAssertEqual(response.data, Data("ok".utf8))
        XCTAssertEqual(engine.hops.count, 2)
    }

    /// Without a retry, the client's call fails with the idle timeout's error, well before its deadline.
    func testACallWithAnIdleTimeoutFailsWithItsError() throws {
        let engine = ScriptedEngine([.init(status: 200, chunks: [Data("partial".utf8)], ends: false)])
        let connect = Connect(transport: engine, retryPolicy: nil)
        let error = try failure(
            of: connect.response(
                for: Route("/stall", baseURL: URL(string: "https://example.test")!, timeout: 600),
                options: RequestOptions(idleTimeout: 0.3)))
        XCTAssertEqual(error.kind, .timedOut, "\(error)")
        XCTAssertTrue(error.message.contains("RequestOptions.idleTimeout"), error.message)
    }

    /// Zero, a negative value and NaN are refused as `timeout`'s are: `.invalidRequest`, reason `invalidTimeout`,
    /// the message naming `idleTimeout`, nothing sent. `.infinity` sets none.
    func testInvalidIdleTimeoutsAreRefusedNothingSent() throws {
        for value in [0, -1, TimeInterval.nan] {
            let engine = ScriptedEngine([.init(status: 204)])
            let connect = Connect(transport: engine, retryPolicy: nil)
            let error = try failure(
                of: connect.response(
                    for: Route("/x", baseURL: URL(string: "https://example.test")!),
                    options: RequestOptions(idleTimeout: value)))
            XCTAssertEqual(error.kind, .invalidRequest, "\(value): \(error)")
            guard case .invalidTimeout? = error.invalidRequestReason else {
                return XCTFail("\(value): \(String(describing: error.invalidRequestReason))")
            }
            XCTAssertTrue(error.message.contains("idleTimeout"), error.message)
            XCTAssertTrue(engine.hops.isEmpty, "\(value): nothing is sent")
        }
        let engine = ScriptedEngine([.init(status: 204)])
        let connect = Connect(transport: engine, retryPolicy: nil)
        let response = try connect.response(
            for: Route("/x", baseURL: URL(string: "https://example.test")!),
            options: RequestOptions(idleTimeout: .infinity)
        ).wait(timeout: 20)
        XCTAssertEqual(response.statusCode, 204)
    }

    /// Levels combine as every single value does: the most specific that sets one wins, and options with only an
    /// idle timeout are not empty.
    func testIdleTimeoutsMergeMostSpecificWins() {
        let client = RequestOptions(idleTimeout: 30)
        XCTAssertFalse(client.isEmpty)
        XCTAssertEqual(client.merged(with: RequestOptions()).idleTimeout, 30)
        XCTAssertEqual(client.merged(with: RequestOptions(headers: [.accept("a/b")])).idleTimeout, 30)
        XCTAssertEqual(client.merged(with: RequestOptions(idleTimeout: 5)).idleTimeout, 5)
        var options = RequestOptions()
        options.idleTimeout = 7
        XCTAssertEqual(options.idleTimeout, 7)
        options.idleTimeout = nil
        XCTAssertTrue(options.isEmpty)
    }

    /// A stream's own idle timeout wins; without one it takes the call's.
    func testAStreamsOwnIdleTimeoutWins() {
        XCTAssertEqual(StreamingOptions(idleTimeout: 2).takingIdleTimeout(9).idleTimeout, 2)
        XCTAssertEqual(StreamingOptions().takingIdleTimeout(9).idleTimeout, 9)
        XCTAssertNil(StreamingOptions().takingIdleTimeout(nil).idleTimeout)
    }

    /// A body whose parts keep coming is read whole: the watch is stopped with the exchange, and leaves no timer.
    func testABodyThatKeepsComingIsReadWhole() throws {
        let parts = (0..<4).map { Data("part \($0);".utf8) }
        let engine = ScriptedEngine([.init(status: 200, chunks: parts)])
        var transfer = TransferOptions()
        transfer.idleTimeout = 5
        let response = try engine.send(request("/steady"), transfer: transfer).wait(timeout: 20)
        XCTAssertEqual(response.data, parts.reduce(Data(), +))
    }
}
