import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One call's attempts: the only code in SwiftConnect that sends a request more than once.
///
/// It sends the request through the pipeline, and after each attempt decides whether to send it again:
/// 1. a cancelled call, or the policy's last attempt, ends with that attempt's outcome;
/// 2. a middleware that asked for another attempt (``RequestContext/retryAdvice``) gets it, after its delay;
/// 3. a response the client accepts ends the call: a 2xx, or a status the error handler returns `nil` for;
/// 4. otherwise the ``RetryPolicy`` decides, for a request that is safe to replay.
///
/// The call's deadline (the connector's `timeout`) bounds the attempts and the waits between them together: when it
/// passes, the attempt in flight is cancelled and the call fails with ``ConnectError/Kind/timedOut``; a wait that
/// would end after it is not started, and the call ends with the last outcome instead.
final class RetryingCall:
    // Checked by hand: `lock` protects `state`, which holds everything that changes; every other stored property
    // is immutable and Sendable. Callbacks, the clock, `send` and the promise are always called outside the lock.
    @unchecked Sendable
{
    /// Sends one attempt through the pipeline.
    typealias Send = @Sendable (consuming ConnectRequest, RequestContext) -> Future<ConnectResponse>

    private struct State {
        /// The number of the latest attempt started.
        var attempt = 0
        /// Whether the latest attempt is still running (started and not yet ended).
        var attemptRunning = false
        /// The number of the latest attempt whose request reached the transport's door, where observers hear it start
        /// (or the identical one it shares did).
        var reachedAttempt = 0
        /// The attempts whose request carried an `Idempotency-Key` at the transport's door, put there by a middleware
        /// when the call's own request had none: replay-safe (``RetryingCall/delay(after:attempt:advice:)``).
        var keyedAttempts: Set<Int> = []
        /// Whether the call was cancelled, timed out or ended: no further attempt starts.
        var isOver = false
        /// The failure the call ended with (its deadline's, say), `nil` while it runs or once a caller cancelled it
        /// or it succeeded: an attempt whose `send` returns after that is stopped with it, as one in flight was.
        var endedWith: (any Error)?
        /// The attempt in flight, to cancel with the call.
        var inFlight: Future<ConnectResponse>?
        /// The wait before the next attempt, to cancel with the call.
        var timer: (any RetryCancellable)?
        /// Whether a thread is starting attempts in ``RetryingCall/startAttempts()``.
        var isStarting = false
        /// Whether a wait ended while that thread was busy: it starts the next attempt when it is done.
        var startRequested = false
        /// The body streams the attempts sent, held until the call ends: none may be sent again (and holding them
        /// keeps another stream from taking a sent one's identity meanwhile).
        var sentStreams: [ConnectRequest.OneShotStream] = []
        /// The waits scheduled so far, in seconds: on a clock that runs actions at once (a test's), the time the
        /// call has spent by its own account.
        var waited: TimeInterval = 0
        /// The attempt in flight's own timeout (``RetryPolicy/attemptTimeout``), to cancel when it ends.
        var attemptDeadline: TransportDeadline?
        /// The timers of the sends at the transport (``RetryPolicy/attemptTimeout``, one per send), to cancel when the
        /// call ends.
        var sendTimers: [ObjectIdentifier: TransportDeadline] = [:]
        /// The number of the attempt that its own timeout abandoned, if any.
        var abandonedAttempt: Int?
        /// The number of the latest attempt a send of which its own timeout stopped (0 for none): the usage guide's
        /// retry hook is not asked about it (``RequestContext/attemptTimedOut``).
        var timedOutAttempt = 0
        /// The progress reports of the latest attempt, when the call has a progress handler.
        var progress: AttemptProgress?
        /// The attempt the clock's wait follows, until the wait's action claims it: the action starts one attempt,
        /// however often a clock of the app's runs it.
        var waitingAfter: Int?

        /// The attempts the call made, as ``ConnectError/attempts`` and ``ConnectEvent/callEnded(status:error:attempts:)``
        /// report them: every attempt started, but one still running whose request never reached the transport's door
        /// (it waited in the queue, offline or for a token refresh when the call's deadline passed or the call was
        /// cancelled, or the queue cancelled it there), which sent nothing and which observers never heard start.
        var attemptsMade: Int {
            (attemptRunning || cancelledUnsent == attempt) && reachedAttempt < attempt ? attempt - 1 : attempt
        }
        /// The attempt that ended cancelled before its request reached the transport's door (the queue cancelled it
        /// while it waited there), 0 for none: it sent nothing, and is not counted.
        var cancelledUnsent = 0
    }

    private let lock = Lock()
    private var state = State()
    private let promise = Promise<ConnectResponse>()
    private let request: ConnectRequest
    private let context: RequestContext
    private let policy: RetryPolicy
    private let maxAttempts: Int
    /// Whether the policy may replay the request by its own rules (a middleware's request does not ask).
    private let isReplayable: Bool
    private let errorHandler: any ErrorHandling
    private let send: Send
    private let deadline: TransportDeadline?
    private let started = DispatchTime.now()

    private init(
        request: ConnectRequest, context: RequestContext, policy: RetryPolicy, errorHandler: any ErrorHandling,
        send: @escaping Send
    ) {
        self.policy = policy
        maxAttempts = max(1, policy.maxAttempts)
        let request =
            maxAttempts > 1 ? policy.addingIdempotencyKeyIfNeeded(to: request, method: context.method) : request
        self.request = request
        self.context = context
        isReplayable = RetryPolicy.isReplayable(request, context: context)
        self.errorHandler = errorHandler
        self.send = send
        deadline = TransportDeadline(seconds: request.timeoutInterval)
    }

    deinit {
        lock.destroy()
    }

    private func withState<Result>(_ body: (inout State) -> Result) -> Result {
        lock.withLock { body(&state) }
    }

    /// Starts the call and returns the future of its outcome.
    ///
    /// - Parameters:
    ///   - request: The request, as built; each attempt sends it (with an `Idempotency-Key` if the policy adds one).
    ///   - context: The call's context; each attempt gets a copy with its number and fresh ``RetryAdvice``.
    ///   - policy: When to retry, how often and how long to wait.
    ///   - errorHandler: The client's error handler: a status it accepts is not retried.
    ///   - send: Sends one attempt through the pipeline.
    /// - Returns: The future; cancelling it cancels the attempt in flight or the wait, and no attempt follows.
    static func start(
        _ request: ConnectRequest,
        context: RequestContext,
        policy: RetryPolicy,
        errorHandler: any ErrorHandling,
        send: @escaping Send
    ) -> Future<ConnectResponse> {
        let call = RetryingCall(
            request: request, context: context, policy: policy, errorHandler: errorHandler, send: send)
        let future = call.promise.future
        // The future holds the call through its cancel handler while pending; completing releases it.
        call.promise.setCancelHandler { call.end(with: nil) }
        call.deadline?.start { [weak call] in call?.timeOut() }
        call.startAttempts()
        return future
    }

    /// Starts the next attempt, and the ones after it that a synchronous clock and transport finish at once.
    ///
    /// A clock and a pipeline that both finish synchronously would otherwise nest each attempt inside the one
    /// before (wait, start, end, wait…) until the stack overflows: while a thread is starting attempts here, a
    /// wait that ends inside that work only asks it to start the next one when it is done.
    private func startAttempts() {
        guard beginStarting(requestingStart: true) else { return }
        repeat {
            startAttempt()
        } while continueStarting()
    }

    /// Makes this thread the one that starts attempts, unless one is (then, with `requestingStart`, asks it to start
    /// the next when it is done); `true` when this thread now is, and must end with ``continueStarting()``.
    private func beginStarting(requestingStart: Bool) -> Bool {
        withState { state -> Bool in
            if state.isStarting {
                if requestingStart { state.startRequested = true }
                return false
            }
            state.isStarting = true
            return true
        }
    }

    /// Whether an attempt was asked to start meanwhile (the caller starts it, then asks again); when none was, this
    /// thread is no longer the one that starts attempts.
    private func continueStarting() -> Bool {
        withState { state -> Bool in
            if state.startRequested {
                state.startRequested = false
                return true
            }
            state.isStarting = false
            return false
        }
    }

    private func startAttempt() {
        let attempt: Int? = withState { state in
            guard !state.isOver else { return nil }
            state.timer = nil
            state.attempt += 1
            state.attemptRunning = true
            return state.attempt
        }
        guard let attempt else { return }
        var context = self.context
        context.attempt = attempt
        context.maxAttempts = maxAttempts
        if case .stream(let stream) = request.body { context.callBodyStream = stream }
        context.retryAdvice = RetryAdvice(earlierStreams: attempt > 1 ? withState { $0.sentStreams } : [])
        context.callHasEnded = { [weak self] in self?.withState { $0.isOver } ?? true }
        context.attemptTimedOut = { [weak self] in self?.withState { $0.timedOutAttempt == attempt } ?? false }
        // The attempt counts as made once its request reaches the transport's door (or the identical one it shares
        // does); its own timeout counts while it is at the transport: not the time it waits in the queue, offline,
        // or for a token refresh before or after a 401.
        let timesAttempts = policy.usableAttemptTimeout != nil
        var sendReached: (@Sendable (_ stop: @escaping @Sendable (ConnectError) -> Void) -> @Sendable () -> Void)?
        if timesAttempts {
            sendReached = { [weak self] stop in
                guard let self else { return {} }
                return self.startSendTimer(attempt, stop: stop)
            }
        }
        context.sending = AttemptSending(
            reached: { [weak self] in if timesAttempts { self?.startAttemptTimer(attempt) } },
            answered: { [weak self] in if timesAttempts { self?.stopAttemptTimer(attempt) } },
            atDoor: { [weak self] keyed in
                self?.withState { state in
                    state.reachedAttempt = max(state.reachedAttempt, attempt)
                    if keyed { state.keyedAttempts.insert(attempt) }
                }
            },
            sendReached: sendReached)
        context.transfer.callDeadline = deadline?.time
        let progress = context.transfer.progress.map(AttemptProgress.init(report:))
        if let progress {
            context.transfer.progress = progress.handler
            withState { $0.progress = progress }
        }
        // A download an earlier attempt cut resumes from the part it kept, rather than starting again.
        var request = self.request
        if let part = context.transfer.resumption?.latest {
            request.setValue(part.range, forHTTPHeaderField: "Range")
            request.setValue(part.validator, forHTTPHeaderField: "If-Range")
            context.transfer.resuming = part
        }
        let advice = context.retryAdvice
        let future = send(request, context)
        let (isOver, endedWith, abandoned) = withState { state -> (Bool, (any Error)?, Bool) in
            if state.isOver { return (true, state.endedWith, false) }
            state.inFlight = future
            return (false, nil, state.abandonedAttempt == attempt)
        }
        if isOver {
            // Ended while `send` ran (its deadline passed before the engine returned): the attempt is stopped as the
            // call ended, so its plugins hear it timed out, not that a caller cancelled it.
            if let endedWith { future.cancel(failingWith: endedWith) } else { future.cancel() }
            return
        }
        // Its timer fired before the attempt was registered here (a timeout shorter than `send`'s return).
        if abandoned { cancelAbandoned(future, attempt: attempt) }
        // A future already complete (a cache hit, a synchronous middleware) runs its callback here, on the caller's
        // thread for a first attempt (``attemptEnded(_:result:advice:progress:completedAtOnce:)``).
        let adding = progress.map { _ in Protected(true) }
        future.whenComplete { result in
            let atOnce = adding?.withLock { $0 } ?? false
            self.attemptEnded(attempt, result: result, advice: advice, progress: progress, completedAtOnce: atOnce)
        }
        adding?.withLock { $0 = false }
    }

    private func attemptEnded(
        _ attempt: Int, result: Result<ConnectResponse, any Error>, advice: RetryAdvice, progress: AttemptProgress?,
        completedAtOnce: Bool = false
    ) {
        let sentStreams = advice.sentStreams
        let (isOver, attemptDeadline, wasAbandoned) = withState {
            state -> (Bool, TransportDeadline?, Bool) in
            state.inFlight = nil
            if state.attempt == attempt {
                state.attemptRunning = false
                if state.reachedAttempt < attempt, RetryingCall.isCancellation(result) {
                    state.cancelledUnsent = attempt
                }
            }
            // Every stream the attempt's sends took, not only the latest: a send again with a new stream must not
            // let the first go out in a later attempt.
            state.sentStreams += sentStreams
            defer { state.attemptDeadline = nil }
            return (state.isOver, state.attemptDeadline, state.abandonedAttempt == attempt)
        }
        attemptDeadline?.cancel()
        guard !isOver else {
            // Nobody hears of this attempt's outcome: the part of a download it kept would stay on disk unknown, and
            // a streamed body would hold its transfer (and connection) until the server stopped.
            Self.partialDownload(of: result)?.discard()
            Self.stopBody(of: result)
            return
        }
        // The attempt's own timeout cancelled it: it timed out, which the policy may retry. (An attempt that ended
        // with another outcome while it was being abandoned keeps that outcome.)
        let result =
            wasAbandoned && RetryingCall.isCancellation(result)
            ? .failure(
                ConnectError.transportFailure(.deadlinePassed(after: policy.usableAttemptTimeout), sent: request))
            : result
        guard attempt < maxAttempts, let wait = delay(after: result, attempt: attempt, advice: advice) else {
            return end(
                with: reporting(withState { $0.attemptsMade }, on: result), telling: progress,
                offThisThread: completedAtOnce)
        }
        let waited = withState { state -> TimeInterval in
            defer { state.waited += wait }
            return state.waited
        }
        if let deadline {
            // The time spent: what passed, or what the clock was asked to wait if that is more (a test's clock
            // runs actions at once).
            let elapsed = max(Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9, waited)
            // The next attempt could not start before the deadline: the outcome so far is the better answer.
            if elapsed + wait >= deadline.seconds {
                return end(with: reporting(attempt, on: result), telling: progress, offThisThread: completedAtOnce)
            }
        }
        // Another attempt follows: this one's body was not the call's (a streamed one stops: nobody reads it, and it
        // held its connection while the server sent). The part of a download it kept is where the next attempt
        // resumes (a call that cannot resume starts the body again, and the part goes).
        progress?.settle(isTheAnswer: false)
        Self.stopBody(of: result)
        if let part = Self.partialDownload(of: result) {
            if let resumption = context.transfer.resumption {
                resumption.advance(to: part)
                // The call ended meanwhile (cancelled, or its deadline passed): no attempt resumes from the part.
                if withState({ $0.isOver }) { resumption.takeTheCalls()?.discard() }
            } else {
                part.discard()
            }
        }
        // No wait: the next attempt starts now, on this thread (the trampoline keeps the stack flat).
        guard wait > 0 else { return startAttempts() }
        withState { $0.waitingAfter = attempt }
        let timer = policy.clock.schedule(after: wait) { self.waitEnded(after: attempt) }
        let cancelTimer = withState { state -> Bool in
            if state.isOver { return true }
            // A clock may have run the action already (the next attempt started): nothing left to cancel.
            if state.attempt == attempt { state.timer = timer }
            return false
        }
        if cancelTimer { timer.cancel() }
    }

    /// The part of a download an attempt's failure kept (``ConnectError/partialDownload``), if any.
    private static func partialDownload(of result: Result<ConnectResponse, any Error>) -> PartialDownload? {
        guard case .failure(let error) = result else { return nil }
        return (error as? ConnectError)?.partialDownload
    }

    /// The wait after `attempt` ended: the next attempt starts, unless this wait's action started it already (a clock
    /// that runs an action twice, against ``RetryClock``'s contract, would send the request again beside it).
    private func waitEnded(after attempt: Int) {
        let claimed = withState { state -> Bool in
            guard state.waitingAfter == attempt else { return false }
            state.waitingAfter = nil
            return true
        }
        if claimed { startAttempts() }
    }

    /// How long to wait before the next attempt, or `nil` to stop with `result`.
    private func delay(
        after result: Result<ConnectResponse, any Error>, attempt: Int, advice: RetryAdvice
    ) -> TimeInterval? {
        if RetryingCall.isCancellation(result) { return nil }
        if let requested = advice.requestedDelay {
            // The next attempt starts from this same request: a one-shot body of its own that this attempt sent cannot
            // go again, so the answer stands, as for the policy's retries (a middleware that sets a new body on every
            // attempt is still retried).
            if case .stream(let stream) = request.body, advice.sentStreams.contains(stream) {
                logNotRetried(after: attempt)
                return nil
            }
            return requested
        }
        // A request the policy would not replay by its own rules, unless a middleware gave this attempt's an
        // `Idempotency-Key` (as the migration guides' adapters do) and nobody said it is not retry-safe.
        let keyedOnItsWay = context.options.isRetrySafe == nil && withState { $0.keyedAttempts.contains(attempt) }
        guard isReplayable || keyedOnItsWay else { return nil }
        if case .success(let response) = result {
            if response.isSuccess { return nil }
            // Asked only for a status the policy would retry: an accepted status is an answer, not a failure.
            guard policy.retryableStatusCodes.contains(response.statusCode), errorHandler.handle(response) != nil
            else { return nil }
        }
        guard let delay = policy.retryDelay(after: result, attempt: attempt) else { return nil }
        // A body from a stream was read by this attempt: the policy cannot send it again, and says so.
        if !advice.sentStreams.isEmpty {
            logNotRetried(after: attempt)
            return nil
        }
        return delay
    }

    /// Says, at `info`, that the call ends after `attempt` because its body was a one-shot stream.
    private func logNotRetried(after attempt: Int) {
        context.logger.log(
            .info,
            "\(context.method.rawValue) \(request.redactedURL)"
                + (context.connectorName.isEmpty ? "" : " (\(context.connectorName))")
                + " not retried after attempt \(attempt): its body was a one-shot stream, which cannot be sent again"
        )
    }

    /// The timer of one attempt (``RetryPolicy/attemptTimeout``), unless the call's deadline comes first anyway.
    private func attemptDeadline() -> TransportDeadline? {
        guard let seconds = policy.usableAttemptTimeout else { return nil }
        if let deadline, deadline.time <= DispatchTime.now() + seconds { return nil }
        return TransportDeadline(seconds: seconds)
    }

    /// Starts the timer of one send of `attempt` as the chain hands it to the transport: when it passes, that send alone
    /// is stopped, timed out (another send of the attempt, a hedge's, keeps its own time). Returns what stops the timer
    /// when the transport answers.
    private func startSendTimer(_ attempt: Int, stop: @escaping @Sendable (ConnectError) -> Void)
        -> @Sendable () -> Void
    {
        let timer = withState { state -> TransportDeadline? in
            guard !state.isOver, state.attempt == attempt, let timer = attemptDeadline() else { return nil }
            state.sendTimers[ObjectIdentifier(timer)] = timer
            return timer
        }
        guard let timer else { return {} }
        let timedOut = ConnectError.transportFailure(.deadlinePassed(after: policy.usableAttemptTimeout), sent: request)
        let key = ObjectIdentifier(timer)
        timer.start { [weak self] in
            self?.withState { state in
                state.sendTimers.removeValue(forKey: key)
                state.timedOutAttempt = attempt
            }
            stop(timedOut)
        }
        return { [weak self, weak timer] in
            timer?.cancel()
            _ = self?.withState { $0.sendTimers.removeValue(forKey: key) }
        }
    }

    /// Starts `attempt`'s own timer as its request reaches the transport, unless one runs already.
    private func startAttemptTimer(_ attempt: Int) {
        let timer = withState { state -> TransportDeadline? in
            guard !state.isOver, state.attempt == attempt, state.attemptDeadline == nil else { return nil }
            let timer = attemptDeadline()
            state.attemptDeadline = timer
            return timer
        }
        guard let timer else { return }
        timer.start { [weak self, weak timer] in
            guard let timer else { return }
            self?.abandon(attempt, by: timer)
        }
    }

    /// The transport answered `attempt`: its own timer stops, so that the time a middleware then holds the answer (a
    /// token refresh after a 401) is not counted; a request the middleware sends again in the same attempt starts it
    /// anew.
    private func stopAttemptTimer(_ attempt: Int) {
        let timer = withState { state -> TransportDeadline? in
            guard state.attempt == attempt, state.abandonedAttempt != attempt else { return nil }
            defer { state.attemptDeadline = nil }
            return state.attemptDeadline
        }
        timer?.cancel()
    }

    /// The attempt's own timeout passed: the attempt is cancelled, and ends as timed out.
    private func abandon(_ attempt: Int, by timer: TransportDeadline) {
        let inFlight = withState { state -> Future<ConnectResponse>? in
            // A timer stopped (the transport answered) as it fired abandons nothing.
            guard !state.isOver, state.attempt == attempt, state.abandonedAttempt != attempt,
                state.attemptDeadline === timer
            else { return nil }
            state.abandonedAttempt = attempt
            state.timedOutAttempt = attempt
            return state.inFlight
        }
        // Not registered yet: `startAttempt` cancels it when it is.
        guard let inFlight else { return }
        cancelAbandoned(inFlight, attempt: attempt)
    }

    /// Cancels an attempt its own timeout abandoned, after telling observers it ended as what it is (a timeout), so
    /// that they hear of it before its cancellation lets the next attempt start.
    private func cancelAbandoned(_ inFlight: Future<ConnectResponse>, attempt: Int) {
        let timedOut = ConnectError.transportFailure(.deadlinePassed(after: policy.usableAttemptTimeout), sent: request)
        context.transfer.observation?.recordEnd(of: attempt, status: nil, error: timedOut)
        // The attempt's chain fails as timed out: its plugins are told why it ended. The cancellation runs this
        // call's callback (which may start the next attempt) before those of the stages it went through, the plugins'
        // among them: the next attempt starts once they have all run, so that plugins hear of this attempt's end
        // before they hear of the next one's send.
        let startsHere = beginStarting(requestingStart: false)
        inFlight.cancel(failingWith: timedOut)
        guard startsHere else { return }
        while continueStarting() { startAttempt() }
    }

    /// Ends the call with the outcome of the attempt whose `progress` it is: the end of the body it held is told
    /// first. With `offThisThread` (the attempt's future was complete when its callback was added, so this may be the
    /// caller's thread, inside `request(...)`), both happen on another thread: a handler taking a lock its caller
    /// holds, or hopping synchronously to its queue, would wait for itself (``TransferOptions/progress`` promises a
    /// thread of the transport's, and an engine tells it from one).
    private func end(
        with result: Result<ConnectResponse, any Error>, telling progress: AttemptProgress?, offThisThread: Bool
    ) {
        guard offThisThread, let progress else {
            progress?.settle(isTheAnswer: true)
            return end(with: result)
        }
        DispatchQueue.global().async {
            progress.settle(isTheAnswer: true)
            self.end(with: result)
        }
    }

    /// The deadline passed: the attempt in flight is cancelled and the call fails with `timedOut`.
    private func timeOut() {
        // As every other end reports it: the error says how many attempts the call made.
        end(
            with: .failure(ConnectError.transportFailure(.deadlinePassed(after: deadline?.seconds), sent: request)),
            reportingAttempts: true)
    }

    /// Ends the call: no further attempt starts, the attempt in flight and the wait are cancelled, and the future
    /// completes with `result` (`nil` when it was cancelled, and so is complete already). With `reportingAttempts`,
    /// the error says how many attempts were made, counted as the call's end event counts them.
    private func end(with result: Result<ConnectResponse, any Error>?, reportingAttempts: Bool = false) {
        let (timer, inFlight, wasOver, attempts, result) = withState {
            state -> ((any RetryCancellable)?, Future<ConnectResponse>?, Bool, Int, Result<ConnectResponse, any Error>?)
            in
            let wasOver = state.isOver
            state.isOver = true
            let result = reportingAttempts ? result.map { reporting(state.attemptsMade, on: $0) } : result
            // Set with `isOver`: an attempt whose `send` returns after this reads both at once.
            if !wasOver, case .failure(let error)? = result { state.endedWith = error }
            defer {
                state.timer = nil
                state.inFlight = nil
            }
            return (state.timer, state.inFlight, wasOver, state.attemptsMade, result)
        }
        // Told before the attempt in flight is cancelled, so that its span ends with the call's reason (a deadline),
        // and before the caller hears the outcome, so that a caller reading its observer's figures has them all.
        if !wasOver, let observation = context.transfer.observation {
            switch result {
            case .success(let response)?:
                observation.record(.callEnded(status: response.statusCode, error: nil, attempts: attempts))
            case .failure(let error)?:
                observation.record(.callEnded(status: nil, error: error, attempts: attempts))
            case nil:
                observation.record(
                    .callEnded(status: nil, error: ConnectError.cancelled(sent: request), attempts: attempts))
            }
        }
        deadline?.cancel()
        // Ended by its deadline or the caller: no attempt's body end is the call's (one the call ends with was told).
        withState { $0.progress }?.settle(isTheAnswer: false)
        withState { $0.attemptDeadline }?.cancel()
        for sendTimer in withState({ state in
            defer { state.sendTimers = [:] }
            return Array(state.sendTimers.values)
        }) { sendTimer.cancel() }
        timer?.cancel()
        // Stopped by the deadline, the attempt's chain fails as the call does (its plugins hear it timed out); by the
        // caller, as cancelled.
        if case .failure(let error)? = result { inFlight?.cancel(failingWith: error) } else { inFlight?.cancel() }
        // Cancelled, nobody hears of the part of a download an earlier attempt kept: it goes. (Any other end leaves
        // it to the download method, which hands it over with the call's failure.)
        if result == nil { context.transfer.resumption?.takeTheCalls()?.discard() }
        // Only the end that ended the call completes it: a second one (an answer judged while the deadline passed)
        // would give the caller another outcome than the one its observers were told; its streamed body, nobody's,
        // stops.
        guard let result else { return }
        if wasOver { Self.stopBody(of: result) } else { promise.completeIfPending(with: result) }
    }

    /// Stops the streamed body of an answer the call does not deliver.
    private static func stopBody(of result: Result<ConnectResponse, any Error>) {
        if case .success(let response) = result { response.bodyStream?.cancel() }
    }

    private static func isCancellation(_ result: Result<ConnectResponse, any Error>) -> Bool {
        guard case .failure(let error) = result else { return false }
        return (error as? ConnectError)?.isCancelled == true || (error as? URLError)?.code == .cancelled
    }

    /// The outcome the call ends with: a transport's `URLError` made a ``ConnectError``, and, when more than one
    /// attempt was made, saying how many: on an error response, for the error the client's error handler makes of
    /// it, or on the error.
    private func reporting(
        _ attempts: Int, on result: Result<ConnectResponse, any Error>
    ) -> Result<ConnectResponse, any Error> {
        switch result {
        case .success(var response):
            guard attempts > 1, !response.isSuccess else { return result }
            response.attempts = Int32(clamping: attempts)
            return .success(response)
        case .failure(let error):
            let failure =
                error is URLError ? ConnectError.transportFailure(.reported(error), sent: request) : error
            // 1 is the error's own count; 0 says the call's end came before its only attempt was sent.
            guard attempts != 1 else { return .failure(failure) }
            return .failure(ConnectError.reporting(attempts: attempts, on: failure))
        }
    }
}

/// One attempt's progress reports on their way to the call's handler (``TransferOptions/progress``): the report of
/// the end of the attempt's body is held until the retry loop knows whether that body is the call's answer, and
/// dropped if another attempt follows, so that the caller hears of one end, the answer's, in the last report.
final class AttemptProgress: Sendable {
    private enum Stage {
        /// The attempt runs; the report of its body's end, if it came, waits here.
        case running(held: TransferProgress?)
        /// Its answer is the call's: reports go on as they come.
        case answer
        /// Another attempt follows, or the call ended otherwise: nothing more is reported.
        case superseded
    }

    private let report: @Sendable (TransferProgress) -> Void
    private let stage = Protected(Stage.running(held: nil))

    init(report: @escaping @Sendable (TransferProgress) -> Void) {
        self.report = report
    }

    /// The handler the attempt's transport reports to.
    var handler: @Sendable (TransferProgress) -> Void {
        { [self] progress in receive(progress) }
    }

    private func receive(_ progress: TransferProgress) {
        let toReport = stage.withLock { stage -> [TransferProgress] in
            switch stage {
            case .answer:
                return [progress]
            case .superseded:
                return []
            case .running(let held):
                // The body's end: the whole of a body of known size is there.
                if let total = progress.totalBytesToReceive, progress.bytesReceived >= total {
                    stage = .running(held: progress)
                    return []
                }
                // A transport that reports more after what looked like the end: in order.
                stage = .running(held: nil)
                return (held.map { [$0] } ?? []) + [progress]
            }
        }
        for progress in toReport { report(progress) }
    }

    /// Says whether the attempt's answer is the call's: the end it held is reported (before the call's future
    /// completes), or dropped. Only the first call counts.
    func settle(isTheAnswer: Bool) {
        let held = stage.withLock { stage -> TransferProgress? in
            guard case .running(let held) = stage else { return nil }
            stage = isTheAnswer ? .answer : .superseded
            return isTheAnswer ? held : nil
        }
        if let held { report(held) }
    }
}
