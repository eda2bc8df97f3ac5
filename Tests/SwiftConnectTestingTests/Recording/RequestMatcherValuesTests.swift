import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// JSON bodies match whatever their key order, but only with the same values: a number, a boolean, a string each
/// matches itself alone.
final class RequestMatcherValuesTests: XCTestCase {
    private var folder: URL!
    private let json: HeaderFields = [.contentType: "application/json"]

    override func setUpWithError() throws {
        folder = try makeRecordingFolder(for: self)
    }

    /// Whether a recording of a POST of `recorded` answers a POST of `sent`.
    private func matches(_ recorded: String, _ sent: String, file: StaticString = #filePath, line: UInt = #line) throws
        -> Bool
    {
        let url = folder.appendingPathComponent("\(UUID().uuidString).har")
        let recorder = RecordingTransport(
            fileURL: url, wrapping: FakeTransport.answering(.json(string: "{}")), mode: .record)
        let request = { (body: String) in
            try connectRequest(.post, "http://api.test/items", headers: self.json, body: Data(body.utf8))
        }
        _ = try recorder.send(request(recorded), transfer: .init()).wait()
        let replay = RecordingTransport(fileURL: url, mode: .replay)
        switch try replay.send(request(sent), transfer: .init()).waitForResult(timeout: 20) {
        case .success: return true
        case .failure(let error):
            let recording = try XCTUnwrap(
                (error as? ConnectError)?.underlyingError as? RecordingError, file: file, line: line)
            XCTAssertEqual(recording.reason, .noMatch, file: file, line: line)
            return false
        }
    }

    func testIntegersBeyondWhatADoubleHoldsMatchOnlyThemselves() throws {
        XCTAssertTrue(try matches(#"{"id":123456789012345678901234567890}"#, #"{"id":123456789012345678901234567890}"#))
        XCTAssertFalse(
            try matches(#"{"id":123456789012345678901234567890}"#, #"{"id":123456789012345678901234567891}"#))
        XCTAssertFalse(try matches(#"{"id":18446744073709551615}"#, #"{"id":18446744073709551614}"#))
        XCTAssertFalse(try matches(#"{"id":9007199254740993}"#, #"{"id":9007199254740992}"#))
    }

    func testABooleanDoesNotMatchANumberNorAStringItsText() throws {
        XCTAssertFalse(try matches(#"{"on":true}"#, #"{"on":1}"#))
        XCTAssertFalse(try matches(#"{"on":1}"#, #"{"on":"1"}"#))
        XCTAssertFalse(try matches(#"{"on":false}"#, #"{"on":0}"#))
    }

    func testDecimalsMatchOnlyTheSameValue() throws {
        XCTAssertTrue(try matches(#"{"p":0.1}"#, #"{"p": 0.1}"#))
        XCTAssertFalse(try matches(#"{"p":0.1}"#, #"{"p":0.2}"#))
    }
}
