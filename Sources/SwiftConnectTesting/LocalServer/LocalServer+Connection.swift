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
        private var buffer = ReceiveBuffer()
        /// Where `recv` writes, reused for every read of the connection.
        private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: Socket.receiveSize, alignment: 16)

        init(id: Int, socket: Socket, core: Core, run: Run) {
            self.id = id
            self.socket = socket
            self.core = core
            self.run = run
        }

        /// Serves requests until the client closes, asks to close, a fault ends the connection or the server stops.
        /// The caller closes the socket afterwards.
        mutating func serve() {
            defer { scratch.deallocate() }
            while serveOneRequest() {}
        }

        // MARK: - Reading a request

        /// Reads, handles and answers one request.
        ///
        /// - Returns: Whether the connection stays open for another request.
        private mutating func serveOneRequest() -> Bool {
            var searchFrom = 0
            var headLength = 0
            while true {
                if let end = buffer.firstOffset(of: HTTPParser.headTerminator, from: searchFrom) {
                    headLength = end
                    break
                }
                if buffer.readableCount > HTTPParser.maximumHeadSize { return refuse(.headersTooLarge) }
                searchFrom = max(0, buffer.readableCount - 3)
                guard receiveMore() else { return false }
            }
            if headLength > HTTPParser.maximumHeadSize { return refuse(.headersTooLarge) }

            let parsed = buffer.withBytes(count: headLength) { bytes in
                Result { () throws(HTTPParseError) in
                    let head = try HTTPParser.parseHead(bytes)
                    return (head, try HTTPParser.framing(of: head))
                }
            }
            buffer.skip(headLength + HTTPParser.headTerminator.count)
            guard case .success((let head, let framing)) = parsed else {
                if case .failure(let error) = parsed { return refuse(error) }
                return false
            }

            core.requestStarted()
            defer { core.requestFinished() }

            let body: Data
            switch readBody(framing, head: head) {
            case .success(let read): body = read
            case .failure(let error): return refuse(error)
            case nil: return false
            }

            let (request, handler) = core.receive(
                Request(method: head.method, target: head.target, headers: head.headers, body: body, connectionID: id)
            )
            let response =
                handler?(request)
                ?? .json(["error": "no route for \(request.method) \(request.path)"], status: 404)
            let keepAlive =
                head.wantsKeepAlive
                && !(response.header("connection")?.caseInsensitiveEquals("close") ?? false)
                && !run.isStopping
            return write(response, isHead: head.method == "HEAD", keepAlive: keepAlive)
        }

        /// Reads the body delimited by `framing`, answering `Expect: 100-continue` first if asked to.
        ///
        /// - Returns: The body, a parse error, or `nil` if the connection ended first.
        private mutating func readBody(_ framing: BodyFraming, head: RequestHead) -> Result<Data, HTTPParseError>? {
            if framing != .none, head.minorVersion >= 1,
                head.header("expect")?.caseInsensitiveEquals("100-continue") ?? false
            {
                guard socket.sendAll(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return nil }
            }
            switch framing {
            case .none:
                return .success(Data())
            case .contentLength(let length):
                while buffer.readableCount < length {
                    guard receiveMore() else { return nil }
                }
                return .success(buffer.read(length))
            case .chunked:
                var decoder = ChunkedDecoder()
                do {
                    while try !decoder.decode(&buffer) {
                        guard receiveMore() else { return nil }
                    }
                } catch {
                    return .failure(error)
                }
                return .success(decoder.body)
            }
        }

        /// Appends the next bytes from the socket to the buffer.
        ///
        /// - Returns: `false` if the client closed, the connection failed or the server stopped.
        private mutating func receiveMore() -> Bool {
            let count = socket.receive(into: scratch)
            guard count > 0 else { return false }
            buffer.append(UnsafeRawBufferPointer(rebasing: scratch[0..<count]))
            return true
        }

        /// Answers a request that cannot be parsed, then ends the connection.
        ///
        /// Lingers briefly, reading what the client still sends, so closing does not reset the connection before
        /// the client has read the answer.
        private mutating func refuse(_ error: HTTPParseError) -> Bool {
            var response = Response.json(["error": error.message], status: error.status)
            response.headers.append(("Connection", "close"))
            _ = write(response, isHead: false, keepAlive: false)
            socket.shutdownWrite()
            var drained = 0
            while drained < 1 << 20, socket.waitForReadable(seconds: 1) == .readable {
                let count = socket.receive(into: scratch)
                guard count > 0 else { break }
                drained += count
            }
            return false
        }

        // MARK: - Writing a response

        /// Sends `response`, delay and fault included.
        ///
        /// - Returns: Whether the connection stays open for another request.
        private func write(_ response: Response, isHead: Bool, keepAlive: Bool) -> Bool {
            if response.delay > 0, socket.waitForHangUp(seconds: response.delay) != .timedOut {
                return false
            }
            let sendsBody = !isHead && Connection.statusAllowsBody(response.status)
            let body = sendsBody ? response.body : Data()

            switch response.fault {
            case .closeBeforeHeaders:
                return false
            case .normal:
                let head = Connection.head(
                    of: response, length: response.body.count, keepAlive: keepAlive, keepsFraming: true)
                return send(head: head, body: body) && keepAlive
            case .chunked:
                let head = Connection.head(of: response, length: nil, keepAlive: keepAlive)
                guard sendsBody else { return socket.sendAll(head) && keepAlive }
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
                let head = Connection.head(of: response, length: nil, keepAlive: keepAlive)
                hang(after: head, trickling: sendsBody ? (chunk, interval) : nil)
                return false
            }
        }

        /// Sends `bytes`, then keeps the connection open, optionally trickling chunks, until the client leaves or
        /// the server stops; then resets it.
        private func hang(after bytes: [UInt8], trickling: (chunk: Data, interval: TimeInterval)? = nil) {
            guard run.markAbortive(id: id) else { return }
            defer { socket.resetOnClose() }
            guard socket.sendAll(bytes) else { return }
            if let trickling {
                trickle(trickling.chunk, every: trickling.interval)
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

        /// Sends `chunk` every `interval` seconds until the client disconnects or the server stops.
        private func trickle(_ chunk: Data, every interval: TimeInterval) {
            let frame = Connection.chunkFrame(chunk)
            var nextSend = Socket.monotonicSeconds()
            while true {
                switch socket.waitForReadable(seconds: nextSend - Socket.monotonicSeconds()) {
                case .timedOut:
                    if !chunk.isEmpty { guard socket.sendAll(frame) else { return } }
                    nextSend += max(interval, 0.001)
                case .readable:
                    guard socket.receive(into: scratch) > 0 else { return }
                case .hungUp:
                    return
                }
            }
        }

        /// Reads and drops whatever the client sends until it closes or the server stops.
        private func discardUntilHangUp() {
            while socket.receive(into: scratch) > 0 {}
        }

        // MARK: - Serialising

        /// The status line and header block.
        ///
        /// - Parameters:
        ///   - length: The `Content-Length` to declare, or `nil` for `Transfer-Encoding: chunked`.
        ///   - keepsFraming: Whether a `Content-Length` or `Transfer-Encoding` set by the handler is kept (and
        ///     none added); otherwise they are replaced.
        static func head(of response: Response, length: Int?, keepAlive: Bool, keepsFraming: Bool = false) -> [UInt8] {
            var text = "HTTP/1.1 \(response.status) \(reason(response.status))\r\n"
            var hasFraming = false
            var hasConnection = false
            for (name, value) in response.headers {
                let isFraming =
                    name.caseInsensitiveEquals("content-length") || name.caseInsensitiveEquals("transfer-encoding")
                if isFraming {
                    guard keepsFraming else { continue }
                    hasFraming = true
                }
                if name.caseInsensitiveEquals("connection") { hasConnection = true }
                text += "\(name): \(value)\r\n"
            }
            if !hasFraming, statusAllowsBody(response.status) {
                if let length {
                    text += "Content-Length: \(length)\r\n"
                } else {
                    text += "Transfer-Encoding: chunked\r\n"
                }
            }
            if !hasConnection {
                text += keepAlive ? "Connection: keep-alive\r\n" : "Connection: close\r\n"
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
