#if os(Linux)
    import Dispatch
    import Foundation
    import Glibc
    import XCTest

    @testable import SwiftConnect

    /// A failure to build or change a lab network: a command that failed, a socket call that failed.
    struct NetworkLabError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// The system commands a lab uses, found where Debian puts them.
    enum LabCommand {
        /// The path of `name` (`ip`, `nft`, `tc`, `unshare`), or `nil` if it is not installed.
        static func path(_ name: String) -> String? {
            ["/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"].map { $0 + name }.first {
                FileManager.default.isExecutableFile(atPath: $0)
            }
        }

        /// A third octet N, at random, such that no interface of the test's namespace has an address in
        /// `10.<secondOctet>.N.0/24`. Two test processes may make labs at once (two worktrees, two packages' tests):
        /// a second link in a subnet already in use takes, or fails on, the first one's route. (Chosen, then made, a
        /// few milliseconds apart: two processes choosing in the same instant still meet once in 254.)
        static func unusedSubnet(secondOctet: Int) -> Int {
            var used = Set<Int>()
            var list: UnsafeMutablePointer<ifaddrs>?
            if getifaddrs(&list) == 0, let first = list {
                defer { freeifaddrs(list) }
                for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
                    guard let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET)
                    else { continue }
                    let octets = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                        withUnsafeBytes(of: $0.pointee.sin_addr.s_addr) { Array($0) }
                    }
                    if octets[0] == 10, Int(octets[1]) == secondOctet { used.insert(Int(octets[2])) }
                }
            }
            return (1...254).filter { !used.contains($0) }.randomElement() ?? Int.random(in: 1...254)
        }

        /// Runs `executable` with `arguments`, `input` on its standard input; returns its standard output.
        ///
        /// - Throws: ``NetworkLabError`` with the command and its standard error when it exits with a failure.
        @discardableResult
        static func run(_ executable: String, _ arguments: [String], input: String? = nil) throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            let output = Pipe()
            let errors = Pipe()
            let standardInput = Pipe()
            process.standardOutput = output
            process.standardError = errors
            process.standardInput = input == nil ? FileHandle.nullDevice : standardInput
            try process.run()
            if let input {
                standardInput.fileHandleForWriting.write(Data(input.utf8))
                try standardInput.fileHandleForWriting.close()
            }
            // Read both to their end before waiting: a full pipe would stop the command.
            let errorText = Protected(Data())
            let errorsRead = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                let data = errors.fileHandleForReading.readDataToEndOfFile()
                errorText.withLock { $0 = data }
                errorsRead.signal()
            }
            let text = output.fileHandleForReading.readDataToEndOfFile()
            errorsRead.wait()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                let message = String(decoding: errorText.snapshot, as: UTF8.self)
                throw NetworkLabError(
                    "\(executable) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus): "
                        + message)
            }
            return String(decoding: text, as: UTF8.self)
        }
    }

    /// Network namespaces from inside the process: a socket belongs to the namespace of the thread that made it.
    enum NetworkNamespace {
        /// Runs `body` on the calling thread inside namespace `name` (one `ip netns add` made), then moves the
        /// thread back: sockets `body` creates stay in that namespace.
        static func run<Result>(in name: String, _ body: () throws -> Result) throws -> Result {
            typealias SetNamespace = @convention(c) (Int32, Int32) -> Int32
            // setns(2) is in glibc but not in the Glibc module.
            guard let symbol = dlsym(nil, "setns") else { throw NetworkLabError("setns not found") }
            let setns = unsafeBitCast(symbol, to: SetNamespace.self)
            let cloneNewNet: Int32 = 0x4000_0000  // CLONE_NEWNET, <linux/sched.h>
            let original = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)
            guard original >= 0 else { throw NetworkLabError("open /proc/thread-self/ns/net: errno \(errno)") }
            defer { close(original) }
            let target = open("/var/run/netns/\(name)", O_RDONLY | O_CLOEXEC)
            guard target >= 0 else { throw NetworkLabError("open /var/run/netns/\(name): errno \(errno)") }
            defer { close(target) }
            guard setns(target, cloneNewNet) == 0 else { throw NetworkLabError("setns \(name): errno \(errno)") }
            defer { _ = setns(original, cloneNewNet) }
            return try body()
        }

        /// Runs `body` inside namespace `name` on a thread of its own, and waits for it: the caller's thread, which
        /// may be a pool's, never changes namespace.
        static func runOnThread<Result: Sendable>(
            in name: String, _ body: @escaping @Sendable () throws -> Result
        ) throws -> Result {
            let outcome = Protected<Swift.Result<Result, any Error>?>(nil)
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                let result = Swift.Result { try run(in: name, body) }
                outcome.withLock { $0 = result }
                done.signal()
            }
            guard done.wait(timeout: .now() + 30) == .success, let result = outcome.snapshot else {
                throw NetworkLabError("work in namespace \(name) did not finish within 30 s")
            }
            return try result.get()
        }
    }

    /// A small network on one machine, for tests of what crosses a real link: a network namespace (the "lab") joined
    /// to the test's own namespace by a veth pair, and the faults a real network makes, applied to that link.
    ///
    /// ```
    ///  test process (root namespace)                      lab namespace
    ///  client ── 10.214.N.1 ─[scl<id>h]═══veth═══[scl<id>l]─ 10.214.N.2 ── LabRelay / LabNameServer
    /// ```
    ///
    /// Nothing leaves the machine: the lab has no other link and no route out. The faults:
    /// - packets dropped at random, or those of one connection (nftables in the lab: `numgen`, a port match);
    /// - a slow link (a `tbf` queue on both ends);
    /// - the link taken down and up;
    /// - a route that swallows the lab's packets (a `blackhole` route in the root namespace).
    ///
    /// Made with ``make(for:needsPacketFilter:)``, which skips the test without root or iproute2 (or nftables when
    /// asked for) and deletes everything when the test ends.
    final class NetworkLab: Sendable {
        /// The namespace's name, `sc-lab-<id>`.
        let namespace: String
        /// The veth end in the root namespace, with ``hostAddress``.
        let hostInterface: String
        /// The veth end in the lab, with ``labAddress``.
        let labInterface: String
        /// The root namespace's address on the link, `10.214.N.1`.
        let hostAddress: String
        /// The lab's address, `10.214.N.2`: what a client in the test process connects to.
        let labAddress: String

        private let ip: String
        private let nft: String?
        private let tc: String?
        /// Whether the lab's packet filter table exists yet.
        private let hasFilterTable = Protected(false)

        /// A lab's names, and addresses in `10.<secondOctet>.N.0/24` (N at random, unused).
        private init(ip: String, nft: String?, tc: String?, secondOctet: Int = 214) {
            self.ip = ip
            self.nft = nft
            self.tc = tc
            let id = String(format: "%06x", UInt32.random(in: 0...0xFF_FFFF))
            let subnet = LabCommand.unusedSubnet(secondOctet: secondOctet)
            namespace = "sc-lab-\(id)"
            hostInterface = "scl\(id)h"
            labInterface = "scl\(id)l"
            hostAddress = "10.\(secondOctet).\(subnet).1"
            labAddress = "10.\(secondOctet).\(subnet).2"
        }

        /// Makes a lab for `test`, deleted when the test ends.
        ///
        /// - Throws: `XCTSkip` without root or iproute2, or without nftables when `needsPacketFilter`;
        ///   ``NetworkLabError`` if the system refuses to make it.
        static func make(for test: XCTestCase, needsPacketFilter: Bool = false) throws -> NetworkLab {
            if needsPacketFilter, LabCommand.path("nft") == nil { throw XCTSkip("nftables (`nft`) is not installed") }
            let lab = try makeWithoutLink(for: test, secondOctet: 214)
            try lab.ip("link", "add", lab.hostInterface, "type", "veth", "peer", "name", lab.labInterface)
            try lab.ip("link", "set", lab.labInterface, "netns", lab.namespace)
            try lab.ip("-n", lab.namespace, "addr", "add", "\(lab.labAddress)/24", "dev", lab.labInterface)
            try lab.ip("-n", lab.namespace, "link", "set", lab.labInterface, "up")
            try lab.ip("addr", "add", "\(lab.hostAddress)/24", "dev", lab.hostInterface)
            try lab.ip("link", "set", lab.hostInterface, "up")
            return lab
        }

        /// Makes a lab for `test` with its namespace (`lo` up) and no link yet, addressed in
        /// `10.<secondOctet>.N.0/24`, deleted when the test ends. The caller makes the link: an interface named
        /// ``hostInterface`` here and one named ``labInterface`` in the lab, with ``hostAddress`` and
        /// ``labAddress`` (``PacketBridge`` does, with two TAP devices).
        ///
        /// - Throws: `XCTSkip` without root or iproute2; ``NetworkLabError`` if the system refuses to make it.
        static func makeWithoutLink(for test: XCTestCase, secondOctet: Int) throws -> NetworkLab {
            guard geteuid() == 0 else { throw XCTSkip("a network lab needs root (network namespaces, links)") }
            guard let ip = LabCommand.path("ip") else { throw XCTSkip("iproute2 (`ip`) is not installed") }
            let lab = NetworkLab(
                ip: ip, nft: LabCommand.path("nft"), tc: LabCommand.path("tc"), secondOctet: secondOctet)
            do {
                try lab.ip("netns", "add", lab.namespace)
            } catch {
                throw XCTSkip("cannot create a network namespace here: \(error)")
            }
            test.addTeardownBlock { lab.destroy() }
            try lab.ip("-n", lab.namespace, "link", "set", "lo", "up")
            return lab
        }

        /// Deletes the veth pair, the route this lab added and the namespace; whatever is missing is skipped.
        func destroy() {
            _ = try? ip("route", "del", "blackhole", "\(labAddress)/32")
            _ = try? ip("link", "del", hostInterface)
            _ = try? ip("netns", "del", namespace)
        }

        // MARK: - Faults

        /// Drops `percent` % of the packets entering the lab and as many leaving it, at random (nftables `numgen`).
        func dropPackets(percent: Int) throws {
            precondition((0...100).contains(percent), "a percentage")
            try filter("add rule inet lab input numgen random mod 100 < \(percent) counter drop")
            try filter("add rule inet lab output numgen random mod 100 < \(percent) counter drop")
        }

        /// Drops, from now on, every packet of the connection whose client end is port `clientPort` of the test's
        /// namespace: the peer is gone without a word (no FIN, no RST), as when a NAT forgets the connection.
        func dropConnection(clientPort: Int) throws {
            try filter("add rule inet lab input tcp sport \(clientPort) counter drop")
            try filter("add rule inet lab output tcp dport \(clientPort) counter drop")
        }

        /// The packets the lab's rules have dropped so far, in both directions.
        func droppedPackets() throws -> Int {
            guard hasFilterTable.snapshot, let nft else { return 0 }
            let table = try LabCommand.run(ip, ["netns", "exec", namespace, nft, "list", "table", "inet", "lab"])
            // Each rule reads "… counter packets N bytes M drop".
            let words = table.split(whereSeparator: \.isWhitespace)
            return zip(words, words.dropFirst()).reduce(0) { sum, pair in
                pair.0 == "packets" ? sum + (Int(pair.1) ?? 0) : sum
            }
        }

        /// Limits the link to `kilobitsPerSecond` in each direction (a token bucket on both veth ends).
        func limitRate(kilobitsPerSecond: Int) throws {
            guard let tc else { throw XCTSkip("tc (iproute2) is not installed") }
            let shape = ["root", "tbf", "rate", "\(kilobitsPerSecond)kbit", "burst", "16kb", "latency", "500ms"]
            try LabCommand.run(tc, ["qdisc", "replace", "dev", hostInterface] + shape)
            try LabCommand.run(tc, ["-n", namespace, "qdisc", "replace", "dev", labInterface] + shape)
        }

        /// Takes the link down (both ends lose carrier) or brings it back up with its address and route.
        func setLink(up: Bool) throws {
            try ip("link", "set", hostInterface, up ? "up" : "down")
        }

        /// Adds (or removes) a `blackhole` route to the lab's address in the test's namespace: every packet to the
        /// lab vanishes there, those of open connections included.
        func setRouteToNowhere(_ isOn: Bool) throws {
            try ip("route", isOn ? "add" : "del", "blackhole", "\(labAddress)/32")
        }

        // MARK: - Commands

        @discardableResult
        private func ip(_ arguments: String...) throws -> String {
            try LabCommand.run(ip, arguments)
        }

        /// Runs nftables `command` in the lab, after making its `inet lab` table with an input and an output chain.
        private func filter(_ command: String) throws {
            guard let nft else { throw XCTSkip("nftables (`nft`) is not installed") }
            let made = hasFilterTable.withLock { made -> Bool in
                defer { made = true }
                return made
            }
            if !made {
                try LabCommand.run(
                    ip, ["netns", "exec", namespace, nft, "-f", "-"],
                    input: """
                        table inet lab {
                            chain input { type filter hook input priority 0; policy accept; }
                            chain output { type filter hook output priority 0; policy accept; }
                        }

                        """)
            }
            guard !command.isEmpty else { return }
            try LabCommand.run(ip, ["netns", "exec", namespace, nft] + command.split(separator: " ").map(String.init))
        }
    }

    /// A connector to a lab's server: the tests of the lab set each part.
    struct LabEndpoint: Connector {
        var baseURL: URL
        var endpoint: String
        var method: HTTPMethod = .get
        var headers: [HTTPHeader] = []
        var parameters: (any ParametersRepresentable)?
        var timeout: TimeInterval = 30
    }

    /// How a call across a lab ended, and how long it took.
    struct LabOutcome {
        var result: Result<ConnectResponse, ConnectError>
        var seconds: TimeInterval
    }

    extension XCTestCase {
        /// What a call across a lab may take beyond its deadline before it counts as hung: the engine's own wind-down.
        static var labMargin: TimeInterval { 5 }

        /// Sends `connector` with `connect` and waits for its outcome, failing the test if it does not end within its
        /// deadline and ``labMargin``, or ends with an error that is not a ``ConnectError``.
        func sendAcrossLab(
            _ connector: LabEndpoint, with connect: Connect, file: StaticString = #filePath, line: UInt = #line
        ) -> LabOutcome? {
            let started = DispatchTime.now()
            let future = connect.response(for: connector)
            guard let result = try? future.waitForResult(timeout: connector.timeout + Self.labMargin) else {
                future.cancel()
                XCTFail(
                    "\(connector.method.rawValue) \(connector.endpoint) did not end within its deadline "
                        + "(\(connector.timeout) s) and \(Self.labMargin) s", file: file, line: line)
                return nil
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
            XCTAssertLessThanOrEqual(seconds, connector.timeout + Self.labMargin, file: file, line: line)
            switch result {
            case .success(let response): return LabOutcome(result: .success(response), seconds: seconds)
            case .failure(let error as ConnectError): return LabOutcome(result: .failure(error), seconds: seconds)
            case .failure(let error):
                XCTFail("not a ConnectError: \(type(of: error)) \(error)", file: file, line: line)
                return nil
            }
        }
    }
#endif
