import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Processors that wait, and connectors that own their decoding step (issue 38, item 7).
final class WaitingProcessorAndDecodingTests: XCTestCase {
    private struct User: Equatable, Sendable {
        var name: String
        var age: Int
    }

    private struct LegacyFormatError: Error {}

    /// Data → JSON value → a model that is not `Decodable`.
    private struct LegacyUser: DecodingConnector {
        var baseURL: URL { URL(string: "https://legacy.test")! }
        var endpoint: String { "/user.php" }

        func decode(_ response: ConnectResponse, using decoders: ResponseDecoders) throws -> User {
            let json = try JSONDecoder().decode(JSONValue.self, from: response.data)
            guard let name = json["u_name"]?.stringValue else { throw LegacyFormatError() }
            return User(name: name, age: json["u_age"]?.intValue ?? 0)
        }
    }

    private func appending(_ text: String) -> AnyResponseProcessor {
        AnyResponseProcessor { response in
            var response = response
            response.data.append(Data(text.utf8))
            return response
        }
    }

    /// The call waits for the processor, which runs in its place between the others.
    func testAProcessorThatWaitsIsAwaitedInItsPlace() {
        let started = Promise<Void>()
        let release = Promise<Void>()
        let waiting = AnyResponseProcessor { response in
            started.complete(with: .success(()))
            try await release.future.value
            var response = response
            response.data.append(Data("b".utf8))
            return response
        }
        let transport = FakeTransport.answering(.data(Data()))
        let options = RequestOptions(processors: [appending("a"), waiting, appending("c")])
        let body = Connect(transport: transport).request(Route(url: URL(string: "https://api.test")!), options: options)
        XCTAssertNotNil(value(of: started.future))
        XCTAssertFalse(body.isCompleted, "the call waits for the processor")
        release.complete(with: .success(()))
        XCTAssertEqual(value(of: body).map { String(decoding: $0, as: UTF8.self) }, "abc")
    }

    private struct Decrypt: AsyncResponseProcessor {
        func process(_ response: ConnectResponse) async throws -> ConnectResponse {
            await Task.yield()
            var response = response
            response.data = Data(response.data.reversed())
            return response
        }
    }

    /// A typed call decodes what the processor that waits made.
    func testATypedCallDecodesAfterAProcessorThatWaits() {
        struct Numbers: TypedConnector {
            typealias Response = [Int]
            var baseURL: URL { URL(string: "https://api.test")! }
            var endpoint: String { "/n" }
        }
        let transport = FakeTransport.answering(
            .data(Data("]3,2,1[".utf8), headers: ["Content-Type": "application/json"]))
        let connect = Connect(
            transport: transport,
            settings: Connect.Settings(options: RequestOptions(processors: [AnyResponseProcessor(Decrypt())])))
        XCTAssertEqual(value(of: connect.send(Numbers())), [1, 2, 3])
    }

    func testAProcessorThatWaitsAndThrowsRejectsTheResponse() {
        struct Locked: Error {}
        let failing = AnyResponseProcessor { (_: ConnectResponse) async throws -> ConnectResponse in throw Locked() }
        let transport = FakeTransport.answering(.data(Data("x".utf8)))
        let error = connectError(
            of: Connect(transport: transport).request(
                Route(url: URL(string: "https://api.test")!), options: RequestOptions(processors: [failing])))
        XCTAssertEqual(error?.kind, .rejected)
        XCTAssertTrue(error?.underlyingError is Locked)
        XCTAssertThrowsError(
            try failing.process(ConnectResponse.json("{}", for: URLRequest(url: URL(string: "https://a.test")!))))
    }

    /// The call's deadline covers a processor that waits: one that never returns (a key store that hangs) held the
    /// call past its `timeout`, for ever. It fails timed out, as any part of the call past its deadline does.
    func testTheCallsDeadlineCoversAProcessorThatWaits() throws {
        let started = Promise<Void>()
        let never = Promise<Void>()
        let hangs = AnyResponseProcessor { response in
            started.complete(with: .success(()))
            try await never.future.value
            return response
        }
        let transport = FakeTransport.answering(.data(Data("x".utf8)))
        let call = Connect(transport: transport, retryPolicy: nil).request(
            Route(url: URL(string: "https://api.test")!), options: RequestOptions(processors: [hangs], timeout: 0.3))
        XCTAssertNotNil(value(of: started.future))
        let error = try XCTUnwrap(connectError(of: call))
        XCTAssertEqual(error.kind, .timedOut, "\(error)")
        XCTAssertTrue(error.message.contains("0.3"), error.message)
        never.complete(with: .success(()))
    }

    // MARK: Connectors that own their decoding

    func testAConnectorOwnsItsDecodingStep() {
        let transport = FakeTransport.answering(.json(string: #"{"u_name":"ada","u_age":36}"#))
        XCTAssertEqual(value(of: Connect(transport: transport).send(LegacyUser())), User(name: "ada", age: 36))
    }

    func testAStepThatThrowsFailsWithADecodingErrorCarryingTheResponse() {
        let transport = FakeTransport.answering(.json(string: #"{"name":"ada"}"#))
        let error = connectError(of: Connect(transport: transport).send(LegacyUser()))
        XCTAssertEqual(error?.kind, .decoding)
        XCTAssertTrue(error?.underlyingError is LegacyFormatError)
        XCTAssertEqual(error?.response?.statusCode, 200)
        XCTAssertEqual(error?.body, Data(#"{"name":"ada"}"#.utf8))
        XCTAssertTrue(error?.message.contains("LegacyUser") ?? false, error?.message ?? "")
    }

    /// A step that decodes and fails said so in Swift's raw words, without the coding path `decoded` gives.
    func testAStepWhoseDecodingFailsGivesTheCodingPath() {
        let transport = FakeTransport.answering(.json(string: #"{"id":"x"}"#))
        let error = connectError(of: Connect(transport: transport).send(TodoByJSONDecoder()))
        XCTAssertEqual(error?.kind, .decoding)
        XCTAssertEqual(error?.codingPath, "id")
        XCTAssertEqual(error?.response?.statusCode, 200)
        XCTAssertEqual(error?.body, Data(#"{"id":"x"}"#.utf8))
    }

    /// A step whose decoder finds no value in the body says why, as `decoded(toType:)` does: an empty or blank
    /// body is said to be empty, and a body that is not JSON names the content type the server declared (a sign-in
    /// page), rather than Foundation's "The given data was not valid JSON." alone.
    func testAStepThatFindsNoJSONSaysTheBodyIsEmptyOrNamesItsContentType() {
        func error(_ body: String, contentType: String) -> ConnectError? {
            let answer = FakeResponse.data(Data(body.utf8), headers: ["Content-Type": contentType])
            return connectError(of: Connect(transport: FakeTransport.answering(answer)).send(TodoByJSONDecoder()))
        }

        for (body, what) in [("", "is empty"), (" \r\n", "has only white space")] {
            let empty = error(body, contentType: "application/json")
            XCTAssertEqual(empty?.kind, .decoding)
            XCTAssertEqual(
                empty?.message,
                "could not decode Todo from the response body: the response body \(what) "
                    + "(decode an Optional or EmptyResponse for a response that may have no body)")
        }
        let page = error("<html><body>Sign in</body></html>", contentType: "text/html; charset=utf-8")
        XCTAssertEqual(page?.kind, .decoding)
        XCTAssertEqual(page?.response?.statusCode, 200)
        XCTAssertTrue(page?.message.contains("not valid JSON") ?? false, page?.message ?? "")
        XCTAssertTrue(page?.message.contains("the response's Content-Type is text/html") ?? false, page?.message ?? "")
        // JSON that does not fit the model keeps the coding path's message.
        XCTAssertEqual(error(#"{"id":"x"}"#, contentType: "application/json")?.codingPath, "id")
    }

    /// JSON nested deeper than `JSONValue` decodes fails with a decoding error on a thread with Apple's 512 KiB
    /// dispatch stack (the process crashed at about 175 levels); shallower JSON decodes.
    func testJSONValueRefusesNestingThatWouldExhaustAThreadsStack() throws {
        @Sendable func nested(_ depth: Int) -> Data {
            Data((String(repeating: #"{"a":["#, count: depth) + "1" + String(repeating: "]}", count: depth)).utf8)
        }
        let outcome = Guarded<Result<JSONValue, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            outcome.withLock { $0 = Result { try JSONDecoder().decode(JSONValue.self, from: nested(150)) } }
            done.signal()
        }
        // A sanitizer's frames are larger: the bound is about the library's depth limit, not the platform's stack.
        thread.stackSize = ProcessMemory.isSanitized ? 8 << 20 : 512 << 10
        thread.start()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertThrowsError(try outcome.snapshot?.get()) { error in
            guard case .dataCorrupted(let context)? = error as? DecodingError else { return XCTFail("\(error)") }
            XCTAssertTrue(context.debugDescription.contains("128 levels"), context.debugDescription)
        }
        let shallow = try JSONDecoder().decode(JSONValue.self, from: nested(60))
        XCTAssertEqual(shallow["a"]?[0]?["a"]?[0]?.objectValue?.count, 1)
    }

    /// JSON does not tell `2` from `2.0`: a whole number decodes as `.int`, and equal numbers are equal values, so a
    /// value survives a round trip through JSON.
    func testJSONValueNumbersCompareByValue() throws {
        let decoded = try JSONDecoder().decode(JSONValue.self, from: Data("[2.0, 1e3, 2.5]".utf8))
        XCTAssertEqual(decoded, [2.0, 1000, 2.5])
        let double: JSONValue = .double(2.0)
        XCTAssertEqual(try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(double)), double)
        XCTAssertEqual(Set<JSONValue>([.int(2), .double(2.0), .double(2.5)]).count, 2)
        XCTAssertNotEqual(JSONValue.int(2), .double(2.5))
        XCTAssertNotEqual(JSONValue.int(1), .bool(true))
    }

    /// The error handler still runs first: a 404 is the handler's error, not the step's.
    func testTheErrorHandlerRunsBeforeTheStep() {
        let transport = FakeTransport.answering(.json(string: #"{"message":"no such user"}"#, status: 404))
        let error = connectError(of: Connect(transport: transport).send(LegacyUser()))
        XCTAssertEqual(error?.response?.statusCode, 404)
        XCTAssertNotEqual(error?.kind, .decoding)
    }
}

/// A connector whose own step decodes the body with a plain `JSONDecoder`, as a user's step would: what SwiftConnect
/// adds to such a step's failure is what the tests above check.
private struct TodoByJSONDecoder: DecodingConnector {
    struct Todo: Decodable { var id: Int }

    var baseURL: URL { URL(string: "https://api.test")! }
    var endpoint: String { "/todo" }

    func decode(_ response: ConnectResponse, using decoders: ResponseDecoders) throws -> Todo {
        try JSONDecoder().decode(Todo.self, from: response.data)
    }
}
