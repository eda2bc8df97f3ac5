import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a `ConnectError` says about itself to code that knows only `Error`: `localizedDescription`, as alerts,
/// loggers and `NSError` bridging read it.
final class ConnectErrorDescriptionTests: XCTestCase {
    /// A 403 whose message echoes the request's bearer token.
    private func forbiddenError() throws -> ConnectError {
        let token = "tok-5ecret-4321"
        let connect = Connect(
            transport: FakeTransport.answering(
                .json(string: #"{"message":"token \#(token) may not read this"}"#, status: 403)),
            retryPolicy: nil)
        let connector = ConfigurableConnector(
            baseURL: URL(string: "https://api.example.com")!, endpoint: "/reports",
            authorizationToken: .bearer(token: token))
        return try XCTUnwrap(connectError(of: connect.request(connector)))
    }

    /// Code that sees only `any Error` (an alert, a logger, a `catch` in generic code) reads `localizedDescription`:
    /// it says what the error's description says (stage, message, request, status), not Foundation's "The operation
    /// could not be completed. (SwiftConnect.ConnectError error 9.)".
    func testLocalizedDescriptionSaysWhatFailed() throws {
        let error = try forbiddenError()
        let anyError: any Error = error

        XCTAssertEqual(anyError.localizedDescription, error.description)
        XCTAssertEqual((anyError as NSError).localizedDescription, error.description)
        XCTAssertTrue(anyError.localizedDescription.contains("may not read this"), anyError.localizedDescription)
        XCTAssertTrue(anyError.localizedDescription.contains("(HTTP 403)"), anyError.localizedDescription)
        XCTAssertFalse(anyError.localizedDescription.contains("tok-5ecret-4321"), anyError.localizedDescription)
    }

    /// Every kind has a localized description that names its stage.
    func testEveryKindHasALocalizedDescription() {
        for kind in ConnectError.Kind.allCases {
            let error: any Error = ConnectError(kind, message: "what went wrong")
            XCTAssertTrue(error.localizedDescription.hasSuffix(": what went wrong"), error.localizedDescription)
            XCTAssertFalse(error.localizedDescription.contains("could not be completed"), error.localizedDescription)
        }
    }

    /// The body excerpt of `debugDescription` (and of reflection) is the server's text: on one line there, its control
    /// characters made spaces, so that an error page can neither forge the lines after it (`underlying:`) nor send
    /// terminal escape sequences to whoever prints the error, as the description already guarantees for the message.
    func testTheBodyExcerptCannotForgeLinesOrSendEscapeSequences() throws {
        let page = "<html>\n  underlying: forged line\r\n\u{1B}]0;owned\u{07}\u{1B}[2J<p>down</p>\u{85}</html>"
        let connect = Connect(
            transport: FakeTransport.answering(
                .data(Data(page.utf8), status: 502, headers: ["Content-Type": "text/html"])),
            retryPolicy: nil)
        let error = try XCTUnwrap(connectError(of: connect.request(ClientFixtures.Endpoint())))

        let lines = error.debugDescription.components(separatedBy: "\n")
        XCTAssertEqual(lines.count, 2, error.debugDescription)
        XCTAssertEqual(lines.last, "  body: <html> underlying: forged line ]0;owned [2J<p>down</p> </html>")
        var dumped = ""
        dump(error, to: &dumped)
        for text in [error.debugDescription, dumped] {
            XCTAssertFalse(text.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 }, text)
        }
        XCTAssertFalse(dumped.contains("\n  underlying: forged"), dumped)
    }

    /// A body longer than the excerpt still says how long it was, on the same line.
    func testALongBodysExcerptSaysItsLengthOnItsLine() throws {
        let body = "<html>" + String(repeating: "x", count: 2_000) + "</html>"
        let connect = Connect(
            transport: FakeTransport.answering(
                .data(Data(body.utf8), status: 500, headers: ["Content-Type": "text/html"])),
            retryPolicy: nil)
        let error = try XCTUnwrap(connectError(of: connect.request(ClientFixtures.Endpoint())))
        let lines = error.debugDescription.components(separatedBy: "\n")
        XCTAssertEqual(lines.count, 2, error.debugDescription)
        XCTAssertTrue(lines[1].hasSuffix("… (2013 bytes in all)"), lines[1])
    }

    /// The coding path holds the server's keys (those of a `[String: …]` dictionary): on one line too.
    func testACodingPathFromTheServerCannotForgeLines() throws {
        let body = #"{"totals":{"a\n  underlying: forged\u001B[2J":"x"}}"#
        let connect = Connect(transport: FakeTransport.answering(.json(string: body)), retryPolicy: nil)
        let error = try XCTUnwrap(
            connectError(of: connect.request(ClientFixtures.Endpoint()).decoded(toType: [String: [String: Int]].self)))
        XCTAssertEqual(error.kind, .decoding)
        XCTAssertEqual(error.codingPath, "totals.a\n  underlying: forged\u{1B}[2J", "kept as it is")
        let lines = error.debugDescription.components(separatedBy: "\n")
        XCTAssertEqual(lines.filter { $0.hasPrefix("  at: ") }, ["  at: totals.a underlying: forged [2J"])
        XCTAssertFalse(lines.contains { $0.hasPrefix("  underlying: forged") }, error.debugDescription)
        var dumped = ""
        dump(error, to: &dumped)
        XCTAssertFalse(dumped.unicodeScalars.contains { $0.value == 0x1B }, dumped)
        XCTAssertFalse(dumped.contains("\n  underlying: forged"), dumped)
    }
}
