import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A body file that is no regular file (a pipe, a device) has no length to announce and may have no end: every engine
/// refuses it with `.fileAccess`, saying it is not a regular file, before anything is sent. The transports that read a
/// body file into memory (the in-memory default of `Transport.send(_:transfer:)`, which `FakeTransport` and a
/// `URLSessionTransport` over a caller's session use, and `RecordingTransport`, which reads it for matching) refuse it
/// the same way, before reading it: they left it to Foundation, which on Linux refused a pipe saying "You don't have
/// permission" (it is readable), and a read of a pipe nobody writes to need not end at all.
final class BodyFileInMemoryTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("body-file-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: folder)
    }

    /// A FIFO nobody writes to.
    private func fifo() throws -> URL {
        let url = folder.appendingPathComponent("pipe-\(UUID().uuidString)")
        guard mkfifo(url.path, 0o600) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return url
    }

    /// The outcome of sending a POST with `bodyFile` through `transport`, on a thread of its own: `nil` when the send
    /// does not come back within 10 s (the transport is reading the pipe). A writer then opens the pipe and closes it,
    /// which ends the read, so that no thread of the test is left blocked.
    private func outcome(of transport: any Transport, bodyFile: URL) throws -> Result<ConnectResponse, any Error>? {
        var request = URLRequest(url: try XCTUnwrap(URL(string: "https://api.test/upload")))
        request.httpMethod = "POST"
        let done = DispatchSemaphore(value: 0)
        let result = Protected<Result<ConnectResponse, any Error>?>(nil)
        DispatchQueue.global().async { [request] in
            let sent = transport.send(request, transfer: TransferOptions(bodyFile: bodyFile))
            result.withLock { $0 = try? sent.waitForResult(timeout: 10) }
            done.signal()
        }
        guard done.wait(timeout: .now() + 10) == .success else {
            let writer = open(bodyFile.path, O_WRONLY | O_NONBLOCK)
            if writer >= 0 { close(writer) }
            done.wait()
            return nil
        }
        return result.withLock { $0 }
    }

    private func assertRefused(
        _ outcome: Result<ConnectResponse, any Error>?, _ name: String, file: StaticString = #filePath,
        line: UInt = #line
    ) {
        guard let outcome else {
            return XCTFail("\(name): the send did not come back: it was reading the pipe", file: file, line: line)
        }
        switch outcome {
        case .success(let response):
            XCTFail("\(name): answered \(response.statusCode)", file: file, line: line)
        case .failure(let error):
            XCTAssertEqual((error as? ConnectError)?.kind, .fileAccess, "\(name): \(error)", file: file, line: line)
            XCTAssertTrue(
                (error as? ConnectError)?.message.contains("not a regular file") == true, "\(name): \(error)",
                file: file, line: line)
        }
    }

    func testTheInMemoryDefaultRefusesADirectoryAsTheBodyFileAsEnginesDo() throws {
        let directory = folder.appendingPathComponent("folder")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let fake = FakeTransport.answering(.status(200))
        let outcome = try outcome(of: fake, bodyFile: directory)
        guard case .failure(let error as ConnectError)? = outcome else {
            return XCTFail("\(String(describing: outcome))")
        }
        XCTAssertEqual(error.kind, .fileAccess)
        XCTAssertTrue(error.message.contains("it is a directory"), error.message)
        XCTAssertTrue(fake.requests.isEmpty)
    }

    func testTheInMemoryDefaultRefusesAPipeAsTheBodyFileAsEnginesDo() throws {
        let fake = FakeTransport.answering(.status(200))
        assertRefused(try outcome(of: fake, bodyFile: try fifo()), "FakeTransport")
        XCTAssertTrue(fake.requests.isEmpty)
        let session = URLSessionTransport(session: URLSession(configuration: .ephemeral))
        assertRefused(try outcome(of: session, bodyFile: try fifo()), "URLSessionTransport(session:)")
    }

    func testARecordingTransportRefusesAPipeAsTheBodyFileAsEnginesDo() throws {
        let fake = FakeTransport.answering(.status(200))
        let recorder = RecordingTransport(
            fileURL: folder.appendingPathComponent("exchange.har"), wrapping: fake, mode: .record)
        assertRefused(try outcome(of: recorder, bodyFile: try fifo()), "RecordingTransport")
        XCTAssertTrue(fake.requests.isEmpty)
        XCTAssertFalse(FileManager.default.fileExists(atPath: recorder.fileURL.path))
    }

    /// A caller's `Content-Length` that is not the body file's length is refused by the in-memory default as every
    /// engine refuses it (`contentLengthProblem`), saying the file's length: it was sent with the body read whole
    /// under a header framing another length.
    func testTheInMemoryDefaultHoldsACallersContentLengthToTheBodyFile() throws {
        // Given: a 5-byte file, and a request that says 3
        let file = folder.appendingPathComponent("body.txt")
        try Data("hello".utf8).write(to: file)
        var request = URLRequest(url: try XCTUnwrap(URL(string: "https://api.test/upload")))
        request.httpMethod = "POST"
        request.setValue("3", forHTTPHeaderField: "Content-Length")
        let transport = FakeTransport.answering(.status(204))

        // When
        let sent = transport.send(request, transfer: TransferOptions(bodyFile: file))

        // Then
        XCTAssertThrowsError(try sent.wait()) { error in
            let error = error as? ConnectError
            XCTAssertEqual(error?.invalidRequestReason, .invalidHeader(name: "Content-Length"))
            XCTAssertTrue(error?.message.contains("the body has 5 bytes") ?? false, error?.message ?? "")
        }
        XCTAssertTrue(transport.requests.isEmpty)

        // And: the file's own length is sent
        request.setValue("5", forHTTPHeaderField: "Content-Length")
        _ = try transport.send(request, transfer: TransferOptions(bodyFile: file)).wait()
        XCTAssertEqual(transport.requests.first?.httpBody, Data("hello".utf8))
    }
}
