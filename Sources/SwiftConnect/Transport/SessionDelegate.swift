import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The delegate of a ``URLSessionTransport``'s own session: routes each task's events to its handler.
///
/// Every task of the transport has a handler, registered before the task starts:
/// - a hop of an exchange the core runs (``URLSessionHopEngine``) has a ``HopHandler``: its head and body go to the
///   core piece by piece;
/// - a plain exchange (``URLSessionTransport``'s completion-handler path) has a ``TaskHandler``: its body comes whole
///   through URLSession's completion handler.
///
/// Every redirect is declined, so that the 3xx is the task's answer and the core follows it by its rules.
///
/// Challenges (certificate pins, the 401 nobody can answer on Linux) are handled here for both.
final class SessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    /// The handler of each task, by task identifier.
    private let handlers = Protected<[Int: Handler]>([:])

    /// The handler of one task.
    enum Handler: Sendable {
        /// A plain exchange, answered through URLSession's completion handler.
        case whole(TaskHandler)
        /// A hop of an exchange the core runs.
        case hop(HopHandler)

        /// What the task's challenges decided.
        var verdict: TaskVerdict {
            switch self {
            case .whole(let handler): return handler.verdict
            case .hop(let handler): return handler.verdict
            }
        }
    }
    /// The certificate pins the server-trust challenge checks (``ServerTrustPinning``).
    let pins: CertificatePins
    /// Held while a redirect is answered and while a task is cancelled, so that the two never cross
    /// (``cancel(_:)``).
    private let redirectAnswerOrCancel = ExclusiveSection()
    /// Runs on the delegate queue just before a redirect is answered: tests hold the answer back with it.
    let beforeAnsweringRedirect: (@Sendable (URLSessionTask) -> Void)?
    /// Where the cookies of each response are kept, on Linux, where the session's own parsing is off
    /// (``SessionCookies``); `nil` elsewhere, and when the configuration keeps no cookies.
    let cookies: SessionCookies?
    /// Whether the session's configuration lets a redirect's cookies go on to the call's next hops; `nil` lets them
    /// (a delegate made without a configuration, in tests).
    let redirectCookies: RedirectCookieConsent?

    /// Creates a delegate checking `pins`, keeping `cookies`, and the cookies of redirects as `redirectCookies`
    /// says; `beforeAnsweringRedirect` is for tests.
    init(
        pins: CertificatePins = CertificatePins(), cookies: SessionCookies? = nil,
        redirectCookies: RedirectCookieConsent? = nil,
        beforeAnsweringRedirect: (@Sendable (URLSessionTask) -> Void)? = nil
    ) {
        self.pins = pins
        self.cookies = cookies
        self.redirectCookies = redirectCookies
        self.beforeAnsweringRedirect = beforeAnsweringRedirect
        super.init()
    }

    /// Cancels `task`, one of this delegate's: every cancellation of the transport's tasks comes here.
    ///
    /// FoundationNetworking stops the process ("Received callback for HTTP redirection, but we're not waiting for
    /// it") when a redirect is answered after its task was cancelled: the answer reaches a task that has left the
    /// state of waiting for it. Cancelling under the lock that the answer is given under, where the answer is only
    /// given to a task still running, keeps the two apart. An answer given first is queued on the task's work
    /// queue before the cancellation, which that queue then runs after it; a cancellation made first leaves the
    /// task no longer running, and the redirect is not answered: the task ends as cancelled.
    func cancel(_ task: URLSessionTask) {
        redirectAnswerOrCancel.run { task.cancel() }
    }

    /// Routes the events of `task`, a plain exchange, to `handler`. Call before `task.resume()`.
    func register(_ handler: TaskHandler, for task: URLSessionTask) {
        handlers.withLock { $0[task.taskIdentifier] = .whole(handler) }
    }

    /// Routes the events of `task`, a hop of an exchange the core runs, to `handler`. Call before `task.resume()`.
    func register(_ handler: HopHandler, for task: URLSessionTask) {
        handlers.withLock { $0[task.taskIdentifier] = .hop(handler) }
    }

    /// Stops routing the events of the task `identifier` (a plain task, at its completion handler).
    func unregister(_ identifier: Int) {
        _ = handlers.withLock { $0.removeValue(forKey: identifier) }
    }

    func handler(for task: URLSessionTask) -> Handler? {
        handlers.withLock { $0[task.taskIdentifier] }
    }

    /// The hop handler of `task`, if it is a hop.
    private func hop(_ task: URLSessionTask) -> HopHandler? {
        guard case .hop(let handler)? = handler(for: task) else { return nil }
        return handler
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        cookies?.keep(from: response, of: dataTask.originalRequest)
        guard let handler = hop(dataTask) else { return completionHandler(.allow) }
        let proceed = handler.didReceive(response)
        completionHandler(proceed ? .allow : .cancel)
        if !proceed { cancel(dataTask) }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        // `false`: the hop's body has ended (its reader left, its buffer overflowed), which stopped the task.
        _ = hop(dataTask)?.didReceive(data)
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        hop(task)?.didSend(totalBytesSent)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let handler = handlers.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        // A plain task ends in its completion handler, which has the body.
        guard case .hop(let handler)? = handler else { return }
        handler.didComplete(error: error, response: task.response as? HTTPURLResponse)
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        switch ServerTrustPinning.verdict(for: challenge, pins: pins) {
        case .defaultHandling?:
            return completionHandler(.performDefaultHandling, nil)
        case .accept(let credential)?:
            return completionHandler(.useCredential, credential)
        case .reject(let host)?:
            // Cancelling ends the task before anything is sent; its completion then reports the pins.
            handler(for: task)?.verdict.rejectedPins(of: host)
            return completionHandler(.cancelAuthenticationChallenge, nil)
        case nil:
            break
        }
        // On Linux, a 401 nothing can answer is declined, or the task would never complete.
        guard let response = Self.unanswerable401(of: challenge) else {
            completionHandler(.performDefaultHandling, nil)
            return
        }
        // Declining cancels the task: its completion then reports the 401 instead of the cancellation.
        handler(for: task)?.verdict.declinedChallenge(of: response)
        completionHandler(.cancelAuthenticationChallenge, nil)
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        cookies?.keep(from: response, of: task.originalRequest)
        // Every redirect is declined: the 3xx is the task's answer, and the core follows it by its rules (a plain
        // exchange hands it over, ``TaskHandler/didComplete(data:response:error:)``).
        beforeAnsweringRedirect?(task)
        // On Linux only a task still running is answered (see `cancel(_:)`); a cancelled one ends as cancelled.
        redirectAnswerOrCancel.run {
            guard Self.mayAnswerRedirect(of: task) else { return }
            completionHandler(nil)
        }
    }
}

/// One plain exchange's task (``URLSessionTransport``'s completion-handler path, for a request without a body and
/// without transfer options): what its challenges decided, and the promise its completion handler completes.
///
/// What its challenges decide sits behind a lock (``TaskVerdict``): they arrive on the session's delegate queue, the
/// completion elsewhere.
final class TaskHandler: Sendable {
    /// The request reported in responses and errors.
    let request: URLRequest
    /// What the task's challenges decided.
    let verdict: TaskVerdict
    let promise: Promise<ConnectResponse>
    let deadline: TransportDeadline?
    /// The transport that hands a redirect over to the core. Held until the task ends or is cancelled: a transport
    /// released while its request is in flight still follows the request's redirects, and one released after
    /// cancelling its requests goes at once.
    private let transport: Protected<URLSessionTransport?>
    /// The call's observers, told of the redirects the core follows.
    let observation: CallObservation?

    init(
        request: URLRequest, promise: Promise<ConnectResponse>, deadline: TransportDeadline?,
        transport: URLSessionTransport?, observation: CallObservation? = nil
    ) {
        self.request = request
        self.observation = observation
        verdict = TaskVerdict(request: request)
        self.promise = promise
        self.deadline = deadline
        self.transport = Protected(transport)
    }

    /// Lets the transport go: the task was cancelled or timed out, and no redirect of it will be followed.
    func releaseTransport() {
        transport.withLock { $0 = nil }
    }

    /// Whether `response` has no body whatever its `Content-Length` says (RFC 9110, 6.4.1): the answer to a HEAD,
    /// or a 1xx, 204 or 304 status. Its `Content-Length` describes the resource, not bytes to come.
    static func hasNoBody(_ response: HTTPURLResponse, request: URLRequest) -> Bool {
        let status = response.statusCode
        return (100..<200).contains(status) || status == 204 || status == 304
            || request.httpMethod?.caseInsensitiveCompare("HEAD") == .orderedSame
    }

    /// The task ended, in URLSession's completion handler, with its whole body: completes the promise (unless
    /// cancelled or timed out first), or hands a redirect over to the core, which follows it.
    func didComplete(data: Data?, response: URLResponse?, error: (any Error)?) {
        if error == nil, let redirect = response as? HTTPURLResponse, (300..<400).contains(redirect.statusCode),
            verdict.failure == nil, let transport = transport.withLock({ $0 }),
            transport.follow(
                redirect, of: request, body: data ?? Data(), deadline: deadline, promise: promise,
                observation: observation)
        {
            return
        }
        deadline?.cancel()
        releaseTransport()
        let result: Result<ConnectResponse, any Error>
        if let failure = verdict.failure {
            result = .failure(failure)
        } else if let declined = verdict.declinedAnswer(to: error) {
            let answer = response as? HTTPURLResponse ?? declined
            result = .success(ConnectResponse(request: request, response: answer, data: data ?? Data()))
        } else {
            result = URLSessionTransport.result(for: request, data: data, response: response, error: error)
        }
        URLSessionTransport.complete(promise, with: result, bodySize: data?.count ?? 0)
    }
}

/// What a task's challenges decided before its completion, for either kind of handler: a failure the task must end
/// with (pins that did not match, a body libcurl would send again empty), or a declined 401 challenge, whose
/// cancellation is the answer (the 401), not a failure.
final class TaskVerdict: Sendable {
    private let state = Protected<(failure: ConnectError?, declined: HTTPURLResponse?)>((nil, nil))
    /// The request named in a pin mismatch.
    private let request: URLRequest

    init(request: URLRequest) {
        self.request = request
    }

    /// The server of `host` failed its pins: the cancellation that follows reports that.
    func rejectedPins(of host: String) {
        fail(ServerTrustPinning.mismatch(host: host, request: request))
    }

    /// The task is to end with `failure`, whatever its completion reports (unless it failed already).
    func fail(_ failure: ConnectError) {
        state.withLock { state in
            if state.failure == nil { state.failure = failure }
        }
    }

    /// The task's authentication challenge was declined: its 401 `response` is the answer.
    func declinedChallenge(of response: HTTPURLResponse) {
        state.withLock { $0.declined = response }
    }

    /// The failure decided, if any.
    var failure: ConnectError? { state.withLock { $0.failure } }

    /// The declined 401, when `error` is the cancellation that declining it caused.
    func declinedAnswer(to error: (any Error)?) -> HTTPURLResponse? {
        guard (error as? URLError)?.code == .cancelled else { return nil }
        return state.withLock { $0.declined }
    }
}
