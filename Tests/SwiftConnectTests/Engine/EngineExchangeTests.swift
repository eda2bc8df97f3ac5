import Foundation
import SwiftConnectTesting
import XCTest

@testable @_spi(Engine) import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The core's exchange over an engine that only answers what a test scripts: the rules (redirects, credentials,
/// limits, bodies sent once, classification) are the core's, whatever the engine does.
final class EngineExchangeTests: XCTestCase {
    /// An engine that records each hop and answers with the next scripted response.
    final class ScriptedEngine: HTTPEngine, Sendable {
        struct Answer: Sendable {
            var status: Int
            var fields: HeaderFields = [:]
            var chunks: [Data] = []
            var failure: (any Error)? = nil
            /// Whether the body ends after its chunks; `false` keeps it open until the exchange is cancelled, where
            /// an `AsyncThrowingStream` ends as if complete.
            var ends = true
            /// The protocol version the engine names.
            var httpVersion = "HTTP/1.1"
        }

        private let state:
            Protected<
                (answers: [Answer], hops: [EngineRequest], open: [AsyncThrowingStream<Data, any Error>.Continuation])
            >
        let decodedContentCodings: Set<String>

        init(_ answers: [Answer], decodes codings: Set<String> = []) {
            state = Protected((answers, [], []))
            decodedContentCodings = codings
        }

        var hops: [EngineRequest] { state.withLock { $0.hops } }

        /// Reads a one-shot body whole, as an engine would send it, and records it as bytes; a body that fails is
        /// not recorded (it never went out whole).
        func send(_ hop: EngineRequest) async throws -> EngineResponse<AsyncThrowingStream<Data, any Error>> {
            var hop = hop
            if case .stream(let chunks, _) = hop.body {
                var sent = Data()
                for try await chunk in chunks { sent.append(chunk) }
                hop.body = .bytes(sent)
            }
            let answer = state.withLock { state in
                state.hops.append(hop)
                return state.answers.isEmpty ? Answer(status: 599) : state.answers.removeFirst()
            }
            let (body, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
            for chunk in answer.chunks { continuation.yield(chunk) }
            if answer.ends {
                continuation.finish(throwing: answer.failure)
            } else {
                state.withLock { $0.open.append(continuation) }
            }
            return EngineResponse(
                head: ResponseHead(status: answer.status, headerFields: answer.fields), httpVersion: answer.httpVersion,
                body: body)
        }

        func failure(_ error: any Error) -> ConnectError? {
            guard error is EngineSpecific else { return nil }
            return ConnectError(.connectionLost, message: "the engine's own reset", underlyingError: error)
        }
    }

    struct EngineSpecific: Error {}
    struct ExpectedAnError: Error, CustomStringConvertible { let description: String }

    /// The `ConnectError` `future` fails with.
    private func failure(of future: Future<ConnectResponse>) throws -> ConnectError {
        switch try future.waitForResult(timeout: 10) {
        case .success(let response):
            throw ExpectedAnError(description: "expected an error, got a \(response.statusCode) response")
        case .failure(let error): return try XCTUnwrap(error as? ConnectError, "\(error)")
        }
    }

    private func request(_ url: String, method: String = "GET", body: Data? = nil) -> URLRequest {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        request.httpBody = body
        return request
    }

    /// An engine that records the thread each hop starts on, then answers 204.
    final class ThreadRecordingEngine: HTTPEngine, Sendable {
        private let threads = Protected<[pthread_t]>([])
        var hopThreads: [pthread_t] { threads.snapshot }

        func send(_ hop: EngineRequest) async throws -> EngineResponse<AsyncThrowingStream<Data, any Error>> {
            threads.withLock { $0.append(pthread_self()) }
            let (body, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
            continuation.finish()
            return EngineResponse(head: ResponseHead(status: 204, headerFields: [:]), body: body)
        }
    }

    /// The exchange starts its first hop on the caller's thread (`Task.immediate`): a request costs no thread wake-up
    /// before the engine has it. The answer still comes, and a second request on another thread starts there.
    func testTheFirstHopStartsOnTheCallersThread() throws {
        let engine = ThreadRecordingEngine()
        let caller = pthread_self()
        let response = try engine.send(request("https://example.test/a")).wait(timeout: 10)
        XCTAssertEqual(response.statusCode, 204)
        let other = DispatchSemaphore(value: 0)
        let otherThread = Protected<pthread_t?>(nil)
        let secondRequest = request("https://example.test/b")
        let thread = Thread {
            otherThread.withLock { $0 = pthread_self() }
            _ = try? engine.send(secondRequest).wait(timeout: 10)
            other.signal()
        }
        thread.start()
        XCTAssertEqual(other.wait(timeout: .now() + 10), .success)
        let hops = engine.hopThreads
        XCTAssertEqual(hops.count, 2)
        XCTAssertTrue(pthread_equal(hops[0], caller) != 0, "the first request's hop started on the caller's thread")
        let second = try XCTUnwrap(otherThread.snapshot)
        XCTAssertTrue(pthread_equal(hops[1], second) != 0, "the second request's hop started on its caller's thread")
    }

    /// An engine whose answer is there before the exchange would wait for it (a fast server, a buffered body) does
    /// not make the caller's thread run the rest of the exchange: the progress handler, the body's collection and the
    /// future's completion happen on a thread of the transport's, as ``TransferOptions/progress`` says, never inside
    /// the call that sends (a caller on the main thread, or holding a lock its progress handler takes). Before, with
    /// `Task.immediate`, the whole exchange ran on the caller's thread when no wait suspended: seen once as
    /// `MigrationSemanticsTests.testProgressIsReportedOffTheMainThread` failing under load.
    func testAnAnswerThereAtOnceIsHandledOffTheCallersThread() throws {
        let engine = ScriptedEngine([.init(status: 200, fields: [.contentLength: "5"], chunks: [Data("hello".utf8)])])
        let caller = pthread_self()
        let reportThreads = Protected<[pthread_t]>([])
        let transfer = TransferOptions(progress: { _ in reportThreads.withLock { $0.append(pthread_self()) } })
        let call = engine.send(request("https://example.test/fast"), transfer: transfer)
        XCTAssertEqual(try call.wait(timeout: 10).data, Data("hello".utf8))
        let reports = reportThreads.snapshot
        XCTAssertFalse(reports.isEmpty)
        XCTAssertFalse(
            reports.contains { pthread_equal($0, caller) != 0 }, "a progress report ran on the caller's thread")
    }

    func testARedirectToAnotherOriginDropsCredentialsTheEngineNeverSees() throws {
        let engine = ScriptedEngine([
            .init(status: 302, fields: [.location: "http://other.test/landing"]),
            .init(status: 200, chunks: [Data("home".utf8)]),
        ])
        var request = request("http://api.test/start")
        request.setValue("Bearer secret", forHTTPHeaderField: "Authorization")
        let response = try engine.send(request).wait(timeout: 10)

        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(response.data, Data("home".utf8))
        XCTAssertEqual(response.request.url, request.url, "the response reports the request the client sent")
        let hops = engine.hops
        XCTAssertEqual(hops.map(\.head.authority), ["api.test", "other.test"])
        XCTAssertEqual(hops[1].head.path, "/landing")
        XCTAssertEqual(hops[0].head.headerFields[.authorization], "Bearer secret")
        XCTAssertNil(hops[1].head.headerFields[.authorization])
    }

    /// A `Host` the caller set names the first server: it does not follow a redirect to another origin (it reached the
    /// wrong virtual host there, telling it an internal name), and does follow one on the same origin.
    func testACallersHostStaysWithItsOrigin() throws {
        let engine = ScriptedEngine([
            .init(status: 302, fields: [.location: "/same"]),
            .init(status: 302, fields: [.location: "http://cdn.test/y"]),
            .init(status: 204),
        ])
        var request = request("http://10.0.0.5/x")
        request.setValue("api.internal", forHTTPHeaderField: "Host")
        XCTAssertEqual(try engine.send(request).wait(timeout: 10).statusCode, 204)
        XCTAssertEqual(
            engine.hops.map { $0.head.headerFields[HeaderField.Name("Host")] }, ["api.internal", "api.internal", nil])
    }

    /// A redirect's body is read only when it is short and of declared length: one that never ends held the exchange
    /// until its deadline (for ever without one), where the redirect is followed at once.
    func testARedirectsEndlessBodyIsNotReadBeforeTheNextHop() throws {
        let endless = ScriptedEngine([
            .init(status: 302, fields: [.location: "/next"], chunks: [Data(count: 1000)], ends: false),
            .init(status: 200, chunks: [Data("answer".utf8)]),
        ])
        var slow = request("http://api.test/start")
        slow.timeoutInterval = 30  // reading the body ended here, timed out
        XCTAssertEqual(try endless.send(slow).wait(timeout: 60).data, Data("answer".utf8))
        // A short one of declared length is read to its end (the connection can serve the next hop).
        let short = ScriptedEngine([
            .init(
                status: 301, fields: [.location: "/next", .contentLength: "5"], chunks: [Data("moved".utf8)]),
            .init(status: 200, chunks: [Data("answer".utf8)]),
        ])
        XCTAssertEqual(try short.send(request("http://api.test/start")).wait(timeout: 10).data, Data("answer".utf8))
    }

    /// An engine that answers nothing and does not heed its task's cancellation until the test lets it go.
    final class StubbornEngine: HTTPEngine, Sendable {
        private let held = Protected<[CheckedContinuation<Void, Never>]>([])

        func send(_ hop: EngineRequest) async throws -> EngineResponse<AsyncThrowingStream<Data, any Error>> {
            await withCheckedContinuation { continuation in held.withLock { $0.append(continuation) } }
            let (body, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
            continuation.finish()
            return EngineResponse(head: ResponseHead(status: 204, headerFields: [:]), body: body)
        }

        func release() {
            for continuation in held.withLock({ $0 }) { continuation.resume() }
        }
    }

    /// The caller hears of the deadline when it passes, whatever the engine does: one that does not heed cancellation
    /// kept the future pending until it answered.
    func testTheDeadlineEndsTheCallWhateverTheEngineDoes() throws {
        let engine = StubbornEngine()
        defer { engine.release() }
        var slow = request("http://api.test/x")
        slow.timeoutInterval = 0.3
        XCTAssertEqual(try failure(of: engine.send(slow)).kind, .timedOut)
    }

    /// An engine whose endless body does not heed its task's cancellation: each piece asked for comes, and the
    /// body tells when its reader lets it go.
    final class DeafBodyEngine: HTTPEngine, Sendable {
        struct Body: AsyncSequence, Sendable {
            let engine: DeafBodyEngine
            func makeAsyncIterator() -> Iterator { Iterator(reader: Reader(engine: engine)) }

            struct Iterator: AsyncIteratorProtocol {
                let reader: Reader
                mutating func next() async throws -> Data? {
                    reader.engine.firstPiece.signal()
                    return Data(count: 16_384)
                }
            }
        }

        /// Held by the body's iterator: its end is the reader letting the body go.
        final class Reader: Sendable {
            let engine: DeafBodyEngine
            init(engine: DeafBodyEngine) { self.engine = engine }
            deinit { engine.letGo.signal() }
        }

        let firstPiece = DispatchSemaphore(value: 0)
        let letGo = DispatchSemaphore(value: 0)

        func send(_ hop: EngineRequest) async throws -> EngineResponse<Body> {
            EngineResponse(head: ResponseHead(status: 200, headerFields: [:]), body: Body(engine: self))
        }
    }

    /// The core stops reading a body once the exchange is cancelled, whatever the engine does with its task's
    /// cancellation: it kept asking an engine that never ended its body for pieces, for ever, after the caller had
    /// heard `.cancelled`, and kept them in memory.
    func testACancelledExchangeStopsReadingABodyTheEngineDoesNotEnd() throws {
        let engine = DeafBodyEngine()
        let future = engine.send(request("http://api.test/endless"))
        XCTAssertEqual(engine.firstPiece.wait(timeout: .now() + 10), .success, "the body was never read")
        future.cancel()

        XCTAssertEqual(try failure(of: future).kind, .cancelled)
        XCTAssertEqual(engine.letGo.wait(timeout: .now() + 10), .success, "the core still reads the body")
    }

    func testUserInfoBecomesBasicAuthorizationAndLeavesTheTarget() throws {
        let engine = ScriptedEngine([.init(status: 204)])
        _ = try engine.send(request("http://ann:p%40ss@api.test/me")).wait(timeout: 10)

        let head = try XCTUnwrap(engine.hops.first?.head)
        XCTAssertEqual(head.authority, "api.test")
        XCTAssertEqual(head.headerFields[.authorization], "Basic " + Data("ann:p@ss".utf8).base64EncodedString())
    }

    /// A user name whose escape decodes to a colon never reaches an engine as Basic credentials (`ann:x:pw` reads as
    /// the user `ann`), whoever made the request.
    func testAUserNameWithAnEscapedColonIsRefusedBeforeAnyHop() throws {
        let engine = ScriptedEngine([.init(status: 204)])
        let error = try XCTUnwrap(connectError(of: engine.send(request("http://ann%3Ax:pw@api.test/me"))))

        XCTAssertEqual(error.kind, .invalidRequest)
        XCTAssertTrue(error.message.contains("user name holds a colon"), error.message)
        XCTAssertTrue(engine.hops.isEmpty)
    }

    /// A user info whose escapes decode to a control character (RFC 7617 forbids one in Basic credentials) never
    /// reaches an engine base64-encoded, whoever made the request.
    func testAUserInfoWithAnEscapedControlCharacterIsRefusedBeforeAnyHop() throws {
        let engine = ScriptedEngine([.init(status: 204)])
        let error = try XCTUnwrap(connectError(of: engine.send(request("http://ann:pw%0A@api.test/me"))))

        XCTAssertEqual(error.kind, .invalidRequest)
        XCTAssertTrue(error.message.contains("control character"), error.message)
        XCTAssertTrue(engine.hops.isEmpty)
    }

    /// A user info whose escapes decode to no UTF-8 text (an ISO-8859-1 `ä`, `%E4`) is refused: Foundation reads no
    /// decoded password, and `user:` went out as the credentials, for a 401 nobody could explain.
    func testAUserInfoWhoseEscapesAreNotUTF8IsRefusedBeforeAnyHop() throws {
        for url in ["http://ann:p%E4ss@api.test/me", "http://%FFann:pw@api.test/me", "http://%E4@api.test/me"] {
            let engine = ScriptedEngine([.init(status: 204)])
            let error = try XCTUnwrap(connectError(of: engine.send(request(url))), url)

            XCTAssertEqual(error.kind, .invalidRequest, url)
            XCTAssertTrue(error.message.contains("no UTF-8 text"), error.message)
            XCTAssertTrue(engine.hops.isEmpty, url)
        }
        // UTF-8 escapes are credentials as any others
        let engine = ScriptedEngine([.init(status: 204)])
        _ = try engine.send(request("http://ann:p%C3%A4ss@api.test/me")).wait(timeout: 5)
        XCTAssertEqual(
            engine.hops.first?.head.headerFields[.authorization],
            "Basic " + Data("ann:p\u{e4}ss".utf8).base64EncodedString())
    }

    func testAStreamThatFailsFailsTheExchangeUnsentInsteadOfSendingWhatItRead() throws {
        let engine = ScriptedEngine([.init(status: 200)])
        var request = request("http://api.test/upload", method: "POST")
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("missing-\(UUID().uuidString)")
        request.httpBodyStream = try XCTUnwrap(InputStream(url: missing))
        let error = try XCTUnwrap(connectError(of: engine.send(request)))
        XCTAssertEqual(error.kind, .invalidRequest)
        guard case .bodyEncodingFailed(let detail)? = error.invalidRequestReason else {
            return XCTFail("expected bodyEncodingFailed, got \(error)")
        }
        XCTAssertTrue(detail.contains("stream could not be read"), detail)
        XCTAssertEqual(engine.hops.count, 0, "nothing was sent as a whole body")
    }

    func testAStreamBodyIsReadOnceAndA307OfItIsNotFollowed() throws {
        let engine = ScriptedEngine([.init(status: 307, fields: [.location: "/again"]), .init(status: 200)])
        var request = request("http://api.test/upload", method: "POST")
        request.httpBodyStream = InputStream(data: Data("one-shot".utf8))
        let response = try engine.send(request).wait(timeout: 10)

        XCTAssertEqual(response.statusCode, 307, "a body that cannot be sent again stops the redirect")
        XCTAssertEqual(engine.hops.count, 1)
        guard case .bytes(let sent) = engine.hops[0].body else { return XCTFail("expected the stream's bytes") }
        XCTAssertEqual(sent, Data("one-shot".utf8))
    }

    func testTheLimitCountsChunksAsTheyArrive() throws {
        let chunks = Array(repeating: Data(repeating: 1, count: 600), count: 3)
        let engine = ScriptedEngine([.init(status: 200, chunks: chunks)])
        let transfer = TransferOptions(maxResponseBytes: 1_000)
        let error = try failure(of: engine.send(request("http://api.test/big"), transfer: transfer))

        XCTAssertEqual(error.kind, .responseTooLarge)
        XCTAssertEqual(error.request?.url?.path, "/big")
    }

    func testTheEnginesClassificationIsAskedAndTheRequestFilledIn() throws {
        let engine = ScriptedEngine([.init(status: 200, chunks: [Data("par".utf8)], failure: EngineSpecific())])
        let error = try failure(of: engine.send(request("http://api.test/cut")))

        XCTAssertEqual(error.kind, .connectionLost)
        XCTAssertTrue(error.underlyingError is EngineSpecific)
        XCTAssertEqual(error.request?.url?.path, "/cut")
    }

    /// An engine's own timeout that fires well before the exchange's deadline (a connect timeout of 10 s in a call of
    /// 60) keeps its words: it was said to be the 60 s deadline.
    func testAnEnginesEarlierTimeoutKeepsItsOwnMessage() throws {
        final class ConnectTimeoutEngine: HTTPEngine, Sendable {
            struct Timeout: Error {}
            func send(_ hop: EngineRequest) async throws -> EngineResponse<AsyncThrowingStream<Data, any Error>> {
                throw Timeout()
            }
            func failure(_ error: any Error) -> ConnectError? {
                ConnectError(.timedOut, message: "could not connect within 10 s", underlyingError: error)
            }
        }
        let error = try failure(of: ConnectTimeoutEngine().send(request("http://api.test/x")))
        XCTAssertEqual(error.kind, .timedOut)
        XCTAssertEqual(error.message, "could not connect within 10 s")
    }

    func testAHeaderValueWithCRLFNeverReachesTheEngine() throws {
        let engine = ScriptedEngine([.init(status: 200)])
        var request = request("http://api.test/x")
        request.allHTTPHeaderFields = ["X-A": "a\r\nX-Injected: 1"]
        let error = try failure(of: engine.send(request))

        XCTAssertEqual(error.kind, .invalidRequest)
        XCTAssertEqual(error.invalidRequestReason, .invalidHeader(name: "X-A"))
        XCTAssertTrue(engine.hops.isEmpty)
    }

    /// A request handed to the transport directly, past the client's stages, reaches the engine without the blanks
    /// around its header values too (RFC 9110 §5.5).
    func testTheEngineGetsHeaderValuesWithoutTheBlanksAroundThem() throws {
        let engine = ScriptedEngine([.init(status: 204)])
        var sent = ConnectRequest(url: URL(string: "http://api.test/x")!)
        sent.headerFields = ["X-Padded": " v \t", "X-Blank": "\t", "X-Plain": "p"]

        _ = try engine.send(sent, transfer: TransferOptions()).wait(timeout: 10)

        let fields = try XCTUnwrap(engine.hops.first).head.headerFields
        XCTAssertEqual(fields["X-Padded"], "v")
        XCTAssertEqual(fields["X-Blank"], "")
        XCTAssertEqual(fields["X-Plain"], "p")
    }

    /// A stream of unknown length goes in chunks: a `Content-Length` the caller set beside it would go out with
    /// `Transfer-Encoding: chunked` (a message RFC 9112 §6.1 forbids, read one way by one server and the other by the
    /// next), or be dropped by one engine and kept by another. The core holds the stream to that length, as it holds a
    /// stream that announces its own, and the engine gets one length: the field's.
    func testAContentLengthBesideAStreamOfUnknownLengthIsTheStreamsLength() throws {
        func send(_ body: String, declaring declared: String) throws -> (
            ScriptedEngine, Result<ConnectResponse, any Error>
        ) {
            let engine = ScriptedEngine([.init(status: 204)])
            let chunks = AsyncStream<Data> { continuation in
                continuation.yield(Data(body.utf8))
                continuation.finish()
            }
            var sent = ConnectRequest(
                method: .put, url: URL(string: "http://api.test/x")!, body: .stream(.init(chunks)))
            sent.headerFields[.contentLength] = declared
            return (engine, try engine.send(sent, transfer: TransferOptions()).waitForResult(timeout: 10))
        }
        // Given bodies longer and shorter than the length their caller set
        for body in ["abcdef", "a"] {
            let (engine, result) = try send(body, declaring: "3")
            guard case .failure(let error) = result else { return XCTFail("\(body): \(result)") }
            XCTAssertEqual((error as? ConnectError)?.kind, .invalidRequest, "\(body): \(error)")
            XCTAssertTrue(engine.hops.allSatisfy { $0.body.length == 3 }, "\(engine.hops.map(\.body.length))")
        }
        // And one of that length, which goes with it
        let (engine, result) = try send("abc", declaring: " 3 ")
        XCTAssertEqual(try? result.get().statusCode, 204, "\(result)")
        XCTAssertEqual(engine.hops.first?.body.length, 3)
        // A value that is no length is refused, nothing sent
        let (refusing, refused) = try send("abc", declaring: "3, 4")
        guard case .failure(let error as ConnectError) = refused else { return XCTFail("\(refused)") }
        XCTAssertEqual(error.invalidRequestReason, .invalidHeader(name: "Content-Length"), "\(error)")
        XCTAssertTrue(refusing.hops.isEmpty)
    }

    func testAMethodOrALengthAnEngineWouldWriteWrongNeverReachesIt() throws {
        // Given: requests handed to the transport directly, past every middleware
        let engine = ScriptedEngine([.init(status: 200)])
        let url = URL(string: "http://api.test/x")!
        let method = ConnectRequest(method: HTTPMethod(rawValue: "GET /x HTTP/1.1\r\nHost"), url: url)
        let length = ConnectRequest(
            method: .post, url: url, headerFields: ["Content-Length": "1"], body: .bytes(Data("ab".utf8)))
        // When
        let methodError = try failure(of: engine.send(method, transfer: TransferOptions()))
        let lengthError = try failure(of: engine.send(length, transfer: TransferOptions()))
        // Then
        XCTAssertEqual(methodError.invalidRequestReason, .invalidMethod(method.method.rawValue))
        XCTAssertEqual(lengthError.invalidRequestReason, .invalidHeader(name: "Content-Length"))
        XCTAssertTrue(engine.hops.isEmpty)
    }

    func testABodyTheDeadlineCutsIsATimeoutAndNeverReplacesADownloadsDestination() throws {
        // Given: a download whose body stops after 7 of its 1,000 bytes, until the deadline
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file")
        try Data("good".utf8).write(to: destination)
        let answer = ScriptedEngine.Answer(
            status: 200, fields: ["Content-Length": "1000"], chunks: [Data("partial".utf8)], ends: false)
        let cut = ConnectRequest(url: URL(string: "http://api.test/file")!, timeoutInterval: 0.3)
        var download = TransferOptions()
        download.destination = destination
        // When: downloaded, read whole, and streamed
        let downloaded = try failure(of: ScriptedEngine([answer]).send(cut, transfer: download))
        let collected = try failure(of: ScriptedEngine([answer]).send(cut, transfer: TransferOptions()))
        var streaming = TransferOptions()
        streaming.streaming = StreamingOptions()
        let head = try ScriptedEngine([answer]).send(cut, transfer: streaming).wait(timeout: 5)
        let body = try XCTUnwrap(head.bodyStream)
        let streamed: ConnectError? = try {
            let done = expectation(description: "the body ends")
            let outcome = Protected<ConnectError?>(nil)
            Task {
                do {
                    while try await body.next() != nil {}
                } catch {
                    outcome.withLock { $0 = error as? ConnectError }
                }
                done.fulfill()
            }
            wait(for: [done], timeout: 5)
            return try XCTUnwrap(outcome.snapshot, "the stream ended as if complete")
        }()
        // Then: each is a timeout, and the destination keeps what it had
        XCTAssertEqual(downloaded.kind, .timedOut)
        XCTAssertEqual(collected.kind, .timedOut)
        XCTAssertEqual(streamed?.kind, .timedOut)
        XCTAssertEqual(try String(contentsOf: destination, encoding: .utf8), "good")
    }

    func testProgressNeverCountsMoreSentThanTheBodyHas() {
        // Given: an answer that came before the engine's writer reported its last bytes
        let reports = Protected<[TransferProgress]>([])
        let progress = ExchangeProgress { report in reports.withLock { $0.append(report) } }
        progress.startHop(sending: 10)
        progress.sent(4)
        progress.startReceiving(expected: 3)
        // When: the writer's reports come after, one of them counting more than the body has left
        progress.sent(4)
        progress.sent(5)
        progress.received(3)
        progress.finish()
        // Then: the late reports count, up to the total and never past it
        XCTAssertEqual(reports.snapshot.map(\.bytesSent), [4, 4, 8, 10, 10])
        XCTAssertTrue(reports.snapshot.allSatisfy { $0.bytesSent <= ($0.totalBytesToSend ?? .max) })
    }

    func testAnAnswerBeforeTheBodysEndLeavesTheUploadWhereTheEngineLeftIt() {
        // Given: a server that answered (a 413) once 4 of the 10 bytes had gone
        let reports = Protected<[TransferProgress]>([])
        let progress = ExchangeProgress { report in reports.withLock { $0.append(report) } }
        progress.startHop(sending: 10)
        progress.sent(4)
        // When: its answer comes and ends
        progress.startReceiving(expected: 3)
        progress.received(3)
        progress.finish()
        // Then: no report says more than 4 bytes went
        XCTAssertEqual(reports.snapshot.map(\.bytesSent), [4, 4, 4])
        XCTAssertEqual(reports.snapshot.last?.uploadFraction, 0.4)
    }

    func testAStreamedAnswerReportsTheLengthItAnnounces() throws {
        let engine = ScriptedEngine([.init(status: 200, fields: ["Content-Length": "4"], chunks: [Data("abcd".utf8)])])
        let reports = Protected<[TransferProgress]>([])
        var options = TransferOptions(progress: { report in reports.withLock { $0.append(report) } })
        options.streaming = StreamingOptions()
        let head = try engine.send(ConnectRequest(url: URL(string: "http://api.test/x")!), transfer: options).wait()
        let body = try XCTUnwrap(head.bodyStream)
        let done = expectation(description: "read")
        Task {
            while (try? await body.next()) != nil {}
            done.fulfill()
        }
        wait(for: [done], timeout: 5)
        XCTAssertEqual(reports.snapshot.first?.totalBytesToReceive, 4)
        XCTAssertEqual(reports.snapshot.last?.bytesReceived, 4)
    }

    /// Every hop of a streamed answer tells the engine the stream's buffer limit, so that an engine buffering the
    /// body behind the core's stream pauses no later than it (AsyncHTTPClient's held 256 KiB more); a request read
    /// whole tells none.
    func testEachHopOfAStreamedAnswerCarriesItsBufferLimit() throws {
        let engine = ScriptedEngine([
            .init(status: 302, fields: ["Location": "/final"]), .init(status: 200, chunks: [Data("ok".utf8)]),
            .init(status: 200, chunks: [Data("ok".utf8)]),
        ])
        let url = URL(string: "http://api.test/start")!
        let streamed = TransferOptions(streaming: StreamingOptions(bufferLimit: 16 << 10))
        let head = try engine.send(ConnectRequest(url: url), transfer: streamed).wait()
        head.bodyStream?.cancel()
        _ = try engine.send(ConnectRequest(url: url), transfer: TransferOptions(maxResponseBytes: 1 << 20)).wait()

        XCTAssertEqual(engine.hops.map(\.head.path), ["/start", "/final", "/start"])
        XCTAssertEqual(engine.hops.map(\.streamBufferLimit), [16 << 10, 16 << 10, nil])
    }

    func testABodyShorterThanItsContentLengthIsALostConnection() throws {
        let engine = ScriptedEngine([.init(status: 200, fields: ["Content-Length": "10"], chunks: [Data("short".utf8)])]
        )
        let error = try failure(of: engine.send(request("http://api.test/x")))
        XCTAssertEqual(error.kind, .connectionLost)
        XCTAssertTrue(error.message.contains("5 of the 10 bytes"), error.message)
    }

    /// A `Content-Length` repeated with one value, or beside `Content-Encoding: identity`, still declares the length:
    /// a body cut short of it is a lost connection, not a success.
    func testARepeatedLengthOrAnIdentityCodingStillCatchesAShortBody() throws {
        let answers: [HeaderFields] = [
            ["Content-Length": "10, 10"],
            [.contentLength: "10", .contentLength: "10"],
            ["Content-Length": "10", HeaderField.Name("Content-Encoding"): "Identity"],
        ]
        for fields in answers {
            let engine = ScriptedEngine([.init(status: 200, fields: fields, chunks: [Data("short".utf8)])])
            let error = try failure(of: engine.send(request("http://api.test/x")))
            XCTAssertEqual(error.kind, .connectionLost, "\(fields)")
            XCTAssertTrue(error.message.contains("5 of the 10 bytes"), error.message)
        }
    }

    /// A `Transfer-Encoding` beside a `Content-Length` frames the body two ways (RFC 9112 §6.1 forbids a sender both):
    /// the answer is refused with `.badResponse` whatever the engine read, on every path, as AsyncHTTPClient's parser
    /// refuses it. The core used to take the engine's body and ignore the length.
    func testATransferEncodingBesideAContentLengthIsABadResponse() throws {
        for codings in ["chunked", "Chunked", "identity, chunked"] {
            for (declared, body) in [("10", "short"), ("2", "longer"), ("5000", "short")] {
                let engine = ScriptedEngine([
                    .init(
                        status: 200, fields: ["Transfer-Encoding": codings, "Content-Length": declared],
                        chunks: [Data(body.utf8)])
                ])
                let options = TransferOptions(maxResponseBytes: 1000, progress: { _ in })
                let sent = ConnectRequest(url: URL(string: "http://api.test/x")!)
                let error = try failure(of: engine.send(sent, transfer: options))
                let context = "\(codings), Content-Length \(declared), body \(body)"
                XCTAssertEqual(error.kind, .badResponse, "\(error) \(context)")
                XCTAssertTrue(error.message.contains("Transfer-Encoding"), error.message)
            }
        }
    }

    /// Heads no answer may have, which an engine's parser may let through (libcurl's does; SwiftNIO's refuses most):
    /// refused with `.badResponse` by the core, whatever the engine read, on every path.
    func testAHeadNoAnswerMayHaveIsABadResponseWhateverTheEngineRead() throws {
        let transferEncoding = HeaderField.Name("Transfer-Encoding")
        let heads: [(String, ScriptedEngine.Answer)] = [
            ("signed length", .init(status: 200, fields: [.contentLength: "+5"], chunks: [Data("hello".utf8)])),
            ("negative length", .init(status: 200, fields: [.contentLength: "-5"], chunks: [Data("hello".utf8)])),
            ("chunked twice", .init(status: 200, fields: [transferEncoding: "chunked, Chunked"], chunks: [Data([1])])),
            (
                "transfer coding in HTTP/1.0",
                .init(status: 200, fields: [transferEncoding: "chunked"], chunks: [Data([1])], httpVersion: "HTTP/1.0")
            ),
            ("CR in a value", .init(status: 200, fields: ["X-Note": "one\rtwo"], chunks: [Data([1])])),
            ("unasked 101", .init(status: 101, fields: ["Upgrade": "websocket"])),
        ]
        for (name, answer) in heads {
            for options in [TransferOptions(), TransferOptions(maxResponseBytes: 1000, progress: { _ in })] {
                let engine = ScriptedEngine([answer])
                let sent = ConnectRequest(url: URL(string: "http://api.test/x")!)

                let error = try failure(of: engine.send(sent, transfer: options))

                XCTAssertEqual(error.kind, .badResponse, "\(name): \(error)")
            }
        }
        // An HTTP/1.0 answer without a transfer coding is an answer.
        let old = ScriptedEngine([.init(status: 200, chunks: [Data("ok".utf8)], httpVersion: "HTTP/1.0")])
        XCTAssertEqual(try old.send(request("http://api.test/old")).wait(timeout: 10).data, Data("ok".utf8))
    }

    /// A streamed answer whose engine ends it short of its `Content-Length` fails its reader as a lost connection,
    /// as an answer read whole does; it ended as if complete.
    func testAStreamedBodyShorterThanItsContentLengthFailsItsReader() throws {
        let engine = ScriptedEngine([.init(status: 200, fields: ["Content-Length": "10"], chunks: [Data("short".utf8)])]
        )
        var options = TransferOptions()
        options.streaming = StreamingOptions()
        let head = try engine.send(ConnectRequest(url: URL(string: "http://api.test/x")!), transfer: options).wait()
        let body = try XCTUnwrap(head.bodyStream)
        let ended = Protected<(any Error)?>(nil)
        let done = expectation(description: "read")
        Task {
            do {
                while try await body.next() != nil {}
            } catch {
                ended.withLock { $0 = error }
            }
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(
            (ended.snapshot as? ConnectError)?.kind, .connectionLost, "\(String(describing: ended.snapshot))")
    }

    func testADeclaredLengthOverTheLimitStopsAStreamBeforeItsHead() throws {
        let engine = ScriptedEngine([
            .init(status: 200, fields: ["Content-Length": "2000"], chunks: [Data(count: 2000)])
        ])
        var options = TransferOptions(maxResponseBytes: 1000)
        options.streaming = StreamingOptions()
        let error = try failure(
            of: engine.send(ConnectRequest(url: URL(string: "http://api.test/x")!), transfer: options))
        XCTAssertEqual(error.kind, .responseTooLarge)
    }

    func testABodyFileRemovedBeforeA307IsRefusedNotSentEmpty() throws {
        // Given: an upload from a file that is gone by the time the 307 is followed
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try Data("payload".utf8).write(to: file)
        final class RemovingEngine: HTTPEngine, Sendable {
            let file: URL
            let hops = Protected(0)
            init(file: URL) { self.file = file }
            func send(_ hop: EngineRequest) async throws -> EngineResponse<AsyncThrowingStream<Data, any Error>> {
                let count = hops.withLock { hops in
                    hops += 1
                    return hops
                }
                try? FileManager.default.removeItem(at: file)
                let (body, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
                continuation.finish()
                let fields: HeaderFields = count == 1 ? ["Location": "/again"] : [:]
                return EngineResponse(
                    head: ResponseHead(status: count == 1 ? 307 : 200, headerFields: fields), body: body)
            }
        }
        let engine = RemovingEngine(file: file)
        var upload = TransferOptions()
        upload.bodyFile = file
        // When
        let error = try failure(
            of: engine.send(ConnectRequest(method: .put, url: URL(string: "http://api.test/up")!), transfer: upload))
        // Then
        XCTAssertEqual(error.kind, .fileAccess)
        XCTAssertEqual(engine.hops.snapshot, 1, "the second hop was never sent")
    }

    func testABodyInACodingTheEngineDoesNotDecodeIsRefusedNamingIt() throws {
        let engine = ScriptedEngine([
            .init(status: 200, fields: [HeaderField.Name("Content-Encoding"): "br"], chunks: [Data([0x1b, 0x0f])]),
            .init(status: 204, fields: [HeaderField.Name("Content-Encoding"): "br"]),
        ])
        let error = try failure(of: engine.send(request("http://api.test/compressed")))
        let empty = try engine.send(request("http://api.test/compressed")).wait(timeout: 10)

        XCTAssertEqual(error.kind, .transport, "not retried: another attempt gets the same bytes")
        XCTAssertTrue(error.message.contains("encoded with br"), error.message)
        XCTAssertEqual(empty.statusCode, 204, "a body-less answer has nothing to decode")
    }

    /// The core decodes a gzip body the engine hands over as sent, announcing it in `Accept-Encoding` unless the
    /// caller chose one; an engine that decodes gzip itself announces its own and gets its bytes untouched.
    func testTheCoreDecodesGzipForAnEngineThatDoesNot() throws {
        let text = Data(String(repeating: "decoded by the core ", count: 500).utf8)
        let gzip = Zlib.encode(text, format: .gzip)
        let coded = ScriptedEngine.Answer(
            status: 200, fields: [HeaderField.Name("Content-Encoding"): "gzip"],
            chunks: [gzip.prefix(10), gzip.dropFirst(10)])
        let engine = ScriptedEngine([coded, coded])
        let decoding = ScriptedEngine([.init(status: 200, chunks: [text])], decodes: ["gzip", "deflate"])
        var identity = request("http://api.test/identity")
        identity.setValue("identity", forHTTPHeaderField: "Accept-Encoding")

        let response = try engine.send(request("http://api.test/gzip")).wait(timeout: 10)
        _ = try engine.send(identity).wait(timeout: 10)
        let untouched = try decoding.send(request("http://api.test/plain")).wait(timeout: 10)

        XCTAssertEqual(response.data, text)
        let accept = HeaderField.Name("Accept-Encoding")
        XCTAssertEqual(engine.hops.map { $0.head.headerFields[accept] }, ["gzip, deflate", "identity"])
        XCTAssertEqual(untouched.data, text)
        XCTAssertNil(decoding.hops[0].head.headerFields[accept], "the engine announces what it decodes itself")
    }

    /// The limit counts decoded bytes, part by part: 4 MiB of zeros in a few kilobytes stop at 1 MiB, in memory and
    /// in a stream.
    func testTheLimitCountsDecodedBytes() throws {
        let bomb = Zlib.encode(Data(count: 4 << 20), format: .zlib)
        let answer = ScriptedEngine.Answer(
            status: 200, fields: [HeaderField.Name("Content-Encoding"): "deflate"], chunks: [bomb])
        let engine = ScriptedEngine([answer, answer])
        let limit = TransferOptions(maxResponseBytes: 1 << 20)
        var streamed = limit
        streamed.streaming = StreamingOptions()

        let collected = try failure(of: engine.send(request("http://api.test/bomb"), transfer: limit))
        let stream = try XCTUnwrap(
            engine.send(request("http://api.test/bomb"), transfer: streamed).wait(timeout: 10).bodyStream)
        let outcome = Protected<(read: Int, error: (any Error)?)>((0, nil))
        let done = expectation(description: "stream read")
        Task { [stream] in
            do {
                while let part = try await stream.next() { outcome.withLock { $0.read += part.count } }
            } catch {
                outcome.withLock { $0.error = error }
            }
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        let (read, streamError) = outcome.snapshot

        XCTAssertEqual(collected.kind, .responseTooLarge)
        XCTAssertEqual((streamError as? ConnectError)?.kind, .responseTooLarge, "\(String(describing: streamError))")
        XCTAssertLessThanOrEqual(read, 1 << 20)
    }

    func testACorruptBodyFailsAndSeveralCodingsAreRefused() throws {
        let engine = ScriptedEngine([
            .init(
                status: 200, fields: [HeaderField.Name("Content-Encoding"): "gzip"], chunks: [Data("not gzip".utf8)]),
            .init(status: 200, fields: [HeaderField.Name("Content-Encoding"): "gzip, br"], chunks: [Data([1])]),
            .init(status: 200, fields: [HeaderField.Name("Content-Encoding"): "gzip, gzip"], chunks: [Data([1])]),
        ])

        let corrupt = try failure(of: engine.send(request("http://api.test/corrupt")))
        let layered = try failure(of: engine.send(request("http://api.test/layered")))
        let twice = try failure(of: engine.send(request("http://api.test/twice")))

        XCTAssertEqual(corrupt.kind, .transport, "not retried: another attempt gets the same bytes")
        XCTAssertTrue(
            corrupt.message.hasPrefix("the gzip body cannot be decoded: the data is corrupt"), corrupt.message)
        XCTAssertTrue(corrupt.underlyingError is ContentDecodingFailure)
        XCTAssertEqual(corrupt.request?.url?.path, "/corrupt")
        XCTAssertEqual(layered.kind, .transport)
        XCTAssertTrue(layered.message.contains("encoded with br, which neither"), layered.message)
        XCTAssertEqual(twice.kind, .transport)
        XCTAssertTrue(twice.message.contains("in several codings in turn (gzip, gzip)"), twice.message)
    }

    /// A transfer coding other than `chunked` (`Transfer-Encoding: gzip, chunked`) is what the engine hands over
    /// still coded, as SwiftNIO's parser does once it has removed the chunks: the core decodes it as it decodes a
    /// content coding (as libcurl does), and refuses one it cannot decode, or one on top of a content coding, rather
    /// than passing bytes nobody can read as a success.
    func testATransferCodingOtherThanChunkedIsDecodedOrRefused() throws {
        let text = Data(String(repeating: "transfer-coded ", count: 300).utf8)
        let gzip = Zlib.encode(text, format: .gzip)
        let transferEncoding = HeaderField.Name("Transfer-Encoding")
        let engine = ScriptedEngine([
            .init(
                status: 200, fields: [transferEncoding: "gzip, chunked"], chunks: [gzip.prefix(7), gzip.dropFirst(7)]),
            .init(status: 200, fields: [transferEncoding: "chunked"], chunks: [text]),
            .init(status: 200, fields: [transferEncoding: "br, chunked"], chunks: [Data([1])]),
            .init(status: 200, fields: [transferEncoding: "chunked, gzip"], chunks: [gzip]),
            .init(
                status: 200, fields: [transferEncoding: "gzip", HeaderField.Name("Content-Encoding"): "gzip"],
                chunks: [Data([1])]),
        ])

        let decoded = try engine.send(request("http://api.test/gzip")).wait(timeout: 10)
        let chunked = try engine.send(request("http://api.test/chunked")).wait(timeout: 10)
        let unknown = try failure(of: engine.send(request("http://api.test/br")))
        let notLast = try failure(of: engine.send(request("http://api.test/not-last")))
        let layered = try failure(of: engine.send(request("http://api.test/layered")))

        XCTAssertEqual(decoded.data, text)
        XCTAssertEqual(chunked.data, text)
        XCTAssertEqual(unknown.kind, .transport)
        XCTAssertTrue(unknown.message.contains("encoded with br, which neither"), unknown.message)
        XCTAssertEqual(notLast.kind, .transport, "chunked before another coding was never removed")
        XCTAssertTrue(notLast.message.contains("encoded with chunked, which neither"), notLast.message)
        XCTAssertEqual(layered.kind, .transport)
        XCTAssertTrue(layered.message.contains("in several codings in turn (gzip, gzip)"), layered.message)
    }

    func testWhatNoEngineCanSendIsRefusedBeforeAnyHop() throws {
        let engine = ScriptedEngine([])
        let notHTTP = try failure(of: engine.send(request("ftp://api.test/x")))
        let getWithBody = try failure(of: engine.send(request("http://api.test/x", body: Data("b".utf8))))

        XCTAssertEqual(notHTTP.kind, .invalidRequest)
        XCTAssertTrue(notHTTP.message.contains("ScriptedEngine sends HTTP only"), notHTTP.message)
        XCTAssertEqual(getWithBody.kind, .invalidRequest)
        XCTAssertTrue(engine.hops.isEmpty)
    }

    /// The refused URL in the error's reason is shown as every invalid-URL error shows it: no `user:password@`, no
    /// secret of its query, in the reason or anywhere a debugger reads.
    func testARefusedURLShowsNoSecret() throws {
        let engine = ScriptedEngine([])

        let error = try failure(of: engine.send(request("ftp://amy:pw@api.test/x?token=abc")))

        guard case .invalidURL(let shown) = error.invalidRequestReason else {
            return XCTFail("\(String(describing: error.invalidRequestReason))")
        }
        XCTAssertFalse(shown.contains("amy") || shown.contains("pw@") || shown.contains("abc"), shown)
        XCTAssertTrue(shown.hasPrefix("ftp://api.test/x?token="), shown)
        var dumped = ""
        dump(error, to: &dumped)
        XCTAssertFalse(dumped.contains("amy:pw") || dumped.contains("token=abc"), dumped)
    }
}

/// A part an engine had already handed over when the call was cancelled, or its deadline passed, is not reported to
/// the progress handler after the call's future completed: the caller has heard the end.
final class EngineExchangeProgressEndTests: XCTestCase {
    /// A body whose parts the test hands over one at a time; it does not heed cancellation, as a part already on its
    /// way from an engine's connection does not. `handedOut` records each part the exchange took (`nil`: the end);
    /// `letGo` is signalled when the exchange lets its iterator go.
    final class HandFedBody: AsyncSequence, Sendable {
        typealias Element = Data
        private let state = Protected<(parts: [Data?], waiting: CheckedContinuation<Data?, Never>?)>(([], nil))
        let handedOut = Recorder<Data?>()
        let letGo = DispatchSemaphore(value: 0)

        /// Held by the iterator: its end is the exchange letting the body go.
        final class Lease: Sendable {
            let body: HandFedBody
            init(_ body: HandFedBody) { self.body = body }
            deinit { body.letGo.signal() }
        }

        func feed(_ part: Data?) {
            let waiting = state.withLock { state -> CheckedContinuation<Data?, Never>? in
                guard let waiting = state.waiting else {
                    state.parts.append(part)
                    return nil
                }
                state.waiting = nil
                return waiting
            }
            if let waiting {
                handedOut.append(part)
                waiting.resume(returning: part)
            }
        }

        struct AsyncIterator: AsyncIteratorProtocol {
            let body: HandFedBody
            let lease: Lease
            mutating func next() async -> Data? {
                await withCheckedContinuation { continuation in
                    let ready = body.state.withLock { state -> Data?? in
                        guard !state.parts.isEmpty else {
                            state.waiting = continuation
                            return nil
                        }
                        return .some(state.parts.removeFirst())
                    }
                    if let ready {
                        body.handedOut.append(ready)
                        continuation.resume(returning: ready)
                    }
                }
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(body: self, lease: Lease(self)) }
    }

    /// Answers 200 with a body of 1,000 bytes that the test hands over.
    final class HandFedEngine: HTTPEngine, Sendable {
        let body = HandFedBody()

        func send(_ hop: EngineRequest) async throws -> EngineResponse<HandFedBody> {
            EngineResponse(head: ResponseHead(status: 200, headerFields: ["Content-Length": "1000"]), body: body)
        }
    }

    /// Starts a download whose progress handler hears its first part, ends the call with `end`, then hands over a
    /// part the engine already had, and the body's end: no report may follow the future's completion.
    private func check(timeout: TimeInterval = 60, ending end: (Future<ConnectResponse>) -> Void) throws {
        // Given: a call under way, whose progress handler has heard its first part
        let engine = HandFedEngine()
        let reports = Recorder<TransferProgress>()
        var transfer = TransferOptions()
        transfer.progress = { reports.append($0) }
        let request = ConnectRequest(url: URL(string: "http://api.test/file")!, timeoutInterval: timeout)
        let future = engine.send(request, transfer: transfer)
        engine.body.feed(Data(count: 10))
        XCTAssertTrue(engine.body.handedOut.wait(forCount: 1))
        XCTAssertTrue(reports.wait(forCount: 2), "\(reports.values)")  // the head's, then the first part's
        // When: the call ends; then the engine hands over a part it already had, and the body's end
        end(future)
        XCTAssertThrowsError(try future.waitForResult(timeout: 10).get())
        let reportsAtTheEnd = reports.values.count
        engine.body.feed(Data(count: 10))
        engine.body.feed(nil)
        // The exchange takes the part it was waiting for, and lets the body go once it has handled it.
        XCTAssertEqual(engine.body.letGo.wait(timeout: .now() + 10), .success, "the exchange still reads the body")
        // Then: nothing more was reported, and the body's end was not asked for
        XCTAssertEqual(reports.values.count, reportsAtTheEnd, "\(reports.values)")
        XCTAssertEqual(engine.body.handedOut.values.count, 2, "\(engine.body.handedOut.values)")
    }

    func testAPartHandedOverAfterACancellationIsNotReported() throws {
        try check { $0.cancel() }
    }

    func testAPartHandedOverAfterTheDeadlineIsNotReported() throws {
        // The deadline passes while the exchange waits for its second part.
        try check(timeout: 0.2) { _ in }
    }
}
