import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS
@_spi(Engine) import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Certificate pinning on AsyncHTTPClient, which makes its TLS handlers itself and offers no hook into their
/// handshake: a pinned host is reached through a connection this transport makes, and checks, itself.
///
/// AsyncHTTPClient is handed `http+unix://` URLs to a Unix socket of the transport's own: one per pinned origin, in a
/// directory only this user may open. Each connection AsyncHTTPClient opens there is relayed to the origin over a
/// TLS connection whose handshake ``PinnedTrust`` judges. The relay reads nothing from AsyncHTTPClient's side until
/// the handshake is done and the validated chain has a pinned key, so a request to a server that fails its pins
/// never leaves the process: on a connection that failed, it reads the request only to drop it and answer it with
/// that connection's failure, which the request then reports (``Relay/failure(answering:)``). What it costs, as the transport's documentation says: pinned hosts are spoken to over
/// HTTP/1.1, directly (never through a proxy), through one more in-process hop. A host the client's configuration
/// maps to another in its `dnsOverride` is connected to there, as AsyncHTTPClient would, and named and checked by its
/// own name.
final class PinnedRoutes: Sendable {
    let pins: CertificatePins
    private let tls: TLSConfiguration
    private let group: any EventLoopGroup
    private let connectTimeout: TimeAmount
    /// The client configuration's `dnsOverride`: the host connected to instead of each host it names.
    private let dnsOverride: [String: String]
    /// Why this transport cannot pin at all (a proxy it was configured with), or `nil`.
    private let unusable: String?
    /// Why no request may go at all while pins are set, or `nil`: an app's client that follows redirects itself
    /// would take any request, pinned host or not, to a pinned host without its relay.
    private let unusableForEveryHost: String?
    private let state = NIOLockedValueBox(State())

    private struct State {
        /// The directory of the sockets, made at the first pinned request.
        var directory: String?
        /// The relay of each origin ("host:port", the host as the pins read it: one relay however a URL spells the
        /// host, `LOCALHOST`, `127.1` or `example.com.`), started once.
        var relays: [String: Task<Relay, any Error>] = [:]
        /// The trust and the TLS context every relay shares, made at the first relay's start: the configuration and
        /// the pins are the same for every host, and a context holds its trust roots (the system's bundle by default).
        var shared: (trust: PinnedTrust, context: NIOSSLContext)?
        /// The number of the next socket: each relay gets a name of its own, even after one failed to start.
        var nextSocket = 0
        var isShutDown = false
    }

    init(
        pins: CertificatePins, tls: TLSConfiguration?, group: any EventLoopGroup, connectTimeout: TimeAmount,
        dnsOverride: [String: String] = [:], unusable: String?, unusableForEveryHost: String? = nil
    ) {
        self.pins = pins
        self.tls = tls ?? .makeClientConfiguration()
        self.group = group
        self.connectTimeout = connectTimeout
        self.dnsOverride = dnsOverride
        self.unusable = unusable
        self.unusableForEveryHost = unusableForEveryHost
    }

    /// Why this platform cannot check pins here, or `nil` on Linux. On Apple platforms the relay's `ServerBootstrap`
    /// needs a NIOPosix group (AsyncHTTPClient's default there is Network.framework's, and NIO stops the process on
    /// it), and swift-certificates finds no system trust roots to validate against: a pinned host is refused, typed,
    /// rather than the process stopped or every chain judged untrusted. `URLSessionTransport` pins on Apple
    /// platforms with the system's trust.
    static var unsupportedPlatform: String? {
        #if os(Linux)
            nil
        #else
            "AsyncHTTPClientTransport checks pins on Linux only; on this platform use URLSessionTransport, which "
                + "checks them with the system's trust"
        #endif
    }

    /// The relay that `hop` goes through, or `nil` when its host is not pinned.
    ///
    /// - Throws: The core's refusal (`CertificatePins.refusal(of:by:checksHandshake:)`: plain `http`
    ///   to a pinned host), or ``PinnedFailure`` when this transport cannot reach the host pinned (certificate
    ///   verification off, a proxy, trust roots that cannot be read, a relay that cannot start).
    func relay(for hop: EngineRequest) async throws -> Relay? {
        if !pins.isEmpty, let reason = unusableForEveryHost { throw PinnedFailure.unusableForEveryHost(reason: reason) }
        guard !pins.isEmpty, let url = hop.head.url, let host = url.host.map(Self.bare), pins.pins(for: host) != nil
        else { return nil }
        if let refusal = pins.refusal(of: url, by: "AsyncHTTPClientTransport", checksHandshake: true) {
            throw refusal
        }
        if let unusable { throw PinnedFailure.unusable(host: host, reason: unusable) }
        if let platform = Self.unsupportedPlatform { throw PinnedFailure.unusable(host: host, reason: platform) }
        guard tls.certificateVerification != .none else {
            throw PinnedFailure.unusable(
                host: host, reason: "the TLS configuration turns certificate verification off")
        }
        let port = url.port ?? 443
        // One relay per host however a URL spells it, which connects to, names (SNI) and checks the host as the pins
        // read it: a relay made for `2130706433` or `LOCALHOST` serves `127.0.0.1` or `localhost` alike.
        let canonical = CertificatePins.comparableHost(host)
        let key = "\(canonical):\(port)"
        let task: Task<Relay, any Error> = try state.withLockedValue { state in
            if state.isShutDown { throw HTTPClientError.alreadyShutdown }
            if let task = state.relays[key] { return task }
            let task = Task { try await self.start(host: canonical, port: port, key: key) }
            state.relays[key] = task
            return task
        }
        return try await task.value
    }

    /// Starts the relay of `host` (as the pins read it):`port`; a relay that cannot start is forgotten, so the next
    /// request tries again.
    private func start(host: String, port: Int, key: String) async throws -> Relay {
        do {
            let (trust, context) = try sharedTrustAndContext(host: host)
            let path = try state.withLockedValue { state in
                if state.directory == nil { state.directory = try Self.makeDirectory() }
                state.nextSocket += 1
                return state.directory! + "/\(state.nextSocket).sock"
            }
            // The configuration's override for the host, however its key spells it.
            let override = dnsOverride.first { CertificatePins.comparableHost($0.key) == host }?.value
            let dialer = Dialer(
                host: host, address: override ?? host, port: port, context: context, trust: trust,
                connectTimeout: connectTimeout)
            let server = try await ServerBootstrap(group: group)
                .childChannelOption(.autoRead, value: false)
                .childChannelInitializer { child in dialer.accept(child) }
                .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true)
                .get()
            return Relay(socketPath: path, server: server, dialer: dialer)
        } catch {
            _ = state.withLockedValue { $0.relays.removeValue(forKey: key) }
            if error is PinnedFailure { throw error }
            // Its socket, its directory or its TLS context: nothing can reach the host pinned, so nothing is sent.
            throw PinnedFailure.unusable(host: host, reason: "its relay cannot start (\(error))")
        }
    }

    /// The trust and TLS context of every relay, made once (``State/shared``).
    private func sharedTrustAndContext(host: String) throws -> (PinnedTrust, NIOSSLContext) {
        try state.withLockedValue { state in
            if let shared = state.shared { return shared }
            let trust: PinnedTrust
            do {
                trust = try PinnedTrust(tls: tls, pins: pins)
            } catch {
                throw PinnedFailure.unusable(host: host, reason: "the trust roots cannot be read (\(error))")
            }
            var configuration = tls
            configuration.applicationProtocols = ["http/1.1"]
            let shared = (trust: trust, context: try NIOSSLContext(configuration: configuration))
            state.shared = shared
            return shared
        }
    }

    /// The number of relays started or starting (for tests).
    var relayCount: Int { state.withLockedValue { $0.relays.count } }

    /// Closes every relay and removes their sockets. Connections already relayed end when AsyncHTTPClient closes
    /// them (its shutdown does).
    func shutdown() async {
        let relays = state.withLockedValue { state in
            state.isShutDown = true
            return state.relays.values
        }
        for task in relays {
            try? await task.value.server.close()
        }
        // Read once the relays have started: one starting at shutdown may have made the directory meanwhile.
        if let directory = state.withLockedValue({ $0.directory }) {
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// A new directory for the sockets, which only this user may open (a socket there is a door to the origin).
    ///
    /// In the temporary directory, unless its path leaves no room for a socket's: a socket address holds 103 bytes of
    /// path (104 on Apple platforms, 108 on Linux, less the terminating NUL), and the directory's and the socket's
    /// names take up to 42 of them. A deeper `TMPDIR` (build sandboxes set one) failed every pinned request with
    /// "unixDomainSocketPathTooLong"; `/tmp` is used then.
    private static func makeDirectory() throws -> String {
        let name = "swiftconnect-" + (0..<8).map { _ in String(UInt8.random(in: 0...255), radix: 16) }.joined()
        let temporary = NSTemporaryDirectory()
        let parent = temporary.utf8.count <= 56 ? temporary : "/tmp"
        let path = (parent as NSString).appendingPathComponent(name)
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        return path
    }

    /// `host` without the brackets of an IPv6 literal.
    static func bare(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    /// Whether `host` is an IP address (no SNI is sent for one, and its identity is checked as an address).
    static func isIPAddress(_ host: String) -> Bool {
        (try? SocketAddress(ipAddress: bare(host), port: 0)) != nil
    }
}

/// One pinned origin's Unix socket and what relays its connections.
final class Relay: Sendable {
    let socketPath: String
    let server: any Channel
    let dialer: Dialer

    init(socketPath: String, server: any Channel, dialer: Dialer) {
        self.socketPath = socketPath
        self.server = server
        self.dialer = dialer
    }

    /// The failure of the connection `head` came over, taken once, if `head` is the relay's own answer on a
    /// connection to the origin that failed (``FailureAnswers``), else `nil`: each request learns its own connection's
    /// failure, never another's to the same host.
    func failure(answering head: HTTPResponseHead) -> PinnedFailure? {
        dialer.answers.failure(answering: head, host: dialer.host)
    }

    /// How many relayed connections have ended with a failure on the origin's side so far (a TLS connection closed
    /// without `close_notify`, a reset): AsyncHTTPClient sees each of them only as its own connection closing, which
    /// ends a body delimited by the connection's close as if it were whole. Read before a request and after its
    /// body, as ``ResponseDelivery`` does for such a body.
    var brokenConnectionCount: Int { dialer.brokenConnections.withLockedValue { $0 } }
}

/// Connects each connection accepted on a relay's socket to the origin, pinned.
struct Dialer: Sendable {
    /// The host's name, as the pins read it (``SwiftConnect/CertificatePins/comparableHost(_:)``: lower-cased, an
    /// address in one form): sent (SNI) and checked.
    let host: String
    /// Where the connection goes: the host, or what the client configuration's `dnsOverride` maps it to.
    let address: String
    let port: Int
    let context: NIOSSLContext
    let trust: PinnedTrust
    let connectTimeout: TimeAmount
    /// The failures of connections, answered to AsyncHTTPClient's requests on them.
    let answers = FailureAnswers()
    /// Relayed connections that ended with a failure on the origin's side (``Relay/brokenConnectionCount``).
    let brokenConnections = NIOLockedValueBox(0)

    /// Connects `child` (AsyncHTTPClient's connection, not read yet) to the origin. Once the handshake has passed
    /// trust and pins, the two are glued and `child` is read; otherwise the request on `child` is answered with the
    /// failure (``FailureAnswer``), its bytes dropped, none sent.
    func accept(_ child: any Channel) -> EventLoopFuture<Void> {
        let handshake = child.eventLoop.makePromise(of: Void.self)
        let verdict = NIOLockedValueBox<PinnedFailure?>(nil)
        let upstream = ClientBootstrap(group: child.eventLoop)
            .connectTimeout(connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { [host, context, trust, connectTimeout] channel in
                channel.eventLoop.makeCompletedFuture {
                    let tls = try NIOSSLClientHandler(
                        context: context, serverHostname: PinnedRoutes.isIPAddress(host) ? nil : host,
                        customVerificationCallbackWithMetadata: { presented, promise in
                            promise.completeWithTask {
                                switch await trust.evaluate(presented, host: host) {
                                case .trusted(let chain):
                                    return .certificateVerified(VerificationMetadata(chain))
                                case .untrusted(let reason):
                                    verdict.withLockedValue { $0 = .untrusted(host: host, reason: reason) }
                                    return .failed
                                case .pinMismatch:
                                    verdict.withLockedValue { $0 = .pinMismatch(host: host) }
                                    return .failed
                                }
                            }
                        })
                    try channel.pipeline.syncOperations.addHandler(tls)
                    try channel.pipeline.syncOperations.addHandler(
                        HandshakeWatcher(promise: handshake, timeout: connectTimeout))
                }
            }
            .connect(host: PinnedRoutes.bare(address), port: port)
        // A connection that was never made (refused, unresolved, timed out) has no handshake to wait for: the promise
        // is failed with it, never left pending (NIO stops a debug build that drops a pending promise).
        upstream.whenFailure { handshake.fail($0) }
        upstream.whenSuccess { upstream in
            // AsyncHTTPClient gave up (cancelled, deadline): so does the connection to the origin.
            child.closeFuture.whenComplete { _ in upstream.close(promise: nil) }
        }
        upstream.flatMap { upstream in handshake.futureResult.map { upstream } }.whenComplete {
            [answers, brokenConnections] result in
            switch result {
            case .success(let upstream):
                do {
                    let (inner, outer) = RelayGlue.pair { brokenConnections.withLockedValue { $0 += 1 } }
                    try child.pipeline.syncOperations.addHandler(inner)
                    try upstream.pipeline.syncOperations.addHandler(outer)
                    child.setOption(.autoRead, value: true).whenFailure { _ in child.close(promise: nil) }
                } catch {
                    child.close(promise: nil)
                    upstream.close(promise: nil)
                }
            case .failure(let error):
                let failure = verdict.withLockedValue { $0 } ?? .connection(error)
                upstream.whenSuccess { $0.close(promise: nil) }
                // The request on `child` is answered with its failure's number, its bytes read and dropped: a close
                // would reach AsyncHTTPClient as any close does, telling no request which failure is its own.
                do {
                    try child.pipeline.syncOperations.addHandler(FailureAnswer(failure: failure, answers: answers))
                    child.setOption(.autoRead, value: true).whenFailure { _ in child.close(promise: nil) }
                } catch {
                    child.close(promise: nil)
                }
            }
        }
        return child.eventLoop.makeSucceededVoidFuture()
    }
}

/// The failures of a relay's connections to the origin (its handshake, trust or pins), each told to the request
/// AsyncHTTPClient sends on the connection that failed: the relay reads that request only to drop it, and answers it
/// with a response whose field ``header`` names the failure (``FailureAnswer``). That request, and no other, takes
/// the failure (``failure(answering:host:)``). The field's value starts with a random number of this relay's, so an
/// origin's own answer is never taken for one.
final class FailureAnswers: Sendable {
    /// The field of an answer: this relay's number, a dash, the failure's.
    static let header = "X-SwiftConnect-Pinned-Failure"
    private let token = UInt64.random(in: 1...UInt64.max)
    private let state = NIOLockedValueBox<(next: UInt64, failures: [UInt64: PinnedFailure])>((0, [:]))
    /// How many answered failures are kept for their requests: an answer whose request was given up is never taken.
    static let limit: UInt64 = 1_024

    /// The head that answers a request with `failure`, which is kept until that request takes it.
    func answer(with failure: PinnedFailure) -> String {
        let id = state.withLockedValue { state in
            defer { state.next += 1 }
            state.failures[state.next] = failure
            if state.next >= Self.limit { state.failures[state.next - Self.limit] = nil }
            return state.next
        }
        return "HTTP/1.1 502 Bad Gateway\r\n\(Self.header): \(token)-\(id)\r\nContent-Length: 0\r\n"
            + "Connection: close\r\n\r\n"
    }

    /// The failure `head` answers, taken, or `nil` if `head` is not one of these answers. An answer whose failure was
    /// no longer kept (more than ``limit`` answered since, none taken) still fails: as a connection to `host` lost
    /// before anything was sent.
    func failure(answering head: HTTPResponseHead, host: String) -> PinnedFailure? {
        guard let value = head.headers.first(name: Self.header), value.hasPrefix("\(token)-"),
            let id = UInt64(value.dropFirst("\(token)-".count))
        else { return nil }
        return state.withLockedValue { $0.failures.removeValue(forKey: id) }
            ?? .connection(HTTPClientError.remoteConnectionClosed)
    }
}

/// Answers the first read of a connection whose origin failed with that failure (``FailureAnswers``), and drops what
/// it reads; AsyncHTTPClient closes the connection after the answer (`Connection: close`).
private final class FailureAnswer: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let failure: PinnedFailure
    private let answers: FailureAnswers
    private var answered = false

    init(failure: PinnedFailure, answers: FailureAnswers) {
        self.failure = failure
        self.answers = answers
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answered else { return }
        answered = true
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: answers.answer(with: failure))), promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Why a request to a pinned host failed before anything was sent to it.
enum PinnedFailure: Error, Sendable {
    /// The host's validated chain has none of its pinned keys.
    case pinMismatch(host: String)
    /// The host's certificate is not trusted, pins aside.
    case untrusted(host: String, reason: String)
    /// The connection to the host could not be made, or its handshake failed.
    case connection(any Error)
    /// The host is pinned, and this request or transport cannot reach it pinned.
    case unusable(host: String, reason: String)
    /// Pins are set, and this transport cannot keep any request from reaching a pinned host unchecked.
    case unusableForEveryHost(reason: String)

    /// The error the exchange reports; the core adds the request.
    func connectError(timeout: TimeInterval?) -> ConnectError {
        switch self {
        case .pinMismatch(let host):
            return ConnectError(
                .certificatePinning,
                message: "the certificate chain of \(host) has none of the keys pinned for it: nothing was sent",
                underlyingError: URLError(.serverCertificateUntrusted))
        case .untrusted(let host, let reason):
            return ConnectError(
                .untrustedCertificate, message: "the certificate of \(host) is not trusted (\(reason))",
                underlyingError: URLError(.serverCertificateUntrusted))
        case .connection(let error):
            return ErrorClassification.connectError(error, timeout: timeout)
        case .unusable(let host, let reason):
            return ConnectError(
                .certificatePinning,
                message: "\(host) is pinned and cannot be reached pinned: \(reason); the request is refused rather "
                    + "than sent unpinned")
        case .unusableForEveryHost(let reason):
            return ConnectError(
                .certificatePinning,
                message: "certificate pins are set and cannot be kept: \(reason), which could take any request to a "
                    + "pinned host unchecked; the request is refused rather than sent")
        }
    }
}

/// Completes `promise` when the TLS handshake is done, or fails it if the connection errs or ends first.
private final class HandshakeWatcher: ChannelInboundHandler {
    typealias InboundIn = NIOAny

    private let promise: EventLoopPromise<Void>
    /// How long the connection and its handshake may take, as AsyncHTTPClient bounds its own connections' by its
    /// connect timeout: a server that takes the connection and never answers the handshake would hold the request
    /// until its deadline (minutes, for a download), where an unpinned host's fails at the connect timeout.
    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?
    private var done = false

    init(promise: EventLoopPromise<Void>, timeout: TimeAmount) {
        self.promise = promise
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let watcher = NIOLoopBound(self, eventLoop: context.eventLoop)
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: timeout) {
            watcher.value.finish(.failure(HTTPClientError.tlsHandshakeTimeout))
            bound.value.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event { finish(.success(())) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(error))
        context.fireErrorCaught(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(ChannelError.eof))
        context.fireChannelInactive()
    }

    private func finish(_ result: Result<Void, any Error>) {
        guard !done else { return }
        done = true
        deadline?.cancel()
        promise.completeWith(result)
    }
}

/// One end of a relay: what its channel reads is written to the other end's channel, and it reads only while the
/// other end can take more (back-pressure). When its channel closes, the other end closes once its writes are out.
/// Both ends live on one event loop.
///
/// A close carries no reason across a socket: the origin's end reports its failures (a TLS connection closed without
/// `close_notify`, a reset) to `onFailure` before the close reaches AsyncHTTPClient's end, so that a body delimited by
/// the connection's close is not taken for whole (``Relay/brokenConnectionCount``).
private final class RelayGlue: ChannelDuplexHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private var partner: RelayGlue?
    private var context: ChannelHandlerContext?
    private var pendingRead = false
    /// Told, once, of the first failure of this end's channel.
    private var onFailure: (() -> Void)?

    /// The end glued to AsyncHTTPClient's connection, and the end glued to the origin's, which tells `onFailure` of
    /// its channel's first failure.
    static func pair(onFailureOfTheOrigin onFailure: @escaping () -> Void) -> (RelayGlue, RelayGlue) {
        let first = RelayGlue()
        let second = RelayGlue()
        first.partner = second
        second.partner = first
        second.onFailure = onFailure
        return (first, second)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner?.context?.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        partner?.context?.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.closeAfterWrites()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        onFailure?()
        onFailure = nil
        context.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { partner?.resumeReading() }
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        if partner?.context?.channel.isWritable ?? true {
            context.read()
        } else {
            pendingRead = true
        }
    }

    private func resumeReading() {
        guard pendingRead, let context else { return }
        pendingRead = false
        context.read()
    }

    /// Closes this end once what it was given to write is written (an empty write completes after them).
    private func closeAfterWrites() {
        guard let context else { return }
        let channel = context.channel
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(NIOAny(ByteBuffer()), promise: written)
        written.futureResult.whenComplete { _ in channel.close(promise: nil) }
    }
}
