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

    private let make: @Sendable (ReadingStop) -> Iterator
    /// What ends the reading of an async sequence once the exchange that sends these chunks is over.
    private let stop: ReadingStop

    init(stop: ReadingStop = ReadingStop(), make: @escaping @Sendable (ReadingStop) -> Iterator) {
        self.stop = stop
        self.make = make
    }

    /// Starts reading: the source is opened on the first ``Iterator/next()``.
    public func makeAsyncIterator() -> Iterator { make(stop) }

    /// These chunks, read until `stop` is told the exchange is over.
    package func stopped(by stop: ReadingStop) -> RequestBodyChunks {
        RequestBodyChunks(stop: stop, make: make)
    }

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
    static func reading(_ stream: InputStream) -> @Sendable (ReadingStop) -> Iterator {
        // The one iterator made from it reads the stream, one task at a time but not always on the same thread: each
        // read holds the stream's own lock, so that hand-over is checked, not assumed (`InputStream` is not Sendable).
        // A read never waits for a producer, so there is nothing to tell when the exchange stops.
        let guarded = Protected(stream)
        return { _ in
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

    /// The chunks of `sequence`, empty ones skipped, a failure made the core's, its producer told when `stop` ends
    /// the exchange (``SequenceReader``).
    static func reading<Chunks: AsyncSequence & Sendable>(_ sequence: Chunks) -> @Sendable (ReadingStop) -> Iterator
    where Chunks.Element == Data {
        { stop in
            let reader = SequenceReader(sequence)
            // Weakly: an engine that lets the body go before the exchange ends releases the source then (`deinit`).
            stop.onStop { [weak reader] in reader?.stop() }
            return Iterator { try await reader.next() }
        }
    }

    /// These chunks, each told to `sent` as it is taken, checked against `length` when one was announced.
    package func counted(announcing length: Int64?, sent: @escaping @Sendable (Int64) -> Void) -> RequestBodyChunks {
        RequestBodyChunks(stop: stop) { [make] stop in
            var iterator = make(stop)
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

// MARK: - Telling an async sequence's producer that the body is no longer wanted

/// Tells the readers of a one-shot body's async sequence that the exchange sending it is over (ended, failed or
/// cancelled), whatever its engine is doing then: waiting for the connection to take a chunk, or gone.
package final class ReadingStop: Sendable {
    private let state = Protected<(stopped: Bool, readers: [@Sendable () -> Void])>((false, []))

    package init() {}

    /// Runs `stop` when the exchange is over, at once if it is already.
    func onStop(_ stop: @escaping @Sendable () -> Void) {
        let stopped = state.withLock { state -> Bool in
            if !state.stopped { state.readers.append(stop) }
            return state.stopped
        }
        if stopped { stop() }
    }

    /// The exchange is over: every reader made so far, and any made later, stops.
    package func stop() {
        let readers = state.withLock { state -> [@Sendable () -> Void] in
            state.stopped = true
            defer { state.readers = [] }
            return state.readers
        }
        for reader in readers { reader() }
    }
}

/// Reads a one-shot body's async sequence for its engine, one chunk at a time, and ends the sequence when the
/// exchange is over.
///
/// A sequence's producer (an `AsyncStream`'s `onTermination`) hears that its consumer stopped only when a `next()` is
/// cancelled, and the request keeps the sequence, so letting the iterator go ends nothing. An engine's reading task
/// is cancelled inside `next()` only when it happens to wait there; one waiting for the connection to take the last
/// chunk (AsyncHTTPClient's writer), or one that let the body go, never tells it. So once the exchange is over
/// (``stop()``), the reader asks the sequence once more from a task of its own that is cancelled: a sequence that
/// heeds cancellation ends there, and whatever that read gives is dropped. A read in flight then is ended so as soon
/// as it returns, its chunk dropped (the engine's task, being cancelled, usually ends it first). No chunk is asked of
/// the producer for the engine after the stop: a later `next()` throws `CancellationError`. An engine that lets the
/// body go before the exchange is over (an early answer) releases the reader, which tells the producer then and lets
/// the source go: the exchange keeps the reader only weakly. A sequence never read is left alone.
///
/// `@unchecked Sendable`: `state` is only touched under `lock`, and the source's iterator is taken out of it by the
/// one task that reads it (the engine's, or the task that ends it), never by two at once.
final class SequenceReader<Chunks: AsyncSequence & Sendable>: @unchecked Sendable where Chunks.Element == Data {
    private typealias Source = Chunks.AsyncIterator

    private struct State {
        /// The source's iterator while no task reads it.
        var iterator: Source?
        var opened = false
        var reading = false
        var stopped = false
        /// The sequence ended (its end, its failure) or was ended: nothing more to tell it.
        var ended = false
    }

    /// What a read finds when it starts.
    private enum Start {
        case read(Source)
        case end
        case stopped
    }

    private let lock = Lock()
    private var state: State

    init(_ sequence: Chunks) {
        state = State(iterator: sequence.makeAsyncIterator())
    }

    deinit {
        // The engine let the body go before the exchange was over (an early answer): the producer is told now, and
        // the source is not kept until the exchange ends. No read is in flight: a read holds the reader.
        if state.opened, !state.ended, let iterator = state.iterator { Self.tellTheEnd(to: iterator) }
        lock.destroy()
    }

    /// The next non-empty chunk, `nil` at the end.
    func next() async throws -> Data? {
        let start = lock.withLock { () -> Start in
            if state.stopped { return .stopped }
            guard !state.ended, let iterator = state.iterator else { return .end }
            state.iterator = nil
            state.opened = true
            state.reading = true
            return .read(iterator)
        }
        var iterator: Source
        switch start {
        case .read(let taken): iterator = taken
        case .end: return nil
        case .stopped: throw CancellationError()
        }
        let result: Result<Data?, any Error>
        do {
            result = .success(try await Self.nonEmpty(from: &iterator))
        } catch {
            // The reading was stopped (the call cancelled, its deadline, the engine letting the body go): a
            // cancellation, as the exchange reports it. A `CancellationError` of the sequence's own (its producer's
            // task cancelled) while the body is still wanted is the body failing, like any other.
            if error is CancellationError, Task.isCancelled {
                result = .failure(error)
            } else {
                result = .failure(RequestBodyChunks.failure("the body's sequence failed: \(error)", underlying: error))
            }
        }
        let finished: Bool
        if case .success(.some) = result { finished = false } else { finished = true }
        let endsNow = lock.withLock { () -> Bool in
            state.reading = false
            if finished {
                state.ended = true
                return false
            }
            state.iterator = iterator
            return state.stopped
        }
        if endsNow {
            end()
            throw CancellationError()
        }
        return try result.get()
    }

    /// The exchange is over: the producer is told now if no read is in flight, else once that read returns.
    func stop() {
        let endsNow = lock.withLock { () -> Bool in
            guard !state.stopped else { return false }
            state.stopped = true
            return state.opened && !state.reading && !state.ended
        }
        if endsNow { end() }
    }

    /// Asks the sequence for one more chunk from a cancelled task of its own, which a sequence that heeds
    /// cancellation takes as its consumer's end; the answer is dropped.
    private func end() {
        let taken = lock.withLock { () -> Source? in
            guard !state.ended else { return nil }
            state.ended = true
            defer { state.iterator = nil }
            return state.iterator
        }
        if let taken { Self.tellTheEnd(to: taken) }
    }

    /// Asks `iterator` for one more chunk from a cancelled task of its own, and drops the answer.
    private static func tellTheEnd(to iterator: Source) {
        // Handed to the task through a lock: the iterator is not Sendable, and only that task takes it.
        let handover = Protected<Source?>(iterator)
        Task {
            guard var iterator = handover.withLock({ $0.take() }) else { return }
            withUnsafeCurrentTask { $0?.cancel() }
            _ = try? await iterator.next()
        }
    }

    /// The next chunk of `iterator` that is not empty, `nil` at its end.
    private static func nonEmpty(from iterator: inout Source) async throws -> Data? {
        while let chunk = try await iterator.next() {
            if !chunk.isEmpty { return chunk }
        }
        return nil
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
    /// Counts the body in flight until it ends, fails or is cancelled (the start of other tasks depends on it).
    private let claim: StreamedBodyClaim?

    init(_ chunks: RequestBodyChunks, claim: StreamedBodyClaim? = nil) {
        self.chunks = chunks
        self.claim = claim
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
        let fetched = state.withLock { state in
            let fetched = state.fetched ?? state.end ?? .success(nil)
            state.fetched = nil
            if case .success(.some) = fetched {} else { state.end = fetched }
            return fetched
        }
        if case .success(.some) = fetched {} else { claim?.release() }
        return fetched
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
        claim?.release()
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
