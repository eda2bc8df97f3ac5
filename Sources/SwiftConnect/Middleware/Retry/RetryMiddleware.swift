import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The middleware that applies a ``RetryPolicy``: resends requests that failed for a temporary reason.
///
/// ``Connect`` already puts one in its pipeline for its `retryPolicy`. Use this type to place retries
/// yourself, for example inside a logging middleware so every attempt is logged:
///
/// ```swift
/// let connect = Connect(
///     middlewares: [LoggingMiddleware(), .retry(RetryPolicy(maxAttempts: 5))],
///     retryPolicy: nil
/// )
/// ```
public struct RetryMiddleware: Middleware {
    /// The rules this middleware applies.
    public let policy: RetryPolicy
    /// The same rules, behind one reference: each request's retry loop holds this rather than its own copy of
    /// the policy (a copy retains its closures, sets and clock one by one).
    let shared: SharedRetryPolicy

    /// Creates the middleware.
    ///
    /// - Parameter policy: When and how often to retry. Defaults to ``RetryPolicy/default``.
    public init(policy: RetryPolicy = .default) {
        self.policy = policy
        shared = SharedRetryPolicy(policy)
    }

    /// Sends the request, and sends it again while the policy says so.
    ///
    /// - Parameters:
    ///   - request: The request so far.
    ///   - context: Facts about the call; its ``RequestContext/isRetrySafe`` decides whether replaying is allowed.
    ///   - next: The rest of the pipeline, called once per attempt.
    /// - Returns: A future of the last attempt's response. Cancelling it cancels the attempt in flight and
    ///   any wait before the next one.
    public func intercept(_ request: consuming URLRequest, context: RequestContext, next: @escaping Next) -> Future<
        ConnectResponse
    > {
        shared.intercept(request, context: context, next: next, blueprint: nil)
    }
}

/// A ``RetryPolicy`` shared by reference between a ``RetryMiddleware`` and its requests' retry loops.
final class SharedRetryPolicy: Sendable {
    let policy: RetryPolicy
    /// `policy.attemptLimit`, worked out once.
    let attemptLimit: Int

    init(_ policy: RetryPolicy) {
        self.policy = policy
        attemptLimit = policy.attemptLimit
    }

    /// ``RetryMiddleware/intercept(_:context:next:)``; with `blueprint`, what `request` was made from and
    /// still equals, a retry makes the request again from it instead of keeping the first attempt's, which
    /// stays the only reference for the stages after this one to change in place.
    func intercept(
        _ request: consuming URLRequest,
        context: RequestContext,
        next: @escaping Middleware.Next,
        blueprint: RequestBlueprint?
    ) -> Future<ConnectResponse> {
        // An idempotency key added here is not in the blueprint: then the request is kept, as it is without one.
        if let blueprint, !policy.needsIdempotencyKey(request, method: context.method) {
            guard attemptLimit > 1, RetryPolicy.isReplayable(request, context: context, isAsBuilt: true) else {
                return next(consume request)
            }
            return RetryLoop.run(
                maxAttempts: attemptLimit, clock: policy.clock, next: next, plan: .remade(self, blueprint),
                first: consume request)
        }
        let request = policy.addingIdempotencyKeyIfNeeded(to: request, method: context.method)
        guard attemptLimit > 1, RetryPolicy.isReplayable(request, context: context, isAsBuilt: false) else {
            return next(request)
        }
        return RetryLoop.run(
            maxAttempts: attemptLimit, clock: policy.clock, next: next, plan: .policy(self, request: request),
            first: request)
    }
}

extension Middleware where Self == RetryMiddleware {
    /// A middleware retrying requests by `policy`, so a pipeline reads `[.retry(), .logging]`.
    ///
    /// ```swift
    /// let connect = Connect(middlewares: [.retry(RetryPolicy(maxAttempts: 2))], retryPolicy: nil)
    /// ```
    ///
    /// - Parameter policy: When and how often to retry. Defaults to ``RetryPolicy/default``.
    /// - Returns: The retry middleware.
    public static func retry(_ policy: RetryPolicy = .default) -> RetryMiddleware {
        RetryMiddleware(policy: policy)
    }
}

// MARK: - Retry loop

/// Sends a request, waits, and sends it again, until a decision says stop or attempts run out: the one
/// primitive behind ``RetryMiddleware`` and ``ConnectMiddlewareProtocol``'s `retry`.
///
/// All mutable state sits in one `State` behind the lock of the future the loop returns. Callbacks, the clock,
/// `next` and that future's methods are always called outside the lock. A request's first attempt runs without
/// a loop (retries are on by default, and most requests succeed at once); the loop is made when an attempt is to
/// be followed by another, and then allocates little: no closures for a policy's loop, its state lives in the
/// loop itself, and it borrows its future's lock rather than making one of its own.
final class RetryLoop:
    // Checked by hand: `state` is only read and written with the lock of `promise.future` held, in
    // `withState` (and set once in `init`, before the loop is shared). The future takes that lock only around its own state and never calls out while holding it
    // (its callbacks and cancel handler run after it unlocks), so the two never nest. Every other stored
    // property is immutable and Sendable.
    @unchecked Sendable
{
    /// Builds the request of attempt number `attempt` (1 for the first); throwing ends the loop with the error.
    typealias MakeRequest = @Sendable (_ attempt: Int) throws -> URLRequest
    /// How long to wait after an attempt, or `nil` to stop with its outcome.
    typealias Delay =
        @Sendable (
            _ result: Result<ConnectResponse, any Error>,
            _ request: URLRequest,
            _ attempt: Int
        ) -> TimeInterval?

    private struct State {
        /// The number of the latest attempt started (the loop is made after the first).
        var attempt = 0
        /// How many requests the attempts that ended sent: one each, or what a retry loop inside counted.
        var sent = 0
        var isCancelled = false
        /// The attempt in flight, to cancel with the loop.
        var inFlight: Future<ConnectResponse>?
        /// The wait before the next attempt, to cancel with the loop.
        var timer: (any RetryCancellable)?
        /// Whether a thread is starting attempts in ``RetryLoop/timerFired()``.
        var isStarting = false
        /// Whether a wait ended while that thread was busy: it starts the next attempt when it is done.
        var startRequested = false
    }

    /// Where each attempt's request and the decision after it come from.
    enum Plan: Sendable {
        /// The same request every time; the policy decides whether and when to go on.
        case policy(SharedRetryPolicy, request: URLRequest)
        /// The same request every time, made again from its blueprint for each attempt after the first; the
        /// policy decides.
        case remade(SharedRetryPolicy, RequestBlueprint)
        /// Closures build each attempt's request and decide after it.
        case custom(request: MakeRequest, delay: Delay)

        /// The request of attempt number `attempt`.
        func request(forAttempt attempt: Int) throws -> URLRequest {
            switch self {
            case .policy(_, let same): same
            case .remade(_, let blueprint): blueprint.makeRequest()
            case .custom(let makeRequest, _): try makeRequest(attempt)
            }
        }

        /// Whether the decision after an attempt looks at its request: then keep a copy of what was sent.
        var decidesOnRequest: Bool {
            if case .custom = self { true } else { false }
        }

        /// How long to wait after attempt number `attempt`, which sent `request` (kept for a custom plan only),
        /// or `nil` to stop.
        func delay(
            after result: Result<ConnectResponse, any Error>, of request: URLRequest?, attempt: Int
        ) -> TimeInterval? {
            switch self {
            case .policy(let shared, _), .remade(let shared, _):
                shared.policy.retryDelay(after: result, attempt: attempt)
            case .custom(_, let delay): request.flatMap { delay(result, $0, attempt) }
            }
        }
    }

    private var state = State()
    private let promise = Promise<ConnectResponse>()
    /// The lock of `promise.future` (a pending future always has one).
    private let lock: Lock
    private let maxAttempts: Int
    private let clock: any RetryClock
    private let next: Middleware.Next
    private let plan: Plan

    /// A loop whose first attempt ended with `first`.
    private init(
        maxAttempts: Int, clock: any RetryClock, next: @escaping Middleware.Next, plan: Plan,
        first: Result<ConnectResponse, any Error>
    ) {
        state.attempt = 1
        state.sent = RetryLoop.requestsSent(by: first)
        self.maxAttempts = maxAttempts
        self.clock = clock
        self.next = next
        self.plan = plan
        guard let lock = promise.future.lock else { preconditionFailure("a pending future has a lock") }
        self.lock = lock
    }

    private func withState<Result>(_ body: (inout State) -> Result) -> Result {
        lock.withLock { body(&state) }
    }

    /// Starts the first attempt and returns the future of the last one's outcome.
    ///
    /// - Parameters:
    ///   - maxAttempts: Attempts in all, the first included.
    ///   - clock: What waits between attempts.
    ///   - next: Sends one attempt.
    ///   - request: Builds each attempt's request.
    ///   - delay: Decides after each attempt (except the last allowed) whether and when to go on.
    /// - Returns: The future; cancelling it cancels the attempt in flight or the pending wait, and no further
    ///   attempt starts.
    static func run(
        maxAttempts: Int,
        clock: any RetryClock,
        next: @escaping Middleware.Next,
        request: @escaping MakeRequest,
        delay: @escaping Delay
    ) -> Future<ConnectResponse> {
        run(maxAttempts: maxAttempts, clock: clock, next: next, plan: .custom(request: request, delay: delay))
    }

    /// Starts the first attempt of `plan`, with `first` as its request if given, and returns the future of the
    /// last one's outcome; see ``run(maxAttempts:clock:next:request:delay:)``.
    ///
    /// The first attempt runs without a loop: most requests succeed at once, so the loop (its state and the
    /// future it completes) is made only when an attempt is to be followed by another. Until then the future
    /// returned follows the first attempt, and cancelling it cancels that attempt.
    ///
    /// Always inlined: where the plan is known (``SharedRetryPolicy``), its switches fold away. Left to the
    /// optimiser, a few more instructions for making the loop were enough for it to call this function instead,
    /// and the first attempt of every request cost about 1,500 instructions more (callgrind,
    /// `PipelineInstructions`).
    @inline(__always)
    static func run(
        maxAttempts: Int,
        clock: any RetryClock,
        next: @escaping Middleware.Next,
        plan: Plan,
        first: consuming URLRequest? = nil
    ) -> Future<ConnectResponse> {
        let request: URLRequest
        if let first = consume first {
            request = first
        } else {
            do {
                request = try plan.request(forAttempt: 1)
            } catch {
                return Future(error: error)
            }
        }
        // Only a custom plan's decision looks at the request; otherwise it goes on as the only reference.
        let sent: URLRequest? = plan.decidesOnRequest ? copy request : nil
        let attempt = next(consume request)
        guard maxAttempts > 1 else { return attempt }
        // `chain`, written out: the future returned must follow the loop before the loop's first wait is
        // scheduled, so that a cancellation arriving while the first outcome is judged stops the loop before it
        // sends another attempt (`chain` would point the cancellation at the loop only after that).
        if attempt.callbackQueue == nil, let result = attempt.result {
            // Complete at once: nobody holds the future returned yet, so nobody can have cancelled it.
            guard let wait = plan.delay(after: result, of: sent, attempt: 1) else { return attempt }
            let loop = RetryLoop(maxAttempts: maxAttempts, clock: clock, next: next, plan: plan, first: result)
            loop.promise.setCancelHandler { loop.cancel() }
            loop.scheduleAttempt(after: wait, following: 1)
            return loop.promise.future
        }
        let derived: Future<ConnectResponse> = attempt.makeDerived()
        attempt.whenCompleteReturningWork { result in
            guard let wait = plan.delay(after: result, of: sent, attempt: 1) else {
                return derived.resolve(result)
            }
            let loop = RetryLoop(maxAttempts: maxAttempts, clock: clock, next: next, plan: plan, first: result)
            // The future holds the loop through this handler only while pending; completing releases it.
            loop.promise.setCancelHandler { loop.cancel() }
            let future = loop.promise.future
            // Cancels the loop at once if `derived` was cancelled meanwhile: then no attempt is scheduled.
            derived.setUpstream(future)
            let work = future.whenCompleteReturningWork { derived.resolve($0) }
            loop.scheduleAttempt(after: wait, following: 1)
            return work
        }.run()
        return derived
    }

    /// Starts the next attempt once its wait is over.
    ///
    /// A clock and a `next` that both finish synchronously would otherwise nest each attempt inside the one
    /// before (wait, start, end, wait…) until the stack overflows: while a thread is starting attempts here, a
    /// wait that ends inside that work only asks it to start the next one when it is done.
    private func timerFired() {
        let starts = withState { state -> Bool in
            if state.isStarting {
                state.startRequested = true
                return false
            }
            state.isStarting = true
            return true
        }
        guard starts else { return }
        repeat {
            startAttempt()
        } while withState({ state -> Bool in
            if state.startRequested {
                state.startRequested = false
                return true
            }
            state.isStarting = false
            return false
        })
    }

    /// Starts the next attempt, with the plan's request for it.
    private func startAttempt() {
        let started: (attempt: Int, requestsBefore: Int)? = withState { state in
            guard !state.isCancelled else { return nil }
            state.timer = nil
            state.attempt += 1
            return (state.attempt, state.sent)
        }
        guard let (attempt, requestsBefore) = started else { return }
        let request: URLRequest
        do {
            request = try plan.request(forAttempt: attempt)
        } catch {
            // The attempts so far sent the request; this one could not be made.
            promise.completeIfPending(with: RetryLoop.reporting(requestsBefore, on: .failure(error)))
            return
        }
        let sent: URLRequest? = plan.decidesOnRequest ? copy request : nil
        let future = next(consume request)
        let cancelledMeanwhile = withState { state -> Bool in
            if state.isCancelled { return true }
            state.inFlight = future
            return false
        }
        if cancelledMeanwhile {
            future.cancel()
            return
        }
        // One closure, not `whenComplete`'s wrapper around one.
        future.whenCompleteReturningWork { result in
            self.attemptEnded(attempt, request: sent, result: result)
            return .empty
        }.run()
    }

    private func attemptEnded(_ attempt: Int, request: URLRequest?, result: Result<ConnectResponse, any Error>) {
        let requests = RetryLoop.requestsSent(by: result)
        let (isCancelled, sent) = withState { state -> (Bool, Int) in
            state.inFlight = nil
            state.sent += requests
            return (state.isCancelled, state.sent)
        }
        guard !isCancelled else { return }
        guard attempt < maxAttempts, let wait = plan.delay(after: result, of: request, attempt: attempt) else {
            promise.completeIfPending(with: RetryLoop.reporting(sent, on: result))
            return
        }
        scheduleAttempt(after: wait, following: attempt)
    }

    /// How many requests an attempt that ended with `result` sent: the count of a retry loop inside this one
    /// (``ConnectResponse/attempts``, ``ConnectError/attempts``), else one. Not inlined: it is called where a
    /// loop is made, in ``run(maxAttempts:clock:next:plan:first:)``, which is inlined where requests start.
    @inline(never)
    private static func requestsSent(by result: Result<ConnectResponse, any Error>) -> Int {
        switch result {
        case .success(let response): max(1, Int(response.attempts))
        case .failure(let error): max(1, (error as? ConnectError)?.attempts ?? 1)
        }
    }

    /// The outcome the loop ends with, saying that `sent` requests were sent when that is more than one: on an
    /// error response, for the error the client's error handler makes of it, or on a ``ConnectError``. A success
    /// and any other error (a user's own type, or a `URLError` the client turns into a ``ConnectError`` later)
    /// are left as they are.
    private static func reporting(
        _ sent: Int, on result: Result<ConnectResponse, any Error>
    ) -> Result<ConnectResponse, any Error> {
        guard sent > 1 else { return result }
        switch result {
        case .success(var response):
            guard !response.isSuccess else { return result }
            response.attempts = Int32(clamping: sent)
            return .success(response)
        case .failure(let error):
            return .failure(ConnectError.reporting(attempts: sent, on: error))
        }
    }

    /// Starts the attempt after number `attempt` once `wait` seconds have passed.
    private func scheduleAttempt(after wait: TimeInterval, following attempt: Int) {
        guard !withState({ $0.isCancelled }) else { return }
        let timer = clock.schedule(after: wait) { self.timerFired() }
        let cancelTimer = withState { state -> Bool in
            if state.isCancelled { return true }
            // A clock may have run the action already (the next attempt started): nothing left to cancel.
            if state.attempt == attempt { state.timer = timer }
            return false
        }
        if cancelTimer { timer.cancel() }
    }

    /// Cancels the attempt in flight or the pending wait; no further attempt starts.
    private func cancel() {
        let (timer, inFlight) = withState { state -> ((any RetryCancellable)?, Future<ConnectResponse>?) in
            state.isCancelled = true
            defer {
                state.timer = nil
                state.inFlight = nil
            }
            return (state.timer, state.inFlight)
        }
        timer?.cancel()
        inFlight?.cancel()
    }
}

extension RetryMiddleware: PreservesValidHeaders {}
