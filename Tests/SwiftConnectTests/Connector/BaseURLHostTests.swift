import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A base URL whose host is written with `%XX` escapes (`b%C3%BCcher.example`, `localhos%74`) goes to the host it
/// stands for, named the same way on every engine: URLSession decoded it, while the core's engines sent the escapes
/// as the `Host` header.
final class BaseURLHostTests: XCTestCase {
    private func url(base: String, _ endpoint: String = "/x") throws -> String? {
        try Route(endpoint, baseURL: try XCTUnwrap(URL(string: base))).asURLRequest().url?.absoluteString
    }

    func testAnEscapedASCIIHostIsWrittenPlainly() throws {
        XCTAssertEqual(try url(base: "http://localhos%74:8080/v1"), "http://localhost:8080/v1/x")
        XCTAssertEqual(try url(base: "https://amy:pw@%61pi.example/v1/"), "https://amy:pw@api.example/v1/x")
        XCTAssertEqual(try url(base: "https://%41PI.example?k=%41"), "https://API.example/x?k=%41")
    }

    /// A non-ASCII host goes as its IDNA (punycode) form where Foundation makes one, as a ServerConfiguration's
    /// host does; where it cannot, the request fails with a typed error rather than go out with escapes in its host.
    func testAnEscapedNonASCIIHostIsItsPunycodeOrATypedError() throws {
        let base = "https://b%C3%BCcher.example/v1"
        let configured = ServerConfiguration(host: "b\u{fc}cher.example").baseURL?.host
        do {
            let built = try url(base: base)
            XCTAssertEqual(built, "https://xn--bcher-kva.example/v1/x")
            XCTAssertEqual(configured, "xn--bcher-kva.example")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .invalidRequest)
            XCTAssertTrue(error.message.contains("punycode"), error.message)
        }
        #if os(Linux)
            XCTAssertEqual(try url(base: base), "https://xn--bcher-kva.example/v1/x")
        #endif
    }

    /// Escapes that stand for no host name (a delimiter, a space, a control, bytes that are not UTF-8) are refused,
    /// before anything is sent: decoded, `a%2Fb` or `a%40b` would change where the request goes.
    func testEscapesThatMakeNoHostNameAreRefused() {
        let bases = [
            "https://a%2Fb.example", "https://a%40b.example", "https://a%3A1.example", "https://a%20b.example",
            "https://a%00b.example", "https://a%0D%0Ab.example", "https://%FF.example", "https://a%25b.example",
            "https://a%EF%BC%8Fb.example", "https://amy:s3cretPassw0rd@a%2Fb.example",
        ]
        for base in bases {
            guard let baseURL = URL(string: base) else { continue }
            XCTAssertThrowsError(try Route("/x", baseURL: baseURL).asURLRequest(), base) { error in
                let error = error as? ConnectError
                XCTAssertEqual(error?.kind, .invalidRequest, base)
                XCTAssertTrue(error?.message.contains("host") ?? false, "\(String(describing: error))")
                XCTAssertFalse("\(String(describing: error))".contains("s3cretPassw0rd"))
            }
        }
    }

    /// A bracketed IPv6 address keeps its zone's `%25` as it is.
    func testAnIPv6ZoneIsLeftAsItIs() throws {
        XCTAssertEqual(try url(base: "http://[fe80::1%25eth0]:8080/v1"), "http://[fe80::1%25eth0]:8080/v1/x")
    }

    /// A connector's own port replaces the port of a bracketed IPv6 base URL, a zone's included (never sent to the
    /// base URL's port); a port out of range fails with a typed error.
    func testAConnectorPortReplacesAnIPv6BaseURLsPort() throws {
        struct Ported: Connector {
            var baseURL: URL
            var endpoint = "/x"
            var method: HTTPMethod = .get
            var headers: [HTTPHeader] = []
            var parameters: (any ParametersRepresentable)?
            var port: Int?
        }
        let cases = [
            ("http://[::1]:8080/v1", "http://[::1]:9090/v1/x"), ("http://[::1]/v1", "http://[::1]:9090/v1/x"),
            ("http://[fe80::1%25eth0]:8080/v1", "http://[fe80::1%25eth0]:9090/v1/x"),
        ]
        for (base, expected) in cases {
            let connector = Ported(baseURL: try XCTUnwrap(URL(string: base)), port: 9090)
            XCTAssertEqual(try connector.asURLRequest().url?.absoluteString, expected, base)
        }
        for port in [0, -1, 65_536] {
            let connector = Ported(baseURL: try XCTUnwrap(URL(string: "http://[::1]:8080")), port: port)
            XCTAssertThrowsError(try connector.asURLRequest(), "\(port)") { error in
                XCTAssertEqual((error as? ConnectError)?.kind, .invalidRequest)
            }
        }
    }

    /// Through both engines to a server on 127.0.0.1: the `Host` it receives is the host's name, not its escapes.
    func testEveryEngineSendsTheDecodedHost() throws {
        let server = try LocalServer.started()
        addTeardownBlock { server.stop() }
        server.route("GET", "*") { request in .text(request.header("Host") ?? "none") }
        let transports: [(String, any Transport)] = [
            ("URLSession", TransportUnderTest.make()), ("SocketEngine", SocketEngine()),
        ]
        for (name, transport) in transports {
            let connect = Connect(transport: transport, retryPolicy: nil)
            let base = try XCTUnwrap(URL(string: "http://localhos%74:\(server.port)"))
            let body = try connect.request(Route("/x", baseURL: base, timeout: 10)).wait(timeout: 20)
            XCTAssertEqual(String(decoding: body, as: UTF8.self), "localhost:\(server.port)", name)
        }
    }
}
