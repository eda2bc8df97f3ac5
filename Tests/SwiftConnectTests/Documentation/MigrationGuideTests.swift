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
        XCTAssertEqual(
            loggedIn["authorization"]?.stringValue,
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
        return Route("/v1/tokens", method: .post, parameters: credentials)
    }
}
