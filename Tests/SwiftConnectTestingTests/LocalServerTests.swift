import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

final class LocalServerTests: XCTestCase {
    private var server: LocalServer!
    private var session: URLSession!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 32
        session = URLSession(configuration: configuration)
    }

    override func tearDown() {
        session.invalidateAndCancel()
        server.stop()
        server = nil
    }

    // MARK: - Routing

    func testGetJSONRoute() throws {
        // Given
        server.route("GET", "/hello") { _ in .json(["greeting": "hi", "path": "/a/b"]) }

        // When
        let result = fetch("/hello")

        // Then
        XCTAssertNil(result.error)
        XCTAssertEqual(result.response?.statusCode, 200)
        XCTAssertEqual(result.response?.value(forHTTPHeaderField: "Content-Type"), "application/json")
        XCTAssertEqual(result.text, #"{"greeting":"hi","path":"/a/b"}"#)
        XCTAssertEqual(server.requestCount, 1)
        XCTAssertEqual(server.requestCount(for: "GET", path: "/hello"), 1)
    }

    func testPathParametersArePercentDecodedAndRawPathIsKept() throws {
        // Given
        server.route("GET", "/items/:id") { request in .text(request.pathParameters["id"] ?? "-") }

        // When
        let result = fetch("/items/a%2Fb")

        // Then
        XCTAssertEqual(result.text, "a/b")
        let request = try XCTUnwrap(server.requests.first)
        XCTAssertEqual(request.path, "/items/a%2Fb")
        XCTAssertEqual(request.target, "/items/a%2Fb")
        XCTAssertEqual(request.decodedPathSegments, ["items", "a/b"])
        XCTAssertEqual(request.pathParameters, ["id": "a/b"])
    }

    func testQueryItemsAreDecodedInOrder() throws {
        // Given
        server.route("GET", "/search") { _ in .status(204) }

        // When
        let result = fetch("/search?q=swift%20connect&tag=a&tag=b%26c&flag")

        // Then
        XCTAssertEqual(result.response?.statusCode, 204)
        let request = try XCTUnwrap(server.requests.first)
        XCTAssertEqual(request.path, "/search")
        XCTAssertEqual(request.queryItems.map(\.name), ["q", "tag", "tag", "flag"])
        XCTAssertEqual(request.queryItems.map(\.value), ["swift connect", "a", "b&c", ""])
        XCTAssertEqual(request.queryItem("q"), "swift connect")
    }

    func testAPlusInTheQueryStaysAPlusAsURLComponentsReadsIt() throws {
        // Given: `URLComponents` sends a literal `+` as is, so only a form-encoding client means a space by it.
        server.route("GET", "/search") { _ in .status(204) }
        var components = URLComponents(url: server.baseURL, resolvingAgainstBaseURL: false)!
        components.path = "/search"
        components.queryItems = [URLQueryItem(name: "q", value: "1+1"), URLQueryItem(name: "s", value: "a b")]

        // When
        _ = fetch(URLRequest(url: components.url!))

        // Then: the server reads the items as `URLComponents` does, raw `+` included.
        let request = try XCTUnwrap(server.requests.first)
        XCTAssertEqual(request.target, "/search?q=1+1&s=a%20b")
        XCTAssertEqual(request.queryItem("q"), "1+1")
        XCTAssertEqual(request.queryItem("s"), "a b")
        XCTAssertEqual(request.queryItems.map(\.value), components.queryItems?.map(\.value))
    }

    func testLaterRoutesWinAndWildcardsMatchPrefixes() throws {
        // Given
        server.route("*", "/files/*") { request in .text("any " + (request.pathParameters["*"] ?? "")) }
        server.route("GET", "/files/*") { request in .text("get " + (request.pathParameters["*"] ?? "")) }
        server.route("GET", "/files/special") { _ in .text("special") }

        // When / Then
        XCTAssertEqual(fetch("/files/a/b").text, "get a/b")
        XCTAssertEqual(fetch("/files/special").text, "special")
        XCTAssertEqual(fetch("/files/x", method: "DELETE").text, "any x")
    }

    func testUnknownRouteAnswers404WithJSON() {
        // When
        let result = fetch("/x")

        // Then
        XCTAssertEqual(result.response?.statusCode, 404)
        XCTAssertEqual(result.text, #"{"error":"no route for GET /x"}"#)
    }

    func testRoutesCanBeAddedWhileRunning() {
        XCTAssertEqual(fetch("/late").response?.statusCode, 404)
        server.route("GET", "/late") { _ in .text("here") }
        XCTAssertEqual(fetch("/late").text, "here")
    }

    // MARK: - Request bodies

    func testPostBodyWithContentLength() throws {
        // Given
        server.route("POST", "/echo") { request in .data(request.body) }
        var request = URLRequest(url: server.baseURL.appendingPathComponent("echo"))
        request.httpMethod = "POST"
        request.httpBody = Data("name=swift".utf8)

        // When
        let result = fetch(request)

        // Then
        XCTAssertEqual(result.text, "name=swift")
        let received = try XCTUnwrap(server.requests.first)
        XCTAssertEqual(received.method, "POST")
        XCTAssertEqual(received.header("content-length"), "10")
        XCTAssertEqual(received.bodyText, "name=swift")
    }

    /// Requests a real server refuses are refused here too, not served: a target that is neither a path nor an
    /// absolute URL (`?q=1`, `items/1`: a transport that left out the path), an HTTP/1.1 request with no `Host` or
    /// two; and an empty path segment is no value for a `:name` capture. Else a client's bug passed its tests.
    func testMalformedTargetsMissingOrRepeatedHostsAndEmptyCapturesAreNotServed() throws {
        // Given
        server.route("GET", "/") { _ in .text("root") }
        server.route("GET", "/items/:id") { request in .text("item \(request.pathParameters["id"] ?? "-")") }
        server.route("OPTIONS", "*") { _ in .text("options") }
        let refused = [
            "GET ?q=1 HTTP/1.1\r\nHost: x\r\n\r\n", "GET items/1 HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET foo?u=http://x/items/1 HTTP/1.1\r\nHost: x\r\n\r\n", "GET * HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /items/1 HTTP/1.1\r\n\r\n", "GET /items/1 HTTP/1.1\r\nHost: x\r\nhost: y\r\n\r\n",
        ]
        for request in refused {
            // When
            let client = try RawClient(port: server.port)
            client.send(request)
            // Then
            XCTAssertEqual(try client.readResponse().status, 400, request)
        }
        XCTAssertEqual(server.requests.count, 0)
        for (request, expected) in [
            ("GET /items/ HTTP/1.1\r\nHost: x\r\n\r\n", 404), ("GET http://x/items/7 HTTP/1.1\r\nHost: x\r\n\r\n", 200),
            ("GET /items/7 HTTP/1.0\r\n\r\n", 200),
        ] {
            let client = try RawClient(port: server.port)
            client.send(request)
            XCTAssertEqual(try client.readResponse().status, expected, request)
        }
    }

    /// A transport that writes an unsendable request on the wire (a space in a field's name), then reports it
    /// refused, fails "unsendable requests are refused": the server's parser answers such a request 400 without
    /// counting it, so the check counts connections too.
    func testTheUnsendableCheckCatchesATransportThatSendsThenRefuses() {
        struct SendsThenRefuses: Transport {
            func send(_ request: URLRequest) -> Future<ConnectResponse> {
                if let port = request.url?.port, let client = try? RawClient(port: port) {
                    client.send("GET /echo HTTP/1.1\r\nHost: x\r\nX Note: a\r\n\r\n")
                    _ = try? client.readResponse()
                }
                return Future(error: ConnectError.invalidRequest(.invalidHeader(name: "X Note"), request: request))
            }
        }
        let outcomes = TransportConformance.run(only: ["unsendable requests are refused"]) { SendsThenRefuses() }
        XCTAssertEqual(outcomes.map(\.check), ["unsendable requests are refused"])
        XCTAssertTrue(outcomes.first?.failure?.contains("connections") == true, "\(outcomes)")
    }

    func testChunkedRequestBodyIsDecoded() throws {
        // Given
        server.route("POST", "/echo") { request in .data(request.body) }
        let client = try RawClient(port: server.port)

        // When
        client.send(
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: ignored\r\n\r\n"
        )
        let response = try client.readResponse()

        // Then
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.text, "hello, world")
        XCTAssertEqual(server.requests.first?.header("transfer-encoding"), "chunked")
    }

    func testARequestWithBothTransferEncodingAndContentLengthIsAnsweredThenTheConnectionCloses() throws {
        // Given: a buffered and a streaming route, and a smuggling attempt: the length frames a body that the chunked
        // coding, which wins (RFC 9112 §6.3), reads as "abc" followed by a second request
        server.route("POST", "/echo") { request in .data(request.body) }
        server.streamingRoute("POST", "/stream") { _, body in .data(body.readAll()) }
        server.route("GET", "/smuggled") { _ in .text("smuggled") }
        for path in ["/echo", "/stream"] {
            let client = try RawClient(port: server.port)

            // When
            client.send(
                "POST \(path) HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "3\r\nabc\r\n0\r\n\r\n" + "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try client.readResponse()

            // Then: the body read by its transfer coding, and the connection closed after the answer (RFC 9112
            // §6.1): nothing more is read from it as a request
            XCTAssertEqual(response.status, 200, path)
            XCTAssertEqual(response.text, "abc", path)
            XCTAssertEqual(response.header("connection"), "close", path)
            XCTAssertTrue(client.readsEndOfStream(), path)
        }
        XCTAssertEqual(server.requestCount(for: "GET", path: "/smuggled"), 0)
    }

    func testAnHTTP10RequestWithTransferEncodingIsAnsweredThenTheConnectionCloses() throws {
        // Given: HTTP/1.0 has no transfer coding; a reader of the same bytes may frame them otherwise (RFC 9112 §6.1)
        server.route("POST", "/echo") { request in .data(request.body) }
        server.route("GET", "/smuggled") { _ in .text("smuggled") }
        let client = try RawClient(port: server.port)

        // When: a kept-alive HTTP/1.0 request with a chunked body, then a second request
        client.send(
            "POST /echo HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "3\r\nabc\r\n0\r\n\r\n" + "GET /smuggled HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let response = try client.readResponse()

        // Then: answered, then closed: the second request is not read
        XCTAssertEqual(response.text, "abc")
        XCTAssertEqual(response.header("connection"), "close")
        XCTAssertTrue(client.readsEndOfStream())
        XCTAssertEqual(server.requestCount(for: "GET", path: "/smuggled"), 0)
    }

    func testAnHTTP10ClientGetsABodyOfUnknownLengthDelimitedByTheClose() throws {
        // Given: bodies of unknown length, which go chunked to HTTP/1.1, and HTTP/1.0, which has no transfer coding
        // (RFC 9112 §6.1: a server must not send one to a 1.0 client)
        server.route("GET", "/stream") { _ in
            .stream(contentLength: nil) { write in _ = write(Data("hello, ".utf8)) && write(Data("world".utf8)) }
        }
        server.route("GET", "/fault") { _ in .text("hello, world").withFault(.chunked) }
        server.route("GET", "/events") { _ in .serverSentEvents([ServerSentEvent(data: "hello, world")]) }
        let bodies = ["/stream": "hello, world", "/fault": "hello, world", "/events": "data: hello, world\n\n"]
        for (path, body) in bodies.sorted(by: { $0.key < $1.key }) {
            let client = try RawClient(port: server.port)

            // When: it asks to keep the connection open
            client.send("GET \(path) HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            let response = try client.readResponse()

            // Then: no transfer coding; the body runs to the close, which the server says it makes, and makes
            XCTAssertEqual(response.status, 200, path)
            XCTAssertNil(response.header("transfer-encoding"), path)
            XCTAssertNil(response.header("content-length"), path)
            XCTAssertEqual(response.header("connection"), "close", path)
            XCTAssertTrue(client.sawEndOfStream, "\(path): the body ended without the server closing")
            XCTAssertEqual(response.text, body, path)
        }

        // And an HTTP/1.1 client still gets them chunked on a connection kept open
        let client = try RawClient(port: server.port)
        client.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try client.readResponse()
        XCTAssertEqual(response.header("transfer-encoding"), "chunked")
        XCTAssertEqual(response.text, "hello, world")
        client.send("GET /fault HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(try client.readResponse().text, "hello, world")
    }

    func testATransferCodingOtherThanChunkedAloneIsRefused() throws {
        // Given: codings the server does not decode, before `chunked` (RFC 9112 §6.1)
        server.route("POST", "/echo") { request in .data(request.body) }
        for codings in ["gzip, chunked", "chunked, chunked", "gzip\r\nTransfer-Encoding: chunked"] {
            let client = try RawClient(port: server.port)

            // When
            client.send(
                "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \(codings)\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
            let response = try client.readResponse()

            // Then: refused, not handed over as if the body were plain
            XCTAssertEqual(response.status, 400, codings.debugDescription)
            XCTAssertTrue(response.text.contains("unsupported transfer encoding"), response.text)
            XCTAssertTrue(client.readsEndOfStream(), codings.debugDescription)
        }
        XCTAssertEqual(server.requestCount(for: "POST", path: "/echo"), 0)

        // And `chunked` alone, in any case and spacing, is read
        let client = try RawClient(port: server.port)
        client.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:  Chunked \r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        XCTAssertEqual(try client.readResponse().text, "abc")
    }

    func testAChunkSizeMayBeFollowedByWhiteSpaceButNotSplitOrPrecededByIt() throws {
        // Given: sizes followed by white space, before an extension and before the line's end (RFC 9112 §7.1.1)
        server.route("POST", "/echo") { request in .data(request.body) }
        let client = try RawClient(port: server.port)
        client.send(
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5 \t;ext=1\r\nhello\r\n7\t \r\n, world\r\n0\r\n\r\n")
        let accepted = try client.readResponse()
        XCTAssertEqual(accepted.status, 200)
        XCTAssertEqual(accepted.text, "hello, world")

        // When: white space inside the size (`1 0`, which read as 0x10) or before it
        for size in ["1 0", " 10", "\t10", "1\t0;ext"] {
            let client = try RawClient(port: server.port)
            client.send(
                "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "\(size)\r\n0123456789abcdef\r\n0\r\n\r\n")
            let response = try client.readResponse()

            // Then: refused as malformed, the connection closed, the route never called
            XCTAssertEqual(response.status, 400, size.debugDescription)
            XCTAssertTrue(response.text.contains("malformed chunk size"), response.text)
            XCTAssertTrue(client.readsEndOfStream(), size.debugDescription)
        }
        XCTAssertEqual(server.requestCount(for: "POST", path: "/echo"), 1)
    }

    func testExpect100ContinueIsAnsweredBeforeTheBody() throws {
        // Given
        server.route("PUT", "/upload") { request in .text("got \(request.body.count)") }
        let client = try RawClient(port: server.port)

        // When
        client.send("PUT /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        let interim = try client.readResponse()
        client.send("abcd")
        let final = try client.readResponse()

        // Then
        XCTAssertEqual(interim.status, 100)
        XCTAssertEqual(final.status, 200)
        XCTAssertEqual(final.text, "got 4")
    }

    // MARK: - Connections

    func testKeepAliveServesSequentialRequestsOnOneConnection() throws {
        // Given
        server.route("GET", "/n/:n") { request in .text(request.pathParameters["n"] ?? "") }
        let client = try RawClient(port: server.port)

        // When
        client.send("GET /n/1 HTTP/1.1\r\nHost: x\r\n\r\n")
        let first = try client.readResponse()
        client.send("GET /n/2 HTTP/1.1\r\nHost: x\r\n\r\n")
        let second = try client.readResponse()
        client.close()

        // Then
        XCTAssertEqual([first.text, second.text], ["1", "2"])
        XCTAssertEqual(first.header("connection"), "keep-alive")
        XCTAssertEqual(server.connectionCount, 1)
        XCTAssertEqual(server.requestCount, 2)
        XCTAssertEqual(Set(server.requests.map(\.connectionID)).count, 1)
    }

    func testPipelinedRequestsAreAnsweredInOrder() throws {
        // Given
        server.route("GET", "/n/:n") { request in .text(request.pathParameters["n"] ?? "") }
        let client = try RawClient(port: server.port)

        // When
        client.send((1...3).map { "GET /n/\($0) HTTP/1.1\r\nHost: x\r\n\r\n" }.joined())
        let responses = try (1...3).map { _ in try client.readResponse() }

        // Then
        XCTAssertEqual(responses.map(\.text), ["1", "2", "3"])
        XCTAssertEqual(server.connectionCount, 1)
    }

    func testConnectionCloseFromClientIsHonoured() throws {
        // Given
        server.route("GET", "/") { _ in .text("bye") }
        let client = try RawClient(port: server.port)

        // When
        client.send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let response = try client.readResponse()

        // Then
        XCTAssertEqual(response.text, "bye")
        XCTAssertEqual(response.header("connection"), "close")
        XCTAssertTrue(client.readsEndOfStream())
    }

    func testHeadResponseHasLengthButNoBody() throws {
        // Given
        server.route("*", "/doc") { _ in .text("12345") }
        let client = try RawClient(port: server.port)

        // When
        client.send("HEAD /doc HTTP/1.1\r\nHost: x\r\n\r\nGET /doc HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try client.readResponse(bodyless: true)
        let get = try client.readResponse()

        // Then: the GET is read right after the HEAD's headers, so no body was sent for the HEAD.
        XCTAssertEqual(head.header("content-length"), "5")
        XCTAssertEqual(head.body.count, 0)
        XCTAssertEqual(get.text, "12345")
    }

    func testMalformedRequestLineGets400AndClose() throws {
        // Given
        let client = try RawClient(port: server.port)

        // When
        client.send("NOT A VALID REQUEST LINE\r\n\r\n")
        let response = try client.readResponse()

        // Then
        XCTAssertEqual(response.status, 400)
        XCTAssertEqual(response.header("connection"), "close")
        XCTAssertTrue(client.readsEndOfStream())
        XCTAssertEqual(server.requestCount, 0)
    }

    func testAMalformedHeadOrLengthIsAnswered400AndTheConnectionCloses() throws {
        // Given: a route that must never see these requests
        server.route("*", "/echo") { request in .data(request.body) }
        let post = "POST /echo HTTP/1.1\r\nHost: x\r\n"
        let chunked = post + "Transfer-Encoding: chunked\r\n\r\n"
        let heads = [
            "obs-fold": "GET /echo HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n folded\r\n\r\n",
            "obs-fold with a colon": "GET /echo HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n\tX-B: 2\r\n\r\n",
            "white space before the first field": "GET /echo HTTP/1.1\r\n Host: x\r\n\r\n",
            "no colon": "GET /echo HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n",
            "space before the colon": "GET /echo HTTP/1.1\r\nHost : x\r\n\r\n",
            "NUL in a value": "GET /echo HTTP/1.1\r\nHost: x\r\nX-A: a\u{0}b\r\n\r\n",
            "NUL in a name": "GET /echo HTTP/1.1\r\nHost: x\r\nX\u{0}A: 1\r\n\r\n",
            "NUL in the target": "GET /ec\u{0}ho HTTP/1.1\r\nHost: x\r\n\r\n",
            "bare CR in a value": "GET /echo HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n",
            "signed length": post + "Content-Length: +3\r\n\r\nabc",
            "negative length": post + "Content-Length: -3\r\n\r\nabc",
            "spaced length": post + "Content-Length: 1 2\r\n\r\nabc",
            "empty length": post + "Content-Length:\r\n\r\nabc",
            "two lengths": post + "Content-Length: 3, 4\r\n\r\nabcd",
            "two length fields": post + "Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
            "hex length": post + "Content-Length: 0x3\r\n\r\nabc",
            "length beyond Int": post + "Content-Length: 99999999999999999999\r\n\r\n",
            "empty transfer encoding": post + "Transfer-Encoding:\r\n\r\n0\r\n\r\n",
            "chunked then gzip": post + "Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
            "chunk size on a bare LF": chunked + "3\nabc\r\n0\r\n\r\n",
            "chunk data on a bare LF": chunked + "3\r\nabc\n0\r\n\r\n",
        ]
        for (name, head) in heads.sorted(by: { $0.key < $1.key }) {
            let client = try RawClient(port: server.port)

            // When
            client.send(head)
            let response = try client.readResponse()

            // Then: refused, and the connection closed after the answer
            XCTAssertEqual(response.status, 400, name)
            XCTAssertEqual(response.header("connection"), "close", name)
            XCTAssertTrue(client.readsEndOfStream(), name)
        }
        XCTAssertEqual(server.requests.count, 0)
        XCTAssertTrue(server.waitUntilNoConnection(timeout: 10))
    }

    func testChunkExtensionsAndTrailersAreSkippedAndEqualLengthsAccepted() throws {
        // Given
        server.route("POST", "/echo") { request in .data(request.body) }
        let client = try RawClient(port: server.port)

        // When: extensions (quoted too), trailer fields, then a length given twice alike (RFC 9110 §8.6)
        client.send(
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "3;name=value;q=\"a;b\"\r\nabc\r\n2;x\r\nde\r\n0;last\r\nX-Sum: 5\r\nX-Other: 1\r\n\r\n"
                + "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2, 2\r\nContent-Length: 2\r\n\r\nfg")

        // Then: the bodies alone, and the connection still serves the request that followed
        XCTAssertEqual(try client.readResponse().text, "abcde")
        XCTAssertEqual(try client.readResponse().text, "fg")
    }

    func testAClientThatClosesMidBodyLeavesNoRequestOrConnectionBehind() throws {
        // Given: a buffered route and a streaming one
        server.route("GET", "/ping") { _ in .text("pong") }
        server.route("POST", "/echo") { request in .data(request.body) }
        let streamed = Protected<[Bool]>([])
        server.streamingRoute("POST", "/stream") { _, body in
            _ = body.readAll()
            streamed.withLock { $0.append(body.isComplete) }
            return .status(200)
        }
        let bodies = [
            "Content-Length: 10\r\n\r\nabc", "Transfer-Encoding: chunked\r\n\r\n5\r\nab",
            "Transfer-Encoding: chunked\r\n\r\n0\r\nX-Trailer: 1\r\n",
        ]
        for path in ["/echo", "/stream"] {
            for body in bodies {
                // When: on a connection the server serves (a first answer tells), the client sends part of a
                // body, then closes
                let client = try RawClient(port: server.port)
                client.send("GET /ping HTTP/1.1\r\nHost: x\r\n\r\n")
                XCTAssertEqual(try client.readResponse().text, "pong")
                client.send("POST \(path) HTTP/1.1\r\nHost: x\r\n" + body)
                client.close()

                // Then: the connection ends without an answer or a crash; nothing stays in flight
                XCTAssertTrue(server.waitUntilNoConnection(timeout: 10), "\(path) \(body.debugDescription)")
                XCTAssertEqual(server.requestsInFlight, 0)
            }
        }
        XCTAssertEqual(server.requestCount(for: "POST", path: "/echo"), 0)
        XCTAssertEqual(streamed.snapshot, [false, false, false], "a body cut short was read as whole")

        // And the server still serves, and stops at once
        let client = try RawClient(port: server.port)
        client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok")
        XCTAssertEqual(try client.readResponse().text, "ok")
        server.stop()
        XCTAssertTrue(client.readsEndOfStream())
    }

    func testARequestHeadEndedByBareLineFeedsIsAnsweredAtOnce() throws {
        // Given: RFC 9112 §2.2 lets a recipient accept a bare LF as a line terminator.
        server.route("*", "/lf") { request in .text("\(request.header("x-test") ?? "-") \(request.bodyText)") }
        let client = try RawClient(port: server.port)

        // When: bare LFs throughout, then CRLF lines ended by a bare LF, then CRLFs only, pipelined.
        client.send("POST /lf HTTP/1.1\nHost: x\nX-Test: bare\nContent-Length: 3\n\nabc")
        client.send("GET /lf HTTP/1.1\r\nHost: x\r\nX-Test: mixed\r\n\n")
        client.send("GET /lf HTTP/1.1\r\nHost: x\r\nX-Test: crlf\r\n\r\n")
        let responses = try (0..<3).map { _ in try client.readResponse() }

        // Then
        XCTAssertEqual(responses.map(\.status), [200, 200, 200])
        XCTAssertEqual(responses.map(\.text), ["bare abc", "mixed ", "crlf "])
        XCTAssertEqual(server.requests.map(\.target), ["/lf", "/lf", "/lf"])
    }

    func testOversizedHeadersGet431() throws {
        // Given
        let client = try RawClient(port: server.port)

        // When
        client.send("GET / HTTP/1.1\r\nX-Big: \(String(repeating: "a", count: 70 * 1024))\r\n\r\n")
        let response = try client.readResponse()

        // Then
        XCTAssertEqual(response.status, 431)
    }

    func testSixtyFourConcurrentKeepAliveConnections() throws {
        // Given
        server.route("GET", "/ping") { _ in .text("pong") }
        let clients = try (0..<64).map { _ in try RawClient(port: server.port) }

        // When: every round sends one request on each connection before reading any answer.
        for _ in 0..<10 {
            for client in clients { client.send("GET /ping HTTP/1.1\r\nHost: x\r\n\r\n") }
            for client in clients { XCTAssertEqual(try client.readResponse().text, "pong") }
        }

        // Then
        XCTAssertEqual(server.openConnections, 64)
        XCTAssertEqual(server.connectionCount, 64)
        XCTAssertEqual(server.requestCount, 640)
    }

    func testThousandsOfPipelinedRequests() throws {
        // Given
        server.route("GET", "/n/:n") { request in .text(request.pathParameters["n"] ?? "") }
        let clients = try (0..<4).map { _ in try RawClient(port: server.port) }

        // When: 4 connections × 10 batches of 50 pipelined requests.
        var answers: [String] = []
        for batch in 0..<10 {
            for (index, client) in clients.enumerated() {
                client.send((0..<50).map { "GET /n/\(batch)-\(index)-\($0) HTTP/1.1\r\nHost: x\r\n\r\n" }.joined())
            }
            for client in clients {
                answers += try (0..<50).map { _ in try client.readResponse().text }
            }
        }

        // Then
        XCTAssertEqual(answers.count, 2000)
        XCTAssertEqual(answers.last, "9-3-49")
        XCTAssertEqual(server.requestCount, 2000)
        XCTAssertEqual(server.connectionCount, 4)
    }

    // MARK: - Faults and timing

    func testCloseBeforeHeadersFailsURLSessionWithURLError() {
        // Given
        server.route("GET", "/drop") { _ in .text("never sent").withFault(.closeBeforeHeaders) }

        // When
        let result = fetch("/drop")

        // Then
        XCTAssertNil(result.response)
        XCTAssertNotNil(result.error as? URLError, "expected a URLError, got \(String(describing: result.error))")
    }

    func testCloseMidBodyFailsTheClient() throws {
        // Given
        server.route("GET", "/cut") { _ in .text("0123456789").withFault(.closeMidBody(afterBytes: 4)) }
        let client = try RawClient(port: server.port)

        // When
        client.send("GET /cut HTTP/1.1\r\nHost: x\r\n\r\n")

        // Then
        XCTAssertThrowsError(try client.readResponse()) { error in
            XCTAssertEqual(error as? RawClient.Failure, .closedEarly(received: Array("0123".utf8)))
        }
        XCTAssertNotNil(fetch("/cut").error)
    }

    func testRawSendsExactlyTheGivenBytesThenCloses() throws {
        // Given a 204 with a body, which a well-behaved response never has
        let text = "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello"
        server.route("GET", "/raw") { _ in LocalServer.Response().withFault(.raw(Data(text.utf8))) }
        let client = try RawClient(port: server.port)

        // When
        client.send("GET /raw HTTP/1.1\r\nHost: x\r\n\r\n")

        // Then: those bytes and nothing else, then the end of the stream
        let head = try client.readHead()
        XCTAssertEqual(head.status, 204)
        XCTAssertEqual(head.headers.map(\.name), ["Content-Length"])
        XCTAssertEqual(try client.readExactly(5), Array("hello".utf8))
        XCTAssertTrue(client.readsEndOfStream())
    }

    func testChunkedResponseIsReassembled() {
        // Given
        server.route("GET", "/chunks") { _ in .text("abcdefghij").withFault(.chunked) }

        // When
        let result = fetch("/chunks")

        // Then
        XCTAssertEqual(result.text, "abcdefghij")
        XCTAssertEqual(result.response?.value(forHTTPHeaderField: "Transfer-Encoding"), "chunked")
    }

    func testAResponseHeaderWithCRLFIsAnswered500InsteadOfSplittingTheResponse() throws {
        // Given: a handler that puts a line break into a header value.
        server.route("GET", "/split") { _ in .text("ok").withHeader("X-Note", "a\r\nSet-Cookie: injected=1") }
        let client = try RawClient(port: server.port)

        // When
        client.send("GET /split HTTP/1.1\r\nHost: x\r\n\r\nGET /split HTTP/1.1\r\nHost: x\r\n\r\n")
        let first = try client.readResponse()
        let second = try client.readResponse()

        // Then: no injected field, a 500 saying which header is wrong, and the connection still framed correctly.
        for response in [first, second] {
            XCTAssertEqual(response.status, 500)
            XCTAssertNil(response.header("set-cookie"))
            XCTAssertTrue(response.text.contains("X-Note"), response.text)
        }
    }

    func testAResponseHeaderNameThatIsNotATokenIsAnswered500() throws {
        // Given
        server.route("GET", "/bad-name") { _ in .text("ok").withHeader("X-Bad: injected\r\nX-Other", "1") }

        // When
        let result = fetch("/bad-name")

        // Then
        XCTAssertEqual(result.response?.statusCode, 500)
        XCTAssertNil(result.response?.value(forHTTPHeaderField: "X-Other"))
    }

    func testAStatusOutside200To999IsAnswered500() throws {
        // Given: a final 1xx makes a client wait for the real answer for ever; other codes are not HTTP.
        for status in [100, 101, 199, 42, 1000, -1] {
            server.route("GET", "/status") { _ in .status(status) }
            let client = try RawClient(port: server.port)

            // When
            client.send("GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try client.readResponse()

            // Then
            XCTAssertEqual(response.status, 500, "status \(status)")
            XCTAssertTrue(response.text.contains("\(status)"), response.text)
        }
    }

    func testTrickleSendsChunksUntilTheClientLeaves() throws {
        // Given
        server.route("GET", "/stream") { _ in .status(200).withFault(.trickle(chunk: Data("tick".utf8), interval: 0.01))
        }
        let client = try RawClient(port: server.port)

        // When
        client.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try client.readHead()
        let chunks = try (0..<3).map { _ in try client.readChunk() }
        client.close()

        // Then
        XCTAssertEqual(head.header("transfer-encoding"), "chunked")
        XCTAssertEqual(chunks, Array(repeating: Data("tick".utf8), count: 3))
    }

    func testTrickleWithAnIntervalThatIsNotPositiveIsAnswered500() throws {
        for interval in [TimeInterval.nan, -1, 0] {
            // Given
            let fault = LocalServer.Response.Fault.trickle(chunk: Data("x".utf8), interval: interval)
            server.route("GET", "/stream") { _ in .status(200).withFault(fault) }
            let client = try RawClient(port: server.port)

            // When: only the head is read, so a server sending chunks for ever cannot hang the test.
            client.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
            let head = try client.readHead()
            client.close()

            // Then
            XCTAssertEqual(head.status, 500, "interval \(interval)")
            XCTAssertNotEqual(head.header("transfer-encoding"), "chunked", "interval \(interval)")
        }
    }

    func testLieAboutLengthKeepsTheConnectionOpenUntilStop() throws {
        // Given
        server.route("GET", "/short") { _ in .text("abc").withFault(.lieAboutLength(extra: 10)) }
        let client = try RawClient(port: server.port)
        client.send("GET /short HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try client.readHead()
        XCTAssertEqual(head.header("content-length"), "13")
        XCTAssertEqual(try client.readExactly(3), Array("abc".utf8))
        XCTAssertEqual(server.openConnections, 1)

        // When
        server.stop()

        // Then
        XCTAssertTrue(client.readsEndOfStream())
    }

    func testACloseMidBodyThatCutsNothingIsAnswered500() throws {
        // Given: cuts at or past the end of a body of known length (which sent it whole, the fault silently not
        // there), and below zero, with a body in memory and a streamed one
        let stream = LocalServer.Response.stream(contentLength: 3) { write in _ = write(Data("abc".utf8)) }
        for (afterBytes, response) in [
            (3, LocalServer.Response.text("abc")), (10, .text("abc")), (-1, .text("abc")), (3, stream), (-1, stream),
        ] {
            server.route("GET", "/cut") { _ in response.withFault(.closeMidBody(afterBytes: afterBytes)) }
            let client = try RawClient(port: server.port)

            // When
            client.send("GET /cut HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = try client.readResponse()

            // Then: a 500 saying why
            XCTAssertEqual(answer.status, 500, "afterBytes \(afterBytes)")
            XCTAssertTrue(answer.text.contains("closeMidBody(afterBytes: \(afterBytes))"), answer.text)
        }
    }

    func testALieAboutLengthThatDeclaresNoMoreThanTheBodyIsAnswered500() throws {
        // Given: lies of no extra byte (a whole body: no stall at all) or of fewer bytes than the body (which leaves
        // the rest to be read as the next response), with a body in memory and a streamed one of a known length
        let stream = LocalServer.Response.stream(contentLength: 3) { write in _ = write(Data("abc".utf8)) }
        for (extra, response) in [(0, LocalServer.Response.text("abc")), (-2, .text("abc")), (0, stream)] {
            server.route("GET", "/lie") { _ in response.withFault(.lieAboutLength(extra: extra)) }
            let client = try RawClient(port: server.port)

            // When
            client.send("GET /lie HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = try client.readResponse()

            // Then: a 500 saying why
            XCTAssertEqual(answer.status, 500, "extra \(extra)")
            XCTAssertTrue(answer.text.contains("lieAboutLength(extra: \(extra))"), answer.text)
        }
    }

    func testAFramingHeaderThatDoesNotFrameTheBodyIsAnswered500() throws {
        // Given: a handler's own Content-Length that is not its body's (the rest read as the next response, or a
        // client waiting for bytes that never come), or a Transfer-Encoding over a body sent as it is
        for (name, value) in [("Content-Length", "3"), ("Content-Length", "9"), ("Transfer-Encoding", "chunked")] {
            server.route("GET", "/framed") { _ in LocalServer.Response.text("hello").withHeader(name, value) }
            let client = try RawClient(port: server.port)

            // When
            client.send("GET /framed HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = try client.readResponse()

            // Then: a 500 saying why
            XCTAssertEqual(answer.status, 500, "\(name): \(value)")
            XCTAssertTrue(answer.text.contains(name), answer.text)
        }
    }

    func testAFramingHeaderThatFramesTheBodyOrAnswersAHeadIsSent() throws {
        // Given: the body's own length, and a HEAD's, which is the resource's
        server.route("GET", "/exact") { _ in LocalServer.Response.text("hello").withHeader("content-length", "5") }
        server.route("HEAD", "/resource") { _ in LocalServer.Response.status(200).withHeader("Content-Length", "100") }
        let client = try RawClient(port: server.port)

        // When
        client.send("HEAD /resource HTTP/1.1\r\nHost: x\r\n\r\nGET /exact HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try client.readResponse(bodyless: true)
        let exact = try client.readResponse()

        // Then
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.header("content-length"), "100")
        XCTAssertEqual(exact.status, 200)
        XCTAssertEqual(exact.text, "hello")
    }

    func testALieAboutLengthBeyondIntOrBelowZeroIsAnswered500() throws {
        // Given: lies whose declared length overflows `Int` (which trapped, stopping the test process) or is negative,
        // with a body in memory and a streamed one of a known length
        let stream = LocalServer.Response.stream(contentLength: 3) { write in _ = write(Data("abc".utf8)) }
        for (extra, response) in [
            (Int.max, LocalServer.Response.text("abc")), (Int.max, stream), (-4, .text("abc")), (-4, stream),
        ] {
            server.route("GET", "/lie") { _ in response.withFault(.lieAboutLength(extra: extra)) }
            let client = try RawClient(port: server.port)

            // When
            client.send("GET /lie HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = try client.readResponse()

            // Then: a 500 saying why, and the server still serves
            XCTAssertEqual(answer.status, 500, "extra \(extra)")
            XCTAssertTrue(answer.text.contains("lieAboutLength"), answer.text)
        }
        server.route("GET", "/short") { _ in .text("abc").withFault(.lieAboutLength(extra: 10)) }
        let client = try RawClient(port: server.port)
        client.send("GET /short HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(try client.readHead().header("content-length"), "13")
    }

    /// An event `serverSentEvents` cannot write as it is, which a client would read as something else: a type or an
    /// id with a line break (the rest became another field, or another event), an id with a NUL (the client ignores
    /// the field), a negative retry (ignored too). The server answers 500 saying which event and why, rather than a
    /// stream that lies to the test; written raw, `event: a` with `id: 9` came out of `event: "a\nid: 9"`.
    func testAServerSentEventTheFormatCannotCarryIsAnswered500() throws {
        let unwritable: [(event: ServerSentEvent, why: String)] = [
            (ServerSentEvent(event: "a\nid: 9", data: "x"), "type"),
            (ServerSentEvent(event: "a\rb", data: "x"), "type"),
            (ServerSentEvent(data: "x", id: "1\r\n\r\ndata: injected"), "CR or LF"),
            (ServerSentEvent(data: "x", id: "1\u{0}2"), "NUL"),
            (ServerSentEvent(data: "x", retry: -1), "negative"),
        ]
        for (event, why) in unwritable {
            // Given
            server.route("GET", "/events") { _ in .serverSentEvents([ServerSentEvent(data: "fine"), event]) }
            let client = try RawClient(port: server.port)

            // When
            client.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try client.readResponse()

            // Then
            XCTAssertEqual(response.status, 500, "\(event)")
            XCTAssertTrue(response.text.contains("event 1 of serverSentEvents"), response.text)
            XCTAssertTrue(response.text.contains(why), response.text)
        }
    }

    /// What the format can carry goes out as given: a type, an id and data with leading spaces, an empty id (a
    /// reset), a retry, data lines ended by a CR.
    func testServerSentEventsTheFormatCanCarryAreWrittenAsGiven() throws {
        // Given
        let events = [
            ServerSentEvent(event: " spaced", data: " one\rtwo", id: " 7", retry: 0), ServerSentEvent(data: "", id: ""),
        ]
        server.route("GET", "/events") { _ in .serverSentEvents(events) }
        let client = try RawClient(port: server.port)

        // When
        client.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try client.readResponse()

        // Then
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(
            response.text, "event:  spaced\nid:  7\nretry: 0\ndata:  one\ndata: two\n\nid: \ndata: \n\n")
    }

    func testDelayedResponseArrivesAfterTheDelay() {
        // Given
        server.route("GET", "/slow") { _ in .text("late").delayed(by: 0.3) }
        let start = Date()

        // When
        let result = fetch("/slow")

        // Then
        XCTAssertEqual(result.text, "late")
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(start), 0.3)
    }

    func testConcurrentRequestsOverlapOnTheServer() {
        // Given
        server.route("GET", "/slow/:n") { request in .text(request.pathParameters["n"] ?? "").delayed(by: 0.2) }
        let results = Protected([Int: String]())
        let finished = (0..<20).map { expectation(description: "request \($0)") }

        // When
        for index in 0..<20 {
            session.dataTask(with: server.baseURL.appendingPathComponent("slow/\(index)")) { data, _, _ in
                results.withLock { $0[index] = data.map { String(decoding: $0, as: UTF8.self) } }
                finished[index].fulfill()
            }.resume()
        }
        wait(for: finished, timeout: 20)

        // Then
        XCTAssertEqual(results.snapshot, Dictionary(uniqueKeysWithValues: (0..<20).map { ($0, "\($0)") }))
        XCTAssertEqual(server.requestCount, 20)
        XCTAssertGreaterThan(server.maxConcurrentRequests, 1)
    }

    func testResetStatisticsZeroesTheCounters() {
        server.route("GET", "/") { _ in .status(200) }
        _ = fetch("/")
        XCTAssertEqual(server.requestCount, 1)

        server.resetStatistics()

        XCTAssertEqual(server.requestCount, 0)
        XCTAssertEqual(server.connectionCount, 0)
        XCTAssertTrue(server.requests.isEmpty)
    }

    // MARK: - Lifecycle

    func testStopWhileHeadersHangReturnsPromptlyAndTheClientFails() {
        // Given
        let handled = expectation(description: "handler ran")
        server.route("GET", "/hang") { _ in
            handled.fulfill()
            return .status(200).withFault(.neverFinishHeaders)
        }
        let failed = expectation(description: "client finished")
        let error = Protected<(any Error)?>(nil)
        var request = URLRequest(url: server.baseURL.appendingPathComponent("hang"))
        request.timeoutInterval = 30
        session.dataTask(with: request) { _, _, failure in
            error.withLock { $0 = failure }
            failed.fulfill()
        }.resume()
        wait(for: [handled], timeout: 10)

        // When
        let start = Date()
        server.stop()
        let stopDuration = Date().timeIntervalSince(start)

        // Then
        XCTAssertLessThan(stopDuration, 2)
        wait(for: [failed], timeout: 10)
        XCTAssertNotNil(error.snapshot)
        XCTAssertEqual(server.openConnections, 0)
    }

    func testStopEndsADelayedResponseAtOnce() throws {
        // Given
        let handled = expectation(description: "handler ran")
        server.route("GET", "/sleepy") { _ in
            handled.fulfill()
            return .text("too late").delayed(by: 30)
        }
        let client = try RawClient(port: server.port)
        client.send("GET /sleepy HTTP/1.1\r\nHost: x\r\n\r\n")
        wait(for: [handled], timeout: 10)

        // When
        let start = Date()
        server.stop()

        // Then
        XCTAssertLessThan(Date().timeIntervalSince(start), 2)
        XCTAssertTrue(client.readsEndOfStream())
    }

    /// `serverSentEvents(_:interval:)` waits between events in a way `stop()` ends: it slept the whole interval,
    /// so `stop()` gave up on the handler after its 5 s grace period and left it running.
    func testStopEndsTheWaitBetweenServerSentEventsAtOnce() throws {
        // Given: the head is sent, the route waits a minute before its first event.
        server.route("GET", "/events") { _ in .serverSentEvents([ServerSentEvent(data: "too late")], interval: 60) }
        let client = try RawClient(port: server.port)
        client.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(try client.readHead().status, 200)

        // When
        let start = Date()
        server.stop()

        // Then: the handler has ended, well before the interval (and before stop()'s grace period).
        XCTAssertLessThan(Date().timeIntervalSince(start), 2)
        XCTAssertEqual(server.requestsInFlight, 0)
    }

    /// A client that leaves during the wait between events ends the handler then, not after the interval.
    func testAClientLeavingEndsTheWaitBetweenServerSentEvents() throws {
        // Given
        server.route("GET", "/events") { _ in .serverSentEvents([ServerSentEvent(data: "too late")], interval: 60) }
        let client = try RawClient(port: server.port)
        client.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(try client.readHead().status, 200)

        // When
        client.close()

        // Then
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the handler still waits for its interval")
    }

    /// A producer set in place of the events' is the one the server runs.
    func testAProducerSetInPlaceOfTheEventsIsTheOneSent() throws {
        server.route("GET", "/events") { _ in
            var response = LocalServer.Response.serverSentEvents([ServerSentEvent(data: "first")], interval: 60)
            response.streamedBody?.producer = { write in _ = write(Data("data: replaced\n\n".utf8)) }
            return response
        }
        let client = try RawClient(port: server.port)
        client.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")

        XCTAssertEqual(try client.readResponse().text, "data: replaced\n\n")
    }

    func testStopFromAHandlerDoesNotDeadlock() {
        // Given
        let server = self.server!
        server.route("GET", "/shutdown") { [unowned server] _ in
            server.stop()
            return .text("stopping")
        }

        // When
        let result = fetch("/shutdown")

        // Then: the handler returned (no deadlock), the response was not sent on the shut-down connection.
        XCTAssertNotNil(result.error)
        XCTAssertEqual(server.requestCount, 1)
    }

    /// In a replay, a server takes its recorded port once: a second `start()` does nothing, as it does when the
    /// server listens, and the next server gets the next recorded port. Started again after `stop()`, it takes the
    /// next one, as a recording server listens anew.
    func testAReplayingServerStartedTwiceKeepsItsRecordedPort() throws {
        LocalServer.portPlan.withLock { $0 = LocalServer.PortPlan(replaying: [1111, 2222, 3333]) }
        defer { LocalServer.portPlan.withLock { $0 = nil } }
        let first = LocalServer()
        try first.start()
        try first.start()
        XCTAssertEqual(first.port, 1111)
        let second = LocalServer()
        try second.start()
        XCTAssertEqual(second.port, 2222)
        first.stop()
        try first.start()
        XCTAssertEqual(first.port, 3333)
    }

    func testStartStopCyclesDoNotLeakDescriptors() throws {
        let descriptors = "/proc/self/fd"
        guard FileManager.default.fileExists(atPath: descriptors) else { throw XCTSkip("needs /proc") }
        let before = try FileManager.default.contentsOfDirectory(atPath: descriptors).count

        for cycle in 0..<20 {
            // A fresh server each cycle, deinitialised while running half of the time.
            let fresh = LocalServer()
            fresh.route("GET", "/") { _ in .text("\(cycle)") }
            try fresh.start()
            let client = try RawClient(port: fresh.port)
            client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            XCTAssertEqual(try client.readResponse().text, "\(cycle)")
            if cycle.isMultiple(of: 2) { fresh.stop() }
            client.close()
        }
        for _ in 0..<20 {  // The same server, restarted.
            try server.start()
            server.stop()
            server.stop()
        }

        let after = try FileManager.default.contentsOfDirectory(atPath: descriptors).count
        XCTAssertLessThanOrEqual(after, before)
    }

    // MARK: - Helpers

    private struct FetchResult: Sendable {
        var data: Data?
        var response: HTTPURLResponse?
        var error: (any Error)?

        var text: String? { data.map { String(decoding: $0, as: UTF8.self) } }
    }

    private func fetch(_ target: String, method: String = "GET") -> FetchResult {
        var request = URLRequest(url: URL(string: server.baseURL.absoluteString + target)!)
        request.httpMethod = method
        return fetch(request)
    }

    private func fetch(_ request: URLRequest) -> FetchResult {
        let result = Protected(FetchResult())
        let done = expectation(description: "\(request.httpMethod ?? "GET") \(request.url!)")
        session.dataTask(with: request) { data, response, error in
            result.withLock { $0 = FetchResult(data: data, response: response as? HTTPURLResponse, error: error) }
            done.fulfill()
        }.resume()
        wait(for: [done], timeout: 10)
        return result.snapshot
    }
}

// MARK: - Raw client

/// A blocking HTTP/1.1 client over a plain socket, for what URLSession cannot do: pipelining, chunked request
/// bodies, malformed requests, `Expect: 100-continue`. Reads time out after 5 seconds.
private final class RawClient {
    struct Response {
        var status: Int
        var headers: [(name: String, value: String)]
        var body = Data()

        var text: String { String(decoding: body, as: UTF8.self) }

        func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    enum Failure: Error, Equatable {
        case connect(Int32)
        case closedEarly(received: [UInt8])
        case malformed(String)
    }

    private let fd: Int32
    private var buffer: [UInt8] = []
    private var isClosed = false

    init(port: Int) throws {
        #if canImport(Darwin)
            fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            _ = Self.closeDescriptor(fd)
            throw Failure.connect(code)
        }
    }

    deinit { close() }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        _ = Self.closeDescriptor(fd)
    }

    private static func closeDescriptor(_ fd: Int32) -> Int32 {
        #if canImport(Darwin)
            Darwin.close(fd)
        #else
            Glibc.close(fd)
        #endif
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            #if canImport(Darwin)
                let flags: Int32 = 0
            #else
                let flags = Int32(MSG_NOSIGNAL)
            #endif
            let sent = bytes[offset...].withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, flags) }
            guard sent > 0 else { return }
            offset += sent
        }
    }

    /// Reads one response; `bodyless` for an answer to `HEAD`.
    func readResponse(bodyless: Bool = false) throws -> Response {
        var response = try readHead()
        if bodyless || (100..<200).contains(response.status) || response.status == 204 || response.status == 304 {
            return response
        }
        if response.header("transfer-encoding")?.lowercased() == "chunked" {
            while let chunk = try readChunk() { response.body.append(chunk) }
        } else if let length = response.header("content-length").flatMap({ Int($0) }) {
            response.body = Data(try readExactly(length))
        } else {
            while fill() {}
            response.body = Data(buffer)
            buffer.removeAll()
        }
        return response
    }

    /// Reads a status line and headers.
    func readHead() throws -> Response {
        let terminator = Array("\r\n\r\n".utf8)
        var end: Int?
        while true {
            end = buffer.indices.dropLast(3).first { buffer[$0..<$0 + 4].elementsEqual(terminator) }
            if end != nil { break }
            guard fill() else { throw Failure.closedEarly(received: buffer) }
        }
        let head = String(decoding: buffer[..<end!], as: UTF8.self)
        buffer.removeFirst(end! + 4)
        var lines = head.components(separatedBy: "\r\n")
        let statusParts = lines.removeFirst().split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw Failure.malformed(head) }
        let headers = lines.map { line -> (name: String, value: String) in
            let parts = line.split(separator: ":", maxSplits: 1)
            return (String(parts[0]), parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
        }
        return Response(status: status, headers: headers)
    }

    /// Reads one chunk of a chunked body; `nil` for the last one (trailers consumed).
    func readChunk() throws -> Data? {
        let sizeLine = try readLine()
        guard let size = Int(sizeLine.split(separator: ";").first ?? "", radix: 16) else {
            throw Failure.malformed(sizeLine)
        }
        if size == 0 {
            while try !readLine().isEmpty {}
            return nil
        }
        let chunk = Data(try readExactly(size))
        guard try readLine().isEmpty else { throw Failure.malformed("chunk not followed by CRLF") }
        return chunk
    }

    func readExactly(_ count: Int) throws -> [UInt8] {
        while buffer.count < count {
            guard fill() else { throw Failure.closedEarly(received: buffer) }
        }
        defer { buffer.removeFirst(count) }
        return Array(buffer[..<count])
    }

    /// Whether the server closes the connection without sending anything more.
    func readsEndOfStream() -> Bool {
        buffer.isEmpty && !fill() && buffer.isEmpty
    }

    private func readLine() throws -> String {
        while true {
            if let index = buffer.indices.dropLast().first(where: { buffer[$0] == 13 && buffer[$0 + 1] == 10 }) {
                defer { buffer.removeFirst(index + 2) }
                return String(decoding: buffer[..<index], as: UTF8.self)
            }
            guard fill() else { throw Failure.closedEarly(received: buffer) }
        }
    }

    /// Whether a read found the end of the stream: the server closed (not a timeout or an error).
    private(set) var sawEndOfStream = false

    /// Appends the next bytes to the buffer; `false` on end of stream, error or timeout.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count == 0 { sawEndOfStream = true }
        guard count > 0 else { return false }
        buffer.append(contentsOf: chunk[..<count])
        return true
    }
}
