import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The delegate of a ``URLSessionTransport``'s own session: routes each task's events to its handler and
/// answers redirects by ``RedirectRules``.
///
/// Every task of the transport has a ``TaskHandler``, registered before the task starts: a plain exchange's too,
/// whose body comes whole through URLSession's completion handler instead of piece by piece through this delegate.
/// Challenges, redirects and the outcome are therefore handled in one place for both.
final class SessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private let handlers = Protected<[Int: TaskHandler]>([:])
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

    /// Creates a delegate checking `pins`, keeping `cookies`; `beforeAnsweringRedirect` is for tests.
    init(
        pins: CertificatePins = CertificatePins(), cookies: SessionCookies? = nil,
        beforeAnsweringRedirect: (@Sendable (URLSessionTask) -> Void)? = nil
    ) {
        self.pins = pins
        self.cookies = cookies
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

    /// Routes the events of `task` to `handler`. Call before `task.resume()`.
    func register(_ handler: TaskHandler, for task: URLSessionTask) {
        handlers.withLock { $0[task.taskIdentifier] = handler }
    }

    /// Stops routing the events of the task `identifier` (a plain task, at its completion handler).
    func unregister(_ identifier: Int) {
        _ = handlers.withLock { $0.removeValue(forKey: identifier) }
    }

    func handler(for task: URLSessionTask) -> TaskHandler? {
        handlers.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        cookies?.keep(from: response)
        guard let handler = handler(for: dataTask) else { return completionHandler(.allow) }
        let proceed = handler.didReceive(response)
        completionHandler(proceed ? .allow : .cancel)
        if !proceed { handler.refuseBody() }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let handler = handler(for: dataTask) else { return }
        if !handler.didReceive(data) { handler.stop() }
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        handler(for: task)?.didSend(totalBytesSent, of: totalBytesExpectedToSend)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let handler = handlers.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        // A plain task ends in its completion handler, which has the body.
        guard let handler, !handler.receivesWholeBody else { return }
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
            handler(for: task)?.rejectedPins(of: host)
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
        handler(for: task)?.declinedChallenge(of: response)
        completionHandler(.cancelAuthenticationChallenge, nil)
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        cookies?.keep(from: response)
        let request = Self.withLocationAsSent(request, answering: response)
        var answer = RedirectRules.sessionAnswer(for: task, redirectedBy: response, to: request)
        // A redirect to a pinned host the transport cannot check there (plain http; any host on Linux) is not
        // followed: the task ends with the refusal instead of reaching that host unpinned.
        if let next = answer, let handler = handler(for: task),
            var refusal = ServerTrustPinning.refusal(of: next, pins: pins)
        {
            refusal.request = handler.request
            handler.fail(refusal)
            answer = nil
        }
        answer = answer.map { Self.withSessionCookies($0, of: session) }
        beforeAnsweringRedirect?(task)
        // On Linux only a task still running is answered (see `cancel(_:)`); a cancelled one ends as cancelled.
        redirectAnswerOrCancel.run {
            guard Self.mayAnswerRedirect(of: task) else { return }
            completionHandler(answer)
        }
    }
}

/// One task's state: where its body goes, how much has moved, and the promise to complete.
///
/// Events arrive on the session's serial delegate queue; the state sits behind a lock all the same, since
/// cancellation and the timeout come from other threads.
final class TaskHandler: Sendable {
    private struct State {
        var response: HTTPURLResponse?
        var data = Data()
        var file: FileHandle?
        var temporaryFile: URL?
        var bytesSent: Int64 = 0
        var bytesToSend: Int64?
        var bytesReceived: Int64 = 0
        var bytesToReceive: Int64?
        var failure: (any Error)?
        /// The last report given, so the final one is not repeated.
        var lastReported: TransferProgress?
        /// The 401 answer of a challenge that was declined (``SessionDelegate/declinesChallengesItCannotAnswer``):
        /// the cancellation that follows is that answer, not a failure.
        var declinedChallenge: HTTPURLResponse?
        /// The task's completion has taken the outcome (and the download it may move into place): a deadline
        /// coming after it changes neither the future nor the disk.
        var completing = false
        /// The caller cancelled after the completion took the outcome: the future says cancelled, so the
        /// download must not stay at its destination.
        var cancelledWhileCompleting = false
        /// The destination the completion moved the download to, for a cancellation that comes just after.
        var placed: URL?
        /// Where the body goes for a streamed request, once its head has been handed over
        /// (``TransferOptions/streaming``).
        var stream: ResponseBodyStream?
    }

    /// How a transport follows the redirects of a task that the session could not follow
    /// (``URLSessionTransport/followsRedirect(of:answeredBy:hasBody:chain:deadline:promise:send:)``).
    struct Redirects: Sendable {
        /// The transport that sends the next hop; held weakly, so that a transfer in flight does not keep a released
        /// client alive (then the 3xx response is the answer).
        weak var transport: URLSessionTransport?
        /// The request as the task sends it.
        let hop: URLRequest
        /// Whether the task sends a body the transport can send again (in memory or from a file).
        let hasBody: Bool
        /// The exchange, when the task is a hop the transport sent itself.
        let chain: RedirectChain?
    }

    /// The request reported in responses and errors: the caller's, also for a hop of a redirect.
    let request: URLRequest
    let transfer: TransferOptions
    let promise: Promise<ConnectResponse>
    let deadline: TransportDeadline?
    /// How the transport follows this task's redirects itself; `nil` when it does not.
    let redirects: Redirects?
    /// Whether the body comes whole at the end, through URLSession's completion handler (a plain exchange:
    /// ``didComplete(data:response:error:)``), rather than piece by piece through the delegate.
    let receivesWholeBody: Bool
    /// Stops the transfer for good (cancelling the task, and on Linux its own session).
    let stop: @Sendable () -> Void
    /// Puts a finished download in place (``TransferOptions/moveIntoPlace(_:to:)``; tests pass a gate).
    private let moveIntoPlace: @Sendable (URL, URL) throws -> Void
    private let state = Protected(State())

    init(
        request: URLRequest,
        transfer: TransferOptions,
        promise: Promise<ConnectResponse>,
        deadline: TransportDeadline?,
        moveIntoPlace: @escaping @Sendable (URL, URL) throws -> Void = TransferOptions.moveIntoPlace,
        redirects: Redirects? = nil,
        receivesWholeBody: Bool = false,
        stop: @escaping @Sendable () -> Void
    ) {
        self.receivesWholeBody = receivesWholeBody
        self.request = request
        self.transfer = transfer
        self.promise = promise
        self.deadline = deadline
        self.moveIntoPlace = moveIntoPlace
        self.redirects = redirects
        self.stop = stop
        if let body = (redirects?.hop ?? request).httpBody {
            state.withLock { $0.bytesToSend = Int64(body.count) }
        }
    }

    /// The task was told not to take the body of the response head it delivered: stops the transfer, then fails
    /// the future with the reason at once.
    ///
    /// `.cancel` for the head alone does not stop FoundationNetworking: libcurl goes on receiving the body, and
    /// the task's completion comes only when the body ends, however long the server takes. The transfer is
    /// stopped before the future fails, so a caller that learns of the failure sees a transfer already stopping.
    func refuseBody() {
        deadline?.cancel()
        _ = discardPartialDownload()
        stop()
        guard let failure = state.withLock({ $0.failure }) else { return }
        CompletionContext.deliver { promise.completeIfPending(with: .failure(failure)) }
    }

    /// The response head arrived. Returns `false` to cancel the task (declared size over the limit, or no
    /// file to write to), which ``refuseBody()`` then stops.
    func didReceive(_ response: URLResponse) -> Bool {
        guard let response = response as? HTTPURLResponse else { return true }
        let expected: Int64?
        if Self.hasNoBody(response, request: request) {
            expected = 0
        } else if response.expectedContentLength < 0 || Self.isContentEncoded(response) {
            expected = nil
        } else {
            expected = response.expectedContentLength
        }
        let isSuccess = (200..<300).contains(response.statusCode)
        let proceeds = state.withLock { state in
            guard state.failure == nil else { return false }  // given up already (cancelled, timed out)
            state.response = response
            state.bytesToReceive = expected
            if let limit = transfer.responseBodyLimit(statusCode: response.statusCode), let expected,
                expected > Int64(limit)
            {
                state.failure = ConnectError.responseTooLarge(limit: limit, request: request, response: response)
                return false
            }
            if isSuccess, let destination = transfer.destination {
                let temporary = TransferOptions.temporaryFile(besides: destination)
                do {
                    // Checked again, and created with throwing calls, so a failure says why (the folder was
                    // removed, a directory appeared, no permission…).
                    try TransferOptions.checkDestination(destination, request: request)
                    try Data().write(to: temporary, options: .withoutOverwriting)
                    state.temporaryFile = temporary
                    state.file = try FileHandle(forWritingTo: temporary)
                } catch {
                    if let temporary = state.temporaryFile { try? FileManager.default.removeItem(at: temporary) }
                    state.temporaryFile = nil
                    state.failure =
                        error as? ConnectError ?? ConnectError.fileAccess(error, url: destination, request: request)
                    return false
                }
            } else if let streaming = transfer.streaming, !(300..<400).contains(response.statusCode) {
                // The head is the answer now; the body follows in the stream. (A redirect stays whole: the
                // transport may follow it when the task completes.)
                let stream = ResponseBodyStream(options: streaming)
                stream.setCancelHandler(stop)
                state.stream = stream
            } else if let expected, expected > 0 {
                state.data.reserveCapacity(Int(min(expected, 16 << 20)))
            }
            return true
        }
        if proceeds, let stream = state.withLock({ $0.stream }) {
            var head = ConnectResponse(request: request, response: response, data: Data())
            head.bodyStream = stream
            promise.completeIfPending(with: .success(head))
        }
        return proceeds
    }

    /// Whether `response` has no body whatever its `Content-Length` says (RFC 9110, 6.4.1): the answer to a HEAD,
    /// or a 1xx, 204 or 304 status. Its `Content-Length` describes the resource, not bytes to come: it must
    /// neither trip the size limit nor be awaited by progress reports.
    static func hasNoBody(_ response: HTTPURLResponse, request: URLRequest) -> Bool {
        let status = response.statusCode
        return (100..<200).contains(status) || status == 204 || status == 304
            || request.httpMethod?.caseInsensitiveCompare("HEAD") == .orderedSame
    }

    /// Whether `response` declares a `Content-Encoding` (gzip, br…), which URLSession decodes: its `Content-Length`
    /// is the size of the encoded body, not of the bytes delivered, which the size limit and progress count.
    static func isContentEncoded(_ response: HTTPURLResponse) -> Bool {
        guard let encoding = response.value(forHTTPHeaderField: "Content-Encoding") else { return false }
        let trimmed = encoding.trimmingCharacters(in: .whitespaces)
        return !trimmed.isEmpty && trimmed.caseInsensitiveCompare("identity") != .orderedSame
    }

    /// A piece of the body arrived. Returns `false` to cancel the task (over the limit, or a write failed).
    func didReceive(_ data: Data) -> Bool {
        let progress: TransferProgress? = state.withLock { state in
            guard state.failure == nil else { return nil }
            state.bytesReceived += Int64(data.count)
            // A download's error body, not written to the file, is limited too.
            let limit = transfer.responseBodyLimit(statusCode: state.response?.statusCode ?? 200)
            if let limit, state.bytesReceived > Int64(limit) {
                state.failure = ConnectError.responseTooLarge(limit: limit, request: request, response: state.response)
                return nil
            }
            if state.stream != nil {
                // Handed to the stream below, outside the lock.
            } else if let file = state.file {
                do {
                    try Self.write(data, to: file)
                } catch {
                    let url = transfer.destination ?? FileManager.default.temporaryDirectory
                    state.failure = ConnectError.fileAccess(error, url: url, request: request)
                    return nil
                }
            } else {
                state.data.append(data)
            }
            guard transfer.progress != nil else { return nil }
            state.lastReported = Self.progress(of: state)
            return state.lastReported
        }
        if let progress { transfer.progress?(progress) }
        let (failure, stream) = state.withLock { ($0.failure, $0.stream) }
        if let stream {
            if let failure {
                // Stopped before anyone hears of it, as ``refuseBody()`` does: the end of the stream lets the
                // session go, after which only a stop made first can still stop the transfer on Linux.
                stop()
                stream.finish(throwing: failure)
                return false
            }
            return stream.offer(data)
        }
        guard let failure else { return true }
        // Fail at once: the task's own completion may come late (or, on Linux, only when the body ends). Stopped
        // first, for the same reason as above: the future's completion lets a session of its own go.
        deadline?.cancel()
        discardPartialDownload()
        stop()
        CompletionContext.deliver { promise.completeIfPending(with: .failure(failure)) }
        return false
    }

    /// Gives up the transfer before its completion (cancelled, timed out, over the limit): body bytes still
    /// arriving are dropped, and the partial download is removed now, not when the task's completion comes
    /// (late, on Linux), so no temporary file outlives the request's future.
    ///
    /// - Parameter failure: What the transfer failed with, unless it had failed already.
    /// - Returns: `false`, having done nothing, when the task's completion came first: it reports the outcome.
    @discardableResult
    func discardPartialDownload(failure: ConnectError = ConnectError.cancelled()) -> Bool {
        let taken = state.withLock { state -> (FileHandle?, URL?)? in
            guard !state.completing else { return nil }
            if state.failure == nil { state.failure = failure }
            let taken = (state.file, state.temporaryFile)
            state.file = nil
            state.temporaryFile = nil
            return taken
        }
        guard let (file, temporary) = taken else { return false }
        try? file?.close()
        if let temporary { try? FileManager.default.removeItem(at: temporary) }
        return true
    }

    /// The caller cancelled (the future already says so): the partial download is removed, and once the completion
    /// has taken the outcome, the file it moves into place is removed too, however the two interleave.
    func discardDownloadOnCancel() {
        if discardPartialDownload() { return }
        let placed = state.withLock { state -> URL? in
            state.cancelledWhileCompleting = true
            return state.placed
        }
        if let placed { try? FileManager.default.removeItem(at: placed) }
    }

    /// The request's deadline passed: the future fails with ``ConnectError/Kind/timedOut`` and the transfer stops.
    ///
    /// Deciding between the timeout and the task's completion happens under the state's lock, so the two
    /// always agree: a timeout that comes once the completion has taken the outcome does nothing (the
    /// completion reports it, and the file it moved into place is the one the future names); one that
    /// comes first removes the partial download and the completion then reports the failure, moving nothing.
    func timeOut() {
        let failure = ConnectError.transportFailure(.deadlinePassed(after: deadline?.seconds), request: request)
        guard discardPartialDownload(failure: failure) else { return }
        // Stopped first: the future's completion (or the stream's end) lets a session of its own go, after which
        // only a stop made first can still stop the transfer on Linux.
        stop()
        promise.completeIfPending(with: .failure(failure))
        state.withLock { $0.stream }?.finish(throwing: failure)
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
        state.withLock { $0.declinedChallenge = response }
    }

    /// Part of the body went out.
    func didSend(_ total: Int64, of expected: Int64) {
        guard transfer.progress != nil else { return }
        let progress: TransferProgress = state.withLock { state in
            state.bytesSent = total
            if expected > 0 { state.bytesToSend = expected }
            state.lastReported = Self.progress(of: state)
            return Self.progress(of: state)
        }
        transfer.progress?(progress)
    }

    /// A plain exchange's task ended, in URLSession's completion handler, with its whole body: completes the
    /// promise as ``didComplete(error:response:)`` does.
    func didComplete(data: Data?, response: URLResponse?, error: (any Error)?) {
        let response = response as? HTTPURLResponse
        state.withLock { state in
            if state.response == nil { state.response = response }
            if let data { state.data = data }
        }
        didComplete(error: error, response: response)
    }

    /// The task ended: completes the promise (unless cancelled or timed out first) and cleans up.
    ///
    /// - Parameters:
    ///   - error: The task's error, if it failed.
    ///   - response: The task's response. FoundationNetworking gives the delegate no response head for a redirect
    ///     status (301, 302, 303, 305…308) it did not follow, for want of a usable `Location`: that answer is this.
    func didComplete(error: (any Error)?, response: HTTPURLResponse? = nil) {
        deadline?.cancel()
        var (snapshot, file, temporary) = state.withLock { state -> (State, FileHandle?, URL?) in
            state.completing = true
            let taken = (state, state.file, state.temporaryFile)
            state.file = nil
            state.temporaryFile = nil
            state.data = Data()
            return taken
        }
        try? file?.close()
        if let stream = snapshot.stream {
            // The head went out as the answer; the stream gets the end of the body, or why it broke.
            let failure =
                snapshot.failure ?? error.map { ConnectError.transportFailure(.reported($0), request: request) }
            stream.finish(throwing: failure)
            return
        }
        if snapshot.response == nil { snapshot.response = response }
        let result = outcome(of: snapshot, error: error, temporary: temporary)
        if case .failure = result, let temporary { try? FileManager.default.removeItem(at: temporary) }
        if case .success(let answer) = result, RedirectRules.transportMayFollow(answer.response),
            followsRedirect(answer.response)
        {
            return
        }
        if case .success = result, transfer.progress != nil {
            var final = snapshot
            if final.bytesToSend != nil { final.bytesSent = final.bytesToSend ?? final.bytesSent }
            final.bytesToReceive = final.bytesToReceive ?? final.bytesReceived
            let report = Self.progress(of: final)
            if report != snapshot.lastReported { transfer.progress?(report) }
        }
        URLSessionTransport.complete(promise, with: result, bodySize: snapshot.data.count)
    }

    /// Sends the request again to where `response` redirects it, when the session could not follow it with the
    /// body (``URLSessionTransport/followsRedirect(of:answeredBy:hasBody:chain:deadline:promise:send:)``): the next
    /// hop runs as a transfer of its own, which completes this task's promise and which cancelling it cancels.
    /// Progress reports start again with the new hop.
    ///
    /// - Returns: Whether the redirect was taken over; `false` when `response` is the answer.
    private func followsRedirect(_ response: HTTPURLResponse) -> Bool {
        guard let redirects, let transport = redirects.transport else { return false }
        let (transfer, promise) = (transfer, promise)
        return transport.followsRedirect(
            of: redirects.hop, answeredBy: response, hasBody: redirects.hasBody, chain: redirects.chain,
            deadline: deadline, promise: promise
        ) { next, keepsBody, chain in
            if transfer.isPlain {
                transport.startDataTask(next, promise: promise, chain: chain)
                return
            }
            var options = transfer
            if !keepsBody { options.bodyFile = nil }
            let started = transport.startTransfer(next, transfer: options, chain: chain)
            promise.setCancelHandler { started.cancel() }
            started.observe { promise.completeIfPending(with: $0) }
        }
    }

    private func outcome(of state: State, error: (any Error)?, temporary: URL?) -> Result<ConnectResponse, any Error> {
        if let failure = state.failure { return .failure(failure) }
        if let declined = state.declinedChallenge, (error as? URLError)?.code == .cancelled {
            return .success(ConnectResponse(request: request, response: state.response ?? declined, data: state.data))
        }
        let checked = URLSessionTransport.result(for: request, data: state.data, response: state.response, error: error)
        guard case .success(let answer) = checked, let temporary, let destination = transfer.destination else {
            return checked
        }
        let response = answer.response
        // Cancelled by the caller meanwhile: the future says so, and no file may appear.
        guard !promise.future.isCompleted else { return .failure(ConnectError.cancelled(request: request)) }
        do {
            try TransferOptions.checkDestination(destination, request: request)
            try moveIntoPlace(temporary, destination)
        } catch {
            return .failure(
                error as? ConnectError ?? ConnectError.fileAccess(error, url: destination, request: request))
        }
        // Cancelled while it moved: the file goes (a cancellation after this removes it itself).
        let cancelled = self.state.withLock { state -> Bool in
            if !state.cancelledWhileCompleting { state.placed = destination }
            return state.cancelledWhileCompleting
        }
        if cancelled {
            try? FileManager.default.removeItem(at: destination)
            return .failure(ConnectError.cancelled(request: request))
        }
        var written = ConnectResponse(request: request, response: response, data: Data())
        written.fileURL = destination
        return .success(written)
    }

    private static func write(_ data: Data, to file: FileHandle) throws {
        if #available(macOS 10.15.4, iOS 13.4, tvOS 13.4, watchOS 6.2, *) {
            try file.write(contentsOf: data)
        } else {
            file.write(data)
        }
    }

    private static func progress(of state: State) -> TransferProgress {
        TransferProgress(
            bytesSent: state.bytesSent,
            totalBytesToSend: state.bytesToSend,
            bytesReceived: state.bytesReceived,
            totalBytesToReceive: state.bytesToReceive
        )
    }
}
