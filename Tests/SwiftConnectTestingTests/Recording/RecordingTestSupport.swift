import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An endpoint of any server, for the recording tests.
struct RecordingEndpoint: Connector {
    var baseURL: URL
    var endpoint: String
    var method: HTTPMethod = .get
    var headers: [HTTPHeader] = []
    var parameters: (any ParametersRepresentable)?
}

/// A folder of its own for each test's recordings, removed when the test ends.
func makeRecordingFolder(for testCase: XCTestCase) throws -> URL {
    let folder = FileManager.default.temporaryDirectory
        .appendingPathComponent("RecordingTests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    testCase.addTeardownBlock { try? FileManager.default.removeItem(at: folder) }
    return folder
}

/// The failure of `future`, or a test failure when it succeeds.
func failure<Value: Sendable>(
    of future: Future<Value>, file: StaticString = #filePath, line: UInt = #line
) throws -> ConnectError {
    switch try future.waitForResult(timeout: 20) {
    case .success:
        XCTFail("expected a failure", file: file, line: line)
        throw CancellationError()
    case .failure(let error):
        return try XCTUnwrap(error as? ConnectError, "\(error)", file: file, line: line)
    }
}

/// The ``RecordingError`` a request failed with.
func recordingError(of error: ConnectError, file: StaticString = #filePath, line: UInt = #line) throws
    -> RecordingError
{
    XCTAssertEqual(error.kind, .transport, file: file, line: line)
    return try XCTUnwrap(error.underlyingError as? RecordingError, "\(error)", file: file, line: line)
}

/// A request to `path` of `base`, in the core's model, for tests that call the transport directly.
func connectRequest(
    _ method: HTTPMethod = .get, _ url: String, headers: HeaderFields = [:], body: Data? = nil
) throws -> ConnectRequest {
    ConnectRequest(
        method: method, url: try XCTUnwrap(URL(string: url)), headerFields: headers,
        body: body.map(ConnectRequest.Body.bytes) ?? ConnectRequest.Body.none)
}
