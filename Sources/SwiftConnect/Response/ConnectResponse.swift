import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A complete HTTP response: the request that produced it, the status and headers, and the body.
///
/// ```swift
/// connect.response(for: TodoConnector.get(id: 1)).observe { result in
///     if case .success(let response) = result {
///         print(response.statusCode, response.header("Content-Type") ?? "", response.data.count)
///     }
/// }
/// ```
public struct ConnectResponse: Sendable {
    /// The request as it was sent, after every middleware, as Foundation's `URLRequest`.
    ///
    /// An engine of the core's exchange (AsyncHTTPClient) reports the core's request (``sentRequest``), and this is
    /// made from it the first time it is read; each read then returns the same request.
    public var request: URLRequest {
        get { storedRequest.urlRequest }
        set { storedRequest = .foundation(newValue) }
    }

    /// The request as it was sent, in the core's own model (``ConnectRequest``): made from ``request`` when a
    /// transport reported Foundation's.
    public var sentRequest: ConnectRequest {
        storedRequest.request ?? ConnectRequest(url: Self.noURL)
    }

    /// Where the request is: Foundation's, or the core's with Foundation's made from it when asked.
    var storedRequest: StoredRequest
    /// How many requests were sent to get this error response (outside 200..<300): more than 1 when a retry loop
    /// sent the request again and ended with it, so that the error the error handler makes of the response says
    /// so (``ConnectError/attempts``). Always 1 on a success.
    ///
    /// An `Int32` right after the request: on Linux it fills the padding after it, and a response is copied at every
    /// stage of a request.
    var attempts: Int32 = 1
    /// Whether the redirects that led to this response went through another origin than the request's: the request's
    /// credentials stayed behind from there on (`RedirectRules`), even when the answer comes from its own origin
    /// again. Right after `attempts`, in the same padding.
    var leftOrigin = false
    /// The status and headers: Foundation's response, or the parts a transport reported, made into one when
    /// ``response`` is first read.
    var storedHead: Head
    /// The HTTP response: status code and headers.
    ///
    /// A transport whose engine does not make Foundation's `HTTPURLResponse` (AsyncHTTPClient) reports the parts,
    /// and this is made from them the first time it is read; ``statusCode`` and ``header(_:)`` read the parts
    /// directly. Each read returns the same instance.
    public var response: HTTPURLResponse {
        get { storedHead.response }
        set { storedHead = .foundation(newValue) }
    }

    /// The status and header fields in the core's own HTTP model, repeated fields kept as the engine reported
    /// them (Foundation's response, where the engine made one, has them joined).
    public var head: ResponseHead { storedHead.head }
    /// The body (empty when there was none, or when it was written to ``fileURL``).
    public var data: Data
    /// Where the body was written, for a download to a file; `nil` when the body is in ``data``.
    public var fileURL: URL?
    /// The body still arriving, for a streamed request (``TransferOptions/streaming``); ``data`` is then empty.
    /// `nil` otherwise.
    public var bodyStream: ResponseBodyStream?
    /// Why ``data`` is only the start of an error status's streamed body (read for the error handler up to
    /// `StreamingOptions.errorBodyLimit`): it went on, or its transfer failed. An error handler that accepts the
    /// status makes this the call's failure, not an answer cut short. `nil` for a body read whole. `package` for
    /// `RecordingTransport`, which records and replays it.
    package var bodyCut: (any Error)?

    /// Creates a response.
    ///
    /// - Parameters:
    ///   - request: The request as sent.
    ///   - response: The HTTP response.
    ///   - data: The body.
    public init(request: URLRequest, response: HTTPURLResponse, data: Data) {
        self.storedRequest = .foundation(request)
        self.storedHead = .foundation(response)
        self.data = data
    }

    /// Creates a response from its head in the core's HTTP model: for engines that are not URLSession, fake
    /// transports, and middlewares that answer by themselves. Repeated fields are kept as given.
    ///
    /// ```swift
    /// let answer = ConnectResponse(
    ///     request: request, head: ResponseHead(status: 200, headerFields: [.contentType: "application/json"]),
    ///     data: body)
    /// ```
    ///
    /// Fails when the status is outside 100...999, or when there is no URL (neither `url` nor the request's).
    ///
    /// - Parameters:
    ///   - request: The request being answered.
    ///   - head: The status and header fields.
    ///   - data: The body.
    ///   - url: The response's URL, when it is not the request's (after redirects).
    ///   - httpVersion: The protocol version, as URLSession reports it (`HTTP/1.1`, `HTTP/2`).
    public init?(
        request: URLRequest, head: ResponseHead, data: Data = Data(), url: URL? = nil,
        httpVersion: String = "HTTP/1.1"
    ) {
        guard ResponseHead.statusCodes.contains(head.status), let url = url ?? request.url else { return nil }
        self.storedRequest = .foundation(request)
        self.storedHead = .parts(ResponseParts(url: url, head: head, httpVersion: httpVersion))
        self.data = data
    }

    /// Creates a response from its parts: for transports whose engine does not make Foundation's
    /// `HTTPURLResponse`, fake transports, and middlewares that answer by themselves.
    ///
    /// ``response`` is made from the parts the first time it is read, so a response read only through
    /// ``statusCode`` and ``header(_:)`` (as the client reads a successful one) never pays for Foundation's
    /// header canonicalisation.
    ///
    /// ```swift
    /// let answer = ConnectResponse(
    ///     request: request, statusCode: 200, headers: ["Content-Type": "application/json"], data: body,
    ///     url: finalURL, httpVersion: "HTTP/2")
    /// ```
    ///
    /// Fails when the status code is outside 100...999, or when there is no URL (neither `url` nor the request's).
    ///
    /// - Parameters:
    ///   - request: The request being answered.
    ///   - statusCode: The status code.
    ///   - headers: The response headers, repeated fields joined with ", ".
    ///   - data: The body.
    ///   - url: The response's URL, when it is not the request's (after redirects).
    ///   - httpVersion: The protocol version, as URLSession reports it (`HTTP/1.1`, `HTTP/2`).
    public init?(
        request: URLRequest, statusCode: Int, headers: [String: String] = [:], data: Data = Data(), url: URL? = nil,
        httpVersion: String = "HTTP/1.1"
    ) {
        var fields = HeaderFields()
        for (name, value) in headers { fields.append(HeaderField(name: HeaderField.Name(name), value: value)) }
        self.init(
            request: request, head: ResponseHead(status: statusCode, headerFields: fields), data: data, url: url,
            httpVersion: httpVersion)
    }

    /// A response a middleware answers `request` with by itself, from its head (see
    /// ``init(request:head:data:url:httpVersion:)``).
    ///
    /// - Parameters:
    ///   - request: The request as the middleware received it.
    ///   - head: The status and header fields.
    ///   - data: The body.
    ///   - url: The URL that answered; `request`'s by default.
    ///   - httpVersion: The protocol version; `HTTP/1.1` by default.
    public init?(
        request: ConnectRequest, head: ResponseHead, data: Data = Data(), url: URL? = nil,
        httpVersion: String = "HTTP/1.1"
    ) {
        guard ResponseHead.statusCodes.contains(head.status) else { return nil }
        self.storedRequest = .model(SentRequest(request))
        self.storedHead = .parts(ResponseParts(url: url ?? request.url, head: head, httpVersion: httpVersion))
        self.data = data
    }

    /// A response a middleware answers `request` with by itself, from a status and headers (see
    /// ``init(request:statusCode:headers:data:url:httpVersion:)``).
    ///
    /// - Parameters:
    ///   - request: The request as the middleware received it.
    ///   - statusCode: The status, 100 to 999.
    ///   - headers: The header fields.
    ///   - data: The body.
    ///   - url: The URL that answered; `request`'s by default.
    ///   - httpVersion: The protocol version; `HTTP/1.1` by default.
    public init?(
        request: ConnectRequest, statusCode: Int, headers: [String: String] = [:], data: Data = Data(),
        url: URL? = nil, httpVersion: String = "HTTP/1.1"
    ) {
        var fields = HeaderFields()
        for (name, value) in headers { fields.append(HeaderField(name: HeaderField.Name(name), value: value)) }
        self.init(
            request: request, head: ResponseHead(status: statusCode, headerFields: fields), data: data, url: url,
            httpVersion: httpVersion)
    }

    /// The HTTP status code.
    public var statusCode: Int { storedHead.status }

    /// Whether the status is in 200..<300.
    public var isSuccess: Bool { (200..<300).contains(statusCode) }

    /// The value of a response header, looked up case-insensitively.
    ///
    /// - Parameter name: The header name.
    /// - Returns: The value, or `nil` when absent.
    public func header(_ name: String) -> String? { storedHead.value(of: name) }

    /// Decodes the body into `type`, for when you want the status or headers too: a `Link` header beside the page
    /// it describes, or a response of a request built as a ``ConnectRequest``.
    ///
    /// ```swift
    /// connect.response(for: TodoConnector.list()).map { response in
    ///     (todos: try response.decoded(as: [Todo].self), next: response.header("Link"))
    /// }
    /// ```
    ///
    /// Without a `decoder`, the decoder is chosen for the response's `Content-Type` from
    /// ``ResponseDecoders/default`` (JSON). The ``ResponseDecoders`` you gave a client are not known to its
    /// responses: pass `decoder: decoders.decoder(for: response.mediaType)`, or decode the body future
    /// (``Future/decoded(toType:decoder:)``), which knows them. Empty bodies, charsets and failures are as for
    /// ``Future/decoded(toType:decoder:)``.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - decoder: The decoder to use whatever the content type; `nil` (the default) chooses by content type.
    /// - Returns: The decoded value.
    /// - Throws: A ``ConnectError`` of kind ``ConnectError/Kind/decoding`` with the coding path, an excerpt of the
    ///   body, the request and the response.
    public func decoded<Decoded: Decodable>(
        as type: Decoded.Type = Decoded.self, decoder: (any ResponseBodyDecoder)? = nil
    ) throws -> Decoded {
        try decodeBody(data, as: type, with: decoder ?? ResponseDecoders.default.decoder(for: self), response: self)
    }

    /// The media type of the body, lowercased and without parameters (`application/json`), if declared.
    public var mediaType: String? {
        header("Content-Type").map(ConnectResponse.mediaType(of:))
    }

    /// The media type of a `Content-Type` value: lowercased, without parameters and surrounding blanks.
    static func mediaType(of contentType: String) -> String {
        // By hand over the UTF-8 bytes: Foundation's `trimmingCharacters(in:)` cost more than the rest of a
        // small request's pipeline (measured with callgrind).
        var type = contentType.utf8[...]
        if let semicolon = type.firstIndex(of: UInt8(ascii: ";")) { type = type[..<semicolon] }
        let isBlank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        while let first = type.first, isBlank(first) { type = type.dropFirst() }
        while let last = type.last, isBlank(last) { type = type.dropLast() }
        return Substring(type).lowercased()
    }
}

extension ConnectResponse: CustomStringConvertible, CustomReflectable {
    /// The status, the method and URL of the request as sent, the body's size, then the header fields one a line,
    /// secrets hidden as the `debugResponse` output hides them: the URL's `user:password@` and secret query values, the
    /// values of secret fields (`Set-Cookie`…), and the request's secret values wherever a field repeats one. What
    /// `print(response)` shows, so that it leaks no credential into a log; the body is not shown.
    ///
    /// ```swift
    /// print(response)
    /// // HTTP 200 ← GET https://api.example.com/me?token=<redacted> (512 bytes)
    /// // Content-Type: application/json
    /// // Set-Cookie: <redacted>
    /// ```
    public var description: String {
        let secrets = storedRequest.secretValues.union(SecretValues(handedOutIn: head.headerFields))
        let url = storedRequest.url.map { secrets.hiding(in: Redaction.url($0, redacting: true)) } ?? "?"
        let line = "HTTP \(statusCode) ← \(storedRequest.method) \(url) (\(data.count) bytes)"
        let fields = head.headerFields.hidingValues(secrets)
        return fields.isEmpty ? line : line + "\n" + fields.description
    }

    /// The parts as ``description`` shows them, so that `dump(response)` and a debugger show no secret either: the
    /// request as sent (through its own redacted reflection), the URL that answered redacted, the header fields with
    /// secret values hidden, and the body by its size. Foundation's request and response, made from the parts or
    /// kept as a transport reported them, are not shown.
    public var customMirror: Mirror {
        let secrets = storedRequest.secretValues.union(SecretValues(handedOutIn: head.headerFields))
        return Mirror(
            self,
            children: [
                "status": statusCode, "request": storedRequest.request as Any,
                "url": storedHead.url.map { secrets.hiding(in: Redaction.url($0, redacting: true)) } as Any,
                "headerFields": head.headerFields.hidingValues(secrets), "data": "\(data.count) bytes",
            ],
            displayStyle: .struct)
    }
}

extension ConnectResponse {
    /// This response as the answer to `request`, a request identical to the one it answered but for its URL's fragment
    /// (never sent: the cache and the coalescing of identical requests share one answer between such requests). It
    /// carries `request`, and its URL names `request`'s fragment where it named the asked request's (RFC 9110 §10.2.2:
    /// the same resource, or a redirect's target without a fragment of its own), not another caller's.
    func answering(_ request: ConnectRequest) -> ConnectResponse {
        var answer = self
        let asked = storedRequest.url
        answer.storedRequest = .sent(request)
        guard let asked, asked.fragment != request.url.fragment, let answered = storedHead.url,
            answered.fragment == asked.fragment
        else { return answer }
        var url = URL(string: answered.absoluteStringWithoutFragment) ?? answered
        if let fragment = URLComponents(url: request.url, resolvingAgainstBaseURL: true)?.percentEncodedFragment {
            url = URL(string: url.absoluteString + "#" + fragment) ?? url
        }
        let httpVersion: String
        switch storedHead {
        case .parts(let parts): httpVersion = parts.httpVersion
        case .foundation: httpVersion = "HTTP/1.1"
        }
        answer.storedHead = .parts(ResponseParts(url: url, head: head, httpVersion: httpVersion))
        return answer
    }

    /// A URL for ``sentRequest`` of a Foundation request without one (which no transport sends).
    private static let noURL = URL(string: "about:blank")!

    /// Where a response's request is: Foundation's, or the core's.
    enum StoredRequest: Sendable {
        case foundation(URLRequest)
        case model(SentRequest)

        /// The core's request, kept (made from Foundation's, which does not fail for a request with a URL).
        static func sent(_ request: ConnectRequest) -> StoredRequest { .model(SentRequest(request)) }

        var urlRequest: URLRequest {
            switch self {
            case .foundation(let request): request
            case .model(let sent): sent.urlRequest
            }
        }

        /// The request in the core's model: made from Foundation's (`nil` for one without a URL).
        var request: ConnectRequest? {
            switch self {
            case .foundation(let request): try? ConnectRequest(request)
            case .model(let sent): sent.request
            }
        }

        /// The request's URL, read without making either form.
        var url: URL? {
            switch self {
            case .foundation(let request): request.url
            case .model(let sent): sent.request.url
            }
        }

        /// The request's method, read without making either form.
        var method: String {
            switch self {
            case .foundation(let request): request.httpMethod ?? "GET"
            case .model(let sent): sent.request.method.rawValue
            }
        }

        /// The secret values the request carried, read without making either form: hidden wherever a description of
        /// the response shows them again.
        var secretValues: SecretValues {
            switch self {
            case .foundation(let request): SecretValues(of: request)
            case .model(let sent): SecretValues(of: sent.request)
            }
        }
    }

    /// Where a response's status and headers are: in Foundation's response, or in the parts it is made from.
    enum Head: Sendable {
        case foundation(HTTPURLResponse)
        case parts(ResponseParts)

        var response: HTTPURLResponse {
            switch self {
            case .foundation(let response): response
            case .parts(let parts): parts.response
            }
        }

        /// The status code, read without making Foundation's response.
        var status: Int {
            switch self {
            case .foundation(let response): response.statusCode
            case .parts(let parts): parts.head.status
            }
        }

        /// The URL that answered, read without making Foundation's response.
        var url: URL? {
            switch self {
            case .foundation(let response): response.url
            case .parts(let parts): parts.url
            }
        }

        /// The status and fields in the core's model.
        var head: ResponseHead {
            switch self {
            case .foundation(let response): ResponseHead(response)
            case .parts(let parts): parts.head
            }
        }

        /// The value of the field `name`, looked up case-insensitively (repeated fields joined).
        func value(of name: String) -> String? {
            let response: HTTPURLResponse
            switch self {
            case .parts(let parts): return parts.head.headerFields[HeaderField.Name(name)]
            case .foundation(let foundation): response = foundation
            }
            if let value = response.value(forHTTPHeaderField: name) { return value }
            let lowered = name.lowercased()
            for (key, value) in response.allHeaderFields {
                if let key = key as? String, key.lowercased() == lowered { return value as? String }
            }
            return nil
        }
    }
}

/// A response's status and headers as a transport reported them, and Foundation's `HTTPURLResponse` made from them
/// once someone asks for it. Making one canonicalises every header name (with Foundation's case-insensitive
/// comparisons and `capitalized`), which on Linux costs more than the rest of a small request's response handling;
/// the client itself reads only the status and a header or two.
final class ResponseParts: Sendable {
    let url: URL
    let head: ResponseHead
    let httpVersion: String
    /// Foundation's response, once made.
    private let made = Protected<HTTPURLResponse?>(nil)

    /// - Precondition: `head.status` is in 100...999 (checked by ``ConnectResponse``'s initializer).
    init(url: URL, head: ResponseHead, httpVersion: String) {
        self.url = url
        self.head = head
        self.httpVersion = httpVersion
    }

    /// Foundation's response, made on the first call; the same instance afterwards.
    var response: HTTPURLResponse {
        made.withLock { made in
            if let made { return made }
            // Foundation's initializer returns nil on no platform for a URL and a status code in 100...999 (checked
            // by ConnectResponse's initializer, which builds these parts).
            guard
                let response = HTTPURLResponse(
                    url: url, statusCode: head.status, httpVersion: httpVersion,
                    headerFields: head.foundationHeaderFields)
            else { preconditionFailure("HTTPURLResponse refused status \(head.status) for \(url)") }
            made = response
            return response
        }
    }

    /// Whether Foundation's response has been made (for tests).
    var isMadeForTesting: Bool { made.snapshot != nil }
}

extension ConnectResponse {
    /// This response, its request carrying `secrets` (``ConnectRequest/declaredSecrets``) as well: Foundation's
    /// request is kept as the core's made from it, which gives the same `URLRequest` back.
    func declaring(_ secrets: [String]) -> ConnectResponse {
        guard !secrets.isEmpty, var request = storedRequest.request else { return self }
        request.declaredSecrets += secrets.filter { !request.declaredSecrets.contains($0) }
        var response = self
        response.storedRequest = .model(SentRequest(request))
        return response
    }
}

/// The core's request a response answers, and Foundation's `URLRequest` made from it once someone asks for it: the
/// client itself never does on a success's path.
final class SentRequest: Sendable {
    let request: ConnectRequest
    /// Foundation's request, once made.
    private let made = Protected<URLRequest?>(nil)

    init(_ request: ConnectRequest) {
        self.request = request
    }

    /// Whether Foundation's request has been made (for tests: the client itself never asks on a success's path).
    var hasMadeURLRequest: Bool { made.withLock { $0 != nil } }

    /// Foundation's request, made on the first call; the same one afterwards.
    var urlRequest: URLRequest {
        made.withLock { made in
            if let made { return made }
            let request = request.urlRequest
            made = request
            return request
        }
    }
}
