import Foundation
import SwiftConnectTesting
import XCTest

@_spi(Engine) @testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server URL written without its scheme, `amy:pw@api.example.com`: Foundation reads `amy` as the scheme and
/// `pw@api.example.com` as the path, so there is no `user:password@` for redaction by URL parts to take off. Every
/// output showed the password.
final class URLWithoutSchemePrintingTests: XCTestCase {
    /// Every way a value is turned into text: `description`, `String(reflecting:)`, interpolation and `dump`.
    private func printed(_ value: Any) -> String {
        var dumped = ""
        dump(value, to: &dumped)
        return [String(describing: value), String(reflecting: value), "\(value)", dumped].joined(separator: "\n")
    }

    private let written = "amy:PASSWORD-SECRET1@api.example.com/v1/me?token=TOKEN-SECRET2&page=2"

    /// The one place URLs are redacted, as a `URL` and as text.
    func testRedactionHidesThePasswordOfAURLWithoutScheme() throws {
        let url = try XCTUnwrap(URL(string: written))

        for shown in [Redaction.url(url, redacting: true), Redaction.urlText(written)] {
            XCTAssertEqual(shown, "amy:<redacted>@api.example.com/v1/me?token=<redacted>&page=2")
        }
        XCTAssertEqual(Redaction.url(url, redacting: false), written, "not redacting shows it as written")
    }

    /// Written with a scheme but without `//`, the scheme and user are taken for the scheme and the path's start.
    func testRedactionHidesWhatComesBeforeTheAtOfAURLWithoutAuthority() {
        XCTAssertEqual(
            Redaction.urlText("https:amy:PASSWORD-SECRET3@api.example.com/x"), "https:<redacted>@api.example.com/x")
        XCTAssertEqual(Redaction.urlText("amy:PASS/SECRET4@api.example.com/x"), "amy:<redacted>@api.example.com/x")
        XCTAssertEqual(Redaction.urlText("amy:PASS%2FSECRET5@api.example.com"), "amy:<redacted>@api.example.com")
        // Nothing else changes: no `@`, or an `@` in a query or after an authority.
        for unchanged in [
            "localhost:8080/v1", "api.example.com/v1", "/users/@me", "https://api.example.com/users/@me",
            "urn:isbn:0451450523", "https://api.example.com/x?email=amy@example.com", "mailto:amy@example.com",
            "MAILTO:amy@example.com?subject=hi", "sip:amy@example.com",
        ] {
            XCTAssertEqual(Redaction.urlText(unchanged), unchanged)
        }
    }

    /// The request, its cURL command, an error about it, the debug output and the values that hold such a URL.
    func testNoOutputShowsThePasswordOfAURLWithoutScheme() throws {
        let url = try XCTUnwrap(URL(string: written))
        var request = ConnectRequest(url: url)
        request.headerFields[.accept] = "application/json"
        let foundation = URLRequest(url: url)
        let error = ConnectError(.transport, message: "refused", request: foundation)
        let route = Route("/items", baseURL: url)
        let event = ConnectEvent.redirected(status: 302, location: url)

        var shown = ""
        for value: Any in [request, error, route, event] { shown += printed(value) + "\n" }
        shown += request.redactedURL + "\n" + cURLCommand(for: foundation) + "\n"
        shown += DebugOutput.failure(error, for: foundation, redacting: true) + "\n"
        shown += printed(ServerConfiguration(baseURL: url)) + "\n"

        XCTAssertFalse(shown.contains("SECRET"), shown)
        XCTAssertTrue(shown.contains("amy:<redacted>@api.example.com/v1/me?token=<redacted>&page=2"), shown)
    }

    /// A client refuses the URL (it names no http or https server); the error, as printed, showed the password.
    func testTheErrorOfSendingToAURLWithoutSchemeShowsNoPassword() throws {
        let logger = MemoryLogger()
        let fake = FakeTransport.answering(.status(200))
        let connect = Connect(transport: fake, retryPolicy: nil, settings: Connect.Settings(logger: logger))
        let configured = Connect(
            transport: fake, retryPolicy: nil,
            configuration: ServerConfiguration(baseURL: try XCTUnwrap(URL(string: written))))

        let direct = try XCTUnwrap(
            connectError(of: connect.request(Route(url: try XCTUnwrap(URL(string: written))), debugResponse: true)))
        let throughServer = try XCTUnwrap(connectError(of: configured.request(Route("/items"))))

        for error in [direct, throughServer] {
            let shown = printed(error) + "\n" + error.localizedDescription + "\n" + logger.messages.joined()
            XCTAssertFalse(shown.contains("SECRET"), shown)
            XCTAssertTrue(shown.contains("amy:<redacted>@api.example.com"), shown)
        }
    }

    /// The password is one of the request's secret values, hidden wherever it shows again (a server's message).
    func testThePasswordOfAURLWithoutSchemeIsASecretValue() throws {
        let url = try XCTUnwrap(URL(string: "https:amy:PASSWORD-SECRET6@api.example.com/x"))
        let secrets = SecretValues(of: URLRequest(url: url))

        XCTAssertEqual(
            secrets.hiding(in: "bad password PASSWORD-SECRET6, or amy:PASSWORD-SECRET6"),
            "bad password <redacted>, or <redacted>")
        XCTAssertEqual(
            SecretValues(of: URLRequest(url: try XCTUnwrap(URL(string: "amy:PASSWORD-SECRET7@h/x"))))
                .hiding(in: "PASSWORD-SECRET7"),
            "<redacted>")
    }
}
