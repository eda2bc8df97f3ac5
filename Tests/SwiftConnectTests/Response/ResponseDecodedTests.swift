import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `ConnectResponse.decoded(as:decoder:)`: a typed value beside the status and headers, for a whole response
/// (`response(for:)`), a built request's included.
final class ResponseDecodedTests: XCTestCase {
    private struct Todo: Codable, Equatable, Sendable {
        let id: Int
        let title: String
    }

    /// Decodes whatever it is given as one fixed `Todo`: shows that the caller's decoder is the one used.
    private struct FixedDecoder: ResponseBodyDecoder {
        func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
            guard let todo = Todo(id: 99, title: "fixed") as? T else { throw CancellationError() }
            return todo
        }
    }

    private static let url = URL(string: "https://api.example.com/v1/todos")!

    func testTheDocExampleGivesTheValueAndTheHeaderOfOneResponse() throws {
        let transport = FakeTransport()
        transport.stub(
            "/v1/todos",
            with: .json(
                string: #"[{"id":1,"title":"Buy milk"}]"#, headers: ["Link": #"</v1/todos?page=2>; rel="next""#]))
        let connect = Connect(transport: transport)

        let page = try connect.response(for: ConnectRequest(url: Self.url)).map { response in
            (todos: try response.decoded(as: [Todo].self), next: response.header("Link"))
        }.wait()

        XCTAssertEqual(page.todos, [Todo(id: 1, title: "Buy milk")])
        XCTAssertEqual(page.next, #"</v1/todos?page=2>; rel="next""#)
    }

    func testAFailureIsADecodingErrorNamingTheResponseAndThePath() throws {
        let response = try ConnectResponse.json(
            #"{"id":"one","title":"x"}"#, status: 201, for: URLRequest(url: Self.url))

        XCTAssertThrowsError(try response.decoded(as: Todo.self)) { error in
            guard let error = error as? ConnectError else { return XCTFail("not a ConnectError: \(error)") }
            XCTAssertEqual(error.kind, .decoding)
            XCTAssertEqual(error.statusCode, 201)
            XCTAssertEqual(error.request?.url, Self.url)
            XCTAssertTrue(error.message.contains("id"), error.message)
        }
    }

    func testAGivenDecoderIsUsedWhateverTheContentType() throws {
        let response = try ConnectResponse.json("not json at all", for: URLRequest(url: Self.url))

        XCTAssertEqual(try response.decoded(as: Todo.self, decoder: FixedDecoder()), Todo(id: 99, title: "fixed"))
        XCTAssertThrowsError(try response.decoded(as: Todo.self), "JSON by default: the body is not")
    }

    func testAnEmptyBodyIsNilForAnOptionalAndAnEmptyResponse() throws {
        let response = try XCTUnwrap(
            ConnectResponse(request: URLRequest(url: Self.url), statusCode: 204, headers: [:], data: Data()))

        XCTAssertNil(try response.decoded(as: Todo?.self))
        XCTAssertNoThrow(try response.decoded(as: EmptyResponse.self))
        XCTAssertThrowsError(try response.decoded(as: Todo.self))
    }

    func testTheDecoderForTheContentTypeComesFromTheDecodersPassed() throws {
        var decoders = ResponseDecoders.default
        decoders.register(FixedDecoder(), for: "application/x-fixed")
        let response = try XCTUnwrap(
            ConnectResponse(
                request: URLRequest(url: Self.url), statusCode: 200, headers: ["Content-Type": "application/x-fixed"],
                data: Data("anything".utf8)))

        XCTAssertEqual(
            try response.decoded(as: Todo.self, decoder: decoders.decoder(for: response.mediaType)),
            Todo(id: 99, title: "fixed"))
    }
}
