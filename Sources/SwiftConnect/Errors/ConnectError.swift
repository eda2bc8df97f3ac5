import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The one error type SwiftConnect fails with.
///
/// Every failure names the stage that failed (``Kind``), a human-readable ``message``, and whatever context
/// was known at that point: the request, the response, the body, the underlying error.
///
/// ```swift
/// connect.request(TodoConnector.get(id: 1)).decoded(toType: Todo.self).observe { result in
///     if case .failure(let error as ConnectError) = result {
///         switch error.kind {
///         case .httpStatus, .serverMessage: print("server said no:", error.statusCode ?? 0, error.message)
///         case .cancelled: break
///         default: print(error)
///         }
///     }
/// }
/// ```
public struct ConnectError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The stage of a request that failed. Switch over it with a `default` clause: kinds may be added.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// The request could not be built: a missing path value, an invalid header, two bodies…
        /// Nothing was sent.
        case invalidRequest
        /// The transport failed before a complete response arrived, for a reason none of the finer kinds
        /// below names (``cannotConnect``, ``nameResolution``, ``connectionLost``, ``secureConnection``,
        /// ``untrustedCertificate``, ``badResponse``). ``ConnectError/underlyingError`` holds the engine's own error
        /// (a `URLError` from ``URLSessionTransport``, a SwiftNIO or AsyncHTTPClient error from the AsyncHTTPClient
        /// engine). ``ConnectError/isTransportFailure`` is `true` for this kind and the finer ones.
        case transport
        /// No connection could be opened: the server refused it, the host is unreachable, or the device is offline.
        /// Nothing went out on that connection, but the call may have reached a server before it: a redirect led to
        /// the host that failed, or, through URLSession on Linux, libcurl was sending the request again by itself on
        /// a new connection after a kept-alive one closed under it.
        case cannotConnect
        /// The server's host name did not resolve (no such name, or the resolver failed). Nothing was sent to that
        /// host, but a redirect may have led there from a server that had the request.
        case nameResolution
        /// The connection closed or was reset before the response was complete.
        case connectionLost
        /// The TLS handshake failed for a reason other than the server's certificate (a reset during the
        /// handshake, no common protocol version or cipher).
        case secureConnection
        /// The server's certificate is not trusted: an unknown authority, expired, or for another host. Retrying
        /// does not help. (A certificate that matches none of the host's pins is ``certificatePinning``.)
        case untrustedCertificate
        /// The server's answer is not valid HTTP (a status that is not three digits, 100 to 999, from an engine or
        /// a transport of your own), or its body's framing cannot be trusted (no single valid `Content-Length`, a
        /// body cut short by a proxy).
        case badResponse
        /// The server answered with a status outside 200..<300 and no message the error handler recognised.
        case httpStatus
        /// The server answered with an error status and a message the error handler extracted.
        case serverMessage
        /// The body could not be decoded into the requested type.
        case decoding
        /// The request was cancelled: its future, or any future chained on it, by ``Future/cancel()`` (or the task
        /// awaiting its ``Future/value``), or by ``Connect/cancelAllRequests()``.
        case cancelled
        /// The call did not complete within the request's timeout (``Connector/timeout``, the call's deadline:
        /// its attempts and the waits between them), or its transport gave up an attempt at the request's
        /// `timeoutInterval` and no retry followed.
        /// Also a request's future, or a future chained on it, that did not complete within the limit of
        /// ``Future/timeout(after:on:)``: that error has no ``ConnectError/request`` and no
        /// ``ConnectError/underlyingError``.
        case timedOut
        /// A middleware, validator or processor rejected the request or response.
        case rejected
        /// The server rejected the credentials and they could not be renewed: the refresh of an
        /// ``AuthenticationMiddleware`` failed (``ConnectError/underlyingError`` holds its error), or the
        /// request was rejected again with the renewed credential (``ConnectError/response`` holds that answer).
        case authenticationFailed
        /// The response body exceeded the size limit (its declared `Content-Length`, or the bytes received so far);
        /// the request fails and its transfer is stopped. On Linux, FoundationNetworking stops the transfer only
        /// after reading what has already arrived: a body that comes faster than that (loopback, a fast network)
        /// may be downloaded in full before the connection closes.
        case responseTooLarge
        /// A file to upload or a download destination could not be read or written.
        case fileAccess
        /// Certificate pinning (``CertificatePins``) stopped the request before it was sent: the server's
        /// certificates match none of the host's pins, the engine cannot check them, or the pins are malformed.
        case certificatePinning
        /// A ``ConnectivityMiddleware`` with the ``ConnectivityPolicy/failFast`` policy held the request back because
        /// its monitor reports the network gone: nothing was sent. ``ConnectError/urlError`` is
        /// `URLError(.notConnectedToInternet)`. The retry policy does not retry it.
        case notConnected
    }

    /// Why a request could not be built.
    public enum InvalidRequestReason: Sendable, Equatable, CustomStringConvertible {
        /// The endpoint has a `{placeholder}` that no `.path` parameter fills.
        case missingPathValue(placeholder: String)
        /// A `.path` parameter has an empty value for a placeholder in the path, which would leave an empty path
        /// segment. (An empty value is fine for a placeholder in the endpoint's query, such as `/search?q={q}`.)
        case emptyPathValue(key: String)
        /// A `.path` value would make its path segment `.` or `..` (also when sent as `%2E`), which servers and
        /// proxies that normalise URLs resolve to the current or the parent directory: `/files/{name}/meta` with
        /// `".."` would reach `/meta`. Nothing is sent. Check the value (it is often user input), or send it in
        /// the query.
        case dotSegmentPathValue(key: String)
        /// Two `.path` parameters name the same placeholder.
        case duplicatePathParameter(key: String)
        /// A `.path` parameter names a placeholder the endpoint does not contain.
        case unusedPathParameter(key: String)
        /// A header name or value contains CR, LF, NUL or (for names) characters outside RFC 9110 tokens, or a
        /// request's value has text that is not ASCII (engines send it differently); or, for
        /// `Authorization`, a ``AuthorizationToken/basic(username:password:)`` username contains `:`; or a
        /// `Content-Length` is not the length of the body.
        case invalidHeader(name: String)
        /// More than one body was given (two `.jsonObject`, or JSON and a form).
        case multipleBodies
        /// The base URL and endpoint do not make a valid URL.
        case invalidURL(String)
        /// The body could not be encoded.
        case bodyEncodingFailed(String)
        /// The HTTP method is empty or not an RFC 9110 token (for example, it contains a space or CR/LF).
        case invalidMethod(String)
        /// The timeout is zero, negative or not a number (`.infinity` means no timeout).
        case invalidTimeout(TimeInterval)
        /// A GET, HEAD or TRACE request has a non-empty body: URLSession fails a GET with one ("resource exceeds
        /// maximum size") and sends a HEAD without it, and RFC 9110 forbids one on a TRACE. Send the values as `.query`
        /// parameters, or use another method.
        case bodyNotAllowed(method: String)
        /// A ``JSONObject`` parameter cannot be sent as given: its key is written twice, its value could not be
        /// encoded, or it holds an object or nested array, which a query or form cannot carry (`reason` says
        /// which). Nothing is dropped or flattened by guesswork. Also a `.query` item or `.form` field whose name
        /// (`key`) is empty.
        case invalidParameter(key: String, reason: String)

        /// A sentence saying what is wrong.
        public var description: String {
            switch self {
            case .missingPathValue(let placeholder):
                return "the endpoint's placeholder {\(placeholder)} has no .path value"
            case .emptyPathValue(let key):
                return "the .path parameter '\(key)' is empty, which would leave an empty path segment"
            case .dotSegmentPathValue(let key):
                return "the .path parameter '\(key)' would make a dot-segment ('.' or '..', even as %2E), which "
                    + "servers resolve to another path"
            case .duplicatePathParameter(let key):
                return "the .path parameter '\(key)' is given more than once"
            case .unusedPathParameter(let key):
                return "the .path parameter '\(key)' matches no {\(key)} placeholder in the endpoint"
            case .invalidHeader(let name):
                return "the header \(name.debugDescription) has a name that is not an RFC 9110 token or a value "
                    + "with a control character (such as CR, LF or NUL) or text that is not ASCII"
            case .multipleBodies:
                return "the request has more than one body"
            case .invalidURL(let url):
                return "'\(url)' is not a valid URL"
            case .bodyEncodingFailed(let detail):
                return "the body could not be encoded: \(detail)"
            case .invalidMethod(let method):
                return "the HTTP method \(method.debugDescription) is not a valid RFC 9110 token"
            case .invalidTimeout(let timeout):
                return "the timeout \(timeout) is not a positive number of seconds (use .infinity for none)"
            case .bodyNotAllowed(let method):
                let why = method == "TRACE" ? "RFC 9110 forbids one" : "URLSession refuses or drops it"
                return "a \(method) request cannot carry a body (\(why)): "
                    + "send the values as .query parameters, or use another method such as POST"
            case .invalidParameter(let key, let reason):
                return "the parameter '\(key)' cannot be sent: \(reason)"
            }
        }
    }

    /// The stage that failed.
    public var kind: Kind
    /// A sentence saying what went wrong, for logs and, with care, for users.
    ///
    /// A message can quote the server ("invalid token abc…") or the request. Read here, it has the secret values
    /// of ``request`` hidden: its credential headers, secret query items and body fields, its cookies and basic
    /// credentials, and the secrets named in a URL it quotes (unless the client was made with
    /// ``Connect/Settings/redactsSecrets`` `false`). What the server sent stays intact in ``body``.
    ///
    /// It is at most 1,024 characters: secrets are hidden before it is cut, so that none is shown in part.
    public var message: String {
        get {
            // A URL the server's message quotes ("link expired: https://…?X-Amz-Signature=…") is redacted by name, as
            // the description redacts it.
            SingleLineText.cut(
                secretsAreShown ? storedMessage : Redaction.urlsInText(secrets().hiding(in: storedMessage)))
        }
        set {
            storedMessage = newValue
            messageShowingSecrets = nil
        }
    }
    /// The message as it was made.
    private var storedMessage: String
    /// The message with what was hidden by name as it was made (a redirect's `Location`) shown, when it differs:
    /// ``showingSecrets(_:)`` makes it the message, for a client set not to redact. Setting ``message`` drops it.
    var messageShowingSecrets: String?
    /// The detail of an ``Kind/invalidRequest`` failure.
    public var invalidRequestReason: InvalidRequestReason?
    /// The request as it was sent (or about to be), when known, as Foundation's `URLRequest`.
    ///
    /// An error of the core's exchange (the AsyncHTTPClient engine, middlewares) keeps the core's request
    /// (``sentRequest``), and this is made from it when read.
    public var request: URLRequest? {
        get { storedRequest?.urlRequest }
        set { storedRequest = newValue.map { .foundation($0) } }
    }
    /// The request as it was sent (or about to be), when known, in the core's own model: made from ``request``
    /// when the error was made with Foundation's.
    public var sentRequest: ConnectRequest? {
        get { storedRequest?.request }
        set { storedRequest = newValue.map { .sent($0) } }
    }
    /// Where the request is: Foundation's, or the core's with Foundation's made from it when asked.
    var storedRequest: ConnectResponse.StoredRequest?
    /// The HTTP response, when one arrived, as Foundation's `HTTPURLResponse`: made when read, for an error of an
    /// engine that reports the core's ``ResponseHead``.
    public var response: HTTPURLResponse? {
        get { storedHead?.response }
        set { storedHead = newValue.map { .foundation($0) } }
    }
    /// Where the response's status and fields are: Foundation's response, or the parts it is made from.
    var storedHead: ConnectResponse.Head?
    /// The response body, when one arrived.
    public var body: Data?
    /// The error underneath, such as a `URLError` or a `DecodingError`.
    public var underlyingError: (any Error)?
    /// For ``Kind/decoding`` failures: the coding path to the value that failed, as `"todos[2].title"`.
    public var codingPath: String?
    /// For ``Kind/decoding`` failures: the keys of the path to the value that failed that are a map's data under a
    /// secret name (``Redaction/dataKeysUnderSecretName(in:)``), hidden as the request's secret values are wherever the
    /// error shows text. ``codingPath`` keeps them.
    var secretKeysInPath: [String] = []
    /// How many times the request was sent before this error: more than 1 when a ``RetryPolicy`` or the `retry` of a
    /// ``ConnectMiddlewareProtocol`` sent it again, 1 otherwise. Then ``description`` ends with "(after 3 attempts)".
    ///
    /// Retries set it on the error they end with: the last attempt's timeout or transport failure, the error the
    /// error handler makes of the last response, or an error that stopped them (a cancellation reported by the
    /// transport, a ``ConnectMiddlewareProtocol/adapt(_:)`` that threw before an attempt). With a retrying
    /// ``ConnectMiddlewareProtocol`` inside a policy's attempts, it counts every request sent, and a bare `URLError` of
    /// a transport of yours, made a ``ConnectError`` as the retries end, carries it too. It stays 1 for an error after
    /// a retried request succeeded (decoding, a validator), and for a request cancelled by its caller (the cancelled
    /// future's own error). An attempt cut short by the call's deadline before its request reached the transport (it
    /// waited in the queue, offline or for a token refresh) sent nothing and is not counted: a call whose deadline
    /// passed before its first attempt was sent says 0.
    public var attempts: Int = 1
    /// For a download to a file that failed after part of its body arrived: that part, kept in a file so that the
    /// download can be resumed with ``Connect/download(_:to:resuming:debugResponse:options:)``. `nil` when the answer
    /// named no validator (a strong `ETag` or `Last-Modified`), when nothing of the body arrived, when the body
    /// was refused (a size limit) or could not be written, and when the call was cancelled. A call stopped by its
    /// deadline, an attempt's ``RequestOptions/idleTimeout`` or the last attempt's ``RetryPolicy/attemptTimeout`` keeps
    /// it, as URLSession's timeout gives resume data; a resume that failed hands back the part it went on from when it
    /// kept nothing newer. The file is the app's to remove (``PartialDownload/discard()``) if it does not resume.
    public var partialDownload: PartialDownload?
    /// Secret values of the request nothing in it names (``ConnectRequest/declaredSecrets``), for an error whose
    /// request is Foundation's or was not made: hidden wherever the error shows text.
    var declaredSecrets: [String] = []
    /// Whether ``message``, the descriptions and reflection show the secret values of ``request`` as they are:
    /// `false` unless the client that made the error was set not to redact (``Connect/Settings/redactsSecrets``).
    var secretsAreShown = false
    /// Whether this is the failure of ``Future/timeout(after:on:)``: a limit the caller or a middleware set on a
    /// future, not a timeout on the network, which a ``RetryPolicy`` does not retry.
    var isFutureTimeout = false

    /// Creates an error. Most code receives these rather than making them.
    ///
    /// - Parameters:
    ///   - kind: The stage that failed.
    ///   - message: What went wrong.
    ///   - request: The request, when known.
    ///   - response: The response, when one arrived.
    ///   - body: The response body, when one arrived.
    ///   - underlyingError: The error underneath, if any.
    public init(
        _ kind: Kind,
        message: String,
        request: URLRequest? = nil,
        response: HTTPURLResponse? = nil,
        body: Data? = nil,
        underlyingError: (any Error)? = nil
    ) {
        self.init(
            kind, message: message, request: request.map { .foundation($0) }, head: response.map { .foundation($0) },
            body: body, underlyingError: underlyingError)
    }

    /// An error about `response`, for a custom ``ErrorHandling``: its request, status, header fields and body kept as
    /// the client reported them, as the default ``ErrorHandler`` keeps them. Prefer it to passing `response.request`
    /// and `response.response` to ``init(_:message:request:response:body:underlyingError:)``: Foundation's request
    /// does not carry the secret values a connector declared (a secret path value, `/password-reset/{token}`),
    /// which then showed in the error's descriptions.
    ///
    /// ```swift
    /// func handle(_ response: ConnectResponse) -> (any Error)? {
    ///     guard response.statusCode == 429 else { return ErrorHandler().handle(response) }
    ///     return ConnectError(.serverMessage, message: "slow down", response: response)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - kind: The stage that failed; ``Kind/serverMessage`` for a message the server gave.
    ///   - message: What went wrong.
    ///   - response: The response the error is about.
    public init(_ kind: Kind, message: String, response: ConnectResponse) {
        self.init(
            kind, message: message, request: response.storedRequest, head: response.storedHead, body: response.data)
    }

    /// An error with its request and response kept as they were reported: the core's model stays so, and
    /// Foundation's types are made from it only when ``request`` or ``response`` is read.
    init(
        _ kind: Kind,
        message: String,
        request: ConnectResponse.StoredRequest?,
        head: ConnectResponse.Head? = nil,
        body: Data? = nil,
        underlyingError: (any Error)? = nil
    ) {
        self.kind = kind
        self.storedMessage = message
        self.storedRequest = request
        self.storedHead = head
        self.body = body
        self.underlyingError = underlyingError
    }

    /// The HTTP status code, when a response arrived.
    public var statusCode: Int? { storedHead?.status }

    /// The platform's `URLError`, when the engine reported one (``URLSessionTransport``, or a transport of
    /// yours that fails with `URLError`s). Read ``kind`` to tell failures apart on every engine: the
    /// AsyncHTTPClient engine keeps its own error in ``underlyingError`` instead.
    public var urlError: URLError? { underlyingError as? URLError }

    /// Whether the transport failed before a complete response arrived: ``Kind/transport`` or one of the finer
    /// kinds that name the reason (``Kind/cannotConnect``, ``Kind/nameResolution``, ``Kind/connectionLost``,
    /// ``Kind/secureConnection``, ``Kind/untrustedCertificate``, ``Kind/badResponse``).
    ///
    /// Code that compared `kind == .transport` before the finer kinds existed reads this instead.
    public var isTransportFailure: Bool { kind.isTransportFailure }

    /// The response headers, when a response arrived.
    public var headers: [String: String] {
        switch storedHead {
        case nil: return [:]
        case .parts(let parts): return parts.head.foundationHeaderFields
        case .foundation(let response):
            var result: [String: String] = [:]
            for (key, value) in response.allHeaderFields {
                if let key = key as? String, let value = value as? String { result[key] = value }
            }
            return result
        }
    }

    /// Whether this error means the request was cancelled.
    public var isCancelled: Bool { kind == .cancelled }

    /// The stage, the message, the method and URL (secrets hidden), the status and, after retries, the number of
    /// ``attempts``, on one line.
    ///
    /// The message can hold a server's text (through a decoding error or a custom error handler): here its
    /// control characters become spaces and it is cut to about 1,024 characters, so that it can neither
    /// forge log lines nor flood a log. ``message`` itself is kept as it is.
    ///
    /// Secrets are hidden by name (a URL's credentials and secret query items, in the request's URL and in every URL
    /// the message quotes) and by value (the secret values ``request`` carried, wherever the message quotes them),
    /// unless the client was set not to redact.
    public var description: String {
        description(hiding: secretsAreShown ? nil : secrets())
    }

    /// The description plus the coding path, the underlying error and a body excerpt, secrets hidden as in
    /// ``description``, each on a line of its own (the server's text made one line, as in the description).
    public var debugDescription: String {
        let secrets = secretsAreShown ? nil : secrets()
        var text = description(hiding: secrets)
        // The path holds the server's keys (those of a `[String: …]` dictionary): on one line too, and a key that is a
        // URL with its secrets hidden, as in the message.
        if let codingPath { text += "\n  at: \(SingleLineText.make(shownCodingPath(codingPath, hiding: secrets)))" }
        if let underlyingError {
            let underlying = underlyingText(underlyingError, hiding: secrets)
            text += "\n  underlying: \(SingleLineText.make(underlying, limit: ConnectError.underlyingLimit))"
        }
        if let excerpt = bodyExcerpt(hiding: secrets) { text += "\n  body: \(excerpt)" }
        return text
    }

    /// The description, with `secrets` and the secrets named in the URL hidden; with nothing hidden if `nil`.
    private func description(hiding secrets: SecretValues?) -> String {
        let redacting = secrets != nil
        // Hidden before it is cut: a secret the cut would split is hidden whole. A URL the message quotes (a server's
        // "link expired: https://…?X-Amz-Signature=…") is redacted as the underlying error's are.
        let message = secrets.map { Redaction.urlsInText($0.hiding(in: storedMessage)) } ?? storedMessage
        var text = "\(kind.stageName): \(SingleLineText.make(message))"
        if let storedRequest, let url = storedRequest.url {
            text += " [\(storedRequest.method) \(Redaction.url(url, redacting: redacting))]"
        }
        if let statusCode { text += " (HTTP \(statusCode))" }
        if attempts > 1 { text += " (after \(attempts) attempts)" }
        return secrets?.hiding(in: text) ?? text
    }

    /// The coding path with `secrets` hidden and the secrets of every URL it quotes (a key of a map keyed by URL)
    /// hidden by name; as it is if `secrets` is `nil`.
    func shownCodingPath(_ path: String, hiding secrets: SecretValues?) -> String {
        guard let secrets else { return path }
        return secrets.hiding(in: Redaction.urlsInText(path))
    }

    /// The text of `error`, with `secrets` hidden and every URL it quotes redacted by name (platform errors quote the
    /// failing URL verbatim, which after a redirect is neither the request's nor the response's); as it is if
    /// `secrets` is `nil`.
    func underlyingText(_ error: any Error, hiding secrets: SecretValues?) -> String {
        var text = error is ConnectError ? String(reflecting: error) : "\(error)"
        guard let secrets else { return text }
        for url in [storedRequest?.url, storedHead?.url].compactMap({ $0 }) {
            text = text.replacingOccurrences(of: url.absoluteString, with: Redaction.url(url, redacting: true))
        }
        return secrets.hiding(in: Redaction.urlsInText(text))
    }

    /// The start of the body as text, secrets hidden by name and by value (as it is if `secrets` is `nil`), on one
    /// line: it is the server's text, and its line breaks and escape sequences would forge the lines after it in
    /// ``debugDescription`` or reach the terminal that prints it.
    ///
    /// A body over ``excerptSourceLimit`` is not read for it: with secrets hidden it is shown by its size (its
    /// secrets could be found only by parsing all of it), with secrets shown by its first bytes.
    func bodyExcerpt(hiding secrets: SecretValues?) -> String? {
        guard let body, !body.isEmpty else { return nil }
        if body.count > ConnectError.excerptSourceLimit {
            if secrets != nil { return "<\(body.count) bytes, not shown: too large to look for secrets in>" }
            let start = String(decoding: body.prefix(ConnectError.excerptLimit), as: UTF8.self)
            return SingleLineText.make(start, limit: ConnectError.excerptLimit) + " … (\(body.count) bytes in all)"
        }
        let text = Redaction.bodyText(
            body,
            contentType: storedHead?.value(of: "Content-Type"),
            redacting: secrets != nil,
            pretty: false,
            limit: ConnectError.excerptLimit,
            hiding: secrets
        )
        // Room for the excerpt and the "… (N bytes in all)" after it.
        return SingleLineText.make(text, limit: 2 * ConnectError.excerptLimit)
    }

    /// The secret values of the request, to hide wherever the error shows text, those the response hands out in its
    /// header fields (``SecretValues/init(handedOutIn:)``: an `X-Auth-Token` the body quotes again), those a JSON
    /// body hands out under a secret name (a `session_id` the server's message quotes again) or a plain-text body as
    /// a form's secret field or as credentials (`Bearer …`: the message quotes such a body), and for a decoding
    /// failure, the value it failed on when that sits under a secret name (``failedSecretValues(in:)``) and the keys
    /// of its path that are a map's data under one (``secretKeysInPath``).
    func secrets() -> SecretValues {
        var sent =
            switch storedRequest {
            case nil: SecretValues()
            case .foundation(let request): SecretValues(of: request)
            case .model(let sent): SecretValues(of: sent.request)
            }
        if let storedHead { sent = sent.union(SecretValues(handedOutIn: storedHead.head.headerFields)) }
        if !declaredSecrets.isEmpty { sent = sent.union(SecretValues(values: declaredSecrets)) }
        if !secretKeysInPath.isEmpty { sent = sent.union(SecretValues(values: secretKeysInPath)) }
        guard let body else { return sent }
        let contentType = storedHead?.value(of: "Content-Type")
        let handedOut =
            Redaction.secretStrings(ofBody: body, contentType: contentType) + failedSecretValues(in: body)
            + Redaction.plainTextSecrets(ofBody: body, contentType: contentType)
        return handedOut.isEmpty ? sent : sent.union(SecretValues(values: handedOut))
    }

    /// The value a ``Kind/decoding`` failure's `DecodingError` failed on, as text, when it sits under a secret name in
    /// `body` (``Redaction/valueUnderSecretName(at:inJSON:contentType:limit:)``): its message may quote it ("Cannot
    /// initialize Mode from invalid String value …"), and a password that reads as a word is not one the body hands out
    /// by its look. None for another failure.
    private func failedSecretValues(in body: Data) -> [String] {
        guard kind == .decoding, let path = (underlyingError as? DecodingError)?.codingPathOfFailure,
            let value = Redaction.valueUnderSecretName(
                at: path, inJSON: body, contentType: storedHead?.value(of: "Content-Type"))
        else { return [] }
        return Redaction.scalarTexts(of: value)
    }
}

/// `localizedDescription` says what failed, as ``ConnectError/description`` does, rather than Foundation's "The
/// operation could not be completed": code that sees only `any Error` (an alert, a logger, `NSError` bridging) shows
/// the stage, the message, the request and the status, secrets hidden.
extension ConnectError: LocalizedError {
    /// The ``description``: what `localizedDescription` returns.
    public var errorDescription: String? { description }
}

/// As an `NSError` (what crash reporters and analytics record: Crashlytics and Sentry group errors by domain and
/// code), a ``ConnectError`` is in the domain `SwiftConnect.ConnectError` with a code per ``Kind``, so that a lost
/// connection and a decoding failure are not one group. The codes never change; a new kind gets a new one.
///
/// | kind | code | kind | code |
/// | --- | --- | --- | --- |
/// | `invalidRequest` | 1 | `decoding` | 11 |
/// | `transport` | 2 | `cancelled` | 12 |
/// | `cannotConnect` | 3 | `timedOut` | 13 |
/// | `nameResolution` | 4 | `rejected` | 14 |
/// | `connectionLost` | 5 | `authenticationFailed` | 15 |
/// | `secureConnection` | 6 | `responseTooLarge` | 16 |
/// | `untrustedCertificate` | 7 | `fileAccess` | 17 |
/// | `badResponse` | 8 | `certificatePinning` | 18 |
/// | `httpStatus` | 9 | `notConnected` | 19 |
/// | `serverMessage` | 10 | | |
extension ConnectError: CustomNSError {
    /// `SwiftConnect.ConnectError`.
    public static var errorDomain: String { "SwiftConnect.ConnectError" }

    /// The code of the error's ``kind`` (see the table above): `(error as NSError).code`.
    public var errorCode: Int {
        switch kind {
        case .invalidRequest: return 1
        case .transport: return 2
        case .cannotConnect: return 3
        case .nameResolution: return 4
        case .connectionLost: return 5
        case .secureConnection: return 6
        case .untrustedCertificate: return 7
        case .badResponse: return 8
        case .httpStatus: return 9
        case .serverMessage: return 10
        case .decoding: return 11
        case .cancelled: return 12
        case .timedOut: return 13
        case .rejected: return 14
        case .authenticationFailed: return 15
        case .responseTooLarge: return 16
        case .fileAccess: return 17
        case .certificatePinning: return 18
        case .notConnected: return 19
        }
    }

    /// What the `NSError` carries: its ``description`` as the localized description (secrets hidden), and the
    /// ``underlyingError``, if any, as `NSUnderlyingErrorKey`, which crash reporters show as the cause.
    ///
    /// The underlying error shows no secret either, at any depth of the errors nested in it: a platform error quotes
    /// the URL it failed on (`NSErrorFailingURLKey`), redacted here as in ``description``, with the secret values of
    /// ``request`` hidden. One with something to hide is bridged as a plain `NSError` of the same domain and code;
    /// ``underlyingError`` itself keeps everything.
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = [NSLocalizedDescriptionKey: description]
        if let underlyingError {
            let bridged = underlyingError as NSError
            info[NSUnderlyingErrorKey] = secretsAreShown ? bridged : Redaction.bridged(bridged, hiding: secrets())
        }
        return info
    }
}

// MARK: - Factories

extension ConnectError {
    /// A cancellation error.
    ///
    /// - Parameter request: The request that was cancelled, when known.
    /// - Returns: An error of kind ``Kind/cancelled``.
    static func cancelled(request: URLRequest? = nil) -> ConnectError {
        ConnectError(.cancelled, message: "the request was cancelled", request: request)
    }

    /// A cancellation error for the core's `request`.
    static func cancelled(sent request: ConnectRequest) -> ConnectError {
        ConnectError(.cancelled, message: "the request was cancelled", request: .sent(request))
    }

    /// The failure of ``Future/timeout(after:on:)`` on a request's future: it did not complete within `seconds`.
    ///
    /// No underlying `URLError`: nothing failed on the network, and a ``RetryPolicy`` does not retry it.
    static func timedOut(after seconds: TimeInterval) -> ConnectError {
        var error = ConnectError(
            .timedOut, message: "the future did not complete within the time limit of \(seconds) s")
        error.isFutureTimeout = true
        return error
    }

    /// An error saying the request could not be built.
    ///
    /// - Parameters:
    ///   - reason: Why it could not be built.
    ///   - request: The partly built request, when there is one.
    /// - Returns: An error of kind ``Kind/invalidRequest``.
    public static func invalidRequest(_ reason: InvalidRequestReason, request: URLRequest? = nil) -> ConnectError {
        invalidRequest(reason, stored: request.map { .foundation($0) })
    }

    /// An error saying the core's `request` could not be built or sent as it is.
    static func invalidRequest(_ reason: InvalidRequestReason, sent request: ConnectRequest) -> ConnectError {
        invalidRequest(reason, stored: .sent(request))
    }

    /// An error saying the request, kept as it was reported, could not be built or sent.
    static func invalidRequest(_ reason: InvalidRequestReason, stored: ConnectResponse.StoredRequest?)
        -> ConnectError
    {
        var error = ConnectError(.invalidRequest, message: reason.description, request: stored)
        error.invalidRequestReason = reason
        return error
    }

    /// `error` saying that `attempts` requests were sent before it (``attempts``) when it is a ``ConnectError``;
    /// any other error (a user's own type) as it is.
    static func reporting(attempts: Int, on error: any Error) -> any Error {
        guard var connectError = error as? ConnectError else { return error }
        connectError.attempts = attempts
        return connectError
    }

    /// The error with the request, response and body of `response` where it has none of its own, for a failure
    /// that happened while handling that response (decoding its body).
    @usableFromInline
    func from(_ response: ConnectResponse) -> ConnectError {
        var error = self
        if error.storedRequest == nil { error.storedRequest = response.storedRequest }
        if error.storedHead == nil { error.storedHead = response.storedHead }
        if error.body == nil { error.body = response.data }
        return error
    }

    /// `error` with the secrets of its request shown as they are, when it is a ``ConnectError``: the failure of a
    /// client set not to redact (``Connect/Settings/redactsSecrets``).
    static func showingSecrets(_ error: any Error) -> any Error {
        guard var connectError = error as? ConnectError else { return error }
        connectError.secretsAreShown = true
        if let shown = connectError.messageShowingSecrets { connectError.message = shown }
        return connectError
    }

    /// How many bytes of a body an error description shows at most.
    static let excerptLimit = 512

    /// The largest body ``debugDescription`` reads for its excerpt: as much as ``secrets()`` looks for the secrets a
    /// body hands out in (``Redaction/bodySecretScanLimit``, 1 MiB). Finding the secrets to hide in a JSON body means
    /// parsing and walking all of it, for 512 bytes shown: 50 MB of JSON took about a minute in a debug build, each
    /// time the error was logged.
    static let excerptSourceLimit = Redaction.bodySecretScanLimit

    /// How many characters of the underlying error a debug description shows at most.
    static let underlyingLimit = 2_048

}

/// A request's futures fail with a `ConnectError` when cancelled or timed out: the futures of its response, and
/// every future chained on one (its body, `decoded(toType:)`, `map`…), report ``FutureError/cancelled`` as kind
/// ``ConnectError/Kind/cancelled`` and ``FutureError/timedOut(after:)`` as ``ConnectError/Kind/timedOut``, so
/// that `(error as? ConnectError)?.isCancelled` holds wherever in the chain the request was cancelled.
extension ConnectResponse: FutureErrorReporting {
    @usableFromInline
    static func reportedError(for error: FutureError) -> any Error {
        switch error {
        case .cancelled: ConnectError.cancelled()
        case .timedOut(let seconds): ConnectError.timedOut(after: seconds)
        case .emptyRace: error
        }
    }
}

extension ConnectError.Kind {
    /// The stage's name as it reads in a description.
    var stageName: String {
        switch self {
        case .invalidRequest: return "Invalid request"
        case .transport: return "Transport failure"
        case .cannotConnect: return "Cannot connect"
        case .nameResolution: return "Name resolution failed"
        case .connectionLost: return "Connection lost"
        case .secureConnection: return "Secure connection failed"
        case .untrustedCertificate: return "Untrusted certificate"
        case .badResponse: return "Bad response"
        case .httpStatus: return "HTTP error status"
        case .serverMessage: return "Server error"
        case .decoding: return "Decoding failed"
        case .cancelled: return "Cancelled"
        case .timedOut: return "Timed out"
        case .rejected: return "Rejected"
        case .authenticationFailed: return "Authentication failed"
        case .responseTooLarge: return "Response too large"
        case .fileAccess: return "File access failed"
        case .certificatePinning: return "Certificate pinning"
        case .notConnected: return "Not connected"
        }
    }
}

extension URL {
    /// The URL with any `user:password@` part removed, for logs and error messages.
    var redactingUserInfo: String {
        guard user != nil || password != nil,
            var components = URLComponents(url: self, resolvingAgainstBaseURL: false)
        else { return absoluteString }
        components.user = nil
        components.password = nil
        return components.string ?? absoluteString
    }
}

extension DecodingError {
    /// The coding path of the value that failed (of the container that lacks the key, for a missing key); `nil` for a
    /// case added after this was written.
    var codingPathOfFailure: [any CodingKey]? {
        switch self {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context),
            .dataCorrupted(let context):
            return context.codingPath
        @unknown default:
            return nil
        }
    }
}
