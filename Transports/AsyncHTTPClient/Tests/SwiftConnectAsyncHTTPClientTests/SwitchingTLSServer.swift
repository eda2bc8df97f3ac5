import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// An HTTPS server (HTTP/1.1) on 127.0.0.1 that presents, on its n-th connection, the certificate of the n-th of its
/// identities (the last one's on every later connection), and holds every request it receives: no answer, until
/// ``dropHeld()`` closes their connections. Told of each request as its head arrives.
final class SwitchingTLSServer: Sendable {
    private let channel: any Channel
    private let state = NIOLockedValueBox(State())

    private struct State {
        var connections = 0
        var requests = 0
        var held: [any Channel] = []
    }

    /// How many requests have arrived (their heads parsed), over any connection.
    var requestCount: Int { state.withLockedValue { $0.requests } }

    /// - Parameters:
    ///   - identities: The certificate and key of each connection, in order.
    ///   - onRequest: Called as each request's head arrives, on the server's event loop.
    init(identities: [ThrowawayPKI], onRequest: @escaping @Sendable () -> Void) throws {
        let contexts = try identities.map { pki in
            try NIOSSLContext(
                configuration: .makeServerConfiguration(
                    certificateChain: [.certificate(pki.serverCertificate)], privateKey: .privateKey(pki.serverKey)))
        }
        let state = state
        channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let index = state.withLockedValue { state in
                    defer { state.connections += 1 }
                    return state.connections
                }
                return channel.eventLoop.makeCompletedFuture {
                    let context = contexts[min(index, contexts.count - 1)]
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(
                        Holder { channel in
                            state.withLockedValue { state in
                                state.requests += 1
                                state.held.append(channel)
                            }
                            onRequest()
                        })
                }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
    }

    /// `https://localhost:PORT`.
    var baseURL: URL {
        URL(string: "https://localhost:\(channel.localAddress?.port ?? 0)")!
    }

    /// Closes the connection of every request held so far, none of them answered.
    func dropHeld() {
        let held = state.withLockedValue { state in
            defer { state.held = [] }
            return state.held
        }
        for channel in held { channel.close(promise: nil) }
    }

    func stop() {
        dropHeld()
        try? channel.close().wait()
    }
}

/// Tells of each request's head, and answers none.
private final class Holder: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart

    let received: (any Channel) -> Void

    init(received: @escaping (any Channel) -> Void) {
        self.received = received
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { received(context.channel) }
    }
}
