import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Deadlines in instant replay: `RecordingTransport` judges them by the recorded times, so a test of a timeout or of
/// a stream's idle timeout gives the same answer at once as it would in real time, whatever the machine's speed.
final class RecordingDeadlineTests: XCTestCase {
    private var server: LocalServer!
    private var folder: URL!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        folder = try makeRecordingFolder(for: self)
    }

    override func tearDown() {
        server.stop()
        server = nil
    }

    private var file: URL { folder.appendingPathComponent("deadlines.har") }

    private func replayer() -> RecordingTransport {
        RecordingTransport(fileURL: file, wrapping: nil, mode: .replay)
    }

    /// Records one exchange of `path`, stops the server, and rewrites the entry with `edit`.
    private func record(_ path: String, streaming: Bool, edit: (inout HAR.Entry) -> Void) throws {
        let recorder = RecordingTransport(fileURL: file, wrapping: URLSessionTransport(), mode: .record)
        let connect = Connect(transport: recorder, retryPolicy: nil)
        let route = Route(path, baseURL: server.baseURL, timeout: 10)
        if streaming {
            let done = DispatchSemaphore(value: 0)
            Task {
                for try await _ in connect.stream(route) {}
                done.signal()
            }
            XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        } else {
            _ = try connect.request(route).wait()
        }
        server.stop()
        var entry = try XCTUnwrap(recorder.entries.first)
        edit(&entry)
        try HAR(entries: [entry]).encoded().write(to: file)
    }

    /// Reads the stream of `path` from the replay, with `timeout` and `idleTimeout`: the pieces and how it ended.
    private func replayStream(
        _ path: String, timeout: TimeInterval, idleTimeout: TimeInterval?
    ) async -> (pieces: [String], error: ConnectError?) {
        let connect = Connect(transport: replayer(), retryPolicy: nil)
        let stream = connect.stream(
            Route(path, baseURL: server.baseURL, timeout: timeout),
            streaming: StreamingOptions(idleTimeout: idleTimeout))
        var pieces: [String] = []
        do {
            for try await piece in stream { pieces.append(String(decoding: piece, as: UTF8.self)) }
            return (pieces, nil)
        } catch {
            XCTAssertTrue(error is ConnectError, "\(error)")
            return (pieces, error as? ConnectError)
        }
    }

    func testAnAnswerRecordedAfterTheDeadlineTimesOutAtOnceInReplay() throws {
        // Given: an answer recorded as coming after 3 s (edited, as a slow server's would be)
        server.route("GET", "/slow") { _ in .json(["ok": true]) }
        try record("/slow", streaming: false) { entry in
            entry.time = 3_000
            entry.timings = HAR.Timings(send: 0, wait: 3_000, receive: 0)
        }
        // When: replayed at once, by a call of 1 s
        let start = DispatchTime.now()
        let short = Connect(transport: replayer(), retryPolicy: nil)
            .request(Route("/slow", baseURL: server.baseURL, timeout: 1))
        let error = try XCTUnwrap(short.waitForResult(timeout: 10).failure as? ConnectError)
        // Then: the client's own timeout, at once (well before the second the call had)
        XCTAssertEqual(error.kind, .timedOut)
        XCTAssertTrue(error.message.contains("timeout of 1.0 s"), error.message)
        XCTAssertLessThan(Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9, 1)
        // And: a call of 5 s gets the answer
        let long = Connect(transport: replayer(), retryPolicy: nil)
            .request(Route("/slow", baseURL: server.baseURL, timeout: 5))
        XCTAssertNoThrow(try long.wait())
    }

    func testACallTheClientsDeadlineEndedIsRecordedAsTimedOutAndReplayedSo() throws {
        // Given: a server that never answers in time, and a call of 0.3 s recorded
        server.route("GET", "/silent") { _ in LocalServer.Response.json(["late": true]).delayed(by: 30) }
        let recorder = RecordingTransport(fileURL: file, wrapping: URLSessionTransport(), mode: .record)
        let route = Route("/silent", baseURL: server.baseURL, timeout: 0.3)
        let live = try Connect(transport: recorder, retryPolicy: nil).request(route).waitForResult(timeout: 10)
        XCTAssertEqual((live.failure as? ConnectError)?.kind, .timedOut)
        XCTAssertTrue(recorder.waitUntilRecorded())
        server.stop()
        // Then: the client's deadline cancelled the exchange, and the recording says it timed out
        XCTAssertEqual(recorder.entries.first?.failure?.kind, ConnectError.Kind.timedOut.rawValue)
        // And: replay times out the same way, at once
        let replayed = try Connect(transport: replayer(), retryPolicy: nil).request(route).waitForResult(timeout: 10)
        XCTAssertEqual((replayed.failure as? ConnectError)?.kind, .timedOut)
    }

    /// A streamed call whose head never came within its idle timeout (`StreamingOptions.idleTimeout` bounds the wait
    /// for the head from the hand-off to the transport): the client cut the exchange with the idle timeout's error,
    /// which the recording keeps, and a replay fails the same typed way; it was taken for the test's own cancellation
    /// and left out, a replay then finding no exchange to answer with.
    func testAStreamWhoseHeadNeverCameWithinItsIdleTimeoutIsRecordedAsTimedOutAndReplayedSo() async throws {
        // Given: a server that takes the request and never finishes its head
        server.route("GET", "/headless") { _ in LocalServer.Response.status(200).withFault(.neverFinishHeaders) }
        let recorder = RecordingTransport(fileURL: file, wrapping: URLSessionTransport(), mode: .record)
        let route = Route("/headless", baseURL: server.baseURL, timeout: .infinity)
        // When: streamed with an idle timeout of 0.3 s, recorded
        let live = await streamError(
            Connect(transport: recorder, retryPolicy: nil).stream(
                route, streaming: StreamingOptions(idleTimeout: 0.3)))
        XCTAssertEqual(live?.kind, .timedOut, "\(String(describing: live))")
        XCTAssertTrue(recorder.waitUntilRecorded())
        server.stop()
        // Then: the recording says the exchange timed out, with the idle timeout's error
        let recorded = try XCTUnwrap(recorder.entries.first?.failure, "the exchange was not recorded")
        XCTAssertEqual(recorded.kind, ConnectError.Kind.timedOut.rawValue)
        XCTAssertTrue(recorded.message.contains("StreamingOptions.idleTimeout"), recorded.message)
        XCTAssertTrue(recorded.message.contains("no response head within 0.3 s"), recorded.message)
        XCTAssertEqual(recorded.urlErrorCode, URLError.Code.timedOut.rawValue)
        // And: a replay fails the same typed way, naming the idle timeout
        let replayed = await streamError(
            Connect(transport: replayer(), retryPolicy: nil).stream(
                route, streaming: StreamingOptions(idleTimeout: 0.3)))
        XCTAssertEqual(replayed?.kind, .timedOut, "\(String(describing: replayed))")
        XCTAssertTrue(
            replayed?.message.contains("StreamingOptions.idleTimeout") ?? false, "\(String(describing: replayed))")
        XCTAssertTrue(
            replayed?.message.contains("no response head within 0.3 s") ?? false, "\(String(describing: replayed))")
        XCTAssertEqual(replayed?.urlError?.code, .timedOut)
    }

    /// A streamed answer whose head came later than the idle timeout of the replaying call: live, the idle timeout
    /// bounds the wait for the head and the call fails; an instant replay judges the recorded wait the same way, as
    /// it does the call's deadline, rather than answering at once.
    func testAStreamWhoseHeadWasRecordedLaterThanTheIdleTimeoutTimesOutInInstantReplay() async throws {
        // Given: a stream whose head was recorded as coming after 3 s (edited, as a slow server's would be)
        server.route("GET", "/late-head") { _ in
            .stream(contentLength: nil, contentType: "text/plain") { write in _ = write(Data("a".utf8)) }
        }
        try record("/late-head", streaming: true) { entry in
            entry.timings = HAR.Timings(send: 0, wait: 3_000, receive: 0)
            entry.chunks = [HAR.Chunk(time: 3_000, size: 1)]
        }
        // When / Then: an idle timeout of 1 s fails with the idle timeout's error, at once
        let start = DispatchTime.now()
        let idle = await replayStream("/late-head", timeout: .infinity, idleTimeout: 1)
        XCTAssertEqual(idle.pieces, [])
        XCTAssertEqual(idle.error?.kind, .timedOut)
        XCTAssertTrue(
            idle.error?.message.contains("StreamingOptions.idleTimeout") ?? false, "\(String(describing: idle.error))")
        XCTAssertTrue(
            idle.error?.message.contains("no response head within 1.0 s") ?? false, "\(String(describing: idle.error))")
        XCTAssertLessThan(Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9, 1)
        // And: an idle timeout longer than the wait gets the body
        let whole = await replayStream("/late-head", timeout: .infinity, idleTimeout: 5)
        XCTAssertEqual(whole.pieces, ["a"])
        XCTAssertNil(whole.error)
    }

    /// The error `stream` fails with, read in a task for at most 10 s (then cancelled, the test failing).
    private func streamError(_ stream: ResponseStream) async -> ConnectError? {
        let outcome = Promise<ConnectError?>()
        let reading = Task {
            do {
                for try await _ in stream {}
                outcome.succeed(nil)
            } catch {
                XCTAssertTrue(error is ConnectError, "\(error)")
                outcome.succeed(error as? ConnectError)
            }
        }
        defer { reading.cancel() }
        guard let error = try? await outcome.future.value(timeout: 10) else {
            XCTFail("the stream still ran 10 s after an idle timeout of 0.3 s")
            stream.cancel()
            return nil
        }
        return error
    }

    func testAStreamStopsAtItsFirstPieceRecordedAfterTheDeadlineOrASilenceLongerThanItsIdleTimeout() async throws {
        // Given: three pieces recorded 0, 1.5 and 3 s after the request (edited). Replayed at once, judged by those
        // times; the limits are long enough that the client's real timers, armed meanwhile, never end a replay first.
        server.route("GET", "/pieces") { _ in
            .stream(contentLength: nil, contentType: "text/plain") { write in
                for piece in ["a", "b", "c"] { guard write(Data(piece.utf8)) else { return } }
            }
        }
        try record("/pieces", streaming: true) { entry in
            entry.timings = HAR.Timings(send: 0, wait: 0, receive: 3000)
            entry.chunks = [
                HAR.Chunk(time: 0, size: 1), HAR.Chunk(time: 1500, size: 1), HAR.Chunk(time: 3000, size: 1),
            ]
        }
        // When / Then: an idle timeout of 1 s ends after the first piece, with the client's own error
        let idle = await replayStream("/pieces", timeout: 20, idleTimeout: 1)
        XCTAssertEqual(idle.pieces, ["a"])
        XCTAssertEqual(idle.error?.kind, .timedOut)
        XCTAssertTrue(
            idle.error?.message.contains("StreamingOptions.idleTimeout") ?? false, "\(String(describing: idle.error))")
        XCTAssertTrue(
            idle.error?.message.contains("received no bytes for 1.0 s") ?? false, "\(String(describing: idle.error))")
        // A deadline of 2 s ends after the second
        let deadline = await replayStream("/pieces", timeout: 2, idleTimeout: nil)
        XCTAssertEqual(deadline.pieces, ["a", "b"])
        XCTAssertEqual(deadline.error?.kind, .timedOut)
        XCTAssertTrue(
            deadline.error?.message.contains("timeout of 2.0 s") ?? false, "\(String(describing: deadline.error))")
        // Limits the recorded times keep: every piece
        let whole = await replayStream("/pieces", timeout: 20, idleTimeout: 2)
        XCTAssertEqual(whole.pieces, ["a", "b", "c"])
        XCTAssertNil(whole.error)
    }
}

extension Result {
    /// The error, if this is a failure.
    fileprivate var failure: Failure? {
        guard case .failure(let error) = self else { return nil }
        return error
    }
}
