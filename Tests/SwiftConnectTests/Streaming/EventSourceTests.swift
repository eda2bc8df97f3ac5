import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `Connect.eventSource`: the opt-in reconnecting mode of server-sent events, which resumes with `Last-Event-ID`
/// and honours `retry:` (issue 25, item 2).
final class EventSourceTests: XCTestCase {
    private struct Feed: Connector {
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/events" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
    }

    private let eventStream = ["Content-Type": "text/event-stream"]

    private func sse(_ text: String, endingWith failure: (any Error)? = nil) -> FakeResponse {
        .stream([Data(text.utf8)], headers: eventStream, endingWith: failure)
    }

    func testItReconnectsWithTheLastEventIDAfterTheServersRetryAndStopsOn204() async throws {
        let transport = FakeTransport()
        transport.stub(
            .get, "/events",
            with: [
                sse("retry: 20\nid: 1\ndata: a\n\nid: 2\ndata: b\n\n"),
                sse("id: 3\ndata: c\n\n", endingWith: URLError(.networkConnectionLost)),
                .status(204),
            ])
        let connect = Connect(transport: transport, retryPolicy: nil)
        let started = Date()

        var received: [String] = []
        for try await event in connect.eventSource(Feed()) { received.append(event.data) }

        XCTAssertEqual(received, ["a", "b", "c"])
        let sent = transport.requests
        XCTAssertEqual(sent.count, 3)
        XCTAssertNil(sent[0].value(forHTTPHeaderField: "Last-Event-ID"))
        XCTAssertEqual(sent[1].value(forHTTPHeaderField: "Last-Event-ID"), "2")
        XCTAssertEqual(sent[2].value(forHTTPHeaderField: "Last-Event-ID"), "3", "a broken stream is resumed too")
        XCTAssertEqual(sent[0].value(forHTTPHeaderField: "Accept"), "text/event-stream")
        // The server's `retry: 20` (ms) replaced the 3 s default: two reconnections well under a second.
        XCTAssertLessThan(Date().timeIntervalSince(started), 2)
    }

    func testAnErrorStatusFailsTheSourceWithoutReconnecting() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: .json(["error": "forbidden"], status: 403))
        let connect = Connect(transport: transport, retryPolicy: nil)
        do {
            for try await _ in connect.eventSource(Feed(), reconnection: EventSourceReconnection(delay: 0)) {}
            XCTFail("a 403 must fail the source")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .serverMessage)
            XCTAssertEqual(error.message, "forbidden")
        }
        XCTAssertEqual(transport.requests.count, 1)
    }

    /// An error status let through (options that accept every status) is no event stream, even in
    /// `text/event-stream`: the source fails at once, without reading its body as events or reconnecting. So does
    /// another 2xx than 200.
    func testAStatusOtherThan200FailsTheSourceEvenWhenLetThrough() async throws {
        for status in [503, 206] {
            let transport = FakeTransport()
            transport.stub(
                .get, "/events", with: .stream([Data("data: x\n\n".utf8)], status: status, headers: eventStream))
            let connect = Connect(transport: transport, retryPolicy: nil)
            var received: [String] = []
            do {
                for try await event in connect.eventSource(
                    Feed(), options: RequestOptions(acceptsEveryStatus: true),
                    reconnection: EventSourceReconnection(delay: 0, maxAttempts: 3))
                {
                    received.append(event.data)
                }
                XCTFail("status \(status) must fail the source")
            } catch let error as ConnectError {
                XCTAssertEqual(error.kind, .rejected, "\(status)")
                XCTAssertTrue(error.message.contains("status \(status)"), error.message)
            }
            XCTAssertEqual(received, [], "\(status)")
            XCTAssertEqual(transport.requests.count, 1, "\(status)")
        }
    }

    /// An event id with a control character (which the standard lets through: only NUL is refused) cannot go in
    /// `Last-Event-ID`: the reconnection goes without it, rather than failing the source.
    func testAnIdNoHeaderCanCarryIsNotSentAndTheSourceGoesOn() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: [sse("id: a\u{1}b\ndata: x\n\n"), .status(204)])
        let connect = Connect(transport: transport, retryPolicy: nil)

        var received: [String] = []
        for try await event in connect.eventSource(Feed(), reconnection: EventSourceReconnection(delay: 0)) {
            received.append(event.data)
        }

        XCTAssertEqual(received, ["x"])
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertNil(transport.requests.last?.value(forHTTPHeaderField: "Last-Event-ID"))
    }

    /// A feed resumed from an ID the app saved (a `Last-Event-ID` on the connector): the events without an `id` carry
    /// it, as they carry the last one after a reconnection, and once the server resets the ID (an empty `id` field)
    /// the saved one is not sent again. Events came with no ID, and the third request resumed from the saved one.
    func testAFeedResumedFromASavedIDStartsFromItUntilTheServerResetsIt() async throws {
        let transport = FakeTransport()
        transport.stub(
            .get, "/events", with: [sse("data: a\n\n"), sse("id\ndata: b\n\n"), sse("data: c\n\n"), .status(204)])
        let connect = Connect(transport: transport, retryPolicy: nil)
        let saved = Route(
            "/events", baseURL: URL(string: "https://api.example.com")!,
            headers: [HTTPHeader(name: "Last-Event-ID", value: "41")])

        var received: [String] = []
        var source = connect.eventSource(saved, reconnection: EventSourceReconnection(delay: 0)).makeAsyncIterator()
        while let event = try await source.next() { received.append("\(event.data) \(event.id ?? "nil")") }

        XCTAssertEqual(received, ["a 41", "b ", "c "], "the reset ID stays in effect after the reconnection")
        XCTAssertEqual(
            transport.requests.map { $0.value(forHTTPHeaderField: "Last-Event-ID") ?? "none" },
            ["41", "41", "none", "none"])
        XCTAssertEqual(source.lastEventID, "")
    }

    /// A reset the server sent in a block without data just before the stream broke: the events of the next
    /// connection carry the reset ID (`""`), as the events after it on the same connection would, and as a browser's
    /// `lastEventId` is the same string across reconnections; `nil` stays for a feed where no `id` ever came. They
    /// carried `nil` ("no ID yet"), so an app saving each event's ID kept the one from before the reset.
    func testAnIDResetBeforeABreakStaysInEffectAfterTheReconnection() async throws {
        let transport = FakeTransport()
        transport.stub(
            .get, "/events",
            with: [
                sse("id: 7\ndata: a\n\nid\n\n", endingWith: URLError(.networkConnectionLost)), sse("data: b\n\n"),
                .status(204),
            ])
        transport.stub(.get, "/plain", with: [sse("data: a\n\n"), sse("data: b\n\n"), .status(204)])
        let connect = Connect(transport: transport, retryPolicy: nil)

        var ids: [String] = []
        for try await event in connect.eventSource(Feed(), reconnection: EventSourceReconnection(delay: 0)) {
            ids.append(event.id ?? "nil")
        }
        var plainIDs: [String] = []
        for try await event in connect.eventSource(
            Route("/plain", baseURL: URL(string: "https://api.example.com")!),
            reconnection: EventSourceReconnection(delay: 0))
        {
            plainIDs.append(event.id ?? "nil")
        }

        XCTAssertEqual(ids, ["7", ""])
        XCTAssertEqual(plainIDs, ["nil", "nil"], "no id ever came: none is in effect")
        XCTAssertEqual(
            transport.requests.prefix(3).map { $0.value(forHTTPHeaderField: "Last-Event-ID") ?? "none" },
            ["none", "none", "none"], "a reset ID is not sent")
    }

    /// A feed resumed from a saved ID, cancelled while it reads its first connection, before any event: the
    /// iterator's last event ID is still the saved one, as its documentation says, so an app that saves it when it
    /// stops keeps its place. It was `""`: the cancellation left before the iterator took the connection's ID.
    func testASourceCancelledBeforeItsFirstEventKeepsTheSavedID() async throws {
        let transport = FakeTransport()
        let reading = Promise<Void>()
        // Comments over the stream's pause threshold (256 KiB): the second `send` returns only once the source has
        // taken the first, so the source is reading the body when the test cancels it.
        let comment = Data((":" + String(repeating: "x", count: 300 << 10) + "\n").utf8)
        transport.stub(
            .get, "/events",
            with: .stream(headers: eventStream) { body in
                guard await body.send(comment), await body.send(comment) else { return }
                reading.completeIfPending(with: .success(()))
            })
        let connect = Connect(transport: transport, retryPolicy: nil)
        let saved = Route(
            "/events", baseURL: URL(string: "https://api.example.com")!,
            headers: [HTTPHeader(name: "Last-Event-ID", value: "41")])

        let task = Task { () -> (outcome: String, lastEventID: String) in
            var source = connect.eventSource(saved, reconnection: EventSourceReconnection(delay: 0))
                .makeAsyncIterator()
            do {
                let event = try await source.next()
                return ("event \(event?.data ?? "nil")", source.lastEventID)
            } catch {
                return ((error as? ConnectError).map { "\($0.kind)" } ?? "\(error)", source.lastEventID)
            }
        }
        try await reading.future.value(timeout: 10)
        task.cancel()
        let result = await task.value

        XCTAssertEqual(result.outcome, "\(ConnectError.Kind.cancelled)")
        XCTAssertEqual(result.lastEventID, "41")
    }

    /// The same, cancelled while the first connection waits for its answer: no request comes with the error to
    /// read the saved ID from, and it was lost the same way.
    func testASourceCancelledBeforeItsFirstAnswerKeepsTheSavedID() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: .never)
        let connect = Connect(transport: transport, retryPolicy: nil)
        let saved = Route(
            "/events", baseURL: URL(string: "https://api.example.com")!,
            headers: [HTTPHeader(name: "Last-Event-ID", value: "41")])

        let task = Task { () -> (outcome: String, lastEventID: String) in
            var source = connect.eventSource(saved, reconnection: EventSourceReconnection(delay: 0))
                .makeAsyncIterator()
            do {
                let event = try await source.next()
                return ("event \(event?.data ?? "nil")", source.lastEventID)
            } catch {
                return ((error as? ConnectError).map { "\($0.kind)" } ?? "\(error)", source.lastEventID)
            }
        }
        _ = try await transport.requestsReceived(count: 1).value(timeout: 10)
        task.cancel()
        let result = await task.value

        XCTAssertEqual(result.outcome, "\(ConnectError.Kind.cancelled)")
        XCTAssertEqual(result.lastEventID, "41")
    }

    /// The same, with the saved ID added by a middleware (one that reads it from the app's storage): the first
    /// request's ID was read before the middlewares ran, so a cancellation before the answer left `""`, which an app
    /// that saves the ID when the source stops wrote over the one it had.
    func testASourceCancelledBeforeItsFirstAnswerKeepsAMiddlewaresSavedID() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: .never)
        let connect = Connect(
            transport: transport,
            middlewares: [AnyMiddleware.adapter { $0.setValue("41", forHTTPHeaderField: "Last-Event-ID") }],
            retryPolicy: nil)

        let task = Task { () -> (outcome: String, lastEventID: String) in
            var source = connect.eventSource(Feed(), reconnection: EventSourceReconnection(delay: 0))
                .makeAsyncIterator()
            do {
                let event = try await source.next()
                return ("event \(event?.data ?? "nil")", source.lastEventID)
            } catch {
                return ((error as? ConnectError).map { "\($0.kind)" } ?? "\(error)", source.lastEventID)
            }
        }
        let sent = try await transport.requestsReceived(count: 1).value(timeout: 10)
        XCTAssertEqual(sent.first?.value(forHTTPHeaderField: "Last-Event-ID"), "41")
        task.cancel()
        let result = await task.value

        XCTAssertEqual(result.outcome, "\(ConnectError.Kind.cancelled)")
        XCTAssertEqual(result.lastEventID, "41")
    }

    /// A feed resumed from a saved ID whose first answer fails the source: the iterator's last event ID is still the
    /// saved one, as its documentation says, so an app that saves it again keeps its place in the feed.
    func testAFirstAnswerThatFailsTheSourceKeepsTheSavedID() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: [.json(["not": "events"])])
        let connect = Connect(transport: transport, retryPolicy: nil)
        let saved = Route(
            "/events", baseURL: URL(string: "https://api.example.com")!,
            headers: [HTTPHeader(name: "Last-Event-ID", value: "41")])

        var source = connect.eventSource(saved, reconnection: EventSourceReconnection(delay: 0)).makeAsyncIterator()
        do {
            _ = try await source.next()
            XCTFail("a JSON answer must fail the source")
        } catch {
            XCTAssertEqual((error as? ConnectError)?.kind, .rejected)
        }
        XCTAssertEqual(source.lastEventID, "41")
    }

    func testAnswerThatIsNotAnEventStreamFailsTheSource() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: .json(["not": "events"]))
        let connect = Connect(transport: transport, retryPolicy: nil)
        do {
            for try await _ in connect.eventSource(Feed(), reconnection: EventSourceReconnection(delay: 0)) {}
            XCTFail("a JSON answer must fail the source")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .rejected)
            XCTAssertTrue(error.message.contains("text/event-stream"), error.message)
        }
        XCTAssertEqual(transport.requests.count, 1)
    }

    /// An empty `Content-Type` fails the source with a message that says so: it read "answered , not
    /// text/event-stream".
    func testAnEmptyContentTypeIsNamedInTheError() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: .stream([Data("data: x\n\n".utf8)], headers: ["Content-Type": ""]))
        let connect = Connect(transport: transport, retryPolicy: nil)
        do {
            for try await _ in connect.eventSource(Feed(), reconnection: EventSourceReconnection(delay: 0)) {}
            XCTFail("an empty Content-Type must fail the source")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .rejected)
            XCTAssertTrue(error.message.contains("an empty Content-Type"), error.message)
        }
    }

    func testItGivesUpAfterTheMostReconnectionsWithoutAnEvent() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: sse(": nothing to say\n\n"))
        let connect = Connect(transport: transport, retryPolicy: nil)
        do {
            let policy = EventSourceReconnection(delay: 0, maxAttempts: 3)
            for try await _ in connect.eventSource(Feed(), reconnection: policy) {}
            XCTFail("an endless run of empty streams must end")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .connectionLost)
            XCTAssertTrue(error.message.contains("3 reconnections"), error.message)
        }
        XCTAssertEqual(transport.requests.count, 4, "the first connection and three reconnections")
    }

    /// A line over the parser's limit is in the stream's bytes: every reconnection would meet it again. It fails the
    /// source, after the events before it, instead of reconnecting for ever (each reconnection having an event, the
    /// limit of attempts never came).
    func testALineOverTheLimitFailsTheSourceInsteadOfReconnecting() async throws {
        let transport = FakeTransport()
        let tooLong = "data: " + String(repeating: "x", count: (1 << 20) + 1) + "\n\n"
        transport.stub(.get, "/events", with: sse("id: 1\ndata: a\n\n" + tooLong))
        let connect = Connect(transport: transport, retryPolicy: nil)
        var received: [String] = []
        do {
            let policy = EventSourceReconnection(delay: 0, maxAttempts: 3)
            for try await event in connect.eventSource(Feed(), reconnection: policy) { received.append(event.data) }
            XCTFail("a line over the limit must fail the source")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .responseTooLarge, "\(error)")
        }
        XCTAssertEqual(received, ["a"])
        XCTAssertEqual(transport.requests.count, 1)
    }

    /// A client-wide size limit counts one connection's body: a long-lived source that goes over it reconnects from
    /// its last event ID, where it used to end for good (the whole body over the limit in a stream of small events).
    func testABodySizeLimitReconnectsFromTheLastEventInsteadOfEndingTheSource() async throws {
        let transport = FakeTransport()
        let padding = ": " + String(repeating: "x", count: 50) + "\n"
        transport.stub(
            .get, "/events",
            with: [
                .stream(
                    [Data(("id: 1\ndata: 1\n\n" + padding).utf8), Data(("id: 2\ndata: 2\n\n" + padding).utf8)],
                    headers: eventStream),
                sse("id: 2\ndata: 2\n\nid: 3\ndata: 3\n\n"),
                .status(204),
            ])
        let connect = Connect(
            transport: transport, retryPolicy: nil, settings: Connect.Settings(maxResponseBytes: 100))
        var received: [String] = []
        for try await event in connect.eventSource(Feed(), reconnection: EventSourceReconnection(delay: 0)) {
            received.append(event.data)
        }
        XCTAssertEqual(received, ["1", "2", "3"])
        XCTAssertEqual(transport.requests.count, 3)
        XCTAssertEqual(transport.requests[1].value(forHTTPHeaderField: "Last-Event-ID"), "1")
    }

    /// A reader that falls behind an engine that cannot pause (URLSession's: its stream's buffer fills) reconnects
    /// from its last event, as after a body size limit: the source ended for good, though a reconnection goes on
    /// where the reader was, and a reader only briefly behind catches up.
    func testAReaderBehindAFullBufferReconnectsFromItsLastEvent() async throws {
        try await assertAReaderBehindAFullBuffer(withIDs: true)
    }

    /// A feed without event IDs has nothing to go on from: a reconnection would replay the same burst, or lose what
    /// came meanwhile, on every round, for ever. Its full buffer fails the source, saying to raise the limit.
    func testAReaderBehindAFullBufferOfAFeedWithoutIDsFailsTheSource() async throws {
        try await assertAReaderBehindAFullBuffer(withIDs: false)
    }

    /// Nor does a saved ID the feed's events never move on (each carries it): the reconnection would go on from the
    /// same place for ever.
    func testAReaderBehindAFullBufferOfAFeedThatNeverMovesItsSavedIDFailsTheSource() async throws {
        try await assertAReaderBehindAFullBuffer(withIDs: false, savedID: "41")
    }

    /// A first connection that offers `a`, then, once the reader has it and while it holds the loop, more than the
    /// buffer's 64 bytes; a second that sends `z`, then the end.
    private func assertAReaderBehindAFullBuffer(withIDs: Bool, savedID: String? = nil) async throws {
        let readerHasTheFirst = Promise<Void>()
        let flooded = Promise<Void>()
        let eventStream = self.eventStream
        let unpausable = FakeResponse.handler { request in
            guard var response = ConnectResponse(request: request, statusCode: 200, headers: eventStream) else {
                return .failure(ConnectError(.transport, message: "no response"))
            }
            // As `URLSessionTransport` feeds a stream: `offer`, which cannot wait for the reader.
            let body = ResponseBodyStream(options: StreamingOptions(bufferLimit: 64))
            response.bodyStream = body
            Task {
                _ = body.offer(Data("\(withIDs ? "id: 1\n" : "")data: a\n\n".utf8))
                try? await readerHasTheFirst.future.value
                for id in 2...20 where body.offer(Data("\(withIDs ? "id: \(id)\n" : "")data: \(id)\n\n".utf8)) {}
                _ = flooded.complete(with: .success(()))
            }
            return .success(response)
        }
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: [unpausable, sse("data: z\n\n"), .status(204)])
        let connect = Connect(transport: transport, retryPolicy: nil)
        var received: [String] = []
        let feed = Route(
            "/events", baseURL: URL(string: "https://api.example.com")!,
            headers: savedID.map { [HTTPHeader(name: "Last-Event-ID", value: $0)] } ?? [])
        do {
            for try await event in connect.eventSource(feed, reconnection: EventSourceReconnection(delay: 0)) {
                received.append(event.data)
                if event.data == "a" {
                    _ = readerHasTheFirst.complete(with: .success(()))
                    try await flooded.future.value
                }
            }
            XCTAssertTrue(withIDs, "a feed without IDs ended without an error: \(received)")
        } catch let error as ConnectError where !withIDs {
            XCTAssertEqual(error.kind, .responseTooLarge)
            XCTAssertTrue(error.message.contains("bufferLimit"), error.message)
            XCTAssertEqual(transport.requests.count, 1, "not reconnected")
            return
        }
        XCTAssertEqual(received.first, "a")
        XCTAssertEqual(received.last, "z", "\(received)")
        XCTAssertEqual(transport.requests.count, 3)
        let resumedFrom = try XCTUnwrap(transport.requests[1].value(forHTTPHeaderField: "Last-Event-ID"))
        XCTAssertEqual(resumedFrom, received.dropLast().last.map { $0 == "a" ? "1" : $0 }, "\(received)")
    }

    /// A connection that reaches the body's size limit before its first event (one event larger than the limit)
    /// fails the source: a reconnection resumes from the same ID, and would meet the same event, for ever.
    func testABodySizeLimitMetBeforeAnyEventFailsTheSource() async throws {
        let transport = FakeTransport()
        transport.stub(
            .get, "/events",
            with: [
                .stream(
                    [Data("id: 1\ndata: 1\n\n".utf8), Data((": " + String(repeating: "x", count: 90) + "\n").utf8)],
                    headers: eventStream),
                sse("id: 2\ndata: " + String(repeating: "x", count: 200) + "\n\n"),
            ])
        let connect = Connect(
            transport: transport, retryPolicy: nil, settings: Connect.Settings(maxResponseBytes: 100))
        var received: [String] = []
        do {
            let reconnection = EventSourceReconnection(delay: 0, maxAttempts: 5)
            for try await event in connect.eventSource(Feed(), reconnection: reconnection) {
                received.append(event.data)
            }
            XCTFail("an event over the size limit must fail the source")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .responseTooLarge)
        }
        XCTAssertEqual(received, ["1"])
        XCTAssertEqual(transport.requests.count, 2, "reconnected after the first connection's event, not after none")
    }

    /// A cancellation while the source waits to reconnect ends it with the same error as one while it reads.
    func testACancellationWhileWaitingToReconnectThrowsConnectErrorCancelled() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: sse("data: a\n\n"))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let source = connect.eventSource(Feed(), reconnection: EventSourceReconnection(delay: 30))
        let outcome = await Task { () -> String in
            var events = source.makeAsyncIterator()
            guard (try? await events.next())?.data == "a" else { return "no first event" }
            withUnsafeCurrentTask { $0?.cancel() }
            do {
                _ = try await events.next()
                return "no error"
            } catch let error as ConnectError {
                return "\(error.kind)"
            } catch {
                return "\(type(of: error))"
            }
        }.value
        XCTAssertEqual(outcome, "\(ConnectError.Kind.cancelled)")
        XCTAssertEqual(transport.requests.count, 1)
    }

    /// `cancelAllRequests()` stops a source waiting to reconnect, as it stops one reading: the wait counts as in
    /// flight. Whether the first stream had ended when the client cancelled (the source then waits 30 s) or not (its
    /// body is cancelled), the next `next()` throws `.cancelled` at once and nothing more is sent.
    func testCancelAllRequestsStopsASourceWaitingToReconnect() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: sse("data: a\n\n"))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let source = connect.eventSource(Feed(), reconnection: EventSourceReconnection(delay: 30))
        let outcome = Promise<String>()
        let first = Promise<Void>()
        let reading = Task { () -> Void in
            var events = source.makeAsyncIterator()
            guard (try? await events.next())?.data == "a" else {
                outcome.succeed("no first event")
                return
            }
            first.succeed(())
            do {
                _ = try await events.next()
                outcome.succeed("no error")
            } catch let error as ConnectError {
                outcome.succeed("\(error.kind)")
            } catch {
                outcome.succeed("\(type(of: error))")
            }
        }
        try await first.future.value(timeout: 10)
        connect.cancelAllRequests()
        let result = try? await outcome.future.value(timeout: 10)
        reading.cancel()
        XCTAssertEqual(result, "\(ConnectError.Kind.cancelled)", "the source still waits to reconnect")
        XCTAssertEqual(transport.requests.count, 1)
    }

    /// A source that failed on its own bytes stops its transfer, though its iterator is still held (by a feed
    /// manager, say): the server's writes end, where they waited on the full buffer until the iterator went.
    func testASourceThatFailedOnItsBytesStopsItsTransferThoughItsIteratorIsHeld() async throws {
        let transport = FakeTransport()
        let stopped = Promise<Void>()
        let tooLong = Data(("data: " + String(repeating: "x", count: (1 << 20) + 1) + "\n\n").utf8)
        transport.stub(
            .get, "/events",
            with: .stream(headers: eventStream) { body in
                guard await body.send(tooLong) else {
                    stopped.succeed(())
                    return
                }
                while await body.send(Data(count: 65_536)) {}
                stopped.succeed(())
            })
        let connect = Connect(transport: transport, retryPolicy: nil)
        var events = connect.eventSource(Feed(), reconnection: EventSourceReconnection(delay: 0))
            .makeAsyncIterator()
        do {
            _ = try await events.next()
            XCTFail("a line over the limit must fail the source")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .responseTooLarge, "\(error)")
        }
        try await stopped.future.value(timeout: 10)
        let after = try await events.next()
        XCTAssertNil(after, "a finished source gives nothing more")
    }

    /// A server's `retry: 0` waits half a second at least, and a second reconnection in a row without an event
    /// twice that: a server that answers and closes at once was called thousands of times a second.
    func testAServersRetryOfZeroAndEventlessReconnectionsBackOff() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: [sse("retry: 0\n\n"), sse(": nothing\n\n"), .status(204)])
        let connect = Connect(transport: transport, retryPolicy: nil)
        let started = ContinuousClock.now
        for try await _ in connect.eventSource(Feed(), reconnection: EventSourceReconnection(delay: 0)) {}
        // At least 0.5 s, then 1 s: sleeps last at least as long as asked, so this bound holds on any machine.
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .milliseconds(1_500))
        XCTAssertEqual(transport.requests.count, 3)
    }

    /// A delay of 0 reconnects at once the first time, but the reconnections after it without an event still back
    /// off: doubling nothing gave nothing, and a server that answers and closes at once was called in a loop.
    func testADelayOfZeroStillBacksOffEventlessReconnections() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: Array(repeating: sse(": nothing\n\n"), count: 6) + [.status(204)])
        let connect = Connect(transport: transport, retryPolicy: nil)
        let started = ContinuousClock.now
        for try await _ in connect.eventSource(Feed(), reconnection: EventSourceReconnection(delay: 0)) {}
        // Waits of 0, 20, 40, 80, 160 and 320 ms: sleeps last at least as long as asked, so this holds anywhere.
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .milliseconds(600))
        XCTAssertEqual(transport.requests.count, 7)
    }

    /// A delay of 0 with a server that sends one event per connection and closes: each event starts the back-off
    /// again, so every reconnection was the first in a row and waited nothing, a loop as fast as the server answered,
    /// for ever. Each reconnection now waits 0.01 s at least (20 of them: 0.2 s at least; a lower bound only, which
    /// sleeps keep on any machine).
    func testADelayOfZeroWaitsAMomentBetweenConnectionsThatEachHadAnEvent() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: Array(repeating: sse("data: tick\n\n"), count: 20) + [.status(204)])
        let connect = Connect(transport: transport, retryPolicy: nil)
        let started = ContinuousClock.now
        var ticks = 0
        for try await _ in connect.eventSource(Feed(), reconnection: EventSourceReconnection(delay: 0)) { ticks += 1 }
        XCTAssertEqual(ticks, 20)
        XCTAssertEqual(transport.requests.count, 21)
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .milliseconds(200))
    }

    /// A negative `maxAttempts` (given to the initializer or set later) means no reconnection: it is clamped to 0,
    /// not read as a limit of -1 ("gave up after -1 reconnections").
    func testANegativeMostAttemptsMeansNoReconnection() async throws {
        XCTAssertEqual(EventSourceReconnection(delay: 0, maxAttempts: -1).maxAttempts, 0)
        var setLater = EventSourceReconnection(delay: 0)
        setLater.maxAttempts = -5
        for policy in [EventSourceReconnection(delay: 0, maxAttempts: -1), setLater] {
            let transport = FakeTransport()
            transport.stub(.get, "/events", with: sse(": nothing to say\n\n"))
            let connect = Connect(transport: transport, retryPolicy: nil)
            do {
                for try await _ in connect.eventSource(Feed(), reconnection: policy) {}
                XCTFail("a source that may not reconnect must end with its first connection")
            } catch let error as ConnectError {
                XCTAssertEqual(error.kind, .connectionLost)
                XCTAssertTrue(error.message.contains("after 0 reconnections"), error.message)
            }
            XCTAssertEqual(transport.requests.count, 1, "no reconnection")
        }
    }

    func testAReconnectionTheNetworkRefusesIsTriedAgain() async throws {
        // Given: the server goes away after the first event (a restart), then comes back
        let transport = FakeTransport()
        transport.stub(
            .get, "/events",
            with: [
                sse("id: 1\ndata: a\n\n"),
                .failure(URLError(.cannotConnectToHost)),
                .failure(URLError(.timedOut)),
                sse("id: 2\ndata: b\n\n"),
                .status(204),
            ])
        let connect = Connect(transport: transport, retryPolicy: nil)
        // When
        var received: [String] = []
        for try await event in connect.eventSource(Feed(), reconnection: EventSourceReconnection(delay: 0)) {
            received.append(event.data)
        }
        // Then: the refused reconnections were tried again, and the source resumed after the last event
        XCTAssertEqual(received, ["a", "b"])
        XCTAssertEqual(transport.requests.count, 5)
        XCTAssertEqual(transport.requests.dropFirst(3).first?.value(forHTTPHeaderField: "Last-Event-ID"), "1")
    }

    func testRefusedReconnectionsCountAgainstTheLimit() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: [sse("data: a\n\n"), .failure(URLError(.cannotConnectToHost))])
        let connect = Connect(transport: transport, retryPolicy: nil)
        var received: [String] = []
        do {
            let policy = EventSourceReconnection(delay: 0, maxAttempts: 2)
            for try await event in connect.eventSource(Feed(), reconnection: policy) { received.append(event.data) }
            XCTFail("a server that stays away must end the source")
        } catch let error as ConnectError {
            // The last failure's kind, not a made-up `.connectionLost`: an app that shows "cannot reach the server"
            // (or "offline", for `.notConnected`) sees why.
            XCTAssertEqual(error.kind, .cannotConnect)
            XCTAssertTrue(error.message.contains("2 reconnections"), error.message)
        }
        XCTAssertEqual(received, ["a"])
        XCTAssertEqual(transport.requests.count, 3, "the first connection and two refused reconnections")
    }

    func testTheFirstConnectionsNetworkFailureIsThrownAtOnce() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: .failure(URLError(.cannotConnectToHost)))
        let connect = Connect(transport: transport, retryPolicy: nil)
        do {
            for try await _ in connect.eventSource(Feed(), reconnection: EventSourceReconnection(delay: 0)) {}
            XCTFail("an endpoint that cannot be reached must fail the source")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .cannotConnect)
        }
        XCTAssertEqual(transport.requests.count, 1)
    }

    func testBreakingOutStopsReconnecting() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: sse("data: tick\n\n"))
        let connect = Connect(transport: transport, retryPolicy: nil)
        var ticks = 0
        for try await _ in connect.eventSource(Feed(), reconnection: EventSourceReconnection(delay: 0)) {
            ticks += 1
            if ticks == 5 { break }
        }
        XCTAssertEqual(ticks, 5)
        XCTAssertEqual(transport.requests.count, 5)
    }
}
