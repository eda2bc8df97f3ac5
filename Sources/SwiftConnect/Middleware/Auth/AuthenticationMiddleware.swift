import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Android)
    import Android
#endif

/// Signs every request with a credential and, when the server rejects it, renews it once for all the
/// requests in flight.
///
/// ```swift
/// let auth = AuthenticationMiddleware(credential: .bearer(token: session.accessToken)) { expired in
///     // A client without this middleware: the refresh call must not wait for itself.
///     authClient.send(RefreshSession(refreshToken: session.refreshToken)).map { .bearer(token: $0.accessToken) }
/// }
/// // With a server, so that the credential goes to it alone (a client without one signs every host's requests).
/// let connect = Connect(middlewares: [auth], configuration: ServerConfiguration(host: "api.example.com"))
/// // After signing out:
/// auth.setCredential(nil)
/// ```
///
/// ## Signing
/// Every request going through gets `Authorization: <credential.headerValue>`, replacing any `Authorization`
/// it already had (from a connector's headers or an ``AuthorizedConnector``). With no credential (`nil`),
/// requests go out as they are.
///
/// ## Refreshing, once
/// When a response is unauthorized (by default: status 401):
/// - If the request was signed with the current credential, the middleware calls `refresh` with that
///   credential. While the refresh runs, other requests rejected with the same credential join it, and new
///   requests wait for it instead of going out with a credential known to be stale. `refresh` is called once
///   for all of them, never under a lock.
/// - If the credential changed since the request was signed (a refresh finished, or ``setCredential(_:)``),
///   the request asks the client's retry loop for another attempt at once, signed with the current credential,
///   without refreshing.
///
/// When the refresh succeeds, the new credential becomes ``credential``. Requests that waited without being
/// sent go out with it; requests the server rejected ask the client's retry loop for another attempt
/// (``RequestContext/retryAdvice``), which sends them through the whole pipeline again and signs them with it.
/// Those replays count against the client's ``RetryPolicy/maxAttempts`` like any other attempt: a request rejected
/// on its call's last attempt (with `RetryPolicy(maxAttempts: 1)`, every request), or that sent its call's own one-shot
/// body (a stream, which cannot be sent again), gets its rejection back at once, without waiting for the refresh it
/// starts or finds running, which goes on for the requests to come.
///
/// A renewed credential that the server rejects before it has accepted it once is not refreshed again: the
/// request fails with ``ConnectError/Kind/authenticationFailed`` carrying the response, and so does every other
/// request rejected with that credential, until ``setCredential(_:)`` or a credential the server accepts. A request
/// that was signed with an older credential, and whose rejection arrives only then, has not tried the renewed one:
/// it asks for another attempt with it, as above, and fails so if that is rejected too. Ten requests rejected
/// together cause one refresh, whatever the server answers afterwards.
///
/// When the refresh fails, every waiting request fails with a ``ConnectError`` of kind
/// ``ConnectError/Kind/authenticationFailed`` whose ``ConnectError/underlyingError`` is the refresh's error. A
/// request the server rejected carries that rejection, as an error status would: ``ConnectError/request`` as
/// sent, ``ConnectError/response`` (so ``ConnectError/statusCode`` and ``ConnectError/headers``) and
/// ``ConnectError/body``; one that waited without being sent carries only its request. A rejected response is
/// held only while its request waits for the refresh, and dropped if the refresh succeeds.
/// The credential is **kept**: requests rejected with it meanwhile fail the same way, each with its own
/// rejection, without being sent again, and the next request signed with it after the failure may start a new
/// refresh. Call
/// ``setCredential(_:)`` with `nil` to sign the user out instead.
///
/// ## Routes that need no credential
/// A request whose options say ``RequestOptions/requiresAuthentication`` `false` (a sign-in or token route) goes
/// through unsigned, as it is, and a 401 answer to it is an answer, not a reason to refresh. So does a request to
/// another host than the client's server (``RequestContext/isForServer``: a pre-signed upload URL, a third-party
/// API), unless its options say `requiresAuthentication: true`: the credential is the server's. A response from
/// another origin than the request's, where a redirect led it without the credential, is an answer too: its 401
/// starts no refresh, and its success does not prove a renewed credential. So is one from the request's own origin
/// after a redirect through another: the credential stayed behind there and does not come back. A client without a
/// ``ServerConfiguration`` has no server to tell other hosts from: every request is for its server, and is signed.
/// Give the client its server for a pre-signed URL to go unsigned.
///
/// ## Invalid credentials
/// A credential whose ``AuthorizationToken/headerValue`` contains CR, LF or NUL (such as a token read from a file with
/// its trailing newline) cannot be sent as a header, nor can ``AuthorizationToken/basic(username:password:)``
/// credentials that RFC 7617 forbids (a `:` in the username, a control character in either). A request to be signed
/// with it, the first time or after a refresh or ``setCredential(_:)``, fails with a ``ConnectError`` of kind
/// ``ConnectError/Kind/invalidRequest`` whose ``ConnectError/invalidRequestReason`` is
/// ``ConnectError/InvalidRequestReason/invalidHeader(name:)`` for `Authorization`, and is not sent.
///
/// ## Cancellation
/// Cancelling a request that waits for a refresh removes only that request; the refresh goes on for the
/// others, even when no request waits for it any more. The middleware puts no time limit on `refresh`: until its
/// future completes, every request it would sign waits (each within its own deadline). Complete it in every case,
/// with a failure when the user dismisses a sign-in, say. A future freed without completing (its promise dropped on
/// a path that forgot it) counts as a failed refresh: the waiting requests fail with
/// ``ConnectError/Kind/authenticationFailed``, and the next request may refresh again.
///
/// ## Request queues
/// The client's ``RequestQueue`` sits after its middlewares: a request waiting here for a refresh holds no slot,
/// so the refresh call may go through a client that shares the queue, however full the queue is.
///
/// - Important: Send the refresh call through a client that does not contain this middleware: a request
///   going through it while it refreshes would wait for the refresh it is part of, for ever. One sent through it
///   from inside `refresh` itself (on the thread that called it) is caught: it fails at once, unsent, with
///   ``ConnectError/Kind/authenticationFailed``, and so the refresh fails instead of hanging.
public final class AuthenticationMiddleware: Middleware {
    /// Renews a credential the server rejected.
    ///
    /// - Parameter expired: The credential the server rejected, or `nil` if the middleware had none (the requests
    ///   went out as they were, with a connector's own `Authorization` if they had one).
    /// - Returns: A future of the new credential. Its failure fails every request waiting for it.
    public typealias Refresh = @Sendable (_ expired: AuthorizationToken?) -> Future<AuthorizationToken>

    private let refresh: Refresh
    private let isUnauthorized: @Sendable (ConnectResponse) -> Bool
    private let state: Protected<State>

    /// Creates the middleware.
    ///
    /// - Parameters:
    ///   - credential: The credential to start with; `nil` sends requests unsigned until the first refresh
    ///     or ``setCredential(_:)``.
    ///   - isUnauthorized: Whether a response means the credential was rejected. Defaults to status 401.
    ///     Called outside any lock, once per response.
    ///   - refresh: Renews a rejected credential (see ``Refresh``). Called outside any lock, at most once at a
    ///     time, from the thread that received the rejection; one that waited for a refresh ``setCredential(_:)``
    ///     superseded, from the thread that completed that one's future.
    public init(
        credential: AuthorizationToken?,
        isUnauthorized: @escaping @Sendable (ConnectResponse) -> Bool = { $0.statusCode == 401 },
        refresh: @escaping Refresh
    ) {
        self.refresh = refresh
        self.isUnauthorized = isUnauthorized
        state = Protected(State(credential: credential))
    }

    /// The credential requests are signed with now, or `nil` when they go out unsigned.
    ///
    /// Thread-safe. A successful refresh replaces it; ``setCredential(_:)`` sets it.
    public var credential: AuthorizationToken? {
        state.withLock { $0.credential }
    }

    /// Replaces the credential, for example after signing in (a token) or out (`nil`).
    ///
    /// Signed out, a request goes unsigned and its rejection is its answer (an error of kind
    /// ``ConnectError/Kind/httpStatus``): no refresh runs, which would sign the user back in, until a credential is
    /// set again. (A middleware made with no credential refreshes on the first rejection: a token store still empty.)
    ///
    /// Requests waiting for a refresh stop waiting: those not sent yet go out with `credential`, those the server
    /// rejected ask for another attempt; the result of that refresh, when it comes, is ignored (the observers of the
    /// call that started it hear ``ConnectEvent/tokenRefreshEnded(succeeded:)`` with `false`, unless it gives the
    /// credential set here). Requests already
    /// signed with the previous credential and rejected later ask for another attempt too, without a refresh.
    ///
    /// - Parameter credential: The new credential, or `nil` to send requests unsigned.
    public func setCredential(_ credential: AuthorizationToken?) {
        let (waiters, signature) = state.withLock { $0.replaceCredential(with: credential) }
        for waiter in waiters { release(waiter, signedWith: signature) }
    }

    /// Signs the request, sends it, and handles a rejection as the type's documentation describes.
    ///
    /// - Parameters:
    ///   - request: The request so far.
    ///   - context: Facts about the call: a rejected request asks for another attempt through its
    ///     ``RequestContext/retryAdvice``.
    ///   - next: The rest of the pipeline; called at most once.
    /// - Returns: A future of the response, or of a ``ConnectError/Kind/authenticationFailed`` error, or of an
    ///   ``ConnectError/Kind/invalidRequest`` error when the credential cannot be a header value.
    public func intercept(
        _ request: ConnectRequest,
        context: RequestContext,
        next: @escaping Next
    ) -> Future<ConnectResponse> {
        // A route that opts out (`requiresAuthentication: false`), or a call to another host than the client's server
        // that does not opt in, goes as it is: unsigned, and its 401 is an answer.
        if !context.signs(request) { return next(request) }
        let promise = Promise<ConnectResponse>()
        let (waiter, admission) = state.withLock { state in
            let waiter = Waiter(
                id: state.makeID(), request: request, next: next, promise: promise, advice: context.retryAdvice,
                rejection: nil, observation: context.transfer.observation,
                isFinal: context.attempt >= context.maxAttempts, callBodyStream: context.callBodyStream,
                acceptsEveryStatus: context.options.acceptsEveryStatus == true)
            return (waiter, state.admit(waiter))
        }
        switch admission {
        case .refuse:
            return Future(error: ConnectError.sentFromItsOwnRefresh(request))
        case .wait:
            break
        case .send(let signature):
            send(waiter, signedWith: signature)
        }
        let id = waiter.id
        promise.setCancelHandler { [weak self] in self?.stopWaiting(id) }
        return promise.future
    }
}

// MARK: - Discoverability

extension Middleware where Self == AuthenticationMiddleware {
    /// A middleware that signs requests and refreshes the credential once when the server rejects it.
    ///
    /// ```swift
    /// let connect = Connect(middlewares: [.authentication(credential: .bearer(token: token)) { _ in renew() }])
    /// ```
    ///
    /// Keep a reference to it (`let auth = AuthenticationMiddleware(…)`) to call
    /// ``AuthenticationMiddleware/setCredential(_:)`` later.
    ///
    /// - Parameters:
    ///   - credential: The credential to start with, or `nil`.
    ///   - isUnauthorized: Whether a response means the credential was rejected. Defaults to status 401.
    ///   - refresh: Renews a rejected credential.
    /// - Returns: The middleware.
    public static func authentication(
        credential: AuthorizationToken?,
        isUnauthorized: @escaping @Sendable (ConnectResponse) -> Bool = { $0.statusCode == 401 },
        refresh: @escaping AuthenticationMiddleware.Refresh
    ) -> AuthenticationMiddleware {
        AuthenticationMiddleware(credential: credential, isUnauthorized: isUnauthorized, refresh: refresh)
    }
}

// MARK: - Sending

extension AuthenticationMiddleware {
    /// Signs the request with `signature`'s credential and sends it, or fails it without sending it when the
    /// credential cannot be a header value.
    private func send(_ waiter: Waiter, signedWith signature: Signature) {
        let result = waiter.promise.future
        guard !result.isCompleted else { return }  // Cancelled while waiting: never sent.
        var request = waiter.request
        if let credential = signature.credential {
            // A value with CR, LF or NUL (a token read with its trailing newline) would be dropped on the way
            // out, and the request sent unsigned: fail it instead, and send nothing.
            // So would a Basic username with a colon be sent as someone else's credentials, and Basic credentials
            // with a control character be sent base64-encoded, for the server to reject.
            guard credential.isSendable else {
                _ = waiter.promise.completeIfPending(
                    with: .failure(credential.unsendableError(request: .sent(request))))
                return
            }
            request.headerFields[.authorization] = credential.headerValue
        }
        let signedWith = signature.credential.map { _ in request.headerFields[.authorization] } ?? nil
        let sent = waiter.next(request)
        result.setUpstream(sent)  // Cancelling the caller's future now cancels this attempt.
        sent.whenComplete { outcome in
            self.receive(outcome, for: waiter, signedIn: signature.epoch, signedWith: signedWith)
        }
    }

    /// Hands a response back, or decides what a rejection leads to.
    private func receive(
        _ outcome: Result<ConnectResponse, any Error>,
        for waiter: Waiter,
        signedIn epoch: UInt64,
        signedWith: String? = nil
    ) {
        // A response from another origin, where a redirect led the request without its credential (the transports
        // keep it home), says nothing of the credential: it neither proves it nor asks for a refresh. Nor does one to
        // a request whose credential a stage after this one replaced (a client made with `adding(middlewares:)` that
        // signs as another user, an adapter): it answers that stage's credential, not this one's.
        let answersThisCredential = { (response: ConnectResponse) in
            Self.answersForTheCredential(response) && Self.carries(signedWith, response)
        }
        guard case .success(let response) = outcome, answersThisCredential(response), isUnauthorized(response)
        else {
            if case .success(let response) = outcome, Self.provesCredential(response), answersThisCredential(response) {
                state.withLock { $0.accepted(signedIn: epoch) }
            }
            _ = waiter.promise.completeIfPending(with: outcome)
            return
        }
        let rejected = Waiter(
            id: waiter.id, request: waiter.request, next: waiter.next, promise: waiter.promise, advice: waiter.advice,
            rejection: response, observation: waiter.observation,
            // An attempt that sent its call's own one-shot body is its last too: the loop cannot send it again.
            isFinal: waiter.isFinal
                || waiter.callBodyStream.map { waiter.advice.sentStreams.contains($0) } == true,
            callBodyStream: waiter.callBodyStream, acceptsEveryStatus: waiter.acceptsEveryStatus)
        let decision = state.withLock { $0.decideAfterRejection(of: rejected, signedIn: epoch, with: response) }
        switch decision {
        case .wait, .refresh:
            // Cancelled between the response and joining the refresh, or starting it: the cancel handler found
            // nothing to remove, and the waiter would keep its pipeline until the refresh ends.
            if waiter.promise.future.isCompleted { stopWaiting(waiter.id) }
        case .answer, .retry, .fail:
            break
        }
        switch decision {
        case .wait:
            break
        case .refresh(let id, let expired):
            startRefresh(id, of: expired, observation: waiter.observation)
            // Completed after the call to `refresh`: a request its caller then sends from this thread is not taken
            // for one `refresh` sends.
            if rejected.isFinal { _ = waiter.promise.completeIfPending(with: .success(response)) }
        case .answer:
            _ = waiter.promise.completeIfPending(with: .success(response))
        case .retry:
            askForRetry(rejected, with: response)
        case .fail(let error):
            // A call that takes every status as its answer (a generated OpenAPI client's, which reads a documented
            // 401) gets the rejection itself, not the middleware's error.
            _ = waiter.promise.completeIfPending(
                with: waiter.acceptsEveryStatus ? .success(response) : .failure(error.from(response)))
        }
    }

    /// Whether `response` comes from the origin its request was sent to: one a redirect led to another origin does
    /// not, nor does one from its own origin after a redirect through another, where the credential was dropped (a
    /// response that says no URL is taken as its request's own). Compared with the request as it reached the
    /// transport, so that a stage after this one that sends the request elsewhere, signed, is still answered for.
    static func answersForTheCredential(_ response: ConnectResponse) -> Bool {
        if response.leftOrigin { return false }
        guard let answered = response.storedHead.url, let asked = response.storedRequest.url, answered != asked
        else { return true }
        return answered.hasSameOrigin(as: asked)
    }

    /// Whether the request `response` answers went out with the `Authorization` this middleware signed it with
    /// (`signed`), as it reached the transport: `false` only when it carries another one. One that carries none (a
    /// response a stage or a fake made for the request as it was before signing) is taken as signed. Compared without
    /// the blanks around the values, which the chain trims before the transport (RFC 9110 §5.5): an empty token went
    /// out as `Bearer`, and was taken for another stage's credential, never refreshed.
    static func carries(_ signed: String?, _ response: ConnectResponse) -> Bool {
        guard let signed else { return true }
        let carried: String?
        switch response.storedRequest {
        case .foundation(let request): carried = request.value(forHTTPHeaderField: "Authorization")
        case .model(let sent): carried = sent.request.headerFields[.authorization]
        }
        return carried.map { blanksTrimmed($0).elementsEqual(blanksTrimmed(signed)) } ?? true
    }

    /// `value` without the spaces and tabs around it.
    private static func blanksTrimmed(_ value: String) -> Substring.UTF8View {
        var trimmed = Substring(value).utf8
        while let byte = trimmed.first, byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
            trimmed = trimmed.dropFirst()
        }
        while let byte = trimmed.last, byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
            trimmed = trimmed.dropLast()
        }
        return trimmed
    }

    /// Whether `response` shows that the server read and took the credential: a status below 500 but 408 and 429.
    /// A server error or a rate limit may come before any check of it: a renewed credential answered so stays
    /// unproven, and a 401 of it after that ends in a failure, not in another refresh.
    static func provesCredential(_ response: ConnectResponse) -> Bool {
        let status = response.statusCode
        return status < 500 && status != 408 && status != 429
    }

    /// Hands the rejection back and asks the client's retry loop to send the request again, now that the
    /// credential changed.
    private func askForRetry(_ waiter: Waiter, with rejection: ConnectResponse) {
        waiter.advice.request(after: 0)
        _ = waiter.promise.completeIfPending(with: .success(rejection))
    }

    /// Lets a request that waited for a refresh go on with `signature`: sends it if it was never sent, or asks
    /// for another attempt if the server rejected it.
    private func release(_ waiter: Waiter, signedWith signature: Signature) {
        if let rejection = waiter.rejection {
            askForRetry(waiter, with: rejection)
        } else {
            send(waiter, signedWith: signature)
        }
    }

    /// Calls `refresh` (no lock held) and releases the waiting requests when it completes.
    private func startRefresh(_ id: UInt64, of expired: AuthorizationToken?, observation: CallObservation?) {
        // Told before this thread counts as `refresh`'s: a request an observer sends on hearing it waits for the
        // refresh as any other does, where it was refused as one `refresh` itself sent.
        observation?.record(.tokenRefreshStarted)
        state.withLock { $0.enteredRefreshCall(id) }
        let renewed = refresh(expired)
        // Requests from this thread no longer come from inside `refresh`.
        state.withLock { $0.leftRefreshCall(id) }
        // `self` is kept until the refresh completes: the waiting requests live in `state`. A future freed without
        // completing (its promise dropped, say on a path that forgot to fail it) ends the refresh as failed: its
        // waiters would otherwise wait until their deadlines, and every later request after them, for ever.
        let ending = RefreshEnding { result in
            self.finishRefresh(id, with: result, observation: observation)
        }
        renewed.whenComplete { result in ending.end(with: result) }
    }

    /// Ends refresh `id`, telling `observation` whether it gave the credential requests are signed with now: a
    /// refresh ``setCredential(_:)`` superseded gave it only if its token is the one set.
    private func finishRefresh(
        _ id: UInt64, with result: Result<AuthorizationToken, any Error>, observation: CallObservation?
    ) {
        let outcome = result.mapError { error in
            ConnectError(
                .authenticationFailed,
                message: "the server rejected the credential and refreshing it failed",
                underlyingError: error
            )
        }
        let (finished, current) = state.withLock { state in (state.finishRefresh(id, with: outcome), state.credential) }
        guard let (waiters, signature) = finished else {
            // Superseded by `setCredential(_:)`, which already released the waiters: its result is dropped, and gave
            // the credential in use only if that is the same (a `refresh` that set it itself). A refresh that waited
            // for this one to end starts now.
            let gaveCurrent = (try? result.get()).map { $0 == current } ?? false
            observation?.record(.tokenRefreshEnded(succeeded: gaveCurrent))
            if let next = state.withLock({ $0.supersededRefreshEnded(id) }) {
                startRefresh(next.id, of: next.expired, observation: next.observation)
            }
            return
        }
        if case .success = outcome {
            observation?.record(.tokenRefreshEnded(succeeded: true))
        } else {
            observation?.record(.tokenRefreshEnded(succeeded: false))
        }
        switch outcome {
        case .success:
            for waiter in waiters { release(waiter, signedWith: signature) }
        case .failure(let error):
            for waiter in waiters {
                // The rejection is the answer of a call that takes every status as one (see `receive`).
                if waiter.acceptsEveryStatus, let rejection = waiter.rejection {
                    waiter.promise.completeIfPending(with: .success(rejection))
                } else {
                    waiter.promise.completeIfPending(with: .failure(error.rejecting(waiter)))
                }
            }
        }
    }

    /// Removes a cancelled request from the refresh it waits for, if any.
    private func stopWaiting(_ id: UInt64) {
        // Released after the lock: the waiter's `next` may hold the last reference to a released client's
        // pipeline, whose teardown must not run under this lock.
        let removed = state.withLock { $0.removeWaiter(id) }
        withExtendedLifetime(removed) {}
    }
}

// MARK: - Abandoned refreshes

extension AuthenticationMiddleware {
    /// What ends a refresh, run once: with the refresh future's result, or, when the future is freed without
    /// completing (the callback holding this is freed unrun), with a failure.
    final class RefreshEnding: Sendable {
        private let action: Protected<(@Sendable (Result<AuthorizationToken, any Error>) -> Void)?>

        init(_ action: @escaping @Sendable (Result<AuthorizationToken, any Error>) -> Void) {
            self.action = Protected(action)
        }

        /// Runs the action with `result`, unless it ran already.
        func end(with result: Result<AuthorizationToken, any Error>) {
            take()?(result)
        }

        private func take() -> (@Sendable (Result<AuthorizationToken, any Error>) -> Void)? {
            action.withLock { action in
                defer { action = nil }
                return action
            }
        }

        deinit {
            guard let action = take() else { return }
            // Freed wherever the last reference to the future went, maybe under a lock of the app's: the waiting
            // requests are failed from elsewhere.
            DispatchQueue.global().async { action(.failure(ConnectError.refreshAbandoned())) }
        }
    }
}

// MARK: - State

extension AuthenticationMiddleware {
    /// One request through the middleware.
    struct Waiter: Sendable {
        let id: UInt64
        /// The request as it arrived, before signing.
        let request: ConnectRequest
        let next: Next
        let promise: Promise<ConnectResponse>
        /// Where a rejected request asks the client's retry loop for another attempt.
        let advice: RetryAdvice
        /// The response that rejected the request, while it waits for a refresh; `nil` for a request that waits
        /// without having been sent.
        let rejection: ConnectResponse?
        /// The call's observers, told of a refresh this request starts.
        var observation: CallObservation? = nil
        /// Whether no replay can follow the request's rejection, which is then its answer, not a reason to wait for a
        /// refresh: it is its call's last attempt (``RequestContext/attempt`` has reached the retry loop's most), or,
        /// once rejected, it sent its call's own one-shot body.
        var isFinal = false
        /// The call's own one-shot body, if it has one (the context's `callBodyStream`).
        var callBodyStream: ConnectRequest.OneShotStream? = nil
        /// Whether the call takes a response of any status as its answer (``RequestOptions/acceptsEveryStatus``): a
        /// rejection the middleware cannot get past (its refresh failed, the renewed credential was rejected too) is
        /// then its answer, the `401` itself, not the middleware's error.
        var acceptsEveryStatus = false
    }

    /// A credential and the epoch it belongs to: what a request is signed with.
    struct Signature: Sendable {
        let credential: AuthorizationToken?
        let epoch: UInt64
    }

    /// What a rejected request does next.
    enum Decision {
        /// Wait for the refresh in flight.
        case wait
        /// Call `refresh` for `expired` (the request already waits for it).
        case refresh(id: UInt64, expired: AuthorizationToken?)
        /// Ask for another attempt: the credential changed since the request was signed.
        case retry
        /// Fail: the refresh failed, or the renewed credential was rejected too.
        case fail(ConnectError)
        /// Hand the rejection back as it is: the call can make no other attempt, so it waits for no refresh (one it
        /// asked for runs on, for the requests to come).
        case answer
    }

    /// A refresh in flight and the requests waiting for it, in the order they started waiting.
    struct RefreshInFlight {
        let id: UInt64
        var waiters: [Waiter]
        /// The thread calling `refresh`, until the call returns: a request arriving on it meanwhile was sent by
        /// `refresh` itself, and would wait for itself.
        var callingThread: pthread_t?
        /// Whether `refresh` is not called yet: it waits for the end of a refresh ``setCredential(_:)`` superseded,
        /// so that two calls of `refresh` never run at once.
        var isDeferred = false
        /// The observers of the call whose rejection asked for the refresh, told when it starts and ends: for a
        /// deferred refresh, that call may not wait for it (its last attempt) nor be waiting any more.
        var observation: CallObservation? = nil
    }

    /// What a request entering the middleware does.
    enum Admission {
        /// Go out now, signed so.
        case send(Signature)
        /// Wait for the refresh in flight (already queued).
        case wait
        /// Fail: sent from inside `refresh`, it would wait for the refresh it is part of.
        case refuse
    }

    /// Everything that changes, behind the one lock. Its methods run inside the lock and call no user code.
    struct State {
        var credential: AuthorizationToken?
        /// Advances whenever `credential` is replaced or a refresh of it ends; requests remember the epoch they
        /// were signed in, to tell a rejection of the current credential from one of an older credential.
        var epoch: UInt64 = 0
        /// The error of the failed refresh that started the current epoch; `nil` if it started otherwise.
        var failure: ConnectError?
        /// Whether the current credential came from a refresh and the server has not accepted it yet.
        var isUnproven = false
        /// The error every request rejected with the current credential fails with, once that credential was
        /// rejected although it had just been renewed.
        var renewalRejected: ConnectError?
        var refresh: RefreshInFlight?
        /// Refreshes whose outcome ``setCredential(_:)`` replaced, still running: a new refresh waits for them.
        var supersededRefreshes: Set<UInt64> = []
        /// Whether ``setCredential(_:)`` set no credential (the user signed out): a rejection is then an answer, not a
        /// reason to refresh, which would sign the user back in. A middleware made without one is not signed out.
        var isSignedOut = false
        private var lastID: UInt64 = 0

        init(credential: AuthorizationToken?) {
            self.credential = credential
        }

        var signature: Signature { Signature(credential: credential, epoch: epoch) }

        mutating func makeID() -> UInt64 {
            lastID &+= 1
            return lastID
        }

        /// The signature for a request about to be sent, or `.wait` after queueing it behind the refresh in
        /// flight, or `.refuse` if `refresh` itself sends it.
        mutating func admit(_ waiter: Waiter) -> Admission {
            guard let inFlight = refresh else { return .send(signature) }
            if let thread = inFlight.callingThread, pthread_equal(thread, pthread_self()) != 0 { return .refuse }
            refresh?.waiters.append(waiter)
            return .wait
        }

        /// Notes that this thread is about to call `refresh` for refresh `id`: a request it sends until the call
        /// returns is `refresh`'s own.
        mutating func enteredRefreshCall(_ id: UInt64) {
            if refresh?.id == id { refresh?.callingThread = pthread_self() }
        }

        /// Notes that the call to `refresh` for refresh `id` returned.
        mutating func leftRefreshCall(_ id: UInt64) {
            if refresh?.id == id { refresh?.callingThread = nil }
        }

        /// Notes that the server accepted a request signed in `requestEpoch`: the current credential, if so, is
        /// proven, and a rejection of it after its renewal no longer stops it being refreshed.
        mutating func accepted(signedIn requestEpoch: UInt64) {
            guard requestEpoch == epoch else { return }
            isUnproven = false
            renewalRejected = nil
        }

        mutating func decideAfterRejection(
            of waiter: Waiter,
            signedIn requestEpoch: UInt64,
            with response: ConnectResponse
        ) -> Decision {
            if refresh != nil {
                if waiter.isFinal { return .answer }
                refresh?.waiters.append(waiter)
                return .wait
            }
            if requestEpoch == epoch {
                // A request signed with an older credential is not failed by this one's rejection: it has not tried
                // the current credential yet, and does so once (below), without a refresh.
                if let renewalRejected { return .fail(renewalRejected) }
                if isSignedOut { return .answer }
                if isUnproven {
                    // Renewed and rejected at once: refreshing again would only repeat it.
                    // Kept without this rejection's request, head and body: each later request's failure is given
                    // its own (`from(_:)` fills what is empty).
                    let error = ConnectError.rejectedAfterRenewal()
                    renewalRejected = error
                    return .fail(error)
                }
                let id = makeID()
                // A refresh `setCredential` superseded still runs: this one starts when it ends (`refresh` is called
                // at most once at a time, as a rotating refresh token needs).
                let isDeferred = !supersededRefreshes.isEmpty
                // A request no replay can follow starts the refresh for the requests to come, without waiting for it.
                refresh = RefreshInFlight(
                    id: id, waiters: waiter.isFinal ? [] : [waiter],
                    callingThread: nil, isDeferred: isDeferred,
                    observation: waiter.observation)
                if isDeferred { return waiter.isFinal ? .answer : .wait }
                return .refresh(id: id, expired: credential)
            }
            if let failure { return .fail(failure) }
            return .retry
        }

        /// Ends refresh `id`: stores its outcome and hands back its waiters, or `nil` if it was superseded.
        mutating func finishRefresh(
            _ id: UInt64,
            with outcome: Result<AuthorizationToken, ConnectError>
        ) -> (waiters: [Waiter], signature: Signature)? {
            guard let finished = refresh, finished.id == id else { return nil }
            refresh = nil
            epoch &+= 1
            renewalRejected = nil
            switch outcome {
            case .success(let renewed):
                credential = renewed
                failure = nil
                isUnproven = true
            case .failure(let error):
                failure = error
                isUnproven = false
            }
            return (finished.waiters, signature)
        }

        /// Sets the credential; hands back the requests that waited for a refresh, to go on with it.
        mutating func replaceCredential(with newCredential: AuthorizationToken?) -> ([Waiter], Signature) {
            credential = newCredential
            isSignedOut = newCredential == nil
            epoch &+= 1
            failure = nil
            renewalRejected = nil
            isUnproven = false
            let waiters = refresh?.waiters ?? []
            // A refresh whose call has begun still runs: its outcome is ignored, but a new one waits for its end.
            if let superseded = refresh, !superseded.isDeferred { supersededRefreshes.insert(superseded.id) }
            refresh = nil
            return (waiters, signature)
        }

        /// Notes the end of a refresh ``setCredential(_:)`` superseded; when it was the last, a refresh that waited
        /// for it starts now: its id, the credential to renew and the observers of the call that asked for it.
        mutating func supersededRefreshEnded(_ id: UInt64) -> (
            id: UInt64, expired: AuthorizationToken?,
            observation: CallObservation?
        )? {
            guard supersededRefreshes.remove(id) != nil, supersededRefreshes.isEmpty, let deferred = refresh,
                deferred.isDeferred
            else { return nil }
            refresh?.isDeferred = false
            return (deferred.id, credential, deferred.observation)
        }

        /// Takes the request `id` off the refresh it waits for, and returns it, for the caller to release outside
        /// the lock.
        mutating func removeWaiter(_ id: UInt64) -> Waiter? {
            guard let index = refresh?.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return refresh?.waiters.remove(at: index)
        }
    }
}

// MARK: - Errors

extension ConnectError {
    /// A request sent through an ``AuthenticationMiddleware`` from inside its own `refresh`.
    static func sentFromItsOwnRefresh(_ request: ConnectRequest) -> ConnectError {
        ConnectError(
            .authenticationFailed,
            message: "the refresh sent this request through the AuthenticationMiddleware it renews the credential "
                + "of, where it would wait for itself: send it through a client without that middleware",
            request: .sent(request)
        )
    }

    /// The failure of a refresh as `waiter` reports it: with the request, response and body of its rejection, or
    /// with its request if it waited without being sent.
    fileprivate func rejecting(_ waiter: AuthenticationMiddleware.Waiter) -> ConnectError {
        if let rejection = waiter.rejection { return from(rejection) }
        var error = self
        if error.storedRequest == nil { error.sentRequest = waiter.request }
        return error
    }

    /// The failure of a refresh whose future was freed without completing.
    static func refreshAbandoned() -> ConnectError {
        ConnectError(
            .authenticationFailed,
            message: "the refresh's future was freed without completing: complete the promise it returns in every case"
        )
    }

    /// A request rejected with a credential that had just been renewed; its rejection is added with `from(_:)`.
    static func rejectedAfterRenewal() -> ConnectError {
        ConnectError(.authenticationFailed, message: "the server rejected the renewed credential")
    }
}
