import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How `URLSessionTransport` uses its own session: configuration, where responses complete, deadlines.
final class URLSessionTransportTests: XCTestCase {
    private var server: LocalServer!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        server.route("GET", "/small") { _ in .data(Data(repeating: 0x61, count: 1024), contentType: "text/plain") }
        server.route("GET", "/large") { _ in
            .data(
                Data(repeating: 0x62, count: concurrentCompletionThreshold),
                contentType: "text/plain")
        }
    }

    override func tearDown() {
        server.stop()
    }

    private func send(_ path: String, on transport: URLSessionTransport) -> Future<(ConnectResponse, Bool)> {
        let delegateQueue = transport.session.delegateQueue
        return transport.send(URLRequest(url: server.baseURL.appendingPathComponent(path)))
            .map { response in (response, OperationQueue.current === delegateQueue) }
    }

    /// `send`, the server's answer held until the stage that reads the completing queue is attached: on a loaded
    /// machine the answer could otherwise complete the future first, and the stage would run on this thread.
    private func sendHeld(_ path: String, on transport: URLSessionTransport) throws -> (ConnectResponse, Bool) {
        let attached = DispatchSemaphore(value: 0)
        let body = path == "small" ? 1024 : concurrentCompletionThreshold
        server.route("GET", "/held/\(path)") { _ in
            _ = attached.wait(timeout: .now() + 30)
            return .data(Data(repeating: 0x61, count: body), contentType: "text/plain")
        }
        let future = send("held/\(path)", on: transport)
        attached.signal()
        return try future.wait(timeout: 30)
    }

    /// Over a session of the app's (no delegate of the transport's), requests with a body go through, plain or
    /// with transfer options, rather than recursing between the transport's paths.
    func testRequestsWithABodyGoThroughAnAppsSession() throws {
        server.route("POST", "/echo") { request in .data(request.body, contentType: "text/plain") }
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let transport = URLSessionTransport(session: session)
        var request = URLRequest(url: server.baseURL.appendingPathComponent("echo"), timeoutInterval: 10)
        request.httpMethod = "POST"
        request.httpBody = Data("hello".utf8)

        let plain = try transport.send(request).wait(timeout: 20)
        let limited = try transport.send(request, transfer: TransferOptions(maxResponseBytes: 1 << 20)).wait(
            timeout: 20)

        XCTAssertEqual(plain.data, Data("hello".utf8))
        XCTAssertEqual(limited.data, Data("hello".utf8))
    }

    func testTheDefaultConfigurationLeavesCachingToConnect() {
        let configuration = URLSessionTransport.defaultConfiguration
        XCTAssertNil(configuration.urlCache)
        XCTAssertEqual(configuration.requestCachePolicy, .reloadIgnoringLocalCacheData)
        XCTAssertNil(URLSessionTransport().session.configuration.urlCache)
    }

    func testSmallResponsesCompleteOnTheSessionsDelegateQueue() throws {
        let transport = URLSessionTransport()
        let (response, onDelegateQueue) = try sendHeld("small", on: transport)
        XCTAssertEqual(response.data.count, 1024)
        XCTAssertTrue(onDelegateQueue, "no thread hop for a small body")
    }

    func testLargeResponsesCompleteOffTheSessionsSerialDelegateQueue() throws {
        let transport = URLSessionTransport()
        let (response, onDelegateQueue) = try sendHeld("large", on: transport)
        XCTAssertEqual(response.data.count, concurrentCompletionThreshold)
        XCTAssertFalse(onDelegateQueue, "large bodies are decoded on a concurrent queue, on every core")
    }

    func testLargeResponsesDecodeInParallel() throws {
        // Given two large responses whose decoding waits for each other
        let transport = URLSessionTransport()
        let bothDecoding = DispatchGroup()
        bothDecoding.enter()
        bothDecoding.enter()
        let decoded = (0..<2).map { _ in
            transport.send(URLRequest(url: server.baseURL.appendingPathComponent("large"))).map { response -> Bool in
                bothDecoding.leave()
                // On one serial queue, the first would wait here for the second forever (until the timeout). The
                // wait is long: the global queue has a thread per core (two here), and an earlier test's transfer
                // that FoundationNetworking reads on after its stop can keep one busy for seconds (a CI run on a
                // loaded machine waited 30 s in vain).
                return bothDecoding.wait(timeout: .now() + 120) == .success && !response.data.isEmpty
            }
        }

        // Then: both ran at the same time
        XCTAssertEqual(try Future.all(decoded).wait(timeout: 150), [true, true])
    }

    func testFinishedRequestsLeaveNoDeadlineBehind() throws {
        let before = DeadlineScheduler.shared.pendingCount
        let transport = URLSessionTransport()
        let requests = (0..<20).map { index in
            send(index.isMultiple(of: 2) ? "small" : "large", on: transport)
        }
        _ = try Future.all(requests).wait(timeout: 60)
        XCTAssertLessThanOrEqual(DeadlineScheduler.shared.pendingCount, before)
    }

    // MARK: - The session's resource timeout

    /// `timeoutIntervalForResource` bounds each task on Apple platforms; FoundationNetworking ignores it, so the
    /// transport enforces it itself, as it does the request's timeout.
    func testTheConfigurationsResourceTimeoutEndsASilentExchange() throws {
        // Given a session allowing half a second per task, and a request allowing a minute
        server.route("GET", "/silent") { _ in .text("late").delayed(by: 60) }
        server.route("GET", "/trickle") { _ in .status(200).withFault(.trickle(chunk: Data("x".utf8), interval: 0.05)) }
        let configuration = URLSessionTransport.defaultConfiguration
        configuration.timeoutIntervalForResource = 0.5
        let connect = Connect(transport: URLSessionTransport(configuration: configuration), retryPolicy: nil)

        for path in ["/silent", "/trickle"] {
            for options in [RequestOptions(), RequestOptions(maxResponseBytes: 1 << 20)] {
                // When
                let future = connect.request(Route(path, baseURL: server.baseURL, timeout: 60, options: options))

                // Then: the shorter of the two ends it, and the error names it
                guard case .failure(let error as ConnectError) = try future.waitForResult(timeout: 20) else {
                    return XCTFail("\(path): expected a ConnectError")
                }
                XCTAssertEqual(error.kind, .timedOut, path)
                XCTAssertTrue(error.message.contains("0.5 s"), error.message)
            }
        }
    }

    func testAResourceTimeoutLongerThanTheRequestsLeavesTheRequestsInCharge() throws {
        // Given
        server.route("GET", "/silent") { _ in .text("late").delayed(by: 60) }
        let configuration = URLSessionTransport.defaultConfiguration
        configuration.timeoutIntervalForResource = 120
        let connect = Connect(transport: URLSessionTransport(configuration: configuration), retryPolicy: nil)

        // When
        let future = connect.request(Route("/silent", baseURL: server.baseURL, timeout: 0.5))

        // Then
        guard case .failure(let error as ConnectError) = try future.waitForResult(timeout: 20) else {
            return XCTFail("expected a ConnectError")
        }
        XCTAssertEqual(error.kind, .timedOut)
        XCTAssertTrue(error.message.contains("0.5 s"), error.message)
    }

    // MARK: - Schemes

    /// URLSessionTransport speaks HTTP: any other scheme fails at once, nothing sent, the same on every platform.
    /// FoundationNetworking otherwise waited for the whole timeout on `ftp:` and answered `data:` without HTTP.
    func testAURLThatIsNotHTTPFailsAtOnceAsAnInvalidRequest() throws {
        let transport = URLSessionTransport()
        let urls = [
            "ftp://127.0.0.1:\(server.port)/pub", "file:///etc/hostname", "data:text/plain,hello",
            "gopher://127.0.0.1:\(server.port)/x", "ws://127.0.0.1:\(server.port)/socket", "mailto:someone@example.com",
        ]
        for text in urls {
            // Given a request allowing a minute
            var request = URLRequest(url: try XCTUnwrap(URL(string: text)))
            request.timeoutInterval = 60

            // When
            let result = try transport.send(request).waitForResult(timeout: 10)

            // Then
            guard case .failure(let error as ConnectError) = result else { return XCTFail("\(text): \(result)") }
            XCTAssertEqual(error.kind, .invalidRequest, text)
            XCTAssertEqual(error.invalidRequestReason, .invalidURL(text), text)
            XCTAssertTrue(error.message.contains("http"), error.message)
        }
        XCTAssertEqual(server.requestCount, 0)
    }

    // MARK: - The wire check, for a request handed to the transport directly

    /// A request handed straight to the transport (as the conformance suite and a user's own code do), not through a
    /// client's chain: a plain GET, which takes URLSession's completion-handler path, meets the wire check all the
    /// same, from a `ConnectRequest` and from a `URLRequest`, over the transport's own session and an app's.
    func testAPlainRequestSentDirectlyWithAnUnsendableHeaderFailsNothingSent() throws {
        server.route("GET", "/small") { _ in .text("answered") }
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let url = server.baseURL.appendingPathComponent("small")
        let cases: [(name: String, value: String)] = [
            ("X-Note", "a\r\nX-Injected: yes"), ("X-Note", "line\nbreak"), ("X-Note", "nul\u{0}"),
            ("X-Note", "caf\u{E9}"), ("Bad Name", "value"), ("Bad:Name", "value"),
        ]
        for transport in [URLSessionTransport(), URLSessionTransport(session: session)] {
            for (name, value) in cases {
                // Given
                var request = ConnectRequest(url: url)
                request.headerFields.append(HeaderField(name: HeaderField.Name(name), value: value))
                var foundation = URLRequest(url: url)
                foundation.setValue(value, forHTTPHeaderField: name)

                // When (FoundationNetworking's `URLRequest` drops a value with CR, LF or NUL itself: nothing to send)
                var results = [try transport.send(request, transfer: TransferOptions()).waitForResult(timeout: 10)]
                if foundation.value(forHTTPHeaderField: name) != nil {
                    results.append(try transport.send(foundation).waitForResult(timeout: 10))
                }

                // Then
                for result in results {
                    guard case .failure(let error as ConnectError) = result else {
                        return XCTFail("\(name): \(value.debugDescription) was sent: \(result)")
                    }
                    XCTAssertEqual(error.kind, .invalidRequest, "\(name): \(value.debugDescription)")
                    XCTAssertEqual(error.invalidRequestReason, .invalidHeader(name: HTTPHeader.shownName(name)), name)
                }
            }
        }
        XCTAssertEqual(server.requestCount, 0)
    }

    /// A method that is not a token, handed straight to the transport on its plain path, fails the same way.
    func testAPlainRequestSentDirectlyWithAnInvalidMethodFailsNothingSent() throws {
        let transport = URLSessionTransport()
        let url = server.baseURL.appendingPathComponent("small")
        for method in ["GET /x HTTP/1.1\r\nX: y", "GE T", "G\u{E9}T"] {
            // Given
            let request = ConnectRequest(method: HTTPMethod(rawValue: method), url: url)

            // When
            let result = try transport.send(request, transfer: TransferOptions()).waitForResult(timeout: 10)

            // Then
            guard case .failure(let error as ConnectError) = result else {
                return XCTFail("\(method.debugDescription) was sent: \(result)")
            }
            XCTAssertEqual(error.kind, .invalidRequest, method.debugDescription)
            XCTAssertEqual(error.invalidRequestReason, .invalidMethod(method), method.debugDescription)
        }
        XCTAssertEqual(server.requestCount, 0)
    }

    /// A `URLRequest` without a URL, handed straight to the transport, is refused with the client's error on every
    /// path (plain over the transport's session and an app's, and with a body), never sent nor left unanswered.
    func testAURLRequestWithoutAURLSentDirectlyFailsAsAnInvalidRequest() throws {
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        for transport in [URLSessionTransport(), URLSessionTransport(session: session)] {
            for body in [nil, Data("payload".utf8)] {
                // Given
                var request = URLRequest(url: server.baseURL.appendingPathComponent("small"))
                request.httpMethod = body == nil ? "GET" : "POST"
                request.httpBody = body
                request.url = nil

                // When
                let result = try transport.send(request).waitForResult(timeout: 10)

                // Then
                guard case .failure(let error as ConnectError) = result else {
                    return XCTFail("a request without a URL was answered: \(result)")
                }
                XCTAssertEqual(error.kind, .invalidRequest)
                XCTAssertEqual(error.message, "the request has no URL")
            }
        }
        XCTAssertEqual(server.requestCount, 0)
    }

    func testASchemeInCapitalsIsHTTPAllTheSame() throws {
        // Given URLs whose scheme is written in capitals, which RFC 3986 makes the same scheme
        let connect = Connect(transport: URLSessionTransport(), retryPolicy: nil)
        for scheme in ["HTTP", "Http"] {
            let base = try XCTUnwrap(URL(string: "\(scheme)://127.0.0.1:\(server.port)"))

            // When
            let body = try connect.request(Route("/small", baseURL: base, timeout: 10)).wait()

            // Then
            XCTAssertEqual(body.count, 1024, scheme)
        }
    }

    #if canImport(FoundationNetworking)
        /// FoundationNetworking refuses every URL whose host is an IPv6 literal with a bare `badURL` (its own check of
        /// the host disagrees with libcurl's about the brackets): the error says so, on every path.
        func testAnIPv6LiteralFailsAtOnceSayingFoundationNetworkingCannotSendToIt() throws {
            let connect = Connect(transport: URLSessionTransport(), retryPolicy: nil)
            let base = try XCTUnwrap(URL(string: "http://[::1]:\(server.port)"))
            for options in [RequestOptions(), RequestOptions(maxResponseBytes: 1 << 20)] {
                // When
                let result = try connect.request(Route("/small", baseURL: base, timeout: 60, options: options))
                    .waitForResult(timeout: 10)

                // Then
                guard case .failure(let error as ConnectError) = result else { return XCTFail("\(result)") }
                XCTAssertEqual(error.kind, .invalidRequest, error.description)
                XCTAssertEqual(error.invalidRequestReason, .invalidURL("http://[::1]:\(server.port)/small"))
                XCTAssertEqual(error.urlError?.code, .badURL)
                XCTAssertTrue(error.message.contains("IPv6"), error.message)
                XCTAssertTrue(error.message.contains("FoundationNetworking"), error.message)
            }
        }
    #endif

    // MARK: - Body files

    #if os(Linux)
        /// A body file truncated while it is sent fails the call with `.invalidRequest` naming the file, at once: it
        /// used to leave the server waiting for the rest of the announced length, and the call hung until its timeout
        /// (`.timedOut`, a minute by default).
        func testABodyFileThatShrinksWhileSentFailsAsAnInvalidRequest() throws {
            // Given a 64 MiB file (sparse), truncated to 1 MiB once its first bytes went out
            server.route("POST", "/upload") { request in .json(["received": request.body.count]) }
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("shrinking-\(UUID().uuidString)")
            XCTAssertTrue(FileManager.default.createFile(atPath: file.path, contents: nil))
            defer { try? FileManager.default.removeItem(at: file) }
            XCTAssertEqual(truncate(file.path, 64 << 20), 0)
            let truncated = Protected(false)
            let transfer = TransferOptions(
                bodyFile: file,
                progress: { progress in
                    guard progress.bytesSent > 0, !truncated.withLock({ $0 }) else { return }
                    truncated.withLock { $0 = true }
                    XCTAssertEqual(truncate(file.path, 1 << 20), 0)
                })
            var request = URLRequest(url: server.baseURL.appendingPathComponent("upload"), timeoutInterval: 60)
            request.httpMethod = "POST"

            // When
            let result = try URLSessionTransport().send(request, transfer: transfer).waitForResult(timeout: 30)

            // Then
            guard case .failure(let error as ConnectError) = result else { return XCTFail("\(result)") }
            XCTAssertTrue(truncated.withLock { $0 })
            XCTAssertEqual(error.kind, .invalidRequest, error.description)
            XCTAssertTrue(error.message.contains(file.path), error.message)
            XCTAssertTrue(error.message.contains("shrank"), error.message)
        }

        /// A body file that grows while it is sent never puts the bytes past its announced length on the connection:
        /// the server read them as the next request, and the next call on that connection got that request's answer.
        func testABodyFileThatGrowsWhileSentPutsNothingPastItsLengthOnTheConnection() throws {
            // Given a 64 MiB file (sparse), grown by a whole request once the server has the upload's head, before it
            // reads the body (more than the socket buffers hold: libcurl has not reached the file's old end)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("growing-\(UUID().uuidString)")
            XCTAssertTrue(FileManager.default.createFile(atPath: file.path, contents: nil))
            defer { try? FileManager.default.removeItem(at: file) }
            XCTAssertEqual(truncate(file.path, 64 << 20), 0)
            server.streamingRoute("POST", "/upload") { _, body in
                let output = FileHandle(forWritingAtPath: file.path)
                output?.seekToEndOfFile()
                output?.write(Data("GET /other HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
                try? output?.close()
                return .json(["received": body.readAll().count])
            }
            server.route("GET", "/other") { _ in .json(["answer": "other"]) }
            server.route("GET", "/mine") { _ in .json(["answer": "mine"]) }
            let transport = URLSessionTransport()
            var upload = URLRequest(url: server.baseURL.appendingPathComponent("upload"), timeoutInterval: 60)
            upload.httpMethod = "POST"

            // When the upload is sent, then another request through the same transport
            let uploaded = try transport.send(upload, transfer: TransferOptions(bodyFile: file)).waitForResult(
                timeout: 30)
            let mine = try transport.send(
                URLRequest(url: server.baseURL.appendingPathComponent("mine"), timeoutInterval: 30),
                transfer: TransferOptions()
            ).wait(timeout: 30)

            // Then the server read the announced length and no request from the file; the next call got its own answer
            XCTAssertEqual(try uploaded.get().data, Data(#"{"received":67108864}"#.utf8))
            XCTAssertEqual(server.requests.map(\.path), ["/upload", "/mine"])
            XCTAssertEqual(String(decoding: mine.data, as: UTF8.self), #"{"answer":"mine"}"#)
        }
    #endif

    // MARK: - Clients come and go

    #if os(Linux)
        /// Entries of a `/proc/self` folder: open descriptors (`fd`) or threads (`task`).
        private func count(_ folder: String) throws -> Int {
            try FileManager.default.contentsOfDirectory(atPath: "/proc/self/\(folder)").count
        }

        func testClientsMadeAndDroppedLeaveNoDescriptorsOrThreadsBehind() throws {
            // Given a process that has made clients before (libcurl and dispatch are set up)
            for _ in 0..<5 {
                _ = try Connect(retryPolicy: nil).request(Route("/small", baseURL: server.baseURL)).wait()
            }
            let descriptors = try count("fd")
            let threads = try count("task")

            // When a hundred clients each send a request and are dropped
            for _ in 0..<100 {
                _ = try Connect(retryPolicy: nil).request(Route("/small", baseURL: server.baseURL)).wait()
            }

            // Then: each session was invalidated with its client (one descriptor or thread each would show)
            XCTAssertLessThanOrEqual(try count("fd"), descriptors + 10)
            XCTAssertLessThanOrEqual(try count("task"), threads + 10)
        }
    #endif

    func testAClientDroppedWithARequestInFlightStillDeliversItsResponse() throws {
        // Given a request the server holds until the client is gone
        let release = DispatchSemaphore(value: 0)
        server.route("GET", "/held") { _ in
            _ = release.wait(timeout: .now() + 30)
            return .text("answered")
        }
        var connect: Connect? = Connect(retryPolicy: nil)
        let future = try XCTUnwrap(connect).request(Route("/held", baseURL: server.baseURL, timeout: 30))
        weak let dropped = connect

        // When
        connect = nil
        XCTAssertNil(dropped, "the client is freed while its request runs")
        release.signal()

        // Then
        XCTAssertEqual(try future.wait(timeout: 30), Data("answered".utf8))
    }
}
