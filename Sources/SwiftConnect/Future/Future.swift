import Dispatch

/// The eventual result of an asynchronous operation: a value or an error.
///
/// Every request SwiftConnect starts returns a `Future`. Chain operators to transform the result, then
/// ``observe(on:_:)`` it or `await` its ``value``:
///
/// ```swift
/// Connect.default.request(TodoConnector.get(id: 123))
///     .decoded(toType: Todo.self)
///     .observe { result in
///         switch result {
///         case .success(let todo): print(todo.title)
///         case .failure(let error): print(error)
///         }
///     }
/// ```
///
/// ## Completing a future
/// A future is read-only. The write side is a ``Promise``: make one, hand out its ``Promise/future``, and
/// complete it once. A future can also start resolved (``init(value:)``, ``init(error:)``) or come from an
/// `async` closure (``init(priority:_:)``).
///
/// ## Which thread runs my callbacks?
/// A callback runs on the thread that completes the future; if the future is already complete when the
/// callback is added, it runs at once on the thread that adds it. A future never hops threads on its own, so
/// nothing depends on a run loop or the main queue (a command-line program that never runs the main run loop
/// still gets its callbacks). A request's future completes on a thread of its engine (a URLSession queue thread,
/// or the task of an `AsyncHTTPClientTransport` exchange), or, for a body of 32 KiB or more, on a global
/// concurrent queue, where decoding it does not hold up other responses; a request that times out completes on a
/// global queue, and one that is cancelled on the thread that cancels it. To choose the queue, pass one:
/// `observe(on: .main) { … }`, or insert ``receive(on:)`` in a chain.
///
/// ## Guarantees
/// A future completes at most once; later completions are ignored (and reported in debug builds). Every callback runs
/// exactly once. The callbacks added while the future is pending run in the order they were added. One added once it is
/// complete runs at once, also from inside another callback (so a callback may wait for what it adds); if the earlier
/// callbacks have not started yet (their thread is still busy with another stage of the chain), it runs them first,
/// then itself, on its own thread or, after ``receive(on:)``, in that order on the queue. Callbacks run outside the
/// future's lock, so a callback may add callbacks or complete other futures. Long chains complete iteratively, without
/// deep recursion. A promise completed inside a callback runs its callbacks there, nested; past 32 such nested
/// completions on a thread (a line of promises, each completed by a callback of the one before), the deeper ones run
/// once the callback in progress returns, before the outermost completion does, so the stack cannot overflow. Once
/// complete, a future releases its callbacks and its cancel handler, so nothing in a finished chain is kept alive.
///
/// ## Cancellation
/// ``cancel()`` fails a pending future with ``FutureError/cancelled`` (a request's future: with the client's own
/// error of kind `cancelled`) and runs its cancel handler (for a request: cancelling its network task).
/// Cancelling a future derived with `map`, `flatMap`, `zip`… also cancels the futures it came from, so
/// cancelling the end of a chain cancels the request.
///
/// ## What passes through
/// Operators that hand a result on unchanged (``timeout(after:on:)``, ``receive(on:)``, ``always(on:_:)``) return a
/// future that knows what this one knows about where its value comes from: the body of a response that ``Connect``
/// returned still decodes by the response's content type after them. Operators that make a new value (`map`,
/// `flatMap`…) start afresh.
public final class Future<Value: Sendable>:
    // Checked by hand: `lock` protects `state`, `cancelHandler`, `upstream`, `callbacks` and `wasCancelled`
    // (`attachment` is immutable). A future created resolved has no lock: its `state` is written
    // once, in `init`, and never again, so it is read without a lock (also by the `@inlinable` fast paths,
    // which client modules compile: they touch `state` only when `lock` is `nil`).
    @unchecked Sendable
{
    /// A callback stored while the future is pending. It returns the futures it resolved in turn, so the
    /// caller can run their callbacks in a loop instead of recursing.
    @usableFromInline
    typealias Callback = @Sendable (Result<Value, any Error>) -> CallbackList

    /// Pending callbacks in registration order; the first one is stored inline (no array allocation).
    @usableFromInline
    struct Callbacks: Sendable {
        @usableFromInline var first: Callback?
        @usableFromInline var rest: [Callback]

        /// No callbacks. Inlinable, so a future created resolved in a client module builds its empty stash
        /// without looking up generic metadata.
        @inlinable
        init() {
            first = nil
            rest = []
        }

        @inlinable
        mutating func append(_ callback: @escaping Callback) {
            if first == nil { first = callback } else { rest.append(callback) }
        }
    }

    // The fast paths compiled into client modules (`@inlinable`) use `lock`, `callbackQueue` and `state`,
    // so they are `@usableFromInline`; they stay internal.
    /// Whether the future is complete, and with what.
    @usableFromInline
    enum State {
        /// Not complete yet.
        case pending
        /// Complete with this result.
        case resolved(Result<Value, any Error>)
    }

    /// The state, behind `lock` (or immutable, for a future created resolved).
    @usableFromInline final var state: State
    /// `nil` for a future created resolved (``init(result:)``), whose `state` never changes.
    @usableFromInline final let lock: Lock?
    /// Where callbacks run, for futures made by ``receive(on:)`` and the stages derived from them; `nil` runs
    /// them on the completing thread.
    /// Always `nil` when `lock` is `nil`.
    @usableFromInline final let callbackQueue: DispatchQueue?
    @usableFromInline final var cancelHandler: (@Sendable () -> Void)?
    @usableFromInline final weak var upstream: (any CancellableFuture)?
    /// The value type that reports this chain's ``FutureError``s (``reported(_:)``), learnt from the future this one
    /// was made from when it was linked to it: the link is weak and cleared on completion, so once a stage before it
    /// completed and was freed, a cancel or timeout reaching this one would no longer find its chain's type.
    @usableFromInline final var chainReporter: (any FutureErrorReporting.Type)?
    /// The callbacks registered while pending; on completion, the ones still to run (by the completing thread, or by
    /// one that adds a callback before that thread reaches them).
    @usableFromInline final var callbacks = Callbacks()
    /// Whether a callback was ever stored while pending: only then can a deinit have callbacks to free (read
    /// without the lock in `deinit`, when nothing else holds the future). Never reset; a hint, not a count.
    @usableFromInline final var holdsPendingCallbacks = false
    /// Whether the future was resolved by ``cancel()``; later completions of a cancelled future are expected.
    @usableFromInline final var wasCancelled = false
    /// What the future's producer knows about where its value comes from, handed on by the operators that pass the
    /// result through unchanged (``passingThrough()``); `nil` for most futures. Immutable: an attachment that learns
    /// more later (a response body's response) protects its own state. The future knows nothing of what it is.
    @usableFromInline final let attachment: (any AnyObject & Sendable)?
    /// Runs the stashed callbacks (``runStashedCallbacksHere()``), as compiled where the future was created. The
    /// drain loop reaches futures through a protocol, whose witness is generic code that would look up `Value`'s
    /// metadata for every result it reads; this closure, written in `@inlinable` initialisers, is specialised for
    /// the creator's `Value`. It captures nothing, so it costs no allocation.
    @usableFromInline final let drainer: @Sendable (Future<Value>) -> CallbackList

    /// Creates a pending future. Only a ``Promise`` or an operator completes it.
    @inlinable
    init(callbackQueue: DispatchQueue? = nil, attachment: (any AnyObject & Sendable)? = nil) {
        lock = Lock()
        self.callbackQueue = callbackQueue
        self.attachment = attachment
        drainer = { $0.runStashedCallbacksHere() }
        state = .pending
    }

    /// Creates a future that is already complete with `result`.
    ///
    /// - Parameter result: The value or error the future holds.
    @inlinable
    public init(result: Result<Value, any Error>) {
        lock = nil
        callbackQueue = nil
        attachment = nil
        drainer = { $0.runStashedCallbacksHere() }
        state = .resolved(result)
    }

    /// Creates a future that already succeeded.
    ///
    /// ```swift
    /// let answer = Future(value: 42)
    /// ```
    ///
    /// - Parameter value: The value the future holds.
    @inlinable
    public convenience init(value: Value) {
        self.init(result: .success(value))
    }

    /// Creates a future that already failed.
    ///
    /// - Parameter error: The error the future holds.
    @inlinable
    public convenience init(error: any Error) {
        self.init(result: .failure(error))
    }

    /// Creates a pending future and hands its promise to `producer`, which completes it now or later.
    ///
    /// ```swift
    /// let future = Future<Int> { promise in
    ///     DispatchQueue.global().async { promise.succeed(42) }
    /// }
    /// ```
    ///
    /// - Parameter producer: Receives the promise; called synchronously, before `init` returns.
    public convenience init(_ producer: (Promise<Value>) -> Void) {
        self.init()
        producer(Promise(future: self))
    }

    deinit {
        guard let lock else { return }
        lock.destroy()
        // A future dropped while pending keeps its callbacks, and in a chain each holds the next future: freeing
        // them here would free the next future, whose deinit frees its callbacks, and so on, one stack frame per
        // stage (a 100,000-stage chain overflowed the stack). They are handed to the thread's release loop
        // instead, which frees them one after another.
        // (Callbacks left here were never run: running them empties this.)
        guard holdsPendingCallbacks, callbacks.first != nil else { return }
        let unrun = callbacks
        callbacks = Callbacks()
        DeferredRelease.release(consume unrun)
    }

    /// The result, if the future is complete.
    ///
    /// Prefer ``observe(on:_:)`` or ``value``: polling is for tests and diagnostics.
    @inlinable
    public final var result: Result<Value, any Error>? {
        guard lock == nil else { return lockedResult }
        return resolvedResult
    }

    /// Whether the future is complete.
    @inlinable
    public final var isCompleted: Bool {
        guard lock == nil else { return lockedResult != nil }
        return true
    }

    /// The result of a future that has a lock, read under it.
    @inlinable
    final var lockedResult: Result<Value, any Error>? {
        guard let lock else { return resolvedResult }
        return lock.withLock { () -> Result<Value, any Error>? in
            if case .resolved(let result) = state { return result }
            return nil
        }
    }

    /// The result an operator may compute from at once, on the calling thread: that of a complete future with no
    /// callback queue whose callbacks have all been taken to run; `nil` otherwise. Callbacks added before the
    /// completion may still wait for the completing thread (busy with an earlier stage): an operator's transform,
    /// itself a callback added once complete, must then run after them (``whenCompleteReturningWork(_:)``).
    @inlinable
    final var resultForImmediateTransform: Result<Value, any Error>? {
        guard let lock else { return resolvedResult }
        guard callbackQueue == nil else { return nil }
        return lock.withLock { () -> Result<Value, any Error>? in
            guard case .resolved(let result) = state, callbacks.first == nil else { return nil }
            return result
        }
    }

    /// The result of a future known to be complete: one created resolved (no lock: its state never
    /// changes), or one whose callbacks are running (its state no longer changes either).
    @inlinable
    final var resolvedResult: Result<Value, any Error> {
        if case .resolved(let result) = state { return result }
        preconditionFailure("unreachable: a future without a lock is always resolved")
    }
}

// MARK: - Core primitives

/// A future whose callbacks are waiting to run, type-erased so futures of different types can be drained
/// by one loop.
@usableFromInline
protocol DrainableFuture: AnyObject {
    func runStashedCallbacks() -> CallbackList
}

/// A future that can be cancelled, type-erased, so a derived future can cancel the one it came from.
@usableFromInline
protocol CancellableFuture: AnyObject, Sendable {
    func cancel()
    /// Cancels this future only, failing it with `error`, and runs its cancel handler; returns the future it came
    /// from, which the caller cancels next, and whether callbacks now wait to run (``runCancellationCallbacks()``).
    func cancelStep(failingWith error: any Error) -> (upstream: (any CancellableFuture)?, hasCallbacks: Bool)
    /// Runs the callbacks of a future that ``cancelStep(failingWith:)`` cancelled.
    func runCancellationCallbacks()
    /// Cancels this future, unless it is complete, and the futures it waits on, each failing as ``cancel()`` fails
    /// this one; lists those whose callbacks are then to run (``runCancellationCallbacks()``).
    func cancelStepsAsInput(notifying toNotify: inout [any CancellableFuture])
    /// `error` as this future's value type reports it (``FutureErrorReporting``); `nil` if the type does not.
    func ownReport(of error: FutureError) -> (any Error)?
    /// The future this one waits on, while it is pending.
    var pendingUpstream: (any CancellableFuture)? { get }
    /// The value type that reports ``FutureError``s for a future made from this one: this one's own, if it reports
    /// them, else the one its chain learnt (``Future/chainReporter``).
    func reporterForDerived() -> (any FutureErrorReporting.Type)?
    /// Cancels this future as an input of a combination whose cancel handler runs (``Future/cancelAsInput()``).
    func cancelAsInput()
    /// The futures a combination waits on (``CombinedInputs``); `nil` for a future, which waits on its
    /// ``pendingUpstream`` alone.
    var combinationInputs: [any CancellableFuture]? { get }
}

/// Futures that were just resolved and whose callbacks must run next.
@usableFromInline
struct CallbackList {
    @usableFromInline var first: (any DrainableFuture)?
    @usableFromInline var rest: [any DrainableFuture]

    /// Lists `first` (if any) and nothing after it.
    @inlinable
    init(first: (any DrainableFuture)?) {
        self.first = first
        rest = []
    }

    /// Nothing to run.
    @inlinable
    static var empty: CallbackList { CallbackList(first: nil) }

    /// Adds the futures of `other` after these.
    @inlinable
    mutating func append(_ other: CallbackList) {
        guard let otherFirst = other.first else { return }
        guard first != nil else {
            self = other
            return
        }
        rest.append(otherFirst)
        rest.append(contentsOf: other.rest)
    }

    /// Runs the callbacks of every listed future, then those of the futures they resolve, iteratively:
    /// a chain of 10,000 stages uses constant stack. Inside a callback (one that completes a promise) it runs at
    /// once up to 32 runs deep on a thread, and deeper after the run in progress there (``NestedRuns``).
    @inlinable
    func run() {
        guard first != nil else { return }
        NestedRuns.run(self)
    }

    /// ``run()`` here and now, however deep the runs in progress on this thread.
    @inlinable
    func runHere() {
        guard var current = first else { return }
        if rest.isEmpty {
            // A linear chain, the common case: no array at all.
            while true {
                let next = current.runStashedCallbacks()
                guard let nextFirst = next.first else { return }
                guard next.rest.isEmpty else {
                    next.runWithStack()
                    return
                }
                current = nextFirst
            }
        }
        runWithStack()
    }

    /// The general case: depth-first, each future's callbacks in registration order.
    @usableFromInline
    func runWithStack() {
        var stack: [any DrainableFuture] = []
        stack.reserveCapacity(rest.count + 1)
        stack.append(contentsOf: rest.reversed())
        if let first { stack.append(first) }
        while let future = stack.popLast() {
            let next = future.runStashedCallbacks()
            stack.append(contentsOf: next.rest.reversed())
            if let nextFirst = next.first { stack.append(nextFirst) }
        }
    }
}

extension Future: DrainableFuture, CancellableFuture {
    /// Completes the future unless it is already complete (operators; a lost race is expected).
    ///
    /// - Returns: This future, if it has callbacks to run; the caller runs them (``CallbackList/run()``).
    @inlinable
    func resolve(_ result: Result<Value, any Error>) -> CallbackList {
        complete(result, reportingDoubleCompletionAt: nil).work
    }

    /// Completes the future unless it is already complete.
    ///
    /// - Parameters:
    ///   - result: The result.
    ///   - location: Where a promise was completed; a second completion from there is a caller bug worth
    ///     reporting, unless the future was cancelled (the cancelled work is expected to complete it too).
    /// - Returns: Whether this call completed the future, and the callbacks the caller must run.
    @inlinable
    func complete(
        _ result: Result<Value, any Error>,
        reportingDoubleCompletionAt location: SourceLocation?
    ) -> (completed: Bool, work: CallbackList) {
        guard let lock else {
            if let location { FutureDiagnostics.reportDoubleCompletion(of: Value.self, at: location) }
            return (false, .empty)
        }
        lock.lock()
        guard case .pending = state else {
            let expected = wasCancelled
            lock.unlock()
            if let location, !expected {
                FutureDiagnostics.reportDoubleCompletion(of: Value.self, at: location)
            }
            return (false, .empty)
        }
        state = .resolved(result)
        let handler = cancelHandler
        cancelHandler = nil
        upstream = nil
        // The callbacks stay where they are, for this thread to run (runStashedCallbacks), unless a thread that adds
        // one first takes them to run before its own.
        let hasCallbacks = callbacks.first != nil
        lock.unlock()
        _ = handler  // released outside the lock: its captures may run deinit code
        return (true, hasCallbacks ? CallbackList(first: self) : .empty)
    }

    @usableFromInline
    func runStashedCallbacks() -> CallbackList {
        drainer(self)
    }

    /// Runs the callbacks stashed while the future was pending, once it is resolved (``runStashedCallbacks()``).
    @inlinable
    final func runStashedCallbacksHere() -> CallbackList {
        // The thread that resolved the future gets here once, right after `resolve` or `cancel`. The callbacks are
        // taken under the lock: a thread that adds a callback meanwhile, seeing the future complete, may have taken
        // them already, to run them before its own (`whenCompleteReturningWork`); then there is nothing left here.
        guard let lock else { return .empty }
        lock.lock()
        let callbacks = self.callbacks
        self.callbacks = Callbacks()
        guard callbackQueue == nil else {
            // Queued under the lock: a callback another thread adds once the lock is free is queued after these.
            let work = run(callbacks)
            lock.unlock()
            return work
        }
        lock.unlock()
        return run(callbacks)
    }

    /// Runs callbacks taken from a resolved future, in order: here, or on its callback queue.
    ///
    /// - Returns: What they resolved in turn, when they ran here; the caller runs it.
    @inlinable
    final func run(_ callbacks: Callbacks) -> CallbackList {
        guard let first = callbacks.first else { return .empty }
        // Resolved: `state` no longer changes.
        let result = resolvedResult
        if let callbackQueue {
            // `self` is kept until its callbacks have run: operators' callbacks read it (`unowned`).
            callbackQueue.async { [self] in
                _ = self
                var list = first(result)
                for callback in callbacks.rest { list.append(callback(result)) }
                list.run()
            }
            return .empty
        }
        var list = first(result)
        for callback in callbacks.rest { list.append(callback(result)) }
        return list
    }

    /// Adds a callback, or runs it now if the future is complete.
    ///
    /// - Returns: What the callback resolved when it ran now; the caller runs it.
    @inlinable
    func whenCompleteReturningWork(_ callback: @escaping Callback) -> CallbackList {
        guard let lock else { return callback(resolvedResult) }
        lock.lock()
        switch state {
        case .pending:
            callbacks.append(callback)
            holdsPendingCallbacks = true
            lock.unlock()
            return .empty
        case .resolved(let result):
            // Callbacks added before the completion that the completing thread has not run yet (it is still running
            // those of an earlier stage, or has not reached this future's yet): taken and run first, so that callbacks
            // run in the order they were added, and this one still runs at once.
            guard callbacks.first == nil else {
                var earlier = callbacks
                callbacks = Callbacks()
                earlier.append(callback)
                guard callbackQueue == nil else {
                    // Queued under the lock, as `runStashedCallbacksHere` queues: in the order the lock is taken.
                    let work = run(earlier)
                    lock.unlock()
                    return work
                }
                lock.unlock()
                return run(earlier)
            }
            if let callbackQueue {
                // Queued under the lock: after the callbacks the completing thread queued (holding the lock too).
                // `self` is kept until the callback has run: operators' callbacks read it (`unowned`).
                callbackQueue.async { [self] in
                    _ = self
                    callback(result).run()
                }
                lock.unlock()
                return .empty
            }
            lock.unlock()
            return callback(result)
        }
    }

    /// Adds a callback that resolves nothing further, running everything it triggers.
    @inlinable
    func whenComplete(_ callback: @escaping @Sendable (Result<Value, any Error>) -> Void) {
        whenCompleteReturningWork { result in
            callback(result)
            return .empty
        }.run()
    }

    /// Makes a pending future whose cancellation cancels `self` (and so on up the chain).
    ///
    /// It delivers on `self`'s callback queue: after ``receive(on:)``, a callback added to a later stage once that
    /// stage has completed runs on the queue too, not on the thread that adds it.
    @inlinable
    func makeDerived<NewValue>(_ type: NewValue.Type = NewValue.self) -> Future<NewValue> {
        let derived = Future<NewValue>(callbackQueue: callbackQueue)
        derived.setUpstream(self)
        return derived
    }

    /// Makes a pending future of the same type that keeps this one's ``attachment``, for an operator that passes
    /// the result through unchanged; its cancellation cancels `self`.
    func passingThrough(on queue: DispatchQueue? = nil) -> Future<Value> {
        let derived = Future<Value>(callbackQueue: queue ?? callbackQueue, attachment: attachment)
        derived.setUpstream(self)
        return derived
    }

    /// Points cancellation of this future at `future`, which it now depends on.
    @inlinable
    func setUpstream(_ future: any CancellableFuture) {
        guard let lock else { return }
        let reporter = future.reporterForDerived()
        let cancelNow: Bool = lock.withLock {
            switch state {
            case .pending:
                upstream = future
                // A later link (a `flatMap`'s step) that knows none keeps the one learnt first.
                if let reporter { chainReporter = reporter }
                return false
            case .resolved:
                return wasCancelled
            }
        }
        if cancelNow { future.cancel() }
    }

    /// Sets the action ``cancel()`` runs, replacing (and releasing, unrun) the one set before; runs it at once if the
    /// future was already cancelled.
    func setCancelHandler(_ handler: @escaping @Sendable () -> Void) {
        guard let lock else { return }
        let (runNow, replaced): (Bool, (@Sendable () -> Void)?) = lock.withLock {
            switch state {
            case .pending:
                // The handler replaced is released outside the lock, as `complete` releases it: its captures may run
                // deinit code that uses this future.
                defer { cancelHandler = handler }
                return (false, cancelHandler)
            case .resolved:
                return (wasCancelled, nil)
            }
        }
        _ = replaced
        if runNow { handler() }
    }
}

// MARK: - Cancellation

extension Future {
    /// Cancels the future: fails it with ``FutureError/cancelled`` and runs its cancel handler
    /// (for a request, cancelling the network task).
    ///
    /// Does nothing if the future is already complete. The failure and the cancel handler happen exactly
    /// once, however many threads call `cancel()`. A derived future also cancels the future it came from.
    ///
    /// A future whose work has an error type of its own fails with that type's cancellation instead, and so
    /// does every future chained on it with a one-source operator: a request's future, and what `map`,
    /// `flatMap`, `decoded`… derive from it, fail with the client's error of kind `cancelled`. A future that
    /// combines several (`zip`, `all`, `allSettled`) fails with ``FutureError/cancelled``; `race`, whose value
    /// is its inputs', fails as a future of that value does (a race of requests' futures: with the client's error).
    ///
    /// ```swift
    /// let todo = connect.request(TodoConnector.get(id: 1)).decoded(toType: Todo.self)
    /// todo.cancel()  // the network task is cancelled; observers get the client's cancellation error
    /// ```
    public func cancel() {
        // Every future of the chain fails with the same error, found first (another walk up the chain), unless
        // there is nothing to cancel.
        guard lock != nil, !isCompleted else { return }
        cancelChain(failingWith: reported(.cancelled))
    }

    /// Cancels the future as ``cancel()`` does, the chain failing with `error` instead of the cancellation: a call's
    /// deadline or an attempt's own timeout stops the attempt in flight, and what watches it (a plugin, an observer
    /// of the transport's future) hears that it timed out, not that someone cancelled it.
    func cancel(failingWith error: any Error) {
        guard lock != nil, !isCompleted else { return }
        cancelChain(failingWith: error)
    }

    private func cancelChain(failingWith error: any Error) {
        // Iterative: cancelling the end of a 100,000-stage chain must not recurse 100,000 deep, nor must one of
        // 100,000 combinations, whose cancel handlers cancel their inputs: those are queued (`cancelAsInput()`) and
        // cancelled in this loop, after this chain.
        // The whole chain's work is stopped before anyone hears of it: a request queue told first would start
        // the next request while this one's network task still ran, one over its limit.
        var toNotify: [any CancellableFuture] = []
        let inputs = NestedCancellations.Queue()
        let previous = NestedCancellations.begin(inputs)
        Self.cancelSteps(from: self, failingWith: error, notifying: &toNotify)
        var index = 0
        while index < inputs.futures.count {
            // Read first: cancelling it may queue more (an access to the array must not span the call).
            let input = inputs.futures[index]
            input.cancelStepsAsInput(notifying: &toNotify)
            index += 1
        }
        NestedCancellations.end(previous: previous)
        // From the source down, as a completion runs them: what the source's callbacks do (a client forgetting the
        // call it counts in flight) is done before the caller, at the end of the chain, hears of it.
        for future in toNotify.reversed() { future.runCancellationCallbacks() }
    }

    /// Cancels `first` and the futures it waits on, up the chain, failing each with `error`; lists those whose
    /// callbacks are then to run.
    private static func cancelSteps(
        from first: any CancellableFuture,
        failingWith error: any Error,
        notifying toNotify: inout [any CancellableFuture]
    ) {
        var next: (any CancellableFuture)? = first
        while let future = next {
            let step = future.cancelStep(failingWith: error)
            if step.hasCallbacks { toNotify.append(future) }
            next = step.upstream
        }
    }

    @usableFromInline
    func cancelStepsAsInput(notifying toNotify: inout [any CancellableFuture]) {
        guard lock != nil, !isCompleted else { return }
        Self.cancelSteps(from: self, failingWith: reported(.cancelled), notifying: &toNotify)
    }

    /// Cancels this future as ``cancel()`` does, for a combination that cancels its inputs from its cancel handler:
    /// inside a cancellation running on this thread, queued for it to cancel next instead of recursing.
    @usableFromInline
    func cancelAsInput() {
        guard lock != nil, !isCompleted else { return }
        if NestedCancellations.enqueue(self) { return }
        cancelChain(failingWith: reported(.cancelled))
    }

    @usableFromInline
    func cancelStep(failingWith error: any Error) -> (upstream: (any CancellableFuture)?, hasCallbacks: Bool) {
        guard let lock else { return (nil, false) }
        lock.lock()
        guard case .pending = state else {
            lock.unlock()
            return (nil, false)
        }
        state = .resolved(.failure(error))
        wasCancelled = true
        let handler = cancelHandler
        let upstreamFuture = upstream
        cancelHandler = nil
        upstream = nil
        let hasCallbacks = callbacks.first != nil
        lock.unlock()

        handler?()
        return (upstreamFuture, hasCallbacks)
    }

    @usableFromInline
    func runCancellationCallbacks() {
        CallbackList(first: self).run()
    }

    /// Whether the future ended by ``cancel()``.
    public var isCancelled: Bool {
        guard let lock else { return false }
        return lock.withLock { wasCancelled }
    }

    /// `error` as the futures of this chain report it: through this future's value type, or else through that of
    /// the nearest future it waits on whose type reports such errors (``FutureErrorReporting``); as it is when
    /// none does.
    func reported(_ error: FutureError) -> any Error {
        var next: (any CancellableFuture)? = self
        while let future = next {
            if let reported = future.ownReport(of: error) { return reported }
            next = future.pendingUpstream
        }
        // The walk ended at a stage that completed (its link cleared) or was freed: the type learnt when linked.
        guard let lock, let reporter = lock.withLock({ chainReporter }) else { return error }
        return reporter.reportedError(for: error)
    }

    /// `error` as futures of `Value` report it, if `Value` reports such errors.
    static func ownReport(of error: FutureError) -> (any Error)? {
        (Value.self as? any FutureErrorReporting.Type)?.reportedError(for: error)
    }

    @usableFromInline
    func ownReport(of error: FutureError) -> (any Error)? {
        Self.ownReport(of: error)
    }

    @usableFromInline
    var pendingUpstream: (any CancellableFuture)? {
        guard let lock else { return nil }
        return lock.withLock { upstream }
    }

    @usableFromInline
    func reporterForDerived() -> (any FutureErrorReporting.Type)? {
        if let own = Value.self as? any FutureErrorReporting.Type { return own }
        guard let lock else { return nil }
        return lock.withLock { chainReporter }
    }

    @usableFromInline
    var combinationInputs: [any CancellableFuture]? { nil }
}

extension Future: CustomReflectable {
    /// What `dump(_:)` and a debugger show of a future: its result (`nil` while pending) and whether it was
    /// cancelled, read under its lock. Its callbacks and cancel handler are not shown: read unlocked while another
    /// thread completes the future, they raced its writers.
    public var customMirror: Mirror {
        Mirror(self, children: ["result": result as Any, "isCancelled": isCancelled], displayStyle: .class)
    }
}
