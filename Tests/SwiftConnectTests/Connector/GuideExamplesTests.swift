import Foundation
import SwiftConnect
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// The usage guide's connectors, copied as the guide writes them (without `any`, as a user whose module does not
// enable `ExistentialAny` writes them). They must compile and build the requests the guide shows. They live in a
// namespace so their names cannot clash with other tests' helpers (FutureDecodingTests has its own `Todo`).

enum UsageGuide {
    struct Todo: Codable, Equatable {
        let userId: Int
        let id: Int
        let title: String
        let completed: Bool
    }

    enum TodoConnector: Connector {

        case get(id: Int)

        var baseURL: URL {
            return URL(string: "https://jsonplaceholder.typicode.com")!
        }

        var endpoint: String {
            switch self {
            case .get:
                return "/todos/{id}"
            }
        }

        var method: HTTPMethod {
            switch self {
            case .get:
                return .get
            }
        }

        var headers: [HTTPHeader] {
            return []
        }

        var parameters: ParametersRepresentable? {
            switch self {
            case .get(let id):
                return Parameter.path(key: "id", value: "\(id)")
            }
        }
    }

    enum TodoAction: String {
        case update
    }

    enum AdvancedTodoConnector: Connector {

        case update(userId: Int, todoId: Int, action: TodoAction, object: Encodable)

        var baseURL: URL {
            return URL(string: "https://myserver.com")!
        }

        var endpoint: String {
            switch self {
            case .update:
                return "/users/{userId}/todos/{todoId}"
            }
        }

        var method: HTTPMethod {
            switch self {
            case .update:
                return .put
            }
        }

        var headers: [HTTPHeader] {
            return []
        }

        var parameters: ParametersRepresentable? {
            switch self {
            case .update(let userId, let todoId, let action, let object):
                return CompositeParameters(
                    .path(key: "userId", value: "\(userId)"),
                    .path(key: "todoId", value: "\(todoId)"),
                    .query(key: "action", value: action.rawValue),
                    .jsonObject(value: object)
                )
            }
        }
    }
}

final class GuideExamplesTests: XCTestCase {
    typealias Todo = UsageGuide.Todo
    typealias TodoConnector = UsageGuide.TodoConnector
    typealias AdvancedTodoConnector = UsageGuide.AdvancedTodoConnector

    func testTodoConnectorBuildsTheGuidesGET() throws {
        // Given
        let connector = TodoConnector.get(id: 123)
        // When
        let request = try connector.asURLRequest()
        // Then
        XCTAssertEqual(request.httpMethod, "GET")
        XCTAssertEqual(request.url?.absoluteString, "https://jsonplaceholder.typicode.com/todos/123")
        XCTAssertNil(request.httpBody)
    }

    func testAdvancedTodoConnectorBuildsTheGuidesPUT() throws {
        // Given
        let todo = Todo(userId: 2, id: 1, title: "Test Todo", completed: false)
        let connector = AdvancedTodoConnector.update(userId: 1, todoId: 2, action: .update, object: todo)
        // When
        let request = try connector.asURLRequest()
        // Then
        XCTAssertEqual(request.httpMethod, "PUT")
        XCTAssertEqual(request.url?.absoluteString, "https://myserver.com/users/1/todos/2?action=update")
        XCTAssertEqual(request.value(forHTTPHeaderField: "Content-Type"), "application/json")
        let body = try XCTUnwrap(request.httpBody)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: body) as? NSDictionary)
        let expected: NSDictionary = ["userId": 2, "id": 1, "title": "Test Todo", "completed": false]
        XCTAssertEqual(json, expected)
        XCTAssertEqual(try JSONDecoder().decode(Todo.self, from: body), todo)
        // The exact text, up to member order: JSONEncoder's key order is unspecified (on Linux it follows the
        // per-process hash seed), so the guide's string is compared member by member, plus its exact length,
        // which also rules out any whitespace.
        let guideBody = #"{"userId":2,"id":1,"title":"Test Todo","completed":false}"#
        let text = String(decoding: body, as: UTF8.self)
        XCTAssertEqual(text.utf8.count, guideBody.utf8.count, text)
        XCTAssertEqual(members(of: text), members(of: guideBody), text)
    }

    /// The `"key":value` members of a flat JSON object whose values contain no comma.
    private func members(of json: String) -> Set<Substring> {
        guard json.hasPrefix("{"), json.hasSuffix("}") else { return [] }
        return Set(json.dropFirst().dropLast().split(separator: ","))
    }

    func testGuideConnectorsWorkThroughTheExistential() throws {
        let connectors: [any Connector] = [
            TodoConnector.get(id: 1),
            AdvancedTodoConnector.update(userId: 3, todoId: 4, action: .update, object: ["done": true]),
        ]
        let urls = try connectors.map { try $0.asURLRequest().url?.absoluteString }
        XCTAssertEqual(
            urls,
            ["https://jsonplaceholder.typicode.com/todos/1", "https://myserver.com/users/3/todos/4?action=update"])
    }

    /// "passing Parameter.jsonObject(someJSONObject) will encode the given object and send it in the body": the
    /// guide's prose spelling, without the case's `value:` label, builds the same body.
    func testTheGuidesUnlabeledJSONObjectSpellingSendsTheSameBody() throws {
        struct Create: Connector {
            let parameters: (any ParametersRepresentable)?
            var baseURL: URL { URL(string: "https://myserver.com")! }
            var endpoint: String { "/todos" }
            var method: HTTPMethod { .post }
            var headers: [HTTPHeader] { [] }
        }
        let todo = Todo(userId: 2, id: 1, title: "Test Todo", completed: false)
        let guide = try Create(parameters: Parameter.jsonObject(todo)).asURLRequest()
        let labeled = try Create(parameters: Parameter.jsonObject(value: todo)).asURLRequest()
        XCTAssertEqual(try JSONDecoder().decode(Todo.self, from: XCTUnwrap(guide.httpBody)), todo)
        XCTAssertEqual(guide.value(forHTTPHeaderField: "Content-Type"), "application/json")
        XCTAssertEqual(guide.httpBody.map { $0.count }, labeled.httpBody.map { $0.count })
    }

    /// "Its constructor contains two parameters (ConnectMiddleware / ErrorHandler)": either may be customised on
    /// its own, the other keeping its default.
    func testConnectTakesEitherOfTheGuidesTwoParametersOnItsOwn() {
        let both = Connect(middleware: ConnectMiddleware(), errorHandler: ErrorHandler())
        let middlewareOnly = Connect(middleware: ConnectMiddleware())
        let errorHandlerOnly = Connect(errorHandler: ErrorHandler(messageKeys: ["detail"]))

        XCTAssertEqual(both.middlewares.count, 1)
        XCTAssertEqual(middlewareOnly.middlewares.count, 1)
        XCTAssertTrue(middlewareOnly.middlewares.first is ConnectMiddleware)
        XCTAssertEqual((middlewareOnly.errorHandler as? ErrorHandler)?.messageKeys, ErrorHandler().messageKeys)
        XCTAssertEqual((errorHandlerOnly.errorHandler as? ErrorHandler)?.messageKeys, ["detail"])
    }
}
