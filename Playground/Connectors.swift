import Foundation
import SwiftConnect

// MARK: - The usage guide's connectors

enum TodoConnector: Connector {
    case get(id: Int)

    var baseURL: URL {
        return Demo.baseURL  // your API, e.g. URL(string: "https://jsonplaceholder.typicode.com")!
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
        return Demo.baseURL  // your API, e.g. URL(string: "https://myserver.com")!
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

// MARK: - Typed connectors and authorization

struct GetTodo: TypedConnector {
    typealias Response = Todo
    let id: Int

    var baseURL: URL { Demo.baseURL }
    var endpoint: String { "/todos/{id}" }
    var method: HTTPMethod { .get }
    var headers: [HTTPHeader] { [] }
    var parameters: ParametersRepresentable? { Parameter.path(key: "id", value: "\(id)") }
}

struct Profile: Decodable, Sendable {
    let name: String
    let plan: String
}

struct GetProfile: TypedConnector, AuthorizedConnector {
    typealias Response = Profile
    let token: String?

    var baseURL: URL { Demo.baseURL }
    var endpoint: String { "/me" }
    var method: HTTPMethod { .get }
    var headers: [HTTPHeader] { [] }
    var parameters: ParametersRepresentable? { nil }
    var authorizationToken: AuthorizationToken? { token.map { .bearer(token: $0) } }
}

struct LegacyEndpoint: Connector {
    var baseURL: URL { Demo.baseURL }
    var endpoint: String { "/legacy/fail" }
    var method: HTTPMethod { .get }
    var headers: [HTTPHeader] { [] }
    var parameters: ParametersRepresentable? { nil }
}

struct SlowEndpoint: Connector {
    var baseURL: URL { Demo.baseURL }
    var endpoint: String { "/slow" }
    var method: HTTPMethod { .get }
    var headers: [HTTPHeader] { [] }
    var parameters: ParametersRepresentable? { nil }
}

/// A chat completion, streamed as server-sent events.
struct ChatCompletion: Connector {
    let prompt: String

    var baseURL: URL { Demo.baseURL }
    var endpoint: String { "/chat/completions" }
    var method: HTTPMethod { .post }
    var headers: [HTTPHeader] { [HTTPHeader(name: "Accept", value: "text/event-stream")] }
    var parameters: ParametersRepresentable? { Parameter.jsonObject(value: ["prompt": prompt]) }
    var timeout: TimeInterval { .infinity }  // a stream may run long: StreamingOptions.idleTimeout bounds the silence
}

/// One token of a chat completion.
struct ChatToken: Decodable {
    let text: String
}
