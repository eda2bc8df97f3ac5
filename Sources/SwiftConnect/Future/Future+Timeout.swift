import Dispatch
import Foundation

// MARK: - Time limits

extension Future {
    /// A future with this future's result, or a failure with ``FutureError/timedOut(after:)`` if it is not
    /// complete within `seconds`; this future is then cancelled (for a request: its network task is cancelled).
    ///
    /// ```swift
    /// loadReport()
    ///     .timeout(after: 5)
    ///     .observe { result in
    ///         if case .failure(FutureError.timedOut) = result {
    ///             print("no report within 5 s; loading it was cancelled")
    ///         }
    ///     }
    /// ```
    ///
    /// Whichever comes first wins. When this future completes first, the returned future completes with its
    /// result and the timer is cancelled and released at once: it never fires later. When the time is up first,
    /// the returned future fails with ``FutureError/timedOut(after:)`` once this future is cancelled: its
    /// cancel handler has run, and its work has stopped, before anyone sees the timeout, whether by a callback
    /// or by reading ``result``. A result that arrives while the timer fires, before the cancellation reaches this
    /// future, still wins. Cancelling the returned future cancels this future and the timer.
    ///
    /// A future whose work has an error type of its own reports the timeout in that type instead, as it does a
    /// cancellation (``cancel()``): a request's future, and what one-source operators (`map`, `decoded`…) derive
    /// from it, fail with the client's error of kind `timedOut`, with no request and no underlying error.
    ///
    /// The limit applies to this future as a whole, on top of a request's own deadline (``Connector/timeout``,
    /// which already bounds its attempts and the waits between them): the earlier of the two ends it. The timeout
    /// cancels this future for everyone that holds it; to give up waiting for a future you share without
    /// cancelling it, put the limit on a future of your own that follows it (see ``value``).
    ///
    /// - Parameters:
    ///   - seconds: The time limit. `.infinity` sets none (this future is returned as it is). Zero, a negative
    ///     number or NaN is a limit already over: a pending future times out at once, before this method returns
    ///     (its callbacks, and so the returned future, then on this future's ``receive(on:)`` queue if it has one),
    ///     and its failure says a limit of 0 (`FutureError.timedOut(after: 0)`, which equals itself where one of
    ///     NaN would not). A complete future keeps its result whatever the limit. A limit over a year counts as a
    ///     year.
    ///   - queue: Where the timer fires: the timeout's failure, and the cancellation of this future it causes,
    ///     happen there. `nil` (the default) uses a global queue. A result that comes first is delivered as
    ///     usual, on the thread that completes this future, and a limit already over needs no timer: it times
    ///     out on the calling thread. To run every callback on one queue, chain ``receive(on:)``.
    /// - Returns: A future with this future's result, or the timeout's failure.
    public func timeout(after seconds: TimeInterval, on queue: DispatchQueue? = nil) -> Future<Value> {
        timeout(after: seconds, on: queue, scheduler: .shared)
    }

    /// ``timeout(after:on:)`` with the timer on `scheduler` (tests count its pending deadlines).
    func timeout(after seconds: TimeInterval, on queue: DispatchQueue?, scheduler: DeadlineScheduler) -> Future<Value> {
        if seconds == .infinity { return self }
        // A limit already over (zero, negative, -infinity, NaN) is reported as 0: `timedOut(after: .nan)` is not
        // equal to itself, so a caller could not match the error it got, and "-5 s" says nothing a limit of 0 does not.
        let seconds = seconds > 0 ? seconds : 0
        // Already complete: its result came first, delivered as this future delivers it.
        if isCompleted { return self }

        let derived = passingThrough()
        // The timeout's error, set when the limit passes, before this future is cancelled: the cancellation that
        // comes back through the callback below is then reported as it. So the returned future fails with `timedOut`
        // only once this future is cancelled (or gone), and never while its work still runs. Worked out then, not
        // now: a chain that went on to follow a request (`flatMap`) reports in the client's error type by then, as
        // a cancellation at that time would.
        let expired = Protected<(any Error)?>(nil)
        // Weak: the scheduler holds this handler until it fires or is disarmed; `derived` lives as long as someone
        // holds it or this future's callback does, and this future as long as its producer does.
        let expire: @Sendable () -> Void = { [weak self, weak derived] in
            guard let derived, !derived.isCompleted else { return }
            guard let self else {
                // This future was freed while pending (abandoned): there is no work left to stop, and no chain above
                // to ask how it reports a timeout, so `derived` (of this future's type) says. Not looked up in advance:
                // a walk to the chain's start at every `timeout(after:)` made a limit at every stage quadratic. A
                // request's chain is never abandoned (the call holds its future until it completes).
                let error = derived.reported(.timedOut(after: seconds))
                derived.complete(.failure(error), reportingDoubleCompletionAt: nil).work.run()
                return
            }
            // Complete already (a result, or its owner's cancellation, came first; its callback may still wait on its
            // `receive(on:)` queue): the limit ended nothing, and its outcome stands as it is.
            guard !self.isCompleted else { return }
            let error = self.reported(.timedOut(after: seconds))
            // The timer decides here, not when it started: an owner's cancellation that came while the error was
            // worked out stands, even when the callback below is added after this handler ran (a limit already over,
            // or a timer that fired before it was added).
            let decided = expired.withLock { expired -> Bool in
                guard !self.isCompleted else { return false }
                expired = error
                return true
            }
            guard decided else { return }
            // The work is stopped before anyone hears of the timeout, as `cancel()` does; a result that came first
            // (it may have arrived while the timer was firing) stands, as cancelling a complete future does nothing.
            self.cancel()
        }
        // `nil` for a limit that is already over (zero, negative, NaN).
        let deadline = TransportDeadline(seconds: seconds, scheduler: scheduler)
        if let deadline {
            // Cancelling the returned future disarms the timer; its cancellation reaches this future through
            // `makeDerived`'s link. The handler is released once `derived` completes.
            derived.setCancelHandler { deadline.cancel() }
            // Armed before the callback below is added, so that a result arriving meanwhile disarms it.
            if let queue {
                deadline.start { queue.async(execute: expire) }
            } else {
                deadline.start(expire)
            }
        } else {
            expire()
        }
        // Holds the deadline until this future completes, or is freed while pending (abandoned: the deadline's
        // deinit then disarms it, so the timer keeps nothing of an abandoned chain alive).
        // Unowned: the callback is stored in `self` and only `self` runs it.
        whenCompleteReturningWork { [unowned self] result in
            deadline?.cancel()
            // The cancellation the timer caused, not a failure of the work that came first.
            if case .failure = result, let error = expired.withLock({ $0 }), isCancelled {
                return derived.resolve(.failure(error))
            }
            return derived.resolve(result)
        }.run()
        return derived
    }
}
