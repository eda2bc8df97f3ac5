import Dispatch
import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

/// A number that does not fit the type it decodes to (`1.5` for an `Int`, `-1` for a `UInt`): Foundation's
/// `JSONDecoder` (Swift 5.9 and later, on every platform) reports it as "The given data was not valid JSON." with no
/// coding path. The decoding error says which number, where, and that the JSON itself is valid.
final class JSONNumberFitTests: XCTestCase {
    typealias Endpoint = ClientFixtures.Endpoint

    private struct Order: Decodable, Sendable {
        struct Line: Decodable, Sendable {
            let sku: String
            let quantity: Int
        }
        let id: String
        let lines: [Line]
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// The decoding error for `body`, decoded as `type` from a response.
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

    func testAFractionForAnIntegerIsFoundWhereItIs() throws {
        let body = #"{"id":"A-1","lines":[{"sku":"pen","quantity":2},{"sku":"ink","quantity":1.5}]}"#
        let error = try XCTUnwrap(decodingError(body, as: Order.self))
        XCTAssertEqual(error.codingPath, "lines[1].quantity")
        XCTAssertEqual(
            error.message,
            "could not decode Order from the response body: the number 1.5 at 'lines[1].quantity' does not fit Int "
                + "(the JSON is valid: JSONDecoder reports such a number as \"The given data was not valid JSON.\")")
        XCTAssertTrue(error.description.hasPrefix("Decoding failed: "), error.description)
    }

    /// Every way a number can miss its type: a negative number for an unsigned type, beyond the type's range, beyond
    /// every integer type, beyond `Float`.
    func testEveryKindOfMisfitIsFound() throws {
        struct Sizes: Decodable, Sendable {
            var unsigned: UInt?
            var small: UInt8?
            var wide: Int?
            var single: Float?
        }
        let cases: [(body: String, path: String, type: String)] = [
            (#"{"unsigned":-1}"#, "unsigned", "UInt"),
            (#"{"small":300}"#, "small", "UInt8"),
            (#"{"wide":9223372036854775808}"#, "wide", "Int"),
            (#"{"wide":1e30}"#, "wide", "Int"),
            (#"{"single":1e39}"#, "single", "Float"),
        ]
        for (body, path, type) in cases {
            let error = try XCTUnwrap(decodingError(body, as: Sizes.self), body)
            XCTAssertEqual(error.codingPath, path, body)
            XCTAssertTrue(error.message.contains("at '\(path)' does not fit \(type) "), error.message)
        }
    }

    /// The path is in the model's names with a key strategy, and a `[String: …]` dictionary's keys stay as they came
    /// (JSONDecoder does not convert them).
    func testThePathFollowsTheDecodersKeyStrategy() throws {
        struct Stock: Decodable, Sendable {
            let warehouseLines: [String: UInt]
        }
        let snake = JSONDecoder()
        snake.keyDecodingStrategy = .convertFromSnakeCase
        let body = #"{"warehouse_lines":{"north_east":4,"south_west":-2}}"#
        let error = try XCTUnwrap(decodingError(body, as: Stock.self, decoder: snake))
        XCTAssertEqual(error.codingPath, "warehouseLines.south_west")

        // Dates decode by the decoder's own strategy on the way to the number.
        struct Shipment: Decodable, Sendable {
            let shippedAt: Date
            let parcelCount: UInt
        }
        snake.dateDecodingStrategy = .iso8601
        let shipment =
            #"[{"shipped_at":"2024-05-01T10:00:00Z","parcel_count":3},{"shipped_at":"2024-05-02T10:00:00Z","parcel_count":-3}]"#
        XCTAssertEqual(decodingError(shipment, as: [Shipment].self, decoder: snake)?.codingPath, "[1].parcelCount")

        let custom = JSONDecoder()
        custom.keyDecodingStrategy = .custom { path in
            let last = path[path.count - 1]
            return Key(stringValue: last.stringValue.lowercased())
        }
        struct Upper: Decodable, Sendable { let total: Int }
        XCTAssertEqual(decodingError(#"{"TOTAL":0.5}"#, as: Upper.self, decoder: custom)?.codingPath, "total")
    }

    /// When the walk cannot find the number, the message still says that the JSON parses, and what JSONDecoder means.
    func testWithoutTheNumberFoundTheMessageStillExplains() throws {
        struct Opaque: Decodable, Sendable {
            init(from decoder: any Decoder) throws {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: [], debugDescription: "The given data was not valid JSON."))
            }
        }
        let error = try XCTUnwrap(decodingError(#"{"a":1}"#, as: Opaque.self))
        XCTAssertNil(error.codingPath)
        XCTAssertTrue(
            error.message.hasPrefix(
                "could not decode Opaque from the response body: JSONDecoder refused a value, most likely a number"),
            error.message)
        XCTAssertTrue(
            error.message.hasSuffix(
                "(the JSON is valid: JSONDecoder reports such a number as \"The given data was not valid JSON.\")"),
            error.message)
    }

    /// A tree of lists, as deep as its body.
    private indirect enum Tree: Decodable, Sendable {
        case leaf(UInt)
        case node([Tree])
        init(from decoder: any Decoder) throws {
            if var list = try? decoder.unkeyedContainer() {
                var children: [Tree] = []
                while !list.isAtEnd { children.append(try list.decode(Tree.self)) }
                self = .node(children)
            } else {
                self = .leaf(try decoder.singleValueContainer().decode(UInt.self))
            }
        }
    }

    /// The deepest body walked is walked on a thread with the stack of an Apple dispatch worker (512 KiB), where
    /// responses are decoded.
    func testTheDeepestBodyWalkedFitsAWorkerThreadsStack() throws {
        let depth = JSONNumberFit.maximumDepth
        let body = Data((String(repeating: "[", count: depth) + "-1" + String(repeating: "]", count: depth)).utf8)
        let found = Protected<String??>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let misfit = JSONNumberFit.locate(Tree.self, in: body, with: JSONDecoder())
            found.withLock { $0 = .some(misfit?.path) }
            done.signal()
        }
        thread.stackSize = 512 * 1_024
        thread.start()
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success, "the walk did not finish")
        XCTAssertEqual(found.snapshot, .some(String(repeating: "[0]", count: depth)))
    }

    /// A body nested deeper than the walk goes is not walked (its stack stays small); the message still explains.
    func testADeepBodyIsNotWalked() throws {
        let shallow = String(repeating: "[", count: 10) + "-1" + String(repeating: "]", count: 10)
        XCTAssertEqual(
            decodingError(shallow, as: Tree.self)?.codingPath, (0..<10).map { _ in "[0]" }.joined())
        let deep = String(repeating: "[", count: 200) + "-1" + String(repeating: "]", count: 200)
        let error = try XCTUnwrap(decodingError(deep, as: Tree.self))
        XCTAssertNil(error.codingPath)
        XCTAssertTrue(error.message.contains("most likely a number that does not fit its type"), error.message)
    }

    /// A type that decodes its number through a single-value container of its own is looked into.
    func testANumberInsideAWrapperTypeIsFound() throws {
        struct Cents: Decodable, Sendable {
            let value: UInt
            init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(UInt.self) }
        }
        struct Refund: Decodable, Sendable { let amount: Cents }
        let error = try XCTUnwrap(decodingError(#"{"amount":-250}"#, as: Refund.self))
        XCTAssertEqual(error.codingPath, "amount")
        let wrapped = try XCTUnwrap(decodingError(#"[{"amount":-250}]"#, as: [Refund].self))
        XCTAssertEqual(wrapped.codingPath, "[0].amount")
        XCTAssertTrue(wrapped.message.contains("the number -250 at '[0].amount' does not fit UInt"), wrapped.message)
    }

    /// A number that is the whole body has no path.
    func testANumberThatIsTheWholeBodyHasNoPath() throws {
        let error = try XCTUnwrap(decodingError("2.5", as: Int.self))
        XCTAssertNil(error.codingPath)
        XCTAssertTrue(error.message.contains(": the number 2.5 does not fit Int (the JSON is valid"), error.message)
    }

    /// A type's own `dataCorrupted` error with no path is its message, not taken for a number.
    func testATypesOwnCorruptionErrorIsKept() throws {
        struct Status: Decodable, Sendable {
            init(from decoder: any Decoder) throws {
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "unknown status"))
            }
        }
        let error = try XCTUnwrap(decodingError(#"{"status":"weird"}"#, as: Status.self))
        XCTAssertEqual(error.message, "could not decode Status from the response body: invalid data: unknown status")
    }

    /// The walk converts snake_case keys exactly as JSONDecoder does, which it reports through `allKeys`.
    func testSnakeCaseKeysConvertAsJSONDecoderConvertsThem() throws {
        struct Keys: Decodable {
            let names: [String]
            init(from decoder: any Decoder) throws {
                names = try decoder.container(keyedBy: Key.self).allKeys.map(\.stringValue)
            }
        }
        let snake = JSONDecoder()
        snake.keyDecodingStrategy = .convertFromSnakeCase
        let keys = [
            "user_id", "_leading", "trailing_", "__both__", "a__b", "ALL_CAPS", "already", "camelCase", "a_b_c", "_",
            "__",
            "x_1", "mixed_Case_Key", "", "url_path_2x", "élan_vital", "_private_value_",
        ]
        for key in keys {
            let body = try JSONSerialization.data(withJSONObject: [key: 1])
            let foundation = try snake.decode(Keys.self, from: body).names
            XCTAssertEqual([JSONNumberFit.camelCase(fromSnakeCase: key)], foundation, key)
        }
    }

    // MARK: Other ways in

    /// A JSON body decoded by a `DecodingConnector`'s own step.
    private struct Step<Value: Sendable>: DecodingConnector {
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/orders/1" }
        let make: @Sendable (ConnectResponse) throws -> Value
        func decode(_ response: ConnectResponse, using decoders: ResponseDecoders) throws -> Value {
            try make(response)
        }
    }

    private func stepError<Value: Sendable>(
        _ body: String, _ make: @escaping @Sendable (ConnectResponse) throws -> Value, file: StaticString = #filePath,
        line: UInt = #line
    ) -> ConnectError? {
        let connect = Connect(transport: FakeTransport.answering(.json(string: body)), retryPolicy: nil)
        let error = connectError(of: connect.send(Step(make: make)), file: file, line: line)
        XCTAssertEqual(error?.kind, .decoding, file: file, line: line)
        XCTAssertEqual(error?.response?.statusCode, 200, file: file, line: line)
        return error
    }

    private let orderBody = #"{"id":"A-1","lines":[{"sku":"pen","quantity":2},{"sku":"ink","quantity":1.5}]}"#
    private let validJSONNote =
        "(the JSON is valid: JSONDecoder reports such a number as \"The given data was not valid JSON.\")"

    /// A step that decodes from the body gets the explanation (a number that does not fit), not Foundation's "not
    /// valid JSON" about valid JSON.
    func testADecodingConnectorsStepExplainsTheMisfit() throws {
        let error = try XCTUnwrap(stepError(orderBody) { try JSONDecoder().decode(Order.self, from: $0.data) })
        // The step decoded what it chose, from a part it chose: no type is decoded again to find the path.
        XCTAssertNil(error.codingPath)
        XCTAssertTrue(
            error.message.hasPrefix(
                "could not decode Order from the response body: JSONDecoder refused a value, most likely a number"),
            error.message)
        XCTAssertTrue(error.message.hasSuffix(validJSONNote), error.message)
        XCTAssertTrue(error.underlyingError is DecodingError)
    }

    /// A step that reads the body through `JSONValue` and decodes a part of it gets the number and its path in that
    /// part.
    func testAStepThroughJSONValueNamesTheNumber() throws {
        let body = #"{"order":"# + orderBody + "}"
        let error = try XCTUnwrap(
            stepError(body) { response -> Order in
                let json = try JSONDecoder().decode(JSONValue.self, from: response.data)
                return try XCTUnwrap(json["order"]).decoded(as: Order.self)
            })
        XCTAssertEqual(error.codingPath, "lines[1].quantity")
        XCTAssertEqual(
            error.message,
            "could not decode Order from the response body: invalid data: the number 1.5 does not fit Int "
                + validJSONNote + " at 'lines[1].quantity'")
    }

    /// A step whose value is not `Decodable` decodes something else: the number cannot be looked for, but the message
    /// still says what JSONDecoder means.
    func testAStepOfAValueThatIsNotDecodableStillExplains() throws {
        struct Total: Sendable { let sum: UInt }
        let error = try XCTUnwrap(
            stepError("[1,-2]") { Total(sum: try JSONDecoder().decode([UInt].self, from: $0.data).reduce(0, +)) })
        XCTAssertNil(error.codingPath)
        XCTAssertTrue(
            error.message.hasPrefix(
                "could not decode Total from the response body: JSONDecoder refused a value, most likely a number"),
            error.message)
        XCTAssertTrue(error.message.hasSuffix(validJSONNote), error.message)
    }

    /// A body that is not JSON is not taken for a number that does not fit, nor is a step's own error.
    func testAStepsOtherFailuresKeepTheirMessages() throws {
        let broken = try XCTUnwrap(
            stepError(#"{"id":"A-1","lines":["#) { try JSONDecoder().decode(Order.self, from: $0.data) })
        XCTAssertNil(broken.codingPath)
        XCTAssertEqual(
            broken.message,
            "could not decode Order from the response body: invalid data: The given data was not valid JSON.")
        let own = try XCTUnwrap(
            stepError(orderBody) { _ -> Order in
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "unknown status"))
            })
        XCTAssertEqual(own.message, "could not decode Order from the response body: invalid data: unknown status")
    }

    /// `JSONValue.decoded(as:decoder:)` throws a `DecodingError` with the number's path, by the decoder's strategies.
    func testJSONValueDecodedNamesTheNumber() throws {
        let order = try JSONDecoder().decode(JSONValue.self, from: Data(orderBody.utf8))
        XCTAssertThrowsError(try order.decoded(as: Order.self)) { error in
            guard case .dataCorrupted(let context)? = error as? DecodingError else { return XCTFail("\(error)") }
            XCTAssertEqual(ConnectError.codingPathDescription(context.codingPath), "lines[1].quantity")
            XCTAssertEqual(context.debugDescription, "the number 1.5 does not fit Int " + validJSONNote)
            XCTAssertTrue(context.underlyingError.map(JSONNumberFit.isNotValidJSONReport) ?? false)
        }
        struct Stock: Decodable { let parcelCount: UInt }
        let snake = JSONDecoder()
        snake.keyDecodingStrategy = .convertFromSnakeCase
        XCTAssertThrowsError(try JSONValue.object(["parcel_count": .int(-3)]).decoded(as: Stock.self, decoder: snake)) {
            guard case .dataCorrupted(let context)? = $0 as? DecodingError else { return XCTFail("\($0)") }
            XCTAssertEqual(ConnectError.codingPathDescription(context.codingPath), "parcelCount")
            XCTAssertEqual(context.debugDescription, "the number -3 does not fit UInt " + validJSONNote)
        }
        // Other failures are JSONDecoder's own.
        XCTAssertThrowsError(try JSONValue.object([:]).decoded(as: Stock.self)) {
            guard case .keyNotFound? = $0 as? DecodingError else { return XCTFail("\($0)") }
        }
    }

    /// A `TypedConnector` with a decoder of its own is decoded by it, the number found by its strategies.
    func testATypedConnectorsOwnDecoderNamesTheNumber() throws {
        struct Stock: Decodable, Sendable { let parcelCount: UInt }
        struct GetStock: TypedConnector {
            typealias Response = Stock
            var baseURL: URL { URL(string: "https://api.example.com")! }
            var endpoint: String { "/stock" }
            var decoder: (any ResponseBodyDecoder)? {
                let snake = JSONDecoder()
                snake.keyDecodingStrategy = .convertFromSnakeCase
                return snake
            }
        }
        let connect = Connect(
            transport: FakeTransport.answering(.json(string: #"{"parcel_count":-3}"#)), retryPolicy: nil)
        let error = try XCTUnwrap(connectError(of: connect.send(GetStock())))
        XCTAssertEqual(error.codingPath, "parcelCount")
        XCTAssertEqual(
            error.message,
            "could not decode Stock from the response body: the number -3 at 'parcelCount' does not fit UInt "
                + validJSONNote)
    }

    // MARK: Missing keys

    /// With `convertFromSnakeCase`, a missing key is named as the model has it and as the JSON would have it; a key
    /// that no usual snake_case key becomes (`imageURL`), or one that is the same in both, is named once; a model key
    /// in snake_case is said to be one the strategy never finds.
    func testAMissingKeySaysItsSnakeCaseNameWithThatStrategy() throws {
        struct Profile: Decodable, Sendable {
            let userId: Int
            let imageURL: String
            let name: String
        }
        struct Team: Decodable, Sendable { let owner: Profile }
        let snake = JSONDecoder()
        snake.keyDecodingStrategy = .convertFromSnakeCase
        XCTAssertEqual(
            decodingError(#"{"owner":{"user":1}}"#, as: Team.self, decoder: snake)?.message,
            "could not decode Team from the response body: missing key 'userId' at 'owner' (user_id in the JSON)")
        XCTAssertEqual(
            decodingError(#"{"user_id":1}"#, as: Profile.self, decoder: snake)?.message,
            "could not decode Profile from the response body: missing key 'imageURL'")
        XCTAssertEqual(
            decodingError(#"{"user_id":1,"image_url":"x"}"#, as: Profile.self, decoder: snake)?.message,
            "could not decode Profile from the response body: missing key 'imageURL'")
        XCTAssertEqual(
            decodingError(#"{"user_id":1,"imageURL":"x"}"#, as: Profile.self, decoder: snake)?.message,
            "could not decode Profile from the response body: missing key 'name'")
        // A model key in snake_case is never found with that strategy, which converts the JSON's.
        struct Legacy: Decodable, Sendable {
            let userId: Int
            enum CodingKeys: String, CodingKey { case userId = "user_id" }
        }
        XCTAssertEqual(
            decodingError(#"{"user_id":1}"#, as: Legacy.self, decoder: snake)?.message,
            "could not decode Legacy from the response body: missing key 'user_id' "
                + "(the decoder's convertFromSnakeCase reads user_id in the JSON as userId)")
        // Without the strategy, the key is the JSON's.
        XCTAssertEqual(
            decodingError(#"{"user_id":1}"#, as: Profile.self)?.message,
            "could not decode Profile from the response body: missing key 'userId'")
    }
}
