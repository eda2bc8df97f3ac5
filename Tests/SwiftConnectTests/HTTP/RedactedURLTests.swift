import Foundation
import SwiftConnect
import XCTest

/// `ConnectRequest.redactedURL`: the URL an observer may put in a trace or a log.
final class RedactedURLTests: XCTestCase {
    func testTheDocumentationsExample() {
        let request = ConnectRequest(url: URL(string: "https://api.example.com/v1/me?token=abc&page=2")!)
        XCTAssertEqual(request.redactedURL, "https://api.example.com/v1/me?token=<redacted>&page=2")
    }

    func testUserInfoAndACredentialRepeatedInThePathAreHidden() {
        var request = ConnectRequest(url: URL(string: "https://ann:pw@api.example.com/keys/s3cr3t-key-123/info")!)
        request.setValue("s3cr3t-key-123", forHTTPHeaderField: "X-Api-Key")
        let shown = request.redactedURL
        XCTAssertFalse(shown.contains("ann"), shown)
        XCTAssertFalse(shown.contains("pw@"), shown)
        XCTAssertFalse(shown.contains("s3cr3t-key-123"), shown)
        XCTAssertTrue(shown.hasPrefix("https://api.example.com/keys/"), shown)
    }
}
