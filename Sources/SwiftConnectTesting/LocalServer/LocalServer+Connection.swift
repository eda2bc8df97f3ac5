import Foundation

extension LocalServer {
    /// Serves the requests of one accepted connection, one after the other, on the connection's own thread.
    ///
    /// Bytes beyond the current request (pipelined requests) stay in ``ReceiveBuffer`` for the next round.
    struct Connection {
        let id: Int
        let socket: Socket
        let core: Core
        let run: Run
        /// The received bytes, shared with the ``BodyReader`` of a streaming route.
        private let input: ConnectionInput

        init(id: Int, socket: Socket, core: Core, run: Run) {
            self.id = id
            self.socket = socket
            self.core = core
            self.run = run
            self.input = ConnectionInput(socket: socket)
        }

        /// Serves requests until the client closes, asks to close, a fault ends the connection or the server stops.
        /// The caller closes the socket afterwards.
        func serve() {
            while serveOneRequest() {}
        }

        // MARK: - Reading a request

        /// Reads, handles and answers one request.
        ///
        /// - Returns: Whether the connection stays open for another request.
        private func serveOneRequest() -> Bool {
            var searchFrom = 0
            var headLength = 0
            var consumed = 0
            while true {
                // A head ended by bare LFs waited for a CRLF CRLF that never came, until the 64 KiB limit or the
                // client gave up.
                let end: (headLength: Int, consumed: Int)?
                do {
                    end = try HTTPParser.requestHeadEnd(in: input.buffer, from: searchFrom)
                } catch {
                    return refuse(error)
                }
                if let end {
                    (headLength, consumed) = end
                    break
                }
                searchFrom = max(0, input.buffer.readableCount - 2)
                guard input.receiveMore() else { return false }
            }

            let parsed = input.buffer.withBytes(count: headLength) { bytes in
                Result { () throws(HTTPParseError) in
                    let head = try HTTPParser.parseHead(bytes)
                    return (head, try HTTPParser.framing(of: head))
                }
            }
            input.buffer.skip(consumed)
            guard case .success((let head, let framing)) = parsed else {
                if case .failure(let error) = parsed { return refuse(error) }
                return false
            }

            core.requestStarted()
            var inFlight = true
            // The request ends when its answer is written (or its connection fails), before any linger: a client
            // that read the answer to its end finds it no longer in flight.
            func finished() {
                guard inFlight else { return }
                inFlight = false
                core.requestFinished()
            }
            defer { finished() }

            var (request, handler) = core.match(
                Request(method: head.method, target: head.target, headers: head.headers, connectionID: id)
            )
            var response: Response
            // Whether the connection must close after the response, whatever the client asked.
            var mustClose = head.hasUnreliableFraming
            switch handler {
            case .streaming(let handle):
                request.bodyLength = nil
                let ticket = core.record(request)
                let reader = BodyReader(input: input, framing: framing, expectsContinue: head.expectsContinue)
                let handled = handle(request, reader)
                let outcome = reader.finish()
                if let ticket { core.recordBodyLength(reader.byteCount, for: ticket) }
                switch outcome {
                case .consumed: response = handled
                case .neverSolicited:
                    response = handled
                    mustClose = true
                case .failed(let error): return refuse(error, whenWritten: finished)
                case .disconnected: return false
                }
            case .buffered, nil:
                switch readBody(framing, head: head) {
                case .success(let body): (request.body, request.bodyLength) = (body, body.count)
                case .failure(let error): return refuse(error, whenWritten: finished)
                case nil: return false
                }
                core.record(request)
                if case .buffered(let handle) = handler {
                    response = handle(request)
                } else {
                    response = .json(["error": "no route for \(request.method) \(request.path)"], status: 404)
                }
            }
            response = Connection.sendable(response, answering: request)
            let keepAlive =
                !mustClose
                && head.wantsKeepAlive
                && !(response.header("connection")?.caseInsensitiveEquals("close") ?? false)
                && !run.isStopping
            let keepsOpen = write(
                response, isHead: head.method == "HEAD", keepAlive: keepAlive, readsChunked: head.minorVersion >= 1,
                whenWritten: finished)
            if mustClose {
                finished()
                lingerBeforeClosing()
            }
            return keepsOpen
        }

        /// `response`, or, if the handler built one the server cannot send (see ``Response/mistake``), a 500 whose
        /// body says why, also written to standard error so that a test author sees it whatever the client reports.
        private static func sendable(_ response: Response, answering request: Request) -> Response {
            guard let mistake = response.mistake ?? framingMistake(of: response, answering: request) else {
                return response
            }
            let message =
                "LocalServer: the response to \(request.method) \(request.path) cannot be sent: \(mistake); "
                + "answered 500 instead"
            FileHandle.standardError.write(Data((message + "\n").utf8))
            return .text(message, status: 500)
        }

        /// Why the handler's own `Content-Length` or `Transfer-Encoding` (kept as they are for a body in memory sent
        /// with no fault) does not frame the body the server sends, or `nil`. A length other than the body's left its
        /// rest to be read as the next response, or the client waiting for bytes that never come; a transfer coding
        /// announced a framing the bytes sent as they are do not have. A deliberate lie is a ``Response/Fault``
        /// (``Response/Fault/lieAboutLength(extra:)``, ``Response/Fault/chunked``). No body is sent to a `HEAD` nor
        /// with a 204 or 304, whose length may be the resource's.
        static func framingMistake(of response: Response, answering request: Request) -> String? {
            guard case .normal = response.fault, response.streamedBody == nil, request.method != "HEAD",
                statusAllowsBody(response.status)
            else { return nil }
            let length = String(response.body.count)
            for (name, value) in response.headers {
                if name.caseInsensitiveEquals("transfer-encoding") {
                    return "the header \(name): \(value) announces a framing the body, sent as it is, does not have "
                        + "(withFault(.chunked) sends it chunked)"
                }
                if name.caseInsensitiveEquals("content-length"),
                    value.trimmingCharacters(in: CharacterSet(charactersIn: " \t")) != length
                {
                    return
                        "the header \(name): \(value) is not the length of the \(length)-byte body (the client would "
                        + "read the rest as the next response, or wait for bytes never sent; "
                        + "withFault(.lieAboutLength(extra:)) declares more on purpose)"
                }
            }
            return nil
        }

        /// Reads the body delimited by `framing`, answering `Expect: 100-continue` first if asked to.
        ///
        /// - Returns: The body, a parse error, or `nil` if the connection ended first.
        private func readBody(_ framing: BodyFraming, head: RequestHead) -> Result<Data, HTTPParseError>? {
            if framing != .none, head.expectsContinue {
                guard socket.sendAll(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return nil }
            }
            switch framing {
            case .none:
                return .success(Data())
            case .contentLength(let length):
                while input.buffer.readableCount < length {
                    guard input.receiveMore() else { return nil }
                }
                return .success(input.buffer.read(length))
            case .chunked:
                var decoder = ChunkedDecoder()
                do {
                    while try !decoder.decode(&input.buffer) {
                        guard input.receiveMore() else { return nil }
                    }
                } catch {
                    return .failure(error)
                }
                return .success(decoder.body)
            }
        }

        /// Answers a request that cannot be parsed, then ends the connection.
        ///
        /// - Parameter whenWritten: Called once the answer is written, before the linger.
        private func refuse(_ error: HTTPParseError, whenWritten: () -> Void = {}) -> Bool {
            var response = Response.json(["error": error.message], status: error.status)
            response.headers.append(("Connection", "close"))
            _ = write(response, isHead: false, keepAlive: false)
            whenWritten()
            lingerBeforeClosing()
            return false
        }

        /// Ends the sending direction, then briefly reads and drops what the client still sends, so that closing
        /// does not reset the connection before the client has read the answer.
        private func lingerBeforeClosing() {
            socket.shutdownWrite()
            var drained = 0
            while drained < 1 << 20, socket.waitForReadable(seconds: 1) == .readable {
                let count = socket.receive(into: input.scratch)
                guard count > 0 else { break }
                drained += count
            }
        }

        // MARK: - Writing a response

        /// Sends `response`, delay and fault included.
        ///
        /// - Parameters:
        ///   - readsChunked: Whether the client reads a chunked body: not one of HTTP/1.0 (RFC 9112 §6.1), which gets
        ///     a body of unknown length without a transfer coding, ended by closing the connection.
        ///   - whenWritten: Called, for a ``Response/Fault/raw(_:)`` answer, once it is written and before the linger
        ///     that follows it.
        /// - Returns: Whether the connection stays open for another request.
        private func write(
            _ response: Response, isHead: Bool, keepAlive: Bool, readsChunked: Bool = true,
            whenWritten: () -> Void = {}
        ) -> Bool {
            if response.delay > 0, socket.waitForHangUp(seconds: response.delay) != .timedOut {
                return false
            }
            let sendsBody = !isHead && Connection.statusAllowsBody(response.status)
            // A body of unknown length, which the client cannot read chunked, is delimited by the close.
            let unknownLength: UnknownLength = readsChunked ? .chunked : .close
            let keepAlive = keepAlive && (readsChunked || !Connection.hasUnknownLength(response))
            if let streamed = response.streamedBody,
                let keepsOpen = writeStreamed(
                    response, streamed, sendsBody: sendsBody, keepAlive: keepAlive, unknownLength: unknownLength)
            {
                return keepsOpen
            }
            let body = sendsBody ? response.body : Data()

            switch response.fault {
            case .closeBeforeHeaders:
                return false
            case .raw(let bytes):
                _ = bytes.withUnsafeBytes { socket.sendAll($0) }
                whenWritten()
                lingerBeforeClosing()
                return false
            case .normal:
                let head = Connection.head(
                    of: response, length: response.body.count, keepAlive: keepAlive, keepsFraming: true)
                return send(head: head, body: body) && keepAlive
            case .chunked:
                let head = Connection.head(
                    of: response, length: nil, keepAlive: keepAlive, unknownLength: unknownLength)
                guard sendsBody else { return socket.sendAll(head) && keepAlive }
                guard unknownLength.isChunked else { return send(head: head, body: body) && closeWhenSent() }
                var bytes = head
                let chunkSize = max(1, (body.count + 2) / 3)
                var start = body.startIndex
                while start < body.endIndex {
                    let end = min(start + chunkSize, body.endIndex)
                    bytes += Connection.chunkFrame(body[start..<end])
                    start = end
                }
                bytes += Array("0\r\n\r\n".utf8)
                return socket.sendAll(bytes) && keepAlive
            case .closeMidBody(let afterBytes):
                let head = Connection.head(of: response, length: response.body.count, keepAlive: false)
                _ = send(head: head, body: body.prefix(max(0, afterBytes)))
                socket.shutdownWrite()
                return false
            case .lieAboutLength(let extra):
                var bytes = Connection.head(of: response, length: response.body.count + extra, keepAlive: keepAlive)
                bytes.append(contentsOf: body)
                hang(after: bytes)
                return false
            case .neverFinishHeaders:
                let partial = "HTTP/1.1 \(response.status) \(Connection.reason(response.status))\r\nContent-Ty"
                hang(after: Array(partial.utf8))
                return false
            case .trickle(let chunk, let interval):
                let head = Connection.head(
                    of: response, length: nil, keepAlive: keepAlive, unknownLength: unknownLength)
                hang(after: head, trickling: sendsBody ? (chunk, interval, unknownLength.isChunked) : nil)
                return false
            }
        }

        /// Sends `bytes`, then keeps the connection open, optionally trickling chunks, until the client leaves or
        /// the server stops; then resets it.
        private func hang(after bytes: [UInt8], trickling: (chunk: Data, interval: TimeInterval, chunked: Bool)? = nil)
        {
            hang(afterSending: { socket.sendAll(bytes) }, trickling: trickling)
        }

        /// Runs `send`, then keeps the connection open, optionally trickling chunks, until the client leaves or
        /// the server stops; then resets it.
        ///
        /// - Parameter send: Writes the start of the response; returns `false` if the connection failed.
        private func hang(
            afterSending send: () -> Bool,
            trickling: (chunk: Data, interval: TimeInterval, chunked: Bool)? = nil
        ) {
            guard run.markAbortive(id: id) else { return }
            defer { socket.resetOnClose() }
            guard send() else { return }
            if let trickling {
                trickle(trickling.chunk, every: trickling.interval, chunked: trickling.chunked)
            } else {
                discardUntilHangUp()
            }
        }

        /// Sends the head and the body, in one `send` unless the body is large.
        private func send(head: [UInt8], body: Data) -> Bool {
            if body.count <= 256 * 1024 {
                var bytes = head
                bytes.append(contentsOf: body)
                return socket.sendAll(bytes)
            }
            return socket.sendAll(head) && body.withUnsafeBytes { socket.sendAll($0) }
        }

        /// Sends `chunk` every `interval` seconds until the client disconnects or the server stops: as a chunk, or
        /// as it is when not `chunked`.
        private func trickle(_ chunk: Data, every interval: TimeInterval, chunked: Bool) {
            let frame = chunked ? Connection.chunkFrame(chunk) : Array(chunk)
            var nextSend = Socket.monotonicSeconds()
            while true {
                switch socket.waitForReadable(seconds: nextSend - Socket.monotonicSeconds()) {
                case .timedOut:
                    if !chunk.isEmpty { guard socket.sendAll(frame) else { return } }
                    nextSend += max(interval, 0.001)
                case .readable:
                    guard socket.receive(into: input.scratch) > 0 else { return }
                case .hungUp:
                    return
                }
            }
        }

        /// Reads and drops whatever the client sends until it closes or the server stops.
        private func discardUntilHangUp() {
            while socket.receive(into: input.scratch) > 0 {}
        }

        // MARK: - Writing a streamed body

        /// Sends a response whose body comes from a producer, for the faults that involve the body.
        ///
        /// - Returns: Whether the connection stays open for another request, or `nil` if `response.fault` does not
        ///   involve the body and the caller must send the response as usual.
        private func writeStreamed(
            _ response: Response,
            _ streamed: Response.StreamedBody,
            sendsBody: Bool,
            keepAlive: Bool,
            unknownLength: UnknownLength
        ) -> Bool? {
            let length = streamed.contentLength.map { max(0, $0) }
            let chunked = length == nil && unknownLength.isChunked
            switch response.fault {
            case .closeBeforeHeaders, .neverFinishHeaders, .trickle, .raw:
                return nil
            case .normal:
                let head = Connection.head(
                    of: response, length: length, keepAlive: keepAlive, unknownLength: unknownLength)
                guard socket.sendAll(head) else { return false }
                guard sendsBody else { return keepAlive }
                let pumped = pump(streamed, chunked: chunked, limit: length)
                guard pumped.succeeded else { return false }
                if let length { return pumped.sent == length && keepAlive }
                guard chunked else { return closeWhenSent() }
                return socket.sendAll(Connection.lastChunk) && keepAlive
            case .chunked:
                let head = Connection.head(
                    of: response, length: nil, keepAlive: keepAlive, unknownLength: unknownLength)
                guard socket.sendAll(head) else { return false }
                guard sendsBody else { return keepAlive }
                guard pump(streamed, chunked: unknownLength.isChunked, limit: nil).succeeded else { return false }
                guard unknownLength.isChunked else { return closeWhenSent() }
                return socket.sendAll(Connection.lastChunk) && keepAlive
            case .closeMidBody(let afterBytes):
                let head = Connection.head(of: response, length: length, keepAlive: false, unknownLength: unknownLength)
                if socket.sendAll(head), sendsBody {
                    _ = pump(streamed, chunked: chunked, limit: min(max(0, afterBytes), length ?? .max))
                }
                socket.shutdownWrite()
                return false
            case .lieAboutLength(let extra):
                let head = Connection.head(
                    of: response, length: length.map { $0 + extra }, keepAlive: keepAlive, unknownLength: unknownLength)
                hang(afterSending: {
                    guard socket.sendAll(head) else { return false }
                    return !sendsBody || pump(streamed, chunked: chunked, limit: length).succeeded
                })
                return false
            }
        }

        /// Ends a body delimited by the close: the sending direction is shut, so the client reads the end of the
        /// stream at once; the connection then closes.
        private func closeWhenSent() -> Bool {
            socket.shutdownWrite()
            return false
        }

        /// Runs the producer of `streamed`, sending what it writes as it writes it.
        ///
        /// - Parameters:
        ///   - chunked: Whether to frame every non-empty piece as a chunk (the last, empty chunk is not sent).
        ///   - limit: The most body bytes to send; a piece going beyond is cut, and `write` returns `false`.
        /// - Returns: The number of body bytes sent, and `false` if a send failed.
        private func pump(_ streamed: Response.StreamedBody, chunked: Bool, limit: Int?) -> (sent: Int, succeeded: Bool)
        {
            var sent = 0
            var succeeded = true
            // A wait between pieces ends early when the client hangs up or `stop()` shuts the socket down.
            let wait: (TimeInterval) -> Bool = { seconds in
                guard succeeded, !run.isStopping else { return false }
                return socket.waitForHangUp(seconds: seconds) == .timedOut
            }
            let write: (Data) -> Bool = { piece in
                guard succeeded else { return false }
                let room = limit.map { $0 - sent } ?? .max
                let accepted = piece.count <= room ? piece : piece.prefix(room)
                if !accepted.isEmpty {
                    let sentPiece =
                        chunked
                        ? sendChunk(accepted)
                        : accepted.withUnsafeBytes { socket.sendAll($0) }
                    guard sentPiece else {
                        succeeded = false
                        return false
                    }
                    sent += accepted.count
                }
                return accepted.count == piece.count
            }
            if let paced = streamed.pacedProducer {
                paced(write, wait)
            } else {
                streamed.producer(write)
            }
            return (sent, succeeded)
        }

        /// Sends `chunk` as one chunk of a chunked body: size line, bytes, CRLF.
        private func sendChunk(_ chunk: Data) -> Bool {
            socket.sendAll(Array("\(String(chunk.count, radix: 16))\r\n".utf8))
                && chunk.withUnsafeBytes { socket.sendAll($0) }
                && socket.sendAll(Connection.lineEnd)
        }

        private static let lastChunk = Array("0\r\n\r\n".utf8)
        private static let lineEnd: [UInt8] = [0x0D, 0x0A]

        // MARK: - Serialising

        /// How a body of unknown length is delimited: chunked, or, to a client that cannot read chunked (HTTP/1.0),
        /// by closing the connection (RFC 9112 §6.1, §6.3).
        enum UnknownLength {
            case chunked
            case close

            var isChunked: Bool { self == .chunked }
        }

        /// Whether `response` has a body whose length is not known before it is sent (chunked to HTTP/1.1).
        static func hasUnknownLength(_ response: Response) -> Bool {
            switch response.fault {
            case .chunked, .trickle: true
            case .closeMidBody, .lieAboutLength, .normal:
                response.streamedBody != nil && response.streamedBody?.contentLength == nil
            case .closeBeforeHeaders, .neverFinishHeaders, .raw: false
            }
        }

        /// The status line and header block.
        ///
        /// - Parameters:
        ///   - length: The `Content-Length` to declare, or `nil` for a body of unknown length: `Transfer-Encoding:
        ///     chunked`, or, when `unknownLength` is not chunked, no framing header and `Connection: close`.
        ///   - keepsFraming: Whether a `Content-Length` or `Transfer-Encoding` set by the handler is kept (and
        ///     none added); otherwise they are replaced.
        static func head(
            of response: Response, length: Int?, keepAlive: Bool, keepsFraming: Bool = false,
            unknownLength: UnknownLength = .chunked
        ) -> [UInt8] {
            var text = "HTTP/1.1 \(response.status) \(reason(response.status))\r\n"
            var hasFraming = false
            var hasConnection = false
            // A body delimited by the close says so, whatever `Connection` the handler set.
            let closes = length == nil && !unknownLength.isChunked && statusAllowsBody(response.status)
            for (name, value) in response.headers {
                let isFraming =
                    name.caseInsensitiveEquals("content-length") || name.caseInsensitiveEquals("transfer-encoding")
                if isFraming {
                    guard keepsFraming else { continue }
                    hasFraming = true
                }
                if name.caseInsensitiveEquals("connection") {
                    if closes { continue }
                    hasConnection = true
                }
                text += "\(name): \(value)\r\n"
            }
            if !hasFraming, statusAllowsBody(response.status) {
                if let length {
                    text += "Content-Length: \(length)\r\n"
                } else if unknownLength.isChunked {
                    text += "Transfer-Encoding: chunked\r\n"
                }
            }
            if !hasConnection {
                text += keepAlive && !closes ? "Connection: keep-alive\r\n" : "Connection: close\r\n"
            }
            text += "\r\n"
            return Array(text.utf8)
        }

        static func chunkFrame(_ chunk: Data) -> [UInt8] {
            var frame = Array("\(String(chunk.count, radix: 16))\r\n".utf8)
            frame.append(contentsOf: chunk)
            frame += [0x0D, 0x0A]
            return frame
        }

        /// 1xx, 204 and 304 responses have no body and no `Content-Length`.
        static func statusAllowsBody(_ status: Int) -> Bool {
            status >= 200 && status != 204 && status != 304
        }

        static func reason(_ status: Int) -> String {
            switch status {
            case 100: "Continue"
            case 200: "OK"
            case 201: "Created"
            case 202: "Accepted"
            case 204: "No Content"
            case 206: "Partial Content"
            case 301: "Moved Permanently"
            case 302: "Found"
            case 303: "See Other"
            case 304: "Not Modified"
            case 307: "Temporary Redirect"
            case 308: "Permanent Redirect"
            case 400: "Bad Request"
            case 401: "Unauthorized"
            case 403: "Forbidden"
            case 404: "Not Found"
            case 405: "Method Not Allowed"
            case 408: "Request Timeout"
            case 409: "Conflict"
            case 413: "Content Too Large"
            case 415: "Unsupported Media Type"
            case 422: "Unprocessable Content"
            case 429: "Too Many Requests"
            case 431: "Request Header Fields Too Large"
            case 500: "Internal Server Error"
            case 501: "Not Implemented"
            case 502: "Bad Gateway"
            case 503: "Service Unavailable"
            case 504: "Gateway Timeout"
            default: "Status \(status)"
            }
        }
    }
}
