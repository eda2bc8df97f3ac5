import Dispatch
import Foundation

/// The bytes of a one-shot request body, chunk by chunk, as an engine sends them: read from the `InputStream` or
/// the async sequence the body was made from (``ConnectRequest/OneShotStream``), the next chunk only when the engine
/// asks for it, so a body larger than memory streams with the connection's pace.
///
/// The core hands it to an engine as the body of a hop (`EngineRequest.Body.stream`). It can be read once: a second
/// iteration reads what the first left, which is nothing once it ended. Errors are the core's: a stream that fails
/// (`read` returns -1, the sequence throws) ends the body with ``ConnectError/Kind/invalidRequest``
/// (``ConnectError/InvalidRequestReason/bodyEncodingFailed(_:)``), the source's error kept as its underlying error,
/// so the call fails instead of sending a shorter body; a body longer or shorter than the length it announced fails
/// the same way.
///
/// ```swift
/// for try await chunk in chunks { try await connection.write(chunk) }
/// ```
public struct RequestBodyChunks: AsyncSequence, Sendable {
    /// A chunk of the body, never empty.
    public typealias Element = Data

    private let make: @Sendable () -> Iterator

    init(make: @escaping @Sendable () -> Iterator) {
        self.make = make
    }

    /// Starts reading: the source is opened on the first ``Iterator/next()``.
    public func makeAsyncIterator() -> Iterator { make() }

    /// Reads the chunks in order.
    public struct Iterator: AsyncIteratorProtocol {
        private let nextChunk: () async throws -> Data?

        init(_ nextChunk: @escaping () async throws -> Data?) {
            self.nextChunk = nextChunk
        }

        /// The next chunk, or `nil` at the end.
        ///
        /// - Throws: A ``ConnectError`` of kind ``ConnectError/Kind/invalidRequest`` when the source failed or its
        ///   length was not the one announced.
        public mutating func next() async throws -> Data? { try await nextChunk() }
    }
}

extension RequestBodyChunks {
    /// How much of an `InputStream` is read at a time.
    static let inputStreamChunkSize = 64 << 10

    /// The chunks of `stream`, read `inputStreamChunkSize` bytes at a time, opened on the first read and closed at
    /// the end.
    static func reading(_ stream: InputStream) -> @Sendable () -> Iterator {
        // The one iterator made from it reads the stream, one task at a time but not always on the same thread: each
        // read holds the stream's own lock, so that hand-over is checked, not assumed (`InputStream` is not Sendable).
        let guarded = Protected(stream)
        return {
            var opened = false
            var ended = false
            var buffer = [UInt8](repeating: 0, count: inputStreamChunkSize)
            return Iterator {
                guard !ended else { return nil }
                return try guarded.withLock { stream in
                    if !opened {
                        opened = true
                        stream.open()
                    }
                    let count = stream.read(&buffer, maxLength: buffer.count)
                    if count > 0 { return Data(buffer[0..<count]) }
                    ended = true
                    stream.close()
                    guard count == 0 else {
                        let reason = stream.streamError.map { "\($0)" } ?? "status \(stream.streamStatus.rawValue)"
                        throw Self.failure(
                            "the body's stream could not be read: \(reason)", underlying: stream.streamError)
                    }
                    return nil
                }
            }
        }
    }

    /// The chunks of `sequence`, empty ones skipped, a failure made the core's.
    static func reading<Chunks: AsyncSequence & Sendable>(_ sequence: Chunks) -> @Sendable () -> Iterator
    where Chunks.Element == Data {
        {
            var iterator = sequence.makeAsyncIterator()
            var ended = false
            return Iterator {
                guard !ended else { return nil }
                do {
                    while let chunk = try await iterator.next() {
                        if !chunk.isEmpty { return chunk }
                    }
                    ended = true
                    return nil
                } catch {
                    ended = true
                    // The reading was stopped (the call cancelled, its deadline, the engine letting the body go): a
                    // cancellation, as the exchange reports it. A `CancellationError` of the sequence's own (its
                    // producer's task cancelled) while the body is still wanted is the body failing, like any other.
                    if error is CancellationError, Task.isCancelled { throw error }
                    throw Self.failure("the body's sequence failed: \(error)", underlying: error)
                }
            }
        }
    }

    /// These chunks, each told to `sent` as it is taken, checked against `length` when one was announced.
    package func counted(announcing length: Int64?, sent: @escaping @Sendable (Int64) -> Void) -> RequestBodyChunks {
        RequestBodyChunks { [make] in
            var iterator = make()
            var total: Int64 = 0
            return Iterator {
                guard let chunk = try await iterator.next() else {
                    if let length, total != length {
                        throw Self.failure(
                            "the body's stream ended after \(total) bytes, but announced \(length)", underlying: nil)
                    }
                    return nil
                }
                total += Int64(chunk.count)
                if let length, total > length {
                    throw Self.failure(
                        "the body's stream gave more than the \(length) bytes it announced", underlying: nil)
                }
                sent(Int64(chunk.count))
                return chunk
            }
        }
    }

    /// The error a failing body ends with.
    static func failure(_ detail: String, underlying: (any Error)?) -> ConnectError {
        var error = ConnectError.invalidRequest(.bodyEncodingFailed(detail))
        error.underlyingError = underlying
        return error
    }
}

// MARK: - The chunks as an InputStream, for URLSession

/// Reads ``RequestBodyChunks`` from a thread that may block (URLSession's, reading a body stream), each chunk
/// fetched by a task when the thread asks for it: the chunks' pace, no read-ahead beyond one chunk.
final class BlockingChunkReader: Sendable {
    private struct State: Sendable {
        /// The fetching task waits here for the next request of a chunk.
        var demand: CheckedContinuation<Bool, Never>?
        /// A chunk was asked for before the task waited.
        var wanted = false
        /// What the task fetched, not yet taken.
        var fetched: Result<Data?, any Error>?
        /// The end (`nil`) or failure, once reached: every later read gets it again.
        var end: Result<Data?, any Error>?
        var cancelled = false
        var task: Task<Void, Never>?
    }

    private let state = Protected(State())
    private let ready = DispatchSemaphore(value: 0)
    private let chunks: RequestBodyChunks

    init(_ chunks: RequestBodyChunks) {
        self.chunks = chunks
    }

    /// The next chunk, `nil` at the end: blocks the calling thread until the chunk is there. Never call it from a
    /// task of Swift's concurrency pool.
    func next() -> Result<Data?, any Error> {
        let (end, demand, start) = state.withLock {
            state -> (Result<Data?, any Error>?, CheckedContinuation<Bool, Never>?, Bool) in
            if let end = state.end { return (end, nil, false) }
            let start = state.task == nil
            if let demand = state.demand {
                state.demand = nil
                return (nil, demand, start)
            }
            state.wanted = true
            return (nil, nil, start)
        }
        if let end { return end }
        if start { startFetching() }
        demand?.resume(returning: true)
        ready.wait()
        return state.withLock { state in
            let fetched = state.fetched ?? state.end ?? .success(nil)
            state.fetched = nil
            if case .success(.some) = fetched {} else { state.end = fetched }
            return fetched
        }
    }

    /// Stops reading: a read waiting now or later fails with a cancellation, and the chunks are let go.
    func cancel() {
        let (demand, task, wasEnded) = state.withLock { state in
            defer {
                state.cancelled = true
                state.demand = nil
                if state.end == nil { state.end = .failure(CancellationError()) }
            }
            return (state.demand, state.task, state.end != nil)
        }
        demand?.resume(returning: false)
        task?.cancel()
        // A read waiting for a chunk the task will never fetch.
        if !wasEnded { ready.signal() }
    }

    private func startFetching() {
        let task = Task { [chunks] in
            var iterator = chunks.makeAsyncIterator()
            while await self.waitForDemand() {
                let result: Result<Data?, any Error>
                do {
                    result = .success(try await iterator.next())
                } catch {
                    result = .failure(error)
                }
                let delivered = state.withLock { state -> Bool in
                    guard !state.cancelled else { return false }
                    state.fetched = result
                    return true
                }
                guard delivered else { return }
                ready.signal()
                guard case .success(.some) = result else { return }
            }
        }
        // A cancel that came while the task was being made found no task to cancel: it is cancelled here.
        let cancelled = state.withLock { state -> Bool in
            state.task = task
            return state.cancelled
        }
        if cancelled { task.cancel() }
    }

    /// Waits until a chunk is asked for: `false` once cancelled.
    private func waitForDemand() async -> Bool {
        await withCheckedContinuation { continuation in
            let answer = state.withLock { state -> Bool? in
                if state.cancelled { return false }
                if state.wanted {
                    state.wanted = false
                    return true
                }
                state.demand = continuation
                return nil
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }
}

extension BlockingChunkReader {
    /// Why the chunks failed, once they did: `nil` while they are read, at their end, and after a cancellation.
    var failure: (any Error)? {
        state.withLock { state in
            guard case .failure(let error)? = state.end, !(error is CancellationError) else { return nil }
            return error
        }
    }
}

#if !canImport(FoundationNetworking)
    extension RequestBodyChunks {
        /// The chunks as an `InputStream` URLSession reads from: the input of a bound stream pair, its output written
        /// from a thread of its own as URLSession reads (Apple's recommended way to stream an upload). A failed chunk
        /// calls `onFailure` (the hop cancels its task) rather than closing the pair, which would end the body short
        /// as if it were whole.
        static func inputStream(_ reader: BlockingChunkReader, onFailure: @escaping @Sendable () -> Void)
            -> InputStream
        {
            var input: InputStream?
            var output: OutputStream?
            Stream.getBoundStreams(withBufferSize: inputStreamChunkSize, inputStream: &input, outputStream: &output)
            guard let input, let output else {
                // Never seen. A stream that fails to open fails the task, where an empty one would send an empty body.
                reader.cancel()
                return InputStream(fileAtPath: "/nonexistent/swiftconnect-body") ?? InputStream(data: Data())
            }
            // The output is handed to the one thread that writes it; it holds the stream's own lock while it
            // writes, so the hand-over is checked, not assumed (`OutputStream` is not Sendable).
            let guarded = Protected(output)
            Thread.detachNewThread {
                guarded.withLock { stream in Self.write(reader, to: stream, onFailure: onFailure) }
            }
            return input
        }

        /// Writes every chunk to `stream`, blocking while the pair's buffer is full; closes the stream at the end.
        private static func write(
            _ reader: BlockingChunkReader, to stream: OutputStream, onFailure: @Sendable () -> Void
        ) {
            stream.open()
            while true {
                switch reader.next() {
                case .success(let chunk?):
                    var offset = 0
                    while offset < chunk.count {
                        let written = chunk.withUnsafeBytes { bytes in
                            stream.write(
                                bytes.baseAddress!.advanced(by: offset).assumingMemoryBound(to: UInt8.self),
                                maxLength: chunk.count - offset)
                        }
                        guard written > 0 else {
                            // URLSession stopped reading (the task ended): nothing more to write.
                            reader.cancel()
                            stream.close()
                            return
                        }
                        offset += written
                    }
                case .success(nil):
                    stream.close()
                    return
                case .failure:
                    onFailure()
                    return
                }
            }
        }
    }
#endif
