import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Bodies in the single-byte charset their `Content-Type` declares (`charset=ISO-8859-1`, `windows-1252`), as
/// servers on older stacks send them: error messages, error pages and answers are read in that charset.
final class BodyCharsetTests: XCTestCase {
    typealias Endpoint = ClientFixtures.Endpoint
    typealias Todo = ClientFixtures.Todo

    /// `text` in `encoding`, which must hold it.
    private func encoded(_ text: String, _ encoding: String.Encoding) throws -> Data {
        try XCTUnwrap(text.data(using: encoding), "\(text) in \(encoding)")
    }

    private func client(
        _ body: Data, status: Int, contentType: String, errorHandler: any ErrorHandling = ErrorHandler()
    ) -> Connect {
        Connect(
            transport: FakeTransport.answering(.data(body, status: status, headers: ["Content-Type": contentType])),
            errorHandler: errorHandler, retryPolicy: nil)
    }

    // MARK: - Error bodies

    /// The message of a Latin-1 error body is found: its `é` is not UTF-8, and the body was taken for no JSON at all
    /// (an HTTP-status error, the server's message lost).
    func testTheMessageOfAnErrorBodyInItsDeclaredCharsetIsFound() throws {
        let cases: [(body: String, encoding: String.Encoding, contentType: String)] = [
            (#"{"message":"Café fermé"}"#, .isoLatin1, "application/json; charset=ISO-8859-1"),
            (#"{"error":"Prix: 5 €"}"#, .windowsCP1252, "application/json;charset=windows-1252"),
            (#"{"detail":"Zażółć gęślą jaźń"}"#, .isoLatin2, #"application/problem+json; Charset="iso-8859-2""#),
        ]
        for (text, encoding, contentType) in cases {
            let body = try encoded(text, encoding)
            XCTAssertNil(String(data: body, encoding: .utf8), "the test's body must not be UTF-8")
            let error = try XCTUnwrap(
                connectError(of: client(body, status: 422, contentType: contentType).request(Endpoint())))
            let expected = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String])
                .values.first
            XCTAssertEqual(error.kind, .serverMessage, contentType)
            XCTAssertEqual(error.message, expected, contentType)
            XCTAssertEqual(error.body, body, "the body is kept as it came")
        }
    }

    /// A handler of the usage guide's kind is given the object of a Latin-1 error body.
    func testACustomHandlerIsGivenTheObjectOfAnErrorBodyInItsDeclaredCharset() throws {
        struct CodeHandler: ErrorHandlerProtocol {
            func handle(response: [String: Any]) -> (any Error)? {
                ConnectError(.serverMessage, message: "\(response["code"] ?? "none"): \(response["reason"] ?? "none")")
            }
        }
        let body = try encoded(#"{"code":7,"reason":"accès refusé"}"#, .isoLatin1)
        let connect = client(
            body, status: 403, contentType: "application/json; charset=latin1", errorHandler: CodeHandler())
        XCTAssertEqual(connectError(of: connect.request(Endpoint()))?.message, "7: accès refusé")
    }

    /// A UTF-8 body labelled Latin-1 (a common misconfiguration) is read as UTF-8, not made mojibake (`CafÃ©`).
    func testAUTF8ErrorBodyLabelledLatin1IsReadAsUTF8() {
        let body = Data(#"{"message":"Café"}"#.utf8)
        let connect = client(body, status: 400, contentType: "application/json; charset=iso-8859-1")
        XCTAssertEqual(connectError(of: connect.request(Endpoint()))?.message, "Café")
    }

    /// The excerpt of a Latin-1 error page in the debug description is its text, not "<36 bytes of binary data>".
    func testTheBodyExcerptOfAnErrorPageInItsDeclaredCharsetIsItsText() throws {
        let body = try encoded("<html><title>Erreur interne du système</title></html>", .isoLatin1)
        let connect = client(body, status: 500, contentType: "text/html; charset=ISO-8859-1")
        let error = try XCTUnwrap(connectError(of: connect.request(Endpoint())))
        XCTAssertEqual(error.kind, .httpStatus)
        XCTAssertTrue(error.debugDescription.contains("Erreur interne du système"), error.debugDescription)
    }

    /// The five bytes windows-1252 leaves undefined do not make a Latin-1 body unreadable; an unknown charset, a
    /// byte order mark and valid UTF-8 leave the body as it is.
    func testWhatIsConvertedAndWhatIsNot() {
        let bytes = Data([0x41, 0x81, 0xE9, 0x80])
        XCTAssertEqual(
            BodyCharset.utf8(bytes, contentType: "text/plain; charset=iso-8859-1"), Data("A\u{81}é\u{80}".utf8))
        XCTAssertEqual(
            BodyCharset.utf8(Data([0x41, 0xE9, 0x80]), contentType: "text/plain; charset=cp1252"), Data("Aé€".utf8))
        XCTAssertEqual(BodyCharset.utf8(bytes, contentType: "text/plain; charset=x-unknown"), bytes)
        XCTAssertEqual(BodyCharset.utf8(bytes, contentType: "text/plain"), bytes)
        XCTAssertEqual(BodyCharset.utf8(bytes, contentType: nil), bytes)
        let marked = Data([0xFF, 0xFE, 0x41, 0x00])
        XCTAssertEqual(BodyCharset.utf8(marked, contentType: "text/plain; charset=latin1"), marked)
        let utf8 = Data("Aé".utf8)
        XCTAssertEqual(BodyCharset.utf8(utf8, contentType: "text/plain; charset=latin1"), utf8)
    }

    // MARK: - Decoding

    /// An answer in its declared single-byte charset decodes, by `decoded(toType:)` and by a typed connector.
    func testAnAnswerInItsDeclaredCharsetDecodes() throws {
        let body = try encoded(#"{"userId":1,"id":2,"title":"Crème brûlée","completed":false}"#, .isoLatin1)
        let connect = client(body, status: 200, contentType: "application/json; charset=ISO-8859-1")

        let decoded = value(of: connect.request(Endpoint()).decoded(toType: Todo.self))
        XCTAssertEqual(decoded?.title, "Crème brûlée")
        let sent = value(of: connect.send(ClientFixtures.GetTodo(id: 2)))
        XCTAssertEqual(sent?.title, "Crème brûlée")
    }

    /// A UTF-8 answer labelled Latin-1 decodes as UTF-8; a body not valid in UTF-8 without a charset still fails.
    func testOnlyABodyThatIsNotUTF8IsReadInTheDeclaredCharset() throws {
        let utf8 = Data(#"{"userId":1,"id":2,"title":"Crème","completed":false}"#.utf8)
        let labelled = client(utf8, status: 200, contentType: "application/json; charset=ISO-8859-1")
        XCTAssertEqual(value(of: labelled.request(Endpoint()).decoded(toType: Todo.self))?.title, "Crème")

        let latin1 = try encoded(#"{"userId":1,"id":2,"title":"Crème","completed":false}"#, .isoLatin1)
        let undeclared = client(latin1, status: 200, contentType: "application/json")
        XCTAssertEqual(connectError(of: undeclared.request(Endpoint()).decoded(toType: Todo.self))?.kind, .decoding)
    }
}
