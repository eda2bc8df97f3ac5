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

    /// As an `NSError` (what Crashlytics and Sentry group by), each kind has its own code in SwiftConnect's domain:
    /// every `ConnectError` bridged with code 1, so a lost connection and a decoding failure made one group. The codes
    /// are the documented table: a change breaks the groups users have.
    func testEachKindBridgesToNSErrorWithItsOwnStableCode() {
        let expected: [ConnectError.Kind: Int] = [
            .invalidRequest: 1, .transport: 2, .cannotConnect: 3, .nameResolution: 4, .connectionLost: 5,
            .secureConnection: 6, .untrustedCertificate: 7, .badResponse: 8, .httpStatus: 9, .serverMessage: 10,
            .decoding: 11, .cancelled: 12, .timedOut: 13, .rejected: 14, .authenticationFailed: 15,
            .responseTooLarge: 16, .fileAccess: 17, .certificatePinning: 18, .notConnected: 19,
        ]
        XCTAssertEqual(Set(expected.keys), Set(ConnectError.Kind.allCases), "every kind has a code in the table")
        for kind in ConnectError.Kind.allCases {
            let bridged = ConnectError(kind, message: "what went wrong") as NSError
            XCTAssertEqual(bridged.domain, "SwiftConnect.ConnectError")
            XCTAssertEqual(bridged.code, expected[kind], "\(kind)")
            XCTAssertTrue(bridged.localizedDescription.hasSuffix(": what went wrong"), bridged.localizedDescription)
        }
        let cause = ConnectError(.connectionLost, message: "reset", underlyingError: URLError(.networkConnectionLost))
        let underlying = (cause as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
        XCTAssertEqual(underlying?.domain, NSURLErrorDomain)
        XCTAssertEqual(underlying?.code, URLError.networkConnectionLost.rawValue)
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

    /// The debug description read a body of any size for its 512-byte excerpt: finding the secrets to hide in 50 MB
    /// of JSON (parsing and walking all of it, then every URL in its text) took about a minute in a debug build, each
    /// time the error was logged. A body over 1 MiB is shown by its size, or, with secrets shown, by its start.
    func testABodyOverAMiBIsNotReadForTheExcerpt() throws {
        let items = String(repeating: #""abcdefghij","#, count: 100_000)
        let body = Data((#"{"message":"x","items":["# + items + #""z"]}"#).utf8)
        XCTAssertGreaterThan(body.count, 1 << 20)
        for redacting in [true, false] {
            let connect = Connect(
                transport: FakeTransport.answering(
                    .data(body, status: 500, headers: ["Content-Type": "application/json"])),
                retryPolicy: nil, settings: Connect.Settings(redactsSecrets: redacting))
            let error = try XCTUnwrap(connectError(of: connect.request(ClientFixtures.Endpoint())))
            let lines = error.debugDescription.components(separatedBy: "\n")
            XCTAssertEqual(lines.count, 2, error.debugDescription)
            XCTAssertEqual(error.body, body, "the body stays whole")
            if redacting {
                XCTAssertEqual(lines[1], "  body: <\(body.count) bytes, not shown: too large to look for secrets in>")
            } else {
                XCTAssertTrue(lines[1].hasPrefix(#"  body: {"message":"x","items":["abcdefghij","#), lines[1])
                XCTAssertTrue(lines[1].hasSuffix("… (\(body.count) bytes in all)"), lines[1])
                XCTAssertLessThan(lines[1].utf8.count, 600, lines[1])
            }
        }
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

    /// The coding path holds the server's keys, and a key can be a URL (a map of links keyed by URL): the secrets of
    /// such a URL are hidden where the path is shown (the description's `at:` line, reflection), as in the message.
    func testACodingPathKeyThatIsAURLHasItsSecretsHidden() throws {
        let body = #"{"links":{"https://cdn.example.com/a.pdf?X-Amz-Signature=sig-KEY-86420&n=1":"x"}}"#
        let connect = Connect(transport: FakeTransport.answering(.json(string: body)), retryPolicy: nil)
        let error = try XCTUnwrap(
            connectError(of: connect.request(ClientFixtures.Endpoint()).decoded(toType: [String: [String: Int]].self)))
        XCTAssertEqual(error.kind, .decoding)
        var dumped = ""
        dump(error, to: &dumped)
        for text in [error.description, error.debugDescription, dumped] {
            XCTAssertFalse(text.contains("sig-KEY-86420"), text)
        }
        XCTAssertTrue(
            error.debugDescription.contains("  at: links.https://cdn.example.com/a.pdf?X-Amz-Signature=<redacted>&n=1"),
            error.debugDescription)
    }

    /// The `Location` of a 3xx answer that was not followed is quoted in the message, its secrets hidden. A client set
    /// not to redact showed it hidden all the same: it was redacted as the message was made, before the setting could
    /// be read.
    func testARedirectsLocationInTheMessageFollowsTheRedactionSetting() throws {
        let location = "https://other.example/cb?access_token=tok-REDIRECT-12345&state=s1"
        for redacting in [true, false] {
            let connect = Connect(
                transport: FakeTransport.answering(.status(302, headers: ["Location": location])), retryPolicy: nil,
                settings: Connect.Settings(redactsSecrets: redacting))
            let route = Route(url: try XCTUnwrap(URL(string: "https://api.example.com/start")))

            let error = try XCTUnwrap(connectError(of: connect.request(route)))

            for text in [error.message, error.description, error.debugDescription, error.localizedDescription] {
                XCTAssertEqual(text.contains("tok-REDIRECT-12345"), !redacting, "redacting \(redacting): \(text)")
                XCTAssertTrue(text.contains("other.example/cb?access_token="), text)
            }
            XCTAssertFalse(!redacting && error.message.contains("<redacted>"), error.message)
        }
    }

    /// A server's message that quotes a URL with a secret in it (`link expired: https://…?X-Amz-Signature=…`): the
    /// description redacted it by name, the message, which the README prints, showed it.
    func testAURLTheServersMessageQuotesHasItsSecretsHiddenInTheMessage() throws {
        let body = #"{"message":"link expired: https://cdn.example.com/r.pdf?X-Amz-Signature=sig-ABC-123456&n=1"}"#
        for redacting in [true, false] {
            let connect = Connect(
                transport: FakeTransport.answering(.json(string: body, status: 410)), retryPolicy: nil,
                settings: Connect.Settings(redactsSecrets: redacting))

            let route = Route(url: try XCTUnwrap(URL(string: "https://api.example.com/files/1")))
            let error = try XCTUnwrap(connectError(of: connect.request(route)))

            for text in [error.message, error.localizedDescription, error.description] {
                XCTAssertEqual(text.contains("sig-ABC-123456"), !redacting, "redacting \(redacting): \(text)")
            }
            if redacting {
                XCTAssertTrue(error.message.contains("r.pdf?X-Amz-Signature=<redacted>&n=1"), error.message)
            }
        }
    }

    /// A request refused before it is sent says why in a message written where the URL is refused, by code that does
    /// not know the client: its URL's secrets stay hidden there with redaction off (SECURITY.md, "Opting out"); the
    /// description's request, which the client adds, shows them.
    func testARefusedURLsMessageStaysRedactedWithRedactionOff() throws {
        let connect = Connect(
            transport: URLSessionTransport(), retryPolicy: nil, settings: Connect.Settings(redactsSecrets: false))
        let route = Route(url: try XCTUnwrap(URL(string: "ftp://files.example/get?access_token=tok-FTP-123456")))

        let error = try XCTUnwrap(connectError(of: connect.request(route)))

        XCTAssertEqual(error.kind, .invalidRequest, "\(error)")
        XCTAssertTrue(error.message.contains("access_token=<redacted>"), error.message)
        XCTAssertFalse(error.message.contains("tok-FTP-123456"), error.message)
    }
}
