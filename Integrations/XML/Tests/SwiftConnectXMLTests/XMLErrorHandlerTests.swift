import Foundation
import SwiftConnect
import SwiftConnectTesting
import SwiftConnectXML
import XCTest

/// `XMLErrorHandler`: the message of an XML error body (S3, SOAP faults, `<error><message>`), where the default
/// handler, reading JSON only, failed with "the server answered 404" and left the message in the body.
final class XMLErrorHandlerTests: XCTestCase {
    /// The error a call fails with when the server answers `status` with `body` of `contentType`.
    private func failure(
        _ body: String, status: Int, contentType: String? = "application/xml", file: StaticString = #filePath,
        line: UInt = #line
    ) -> ConnectError? {
        failure(Data(body.utf8), status: status, contentType: contentType, file: file, line: line)
    }

    private func failure(
        _ body: Data, status: Int, contentType: String?, file: StaticString = #filePath, line: UInt = #line
    ) -> ConnectError? {
        let headers = contentType.map { ["Content-Type": $0] } ?? [:]
        let transport = FakeTransport.answering(.data(body, status: status, headers: headers))
        let connect = Connect(transport: transport, errorHandler: XMLErrorHandler(), retryPolicy: nil)
        let route = Route(url: URL(string: "https://bucket.s3.test/photos/missing.jpg")!)
        guard case .failure(let error) = Result(catching: { try connect.request(route).wait(timeout: 30) }) else {
            XCTFail("expected the call to fail", file: file, line: line)
            return nil
        }
        return error as? ConnectError
    }

    /// A connector's secret path value (`/password-reset/{token}`) stays out of the error, as the default handler
    /// keeps it out: the error was made from Foundation's request, which does not carry it.
    func testASecretPathValueStaysOutOfTheError() throws {
        struct Reset: Connector {
            var baseURL: URL { URL(string: "https://api.test")! }
            var endpoint: String { "/password-reset/{token}" }
            var method: HTTPMethod { .get }
            var headers: [HTTPHeader] { [] }
            var parameters: (any ParametersRepresentable)? { Parameter.path(key: "token", value: "T0KEN-XML-9876") }
        }
        let body = "<Error><Code>NoSuchKey</Code><Message>missing</Message></Error>"
        for handler: any ErrorHandling in [XMLErrorHandler(), ErrorHandler()] {
            let transport = FakeTransport.answering(
                .data(Data(body.utf8), status: 404, headers: ["Content-Type": "application/xml"]))
            let connect = Connect(transport: transport, errorHandler: handler, retryPolicy: nil)
            guard case .failure(let error) = Result(catching: { try connect.request(Reset()).wait(timeout: 30) })
            else { return XCTFail("expected the call to fail") }
            var dumped = ""
            dump(error, to: &dumped)
            for text in ["\(error)", String(reflecting: error), dumped] {
                XCTAssertFalse(text.contains("T0KEN-XML-9876"), "\(type(of: handler)): \(text)")
            }
        }
    }

    func testAnS3ErrorGivesItsCodeAndItsMessage() {
        let body = """
            <?xml version="1.0" encoding="UTF-8"?>
            <Error>
              <Code>NoSuchKey</Code>
              <Message>The specified key does not exist.</Message>
              <Key>photos/missing.jpg</Key>
              <RequestId>4442587FB7D0A2F9</RequestId>
            </Error>
            """
        let error = failure(body, status: 404)
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "NoSuchKey: The specified key does not exist.")
        XCTAssertEqual(error?.statusCode, 404)
        XCTAssertEqual(error?.body, Data(body.utf8), "the body is kept")
    }

    func testASOAP11FaultGivesItsCodeAndItsString() {
        let body = """
            <soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><soap:Fault>
            <faultcode>soap:Client</faultcode><faultstring>Invalid account number</faultstring>
            <detail><e:info xmlns:e="urn:x">12</e:info></detail>
            </soap:Fault></soap:Body></soap:Envelope>
            """
        XCTAssertEqual(
            failure(body, status: 500, contentType: "text/xml")?.message, "soap:Client: Invalid account number")
    }

    func testASOAP12FaultGivesItsCodeValueAndReasonText() {
        let body = """
            <env:Envelope xmlns:env="http://www.w3.org/2003/05/soap-envelope"><env:Body><env:Fault>
            <env:Code><env:Value>env:Sender</env:Value>
            <env:Subcode><env:Value>m:MessageTimeout</env:Value></env:Subcode></env:Code>
            <env:Reason><env:Text xml:lang="en">Sender Timeout</env:Text></env:Reason>
            </env:Fault></env:Body></env:Envelope>
            """
        let error = failure(body, status: 500, contentType: "application/soap+xml; charset=utf-8")
        XCTAssertEqual(error?.message, "env:Sender: Sender Timeout")
    }

    /// An XML body sent without an XML type (or with none) is still read, in the charset its type names.
    func testAnXMLBodyWithoutAnXMLTypeIsReadInItsCharset() {
        XCTAssertEqual(
            failure("  <error><message>quota exceeded</message></error>", status: 429, contentType: nil)?.message,
            "quota exceeded")
        let latin1 = Data("<error><message>caf\u{E9} ferm\u{E9}</message></error>".data(using: .isoLatin1)!)
        XCTAssertEqual(
            failure(latin1, status: 409, contentType: "text/plain; charset=ISO-8859-1")?.message, "café fermé")
    }

    /// A JSON body goes to the fallback (the default handler), HTML and an XML body without a message give the status.
    func testOtherBodiesGoToTheFallback() {
        let json = failure(#"{"message":"from JSON"}"#, status: 400, contentType: "application/json")
        XCTAssertEqual(json?.kind, .serverMessage)
        XCTAssertEqual(json?.message, "from JSON")
        let html = failure("<html><body><error>not this</error></body></html>", status: 502, contentType: "text/html")
        XCTAssertEqual(html?.kind, .httpStatus)
        let silent = failure("<Error><RequestId>42</RequestId></Error>", status: 500)
        XCTAssertEqual(silent?.kind, .httpStatus)
        XCTAssertEqual(silent?.statusCode, 500)
    }

    /// A body that declares entities is not parsed (an expansion attack, or text the parser would drop): the status,
    /// with the body kept.
    func testABodyDeclaringEntitiesIsNotRead() {
        let body = #"<!DOCTYPE e [<!ENTITY x "boom">]><error><message>&x;</message></error>"#
        let error = failure(body, status: 400)
        XCTAssertEqual(error?.kind, .httpStatus)
        XCTAssertEqual(error?.body, Data(body.utf8))
    }

    /// A body with an element of more than 256 attributes is not parsed either (the parser's time grows with the
    /// square of an element's attributes): the status, with the body kept.
    func testABodyWithAnElementOfTooManyAttributesIsNotRead() {
        let attributes = (0..<257).map { " a\($0)=\"1\"" }.joined()
        let body = "<error\(attributes)><message>Quota exceeded</message></error>"
        let error = failure(body, status: 429)
        XCTAssertEqual(error?.kind, .httpStatus)
        XCTAssertEqual(error?.body, Data(body.utf8))
    }

    /// An error body with something printed after it (a PHP warning) still gives its message: only a decoded answer
    /// is refused for content after its root element.
    func testAnErrorBodyWithContentAfterItsRootStillGivesItsMessage() {
        let body = "<error><message>Quota exceeded</message></error>\n<br />\n<b>Warning</b>: headers"
        XCTAssertEqual(failure(body, status: 429)?.message, "Quota exceeded")
    }

    /// A message on many lines, or with control characters, is one line.
    func testTheMessageIsOneLine() {
        let body = "<error><message>\n  line one\n\tline two \u{1B}[2J</message></error>"
        XCTAssertEqual(failure(body, status: 400)?.message, "line one line two [2J")
    }
}
