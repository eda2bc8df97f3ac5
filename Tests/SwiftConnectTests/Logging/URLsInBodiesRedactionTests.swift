import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A body can quote a URL that carries a secret under a field name that is not one (`download_url`, `next`, an XML
/// `<Location>`, a sentence in an error page): a presigned URL's signature, an OAuth redirect's token. Shown bodies
/// hide the secret in such a URL as a URL shown anywhere else is hidden; the rest of the body stays as it came.
final class URLsInBodiesRedactionTests: XCTestCase {
    private let signature = "SIG-0123456789abcdef"
    private var presigned: String {
        "https://bucket.s3.example.com/report.pdf?X-Amz-Expires=300&X-Amz-Signature=\(signature)"
    }

    func testAURLInAJSONStringHidesItsSecretsAtAnyDepth() throws {
        let body = #"{"files":[{"name":"report.pdf","download_url":"\#(presigned)"}],"next":null}"#
        for pretty in [false, true] {
            let shown = Redaction.bodyText(
                Data(body.utf8), contentType: "application/json", redacting: true, pretty: pretty)
            XCTAssertFalse(shown.contains(signature), shown)
            XCTAssertTrue(shown.contains("X-Amz-Signature=<redacted>"), shown)
            XCTAssertTrue(shown.contains("report.pdf"), shown)
        }
        // JSON's escaped solidus (`https:\/\/`) is read as the URL it is.
        let escaped = body.replacingOccurrences(of: "/", with: #"\/"#)
        let shown = Redaction.bodyText(
            Data(escaped.utf8), contentType: "application/json", redacting: true, pretty: false)
        XCTAssertFalse(shown.contains(signature), shown)
        // Not redacting: as it came.
        XCTAssertEqual(
            Redaction.bodyText(Data(body.utf8), contentType: "application/json", redacting: false, pretty: false),
            body)
    }

    /// A URL can be a key (a map of links keyed by URL): its secrets are hidden as a value's are; an object two of
    /// whose keys would read alike once hidden is shown as a placeholder, not as one entry standing for two.
    func testAURLThatIsAJSONKeyHidesItsSecrets() {
        let body = #"{"links":{"\#(presigned)":{"size":3}},"n":1}"#
        for pretty in [false, true] {
            let shown = Redaction.bodyText(
                Data(body.utf8), contentType: "application/json", redacting: true, pretty: pretty)
            XCTAssertFalse(shown.contains(signature), shown)
            XCTAssertTrue(shown.contains("X-Amz-Signature=<redacted>"), shown)
            XCTAssertTrue(shown.contains("X-Amz-Expires=300"), shown)
        }
        let twins = #"{"links":{"https://a.example/?token=t1-SECRET-1":1,"https://a.example/?token=t2-SECRET-2":2}}"#
        let shown = Redaction.bodyText(
            Data(twins.utf8), contentType: "application/json", redacting: true, pretty: false)
        XCTAssertEqual(shown, #"{"links":"<redacted>"}"#)
    }

    func testAJSONBodyWhoseURLsHoldNoSecretIsShownAsItCame() {
        let body = #"{"self":"https://api.example.com/items?page=2","count":3}"#
        XCTAssertEqual(
            Redaction.bodyText(Data(body.utf8), contentType: "application/json", redacting: true, pretty: false),
            body)
    }

    func testAURLInTextOrXMLHidesItsSecrets() {
        let text = "Moved: see \(presigned) for the file."
        let shownText = Redaction.bodyText(Data(text.utf8), contentType: "text/plain", redacting: true, pretty: false)
        XCTAssertEqual(
            shownText, "Moved: see \(presigned.replacingOccurrences(of: signature, with: "<redacted>")) for the file.")

        let xml = "<Result><Location>\(presigned.replacingOccurrences(of: "&", with: "&amp;"))</Location></Result>"
        let shownXML = Redaction.bodyText(
            Data(xml.utf8), contentType: "application/xml", redacting: true, pretty: false)
        XCTAssertFalse(shownXML.contains(signature), shownXML)
        XCTAssertTrue(shownXML.contains("<Location>https://bucket.s3.example.com/report.pdf?"), shownXML)
    }

    func testAParameterQuotingAURLHidesItsSecretWhenPrinted() {
        let parameter = Parameter.jsonObject(JSONValue.object(["callback": .string(presigned), "name": "report"]))
        for shown in [String(describing: parameter), String(reflecting: parameter)] {
            XCTAssertFalse(shown.contains(signature), shown)
            XCTAssertTrue(shown.contains("report"), shown)
        }
    }

    func testAnErrorsBodyExcerptHidesAURLsSecret() throws {
        let transport = FakeTransport.answering(
            .json(string: #"{"message":"expired","retry_url":"\#(presigned)"}"#, status: 403))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let error = connectError(of: connect.request(Route("/file", baseURL: URL(string: "https://api.example.com")!)))
        for shown in [String(describing: error), String(reflecting: error)] {
            XCTAssertFalse(shown.contains(signature), shown)
        }
    }

    /// A line feed or a carriage return alone ends a URL, as a blank does: `Set("\r\n")` held the one character CRLF,
    /// so a URL ran on past a line end, and what followed up to the next blank was shown as its query (`\nnext` part of
    /// the hidden value) or lost.
    func testALineEndAfterAURLEndsIt() {
        let text = "see https://a.test/x?token=tok-123456\nnext line\rthen https://b.test/y?sig=s-654321\n\nend"
        XCTAssertEqual(
            Redaction.urlsInText(text),
            "see https://a.test/x?token=<redacted>\nnext line\rthen https://b.test/y?sig=<redacted>\n\nend")
        let shown = Redaction.bodyText(Data(text.utf8), contentType: "text/plain", redacting: true, pretty: false)
        XCTAssertTrue(shown.hasSuffix("?sig=<redacted>\n\nend"), shown)
        XCTAssertTrue(shown.contains("<redacted>\nnext line\r"), shown)
    }
}
