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
/// (see ``Transport/send(_:transfer:)``).
public final class URLSessionTransport: Transport {
    /// The session that runs the requests.
    public let session: URLSession
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
    /// How many times this transport has invalidated the short-lived session of a transfer (Linux), for tests:
    /// once per such session, whether it was stopped or ended (``IsolatedSessionInvalidation``).
    let isolatedSessionInvalidations = Protected(0)

    /// Creates a transport with its own session.
    ///
    /// - Parameter configuration: The session configuration. Defaults to ``defaultConfiguration``.
    public convenience init(configuration: URLSessionConfiguration = URLSessionTransport.defaultConfiguration) {
        self.init(configuration: configuration, delegate: SessionDelegate())
    }

    /// Creates a transport with its own session and the given delegate (tests pass one with a hook).
    init(configuration: URLSessionConfiguration, delegate: SessionDelegate) {
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        self.delegate = delegate
        resourceTimeout = Self.resourceTimeout(of: configuration)
    }

    /// Creates a transport over an existing session, which the caller keeps ownership of.
    ///
    /// - Parameter session: The session, such as `URLSession.shared`.
    public init(session: URLSession) {
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
    private func deadline(for request: URLRequest) -> Deadline? {
        Deadline(seconds: min(request.timeoutInterval, resourceTimeout))
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
            isolated ? SessionDelegate(beforeAnsweringRedirect: delegate.beforeAnsweringRedirect) : delegate
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
            isolated ? IsolatedSessionInvalidation(taskSession, counting: isolatedSessionInvalidations) : nil
        let stop: @Sendable () -> Void = { [weak task, weak taskDelegate] in
            Self.cancel(task, through: taskDelegate)
            invalidation?.invalidate(cancellingTasks: true)
        }
        let promise = Promise<ConnectResponse>()
        let deadline = chain.map(\.deadline) ?? deadline(for: sent)
        // Where the session cannot send a body again, the transport follows such redirects itself.
        let redirects =
            RedirectGuard.dropsBodyOnRedirect
            ? TaskHandler.Redirects(
                transport: self, hop: sent,
                hasBody: transfer.bodyFile != nil || !(sent.httpBody?.isEmpty ?? true), chain: chain)
            : nil
        let handler = TaskHandler(
            request: request, transfer: transfer, promise: promise, deadline: deadline, redirects: redirects,
            stop: stop)
        taskDelegate.register(handler, for: task)
        if let invalidation { promise.future.always { invalidation.invalidate(cancellingTasks: false) } }
        return Self.run(
            task, promise: promise, deadline: deadline, request: request,
            discard: { handler.discardPartialDownload() }, timeOut: handler.timeOut, stop: stop)
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

    /// Creates and starts the data task that completes `promise`.
    ///
    /// - Parameter chain: For a hop of a redirect the transport follows itself, the exchange it belongs to: its
    ///   deadline runs on, and its original request is the one reported.
    private func startDataTask(_ request: URLRequest, promise: Promise<ConnectResponse>, chain: RedirectChain? = nil) {
        let deadline = chain.map(\.deadline) ?? deadline(for: request)
        let reported = chain?.original ?? request
        plainInFlight.withLock { $0 += 1 }
        // The transport is held weakly, as before: in-flight requests do not keep a released client alive.
        let task = session.dataTask(with: Self.forSession(request)) {
            [weak self, plainInFlight, delegate] data, response, error in
            deadline?.cancel()
            plainInFlight.withLock { $0 -= 1 }
            // A 401 whose Basic challenge the delegate declined ends as a cancellation; its body is not kept.
            if let error, !promise.future.isCompleted,
                let declined = delegate?.takeDeclinedChallenge(endedBy: error)
            {
                Self.complete(
                    promise, with: .success(ConnectResponse(request: reported, response: declined, data: Data())),
                    bodySize: 0)
                return
            }
            // A redirect the session could not follow with the body (FoundationNetworking): sent again from here.
            if RedirectGuard.dropsBodyOnRedirect, error == nil, let http = response as? HTTPURLResponse,
                (300..<400).contains(http.statusCode), let self,
                self.followsRedirect(
                    of: request, answeredBy: http, hasBody: !(request.httpBody?.isEmpty ?? true), chain: chain,
                    deadline: deadline, promise: promise,
                    send: { next, _, chain in self.startDataTask(next, promise: promise, chain: chain) })
            {
                return
            }
            let result = Self.result(for: reported, data: data, response: response, error: error)
            Self.complete(promise, with: result, bodySize: data?.count ?? 0)
        }
        if chain != nil { task.taskDescription = RedirectChain.followUpMarker }
        _ = Self.run(task, promise: promise, deadline: deadline, request: reported) { [weak task, delegate] in
            Self.cancel(task, through: delegate)
        }
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
        deadline: Deadline?,
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

/// Removes credentials (every header ``HTTPHeader`` treats as sensitive: `Authorization`, `Cookie`,
/// `X-Api-Key`, `*-Token`…) from a redirected request that leaves the original origin or downgrades to http.
///
/// It follows only redirects to http and https URLs: FoundationNetworking takes a `Location` with another scheme
/// and no host (`file:///etc/passwd`, `data:…`, `mailto:…`) for a path on the same server and sends the request
/// there. Such a redirect is not followed on any platform: the 3xx response is the answer.
///
/// Nor is a redirect to a URL with a `user:password@` part that the original URL did not have, or to another
/// origin with any: libcurl would send those credentials as `Authorization: Basic`.
///
/// It also keeps a request body from being lost on a redirect. FoundationNetworking never sends the body again
/// after a redirect, yet keeps the method (307, 308, or 301/302 for methods other than POST) and every header,
/// `Content-Length` included: the server got the request with an empty body, or waited for the announced body
/// until the timeout. There the session does not follow such a redirect: ``URLSessionTransport`` sends the
/// request again itself, body included (``nextHop(after:answeredBy:hasBody:isFollowUp:)``, ``RedirectChain``),
/// by these same rules. A body it cannot read twice (an `httpBodyStream`) is not sent again: the 3xx response is
/// the answer, which the error handler reports. A redirect that turns the request into a GET drops the headers
/// that described the body.
enum RedirectGuard {
    /// The request to follow: `request`, without credentials when it changes scheme, host or port, and without
    /// the headers describing a body when `hadBody` and it became a GET or HEAD.
    static func redirect(_ request: URLRequest, from original: URLRequest?, hadBody: Bool = false) -> URLRequest {
        var redirected = request
        if hadBody, isBodyless(request) {
            for name in bodyHeaders { redirected.setValue(nil, forHTTPHeaderField: name) }
        }
        guard let from = original?.url, let to = request.url, !from.hasSameOrigin(as: to) else { return redirected }
        for name in request.allHTTPHeaderFields?.keys.map({ $0 }) ?? [] where HTTPHeader.isSensitive(name: name) {
            redirected.setValue(nil, forHTTPHeaderField: name)
        }
        return redirected
    }

    /// Whether following a redirect would send credentials that its `Location` names
    /// (`http://user:password@host/`) and the original request's URL did not: libcurl turns a URL's userinfo
    /// into `Authorization: Basic`, which replaced the request's own credentials, so the server that wrote the
    /// `Location` chose what was sent. The original URL's own userinfo, the caller's, may follow a redirect to the
    /// same origin only. The `Location` is read as well as the request to follow, as FoundationNetworking drops
    /// the userinfo of a `//user@host/` reference that Apple's URLSession keeps.
    static func bringsCredentialsOfItsOwn(
        _ response: HTTPURLResponse, to request: URLRequest, from original: URLRequest?
    ) -> Bool {
        let location = response.value(forHTTPHeaderField: "Location").flatMap { location in
            URL(string: location, relativeTo: response.url ?? original?.url)?.absoluteURL
        }
        return [request.url, location].contains { target in
            guard let target, target.user != nil || target.password != nil else { return false }
            guard let from = original?.url, from.hasSameOrigin(as: target) else { return true }
            return target.user != from.user || target.password != from.password
        }
    }

    /// What to add to the message of a 3xx `response` that came back as the answer: where it pointed (its
    /// `Location`, redacted) and why ``URLSessionTransport``'s rule did not follow it, when the rule explains it;
    /// empty without a `Location`. Built on the error path only. "Cannot send the request body again" is for a
    /// body the transport cannot send again itself either: one from an `InputStream`.
    static func notFollowed(_ response: ConnectResponse) -> String {
        let http = response.response
        guard let location = http.value(forHTTPHeaderField: "Location") else { return "" }
        let text = " to '\(SingleLineText.make(Redaction.urlText(location)))', not followed"
        if let scheme = scheme(of: location), !isHTTP(scheme) { return text + ": it leaves HTTP" }
        if bringsCredentialsOfItsOwn(http, to: response.request, from: response.request) {
            return text + ": its URL carries credentials (user:password@)"
        }
        if dropsBodyOnRedirect, hadBody(response.request), keepsMethod(response.request, status: response.statusCode) {
            return text + ": FoundationNetworking cannot send the request body again"
        }
        return text
    }

    /// Whether `request` went out with a body, by the body it holds or the headers announcing one.
    private static func hadBody(_ request: URLRequest) -> Bool {
        if let body = request.httpBody, !body.isEmpty { return true }
        if request.httpBodyStream != nil || request.value(forHTTPHeaderField: "Transfer-Encoding") != nil {
            return true
        }
        return Int(request.value(forHTTPHeaderField: "Content-Length") ?? "").map { $0 > 0 } ?? false
    }

    /// Whether a redirect with `status` keeps the method of `request` (and so would need its body again): 307 and
    /// 308 always, 301 and 302 for methods other than POST, never for GET or HEAD.
    private static func keepsMethod(_ request: URLRequest, status: Int) -> Bool {
        guard !isBodyless(request) else { return false }
        switch status {
        case 307, 308: return true
        case 301, 302: return request.httpMethod?.uppercased() != "POST"
        default: return false
        }
    }

    /// Whether a redirect leaves HTTP: its `Location` names a scheme other than http or https, or the request to
    /// follow has one. Both are looked at, since FoundationNetworking makes an http request of a `file:` location.
    static func leavesHTTP(_ response: HTTPURLResponse, to request: URLRequest) -> Bool {
        if let location = response.value(forHTTPHeaderField: "Location"), let scheme = scheme(of: location),
            !isHTTP(scheme)
        {
            return true
        }
        guard let scheme = request.url?.scheme else { return true }
        return !isHTTP(scheme)
    }

    private static func isHTTP(_ scheme: Substring) -> Bool {
        scheme.caseInsensitiveCompare("http") == .orderedSame || scheme.caseInsensitiveCompare("https") == .orderedSame
    }

    private static func isHTTP(_ scheme: String) -> Bool { isHTTP(Substring(scheme)) }

    /// The scheme of a URI reference, or `nil` for a relative reference (RFC 3986, 3.1 and 4.2: a scheme is a
    /// letter then letters, digits, `+`, `-` or `.`, before the first `:`, which comes before any `/`, `?` or `#`).
    static func scheme(of reference: String) -> Substring? {
        let trimmed = reference.drop { $0 == " " || $0 == "\t" }
        guard let colon = trimmed.firstIndex(of: ":") else { return nil }
        let candidate = trimmed[..<colon]
        guard let first = candidate.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else {
            return nil
        }
        let allowed = candidate.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII
                && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                    || "+-.".unicodeScalars.contains(scalar))
        }
        return allowed ? candidate : nil
    }

    /// The headers that describe a request body, meaningless once the redirect has none.
    static let bodyHeaders = ["Content-Length", "Content-Type", "Content-Encoding", "Transfer-Encoding"]

    /// The most redirects one request follows, as FoundationNetworking and Apple's URLSession allow: the hops the
    /// transport follows itself count with those the session follows.
    static let maxRedirects = 20

    /// The request ``URLSessionTransport`` sends for the redirect `response` of `hop`, which the session did not
    /// follow; `nil` when `response` is the answer.
    ///
    /// The first request of an exchange (`isFollowUp` false) is sent again only for a redirect that keeps its
    /// method (307, 308, or 301/302 for a method other than POST) when it has a body the transport can send again
    /// (`hasBody`: in memory or from a file, never a stream): the redirects the session declined to follow because
    /// it would lose the body. A request the transport sent itself (`isFollowUp`) has every redirect followed
    /// here (the session follows none of them, see ``SessionDelegate``), so that they all count against one limit:
    /// a 303, or a 301/302 of a POST, becomes a GET without the body and the headers that described it.
    ///
    /// The `Location` is resolved against the URL that answered. The same rules apply as to the redirects the
    /// session follows: none to a URL that is not http or https (``leavesHTTP(_:to:)``) or that carries
    /// credentials of its own (``bringsCredentialsOfItsOwn(_:to:from:)``), and credentials removed on a change of
    /// origin (``redirect(_:from:hadBody:)``).
    ///
    /// - Returns: The request to send and whether it keeps the body (a `bodyFile` is uploaded again only then).
    static func nextHop(
        after hop: URLRequest, answeredBy response: HTTPURLResponse, hasBody: Bool, isFollowUp: Bool
    ) -> (request: URLRequest, keepsBody: Bool)? {
        let status = response.statusCode
        guard status == 301 || status == 302 || status == 303 || status == 307 || status == 308,
            hop.httpBodyStream == nil
        else { return nil }
        let keepsMethod = keepsMethod(hop, status: status)
        guard isFollowUp || (hasBody && keepsMethod),
            let location = response.value(forHTTPHeaderField: "Location"),
            let url = URL(string: location, relativeTo: response.url ?? hop.url)?.absoluteURL
        else { return nil }
        var next = hop
        next.url = url
        let becomesGET = !keepsMethod && !isBodyless(hop)
        if becomesGET {
            next.httpMethod = "GET"
            next.httpBody = nil
        }
        guard !leavesHTTP(response, to: next), !bringsCredentialsOfItsOwn(response, to: next, from: hop) else {
            return nil
        }
        return (redirect(next, from: hop, hadBody: hasBody), hasBody && !becomesGET)
    }

    /// Whether the task's request had a body: in memory, a stream, or a file being uploaded.
    static func hasBody(_ original: URLRequest?, task: URLSessionTask) -> Bool {
        if let body = original?.httpBody, !body.isEmpty { return true }
        return original?.httpBodyStream != nil || task is URLSessionUploadTask || task.countOfBytesExpectedToSend > 0
    }

    /// Whether following `request`, the redirect of a request with a body, would send it without that body
    /// while keeping a method that carries one.
    static func wouldLoseBody(_ request: URLRequest) -> Bool {
        dropsBodyOnRedirect && !isBodyless(request)
    }

    /// Whether the request's method is GET or HEAD (also when none is set).
    private static func isBodyless(_ request: URLRequest) -> Bool {
        let method = request.httpMethod?.uppercased() ?? "GET"
        return method == "GET" || method == "HEAD"
    }
}
