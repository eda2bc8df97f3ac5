import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A secret after a second `?` in a query (`?x=1?token=…`, a URL glued onto another; or a return address,
/// `?next=/cb?access_token=…`) is a query item to whoever reads it on: it is hidden by the same names as any other.
final class NestedQueryRedactionTests: XCTestCase {
    private let token = "tok-SECRET-4471"

    /// A value that holds a document percent-encoded (a GraphQL GET's `variables`, a return address) has its
    /// secrets hidden as the document's, and stays encoded; one without a secret is shown as it came.
    func testASecretInAPercentEncodedValueIsHidden() {
        let graphQL = "https://h.test/graphql?query=q&variables=%7B%22token%22%3A%22\(token)%22%2C%22id%22%3A7%7D"
        let returning = "https://h.test/login?next=%2Freset%3Ftoken%3D\(token)&v=2"
        let form = "https://h.test/cb?state=user%3Damy%26password%3D\(token)"
        for written in [graphQL, returning, form] {
            let shown = Redaction.url(URL(string: written)!, redacting: true)
            XCTAssertFalse(shown.contains(token), shown)
            XCTAssertTrue(shown.contains("redacted"), shown)
            XCTAssertFalse(Redaction.urlText(written).contains(token))
        }
        XCTAssertTrue(Redaction.url(URL(string: graphQL)!, redacting: true).contains("%22id%22%3A7"))
        let plain = "https://h.test/search?filter=%7B%22page%22%3A2%7D&next=%2Fa%3Fb%3D1"
        XCTAssertEqual(Redaction.url(URL(string: plain)!, redacting: true), plain)
    }

    func testASecretAfterASecondQuestionMarkIsHiddenInEveryURLShown() {
        for (written, shown) in [
            ("https://h.test/a?x=1?token=\(token)", "https://h.test/a?x=1?token=<redacted>"),
            (
                "https://h.test/login?next=/cb?access_token=\(token)&v=2",
                "https://h.test/login?next=/cb?access_token=<redacted>&v=2"
            ),
            ("https://h.test/a#x=1?token=\(token)", "https://h.test/a#x=1?token=<redacted>"),
        ] {
            let url = URL(string: written)!
            XCTAssertEqual(Redaction.url(url, redacting: true), shown)
            XCTAssertEqual(Redaction.urlText(written), shown)
            XCTAssertEqual(Redaction.urlsInText("failed: \(written)"), "failed: \(shown)")
        }
        // A question mark in a value with no secret after it is shown as it is.
        let plain = "https://h.test/search?q=why?&page=2"
        XCTAssertEqual(Redaction.url(URL(string: plain)!, redacting: true), plain)
    }

    func testTheSecretIsHiddenWhereAnErrorOrTheServerEchoesIt() throws {
        let request = URLRequest(url: URL(string: "https://h.test/a?x=1?token=\(token)")!)
        let error = ConnectError(.httpStatus, message: "token \(token) is not valid", request: request)
        for text in [error.description, error.debugDescription, error.message, cURLCommand(for: request)] {
            XCTAssertFalse(text.contains("SECRET"), text)
        }
    }
}
