import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A pagination or redirect link need not be absolute: `{"next": "/v1/items?page=2&access_token=…"}`, an OAuth
/// answer's `{"redirect": "?code=…#access_token=…"}`, or a `Link: </v1/items?page=2&sig=…>; rel="next"` field. Such a
/// link is a URL as much as `https://…` is, and its secret query and fragment items are hidden as a URL's are, in every
/// output; the rest is shown as it came.
final class LinksRedactionTests: XCTestCase {
    private let token = "at-NEXT-0123456789"
    private let signature = "SIG-LINK-5566778899"

    func testARelativeLinkInAJSONStringHidesItsSecretItems() {
        // Given
        let body =
            #"{"items":[1,2],"next":"/v1/items?page=2&access_token=\#(token)","#
            + ##""back":"#state=s1&id_token=\##(signature)","title":"What? Why=not"}"##
        for pretty in [false, true] {
            // When
            let shown = Redaction.bodyText(
                Data(body.utf8), contentType: "application/json", redacting: true, pretty: pretty)
            // Then
            XCTAssertFalse(shown.contains(token), shown)
            XCTAssertFalse(shown.contains(signature), shown)
            XCTAssertTrue(shown.contains("/v1/items?page=2&access_token=<redacted>"), shown)
            XCTAssertTrue(shown.contains("#state=s1&id_token=<redacted>"), shown)
            XCTAssertTrue(shown.contains("What? Why=not"), "text that names no secret is as it came: \(shown)")
        }
        // A body whose relative links name no secret is shown byte for byte.
        let plain = #"{"next":"/v1/items?page=2&per_page=50"}"#
        XCTAssertEqual(
            Redaction.bodyText(Data(plain.utf8), contentType: "application/json", redacting: true, pretty: false),
            plain)
    }

    func testALinkFieldHidesTheSecretItemsOfEachOfItsURLs() {
        // Given
        let link =
            "<https://api.example.com/v1/items?page=2&sig=\(signature)>; rel=\"next\", "
            + "</v1/items?page=9&access_token=\(token)>; rel=\"last\""
        // When
        let shown = Redaction.headerValue(link, name: "link", redacting: true)
        // Then
        XCTAssertEqual(
            shown,
            "<https://api.example.com/v1/items?page=2&sig=<redacted>>; rel=\"next\", "
                + "</v1/items?page=9&access_token=<redacted>>; rel=\"last\"")
        XCTAssertEqual(Redaction.headerValue(link, name: "Link", redacting: false), link)
        // A field that quotes an absolute URL (a `Refresh`) hides its secrets too.
        XCTAssertEqual(
            Redaction.headerValue(
                "0; url=https://app.example.com/home?session_id=\(token)", name: "Refresh", redacting: true),
            "0; url=https://app.example.com/home?session_id=<redacted>")
    }

    /// A `Refresh` field's URL is read whole, relative or absolute, quoted or not.
    func testARefreshFieldHidesTheSecretItemsOfItsRelativeURL() {
        for (value, expected) in [
            ("0; url=/home?session_id=\(token)", "0; url=/home?session_id=<redacted>"),
            ("5;URL='/home?access_token=\(token)'", "5;URL='/home?access_token=<redacted>'"),
            ("0; url=https://app.example.com/?sig=\(signature)", "0; url=https://app.example.com/?sig=<redacted>"),
            ("30", "30"),
        ] {
            XCTAssertEqual(Redaction.headerValue(value, name: "Refresh", redacting: true), expected)
        }
    }

    func testDebugOutputAndAResponsesDescriptionHideALinksSecrets() throws {
        // Given: a page whose links carry a token of their own, which the request did not send
        let logger = MemoryLogger()
        let fake = FakeTransport.answering(
            .json(
                string: #"{"next":"/v1/items?page=2&access_token=\#(token)"}"#,
                headers: ["Link": "</v1/items?page=2&sig=\(signature)>; rel=\"next\""]))
        let connect = Connect(transport: fake, retryPolicy: nil, settings: Connect.Settings(logger: logger))
        let route = Route("/v1/items", baseURL: URL(string: "https://api.example.com")!)
        // When
        let response = try connect.response(for: route, debugResponse: true).waitForResult(timeout: 5).get()
        // Then
        let output =
            logger.messages.joined(separator: "\n") + "\n" + String(describing: response)
            + String(reflecting: response)
        for secret in [token, signature] {
            XCTAssertFalse(output.contains(secret), "\(secret) leaked:\n\(output)")
        }
        XCTAssertTrue(output.contains("Link: </v1/items?page=2&sig=<redacted>>; rel=\"next\""), output)
        XCTAssertEqual(
            String(decoding: response.data, as: UTF8.self), #"{"next":"/v1/items?page=2&access_token=\#(token)"}"#,
            "what the caller reads is as the server sent it")
    }
}
