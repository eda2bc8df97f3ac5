import Foundation
import SwiftConnect
import XCTest

@testable import SwiftConnectTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a recording keeps as data: values that cannot be secrets stay what they were, so that a replay decodes as the
/// live answer did; and the file a record run writes holds that run's exchanges, and its note, no more and no less.
final class RecordingDataValuesTests: XCTestCase {
    private var folder: URL!
    private let base = URL(string: "https://api.test")!

    override func setUpWithError() throws {
        folder = try makeRecordingFolder(for: self)
    }

    /// The body `path` answers in replay, parsed, after recording `answers` in turn.
    private func replayedJSON(of path: String, file: URL) throws -> [String: Any] {
        let player = Connect(transport: RecordingTransport(fileURL: file, mode: .replay), retryPolicy: nil)
        let body = try player.request(RecordingEndpoint(baseURL: base, endpoint: path)).wait(timeout: 10)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: body) as? [String: Any])
    }

    /// GitHub's `"private": false` and `"two_factor_authentication": true` are Booleans under secret-looking names:
    /// recorded as a string placeholder, the replay failed to decode a `Bool` the live answer decoded. A Boolean or a
    /// `null` holds no secret; a string under the same name is still hidden.
    func testABooleanOrNullUnderASecretNameIsRecordedAsItIs() throws {
        // Given
        let fake = FakeTransport()
        fake.stub(
            .get, "/repo",
            with: .json(
                string: #"{"name":"r","private":false,"two_factor_authentication":true,"session":null,"#
                    + #""token":"tok-DATA-12345678","private_count":3}"#))
        let file = folder.appendingPathComponent("booleans.har")
        let recorder = Connect(
            transport: RecordingTransport(fileURL: file, wrapping: fake, mode: .record), retryPolicy: nil)

        // When
        _ = try recorder.request(RecordingEndpoint(baseURL: base, endpoint: "/repo")).wait(timeout: 10)
        let replayed = try replayedJSON(of: "/repo", file: file)

        // Then
        XCTAssertEqual(replayed["private"] as? Bool, false)
        XCTAssertEqual(replayed["two_factor_authentication"] as? Bool, true)
        XCTAssertTrue(replayed["session"] is NSNull, "\(replayed)")
        XCTAssertEqual(replayed["token"] as? String, "<redacted:token>")
        XCTAssertEqual(replayed["private_count"] as? String, "<redacted:private_count>", "a number may be a secret")
        XCTAssertFalse(try String(contentsOf: file, encoding: .utf8).contains("tok-DATA-12345678"))
    }

    /// JSON or a form carried as a JSON string (an API Gateway event's `"body"`) keeps its secrets out of the file,
    /// as the logs keep them out; the value stays a string, and one without a secret stays as it was.
    func testTheSecretsOfJSONOrAFormCarriedAsAStringStayOut() throws {
        // Given
        let fake = FakeTransport()
        fake.stub(
            .get, "/event",
            with: .json(
                string: #"{"body":"{\"user\":\"amy\",\"password\":\"pw-EMBEDDED-1234\"}","#
                    + #""form":"user=amy&client_secret=cs-EMBEDDED-5678","plain":"{\"page\":2}"}"#))
        let file = folder.appendingPathComponent("embedded.har")
        let recorder = Connect(
            transport: RecordingTransport(fileURL: file, wrapping: fake, mode: .record), retryPolicy: nil)

        // When
        _ = try recorder.request(RecordingEndpoint(baseURL: base, endpoint: "/event")).wait(timeout: 10)
        let replayed = try replayedJSON(of: "/event", file: file)

        // Then
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("pw-EMBEDDED-1234"), text)
        XCTAssertFalse(text.contains("cs-EMBEDDED-5678"), text)
        let body = try XCTUnwrap(replayed["body"] as? String)
        XCTAssertEqual(
            try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: String],
            ["user": "amy", "password": "<redacted>"])
        XCTAssertEqual(replayed["form"] as? String, "user=amy&client_secret=<redacted>")
        XCTAssertEqual(replayed["plain"] as? String, #"{"page":2}"#)
    }

    /// A JSON Web Token under a name no rule knows (SimpleJWT's `"access"`) stays out of the file, and so does the
    /// next request's echo of it (`Authorization` aside: a header named as a secret is hidden anyway).
    func testAJSONWebTokenStaysOutWhateverItsName() throws {
        // Given
        let token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbXkifQ.c2lnbmF0dXJlLXJlY29yZA"
        let fake = FakeTransport()
        fake.stub(.post, "/token", with: .json(string: #"{"access":"\#(token)","expires":300}"#))
        fake.stub(.get, "/me", with: .json(string: #"{"name":"amy"}"#))
        let file = folder.appendingPathComponent("jwt.har")
        let recorder = Connect(
            transport: RecordingTransport(fileURL: file, wrapping: fake, mode: .record), retryPolicy: nil)

        // When
        _ = try recorder.request(RecordingEndpoint(baseURL: base, endpoint: "/token", method: .post)).wait(timeout: 10)
        _ = try recorder.request(RecordingEndpoint(baseURL: base, endpoint: "/me?t=\(token)")).wait(timeout: 10)

        // Then
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("c2lnbmF0dXJlLXJlY29yZA"), text)
        XCTAssertTrue(text.contains("<redacted:jwt>"), text)
        XCTAssertTrue(text.contains(#"\"expires\":300"#), text)
    }

    /// `Set-Cookie: beta=true` handed out "true" as a secret: every later `true` in a JSON body became a placeholder
    /// (invalid JSON) and `?archived=true` a query no replay matched. A cookie that holds data is not hidden by value;
    /// a session cookie's value still is, wherever a later exchange shows it.
    func testACookieHoldingDataIsNotHiddenInLaterExchanges() throws {
        // Given
        let fake = FakeTransport()
        fake.stub(
            .get, "/flags",
            with: .json(string: #"{"beta":true}"#, headers: ["Set-Cookie": "beta=true; Path=/"]))
        fake.stub(
            .get, "/login",
            with: .json(string: "{}", headers: ["Set-Cookie": "sid=s3ss10nTOKENvalue99; Path=/; HttpOnly"]))
        fake.stub(.get, "/items", with: .json(string: #"{"archived":true,"echo":"s3ss10nTOKENvalue99"}"#))
        let file = folder.appendingPathComponent("cookies.har")
        let recorder = Connect(
            transport: RecordingTransport(fileURL: file, wrapping: fake, mode: .record), retryPolicy: nil)

        // When
        for path in ["/flags", "/login", "/items?archived=true"] {
            _ = try recorder.request(RecordingEndpoint(baseURL: base, endpoint: path)).wait(timeout: 10)
        }

        // Then
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("s3ss10nTOKENvalue99"), "the session cookie's value, echoed, is hidden")
        XCTAssertEqual(try replayedJSON(of: "/flags", file: file)["beta"] as? Bool, true)
        XCTAssertEqual(try replayedJSON(of: "/items?archived=true", file: file)["archived"] as? Bool, true)
    }

    /// A URL in a request field no rule names (`X-Return-To`) has its secret query items hidden, as the logs hide
    /// them and as a response's fields are recorded.
    func testTheSecretsOfAURLInAnyRequestFieldStayOut() throws {
        // Given
        let request = try connectRequest(
            .get, "https://api.test/me", headers: ["X-Return-To": "https://app.test/cb?access_token=at-HDR-1234567&s=1"]
        )

        // When
        let recorded = RecordingRedaction.request(request, secrets: SecretValues(of: request))

        // Then
        let field = recorded.headerFields["X-Return-To"] ?? ""
        XCTAssertFalse(field.contains("at-HDR-1234567"), field)
        XCTAssertTrue(field.hasPrefix("https://app.test/cb?access_token="), field)
        XCTAssertTrue(field.hasSuffix("&s=1"), field)
    }

    /// Re-recording a test that no longer makes a request: the earlier run's exchange is gone from the file, not
    /// reported by every replay after as never used.
    func testARecordRunEmptiesAnEarlierRunsFileEvenWithoutRequests() throws {
        // Given: a file an earlier run recorded, with a note (recorded here to another path, then copied: a file a
        // transport of this process wrote is added to, as a second client of one test does)
        let fake = FakeTransport.answering(.json(string: "{}"))
        let recorded = folder.appendingPathComponent("recorded.har")
        _ = try Connect(transport: RecordingTransport(fileURL: recorded, wrapping: fake, mode: .recordMissing))
            .request(RecordingEndpoint(baseURL: base, endpoint: "/flags")).wait(timeout: 10)
        var earlier = try HAR(contentsOf: recorded)
        XCTAssertEqual(earlier.log.entries.count, 1)
        earlier.log.comment = "re-record with SWIFTCONNECT_RECORD_MODE=record"
        let file = folder.appendingPathComponent("stale.har")
        try earlier.encoded().write(to: file)

        // When: a record run that sends nothing
        _ = RecordingTransport(fileURL: file, wrapping: fake, mode: .record)

        // Then
        let after = try HAR(data: Data(contentsOf: file))
        XCTAssertEqual(after.log.entries.count, 0)
        XCTAssertEqual(after.log.comment, "re-record with SWIFTCONNECT_RECORD_MODE=record")
        XCTAssertNoThrow(try RecordingTransport(fileURL: file, mode: .replay).verifyAllRecordingsUsed())
    }

    /// A transport that wraps nothing cannot record: a record run (the suite run with
    /// `SWIFTCONNECT_RECORD_MODE=record` to re-record other tests) emptied its file all the same, a browser's HAR
    /// export that cannot be made again lost.
    func testARecordRunWithNothingToRecordWithLeavesTheFile() throws {
        // Given
        let fake = FakeTransport.answering(.json(string: "{}"))
        let recorded = folder.appendingPathComponent("recorded-export.har")
        _ = try Connect(transport: RecordingTransport(fileURL: recorded, wrapping: fake, mode: .recordMissing))
            .request(RecordingEndpoint(baseURL: base, endpoint: "/flags")).wait(timeout: 10)
        let before = try Data(contentsOf: recorded)
        let file = folder.appendingPathComponent("export.har")
        try before.write(to: file)

        // When
        let transport = RecordingTransport(fileURL: file, mode: .record)
        let request = try connectRequest(.get, "https://api.test/flags")
        let error = try failure(of: transport.send(request, transfer: TransferOptions()))

        // Then
        XCTAssertEqual(try recordingError(of: error).reason, .noTransport)
        XCTAssertEqual(try Data(contentsOf: file), before)
    }

    /// A recording's `log.comment` (a note on how to re-record it) survives an exchange `recordMissing` adds.
    func testRecordMissingKeepsTheLogsComment() throws {
        // Given
        var har = HAR(entries: [])
        har.log.comment = "staging; re-record with SWIFTCONNECT_RECORD_MODE=record"
        let file = folder.appendingPathComponent("noted.har")
        try har.encoded().write(to: file)
        let fake = FakeTransport.answering(.json(string: "{}"))

        // When
        _ = try Connect(transport: RecordingTransport(fileURL: file, wrapping: fake, mode: .recordMissing))
            .request(RecordingEndpoint(baseURL: base, endpoint: "/new")).wait(timeout: 10)

        // Then
        let after = try HAR(data: Data(contentsOf: file))
        XCTAssertEqual(after.log.entries.count, 1)
        XCTAssertEqual(after.log.comment, "staging; re-record with SWIFTCONNECT_RECORD_MODE=record")
    }
}
