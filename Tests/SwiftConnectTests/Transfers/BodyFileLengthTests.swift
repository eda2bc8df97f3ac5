import Foundation
import SwiftConnectTesting
import XCTest

@testable @_spi(Engine) import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A body sent from a file (``TransferOptions/bodyFile``) under a `Content-Length` of the caller's that is not the
/// file's length: the header would frame another body than the one sent (a server reads part of the file as the whole
/// body, or waits for bytes that never come). It is refused before anything is sent, as for a body in memory.
final class BodyFileLengthTests: XCTestCase {
    private var file: URL!

    override func setUpWithError() throws {
        file = FileManager.default.temporaryDirectory.appendingPathComponent("body-file-length-\(UUID().uuidString)")
        try Data("0123456789".utf8).write(to: file)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: file)
    }

    private func startedServer() throws -> LocalServer {
        let server = try LocalServer.started()
        addTeardownBlock { server.stop() }
        server.route("POST", "/upload") { request in .text(request.bodyText) }
        return server
    }

    /// The outcome of POSTing the file to `server` with `Content-Length: length`.
    private func outcome(_ transport: any Transport, server: LocalServer, length: String) throws -> Result<
        ConnectResponse, any Error
    > {
        var request = ConnectRequest(method: .post, url: server.baseURL.appendingPathComponent("upload"))
        request.setValue(length, forHTTPHeaderField: "Content-Length")
        request.timeoutInterval = 10
        return try transport.send(request, transfer: TransferOptions(bodyFile: file)).waitForResult(timeout: 20)
    }

    private func assertRefused(_ result: Result<ConnectResponse, any Error>, _ engine: String) {
        guard case .failure(let error as ConnectError) = result else {
            return XCTFail("\(engine): the server got \(String(describing: try? result.get().data))")
        }
        XCTAssertEqual(error.invalidRequestReason, .invalidHeader(name: "Content-Length"), "\(engine): \(error)")
    }

    func testAShorterLengthThanTheFilesIsRefusedOnBothEngines() throws {
        let server = try startedServer()
        assertRefused(try outcome(SocketEngine(), server: server, length: "3"), "SocketEngine")
        assertRefused(try outcome(URLSessionTransport(), server: server, length: "3"), "URLSessionTransport")
        XCTAssertTrue(server.requests.isEmpty, "nothing was sent: \(server.requests.map(\.bodyText))")
    }

    func testALongerLengthThanTheFilesIsRefused() throws {
        let server = try startedServer()
        assertRefused(try outcome(SocketEngine(), server: server, length: "11"), "SocketEngine")
        XCTAssertTrue(server.requests.isEmpty)
    }

    func testTheFilesOwnLengthIsSent() throws {
        let server = try startedServer()
        let sent = try outcome(SocketEngine(), server: server, length: " 10 ").get()
        let session = try outcome(URLSessionTransport(), server: server, length: "10").get()
        XCTAssertEqual(String(decoding: sent.data, as: UTF8.self), "0123456789")
        XCTAssertEqual(String(decoding: session.data, as: UTF8.self), "0123456789")
    }

    /// A stream of unknown length under a `Content-Length` of the caller's: the socket engine, which writes the fields
    /// it is given, sent it beside `Transfer-Encoding: chunked` (RFC 9112 §6.1 forbids both; servers and proxies read
    /// such a request one way or the other), where URLSession dropped the field. The core holds the stream to the
    /// length and tells the engine: one framing, and a stream longer than the length is refused on both.
    func testAStreamOfUnknownLengthGoesUnderTheCallersLengthOnBothEngines() throws {
        let server = try startedServer()
        func outcome(_ transport: any Transport, body: String) throws -> Result<ConnectResponse, any Error> {
            let chunks = AsyncStream<Data> { continuation in
                continuation.yield(Data(body.utf8))
                continuation.finish()
            }
            var request = ConnectRequest(
                method: .post, url: server.baseURL.appendingPathComponent("upload"), body: .stream(.init(chunks)))
            request.setValue("10", forHTTPHeaderField: "Content-Length")
            request.timeoutInterval = 10
            return try transport.send(request, transfer: TransferOptions()).waitForResult(timeout: 20)
        }

        for (name, transport) in [
            ("SocketEngine", SocketEngine() as any Transport), ("URLSession", URLSessionTransport()),
        ] {
            let sent = try outcome(transport, body: "0123456789").get()
            XCTAssertEqual(String(decoding: sent.data, as: UTF8.self), "0123456789", name)
            // One framing: the length, or on Linux's URLSession (which sends every stream in chunks) chunks alone
            let received = try XCTUnwrap(server.requests.last)
            let framing = (received.header("Content-Length"), received.header("Transfer-Encoding"))
            XCTAssertTrue(framing.0 == nil || framing.1 == nil, "\(name): \(received.headers)")
            if name == "SocketEngine" { XCTAssertEqual(framing.0, "10", "\(received.headers)") }

            guard case .failure(let error as ConnectError) = try outcome(transport, body: "0123456789AB") else {
                return XCTFail("\(name): a longer stream went out")
            }
            XCTAssertEqual(error.kind, .invalidRequest, "\(name): \(error)")
        }
    }
}
