import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// A download the call's deadline or an attempt's timeout stops part-way: what it keeps, and what a retry asks for,
/// on every engine (the core's exchange salvages the part from its cancel handler).
final class DownloadDeadlineTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("deadline-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: folder)
    }

    /// A download stopped by the call's deadline after part of its body arrived hands that part over with the
    /// timeout, as URLSession's timeout gives resume data; nothing is left beside the destination.
    func testADownloadStoppedByItsDeadlineHandsOverItsPart() throws {
        let (server, connect) = try trickling()
        defer { server.stop() }
        let destination = folder.appendingPathComponent("slow.bin")
        let before = try partials()
        let result = try connect.download(Route("/slow"), to: destination, options: RequestOptions(timeout: 2))
            .waitForResult(timeout: 30)
        guard case .failure(let failure as ConnectError) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(failure.kind, .timedOut, "\(failure)")
        let part = try XCTUnwrap(failure.partialDownload, "\(failure)")
        defer { part.discard() }
        XCTAssertGreaterThan(part.bytesReceived, 0)
        XCTAssertEqual(try Data(contentsOf: part.fileURL), Data(repeating: 1, count: Int(part.bytesReceived)))
        XCTAssertEqual(try partials().subtracting(before), [part.fileURL.lastPathComponent])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
    }

    /// A download cancelled after part of its body arrived keeps nothing: nobody hears of a part, and none is left.
    func testADownloadCancelledMidBodyLeavesNoPart() throws {
        let (server, connect) = try trickling()
        defer { server.stop() }
        let destination = folder.appendingPathComponent("slow.bin")
        let before = try partials()
        let arrived = DispatchSemaphore(value: 0)
        let options = RequestOptions(progress: { if $0.bytesReceived > 0 { arrived.signal() } })
        let call = connect.download(Route("/slow"), to: destination, options: options)
        XCTAssertEqual(arrived.wait(timeout: .now() + 30), .success, "no byte arrived")
        call.cancel()
        XCTAssertThrowsError(try call.wait(timeout: 30))
        XCTAssertEqual(try partials().subtracting(before), [])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
    }

    /// An attempt stopped by its own timeout (``RetryPolicy/attemptTimeout``) keeps its part for the retry, which asks
    /// for the rest; when that one times out too, its part, holding every byte so far, is handed over alone.
    func testARetryAfterAnAttemptsTimeoutResumesFromItsPart() throws {
        let (server, _) = try trickling()
        defer { server.stop() }
        let connect = Connect(
            transport: TransportUnderTest.make(),
            retryPolicy: RetryPolicy(maxAttempts: 2, baseDelay: 0, attemptTimeout: 2),
            configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: server.port))
        let destination = folder.appendingPathComponent("slow.bin")
        let before = try partials()
        let result = try connect.download(Route("/slow"), to: destination, options: RequestOptions(timeout: 30))
            .waitForResult(timeout: 60)
        guard case .failure(let failure as ConnectError) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(failure.kind, .timedOut, "\(failure)")
        let ranges = server.requests.map { $0.header("Range") }
        XCTAssertEqual(ranges.count, 2, "\(ranges)")
        XCTAssertNil(ranges.first ?? nil)
        let resumedFrom = try XCTUnwrap(ranges.last.flatMap { $0 }.flatMap { Int64($0.dropFirst(6).dropLast()) })
        XCTAssertGreaterThan(resumedFrom, 0)
        XCTAssertEqual(server.requests.last?.header("If-Range"), "\"slow\"")
        // This server ignores ranges: the second attempt's part is its own 200's start.
        let part = try XCTUnwrap(failure.partialDownload, "\(failure)")
        defer { part.discard() }
        XCTAssertEqual(try partials().subtracting(before), [part.fileURL.lastPathComponent], "the older part is gone")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
    }

    /// A server whose `/slow` sends a byte-1 body, with an `ETag`, a KiB every 50 ms, and a client of it.
    private func trickling() throws -> (LocalServer, Connect) {
        let server = try LocalServer.started()
        server.route("GET", "/slow") { _ in
            LocalServer.Response(
                headers: [("ETag", "\"slow\"")],
                fault: .trickle(chunk: Data(repeating: 1, count: 1000), interval: 0.05))
        }
        let connect = Connect(
            transport: TransportUnderTest.make(), retryPolicy: nil,
            configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: server.port))
        return (server, connect)
    }

    /// Our parts in the temporary directory.
    private func partials() throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: FileManager.default.temporaryDirectory.path)).filter {
            $0.hasPrefix("SwiftConnect-partial-")
        }
    }
}
