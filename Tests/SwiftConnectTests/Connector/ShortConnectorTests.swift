import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Connectors and clients as short as Remotli's, Konex's and JustAPIs' (issue 38, item 2).
final class ShortConnectorTests: XCTestCase {
    private struct Todo: Codable, Equatable {
        var id: Int
        var title: String
    }

    /// Two members are enough: GET, no headers, no parameters.
    func testAConnectorNeedsOnlyItsURL() throws {
        struct Health: Connector {
            var baseURL: URL { URL(string: "https://api.test")! }
            var endpoint: String { "/health" }
        }
        let request = try Health().asURLRequest()
        XCTAssertEqual(request.httpMethod, "GET")
        XCTAssertEqual(request.url?.absoluteString, "https://api.test/health")
        XCTAssertNil(request.httpBody)
        XCTAssertEqual(request.allHTTPHeaderFields ?? [:], [:])
    }

    // MARK: Subclass-style requests

    class APIRequest: BasicConnector {
        override var baseURL: URL { URL(string: "https://api.test/v1")! }
        override var headers: [HTTPHeader] { .init(["Accept": "application/json", "X-Client": "tests"]) }
    }

    final class Login: APIRequest {
        let username: String
        init(username: String) {
            self.username = username
        }
        override var endpoint: String { "/login" }
        override var method: HTTPMethod { .post }
        override var parameters: (any ParametersRepresentable)? { ["username": username] as JSONObject }
        override var timeout: TimeInterval { 5 }
    }

    class AuthenticatedRequest: APIRequest {
        override var authorizationToken: AuthorizationToken? { .bearer(token: "t0ken") }
    }

    final class Profile: AuthenticatedRequest {
        override var endpoint: String { "/me" }
        override var headers: [HTTPHeader] { super.headers + [HTTPHeader(name: "X-Client", value: "profile")] }
    }

    /// Every member a subclass overrides is the one the client uses, through the whole hierarchy.
    func testEveryMemberASubclassOverridesIsUsed() throws {
        let transport = FakeTransport.answering(.status(204))
        let connect = Connect(transport: transport)
        _ = value(of: connect.request(Login(username: "ada")))
        _ = value(of: connect.request(Profile()))
        let (login, profile) = (transport.requests[0], transport.requests[1])
        XCTAssertEqual(login.httpMethod, "POST")
        XCTAssertEqual(login.url?.absoluteString, "https://api.test/v1/login")
        XCTAssertEqual(login.httpBody.map { String(decoding: $0, as: UTF8.self) }, #"{"username":"ada"}"#)
        XCTAssertEqual(login.timeoutInterval, 5)
        XCTAssertEqual(login.value(forHTTPHeaderField: "Accept"), "application/json")
        XCTAssertNil(login.value(forHTTPHeaderField: "Authorization"))
        XCTAssertEqual(profile.httpMethod, "GET")
        XCTAssertEqual(profile.url?.absoluteString, "https://api.test/v1/me")
        XCTAssertEqual(profile.value(forHTTPHeaderField: "Authorization"), "Bearer t0ken")
        XCTAssertEqual(profile.value(forHTTPHeaderField: "X-Client"), "profile", "a later header replaces")
    }

    /// Without a base URL of its own, a subclass goes to the client's server.
    func testABasicConnectorWithoutABaseGoesToTheClientsServer() {
        final class Ping: BasicConnector {
            override var endpoint: String { "/ping" }
        }
        let transport = FakeTransport.answering(.status(204))
        _ = value(of: Connect(host: "api.test", transport: transport).request(Ping()))
        XCTAssertEqual(transport.requests.first?.url?.absoluteString, "https://api.test/ping")
    }

    func testHeadersFromADictionaryAreInTheOrderOfTheirNames() {
        let headers = [HTTPHeader](["b": "2", "A": "1", "c": "3"])
        XCTAssertEqual(headers.map(\.name), ["A", "b", "c"])
    }

    // MARK: Full URLs and base URLs

    func testARouteToAFullURLKeepsItsQuery() throws {
        let route = Route(
            url: URL(string: "https://cdn.test:8443/a%20b/c?sig=x%2By")!,
            parameters: Parameter.query(key: "page", value: "2"))
        XCTAssertEqual(try route.asURLRequest().url?.absoluteString, "https://cdn.test:8443/a%20b/c?sig=x%2By&page=2")
        XCTAssertEqual(
            try Route(url: URL(string: "https://cdn.test")!).asURLRequest().url?.absoluteString,
            "https://cdn.test")
    }

    func testAClientFromABaseURLWithAPathPortAndQuery() {
        let transport = FakeTransport.answering(.status(204))
        let gateway = Connect(baseURL: URL(string: "http://gateway.test:5000/v2/?key=k")!, transport: transport)
        _ = value(of: gateway.request("/todos/{id}", parameters: Parameter.path(key: "id", value: "1")))
        _ = value(of: gateway.request(Route("items")))
        XCTAssertEqual(
            transport.requests.map { $0.url?.absoluteString },
            ["http://gateway.test:5000/v2/todos/1?key=k", "http://gateway.test:5000/v2/items?key=k"])
    }

    func testABaseURLThatCannotNameAServerFailsEveryRequestSayingWhy() {
        let cases = [
            ("ftp://files.test/", "is not an http or https URL"),
            ("https://user:pw@api.test/", "user name or password"),
            ("https://api.test/#top", "fragment"),
            ("https:///v1", "no host"),
        ]
        for (url, reason) in cases {
            guard let baseURL = URL(string: url) else {
                XCTFail("\(url) is not a URL")
                continue
            }
            let transport = FakeTransport.answering(.status(204))
            let client = Connect(baseURL: baseURL, transport: transport)
            let error = connectError(of: client.request("/todos"))
            XCTAssertEqual(error?.kind, .invalidRequest, url)
            XCTAssertTrue(error?.message.contains(reason) ?? false, "\(url): \(error?.message ?? "-")")
            XCTAssertFalse(error?.message.contains("pw") ?? true, "the password is not shown")
            XCTAssertTrue(transport.requests.isEmpty, url)
            XCTAssertNil(ServerConfiguration(baseURL: baseURL).baseURL, url)

            // A connector with a full URL, and a built request (the OpenAPI bridge's), fail alike: they went out
            // without the server's default headers and unsigned, where the doc promises every request fails.
            let full = URL(string: "https://api.test/todos")!
            let viaConnector = connectError(of: client.request(Route(url: full)))
            XCTAssertEqual(viaConnector?.kind, .invalidRequest, url)
            XCTAssertTrue(viaConnector?.message.contains(reason) ?? false, "\(url): \(viaConnector?.message ?? "-")")
            let built = connectError(of: client.response(for: ConnectRequest(method: .get, url: full)))
            XCTAssertEqual(built?.kind, .invalidRequest, url)
            XCTAssertTrue(built?.message.contains(reason) ?? false, "\(url): \(built?.message ?? "-")")
            XCTAssertTrue(transport.requests.isEmpty, url)
        }
    }

    // MARK: A client protocol

    private struct CannedClient: ConnectClient {
        func response(for connector: any Connector, debugResponse: Bool, options: RequestOptions)
            -> Future<ConnectResponse>
        {
            Future(result: Result { try .json(#"{"id":1,"title":"Canned"}"#, for: connector.asURLRequest()) })
        }
    }

    private final class TodoStore: Sendable {
        let client: any ConnectClient
        init(client: any ConnectClient) { self.client = client }
        func load(id: Int) -> Future<Todo> {
            client.request(Route(url: URL(string: "https://api.test/todos/\(id)")!)).decoded(toType: Todo.self)
        }
    }

    func testAnAppDependsOnTheClientProtocolAndFakesIt() {
        XCTAssertEqual(value(of: TodoStore(client: CannedClient()).load(id: 1)), Todo(id: 1, title: "Canned"))
        let transport = FakeTransport.answering(.json(string: #"{"id":2,"title":"Real"}"#))
        let real = Connect(host: "api.test", transport: transport)
        XCTAssertEqual(value(of: TodoStore(client: real).load(id: 2)), Todo(id: 2, title: "Real"))
        // The concrete client's own calls stay unambiguous.
        XCTAssertEqual(value(of: real.response(for: Route("/todos/2")))?.statusCode, 200)
        XCTAssertNotNil(value(of: real.request(Route("/todos/2"))))
        let client: any ConnectClient = real
        XCTAssertEqual(value(of: client.response(for: Route("/todos/2")))?.statusCode, 200)
    }

    func testACannedResponseRefusesAStatusThatIsNotHTTP() throws {
        let request = try Route(url: URL(string: "https://api.test")!).asURLRequest()
        XCTAssertThrowsError(try ConnectResponse.json("{}", status: 42, for: request)) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .badResponse)
        }
    }
}
