import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

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

    func testEmptyBodyDecodesAsNilOrEmptyResponse() throws {
        XCTAssertNil(try Future(value: Data()).decoded(toType: Todo?.self).wait())
        XCTAssertEqual(try Future(value: Data()).decoded(toType: EmptyResponse.self).wait(), EmptyResponse())
        XCTAssertThrowsError(try Future(value: Data()).decoded(toType: Todo.self).wait())
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
