import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A credential the wrapped transport adds itself (a `URLSessionTransport`'s configuration's `Authorization` in
/// `httpAdditionalHeaders`) is in the request the transport reports as sent: a server that echoes it cannot put it in
/// the recording.
final class RecordingSessionHeaderTests: XCTestCase {
    private var server: LocalServer!
    private var folder: URL!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        folder = try makeRecordingFolder(for: self)
        server.route("GET", "/me") { request in
            .text("token seen: " + (request.header("Authorization") ?? "none"), status: 401)
        }
    }

    override func tearDown() {
        server.stop()
        server = nil
    }

    func testACredentialTheWrappedTransportAddsIsHiddenWhereTheServerEchoesIt() throws {
        // Given
        let configuration = URLSessionTransport.defaultConfiguration
        configuration.httpAdditionalHeaders = ["Authorization": "Bearer tok-SESSION-REC-97531"]
        let file = folder.appendingPathComponent("session.har")
        let recorder = RecordingTransport(
            fileURL: file, wrapping: URLSessionTransport(configuration: configuration), mode: .record)
        let request = ConnectRequest(url: server.baseURL.appendingPathComponent("me"))
        // When
        let live = try recorder.send(request, transfer: TransferOptions()).wait(timeout: 20)
        // Then: the app got the echo; the file has no trace of the token
        XCTAssertTrue(String(decoding: live.data, as: UTF8.self).contains("tok-SESSION-REC-97531"))
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("tok-SESSION-REC-97531"), text)
    }
}
