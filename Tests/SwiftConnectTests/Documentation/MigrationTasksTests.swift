import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Everyday tasks of a Remotli, Konex, JustAPIs or AsyncHTTPClient app, done as the migration guides
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

    // MARK: AsyncHTTPClient

    /// AsyncHTTPClient's `execute(_:timeout:)` is the call's deadline: `RequestOptions(timeout:)`, a ``Route``'s
    /// `timeout:` or a built request's `timeoutInterval` fails a call the server does not answer in time with
    /// `.timedOut` (in place of `HTTPClientError.deadlineExceeded`), and the server is left waiting, not the caller.
    func testAsyncHTTPClientADeadlineFailsTheCallAsTimedOut() throws {
        let release = Gate()
        defer { release.open() }
        server.route("GET", "/slow") { _ in
            release.wait(timeout: 30)
            return .text("late")
        }
        let client = Connect(baseURL: apiURL)
        let calls: [(String, Future<ConnectResponse>)] = [
            ("options", client.response(for: Route("/slow"), options: RequestOptions(timeout: 0.3))),
            ("route", client.response(for: Route("/slow", timeout: 0.3))),
            (
                "built",
                client.response(
                    for: ConnectRequest(url: apiURL.appendingPathComponent("slow"), timeoutInterval: 0.3))
            ),
        ]
        for (name, call) in calls {
            XCTAssertThrowsError(try call.wait(timeout: 20), name) { error in
                XCTAssertEqual((error as? ConnectError)?.kind, .timedOut, "\(name): \(error)")
            }
        }
    }

    /// AsyncHTTPClient's `response.body` is an async sequence of buffers; `stream` hands the head first
    /// (`response`), then the body's chunks as `Data`, in order.
    func testAsyncHTTPClientStreamingAResponseBody() async throws {
        server.route("GET", "/export") { _ in
            .stream(contentLength: nil, contentType: "text/csv") { write in
                for row in 1...50 { guard write(Data("row \(row)\n".utf8)) else { return } }
            }
        }
        let client = Connect(baseURL: apiURL)
        let stream = client.stream(Route("/export"))
        let head = try await stream.response
        XCTAssertEqual(head.statusCode, 200)
        XCTAssertEqual(head.mediaType, "text/csv")
        var received = Data()
        for try await chunk in stream { received.append(chunk) }
        XCTAssertEqual(String(decoding: received, as: UTF8.self), (1...50).map { "row \($0)\n" }.joined())
    }

    /// AsyncHTTPClient's `request.body = .stream(sequence, length: .known(n))` is a `ConnectRequest.OneShotStream`
    /// given `length:`, sent with `Content-Length` (FoundationNetworking, on Linux, sends every stream in chunks, as
    /// the README and the guide now say); without a length it goes chunked. Either way the server gets every byte,
    /// in order.
    func testAsyncHTTPClientStreamingARequestBody() throws {
        server.route("POST", "/ingest") { request in
            .json(
                string: #"{"length":"\#(request.header("Content-Length") ?? "none")","#
                    + #""chunked":"\#(request.header("Transfer-Encoding") ?? "none")","#
                    + #""body":"\#(String(decoding: request.body, as: UTF8.self))"}"#)
        }
        let client = Connect(baseURL: apiURL)
        func rows() -> AsyncStream<Data> {
            AsyncStream { continuation in
                for row in 1...3 { continuation.yield(Data("row\(row);".utf8)) }
                continuation.finish()
            }
        }
        let known = ConnectRequest(
            method: .post, url: apiURL.appendingPathComponent("ingest"),
            body: .stream(ConnectRequest.OneShotStream(rows(), length: 15)))
        let sized = try JSONDecoder().decode(
            JSONValue.self, from: client.response(for: known, name: "ingest").wait().data)
        #if canImport(FoundationNetworking)
            // libcurl cannot be told a stream's length: FoundationNetworking sends every stream in chunks.
            XCTAssertEqual(sized["chunked"]?.stringValue, "chunked")
        #else
            XCTAssertEqual(sized["length"]?.stringValue, "15")
        #endif
        XCTAssertEqual(sized["body"]?.stringValue, "row1;row2;row3;")
        let unknown = ConnectRequest(
            method: .post, url: apiURL.appendingPathComponent("ingest"),
            body: .stream(ConnectRequest.OneShotStream(rows())))
        let chunked = try JSONDecoder().decode(
            JSONValue.self, from: client.response(for: unknown, name: "ingest").wait().data)
        XCTAssertEqual(chunked["chunked"]?.stringValue, "chunked")
        XCTAssertEqual(chunked["body"]?.stringValue, "row1;row2;row3;")
    }

    /// AsyncHTTPClient's `redirectConfiguration: .follow(max: 2, allowCycles: false)` is `maxRedirects = 2`:
    /// two hops are followed, a third fails the call with `.transport`; `.disallow` is `maxRedirects = 0`
    /// (`testJustAPIsNotFollowingARedirect`).
    func testAsyncHTTPClientARedirectLimit() throws {
        server.route("GET", "/r/:n") { request in
            let n = Int(request.pathParameters["n"] ?? "0") ?? 0
            return n == 0 ? .json(string: #"{"arrived":true}"#) : .redirect(to: "/r/\(n - 1)")
        }
        let client = Connect(baseURL: apiURL)
        var twoHops = RequestOptions()
        twoHops.maxRedirects = 2
        let arrived = try client.request(Route("/r/2"), options: twoHops).decoded(toType: JSONValue.self).wait()
        XCTAssertEqual(arrived["arrived"]?.boolValue, true)
        XCTAssertThrowsError(try client.request(Route("/r/3"), options: twoHops).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .transport, "\(error)")
        }
        XCTAssertEqual(server.requestCount(for: "GET", path: "/r/0"), 1)
    }

    /// AsyncHTTPClient hands every status to the caller; here a status outside 200..<300 fails the call unless
    /// `acceptsEveryStatus` is set, and AsyncHTTPClient's `body.collect(upTo:)` is `maxResponseBytes`.
    func testAsyncHTTPClientEveryStatusAndABodyLimit() throws {
        server.route("GET", "/missing") { _ in .json(string: #"{"error":"nope"}"#, status: 404) }
        server.route("GET", "/big") { _ in .data(Data(count: 4_096)) }
        let client = Connect(baseURL: apiURL)
        XCTAssertThrowsError(try client.response(for: Route("/missing")).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.statusCode, 404, "\(error)")
        }
        let answer = try client.response(for: Route("/missing"), options: RequestOptions(acceptsEveryStatus: true))
            .wait()
        XCTAssertEqual(answer.statusCode, 404)
        XCTAssertEqual(String(decoding: answer.data, as: UTF8.self), #"{"error":"nope"}"#)
        XCTAssertThrowsError(try client.request(Route("/big"), options: RequestOptions(maxResponseBytes: 1_024)).wait())
        { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .responseTooLarge, "\(error)")
        }
    }
}
