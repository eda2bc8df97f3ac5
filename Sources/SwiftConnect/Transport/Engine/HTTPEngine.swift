import Dispatch
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A network engine that moves the bytes of one hop: it sends a request head and body, and hands back the
/// response head and a body to read. Every rule of an exchange is the core's, applied around it.
///
/// An engine is a ``Transport``: `Connect(transport: MyEngine())` works as soon as ``send(_:)-(EngineRequest)``
/// does. The core's exchange (`Transport/Engine/EngineExchange.swift`) then gives it, the same way as to
/// `AsyncHTTPClientTransport`: redirects followed under SwiftConnect's rules (credentials never cross origins),
/// the request's `timeoutInterval` over the whole exchange, gzip and deflate bodies decoded, size limits, downloads to
/// a file, progress, streamed bodies with back-pressure, and failures reported as typed ``ConnectError``s.
///
/// ```swift
/// struct MyEngine: HTTPEngine {
///     func send(_ hop: EngineRequest) async throws -> EngineResponse<AsyncThrowingStream<Data, any Error>> {
///         // connect to hop.head.authority, write hop.head and hop.body, read the head…
///     }
/// }
/// ```
///
/// What an engine does, and nothing more:
/// - sends `hop.head` as it is (method, path, fields in order) to `hop.head.scheme`/`authority`, and the body;
///   it does not follow redirects, add credentials or cookies, or time the exchange;
/// - reports every status as a response, and a failure to get one by throwing (a ``ConnectError`` of the kind that
///   names it, or its own error for ``failure(_:)`` to classify);
/// - delivers the body as it arrives, reading no further than its reader asks (that is the back-pressure);
/// - stops when its task is cancelled or its body is let go unread: the core cancels the task for a deadline or a
///   caller that left, and lets the body go for a size limit, a redirect's long body, or a reader that left. The
///   caller hears of a deadline when it passes, whether or not the engine has stopped by then, and the core asks for
///   no piece of the body after a cancellation.
///
/// The engine seam (this protocol, ``EngineRequest``, ``EngineResponse`` and ``RequestHead``) is SPI: an app sends
/// with a ``Transport`` and never meets it. A module that writes an engine imports it with
/// `@_spi(Engine) import SwiftConnect`.
@_spi(Engine)
public protocol HTTPEngine: Transport {
    /// The body of a response, read chunk by chunk.
    associatedtype ResponseBody: AsyncSequence & Sendable where ResponseBody.Element == Data

    /// Sends one hop and returns the response's head, its body still to read.
    ///
    /// - Parameter hop: What to send, head and body.
    /// - Returns: The response; its body is read by the core, as the caller takes it.
    /// - Throws: What went wrong before a head arrived.
    func send(_ hop: EngineRequest) async throws -> EngineResponse<ResponseBody>

    /// The content codings (`Content-Encoding`, lower case: `"gzip"`, `"deflate"`, `"br"`) this engine decodes
    /// before handing the body over, and the transfer codings of those names (`Transfer-Encoding`, besides
    /// `chunked`, which every engine removes). The default is none, which is what most engines want: the core then
    /// decodes gzip and deflate itself, in bounded parts, and asks for them with `Accept-Encoding` (an engine that
    /// decodes gzip announces its own). It refuses a body in a coding neither decodes with a typed error naming it, rather
    /// than passing bytes nobody can read as a success.
    var decodedContentCodings: Set<String> { get }

    /// `error`, thrown by ``send(_:)-(EngineRequest)`` or by reading a body, as a ``ConnectError`` of the kind that
    /// names it, the engine's error kept as ``ConnectError/underlyingError``; `nil` leaves it to the core's
    /// classification (a `URLError` by its code, a cancellation as `.cancelled`, anything else as `.transport`).
    func failure(_ error: any Error) -> ConnectError?
}

@_spi(Engine)
extension HTTPEngine {
    /// Decodes no content coding: the core decodes gzip and deflate, and refuses a body in any other coding.
    public var decodedContentCodings: Set<String> { [] }

    /// Leaves every error to the core's classification.
    public func failure(_ error: any Error) -> ConnectError? { nil }

    /// Sends `request` through the core's exchange over this engine.
    public func send(_ request: URLRequest) -> Future<ConnectResponse> {
        send(request, transfer: TransferOptions())
    }

    /// Sends `request` through the core's exchange over this engine, as `transfer` asks.
    public func send(_ request: URLRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
        do {
            return send(try ConnectRequest(request), transfer: transfer)
        } catch {
            return Future(error: error)
        }
    }

    /// Sends the client's request through the core's exchange over this engine, as `transfer` asks: no `URLRequest`
    /// is made on the way.
    public func send(_ request: ConnectRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
        EngineExchange(engine: self, request: request, transfer: transfer).start()
    }
}

/// One hop as an engine sends it: the head, the body, and when it must be done.
@_spi(Engine)
public struct EngineRequest: Sendable {
    /// What an engine sends as the body.
    public enum Body: Sendable {
        /// No body.
        case none
        /// These bytes.
        case bytes(Data)
        /// The contents of a regular file, `length` bytes long: read it as the connection takes it, and call
        /// ``EngineRequest/sent`` for each piece handed over.
        case file(URL, length: Int64)
        /// A body read once, chunk by chunk: take the next chunk when the connection is ready for it (that is the
        /// back-pressure), and send it as it comes. `length`, when known, goes out as `Content-Length`; without
        /// one, send it in chunks (`Transfer-Encoding: chunked` over HTTP/1.1). The core counts each chunk taken
        /// for progress, and fails the body (a ``ConnectError``) if its source fails or gives another length than
        /// announced: an engine stops the request with that error, and never sends a shorter body as a whole one.
        case stream(RequestBodyChunks, length: Int64?)

        /// The length of the body, when it is known before it is sent (`nil` only for a stream without one).
        public var length: Int64? {
            switch self {
            case .none: return 0
            case .bytes(let data): return Int64(data.count)
            case .file(_, let length): return length
            case .stream(_, let length): return length
            }
        }
    }

    /// The head: method, scheme, authority, path and query, header fields (with `Authorization` made from a
    /// URL's user info, and a redirect's cookies, already added by the core).
    public var head: RequestHead
    /// The body.
    public var body: Body
    /// When the whole exchange must be done, on `DispatchTime`'s clock (the uptime clock SwiftNIO's deadlines use);
    /// `nil` for none. The core ends the exchange then whatever the engine does; an engine with timers of its own
    /// can give them this.
    public var deadline: DispatchTime?
    /// Told the size of each piece of a ``Body/bytes(_:)`` or ``Body/file(_:length:)`` body as it is handed to the
    /// connection, for progress (the core counts a ``Body/stream(_:length:)`` body itself). The upload's progress is
    /// what this is told, and nothing more: the response's head does not make it complete, since a server may answer
    /// (a 413, say) before it has read the whole body. An engine that cannot tell may never call it: its uploads
    /// then report nothing sent.
    public var sent: @Sendable (Int64) -> Void
    /// A streamed answer's ``StreamingOptions/bufferLimit`` (``TransferOptions/streaming``); `nil` when the core
    /// reads the body as it comes (into memory, a file). The core's stream stops taking the body once the smaller of
    /// this and 256 KiB waits unread: an engine that buffers the body behind it pauses its reading no later.
    public var streamBufferLimit: Int?

    /// A hop with each part given.
    public init(
        head: RequestHead, body: Body = .none, deadline: DispatchTime? = nil,
        sent: @escaping @Sendable (Int64) -> Void = { _ in }
    ) {
        self.head = head
        self.body = body
        self.deadline = deadline
        self.sent = sent
    }
}

/// What an engine answers for one hop: the response head and the body still to read.
@_spi(Engine)
public struct EngineResponse<Body: AsyncSequence & Sendable>: Sendable where Body.Element == Data {
    /// The status and header fields.
    public var head: ResponseHead
    /// The protocol version, as URLSession's metrics name it: `"HTTP/1.1"`, `"HTTP/2"`.
    public var httpVersion: String
    /// The body, read by the core as its reader takes it. If the engine decoded a `Content-Encoding`, the
    /// body is the decoded bytes (the head keeps the field: the core then does not trust `Content-Length`).
    public var body: Body

    /// A response with each part given.
    public init(head: ResponseHead, httpVersion: String = "HTTP/1.1", body: Body) {
        self.head = head
        self.httpVersion = httpVersion
        self.body = body
    }
}
