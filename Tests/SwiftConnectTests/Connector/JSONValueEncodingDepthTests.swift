import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A ``JSONValue`` or ``JSONObject`` built in code (a tree, a thread of replies) may nest deeper than any decoded
/// one: encoding it, to send it or to print it, fails with an error instead of exhausting the thread's stack.
final class JSONValueEncodingDepthTests: XCTestCase {
    private static func nestedArrays(_ depth: Int) -> JSONValue {
        var value: JSONValue = 1
        for _ in 0..<depth { value = .array([value]) }
        return value
    }

    private static func nestedObjects(_ depth: Int) -> JSONObject {
        var object: JSONObject = ["leaf": 1]
        for _ in 0..<depth { object = ["child": object] }
        return object
    }

    /// Runs `body` on a thread with a 512 KiB stack, an Apple dispatch worker's, where requests are built.
    private func onWorkerSizedStack(_ body: @escaping @Sendable () -> Void) {
        let done = expectation(description: "finished")
        let thread = Thread {
            body()
            done.fulfill()
        }
        thread.stackSize = 512 * 1_024
        thread.start()
        wait(for: [done], timeout: 60)
    }

    func testADeepJSONValueBodyFailsTheRequestInsteadOfCrashing() throws {
        let transport = FakeTransport.answering(.status(204))
        let api = Connect(host: "api.test", transport: transport)
        let route = Route("/tree", method: .post, parameters: Parameter.jsonObject(value: Self.nestedArrays(5_000)))
        let error = try XCTUnwrap(connectError(of: api.request(route)))
        XCTAssertEqual(error.kind, .invalidRequest)
        guard case .bodyEncodingFailed(let reason)? = error.invalidRequestReason else {
            return XCTFail("\(String(describing: error.invalidRequestReason))")
        }
        XCTAssertTrue(reason.contains("128"), reason)
        XCTAssertTrue(transport.requests.isEmpty, "nothing is sent")
    }

    func testADeepJSONObjectBodyFailsTheRequestInsteadOfCrashing() throws {
        let transport = FakeTransport.answering(.status(204))
        let api = Connect(host: "api.test", transport: transport)
        let route = Route("/tree", method: .post, parameters: Parameter.jsonObject(value: Self.nestedObjects(5_000)))
        let error = try XCTUnwrap(connectError(of: api.request(route)))
        XCTAssertEqual(error.kind, .invalidRequest)
        XCTAssertTrue(transport.requests.isEmpty, "nothing is sent")
    }

    func testEncodingOnAWorkerSizedStackStopsAtTheDecodingLimit() {
        onWorkerSizedStack {
            do {
                _ = try JSONEncoder().encode(Self.nestedArrays(400))
                XCTFail("a JSONValue 400 levels deep encoded")
            } catch EncodingError.invalidValue {
            } catch {
                XCTFail("\(error)")
            }
            XCTAssertNil(try? JSONEncoder().encode(Self.nestedObjects(400)))
            XCTAssertEqual(Self.nestedArrays(400).description, "<not encodable as JSON>")
        }
    }

    /// What decodes encodes back: a `JSONValue`'s limit is the same both ways. A `JSONObject`, whose levels take more
    /// stack, stops at 64.
    func testAValueAtTheLimitRoundTrips() throws {
        let deepest = Self.nestedArrays(128)
        let data = try JSONEncoder().encode(deepest)
        XCTAssertEqual(try JSONDecoder().decode(JSONValue.self, from: data), deepest)
        XCTAssertThrowsError(try JSONEncoder().encode(Self.nestedArrays(129)))
        XCTAssertNoThrow(try JSONEncoder().encode(Self.nestedObjects(64)))
        XCTAssertThrowsError(try JSONEncoder().encode(Self.nestedObjects(65)))
        let tooDeep = String(repeating: "[", count: 129) + "1" + String(repeating: "]", count: 129)
        XCTAssertThrowsError(try JSONDecoder().decode(JSONValue.self, from: Data(tooDeep.utf8)))
    }
}
