import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import SwiftConnect
import SwiftConnectAsyncHTTPClient
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A body that ends when its TLS connection closes (no `Content-Length`, not chunked) is whole only if the server
/// said so with `close_notify`; a connection closed without it is a body cut short, which TLS exists to tell
/// (RFC 8446 §6.1). Pinned hosts are reached through the transport's relay, where AsyncHTTPClient sees only its own
/// connection close: the relay must carry the difference.
final class TruncationTests: XCTestCase {
    private var pki: ThrowawayPKI!
    private var server: CloseDelimitedServer!

    override func setUpWithError() throws {
        pki = try ThrowawayPKI()
        server = try CloseDelimitedServer(pki: pki)
    }

    override func tearDown() {
        server.stop()
    }

    private func transport(pinned: Bool) throws -> AsyncHTTPClientTransport {
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([pki.caCertificate])
        configuration.tlsConfiguration = tls
        let pin = try CertificatePins.spkiSHA256(ofCertificate: Data(pki.serverDER)).base64EncodedString()
        let transport = AsyncHTTPClientTransport(
            configuration: configuration, pins: try CertificatePins(pinned ? ["localhost": [pin]] : [:]))
        addTeardownBlock { try await transport.shutdown() }
        return transport
    }

    private func result(_ path: String, pinned: Bool) throws -> Result<Data, any Error> {
        let client = Connect(transport: try transport(pinned: pinned), retryPolicy: nil)
        let request = ConnectRequest(url: server.baseURL.appendingPathComponent(path), timeoutInterval: 10)
        return try client.response(for: request).waitForResult(timeout: 15).map(\.data)
    }

    private func assertCutShort(pinned: Bool, file: StaticString = #filePath, line: UInt = #line) throws {
        switch try result("cut", pinned: pinned) {
        case .success(let data):
            XCTFail("a body cut short came back whole: \(data.count) bytes", file: file, line: line)
        case .failure(let error as ConnectError):
            XCTAssertEqual(error.kind, .connectionLost, "\(error)", file: file, line: line)
        case .failure(let error):
            XCTFail("expected a ConnectError, got \(error)", file: file, line: line)
        }
    }

    func testABodyCutWithoutCloseNotifyIsLostUnpinned() throws {
        try assertCutShort(pinned: false)
    }

    func testABodyCutWithoutCloseNotifyIsLostPinned() throws {
        try assertCutShort(pinned: true)
    }

    /// The same body ended with `close_notify` is whole, through the relay as directly.
    func testABodyEndedWithCloseNotifyIsWhole() throws {
        for pinned in [false, true] {
            let data = try result("whole", pinned: pinned).get()
            XCTAssertEqual(data, CloseDelimitedServer.body, "pinned: \(pinned)")
        }
    }
}

/// An HTTPS server on 127.0.0.1 (HTTP/1.1 only) that answers every request with a body delimited by the connection's
/// close: at `/whole` it closes with `close_notify`, elsewhere it closes the TCP connection under TLS without one.
final class CloseDelimitedServer: Sendable {
    static let body = Data(repeating: UInt8(ascii: "x"), count: 4096)
    private let channel: any Channel

    init(pki: ThrowawayPKI) throws {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(pki.serverCertificate)], privateKey: .privateKey(pki.serverKey))
        configuration.applicationProtocols = ["http/1.1"]
        let context = try NIOSSLContext(configuration: configuration)
        channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let cutter = Cutter()
                    try channel.pipeline.syncOperations.addHandlers([
                        cutter, NIOSSLServerHandler(context: context), Answer(cutter: cutter),
                    ])
                }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
    }

    /// `https://localhost:PORT`.
    var baseURL: URL {
        URL(string: "https://localhost:\(channel.localAddress?.port ?? 0)")!
    }

    func stop() {
        try? channel.close().wait()
    }

    /// Sits under TLS: a close from here reaches the socket without passing TLS, so no `close_notify` goes out.
    private final class Cutter: ChannelOutboundHandler, @unchecked Sendable {
        // @unchecked Sendable: `context` is only touched on the channel's event loop.
        typealias OutboundIn = NIOAny
        private var context: ChannelHandlerContext?

        func handlerAdded(context: ChannelHandlerContext) { self.context = context }
        func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

        func cut() { context?.close(promise: nil) }
    }

    /// Reads a request head, answers it without a length, then ends the connection.
    private final class Answer: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        private let cutter: Cutter
        private var received = ""

        init(cutter: Cutter) {
            self.cutter = cutter
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            received += buffer.readString(length: buffer.readableBytes) ?? ""
            guard let end = received.range(of: "\r\n\r\n") else { return }
            let whole = received[..<end.lowerBound].hasPrefix("GET /whole ")
            received = ""
            var answer = context.channel.allocator.buffer(
                string: "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n")
            answer.writeBytes(CloseDelimitedServer.body)
            let written = context.eventLoop.makePromise(of: Void.self)
            context.writeAndFlush(wrapOutboundOut(answer), promise: written)
            let channel = context.channel
            written.futureResult.whenComplete { [cutter] _ in
                if whole { channel.close(promise: nil) } else { cutter.cut() }
            }
        }
    }
}
