import Foundation
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The rules of redaction by value: which values a request's secrets are, in which forms they are hidden, and
/// how short values are treated.
final class SecretValuesTests: XCTestCase {
    private func request(
        url: String = "https://api.example.com/me", headers: [String: String] = [:], body: String? = nil,
        contentType: String? = nil
    ) -> URLRequest {
        var request = URLRequest(url: URL(string: url)!)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
        request.httpBody = body.map { Data($0.utf8) }
        return request
    }

    func testValuesUnderFourCharactersAreNotHiddenByValue() {
        let secrets = SecretValues(of: request(headers: ["X-Api-Key": "abc"]))
        XCTAssertTrue(secrets.isEmpty)
        XCTAssertEqual(secrets.hiding(in: "abc is the key"), "abc is the key")
    }

    func testValuesUnderSixCharactersAreHiddenOnlyAsWholeWords() {
        let secrets = SecretValues(of: request(headers: ["X-Api-Key": "k9x2q"]))
        XCTAssertEqual(secrets.hiding(in: "key k9x2q rejected"), "key <redacted> rejected")
        XCTAssertEqual(secrets.hiding(in: "\"k9x2q\","), "\"<redacted>\",")
        XCTAssertEqual(secrets.hiding(in: "k9x2q"), "<redacted>")
        // Inside a longer word it is ordinary text.
        XCTAssertEqual(secrets.hiding(in: "ak9x2qz k9x2q9"), "ak9x2qz k9x2q9")
    }

    func testLongValuesAreHiddenAnywhere() {
        let secrets = SecretValues(of: request(headers: ["Authorization": "Bearer abcdef123"]))
        XCTAssertEqual(secrets.hiding(in: "token=xabcdef123y"), "token=x<redacted>y")
    }

    /// Two `Authorization` fields, joined by `URLRequest`: the second credential was hidden only with its neighbour.
    func testEachCredentialOfJoinedRepeatedFieldsIsHidden() {
        var request = URLRequest(url: URL(string: "https://api.example.com/me")!)
        request.addValue("Bearer tokA-SECRET-1", forHTTPHeaderField: "Authorization")
        request.addValue("Bearer tokB-SECRET-2", forHTTPHeaderField: "Authorization")
        let secrets = SecretValues(of: request)
        XCTAssertEqual(
            secrets.hiding(in: #"{"seen":"tokB-SECRET-2","first":"tokA-SECRET-1"}"#),
            #"{"seen":"<redacted>","first":"<redacted>"}"#)
    }

    /// A credential written as auth-params (AWS Signature Version 4, OAuth 1.0a) is hidden whole, and each param named
    /// like a secret on its own too: a server's error that quotes the signature it got shows none. A param whose name
    /// is not a secret's (`SignedHeaders`, `realm`) is not hidden by value.
    func testTheSecretParamsOfAnAuthParamsCredentialAreHiddenOneByOne() {
        // Given
        let signature = "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024"
        let sigV4 =
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20130524/us-east-1/s3/aws4_request, "
            + "SignedHeaders=host;range;x-amz-date, Signature=\(signature)"
        let oauth =
            #"OAuth realm="photos", oauth_consumer_key="dpf43f3p2l4k3l03", oauth_token="nnch734d00sl2jdk", "#
            + #"oauth_signature="tR3%2BTy81lMeYAr%2FFid0kMTYa%2FWM%3D""#
        // When
        let aws = SecretValues(of: request(headers: ["Authorization": sigV4]))
        let oauth1 = SecretValues(of: request(headers: ["Authorization": oauth]))
        // Then
        XCTAssertEqual(
            aws.hiding(in: "the signature you provided: \(signature); signed host;range;x-amz-date"),
            "the signature you provided: <redacted>; signed host;range;x-amz-date")
        XCTAssertEqual(
            oauth1.hiding(in: "token nnch734d00sl2jdk, signature tR3%2BTy81lMeYAr%2FFid0kMTYa%2FWM%3D, realm photos"),
            "token <redacted>, signature <redacted>, realm photos")
    }

    func testALongerValueIsHiddenWholeBeforeAShorterOneInsideIt() {
        let secrets = SecretValues(values: ["secret-1", "secret-12345"])
        XCTAssertEqual(secrets.hiding(in: "secret-12345 secret-1"), "<redacted> <redacted>")
    }

    func testBasicCredentialsGiveTheBase64ThePairAndThePasswordButNotTheUsername() {
        let base64 = Data("amy:hunter22".utf8).base64EncodedString()
        let secrets = SecretValues(of: request(headers: ["Authorization": "Basic \(base64)"]))
        XCTAssertEqual(
            secrets.hiding(in: "\(base64) amy:hunter22 hunter22 amy"), "<redacted> <redacted> <redacted> amy")
    }

    func testUserInfoGivesThePasswordAndTheBasicCredentialsItBecomes() {
        let secrets = SecretValues(of: request(url: "https://amy:pa55word@api.example.com/"))
        let base64 = Data("amy:pa55word".utf8).base64EncodedString()
        XCTAssertEqual(secrets.hiding(in: "pa55word \(base64)"), "<redacted> <redacted>")
    }

    /// An API key sent as the username with no password (Stripe's `sk_live_…:`, GitHub's `https://TOKEN@…`): the
    /// username is the credential then, and an echo of it (an error saying "invalid API key sk_live_…") is hidden,
    /// as is the `Authorization: Basic` the engine makes of it.
    func testAUsernameWithoutAPasswordIsTheCredential() {
        let key = "sk_live_4eC39HqLyjWDarjt"
        let basic = Data("\(key):".utf8).base64EncodedString()
        for url in ["https://\(key)@api.example.com/v1", "https://\(key):@api.example.com/v1"] {
            let secrets = SecretValues(of: request(url: url))
            XCTAssertEqual(
                secrets.hiding(in: "invalid API key \(key); Basic \(basic)"),
                "invalid API key <redacted>; Basic <redacted>", url)
        }
        let header = SecretValues(of: request(headers: ["Authorization": "Basic \(basic)"]))
        XCTAssertEqual(header.hiding(in: "invalid API key \(key)"), "invalid API key <redacted>")
        // With a password, the username names an account and stays readable.
        let withPassword = SecretValues(of: request(url: "https://amy-admin:pa55word@api.example.com/"))
        XCTAssertEqual(withPassword.hiding(in: "amy-admin pa55word"), "amy-admin <redacted>")
    }

    /// A cookie's value is hidden by value when it is a secret's: its name is one's (`session`), or it reads as a
    /// credential (`sid=a1b2c3d4`). A preference's (`theme=darkmode`, `cookie_consent=true`) is not: hiding `true`
    /// wherever it stood as a word garbled every JSON body shown beside it.
    func testCookieValuesAreHiddenOneByOneWhenTheyAreSecrets() {
        let secrets = SecretValues(
            of: request(headers: ["Cookie": "session=s3ss10n-id; sid=a1b2c3d4; theme=darkmode; cookie_consent=true"]))
        XCTAssertEqual(
            secrets.hiding(in: #"s3ss10n-id a1b2c3d4 darkmode {"enabled": true}"#),
            #"<redacted> <redacted> darkmode {"enabled": true}"#)
        var fields = HeaderFields()
        fields.append(HeaderField(name: .setCookie, value: "cookie_consent=true; Path=/"))
        fields.append(HeaderField(name: .setCookie, value: "sid=Zx81kq0pQ; HttpOnly"))
        XCTAssertEqual(SecretValues.values(handedOutIn: fields), ["Zx81kq0pQ"])
    }

    func testSecretQueryItemsAndFragmentPairsAreHiddenDecodedAndEncoded() {
        let secrets = SecretValues(
            of: request(url: "https://api.example.com/cb?access_token=a%2Bb%20c%2Fd&page=2#id_token=fr4gment-t0k"))
        XCTAssertEqual(
            secrets.hiding(in: "a+b c/d a%2Bb%20c%2Fd a%2Bb+c%2Fd fr4gment-t0k page=2"),
            "<redacted> <redacted> <redacted> <redacted> page=2")
    }

    /// RFC 3986 makes `%2f` and `%2F` the same octet: an echo that writes a secret's escapes in the other case (an
    /// encoder that writes lower case, a server that re-encodes the query it got) is hidden, in any mix of cases, but
    /// the letters outside escapes are still compared as they are.
    func testPercentEscapesOfASecretAreMatchedInEitherCaseOfTheirHexDigits() {
        let upper = SecretValues(of: request(url: "https://api.example.com/cb?access_token=tok%2Fab%2Bcd%3Dxyz"))
        let lower = SecretValues(of: request(url: "https://api.example.com/cb?access_token=tok%2fab%2bcd%3dxyz"))
        for secrets in [upper, lower] {
            XCTAssertEqual(secrets.hiding(in: "seen tok%2fab%2bcd%3dxyz"), "seen <redacted>")
            XCTAssertEqual(secrets.hiding(in: "seen tok%2Fab%2Bcd%3Dxyz"), "seen <redacted>")
            XCTAssertEqual(secrets.hiding(in: "seen tok%2fab%2Bcd%3dxyz!"), "seen <redacted>!")
            // Letters outside an escape are not folded: another value.
            XCTAssertEqual(secrets.hiding(in: "seen TOK%2fab%2bcd%3dXYZ"), "seen TOK%2fab%2bcd%3dXYZ")
        }
        // A short value, hidden only as a whole word, alike.
        let short = SecretValues(values: ["ab%2F"])
        XCTAssertEqual(short.hiding(in: "x ab%2f y xab%2fz"), "x <redacted> y xab%2fz")
    }

    func testJSONBodySecretsAtAnyDepthIncludingNumbersAndJSONEscapedForms() {
        let body = #"{"user":{"name":"amy","password":"p/ss \"w0rd\""},"pin":{"code":918273},"ok":true}"#
        let secrets = SecretValues(of: request(body: body, contentType: "application/json"))
        XCTAssertEqual(secrets.hiding(in: #"p/ss "w0rd""#), "<redacted>")
        XCTAssertEqual(secrets.hiding(in: #"p\/ss \"w0rd\""#), "<redacted>")
        XCTAssertEqual(secrets.hiding(in: #"p/ss \"w0rd\""#), "<redacted>")
        XCTAssertEqual(secrets.hiding(in: "p%2Fss%20%22w0rd%22"), "<redacted>")
        // Not under a secret key: shown. `pin` is not a secret name, so 918273 is ordinary text.
        XCTAssertEqual(secrets.hiding(in: "amy 918273"), "amy 918273")
    }

    func testFormAndMultipartBodySecrets() {
        let form = SecretValues(
            of: request(body: "user=amy&password=f0rm+pa55%21", contentType: "application/x-www-form-urlencoded"))
        XCTAssertEqual(form.hiding(in: "f0rm pa55! f0rm+pa55%21 amy"), "<redacted> <redacted> amy")
        let multipart = SecretValues(
            of: request(
                body: "--B\r\nContent-Disposition: form-data; name=\"api_key\"\r\n\r\nmp-k3y-value\r\n--B--\r\n",
                contentType: "multipart/form-data; boundary=B"))
        XCTAssertEqual(multipart.hiding(in: "got mp-k3y-value"), "got <redacted>")
    }

    func testNothingButSecretsIsHidden() {
        let secrets = SecretValues(
            of: request(
                headers: ["Accept": "application/json", "X-Request-Id": "req-123456"], body: #"{"name":"amy-long"}"#,
                contentType: "application/json"))
        XCTAssertTrue(secrets.isEmpty)
    }

    func testCURLCommandHidesASecretQuotedInAnotherHeaderOrField() {
        let request = request(
            headers: ["Authorization": "Bearer t0ken-abcdef", "X-Note": "sent t0ken-abcdef"],
            body: #"{"token":"t0ken-abcdef","comment":"my token is t0ken-abcdef"}"#, contentType: "application/json")
        let command = cURLCommand(for: request)
        XCTAssertFalse(command.contains("t0ken-abcdef"), command)
        XCTAssertTrue(command.contains("X-Note: sent <redacted>"), command)
        XCTAssertTrue(cURLCommand(for: request, redactingSecrets: false).contains("my token is t0ken-abcdef"))
    }

    func testAnErrorMessageHidesTheRequestsSecretsButTheBodyKeepsThem() {
        let request = request(headers: ["Authorization": "Bearer t0ken-abcdef"])
        let body = Data(#"{"message":"invalid token t0ken-abcdef"}"#.utf8)
        var error = ConnectError(.serverMessage, message: "invalid token t0ken-abcdef", request: request, body: body)
        XCTAssertEqual(error.message, "invalid token <redacted>")
        XCTAssertFalse(error.debugDescription.contains("t0ken-abcdef"), error.debugDescription)
        XCTAssertEqual(error.body, body)
        error = ConnectError.showingSecrets(error) as! ConnectError
        XCTAssertEqual(error.message, "invalid token t0ken-abcdef")
    }
}
