import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request body given as a stream with a `Content-Length` announced, whose producer fails midway or ends early,
/// through the client with a retry policy that would retry any failure: the call ends with the core's typed error
/// (the producer's failure underneath), on every engine; the server never gets the short body as a whole one, and
/// the one-shot body is not sent again.
final class RequestBodyStreamFailureTests: XCTestCase {
    private struct ProducerFailed: Error {}

    private var server: LocalServer!

    override func setUpWithError() throws {
        server = try LocalServer.started()
    }

    override func tearDown() {
        server.stop()
    }

    /// The engines under test: URLSession and the tests' socket engine (which gets every rule from the core).
    private func engines() -> [(name: String, transport: any Transport)] {
        [("URLSession", URLSessionTransport()), ("SocketEngine", SocketEngine())]
    }

    /// A policy that retries every kind of failure at once: only the one-shot body can keep it from sending again.
    private var retryingEverything: RetryPolicy {
        RetryPolicy(
            maxAttempts: 3, jitter: RetryPolicy.noJitter, retryableFailures: Set(ConnectError.Kind.allCases),
            clock: ImmediateRetryClock())
    }

    /// 100 000 bytes, then the producer throws, though 200 000 were announced.
    func testAProducerThatThrowsMidwayFailsTypedUnsentAgainOnEveryEngine() throws {
        try check(announcing: 200_000, throwing: true)
    }

    /// 100 000 bytes, then the producer ends, though 200 000 were announced.
    func testAProducerThatEndsEarlyFailsTypedUnsentAgainOnEveryEngine() throws {
        try check(announcing: 200_000, throwing: false)
    }

    private func check(announcing length: Int64, throwing: Bool, file: StaticString = #filePath, line: UInt = #line)
        throws
    {
        for (name, engine) in engines() {
            // A path of each engine's own: a request that reaches the server late is counted for its engine.
            let path = "/upload-\(name)"
            // What the server read of the body, once its reading ended: with the body whole, or the connection gone.
            let seen = Promise<(bytes: Int, isComplete: Bool)>()
            server.streamingRoute("POST", path) { _, body in
                var count = 0
                while let piece = body.read(maxBytes: 64 << 10) { count += piece.count }
                _ = seen.succeed((count, body.isComplete))
                return .text("\(count)")
            }
            let transport = CountingSends(engine)
            let chunks = AsyncThrowingStream<Data, any Error> { continuation in
                continuation.yield(Data(repeating: 1, count: 100_000))
                if throwing {
                    continuation.finish(throwing: ProducerFailed())
                } else {
                    continuation.finish()
                }
            }
            let request = ConnectRequest(
                method: .post, url: server.baseURL.appendingPathComponent(String(path.dropFirst())),
                body: .stream(ConnectRequest.OneShotStream(chunks, length: length)), timeoutInterval: 30)
            let connect = Connect(transport: transport, retryPolicy: retryingEverything)
            let result = Result { try connect.response(for: request, name: "upload").wait(timeout: 30) }
            guard case .failure(let failure) = result else {
                XCTFail("\(name): the call succeeded with a body shorter than announced", file: file, line: line)
                continue
            }
            let error = try XCTUnwrap(failure as? ConnectError, "\(name): \(failure)", file: file, line: line)
            XCTAssertEqual(error.kind, .invalidRequest, "\(name): \(error)", file: file, line: line)
            guard case .bodyEncodingFailed? = error.invalidRequestReason else {
                XCTFail("\(name): expected bodyEncodingFailed, got \(error)", file: file, line: line)
                continue
            }
            if throwing {
                XCTAssertTrue(
                    error.underlyingError is ProducerFailed, "\(name): the producer's error was lost: \(error)",
                    file: file, line: line)
            } else {
                XCTAssertTrue(
                    error.message.contains("announced \(length)"), "\(name): \(error.message)", file: file, line: line)
            }
            // Both engines send the head and the first chunk before the producer fails or ends: the server gets the
            // request, and its reading ends only when the engine closes the connection (a body left open would hold
            // it until this wait's end).
            let received = try XCTUnwrap(
                try? seen.future.wait(timeout: 10), "\(name): the server's reading never ended", file: file, line: line)
            XCTAssertFalse(
                received.isComplete, "\(name): the server got \(received.bytes) bytes as a whole body", file: file,
                line: line)
            XCTAssertLessThan(received.bytes, Int(length), "\(name)", file: file, line: line)
            XCTAssertEqual(
                transport.sends.withLock { $0 }, 1, "\(name): the body was handed over again", file: file, line: line)
            XCTAssertLessThanOrEqual(
                server.requestCount(for: "POST", path: path), 1, "\(name): the server got the body again",
                file: file, line: line)
        }
    }
}

/// Hands every request to `base`, counting the sends: a retry of the call is one more.
private struct CountingSends: Transport {
    let base: any Transport
    let sends = Guarded(0)

    init(_ base: any Transport) {
        self.base = base
    }

    func send(_ request: URLRequest) -> Future<ConnectResponse> {
        sends.withLock { $0 += 1 }
        return base.send(request)
    }

    func send(_ request: URLRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
        sends.withLock { $0 += 1 }
        return base.send(request, transfer: transfer)
    }

    func send(_ request: ConnectRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
        sends.withLock { $0 += 1 }
        return base.send(request, transfer: transfer)
    }
}
