import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A token endpoint that answers with a URL-encoded form under a text type (`text/plain`, or no type at all, as older
/// OAuth providers do: `access_token=…&expires=3600`) hands out its secret as a form does: shown, it is hidden.
final class FormAsTextRedactionTests: XCTestCase {
    private let token = "fat-TOKEN-1234567890"

    func testAFormAnsweredAsTextHidesItsSecretFields() {
        let body = "access_token=\(token)&token_type=bearer&expires=3600"
        for type in ["text/plain", "text/plain; charset=utf-8", nil] {
            let shown = Redaction.bodyText(Data(body.utf8), contentType: type, redacting: true, pretty: false)
            XCTAssertFalse(shown.contains(token), "\(type ?? "no type"): \(shown)")
            XCTAssertTrue(shown.contains("expires=3600"), shown)
        }
    }

    func testTextThatIsNotAFormIsShownAsItCame() {
        for text in ["ok", "token=abc is not valid here", "a=b\nc=d and more", "1 + 1 = 2"] {
            XCTAssertEqual(
                Redaction.bodyText(Data(text.utf8), contentType: "text/plain", redacting: true, pretty: false), text)
        }
    }

    /// A form answered as text with an error status made the error's message ("the server answered 400 Bad Request:
    /// access_token=…"), which showed the secret field its body hides.
    func testAnErrorHidesTheSecretFieldsOfAFormAnsweredAsText() throws {
        // Given: a token endpoint that answers a 400 with a form as text
        let body = "error=invalid_grant&refresh_token=\(token)&retry=no"
        let transport = FakeTransport(
            fallback: .data(Data(body.utf8), status: 400, headers: ["Content-Type": "text/plain"]))
        let connect = Connect(transport: transport, retryPolicy: nil)
        // When
        let result = try connect.request(ClientFixtures.Endpoint()).waitForResult(timeout: 5)
        // Then
        guard case .failure(let error as ConnectError) = result else { return XCTFail("\(result)") }
        XCTAssertTrue(error.message.contains("error=invalid_grant"), error.message)
        var dumped = ""
        dump(error, to: &dumped)
        for text in [error.message, error.description, error.debugDescription, String(reflecting: error), dumped] {
            XCTAssertFalse(text.contains(token), text)
        }
    }
}
