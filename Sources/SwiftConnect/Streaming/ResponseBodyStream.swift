import Dispatch
import Foundation

/// How a streamed response body is delivered: how much an engine that cannot pause may buffer, and how long the
/// network may stay quiet with nothing unread.
///
/// ```swift
/// let stream = connect.stream(Completions(prompt: "Hi"), streaming: StreamingOptions(idleTimeout: 30))
/// ```
public struct StreamingOptions: Sendable, Hashable {
    /// The bound on unread body bytes held for a consumer that reads slower than the server sends, as each engine
    /// applies it (below). Defaults to 8 MiB.
    ///
    /// On an engine that cannot pause the transfer (URLSession), going over stops the transfer and fails the stream
    /// with ``ConnectError/Kind/responseTooLarge`` (after the bytes buffered before it) rather than growing memory;
    /// the stream in front of the reader holds up to 256 KiB more (or the limit, if smaller), plus the chunk that
    /// crossed that: a stream may hold 8.25 MiB by default. An engine with back-pressure (AsyncHTTPClient) pauses reading instead, once 256 KiB (or the limit,
    /// if smaller) wait unread in that stream, and as much in the engine's own buffer behind it, each plus the part
    /// that crossed it; the rest of what SwiftNIO read off the socket in one go (up to 4 × 64 KiB with its defaults)
    /// waits in AsyncHTTPClient.
    ///
    /// On Linux, the transfer of a stream that failed so, or that its reader left, stops only once libcurl has
    /// caught up with the sender, its bytes dropped as they come; SECURITY.md ("Time and size limits") states the
    /// memory this cost in the runs measured.
    ///
    /// A chunk the engine received while nothing waits unread is always taken, even one larger than the limit: the
    /// limit bounds what piles up behind a slow reader, and whether a reader happened to wait at that instant does
    /// not decide the outcome.
    ///
    /// A value below 1 counts as 1, whether given to the initializer or set here.
    public var bufferLimit: Int {
        // Clamped on every write, not only in `init`: 0 or less left an engine that pauses waiting for ever (its
        // consumer could never bring the buffer under the limit), and `Int.min` overflowed the buffer's arithmetic.
        didSet { if bufferLimit < 1 { bufferLimit = 1 } }
    }
    /// Fails the stream with ``ConnectError/Kind/timedOut``, and stops its transfer, when the network stays quiet
    /// for this many seconds: no body byte arrives while none waits unread. The clock starts over when bytes arrive
    /// and when the reader takes some, and stands still while bytes wait for the reader, so a reader slow on bytes
    /// already received never trips it (an engine that paused for that reader is not the network going quiet); a
    /// reader busy elsewhere with nothing unread does not stop it. The same on every engine.
    ///
    /// The clock starts when the request is handed to the transport, not when the response's head arrives: a server
    /// that accepts the request and sends no head within this time fails the call with ``ConnectError/Kind/timedOut``
    /// too, its message saying that no response head came, and its exchange is stopped. Sending the request, its body
    /// included, counts as that wait, and so do the redirects the transport follows before the final head (one
    /// wait for the whole chain, where ``RequestOptions/idleTimeout`` starts afresh with each hop): a streamed call
    /// that uploads a large body, or goes through slow redirects, needs a limit above their time. The retry policy
    /// may send it again, as any timeout.
    ///
    /// `nil` (the default) for none, and so is a value that is not a positive finite number (zero, negative, NaN,
    /// infinity). The connector's `timeout` still bounds the whole stream unless it is `.infinity`, as suits a stream
    /// that may run for hours.
    public var idleTimeout: TimeInterval?
    /// The most bytes of an error response's body read (for the error handler) before the stream is closed.
    /// Defaults to 64 KiB. A negative value counts as 0, whether given to the initializer or set here. The body is read
    /// for ten seconds at most, or for ``idleTimeout`` if that is shorter: one that trickles under the limit gives
    /// what came by then.
    public var errorBodyLimit: Int {
        // Clamped on every write, not only in `init`: a negative limit stopped the process when it cut the body.
        didSet { if errorBodyLimit < 0 { errorBodyLimit = 0 } }
    }

    /// Creates options.
    ///
    /// - Parameters:
    ///   - bufferLimit: The most bytes buffered on an engine that cannot pause; at least 1.
    ///   - idleTimeout: The longest the network may stay quiet with nothing unread, in seconds; `nil` for none.
    ///   - errorBodyLimit: The most bytes of an error body read.
    public init(bufferLimit: Int = 8 << 20, idleTimeout: TimeInterval? = nil, errorBodyLimit: Int = 64 << 10) {
        self.bufferLimit = max(1, bufferLimit)
        self.idleTimeout = idleTimeout
        self.errorBodyLimit = max(0, errorBodyLimit)
    }

    /// How many buffered bytes make ``ResponseBodyStream/send(_:)`` wait for the consumer: the smaller of
    /// ``bufferLimit`` and 256 KiB.
    var pauseThreshold: Int { min(bufferLimit, 256 << 10) }
}

/// A response body on its way: the engine puts chunks in as they arrive, the consumer takes them out in order.
///
/// Transports make one for a request with ``TransferOptions/streaming`` set and hand it over in
/// ``ConnectResponse/bodyStream`` as soon as the response head arrives. An engine that can pause reading calls
/// ``send(_:)``, which waits while the consumer is behind; one that cannot calls ``offer(_:)``, which fails the
/// stream once ``StreamingOptions/bufferLimit`` bytes wait. The engine ends the stream with ``finish(throwing:)``
/// and stops its transfer in the handler it gives ``setCancelHandler(_:)``, which runs when the consumer cancels
/// or stops reading, or the idle timeout fires.
///
/// ```swift
/// let body = ResponseBodyStream(options: transfer.streaming ?? StreamingOptions())
/// body.setCancelHandler { task.cancel() }
/// // as bytes arrive:
/// guard await body.send(chunk) else { return }  // false: nobody reads any more
/// // at the end:
/// body.finish()
/// ```
public final class ResponseBodyStream: Sendable {
    private struct State {
        var chunks = FIFO<Data>()
        var bufferedBytes = 0
        /// How the stream ended, once it has: `nil` for the end of the body, or the error.
        var end: (any Error)??
        var consumer: CheckedContinuation<Data?, any Error>?
        /// The ``send(_:)`` calls waiting for the consumer: all of them, so that two producers that send at once
        /// both go on (one kept alone left the other waiting for ever).
        var producers: [CheckedContinuation<Bool, Never>] = []
        var onCancel: (@Sendable () -> Void)?
        /// When the last bytes arrived, for the idle timeout.
        var lastActivity = DispatchTime.now()
        /// The consumer (or the idle timeout) stopped the stream: the engine's transfer must stop.
        var wasStopped = false
        /// Run once when the stream ends, however it ends.
        var onEnd: [@Sendable () -> Void] = []
        /// The consumer cancelled the stream (``cancel()``), whether or not it had ended.
        var isCancelled = false
    }

    /// The options the stream enforces.
    let options: StreamingOptions
    private let state = Protected(State())
    private let idleDeadline = Protected<TransportDeadline?>(nil)

    /// Creates an open stream.
    ///
    /// - Parameter options: The buffer limit and idle timeout to enforce.
    public init(options: StreamingOptions = StreamingOptions()) {
        self.options = options
    }

    deinit {
        idleDeadline.withLock { $0?.cancel() }
    }

    /// A stream that holds `data` and has ended: what a transport without streaming gives.
    ///
    /// - Parameter data: The whole body.
    /// - Returns: A finished stream of one chunk (none if `data` is empty).
    public static func finished(with data: Data) -> ResponseBodyStream {
        let stream = ResponseBodyStream(options: StreamingOptions(bufferLimit: max(1, data.count)))
        if !data.isEmpty { _ = stream.offer(data) }
        stream.finish()
        return stream
    }

    // MARK: - The engine's side

    /// Adds a chunk without waiting. Returns `false` when the stream has ended (cancelled, failed): stop the
    /// transfer. Over ``StreamingOptions/bufferLimit`` buffered bytes (a chunk into an empty buffer is always
    /// taken), the stream fails with
    /// ``ConnectError/Kind/responseTooLarge`` after the chunks already buffered (the consumer gets them first; the
    /// chunk that did not fit is dropped), the cancel handler stops the transfer, and this returns `false`.
    ///
    /// - Parameter chunk: The bytes that arrived.
    /// - Returns: Whether to go on.
    public func offer(_ chunk: Data) -> Bool {
        guard !chunk.isEmpty else { return isOpen }
        switch arrive(chunk, limit: options.bufferLimit) {
        case .handedOver(let consumer):
            consumer.resume(returning: chunk)
            return true
        case .buffered:
            return true
        case .ended:
            return false
        case .overflowed:
            // The engine is stopped (its cancel handler) before the stream ends: what it cannot pause must stop.
            // The bytes already buffered are the consumer's: they come before the error (dropping them lost up to
            // the whole limit of a body the server had sent).
            fail(
                with: ConnectError(
                    .responseTooLarge,
                    message: "the stream's buffer of \(options.bufferLimit) bytes is full: the consumer reads slower "
                        + "than the server sends, and this engine cannot pause the transfer "
                        + "(raise StreamingOptions.bufferLimit, or read faster)",
                    underlyingError: BufferOverflow(limit: options.bufferLimit)),
                cancelling: true, keepingChunks: true)
            return false
        }
    }

    /// Adds a chunk, waiting while 256 KiB or more (the limit, if smaller) wait for the consumer (the
    /// engine reads no further meanwhile: back-pressure). Returns `false` when the stream has ended: stop the
    /// transfer.
    ///
    /// - Parameter chunk: The bytes that arrived.
    /// - Returns: Whether to go on.
    public func send(_ chunk: Data) async -> Bool {
        guard !chunk.isEmpty else { return isOpen }
        switch arrive(chunk, limit: .max) {
        case .handedOver(let consumer):
            consumer.resume(returning: chunk)
            return true
        case .ended, .overflowed:
            return false
        case .buffered:
            break
        }
        guard state.withLock({ $0.end == nil && $0.bufferedBytes >= options.pauseThreshold }) else { return isOpen }
        return await withCheckedContinuation { continuation in
            let resumeNow: Bool? = state.withLock { state in
                guard state.end == nil else { return false }
                guard state.bufferedBytes >= options.pauseThreshold else { return true }
                state.producers.append(continuation)
                return nil
            }
            if let resumeNow { continuation.resume(returning: resumeNow) }
        }
    }

    /// What became of a chunk that arrived.
    private enum Arrival {
        /// A reader was waiting: it gets the chunk.
        case handedOver(CheckedContinuation<Data?, any Error>)
        /// It waits in the buffer.
        case buffered
        /// The buffer would go over its limit: nothing was kept.
        case overflowed
        /// The stream has ended: nothing was kept.
        case ended
    }

    /// Hands `chunk` to a waiting reader, or buffers it unless the buffer would go over `limit` bytes.
    private func arrive(_ chunk: Data, limit: Int) -> Arrival {
        state.withLock { state in
            guard state.end == nil else { return .ended }
            state.lastActivity = .now()
            if let consumer = state.consumer {
                state.consumer = nil
                return .handedOver(consumer)
            }
            // An empty buffer takes any chunk: it has been received already, and refusing it made the outcome
            // depend on whether a reader happened to wait at that instant (a limit below the engine's read size
            // failed a stream whose reader kept up, now and then)
            guard state.bufferedBytes == 0 || state.bufferedBytes <= limit - chunk.count else { return .overflowed }
            state.chunks.append(chunk)
            state.bufferedBytes += chunk.count
            return .buffered
        }
    }

    /// Ends the stream: with `nil`, the body is complete; with an error, the transfer failed (the consumer gets it
    /// after the chunks already buffered). A ``send(_:)`` waiting for the consumer returns `false`. Later calls do
    /// nothing.
    ///
    /// - Parameter error: Why the transfer failed, or `nil`.
    public func finish(throwing error: (any Error)? = nil) {
        typealias Ending = (
            consumer: CheckedContinuation<Data?, any Error>?, producers: [CheckedContinuation<Bool, Never>],
            onEnd: [@Sendable () -> Void]
        )
        let (consumer, producers, onEnd) = state.withLock { state -> Ending in
            guard state.end == nil else { return (nil, [], []) }
            state.end = .some(error)
            state.onCancel = nil
            let onEnd = state.onEnd
            state.onEnd = []
            let producers = state.producers
            state.producers = []
            guard state.chunks.isEmpty else { return (nil, producers, onEnd) }
            defer { state.consumer = nil }
            return (state.consumer, producers, onEnd)
        }
        idleDeadline.withLock { $0?.cancel() }
        // Finished from another thread (a deadline) while the engine waited to send more: it stops.
        for producer in producers { producer.resume(returning: false) }
        for handler in onEnd { handler() }
        if let error {
            consumer?.resume(throwing: error)
        } else {
            consumer?.resume(returning: nil)
        }
    }

    /// Ends the stream with `error` after the chunks already buffered, as ``finish(throwing:)`` does, and stops the
    /// engine's transfer (its cancel handler), which is not to go on: the call's deadline passed.
    ///
    /// - Parameter error: Why the stream ended.
    func expire(with error: any Error) {
        let onCancel = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.end == nil else { return nil }
            // A cancel handler set from now on runs at once.
            state.wasStopped = true
            return state.onCancel
        }
        finish(throwing: error)
        onCancel?()
    }

    /// Sets what stops the transfer when the consumer cancels or stops reading, or the idle timeout fires. Runs
    /// at once if that already happened; never after ``finish(throwing:)``.
    ///
    /// - Parameter handler: Stops the engine's transfer.
    public func setCancelHandler(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            guard state.end == nil else { return state.wasStopped }
            state.onCancel = handler
            return false
        }
        if runNow { handler() }
    }

    /// Runs `handler` once when the stream ends (its body complete, failed or cancelled); at once if it has.
    func whenEnded(_ handler: @escaping @Sendable () -> Void) {
        let ended = state.withLock { state -> Bool in
            guard state.end == nil else { return true }
            state.onEnd.append(handler)
            return false
        }
        if ended { handler() }
    }

    /// Whether the stream still takes chunks.
    public var isOpen: Bool { state.withLock { $0.end == nil } }

    /// The number of ``send(_:)`` calls waiting for the consumer (for tests).
    var waitingSendCount: Int { state.withLock { $0.producers.count } }

    // MARK: - The consumer's side

    /// Stops the stream: buffered chunks are dropped, the engine's transfer is stopped, and a reader waiting for
    /// the next chunk gets ``ConnectError/Kind/cancelled``.
    public func cancel() {
        state.withLock { state in
            state.isCancelled = true
            // A body that ended with chunks still unread: they are dropped too, and the reader is told so.
            guard state.end != nil, !state.chunks.isEmpty else { return }
            state.chunks.removeAll()
            state.bufferedBytes = 0
            state.end = .some(ConnectError.cancelled())
        }
        fail(with: ConnectError.cancelled(), cancelling: true)
    }

    /// Whether ``cancel()`` was called: a view over the stream hands out nothing more of what it read from it.
    var isCancelled: Bool { state.withLock { $0.isCancelled } }

    /// The next chunk, `nil` at the end of the body; throws the transfer's error. One reader at a time.
    package func next() async throws -> Data? {
        // A reader whose task was cancelled stops here, buffered chunks or not: with back-pressure, taking one
        // lets the engine read the next, and a loop that never waits would read for ever. A body that had already
        // ended (complete, its chunks buffered) stops the reader too: the cancelled loop is not handed the rest.
        if Task.isCancelled {
            cancel()
            throw ConnectError.cancelled()
        }
        let chunk = try state.withLock { state -> Data?? in
            if let chunk = take(&state) { return .some(chunk) }
            if let end = state.end {
                if let error = end { throw error }
                return .some(nil)
            }
            return nil
        }
        if let chunk {
            resumeProducerIfBelowThreshold()
            return chunk
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ready: Result<Data?, any Error>? = state.withLock { state in
                    if let chunk = take(&state) { return .success(chunk) }
                    if let end = state.end { return end.map { .failure($0) } ?? .success(nil) }
                    state.consumer = continuation
                    return nil
                }
                if let ready {
                    continuation.resume(with: ready)
                    // The chunk taken may be the one the engine waits to send more after (back-pressure).
                    if case .success(.some) = ready { resumeProducerIfBelowThreshold() }
                }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Takes the oldest buffered chunk, if any.
    private func take(_ state: inout State) -> Data? {
        guard let chunk = state.chunks.popFirst() else { return nil }
        state.bufferedBytes -= chunk.count
        // The idle clock counts from here too: with back-pressure, the engine reads on only now.
        state.lastActivity = .now()
        return chunk
    }

    private func resumeProducerIfBelowThreshold() {
        let producers = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            guard state.bufferedBytes < options.pauseThreshold, !state.producers.isEmpty else { return [] }
            defer { state.producers = [] }
            return state.producers
        }
        for producer in producers { producer.resume(returning: true) }
    }

    /// Who waits on a stream that ends: the reader, the engine, and the engine's cancel handler.
    private typealias Waiting = (
        consumer: CheckedContinuation<Data?, any Error>?, producers: [CheckedContinuation<Bool, Never>],
        onCancel: (@Sendable () -> Void)?
    )

    /// Ends the stream with `error`, and stops the engine's transfer when `cancelling`: at once, dropping what is
    /// buffered, or, when `keepingChunks`, after the chunks already buffered (as ``finish(throwing:)`` does).
    private func fail(with error: any Error, cancelling: Bool = false, keepingChunks: Bool = false) {
        var onEnd: [@Sendable () -> Void] = []
        let taken = state.withLock { state -> Waiting? in
            guard state.end == nil else { return nil }
            state.end = .some(error)
            state.wasStopped = cancelling
            onEnd = state.onEnd
            state.onEnd = []
            if !keepingChunks {
                state.chunks.removeAll()
                state.bufferedBytes = 0
            }
            defer {
                state.consumer = nil
                state.producers = []
                state.onCancel = nil
            }
            return (state.consumer, state.producers, state.onCancel)
        }
        idleDeadline.withLock { $0?.cancel() }
        guard let (consumer, producers, onCancel) = taken else { return }
        onCancel?()
        for handler in onEnd { handler() }
        for producer in producers { producer.resume(returning: false) }
        consumer?.resume(throwing: error)
    }

    /// Fails the stream when, from now on, no bytes arrive for `seconds` while none wait unread
    /// (``StreamingOptions/idleTimeout``). The client starts it when the response head arrives, whatever the engine
    /// (the wait for the head has the same limit, `MiddlewareChain`'s); a second call does nothing.
    ///
    /// - Parameter seconds: The longest wait for the next bytes.
    func startIdleTimeout(_ seconds: TimeInterval) {
        let isFirst = idleDeadline.withLock { $0 == nil }
        guard isFirst, seconds > 0 else { return }
        state.withLock { $0.lastActivity = .now() }
        armIdleTimeout(after: seconds, limit: seconds)
    }

    /// Where a stream's idle timeout is set, as its errors name it: the stream's own, else the call's, which a stream
    /// takes when it sets none.
    private static let idleTimeoutSetting = "StreamingOptions.idleTimeout, or RequestOptions.idleTimeout when unset"

    /// The error of a stream that received no bytes for `limit` seconds with none waiting to be read
    /// (``StreamingOptions/idleTimeout``).
    package static func idleTimeoutError(after limit: TimeInterval) -> ConnectError {
        ConnectError(
            .timedOut,
            message: "the stream received no bytes for \(limit) s with none waiting to be read "
                + "(\(idleTimeoutSetting))",
            underlyingError: URLError(.timedOut))
    }

    /// The error of a streamed call whose response head did not come within `limit` seconds of the request's
    /// hand-off to the transport (``StreamingOptions/idleTimeout`` bounds that wait too): the same kind as a quiet
    /// body's, worded for what happened, since no byte of the answer came and the request may still have been
    /// going out.
    package static func headTimeoutError(after limit: TimeInterval) -> ConnectError {
        ConnectError(
            .timedOut,
            message: "no response head within \(limit) s after the request was handed to the transport, its upload "
                + "included (\(idleTimeoutSetting))",
            underlyingError: URLError(.timedOut))
    }

    /// Fails the stream when no bytes came for `limit` seconds, checking in `idle` seconds; re-armed for the time
    /// left while bytes keep coming.
    private func armIdleTimeout(after idle: TimeInterval, limit: TimeInterval) {
        guard let deadline = TransportDeadline(seconds: idle) else { return }
        idleDeadline.withLock { $0 = deadline }
        deadline.start { [weak self] in
            guard let self else { return }
            let quiet = state.withLock { state -> Double? in
                guard state.end == nil else { return nil }
                // Bytes wait for the reader: the network is not the one that is quiet (with back-pressure the engine
                // reads nothing more until the reader takes them).
                if !state.chunks.isEmpty { state.lastActivity = .now() }
                return Double(DispatchTime.now().uptimeNanoseconds - state.lastActivity.uptimeNanoseconds) / 1e9
            }
            guard let quiet else { return }
            if quiet >= limit - 0.001 {
                fail(with: Self.idleTimeoutError(after: limit), cancelling: true)
            } else {
                armIdleTimeout(after: limit - quiet, limit: limit)
            }
        }
    }
}

/// Why a stream fed with ``ResponseBodyStream/offer(_:)`` failed: its buffer filled, the reader behind an engine that
/// cannot pause. A matter of the reader's pace, not of the stream's bytes: an ``EventSource`` reconnects from its last
/// event after it, as after a body size limit.
struct BufferOverflow: Error, Sendable {
    /// The buffer's limit, in bytes.
    let limit: Int
}
