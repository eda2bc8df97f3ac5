import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `RequestOptions.idleTimeout` on a real engine against a local server (URLSession here; the AsyncHTTPClient package
/// runs this file over its engine): a body that stalls, or a head that never comes, fails the attempt with `.timedOut`
/// naming `idleTimeout`, long before the call's deadline; a body whose pieces keep coming is read whole; a download
/// honours it and leaves no file. Stalls are held on semaphores the test releases at its end, never on sleeps.
final class IdleTimeoutIntegrationTests: XCTestCase {
    private var server: LocalServer!
    /// Holds the stalling routes until the test ends.
    private let stall = DispatchSemaphore(value: 0)
    private var stalls = 0

    override func setUpWithError() throws {
        server = try LocalServer.started()
    }

    override func tearDown() {
        for _ in 0..<stalls { stall.signal() }
        server.stop()
    }

    /// A route that sends the first 5 of its 10 bytes, then waits for the test's release before the rest.
    private func routeThatStalls(_ path: String) {
        stalls += 1
        let stall = self.stall
        server.route("GET", path) { _ in
            .stream(contentLength: 10) { write in
                guard write(Data("first".utf8)) else { return }
                stall.wait()
                _ = write(Data("later".utf8))
            }
        }
    }

    /// 1 s: the head of an answer that comes at once arrives well within it on a busy machine (under a sanitizer),
    /// so the stall, not the head's wait, is what it ends.
    private var options: RequestOptions { RequestOptions(idleTimeout: 1) }

    /// A body that stalls mid-way fails with `.timedOut` and the idle timeout's words, not at the 60 s deadline.
    func testABodyThatStallsFailsWithTheIdleTimeout() {
        routeThatStalls("/stall")
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        let error = connectError(
            of: connect.response(for: Route("/stall", baseURL: server.baseURL, timeout: 60), options: options))
        XCTAssertEqual(error?.kind, .timedOut, "\(String(describing: error))")
        let message = error?.message ?? ""
        XCTAssertTrue(message.contains("RequestOptions.idleTimeout"), message)
        XCTAssertTrue(message.contains("received no bytes for 1.0 s"), message)
        XCTAssertEqual(error?.request?.url?.path, "/stall")
    }

    /// A server that takes the request and never sends its head fails with the head's wording, and the exchange is
    /// stopped: the server sees the client leave.
    func testAHeadThatNeverComesFailsWithTheIdleTimeout() {
        server.route("GET", "/silent") { _ in LocalServer.Response.status(200).withFault(.neverFinishHeaders) }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        let error = connectError(
            of: connect.response(for: Route("/silent", baseURL: server.baseURL, timeout: 60), options: options))
        XCTAssertEqual(error?.kind, .timedOut, "\(String(describing: error))")
        let message = error?.message ?? ""
        XCTAssertTrue(message.contains("no response head within 1.0 s"), message)
        XCTAssertTrue(message.contains("RequestOptions.idleTimeout"), message)
        XCTAssertTrue(server.waitUntilIdle(timeout: 30), "the exchange was not stopped")
    }

    /// A streamed call whose `StreamingOptions` set no idle timeout takes the call's, the wait for its head included;
    /// its error names both settings, the call's among them.
    func testAStreamTakesTheCallsIdleTimeout() {
        server.route("GET", "/silent-stream") { _ in LocalServer.Response.status(200).withFault(.neverFinishHeaders) }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        let stream = connect.stream(Route("/silent-stream", baseURL: server.baseURL, timeout: 60), options: options)
        let error = connectError(of: stream.head)
        XCTAssertEqual(error?.kind, .timedOut, "\(String(describing: error))")
        let message = error?.message ?? ""
        XCTAssertTrue(message.contains("no response head within 1.0 s"), message)
        XCTAssertTrue(message.contains("RequestOptions.idleTimeout"), message)
        XCTAssertTrue(server.waitUntilIdle(timeout: 30), "the exchange was not stopped")
    }

    /// A body of four pieces, each sent only once the client has received the one before, is read whole under an
    /// idle timeout: the watch lets pieces that keep coming through.
    func testABodyWhosePiecesKeepComingSucceeds() {
        let pieces = (0..<4).map { Data("piece \($0);".utf8) }
        let received = DispatchSemaphore(value: 0)
        server.route("GET", "/steady") { _ in
            .stream(contentLength: nil) { write in
                for (index, piece) in pieces.enumerated() {
                    guard write(piece) else { return }
                    // The next piece goes once the client has this one (the progress report below says so).
                    if index < pieces.count - 1 {
                        guard received.wait(timeout: .now() + 30) == .success else { return }
                    }
                }
            }
        }
        let counted = Guarded(0)
        var options = RequestOptions(idleTimeout: 5)
        options.progress = { progress in
            let boundaries = pieces.indices.map { pieces[...$0].reduce(0) { $0 + $1.count } }
            let reached = boundaries.filter { Int64($0) <= progress.bytesReceived }.count
            let newly = counted.withLock { count -> Int in
                defer { count = max(count, reached) }
                return max(0, reached - count)
            }
            for _ in 0..<newly { received.signal() }
        }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        let response = value(
            of: connect.response(for: Route("/steady", baseURL: server.baseURL, timeout: 60), options: options))
        XCTAssertEqual(response?.data, pieces.reduce(Data(), +))
    }

    /// A download honours it: the stalled transfer fails with the idle timeout, and nothing is left at the
    /// destination.
    func testADownloadThatStallsFailsWithTheIdleTimeout() throws {
        routeThatStalls("/file")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file.bin")
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        let error = connectError(
            of: connect.download(
                Route("/file", baseURL: server.baseURL, timeout: 60), to: destination, options: options))
        XCTAssertEqual(error?.kind, .timedOut, "\(String(describing: error))")
        XCTAssertTrue(error?.message.contains("RequestOptions.idleTimeout") == true, "\(String(describing: error))")
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [], "no partial file is left")
    }

    /// A download whose connection stalls after part of a body with a validator keeps that part
    /// (`ConnectError.partialDownload`), and a resume fetches only the rest: the case an idle timeout and a resume
    /// are made for together.
    func testADownloadThatStallsAfterAValidatorKeepsItsPartForAResume() throws {
        stalls += 1
        let stall = self.stall
        server.route("GET", "/tagged") { request in
            if request.header("Range") == "bytes=5-", request.header("If-Range") == "\"v1\"" {
                return LocalServer.Response(
                    status: 206, headers: [("ETag", "\"v1\""), ("Content-Range", "bytes 5-9/10")],
                    body: Data("later".utf8))
            }
            var response = LocalServer.Response.stream(contentLength: 10) { write in
                guard write(Data("first".utf8)) else { return }
                stall.wait()
            }
            response.headers.append(("ETag", "\"v1\""))
            return response
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file.bin")
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        let route = Route("/tagged", baseURL: server.baseURL, timeout: 60)

        let error = connectError(of: connect.download(route, to: destination, options: options))
        XCTAssertEqual(error?.kind, .timedOut, "\(String(describing: error))")
        let partial = try XCTUnwrap(error?.partialDownload, "\(String(describing: error))")
        defer { partial.discard() }
        XCTAssertEqual(partial.bytesReceived, 5)

        let file = try connect.download(route, to: destination, resuming: partial).wait(timeout: 30)
        XCTAssertEqual(try Data(contentsOf: file), Data("firstlater".utf8))
    }
}
