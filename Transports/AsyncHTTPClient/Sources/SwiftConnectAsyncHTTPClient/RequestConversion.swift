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
        case .bytes(let data) where data.count > sliceSize:
            body = streamed(DataSlices(data: data), length: Int64(data.count), eventLoop: eventLoop, writer: writer)
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

    /// The most bytes of a body from memory written at once (``DataSlices``).
    static let sliceSize = 64 << 10

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
            bodyWriter.start(ending: written) { ending in
                try await write(chunks, length: length, to: writer, ending: ending)
            }
            return written.futureResult
        }
    }

    /// Writes `chunks` to `writer` and completes `written` when the body has ended, with the last write when `length`
    /// is known (``streamed(_:length:eventLoop:writer:)``). A failure is thrown: the caller fails `written` with it.
    /// A cancelled task stops at once, even while AsyncHTTPClient holds a write back (``completion(of:)``).
    static func write<Chunks: AsyncSequence>(
        _ chunks: Chunks, length: Int64?, to writer: HTTPClient.Body.StreamWriter,
        ending written: EventLoopPromise<Void>
    ) async throws where Chunks.Element == ByteBuffer {
        var iterator = chunks.makeAsyncIterator()
        var sent: Int64 = 0
        var next = try await iterator.next()
        while let chunk = next {
            // Stopped (an early answer, the request's end): nothing more goes to AsyncHTTPClient.
            try Task.checkCancellation()
            sent += Int64(chunk.readableBytes)
            if let length, sent >= length {
                // The last chunk the length announces: the end is read first, so that the body ends with this write.
                next = try await iterator.next()
                try Task.checkCancellation()
                if next == nil {
                    // Kept until it completes, as in `completion(of:)`.
                    let last = writer.write(.byteBuffer(chunk))
                    last.whenComplete { result in withExtendedLifetime(last) { written.completeWith(result) } }
                    return
                }
                // More than announced (the core's counting fails that first; a file read stops at its length):
                // AsyncHTTPClient fails the request when it gets more bytes than the length.
                try await completion(of: writer.write(.byteBuffer(chunk)))
            } else {
                try await completion(of: writer.write(.byteBuffer(chunk)))
                next = try await iterator.next()
            }
        }
        written.succeed(())
    }

    /// Waits for the future of a write: the connection took the chunk, or AsyncHTTPClient makes the writer wait (its
    /// back-pressure). A cancelled task stops waiting at once, with `CancellationError`: `EventLoopFuture.get()`
    /// would wait on, and AsyncHTTPClient never completes the future of a body it stopped taking (``BodyWriter``).
    ///
    /// The future is kept until it completes: a write made on the request's event loop (a task executor there) gets
    /// AsyncHTTPClient's own promise, which it lets go of without completing when the request ends while the body
    /// waits, and NIO's debug builds trap when an unfulfilled promise is released. (Off the loop, NIO's `flatSubmit`
    /// keeps it the same way.)
    static func completion(of write: EventLoopFuture<Void>) async throws {
        let waiting = NIOLockedValueBox(WriteWait.notYet)
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                let cancelled = waiting.withLockedValue { waiting -> Bool in
                    guard case .notYet = waiting else { return true }
                    waiting = .waiting(continuation)
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
                write.whenComplete { result in
                    withExtendedLifetime(write) { waiting.withLockedValue { $0.end() }?.resume(with: result) }
                }
            }
        } onCancel: {
            waiting.withLockedValue { $0.end() }?.resume(throwing: CancellationError())
        }
    }

    /// Where a wait for a write is.
    private enum WriteWait {
        /// Not waiting yet.
        case notYet
        /// Waiting.
        case waiting(UnsafeContinuation<Void, any Error>)
        /// Resumed, or cancelled before it waited.
        case ended

        /// Ends the wait: the continuation to resume, if it is still waiting.
        mutating func end() -> UnsafeContinuation<Void, any Error>? {
            defer { self = .ended }
            guard case .waiting(let continuation) = self else { return nil }
            return continuation
        }
    }
}

/// The task writing a hop's file or streamed body, and the end of that body as AsyncHTTPClient waits for it.
///
/// AsyncHTTPClient stops asking for parts when its request ends, but a task waiting for the next chunk of a producer
/// would wait on: the engine stops it when the request ends, however it ends (an answer after the upload's end, a
/// failure, the deadline), which lets the producer go.
///
/// An answer of status 300 or more that arrives while the body is still being sent (a 413, a 401, a 307) is the end
/// of the upload: AsyncHTTPClient sends no more of the body and never asks for the rest, yet it ends the request only
/// once the body has ended (AsyncHTTPClient 1.37: `HTTPRequestStateMachine` pauses the body for good, `RequestBag`
/// waits for its end). The writing stops at once (``answeredEarly()``), which lets the source go (a file closed, a
/// sequence released); the body ends once the answer has arrived whole (``endAfterAnswer(on:)``), failed with
/// `requestStreamCancelled`, which the response's delivery takes as the end of the upload. Ended earlier,
/// AsyncHTTPClient would cut the answer short: a body of known length is shorter than announced
/// (`bodyLengthMismatch`), and a chunked one would go out as a whole one.
final class BodyWriter: Sendable {
    private struct State {
        var task: Task<Void, Never>?
        /// What AsyncHTTPClient waits for to end the body: `nil` before the writing starts and once the body ended.
        var end: EventLoopPromise<Void>?
        var stopped = false
        /// Whether an answer of 300 or more arrived while the body was being sent: the writing no longer ends it.
        var answeredEarly = false
    }

    private let state = NIOLockedValueBox(State())

    /// Runs `work` in a task of its own, with the promise it completes when the body has ended (or fails with the
    /// body's failure); `end` is what AsyncHTTPClient waits for. Once stopped, `end` fails at once and nothing runs.
    func start(
        ending end: EventLoopPromise<Void>, _ work: @escaping @Sendable (EventLoopPromise<Void>) async throws -> Void
    ) {
        let body = end.futureResult.eventLoop.makePromise(of: Void.self)
        body.futureResult.whenComplete { result in self.writingEnded(result) }
        let started = state.withLockedValue { state -> Bool in
            guard !state.stopped else { return false }
            state.end = end
            state.task = Task {
                do {
                    try await work(body)
                } catch {
                    body.fail(error)
                }
            }
            return true
        }
        if !started {
            end.fail(CancellationError())
            body.fail(CancellationError())
        }
    }

    /// The writing ended the body, or failed: AsyncHTTPClient is told, unless an early answer ends the body instead.
    private func writingEnded(_ result: Result<Void, any Error>) {
        let end = state.withLockedValue { state -> EventLoopPromise<Void>? in
            guard !state.answeredEarly else { return nil }
            defer { state.end = nil }
            return state.end
        }
        end?.completeWith(result)
    }

    /// An answer of 300 or more arrived: if the body is still being sent, the writing stops at once and the body waits
    /// for ``endAfterAnswer(on:)`` (or ``stop()``) to end. Returns whether the body was still being sent.
    func answeredEarly() -> Bool {
        let (early, task) = state.withLockedValue { state -> (Bool, Task<Void, Never>?) in
            guard state.end != nil, !state.answeredEarly else { return (false, nil) }
            state.answeredEarly = true
            return (true, state.task)
        }
        task?.cancel()
        return early
    }

    /// Ends the body of a request answered early, once the answer has arrived whole: on the loop's next turn, never
    /// from within a call of AsyncHTTPClient's. The future completes after it: AsyncHTTPClient, waiting for it,
    /// cannot end the request before the body's end is told (it would release the promise of a write it holds back
    /// without completing it).
    func endAfterAnswer(on loop: any EventLoop) -> EventLoopFuture<Void> {
        let end = state.withLockedValue { state -> EventLoopPromise<Void>? in
            defer { state.end = nil }
            return state.end
        }
        guard let end else { return loop.makeSucceededVoidFuture() }
        return end.futureResult.eventLoop.submit { end.fail(HTTPClientError.requestStreamCancelled) }.hop(to: loop)
    }

    /// Stops the writing, however the request ended or is ending: a read or a write the task waits for is cancelled,
    /// and a body AsyncHTTPClient still waits for fails (before the request is cancelled, it completes the promise of
    /// a write held back).
    func stop() {
        let (task, end) = state.withLockedValue { state -> (Task<Void, Never>?, EventLoopPromise<Void>?) in
            state.stopped = true
            defer { state.end = nil }
            return (state.task, state.end)
        }
        task?.cancel()
        end?.fail(CancellationError())
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
            // Opened as the core opens a file it reads: without waiting, and refused unless it is a regular file. The
            // file is opened here, when the connection wants the body, well after its length was read: a pipe put in
            // its place meanwhile would hold a thread of the shared pool in `open` until a writer came.
            if handle == nil { handle = try MultipartFormData.openRegularFile(file) }
            let chunk =
                try handle.map { try Self.read(upTo: Int(Swift.min(Int64(FileChunks.chunkSize), remaining)), from: $0) }
                ?? Data()
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

        /// Up to `count` bytes, empty at the end of the file, a read error thrown. `read(upToCount:)` needs macOS
        /// 10.15.4, iOS 13.4, tvOS 13.4 and watchOS 6.2, newer than the package's oldest systems; before them only
        /// `readData(ofLength:)` exists, which raises an Objective-C exception on an error.
        private static func read(upTo count: Int, from handle: FileHandle) throws -> Data {
            if #available(macOS 10.15.4, iOS 13.4, tvOS 13.4, watchOS 6.2, *) {
                return try handle.read(upToCount: count) ?? Data()
            } else {
                return handle.readData(ofLength: count)
            }
        }
    }
}

/// A body from memory longer than ``RequestConversion/sliceSize``, in slices of that size, written as a stream's chunks
/// are (each once the connection took the last). Not written as one buffer: AsyncHTTPClient reports a body written
/// whole only once its last byte is gone, so a large upload on a slow link said nothing for its whole length (no
/// progress, and the idle timeout fired while bytes flowed). Not written on the event loop, one slice's write chained
/// on the last's: a server answering early (an empty `401` before the body was read) left AsyncHTTPClient holding a
/// write back, waiting for a body's end nobody would write (``BodyWriter`` ends it), so the call waited for its
/// deadline, and the held write kept the body in memory.
struct DataSlices: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    let data: Data

    func makeAsyncIterator() -> Iterator { Iterator(data: data, offset: data.startIndex) }

    struct Iterator: AsyncIteratorProtocol {
        let data: Data
        var offset: Int

        mutating func next() async -> ByteBuffer? {
            guard offset < data.endIndex else { return nil }
            let end = Swift.min(offset + RequestConversion.sliceSize, data.endIndex)
            defer { offset = end }
            return ByteBuffer(data: data[offset..<end])
        }
    }
}
