import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A `.cannotConnect` failure does not prove that nothing of the call reached a server, so the retry policy must not
/// replay a request that is not safe to send twice after one: these calls end with `.cannotConnect` although the
/// server received their `POST`.
///
/// - After a redirect, the hop that cannot connect is not the first: the `POST` was answered (a 303 says it was
///   processed) before the next hop's connection was refused.
/// - libcurl sends a request that got no byte of an answer on a reused connection again on a fresh one, by itself
///   ("Connection died, retrying a fresh connect"), a `POST` without a body included: when that connection is
///   refused, URLSession reports `cannotConnectToHost`, although the server read the request on the first one.
final class RefusedAfterSendingTests: IntegrationTestCase {
    private struct Endpoint: Connector {
        var baseURL: URL
        var endpoint: String
        var method: HTTPMethod = .post
        var timeout: TimeInterval { 20 }
    }

    private var clock: ImmediateRetryClock!
    private var connect: Connect!

    override func setUp() {
        clock = ImmediateRetryClock()
        connect = Connect(
            transport: TransportUnderTest.make(), retryPolicy: RetryPolicy(jitter: RetryPolicy.noJitter, clock: clock))
    }

    override func tearDown() {
        connect.cancelAllRequests()
        connect = nil
        clock = nil
    }

    /// A `POST` answered with a redirect to a port where nothing listens fails with `.cannotConnect`, once, unretried.
    func testAPOSTRedirectedToARefusedPortIsNotRetried() throws {
        let refused = try RefusedPort()
        let server = try LocalServer.started()
        defer { server.stop() }
        for status in [303, 307] {
            server.route("POST", "/orders/\(status)") { _ in
                .redirect(to: "http://127.0.0.1:\(refused.port)/next", status: status)
            }
            // When
            let result = try connect.request(Endpoint(baseURL: server.baseURL, endpoint: "/orders/\(status)"))
                .waitForResult(timeout: 30)
            // Then: the server got the POST once, and the policy did not try again
            guard case .failure(let error as ConnectError) = result else { return XCTFail("\(status): got \(result)") }
            XCTAssertEqual(error.kind, .cannotConnect, "\(status): \(error)")
            XCTAssertEqual(error.attempts, 1, "\(status)")
            XCTAssertEqual(server.requestCount(for: "POST", path: "/orders/\(status)"), 1, "\(status)")
        }
        XCTAssertEqual(clock.delays, [])
    }

    /// A `POST` without a body on a kept-alive connection, which the server reads and then closes, having stopped
    /// listening: the call fails, and the policy does not send it again, whatever kind the engine reports.
    func testABodilessPOSTReadByAServerThatThenGoesAwayIsNotRetried() throws {
        // Given: a server that answers one GET on a kept-alive connection, reads the POST after it, stops listening
        // (its port stays bound: nothing else can take it) and closes the connection without answering
        let server = try OneConnectionServer()
        let baseURL = try XCTUnwrap(URL(string: "http://127.0.0.1:\(server.port)"))
        let warm = connect.request(Endpoint(baseURL: baseURL, endpoint: "/warm", method: .get))
        XCTAssertEqual(String(decoding: try warm.wait(timeout: 20), as: UTF8.self), "ok")
        // When
        let result = try connect.request(Endpoint(baseURL: baseURL, endpoint: "/orders")).waitForResult(timeout: 30)
        // Then
        guard case .failure(let error as ConnectError) = result else { return XCTFail("got \(result)") }
        XCTAssertEqual(server.requestLines(), ["GET /warm HTTP/1.1", "POST /orders HTTP/1.1"])
        // libcurl sent the POST again on a fresh connection, which was refused; AsyncHTTPClient sends nothing again
        // and reports the closed connection.
        XCTAssertEqual(error.kind, TransportUnderTest.isURLSession ? .cannotConnect : .connectionLost, "\(error)")
        XCTAssertEqual(error.attempts, 1)
        XCTAssertEqual(clock.delays, [])
    }
}

/// A loopback port where nothing listens, held (bound) for as long as the value lives, so that no other test's
/// server can take it.
private final class RefusedPort: Sendable {
    let port: Int
    private let socket: Int32

    init() throws {
        (socket, port) = try RawSocket.bound(listening: false)
    }

    deinit {
        close(socket)
    }
}

/// A server for one connection: it answers `GET /warm` on it, keeping it open, reads the next request head, stops
/// listening (a second socket, bound to the same port with `SO_REUSEPORT`, keeps the port from anyone else, so that a
/// new connection is refused) and closes the connection without answering.
private final class OneConnectionServer: Sendable {
    let port: Int
    private let lines = Lines()
    private let holder: Int32
    private let done = DispatchSemaphore(value: 0)

    init() throws {
        let (listener, port) = try RawSocket.bound(listening: true)
        self.port = port
        holder = try RawSocket.bound(listening: false, port: port).socket
        Thread.detachNewThread { [lines, done] in
            defer { done.signal() }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                close(listener)
                return
            }
            var pending = [UInt8]()
            func head() -> String? {
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    if let end = pending.indices.dropLast(3).first(where: {
                        pending[$0..<$0 + 4].elementsEqual([13, 10, 13, 10])
                    }) {
                        let text = String(decoding: pending[..<end], as: UTF8.self)
                        pending.removeSubrange(..<(end + 4))
                        return text
                    }
                    let count = recv(connection, &buffer, buffer.count, 0)
                    guard count > 0 else { return nil }
                    pending += buffer[..<count]
                }
            }
            if let warm = head() {
                lines.append(warm.components(separatedBy: "\r\n")[0])
                let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
                _ = answer.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if let next = head() { lines.append(next.components(separatedBy: "\r\n")[0]) }
            }
            close(listener)
            close(connection)
        }
    }

    /// The request lines the server read, once it has closed the connection.
    func requestLines() -> [String] {
        _ = done.wait(timeout: .now() + 20)
        return lines.all
    }

    deinit {
        close(holder)
    }
}

/// The request lines a server read.
private final class Lines:
    // Checked by hand: `lock` guards `lines`.
    @unchecked Sendable
{
    private let lock = NSLock()
    private var lines: [String] = []

    func append(_ line: String) {
        lock.withLock { lines.append(line) }
    }

    var all: [String] { lock.withLock { lines } }
}

/// Loopback sockets for the servers above.
private enum RawSocket {
    struct Failure: Error {
        let call: String
        let code: Int32
    }

    /// A TCP socket bound to 127.0.0.1 (`port`, or one the system picks) with `SO_REUSEPORT`, listening or not.
    static func bound(listening: Bool, port: Int = 0) throws -> (socket: Int32, port: Int) {
        #if canImport(Glibc)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw Failure(call: "socket", code: errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            close(fd)
            throw Failure(call: "bind", code: errno)
        }
        if listening, listen(fd, 8) != 0 {
            close(fd)
            throw Failure(call: "listen", code: errno)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}
