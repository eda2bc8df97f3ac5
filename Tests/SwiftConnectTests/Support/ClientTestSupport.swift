import Foundation
import SwiftConnect
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Doubles shared by the client tests (Connect, cancellation, error handling, debug output, middleware, fake
// transport). They live in a namespace so their names cannot clash with other tests' helpers; each test class
// brings the ones it uses into scope with `typealias`.

enum ClientFixtures {
    /// The usage guide's model.
    struct Todo: Codable, Equatable, Sendable {
        let userId: Int
        let id: Int
        let title: String
        let completed: Bool

        static let sample = Todo(userId: 2, id: 1, title: "Test Todo", completed: false)
    }

    /// The usage guide's connector, written as the guide writes it, plus an update route with a JSON body.
    enum TodoConnector: Connector {
        case get(id: Int)
        case update(id: Int, todo: Todo)

        var baseURL: URL {
            return URL(string: "https://jsonplaceholder.typicode.com")!
        }

        var endpoint: String {
            return "/todos/{id}"
        }

        var method: HTTPMethod {
            switch self {
            case .get: return .get
            case .update: return .put
            }
        }

        var headers: [HTTPHeader] {
            return []
        }

        var parameters: ParametersRepresentable? {
            switch self {
            case .get(let id):
                return Parameter.path(key: "id", value: "\(id)")
            case .update(let id, let todo):
                return CompositeParameters(.path(key: "id", value: "\(id)"), .jsonObject(value: todo))
            }
        }
    }

    /// A typed connector for `Connect.send(_:)`.
    struct GetTodo: TypedConnector {
        typealias Response = Todo
        let id: Int
        var baseURL: URL { URL(string: "https://jsonplaceholder.typicode.com")! }
        var endpoint: String { "/todos/{id}" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: ParametersRepresentable? { Parameter.path(key: "id", value: "\(id)") }
    }

    /// A typed connector for endpoints answering without a body.
    struct DeleteTodo: TypedConnector {
        typealias Response = EmptyResponse
        let id: Int
        var baseURL: URL { URL(string: "https://jsonplaceholder.typicode.com")! }
        var endpoint: String { "/todos/{id}" }
        var method: HTTPMethod { .delete }
        var headers: [HTTPHeader] { [] }
        var parameters: ParametersRepresentable? { Parameter.path(key: "id", value: "\(id)") }
    }

    /// A connector whose every part a test chooses.
    struct Endpoint: Connector {
        var baseURL = URL(string: "https://api.example.com")!
        var endpoint = "/items"
        var method: HTTPMethod = .get
        var headers: [HTTPHeader] = []
        var parameters: ParametersRepresentable? = nil
        var timeout: TimeInterval = 60
    }
}

/// A transport that keeps every request pending until the test answers it, and records cancellations through
/// `Promise.setCancelHandler`, as a real transport cancels its network task.
final class ManualTransport: Transport, @unchecked Sendable {
    // @unchecked Sendable: `lock` protects `promises` and `sent`; `cancellations` is itself thread-safe.
    private let lock = NSCondition()
    private var promises: [Promise<ConnectResponse>] = []
    private var sent: [URLRequest] = []
    /// How many times a returned future's cancel handler ran.
    let cancellations = Counter()

    func send(_ request: URLRequest) -> Future<ConnectResponse> {
        let promise = Promise<ConnectResponse>()
        promise.setCancelHandler { [cancellations] in cancellations.increment() }
        lock.lock()
        promises.append(promise)
        sent.append(request)
        lock.broadcast()
        lock.unlock()
        return promise.future
    }

    /// Waits until at least `count` requests were received (an event, not a poll), for at most `timeout` seconds.
    ///
    /// - Returns: Whether they were.
    @discardableResult
    func wait(forRequests count: Int, timeout: TimeInterval = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock()
        defer { lock.unlock() }
        while sent.count < count {
            guard lock.wait(until: deadline) else { return sent.count >= count }
        }
        return true
    }

    /// The requests received so far, in order.
    var requests: [URLRequest] {
        lock.lock()
        defer { lock.unlock() }
        return sent
    }

    /// The futures handed out so far, in order.
    var futures: [Future<ConnectResponse>] {
        lock.lock()
        defer { lock.unlock() }
        return promises.map(\.future)
    }

    /// Answers the request number `index` (a later answer to a cancelled request is ignored).
    func respond(to index: Int, status: Int = 200, headers: [String: String] = [:], body: Data = Data()) {
        lock.lock()
        let promise = promises[index]
        let request = sent[index]
        lock.unlock()
        promise.completeIfPending(
            with: .success(ConnectResponse(request: request, statusCode: status, headers: headers, data: body)!))
    }
}

/// A middleware that records `→name` when a request passes it and `←name` when the response comes back.
struct RecordingMiddleware: Middleware {
    let name: String
    let events: Recorder<String>

    func intercept(_ request: ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<ConnectResponse>
    {
        events.append("→\(name)")
        var request = request
        let trail = request.value(forHTTPHeaderField: "X-Trail").map { $0 + "," } ?? ""
        request.setValue(trail + name, forHTTPHeaderField: "X-Trail")
        let name = self.name
        let events = self.events
        return next(request).map { response in
            events.append("←\(name)")
            return response
        }
    }
}

extension XCTestCase {
    /// Waits for the future and returns its error as a ``ConnectError``; fails the test for any other outcome.
    func connectError<Value>(
        of future: Future<Value>,
        file: StaticString = #filePath,
        line: UInt = #line
    ) -> ConnectError? {
        guard let error = error(of: future, file: file, line: line) else { return nil }
        guard let connectError = error as? ConnectError else {
            XCTFail("expected a ConnectError, got \(type(of: error)): \(error)", file: file, line: line)
            return nil
        }
        return connectError
    }

    /// Waits for the future and returns its value; fails the test if it fails.
    func value<Value>(
        of future: Future<Value>,
        file: StaticString = #filePath,
        line: UInt = #line
    ) -> Value? {
        switch result(of: future, file: file, line: line) {
        case .success(let value): return value
        case .failure(let error):
            XCTFail("expected a value, got \(error)", file: file, line: line)
            return nil
        case nil: return nil
        }
    }

    /// The body of a request as a JSON object.
    func jsonObject(
        of request: URLRequest?,
        file: StaticString = #filePath,
        line: UInt = #line
    ) throws -> NSDictionary {
        let body = try XCTUnwrap(request?.httpBody, "the request has no body", file: file, line: line)
        return try XCTUnwrap(JSONSerialization.jsonObject(with: body) as? NSDictionary, file: file, line: line)
    }
}

/// A connector whose every part a test chooses.
struct ConfigurableConnector: Connector, AuthorizedConnector {
    var baseURL: URL
    var endpoint: String
    var method: HTTPMethod = .get
    var headers: [HTTPHeader] = []
    var parameters: (any ParametersRepresentable)?
    var authorizationToken: AuthorizationToken?
    var timeout: TimeInterval = 60
}

/// What the redirect tests share.
enum RedirectFixtures {
    /// Every kind of credential header a connector can carry, none of which may follow a redirect to another origin.
    static let secretHeaders = [
        HTTPHeader(name: "Authorization", value: "Bearer secret-token"),
        HTTPHeader(name: "Proxy-Authorization", value: "Basic cHJveHk6c2VjcmV0"),
        HTTPHeader(name: "Cookie", value: "session=secret-cookie"),
        HTTPHeader(name: "X-API-Key", value: "secret-key"),
        HTTPHeader(name: "X-Auth-Token", value: "secret-auth-token"),
    ]
}

extension ConnectRequest {
    /// A `PUT` whose body is a one-shot stream of `payload`, as an OpenAPI upload's is: it can be read once, so the
    /// retry loop cannot send it again.
    static func oneShotUpload(
        to url: URL = URL(string: "https://api.example.com/upload")!,
        payload: String = "payload"
    ) -> ConnectRequest {
        let chunks = AsyncStream<Data> { continuation in
            continuation.yield(Data(payload.utf8))
            continuation.finish()
        }
        return ConnectRequest(method: .put, url: url, body: .stream(ConnectRequest.OneShotStream(chunks)))
    }
}
