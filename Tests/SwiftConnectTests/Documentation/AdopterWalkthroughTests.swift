import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A small todo client written from the README the way an app adopting the library writes it on day one, against a
/// server on 127.0.0.1: each test is one step the README documents (connectors, errors, token refresh, retries,
/// transfers, cancellation, logging, fakes), checked as the README says it behaves.
final class AdopterWalkthroughTests: XCTestCase {
    struct Todo: Codable, Sendable, Equatable {
        var id: Int
        var title: String
        var completed: Bool
    }

    struct NewTodo: Encodable, Sendable {
        var title: String
    }

    /// The backend's error body, `{"code": "...", "reason": "..."}`, as the app's own error.
    struct APIError: Error, Decodable, Equatable {
        var code: String
        var reason: String
    }

    /// The README's "plug in a handler", with the whole response (`handle(_:)`) to decode the body as a type.
    struct APIErrorHandler: ErrorHandling {
        func handle(response: [String: Any]) -> (any Error)? {
            ErrorHandler().handle(response: response)
        }

        func handle(_ response: ConnectResponse) -> (any Error)? {
            if let error = try? JSONDecoder().decode(APIError.self, from: response.data) { return error }
            return ErrorHandler().handle(response)
        }
    }

    enum TodoAPI: Connector {
        case list(page: Int, perPage: Int)
        case get(id: Int)
        case create(NewTodo)
        case update(id: Int, Todo)
        case delete(id: Int)

        var baseURL: URL { URL(string: "/api")! }

        var endpoint: String {
            switch self {
            case .list, .create: return "/todos"
            case .get, .update, .delete: return "/todos/{id}"
            }
        }

        var method: HTTPMethod {
            switch self {
            case .list, .get: return .get
            case .create: return .post
            case .update: return .put
            case .delete: return .delete
            }
        }

        var headers: [HTTPHeader] { [] }

        var parameters: ParametersRepresentable? {
            switch self {
            case .list(let page, let perPage):
                return CompositeParameters(
                    .query(key: "page", value: "\(page)"), .query(key: "per_page", value: "\(perPage)"))
            case .get(let id), .delete(let id):
                return Parameter.path(key: "id", value: "\(id)")
            case .create(let todo):
                return Parameter.jsonObject(value: todo)
            case .update(let id, let todo):
                return CompositeParameters(.path(key: "id", value: "\(id)"), .jsonObject(value: todo))
            }
        }
    }

    struct GetProfile: TypedConnector, AuthorizedConnector {
        typealias Response = [String: String]
        let token: String?

        var baseURL: URL { URL(string: "/api")! }
        var endpoint: String { "/me" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: ParametersRepresentable? { nil }
        var authorizationToken: AuthorizationToken? { token.map { .bearer(token: $0) } }
    }

    /// The app's client, as it would inject a `Connect`.
    final class TodoClient: Sendable {
        let connect: Connect
        init(connect: Connect) { self.connect = connect }

        func todo(id: Int) async throws -> Todo {
            try await connect.request(TodoAPI.get(id: id)).decoded(toType: Todo.self).value
        }

        func page(_ page: Int) async throws -> [Todo] {
            try await connect.request(TodoAPI.list(page: page, perPage: 2)).decoded(toType: [Todo].self).value
        }
    }

    /// Collects what the library logs.
    final class CapturingLogger: ConnectLogger {
        private let lines = Guarded<[String]>([])
        func log(_ level: LogLevel, _ message: String) { lines.withLock { $0.append(message) } }
        var text: String { lines.withLock { $0.joined(separator: "\n") } }
    }

    private var server: LocalServer!
    private var configuration: ServerConfiguration {
        ServerConfiguration(scheme: .http, host: "127.0.0.1", port: server.port)
    }

    override func setUpWithError() throws {
        server = try LocalServer.started()
        server.route("GET", "/api/todos") { request in
            let page = Int(request.queryItem("page") ?? "") ?? 0
            let perPage = Int(request.queryItem("per_page") ?? "") ?? 0
            let todos = (0..<perPage).map { Todo(id: page * 100 + $0, title: "todo \($0)", completed: false) }
            return .json(todos)
        }
        server.route("GET", "/api/todos/:id") { request in
            let id = Int(request.pathParameters["id"] ?? "") ?? 0
            guard id != 404 else { return .json(string: #"{"code":"not_found","reason":"no todo 404"}"#, status: 404) }
            return .json(Todo(id: id, title: "todo \(id)", completed: false))
        }
        server.route("POST", "/api/todos") { request in
            let sent = (try? JSONDecoder().decode(JSONValue.self, from: request.body)) ?? .null
            return .json(Todo(id: 7, title: sent["title"]?.stringValue ?? "?", completed: false), status: 201)
        }
        server.route("PUT", "/api/todos/:id") { request in .json(string: request.bodyText) }
        server.route("DELETE", "/api/todos/:id") { _ in .status(204) }
    }

    override func tearDown() {
        server.stop()
    }

    // MARK: 1. Connectors, decoding, errors

    func testConnectorsDecodeWithAsyncAndFutures() async throws {
        let connect = Connect(configuration: configuration)

        let page = try await connect.request(TodoAPI.list(page: 3, perPage: 2)).decoded(toType: [Todo].self).value
        XCTAssertEqual(page.map(\.id), [300, 301])

        let one = try connect.request(TodoAPI.get(id: 5)).decoded(toType: Todo.self).wait()
        XCTAssertEqual(one, Todo(id: 5, title: "todo 5", completed: false))

        let observed = Promise<Todo>()
        connect.request(TodoAPI.get(id: 6)).decoded(toType: Todo.self).observe { observed.complete(with: $0) }
        let six = try await observed.future.value
        XCTAssertEqual(six.id, 6)

        let created = try await connect.request(TodoAPI.create(NewTodo(title: "Buy milk"))).decoded(toType: Todo.self)
            .value
        XCTAssertEqual(created.title, "Buy milk")

        let updated = try await connect.response(for: TodoAPI.update(id: 5, Todo(id: 5, title: "x", completed: true)))
            .value
        XCTAssertEqual(updated.statusCode, 200)
        XCTAssertEqual(try JSONDecoder().decode(Todo.self, from: updated.data).completed, true)

        let deleted = try await connect.response(for: TodoAPI.delete(id: 5)).value
        XCTAssertEqual(deleted.statusCode, 204)
        XCTAssertEqual(server.requests.last?.method, "DELETE")
        XCTAssertEqual(server.requests.last?.path, "/api/todos/5")
    }

    func testErrorBodyDecodesIntoTheAppsErrorType() async throws {
        let connect = Connect(configuration: configuration)
        do {
            _ = try await connect.request(TodoAPI.get(id: 404)).decoded(toType: Todo.self).value
            XCTFail("a 404 is an error")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .httpStatus)
            XCTAssertEqual(error.statusCode, 404)
            XCTAssertEqual(try JSONDecoder().decode(APIError.self, from: XCTUnwrap(error.body)).code, "not_found")
        }

        let typed = Connect(errorHandler: APIErrorHandler(), configuration: configuration)
        do {
            _ = try await typed.request(TodoAPI.get(id: 404)).decoded(toType: Todo.self).value
            XCTFail("a 404 is an error")
        } catch let error as APIError {
            XCTAssertEqual(error, APIError(code: "not_found", reason: "no todo 404"))
        }
    }

    // MARK: 2. Bearer token, refreshed once on a 401

    func testBearerTokenRefreshesOnceForConcurrentRequests() async throws {
        let refreshes = Guarded(0)
        server.route("POST", "/api/oauth/token") { _ in
            refreshes.withLock { $0 += 1 }
            return .json(string: #"{"access_token":"fresh-token"}"#)
        }
        server.route("GET", "/api/me") { request in
            guard request.header("Authorization") == "Bearer fresh-token" else {
                return .json(string: #"{"message":"token expired"}"#, status: 401)
            }
            return .json(string: #"{"name":"Ada"}"#)
        }
        // The refresh goes through a client without the middleware, as `AuthenticationMiddleware`'s comment says.
        let authClient = Connect(configuration: configuration)
        let auth = AuthenticationMiddleware(credential: .bearer(token: "expired-token")) { _ in
            authClient.request(
                Route("/api/oauth/token", method: .post, options: RequestOptions(requiresAuthentication: false))
            )
            .decoded(toType: [String: String].self)
            .map { .bearer(token: $0["access_token"] ?? "") }
        }
        let connect = Connect(middlewares: [auth], configuration: configuration)

        let profiles = try await Future.all((1...4).map { _ in connect.send(GetProfile(token: nil)) }).value
        XCTAssertEqual(profiles.map { $0["name"] }, ["Ada", "Ada", "Ada", "Ada"])
        XCTAssertEqual(refreshes.withLock { $0 }, 1)
        XCTAssertEqual(server.requests.last?.header("Authorization"), "Bearer fresh-token")
    }

    // MARK: 3. Retries

    func testFlakyGetIsRetriedAfterRetryAfterButPostIsNot() async throws {
        let gets = Guarded(0)
        server.route("GET", "/api/flaky") { _ in
            let attempt = gets.withLock { count -> Int in
                count += 1
                return count
            }
            return attempt == 1 ? Response.status(503).withHeader("Retry-After", "2") : .json(string: #"{"ok":"yes"}"#)
        }
        server.route("POST", "/api/flaky") { _ in .status(503).withHeader("Retry-After", "2") }
        let clock = ImmediateRetryClock()
        let connect = Connect(
            retryPolicy: RetryPolicy(jitter: RetryPolicy.noJitter, clock: clock), configuration: configuration)

        let answer = try await connect.request(Route("/api/flaky")).decoded(toType: [String: String].self).value
        XCTAssertEqual(answer, ["ok": "yes"])
        XCTAssertEqual(server.requestCount(for: "GET", path: "/api/flaky"), 2)
        XCTAssertEqual(clock.delays, [2])

        do {
            _ = try await connect.request(Route("/api/flaky", method: .post)).value
            XCTFail("a 503 is an error")
        } catch let error as ConnectError {
            XCTAssertEqual(error.statusCode, 503)
            XCTAssertEqual(error.attempts, 1)
        }
        XCTAssertEqual(server.requestCount(for: "POST", path: "/api/flaky"), 1)
    }

    typealias Response = LocalServer.Response

    // MARK: 4. Upload, download, cancellation

    func testMultipartUploadOfAFileReportsProgress() async throws {
        let contents = Data((0..<100_000).map { UInt8($0 % 251) })
        let fileURL = FileManager.default.temporaryDirectory.appendingPathComponent("adopter-\(UUID().uuidString).bin")
        try contents.write(to: fileURL)
        defer { try? FileManager.default.removeItem(at: fileURL) }
        server.route("POST", "/api/todos/:id/attachments") { request in
            guard
                let parts = try? MultipartParser.parse(request.body, contentType: request.header("Content-Type") ?? "")
            else { return .status(400) }
            return .json(
                parts.map { "\($0.name)=\($0.filename ?? String(decoding: $0.data, as: UTF8.self)):\($0.data.count)" })
        }
        let reports = Guarded<[TransferProgress]>([])
        let connect = Connect(configuration: configuration)
        let received = try await connect.upload(
            files: [File(key: "attachment", fileURL: fileURL)],
            fields: [("note", "receipt")],
            to: Route("/api/todos/{id}/attachments", method: .post, parameters: Parameter.path(key: "id", value: "1")),
            options: RequestOptions(progress: { report in reports.withLock { $0.append(report) } })
        ).decoded(toType: [String].self).value

        XCTAssertEqual(received, ["note=receipt:7", "attachment=\(fileURL.lastPathComponent):100000"])
        let last = try XCTUnwrap(reports.withLock { $0.last })
        XCTAssertEqual(last.uploadFraction, 1)
        XCTAssertGreaterThan(last.bytesSent, Int64(contents.count))
    }

    func testDownloadToAFileReportsProgress() async throws {
        let contents = Data((0..<200_000).map { UInt8($0 % 253) })
        server.route("GET", "/api/export") { _ in .data(contents) }
        let destination = FileManager.default.temporaryDirectory.appendingPathComponent("adopter-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: destination) }
        let reports = Guarded<[TransferProgress]>([])
        let connect = Connect(configuration: configuration)

        let file = try await connect.download(
            Route("/api/export"), to: destination,
            options: RequestOptions(progress: { report in reports.withLock { $0.append(report) } })
        ).value

        XCTAssertEqual(try Data(contentsOf: file), contents)
        let last = try XCTUnwrap(reports.withLock { $0.last })
        XCTAssertEqual(last.bytesReceived, Int64(contents.count))
        XCTAssertEqual(last.downloadFraction, 1)
    }

    func testCancellingTheTaskCancelsTheRequest() async throws {
        let arrived = Promise<Void>()
        server.route("GET", "/api/slow") { _ in
            arrived.succeed(())
            return Response.json(string: "{}").withFault(.neverFinishHeaders)
        }
        let connect = Connect(configuration: configuration)
        // A view's task: cancelled when the view disappears.
        let task = Task { try await connect.request(Route("/api/slow")).value }
        try await arrived.future.value
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("a cancelled request fails")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .cancelled)
        }
    }

    // MARK: 5. Logging without secrets, and a test of the app's client with a fake

    func testDebugLogHidesTheBearerToken() async throws {
        let secret = "s3cr3t-Token-Value"
        server.route("GET", "/api/me") { _ in .json(string: #"{"name":"Ada","echo":"\#(secret)"}"#) }
        let logger = CapturingLogger()
        let connect = Connect(configuration: configuration, settings: Connect.Settings(logger: logger))

        let profile = try await connect.send(GetProfile(token: secret), debugResponse: true).value
        XCTAssertEqual(profile["echo"], secret)
        XCTAssertTrue(logger.text.contains("curl"), logger.text)
        XCTAssertTrue(logger.text.contains("<redacted>"), logger.text)
        XCTAssertFalse(logger.text.contains(secret), logger.text)
    }

    func testTheAppsClientAgainstAFakeTransport() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/api/todos/1", with: .json(Todo(id: 1, title: "Stubbed", completed: false)))
        transport.stub(
            .get, "/api/todos", query: ["page": "2"], with: .json([Todo(id: 9, title: "p2", completed: true)]))
        let client = TodoClient(connect: Connect(transport: transport, configuration: configuration))

        let todo = try await client.todo(id: 1)
        let page = try await client.page(2)

        XCTAssertEqual(todo.title, "Stubbed")
        XCTAssertEqual(page.map(\.id), [9])
        XCTAssertEqual(transport.requests.map { $0.url?.path }, ["/api/todos/1", "/api/todos"])
        XCTAssertEqual(transport.requests.last?.url?.query, "page=2&per_page=2")
        XCTAssertEqual(server.requestCount, 0)
    }
}
