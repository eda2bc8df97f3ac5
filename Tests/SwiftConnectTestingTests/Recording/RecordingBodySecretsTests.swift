import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Secrets in bodies that are not plain UTF-8 text: a multipart upload with a binary file part, a Latin-1 answer.
final class RecordingBodySecretsTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeRecordingFolder(for: self)
    }

    /// The bytes of a small binary file part: not UTF-8 (0xFF, 0xFE), with a NUL.
    private let binaryPart: [UInt8] = [0x89, 0x50, 0xFF, 0xFE, 0x00]

    /// A multipart upload with a `password` field and a binary file part, boundary `XyZ`.
    private func upload(password: String) -> Data {
        var body = Data(
            ("--XyZ\r\nContent-Disposition: form-data; name=\"password\"\r\n\r\n\(password)\r\n"
                + "--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.png\"\r\n\r\n").utf8)
        body.append(contentsOf: binaryPart)
        body.append(Data("\r\n--XyZ--\r\n".utf8))
        return body
    }

    private func multipartRequest(password: String) throws -> ConnectRequest {
        try connectRequest(
            .post, "http://api.test/upload", headers: [.contentType: "multipart/form-data; boundary=XyZ"],
            body: upload(password: password))
    }

    func testAPasswordBesideABinaryFilePartIsHiddenAndTheFileKeptAsItIs() throws {
        // Given: an upload whose body is not UTF-8 as a whole
        let file = folder.appendingPathComponent("upload.har")
        let recorder = RecordingTransport(fileURL: file, wrapping: FakeTransport.answering(.status(200)), mode: .record)
        // When
        _ = try recorder.send(multipartRequest(password: "tok-PASSWORD-xyz789"), transfer: TransferOptions()).wait()
        // Then: the password is in no form in the file; the file part's bytes are
        let har = try HAR(contentsOf: file)
        let recorded = try XCTUnwrap(har.log.entries.first?.request.postData?.data)
        XCTAssertNil(recorded.range(of: Data("tok-PASSWORD-xyz789".utf8)), "the password is in the recorded body")
        XCTAssertNotNil(recorded.range(of: Data("\r\n\r\n<redacted>\r\n".utf8)), "the field's value is a placeholder")
        XCTAssertNotNil(recorded.range(of: Data(binaryPart)), "the file part's bytes are kept")
        XCTAssertTrue(recorded.starts(with: Data("--XyZ\r\n".utf8)))
        XCTAssertFalse(try String(contentsOf: file, encoding: .utf8).contains("tok-PASSWORD-xyz789"))
        // When: replayed with another password, as on a machine with other credentials
        let replay = RecordingTransport(fileURL: file, mode: .replay)
        let replayed = try replay.send(multipartRequest(password: "tok-PASSWORD-other1"), transfer: TransferOptions())
            .wait()
        // Then: it found its recording
        XCTAssertEqual(replayed.statusCode, 200)
        XCTAssertNoThrow(try replay.verifyAllRecordingsUsed())
    }

    func testASecretEchoedInALatin1AnswerIsHiddenAndTheOtherBytesKept() throws {
        // Given: an answer in Latin-1, not UTF-8 (`é` is the single byte 0xE9), that echoes the request's key
        let answer = try XCTUnwrap("clé reçue : tok-APIKEY-445566.".data(using: .isoLatin1))
        let file = folder.appendingPathComponent("latin1.har")
        let recorder = RecordingTransport(
            fileURL: file,
            wrapping: FakeTransport.answering(
                .data(answer, headers: ["Content-Type": "text/plain; charset=iso-8859-1"])),
            mode: .record)
        let request = try connectRequest(.get, "http://api.test/key", headers: ["X-Api-Key": "tok-APIKEY-445566"])
        // When
        let live = try recorder.send(request, transfer: TransferOptions()).wait()
        // Then: the app got the echo; the file has a placeholder in its place, every other byte as it came
        XCTAssertEqual(live.data, answer)
        let har = try HAR(contentsOf: file)
        let recorded = try XCTUnwrap(har.log.entries.first?.response.content.data)
        XCTAssertEqual(recorded, "clé reçue : <redacted>.".data(using: .isoLatin1))
    }
}
