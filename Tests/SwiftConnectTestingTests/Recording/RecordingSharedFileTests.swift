import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Two transports recording to one file at the same time (two clients of a test, or two tests given one name) lose
/// no exchange: each write keeps what the other wrote.
final class RecordingSharedFileTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeRecordingFolder(for: self)
    }

    func testTwoTransportsRecordingOneFileKeepEveryExchange() throws {
        // Given: a recording of an earlier run (copied in: no transport of this run wrote it), and two transports
        // re-recording the file at once
        let file = folder.appendingPathComponent("shared.har")
        let earlier = folder.appendingPathComponent("earlier.har")
        let old = RecordingTransport(
            fileURL: earlier, wrapping: FakeTransport.answering(.json(string: #"{"old":true}"#)), mode: .record)
        _ = try old.send(connectRequest(.get, "http://api.test/old"), transfer: .init()).wait()
        try FileManager.default.copyItem(at: earlier, to: file)
        let first = RecordingTransport(
            fileURL: file, wrapping: FakeTransport.answering(.json(string: #"{"n":1}"#)), mode: .record)
        let second = RecordingTransport(
            fileURL: file, wrapping: FakeTransport.answering(.json(string: #"{"n":2}"#)), mode: .record)
        // When: they take turns
        _ = try first.send(connectRequest(.get, "http://api.test/a"), transfer: .init()).wait()
        _ = try second.send(connectRequest(.get, "http://api.test/b"), transfer: .init()).wait()
        _ = try first.send(connectRequest(.get, "http://api.test/c"), transfer: .init()).wait()
        // Then: the file holds this run's three exchanges, in order, and not the old one
        let urls = try HAR(contentsOf: file).log.entries.map(\.request.url)
        XCTAssertEqual(urls, ["http://api.test/a", "http://api.test/b", "http://api.test/c"])
    }

    /// The second client of a test, made after the first has recorded, adds to what it recorded: the file is this
    /// run's, not an earlier one to replace.
    func testATransportMadeAfterAnotherRecordedTheFileAddsToIt() throws {
        let file = folder.appendingPathComponent("after.har")
        let first = RecordingTransport(
            fileURL: file, wrapping: FakeTransport.answering(.json(string: #"{"n":1}"#)), mode: .record)
        _ = try first.send(connectRequest(.get, "http://api.test/a"), transfer: .init()).wait()
        let second = RecordingTransport(
            fileURL: file, wrapping: FakeTransport.answering(.json(string: #"{"n":2}"#)), mode: .record)
        _ = try second.send(connectRequest(.get, "http://api.test/b"), transfer: .init()).wait()
        _ = try first.send(connectRequest(.get, "http://api.test/c"), transfer: .init()).wait()
        let urls = try HAR(contentsOf: file).log.entries.map(\.request.url)
        XCTAssertEqual(urls, ["http://api.test/a", "http://api.test/b", "http://api.test/c"])
    }

    func testARecordMissingTransportKeepsWhatAnotherRecordedMeanwhile() throws {
        // Given: a recording of /a, and two transports that add to it
        let file = folder.appendingPathComponent("missing.har")
        let seed = RecordingTransport(
            fileURL: file, wrapping: FakeTransport.answering(.json(string: "{}")), mode: .record)
        _ = try seed.send(connectRequest(.get, "http://api.test/a"), transfer: .init()).wait()
        let first = RecordingTransport(
            fileURL: file, wrapping: FakeTransport.answering(.json(string: "{}")), mode: .recordMissing)
        let second = RecordingTransport(
            fileURL: file, wrapping: FakeTransport.answering(.json(string: "{}")), mode: .recordMissing)
        // When
        _ = try first.send(connectRequest(.get, "http://api.test/b"), transfer: .init()).wait()
        _ = try second.send(connectRequest(.get, "http://api.test/c"), transfer: .init()).wait()
        // Then
        let urls = try HAR(contentsOf: file).log.entries.map(\.request.url)
        XCTAssertEqual(urls, ["http://api.test/a", "http://api.test/b", "http://api.test/c"])
    }

    func testManyTransportsRecordingOneFileAtOnceKeepEveryExchange() throws {
        // Given: eight transports recording one file, each sending at once
        let file = folder.appendingPathComponent("many.har")
        let transports = (0..<8).map { index in
            RecordingTransport(
                fileURL: file, wrapping: FakeTransport.answering(.json(string: #"{"n":\#(index)}"#)), mode: .record)
        }
        // When
        let futures = transports.enumerated().map { index, transport in
            (try? connectRequest(.get, "http://api.test/\(index)")).map { transport.send($0, transfer: .init()) }
        }
        for future in futures { _ = try XCTUnwrap(future).wait() }
        // Then
        let urls = Set(try HAR(contentsOf: file).log.entries.map(\.request.url))
        XCTAssertEqual(urls, Set((0..<8).map { "http://api.test/\($0)" }))
    }
}
