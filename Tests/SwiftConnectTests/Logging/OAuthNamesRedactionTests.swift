import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Names that carry secrets though the list of secret names did not hold them: OAuth's authorization `code` and PKCE
/// `code_verifier`, a DPoP proof, a Digest credential's `response`.
final class OAuthNamesRedactionTests: XCTestCase {
    private func shown(_ body: String, _ type: String = "application/json", pretty: Bool = false) -> String {
        Redaction.bodyText(Data(body.utf8), contentType: type, redacting: true, pretty: pretty)
    }

    func testAnAuthorizationCodeAndItsVerifierAreHidden() {
        // The redirect back from the authorization server (RFC 6749 §4.1.2), and the token request that spends it.
        let callback = Redaction.urlText("https://app.example/cb?code=SplxlOBeZQQYbYS6WxSbIA&state=xyz")
        XCTAssertEqual(callback, "https://app.example/cb?code=<redacted>&state=xyz")
        let form = shown(
            "grant_type=authorization_code&code=SplxlOBeZQQYbYS6WxSbIA&code_verifier=dBjftJeZ4CVP-mB92K27uhbUJU1p1r",
            "application/x-www-form-urlencoded")
        XCTAssertEqual(form, "grant_type=authorization_code&code=<redacted>&code_verifier=<redacted>")
        XCTAssertEqual(
            shown(#"{"code_verifier":"dBjftJeZ4CVP-mB92K27uhbUJU1p1r"}"#), #"{"code_verifier":"<redacted>"}"#)
        // An error body's `code` is a number or a word to read.
        let error = #"{"code":42,"message":"bad request"}"#
        XCTAssertEqual(shown(error), error)
        XCTAssertEqual(shown(#"{"code":"invalid_grant"}"#), #"{"code":"invalid_grant"}"#)
    }

    /// RFC 8628's device code (exchanged for the tokens), Firebase's `?auth=` ID token and an `?appid=` API key are
    /// hidden; a form's `key` field stays hidden when `upload(files:fields:)` sends it as a multipart part.
    func testADeviceCodeAnAuthQueryItemAnAppIDAndAMultipartKeyAreHidden() throws {
        let polling = shown(
            "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code&device_code=GmRhmhcxhwAz&client_id=1",
            "application/x-www-form-urlencoded")
        XCTAssertFalse(polling.contains("GmRhmhcxhwAz"), polling)
        XCTAssertFalse(shown(#"{"device_code":"GmRhmhcxhwAz","user_code":"WDJB-MJHT"}"#).contains("GmRhmhcxhwAz"))
        let firebase = Redaction.urlText("https://x.firebaseio.com/u.json?auth=eyJhbGciOiJSUzI1NiJ9abc&print=pretty")
        XCTAssertEqual(firebase, "https://x.firebaseio.com/u.json?auth=<redacted>&print=pretty")
        XCTAssertEqual(
            Redaction.urlText("https://api.example/weather?q=Oslo&appid=0f1e2d3c"),
            "https://api.example/weather?q=Oslo&appid=<redacted>")
        // A JSON `auth` object is read by its own fields.
        XCTAssertEqual(shown(#"{"auth":{"type":"oauth"}}"#), #"{"auth":{"type":"oauth"}}"#)

        var form = MultipartFormData(boundary: "b0undary")
        form.append(field: "key", value: "imgbb-KEY-123456")
        form.append(field: "note", value: "rows")
        let body = try form.encodedData()
        let multipart = shown(String(decoding: body, as: UTF8.self), "multipart/form-data; boundary=b0undary")
        XCTAssertFalse(multipart.contains("imgbb-KEY-123456"), multipart)
        XCTAssertTrue(multipart.contains("rows"), multipart)
    }

    func testTheCodeASecretRequestSentIsHiddenWhereTheServerEchoesIt() {
        var request = URLRequest(url: URL(string: "https://auth.example/token")!)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data("grant_type=authorization_code&code=SplxlOBeZQQYbYS6WxSbIA".utf8)
        let secrets = SecretValues(of: request)
        XCTAssertEqual(
            secrets.hiding(in: "code SplxlOBeZQQYbYS6WxSbIA was already used"), "code <redacted> was already used")
    }

    func testADPoPProofIsHiddenAsASecretHeader() {
        let proof = "eyJ0eXAiOiJkcG9wK2p3dCJ9.eyJodG0iOiJHRVQifQ.c2lnbmF0dXJl"
        // The rule that hides a header also removes it on a redirect to another origin.
        XCTAssertTrue(HTTPHeader.isSensitive(name: "DPoP"))
        XCTAssertEqual(Redaction.headerValue(proof, name: "DPoP", redacting: true), Redaction.placeholder)
        var request = URLRequest(url: URL(string: "https://api.example.com/me")!)
        request.setValue(proof, forHTTPHeaderField: "DPoP")
        XCTAssertFalse(cURLCommand(for: request).contains(proof))
    }

    /// Checks that hold: AWS's names already carry `token` and `signature`; a Digest credential's `response` is hidden
    /// by value when a server quotes it alone.
    func testAWSAndDigestCredentialsAreHidden() {
        XCTAssertTrue(HTTPHeader.isSensitive(name: "X-Amz-Security-Token"))
        XCTAssertTrue(HTTPHeader.isSensitive(name: "X-Amz-Signature"))
        XCTAssertEqual(
            Redaction.urlText("https://b.s3.example/k?X-Amz-Security-Token=st-123456&X-Amz-Signature=sg-654321"),
            "https://b.s3.example/k?X-Amz-Security-Token=<redacted>&X-Amz-Signature=<redacted>")
        var request = URLRequest(url: URL(string: "https://api.example.com/dir/index.html")!)
        let digest =
            #"Digest username="Mufasa", realm="testrealm@host.com", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", "#
            + #"uri="/dir/index.html", qop=auth, nc=00000001, cnonce="0a4f113b", "#
            + #"response="6629fae49393a05397450978507c4ef1""#
        request.setValue(digest, forHTTPHeaderField: "Authorization")
        XCTAssertFalse(cURLCommand(for: request).contains("6629fae49393a05397450978507c4ef1"))
        let secrets = SecretValues(of: request)
        XCTAssertEqual(
            secrets.hiding(in: "response 6629fae49393a05397450978507c4ef1 does not match"),
            "response <redacted> does not match")
    }

    /// A client authenticated by a signed JWT (`client_assertion`, RFC 7523 §2.2, or the `assertion` of the JWT bearer
    /// grant, §2.1) sends it as its credential; a key's `passphrase` opens the key.
    func testAnAssertionAndAPassphraseAreHidden() {
        let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJhcHAifQ.c2lnbmVk"
        let form = shown(
            "grant_type=client_credentials&client_id=app"
                + "&client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer"
                + "&client_assertion=\(jwt)", "application/x-www-form-urlencoded")
        XCTAssertFalse(form.contains(jwt), form)
        XCTAssertTrue(form.contains("client_id=app"), form)
        XCTAssertEqual(
            shown(#"{"grant_type":"urn:ietf:params:oauth:grant-type:jwt-bearer","assertion":"\#(jwt)"}"#),
            #"{"assertion":"<redacted>","grant_type":"urn:ietf:params:oauth:grant-type:jwt-bearer"}"#)
        XCTAssertEqual(shown(#"{"key_passphrase":"correct horse"}"#), #"{"key_passphrase":"<redacted>"}"#)
        XCTAssertTrue(HTTPHeader.isSensitive(name: "X-Goog-IAP-JWT-Assertion"))
    }

    /// `client_assertion_type` holds a public URN (RFC 7521 §4.2), and `token_type` a scheme such as `Bearer`: the
    /// types of credentials, not credentials. They were hidden because their names hold `assertion` and `token`.
    func testTheTypeOfAnAssertionOrATokenIsShown() {
        let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJhcHAifQ.c2lnbmVk"
        let urn = "urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer"
        let form = shown(
            "client_assertion_type=\(urn)&client_assertion=\(jwt)&subject_token_type=urn%3Aietf%3Aparams%3Aoauth"
                + "%3Atoken-type%3Aaccess_token", "application/x-www-form-urlencoded")
        XCTAssertEqual(
            form,
            "client_assertion_type=\(urn)&client_assertion=<redacted>"
                + "&subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token")
        XCTAssertEqual(
            shown(#"{"access_token":"tok-123456789","client_assertion_type":"urn:x","token_type":"Bearer"}"#),
            #"{"access_token":"<redacted>","client_assertion_type":"urn:x","token_type":"Bearer"}"#)
        for name in ["client_assertion_type", "token_type", "requested_token_type", "X-Token-Type"] {
            XCTAssertFalse(HTTPHeader.isSensitive(name: name), name)
        }
        for name in ["client_assertion", "type_token", "token_typed", "id_token"] {
            XCTAssertTrue(HTTPHeader.isSensitive(name: name), name)
        }
    }

    /// Keys named for what they open rather than as an "API key": Datadog's `DD-APPLICATION-KEY`, New Relic's
    /// `X-License-Key`, an `app_key` query item, a `master_key`, `admin_key`, `client_key`, `signing_key` or
    /// `encryption_key` field. Keys that open nothing stay shown (`Idempotency-Key`, `Sec-WebSocket-Key`,
    /// `publishable_key`, `cache_key`).
    func testKeysNamedForWhatTheyOpenAreHidden() {
        for name in [
            "DD-APPLICATION-KEY", "X-License-Key", "app_key", "X-Master-Key", "admin_key", "client_key", "signing_key",
            "encryption_key",
        ] {
            XCTAssertTrue(HTTPHeader.isSensitive(name: name), name)
        }
        for name in ["Idempotency-Key", "Sec-WebSocket-Key", "publishable_key", "cache_key", "key_id"] {
            XCTAssertFalse(HTTPHeader.isSensitive(name: name), name)
        }
        XCTAssertEqual(
            Redaction.urlText("https://api.example.com/v1/query?api_key=k-111111&application_key=k-222222"),
            "https://api.example.com/v1/query?api_key=<redacted>&application_key=<redacted>")
    }
}
