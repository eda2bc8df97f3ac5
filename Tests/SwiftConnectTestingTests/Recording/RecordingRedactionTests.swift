import Foundation
import SwiftConnect
import XCTest

@testable import SwiftConnectTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a recording keeps of each kind of secret, by name and by value.
final class RecordingRedactionTests: XCTestCase {
    private func redacted(_ request: ConnectRequest) -> RecordedRequest {
        RecordingRedaction.request(request, secrets: SecretValues(of: request.urlRequest))
    }

    func testUserInfoPasswordAndSecretQueryItemsBecomePlaceholders() throws {
        // Given
        let request = try connectRequest(.get, "https://amy:hunter22@api.test/a?key=k-123456&page=2&sig=s-987654#x")
        // When
        let url = redacted(request).url
        // Then
        let components = try XCTUnwrap(URLComponents(url: url, resolvingAgainstBaseURL: false))
        XCTAssertEqual(components.user, "amy")
        XCTAssertEqual(components.password, "<redacted:password>")
        XCTAssertEqual(
            components.queryItems,
            [
                URLQueryItem(name: "key", value: "<redacted:key>"), URLQueryItem(name: "page", value: "2"),
                URLQueryItem(name: "sig", value: "<redacted:sig>"),
            ])
        XCTAssertNil(components.fragment)
        XCTAssertFalse(url.absoluteString.contains("hunter22"))
    }

    func testSecretHeadersAndFormAndNestedJSONFieldsBecomePlaceholders() throws {
        // Given
        let form = try connectRequest(
            .post, "https://api.test/token",
            headers: [
                .contentType: "application/x-www-form-urlencoded", "Proxy-Authorization": "Basic eDp5",
                "X-Refresh-Token": "r-555555", "Accept": "application/json",
            ],
            body: Data("grant_type=password&username=amy&password=p%40ss-word-1".utf8))
        let json = try connectRequest(
            .post, "https://api.test/keys", headers: [.contentType: "application/json"],
            body: Data(#"{"name":"ci","auth":{"client_secret":"cs-424242","scopes":["read"]}}"#.utf8))
        // When
        let redactedForm = redacted(form)
        let redactedJSON = redacted(json)
        // Then
        XCTAssertEqual(redactedForm.headerFields["Proxy-Authorization"], "<redacted:Proxy-Authorization>")
        XCTAssertEqual(redactedForm.headerFields["X-Refresh-Token"], "<redacted:X-Refresh-Token>")
        XCTAssertEqual(redactedForm.headerFields[.accept], "application/json")
        XCTAssertEqual(
            String(decoding: redactedForm.body, as: UTF8.self),
            "grant_type=password&username=amy&password=%3Credacted%3Apassword%3E")
        XCTAssertEqual(
            String(decoding: redactedJSON.body, as: UTF8.self),
            #"{"auth":{"client_secret":"<redacted:client_secret>","scopes":["read"]},"name":"ci"}"#)
    }

    func testResponseKeepsCookieNamesAndHidesEchoedValues() throws {
        // Given: a response setting a cookie, redirecting with a token, and echoing the request's key
        let request = try connectRequest(.get, "https://api.test/a", headers: ["X-Api-Key": "ak-31415926"])
        let secrets = SecretValues(of: request.urlRequest)
        let fields: HeaderFields = [
            .setCookie: "sid=s-271828; Path=/; Secure", .location: "https://api.test/b?access_token=at-161803&x=1",
            "X-Echo": "you sent ak-31415926",
        ]
        // When
        let redactedFields = RecordingRedaction.responseFields(fields, secrets: secrets)
        let body = RecordingRedaction.responseBody(
            Data(#"{"echo":"ak-31415926"}"#.utf8), contentType: "application/json", secrets: secrets)
        // Then
        XCTAssertEqual(redactedFields[.setCookie], "sid=<redacted:sid>; Path=/; Secure")
        XCTAssertEqual(redactedFields[.location], "https://api.test/b?access_token=%3Credacted%3Aaccess_token%3E&x=1")
        XCTAssertEqual(redactedFields["X-Echo"], "you sent <redacted>")
        XCTAssertEqual(String(decoding: body, as: UTF8.self), #"{"echo":"<redacted>"}"#)
        XCTAssertEqual(RecordingRedaction.cookies(in: redactedFields).map(\.value), ["<redacted:sid>"])
    }

    func testContentLengthDescribesTheBodyAsRecorded() throws {
        // Given: an echo of the request's key, 24 bytes long
        let request = try connectRequest(.get, "https://api.test/a", headers: ["X-Api-Key": "ak-31415926"])
        let answer = Data(#"{"echo":"ak-31415926"}"#.utf8)
        let response = try XCTUnwrap(
            ConnectResponse(
                request: request, head: ResponseHead(status: 200, headerFields: [.contentLength: "\(answer.count)"]),
                data: answer))
        // When
        let archived = RecordingTransport.archived(
            response, to: request, secrets: SecretValues(of: request.urlRequest))
        // Then
        let body = try XCTUnwrap(archived.content.data)
        XCTAssertEqual(body, Data(#"{"echo":"<redacted>"}"#.utf8))
        XCTAssertEqual(archived.headers.first { $0.name == "Content-Length" }?.value, "\(body.count)")
    }

    func testPlaceholdersAreFilledWithTheTestsValues() {
        let filled = RecordingRedaction.filling(
            #"{"access_token":"<redacted:access_token>","other":"<redacted:other>"}"#,
            with: ["access_token": "test-token"])
        XCTAssertEqual(filled, #"{"access_token":"test-token","other":"<redacted:other>"}"#)
    }
}
