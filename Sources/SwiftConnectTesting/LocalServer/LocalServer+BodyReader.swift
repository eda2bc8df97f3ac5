import Foundation

extension LocalServer {
    /// The body of a request to a streaming route, read piece by piece straight from the connection.
    ///
    /// A handler registered with ``LocalServer/streamingRoute(_:_:handler:)`` gets one. Memory stays bounded by
    /// the size of the pieces asked for, whatever the size of the body: the server removes the `Content-Length` or
    /// chunked framing as it goes.
    ///
    /// ```swift
    /// server.streamingRoute("PUT", "/upload") { request, body in
    ///     var hash = SHA256()
    ///     while let piece = body.read(maxBytes: 64 * 1024) { hash.update(piece) }
    ///     guard body.isComplete else { return .status(400) }
    ///     return .text(hash.hexDigest)
    /// }
    /// ```
    ///
    /// A reader belongs to the handler's call: use it on the handler's thread, and not after the handler returned
    /// (it then reads nothing). When the request carries `Expect: 100-continue`, the first ``read(maxBytes:)``
    /// sends the `100 Continue`; a handler that reads nothing answers without ever asking for the body.
    public final class BodyReader {
        /// How far the reading went.
        enum Status {
            case reading
            /// The whole body was read.
            case complete
            /// The framing was invalid: the server answers 400 and closes.
            case failed(HTTPParseError)
            /// The connection ended, or a write failed, before the end of the body.
            case disconnected
        }

        /// What the server must do with the connection once the handler returned and the rest of the body was
        /// read, see ``finish()``.
        enum Outcome {
            /// The body was consumed: the connection can serve another request.
            case consumed
            /// The client was waiting for a `100 Continue` that was never sent: its body may or may not follow,
            /// so the connection must close after the response.
            case neverSolicited
            /// The framing was invalid.
            case failed(HTTPParseError)
            /// The connection is gone.
            case disconnected
        }

        /// The body length the client declared in `Content-Length`; `nil` for a chunked body.
        public let contentLength: Int?

        /// The number of body bytes read so far, by the handler (and, once it returned, by the server).
        public private(set) var byteCount = 0

        private let input: ConnectionInput
        private var remainingLength: Int
        private var chunked: ChunkedDecoder?
        private var continuePending: Bool
        private(set) var status = Status.reading
        /// Set when the handler returned: reads then return `nil`.
        private var isDetached = false

        init(input: ConnectionInput, framing: BodyFraming, expectsContinue: Bool) {
            self.input = input
            switch framing {
            case .none:
                contentLength = 0
                remainingLength = 0
                status = .complete
            case .contentLength(let length):
                contentLength = length
                remainingLength = length
            case .chunked:
                contentLength = nil
                remainingLength = 0
                chunked = ChunkedDecoder()
            }
            continuePending = expectsContinue && framing != .none
        }

        /// Whether the whole body has been read.
        ///
        /// After ``read(maxBytes:)`` returned `nil`, `false` means the body was cut short: the client went away,
        /// the server is stopping, or the chunked framing was invalid.
        public var isComplete: Bool {
            if case .complete = status { return true }
            return false
        }

        /// Reads the next bytes of the body, waiting for the client to send them if needed.
        ///
        /// - Parameter maxBytes: The most bytes to return; values below 1 count as 1. The pieces returned are
        ///   often smaller, depending on how the client's bytes arrive.
        /// - Returns: The next piece, never empty; `nil` at the end of the body, or if it could not be read (see
        ///   ``isComplete``).
        public func read(maxBytes: Int = 64 * 1024) -> Data? {
            guard !isDetached else { return nil }
            return nextPiece(maxBytes: maxBytes)
        }

        /// Reads the rest of the body into memory.
        ///
        /// - Returns: The bytes not read yet; check ``isComplete`` to know whether they are the whole rest.
        public func readAll() -> Data {
            var data = Data()
            while let piece = read() { data.append(piece) }
            return data
        }

        // MARK: - Server side

        /// Reads and drops what the handler left of the body, then detaches the reader from the connection.
        ///
        /// Called by the connection once the handler returned.
        func finish() -> Outcome {
            isDetached = true
            if continuePending, case .reading = status { return .neverSolicited }
            while nextPiece(maxBytes: Socket.receiveSize) != nil {}
            switch status {
            case .complete: return .consumed
            case .failed(let error): return .failed(error)
            case .reading, .disconnected: return .disconnected
            }
        }

        private func nextPiece(maxBytes: Int) -> Data? {
            guard case .reading = status else { return nil }
            if continuePending {
                continuePending = false
                guard input.socket.sendAll(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else {
                    status = .disconnected
                    return nil
                }
            }
            let maxBytes = max(1, maxBytes)
            if chunked != nil {
                return nextChunkedPiece(maxBytes: maxBytes)
            }
            if input.buffer.readableCount == 0 {
                guard input.receiveMore() else {
                    status = .disconnected
                    return nil
                }
            }
            let count = min(maxBytes, remainingLength, input.buffer.readableCount)
            let piece = input.buffer.read(count)
            remainingLength -= count
            byteCount += count
            if remainingLength == 0 { status = .complete }
            return piece
        }

        private func nextChunkedPiece(maxBytes: Int) -> Data? {
            while true {
                let piece: ChunkedDecoder.Piece
                do {
                    piece = try chunked!.next(from: &input.buffer, maxBytes: maxBytes)
                } catch {
                    status = .failed(error)
                    return nil
                }
                switch piece {
                case .data(let data):
                    byteCount += data.count
                    return data
                case .needsMoreInput:
                    guard input.receiveMore() else {
                        status = .disconnected
                        return nil
                    }
                case .end:
                    status = .complete
                    return nil
                }
            }
        }
    }
}

// MARK: - Connection input

/// The receiving side of one connection: its socket, the bytes received and not consumed yet, and the memory
/// `recv` writes to.
///
/// Shared by the ``LocalServer/Connection`` and the ``LocalServer/BodyReader`` of a streaming route, on the
/// connection's thread only.
final class ConnectionInput {
    let socket: Socket
    var buffer = ReceiveBuffer()
    /// Where `recv` writes, reused for every read of the connection.
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: Socket.receiveSize, alignment: 16)

    init(socket: Socket) {
        self.socket = socket
    }

    deinit {
        scratch.deallocate()
    }

    /// Appends the next bytes from the socket to the buffer.
    ///
    /// - Returns: `false` if the client closed, the connection failed or the server stopped.
    func receiveMore() -> Bool {
        let count = socket.receive(into: scratch)
        guard count > 0 else { return false }
        buffer.append(UnsafeRawBufferPointer(rebasing: scratch[0..<count]))
        return true
    }
}
