import Dispatch
import Foundation
import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// MARK: - Recording

extension RecordingTransport {
    /// Sends `request` with the wrapped transport and records the exchange, then delivers the live outcome.
    ///
    /// The recording is written before the future completes, so a test that has its answer has its file. A
    /// cancelled exchange is not recorded (the test stopped it; the server said nothing), unless the cancellation came
    /// at the request's deadline or failed the call with an error of its own (a streamed call's idle timeout, which
    /// bounds the wait for the head): the client ended it, and it is recorded as the timeout it was.
    func record(
        _ request: ConnectRequest, redacted: RecordedRequest, secrets: SecretValues, transfer: TransferOptions
    ) -> Future<ConnectResponse> {
        guard let upstream else {
            let message =
                "RecordingTransport in \(mode.rawValue) mode has no transport to send \(redacted.summary) with: "
                + "make it with RecordingTransport(wrapping: URLSessionTransport())"
            return Future(error: RecordingError(.noTransport, message, fileURL: fileURL).connectError(for: request))
        }
        // A download goes to a file of the recorder's beside the destination (checked already), put in place once the
        // recording is written: a recording that cannot be written fails the call and leaves the destination as it
        // was.
        var sent = transfer
        let download = transfer.destination.map { RecordedDownload(destination: $0, progress: transfer.progress) }
        if let download {
            sent.destination = download.file
            sent.progress = transfer.progress.map { _ in download.report }
        }
        let started = Date()
        let start = DispatchTime.now().uptimeNanoseconds
        let promise = Promise<ConnectResponse>()
        recording.begin()
        let live = upstream.send(request, transfer: sent)
        // Whether the exchange has been recorded (or let go): once, by its end or by the client's deadline.
        let isSettled = Protected(false)
        let settles: @Sendable () -> Bool = {
            isSettled.withLock { isSettled in
                defer { isSettled = true }
                return !isSettled
            }
        }
        let failed: @Sendable (HAR.Failure, Double) -> HAR.Entry = { failure, elapsed in
            HAR.Entry(
                startedDateTime: Self.timestamp(started), request: HAR.Request(redacted),
                response: HAR.Response(status: 0, headers: [], content: HAR.Content(Data(), mimeType: "")),
                timings: HAR.Timings(send: 0, wait: (elapsed * 1000).rounded() / 1000, receive: 0), failure: failure)
        }
        let answer = promise.future
        promise.setCancelHandler { [self] in
            // The client's deadline cancels before it reports the timeout: recorded now, the file is written before
            // the caller hears of it. So is a cancellation that failed the call with an error of its own (a streamed
            // call's idle timeout, which bounds the wait for the head): the future holds it already.
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds &- start) / 1_000_000
            let timeout =
                Self.deadlineFailure(of: request, afterMilliseconds: elapsed)
                ?? Self.cancellationFailure(of: answer, secrets: secrets)
            if let timeout, settles() {
                try? append(failed(timeout, elapsed), request: redacted)
            }
            live.cancel()
        }
        live.observe { [self] result in
            guard settles() else {
                download?.discard()
                recording.end()
                promise.completeIfPending(with: result)
                return
            }
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds &- start) / 1_000_000
            let timings = HAR.Timings(send: 0, wait: (elapsed * 1000).rounded() / 1000, receive: 0)
            let entry: HAR.Entry
            // The body of a download, read from the wrapped transport's file.
            var downloaded = Data()
            switch result {
            case .success(let response):
                if let body = response.bodyStream {
                    // A streamed answer goes to the caller at its head; it is recorded when its body ends (which
                    // ends its part in `recording`).
                    promise.completeIfPending(
                        with: .success(
                            relayed(
                                body, of: response, request: request, redacted: redacted, secrets: secrets,
                                started: (started, start), transfer: transfer)))
                    return
                }
                // A download's body is in the file the wrapped transport wrote: recorded from there. A resumed
                // download's file starts with its part, which the server did not send now: the 206's body is the
                // rest, and the whole file goes in place.
                var whole = response
                if let file = response.fileURL {
                    do {
                        let contents = try Data(contentsOf: file)
                        let resumedBytes = transfer.resumedBytes(statusCode: response.statusCode)
                        downloaded = contents
                        whole.data = Data(contents.dropFirst(Int(min(resumedBytes, Int64(contents.count)))))
                    } catch {
                        download?.discard()
                        recording.end()
                        let failure = ConnectError.fileAccess(
                            error, url: download?.destination ?? file, request: request.urlRequest)
                        promise.completeIfPending(with: .failure(failure))
                        return
                    }
                    whole.fileURL = nil
                }
                let responseSecrets = secretsKnown(after: whole, of: request, adding: secrets)
                entry = HAR.Entry(
                    startedDateTime: Self.timestamp(started), request: HAR.Request(redacted),
                    response: Self.archived(whole, to: request, secrets: responseSecrets),
                    timings: timings)
            case .failure(let error):
                download?.discard()
                guard let failure = Self.failure(error, secrets: secrets) else {
                    recording.end()
                    promise.completeIfPending(with: result)
                    return
                }
                entry = failed(failure, elapsed)
            }
            defer { recording.end() }
            do {
                try append(entry, request: redacted)
            } catch {
                download?.discard()
                let message = "RecordingTransport could not write \(fileURL.path): \(error)"
                let failure = RecordingError(.writeFailed, message, fileURL: fileURL)
                promise.completeIfPending(with: .failure(failure.connectError(for: request)))
                return
            }
            guard let download, case .success(let response) = result, response.fileURL == download.file else {
                // An answer with no file (an error status): its last report, as the wrapped transport gave it.
                if case .success = result { download?.giveLastReport() }
                promise.completeIfPending(with: result)
                return
            }
            promise.completeIfPending(with: download.placed(response, body: downloaded, request: request))
        }
        return promise.future
    }

    /// `response` with a body stream of its own, fed from `body` as the caller reads it; each piece's size and time
    /// are kept, and the exchange is recorded when the body ends (its end, a failure, or the caller stopping), before
    /// the caller hears of the end.
    private func relayed(
        _ body: ResponseBodyStream, of response: ConnectResponse, request: ConnectRequest, redacted: RecordedRequest,
        secrets: SecretValues, started: (date: Date, uptime: UInt64), transfer: TransferOptions
    ) -> ConnectResponse {
        let relay = ResponseBodyStream(options: transfer.streaming ?? StreamingOptions())
        // Whether the caller's side stopped the body (the reader, the call's deadline or its idle timeout).
        let stopped = Protected(false)
        relay.setCancelHandler {
            stopped.withLock { $0 = true }
            body.cancel()
        }
        var relayed = response
        relayed.bodyStream = relay
        let headTime = Self.milliseconds(since: started.uptime)
        Task { [self] in
            var bytes = Data()
            var chunks: [HAR.Chunk] = []
            var failure: (any Error)?
            var complete = false
            do {
                while let chunk = try await body.next() {
                    bytes.append(chunk)
                    chunks.append(HAR.Chunk(time: Self.milliseconds(since: started.uptime), size: chunk.count))
                    guard await relay.send(chunk) else {
                        body.cancel()
                        break
                    }
                }
                complete = !stopped.withLock { $0 }
            } catch {
                failure = error
            }
            let total = Self.milliseconds(since: started.uptime)
            var whole = response
            whole.bodyStream = nil
            whole.data = bytes
            let responseSecrets = secretsKnown(after: whole, of: request, adding: secrets)
            var entry = HAR.Entry(
                startedDateTime: Self.timestamp(started.date), request: HAR.Request(redacted),
                response: Self.archived(whole, to: request, secrets: responseSecrets),
                timings: HAR.Timings(send: 0, wait: headTime, receive: max(0, total - headTime)))
            entry.chunks = Self.chunks(chunks, of: bytes, asRecorded: entry.response.content.data ?? Data())
            entry.bodyFailure = failure.flatMap { Self.failure($0, secrets: responseSecrets) }
            if entry.bodyFailure == nil, !complete, stopped.withLock({ $0 }) {
                // Cut short on the caller's side: the body recorded is not the whole, and must not replay as it.
                entry.bodyFailure = stopFailure(
                    of: request, afterMilliseconds: total, lastPiece: chunks.last?.time ?? headTime, transfer: transfer)
            }
            defer { recording.end() }
            do {
                try append(entry, request: redacted)
                relay.finish(throwing: failure)
            } catch {
                let message = "RecordingTransport could not write \(fileURL.path): \(error)"
                relay.finish(
                    throwing: RecordingError(.writeFailed, message, fileURL: fileURL).connectError(for: request))
            }
        }
        return relayed
    }

    /// The pieces of a body as they arrived, `chunks` sized in the `raw` bytes, sized in the body as `recorded`
    /// (redacted: a placeholder longer or shorter than the secret it hides), so that a replay cuts the recorded body
    /// where the live one was cut and each piece keeps its time. A cut is placed by lines, which redaction keeps (an
    /// event stream's events, JSON Lines): after as many line ends, and as many bytes of the line it falls in as that
    /// line has left; past the recorded body's end, at its end.
    ///
    /// - Parameters:
    ///   - chunks: The pieces, sized in `raw`.
    ///   - raw: The body as it arrived.
    ///   - recorded: The body as the file holds it.
    /// - Returns: The pieces sized in `recorded`; `chunks` when the bodies are the same.
    static func chunks(_ chunks: [HAR.Chunk], of raw: Data, asRecorded recorded: Data) -> [HAR.Chunk] {
        guard raw != recorded, !chunks.isEmpty else { return chunks }
        // Where each line of the recorded body starts.
        var lineStarts = [recorded.startIndex]
        for index in recorded.indices where recorded[index] == UInt8(ascii: "\n") {
            lineStarts.append(index + 1)
        }
        var mapped: [HAR.Chunk] = []
        var rawOffset = raw.startIndex
        var lineEnds = 0
        var lineStart = raw.startIndex
        var recordedCut = recorded.startIndex
        for chunk in chunks {
            let end = min(raw.endIndex, rawOffset + max(0, chunk.size))
            for index in rawOffset..<end where raw[index] == UInt8(ascii: "\n") {
                lineEnds += 1
                lineStart = index + 1
            }
            rawOffset = end
            let cut: Int
            if lineEnds < lineStarts.count {
                let start = lineStarts[lineEnds]
                // Before the line's end: the raw cut fell before its line feed.
                let lineEnd = lineEnds + 1 < lineStarts.count ? lineStarts[lineEnds + 1] - 1 : recorded.endIndex
                cut = min(start + (end - lineStart), lineEnd)
            } else {
                cut = recorded.endIndex
            }
            // Never before the last cut: a line redaction shortened keeps the later cuts in order.
            let placed = max(cut, recordedCut)
            mapped.append(HAR.Chunk(time: chunk.time, size: placed - recordedCut))
            recordedCut = placed
        }
        // What the cuts leave goes with the last piece, as a replay gives it.
        if let last = mapped.indices.last { mapped[last].size += recorded.endIndex - recordedCut }
        return mapped
    }

    /// The `_bodyFailure` of a streamed body the caller's side stopped `milliseconds` after the request started: the
    /// call's deadline or its idle timeout when it had passed, as the client reported it; else the reader stopped
    /// reading, and a replay read further fails there, naming the file, rather than ending as a complete body.
    private func stopFailure(
        of request: ConnectRequest, afterMilliseconds milliseconds: Double, lastPiece: Double, transfer: TransferOptions
    ) -> HAR.Failure {
        if let timeout = Self.deadlineFailure(of: request, afterMilliseconds: milliseconds) { return timeout }
        // 20 ms of slack, as for the deadline: the stream's timer started a moment before this clock read.
        if let idle = transfer.streaming?.idleTimeout, idle > 0, milliseconds - lastPiece + 20 >= idle * 1000 {
            let error = ResponseBodyStream.idleTimeoutError(after: idle)
            return HAR.Failure(
                kind: error.kind.rawValue, message: error.message, urlErrorCode: URLError.Code.timedOut.rawValue)
        }
        return HAR.Failure(
            kind: ConnectError.Kind.transport.rawValue,
            message: "RecordingTransport: \(fileURL.lastPathComponent) holds this body only up to here: the reader "
                + "stopped reading it when it was recorded. Record it again reading it to the end to replay more.")
    }

    /// `secrets` with every secret the responses recorded so far handed out, `response`'s included (a cookie, a
    /// token endpoint's JSON): hidden in this response and kept for the later ones. The secrets of the fields the
    /// wrapped transport reports as sent beside `request`'s are added too (a `URLSessionTransport`'s configuration's
    /// `Authorization`, which a server can echo); not those of a field `request` has, which the transport may only
    /// have rewritten (its `Cookie` fields joined into one).
    private func secretsKnown(after response: ConnectResponse, of request: ConnectRequest, adding secrets: SecretValues)
        -> SecretValues
    {
        let added = response.sentRequest.headerFields.filter { !request.headerFields.contains($0.name) }
        let secrets =
            added.isEmpty
            ? secrets
            : secrets.union(
                RecordingRedaction.withBase64Forms(
                    SecretValues(of: ConnectRequest(url: request.url, headerFields: HeaderFields(added)))))
        let handedOut = RecordingRedaction.secretsHandedOut(by: response)
        let known = state.withLock { state in
            state.handedOutSecrets += handedOut
            return state.handedOutSecrets
        }
        return secrets.union(RecordingRedaction.withBase64Forms(SecretValues(values: known)))
    }

    /// Milliseconds since `start` on the uptime clock, to the microsecond.
    static func milliseconds(since start: UInt64) -> Double {
        (Double(DispatchTime.now().uptimeNanoseconds &- start) / 1_000).rounded() / 1000
    }

    /// Adds `entry` (used: it answered this run) and writes the file with every entry so far.
    ///
    /// The file gets the entries not yet written added to those this transport last wrote; or, when the file has
    /// changed since this transport last read or wrote it (another transport recording it at the same time), to
    /// those the file holds now, so that neither replaces the other's.
    private func append(_ entry: HAR.Entry, request: RecordedRequest) throws {
        state.withLock { state in
            state.entries.append(entry)
            state.requests.append(request)
            state.used.append(true)
            state.loadFailure = nil
            state.unwritten.append(entry)
        }
        try Self.writing.run {
            // Taken inside the section: an entry another call appended meanwhile is written now, that call's write
            // then having nothing left to do.
            let (unwritten, known, written, knownComment) = state.withLock { state in
                defer { state.unwritten = [] }
                return (state.unwritten, state.fileBytes, state.fileEntries, state.fileComment)
            }
            guard !unwritten.isEmpty else { return }
            var base = written
            var comment = knownComment
            let current = try? Data(contentsOf: fileURL)
            if current != known, let current, let har = try? HAR(data: current) {
                base = har.log.entries
                comment = har.log.comment
            }
            do {
                // The log's comment kept: a note on how to re-record the file stays with it.
                var har = HAR(entries: base + unwritten)
                har.log.comment = comment
                let data = try har.encoded()
                try Self.write(data, to: fileURL)
                state.withLock { state in
                    state.fileBytes = data
                    state.fileEntries = base + unwritten
                    state.fileComment = comment
                }
            } catch {
                // Kept for the next write, as before this one.
                state.withLock { $0.unwritten = unwritten + $0.unwritten }
                throw error
            }
        }
    }

    /// The archive's form of a live response, secrets replaced.
    ///
    /// Its fields are sorted by name (repeated names keep their order): URLSession reports them as a dictionary, in
    /// an order that changes from run to run, and a re-recorded file should differ only where the server's answer did.
    /// A `Content-Length` is the length of the body as recorded: the engine or the core has already removed any
    /// content coding, and redaction may have changed the body, so the server's length would no longer describe it.
    /// An answer that has no body by definition (to a `HEAD`; a 1xx, 204 or 304) keeps the server's: it announces
    /// the resource's length.
    static func archived(_ response: ConnectResponse, to request: ConnectRequest, secrets: SecretValues) -> HAR.Response
    {
        let requestURL = request.url
        let isBodiless =
            request.method == .head || (100..<200).contains(response.statusCode) || response.statusCode == 204
            || response.statusCode == 304
        let sorted = response.head.headerFields.enumerated().sorted { left, right in
            let (a, b) = (left.element.name.canonicalName, right.element.name.canonicalName)
            return a != b ? a < b : left.offset < right.offset
        }
        var fields = RecordingRedaction.responseFields(HeaderFields(sorted.map(\.element)), secrets: secrets)
        let body = RecordingRedaction.responseBody(
            response.data, contentType: response.head.headerFields[.contentType], secrets: secrets)
        if fields.contains(.contentLength), !isBodiless { fields[.contentLength] = String(body.count) }
        var archived = HAR.Response(
            status: response.statusCode,
            headers: fields.map { HAR.NameValue(name: $0.name.rawName, value: $0.value) },
            content: HAR.Content(body, mimeType: fields[.contentType] ?? ""))
        archived.cookies = RecordingRedaction.cookies(in: fields)
        // A download's error page the transport cut to its first MiB: replayed as cut.
        if response.bodyCut != nil { archived.bodyCut = true }
        if let url = response.response.url, url != requestURL {
            // With the secrets hidden, as in the request's URL and a `Location`: a redirect may lead to a URL made of
            // the request's key.
            archived.url = RecordingRedaction.url(url, secrets: secrets).absoluteString
        }
        return archived
    }

    /// The `_failure` of an error, or `nil` for a cancellation (which is not recorded).
    static func failure(_ error: any Error, secrets: SecretValues) -> HAR.Failure? {
        if let error = error as? ConnectError {
            guard error.kind != .cancelled else { return nil }
            return HAR.Failure(
                kind: error.kind.rawValue, message: shown(error.message, secrets: secrets),
                urlErrorCode: error.urlError?.code.rawValue)
        }
        if let error = error as? URLError {
            let kind = ConnectError.Kind(error.code)
            guard kind != .cancelled else { return nil }
            return HAR.Failure(
                kind: kind.rawValue, message: shown(error.localizedDescription, secrets: secrets),
                urlErrorCode: error.code.rawValue)
        }
        return HAR.Failure(kind: ConnectError.Kind.transport.rawValue, message: shown("\(error)", secrets: secrets))
    }

    /// A failure's message as recorded: the secrets of the URLs it quotes (a transport's own error naming where it
    /// failed) hidden as a `Location`'s are, then the request's secret values.
    private static func shown(_ message: String, secrets: SecretValues) -> String {
        secrets.hiding(in: RecordingRedaction.redactedURLsQuoted(in: message))
    }

    /// The `_failure` of an exchange whose future the client cancelled failing it with an error that is no
    /// cancellation (the idle timeout of a streamed call whose head did not come in time): that error, as the caller
    /// gets it. `nil` for a plain cancellation, the test's own, which is not recorded.
    private static func cancellationFailure(of answer: Future<ConnectResponse>, secrets: SecretValues) -> HAR.Failure? {
        // The future is failed before its cancel handler runs: its error is the one the chain was cancelled with.
        guard case .failure(let error)? = answer.result, !(error is FutureError), !(error is CancellationError) else {
            return nil
        }
        return failure(error, secrets: secrets)
    }

    /// The `_failure` of an exchange cancelled `milliseconds` after it started, when that is at or past the request's
    /// deadline: the client's deadline cancelled it (the transport sees only the cancellation), and replay must time
    /// out as the call did. `nil` for a cancellation before the deadline, which the test made and is not recorded.
    static func deadlineFailure(of request: ConnectRequest, afterMilliseconds milliseconds: Double) -> HAR.Failure? {
        // The client armed its deadline a moment before this transport started its clock: 20 ms of slack.
        guard let deadline = deadline(of: request), milliseconds + 20 >= deadline else { return nil }
        let error = deadlinePassed(for: request)
        return HAR.Failure(
            kind: error.kind.rawValue, message: error.message, urlErrorCode: error.urlError?.code.rawValue)
    }

    /// `date` in ISO 8601 with milliseconds, in UTC, as HAR writes it.
    static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}

/// A download being recorded: the wrapped transport writes it to ``file``, beside ``destination``, which gets it only
/// once the exchange is in the recording; the last progress report (the body complete) is held until then, or until
/// the answer turns out to have no file (an error status).
final class RecordedDownload: Sendable {
    /// The caller's file.
    let destination: URL
    /// The file the wrapped transport writes, removed once its bytes are in place (or the call failed).
    let file: URL
    private let progress: (@Sendable (TransferProgress) -> Void)?
    /// The report saying the body is complete, held until the file is in place.
    private let lastReport = Protected<TransferProgress?>(nil)

    init(destination: URL, progress: (@Sendable (TransferProgress) -> Void)?) {
        self.destination = destination
        file = ReplacementFile.url(besides: destination, suffix: "recording")
        self.progress = progress
    }

    /// Passes a report on, or holds the last one: it says the download is in place, which is not true yet.
    @Sendable func report(_ report: TransferProgress) {
        if let total = report.totalBytesToReceive, report.bytesReceived >= total {
            lastReport.withLock { $0 = report }
        } else {
            progress?(report)
        }
    }

    /// Puts `body`, the download, in place (with the permissions of a file it replaces, as every engine does) and gives the
    /// last progress report: `response`, naming the destination; or a ``SwiftConnect/ConnectError/Kind/fileAccess``
    /// error, the destination left as it was.
    func placed(_ response: ConnectResponse, body: Data, request: ConnectRequest) -> Result<ConnectResponse, any Error>
    {
        defer { discard() }
        do {
            try ReplacementFile.write(body, to: destination)
        } catch {
            return .failure(ConnectError.fileAccess(error, url: destination, request: request.urlRequest))
        }
        giveLastReport()
        var placed = response
        placed.fileURL = destination
        return .success(placed)
    }

    /// Gives the report held back, if one was.
    func giveLastReport() {
        if let report = lastReport.withLock({ $0 }) { progress?(report) }
    }

    /// Removes the wrapped transport's file, if it wrote one.
    func discard() {
        try? FileManager.default.removeItem(at: file)
    }
}
