import AsyncHTTPClient
import Foundation
import NIOSSL
import SwiftConnect
import XCTest

@testable import SwiftConnectAsyncHTTPClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Certificate pinning on `AsyncHTTPClientTransport`, against a loopback TLS server whose CA and certificate the
/// test makes at run time: the right pin, a wrong one, a backup pin, a pin on the CA, an unpinned host, and the
/// cases where a pinned host cannot be reached pinned. "Nothing sent" is read off the server's request count.
final class PinningTests: TLSServerTestCase {

    private var serverPin: String {
        get throws { try CertificatePins.spkiSHA256(ofCertificate: Data(pki.serverDER)).base64EncodedString() }
    }

    /// A pin no certificate here has.
    private let otherPin = Data(repeating: 7, count: 32).base64EncodedString()

    /// A transport trusting the throwaway CA (or the system's roots), with `pins`.
    private func transport(pinning pins: [String: [String]], trustingTheCA: Bool = true) throws
        -> AsyncHTTPClientTransport
    {
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        var tls = TLSConfiguration.makeClientConfiguration()
        if trustingTheCA { tls.trustRoots = .certificates([pki.caCertificate]) }
        configuration.tlsConfiguration = tls
        let transport = AsyncHTTPClientTransport(configuration: configuration, pins: try CertificatePins(pins))
        addTeardownBlock { try await transport.shutdown() }
        return transport
    }

    private func request(_ base: URL? = nil) -> URLRequest {
        URLRequest(url: (base ?? server.baseURL).appendingPathComponent("version"), timeoutInterval: 10)
    }

    private func failure(of transport: AsyncHTTPClientTransport, _ request: URLRequest) throws -> ConnectError {
        let result = try transport.send(request).waitForResult(timeout: 10)
        guard case .failure(let error as ConnectError) = result else {
            XCTFail("expected a ConnectError, got \(result)")
            throw CancellationError()
        }
        return error
    }

    /// The server's own key pinned: the request goes through, over HTTP/1.1 (a pinned host's connection is the
    /// transport's own, which offers only HTTP/1.1).
    func testTheRightPinGoesThrough() throws {
        let transport = try transport(pinning: ["localhost": [try serverPin]])

        let response = try transport.send(request()).wait(timeout: 10)

        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(String(decoding: response.data, as: UTF8.self), "HTTP/1.1")
        XCTAssertEqual(response.response.url, request().url)
        XCTAssertEqual(server.requestCount, 1)
    }

    /// A pin the chain doesn't have: a typed error naming the host, and the server never sees the request.
    func testAWrongPinFailsNamingTheHostBeforeAnythingIsSent() throws {
        let transport = try transport(pinning: ["localhost": [otherPin]])

        let error = try failure(of: transport, request())

        XCTAssertEqual(error.kind, .certificatePinning, error.description)
        XCTAssertTrue(error.message.contains("localhost"), error.message)
        XCTAssertEqual(error.urlError?.code, .serverCertificateUntrusted)
        XCTAssertEqual(server.requestCount, 0)
        // The next request is judged again, and fails the same way.
        XCTAssertEqual(try failure(of: transport, request()).kind, .certificatePinning)
        XCTAssertEqual(server.requestCount, 0)
    }

    /// Rotation: the current key is the backup pin; the request goes through.
    func testABackupPinLetsARotatedKeyThrough() throws {
        let transport = try transport(pinning: ["localhost": [otherPin, try serverPin]])

        XCTAssertEqual(try transport.send(request()).wait(timeout: 10).statusCode, 200)
    }

    /// A pin on the CA's key covers every certificate it signs: the pins are looked for in the validated chain.
    func testAPinOnTheCAsKeyCoversTheChain() throws {
        let caPin = try CertificatePins.spkiSHA256(ofCertificate: Data(pki.caDER)).base64EncodedString()
        let transport = try transport(pinning: ["*.example.com": [otherPin], "localhost": [caPin]])

        XCTAssertEqual(try transport.send(request()).wait(timeout: 10).statusCode, 200)
    }

    /// Pins are looked for in the validated chain, not in what the server presents: a server that appends a
    /// certificate with the pinned key, which its chain to the trust root doesn't use, fails its pins.
    func testAPinnedCertificateAppendedOutsideTheChainDoesNotPass() throws {
        let stranger = try ThrowawayPKI()
        let padded = try TLSLoopbackServer(pki: pki, extraCertificates: [stranger.caCertificate])
        defer { padded.stop() }
        let strangerPin = try CertificatePins.spkiSHA256(ofCertificate: Data(stranger.caDER)).base64EncodedString()
        let transport = try transport(pinning: ["localhost": [strangerPin]])

        let error = try failure(of: transport, request(padded.baseURL))

        XCTAssertEqual(error.kind, .certificatePinning, error.description)
        XCTAssertEqual(padded.requestCount, 0)
    }

    /// A pinned host written another way (upper case, escapes, another form of its address) is the host the request
    /// goes to: still pinned, never sent directly. Without hostname verification, only the pins stand between the
    /// request and a server that is not the pinned one's.
    func testAPinnedHostWrittenAnotherWayIsStillPinned() throws {
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([pki.caCertificate])
        tls.certificateVerification = .noHostnameVerification
        configuration.tlsConfiguration = tls
        let port = server.baseURL.port!
        let wrong = AsyncHTTPClientTransport(
            configuration: configuration,
            pins: try CertificatePins(["localhost": [otherPin], "127.0.0.1": [otherPin]]))
        let right = AsyncHTTPClientTransport(
            configuration: configuration,
            pins: try CertificatePins(["localhost": [try serverPin], "127.0.0.1": [try serverPin]]))
        addTeardownBlock {
            try await wrong.shutdown()
            try await right.shutdown()
        }
        for host in ["LOCALHOST", "localhos%74", "127.1", "2130706433", "0x7f.0.0.1", "[::ffff:127.0.0.1]"] {
            let url = try XCTUnwrap(URL(string: "https://\(host):\(port)/version"))
            let before = server.requestCount
            let error = try failure(of: wrong, URLRequest(url: url, timeoutInterval: 10))
            XCTAssertEqual(error.kind, .certificatePinning, "\(host): \(error)")
            XCTAssertEqual(server.requestCount, before, "\(host): nothing sent")
            // The right pin: through the transport's own pinned connection (HTTP/1.1), not AsyncHTTPClient's (HTTP/2).
            let response = try right.send(URLRequest(url: url, timeoutInterval: 10)).wait(timeout: 10)
            XCTAssertEqual(String(decoding: response.data, as: UTF8.self), "HTTP/1.1", host)
        }
        // One relay per host, however it is written: a relay (a socket, a listening descriptor) per spelling grew
        // with every new one a server's redirects could invent, until the transport shut down.
        XCTAssertEqual(right.pinned.relayCount, 2, "localhost and 127.0.0.1")
        XCTAssertEqual(wrong.pinned.relayCount, 2, "localhost and 127.0.0.1")
    }

    /// A pinned host that refuses the connection: a typed error, the same as unpinned, and the transport goes on
    /// (the relay's wait for the handshake is given up with the connection, not left pending).
    func testAPinnedHostThatRefusesTheConnectionIsATypedError() throws {
        let closed = try TLSLoopbackServer(pki: pki)
        let refusing = closed.baseURL
        closed.stop()
        let transport = try transport(pinning: ["localhost": [try serverPin]])

        for _ in 0..<2 {
            let error = try failure(of: transport, request(refusing))

            XCTAssertEqual(error.kind, .cannotConnect, error.description)
        }
        XCTAssertEqual(try transport.send(request()).wait(timeout: 10).statusCode, 200)
    }

    /// A pinned host that takes the connection but never answers the TLS handshake (a listener that never accepts:
    /// the kernel completes the TCP handshake) fails at the client's connect timeout, as an unpinned host does, not at
    /// the request's deadline a minute later.
    func testAPinnedHostThatNeverAnswersTheHandshakeTimesOutAtTheConnectTimeout() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(listener, 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(listener, socketAddress, length) == 0 && listen(listener, 8) == 0
                    && getsockname(listener, socketAddress, &length) == 0
            }
        }
        XCTAssertTrue(bound)
        let port = Int(UInt16(bigEndian: address.sin_port))
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        configuration.timeout.connect = .milliseconds(300)
        let transport = AsyncHTTPClientTransport(
            configuration: configuration, pins: try CertificatePins(["127.0.0.1": [otherPin]]))
        addTeardownBlock { try await transport.shutdown() }
        let silent = URLRequest(
            url: try XCTUnwrap(URL(string: "https://127.0.0.1:\(port)/version")), timeoutInterval: 60)

        let error = try failure(of: transport, silent)

        XCTAssertEqual(error.kind, .timedOut, error.description)
        XCTAssertEqual(error.underlyingError as? HTTPClientError, .tlsHandshakeTimeout, error.description)
    }

    /// A host without pins goes the usual way: AsyncHTTPClient's own connection, HTTP/2 by ALPN.
    func testAnUnpinnedHostGoesDirect() throws {
        let transport = try transport(pinning: ["api.example.com": [otherPin]])

        let response = try transport.send(request()).wait(timeout: 10)

        XCTAssertEqual(String(decoding: response.data, as: UTF8.self), "HTTP/2")
    }

    /// A pin adds to trust, never replaces it: the right pin on a certificate the roots don't trust still fails,
    /// as untrusted, nothing sent.
    func testTheRightPinDoesNotMakeAnUntrustedCertificateTrusted() throws {
        let transport = try transport(pinning: ["localhost": [try serverPin]], trustingTheCA: false)

        let error = try failure(of: transport, request())

        XCTAssertEqual(error.kind, .untrustedCertificate, error.description)
        XCTAssertTrue(error.message.contains("localhost"), error.message)
        XCTAssertEqual(server.requestCount, 0)
    }

    /// The server's identity is still checked: the same certificate (for `localhost` and 127.0.0.1) served on
    /// 127.0.0.2 fails as untrusted, though its key is pinned for that address.
    func testTheServersIdentityIsStillChecked() throws {
        let elsewhere = try TLSLoopbackServer(pki: pki, host: "127.0.0.2")
        defer { elsewhere.stop() }
        let transport = try transport(pinning: ["127.0.0.1": [try serverPin], "127.0.0.2": [try serverPin]])
        let named = URL(string: "https://127.0.0.1:\(server.baseURL.port!)")!
        let unnamed = URL(string: "https://127.0.0.2:\(elsewhere.baseURL.port!)")!

        XCTAssertEqual(try transport.send(request(named)).wait(timeout: 10).statusCode, 200)
        let error = try failure(of: transport, request(unnamed))

        XCTAssertEqual(error.kind, .untrustedCertificate, error.description)
        XCTAssertEqual(elsewhere.requestCount, 0)
        // Said in a few words: swift-certificates' own reasons print whole certificates (text the server chose)
        XCTAssertTrue(error.message.contains("does not name the host"), error.message)
        XCTAssertLessThan(error.message.count, 300, error.message)
    }

    /// A host the configuration's `dnsOverride` sends to another address is reached there pinned, as AsyncHTTPClient
    /// reaches it unpinned: connected to the override, its own name sent and checked. Before, the pinned connection
    /// went to the name's own address (nothing listens there: a connection error) and never to the server the app
    /// configured.
    func testAPinnedHostIsReachedWhereTheConfigurationsDNSOverrideSendsIt() throws {
        let elsewhere = try TLSLoopbackServer(pki: pki, host: "127.0.0.2")
        defer { elsewhere.stop() }
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([pki.caCertificate])
        configuration.tlsConfiguration = tls
        configuration.dnsOverride = ["localhost": "127.0.0.2"]
        let unpinned = AsyncHTTPClientTransport(configuration: configuration)
        let right = AsyncHTTPClientTransport(
            configuration: configuration, pins: try CertificatePins(["localhost": [try serverPin]]))
        let wrong = AsyncHTTPClientTransport(
            configuration: configuration, pins: try CertificatePins(["localhost": [otherPin]]))
        addTeardownBlock {
            try await unpinned.shutdown()
            try await right.shutdown()
            try await wrong.shutdown()
        }
        let url = URL(string: "https://localhost:\(elsewhere.baseURL.port!)")!

        XCTAssertEqual(
            String(decoding: try unpinned.send(request(url)).wait(timeout: 10).data, as: UTF8.self), "HTTP/2")
        let result = try right.send(request(url)).waitForResult(timeout: 10)
        XCTAssertEqual(try result.map { String(decoding: $0.data, as: UTF8.self) }.get(), "HTTP/1.1", "\(result)")
        XCTAssertEqual(try failure(of: wrong, request(url)).kind, .certificatePinning)
        XCTAssertEqual(elsewhere.requestCount, 2)
    }

    /// The relay a host shares whatever its spelling connects to, names and checks the host as the pins read it: a
    /// first request that spells it oddly (a redirect any server could send, to `2130706433` or `LOCALHOST`) does not
    /// leave the relay checking the certificate against that spelling, nor dialling past the configuration's
    /// `dnsOverride`, for the requests after it. Under full verification (the certificate names `localhost` and
    /// `127.0.0.1`).
    func testAnOddSpellingFirstLeavesTheSharedRelayRightForTheUsualOne() throws {
        let elsewhere = try TLSLoopbackServer(pki: pki, host: "127.0.0.2")
        defer { elsewhere.stop() }
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([pki.caCertificate])
        configuration.tlsConfiguration = tls
        let byAddress = AsyncHTTPClientTransport(
            configuration: configuration, pins: try CertificatePins(["127.0.0.1": [try serverPin]]))
        configuration.dnsOverride = ["localhost": "127.0.0.2"]
        let byName = AsyncHTTPClientTransport(
            configuration: configuration, pins: try CertificatePins(["localhost": [try serverPin]]))
        addTeardownBlock {
            try await byAddress.shutdown()
            try await byName.shutdown()
        }
        let port = server.baseURL.port!
        for host in ["2130706433", "127.0.0.1"] {
            let url = try XCTUnwrap(URL(string: "https://\(host):\(port)"))
            let result = try byAddress.send(request(url)).waitForResult(timeout: 10)
            XCTAssertEqual(try result.map { String(decoding: $0.data, as: UTF8.self) }.get(), "HTTP/1.1", host)
        }
        let before = elsewhere.requestCount
        for host in ["LOCALHOST", "localhost"] {
            let url = try XCTUnwrap(URL(string: "https://\(host):\(elsewhere.baseURL.port!)"))
            let result = try byName.send(request(url)).waitForResult(timeout: 10)
            XCTAssertEqual(try result.map { String(decoding: $0.data, as: UTF8.self) }.get(), "HTTP/1.1", host)
        }
        XCTAssertEqual(elsewhere.requestCount, before + 2, "both went where the dnsOverride sends localhost")
    }

    /// A configuration whose `dnsResolver` is `.randomized` has its pinned hosts refused, typed and naming why,
    /// nothing sent, on a transport's own client and on an app's; other hosts go as usual. AsyncHTTPClient 1.37 gives
    /// that resolver to its connection to a pinned host's relay too, a Unix socket, which never resolves with it: NIO
    /// stopped the process over the promise it leaked ("leaking promise created at GetaddrinfoResolver.swift:74") in
    /// a debug build, and the relay ignored the setting (the pinned host was resolved in `getaddrinfo`'s order).
    func testAPinnedHostIsRefusedWhenTheConfigurationRandomizesDNS() throws {
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([pki.caCertificate])
        configuration.tlsConfiguration = tls
        configuration.dnsResolver = .randomized
        configuration.redirectConfiguration = .disallow
        let pins = try CertificatePins(["localhost": [try serverPin]])
        let transport = AsyncHTTPClientTransport(configuration: configuration, pins: pins)
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let overClient = AsyncHTTPClientTransport(client: client, pins: pins)
        let unpinned = AsyncHTTPClientTransport(configuration: configuration)
        addTeardownBlock {
            try await transport.shutdown()
            try await overClient.shutdown()
            try await client.shutdown()
            try await unpinned.shutdown()
        }

        for transport in [transport, overClient] {
            let refusal = try failure(of: transport, request())

            XCTAssertEqual(refusal.kind, .certificatePinning, refusal.description)
            XCTAssertTrue(refusal.message.contains("localhost"), refusal.message)
            XCTAssertTrue(refusal.message.contains("dnsResolver"), refusal.message)
        }
        XCTAssertEqual(server.requestCount, 0)
        XCTAssertEqual(String(decoding: try unpinned.send(request()).wait(timeout: 10).data, as: UTF8.self), "HTTP/2")
    }

    /// A configuration with a `localAddress` binds every connection of the client to it, the one to a pinned host's
    /// Unix socket too, which cannot take an IP address: the pinned host is refused, typed and naming why, nothing
    /// sent, as through a proxy. Before, every pinned request failed with `.transport` ("bind(descriptor:ptr:bytes:):
    /// Invalid argument"). Other hosts leave from that address.
    func testAPinnedHostIsRefusedWhenTheConfigurationBindsALocalAddress() throws {
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([pki.caCertificate])
        configuration.tlsConfiguration = tls
        configuration.localAddress = "127.0.0.3"
        let unpinned = AsyncHTTPClientTransport(configuration: configuration)
        let pinned = AsyncHTTPClientTransport(
            configuration: configuration, pins: try CertificatePins(["127.0.0.1": [try serverPin]]))
        addTeardownBlock {
            try await unpinned.shutdown()
            try await pinned.shutdown()
        }
        let url = URL(string: "https://127.0.0.1:\(server.baseURL.port!)")!

        XCTAssertEqual(try unpinned.send(request(url)).wait(timeout: 10).statusCode, 200)
        let refusal = try failure(of: pinned, request(url))

        XCTAssertEqual(refusal.kind, .certificatePinning, refusal.description)
        XCTAssertTrue(refusal.message.contains("localAddress"), refusal.message)
        XCTAssertEqual(server.peers, ["127.0.0.3"], "the unpinned request only, from the local address")
    }

    /// A temporary directory so deep that a socket's path under it is longer than a socket address holds (`TMPDIR`
    /// set deep, as build sandboxes set it): the relay's socket goes elsewhere and the pinned request goes through.
    /// Before, every pinned request failed with `.transport` ("unixDomainSocketPathTooLong").
    func testAPinnedHostIsReachedWhenTheTemporaryDirectoryIsDeep() throws {
        let root = "/tmp/swiftconnect-deep-\(UUID().uuidString)"
        let deep = root + "/" + String(repeating: "d", count: 60)
        try FileManager.default.createDirectory(atPath: deep, withIntermediateDirectories: true)
        let previous = ProcessInfo.processInfo.environment["TMPDIR"]
        setenv("TMPDIR", deep, 1)
        defer {
            if let previous { setenv("TMPDIR", previous, 1) } else { unsetenv("TMPDIR") }
            try? FileManager.default.removeItem(atPath: root)
        }
        XCTAssertTrue(NSTemporaryDirectory().hasPrefix(deep), NSTemporaryDirectory())
        let transport = try transport(pinning: ["localhost": [try serverPin]])

        let result = try transport.send(request()).waitForResult(timeout: 10)

        XCTAssertEqual(try result.map { String(decoding: $0.data, as: UTF8.self) }.get(), "HTTP/1.1", "\(result)")
        XCTAssertEqual(server.requestCount, 1)
    }

    /// A certificate its authority issued for TLS clients only: refused pinned as AsyncHTTPClient's own connections
    /// refuse it unpinned (BoringSSL's purpose check), though its key is pinned, and nothing is sent.
    func testACertificateNotForTLSServersIsRefusedPinnedAsUnpinned() throws {
        let clientOnly = try ThrowawayPKI(serverUsages: [.clientAuth])
        let other = try TLSLoopbackServer(pki: clientOnly)
        defer { other.stop() }
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([clientOnly.caCertificate])
        configuration.tlsConfiguration = tls
        let pin = try CertificatePins.spkiSHA256(ofCertificate: Data(clientOnly.serverDER)).base64EncodedString()
        let pinned = AsyncHTTPClientTransport(
            configuration: configuration, pins: try CertificatePins(["localhost": [pin]]))
        let unpinned = AsyncHTTPClientTransport(configuration: configuration)
        addTeardownBlock {
            try await pinned.shutdown()
            try await unpinned.shutdown()
        }

        let pinnedError = try failure(of: pinned, request(other.baseURL))
        let unpinnedError = try failure(of: unpinned, request(other.baseURL))

        XCTAssertEqual(unpinnedError.kind, .untrustedCertificate, unpinnedError.description)
        XCTAssertEqual(pinnedError.kind, .untrustedCertificate, pinnedError.description)
        XCTAssertTrue(pinnedError.message.contains("not for a TLS server"), pinnedError.message)
        XCTAssertEqual(other.requestCount, 0)
    }

    /// A pinned host asked for over plain http, or with certificate verification off, is refused: nothing is sent
    /// unpinned.
    func testAPinnedHostThatCannotBeCheckedIsRefused() throws {
        let transport = try transport(pinning: ["localhost": [try serverPin]])
        let plain = URLRequest(url: URL(string: "http://localhost:\(server.baseURL.port!)/version")!)

        let error = try failure(of: transport, plain)

        XCTAssertEqual(error.kind, .certificatePinning)
        XCTAssertTrue(error.message.contains("localhost is pinned, and plain http"), error.message)

        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        configuration.tlsConfiguration = tls
        let unverified = AsyncHTTPClientTransport(
            configuration: configuration, pins: try CertificatePins(["localhost": [try serverPin]]))
        addTeardownBlock { try await unverified.shutdown() }
        XCTAssertEqual(try failure(of: unverified, request()).kind, .certificatePinning)
        XCTAssertEqual(server.requestCount, 0)
    }

    /// Trust roots that cannot be read leave nothing to validate a pinned host's chain against: a typed error
    /// naming the host, nothing sent; and the next request tries again rather than keeping the failure.
    func testUnreadableTrustRootsAreATypedError() throws {
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        var tls = TLSConfiguration.makeClientConfiguration()
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("no-such-roots-\(UUID()).pem")
        tls.trustRoots = .file(missing.path)
        configuration.tlsConfiguration = tls
        let transport = AsyncHTTPClientTransport(
            configuration: configuration, pins: try CertificatePins(["localhost": [try serverPin]]))
        addTeardownBlock { try await transport.shutdown() }

        for _ in 0..<2 {
            let error = try failure(of: transport, request())

            XCTAssertEqual(error.kind, .certificatePinning, error.description)
            XCTAssertTrue(error.message.contains("localhost"), error.message)
            XCTAssertTrue(error.message.contains("trust roots"), error.message)
        }
        XCTAssertEqual(server.requestCount, 0)
    }

    /// Many requests at once to a pinned host, through `Connect`: each arrives once and each answer comes back.
    func testConcurrentRequestsThroughConnect() async throws {
        let transport = try transport(pinning: ["localhost": [try serverPin]])
        let connect = Connect(transport: transport)
        let base = server.baseURL

        let bodies = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<40 {
                group.addTask {
                    let data = try await connect.request(Route("/version", baseURL: base, timeout: 10)).value
                    return String(decoding: data, as: UTF8.self)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }

        XCTAssertEqual(bodies, Array(repeating: "HTTP/1.1", count: 40))
        XCTAssertEqual(server.requestCount, 40)
    }

    /// Over the app's own client, pins are checked with the TLS configuration given beside it.
    func testPinsOverTheAppsOwnClient() throws {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        addTeardownBlock { try await client.shutdown() }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([pki.caCertificate])
        let right = AsyncHTTPClientTransport(
            client: client, pins: try CertificatePins(["localhost": [try serverPin]]), tlsConfiguration: tls)
        let wrong = AsyncHTTPClientTransport(
            client: client, pins: try CertificatePins(["localhost": [otherPin]]), tlsConfiguration: tls)
        addTeardownBlock {
            try await right.shutdown()
            try await wrong.shutdown()
        }

        XCTAssertEqual(try right.send(request()).wait(timeout: 10).statusCode, 200)
        XCTAssertEqual(try failure(of: wrong, request()).kind, .certificatePinning)
        XCTAssertEqual(server.requestCount, 1)
    }

    /// Over the app's own client, with no TLS configuration beside it, pins are checked with the client's own (read by
    /// reflection); a client that goes through a proxy has its pinned hosts refused, nothing sent, as over a
    /// configuration given to the transport.
    func testPinsOverTheAppsOwnClientFollowItsConfiguration() throws {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([pki.caCertificate])
        configuration.tlsConfiguration = tls
        let trusting = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        configuration.proxy = .server(host: "127.0.0.1", port: 9)  // Never reached: the pinned host is refused first.
        let proxied = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        addTeardownBlock {
            try await trusting.shutdown()
            try await proxied.shutdown()
        }
        let pins = try CertificatePins(["localhost": [try serverPin]])
        let direct = AsyncHTTPClientTransport(client: trusting, pins: pins)
        let throughProxy = AsyncHTTPClientTransport(client: proxied, pins: pins)
        addTeardownBlock {
            try await direct.shutdown()
            try await throughProxy.shutdown()
        }

        XCTAssertEqual(try direct.send(request()).wait(timeout: 10).statusCode, 200)
        let refusal = try failure(of: throughProxy, request())

        XCTAssertEqual(refusal.kind, .certificatePinning, refusal.description)
        XCTAssertTrue(refusal.message.contains("the app's client goes through a proxy"), refusal.message)
        XCTAssertEqual(server.requestCount, 1)
    }

    /// An app's client that follows redirects itself (AsyncHTTPClient's default, `HTTPClient.shared`'s) would take a
    /// redirect to a pinned host without its relay, its pins unchecked: with pins set, every request over it is
    /// refused, nothing sent, where an unpinned host's 302 to the pinned host reached it with a wrong pin.
    func testPinsOverAnAppsClientThatFollowsRedirectsRefuseEveryRequest() throws {
        var configuration = HTTPClient.Configuration()  // AsyncHTTPClient's defaults: redirects followed
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([pki.caCertificate])
        configuration.tlsConfiguration = tls
        let following = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        addTeardownBlock { try await following.shutdown() }
        let wrongPin = Data(repeating: 7, count: 32).base64EncodedString()
        let transport = AsyncHTTPClientTransport(
            client: following, pins: try CertificatePins(["localhost": [wrongPin]]))
        addTeardownBlock { try await transport.shutdown() }
        let target = server.baseURL.appendingPathComponent("version").absoluteString
        let redirector = try BrokenBodyServer { _ in
            (Data("HTTP/1.1 302 Found\r\nLocation: \(target)\r\nContent-Length: 0\r\n\r\n".utf8), .close)
        }
        defer { redirector.stop() }

        let refusal = try failure(of: transport, request(redirector.baseURL))

        XCTAssertEqual(refusal.kind, .certificatePinning, refusal.description)
        XCTAssertTrue(refusal.message.contains("follows redirects itself"), refusal.message)
        XCTAssertEqual(server.requestCount, 0, "the pinned host was never reached")
    }
}

extension PinningTests {
    /// A pinned host's failure is the request's whose connection failed, not another's to the same host: a request
    /// sent over a connection that passed its pins, whose connection then closes unanswered, fails as
    /// `.connectionLost` (retried for a safe method; it was sent), though another connection to that host failed its
    /// pins meanwhile. Before, the relay kept the last failure per host, and any request failing while it was new
    /// reported it: `.certificatePinning`, "nothing was sent", for a request the server had received.
    func testAnotherConnectionsPinFailureIsNotThisRequests() throws {
        let stranger = try ThrowawayPKI()
        let arrived = expectation(description: "the first request arrived")
        let switching = try SwitchingTLSServer(identities: [pki, stranger]) { arrived.fulfill() }
        defer { switching.stop() }
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([pki.caCertificate, stranger.caCertificate])
        configuration.tlsConfiguration = tls
        let transport = AsyncHTTPClientTransport(
            configuration: configuration, pins: try CertificatePins(["localhost": [try serverPin]]))
        addTeardownBlock { try await transport.shutdown() }

        // The first connection presents the pinned key: the request goes, and is held there unanswered.
        let sent = transport.send(request(switching.baseURL))
        wait(for: [arrived], timeout: 10)
        // The second presents another key, which its trust roots trust: refused, nothing sent.
        let refused = try failure(of: transport, request(switching.baseURL))
        XCTAssertEqual(refused.kind, .certificatePinning, refused.description)
        switching.dropHeld()
        let result = try sent.waitForResult(timeout: 10)

        guard case .failure(let error as ConnectError) = result else { return XCTFail("expected a failure: \(result)") }
        XCTAssertEqual(error.kind, .connectionLost, error.description)
        XCTAssertEqual(switching.requestCount, 1)
    }

    /// Each of many requests at once to a host that fails its pins fails typed, with its own connection's failure,
    /// nothing sent.
    func testConcurrentRequestsToAHostThatFailsItsPinsEachFailTyped() throws {
        let transport = try transport(pinning: ["localhost": [otherPin]])

        let sent = (0..<40).map { _ in transport.send(request()) }

        for future in sent {
            let result = try future.waitForResult(timeout: 10)
            guard case .failure(let error as ConnectError) = result else { return XCTFail("\(result)") }
            XCTAssertEqual(error.kind, .certificatePinning, error.description)
        }
        XCTAssertEqual(server.requestCount, 0)
    }

    /// A large upload to a host that fails its pins: refused, typed, nothing sent, though the relay answers the
    /// request while its body is still on its way.
    func testALargeUploadToAHostThatFailsItsPinsIsRefusedTyped() throws {
        let transport = try transport(pinning: ["localhost": [otherPin]])
        var upload = request()
        upload.httpMethod = "POST"
        upload.httpBody = Data(count: 8 << 20)

        let error = try failure(of: transport, upload)

        XCTAssertEqual(error.kind, .certificatePinning, error.description)
        XCTAssertEqual(server.requestCount, 0)
    }

    /// A transport shut down while a pinned request is held by its server: the request ends, cancelled, the shutdown
    /// returns, and the relay's socket and directory are gone.
    func testAShutdownDuringAPinnedRequestEndsItAndLeavesNoSocket() throws {
        let temporary = "/tmp/sc-life-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: false)
        let previous = ProcessInfo.processInfo.environment["TMPDIR"]
        setenv("TMPDIR", temporary, 1)
        defer {
            if let previous { setenv("TMPDIR", previous, 1) } else { unsetenv("TMPDIR") }
            try? FileManager.default.removeItem(atPath: temporary)
        }
        let arrived = expectation(description: "the request arrived")
        let holding = try SwitchingTLSServer(identities: [pki]) { arrived.fulfill() }
        defer { holding.stop() }
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([pki.caCertificate])
        configuration.tlsConfiguration = tls
        let transport = AsyncHTTPClientTransport(
            configuration: configuration, pins: try CertificatePins(["localhost": [try serverPin]]))
        let sent = transport.send(request(holding.baseURL))
        wait(for: [arrived], timeout: 10)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: temporary).count, 1)

        let shutDown = expectation(description: "shut down")
        Task {
            try await transport.shutdown()
            shutDown.fulfill()
        }
        wait(for: [shutDown], timeout: 10)
        let result = try sent.waitForResult(timeout: 10)

        guard case .failure(let error as ConnectError) = result else { return XCTFail("expected a failure: \(result)") }
        XCTAssertEqual(error.kind, .cancelled, error.description)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: temporary), [])
    }

    /// A pinned host is never reached over a connection AsyncHTTPClient made for another name of the same server:
    /// after an unpinned name's request over its own HTTP/2 connection, the pinned name still fails its (wrong) pin,
    /// nothing sent over that connection.
    func testAPinnedHostDoesNotReuseAnUnpinnedNamesHTTP2Connection() throws {
        let transport = try transport(pinning: ["localhost": [otherPin]])
        let unpinned = URL(string: "https://127.0.0.1:\(server.baseURL.port!)")!

        let response = try transport.send(request(unpinned)).wait(timeout: 10)
        let error = try failure(of: transport, request())

        XCTAssertEqual(String(decoding: response.data, as: UTF8.self), "HTTP/2")
        XCTAssertEqual(error.kind, .certificatePinning, error.description)
        XCTAssertEqual(server.requestCount, 1)
    }

    /// A configuration whose `localAddress` is not an IP address fails every request: typed as the client's
    /// configuration, `.transport` (not retried: it fails the same way each time), saying so. Before, AsyncHTTPClient's
    /// `invalidLocalAddress` was `.badResponse` ("the request failed"), which blames the server's answer and which a
    /// `RetryPolicy` retries.
    func testAnInvalidLocalAddressIsTheConfigurationsFailureNotTheServers() throws {
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([pki.caCertificate])
        configuration.tlsConfiguration = tls
        configuration.localAddress = "not-an-address"
        let transport = AsyncHTTPClientTransport(configuration: configuration)
        addTeardownBlock { try await transport.shutdown() }

        let error = try failure(of: transport, request())

        XCTAssertEqual(error.kind, .transport, error.description)
        XCTAssertTrue(error.message.contains("localAddress"), error.message)
        XCTAssertEqual(server.requestCount, 0)
    }

    /// A relay that cannot start (its socket's directory cannot be made) refuses the pinned host, typed and naming
    /// it, nothing sent; the next request, once it can, goes through. Before, the request failed with `.transport`
    /// ("the request failed: …"), which says nothing of pinning and is retried as a transport failure.
    func testAPinnedHostWhoseRelayCannotStartIsRefusedTyped() throws {
        let missing = "/tmp/sc-missing-\(UUID().uuidString.prefix(8))"
        let previous = ProcessInfo.processInfo.environment["TMPDIR"]
        setenv("TMPDIR", missing, 1)
        defer {
            if let previous { setenv("TMPDIR", previous, 1) } else { unsetenv("TMPDIR") }
        }
        let transport = try transport(pinning: ["localhost": [try serverPin]])

        let error = try failure(of: transport, request())

        XCTAssertEqual(error.kind, .certificatePinning, error.description)
        XCTAssertTrue(error.message.contains("localhost"), error.message)
        XCTAssertTrue(error.message.contains("relay"), error.message)
        XCTAssertEqual(server.requestCount, 0)
        if let previous { setenv("TMPDIR", previous, 1) } else { unsetenv("TMPDIR") }
        XCTAssertEqual(try transport.send(request()).wait(timeout: 10).statusCode, 200)
    }
}
