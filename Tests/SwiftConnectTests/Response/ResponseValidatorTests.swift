import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a rejection by a validator or a processor carries.
final class ResponseValidatorTests: XCTestCase {
    /// A validator or processor may throw a `ConnectError` of its own; it is kept as thrown, and gets the
    /// response's status, headers, body and request where it has none (it had none of them before).
    func testAConnectErrorThrownByAValidatorOrProcessorGetsTheResponsesContext() throws {
        let own = ConnectError(.rejected, message: "no ETag")
        let transport = FakeTransport.answering(.data(Data("{}".utf8), status: 200, headers: ["X-Id": "r7"]))
        let connect = Connect(transport: transport, retryPolicy: nil)
        for options in [
            RequestOptions(validators: [AnyResponseValidator { _ in throw own }]),
            RequestOptions(processors: [AnyResponseProcessor { _ in throw own }]),
        ] {
            let error = try XCTUnwrap(connectError(of: connect.request(ClientFixtures.Endpoint(), options: options)))
            XCTAssertEqual(error.kind, .rejected)
            XCTAssertEqual(error.message, "no ETag")
            XCTAssertEqual(error.statusCode, 200)
            XCTAssertEqual(error.headers["X-Id"], "r7")
            XCTAssertEqual(error.body, Data("{}".utf8))
            XCTAssertEqual(error.request?.url?.absoluteString, "https://api.example.com/items")
        }
    }

    /// `ResponseProcessor`'s documented example: an envelope whose `data` is an object, an array, a plain value or
    /// `null` unwraps without stopping the process (the earlier example's `JSONSerialization.data(withJSONObject:)`
    /// stops it for a top level that is neither an array nor an object, which `try` cannot catch).
    func testTheDocumentedUnwrapDataProcessorTakesEveryKindOfData() throws {
        struct UnwrapData: ResponseProcessor {
            func process(_ response: ConnectResponse) throws -> ConnectResponse {
                let envelope = try JSONDecoder().decode(JSONValue.self, from: response.data)
                var response = response
                response.data = try JSONEncoder().encode(envelope["data"] ?? .null)
                return response
            }
        }
        let cases = [
            (#"{"data":{"id":1}}"#, #"{"id":1}"#), (#"{"data":[1]}"#, "[1]"), (#"{"data":"ok"}"#, #""ok""#),
            (#"{"data":null}"#, "null"), ("{}", "null"),
        ]
        for (body, unwrapped) in cases {
            let transport = FakeTransport.answering(.json(string: body))
            let connect = Connect(transport: transport, retryPolicy: nil)
            let data = connect.request(ClientFixtures.Endpoint(), options: RequestOptions(processors: [UnwrapData()]))
            XCTAssertEqual(try data.wait(timeout: 5), Data(unwrapped.utf8), body)
        }
    }
}
