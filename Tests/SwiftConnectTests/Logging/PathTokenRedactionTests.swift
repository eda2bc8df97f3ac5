import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Some APIs carry their credential in a path segment: a Telegram bot's `/bot<id>:<token>/getMe`, a Slack webhook's
/// `/services/T…/B…/<secret>`, a Discord webhook's `/api/webhooks/<id>/<token>`. Those segments are hidden wherever a
/// URL is shown; they showed whole. Only these shapes are read: ordinary ids in a path are shown.
final class PathTokenRedactionTests: XCTestCase {
    private let telegram = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ"
    private let slack = "XXXXsecretXXXXXXXXXXXXXX"
    private let discord = "aBcD-efGh_ijKL1234567890mnOpQrStUvWxYz0123456789abcdEFGH"

    func testTheTokenSegmentOfEachShapeIsHiddenAndTheRestShown() throws {
        let cases = [
            (
                "https://api.telegram.org/bot\(telegram)/sendMessage?chat_id=42",
                "https://api.telegram.org/bot123456789:<redacted>/sendMessage?chat_id=42"
            ),
            (
                "https://api.telegram.org/bot123456789%3AAAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ/getMe",
                "https://api.telegram.org/bot123456789%3A<redacted>/getMe"
            ),
            (
                "https://hooks.slack.com/services/T00000000/B00000000/\(slack)",
                "https://hooks.slack.com/services/T00000000/B00000000/<redacted>"
            ),
            (
                "https://discord.com/api/webhooks/1234567890123456789/\(discord)?wait=true",
                "https://discord.com/api/webhooks/1234567890123456789/<redacted>?wait=true"
            ),
        ]
        for (text, shown) in cases {
            let url = try XCTUnwrap(URL(string: text))
            XCTAssertEqual(Redaction.url(url, redacting: true), shown)
            XCTAssertEqual(Redaction.urlText(text), shown)
            XCTAssertEqual(Redaction.urlsInText("POST \(text) failed"), "POST \(shown) failed")
            XCTAssertEqual(ConnectRequest(url: url).redactedURL, shown)
            XCTAssertEqual(Redaction.url(url, redacting: false), text)
        }
    }

    /// Paths of the same look but not the shape (an id too short, a token too short or with other characters, a
    /// `bot` segment without a `:`) are shown as they are.
    func testOrdinaryIDsInAPathAreShown() throws {
        for text in [
            "https://api.example.com/bot12345/items",
            "https://api.example.com/bots/123456789:short/x",
            "https://api.example.com/botany:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ/x",
            "https://api.example.com/services/T123/B456/abcdefghijklmnopqrstuvwx",
            "https://api.example.com/services/T00000000/B00000000/short",
            "https://api.example.com/webhooks/42/aBcD-efGh_ijKL1234567890mnOpQrStUvWxYz",
            "https://api.example.com/webhooks/1234567890/status",
            "https://api.example.com/users/1234567890/orders/aBcDefGh1234567890mnOpQrStUvWxYz0123",
        ] {
            XCTAssertEqual(Redaction.url(try XCTUnwrap(URL(string: text)), redacting: true), text)
            XCTAssertEqual(Redaction.urlText(text), text)
        }
    }

    /// The token is a secret value of the request: an error and the debug output hide it where the server quotes it.
    func testTheTokenIsHiddenWhereTheServerQuotesIt() throws {
        let logger = MemoryLogger()
        let body = #"{"ok":false,"message":"Unauthorized: \#(telegram) was revoked"}"#
        let connect = Connect(
            transport: FakeTransport.answering(.json(string: body, status: 401)), retryPolicy: nil,
            settings: Connect.Settings(logger: logger))
        let route = Route(url: try XCTUnwrap(URL(string: "https://api.telegram.org/bot\(telegram)/getMe")))

        let error = try XCTUnwrap(connectError(of: connect.request(route, debugResponse: true)))

        var dumped = ""
        dump(error, to: &dumped)
        let token = String(telegram.split(separator: ":")[1])
        for text in [error.message, error.description, error.debugDescription, dumped] + logger.messages {
            XCTAssertFalse(text.contains(token), text)
        }
        XCTAssertTrue(error.description.contains("bot123456789:<redacted>/getMe"), error.description)
        XCTAssertTrue(error.message.contains("was revoked"), error.message)
    }
}
