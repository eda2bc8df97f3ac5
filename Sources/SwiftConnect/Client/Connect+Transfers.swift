import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// MARK: - Uploads and downloads

extension Connect {
    /// Bodies up to this size are encoded in memory; larger ones, and any with a file on disk, are written to a
    /// temporary file and streamed from it.
    static let inMemoryMultipartLimit: Int64 = 8 << 20

    /// Uploads files as a `multipart/form-data` body to the endpoint a connector describes, as in the usage
    /// guide. The connector's `.form` parameters become text fields, sent before the files.
    ///
    /// A connector's `.jsonObject` whose top level is a JSON object (a profile sent with an avatar, say) becomes
    /// one text field per key, in the order the connector's `jsonEncoder` wrote them (give it `.sortedKeys` for
    /// a fixed order): a string value as is, a
    /// number, `true`/`false` or `null` as its JSON text, a nested object or array as its JSON text. A ``JSONObject``
    /// given as the parameters of a request whose `Content-Type` is `application/x-www-form-urlencoded` (the
    /// connector's, the options', the client's default headers') is a form there, and gives the fields that form
    /// would: an array one field per value, `null` none, and a nested object fails with
    /// ``ConnectError/InvalidRequestReason/invalidParameter(key:reason:)``, nothing sent. Any other
    /// top level (an array, a lone value) fails with ``ConnectError/InvalidRequestReason/bodyEncodingFailed(_:)``
    /// and a `.body` parameter with ``ConnectError/InvalidRequestReason/multipleBodies``, before anything is sent.
    /// A ``JSONObject`` on a DELETE goes in the query, as it does for any DELETE, and makes no text fields.
    /// Plain fields can also be given in order with ``upload(files:fields:to:boundary:debugResponse:options:)``.
    ///
    /// ```swift
    /// let photo = File(name: "beach.jpg", key: "photo", mimeType: .jpg, data: jpeg)
    /// Connect.default.upload(files: [photo], to: AlbumConnector.addPhoto(albumID: 7))
    ///
    /// // One text field per key ("name": "Ada" and "age": "36", in the encoder's order), then the file "avatar".
    /// struct Profile: Encodable { let name: String; let age: Int }
    /// let avatar = File(name: "me.png", key: "avatar", mimeType: .png, data: png)
    /// Connect.default.upload(files: [avatar], to: ProfileConnector.update(Profile(name: "Ada", age: 36)))
    /// ```
    ///
    /// - Parameters:
    ///   - files: The files; `nil` or empty sends only the fields.
    ///   - request: The connector; its method is used as is (usually POST): a GET, HEAD or TRACE, which carries no
    ///     body, fails with ``ConnectError/InvalidRequestReason/bodyNotAllowed(method:)``, nothing sent. Its `.form`
    ///     parameters, or the keys of its `.jsonObject`, become text fields.
    ///   - debugResponse: Logs the request and response.
    /// - Returns: A future of the response body, which knows its response (see ``Future/decoded(toType:decoder:)``).
    public func upload(
        files: [File]?,
        to request: any Connector,
        debugResponse: Bool = false
    ) -> Future<Data> {
        upload(files: files, fields: [], to: request, debugResponse: debugResponse)
    }

    /// Uploads files and text fields as a `multipart/form-data` body.
    ///
    /// Files on disk are streamed: the body is written to a temporary file in 1 MiB pieces and sent from
    /// there, so memory stays bounded whatever the file size. The `Content-Length` is always known, and sent: one
    /// that the connector's headers or the options set is held to the multipart body (another length fails with
    /// ``ConnectError/InvalidRequestReason/invalidHeader(name:)``, nothing sent). Retries
    /// resend the same temporary file, which is deleted when the request completes. That file is written before the
    /// call starts, on the calling thread (a copy of every file, at disk speed): upload large files from a background
    /// task, not from the main thread.
    ///
    /// ```swift
    /// connect.upload(
    ///     files: [File(key: "video", fileURL: movieURL)],
    ///     fields: [("title", "Holiday")],
    ///     to: VideoConnector.create,
    ///     options: RequestOptions(progress: { print($0.uploadFraction ?? 0) })
    /// )
    /// ```
    ///
    /// - Parameters:
    ///   - files: The files.
    ///   - fields: Text fields, in order, sent before the files (after the connector's fields). A field or a file
    ///     with an empty name fails with ``ConnectError/InvalidRequestReason/invalidParameter(key:reason:)``, nothing
    ///     sent.
    ///   - request: The connector; a GET, HEAD or TRACE fails with
    ///     ``ConnectError/InvalidRequestReason/bodyNotAllowed(method:)``. Its `.form` parameters, or the keys of a
    ///     `.jsonObject` whose top level is a JSON object, become text fields first (see
    ///     ``upload(files:to:debugResponse:)``); any other
    ///     `.jsonObject` fails with ``ConnectError/InvalidRequestReason/bodyEncodingFailed(_:)``, a `.body`
    ///     parameter with ``ConnectError/InvalidRequestReason/multipleBodies``.
    ///   - boundary: The multipart boundary; random by default.
    ///   - debugResponse: Logs the request and response.
    ///   - options: Options for this call, such as `progress`.
    /// - Returns: A future of the response body, which knows its response (see ``Future/decoded(toType:decoder:)``).
    public func upload(
        files: [File]?,
        fields: [(String, String)],
        to request: any Connector,
        boundary: String = MultipartFormData.randomBoundary(),
        debugResponse: Bool = false,
        options: RequestOptions = RequestOptions()
    ) -> Future<Data> {
        var connectorFields: [(String, String)] = []
        var hasJSONObject = false
        var hasRawBody = false
        for parameter in request.parameters?.parameterList ?? [] {
            switch parameter {
            case .form(let key, let value): connectorFields.append((key, value))
            case .jsonObject: hasJSONObject = true
            case .body, .encoded: hasRawBody = true
            case .query, .path: break
            }
        }
        guard !hasRawBody else { return body(of: Future(error: ConnectError.invalidRequest(.multipleBodies))) }
        // A `JSONObject` on a DELETE is placed in the query, as for any DELETE: there is no body to read fields from.
        if request.parameters is JSONObject, JSONObject.placesInQuery(method: request.method.rawValue) {
            hasJSONObject = false
        }
        // Only a `JSONObject` given as the parameters is placed by the content type (a form's fields under a form
        // type); a `Parameter.jsonObject` is JSON whatever the header says.
        let isPlacedByContentType = request.parameters is JSONObject

        var temporaryFile: URL?
        let response = start(request, debugResponse: debugResponse, options: options, bodyIsReplaced: true) {
            request, transfer in
            // Refused before the body is built (the wire check would refuse it after, with a misleading error).
            if request.method.refusesBody {
                throw ConnectError.invalidRequest(.bodyNotAllowed(method: request.method.rawValue), sent: request)
            }
            var form = MultipartFormData(boundary: boundary)
            if hasJSONObject {
                // The request carries the `.jsonObject` as the connector's encoder wrote it: its keys, in that
                // order, become the text fields. A route whose content type is a URL-encoded form carries it as one
                // (a `JSONObject` is placed by the content type); a `Parameter.jsonObject` stays JSON whatever the
                // header says, and is read as JSON (one whose top level is no object is refused, not read as a form).
                do {
                    let body = request.httpBody ?? Data()
                    let type = request.headerFields[.contentType].map(ConnectResponse.mediaType(of:))
                    connectorFields =
                        type == "application/x-www-form-urlencoded" && isPlacedByContentType
                        ? JSONFormFields.fields(ofForm: body) : try JSONFormFields.fields(of: body)
                } catch var error as ConnectError {
                    error.sentRequest = request
                    throw error
                }
            }
            for (name, value) in connectorFields + fields { form.append(field: name, value: value) }
            for file in files ?? [] { form.append(file) }
            request.setValue(form.contentType, forHTTPHeaderField: "Content-Type")
            // The length is that of the body as built, never a size read earlier: a file on disk that grows or
            // shrinks meanwhile would otherwise make the header disagree with the body (a hang or a cut body).
            let length: Int64
            if form.isInMemory, try form.contentLength() <= Connect.inMemoryMultipartLimit {
                let data = try form.encodedData()
                length = Int64(data.count)
                request.httpBody = data
            } else {
                let file = FileManager.default.temporaryDirectory
                    .appendingPathComponent("SwiftConnect-upload-\(UUID().uuidString).multipart")
                temporaryFile = file
                // Created readable by the owner only: it holds the user's files and fields.
                length = try form.writePrivately(to: file)
                request.httpBody = nil
                transfer.bodyFile = file
            }
            // A length the caller set (the connector's, the options') is held to this body, as a plain request's is
            // to its own: one that disagrees would frame another body, and replacing it would hide the mistake.
            if let problem = request.contentLengthProblem(bodyLength: length) { throw problem }
            request.setValue(String(length), forHTTPHeaderField: "Content-Length")
        }
        if let file = temporaryFile {
            response.always { try? FileManager.default.removeItem(at: file) }
        }
        return body(of: response)
    }

    /// Downloads the response body of a connector's request straight to a file, without holding it in memory.
    ///
    /// One limit: on Linux, `URLSessionTransport` cannot slow a transfer down (FoundationNetworking hands over every
    /// byte as it comes), so what arrives faster than the file is written waits in memory: a 256 MiB download over
    /// loopback, written more slowly than it came, held nearly all of it. `AsyncHTTPClientTransport` reads no faster
    /// than the file is written.
    ///
    /// The file appears (replacing any file there in one step; a symbolic link there is replaced, never followed,
    /// and what it leads to is left as it was) only when the whole body has arrived with a
    /// 2xx status; an error status is handled by the error handler as usual and leaves no file (one the error
    /// handler lets through fails with ``ConnectError/Kind/httpStatus``). The handler gets the error body's first
    /// MiB, the rest left unread: the default handler's error then says the body was cut. A destination
    /// that is not a `file:` URL, that is an existing directory, pipe, device or socket, that names a directory
    /// (`isDirectory: true`), whose folder does not exist, or (on Linux) whose name is longer than a file name can be
    /// there fails with ``ConnectError/Kind/fileAccess`` before anything is sent.
    ///
    /// A timeout, a failure or a cancellation before the whole body has arrived leaves the destination as it was. When
    /// part of a successful body had arrived (the connection was lost, the transport failed), and the answer named a
    /// strong `ETag` or `Last-Modified` (and was neither content-encoded, `Content-Encoding: gzip`, whose bytes
    /// arrive decoded where a `Range` counts coded ones, nor a `206` to a `Range` of your own), the error's
    /// ``ConnectError/partialDownload`` keeps that part, to go on from
    /// with ``download(_:to:resuming:debugResponse:options:)``. So does the call's deadline, as URLSession's timeout
    /// gives resume data. A retry (the client's ``RetryPolicy`` retries a lost connection and a timeout) resumes from
    /// that part itself, rather than starting the body again; the failure that ends the call hands over the newest
    /// part. A cancellation keeps nothing.
    /// Once the body is moved into place (the call's last step, before the last progress report), the new file
    /// stays: a cancellation or the deadline landing then is still what the future reports. The client's
    /// validators and processors run after that step too: one that rejects the answer fails the call, and the new
    /// file stays.
    ///
    /// ```swift
    /// let file = try await connect.download(ReportConnector.pdf(id: 3), to: reportURL).value
    /// ```
    ///
    /// - Parameters:
    ///   - connector: The connector.
    ///   - destination: Where to write the body.
    ///   - debugResponse: Logs the request and response.
    ///   - options: Options for this call, such as `progress` and `maxResponseBytes`.
    /// - Returns: A future of `destination`, once written.
    public func download(
        _ connector: any Connector,
        to destination: URL,
        debugResponse: Bool = false,
        options: RequestOptions = RequestOptions()
    ) -> Future<URL> {
        download(connector, to: destination, from: nil, debugResponse: debugResponse, options: options)
    }

    /// Resumes a download that failed part-way: asks the server for the rest of the body with `Range` and `If-Range`
    /// (the part's `ETag` or `Last-Modified`), and writes the part and the rest to `destination`.
    ///
    /// - A `206` whose `Content-Range` starts where the part ends: the new bytes follow the part's, and the whole
    ///   file is moved to `destination` once complete, as ``download(_:to:debugResponse:options:)`` does.
    /// - A `200`: the server sent the whole body again (it ignores ranges, or the body changed since the part): the
    ///   part is dropped, and the new body written whole.
    /// - A `416` whose `Content-Range` is `bytes */N` with `N` the part's length: the part was the whole body, and
    ///   goes to `destination`.
    /// - Any other `416`, or a `206` for another range or another length: ``ConnectError/Kind/badResponse`` saying
    ///   what was asked and what came, with the part in the error's ``ConnectError/partialDownload``, untouched.
    ///
    /// A part made for another URL than the connector's fails with ``ConnectError/Kind/invalidRequest``, one whose
    /// file is gone or shorter than ``PartialDownload/bytesReceived`` with ``ConnectError/Kind/fileAccess``, as a
    /// destination it cannot use does: before anything is sent. Whenever the resume fails, its error's
    /// ``ConnectError/partialDownload`` holds every byte so far: a newer part when more arrived (the part it started
    /// from is then removed), else this part, as long as its file is there. Once the download succeeds, the part's
    /// file is removed. A retry after a resume that was cut again goes on from the newer part. Progress counts the
    /// whole file: the part's bytes are reported received first. So does the
    /// size limit (``RequestOptions/maxResponseBytes``): a resume whose part and rest pass it fails with
    /// ``ConnectError/Kind/responseTooLarge``, the part kept.
    ///
    /// ```swift
    /// do {
    ///     _ = try await connect.download(ReportConnector.pdf(id: 3), to: reportURL).value
    /// } catch let error as ConnectError {
    ///     guard let partial = error.partialDownload else { throw error }
    ///     _ = try await connect.download(ReportConnector.pdf(id: 3), to: reportURL, resuming: partial).value
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - connector: The connector whose request the part answered.
    ///   - destination: Where to write the whole body.
    ///   - partial: The part kept by the download that failed (``ConnectError/partialDownload``).
    ///   - debugResponse: Logs the request and response.
    ///   - options: Options for this call, such as `progress` and `maxResponseBytes`.
    /// - Returns: A future of `destination`, once written.
    public func download(
        _ connector: any Connector,
        to destination: URL,
        resuming partial: PartialDownload,
        debugResponse: Bool = false,
        options: RequestOptions = RequestOptions()
    ) -> Future<URL> {
        download(connector, to: destination, from: partial, debugResponse: debugResponse, options: options)
    }

    /// Both download methods: from the start, or from the app's `partial`. A retry after an attempt that kept a part
    /// resumes from that part (``DownloadResumption``); the failure that ends the call hands over the newest part.
    private func download(
        _ connector: any Connector, to destination: URL, from partial: PartialDownload?, debugResponse: Bool,
        options: RequestOptions
    ) -> Future<URL> {
        let resumption = DownloadResumption(starting: partial)
        return start(connector, debugResponse: debugResponse, options: options) { request, transfer in
            try TransferOptions.checkDestination(destination, stored: .sent(request))
            if let partial {
                guard request.url.absoluteString == partial.source.url.absoluteString else {
                    throw ConnectError(
                        .invalidRequest,
                        message: "the partial download was made for \(partial.source), not for "
                            + "\(Redaction.url(request.url, redacting: true)): resume it with the request it answered",
                        request: .sent(request))
                }
                try partial.checkFile(request: request)
                try partial.checkIsNot(destination: destination, request: request)
                // Each attempt sets these from the newest part (`RetryingCall`); set here too, the call's debug log
                // and observers show the request as the first attempt sends it.
                request.setValue(partial.range, forHTTPHeaderField: "Range")
                request.setValue(partial.validator, forHTTPHeaderField: "If-Range")
            }
            transfer.destination = destination
            transfer.setDownloadSource(of: request)
            transfer.resuming = partial
            transfer.resumption = resumption
        }.map { response in
            // An error status the error handler let through is still no file: its body (an error page) must not
            // replace what is at the destination.
            guard response.isSuccess else { throw ConnectError.httpStatus(response) }
            // The part the last attempt went on from: the app's, or one an earlier attempt kept.
            let part = resumption.latest
            guard let file = response.fileURL else {
                // A transport that ignores transfer options: the part (for a 206) and what arrived in memory.
                try TransferOptions.writeDownload(
                    response.data, of: response, resuming: part, to: destination, request: response.storedRequest,
                    askedRange: response.storedRequest.request?.value(forHTTPHeaderField: "Range") != nil)
                partial?.discard()
                resumption.takeTheCalls()?.discard()
                return destination
            }
            // The engine used up the part it resumed; the app's goes too when a newer one took its place, and so does
            // one an attempt stopped after that (a hedge's, say) kept.
            partial?.discard()
            resumption.takeTheCalls()?.discard()
            return file
        }.recover { error -> Future<URL> in
            var callsPart = resumption.takeTheCalls()
            guard var failure = error as? ConnectError else {
                callsPart?.discard()
                throw error
            }
            if failure.isCancelled {
                // Nobody resumes from the part of a cancelled call (the app's stays the app's).
                callsPart?.discard()
                callsPart = nil
            }
            // The newest part: the failure's own, else the one an earlier attempt kept, else the app's, while its
            // file is there. It holds every byte of the others, which go.
            let isThere = { (part: PartialDownload) in FileManager.default.fileExists(atPath: part.fileURL.path) }
            let latest =
                failure.partialDownload ?? callsPart.flatMap { isThere($0) ? $0 : nil }
                ?? partial.flatMap { isThere($0) ? $0 : nil }
            for older in [callsPart, partial].compactMap({ $0 }) where older != latest { older.discard() }
            guard failure.statusCode == 416, let latest else {
                failure.partialDownload = latest
                throw failure
            }
            // A 416 answers a range that starts at the body's end: the part is the whole body, when the answer says
            // so of the same version.
            let head = failure.storedHead
            let contentRange = head?.value(of: "Content-Range")
            if let problem = latest.unsatisfiedRangeProblem(contentRange, field: { head?.value(of: $0) }) {
                failure = ConnectError(
                    .badResponse,
                    message: problem,
                    request: failure.storedRequest, head: failure.storedHead, body: failure.body,
                    underlyingError: failure)
                failure.partialDownload = latest
                throw failure
            }
            do {
                try latest.place(at: destination, withPart: true, then: Data())
            } catch {
                throw ConnectError.fileAccess(error, url: destination, stored: failure.storedRequest)
            }
            return Future(value: destination)
        }
    }
}
