import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
@_spi(Engine) import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A ``SwiftConnect/Transport`` that sends requests with AsyncHTTPClient (SwiftNIO): the engine for Linux
/// servers, and for apps that want control over TLS trust.
///
/// ```swift
/// let transport = AsyncHTTPClientTransport()
/// let connect = Connect(transport: transport)
/// let todo = try await connect.request(TodoConnector.get(id: 1)).decoded(toType: Todo.self).value
/// try await transport.shutdown()
/// ```
///
/// It is a drop-in for ``SwiftConnect/URLSessionTransport``: the client's behaviour (retries, token refresh,
/// queue, cache, transfers, progress, size limits) is the same, and so are the policies the core owns. The
/// transport is an engine of the core's exchange (`HTTPEngine`, SPI): it sends one hop at a time, and the core's
/// exchange applies the rules around it, as for any engine:
///
/// - **Redirects** follow SwiftConnect's rules, applied by the core, so the transport turns AsyncHTTPClient's
///   own redirect handling off: credentials never follow a redirect to another origin,
///   307/308 keep the body, at most 20 hops. A cookie set by a redirect response is sent on the next hop. No cookie
///   store is kept from one request to the next.
/// - **Deadlines**: a request's `timeoutInterval` bounds the whole exchange, redirects included, to the
///   nanosecond.
/// - **Size limits** stop reading: a body refused at its limit is not kept, and the connection is closed.
/// - **Compressed bodies** (gzip, deflate) are decoded, and the size limit counts the decoded bytes. A body in
///   another coding (`br`, `zstd`…) fails with ``SwiftConnect/ConnectError/Kind/transport`` naming it.
///
/// ## Certificate pinning
///
/// Pins (``SwiftConnect/CertificatePins``) are checked during the TLS handshake, before any byte of the request is
/// sent: the chain is validated against the trust roots of the TLS configuration (the system's by default), and a
/// chain without a pinned key fails with ``SwiftConnect/ConnectError/Kind/certificatePinning`` naming the host.
/// AsyncHTTPClient has no hook into its own handshakes, so the transport connects to pinned hosts itself and relays
/// AsyncHTTPClient's connections to them through a Unix socket in a private temporary directory. Pinned hosts are
/// therefore spoken to over HTTP/1.1, directly rather than through a proxy (a configuration with a proxy, a
/// `localAddress` or a `dnsResolver` of `.randomized` has them refused, nothing sent; its `dnsOverride` still applies: a pinned host it maps elsewhere is
/// connected to there, and checked by its own name); other hosts are unaffected. A pinned host's body that ends with
/// its connection (no length, not chunked) fails with
/// ``SwiftConnect/ConnectError/Kind/connectionLost`` when its TLS connection ends without `close_notify`, as for an
/// unpinned host; through the relay this is told by host, not by connection, so another connection to that host
/// breaking meanwhile fails such a body too. A relay (a listening socket) is made for each pinned host and port the
/// transport reaches, however a URL writes the host (`LOCALHOST`, `127.1`), and kept until ``shutdown()``: a `*.`
/// pattern that reaches a new host per tenant makes one per tenant.
///
/// Each request runs in a task of its own; callbacks chained on its future run in that task for small bodies
/// (under 32 KiB), on a global dispatch queue for larger ones: don't block in them.
///
/// A transport's requests keep to one of the client's event loops, where their pooled connections live, until 16 are
/// in flight on it; past that, new requests go to the least busy loop. So a request's response never hops between the
/// loops' threads when a connection on its own loop is idle, and a busy server's requests still spread over every
/// loop.
///
/// ## Many open streams
///
/// Each open stream (server-sent events, a long download) holds one connection, and AsyncHTTPClient opens at most 8
/// to a host by default: the 9th stream waits for one to end. Raise the limit to the number of streams plus the other
/// requests you make to that host at the same time:
///
/// ```swift
/// var configuration = AsyncHTTPClientTransport.defaultConfiguration
/// configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 1_001
/// let transport = AsyncHTTPClientTransport(configuration: configuration)
/// ```
///
/// That limit is HTTP/1's. Over HTTP/2, which the default configuration negotiates with an https server that offers
/// it, the streams share one connection and the server's limit on concurrent streams holds (nginx: 128): past it a
/// stream waits for one to end, for ever under `timeout: .infinity`. For many long-lived streams to such a server,
/// also set `configuration.httpVersion = .http1Only`.
///
/// Each connection is also a file descriptor: 1,000 streams need a limit on open files (`ulimit -n`, 1,024 by
/// default on many systems) of at least 1,000 plus what the process opens otherwise. BENCHMARKS.md (`Scale/`) states
/// the memory an open stream costs.
///
/// ## Shutting down
///
/// A transport made with ``init(configuration:eventLoopGroup:)`` owns its `HTTPClient`: call ``shutdown()`` once
/// the last request is done, to close its connections. A transport released without it shuts its client down by
/// itself, in the background (it never crashes, as an `HTTPClient` released without shutting down does in debug
/// builds); an explicit shutdown is still the way to know when the connections are closed. A transport made with
/// ``init(client:)`` leaves the client to its owner.
public final class AsyncHTTPClientTransport: Transport {
    /// The client that runs the requests.
    public let client: HTTPClient
    /// Whether this transport made `client`, and so shuts it down.
    private let ownsClient: Bool
    /// The pinned hosts, and the connections the transport makes to them itself.
    let pinned: PinnedRoutes
    /// The content codings the client decodes: gzip and deflate when its configuration turns AsyncHTTPClient's
    /// decompression on, none when it is off (the default: SwiftConnect's core then decodes them, in bounded
    /// parts). Over an app's client (``init(client:pins:tlsConfiguration:)``), the same, read from the client's
    /// configuration by reflection (AsyncHTTPClient keeps it internal). Its decompressor reads `Content-Encoding`
    /// only, and by its first coding alone: with it on, a body in a transfer coding other than `chunked`, or in
    /// several content codings (`gzip, gzip`), is refused (``send(_:)``).
    @_spi(Engine) public let decodedContentCodings: Set<String>
    /// The event loop each request's callbacks run on (``LoopAffinity``).
    let affinity: LoopAffinity
    /// Whether ``shutdown()`` has been called (so `deinit` has nothing left to do).
    private let shutDown = NIOLockedValueBox(false)
    /// Why every request is refused, nothing sent: the app's client follows redirects itself
    /// (``init(client:pins:tlsConfiguration:)``). `nil`: requests go.
    private let refusal: String?

    /// The configuration of a transport's own client: AsyncHTTPClient's defaults, with its decompression off, and a
    /// connection that cannot be made failing at once (``SwiftConnect/RetryPolicy`` decides what is tried again), and
    /// no redirect followed by AsyncHTTPClient (an app's client made with it is one the transport can run on).
    /// The transport turns redirect following off in whatever configuration it is given: it follows redirects
    /// itself, by SwiftConnect's rules. AsyncHTTPClient's own tracing is off (`tracing.tracer = nil`): it would make
    /// a second span per request with the bootstrapped tracer, its URL's query in clear; the Tracing package's
    /// `TracingObserver` makes the call's spans.
    ///
    /// gzip and deflate bodies are still decoded, by SwiftConnect's core, which asks for them in `Accept-Encoding`:
    /// in parts of at most 64 KiB that the size limit and a stream's back-pressure see, so a small body that
    /// decodes to gigabytes stops at the limit. AsyncHTTPClient's own decompression (`.enabled(limit:)`, which the
    /// transport honours if you set it) decodes each read of the socket whole, before a limit can stop it.
    public static var defaultConfiguration: HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.decompression = .disabled
        // A connection that cannot be made fails the request at once, as with URLSession, instead of being tried
        // again until the connect timeout: SwiftConnect's RetryPolicy decides what is tried again, and when.
        configuration.connectionPool.retryConnectionEstablishment = false
        // SwiftConnect follows redirects by its own rules; an app's client made with this configuration must not
        // (``init(client:pins:tlsConfiguration:)`` refuses one that does).
        configuration.redirectConfiguration = .disallow
        // No span of AsyncHTTPClient's own: it would take the tracer bootstrapped at this moment and make a second
        // CLIENT span per hop, the root of a trace of its own, with the URL's query in clear (`url.full`, `url.query`:
        // `?api_key=…`). The Tracing package's `TracingObserver` makes the call's spans, their URLs redacted.
        if #available(macOS 10.15, iOS 13, tvOS 13, watchOS 6, *) { configuration.tracing.tracer = nil }
        return configuration
    }

    /// Creates a transport with an `HTTPClient` of its own; call ``shutdown()`` when done with it.
    ///
    /// - Parameters:
    ///   - configuration: The client's configuration (TLS, timeouts, pool, proxy…). Its redirect configuration
    ///     is replaced: the transport follows redirects itself. Its tracer is removed (`tracing.tracer = nil`), as
    ///     in ``defaultConfiguration``: a `Configuration` made after a tracer was bootstrapped holds that tracer, and
    ///     AsyncHTTPClient would make a span of its own per request, its URL's query in clear (to keep AsyncHTTPClient's
    ///     spans, give the transport your client: ``init(client:pins:tlsConfiguration:)``). Defaults to ``defaultConfiguration``.
    ///   - eventLoopGroup: The event loops the client runs on. Defaults to AsyncHTTPClient's shared group.
    ///   - pins: Certificate pins, checked during the handshake (see "Certificate pinning" above), with the
    ///     configuration's `tlsConfiguration` for trust. A pinned host is refused, nothing sent, when it cannot be
    ///     reached pinned: over plain `http`, with certificate verification off, through the configuration's proxy,
    ///     with its `localAddress` set, or with its `dnsResolver` `.randomized`.
    public init(
        configuration: HTTPClient.Configuration = AsyncHTTPClientTransport.defaultConfiguration,
        eventLoopGroup: any EventLoopGroup = HTTPClient.defaultEventLoopGroup,
        pins: CertificatePins = CertificatePins()
    ) {
        pinned = PinnedRoutes(
            pins: pins, tls: configuration.tlsConfiguration, group: eventLoopGroup,
            connectTimeout: configuration.timeout.connect ?? .seconds(10), dnsOverride: configuration.dnsOverride,
            unusable: Self.whyPinnedHostsCannotBeReached(over: configuration, whose: "the transport's client"))
        let configuration = Self.ownClientConfiguration(configuration)
        decodedContentCodings = Self.decodedContentCodings(of: configuration)
        client = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: configuration)
        affinity = LoopAffinity(group: eventLoopGroup)
        ownsClient = true
        refusal = nil
    }

    /// `configuration` as the transport's own client runs it: redirects off (the transport follows them itself) and
    /// no tracer (an app's own configuration, made for its TLS settings, holds the tracer bootstrapped when it was
    /// made).
    static func ownClientConfiguration(_ configuration: HTTPClient.Configuration) -> HTTPClient.Configuration {
        var configuration = configuration
        configuration.redirectConfiguration = .disallow
        if #available(macOS 10.15, iOS 13, tvOS 13, watchOS 6, *) { configuration.tracing.tracer = nil }
        return configuration
    }

    /// Creates a transport over the app's own client, which its owner shuts down.
    ///
    /// Give it a client configured with `redirectConfiguration: .disallow`, so that redirects follow SwiftConnect's
    /// rules, and with `connectionPool.retryConnectionEstablishment = false`, as ``defaultConfiguration`` has: else a
    /// connection that cannot be made is tried again until the client's connect timeout, and the call fails as timed
    /// out at its deadline, not as `.cannotConnect` at once. With a tracer bootstrapped, also set
    /// `tracing.tracer = nil`: AsyncHTTPClient would make a span of its own per request, its URL's query
    /// (`?api_key=…`) in clear, beside `TracingObserver`'s. A client that follows redirects by itself
    /// (AsyncHTTPClient's default; `HTTPClient.shared` is one) would apply AsyncHTTPClient's rules instead of
    /// SwiftConnect's, which remove `Authorization`, `Cookie` and `Proxy-Authorization` on a change of origin but not
    /// the other credential headers SwiftConnect removes (`X-Api-Key`, `*-Token`…), and follow them where pins cannot
    /// be checked: every request over such a client, or one whose configuration cannot be read, is refused, nothing
    /// sent, with ``SwiftConnect/ConnectError/Kind/transport`` and a message saying so (with `pins`,
    /// ``SwiftConnect/ConnectError/Kind/certificatePinning``).
    ///
    /// - Parameters:
    ///   - client: The client, configured with `redirectConfiguration: .disallow`.
    ///   - pins: Certificate pins, checked during the handshake as with ``init(configuration:eventLoopGroup:pins:)``:
    ///     a pinned host is refused, nothing sent, when it cannot be reached pinned, over plain `http`, with
    ///     certificate verification off, or when the client goes through a proxy, sets a `localAddress` or resolves
    ///     with a `dnsResolver` of `.randomized`.
    ///   - tlsConfiguration: The TLS configuration of the connections to pinned hosts, whose trust roots validate
    ///     their chains. Defaults to the client's own, else NIOSSL's client configuration (the system's trust roots).
    ///
    /// AsyncHTTPClient keeps a client's configuration internal; the transport reads it by reflection, for what it
    /// applies itself: whether the client decodes gzip and deflate (else SwiftConnect's core does), its proxy, its
    /// TLS configuration and connect timeout for pinned hosts. Should a later AsyncHTTPClient store it otherwise,
    /// the transport takes the client to decode both codings, and refuses every request while pins are set
    /// (``SwiftConnect/ConnectError/Kind/certificatePinning``, nothing sent): it cannot tell whether the client
    /// would follow a redirect to a pinned host past the relay.
    public init(
        client: HTTPClient, pins: CertificatePins = CertificatePins(), tlsConfiguration: TLSConfiguration? = nil
    ) {
        let configuration = Self.configuration(of: client)
        pinned = PinnedRoutes(
            pins: pins, tls: tlsConfiguration ?? configuration?.tlsConfiguration, group: client.eventLoopGroup,
            connectTimeout: configuration?.timeout.connect ?? .seconds(10),
            dnsOverride: configuration?.dnsOverride ?? [:],
            unusable: configuration.flatMap { Self.whyPinnedHostsCannotBeReached(over: $0, whose: "the app's client") },
            unusableForEveryHost: Self.whyNoRequestMayGoPinned(over: configuration))
        self.client = client
        affinity = LoopAffinity(group: client.eventLoopGroup)
        ownsClient = false
        refusal = Self.refusal(over: configuration)
        // Without its configuration, gzip and deflate, the most the client can decode: a compressed answer it did not
        // decode then fails to parse, where decoding twice would fail every compressed answer.
        decodedContentCodings = configuration.map(Self.decodedContentCodings(of:)) ?? ["gzip", "deflate"]
    }

    /// Why pinned hosts cannot be reached over a client with `configuration`, or `nil`: a proxy (the relay connects
    /// directly), a `localAddress`, which the client binds every connection to, the one to a relay's Unix socket
    /// too (the bind fails with `EINVAL`), or a `dnsResolver` of `.randomized`, which the client makes for every
    /// connection, the one to a relay's Unix socket too, where it is never used (a debug build stops over its
    /// leaked promise).
    static func whyPinnedHostsCannotBeReached(over configuration: HTTPClient.Configuration, whose owner: String)
        -> String?
    {
        if configuration.proxy != nil { return "\(owner) goes through a proxy" }
        if configuration.localAddress != nil {
            return "\(owner) binds its connections to a localAddress, which the connection to a pinned host's relay "
                + "(a Unix socket) cannot take"
        }
        if configuration.dnsResolver == .randomized {
            // AsyncHTTPClient 1.37 makes the resolver for every connection, and a Unix socket's never resolves: NIO
            // stops a debug build over the promise it leaks. The relay would have to resolve the host itself.
            return "\(owner) resolves with dnsResolver .randomized, which AsyncHTTPClient cannot apply to the "
                + "connection to a pinned host's relay (a Unix socket): a debug build stops there"
        }
        return nil
    }

    /// Why no request may go over an app's client with `configuration` (`nil` if it cannot be read) while pins are
    /// set, or `nil`: a client that follows redirects itself takes the next hop to its host without the relay that
    /// checks that host's pins (a redirect from an unpinned host to a pinned one went through unchecked).
    static func whyNoRequestMayGoPinned(over configuration: HTTPClient.Configuration?) -> String? {
        guard let configuration else {
            return "the app's client's configuration cannot be read, so whether it follows redirects itself is unknown"
        }
        guard followsRedirects(configuration) == false else {
            return "the app's client follows redirects itself (give it redirectConfiguration: .disallow)"
        }
        return nil
    }

    /// Why every request over an app's client with `configuration` is refused, or `nil`: one that follows redirects
    /// itself, or may (its configuration, which AsyncHTTPClient keeps internal, cannot be read), would take them by
    /// AsyncHTTPClient's rules, past SwiftConnect's.
    static func refusal(over configuration: HTTPClient.Configuration?) -> String? {
        let advice =
            " (a credential header such as X-Api-Key would go to another origin): make it with "
            + "redirectConfiguration: .disallow, or use AsyncHTTPClientTransport(configuration:); the request is "
            + "refused, nothing sent"
        switch configuration.map(followsRedirects) {
        case false??:
            return nil
        case true??:
            return "the app's HTTPClient follows redirects itself, past SwiftConnect's redirect rules" + advice
        default:
            return "whether the app's HTTPClient follows redirects itself cannot be read (AsyncHTTPClient keeps its "
                + "configuration internal), so it may, past SwiftConnect's redirect rules" + advice
        }
    }

    /// Whether a client with `configuration` follows redirects itself; `nil` if that cannot be read (AsyncHTTPClient
    /// keeps the mode internal: read by reflection).
    static func followsRedirects(_ configuration: HTTPClient.Configuration) -> Bool? {
        guard let mode = Mirror(reflecting: configuration.redirectConfiguration).descendant("mode") else { return nil }
        return String(describing: mode) != "disallow"
    }

    /// The content codings a client with `configuration` decodes itself.
    static func decodedContentCodings(of configuration: HTTPClient.Configuration) -> Set<String> {
        if case .disabled = configuration.decompression { return [] }
        return ["gzip", "deflate"]
    }

    /// An app's client's configuration, which AsyncHTTPClient keeps internal, read by reflection; `nil` if a later
    /// AsyncHTTPClient stores it otherwise (a test here says so). Its decompressor leaves `Content-Encoding` in the
    /// head, so an answer cannot tell whether its body was decoded: the configuration has to.
    static func configuration(of client: HTTPClient) -> HTTPClient.Configuration? {
        Mirror(reflecting: client).descendant("configuration") as? HTTPClient.Configuration
    }

    deinit {
        guard !shutDown.withLockedValue({ $0 }) else { return }
        // Forgotten: shut down in the background. The client stays alive until its shutdown is done.
        let pinned = pinned
        guard ownsClient else {
            Task { await pinned.shutdown() }
            return
        }
        client.shutdown(queue: .global()) { _ in Task { await pinned.shutdown() } }
    }

    /// Shuts the transport down: its own client cancels the requests in flight (they fail with
    /// ``SwiftConnect/ConnectError/Kind/cancelled``: shut down once they are done) and closes every connection, and
    /// the sockets that relay pinned hosts are closed. Requests sent afterwards fail with
    /// ``SwiftConnect/ConnectError/Kind/transport``. A transport made over the app's client leaves that client
    /// running. Does nothing the second time.
    public func shutdown() async throws {
        guard markShutDown() else { return }
        if ownsClient { try await client.shutdown().get() }
        await pinned.shutdown()
    }

    /// Marks the transport shut down; `false` when it already was.
    private func markShutDown() -> Bool {
        shutDown.withLockedValue { done in
            defer { done = true }
            return !done
        }
    }
}

// MARK: - Reflection

extension AsyncHTTPClientTransport: CustomReflectable {
    /// What `dump`, `Mirror` and a debugger show of the transport: whether it owns its client, its pins and the
    /// codings its client decodes, never the client itself, whose configuration holds the proxy's credentials
    /// (`Proxy-Authorization`) and `CONNECT` headers, and whose reflection would show them.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "client": "HTTPClient (its configuration not shown)", "ownsClient": ownsClient,
                "pins": pinned.pins, "decodedContentCodings": decodedContentCodings,
            ], displayStyle: .class)
    }
}

// MARK: - The engine seam

/// The transport as an engine of the core's exchange: a `Transport` for every app, an `HTTPEngine` for a module
/// that imports the engine seam (`@_spi(Engine) import SwiftConnect`).
@_spi(Engine)
extension AsyncHTTPClientTransport: HTTPEngine {
    /// Sends one hop with the client: the core's exchange calls it for each hop and applies every rule around it. A
    /// pinned host's hop goes through its relay. The hop's deadline is the core's: when it passes, the exchange cancels
    /// the hop, which cancels AsyncHTTPClient's task, body included.
    ///
    /// - Parameter hop: The head and body to send.
    /// - Returns: The response head, its fields copied one by one (repeated ones kept), and its body to read: every
    ///   part that arrived before a failure reaches its reader before the failure does (see ``ResponseBody``).
    public func send(_ hop: EngineRequest) async throws -> EngineResponse<ResponseBody> {
        // As its own client refuses after `shutdown()`; an app's client it was made over would still send.
        if shutDown.withLockedValue({ $0 }) { throw HTTPClientError.alreadyShutdown }
        let relay = try await pinned.relay(for: hop)
        // After the pins' own refusal of such a client, which says why in their terms.
        if let refusal { throw ConnectError(.transport, message: refusal) }
        let (eventLoop, ticket) = affinity.take()
        let writer = BodyWriter()
        let request: HTTPClient.Request
        do {
            request = try RequestConversion.request(
                for: hop, relay: relay?.socketPath, eventLoop: eventLoop, writer: writer)
        } catch {
            affinity.release(ticket)
            throw error
        }
        // The delegate API, not `execute(_:deadline:)`: the async API's body drops the last parts of a body whose
        // connection fails (`ResponseDelivery`). No deadline for AsyncHTTPClient: the core's exchange holds the hop's
        // deadline and cancels the hop when it passes, which cancels the task; a deadline given here too would cost
        // each request a timer scheduled on the event loop, and a callback registered there, from this thread.
        // The loop is given back as the body ends, before the exchange can see the end and start another request.
        // Through a relay, a broken connection reaches AsyncHTTPClient as a close: the relay counts them. A body that
        // ends at the close fails if one broke meanwhile (another request's, to the same host, can make it fail too:
        // the safe side of what cannot be told apart here).
        var connectionBroke: (@Sendable () -> Bool)?
        if let relay {
            let brokenBefore = relay.brokenConnectionCount
            connectionBroke = { relay.brokenConnectionCount > brokenBefore }
        }
        // A body from memory is written by AsyncHTTPClient itself: counted as its parts are written (what went
        // before an early answer, no more), in slices when it is long (`DataSlices`). A file's or a
        // stream's chunks are counted as they are handed over.
        var sentPart: (@Sendable (Int64) -> Void)?
        if case .bytes = hop.body { sentPart = hop.sent }
        let delivery = ResponseDelivery(
            writer: writer, decodedContentCodings: decodedContentCodings, isHead: hop.head.method == .head,
            connectionBroke: connectionBroke, sentPart: sentPart, bufferLimit: hop.streamBufferLimit
        ) { [affinity] in affinity.release(ticket) }
        let task = client.execute(request: request, delegate: delivery, eventLoop: .delegate(on: eventLoop))
        // One callback: each registered from off the event loop is a task sent to it, which may wake its thread.
        task.futureResult.whenComplete { result in
            // A client already shut down fails the task without telling the delegate.
            if case .failure(let error) = result { delivery.didReceiveError(task: task, error) }
            writer.stop()
            delivery.ended()
        }
        let head = try await withTaskCancellationHandler {
            try await delivery.head()
        } onCancel: {
            // The body's end first: AsyncHTTPClient then completes a write it holds back (see `BodyWriter.stop`).
            writer.stop()
            task.cancel()
        }
        // Through a relay, a connection to the origin that failed is answered by the relay, naming its failure.
        if let failure = relay?.failure(answering: head) {
            if delivery.stop() { task.cancel() }
            throw failure
        }
        if !decodedContentCodings.isEmpty,
            let coding = ResponseDelivery.transferCoding(of: head, isHead: hop.head.method == .head)
        {
            // The client's decompressor reads `Content-Encoding` only, yet gzip and deflate are announced as decoded, so
            // the core leaves them alone: such a body would reach the caller still coded, as a success.
            if delivery.stop() { task.cancel() }
            throw ConnectError(
                .transport,
                message: "the body is in the transfer coding \(coding), which AsyncHTTPClient's decompression does not "
                    + "decode: refused rather than passed on as a success")
        }
        if !decodedContentCodings.isEmpty,
            let codings = ResponseDelivery.contentCodingsInTurn(of: head, isHead: hop.head.method == .head)
        {
            // The decompressor decodes by the first coding listed only, and the core leaves what it announces alone.
            if delivery.stop() { task.cancel() }
            throw ConnectError(
                .transport,
                message:
                    "the body is encoded in several codings in turn (\(codings.joined(separator: ", "))), of which "
                    + "AsyncHTTPClient's decompression decodes one at most: refused rather than passed on as a success")
        }
        var fields = HeaderFields()
        fields.reserveCapacity(head.headers.count)
        for (name, value) in head.headers { fields.append(HeaderField(name: HeaderField.Name(name), value: value)) }
        let version = head.version.major >= 2 ? "HTTP/2" : "HTTP/\(head.version.major).\(head.version.minor)"
        return EngineResponse(
            head: ResponseHead(status: Int(head.status.code), headerFields: fields), httpVersion: version,
            body: ResponseBody(delivery: delivery, task: task))
    }

    /// AsyncHTTPClient's and SwiftNIO's errors as the ``SwiftConnect/ConnectError`` of the kind URLSession's
    /// equivalent failure has, the engine's error kept underneath (see `ErrorClassification.swift`).
    public func failure(_ error: any Error) -> ConnectError? {
        ErrorClassification.connectError(error, timeout: nil)
    }
}
