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

    /// Creates the middleware.
    ///
    /// - Parameter policy: When and how often to retry. Defaults to ``RetryPolicy/default``.
    public init(policy: RetryPolicy = .default) {
        self.policy = policy
    }

    /// Sends the request, and sends it again while the policy says so.
    ///
    /// - Parameters:
    ///   - request: The request so far.
    ///   - context: Facts about the call; its ``RequestContext/isRetrySafe`` decides whether replaying is allowed.
    ///   - next: The rest of the pipeline, called once per attempt.
    /// - Returns: A future of the last attempt's response. Cancelling it cancels the attempt in flight and
    ///   any wait before the next one.
    public func intercept(_ request: URLRequest, context: RequestContext, next: @escaping Next) -> Future<
        ConnectResponse
    > {
        let policy = self.policy
        let request = policy.addingIdempotencyKeyIfNeeded(to: request, method: context.method)
        guard policy.attemptLimit > 1, RetryPolicy.isReplayable(request, context: context) else {
            return next(request)
        }
        return RetryLoop.run(
            maxAttempts: policy.attemptLimit,
            clock: policy.clock,
            next: next,
            request: { _ in request },
            delay: { result, _, attempt in policy.retryDelay(after: result, attempt: attempt) }
        )
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
/// All mutable state sits in one ``Protected`` `State`. Callbacks, the clock and `next` are always called
/// outside the lock.
final class RetryLoop: Sendable {
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
        /// The number of the latest attempt started; 0 before the first.
        var attempt = 0
        var isCancelled = false
        /// The attempt in flight, to cancel with the loop.
        var inFlight: Future<ConnectResponse>?
        /// The wait before the next attempt, to cancel with the loop.
        var timer: (any RetryCancellable)?
    }

    private let state = Protected(State())
    private let promise = Promise<ConnectResponse>()
    private let maxAttempts: Int
    private let clock: any RetryClock
    private let next: Middleware.Next
    private let makeRequest: MakeRequest
    private let delay: Delay

    private init(
        maxAttempts: Int, clock: any RetryClock, next: @escaping Middleware.Next, request: @escaping MakeRequest,
        delay: @escaping Delay
    ) {
        self.maxAttempts = maxAttempts
        self.clock = clock
        self.next = next
        self.makeRequest = request
        self.delay = delay
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
        let loop = RetryLoop(maxAttempts: maxAttempts, clock: clock, next: next, request: request, delay: delay)
        // The future holds the loop through this handler only while pending; completing releases it.
        loop.promise.setCancelHandler { loop.cancel() }
        loop.startAttempt()
        return loop.promise.future
    }

    private func startAttempt() {
        let attempt: Int? = state.withLock { state in
            guard !state.isCancelled else { return nil }
            state.timer = nil
            state.attempt += 1
            return state.attempt
        }
        guard let attempt else { return }
        let request: URLRequest
        do {
            request = try makeRequest(attempt)
        } catch {
            promise.completeIfPending(with: .failure(error))
            return
        }
        let future = next(request)
        let cancelledMeanwhile = state.withLock { state -> Bool in
            if state.isCancelled { return true }
            state.inFlight = future
            return false
        }
        if cancelledMeanwhile {
            future.cancel()
            return
        }
        future.whenComplete { result in
            self.attemptEnded(attempt, request: request, result: result)
        }
    }

    private func attemptEnded(_ attempt: Int, request: URLRequest, result: Result<ConnectResponse, any Error>) {
        let isCancelled = state.withLock { state -> Bool in
            state.inFlight = nil
            return state.isCancelled
        }
        guard !isCancelled else { return }
        guard attempt < maxAttempts, let wait = delay(result, request, attempt) else {
            promise.completeIfPending(with: result)
            return
        }
        let timer = clock.schedule(after: wait) { self.startAttempt() }
        let cancelTimer = state.withLock { state -> Bool in
            if state.isCancelled { return true }
            // A clock may have run the action already (the next attempt started): nothing left to cancel.
            if state.attempt == attempt { state.timer = timer }
            return false
        }
        if cancelTimer { timer.cancel() }
    }

    /// Cancels the attempt in flight or the pending wait; no further attempt starts.
    private func cancel() {
        let (timer, inFlight) = state.withLock { state -> ((any RetryCancellable)?, Future<ConnectResponse>?) in
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
