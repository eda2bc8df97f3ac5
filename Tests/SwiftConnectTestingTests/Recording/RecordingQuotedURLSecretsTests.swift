import Foundation
import SwiftConnect
import XCTest

@testable import SwiftConnectTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A recording hides secrets "by the same rules the library's logs use": the secrets of a URL an answer quotes (a
/// presigned `download_url`, an error page's link, an XML `<Location>`), a secret item after a second `?` of a query
/// (`next=/home?access_token=…`) and a secret path parameter (`;jsessionid=…`), none of which the request carried, so
/// that hiding by value cannot find them.
final class RecordingQuotedURLSecretsTests: XCTestCase {
    private let secrets = SecretValues(values: [])

    /// A failure's message quoting a URL (a transport's own error, a platform error's description) keeps the URL's
    /// shape in the recording, not its secrets, as `ConnectError.description` shows it.
    func testTheSecretsOfAURLAFailureQuotesStayOutOfTheRecording() throws {
        struct RelayFailed: Error, CustomStringConvertible {
            var description: String { "relay to https://edge.test/cb?access_token=at-424242&x=1 failed" }
        }
        let connectError = ConnectError(
            .cannotConnect, message: "cannot reach https://u:pw-777@edge.test/?api_key=k-31337")
        // When
        let recorded = [
            try XCTUnwrap(RecordingTransport.failure(RelayFailed(), secrets: secrets)).message,
            try XCTUnwrap(RecordingTransport.failure(connectError, secrets: secrets)).message,
        ]
        // Then
        for text in recorded {
            for secret in ["at-424242", "pw-777", "k-31337"] { XCTAssertFalse(text.contains(secret), text) }
        }
        XCTAssertTrue(recorded[0].hasPrefix("relay to https://edge.test/cb?access_token="), recorded[0])
    }

    func testTheSecretsOfAURLAJSONAnswerQuotesStayOutOfTheRecording() {
        // Given: a presigned download URL, in an object and in an array
        let answer = Data(
            (#"{"download_url":"https://s3.test/f.pdf?X-Amz-Signature=sig-8675309abc&X-Amz-Expires=60","n":1,"#
                + #""mirrors":["https://cdn.test/f.pdf?token=tok-2468013579"]}"#).utf8)
        // When
        let recorded = String(
            decoding: RecordingRedaction.responseBody(answer, contentType: "application/json", secrets: secrets),
            as: UTF8.self)
        // Then
        XCTAssertFalse(recorded.contains("sig-8675309abc"), recorded)
        XCTAssertFalse(recorded.contains("tok-2468013579"), recorded)
        XCTAssertTrue(recorded.contains("X-Amz-Expires=60"), "the rest of the URL is kept: \(recorded)")
        XCTAssertTrue(recorded.contains(#""n":1"#), recorded)
        XCTAssertNotNil(
            try? JSONSerialization.jsonObject(with: Data(recorded.utf8)), "still JSON a replay decodes: \(recorded)")
    }

    func testTheSecretsOfAURLATextOrXMLAnswerQuotesStayOutOfTheRecording() {
        // Given
        let page = Data("Link expired: see https://app.test/reset?token=tok-1357924680.\n".utf8)
        let xml = Data("<r><Location>https://s3.test/k?X-Amz-Signature=sig-1122334455</Location></r>".utf8)
        // When
        let recordedPage = String(
            decoding: RecordingRedaction.responseBody(page, contentType: "text/plain", secrets: secrets),
            as: UTF8.self)
        let recordedXML = String(
            decoding: RecordingRedaction.responseBody(xml, contentType: "application/xml", secrets: secrets),
            as: UTF8.self)
        // Then
        XCTAssertFalse(recordedPage.contains("tok-1357924680"), recordedPage)
        XCTAssertTrue(recordedPage.hasPrefix("Link expired: see https://app.test/reset?token="), recordedPage)
        XCTAssertFalse(recordedXML.contains("sig-1122334455"), recordedXML)
    }

    func testASecretAfterASecondQuestionMarkOrInAPathParameterOfALocationStaysOut() {
        // Given
        let fields: HeaderFields = [
            .location: "https://app.test/cb?next=/home?access_token=at-99887766&x=1",
            "Content-Location": "https://app.test/shop;jsessionid=JS-55512345/cart",
        ]
        // When
        let recorded = RecordingRedaction.responseFields(fields, secrets: secrets)
        // Then
        let location = recorded[.location] ?? ""
        XCTAssertFalse(location.contains("at-99887766"), location)
        XCTAssertTrue(location.contains("x=1"), location)
        let contentLocation = recorded["Content-Location"] ?? ""
        XCTAssertFalse(contentLocation.contains("JS-55512345"), contentLocation)
        XCTAssertTrue(contentLocation.hasSuffix("/cart"), contentLocation)
    }

    func testASecretAfterASecondQuestionMarkOfTheRequestsURLStaysOutAndMatchingIsUnchanged() throws {
        // Given: a request whose return address carries a token of two characters no value rule hides
        let request = try connectRequest(.get, "https://api.test/login?next=/cb?token=t1&page=2")
        // When
        let url = RecordingRedaction.request(request, secrets: SecretValues(of: request)).url.absoluteString
        // Then
        XCTAssertFalse(url.contains("token=t1"), url)
        XCTAssertTrue(url.hasSuffix("&page=2"), url)
        XCTAssertEqual(RecordingRedaction.url(URL(string: url)!), URL(string: url)!, "a recorded URL redacts to itself")
    }
    /// A request's `Referer` (an OAuth callback page's URL, its token in the query) is hidden as the logs hide it
    /// (`Referer: https://app.test/cb?access_token=<redacted>`), and a request recorded before, its `Referer` whole,
    /// still matches the live one.
    func testTheSecretsOfARequestsRefererStayOutAndMatchingIsUnchanged() throws {
        // Given
        let request = try connectRequest(
            .get, "https://api.test/me", headers: ["Referer": "https://app.test/cb?access_token=at-REF-1234567&s=1"])
        // When
        let recorded = RecordingRedaction.request(request, secrets: SecretValues(of: request))
        // Then
        let referer = recorded.headerFields["Referer"] ?? ""
        XCTAssertFalse(referer.contains("at-REF-1234567"), referer)
        XCTAssertTrue(referer.hasPrefix("https://app.test/cb?access_token="), referer)
        XCTAssertTrue(referer.hasSuffix("&s=1"), referer)
        let older = RecordedRequest(
            method: "GET", url: recorded.url,
            headerFields: ["Referer": "https://app.test/cb?access_token=at-REF-1234567&s=1"],
            body: Data())
        XCTAssertTrue(
            RequestMatcher.header("Referer").matches(recorded, RecordingRedaction.request(older)),
            "a recording made before is redacted alike when it is read")
    }

    /// A link need not be absolute: a JSON answer's `"next": "/v1/items?page=2&access_token=…"` and a
    /// `Link: </v1/items?page=2&sig=…>; rel="next"` field are URLs too, their secret items replaced as a `Location`'s.
    func testTheSecretsOfARelativeLinkAndOfALinkFieldStayOutOfTheRecording() throws {
        // Given
        let answer = Data(
            (#"{"next":"/v1/items?page=2&access_token=at-REL-11223344","#
                + ##""back":"#state=s&id_token=it-REL-55667788","note":"What? Why=not"}"##).utf8)
        let fields: HeaderFields = [
            "Link": "<https://api.test/v1/items?page=2&sig=SIG-LINK-9988776>; rel=\"next\", "
                + "</v1/items?page=9&access_token=at-LINK-5544332>; rel=\"last\"",
            "Refresh": "0; url=https://app.test/home?session_id=SES-REFRESH-24680",
        ]
        // When
        let body = String(
            decoding: RecordingRedaction.responseBody(answer, contentType: "application/json", secrets: secrets),
            as: UTF8.self)
        let recorded = RecordingRedaction.responseFields(fields, secrets: secrets)
        // Then
        for secret in ["at-REL-11223344", "it-REL-55667788"] { XCTAssertFalse(body.contains(secret), body) }
        XCTAssertTrue(body.contains("/v1/items?page=2&access_token="), body)
        XCTAssertTrue(body.contains("What? Why=not"), body)
        XCTAssertNotNil(try? JSONSerialization.jsonObject(with: Data(body.utf8)), "still JSON: \(body)")
        let link = recorded["Link"] ?? ""
        for secret in ["SIG-LINK-9988776", "at-LINK-5544332"] { XCTAssertFalse(link.contains(secret), link) }
        XCTAssertTrue(link.hasPrefix("<https://api.test/v1/items?page=2&sig="), link)
        XCTAssertTrue(link.hasSuffix("; rel=\"last\""), link)
        let refresh = recorded["Refresh"] ?? ""
        XCTAssertFalse(refresh.contains("SES-REFRESH-24680"), refresh)
        XCTAssertTrue(refresh.hasPrefix("0; url=https://app.test/home?session_id="), refresh)
    }

    /// A `Refresh` field's URL need not be absolute either: `0; url=/home?session_id=…`.
    func testTheSecretsOfARefreshFieldsRelativeURLStayOutOfTheRecording() {
        // When
        let recorded = RecordingRedaction.responseFields(
            ["Refresh": "0; url=/home?session_id=SES-REL-REFRESH-1357"], secrets: secrets)
        // Then
        let refresh = recorded["Refresh"] ?? ""
        XCTAssertFalse(refresh.contains("SES-REL-REFRESH-1357"), refresh)
        XCTAssertTrue(refresh.hasPrefix("0; url=/home?session_id="), refresh)
    }

    /// A secret an answer hands out inside a URL (an upload URL's token, a `Location`'s fragment, a `Link`) is hidden
    /// in the later exchanges that show it elsewhere, as a token handed out under a secret JSON key is.
    func testTheSecretsOfTheURLsAnAnswerQuotesAreHandedOut() {
        // Given
        let fields: HeaderFields = [
            .location: "myapp://cb#state=s&access_token=at-LOC-1234567",
            "Link": "</v1/items?page=2&sig=SIG-LINK-7654321>; rel=\"next\"",
            .contentType: "application/json",
        ]
        let body = Data(
            (#"{"upload_url":"https:\/\/up.test\/u?upload_token=UT-JSON-8642097","#
                + #""next":"/v1/items?page=3&api_key=AK-REL-3579135","page":2}"#).utf8)
        let page = Data("Done: see https://app.test/r?a=1&amp;signature=SIG-XML-1029384".utf8)
        // When
        let handedOut =
            RecordingRedaction.secretsHandedOut(fields: fields, body: body)
            + RecordingRedaction.secretsHandedOut(fields: [.contentType: "text/html"], body: page)
        // Then
        for secret in ["at-LOC-1234567", "SIG-LINK-7654321", "UT-JSON-8642097", "AK-REL-3579135", "SIG-XML-1029384"] {
            XCTAssertTrue(handedOut.contains(secret), "\(secret) not in \(handedOut)")
        }
        XCTAssertFalse(handedOut.contains("2"), "values of other items are not secrets: \(handedOut)")
        XCTAssertFalse(handedOut.contains("s"), "values of other items are not secrets: \(handedOut)")
    }

    /// The line ends after a quoted URL are kept: an event stream's last event (`data: see https://…?session_id=…`
    /// then a blank line) lost its blank line, and replay never delivered it.
    func testTheLineEndsAfterAQuotedURLAreKept() {
        // Given
        let page = Data("data: see https://app.test/cb?session_id=SES-LINE-1234567\n\ndata: next\r\n\r\n".utf8)
        // When
        let recorded = String(
            decoding: RecordingRedaction.responseBody(page, contentType: "text/event-stream", secrets: secrets),
            as: UTF8.self)
        // Then
        XCTAssertEqual(
            recorded, "data: see https://app.test/cb?session_id=%3Credacted%3Asession_id%3E\n\ndata: next\r\n\r\n")
    }

    /// A URL can be a JSON key (a map of files keyed by presigned URL): its secrets stay out of the recording as a
    /// value's do, and are handed out to later exchanges; an object two of whose keys would read alike once hidden is
    /// not recorded as one entry standing for two.
    func testTheSecretsOfAURLThatIsAJSONKeyStayOutOfTheRecordingAndAreHandedOut() {
        // Given
        let answer = Data(
            #"{"files":{"https://s3.test/a.pdf?X-Amz-Expires=60&X-Amz-Signature=SIG-KEY-3141592":{"n":1}}}"#.utf8)
        let twins = Data(
            #"{"m":{"https://a.test/?token=TOK-ONE-111111":1,"https://a.test/?token=TOK-TWO-222222":2}}"#.utf8)
        // When
        let recorded = String(
            decoding: RecordingRedaction.responseBody(answer, contentType: "application/json", secrets: secrets),
            as: UTF8.self)
        let recordedTwins = String(
            decoding: RecordingRedaction.responseBody(twins, contentType: "application/json", secrets: secrets),
            as: UTF8.self)
        let handedOut = RecordingRedaction.secretsHandedOut(fields: [.contentType: "application/json"], body: answer)
        // Then
        XCTAssertFalse(recorded.contains("SIG-KEY-3141592"), recorded)
        XCTAssertTrue(recorded.contains("X-Amz-Expires=60"), recorded)
        XCTAssertTrue(handedOut.contains("SIG-KEY-3141592"), "\(handedOut)")
        for secret in ["TOK-ONE-111111", "TOK-TWO-222222"] {
            XCTAssertFalse(recordedTwins.contains(secret), recordedTwins)
        }
        XCTAssertEqual(recordedTwins, #"{"m":"<redacted:body>"}"#)
    }
}
