import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The usage guide's examples run, each doing what the guide says it does: the connectors as written
/// (`UsageGuide` in GuideExamplesTests) through a fake, and through a real engine to a server on 127.0.0.1.
final class UsageGuideRunTests: XCTestCase {
    typealias Todo = UsageGuide.Todo

    /// Collects the library's debug output.
    final class CapturingLogger: ConnectLogger {
        private let lines = Guarded<[String]>([])
        func log(_ level: LogLevel, _ message: String) { lines.withLock { $0.append(message) } }
        var text: String { lines.withLock { $0.joined(separator: "\n") } }
    }

    /// The guide's `TodoConnector`, on the server the test starts.
    struct LocalTodoConnector: Connector {
        let server: URL
        let id: Int

        var baseURL: URL { server }
        var endpoint: String { "/todos/{id}" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: ParametersRepresentable? { Parameter.path(key: "id", value: "\(id)") }
    }

    /// The guide's `TodoConnector.get(id:)` on the test's server.
    private func get(id: Int) -> LocalTodoConnector { LocalTodoConnector(server: server.baseURL, id: id) }

    /// What the guide's closing example reaches: a fake answering jsonplaceholder's todo 123.
    private static let guideTransport: FakeTransport = {
        let transport = FakeTransport()
        transport.stub(.get, "/todos/123", with: .json(string: todoJSON))
        return transport
    }()
    private static let guideLogger = CapturingLogger()
    private static let guideClient = Connect(transport: guideTransport, settings: .init(logger: guideLogger))

    private static let todoJSON = #"{"userId":7,"id":123,"title":"ipsum","completed":true}"#

    /// "Using Connect": the guide's closing example, as written, with `debugResponse: true`; the `observe`
    /// closure gets a `Result<Todo, Error>`, and the debug output shows the request and the response.
    func testTheGuidesObserveExampleRunsAsWritten() throws {
        // `Connect.default` is the process's real client: here `Connect` is a local name whose `default` is a client
        // on a fake transport, and `print` prints nothing.
        enum Connect {
            static var `default`: SwiftConnect.Connect { UsageGuideRunTests.guideClient }
        }
        typealias TodoConnector = UsageGuide.TodoConnector
        let printed = expectation(description: "observe")
        let outcome = Recorder<Result<Todo, Error>>()
        @Sendable func print(_ item: Any) {}

        Connect.default.request(TodoConnector.get(id: 123), debugResponse: true).decoded(toType: Todo.self).observe {
            result in
            switch result {
            case .success(let todo):
                print(todo)
            case .failure(let error):
                print(error)
            }
            outcome.append(result)
            printed.fulfill()
        }

        wait(for: [printed], timeout: 30)
        XCTAssertEqual(try outcome.values.first?.get(), Todo(userId: 7, id: 123, title: "ipsum", completed: true))
        XCTAssertEqual(
            Self.guideTransport.requests.first?.url?.absoluteString, "https://jsonplaceholder.typicode.com/todos/123")
        let output = Self.guideLogger.text
        XCTAssertTrue(output.contains("https://jsonplaceholder.typicode.com/todos/123"), output)
        XCTAssertTrue(output.contains("200"), output)
    }

    // MARK: - Through a real engine

    private var server: LocalServer!

    override func setUpWithError() throws {
        server = try LocalServer.started()
    }

    override func tearDown() {
        server.stop()
    }

    /// "Calling this Connector will result into this call": the guide's `AdvancedTodoConnector` PUTs the JSON object
    /// to `/users/1/todos/2?action=update` with `Content-Type: application/json`.
    func testTheAdvancedTodoConnectorSendsTheGuidesCall() throws {
        server.route("PUT", "/users/:userId/todos/:todoId") { request in .json(string: request.bodyText) }
        struct Local: Connector {
            let wrapped: UsageGuide.AdvancedTodoConnector
            let server: URL
            var baseURL: URL { server }
            var endpoint: String { wrapped.endpoint }
            var method: HTTPMethod { wrapped.method }
            var headers: [HTTPHeader] { wrapped.headers }
            var parameters: ParametersRepresentable? { wrapped.parameters }
        }
        let todo = Todo(userId: 2, id: 1, title: "Test Todo", completed: false)
        let connector = Local(
            wrapped: .update(userId: 1, todoId: 2, action: .update, object: todo), server: server.baseURL)
        let echoed = try Connect().request(connector).decoded(toType: Todo.self).wait()
        XCTAssertEqual(echoed, todo)
        let received = try XCTUnwrap(server.requests.last)
        XCTAssertEqual(received.method, "PUT")
        XCTAssertEqual(received.target, "/users/1/todos/2?action=update")
        XCTAssertEqual(received.header("Content-Type"), "application/json")
    }

    /// "AuthorizedConnector": a bearer, basic or custom token is sent as `Authorization`; `nil` sends none.
    func testAnAuthorizedConnectorsTokenReachesTheServer() throws {
        server.route("GET", "/me") { _ in .json(string: "{}") }
        struct Me: Connector, AuthorizedConnector {
            let server: URL
            let authorizationToken: AuthorizationToken?
            var baseURL: URL { server }
            var endpoint: String { "/me" }
            var method: HTTPMethod { .get }
            var headers: [HTTPHeader] { [] }
            var parameters: ParametersRepresentable? { nil }
        }
        let connect = Connect()
        let tokens: [AuthorizationToken?] = [
            .bearer(token: "abc"), .basic(username: "ada", password: "pé"), .custom(token: "Token xyz"), nil,
        ]
        for token in tokens {
            _ = try connect.request(Me(server: server.baseURL, authorizationToken: token)).wait()
        }
        XCTAssertEqual(
            server.requests.map { $0.header("Authorization") },
            [
                "Bearer abc", "Basic " + Data("ada:pé".utf8).base64EncodedString(), "Token xyz", nil,
            ])
    }

    /// "File (for uploading tasks)": `upload(files:to:)` sends each file as a part named by its key, with its name
    /// and its `MimeType`, the guide's own extension included.
    func testAnUploadSendsEachFileWithItsKeyNameAndType() throws {
        server.route("POST", "/uploads") { _ in .json(string: "{}") }
        struct Upload: Connector {
            let server: URL
            var baseURL: URL { server }
            var endpoint: String { "/uploads" }
            var method: HTTPMethod { .post }
            var headers: [HTTPHeader] { [] }
            var parameters: ParametersRepresentable? { nil }
        }
        let files = [
            File(name: "a.pdf", key: "doc", mimeType: .pdf, data: Data("%PDF".utf8)),
            File(name: "b.awe", key: "other", mimeType: .myAwesomeType, data: Data([0, 1, 2])),
        ]
        _ = try Connect().upload(files: files, to: Upload(server: server.baseURL)).wait()
        let received = try XCTUnwrap(server.requests.last)
        let parts = try MultipartParser.parse(received.body, contentType: XCTUnwrap(received.header("Content-Type")))
        XCTAssertEqual(parts.map(\.name), ["doc", "other"])
        XCTAssertEqual(parts.map(\.filename), ["a.pdf", "b.awe"])
        XCTAssertEqual(parts.map(\.contentType), ["application/pdf", "awesome/type"])
        XCTAssertEqual(parts.map(\.data), [Data("%PDF".utf8), Data([0, 1, 2])])
    }

    /// "Using Connect": `upload(files:to:debugResponse:)` takes `[File]?`, as the guide's signature does: `nil` sends
    /// the connector's fields alone, in a multipart body of no file.
    func testAnUploadOfNilFilesSendsTheFieldsAlone() throws {
        server.route("POST", "/profile") { _ in .json(string: "{}") }
        struct Profile: Connector {
            let server: URL
            var baseURL: URL { server }
            var endpoint: String { "/profile" }
            var method: HTTPMethod { .post }
            var headers: [HTTPHeader] { [] }
            var parameters: ParametersRepresentable? { Parameter.jsonObject(value: ["name": "Ada"]) }
        }
        _ = try Connect().upload(files: nil, to: Profile(server: server.baseURL), debugResponse: false).wait()
        let received = try XCTUnwrap(server.requests.last)
        let parts = try MultipartParser.parse(received.body, contentType: XCTUnwrap(received.header("Content-Type")))
        XCTAssertEqual(parts.map(\.name), ["name"])
        XCTAssertEqual(parts.map(\.data), [Data("Ada".utf8)])
        XCTAssertEqual(parts.map(\.filename), [nil])
    }

    /// "File also includes MimeType": the guide's four types, with their raw values, hashable as it says.
    func testTheGuidesMimeTypesAreTheirMediaTypes() {
        let types: Set<MimeType> = [.jpg, .png, .mp4, .pdf, MimeType(rawValue: "image/jpeg")]
        XCTAssertEqual(types.count, 4)
        XCTAssertEqual(
            [MimeType.jpg, .png, .mp4, .pdf].map(\.rawValue),
            ["image/jpeg", "image/png", "video/mp4", "application/pdf"])
    }

    /// "ErrorHandler": outside 200..<300 the default handler finds `msg`, `messge`, `error` or `err`, or gives a
    /// generic error; a handler of yours that returns `nil` makes the response a success.
    func testTheErrorHandlerOverARealEngine() throws {
        server.route("GET", "/todos/:id") { request in
            switch request.pathParameters["id"] {
            case "1": return .json(string: #"{"msg":"one"}"#, status: 400)
            case "2": return .json(string: #"{"messge":"two"}"#, status: 422)
            case "3": return .json(string: #"{"error":"three"}"#, status: 404)
            case "4": return .json(string: #"{"err":"four"}"#, status: 409)
            case "5": return .json(string: #"{"other":"five"}"#, status: 418)
            default: return .json(string: Self.todoJSON, status: 404)
            }
        }
        let connect = Connect(retryPolicy: nil)
        var messages: [String] = []
        for id in 1...5 {
            XCTAssertThrowsError(try connect.request(get(id: id)).wait()) { error in
                let error = error as? ConnectError
                messages.append("\(error?.kind == .serverMessage ? "message" : "status") \(error?.message ?? "")")
            }
        }
        XCTAssertEqual(Array(messages.prefix(4)), ["message one", "message two", "message three", "message four"])
        XCTAssertTrue(messages[4].hasPrefix("status"), messages[4])

        struct Accepting: ErrorHandlerProtocol {
            func handle(response: [String: Any]) -> Error? { nil }
        }
        let lenient = Connect(middleware: ConnectMiddleware(), errorHandler: Accepting())
        let todo = try lenient.request(get(id: 6)).decoded(toType: Todo.self).wait()
        XCTAssertEqual(todo.id, 123)
    }

    /// "Connect ... contains three functions (request / upload / cancelAllRequests)": `cancelAllRequests` fails a
    /// request in flight with `.cancelled`, and the client goes on working.
    func testCancelAllRequestsFailsTheOnesInFlight() throws {
        let arrived = expectation(description: "the slow request reached the server")
        server.route("GET", "/todos/:id") { request in
            if request.pathParameters["id"] == "1" {
                arrived.fulfill()
                return .json(string: Self.todoJSON).delayed(by: 30)
            }
            return .json(string: Self.todoJSON)
        }
        let connect = Connect()
        let slow = connect.request(get(id: 1))
        wait(for: [arrived], timeout: 30)
        connect.cancelAllRequests()
        XCTAssertThrowsError(try slow.wait(timeout: 30)) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .cancelled)
        }
        XCTAssertEqual(try connect.request(get(id: 2)).decoded(toType: Todo.self).wait().id, 123)
    }
}
