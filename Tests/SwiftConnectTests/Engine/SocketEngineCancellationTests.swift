import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Cancellation through the in-process ``SocketEngine`` (the conformance tests' engine), whose socket the server
/// watches: a Task's cancellation of `await` and `Future.cancel()` both reach the engine, and the files a call made
/// go with it.
final class SocketEngineCancellationTests: XCTestCase {
    /// Notes the body file each request is sent from.
    private struct FileNoting: Transport {
        let base: any Transport
        let files: Recorder<URL>
        func send(_ request: URLRequest) -> Future<ConnectResponse> { base.send(request) }
        func send(_ request: URLRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
            if let file = transfer.bodyFile { files.append(file) }
            return base.send(request, transfer: transfer)
        }
        func send(_ request: ConnectRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
            if let file = transfer.bodyFile { files.append(file) }
            return base.send(request, transfer: transfer)
        }
    }

    private func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cancel-audit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url
    }

    /// A multipart upload of a file on disk cancelled mid-body: cancelled, the connection closed before the whole
    /// body went, and the temporary multipart file removed.
    func testAMultipartUploadCancelledMidBodyRemovesItsTemporaryFile() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        let total = 64 << 20
        let arrived = Promise<Void>()
        let cancelled = Gate()
        let read = Guarded(0)
        server.streamingRoute("POST", "/upload") { _, body in
            while let piece = body.read() {
                let count = read.withLock {
                    $0 += piece.count
                    return $0
                }
                if count >= 64 << 10, arrived.completeIfPending(with: .success(())) { cancelled.wait(timeout: 10) }
            }
            return .status(200)
        }
        let source = try folder().appendingPathComponent("big.bin")
        XCTAssertTrue(FileManager.default.createFile(atPath: source.path, contents: nil))
        let handle = try FileHandle(forWritingTo: source)
        try handle.truncate(atOffset: UInt64(total))
        try handle.close()
        let files = Recorder<URL>()
        let connect = Connect(transport: FileNoting(base: SocketEngine(), files: files), retryPolicy: nil)
        let upload = connect.upload(
            files: [File(key: "big", fileURL: source)], fields: [],
            to: Route("/upload", baseURL: server.baseURL, method: .post))
        try arrived.future.wait(timeout: 10)
        upload.cancel()
        cancelled.open()
        XCTAssertThrowsError(try upload.wait(timeout: 10)) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .cancelled, "\($0)")
        }
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the cancelled upload still holds its connection")
        XCTAssertLessThan(read.withLock { $0 }, total, "the whole body went after the cancellation")
        XCTAssertEqual(files.values.count, 1)
        for file in files.values {
            XCTAssertFalse(FileManager.default.fileExists(atPath: file.path), "the multipart file was left behind")
        }
    }

    /// A Task awaiting a download cancelled mid-body: cancelled, the connection closed, no partial file, and the
    /// destination as it was.
    func testATaskCancelledMidDownloadLeavesTheDestinationAndNoPartialFile() async throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/endless") { _ in
            .stream(contentLength: nil) { write in
                while write(Data(count: 16 << 10)) {}
            }
        }
        let folder = try folder()
        let destination = folder.appendingPathComponent("report.bin")
        try Data("old".utf8).write(to: destination)
        let received = Promise<Void>()
        let connect = Connect(transport: SocketEngine(), retryPolicy: nil)
        let task = Task {
            try await connect.download(
                Route("/endless", baseURL: server.baseURL), to: destination,
                options: RequestOptions(progress: { if $0.bytesReceived > 0 { _ = received.succeed(()) } })
            ).value
        }
        try await received.future.value(timeout: 10)
        task.cancel()
        let result = await task.result
        XCTAssertThrowsError(try result.get()) { XCTAssertEqual(($0 as? ConnectError)?.kind, .cancelled, "\($0)") }
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the server still streams to a cancelled download")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["report.bin"])
        XCTAssertEqual(try Data(contentsOf: destination), Data("old".utf8))
    }

    /// A Task reading a ``ResponseStream`` cancelled mid-stream: the loop ends cancelled and the connection closes.
    func testATaskReadingAStreamCancelledMidStreamClosesTheConnection() async throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/endless") { _ in
            .stream(contentLength: nil) { write in
                while write(Data(count: 16 << 10)) {}
            }
        }
        let received = Promise<Void>()
        let connect = Connect(transport: SocketEngine(), retryPolicy: nil)
        let request = ConnectRequest(method: .get, url: server.baseURL.appendingPathComponent("endless"))
        let task = Task {
            for try await _ in connect.stream(request) { _ = received.completeIfPending(with: .success(())) }
        }
        try await received.future.value(timeout: 10)
        task.cancel()
        let result = await task.result
        XCTAssertThrowsError(try result.get()) { XCTAssertEqual(($0 as? ConnectError)?.kind, .cancelled, "\($0)") }
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the server still streams to a cancelled reader")
        XCTAssertEqual(connect.requestsInFlight, 0)
    }

    /// `Future.cancel()` of a plain call whose head has not come: cancelled, and the engine's socket closed.
    func testCancellingBeforeTheHeadClosesTheSocket() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        let arrived = Promise<Void>()
        server.route("GET", "/slow") { _ in
            _ = arrived.succeed(())
            return LocalServer.Response.text("late").delayed(by: 60)
        }
        let connect = Connect(transport: SocketEngine(), retryPolicy: nil)
        let call = connect.request(Route("/slow", baseURL: server.baseURL))
        try arrived.future.wait(timeout: 10)
        call.cancel()
        XCTAssertThrowsError(try call.wait(timeout: 10)) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .cancelled, "\($0)")
        }
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the cancelled call still holds its connection")
    }
}
