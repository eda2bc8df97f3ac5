import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A name/value pair (`{"name":"Authorization","value":"Bearer …"}`, as HAR files and servers that echo a request's
/// header list write one) keeps its secret under a neutral key: its `value` is hidden when its `name` or `key` names a
/// secret.
final class NameValuePairRedactionTests: XCTestCase {
    private func shown(_ body: String, _ type: String = "application/json", pretty: Bool = false) -> String {
        Redaction.bodyText(Data(body.utf8), contentType: type, redacting: true, pretty: pretty)
    }

    func testTheValueOfANameValuePairNamingASecretIsHidden() {
        let body =
            #"{"headers":[{"name":"Authorization","value":"Bearer nv-SECRET-4242"},"#
            + #"{"name":"Accept","value":"application/json"}],"#
            + #""queryString":[{"Key":"api_key","Value":"nv-KEY-777888"}],"tags":[{"key":"env","value":"prod"}]}"#
        for pretty in [false, true] {
            let text = shown(body, pretty: pretty)
            XCTAssertFalse(text.contains("nv-SECRET-4242"), text)
            XCTAssertFalse(text.contains("nv-KEY-777888"), text)
            XCTAssertTrue(text.contains("application/json"), "a pair naming no secret is shown: \(text)")
            XCTAssertTrue(text.contains("prod"), text)
            XCTAssertTrue(text.contains("Authorization"), "the name is shown: \(text)")
        }
    }

    func testAnErrorsExcerptAndDebugOutputHideANameValuePairsSecret() {
        let logger = MemoryLogger()
        let echoed = #"{"error":"denied","received":[{"name":"X-Api-Key","value":"nv-ECHO-123456"}]}"#
        let connect = Connect(
            transport: FakeTransport.answering(.json(string: echoed, status: 403)), retryPolicy: nil,
            settings: Connect.Settings(logger: logger))
        let error = connectError(
            of: connect.request(Route("/me", baseURL: URL(string: "https://api.example.com")!), debugResponse: true))
        var outputs = [String(describing: error), String(reflecting: error)] + logger.messages
        var dumped = ""
        dump(error, to: &dumped)
        outputs.append(dumped)
        for text in outputs { XCTAssertFalse(text.contains("nv-ECHO-123456"), text) }
    }

    /// A value given to be sent as JSON (a parameter, a ``JSONValue``) is printed as the body it becomes: the pair's
    /// secret hidden there too, and wherever else it shows.
    func testAPrintedParameterHidesANameValuePairsSecret() {
        let pair = JSONValue.object(["name": "X-Api-Key", "value": "nv-PARAM-314159"])
        let parameter = Parameter.jsonObject(
            JSONValue.object(["headers": .array([pair]), "note": "sent nv-PARAM-314159", "name": "report"]))
        var dumped = ""
        dump(parameter, to: &dumped)
        for shown in [String(describing: parameter), String(reflecting: parameter), dumped] {
            XCTAssertFalse(shown.contains("nv-PARAM-314159"), shown)
            XCTAssertTrue(shown.contains("report"), shown)
        }
    }
}
