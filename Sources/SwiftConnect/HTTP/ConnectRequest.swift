import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request on its way through the client's pipeline, in the core's own HTTP model: what every ``Middleware``
/// receives and passes on.
///
/// Its header fields are ``HeaderFields``: ordered, names compared without regard to case, values kept exactly as
/// set. A value with CR, LF or NUL set by any middleware therefore reaches the client's check and fails the call with
/// ``ConnectError/InvalidRequestReason/invalidHeader(name:)``, on every platform (FoundationNetworking's `URLRequest`
/// dropped such a value silently). Its body says whether it can be sent again (``Body/isReplayable``).
///
/// The members a middleware written for `URLRequest` uses are here under the same names (`url`, `httpMethod`,
/// `setValue(_:forHTTPHeaderField:)`, `value(forHTTPHeaderField:)`, `httpBody`, `timeoutInterval`), so most such
/// middlewares change only the type in their signature:
///
/// ```swift
/// struct APIKeyMiddleware: Middleware {
///     let key: String
///     func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next)
///         -> Future<ConnectResponse>
///     {
///         request.headerFields["X-API-Key"] = key  // or request.setValue(key, forHTTPHeaderField: "X-API-Key")
///         return next(request)
///     }
/// }
/// ```
///
/// Foundation's `URLRequest` is made from it at the edge, where a transport takes one (``urlRequest``); the
/// properties of a `URLRequest` this model does not carry (`allowsCellularAccess`, `networkServiceType`…) are kept
/// from the `URLRequest` a request was made from (``init(_:)``) and given back there.
public struct ConnectRequest: Sendable {
    /// The method.
    public var method: HTTPMethod
    /// The URL, with its query, percent-encoded as it goes on the wire.
    public var url: URL
    /// The header fields, in order.
    public var headerFields: HeaderFields
    /// The body.
    public var body: Body
    /// The longest one exchange (an attempt, its redirects included) may take, in seconds; also the call's deadline,
    /// attempts and waits included, when the client starts it.
    ///
    /// A client sending a built request (``Connect/response(for:name:options:)``) takes the call's
    /// ``RequestOptions/timeout`` over it, and it over the client's defaults unless it is the default, 60 seconds.
    public var timeoutInterval: TimeInterval
    /// The default ``timeoutInterval``, as `URLRequest`'s: a client's own timeout applies to a request that keeps it.
    static let defaultTimeoutInterval: TimeInterval = 60
    /// The cache policy handed to URLSession (which the transport's own sessions run without `URLCache`).
    public var cachePolicy: URLRequest.CachePolicy
    /// The `URLRequest` this request was made from, for the properties the model does not carry; `nil` for one the
    /// client built.
    private var foundationBase: URLRequest?
    /// Secret values nothing in the request names as secret, which its builder knows: a `.path` value under a secret
    /// key (`/password-reset/{token}`) is a plain segment once in the URL. Hidden wherever the request, a response to
    /// it or an error about it is shown (``SecretValues``), as a secret query item is; a copy keeps them, a request
    /// made anew from a `URLRequest` has none.
    package var declaredSecrets: [String] = []
    /// The conditional fields (`If-None-Match`, `If-Modified-Since`) the ``ResponseCache`` added to revalidate what
    /// it stores: the caller's request had none. A request handed back to the app (a queue's waiting request) goes
    /// without them, so that sent again it is not answered `304` with no body.
    var cacheConditionalFields: [String] = []

    /// This request without the conditional fields the cache added (``cacheConditionalFields``).
    var withoutCacheConditionals: ConnectRequest {
        guard !cacheConditionalFields.isEmpty else { return self }
        var request = self
        for field in cacheConditionalFields { request.setValue(nil, forHTTPHeaderField: field) }
        request.cacheConditionalFields = []
        return request
    }
    /// Whether this is the request of a call that shares an identical request another call sent
    /// (``Connect/Settings/coalescesIdenticalRequests``), as observers hear its attempt start
    /// (``ConnectEvent/attemptStarted(attempt:request:)``): no request of its own goes on the wire. For an observer
    /// that counts the wire's requests (`MetricsObserver`), through `@_spi(Observability) import SwiftConnect`.
    @_spi(Observability) public internal(set) var sharesAnotherCallsRequest = false

    /// The body of a request, and whether it can be sent again.
    public enum Body: Sendable {
        /// No body.
        case none
        /// Bytes in memory: sent again as often as needed.
        case bytes(Data)
        /// A stream, read once when the request is sent: it cannot be sent again (a retry, a middleware's second send
        /// of the request, or a redirect that keeps the body fails instead).
        case stream(OneShotStream)

        /// Whether the body can be sent again (a retry, a redirect that keeps it): `false` only for a stream.
        public var isReplayable: Bool {
            if case .stream = self { return false }
            return true
        }
    }

    /// A body read once as it is sent: from an `InputStream`, or from an async sequence of `Data` (a body produced
    /// while it goes, an upload relayed from another stream). The engine takes each chunk when its connection is
    /// ready for it, so the body never has to fit in memory.
    ///
    /// ```swift
    /// let upload = ConnectRequest.OneShotStream(chunks, length: size)  // chunks: AsyncStream<Data>, for example
    /// let request = ConnectRequest(method: .put, url: url, body: .stream(upload))
    /// let response = try await connect.response(for: request, name: "upload").value
    /// ```
    ///
    /// Being read once, such a body is never sent again: the retry policy does not retry it (and logs that it did
    /// not), and a 307 or 308 redirect, which would send it again, is the answer. A stream that fails, or a sequence
    /// that throws, fails the call with ``ConnectError/Kind/invalidRequest`` instead of sending a shorter body.
    ///
    /// `@unchecked Sendable`: the `InputStream` handed out by ``inputStream`` is made and kept under `lock`; the
    /// stream itself is read by the one transport the request goes to, on one thread at a time.
    public final class OneShotStream: @unchecked Sendable, Equatable {
        private let lock = Protected<InputStream?>(nil)
        /// The stream the body was made from, if it was.
        private let stream: InputStream?
        private let makeChunks: @Sendable (ReadingStop) -> RequestBodyChunks.Iterator
        /// The body's length when it is known before it is sent: it goes out as `Content-Length`, and a body of
        /// another length fails the call. `nil`: sent in chunks (`Transfer-Encoding: chunked` over HTTP/1.1), unless
        /// the request has a `Content-Length` field, which then is the length (a value that is no length is refused). On
        /// Linux, `URLSessionTransport` sends every stream in chunks, without `Content-Length` (libcurl cannot be
        /// told a stream's length), still holding it to its length: for a server that needs the field, send a body
        /// in memory or a file, or use `AsyncHTTPClientTransport`.
        public let length: Int64?

        /// Wraps `stream`, to be read once; its length is not known.
        ///
        /// The stream is read with `InputStream`'s blocking `read`, on the thread of the engine that sends it: fine
        /// for data and files; a stream that waits for its bytes (one end of a pipe) holds that thread meanwhile, so
        /// make such a body an async sequence (``init(_:length:)``) instead.
        public init(_ stream: InputStream) {
            self.stream = stream
            makeChunks = RequestBodyChunks.reading(stream)
            length = nil
        }

        /// A body of the chunks `chunks` gives, read once, as the connection takes them.
        ///
        /// When the call ends before the body's end (cancelled, timed out, answered early), `chunks` is asked once more
        /// from a cancelled task, its answer dropped: an `AsyncStream`'s `onTermination` runs then, whatever the engine
        /// was doing.
        ///
        /// - Parameters:
        ///   - chunks: The body's bytes in order; empty chunks are skipped, and an error thrown fails the call.
        ///   - length: The number of bytes `chunks` gives, if known; `nil` sends the body in chunks. A length below 0
        ///     fails the call with ``ConnectError/Kind/invalidRequest``, nothing sent.
        public init<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks, length: Int64? = nil)
        where Chunks.Element == Data {
            stream = nil
            makeChunks = RequestBodyChunks.reading(chunks)
            self.length = length
        }

        /// The body's chunks, as an engine reads them.
        public var chunks: RequestBodyChunks { RequestBodyChunks(make: makeChunks) }

        /// The body as an `InputStream`: the stream it was made from, or one that reads its chunks (made once,
        /// for code that takes a `URLRequest`).
        public var inputStream: InputStream {
            if let stream { return stream }
            return lock.withLock { bridge in
                if let bridge { return bridge }
                let made = RequestBodyChunks.inputStream(BlockingChunkReader(chunks), onFailure: {})
                OneShotStream.bridges.register(made, for: self)
                bridge = made
                return made
            }
        }

        /// The body an `InputStream` handed out by ``inputStream`` stands for, so that a request that went through
        /// a `URLRequest` and back reads the chunks, not the stream made of them.
        static func owner(of stream: InputStream) -> OneShotStream? { bridges.owner(of: stream) }

        private static let bridges = BridgeRegistry()

        /// Whether both are the same body: the same object, or wrappers of the same `InputStream`.
        public static func == (lhs: OneShotStream, rhs: OneShotStream) -> Bool {
            if let left = lhs.stream, let right = rhs.stream { return left === right }
            return lhs === rhs
        }
    }

    /// The `InputStream`s made for bodies of chunks, each with its body, both held weakly.
    private final class BridgeRegistry: Sendable {
        private struct Entry {
            weak var stream: InputStream?
            weak var owner: OneShotStream?
        }

        private let entries = Protected<[ObjectIdentifier: Entry]>([:])

        func register(_ stream: InputStream, for owner: OneShotStream) {
            entries.withLock { entries in
                entries = entries.filter { $0.value.stream != nil && $0.value.owner != nil }
                entries[ObjectIdentifier(stream)] = Entry(stream: stream, owner: owner)
            }
        }

        func owner(of stream: InputStream) -> OneShotStream? {
            entries.withLock { entries in
                guard let entry = entries[ObjectIdentifier(stream)], entry.stream === stream else { return nil }
                return entry.owner
            }
        }
    }

    /// A request with each part given.
    ///
    /// - Parameters:
    ///   - method: The method; GET by default.
    ///   - url: The URL.
    ///   - headerFields: The header fields.
    ///   - body: The body; none by default.
    ///   - timeoutInterval: The timeout in seconds; 60 by default.
    ///   - cachePolicy: URLSession's cache policy; `.useProtocolCachePolicy` by default.
    public init(
        method: HTTPMethod = .get,
        url: URL,
        headerFields: HeaderFields = [:],
        body: Body = .none,
        timeoutInterval: TimeInterval = 60,
        cachePolicy: URLRequest.CachePolicy = .useProtocolCachePolicy
    ) {
        self.method = method
        self.url = url
        self.headerFields = headerFields
        self.body = body
        self.timeoutInterval = timeoutInterval
        self.cachePolicy = cachePolicy
    }

    /// The request `request` describes, keeping the properties the model does not carry for ``urlRequest``.
    ///
    /// - Parameter request: A `URLRequest` with a URL.
    /// - Throws: ``ConnectError/Kind/invalidRequest`` when it has no URL.
    public init(_ request: URLRequest) throws {
        guard let url = request.url else {
            var error = ConnectError.invalidRequest(.invalidURL(""), request: request)
            error.message = "the request has no URL"
            throw error
        }
        self.init(
            method: HTTPMethod(rawValue: request.httpMethod ?? "GET"), url: url,
            headerFields: HeaderFields(foundation: request.allHTTPHeaderFields), body: Body(of: request),
            timeoutInterval: request.timeoutInterval, cachePolicy: request.cachePolicy)
        foundationBase = request
    }

    /// What a `URLRequest` says beyond the core's model, for telling apart requests that are otherwise the same.
    struct FoundationExtras: Hashable, Sendable {
        var handlesCookies = true
        var allowsCellular = true
        var allowsExpensive = true
        var allowsConstrained = true
        var service: UInt = 0

        init() {}

        /// Sets these on `request`: what a hop's `URLRequest`, made from the core's model, takes from the one the
        /// caller's request was made from.
        func apply(to request: inout URLRequest) {
            if !handlesCookies { request.httpShouldHandleCookies = false }
            if !allowsCellular { request.allowsCellularAccess = false }
            if service != 0, let type = URLRequest.NetworkServiceType(rawValue: service) {
                request.networkServiceType = type
            }
            #if !canImport(FoundationNetworking)
                if !allowsExpensive { request.allowsExpensiveNetworkAccess = false }
                if !allowsConstrained { request.allowsConstrainedNetworkAccess = false }
            #endif
        }

        init(_ request: URLRequest) {
            handlesCookies = request.httpShouldHandleCookies
            allowsCellular = request.allowsCellularAccess
            service = request.networkServiceType.rawValue
            #if !canImport(FoundationNetworking)
                allowsExpensive = request.allowsExpensiveNetworkAccess
                allowsConstrained = request.allowsConstrainedNetworkAccess
            #endif
        }
    }

    /// What the `URLRequest` the request was made from says beyond the model (cookies, cellular, expensive and
    /// constrained network access, service type); a new `URLRequest`'s defaults when it was not made from one.
    var foundationExtras: FoundationExtras {
        foundationBase.map(FoundationExtras.init) ?? FoundationExtras()
    }

    /// The request as Foundation's `URLRequest`, for a transport that takes one: made when asked, at the edge.
    ///
    /// Repeated header names are joined as ``HeaderFields`` joins them; values are set as they are (the client has
    /// refused CR, LF and NUL before a transport sees them).
    public var urlRequest: URLRequest {
        var request: URLRequest
        if var base = foundationBase {
            base.url = url
            base.cachePolicy = cachePolicy
            base.timeoutInterval = timeoutInterval
            base.allHTTPHeaderFields = nil
            base.httpBody = nil
            base.httpBodyStream = nil
            request = base
        } else {
            request = URLRequest(url: url, cachePolicy: cachePolicy, timeoutInterval: timeoutInterval)
        }
        // A new URLRequest already says GET; setting it again costs a normalisation pass in Foundation.
        if method != .get || request.httpMethod != "GET" { request.httpMethod = method.rawValue }
        switch body {
        case .none: break
        case .bytes(let data): request.httpBody = data
        case .stream(let stream): request.httpBodyStream = stream.inputStream
        }
        if !headerFields.isEmpty { request.allHTTPHeaderFields = headerFields.foundationFields }
        return request
    }
}

// MARK: - The names of URLRequest

extension ConnectRequest {
    /// The method's name, as `URLRequest` has it; setting `nil` makes it GET.
    public var httpMethod: String? {
        get { method.rawValue }
        set { method = HTTPMethod(rawValue: newValue ?? "GET") }
    }

    /// The value of the fields named `field` (joined when repeated), as `URLRequest` reads it.
    ///
    /// - Parameter field: The name, in any case.
    /// - Returns: The value, or `nil`.
    public func value(forHTTPHeaderField field: String) -> String? {
        headerFields[HeaderField.Name(field)]
    }

    /// Replaces every field named `field` with one of `value`, or removes them for `nil`, as `URLRequest` does; the
    /// value is kept as it is, and checked before the request is sent.
    ///
    /// - Parameters:
    ///   - value: The value, or `nil`.
    ///   - field: The name.
    public mutating func setValue(_ value: String?, forHTTPHeaderField field: String) {
        headerFields[HeaderField.Name(field)] = value
    }

    /// Adds a field named `field`, keeping those already there (`URLRequest` joins them with a comma: here they stay
    /// separate fields, joined only where a transport needs one line).
    ///
    /// - Parameters:
    ///   - value: The value.
    ///   - field: The name.
    public mutating func addValue(_ value: String, forHTTPHeaderField field: String) {
        headerFields.append(HeaderField(name: HeaderField.Name(field), value: value))
    }

    /// The header fields as `URLRequest` has them: one value a name.
    public var allHTTPHeaderFields: [String: String]? {
        get { headerFields.foundationFields }
        set { headerFields = HeaderFields(foundation: newValue) }
    }

    /// The body in memory, as `URLRequest` has it; setting replaces the body (`nil`: none).
    public var httpBody: Data? {
        get {
            if case .bytes(let data) = body { return data }
            return nil
        }
        set { body = newValue.map(Body.bytes) ?? .none }
    }

    /// The body stream, as `URLRequest` has it; setting replaces the body (`nil`: none).
    public var httpBodyStream: InputStream? {
        get {
            if case .stream(let stream) = body { return stream.inputStream }
            return nil
        }
        set { body = newValue.map { .stream(OneShotStream.owner(of: $0) ?? OneShotStream($0)) } ?? .none }
    }
}

extension ConnectRequest.Body {
    /// Whether there is a body to send: bytes that are not empty, or a stream.
    var isPresent: Bool {
        switch self {
        case .none: return false
        case .bytes(let data): return !data.isEmpty
        case .stream: return true
        }
    }

    /// The body of `request`.
    init(of request: URLRequest) {
        if let data = request.httpBody {
            self = .bytes(data)
        } else if let stream = request.httpBodyStream {
            self = .stream(ConnectRequest.OneShotStream.owner(of: stream) ?? ConnectRequest.OneShotStream(stream))
        } else {
            self = .none
        }
    }
}

extension HeaderFields {
    /// The fields of Foundation's dictionary, in its order.
    init(foundation fields: [String: String]?) {
        self.init()
        guard let fields, !fields.isEmpty else { return }
        reserveCapacity(fields.count)
        for (name, value) in fields { append(HeaderField(name: HeaderField.Name(name), value: value)) }
    }

    /// The fields as Foundation holds them: one value a name, repeated names joined (`"; "` for `Cookie`).
    var foundationFields: [String: String] {
        var joined: [String: String] = [:]
        joined.reserveCapacity(count)
        var spelling: [String: String] = [:]  // lower case → the first spelling met
        for field in self {
            let key = field.name.canonicalName
            if let first = spelling[key] {
                joined[first] = self[field.name]
            } else {
                spelling[key] = field.name.rawName
                joined[field.name.rawName] = field.value
            }
        }
        return joined
    }
}

// MARK: - Redaction

extension ConnectRequest {
    /// The URL as SwiftConnect's own output shows it: without `user:password@`, with the values of secret query
    /// items (`token`, `api_key`…) hidden, and with every secret value the request carries (its credentials, in any
    /// header or field) hidden wherever it appears again. For traces and logs of your own (OpenTelemetry's
    /// `url.full`), where the URL itself must not leak a secret.
    ///
    /// ```swift
    /// let request = ConnectRequest(url: URL(string: "https://api.example.com/v1/me?token=abc&page=2")!)
    /// request.redactedURL  // "https://api.example.com/v1/me?token=<redacted>&page=2"
    /// ```
    public var redactedURL: String {
        SecretValues(of: self).hiding(in: Redaction.url(url, redacting: true))
    }
}

extension ConnectRequest: CustomStringConvertible, CustomReflectable {
    /// The method and ``redactedURL``, then the header fields one a line with secret values hidden: what
    /// `print(request)` shows in a middleware of your own, so that it leaks no credential into a log. A value is hidden
    /// by its field's name and, as in cURL output, wherever it repeats a secret the request carries (a custom field
    /// quoting the `Authorization` token).
    public var description: String {
        let secrets = SecretValues(of: self)
        let line = "\(method.rawValue) \(secrets.hiding(in: Redaction.url(url, redacting: true)))"
        return headerFields.isEmpty ? line : line + "\n" + headerFields.hidingValues(secrets).description
    }

    /// The parts as ``description`` shows them, so that `dump(request)` and a debugger show no secret either: the URL
    /// redacted, the fields' secret values hidden, the body by its size.
    public var customMirror: Mirror {
        let secrets = SecretValues(of: self)
        let body: String =
            switch self.body {
            case .none: "none"
            case .bytes(let data): "\(data.count) bytes"
            case .stream: "a one-shot stream"
            }
        return Mirror(
            self,
            children: [
                "method": method.rawValue, "url": secrets.hiding(in: Redaction.url(url, redacting: true)),
                "headerFields": headerFields.hidingValues(secrets), "body": body, "timeoutInterval": timeoutInterval,
            ],
            displayStyle: .struct)
    }
}
