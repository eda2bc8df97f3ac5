import Foundation
import SwiftConnect
import XCTest

@testable import SwiftConnectTesting

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

/// The port the "refused connection" check connects to is held for the check: no other socket, of this process or
/// another, can start listening there between the choice of the port and the connection, which would be answered.
final class TransportConformanceRefusedPortTests: XCTestCase {
    func testTheRefusedPortIsHeldAndRefusesConnectionsForTheWholeCheck() throws {
        // Given
        let context = TransportConformance.Context(makeTransport: { FakeTransport() })

        try context.withRefusedPort { port in
            // When: another socket tries to take the port, as a server does (with SO_REUSEADDR)
            let bound = Self.bindError(port: port)

            // Then: it cannot, and a connection to the port is refused
            XCTAssertEqual(bound, EADDRINUSE, "bind on the refused port: errno \(bound)")
            #if os(Linux)
                let wildcard = Self.bindError(port: port, address: INADDR_ANY)
                XCTAssertEqual(wildcard, EADDRINUSE, "bind on the refused port of every address: errno \(wildcard)")
            #endif
            XCTAssertEqual(Self.connectError(port: port), ECONNREFUSED)
        }
    }

    /// A TCP socket with `SO_REUSEADDR` set, neither bound nor connected.
    private static func makeSocket() -> Int32 {
        #if canImport(Darwin)
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }

    private static func address(port: Int, address host: UInt32 = 0x7F00_0001) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr = in_addr(s_addr: host.bigEndian)
        return address
    }

    /// The `errno` of binding a new socket to `host` (127.0.0.1 by default) on `port` and listening there, 0 when
    /// that succeeded.
    private static func bindError(port: Int, address host: UInt32 = 0x7F00_0001) -> Int32 {
        let fd = makeSocket()
        defer { _ = close(fd) }
        var address = address(port: port, address: host)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else { return errno }
        return listen(fd, 1) == 0 ? 0 : errno
    }

    /// The `errno` of connecting to 127.0.0.1:`port`, 0 when the connection was accepted.
    private static func connectError(port: Int) -> Int32 {
        let fd = makeSocket()
        defer { _ = close(fd) }
        var address = address(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0 ? 0 : errno
    }
}
