#if os(Linux)
    import Dispatch
    import Foundation
    import Glibc

    @testable import SwiftConnect

    /// The few socket calls the lab's servers make, on IPv4.
    enum LabSocket {
        /// An IPv4 socket address.
        static func address(_ host: String, port: Int) throws -> sockaddr_in {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
                throw NetworkLabError("not an IPv4 address: \(host)")
            }
            return address
        }

        /// A socket of `type` bound to `host` on a port the system picks (or `port`); TCP ones listen.
        static func bound(
            to host: String, port: Int = 0, type: Int32 = Int32(SOCK_STREAM.rawValue)
        ) throws -> (descriptor: Int32, port: Int) {
            let descriptor = socket(AF_INET, type | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard descriptor >= 0 else { throw NetworkLabError("socket: errno \(errno)") }
            var one: Int32 = 1
            setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            var address = try address(host, port: port)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else {
                close(descriptor)
                throw NetworkLabError("bind \(host):\(port): errno \(errno)")
            }
            if type == Int32(SOCK_STREAM.rawValue), listen(descriptor, 256) != 0 {
                close(descriptor)
                throw NetworkLabError("listen: errno \(errno)")
            }
            return (descriptor, try localPort(of: descriptor))
        }

        /// The local port of `descriptor`.
        static func localPort(of descriptor: Int32) throws -> Int {
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            guard named == 0 else { throw NetworkLabError("getsockname: errno \(errno)") }
            return Int(UInt16(bigEndian: address.sin_port))
        }

        /// A TCP connection to `127.0.0.1:port`, made from the calling thread's namespace.
        static func connectToLoopback(port: Int) -> Int32? {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard descriptor >= 0, var address = try? address("127.0.0.1", port: port) else { return nil }
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else {
                close(descriptor)
                return nil
            }
            return descriptor
        }

        /// Waits until `descriptor` is readable or `wake` is; `false` when woken (or on an error).
        static func waitReadable(_ descriptor: Int32, orWake wake: Int32) -> Bool {
            var fds = [
                pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
            ]
            while true {
                let ready = poll(&fds, 2, -1)
                if ready < 0, errno == EINTR { continue }
                return ready > 0 && fds[1].revents == 0
            }
        }
    }

    /// What a lab server shares between its threads: the descriptors open, the threads running, its counters.
    /// A stop shuts every descriptor down (which wakes a thread blocked on it) and waits for the threads.
    private final class LabServerCore:
        // Checked by hand: `lock` protects `open`, `isStopped` and `counters`; the rest is immutable.
        @unchecked Sendable
    {
        private let lock = NSLock()
        private var open: Set<Int32> = []
        private var isStopped = false
        private var counters: [String: [Int]] = [:]
        private let threads = DispatchGroup()
        let wake: (read: Int32, write: Int32)

        init() throws {
            var pipeEnds: [Int32] = [0, 0]
            guard pipe(&pipeEnds) == 0 else { throw NetworkLabError("pipe: errno \(errno)") }
            wake = (pipeEnds[0], pipeEnds[1])
        }

        /// Adds `descriptor` to those a stop closes; `false` (and closes it) if the server is stopping.
        func adopt(_ descriptor: Int32) -> Bool {
            let adopted = lock.withLock { () -> Bool in
                guard !isStopped else { return false }
                open.insert(descriptor)
                return true
            }
            if !adopted { close(descriptor) }
            return adopted
        }

        /// Closes `descriptor`, once, if the server still has it.
        func release(_ descriptor: Int32) {
            let owned = lock.withLock { open.remove(descriptor) != nil }
            if owned { close(descriptor) }
        }

        /// Appends `value` to the list `name`.
        func note(_ name: String, _ value: Int) {
            lock.withLock { counters[name, default: []].append(value) }
        }

        /// The list `name`.
        func noted(_ name: String) -> [Int] {
            lock.withLock { counters[name] ?? [] }
        }

        /// Runs `body` on a thread of its own, which a stop waits for.
        func spawn(_ name: String, _ body: @escaping @Sendable () -> Void) {
            threads.enter()
            let thread = Thread {
                body()
                self.threads.leave()
            }
            thread.name = name
            thread.start()
        }

        /// Stops: wakes the waiting threads, shuts every descriptor down, waits for the threads, closes the rest.
        func stop() {
            let descriptors = lock.withLock { () -> Set<Int32>? in
                guard !isStopped else { return nil }
                isStopped = true
                return open
            }
            guard let descriptors else { return }
            var byte: UInt8 = 1
            _ = write(wake.write, &byte, 1)
            for descriptor in descriptors { shutdown(descriptor, Int32(SHUT_RDWR)) }
            _ = threads.wait(timeout: .now() + 10)
            let left = lock.withLock { () -> Set<Int32> in
                defer { open = [] }
                return open
            }
            for descriptor in left { close(descriptor) }
            close(wake.read)
            close(wake.write)
        }
    }

    /// A TCP server in a lab, on the lab's address, so that a client in the test process reaches it across the veth
    /// pair and its faults.
    ///
    /// - ``Behaviour/relay(toLoopbackPort:)``: each connection is joined to `127.0.0.1:port` of the test's own
    ///   namespace, where a `LocalServer` answers: the server sees every request, the link between them has the
    ///   faults. A close is passed on as a close (FIN), a failure as a shutdown of both sides.
    /// - ``Behaviour/silence``: connections are accepted and never read or answered (a TLS handshake that stalls).
    final class LabServer: Sendable {
        /// What the server does with a connection.
        enum Behaviour: Sendable {
            case relay(toLoopbackPort: Int)
            case silence
        }

        /// The port it listens on, at the lab's address.
        let port: Int
        private let core: LabServerCore
        private let listener: Int32

        /// Starts a server in `lab`.
        init(in lab: NetworkLab, _ behaviour: Behaviour) throws {
            let address = lab.labAddress
            let (listener, port) = try NetworkNamespace.runOnThread(in: lab.namespace) {
                try LabSocket.bound(to: address)
            }
            self.listener = listener
            self.port = port
            core = try LabServerCore()
            _ = core.adopt(listener)
            let core = core
            core.spawn("LabServer.accept") {
                LabServer.accept(on: listener, core: core, behaviour)
            }
        }

        deinit {
            core.stop()
        }

        /// The client ports of the connections accepted so far, in order.
        var clientPorts: [Int] { core.noted("clients") }

        /// Stops accepting, closes every connection and waits for the server's threads.
        func stop() { core.stop() }

        private static func accept(on listener: Int32, core: LabServerCore, _ behaviour: Behaviour) {
            while LabSocket.waitReadable(listener, orWake: core.wake.read) {
                var peer = sockaddr_in()
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let client = withUnsafeMutablePointer(to: &peer) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        Glibc.accept(listener, $0, &length)
                    }
                }
                guard client >= 0 else { continue }
                guard core.adopt(client) else { return }
                core.note("clients", Int(UInt16(bigEndian: peer.sin_port)))
                guard case .relay(let port) = behaviour else { continue }
                guard let upstream = LabSocket.connectToLoopback(port: port), core.adopt(upstream) else {
                    core.release(client)
                    continue
                }
                let ends = Protected(2)
                let finish: @Sendable () -> Void = {
                    guard
                        ends.withLock({ ends -> Int in
                            ends -= 1
                            return ends
                        }) == 0
                    else { return }
                    core.release(client)
                    core.release(upstream)
                }
                core.spawn("LabServer.up") {
                    pump(from: client, to: upstream)
                    finish()
                }
                core.spawn("LabServer.down") {
                    pump(from: upstream, to: client)
                    finish()
                }
            }
        }

        /// Copies bytes from `source` to `destination` until `source` ends (passed on as a half close) or fails
        /// (both shut down).
        private static func pump(from source: Int32, to destination: Int32) {
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let received = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
                if received == 0 {
                    shutdown(destination, Int32(SHUT_WR))
                    return
                }
                if received < 0 {
                    if errno == EINTR { continue }
                    shutdown(destination, Int32(SHUT_RDWR))
                    return
                }
                var sent = 0
                while sent < received {
                    let count = buffer.withUnsafeBytes {
                        send(destination, $0.baseAddress! + sent, received - sent, Int32(MSG_NOSIGNAL))
                    }
                    if count < 0, errno == EINTR { continue }
                    guard count > 0 else {
                        shutdown(source, Int32(SHUT_RDWR))
                        return
                    }
                    sent += count
                }
            }
        }
    }

    /// A DNS server in a lab (UDP port 53 at the lab's address) that answers every query "no such name"
    /// (NXDOMAIN), or "the name exists but has no record of that type" (NOERROR, an empty answer), or never answers.
    final class LabNameServer: Sendable {
        /// How it answers.
        enum Behaviour: Sendable {
            /// NXDOMAIN: the name does not exist.
            case noSuchName
            /// NOERROR with no records: the name exists, with no address (no A, no AAAA).
            case noAddress
            /// No answer at all.
            case silence
        }

        private let core: LabServerCore

        /// Starts a name server in `lab`.
        init(in lab: NetworkLab, _ behaviour: Behaviour) throws {
            let address = lab.labAddress
            let (descriptor, _) = try NetworkNamespace.runOnThread(in: lab.namespace) {
                try LabSocket.bound(to: address, port: 53, type: Int32(SOCK_DGRAM.rawValue))
            }
            core = try LabServerCore()
            _ = core.adopt(descriptor)
            let core = core
            core.spawn("LabNameServer") {
                LabNameServer.serve(descriptor, core: core, behaviour)
            }
        }

        deinit {
            core.stop()
        }

        /// How many queries arrived.
        var queries: Int { core.noted("queries").count }

        /// Stops the server and waits for its thread.
        func stop() { core.stop() }

        private static func serve(_ descriptor: Int32, core: LabServerCore, _ behaviour: Behaviour) {
            var buffer = [UInt8](repeating: 0, count: 1_500)
            while LabSocket.waitReadable(descriptor, orWake: core.wake.read) {
                var peer = sockaddr_in()
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let received = buffer.withUnsafeMutableBytes { bytes in
                    withUnsafeMutablePointer(to: &peer) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            recvfrom(descriptor, bytes.baseAddress, bytes.count, 0, $0, &length)
                        }
                    }
                }
                guard received >= 12 else { continue }
                core.note("queries", received)
                let answer: [UInt8]?
                switch behaviour {
                case .noSuchName: answer = Self.answer(to: Array(buffer[..<received]), responseCode: 3)
                case .noAddress: answer = Self.answer(to: Array(buffer[..<received]), responseCode: 0)
                case .silence: answer = nil
                }
                guard let answer else { continue }
                _ = answer.withUnsafeBytes { bytes in
                    withUnsafePointer(to: &peer) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            sendto(descriptor, bytes.baseAddress, bytes.count, 0, $0, length)
                        }
                    }
                }
            }
        }

        /// The answer to `query` with `responseCode` (3: NXDOMAIN, 0: NOERROR): its id and question, no records
        /// (RFC 1035, section 4.1).
        static func answer(to query: [UInt8], responseCode: UInt8) -> [UInt8]? {
            // The question: labels up to the root's empty one, then type and class.
            var end = 12
            while end < query.count, query[end] != 0 { end += Int(query[end]) + 1 }
            end += 5
            guard end <= query.count else { return nil }
            let recursionDesired = query[2] & 0x01
            return [query[0], query[1], 0x80 | recursionDesired, 0x80 | responseCode, 0, 1, 0, 0, 0, 0, 0, 0]
                + query[12..<end]
        }
    }
#endif
