import Foundation
@_spi(Engine) import SwiftConnect

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A small HTTP/1.1 engine over POSIX sockets, for tests: it moves the bytes of one hop to 127.0.0.1 or `localhost`
/// over plain `http`, on a fresh connection closed at the end of the body, and nothing more. Redirects, credentials,
/// cookies, the deadline, size limits, downloads and progress are the core's exchange's, applied around it.
///
/// It does not decode `Content-Encoding`: a compressed body reaches the core as it was sent.
struct SocketEngine: HTTPEngine {
    /// Connects, sends `hop`'s head and body, and reads the response's head (skipping interim 1xx answers but
    /// 101); the body is read from the socket as the core iterates it.
    func send(_ hop: EngineRequest) async throws -> EngineResponse<SocketBody> {
        let port = try Self.loopbackPort(of: hop.head)
        let connection = try HopConnection()
        try await connection.open(port: port)
        var bytes = Data(Self.requestHead(of: hop).utf8)
        switch hop.body {
        case .none:
            try await connection.write(bytes)
        case .bytes(let body):
            bytes.append(body)
            try await connection.write(bytes)
            hop.sent(Int64(body.count))
        case .file(let url, let length):
            try await connection.write(bytes)
            try await Self.upload(url, length: length, over: connection, sent: hop.sent)
        case .stream(let chunks, let length):
            // Each chunk is written before the next is asked for: that is the back-pressure.
            try await connection.write(bytes)
            for try await chunk in chunks {
                if length == nil {
                    var framed = Data("\(String(chunk.count, radix: 16))\r\n".utf8)
                    framed.append(chunk)
                    framed.append(contentsOf: Array("\r\n".utf8))
                    try await connection.write(framed)
                } else {
                    try await connection.write(chunk)
                }
            }
            if length == nil { try await connection.write(Data("0\r\n\r\n".utf8)) }
        }
        var reader = WireReader(connection: connection)
        var (version, head) = try await reader.responseHead()
        while (100..<200).contains(head.status), head.status != 101 {
            (version, head) = try await reader.responseHead()
        }
        let framing = try Self.framing(of: head, method: hop.head.method)
        return EngineResponse(head: head, httpVersion: version, body: SocketBody(reader: reader, framing: framing))
    }

    /// The port `head` names: it must be plain `http` to 127.0.0.1 or `localhost`, where this engine goes.
    private static func loopbackPort(of head: RequestHead) throws -> UInt16 {
        let host = head.url?.host?.lowercased()
        guard head.scheme == "http", host == "127.0.0.1" || host == "localhost",
            let port = UInt16(exactly: head.url?.port ?? 80), port > 0
        else {
            var error = ConnectError.invalidRequest(.invalidURL(head.url?.absoluteString ?? head.authority))
            error.message =
                "SocketEngine sends plain http to 127.0.0.1 or localhost only, not to "
                + "\(head.scheme)://\(head.authority)"
            throw error
        }
        return port
    }

    /// The request line and header fields of `hop`, as they go on the wire: the head's fields in order, with
    /// `Host`, `Content-Length` (for a body; `Transfer-Encoding: chunked` for a stream of unknown length) and
    /// `Connection: close` added where the head has none.
    private static func requestHead(of hop: EngineRequest) -> String {
        let fields = hop.head.headerFields
        var lines = ["\(hop.head.method.rawValue) \(hop.head.path) HTTP/1.1"]
        if !fields.contains("Host") { lines.append("Host: \(hop.head.authority)") }
        lines += fields.map { "\($0.name.rawName): \($0.value)" }
        if let length = hop.body.length {
            if length > 0, !fields.contains(.contentLength) { lines.append("Content-Length: \(length)") }
        } else if !fields.contains("Transfer-Encoding") {
            lines.append("Transfer-Encoding: chunked")
        }
        if !fields.contains("Connection") { lines.append("Connection: close") }
        return lines.joined(separator: "\r\n") + "\r\n\r\n"
    }

    /// Sends the first `length` bytes of the file at `url` in pieces of 64 KiB at most, telling `sent` of each.
    private static func upload(
        _ url: URL, length: Int64, over connection: HopConnection, sent: @Sendable (Int64) -> Void
    ) async throws {
        // The core checked that the file is a readable regular file: failing here, it changed meanwhile.
        guard let file = FileHandle(forReadingAtPath: url.path) else {
            throw ConnectError.fileAccess(POSIXError(.EACCES), url: url, request: nil)
        }
        defer { try? file.close() }
        var left = length
        while left > 0 {
            let piece = (try? file.read(upToCount: Int(min(left, pieceSize)))) ?? Data()
            guard !piece.isEmpty else { throw ConnectError.fileAccess(POSIXError(.EIO), url: url, request: nil) }
            try await connection.write(piece)
            sent(Int64(piece.count))
            left -= Int64(piece.count)
        }
    }

    /// How the body of the response `head` to a `method` request ends (RFC 9112, 6.3).
    private static func framing(of head: ResponseHead, method: HTTPMethod) throws -> Framing {
        if method.rawValue == "HEAD" || head.status < 200 || head.status == 204 || head.status == 304 { return .none }
        if let codings = head.headerFields["Transfer-Encoding"] {
            let last = codings.split(separator: ",").last?.trimmingCharacters(in: .whitespaces).lowercased()
            return last == "chunked" ? .chunked(left: 0, started: false) : .untilClose
        }
        guard let declared = head.headerFields[.contentLength] else { return .untilClose }
        guard let length = Int64(declared), length >= 0 else {
            throw badResponse("the Content-Length \(declared.debugDescription) is not a length")
        }
        return .length(left: length)
    }
}

/// The largest piece read from the socket or a file at once: 64 KiB.
private let pieceSize: Int64 = 64 << 10

/// How the end of a response's body is found: there is `none` (or no more), `left` bytes follow, chunks follow
/// (`left` bytes of the current one; at 0, a size line is next, after the CRLF that ends the previous chunk's data
/// once `started`), or the body ends when the server closes the connection.
private enum Framing: Sendable {
    case none, untilClose
    case length(left: Int64)
    case chunked(left: Int64, started: Bool)
}

/// A response body read from the socket only as it is iterated, at most 64 KiB a chunk. The connection is closed
/// at the end of the body, at a failure, or when the last copy of the body goes unread.
struct SocketBody: AsyncSequence, Sendable {
    fileprivate let reader: WireReader
    fileprivate let framing: Framing

    /// An iterator over the body; iterate a body once.
    func makeAsyncIterator() -> Iterator { Iterator(reader: reader, framing: framing) }

    /// Reads the next chunk from the socket each time it is asked for one.
    struct Iterator: AsyncIteratorProtocol {
        fileprivate var reader: WireReader
        fileprivate var framing: Framing

        /// The next piece of the body, `nil` at its end; a failure closes the connection and is thrown.
        mutating func next() async throws -> Data? {
            var piece: Data?
            defer {
                if piece == nil {
                    framing = .none
                    reader.connection.close()
                }
            }
            piece = try await read()
            return piece
        }

        /// Reads as `framing` says, and moves it on.
        private mutating func read() async throws -> Data? {
            switch framing {
            case .none:
                return nil
            case .untilClose:
                let piece = try await reader.take(upTo: pieceSize)
                return piece.isEmpty ? nil : piece
            case .length(let left):
                guard left > 0 else { return nil }
                let piece = try await reader.take(upTo: left)
                guard !piece.isEmpty else { throw connectionLost("the body ended \(left) bytes short of its length") }
                framing = .length(left: left - Int64(piece.count))
                return piece
            case .chunked(var left, let started):
                if left == 0 {
                    if started, try await !reader.line().isEmpty { throw badResponse("a chunk outgrew its size") }
                    left = try await reader.chunkSize()
                    if left == 0 {
                        while try await !reader.line().isEmpty {}  // Trailer fields, not kept.
                        return nil
                    }
                }
                let piece = try await reader.take(upTo: left)
                guard !piece.isEmpty else { throw connectionLost("the connection closed in a chunk") }
                framing = .chunked(left: left - Int64(piece.count), started: true)
                return piece
            }
        }
    }
}

/// The bytes of a response as they arrive: the connection, and what was received but not parsed yet.
private struct WireReader: Sendable {
    let connection: HopConnection
    var buffer = Data()

    /// Receives more bytes into `buffer`; `false` at the end of the stream.
    mutating func fill() async throws -> Bool {
        let more = try await connection.receive()
        buffer.append(more)
        return !more.isEmpty
    }

    /// The next line, without its line break (CRLF, or a bare LF); the stream must not end before it.
    mutating func line() async throws -> String {
        while true {
            if let end = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                var line = buffer[..<end]
                if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
                // The limit holds for the line's content whatever its line break (the CR of a CRLF does not count)
                // and whatever the reads it came in: a line over it is refused even when one read brought it whole
                // (else a long line passes or not by how the kernel split the bytes)
                guard line.count <= pieceSize else { throw badResponse("a line of the response is over 64 KiB") }
                buffer = Data(buffer[(end + 1)...])
                return String(decoding: line, as: UTF8.self)
            }
            // No line break yet: a CR at the end may be the start of one, and is not counted
            let content = buffer.count - (buffer.last == UInt8(ascii: "\r") ? 1 : 0)
            guard content <= pieceSize else { throw badResponse("a line of the response is over 64 KiB") }
            guard try await fill() else { throw connectionLost("the connection closed before the response was whole") }
        }
    }

    /// Up to `limit` bytes: those received already, or else those of the next read; empty at the end of the stream.
    mutating func take(upTo limit: Int64) async throws -> Data {
        if buffer.isEmpty, try await !fill() { return Data() }
        let count = Int(min(limit, Int64(buffer.count), pieceSize))
        defer { buffer = Data(buffer.dropFirst(count)) }
        return Data(buffer.prefix(count))
    }

    /// The status line and header fields of a response (repeated names kept, in order), and its protocol version.
    mutating func responseHead() async throws -> (version: String, head: ResponseHead) {
        let status = try await line()
        let parts = status.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let code = Int(parts[1]),
            code >= 100
        else { throw badResponse("the status line \(status.debugDescription) is not HTTP/1.x") }
        var fields = HeaderFields()
        while true {
            let field = try await line()
            if field.isEmpty { break }
            guard fields.count < 500, let colon = field.firstIndex(of: ":") else {
                throw badResponse("the header field \(field.debugDescription) is malformed, or one too many")
            }
            let value = field[field.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            fields.append(HeaderField(name: HeaderField.Name(String(field[..<colon])), value: value))
        }
        return (String(parts[0]), ResponseHead(status: code, headerFields: fields))
    }

    /// The size of the next chunk, from its size line (extensions ignored).
    mutating func chunkSize() async throws -> Int64 {
        let line = try await line()
        let digits = line.prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces)
        guard digits.count <= 15, digits.allSatisfy(\.isHexDigit), let size = Int64(digits, radix: 16) else {
            throw badResponse("the chunk size line \(line.debugDescription) is malformed")
        }
        return size
    }
}

/// One TCP connection to 127.0.0.1, for one hop. Its blocking calls run on a global queue, one at a time (the
/// hop's owner awaits each); cancelling the awaiting task shuts the socket down, which ends a call blocked in it.
/// Each blocked call holds a thread of the global queue: fine for tests, not for thousands of connections.
private final class HopConnection: Sendable {
    /// The descriptor (`nil` once closed) and whether a cancellation shut it down. Shutting down and closing both
    /// happen under this lock, so that a shutdown never reaches a descriptor number closed and reused meanwhile.
    private let state: Protected<(fd: Int32?, cancelled: Bool)>

    /// A new TCP socket, not connected yet, with `TCP_NODELAY` and no `SIGPIPE`.
    init() throws {
        #if canImport(Darwin)
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { throw systemFailure(.cannotConnect, "socket") }
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
            _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        state = Protected((fd, false))
    }

    deinit { close() }

    /// Closes the socket, once: later calls do nothing.
    func close() {
        state.withLock { state in
            #if canImport(Darwin)
                if let fd = state.fd { _ = Darwin.close(fd) }
            #else
                if let fd = state.fd { _ = Glibc.close(fd) }
            #endif
            state.fd = nil
        }
    }

    /// Connects to 127.0.0.1 on `port`; a refusal is ``ConnectError/Kind/cannotConnect``.
    func open(port: UInt16) async throws {
        try await blocking { fd in
            var address = sockaddr_in()
            #if canImport(Darwin)
                address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
            #endif
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
            let connected = withUnsafePointer(to: address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else { throw systemFailure(.cannotConnect, "connect to 127.0.0.1:\(port)") }
        }
    }

    /// Sends every byte of `data`.
    func write(_ data: Data) async throws {
        try await blocking { fd in
            try data.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let count = send(fd, bytes.baseAddress! + offset, bytes.count - offset, sendFlags)
                    if count < 0, errno == EINTR { continue }
                    guard count >= 0 else { throw systemFailure(.connectionLost, "send") }
                    offset += count
                }
            }
        }
    }

    /// What arrived next, 64 KiB at most; empty at the end of the stream.
    func receive() async throws -> Data {
        try await blocking { fd in
            var buffer = Data(count: Int(pieceSize))
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count < 0, errno == EINTR { continue }
                guard count >= 0 else { throw systemFailure(.connectionLost, "recv") }
                buffer.count = count
                return buffer
            }
        }
    }

    /// Runs `call` with the descriptor on a global queue, and throws `CancellationError` if the task was cancelled
    /// before it ended, whatever the call returned then: the cancellation shuts the socket down to end it.
    private func blocking<T: Sendable>(_ call: @escaping @Sendable (Int32) throws -> T) async throws -> T {
        let fd = try state.withLock { state in
            guard !state.cancelled else { throw CancellationError() }
            guard let fd = state.fd else { throw connectionLost("the connection is closed") }
            return fd
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, any Error>, Never>) in
                DispatchQueue.global().async { continuation.resume(returning: Result { try call(fd) }) }
            }
        } onCancel: {
            state.withLock { state in
                state.cancelled = true
                guard let fd = state.fd else { return }
                // A stop is abortive: closing then resets the connection. A graceful close leaves the server
                // writing into a window the shut-down socket no longer opens, its zero-window probes answered for
                // as long as the orphaned socket lives (seen: a server still writing 10 s after the close).
                var abort = linger(l_onoff: 1, l_linger: 0)
                _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, socklen_t(MemoryLayout<linger>.size))
                _ = shutdown(fd, Int32(SHUT_RDWR))
            }
        }
        if state.withLock({ $0.cancelled }) { throw CancellationError() }
        return try result.get()
    }
}

#if canImport(Darwin)
    private let sendFlags: Int32 = 0  // SO_NOSIGPIPE is set on the socket instead.
#else
    private let sendFlags = Int32(MSG_NOSIGNAL)
#endif

/// A `kind` failure of the system call `call`, with its `errno`.
private func systemFailure(_ kind: ConnectError.Kind, _ call: String) -> ConnectError {
    let code = errno
    return ConnectError(
        kind, message: "\(call) failed: \(String(cString: strerror(code)))",
        underlyingError: POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO))
}

/// The connection ended before the response was whole.
private func connectionLost(_ message: String) -> ConnectError { ConnectError(.connectionLost, message: message) }

/// The server's bytes are not an HTTP/1.1 response.
private func badResponse(_ message: String) -> ConnectError { ConnectError(.badResponse, message: message) }
