import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The usage guide's middleware shape: adapt each request before it goes out, and decide whether a failed
/// one is sent again.
///
/// Conform and implement ``adapt(_:)``, ``retry(_:dueTo:attempt:)`` or both; the
/// ``Middleware/intercept(_:context:next:)`` requirement is provided. Throwing from `adapt` fails the request
/// with your error before anything is sent.
///
/// ```swift
/// struct LocaleMiddleware: ConnectMiddlewareProtocol {
///     func adapt(_ request: URLRequest) throws -> URLRequest {
///         var request = request
///         request.setValue("en-US", forHTTPHeaderField: "Accept-Language")
///         return request
///     }
/// }
/// let connect = Connect(middleware: LocaleMiddleware(), errorHandler: ErrorHandler())
/// ```
///
/// ## Retrying
/// After a transport failure or a response outside 200..<300, the provided `intercept` asks
/// ``retry(_:dueTo:attempt:)``. A `.retry` or `.retryAfter` answer asks the client's retry loop for another
/// attempt (``RequestContext/retryAdvice``): the loop adapts and sends the request again through the whole
/// pipeline (so a refreshed token that ``adapt(_:)`` sets is picked up), after the delay asked for. The request it
/// adapts again is the one the call built: an ``AuthorizedConnector``'s token in it was read once, when the call
/// began, and is not read again; sign in `adapt`, as below, to send a refreshed one. The loop is the client's
/// ``RetryPolicy``: a request is sent at most its ``RetryPolicy/maxAttempts`` times in all (3 by default, and
/// with `retryPolicy: nil` too), and at most ``maxRetryAttempts`` times by this hook's answers. Cancellations are
/// never offered for retry, nor is an attempt stopped by the call's deadline or its own timeout
/// (``RetryPolicy/attemptTimeout``): the policy decides whether a timed-out attempt goes again. Unlike the policy's own rules, this hook does not check that the request is safe to
/// replay: look at `request.httpMethod` if that matters. A ``ConnectError`` that a request retried ends with says
/// how many attempts were made (``ConnectError/attempts``).
///
/// ```swift
/// struct RefreshingMiddleware: ConnectMiddlewareProtocol {
///     let tokens: TokenStore
///     func adapt(_ request: URLRequest) throws -> URLRequest {
///         var request = request
///         request.setValue("Bearer \(tokens.current)", forHTTPHeaderField: "Authorization")
///         return request
///     }
///     func retry(_ request: URLRequest, dueTo error: any Error, attempt: Int) -> RetryDecision {
///         guard (error as? ConnectError)?.statusCode == 401, attempt == 1 else { return .doNotRetry }
///         tokens.refresh()
///         return .retry
///     }
/// }
/// ```
public protocol ConnectMiddlewareProtocol: Middleware {
    /// Returns the request to send instead of `request`.
    ///
    /// A header value with CR, LF or NUL fails the call with ``ConnectError/Kind/invalidRequest`` on Apple platforms,
    /// where `URLRequest` keeps it for the core's check. On Linux, FoundationNetworking's `setValue` discards such a
    /// value as it is set and keeps the field's old one, so the core never sees it and the request goes out without
    /// it. A middleware on the core's ``ConnectRequest`` (``Middleware``, or ``AnyMiddleware/adapter(_:)``) keeps
    /// every value and fails on every platform.
    ///
    /// - Parameter request: The request so far.
    /// - Returns: The adapted request.
    /// - Throws: Any error, to fail the request without sending it.
    func adapt(_ request: URLRequest) throws -> URLRequest

    /// Decides whether to send a failed request again. The default never retries.
    ///
    /// - Parameters:
    ///   - request: The request as this middleware sent it (after ``adapt(_:)``).
    ///   - error: Why the attempt failed: the transport's error, or for a response outside 200..<300 a
    ///     ``ConnectError`` of kind ``ConnectError/Kind/httpStatus`` carrying the status, headers and body.
    ///   - attempt: The number of the attempt that failed, 1 for the first.
    /// - Returns: Whether to retry, and when.
    func retry(_ request: URLRequest, dueTo error: any Error, attempt: Int) -> RetryDecision

    /// The most attempts this middleware's answers lead to, the first included: a safety net against a `retry`
    /// that always says yes. Defaults to 5; the client's ``RetryPolicy/maxAttempts`` caps it too.
    ///
    /// ```swift
    /// struct PatientMiddleware: ConnectMiddlewareProtocol {
    ///     static var maxRetryAttempts: Int { 2 }
    /// }
    /// ```
    static var maxRetryAttempts: Int { get }
}

/// What ``ConnectMiddlewareProtocol/retry(_:dueTo:attempt:)`` answers about a failed request.
public enum RetryDecision: Sendable, Equatable {
    /// Stop: the failure stands (an error response still goes to the error handler).
    case doNotRetry
    /// Ask for another attempt at once: the request is adapted again and sent.
    case retry
    /// Ask for another attempt after the given number of seconds: 0 or less is at once; a value that is not a finite
    /// number (infinity, NaN) asks for no retry.
    case retryAfter(TimeInterval)
}

extension ConnectMiddlewareProtocol {
    /// Leaves the request as it is.
    ///
    /// - Parameter request: The request so far.
    /// - Returns: `request`, unchanged.
    public func adapt(_ request: URLRequest) throws -> URLRequest { request }

    /// Never retries.
    ///
    /// - Parameters:
    ///   - request: The request that failed.
    ///   - error: Why it failed.
    ///   - attempt: The number of the attempt that failed.
    /// - Returns: ``RetryDecision/doNotRetry``.
    public func retry(_ request: URLRequest, dueTo error: any Error, attempt: Int) -> RetryDecision { .doNotRetry }

    /// Five attempts in all, the first included.
    public static var maxRetryAttempts: Int { 5 }

    /// Adapts the request and sends it; on failure, asks ``retry(_:dueTo:attempt:)`` whether the client's retry
    /// loop should send it again, and passes a yes on as ``RequestContext/retryAdvice``.
    ///
    /// - Parameters:
    ///   - request: The request so far.
    ///   - context: Facts about the call: its ``RequestContext/attempt`` number is the one `retry` is told.
    ///   - next: The rest of the pipeline.
    /// - Returns: A future of this attempt's response.
    public func intercept(_ request: ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
        ConnectResponse
    > {
        // The guide's hooks speak URLRequest: it is made for them and read back (the pass-through one needs neither).
        if Self.self == ConnectMiddleware.self { return next(request) }
        let adapted: URLRequest
        let sent: ConnectRequest
        do {
            adapted = try adapt(request.urlRequest)
            var converted = try ConnectRequest(adapted)
            // A `URLRequest` carries no declared secrets (a connector's secret path values): kept from the request,
            // else the failures and recordings of what the hook sends show them.
            converted.declaredSecrets = request.declaredSecrets
            sent = converted
        } catch {
            return Future(error: error)
        }
        // Not asked on the last attempt the hook's limit or the loop's allows: no retry could follow its answer.
        guard context.attempt < min(max(Self.maxRetryAttempts, 1), context.maxAttempts) else { return next(sent) }
        // The advice is given before the returned future completes, so the loop reads it when the attempt ends. An
        // attempt stopped from outside (the call's deadline, the attempt's own timeout, the caller) has its returned
        // future failed first: that failure asks nothing (`transformFailure` runs no closure for it).
        return next(sent).transformFailure { result in
            // Stopped by its own timeout (its transport's future failed at the bottom, so this runs): the policy
            // decides whether a timed-out attempt goes again, as for one the call's end stopped.
            if context.attemptTimedOut?() == true || context.callHasEnded?() == true { return result }
            if let delay = self.retryDelay(after: result, of: adapted, attempt: context.attempt) {
                context.retryAdvice.request(after: delay)
            }
            return result
        }
    }

    /// Turns the outcome of an attempt into the question for ``retry(_:dueTo:attempt:)`` and its answer into
    /// a delay, or `nil` for no retry.
    private func retryDelay(
        after result: Result<ConnectResponse, any Error>,
        of request: URLRequest,
        attempt: Int
    ) -> TimeInterval? {
        let error: any Error
        switch result {
        case .success(let response):
            if response.isSuccess { return nil }
            error = ConnectError.httpStatus(response)
        case .failure(let failure):
            if (failure as? ConnectError)?.isCancelled == true || (failure as? URLError)?.code == .cancelled {
                return nil
            }
            error = failure
        }
        switch retry(request, dueTo: error, attempt: attempt) {
        case .doNotRetry: return nil
        case .retry: return 0
        case .retryAfter(let seconds): return seconds.isFinite ? max(0, seconds) : nil
        }
    }
}

/// The default middleware of the usage guide: passes requests through unchanged.
///
/// ```swift
/// let connect = Connect(middleware: ConnectMiddleware(), errorHandler: ErrorHandler())
/// ```
public struct ConnectMiddleware: ConnectMiddlewareProtocol {
    /// Creates the pass-through middleware.
    public init() {}
}
