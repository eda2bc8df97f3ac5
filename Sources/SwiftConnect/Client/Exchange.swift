import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request on its way: the future of what the middlewares and the transport returned, and the check its
/// outcome still has to pass (error handler, validators, processors, debug output).
///
/// Kept apart so that a call finishes in one stage: `send(_:)` checks the outcome and decodes the body in the same
/// callback, instead of a stage for the check and another for the decoding, each with its future.
@usableFromInline
struct Exchange: Sendable {
    /// What the middlewares and the transport returned; tracked by the client until it completes.
    let sent: Future<ConnectResponse>
    /// What the outcome goes through; `nil` when the request failed before it was sent.
    let check: ResponseCheck?
    /// Tracks the future of a check that awaits its processors, which is what the caller waits for, in `sent`'s
    /// stead (``Connect/cancelAllRequests()``, ``Connect/requestsInFlight``); `nil` when `sent` is tracked.
    var trackProcessed: (@Sendable (Future<ConnectResponse>) -> Void)?

    init(sent: Future<ConnectResponse>, check: ResponseCheck?) {
        self.sent = sent
        self.check = check
    }

    /// The checked outcome, when `sent` is complete already (a synchronous transport, a cached response, a
    /// failure before sending) and its callbacks have run; `nil` otherwise. Read it once: the check logs with
    /// `debugResponse`.
    ///
    /// `sent` is complete before its callbacks run: the thread completing it may not have run them yet (the client's
    /// in-flight bookkeeping among them). What is made of the outcome is then a callback added after them, and runs
    /// after them (``finish(_:)``), as `Future`'s operators do.
    @usableFromInline
    var completedOutcome: Result<ConnectResponse, any Error>? {
        guard let result = sent.resultForImmediateTransform, check?.waits != true else { return nil }
        return check?.outcome(of: result) ?? result
    }

    /// The checked outcome as a future.
    func checked() -> Future<ConnectResponse> {
        guard let check else { return sent }
        let checked = sent.transformResult { check.outcome(of: $0) }
        guard check.waits else { return checked }
        let processed = checked.flatMap { response -> Future<ConnectResponse> in
            let processing = Future { try await check.waitingProcessors(on: response) }
            // The call's deadline covers its processors: one that never returns fails the call timed out.
            guard let timeout = check.timeout,
                let deadline = TransportDeadline(seconds: timeout, notAfter: check.deadline)
            else { return processing }
            deadline.start {
                processing.cancel(
                    failingWith: ConnectError.transportFailure(.deadlinePassed(after: timeout), sent: check.request))
            }
            processing.whenComplete { _ in deadline.cancel() }
            return processing
        }
        trackProcessed?(processed)
        return processed
    }

    /// The checked outcome transformed by `transform`, in one stage; for an exchange that
    /// ``completedOutcome`` has just found pending (it is not looked at again).
    @usableFromInline
    func finish<Output>(_ transform: @escaping @Sendable (ConnectResponse) throws -> Output) -> Future<Output> {
        let check = self.check
        if check?.waits == true { return checked().map(transform) }
        return sent.deriveResult { result in
            (check?.outcome(of: result) ?? result).flatMap { response in Result { try transform(response) } }
        }
    }
}

/// What a response goes through after the transport: the error handler, then the validators and processors in
/// order; with `debugResponse`, the outcome is logged.
struct ResponseCheck: Sendable {
    /// The request, as the outcome reports it.
    let request: ConnectRequest
    let errorHandler: any ErrorHandling
    let validators: [any ResponseValidator]
    let processors: [any ResponseProcessor]
    /// Where the outcome is logged, with `debugResponse`.
    let debugLogger: (any ConnectLogger)?
    /// Whether a status outside 200..<300 is an answer (``RequestOptions/acceptsEveryStatus``): the error handler
    /// is not asked, and validators and processors see only 2xx responses (an error's body is the server's, as it
    /// came: a processor that unwraps `data` would empty a 404's `{"error": …}`).
    var acceptsEveryStatus = false
    /// Whether debug output hides secrets, and the error the outcome fails with hides the request's secret values
    /// (``ConnectError/message``); both show everything when `false`.
    let redactsSecrets: Bool
    /// The call's time allowed (its `timeout`) and when it passes, for processors that wait (``waits``), which run
    /// after the retry loop has ended: `nil` for no deadline.
    var timeout: TimeInterval?
    var deadline: DispatchTime?

    /// The outcome of a request whose middlewares and transport returned `result`.
    func outcome(of result: Result<ConnectResponse, any Error>) -> Result<ConnectResponse, any Error> {
        var checked = result
        if case .success(let response) = result, !ResponseHead.statusCodes.contains(response.statusCode) {
            // Foundation's response takes any status: a transport of the user's (or a middleware) may make one with 0.
            // No status of the server's, for the error handler, nor an answer, even when every status is accepted.
            checked = .failure(ConnectError.notAnHTTPStatus(response.statusCode, request: response.storedRequest))
        }
        var outcome =
            acceptsEveryStatus
            ? checked.flatMap { response in
                response.isSuccess
                    ? Self.check(response, validators: validators, processors: processors) : .success(response)
            }
            : Self.validate(checked, errorHandler: errorHandler)
                .flatMap { response in Self.check(response, validators: validators, processors: processors) }
        if case .success(let response) = result, let body = response.bodyStream, case .failure = outcome {
            // Nobody reads the body of a streamed response the check refused: the transfer stops.
            body.cancel()
        }
        if !redactsSecrets { outcome = outcome.mapError(ConnectError.showingSecrets) }
        if let debugLogger {
            debugLogger.log(
                .debug,
                DebugOutput.outcome(
                    outcome, of: request.urlRequest, redacting: redactsSecrets, declared: request.declaredSecrets))
        }
        return outcome
    }

    /// Applies the error handler to an error status (the retry loop has already made a transport's `URLError` a
    /// ``ConnectError``). A ``ConnectError`` the handler makes of a response that retries sent for says how many
    /// attempts were made (``ConnectError/attempts``).
    static func validate(
        _ result: Result<ConnectResponse, any Error>,
        errorHandler: any ErrorHandling
    ) -> Result<ConnectResponse, any Error> {
        switch result {
        case .success(let response):
            if response.isSuccess { return result }
            if let error = errorHandler.handle(response) {
                guard response.attempts > 1 else { return .failure(error) }
                return .failure(ConnectError.reporting(attempts: Int(response.attempts), on: error))
            }
            // Accepted, the status is an answer: a streamed body read only in part for the handler is no answer.
            if let cut = response.bodyCut { return .failure(cut) }
            return result
        case .failure:
            return result
        }
    }

    /// Whether a processor waits (an ``AnyResponseProcessor`` made of an `async` closure): then the outcome is a
    /// future of the processors from that one on.
    var waits: Bool {
        !processors.isEmpty && processors.contains { ($0 as? AnyResponseProcessor)?.waitingBody != nil }
    }

    /// Runs the processors from the first one that waits, in order, awaiting those that wait: the rest of what
    /// ``outcome(of:)`` did, for a response it passed.
    func waitingProcessors(on response: ConnectResponse) async throws -> ConnectResponse {
        guard response.bodyStream == nil, !acceptsEveryStatus || response.isSuccess,
            let first = processors.firstIndex(where: { ($0 as? AnyResponseProcessor)?.waitingBody != nil })
        else { return response }
        var current = response
        for processor in processors[first...] {
            do {
                if let waiting = (processor as? AnyResponseProcessor)?.waitingBody {
                    current = try await waiting(current)
                } else {
                    current = try processor.process(current)
                }
            } catch {
                let failure = ConnectError.rejected(error, by: processor, response: current)
                throw redactsSecrets ? failure : ConnectError.showingSecrets(failure)
            }
        }
        return current
    }

    /// Runs the validators, then the processors, in order, up to the first that waits.
    static func check(
        _ response: ConnectResponse,
        validators: [any ResponseValidator],
        processors: [any ResponseProcessor]
    ) -> Result<ConnectResponse, any Error> {
        for validator in validators {
            do { try validator.validate(response) } catch {
                return .failure(ConnectError.rejected(error, by: validator, response: response))
            }
        }
        var current = response
        // A processor transforms a body in memory; a streamed one has not arrived yet.
        guard response.bodyStream == nil else { return .success(current) }
        for processor in processors {
            // One that waits, and those after it, run in `waitingProcessors(on:)`.
            if (processor as? AnyResponseProcessor)?.waitingBody != nil { break }
            do { current = try processor.process(current) } catch {
                return .failure(ConnectError.rejected(error, by: processor, response: current))
            }
        }
        return .success(current)
    }
}
