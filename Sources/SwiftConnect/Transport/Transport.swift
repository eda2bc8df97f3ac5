import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Sends one request and delivers its response: the seam between SwiftConnect and the network.
///
/// ``URLSessionTransport`` is the real one. Tests inject a fake: `SwiftConnectTesting` ships
/// `FakeTransport`, and writing one takes a few lines:
///
/// ```swift
/// struct EchoTransport: Transport {
///     func send(_ request: URLRequest) -> Future<ConnectResponse> {
///         guard let response = ConnectResponse(request: request, statusCode: 200, data: request.httpBody ?? Data())
///         else { return Future(error: ConnectError(.transport, message: "no URL")) }
///         return Future(value: response)
///     }
/// }
/// let connect = Connect(transport: EchoTransport())
/// ```
///
/// A transport reports every failure to deliver a response (no connection, reset, timeout…) as a failed
/// future, preferably a ``ConnectError``; any HTTP status, 404 or 500 included, is a successful response.
/// It must honour ``Future/cancel()`` on the future it returns by stopping the work.
public protocol Transport: Sendable {
    /// Sends `request` and returns a future of its response.
    ///
    /// - Parameter request: The fully built request.
    /// - Returns: A future of the response; cancelling it cancels the exchange.
    func send(_ request: URLRequest) -> Future<ConnectResponse>

    /// Sends `request` with a body streamed from a file, a response written to a file, a size limit or
    /// progress reports, as `transfer` asks.
    ///
    /// The default implementation suits transports that work in memory: it reads ``TransferOptions/bodyFile``
    /// into the body (one that is not a readable regular file fails with ``ConnectError/Kind/fileAccess``, and a
    /// `Content-Length` that is not its length with ``ConnectError/Kind/invalidRequest``, as on every engine), sends
    /// with ``send(_:)``, then applies the size limit, writes the destination file and
    /// reports progress once at the end. ``URLSessionTransport`` streams instead.
    ///
    /// - Parameters:
    ///   - request: The fully built request.
    ///   - transfer: How to move the body and the response.
    /// - Returns: A future of the response.
    func send(_ request: URLRequest, transfer: TransferOptions) -> Future<ConnectResponse>

    /// Sends the client's request, in the core's own model, as `transfer` asks: what the client calls.
    ///
    /// The default implementation makes Foundation's `URLRequest` of it (``ConnectRequest/urlRequest``) and calls
    /// ``send(_:)`` or `send(_:transfer:)`: a transport that works with `URLRequest` needs nothing more. An engine
    /// of the core's exchange (`HTTPEngine`) takes the request as it is, and no `URLRequest` is made on its path.
    ///
    /// - Parameters:
    ///   - request: The fully built request, after every middleware.
    ///   - transfer: How to move the body and the response.
    /// - Returns: A future of the response.
    func send(_ request: ConnectRequest, transfer: TransferOptions) -> Future<ConnectResponse>
}

extension Transport {
    /// Makes the `URLRequest` and sends it with ``send(_:)``, or `send(_:transfer:)` when `transfer` asks for
    /// more than a plain exchange.
    public func send(_ request: ConnectRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
        declaringSecrets(
            of: request,
            on: transfer.isPlain ? wholeBody(send(request.urlRequest)) : send(request.urlRequest, transfer: transfer))
    }

    /// Sends in memory and applies the transfer options afterwards (see `Transport.send(_:transfer:)`).
    public func send(_ request: URLRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
        if transfer.isPlain { return wholeBody(send(request)) }
        return sendInMemory(request, transfer: transfer, using: self)
    }
}

/// `sent`, whose response and failure carry `request`'s ``ConnectRequest/declaredSecrets``, which a transport working
/// with Foundation's `URLRequest` cannot keep (a `URLRequest` has no place for them): hidden wherever the response,
/// or an error about it, is shown. `sent` itself when there are none.
func declaringSecrets(of request: ConnectRequest, on sent: Future<ConnectResponse>) -> Future<ConnectResponse> {
    let secrets = request.declaredSecrets
    guard !secrets.isEmpty else { return sent }
    let declared = sent.map { $0.declaring(secrets) }.mapError { error -> any Error in
        guard var failure = error as? ConnectError else { return error }
        failure.declaredSecrets += secrets
        return failure
    }
    // As `wholeBody`: `sent` is kept until the answer is over, so that cancelling reaches it.
    declared.whenComplete { _ in withExtendedLifetime(sent) {} }
    return declared
}

/// `sent`, a streamed body read whole into `data`: a caller that does not stream gets the body, as from an engine,
/// from a transport that answers with a stream (a fake's). An answer in memory goes through as it is.
func wholeBody(_ sent: Future<ConnectResponse>) -> Future<ConnectResponse> {
    if case .success(let response)? = sent.result, response.bodyStream == nil { return sent }
    let whole = sent.flatMap { response in
        guard let stream = response.bodyStream else { return Future(value: response) }
        return Future { try await collected(stream, of: response, limit: nil) }
    }
    // A future points at the one it came from weakly: `sent` is kept until the answer is over, so that cancelling
    // reaches a transport that keeps no other reference to it.
    whole.whenComplete { _ in withExtendedLifetime(sent) {} }
    return whole
}

/// `response` with `stream`, its body, read into `data`; past `limit` bytes, ``ConnectError/Kind/responseTooLarge``.
/// With `kept`, only the body's first `kept` bytes are read, the rest let go and the answer marked as cut (a
/// download's error body, `TransferOptions.keptErrorBodyLimit(statusCode:)`).
private func collected(_ stream: ResponseBodyStream, of response: ConnectResponse, limit: Int?, kept: Int? = nil)
    async throws -> ConnectResponse
{
    var data = Data()
    var cut: ConnectError?
    do {
        while let chunk = try await stream.next() {
            if let kept, data.count + chunk.count > kept {
                data.append(chunk.prefix(kept - data.count))
                cut = ConnectError.responseTooLarge(limit: kept, answer: response)
                stream.cancel()
                break
            }
            data.append(chunk)
            if let limit, data.count > limit { throw ConnectError.responseTooLarge(limit: limit, answer: response) }
        }
    } catch {
        stream.cancel()
        throw error
    }
    var whole = response
    whole.bodyStream = nil
    whole.data = data
    whole.bodyCut = cut
    return whole
}

/// The in-memory way to honour transfer options: read the body file, send, then check the size, write the
/// destination and report progress once.
func sendInMemory(_ request: URLRequest, transfer: TransferOptions, using transport: any Transport) -> Future<
    ConnectResponse
> {
    var request = request
    // Refused unsent, as the client and every engine's exchange refuse it: a transport called directly has no client
    // to check it first, and a negative size limit would otherwise fail even an empty body, after sending it.
    if let converted = try? ConnectRequest(request), let error = transfer.negativeLimit(sent: converted) {
        return Future(error: error)
    }
    if let destination = transfer.destination {
        do {
            try TransferOptions.checkDestination(destination, request: request)
        } catch {
            return Future(error: error)
        }
    }
    if let file = transfer.bodyFile {
        do {
            // Refused as every engine refuses it (a directory, a pipe: no length, maybe no end), not read and left to
            // Foundation's words ("You don't have permission" for a pipe on Linux).
            let body = try TransferOptions.readBodyFile(file, request: request)
            // A `Content-Length` of the caller's is held to the file's length, as every engine's exchange holds it:
            // sent beside the body read whole, it would frame another body.
            if let problem = (try? ConnectRequest(request))?.contentLengthProblem(bodyLength: Int64(body.count)) {
                throw problem
            }
            request.httpBody = body
        } catch let error as ConnectError {
            return Future(error: error)
        } catch {
            return Future(error: ConnectError.fileAccess(error, url: file, request: request))
        }
    }
    let sentBytes = Int64(request.httpBody?.count ?? 0)
    // The request's timeout, from now, or the call's deadline if sooner: a streamed body outlives the call's future,
    // which completes with the head, so the body is held to them here, as an engine's exchange holds it.
    let deadline =
        transfer.streaming == nil
        ? nil : TransportDeadline(seconds: request.timeoutInterval, notAfter: transfer.callDeadline)
    let sent = transport.send(request)
    let answer = sent.flatMap { [request] response -> Future<ConnectResponse> in
        // A one-shot body is read by the transport as it sends it: what went is the body of the request its answer
        // carries (`FakeTransport` reads it whole), or, from a transport that says nothing of it, none counted.
        let sentBytes =
            request.httpBody == nil && request.httpBodyStream != nil
            ? Int64(response.request.httpBody?.count ?? 0) : sentBytes
        guard let stream = response.bodyStream else {
            return Future(result: Result { try inMemory(response, to: request, transfer: transfer, sent: sentBytes) })
        }
        // A transport that answers with a stream (a fake's): its body meets the limits and reports progress as an
        // engine's does, streamed on if the caller streams, else read whole first.
        let limit = transfer.responseBodyLimit(statusCode: response.statusCode)
        if let options = transfer.streaming {
            var relayed = response
            // Nothing to count: the transport's own stream, its back-pressure as it is.
            if limit != nil || transfer.progress != nil {
                relayed.bodyStream = counted(
                    stream, of: response, options: options, limit: limit, transfer: transfer, sent: sentBytes)
            }
            if let deadline, let body = relayed.bodyStream {
                bound(body, by: deadline, of: request)
            }
            return Future(value: relayed)
        }
        return Future {
            let kept = transfer.keptErrorBodyLimit(statusCode: response.statusCode)
            let whole = try await collected(stream, of: response, limit: limit, kept: kept)
            return try inMemory(whole, to: request, transfer: transfer, sent: sentBytes)
        }
    }
    // Kept until the answer is over, as in `wholeBody`: cancelling must reach the transport's own future.
    answer.whenComplete { _ in withExtendedLifetime(sent) {} }
    return answer
}

/// Ends `body` with ``ConnectError/Kind/timedOut`` when `deadline` passes before it does (after the chunks it holds,
/// as an engine's exchange ends it), stopping the transport's transfer.
private func bound(_ body: ResponseBodyStream, by deadline: TransportDeadline, of request: URLRequest) {
    deadline.start { [weak body] in
        body?.expire(with: ConnectError.transportFailure(.deadlinePassed(after: nil), stored: .foundation(request)))
    }
    body.whenEnded { deadline.cancel() }
}

/// `source`, relayed to a stream of `options` as the reader takes it: its bytes counted against `limit` (the stream
/// fails with ``ConnectError/Kind/responseTooLarge`` past it) and reported as progress, the body's end (its size as
/// the total) once, in the last report, as an engine's exchange reports it. `sentBytes` went out before the head.
private func counted(
    _ source: ResponseBodyStream, of response: ConnectResponse, options: StreamingOptions, limit: Int?,
    transfer: TransferOptions, sent sentBytes: Int64
) -> ResponseBodyStream {
    let relay = ResponseBodyStream(options: options)
    let pump = Task {
        var received: Int64 = 0
        func report(ending: Bool) {
            transfer.progress?(
                TransferProgress(
                    bytesSent: sentBytes, totalBytesToSend: sentBytes, bytesReceived: received,
                    totalBytesToReceive: ending ? received : nil))
        }
        do {
            while let chunk = try await source.next() {
                received += Int64(chunk.count)
                if let limit, received > Int64(limit) {
                    throw ConnectError.responseTooLarge(limit: limit, answer: response)
                }
                // An empty chunk would repeat the report before it.
                if !chunk.isEmpty { report(ending: false) }
                guard await relay.send(chunk) else { return source.cancel() }
            }
            report(ending: true)
            relay.finish()
        } catch {
            source.cancel()
            relay.finish(throwing: error)
        }
    }
    relay.setCancelHandler {
        pump.cancel()
        source.cancel()
    }
    return relay
}

/// What the in-memory default makes of a whole response: the limits, one progress report, a finished stream for a
/// streaming caller, or the body written to a download's destination.
private func inMemory(
    _ response: ConnectResponse, to request: URLRequest, transfer: TransferOptions, sent sentBytes: Int64
)
    throws -> ConnectResponse
{
    // The limit every engine applies: the caller's; a download's error body is cut to its first MiB instead.
    // A resumed download's part counts with the body, for the limit and for progress: the whole file.
    let resumedBytes = transfer.resumedBytes(statusCode: response.statusCode)
    if let limit = transfer.responseBodyLimit(statusCode: response.statusCode),
        resumedBytes + Int64(response.data.count) > Int64(limit)
    {
        throw ConnectError.responseTooLarge(limit: limit, request: request, response: response.response)
    }
    var response = response
    transfer.keepErrorBodyStart(of: &response, request: request)
    let received = resumedBytes + Int64(response.data.count)
    // The one report, once the answer is complete: for a download, once its file is in place.
    let reportProgress = {
        transfer.progress?(
            TransferProgress(
                bytesSent: sentBytes,
                totalBytesToSend: sentBytes,
                bytesReceived: received,
                totalBytesToReceive: received
            )
        )
    }
    if transfer.streaming != nil {
        // No streaming here: the whole body, delivered as a finished stream.
        reportProgress()
        var streamed = response
        streamed.bodyStream = .finished(with: response.data)
        streamed.data = Data()
        return streamed
    }
    guard let destination = transfer.destination, response.isSuccess else {
        reportProgress()
        return response
    }
    try transfer.writeDownload(response.data, of: response, to: destination, request: request)
    reportProgress()
    var written = response
    written.data = Data()
    written.fileURL = destination
    return written
}
