import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Uploads from files that cannot be read as one: a pipe nobody writes to, a file removed before the send. Each ends
/// in `.fileAccess` naming the file, and nothing waits on the pipe.
final class UploadFileEdgeTests: XCTestCase {
    private var folder: URL!

    private struct Upload: Connector {
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/upload" }
        var method: HTTPMethod { .post }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
    }

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("upload-edge-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: folder)
    }

    private func fifo() throws -> URL {
        let url = folder.appendingPathComponent("pipe-\(UUID().uuidString)")
        guard mkfifo(url.path, 0o600) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return url
    }

    /// Runs `work` on a thread of its own; `nil` when it does not come back within 10 s (it is reading `pipe`), after
    /// which a writer opens and closes the pipe so that no thread is left blocked.
    private func outcome<T: Sendable>(unblocking pipe: URL, _ work: @escaping @Sendable () throws -> T) -> Result<
        T, any Error
    >? {
        let done = DispatchSemaphore(value: 0)
        let result = Protected<Result<T, any Error>?>(nil)
        DispatchQueue.global().async {
            let outcome = Result { try work() }
            result.withLock { $0 = outcome }
            done.signal()
        }
        guard done.wait(timeout: .now() + 10) == .success else {
            let writer = open(pipe.path, O_WRONLY | O_NONBLOCK)
            if writer >= 0 { close(writer) }
            done.wait()
            return nil
        }
        return result.withLock { $0 }
    }

    private func assertFileAccess<T>(
        _ outcome: Result<T, any Error>?, naming file: URL, _ name: String, line: UInt = #line
    ) {
        guard let outcome else { return XCTFail("\(name): did not come back: it was reading the pipe", line: line) }
        guard case .failure(let error) = outcome else { return XCTFail("\(name): succeeded", line: line) }
        XCTAssertEqual((error as? ConnectError)?.kind, .fileAccess, "\(name): \(error)", line: line)
        XCTAssertTrue((error as? ConnectError)?.message.contains(file.path) == true, "\(name): \(error)", line: line)
    }

    func testAMultipartPipeIsRefusedWithoutWaitingOnIt() throws {
        let pipe = try fifo()
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let outcome = outcome(unblocking: pipe) {
            try connect.upload(files: [File(key: "f", fileURL: pipe)], to: Upload()).wait(timeout: 10)
        }
        assertFileAccess(outcome, naming: pipe, "multipart")
        XCTAssertTrue(transport.requests.isEmpty)
    }

    func testAnEngineRefusesAPipeOrARemovedBodyFile() throws {
        let server = try LocalServer.started()
        addTeardownBlock { server.stop() }
        server.route("POST", "/upload") { request in .text("\(request.body.count)") }
        var request = URLRequest(url: server.baseURL.appendingPathComponent("upload"))
        request.httpMethod = "POST"
        request.timeoutInterval = 10

        let pipe = try fifo()
        let piped = outcome(unblocking: pipe) { [request] in
            try URLSessionTransport().send(request, transfer: TransferOptions(bodyFile: pipe)).wait(timeout: 10)
        }
        assertFileAccess(piped, naming: pipe, "pipe")

        let removed = folder.appendingPathComponent("removed.bin")
        try Data(count: 1000).write(to: removed)
        try FileManager.default.removeItem(at: removed)
        let result = Result {
            try URLSessionTransport().send(request, transfer: TransferOptions(bodyFile: removed)).wait(timeout: 10)
        }
        assertFileAccess(result, naming: removed, "removed")
        XCTAssertEqual(server.requests.count, 0)
    }
}
