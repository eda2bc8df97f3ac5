import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A server on 127.0.0.1 that answers each request as soon as its head has arrived and never reads its body: an
/// upload is answered while the client is still sending it. The server stops reading, so once the sockets' buffers
/// are full (a few MiB on loopback) the client cannot send more: a larger body cannot end before the answer arrives.
///
/// The answer is written in the pieces its handler gives, each one flushed once the one before it was written. With
/// `holdingLastPiece`, the last piece waits for ``sendHeldPieces()``: until then the client has an answer that has
/// not ended. Each connection stays open until the client closes it or the server stops.
final class EarlyAnswerServer: Sendable {
    /// The answer's pieces for a request: its head as text (request line and header fields) in.
    typealias Handler = @Sendable (_ requestHead: String) -> [Data]

    private let channel: any Channel
    private let connections: NIOLockedValueBox<[any Channel]>
    private let heads: NIOLockedValueBox<[String]>
    /// Sends the last piece of an answer whose last piece is held, for each connection answered so far.
    private let heldPieces: NIOLockedValueBox<[@Sendable () -> Void]>

    init(holdingLastPiece: Bool = false, handler: @escaping Handler) throws {
        let connections = NIOLockedValueBox<[any Channel]>([])
        let heads = NIOLockedValueBox<[String]>([])
        let heldPieces = NIOLockedValueBox<[@Sendable () -> Void]>([])
        self.connections = connections
        self.heads = heads
        self.heldPieces = heldPieces
        channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                connections.withLockedValue { $0.append(channel) }
                return channel.eventLoop.makeCompletedFuture {
                    let responder = EarlyResponder(handler: handler, holdingLastPiece: holdingLastPiece) { head in
                        heads.withLockedValue { $0.append(head) }
                    }
                    try channel.pipeline.syncOperations.addHandler(responder)
                    if holdingLastPiece {
                        let held = NIOLoopBound(responder, eventLoop: channel.eventLoop)
                        heldPieces.withLockedValue { sends in
                            sends.append { channel.eventLoop.execute { held.value.sendHeldPiece() } }
                        }
                    }
                }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
    }

    /// `http://127.0.0.1:PORT`.
    var baseURL: URL {
        URL(string: "http://127.0.0.1:\(channel.localAddress?.port ?? 0)")!
    }

    /// The heads of the requests answered so far, in order.
    var requestHeads: [String] {
        heads.withLockedValue { $0 }
    }

    /// Sends the held last piece of every answer (at once for an answer not written yet).
    func sendHeldPieces() {
        for send in heldPieces.withLockedValue({ $0 }) { send() }
    }

    /// Closes the server and every connection it accepted.
    func stop() {
        try? channel.close().wait()
        for connection in connections.withLockedValue({ $0 }) { connection.close(promise: nil) }
    }
}

/// Reads one request head, stops reading, then writes the answer's pieces one after the other.
private final class EarlyResponder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let handler: EarlyAnswerServer.Handler
    private let holdingLastPiece: Bool
    private let answered: (String) -> Void
    private var received = ""
    private var answering = false
    private var context: ChannelHandlerContext?
    /// The last piece, once the others are written, until it may be sent.
    private var heldPiece: Data?
    /// Whether the last piece may be sent as soon as the others are written.
    private var heldPieceReleased = false

    init(
        handler: @escaping EarlyAnswerServer.Handler, holdingLastPiece: Bool, answered: @escaping (String) -> Void
    ) {
        self.handler = handler
        self.holdingLastPiece = holdingLastPiece
        self.answered = answered
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answering else { return }
        var buffer = unwrapInboundIn(data)
        received += buffer.readString(length: buffer.readableBytes) ?? ""
        guard let end = received.range(of: "\r\n\r\n") else { return }
        answering = true
        let head = String(received[..<end.lowerBound])
        answered(head)
        // The body is never read: the client's writes stop once the sockets' buffers are full.
        context.channel.setOption(.autoRead, value: false).whenComplete { _ in }
        var pieces = handler(head)[...]
        if holdingLastPiece { heldPiece = pieces.popLast() }
        write(pieces)
    }

    /// Sends the held last piece once the pieces before it are written.
    func sendHeldPiece() {
        heldPieceReleased = true
        guard answering, let piece = heldPiece else { return }
        heldPiece = nil
        write([piece])
    }

    /// Writes `pieces` in order, each flushed once the one before it was written; then the held piece, if released.
    private func write(_ pieces: ArraySlice<Data>) {
        guard let context else { return }
        guard let piece = pieces.first else {
            if heldPieceReleased { sendHeldPiece() }
            return
        }
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: piece))).assumeIsolated().whenSuccess {
            self.write(pieces.dropFirst())
        }
    }
}
