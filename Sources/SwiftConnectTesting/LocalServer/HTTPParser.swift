import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

// MARK: - Receive buffer

/// The bytes received on one connection and not yet consumed, pipelined requests included.
///
/// Searches use `memchr` / `memmem`; consumed bytes are dropped lazily, when they outweigh the rest.
struct ReceiveBuffer {
    private var storage: [UInt8] = []
    private var readerIndex = 0

    /// Bytes received and not yet consumed.
    var readableCount: Int { storage.count - readerIndex }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if readerIndex > 0, readerIndex >= storage.count / 2 {
            storage.removeFirst(readerIndex)
            readerIndex = 0
        }
        storage.append(contentsOf: bytes)
    }

    /// The offset, relative to the first readable byte, of the first occurrence of `needle` at or after `offset`.
    ///
    /// Jumps between candidates with `memchr` on the needle's first byte (`memmem` is not imported on Linux).
    func firstOffset(of needle: [UInt8], from offset: Int = 0) -> Int? {
        precondition(!needle.isEmpty)
        return storage.withUnsafeBytes { all -> Int? in
            guard let base = all.baseAddress else { return nil }
            let end = all.count - needle.count
            var candidate = readerIndex + offset
            while candidate <= end {
                guard let found = memchr(base + candidate, Int32(needle[0]), end - candidate + 1) else { return nil }
                candidate = base.distance(to: UnsafeRawPointer(found))
                if memcmp(base + candidate, needle, needle.count) == 0 { return candidate - readerIndex }
                candidate += 1
            }
            return nil
        }
    }

    /// The readable byte at `offset`, relative to the first readable byte.
    func byte(at offset: Int) -> UInt8 {
        precondition(offset < readableCount)
        return storage[readerIndex + offset]
    }

    /// Calls `body` with the first `count` readable bytes.
    func withBytes<Result>(count: Int, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        precondition(count <= readableCount)
        return try storage.withUnsafeBytes {
            try body(UnsafeRawBufferPointer(rebasing: $0[readerIndex..<readerIndex + count]))
        }
    }

    /// Removes the first `count` readable bytes and returns them.
    mutating func read(_ count: Int) -> Data {
        let data = withBytes(count: count) { Data($0) }
        skip(count)
        return data
    }

    /// Removes the first `count` readable bytes.
    mutating func skip(_ count: Int) {
        precondition(count <= readableCount)
        readerIndex += count
        if readerIndex == storage.count {
            storage.removeAll(keepingCapacity: true)
            readerIndex = 0
        }
    }
}

// MARK: - Request head

/// A parsed request line and header block.
struct RequestHead {
    var method: String
    var target: String
    var minorVersion: Int
    var headers: [(name: String, value: String)]

    /// The first value of the header `name`, compared case-insensitively.
    func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// Whether the client wants the connection kept open after this request.
    var wantsKeepAlive: Bool {
        let tokens = headers.filter { $0.name.caseInsensitiveEquals("connection") }
            .flatMap { $0.value.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        if tokens.contains("close") { return false }
        return minorVersion >= 1 || tokens.contains("keep-alive")
    }

    /// Whether the head has `Transfer-Encoding` with `Content-Length`, or in HTTP/1.0, which has no transfer coding:
    /// its body is read by the transfer coding, and the connection closes after the answer (RFC 9112 §6.1), since
    /// another reader of the same bytes (a proxy) may have framed them otherwise: the rest could be a smuggled request.
    var hasUnreliableFraming: Bool {
        header("transfer-encoding") != nil && (header("content-length") != nil || minorVersion == 0)
    }

    /// Whether the client waits for a `100 Continue` before sending its body (HTTP/1.1 and later only).
    var expectsContinue: Bool {
        minorVersion >= 1 && (header("expect")?.caseInsensitiveEquals("100-continue") ?? false)
    }
}

/// How a request's body is delimited.
enum BodyFraming: Equatable {
    case none
    case contentLength(Int)
    case chunked
}

/// Why a request could not be parsed; each maps to the status the server answers before closing.
enum HTTPParseError: Error {
    case malformed(String)
    case headersTooLarge

    var status: Int {
        switch self {
        case .malformed: 400
        case .headersTooLarge: 431
        }
    }

    var message: String {
        switch self {
        case .malformed(let reason): reason
        case .headersTooLarge: "request headers exceed \(HTTPParser.maximumHeadSize) bytes"
        }
    }
}

/// Parses HTTP/1.x request heads and chunked bodies.
enum HTTPParser {
    /// The largest request line plus header block accepted; bigger ones are answered 431.
    static let maximumHeadSize = 64 * 1024

    static let lineTerminator: [UInt8] = Array("\r\n".utf8)

    /// Finds the empty line that ends a request head: CRLF CRLF, or a bare LF where either CRLF is (RFC 9112 §2.2
    /// lets a recipient accept a bare LF as a line terminator; the lines are split that way too).
    ///
    /// - Parameters:
    ///   - buffer: The received bytes, starting with the head.
    ///   - offset: Where to start looking: bytes before it were searched already (it may step back two bytes).
    /// - Returns: The length of the head without the empty line, and the number of bytes to consume with the empty
    ///   line; `nil` if the head is not complete yet.
    static func endOfHead(in buffer: ReceiveBuffer, from offset: Int) -> (headLength: Int, consumed: Int)? {
        var from = offset
        while let lineFeed = buffer.firstOffset(of: [0x0A], from: from) {
            guard lineFeed + 1 < buffer.readableCount else { return nil }
            switch buffer.byte(at: lineFeed + 1) {
            case 0x0A:
                return (lineFeed, lineFeed + 2)
            case 0x0D:
                guard lineFeed + 2 < buffer.readableCount else { return nil }
                if buffer.byte(at: lineFeed + 2) == 0x0A { return (lineFeed, lineFeed + 3) }
            default:
                break
            }
            from = lineFeed + 1
        }
        return nil
    }

    /// The end of the request head at the start of `buffer`, as ``endOfHead(in:from:)`` finds it, or `nil` while
    /// it is incomplete; refuses a head over ``maximumHeadSize`` bytes, whatever reads brought it.
    ///
    /// An incomplete head is refused only once it is sure to go over: up to two bytes at its end (an LF, or an LF
    /// and a CR) may be the start of the empty line, which the head's length leaves out. Refusing at the limit
    /// itself turned a head of exactly 64 KiB away when a read ended inside its empty line, and let it in otherwise.
    ///
    /// - Parameters:
    ///   - buffer: The received bytes, starting with the head.
    ///   - offset: Where to start looking (see ``endOfHead(in:from:)``).
    /// - Throws: ``HTTPParseError/headersTooLarge`` for a head over the limit.
    static func requestHeadEnd(in buffer: ReceiveBuffer, from offset: Int) throws(HTTPParseError)
        -> (headLength: Int, consumed: Int)?
    {
        if let end = endOfHead(in: buffer, from: offset) {
            guard end.headLength <= maximumHeadSize else { throw .headersTooLarge }
            return end
        }
        if buffer.readableCount > maximumHeadSize + 2 { throw .headersTooLarge }
        return nil
    }

    /// Parses the request line and headers in `bytes` (which excludes the blank line ending them).
    static func parseHead(_ bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> RequestHead {
        var lines = LineIterator(bytes: bytes)
        guard let requestLine = lines.next() else { throw .malformed("empty request") }
        let parts = requestLine.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("malformed request line") }

        let method = parts[0]
        guard !method.isEmpty, method.allSatisfy(isTokenCharacter) else { throw .malformed("malformed method") }
        let target = parts[1]
        guard !target.isEmpty, target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .malformed("malformed request target")
        }
        // The forms RFC 9112 §3.2 allows: a path (`/items?q=1`), an absolute URL (`http://host/items`), `*` for
        // OPTIONS, an authority (`host:443`) for CONNECT. Anything else (`?q=1`, `items/1`, a transport that left
        // out the path) is refused, as nginx and Go's server refuse it, rather than routed as a path.
        guard isRequestTarget(target, method: method) else { throw .malformed("malformed request target") }
        let version = parts[2]
        guard version.count == 8, version.starts(with: "HTTP/1.".utf8), let minor = version.last,
            minor >= UInt8(ascii: "0"), minor <= UInt8(ascii: "9")
        else { throw .malformed("unsupported HTTP version") }

        var headers: [(name: String, value: String)] = []
        while let line = lines.next() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { throw .malformed("header without a colon") }
            let name = line[line.startIndex..<colon]
            guard !name.isEmpty, name.allSatisfy(isTokenCharacter) else { throw .malformed("malformed header name") }
            var value = line[(colon + 1)...]
            while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
            while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
            guard !value.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
                throw .malformed("malformed header value")
            }
            headers.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }
        // RFC 9112 §3.2: an HTTP/1.1 request has exactly one `Host` (a server must answer 400 to none or several);
        // an HTTP/1.0 one at most one.
        let hosts = headers.count { $0.name.utf8.count == 4 && $0.name.lowercased() == "host" }
        guard hosts == 1 || (hosts == 0 && minor == UInt8(ascii: "0")) else {
            throw .malformed(hosts == 0 ? "no Host header" : "more than one Host header")
        }
        return RequestHead(
            method: String(decoding: method, as: UTF8.self),
            target: String(decoding: target, as: UTF8.self),
            minorVersion: Int(minor - UInt8(ascii: "0")),
            headers: headers
        )
    }

    /// Whether `target` is in one of the forms RFC 9112 §3.2 allows for `method`: origin (`/…`), absolute
    /// (`scheme://…`), asterisk (`*`, OPTIONS only) or authority (`host:port`, CONNECT only).
    static func isRequestTarget(_ target: Slice<UnsafeRawBufferPointer>, method: Slice<UnsafeRawBufferPointer>) -> Bool
    {
        guard let first = target.first else { return false }
        if first == UInt8(ascii: "/") { return true }
        if target.elementsEqual("*".utf8) { return method.elementsEqual("OPTIONS".utf8) }
        if method.elementsEqual("CONNECT".utf8) { return !target.contains(UInt8(ascii: "/")) }
        // A scheme (a letter, then letters, digits, `+`, `-` or `.`), then `://`.
        guard let colon = target.firstIndex(of: UInt8(ascii: ":")), colon > target.startIndex,
            target[colon...].starts(with: "://".utf8)
        else { return false }
        let scheme = target[..<colon]
        let isLetter = { (byte: UInt8) in (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }
        return isLetter(first)
            && scheme.allSatisfy {
                isLetter($0) || (0x30...0x39).contains($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-")
                    || $0 == UInt8(ascii: ".")
            }
    }

    /// Decides how the body of `head` is delimited (RFC 9112 §6.3).
    static func framing(of head: RequestHead) throws(HTTPParseError) -> BodyFraming {
        let transferEncodings = head.headers.filter { $0.name.caseInsensitiveEquals("transfer-encoding") }
        if !transferEncodings.isEmpty {
            // Every field's codings, in order: the server decodes none but `chunked`, which is applied once, last.
            // Another one (`gzip, chunked`) was handed to the handler as if the body were plain.
            let codings = transferEncodings.flatMap { $0.value.split(separator: ",") }
                .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
                .filter { !$0.isEmpty }
            guard codings == ["chunked"] else { throw .malformed("unsupported transfer encoding") }
            return .chunked
        }
        let lengths = head.headers.filter { $0.name.caseInsensitiveEquals("content-length") }
            .flatMap { $0.value.split(separator: ",", omittingEmptySubsequences: false) }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        guard let first = lengths.first else { return .none }
        guard lengths.allSatisfy({ $0 == first }), !first.isEmpty, first.utf8.allSatisfy(isDigit),
            let length = Int(first)
        else { throw .malformed("malformed content-length") }
        return length == 0 ? .none : .contentLength(length)
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// RFC 9110 `tchar`.
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// Splits a header block on CRLF (a bare LF is accepted too), using `memchr`.
    private struct LineIterator {
        let bytes: UnsafeRawBufferPointer
        var position = 0

        mutating func next() -> UnsafeRawBufferPointer.SubSequence? {
            guard position < bytes.count, let base = bytes.baseAddress else { return nil }
            let end: Int
            if let newline = memchr(base + position, 0x0A, bytes.count - position) {
                end = base.distance(to: UnsafeRawPointer(newline))
            } else {
                end = bytes.count
            }
            var lineEnd = end
            if lineEnd > position, bytes[lineEnd - 1] == 0x0D { lineEnd -= 1 }
            let line = bytes[position..<lineEnd]
            position = end + 1
            return line
        }
    }
}

// MARK: - Chunked bodies

/// Decodes a `Transfer-Encoding: chunked` body incrementally, consuming bytes from a ``ReceiveBuffer``.
///
/// Either all at once into ``body`` (``decode(_:)``), or piece by piece (``next(from:maxBytes:)``) for a streaming
/// route. Chunk extensions and trailer fields are skipped.
struct ChunkedDecoder {
    private enum Stage {
        case size
        case data(remaining: Int)
        case dataEnd
        case trailers
        case done
    }

    /// What ``next(from:maxBytes:)`` found.
    enum Piece {
        /// Body bytes, never empty.
        case data(Data)
        /// The buffer holds no complete piece: receive more bytes, then call again.
        case needsMoreInput
        /// The body, trailers included, has been consumed.
        case end
    }

    private var stage = Stage.size
    private(set) var body = Data()

    /// The longest chunk-size line or trailer line accepted.
    private static let maximumLineLength = 8 * 1024

    /// Consumes as much of `buffer` as possible, appending the body bytes to ``body``.
    ///
    /// - Returns: `true` once the whole body, trailers included, has been consumed.
    mutating func decode(_ buffer: inout ReceiveBuffer) throws(HTTPParseError) -> Bool {
        while true {
            switch try next(from: &buffer, maxBytes: .max) {
            case .data(let data): body.append(data)
            case .needsMoreInput: return false
            case .end: return true
            }
        }
    }

    /// Consumes the framing at the start of `buffer` up to the next body bytes, then at most `maxBytes` of them.
    ///
    /// - Parameter maxBytes: The most body bytes to return; at least 1.
    mutating func next(from buffer: inout ReceiveBuffer, maxBytes: Int) throws(HTTPParseError) -> Piece {
        while true {
            switch stage {
            case .size:
                guard let lineLength = try Self.lineLength(in: buffer) else { return .needsMoreInput }
                let size = buffer.withBytes(count: lineLength) { line -> Int? in
                    // The size runs to `;` (an extension) or the line's end. White space may follow it (RFC 9112
                    // §7.1.1 allows it before an extension), never precede or split it: `1 0` is not 0x10.
                    var digits = line.prefix { $0 != UInt8(ascii: ";") }
                    while let last = digits.last, last == 0x20 || last == 0x09 { digits = digits.dropLast() }
                    guard !digits.isEmpty, digits.count <= 15, digits.allSatisfy(\.isHexDigit) else { return nil }
                    return Int(String(decoding: digits, as: UTF8.self), radix: 16)
                }
                guard let size else { throw .malformed("malformed chunk size") }
                buffer.skip(lineLength + 2)
                stage = size == 0 ? .trailers : .data(remaining: size)
            case .data(let remaining):
                guard buffer.readableCount > 0 else { return .needsMoreInput }
                let count = min(remaining, buffer.readableCount, max(1, maxBytes))
                let data = buffer.read(count)
                stage = count == remaining ? .dataEnd : .data(remaining: remaining - count)
                return .data(data)
            case .dataEnd:
                guard buffer.readableCount >= 2 else { return .needsMoreInput }
                let isCRLF = buffer.withBytes(count: 2) { $0[0] == 0x0D && $0[1] == 0x0A }
                guard isCRLF else { throw .malformed("chunk not followed by CRLF") }
                buffer.skip(2)
                stage = .size
            case .trailers:
                guard let lineLength = try Self.lineLength(in: buffer) else { return .needsMoreInput }
                buffer.skip(lineLength + 2)
                if lineLength == 0 { stage = .done }
            case .done:
                return .end
            }
        }
    }

    /// The length of the CRLF-terminated line at the start of `buffer`, or `nil` if it is incomplete.
    ///
    /// A line over ``maximumLineLength`` is refused whatever reads brought it: when one read brought it whole too
    /// (it passed then, and was refused when split), and when incomplete only once it is sure to go over (a CR at
    /// the end may be the first half of its CRLF: a line at the limit was refused when a read ended between the two).
    private static func lineLength(in buffer: ReceiveBuffer) throws(HTTPParseError) -> Int? {
        if let end = buffer.firstOffset(of: HTTPParser.lineTerminator) {
            guard end <= maximumLineLength else { throw .malformed("chunk line too long") }
            return end
        }
        let count = buffer.readableCount
        let length = count > 0 && buffer.byte(at: count - 1) == 0x0D ? count - 1 : count
        if length > maximumLineLength { throw .malformed("chunk line too long") }
        return nil
    }
}

// MARK: - Helpers

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
            UInt8(ascii: "A")...UInt8(ascii: "F"):
            true
        default:
            false
        }
    }
}

extension StringProtocol {
    /// ASCII case-insensitive equality, the comparison HTTP uses for field names and tokens.
    func caseInsensitiveEquals(_ other: some StringProtocol) -> Bool {
        let lhs = utf8
        let rhs = other.utf8
        guard lhs.count == rhs.count else { return false }
        return zip(lhs, rhs).allSatisfy { a, b in
            a == b || (a | 0x20 == b | 0x20 && (a | 0x20) >= UInt8(ascii: "a") && (a | 0x20) <= UInt8(ascii: "z"))
        }
    }
}
