import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A server on 127.0.0.1 whose answers break off: for each request it writes the bytes its handler gives (status
/// line, headers and a body cut short), then ends the connection as the handler says, all in one go, so that the
/// last bytes and the end of the connection reach the client together.
final class BrokenBodyServer: Sendable {
    /// How the server ends a connection once its bytes are written.
    enum Ending: Sendable {
        /// A clean close (FIN): every byte written reaches the client's socket before the end.
        case close
        /// A reset (RST, `SO_LINGER` of zero): the kernel may discard bytes the client has not read yet.
        case reset
        /// No end: the connection stays open, and the next request on it is answered too.
        case keepOpen
    }

    /// What to answer: the request's head as text (request line and header fields) in, the answer's bytes and how
    /// to end the connection out.
    typealias Handler = @Sendable (_ requestHead: String) -> (answer: Data, ending: Ending)

    private let channel: any Channel

    init(handler: @escaping Handler) throws {
        channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(BreakingResponder(handler: handler))
                }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
    }

    /// `http://127.0.0.1:PORT`.
    var baseURL: URL {
        URL(string: "http://127.0.0.1:\(channel.localAddress?.port ?? 0)")!
    }

    func stop() {
        try? channel.close().wait()
    }

    /// The value of the header field `name` in `requestHead`, compared case-insensitively.
    static func field(_ name: String, in requestHead: String) -> String? {
        for line in requestHead.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].lowercased() == name.lowercased() {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }
}

/// Reads one request head (the test's requests have no body), writes the answer, then ends the connection (or, kept
/// open, reads the next).
private final class BreakingResponder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let handler: BrokenBodyServer.Handler
    private var received = ""
    private var answered = false

    init(handler: @escaping BrokenBodyServer.Handler) {
        self.handler = handler
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        received += buffer.readString(length: buffer.readableBytes) ?? ""
        guard !answered, let end = received.range(of: "\r\n\r\n") else { return }
        let (answer, ending) = handler(String(received[..<end.lowerBound]))
        if case .keepOpen = ending {
            received = String(received[end.upperBound...])
        } else {
            answered = true
        }
        let channel = context.channel
        let written = context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: answer)))
        written.whenComplete { _ in
            if case .keepOpen = ending { return }
            guard case .reset = ending, let options = channel as? any SocketOptionProvider else {
                channel.close(promise: nil)
                return
            }
            options.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
