import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A URL whose host is written with `%XX` escapes (`localhos%74`, `127.0.0.%31`) that reaches the transport without a
/// connector's base URL (a built `ConnectRequest`, a middleware's rewrite, a redirect's `Location`) goes to the host
/// it stands for, named the same way on every engine: URLSession decoded it, while the core's engines sent its
/// escapes as the `Host` header.
final class EscapedHostTests: XCTestCase {
    private func transports() -> [(String, any Transport)] {
        [("URLSession", TransportUnderTest.make()), ("SocketEngine", SocketEngine())]
    }

    /// A server on 127.0.0.1 answering every request with the `Host` and `Authorization` it received.
    private func echoServer() throws -> LocalServer {
        let server = try LocalServer.started()
        addTeardownBlock { server.stop() }
        server.route("*", "*") { request in
            .text("\(request.header("Host") ?? "none") \(request.header("Authorization") ?? "none")")
        }
        return server
    }

    private func text(_ response: ConnectResponse) -> String { String(decoding: response.data, as: UTF8.self) }

    /// A GET (URLSession's plain path) and a POST with a body (the core's exchange, on every engine).
    func testABuiltRequestGoesToTheHostItsEscapesName() throws {
        let server = try echoServer()
        let url = try XCTUnwrap(URL(string: "http://localhos%74:\(server.port)/x"))
        for (name, transport) in transports() {
            let connect = Connect(transport: transport, retryPolicy: nil)
            let get = ConnectRequest(method: .get, url: url, timeoutInterval: 10)
            XCTAssertEqual(
                text(try connect.response(for: get).wait(timeout: 20)), "localhost:\(server.port) none", name)
            let post = ConnectRequest(method: .post, url: url, body: .bytes(Data("a".utf8)), timeoutInterval: 10)
            XCTAssertEqual(
                text(try connect.response(for: post).wait(timeout: 20)), "localhost:\(server.port) none", name)
        }
    }

    func testAMiddlewaresEscapedHostIsSentDecoded() throws {
        let server = try echoServer()
        let port = server.port
        let rewrite = AnyMiddleware.adapter { request in
            request.url = URL(string: "http://127.0.0.%31:\(port)/rewritten")!
        }
        for (name, transport) in transports() {
            let connect = Connect(transport: transport, middlewares: [rewrite], retryPolicy: nil)
            let body = try connect.request(Route("/x", baseURL: server.baseURL, timeout: 10)).wait(timeout: 20)
            XCTAssertEqual(String(decoding: body, as: UTF8.self), "127.0.0.1:\(port) none", name)
        }
    }

    /// A `Location` naming the same host with escapes is the same origin: the credentials follow it, and the
    /// `Host` sent is the name. An escaped name for another host (`127.0.0.%31` is not `localhost`) is another
    /// origin: they stay behind.
    func testARedirectsEscapedHostIsComparedAndSentDecoded() throws {
        let server = try echoServer()
        let port = server.port
        server.route("GET", "/same") { _ in .redirect(to: "http://localhos%74:\(port)/landing") }
        server.route("GET", "/other") { _ in .redirect(to: "http://127.0.0.%31:\(port)/landing") }
        server.route("GET", "/relative") { _ in .redirect(to: "/landing") }
        let cases: [(start: String, expected: String)] = [
            ("http://localhost:\(port)/same", "localhost:\(port) Bearer t0k"),
            ("http://localhost:\(port)/other", "127.0.0.1:\(port) none"),
            ("http://localhos%74:\(port)/relative", "localhost:\(port) Bearer t0k"),
        ]
        for (name, transport) in transports() {
            let connect = Connect(transport: transport, retryPolicy: nil)
            for (start, expected) in cases {
                let request = ConnectRequest(
                    url: try XCTUnwrap(URL(string: start)), headerFields: [.authorization: "Bearer t0k"],
                    timeoutInterval: 10)
                XCTAssertEqual(text(try connect.response(for: request).wait(timeout: 20)), expected, "\(name) \(start)")
            }
        }
    }

    /// Escapes that make no host name (`localhost/` decoded) are refused before anything is sent, with the error a
    /// base URL's get; a password in the URL is not shown.
    func testEscapesThatMakeNoHostNameAreATypedError() throws {
        let server = try echoServer()
        for (name, transport) in transports() {
            let connect = Connect(transport: transport, retryPolicy: nil)
            for method in [HTTPMethod.get, .post] {
                let url = try XCTUnwrap(URL(string: "http://amy:s3cretPassw0rd@localhos%74%2F:\(server.port)/x"))
                let body: ConnectRequest.Body = method == .post ? .bytes(Data("a".utf8)) : .none
                let request = ConnectRequest(method: method, url: url, body: body, timeoutInterval: 10)
                XCTAssertThrowsError(try connect.response(for: request).wait(timeout: 20), name) { error in
                    let error = error as? ConnectError
                    XCTAssertEqual(error?.kind, .invalidRequest, "\(name) \(String(describing: error))")
                    XCTAssertTrue(error?.message.contains("make no host name") ?? false, "\(String(describing: error))")
                    XCTAssertFalse(String(reflecting: error).contains("s3cretPassw0rd"))
                }
            }
        }
        XCTAssertTrue(server.requests.isEmpty)
    }
}
