import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The real transport: sends requests with `URLSession` (FoundationNetworking on Linux).
///
/// ```swift
/// let connect = Connect(transport: URLSessionTransport())  // what Connect() does
///
/// let configuration = URLSessionConfiguration.default
/// configuration.httpAdditionalHeaders = ["X-App": "demo"]
/// let custom = Connect(transport: URLSessionTransport(configuration: configuration))
/// ```
///
/// Each request's `timeoutInterval` (a connector's ``Connector/timeout``) bounds each exchange (one attempt, its
/// redirects included), from sending to the last byte of the response, on every platform: when it passes, the
/// task is cancelled and the future fails with ``ConnectError/Kind/timedOut``. So does the configuration's
/// `timeoutIntervalForResource` when it is shorter (FoundationNetworking ignores it: the transport enforces it).
///
/// It sends http and https URLs only: any other scheme (`file:`, `ftp:`, `data:`…) fails at once with
/// ``ConnectError/Kind/invalidRequest``, nothing sent, on every platform.
/// On Linux, a URL whose host is an IPv6 address literal (`http://[::1]:8080/`) fails the same way, nothing sent:
/// FoundationNetworking refuses it, and the error says so. Use a host name that resolves to the address.
///
/// A transport made from a configuration owns its session and is its delegate. It streams: uploads from
/// files without loading them, responses to files without holding them, size limits enforced as bytes
/// arrive, and progress reports. Its redirect rule keeps credentials home: `Authorization`,
/// `Proxy-Authorization`, `Cookie` and every other header named like a secret (`X-Api-Key`, `*-Token`…) are
/// removed when a redirect goes to another scheme, host or port; a redirect to anything but http or https, or to a
/// URL with a `user:password@` part of its own, is not followed (the 3xx response is the answer).
///
/// A redirect that keeps the method (307, 308, or 301/302 of a method other than POST) keeps the body too, on
/// every platform: on Linux, where FoundationNetworking cannot send a body again, the transport sends the request
/// again itself, from memory or from its file, within the same timeout and redirect limit
/// (20). A body from an `InputStream` cannot be read twice: there the 3xx response is the answer. The response
/// names the URL that answered; its ``ConnectResponse/request`` is the request sent first, as for the redirects
/// URLSession follows. A transport released meanwhile finishes the hop in flight but sends no other: its 3xx
/// response is the answer.
///
/// A session you pass in yourself keeps its own delegate and rules; transfers through it are done in memory
/// (see `Transport.send(_:transfer:)`).
public final class URLSessionTransport: Transport {
    /// The session that runs the requests.
    package let session: URLSession
    /// The session's delegate, when this transport owns the session.
    private let delegate: SessionDelegate?
    /// Where requests started while a response is being delivered are handed to URLSession (see
    /// ``CompletionContext``).
    let submissionQueue = DispatchQueue(label: "SwiftConnect.URLSessionTransport.submission")
    /// Plain requests started and not yet answered: with none, URLSession's work queue is idle and a request
    /// started from a delivery goes straight to it.
    private let plainInFlight = Protected(0)
    /// The session configuration's `timeoutIntervalForResource`, read once; `.infinity` when it sets none.
    private let resourceTimeout: TimeInterval
    /// The certificate pins (see ``init(configuration:pins:)``); the delegate checks them.
    let pins: CertificatePins
    /// How many times this transport has invalidated the short-lived session of a transfer (Linux), for tests:
    /// once per such session, whether it was stopped or ended (``IsolatedSessionInvalidation``).
    let isolatedSessionInvalidations = Protected(0)
    /// How many of those invalidations cancelled the session's task (a transfer stopped, not one that ended).
    let isolatedSessionCancellations = Protected(0)

    /// Creates a transport with its own session.
    ///
    /// - Parameter configuration: The session configuration. Defaults to ``defaultConfiguration``.
    public convenience init(configuration: URLSessionConfiguration = URLSessionTransport.defaultConfiguration) {
        self.init(configuration: configuration, pins: CertificatePins())
    }

    /// Creates a transport with its own session and certificate pins.
    ///
    /// On Apple platforms, pins are checked in the server-trust challenge, after the system has evaluated the
    /// chain: a chain without a pinned key fails with ``ConnectError/Kind/certificatePinning`` naming the host,
    /// before any byte of the request is sent. FoundationNetworking (Linux) has no server-trust challenge: there a
    /// request to a pinned host fails at once with that error, nothing sent, rather than going out unpinned (use
    /// `AsyncHTTPClientTransport` to pin on Linux). Over plain `http`, a pinned host is refused everywhere. Hosts
    /// without pins are sent as usual.
    ///
    /// - Parameters:
    ///   - configuration: The session configuration.
    ///   - pins: The certificate pins.
    public convenience init(configuration: URLSessionConfiguration, pins: CertificatePins) {
        let (configuration, cookies) = SessionCookies.takingOver(configuration)
        self.init(configuration: configuration, delegate: SessionDelegate(pins: pins, cookies: cookies), pins: pins)
    }

    /// Creates a transport with its own session and the given delegate (tests pass one with a hook).
    ///
    /// The session runs with `configuration` as it is: on Linux, give it one made by ``SessionCookies`` and the
    /// delegate the cookies to keep, as the public initializers do.
    init(configuration: URLSessionConfiguration, delegate: SessionDelegate, pins: CertificatePins = CertificatePins()) {
        self.pins = pins
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        self.delegate = delegate
        resourceTimeout = Self.resourceTimeout(of: configuration)
    }

    /// Creates a transport over an existing session, which the caller keeps ownership of.
    ///
    /// The session is used as it is. On Linux it therefore parses cookies with FoundationNetworking's parser, which
    /// stops the process on some `Set-Cookie` fields a hostile server can send (`😀=`); the transport's own sessions
    /// (``init(configuration:)``) do not. With a server you do not trust, prefer those, or give the session a
    /// configuration with `httpCookieAcceptPolicy = .never`.
    ///
    /// - Parameter session: The session, such as `URLSession.shared`.
    public init(session: URLSession) {
        pins = CertificatePins()
        self.session = session
        delegate = nil
        resourceTimeout = Self.resourceTimeout(of: session.configuration)
    }

    /// The longest a task may take by `configuration`, or `.infinity` when it sets no usable limit.
    private static func resourceTimeout(of configuration: URLSessionConfiguration) -> TimeInterval {
        let seconds = configuration.timeoutIntervalForResource
        return seconds > 0 && seconds.isFinite ? seconds : .infinity
    }

    /// The deadline of one exchange: the request's timeout, or the session's resource timeout if shorter.
    private func deadline(for request: URLRequest) -> TransportDeadline? {
        TransportDeadline(seconds: min(request.timeoutInterval, resourceTimeout))
    }

    deinit {
        if delegate != nil { session.finishTasksAndInvalidate() }
    }

    /// The configuration of a transport's own session: `URLSessionConfiguration.default` without `URLCache`.
    ///
    /// An API client gets its caching from ``Connect``'s response cache (``RequestOptions/cache``), where
    /// the app decides what is kept and for how long. `URLCache` would store and look up every response on
    /// top of that, a noticeable share of each small request's CPU time on Linux (see BENCHMARKS.md). Pass
    /// `.default` to keep it.
    public static var defaultConfiguration: URLSessionConfiguration {
        let configuration = URLSessionConfiguration.default
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        return configuration
    }

    /// Sends a request and collects its response in memory.
    public func send(_ request: URLRequest) -> Future<ConnectResponse> {
        send(request, transfer: TransferOptions())
    }

    /// Sends a request, streaming its body from a file and its response to a file as `transfer` asks.
    ///
    /// A request sent from a callback of another request (the next step of a `flatMap` chain) is handed to
    /// URLSession from the transport's own queue when other requests are in flight: creating a task waits for
    /// URLSession's internal queue, and waiting on the delegate queue would hold up every other response.
    /// Callbacks still run where they would; a request cancelled before its turn never starts.
    public func send(_ unprepared: URLRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
        if let refusal = ServerTrustPinning.refusal(of: unprepared, pins: pins) { return Future(error: refusal) }
        let request: URLRequest
        switch Self.prepared(unprepared) {
        case .success(let prepared): request = prepared
        case .failure(let error): return Future(error: error)
        }
        // A plain exchange takes URLSession's completion-handler path even on the transport's own session: it
        // skips the per-event hops to the delegate queue (response, each piece of data, completion), measured
        // at about two context switches per request on Linux. Redirects still go through the delegate's rule.
        if transfer.isPlain { return sendWithCompletionHandler(request) }
        guard CompletionContext.isDelivering else { return startTransfer(request, transfer: transfer) }
        let promise = Promise<ConnectResponse>()
        submissionQueue.async { [self] in
            guard !promise.future.isCompleted else { return }  // cancelled while waiting: never started
            let started = startTransfer(request, transfer: transfer)
            promise.setCancelHandler { started.cancel() }
            started.observe { promise.completeIfPending(with: $0) }
        }
        return promise.future
    }

    /// `request` as URLSession can take it, or why it cannot be sent.
    ///
    /// Only http and https URLs go out, on every platform: FoundationNetworking waits for the whole timeout on an
    /// `ftp:` URL and answers `data:` without HTTP, and Apple's URLSession reads `file:` URLs from the disk. A
    /// scheme in capitals (`HTTP://`), the same scheme by RFC 3986, is written in lower case, which
    /// FoundationNetworking requires. A plain http or https request is handed on as it is, without a copy.
    private static func prepared(_ request: URLRequest) -> Result<URLRequest, ConnectError> {
        guard let scheme = request.url?.scheme, scheme == "https" || scheme == "http" else {
            return withLowercaseHTTPScheme(request).map(withUsableTimeout)
        }
        return .success(withUsableTimeout(request))
    }

    /// `request` with its http or https scheme in lower case, or an ``ConnectError/Kind/invalidRequest`` error
    /// for any other scheme, or no URL.
    private static func withLowercaseHTTPScheme(_ request: URLRequest) -> Result<URLRequest, ConnectError> {
        let text = request.url?.absoluteString ?? ""
        let scheme = request.url?.scheme ?? ""
        let lowercased = scheme.lowercased()
        guard lowercased == "http" || lowercased == "https", text.hasPrefix(scheme),
            let url = URL(string: lowercased + text.dropFirst(scheme.count))
        else {
            var error = ConnectError.invalidRequest(.invalidURL(Redaction.urlText(text)), request: request)
            error.message =
                request.url == nil
                ? "the request has no URL"
                : "'\(Redaction.urlText(text))' is not an http or https URL: URLSessionTransport sends HTTP only"
            return .failure(error)
        }
        var request = request
        request.url = url
        return .success(request)
    }

    /// Starts a transfer at once, on the caller's thread.
    ///
    /// - Parameter chain: For a hop of a redirect the transport follows itself, the exchange it belongs to: its
    ///   deadline runs on, and its original request is the one reported.
    func startTransfer(
        _ sent: URLRequest, transfer: TransferOptions, chain: RedirectChain? = nil
    ) -> Future<ConnectResponse> {
        guard let delegate else { return sendInMemory(sent, transfer: transfer, using: self) }
        let request = chain?.original ?? sent
        if let destination = transfer.destination {
            do {
                try TransferOptions.checkDestination(destination, request: request)
            } catch {
                return Future(error: error)
            }
        }
        // A request that may have to stop mid-body runs, on Linux, on a short-lived session of its own, which is
        // invalidated to stop it (see ``needsSessionOfItsOwn(_:)``).
        let isolated = Self.needsSessionOfItsOwn(transfer)
        let taskDelegate =
            isolated
            ? SessionDelegate(
                pins: delegate.pins, cookies: delegate.cookies,
                beforeAnsweringRedirect: delegate.beforeAnsweringRedirect)
            : delegate
        let taskSession =
            isolated
            ? URLSession(configuration: session.configuration, delegate: taskDelegate, delegateQueue: nil) : session
        let task: URLSessionTask
        if let bodyFile = transfer.bodyFile {
            // A directory, device or pipe would make FoundationNetworking stop the process or wait forever.
            do { _ = try MultipartFormData.regularFileSize(bodyFile) } catch var error as ConnectError {
                if isolated { taskSession.invalidateAndCancel() }
                error.request = request
                return Future(error: error)
            } catch {
                if isolated { taskSession.invalidateAndCancel() }
                return Future(error: ConnectError.fileAccess(error, url: bodyFile, request: request))
            }
            guard FileManager.default.isReadableFile(atPath: bodyFile.path) else {
                if isolated { taskSession.invalidateAndCancel() }
                let error = CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: bodyFile.path])
                return Future(error: ConnectError.fileAccess(error, url: bodyFile, request: request))
            }
            var streamed = sent
            streamed.httpBody = nil
            task = taskSession.uploadTask(with: Self.forSession(streamed), fromFile: bodyFile)
        } else {
            task = taskSession.dataTask(with: Self.forSession(sent))
        }
        if chain != nil { task.taskDescription = RedirectChain.followUpMarker }
        let invalidation =
            isolated
            ? IsolatedSessionInvalidation(
                taskSession, counting: isolatedSessionInvalidations, cancellations: isolatedSessionCancellations)
            : nil
        let stop: @Sendable () -> Void = { [weak task, weak taskDelegate] in
            Self.cancel(task, through: taskDelegate)
            invalidation?.invalidate(cancellingTasks: true)
        }
        let promise = Promise<ConnectResponse>()
        let deadline = chain.map(\.deadline) ?? deadline(for: sent)
        // Where the session cannot send a body again, the transport follows such redirects itself.
        let redirects =
            RedirectRules.dropsBodyOnRedirect
            ? TaskHandler.Redirects(
                transport: self, hop: sent,
                hasBody: RedirectRules.hasBodyToSendAgain(sent, bodyFile: transfer.bodyFile), chain: chain)
            : nil
        let handler = TaskHandler(
            request: request, transfer: transfer, promise: promise, deadline: deadline, redirects: redirects,
            stop: stop)
        taskDelegate.register(handler, for: task)
        if let invalidation {
            // The session is let go when the transfer is over: for a streamed answer that is when its body ends,
            // not at its head. Were it let go at the head, a stop afterwards (the reader leaving, a full buffer)
            // could no longer invalidate it, the one way to stop libcurl on Linux.
            promise.future.observe { result in
                if case .success(let response) = result, let stream = response.bodyStream {
                    stream.whenEnded { invalidation.invalidate(cancellingTasks: false) }
                } else {
                    invalidation.invalidate(cancellingTasks: false)
                }
            }
        }
        return Self.run(
            task, promise: promise, deadline: deadline, request: request,
            discard: { handler.discardDownloadOnCancel() }, timeOut: handler.timeOut, stop: stop)
    }

    /// A plain exchange, with URLSession's completion handler: started at once, or from ``submissionQueue``
    /// when the caller is delivering another response (``CompletionContext``).
    private func sendWithCompletionHandler(_ request: URLRequest) -> Future<ConnectResponse> {
        let promise = Promise<ConnectResponse>()
        guard CompletionContext.isDelivering, plainInFlight.snapshot > 0 else {
            startDataTask(request, promise: promise)
            return promise.future
        }
        submissionQueue.async { [self] in
            guard !promise.future.isCompleted else { return }  // cancelled while waiting: never started
            startDataTask(request, promise: promise)
        }
        return promise.future
    }

    /// Whether this transport owns its session and its delegate, whose redirect rule it relies on.
    var ownsDelegate: Bool { delegate != nil }

    /// Creates and starts the data task that completes `promise`: URLSession's completion handler hands its
    /// outcome, body included, to the task's ``TaskHandler``, which challenges and redirects have reached through
    /// the delegate (the same handler a transfer has, fed at the end instead of piece by piece).
    ///
    /// - Parameter chain: For a hop of a redirect the transport follows itself, the exchange it belongs to: its
    ///   deadline runs on, and its original request is the one reported.
    func startDataTask(_ request: URLRequest, promise: Promise<ConnectResponse>, chain: RedirectChain? = nil) {
        let deadline = chain.map(\.deadline) ?? deadline(for: request)
        plainInFlight.withLock { $0 += 1 }
        let slot = Protected<(handler: TaskHandler, task: Int)?>(nil)
        let task = session.dataTask(with: Self.forSession(request)) {
            [plainInFlight, delegate] data, response, error in
            plainInFlight.withLock { $0 -= 1 }
            delegate?.cookies?.keep(from: response)
            guard let (handler, task) = slot.snapshot else { return }
            delegate?.unregister(task)
            handler.didComplete(data: data, response: response, error: error)
        }
        if chain != nil { task.taskDescription = RedirectChain.followUpMarker }
        // Where the session cannot send a body again, the transport follows such redirects itself. The transport
        // is held weakly there, as before: in-flight requests do not keep a released client alive.
        let redirects =
            RedirectRules.dropsBodyOnRedirect
            ? TaskHandler.Redirects(
                transport: self, hop: request, hasBody: RedirectRules.hasBodyToSendAgain(request), chain: chain)
            : nil
        let stop: @Sendable () -> Void = { [weak task, delegate] in Self.cancel(task, through: delegate) }
        let handler = TaskHandler(
            request: chain?.original ?? request, transfer: TransferOptions(), promise: promise, deadline: deadline,
            redirects: redirects, receivesWholeBody: true, stop: stop)
        slot.withLock { $0 = (handler, task.taskIdentifier) }
        delegate?.register(handler, for: task)
        _ = Self.run(
            task, promise: promise, deadline: deadline, request: handler.request, timeOut: handler.timeOut, stop: stop)
    }

    /// Cancels `task` through the transport's delegate, which keeps the cancellation apart from a redirect's
    /// answer (``SessionDelegate/cancel(_:)``); directly on a session the transport does not own.
    private static func cancel(_ task: URLSessionTask?, through delegate: SessionDelegate?) {
        guard let task else { return }
        if let delegate { delegate.cancel(task) } else { task.cancel() }
    }

    /// Responses with bodies at least this large complete on a concurrent queue rather than on the session's
    /// serial delegate queue, so that decoding them (milliseconds of CPU for 100 KiB of JSON) runs on every
    /// core instead of queuing behind each other. Smaller ones complete in place: a thread hop would cost more
    /// than their decoding.
    static let concurrentCompletionThreshold = 32 << 10

    /// Completes `promise` with `result`, called on the session's delegate queue: in place (marked as a
    /// ``CompletionContext`` delivery), or for large bodies on a concurrent queue.
    static func complete(
        _ promise: Promise<ConnectResponse>, with result: Result<ConnectResponse, any Error>, bodySize: Int
    ) {
        guard bodySize >= concurrentCompletionThreshold else {
            CompletionContext.deliver { promise.completeIfPending(with: result) }
            return
        }
        DispatchQueue.global().async { promise.completeIfPending(with: result) }
    }

    /// Points the promise's cancellation and the request's deadline at `stop`, then starts `task`.
    ///
    /// `discard`, if given, runs first on cancellation, before the future's callbacks: it drops what the transfer
    /// has kept (a partial download). `timeOut`, if given, handles the deadline instead of failing the future
    /// with ``ConnectError/Kind/timedOut`` at once: a transfer's handler decides between its deadline and its
    /// completion, so that the outcome reported and the file on disk agree (``TaskHandler/timeOut()``).
    private static func run(
        _ task: URLSessionTask,
        promise: Promise<ConnectResponse>,
        deadline: TransportDeadline?,
        request: URLRequest,
        discard: (@Sendable () -> Void)? = nil,
        timeOut: (@Sendable () -> Void)? = nil,
        stop: @escaping @Sendable () -> Void
    ) -> Future<ConnectResponse> {
        promise.setCancelHandler {
            deadline?.cancel()
            discard?()
            stop()
        }
        deadline?.start(
            timeOut ?? {
                let failure = ConnectError.transportFailure(.deadlinePassed(after: deadline?.seconds), request: request)
                promise.completeIfPending(with: .failure(failure))
                stop()
            })
        task.resume()
        return promise.future
    }

    /// Turns what `URLSession` reported into a response or a ``ConnectError``, on both paths (the completion
    /// handler's and ``TaskHandler``'s): errors are classified by ``ConnectError/transportFailure(_:request:)``.
    static func result(
        for request: URLRequest,
        data: Data?,
        response: URLResponse?,
        error: (any Error)?
    ) -> Result<ConnectResponse, any Error> {
        if let error { return .failure(ConnectError.transportFailure(.reported(error), request: request)) }
        guard let response = response as? HTTPURLResponse else {
            return .failure(ConnectError.transportFailure(.notHTTP, request: request))
        }
        if let failure = framingError(of: response, request: request) { return .failure(failure) }
        return .success(ConnectResponse(request: request, response: response, data: data ?? Data()))
    }
}
