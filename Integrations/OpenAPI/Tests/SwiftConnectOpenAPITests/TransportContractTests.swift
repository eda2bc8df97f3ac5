import Foundation
import HTTPTypes
import OpenAPIRuntime
import SwiftConnect
import SwiftConnectTesting
import XCTest

@testable import SwiftConnectOpenAPI

/// `ConnectClientTransport.send` against the runtime's `ClientTransport` contract, end to end over each engine:
/// what reaches the server of the request the generated code made, and what the generated code gets of the answer.
final class TransportContractTests: XCTestCase {
    private typealias Engine = GeneratedClientTests.Engine

    private var server: LocalServer!

    override func setUpWithError() throws {
        server = try LocalServer.started()
    }

    override func tearDown() {
        server.stop()
    }

    private func transport(_ engine: Engine, _ connect: ((any Transport) -> Connect)? = nil) -> ConnectClientTransport {
        let made = engine.transport()
        return ConnectClientTransport(connect: connect?(made) ?? Connect(transport: made))
    }

    private func request(
        _ method: HTTPRequest.Method, _ path: String, _ fields: [(String, String)] = []
    ) -> HTTPRequest {
        var headerFields = HTTPFields()
        for (name, value) in fields { headerFields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return HTTPRequest(method: method, scheme: nil, authority: nil, path: path, headerFields: headerFields)
    }

    /// Sends `body` as `PUT /files` over `engine` and returns the error it fails with: the test fails if it is
    /// answered, or if the server took a request for whole.
    private func failure(
        sending body: HTTPBody, over engine: Engine, _ label: String, file: StaticString = #filePath, line: UInt = #line
    ) async -> (any Error)? {
        let before = server.requests.filter { $0.method == "PUT" }.count
        defer {
            let handled = server.requests.filter { $0.method == "PUT" }.count
            XCTAssertEqual(handled, before, "\(label): the server took a request", file: file, line: line)
        }
        do {
            let (response, _) = try await transport(engine).send(
                request(.put, "/files"), body: body, baseURL: server.baseURL.appendingPathComponent("api"),
                operationID: "put")
            XCTFail("\(label): answered \(response.status)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    // MARK: - Request mapping

    /// A custom method, the query byte for byte, the server URL's path prefix (with and without a trailing slash)
    /// and repeated fields in order reach the server as the generated code made them.
    func testTheRequestHeadReachesTheServerAsMade() async throws {
        server.route("*", "/api/*") { .echo($0) }
        let query = "/todos/a%2Fb?q=a%2Bb%20c&r=%E2%9C%93&s=1+2&t="
        for engine in Engine.allCases {
            for base in ["api", "api/"] {
                let sender = transport(engine)
                let baseURL = URL(string: base, relativeTo: server.baseURL)!.absoluteURL
                let made = request(.init("PURGE")!, query, [("X-Tag", "a"), ("X-Tag", "b"), ("X-Other", "c")])
                let (response, _) = try await sender.send(made, body: nil, baseURL: baseURL, operationID: "purge")
                XCTAssertEqual(response.status.code, 200, "\(engine) \(base)")
                let received = try XCTUnwrap(server.requests.last)
                XCTAssertEqual(received.method, "PURGE", "\(engine) \(base)")
                XCTAssertEqual(received.target, "/api" + query, "\(engine) \(base)")
                // A `URLRequest` holds one value per name: URLSession sends repeated fields joined by ", ", which
                // RFC 9110 §5.3 makes the same list.
                XCTAssertEqual(
                    received.headers.filter { $0.name.lowercased() == "x-tag" }.map(\.value),
                    engine == .urlSession ? ["a, b"] : ["a", "b"], "\(engine) \(base)")
            }
        }
    }

    /// The framing of each kind of body: none, empty, known length (once or again), unknown length.
    func testEachKindOfBodyIsFramedByItsLength() async throws {
        server.route("*", "/api/*") { .echo($0) }
        let payload = Data("hello, body".utf8)
        @Sendable func stream() -> AsyncStream<ArraySlice<UInt8>> {
            AsyncStream { continuation in
                continuation.yield(ArraySlice(payload.prefix(5)))
                continuation.yield(ArraySlice(payload.dropFirst(5)))
                continuation.finish()
            }
        }
        let cases: [(String, HTTPRequest.Method, @Sendable () -> HTTPBody?, String?, Bool, Data)] = [
            ("none", .get, { nil }, nil, false, Data()),
            ("empty POST", .post, { HTTPBody() }, "0", false, Data()),
            ("bytes", .post, { HTTPBody(payload) }, "\(payload.count)", false, payload),
            (
                "single known", .put, { HTTPBody(stream(), length: .known(Int64(payload.count))) },
                "\(payload.count)", false, payload
            ),
            (
                "single unknown", .put, { HTTPBody(stream(), length: .unknown, iterationBehavior: .single) },
                nil, true, payload
            ),
            (
                "multiple unknown", .put, { HTTPBody(stream(), length: .unknown, iterationBehavior: .multiple) },
                nil, true, payload
            ),
        ]
        for engine in Engine.allCases {
            for (name, method, body, declared, isChunked, bytes) in cases {
                var length = declared
                var chunked = isChunked
                #if canImport(FoundationNetworking)
                    // On Linux, URLSession sends every stream in chunks, without `Content-Length` (libcurl cannot be
                    // told a stream's length, and both framings at once are forbidden).
                    if engine == .urlSession, name == "single known" {
                        length = nil
                        chunked = true
                    }
                #endif
                let sender = transport(engine)
                let (response, _) = try await sender.send(
                    request(method, "/x"), body: body(), baseURL: server.baseURL.appendingPathComponent("api"),
                    operationID: "upload")
                XCTAssertEqual(response.status.code, 200, "\(engine) \(name)")
                let received = try XCTUnwrap(server.requests.last)
                XCTAssertEqual(received.header("Content-Length"), length, "\(engine) \(name)")
                XCTAssertEqual(
                    received.header("Transfer-Encoding")?.lowercased() == "chunked", chunked, "\(engine) \(name)")
                XCTAssertEqual(received.body, bytes, "\(engine) \(name)")
            }
        }
    }

    /// A one-shot body redirected by a 307 is never sent again empty: the 307 is the answer.
    func testAOneShotBodyRedirectedBy307IsNotSentAgainEmpty() async throws {
        server.route("PUT", "/api/old") { _ in .redirect(to: "/api/new", status: 307) }
        server.route("PUT", "/api/new") { .echo($0) }
        for engine in Engine.allCases {
            let sender = transport(engine)
            let body = HTTPBody(
                AsyncStream<ArraySlice<UInt8>> { continuation in
                    continuation.yield(ArraySlice("once".utf8))
                    continuation.finish()
                }, length: .known(4))
            let (response, _) = try await sender.send(
                request(.put, "/old"), body: body, baseURL: server.baseURL.appendingPathComponent("api"),
                operationID: "put")
            if response.status.code == 200 {
                XCTAssertEqual(server.requests.last?.body, Data("once".utf8), "\(engine)")
            } else {
                XCTAssertEqual(response.status.code, 307, "\(engine)")
            }
        }
    }

    /// A one-shot body that gives fewer or more bytes than its declared length fails with the client's
    /// `invalidRequest`, and the server never gets a request it takes for whole.
    func testAOneShotBodyOfAnotherLengthThanDeclaredFails() async throws {
        server.route("PUT", "/api/files") { .echo($0) }
        for engine in Engine.allCases {
            for (bytes, declared) in [(5, 10), (15, 10)] {
                let body = HTTPBody(
                    AsyncStream<ArraySlice<UInt8>> { continuation in
                        continuation.yield(ArraySlice(repeating: 1, count: bytes))
                        continuation.finish()
                    }, length: .known(Int64(declared)), iterationBehavior: .single)
                let error = await failure(sending: body, over: engine, "\(engine) \(bytes) of \(declared)")
                XCTAssertEqual(
                    (error as? ConnectError)?.kind, .invalidRequest, "\(engine) \(bytes): \(String(describing: error))")
            }
        }
    }

    /// A request body whose sequence fails while it is read (a file read as it goes, say) fails the operation with the
    /// client's `invalidRequest`, the body's own error underneath, and nothing reaches the server: read into memory
    /// first (one the generated code can iterate again, of a known length) as when streamed. Read into memory, the
    /// body's own error came out as it was, no `ConnectError`; then, still, its own `CancellationError` (its
    /// producer's task cancelled, not the caller's) and another call's `ConnectError`, which reached the caller as a
    /// cancellation or as that call's failure.
    func testARequestBodyThatFailsIsAnInvalidRequestWithItsErrorUnderneath() async throws {
        struct DiskGone: Error {}
        server.route("PUT", "/api/files") { .echo($0) }
        let errors: [@Sendable () -> any Error] = [
            { DiskGone() }, { CancellationError() }, { ConnectError(.timedOut, message: "another call's") },
        ]
        for engine in Engine.allCases {
            for behavior in [IterationBehavior.multiple, .single] {
                for makeError in errors {
                    let thrown = makeError()
                    let body = HTTPBody(
                        AsyncThrowingStream<ArraySlice<UInt8>, any Error> { continuation in
                            continuation.yield(ArraySlice(repeating: 1, count: 3))
                            continuation.finish(throwing: thrown)
                        }, length: .known(10), iterationBehavior: behavior)
                    let error = await failure(sending: body, over: engine, "\(engine) \(behavior)")
                    let refusal = error as? ConnectError
                    XCTAssertEqual(
                        refusal?.kind, .invalidRequest, "\(engine) \(behavior): \(String(describing: error))")
                    let underlying = refusal?.underlyingError.map { "\(type(of: $0))" }
                    XCTAssertEqual(
                        underlying, "\(type(of: thrown))", "\(engine) \(behavior): \(String(describing: error))")
                }
            }
        }
    }

    // MARK: - Response mapping

    /// Repeated fields in order, the length when known, and a streamed body delivered as it arrives: the server
    /// writes its second chunk only once the first one reached the generated code.
    func testAStreamedResponseArrivesAsItIsWrittenWithItsFields() async throws {
        for engine in Engine.allCases {
            for length in [nil, 10] as [Int?] {
                let firstRead = DispatchSemaphore(value: 0)
                server.route("GET", "/api/feed") { _ in
                    .stream(contentLength: length) { write in
                        guard write(Data("first".utf8)) else { return }
                        guard firstRead.wait(timeout: .now() + 20) == .success else { return }
                        _ = write(Data("later".utf8))
                    }
                    .withHeader("Set-Cookie", "a=1").withHeader("Set-Cookie", "b=2").withHeader("Reason", "x")
                }
                let sender = transport(engine)
                let (response, received) = try await sender.send(
                    request(.get, "/feed", [("Accept", "application/octet-stream")]), body: nil,
                    baseURL: server.baseURL.appendingPathComponent("api"), operationID: "feed")
                XCTAssertEqual(response.status, .ok, "\(engine)")
                XCTAssertEqual(response.headerFields[values: .setCookie], ["a=1", "b=2"], "\(engine)")
                let body = try XCTUnwrap(received)
                XCTAssertEqual(
                    body.length, length.map { HTTPBody.Length.known(Int64($0)) } ?? .unknown,
                    "\(engine) \(length ?? -1)")
                var bytes = Data()
                for try await chunk in body {
                    bytes.append(contentsOf: chunk)
                    if bytes.count == 5 { firstRead.signal() }
                }
                XCTAssertEqual(String(decoding: bytes, as: UTF8.self), "firstlater", "\(engine)")
                // A second iteration of a body that can be iterated once fails, and does not hang.
                var secondIteration = body.makeAsyncIterator()
                do {
                    _ = try await secondIteration.next()
                    XCTFail("\(engine): a second iteration succeeded")
                } catch {
                    XCTAssertTrue("\(error)".contains("iterat"), "\(engine): \(error)")
                }
            }
        }
    }

    /// A HEAD answer has no body, and its declared length does not keep the generated code waiting.
    func testAHEADAnswerHasNoBody() async throws {
        server.route("HEAD", "/api/file") { _ in .data(Data(count: 1000)) }
        for engine in Engine.allCases {
            for accept in ["application/json", "application/octet-stream"] {
                let (response, body) = try await transport(engine).send(
                    request(.head, "/file", [("Accept", accept)]), body: nil,
                    baseURL: server.baseURL.appendingPathComponent("api"), operationID: "head")
                XCTAssertEqual(response.status, .ok, "\(engine)")
                XCTAssertEqual(response.headerFields[.contentLength], "1000", "\(engine)")
                XCTAssertNil(body, "\(engine)")
            }
        }
    }

    /// Cancelling the task that reads a streamed body ends the read with an error and closes the connection.
    func testCancellingTheTaskThatReadsABodyClosesTheConnection() async throws {
        for engine in Engine.allCases {
            // A server of its own per engine: the connection another engine keeps alive is not this one's.
            let server = try LocalServer.started()
            defer { server.stop() }
            let stopped = DispatchSemaphore(value: 0)
            server.route("GET", "/api/feed") { _ in
                .stream(contentLength: nil) { write in
                    while write(Data(repeating: 7, count: 1024)) {}
                    stopped.signal()
                }
            }
            let sender = transport(engine)
            let firstChunk = Promise<Void>()
            let made = request(.get, "/feed", [("Accept", "application/octet-stream")])
            let baseURL = server.baseURL.appendingPathComponent("api")
            let reader = Task {
                let (_, body) = try await sender.send(made, body: nil, baseURL: baseURL, operationID: "feed")
                var signalled = false
                for try await _ in try XCTUnwrap(body) where !signalled {
                    signalled = true
                    _ = firstChunk.succeed(())
                }
            }
            _ = try await firstChunk.future.timeout(after: 20).value
            reader.cancel()
            let outcome = await reader.result
            XCTAssertThrowsError(try outcome.get(), "\(engine): the read ended without an error") { error in
                XCTAssertEqual((error as? ConnectError)?.kind, .cancelled, "\(engine): \(type(of: error)) \(error)")
            }
            if engine == .asyncHTTPClient {
                XCTAssertEqual(stopped.wait(timeout: .now() + 20), .success, "\(engine): the server still writes")
                XCTAssertTrue(server.waitUntilNoConnection(timeout: 20), "\(engine): a connection is still open")
            }
        }
    }

    // MARK: - Errors

    /// A documented error status is the generated code's to decode, whatever the client's error handler says.
    func testAnErrorStatusIsReturnedWhateverTheErrorHandler() async throws {
        server.route("GET", "/api/todo") { _ in .json(string: #"{"message":"gone"}"#, status: 404) }
        for engine in Engine.allCases {
            for accept in ["application/json", "application/octet-stream"] {
                let sender = transport(engine) { made in
                    Connect(transport: made, errorHandler: RefusingEverything())
                }
                let (response, body) = try await sender.send(
                    request(.get, "/todo", [("Accept", accept)]), body: nil,
                    baseURL: server.baseURL.appendingPathComponent("api"), operationID: "todo")
                XCTAssertEqual(response.status.code, 404, "\(engine)")
                let text = try await String(collecting: try XCTUnwrap(body), upTo: 1 << 20)
                XCTAssertEqual(text, #"{"message":"gone"}"#, "\(engine)")
            }
        }
    }

    /// A server nobody listens on fails with the client's error.
    func testATransportFailureIsTheClientsError() async throws {
        let closed = try LocalServer.started()
        let url = closed.baseURL
        closed.stop()
        for engine in Engine.allCases {
            for accept in ["application/json", "application/octet-stream"] {
                do {
                    _ = try await transport(engine).send(
                        request(.get, "/x", [("Accept", accept)]), body: nil, baseURL: url, operationID: "x")
                    XCTFail("\(engine): no error")
                } catch {
                    XCTAssertNotNil(error as? ConnectError, "\(engine): \(type(of: error)) \(error)")
                }
            }
        }
    }

    /// Cancelling the task while it waits for the head fails with the client's `cancelled` error, at once.
    func testCancellingTheTaskWhileItWaitsForTheHead() async throws {
        for engine in Engine.allCases {
            for accept in ["application/json", "application/octet-stream"] {
                let arrived = DispatchSemaphore(value: 0)
                let release = DispatchSemaphore(value: 0)
                server.route("GET", "/api/slow") { _ in
                    arrived.signal()
                    _ = release.wait(timeout: .now() + 30)
                    return .text("late")
                }
                let sender = transport(engine)
                let baseURL = server.baseURL.appendingPathComponent("api")
                let made = request(.get, "/slow", [("Accept", accept)])
                let call = Task { try await sender.send(made, body: nil, baseURL: baseURL, operationID: "slow") }
                XCTAssertEqual(arrived.wait(timeout: .now() + 20), .success)
                call.cancel()
                let outcome = await call.result
                release.signal()
                XCTAssertThrowsError(try outcome.get()) { error in
                    XCTAssertEqual((error as? ConnectError)?.kind, .cancelled, "\(engine) \(accept): \(error)")
                }
            }
        }
    }

    /// An operation whose method carries no body but whose document gives it one (a `GET` with a JSON query, which
    /// OpenAPI 3.1 allows) fails with `bodyNotAllowed`, nothing sent, as the OpenAPI article says.
    func testAGETOperationWithABodyIsRefusedUnsent() async throws {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let sender = ConnectClientTransport(connect: Connect(transport: transport))
        do {
            _ = try await sender.send(
                request(.get, "/search"), body: HTTPBody("{}"), baseURL: URL(string: "https://api.example.com")!,
                operationID: "search")
            XCTFail("a GET went out with its body")
        } catch {
            let reason = (error as? ConnectError)?.invalidRequestReason
            guard case .bodyNotAllowed(let method)? = reason else { return XCTFail("\(error)") }
            XCTAssertEqual(method, "GET")
        }
        XCTAssertTrue(transport.requests.isEmpty, "a request went out")
    }

    /// A task cancelled while its body (one the generated code can iterate again, of a known length, read into memory
    /// first) is being read fails with the client's `cancelled` error, as one cancelled in flight does: the body
    /// cut short by the cancellation is no `invalidRequest`.
    func testCancellingTheTaskWhileItsBodyIsReadIsACancellation() async throws {
        let firstChunkRead = Promise<Void>()
        let (chunks, continuation) = AsyncStream<ArraySlice<UInt8>>.makeStream()
        continuation.yield(ArraySlice(repeating: 1, count: 5))
        let body = HTTPBody(
            chunks.map { chunk -> ArraySlice<UInt8> in
                _ = firstChunkRead.succeed(())
                return chunk
            }, length: .known(10), iterationBehavior: .multiple)
        let transport = FakeTransport.answering(.json(string: "{}"))
        let sender = ConnectClientTransport(connect: Connect(transport: transport))
        let made = request(.put, "/files", [("Accept", "application/json")])
        let call = Task {
            try await sender.send(
                made, body: body, baseURL: URL(string: "https://api.example.com")!, operationID: "put")
        }
        _ = try await firstChunkRead.future.timeout(after: 20).value
        call.cancel()
        let outcome = await call.result
        continuation.finish()
        XCTAssertThrowsError(try outcome.get()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .cancelled, "\(error)")
        }
        XCTAssertTrue(transport.requests.isEmpty, "a request went out")
    }

    /// A task cancelled while its one-shot body streams to the server fails with the client's `cancelled` error.
    func testCancellingTheTaskWhileItsOneShotBodyStreamsIsACancellation() async throws {
        server.streamingRoute("PUT", "/api/files") { _, body in
            while body.read() != nil {}
            return .text("read")
        }
        for engine in Engine.allCases {
            let firstChunkRead = Promise<Void>()
            let (chunks, continuation) = AsyncStream<ArraySlice<UInt8>>.makeStream()
            continuation.yield(ArraySlice(repeating: 1, count: 5))
            let body = HTTPBody(
                chunks.map { chunk -> ArraySlice<UInt8> in
                    _ = firstChunkRead.succeed(())
                    return chunk
                }, length: .known(10), iterationBehavior: .single)
            let sender = transport(engine)
            let made = request(.put, "/files", [("Accept", "application/json")])
            let baseURL = server.baseURL.appendingPathComponent("api")
            let call = Task { try await sender.send(made, body: body, baseURL: baseURL, operationID: "put") }
            _ = try await firstChunkRead.future.timeout(after: 20).value
            call.cancel()
            let outcome = await call.result
            continuation.finish()
            XCTAssertThrowsError(try outcome.get()) { error in
                XCTAssertEqual((error as? ConnectError)?.kind, .cancelled, "\(engine): \(error)")
            }
        }
    }

    /// A timeout fails with the client's `timedOut` error.
    func testATimeoutIsTheClientsTimedOutError() async throws {
        for engine in Engine.allCases {
            for accept in ["application/json", "application/octet-stream"] {
                let release = DispatchSemaphore(value: 0)
                server.route("GET", "/api/slow") { _ in
                    _ = release.wait(timeout: .now() + 30)
                    return .text("late")
                }
                let made = engine.transport()
                let sender = ConnectClientTransport(
                    connect: Connect(transport: made),
                    configuration: .init(options: RequestOptions(timeout: 0.5)))
                do {
                    _ = try await sender.send(
                        request(.get, "/slow", [("Accept", accept)]), body: nil,
                        baseURL: server.baseURL.appendingPathComponent("api"), operationID: "slow")
                    XCTFail("\(engine): no error")
                } catch {
                    XCTAssertEqual((error as? ConnectError)?.kind, .timedOut, "\(engine) \(accept): \(error)")
                }
                release.signal()
            }
        }
    }
}

/// An error handler that makes every status outside 200..<300 an error.
private struct RefusingEverything: ErrorHandling {
    struct Refused: Error {}

    func handle(response: [String: Any]) -> (any Error)? { Refused() }

    func handle(_ response: ConnectResponse) -> (any Error)? { Refused() }
}
