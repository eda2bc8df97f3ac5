import Foundation
import SwiftConnect
import XCTest

@testable import SwiftConnectTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A recording hides the secrets of a URL JSON-escaped in text (`https:\/\/…`, `\u0026` for `&`: a page's inline
/// script) as it hides a URL written plainly.
final class RecordingEscapedURLSecretsTests: XCTestCase {
    private let secrets = SecretValues(values: [])

    private func recorded(_ body: String, _ type: String) -> String {
        String(
            decoding: RecordingRedaction.responseBody(Data(body.utf8), contentType: type, secrets: secrets),
            as: UTF8.self)
    }

    func testTheSecretsOfAJSONEscapedURLInTextStayOutOfTheRecording() {
        let page = #"<script>var cb = "https:\/\/app.test\/cb?state=s1\u0026access_token=esc-REC-97531";</script>"#
        let text = recorded(page, "text/html")
        XCTAssertFalse(text.contains("esc-REC-97531"), text)
        XCTAssertTrue(text.contains("state=s1"), text)
    }
}
