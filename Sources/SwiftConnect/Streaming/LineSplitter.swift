import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Android)
    import Android
#endif

/// Splits a byte stream into lines as its chunks arrive: the framing of ``ResponseLines`` and
/// ``ResponseJSONLines``.
///
/// A line ends with LF or CRLF; the CRLF may be split between two chunks (a CR ending one chunk and an LF starting
/// the next are one line end). A lone CR, not followed by an LF, is not a line end: it stays in the line, as in
/// `String.split(separator: "\n")` after dropping the CR of each CRLF. (Server-sent events end lines with a lone CR
/// too: ``ServerSentEventParser`` has its own splitting.)
///
/// Each line is decoded as UTF-8 once it is complete, invalid bytes becoming U+FFFD, so a character whose bytes
/// are split between chunks decodes whole. The bytes of a line begun in one chunk wait in a buffer; a new chunk is
/// searched only for its own line feeds (with `memchr`), so a long line costs time in proportion to its length.
///
/// A line longer than ``maximumLineLength`` bytes (not counting its line end) makes ``append(_:)`` throw a
/// ``ConnectError`` of kind ``ConnectError/Kind/responseTooLarge``, the kind of the other memory limits of a
/// response, rather than holding ever more bytes; after that, stop using the splitter.
///
/// ```swift
/// var splitter = LineSplitter()
/// try splitter.append(Data("first\r\nsec".utf8))  // ["first"]
/// try splitter.append(Data("ond\nthi".utf8))  // ["second"]
/// splitter.finish()  // "thi"
/// ```
struct LineSplitter {
    static let lineFeed: UInt8 = 0x0A
    static let carriageReturn: UInt8 = 0x0D

    /// The longest line accepted, in bytes without its line end.
    let maximumLineLength: Int
    /// The start of the line that the chunks so far have not ended: no LF in it.
    private var pending: [UInt8] = []

    /// Creates a splitter.
    ///
    /// - Parameter maximumLineLength: The longest line accepted, in bytes without its line end (1 MiB by default).
    init(maximumLineLength: Int = 1 << 20) {
        self.maximumLineLength = max(0, maximumLineLength)
    }

    /// The lines that `chunk` completes, decoded as UTF-8, without their line ends.
    ///
    /// - Parameter chunk: The next bytes of the stream.
    /// - Returns: The lines completed, in order; often none, or the end of one begun in earlier chunks.
    /// - Throws: A ``ConnectError`` of kind ``ConnectError/Kind/responseTooLarge`` for a line longer than
    ///   ``maximumLineLength``.
    mutating func append(_ chunk: Data) throws -> [String] {
        var lines: [String] = []
        try append(chunk) { lines.append(String(decoding: $0, as: UTF8.self)) }
        return lines
    }

    /// Calls `body` with the bytes of each line that `chunk` completes, without its line end.
    ///
    /// When it throws (a line too long, or an error of `body`), `body` has seen the lines before that line.
    ///
    /// - Parameters:
    ///   - chunk: The next bytes of the stream.
    ///   - body: Called for each line, in order; the bytes are valid only during the call.
    mutating func append(_ chunk: Data, eachLine body: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
        try chunk.withUnsafeBytes { raw in
            let bytes = raw.assumingMemoryBound(to: UInt8.self)
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
            var start = 0
            while start < bytes.count,
                let found = memchr(base + start, Int32(LineSplitter.lineFeed), bytes.count - start)
            {
                let end = UnsafeRawPointer(base).distance(to: UnsafeRawPointer(found))
                try completeLine(with: UnsafeBufferPointer(rebasing: bytes[start..<end]), body)
                start = end + 1
            }
            guard start < bytes.count else { return }
            if let failure = keep(tail: UnsafeBufferPointer(rebasing: bytes[start...])) { throw failure }
        }
    }

    /// Keeps `tail`, the start of a line no LF has ended yet, for the next chunk; the failure when the line is
    /// already too long.
    private mutating func keep(tail: UnsafeBufferPointer<UInt8>) -> ConnectError? {
        // A CR at the end may be the first half of a CRLF: it does not count yet.
        let length = pending.count + tail.count - (tail.last == LineSplitter.carriageReturn ? 1 : 0)
        guard length <= maximumLineLength else { return lineTooLong() }
        pending.append(contentsOf: tail)
        return nil
    }

    /// The last line when the stream ended without a line end after it, decoded as UTF-8; `nil` when the stream
    /// ended with a line end (or was empty). A CR at its very end stays in it, as a lone CR does.
    ///
    /// Never throws: ``append(_:)`` refused the line if it was too long (a CR at the end, which did not count as
    /// long as it could have started a CRLF, can make it one byte longer than ``maximumLineLength``). Afterwards the
    /// splitter starts afresh.
    mutating func finish() -> String? {
        var line: String?
        finish { line = String(decoding: $0, as: UTF8.self) }
        return line
    }

    /// Calls `body` with the bytes of the last line when the stream ended without a line end after it.
    ///
    /// - Parameter body: Called at most once; the bytes are valid only during the call.
    mutating func finish(lastLine body: (UnsafeBufferPointer<UInt8>) throws -> Void) rethrows {
        guard !pending.isEmpty else { return }
        defer { pending = [] }
        try pending.withUnsafeBufferPointer { try body($0) }
    }

    /// The lines `chunk` completes, as a batch of views over its bytes (``LineBatch``): the first, when it began in
    /// earlier chunks, gathered from `pending`; the bounds of the others, which lie in `chunk`.
    ///
    /// - Returns: The lines before any line too long, and the failure of that line (then stop using the splitter).
    mutating func batch(of chunk: Data) -> (batch: LineBatch, failure: ConnectError?) {
        var first: Data?
        var regionStart = 0
        var lineEnds: [Int] = []
        var failure: ConnectError?
        chunk.withUnsafeBytes { raw in
            let bytes = raw.assumingMemoryBound(to: UInt8.self)
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
            var start = 0
            while start < bytes.count,
                let found = memchr(base + start, Int32(LineSplitter.lineFeed), bytes.count - start)
            {
                let end = UnsafeRawPointer(base).distance(to: UnsafeRawPointer(found))
                if pending.isEmpty {
                    let hasCR = end > start && bytes[end - 1] == LineSplitter.carriageReturn
                    guard end - start - (hasCR ? 1 : 0) <= maximumLineLength else {
                        failure = lineTooLong()
                        return
                    }
                    if lineEnds.isEmpty {
                        regionStart = start
                        // One allocation for most chunks: lines of 48 bytes or more fit.
                        lineEnds.reserveCapacity((bytes.count - start) / 48 + 4)
                    }
                    lineEnds.append(end << 1 | (hasCR ? 1 : 0))
                } else {
                    // A line begun in earlier chunks: its bytes are gathered, once.
                    pending.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<end]))
                    if pending.last == LineSplitter.carriageReturn { pending.removeLast() }
                    guard pending.count <= maximumLineLength else {
                        failure = lineTooLong()
                        return
                    }
                    first = Data(pending)
                    LineSplitter.empty(&pending)
                }
                start = end + 1
            }
            guard start < bytes.count else { return }
            failure = keep(tail: UnsafeBufferPointer(rebasing: bytes[start...]))
        }
        return (LineBatch(chunk: chunk, regionStart: regionStart, lineEnds: lineEnds, first: first), failure)
    }

    /// The bytes of the last line when the stream ended without a line end after it (see ``finish()``); `nil`
    /// otherwise. Afterwards the splitter starts afresh.
    mutating func finishData() -> Data? {
        guard !pending.isEmpty else { return nil }
        defer { pending = [] }
        return Data(pending)
    }

    /// Ends the line made of `pending` and `piece` (the bytes before an LF), without the CR of a CRLF, and hands
    /// it to `body`.
    private mutating func completeLine(
        with piece: UnsafeBufferPointer<UInt8>,
        _ body: (UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws {
        if pending.isEmpty {
            // The whole line is in this chunk: no copy.
            var line = piece
            if line.last == LineSplitter.carriageReturn { line = UnsafeBufferPointer(rebasing: line.dropLast()) }
            guard line.count <= maximumLineLength else { throw lineTooLong() }
            try body(line)
            return
        }
        pending.append(contentsOf: piece)
        if pending.last == LineSplitter.carriageReturn { pending.removeLast() }
        guard pending.count <= maximumLineLength else { throw lineTooLong() }
        try pending.withUnsafeBufferPointer { try body($0) }
        LineSplitter.empty(&pending)
    }

    private func lineTooLong() -> ConnectError {
        ConnectError.lineTooLong(limit: maximumLineLength)
    }

    /// Empties a line buffer, keeping its storage unless a long line made it large.
    static func empty(_ buffer: inout [UInt8]) {
        if buffer.capacity > 64 << 10 {
            buffer = []
        } else {
            buffer.removeAll(keepingCapacity: true)
        }
    }
}

extension ConnectError {
    /// A line of a streamed body is longer than `limit` bytes: the failure of ``ResponseLines``,
    /// ``ResponseJSONLines`` and ``ResponseEvents`` rather than holding ever more bytes for it.
    static func lineTooLong(limit: Int) -> ConnectError {
        ConnectError(
            .responseTooLarge,
            message: "a line of the stream is longer than the limit of \(limit) bytes "
                + "(raise maximumLineLength if the server sends lines that long)"
        )
    }
}
