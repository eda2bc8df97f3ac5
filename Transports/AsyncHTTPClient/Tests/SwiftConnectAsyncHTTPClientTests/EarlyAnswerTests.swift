import Foundation
import SwiftConnect
import SwiftConnectAsyncHTTPClient
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An upload the server answers before it has read the body (a 413, a 401): AsyncHTTPClient stops sending the body
/// and never asks for the rest, yet ends the request only once the body has ended. The answer reaches the caller
/// whole, long before the call's deadline, and the body's source is let go.
final class EarlyAnswerTests: XCTestCase {
    /// A body larger than the loopback sockets' buffers hold: it cannot have been sent whole when the answer comes.
    private static let bodySize = 16 << 20

    private var transport: AsyncHTTPClientTransport!
    private var file: URL!

    override func setUpWithError() throws {
        transport = AsyncHTTPClientTransport()
        file = FileManager.default.temporaryDirectory.appendingPathComponent("early-answer-\(UUID()).bin")
        try Data(count: Self.bodySize).write(to: file)
    }

    override func tearDown() async throws {
        try await transport.shutdown()
        try? FileManager.default.removeItem(at: file)
    }

    /// `413 Content Too Large` with a body of `Content-Length` framing, written with the head or after it.
    private static let tooLarge = (
        head: "HTTP/1.1 413 Content Too Large\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n\r\n",
        body: "too large"
    )

    /// The same in chunks, its end with its last chunk.
    private static let tooLargeInChunks =
        "HTTP/1.1 413 Content Too Large\r\nTransfer-Encoding: chunked\r\n\r\n"
        + "3\r\ntoo\r\n6\r\n large\r\n0\r\n\r\n"

    /// What a call ended with: the kind of its error, the status and the body it carries.
    private struct Outcome: Equatable {
        var kind: ConnectError.Kind?
        var status: Int?
        var body: String?

        init(_ error: any Error) {
            let error = error as? ConnectError
            kind = error?.kind
            status = error?.statusCode
            body = error?.body.map { String(decoding: $0, as: UTF8.self) }
        }

        init(kind: ConnectError.Kind, status: Int, body: String) {
            self.kind = kind
            self.status = status
            self.body = body
        }
    }

    /// Uploads the 16 MiB file with a deadline of 5 s to `server`, which answers early.
    private func uploadFile(to server: EarlyAnswerServer) async -> Outcome? {
        let connect = Connect(transport: transport)
        let route = Route("/up", baseURL: server.baseURL, method: .put, timeout: 5)
        do {
            _ = try await connect.upload(files: [File(key: "blob", fileURL: file)], fields: [], to: route).value
            XCTFail("an answer of 300 or more fails the call")
            return nil
        } catch {
            return Outcome(error)
        }
    }

    func testAFileUploadAnsweredEarlyGetsTheAnswerWhole() async throws {
        // Given: answers with a body of `Content-Length` framing (with the head, or after it), without a body, and in
        // chunks (ending with the last one)
        let answers: [(pieces: [String], expected: Outcome)] = [
            ([Self.tooLarge.head + Self.tooLarge.body], Outcome(kind: .httpStatus, status: 413, body: "too large")),
            ([Self.tooLarge.head, Self.tooLarge.body], Outcome(kind: .httpStatus, status: 413, body: "too large")),
            (
                ["HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n"],
                Outcome(kind: .httpStatus, status: 401, body: "")
            ),
            ([Self.tooLargeInChunks], Outcome(kind: .httpStatus, status: 413, body: "too large")),
        ]
        for (pieces, expected) in answers {
            let server = try EarlyAnswerServer { _ in pieces.map { Data($0.utf8) } }
            defer { server.stop() }

            // When
            let outcome = await uploadFile(to: server)

            // Then: the server's answer, whole, from one attempt (a timeout would have been retried)
            XCTAssertEqual(outcome, expected, "\(pieces)")
            XCTAssertEqual(server.requestHeads.count, 1, "\(pieces)")
        }
    }

    /// A body from memory (sent in slices) answered early without a body of its own: the answer's end arrives with
    /// no bytes while the body is held back, which AsyncHTTPClient ends the request on only once the body has ended.
    /// The slices were written on the event loop, out of reach of the early answer's handling: the call waited for
    /// its deadline (then retried), and the held write kept the body in memory.
    func testAnUploadFromMemoryAnsweredEarlyGetsTheAnswerBeforeItsDeadline() async throws {
        // Given
        let server = try EarlyAnswerServer { _ in [Data("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n".utf8)]
        }
        defer { server.stop() }
        let request = ConnectRequest(
            method: .put, url: server.baseURL.appendingPathComponent("up"), body: .bytes(Data(count: Self.bodySize)),
            timeoutInterval: 5)

        // When
        do {
            _ = try await Connect(transport: transport, retryPolicy: nil).response(for: request).value
            XCTFail("an answer of 300 or more fails the call")
        } catch {
            // Then: the answer, not the deadline's `.timedOut`
            XCTAssertEqual(Outcome(error), Outcome(kind: .httpStatus, status: 401, body: ""))
        }
        XCTAssertEqual(server.requestHeads.count, 1)
    }

    func testAStreamedUploadAnsweredEarlyLetsItsSourceGoBeforeTheAnswerEnds() async throws {
        // Given: an answer whose last bytes wait, and a body of unknown length (sent in chunks) that never ends
        let server = try EarlyAnswerServer(holdingLastPiece: true) { _ in
            [Data((Self.tooLarge.head + "too ").utf8), Data("large".utf8)]
        }
        defer { server.stop() }
        let released = expectation(description: "the engine lets the body's source go")
        let source = EndlessChunks { released.fulfill() }
        let request = ConnectRequest(
            method: .put, url: server.baseURL.appendingPathComponent("up"),
            body: .stream(ConnectRequest.OneShotStream(source)), timeoutInterval: 5)
        let call = Connect(transport: transport).response(for: request)

        // When: the answer's head has arrived, its end has not
        await fulfillment(of: [released], timeout: 5)
        server.sendHeldPieces()

        // Then: the source was let go before the answer ended, and the answer arrives whole
        do {
            _ = try await call.value
            XCTFail("an answer of 300 or more fails the call")
        } catch {
            XCTAssertEqual(Outcome(error), Outcome(kind: .httpStatus, status: 413, body: "too large"))
        }
        XCTAssertEqual(server.requestHeads.count, 1)
    }
}

/// 64 KiB chunks without end, each ready at once; `released` runs when the iterator reading them is released.
private struct EndlessChunks: AsyncSequence, Sendable {
    typealias Element = Data

    let released: @Sendable () -> Void

    func makeAsyncIterator() -> Iterator { Iterator(release: Release(released)) }

    struct Iterator: AsyncIteratorProtocol {
        let release: Release

        mutating func next() async -> Data? { Data(count: 64 << 10) }
    }

    /// Runs its action when released.
    final class Release: Sendable {
        private let action: @Sendable () -> Void

        init(_ action: @escaping @Sendable () -> Void) { self.action = action }

        deinit { action() }
    }
}
