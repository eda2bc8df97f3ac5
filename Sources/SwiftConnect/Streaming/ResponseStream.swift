import Dispatch
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A response read as it arrives: the head (status and headers) first, then the body in chunks.
///
/// Made by ``Connect/stream(_:options:streaming:)``. Iterate it for the body's chunks, or one of its views for
/// ``lines``, JSON Lines (``jsonLines(of:decoder:)``) or server-sent ``events``:
///
/// ```swift
/// let stream = connect.stream(Completions(prompt: "Hello"))
/// for try await event in stream.events {
///     print(event.data, terminator: "")
/// }
/// ```
///
/// The request goes through the client's middlewares, retries and error handler as any other: a status outside
/// 200..<300 fails the iteration with the error handler's error (its body read up to
/// ``StreamingOptions/errorBodyLimit``); retries happen before the first body byte, never after. Cancelling the
/// task that iterates, breaking out of the loop, or ``cancel()`` stops the transfer, and so does releasing the stream
/// before any iteration began: its body is then cancelled once the head arrives. A body can be read once.
public final class ResponseStream: AsyncSequence, Sendable {
    /// A chunk of the body, as it arrived.
    public typealias Element = Data

    /// The response head: completes when the status and headers arrive (and the client's checks accept them), or
    /// fails as ``Connect/request(_:debugResponse:)`` would. Its ``ConnectResponse/data`` is empty.
    public let head: Future<ConnectResponse>
    /// Whether an iterator has been made: the body can be read once.
    private let isTaken = Protected(false)

    init(head: Future<ConnectResponse>) {
        self.head = head
    }

    deinit {
        // Released with no reader: nobody can read the body any more, so its transfer stops when the head arrives
        // (an iterator's reader keeps the stream, and stops the transfer itself if it leaves early). The request
        // runs on to its head, as a released future's does.
        guard !isTaken.withLock({ $0 }) else { return }
        head.whenComplete { result in
            if case .success(let response) = result { response.bodyStream?.cancel() }
        }
    }

    /// The response head, once it arrives: status and headers.
    public var response: ConnectResponse {
        get async throws { try await head.value }
    }

    /// Stops the request, or the transfer of its body if the head has arrived. A reader then gets
    /// ``ConnectError/Kind/cancelled``.
    public func cancel() {
        head.cancel()
        if case .success(let response)? = head.result { response.bodyStream?.cancel() }
    }

    /// Reads the body's chunks: waits for the head, then each chunk as it arrives.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private let reader: Reader

        init(_ reader: Reader) {
            self.reader = reader
        }

        /// The next chunk, or `nil` at the end of the body; throws the request's or the transfer's error once, and
        /// returns `nil` after it.
        public mutating func next() async throws -> Data? {
            try await reader.next()
        }
    }

    /// Makes the iterator. A second one fails at its first `next()`: a body can be read once.
    public func makeAsyncIterator() -> AsyncIterator {
        let first = isTaken.withLock { taken in
            defer { taken = true }
            return !taken
        }
        return AsyncIterator(Reader(stream: self, isFirst: first))
    }

    /// The body as UTF-8 lines (LF or CRLF), as they arrive.
    public var lines: ResponseLines<ResponseStream> {
        ResponseLines(self)
    }

    /// The body as JSON Lines: one value decoded from each non-blank line. A line that does not decode fails the
    /// iteration with ``ConnectError/Kind/decoding``, naming the line.
    ///
    /// - Parameters:
    ///   - type: The type of each line.
    ///   - decoder: The decoder; a plain `JSONDecoder` by default.
    /// - Returns: The values, as they arrive.
    public func jsonLines<Value: Decodable>(of type: Value.Type, decoder: JSONDecoder = JSONDecoder())
        -> ResponseJSONLines<ResponseStream, Value>
    {
        var lines = ResponseJSONLines<ResponseStream, Value>(self, decoder: decoder)
        lines.answer = { [head] in try? head.result?.get() }
        return lines
    }

    /// The body as server-sent events (`text/event-stream`), parsed by the WHATWG rules.
    ///
    /// A response that declares another `Content-Type` (a `text/html` sign-in page, a JSON error let through) fails
    /// the iteration with ``ConnectError/Kind/rejected``, whose message names the type, and its transfer stops, as an
    /// ``EventSource`` refuses it; so do ``ResponseEvents`` and ``ResponseEventBatches`` made over this stream and
    /// ``observeEvents(on:_:completion:)``. A response that declares no type is read as events. Unlike an
    /// ``EventSource``, the status is the client's to check (its error handler, ``RequestOptions``).
    public var events: ResponseEvents<ResponseStream> {
        ResponseEvents(self)
    }

    /// What an iterator reads through: the head, then the body stream; stops the transfer if it is dropped before
    /// the end (a `break` out of the loop).
    final class Reader: Sendable {
        private let stream: ResponseStream
        private let isFirst: Bool
        /// The body stream and the request it answers, once the head has arrived.
        private let body = Protected<(stream: ResponseBodyStream, request: ConnectResponse.StoredRequest)?>(nil)
        private let isFinished = Protected(false)
        /// The media type the body must have when the response declares one (``require(mediaType:)``), or `nil`.
        private let requiredMediaType = Protected<String?>(nil)

        init(stream: ResponseStream, isFirst: Bool) {
            self.stream = stream
            self.isFirst = isFirst
        }

        deinit {
            // Only the reader stops the transfer when it leaves early: a second iterator, refused, is not one.
            if isFirst, !isFinished.withLock({ $0 }) { stream.cancel() }
        }

        func next() async throws -> Data? {
            // After the end or an error the iteration is over, as `AsyncIteratorProtocol` requires: `nil` from then
            // on, not the error again (the body stream, or the failed head, would throw it at every call).
            guard !isFinished.withLock({ $0 }) else { return nil }
            guard isFirst else {
                isFinished.withLock { $0 = true }
                throw ConnectError(
                    .rejected, message: "the body of this ResponseStream is already being read: it can be read once")
            }
            var request: ConnectResponse.StoredRequest?
            do {
                let body = try await bodyStream()
                request = body.request
                let chunk = try await body.stream.next()
                if chunk == nil { isFinished.withLock { $0 = true } }
                return chunk
            } catch let error as ConnectError {
                isFinished.withLock { $0 = true }
                throw error
            } catch {
                // An engine's own error for a body that broke (a transport of the app's, a fake): classified as
                // the client classifies every transport failure.
                isFinished.withLock { $0 = true }
                guard let request else { throw error }
                throw ConnectError.transportFailure(.reported(error), stored: request)
            }
        }

        /// Whether the body was cancelled (``ResponseStream/cancel()``, the client's `cancelAllRequests()`).
        var isCancelled: Bool {
            body.withLock { $0?.stream.isCancelled } ?? false
        }

        /// Cancels the stream, when this is its reader (a refused second one leaves the first one reading).
        func cancel() {
            if isFirst { stream.cancel() }
        }

        /// Makes a response that declares another media type than `mediaType` fail the reading (a view that parses
        /// one format: the events' `text/event-stream`); one that declares none is read.
        func require(mediaType: String) {
            requiredMediaType.withLock { $0 = mediaType }
        }

        /// The body stream, once the head has arrived.
        private func bodyStream() async throws -> (stream: ResponseBodyStream, request: ConnectResponse.StoredRequest) {
            if let body = body.withLock({ $0 }) { return body }
            let response = try await stream.head.value
            if let required = requiredMediaType.withLock({ $0 }), let type = response.mediaType, !type.isEmpty,
                type != required
            {
                // Read as this format, a body of another gives nothing or garbage and ends as if it were empty: its
                // transfer stops, and the reader is told what came instead.
                response.bodyStream?.cancel()
                throw ConnectError(
                    .rejected, message: "the response is \(type), not \(required): its body is not read as \(required)",
                    request: response.storedRequest, head: response.storedHead)
            }
            let taken = (stream: response.bodyStream ?? .finished(with: response.data), request: response.storedRequest)
            body.withLock { $0 = taken }
            return taken
        }
    }
}

extension ResponseStream.AsyncIterator: StoppableChunks {
    var isCancelled: Bool { reader.isCancelled }

    func cancel() {
        reader.cancel()
    }

    func require(mediaType: String) {
        reader.require(mediaType: mediaType)
    }
}

// MARK: - Callbacks

extension ResponseStream {
    /// Calls `chunk` with each piece of the body as it arrives, then `completion` once, with the head on success or
    /// the error (of the request, or of the transfer); for callback-style code.
    ///
    /// Follows ``Future/observe(on:_:)``'s thread rule: each callback runs on `queue`, or with `nil` on the thread
    /// that read the chunk. Callbacks run one at a time, in order; the next chunk is read only once `chunk` has
    /// returned for the previous one, so a slow callback slows the transfer rather than filling memory on an engine
    /// that can pause it (AsyncHTTPClient); URLSession's cannot, and the stream fails with
    /// ``ConnectError/Kind/responseTooLarge`` once ``StreamingOptions/bufferLimit`` bytes wait unread.
    ///
    /// ```swift
    /// stream.observe(on: .main, chunk: { data in progressView.append(data) }) { result in
    ///     if case .failure(let error) = result { show(error) }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - queue: Where the callbacks run; `nil` runs them on the reading thread.
    ///   - chunk: Receives each chunk.
    ///   - completion: Receives the outcome, after the last chunk.
    public func observe(
        on queue: DispatchQueue? = nil,
        chunk: @escaping @Sendable (Data) -> Void,
        completion: @escaping @Sendable (Result<ConnectResponse, any Error>) -> Void
    ) {
        Self.deliver(self, on: queue, each: chunk) { [head] error in
            if let error { return completion(.failure(error)) }
            completion(head.result ?? .failure(ConnectError.cancelled()))
        }
    }

    /// Calls `event` with each server-sent event as it arrives, then `completion` once; as
    /// ``observe(on:chunk:completion:)``.
    ///
    /// - Parameters:
    ///   - queue: Where the callbacks run; `nil` runs them on the reading thread.
    ///   - event: Receives each event.
    ///   - completion: Receives the outcome, after the last event.
    public func observeEvents(
        on queue: DispatchQueue? = nil,
        _ event: @escaping @Sendable (ServerSentEvent) -> Void,
        completion: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        Self.deliver(events, on: queue, each: event) { error in completion(error.map { .failure($0) } ?? .success(())) }
    }

    /// Calls `line` with each line as it arrives, then `completion` once; as ``observe(on:chunk:completion:)``.
    ///
    /// - Parameters:
    ///   - queue: Where the callbacks run; `nil` runs them on the reading thread.
    ///   - line: Receives each line.
    ///   - completion: Receives the outcome, after the last line.
    public func observeLines(
        on queue: DispatchQueue? = nil,
        _ line: @escaping @Sendable (String) -> Void,
        completion: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        Self.deliver(lines, on: queue, each: line) { error in completion(error.map { .failure($0) } ?? .success(())) }
    }

    /// Reads `sequence` in a task and hands each element, then the end, to the callbacks on `queue`, in order.
    private static func deliver<Sequence: AsyncSequence & Sendable>(
        _ sequence: Sequence, on queue: DispatchQueue?, each: @escaping @Sendable (Sequence.Element) -> Void,
        end: @escaping @Sendable ((any Error)?) -> Void
    ) where Sequence.Element: Sendable {
        Task {
            var failure: (any Error)?
            do {
                for try await element in sequence {
                    await run(on: queue) { each(element) }
                }
            } catch {
                failure = error
            }
            let error = failure
            await run(on: queue) { end(error) }
        }
    }

    /// Runs `work` on `queue` (here with `nil`) and returns once it has run.
    private static func run(on queue: DispatchQueue?, _ work: @escaping @Sendable () -> Void) async {
        guard let queue else { return work() }
        await withCheckedContinuation { continuation in
            queue.async {
                work()
                continuation.resume()
            }
        }
    }
}

// MARK: - Sending

extension Connect {
    /// Sends the request a connector (or a ``Route``) describes and reads its response as it arrives.
    ///
    /// ```swift
    /// for try await line in connect.stream(ExportConnector()).lines {
    ///     import(line)
    /// }
    /// ```
    ///
    /// Middlewares, retries, token refresh and the error handler apply as for ``request(_:debugResponse:)``, up to
    /// the response head; the cache and coalescing of identical requests do not (a body is read once), nor do
    /// response processors (they transform a body in memory). The connector's `timeout` bounds the whole stream:
    /// give a long-lived stream `.infinity` and an ``StreamingOptions/idleTimeout`` instead, which bounds the wait
    /// for the response's head too.
    ///
    /// - Parameters:
    ///   - connector: The endpoint.
    ///   - options: Options for this call.
    ///   - streaming: Buffer limit, idle timeout and error-body limit.
    /// - Returns: The stream; the request starts at once.
    public func stream(
        _ connector: any Connector, options: RequestOptions = RequestOptions(),
        streaming: StreamingOptions = StreamingOptions()
    ) -> ResponseStream {
        stream(connector, options: options, streaming: streaming) { _ in }
    }

    /// ``stream(_:options:streaming:)`` with `adjust` applied to the request before it enters the pipeline; a
    /// `cancelAllRequests()` since `startedAfter` (an event source's count at its first connection) stops it, as one
    /// that comes while it runs does.
    func stream(
        _ connector: any Connector, options: RequestOptions, streaming: StreamingOptions,
        startedAfter: UInt64? = nil, adjust: @escaping @Sendable (inout ConnectRequest) -> Void
    ) -> ResponseStream {
        // Read before the call starts: a cancelAllRequests() that comes once its head is there has to reach its body.
        let cancellationsBefore = startedAfter ?? inFlightCancellations
        let bodies = StreamedBodies()
        let exchange = exchange(
            connector, debugResponse: false, options: options, startedAfter: cancellationsBefore
        ) { request, transfer in
            adjust(&request)
            transfer.streaming = streaming.takingIdleTimeout(transfer.idleTimeout)
            transfer.streamedBodies = bodies
        }
        return trackingBody(
            of: ResponseStream(head: exchange.checked()), startedAfter: cancellationsBefore, bodies: bodies)
    }

    /// `stream`, whose body, once the head has arrived, counts as in flight until it ends: so that
    /// ``cancelAllRequests()`` stops it too, and any that came since `cancellationsBefore` (read before the call
    /// started: its head may be there already). A head that fails stops the bodies the transport gave the call
    /// (`bodies`), which no reader will get.
    func trackingBody(
        of stream: ResponseStream, startedAfter cancellationsBefore: UInt64, bodies: StreamedBodies
    ) -> ResponseStream {
        stream.head.whenComplete { [weak self] result in
            bodies.callEnded(delivering: result)
            guard case .success(let response) = result, let body = response.bodyStream, let self else { return }
            let running = Promise<Void>()
            running.setCancelHandler { body.cancel() }
            body.whenEnded { running.completeIfPending(with: .success(())) }
            track(running.future, startedAfter: cancellationsBefore)
        }
        return stream
    }
}

/// The bodies a transport handed one streamed call, its retries' included: a body whose answer never reached the
/// caller (a stage held it while the call was cancelled or timed out, or the transport answered just after) has its
/// transfer stopped when the call fails, or at once if it comes after, instead of holding its connection while
/// nobody reads it.
final class StreamedBodies: Sendable {
    private struct State {
        var bodies: [ResponseBodyStream] = []
        /// How the call ended: `true` when it failed (every body stops), `false` when its answer was delivered.
        var failed: Bool?
    }

    private let state = Protected(State())

    /// Notes a body the transport answered with (`MiddlewareChain`); stops it if the call has failed already.
    func add(_ body: ResponseBodyStream) {
        let stops = state.withLock { state -> Bool in
            switch state.failed {
            case nil:
                state.bodies.append(body)
                return false
            case true?:
                return true
            case false?:
                return false
            }
        }
        if stops { body.cancel() }
    }

    /// The call's head completed: on a failure, every body noted stops; on a success, the reader has its body (a
    /// body a stage replaced is left to that stage).
    func callEnded<Value>(delivering result: Result<Value, any Error>) {
        let failed: Bool
        if case .failure = result { failed = true } else { failed = false }
        let bodies = state.withLock { state -> [ResponseBodyStream] in
            guard state.failed == nil else { return [] }
            state.failed = failed
            defer { state.bodies = [] }
            return failed ? state.bodies : []
        }
        for body in bodies { body.cancel() }
    }
}
