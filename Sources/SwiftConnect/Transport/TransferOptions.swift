import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How a request's body goes out and its response comes in, beyond what the `URLRequest` says: a body
/// streamed from a file, a response written to a file, a size limit and progress reports.
///
/// ``Connect`` fills these in for uploads, downloads and size limits; a ``Transport`` reads them from
/// the request context's transfer options.
public struct TransferOptions: Sendable {
    /// A file whose contents are the request body, streamed from disk (replaces `httpBody`).
    ///
    /// It must be a readable regular file (a symbolic link to one is followed): a directory, a pipe or a device fails
    /// the request with ``ConnectError/Kind/fileAccess`` before anything is sent, on every transport.
    ///
    /// Its length is read before it is sent, and it must not change until the answer comes. A file that shrinks
    /// meanwhile fails the call at once: `AsyncHTTPClientTransport` with ``ConnectError/Kind/transport``,
    /// ``URLSessionTransport`` on Linux, which watches the file while it is sent, with
    /// ``ConnectError/Kind/invalidRequest`` naming the file. A file that grows is sent as far as the length read, and
    /// nothing past it reaches the server (``URLSessionTransport`` on Linux closes the connection after a file upload
    /// for this reason). `Connect`'s uploads send a private copy, which nothing changes.
    public var bodyFile: URL?
    /// Where a successful (2xx) response body is written instead of memory. The file is replaced if it exists. A
    /// symbolic link there is replaced by the file, never followed: what it leads to is left as it was (a link planted
    /// in a shared folder cannot send a download over another file), as `rename(2)` replaces a link. A directory, pipe,
    /// device or socket there fails the request with ``ConnectError/Kind/fileAccess`` before anything is sent.
    /// The body of an error status stays in memory, for the error handler: its first 1 MiB, the rest let go unread
    /// (the error handler's error says the body was cut). A smaller ``maxResponseBytes`` applies to it as to any
    /// body: more fails with ``ConnectError/Kind/responseTooLarge``.
    public var destination: URL?
    /// The most response-body bytes accepted; more fails the request at once with
    /// ``ConnectError/Kind/responseTooLarge``, and the rest of the body is not kept. `nil` for no limit.
    ///
    /// A declared `Content-Length` over the limit stops the request before the body is read (unless the body is
    /// content-encoded, gzip say: the limit counts the decoded bytes, and the encoded length says nothing of them).
    /// On Linux, FoundationNetworking stops a transfer under way only once libcurl has caught up with the sender: the
    /// call fails within half a second, but until then the bytes that arrive are read and dropped, and every other
    /// URLSession request of the process waits. Against a fast sender the limit therefore does not bound peak memory
    /// there (SECURITY.md, "Time and size limits", gives what was measured); `AsyncHTTPClientTransport` closes the
    /// connection at the limit. Such requests (and downloads) run on Linux on a short-lived session of their own,
    /// invalidated to stop them.
    public var maxResponseBytes: Int?
    /// Receives progress reports, in order, on a thread of the transport's (the exchange's task, or URLSession's
    /// delegate queue): keep it short, and hop to the main actor for the UI. The last one comes before the request's
    /// future completes. No report repeats the one before it, and the body's end (a download fraction of 1) comes
    /// once, in the last report, when the whole body is there: for a download, once its file is in place. (The
    /// client's retry loop holds each attempt's end until it knows that attempt's answer is the call's.)
    public var progress: (@Sendable (TransferProgress) -> Void)?
    /// Streams the response body: when set, the transport completes the request's future as soon as the
    /// response head arrives, with the body to come in ``ConnectResponse/bodyStream`` (see ``ResponseBodyStream``).
    /// A transport that cannot stream delivers the whole body in memory and a finished stream of it.
    public var streaming: StreamingOptions?
    /// The most redirects the core's exchange follows for the request (``RequestOptions/maxRedirects``): `0` follows
    /// none; `nil` for the default, 20.
    var maxRedirects: Int?
    /// The longest the network may stay quiet during the exchange, in seconds (``RequestOptions/idleTimeout``): the
    /// core's exchange fails with ``ConnectError/Kind/timedOut`` when no byte is reported sent and none of the answer
    /// arrives for so long. `nil` for none; a streamed answer has its own (``StreamingOptions/idleTimeout``), which
    /// the exchange leaves to the client. Not a plain request's: URLSession's completion handler cannot watch pieces.
    var idleTimeout: TimeInterval?
    /// The call's deadline (its request's `timeoutInterval` from the call's start), which a streamed body is held to
    /// besides its attempt's own: the call's timer ends with the response's head, and its waits (a queue, a retry's
    /// backoff, a token refresh) may have spent part of it. `nil` outside a client's call.
    var callDeadline: DispatchTime?
    /// Where a streamed call notes the bodies its transport answered with (`MiddlewareChain`), so that those its
    /// caller never gets stop when the call fails; `nil` outside ``Connect/stream(_:options:streaming:)``.
    var streamedBodies: StreamedBodies?

    /// Creates transfer options.
    ///
    /// - Parameters:
    ///   - bodyFile: A file to stream as the body.
    ///   - destination: A file to write a successful response body to.
    ///   - maxResponseBytes: The response size limit.
    ///   - progress: Progress reports.
    ///   - streaming: Stream the response body as it arrives.
    public init(
        bodyFile: URL? = nil,
        destination: URL? = nil,
        maxResponseBytes: Int? = nil,
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        streaming: StreamingOptions? = nil
    ) {
        self.bodyFile = bodyFile
        self.destination = destination
        self.maxResponseBytes = maxResponseBytes
        self.progress = progress
        self.streaming = streaming
    }

    /// The call's observers, told of redirects (``ConnectEvent/redirected(status:location:)``); `nil` when nobody
    /// watches the call. Not a transfer setting: a plain request stays plain.
    var observation: CallObservation?

    /// The part of the body a resumed download goes on from
    /// (``Connect/download(_:to:resuming:debugResponse:options:)``), with ``destination``.
    var resuming: PartialDownload?

    /// The URL a download's connector asked for, before the middlewares: what a ``PartialDownload`` it keeps is for.
    var downloadSource: URL? {
        get { shownDownloadSource?.url }
        set { shownDownloadSource = newValue.map { ShownURL(url: $0) } }
    }
    /// ``downloadSource``, redacted for reflection (a middleware's `print(context)`): a presigned URL's signature, and
    /// the secrets of the request it was the URL of when set from it (``setDownloadSource(of:)``).
    private(set) var shownDownloadSource: ShownURL?

    /// Sets ``downloadSource`` to `request`'s URL, shown with the secrets `request` carries hidden (a secret `.path`
    /// value the URL alone does not name as one).
    mutating func setDownloadSource(of request: ConnectRequest) {
        shownDownloadSource = ShownURL(url: request.url, hiding: SecretValues(of: request))
    }

    /// The newest part a download call holds, for its retries to resume from (``DownloadResumption``).
    var resumption: DownloadResumption?

    /// The bytes a download holds before the body of an answer with `statusCode` arrives: the part a resumed
    /// download goes on from, for its `206`; else none. The size limit and progress count them with the body, so
    /// that ``maxResponseBytes`` bounds the whole file however many times it was resumed.
    ///
    /// - Parameter statusCode: The response's status code.
    /// - Returns: The part's length, or 0.
    package func resumedBytes(statusCode: Int) -> Int64 {
        guard statusCode == 206, destination != nil, let resuming else { return 0 }
        return resuming.bytesReceived
    }

    /// Writes a download's body, read whole in memory (a transport that ignores transfer options, a recording
    /// replayed), to ``destination``: after the part it resumed for a `206` whose `Content-Range` goes on from it,
    /// in place of it otherwise. The file appears in one step, or not at all.
    ///
    /// - Parameters:
    ///   - body: The answer's body.
    ///   - response: The answer (its status and `Content-Range`).
    ///   - destination: The file to write.
    ///   - request: The request, for the errors.
    /// - Throws: ``ConnectError/Kind/badResponse`` for a `206` that is not the rest of the part's body, or that
    ///   answers a request that asked for no range (the part left as it was),
    ///   ``ConnectError/Kind/fileAccess`` when the file cannot be written.
    package func writeDownload(_ body: Data, of response: ConnectResponse, to destination: URL, request: URLRequest?)
        throws
    {
        try Self.writeDownload(
            body, of: response, resuming: resuming, to: destination, request: request.map { .foundation($0) },
            askedRange: request?.value(forHTTPHeaderField: "Range") != nil)
    }

    /// ``writeDownload(_:of:to:request:)`` for the part `part`: the one the transport was given, or, for the download
    /// method on a transport that ignores transfer options, the newest one the call's attempts kept.
    ///
    /// - Parameters:
    ///   - body: The answer's body.
    ///   - response: The answer (its status and `Content-Range`).
    ///   - part: The part the request went on from, if any; used up by a `206` that is its rest, discarded by a
    ///     whole body.
    ///   - destination: The file to write.
    ///   - request: The request, for the errors.
    ///   - askedRange: Whether the request carried a `Range` field.
    static func writeDownload(
        _ body: Data,
        of response: ConnectResponse,
        resuming part: PartialDownload?,
        to destination: URL,
        request: ConnectResponse.StoredRequest?,
        askedRange: Bool
    ) throws {
        let resumed = response.statusCode == 206 ? part : nil
        if response.statusCode == 206,
            let problem = PartialDownload.problem(
                resuming: resumed, askedRange: askedRange, head: response.head,
                length: PartialDownload.isContentCoded(response.storedHead.value(of: "Content-Encoding"))
                    ? nil : Int64(body.count))
        {
            throw ConnectError(.badResponse, message: problem, request: request, head: response.storedHead)
        }
        do {
            if let resumed {
                try resumed.place(at: destination, withPart: true, then: body)
            } else {
                try ReplacementFile.write(body, to: destination)
                part?.discard()
            }
        } catch {
            // With the answer's head: the server answered, and the caller learns how, though the body could not be
            // kept.
            var failure = ConnectError.fileAccess(error, url: destination, stored: request)
            failure.storedHead = response.storedHead
            throw failure
        }
    }

    /// Whether nothing beyond a plain in-memory exchange is asked for.
    var isPlain: Bool {
        bodyFile == nil && destination == nil && maxResponseBytes == nil && progress == nil && streaming == nil
            && maxRedirects == nil && idleTimeout == nil
    }

    /// The most body bytes a transport takes of a response with `statusCode` before it fails the request, or `nil`
    /// for no limit: ``maxResponseBytes``, unless ``keptErrorBodyLimit(statusCode:)`` cuts the body first.
    ///
    /// - Parameter statusCode: The response's status code.
    /// - Returns: The limit; going over it fails the request with ``ConnectError/Kind/responseTooLarge``.
    package func responseBodyLimit(statusCode: Int) -> Int? {
        keptErrorBodyLimit(statusCode: statusCode) == nil ? maxResponseBytes : nil
    }

    /// For a download answered with an error status, whose body stays in memory for the error handler instead of
    /// going to ``destination``: how much of it a transport keeps (1 MiB), the rest let go unread and the answer
    /// marked as cut (`ConnectResponse.bodyCut`), whatever ``maxResponseBytes`` allows the file. `nil` for any other
    /// response, and when ``maxResponseBytes`` is smaller: going over that fails, as for any body.
    ///
    /// - Parameter statusCode: The response's status code.
    /// - Returns: The most bytes of the body kept, or `nil`.
    func keptErrorBodyLimit(statusCode: Int) -> Int? {
        guard destination != nil, !(200..<300).contains(statusCode),
            (maxResponseBytes ?? .max) >= Self.downloadErrorBodyLimit
        else { return nil }
        return Self.downloadErrorBodyLimit
    }

    /// Cuts `response`'s body to ``keptErrorBodyLimit(statusCode:)`` when it is longer, or when `alreadyCut` (a
    /// recording of a body a transport cut), and says it was cut (`ConnectResponse.bodyCut`): what every transport
    /// keeps of a download's error page. Any other response is left as it is.
    ///
    /// - Parameters:
    ///   - response: The response read whole.
    ///   - request: The request, for the error that says the body was cut.
    ///   - alreadyCut: Whether the body is known to be only the start of the page, whatever its length.
    package func keepErrorBodyStart(of response: inout ConnectResponse, request: URLRequest?, alreadyCut: Bool = false)
    {
        guard let kept = keptErrorBodyLimit(statusCode: response.statusCode), alreadyCut || response.data.count > kept
        else { return }
        response.data = response.data.prefix(kept)
        response.bodyCut = ConnectError.responseTooLarge(limit: kept, request: request, response: response.response)
    }

    /// How much of a download's error body is kept in memory: 1 MiB. A download is expected to be large, and its
    /// limit is set for the file; its error page is not, and must not fill the memory meant for a file: its start says
    /// what went wrong.
    package static let downloadErrorBodyLimit = 1 << 20
}

/// How far a transfer has got.
public struct TransferProgress: Sendable, Equatable, CustomStringConvertible {
    /// Request-body bytes sent so far.
    public var bytesSent: Int64
    /// The request-body size, when known.
    public var totalBytesToSend: Int64?
    /// Response-body bytes received so far.
    public var bytesReceived: Int64
    /// The response-body size, when the server declared it.
    public var totalBytesToReceive: Int64?

    /// Creates a progress report.
    ///
    /// - Parameters:
    ///   - bytesSent: Bytes sent.
    ///   - totalBytesToSend: Bytes to send, if known.
    ///   - bytesReceived: Bytes received.
    ///   - totalBytesToReceive: Bytes to receive, if known.
    public init(bytesSent: Int64, totalBytesToSend: Int64?, bytesReceived: Int64, totalBytesToReceive: Int64?) {
        self.bytesSent = bytesSent
        self.totalBytesToSend = totalBytesToSend
        self.bytesReceived = bytesReceived
        self.totalBytesToReceive = totalBytesToReceive
    }

    /// The fraction of the upload done (0…1), if its size is known.
    public var uploadFraction: Double? {
        guard let total = totalBytesToSend else { return nil }
        return total == 0 ? 1 : min(1, Double(bytesSent) / Double(total))
    }

    /// The fraction of the download done (0…1), if its size is known.
    public var downloadFraction: Double? {
        guard let total = totalBytesToReceive else { return nil }
        return total == 0 ? 1 : min(1, Double(bytesReceived) / Double(total))
    }

    /// The fraction of the whole exchange done: the download's once receiving has begun, or when there is nothing to
    /// upload (a `GET`: `nil` until the body's size is known, not the `1` of an upload of nothing), else the upload's.
    public var fractionCompleted: Double? {
        if bytesReceived > 0 || totalBytesToReceive != nil || totalBytesToSend == 0 { return downloadFraction }
        return uploadFraction
    }

    /// A short human-readable form.
    public var description: String {
        let sent = totalBytesToSend.map { "\(bytesSent)/\($0)" } ?? "\(bytesSent)"
        let received = totalBytesToReceive.map { "\(bytesReceived)/\($0)" } ?? "\(bytesReceived)"
        return "sent \(sent) B, received \(received) B"
    }
}

extension ConnectError {
    /// The response body exceeded `limit` bytes: the error every transport reports for
    /// ``TransferOptions/maxResponseBytes``.
    ///
    /// - Parameters:
    ///   - limit: The limit that was exceeded.
    ///   - request: The request.
    ///   - response: The response whose body was refused.
    /// - Returns: An error of kind ``Kind/responseTooLarge``.
    public static func responseTooLarge(limit: Int, request: URLRequest?, response: HTTPURLResponse?) -> ConnectError {
        responseTooLarge(limit: limit, stored: request.map { .foundation($0) }, head: response.map { .foundation($0) })
    }

    /// ``responseTooLarge(limit:request:response:)`` for the core's exchange: its request and the answer's head
    /// kept as they are.
    static func responseTooLarge(limit: Int, sent request: ConnectRequest, answer: ConnectResponse) -> ConnectError {
        responseTooLarge(limit: limit, stored: .sent(request), head: answer.storedHead)
    }

    /// ``responseTooLarge(limit:request:response:)`` for an answer whose body was too long: its request and head.
    static func responseTooLarge(limit: Int, answer: ConnectResponse) -> ConnectError {
        responseTooLarge(limit: limit, stored: answer.storedRequest, head: answer.storedHead)
    }

    private static func responseTooLarge(
        limit: Int, stored request: ConnectResponse.StoredRequest?, head: ConnectResponse.Head?
    ) -> ConnectError {
        ConnectError(
            .responseTooLarge,
            message: "the response body exceeds the limit of \(limit) bytes",
            request: request,
            head: head
        )
    }

    /// A file of a transfer could not be read or written: the error every transport reports for
    /// ``TransferOptions/bodyFile`` and ``TransferOptions/destination``.
    ///
    /// - Parameters:
    ///   - error: What the file system reported.
    ///   - url: The file.
    ///   - request: The request.
    /// - Returns: An error of kind ``Kind/fileAccess``.
    public static func fileAccess(_ error: any Error, url: URL, request: URLRequest?) -> ConnectError {
        fileAccess(error, url: url, stored: request.map { .foundation($0) })
    }

    /// ``fileAccess(_:url:request:)`` with the request kept as it was reported.
    static func fileAccess(_ error: any Error, url: URL, stored request: ConnectResponse.StoredRequest?)
        -> ConnectError
    {
        ConnectError(
            .fileAccess,
            message: "could not access \(url.path): \(fileErrorText(error))",
            request: request,
            underlyingError: error
        )
    }

    /// What went wrong with a file, in words: the error's own, or, for Foundation's catch-all read or write error
    /// (one for an errno it has no file error for, EFBIG say), those of the errno under it, which on Linux are the
    /// only ones that say why (its own are "NSCocoaErrorDomain error 512").
    private static func fileErrorText(_ error: any Error) -> String {
        let reported = error as NSError
        let catchAll = [CocoaError.Code.fileReadUnknown.rawValue, CocoaError.Code.fileWriteUnknown.rawValue]
        guard reported.domain == NSCocoaErrorDomain, catchAll.contains(reported.code),
            let underlying = reported.userInfo[NSUnderlyingErrorKey] as? NSError,
            underlying.domain == NSPOSIXErrorDomain
        else { return error.localizedDescription }
        return underlying.localizedDescription
    }
}

extension TransferOptions {
    /// Fails with ``ConnectError/Kind/fileAccess`` when `destination` cannot receive a downloaded file: it is
    /// not a `file:` URL, it is an existing directory (which must never be replaced: its contents would be
    /// lost) or another file that is not a regular file (a pipe, a device, a socket), it names a directory that does
    /// not exist yet (`isDirectory: true`), its folder does not exist, or (on Linux) its name is longer than a file
    /// name can be there. Every transport checks before sending. A symbolic link at `destination` is
    /// not followed: it is the link that a download replaces, whatever it leads to.
    ///
    /// - Parameters:
    ///   - destination: The file a download is to be written to.
    ///   - request: The request, for the error.
    package static func checkDestination(_ destination: URL, request: URLRequest?) throws {
        try checkDestination(destination, stored: request.map { .foundation($0) })
    }

    /// ``checkDestination(_:request:)`` with the request kept as it was reported (the core's, for its exchange),
    /// made only for an error.
    static func checkDestination(
        _ destination: URL, stored request: @autoclosure () -> ConnectResponse.StoredRequest?
    ) throws {
        guard destination.isFileURL else {
            throw ConnectError(
                .fileAccess,
                message: "\(Redaction.url(destination, redacting: true)) is not a file URL: "
                    + "a download (or a written body) can only go to a local file",
                request: request(),
                underlyingError: CocoaError(.fileWriteUnsupportedScheme, userInfo: [NSURLErrorKey: destination])
            )
        }
        // The destination itself, never what a symbolic link there leads to (`lstat`): the link is what a download
        // replaces, as `rename(2)` does, so a link to a directory is replaced and the directory left as it is.
        var status = stat()
        let type = destination.withUnsafeFileSystemRepresentation { path -> mode_t? in
            guard let path, lstat(path, &status) == 0 else { return nil }
            return status.st_mode & S_IFMT
        }
        // A pipe, a device or a socket is no file to replace: the rename would put a regular file in its place (a
        // reader of the pipe left waiting; `/dev/null` gone, for a process allowed to write in `/dev`).
        if let type, type != S_IFREG, type != S_IFLNK, type != S_IFDIR {
            throw ConnectError(
                .fileAccess,
                message: "could not write \(destination.path): it is not a regular file (a pipe, a device or a "
                    + "socket), which the new file would replace",
                request: request(),
                underlyingError: POSIXError(.EINVAL)
            )
        }
        // A URL that says it names a directory (its path ends in `/`) and nothing there yet: the caller meant a folder
        // (to download into, say), and the rename would make a file of that name. One to something already there was
        // made by Foundation from what it found (a link to a directory, say), and is judged by that.
        if type == nil, destination.hasDirectoryPath {
            throw ConnectError(
                .fileAccess,
                message: "could not write \(destination.path): the URL names a directory (its path ends in \"/\"), "
                    + "and what is written is a file",
                request: request(),
                underlyingError: POSIXError(.EISDIR)
            )
        }
        if type == S_IFDIR {
            throw ConnectError(
                .fileAccess,
                message: "could not write \(destination.path): it is a directory",
                request: request(),
                underlyingError: POSIXError(.EISDIR)
            )
        }
        let folder = destination.deletingLastPathComponent()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory) else {
            throw ConnectError(
                .fileAccess,
                message: "could not write \(destination.path): the folder \(folder.path) does not exist",
                request: request(),
                underlyingError: CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: folder.path])
            )
        }
        guard isDirectory.boolValue else {
            throw ConnectError(
                .fileAccess,
                message: "could not write \(destination.path): \(folder.path) is not a folder",
                request: request(),
                underlyingError: POSIXError(.ENOTDIR)
            )
        }
        #if os(Linux)
            // A name longer than the folder's file system allows (255 bytes of UTF-8 on Linux's) is refused now, not by
            // the last step's rename once the whole body has come. Apple's file systems count characters, not bytes.
            let nameLength = destination.lastPathComponent.utf8.count
            let nameLimit = pathconf(folder.path, Int32(_PC_NAME_MAX))
            if nameLimit > 0, nameLength > nameLimit {
                throw ConnectError(
                    .fileAccess,
                    message: "could not write \(destination.path): its name is \(nameLength) bytes long, over the "
                        + "\(nameLimit) a file name can have there",
                    request: request(),
                    underlyingError: POSIXError(.ENAMETOOLONG)
                )
            }
        #endif
    }

    /// Fails with ``ConnectError/Kind/fileAccess`` when `file` cannot be sent as a request body: it is not a readable
    /// regular file (see ``bodyFileProblem(_:stored:)``). Every transport checks before reading it, the in-memory ones
    /// too: read whole, a pipe nobody writes to blocks the reading thread for ever.
    ///
    /// - Parameters:
    ///   - file: The file a body is to be sent from (``bodyFile``).
    ///   - request: The request, for the error.
    package static func checkBodyFile(_ file: URL, request: URLRequest?) throws {
        if let problem = bodyFileProblem(file, stored: request.map { .foundation($0) }) { throw problem }
    }

    /// The bytes of `file`, read whole as a body once checked (``checkBodyFile(_:request:)``) and opened as a regular
    /// file (``MultipartFormData/openRegularFile(_:)``: a pipe swapped in after the check is refused, not waited on).
    ///
    /// - Parameters:
    ///   - file: The file a body is to be sent from (``bodyFile``).
    ///   - request: The request, for the error.
    /// - Returns: The file's bytes.
    /// - Throws: A ``ConnectError`` of kind ``ConnectError/Kind/fileAccess``.
    package static func readBodyFile(_ file: URL, request: URLRequest?) throws -> Data {
        try checkBodyFile(file, request: request)
        do {
            let input = try MultipartFormData.openRegularFile(file)
            defer { try? input.close() }
            return try MultipartFormData.readToEnd(input)
        } catch var error as ConnectError {
            error.storedRequest = request.map { .foundation($0) }
            throw error
        } catch {
            throw ConnectError.fileAccess(error, url: file, request: request)
        }
    }

    /// Why `file` cannot be uploaded, or `nil` when it can: a readable regular file (the check multipart parts and
    /// every transport make: a directory, device or pipe has no length to announce, or no end).
    static func bodyFileProblem(_ file: URL, stored request: ConnectResponse.StoredRequest?) -> ConnectError? {
        do {
            _ = try MultipartFormData.regularFileSize(file)
        } catch var error as ConnectError {
            error.storedRequest = request
            return error
        } catch {
            return ConnectError.fileAccess(error, url: file, stored: request)
        }
        guard FileManager.default.isReadableFile(atPath: file.path) else {
            return ConnectError.fileAccess(POSIXError(.EACCES), url: file, stored: request)
        }
        return nil
    }

    /// Puts a finished download in place with one `rename(2)`: a file at `destination` is replaced
    /// atomically, never deleted first (if the rename fails, it is still there), and a directory there is
    /// refused (`EISDIR`), never removed. `temporary` must be in the same folder as `destination`.
    ///
    /// - Parameters:
    ///   - temporary: The finished download.
    ///   - destination: Where it goes.
    static func moveIntoPlace(_ temporary: URL, to destination: URL) throws {
        guard rename(temporary.path, destination.path) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }
}
