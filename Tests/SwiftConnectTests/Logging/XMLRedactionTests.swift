import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// XML bodies in what SwiftConnect prints: the content of an element named like a secret (`<password>`, `<token>`)
/// and the value of an attribute named like one are hidden, as a JSON body's sensitive keys are. They showed as
/// they came, in cURL output, `debugResponse` logs and an error's description.
final class XMLRedactionTests: XCTestCase {
    private func shown(_ xml: String, contentType: String? = "application/xml") -> String {
        Redaction.bodyText(Data(xml.utf8), contentType: contentType, redacting: true, pretty: false)
    }

    func testSensitiveElementsAndAttributesAreHiddenAndTheRestShown() {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <login lang="en" apiKey="KEY-SECRET1"><user>amy</user><password>HUNTER-SECRET2</password>\
            <auth:accessToken xmlns:auth="urn:a">TOKEN-SECRET3</auth:accessToken><note>hi</note></login>
            """
        for contentType in ["application/xml; charset=utf-8", "text/xml", "application/soap+xml", nil] {
            let text = shown(xml, contentType: contentType)
            XCTAssertFalse(text.contains("SECRET"), text)
            XCTAssertTrue(
                text.contains(
                    #"<login lang="en" apiKey="<redacted>"><user>amy</user><password><redacted></password>"#
                        + #"<auth:accessToken xmlns:auth="urn:a"><redacted></auth:accessToken><note>hi</note>"#),
                text)
        }
    }

    /// Everything inside a sensitive element is hidden, nested elements, CDATA and a comment's `>` included; an
    /// element left open (a body cut short) is hidden to the end; an empty one and a lookalike in a comment change
    /// nothing.
    func testTheWholeContentOfASensitiveElementIsHiddenEvenNestedOrLeftOpen() {
        XCTAssertEqual(
            shown("<a><credentials><user>amy</user><pin>SECRET4</pin></credentials><b>1</b></a>"),
            "<a><credentials><redacted></credentials><b>1</b></a>")
        XCTAssertEqual(
            shown("<a><secret><![CDATA[</secret>SECRET5]]><!-- > --></secret><b/></a>"),
            "<a><secret><redacted></secret><b/></a>")
        XCTAssertEqual(shown("<a><token>SECRET6 and more"), "<a><token><redacted>")
        XCTAssertEqual(
            shown("<a><token/><!-- <password>x</password> --><b>1</b></a>"),
            "<a><token/><!-- <password>x</password> --><b>1</b></a>")
        XCTAssertEqual(shown("<a><b>1</b></a>"), "<a><b>1</b></a>", "nothing sensitive: shown as it came")
    }

    /// A quote in a comment or a processing instruction of a DOCTYPE's internal subset is text, not the start of a
    /// literal: read as one, the DOCTYPE ran on to the next quote, or to the end, and the secrets after it showed.
    func testAQuoteInACommentOrInstructionOfADoctypeHidesNoSecret() {
        for markup in ["<!-- the user's login -->", #"<!-- say "hi -->"#, "<?note it's ?>", #"<?note "?>"#] {
            let xml = "<!DOCTYPE login [\(markup)<!ELEMENT login ANY>]><login><password>SECRET9</password></login>"
            XCTAssertEqual(
                shown(xml),
                "<!DOCTYPE login [\(markup)<!ELEMENT login ANY>]><login><password><redacted></password></login>")
        }
    }

    /// A name/value pair whose name is a secret's (AWS's `<Key>…</Key><Value>…</Value>`, a SOAP parameter's
    /// `<Name>`, a config's `<add key="…" value="…"/>`) hides its value, in either order, as a JSON pair does; a pair
    /// with an ordinary name is shown. The values showed.
    func testTheValueOfANameValuePairNamedLikeASecretIsHidden() {
        XCTAssertEqual(
            shown(
                "<Tags><Tag><Key>api_key</Key><Value>AKIA-SECRET11</Value></Tag>"
                    + "<Tag><Key>env</Key><Value>prod</Value></Tag></Tags>"),
            "<Tags><Tag><Key>api_key</Key><Value><redacted></Value></Tag>"
                + "<Tag><Key>env</Key><Value>prod</Value></Tag></Tags>")
        XCTAssertEqual(
            shown("<p><soap:Value>SECRET12</soap:Value><soap:Name> Password </soap:Name></p><Value>1</Value>"),
            "<p><soap:Value><redacted></soap:Value><soap:Name> Password </soap:Name></p><Value>1</Value>")
        XCTAssertEqual(
            shown(#"<c><add key="ApiKey" value="SECRET13"/><add key="Mode" value="fast"/></c>"#),
            #"<c><add key="ApiKey" value="<redacted>"/><add key="Mode" value="fast"/></c>"#)
        XCTAssertEqual(
            shown(#"<param name="token" value='SECRET14'/>"#), #"<param name="token" value='<redacted>'/>"#)
        XCTAssertEqual(
            shown("<a><Name>code</Name><Value><x><password>SECRET15</password></x></Value></a>"),
            "<a><Name>code</Name><Value><redacted></Value></a>")
    }

    /// A request's XML pair is a secret by value too, where an answer echoes it.
    func testAnXMLPairsSecretIsHiddenWhereTheAnswerEchoesIt() throws {
        var request = URLRequest(url: try XCTUnwrap(URL(string: "https://api.test/tags")))
        request.setValue("application/xml", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data("<Tag><Key>X-Api-Key</Key><Value>PAIR-SECRET16</Value></Tag>".utf8)

        XCTAssertEqual(SecretValues(of: request).hiding(in: "bad key PAIR-SECRET16"), "bad key <redacted>")
        XCTAssertFalse(cURLCommand(for: request).contains("PAIR-SECRET16"))
    }

    func testCURLOutputHidesTheSecretsOfAnXMLBody() throws {
        var request = URLRequest(url: try XCTUnwrap(URL(string: "https://api.test/login")))
        request.httpMethod = "POST"
        request.setValue("application/xml; charset=utf-8", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data("<login><user>amy</user><password>HUNTER-SECRET7</password></login>".utf8)

        let command = cURLCommand(for: request)

        XCTAssertFalse(command.contains("SECRET"), command)
        XCTAssertTrue(command.contains("<user>amy</user><password><redacted></password>"), command)
    }

    func testAnErrorsDescriptionAndTheDebugLogHideTheSecretsOfAnXMLAnswer() throws {
        let body = "<error><message>session expired</message><sessionToken>SESSION-SECRET8</sessionToken></error>"
        let logger = MemoryLogger()
        let transport = FakeTransport.answering(
            .data(Data(body.utf8), status: 401, headers: ["Content-Type": "application/problem+xml"]))
        let connect = Connect(transport: transport, retryPolicy: nil, settings: Connect.Settings(logger: logger))

        let route = Route(url: try XCTUnwrap(URL(string: "https://api.test/me")))

        let outcome = try connect.request(route, debugResponse: true).waitForResult(timeout: 5)

        guard case .failure(let error) = outcome else { return XCTFail("a 401 succeeded") }
        var dumped = ""
        dump(error, to: &dumped)
        let printed = ["\(error)", String(reflecting: error), dumped, logger.messages.joined(separator: "\n")]
            .joined(separator: "\n")
        XCTAssertFalse(printed.contains("SECRET"), printed)
        XCTAssertTrue(
            printed.contains("<message>session expired</message><sessionToken><redacted></sessionToken>"), printed)
    }

    /// A secret an XML request body carries is hidden by value too, where the answer echoes it under another name.
    func testAnXMLRequestBodysSecretIsHiddenWhereTheAnswerEchoesIt() throws {
        var request = URLRequest(url: try XCTUnwrap(URL(string: "https://api.test/login")))
        request.setValue("text/xml", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(
            #"<login user="amy"><password>p&amp;SECRET9</password><otp code="123456" token="TOKEN-SECRET10"/></login>"#
                .utf8)

        let secrets = SecretValues(of: request)

        XCTAssertEqual(
            secrets.hiding(in: "bad password p&SECRET9 for amy, token TOKEN-SECRET10 (escaped: p&amp;SECRET9)"),
            "bad password <redacted> for amy, token <redacted> (escaped: <redacted>)")
    }
}
