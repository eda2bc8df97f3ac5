#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A thin, blocking wrapper over one TCP socket descriptor.
///
/// `Socket` owns nothing by itself: whoever creates it decides when to ``closeNow()`` it.
/// Every call retries on `EINTR`; nothing here raises `SIGPIPE`.
struct Socket: Sendable, Hashable {
    let fd: Int32

    /// The size of every `recv` call: big enough that a typical request arrives in one read.
    static let receiveSize = 64 * 1024

    // MARK: - Listening

    /// Creates a non-blocking listener bound to `127.0.0.1` on an ephemeral port.
    ///
    /// - Returns: The listener and the port the kernel chose.
    /// - Throws: ``LocalServer/SocketError`` naming the call that failed.
    static func listenOnLoopback() throws(LocalServer.SocketError) -> (socket: Socket, port: Int) {
        try bindToLoopback(listening: true)
    }

    /// Creates a socket bound to `127.0.0.1` on an ephemeral port that does not listen: a connection to the port is
    /// refused (the kernel answers it with a reset). On Linux, no other socket can take the port while this one is
    /// open: it is bound without `SO_REUSEADDR` or `SO_REUSEPORT`, which two sockets must both set to share a port,
    /// and the kernel gives no explicitly bound port to an outgoing connection.
    ///
    /// - Returns: The socket, to close once the port is no longer needed, and its port.
    /// - Throws: ``LocalServer/SocketError`` naming the call that failed.
    static func boundOnLoopback() throws(LocalServer.SocketError) -> (socket: Socket, port: Int) {
        try bindToLoopback(listening: false)
    }

    /// A socket bound to `127.0.0.1` on an ephemeral port: a non-blocking listener reusing the address, or, when
    /// `listening` is `false`, a socket that only holds the port.
    private static func bindToLoopback(listening: Bool) throws(LocalServer.SocketError) -> (socket: Socket, port: Int) {
        #if canImport(Darwin)
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { throw .init(operation: "socket", code: errno) }
        let listener = Socket(fd: fd)
        do throws(LocalServer.SocketError) {
            if listening {
                try listener.setOption(SOL_SOCKET, SO_REUSEADDR, 1, name: "setsockopt(SO_REUSEADDR)")
                try listener.setNonBlocking(true)
            }

            var address = sockaddr_in()
            #if canImport(Darwin)
                address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
            #endif
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = 0
            address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else { throw .init(operation: "bind", code: errno) }
            guard !listening || listen(fd, 1024) == 0 else { throw .init(operation: "listen", code: errno) }

            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            guard named == 0 else { throw .init(operation: "getsockname", code: errno) }
            return (listener, Int(UInt16(bigEndian: address.sin_port)))
        } catch {
            listener.closeNow()
            throw error
        }
    }

    /// Accepts one pending connection, configured for the server: blocking, `TCP_NODELAY`, no `SIGPIPE`.
    ///
    /// - Returns: The connection; or no socket and the `errno` of the failure: `EAGAIN` when nothing is pending,
    ///   `ECONNABORTED` when the peer already left, `EMFILE` when the process has no descriptor left.
    func acceptingConnection() -> (socket: Socket?, error: Int32) {
        while true {
            let fd = accept(self.fd, nil, nil)
            if fd >= 0 {
                let connection = Socket(fd: fd)
                // A socket accepted from a non-blocking listener is non-blocking on Darwin: undo that.
                try? connection.setNonBlocking(false)
                try? connection.setOption(Int32(IPPROTO_TCP), TCP_NODELAY, 1, name: "setsockopt(TCP_NODELAY)")
                #if canImport(Darwin)
                    try? connection.setOption(SOL_SOCKET, SO_NOSIGPIPE, 1, name: "setsockopt(SO_NOSIGPIPE)")
                #endif
                return (connection, 0)
            }
            if errno == EINTR { continue }
            return (nil, errno)
        }
    }

    // MARK: - Reading and writing

    /// Reads at most `buffer.count` bytes.
    ///
    /// - Returns: The number of bytes read; `0` when the peer closed or the socket was shut down or failed.
    func receive(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count >= 0 { return count }
            if errno == EINTR { continue }
            return 0
        }
    }

    /// Writes every byte of `bytes`, looping over partial writes.
    ///
    /// - Returns: `false` if the connection failed or was shut down before everything was written.
    @discardableResult
    func sendAll(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard var next = bytes.baseAddress else { return true }
        var remaining = bytes.count
        while remaining > 0 {
            let sent = send(fd, next, remaining, Socket.sendFlags)
            if sent < 0 {
                if errno == EINTR { continue }
                return false
            }
            next += sent
            remaining -= sent
        }
        return true
    }

    /// Writes every byte of `bytes`.
    @discardableResult
    func sendAll(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { sendAll($0) }
    }

    #if canImport(Darwin)
        private static let sendFlags: Int32 = 0  // SO_NOSIGPIPE is set on every accepted socket instead.
    #else
        private static let sendFlags = Int32(MSG_NOSIGNAL)
    #endif

    // MARK: - Waiting

    /// How a wait on the socket ended.
    enum WaitOutcome {
        case timedOut
        /// The peer closed its side, the connection failed, or the server shut the socket down.
        case hungUp
        /// Bytes are ready to read.
        case readable
    }

    /// Waits until the connection hangs up or `seconds` pass, without consuming anything the peer sends.
    ///
    /// Used for a response delay: a `stop()` (which shuts the socket down) or a departed client ends it early.
    func waitForHangUp(seconds: Double) -> WaitOutcome {
        #if canImport(Glibc) || canImport(Musl)
            let events = Socket.peerClosedEvent
        #else
            let events: Int16 = 0  // POLLHUP and POLLERR are always reported.
        #endif
        return wait(events: events, seconds: seconds)
    }

    /// Waits until the socket is readable (which includes a hang-up) or `seconds` pass.
    ///
    /// - Parameter seconds: The longest wait; zero or negative only checks, without waiting.
    func waitForReadable(seconds: Double) -> WaitOutcome {
        wait(events: Int16(POLLIN), seconds: seconds)
    }

    private func wait(events: Int16, seconds: Double) -> WaitOutcome {
        let deadline = Socket.monotonicSeconds() + max(0, seconds)
        while true {
            let remaining = max(0, deadline - Socket.monotonicSeconds())
            let timeout = Int32(min((remaining * 1000).rounded(.up), Double(Int32.max)))
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let result = poll(&entry, 1, timeout)
            if result < 0 {
                if errno == EINTR { continue }
                return .hungUp
            }
            if result == 0 {
                // Re-checks the deadline, so a timeout that ended early cannot end the wait early.
                if Socket.monotonicSeconds() >= deadline { return .timedOut }
                continue
            }
            if entry.revents & Int16(POLLIN) != 0, entry.revents & Socket.hangUpEvents == 0 { return .readable }
            return .hungUp
        }
    }

    #if canImport(Glibc) || canImport(Musl)
        /// Linux's `POLLRDHUP` (the peer closed its side), which Swift does not import: it needs `_GNU_SOURCE`.
        private static let peerClosedEvent: Int16 = 0x2000
        private static let hangUpEvents = Int16(POLLHUP) | Int16(POLLERR) | Int16(POLLNVAL) | peerClosedEvent
    #else
        private static let hangUpEvents = Int16(POLLHUP) | Int16(POLLERR) | Int16(POLLNVAL)
    #endif

    static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1_000_000_000
    }

    // MARK: - Closing

    /// Shuts both directions down: wakes any thread blocked in `recv`, `send` or `poll` on this socket.
    func shutdownBoth() {
        _ = shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Shuts the receiving direction down: wakes a thread blocked in `recv` or `poll` without sending anything.
    func shutdownRead() {
        _ = shutdown(fd, Int32(SHUT_RD))
    }

    /// Makes the coming close reset the connection (`SO_LINGER` of zero) instead of ending it cleanly.
    func resetOnClose() {
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }

    /// Shuts the sending direction down, so the peer reads end-of-stream after what was sent.
    func shutdownWrite() {
        _ = shutdown(fd, Int32(SHUT_WR))
    }

    /// Releases the descriptor. Call exactly once.
    func closeNow() {
        _ = close(fd)
    }

    // MARK: - Options

    private func setOption(_ level: Int32, _ option: Int32, _ value: Int32, name: String) throws(LocalServer
        .SocketError)
    {
        var value = value
        guard setsockopt(fd, level, option, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw .init(operation: name, code: errno)
        }
    }

    private func setNonBlocking(_ nonBlocking: Bool) throws(LocalServer.SocketError) {
        let flags = fcntl(fd, F_GETFL, 0)
        guard flags >= 0 else { throw .init(operation: "fcntl(F_GETFL)", code: errno) }
        let wanted = nonBlocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        guard wanted == flags || fcntl(fd, F_SETFL, wanted) == 0 else {
            throw .init(operation: "fcntl(F_SETFL)", code: errno)
        }
    }
}

/// A pipe whose only job is to wake the accept loop's `poll` when the server stops.
struct WakePipe: Sendable {
    let readFD: Int32
    let writeFD: Int32

    init() throws(LocalServer.SocketError) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw .init(operation: "pipe", code: errno) }
        readFD = fds[0]
        writeFD = fds[1]
    }

    /// Makes `readFD` readable for ever after.
    func signal() {
        var byte: UInt8 = 1
        while write(writeFD, &byte, 1) < 0, errno == EINTR {}
    }

    func closeBoth() {
        _ = close(readFD)
        _ = close(writeFD)
    }
}

/// Waits until `listener` has a connection to accept or `wake` was signalled.
///
/// - Returns: `false` once `wake` was signalled: the accept loop must end.
/// Waits up to `milliseconds` for `wake`; whether it was signalled (the server stops).
func waitForWake(_ wake: WakePipe, milliseconds: Int32) -> Bool {
    var entry = pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0)
    while true {
        let result = poll(&entry, 1, milliseconds)
        if result < 0, errno == EINTR { continue }
        return result > 0
    }
}

func waitForConnection(on listener: Socket, orWake wake: WakePipe) -> Bool {
    var entries = [
        pollfd(fd: listener.fd, events: Int16(POLLIN), revents: 0),
        pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0),
    ]
    while true {
        let result = poll(&entries, nfds_t(entries.count), -1)
        if result < 0 {
            if errno == EINTR { continue }
            return false
        }
        return entries[1].revents == 0
    }
}
