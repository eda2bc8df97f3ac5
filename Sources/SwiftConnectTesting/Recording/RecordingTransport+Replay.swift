import Dispatch
import Foundation
import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// MARK: - Finding a recording

extension RecordingTransport {
    /// The first unused entry that matches `request`, marked used; or why there is none.
    ///
    /// The matcher (possibly the test's own closure) runs outside the lock: the entries are read, matched, then the
    /// first match still unused is claimed, so two requests sent at once never get the same entry.
    func claim(_ request: RecordedRequest) -> Result<HAR.Entry, RecordingError> {
        let snapshot = state.withLock { $0 }
        if let failure = snapshot.loadFailure { return .failure(failure) }
        let candidates = snapshot.requests.indices.filter { index in
            guard !snapshot.used[index], let recorded = snapshot.requests[index] else { return false }
            return matcher.matches(request, recorded)
        }
        let claimed = state.withLock { state -> HAR.Entry? in
            for index in candidates where !state.used[index] {
                state.used[index] = true
                return state.entries[index]
            }
            return nil
        }
        if let claimed { return .success(claimed) }
        return .failure(noMatch(for: request, in: snapshot))
    }

    /// The error for a request no entry answers: the nearest recorded request, and what differs from it.
    private func noMatch(for request: RecordedRequest, in snapshot: State) -> RecordingError {
        var nearest: (request: RecordedRequest, differences: [RequestNormalization.Difference], used: Bool)?
        var nearestScore = Int.max
        for (index, recorded) in snapshot.requests.enumerated() {
            guard let recorded else { continue }
            let differences = RequestNormalization.differences(request, recorded)
            // An entry already used counts as further away than an unused one that differs as much.
            let score = differences.reduce(0) { $0 + $1.weight } * 2 + (snapshot.used[index] ? 1 : 0)
            if score < nearestScore {
                nearestScore = score
                nearest = (recorded, differences, snapshot.used[index])
            }
        }
        let file = fileURL.lastPathComponent
        var message = "RecordingTransport: no recording in \(file) matches \(request.summary)"
        // Entries whose request cannot be read match nothing: said, or an edited file looks empty or incomplete.
        let unreadable = Self.unreadableRequests(in: snapshot)
        guard let nearest else {
            if unreadable.isEmpty {
                message += " (the recording holds no requests). Record it: run with "
                message += "\(RecordingMode.environmentVariable)=recordMissing (or =record)."
            } else {
                message += " (the recording holds no request it can read: \(unreadable)). Fix the file, or "
                message += "record it again with \(RecordingMode.environmentVariable)=record."
            }
            message += RecordingMode.misspeltEnvironmentNote
            return RecordingError(.noMatch, message, fileURL: fileURL)
        }
        let differences = nearest.differences.map(\.description)
        message += ". Nearest recorded: \(nearest.request.summary)"
        if differences.isEmpty {
            let count = snapshot.requests.filter { recorded in recorded.map { matcher.matches(request, $0) } ?? false }
                .count
            message +=
                count > 0
                ? " — it matches, but its \(count) matching recording(s) were already used by earlier requests"
                : " — it differs only in what the transport's matcher compares beyond method, URL and body"
        } else {
            message += " — differs in " + differences.joined(separator: "; ")
        }
        if !unreadable.isEmpty { message += ". The recording also holds requests it cannot read: \(unreadable)" }
        message += ". Re-record with \(RecordingMode.environmentVariable)=record if the request changed on purpose."
        message += RecordingMode.misspeltEnvironmentNote
        return RecordingError(
            .noMatch, message, fileURL: fileURL, nearest: nearest.request, differences: differences)
    }
}

extension RecordingTransport {
    /// The entries of `snapshot` whose request cannot be read (which match no request), each with why: `entry 2
    /// (POST https://api.test/a): it has a body marked base64 that is not valid base64`; empty when there are none.
    /// Five at most.
    fileprivate static func unreadableRequests(in snapshot: State) -> String {
        let indices = snapshot.requests.indices.filter { snapshot.requests[$0] == nil }
        let described = indices.prefix(5).map { index -> String in
            let request = snapshot.entries[index].request
            let why =
                URL(string: request.url) == nil
                ? "its URL does not parse" : "it has " + HAR.unreadableBody(encoding: request.postData?.encoding)
            return "entry \(index + 1) (\(request.method) \(shown(request.url))): \(why)"
        }
        return described.joined(separator: "; ") + (indices.count > 5 ? "; …" : "")
    }

    /// A recorded URL as a message shows it: redacted as a live request's is (a browser's export holds its secrets
    /// as sent), or a placeholder for one that does not parse.
    static func shown(_ url: String) -> String {
        guard let parsed = URL(string: url) else { return "<unreadable URL>" }
        return RecordingRedaction.url(parsed).absoluteString
    }
}

// MARK: - Replaying

extension RecordingTransport {
    /// The header fields `entry`'s response is replayed with: placeholders filled, HTTP/2 pseudo-fields left out.
    func replayedFields(of entry: HAR.Entry) -> HeaderFields {
        var fields = HeaderFields()
        for header in entry.response.headers where !header.name.hasPrefix(":") {
            let value = RecordingRedaction.filling(header.value, with: placeholderValues)
            fields.append(HeaderField(name: HeaderField.Name(header.name), value: value))
        }
        return fields
    }

    /// The response, or the failure, `entry` recorded, as `request`'s answer.
    func replay(_ entry: HAR.Entry, for request: ConnectRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
        if let failure = entry.failure { return Future(error: error(for: failure, request: request)) }
        var fields = replayedFields(of: entry)
        guard let body = entry.response.content.data else {
            let message =
                "RecordingTransport: the recorded answer to \(Self.shown(entry.request.url)) in \(fileURL.lastPathComponent) has "
                + HAR.unreadableBody(encoding: entry.response.content.encoding)
            return Future(
                error: RecordingError(.unreadableRecording, message, fileURL: fileURL).connectError(for: request))
        }
        if let problem = lengthProblem(of: entry, body: body, request: request) { return Future(error: problem) }
        if let invalid = fields.firstInvalid {
            // A field no server can send (a file edited by hand): an engine fails on such a line, and handing it over
            // as one field would replay what no live answer holds (a `Set-Cookie` smuggled in a value's CR LF).
            let message =
                "RecordingTransport: the recorded answer to \(Self.shown(entry.request.url)) in "
                + "\(fileURL.lastPathComponent) has the header \(invalid.name.description.debugDescription), whose name "
                + "is not an RFC 9110 token or whose value has a control character (such as CR, LF or NUL), which no "
                + "HTTP answer can carry"
            return Future(
                error: RecordingError(.unreadableRecording, message, fileURL: fileURL).connectError(for: request))
        }
        let filled = RecordingRedaction.filling(body, with: placeholderValues)
        if filled.count != body.count, Self.declaredLength(of: entry) != nil {
            // The recorded length is the recorded body's: the body replayed is the filled one.
            fields[.contentLength] = String(filled.count)
        }
        guard
            var response = ConnectResponse(
                request: request, head: ResponseHead(status: entry.response.status, headerFields: fields),
                data: filled,
                url: entry.response.url.flatMap {
                    URL(string: RecordingRedaction.filling($0, with: placeholderValues))
                },
                httpVersion: Self.foundationVersion(entry.response.httpVersion))
        else {
            let status = entry.response.status
            let message =
                "RecordingTransport: the recording of \(Self.shown(entry.request.url)) in \(fileURL.lastPathComponent) has "
                + (status == 0
                    ? "status 0 and no _failure (a browser's export of a request that got no response cannot be replayed)"
                    : "status \(status), which no HTTP answer has (a status is 100 to 999)")
            return Future(
                error: RecordingError(.unreadableRecording, message, fileURL: fileURL).connectError(for: request))
        }
        // A download's error page, kept to its first MiB as every transport keeps it: cut when recorded so (its
        // length may differ by the secrets redaction replaced) or longer here, in a file recorded otherwise, and said
        // to be cut, as the live call said.
        transfer.keepErrorBodyStart(
            of: &response, request: request.urlRequest, alreadyCut: entry.response.bodyCut == true)
        let data = response.data
        // A resumed download's part counts with the body, for the limit and for progress: the whole file.
        let resumedBytes = transfer.resumedBytes(statusCode: response.statusCode)
        if let limit = transfer.responseBodyLimit(statusCode: response.statusCode),
            resumedBytes + Int64(data.count) > Int64(limit)
        {
            let message = "the response body is larger than the limit of \(limit) bytes"
            return Future(
                error: ConnectError(
                    .responseTooLarge, message: message, request: request.urlRequest, response: response.response))
        }
        // The one report, once the answer is complete: for a download, once its file is in place (as an engine's).
        let reportProgress = {
            guard let progress = transfer.progress else { return }
            let sent = Int64(request.httpBody?.count ?? 0)
            let received = resumedBytes + Int64(data.count)
            progress(
                TransferProgress(
                    bytesSent: sent, totalBytesToSend: sent, bytesReceived: received, totalBytesToReceive: received))
        }
        guard let destination = transfer.destination, response.isSuccess else {
            reportProgress()
            return Future(value: response)
        }
        // A download: the recorded body goes to its file (after the part a 206 resumes), as the wrapped transport
        // wrote it.
        do {
            try transfer.writeDownload(data, of: response, to: destination, request: request.urlRequest)
        } catch {
            return Future(error: error)
        }
        reportProgress()
        var written = response
        written.data = Data()
        written.fileURL = destination
        return Future(value: written)
    }

    /// The failure of a replay of `entry`, whose recorded `body` is not as long as its `Content-Length` says (a file
    /// edited by hand, a browser's export that left the body out): a live engine fails a body shorter than its length,
    /// and never hands over more than it. `nil` when it has the length, when no length counts it
    /// (``declaredLength(of:)``), or when the body was recorded cut (a download's error page, `_bodyCut`).
    private func lengthProblem(of entry: HAR.Entry, body: Data, request: ConnectRequest) -> ConnectError? {
        guard entry.response.bodyCut != true, let declared = Self.declaredLength(of: entry), declared != body.count
        else { return nil }
        let file = fileURL.lastPathComponent
        let message =
            "RecordingTransport: the recorded answer to \(Self.shown(entry.request.url)) in \(file) has a body of "
            + "\(body.count) bytes, where its Content-Length \(declared) announces another length (a body edited by "
            + "hand, or left out of a browser's export). Fix the length or the body, or record it again with "
            + "\(RecordingMode.environmentVariable)=record."
        return RecordingError(.unreadableRecording, message, fileURL: fileURL).connectError(for: request)
    }

    /// The answer `entry` recorded, as a streamed response: its head, then its body in the pieces it arrived in
    /// (`_chunks`; one piece for a body recorded whole), then the recorded `_bodyFailure` if it broke. With
    /// ``replaysLatencies`` the head comes after the recorded wait and each piece at its recorded moment; otherwise
    /// at once, as the reader takes them.
    func replayStreamed(_ entry: HAR.Entry, for request: ConnectRequest, transfer: TransferOptions) -> Future<
        ConnectResponse
    > {
        var unlimited = transfer
        unlimited.maxResponseBytes = nil
        unlimited.streaming = nil
        let latencies = replaysLatencies
        // Instant replay keeps the deadlines by the recorded times (real time keeps them with latencies).
        let deadline = latencies ? nil : Self.deadline(of: request)
        if let deadline, entry.timings.wait > deadline { return Future(error: Self.deadlinePassed(for: request)) }
        let idleLimit = latencies ? nil : transfer.streaming?.idleTimeout.map { $0 * 1000 }
        if let idleLimit, idleLimit > 0, entry.failure == nil, entry.timings.wait > idleLimit {
            // The idle timeout bounds the wait for the head too, from the hand-off to the transport: a head recorded
            // later than it is the timeout the client would have met.
            return Future(error: ResponseBodyStream.headTimeoutError(after: idleLimit / 1000))
        }
        // The size limit as an engine applies it to a stream: at the head for a declared length over it, else at the
        // piece that goes over it.
        let limit = transfer.maxResponseBytes
        let whole = replay(entry, for: request, transfer: unlimited)
        let start = DispatchTime.now().uptimeNanoseconds
        let streamed = whole.map { response -> ConnectResponse in
            if let limit, let declared = Self.declaredLength(of: entry), declared > limit {
                throw ConnectError.responseTooLarge(
                    limit: limit, request: request.urlRequest, response: response.response)
            }
            let body = ResponseBodyStream(options: transfer.streaming ?? StreamingOptions())
            let pieces = Self.pieces(of: response.data, as: entry.chunks)
            let failure = entry.bodyFailure.map { self.error(for: $0, request: request) }
            let feeding = Task {
                var previous = entry.timings.wait
                var received = 0
                for piece in pieces {
                    received += piece.bytes.count
                    if let limit, received > limit {
                        return body.finish(
                            throwing: ConnectError.responseTooLarge(
                                limit: limit, request: request.urlRequest, response: response.response))
                    }
                    if let deadline, piece.time > deadline {
                        return body.finish(throwing: Self.deadlinePassed(for: request))
                    }
                    if let idleLimit, idleLimit > 0, piece.time - max(0, previous) > idleLimit {
                        return body.finish(throwing: ResponseBodyStream.idleTimeoutError(after: idleLimit / 1000))
                    }
                    previous = piece.time
                    if latencies { await Self.wait(until: piece.time, since: start) }
                    guard await body.send(piece.bytes) else { return }
                }
                body.finish(throwing: failure)
            }
            body.setCancelHandler { feeding.cancel() }
            var answer = response
            answer.data = Data()
            answer.bodyStream = body
            return answer
        }
        return latencies ? Self.delayed(byMilliseconds: entry.timings.wait) { streamed } : streamed
    }

    /// The body length `entry`'s answer declares, as the core reads it for the size limit: its `Content-Length`,
    /// unless the body is content-encoded (the length is the encoded one) or the answer has no body (to a `HEAD`; a
    /// 1xx, 204 or 304); `nil` otherwise, or for values that differ or are not a number.
    static func declaredLength(of entry: HAR.Entry) -> Int? {
        let status = entry.response.status
        guard entry.request.method.uppercased() != "HEAD", status >= 200, status != 204, status != 304 else {
            return nil
        }
        func values(_ name: String) -> [String] {
            entry.response.headers.filter { $0.name.lowercased() == name }.flatMap { field in
                field.value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            }
        }
        guard values("content-encoding").allSatisfy({ $0.lowercased() == "identity" }) else { return nil }
        let lengths = Set(values("content-length"))
        guard lengths.count == 1, let length = lengths.first.flatMap({ Int($0) }), length >= 0 else { return nil }
        return length
    }

    /// `data` cut where `chunks` say it arrived, each piece with its time; what the sizes leave (redaction may have
    /// changed the body's length) goes with the last piece.
    static func pieces(of data: Data, as chunks: [HAR.Chunk]?) -> [(time: Double, bytes: Data)] {
        guard let chunks, !chunks.isEmpty else { return data.isEmpty ? [] : [(0, data)] }
        var pieces: [(time: Double, bytes: Data)] = []
        var offset = data.startIndex
        for (index, chunk) in chunks.enumerated() {
            // Compared before it is added: a size edited to near `Int.max` would overflow `offset + size`.
            let end =
                index == chunks.count - 1 || chunk.size >= data.endIndex - offset
                ? data.endIndex : offset + max(0, chunk.size)
            if end > offset { pieces.append((chunk.time, data[offset..<end])) }
            offset = end
        }
        return pieces
    }

    /// Waits until `milliseconds` after `start` (uptime nanoseconds); at once if that has passed or the task is
    /// cancelled. A time over a year (a file edited by hand: `1e300`) waits a year: converting it to nanoseconds
    /// would overflow, which stops the process.
    private static func wait(until milliseconds: Double, since start: UInt64) async {
        let capped = milliseconds > 0 ? min(milliseconds, 365 * 24 * 3600 * 1000) : 0
        let due = start &+ UInt64(capped * 1_000_000)
        let now = DispatchTime.now().uptimeNanoseconds
        guard due > now else { return }
        try? await Task.sleep(nanoseconds: due - now)
    }

    /// The request's deadline in milliseconds after it was sent, or `nil` when it has none.
    static func deadline(of request: ConnectRequest) -> Double? {
        let seconds = request.timeoutInterval
        guard seconds > 0, seconds.isFinite else { return nil }
        return seconds * 1000
    }

    /// The error of a request whose deadline passed, as the client makes it.
    static func deadlinePassed(for request: ConnectRequest) -> ConnectError {
        ConnectError.deadlinePassed(after: request.timeoutInterval, sent: request)
    }

    /// The typed error a recorded failure replays as; for a kind no ``SwiftConnect/ConnectError`` has (a file edited
    /// by hand), a ``RecordingError`` saying so, rather than an error of another kind.
    func error(for failure: HAR.Failure, request: ConnectRequest) -> ConnectError {
        guard let kind = ConnectError.Kind(rawValue: failure.kind) else {
            let kinds = ConnectError.Kind.allCases.map(\.rawValue).joined(separator: ", ")
            let message =
                "RecordingTransport: the recorded failure of \(Self.shown(request.url.absoluteString)) in "
                + "\(fileURL.lastPathComponent) has the kind \"\(failure.kind)\", which no ConnectError has "
                + "(the kinds are \(kinds))"
            return RecordingError(.unreadableRecording, message, fileURL: fileURL).connectError(for: request)
        }
        // Failable on Linux, not on Apple platforms: `flatMap` reads alike on both.
        let code: URLError.Code? = failure.urlErrorCode.flatMap { URLError.Code(rawValue: $0) }
        return ConnectError(
            kind, message: failure.message, request: request.urlRequest, underlyingError: code.map { URLError($0) })
    }

    /// The answer `answer` makes `milliseconds` from now, made then: what it does (a download's file written, its
    /// progress reported) is done when the answer comes, as live. Cancelling the returned future ends the wait at
    /// once, the answer not made, or cancels the answer once made.
    static func delayed(
        byMilliseconds milliseconds: Double, _ answer: @escaping @Sendable () -> Future<ConnectResponse>
    ) -> Future<ConnectResponse> {
        guard milliseconds > 0, milliseconds.isFinite else { return answer() }
        let promise = Promise<ConnectResponse>()
        DispatchQueue.global().asyncAfter(deadline: .now() + milliseconds / 1000) {
            // Cancelled meanwhile: completed, and nothing is made.
            guard !promise.future.isCompleted else { return }
            let answered = answer()
            promise.setCancelHandler { answered.cancel() }
            answered.observe { promise.completeIfPending(with: $0) }
        }
        return promise.future
    }

    /// A HAR version as URLSession reports one: `HTTP/1.1`, `HTTP/2` (browsers write `http/1.1`, `h2`, `h3`).
    static func foundationVersion(_ version: String) -> String {
        switch version.lowercased() {
        case "h2", "http/2", "http/2.0": return "HTTP/2"
        case "h3", "http/3", "http/3.0": return "HTTP/3"
        case "": return "HTTP/1.1"
        default: return version.uppercased()
        }
    }
}
