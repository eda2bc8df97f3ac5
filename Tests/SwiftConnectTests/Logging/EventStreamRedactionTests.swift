import Foundation
import XCTest

@testable import SwiftConnect

/// A server-sent event stream (`text/event-stream`) carries JSON in its events' data: a device login's token pushed
/// once approved. Logs and error excerpts show each event's JSON data as a JSON body: its secret fields hidden.
final class EventStreamRedactionTests: XCTestCase {
    private func shown(_ text: String) -> String {
        Redaction.bodyText(
            Data(text.utf8), contentType: "text/event-stream; charset=utf-8", redacting: true, pretty: false)
    }

    func testTheSecretFieldsOfAnEventsJSONDataAreHidden() {
        // Given: a pending event, an event with a token, one whose JSON spans two data lines, and the end marker
        let stream =
            "event: pending\r\ndata: {\"status\":\"pending\"}\r\n\r\n"
            + "event: approved\r\ndata: {\"access_token\":\"tok-SSE-ONE-97531\",\"expires_in\":60}\r\n\r\n"
            + "data: {\"refresh_token\":\r\ndata: \"tok-SSE-TWO-86420\"}\r\n\r\n"
            + "data: [DONE]\r\n\r\n"
        // When
        let text = shown(stream)
        // Then
        XCTAssertFalse(text.contains("tok-SSE-ONE-97531"), text)
        XCTAssertFalse(text.contains("tok-SSE-TWO-86420"), text)
        XCTAssertTrue(
            text.contains("event: approved\r\ndata: {\"access_token\":\"<redacted>\",\"expires_in\":60}\r\n"), text)
        XCTAssertTrue(text.contains("data: {\"refresh_token\":\"<redacted>\"}\r\n\r\n"), text)
        XCTAssertTrue(text.contains("event: pending\r\ndata: {\"status\":\"pending\"}\r\n"), text)
        XCTAssertTrue(text.hasSuffix("data: [DONE]\r\n\r\n"), text)
    }

    func testAnEventCutShortIsWithheldAndNotRedactingShowsAll() {
        // Given: a stream cut inside an event's JSON
        let stream = "data: {\"ok\":true}\n\ndata: {\"id_token\":\"tok-SSE-CUT-11223"
        // Then
        let text = shown(stream)
        XCTAssertFalse(text.contains("tok-SSE-CUT-11223"), text)
        XCTAssertEqual(text, "data: {\"ok\":true}\n\ndata: <redacted>")
        let raw = Redaction.bodyText(
            Data(stream.utf8), contentType: "text/event-stream", redacting: false, pretty: false)
        XCTAssertEqual(raw, stream)
    }

    /// A token one event hands out under a secret name, quoted again by a later event under an ordinary name (or in a
    /// comment line): a JSON body hides it where it quotes it again, and so does a stream now.
    func testATokenAnEventHandsOutIsHiddenWhereALaterEventQuotesIt() {
        // Given: the token pushed once approved, then quoted in a message and a comment
        let stream =
            "data: {\"access_token\":\"tok-SSE-ECHO-24680\"}\n\n"
            + "data: {\"message\":\"signed in with tok-SSE-ECHO-24680\"}\n\n"
            + ": keep-alive for tok-SSE-ECHO-24680\n\n"
        // When
        let text = shown(stream)
        // Then
        XCTAssertFalse(text.contains("tok-SSE-ECHO-24680"), text)
        XCTAssertTrue(text.contains("data: {\"message\":\"signed in with <redacted>\"}\n\n"), text)
    }

    /// An event's data that is not JSON but reads as a URL-encoded form (`access_token=…&expires_in=3600`, as an
    /// older OAuth provider answers) or as credentials (`Bearer …`) showed the secret: a `text/plain` body, or a
    /// header, hides them so.
    func testAnEventsFormDataAndCredentialsAreHidden() {
        // Given: an event of form data, one of a bearer credential, and one of ordinary text
        let stream =
            "data: access_token=tok-SSE-FORM-13579&expires_in=3600\n\n"
            + "data: Bearer tok-SSE-BEARER-97531\r\n\r\n"
            + "data: hello=world and more\n\n"
        // When
        let text = shown(stream)
        // Then
        XCTAssertFalse(text.contains("tok-SSE-FORM-13579"), text)
        XCTAssertFalse(text.contains("tok-SSE-BEARER-97531"), text)
        XCTAssertEqual(
            text,
            "data: access_token=<redacted>&expires_in=3600\n\n" + "data: Bearer <redacted>\r\n\r\n"
                + "data: hello=world and more\n\n")
    }

    /// Lines that end with a lone CR, which the event stream format allows: the stream was one line, whose form data
    /// and credentials were shown as they came. Each line's end is kept as it was.
    func testEventsWhoseLinesEndWithALoneCRAreReadAsLines() {
        let stream =
            "data: access_token=tok-CR-FORM-97531&expires_in=3600\r\r" + "data: Bearer tok-CR-BEARER-97531\r\r"
            + "data: {\"password\":\"tok-CR-JSON-97531\"}\r\r"
        let text = shown(stream)
        for secret in ["tok-CR-FORM-97531", "tok-CR-BEARER-97531", "tok-CR-JSON-97531"] {
            XCTAssertFalse(text.contains(secret), text)
        }
        XCTAssertEqual(
            text,
            "data: access_token=<redacted>&expires_in=3600\r\r" + "data: Bearer <redacted>\r\r"
                + "data: {\"password\":\"<redacted>\"}\r\r")
    }

    /// A token form data or a credential hands out is hidden where the stream quotes it again, as a JSON event's is.
    func testATokenFormDataHandsOutIsHiddenWhereTheStreamQuotesItAgain() {
        let stream =
            "data: access_token=tok-FORM-123456789&expires_in=3600\n\n" + ": issued tok-FORM-123456789\n"
            + "data: Bearer tok-BEARER-123456789\n\n" + "data: renewed tok-BEARER-123456789\n\n"
        let text = shown(stream)
        XCTAssertFalse(text.contains("tok-FORM-123456789"), text)
        XCTAssertFalse(text.contains("tok-BEARER-123456789"), text)
        XCTAssertTrue(text.contains(": issued <redacted>\n"), text)
    }
}
