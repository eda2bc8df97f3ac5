import Foundation

/// What turns a stream's chunks into batches: the parser behind a batched view (``ResponseLineBatches``,
/// ``ResponseEventBatches``).
protocol ChunkBatching {
    associatedtype Batch

    /// The batch of what `chunk` completes (`nil` when it completes nothing), and the failure to throw after it,
    /// which ends the iteration. A `nil` chunk is the end of the body.
    mutating func batch(of chunk: Data?) -> (batch: Batch?, failure: (any Error)?)
}

/// The iteration shared by the batched views: reads a chunk of the base only when asked for a batch (never ahead),
/// reads on until a chunk completes something, throws a parser's failure after the batch before it and a base's
/// error as it is, and returns `nil` once the iteration is over. A cancelled task, or a cancelled base, gets
/// ``ConnectError/Kind/cancelled`` from its next `next()`, as a ``ResponseStream``'s own iterator does.
struct BatchedChunks<Base: AsyncIteratorProtocol, Batching: ChunkBatching> where Base.Element == Data {
    private var base: Base
    /// The parser: its state is read by the view (the last event ID…).
    private(set) var batching: Batching
    /// Whether the body ended, or a failure ended the iteration.
    private(set) var isFinished = false
    /// Whether the iteration ended because its task or its base was cancelled: the parser's state may be ahead of
    /// the last batch handed out.
    private(set) var wasCancelled = false
    /// A parser's failure, thrown after the batch of what came before it.
    private var failure: (any Error)?
    /// The base, when it can tell that its body was cancelled (a ``ResponseStream``'s).
    private let stoppable: (any StoppableChunks)?

    init(base: Base, batching: Batching) {
        self.base = base
        self.batching = batching
        stoppable = base as? any StoppableChunks
    }

    /// The next batch; `nil` at the end of the body.
    mutating func next() async throws -> Batching.Batch? {
        while try !isOver() {
            let chunk: Result<Data?, any Error>
            do { chunk = .success(try await base.next()) } catch { chunk = .failure(error) }
            try checkCancellation()
            if let batch = try received(chunk) { return batch }
        }
        return nil
    }

    /// The next batch, reading the base on `actor`; `nil` at the end of the body.
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
    mutating func next(isolation actor: isolated (any Actor)?) async throws -> Batching.Batch? {
        while try !isOver() {
            let chunk: Result<Data?, any Error>
            do { chunk = .success(try await base.next(isolation: actor)) } catch { chunk = .failure(error) }
            try checkCancellation()
            if let batch = try received(chunk) { return batch }
        }
        return nil
    }

    /// Whether the iteration is over; throws, once, the failure that ended it (the base is then cancelled, which
    /// stops its transfer), or ``ConnectError/Kind/cancelled`` when the reading task or the base was cancelled (the
    /// base too).
    private mutating func isOver() throws -> Bool {
        try checkCancellation()
        if let failure {
            // A parser's failure: nothing more is read, so the transfer stops, even if the caller keeps the iterator.
            self.failure = nil
            stoppable?.cancel()
            throw failure
        }
        return isFinished
    }

    /// Ends the iteration with ``ConnectError/Kind/cancelled`` when the reading task or the base was cancelled (the
    /// base too), unless it is over: also right after a read, so that a chunk read as it was cancelled is not handed
    /// out, nor an end (a base that ends when its task is cancelled, an `AsyncStream`, did not end the body).
    private mutating func checkCancellation() throws {
        guard !isFinished || failure != nil, Task.isCancelled || stoppable?.isCancelled == true else { return }
        isFinished = true
        wasCancelled = true
        failure = nil
        stoppable?.cancel()
        throw ConnectError.cancelled()
    }

    /// The batch of what the base gave, if it completes something; its error, as it is.
    private mutating func received(_ chunk: Result<Data?, any Error>) throws -> Batching.Batch? {
        let data: Data?
        do {
            data = try chunk.get()
        } catch {
            isFinished = true
            throw error
        }
        if data == nil { isFinished = true }
        let (batch, failure) = batching.batch(of: data)
        if let failure {
            isFinished = true
            self.failure = failure
        }
        return batch
    }
}
