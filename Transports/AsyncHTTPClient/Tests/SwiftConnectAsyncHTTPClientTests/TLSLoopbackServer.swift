import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import SwiftASN1
import X509

/// A throwaway certificate authority and a server certificate it signed for `localhost` and 127.0.0.1, made at
/// run time: no key material is committed.
struct ThrowawayPKI {
    let caCertificate: NIOSSLCertificate
    let serverCertificate: NIOSSLCertificate
    let serverKey: NIOSSLPrivateKey
    /// The server certificate's SubjectPublicKeyInfo, DER.
    let serverSPKI: [UInt8]
    /// The server certificate, DER.
    let serverDER: [UInt8]
    /// The CA certificate, DER.
    let caDER: [UInt8]

    /// - Parameter serverUsages: The extended key usages of the server's certificate.
    init(serverUsages: [ExtendedKeyUsage.Usage] = [.serverAuth]) throws {
        let now = Date()
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName { CommonName("SwiftConnect throwaway test CA") }
        let ca = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(caKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 3600, issuer: caName, subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                KeyUsage(keyCertSign: true)
            },
            issuerPrivateKey: .init(caKey))
        let serverKey = P256.Signing.PrivateKey()
        let server = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(serverKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 3600, issuer: caName,
            subject: try DistinguishedName { CommonName("localhost") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                SubjectAlternativeNames([
                    .dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                ])
                try ExtendedKeyUsage(serverUsages)
            },
            issuerPrivateKey: .init(caKey))
        caCertificate = try NIOSSLCertificate(bytes: Array(ca.serializeAsPEM().pemString.utf8), format: .pem)
        serverCertificate = try NIOSSLCertificate(bytes: Array(server.serializeAsPEM().pemString.utf8), format: .pem)
        self.serverKey = try NIOSSLPrivateKey(bytes: Array(serverKey.pemRepresentation.utf8), format: .pem)
        var serializer = DER.Serializer()
        try serializer.serialize(server.publicKey)
        serverSPKI = serializer.serializedBytes
        var certificateSerializer = DER.Serializer()
        try certificateSerializer.serialize(server)
        serverDER = certificateSerializer.serializedBytes
        var caSerializer = DER.Serializer()
        try caSerializer.serialize(ca)
        caDER = caSerializer.serializedBytes
    }
}

/// An HTTPS server on 127.0.0.1 that offers HTTP/2 and HTTP/1.1 by ALPN and answers every request with the HTTP
/// version it was made over ("HTTP/2" or "HTTP/1.1").
final class TLSLoopbackServer: Sendable {
    private let channel: any Channel
    private let received = NIOLockedValueBox(0)
    private let connectedFrom = NIOLockedValueBox<[String]>([])

    /// How many requests have arrived (their heads parsed), over any connection.
    var requestCount: Int { received.withLockedValue { $0 } }

    /// The address each connection came from, in the order they were accepted.
    var peers: [String] { connectedFrom.withLockedValue { $0 } }

    /// Starts the server on `host` (a loopback address), on a port of its own, presenting its certificate followed
    /// by `extraCertificates`.
    init(pki: ThrowawayPKI, host: String = "127.0.0.1", extraCertificates: [NIOSSLCertificate] = []) throws {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: ([pki.serverCertificate] + extraCertificates).map { .certificate($0) },
            privateKey: .privateKey(pki.serverKey))
        configuration.applicationProtocols = ["h2", "http/1.1"]
        let context = try NIOSSLContext(configuration: configuration)
        let received = received
        let connectedFrom = connectedFrom
        channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                connectedFrom.withLockedValue { $0.append(channel.remoteAddress?.ipAddress ?? "?") }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                }.flatMap {
                    channel.configureHTTP2SecureUpgrade(
                        h2ChannelConfigurator: { channel in
                            channel.configureHTTP2Pipeline(mode: .server) { stream in
                                stream.eventLoop.makeCompletedFuture {
                                    try stream.pipeline.syncOperations.addHandlers([
                                        HTTP2FramePayloadToHTTP1ServerCodec(),
                                        VersionEcho(version: "HTTP/2", received: received),
                                    ])
                                }
                            }.map { _ in }
                        },
                        http1ChannelConfigurator: { channel in
                            channel.eventLoop.makeCompletedFuture {
                                try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                                try channel.pipeline.syncOperations.addHandler(
                                    VersionEcho(version: "HTTP/1.1", received: received))
                            }
                        })
                }
            }
            .bind(host: host, port: 0).wait()
    }

    /// `https://localhost:PORT`.
    var baseURL: URL {
        URL(string: "https://localhost:\(channel.localAddress?.port ?? 0)")!
    }

    func stop() {
        try? channel.close().wait()
    }
}

/// Answers each request with the HTTP version it came over.
private final class VersionEcho: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let version: String
    let received: NIOLockedValueBox<Int>

    init(version: String, received: NIOLockedValueBox<Int>) {
        self.version = version
        self.received = received
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { received.withLockedValue { $0 += 1 } }
        guard case .end = unwrapInboundIn(data) else { return }
        let body = ByteBuffer(string: version)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Length", value: "\(body.readableBytes)")
        headers.add(name: "Content-Type", value: "text/plain")
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
