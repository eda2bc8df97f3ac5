import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOHTTPCompression
import NIOSSL

/// One hop's response as AsyncHTTPClient's delegate API hands it over: the head, then each body part before the
/// failure, if any, which ends the body after them. The body waits here for its reader; past
/// ``pauseThreshold`` unread bytes, the engine reads no further until the reader catches up (back-pressure).
///
/// Why the delegate API, not `execute(_:deadline:)`'s `HTTPClientResponse.body`: a connection reads no further while
/// nobody has asked for more of a body, except when the connection ends, when SwiftNIO reads what is left of it at
/// once; AsyncHTTPClient holds those parts until they are asked for, and drops them when the end proves to be a
/// failure (a close mid-body). The async API asks for more only while its reader waits in `next()`, so a reader
/// busy with the previous part lost the last ones (`BrokenBodyTests`). Here, every
/// part is taken at once, so more is asked for before the connection reads again: no part is held where a failure
/// drops it, as long as the reader is fewer than ``pauseThreshold`` bytes behind. What this cannot cover: a reader
/// further behind has paused the engine, and AsyncHTTPClient may then drop what a failing connection reads last; and
/// a pooled connection on another event loop than the request's hands each part over one hop later, during which
/// such a connection can read its last bytes unasked. A reset (RST) is a failure too: what the kernel discarded, or
/// SwiftNIO read together with the reset, never arrives; the parts read before it do.
///
/// An answer of status 300 or more that arrives while the request's body is still being sent ends the upload
/// (``BodyWriter``): the writing stops at once, and once the answer has arrived whole (all the bytes its head
/// announces), the body's end is told to AsyncHTTPClient, which then fails the request with `requestStreamCancelled`:
/// that is the end of the answer, not a failure. An answer whose head does not tell its length (chunked, or until the
/// connection closes) ends the request when AsyncHTTPClient reads its end together with its last bytes; when the end
/// comes alone, AsyncHTTPClient 1.37 waits for the body's end, and nothing here tells that wait apart from an answer
/// still coming: such a request ends at its deadline.
final class ResponseDelivery: HTTPClientResponseDelegate, @unchecked Sendable {
    // @unchecked Sendable: `state` is only read and written with `lock` held.
    typealias Response = Void

    /// The most body bytes waiting for the reader before the engine stops reading: as many as the core's stream
    /// holds before it makes the exchange wait (256 KiB, or a streamed answer's buffer limit if smaller), so a reader
    /// that keeps up never pauses the engine, and a stream's buffer limit bounds this buffer too.
    let pauseThreshold: Int

    /// The response head, as far as it has come.
    private enum Head {
        /// Not yet: `send` may be waiting for it.
        case waiting(UnsafeContinuation<HTTPResponseHead, any Error>?)
        /// Arrived before `send` asked for it.
        case arrived(HTTPResponseHead)
        /// Handed over.
        case taken
        /// The request failed before a head arrived.
        case failed(any Error)
    }

    private struct State {
        var head = Head.waiting(nil)
        /// Parts not read yet, in order.
        var parts = CircularBuffer<Data>()
        var bufferedBytes = 0
        /// How the body ended, once it has: the failure comes after `parts`.
        var end: Result<Void, any Error>?
        /// The reader, waiting for the next part (then `parts` is empty).
        var reader: UnsafeContinuation<Data?, any Error>?
        /// What AsyncHTTPClient waits for before it hands over the next part, while the reader is behind.
        var paused: EventLoopPromise<Void>?
        /// Runs once when the body ends, however it ends (``init(writer:decodedContentCodings:onEnd:)``); `nil` once
        /// it has run.
        var onEnd: (@Sendable () -> Void)?
        /// Whether the answer arrived while the request's body was still being sent, with a status of 300 or more.
        var answeredEarly = false
        /// The bytes of such an answer still to come, when its head tells them.
        var answerRemaining: Int64?
        /// Whether the body ends when the connection closes (RFC 9112 §6.3, item 8).
        var endsAtClose = false
        /// Whether the answer has no body though it names a coding the client decodes (``isBodylessButCoded(_:)``).
        var bodylessButCoded = false
        /// Whether any byte of the body arrived.
        var bodyArrived = false
        /// Told the bytes buffered the next time the engine pauses (``whenPaused(_:)``).
        var onPause: (@Sendable (Int) -> Void)?
    }

    private let lock = NIOLock()
    private var state = State()
    /// The writer of the request's body, if it has one to write.
    private let writer: BodyWriter?
    /// Told the size of each part of the request's body AsyncHTTPClient wrote, for a body it writes itself (from
    /// memory); `nil` when the body's chunks are counted as they are handed over (a file, a stream).
    private let sentPart: (@Sendable (Int64) -> Void)?
    /// The content codings the client decodes: the `Content-Length` of such a body does not count what arrives.
    private let decodedContentCodings: Set<String>
    /// Whether the request was a `HEAD`, whose answer has no body whatever its head says.
    private let isHead: Bool
    /// Whether the connection that carried the answer ended with a failure AsyncHTTPClient could not see (a pinned
    /// host's, through its relay): asked when a body that ends at the connection's close has ended.
    private let connectionBroke: (@Sendable () -> Bool)?

    /// A delivery for one hop.
    ///
    /// - Parameters:
    ///   - writer: The writer of the request's body, stopped by an answer that arrives before the body's end.
    ///   - decodedContentCodings: The content codings the client decodes.
    ///   - isHead: Whether the request was a `HEAD`.
    ///   - connectionBroke: Whether the connection that carried the answer ended with a failure that AsyncHTTPClient
    ///     only saw as a close; `nil` when it sees every failure itself. A body that ends at the connection's close
    ///     then fails with `NIOSSLError.uncleanShutdown` instead of ending whole.
    ///   - sentPart: Told the size of each part of the request's body written, for progress (`EngineRequest.sent`
    ///     for a body from memory): what went before an early answer, and no more.
    ///   - bufferLimit: A streamed answer's buffer limit (`EngineRequest.streamBufferLimit`), which lowers
    ///     ``pauseThreshold`` from 256 KiB when it is smaller; `nil` for none.
    ///   - onEnd: Runs once, when the body ends however it ends (its end, a failure, the reader stopping), or from
    ///     ``ended()``: before the reader can see the end, so whatever it releases is free when the exchange goes on.
    init(
        writer: BodyWriter? = nil, decodedContentCodings: Set<String> = [], isHead: Bool = false,
        connectionBroke: (@Sendable () -> Bool)? = nil, sentPart: (@Sendable (Int64) -> Void)? = nil,
        bufferLimit: Int? = nil, onEnd: (@Sendable () -> Void)? = nil
    ) {
        // At least 1: under a threshold of 0, an emptied buffer would not resume the engine, which would wait for ever.
        pauseThreshold = max(1, min(256 << 10, bufferLimit ?? .max))
        self.writer = writer
        self.sentPart = sentPart
        self.decodedContentCodings = decodedContentCodings
        self.isHead = isHead
        self.connectionBroke = connectionBroke
        state.onEnd = onEnd
    }

    /// Runs the end action if the body has not run it yet (for a task that failed without telling the delegate).
    func ended() {
        lock.withLock { () -> (@Sendable () -> Void)? in
            defer { state.onEnd = nil }
            return state.onEnd
        }?()
    }

    // MARK: - AsyncHTTPClient's side (on the connection's event loop)

    func didSendRequestPart(task: HTTPClient.Task<Void>, _ part: IOData) {
        sentPart?(Int64(part.readableBytes))
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        let early = head.status.code >= 300 && writer?.answeredEarly() == true
        let length = early ? Self.bodyLength(of: head, decodedContentCodings: decodedContentCodings) : nil
        let endsAtClose = connectionBroke != nil && !isHead && Self.endsAtClose(head)
        let bodylessButCoded = isBodylessButCoded(head)
        let waiting = lock.withLock { () -> UnsafeContinuation<HTTPResponseHead, any Error>? in
            if early { (state.answeredEarly, state.answerRemaining) = (true, length) }
            state.endsAtClose = endsAtClose
            state.bodylessButCoded = bodylessButCoded
            guard case .waiting(let continuation) = state.head else { return nil }
            state.head = continuation == nil ? .arrived(head) : .taken
            return continuation
        }
        waiting?.resume(returning: head)
        if let writer, early, length == 0 { return writer.endAfterAnswer(on: task.eventLoop) }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    /// Whether `head` answers without a body (to a `HEAD`, a `1xx`, `204` or `304`, a `Content-Length: 0`) though it
    /// names a content coding the client decodes: SwiftNIO's decompressor, set up by the label alone, fails the end
    /// of the body that never came with `truncatedData`, which is then the empty body's end
    /// (``didReceiveError(task:_:)``), as it is with the decompression off and over URLSession.
    private func isBodylessButCoded(_ head: HTTPResponseHead) -> Bool {
        guard !decodedContentCodings.isEmpty, head.headers.contains(name: "Content-Encoding") else { return false }
        let status = head.status.code
        return isHead || status < 200 || status == 204 || status == 304
            || head.headers.first(name: "Content-Length").map { $0.trimmingCharacters(in: .whitespaces) } == "0"
    }

    /// The length of `head`'s body as it reaches the delegate, when the head tells it: none for a 204 or a 304, else
    /// its `Content-Length`, unless the body is chunked or in a coding the client decodes. `nil`: not told.
    static func bodyLength(of head: HTTPResponseHead, decodedContentCodings: Set<String>) -> Int64? {
        if head.status == .noContent || head.status == .notModified { return 0 }
        if head.headers.contains(name: "Transfer-Encoding") { return nil }
        if !decodedContentCodings.isEmpty, head.headers.contains(name: "Content-Encoding") { return nil }
        return head.headers.first(name: "Content-Length").flatMap { Int64($0) }
    }

    /// The first transfer coding of `head` other than a final `chunked` (which SwiftNIO's parser removes) on an answer
    /// with a body, or `nil`: `gzip` for `Transfer-Encoding: gzip, chunked`, whose bytes SwiftNIO hands over coded.
    static func transferCoding(of head: HTTPResponseHead, isHead: Bool) -> String? {
        let status = head.status.code
        guard !isHead, status >= 200, status != 204, status != 304 else { return nil }
        var codings = head.headers["Transfer-Encoding"].flatMap { $0.split(separator: ",") }.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        if codings.last == "chunked" { codings.removeLast() }
        return codings.first { !$0.isEmpty && $0 != "identity" }
    }

    /// The content codings of `head`, an answer with a body, when it lists more than one (`gzip, gzip`, or
    /// `identity, gzip`), or `nil`: SwiftNIO's decompressor decodes by the first one listed alone, so that the rest
    /// (or, behind an `identity`, every layer) would reach the caller still coded, announced as decoded.
    static func contentCodingsInTurn(of head: HTTPResponseHead, isHead: Bool) -> [String]? {
        let status = head.status.code
        guard !isHead, status >= 200, status != 204, status != 304 else { return nil }
        let codings = head.headers["Content-Encoding"].flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
        return codings.count > 1 ? codings : nil
    }

    /// Whether the body of `head` (not a `HEAD`'s answer) ends when the connection closes: neither chunked nor of a
    /// told length (RFC 9112 §6.3).
    static func endsAtClose(_ head: HTTPResponseHead) -> Bool {
        let status = head.status.code
        if status < 200 || status == 204 || status == 304 { return false }
        let codings = head.headers[canonicalForm: "Transfer-Encoding"]
        if let last = codings.last { return last.lowercased() != "chunked" }
        return !head.headers.contains(name: "Content-Length")
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        guard buffer.readableBytes > 0 else { return task.eventLoop.makeSucceededVoidFuture() }
        let part = Data(buffer: buffer)
        let (arrival, answered) = lock.withLock { () -> (Arrival, Bool) in
            state.bodyArrived = true
            let answered = countInsideLock(part.count)
            return (arriveInsideLock(part, on: task.eventLoop), answered)
        }
        let resumed: EventLoopFuture<Void>
        switch arrival {
        case .handedOver(let reader):
            reader.resume(returning: part)
            resumed = task.eventLoop.makeSucceededVoidFuture()
        case .paused(let future, let bufferedBytes, let onPause):
            resumed = future
            onPause?(bufferedBytes)
        case .buffered, .dropped:
            resumed = task.eventLoop.makeSucceededVoidFuture()
        }
        guard answered, let writer else { return resumed }
        // The answer has arrived whole: the upload's end is told before AsyncHTTPClient goes on.
        let ended = writer.endAfterAnswer(on: task.eventLoop)
        return resumed.flatMap { ended }
    }

    /// Counts `count` bytes of an early answer; returns whether they complete it.
    private func countInsideLock(_ count: Int) -> Bool {
        guard state.answeredEarly, let remaining = state.answerRemaining, remaining > 0 else { return false }
        state.answerRemaining = remaining - Int64(count)
        return remaining <= Int64(count)
    }

    /// Takes `part` for the reader.
    private func arriveInsideLock(_ part: Data, on eventLoop: any EventLoop) -> Arrival {
        guard state.end == nil else { return .dropped }
        if let reader = state.reader {
            state.reader = nil
            return .handedOver(reader)
        }
        state.parts.append(part)
        state.bufferedBytes += part.count
        guard state.bufferedBytes >= pauseThreshold else { return .buffered }
        let paused = eventLoop.makePromise(of: Void.self)
        state.paused = paused
        defer { state.onPause = nil }
        return .paused(paused.futureResult, bufferedBytes: state.bufferedBytes, onPause: state.onPause)
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
        // After an early answer, AsyncHTTPClient fails the request this way once the upload's end is told, the answer
        // whole (see `BodyWriter`): the end of the request body, not a failure of the response.
        let (answered, bodyless) = lock.withLock {
            (state.answeredEarly, state.bodylessButCoded && !state.bodyArrived)
        }
        if answered, (error as? HTTPClientError) == .requestStreamCancelled { return end(with: .success(())) }
        if bodyless, (error as? NIOHTTPDecompression.ExtraDecompressionError) == .truncatedData {
            return end(with: .success(()))
        }
        end(with: .failure(error))
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {
        // A body that ends at the close, whose connection broke: the close is the failure's, not the body's end.
        if let connectionBroke, lock.withLock({ state.endsAtClose }), connectionBroke() {
            return end(with: .failure(NIOSSLError.uncleanShutdown))
        }
        end(with: .success(()))
    }

    /// What became of a part that arrived.
    private enum Arrival {
        /// The reader was waiting: it gets the part.
        case handedOver(UnsafeContinuation<Data?, any Error>)
        /// It waits for the reader.
        case buffered
        /// It waits, and the reader is so far behind that AsyncHTTPClient must wait for this future: told to
        /// `onPause`, with the bytes buffered.
        case paused(EventLoopFuture<Void>, bufferedBytes: Int, onPause: (@Sendable (Int) -> Void)?)
        /// The body had ended (the reader stopped): nobody wants it.
        case dropped
    }

    /// Runs `handler` once, with the bytes buffered, when the engine pauses (at once if it is paused now): what a
    /// test waits for.
    func whenPaused(_ handler: @escaping @Sendable (Int) -> Void) {
        let pausedNow = lock.withLock { () -> Int? in
            guard state.paused == nil else { return state.bufferedBytes }
            state.onPause = handler
            return nil
        }
        if let pausedNow { handler(pausedNow) }
    }

    // MARK: - The transport's side

    /// The response head, once it arrives; throws why the request failed before one did. Called once.
    func head() async throws -> HTTPResponseHead {
        try await withUnsafeThrowingContinuation { continuation in
            let ready = lock.withLock { () -> Result<HTTPResponseHead, any Error>? in
                switch state.head {
                case .arrived(let head):
                    state.head = .taken
                    return .success(head)
                case .failed(let error):
                    return .failure(error)
                case .waiting, .taken:
                    state.head = .waiting(continuation)
                    return nil
                }
            }
            if let ready { continuation.resume(with: ready) }
        }
    }

    /// The next part of the body, `nil` at its end; throws the failure that ended it once the parts before it are
    /// read. One reader at a time; a cancelled reader stops the body (`stop`) and gets a `CancellationError`.
    func next(cancelling task: HTTPClient.Task<Void>) async throws -> Data? {
        if let ready = try takeReady() { return ready }
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                let ready = lock.withLock { () -> Result<(part: Data?, resumed: EventLoopPromise<Void>?), any Error>? in
                    do {
                        if let ready = try takeInsideLock() { return .success(ready) }
                    } catch {
                        return .failure(error)
                    }
                    state.reader = continuation
                    return nil
                }
                guard let ready else { return }
                continuation.resume(with: ready.map(\.part))
                if case .success(let taken) = ready { taken.resumed?.succeed(()) }
            }
        } onCancel: {
            if stop() { task.cancel() }
        }
    }

    /// Ends the body for a reader that stops reading: what is buffered goes, a waiting reader gets a
    /// `CancellationError`, AsyncHTTPClient, if waiting for the reader, goes on (to its cancellation), and the
    /// request's body, if still being sent, stops. Returns whether the body was still open: then the request must be
    /// cancelled.
    func stop() -> Bool {
        ended()
        let taken = lock.withLock {
            () -> (open: Bool, reader: UnsafeContinuation<Data?, any Error>?, paused: EventLoopPromise<Void>?) in
            guard state.end == nil else { return (false, nil, nil) }
            state.end = .failure(CancellationError())
            state.parts.removeAll()
            state.bufferedBytes = 0
            defer {
                state.reader = nil
                state.paused = nil
            }
            return (true, state.reader, state.paused)
        }
        taken.reader?.resume(throwing: CancellationError())
        taken.paused?.succeed(())
        // The body's end is told before the request is cancelled: AsyncHTTPClient then completes a write it holds back.
        if taken.open { writer?.stop() }
        return taken.open
    }

    /// A part, or the end (`.some(nil)`), if one is ready; `nil` when the reader must wait.
    private func takeReady() throws -> Data?? {
        guard let ready = try lock.withLock({ try takeInsideLock() }) else { return nil }
        ready.resumed?.succeed(())
        return .some(ready.part)
    }

    /// Takes the oldest part, or the end once every part is read; `nil` when neither is there. Returns the promise
    /// AsyncHTTPClient waits for when taking the part brought the reader back under ``pauseThreshold``: succeed it
    /// after unlocking.
    private func takeInsideLock() throws -> (part: Data?, resumed: EventLoopPromise<Void>?)? {
        if let part = state.parts.popFirst() {
            state.bufferedBytes -= part.count
            guard state.bufferedBytes < pauseThreshold, let paused = state.paused else { return (part, nil) }
            state.paused = nil
            return (part, paused)
        }
        switch state.end {
        case .none: return nil
        case .success: return (nil, nil)
        case .failure(let error): throw error
        }
    }

    /// Ends the body (after the parts buffered) and fails a head still awaited.
    private func end(with result: Result<Void, any Error>) {
        ended()
        typealias Ending = (
            head: UnsafeContinuation<HTTPResponseHead, any Error>?, reader: UnsafeContinuation<Data?, any Error>?,
            paused: EventLoopPromise<Void>?
        )
        let ending = lock.withLock { () -> Ending in
            var head: UnsafeContinuation<HTTPResponseHead, any Error>?
            if case .waiting(let continuation) = state.head, case .failure(let error) = result {
                head = continuation
                state.head = .failed(error)
            }
            guard state.end == nil else { return (head, nil, nil) }
            state.end = result
            defer {
                state.reader = nil
                state.paused = nil
            }
            return (head, state.reader, state.paused)
        }
        if case .failure(let error) = result { ending.head?.resume(throwing: error) }
        ending.reader?.resume(with: result.map { nil })
        ending.paused?.succeed(())
    }
}

@_spi(Engine)
extension AsyncHTTPClientTransport {
    /// The body of a response, read as the core's exchange asks for it: every part that arrived before a failure, then
    /// the failure. A body dropped before its end cancels its request, which closes the connection.
    public final class ResponseBody: AsyncSequence, Sendable {
        /// A part of the body, as it arrived.
        public typealias Element = Data

        let delivery: ResponseDelivery
        private let task: HTTPClient.Task<Void>

        init(delivery: ResponseDelivery, task: HTTPClient.Task<Void>) {
            self.delivery = delivery
            self.task = task
        }

        deinit {
            if delivery.stop() { task.cancel() }
        }

        /// Reads the body; one iterator at a time.
        public func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(body: self)
        }

        /// Reads the body part by part.
        public struct AsyncIterator: AsyncIteratorProtocol {
            let body: ResponseBody

            /// The next part, `nil` at the end; throws the failure that ended the body.
            public mutating func next() async throws -> Data? {
                try await body.delivery.next(cancelling: body.task)
            }
        }
    }
}
