import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Probes of `RequestOptions.progress` end to end: uploads from memory, a file and a stream; downloads of known and
/// unknown length; redirects that keep or drop the body; retries; failures, cancellations and deadlines; and a
/// handler that is slow or calls the client back.
final class TransferProgressEdgeTests: IntegrationTestCase {
    private var server: LocalServer!
    private var connect: Connect!
    private var temporaryFiles: [URL] = []

    override func setUpWithError() throws {
        server = try LocalServer.started()
        connect = Connect(
            transport: TransportUnderTest.make(), retryPolicy: nil,
            configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: server.port))
        server.streamingRoute("*", "/count") { _, body in
            var count = 0
            while let piece = body.read(maxBytes: 64 << 10) { count += piece.count }
            return .text("\(count)")
        }
    }

    override func tearDown() {
        server.stop()
        for file in temporaryFiles { try? FileManager.default.removeItem(at: file) }
    }

    private func temporaryURL(_ suffix: String) -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("SC-\(UUID().uuidString)-\(suffix)")
        temporaryFiles.append(url)
        return url
    }

    /// What a handler saw, and when the call's future completed, in one order.
    private final class Log: @unchecked Sendable {
        // @unchecked Sendable: `lock` protects every var.
        private let lock = NSCondition()
        private var _reports: [TransferProgress] = []
        private var _reportsAtCompletion: Int?

        func report(_ progress: TransferProgress) {
            lock.withLock {
                _reports.append(progress)
                lock.broadcast()
            }
        }
        func completed() { lock.withLock { _reportsAtCompletion = _reports.count } }
        var reports: [TransferProgress] { lock.withLock { _reports } }
        var reportsAtCompletion: Int? { lock.withLock { _reportsAtCompletion } }

        /// Waits, for at most 10 seconds, until the reports so far satisfy `condition`; returns whether they did.
        func wait(until condition: ([TransferProgress]) -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(10)
            lock.lock()
            defer { lock.unlock() }
            while !condition(_reports) {
                guard lock.wait(until: deadline) else { return condition(_reports) }
            }
            return true
        }
    }

    /// The rules every attempt's (or hop's) reports follow, a run being the reports from one start from zero.
    private func checkRun(
        _ reports: [TransferProgress], endsOnce: Bool = true, file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertFalse(reports.isEmpty, "no reports", file: file, line: line)
        for (earlier, later) in zip(reports, reports.dropFirst()) {
            XCTAssertNotEqual(earlier, later, "a report repeats", file: file, line: line)
            XCTAssertLessThanOrEqual(earlier.bytesSent, later.bytesSent, "\(reports)", file: file, line: line)
            XCTAssertLessThanOrEqual(earlier.bytesReceived, later.bytesReceived, "\(reports)", file: file, line: line)
        }
        for report in reports {
            if let total = report.totalBytesToSend {
                XCTAssertLessThanOrEqual(report.bytesSent, total, "\(report)", file: file, line: line)
            }
            if let total = report.totalBytesToReceive {
                XCTAssertLessThanOrEqual(report.bytesReceived, total, "\(report)", file: file, line: line)
            }
        }
        let ends = reports.filter { $0.downloadFraction == 1 }
        XCTAssertEqual(ends.count, endsOnce ? 1 : 0, "\(reports)", file: file, line: line)
        if endsOnce { XCTAssertEqual(reports.last?.downloadFraction, 1, file: file, line: line) }
    }

    private func options(_ log: Log, timeout: TimeInterval? = nil) -> RequestOptions {
        var options = RequestOptions(progress: { log.report($0) })
        options.timeout = timeout
        return options
    }

    private func send<Value>(_ future: Future<Value>, _ log: Log, timeout: TimeInterval = 20) -> Result<
        Value, any Error
    >? {
        let done = expectation(description: "call")
        future.observe { _ in
            log.completed()
            done.fulfill()
        }
        wait(for: [done], timeout: timeout)
        return future.result
    }

    // MARK: - Uploads

    func testAnUploadFromMemoryEndsAtItsTotalOnceBeforeTheFutureCompletes() throws {
        let log = Log()
        let body = Data(count: 3 << 20)
        var request = ConnectRequest(method: .post, url: server.baseURL.appendingPathComponent("count"))
        request.body = .bytes(body)
        let result = send(connect.response(for: request, options: options(log)), log)
        XCTAssertEqual(try result?.get().text, "\(body.count)")
        checkRun(log.reports)
        XCTAssertEqual(log.reports.last?.bytesSent, Int64(body.count))
        XCTAssertEqual(log.reports.last?.totalBytesToSend, Int64(body.count))
        XCTAssertEqual(log.reportsAtCompletion, log.reports.count, "a report after the future completed")
    }

    func testAnUploadFromAFileEndsAtItsTotal() throws {
        let source = temporaryURL("upload.bin")
        try Data(count: 9 << 20).write(to: source)
        let log = Log()
        let result = send(
            connect.upload(
                files: [File(key: "f", fileURL: source)], fields: [], to: Route("/count", method: .post),
                options: options(log)), log, timeout: 60)
        let sent = try XCTUnwrap(Int64(String(decoding: try XCTUnwrap(result?.get()), as: UTF8.self)))
        checkRun(log.reports)
        XCTAssertEqual(log.reports.last?.bytesSent, sent)
        XCTAssertEqual(log.reports.last?.totalBytesToSend, sent)
        XCTAssertEqual(log.reportsAtCompletion, log.reports.count)
    }

    func testAnUploadFromAStreamOfKnownAndUnknownLength() throws {
        for length in [Int64(1 << 20), nil] {
            let log = Log()
            let chunks = AsyncStream<Data> { continuation in
                for _ in 0..<16 { continuation.yield(Data(count: 64 << 10)) }
                continuation.finish()
            }
            var request = ConnectRequest(method: .put, url: server.baseURL.appendingPathComponent("count"))
            request.body = .stream(ConnectRequest.OneShotStream(chunks, length: length))
            let result = send(connect.response(for: request, options: options(log)), log)
            XCTAssertEqual(try result?.get().text, "\(1 << 20)", "\(String(describing: length))")
            checkRun(log.reports)
            XCTAssertEqual(log.reports.last?.bytesSent, 1 << 20, "\(String(describing: length))")
            XCTAssertEqual(log.reports.last?.totalBytesToSend, length)
            XCTAssertEqual(log.reportsAtCompletion, log.reports.count)
        }
    }

    #if os(Linux)
        /// A server that answers 413 before it has read the body (it reads the head and 1 KiB of a 32 MiB body,
        /// answers, and ends its side of the connection without reading more): no report may say the whole body
        /// went, nor that more went than the server could have been sent.
        func testAnUploadAnsweredBeforeItsEndDoesNotReportItsTotal() throws {
            let early = try EarlyRefusalServer()
            defer { early.stop() }
            let client = Connect(
                transport: TransportUnderTest.make(), retryPolicy: nil,
                configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: early.port))
            let total = 32 << 20
            let source = temporaryURL("early.bin")
            try Data(count: total).write(to: source)
            for kind in ["memory", "file", "stream"] {
                let log = Log()
                let future: Future<Data>
                switch kind {
                case "memory":
                    var request = ConnectRequest(method: .post, url: early.url)
                    request.body = .bytes(Data(count: total))
                    future = client.response(for: request, options: options(log)).map { $0.data }
                case "file":
                    future = client.upload(
                        files: [File(key: "f", fileURL: source)], fields: [], to: Route("/upload", method: .post),
                        options: options(log))
                default:
                    let chunks = AsyncStream<Data> { continuation in
                        for _ in 0..<(total >> 16) { continuation.yield(Data(count: 1 << 16)) }
                        continuation.finish()
                    }
                    var request = ConnectRequest(method: .put, url: early.url)
                    request.body = .stream(ConnectRequest.OneShotStream(chunks, length: Int64(total)))
                    future = client.response(for: request, options: options(log)).map { $0.data }
                }
                let result = send(future, log, timeout: 60)
                // The answer, or a failure of the connection the server ended: either way, not the whole upload.
                guard case .failure(let error)? = result else {
                    return XCTFail("\(kind): \(String(describing: result))")
                }
                if let status = (error as? ConnectError)?.statusCode { XCTAssertEqual(status, 413, kind) }
                let sent = log.reports.map(\.bytesSent).max() ?? 0
                XCTAssertLessThan(sent, Int64(total) / 2, "\(kind): \(log.reports.suffix(3))")
                XCTAssertFalse(
                    log.reports.contains { $0.uploadFraction == 1 }, "\(kind): \(log.reports.suffix(3))")
                XCTAssertEqual(log.reportsAtCompletion, log.reports.count, kind)
            }
        }
    #endif

    // MARK: - Downloads

    func testADownloadOfUnknownLengthEndsOnceWithItsSize() throws {
        server.route("GET", "/chunked") { _ in
            .stream(contentLength: nil) { write in
                for _ in 0..<32 { guard write(Data(count: 32 << 10)) else { return } }
            }
        }
        let log = Log()
        let result = send(connect.request(Route("/chunked"), options: options(log)), log)
        XCTAssertEqual(try result?.get().count, 1 << 20)
        checkRun(log.reports)
        XCTAssertTrue(log.reports.dropLast().allSatisfy { $0.totalBytesToReceive == nil }, "\(log.reports)")
        XCTAssertEqual(log.reports.last?.totalBytesToReceive, 1 << 20)
        XCTAssertEqual(log.reportsAtCompletion, log.reports.count)
    }

    func testABodyCutShortNeverReportsItsEnd() throws {
        server.route("GET", "/cut") { _ in
            LocalServer.Response(body: Data(count: 1 << 20), fault: .closeMidBody(afterBytes: 300_000))
        }
        let log = Log()
        let result = send(connect.request(Route("/cut"), options: options(log)), log)
        XCTAssertThrowsError(try result?.get())
        XCTAssertFalse(log.reports.contains { $0.downloadFraction == 1 }, "\(log.reports)")
        XCTAssertEqual(log.reportsAtCompletion, log.reports.count)
    }

    func testNoReportComesAfterACancellationOrADeadline() throws {
        server.route("GET", "/trickle") { _ in
            LocalServer.Response(fault: .trickle(chunk: Data(count: 1000), interval: 0.02))
        }
        // Cancelled by the caller once some of the body came.
        let log = Log()
        let call = connect.request(Route("/trickle"), options: options(log))
        XCTAssertTrue(log.wait { $0.filter { $0.bytesReceived > 0 }.count >= 3 }, "\(log.reports)")
        call.cancel()
        let result = send(call, log)
        XCTAssertEqual((result.flatMap { try? $0.get() } == nil), true)
        waitUntilTheEngineLetGo()
        XCTAssertEqual(log.reportsAtCompletion, log.reports.count, "reports after the cancellation")
        XCTAssertFalse(log.reports.contains { $0.downloadFraction == 1 })

        // Stopped by the deadline.
        let timed = Log()
        let outcome = send(connect.request(Route("/trickle"), options: options(timed, timeout: 0.4)), timed)
        guard case .failure(let error)? = outcome else { return XCTFail("\(String(describing: outcome))") }
        XCTAssertEqual((error as? ConnectError)?.kind, .timedOut)
        waitUntilTheEngineLetGo()
        XCTAssertEqual(timed.reportsAtCompletion, timed.reports.count, "reports after the deadline")
    }

    /// Waits until the server saw the trickle's connection go (its request is no longer in flight), then until
    /// another exchange went through the same engine: a report still on its way from the call that ended would
    /// have come by then.
    private func waitUntilTheEngineLetGo(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the trickle goes on", file: file, line: line)
        XCTAssertNoThrow(try connect.request(Route("/count", method: .post)).wait(timeout: 10), file: file, line: line)
    }

    // MARK: - Redirects and retries

    func testA307RedirectReportsEachHopFromZeroAndA302KeepsWhatWasSent() throws {
        server.route("POST", "/307") { _ in .redirect(to: "/count", status: 307) }
        server.route("POST", "/302") { _ in .redirect(to: "/count", status: 302) }
        let body = Data(count: 256 << 10)
        for status in [307, 302] {
            let log = Log()
            var request = ConnectRequest(method: .post, url: server.baseURL.appendingPathComponent("\(status)"))
            request.body = .bytes(body)
            let result = send(connect.response(for: request, options: options(log)), log)
            XCTAssertEqual(try result?.get().text, status == 307 ? "\(body.count)" : "0")
            // Runs: a new one each time the sent count goes back.
            var runs: [[TransferProgress]] = [[]]
            for report in log.reports {
                if let last = runs[runs.count - 1].last, report.bytesSent < last.bytesSent { runs.append([]) }
                runs[runs.count - 1].append(report)
            }
            // A 307 sends the body again: its hop may report from zero (a second run); a 302 drops it, and what
            // was sent stays sent.
            if status == 307 {
                XCTAssertLessThanOrEqual(runs.count, 2, "\(log.reports)")
            } else {
                XCTAssertEqual(runs.count, 1, "the upload went back to 0 after a 302: \(log.reports)")
            }
            checkRun(runs.last ?? [])
            XCTAssertEqual(log.reports.last?.bytesSent, Int64(body.count))
            XCTAssertEqual(log.reports.last?.totalBytesToSend, Int64(body.count))
            XCTAssertEqual(log.reports.filter { $0.downloadFraction == 1 }.count, 1, "\(log.reports)")
            XCTAssertEqual(log.reportsAtCompletion, log.reports.count)
        }
    }

    /// The 503 the call retried is not its answer: its body's end is not reported, and the answer's end comes once,
    /// in the last report.
    func testARetriedDownloadReportsOnlyItsAnswersEnd() throws {
        let attempts = Counter()
        server.route("GET", "/flaky") { _ in
            attempts.increment()
            return attempts.value == 1 ? .text("busy", status: 503) : .data(Data(count: 100_000))
        }
        let retrying = Connect(
            transport: TransportUnderTest.make(),
            retryPolicy: RetryPolicy(maxAttempts: 2, clock: ImmediateRetryClock()),
            configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: server.port))
        let log = Log()
        let result = send(retrying.request(Route("/flaky"), options: options(log)), log)
        XCTAssertEqual(try result?.get().count, 100_000)
        let ends = log.reports.enumerated().filter { $0.element.downloadFraction == 1 }
        XCTAssertEqual(ends.map(\.element.bytesReceived), [100_000], "\(log.reports)")
        XCTAssertEqual(ends.last?.offset, log.reports.count - 1)
        // The answer's run: from its first report, which announces its size.
        let answer = log.reports.firstIndex { $0.totalBytesToReceive == 100_000 } ?? log.reports.endIndex
        checkRun(Array(log.reports[answer...]))
    }

    // MARK: - Handlers

    func testASlowHandlerSeesEveryReportInOrder() throws {
        server.route("GET", "/big") { _ in .generatedBytes(count: 1 << 20, seed: 3) }
        let log = Log()
        // Slow by work, not by waiting: each report costs the handler a few milliseconds.
        var options = RequestOptions(progress: { progress in
            var hasher = Hasher()
            for value in 0..<20_000 { hasher.combine(value) }
            log.report(progress)
            withExtendedLifetime(hasher.finalize()) {}
        })
        options.timeout = 30
        let result = send(connect.request(Route("/big"), options: options), log, timeout: 60)
        XCTAssertEqual(try result?.get().count, 1 << 20)
        checkRun(log.reports)
        XCTAssertEqual(log.reportsAtCompletion, log.reports.count)
    }

    func testAHandlerThatCancelsItsOwnCallOrStartsAnother() throws {
        server.route("GET", "/big") { _ in .generatedBytes(count: 4 << 20, seed: 3) }
        // The server holds the rest of its answer until the call is cancelled: an engine that reports progress
        // after the fact (an upload written whole at once) cannot see the answer arrive before the cancellation.
        let gate = Guarded(Gate())
        server.route("GET", "/held") { _ in
            .stream(contentLength: 4 << 20, contentType: "application/octet-stream", status: 200) { write in
                guard write(Data(count: 64 << 10)) else { return }
                gate.withLock { $0 }.wait(timeout: 30)
                for _ in 1..<64 { guard write(Data(count: 64 << 10)) else { return } }
            }
        }
        server.streamingRoute("POST", "/held-count") { _, body in
            var count = 0
            while let piece = body.read(maxBytes: 64 << 10) { count += piece.count }
            gate.withLock { $0 }.wait(timeout: 30)
            return .text("\(count)")
        }
        // Cancels its own call from its first report of the body, download and upload.
        for upload in [false, true] {
            gate.withLock { $0 = Gate() }
            let holder = Guarded<Future<Data>?>(nil)
            let log = Log()
            let options = RequestOptions(progress: { progress in
                log.report(progress)
                if progress.bytesReceived > 0 || progress.bytesSent > 0 {
                    holder.withLock { $0 }?.cancel()
                    gate.withLock { $0 }.open()
                }
            })
            let call: Future<Data>
            if upload {
                call = connect.request(
                    Route(
                        "/held-count", method: .post,
                        parameters: Parameter.body(Data(count: 8 << 20), contentType: "application/octet-stream")),
                    options: options)
            } else {
                call = connect.request(Route("/held"), options: options)
            }
            holder.withLock { $0 = call }
            if call.result == nil, log.reports.contains(where: { $0.bytesReceived > 0 || $0.bytesSent > 0 }) {
                call.cancel()
            }
            let result = send(call, log)
            gate.withLock { $0 }.open()
            guard case .failure(let error)? = result else {
                return XCTFail("upload \(upload): \(String(describing: result))")
            }
            XCTAssertEqual((error as? ConnectError)?.kind, .cancelled, "upload \(upload)")
        }
        // Starts another call on the same client, and waits for it, from a report.
        let inner = Guarded<[Result<Data, any Error>]>([])
        let log = Log()
        let options = RequestOptions(progress: { [connect] progress in
            log.report(progress)
            guard progress.downloadFraction != 1, inner.withLock({ $0.isEmpty }) else { return }
            let result = Result { try connect!.request(Route("/count", method: .post)).wait(timeout: 5) }
            inner.withLock { $0.append(result) }
        })
        let result = send(connect.request(Route("/big"), options: options), log, timeout: 30)
        XCTAssertEqual(try result?.get().count, 4 << 20)
        XCTAssertEqual(inner.withLock { $0.count }, 1)
        XCTAssertEqual(try inner.withLock { $0 }.first?.get(), Data("0".utf8))
    }

    /// An upload's reports come from the engine's writer (URLSession's delegate queue on Linux): a handler that
    /// starts another call there, and hears of its end, does not hold up either call.
    func testAnUploadsHandlerThatStartsAnotherCall() throws {
        let inner = Guarded<[Future<Data>]>([])
        let innerDone = expectation(description: "inner call")
        let log = Log()
        let options = RequestOptions(progress: { [connect] progress in
            log.report(progress)
            guard progress.bytesSent > 0, inner.withLock({ $0.isEmpty }) else { return }
            let call = connect!.request(Route("/count", method: .post))
            call.observe { _ in innerDone.fulfill() }
            inner.withLock { $0.append(call) }
        })
        var request = ConnectRequest(method: .post, url: server.baseURL.appendingPathComponent("count"))
        request.body = .bytes(Data(count: 4 << 20))
        let result = send(connect.response(for: request, options: options), log, timeout: 30)
        XCTAssertEqual(try result?.get().text, "\(4 << 20)")
        wait(for: [innerDone], timeout: 10)
        XCTAssertEqual(try inner.withLock { $0 }.first?.result?.get(), Data("0".utf8))
        checkRun(log.reports)
    }

    // MARK: - A transport that answers with a stream

    func testAStreamFromAFakeTransportReportsItsEnd() async throws {
        let log = Log()
        let transport = FakeTransport.answering(.stream([Data(count: 1000), Data(count: 500)]))
        let fake = Connect(transport: transport, retryPolicy: nil)
        let stream = fake.stream(
            ConnectRequest(url: URL(string: "https://api.example.com/items")!), options: options(log))
        var count = 0
        for try await chunk in stream { count += chunk.count }
        XCTAssertEqual(count, 1500)
        checkRun(log.reports)
        XCTAssertEqual(log.reports.last?.bytesReceived, 1500)
    }
}

extension ConnectResponse {
    fileprivate var text: String { String(decoding: data, as: UTF8.self) }
}

#if os(Linux)
    import Glibc

    /// A server that answers each request `413 Payload Too Large` once it has read the request's head and 1 KiB of
    /// its body (or at once when the client waits for a `100 Continue`), then ends its side of the connection and
    /// reads nothing more until it is stopped: the client's upload cannot go on past what the kernel's buffers hold.
    private final class EarlyRefusalServer: @unchecked Sendable {
        // @unchecked Sendable: `lock` protects `answered`; the rest is immutable.
        let port: Int
        private let listener: Int32
        private let lock = NSLock()
        /// The connections answered, kept open (unread) until `stop()`.
        private var answered: [Int32] = []
        private let done = DispatchSemaphore(value: 0)

        var url: URL { URL(string: "http://127.0.0.1:\(port)/upload")! }

        init() throws {
            (listener, port) = try LabSocket.bound(to: "127.0.0.1")
            let thread = Thread { [self] in
                defer { done.signal() }
                while true {
                    let client = accept(listener, nil, nil)
                    guard client >= 0 else { return }
                    lock.withLock { answered.append(client) }
                    Self.answerEarly(client)
                }
            }
            thread.start()
        }

        private static func answerEarly(_ client: Int32) {
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { return }
                received += buffer[..<count]
                guard let end = received.firstRange(of: Array("\r\n\r\n".utf8)) else { continue }
                let head = String(decoding: received[..<end.lowerBound], as: UTF8.self).lowercased()
                if head.contains("expect: 100-continue") || received.count - end.upperBound >= 1024 { break }
            }
            let answer = "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 9\r\nConnection: close\r\n\r\ntoo large"
            _ = Array(answer.utf8).withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            shutdown(client, Int32(SHUT_WR))
        }

        func stop() {
            shutdown(listener, Int32(SHUT_RDWR))
            done.wait()
            close(listener)
            for client in lock.withLock({ answered }) { close(client) }
        }
    }
#endif
