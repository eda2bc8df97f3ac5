import Foundation
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A batch request (`multipart/mixed`, as Google's and OData's batch endpoints take) carries whole HTTP requests in its
/// parts (`application/http`), each with its own header lines and request line; a batch answer carries their
/// responses. Shown bodies hide the secrets of those inner lines by the rules of outer headers and URLs.
final class BatchRedactionTests: XCTestCase {
    private let batchType = "multipart/mixed; boundary=batch_B"

    /// Two inner requests: a long bearer token, a short key only hiding by name can catch, a token in a request
    /// target's query, a cookie.
    private let batch =
        "--batch_B\r\nContent-Type: application/http\r\nContent-ID: <item1>\r\n\r\n"
        + "GET /farm/v1/animals/pony?access_token=tok-TARGET-24680&fields=name HTTP/1.1\r\n"
        + "Authorization: Bearer tok-INNER-AUTH-13579\r\nX-Api-Key: k9\r\nAccept: application/json\r\n\r\n\r\n"
        + "--batch_B\r\nContent-Type: application/http\r\n\r\n"
        + "POST https://api.example.com/v1/items HTTP/1.1\r\nCookie: sid=tok-INNER-COOKIE-97531\r\n"
        + "Content-Type: application/json\r\n\r\n{\"name\":\"pony\"}\r\n--batch_B--\r\n"

    private let secrets = ["tok-TARGET-24680", "tok-INNER-AUTH-13579", "k9\r", "tok-INNER-COOKIE-97531"]

    private func batchRequest() -> URLRequest {
        var request = URLRequest(url: URL(string: "https://api.example.com/batch")!)
        request.httpMethod = "POST"
        request.setValue(batchType, forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(batch.utf8)
        return request
    }

    func testTheInnerRequestsSecretsOfABatchAreHiddenInTheCURLCommandAndTheRestKept() {
        // When
        let command = cURLCommand(for: batchRequest())
        // Then
        for secret in secrets { XCTAssertFalse(command.contains(secret), "\(secret) in \(command)") }
        XCTAssertTrue(command.contains("Authorization: <redacted>\r\nX-Api-Key: <redacted>\r\n"), command)
        XCTAssertTrue(
            command.contains("GET /farm/v1/animals/pony?access_token=<redacted>&fields=name HTTP/1.1"), command)
        XCTAssertTrue(command.contains("Cookie: <redacted>\r\n"), command)
        XCTAssertTrue(command.contains("Accept: application/json\r\n"), command)
        XCTAssertTrue(command.contains("{\"name\":\"pony\"}"), command)
        // Not redacting: as it came.
        XCTAssertTrue(cURLCommand(for: batchRequest(), redactingSecrets: false).contains("tok-INNER-AUTH-13579"))
    }

    /// An echo of an inner request's credential elsewhere (the batch answer's error "invalid token …") is hidden by
    /// value, as an outer credential's is.
    func testAnInnerRequestsCredentialIsHiddenByValueWhereverItIsEchoed() {
        // When
        let secrets = SecretValues(of: batchRequest())
        // Then
        XCTAssertEqual(
            secrets.hiding(in: "invalid token tok-INNER-AUTH-13579, sid tok-INNER-COOKIE-97531"),
            "invalid token <redacted>, sid <redacted>")
    }

    func testTheInnerResponsesSecretsOfABatchAnswerAreHidden() {
        // Given: an answer whose parts set a cookie and redirect to a URL with a token
        let answer =
            "--batch_R\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 302 Found\r\n"
            + "Location: https://app.example.com/cb#access_token=tok-LOCATION-11223&state=s1\r\n"
            + "Set-Cookie: session=tok-SETCOOKIE-44556; Path=/\r\n\r\n\r\n--batch_R--\r\n"
        // When
        let shown = Redaction.bodyText(
            Data(answer.utf8), contentType: "multipart/mixed; boundary=batch_R", redacting: true, pretty: true)
        // Then
        XCTAssertFalse(shown.contains("tok-LOCATION-11223"), shown)
        XCTAssertFalse(shown.contains("tok-SETCOOKIE-44556"), shown)
        XCTAssertTrue(
            shown.contains("Location: https://app.example.com/cb#access_token=<redacted>&state=s1\r\n"), shown)
        XCTAssertTrue(shown.contains("Set-Cookie: <redacted>\r\n"), shown)
        XCTAssertTrue(shown.contains("HTTP/1.1 302 Found\r\n"), shown)
    }

    /// A single message as its own body (`application/http`, `message/http`) is read alike.
    func testAnHTTPMessageBodyHasItsHeaderLinesHidden() {
        let message = "PUT /v1/me HTTP/1.1\r\nProxy-Authorization: Basic YW15OnB3\r\n\r\n"
        for type in ["application/http", "message/http; msgtype=request"] {
            let shown = Redaction.bodyText(Data(message.utf8), contentType: type, redacting: true, pretty: false)
            XCTAssertEqual(shown, "PUT /v1/me HTTP/1.1\r\nProxy-Authorization: <redacted>\r\n\r\n", type)
        }
    }

    /// A part whose content is JSON (an upload's metadata part, a batch request's body) has its secret fields hidden
    /// as a JSON body's are, whatever the part is named; an echo of them is hidden by value.
    func testTheSecretFieldsOfAJSONPartAreHidden() {
        let upload =
            "--U\r\nContent-Disposition: form-data; name=\"metadata\"\r\nContent-Type: application/json\r\n\r\n"
            + #"{"name":"a.png","client_secret":"cs-PART-5566778899"}"# + "\r\n--U--\r\n"
        let batchWithBody =
            "--B\r\nContent-Type: application/http\r\n\r\nPOST /v1/login HTTP/1.1\r\nContent-Type: application/json\r\n\r\n"
            + #"{"user":"amy","password":"pw-BATCH-1122334455"}"# + "\r\n--B--\r\n"
        for (body, type, secret) in [
            (upload, "multipart/form-data; boundary=U", "cs-PART-5566778899"),
            (batchWithBody, "multipart/mixed; boundary=B", "pw-BATCH-1122334455"),
        ] {
            var request = URLRequest(url: URL(string: "https://api.example.com/up")!)
            request.httpMethod = "POST"
            request.setValue(type, forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body.utf8)
            let command = cURLCommand(for: request)
            XCTAssertFalse(command.contains(secret), command)
            XCTAssertTrue(command.contains("<redacted>"), command)
            XCTAssertEqual(SecretValues(of: request).hiding(in: "echo \(secret)"), "echo <redacted>", type)
        }
    }

    /// An OData batch nests its changes in a changeset, a `multipart/mixed` part of its own: the JSON bodies of the
    /// changeset's inner requests and answers have their secret fields hidden as a batch's direct parts do, and an echo
    /// of them is hidden by value.
    func testTheSecretFieldsOfAChangesetsJSONBodiesAreHidden() {
        // Given
        let changeset = { (inner: String) in
            "--batch_O\r\nContent-Type: multipart/mixed; boundary=changeset_O\r\n\r\n"
                + "--changeset_O\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
                + inner + "\r\n--changeset_O--\r\n\r\n--batch_O--\r\n"
        }
        let batch = changeset(
            "POST /odata/Users HTTP/1.1\r\nContent-Type: application/json\r\n\r\n"
                + #"{"user":"amy","password":"pw-CHANGESET-246810"}"#)
        let answer = changeset(
            "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n\r\n"
                + #"{"id":7,"access_token":"tok-CHANGESET-135791"}"#)
        var request = URLRequest(url: URL(string: "https://api.example.com/odata/$batch")!)
        request.httpMethod = "POST"
        request.setValue("multipart/mixed; boundary=batch_O", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(batch.utf8)
        // When
        let command = cURLCommand(for: request)
        let shown = Redaction.bodyText(
            Data(answer.utf8), contentType: "multipart/mixed; boundary=batch_O", redacting: true, pretty: false)
        // Then
        XCTAssertFalse(command.contains("pw-CHANGESET-246810"), command)
        XCTAssertTrue(command.contains(#"{"password":"<redacted>","user":"amy"}"#), command)
        XCTAssertFalse(shown.contains("tok-CHANGESET-135791"), shown)
        XCTAssertTrue(shown.contains(#""access_token":"<redacted>""#), shown)
        XCTAssertEqual(
            SecretValues(of: request).hiding(in: "echo pw-CHANGESET-246810"), "echo <redacted>",
            "the changeset's password is not among the request's secret values")
    }
}
