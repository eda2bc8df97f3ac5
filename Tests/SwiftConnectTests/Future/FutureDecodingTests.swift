import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private struct Todo: Codable, Equatable {
    let id: Int
    let title: String
}

/// decoded(toType:): values, typed decoding errors with a path and an excerpt, empty bodies.
final class FutureDecodingTests: XCTestCase {
    func testDecodesJSON() throws {
        let data = Data(#"{"id":1,"title":"Write tests"}"#.utf8)
        XCTAssertEqual(try Future(value: data).decoded(toType: Todo.self).wait(), Todo(id: 1, title: "Write tests"))
    }

    func testDecodingFailureCarriesCodingPathAndExcerpt() {
        let data = Data(#"[{"id":1,"title":"a"},{"id":"two","title":"b"}]"#.utf8)
        XCTAssertThrowsError(try Future(value: data).decoded(toType: [Todo].self).wait()) { error in
            guard let error = error as? ConnectError else { return XCTFail("\(error)") }
            XCTAssertEqual(error.kind, .decoding)
            XCTAssertEqual(error.codingPath, "[1].id")
            XCTAssertEqual(error.body, data)
            XCTAssertTrue(error.underlyingError is DecodingError)
            XCTAssertTrue(error.debugDescription.contains(#""id":"two""#), error.debugDescription)
            XCTAssertTrue(error.description.contains("[1].id"), error.description)
        }
    }

    /// A string the `.iso8601` date strategy does not read: Foundation names the path of the object that holds it
    /// (`[0]`, or none for a top-level object), not the date's own; the error names the date's path and its value.
    func testADateTheISO8601StrategyRefusesIsNamedByItsOwnPath() throws {
        struct Event: Decodable {
            let id: Int
            let startsAt: Date
            let endsAt: Date
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let list = Data(#"[{"id":1,"startsAt":"2024-05-01T10:00:00Z","endsAt":"tomorrow"}]"#.utf8)
        XCTAssertThrowsError(try Future(value: list).decoded(toType: [Event].self, decoder: decoder).wait()) { error in
            guard let error = error as? ConnectError else { return XCTFail("\(error)") }
            XCTAssertEqual(error.kind, .decoding)
            XCTAssertEqual(error.codingPath, "[0].endsAt")
            XCTAssertTrue(error.message.contains(#"the value "tomorrow" at '[0].endsAt'"#), error.message)
            XCTAssertTrue(error.message.contains("ISO 8601"), error.message)
        }
        let single = Data(#"{"id":1,"startsAt":"later","endsAt":"2024-05-01T10:00:00Z"}"#.utf8)
        XCTAssertThrowsError(try Future(value: single).decoded(toType: Event.self, decoder: decoder).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.codingPath, "startsAt", "\(error)")
        }
    }

    func testMalformedJSONIsADecodingError() {
        XCTAssertThrowsError(try Future(value: Data("{not json".utf8)).decoded(toType: Todo.self).wait()) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .decoding)
        }
    }

    /// "The given data was not valid JSON." said neither where nor why. The failure now says what the parser
    /// found and where, and, when the response declared another type (an HTML login page), that type.
    func testInvalidJSONSaysWhatIsWrongAndWhatTheResponseDeclared() {
        let cases: [(body: String, contentType: String?, linuxDetail: String)] = [
            ("<html><body>Please log in</body></html>", "text/html; charset=utf-8", "around character 0"),
            (#"{"id":1,"title":"a""#, "application/json", "Unexpected end of file"),
            (#"{"id":1,"title":"a"} trailing"#, nil, "around character 21"),
        ]
        for (body, contentType, linuxDetail) in cases {
            let connect = Connect(
                transport: FakeTransport.answering(
                    .data(Data(body.utf8), status: 200, headers: contentType.map { ["Content-Type": $0] } ?? [:])),
                retryPolicy: nil)
            let decoded = connectError(of: connect.request(ClientFixtures.Endpoint()).decoded(toType: Todo.self))
            let sent = connectError(of: connect.send(ClientFixtures.GetTodo(id: 1)))
            for error in [decoded, sent] {
                let message = error?.message ?? ""
                XCTAssertEqual(error?.kind, .decoding)
                XCTAssertTrue(message.contains("the response body is not valid JSON: "), message)
                XCTAssertFalse(message.contains("The given data was not valid JSON."), message)
                #if os(Linux)
                    XCTAssertTrue(message.contains(linuxDetail), message)
                #endif
                let namesHTML = message.contains("(the response's Content-Type is text/html)")
                XCTAssertEqual(namesHTML, contentType == "text/html; charset=utf-8", message)
                XCTAssertTrue(error?.underlyingError is DecodingError)
                XCTAssertEqual(error?.body, Data(body.utf8))
                XCTAssertEqual(error?.statusCode, 200)
            }
        }
    }

    func testEmptyBodyDecodesAsNilOrEmptyResponse() throws {
        XCTAssertNil(try Future(value: Data()).decoded(toType: Todo?.self).wait())
        XCTAssertEqual(try Future(value: Data()).decoded(toType: EmptyResponse.self).wait(), EmptyResponse())
        XCTAssertThrowsError(try Future(value: Data()).decoded(toType: Todo.self).wait())
    }

    func testABodyOfOnlyWhiteSpaceDecodesAsNilOrEmptyResponseToo() throws {
        // Given: a server that sends a lone line break, or blanks, for "nothing"
        // (after a UTF-8 byte order mark too, as a body with a value after one decodes)
        for text in ["\n", "\r\n", " \t ", "\u{FEFF}", "\u{FEFF}\n"] {
            let body = Data(text.utf8)
            // Then: the types that allow no value take it; one that needs a value still fails as a decoding error
            XCTAssertNil(try Future(value: body).decoded(toType: Todo?.self).wait(), text.debugDescription)
            XCTAssertEqual(try Future(value: body).decoded(toType: EmptyResponse.self).wait(), EmptyResponse())
            XCTAssertThrowsError(try Future(value: body).decoded(toType: Todo.self).wait()) { error in
                XCTAssertEqual((error as? ConnectError)?.kind, .decoding)
            }
        }
        // And: a body with anything else in it is decoded, not taken as empty
        XCTAssertThrowsError(try Future(value: Data(" x ".utf8)).decoded(toType: Todo?.self).wait())
        XCTAssertThrowsError(try Future(value: Data([0xEF, 0xBB])).decoded(toType: Todo?.self).wait())
    }

    /// JSONDecoder reads UTF-16 and UTF-32 as well as UTF-8, told by a byte order mark or, without one, by where the
    /// zero bytes are: a body of only white space in one of them, or of only its byte order mark, holds no value
    /// either, as the same body in UTF-8 does. A body with a value in them is still decoded.
    func testABlankBodyInUTF16OrUTF32DecodesAsNilOrEmptyResponseToo() throws {
        // Given
        let bodies: [(name: String, bytes: [UInt8])] = [
            ("UTF-16LE byte order mark", [0xFF, 0xFE]),
            ("UTF-16BE byte order mark", [0xFE, 0xFF]),
            ("UTF-16LE mark and line feed", [0xFF, 0xFE, 0x0A, 0x00]),
            ("UTF-16BE mark, CR LF", [0xFE, 0xFF, 0x00, 0x0D, 0x00, 0x0A]),
            ("UTF-16LE line feed", [0x0A, 0x00]),
            ("UTF-16BE two spaces", [0x00, 0x20, 0x00, 0x20]),
            ("UTF-32LE byte order mark", [0xFF, 0xFE, 0x00, 0x00]),
            ("UTF-32BE mark and line feed", [0x00, 0x00, 0xFE, 0xFF, 0x00, 0x00, 0x00, 0x0A]),
            ("UTF-32LE tab", [0x09, 0x00, 0x00, 0x00]),
        ]
        for (name, bytes) in bodies {
            let body = Data(bytes)
            // Then: the types that allow no value take it
            XCTAssertNil(try Future(value: body).decoded(toType: Todo?.self).wait(), name)
            XCTAssertEqual(try Future(value: body).decoded(toType: EmptyResponse.self).wait(), EmptyResponse(), name)
            // And: one that needs a value fails saying the body has none, not that it is not JSON
            let error = connectError(of: Future(value: body).decoded(toType: Todo.self))
            XCTAssertEqual(error?.kind, .decoding, name)
            XCTAssertTrue(error?.message.contains("the response body has only white space") ?? false, name)
        }
        // And: a UTF-16 body with a value is decoded, and a zero character is no white space
        XCTAssertEqual(try Future(value: Data([0xFF, 0xFE, 0x37, 0x00])).decoded(toType: Int?.self).wait(), 7)
        XCTAssertEqual(try Future(value: Data([0x00, 0x37])).decoded(toType: Int?.self).wait(), 7)
        XCTAssertThrowsError(
            try Future(value: Data([0xFF, 0xFE, 0x00, 0x00, 0x00, 0x00])).decoded(toType: Todo?.self).wait())
        XCTAssertThrowsError(try Future(value: Data([0x0A, 0x00, 0x00, 0x0A])).decoded(toType: Todo?.self).wait())
    }

    /// A body with a value decodes in every encoding JSON is told apart in (`JSONSyntax.utf8(_:)`), marked or not:
    /// Foundation's `JSONDecoder` reads a UTF-32LE body after its byte order mark (`FF FE 00 00`) as UTF-16LE.
    func testAModelDecodesInUTF16AndUTF32WithOrWithoutAByteOrderMark() throws {
        let json = #"{"id":7,"title":"café ✓"}"#
        let encodings: [(String.Encoding, mark: [UInt8])] = [
            (.utf16BigEndian, []), (.utf16BigEndian, [0xFE, 0xFF]),
            (.utf16LittleEndian, []), (.utf16LittleEndian, [0xFF, 0xFE]),
            (.utf32BigEndian, []), (.utf32BigEndian, [0x00, 0x00, 0xFE, 0xFF]),
            (.utf32LittleEndian, []), (.utf32LittleEndian, [0xFF, 0xFE, 0x00, 0x00]),
        ]
        for (encoding, mark) in encodings {
            let body = Data(mark) + (try XCTUnwrap(json.data(using: encoding)))
            let result = Result { try Future(value: body).decoded(toType: Todo.self).wait() }
            XCTAssertEqual(try? result.get(), Todo(id: 7, title: "café ✓"), "\(encoding) \(mark): \(result)")
        }
    }

    func testEmptyBodyFailureSaysTheBodyIsEmpty() {
        XCTAssertThrowsError(try Future(value: Data()).decoded(toType: Todo.self).wait()) { error in
            guard let error = error as? ConnectError else { return XCTFail("\(error)") }
            XCTAssertEqual(error.kind, .decoding)
            XCTAssertTrue(error.message.contains("the response body is empty"), error.message)
            XCTAssertTrue(error.message.contains("Optional"), error.message)
            XCTAssertTrue(error.message.contains("EmptyResponse"), error.message)
            XCTAssertFalse(error.message.contains("not valid JSON"), error.message)
            XCTAssertTrue(error.underlyingError is DecodingError)
        }
    }

    /// A body of only white space or a byte order mark holds no value, as an empty one does: decoding a value from
    /// it says so, as for an empty body, rather than report a JSON syntax error ("Unexpected end of file").
    func testABodyOfOnlyWhiteSpaceFailureSaysTheBodyHasNoValue() {
        for text in ["\n", " \t ", "\u{FEFF}", "\u{FEFF}\r\n"] {
            let connect = Connect(
                transport: FakeTransport.answering(
                    .data(Data(text.utf8), headers: ["Content-Type": "application/json"])),
                retryPolicy: nil)
            let futures = [
                Future(value: Data(text.utf8)).decoded(toType: Todo.self),
                connect.request(ClientFixtures.Endpoint()).decoded(toType: Todo.self),
            ]
            for future in futures {
                let error = connectError(of: future)
                let message = error?.message ?? ""
                XCTAssertEqual(error?.kind, .decoding, text.debugDescription)
                XCTAssertTrue(message.contains("the response body has only white space"), message)
                XCTAssertTrue(message.contains("EmptyResponse"), message)
                XCTAssertFalse(message.contains("not valid JSON"), message)
                XCTAssertEqual(error?.body, Data(text.utf8))
            }
        }
    }

    func testEmptyBodyFromAClientSaysTheBodyIsEmpty() {
        // Given
        let connect = Connect(transport: FakeTransport.answering(.data(Data(), status: 200)), retryPolicy: nil)
        // When
        let error = connectError(of: connect.request(ClientFixtures.Endpoint()).decoded(toType: Todo.self))
        // Then
        XCTAssertEqual(error?.kind, .decoding)
        XCTAssertTrue(error?.message.contains("the response body is empty") ?? false, error?.message ?? "")
    }

    func testDecodingFailureOfARequestsBodyCarriesItsResponse() throws {
        // Given: a client whose response has a body that does not fit the type
        let transport = FakeTransport()
        transport.stub(
            .get, "/todos/1",
            with: .data(Data(#"{"id":"one","title":"a"}"#.utf8), headers: ["X-Request-ID": "r-1"]))
        let connect = Connect(transport: transport, retryPolicy: nil)
        for decoder in [nil, JSONDecoder()] {
            // When
            let body = connect.request(ClientFixtures.Endpoint(endpoint: "/todos/1"))
            XCTAssertThrowsError(try body.decoded(toType: Todo.self, decoder: decoder).wait()) { error in
                // Then
                guard let error = error as? ConnectError else { return XCTFail("\(error)") }
                XCTAssertEqual(error.kind, .decoding)
                XCTAssertEqual(error.statusCode, 200)
                XCTAssertEqual(error.headers["X-Request-ID"], "r-1")
                XCTAssertEqual(error.request?.url?.absoluteString, "https://api.example.com/todos/1")
                XCTAssertEqual(error.codingPath, "id")
                XCTAssertTrue(error.description.contains("[GET https://api.example.com/todos/1]"), error.description)
                XCTAssertTrue(error.description.hasSuffix("(HTTP 200)"), error.description)
            }
        }
    }

    /// A client with a property-list decoder registered for `application/x-plist`, answering with a property list.
    private func plistClient() throws -> (Connect, Data) {
        let plist = try PropertyListEncoder().encode(Todo(id: 7, title: "Plist"))
        var decoders = ResponseDecoders.default
        decoders.register(PropertyListDecoder(), for: "application/x-plist")
        let transport = FakeTransport.answering(
            .data(plist, headers: ["Content-Type": "application/x-plist; charset=utf-8"]))
        return (Connect(transport: transport, retryPolicy: nil, settings: Connect.Settings(decoders: decoders)), plist)
    }

    /// `connect.request(…).decoded(toType:)` decodes with the decoder the client registered for the response's
    /// content type, also when the body is held as a plain `Future<Data>` and when the body is already there.
    func testARequestsBodyIsDecodedByItsContentType() throws {
        // Given
        let (connect, _) = try plistClient()
        let expected = Todo(id: 7, title: "Plist")
        // When
        let decoded = connect.request(ClientFixtures.Endpoint()).decoded(toType: Todo.self)
        let body: Future<Data> = connect.request(ClientFixtures.Endpoint())
        let later = ManualTransport()
        var decoders = ResponseDecoders.default
        decoders.register(PropertyListDecoder(), for: "application/x-plist")
        let laterBody = Connect(transport: later, retryPolicy: nil, settings: Connect.Settings(decoders: decoders))
            .request(ClientFixtures.Endpoint()).decoded(toType: Todo.self)
        later.respond(
            to: 0, headers: ["Content-Type": "application/x-plist"], body: try PropertyListEncoder().encode(expected))
        // Then
        XCTAssertEqual(try decoded.wait(), expected)
        XCTAssertEqual(try body.decoded(toType: Todo.self).wait(), expected, "held as a Future<Data>")
        XCTAssertEqual(try laterBody.wait(), expected, "decoded before the response arrived")
        XCTAssertEqual(
            try connect.request(ClientFixtures.Endpoint()).decoded(toType: Todo.self).timeout(after: 60).wait(),
            expected, "decoded first, then an operator")
    }

    /// Operators that pass the body through unchanged keep what it knows of its response: decoding after them
    /// chooses the decoder by content type, as decoding before them does (issue 36: operator order changed results).
    func testOperatorsThatPassTheBodyThroughKeepItsContentType() throws {
        // Given: a body already there (the fake answers at once) and one still pending
        let (connect, _) = try plistClient()
        let expected = Todo(id: 7, title: "Plist")
        let later = ManualTransport()
        var decoders = ResponseDecoders.default
        decoders.register(PropertyListDecoder(), for: "application/x-plist")
        let laterClient = Connect(transport: later, retryPolicy: nil, settings: Connect.Settings(decoders: decoders))
        let receiver = DispatchQueue(label: "receiver")
        let passedThrough: [(String, Future<Data>)] = [
            ("timeout", connect.request(ClientFixtures.Endpoint()).timeout(after: 60)),
            ("receive(on:)", connect.request(ClientFixtures.Endpoint()).receive(on: receiver)),
            ("always", connect.request(ClientFixtures.Endpoint()).always {}),
            ("mapError", connect.request(ClientFixtures.Endpoint()).mapError { $0 }),
            ("recover", connect.request(ClientFixtures.Endpoint()).recover { _ in Data() }),
            (
                "recover with a future",
                connect.request(ClientFixtures.Endpoint()).recover { _ in Future(value: Data()) }
            ),
            ("timeout, pending", laterClient.request(ClientFixtures.Endpoint()).timeout(after: 60)),
            ("mapError, pending", laterClient.request(ClientFixtures.Endpoint()).mapError { $0 }),
            (
                "receive(on:) then timeout, pending",
                laterClient.request(ClientFixtures.Endpoint()).receive(on: receiver).timeout(after: 60)
            ),
        ]
        // When
        let decoded = passedThrough.map { ($0.0, $0.1.decoded(toType: Todo.self)) }
        for index in 0..<3 {
            later.respond(
                to: index, headers: ["Content-Type": "application/x-plist"],
                body: try PropertyListEncoder().encode(expected))
        }
        // Then
        for (name, future) in decoded {
            XCTAssertEqual(try future.wait(), expected, name)
        }
    }

    /// A `Future<Data>` that is not a response's body, including the future `map` and the like make of one, has
    /// nothing but its data: it decodes JSON unless given a decoder, and its failures name no response.
    func testAPlainDataFutureDecodesJSONWithNoHiddenState() throws {
        // Given: a response body that is a property list, and futures an operator made of it
        let (connect, plist) = try plistClient()
        let expected = Todo(id: 7, title: "Plist")
        let request: @Sendable () -> Future<Data> = { connect.request(ClientFixtures.Endpoint()) }
        let plain: [(String, Future<Data>)] = [
            ("map", request().map { $0 }),
            ("flatMap", Future(value: ()).flatMap { request() }),
            ("race", Future.race([request(), Promise<Data>().future])),
            ("a promise's future", Future(value: plist)),
        ]
        for (name, future) in plain {
            // When / Then: decoded as JSON, so the property list fails, naming no response
            XCTAssertThrowsError(try future.decoded(toType: Todo.self).wait(), name) { error in
                XCTAssertEqual((error as? ConnectError)?.kind, .decoding, name)
                XCTAssertNil((error as? ConnectError)?.request, name)
                XCTAssertNil((error as? ConnectError)?.response, name)
            }
            // With the decoder given, it decodes
            XCTAssertEqual(try future.decoded(toType: Todo.self, decoder: PropertyListDecoder()).wait(), expected, name)
        }
        // And JSON decodes as JSON
        let json = Future(value: Data(#"{"id":7,"title":"Plist"}"#.utf8))
        XCTAssertEqual(try json.decoded(toType: Todo.self).wait(), expected)
    }

    func testDecodingFailureWithoutAKnownResponseHasNone() {
        XCTAssertThrowsError(try Future(value: Data("{}".utf8)).decoded(toType: Todo.self).wait()) { error in
            XCTAssertNil((error as? ConnectError)?.response)
            XCTAssertNil((error as? ConnectError)?.request)
        }
    }

    func testCustomDecoder() throws {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        struct Item: Decodable, Sendable { let itemName: String }
        let item = try Future(value: Data(#"{"item_name":"x"}"#.utf8)).decoded(toType: Item.self, decoder: decoder)
            .wait()
        XCTAssertEqual(item.itemName, "x")
    }
}
