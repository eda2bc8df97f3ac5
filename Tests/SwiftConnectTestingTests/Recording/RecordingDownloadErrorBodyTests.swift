import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A download answered with an error status keeps only the first MiB of the error page, for the error handler, and
/// says the page was cut (`TransferOptions.downloadErrorBodyLimit`): replayed, the call ends as it did live.
final class RecordingDownloadErrorBodyTests: XCTestCase {
    private var server: LocalServer!
    private var folder: URL!
    private static let limit = 1 << 20
    private static let page = Data(repeating: UInt8(ascii: "x"), count: limit + 100_000)

    override func setUpWithError() throws {
        server = try LocalServer.started()
        folder = try makeRecordingFolder(for: self)
        server.route("GET", "/report") { _ in .data(Self.page, contentType: "text/plain", status: 500) }
    }

    override func tearDown() {
        server.stop()
        server = nil
    }

    private func client(_ transport: RecordingTransport) -> Connect {
        Connect(
            transport: transport, retryPolicy: nil,
            configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: server.port))
    }

    private func recording(_ mode: RecordingMode, named name: String = "exchange") -> RecordingTransport {
        RecordingTransport(
            fileURL: folder.appendingPathComponent(name + ".har"),
            wrapping: mode == .replay ? nil : URLSessionTransport(), mode: mode)
    }

    /// The status error of a download of `/report`, with `options`.
    private func downloadError(through transport: RecordingTransport, options: RequestOptions = RequestOptions())
        throws -> ConnectError
    {
        let destination = folder.appendingPathComponent("report.bin")
        return try failure(of: client(transport).download(Route("/report"), to: destination, options: options))
    }

    func testAReplayedDownloadsCutErrorPageSaysItWasCutAsItDidLive() throws {
        // Given: a download answered with a page over the limit, recorded
        let live = try downloadError(through: recording(.record))
        XCTAssertEqual(live.kind, .httpStatus)
        XCTAssertEqual(live.body?.count, Self.limit)
        XCTAssertTrue(live.message.contains("only the first \(Self.limit) bytes"), live.message)
        server.stop()
        // When: replayed
        let replayed = try downloadError(through: recording(.replay))
        // Then: the same page, said to be cut, in the same words
        XCTAssertEqual(replayed.kind, .httpStatus)
        XCTAssertEqual(replayed.body, live.body)
        XCTAssertEqual(replayed.message, live.message)
    }

    func testADownloadReplayedFromAWholeErrorPageKeepsItsFirstMiBAsEveryTransportDoes() throws {
        // Given: the page recorded whole (a plain GET), and a download of it as it goes live
        _ = try client(recording(.record)).request(Route("/report")).waitForResult(timeout: 30)
        let live = try downloadError(through: recording(.record, named: "live"))
        server.stop()
        for (name, options) in [
            ("no limit", RequestOptions()), ("a limit above the page", RequestOptions(maxResponseBytes: 2 << 20)),
            ("a limit between the MiB and the page", RequestOptions(maxResponseBytes: Self.limit + 50_000)),
        ] {
            // When: the whole page is replayed for a download
            let replayed = try downloadError(through: recording(.replay), options: options)
            // Then: its first MiB, said to be cut, as live
            XCTAssertEqual(replayed.kind, .httpStatus, name)
            XCTAssertEqual(replayed.body?.count, Self.limit, name)
            XCTAssertEqual(replayed.message, live.message, name)
        }
    }

    func testACutPageWhoseSecretsRedactionReplacedReplaysAsCut() throws {
        // Given: a cut page that echoes the request's token, recorded with the token replaced by a placeholder (so
        // the recorded page is no longer exactly a MiB long)
        let token = "s3cr3t-token-\(UUID().uuidString)"
        server.route("GET", "/echo") { _ in
            .data(Data(token.utf8) + Self.page, contentType: "text/plain", status: 500)
        }
        let route = Route("/echo", headers: [.authorization(bearerToken: token)])
        let destination = folder.appendingPathComponent("report.bin")
        let live = try failure(of: client(recording(.record)).download(route, to: destination))
        XCTAssertTrue(live.message.contains("only the first \(Self.limit) bytes"), live.message)
        let recorded = try String(contentsOf: folder.appendingPathComponent("exchange.har"), encoding: .utf8)
        XCTAssertFalse(recorded.contains(token))
        server.stop()
        // When: replayed
        let replayed = try failure(of: client(recording(.replay)).download(route, to: destination))
        // Then: still said to be cut
        XCTAssertEqual(replayed.kind, .httpStatus)
        XCTAssertTrue(replayed.message.contains("only the first"), replayed.message)
    }
}
