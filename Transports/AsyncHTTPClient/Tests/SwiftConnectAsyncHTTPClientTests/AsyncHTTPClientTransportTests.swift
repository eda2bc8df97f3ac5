import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import SwiftConnect
import SwiftConnectTesting
import XCTest

import struct NIOHTTP1.HTTPHeaders

@testable @_spi(Engine) import SwiftConnectAsyncHTTPClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What is particular to ``AsyncHTTPClientTransport``: its life cycle and what the engine makes possible. The
/// client's behaviour over it is proven by the shared integration tests (`Shared/`).
final class AsyncHTTPClientTransportTests: XCTestCase {
    private var server: LocalServer!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        server.route("GET", "/ok") { _ in .json(["ok": true]) }
    }

    override func tearDown() {
        server.stop()
    }

    /// Routes `/endless` to a body that never ends (until the client closes the connection); the semaphore is
    /// signalled when the server starts sending it.
    private func routeEndlessBody() -> DispatchSemaphore {
        let started = DispatchSemaphore(value: 0)
        server.route("GET", "/endless") { _ in
            .stream(contentLength: nil) { write in
                started.signal()
                while write(Data(count: 1 << 14)) {}
            }
        }
        return started
    }

    private func request(_ path: String, timeout: TimeInterval = 10) -> URLRequest {
        URLRequest(url: server.baseURL.appendingPathComponent(String(path.dropFirst())), timeoutInterval: timeout)
    }

    /// A large body from memory is reported sent as it goes, not once whole at its end: its progress has reports
    /// between none and all of it.
    func testALargeBodyFromMemoryReportsItsProgressAsItGoes() throws {
        server.route("POST", "/upload") { request in .text("\(request.body.count)") }
        let reports = NIOLockedValueBox<[Int64]>([])
        let total = 4 << 20
        let connect = Connect(transport: AsyncHTTPClientTransport(), retryPolicy: nil)
        let upload = Route(
            "/upload", baseURL: server.baseURL, method: .post,
            parameters: Parameter.body(Data(count: total), contentType: "application/octet-stream"),
            options: RequestOptions(progress: { report in reports.withLockedValue { $0.append(report.bytesSent) } }))
        let answer = try connect.request(upload).wait(timeout: 30)
        XCTAssertEqual(String(decoding: answer, as: UTF8.self), "\(total)")
        let sent = reports.withLockedValue { $0 }
        XCTAssertEqual(sent.last, Int64(total))
        XCTAssertTrue(sent.contains { $0 > 0 && $0 < Int64(total) }, "\(Set(sent).sorted())")
    }

    /// A request of the caller's whose host is written with escapes (`localhos%74`) goes to that host by name: the
    /// core hands the engine the decoded authority, which AsyncHTTPClient connects to and sends as `Host`.
    func testAnEscapedHostIsSentByName() throws {
        server.route("GET", "/host") { request in .text(request.header("Host") ?? "none") }
        let connect = Connect(transport: AsyncHTTPClientTransport(), retryPolicy: nil)
        let url = try XCTUnwrap(URL(string: "http://localhos%74:\(server.port)/host"))
        let response = try connect.response(for: ConnectRequest(url: url, timeoutInterval: 10)).wait(timeout: 20)
        XCTAssertEqual(String(decoding: response.data, as: UTF8.self), "localhost:\(server.port)")
    }

    /// By default SwiftConnect's core decodes gzip and asks for it; with AsyncHTTPClient's decompression turned on,
    /// the client asks and decodes, and the core leaves its bytes alone (decoded once, not twice).
    func testGzipIsDecodedByTheCoreByDefaultAndByTheClientWhenItsDecompressionIsOn() async throws {
        // `"conformance " × 100`, gzip-compressed.
        let gzip = Data(base64Encoded: "H4sIAAAAAAACA0vOz0vLL8pNzEtOVUgeZY+yR9mj7EHMBgBfY9NSsAQAAA==")!
        let asked = NIOLockedValueBox<[String]>([])
        server.route("GET", "/gzip") { request in
            asked.withLockedValue { $0.append(request.header("Accept-Encoding") ?? "none") }
            return LocalServer.Response.data(gzip, contentType: "text/plain").withHeader("Content-Encoding", "gzip")
        }
        var decompressing = AsyncHTTPClientTransport.defaultConfiguration
        decompressing.decompression = .enabled(limit: .ratio(100))
        // An app's clients too, whose configuration the transport reads by reflection: AsyncHTTPClient's default
        // (decompression off), and one that decompresses; neither follows redirects itself.
        var plain = HTTPClient.Configuration()
        plain.redirectConfiguration = .disallow
        let appClients = [
            HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: plain),
            HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: decompressing),
        ]
        let transports =
            [AsyncHTTPClientTransport(), AsyncHTTPClientTransport(configuration: decompressing)]
            + appClients.map { AsyncHTTPClientTransport(client: $0) }

        var bodies: [String] = []
        for transport in transports {
            let response = try await transport.send(request("/gzip")).value
            bodies.append(String(decoding: response.data, as: UTF8.self))
            try await transport.shutdown()
        }
        for client in appClients { try await client.shutdown() }

        XCTAssertEqual(bodies, Array(repeating: String(repeating: "conformance ", count: 100), count: 4))
        XCTAssertEqual(
            asked.withLockedValue { $0 }, ["gzip, deflate", "deflate, gzip", "gzip, deflate", "deflate, gzip"],
            "the core's, then NIO's decompressor's, on the transport's own clients and on an app's")
        XCTAssertEqual(transports.map(\.decodedContentCodings), [[], ["gzip", "deflate"], [], ["gzip", "deflate"]])
    }

    /// With AsyncHTTPClient's decompression on, an answer labelled gzip that has no body (a `HEAD`'s, a `204`, a
    /// `304`, a `Content-Length: 0`) is the empty answer it is, as it is with the decompression off and over
    /// URLSession: SwiftNIO's decompressor, set up by the label alone, reads the missing body as truncated data.
    func testABodylessAnswerLabelledGzipSucceedsWithTheClientsDecompressionOn() async throws {
        server.route("HEAD", "/labelled") { _ in
            LocalServer.Response().withFault(
                .raw(Data("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 40\r\n\r\n".utf8)))
        }
        for (status, extra) in [("204 No Content", ""), ("304 Not Modified", ""), ("200 OK", "Content-Length: 0\r\n")] {
            let path = "/labelled-\(status.prefix(3))"
            let answer = "HTTP/1.1 \(status)\r\nContent-Encoding: gzip\r\n\(extra)\r\n"
            server.route("GET", path) { _ in LocalServer.Response().withFault(.raw(Data(answer.utf8))) }
        }
        var decompressing = AsyncHTTPClientTransport.defaultConfiguration
        decompressing.decompression = .enabled(limit: .ratio(100))
        let transport = AsyncHTTPClientTransport(configuration: decompressing)

        var head = request("/labelled")
        head.httpMethod = "HEAD"
        var outcomes: [String] = []
        for request in [head, request("/labelled-204"), request("/labelled-304"), request("/labelled-200")] {
            do {
                let response = try await transport.send(request).value
                outcomes.append("\(response.statusCode) \(response.data.count) bytes")
            } catch {
                outcomes.append("\(error)")
            }
        }
        try await transport.shutdown()
        XCTAssertEqual(outcomes, ["200 0 bytes", "204 0 bytes", "304 0 bytes", "200 0 bytes"])

        // A body of which coded bytes came, cut before any decoded: a failure, not an empty answer. (SwiftNIO hands
        // the delegate no part for coded bytes that decode to nothing, so an empty chunked or close-delimited body
        // labelled gzip, which it cannot tell from this one, fails too: RELIABILITY.md.)
        let cutHead = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
        let cut =
            Data(cutHead.utf8) + Data("5\r\n".utf8) + Data([0x1F, 0x8B, 0x08, 0x00, 0x00]) + Data("\r\n0\r\n\r\n".utf8)
        server.route("GET", "/labelled-cut") { _ in LocalServer.Response().withFault(.raw(cut)) }
        let cutTransport = AsyncHTTPClientTransport(configuration: decompressing)
        do {
            let response = try await cutTransport.send(request("/labelled-cut")).value
            XCTFail("a cut coded body must fail: \(response.statusCode) \(response.data.count) bytes")
        } catch {}
        try await cutTransport.shutdown()
    }

    /// With AsyncHTTPClient's decompression on, the transport announces gzip and deflate as decoded, but SwiftNIO's
    /// decompressor reads `Content-Encoding` only: a body in the gzip transfer coding is refused, naming it, rather
    /// than its gzip bytes passed on as the body (SwiftConnect's core decodes it when the decompression is off).
    func testATransferCodingTheClientsDecompressorLeavesCodedIsRefused() async throws {
        // "hello", gzip-compressed.
        let gzip = Data(base64Encoded: "H4sIAAAAAAACA8tIzcnJBwCGphA2BQAAAA==")!
        let head = "HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
        let answer = Data("\(head)\(String(gzip.count, radix: 16))\r\n".utf8) + gzip + Data("\r\n0\r\n\r\n".utf8)
        server.route("GET", "/transfer-coded") { _ in LocalServer.Response().withFault(.raw(answer)) }

        try await assertDecodedByTheCoreAndRefusedWhenDecompressing("/transfer-coded", saying: "transfer coding gzip")
    }

    /// Sends `path`, whose answer is "hello" coded, over a transport without AsyncHTTPClient's decompression (the
    /// core decodes it) and one with it (which refuses it, saying `words`).
    private func assertDecodedByTheCoreAndRefusedWhenDecompressing(
        _ path: String, saying words: String, file: StaticString = #filePath, line: UInt = #line
    ) async throws {
        var decompressing = AsyncHTTPClientTransport.defaultConfiguration
        decompressing.decompression = .enabled(limit: .ratio(100))
        let transports = [AsyncHTTPClientTransport(), AsyncHTTPClientTransport(configuration: decompressing)]
        var results: [Result<ConnectResponse, any Error>] = []
        for transport in transports {
            results.append(await transport.send(request(path)).resultValue)
            try await transport.shutdown()
        }
        XCTAssertEqual(try results[0].get().data, Data("hello".utf8), "decoded by the core", file: file, line: line)
        guard case .failure(let error as ConnectError) = results[1] else {
            return XCTFail("\(results[1])", file: file, line: line)
        }
        XCTAssertEqual(error.kind, .transport, "\(error)", file: file, line: line)
        XCTAssertTrue(error.message.contains(words), error.message, file: file, line: line)
    }

    /// With AsyncHTTPClient's decompression on, a body in several content codings is refused, naming them: SwiftNIO's
    /// decompressor decodes by the first one listed alone (none for `identity, gzip`), and the core, told gzip is
    /// decoded, passed the gzip bytes on as the body. The core decodes `identity, gzip` itself when the decompression
    /// is off.
    func testSeveralContentCodingsTheClientsDecompressorLeavesCodedAreRefused() async throws {
        // "hello", gzip-compressed.
        let gzip = Data(base64Encoded: "H4sIAAAAAAACA8tIzcnJBwCGphA2BQAAAA==")!
        server.route("GET", "/layered") { _ in
            LocalServer.Response.data(gzip, contentType: "text/plain").withHeader("Content-Encoding", "identity, gzip")
        }

        try await assertDecodedByTheCoreAndRefusedWhenDecompressing(
            "/layered", saying: "several codings in turn (identity, gzip)")
    }

    /// A transport released without `shutdown()`, right after its request, shuts its client down by itself:
    /// no crash, no leak, again and again.
    func testATransportReleasedWithoutShutdownNeverCrashes() throws {
        for _ in 0..<200 {
            let response = try AsyncHTTPClientTransport().send(request("/ok")).wait(timeout: 10)
            XCTAssertEqual(response.statusCode, 200)
        }
    }

    /// `shutdown()` closes the connections; a request after it fails with a typed error; a second shutdown does
    /// nothing.
    func testShutdownIsExplicitAndIdempotent() async throws {
        let transport = AsyncHTTPClientTransport()
        let response = try await transport.send(request("/ok")).value
        XCTAssertEqual(response.statusCode, 200)

        try await transport.shutdown()
        try await transport.shutdown()

        do {
            _ = try await transport.send(request("/ok")).value
            XCTFail("a shut-down transport sent a request")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .transport, error.description)
            XCTAssertTrue(error.message.contains("shut down"), error.message)
        }
    }

    /// A transport's own client makes no span of AsyncHTTPClient's: with a tracer bootstrapped, AsyncHTTPClient's
    /// default configuration takes it and makes a second span per request, `url.query` in clear.
    func testTheDefaultConfigurationTurnsAsyncHTTPClientsOwnTracingOff() {
        XCTAssertNil(AsyncHTTPClientTransport.defaultConfiguration.tracing.tracer)
        XCTAssertNotNil(
            HTTPClient.Configuration().tracing.tracer, "AsyncHTTPClient's default takes the system's tracer")
    }

    /// An app's own configuration (one made for its TLS settings) holds the system's tracer: the transport's client
    /// goes without it, as with the default configuration, and makes no span of AsyncHTTPClient's.
    func testAnAppsOwnConfigurationLosesItsTracerToo() {
        let configuration = HTTPClient.Configuration()
        XCTAssertNotNil(configuration.tracing.tracer)
        XCTAssertNil(AsyncHTTPClientTransport.ownClientConfiguration(configuration).tracing.tracer)
    }

    /// A transport made over the app's client refuses requests after its `shutdown()` as one with its own client
    /// does, though the app's client keeps running (it sent them on before).
    func testATransportOverAnAppsClientRefusesRequestsAfterItsShutdown() async throws {
        let app = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        let transport = AsyncHTTPClientTransport(client: app)
        try await transport.shutdown()

        do {
            _ = try await transport.send(request("/ok")).value
            XCTFail("a shut-down transport sent a request over the app's client")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .transport, error.description)
            XCTAssertTrue(error.message.contains("shut down"), error.message)
        }
        let stillRunning = try await app.get(url: server.baseURL.appendingPathComponent("ok").absoluteString).get()
        XCTAssertEqual(stillRunning.status.code, 200, "the app's client was left running")
        try await app.shutdown()
    }

    /// An app's client that follows redirects itself (AsyncHTTPClient's default, `HTTPClient.shared`) would take a
    /// request's credential headers to another origin by AsyncHTTPClient's rules, past SwiftConnect's: every request
    /// over it is refused, typed, nothing sent. It went, and a 302 to another host took `X-Api-Key` with it.
    func testAnAppsClientThatFollowsRedirectsItselfIsRefusedNothingSent() async throws {
        let other = try LocalServer.started()
        defer { other.stop() }
        let reachedOther = NIOLockedValueBox<[String]>([])
        other.route("GET", "/landing") { request in
            reachedOther.withLockedValue { $0.append(request.header("X-Api-Key") ?? "none") }
            return .text("landed")
        }
        let reached = NIOLockedValueBox(0)
        server.route("GET", "/moved") { _ in
            reached.withLockedValue { $0 += 1 }
            return .redirect(to: other.baseURL.appendingPathComponent("landing").absoluteString, status: 302)
        }
        let following = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        let transport = AsyncHTTPClientTransport(client: following)
        var moved = request("/moved")
        moved.setValue("SECRET-KEY-41", forHTTPHeaderField: "X-Api-Key")

        do {
            _ = try await transport.send(moved).value
            XCTFail("a request went over a client that follows redirects itself")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .transport, error.description)
            XCTAssertTrue(error.message.contains("redirectConfiguration: .disallow"), error.message)
        }
        XCTAssertEqual(reached.withLockedValue { $0 }, 0, "nothing was sent")
        XCTAssertEqual(reachedOther.withLockedValue { $0 }, [])
        // So is one whose configuration a later AsyncHTTPClient keeps where reflection does not find it: it may.
        XCTAssertNotNil(AsyncHTTPClientTransport.refusal(over: nil))
        XCTAssertNil(AsyncHTTPClientTransport.refusal(over: AsyncHTTPClientTransport.defaultConfiguration))
        try await transport.shutdown()
        try await following.shutdown()

        // Made with `.disallow`, the client hands the 302 to the core, whose rules keep the key at home.
        var plain = HTTPClient.Configuration()
        plain.redirectConfiguration = .disallow
        let app = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: plain)
        let overApp = AsyncHTTPClientTransport(client: app)
        let response = try await overApp.send(moved).value
        XCTAssertEqual(String(decoding: response.data, as: UTF8.self), "landed")
        XCTAssertEqual(reachedOther.withLockedValue { $0 }, ["none"], "the key followed the redirect to another origin")
        try await overApp.shutdown()
        try await app.shutdown()
    }

    /// `shutdown()` while calls are in flight: one waiting for its head, one reading a body that never ends, and a
    /// stream nobody reads yet (the engine waiting for its reader). The shutdown ends, and each call fails with the
    /// typed error it promises (`.cancelled`), well before its deadline: none hangs, and none ends as a success.
    func testShutdownFailsEveryCallInFlightTyped() throws {
        let endlessStarted = routeEndlessBody()
        // A body that never ends, slowly: `send` keeps every byte it reads.
        let trickleStarted = DispatchSemaphore(value: 0)
        server.route("GET", "/trickle") { _ in
            trickleStarted.signal()
            return LocalServer.Response().withFault(.trickle(chunk: Data("x".utf8), interval: 0.05))
        }
        let headAsked = DispatchSemaphore(value: 0)
        let answerHead = DispatchSemaphore(value: 0)
        server.route("GET", "/held") { _ in
            headAsked.signal()
            _ = answerHead.wait(timeout: .now() + 60)
            return .text("late")
        }
        defer { answerHead.signal() }
        let transport = AsyncHTTPClientTransport()
        let connect = Connect(transport: transport, retryPolicy: nil)
        let held = transport.send(request("/held", timeout: 60))
        let trickle = transport.send(request("/trickle", timeout: 60))
        // The stream: opened now, read only once the transport is shut down.
        let opened = Promise<Void>()
        let shutDown = Promise<Void>()
        let streamEnded = Promise<Result<Int, any Error>>()
        let baseURL = server.baseURL
        Task {
            let stream = connect.stream(SwiftConnect.Route("/endless", baseURL: baseURL, timeout: 60))
            var count = 0
            do {
                _ = try await stream.response
                _ = opened.succeed(())
                try await shutDown.future.value
                for try await part in stream { count += part.count }
                _ = streamEnded.succeed(.success(count))
            } catch {
                _ = opened.completeIfPending(with: .success(()))
                _ = streamEnded.succeed(.failure(error))
            }
        }
        XCTAssertEqual(headAsked.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(trickleStarted.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(endlessStarted.wait(timeout: .now() + 10), .success)
        XCTAssertNoThrow(try opened.future.wait(timeout: 10))

        let shutdownEnded = Promise<Void>()
        Task {
            try await transport.shutdown()
            _ = shutdownEnded.succeed(())
        }
        XCTAssertNoThrow(try shutdownEnded.future.wait(timeout: 20), "the shutdown did not end")
        _ = shutDown.succeed(())

        for (name, result) in [
            ("waiting for its head", try held.waitForResult(timeout: 10).map { _ in 0 }),
            ("reading its body", try trickle.waitForResult(timeout: 10).map { _ in 0 }),
            ("a stream", try streamEnded.future.wait(timeout: 10)),
        ] {
            guard case .failure(let error) = result else { return XCTFail("\(name): a success after the shutdown") }
            XCTAssertEqual((error as? ConnectError)?.kind, .cancelled, "\(name): \(error)")
        }
    }

    /// The README's "Choosing an engine" example, verbatim (the root package's ReadmeExamplesTests checks it is
    /// here), against a local server.
    func testTheReadmeExample() async throws {
        let transport = AsyncHTTPClientTransport()  // or (client: yours), made with redirectConfiguration: .disallow
        let connect = Connect(transport: transport)
        let todo = try await connect.send(GetTodo(id: 1)).value
        try await transport.shutdown()  // when the app is done with it: closes the connections

        XCTAssertEqual(todo.id, 1)
        XCTAssertEqual(todo.title, "Ship it")
    }

    /// A login that sets its session cookie on a 302 keeps it on the next hop.
    func testACookieSetByARedirectIsSentOnTheNextHop() throws {
        server.route("POST", "/login") { _ in
            LocalServer.Response.redirect(to: "/home", status: 302).withHeader("Set-Cookie", "session=s3cr3t; Path=/")
        }
        server.route("GET", "/home") { request in .text(request.header("Cookie") ?? "none") }
        var login = request("/login")
        login.httpMethod = "POST"
        login.httpBody = Data("user=me".utf8)

        let response = try AsyncHTTPClientTransport().send(login).wait(timeout: 10)

        XCTAssertEqual(response.response.url?.path, "/home")
        XCTAssertEqual(String(decoding: response.data, as: UTF8.self), "session=s3cr3t")
    }

    /// What stops a Linux process on FoundationNetworking (`FoundationNetworkingProcessStopTests`, SECURITY.md) is a
    /// typed error here: a head cut short by the connection closing, and a `Content-Length` of 2^63 − 1.
    func testWhatStopsFoundationNetworkingIsATypedErrorHere() throws {
        let transport = AsyncHTTPClientTransport()
        for (path, answer) in [
            ("/cut", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"),
            ("/huge", "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\nabc"),
        ] {
            server.route("GET", path) { _ in LocalServer.Response().withFault(.raw(Data(answer.utf8))) }
            let result = try transport.send(request(path)).waitForResult(timeout: 20)
            guard case .failure(let error as ConnectError) = result else { return XCTFail("\(path): \(result)") }
            XCTAssertTrue(error.isTransportFailure, "\(path): \(error)")
        }
    }

    /// A head cut short by the connection closing is a lost connection, said as such: SwiftNIO's parser reports the
    /// same error there as for a body cut short, whose words ("before the end of the body") sent a reader looking for
    /// a body that never began.
    func testAHeadCutShortIsALostConnectionThatSpeaksOfNoBody() throws {
        server.route("GET", "/cut") { _ in
            LocalServer.Response().withFault(.raw(Data("HTTP/1.1 200 OK\r\nContent-Le".utf8)))
        }
        let transport = AsyncHTTPClientTransport()

        let result = try transport.send(request("/cut")).waitForResult(timeout: 20)

        guard case .failure(let error as ConnectError) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(error.kind, .connectionLost, "\(error)")
        XCTAssertFalse(error.message.contains("body"), error.message)
    }

    /// Cancelling a request whose answer is still coming closes its connection: the server sees the close
    /// promptly, not when the body would have ended.
    func testCancellationClosesTheConnectionAtOnce() throws {
        let started = routeEndlessBody()
        let transport = AsyncHTTPClientTransport()
        let future = transport.send(request("/endless", timeout: 60))
        XCTAssertEqual(started.wait(timeout: .now() + 10), .success)

        let cancelledAt = DispatchTime.now().uptimeNanoseconds
        future.cancel()

        // The body never ends: only a closed connection lets the server go idle.
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the server still has a connection busy")
        // A figure for the record, not a timing assertion.
        let elapsed = (DispatchTime.now().uptimeNanoseconds - cancelledAt) / 1_000_000
        print("the server saw the cancelled connection end \(elapsed) ms after cancel()")
        XCTAssertThrowsError(try future.wait(timeout: 5)) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .cancelled)
        }
    }

    /// A streamed body whose reader stopped reading is still bounded by the request's timeout: at the deadline the
    /// engine, which waited for the reader (back-pressure), stops and closes the connection, and the reader gets
    /// the timeout after the chunks that had arrived.
    func testTheDeadlineStopsAStreamWhoseReaderIsBehind() async throws {
        let started = routeEndlessBody()
        let transport = AsyncHTTPClientTransport()
        let connect = Connect(transport: transport, retryPolicy: nil)
        let stream = connect.stream(SwiftConnect.Route("/endless", baseURL: server.baseURL, timeout: 0.5))
        // Nobody reads: the engine fills the buffer to its threshold, then waits for the reader.
        _ = try await stream.response
        XCTAssertEqual(started.wait(timeout: .now() + 10), .success)

        // The body never ends: only a closed connection lets the server go idle.
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the engine still reads a stream past its deadline")
        do {
            for try await _ in stream {}
            XCTFail("the stream must fail at its deadline")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .timedOut)
        }
        try await transport.shutdown()
    }

    /// A stream whose buffer limit was set to 0 through its property (the initializer clamps it to 1, the property
    /// did not): the engine, which waits while the reader is behind, waited for ever once the reader had taken every
    /// byte there was, as 0 bytes buffered is not under a limit of 0. Only the deadline ended the stream.
    func testAStreamWhoseBufferLimitWasSetToZeroReadsTheWholeBody() async throws {
        let body = LocalServer.generatedBytes(count: 200_000, seed: 7)
        server.route("GET", "/pieces") { _ in
            .stream(contentLength: nil) { write in
                var offset = 0
                while offset < body.count {
                    let end = min(offset + (1 << 14), body.count)
                    guard write(Data(body[offset..<end])) else { return }
                    offset = end
                }
            }
        }
        let transport = AsyncHTTPClientTransport()
        var streaming = StreamingOptions()
        streaming.bufferLimit = 0
        let stream = Connect(transport: transport, retryPolicy: nil).stream(
            SwiftConnect.Route("/pieces", baseURL: server.baseURL, timeout: 10), streaming: streaming)
        var received = Data()
        for try await chunk in stream { received.append(chunk) }
        XCTAssertEqual(received, body)
        try await transport.shutdown()
    }

    /// A body over the size limit is refused as it arrives: the connection closes, the rest is never read.
    func testASizeLimitStopsReading() throws {
        let piecesWritten = Guarded(0)
        server.route("GET", "/big") { _ in
            .stream(contentLength: nil) { write in
                for _ in 0..<3200 {  // 50 MiB in 16 KiB pieces
                    guard write(Data(count: 1 << 14)) else { break }
                    piecesWritten.withLock { $0 += 1 }
                }
            }
        }
        let transport = AsyncHTTPClientTransport()

        let result = try transport.send(request("/big"), transfer: TransferOptions(maxResponseBytes: 1 << 20))
            .waitForResult(timeout: 30)

        guard case .failure(let error as ConnectError) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(error.kind, .responseTooLarge)
        XCTAssertTrue(server.waitUntilIdle(timeout: 10))
        XCTAssertLessThan(piecesWritten.snapshot, 3200, "the whole body was sent: reading did not stop")
    }

    /// A connect that fails for a reason other than a refusal (`EINVAL` through a `blackhole` route) sent nothing:
    /// `.cannotConnect`, as on URLSession; a connection that stops answering (`ETIMEDOUT`) is a lost one.
    func testSocketErrorsAreClassifiedByTheCallThatFailed() {
        let connect = ErrorClassification.connectError(
            IOError(errnoCode: EINVAL, reason: "connect(descriptor:addr:size:)"), timeout: nil)
        XCTAssertEqual(connect.kind, .cannotConnect, "\(connect)")
        let read = ErrorClassification.connectError(
            IOError(errnoCode: ETIMEDOUT, reason: "read(descriptor:pointer:size:)"), timeout: nil)
        XCTAssertEqual(read.kind, .connectionLost, "\(read)")
        let other = ErrorClassification.connectError(
            IOError(errnoCode: EINVAL, reason: "write(descriptor:pointer:size:)"), timeout: nil)
        XCTAssertEqual(other.kind, .transport, "\(other)")
        // A proxy's handshake that takes too long is a timeout, as a server's is (it was a bad response).
        for timeout in [HTTPClientError.socksHandshakeTimeout, .httpProxyHandshakeTimeout] {
            XCTAssertEqual(ErrorClassification.connectError(timeout, timeout: nil).kind, .timedOut, "\(timeout)")
        }
    }

    /// TLS failures as URLSession reports them: a certificate that does not name the host is not trusted (not
    /// retried), and a TLS connection closed without `close_notify` (a close-delimited body cut short) is lost.
    func testTLSErrorsAreClassifiedAsOnURLSession() {
        let hostname = ErrorClassification.connectError(NIOSSLExtraError.failedToValidateHostname, timeout: nil)
        XCTAssertEqual(hostname.kind, .untrustedCertificate, "\(hostname)")
        let unclean = ErrorClassification.connectError(NIOSSLError.uncleanShutdown, timeout: nil)
        XCTAssertEqual(unclean.kind, .connectionLost, "\(unclean)")
        let handshake = ErrorClassification.connectError(NIOSSLError.handshakeFailed(.sslError([])), timeout: nil)
        XCTAssertEqual(handshake.kind, .secureConnection, "\(handshake)")
        let other = ErrorClassification.connectError(NIOSSLExtraError.invalidSNIHostname, timeout: nil)
        XCTAssertEqual(other.kind, .secureConnection, "\(other)")
    }

    /// A transport's mirror showed its `HTTPClient`, and through it the configuration's proxy credentials (the
    /// password's base64 in `Proxy-Authorization`) and its `CONNECT` headers: `dump(transport)`, `dump(connect)`.
    func testATransportDumpsNoProxyCredential() async throws {
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        var connectHeaders = HTTPHeaders()
        connectHeaders.add(name: "X-Proxy-Token", value: "HEADER-SECRET82")
        configuration.proxy = .server(
            host: "proxy.test", port: 3128, authorization: .basic(username: "amy", password: "PROXY-SECRET81"),
            connectHeaders: connectHeaders)
        let own = AsyncHTTPClientTransport(configuration: configuration)
        let appClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let overApps = AsyncHTTPClientTransport(client: appClient)
        let base64 = Data("amy:PROXY-SECRET81".utf8).base64EncodedString()

        for transport in [own, overApps] {
            var dumped = ""
            dump(transport, to: &dumped)
            dump(Connect(transport: transport), to: &dumped)
            let shown = [dumped, String(describing: transport), String(reflecting: transport)].joined(separator: "\n")
            XCTAssertFalse(shown.contains("SECRET") || shown.contains(base64), shown)
            XCTAssertTrue(dumped.contains("AsyncHTTPClientTransport"), dumped)
        }
        try await own.shutdown()
        try await appClient.shutdown()
    }
}

/// The README's model and connector, served by a local server of their own.
private struct Todo: Codable, Sendable {
    let id: Int
    let title: String
}

private struct GetTodo: TypedConnector {
    typealias Response = Todo
    let id: Int
    var baseURL: URL { ReadmeServer.server.baseURL }
    var endpoint: String { "/todos/{id}" }
    var method: HTTPMethod { .get }
    var headers: [HTTPHeader] { [] }
    var parameters: ParametersRepresentable? { Parameter.path(key: "id", value: "\(id)") }
}

private enum ReadmeServer {
    static let server: LocalServer = {
        let server = LocalServer()
        try? server.start()
        server.route("GET", "/todos/:id") { request in
            .json(Todo(id: Int(request.pathParameters["id"] ?? "") ?? 0, title: "Ship it"))
        }
        return server
    }()
}
