import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A reader whose task is cancelled stops, whether or not the body has already arrived whole: a cancelled loop
/// over lines or events does not go on reading what is buffered, nor is it handed the lines or events left of the
/// chunk in hand (an `EventSource` checks before each event too, `EventSourceStopTests`). The same holds once the
/// stream, or the call, is cancelled from outside the loop.
final class CancelledReaderTests: XCTestCase {
    private let base = URL(string: "https://api.example.com")!

    /// A stream whose body, two lines, arrived whole: its response is in before the stream is handed back.
    private func wholeBodyStream() async throws -> ResponseStream {
        let transport = FakeTransport()
        transport.stub(
            .get, "/whole",
            with: .handler { request in
                var response = ConnectResponse(request: request, statusCode: 200, headers: [:])!
                response.bodyStream = .finished(with: Data("one\ntwo\n".utf8))
                return .success(response)
            })
        let stream = Connect(transport: transport, retryPolicy: nil).stream(Route("/whole", baseURL: base))
        _ = try await stream.response
        return stream
    }

    /// The body is complete and buffered before the reader starts; its task is cancelled: it gets `.cancelled`,
    /// not the body and a normal end.
    func testACancelledReaderOfABodyAlreadyCompleteGetsCancelled() async throws {
        let stream = try await wholeBodyStream()
        let outcome = await Task { () -> [String] in
            withUnsafeCurrentTask { $0?.cancel() }
            return await collect(stream.lines)
        }.value
        XCTAssertEqual(outcome, [cancelled])
    }

    private static let cancelTask: @Sendable () -> Void = { withUnsafeCurrentTask { $0?.cancel() } }
    private let cancelled = "\(ConnectError.Kind.cancelled)"

    /// A reader whose task is not cancelled reads a complete body as before.
    func testAReaderOfABodyAlreadyCompleteReadsIt() async throws {
        var lines: [String] = []
        for try await line in try await wholeBodyStream().lines { lines.append(line) }
        XCTAssertEqual(lines, ["one", "two"])
    }

    // MARK: - The rest of the chunk in hand

    /// One chunk of many lines, its stream left open: what a view splits from it at once.
    private func oneChunkStream(_ body: String) -> (Connect, ResponseStream) {
        let transport = FakeTransport()
        transport.stub(
            .get, "/chunk",
            with: .stream { stream in
                _ = await stream.send(Data(body.utf8))
                await waitUntilCancelled()
            })
        let connect = Connect(transport: transport, retryPolicy: nil)
        return (connect, connect.stream(Route("/chunk", baseURL: base)))
    }

    /// What a loop over `sequence` got, `stop` run after its first element, in a task of its own: the elements,
    /// then how it ended.
    private func outcome<Elements: AsyncSequence & Sendable>(
        of sequence: Elements, stoppingWith stop: @escaping @Sendable () -> Void
    ) async -> [String] where Elements.Element: Sendable {
        await Task { () -> [String] in
            await collect(sequence, afterFirst: stop)
        }.value
    }

    /// The loop's task is cancelled after the first line of a chunk of five: no other line comes.
    func testACancelledLoopGetsNoMoreLinesOfTheChunkInHand() async {
        let (_, stream) = oneChunkStream("one\ntwo\nthree\nfour\nfive\n")
        let outcome = await outcome(of: stream.lines, stoppingWith: Self.cancelTask)
        XCTAssertEqual(outcome, ["one", cancelled])
    }

    /// The stream is cancelled (not the loop's task) after the first line: no other line comes.
    func testALoopOverACancelledStreamGetsNoMoreLinesOfTheChunkInHand() async {
        let (_, stream) = oneChunkStream("one\ntwo\nthree\n")
        let outcome = await outcome(of: stream.lines, stoppingWith: { stream.cancel() })
        XCTAssertEqual(outcome, ["one", cancelled])
    }

    /// The client's `cancelAllRequests()` after the first line: no other line comes.
    func testCancelAllRequestsEndsALoopOverTheChunkInHand() async {
        let (connect, stream) = oneChunkStream("one\ntwo\nthree\n")
        let outcome = await outcome(of: stream.lines, stoppingWith: { connect.cancelAllRequests() })
        XCTAssertEqual(outcome, ["one", cancelled])
    }

    /// The loop's task is cancelled after the first event of a chunk of three: no other event comes.
    func testACancelledLoopGetsNoMoreEventsOfTheChunkInHand() async {
        let (_, stream) = oneChunkStream("data: one\n\ndata: two\n\ndata: three\n\n")
        let outcome = await outcome(of: stream.events.map(\.data), stoppingWith: Self.cancelTask)
        XCTAssertEqual(outcome, ["one", cancelled])
    }

    /// The stream is cancelled after the first event: no other event comes.
    func testALoopOverACancelledStreamGetsNoMoreEventsOfTheChunkInHand() async {
        let (_, stream) = oneChunkStream("data: one\n\ndata: two\n\ndata: three\n\n")
        let outcome = await outcome(of: stream.events.map(\.data), stoppingWith: { stream.cancel() })
        XCTAssertEqual(outcome, ["one", cancelled])
    }

    /// After a cancellation, the last event ID is that of the last event handed out, not of those dropped: a
    /// reconnection from it gets them.
    func testACancelledLoopKeepsTheLastEventIDOfTheLastEventHandedOut() async {
        let (_, stream) = oneChunkStream("id: 1\ndata: one\n\nid: 2\ndata: two\n\nid: 3\ndata: three\n\n")
        let reported = Protected<[String]>([])
        let events = ResponseEvents(stream, onProgress: { id, _ in reported.withLock { $0.append(id) } })
        let outcome = await outcome(of: events.map(\.data), stoppingWith: Self.cancelTask)
        XCTAssertEqual(outcome, ["one", cancelled])
        XCTAssertEqual(reported.withLock { $0 }, ["1", "1"], "each event handed out, then the end once")
    }

    /// The loop's task is cancelled after the first value of a chunk of JSON Lines: no other value comes.
    func testACancelledLoopGetsNoMoreJSONLinesOfTheChunkInHand() async {
        let (_, stream) = oneChunkStream("1\n2\n3\n")
        let outcome = await outcome(of: stream.jsonLines(of: Int.self), stoppingWith: Self.cancelTask)
        XCTAssertEqual(outcome, ["1", cancelled])
    }

    /// A view over a sequence of the app's own (no `ResponseStream`): a cancelled loop gets no more of the chunk in
    /// hand either, and the line left unended is not handed out as a last line.
    func testACancelledLoopOverAnAppsSequenceGetsNoMoreLines() async {
        let chunks = AsyncStream<Data> { continuation in
            continuation.yield(Data("one\ntwo\nthree".utf8))
            continuation.finish()
        }
        let outcome = await outcome(of: ResponseLines(chunks), stoppingWith: Self.cancelTask)
        XCTAssertEqual(outcome, ["one", cancelled])
    }

    /// The batched views end a cancelled loop too: over a sequence of the app's own that ends when its reader is
    /// cancelled, the unended last line is not handed out as a batch.
    func testACancelledLoopOverBatchesGetsNoMoreBatches() async {
        let chunks = AsyncStream<Data> { continuation in
            continuation.yield(Data("one\n".utf8))
            continuation.yield(Data("two".utf8))
            continuation.finish()
        }
        let outcome = await outcome(
            of: ResponseLines(chunks).batches.map { $0.map(\.string).joined(separator: ",") },
            stoppingWith: Self.cancelTask)
        XCTAssertEqual(outcome, ["one", cancelled])
    }

    /// A cancelled loop over a stream's batches of events gets `.cancelled` from its next `next()`.
    func testACancelledLoopOverEventBatchesGetsCancelled() async {
        let (_, stream) = oneChunkStream("data: one\n\n")
        let outcome = await outcome(
            of: stream.events.batches.map { $0.map(\.data.string).joined(separator: ",") },
            stoppingWith: { stream.cancel() })
        XCTAssertEqual(outcome, ["one", cancelled])
    }

    /// The batches of a view with `onProgress`, cancelled after the first batch: the end is reported once, with the
    /// last event ID of the batch handed out.
    func testACancelledLoopOverEventBatchesReportsTheLastBatchsEventID() async {
        let (_, stream) = oneChunkStream("id: 1\ndata: one\n\n")
        let reported = Protected<[String]>([])
        let events = ResponseEvents(stream, onProgress: { id, _ in reported.withLock { $0.append(id) } })
        let outcome = await outcome(
            of: events.batches.map { $0.map(\.data.string).joined(separator: ",") },
            stoppingWith: { stream.cancel() })
        XCTAssertEqual(outcome, ["one", cancelled])
        XCTAssertEqual(reported.withLock { $0 }, ["1", "1"], "the batch, then the end once")
    }

    /// The body arrived whole before anyone read it; the stream is cancelled: its reader gets `.cancelled`, not the
    /// chunks still buffered (`cancel()` drops them, as it does those of a body still arriving).
    func testCancellingAStreamWhoseBodyEndedDropsItsBufferedChunks() async throws {
        let stream = try await wholeBodyStream()
        stream.cancel()
        let outcome = await collect(stream.map { @Sendable in String(decoding: $0, as: UTF8.self) })
        XCTAssertEqual(outcome, [cancelled])
    }

    /// Without a cancellation, the loop reads the whole chunk: the checks stop nothing else.
    func testALoopNotCancelledReadsTheWholeChunk() async {
        let (_, stream) = oneChunkStream("one\ntwo\nthree\n")
        var lines: [String] = []
        do {
            for try await line in stream.lines {
                lines.append(line)
                if lines.count == 3 { stream.cancel() }
            }
        } catch {
            lines.append("\(error)")
        }
        XCTAssertEqual(lines.prefix(3), ["one", "two", "three"])
    }

    // MARK: - What a read brings as the loop is cancelled

    /// A sequence of the app's own whose last read cancels the reading task before it gives `last`: a chunk that
    /// arrived as the loop was cancelled, or, for `nil`, the end an `AsyncStream` gives a cancelled reader.
    private struct CancelledAtLastRead: AsyncSequence, Sendable {
        let chunks: [String]
        let last: String?

        struct AsyncIterator: AsyncIteratorProtocol {
            var chunks: [String]
            let last: String?
            var isDone = false

            mutating func next() async -> Data? {
                if !chunks.isEmpty { return Data(chunks.removeFirst().utf8) }
                guard !isDone else { return nil }
                isDone = true
                withUnsafeCurrentTask { $0?.cancel() }
                return last.map { Data($0.utf8) }
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunks: chunks, last: last) }
    }

    /// What each view, batched or not, hands out of `base`.
    private func outcomes(of base: CancelledAtLastRead, events: Bool = false) async -> [[String]] {
        if events {
            return [
                await outcome(of: ResponseEvents(base).map(\.data), stoppingWith: {}),
                await outcome(
                    of: ResponseEvents(base).batches.map { $0.map(\.data.string).joined(separator: ",") },
                    stoppingWith: {}),
            ]
        }
        return [
            await outcome(of: ResponseLines(base), stoppingWith: {}),
            await outcome(
                of: ResponseLines(base).batches.map { $0.map(\.string).joined(separator: ",") }, stoppingWith: {}),
            await outcome(of: ResponseJSONLines(base, as: Int.self), stoppingWith: {}),
        ]
    }

    /// A chunk read as the loop was cancelled is not handed out by any view: the batched ones gave it whole.
    func testAChunkReadAsTheLoopIsCancelledIsNotHandedOut() async {
        let lines = await outcomes(of: CancelledAtLastRead(chunks: ["0\n"], last: "1\n2\n"))
        XCTAssertEqual(lines, Array(repeating: ["0", cancelled], count: 3))
        let events = await outcomes(
            of: CancelledAtLastRead(chunks: ["data: zero\n\n"], last: "data: a\n\n"), events: true)
        XCTAssertEqual(events, Array(repeating: ["zero", cancelled], count: 2))
    }

    /// An end read as the loop was cancelled (an `AsyncStream`'s) is a cancellation, not the body's end: the loop
    /// throws `.cancelled` rather than end as if the body were whole, and an unended line is not handed out as the
    /// last one.
    func testAnEndReadAsTheLoopIsCancelledIsACancellation() async {
        let whole = await outcomes(of: CancelledAtLastRead(chunks: ["0\n"], last: nil))
        XCTAssertEqual(whole, Array(repeating: ["0", cancelled], count: 3))
        let unended = await outcomes(of: CancelledAtLastRead(chunks: ["0\n1"], last: nil))
        XCTAssertEqual(unended, Array(repeating: ["0", cancelled], count: 3))
        let events = await outcomes(of: CancelledAtLastRead(chunks: ["data: zero\n\n"], last: nil), events: true)
        XCTAssertEqual(events, Array(repeating: ["zero", cancelled], count: 2))
    }

    /// A batch of events followed, in its chunk, by a block that sets another ID: cancelled after the batch, the
    /// last event ID reported is the batch's, as `ResponseEvents` reports it, not the parser's (a reconnection from
    /// it would skip what came after).
    func testACancelledLoopOverEventBatchesIgnoresTheIDsAfterTheLastBatch() async {
        for body in ["id: 1\ndata: one\n\nid: 2\n\n", "id: 1\ndata: one\n\nid: 2\ndata: two"] {
            let (_, stream) = oneChunkStream(body)
            let reported = Protected<[String]>([])
            let events = ResponseEvents(stream, onProgress: { id, _ in reported.withLock { $0.append(id) } })
            let outcome = await outcome(
                of: events.batches.map { $0.map(\.data.string).joined(separator: ",") },
                stoppingWith: { stream.cancel() })
            XCTAssertEqual(outcome, ["one", cancelled], body)
            XCTAssertEqual(reported.withLock { $0 }, ["1", "1"], body)
        }
    }

    // MARK: - A view that fails on its own

    /// A stream whose body is `body`, in one chunk, left open; `stopped` is fulfilled once its transfer is stopped.
    private func openStream(_ body: String) -> (stream: ResponseStream, stopped: XCTestExpectation) {
        let stopped = expectation(description: "the transfer is stopped")
        let transport = FakeTransport()
        transport.stub(
            .get, "/open",
            with: .stream { stream in
                _ = await stream.send(Data(body.utf8))
                await waitUntilCancelled()
                stopped.fulfill()
            })
        return (Connect(transport: transport, retryPolicy: nil).stream(Route("/open", baseURL: base)), stopped)
    }

    private let tooLong = String(repeating: "x", count: 64)

    /// A line too long ends the lines: the transfer stops at once, though the caller keeps the iterator (it ran on
    /// until the iterator was released).
    func testALineTooLongStopsTheTransferWhileTheIteratorIsKept() async throws {
        let (stream, stopped) = openStream("ok\n" + tooLong)
        var lines = ResponseLines(stream, maximumLineLength: 16).makeAsyncIterator()

        let first = try await lines.next()
        XCTAssertEqual(first, "ok")
        do {
            _ = try await lines.next()
            XCTFail("the line too long must fail the iteration")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .responseTooLarge)
        }
        await fulfillment(of: [stopped], timeout: 10)
        let after = try await lines.next()
        XCTAssertNil(after)
    }

    /// A line that does not decode ends the JSON lines: the transfer stops though the caller keeps the iterator.
    func testAJSONLineThatFailsToDecodeStopsTheTransferWhileTheIteratorIsKept() async throws {
        let (stream, stopped) = openStream("1\nnot json\n")
        var values = stream.jsonLines(of: Int.self).makeAsyncIterator()

        let first = try await values.next()
        XCTAssertEqual(first, 1)
        do {
            _ = try await values.next()
            XCTFail("the line must fail to decode")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .decoding)
        }
        await fulfillment(of: [stopped], timeout: 10)
        let after = try await values.next()
        XCTAssertNil(after)
    }

    /// A line too long ends the events: the transfer stops though the caller keeps the iterator.
    func testALineTooLongStopsTheEventsTransferWhileTheIteratorIsKept() async throws {
        let (stream, stopped) = openStream("data: a\n\n" + tooLong)
        var events = ResponseEvents(stream, maximumLineLength: 16).makeAsyncIterator()

        let first = try await events.next()
        XCTAssertEqual(first?.data, "a")
        do {
            _ = try await events.next()
            XCTFail("the line too long must fail the iteration")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .responseTooLarge)
        }
        await fulfillment(of: [stopped], timeout: 10)
        let after = try await events.next()
        XCTAssertNil(after)
    }

    /// A line too long ends the batches of events: the transfer stops though the caller keeps the iterator.
    func testALineTooLongStopsTheBatchesTransferWhileTheIteratorIsKept() async throws {
        let (stream, stopped) = openStream("data: a\n\n" + tooLong)
        var batches = ResponseEventBatches(stream, maximumLineLength: 16).makeAsyncIterator()

        let first = try await batches.next()
        XCTAssertEqual(first?.map(\.data.string), ["a"])
        do {
            _ = try await batches.next()
            XCTFail("the line too long must fail the iteration")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .responseTooLarge)
        }
        await fulfillment(of: [stopped], timeout: 10)
        let after = try await batches.next()
        XCTAssertNil(after)
    }
}

/// What a loop over `sequence` got: each element as text, then how the loop ended ("end", or the kind of the
/// `ConnectError` it threw, or the type of another error). `afterFirst` runs once the first element is in.
private func collect<Elements: AsyncSequence & Sendable>(
    _ sequence: Elements, afterFirst: @Sendable () -> Void = {}
) async -> [String] {
    var outcome: [String] = []
    do {
        for try await element in sequence {
            outcome.append("\(element)")
            if outcome.count == 1 { afterFirst() }
        }
        outcome.append("end")
    } catch let error as ConnectError {
        outcome.append("\(error.kind)")
    } catch {
        outcome.append("\(type(of: error))")
    }
    return outcome
}
