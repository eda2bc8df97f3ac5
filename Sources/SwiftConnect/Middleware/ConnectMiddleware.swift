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
/// ``retry(_:dueTo:attempt:)``. A retry adapts the original request again (so a refreshed token is picked
/// up) and sends it; cancelling the request cancels the attempt in flight and any wait. Cancellations are
/// never offered for retry, and a request is sent at most ``maxRetryAttempts`` (5) times in all, whatever
/// `retry` answers. Unlike ``RetryPolicy``, this hook does not check that the request is safe to replay:
/// look at `request.httpMethod` if that matters. A ``ConnectError`` that a request retried ends with says how
/// many attempts were made (``ConnectError/attempts``).
///
/// The client's ``RetryPolicy`` sits outside the client's middlewares, so each of its attempts runs this
/// middleware's whole retry loop: with the default policy (3 attempts) and a `retry` that keeps saying yes to a
/// 503, a GET is sent 3 × ``maxRetryAttempts`` times. When this hook decides the retries, create the client with
/// `retryPolicy: nil`, or take the statuses it handles out of ``RetryPolicy/retryableStatusCodes``.
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

    /// The most attempts the provided `intercept` makes, the first included: a safety net against a `retry`
    /// that always says yes. Defaults to 5; a value below 1 counts as 1.
    ///
    /// ```swift
    /// struct PatientMiddleware: ConnectMiddlewareProtocol {
    ///     static var maxRetryAttempts: Int { 2 }
    /// }
    /// ```
    static var maxRetryAttempts: Int { get }

    /// What waits before a ``RetryDecision/retryAfter(_:)`` attempt. Defaults to a ``DispatchRetryClock``;
    /// tests give `SwiftConnectTesting`'s `ImmediateRetryClock`, which records the delays and waits for none:
    ///
    /// ```swift
    /// struct BackingOff: ConnectMiddlewareProtocol {
    ///     var retryClock: any RetryClock = DispatchRetryClock()
    ///     func retry(_ request: URLRequest, dueTo error: any Error, attempt: Int) -> RetryDecision {
    ///         attempt < 3 ? .retryAfter(30) : .doNotRetry
    ///     }
    /// }
    /// let clock = ImmediateRetryClock()
    /// let connect = Connect(transport: fake, middlewares: [BackingOff(retryClock: clock)], retryPolicy: nil)
    /// // … after a request the fake answers with 503 three times: clock.delays == [30, 30]
    /// ```
    var retryClock: any RetryClock { get }
}

/// What ``ConnectMiddlewareProtocol/retry(_:dueTo:attempt:)`` answers about a failed request.
public enum RetryDecision: Sendable, Equatable {
    /// Stop: the failure stands (an error response still goes to the error handler).
    case doNotRetry
    /// Adapt the request again and send it now.
    case retry
    /// Adapt the request again and send it after the given number of seconds.
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

    /// A ``DispatchRetryClock``: waits really pass.
    public var retryClock: any RetryClock { DispatchRetryClock() }

    /// Adapts the request, sends it, and on failure asks ``retry(_:dueTo:attempt:)`` whether to adapt and send
    /// it again.
    ///
    /// - Parameters:
    ///   - request: The request so far.
    ///   - context: Facts about the call.
    ///   - next: The rest of the pipeline, called once per attempt.
    /// - Returns: A future of the last attempt's response.
    public func intercept(_ request: URLRequest, context: RequestContext, next: @escaping Next) -> Future<
        ConnectResponse
    > {
        let first: URLRequest
        do {
            first = try adapt(request)
        } catch {
            return Future(error: error)
        }
        return RetryLoop.run(
            maxAttempts: max(Self.maxRetryAttempts, 1),
            clock: retryClock,
            next: next,
            request: { attempt in attempt == 1 ? first : try self.adapt(request) },
            delay: { result, sent, attempt in self.retryDelay(after: result, of: sent, attempt: attempt) }
        )
    }

    /// Turns the outcome of an attempt into the question for ``retry(_:dueTo:attempt:)`` and its answer into
    /// a delay, or `nil` to stop.
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
