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
}
