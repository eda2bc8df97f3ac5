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

    func testAbsoluteRoutesIgnoreTheConfiguration() throws {
        let transport = FakeTransport.answering(.status(200))
        let api = Connect(host: "api.example.com", transport: transport)
        _ = try api.request(Route("/status", baseURL: URL(string: "https://status.example.org")!)).wait()
        XCTAssertEqual(transport.requests.first?.url?.host, "status.example.org")
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
}
