import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// What is kept of a large error body on the paths where the caller asked for no body in memory: a download to a file
/// and a stream. Measured by what the error keeps (its ``ConnectError/body``), not by timing or the process's memory.
final class ErrorBodyBoundTests: XCTestCase {
    private var server: LocalServer!
    private var folder: URL!

    /// The error page's size: 64 MiB, written in pieces of 64 KiB.
    private static let pieceCount = 1 << 10
    private static let piece = Data(repeating: UInt8(ascii: "x"), count: 64 << 10)

    override func setUpWithError() throws {
        server = try LocalServer.started()
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("error-body-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (path, length) in [("/declared", Self.pieceCount * Self.piece.count), ("/chunked", nil)] {
            server.route("GET", path) { _ in
                .stream(contentLength: length, contentType: "text/html", status: 500) { write in
                    for _ in 0..<Self.pieceCount { guard write(Self.piece) else { break } }
                }
            }
        }
        server.route("GET", "/small") { _ in .json(["ok": true]) }
    }

    override func tearDown() {
        server.stop()
        try? FileManager.default.removeItem(at: folder)
    }

    private func client(retryPolicy: RetryPolicy? = nil) -> Connect {
        Connect(
            transport: URLSessionTransport(), retryPolicy: retryPolicy,
            configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: server.port))
    }

    /// A download answered 500 with a 64 MiB error page failed with `responseTooLarge`, the error handler never
    /// asked: code that tells server errors by ``ConnectError/Kind/httpStatus`` missed it. It is the status error,
    /// with the page's first MiB kept and the cut said; the file at the destination stays as it was.
    func testADownloadsLargeErrorBodyIsTheStatusErrorWithItsFirstMiB() throws {
        let connect = client()
        let destination = folder.appendingPathComponent("report.pdf")
        try Data("old report".utf8).write(to: destination)
        for path in ["/declared", "/chunked"] {
            XCTAssertThrowsError(try connect.download(Route(path), to: destination).wait(timeout: 60), path) {
                guard let error = $0 as? ConnectError else { return XCTFail("\(path): \($0)") }
                XCTAssertEqual(error.kind, .httpStatus, "\(path): \(error)")
                XCTAssertEqual(error.statusCode, 500, path)
                XCTAssertEqual(error.body?.count, 1 << 20, path)
                XCTAssertEqual(error.body?.first, UInt8(ascii: "x"), path)
                XCTAssertTrue(error.description.contains("first 1048576 bytes"), "\(path): \(error)")
            }
        }
        XCTAssertEqual(try Data(contentsOf: destination), Data("old report".utf8))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["report.pdf"])
        XCTAssertNoThrow(try connect.request(Route("/small")).wait(timeout: 30), "the client keeps working")
    }

    /// A 503 maintenance page over 1 MiB on a download was not retried by status: it failed as a body too large.
    func testADownloadsLargeErrorPageIsRetriedByItsStatus() throws {
        let attempts = Guarded(0)
        server.route("GET", "/maintenance") { _ in
            let attempt = attempts.withLock { count -> Int in
                count += 1
                return count
            }
            guard attempt == 1 else { return .data(Data("the file".utf8)) }
            return .data(Data(repeating: 0x20, count: 2 << 20), contentType: "text/html", status: 503)
        }
        let connect = client(
            retryPolicy: RetryPolicy(jitter: RetryPolicy.noJitter, clock: ImmediateRetryClock()))
        let destination = folder.appendingPathComponent("file.bin")

        XCTAssertEqual(try connect.download(Route("/maintenance"), to: destination).wait(timeout: 60), destination)

        XCTAssertEqual(try Data(contentsOf: destination), Data("the file".utf8))
        XCTAssertEqual(attempts.snapshot, 2)
    }

    /// A stream answered 500 with a 64 MiB error page: its first 64 KiB (``StreamingOptions/errorBodyLimit``) are
    /// kept, and the error says they are only the start.
    func testAStreamsLargeErrorBodyIsTheStatusErrorWithItsStart() async throws {
        let connect = client()
        for path in ["/declared", "/chunked"] {
            do {
                for try await _ in connect.stream(Route(path)) { XCTFail("\(path): a chunk of the error page") }
                XCTFail("\(path): no error")
            } catch let error as ConnectError {
                XCTAssertEqual(error.kind, .httpStatus, "\(path): \(error)")
                XCTAssertEqual(error.statusCode, 500, path)
                XCTAssertEqual(error.body?.count, 64 << 10, path)
                XCTAssertTrue(error.description.contains("first 65536 bytes"), "\(path): \(error)")
            }
        }
        let small = try await connect.request(Route("/small")).value
        XCTAssertEqual(small, Data(#"{"ok":true}"#.utf8))
    }

    /// A short error body read whole says nothing of a cut.
    func testAWholeErrorBodySaysNothingOfACut() throws {
        server.route("GET", "/missing") { _ in .text("no such file", status: 404, contentType: "text/html") }
        let destination = folder.appendingPathComponent("file.bin")
        XCTAssertThrowsError(try client().download(Route("/missing"), to: destination).wait(timeout: 30)) {
            guard let error = $0 as? ConnectError else { return XCTFail("\($0)") }
            XCTAssertEqual(error.kind, .httpStatus)
            XCTAssertEqual(error.body, Data("no such file".utf8))
            XCTAssertFalse(error.description.contains("bytes"), "\(error)")
        }
    }
}
