import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server that echoes the request (in its body and in its error message, as httpbin's `/anything` and many
/// "invalid token abc…" messages do) cannot make SwiftConnect show a secret the request carried: not in debug
/// output, cURL commands, error messages, descriptions, body excerpts or reflection. With redaction turned off,
/// everything shows (issue 24, items 1 and 3). Runs over every engine (`TransportUnderTest`).
final class SecretEchoTests: IntegrationTestCase {
    /// One kind of secret: how a request carries it, and the values that must not show.
    struct SecretKind: Sendable {
        let name: String
        /// Values that must be hidden with redaction on.
        let secrets: [String]
        /// The value that must show with redaction off (it reaches the server and comes back).
        let echoed: String
        let configure: @Sendable (inout EchoCall) -> Void
    }

    /// A request to the echo route, configured by a kind.
    struct EchoCall: Connector {
        var baseURL: URL
        var endpoint = "/echo"
        var method: HTTPMethod { .post }
        var headers: [HTTPHeader] = []
        var parameters: ParametersRepresentable?
        var timeout: TimeInterval { 10 }
    }

    static let kinds: [SecretKind] = [
        SecretKind(name: "bearer token", secrets: ["t0ken-bearer-123"], echoed: "t0ken-bearer-123") {
            $0.headers = [HTTPHeader(name: "Authorization", value: "Bearer t0ken-bearer-123")]
        },
        SecretKind(
            name: "basic credentials", secrets: ["hunter2-basic", SecretEchoTests.base64("amy:hunter2-basic")],
            echoed: SecretEchoTests.base64("amy:hunter2-basic")
        ) {
            $0.headers = [
                HTTPHeader(name: "Authorization", value: "Basic " + SecretEchoTests.base64("amy:hunter2-basic"))
            ]
        },
        SecretKind(name: "query access_token", secrets: ["qu3ry-access-t0ken"], echoed: "qu3ry-access-t0ken") {
            $0.parameters = Parameter.query(key: "access_token", value: "qu3ry-access-t0ken")
        },
        SecretKind(name: "cookie", secrets: ["c00kie-sess10n"], echoed: "c00kie-sess10n") {
            $0.headers = [HTTPHeader(name: "Cookie", value: "session=c00kie-sess10n")]
        },
        SecretKind(name: "API key header", secrets: ["ap1-key-v4lue"], echoed: "ap1-key-v4lue") {
            $0.headers = [HTTPHeader(name: "X-Api-Key", value: "ap1-key-v4lue")]
        },
        SecretKind(name: "short API key (5 characters, whole word)", secrets: ["k9x2q"], echoed: "k9x2q") {
            $0.headers = [HTTPHeader(name: "X-Api-Key", value: "k9x2q")]
        },
        SecretKind(name: "JSON body password", secrets: ["b0dy-pa55word"], echoed: "b0dy-pa55word") {
            $0.parameters = Parameter.body(
                Data(#"{"user":"amy","password":"b0dy-pa55word"}"#.utf8), contentType: "application/json")
        },
        SecretKind(
            name: "JSON body secret with characters to escape", secrets: ["sl@sh/pa55 w0rd", #"sl@sh\/pa55 w0rd"#],
            echoed: "pa55 w0rd"
        ) {
            $0.parameters = Parameter.body(
                Data(#"{"credentials":{"secret":"sl@sh/pa55 w0rd"}}"#.utf8), contentType: "application/json")
        },
        SecretKind(name: "form body password", secrets: ["f0rm-pa55word"], echoed: "f0rm-pa55word") {
            $0.parameters = Parameter.body(
                Data("user=amy&password=f0rm-pa55word".utf8), contentType: "application/x-www-form-urlencoded")
        },
        SecretKind(name: "path value under a secret name", secrets: ["pa7h-r3set-t0ken"], echoed: "pa7h-r3set-t0ken") {
            $0.endpoint = "/echo/{token}"
            $0.parameters = Parameter.path(key: "token", value: "pa7h-r3set-t0ken")
        },
        SecretKind(name: "multipart password", secrets: ["mult1part-pa55"], echoed: "mult1part-pa55") {
            let body =
                "--XyZ\r\nContent-Disposition: form-data; name=\"user\"\r\n\r\namy\r\n"
                + "--XyZ\r\nContent-Disposition: form-data; name=\"password\"\r\n\r\nmult1part-pa55\r\n--XyZ--\r\n"
            $0.parameters = Parameter.body(Data(body.utf8), contentType: "multipart/form-data; boundary=XyZ")
        },
    ]

    static func base64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }

    private var server: LocalServer!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        for path in ["/echo", "/echo/pa7h-r3set-t0ken"] {
            server.route("POST", path) { request in
                .echo(request, status: request.header("X-Echo-Status").flatMap { Int($0) } ?? 401)
            }
        }
    }

    override func tearDown() {
        server.stop()
    }

    private func call(_ kind: SecretKind, status: Int = 401) -> EchoCall {
        var call = EchoCall(baseURL: server.baseURL)
        kind.configure(&call)
        call.headers.append(HTTPHeader(name: "X-Echo-Status", value: "\(status)"))
        return call
    }

    /// Every text the client produced about one call: the debug log (cURL command, response, failure), and the
    /// error's message, descriptions, dump and reflection to full depth.
    private func texts(for kind: SecretKind, status: Int, redacting: Bool) throws -> (
        all: [String], error: ConnectError?
    ) {
        let logger = MemoryLogger()
        let connect = Connect(
            transport: TransportUnderTest.makeCookieless(), retryPolicy: nil,
            settings: Connect.Settings(logger: logger, redactsSecrets: redacting))
        let result = try connect.request(call(kind, status: status), debugResponse: true).waitForResult(timeout: 20)
        var all = logger.messages
        var connectError: ConnectError?
        if case .failure(let error) = result {
            let error = try XCTUnwrap(error as? ConnectError, "\(kind.name): \(error)")
            XCTAssertEqual(error.statusCode, status, "\(kind.name): \(error)")
            var dumped = ""
            dump(error, to: &dumped)
            all += [error.message, error.description, error.debugDescription, String(reflecting: error), dumped]
            all += Self.reflectedTexts(of: error)
            connectError = error
        } else {
            XCTAssertEqual(status, 200, "\(kind.name): the echo route answered \(status) but the call succeeded")
        }
        XCTAssertFalse(logger.messages.isEmpty, "\(kind.name): debugResponse logged nothing")
        return (all, connectError)
    }

    private static func reflectedTexts(of value: Any, depth: Int = 0) -> [String] {
        var texts = [String(describing: value)]
        guard depth < 32 else { return texts }
        for child in Mirror(reflecting: value).children {
            texts += reflectedTexts(of: child.value, depth: depth + 1)
        }
        return texts
    }

    func testAnEchoedErrorShowsNoSecretOfAnyKind() throws {
        for kind in Self.kinds {
            let (texts, error) = try texts(for: kind, status: 401, redacting: true)
            for text in texts {
                for secret in kind.secrets where text.contains(secret) {
                    XCTFail("\(kind.name): \(secret) shows in:\n\(text)")
                }
            }
            // The server's message is still there, with the secret hidden; the raw body stays reachable.
            let message = try XCTUnwrap(error?.message)
            XCTAssertTrue(message.hasPrefix("rejected POST /echo"), "\(kind.name): \(message)")
            XCTAssertTrue(message.contains("<redacted>"), "\(kind.name): \(message)")
            let body = String(decoding: try XCTUnwrap(error?.body), as: UTF8.self)
            XCTAssertTrue(body.contains(kind.echoed), "\(kind.name): the raw body lost the echo: \(body)")
        }
    }

    func testAnEchoedSuccessShowsNoSecretInDebugOutput() throws {
        for kind in Self.kinds {
            let (texts, _) = try texts(for: kind, status: 200, redacting: true)
            for text in texts {
                for secret in kind.secrets where text.contains(secret) {
                    XCTFail("\(kind.name): \(secret) shows in:\n\(text)")
                }
            }
        }
    }

    func testWithRedactionOffEverythingShows() throws {
        for kind in Self.kinds {
            let (texts, failure) = try texts(for: kind, status: 401, redacting: false)
            let log = texts.joined(separator: "\n")
            XCTAssertTrue(log.contains(kind.echoed), "\(kind.name): \(kind.echoed) is missing from:\n\(log)")
            let error = try XCTUnwrap(failure)
            XCTAssertTrue(error.message.contains(kind.echoed), "\(kind.name): \(error.message)")
            XCTAssertTrue(error.description.contains(kind.echoed), "\(kind.name): \(error.description)")
            XCTAssertFalse(error.debugDescription.contains("<redacted>"), "\(kind.name): \(error.debugDescription)")
        }
    }

    /// A secret in the URL's user info never shows; the engine sends it as basic credentials, which the echo
    /// quotes in base64.
    func testUserInfoCredentialsShowNowhere() throws {
        var components = URLComponents(url: server.baseURL, resolvingAgainstBaseURL: false)!
        components.user = "amy"
        components.password = "us3rinfo-pa55"
        let kind = SecretKind(
            name: "user info", secrets: ["us3rinfo-pa55", SecretEchoTests.base64("amy:us3rinfo-pa55")], echoed: "amy"
        ) { _ in }
        let logger = MemoryLogger()
        let connect = Connect(
            transport: TransportUnderTest.makeCookieless(), retryPolicy: nil, settings: Connect.Settings(logger: logger)
        )
        var call = EchoCall(baseURL: components.url!)
        call.headers = [HTTPHeader(name: "X-Echo-Status", value: "401")]
        let result = try connect.request(call, debugResponse: true).waitForResult(timeout: 20)
        guard case .failure(let failure) = result, let error = failure as? ConnectError else {
            return XCTFail("expected a ConnectError, got \(result)")
        }
        var dumped = ""
        dump(error, to: &dumped)
        let texts =
            logger.messages + [error.message, error.description, error.debugDescription, dumped]
            + Self.reflectedTexts(of: error)
        for text in texts {
            for secret in kind.secrets where text.contains(secret) {
                XCTFail("\(secret) shows in:\n\(text)")
            }
        }
    }
}
