import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `Connect.stream` over a scripted fake transport: chunks in order, the error handler for a non-2xx head,
/// retries before the first byte and never after, cancellation, the idle timeout, callbacks (issue 25).
final class ResponseStreamTests: XCTestCase {
    struct Feed: Connector {
        var path = "/feed"
        var timeout: TimeInterval = 10
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { path }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
    }

    private func chunks(_ texts: String...) -> [Data] { texts.map { Data($0.utf8) } }

    private func collect(_ stream: ResponseStream) async throws -> [String] {
        var received: [String] = []
        for try await chunk in stream { received.append(String(decoding: chunk, as: UTF8.self)) }
        return received
    }

    func testChunksArriveInOrderAfterTheHead() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/feed", with: .stream(chunks("a", "b", "c"), headers: ["X-Feed": "1"]))
        let stream = Connect(transport: transport, retryPolicy: nil).stream(Feed())

        let head = try await stream.response
        XCTAssertEqual(head.statusCode, 200)
        XCTAssertEqual(head.header("X-Feed"), "1")
        XCTAssertTrue(head.data.isEmpty)
        let received = try await collect(stream)
        XCTAssertEqual(received, ["a", "b", "c"])
    }

    /// A line of JSON lines that fails to decode is reported with the stream's request, so that the request's secret
    /// values are hidden in the line the error shows: it had no request, and showed a token a server echoed under a
    /// field name no rule knows.
    func testALineThatFailsToDecodeHidesTheRequestsSecrets() async throws {
        struct Entry: Decodable { let id: Int }
        let transport = FakeTransport()
        transport.stub(.get, "/feed", with: .stream(chunks(#"{"debug":"auth=Bearer tok-LINE-161803"}"# + "\n")))
        let auth = AuthenticationMiddleware(credential: .bearer(token: "tok-LINE-161803")) { _ in
            Future(error: URLError(.userAuthenticationRequired))
        }
        let stream = Connect(transport: transport, middlewares: [auth], retryPolicy: nil).stream(Feed())
        do {
            for try await _ in stream.jsonLines(of: Entry.self) {}
            XCTFail("the line must fail to decode")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .decoding)
            XCTAssertFalse("\(error)".contains("tok-LINE-161803"), "\(error)")
            XCTAssertFalse(String(reflecting: error).contains("tok-LINE-161803"), String(reflecting: error))
        }
    }

    /// The same for a secret the answer hands out (a session cookie it sets, echoed in a line): the error carries the
    /// answer's head, so the value is hidden as it is in `decoded(toType:)`'s error, and the status is named.
    func testALineThatFailsToDecodeHidesTheAnswersSecretsAndNamesItsStatus() async throws {
        struct Entry: Decodable { let id: Int }
        let transport = FakeTransport()
        transport.stub(
            .get, "/feed",
            with: .stream(
                chunks(#"{"note":"session s-77aa-LINE"}"# + "\n"), headers: ["Set-Cookie": "sessionid=s-77aa-LINE"]))
        let stream = Connect(transport: transport, retryPolicy: nil).stream(Feed())
        do {
            for try await _ in stream.jsonLines(of: Entry.self) {}
            XCTFail("the line must fail to decode")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .decoding)
            XCTAssertEqual(error.statusCode, 200)
            XCTAssertFalse("\(error)".contains("s-77aa-LINE"), "\(error)")
            XCTAssertFalse(String(reflecting: error).contains("s-77aa-LINE"), String(reflecting: error))
        }
    }

    /// A line whose date the `.iso8601` strategy refuses is reported at the date's own path, as `decoded` reports it.
    func testALineWithADateTheStrategyRefusesNamesTheDatesPath() async throws {
        struct Entry: Decodable { let at: Date }
        let transport = FakeTransport()
        transport.stub(
            .get, "/feed", with: .stream(chunks(#"{"at":"2024-05-01T10:00:00Z"}"# + "\n" + #"{"at":"soon"}"# + "\n")))
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        var decoded = 0
        do {
            for try await _ in Connect(transport: transport, retryPolicy: nil).stream(Feed()).jsonLines(
                of: Entry.self, decoder: decoder)
            {
                decoded += 1
            }
            XCTFail("the second line must fail to decode")
        } catch let error as ConnectError {
            XCTAssertEqual(decoded, 1)
            XCTAssertEqual(error.codingPath, "at")
            XCTAssertTrue(error.message.contains(#"line 2 of the stream"#), error.message)
            XCTAssertTrue(error.message.contains(#"the value "soon" at 'at' is not an ISO 8601 date"#), error.message)
        }
    }

    func testAnErrorStatusGoesThroughTheErrorHandlerWithItsBodyRead() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/feed", with: .stream(chunks(#"{"mess"#, #"age":"quota exceeded"}"#), status: 429))
        let stream = Connect(transport: transport, retryPolicy: nil).stream(Feed())

        do {
            _ = try await collect(stream)
            XCTFail("a 429 must fail the stream")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .serverMessage)
            XCTAssertEqual(error.message, "quota exceeded")
            XCTAssertEqual(error.statusCode, 429)
        }
    }

    /// A fake answering 503 with "overloaded", then `: ping` lines every 20 ms until the call stops reading.
    private func tricklingErrorBody() -> FakeTransport {
        let transport = FakeTransport()
        transport.stub(
            .get, "/feed",
            with: .stream(status: 503) { body in
                guard await body.send(Data("overloaded".utf8)) else { return }
                while await body.send(Data(": ping\n".utf8)) { try? await Task.sleep(nanoseconds: 20_000_000) }
            })
        return transport
    }

    /// An error body that trickles (a proxy's `: ping` every few seconds, a byte at a time) under the limit was read
    /// for as long as it kept coming, each piece resetting the idle timeout: the call waited for hours. Its excerpt is
    /// read for one idle period at most (ten seconds without an idle timeout), then the call fails with what came.
    func testATricklingErrorBodyIsReadForOneIdlePeriodAtMost() async throws {
        let transport = tricklingErrorBody()
        let stream = Connect(transport: transport, retryPolicy: nil)
            .stream(Feed(), streaming: StreamingOptions(idleTimeout: 0.5))

        do {
            _ = try await collect(stream)
            XCTFail("a 503 must fail the stream")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .httpStatus, "\(error)")
            XCTAssertEqual(error.body.map { String(decoding: $0.prefix(10), as: UTF8.self) }, "overloaded")
        }
    }

    /// The same trickling body under an error handler that accepts the status: the call fails, the excerpt being no
    /// answer, with a timeout that says the body was still arriving, not a future's time limit ("the future did not
    /// complete within the time limit of 0.5 s").
    func testATricklingErrorBodyAnErrorHandlerAcceptsFailsSayingTheBodyWasStillArriving() async throws {
        struct Accepting: ErrorHandling {
            func handle(response: [String: Any]) -> (any Error)? { nil }
            func handle(_ response: ConnectResponse) -> (any Error)? { nil }
        }
        let transport = tricklingErrorBody()
        let stream = Connect(transport: transport, errorHandler: Accepting(), retryPolicy: nil)
            .stream(Feed(), streaming: StreamingOptions(idleTimeout: 0.5))

        do {
            _ = try await collect(stream)
            XCTFail("a body read only in part is no answer")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .timedOut, "\(error)")
            XCTAssertEqual(error.statusCode, 503)
            XCTAssertTrue(error.message.contains("still arriving after 0.5 s"), error.message)
            XCTAssertFalse(error.message.contains("the future"), error.message)
        }
    }

    func testTheErrorBodyIsReadOnlyUpToItsLimit() async throws {
        let transport = FakeTransport()
        let read = Guarded(0)
        transport.stub(
            .get, "/feed",
            with: .stream(status: 500) { body in
                // An endless error body: the client must stop reading at its limit.
                while await body.send(Data(repeating: 0x61, count: 1024)) { read.withLock { $0 += 1024 } }
            })
        let stream = Connect(transport: transport, retryPolicy: nil)
            .stream(Feed(), streaming: StreamingOptions(errorBodyLimit: 4096))

        do {
            _ = try await collect(stream)
            XCTFail("a 500 must fail the stream")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .httpStatus)
            XCTAssertEqual(error.body?.count, 4096)
        }
    }

    func testARetryHappensBeforeTheFirstByteAndNeverAfter() async throws {
        let transport = FakeTransport()
        transport.stub(
            .get, "/feed",
            with: [
                .stream(chunks("unavailable"), status: 503),
                .stream(chunks("a", "b"), endingWith: URLError(.networkConnectionLost)),
                .stream(chunks("never")),
            ])
        let connect = Connect(transport: transport, retryPolicy: RetryPolicy(clock: ImmediateRetryClock()))
        let stream = connect.stream(Feed())

        var received: [String] = []
        do {
            for try await chunk in stream { received.append(String(decoding: chunk, as: UTF8.self)) }
            XCTFail("the broken body must fail the stream")
        } catch let error as ConnectError {
            XCTAssertEqual(error.urlError?.code, .networkConnectionLost, "\(error)")
        }
        XCTAssertEqual(received, ["a", "b"], "the chunks before the failure are delivered")
        XCTAssertEqual(transport.requests.count, 2, "a 503 head is retried; a body that broke is not")
    }

    func testATokenRefreshHappensBeforeTheStreamStarts() async throws {
        let transport = FakeTransport()
        transport.stub(
            .get, "/feed",
            with: [
                .stream(chunks(#"{"error":"token expired"}"#), status: 401),
                .stream(chunks("private ", "feed")),
            ])
        let refreshes = Guarded(0)
        let auth = AuthenticationMiddleware(credential: .bearer(token: "old")) { _ in
            refreshes.withLock { $0 += 1 }
            return Future(value: .bearer(token: "new"))
        }
        let connect = Connect(transport: transport, middlewares: [auth])

        let received = try await collect(connect.stream(Feed()))

        XCTAssertEqual(received, ["private ", "feed"])
        XCTAssertEqual(refreshes.snapshot, 1)
        XCTAssertEqual(
            transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") }, ["Bearer old", "Bearer new"])
    }

    /// A transport whose `/feed` sends lines until its reader stops, then completes `stopped`.
    private func endlessFeed() -> (FakeTransport, stopped: Promise<Void>) {
        let transport = FakeTransport()
        let stopped = Promise<Void>()
        transport.stub(
            .get, "/feed",
            with: .stream { body in
                var n = 0
                while await body.send(Data("\(n)\n".utf8)) { n += 1 }
                stopped.succeed(())
            })
        return (transport, stopped)
    }

    func testBreakingOutOfTheLoopStopsTheProducer() async throws {
        let (transport, stopped) = endlessFeed()
        let stream = Connect(transport: transport, retryPolicy: nil).stream(Feed())

        for try await _ in stream { break }
        try await stopped.future.value(timeout: 5)
    }

    /// A stream released before anyone read it stops its transfer: with a long-lived feed and no deadline, the
    /// connection and a full buffer would otherwise be held for as long as the server keeps sending.
    func testReleasingAnUnreadStreamStopsTheTransfer() async throws {
        let (transport, stopped) = endlessFeed()
        let connect = Connect(transport: transport, retryPolicy: nil)
        var stream: ResponseStream? = connect.stream(Feed(timeout: .infinity))
        // The head arrives; nobody iterates.
        let head = try XCTUnwrap(stream).head
        _ = try await head.value(timeout: 5)
        XCTAssertEqual(connect.requestsInFlight, 1, "the body is running")

        stream = nil

        try await stopped.future.value(timeout: 5)
        XCTAssertNotNil(head.result, "the head stays as it was")
    }

    /// Releasing the stream while an iterator reads it leaves the reader reading.
    func testAnIteratorKeepsReadingAfterItsStreamIsReleased() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/feed", with: .stream(chunks("a", "b", "c")))
        var stream: ResponseStream? = Connect(transport: transport, retryPolicy: nil).stream(Feed())
        var iterator = try XCTUnwrap(stream).makeAsyncIterator()
        stream = nil

        var received: [String] = []
        while let chunk = try await iterator.next() { received.append(String(decoding: chunk, as: UTF8.self)) }
        XCTAssertEqual(received, ["a", "b", "c"])
    }

    func testCancellingTheConsumingTaskStopsTheTransfer() async throws {
        let transport = FakeTransport()
        let firstSent = Promise<Void>()
        let stopped = Promise<Void>()
        transport.stub(
            .get, "/feed",
            with: .stream { body in
                _ = await body.send(Data("first".utf8))
                firstSent.succeed(())
                // Nothing more arrives until the consumer gives up, which cancels this producer.
                await waitUntilCancelled()
                stopped.succeed(())
            })
        let stream = Connect(transport: transport, retryPolicy: nil).stream(Feed())
        let reading = Task {
            var count = 0
            for try await _ in stream { count += 1 }
            return count
        }
        try await firstSent.future.value(timeout: 5)
        reading.cancel()
        do {
            _ = try await reading.value
            XCTFail("a cancelled read must throw")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .cancelled)
        }
        try await stopped.future.value(timeout: 5)
    }

    func testCancelAllRequestsStopsARunningStream() async throws {
        let transport = FakeTransport()
        let stopped = Promise<Void>()
        transport.stub(
            .get, "/feed",
            with: .stream { body in
                while await body.send(Data("tick\n".utf8)) {}
                stopped.succeed(())
            })
        let connect = Connect(transport: transport, retryPolicy: nil)
        let stream = connect.stream(Feed())
        var iterator = stream.makeAsyncIterator()
        _ = try await iterator.next()
        XCTAssertEqual(connect.requestsInFlight, 1, "a stream counts until its body ends")

        connect.cancelAllRequests()

        try await stopped.future.value(timeout: 5)
        do {
            while try await iterator.next() != nil {}
            XCTFail("a cancelled stream must throw")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .cancelled)
        }
        XCTAssertEqual(connect.requestsInFlight, 0)
    }

    func testAStreamThatEndsLeavesNothingInFlight() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/feed", with: .stream(chunks("a", "b")))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let received = try await collect(connect.stream(Feed()))
        XCTAssertEqual(received, ["a", "b"])
        XCTAssertEqual(connect.requestsInFlight, 0)
    }

    func testCancelBeforeTheHeadFailsTheStream() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/feed", with: .never)
        let stream = Connect(transport: transport, retryPolicy: nil).stream(Feed())
        stream.cancel()
        do {
            _ = try await collect(stream)
            XCTFail("expected a cancellation")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .cancelled)
        }
        XCTAssertEqual(transport.cancelledRequests.count, 1)
    }

    /// A transfer that breaks after some chunks: the chunks, its error once, then `nil`, as `AsyncIteratorProtocol`
    /// requires of an iterator that has thrown; the error came again at every `next()`.
    func testABrokenTransferThrowsOnceThenTheIteratorEnds() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/feed", with: .stream(chunks("a"), endingWith: URLError(.networkConnectionLost)))
        let stream = Connect(transport: transport, retryPolicy: nil).stream(Feed())
        var iterator = stream.makeAsyncIterator()

        let chunk = try await iterator.next()
        XCTAssertEqual(chunk, Data("a".utf8))
        do {
            _ = try await iterator.next()
            XCTFail("the broken transfer must fail the iteration")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .connectionLost)
        }
        let afterTheError = try await iterator.next()
        XCTAssertNil(afterTheError)
    }

    /// A request that fails before its head: its error once, then `nil`; the head's error came at every `next()`.
    func testAFailedRequestThrowsOnceThenTheIteratorEnds() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/feed", with: .failure(URLError(.cannotConnectToHost)))
        let stream = Connect(transport: transport, retryPolicy: nil).stream(Feed())
        var iterator = stream.makeAsyncIterator()

        do {
            _ = try await iterator.next()
            XCTFail("the failed request must fail the iteration")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .cannotConnect)
        }
        let afterTheError = try await iterator.next()
        XCTAssertNil(afterTheError)
    }

    func testABodyCanBeReadOnce() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/feed", with: .stream(chunks("a")))
        let stream = Connect(transport: transport, retryPolicy: nil).stream(Feed())
        var first = stream.makeAsyncIterator()
        var second = stream.makeAsyncIterator()
        let chunk = try await first.next()
        XCTAssertEqual(chunk, Data("a".utf8))
        do {
            _ = try await second.next()
            XCTFail("a second reader must be refused")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .rejected)
        }
    }

    /// A second iterator, refused, does not stop the transfer its first reader is reading when it goes.
    func testARefusedSecondReaderLeavesTheFirstOneReading() async throws {
        let transport = FakeTransport()
        let gate = Promise<Void>()
        transport.stub(
            .get, "/feed",
            with: .stream { body in
                _ = await body.send(Data("a".utf8))
                _ = try? await gate.future.value
                _ = await body.send(Data("b".utf8))
                body.finish()
            })
        let stream = Connect(transport: transport, retryPolicy: nil).stream(Feed())
        var first = stream.makeAsyncIterator()
        let a = try await first.next()
        XCTAssertEqual(a, Data("a".utf8))

        do {
            var second = stream.makeAsyncIterator()
            _ = try? await second.next()
        }
        gate.succeed(())

        let b = try await first.next()
        XCTAssertEqual(b, Data("b".utf8))
        let end = try await first.next()
        XCTAssertNil(end)
    }

    /// A reader whose task is cancelled stops, even when chunks are always waiting for it: with back-pressure, each
    /// one it takes lets the producer send the next.
    func testCancellingAReaderThatNeverWaitsStopsTheTransfer() async throws {
        let transport = FakeTransport()
        let produced = Counter()
        let stopped = Promise<Void>()
        transport.stub(
            .get, "/feed",
            with: .stream { body in
                while await body.send(Data(count: 1024)) { produced.increment() }
                stopped.succeed(())
            })
        let stream = Connect(transport: transport, retryPolicy: nil).stream(Feed(timeout: .infinity))
        let firstRead = Promise<Void>()
        let reading = Task {
            var read = 0
            for try await _ in stream {
                read += 1
                firstRead.completeIfPending(with: .success(()))
                // Behind the producer: the buffer is never empty when the next chunk is asked for.
                while produced.value < read + 16 { await Task.yield() }
            }
            return read
        }
        try await firstRead.future.value(timeout: 5)

        reading.cancel()

        try await stopped.future.value(timeout: 5)
        do {
            _ = try await reading.value
            XCTFail("a cancelled read must throw")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .cancelled)
        }
    }

    /// The idle timeout is the network going quiet with nothing unread: a reader slow on chunks already there
    /// (the engine paused by back-pressure, so nothing arrives meanwhile) does not time the stream out.
    func testTheIdleTimeoutDoesNotFireWhileChunksWaitForASlowReader() async throws {
        let transport = FakeTransport()
        let cut = Promise<Void>()
        let size = 64 << 10
        transport.stub(
            .get, "/feed",
            with: .stream { body in
                for _ in 0..<8 {
                    guard await body.send(Data(count: size)) else {
                        cut.succeed(())
                        return
                    }
                }
                body.finish()
            })
        let stream = Connect(transport: transport, retryPolicy: nil)
            .stream(Feed(timeout: .infinity), streaming: StreamingOptions(idleTimeout: 1))
        var iterator = stream.makeAsyncIterator()
        var received = try await iterator.next()?.count ?? 0

        // The reader is busy for two idle timeouts, with chunks waiting: the stream must not be cut meanwhile. (1 s:
        // the fake's producer, started in a task of its own, sends its first chunk well within it on a busy machine.)
        let cutEarly = expectation(description: "the stream was cut while chunks waited for the reader")
        cutEarly.isInverted = true
        cut.future.observe { _ in cutEarly.fulfill() }
        await fulfillment(of: [cutEarly], timeout: 2)

        while let chunk = try await iterator.next() { received += chunk.count }
        XCTAssertEqual(received, 8 * size)
    }

    func testTheIdleTimeoutFailsAStreamThatGoesQuiet() async throws {
        let transport = FakeTransport()
        transport.stub(
            .get, "/feed",
            with: .stream { body in
                _ = await body.send(Data("hello".utf8))
                await waitUntilCancelled()  // until the idle timeout stops the stream
            })
        // 1 s: the producer, started in a task of its own, sends its chunk well within it on a busy machine.
        let stream = Connect(transport: transport, retryPolicy: nil)
            .stream(Feed(timeout: .infinity), streaming: StreamingOptions(idleTimeout: 1))
        var received: [String] = []
        let started = Date()
        do {
            for try await chunk in stream { received.append(String(decoding: chunk, as: UTF8.self)) }
            XCTFail("a quiet stream must time out")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .timedOut)
        }
        XCTAssertEqual(received, ["hello"])
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.19)
    }

    func testObserveDeliversChunksInOrderThenTheCompletion() throws {
        let transport = FakeTransport()
        transport.stub(.get, "/feed", with: .stream((0..<50).map { Data("\($0),".utf8) }))
        let stream = Connect(transport: transport, retryPolicy: nil).stream(Feed())
        let received = Guarded("")
        let done = Promise<ConnectResponse>()
        let queue = DispatchQueue(label: "observer")
        stream.observe(
            on: queue,
            chunk: { chunk in
                dispatchPrecondition(condition: .onQueue(queue))
                received.withLock { $0 += String(decoding: chunk, as: UTF8.self) }
            },
            completion: { result in
                dispatchPrecondition(condition: .onQueue(queue))
                done.complete(with: result)
            })
        let head = try done.future.wait(timeout: 5)
        XCTAssertEqual(head.statusCode, 200)
        XCTAssertEqual(received.snapshot, (0..<50).map { "\($0)," }.joined())
    }

    func testProcessorsDoNotRunOnAStreamAndTheCacheIsBypassed() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/feed", with: .stream(chunks("live")))
        let cache = ResponseCache(maxBytes: 1 << 20)
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        let options = RequestOptions(cache: CacheRule(timeToLive: 60))
        for _ in 0..<2 {
            let received = try await collect(connect.stream(Feed(), options: options))
            XCTAssertEqual(received, ["live"])
        }
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(cache.hitCount, 0)
    }

    // MARK: - The body stream itself

    /// The chunks buffered before the overflow come first, then the error; the chunk that did not fit is dropped.
    func testOfferFailsTheStreamWhenTheBufferIsFull() async throws {
        let body = ResponseBodyStream(options: StreamingOptions(bufferLimit: 10))
        XCTAssertTrue(body.offer(Data(count: 6)))
        XCTAssertFalse(body.offer(Data(count: 6)))
        XCTAssertFalse(body.isOpen)
        var iterator = ConnectStreamProbe(body)
        let buffered = try await iterator.next()
        XCTAssertEqual(buffered?.count, 6)
        do {
            _ = try await iterator.next()
            XCTFail("an overflowed stream must fail")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .responseTooLarge)
        }
    }

    /// A chunk larger than the limit is taken into an empty buffer, as it would be handed to a reader waiting at
    /// that instant: the same bytes had failed the stream or not by the reader's timing. The next chunk behind it,
    /// with the reader still behind, is the overflow.
    func testOfferTakesAChunkOverTheLimitIntoAnEmptyBuffer() async throws {
        let body = ResponseBodyStream(options: StreamingOptions(bufferLimit: 10))
        XCTAssertTrue(body.offer(Data(count: 16)))
        var iterator = ConnectStreamProbe(body)
        let first = try await iterator.next()
        XCTAssertEqual(first?.count, 16)
        XCTAssertTrue(body.offer(Data(count: 16)), "an empty buffer again")
        XCTAssertFalse(body.offer(Data(count: 1)), "behind a chunk over the limit")
        let second = try await iterator.next()
        XCTAssertEqual(second?.count, 16)
        do {
            _ = try await iterator.next()
            XCTFail("an overflowed stream must fail")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .responseTooLarge)
        }
    }

    func testSendWaitsWhileTheReaderIsBehind() async throws {
        let body = ResponseBodyStream(options: StreamingOptions(bufferLimit: 100))
        let firstSent = Promise<Void>()
        let secondSent = Promise<Void>()
        let producer = Task {
            guard await body.send(Data(count: 60)) else { return }
            firstSent.succeed(())
            // 120 bytes unread, over the 100-byte threshold: this waits for the reader.
            guard await body.send(Data(count: 60)) else { return }
            secondSent.succeed(())
            for _ in 0..<8 {
                guard await body.send(Data(count: 60)) else { return }
            }
            body.finish()
        }
        var probe = ConnectStreamProbe(body)
        try await firstSent.future.value(timeout: 5)
        do {
            try await secondSent.future.value(timeout: 0.2)
            XCTFail("the producer must wait while 100 bytes or more are unread")
        } catch {
            // Still waiting: nobody has read.
        }
        var total = 0
        while let chunk = try await probe.next() { total += chunk.count }
        XCTAssertEqual(total, 600)
        XCTAssertNotNil(secondSent.future.result, "reading let the producer go on")
        await producer.value
    }
}

/// Reads a body stream the way `ResponseStream` does.
private struct ConnectStreamProbe {
    let stream: ResponseStream
    var iterator: ResponseStream.AsyncIterator

    init(_ body: ResponseBodyStream) {
        let request = URLRequest(url: URL(string: "https://api.example.com/probe")!)
        var response = ConnectResponse(request: request, statusCode: 200)!
        response.bodyStream = body
        let answer = response
        let transport = FakeTransport(fallback: .handler { _ in .success(answer) })
        stream = Connect(transport: transport, retryPolicy: nil).stream(ResponseStreamTests.Feed(path: "/probe"))
        iterator = stream.makeAsyncIterator()
    }

    mutating func next() async throws -> Data? {
        try await iterator.next()
    }
}
