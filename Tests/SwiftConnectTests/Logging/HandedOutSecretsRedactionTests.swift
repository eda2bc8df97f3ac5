import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A body that hands out a secret under a secret name (a token endpoint's `access_token`) may quote it again under
/// another (`"message": "use tok… as your bearer"`, a `links` URL carrying it): shown, the body hides it there too,
/// as a recording does, and as a ``JSONObject`` hides what its secret keys hold wherever else it shows.
final class HandedOutSecretsRedactionTests: XCTestCase {
    private let token = "tok-HANDED-8642097531"

    func testASecretABodyHandsOutIsHiddenWhereverTheBodyQuotesIt() {
        let body =
            #"{"access_token":"\#(token)","token_type":"Bearer","#
            + #""message":"Use \#(token) as your bearer token.","items":[{"hint":"\#(token)"}]}"#
        for pretty in [false, true] {
            let shown = Redaction.bodyText(
                Data(body.utf8), contentType: "application/json", redacting: true, pretty: pretty)
            XCTAssertFalse(shown.contains(token), shown)
            XCTAssertTrue(shown.contains("as your bearer token."), shown)
        }
    }

    func testAnErrorsExcerptAndDebugOutputHideASecretTheBodyHandsOut() {
        let logger = MemoryLogger()
        let body = #"{"error":"conflict","session_id":"\#(token)","detail":"session \#(token) is open elsewhere"}"#
        let connect = Connect(
            transport: FakeTransport.answering(.json(string: body, status: 409)), retryPolicy: nil,
            settings: Connect.Settings(logger: logger))
        let error = connectError(
            of: connect.request(Route("/login", baseURL: URL(string: "https://api.example.com")!), debugResponse: true))
        var dumped = ""
        dump(error, to: &dumped)
        for text in [String(reflecting: error), dumped] + logger.messages {
            XCTAssertFalse(text.contains(token), text)
        }
    }

    /// The server's message, as the error handler takes it from the body, can quote what the body hands out.
    func testAnErrorsMessageHidesASecretTheBodyHandsOut() throws {
        let body = #"{"error":"session \#(token) is open elsewhere","session_id":"\#(token)"}"#
        let connect = Connect(transport: FakeTransport.answering(.json(string: body, status: 409)), retryPolicy: nil)
        let error = try XCTUnwrap(
            connectError(of: connect.request(Route("/login", baseURL: URL(string: "https://api.example.com")!))))
        // The body stays as the server sent it, for code that needs it.
        XCTAssertTrue(String(decoding: error.body ?? Data(), as: UTF8.self).contains(token))
        for text in [error.message, String(describing: error), error.localizedDescription, String(reflecting: error)] {
            XCTAssertFalse(text.contains(token), text)
            XCTAssertTrue(text.contains("is open elsewhere"), text)
        }
    }

    /// The error handler reads a JSON body in UTF-16 or UTF-32 (by its byte order mark, or the zeros of its first
    /// character) and in the single-byte charset it declares: the secrets it hands out are read from it the same way,
    /// and hidden from the message it gives.
    func testAnErrorsMessageHidesASecretABodyInAnotherEncodingHandsOut() throws {
        let json = #"{"message": "session \#(token) is open elsewhere, café", "session_id": "\#(token)"}"#
        let bodies: [(Data, String)] = [
            (Data([0xFF, 0xFE]) + json.data(using: .utf16LittleEndian)!, "application/json"),
            (json.data(using: .utf16BigEndian)!, "application/json"),
            (json.data(using: .utf32BigEndian)!, "application/json"),
            (Data([0x00, 0x00, 0xFE, 0xFF]) + json.data(using: .utf32BigEndian)!, "application/json"),
            (json.data(using: .isoLatin1)!, "application/json; charset=iso-8859-1"),
        ]
        for (body, contentType) in bodies {
            let connect = Connect(
                transport: FakeTransport.answering(.data(body, status: 409, headers: ["Content-Type": contentType])),
                retryPolicy: nil)
            let error = try XCTUnwrap(
                connectError(of: connect.request(Route("/login", baseURL: URL(string: "https://api.example.com")!))))
            XCTAssertEqual(error.kind, .serverMessage, contentType)
            for text in [error.message, String(describing: error), String(reflecting: error)] {
                XCTAssertFalse(text.contains(token), text)
                XCTAssertTrue(text.contains("is open elsewhere, café"), text)
            }
        }
    }

    /// What a validation error holds under a field's name is a message about it, not a secret: shown wherever else the
    /// body quotes it (the field itself is still hidden by name).
    func testAValidationMessageUnderASecretNameIsNotHiddenElsewhere() throws {
        let body =
            #"{"errors":{"password":["is too short"],"token":"required"},"#
            + #""message":"password is too short; token required"}"#
        let shown = Redaction.bodyText(Data(body.utf8), contentType: "application/json", redacting: true, pretty: false)
        XCTAssertTrue(shown.contains(#""message":"password is too short; token required""#), shown)
        let connect = Connect(transport: FakeTransport.answering(.json(string: body, status: 422)), retryPolicy: nil)
        let error = try XCTUnwrap(
            connectError(of: connect.request(Route("/users", baseURL: URL(string: "https://api.example.com")!))))
        XCTAssertTrue(String(describing: error).contains("password is too short; token required"), "\(error)")
    }
}
