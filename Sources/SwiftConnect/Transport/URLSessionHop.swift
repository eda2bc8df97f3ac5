import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `URLSession` as an ``HTTPEngine``: one task per hop on a ``URLSessionTransport``'s own session, every rule of the
/// exchange (redirects, deadline, size limits, downloads, progress, stream buffering) the core's
/// (`EngineExchange`). The session's delegate declines every redirect of such a task, so the 3xx is the hop's answer
/// and the core decides whether and where to go next.
///
/// What stays URLSession's own, and lives here or in ``SessionDelegate``: the server-trust challenge and certificate
/// pins, the 401 nobody can answer on Linux, the cookie storage, and stopping a transfer on Linux (a session of its
/// own per hop, invalidated to stop libcurl: ``URLSessionTransport/needsSessionOfItsOwn(_:)``).
struct URLSessionHopEngine: HTTPEngine {
    /// The transport whose session and delegate run the hops. Held for the exchange: its session is invalidated when
    /// the last exchange holding it ends.
    let transport: URLSessionTransport
    let delegate: SessionDelegate
    /// Whether each hop runs on a short-lived session of its own, invalidated to stop it (Linux).
    let isolated: Bool
    /// The most bytes a hop keeps waiting for the core: a streamed answer's ``StreamingOptions/bufferLimit``
    /// (URLSession cannot pause a transfer, so a reader that falls further behind fails the stream, as
    /// ``ResponseBodyStream/offer(_:)`` says); no limit when the core reads as bytes come (memory, a file).
    let bufferLimit: Int
    /// What the caller's `URLRequest` said beyond the core's model (`httpShouldHandleCookies = false`, cellular
    /// access…), given to every hop's.
    var extras = ConnectRequest.FoundationExtras()
    /// The caller's request's cache policy, given to every hop's: a connector's `.reloadIgnoringLocalCacheData`
    /// was lost on this path, and a session with a URL cache answered from it.
    var cachePolicy = URLRequest.CachePolicy.useProtocolCachePolicy

    /// URLSession decodes what it announces in `Accept-Encoding`, and fails a body it cannot decode itself. On Linux
    /// the decoding is libcurl's, always on (FoundationNetworking offers no way to turn it off), and a compressed
    /// stream that stops before its end is handed over decoded as far as it goes, as a whole body: the core never
    /// sees the compressed bytes to refuse it. Test: `TransportConformanceTests` (a known defect).
    ///
    /// libcurl also asks for and decodes `zstd` where it is built with it (Debian's and Ubuntu's are), and fails a
    /// body in a coding it was not built for (`CURLE_BAD_CONTENT_ENCODING`) rather than hand it over coded: the core,
    /// which does not decode zstd, refused such a body as "a coding nobody decodes" on this path only, where the plain
    /// path answered it. Test: `ResponseFramingTests.testAZstdBodyLibcurlAskedForIsAnsweredOnEveryPath`.
    var decodedContentCodings: Set<String> {
        #if canImport(FoundationNetworking)
            ["gzip", "x-gzip", "deflate", "br", "zstd"]
        #else
            ["gzip", "x-gzip", "deflate", "br"]
        #endif
    }

    func send(_ hop: EngineRequest) async throws -> EngineResponse<URLSessionHopBody> {
        try Task.checkCancellation()
        var request = try urlRequest(for: hop)
        // A one-shot stream is read from URLSession's own thread, a chunk at a time, as the connection takes it.
        let bodyReader: BlockingChunkReader?
        let failed = EarlyStop()
        if case .stream(let chunks, let length) = hop.body {
            // Counted while it is read: other tasks then start off their caller (Linux).
            let reader = BlockingChunkReader(chunks, claim: StreamedBodyClaim())
            bodyReader = reader
            request.httpBodyStream = RequestBodyChunks.inputStream(reader, onFailure: failed.request)
            // The length the core holds the stream to, as the field URLSession can send beside a stream (none on
            // Linux, where it goes chunked): whatever a caller's field said.
            request.setValue(
                URLSessionTransport.contentLengthField(forStreamOf: length), forHTTPHeaderField: "Content-Length")
        } else {
            bodyReader = nil
        }
        if case .file = hop.body {
            request.setValue(
                URLSessionTransport.connectionField(forBodyFileOf: request), forHTTPHeaderField: "Connection")
        }
        if var refusal = ServerTrustPinning.refusal(of: request, pins: delegate.pins) {
            refusal.request = nil  // the core names the request its caller sent
            throw refusal
        }
        let taskDelegate = isolated ? isolatedDelegate : delegate
        let session =
            isolated
            ? URLSession(configuration: transport.session.configuration, delegate: taskDelegate, delegateQueue: nil)
            : transport.session
        if isolated { transport.isolatedSessionsMade.withLock { $0 += 1 } }
        // Creating a task can wait for a request's body stream (Linux): then not on a thread of Swift's pool.
        let task: URLSessionTask = await transport.madeOffTheCaller { [request, body = hop.body] in
            if case .file(let url, _) = body { return session.uploadTask(with: request, fromFile: url) }
            return session.dataTask(with: request)
        }
        let invalidation =
            isolated
            ? IsolatedSessionInvalidation(
                session, counting: transport.isolatedSessionInvalidations,
                cancellations: transport.isolatedSessionCancellations)
            : nil
        let delegateQueue = session.delegateQueue
        let stop: @Sendable () -> Void = { [weak task, weak taskDelegate] in
            // A read of the body waiting for its next chunk holds the session's queue: it ends first.
            bodyReader?.cancel()
            // Counted now; the calls wait for libcurl's queue, which may be busy for seconds (Linux).
            let invalidate = invalidation?.claim(cancellingTasks: true)
            URLSessionTransport.stopOffTheCaller(sparing: delegateQueue) { [task, taskDelegate] in
                if let task { taskDelegate?.cancel(task) }
                invalidate?()
            }
        }
        failed.arm(with: stop)
        let body = ResponseBodyStream(options: StreamingOptions(bufferLimit: bufferLimit))
        body.setCancelHandler(stop)
        // The session is let go when the hop is over: when its body ends, however it ends.
        if let invalidation { body.whenEnded { invalidation.invalidate(cancellingTasks: false) } }
        let handler = HopHandler(request: request, body: body, sent: hop.sent, bodyReader: bodyReader)
        taskDelegate.register(handler, for: task)
        // On Linux a body file that shrinks while it is sent fails the hop at once, not at its deadline. The task is
        // not cancelled: FoundationNetworking may still be reading the file, and a cancellation then can stop the
        // process (RELIABILITY.md). It ends on its own: the server's answer, or its timeout.
        if case .file(let url, let length) = hop.body,
            let watch = BodyFileShrinkWatch(
                url, length: length,
                shrank: { [weak handler] error in handler?.bodyFileShrank(error, length: length) })
        {
            body.whenEnded { watch.cancel() }
        }
        return try await withTaskCancellationHandler {
            let head = try await withCheckedThrowingContinuation { continuation in
                handler.waitForHead(continuation)
                // Not once the hop was abandoned while the task waited for its turn (the exchange's deadline, which
                // counts from the caller's send, or a cancellation): its stop has cancelled the task already.
                transport.startOffTheCaller { if !handler.wasAbandoned { task.resume() } }
            }
            return EngineResponse(head: ResponseHead(head), body: URLSessionHopBody(stream: body))
        } onCancel: {
            // The head may never come from a task stopped before it ran: the wait ends here, whatever comes.
            handler.abandon()
            body.cancel()
            stop()
        }
    }

    /// A delegate like the transport's, for a session of the hop's own.
    private var isolatedDelegate: SessionDelegate {
        SessionDelegate(
            pins: delegate.pins, cookies: delegate.cookies, redirectCookies: delegate.redirectCookies,
            beforeAnsweringRedirect: delegate.beforeAnsweringRedirect)
    }

    /// `hop` as URLSession takes it: the head's URL, method and fields (repeated fields joined, Foundation's way),
    /// a body in memory (a file goes with the upload task), and a timeout no earlier than the core's deadline.
    private func urlRequest(for hop: EngineRequest) throws -> URLRequest {
        guard let url = hop.head.url else {
            throw ConnectError.invalidRequest(.invalidURL("\(hop.head.scheme)://\(hop.head.authority)"))
        }
        var request = URLRequest(url: url, cachePolicy: cachePolicy)
        request.httpMethod = hop.head.method.rawValue
        // One assignment: FoundationNetworking copies the whole dictionary on every `setValue`/`addValue`.
        if !hop.head.headerFields.isEmpty { request.allHTTPHeaderFields = hop.head.headerFields.foundationFields }
        if case .bytes(let data) = hop.body { request.httpBody = data }
        // The core's deadline ends the exchange; URLSession's own timer must not come first (it counts idle time).
        request.timeoutInterval = hop.deadline?.secondsLeft ?? URLSessionTransport.longestTimeout
        extras.apply(to: &request)
        // On Linux the transport sends the session's cookies itself (``SessionCookies``).
        if let cookies = delegate.cookies { request = cookies.adding(to: request) }
        return URLSessionTransport.withUsableTimeout(URLSessionTransport.forSession(request))
    }
}

/// The body of one hop over URLSession: the pieces the session's delegate offered, read by the core. Letting it go
/// before its end (the core refused the head, a size limit, a failure), or cancelling the reading task, stops the
/// hop's task.
struct URLSessionHopBody: AsyncSequence, Sendable {
    typealias Element = Data

    fileprivate let owner: Owner

    init(stream: ResponseBodyStream) { owner = Owner(stream: stream) }

    func makeAsyncIterator() -> Iterator { Iterator(owner: owner) }

    struct Iterator: AsyncIteratorProtocol {
        fileprivate let owner: Owner

        mutating func next() async throws -> Data? { try await owner.stream.next() }
    }

    /// Stops the hop when the last copy of the body, or of its iterator, goes (nothing once the body has ended).
    fileprivate final class Owner: Sendable {
        let stream: ResponseBodyStream

        init(stream: ResponseBodyStream) { self.stream = stream }

        deinit { stream.cancel() }
    }
}

/// The events of one hop's task, from the session's delegate: the head to the engine's `send`, the body to the hop's
/// stream, the progress of an upload to the core.
final class HopHandler: Sendable {
    private struct State {
        var head: CheckedContinuation<HTTPURLResponse, any Error>?
        /// The answer given before `send` began to wait for it.
        var early: Result<HTTPURLResponse, any Error>?
        /// The head was handed over (or the hop failed before one).
        var answered = false
        /// The body bytes handed to the connection so far.
        var sent: Int64 = 0
        /// The engine's `send` was cancelled (``abandon()``).
        var abandoned = false
    }

    /// The hop as sent, for errors.
    let request: URLRequest
    /// What the task's challenges decided.
    let verdict: TaskVerdict
    let body: ResponseBodyStream
    private let sent: @Sendable (Int64) -> Void
    /// What reads a one-shot request body for the task: its failure is the hop's.
    private let bodyReader: BlockingChunkReader?
    private let state = Protected(State())

    init(
        request: URLRequest, body: ResponseBodyStream, sent: @escaping @Sendable (Int64) -> Void,
        bodyReader: BlockingChunkReader? = nil
    ) {
        self.request = request
        verdict = TaskVerdict(request: request)
        self.body = body
        self.sent = sent
        self.bodyReader = bodyReader
    }

    /// Waits for the head with `continuation`: resumed at once if the hop was answered already (abandoned).
    func waitForHead(_ continuation: CheckedContinuation<HTTPURLResponse, any Error>) {
        let early = state.withLock { state -> Result<HTTPURLResponse, any Error>? in
            guard let early = state.early else {
                state.head = continuation
                return nil
            }
            state.early = nil
            return early
        }
        if let early { continuation.resume(with: early) }
    }

    /// The head arrived: handed to the engine's `send`, unless its framing cannot be read. Returns whether the body
    /// is wanted.
    ///
    /// An informational head (1xx) is not the answer, and is passed over: FoundationNetworking hands a `100 Continue`
    /// or a `103 Early Hints` to the delegate as if it were the response, then the final head's body (the
    /// completion names the final head). Test: `OddServerTests.testAnInformationalAnswerBeforeTheFinalOneIsSkipped`.
    /// A `101 Switching Protocols` is no interim answer: the framing check refuses it
    /// (``ConnectError/unusableHead(_:request:head:)``).
    func didReceive(_ response: URLResponse) -> Bool {
        guard let response = response as? HTTPURLResponse else {
            answer(.failure(ConnectError.transportFailure(.notHTTP, request: request)))
            return false
        }
        if (100..<200).contains(response.statusCode), response.statusCode != 101 { return true }
        if let failure = URLSessionTransport.framingError(of: response, request: request) {
            answer(.failure(failure))
            return false
        }
        answer(.success(response))
        return true
    }

    /// A piece of the body: `false` stops the task (nobody reads any more, or the buffer is full).
    func didReceive(_ data: Data) -> Bool {
        body.offer(data)
    }

    func didSend(_ total: Int64) {
        let delta = state.withLock { state -> Int64 in
            defer { state.sent = max(state.sent, total) }
            return max(0, total - state.sent)
        }
        if delta > 0 { sent(delta) }
    }

    /// The task ended. Before a head: the hop's answer is the head the completion names (a 401 declined, a redirect
    /// FoundationNetworking delivered no head for) or the failure. After: the body ends, or breaks with the error.
    func didComplete(error: (any Error)?, response: HTTPURLResponse?) {
        // A body whose source failed stopped the task: the source's error says why, not the task's.
        let failure: (any Error)? = verdict.failure ?? (error == nil ? nil : bodyReader?.failure)
        let declined = verdict.declinedAnswer(to: error)
        if !state.withLock({ $0.answered }) {
            if let failure {
                answer(.failure(failure))
            } else if let declined {
                answer(.success(response ?? declined))
            } else if let error {
                answer(.failure(error))
            } else if let response {
                answer(.success(response))
            } else {
                answer(.failure(ConnectError.transportFailure(.notHTTP, request: request)))
            }
        }
        // A declined challenge's cancellation ends the 401's body, which came before it.
        body.finish(throwing: failure ?? (declined == nil ? error : nil))
    }

    /// The body file holds fewer bytes than the `length` announced (``BodyFileShrinkWatch``): the hop fails with
    /// `error` now, unless the answer's head came first or every byte went out already. Its task is left to end on its
    /// own; its end, when it comes, is no news.
    func bodyFileShrank(_ error: ConnectError, length: Int64) {
        let fails = state.withLock { !$0.answered && $0.sent < length }
        if fails { answer(.failure(error)) }
    }

    /// The engine's `send` was cancelled: it stops waiting for the head.
    func abandon() {
        state.withLock { $0.abandoned = true }
        answer(.failure(CancellationError()))
    }

    /// Whether the engine's `send` was cancelled: a task not resumed yet never is.
    var wasAbandoned: Bool { state.withLock { $0.abandoned } }

    /// Resumes the engine's `send` once.
    private func answer(_ result: Result<HTTPURLResponse, any Error>) {
        let head = state.withLock { state -> CheckedContinuation<HTTPURLResponse, any Error>? in
            guard !state.answered else { return nil }
            state.answered = true
            guard let head = state.head else {
                state.early = result  // before the wait began: it takes this at once
                return nil
            }
            state.head = nil
            return head
        }
        head?.resume(with: result)
        if case .failure(let error) = result { body.finish(throwing: error) }
    }
}

/// A stop asked for before there is anything to stop: on Apple platforms the streamed body's writer thread starts
/// when the body stream is made, before the hop has made its task, and a chunk that fails at once asks for the stop
/// then. Without the latch the request went unheard, and the task, made later, waited for a body that would never
/// end, until its deadline. The stop runs when it is both asked for and armed, in whichever order they come.
final class EarlyStop: Sendable {
    /// The stop once armed, and whether it was asked for.
    private let state = Protected<(stop: (@Sendable () -> Void)?, requested: Bool)>((nil, false))

    /// Asks for the stop: runs it now if armed, else when it is.
    @Sendable func request() {
        let stop = state.withLock { state -> (@Sendable () -> Void)? in
            state.requested = true
            return state.stop
        }
        stop?()
    }

    /// Gives the stop to run; runs it at once when it was asked for already.
    func arm(with stop: @escaping @Sendable () -> Void) {
        let asked = state.withLock { state -> Bool in
            state.stop = stop
            return state.requested
        }
        if asked { stop() }
    }
}
