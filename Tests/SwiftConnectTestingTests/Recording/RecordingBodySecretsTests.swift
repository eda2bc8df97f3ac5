import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Secrets in bodies that are not plain UTF-8 text (a multipart upload with a binary file part, a Latin-1 answer) or
/// not JSON that parses (cut short, nested too deep).
final class RecordingBodySecretsTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeRecordingFolder(for: self)
    }

    /// The bytes of a small binary file part: not UTF-8 (0xFF, 0xFE), with a NUL.
    private let binaryPart: [UInt8] = [0x89, 0x50, 0xFF, 0xFE, 0x00]

    /// A multipart upload with a `password` field and a binary file part, boundary `XyZ`.
    private func upload(password: String, name: String = "password") -> Data {
        var body = Data(
            ("--XyZ\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(password)\r\n"
                + "--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.png\"\r\n\r\n").utf8)
        body.append(contentsOf: binaryPart)
        body.append(Data("\r\n--XyZ--\r\n".utf8))
        return body
    }

    private func multipartRequest(password: String, name: String = "password") throws -> ConnectRequest {
        try connectRequest(
            .post, "http://api.test/upload", headers: [.contentType: "multipart/form-data; boundary=XyZ"],
            body: upload(password: password, name: name))
    }

    /// A part named as a form's secret field is (`key`, as `upload(files:fields:)` sends a form's `key` field):
    /// hidden in the file, as in the logs.
    func testAPartNamedKeyIsHidden() throws {
        let file = folder.appendingPathComponent("key.har")
        let recorder = RecordingTransport(fileURL: file, wrapping: FakeTransport.answering(.status(200)), mode: .record)
        _ = try recorder.send(
            multipartRequest(password: "imgbb-KEY-123456", name: "key"), transfer: TransferOptions()
        ).wait()
        XCTAssertFalse(try String(contentsOf: file, encoding: .utf8).contains("imgbb-KEY-123456"))
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

    /// A form whose password holds a `;` or a `?` (neither of which `URLComponents` escapes) keeps none of it in the
    /// file: its value runs to the next `&`, as a form reader takes it.
    func testAFormPasswordWithASemicolonOrQuestionMarkIsHiddenWhole() throws {
        let file = folder.appendingPathComponent("form.har")
        let recorder = RecordingTransport(fileURL: file, wrapping: FakeTransport.answering(.status(200)), mode: .record)
        for password in ["pa;ss-Secret-42", "pa?ss-Secret-43"] {
            let request = try connectRequest(
                .post, "http://api.test/login", headers: [.contentType: "application/x-www-form-urlencoded"],
                body: Data("username=amy&password=\(password)&remember=1".utf8))
            _ = try recorder.send(request, transfer: TransferOptions()).wait()
        }
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("Secret-4"), text)
        let har = try HAR(contentsOf: file)
        let bodies = har.log.entries.compactMap { $0.request.postData?.data }.map {
            String(decoding: $0, as: UTF8.self)
        }
        XCTAssertEqual(bodies, Array(repeating: "username=amy&password=%3Credacted%3Apassword%3E&remember=1", count: 2))
    }

    /// A form body sent without a Content-Type (URLSession and libcurl add the form type only as they send it) or as
    /// `text/plain`: the file held its password, which the cURL output of the same request hides.
    func testAFormBodyWithoutAFormTypeHasItsPasswordHidden() throws {
        let file = folder.appendingPathComponent("untyped-form.har")
        let recorder = RecordingTransport(fileURL: file, wrapping: FakeTransport.answering(.status(200)), mode: .record)
        for headers: HeaderFields in [[:], [.contentType: "text/plain"]] {
            let request = try connectRequest(
                .post, "http://api.test/token", headers: headers,
                body: Data("grant_type=password&username=amy&password=hunter22-x".utf8))
            _ = try recorder.send(request, transfer: TransferOptions()).wait()
        }
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("hunter22"), text)
        let bodies = try HAR(contentsOf: file).log.entries.compactMap { $0.request.postData?.data }
        XCTAssertEqual(bodies.count, 2)
        for body in bodies {
            XCTAssertTrue(String(decoding: body, as: UTF8.self).hasPrefix("grant_type=password&username=amy&password="))
        }
    }

    func testAShortPasswordFieldOfAnUploadIsHiddenByNameAndReplayMatchesAnother() throws {
        // Given
        let file = folder.appendingPathComponent("short.har")
        let recorder = RecordingTransport(fileURL: file, wrapping: FakeTransport.answering(.status(200)), mode: .record)
        // When
        _ = try recorder.send(multipartRequest(password: "q7z"), transfer: TransferOptions()).wait()
        // Then
        let har = try HAR(contentsOf: file)
        let recorded = try XCTUnwrap(har.log.entries.first?.request.postData?.data)
        XCTAssertNil(recorded.range(of: Data("\r\n\r\nq7z\r\n".utf8)), "the password is in the recorded body")
        XCTAssertNotNil(recorded.range(of: Data("\r\n\r\n<redacted>\r\n".utf8)), "the field's value is a placeholder")
        XCTAssertNotNil(recorded.range(of: Data(binaryPart)), "the file part's bytes are kept")
        XCTAssertEqual(Data(recorded.suffix(11)), Data("\r\n--XyZ--\r\n".utf8))
        // When: replayed with another short password
        let replay = RecordingTransport(fileURL: file, mode: .replay)
        let replayed = try replay.send(multipartRequest(password: "zz9"), transfer: TransferOptions()).wait()
        // Then
        XCTAssertEqual(replayed.statusCode, 200)
        XCTAssertNoThrow(try replay.verifyAllRecordingsUsed())
    }

    /// A batch (`multipart/mixed` of `application/http` parts) whose inner requests carry their own credentials.
    private func batchRequest(token: String, key: String) throws -> ConnectRequest {
        let body =
            "--b1\r\nContent-Type: application/http\r\n\r\nGET /v1/me?access_token=\(token) HTTP/1.1\r\n"
            + "Authorization: Bearer \(token)\r\nX-Api-Key: \(key)\r\n\r\n\r\n--b1--\r\n"
        return try connectRequest(
            .post, "http://api.test/batch", headers: [.contentType: "multipart/mixed; boundary=b1"],
            body: Data(body.utf8))
    }

    /// The inner requests of a batch are recorded with their secrets hidden by the rules of outer headers and URLs,
    /// and a replay whose inner requests carry other credentials finds the recording.
    func testTheInnerRequestsCredentialsOfABatchAreHiddenAndReplayMatchesOthers() throws {
        // Given
        let file = folder.appendingPathComponent("batch.har")
        // An answer that is a batch too, its part setting a cookie the request never carried
        let answer = FakeResponse.data(
            Data(
                ("--r1\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 200 OK\r\n"
                    + "Set-Cookie: sid=tok-INNER-SET-6060; Path=/\r\n\r\n\r\n--r1--\r\n").utf8),
            headers: ["Content-Type": "multipart/mixed; boundary=r1"])
        let recorder = RecordingTransport(fileURL: file, wrapping: FakeTransport.answering(answer), mode: .record)
        // When
        _ = try recorder.send(batchRequest(token: "tok-BATCH-8080", key: "k7"), transfer: TransferOptions()).wait()
        // Then
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("tok-BATCH-8080"), text)
        XCTAssertFalse(text.contains("tok-INNER-SET-6060"), text)
        let har = try HAR(contentsOf: file)
        let recorded = String(
            decoding: try XCTUnwrap(har.log.entries.first?.request.postData?.data), as: UTF8.self)
        XCTAssertFalse(recorded.contains("X-Api-Key: k7"), recorded)
        XCTAssertTrue(recorded.contains("Authorization: <redacted:Authorization>\r\n"), recorded)
        // When: replayed with other credentials
        let replay = RecordingTransport(fileURL: file, mode: .replay)
        let replayed = try replay.send(batchRequest(token: "tok-OTHER-9090", key: "z3"), transfer: TransferOptions())
            .wait()
        // Then
        XCTAssertEqual(replayed.statusCode, 200)
        XCTAssertNoThrow(try replay.verifyAllRecordingsUsed())
    }

    /// A batch answer's inner response whose JSON body hands out a token (a login inside a batch) is recorded with the
    /// token a placeholder, as a JSON answer's is, and the token is hidden in a later request that sends it back.
    func testATokenAnInnerJSONAnswerOfABatchHandsOutStaysOutOfTheRecording() throws {
        // Given
        let file = folder.appendingPathComponent("batch-login.har")
        let answer =
            "--r2\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n"
            + #"{"access_token":"tok-INNER-JSON-4242","expires_in":60}"# + "\r\n--r2--\r\n"
        let fake = FakeTransport()
        fake.stub(
            .post, "/batch",
            with: .data(Data(answer.utf8), headers: ["Content-Type": "multipart/mixed; boundary=r2"]))
        fake.stub(.get, "/files", with: .status(200))
        let recorder = RecordingTransport(fileURL: file, wrapping: fake, mode: .record)
        // When: the batch, then a call that sends the token back under a name no rule knows
        _ = try recorder.send(batchRequest(token: "tok-BATCH-8080", key: "k7"), transfer: TransferOptions()).wait()
        _ = try recorder.send(
            connectRequest(.get, "http://api.test/files?ref=tok-INNER-JSON-4242"), transfer: TransferOptions()
        ).wait()
        // Then
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("tok-INNER-JSON-4242"), text)
        XCTAssertTrue(text.contains("expires_in"), text)
    }

    /// The `Content-Length` each inner message of `batch` declares, beside the length of the body that follows its
    /// head in the part (without the CRLF that belongs to the next delimiter).
    private func innerLengths(of batch: String, boundary: String) -> [(declared: Int?, actual: Int)] {
        batch.components(separatedBy: "--" + boundary).dropFirst().compactMap { part in
            let pieces = part.components(separatedBy: "\r\n\r\n")
            guard pieces.count >= 3 else { return nil }
            let head = pieces[1]
            let declared = head.components(separatedBy: "\r\n")
                .first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) }
            var body = pieces[2...].joined(separator: "\r\n\r\n")
            if body.hasSuffix("\r\n") { body = String(body.dropLast()) }  // CRLF is one `Character`
            return (declared, body.utf8.count)
        }
    }

    /// A batch whose inner messages' bodies redaction rewrites (a token an inner JSON answer hands out, a password an
    /// inner request sends, a secret echoed by value) is recorded with each inner `Content-Length` the length of the
    /// body recorded, so that replay hands a batch parser parts it can read.
    func testABatchsInnerContentLengthsMatchTheirRedactedBodies() throws {
        // Given
        let file = folder.appendingPathComponent("batch-lengths.har")
        let innerAnswer = #"{"access_token":"tok-INNER-LEN-1234","expires_in":60}"#
        let echo = "your key tok-ECHOED-KEY-55 is unknown"
        let answer =
            "--r3\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(innerAnswer.utf8.count)\r\n\r\n\(innerAnswer)\r\n"
            + "--r3\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
            + "Content-Length: \(echo.utf8.count)\r\n\r\n\(echo)\r\n--r3--\r\n"
        let innerRequest = #"{"user":"amy","password":"tok-INNER-PW-9876"}"#
        let batch =
            "--b2\r\nContent-Type: application/http\r\n\r\nPOST /v1/login HTTP/1.1\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(innerRequest.utf8.count)\r\n\r\n\(innerRequest)\r\n"
            + "--b2--\r\n"
        let request = try connectRequest(
            .post, "http://api.test/batch",
            headers: [.contentType: "multipart/mixed; boundary=b2", "X-Api-Key": "tok-ECHOED-KEY-55"],
            body: Data(batch.utf8))
        let recorder = RecordingTransport(
            fileURL: file,
            wrapping: FakeTransport.answering(
                .data(Data(answer.utf8), headers: ["Content-Type": "multipart/mixed; boundary=r3"])),
            mode: .record)
        // When
        _ = try recorder.send(request, transfer: TransferOptions()).wait()
        // Then: the secrets are out, and every inner length is its recorded body's
        let har = try HAR(contentsOf: file)
        let entry = try XCTUnwrap(har.log.entries.first)
        let recordedAnswer = String(decoding: try XCTUnwrap(entry.response.content.data), as: UTF8.self)
        let recordedBatch = String(decoding: try XCTUnwrap(entry.request.postData?.data), as: UTF8.self)
        for secret in ["tok-INNER-LEN-1234", "tok-ECHOED-KEY-55"] {
            XCTAssertFalse(recordedAnswer.contains(secret), recordedAnswer)
        }
        XCTAssertFalse(recordedBatch.contains("tok-INNER-PW-9876"), recordedBatch)
        let answerLengths = innerLengths(of: recordedAnswer, boundary: "r3")
        XCTAssertEqual(answerLengths.count, 2, recordedAnswer)
        for length in answerLengths {
            XCTAssertEqual(length.declared, length.actual, recordedAnswer)
        }
        let batchLengths = innerLengths(of: recordedBatch, boundary: "b2")
        XCTAssertEqual(batchLengths.count, 1, recordedBatch)
        for length in batchLengths {
            XCTAssertEqual(length.declared, length.actual, recordedBatch)
        }
        // When: replayed
        let replay = RecordingTransport(fileURL: file, mode: .replay)
        let replayed = try replay.send(request, transfer: TransferOptions()).wait()
        // Then: it found its recording
        XCTAssertEqual(replayed.statusCode, 200)
    }

    /// An OData batch's changeset (a `multipart/mixed` part of its own): the token its inner JSON answer hands out
    /// stays out of the recording, as a direct part's does.
    func testATokenAChangesetsInnerAnswerHandsOutStaysOutOfTheRecording() throws {
        // Given
        let file = folder.appendingPathComponent("changeset.har")
        let answer =
            "--batch_C\r\nContent-Type: multipart/mixed; boundary=changeset_C\r\n\r\n"
            + "--changeset_C\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 201 Created\r\n"
            + "Content-Type: application/json\r\nContent-Length: 48\r\n\r\n"
            + #"{"access_token":"tok-CHANGESET-REC-8642","id":7}"# + "\r\n--changeset_C--\r\n\r\n--batch_C--\r\n"
        let recorder = RecordingTransport(
            fileURL: file,
            wrapping: FakeTransport.answering(
                .data(Data(answer.utf8), headers: ["Content-Type": "multipart/mixed; boundary=batch_C"])),
            mode: .record)
        // When
        _ = try recorder.send(batchRequest(token: "tok-BATCH-8080", key: "k7"), transfer: TransferOptions()).wait()
        // Then
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("tok-CHANGESET-REC-8642"), text)
        let har = try HAR(contentsOf: file)
        let recorded = String(decoding: try XCTUnwrap(har.log.entries.first?.response.content.data), as: UTF8.self)
        XCTAssertTrue(recorded.contains(#""id":7"#), recorded)
        // Its inner length is its recorded body's.
        let changeset = try XCTUnwrap(
            recorded.components(separatedBy: "boundary=changeset_C\r\n\r\n").last?.components(
                separatedBy: "\r\n--batch_C--"
            ).first)
        let lengths = innerLengths(of: changeset, boundary: "changeset_C")
        XCTAssertEqual(lengths.count, 1, recorded)
        for length in lengths { XCTAssertEqual(length.declared, length.actual, recorded) }
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

    /// A UTF-8 answer that starts with a byte order mark (a CSV or text export, an event stream) is recorded with it:
    /// decoding the body as text for hiding secrets dropped it (Foundation does on Linux), and the file, then the
    /// replay, had three bytes fewer than the server sent, with or without a secret hidden.
    func testAByteOrderMarkIsKeptWhetherASecretIsHiddenOrNot() throws {
        let event = #"data: {"access_token":"tok-SSE-BOM-4455667"}"# + "\n\n"
        for (type, text, expected) in [
            ("text/csv", "name;key\namy;tok-APIKEY-778899\n", "name;key\namy;<redacted>\n"),
            ("text/plain", "nothing secret here\n", "nothing secret here\n"),
            ("text/event-stream", event, #"data: {"access_token":"<redacted:access_token>"}"# + "\n\n"),
            ("application/x-www-form-urlencoded", "a=1&b=2", "a=1&b=2"),
        ] {
            // Given
            let answer = Data([0xEF, 0xBB, 0xBF] + Array(text.utf8))
            let file = folder.appendingPathComponent("bom-\(UUID().uuidString).har")
            let recorder = RecordingTransport(
                fileURL: file, wrapping: FakeTransport.answering(.data(answer, headers: ["Content-Type": type])),
                mode: .record)
            let request = try connectRequest(
                .get, "http://api.test/export", headers: ["X-Api-Key": "tok-APIKEY-778899"])
            // When
            _ = try recorder.send(request, transfer: TransferOptions()).wait()
            // Then
            let recorded = try XCTUnwrap(HAR(contentsOf: file).log.entries.first?.response.content.data)
            XCTAssertEqual(Array(recorded.prefix(3)), [0xEF, 0xBB, 0xBF], type)
            XCTAssertEqual(String(decoding: recorded.dropFirst(3), as: UTF8.self), expected, type)
        }
    }

    // MARK: - JSON that cannot be read

    private let unreadable = Data("<redacted: unreadable JSON body>".utf8)

    /// An answer of `text` as `text/plain`, for a fake transport's handler.
    private static func plainText(_ text: Data, status: Int = 200, to request: URLRequest) -> Result<
        ConnectResponse, any Error
    > {
        let response = ConnectResponse(
            request: request, statusCode: status, headers: ["Content-Type": "text/plain"], data: text)
        return response.map { .success($0) } ?? .failure(ConnectError(.transport, message: "no response"))
    }

    /// A transport whose `/token` answers `body` as JSON, and whose other paths echo the request's URL as text.
    private func tokenEndpoint(answering body: String) -> FakeTransport {
        let fake = FakeTransport(
            fallback: .handler { request in
                Self.plainText(Data("you asked for \(request.url?.path ?? "")".utf8), to: request)
            })
        fake.stub(.post, "/token", with: .json(string: body))
        return fake
    }

    /// Records a POST to `/token`, then a GET that sends `token` back in its path; the file's text.
    private func recordTokenThenUse(_ token: String, answering body: String, file: URL) throws -> String {
        let recorder = RecordingTransport(fileURL: file, wrapping: tokenEndpoint(answering: body), mode: .record)
        let live = try recorder.send(connectRequest(.post, "http://api.test/token"), transfer: TransferOptions()).wait()
        XCTAssertEqual(live.data, Data(body.utf8), "the app gets the body as it came")
        let use = try connectRequest(.get, "http://api.test/files/\(token)")
        let echo = try recorder.send(use, transfer: TransferOptions()).wait()
        XCTAssertEqual(String(decoding: echo.data, as: UTF8.self), "you asked for /files/\(token)")
        return try String(contentsOf: file, encoding: .utf8)
    }

    func testJSONCutShortIsWithheldWholeAndItsTokenHiddenLater() throws {
        // Given: a token endpoint whose answer is cut short, so it does not parse
        let body = #"{"access_token":"tok-RESP-123456","expires_in":36"#
        let file = folder.appendingPathComponent("cut.har")
        // When
        let text = try recordTokenThenUse("tok-RESP-123456", answering: body, file: file)
        // Then: the token is nowhere in the file, not in the answer nor where the next exchange shows it
        XCTAssertFalse(text.contains("tok-RESP-123456"), text)
        let har = try HAR(contentsOf: file)
        XCTAssertEqual(har.log.entries.first?.response.content.data, unreadable)
        XCTAssertEqual(har.log.entries.last?.request.url, "http://api.test/files/%3Credacted%3E")
        XCTAssertEqual(har.log.entries.last?.response.content.text, "you asked for /files/<redacted>")
        // When: replayed
        let replayed = try RecordingTransport(fileURL: file, mode: .replay)
            .send(connectRequest(.post, "http://api.test/token"), transfer: TransferOptions()).wait()
        // Then: the answer is the placeholder
        XCTAssertEqual(replayed.data, unreadable)
    }

    func testJSONNestedDeeperThanTheParserReadsIsWithheldWholeAndItsTokenHiddenLater() throws {
        // Given: a token under 600 levels of arrays, deeper than JSONSerialization reads (512)
        let depth = 600
        let body =
            String(repeating: "[", count: depth) + #"{"refresh_token":"tok-DEEP-654321"}"#
            + String(repeating: "]", count: depth)
        let file = folder.appendingPathComponent("deep.har")
        // When
        let text = try recordTokenThenUse("tok-DEEP-654321", answering: body, file: file)
        // Then
        XCTAssertFalse(text.contains("tok-DEEP-654321"), String(text.prefix(2_000)))
        let har = try HAR(contentsOf: file)
        XCTAssertEqual(har.log.entries.first?.response.content.data, unreadable)
        XCTAssertEqual(har.log.entries.last?.response.content.text, "you asked for /files/<redacted>")
    }

    /// Text of another declared type that merely starts with a bracket (a README's badge, an INI section, a `[INFO]`
    /// log) is no JSON: it was withheld whole as unreadable JSON, and replayed as the placeholder; two such request
    /// bodies matched alike. It is kept now. Such text that names a secret (JSON mislabelled and cut short, a Python
    /// dict printed, a name with a space) is still withheld, its secret nowhere in the file; a JSON one's secret is
    /// hidden where an answer echoes it too.
    func testTextOfAnotherTypeStartingWithABracketIsKeptUnlessItNamesASecret() throws {
        let readme = "[![CI](https://ci.test/badge.svg)](https://ci.test)\n# Title\n"
        let answers = [
            "/readme": readme,
            "/token": #"{"access_token":"tok-TEXT-112233","expires_in":3"#,
            "/python": "{'access_token': 'tok-PY-445566'}",
            "/spaced": #"{"API Key":"tok-SPACED-990011","expires_in":3"#,
        ]
        let fake = FakeTransport(
            fallback: .handler { request in
                if let body = request.httpBody {
                    return Self.plainText(Data("you sent ".utf8) + body, status: 400, to: request)
                }
                return Self.plainText(Data((answers[request.url?.path ?? ""] ?? "").utf8), to: request)
            })
        fake.stub(.put, "/config", with: [.data(Data("first".utf8)), .data(Data("second".utf8))])
        let file = folder.appendingPathComponent("bracketed.har")
        let recorder = RecordingTransport(fileURL: file, wrapping: fake, mode: .record)
        func config(_ value: Int) throws -> ConnectRequest {
            try connectRequest(
                .put, "http://api.test/config", headers: [.contentType: "text/plain"],
                body: Data("[section]\nvalue=\(value)\n".utf8))
        }
        let echoed = try connectRequest(
            .post, "http://api.test/login", headers: [.contentType: "text/plain"],
            body: Data(#"{"password":"tok-ECHO-778899","#.utf8))
        // When
        for request in [
            try connectRequest(.get, "http://api.test/readme"), try connectRequest(.get, "http://api.test/token"),
            try connectRequest(.get, "http://api.test/python"), try connectRequest(.get, "http://api.test/spaced"),
            echoed, try config(1), try config(2),
        ] {
            _ = try recorder.send(request, transfer: TransferOptions()).wait()
        }
        // Then
        let text = try String(contentsOf: file, encoding: .utf8)
        for secret in ["tok-TEXT-112233", "tok-PY-445566", "tok-SPACED-990011", "tok-ECHO-778899"] {
            XCTAssertFalse(text.contains(secret), secret)
        }
        let entries = try HAR(contentsOf: file).log.entries
        XCTAssertEqual(entries.first?.response.content.data, Data(readme.utf8))
        XCTAssertEqual(entries.dropFirst().first?.response.content.data, unreadable, "the cut JSON is withheld")
        XCTAssertEqual(entries.dropFirst(2).first?.response.content.data, unreadable, "the Python dict is withheld")
        XCTAssertEqual(entries.dropFirst(3).first?.response.content.data, unreadable, "a name with a space counts")
        // When: replayed
        let replay = RecordingTransport(fileURL: file, mode: .replay)
        let readmeAgain = try replay.send(connectRequest(.get, "http://api.test/readme"), transfer: TransferOptions())
            .wait()
        let second = try replay.send(config(2), transfer: TransferOptions()).wait()
        // Then: the README as it came, and each body its own answer
        XCTAssertEqual(readmeAgain.data, Data(readme.utf8))
        XCTAssertEqual(String(decoding: second.data, as: UTF8.self), "second")
    }

    func testARequestOfJSONCutShortIsWithheldItsEchoHiddenAndReplayStillMatches() throws {
        // Given: a request whose JSON body is cut short, to a server that echoes it in plain text
        let fake = FakeTransport(
            fallback: .handler { request in
                Self.plainText(Data("unreadable: ".utf8) + (request.httpBody ?? Data()), status: 400, to: request)
            })
        func login(_ password: String) throws -> ConnectRequest {
            try connectRequest(
                .post, "http://api.test/login", headers: [.contentType: "application/json"],
                body: Data(#"{"user":"amy","password":"\#(password)""#.utf8))
        }
        let file = folder.appendingPathComponent("request.har")
        let recorder = RecordingTransport(fileURL: file, wrapping: fake, mode: .record)
        // When
        let live = try recorder.send(login("tok-REQPASS-24680"), transfer: TransferOptions()).wait()
        // Then: neither the request nor the echo keeps the password
        XCTAssertTrue(String(decoding: live.data, as: UTF8.self).contains("tok-REQPASS-24680"), "the server echoes it")
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("tok-REQPASS-24680"), text)
        let entry = try XCTUnwrap(HAR(contentsOf: file).log.entries.first)
        XCTAssertEqual(entry.request.postData?.data, unreadable)
        XCTAssertEqual(entry.response.content.text, #"unreadable: {"user":"amy","password":"<redacted>""#)
        // When: replayed with another password
        let replay = RecordingTransport(fileURL: file, mode: .replay)
        let replayed = try replay.send(login("tok-REQPASS-other"), transfer: TransferOptions()).wait()
        // Then: it found its recording
        XCTAssertEqual(replayed.statusCode, 400)
        XCTAssertNoThrow(try replay.verifyAllRecordingsUsed())
    }
}
