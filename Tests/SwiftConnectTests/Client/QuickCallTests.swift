import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// Host configuration, routes and one-call requests.
final class QuickCallTests: XCTestCase {
    func testAClientFromAHostDefaultsToHTTPS() throws {
        let transport = FakeTransport.answering(.json(string: #"{"ok":true}"#))
        let api = Connect(host: "api.example.com", transport: transport)
        _ = try api.request("/todos/{id}", parameters: Parameter.path(key: "id", value: "1")).wait()
        XCTAssertEqual(transport.requests.first?.url?.absoluteString, "https://api.example.com/todos/1")
        XCTAssertEqual(transport.requests.first?.httpMethod, "GET")
    }

    func testConfigurationCarriesSchemePortBasePathHeadersAndQueryItems() throws {
        let transport = FakeTransport.answering(.status(204))
        let configuration = ServerConfiguration(
            scheme: .http,
            host: "localhost",
            port: 8080,
            basePath: "/v2",
            defaultHeaders: [.userAgent("Tests/1.0"), HTTPHeader(name: "X-Client", value: "a")],
            defaultQueryItems: [URLQueryItem(name: "api key", value: "a&b")]
        )
        let api = Connect(transport: transport, configuration: configuration)
        let route = Route(
            "/items",
            method: .post,
            parameters: CompositeParameters(.query(key: "page", value: "2"), .jsonObject(value: ["name": "x"])),
            headers: [HTTPHeader(name: "X-Client", value: "route")]
        )
        _ = try api.request(route).wait()
        let sent = try XCTUnwrap(transport.requests.first)
        XCTAssertEqual(sent.url?.absoluteString, "http://localhost:8080/v2/items?page=2&api%20key=a%26b")
        XCTAssertEqual(sent.httpMethod, "POST")
        XCTAssertEqual(sent.value(forHTTPHeaderField: "User-Agent"), "Tests/1.0")
        XCTAssertEqual(sent.value(forHTTPHeaderField: "X-Client"), "route", "the request's own header wins")
        XCTAssertEqual(sent.value(forHTTPHeaderField: "Content-Type"), "application/json")
    }

    /// A route or connector without a server of its own has no URL until a client gives it one: building its
    /// request alone fails with the error a client without a server gives, instead of a `file:///…` request.
    func testARelativeConnectorBuiltAloneHasNoServer() throws {
        struct Relative: Connector {
            var baseURL: URL { URL(fileURLWithPath: "/") }
            var endpoint: String { "/todos" }
            var method: HTTPMethod { .get }
            var headers: [HTTPHeader] { [] }
            var parameters: (any ParametersRepresentable)? { nil }
        }
        for build in [{ try Route("/todos").asURLRequest() }, { try Relative().asURLRequest() }] {
            XCTAssertThrowsError(try build()) { error in
                let error = error as? ConnectError
                XCTAssertEqual(error?.kind, .invalidRequest)
                XCTAssertEqual(error?.invalidRequestReason, .invalidURL("/todos"))
                XCTAssertTrue(error?.message.contains("has no server") ?? false, error?.message ?? "")
            }
        }
        // The same route through a client with a server is fine.
        let transport = FakeTransport.answering(.status(200))
        _ = try Connect(host: "api.example.com", transport: transport).request(Route("/todos")).wait()
        XCTAssertEqual(transport.requests.first?.url?.absoluteString, "https://api.example.com/todos")
    }

    func testAbsoluteRoutesIgnoreTheConfiguration() throws {
        let transport = FakeTransport.answering(.status(200))
        let api = Connect(host: "api.example.com", transport: transport)
        _ = try api.request(Route("/status", baseURL: URL(string: "https://status.example.org")!)).wait()
        XCTAssertEqual(transport.requests.first?.url?.host, "status.example.org")
    }

    /// ServerConfiguration is "what every request to it carries": its default headers and query items (an API
    /// key, typically) go to its own server, never to another host an absolute connector names.
    func testTheServersDefaultHeadersAndQueryItemsStayOnTheServer() throws {
        let transport = FakeTransport.answering(.status(200))
        let configuration = ServerConfiguration(
            host: "api.example.com",
            defaultHeaders: [HTTPHeader(name: "X-API-Key", value: "s3cret")],
            defaultQueryItems: [URLQueryItem(name: "api_key", value: "s3cret")]
        )
        let api = Connect(transport: transport, retryPolicy: nil, configuration: configuration)
        let elsewhere = [
            "https://status.example.org", "http://api.example.com", "https://api.example.com:8443",
            "https://api.example.com.evil.example",
        ]
        for base in elsewhere {
            _ = try api.request(Route("/status", baseURL: URL(string: base)!)).wait()
        }
        _ = try api.request(Route("/me", baseURL: URL(string: "https://API.example.com:443/v1")!)).wait()
        _ = try api.request(Route("/me")).wait()

        let requests = transport.requests
        XCTAssertEqual(requests.count, elsewhere.count + 2)
        for (base, request) in zip(elsewhere, requests) {
            XCTAssertEqual(request.url?.absoluteString, base + "/status")
            XCTAssertNil(request.value(forHTTPHeaderField: "X-API-Key"), base)
            XCTAssertEqual(request.value(forHTTPHeaderField: "Accept"), "application/json", "the client's own defaults")
        }
        // The server itself, named by an absolute connector or reached through a relative one, gets them.
        XCTAssertEqual(
            requests[elsewhere.count].url?.absoluteString, "https://API.example.com:443/v1/me?api_key=s3cret")
        XCTAssertEqual(requests[elsewhere.count].value(forHTTPHeaderField: "X-API-Key"), "s3cret")
        XCTAssertEqual(requests[elsewhere.count + 1].url?.absoluteString, "https://api.example.com/me?api_key=s3cret")
        XCTAssertEqual(requests[elsewhere.count + 1].value(forHTTPHeaderField: "X-API-Key"), "s3cret")
    }

    /// Default query items fill in what a request lacks, as default headers do (and as JustAPIs' default fields
    /// did): a request's own item of the same name wins, instead of going out twice with two values.
    func testADefaultQueryItemDoesNotDuplicateOneTheRequestSets() throws {
        let transport = FakeTransport.answering(.status(200))
        let configuration = ServerConfiguration(
            host: "api.example.com",
            defaultQueryItems: [URLQueryItem(name: "lang", value: "en"), URLQueryItem(name: "api key", value: "k")]
        )
        let api = Connect(transport: transport, retryPolicy: nil, configuration: configuration)
        _ = try api.request(Route("/a", parameters: Parameter.query(key: "lang", value: "fr"))).wait()
        _ = try api.request(Route("/b?lang=de")).wait()
        _ = try api.request(Route("/c", parameters: Parameter.query(key: "api key", value: "mine"))).wait()
        _ = try api.request(Route("/d")).wait()

        XCTAssertEqual(
            transport.requests.map { $0.url?.absoluteString },
            [
                "https://api.example.com/a?lang=fr&api%20key=k",
                "https://api.example.com/b?lang=de&api%20key=k",
                "https://api.example.com/c?api%20key=mine&lang=en",
                "https://api.example.com/d?lang=en&api%20key=k",
            ])
    }

    /// A route may name its own port, as Remotli's `Route(port:)` does: on the client's server (relative) or on
    /// its own base URL (absolute), replacing the port either names.
    func testARouteWithAPortGoesToThatPort() throws {
        let transport = FakeTransport.answering(.status(200))
        let api = Connect(
            transport: transport, retryPolicy: nil,
            configuration: ServerConfiguration(host: "api.example.com", port: 8443, basePath: "/v2"))
        _ = try api.request(Route("/metrics", port: 9090)).wait()
        _ = try api.request(Route("/items/{id}", port: 8080, parameters: Parameter.path(key: "id", value: "1"))).wait()
        _ = try api.request(Route("/s", baseURL: URL(string: "http://user@[::1]:80/base?k=1")!, port: 8081)).wait()
        _ = try api.request(Route("/s", baseURL: URL(string: "https://status.example.org")!, port: 444)).wait()
        _ = try api.request(Route("/same", port: 8443)).wait()
        XCTAssertEqual(
            transport.requests.map { $0.url?.absoluteString },
            [
                "https://api.example.com:9090/v2/metrics", "https://api.example.com:8080/v2/items/1",
                "http://user@[::1]:8081/base/s?k=1", "https://status.example.org:444/s",
                "https://api.example.com:8443/v2/same",
            ])
        let direct = try Route("/x", baseURL: URL(string: "https://a.example.com:1")!, port: 2).asURLRequest()
        XCTAssertEqual(direct.url?.absoluteString, "https://a.example.com:2/x")
        XCTAssertNil(Route("/x").port)
    }

    /// Any connector may name a port, as a route does: nothing about it is special to `Route`.
    func testAnyConnectorMayNameItsPort() throws {
        struct Metrics: Connector {
            var baseURL: URL
            var endpoint: String { "/metrics" }
            var method: HTTPMethod { .get }
            var headers: [HTTPHeader] { [] }
            var parameters: (any ParametersRepresentable)? { nil }
            var port: Int?
        }
        let transport = FakeTransport.answering(.status(200))
        let configuration = ServerConfiguration(
            host: "api.example.com", defaultHeaders: [HTTPHeader(name: "X-API-Key", value: "s3cret")])
        let api = Connect(transport: transport, retryPolicy: nil, configuration: configuration)

        _ = try api.request(Metrics(baseURL: URL(string: "/")!, port: 9090)).wait()
        _ = try api.request(Metrics(baseURL: URL(string: "https://status.example.org")!, port: 444)).wait()
        _ = try api.request(Metrics(baseURL: URL(string: "/")!, port: nil)).wait()

        XCTAssertEqual(
            transport.requests.map { $0.url?.absoluteString },
            [
                "https://api.example.com:9090/metrics", "https://status.example.org:444/metrics",
                "https://api.example.com/metrics",
            ])
        XCTAssertNil(transport.requests[0].value(forHTTPHeaderField: "X-API-Key"), "another port, another origin")
        XCTAssertEqual(transport.requests[2].value(forHTTPHeaderField: "X-API-Key"), "s3cret")
        let direct = try Metrics(baseURL: URL(string: "https://a.example.com:1")!, port: 2).asURLRequest()
        XCTAssertEqual(direct.url?.absoluteString, "https://a.example.com:2/metrics")
        let refused = connectError(of: api.request(Metrics(baseURL: URL(string: "/")!, port: 70_000)))
        XCTAssertEqual(refused?.kind, .invalidRequest)
        XCTAssertEqual(transport.requests.count, 3, "nothing sent to a port that cannot be")
    }

    /// Another port is another origin: the server's default headers and query items (an API key) do not follow
    /// a route to it, as they do not follow an absolute connector to another port.
    func testTheServersDefaultsDoNotFollowARouteToAnotherPort() throws {
        let transport = FakeTransport.answering(.status(200))
        let configuration = ServerConfiguration(
            host: "api.example.com",
            defaultHeaders: [HTTPHeader(name: "X-API-Key", value: "s3cret")],
            defaultQueryItems: [URLQueryItem(name: "api_key", value: "s3cret")])
        let api = Connect(transport: transport, retryPolicy: nil, configuration: configuration)
        _ = try api.request(Route("/other", port: 8443)).wait()
        _ = try api.request(Route("/same", port: 443)).wait()
        _ = try api.request(Route("/abs", baseURL: URL(string: "https://api.example.com")!, port: 9443)).wait()
        let requests = transport.requests
        XCTAssertEqual(requests[0].url?.absoluteString, "https://api.example.com:8443/other")
        XCTAssertNil(requests[0].value(forHTTPHeaderField: "X-API-Key"))
        XCTAssertEqual(requests[1].url?.absoluteString, "https://api.example.com:443/same?api_key=s3cret")
        XCTAssertEqual(requests[1].value(forHTTPHeaderField: "X-API-Key"), "s3cret")
        XCTAssertEqual(requests[2].url?.absoluteString, "https://api.example.com:9443/abs")
        XCTAssertNil(requests[2].value(forHTTPHeaderField: "X-API-Key"))
    }

    func testARoutePortOutsideTheRangeIsATypedError() throws {
        let transport = FakeTransport.answering(.status(200))
        let api = Connect(
            transport: transport, retryPolicy: nil, configuration: ServerConfiguration(host: "api.example.com"))
        let absolute = URL(string: "https://user:pw@other.example.com")!
        for route in [
            Route("/x", port: 0), Route("/x", port: -1), Route("/x", port: 65_536),
            Route("/x", baseURL: absolute, port: -8080), Route("/x", baseURL: absolute, port: 70_000),
        ] {
            let port = route.port ?? 0
            XCTAssertThrowsError(try api.request(route).wait(timeout: 5)) { error in
                let error = error as? ConnectError
                XCTAssertEqual(error?.kind, .invalidRequest)
                XCTAssertEqual(error?.message.contains("port \(port) is not in 1...65535"), true, error?.message ?? "")
                XCTAssertEqual(error?.description.contains("pw"), false)
            }
        }
        XCTAssertThrowsError(try Route("/x", baseURL: absolute, port: 0).asURLRequest())
        XCTAssertTrue(transport.requests.isEmpty)
    }

    func testRelativeCallsWithoutAConfigurationFailWithATypedError() {
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(transport: transport)
        XCTAssertThrowsError(try connect.request("/todos").wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .invalidRequest)
        }
        XCTAssertThrowsError(try connect.request(Route("/todos")).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .invalidRequest)
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }

    func testAnInvalidHostIsATypedError() {
        let transport = FakeTransport.answering(.status(200))
        let api = Connect(host: "bad host/with?stuff", transport: transport)
        XCTAssertThrowsError(try api.request("/x").wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .invalidRequest)
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }

    func testRouteCarriesAuthorization() throws {
        let transport = FakeTransport.answering(.status(200))
        let api = Connect(host: "api.example.com", transport: transport)
        _ = try api.request(Route("/me", authorizationToken: .bearer(token: "t0k"))).wait()
        XCTAssertEqual(transport.requests.first?.value(forHTTPHeaderField: "Authorization"), "Bearer t0k")
    }

    func testDefaultHeaderWithCRLFIsRefused() {
        let transport = FakeTransport.answering(.status(200))
        let api = Connect(
            transport: transport,
            configuration: ServerConfiguration(host: "a.com", defaultHeaders: [HTTPHeader(name: "X", value: "a\r\nb")]))
        XCTAssertThrowsError(try api.request("/x").wait()) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .invalidRequest)
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }

    /// A relative path given to a client without a `ServerConfiguration` is refused, its message quoting the path: its
    /// secrets hidden, unless the client was set not to redact. They showed hidden whatever the setting.
    func testARelativePathsMessageFollowsTheRedactionSetting() throws {
        for redacting in [true, false] {
            let transport = FakeTransport.answering(.status(200))
            let connect = Connect(
                transport: transport, retryPolicy: nil, settings: Connect.Settings(redactsSecrets: redacting))

            let error = try XCTUnwrap(connectError(of: connect.request("/me?access_token=tok-QUICK-123456")))

            XCTAssertEqual(error.kind, .invalidRequest)
            XCTAssertTrue(error.message.contains("/me?access_token="), error.message)
            for text in [error.message, error.description, error.debugDescription] {
                XCTAssertEqual(text.contains("tok-QUICK-123456"), !redacting, "redacting \(redacting): \(text)")
            }
            XCTAssertTrue(transport.requests.isEmpty)
        }
    }
}
