import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// README examples must compile and run: each Swift block in README.md is code that the Playground
/// (`swift run Playground`, run by CI), this file, or the tests of a package under `Transports/` (run by CI)
/// contain verbatim.
final class ReadmeExamplesTests: XCTestCase {
    private struct Todo: Codable, Equatable, Sendable {
        var userId: Int
        var id: Int
        var title: String
        var completed: Bool
    }

    private struct GetTodo: TypedConnector {
        typealias Response = Todo
        let id: Int
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/todos/{id}" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { Parameter.path(key: "id", value: "\(id)") }
    }

    /// The README's "Testing your code" example.
    func testFakeTransportExample() throws {
        let transport = FakeTransport()
        transport.stub(.get, "/todos/1", with: .json(Todo(userId: 1, id: 1, title: "Stubbed", completed: false)))
        let connect = Connect(transport: transport)

        let todo = try connect.send(GetTodo(id: 1)).wait(timeout: 5)
        XCTAssertEqual(todo.title, "Stubbed")
        XCTAssertEqual(transport.requests.first?.url?.path, "/todos/1")
    }

    /// The README's "Which call do I use?" table: each call, with the type the table says it returns.
    func testWhichCallDoIUseTable() async throws {
        let transport = FakeTransport()
        let todo = Todo(userId: 1, id: 1, title: "Stubbed", completed: false)
        transport.stub("/todos/1", with: [.json(todo), .json(todo), .json(todo), .json(todo), .json(todo)])
        let connect = Connect(transport: transport)
        let connector = GetTodo(id: 1)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let fileURL = folder.appendingPathComponent("todo.json")

        let bytes: Future<Data> = connect.request(connector)
        let typed: Future<Todo> = connect.request(connector).decoded(toType: Todo.self)
        let sent: Future<Todo> = connect.send(connector)
        let response: Future<ConnectResponse> = connect.response(for: connector)
        let file: Future<URL> = connect.download(connector, to: fileURL)
        let stream: ResponseStream = connect.stream(connector)

        let body = try await bytes.value
        let (typedTodo, sentTodo) = (try await typed.value, try await sent.value)
        let whole = try await response.value
        let status = whole.statusCode
        XCTAssertEqual(try whole.decoded(as: Todo.self), todo)
        let written = try await file.value
        XCTAssertEqual(try JSONDecoder().decode(Todo.self, from: body), todo)
        XCTAssertEqual(typedTodo, todo)
        XCTAssertEqual(sentTodo, todo)
        XCTAssertEqual(status, 200)
        XCTAssertEqual(try JSONDecoder().decode(Todo.self, from: Data(contentsOf: written)), todo)
        var lines: [String] = []
        for try await line in stream.lines { lines.append(line) }
        XCTAssertEqual(try JSONDecoder().decode(Todo.self, from: Data(lines.joined().utf8)), todo)
    }

    enum Sampling: RequestOptionKey { typealias Value = Double }

    struct SamplingMiddleware: Middleware {
        let sampled: @Sendable (Double) -> Void
        func intercept(
            _ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next
        ) -> Future<ConnectResponse> {
            sampled(context.options[Sampling.self] ?? 1)  // the most specific level that set one
            return next(request)
        }
    }

    /// The README's "Middleware" example of a middleware's own option.
    func testAMiddlewaresOwnOptionExample() throws {
        let seen = Protected<[Double]>([])
        let connect = Connect(
            transport: FakeTransport.answering(.status(200)),
            middlewares: [SamplingMiddleware { rate in seen.withLock { $0.append(rate) } }])

        var sampledRarely = RequestOptions()
        sampledRarely[Sampling.self] = 0.1

        _ = try connect.request(GetTodo(id: 1)).wait(timeout: 5)
        _ = try connect.request(GetTodo(id: 1), options: sampledRarely).wait(timeout: 5)
        XCTAssertEqual(seen.withLock { $0 }, [1, 0.1])
    }

    private struct MissingETag: Error {}

    private struct ConfigConnector: Connector {
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/config" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
    }

    /// The README's "Plugins, validators, processors, caching and the request queue" example.
    func testOptionsExample() throws {
        let transport = FakeTransport.answering(.json(string: "{}", headers: ["ETag": "v1"]))
        let logSends = AnyPlugin(willSend: { request, _ in print("→", request.url?.path ?? "") })
        let requireETag = AnyResponseValidator { response in
            if response.header("ETag") == nil { throw MissingETag() }
        }
        let cache = ResponseCache(maxBytes: 5_000_000)
        let queue = RequestQueue(maxConcurrentRequests: 4)
        let connect = Connect(
            transport: transport,
            requestQueue: queue,
            responseCache: cache,
            settings: Connect.Settings(options: RequestOptions(plugins: [logSends], validators: [requireETag]))
        )
        let cached = RequestOptions(cache: CacheRule(timeToLive: 300))
        _ = try connect.request(ConfigConnector(), options: cached).wait()
        _ = try connect.request(ConfigConnector(), options: cached).wait()  // served from memory

        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(cache.hitCount, 1)
    }

    private struct ChatCompletion: Connector {
        let prompt: String
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/chat/completions" }
        var method: HTTPMethod { .post }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { Parameter.jsonObject(value: ["prompt": prompt]) }
    }

    /// The README's "Streaming responses" example.
    func testStreamingExample() async throws {
        let transport = FakeTransport()
        let events = ["data: Hel\n\n", "data: lo\n\n", "data: [DONE]\n\n"].map { Data($0.utf8) }
        transport.stub(
            .post, "/chat/completions", with: .stream(events, headers: ["Content-Type": "text/event-stream"]))
        let connect = Connect(transport: transport)

        let stream = connect.stream(ChatCompletion(prompt: "Say hello"))
        var reply = ""
        for try await event in stream.events where event.data != "[DONE]" {
            reply += event.data
        }
        XCTAssertEqual(reply, "Hello")
    }

    /// The README's callbacks for UI code and callback code bases ("Futures").
    @MainActor
    func testCallbackExamples() async {
        let transport = FakeTransport()
        transport.stub(.get, "/todos/1", with: .json(Todo(userId: 1, id: 1, title: "Milk", completed: false)))
        let connect = Connect(transport: transport)
        let screen = TodoScreen()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            screen.whenShown = { done.resume() }
            connect.send(GetTodo(id: 1)).observeOnMainActor { result in
                screen.show(result)  // a @MainActor method
            }
        }
        let received = await withCheckedContinuation { (done: CheckedContinuation<Todo?, Never>) in
            let completion: @Sendable (Todo?, (any Error)?) -> Void = { todo, _ in done.resume(returning: todo) }
            connect.send(GetTodo(id: 1)).observe(completion: completion)  // (Todo?, Error?) -> Void, @Sendable
        }
        XCTAssertEqual(received?.title, "Milk")
        XCTAssertEqual(screen.titles, ["Milk"])
    }

    @MainActor
    private final class TodoScreen {
        var titles: [String] = []
        var whenShown: (() -> Void)?

        func show(_ result: Result<Todo, any Error>) {
            titles.append((try? result.get().title) ?? "failed")
            whenShown?()
        }
    }

    private struct LegacyError: Error {
        let code: Int
        let reason: String
    }

    private struct LegacyErrorHandler: ErrorHandlerProtocol {
        func handle(response: [String: Any]) -> Error? {
            // Not our shape: let the default handler read it (returning nil would accept the response as a success).
            guard let code = response["code"] as? Int else { return ErrorHandler().handle(response: response) }
            return LegacyError(code: code, reason: response["reason"] as? String ?? "unknown")
        }
    }

    /// The README's "Errors": the default handler's message, status and kind for a 404, and its `LegacyErrorHandler`
    /// as written, which returns its own error for a body with a `code` and lets the default handler read any other
    /// body (an error that still carries the status, headers and body); `nil` from a handler accepts the response.
    func testErrorsExamples() throws {
        let transport = FakeTransport()
        transport.stub(.get, "/todos/999", with: .json(string: #"{"message":"Todo 999 not found"}"#, status: 404))
        transport.stub(
            .get, "/legacy/fail", with: .json(string: #"{"code":42,"reason":"quota exceeded"}"#, status: 400))
        transport.stub(.get, "/legacy/other", with: .json(string: #"{"error":"no such user"}"#, status: 404))
        transport.stub(.get, "/legacy/none", with: .json(string: #"{"id":7}"#, status: 409))

        let connect = Connect(transport: transport)
        var printed = ""
        do {
            _ = try connect.send(GetTodo(id: 999)).wait()
        } catch let error as ConnectError {
            printed = "kind: \(error.kind), status: \(error.statusCode ?? 0), message: \(error.message)"
        }
        XCTAssertEqual(printed, "kind: serverMessage, status: 404, message: Todo 999 not found")

        let legacy = Connect(
            transport: transport, middlewares: [ConnectMiddleware()], errorHandler: LegacyErrorHandler(),
            configuration: ServerConfiguration(host: "api.example.com"))
        XCTAssertThrowsError(try legacy.request(Route("/legacy/fail")).wait()) {
            let error = $0 as? LegacyError
            XCTAssertEqual(error?.code, 42)
            XCTAssertEqual(error?.reason, "quota exceeded")
        }
        XCTAssertThrowsError(try legacy.request(Route("/legacy/other")).wait()) {
            let error = $0 as? ConnectError
            XCTAssertEqual(error?.kind, .serverMessage)
            XCTAssertEqual(error?.message, "no such user")
            XCTAssertEqual(error?.statusCode, 404)
            XCTAssertEqual(error?.body, Data(#"{"error":"no such user"}"#.utf8))
        }
        XCTAssertThrowsError(try legacy.request(Route("/legacy/none")).wait()) {
            let error = $0 as? ConnectError
            XCTAssertEqual(error?.kind, .httpStatus)
            XCTAssertEqual(error?.statusCode, 409)
        }
    }

    /// The README's Basic authentication and per-route opt-out ("Authorization").
    func testBasicAuthenticationExample() throws {
        let transport = FakeTransport()
        transport.stub(.post, "/v1/tokens", with: .status(201))
        let gatePassword = "open sesame"
        let apiServer = ServerConfiguration(host: "api.test")
        let gated = Connect(
            middlewares: [.basicAuthentication(username: "gate", password: gatePassword)], configuration: apiServer)
        let signIn = Route("/v1/tokens", method: .post, options: RequestOptions(requiresAuthentication: false))

        let connect = Connect(
            transport: transport, middlewares: gated.middlewares, configuration: ServerConfiguration(host: "api.test"))
        _ = try connect.request(signIn, options: RequestOptions()).wait(timeout: 5)
        XCTAssertNil(transport.requests.first?.value(forHTTPHeaderField: "Authorization"))
    }

    /// The README's "Connectivity" example.
    func testConnectivityExample() throws {
        let monitor = try SystemConnectivityMonitor()
        let queue = RequestQueue(maxConcurrentRequests: 4)
        let connect = Connect(
            middlewares: [ConnectivityMiddleware(monitor: monitor, policy: .waitForConnectivity, pausing: queue)],
            requestQueue: queue
        )
        let urgent = RequestOptions(connectivity: .failFast)  // this call: fail at once while offline
        XCTAssertEqual(urgent.connectivity, .failFast)
        XCTAssertEqual(connect.requestsInFlight, 0)
    }

    /// The README's "Parameters by key, short connectors, a client to inject".
    func testParametersByKeyExample() throws {
        let transport = FakeTransport(fallback: .status(204))
        transport.stub(.get, "/config", with: .json(string: #"{"servers":[{"port":8080}]}"#))
        let api = Connect(host: "api.test", transport: transport)

        let name = "ada"
        let signIn = Route("/sessions", method: .post, parameters: ["username": name, "remember": true])
        let search = Route("/todos", parameters: ["userId": 1, "tags": ["home", "work"]], headers: ["X-App": "ios"])
        let config = api.request("/config").decoded(toType: JSONValue.self)  // config["servers"]?[0]?["port"]

        XCTAssertEqual(try config.wait(timeout: 5)["servers"]?[0]?["port"]?.intValue, 8080)
        _ = try api.request(signIn).wait(timeout: 5)
        _ = try api.request(search).wait(timeout: 5)
        let sent = transport.requests
        XCTAssertEqual(
            sent[1].httpBody.map { String(decoding: $0, as: UTF8.self) }, #"{"username":"ada","remember":true}"#)
        XCTAssertEqual(sent[2].url?.absoluteString, "https://api.test/todos?userId=1&tags=home&tags=work")
        XCTAssertEqual(sent[2].value(forHTTPHeaderField: "X-App"), "ios")

        class APIRequest: BasicConnector {
            override var baseURL: URL { URL(string: "https://api.example.com/v1")! }
        }

        final class SignOut: APIRequest {
            override var endpoint: String { "/sessions/current" }
            override var method: HTTPMethod { .delete }
        }

        let gateway: any ConnectClient = Connect(baseURL: URL(string: "http://gateway.local:5000/v2")!)
        XCTAssertEqual(try SignOut().asURLRequest().httpMethod, "DELETE")
        XCTAssertEqual(try SignOut().asURLRequest().url?.absoluteString, "https://api.example.com/v1/sessions/current")
        XCTAssertTrue(gateway is Connect)
    }

    func testEveryReadmeSwiftBlockIsCompiledCode() throws {
        let root = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        var sources = try compiledSources(in: root.appendingPathComponent("Playground"))
        sources += try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        // The engine and integration examples are run by the tests of their packages (Transports/*/Tests,
        // Integrations/*/Tests).
        for folder in ["Transports", "Integrations"] {
            let packages = root.appendingPathComponent(folder)
            for package in (try? FileManager.default.contentsOfDirectory(atPath: packages.path)) ?? [] {
                let tests = packages.appendingPathComponent(package).appendingPathComponent("Tests")
                for target in (try? FileManager.default.contentsOfDirectory(atPath: tests.path)) ?? [] {
                    sources += try compiledSources(in: tests.appendingPathComponent(target))
                }
            }
        }
        let haystack = MarkdownCode.normalized(sources)

        let blocks = MarkdownCode.swiftBlocks(in: readme)
        XCTAssertGreaterThan(blocks.count, 5)
        for block in blocks where !block.hasPrefix(".package(") {
            XCTAssertTrue(
                haystack.contains(MarkdownCode.normalized(block)),
                "README block is not in the Playground or ReadmeExamplesTests:\n\(block)"
            )
        }
    }

    private func compiledSources(in folder: URL) throws -> String {
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        return try files.filter { $0.pathExtension == "swift" }.sorted { $0.path < $1.path }
            .map { try String(contentsOf: $0, encoding: .utf8) }.joined(separator: "\n")
    }
}
