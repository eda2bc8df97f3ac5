import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
@_spi(Engine) import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A hop of the core's exchange as AsyncHTTPClient takes it: a field-by-field copy of its head, no Foundation request
/// made.
enum RequestConversion {
    /// The request to send for `hop`: its method, target and header fields in order, and its body: from memory, or
    /// streamed from its file (each chunk counted by `hop.sent`, the next read once the connection took the last). With
    /// `relay`, it goes to that Unix socket (a pinned host's, see ``PinnedRoutes``), with the host's authority in its
    /// `Host` field. `eventLoop` is where a file body's writing reports its end.
    /// `writer` runs the task that writes a file or streamed body; the caller stops it when the request ends.
    static func request(
        for hop: EngineRequest, relay: String? = nil, eventLoop: any EventLoop, writer: BodyWriter = BodyWriter()
    ) throws -> HTTPClient.Request {
        let head = hop.head
        var headers = HTTPHeaders()
        headers.reserveCapacity(head.headerFields.count + 1)
        for field in head.headerFields { headers.add(name: field.name.rawName, value: field.value) }
        if relay != nil, !headers.contains(name: "Host") {
            headers.add(name: "Host", value: head.authority)
        }
        let body: HTTPClient.Body?
        switch hop.body {
        case .none:
            body = nil
        case .bytes(let data):
            body = .byteBuffer(ByteBuffer(data: data))
        case .file(let file, let length):
            body = streamed(
                FileChunks(file: file, size: length, sent: hop.sent), length: length, eventLoop: eventLoop,
                writer: writer)
        case .stream(let chunks, let length):
            // The core counts and checks the chunks; each one is taken once the connection took the last.
            body = streamed(
                chunks.map { ByteBuffer(data: $0) }, length: length, eventLoop: eventLoop, writer: writer)
        }
        let method = NIOHTTP1.HTTPMethod(rawValue: head.method.rawValue)
        if let relay {
            return try HTTPClient.Request(
                url: try target(head.path, through: relay), method: method, headers: headers, body: body)
        }
        return try HTTPClient.Request(
            url: "\(head.scheme)://\(head.authority)\(head.path)", method: method, headers: headers, body: body)
    }

    /// `path` (with its query), sent to the Unix socket at `socketPath`.
    private static func target(_ path: String, through socketPath: String) throws -> URL {
        guard let target = URL(httpURLWithSocketPath: socketPath, uri: path) else { throw HTTPClientError.invalidURL }
        return target
    }

    /// A body of `length` bytes (`nil`: sent in chunks) written chunk by chunk from `chunks`, each chunk read once
    /// the connection took the previous one. The reading runs in a task of its own: never on an event loop. A
    /// failure of `chunks` fails the request with that error.
    ///
    /// A body of known length ends with its last write, on the event loop: its end is read from `chunks` before that
    /// write, and the write's future completes the body. The server may answer as soon as it has the last byte, and
    /// AsyncHTTPClient fails the request with `requestStreamCancelled` when the answer's end is read before the body's
    /// end was told; ending the body from the task after the last write left that window open (an upload failed
    /// now and then when its connection's loop ran the request's callbacks too).
    private static func streamed<Chunks: AsyncSequence & Sendable>(
        _ chunks: Chunks, length: Int64?, eventLoop: any EventLoop, writer bodyWriter: BodyWriter
    ) -> HTTPClient.Body where Chunks.Element == ByteBuffer {
        .stream(contentLength: length) { writer in
            let written = eventLoop.makePromise(of: Void.self)
            bodyWriter.start {
                do {
                    try await write(chunks, length: length, to: writer, ending: written)
                } catch {
                    written.fail(error)
                }
            }
            return written.futureResult
        }
    }

    /// Writes `chunks` to `writer` and completes `written` when the body has ended, with the last write when `length`
    /// is known (``streamed(_:length:eventLoop:writer:)``). A failure is thrown: the caller fails `written` with it.
    static func write<Chunks: AsyncSequence>(
        _ chunks: Chunks, length: Int64?, to writer: HTTPClient.Body.StreamWriter,
        ending written: EventLoopPromise<Void>
    ) async throws where Chunks.Element == ByteBuffer {
        var iterator = chunks.makeAsyncIterator()
        var sent: Int64 = 0
        var next = try await iterator.next()
        while let chunk = next {
            sent += Int64(chunk.readableBytes)
            if let length, sent >= length {
                // The last chunk the length announces: the end is read first, so that the body ends with this write.
                next = try await iterator.next()
                if next == nil { return writer.write(.byteBuffer(chunk)).cascade(to: written) }
                // More than announced (the core's counting fails that first; a file read stops at its length):
                // AsyncHTTPClient fails the request when it gets more bytes than the length.
                try await writer.write(.byteBuffer(chunk)).get()
            } else {
                try await writer.write(.byteBuffer(chunk)).get()
                next = try await iterator.next()
            }
        }
        written.succeed(())
    }
}

/// The task writing a hop's file or streamed body. AsyncHTTPClient stops asking for parts when its request ends,
/// but a task waiting for the next chunk of a producer would wait on: the engine stops it when the request ends,
/// however it ends (an answer before the upload's end, a failure, the deadline), which lets the producer go.
final class BodyWriter: Sendable {
    private let state = NIOLockedValueBox<(task: Task<Void, Never>?, stopped: Bool)>((nil, false))

    /// Runs `work` in a task of its own, or not at all once stopped.
    func start(_ work: @escaping @Sendable () async -> Void) {
        state.withLockedValue { state in
            guard !state.stopped else { return }
            state.task = Task { await work() }
        }
    }

    /// Cancels the writing task.
    func stop() {
        let task = state.withLockedValue { state in
            state.stopped = true
            return state.task
        }
        task?.cancel()
    }
}

/// A request body read from a file chunk by chunk, each chunk read when the connection is ready for it.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    /// How much of the file is read at a time.
    static let chunkSize = 64 << 10

    let file: URL
    /// The length announced: the reading stops there, even if the file grew meanwhile.
    let size: Int64
    /// Told the length of each chunk handed over.
    let sent: @Sendable (Int64) -> Void

    func makeAsyncIterator() -> Iterator {
        Iterator(file: file, remaining: size, sent: sent)
    }

    struct Iterator: AsyncIteratorProtocol {
        let file: URL
        var remaining: Int64
        let sent: @Sendable (Int64) -> Void
        var handle: FileHandle?

        init(file: URL, remaining: Int64, sent: @escaping @Sendable (Int64) -> Void) {
            self.file = file
            self.remaining = remaining
            self.sent = sent
        }

        mutating func next() async throws -> ByteBuffer? {
            guard remaining > 0 else {
                try? handle?.close()
                handle = nil
                return nil
            }
            if handle == nil { handle = try FileHandle(forReadingFrom: file) }
            let chunk = try handle?.read(upToCount: Int(Swift.min(Int64(FileChunks.chunkSize), remaining))) ?? Data()
            guard !chunk.isEmpty else {
                // The file shrank: AsyncHTTPClient reports the body shorter than announced.
                try? handle?.close()
                handle = nil
                return nil
            }
            remaining -= Int64(chunk.count)
            sent(Int64(chunk.count))
            return ByteBuffer(data: chunk)
        }
    }
}
