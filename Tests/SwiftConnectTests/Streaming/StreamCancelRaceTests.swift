import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A streamed call that fails while its answer is on its way up the middlewares (cancelled, or past its deadline)
/// stops that answer's body: nobody will read it, and it held its transfer (and, on a real engine, its connection)
/// for as long as the server kept sending, the engine paused by back-pressure once the buffer filled.
final class StreamCancelRaceTests: XCTestCase {
    private struct Feed: Connector {
        var timeout: TimeInterval = .infinity
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/feed" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
    }

    /// A client whose transport streams `/feed` until its reader stops (then `stopped` completes), and whose
    /// middleware holds each answer until `gate` opens (`answered` completes when it has one).
    private func heldFeed() -> (connect: Connect, answered: Promise<Void>, gate: Promise<Void>, stopped: Promise<Void>)
    {
        let transport = FakeTransport()
        let stopped = Promise<Void>()
        transport.stub(
            .get, "/feed",
            with: .stream(headers: ["Content-Type": "text/event-stream"]) { body in
                while await body.send(Data("data: x\n\n".utf8)) {}
                stopped.succeed(())
            })
        let answered = Promise<Void>()
        let gate = Promise<Void>()
        let holding = AnyMiddleware { request, _, next in
            next(request).flatMap { response in
                answered.completeIfPending(with: .success(()))
                return gate.future.map { _ in response }
            }
        }
        return (Connect(transport: transport, middlewares: [holding], retryPolicy: nil), answered, gate, stopped)
    }

    func testAStreamCancelledWhileAMiddlewareHoldsItsAnswerStopsTheBody() async throws {
        let (connect, answered, gate, stopped) = heldFeed()
        let stream = connect.stream(Feed())
        try await answered.future.value(timeout: 10)

        stream.cancel()
        gate.succeed(())

        try await stopped.future.value(timeout: 10)
        do {
            _ = try await stream.response
            XCTFail("a cancelled stream has no head")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .cancelled)
        }
    }

    func testAStreamPastItsDeadlineWhileAMiddlewareHoldsItsAnswerStopsTheBody() async throws {
        let (connect, answered, _, stopped) = heldFeed()
        let stream = connect.stream(Feed(timeout: 0.2))
        try await answered.future.value(timeout: 10)

        do {
            _ = try await stream.response
            XCTFail("the held answer must miss the deadline")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .timedOut)
        }
        try await stopped.future.value(timeout: 10)
    }

    func testABuiltRequestsStreamCancelledWhileAMiddlewareHoldsItsAnswerStopsTheBody() async throws {
        let (connect, answered, gate, stopped) = heldFeed()
        let stream = connect.stream(ConnectRequest(url: URL(string: "https://api.example.com/feed")!))
        try await answered.future.value(timeout: 10)

        stream.cancel()
        gate.succeed(())

        try await stopped.future.value(timeout: 10)
    }

    /// A middleware that asks for another attempt after a streamed 200 (a stale answer it will not hand up, say): the
    /// first answer's body, which nobody reads, stops. It held its transfer, and on a real engine its connection, for
    /// as long as the server sent (for ever here), once the buffer filled.
    func testAStreamedAnswerAnotherAttemptReplacesStopsItsBody() async throws {
        let transport = FakeTransport()
        let (firstStopped, secondStopped) = (Promise<Void>(), Promise<Void>())
        func feed(_ stopped: Promise<Void>) -> FakeResponse {
            .stream(headers: ["Content-Type": "text/event-stream"]) { body in
                while await body.send(Data("data: x\n\n".utf8)) {}
                stopped.succeed(())
            }
        }
        transport.stub(.get, "/feed", with: [feed(firstStopped), feed(secondStopped)])
        let retryingOnce = AnyMiddleware { request, context, next in
            next(request).map { response in
                if context.attempt == 1 { context.retryAdvice.request(after: 0) }
                return response
            }
        }
        let stream = Connect(transport: transport, middlewares: [retryingOnce], retryPolicy: nil).stream(Feed())

        var events = stream.events.makeAsyncIterator()
        _ = try await events.next()
        XCTAssertEqual(transport.requests.count, 2)
        try await firstStopped.future.value(timeout: 10)
        stream.cancel()
        try await secondStopped.future.value(timeout: 10)
    }

    /// A middleware that refuses a streamed answer (a signature check, say) fails the call: the body it dropped stops.
    func testAStreamedAnswerAMiddlewareRefusesStopsItsBody() async throws {
        let transport = FakeTransport()
        let stopped = Promise<Void>()
        transport.stub(
            .get, "/feed",
            with: .stream(headers: ["Content-Type": "text/event-stream"]) { body in
                while await body.send(Data("data: x\n\n".utf8)) {}
                stopped.succeed(())
            })
        let refusing = AnyMiddleware { request, _, next in
            next(request).flatMap { _ in Future(error: ConnectError(.rejected, message: "unsigned answer")) }
        }
        let stream = Connect(transport: transport, middlewares: [refusing], retryPolicy: nil).stream(Feed())

        do {
            _ = try await stream.response
            XCTFail("the middleware refuses the answer")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .rejected)
        }
        try await stopped.future.value(timeout: 10)
    }
}
