import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A URL JSON-escaped in text (`https:\/\/…`, `\u0026` for `&`: a page's inline script, JSON held in a JSON string)
/// has its secrets hidden as a URL written plainly does.
final class EscapedURLRedactionTests: XCTestCase {
    private func shown(_ body: String, _ type: String = "application/json", pretty: Bool = false) -> String {
        Redaction.bodyText(Data(body.utf8), contentType: type, redacting: true, pretty: pretty)
    }

    func testAJSONEscapedURLInTextHidesItsSecrets() {
        let text = #"<script>var cb = "https:\/\/app.example\/cb?state=s1\u0026access_token=esc-TOKEN-9876";</script>"#
        let result = shown(text, "text/html")
        XCTAssertFalse(result.contains("esc-TOKEN-9876"), result)
        XCTAssertTrue(result.contains("state=s1"), result)
        // Shown as its reader reads it, the secret hidden.
        XCTAssertTrue(result.contains(#""https://app.example/cb?state=s1&access_token=<redacted>";"#), result)
        // `\u0026` alone, slashes as they are (a Go server's JSON, quoted in a text page).
        let amp = #"see "https://app.example/cb?state=s1\u0026access_token=esc-TOKEN-5432" for more"#
        XCTAssertFalse(shown(amp, "text/plain").contains("esc-TOKEN-5432"), shown(amp, "text/plain"))
        // Nothing to hide: as it came.
        let plain = #"see "https:\/\/app.example\/docs?page=2\u0026lang=en""#
        XCTAssertEqual(shown(plain, "text/plain"), plain)
    }

    /// JSON whose string holds JSON (a webhook's payload, a queued job): the inner URL is escaped once more.
    func testAURLInJSONHeldByAJSONStringHidesItsSecrets() {
        let inner = #"{"callback":"https:\/\/app.example\/cb?access_token=esc-INNER-24680"}"#
        let data = try! JSONSerialization.data(withJSONObject: ["payload": inner])
        let text = shown(String(decoding: data, as: UTF8.self))
        XCTAssertFalse(text.contains("esc-INNER-24680"), text)
        XCTAssertTrue(text.contains("payload"), text)
    }

    /// Plain and escaped URLs mixed, in either order and many times over: each is found, none is skipped.
    func testPlainAndEscapedURLsMixedAreEachRead() {
        let plain = "https://a.example/x?token=plain-SECRET-1"
        let escaped = #"https:\/\/b.example\/y?token=esc-SECRET-2"#
        let text = (0..<50).map { $0 % 3 == 0 ? "\(escaped) and \(plain)" : "\(plain) then \(escaped)" }
            .joined(separator: "\n")
        let shown = Redaction.urlsInText(text)
        XCTAssertFalse(shown.contains("plain-SECRET-1"), shown)
        XCTAssertFalse(shown.contains("esc-SECRET-2"), shown)
        XCTAssertEqual(shown.components(separatedBy: "token=<redacted>").count - 1, 100)
    }
}
