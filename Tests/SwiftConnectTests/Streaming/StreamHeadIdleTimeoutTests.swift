import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `StreamingOptions.idleTimeout` bounds the wait for a streamed response's head too, from when the request reaches
/// the transport: a server that accepts the request and never answers fails the call with the idle timeout's
/// `.timedOut` and has its exchange stopped, on every engine, where a stream with no deadline waited for ever.
final class StreamHeadIdleTimeoutTests: XCTestCase {
    private var server: LocalServer!
    private let eventStream = ["Content-Type": "text/event-stream"]

    override func setUpWithError() throws {
        server = try LocalServer.started()
    }

    override func tearDown() {
        server.stop()
    }

    /// The engines under test: URLSession and the tests' socket engine (which gets every rule from the core).
    private func engines() -> [(name: String, transport: any Transport)] {
        [("URLSession", URLSessionTransport()), ("SocketEngine", SocketEngine())]
    }

    /// A server that takes the request and never finishes its head: the stream fails with the idle timeout's
    /// `.timedOut`, worded for the head (no response head within the limit, not a quiet body's "received no bytes"),
    /// and the engine's exchange stops (the server sees the connection close).
    func testAServerThatNeverAnswersTimesTheStreamOutOnEveryEngine() async throws {
        server.route("GET", "/silent") { _ in LocalServer.Response.status(200).withFault(.neverFinishHeaders) }
        for (name, transport) in engines() {
            let connect = Connect(transport: transport, retryPolicy: nil)
            let stream = connect.stream(
                Route("/silent", baseURL: server.baseURL, timeout: .infinity),
                // 1 s: the request reaches the server well before (it is counted below), however busy the machine.
                streaming: StreamingOptions(idleTimeout: 1))
            let error = try await failure(of: stream, name)
            XCTAssertEqual(error?.kind, .timedOut, "\(name): \(String(describing: error))")
            let message = error?.message ?? ""
            XCTAssertTrue(message.contains("StreamingOptions.idleTimeout"), "\(name): \(message)")
            // The head's own wording: no byte of the answer came, so the body's "received no bytes" would mislead.
            XCTAssertTrue(message.contains("no response head within 1.0 s"), "\(name): \(message)")
            XCTAssertFalse(message.contains("received no bytes"), "\(name): \(message)")
            XCTAssertEqual(error?.request?.url?.path, "/silent", "\(name): the error names the request sent")
            XCTAssertTrue(server.waitUntilIdle(timeout: 30), "\(name): the exchange was not stopped")
        }
        XCTAssertEqual(server.requestCount(for: "GET", path: "/silent"), 2)
    }

    /// A streamed call whose streamed upload takes longer than the idle timeout (sending the request counts as the
    /// wait for its head, a documented decision): the call fails with the idle timeout's typed error, naming
    /// `StreamingOptions.idleTimeout`, and the exchange is stopped, the body's producer no longer asked for more.
    func testAStreamedUploadLongerThanTheIdleTimeoutFailsWithTheIdleTimeoutOnEveryEngine() async throws {
        server.route("POST", "/upload") { _ in .status(204) }
        for (name, transport) in engines() {
            // One chunk, then nothing until the end of the test: an upload still under way when the limit passes.
            let (chunks, producer) = AsyncStream<Data>.makeStream()
            producer.yield(Data("first part".utf8))
            defer { producer.finish() }
            let uploading = AnyMiddleware { request, _, next in
                var request = request
                request.body = .stream(ConnectRequest.OneShotStream(chunks))
                return next(request)
            }
            let connect = Connect(transport: transport, retryPolicy: nil)
            let stream = connect.stream(
                Route("/upload", baseURL: server.baseURL, method: .post, timeout: .infinity),
                options: RequestOptions(middlewares: [uploading]), streaming: StreamingOptions(idleTimeout: 0.3))
            let error = try await failure(of: stream, name)
            XCTAssertEqual(error?.kind, .timedOut, "\(name): \(String(describing: error))")
            XCTAssertEqual(error?.urlError?.code, .timedOut, "\(name)")
            let message = error?.message ?? ""
            XCTAssertTrue(message.contains("StreamingOptions.idleTimeout"), "\(name): \(message)")
            // The head's own wording: no byte of the answer came, so the body's "received no bytes" would mislead.
            XCTAssertTrue(message.contains("no response head within 0.3 s"), "\(name): \(message)")
            XCTAssertFalse(message.contains("received no bytes"), "\(name): \(message)")
            XCTAssertEqual(error?.request?.url?.path, "/upload", "\(name): the error names the request sent")
            XCTAssertTrue(server.waitUntilIdle(timeout: 30), "\(name): the exchange was not stopped")
        }
    }

    /// A head the server holds back, then sends within the idle timeout, starts the stream as usual: the body is read
    /// whole, and the wait for the head leaves no timer behind that cuts it.
    func testAHeadThatComesWithinTheIdleTimeoutStartsTheStream() async throws {
        let arrived = Guarded<[Promise<Void>]>([Promise(), Promise()])
        let release = DispatchSemaphore(value: 0)
        let calls = Guarded(0)
        server.route("GET", "/slow") { _ in
            let call = calls.withLock {
                $0 += 1
                return $0 - 1
            }
            arrived.withLock { $0[call] }.succeed(())
            // Held until the test has seen the request arrive, unsent.
            release.wait()
            return LocalServer.Response(
                status: 200, headers: [("Content-Type", "text/event-stream")], body: Data("data: late\n\n".utf8))
        }
        defer { for _ in 0..<2 { release.signal() } }
        for (index, (name, transport)) in engines().enumerated() {
            let connect = Connect(transport: transport, retryPolicy: nil)
            let stream = connect.stream(
                Route("/slow", baseURL: server.baseURL, timeout: .infinity),
                streaming: StreamingOptions(idleTimeout: 20))
            let reading = Task { () -> [String] in
                var events: [String] = []
                for try await event in stream.events { events.append(event.data) }
                return events
            }
            try await arrived.withLock { $0[index] }.future.value(timeout: 10)
            XCTAssertFalse(stream.head.isCompleted, "\(name): the head came before the server sent it")
            release.signal()
            let events = try await reading.value
            XCTAssertEqual(events, ["late"], name)
        }
    }

    /// An `EventSource` whose reconnection gets no head within the idle timeout treats it as a body that went quiet:
    /// that connection is stopped and the source connects again, from the last event ID.
    func testAnEventSourceReconnectsWhenAReconnectionGetsNoHead() async throws {
        let fake = FakeTransport()
        fake.stub(
            .get, "/events",
            with: [
                .stream([Data("id: 4\ndata: a\n\n".utf8)], headers: eventStream),
                .stream([Data("data: b\n\n".utf8)], headers: eventStream),
                .status(204),
            ])
        let transport = HeadlessSecondAnswer(fake: fake)
        let connect = Connect(transport: transport, retryPolicy: nil)
        let source = connect.eventSource(
            Route("/events", baseURL: URL(string: "https://api.example.com")!, timeout: .infinity),
            streaming: StreamingOptions(idleTimeout: 1), reconnection: EventSourceReconnection(delay: 0))
        let outcome = Promise<[String]>()
        let reading = Task {
            var received: [String] = []
            do {
                for try await event in source { received.append("\(event.id ?? "-") \(event.data)") }
                outcome.succeed(received)
            } catch {
                outcome.fail(error)
            }
        }
        defer { reading.cancel() }
        let received = try await outcome.future.value(timeout: 10)
        XCTAssertEqual(received, ["4 a", "4 b"])
        try await transport.stopped.future.value(timeout: 10)
        XCTAssertEqual(transport.requests.withLock { $0 }, 4)
        XCTAssertEqual(fake.requests.first?.value(forHTTPHeaderField: "Last-Event-ID"), nil)
        XCTAssertEqual(fake.requests.dropFirst().first?.value(forHTTPHeaderField: "Last-Event-ID"), "4")
    }

    /// The error `stream` fails with, read in a task for at most 10 s: a stream still waiting then fails the test
    /// instead of holding it (the task is cancelled).
    private func failure(of stream: ResponseStream, _ name: String) async throws -> ConnectError? {
        let outcome = Promise<ConnectError?>()
        let reading = Task {
            do {
                for try await _ in stream {}
                outcome.succeed(nil)
            } catch {
                outcome.succeed(error as? ConnectError)
            }
        }
        defer { reading.cancel() }
        guard let error = try? await outcome.future.value(timeout: 10) else {
            XCTFail("\(name): the stream still waited for its head 10 s after an idle timeout of 0.3 s")
            stream.cancel()
            return nil
        }
        return error
    }
}

/// A transport that answers as `fake` does, but for its second request, whose head never comes: the exchange waits
/// until it is cancelled (`stopped`), its promise held as a transport holds an exchange in flight.
private struct HeadlessSecondAnswer: Transport {
    let fake: FakeTransport
    let requests = Guarded(0)
    let stopped = Promise<Void>()
    private let pending = Promise<ConnectResponse>()

    func send(_ request: URLRequest) -> Future<ConnectResponse> {
        answer(request) { fake.send(request) }
    }

    func send(_ request: URLRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
        answer(request) { fake.send(request, transfer: transfer) }
    }

    private func answer(_ request: URLRequest, else other: () -> Future<ConnectResponse>) -> Future<ConnectResponse> {
        let number = requests.withLock {
            $0 += 1
            return $0
        }
        guard number == 2 else { return other() }
        let stopped = stopped
        pending.setCancelHandler { stopped.succeed(()) }
        return pending.future
    }
}
