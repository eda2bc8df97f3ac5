import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A plain-text body (`text/plain`, or no type) that is one line of HTTP credentials, as an `Authorization` value
/// reads (`Bearer …`, `Basic …`: a token endpoint answering the header to send, a request that posts one), showed the
/// credential in every output, while the same text in any header is hidden: shown, its credential is hidden too.
final class CredentialsAsTextRedactionTests: XCTestCase {
    typealias Endpoint = ClientFixtures.Endpoint

    private let token = "cat-TOKEN-1234567890"
    /// `Basic` and the base64 of `amy:cat-PASSWORD-4321`.
    private let basic = Data("amy:cat-PASSWORD-4321".utf8).base64EncodedString()

    func testABodyOfCredentialsHidesTheCredential() {
        // Given: bodies of one line of credentials, under a text type or none, blanks or a line end around it or not
        let bodies = [
            ("Bearer \(token)", "Bearer <redacted>"), ("bearer \(token)\n", "bearer <redacted>\n"),
            ("Basic \(basic)\r\n", "Basic <redacted>\r\n"), (" Bearer \(token) \n", " Bearer <redacted> \n"),
        ]
        for (body, expected) in bodies {
            for type in ["text/plain", "text/plain; charset=utf-8", nil] {
                // When
                let shown = Redaction.bodyText(Data(body.utf8), contentType: type, redacting: true, pretty: false)
                // Then
                XCTAssertEqual(shown, expected, "\(type ?? "no type")")
            }
        }
    }

    func testTextThatIsNotCredentialsIsShownAsItCame() {
        // Given: text that starts like credentials but is not one line of them, or a type that is not plain text
        for text in ["Bearer tokens are accepted", "Basic Monthly", "Bearer short", "Bearer \(token)\nand more"] {
            // Then
            XCTAssertEqual(
                Redaction.bodyText(Data(text.utf8), contentType: "text/plain", redacting: true, pretty: false), text)
        }
        XCTAssertEqual(
            Redaction.bodyText(
                Data("Bearer \(token)".utf8), contentType: "text/plain", redacting: false, pretty: false),
            "Bearer \(token)", "shown when secrets are")
    }

    func testTheDebugOutputAndAnErrorHideACredentialTheServerAnswersAsText() throws {
        // Given: a server that answers a bearer credential as text, with a success and with an error status
        for status in [200, 401] {
            let transport = FakeTransport(
                fallback: .data(
                    Data("Bearer \(token)\n".utf8), status: status, headers: ["Content-Type": "text/plain"]))
            let logger = MemoryLogger()
            let connect = Connect(
                transport: transport, retryPolicy: nil, settings: Connect.Settings(logger: logger))
            // When
            let result = try connect.request(Endpoint(), debugResponse: true).waitForResult(timeout: 5)
            // Then
            XCTAssertTrue(logger.messages.contains { $0.contains("Bearer <redacted>") }, "\(logger.messages)")
            for message in logger.messages { XCTAssertFalse(message.contains(token), message) }
            if case .failure(let error as ConnectError) = result {
                var dumped = ""
                dump(error, to: &dumped)
                for text in [
                    error.message, error.description, error.debugDescription, String(reflecting: error), dumped,
                ] {
                    XCTAssertFalse(text.contains(token), text)
                }
            } else {
                XCTAssertEqual(status, 200, "\(result)")
            }
        }
    }

    func testTheCURLCommandHidesACredentialTheRequestSendsAsText() throws {
        // Given: a request that posts basic credentials as its text body
        var request = URLRequest(url: try XCTUnwrap(URL(string: "https://api.example.com/credentials")))
        request.httpMethod = "POST"
        request.setValue("text/plain", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data("Basic \(basic)".utf8)
        // When
        let command = cURLCommand(for: request)
        // Then
        XCTAssertFalse(command.contains(basic), command)
        XCTAssertTrue(command.contains("Basic <redacted>"), command)
    }

    func testAnErrorHidesACredentialTheRequestSentAsTextWhereTheServerQuotesIt() throws {
        // Given: a request that posts basic credentials as text, and a server whose message quotes them decoded
        var call = Endpoint(method: .post)
        call.parameters = Parameter.body(Data("Basic \(basic)\n".utf8), contentType: "text/plain")
        let transport = FakeTransport(
            fallback: .json(["message": "no account for amy:cat-PASSWORD-4321 (\(basic))"], status: 401))
        let connect = Connect(transport: transport, retryPolicy: nil)
        // When
        let result = try connect.request(call).waitForResult(timeout: 5)
        // Then
        guard case .failure(let error as ConnectError) = result else { return XCTFail("\(result)") }
        XCTAssertTrue(error.message.hasPrefix("no account for"), error.message)
        var dumped = ""
        dump(error, to: &dumped)
        for text in [error.message, error.description, error.debugDescription, String(reflecting: error), dumped] {
            XCTAssertFalse(text.contains("cat-PASSWORD-4321"), text)
            XCTAssertFalse(text.contains(basic), text)
        }
    }
}
