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
}
