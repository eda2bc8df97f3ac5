import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request built elsewhere (`Connect.stream(_:name:…)`, `Connect.response(for:name:options:)`) goes through the
/// client as a connector's does, and `RequestOptions.acceptsEveryStatus` hands every status to the caller after the
/// retries: what an OpenAPI transport needs.
final class BuiltRequestTests: XCTestCase {
    private static let url = URL(string: "https://api.example.com/v1/todos/7")!

    // MARK: - The rules a connector meets when built

    func testABuiltRequestOrAMiddlewareCannotSendAMethodThatIsNotAToken() throws {
        // Given: a method that would write a second request line, from the caller and from a middleware
        let transport = FakeTransport.answering(.json(string: "{}"))
        let smuggling = HTTPMethod(rawValue: "GET / HTTP/1.1\r\nX-Evil: 1\r\n\r\nGET")
        let direct = Connect(transport: transport, retryPolicy: nil)
        let rewriting = Connect(
            transport: transport, middlewares: [.adapter { $0.method = smuggling }], retryPolicy: nil)
        // When
        let errors = [
            try XCTUnwrap(connectError(of: direct.response(for: ConnectRequest(method: smuggling, url: Self.url)))),
            try XCTUnwrap(connectError(of: rewriting.response(for: ConnectRequest(url: Self.url)))),
        ]
        // Then: refused with the reason a connector gets, nothing sent
        for error in errors {
            XCTAssertEqual(error.invalidRequestReason, .invalidMethod(smuggling.rawValue))
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }

    func testAContentLengthThatIsNotTheBodysIsRefusedWhoeverSetIt() throws {
        // Given: lengths that disagree with a body in memory, no body, and a stream of known length
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let chunks = AsyncStream<Data> { continuation in
            continuation.yield(Data("hello".utf8))
            continuation.finish()
        }
        let requests = [
            ConnectRequest(
                method: .post, url: Self.url, headerFields: ["Content-Length": "2"], body: .bytes(Data("hello".utf8))),
            ConnectRequest(method: .post, url: Self.url, headerFields: ["Content-Length": "5"]),
            ConnectRequest(
                method: .put, url: Self.url, headerFields: ["Content-Length": "9"],
                body: .stream(ConnectRequest.OneShotStream(chunks, length: 5))),
        ]
        // When / Then: each is refused, naming the field, and nothing is sent
        for request in requests {
            let error = try XCTUnwrap(connectError(of: connect.response(for: request)))
            XCTAssertEqual(
                error.invalidRequestReason, .invalidHeader(name: "Content-Length"), "\(request.headerFields)")
            XCTAssertTrue(error.message.contains("leave it out"), error.message)
        }
        XCTAssertTrue(transport.requests.isEmpty)
        // And: the right length, with blanks around it, is sent
        let right = ConnectRequest(
            method: .post, url: Self.url, headerFields: ["Content-Length": " 5 "], body: .bytes(Data("hello".utf8)))
        XCTAssertNoThrow(try connect.response(for: right).wait())
        XCTAssertEqual(transport.requests.count, 1)
    }

    /// A stream announcing a length below 0: it went out as `Content-Length: -1`, which no server reads as a length,
    /// and a transport that did not read the body (this fake, then) answered it as if nothing were wrong. It is refused
    /// as a body that cannot be sent, nothing sent, whatever the length's sign says.
    func testABodyStreamAnnouncingANegativeLengthIsRefusedAndNothingIsSent() throws {
        // Given
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(transport: transport, retryPolicy: nil)
        for length in [Int64(-1), .min] {
            let chunks = AsyncStream<Data> { continuation in
                continuation.yield(Data("hello".utf8))
                continuation.finish()
            }
            let request = ConnectRequest(
                method: .put, url: Self.url, body: .stream(ConnectRequest.OneShotStream(chunks, length: length)))
            // When
            let error = try XCTUnwrap(connectError(of: connect.response(for: request)))
            // Then
            XCTAssertEqual(error.kind, .invalidRequest, "\(length)")
            guard case .bodyEncodingFailed(let detail)? = error.invalidRequestReason else {
                return XCTFail("\(length): \(String(describing: error.invalidRequestReason))")
            }
            XCTAssertTrue(detail.contains("\(length)"), detail)
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }

    /// `Transfer-Encoding` frames the body, as `Content-Length` does, and the transport frames it itself: set by hand,
    /// `gzip` announced a coding the body did not have, and `chunked` on a GET without a body left URLSession waiting
    /// for chunks until the deadline. HTTP/2 forbids the field outright.
    func testATransferEncodingIsRefusedWhoeverSetIt() throws {
        // Given: the field on a request without a body, with bytes, with a stream, and set by a middleware
        let transport = FakeTransport.answering(.json(string: "{}"))
        let direct = Connect(transport: transport, retryPolicy: nil)
        let adapter = AnyMiddleware.adapter { $0.setValue("chunked", forHTTPHeaderField: "transfer-encoding") }
        let rewriting = Connect(transport: transport, middlewares: [adapter], retryPolicy: nil)
        let chunks = AsyncStream<Data> { continuation in
            continuation.yield(Data("hello".utf8))
            continuation.finish()
        }
        let calls = [
            direct.response(for: ConnectRequest(url: Self.url, headerFields: ["Transfer-Encoding": "chunked"])),
            direct.response(
                for: ConnectRequest(
                    method: .post, url: Self.url, headerFields: ["Transfer-Encoding": "gzip"],
                    body: .bytes(Data("hello".utf8)))),
            direct.response(
                for: ConnectRequest(
                    method: .put, url: Self.url, headerFields: ["Transfer-Encoding": "chunked"],
                    body: .stream(ConnectRequest.OneShotStream(chunks)))),
            rewriting.response(for: ConnectRequest(method: .post, url: Self.url, body: .bytes(Data("hello".utf8)))),
        ]
        // When / Then: each is refused, naming the field as it was written, and nothing is sent
        let names = ["Transfer-Encoding", "Transfer-Encoding", "Transfer-Encoding", "transfer-encoding"]
        for (call, name) in zip(calls, names) {
            let error = try XCTUnwrap(connectError(of: call))
            XCTAssertEqual(error.invalidRequestReason, .invalidHeader(name: name))
            XCTAssertTrue(error.message.contains("leave it out"), error.message)
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }

    /// `TE` is hop by hop and names transfer codings of the answer, which the engines own: `gzip` there asked for a body
    /// no engine decodes, and HTTP/2 forbids any value but `trailers` (RFC 9113 §8.2.2), which one engine's codec
    /// failed the stream for and another dropped. Only `TE: trailers` goes out, on every engine alike.
    func testATEOtherThanTrailersIsRefusedAndTrailersGoesOut() throws {
        // Given
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(transport: transport, retryPolicy: nil)
        // When / Then: a coding, a list, another case, an empty value are refused, naming the field, nothing sent
        for value in ["gzip", "trailers, deflate", "Trailers", "", "chunked"] {
            let request = ConnectRequest(url: Self.url, headerFields: ["te": value])
            let error = try XCTUnwrap(connectError(of: connect.response(for: request)), value)
            XCTAssertEqual(error.kind, .invalidRequest, value)
            XCTAssertEqual(error.invalidRequestReason, .invalidHeader(name: "te"), value)
            XCTAssertTrue(error.message.contains("'trailers'"), error.message)
        }
        XCTAssertTrue(transport.requests.isEmpty)
        // And `trailers`, blanks around it allowed, goes out
        let trailers = ConnectRequest(url: Self.url, headerFields: ["TE": " trailers "])
        XCTAssertEqual(try connect.response(for: trailers).wait(timeout: 5).statusCode, 200)
        XCTAssertEqual(transport.requests.first?.value(forHTTPHeaderField: "TE"), "trailers")
    }

    /// A `Host` the caller sets goes out as set (a virtual host behind an address), but two of them, or one that is a
    /// list, name no one server: RFC 9112 §3.2 has a server answer 400, and a proxy and the server behind it may each
    /// pick another one (request smuggling). Refused before anything is sent, as the one field that frames the body is.
    func testARepeatedHostIsRefusedAndASingleOneGoesOut() throws {
        // Given
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(transport: transport, retryPolicy: nil)
        var twice = ConnectRequest(url: Self.url)
        twice.headerFields.append(HeaderField(name: "Host", value: "api.test"))
        twice.headerFields.append(HeaderField(name: "host", value: "internal.test"))
        let list = ConnectRequest(url: Self.url, headerFields: ["Host": "api.test, internal.test"])

        // When / Then: each is refused, naming the field as written, nothing sent
        for (request, name) in [(twice, "host"), (list, "Host")] {
            let error = try XCTUnwrap(connectError(of: connect.response(for: request)))
            XCTAssertEqual(error.kind, .invalidRequest)
            XCTAssertEqual(error.invalidRequestReason, .invalidHeader(name: name))
            XCTAssertTrue(error.message.contains("one server"), error.message)
        }
        XCTAssertTrue(transport.requests.isEmpty)
        // And one `Host` goes out as set
        let single = ConnectRequest(url: Self.url, headerFields: ["Host": "virtual.test"])
        XCTAssertEqual(try connect.response(for: single).wait(timeout: 5).statusCode, 200)
        XCTAssertEqual(transport.requests.first?.value(forHTTPHeaderField: "Host"), "virtual.test")
    }

    // MARK: - Every status is an answer

    func testAnAccepted404IsTheAnswerWithItsWholeBody() throws {
        let transport = FakeTransport.answering(.json(string: #"{"message":"gone"}"#, status: 404))
        let connect = Connect(transport: transport)
        let response = try connect.response(
            for: ConnectRequest(url: Self.url), options: RequestOptions(acceptsEveryStatus: true)
        ).wait()
        XCTAssertEqual(response.statusCode, 404)
        XCTAssertEqual(String(decoding: response.data, as: UTF8.self), #"{"message":"gone"}"#)
        // Without the option the error handler makes it an error, as for every call.
        let error = try XCTUnwrap(connectError(of: connect.response(for: ConnectRequest(url: Self.url))))
        XCTAssertEqual(error.statusCode, 404)
    }

    func testA503IsStillRetriedAndOnlyTheLastAttemptIsTheAnswer() throws {
        let transport = FakeTransport()
        transport.stub(
            "/v1/todos/7",
            with: [.status(503, headers: ["Retry-After": "0"]), .json(string: #"{"id":7}"#, status: 200)])
        let connect = Connect(transport: transport, retryPolicy: RetryPolicy(clock: ImmediateRetryClock()))
        let response = try connect.response(
            for: ConnectRequest(url: Self.url), options: RequestOptions(acceptsEveryStatus: true)
        ).wait()
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(transport.requests.count, 2)
    }

    func testABodyOfChunksIsSentOnceThoughTheAnswerIsRetryable() throws {
        let transport = FakeTransport()
        transport.stub(
            "/v1/todos/7",
            with: [.status(503, headers: ["Retry-After": "0"]), .json(string: #"{"id":7}"#, status: 200)])
        let connect = Connect(transport: transport, retryPolicy: RetryPolicy(clock: ImmediateRetryClock()))
        let request = ConnectRequest.oneShotUpload(to: Self.url, payload: "made as it goes")

        let response = try connect.response(for: request, options: RequestOptions(acceptsEveryStatus: true)).wait()

        XCTAssertEqual(response.statusCode, 503, "the one attempt's answer: a one-shot body is not sent again")
        XCTAssertEqual(transport.requests.count, 1)
    }

    func testValidatorsCheckOnlySuccessfulAnswersWhenEveryStatusIsAccepted() throws {
        let transport = FakeTransport()
        transport.stub("/v1/todos/7", with: [.status(409), .json(string: "{}", status: 200)])
        let refusing = AnyResponseValidator { _ in throw CancellationError() }
        let connect = Connect(transport: transport)
        let options = RequestOptions(validators: [refusing], acceptsEveryStatus: true)
        let conflict = try connect.response(for: ConnectRequest(url: Self.url), options: options).wait()
        XCTAssertEqual(conflict.statusCode, 409, "a validator does not turn a non-2xx into an error")
        let error = try XCTUnwrap(
            connectError(of: connect.response(for: ConnectRequest(url: Self.url), options: options)))
        XCTAssertEqual(error.kind, .rejected, "a 2xx still passes the validators")
    }

    func testProcessorsSeeOnlySuccessfulAnswersWhenEveryStatusIsAccepted() throws {
        // Given: a processor that unwraps `data`, and another that waits, over a 404 and then a 200
        let transport = FakeTransport()
        transport.stub(
            "/v1/todos/7",
            with: [.json(string: #"{"error":"missing"}"#, status: 404), .json(string: #"{"data":{"id":7}}"#)])
        let unwrap = AnyResponseProcessor { response in
            var response = response
            let json = try JSONSerialization.jsonObject(with: response.data) as? [String: Any]
            response.data = try JSONSerialization.data(withJSONObject: json?["data"] ?? [String: Any]())
            return response
        }
        let waiting = AnyResponseProcessor { response async throws in
            var response = response
            response.data.append(Data(" ".utf8))
            return response
        }
        let connect = Connect(transport: transport, retryPolicy: nil)
        let options = RequestOptions(processors: [unwrap, waiting], acceptsEveryStatus: true)
        // When
        let missing = try connect.response(for: ConnectRequest(url: Self.url), options: options).wait()
        let found = try connect.response(for: ConnectRequest(url: Self.url), options: options).wait()
        // Then: the error's body is the server's, as it came; the success is processed
        XCTAssertEqual(missing.statusCode, 404)
        XCTAssertEqual(String(decoding: missing.data, as: UTF8.self), #"{"error":"missing"}"#)
        XCTAssertEqual(String(decoding: found.data, as: UTF8.self), #"{"id":7} "#)
    }

    func testAStreamedErrorBodyLongerThanTheLimitFailsInsteadOfBeingCutShort() async throws {
        let body = Data(repeating: 0x61, count: 100)
        let transport = FakeTransport.answering(.stream([body.prefix(60), body.dropFirst(60)], status: 500))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let options = RequestOptions(acceptsEveryStatus: true)
        // Within the limit: the whole body reaches the reader.
        let whole = connect.stream(
            ConnectRequest(url: Self.url), options: options, streaming: StreamingOptions(errorBodyLimit: 100))
        var read = Data()
        for try await chunk in whole { read.append(chunk) }
        XCTAssertEqual(read, body)
        let status = try await whole.response.statusCode
        XCTAssertEqual(status, 500)
        // Past it: a typed error, not the first 99 bytes as if they were the answer.
        let tooLong = connect.stream(
            ConnectRequest(url: Self.url), options: options, streaming: StreamingOptions(errorBodyLimit: 99))
        do {
            _ = try await tooLong.response
            XCTFail("expected responseTooLarge")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .responseTooLarge)
            XCTAssertEqual(error.statusCode, 500)
        }
    }

    /// `errorBodyLimit` is a stream's: a request read whole (`response(for:)`, as the OpenAPI transport sends an
    /// operation that accepts only JSON) gets an error body of any length under the client's size limit.
    func testAnErrorBodyReadWholeIsNotHeldToAStreamsErrorBodyLimit() throws {
        let body = Data(repeating: 0x61, count: 2 << 20)
        let transport = FakeTransport.answering(.data(body, status: 404))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let answer = try connect.response(
            for: ConnectRequest(url: Self.url), options: RequestOptions(acceptsEveryStatus: true)
        ).wait()
        XCTAssertEqual(answer.statusCode, 404)
        XCTAssertEqual(answer.data.count, body.count)
    }

    /// An error handler that takes a status as an answer (the usage guide lets it return `nil`) gets a streamed body
    /// whole or a typed error: its first `errorBodyLimit` bytes, read for the handler, reached the reader as the whole
    /// body, and a transfer that broke half-way ended cleanly.
    func testAStreamedErrorBodyTheHandlerAcceptsIsWholeOrAnError() async throws {
        struct Accepting: ErrorHandling {
            func handle(response: [String: Any]) -> (any Error)? { nil }
            func handle(_ response: ConnectResponse) -> (any Error)? { nil }
        }
        let body = Data(repeating: 0x61, count: 100)
        let transport = FakeTransport.answering(.stream([body.prefix(60), body.dropFirst(60)], status: 404))
        let connect = Connect(transport: transport, errorHandler: Accepting(), retryPolicy: nil)
        // Within the limit: the whole body reaches the reader.
        let whole = connect.stream(ConnectRequest(url: Self.url), streaming: StreamingOptions(errorBodyLimit: 100))
        var read = Data()
        for try await chunk in whole { read.append(chunk) }
        XCTAssertEqual(read, body)
        // Past it: a typed error, not the first 99 bytes as if they were the whole answer.
        let tooLong = connect.stream(ConnectRequest(url: Self.url), streaming: StreamingOptions(errorBodyLimit: 99))
        do {
            var cut = Data()
            for try await chunk in tooLong { cut.append(chunk) }
            XCTFail("expected responseTooLarge, read \(cut.count) bytes as the whole body")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .responseTooLarge)
            XCTAssertEqual(error.statusCode, 404)
        }
    }

    // MARK: - The client's defaults and the request's name

    func testTheClientsDefaultsFillWhatTheRequestLeavesAndTheNameReachesMiddlewares() throws {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let names = Recorder<String>()
        let naming = AnyMiddleware { request, context, next in
            names.append(context.connectorName)
            return next(request)
        }
        let connect = Connect(
            transport: transport, middlewares: [naming],
            configuration: ServerConfiguration(
                host: "api.example.com", basePath: "/v1", defaultHeaders: [HTTPHeader(name: "X-Key", value: "k")],
                defaultQueryItems: [URLQueryItem(name: "v", value: "2")]),
            settings: Connect.Settings(defaultHeaders: [.accept("application/json"), .userAgent("Tests")]))
        var request = ConnectRequest(url: Self.url)
        request.setValue("text/plain", forHTTPHeaderField: "Accept")
        _ = try connect.response(for: request, name: "getTodo", options: RequestOptions(headers: [.userAgent("Call")]))
            .wait()
        let sent = try XCTUnwrap(transport.requests.first)
        XCTAssertEqual(sent.value(forHTTPHeaderField: "Accept"), "text/plain", "the request's own field wins")
        XCTAssertEqual(sent.value(forHTTPHeaderField: "User-Agent"), "Call", "the call's options win over all")
        XCTAssertEqual(sent.value(forHTTPHeaderField: "X-Key"), "k", "the server's defaults, for its origin")
        XCTAssertEqual(sent.url?.query, "v=2")
        XCTAssertEqual(names.values, ["getTodo"])
        // Another origin gets neither the server's headers nor its query items.
        _ = try connect.response(for: ConnectRequest(url: URL(string: "https://other.example.com/x")!)).wait()
        let other = try XCTUnwrap(transport.requests.last)
        XCTAssertNil(other.value(forHTTPHeaderField: "X-Key"))
        XCTAssertNil(other.url?.query)
    }

    /// A negative size or redirect limit fails the call unsent, `invalidRequest`, whatever the transport: only the
    /// engines' exchange refused it, and a fake (or an app's own transport) was sent the request, a size limit of -1
    /// failing even an empty body as too large.
    func testANegativeLimitFailsTheCallUnsentOverAnyTransport() throws {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(transport: transport, retryPolicy: nil)
        var redirects = RequestOptions()
        redirects.maxRedirects = -1
        for options in [RequestOptions(maxResponseBytes: -1), redirects] {
            let built = connect.response(for: ConnectRequest(url: Self.url), options: options)
            let connector = connect.request(Route(url: Self.url), options: options)
            XCTAssertEqual(connectError(of: built)?.kind, .invalidRequest)
            XCTAssertEqual(connectError(of: connector)?.kind, .invalidRequest)
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }

    /// A URL made `relativeTo:` a base keeps its base when the client adds its default query items, and a connector's
    /// base URL made so keeps its base when the connector names a port: each was rebuilt from its relative part alone,
    /// with no scheme or host.
    func testAURLMadeRelativeToABaseKeepsItWhenTheClientAddsToIt() throws {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(
            transport: transport, retryPolicy: nil,
            configuration: ServerConfiguration(
                host: "api.test", basePath: "/v1", defaultQueryItems: [URLQueryItem(name: "key", value: "K")]))
        let relative = try XCTUnwrap(URL(string: "todos?page=2", relativeTo: URL(string: "https://api.test/v1/")))
        _ = try connect.response(for: ConnectRequest(url: relative)).wait(timeout: 5)
        XCTAssertEqual(transport.requests.last?.url?.absoluteString, "https://api.test/v1/todos?page=2&key=K")

        let base = try XCTUnwrap(URL(string: "v2/", relativeTo: URL(string: "https://other.test/api/")))
        _ = try connect.request(Route("/todos", baseURL: base, port: 8443)).wait(timeout: 5)
        XCTAssertEqual(transport.requests.last?.url?.absoluteString, "https://other.test:8443/api/v2/todos")
    }

    /// A blank `Content-Type` on a built request went out as an empty `Content-Type:` field, and kept the client's
    /// default out: as in a connector's headers, it names none and is passed over, at every level (the request, the
    /// call's options, a middleware's).
    func testABlankContentTypeOnABuiltRequestIsPassedOverAsInAConnector() throws {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let plain = Connect(transport: transport, retryPolicy: nil)
        let typed = Connect(
            transport: transport, retryPolicy: nil,
            settings: Connect.Settings(
                defaultHeaders: [HTTPHeader(name: "Content-Type", value: "text/csv")],
                methodOptions: [.post: RequestOptions(headers: [HTTPHeader(name: "Content-Type", value: " ")])]))
        for blank in ["", "  ", "\t", " \t "] {
            let body = ConnectRequest.Body.bytes(Data("a,b".utf8))
            let request = ConnectRequest(
                method: .post, url: Self.url, headerFields: ["Content-Type": blank], body: body)
            let blanking = Connect(
                transport: transport,
                middlewares: [.adapter { $0.setValue(blank, forHTTPHeaderField: "Content-Type") }],
                retryPolicy: nil)
            let setting = RequestOptions(headers: [HTTPHeader(name: "Content-Type", value: blank)])
            let typedRequest = ConnectRequest(
                method: .post, url: Self.url, headerFields: ["Content-Type": "text/plain"], body: body)
            // When
            _ = try plain.response(for: request).wait()
            let none = try XCTUnwrap(transport.requests.last)
            _ = try typed.response(for: request).wait()
            let defaulted = try XCTUnwrap(transport.requests.last)
            _ = try plain.response(for: typedRequest, options: setting).wait()
            let kept = try XCTUnwrap(transport.requests.last)
            _ = try blanking.response(for: typedRequest).wait()
            let blanked = try XCTUnwrap(transport.requests.last)
            // Then
            let label = blank.debugDescription
            XCTAssertNil(none.value(forHTTPHeaderField: "Content-Type"), label)
            XCTAssertEqual(defaulted.value(forHTTPHeaderField: "Content-Type"), "text/csv", label)
            XCTAssertEqual(kept.value(forHTTPHeaderField: "Content-Type"), "text/plain", label)
            XCTAssertNil(blanked.value(forHTTPHeaderField: "Content-Type"), label)
        }
    }

    func testAZeroTimeoutInTheOptionsFailsTheCallUnsent() throws {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(transport: transport)
        let error = try XCTUnwrap(
            connectError(of: connect.response(for: ConnectRequest(url: Self.url), options: RequestOptions(timeout: 0))))
        XCTAssertEqual(error.invalidRequestReason, .invalidTimeout(0))
        XCTAssertTrue(transport.requests.isEmpty)
    }

    func testABuiltRequestsOwnTimeoutBeatsTheClientsAndABadOneFailsUnsent() throws {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(transport: transport, settings: Connect.Settings(options: RequestOptions(timeout: 30)))
        _ = try connect.response(for: ConnectRequest(url: Self.url, timeoutInterval: 5)).wait()
        XCTAssertEqual(transport.requests.last?.timeoutInterval, 5, "the request's own timeout beats the client's")
        _ = try connect.response(for: ConnectRequest(url: Self.url)).wait()
        XCTAssertEqual(transport.requests.last?.timeoutInterval, 30, "the default 60 gives way to the client's")
        _ = try connect.response(
            for: ConnectRequest(url: Self.url, timeoutInterval: 5), options: RequestOptions(timeout: 2)
        ).wait()
        XCTAssertEqual(transport.requests.last?.timeoutInterval, 2, "the call's options beat the request")
        let sent = transport.requests.count
        for bad: TimeInterval in [0, -1, .nan] {
            let error = connectError(of: connect.response(for: ConnectRequest(url: Self.url, timeoutInterval: bad)))
            guard case .invalidTimeout? = error?.invalidRequestReason else {
                return XCTFail("a timeout of \(bad) gave \(String(describing: error))")
            }
        }
        XCTAssertEqual(transport.requests.count, sent, "nothing was sent with a bad timeout")
    }

    // MARK: - One-shot bodies

    func testAOneShotBodyIsNotRetriedAndTheLogSaysWhy() throws {
        let transport = FakeTransport.answering(.status(503, headers: ["Retry-After": "0"]))
        let lines = Recorder<String>()
        let connect = Connect(
            transport: transport, retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            settings: Connect.Settings(logger: RecordingLogger(lines: lines)))
        var request = ConnectRequest(method: .put, url: Self.url)
        request.body = .stream(ConnectRequest.OneShotStream(InputStream(data: Data("abc".utf8))))
        let response = try connect.response(
            for: request, name: "uploadFile", options: RequestOptions(acceptsEveryStatus: true)
        ).wait()
        XCTAssertEqual(response.statusCode, 503)
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertTrue(
            lines.values.contains { $0.contains("PUT") && $0.contains("(uploadFile)") && $0.contains("one-shot") },
            "\(lines.values)")
    }
}
