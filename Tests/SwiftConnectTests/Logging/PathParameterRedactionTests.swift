import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A session in a path parameter (`/app;jsessionid=…`, as Java servlet containers rewrite URLs for clients without
/// cookies) is a secret as it is in a query item: its value is hidden by the same names, wherever a URL is shown.
final class PathParameterRedactionTests: XCTestCase {
    private let session = "9F3A-SECRET-0C11"

    private var url: URL {
        URL(string: "https://shop.example.com/app;jsessionid=\(session)/cart;v=2;api_key=key-SECRET-07?page=1")!
    }

    func testURLsShowThePathButNotTheSecretParametersValues() {
        let shown = "https://shop.example.com/app;jsessionid=<redacted>/cart;v=2;api_key=<redacted>?page=1"
        XCTAssertEqual(Redaction.url(url, redacting: true), shown)
        XCTAssertEqual(Redaction.urlText(url.absoluteString), shown)
        XCTAssertEqual(ConnectRequest(url: url).redactedURL, shown)
        XCTAssertEqual(
            Redaction.urlsInText("failed: \(url.absoluteString)."), "failed: \(shown).")
        // A segment itself, and a parameter not named as a secret, are shown.
        XCTAssertEqual(
            Redaction.url(URL(string: "https://h.test/token=abc/x;lang=en;session")!, redacting: true),
            "https://h.test/token=abc/x;lang=en;session")
        XCTAssertEqual(Redaction.url(url, redacting: false), url.absoluteString)
    }

    func testNoOutputShowsTheSessionOfThePath() throws {
        var request = URLRequest(url: url)
        request.setValue("text/plain", forHTTPHeaderField: "Accept")
        let error = ConnectError(
            .httpStatus, message: "session \(session) expired", request: request,
            underlyingError: URLError(.badServerResponse, userInfo: [NSURLErrorFailingURLErrorKey: url]))
        var dumped = ""
        dump(error, to: &dumped)
        for text in [
            cURLCommand(for: request), error.description, error.debugDescription, error.message, dumped,
            "\(error as NSError)",
        ] {
            XCTAssertFalse(text.contains("SECRET"), text)
            XCTAssertTrue(text.contains("shop.example.com") || text.contains("expired"), text)
        }
    }
}
