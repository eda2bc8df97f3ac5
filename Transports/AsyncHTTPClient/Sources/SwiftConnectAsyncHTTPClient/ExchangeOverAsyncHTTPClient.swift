import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One request through ``AsyncHTTPClientTransport``, from the first hop to the response: the redirects it
/// follows by SwiftConnect's rules, the deadline shared by every hop, the size limit and the download file, and
/// progress. It runs in a task of its own, which cancelling the future cancels.
struct ExchangeOverAsyncHTTPClient: Sendable {
    /// Kept until the exchange ends: a transport released meanwhile shuts its client down only then.
    let transport: AsyncHTTPClientTransport
    var client: HTTPClient { transport.client }
    /// The request as the client handed it over: what the response reports as its request.
    let original: URLRequest
    let transfer: TransferOptions
    /// When the whole exchange, redirects included, must be done: AsyncHTTPClient's deadline for each hop's head.
    let deadline: NIODeadline
    /// The same deadline for the rest, the body included: AsyncHTTPClient's own ends when the head arrives.
    private let timer: TransportDeadline?
    /// Whether `timer` fired (the exchange's task was cancelled for it, and the exchange reports a timeout), and the
    /// body stream of a streamed answer once its head came, which `timer` ends if the reader is behind.
    private let timing = NIOLockedValueBox<(expired: Bool, stream: ResponseBodyStream?)>((false, nil))

    /// The download file being written, so that a cancellation removes it before anyone hears of it.
    private let download = DownloadSlot()

    init(transport: AsyncHTTPClientTransport, request: URLRequest, transfer: TransferOptions) {
        self.transport = transport
        original = request
        self.transfer = transfer
        let seconds = request.timeoutInterval
        deadline =
            seconds > 0 && seconds.isFinite
            ? .now() + .nanoseconds(Int64(min(seconds, 365 * 24 * 3600) * 1_000_000_000)) : .distantFuture
        timer = TransportDeadline(seconds: seconds)
    }

    /// Checks the request, starts the exchange and returns its future.
    func start() -> Future<ConnectResponse> {
        guard let scheme = original.url?.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            let text = original.url?.absoluteString ?? ""
            var error = ConnectError.invalidRequest(.invalidURL(text), request: original)
            error.message =
                original.url == nil
                ? "the request has no URL"
                : "'\(text)' is not an http or https URL: AsyncHTTPClientTransport sends HTTP only"
            return Future(error: error)
        }
        if let destination = transfer.destination {
            do {
                try TransferOptions.checkDestination(destination, request: original)
            } catch {
                return Future(error: error)
            }
        }
        if let bodyFile = transfer.bodyFile, let error = unusableBodyFile(bodyFile, request: original) {
            return Future(error: error)
        }
        if (original.httpMethod ?? "GET").uppercased() == "GET",
            !(original.httpBody?.isEmpty ?? true) || original.httpBodyStream != nil || transfer.bodyFile != nil
        {
            // As URLSession refuses it: a GET's body has no meaning (RFC 9110, 9.3.1), and many servers drop it.
            var error = ConnectError.invalidRequest(.bodyNotAllowed(method: "GET"), request: original)
            error.underlyingError = URLError(.dataLengthExceedsMaximum)
            return Future(error: error)
        }
        let promise = Promise<ConnectResponse>()
        let running = NIOLockedValueBox<Task<Void, Never>?>(nil)
        // Armed before the task starts: a task that ends at once disarms it for good.
        timer?.start { [self] in
            let stream = timing.withLockedValue { timing in
                timing.expired = true
                return timing.stream
            }
            // A streamed body's reader hears of it even when the pump waits for the reader (back-pressure).
            stream?.finish(throwing: classified(HTTPClientError.deadlineExceeded))
            running.withLockedValue { $0 }?.cancel()
        }
        let task = Task {
            let result: Result<ConnectResponse, any Error>
            do {
                result = .success(try await run(promise: promise, stopping: running))
            } catch {
                result = .failure(classified(error))
            }
            timer?.cancel()
            Self.complete(promise, with: result)
        }
        running.withLockedValue { $0 = task }
        // The deadline may have passed before the task was there to cancel.
        if timing.withLockedValue({ $0.expired }) { task.cancel() }
        promise.setCancelHandler { [download] in
            task.cancel()
            download.discard()
        }
        return promise.future
    }

    /// Sends each hop until a response that is the answer. For a streamed request, `promise` gets the answer's
    /// head as soon as it arrives, and `task` (this exchange's) is what the stream's reader cancels.
    private func run(promise: Promise<ConnectResponse>, stopping task: NIOLockedValueBox<Task<Void, Never>?>)
        async throws -> ConnectResponse
    {
        var hop = original
        var bodyFile = transfer.bodyFile
        var redirects = 0
        let progress = transfer.progress.map { Progress(report: $0) }
        while true {
            try Task.checkCancellation()
            progress?.startHop(sending: RequestConversion.bodyLength(of: hop, bodyFile: bodyFile))
            let relay = try await transport.pinned.relay(for: hop)
            let request = try RequestConversion.request(
                for: hop, bodyFile: bodyFile, sent: progress?.sent, relay: relay?.socketPath)
            let failuresBefore = relay?.failureCount ?? 0
            let response: HTTPClientResponse
            do {
                response = try await client.execute(request, deadline: deadline)
            } catch {
                // Through a relay, AsyncHTTPClient only sees its connection close: the relay knows why.
                if let failure = relay?.failure(since: failuresBefore) { throw failure }
                throw error
            }
            let head = try Self.head(of: response, url: hop.url!, request: original)
            if (300..<400).contains(head.statusCode),
                let next = RedirectRule.next(after: hop, answeredBy: head.response, bodyFile: bodyFile)
            {
                redirects += 1
                guard redirects <= RedirectRule.maxHops else {
                    throw ConnectError(
                        .transport,
                        message: "the server redirected more than \(RedirectRule.maxHops) times",
                        request: original,
                        response: head.response,
                        underlyingError: URLError(.httpTooManyRedirects)
                    )
                }
                // The body of a redirect is not the answer; read to its end, the connection can serve the next hop.
                for try await _ in response.body {}
                hop = Self.keepingUserinfo(of: hop, on: next.request)
                bodyFile = next.keepsBody ? bodyFile : nil
                continue
            }
            if let streaming = transfer.streaming {
                return await stream(
                    response, head: head, options: streaming, progress: progress, promise: promise, task: task)
            }
            return try await collect(response, head: head, progress: progress)
        }
    }

    /// Hands the answer's head to `promise` with a body stream, then pumps the body into it as the reader takes
    /// it: AsyncHTTPClient reads no further while the reader is behind (back-pressure), and a reader that stops
    /// cancels `task`, which closes the connection. Returns the head (already delivered) at the end.
    private func stream(
        _ response: HTTPClientResponse, head: ConnectResponse, options: StreamingOptions, progress: Progress?,
        promise: Promise<ConnectResponse>, task: NIOLockedValueBox<Task<Void, Never>?>
    ) async -> ConnectResponse {
        let body = ResponseBodyStream(options: options)
        body.setCancelHandler { task.withLockedValue { $0 }?.cancel() }
        timing.withLockedValue { $0.stream = body }
        var answer = head
        answer.bodyStream = body
        promise.completeIfPending(with: .success(answer))
        let limit = transfer.maxResponseBytes.map { Int64($0) } ?? .max
        var received: Int64 = 0
        do {
            for try await part in response.body {
                try count(part, into: &received, limit: limit, head: head)
                progress?.received(Int64(part.readableBytes))
                guard await body.send(Data(buffer: part)) else { return answer }
            }
            progress?.finish()
            body.finish()
        } catch {
            body.finish(throwing: classified(error))
        }
        return answer
    }

    /// `next` with the `user:password@` part of `hop`'s URL when it goes to the same origin without one of its own,
    /// as URLSession keeps the caller's credentials for a same-origin redirect (the redirect rules refuse a
    /// `Location` that brings its own).
    private static func keepingUserinfo(of hop: URLRequest, on next: URLRequest) -> URLRequest {
        guard let from = hop.url, from.user != nil, let to = next.url, to.user == nil, from.scheme == to.scheme,
            from.host == to.host, from.port == to.port,
            var components = URLComponents(url: to, resolvingAgainstBaseURL: false)
        else { return next }
        let original = URLComponents(url: from, resolvingAgainstBaseURL: false)
        components.percentEncodedUser = original?.percentEncodedUser
        components.percentEncodedPassword = original?.percentEncodedPassword
        var request = next
        request.url = components.url ?? to
        return request
    }

    /// Reads the body of the response that is the answer: into memory, or into the destination file for a
    /// successful download, counting it against the size limit as it arrives.
    private func collect(_ response: HTTPClientResponse, head: ConnectResponse, progress: Progress?) async throws
        -> ConnectResponse
    {
        // The declared length counts the decoded bytes only when the body is not content-encoded, and says nothing
        // where no body follows (HEAD, 1xx, 204, 304).
        let status = head.statusCode
        let bodiless = original.httpMethod?.uppercased() == "HEAD" || status < 200 || status == 204 || status == 304
        let encoded = bodiless || response.headers.contains(name: "Content-Encoding")
        let declared = encoded ? nil : response.headers.first(name: "Content-Length").flatMap { Int64($0) }
        // A download's error body stays in memory: limited even when the caller set no limit.
        let bodyLimit = transfer.responseBodyLimit(statusCode: status)
        if let limit = bodyLimit, let declared, declared > Int64(limit) {
            throw ConnectError.responseTooLarge(limit: limit, request: original, response: head.response)
        }
        progress?.startReceiving(expected: declared)
        let limit = bodyLimit.map { Int64($0) } ?? .max
        // A successful download goes to a file beside its destination; any other body stays in memory.
        let destination = (200..<300).contains(status) ? transfer.destination : nil
        let download = try destination.map { (url: $0, file: try openDownloadFile(besides: $0)) }
        var body = ByteBuffer()
        var received: Int64 = 0
        do {
            for try await part in response.body {
                try count(part, into: &received, limit: limit, head: head)
                if let download {
                    try fileAccess(download.url) { try download.file.write(part) }
                } else if body.readableBytes == 0 {
                    body = part
                } else {
                    body.writeImmutableBuffer(part)
                }
                progress?.received(Int64(part.readableBytes))
            }
            if let download {
                try fileAccess(download.url) {
                    try download.file.close()
                    try TransferOptions.moveIntoPlace(download.file.url, to: download.url)
                }
                // Cancelled while it moved: the future says so, and the file goes (a later cancel removes it too).
                guard self.download.placed(at: download.url) else {
                    try? FileManager.default.removeItem(at: download.url)
                    throw CancellationError()
                }
            }
        } catch {
            download?.file.discard()
            throw error
        }
        progress?.finish()
        var answer = head
        answer.data = download == nil ? Data(buffer: body) : Data()
        answer.fileURL = download?.url
        return answer
    }

    /// Adds `part` to the bytes `received` so far; over `limit`, the body is refused.
    private func count(_ part: ByteBuffer, into received: inout Int64, limit: Int64, head: ConnectResponse) throws {
        received += Int64(part.readableBytes)
        guard received <= limit else {
            throw ConnectError.responseTooLarge(limit: Int(limit), request: original, response: head.response)
        }
    }

    /// A temporary file beside `destination`, held for a cancellation to remove.
    private func openDownloadFile(besides destination: URL) throws -> DownloadFile {
        do {
            let file = try DownloadFile(besides: destination)
            download.hold(file)
            return file
        } catch {
            // The folder may have gone meanwhile: the check says so in its words.
            try TransferOptions.checkDestination(destination, request: original)
            throw ConnectError.fileAccess(error, url: destination, request: original)
        }
    }

    /// Runs a step on the download file, its failure reported as ``SwiftConnect/ConnectError/Kind/fileAccess``.
    private func fileAccess(_ destination: URL, _ step: () throws -> Void) throws {
        do {
            try step()
        } catch {
            throw ConnectError.fileAccess(error, url: destination, request: original)
        }
    }

    /// The request's timeout, for messages.
    private var timeout: TimeInterval? {
        deadline == .distantFuture ? nil : original.timeoutInterval
    }

    /// `error` as the exchange reports it: a timeout if the deadline stopped the exchange, whatever the
    /// cancellation it caused looks like.
    private func classified(_ error: any Error) -> ConnectError {
        let cause = timing.withLockedValue { $0.expired } ? HTTPClientError.deadlineExceeded : error
        return ErrorClassification.connectError(cause, request: original, timeout: timeout)
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

    /// Responses with bodies larger than this complete on a global queue.
    static let concurrentCompletionThreshold = 32 << 10

    /// `response`'s head as the answer to `request` from `url`, without a body yet: its fields copied one by one into
    /// the core's ``SwiftConnect/ResponseHead``, repeated ones kept. Foundation's `HTTPURLResponse` is made only if
    /// someone reads it (see ``SwiftConnect/ConnectResponse/response``).
    ///
    /// - Throws: `URLError(.badServerResponse)` for a status code outside 100...999. NIO parses `000`, but
    ///   AsyncHTTPClient 1.37 stops the process on such a head before it gets here (SECURITY.md).
    static func head(of response: HTTPClientResponse, url: URL, request: URLRequest) throws -> ConnectResponse {
        var fields = HeaderFields()
        for (name, value) in response.headers { fields.append(HeaderField(name: HeaderField.Name(name), value: value)) }
        let version =
            response.version.major >= 2 ? "HTTP/2" : "HTTP/\(response.version.major).\(response.version.minor)"
        guard
            let head = ConnectResponse(
                request: request, head: ResponseHead(status: Int(response.status.code), headerFields: fields),
                url: url, httpVersion: version)
        else { throw URLError(.badServerResponse) }
        return head
    }
}

/// The progress of one exchange, reported in order to ``SwiftConnect/TransferOptions/progress``.
private final class Progress: Sendable {
    private let report: @Sendable (TransferProgress) -> Void
    private let state = NIOLockedValueBox(
        TransferProgress(bytesSent: 0, totalBytesToSend: nil, bytesReceived: 0, totalBytesToReceive: nil))

    init(report: @escaping @Sendable (TransferProgress) -> Void) {
        self.report = report
    }

    /// A hop starts: nothing sent yet of `total` bytes.
    func startHop(sending total: Int64?) {
        state.withLockedValue {
            $0 = TransferProgress(bytesSent: 0, totalBytesToSend: total, bytesReceived: 0, totalBytesToReceive: nil)
        }
    }

    /// `count` more bytes of the body were handed to the connection.
    var sent: @Sendable (Int64) -> Void {
        { [self] count in
            update { $0.bytesSent += count }
        }
    }

    /// The answer's head came: the whole body was sent; `expected` bytes are announced.
    func startReceiving(expected: Int64?) {
        update { progress in
            if let total = progress.totalBytesToSend { progress.bytesSent = total }
            progress.totalBytesToReceive = expected
        }
    }

    func received(_ count: Int64) {
        update { $0.bytesReceived += count }
    }

    /// The body is complete: its size is known.
    func finish() {
        update { $0.totalBytesToReceive = $0.bytesReceived }
    }

    private func update(_ change: (inout TransferProgress) -> Void) {
        let progress = state.withLockedValue { progress in
            change(&progress)
            return progress
        }
        report(progress)
    }
}

/// The download file of an exchange, if any, for its cancellation: the temporary file, then the file in place.
private final class DownloadSlot: Sendable {
    private let state = NIOLockedValueBox<(file: DownloadFile?, placed: URL?, cancelled: Bool)>((nil, nil, false))

    func hold(_ download: DownloadFile) {
        let cancelled = state.withLockedValue { state in
            state.file = download
            return state.cancelled
        }
        if cancelled { download.discard() }
    }

    /// Records the download moved into place at `url`; `false` if the exchange was cancelled meanwhile.
    func placed(at url: URL) -> Bool {
        state.withLockedValue { state in
            guard !state.cancelled else { return false }
            state.placed = url
            return true
        }
    }

    /// The exchange was cancelled (its future says so): the temporary file goes, and the file in place if any.
    func discard() {
        let (file, placed) = state.withLockedValue { state in
            state.cancelled = true
            return (state.file, state.placed)
        }
        file?.discard()
        if let placed { try? FileManager.default.removeItem(at: placed) }
    }
}

/// A download's temporary file, beside its destination, so that it is moved into place with one rename.
// @unchecked Sendable: `lock` protects `handle` (nil once closed or discarded).
final class DownloadFile: @unchecked Sendable {
    let url: URL
    private let lock = NIOLock()
    private var handle: FileHandle?

    init(besides destination: URL) throws {
        url = destination.deletingLastPathComponent()
            .appendingPathComponent(".\(destination.lastPathComponent).\(UUID().uuidString).download")
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
        }
        handle = try FileHandle(forWritingTo: url)
    }

    func write(_ buffer: ByteBuffer) throws {
        try lock.withLock {
            guard let handle else { throw CancellationError() }
            try handle.write(contentsOf: buffer.readableBytesView)
        }
    }

    func close() throws {
        try lock.withLock {
            guard let handle else { throw CancellationError() }
            self.handle = nil
            try handle.close()
        }
    }

    /// Closes and removes the file (nothing once it was moved into place).
    func discard() {
        lock.withLock {
            try? handle?.close()
            handle = nil
            try? FileManager.default.removeItem(at: url)
        }
    }
}
