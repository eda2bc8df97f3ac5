import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A download recorded: the caller's file is written once, when the exchange is in the recording, and the recording
/// holds the body the wrapped transport received, not what the destination held when it was read back.
final class RecordingDownloadFileTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeRecordingFolder(for: self)
    }

    /// The names in the folder, hidden ones included: a download's temporary file left behind shows here.
    private func names(in folder: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    }

    /// When the recording cannot be written, the call fails with the recorder's typed error and the caller's file
    /// stays as it was: it was replaced before, although the call said it failed.
    func testARecordedDownloadWhoseRecordingCannotBeWrittenLeavesTheDestinationAsItWas() throws {
        // Given: a recording file whose folder cannot be made (a file holds its name), and a destination in place
        let blocker = folder.appendingPathComponent("blocker")
        try Data("a file".utf8).write(to: blocker)
        let upstream = FakeTransport.answering(.data(Data("new report".utf8)))
        let recorder = RecordingTransport(
            fileURL: blocker.appendingPathComponent("exchange.har"), wrapping: upstream, mode: .record)
        let downloads = folder.appendingPathComponent("downloads", isDirectory: true)
        try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
        let destination = downloads.appendingPathComponent("report.bin")
        try Data("old report".utf8).write(to: destination)
        // When
        let error = try failure(
            of: recorder.send(
                try connectRequest(.get, "http://api.test/report"), transfer: TransferOptions(destination: destination))
        )
        // Then: the recorder's error, the old file, nothing left beside it
        XCTAssertEqual(try recordingError(of: error).reason, .writeFailed)
        XCTAssertEqual(String(decoding: try Data(contentsOf: destination), as: UTF8.self), "old report")
        XCTAssertEqual(try names(in: downloads), ["report.bin"])
    }

    /// A recorded download is written to its destination and to the recording, its last progress report coming once
    /// the file is in place, and no temporary file is left.
    func testARecordedDownloadIsInItsFileAndInTheRecordingWithNothingLeftBeside() throws {
        // Given
        let body = Data((0...255).map { UInt8($0) })
        let upstream = FakeTransport.answering(.data(body))
        let recorder = RecordingTransport(
            fileURL: folder.appendingPathComponent("exchange.har"), wrapping: upstream, mode: .record)
        let downloads = folder.appendingPathComponent("downloads", isDirectory: true)
        try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
        let destination = downloads.appendingPathComponent("report.bin")
        try Data("old report".utf8).write(to: destination)
        let seen = Protected<[Data?]>([])
        let transfer = TransferOptions(
            destination: destination,
            progress: { progress in
                guard progress.totalBytesToReceive != nil else { return }
                seen.withLock { $0.append(try? Data(contentsOf: destination)) }
            })
        // When
        let response = try recorder.send(try connectRequest(.get, "http://api.test/report"), transfer: transfer).wait()
        // Then
        XCTAssertEqual(response.fileURL, destination)
        XCTAssertEqual(response.data, Data())
        XCTAssertEqual(try Data(contentsOf: destination), body)
        XCTAssertEqual(try HAR(contentsOf: recorder.fileURL).log.entries.first?.response.content.data, body)
        XCTAssertEqual(seen.snapshot, [body])
        XCTAssertEqual(try names(in: downloads), ["report.bin"])
    }

    /// A download answered with an error status writes no file, and its progress still ends with the one report of
    /// the whole answer, as it does live.
    func testARecordedDownloadAnsweredWithAnErrorStillReportsItsEnd() throws {
        // Given
        let upstream = FakeTransport.answering(.data(Data("missing".utf8), status: 404))
        let recorder = RecordingTransport(
            fileURL: folder.appendingPathComponent("exchange.har"), wrapping: upstream, mode: .record)
        let destination = folder.appendingPathComponent("report.bin")
        let reports = Protected<[TransferProgress]>([])
        let transfer = TransferOptions(
            destination: destination, progress: { progress in reports.withLock { $0.append(progress) } })
        // When
        let response = try recorder.send(try connectRequest(.get, "http://api.test/report"), transfer: transfer)
            .wait()
        // Then
        XCTAssertEqual(response.statusCode, 404)
        XCTAssertEqual(reports.snapshot.map(\.bytesReceived), [7])
        XCTAssertEqual(reports.snapshot.map(\.totalBytesToReceive), [7])
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path))
    }

    /// Replayed with its recorded time, a download reaches its file when the answer comes, as live: a call stopped
    /// before then (its deadline, the test) leaves the destination as it was. It was written at once.
    func testADownloadReplayedWithItsLatencyIsWrittenOnlyWhenTheAnswerComes() throws {
        // Given: a download recorded as taking a minute
        let fileURL = folder.appendingPathComponent("exchange.har")
        let request = try connectRequest(.get, "http://api.test/report")
        let entry = HAR.Entry(
            startedDateTime: "2024-05-01T10:00:00.000Z",
            request: HAR.Request(
                method: "GET", url: "http://api.test/report", headers: [], queryString: [], postData: nil),
            response: HAR.Response(status: 200, headers: [], content: HAR.Content(Data("new".utf8), mimeType: "")),
            timings: HAR.Timings(send: 0, wait: 60_000, receive: 0))
        try HAR(entries: [entry]).encoded().write(to: fileURL)
        let destination = folder.appendingPathComponent("report.bin")
        try Data("old".utf8).write(to: destination)
        let replayer = RecordingTransport(fileURL: fileURL, mode: .replay, replaysLatencies: true)
        // When: stopped before the answer comes
        let future = replayer.send(request, transfer: TransferOptions(destination: destination))
        future.cancel()
        // Then
        XCTAssertEqual(try failure(of: future).kind, .cancelled)
        XCTAssertEqual(String(decoding: try Data(contentsOf: destination), as: UTF8.self), "old")
    }

    /// A destination no engine can write (a directory) is the caller's mistake, found before anything is sent: it
    /// is not recorded as the exchange's failure, which would replay for ever, nor does it use up a recording.
    func testADownloadIntoADirectoryIsRefusedWithoutTouchingTheRecording() throws {
        // Given: a recording of the request, and one more try of it to record
        let fileURL = folder.appendingPathComponent("exchange.har")
        let request = try connectRequest(.get, "http://api.test/report")
        let upstream = FakeTransport.answering(.data(Data("report".utf8)))
        let recorder = RecordingTransport(fileURL: fileURL, wrapping: upstream, mode: .recordMissing)
        // When: recorded into a directory
        let recording = try failure(of: recorder.send(request, transfer: TransferOptions(destination: folder)))
        // Then: refused, nothing sent or recorded
        XCTAssertEqual(recording.kind, .fileAccess)
        XCTAssertEqual(upstream.requests.count, 0)
        XCTAssertEqual(recorder.entries.count, 0)
        // When: recorded properly, then replayed into a directory
        _ = try recorder.send(request, transfer: TransferOptions()).wait()
        let replayer = RecordingTransport(fileURL: fileURL, mode: .replay)
        let replaying = try failure(of: replayer.send(request, transfer: TransferOptions(destination: folder)))
        // Then: refused as live, the recording left for the next request
        XCTAssertEqual(replaying.kind, .fileAccess)
        XCTAssertEqual(replayer.unusedEntries.count, 1)
    }

    /// Through a real engine to a real server: the engine's reports pass, its last once the file is in place.
    func testARecordedDownloadThroughAnEngineReportsItsEndOnceTheFileIsInPlace() throws {
        // Given
        let server = try LocalServer.started()
        defer { server.stop() }
        let body = LocalServer.generatedBytes(count: 300_000, seed: 3)
        server.route("GET", "/report") { _ in .data(body) }
        let recorder = RecordingTransport(
            fileURL: folder.appendingPathComponent("exchange.har"), wrapping: URLSessionTransport(), mode: .record)
        let downloads = folder.appendingPathComponent("downloads", isDirectory: true)
        try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
        let destination = downloads.appendingPathComponent("report.bin")
        let ends = Protected<[Data?]>([])
        let transfer = TransferOptions(
            destination: destination,
            progress: { progress in
                guard progress.totalBytesToReceive == progress.bytesReceived else { return }
                ends.withLock { $0.append(try? Data(contentsOf: destination)) }
            })
        // When
        let request = try connectRequest(.get, "\(server.baseURL.absoluteString)/report")
        let response = try recorder.send(request, transfer: transfer).wait()
        // Then
        XCTAssertEqual(response.fileURL, destination)
        XCTAssertEqual(try Data(contentsOf: destination), body)
        XCTAssertEqual(ends.snapshot, [body])
        XCTAssertEqual(try names(in: downloads), ["report.bin"])
    }
}
