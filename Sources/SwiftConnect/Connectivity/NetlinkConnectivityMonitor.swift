#if os(Linux)
    import Dispatch
    import Foundation
    #if canImport(Glibc)
        import Glibc
    #elseif canImport(Musl)
        import Musl
    #endif

    /// A ``ConnectivityMonitor`` for Linux that listens to the kernel's routing socket (rtnetlink).
    ///
    /// It reads the interfaces and addresses once when created, then follows the kernel's change messages: it
    /// never polls, so a change is seen within milliseconds and an idle monitor costs nothing.
    ///
    /// The network counts as reachable while at least one interface other than loopback is up and running
    /// (`IFF_UP` and `IFF_RUNNING`) and has an address that can reach beyond the link: an IPv4 address outside
    /// `127.0.0.0/8`, `0.0.0.0/8` and `169.254.0.0/16`, or an IPv6 address other than `::`, `::1` and `fe80::/10`
    /// that is neither tentative (duplicate-address detection still running) nor failed. A default route is not
    /// required, so a network with only local routes (a LAN, a container, a VPN that routes only some prefixes)
    /// reads as connected; a request to a host with no route then fails at once with a clear error rather than
    /// being held back by a wrong "offline". Routes are therefore not followed at all.
    ///
    /// The monitor watches the network namespace of the thread that creates it, for its whole life.
    ///
    /// Should its socket fail once it runs (the kernel refusing a read, say), the state can no longer be known, and
    /// reads as connected, as after ``stop()``: ``current`` becomes ``Connectivity/connected``, the observers hear it,
    /// requests waiting for the network go, and ``ConnectLogging/logger`` gets a warning saying which call failed.
    ///
    /// One thread per monitor reads the socket and calls the observers. Call ``stop()``, or release the monitor
    /// (a ``ConnectivityMonitor/changes`` sequence keeps it until the sequence ends), to end it; it does not outlive
    /// the monitor.
    public final class NetlinkConnectivityMonitor: ConnectivityMonitor {
        /// Why a monitor could not be created: the system call that failed, and its `errno`.
        public struct SetupError: Error, CustomStringConvertible, Hashable, Sendable {
            /// The failing call, such as `socket(AF_NETLINK)` or `bind(AF_NETLINK)`.
            public let call: String
            /// The `errno` the call failed with.
            public let errorNumber: Int32

            /// `NetlinkConnectivityMonitor: bind(AF_NETLINK) failed: Operation not permitted (errno 1)`.
            public var description: String {
                "NetlinkConnectivityMonitor: \(call) failed: \(String(cString: strerror(errorNumber))) "
                    + "(errno \(errorNumber))"
            }
        }

        private let reader: NetlinkReader

        /// Opens a routing socket in the calling thread's network namespace, reads the current interfaces and
        /// addresses, and starts the thread that follows their changes.
        ///
        /// ``current`` is exact as soon as this returns.
        ///
        /// - Throws: ``SetupError`` if the socket cannot be opened or bound, or the kernel does not answer or fails
        ///   to list the interfaces and addresses (`call` is then `dump`).
        public convenience init() throws(SetupError) {
            try self.init(datagramsPerBatch: NetlinkSession.maximumDatagramsPerBatch)
        }

        /// A monitor that reads at most `datagramsPerBatch` datagrams before it publishes the state (tests: a
        /// small batch leaves changes queued behind an overflow, as a large `net.core.rmem_max` does).
        init(datagramsPerBatch: Int) throws(SetupError) {
            var session = try NetlinkSession.open(datagramsPerBatch: max(1, datagramsPerBatch))
            switch session.resynchronize(timeoutMilliseconds: NetlinkSession.setupTimeoutMilliseconds) {
            case .completed:
                break
            case .failed(let error):
                session.closeDescriptors()
                throw error
            case .stopped:
                session.closeDescriptors()  // Cannot happen: nothing can wake the session before `init` returns.
                throw SetupError(call: "dump", errorNumber: ECANCELED)
            }
            reader = NetlinkReader(session: session)
        }

        deinit {
            reader.stop()
        }

        /// The state now: the last one the kernel's messages led to.
        public var current: Connectivity { reader.observers.current }

        /// Calls `handler`, on the monitor's own thread, with every later change of ``current``.
        ///
        /// - Parameter handler: Called with the new state after each change; it must not block.
        /// - Returns: The observation; keep it for as long as the handler should be called.
        public func observe(_ handler: @escaping @Sendable (Connectivity) -> Void) -> ConnectivityObservation {
            reader.observers.add(handler)
        }

        /// Stops following changes: ends the reading thread and closes the socket.
        ///
        /// A state nobody follows any more is not known, and an unknown state reads as connected, as after a failure
        /// of the socket: ``current`` becomes ``Connectivity/connected``, and the observers hear of it (if it was
        /// another state) before this returns, so that requests waiting for the network go rather than wait for a
        /// change no one will report. When it returns no observer is being called or will be called again (unless it
        /// is called by an observer, on the monitor's thread: then the thread tells the observers and ends just after
        /// the observer returns). Later calls do nothing; releasing the monitor stops it too.
        public func stop() {
            reader.stop()
        }

        /// Makes the reading thread fail with `error` as if its socket had (a test's hook: a routing socket does not
        /// fail on demand).
        func failForTesting(_ error: SetupError) {
            reader.failForTesting(error)
        }
    }

    /// The connectivity monitor of the platform: ``NetlinkConnectivityMonitor`` (rtnetlink) here.
    public typealias SystemConnectivityMonitor = NetlinkConnectivityMonitor

    // MARK: - Reading thread

    /// The part of a monitor its reading thread keeps alive: not the monitor itself, so releasing the monitor
    /// stops the thread.
    private final class NetlinkReader: Sendable {
        private struct Lifecycle {
            var isStopRequested = false
            var areDescriptorsClosed = false
            /// A failure a test asked for (``failForTesting(_:)``), met by the thread when it wakes.
            var injectedFailure: NetlinkConnectivityMonitor.SetupError?
            var readerThread: pthread_t?
        }

        let observers: ConnectivityObservers
        /// The writing end of the wake-up pair, which `stop()` writes to; the thread owns it and closes it.
        private let wakeSender: Int32
        /// Orders `stop()`'s wake-up write before the thread's `close`, so it never writes to a closed (or
        /// reused) descriptor.
        private let lifecycle = Protected(Lifecycle())
        /// Left by the thread once it has closed the descriptors and will call no observer again.
        private let finished = DispatchGroup()

        init(session: NetlinkSession) {
            observers = ConnectivityObservers(initial: session.table.connectivity)
            wakeSender = session.wakeSender
            finished.enter()
            let started = DispatchSemaphore(value: 0)
            let named = DispatchSemaphore(value: 0)
            let thread = Thread { [self] in
                // Named from the thread itself: Foundation's `Thread` on Linux does not pass a name set before
                // `start()` on to the system, where debuggers, `top` and /proc/self/task/*/comm read it. And only
                // once `start()` has returned: it stores the thread's handle after creating it, and a name set
                // before that is dropped (`Thread.name` has no thread to name yet; seen under ThreadSanitizer, a
                // monitor's thread left unnamed). At most 15 characters: the kernel's limit.
                started.wait()
                Thread.current.name = "NetlinkMonitor"
                named.signal()
                run(session)
            }
            thread.start()
            started.signal()
            // The thread is there, under its name, once `init` returns.
            named.wait()
        }

        /// Asks the thread to end and waits for it, unless called on that thread.
        func stop() {
            let isOnReaderThread = lifecycle.withLock { lifecycle -> Bool in
                if !lifecycle.isStopRequested {
                    lifecycle.isStopRequested = true
                    if !lifecycle.areDescriptorsClosed {
                        var byte: UInt8 = 1
                        _ = write(wakeSender, &byte, 1)  // A full buffer is fine: it is readable already.
                    }
                }
                return lifecycle.readerThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
            }
            if !isOnReaderThread {
                finished.wait()
            }
        }

        /// Wakes the thread to fail with `error`, as if its socket had (a test's hook).
        func failForTesting(_ error: NetlinkConnectivityMonitor.SetupError) {
            lifecycle.withLock { lifecycle in
                guard !lifecycle.isStopRequested, !lifecycle.areDescriptorsClosed else { return }
                lifecycle.injectedFailure = error
                var byte: UInt8 = 1
                _ = write(wakeSender, &byte, 1)
            }
        }

        private var isStopRequested: Bool { lifecycle.withLock { $0.isStopRequested } }

        private func run(_ initialSession: NetlinkSession) {
            var session = initialSession
            lifecycle.withLock { $0.readerThread = pthread_self() }
            defer {
                lifecycle.withLock { lifecycle in
                    session.closeDescriptors()
                    lifecycle.areDescriptorsClosed = true
                }
                // Stopped or failed, the state is no longer followed: unknown, it reads as connected (`fail()`), and
                // the observers hear it before `stop()` returns. Outside the lock: an observer may call `stop()`.
                observers.update(.connected)
                finished.leave()
            }
            while !isStopRequested {
                switch session.waitForMessages(timeoutMilliseconds: -1) {
                case .stopped:
                    if let injected = lifecycle.withLock({ $0.injectedFailure }) { fail(injected) }
                    return
                case .failed(let error):
                    fail(error)
                    return
                case .readable:
                    break
                }
                switch session.readNotifications() {
                case .applied:
                    break
                case .overflowed:
                    // The kernel dropped messages for us: the state may be stale, so read it all again.
                    switch session.resynchronize(timeoutMilliseconds: NetlinkSession.resyncTimeoutMilliseconds) {
                    case .completed:
                        break
                    case .stopped:
                        return
                    case .failed(let error):
                        fail(error)
                        return
                    }
                case .failed(let error):
                    fail(error)
                    return
                }
                observers.update(session.table.connectivity)
            }
        }

        /// The socket broke with `error` (it should not): the state can no longer be known, and an unknown state reads
        /// as connected so that nothing is held back for want of a monitor. The process's logger
        /// (``ConnectLogging/logger``) is told why, as a warning: the state no longer follows the network.
        private func fail(_ error: NetlinkConnectivityMonitor.SetupError) {
            ConnectLogging.logger.log(
                .warning, "\(error): the network is no longer followed, and reads as connected from now on")
            observers.update(.connected)
        }
    }

    // MARK: - Socket

    /// The routing socket and what is read from it: owned by one thread at a time (the creating thread during
    /// `init`, then the reading thread).
    private struct NetlinkSession {
        enum Wait {
            case readable
            case stopped
            case failed(NetlinkConnectivityMonitor.SetupError)
        }

        enum Resync {
            case completed
            case stopped
            case failed(NetlinkConnectivityMonitor.SetupError)
        }

        enum Notifications {
            case applied
            case overflowed
            case failed(NetlinkConnectivityMonitor.SetupError)
        }

        /// The kernel answers a dump at once; a longer wait means something is badly wrong.
        static let setupTimeoutMilliseconds: Int32 = 5_000
        static let resyncTimeoutMilliseconds: Int32 = 30_000
        /// A dump interrupted by changes, or by a lost message, is read again; a storm that never lets one finish
        /// gives up after this many.
        static let maximumDumpAttempts = 64
        /// Datagrams read before the state is published, so that a storm of changes cannot starve the observers.
        static let maximumDatagramsPerBatch = 256
        /// Datagrams discarded before a dump at most: a storm that keeps the socket full is not waited out.
        static let maximumDatagramsDiscarded = 65_536
        static let receiveBufferSize = 64 * 1024

        let socket: Int32
        let wakeReceiver: Int32
        let wakeSender: Int32
        let datagramsPerBatch: Int
        private(set) var table = NetlinkInterfaceTable()
        private var sequence: UInt32 = 0
        private var buffer = [UInt8](repeating: 0, count: receiveBufferSize)

        private init(socket: Int32, wakeReceiver: Int32, wakeSender: Int32, datagramsPerBatch: Int) {
            self.socket = socket
            self.wakeReceiver = wakeReceiver
            self.wakeSender = wakeSender
            self.datagramsPerBatch = datagramsPerBatch
        }

        /// Opens and binds the socket, subscribed to link and address changes, and the wake-up pair.
        static func open(datagramsPerBatch: Int) throws(NetlinkConnectivityMonitor.SetupError) -> NetlinkSession {
            let type = Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
            let socket = Glibc.socket(AF_NETLINK, type, RTNetlink.NETLINK_ROUTE)
            guard socket >= 0 else { throw .init(call: "socket(AF_NETLINK)", errorNumber: errno) }
            // Room for a burst of changes; the kernel caps it at net.core.rmem_max, and ENOBUFS covers the rest.
            var bufferSize: Int32 = 1 << 20
            _ = setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &bufferSize, socklen_t(MemoryLayout<Int32>.size))

            // Routes are not subscribed to: the state rule does not use them (see the type's documentation).
            let groups = RTNetlink.RTMGRP_LINK | RTNetlink.RTMGRP_IPV4_IFADDR | RTNetlink.RTMGRP_IPV6_IFADDR
            var address = NetlinkAddress(portID: 0, groups: groups)
            let bound = withUnsafeBytes(of: &address.storage) { raw in
                Glibc.bind(socket, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), NetlinkAddress.length)
            }
            guard bound == 0 else {
                let error = errno
                close(socket)
                throw .init(call: "bind(AF_NETLINK)", errorNumber: error)
            }

            var pair: [Int32] = [-1, -1]
            let pairType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
            guard socketpair(AF_UNIX, pairType, 0, &pair) == 0 else {
                let error = errno
                close(socket)
                throw .init(call: "socketpair", errorNumber: error)
            }
            return NetlinkSession(
                socket: socket, wakeReceiver: pair[0], wakeSender: pair[1], datagramsPerBatch: datagramsPerBatch)
        }

        func closeDescriptors() {
            close(socket)
            close(wakeReceiver)
            close(wakeSender)
        }

        /// Waits until the socket can be read or the wake-up pair is written to.
        func waitForMessages(timeoutMilliseconds: Int32) -> Wait {
            var descriptors = [
                pollfd(fd: socket, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wakeReceiver, events: Int16(POLLIN), revents: 0),
            ]
            while true {
                let count = poll(&descriptors, nfds_t(descriptors.count), timeoutMilliseconds)
                if count < 0 && errno == EINTR { continue }
                guard count >= 0 else { return .failed(.init(call: "poll", errorNumber: errno)) }
                guard count > 0 else { return .failed(.init(call: "poll", errorNumber: ETIMEDOUT)) }
                if descriptors[1].revents != 0 { return .stopped }
                return .readable  // POLLIN, or POLLERR: then the read reports the error.
            }
        }

        /// Reads the datagrams waiting, up to a batch, and applies them to the table.
        mutating func readNotifications() -> Notifications {
            var overflowed = false
            for _ in 0..<datagramsPerBatch {
                switch receive() {
                case .messages(let messages):
                    for message in messages { table.apply(message) }
                case .overflow:
                    overflowed = true
                case .empty:
                    return overflowed ? .overflowed : .applied
                case .failed(let error):
                    return .failed(error)
                }
            }
            return overflowed ? .overflowed : .applied
        }

        /// Reads every link and address again into an empty table.
        ///
        /// What the socket holds is discarded first. After an overflow it is older than the message the kernel
        /// dropped (the kernel drops when the queue is full, and reports it before what is queued), so applied to
        /// the emptied table it could bring back an interface whose removal was the lost message; the dump that
        /// follows lists what exists, never what is gone. It may also hold the rest of an interrupted dump.
        /// Change messages read after the dump request are applied in the order the kernel queued them, which
        /// keeps the table right: a dump part is generated when it is read, after the changes queued before it.
        mutating func resynchronize(timeoutMilliseconds: Int32) -> Resync {
            for _ in 0..<Self.maximumDumpAttempts {
                if let error = discardQueued() { return .failed(error) }
                table.removeAll()
                var isConsistent = true
                for request in [RTNetlink.RTM_GETLINK, RTNetlink.RTM_GETADDR] {
                    switch dump(request, timeoutMilliseconds: timeoutMilliseconds) {
                    case .consistent:
                        break
                    case .inconsistent:
                        isConsistent = false
                    case .stopped:
                        return .stopped
                    case .failed(let error):
                        return .failed(error)
                    }
                }
                if isConsistent { return .completed }
            }
            return .failed(.init(call: "dump (interrupted \(Self.maximumDumpAttempts) times)", errorNumber: EAGAIN))
        }

        /// Reads and drops every datagram the socket holds, up to ``maximumDatagramsDiscarded``.
        private mutating func discardQueued() -> NetlinkConnectivityMonitor.SetupError? {
            for _ in 0..<Self.maximumDatagramsDiscarded {
                switch receive() {
                case .empty:
                    return nil
                case .messages, .overflow:
                    continue
                case .failed(let error):
                    return error
                }
            }
            return nil
        }

        private enum Dump {
            case consistent
            case inconsistent
            case stopped
            case failed(NetlinkConnectivityMonitor.SetupError)
        }

        /// Sends one dump request and applies messages until its end.
        private mutating func dump(_ request: UInt16, timeoutMilliseconds: Int32) -> Dump {
            sequence = sequence == UInt32.max ? 1 : sequence + 1
            let sent = sequence
            if let error = send(NetlinkRequest.dump(request, sequence: sent)) {
                // Memory pressure, or a dump still running: try the whole read again.
                return [ENOBUFS, ENOMEM, EAGAIN, EBUSY].contains(error.errorNumber) ? .inconsistent : .failed(error)
            }
            var isConsistent = true
            while true {
                switch waitForMessages(timeoutMilliseconds: timeoutMilliseconds) {
                case .readable:
                    break
                case .stopped:
                    return .stopped
                case .failed(let error):
                    return .failed(NetlinkConnectivityMonitor.SetupError(call: "dump", errorNumber: error.errorNumber))
                }
                var isDone = false
                reading: while !isDone {
                    switch receive() {
                    case .empty:
                        break reading  // Nothing more for now: wait for the rest.
                    case .overflow:
                        isConsistent = false  // A change was lost; the dump itself carries on.
                    case .failed(let error):
                        return .failed(error)
                    case .messages(let messages):
                        for message in messages {
                            switch message.reading(dump: sent) {
                            case .apply(let interrupted):
                                if interrupted { isConsistent = false }
                                table.apply(message)
                            case .end(let interrupted):
                                if interrupted { isConsistent = false }
                                isDone = true
                            case .failed(let errorNumber):
                                return .failed(.init(call: "dump", errorNumber: errorNumber))
                            }
                        }
                    }
                }
                if isDone { return isConsistent ? .consistent : .inconsistent }
            }
        }

        private func send(_ request: [UInt8]) -> NetlinkConnectivityMonitor.SetupError? {
            var kernel = NetlinkAddress(portID: 0, groups: 0)
            while true {
                let sent = request.withUnsafeBytes { bytes in
                    withUnsafeBytes(of: &kernel.storage) { raw in
                        sendto(
                            socket, bytes.baseAddress, bytes.count, 0,
                            raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), NetlinkAddress.length)
                    }
                }
                if sent < 0 && errno == EINTR { continue }
                guard sent == request.count else {
                    return .init(call: "sendto", errorNumber: sent < 0 ? errno : EMSGSIZE)
                }
                return nil
            }
        }

        private enum Received {
            case messages([NetlinkMessage])
            case overflow
            case empty
            case failed(NetlinkConnectivityMonitor.SetupError)
        }

        /// Reads one datagram, without blocking.
        private mutating func receive() -> Received {
            var sender = NetlinkAddress(portID: 0, groups: 0)
            var senderLength = NetlinkAddress.length
            let capacity = buffer.count
            let count = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutableBytes(of: &sender.storage) { raw in
                    // MSG_TRUNC: the datagram's full length comes back, so a cut one is noticed.
                    recvfrom(
                        socket, bytes.baseAddress, capacity, Int32(MSG_TRUNC),
                        raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &senderLength)
                }
            }
            guard count >= 0 else {
                switch errno {
                case EINTR, EAGAIN, EWOULDBLOCK: return .empty
                case ENOBUFS, ENOMEM: return .overflow  // The kernel dropped messages for us.
                case let error: return .failed(.init(call: "recvfrom", errorNumber: error))
                }
            }
            guard count <= capacity else { return .overflow }  // Truncated: a message is lost.
            // Only the kernel (port 0) speaks for the network; another process could send to this port.
            guard sender.portID == 0 else { return .messages([]) }
            let messages = buffer.withUnsafeBytes { bytes in
                NetlinkMessage.parse(UnsafeRawBufferPointer(rebasing: bytes[0..<count]))
            }
            return .messages(messages)
        }
    }

    /// A `sockaddr_nl`, built byte by byte so its layout is the kernel's whatever Swift does with structs.
    private struct NetlinkAddress {
        static let length = socklen_t(12)
        var storage = sockaddr_storage()

        init(portID: UInt32, groups: UInt32) {
            withUnsafeMutableBytes(of: &storage) { raw in
                raw.storeBytes(of: sa_family_t(AF_NETLINK), toByteOffset: 0, as: sa_family_t.self)
                raw.storeBytes(of: portID, toByteOffset: 4, as: UInt32.self)
                raw.storeBytes(of: groups, toByteOffset: 8, as: UInt32.self)
            }
        }

        var portID: UInt32 {
            withUnsafeBytes(of: storage) { $0.loadUnaligned(fromByteOffset: 4, as: UInt32.self) }
        }
    }

    // MARK: - Kernel interface

    /// The rtnetlink constants the Glibc module does not export, as in `<linux/netlink.h>`, `<linux/rtnetlink.h>`,
    /// `<linux/if_link.h>`, `<linux/if_addr.h>`, `<linux/if_arp.h>` and `<linux/if.h>`.
    enum RTNetlink {
        static let NETLINK_ROUTE: Int32 = 0

        static let RTMGRP_LINK: UInt32 = 0x1
        static let RTMGRP_IPV4_IFADDR: UInt32 = 0x10
        static let RTMGRP_IPV6_IFADDR: UInt32 = 0x100

        /// `sizeof(struct nlmsghdr)`: `len: u32, type: u16, flags: u16, seq: u32, pid: u32`.
        static let headerSize = 16
        /// `sizeof(struct ifinfomsg)`: `family: u8, pad: u8, type: u16, index: i32, flags: u32, change: u32`.
        static let linkHeaderSize = 16
        /// `sizeof(struct ifaddrmsg)`: `family: u8, prefixlen: u8, flags: u8, scope: u8, index: u32`.
        static let addressHeaderSize = 8
        /// `sizeof(struct rtattr)`: `len: u16, type: u16`.
        static let attributeHeaderSize = 4

        static let NLMSG_ERROR: UInt16 = 2
        static let NLMSG_DONE: UInt16 = 3
        static let RTM_NEWLINK: UInt16 = 16
        static let RTM_DELLINK: UInt16 = 17
        static let RTM_GETLINK: UInt16 = 18
        static let RTM_NEWADDR: UInt16 = 20
        static let RTM_DELADDR: UInt16 = 21
        static let RTM_GETADDR: UInt16 = 22

        static let NLM_F_REQUEST: UInt16 = 0x1
        static let NLM_F_DUMP_INTR: UInt16 = 0x10
        static let NLM_F_DUMP: UInt16 = 0x300

        static let IFF_UP: UInt32 = 0x1
        static let IFF_LOOPBACK: UInt32 = 0x8
        static let IFF_RUNNING: UInt32 = 0x40
        static let IFF_LOWER_UP: UInt32 = 0x1_0000

        static let IFLA_IFNAME: UInt16 = 3
        /// A link's nested attributes about its driver (`<linux/if_link.h>`).
        static let IFLA_LINKINFO: UInt16 = 18
        /// In `IFLA_LINKINFO`: the kind of a software link, a NUL-terminated name (`bridge`, `veth`).
        static let IFLA_INFO_KIND: UInt16 = 1
        static let IFA_ADDRESS: UInt16 = 1
        static let IFA_LOCAL: UInt16 = 2
        static let IFA_FLAGS: UInt16 = 8
        static let IFA_F_DADFAILED: UInt32 = 0x08
        static let IFA_F_TENTATIVE: UInt32 = 0x40
        /// `NLA_F_NESTED | NLA_F_NET_BYTEORDER`, cleared from an attribute's type.
        static let attributeTypeFlags: UInt16 = 0xC000

        static let ARPHRD_ETHER: UInt16 = 1
        static let ARPHRD_LOOPBACK: UInt16 = 772

        static let AF_UNSPEC: UInt8 = 0
        static let AF_INET: UInt8 = 2
        static let AF_INET6: UInt8 = 10

        /// `NLMSG_ALIGN` and `RTA_ALIGN`: messages and attributes start on 4-byte boundaries.
        static func align(_ length: Int) -> Int { (length + 3) & ~3 }
    }

    /// Builds the requests sent to the kernel.
    enum NetlinkRequest {
        /// A dump of every link (`RTM_GETLINK`) or address (`RTM_GETADDR`), of every family.
        static func dump(_ type: UInt16, sequence: UInt32) -> [UInt8] {
            // The body is an all-zero `ifinfomsg` or `ifaddrmsg`: family AF_UNSPEC, no filter.
            let bodySize = type == RTNetlink.RTM_GETLINK ? RTNetlink.linkHeaderSize : RTNetlink.addressHeaderSize
            var bytes = [UInt8](repeating: 0, count: RTNetlink.headerSize + bodySize)
            bytes.withUnsafeMutableBytes { raw in
                raw.storeBytes(of: UInt32(raw.count), toByteOffset: 0, as: UInt32.self)
                raw.storeBytes(of: type, toByteOffset: 4, as: UInt16.self)
                raw.storeBytes(of: RTNetlink.NLM_F_REQUEST | RTNetlink.NLM_F_DUMP, toByteOffset: 6, as: UInt16.self)
                raw.storeBytes(of: sequence, toByteOffset: 8, as: UInt32.self)
            }
            return bytes
        }
    }

    // MARK: - Parsing

    /// An interface, as a link message describes it.
    struct NetlinkLink: Hashable, Sendable {
        var index: Int32
        var name: String
        /// The `ARPHRD_*` hardware type.
        var hardwareType: UInt16
        /// The `IFF_*` flags.
        var flags: UInt32
        /// The kind of a link a driver of software makes (`IFLA_INFO_KIND`: `bridge`, `veth`, `vlan`), or `nil`
        /// for one of hardware.
        var softwareKind: String? = nil

        var isLoopback: Bool {
            flags & RTNetlink.IFF_LOOPBACK != 0 || hardwareType == RTNetlink.ARPHRD_LOOPBACK
        }

        /// Up and operational: `IFF_RUNNING` is the kernel's RFC 2863 state (operstate UP, or UNKNOWN for drivers
        /// that do not report one). Carrier alone (`IFF_LOWER_UP`) is not enough: a Wi-Fi link still
        /// authenticating has it, but is dormant.
        var isUsable: Bool {
            !isLoopback && flags & RTNetlink.IFF_UP != 0 && flags & RTNetlink.IFF_RUNNING != 0
        }

        var kind: Connectivity.Interface {
            guard hardwareType == RTNetlink.ARPHRD_ETHER else { return .other }
            // A bridge (Docker's `docker0`, libvirt's `virbr0`) or a VXLAN presents Ethernet frames too, but is no
            // cable: `.other`, as a VPN tunnel is. A VLAN, a bond or a team sits on Ethernet ports, and a veth is a
            // container's Ethernet (its `eth0`): wired, as a container's code expects of its only interface.
            if let softwareKind, !["veth", "vlan", "bond", "team", "macvlan", "ipvlan"].contains(softwareKind) {
                return .other
            }
            // Wi-Fi drivers present Ethernet frames; systemd and the kernel name them `wl…` (`wlan0`, `wlp2s0`).
            return name.hasPrefix("wl") ? .wifi : .wiredEthernet
        }
    }

    /// An address of an interface, as an address message describes it.
    struct NetlinkInterfaceAddress: Hashable, Sendable {
        var interfaceIndex: Int32
        /// `AF_INET` or `AF_INET6`.
        var family: UInt8
        var prefixLength: UInt8
        /// 4 or 16 bytes, in network order.
        var bytes: [UInt8]

        /// Whether the address can reach beyond its own link (or host).
        var isRoutable: Bool {
            if family == RTNetlink.AF_INET {
                guard bytes.count == 4 else { return false }
                // 0.0.0.0/8 "this network", 127.0.0.0/8 loopback, 169.254.0.0/16 link-local (no DHCP answer).
                return bytes[0] != 0 && bytes[0] != 127 && !(bytes[0] == 169 && bytes[1] == 254)
            }
            guard family == RTNetlink.AF_INET6, bytes.count == 16 else { return false }
            let isUnspecifiedOrLoopback = bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] <= 1
            let isLinkLocal = bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80  // fe80::/10, on every IPv6 link.
            return !isUnspecifiedOrLoopback && !isLinkLocal
        }
    }

    /// One message from the routing socket, reduced to what the monitor uses.
    struct NetlinkMessage: Equatable, Sendable {
        enum Payload: Equatable, Sendable {
            case link(NetlinkLink)
            case linkRemoved(index: Int32)
            /// A new or changed address, with its `IFA_F_*` flags.
            case address(NetlinkInterfaceAddress, flags: UInt32)
            case addressRemoved(NetlinkInterfaceAddress)
            /// The end of a dump, with the dump's own result: 0, or a negative `errno` when it ended early.
            case done(code: Int32)
            /// An error (negative `errno`) or acknowledgement (0) of a request.
            case error(code: Int32)
            /// A message of a type or family the monitor does not follow.
            case ignored(type: UInt16)
        }

        var type: UInt16
        var flags: UInt16
        var sequence: UInt32
        var payload: Payload

        /// The messages of one datagram. A message too short for its type is left out; a length that does not
        /// fit ends the datagram (the rest cannot be framed). Never traps, whatever the bytes.
        static func parse(_ datagram: UnsafeRawBufferPointer) -> [NetlinkMessage] {
            var messages: [NetlinkMessage] = []
            var offset = 0
            while datagram.count - offset >= RTNetlink.headerSize {
                let length = Int(datagram.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
                guard length >= RTNetlink.headerSize, length <= datagram.count - offset else { break }
                let type = datagram.loadUnaligned(fromByteOffset: offset + 4, as: UInt16.self)
                let flags = datagram.loadUnaligned(fromByteOffset: offset + 6, as: UInt16.self)
                let sequence = datagram.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
                let body = UnsafeRawBufferPointer(
                    rebasing: datagram[(offset + RTNetlink.headerSize)..<(offset + length)])
                if let payload = parsePayload(type: type, body: body) {
                    messages.append(NetlinkMessage(type: type, flags: flags, sequence: sequence, payload: payload))
                }
                offset += min(RTNetlink.align(length), datagram.count - offset)
            }
            return messages
        }

        /// What a message read while dump `sent` runs means for it.
        enum DumpReading: Equatable, Sendable {
            /// A part of the dump, or a change: applied to the table. `interrupted`: the kernel saw the interfaces
            /// change while it dumped them, so the dump is read again.
            case apply(interrupted: Bool)
            /// The dump's end; `interrupted` as above.
            case end(interrupted: Bool)
            /// The kernel ended the dump with this `errno` (`EPROTO` for a code that is none).
            case failed(errorNumber: Int32)
        }

        /// What this message means for dump `sent` (the sequence number of its request). The kernel flags the end
        /// too when the interfaces changed after the last part, and puts there the error that cut the dump short
        /// (EMSGSIZE: an interface too large for a datagram), as it does in an error message.
        func reading(dump sent: UInt32) -> DumpReading {
            let interrupted = flags & RTNetlink.NLM_F_DUMP_INTR != 0
            guard sequence == sent else { return .apply(interrupted: interrupted) }
            switch payload {
            case .done(let code) where code >= 0:
                return .end(interrupted: interrupted)
            case .done(let code), .error(let code):
                // A code that is no negative `errno` (an acknowledgement never asked for, a positive number, or the
                // most negative `Int32`, which has no negation) is no answer the kernel gives: a protocol error.
                guard code < 0, code > -4096 else { return .failed(errorNumber: EPROTO) }
                // EBUSY: another dump still runs on this socket; EINTR: the dump was cut short.
                guard -code == EBUSY || -code == EINTR else { return .failed(errorNumber: -code) }
                return .end(interrupted: true)
            default:
                return .apply(interrupted: interrupted)
            }
        }

        /// The messages of `bytes`, for tests.
        static func parse(_ bytes: [UInt8]) -> [NetlinkMessage] {
            bytes.withUnsafeBytes { parse($0) }
        }

        private static func parsePayload(type: UInt16, body: UnsafeRawBufferPointer) -> Payload? {
            switch type {
            case RTNetlink.NLMSG_DONE:
                // An `int`: the dump's result (kernels before 2.6.x may send it shorter: read as 0).
                return .done(code: body.count >= 4 ? body.loadUnaligned(as: Int32.self) : 0)
            case RTNetlink.NLMSG_ERROR:
                guard body.count >= 4 else { return nil }
                return .error(code: body.loadUnaligned(as: Int32.self))
            case RTNetlink.RTM_NEWLINK, RTNetlink.RTM_DELLINK:
                return parseLink(type: type, body: body)
            case RTNetlink.RTM_NEWADDR, RTNetlink.RTM_DELADDR:
                return parseAddress(type: type, body: body)
            default:
                return .ignored(type: type)
            }
        }

        private static func parseLink(type: UInt16, body: UnsafeRawBufferPointer) -> Payload? {
            guard body.count >= RTNetlink.linkHeaderSize else { return nil }
            // AF_BRIDGE link messages describe bridge ports, not interfaces: a port leaving a bridge sends a
            // DELLINK for an interface that stays.
            guard body[0] == RTNetlink.AF_UNSPEC else { return .ignored(type: type) }
            let hardwareType = body.loadUnaligned(fromByteOffset: 2, as: UInt16.self)
            let index = body.loadUnaligned(fromByteOffset: 4, as: Int32.self)
            let flags = body.loadUnaligned(fromByteOffset: 8, as: UInt32.self)
            if type == RTNetlink.RTM_DELLINK { return .linkRemoved(index: index) }
            var name = ""
            var softwareKind: String?
            forEachAttribute(in: body, from: RTNetlink.linkHeaderSize) { attributeType, value in
                switch attributeType {
                case RTNetlink.IFLA_IFNAME:
                    name = String(decoding: value.prefix { $0 != 0 }, as: UTF8.self)
                case RTNetlink.IFLA_LINKINFO:
                    forEachAttribute(in: value, from: 0) { infoType, info in
                        guard infoType == RTNetlink.IFLA_INFO_KIND else { return }
                        softwareKind = String(decoding: info.prefix { $0 != 0 }, as: UTF8.self)
                    }
                default:
                    break
                }
            }
            return .link(
                NetlinkLink(
                    index: index, name: name, hardwareType: hardwareType, flags: flags, softwareKind: softwareKind))
        }

        private static func parseAddress(type: UInt16, body: UnsafeRawBufferPointer) -> Payload? {
            guard body.count >= RTNetlink.addressHeaderSize else { return nil }
            let family = body[0]
            let expectedLength: Int
            switch family {
            case RTNetlink.AF_INET: expectedLength = 4
            case RTNetlink.AF_INET6: expectedLength = 16
            default: return .ignored(type: type)
            }
            let prefixLength = body[1]
            var flags = UInt32(body[2])
            let index = body.loadUnaligned(fromByteOffset: 4, as: Int32.self)
            var local: [UInt8]?
            var address: [UInt8]?
            forEachAttribute(in: body, from: RTNetlink.addressHeaderSize) { attributeType, value in
                switch attributeType {
                case RTNetlink.IFA_LOCAL where value.count == expectedLength:
                    local = Array(value)
                case RTNetlink.IFA_ADDRESS where value.count == expectedLength:
                    address = Array(value)
                case RTNetlink.IFA_FLAGS where value.count >= 4:
                    flags = value.loadUnaligned(as: UInt32.self)  // The full flags; the header has 8 bits.
                default:
                    break
                }
            }
            // On a point-to-point link IFA_ADDRESS is the peer's; IFA_LOCAL, when present, is ours.
            guard let bytes = local ?? address else { return nil }
            let interfaceAddress = NetlinkInterfaceAddress(
                interfaceIndex: index, family: family, prefixLength: prefixLength, bytes: bytes)
            return type == RTNetlink.RTM_NEWADDR
                ? .address(interfaceAddress, flags: flags) : .addressRemoved(interfaceAddress)
        }

        /// Calls `body` with each well-formed attribute after `start`; stops at the first that does not fit.
        private static func forEachAttribute(
            in message: UnsafeRawBufferPointer, from start: Int,
            _ body: (UInt16, UnsafeRawBufferPointer) -> Void
        ) {
            var offset = start
            while message.count - offset >= RTNetlink.attributeHeaderSize {
                let length = Int(message.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
                let type = message.loadUnaligned(fromByteOffset: offset + 2, as: UInt16.self)
                guard length >= RTNetlink.attributeHeaderSize, length <= message.count - offset else { return }
                body(
                    type & ~RTNetlink.attributeTypeFlags,
                    UnsafeRawBufferPointer(
                        rebasing: message[(offset + RTNetlink.attributeHeaderSize)..<(offset + length)]))
                offset += min(RTNetlink.align(length), message.count - offset)
            }
        }
    }

    // MARK: - State

    /// The links and addresses of a network namespace, kept from the kernel's messages, and the connectivity
    /// they give.
    struct NetlinkInterfaceTable: Sendable {
        private(set) var links: [Int32: NetlinkLink] = [:]
        /// Each address with its `IFA_F_*` flags.
        private(set) var addresses: [NetlinkInterfaceAddress: UInt32] = [:]

        mutating func apply(_ message: NetlinkMessage) {
            switch message.payload {
            case .link(let link):
                links[link.index] = link
            case .linkRemoved(let index):
                links[index] = nil
                addresses = addresses.filter { $0.key.interfaceIndex != index }
            case .address(let address, let flags):
                addresses[address] = flags
            case .addressRemoved(let address):
                addresses[address] = nil
            case .done, .error, .ignored:
                break
            }
        }

        mutating func removeAll() {
            links.removeAll()
            addresses.removeAll()
        }

        /// Connected when an up, running, non-loopback interface has a routable address that is ready.
        var connectivity: Connectivity {
            var usableIndices = Set<Int32>()
            for (address, flags) in addresses
            where address.isRoutable && flags & (RTNetlink.IFA_F_TENTATIVE | RTNetlink.IFA_F_DADFAILED) == 0 {
                usableIndices.insert(address.interfaceIndex)
            }
            let interfaces = usableIndices.compactMap { links[$0] }.filter(\.isUsable)
            return Connectivity(isConnected: !interfaces.isEmpty, interfaces: Set(interfaces.map(\.kind)))
        }
    }
#endif
