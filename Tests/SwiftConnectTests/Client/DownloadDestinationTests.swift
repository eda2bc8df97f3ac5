import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// What a download does to a file already at its destination: replaced only by a complete body of a 2xx answer, kept
/// whenever the download fails, however it fails.
final class DownloadDestinationTests: XCTestCase {
    private var server: LocalServer!
    private var connect: Connect!
    private var folder: URL!
    private var destination: URL!
    private static let old = Data("the old report".utf8)

    override func setUpWithError() throws {
        server = try LocalServer.started()
        connect = Connect(
            transport: URLSessionTransport(), retryPolicy: nil,
            configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: server.port))
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("destination-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        destination = folder.appendingPathComponent("report.bin")
        try Self.old.write(to: destination)
    }

    override func tearDown() {
        server.stop()
        try? FileManager.default.removeItem(at: folder)
    }

    /// The destination holds the old file, and nothing else is left in its folder.
    private func assertTheOldFileIsKept(_ context: String = "", file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(try Data(contentsOf: destination), Self.old, context, file: file, line: line)
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: folder.path), ["report.bin"], context, file: file,
            line: line)
    }

    /// A 204 is a success whose body is empty: the download is that empty body, in place of the old file, as
    /// Alamofire (URLSession's download task) and AsyncHTTPClient's `FileDownloadDelegate` write it. The caller
    /// asked for the answer's body at that path; a stale file there would be a wrong answer.
    func testADownloadAnsweredNoContentIsAnEmptyFile() throws {
        server.route("GET", "/report") { _ in .status(204) }
        XCTAssertEqual(try connect.download(Route("/report"), to: destination).wait(timeout: 30), destination)
        XCTAssertEqual(try Data(contentsOf: destination), Data())
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["report.bin"])
    }

    /// A 304 without a cache to answer it is no body at all: an HTTP-status error, and the old file stays.
    func testADownloadAnsweredNotModifiedWithoutACacheKeepsTheFile() throws {
        server.route("GET", "/report") { _ in .status(304) }
        XCTAssertThrowsError(try connect.download(Route("/report"), to: destination).wait(timeout: 30)) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .httpStatus, "\($0)")
            XCTAssertEqual(($0 as? ConnectError)?.statusCode, 304)
        }
        assertTheOldFileIsKept()
    }

    /// A connection that closes part-way through the body leaves the old file as it was.
    func testADownloadCutShortKeepsTheOldFile() throws {
        server.route("GET", "/report") { _ in
            LocalServer.Response(body: Data(count: 1 << 20), fault: .closeMidBody(afterBytes: 300_000))
        }
        XCTAssertThrowsError(try connect.download(Route("/report"), to: destination).wait(timeout: 30)) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .connectionLost, "\($0)")
        }
        assertTheOldFileIsKept()
    }

    /// A download cancelled part-way leaves the old file as it was.
    func testACancelledDownloadKeepsTheOldFile() throws {
        server.route("GET", "/report") { _ in
            LocalServer.Response(fault: .trickle(chunk: Data(repeating: 1, count: 1000), interval: 0.05))
        }
        let received = expectation(description: "part of the body arrived")
        received.assertForOverFulfill = false
        let download = connect.download(
            Route("/report"), to: destination,
            options: RequestOptions(progress: { if $0.bytesReceived > 0 { received.fulfill() } }))
        wait(for: [received], timeout: 10)
        download.cancel()
        XCTAssertThrowsError(try download.wait(timeout: 20)) { XCTAssertEqual(($0 as? ConnectError)?.kind, .cancelled) }
        assertTheOldFileIsKept()
    }

    /// A disk that fills up part-way (here the process's file size limit, which fails a write with EFBIG as a full
    /// disk fails it with ENOSPC) fails the download with ``ConnectError/Kind/fileAccess`` saying why, and leaves the
    /// old file as it was.
    func testADownloadThatCannotBeWrittenKeepsTheOldFile() throws {
        server.route("GET", "/report") { _ in .data(Data(count: 4 << 20)) }
        var limit = rlimit()
        XCTAssertEqual(getrlimit(Self.fileSizeLimit, &limit), 0)
        let before = limit
        limit.rlim_cur = 1 << 20
        // Over the limit, a write fails with EFBIG rather than the process being stopped by SIGXFSZ.
        let handler = signal(SIGXFSZ, SIG_IGN)
        XCTAssertEqual(setrlimit(Self.fileSizeLimit, &limit), 0)
        defer {
            var restored = before
            setrlimit(Self.fileSizeLimit, &restored)
            signal(SIGXFSZ, handler)
        }

        XCTAssertThrowsError(try connect.download(Route("/report"), to: destination).wait(timeout: 30)) {
            guard let error = $0 as? ConnectError else { return XCTFail("\($0)") }
            XCTAssertEqual(error.kind, .fileAccess, "\(error)")
            XCTAssertTrue(error.message.contains(String(cString: strerror(EFBIG))), error.message)
        }
        assertTheOldFileIsKept()
    }

    /// A folder that stops being one while the request is out (replaced by a regular file here: a folder made
    /// read-only does not stop root, which the tests run as) fails the download with ``ConnectError/Kind/fileAccess``
    /// naming the destination and carrying the answer's status and fields: the server answered, and the caller learns
    /// how (the error used to say nothing of the answer). Nothing is left beside the destination.
    func testADownloadWhoseFolderWentWhileTheRequestWasOutFailsWithTheAnswersHead() throws {
        let folder = try XCTUnwrap(folder)
        server.route("GET", "/report") { _ in
            try? FileManager.default.removeItem(at: folder)
            _ = FileManager.default.createFile(atPath: folder.path, contents: Data("not a folder".utf8))
            return LocalServer.Response(headers: [("X-Report", "7")], body: Data(count: 1000))
        }
        XCTAssertThrowsError(try connect.download(Route("/report"), to: destination).wait(timeout: 30)) {
            guard let error = $0 as? ConnectError else { return XCTFail("\($0)") }
            XCTAssertEqual(error.kind, .fileAccess, "\(error)")
            XCTAssertTrue(error.message.contains(destination.path), error.message)
            XCTAssertEqual(error.statusCode, 200)
            XCTAssertEqual(error.headers["X-Report"], "7")
        }
        XCTAssertEqual(try Data(contentsOf: folder), Data("not a folder".utf8))
    }

    /// A download redirected to an error status keeps the old file; redirected to the file, it replaces it.
    func testARedirectedDownloadReplacesTheFileOnlyWithTheFinalAnswersBody() throws {
        server.route("GET", "/moved") { _ in .redirect(to: "/missing") }
        server.route("GET", "/missing") { _ in .json(string: #"{"message":"no such report"}"#, status: 404) }
        XCTAssertThrowsError(try connect.download(Route("/moved"), to: destination).wait(timeout: 30)) {
            XCTAssertEqual(($0 as? ConnectError)?.message, "no such report")
        }
        assertTheOldFileIsKept()

        server.route("GET", "/renamed") { _ in .redirect(to: "/report") }
        server.route("GET", "/report") { _ in .data(Data("the new report".utf8)) }
        XCTAssertEqual(try connect.download(Route("/renamed"), to: destination).wait(timeout: 30), destination)
        XCTAssertEqual(try Data(contentsOf: destination), Data("the new report".utf8))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["report.bin"])
    }

    #if canImport(Glibc)
        private static let fileSizeLimit = __rlimit_resource_t(RLIMIT_FSIZE.rawValue)
    #else
        private static let fileSizeLimit = RLIMIT_FSIZE
    #endif
}
