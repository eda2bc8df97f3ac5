import Dispatch
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One request over an ``HTTPEngine``, from the first hop to the response: the core's rules of an exchange,
/// written once for every engine that moves bytes. It checks the request, follows redirects by
/// ``RedirectRules`` (credentials never cross origins, a redirect's cookies go on), bounds the whole exchange by
/// the request's `timeoutInterval`, decodes a gzip or deflate body the engine hands over as sent (and refuses one in
/// a coding neither decodes), applies the size limit as bytes arrive, writes a download to its file, reports
/// progress, hands a streamed body over with back-pressure, and classifies every failure once. It runs in a task of
/// its own, which cancelling the future cancels: that is how the engine is told to stop.
struct EngineExchange<Engine: HTTPEngine>: Sendable {
    let engine: Engine
    /// The request as the client handed it over: what the response reports as its request.
    let original: ConnectRequest
    let transfer: TransferOptions
    /// The whole exchange's deadline, redirects and the body included.
    private let timer: TransportDeadline?
    /// The exchange's idle timeout (``TransferOptions/idleTimeout``), for an answer read whole: a streamed one has
    /// the stream's own, which the client applies.
    private let idle: IdleWatch?
    /// The exchange's task, whether `timer` or `idle` fired (the task was cancelled for it, and the exchange reports
    /// a timeout), the body stream of a streamed answer once its head came, which `timer` ends if the reader is
    /// behind, and whether the caller may still be running the task (`starting`: it began on the caller's thread and
    /// the call that starts it has not returned yet). One box: each lock is an allocation on every request's path.
    private let state = Protected<
        (task: Task<Void, Never>?, expired: ExchangeExpiry?, stream: ResponseBodyStream?, starting: Bool)
    >((nil, nil, nil, true))
    /// The download file being written, so that a cancellation removes it before anyone hears of it; only for a
    /// download.
    private let download: DownloadSlot?
    /// The exchange's progress reports, if the caller asked for them; closed when the deadline or a cancellation
    /// ends the call, before the caller hears of it.
    private let progress: ExchangeProgress?
    /// Ends the reading of a one-shot body's async sequence once the exchange is over, so that its producer hears of
    /// it whatever the engine is doing (``SequenceReader``); only for such a body, as it costs a lock.
    private let bodyStop: ReadingStop?

    /// What the redirects' cookies that go on to the next hops start from (``RedirectCookies``): none kept when
    /// the transport's cookies are off (a `URLSessionTransport` configured without them), and none that would
    /// replace a `Secure` cookie of its storage.
    private let redirectCookies: RedirectCookies

    init(
        engine: Engine, request: ConnectRequest, transfer: TransferOptions,
        redirectCookies: RedirectCookies = RedirectCookies()
    ) {
        self.redirectCookies = redirectCookies
        self.engine = engine
        original = request
        self.transfer = transfer
        // A streamed body outlives its call's future (which ends with the head): held to the call's deadline too.
        timer = TransportDeadline(
            seconds: request.timeoutInterval, notAfter: transfer.streaming == nil ? nil : transfer.callDeadline)
        idle = transfer.streaming == nil ? IdleWatch(seconds: transfer.idleTimeout) : nil
        download = transfer.destination == nil ? nil : DownloadSlot()
        progress = transfer.progress.map { ExchangeProgress(report: $0) }
        if case .stream = request.body { bodyStop = ReadingStop() } else { bodyStop = nil }
    }

    /// `Accept-Encoding`, which the core sets for an engine that does not decode gzip itself.
    private static var acceptEncoding: HeaderField.Name { HeaderField.Name("Accept-Encoding") }

    /// The engine's name, for messages.
    private var engineName: String { String(describing: Engine.self) }

    /// Checks the request, starts the exchange and returns its future.
    ///
    /// - Parameter first: The answer to the first hop, when the engine already has it (URLSession's plain path
    ///   hands over a redirect it declined): the exchange goes on from there, sending nothing for that hop.
    func start(after first: EngineResponse<Engine.ResponseBody>? = nil) -> Future<ConnectResponse> {
        if let refusal = refusal() { return Future(error: refusal) }
        let promise = Promise<ConnectResponse>()
        // Armed before the task starts: a task that ends at once disarms it for good.
        timer?.start { [self] in expire(.deadline, promise: promise) }
        idle?.start { [self] headCame in expire(.idle(headCame: headCame), promise: promise) }
        let work: @Sendable () async -> Void = { [self] in
            let result: Result<ConnectResponse, any Error>
            do {
                result = .success(try await run(promise: promise, first: first))
            } catch {
                result = .failure(classified(error))
            }
            timer?.cancel()
            idle?.stop()
            // Nothing more of a one-shot body is sent: its producer is told, even if the engine never was inside its
            // `next()` when it stopped.
            bodyStop?.stop()
            Self.complete(promise, with: result)
        }
        // Started on the caller's thread, up to its first wait (the engine's answer): the engine has the request
        // without a thread woken for it, and nothing the caller holds is waited on, since nobody has the future yet.
        // Where `Task.immediate` is missing (Apple systems before 26), a task as before.
        let task: Task<Void, Never>
        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
            task = Task.immediate { await work() }
        } else {
            task = Task { await work() }
        }
        // The deadline may have passed before the task was there to cancel.
        let expired = state.withLock { state in
            state.task = task
            state.starting = false
            return state.expired != nil
        }
        if expired { task.cancel() }
        promise.setCancelHandler { [download, progress, bodyStop, idle, resumption = transfer.resumption] in
            // First: a download that fails as it is cancelled keeps no part nobody would hear of, unless its call can
            // take it (``DownloadResumption``): a retry after an attempt's timeout resumes from it, the call's deadline
            // hands it over, and a cancellation of the call removes it there.
            if let resumption, let part = download?.salvage() {
                resumption.advance(to: part)
            } else {
                download?.discard()
            }
            task.cancel()
            idle?.stop()
            bodyStop?.stop()
            progress?.close()
        }
        return promise.future
    }

    /// Ends the exchange because `expiry` passed (the deadline, the idle timeout): its task is cancelled, which stops
    /// the engine, and the caller hears of the timeout at once.
    private func expire(_ expiry: ExchangeExpiry, promise: Promise<ConnectResponse>) {
        let (stream, task) = state.withLock { state in
            if state.expired == nil { state.expired = expiry }
            return (state.stream, state.task)
        }
        // A streamed body's reader hears of it even when the pump waits for the reader (back-pressure).
        stream?.finish(throwing: classified(CancellationError()))
        task?.cancel()
        idle?.stop()
        timer?.cancel()
        bodyStop?.stop()
        // A part the engine had already handed over is not reported once the caller has heard the end.
        progress?.close()
        // The caller hears of it now, not once the engine has stopped: an engine that does not heed cancellation
        // (one of a user's) would keep the future pending past the deadline. A download's partial file goes, or is
        // kept for a resume (``PartialDownload``): a stalled download's idle timeout is the case it is kept for.
        var failure = classified(CancellationError())
        failure.partialDownload = download?.salvage()
        promise.completeIfPending(with: .failure(failure))
    }

    /// Why the request cannot be sent at all, or `nil`: checked before any hop, the same for every engine.
    private func refusal() -> ConnectError? {
        guard let scheme = original.url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            original.url.host?.isEmpty == false
        else {
            var error = ConnectError.invalidRequest(
                .invalidURL(Redaction.urlText(original.url.absoluteString)), sent: original)
            error.message =
                "'\(Redaction.url(original.url, redacting: true))' is not an http or https URL with a host: "
                + "\(engineName) sends HTTP only"
            return error
        }
        if let destination = transfer.destination {
            do {
                try TransferOptions.checkDestination(destination, stored: .sent(original))
            } catch {
                return error as? ConnectError
            }
        }
        if let bodyFile = transfer.bodyFile, let error = Self.unusableBodyFile(bodyFile, request: .sent(original)) {
            return error
        }
        return transfer.negativeLimit(sent: original)
    }

    /// Sends each hop until a response that is the answer. For a streamed request, `promise` gets the answer's
    /// head as soon as it arrives, and the exchange's task is what the stream's reader cancels.
    ///
    /// - Parameter handedOver: The first hop's answer and the exchange's progress, when a task of the exchange's own
    ///   goes on from there (see `leavesCaller` below): the hop was prepared and sent already.
    private func run(
        promise: Promise<ConnectResponse>, first: EngineResponse<Engine.ResponseBody>?,
        handedOver: (response: EngineResponse<Engine.ResponseBody>, progress: ExchangeProgress?)? = nil
    ) async throws -> ConnectResponse {
        var answered = first
        var hop = original
        var bodyFile = transfer.bodyFile
        var redirects = 0
        // The URLs the hops so far went to, the last excepted (`hop`): a redirect past the limit names a loop.
        var visited: [URL] = []
        // Whether a hop went to another origin: the credentials were dropped there and do not come back.
        var leftOrigin = false
        let maxRedirects = transfer.maxRedirects ?? RedirectRule.maxHops
        // The cookies the redirects set, each hop getting those that apply to it (`hop` keeps its own header).
        var cookies = redirectCookies
        let progress = handedOver.map(\.progress) ?? self.progress
        var resumed = handedOver?.response
        var leavesCaller = handedOver == nil
        while true {
            try Task.checkCancellation()
            let response: EngineResponse<Engine.ResponseBody>
            if let handed = resumed {
                response = handed
                resumed = nil
            } else {
                var request = try engineRequest(for: cookies.applied(to: hop), bodyFile: bodyFile, progress: progress)
                request.streamBufferLimit = transfer.streaming?.bufferLimit
                progress?.startHop(sending: request.body.length, redirected: redirects > 0)
                // A hop that goes after a redirect starts the wait for its head afresh.
                idle?.hopStarted()
                if let first = answered {
                    response = first
                    answered = nil
                } else {
                    response = try await engine.send(request)
                }
                if leavesCaller {
                    leavesCaller = false
                    // The exchange starts on the caller's thread (`start`). An answer there at once (a fast server, a
                    // buffered body, the URLSession plain path's `first`) meets no wait that suspends, and that thread
                    // would run the rest: the body's collection and the progress handler, which must run on a thread
                    // of the transport's (a caller holding a lock the handler takes would deadlock; the main thread
                    // would report). A task of the exchange's own goes on from here. A yield would not do: a task
                    // that resumes before it has suspended goes on where it is.
                    if state.withLock({ $0.starting }) {
                        let rest = Task { [self] in
                            try await run(promise: promise, first: nil, handedOver: (response, progress))
                        }
                        return try await withTaskCancellationHandler {
                            try await rest.value
                        } onCancel: {
                            rest.cancel()
                        }
                    }
                }
            }
            idle?.headCame()
            guard
                var head = ConnectResponse(
                    request: original, head: response.head, url: hop.url, httpVersion: response.httpVersion)
            else {
                throw ConnectError.notAnHTTPStatus(response.head.status, request: .sent(original))
            }
            // A head no engine's answer may have (two framings of one body, an unasked 101…): refused whatever the
            // engine's parser made of it.
            if let error = ConnectError.unusableHead(
                HeadFields(response.head, httpVersion: response.httpVersion), request: .sent(original),
                head: head.storedHead)
            {
                throw error
            }
            // With no redirect to follow (`maxRedirects` 0), a redirect is the answer.
            if (300..<400).contains(head.statusCode), maxRedirects > 0,
                let next = RedirectRule.next(after: hop, answeredBy: head, bodyFile: bodyFile, cookies: &cookies)
            {
                redirects += 1
                guard redirects <= maxRedirects else {
                    throw ConnectError(
                        .transport,
                        message: "the server redirected more than \(maxRedirects) times"
                            + RedirectRule.loop(through: visited + [hop.url], next: next.request.url),
                        request: .sent(original),
                        head: head.storedHead,
                        underlyingError: URLError(.httpTooManyRedirects)
                    )
                }
                visited.append(hop.url)
                // The body of a redirect is not the answer. A short one of declared length is read to its end, so
                // that the connection can serve the next hop; any other (chunked, long, or never ending: it would
                // hold the exchange until its deadline, for ever without one) is let go unread, and the engine stops
                // it with its connection. A failure to read it only costs that connection: AsyncHTTPClient's
                // delegate API reports `requestStreamCancelled` for a redirect answered before the upload's end,
                // which must not fail the exchange. A cancellation (the deadline, the caller) is seen at the top of
                // the loop.
                // Read to the engine's end, not to the last byte: a body let go before the engine saw its end is one
                // it stops, with its connection (AsyncHTTPClient cancels a request whose body was dropped).
                if let declared = Self.declaredLength(of: head, request: hop), declared <= Self.redirectBodyReadLimit {
                    var read: Int64 = 0
                    do {
                        for try await part in response.body {
                            idle?.touch()
                            read += Int64(part.count)
                            if read > declared { break }
                        }
                    } catch {}
                }
                transfer.observation?.record(.redirected(status: head.statusCode, location: next.request.url))
                hop = Self.keepingUserinfo(of: hop, on: next.request)
                bodyFile = next.keepsBody ? bodyFile : nil
                if !hop.url.hasSameOrigin(as: original.url) { leftOrigin = true }
                continue
            }
            head.leftOrigin = leftOrigin
            if let coding = try codingToDecode(of: head) {
                let decoded = DecodedBody(base: response.body, coding: coding)
                if let streaming = transfer.streaming {
                    return try await stream(
                        decoded, head: head, options: streaming, progress: progress, promise: promise)
                }
                return try await collect(decoded, head: head, progress: progress)
            }
            if let streaming = transfer.streaming {
                return try await stream(
                    response.body, head: head, options: streaming, progress: progress, promise: promise)
            }
            return try await collect(response.body, head: head, progress: progress)
        }
    }

    /// `hop` as the engine sends it: its head (the URL's user info as `Authorization`, as URLSession sends it), its
    /// body from `bodyFile`, memory or its one-shot stream (counted and checked by the core as the engine reads it;
    /// the redirect rules never send it twice), the exchange's deadline.
    private func engineRequest(for hop: ConnectRequest, bodyFile: URL?, progress: ExchangeProgress?)
        throws -> EngineRequest
    {
        let url = hop.url
        var text = url.absoluteString
        // A host written with escapes (a request of the caller's, a middleware's URL, a redirect's `Location`) goes
        // as the name it stands for, as a connector's base URL does and as URLSession decodes it itself: an engine
        // sends the authority as it is handed over (`Host: localhos%74`).
        switch EscapedHost.plainURL(text) {
        case nil: break
        case .success(let plain): text = plain
        case .failure(let problem):
            var error = ConnectError.invalidRequest(.invalidURL(Redaction.urlText(text)), sent: original)
            error.message += ": " + problem.text
            throw error
        }
        guard let (scheme, authority, path) = RequestHead.split(text) else {
            throw ConnectError.invalidRequest(.invalidURL(Redaction.urlText(text)), sent: original)
        }
        var head = RequestHead(
            method: hop.method, scheme: scheme, authority: authority, path: path, headerFields: hop.headerFields)
        if var problem = hop.wireProblem(bodyFile: bodyFile) {
            // A method or a name that is not a token, a value with CR, LF or NUL, or a length that is not the body's
            // never reaches an engine's wire, whoever handed the transport the request.
            problem.storedRequest = .sent(original)
            throw problem
        }
        // Without the blanks around values (RFC 9110 §5.5), for a request handed to the transport directly too, and
        // without a `Content-Type` left blank, which names none.
        head.headerFields.trimBlanks()
        head.headerFields.removeBlankContentTypes()
        let cookies = head.headerFields[values: .cookie]
        if cookies.count > 1 {
            // One `Cookie` field (RFC 6265 5.4), its pairs joined with "; " as URLSession joins them: an engine
            // sends each field as its own line, which RFC 6265 forbids and some servers read as the first alone.
            head.headerFields[.cookie] = cookies.joined(separator: "; ")
        }
        if !engine.decodedContentCodings.contains("gzip"), head.headerFields[Self.acceptEncoding] == nil {
            // The core decodes what an engine hands over as sent (``DecodedBody``): it announces what it decodes, as
            // URLSession and AsyncHTTPClient's decompressor announce their own.
            head.headerFields.append(HeaderField(name: Self.acceptEncoding, value: "gzip, deflate"))
        }
        if let (user, password) = BasicUserinfo.credentials(of: url), head.headerFields[.authorization] == nil {
            let credentials = "\(user):\(password)"
            head.headerFields.append(
                HeaderField(name: .authorization, value: "Basic " + Data(credentials.utf8).base64EncodedString()))
        }
        // What the engine reports sent is progress, and activity for the idle timeout.
        let sent: @Sendable (Int64) -> Void
        switch (progress, idle) {
        case (let progress?, let idle?):
            let report = progress.sent
            sent = { count in
                idle.touch()
                report(count)
            }
        case (let progress?, nil): sent = progress.sent
        case (nil, let idle?): sent = { _ in idle.touch() }
        case (nil, nil): sent = { _ in }
        }
        let body: EngineRequest.Body
        if let bodyFile {
            // Checked again on every hop: a file removed or replaced before a 307 must not go out as an empty body.
            if let error = Self.unusableBodyFile(bodyFile, request: .sent(original)) { throw error }
            let length = try MultipartFormData.regularFileSize(bodyFile)
            // A `Content-Length` of the caller's that is not the file's would frame another body than the one sent.
            if var problem = hop.contentLengthProblem(bodyLength: length) {
                problem.storedRequest = .sent(original)
                throw problem
            }
            // The file a link leads to, whose length this is: FoundationNetworking announces the length of the link
            // itself (`lstat`) and sends that many bytes of the file as the whole body.
            body = .file(bodyFile.resolvingSymlinksInPath(), length: length)
        } else {
            switch hop.body {
            case .bytes(let data) where !data.isEmpty:
                body = .bytes(data)
            case .stream(let stream):
                // The core counts a stream's chunks as the engine takes them; the engine reports nothing for it. A
                // stream of unknown length is held to a `Content-Length` its caller set (the wire check made sure it
                // is one), and the engine told that length: it would frame the body in chunks beside that field
                // (RFC 9112 §6.1 forbids both), or drop it, by engine.
                let length = hop.announcedLength(of: stream)
                let chunks = bodyStop.map { stream.chunks.stopped(by: $0) } ?? stream.chunks
                body = .stream(chunks.counted(announcing: length, sent: sent), length: length)
                return EngineRequest(head: head, body: body, deadline: timer?.time)
            case .none, .bytes:
                body = .none
            }
        }
        return EngineRequest(head: head, body: body, deadline: timer?.time, sent: sent)
    }

    /// Hands the answer's head to `promise` with a body stream, then pumps the body into it as the reader takes
    /// it: the engine reads no further while the reader is behind (back-pressure), and a reader that stops cancels
    /// the exchange's task, which stops the engine. Returns the head (already delivered) at the end.
    private func stream<Body: AsyncSequence>(
        _ source: Body, head: ConnectResponse, options: StreamingOptions, progress: ExchangeProgress?,
        promise: Promise<ConnectResponse>
    ) async throws -> ConnectResponse where Body.Element == Data {
        if let limit = transfer.maxResponseBytes, let declared = Self.declaredLength(of: head, request: original),
            declared > Int64(limit)
        {
            // As for a body read whole: a length over the limit stops the exchange before any of it is read.
            throw ConnectError.responseTooLarge(limit: limit, sent: original, answer: head)
        }
        let declared = Self.declaredLength(of: head, request: original)
        progress?.startReceiving(expected: declared)
        let body = ResponseBodyStream(options: options)
        body.setCancelHandler { [state] in state.withLock { $0.task }?.cancel() }
        state.withLock { $0.stream = body }
        var answer = head
        answer.bodyStream = body
        promise.completeIfPending(with: .success(answer))
        let limit = transfer.maxResponseBytes.map { Int64($0) } ?? .max
        var received: Int64 = 0
        do {
            for try await part in source {
                // The engine should end its body when the task is cancelled; the core stops asking either way.
                try Task.checkCancellation()
                try count(part, into: &received, limit: limit, head: head)
                progress?.received(Int64(part.count))
                guard await body.send(part) else { return answer }
            }
            // A body an engine ended because the exchange was cancelled (the deadline) is cut, not complete.
            try Task.checkCancellation()
            // So is one shorter than its `Content-Length`, whatever the engine said: as for a body read whole.
            if let declared, received < declared, engine.decodedContentCodings.isEmpty {
                throw Self.cutShort(received: received, of: declared, request: original, head: head)
            }
            progress?.finish()
            body.finish()
        } catch {
            body.finish(throwing: classified(error))
        }
        return answer
    }

    /// The failure of a body that ended after `received` of the `declared` bytes its `Content-Length` announced.
    static func cutShort(received: Int64, of declared: Int64, request: ConnectRequest, head: ConnectResponse)
        -> ConnectError
    {
        ConnectError(
            .connectionLost,
            message: "the response ended after \(received) of the \(declared) bytes its Content-Length announced",
            request: .sent(request), head: head.storedHead, underlyingError: URLError(.networkConnectionLost))
    }

    /// The longest redirect body the exchange reads to keep its connection for the next hop, in bytes.
    static var redirectBodyReadLimit: Int64 { 64 << 10 }
    /// The body length `head` declares, when it counts the bytes that follow
    /// (``ResponseHead/declaredBodyLength(answering:)``).
    static func declaredLength(of head: ConnectResponse, request: ConnectRequest) -> Int64? {
        head.head.declaredBodyLength(answering: request.httpMethod)
    }

    /// Reads the body of the response that is the answer: into memory, or into the destination file for a
    /// successful download, counting it against the size limit as it arrives.
    private func collect<Body: AsyncSequence>(_ source: Body, head: ConnectResponse, progress: ExchangeProgress?)
        async throws -> ConnectResponse where Body.Element == Data
    {
        // The declared length counts the decoded bytes only when the body is not content-encoded, and says nothing
        // where no body follows (HEAD, 1xx, 204, 304).
        let status = head.statusCode
        let declared = Self.declaredLength(of: head, request: original)
        // A download's error body stays in memory: its start kept even when the caller set no limit, the rest let go.
        let kept = transfer.keptErrorBodyLimit(statusCode: status).map { Int64($0) }
        let bodyLimit = transfer.responseBodyLimit(statusCode: status)
        // A successful download goes to a file beside its destination; any other body stays in memory.
        let destination = (200..<300).contains(status) ? transfer.destination : nil
        // A resumed download answered 206 goes on from the part it kept: that part first, then the new bytes.
        let resumed = status == 206 && destination != nil ? transfer.resuming : nil
        // The bytes the 206's `Content-Range` names, which its body must hold: not counted for a content-coded body,
        // whose bytes arrive decoded.
        var rangeLength: Int64?
        if status == 206, destination != nil {
            let field = head.head.headerFields[HeaderField.Name("Content-Range")]
            let coded = Self.isContentCoded(head)
            if let problem = PartialDownload.problem(
                resuming: resumed, askedRange: original.value(forHTTPHeaderField: "Range") != nil, head: head.head,
                length: coded ? nil : declared)
            {
                // The part stays as it was: the client's method hands it back with the error.
                throw ConnectError(.badResponse, message: problem, request: .sent(original), head: head.storedHead)
            }
            rangeLength = resumed != nil && !coded ? PartialDownload.rangeLength(field) : nil
        }
        // The part counts against the limit with the new bytes: the limit bounds the whole file.
        let base = transfer.resumedBytes(statusCode: status)
        // The whole file's length as declared: `nil` when nothing is declared, or when no file could be that long (a
        // `Content-Length` near `Int64.max` after the part).
        let whole = declared.flatMap { declared in
            let (sum, overflow) = base.addingReportingOverflow(declared)
            return overflow ? nil : sum
        }
        if let limit = bodyLimit, (declared == nil ? base : whole ?? .max) > Int64(limit) {
            throw ConnectError.responseTooLarge(limit: limit, sent: original, answer: head)
        }
        let limit = bodyLimit.map { Int64($0) } ?? .max
        let keeping = partialKeeping(of: head)
        // A resumed download's file is kept as a part only once it holds all of the part it goes on from: stopped
        // while copying it (the deadline, an idle timeout), it would hand over a shorter part in place of that one.
        let download = try destination.map {
            (url: $0, file: try openDownloadFile(besides: $0, answer: head, keeping: resumed == nil ? keeping : nil))
        }
        if let download, let resumed {
            do {
                try fileAccess(download.url, answer: head) {
                    try resumed.copyBytes { bytes in
                        // Copying a large part is work of ours, not silence of the server's.
                        idle?.touch()
                        try download.file.write(bytes)
                    }
                }
            } catch {
                download.file.discard()
                throw error
            }
            self.download?.hold(download.file, keeping: keeping)
        }
        // A resumed download's progress counts the whole file: the part's bytes are there from the start.
        progress?.startReceiving(expected: whole, already: base)
        var body = Data()
        var received: Int64 = 0
        // Why `body` is only the start of the answer's body, when it is.
        var cut: ConnectError?
        do {
            for try await part in source {
                // The engine should end its body when the task is cancelled (the deadline, the caller); the core stops
                // asking either way: a body that never ends would be read, and kept, for ever.
                try Task.checkCancellation()
                idle?.touch()
                if let kept, received + Int64(part.count) > kept {
                    // Leaving the loop lets the rest of the body go unread: the engine stops it with its connection.
                    body.append(part.prefix(Int(kept - received)))
                    progress?.received(kept - received)
                    cut = ConnectError.responseTooLarge(limit: Int(kept), sent: original, answer: head)
                    break
                }
                if let rangeLength, received + Int64(part.count) > rangeLength {
                    // What arrived so far is the range's start, kept as a part for a resume.
                    throw ConnectError(
                        .badResponse,
                        message: "the server sent more than the \(rangeLength) bytes the 206's Content-Range names",
                        request: .sent(original), head: head.storedHead)
                }
                try count(part, into: &received, limit: limit, after: base, head: head)
                if let download {
                    try fileAccess(download.url, answer: head) { try download.file.write(part) }
                } else if body.isEmpty {
                    body = part
                } else {
                    body.append(part)
                }
                progress?.received(Int64(part.count))
            }
            // A body an engine ended because the exchange was cancelled (the deadline, the caller) is cut, not
            // complete: it never replaces a download's destination nor becomes an answer.
            try Task.checkCancellation()
            if cut == nil, let declared, received < declared, engine.decodedContentCodings.isEmpty {
                throw Self.cutShort(received: received, of: declared, request: original, head: head)
            }
            if let rangeLength, received < rangeLength {
                // A body with no declared length that ended before its range did: cut, the part kept.
                throw ConnectError(
                    .connectionLost,
                    message: "the response ended after \(received) of the \(rangeLength) bytes its Content-Range named",
                    request: .sent(original), head: head.storedHead, underlyingError: URLError(.networkConnectionLost))
            }
            if let download {
                try fileAccess(download.url, answer: head) {
                    try download.file.close()
                    try TransferOptions.moveIntoPlace(download.file.url, to: download.url)
                }
                // In place, the new file stays, even when a cancellation or the deadline lands now (during the last
                // progress report, say) and the future reports it: the file it replaced is gone, and removing the new
                // one would leave nothing at the destination.
            }
        } catch {
            guard download != nil, Self.keepsPart(after: error) else {
                download?.file.discard()
                throw error
            }
            // The bytes that arrived are kept for a resume, when the answer named a validator.
            var failure = classified(error)
            failure.partialDownload = self.download?.salvage()
            throw failure
        }
        // The part a resumed download started from is in the file now, or was replaced by a whole new body.
        if download != nil { transfer.resuming?.discard() }
        progress?.finish()
        var answer = head
        answer.data = download == nil ? body : Data()
        answer.fileURL = download?.url
        answer.bodyCut = cut
        return answer
    }

    /// The coding the core decodes the answer's body from, when the engine hands it over as sent (``DecodedBody``:
    /// in bounded parts, which the size limit and a stream's back-pressure see). Refuses the answer when its body is
    /// in a coding neither the engine nor the core decodes: the bytes would reach the caller as a success nobody can
    /// read. A body-less answer (HEAD, 1xx, 204, 304) has nothing to decode.
    ///
    /// A transfer coding other than a final `chunked` (`Transfer-Encoding: gzip, chunked`, RFC 9112 §7) counts as one
    /// more coding, applied after the content codings: an engine's parser removes the chunks and hands the rest over
    /// still coded (SwiftNIO's does; libcurl decodes gzip and deflate there too, which its engine announces).
    private func codingToDecode(of head: ConnectResponse) throws -> ContentCoding? {
        let status = head.statusCode
        let fields = head.head.headerFields
        let content = fields[HeaderField.Name("Content-Encoding")]
        // `chunked` alone, the common case, leaves nothing coded.
        let transfer = fields[HeaderField.Name("Transfer-Encoding")].flatMap {
            $0.caseInsensitiveCompare("chunked") == .orderedSame ? nil : $0
        }
        guard content != nil || transfer != nil,
            original.httpMethod?.uppercased() != "HEAD", status >= 200, status != 204, status != 304
        else { return nil }
        let decoded = engine.decodedContentCodings
        func codings(_ field: String?) -> [String] {
            (field ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        }
        var transferCodings = codings(transfer)
        if transferCodings.last == "chunked" { transferCodings.removeLast() }
        let undecoded = (codings(content) + transferCodings)
            .filter { !$0.isEmpty && $0 != "identity" && !decoded.contains($0) }
        guard let first = undecoded.first else { return nil }
        // One coding the core knows is decoded; several applied in turn (`gzip, br`) are not.
        if undecoded.count == 1, let coding = ContentCoding(token: first) { return coding }
        let unknown = undecoded.filter { ContentCoding(token: $0) == nil }
        let reason =
            unknown.isEmpty
            ? "in several codings in turn (\(undecoded.joined(separator: ", "))), which SwiftConnect does not decode"
            : "with \(unknown.joined(separator: ", ")), which neither \(engineName) nor SwiftConnect decodes"
        // `.transport`, as URLSession reports a coding it cannot decode: not retried by default, another attempt gets
        // the same bytes.
        throw ConnectError(
            .transport, message: "the body is encoded \(reason): refused rather than passed on as a success",
            request: .sent(original), head: head.storedHead)
    }

    /// Adds `part` to the bytes `received` so far; over `limit` with the `already` held before the body (a resumed
    /// download's part), the body is refused.
    private func count(
        _ part: Data, into received: inout Int64, limit: Int64, after already: Int64 = 0, head: ConnectResponse
    ) throws {
        received += Int64(part.count)
        guard received <= limit - already else {
            throw ConnectError.responseTooLarge(
                limit: Int(limit), sent: original, answer: head)
        }
    }

    /// A temporary file beside `destination`, held for a cancellation to remove. A failure carries `answer`'s head:
    /// the server answered, and the caller learns how, though the body could not be kept.
    private func openDownloadFile(besides destination: URL, answer: ConnectResponse, keeping: PartialKeeping?)
        throws -> DownloadFile
    {
        do {
            let file = try DownloadFile(besides: destination)
            download?.hold(file, keeping: keeping)
            return file
        } catch {
            var failure: ConnectError
            do {
                // The folder may have gone meanwhile: the check says so in its words.
                try TransferOptions.checkDestination(destination, stored: .sent(original))
                failure = ConnectError.fileAccess(error, url: destination, stored: .sent(original))
            } catch let refusal as ConnectError {
                failure = refusal
            }
            failure.storedHead = answer.storedHead
            throw failure
        }
    }

    /// What a download answered by `head` needs to keep the part of its body that arrived, should it fail: `nil` when
    /// the answer names no validator, when its body is content-encoded (the bytes kept would be the decoded ones,
    /// which a `Range` does not count), or when it is a `206` to a range the caller asked for (the bytes kept would be
    /// the range's, which a resume takes for the body's start).
    private func partialKeeping(of head: ConnectResponse) -> PartialKeeping? {
        let fields = head.head.headerFields
        if Self.isContentCoded(head) { return nil }
        if head.statusCode == 206, transfer.resuming == nil { return nil }
        let resumed = head.statusCode == 206 ? transfer.resuming : nil
        // A 206 goes on from the part it resumed: its validator is the one sent, its length the range's.
        guard let validator = PartialDownload.validator(of: head.head) ?? resumed?.validator else { return nil }
        let total: Int64?
        if let resumed {
            total =
                PartialDownload.contentRange(fields[HeaderField.Name("Content-Range")])?.total ?? resumed.totalLength
        } else {
            total = Self.declaredLength(of: head, request: original)
        }
        return PartialKeeping(
            validator: validator,
            source: transfer.shownDownloadSource ?? ShownURL(url: original.url, hiding: SecretValues(of: original)),
            totalLength: total)
    }

    /// Whether `head`'s body is content-coded (``PartialDownload/isContentCoded(_:)``).
    private static func isContentCoded(_ head: ConnectResponse) -> Bool {
        PartialDownload.isContentCoded(head.head.headerFields[HeaderField.Name("Content-Encoding")])
    }

    /// Whether a download that failed with `error` keeps the part of its body that arrived: not when the body was
    /// refused (a size limit) or could not be written (the file), only when it stopped short.
    private static func keepsPart(after error: any Error) -> Bool {
        guard let error = error as? ConnectError else { return true }
        return error.kind != .responseTooLarge && error.kind != .fileAccess
    }

    /// Runs a step on the download file, its failure reported as ``ConnectError/Kind/fileAccess`` with `answer`'s
    /// head (the server answered; its body could not be written).
    private func fileAccess(_ destination: URL, answer: ConnectResponse, _ step: () throws -> Void) throws {
        do {
            try step()
        } catch {
            var failure = ConnectError.fileAccess(error, url: destination, stored: .sent(original))
            failure.storedHead = answer.storedHead
            throw failure
        }
    }

    /// `error` as the exchange reports it: a timeout if the deadline stopped the exchange, whatever the
    /// cancellation it caused looks like; else the engine's classification, or the core's.
    private func classified(_ error: any Error) -> ConnectError {
        var expired: ConnectError
        switch state.withLock({ $0.expired }) {
        case .deadline?:
            expired = ConnectError.transportFailure(.deadlinePassed(after: nil), sent: original)
        case .idle(let headCame)?:
            expired = ConnectError.idleTimeout(after: idle?.limit ?? 0, headCame: headCame, sent: original)
        case nil:
            return classifiedAsItIs(error)
        }
        // The part of a download the failure kept (``DownloadSlot/salvage()``) stays with the timeout that replaces
        // it: whichever of the expiry and the exchange's own failure completes the future, the part is reported.
        expired.partialDownload = (error as? ConnectError)?.partialDownload
        return expired
    }

    /// `error` as the exchange reports it when no deadline or idle timeout stopped the exchange.
    private func classifiedAsItIs(_ error: any Error) -> ConnectError {
        if var error = error as? ConnectError {
            if error.storedRequest == nil { error.sentRequest = original }
            return error
        }
        if var error = engine.failure(error) {
            if error.storedRequest == nil { error.sentRequest = original }
            if error.kind == .timedOut, let timer,
                DispatchTime.now().uptimeNanoseconds &+ 50_000_000 >= timer.time.uptimeNanoseconds
            {
                // The engine's own timer, given the exchange's deadline, fired first: said as the core says it. A
                // timer of the engine's that fired well before (a connect timeout) keeps its own words.
                error.message = "no complete response within the timeout of \(original.timeoutInterval) s"
            }
            return error
        }
        if let failure = error as? ContentDecodingFailure {
            // `.transport`, as URLSession's `cannotDecodeContentData`: not retried by default, another attempt gets
            // the same bytes.
            return ConnectError(
                .transport, message: failure.description, request: .sent(original), underlyingError: failure)
        }
        if error is CancellationError {
            return ConnectError(
                .cancelled, message: "the request was cancelled", request: .sent(original), underlyingError: error)
        }
        return ConnectError.transportFailure(.reported(error), sent: original)
    }

    /// Completes `promise`: in place for small bodies, on a global queue for large ones, whose decoding would
    /// hold up the tasks of other requests.
    private static func complete(_ promise: Promise<ConnectResponse>, with result: Result<ConnectResponse, any Error>) {
        let size = (try? result.get().data.count) ?? 0
        guard size >= concurrentCompletionThreshold else {
            promise.completeIfPending(with: result)
            return
        }
        DispatchQueue.global().async { promise.completeIfPending(with: result) }
    }

    /// `next` with the `user:password@` part of `hop`'s URL when it goes to the same origin without one of its own,
    /// as URLSession keeps the caller's credentials for a same-origin redirect (the redirect rules refuse a
    /// `Location` that brings its own). The origin is the redirect rules' (`hasSameOrigin(as:)`), however the
    /// `Location` writes its host.
    private static func keepingUserinfo(of hop: ConnectRequest, on next: ConnectRequest) -> ConnectRequest {
        let from = hop.url
        let to = next.url
        guard from.user != nil, to.user == nil, from.hasSameOrigin(as: to),
            var components = URLComponents(url: to, resolvingAgainstBaseURL: false)
        else { return next }
        let original = URLComponents(url: from, resolvingAgainstBaseURL: false)
        components.percentEncodedUser = original?.percentEncodedUser
        components.percentEncodedPassword = original?.percentEncodedPassword
        var request = next
        request.url = components.url ?? to
        return request
    }

    /// Why `file` cannot be uploaded, or `nil` when it can (``TransferOptions/bodyFileProblem(_:stored:)``).
    static func unusableBodyFile(_ file: URL, request: ConnectResponse.StoredRequest?) -> ConnectError? {
        TransferOptions.bodyFileProblem(file, stored: request)
    }

}

/// What ended an exchange before its engine did: its deadline (the request's `timeoutInterval`), or its idle timeout
/// (``TransferOptions/idleTimeout``), with whether the answer's head had come.
enum ExchangeExpiry: Sendable {
    case deadline
    case idle(headCame: Bool)
}

/// Responses with bodies at least this large complete on a concurrent queue rather than in place (on URLSession's
/// serial delegate queue, or an engine's thread), so that decoding them (milliseconds of CPU for 100 KiB of JSON)
/// runs on every core instead of queuing behind each other. Smaller ones complete in place: a thread hop would cost
/// more than their decoding. Every engine's path reads this one value.
let concurrentCompletionThreshold = 32 << 10

/// The progress of one exchange, reported in order to ``TransferOptions/progress``.
///
/// No report starts once the exchange is closed (``close()``: the deadline or a cancellation ended the call), so that
/// a part the engine had already handed over is not reported after the caller heard the end. No report repeats the one
/// before it, and the body's end (a download fraction of 1) is reported once, by
/// ``finish()``: when the whole body is there, a download's file in place. The last chunk of a body of declared length
/// does not report it before then: a caller that acts on 1.0 (opens the file) would act on a body not yet complete.
final class ExchangeProgress: Sendable {
    private let report: @Sendable (TransferProgress) -> Void
    /// Where the exchange is, and the last report made.
    private let state = Protected<(progress: TransferProgress, reported: TransferProgress?, closed: Bool)>(
        (TransferProgress(bytesSent: 0, totalBytesToSend: nil, bytesReceived: 0, totalBytesToReceive: nil), nil, false))
    /// Held from an update to the end of its report, so that reports reach the caller in the order of the updates:
    /// the engine's writer reports what it sent while the exchange reports what it received. Recursive, for a
    /// report that leads to another on its thread.
    private let reporting = NSRecursiveLock()

    init(report: @escaping @Sendable (TransferProgress) -> Void) {
        self.report = report
    }

    /// A hop starts: nothing sent yet of `total` bytes. A hop a redirect sends without a body (a 302 or 303 after a
    /// POST) has nothing to send: the upload the earlier hop reported stays done, rather than going back to 0 of 0.
    func startHop(sending total: Int64?, redirected: Bool = false) {
        state.withLock {
            let keepsSent = redirected && total == 0
            $0.progress = TransferProgress(
                bytesSent: keepsSent ? $0.progress.bytesSent : 0,
                totalBytesToSend: keepsSent ? $0.progress.totalBytesToSend : total, bytesReceived: 0,
                totalBytesToReceive: nil)
        }
    }

    /// `count` more bytes of the body were handed to the connection: the only way the sent count grows.
    var sent: @Sendable (Int64) -> Void {
        { [self] count in
            // Never past the total: an engine that miscounts (a piece reported twice) does not report more than
            // the body.
            update { $0.bytesSent = min($0.bytesSent + count, $0.totalBytesToSend ?? .max) }
        }
    }

    /// The answer's head came; `expected` bytes are announced, `already` of them there (a resumed download's part).
    /// The sent count stays what the engine reported: a server may answer (a 413, say) before it has read the whole
    /// body, and then the rest never went.
    func startReceiving(expected: Int64?, already: Int64 = 0) {
        update {
            $0.totalBytesToReceive = expected
            $0.bytesReceived = already
        }
    }

    func received(_ count: Int64) {
        update { $0.bytesReceived += count }
    }

    /// The body is complete (a download's file in place): its size is known. The one report of its end.
    func finish() {
        update(ending: true) { $0.totalBytesToReceive = $0.bytesReceived }
    }

    /// Reports nothing more: the call ended (the deadline, a cancellation) before the exchange did. Never waits: a
    /// report already under way on another thread (a handler that waits for the thread cancelling) is let finish.
    func close() {
        state.withLock { $0.closed = true }
    }

    /// Applies `change` and reports the result, unless the exchange is closed, it is the last report again, or it says
    /// the body has all arrived before ``finish()`` (`ending`) says so.
    private func update(ending: Bool = false, _ change: (inout TransferProgress) -> Void) {
        reporting.lock()
        defer { reporting.unlock() }
        let progress = state.withLock { state -> TransferProgress? in
            guard !state.closed else { return nil }
            change(&state.progress)
            let progress = state.progress
            guard progress != state.reported else { return nil }
            if !ending, let total = progress.totalBytesToReceive, progress.bytesReceived >= total { return nil }
            state.reported = progress
            return progress
        }
        if let progress { report(progress) }
    }
}

/// The download file of an exchange, if any, for its cancellation: its temporary file, and what it needs to keep the
/// part of the body that arrived when the exchange fails (``salvage()``).
final class DownloadSlot: Sendable {
    private let state = Protected<
        (
            file: DownloadFile?, cancelled: Bool, discarded: Bool, keeping: PartialKeeping?,
            salvaged: PartialDownload?
        )
    >((nil, false, false, nil, nil))
    /// Held while a part is being kept (``salvage()``): file work, never while `state` is held. A `Bool` nobody
    /// reads, not `Void`: a value of no size shares its address with the lock, and ThreadSanitizer then reports the
    /// lock's own read as racing the access to the value.
    private let salvaging = Protected(false)

    func hold(_ download: DownloadFile, keeping: PartialKeeping? = nil) {
        let cancelled = state.withLock { state in
            state.file = download
            state.keeping = keeping
            return state.cancelled
        }
        if cancelled { download.discard() }
    }

    /// The exchange was cancelled (its future says so): the temporary file goes, and so does a part kept meanwhile
    /// (nobody hears of it: the future reports the cancellation); a file already moved into place stays.
    func discard() {
        let (file, salvaged) = state.withLock { state in
            state.cancelled = true
            state.discarded = true
            return (state.file, state.salvaged)
        }
        file?.discard()
        salvaged?.discard()
    }

    /// The exchange failed mid-body: the bytes that arrived are kept as a ``PartialDownload`` when the answer named a
    /// validator and some arrived, else the file goes as ``discard()`` removes it. The same part for every caller: the
    /// deadline and the exchange's own failure may both ask.
    func salvage() -> PartialDownload? {
        // One at a time: a second caller waits for the first's part rather than finding the file taken and saying
        // there is none (the deadline's or idle timeout's report would then lose it).
        salvaging.withLock { _ in salvageOnce() }
    }

    /// Keeps one part at most; later calls get the same (``salvage()`` runs it one caller at a time).
    private func salvageOnce() -> PartialDownload? {
        let (file, keeping, salvaged, discarded) = state.withLock { state in
            state.cancelled = true
            return (state.file, state.keeping, state.salvaged, state.discarded)
        }
        if let salvaged { return salvaged }
        guard let file, let keeping, !discarded else {
            file?.discard()
            return nil
        }
        let partial = file.keep(keeping)
        let (kept, drop) = state.withLock { state -> (PartialDownload?, Bool) in
            // Cancelled meanwhile: the part goes with the rest.
            if state.discarded { return (nil, true) }
            if state.salvaged == nil { state.salvaged = partial }
            return (state.salvaged, false)
        }
        if drop {
            partial?.discard()
            return nil
        }
        return kept
    }
}

/// A download's temporary file, beside its destination, so that it is moved into place with one rename.
final class DownloadFile: Sendable {
    let url: URL
    /// The open file, `nil` once closed or discarded, how many bytes were written to it, and whether it was kept
    /// where it is as a part (``keep(_:)``): then the part's, which ``discard()`` leaves.
    private let handle: Protected<(file: FileHandle?, written: Int64, keptInPlace: Bool)>

    /// Creates the file (``ReplacementFile``: a name that fits, the permissions of a file it replaces).
    init(besides destination: URL) throws {
        url = ReplacementFile.url(besides: destination, suffix: "download")
        handle = Protected((try ReplacementFile.create(url, replacing: destination), 0, false))
    }

    func write(_ data: Data) throws {
        try handle.withLock { handle in
            guard let file = handle.file else { throw CancellationError() }
            try file.writePortably(data)
            handle.written += Int64(data.count)
        }
    }

    func close() throws {
        try handle.withLock { current in
            guard let file = current.file else { throw CancellationError() }
            current.file = nil
            try file.close()
        }
    }

    /// Closes and removes the file (nothing once it was moved into place, or kept where it is as a part: the exchange
    /// failing as the part is salvaged discards its file, which is the part's now).
    func discard() {
        let keptInPlace = handle.withLock { current -> Bool in
            try? current.file?.close()
            current.file = nil
            return current.keptInPlace
        }
        if !keptInPlace { try? FileManager.default.removeItem(at: url) }
    }

    /// Closes the file and moves it, owner-only, into the temporary directory as the part of a body that arrived (or
    /// leaves it where it is, beside the destination, when it cannot be renamed there: another file system); `nil`
    /// (the file removed) when nothing was written, or when the file was already closed (moved into place,
    /// discarded).
    func keep(_ keeping: PartialKeeping) -> PartialDownload? {
        // All under the lock: a second caller (the deadline, the exchange's own failure) finds the file closed and
        // leaves it to this one.
        let kept: (URL, Int64)? = handle.withLock { current in
            guard let file = current.file else { return nil }
            current.file = nil
            // Owner-only before it moves: it may have had the permissions of the file it was to replace.
            let privately = fchmod(file.fileDescriptor, 0o600) == 0
            let closed = (try? file.close()) != nil
            guard privately, closed, current.written > 0 else {
                try? FileManager.default.removeItem(at: url)
                return nil
            }
            let target = FileManager.default.temporaryDirectory
                .appendingPathComponent("SwiftConnect-partial-\(UUID().uuidString).download")
            // On another file system (a tmpfs `/tmp`, an external drive), or where the temporary directory refuses
            // it, the part stays where it was written, beside the destination: moving it would copy every byte that
            // arrived, here, on the thread that cancelled or timed out the call, under this lock.
            guard rename(url.path, target.path) == 0 else {
                current.keptInPlace = true
                return (url, current.written)
            }
            return (target, current.written)
        }
        guard let kept else { return nil }
        return PartialDownload(
            bytesReceived: kept.1, fileURL: kept.0, validator: keeping.validator, source: keeping.source,
            totalLength: keeping.totalLength)
    }
}
