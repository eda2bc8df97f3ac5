import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Secrets never reach a recording, and replay still works, against a server that echoes every kind of secret.
final class RecordingSecretsTests: XCTestCase {
    private var server: LocalServer!
    private var folder: URL!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        folder = try makeRecordingFolder(for: self)
        server.route("*", "/echo") { request in .echo(request) }
        server.route("POST", "/login") { _ in
            LocalServer.Response.json(string: #"{"access_token":"tok-RESPONSE-998877","expires_in":3600}"#)
                .withHeader("Set-Cookie", "session=tok-SETCOOKIE-112233; Path=/; HttpOnly")
        }
    }

    override func tearDown() {
        server.stop()
        server = nil
    }

    /// Every secret the requests below carry or the server gives, each unlike any other text in the file.
    private let secrets = [
        "tok-AUTH-abcdef123", "tok-COOKIE-778899", "tok-APIKEY-445566", "tok-QUERY-123456", "tok-PASSWORD-xyz789",
        "tok-SETCOOKIE-112233", "tok-RESPONSE-998877", "tok-USERINFO-556677",
    ]

    /// The calls, sent with the given secrets (index-aligned with ``secrets``' first five).
    private func calls(_ values: [String]) -> [RecordingEndpoint] {
        [
            RecordingEndpoint(
                baseURL: server.baseURL, endpoint: "/echo?page=1&access_token=\(values[3])",
                headers: [
                    .authorization(bearerToken: values[0]), HTTPHeader(name: "Cookie", value: "session=\(values[1])"),
                    HTTPHeader(name: "X-Api-Key", value: values[2]),
                ]),
            RecordingEndpoint(
                baseURL: server.baseURL, endpoint: "/echo", method: .post,
                parameters: Parameter.body(
                    Data(#"{"user":"amy","password":"\#(values[4])"}"#.utf8), contentType: "application/json")),
            RecordingEndpoint(baseURL: server.baseURL, endpoint: "/login", method: .post),
        ]
    }

    func testASecretEchoedInBase64IsHiddenToo() throws {
        // Given: a server that answers with the base64 of the key it was sent
        server.route("GET", "/encoded") { request in
            .json(["seen": Data((request.header("X-Api-Key") ?? "").utf8).base64EncodedString()])
        }
        let file = folder.appendingPathComponent("encoded.har")
        let recorder = Connect(
            transport: RecordingTransport(fileURL: file, wrapping: URLSessionTransport(), mode: .record),
            retryPolicy: nil)
        let call = RecordingEndpoint(
            baseURL: server.baseURL, endpoint: "/encoded",
            headers: [HTTPHeader(name: "X-Api-Key", value: "ak-27182818")])
        // When
        let live = try recorder.request(call).wait()
        // Then
        let encoded = Data("ak-27182818".utf8).base64EncodedString()
        XCTAssertTrue(String(decoding: live, as: UTF8.self).contains(encoded))
        XCTAssertFalse(try String(contentsOf: file, encoding: .utf8).contains(encoded))
    }

    func testNoSecretReachesTheFileInAnyFormYetReplayPasses() throws {
        // Given: requests carrying secrets, answered by echoes and a token endpoint, recorded
        let file = folder.appendingPathComponent("secrets.har")
        let recorder = Connect(
            transport: RecordingTransport(fileURL: file, wrapping: URLSessionTransport(), mode: .record),
            retryPolicy: nil)
        let userInfo = try XCTUnwrap(URL(string: "http://amy:\(secrets[7])@127.0.0.1:\(server.port)"))
        _ = try recorder.request(RecordingEndpoint(baseURL: userInfo, endpoint: "/echo")).waitForResult()
        let live = try calls(secrets).map { try recorder.request($0).wait() }
        XCTAssertTrue(String(decoding: live[0], as: UTF8.self).contains("tok-AUTH-abcdef123"), "the server echoes it")
        // After the login: the session may send its cookie back below the transport, and the server echo it.
        _ = try recorder.request(RecordingEndpoint(baseURL: server.baseURL, endpoint: "/echo")).wait()
        server.stop()
        // Then: no secret in the file, raw, percent-encoded, JSON-escaped or base64
        let text = try String(contentsOf: file, encoding: .utf8)
        for secret in secrets {
            var forms = [
                secret, Data(secret.utf8).base64EncodedString(), Data("amy:\(secret)".utf8).base64EncodedString(),
            ]
            forms.append(secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? secret)
            forms.append(secret.replacingOccurrences(of: "/", with: "\\/"))
            for form in forms { XCTAssertFalse(text.contains(form), "\(form) is in the recording") }
        }
        XCTAssertTrue(text.contains("<redacted:Authorization>"), text)
        XCTAssertTrue(text.contains("session=<redacted:session>; Path=/; HttpOnly"), text)
        // When: replayed with other secrets, as on a CI machine that has other credentials
        let others = [
            "tok-AUTH-other", "tok-COOKIE-other", "tok-APIKEY-other", "tok-QUERY-other", "tok-PASSWORD-other",
        ]
        let replay = Connect(
            transport: RecordingTransport(
                fileURL: file, mode: .replay, placeholderValues: ["access_token": "test-token"]),
            retryPolicy: nil)
        let replayed = try calls(others).map { try replay.request($0).wait() }
        // Then: every request found its recording, and the test's value fills the token
        XCTAssertEqual(replayed.count, 3)
        let login = try JSONSerialization.jsonObject(with: replayed[2]) as? [String: Any]
        XCTAssertEqual(login?["access_token"] as? String, "test-token")
        XCTAssertEqual(login?["expires_in"] as? Int, 3600)
    }
}
