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

    func testEmptyBodyFromAClientSaysTheBodyIsEmpty() {
        // Given
        let connect = Connect(transport: FakeTransport.answering(.data(Data(), status: 200)), retryPolicy: nil)
        // When
        let error = connectError(of: connect.request(ClientFixtures.Endpoint()).decoded(toType: Todo.self))
        // Then
        XCTAssertEqual(error?.kind, .decoding)
        XCTAssertTrue(error?.message.contains("the response body is empty") ?? false, error?.message ?? "")
    }

    func testDecodingFailureCarriesTheResponseTheBodyHintRecords() throws {
        // Given: a body future as Connect completes it, with the response it came from
        let request = URLRequest(url: URL(string: "https://api.example.com/todos/1")!)
        let data = Data(#"{"id":"one","title":"a"}"#.utf8)
        let response = try XCTUnwrap(
            ConnectResponse(request: request, statusCode: 200, headers: ["X-Request-ID": "r-1"], data: data))
        for decoder in [nil, JSONDecoder()] {
            let body = Promise<Data>().future
            body.resolve(.success(data), hint: BodyHint(decoder: JSONDecoder(), response: response)).run()
            // When
            XCTAssertThrowsError(try body.decoded(toType: Todo.self, decoder: decoder).wait()) { error in
                // Then
                guard let error = error as? ConnectError else { return XCTFail("\(error)") }
                XCTAssertEqual(error.kind, .decoding)
                XCTAssertEqual(error.statusCode, 200)
                XCTAssertEqual(error.headers["X-Request-ID"], "r-1")
                XCTAssertEqual(error.request?.url, request.url)
                XCTAssertEqual(error.codingPath, "id")
                XCTAssertTrue(error.description.contains("[GET https://api.example.com/todos/1]"), error.description)
                XCTAssertTrue(error.description.hasSuffix("(HTTP 200)"), error.description)
            }
        }
    }

    /// `connect.request(…).receive(on: .main).decoded(toType:)`, or a body reached through `flatMap`, keeps what the client knows
    /// what the client knows about the body (its content type's decoder, and the response for a failure).
    func testDecodingAfterReceiveOnUsesTheClientsDecoderAndKeepsTheResponse() throws {
        let request = URLRequest(url: URL(string: "https://api.example.com/items/1")!)
        let snakeCase = JSONDecoder()
        snakeCase.keyDecodingStrategy = .convertFromSnakeCase
        struct Item: Decodable, Sendable { let itemName: String }
        let queue = DispatchQueue(label: "receiver")
        for (body, succeeds) in [(#"{"item_name":"x"}"#, true), (#"{"other":1}"#, false)] {
            let data = Data(body.utf8)
            let response = try XCTUnwrap(ConnectResponse(request: request, statusCode: 200, headers: [:], data: data))
            let promise = Promise<Data>()
            let trigger = Promise<Void>()
            let paths: [(String, Future<Item>)] = [
                ("receive(on:)", promise.future.receive(on: queue).decoded(toType: Item.self)),
                (
                    "receive(on:) twice",
                    promise.future.receive(on: queue).receive(on: .global()).decoded(toType: Item.self)
                ),
                ("flatMap", trigger.future.flatMap { promise.future }.decoded(toType: Item.self)),
                ("flatMap on a value", Future(value: ()).flatMap { promise.future }.decoded(toType: Item.self)),
            ]
            trigger.succeed(())
            promise.future.resolve(.success(data), hint: BodyHint(decoder: snakeCase, response: response)).run()
            for (name, decoded) in paths {
                let result = try decoded.waitForResult()
                if succeeds {
                    XCTAssertEqual(try result.get().itemName, "x", name)
                } else {
                    XCTAssertThrowsError(try result.get(), name) { error in
                        XCTAssertEqual((error as? ConnectError)?.kind, .decoding, name)
                        XCTAssertEqual((error as? ConnectError)?.request?.url, request.url, name)
                        XCTAssertEqual((error as? ConnectError)?.statusCode, 200, name)
                    }
                }
            }
        }
    }

    /// `connect.request(…).mapError { … }.decoded(toType:)`, or with `recover`, `timeout(after:)` or `race(_:)`: a
    /// success passes through unchanged, and so does what the client knows about the body, whether the body is
    /// already there or not.
    func testDecodingAfterMapErrorOrRecoverUsesTheClientsDecoderAndKeepsTheResponse() throws {
        let request = URLRequest(url: URL(string: "https://api.example.com/items/1")!)
        let snakeCase = JSONDecoder()
        snakeCase.keyDecodingStrategy = .convertFromSnakeCase
        struct Item: Decodable, Sendable { let itemName: String }
        for (body, succeeds) in [(#"{"item_name":"x"}"#, true), (#"{"other":1}"#, false)] {
            let data = Data(body.utf8)
            let response = try XCTUnwrap(ConnectResponse(request: request, statusCode: 200, headers: [:], data: data))
            for alreadyComplete in [false, true] {
                let promise = Promise<Data>()
                let complete = {
                    promise.future.resolve(.success(data), hint: BodyHint(decoder: snakeCase, response: response)).run()
                }
                if alreadyComplete { complete() }
                let paths: [(String, Future<Item>)] = [
                    ("mapError", promise.future.mapError { $0 }.decoded(toType: Item.self)),
                    ("recover", promise.future.recover { _ in Data() }.decoded(toType: Item.self)),
                    ("recover with a future", promise.future.recover { _ in Future(value: Data()) }.decoded()),
                    ("timeout", promise.future.timeout(after: 60).decoded(toType: Item.self)),
                    ("race", Future.race([promise.future, Promise<Data>().future]).decoded(toType: Item.self)),
                ]
                if !alreadyComplete { complete() }
                for (name, decoded) in paths {
                    let name = "\(name), body complete first: \(alreadyComplete)"
                    let result = try decoded.waitForResult()
                    if succeeds {
                        XCTAssertEqual(try result.get().itemName, "x", name)
                    } else {
                        XCTAssertThrowsError(try result.get(), name) { error in
                            XCTAssertEqual((error as? ConnectError)?.request?.url, request.url, name)
                            XCTAssertEqual((error as? ConnectError)?.statusCode, 200, name)
                        }
                    }
                }
            }
        }
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
