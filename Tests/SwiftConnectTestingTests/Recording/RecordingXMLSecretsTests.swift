import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Secrets in XML answers (a SOAP login, an XML token endpoint), found by element and attribute name as in JSON.
final class RecordingXMLSecretsTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeRecordingFolder(for: self)
    }

    /// An XML login answer: a token in an element, a password in an attribute, a user name that is no secret.
    private var loginAnswer: Data {
        Data(loginAnswer(token: "tok-XMLRESP-445566", password: "pw-XMLATTR-778899").utf8)
    }

    /// `loginAnswer` with its token and password as `token` and `password`, each written as XML text.
    private func loginAnswer(token: String, password: String) -> String {
        #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
            + #"<login><user>amy</user><api:access_token xmlns:api="urn:a">\#(token)</api:access_token>"#
            + #"<account id="7" password="\#(password)"/></login>"#
    }

    func testSecretElementsAndAttributesOfAnXMLAnswerAreNotRecordedAndReplayFillsThem() throws {
        // Given: a login that answers in XML
        let file = folder.appendingPathComponent("xml-login.har")
        let recorder = RecordingTransport(
            fileURL: file,
            wrapping: FakeTransport.answering(
                .data(loginAnswer, headers: ["Content-Type": "application/xml; charset=utf-8"])),
            mode: .record)
        let login = try connectRequest(.post, "http://api.test/login")
        // When
        let live = try recorder.send(login, transfer: TransferOptions()).wait()
        // Then: the app got the answer as sent; the file holds neither secret, its placeholders escaped as XML text
        // so that the body is still XML a parser reads
        XCTAssertEqual(live.data, loginAnswer)
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("tok-XMLRESP-445566"), text)
        XCTAssertFalse(text.contains("pw-XMLATTR-778899"), text)
        let recorded = try XCTUnwrap(HAR(contentsOf: file).log.entries.first?.response.content.data)
        XCTAssertEqual(
            String(decoding: recorded, as: UTF8.self),
            loginAnswer(token: "&lt;redacted:access_token&gt;", password: "&lt;redacted:password&gt;"))
        // When: replayed with the test's own token
        let replay = RecordingTransport(
            fileURL: file, mode: .replay, placeholderValues: ["access_token": "test-<&>-token"])
        let replayed = try replay.send(login, transfer: TransferOptions()).wait()
        // Then: the placeholder is filled, escaped as XML needs, and the rest is as recorded
        XCTAssertEqual(
            String(decoding: replayed.data, as: UTF8.self),
            loginAnswer(token: "test-&lt;&amp;&gt;-token", password: "&lt;redacted:password&gt;"))
    }

    func testAnXMLAnswerInLatin1HasItsSecretsHiddenAndItsOtherBytesKept() throws {
        // Given: an answer in ISO-8859-1, not UTF-8 (`é` is the single byte 0xE9)
        let answer = try XCTUnwrap(
            (#"<?xml version="1.0" encoding="ISO-8859-1"?><r><nom>José</nom>"#
                + "<password>pw-LATIN-123456</password></r>").data(using: .isoLatin1))
        let file = folder.appendingPathComponent("xml-latin1.har")
        let recorder = RecordingTransport(
            fileURL: file,
            wrapping: FakeTransport.answering(
                .data(answer, headers: ["Content-Type": "text/xml; charset=iso-8859-1"])),
            mode: .record)
        // When
        _ = try recorder.send(connectRequest(.get, "http://api.test/me"), transfer: TransferOptions()).wait()
        // Then
        let recorded = try XCTUnwrap(HAR(contentsOf: file).log.entries.first?.response.content.data)
        XCTAssertEqual(
            recorded,
            (#"<?xml version="1.0" encoding="ISO-8859-1"?><r><nom>José</nom>"#
                + "<password>&lt;redacted:password&gt;</password></r>").data(using: .isoLatin1))
    }

    func testASecretAnXMLAnswerEchoesIsHiddenAndTheBodyStaysXML() throws {
        // Given: an answer echoing the request's key in an element and in an attribute, neither named like a secret
        let echo = { (key: String) in #"<r><seen>\#(key)</seen><note text="got \#(key)"/></r>"# }
        let file = folder.appendingPathComponent("xml-echo.har")
        let recorder = RecordingTransport(
            fileURL: file,
            wrapping: FakeTransport.answering(
                .data(Data(echo("ak-XMLECHO-31415").utf8), headers: ["Content-Type": "application/xml"])),
            mode: .record)
        let request = try connectRequest(.get, "http://api.test/key", headers: ["X-Api-Key": "ak-XMLECHO-31415"])
        // When
        _ = try recorder.send(request, transfer: TransferOptions()).wait()
        // Then: the placeholder is escaped as XML text (a bare `<redacted>` is a tag, and not allowed in an attribute)
        let recorded = try XCTUnwrap(HAR(contentsOf: file).log.entries.first?.response.content.data)
        XCTAssertEqual(String(decoding: recorded, as: UTF8.self), echo("&lt;redacted&gt;"))
    }

    func testAShortPasswordInAnXMLRequestIsHiddenByNameAndReplayMatchesAnother() throws {
        // Given: a login sending XML with a password too short to be hidden by value (under 4 characters)
        func login(_ password: String) throws -> ConnectRequest {
            try connectRequest(
                .post, "http://api.test/login", headers: [.contentType: "application/xml"],
                body: Data("<login><user>amy</user><password>\(password)</password></login>".utf8))
        }
        let file = folder.appendingPathComponent("xml-request.har")
        let recorder = RecordingTransport(fileURL: file, wrapping: FakeTransport.answering(.status(204)), mode: .record)
        // When
        _ = try recorder.send(login("pw9"), transfer: TransferOptions()).wait()
        // Then: the placeholder a longer password got by value already, so that older recordings still match
        let recorded = try XCTUnwrap(HAR(contentsOf: file).log.entries.first?.request.postData?.data)
        XCTAssertEqual(
            String(decoding: recorded, as: UTF8.self), "<login><user>amy</user><password><redacted></password></login>")
        // When: replayed with other passwords, short and long
        let replay = RecordingTransport(fileURL: file, mode: .replay)
        XCTAssertEqual(try replay.send(login("zz1"), transfer: TransferOptions()).wait().statusCode, 204)
        let again = RecordingTransport(fileURL: file, mode: .replay)
        XCTAssertEqual(try again.send(login("a-much-longer-one"), transfer: TransferOptions()).wait().statusCode, 204)
    }

    func testATokenAnXMLAnswerHandedOutIsHiddenWhereALaterRequestSendsItBack() throws {
        // Given: a login answering in XML, then a call sending the token back in its path
        let fake = FakeTransport(fallback: .json(string: #"{"ok":true}"#))
        fake.stub(.post, "/login", with: .data(loginAnswer, headers: ["Content-Type": "text/xml"]))
        let file = folder.appendingPathComponent("xml-handed-out.har")
        let recorder = RecordingTransport(fileURL: file, wrapping: fake, mode: .record)
        // When
        _ = try recorder.send(connectRequest(.post, "http://api.test/login"), transfer: TransferOptions()).wait()
        _ = try recorder.send(
            connectRequest(.get, "http://api.test/files/tok-XMLRESP-445566"), transfer: TransferOptions()
        ).wait()
        // Then: the second request's URL has a placeholder for it, and the token is nowhere in the file
        let url = try XCTUnwrap(HAR(contentsOf: file).log.entries.last?.request.url)
        XCTAssertEqual(url, "http://api.test/files/%3Credacted%3E")
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("tok-XMLRESP-445566"), text)
    }
}
