import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A body from an `InputStream` is read once: the retry loop never sends a stream an attempt already read, though
/// it runs outside the middleware that set it.
final class OneShotBodyRetryTests: XCTestCase {
    /// Sets `makeStream()`'s stream as the body of every attempt.
    private struct StreamBody: Middleware {
        let makeStream: @Sendable () -> InputStream

        func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next)
            -> Future<ConnectResponse>
        {
            request.httpBodyStream = makeStream()
            return next(request)
        }
    }

    /// Asks for one more attempt after a 401, as a token refresh does.
    private struct RetryOn401: Middleware {
        func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next)
            -> Future<ConnectResponse>
        {
            next(request).map { response in
                if response.statusCode == 401, context.attempt == 1 { context.retryAdvice.request() }
                return response
            }
        }
    }

    /// One stream for every attempt, made by the test and kept.
    private final class SharedStream: Sendable {
        // InputStream is not Sendable; this test only hands the one instance to the middleware.
        nonisolated(unsafe) let stream = InputStream(data: Data("payload".utf8))
    }

    private let endpoint = ClientFixtures.Endpoint(endpoint: "/upload", method: .put)
    private let policy = RetryPolicy(jitter: RetryPolicy.noJitter, clock: ImmediateRetryClock())

    func testThePolicyDoesNotReplayAnAttemptThatSentAStream() {
        let fake = FakeTransport()
        fake.stub(.put, "/upload", with: [.status(503), .status(200)])
        let shared = SharedStream()
        let connect = Connect(
            transport: fake, middlewares: [StreamBody { shared.stream }], retryPolicy: policy)

        let error = connectError(of: connect.request(endpoint))

        XCTAssertEqual(error?.statusCode, 503, "the first attempt's answer stands")
        XCTAssertEqual(fake.requests.count, 1, "a PUT is idempotent, but its read stream cannot be sent again")
    }

    func testAnAdvisedRetryWithTheSameStreamFailsTypedInsteadOfSendingItEmpty() {
        let fake = FakeTransport()
        fake.stub(.put, "/upload", with: [.status(401), .status(200)])
        let shared = SharedStream()
        let connect = Connect(
            transport: fake, middlewares: [RetryOn401(), StreamBody { shared.stream }], retryPolicy: policy)

        let error = connectError(of: connect.request(endpoint))

        XCTAssertEqual(error?.kind, .invalidRequest)
        XCTAssertTrue(error?.message.contains("can be read once") == true, error?.message ?? "")
        XCTAssertEqual(fake.requests.count, 1)
    }

    func testAnAdvisedRetryOfARequestWhoseOwnBodyIsAStreamEndsWithTheAnswer() throws {
        // Given: a request built with a one-shot body (an OpenAPI upload), and a middleware that asks for another
        // attempt after a 401, as a token refresh does
        let fake = FakeTransport()
        fake.stub(.put, "/upload", with: [.status(401), .status(200)])
        let connect = Connect(transport: fake, middlewares: [RetryOn401()], retryPolicy: policy)
        let request = ConnectRequest.oneShotUpload()
        // When
        let answer = try connect.response(for: request, options: RequestOptions(acceptsEveryStatus: true)).wait()
        // Then: the 401 is the answer, not an error about a body read once; nothing was sent twice
        XCTAssertEqual(answer.statusCode, 401)
        XCTAssertEqual(fake.requests.count, 1)
    }

    func testAnAdvisedRetryWithANewStreamIsSent() {
        let fake = FakeTransport()
        fake.stub(.put, "/upload", with: [.status(401), .status(200)])
        let connect = Connect(
            transport: fake, middlewares: [RetryOn401(), StreamBody { InputStream(data: Data("payload".utf8)) }],
            retryPolicy: policy)

        XCTAssertNotNil(value(of: connect.request(endpoint)))
        XCTAssertEqual(fake.requests.count, 2)
    }

    /// Sends its attempt's request twice at once (a hedge), and answers with the first send's outcome once both ended.
    private struct Hedge: Middleware {
        let second: Recorder<Result<ConnectResponse, any Error>>

        func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next)
            -> Future<ConnectResponse>
        {
            let request = copy request
            let first = next(request)
            let other = next(request)
            other.observe { second.append($0) }
            return first
        }
    }

    /// Sends the call's request, then sends it again with a stream of its own, and asks for another attempt.
    private struct ResendWithAStreamOfItsOwn: Middleware {
        func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next)
            -> Future<ConnectResponse>
        {
            guard context.attempt == 1 else { return next(request) }
            let original = copy request
            return next(original).flatMap { _ in
                var again = original
                again.body = .stream(
                    ConnectRequest.OneShotStream(
                        AsyncStream<Data> { continuation in
                            continuation.yield(Data("other".utf8))
                            continuation.finish()
                        }))
                return next(again).map { response in
                    context.retryAdvice.request()
                    return response
                }
            }
        }
    }

    /// An attempt that sent the call's stream and then another: the loop knew only the latest, so the next attempt
    /// sent the call's stream again, read already (an empty body). Every stream an attempt's sends took counts.
    func testAnAttemptThatSentTheCallsStreamAndThenAnotherDoesNotSendTheFirstAgain() throws {
        let fake = FakeTransport()
        fake.stub(.put, "/upload", with: [.status(500), .status(500), .status(200)])
        let connect = Connect(transport: fake, middlewares: [ResendWithAStreamOfItsOwn()], retryPolicy: policy)
        let request = ConnectRequest.oneShotUpload()
        let error = connectError(of: connect.response(for: request))
        XCTAssertEqual(error?.statusCode, 500, "the answer stands: the call's stream cannot go again")
        XCTAssertEqual(fake.requests.count, 2, "the attempt's two sends, and no third with the call's read stream")
    }

    func testAHedgeSendingItsAttemptsStreamTwiceFailsTheSecondSendTypedUnsent() throws {
        // Given: a request whose body is a one-shot stream, and a middleware that sends each attempt's request twice
        let fake = FakeTransport()
        fake.stub(.put, "/upload", with: [.status(200), .status(200)])
        let second = Recorder<Result<ConnectResponse, any Error>>()
        let connect = Connect(
            transport: fake, middlewares: [Hedge(second: second)], retryPolicy: policy)
        let request = ConnectRequest.oneShotUpload()
        // When
        let call = connect.response(for: request)
        // Then: the stream goes out once; the other send fails typed, without reaching the transport with it
        XCTAssertNotNil(value(of: call))
        XCTAssertTrue(second.wait(forCount: 1))
        guard case .failure(let error as ConnectError) = second.values.first else {
            return XCTFail("the stream was sent twice: \(second.values)")
        }
        XCTAssertEqual(error.kind, .invalidRequest)
        XCTAssertTrue(error.message.contains("can be read once"), error.message)
        XCTAssertEqual(fake.requests.count, 1)
    }
}
