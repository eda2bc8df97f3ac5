import Foundation
import SwiftConnectTesting
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// A process out of file descriptors: the server's accept loop backs off instead of spinning a core, and answers
/// once descriptors free up. Run in a child process of its own, whose descriptor limit it lowers.
final class LocalServerDescriptorTests: XCTestCase {
    private static let childVariable = "SWIFTCONNECT_DESCRIPTOR_CHILD"

    func testAnAcceptThatRunsOutOfDescriptorsWaitsWithoutSpinning() throws {
        #if os(Linux)
            if ProcessInfo.processInfo.environment[Self.childVariable] != nil { return try Self.childPart() }
            // Given: this test, in a child process
            let child = Process()
            child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            child.arguments = ["SwiftConnectTestingTests.LocalServerDescriptorTests/\(#function.dropLast(2))"]
            var environment = ProcessInfo.processInfo.environment
            environment[Self.childVariable] = "1"
            child.environment = environment
            let output = Pipe()
            child.standardOutput = output
            child.standardError = output
            let exited = DispatchSemaphore(value: 0)
            child.terminationHandler = { _ in exited.signal() }
            // When
            try child.run()
            let text = output.fileHandleForReading.readDataToEndOfFile()
            guard exited.wait(timeout: .now() + 120) == .success else {
                child.terminate()
                return XCTFail("the child did not end within 120 s")
            }
            // Then
            let log = String(decoding: text, as: UTF8.self)
            guard let line = log.split(separator: "\n").first(where: { $0.hasPrefix("descriptors:") }) else {
                return XCTFail("the child said nothing:\n\(log.suffix(2_000))")
            }
            print(line)
            let fields = Dictionary(
                uniqueKeysWithValues: line.dropFirst("descriptors:".count).split(separator: " ").compactMap { pair in
                    let parts = pair.split(separator: "=")
                    return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
                })
            XCTAssertEqual(fields["emfile"], "true", String(line))
            XCTAssertEqual(
                fields["held"], "true", "the connection was answered or dropped while no descriptor was left")
            let cpu = try XCTUnwrap(fields["cpu"].flatMap(Double.init), String(line))
            XCTAssertLessThan(cpu, 0.3, "the accept loop spun while no descriptor was left: \(line)")
            XCTAssertEqual(fields["answered"], "true", "the waiting connection was not served once descriptors freed")
        #else
            throw XCTSkip("reads /proc and rlimits as Linux has them")
        #endif
    }

    #if os(Linux)
        /// The child's part: runs out of descriptors with a connection waiting, measures the CPU the process uses
        /// over a second, frees the descriptors and reads the answer; says what it saw in one line.
        private static func childPart() throws {
            let server = try LocalServer.started()
            defer { server.stop() }
            server.route("GET", "/x") { _ in .text("ok") }
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard client >= 0 else { return print("descriptors: error=socket") }
            defer { close(client) }
            // The limit lowered to what is open plus a few, and those taken: the server cannot accept.
            var original = rlimit()
            getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &original)
            let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 64
            var lowered = original
            lowered.rlim_cur = rlim_t(open + 8)
            setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &lowered)
            var taken: [Int32] = []
            while true {
                let descriptor = dup(client)
                if descriptor < 0 { break }
                taken.append(descriptor)
            }
            let exhausted = errno == EMFILE
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(server.port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            // Nothing can come back while the server has no descriptor to take the connection with: the client waits
            // a second for it (the connection is held, not dropped), and the CPU the whole process uses meanwhile
            // is measured.
            let before = cpuSeconds()
            var waiting = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            let early = poll(&waiting, 1, 1_000)
            let cpu = cpuSeconds() - before
            for descriptor in taken { close(descriptor) }
            setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &original)
            // Once descriptors are free, the waiting connection is served.
            let request = Array("GET /x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8)
            _ = request.withUnsafeBytes { send(client, $0.baseAddress, $0.count, 0) }
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var buffer = [UInt8](repeating: 0, count: 512)
            let count = recv(client, &buffer, buffer.count, 0)
            let answered = count > 0 && String(decoding: buffer.prefix(max(0, count)), as: UTF8.self).contains(" 200 ")
            print(
                "descriptors: emfile=\(exhausted) connected=\(connected == 0) held=\(early == 0) "
                    + "cpu=\(String(format: "%.3f", cpu)) answered=\(answered)")
        }

        private static func cpuSeconds() -> Double {
            var time = timespec()
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
            return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
        }
    #endif
}
