import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server hands out secrets in its answer's header fields (a login's `X-Auth-Token`, a session's `Set-Cookie`, an
/// `X-Amz-Security-Token`) and may quote them again in its body. Shown (debug output, an error's message,
/// descriptions and reflection, `print(response)`), they are hidden by name in their own fields and by value wherever
/// else they show; the body quoted them as they came. With redaction off, they show.
final class HandedOutHeaderSecretsTests: XCTestCase {
    private let token = "hdr-t0ken-55555"
    private let cookie = "c00kie-h4nded"
    private let securityToken = "FwoGZXIvYXdzEJr-sts-777"
    private var server: LocalServer!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        for status in [200, 403] {
            server.route("POST", "/login/\(status)") { [token, cookie, securityToken] _ in
                LocalServer.Response(
                    status: status,
                    headers: [
                        ("Content-Type", "application/json"), ("X-Auth-Token", token),
                        ("Set-Cookie", "sid=\(cookie); Path=/; HttpOnly; Expires=Wed, 21 Oct 2099 07:28:00 GMT"),
                        ("X-Amz-Security-Token", securityToken), ("X-Note", "issued \(token)"),
                    ],
                    body: Data(
                        #"{"error":"token \#(token), session \#(cookie) and \#(securityToken) are not for you"}"#.utf8))
            }
        }
    }

    override func tearDown() {
        server.stop()
    }

    private struct Login: Connector {
        var baseURL: URL
        var status: Int
        var endpoint: String { "/login/\(status)" }
        var method: HTTPMethod { .post }
        var timeout: TimeInterval { 10 }
    }

    /// Every text the client made about one call: the debug log, and the error's or the response's own texts.
    private func texts(status: Int, redacting: Bool) throws -> [String] {
        let logger = MemoryLogger()
        let connect = Connect(
            transport: TransportUnderTest.makeCookieless(), retryPolicy: nil,
            settings: Connect.Settings(logger: logger, redactsSecrets: redacting))
        let result = try connect.request(Login(baseURL: server.baseURL, status: status), debugResponse: true)
            .waitForResult(timeout: 20)
        var texts = logger.messages
        switch result {
        case .success(let response):
            var dumped = ""
            dump(response, to: &dumped)
            texts += [String(describing: response), dumped]
        case .failure(let error):
            let error = try XCTUnwrap(error as? ConnectError, "\(error)")
            var dumped = ""
            dump(error, to: &dumped)
            texts += [error.message, String(describing: error), String(reflecting: error), dumped]
        }
        return texts
    }

    func testSecretsTheAnswerHandsOutInItsFieldsAreHiddenWhereverTheyShow() throws {
        for status in [200, 403] {
            let texts = try texts(status: status, redacting: true)
            XCTAssertFalse(texts.isEmpty)
            for text in texts {
                for secret in [token, cookie, securityToken] {
                    XCTAssertFalse(text.contains(secret), "\(status): \(secret) in \(text)")
                }
            }
            XCTAssertTrue(texts.contains { $0.contains("are not for you") }, "\(status): \(texts)")
        }
    }

    func testWithRedactionOffTheHandedOutSecretsShow() throws {
        let texts = try texts(status: 403, redacting: false).joined(separator: "\n")
        for secret in [token, cookie, securityToken] {
            XCTAssertTrue(texts.contains(secret), "\(secret) missing from \(texts)")
        }
    }
}
