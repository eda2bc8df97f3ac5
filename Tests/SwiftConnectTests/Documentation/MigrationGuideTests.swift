import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The migration guides' snippets (`SwiftConnect.docc/ComingFrom*.md`), run against a server on 127.0.0.1: each
/// Swift block of a guide is code this file contains verbatim (checked below).
final class MigrationGuideTests: XCTestCase {
    private struct UnexpectedContent: Error {}

    /// What a guide's callback collects; `arrived` opens at the first.
    private final class Outcomes<Element>: @unchecked Sendable {
        // @unchecked Sendable: `lock` protects `stored`.
        private let lock = NSLock()
        private var stored: [Element] = []
        let arrived = Gate()

        func append(_ element: Element) {
            lock.lock()
            stored.append(element)
            lock.unlock()
            arrived.open()
        }

        var elements: [Element] {
            lock.lock()
            defer { lock.unlock() }
            return stored
        }
    }

    private var server: LocalServer!
    private var apiURL: URL { server.baseURL }

    override func setUpWithError() throws {
        server = try LocalServer.started()
        server.route("GET", "/posts") { _ in
            .json(string: #"[{"id":1,"title":"First"},{"id":2,"title":"Second"}]"#)
        }
        server.route("GET", "/posts/:id") { request in
            .json(string: #"{"id":\#(request.pathParameters["id"] ?? "0"),"title":"Post"}"#)
        }
        server.route("POST", "/posts") { request in
            let sent = (try? JSONDecoder().decode(JSONValue.self, from: request.body)) ?? .null
            return .json(string: #"{"id":101,"title":"\#(sent["title"]?.stringValue ?? "")"}"#, status: 201)
        }
    }

    override func tearDown() {
        server.stop()
    }

    // MARK: Coming from Konex

    func testComingFromKonex() async throws {
        struct GetAllPosts: Connector {
            var baseURL: URL { URL(string: "/")! }
            var endpoint: String { "/posts" }
        }

        let shown = Outcomes<Int>()
        let failures = Outcomes<any Error>()

        struct Post: Codable, Sendable {
            var id: Int?
            var title: String?
        }

        let client = Connect(baseURL: apiURL)
        client.request(GetAllPosts()).decoded(toType: [Post].self).observe { result in
            switch result {
            case .success(let posts): shown.append(posts.count)
            case .failure(let error): failures.append(error)
            }
        }

        await Task.detached { shown.arrived.wait(timeout: 30) }.value
        XCTAssertEqual(shown.elements, [2])
        XCTAssertTrue(failures.elements.isEmpty)

        struct LegacyPost: Sendable {
            var id: Int?
            var title: String?
        }

        struct GetPost: DecodingConnector {
            let id: Int
            var baseURL: URL { URL(string: "/")! }
            var endpoint: String { "/posts/{id}" }
            var parameters: (any ParametersRepresentable)? { Parameter.path(key: "id", value: "\(id)") }

            func decode(_ response: ConnectResponse, using decoders: ResponseDecoders) throws -> LegacyPost {
                let json = try JSONDecoder().decode(JSONValue.self, from: response.data)
                return LegacyPost(id: json["id"]?.intValue, title: json["title"]?.stringValue)
            }
        }

        let post = try await client.send(GetPost(id: 1)).value
        XCTAssertEqual(post.id, 1)
        XCTAssertEqual(post.title, "Post")

        class APIRequest: BasicConnector {
            override var headers: [HTTPHeader] { .init(["Accept": "application/json"]) }
        }

        final class CreatePost: APIRequest {
            let title: String
            init(title: String) { self.title = title }
            override var endpoint: String { "/posts" }
            override var method: HTTPMethod { .post }
            override var parameters: (any ParametersRepresentable)? { ["title": title, "userId": 1] as JSONObject }
        }

        let created = try await client.request(CreatePost(title: "Hello")).decoded(toType: Post.self).value
        XCTAssertEqual(created.id, 101)
        XCTAssertEqual(created.title, "Hello")
        XCTAssertEqual(server.requests.last?.bodyText, #"{"title":"Hello","userId":1}"#)

        let sentPaths = Outcomes<String>()
        let logger = AnyPlugin(willSend: { request, _ in sentPaths.append(request.url?.path ?? "") })
        let requireJSON = AnyResponseValidator { response in
            guard response.mediaType == "application/json" else { throw UnexpectedContent() }
        }
        let firstOnly = AnyResponseProcessor { response in
            var response = response
            let posts = try JSONDecoder().decode([Post].self, from: response.data)
            response.data = try JSONEncoder().encode(Array(posts.prefix(1)))
            return response
        }
        let extended = Connect(
            configuration: ServerConfiguration(baseURL: apiURL),
            settings: Connect.Settings(options: RequestOptions(plugins: [logger]))  // the client level
        )
        let checked = RequestOptions(validators: [requireJSON], processors: [firstOnly])  // the call level
        let one = try await extended.request(GetAllPosts(), options: checked).decoded(toType: [Post].self).value

        XCTAssertEqual(one.map(\.title), ["First"])
        // Plugins run on the plugin queue, not on the request's path: the value can come before the plugin hears.
        await Task.detached { sentPaths.arrived.wait(timeout: 30) }.value
        XCTAssertEqual(sentPaths.elements, ["/posts"])
    }

    // MARK: Coming from Remotli

    func testComingFromRemotli() async throws {
        server.route("GET", "/user/login") { request in
            let name = request.queryItems.first { $0.name == "username" }?.value ?? ""
            return .json(string: #"{"identifier":"u1","first_name":"\#(name)","pending_verification":false}"#)
        }
        server.route("POST", "/api/mas/0.2/app_config/fetch") { request in
            .json(string: #"{"form":"\#(request.bodyText)"}"#)
        }
        server.route("POST", "/v1/tokens") { request in
            .json(string: #"{"authorization":"\#(request.header("Authorization") ?? "none")"}"#)
        }
        let username = "ada"
        let password = "pw"
        let signedIn = Outcomes<String>()
        let failed = Outcomes<String>()

        struct User: Codable, Sendable {
            var identifier: String
            var firstName: String
            var isPendingVerification: Bool = false

            enum CodingKeys: String, CodingKey {
                case identifier
                case firstName = "first_name"
                case isPendingVerification = "pending_verification"
            }
        }

        let myHost = Connect(baseURL: apiURL)
        myHost.request("/user/login", parameters: ["username": username, "password": password])
            .decoded(toType: User.self)
            .observe { user, error in
                guard let user, error == nil else { return failed.append("\(String(describing: error))") }
                signedIn.append(user.firstName)
            }

        await Task.detached { signedIn.arrived.wait(timeout: 30) }.value
        XCTAssertEqual(signedIn.elements, ["ada"])
        XCTAssertTrue(failed.elements.isEmpty)
        XCTAssertEqual(server.requests.last?.target, "/user/login?username=ada&password=pw")

        let route = Route(
            "/api/mas/0.2/app_config/fetch", method: .post, parameters: ["app_id": "MY_APP_ID", "token": ""],
            headers: ["Content-Type": "application/x-www-form-urlencoded"])
        let config = try await myHost.request(route).decoded(toType: JSONValue.self).value
        XCTAssertEqual(config["form"]?.stringValue, "app_id=MY_APP_ID&token=")

        enum TokenRoute: Connector {
            case anonymous
            case refresh(token: String)

            var baseURL: URL { URL(string: "/")! }
            var endpoint: String { "/v1/tokens" }
            var method: HTTPMethod { .post }
            var headers: [HTTPHeader] { .init(["Accept": "application/json", "Accept-Language": "en-us"]) }
            var parameters: (any ParametersRepresentable)? {
                switch self {
                case .anonymous: return ["type": "ANONYMOUS"] as JSONObject
                case .refresh(let token): return ["type": "REFRESH", "credential": token] as JSONObject
                }
            }
            var options: RequestOptions { RequestOptions(requiresAuthentication: false) }
        }

        let token = try await myHost.request(TokenRoute.anonymous).decoded(toType: JSONValue.self).value
        XCTAssertEqual(token["authorization"]?.stringValue, "none")
        XCTAssertEqual(server.requests.last?.bodyText, #"{"type":"ANONYMOUS"}"#)

        let login = Route.login(username: "ada", password: "pw")
        let session = try await myHost.request(login).decoded(toType: JSONValue.self).value
        XCTAssertEqual(session["authorization"]?.stringValue, "none")
        XCTAssertEqual(
            server.requests.last?.bodyText, #"{"name":"ada","credentialType":"CREDENTIAL","credential":"pw"}"#)

        final class MySiteAPI: Sendable {
            let connect: Connect

            init(baseURL: URL) {
                connect = Connect(
                    middlewares: [.basicAuthentication(username: "site-user", password: "secret-password")],
                    configuration: ServerConfiguration(baseURL: baseURL))
            }

            func login(username: String, password: String) -> Future<JSONValue> {
                connect.request(Route.login(username: username, password: password)).decoded(toType: JSONValue.self)
            }
        }

        let api = MySiteAPI(baseURL: apiURL)
        let loggedIn = try await api.login(username: "ada", password: "pw").value
        // The guide: `Route.login` says `requiresAuthentication: false`, which BasicAuthentication reads too.
        XCTAssertEqual(loggedIn["authorization"]?.stringValue, "none")
        let gated = api.connect.request(Route("/v1/tokens", method: .post)).decoded(toType: JSONValue.self)
        let signed = try await gated.value
        XCTAssertEqual(
            signed["authorization"]?.stringValue,
            "Basic " + Data("site-user:secret-password".utf8).base64EncodedString())
        // The guide: a route with `requiresAuthentication: false` (the token route) goes unsigned.
        let unsigned = try await api.connect.request(TokenRoute.anonymous).decoded(toType: JSONValue.self).value
        XCTAssertEqual(unsigned["authorization"]?.stringValue, "none")

        enum RemoteSites {
            static func main(_ url: URL) -> ServerConfiguration { ServerConfiguration(baseURL: url) }
        }

        let sessionConfiguration = URLSessionTransport.defaultConfiguration
        sessionConfiguration.httpCookieAcceptPolicy = .always
        let transport = URLSessionTransport(configuration: sessionConfiguration)
        let site = Connect(transport: transport, configuration: RemoteSites.main(apiURL))
        let viaSite = try await site.request("/user/login").decoded(toType: User.self).value
        XCTAssertEqual(viaSite.identifier, "u1")
    }

    // MARK: Coming from JustAPIs

    private struct MissingRequestID: Error {}

    func testComingFromJustAPIs() async throws {
        server.route("GET", "/foo") { request in
            let (id, client) = (request.queryItem("id") ?? "", request.header("X-Client") ?? "")
            return .json(string: #"{"id":"\#(id)","client":"\#(client)"}"#).withHeader("X-Request-ID", "r1")
        }
        server.route("POST", "/search") { _ in .json(string: #"{"found":1}"#) }
        let statuses = Outcomes<Int>()
        let failures = Outcomes<any Error>()
        let serverHost = apiURL.host ?? ""
        let certificateFile = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString + ".cer")
        try CertificatePinsTests.ecCertificate.write(to: certificateFile)
        defer { try? FileManager.default.removeItem(at: certificateFile) }

        let gateway = Connect(baseURL: apiURL)
        gateway.response(for: Route("/foo", parameters: ["id": 123])).observe { result in
            switch result {
            case .success(let response): statuses.append(response.statusCode)
            case .failure(let error): failures.append(error)
            }
        }

        await Task.detached { statuses.arrived.wait(timeout: 30) }.value
        XCTAssertEqual(statuses.elements, [200])
        XCTAssertTrue(failures.elements.isEmpty)

        let json = try await gateway.request("/foo", parameters: ["id": 123]).decoded(toType: JSONValue.self).value
        XCTAssertEqual(json["id"]?.stringValue, "123")

        let body = Parameter.body(Data(#"{"q":"swift"}"#.utf8), contentType: "application/json")
        let query = Parameter.query(key: "page", value: "2")  // JustAPIs' params: ["page": 2]
        let paged = Route("/search", method: .post, parameters: CompositeParameters(query, body))
        let page = try await gateway.request(paged).decoded(toType: JSONValue.self).value  // POST /search?page=2
        XCTAssertEqual(page["found"]?.intValue, 1)
        XCTAssertEqual(server.requests.last?.target, "/search?page=2")
        XCTAssertEqual(server.requests.last?.bodyText, #"{"q":"swift"}"#)

        let everyStatus = RequestOptions(acceptsEveryStatus: true)  // a 404 is a response, as in a gateway's callback
        let missing = try await gateway.response(for: Route("/missing"), options: everyStatus).value
        XCTAssertEqual(missing.statusCode, 404)

        let queue = RequestQueue(maxConcurrentRequests: 2)
        let throttled = Connect(requestQueue: queue, configuration: ServerConfiguration(baseURL: apiURL))
        queue.pause()
        let waiting = throttled.request("/foo", parameters: ["id": 1])
        let pending = queue.waitingRequests  // JustAPIs' pendingRequests
        queue.cancel(pending[0].id)  // cancelRequest(...)
        queue.resume()
        XCTAssertEqual(pending.count, 1)
        XCTAssertEqual(connectError(of: waiting)?.kind, .cancelled)
        XCTAssertEqual(server.requestCount(for: "GET", path: "/foo"), 2, "the cancelled request never went out")

        let pins = try CertificatePins(files: [serverHost: [certificateFile]])
        let pinnedTransport = URLSessionTransport(configuration: URLSessionTransport.defaultConfiguration, pins: pins)
        let pinned = Connect(transport: pinnedTransport, configuration: ServerConfiguration(baseURL: apiURL))
        XCTAssertEqual(connectError(of: pinned.request("/foo"))?.kind, .certificatePinning)

        var decoders = ResponseDecoders.default
        decoders.register(PropertyListDecoder(), for: "application/x-plist")  // setParser(...)
        let parsingSettings = Connect.Settings(decoders: decoders)
        let parsing = Connect(configuration: ServerConfiguration(baseURL: apiURL), settings: parsingSettings)
        let raw: Data = try await parsing.request("/foo").value  // applyContentTypeParsing = false
        let forcedJSON = parsing.request("/foo").decoded(toType: JSONValue.self, decoder: JSONDecoder())
        let forced = try await forcedJSON.value
        XCTAssertEqual(try JSONDecoder().decode(JSONValue.self, from: raw)["id"]?.stringValue, "")
        XCTAssertEqual(forced["id"]?.stringValue, "")

        let caching = Connect(responseCache: ResponseCache(), configuration: ServerConfiguration(baseURL: apiURL))
        let keep = RequestOptions(cache: CacheRule(timeToLive: 300))  // cacheResponseWithExpiration = 300
        let fresh = RequestOptions(cache: CacheRule(timeToLive: 300, bypassesCache: true))  // no cached answer
        let search = Route("/search", method: .post, parameters: ["q": "swift"])
        let byBody = RequestOptions(cache: CacheRule(timeToLive: 300, keyIncludesBody: true))  // a key naming the body
        let first = try await caching.request(Route("/foo"), options: keep).value
        let again = try await caching.request(Route("/foo"), options: keep).value  // served from the cache
        let renewed = try await caching.request(Route("/foo"), options: fresh).value  // fetched, then stored
        let found = try await caching.request(search, options: byBody).value
        XCTAssertEqual(first, again)
        XCTAssertEqual(renewed, first)
        XCTAssertEqual(String(decoding: found, as: UTF8.self), #"{"found":1}"#)
        XCTAssertEqual(server.requestCount(for: "GET", path: "/foo"), 6, "one of the three was served from the cache")

        let stamp = AnyMiddleware.adapter { request in request.setValue("ios", forHTTPHeaderField: "X-Client") }
        let appHeader = HTTPHeader(name: "X-App", value: "demo")
        let gatewayServer = ServerConfiguration(baseURL: apiURL, defaultHeaders: [appHeader])
        let requireID = AnyResponseProcessor { response in
            guard response.header("X-Request-ID") != nil else { throw MissingRequestID() }
            return response
        }
        let prepared = Connect(
            middlewares: [stamp],
            configuration: gatewayServer,
            settings: Connect.Settings(
                options: RequestOptions(processors: [requireID]),
                methodOptions: [.get: RequestOptions(timeout: 10), .post: RequestOptions(timeout: 30)]))
        let checked = try await prepared.request("/foo").decoded(toType: JSONValue.self).value
        XCTAssertEqual(checked["client"]?.stringValue, "ios")
        XCTAssertEqual(server.requests.last?.header("X-App"), "demo")
    }

    // MARK: Coming from Alamofire

    func testComingFromAlamofire() async throws {
        struct Todo: Codable, Sendable {
            var id: Int
            var title: String
        }
        struct NewTodo: Encodable, Sendable {
            var title: String
        }
        struct TokenResponse: Decodable, Sendable {
            var accessToken: String
        }
        let todoJSON = #"{"id":1,"title":"Ship"}"#
        let (busyCalls, tokenCalls) = (Counter(), Counter())
        server.route("GET", "/todos/:id") { request in
            .json(string: #"{"id":\#(request.pathParameters["id"] ?? "0"),"title":"Post"}"#)
        }
        server.route("GET", "/todos") { request in
            .json(string: #"[{"id":1,"title":"For user \#(request.queryItem("userId") ?? "")"}]"#)
        }
        server.route("POST", "/todos") { request in
            let sent = (try? JSONDecoder().decode(JSONValue.self, from: request.body)) ?? .null
            let title = sent["title"]?.stringValue ?? ""
            guard !title.isEmpty else { return .json(string: #"{"code":"blank","detail":"no title"}"#, status: 422) }
            return .json(string: #"{"id":101,"title":"\#(title)"}"#, status: 201)
        }
        server.route("DELETE", "/todos/:id") { _ in .status(204) }
        server.route("GET", "/busy") { request in
            busyCalls.increment()
            guard busyCalls.value > 1 else { return .json(string: #"{"error":"busy"}"#, status: 409) }
            return .json(string: #"{"client":"\#(request.header("X-Client") ?? "")"}"#)
        }
        server.route("POST", "/oauth/token") { _ in
            tokenCalls.increment()
            return .json(string: #"{"accessToken":"fresh"}"#)
        }
        server.route("GET", "/me") { request in
            guard request.header("Authorization") == "Bearer fresh" else { return .status(401) }
            return .json(string: #"{"name":"ada"}"#)
        }
        server.route("POST", "/upload") { request in
            .json(string: #"{"bytes":\#(request.body.count)}"#, status: 201)
        }
        server.route("GET", "/files/report") { _ in .data(Data("%PDF-1.7".utf8), contentType: "application/pdf") }
        server.route("GET", "/logs") { _ in .text("started\nready\n") }
        server.route("GET", "/chat") { _ in
            .serverSentEvents(["Hel", "lo", "[DONE]"].map { ServerSentEvent(data: $0) })
        }
        server.route("GET", "/slow") { _ in .json(string: "{}").delayed(by: 5) }
        let titles = Outcomes<Result<Todo, any Error>>()
        let problems = Outcomes<String>()
        let fractions = Outcomes<Double>()
        let changes = Outcomes<Bool>()
        let destination = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString + ".pdf")
        defer { try? FileManager.default.removeItem(at: destination) }
        var signed = URLRequest(url: apiURL.appendingPathComponent("me"))
        signed.setValue("Bearer secret-token", forHTTPHeaderField: "Authorization")

        let client = Connect(baseURL: apiURL)  // Session, for one server
        let found = try await client.request("/todos", parameters: ["userId": 1]).decoded(toType: [Todo].self).value
        XCTAssertEqual(found.map(\.title), ["For user 1"])

        enum TodoRouter: Connector {
            case get(id: Int)
            case create(NewTodo)

            var baseURL: URL { URL(string: "/")! }
            var endpoint: String { if case .get = self { "/todos/{id}" } else { "/todos" } }
            var method: HTTPMethod { if case .get = self { .get } else { .post } }
            var parameters: (any ParametersRepresentable)? {
                switch self {
                case .get(let id): return Parameter.path(key: "id", value: "\(id)")
                case .create(let todo): return Parameter.jsonObject(todo)
                }
            }
        }

        client.request(TodoRouter.get(id: 1)).decoded(toType: Todo.self).observe { result in titles.append(result) }

        struct GetTodo: TypedConnector {
            typealias Response = Todo
            let id: Int
            var baseURL: URL { URL(string: "/")! }
            var endpoint: String { "/todos/{id}" }
            var parameters: (any ParametersRepresentable)? { Parameter.path(key: "id", value: "\(id)") }
        }

        let seven = try await client.send(GetTodo(id: 7)).value
        let deleted = try await client.request("/todos/1", method: .delete).decoded(toType: EmptyResponse.self).value

        await Task.detached { titles.arrived.wait(timeout: 30) }.value
        XCTAssertEqual(try titles.elements.map { try $0.get().title }, ["Post"])
        XCTAssertEqual(seven.id, 7)
        XCTAssertEqual(deleted, EmptyResponse())
        let created = try await client.request(TodoRouter.create(NewTodo(title: "Ship"))).decoded(toType: Todo.self)
            .value
        XCTAssertEqual(created.id, 101)
        XCTAssertEqual(server.requests.last?.bodyText, #"{"title":"Ship"}"#)
        // The guide: an Optional decodes an empty body as nil.
        let maybe = try await client.request("/todos/1", method: .delete).decoded(toType: Todo?.self).value
        XCTAssertNil(maybe)

        let onlyJSON = AnyResponseValidator { response in  // validate(contentType: ["application/json"])
            // As Alamofire's: an empty body (a 204, an answer to HEAD) has no type to check.
            guard response.data.isEmpty || response.mediaType == "application/json" else { throw UnexpectedContent() }
        }
        let checked = Connect(
            configuration: ServerConfiguration(baseURL: apiURL),
            settings: Connect.Settings(options: RequestOptions(validators: [onlyJSON])))

        let listed = try await checked.request("/todos").decoded(toType: [Todo].self).value
        XCTAssertEqual(listed.count, 1)
        let notJSON = connectError(of: checked.request("/logs"))
        XCTAssertEqual(notJSON?.kind, .rejected)
        XCTAssertTrue(notJSON?.underlyingError is UnexpectedContent)
        // The guide: an empty answer passes, as Alamofire's `validate(contentType:)` lets it.
        let emptied = try await checked.request("/todos/1", method: .delete).decoded(toType: EmptyResponse.self).value
        XCTAssertEqual(emptied, EmptyResponse())
        // The guide: `acceptsEveryStatus` makes a 404 an answer, as without validate().
        let everyStatus = RequestOptions(acceptsEveryStatus: true)
        let missing = try await client.response(for: Route("/missing"), options: everyStatus).value
        XCTAssertEqual(missing.statusCode, 404)

        struct APIError: Error, Decodable {
            let code: String
        }

        struct APIErrorHandler: ErrorHandling {
            func handle(response: [String: Any]) -> (any Error)? { ErrorHandler().handle(response: response) }

            func handle(_ response: ConnectResponse) -> (any Error)? {
                (try? JSONDecoder().decode(APIError.self, from: response.data)) ?? ErrorHandler().handle(response)
            }
        }

        let api = Connect(errorHandler: APIErrorHandler(), configuration: ServerConfiguration(baseURL: apiURL))
        do {
            _ = try await api.request(TodoRouter.create(NewTodo(title: ""))).value
        } catch let error as APIError {
            problems.append(error.code)
        }
        XCTAssertEqual(problems.elements, ["blank"])
        XCTAssertEqual(connectError(of: api.request("/missing"))?.statusCode, 404, "other bodies: the default handler")

        struct AppInterceptor: ConnectMiddlewareProtocol {
            func adapt(_ request: URLRequest) throws -> URLRequest {
                var request = request
                request.setValue("ios", forHTTPHeaderField: "X-Client")
                return request
            }

            func retry(_ request: URLRequest, dueTo error: any Error, attempt: Int) -> RetryDecision {
                (error as? ConnectError)?.statusCode == 409 ? .retry : .doNotRetry
            }
        }

        let tokenClient = Connect(baseURL: apiURL)  // without the middleware: the refresh must not wait for itself
        let auth = AuthenticationMiddleware(credential: .bearer(token: "expired")) { _ in
            tokenClient.request("/oauth/token", method: .post).decoded(toType: TokenResponse.self)
                .map { AuthorizationToken.bearer(token: $0.accessToken) }
        }
        let signedIn = Connect(
            middlewares: [auth, AppInterceptor()], configuration: ServerConfiguration(baseURL: apiURL))

        let me = try await signedIn.request("/me").decoded(toType: JSONValue.self).value
        XCTAssertEqual(me["name"]?.stringValue, "ada")
        XCTAssertEqual(tokenCalls.value, 1)
        XCTAssertEqual(auth.credential, .bearer(token: "fresh"))
        let busy = try await signedIn.request("/busy").decoded(toType: JSONValue.self).value  // 409, then 200
        XCTAssertEqual(busy["client"]?.stringValue, "ios")
        XCTAssertEqual(busyCalls.value, 2)

        let clock = ImmediateRetryClock()
        let flaky = FakeTransport()
        flaky.stub(.get, "/todos/1", with: [.status(503, headers: ["Retry-After": "2"]), .json(string: todoJSON)])
        let retrying = Connect(
            transport: flaky, retryPolicy: RetryPolicy(clock: clock),
            configuration: ServerConfiguration(baseURL: apiURL))
        let retried = try await retrying.send(GetTodo(id: 1)).value  // clock.delays == [2.0]
        XCTAssertEqual(retried.title, "Ship")
        XCTAssertEqual(clock.delays, [2.0])
        XCTAssertEqual(flaky.requests.count, 2)

        let progress = RequestOptions(progress: { report in fractions.append(report.uploadFraction ?? 0) })
        let photo = File(name: "beach.jpg", key: "photo", mimeType: .jpg, data: Data(repeating: 0xFF, count: 2_048))
        let upload = Route("/upload", method: .post)
        let uploaded = try await client.upload(
            files: [photo], fields: [("album", "Holiday")], to: upload, options: progress
        )
        .value
        let file = try await client.download(Route("/files/report"), to: destination).value
        XCTAssertGreaterThan(try JSONDecoder().decode(JSONValue.self, from: uploaded)["bytes"]?.intValue ?? 0, 2_048)
        XCTAssertEqual(fractions.elements.last, 1)
        XCTAssertEqual(try Data(contentsOf: file), Data("%PDF-1.7".utf8))
        do {
            _ = try await client.download(Route("/files/report"), to: destination).value
        } catch let error as ConnectError {
            guard let partial = error.partialDownload else { throw error }
            _ = try await client.download(Route("/files/report"), to: destination, resuming: partial).value
        }
        XCTAssertEqual(try Data(contentsOf: destination), Data("%PDF-1.7".utf8))

        var reply = ""
        for try await event in client.stream(Route("/chat")).events where event.data != "[DONE]" {
            reply += event.data
        }
        XCTAssertEqual(reply, "Hello")
        var logLines: [String] = []  // the guide's `.lines`
        for try await line in client.stream(Route("/logs")).lines { logLines.append(line) }
        XCTAssertEqual(logLines, ["started", "ready"])

        let network = try SystemConnectivityMonitor()
        let watch = network.observe { state in changes.append(state.isConnected) }  // startListening(...)
        let curl = cURLCommand(for: signed)  // -H 'Authorization: <redacted>'
        watch.cancel()
        XCTAssertTrue(curl.contains("-H 'Authorization: <redacted>'"), curl)
        XCTAssertFalse(curl.contains("secret-token"))
        // The guide: a ConnectivityMiddleware on the same monitor; 127.0.0.1 is never held back.
        let offlineAware = Connect(
            middlewares: [ConnectivityMiddleware(monitor: network)], configuration: ServerConfiguration(baseURL: apiURL)
        )
        let nearby = try await offlineAware.request("/todos/1").decoded(toType: Todo.self).value
        XCTAssertEqual(nearby.id, 1)

        let slow = client.request("/slow")
        slow.cancel()  // `try await slow.value` throws ConnectError, of kind .cancelled
        do {
            _ = try await slow.value
            XCTFail("cancelled")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .cancelled)
        }
    }

    // MARK: Coming from AsyncHTTPClient

    func testComingFromAsyncHTTPClient() async throws {
        struct Todo: Codable, Sendable, Equatable {
            var id: Int
            var title: String
        }
        server.route("GET", "/todos/:id") { request in
            let id = request.pathParameters["id"] ?? "0"
            guard id != "404" else { return .json(string: #"{"error":"no such todo"}"#, status: 404) }
            return .json(string: #"{"id":\#(id),"title":"Ship"}"#)
        }
        server.route("GET", "/export") { _ in
            .stream(contentLength: nil, contentType: "text/csv") { write in
                for row in 1...20 { guard write(Data("\(row),ok\n".utf8)) else { return } }
            }
        }
        server.route("POST", "/ingest") { request in
            .json(string: #"{"length":"\#(request.header("Content-Length") ?? "")","bytes":\#(request.body.count)}"#)
        }
        server.route("GET", "/old") { _ in .redirect(to: "/new", status: 301) }
        server.route("GET", "/new") { _ in .json(string: "{}") }

        let client = Connect(baseURL: apiURL)
        let limit = RequestOptions(maxResponseBytes: 1024 * 1024)  // body.collect(upTo:)
        let todo = try await client.request(Route("/todos/1"), options: limit).decoded(toType: Todo.self).value
        XCTAssertEqual(todo, Todo(id: 1, title: "Ship"))

        let answer = try await client.response(
            for: Route("/todos/404"), options: RequestOptions(acceptsEveryStatus: true)
        )
        .value
        let once = Connect(
            retryPolicy: RetryPolicy(maxAttempts: 1), configuration: ServerConfiguration(baseURL: apiURL))
        XCTAssertEqual(answer.statusCode, 404)
        XCTAssertEqual(String(decoding: answer.data, as: UTF8.self), #"{"error":"no such todo"}"#)
        do {
            _ = try await once.request(Route("/todos/404")).value
            XCTFail("a 404 fails the call")
        } catch let error as ConnectError {
            XCTAssertEqual(error.statusCode, 404)
        }

        let quick = try await client.request(Route("/todos/1", timeout: 5)).decoded(toType: Todo.self).value
        let perCall = client.request(Route("/todos/1"), options: RequestOptions(timeout: 5))
        let patient = client.request(Route("/export"), options: RequestOptions(timeout: 3600, idleTimeout: 30))
        XCTAssertEqual(quick.id, 1)
        let patientBody = try await patient.value
        XCTAssertFalse(patientBody.isEmpty)
        let perCallBody = try await perCall.value
        XCTAssertFalse(perCallBody.isEmpty)

        let export = client.stream(Route("/export"))
        let head = try await export.response  // status and headers
        var rows = Data()
        for try await chunk in export {
            rows.append(chunk)
        }
        XCTAssertEqual(head.statusCode, 200)
        XCTAssertEqual(String(decoding: rows, as: UTF8.self), (1...20).map { "\($0),ok\n" }.joined())

        let parts = AsyncStream<Data> { continuation in
            for row in 1...3 { continuation.yield(Data("row \(row)\n".utf8)) }
            continuation.finish()
        }
        let upload = ConnectRequest(
            method: .post, url: apiURL.appendingPathComponent("ingest"),
            body: .stream(ConnectRequest.OneShotStream(parts, length: 18)))
        let ingested = try await client.response(for: upload, name: "ingest").value
        let received = try JSONDecoder().decode(JSONValue.self, from: ingested.data)
        #if canImport(FoundationNetworking)
            XCTAssertEqual(received["length"]?.stringValue, "")  // in chunks on Linux, as the guide says
        #else
            XCTAssertEqual(received["length"]?.stringValue, "18")
        #endif
        XCTAssertEqual(received["bytes"]?.intValue, 18)

        var stay = RequestOptions(acceptsEveryStatus: true)
        stay.maxRedirects = 0  // redirectConfiguration: .disallow
        let moved = try await client.response(for: Route("/old"), options: stay).value
        let target = moved.header("Location")
        XCTAssertEqual(moved.statusCode, 301)
        XCTAssertEqual(target, "/new")
        XCTAssertEqual(server.requestCount(for: "GET", path: "/new"), 0)
    }

    // MARK: The guides hold only code that runs

    func testEveryGuideSwiftBlockIsCompiledCode() throws {
        let docc = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/SwiftConnect/SwiftConnect.docc")
        let guides = try FileManager.default.contentsOfDirectory(atPath: docc.path)
            .filter { $0.hasPrefix("ComingFrom") && $0.hasSuffix(".md") }
        XCTAssertFalse(guides.isEmpty)
        let haystack = MarkdownCode.normalized(try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8))
        for guide in guides {
            let text = try String(contentsOf: docc.appendingPathComponent(guide), encoding: .utf8)
            let blocks = MarkdownCode.swiftBlocks(in: text)
            XCTAssertGreaterThan(blocks.count, 3, guide)
            for block in blocks {
                XCTAssertTrue(
                    haystack.contains(MarkdownCode.normalized(block)), "\(guide): a block that no test runs:\n\(block)")
            }
        }
    }
}

extension Route {
    static func login(username: String, password: String) -> Route {
        let credentials: JSONObject = ["name": username, "credentialType": "CREDENTIAL", "credential": password]
        let options = RequestOptions(requiresAuthentication: false)  // Remotli's requiresAuth: false
        return Route("/v1/tokens", method: .post, parameters: credentials, options: options)
    }
}
