import Foundation

// MARK: - Requests built elsewhere

extension Connect {
    /// Sends a request built elsewhere (by an adapter such as `SwiftConnectOpenAPI`'s transport, or by hand) through
    /// this client, and reads its response as it arrives.
    ///
    /// Everything a connector's call gets applies: the client's middlewares and the call's, token refresh, the retry
    /// policy (a request whose body is a one-shot stream is never replayed), the queue, connectivity, the
    /// transport's pins, and the error handler unless ``RequestOptions/acceptsEveryStatus`` says every status is an
    /// answer. The client's default headers, and the server's for a request to the ``ServerConfiguration``'s origin,
    /// are added where the request has no field of that name; the options' headers replace the request's.
    ///
    /// ```swift
    /// let request = ConnectRequest(method: .get, url: URL(string: "https://api.example.com/v1/events")!)
    /// for try await event in connect.stream(request, name: "events").events {
    ///     print(event.data)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - request: The request, as it should leave the client (before the middlewares).
    ///   - name: What logs, queue listings and middlewares call the request (``RequestContext/connectorName``), such
    ///     as an OpenAPI operation's ID.
    ///   - options: Options for this call, over the client's (and its defaults for the request's method).
    ///   - streaming: Buffer limit, idle timeout and error-body limit.
    /// - Returns: The stream; the request starts at once.
    public func stream(
        _ request: ConnectRequest, name: String = "", options: RequestOptions = RequestOptions(),
        streaming: StreamingOptions = StreamingOptions()
    ) -> ResponseStream {
        let cancellationsBefore = inFlightCancellations
        let bodies = StreamedBodies()
        return trackingBody(
            of: ResponseStream(
                head: exchange(built: request, name: name, options: options, streaming: streaming, bodies: bodies)
                    .checked()),
            startedAfter: cancellationsBefore, bodies: bodies)
    }

    /// Sends a request built elsewhere through this client, as ``stream(_:name:options:streaming:)`` does, and
    /// returns a future of the whole response.
    ///
    /// ```swift
    /// var request = ConnectRequest(method: .post, url: URL(string: "https://api.example.com/v1/todos")!)
    /// request.body = .bytes(Data(#"{"title":"Buy milk"}"#.utf8))
    /// request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    /// let response = try await connect.response(for: request).value
    /// ```
    ///
    /// - Parameters:
    ///   - request: The request, as it should leave the client.
    ///   - name: What logs and middlewares call the request.
    ///   - options: Options for this call.
    /// - Returns: A future of the response; error statuses fail it as for ``request(_:debugResponse:)``, unless the
    ///   options accept every status.
    public func response(
        for request: ConnectRequest, name: String = "", options: RequestOptions = RequestOptions()
    ) -> Future<ConnectResponse> {
        exchange(built: request, name: name, options: options, streaming: nil).checked()
    }

    /// Adds the client's defaults to a built request and sends it through the retry loop and the pipeline.
    private func exchange(
        built request: ConnectRequest, name: String, options callOptions: RequestOptions,
        streaming: StreamingOptions?, bodies: StreamedBodies? = nil
    ) -> Exchange {
        let cancellationsBefore = inFlightCancellations
        let methodOptions = settings.methodOptions.isEmpty ? nil : settings.methodOptions[request.method]
        let requestOptions = methodOptions.map { $0.merged(with: callOptions) } ?? callOptions
        let all = options.merged(with: requestOptions)
        var request = request
        var transfer = TransferOptions(
            maxResponseBytes: all.maxResponseBytes ?? maxResponseBytes, progress: all.progress)
        transfer.streaming = streaming?.takingIdleTimeout(all.idleTimeout)
        transfer.streamedBodies = bodies
        transfer.maxRedirects = all.maxRedirects
        transfer.idleTimeout = TransferOptions.usableIdleTimeout(all.idleTimeout)
        // A configuration that cannot name a server fails every request, a built one too.
        if case .failure(let error)? = serverBaseURL {
            var refused = error as? ConnectError ?? ConnectError(.invalidRequest, message: "\(error)")
            refused.storedRequest = .sent(request)
            return Exchange(
                sent: Future(error: redactsSecrets ? refused : ConnectError.showingSecrets(refused)), check: nil)
        }
        let isForServer = self.isForServer(request.url)
        // The request's own fields win over every default; the call's options' headers win over the request's.
        let defaults =
            HTTPHeader.lastValuesWin(methodOptions?.headers ?? []) + (isForServer ? serverDefaultHeaders : [])
            + defaultHeaders
        // A blank `Content-Type` names none, at every level, as in a connector's headers: passed over, so that a
        // default's type goes, or none, never an empty field.
        request.headerFields.removeBlankContentTypes()
        for header in defaults where !header.isBlankContentType && request.value(forHTTPHeaderField: header.name) == nil
        {
            request.setValue(header.value, forHTTPHeaderField: header.name)
        }
        for header in callOptions.headers where !header.isBlankContentType {
            request.setValue(header.value, forHTTPHeaderField: header.name)
        }
        // Checked now, as a connector's are: a stage that answers without the transport (the cache) or holds the
        // request (the queue) must not see a field the wire would refuse.
        if let problem = request.wireProblem(bodyFile: nil) {
            return Exchange(
                sent: Future(error: redactsSecrets ? problem : ConnectError.showingSecrets(problem)), check: nil)
        }
        if isForServer, let configuration, !configuration.defaultQueryItems.isEmpty {
            do {
                if let url = try configuration.appendingDefaultQueryItems(to: request.url) { request.url = url }
            } catch {
                return Exchange(sent: Future(error: error), check: nil)
            }
        }
        // The call's options first, then the request's own timeout when it was set (it is not the default), then
        // the client's defaults for the method and its own: as for headers, what the request says beats a default.
        let own = request.timeoutInterval
        let ownTimeout = own == ConnectRequest.defaultTimeoutInterval ? nil : own
        if let deadline = callOptions.timeout ?? ownTimeout ?? methodOptions?.timeout ?? options.timeout {
            // `> 0` refuses NaN too.
            guard deadline > 0 else {
                let error = ConnectError.invalidRequest(.invalidTimeout(deadline), sent: request)
                return Exchange(
                    sent: Future(error: redactsSecrets ? error : ConnectError.showingSecrets(error)), check: nil)
            }
            request.timeoutInterval = deadline
        }
        if let idle = all.idleTimeout, !(idle > 0) {
            let error = ConnectError.invalidIdleTimeout(idle, sent: request)
            return Exchange(
                sent: Future(error: redactsSecrets ? error : ConnectError.showingSecrets(error)), check: nil)
        }
        if let error = transfer.negativeLimit(sent: request) {
            return Exchange(
                sent: Future(error: redactsSecrets ? error : ConnectError.showingSecrets(error)), check: nil)
        }
        var context = RequestContext(
            method: request.method, connectorName: name, options: contextDefaults.merged(with: requestOptions),
            logger: logger.forCall())
        context.transfer = transfer
        context.cacheRuleIsClientWide = isClientWideCacheRule(under: requestOptions)
        context.isForServer = isForServer
        if isForServer, configuration != nil { context.serverURL = try? serverBaseURL?.get() }
        return perform(
            request, context: context, all: all, debugResponse: false, startedAfter: cancellationsBefore)
    }
}
