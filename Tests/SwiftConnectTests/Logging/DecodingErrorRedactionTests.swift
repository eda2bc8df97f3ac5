import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A decoding error can quote the value it failed on: the standard library's `RawRepresentable` decoding says "Cannot
/// initialize Mode from invalid String value …", a type's own `init(from:)` quotes what it refused, and the library
/// names the number that does not fit its type. When that value sits under a secret name in the body (a `password`, an
/// `access_token`), it is a secret however it reads, and no output of the error shows it.
final class DecodingErrorRedactionTests: XCTestCase {
    typealias Endpoint = ClientFixtures.Endpoint

    private enum Mode: String, Decodable, Sendable {
        case plain, hashed
    }

    /// A password with no digit and under 20 characters: not one the body hands out as a credential by its look.
    private let password = "swordfishtrombone"

    /// Every text the error shows: its message, descriptions, reflection and bridged `NSError`.
    private func shownTexts(of error: ConnectError) -> [String] {
        var dumped = ""
        dump(error, to: &dumped)
        let bridged = error as NSError
        let underlying = (bridged.userInfo[NSUnderlyingErrorKey] as? NSError).map { "\($0) \($0.userInfo)" } ?? ""
        return [
            error.message, error.description, error.debugDescription, String(reflecting: error),
            error.localizedDescription, dumped, underlying,
        ]
    }

    private func decodingError<T: Decodable & Sendable>(
        _ body: String, as type: T.Type, decoder: JSONDecoder? = nil, file: StaticString = #filePath,
        line: UInt = #line
    ) -> ConnectError? {
        let connect = Connect(transport: FakeTransport.answering(.json(string: body)), retryPolicy: nil)
        let error = connectError(
            of: connect.request(Endpoint()).decoded(toType: type, decoder: decoder), file: file, line: line)
        XCTAssertEqual(error?.kind, .decoding, file: file, line: line)
        return error
    }

    func testAnEnumsRawValueUnderASecretNameIsHiddenInTheDecodingError() throws {
        struct Login: Decodable, Sendable {
            let user: String
            let password: Mode
        }
        let body = #"{"user":"amy","password":"\#(password)"}"#
        let error = try XCTUnwrap(decodingError(body, as: Login.self))
        XCTAssertEqual(error.codingPath, "password")
        for text in shownTexts(of: error) {
            XCTAssertFalse(text.contains(password), text)
        }
        XCTAssertTrue(error.message.contains("Cannot initialize Mode from invalid String value"), error.message)
        // The body stays as the server sent it.
        XCTAssertTrue(String(decoding: error.body ?? Data(), as: UTF8.self).contains(password))
    }

    /// A key strategy names the key as the model does (`accessToken`), not as the JSON (`access_token`).
    func testTheValueIsFoundThroughAConvertedKeyAndInsideASecretObject() throws {
        struct Grant: Decodable, Sendable {
            struct Credentials: Decodable, Sendable { let kind: Mode }
            let accessToken: Mode?
            let credentials: Credentials?
        }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let converted = try XCTUnwrap(
            decodingError(#"{"access_token":"\#(password)"}"#, as: Grant.self, decoder: decoder))
        XCTAssertEqual(converted.codingPath, "accessToken")
        let nested = try XCTUnwrap(decodingError(#"{"credentials":{"kind":"\#(password)"}}"#, as: Grant.self))
        XCTAssertEqual(nested.codingPath, "credentials.kind")
        for text in shownTexts(of: converted) + shownTexts(of: nested) {
            XCTAssertFalse(text.contains(password), text)
        }
    }

    /// A type's own `init(from:)` that quotes what it refused, here a number under a secret name.
    func testANumberATypeQuotesUnderASecretNameIsHidden() throws {
        struct Account: Decodable, Sendable {
            enum CodingKeys: String, CodingKey { case apiKey = "api_key" }
            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                let key = try container.decode(Int.self, forKey: .apiKey)
                throw DecodingError.dataCorruptedError(
                    forKey: .apiKey, in: container, debugDescription: "key \(key) has expired")
            }
        }
        let error = try XCTUnwrap(decodingError(#"{"api_key":73914682}"#, as: Account.self))
        for text in shownTexts(of: error) {
            XCTAssertFalse(text.contains("73914682"), text)
        }
        XCTAssertTrue(error.message.contains("has expired"), error.message)
    }

    /// The value of a name/value pair that names a secret is one too.
    func testTheValueOfAPairNamingASecretIsHidden() throws {
        struct Setting: Decodable, Sendable {
            let name: String
            let value: Mode
        }
        let body = #"[{"name":"client_secret","value":"\#(password)"}]"#
        let error = try XCTUnwrap(decodingError(body, as: [Setting].self))
        for text in shownTexts(of: error) {
            XCTAssertFalse(text.contains(password), text)
        }
    }

    /// A body in UTF-16 or UTF-32 (which `JSONDecoder` reads) or in the single-byte charset it declares (which the
    /// library decodes again in it) is looked through for the value as a UTF-8 one is.
    func testTheValueIsHiddenInABodyInAnotherEncoding() throws {
        struct Login: Decodable, Sendable {
            let user: String
            let password: Mode
        }
        struct Pin: Decodable, Sendable { let password: Int }
        let login = #"{"user":"amélie","password":"\#(password)"}"#
        let number = "123456789012345678901234567"
        let pin = #"{"password":\#(number)}"#
        let bodies: [(String, Data, String, String)] = [
            ("UTF-16LE", Data([0xFF, 0xFE]) + login.data(using: .utf16LittleEndian)!, "application/json", password),
            ("UTF-16BE", login.data(using: .utf16BigEndian)!, "application/json", password),
            (
                "UTF-32LE", Data([0xFF, 0xFE, 0, 0]) + login.data(using: .utf32LittleEndian)!, "application/json",
                password
            ),
            ("Latin-1", login.data(using: .isoLatin1)!, "application/json; charset=ISO-8859-1", password),
            ("UTF-16LE number", Data([0xFF, 0xFE]) + pin.data(using: .utf16LittleEndian)!, "application/json", number),
        ]
        for (encoding, body, contentType, secret) in bodies {
            let transport = FakeTransport.answering(.data(body, headers: ["Content-Type": contentType]))
            let connect = Connect(transport: transport, retryPolicy: nil)
            let request = connect.request(Endpoint())
            let error =
                secret == number
                ? connectError(of: request.decoded(toType: Pin.self))
                : connectError(of: request.decoded(toType: Login.self))
            XCTAssertEqual(error?.kind, .decoding, encoding)
            XCTAssertEqual(error?.codingPath, "password", "\(encoding) \(error?.message ?? "")")
            for text in try shownTexts(of: XCTUnwrap(error)) {
                XCTAssertFalse(text.contains(secret), "\(encoding): \(text)")
            }
        }
    }

    /// A value under an ordinary name is shown: it helps to fix the model.
    /// A string the `.iso8601` strategy refuses is quoted as itself, so that the message's own hiding finds a
    /// secret echoed into it (a token under another key), and a long one is only counted: it was quoted as its JSON
    /// text (`ab\/cd…`), which the hiding did not match, and cut at 40 characters first, leaving the start of a
    /// token or cookie in clear.
    func testADateTheStrategyRefusesIsQuotedOnlyWhereItsHidingCanFindIt() throws {
        struct Expiring: Decodable, Sendable { let expires: Date }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let echoed = try XCTUnwrap(
            decodingError(#"{"token":"ab/cd1234","expires":"ab/cd1234"}"#, as: Expiring.self, decoder: decoder))
        for text in shownTexts(of: echoed) { XCTAssertFalse(text.contains("cd1234"), text) }
        XCTAssertTrue(echoed.message.contains("at 'expires' is not an ISO 8601 date"), echoed.message)

        let token = String(repeating: "9f8e7d6c", count: 8)
        let long = try XCTUnwrap(decodingError(#"{"expires":"\#(token)"}"#, as: Expiring.self, decoder: decoder))
        // (Not a secret the client knows: the body's excerpt shows it, whole; the message quotes no part of it.)
        XCTAssertFalse(long.message.contains("9f8e7d6c9f8e"), long.message)
        XCTAssertTrue(long.message.contains("the value of 64 characters at 'expires'"), long.message)

        let plain = try XCTUnwrap(decodingError(#"{"expires":"next/week"}"#, as: Expiring.self, decoder: decoder))
        XCTAssertTrue(plain.message.contains(#"the value "next/week" at 'expires'"#), plain.message)
    }

    func testAValueUnderAnOrdinaryNameIsShown() throws {
        struct Profile: Decodable, Sendable { let mode: Mode }
        let error = try XCTUnwrap(decodingError(#"{"mode":"\#(password)"}"#, as: Profile.self))
        XCTAssertTrue(error.message.contains("invalid String value \(password)"), error.message)
    }

    /// The library names the number that does not fit its type, except under a secret name.
    func testANumberThatDoesNotFitUnderASecretNameIsNotQuoted() throws {
        struct Pin: Decodable, Sendable { let password: Int }
        let number = "123456789012345678901234567"
        let error = try XCTUnwrap(decodingError(#"{"password":\#(number)}"#, as: Pin.self))
        XCTAssertEqual(error.codingPath, "password")
        for text in shownTexts(of: error) {
            XCTAssertFalse(text.contains(number), text)
        }
        XCTAssertTrue(error.message.contains("at 'password' does not fit Int"), error.message)
    }

    /// A line of a JSON Lines stream is a body of its own: a secret it holds is hidden as in a body.
    func testALineOfAStreamHidesTheValueItFailedOn() async throws {
        struct Event: Decodable, Sendable { let token: Mode }
        let chunks = AsyncThrowingStream<Data, any Error> { continuation in
            continuation.yield(Data(#"{"token":"\#(password)"}"#.utf8 + [0x0A]))
            continuation.finish()
        }
        do {
            for try await _ in ResponseJSONLines(chunks, as: Event.self) {}
            XCTFail("expected a decoding error")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .decoding)
            for text in shownTexts(of: error) {
                XCTAssertFalse(text.contains(password), text)
            }
        }
    }
}

// MARK: - Keys under a secret name

extension DecodingErrorRedactionTests {
    /// A map under a secret name whose keys are the secrets themselves (`{"tokens": {"<token>": …}}`): the path to
    /// the value that failed named the key, and every output of the error showed it.
    func testAKeyOfAMapUnderASecretNameIsHiddenInThePath() throws {
        struct Session: Decodable, Sendable { let tokens: [String: Int] }
        let body = #"{"tokens":{"\#(password)":"soon"}}"#
        let error = try XCTUnwrap(decodingError(body, as: Session.self))
        for text in shownTexts(of: error) {
            XCTAssertFalse(text.contains(password), text)
        }
        XCTAssertTrue(error.debugDescription.contains("at: tokens.<redacted>"), error.debugDescription)
        XCTAssertTrue(error.message.contains("at 'tokens.<redacted>'"), error.message)
        // The property keeps the path, for code that looks the value up.
        XCTAssertEqual(error.codingPath, "tokens.\(password)")
    }

    /// A map under a secret name keyed by digits (`{"tokens": {"48213977": …}}`, a PIN, a numeric API key): the
    /// decoder's key for it has an integer value as an array's index does, and the path showed it as one.
    func testADigitsOnlyKeyOfAMapUnderASecretNameIsHiddenInThePath() throws {
        struct Session: Decodable, Sendable { let tokens: [String: Int] }
        let error = try XCTUnwrap(decodingError(#"{"tokens":{"48213977":"soon"}}"#, as: Session.self))
        for text in shownTexts(of: error) {
            XCTAssertFalse(text.contains("48213977"), text)
        }
        XCTAssertTrue(error.message.contains("at 'tokens.<redacted>'"), error.message)
        // An array's index under a secret name is the model's shape, not data: it stays shown.
        struct Keys: Decodable, Sendable { let apiKeys: [Int] }
        let numbers = Array(repeating: "1", count: 1_234).joined(separator: ",")
        let indexed = try XCTUnwrap(decodingError(#"{"apiKeys":[\#(numbers),"x"]}"#, as: Keys.self))
        XCTAssertTrue(indexed.debugDescription.contains("apiKeys[1234]"), indexed.debugDescription)
        // A map's digits key is named as a key, not as an index.
        struct Scores: Decodable, Sendable { let scores: [String: Int] }
        let scores = try XCTUnwrap(decodingError(#"{"scores":{"2024":"x"}}"#, as: Scores.self))
        XCTAssertEqual(scores.codingPath, "scores.2024")
    }

    /// The model's names below a secret name, and a map's keys under an ordinary name, are shown: they help to fix
    /// the model. Keys of a map deeper under the secret name are hidden, the model's names between them shown.
    func testModelNamesBelowASecretNameAndOrdinaryMapKeysAreShown() throws {
        struct Entry: Decodable, Sendable { let expires: Int }
        struct Vault: Decodable, Sendable {
            let apiKeys: [String: [String: Entry]]
            let labels: [String: Int]?
        }
        let nested = try XCTUnwrap(
            decodingError(#"{"apiKeys":{"\#(password)":{"k-73914682":{"expires":"never"}}}}"#, as: Vault.self))
        for text in shownTexts(of: nested) {
            XCTAssertFalse(text.contains(password), text)
            XCTAssertFalse(text.contains("k-73914682"), text)
        }
        XCTAssertTrue(
            nested.debugDescription.contains("at: apiKeys.<redacted>.<redacted>.expires"), nested.debugDescription)
        let ordinary = try XCTUnwrap(decodingError(#"{"apiKeys":{},"labels":{"blue":"x"}}"#, as: Vault.self))
        XCTAssertTrue(ordinary.debugDescription.contains("at: labels.blue"), ordinary.debugDescription)
    }

    /// A number that does not fit its type, found by SwiftConnect's own walk of the body: its path is hidden alike.
    func testAKeyOfAMapUnderASecretNameIsHiddenWhereANumberDoesNotFit() throws {
        struct Pins: Decodable, Sendable { let passwords: [String: Int] }
        let body = #"{"passwords":{"\#(password)":123456789012345678901234567}}"#
        let error = try XCTUnwrap(decodingError(body, as: Pins.self))
        XCTAssertEqual(error.codingPath, "passwords.\(password)")
        for text in shownTexts(of: error) {
            XCTAssertFalse(text.contains(password), text)
        }
        XCTAssertTrue(error.message.contains("at 'passwords.<redacted>' does not fit Int"), error.message)
    }
}
