import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The connector's `timeout` bounds a whole stream, as `Connect.stream` says, on a transport of the app's (or
/// `FakeTransport`) as on the engines: the head completes the call, so the body is held to the deadline apart.
final class StreamDeadlineTests: XCTestCase {
    private let base = URL(string: "https://api.example.com")!

    /// A body that goes quiet after its first chunk: the reader gets that chunk, then `.timedOut` once the deadline
    /// passes, and the transport's producer is stopped (cancelled), not left waiting.
    func testTheDeadlineEndsAQuietStreamAfterItsChunksAndStopsTheTransfer() async throws {
        let transport = FakeTransport()
        let stopped = Promise<Bool>()
        transport.stub(
            .get, "/feed",
            with: .stream { body in
                guard await body.send(Data("first".utf8)) else { return }
                // Quiet until stopped: the wait ends only when the transfer is cancelled.
                await waitUntilCancelled()
                stopped.succeed(Task.isCancelled)
            })
        let connect = Connect(transport: transport, retryPolicy: nil)
        let outcome = try await read(connect.stream(Route("/feed", baseURL: base, timeout: 0.5)))
        XCTAssertEqual(outcome.chunks, ["first"])
        let message = outcome.error?.message ?? "no error"
        XCTAssertEqual(outcome.error?.kind, .timedOut, message)
        XCTAssertTrue(message.contains("timeout of 0.5 s"), message)
        let cancelled = try await stopped.future.value(timeout: 10)
        XCTAssertTrue(cancelled, "the producer was not stopped")
    }

    /// The deadline applies to the relayed stream too (a size limit counts the bytes, so the body goes through a
    /// relay), and a body that ends before it is not touched.
    func testTheDeadlineEndsACountedStreamAndSparesOneThatEndsInTime() async throws {
        let transport = FakeTransport()
        transport.stub(
            .get, "/quiet",
            with: .stream { body in
                guard await body.send(Data("first".utf8)) else { return }
                await waitUntilCancelled()
            })
        transport.stub(.get, "/short", with: .stream([Data("a".utf8), Data("b".utf8)]))
        let connect = Connect(
            transport: transport, retryPolicy: nil, settings: Connect.Settings(maxResponseBytes: 1 << 20))
        let quiet = try await read(connect.stream(Route("/quiet", baseURL: base, timeout: 0.5)))
        XCTAssertEqual(quiet.chunks, ["first"])
        XCTAssertEqual(quiet.error?.kind, .timedOut, "\(String(describing: quiet.error))")
        let short = try await read(connect.stream(Route("/short", baseURL: base, timeout: 0.5)))
        XCTAssertEqual(short.chunks, ["a", "b"])
        XCTAssertNil(short.error)
    }

    /// The connector's `timeout` bounds the whole stream, from the call's start: time the call spent before its
    /// request reached the transport (a queue, a retry's wait, a token refresh; here a middleware that holds it
    /// 1.5 s) is not given to the body again. The call's own timer ends with the head; the body's, armed when the
    /// request was sent, ran a whole `timeout` from there: a 2 s stream ended after 3.5 s. (Wide margins: 2 s, 1.5 s
    /// held, the failure expected within 3 s.)
    func testTheDeadlineCountsTheTimeTheCallSpentBeforeItsRequestWasSent() async throws {
        struct Holding: Middleware {
            func intercept(
                _ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next
            ) -> Future<ConnectResponse> {
                let held = Promise<Void>()
                DispatchQueue.global().asyncAfter(deadline: .now() + 1.5) { held.succeed(()) }
                let request = copy request
                return held.future.flatMap { next(request) }
            }
        }
        let transport = FakeTransport()
        transport.stub(
            .get, "/feed",
            with: .stream { body in
                guard await body.send(Data("first".utf8)) else { return }
                await waitUntilCancelled()
            })
        let connect = Connect(transport: transport, middlewares: [Holding()], retryPolicy: nil)
        let started = Date()
        let outcome = try await read(connect.stream(Route("/feed", baseURL: base, timeout: 2)))
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertEqual(outcome.chunks, ["first"])
        XCTAssertEqual(outcome.error?.kind, .timedOut, "\(String(describing: outcome.error))")
        XCTAssertTrue(
            outcome.error?.message.contains("timeout of 2.0 s") == true, "\(String(describing: outcome.error))")
        XCTAssertLessThan(elapsed, 3, "the body was given a whole timeout after the request was sent")
    }

    /// Reads `stream` to its end in a task, for at most 10 s: a stream the deadline does not end fails the test
    /// instead of keeping it waiting (the task is cancelled).
    private func read(_ stream: ResponseStream) async throws -> (chunks: [String], error: ConnectError?) {
        let outcome = Promise<(chunks: [String], error: ConnectError?)>()
        let reading = Task {
            var chunks: [String] = []
            do {
                for try await chunk in stream { chunks.append(String(decoding: chunk, as: UTF8.self)) }
                outcome.succeed((chunks, nil))
            } catch {
                outcome.succeed((chunks, error as? ConnectError))
            }
        }
        defer { reading.cancel() }
        guard let result = try? await outcome.future.value(timeout: 10) else {
            XCTFail("the stream was still open 10 s after a deadline of 0.5 s")
            return ([], nil)
        }
        return result
    }
}
