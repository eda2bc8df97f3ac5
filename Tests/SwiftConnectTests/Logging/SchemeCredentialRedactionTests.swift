import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A value that reads as HTTP credentials (`Bearer …`, `Basic …`) is one whatever its name: a header the list of
/// secret names misses (`X-Auth`, `X-Forwarded-Auth`) or a JSON string under a neutral key (`"upstream": "Bearer …"`)
/// shows the scheme and hides the credential.
final class SchemeCredentialRedactionTests: XCTestCase {
    private let token = "eyJhbGciOiJIUzI1NiJ9.sch-CRED-424242"

    func testAHeaderWhoseValueIsACredentialIsHiddenWhateverItsName() {
        XCTAssertEqual(Redaction.headerValue("Bearer \(token)", name: "X-Auth", redacting: true), "Bearer <redacted>")
        XCTAssertEqual(
            Redaction.headerValue("basic dXNlcjpwYXNzd29yZA==", name: "X-Forwarded-Auth", redacting: true),
            "basic <redacted>")
        var request = URLRequest(url: URL(string: "https://api.example.com/me")!)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "X-Auth")
        XCTAssertFalse(cURLCommand(for: request).contains(token))
        // Echoed by the server: hidden by value.
        XCTAssertEqual(SecretValues(of: request).hiding(in: "got \(token)"), "got <redacted>")
        // A value that only starts with the word is text.
        XCTAssertEqual(
            Redaction.headerValue("Bearer tokens are accepted", name: "X-Note", redacting: true),
            "Bearer tokens are accepted")
    }

    func testAJSONStringThatIsACredentialIsHiddenWhateverItsKey() {
        let body = #"{"upstream":{"X-Upstream":"Bearer \#(token)"},"mode":"Bearer","plan":"Basic Monthly"}"#
        let shown = Redaction.bodyText(Data(body.utf8), contentType: "application/json", redacting: true, pretty: false)
        XCTAssertFalse(shown.contains(token), shown)
        XCTAssertTrue(shown.contains(#""X-Upstream":"Bearer <redacted>""#), shown)
        XCTAssertTrue(shown.contains(#""mode":"Bearer""#), shown)
        XCTAssertTrue(shown.contains(#""plan":"Basic Monthly""#), "not base64 of a user and a password: \(shown)")
    }
}
