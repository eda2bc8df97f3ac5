import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Everyday tasks of a Remotli, Konex or JustAPIs app, done as the migration guides
/// (`SwiftConnect.docc/ComingFrom*.md`) and the doc comments they point to say, where `MigrationGuideTests` does not
/// already run the guide's own snippet.
final class MigrationTasksTests: XCTestCase {
    private var server: LocalServer!
    private var apiURL: URL { server.baseURL }

    override func setUpWithError() throws {
        server = try LocalServer.started()
    }

    override func tearDown() {
        server.stop()
    }

    private struct Post: Codable, Sendable, Equatable {
        var id: Int?
        var title: String?
    }

    private struct GetAllPosts: Connector {
        var baseURL: URL { URL(string: "/")! }
        var endpoint: String { "/posts" }
    }

    // MARK: Konex

    /// Konex: "the ``ConnectClient`` protocol it conforms to is what an app injects and fakes". A fake that implements
    /// only `response(for:debugResponse:options:)`, as ConnectClient's doc comment shows, answers the app's
    /// `request(_:)` and `decoded(toType:)` for the guide's connector, whose base URL `/` leaves the server to the
    /// client (so `asURLRequest()`, which the doc comment's fake used to call, throws for it).
    func testKonexAnAppInjectsAFakeOfConnectClient() throws {
        final class PostsStore: Sendable {
            let client: any ConnectClient
            init(client: any ConnectClient) { self.client = client }
            func all() -> Future<[Post]> { client.request(GetAllPosts()).decoded(toType: [Post].self) }
        }
        struct CannedClient: ConnectClient {
            let asked = Guarded<[String]>([])
            func response(for connector: any Connector, debugResponse: Bool, options: RequestOptions)
                -> Future<ConnectResponse>
            {
                asked.withLock { $0.append(connector.endpoint) }
                // As ConnectClient's doc comment writes it: the connector's base URL is `/`, so no URL of its own.
                let request = URLRequest(
                    url: URL(string: "https://fake.test")!.appendingPathComponent(connector.endpoint))
                return Future(result: Result { try .json(#"[{"id":7,"title":"Canned"}]"#, for: request) })
            }
        }
        let fake = CannedClient()
        let posts = try PostsStore(client: fake).all().wait()
        XCTAssertEqual(posts, [Post(id: 7, title: "Canned")])
        XCTAssertEqual(fake.asked.withLock { $0 }, ["/posts"])
        // Through the protocol, the connector calls are as on Connect (ComingFromRemotli): options with or without
        // `debugResponse:`.
        let client: any ConnectClient = fake
        let once = RequestOptions(acceptsEveryStatus: true)
        let again = client.request(GetAllPosts(), debugResponse: false, options: once).decoded(toType: [Post].self)
        XCTAssertEqual(try again.wait(), [Post(id: 7, title: "Canned")])
        let short = client.request(GetAllPosts(), options: once).decoded(toType: [Post].self)
        XCTAssertEqual(try short.wait(), [Post(id: 7, title: "Canned")])
    }

    /// Konex returned the `URLSessionDataTask` to cancel; here ``Future/cancel()`` "fails it with
    /// ``ConnectError/Kind/cancelled`` and stops the transfer".
    func testKonexCancellingTheFutureFailsItAsCancelled() throws {
        let arrived = Promise<Void>()
        server.route("GET", "/posts") { _ in
            arrived.succeed(())
            return LocalServer.Response.json(string: "[]").withFault(.neverFinishHeaders)
        }
        let client = Connect(baseURL: apiURL)
        let call = client.request(GetAllPosts()).decoded(toType: [Post].self)
        _ = try arrived.future.wait()
        call.cancel()
        XCTAssertThrowsError(try call.wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .cancelled, "\(error)")
        }
    }

    /// Konex: "`KonexClient(urlSession:)` is `Connect(baseURL: apiURL, transport: URLSessionTransport(session:
    /// yourSession))`": the guide's connector, whose base URL is `/`, goes to the server through the app's session.
    func testKonexAClientOnTheAppsOwnURLSession() throws {
        server.route("GET", "/posts") { _ in .json(string: #"[{"id":1,"title":"First"}]"#) }
        let yourSession = URLSession(configuration: .ephemeral)
        defer { yourSession.invalidateAndCancel() }
        let client = Connect(baseURL: apiURL, transport: URLSessionTransport(session: yourSession))
        let posts = try client.request(GetAllPosts()).decoded(toType: [Post].self).wait()
        XCTAssertEqual(posts, [Post(id: 1, title: "First")])
    }

    /// Konex sent each request once: "`RetryPolicy(maxAttempts: 1)` sends each request once", a 503 included.
    func testKonexOneAttemptSendsA503dGetOnce() throws {
        server.route("GET", "/posts") { _ in .json(string: #"{"msg":"busy"}"#, status: 503) }
        let client = Connect(
            retryPolicy: RetryPolicy(maxAttempts: 1), configuration: ServerConfiguration(baseURL: apiURL))
        XCTAssertThrowsError(try client.request(GetAllPosts()).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.statusCode, 503, "\(error)")
        }
        XCTAssertEqual(server.requestCount(for: "GET", path: "/posts"), 1)
    }

    // MARK: Remotli

    /// Remotli's models map `first_name` with coding keys; a client whose JSON decoder converts from snake case
    /// (`ResponseDecoders`, as its doc comment shows) decodes the same JSON into a model with none.
    func testRemotliSnakeCaseKeysWithTheClientsDecoderInsteadOfCodingKeys() throws {
        server.route("GET", "/user/login") { _ in
            .json(string: #"{"identifier":"u1","first_name":"Ada","pending_verification":true}"#)
        }
        struct User: Codable, Sendable {
            var identifier: String
            var firstName: String
            var pendingVerification: Bool
        }
        let json = JSONDecoder()
        json.keyDecodingStrategy = .convertFromSnakeCase
        var decoders = ResponseDecoders.default
        decoders.register(json, for: "application/json")
        let myHost = Connect(
            configuration: ServerConfiguration(baseURL: apiURL), settings: Connect.Settings(decoders: decoders))
        let user = try myHost.request("/user/login").decoded(toType: User.self).wait()
        XCTAssertEqual(user.firstName, "Ada")
        XCTAssertTrue(user.pendingVerification)
    }

    // MARK: JustAPIs

    /// A JustAPIs `RequestPreparer` could "remap URL's"; a middleware adapter changes the request's URL the same way.
    func testJustAPIsAPreparerThatRemapsTheURLIsAnAdapter() throws {
        server.route("GET", "/v2/foo") { request in .json(string: #"{"target":"\#(request.target)"}"#) }
        let remap = AnyMiddleware.adapter { request in
            guard var parts = URLComponents(url: request.url, resolvingAgainstBaseURL: false) else { return }
            parts.path = "/v2" + parts.path
            if let url = parts.url { request.url = url }
        }
        let gateway = Connect(middlewares: [remap], configuration: ServerConfiguration(baseURL: apiURL))
        let json = try gateway.request("/foo", parameters: ["id": 123]).decoded(toType: JSONValue.self).wait()
        XCTAssertEqual(json["target"]?.stringValue, "/v2/foo?id=123")
    }

    /// JustAPIs' `DefaultRequestPropertySet` is ``Connect/Settings/methodOptions``: a method's defaults apply to its
    /// requests only, and a connector's own options win over them.
    func testJustAPIsDefaultsPerMethodApplyToThatMethodOnly() throws {
        server.route("GET", "/foo") { request in .json(string: #"{"h":"\#(request.header("X-Kind") ?? "none")"}"#) }
        server.route("POST", "/foo") { request in .json(string: #"{"h":"\#(request.header("X-Kind") ?? "none")"}"#) }
        let gateway = Connect(
            configuration: ServerConfiguration(baseURL: apiURL),
            settings: Connect.Settings(methodOptions: [
                .post: RequestOptions(headers: [HTTPHeader(name: "X-Kind", value: "post")])
            ]))
        let get = try gateway.request("/foo").decoded(toType: JSONValue.self).wait()
        let post = try gateway.request(Route("/foo", method: .post)).decoded(toType: JSONValue.self).wait()
        XCTAssertEqual(get["h"]?.stringValue, "none")
        XCTAssertEqual(post["h"]?.stringValue, "post")
    }

    /// JustAPIs' `followRedirects = false` is `maxRedirects` set to `0`: the redirect is the answer, which fails the
    /// call with its 3xx status unless the options accept every status; where it points is never asked.
    func testJustAPIsNotFollowingARedirect() throws {
        server.route("GET", "/old") { _ in .redirect(to: "/new") }
        server.route("GET", "/new") { _ in .json(string: "{}") }
        let gateway = Connect(baseURL: apiURL)
        var stay = RequestOptions()
        stay.maxRedirects = 0
        XCTAssertThrowsError(try gateway.response(for: Route("/old"), options: stay).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.statusCode, 302, "\(error)")
        }
        stay.acceptsEveryStatus = true
        let redirect = try gateway.response(for: Route("/old"), options: stay).wait()
        XCTAssertEqual(redirect.statusCode, 302)
        XCTAssertEqual(redirect.header("Location"), "/new")
        XCTAssertEqual(server.requestCount(for: "GET", path: "/new"), 0)
    }

    /// JustAPIs' tests stubbed requests with OHHTTPStubs; `FakeTransport` answers the gateway's `get("/foo",
    /// params: ["id": 123])` the same way, and records what was asked.
    func testJustAPIsStubbedTestsUseFakeTransport() throws {
        let transport = FakeTransport()
        transport.stub(.get, "/foo", query: ["id": "123"], with: .json(string: #"{"ok":true}"#))
        let gateway = Connect(transport: transport, configuration: ServerConfiguration(baseURL: apiURL))
        let json = try gateway.request("/foo", parameters: ["id": 123]).decoded(toType: JSONValue.self).wait()
        XCTAssertEqual(json["ok"]?.boolValue, true)
        XCTAssertEqual(transport.requests(to: "/foo").count, 1)
    }
}
