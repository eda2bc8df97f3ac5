import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server's base URL and a connector's endpoint make one URL: the base's path prefix is kept whatever the slashes,
/// and an endpoint cannot step out of it.
final class BaseURLJoinTests: XCTestCase {
    /// The URL a client with `base` as its server sends for `endpoint`, or the error it fails with.
    private func sent(base: String, endpoint: String) throws -> Result<String, ConnectError> {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let configuration = ServerConfiguration(baseURL: try XCTUnwrap(URL(string: base)))
        let connect = Connect(transport: transport, retryPolicy: nil, configuration: configuration)
        do {
            _ = try connect.request(Route(endpoint)).wait(timeout: 5)
        } catch {
            return .failure(try XCTUnwrap(error as? ConnectError, "\(error)"))
        }
        XCTAssertEqual(transport.requests.count, 1)
        return .success(transport.requests.first?.url?.absoluteString ?? "")
    }

    func testTheBasePathPrefixIsKeptWithOrWithoutSlashes() throws {
        for base in ["https://h/api/v2", "https://h/api/v2/", "https://h/api/v2//"] {
            for endpoint in ["users", "/users", "//users"] {
                XCTAssertEqual(
                    try sent(base: base, endpoint: endpoint).get(), "https://h/api/v2/users", "\(base) + \(endpoint)")
            }
        }
        XCTAssertEqual(try sent(base: "https://h/api/v2", endpoint: "").get(), "https://h/api/v2")
        XCTAssertEqual(try sent(base: "https://h/api/v2", endpoint: "?q=1").get(), "https://h/api/v2?q=1")
        XCTAssertEqual(try sent(base: "https://h/api/v2?k=1", endpoint: "users").get(), "https://h/api/v2/users?k=1")
        XCTAssertEqual(try sent(base: "https://h/api/v2", endpoint: "a%2Fb").get(), "https://h/api/v2/a%2Fb")
        // A dot inside a segment, or several, is ordinary text.
        XCTAssertEqual(
            try sent(base: "https://h/api/v2", endpoint: "a.json/.well-known/...").get(),
            "https://h/api/v2/a.json/.well-known/...")
    }

    /// `URLSession` resolves `..` before sending (`/api/v2/../admin` goes as `/api/admin`) and other engines send it
    /// as written, for the server to resolve: either way the request leaves the base path it was meant for.
    func testAnEndpointWithADotSegmentIsRefusedNothingSent() throws {
        for endpoint in ["../admin", "/a/../../admin", "./x", "a/./b", "%2E%2E/admin", ".%2e/admin", "a/..", "."] {
            switch try sent(base: "https://h/api/v2", endpoint: endpoint) {
            case .success(let url):
                XCTFail("\(endpoint) was sent as \(url)")
            case .failure(let error):
                XCTAssertEqual(error.kind, .invalidRequest, endpoint)
                XCTAssertTrue(error.message.contains("'.' or '..' segment"), "\(endpoint): \(error.message)")
            }
        }
        // In the query or the fragment, dots are data.
        XCTAssertEqual(
            try sent(base: "https://h/api/v2", endpoint: "x?path=../a").get(), "https://h/api/v2/x?path=../a")
    }

    /// What the wire shows through `URLSession` before the fix: `/api/admin`, the base path's `v2` dropped.
    func testNoDotSegmentEndpointReachesTheServerOutsideTheBasePath() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("*", "*") { _ in .text("ok") }
        let configuration = ServerConfiguration(baseURL: server.baseURL.appendingPathComponent("api/v2"))
        let connect = Connect(transport: URLSessionTransport(), retryPolicy: nil, configuration: configuration)
        XCTAssertThrowsError(try connect.request(Route("../admin")).wait(timeout: 5))
        _ = try connect.request(Route("users")).wait(timeout: 5)
        XCTAssertEqual(server.requests.map(\.target), ["/api/v2/users"])
    }

    /// A base path is joined as written, so a dot-segment in it would be resolved by one engine and not another.
    func testABasePathWithADotSegmentIsRefusedNothingSent() throws {
        let configurations = [
            ServerConfiguration(host: "h", basePath: "/api/../admin"),
            ServerConfiguration(host: "h", basePath: "/api/./v2"),
            ServerConfiguration(host: "h", basePath: "/api/%2e%2E"),
            ServerConfiguration(baseURL: try XCTUnwrap(URL(string: "https://h/api/../admin"))),
        ]
        for configuration in configurations {
            XCTAssertNil(configuration.baseURL, "\(configuration)")
            let transport = FakeTransport.answering(.json(string: "{}"))
            let connect = Connect(transport: transport, retryPolicy: nil, configuration: configuration)
            XCTAssertThrowsError(try connect.request(Route("users")).wait(timeout: 5), "\(configuration)") { error in
                XCTAssertEqual((error as? ConnectError)?.kind, .invalidRequest)
                XCTAssertTrue((error as? ConnectError)?.message.contains("'.' or '..' segment") ?? false, "\(error)")
            }
            XCTAssertTrue(transport.requests.isEmpty)
        }
        // Dots inside a segment are text.
        XCTAssertEqual(
            ServerConfiguration(host: "h", basePath: "/v1.2/.well-known").baseURL?.absoluteString,
            "https://h/v1.2/.well-known")
    }

    /// A connector's relative base URL goes under the server's base path as an endpoint does, with the same rule.
    func testARelativeBaseURLWithADotSegmentIsRefusedNothingSent() throws {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(
            transport: transport, retryPolicy: nil, configuration: ServerConfiguration(host: "h", basePath: "/api/v2"))
        for relative in ["/v1/../admin", "../admin", "/%2E%2E/admin", "./v1"] {
            let base = try XCTUnwrap(URL(string: relative))
            XCTAssertThrowsError(try connect.request(Route("users", baseURL: base)).wait(timeout: 5), relative) {
                error in
                XCTAssertEqual((error as? ConnectError)?.kind, .invalidRequest, "\(error)")
                XCTAssertTrue((error as? ConnectError)?.message.contains("'.' or '..' segment") ?? false, "\(error)")
            }
        }
        XCTAssertEqual(transport.requests.map { $0.url?.absoluteString }, [])
        _ = try connect.request(Route("users", baseURL: try XCTUnwrap(URL(string: "/v1.2/")))).wait(timeout: 5)
        XCTAssertEqual(transport.requests.map { $0.url?.absoluteString }, ["https://h/api/v2/v1.2/users"])
    }

    /// A connector's absolute base URL, or a whole URL it names, with a dot-segment in its path is refused the same
    /// way, by the client and by `asURLRequest()`: dots in its query or fragment, or inside a segment, are data.
    func testAnAbsoluteBaseURLWithADotSegmentIsRefusedNothingSent() throws {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(transport: transport, retryPolicy: nil)
        for base in ["https://h/api/v2/../admin", "https://h/api/%2E%2E/admin", "https://h/./v1", "https://h:8443/a/."]
        {
            let url = try XCTUnwrap(URL(string: base))
            for route in [Route("users", baseURL: url), Route(url: url)] {
                let attempts: [() throws -> Void] = [
                    { _ = try route.asURLRequest() }, { _ = try connect.request(route).wait(timeout: 5) },
                ]
                for attempt in attempts {
                    XCTAssertThrowsError(try attempt(), base) { error in
                        XCTAssertEqual((error as? ConnectError)?.kind, .invalidRequest, "\(error)")
                        XCTAssertTrue(
                            (error as? ConnectError)?.message.contains("'.' or '..' segment") ?? false, "\(error)")
                    }
                }
            }
        }
        XCTAssertEqual(transport.requests.map { $0.url?.absoluteString }, [])
        let base = try XCTUnwrap(URL(string: "https://h/v1.2/..a/b?next=../x#../y"))
        _ = try connect.request(Route("users", baseURL: base)).wait(timeout: 5)
        XCTAssertEqual(
            transport.requests.map { $0.url?.absoluteString }, ["https://h/v1.2/..a/b/users?next=../x#../y"])
    }
}
