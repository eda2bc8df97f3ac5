import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A secret is hidden whole wherever text is cut to a length (a message at 1,024 characters, a body excerpt at
/// 512 bytes, debug output at 64 KiB), never shown in part; and found in the request however its body is framed.
final class SecretAtTheCutTests: XCTestCase {
    typealias Endpoint = ClientFixtures.Endpoint

    private static let secret = "t0ken-at-the-cut-9876"
    /// The start of the secret: showing it means the secret was shown in part.
    private static let start = "t0ken-at"

    private func endpoint(_ method: HTTPMethod = .get, secret: String = secret) -> Endpoint {
        Endpoint(method: method, headers: [HTTPHeader(name: "Authorization", value: "Bearer \(secret)")])
    }

    /// Everything an error shows: message, descriptions, reflection and dump.
    private func texts(of error: ConnectError) -> [String] {
        var dumped = ""
        dump(error, to: &dumped)
        return [error.message, error.description, error.debugDescription, String(reflecting: error), dumped]
    }

    private func connectError(_ future: Future<Data>) throws -> ConnectError {
        guard case .failure(let error) = try future.waitForResult(timeout: 5) else {
            throw XCTSkip("expected a failure")
        }
        return try XCTUnwrap(error as? ConnectError, "\(error)")
    }

    func testASecretTheMessageCutWouldSplitIsHiddenWhole() throws {
        // Given: a server message whose echo of the token starts a few characters before the 1,024th
        let padding = String(repeating: "x", count: 1_000)
        let transport = FakeTransport(
            fallback: .json(["message": "\(padding) token \(Self.secret) is not valid"], status: 401))
        let connect = Connect(transport: transport, retryPolicy: nil)
        // When
        let error = try connectError(connect.request(endpoint()))
        // Then
        XCTAssertEqual(error.message.count, 1_024, "the message is cut where it was")
        for text in texts(of: error) {
            XCTAssertFalse(text.contains(Self.start), "part of the secret shows: …\(text.suffix(80))")
        }
    }

    func testASecretTheBodyExcerptCutWouldSplitIsHiddenWhole() throws {
        // Given: a plain-text error body that echoes the token across the excerpt's 512th byte
        let body = String(repeating: "y", count: 500) + " " + Self.secret + " and more"
        let transport = FakeTransport(
            fallback: .data(Data(body.utf8), status: 500, headers: ["Content-Type": "text/plain"]))
        let connect = Connect(transport: transport, retryPolicy: nil)
        // When
        let error = try connectError(connect.request(endpoint()))
        // Then
        XCTAssertTrue(error.debugDescription.contains("yyyy"), "the excerpt is shown")
        for text in texts(of: error) {
            XCTAssertFalse(text.contains(Self.start), "part of the secret shows: …\(text.suffix(200))")
        }
    }

    /// Echoes before the cut shrink as they are hidden (21 bytes to 10): the echo the hiding window ends inside slid
    /// under the cut, its start shown. The window reaches far enough past the cut once hidden.
    func testASecretEchoedManyTimesBeforeTheExcerptCutIsHiddenWhole() throws {
        // Given: a plain-text error body of nothing but echoes of the token
        let body = String(repeating: Self.secret + " ", count: 30)
        let transport = FakeTransport(
            fallback: .data(Data(body.utf8), status: 500, headers: ["Content-Type": "text/plain"]))
        let connect = Connect(transport: transport, retryPolicy: nil)
        // When
        let error = try connectError(connect.request(endpoint()))
        // Then
        for text in texts(of: error) {
            XCTAssertFalse(text.contains(Self.start), "part of the secret shows: …\(text.suffix(120))")
        }
        XCTAssertTrue(error.debugDescription.contains("<redacted>"), error.debugDescription)
    }

    func testASecretTheDebugOutputCutWouldSplitIsHiddenWhole() throws {
        // Given: a successful body that echoes the token across the debug output's 64 KiB cut
        let body = String(repeating: "z", count: 64 * 1024 - 10) + " " + Self.secret
        let transport = FakeTransport(
            fallback: .data(Data(body.utf8), headers: ["Content-Type": "text/plain"]))
        let logger = MemoryLogger()
        let connect = Connect(transport: transport, retryPolicy: nil, settings: Connect.Settings(logger: logger))
        // When
        _ = try connect.request(endpoint(), debugResponse: true).wait(timeout: 5)
        // Then
        XCTAssertTrue(logger.messages.contains { $0.contains("zzzz") }, "the body is logged")
        for message in logger.messages {
            XCTAssertFalse(message.contains(Self.start), "part of the secret shows: …\(message.suffix(200))")
        }
    }

    func testAMultipartFieldIsASecretBesideABinaryFilePart() throws {
        // Given: an upload of a binary file (not UTF-8) with a password field; the server quotes the password
        let password = "mult1part-binary-secret"
        var body = Data("--XyZ\r\nContent-Disposition: form-data; name=\"avatar\"; filename=\"a.jpg\"\r\n".utf8)
        body +=
            Data("Content-Type: image/jpeg\r\n\r\n".utf8) + Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10])
            + Data("\r\n".utf8)
        body += Data(
            "--XyZ\r\nContent-Disposition: form-data; name=\"password\"\r\n\r\n\(password)\r\n--XyZ--\r\n".utf8)
        var upload = Endpoint(method: .post)
        upload.parameters = Parameter.body(body, contentType: "multipart/form-data; boundary=XyZ")
        let transport = FakeTransport(fallback: .json(["message": "wrong password \(password)"], status: 401))
        let connect = Connect(transport: transport, retryPolicy: nil)
        // When
        let error = try connectError(connect.request(upload))
        // Then
        XCTAssertTrue(error.message.hasPrefix("wrong password"), error.message)
        for text in texts(of: error) {
            XCTAssertFalse(text.contains(password), "the password shows: \(text)")
        }
    }

    func testAJSONBodyAfterWhiteSpaceGivesItsSecrets() throws {
        // Given: JSON sent as text, after a line break, with a token field the server quotes
        let token = "js0n-after-white-space"
        var call = Endpoint(method: .post)
        call.parameters = Parameter.body(Data("\n  {\"token\": \"\(token)\"}".utf8), contentType: "text/plain")
        let transport = FakeTransport(fallback: .json(["message": "bad token \(token)"], status: 401))
        let connect = Connect(transport: transport, retryPolicy: nil)
        // When
        let error = try connectError(connect.request(call))
        // Then
        for text in texts(of: error) {
            XCTAssertFalse(text.contains(token), "the token shows: \(text)")
        }
    }

    func testPrintingAURLValuedHeaderHidesItsSecretQueryValues() {
        let header = HTTPHeader(
            name: "Referer", value: "https://app.example/callback?access_token=ref3rer-t0ken&page=2")
        var dumped = ""
        dump(header, to: &dumped)
        for text in [header.description, String(reflecting: header), dumped] {
            XCTAssertFalse(text.contains("ref3rer-t0ken"), text)
            XCTAssertTrue(text.contains("page=2"), "the rest of the URL shows: \(text)")
        }
    }
}
