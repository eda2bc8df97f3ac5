import Foundation
import SwiftConnect
import XCTest

@testable import SwiftConnectTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A recording hides what the logs hide: the `value` of a name/value pair a sibling names as a secret (a header list
/// a server echoes, a HAR-like export), under a placeholder named after the pair's name for a replay to fill.
final class RecordingNamedSecretsTests: XCTestCase {
    private let secrets = SecretValues(values: [])

    private func recorded(_ body: String, _ type: String) -> String {
        String(
            decoding: RecordingRedaction.responseBody(Data(body.utf8), contentType: type, secrets: secrets),
            as: UTF8.self)
    }

    func testTheValueOfANameValuePairNamingASecretStaysOutOfTheRecording() throws {
        let body =
            #"{"headers":[{"name":"Authorization","value":"Bearer nv-REC-135791"},"#
            + #"{"name":"Accept","value":"text/plain"}],"params":[{"key":"client_secret","value":"nv-REC-246802"}]}"#
        let text = recorded(body, "application/json")
        XCTAssertFalse(text.contains("nv-REC-135791"), text)
        XCTAssertFalse(text.contains("nv-REC-246802"), text)
        XCTAssertTrue(text.contains("text/plain"), text)
        XCTAssertTrue(text.contains(#""value":"<redacted:Authorization>""#), text)
        XCTAssertNotNil(try? JSONSerialization.jsonObject(with: Data(text.utf8)), "still JSON: \(text)")
        // The secret the answer handed out is known by value too (an echo of it elsewhere).
        let handedOut = RecordingRedaction.secretsHandedOut(
            fields: [.contentType: "application/json"], body: Data(body.utf8))
        XCTAssertTrue(handedOut.contains("Bearer nv-REC-135791"), "\(handedOut)")
    }

    /// A string that reads as HTTP credentials (`Bearer …`) under a neutral key (a header map a server echoes) stays out
    /// of the recording, as it stays out of the logs.
    func testACredentialUnderANeutralKeyStaysOutOfTheRecording() {
        let body = #"{"echo":{"X-Upstream":"Bearer sch-REC-86420975"},"plan":"Basic Monthly"}"#
        let text = recorded(body, "application/json")
        XCTAssertFalse(text.contains("sch-REC-86420975"), text)
        XCTAssertTrue(text.contains("Basic Monthly"), text)
        XCTAssertNotNil(try? JSONSerialization.jsonObject(with: Data(text.utf8)), "still JSON: \(text)")
    }

    /// A form answered as plain text (an older OAuth provider's token answer) is recorded as a form: its secret fields
    /// hidden, and known as secrets it hands out.
    func testAFormAnsweredAsTextStaysOutOfTheRecording() {
        let body = "access_token=fat-REC-1357913579&expires=3600"
        let text = recorded(body, "text/plain")
        XCTAssertFalse(text.contains("fat-REC-1357913579"), text)
        XCTAssertTrue(text.contains("expires=3600"), text)
        let handedOut = RecordingRedaction.secretsHandedOut(fields: [.contentType: "text/plain"], body: Data(body.utf8))
        XCTAssertTrue(handedOut.contains("fat-REC-1357913579"), "\(handedOut)")
    }

    /// A plain-text body that is one line of credentials (`Bearer …`, `Basic …`), as the logs hide it: hidden in a
    /// recorded answer and request, and known as a secret the answer hands out.
    func testCredentialsAsTextStayOutOfTheRecording() throws {
        let basic = Data("amy:cat-REC-PASSWORD-24680".utf8).base64EncodedString()
        for (body, credential) in [("Bearer cat-REC-1357913579\n", "cat-REC-1357913579"), ("Basic \(basic)", basic)] {
            let text = recorded(body, "text/plain")
            XCTAssertFalse(text.contains(credential), text)
            XCTAssertTrue(text.hasPrefix("Bearer <") || text.hasPrefix("Basic <"), text)
            let handedOut = RecordingRedaction.secretsHandedOut(
                fields: [.contentType: "text/plain"], body: Data(body.utf8))
            XCTAssertTrue(handedOut.contains(credential), "\(handedOut)")
            let sent = RecordingRedaction.requestBody(Data(body.utf8), contentType: nil, secrets: secrets)
            XCTAssertFalse(String(decoding: sent, as: UTF8.self).contains(credential), "request: \(body)")
        }
        XCTAssertEqual(recorded("Bearer tokens are accepted", "text/plain"), "Bearer tokens are accepted")
    }
}
