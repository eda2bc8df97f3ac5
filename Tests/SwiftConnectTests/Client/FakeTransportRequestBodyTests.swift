import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A one-shot (stream) request body reaches a `FakeTransport` as bytes: its stub's handler and ``requests`` see what
/// the app uploads, and a body that fails or has another length than it announced fails the call as on an engine.
final class FakeTransportRequestBodyTests: XCTestCase {
    private static let url = URL(string: "https://api.example.com/v1/uploads")!

    /// The chunks of `parts`, then the end, or `failure`.
    private static func chunks(_ parts: [String], endingWith failure: (any Error)? = nil) -> AsyncThrowingStream<
        Data, any Error
    > {
        AsyncThrowingStream { continuation in
            for part in parts { continuation.yield(Data(part.utf8)) }
            continuation.finish(throwing: failure)
        }
    }

    private struct UploadBroke: Error, Equatable {}

    func testAStreamedBodyReachesTheStubsHandlerAndTheRecordedRequestAsBytes() throws {
        // Given: a stub that echoes the body it sees
        let transport = FakeTransport()
        transport.stub(
            .put, "/v1/uploads",
            with: .handler { request in
                .success(ConnectResponse(request: request, statusCode: 200, data: request.httpBody ?? Data())!)
            })
        let connect = Connect(transport: transport, retryPolicy: nil)
        let body = ConnectRequest.OneShotStream(Self.chunks(["hel", "lo ", "world"]), length: 11)
        // When
        let response = try connect.response(for: ConnectRequest(method: .put, url: Self.url, body: .stream(body)))
            .wait(timeout: 5)
        // Then
        XCTAssertEqual(String(decoding: response.data, as: UTF8.self), "hello world")
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(transport.requests.first?.httpBody, Data("hello world".utf8))
        XCTAssertNil(transport.requests.first?.httpBodyStream)
    }

    /// The progress of a streamed upload counts the bytes the fake read, as an engine's does: it told 0 of 0 sent.
    func testAStreamedBodysProgressCountsTheBytesSent() throws {
        let transport = FakeTransport.answering(.status(204))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let reports = Recorder<TransferProgress>()
        let options = RequestOptions(progress: { reports.append($0) })
        let body = ConnectRequest.OneShotStream(Self.chunks(["hel", "lo ", "world"]), length: 11)
        _ = try connect.response(
            for: ConnectRequest(method: .put, url: Self.url, body: .stream(body)), options: options
        ).wait(timeout: 5)
        XCTAssertEqual(reports.values.last?.bytesSent, 11)
        XCTAssertEqual(reports.values.last?.totalBytesToSend, 11)
    }

    func testAnInputStreamBodySentStraightToTheFakeIsRecordedAsBytes() throws {
        // Given
        let transport = FakeTransport.answering(.status(204))
        var request = URLRequest(url: Self.url)
        request.httpMethod = "POST"
        request.httpBodyStream = InputStream(data: Data("from a stream".utf8))
        // When
        let response = try transport.send(request).wait(timeout: 5)
        // Then
        XCTAssertEqual(response.statusCode, 204)
        XCTAssertEqual(transport.requests.first?.httpBody, Data("from a stream".utf8))
        XCTAssertEqual(try transport.requestsReceived(count: 1).wait(timeout: 5).count, 1)
    }

    func testAStreamThatFailsFailsTheCallWithTheCoresErrorAndNothingIsReceived() throws {
        // Given
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let body = ConnectRequest.OneShotStream(Self.chunks(["part"], endingWith: UploadBroke()))
        // When
        let error = try XCTUnwrap(
            connectError(of: connect.response(for: ConnectRequest(method: .put, url: Self.url, body: .stream(body)))))
        // Then: the stream's error, kept, in the core's failure of a body that cannot be sent
        XCTAssertEqual(error.kind, .invalidRequest)
        guard case .bodyEncodingFailed? = error.invalidRequestReason else {
            return XCTFail(String(describing: error.invalidRequestReason))
        }
        XCTAssertEqual(error.underlyingError as? UploadBroke, UploadBroke())
        XCTAssertTrue(transport.requests.isEmpty, "a body that never ended whole was not received")
    }

    func testAStreamOfAnotherLengthThanItAnnouncedFailsTheCall() throws {
        // Given: a body announcing 10 bytes that gives 3, and one announcing 2 that gives 3
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(transport: transport, retryPolicy: nil)
        for announced in [Int64(10), 2] {
            let body = ConnectRequest.OneShotStream(Self.chunks(["abc"]), length: announced)
            // When
            let error = try XCTUnwrap(
                connectError(
                    of: connect.response(for: ConnectRequest(method: .put, url: Self.url, body: .stream(body)))))
            // Then
            XCTAssertEqual(error.kind, .invalidRequest, "\(announced)")
            guard case .bodyEncodingFailed(let detail)? = error.invalidRequestReason else {
                return XCTFail(String(describing: error.invalidRequestReason))
            }
            XCTAssertTrue(detail.contains("\(announced)"), detail)
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }

    func testCancellingWhileTheBodyIsReadStopsTheReadingAndReceivesNothing() throws {
        // Given: a body that never ends
        let transport = FakeTransport.answering(.status(200))
        let (chunks, continuation) = AsyncStream<Data>.makeStream()
        continuation.yield(Data("start".utf8))
        let stopped = Promise<Void>()
        continuation.onTermination = { _ in stopped.succeed(()) }
        // Kept, as the client keeps its request's body while it is sent: the transport reads its chunks.
        let body = ConnectRequest.OneShotStream(chunks)
        let call = transport.send(ConnectRequest(method: .put, url: Self.url, body: .stream(body)).urlRequest)
        // When
        call.cancel()
        // Then: the sequence was let go, and nothing was received
        XCTAssertNoThrow(try stopped.future.wait(timeout: 5))
        withExtendedLifetime(body) {}
        XCTAssertTrue(call.isCancelled)
        XCTAssertTrue(transport.requests.isEmpty)
    }
}
