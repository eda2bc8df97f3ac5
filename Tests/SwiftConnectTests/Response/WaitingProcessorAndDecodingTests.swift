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

    /// The error handler still runs first: a 404 is the handler's error, not the step's.
    func testTheErrorHandlerRunsBeforeTheStep() {
        let transport = FakeTransport.answering(.json(string: #"{"message":"no such user"}"#, status: 404))
        let error = connectError(of: Connect(transport: transport).send(LegacyUser()))
        XCTAssertEqual(error?.response?.statusCode, 404)
        XCTAssertNotEqual(error?.kind, .decoding)
    }
}
