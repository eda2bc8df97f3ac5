import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// MARK: - A body stream whose producer is slower than the connection is sent cut short

#if canImport(FoundationNetworking)
    /// ``RequestBodyChunks`` as the `InputStream` FoundationNetworking reads a body from.
    ///
    /// Defect answered: FoundationNetworking's body-stream source (`_BodyStreamSource`) ends the body as soon as
    /// `hasBytesAvailable` is `false`, so a stream whose producer is slower than the connection (a bound stream pair,
    /// for one) is sent cut short, as a success. This stream says it has bytes until its end and blocks in `read`
    /// until the next chunk is there. It blocks the session's work queue meanwhile: the transport sends such a body
    /// on a session of its own (``URLSessionTransport/needsSessionOfItsOwn(_:body:)``), and cancelling the hop
    /// unblocks it. That does not spare the other sessions: every session's work queue targets one serial queue of
    /// the process, so until the next chunk comes every other URLSession request waits (a thread that sends one is
    /// not held: ``URLSessionTransport/startOffTheCaller(_:)``; RELIABILITY.md). Left: no way around the wait
    /// through FoundationNetworking's API (only its file source pauses libcurl, and it sends a pipe's size, 0, as
    /// the length); `AsyncHTTPClientTransport` does not wait so. A failed chunk
    /// makes `read` return -1, which fails the task; the hop reports the chunks' own error
    /// (``BlockingChunkReader/failure``).
    ///
    /// Left as it is: FoundationNetworking tells libcurl a body stream's length is unknown, so the body goes out in
    /// chunks and a `Content-Length` set for it is dropped (`TransportConformanceTests.knownDefects`, "streamed
    /// request body keeps its length"); AsyncHTTPClientTransport sends the length.
    ///
    /// Tests: `RequestBodyChunksTests.testTheLinuxBridgeWaitsForASlowProducerAndReportsItsFailure`, and the request
    /// body checks of `TransportConformance` run by `TransportConformanceTests`.
    final class ChunkedBodyInputStream: InputStream {
        private let reader: BlockingChunkReader
        /// The chunk being read and how far; touched only by the thread reading the stream.
        private var pending = Data()
        private var offset = 0
        private var status = Stream.Status.notOpen
        private var error: (any Error)?

        init(_ reader: BlockingChunkReader) {
            self.reader = reader
            super.init(data: Data())
        }

        deinit {
            // A stream let go before its end (a task that never ran, a caller that read part of it) lets the chunks'
            // producer go too.
            reader.cancel()
        }

        override func open() {
            if status == .notOpen { status = .open }
        }

        override func close() {
            status = .closed
            reader.cancel()
        }

        override var streamStatus: Stream.Status { status }

        override var streamError: (any Error)? { error }

        override var hasBytesAvailable: Bool { status == .open || status == .reading || status == .notOpen }

        override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength length: Int) -> Int {
            guard hasBytesAvailable, length > 0 else { return status == .error ? -1 : 0 }
            if offset == pending.count {
                switch reader.next() {
                case .success(let chunk?):
                    pending = chunk
                    offset = 0
                case .success(nil):
                    status = .atEnd
                    return 0
                case .failure(let failure):
                    status = .error
                    error = failure
                    return -1
                }
            }
            let count = min(length, pending.count - offset)
            pending.withUnsafeBytes { bytes in
                let start = bytes.baseAddress!.advanced(by: offset)
                buffer.update(from: start.assumingMemoryBound(to: UInt8.self), count: count)
            }
            offset += count
            return count
        }

        override func getBuffer(
            _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>
        ) -> Bool { false }
    }

    extension RequestBodyChunks {
        /// The chunks as an `InputStream` URLSession reads from (the stream above on Linux).
        static func inputStream(_ reader: BlockingChunkReader, onFailure: @escaping @Sendable () -> Void)
            -> InputStream
        {
            ChunkedBodyInputStream(reader)
        }
    }
#endif
