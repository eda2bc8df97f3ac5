import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `SocketEngine`, a third engine of a few hundred lines of POSIX sockets, against the transport contract: it
/// moves the bytes of one hop and nothing else, so every rule it passes is the core's exchange's, applied through
/// the one-hop seam (`HTTPEngine`).
final class SocketEngineConformanceTests: XCTestCase {
    /// What `SocketEngine` does not do, and why: nothing. It decodes no `Content-Encoding`, and the core decodes
    /// gzip and deflate for it (`ContentDecoding.swift`), the size limit counting the decoded bytes.
    static let knownDefects: [String: String] = [:]

    func testSocketEngineKeepsTheContractThroughTheCore() {
        let outcomes = TransportConformance.run(knownDefects: Self.knownDefects) { SocketEngine() }

        XCTAssertEqual(outcomes.count, TransportConformance.checks.count)
        for outcome in outcomes {
            print(outcome)
            XCTAssertTrue(outcome.isAsExpected, outcome.description)
        }
    }

    /// A started server, stopped when the test ends.
    private func startedServer() throws -> LocalServer {
        let server = try LocalServer.started()
        addTeardownBlock { server.stop() }
        return server
    }

    /// The engine's 64 KiB limit on a line of the head holds whatever reads the line came in: a 70 KB field is
    /// refused every time and a 60 KB one read every time. Before, a line over the limit passed when the reads happened
    /// to end past its line break, and a test with a 100 KB field failed once in a while under a sanitizer.
    func testALineOverTheLimitIsRefusedWhateverTheReads() throws {
        let server = try startedServer()
        for (path, length) in [("/long", 70_000), ("/fits", 60_000)] {
            let head =
                "HTTP/1.1 200 OK\r\nX-Long: \(String(repeating: "x", count: length))\r\n"
                + "Content-Length: 2\r\nConnection: close\r\n\r\nok"
            server.route("GET", path) { _ in LocalServer.Response().withFault(.raw(Data(head.utf8))) }
        }
        let connect = Connect(transport: SocketEngine(), retryPolicy: nil)

        for _ in 0..<5 {
            let longRoute = Route("/long", baseURL: server.baseURL, timeout: 10)
            let long = try connect.request(longRoute).waitForResult(timeout: 20)
            guard case .failure(let error as ConnectError) = long else { return XCTFail("\(long)") }
            XCTAssertTrue(error.message.contains("a line of the response is over 64 KiB"), "\(error)")
            let fits = try connect.request(Route("/fits", baseURL: server.baseURL, timeout: 10)).wait(timeout: 20)
            XCTAssertEqual(String(decoding: fits, as: UTF8.self), "ok")
        }
    }

    /// The 64 KiB limit counts a line's content, not its line break: a line of exactly 65,536 bytes is read whether
    /// it ends with CRLF or a bare LF, and one of 65,537 is refused either way. Before, the CR of a CRLF counted, so
    /// the same line passed with a bare LF and failed with CRLF.
    func testTheLineLimitCountsTheContentWhateverTheLineBreak() throws {
        let server = try startedServer()
        let name = "X-Long: "
        for (ending, label) in [("\r\n", "crlf"), ("\n", "lf")] {
            for (suffix, length) in [("fits", 65_536), ("over", 65_537)] {
                let line = name + String(repeating: "x", count: length - name.utf8.count)
                XCTAssertEqual(line.utf8.count, length)
                let head =
                    ["HTTP/1.1 200 OK", line, "Content-Length: 2", "Connection: close", ""].joined(separator: ending)
                    + ending + "ok"
                server.route("GET", "/\(label)-\(suffix)") { _ in
                    LocalServer.Response().withFault(.raw(Data(head.utf8)))
                }
            }
        }
        let connect = Connect(transport: SocketEngine(), retryPolicy: nil)

        for label in ["crlf", "lf"] {
            let fits = connect.request(Route("/\(label)-fits", baseURL: server.baseURL, timeout: 10))
            XCTAssertEqual(try String(decoding: fits.wait(timeout: 20), as: UTF8.self), "ok", label)
            let over = try connect.request(Route("/\(label)-over", baseURL: server.baseURL, timeout: 10))
                .waitForResult(timeout: 20)
            guard case .failure(let error as ConnectError) = over else { return XCTFail("\(label): \(over)") }
            XCTAssertTrue(error.message.contains("a line of the response is over 64 KiB"), "\(label): \(error)")
        }
    }

    /// A redirect to another origin leaves `Authorization` behind, and one to the same origin keeps it: the
    /// engine sends each hop's head as the core made it.
    func testARedirectToAnotherOriginDropsTheCredential() throws {
        let origin = try startedServer()
        let other = try startedServer()
        other.route("GET", "/landing") { request in .text(request.header("Authorization") ?? "none") }
        origin.route("GET", "/landing") { request in .text(request.header("Authorization") ?? "none") }
        origin.route("GET", "/away") { _ in .redirect(to: "http://127.0.0.1:\(other.port)/landing") }
        origin.route("GET", "/home") { _ in .redirect(to: "/landing") }
        let connect = Connect(transport: SocketEngine(), retryPolicy: nil)
        let headers = [HTTPHeader(name: "Authorization", value: "Bearer secret")]

        let away = try connect.request(Route("/away", baseURL: origin.baseURL, headers: headers, timeout: 10))
            .wait(timeout: 20)
        let home = try connect.request(Route("/home", baseURL: origin.baseURL, headers: headers, timeout: 10))
            .wait(timeout: 20)

        XCTAssertEqual(String(decoding: away, as: UTF8.self), "none")
        XCTAssertEqual(String(decoding: home, as: UTF8.self), "Bearer secret")
        XCTAssertEqual(origin.requests.map(\.path), ["/away", "/home", "/landing"])
        XCTAssertEqual(origin.requests.first?.header("Authorization"), "Bearer secret")
        XCTAssertEqual(other.requests.map(\.path), ["/landing"])
    }

    /// A server that never answers: the request's timeout ends the exchange as `.timedOut`, and the core's
    /// cancellation closes the engine's connection.
    func testTheTimeoutEndsASilentServersExchange() throws {
        let server = try startedServer()
        server.route("GET", "/silent") { _ in LocalServer.Response.text("late").delayed(by: 60) }
        let connect = Connect(transport: SocketEngine(), retryPolicy: nil)
        let started = Date()

        let result = try connect.request(Route("/silent", baseURL: server.baseURL, timeout: 0.3))
            .waitForResult(timeout: 20)

        guard case .failure(let error as ConnectError) = result else {
            return XCTFail("expected a ConnectError, got \(result)")
        }
        XCTAssertEqual(error.kind, .timedOut, "\(error)")
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "the timeout ended the exchange, not the server")
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the engine's connection was closed")
    }

    /// A size limit refuses a body over it, declared or not, as `.responseTooLarge`; the undeclared one is not read
    /// to its end.
    func testTheSizeLimitRefusesALargeBody() throws {
        let server = try startedServer()
        let pieces = Protected(0)
        server.route("GET", "/declared") { _ in .generatedBytes(count: 4 << 20, seed: 1) }
        server.route("GET", "/endless") { _ in
            .stream(contentLength: nil) { write in
                for _ in 0..<4_096 {  // 64 MiB
                    guard write(Data(count: 16_384)) else { return }
                    pieces.withLock { $0 += 1 }
                }
            }
        }
        let connect = Connect(transport: SocketEngine(), retryPolicy: nil)
        let limited = RequestOptions(maxResponseBytes: 1 << 20)

        for path in ["/declared", "/endless"] {
            let result = try connect.request(Route(path, baseURL: server.baseURL, timeout: 30, options: limited))
                .waitForResult(timeout: 60)
            guard case .failure(let error as ConnectError) = result else {
                return XCTFail("\(path): expected a ConnectError, got \(result)")
            }
            XCTAssertEqual(error.kind, .responseTooLarge, "\(path): \(error)")
        }
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the engine's connections were closed")
        XCTAssertLessThan(pieces.snapshot, 4_096, "the whole 64 MiB was read: reading did not stop")
    }

    /// The engine's own failures reach the caller typed: a refused connection is `.cannotConnect`, and a URL it does
    /// not serve (https) is refused before anything is sent.
    func testTheEnginesOwnFailuresAreTyped() throws {
        let server = try LocalServer.started()
        let closedPort = server.port
        server.stop()
        let connect = Connect(transport: SocketEngine(), retryPolicy: nil)

        for (url, kind) in [
            ("http://127.0.0.1:\(closedPort)/", ConnectError.Kind.cannotConnect),
            ("https://127.0.0.1:\(closedPort)/", .invalidRequest),
        ] {
            let result = try connect.request(Route("/", baseURL: URL(string: url)!, timeout: 10))
                .waitForResult(timeout: 20)
            guard case .failure(let error as ConnectError) = result else {
                return XCTFail("\(url): expected a ConnectError, got \(result)")
            }
            XCTAssertEqual(error.kind, kind, "\(url): \(error)")
        }
    }
}
