import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The whole client through real `URLSession` to a real HTTP server on 127.0.0.1.
final class ConnectIntegrationTests: IntegrationTestCase {
    private struct Todo: Codable, Equatable, Sendable {
        var userId: Int
        var id: Int
        var title: String
        var completed: Bool
    }

    /// A connector to the test server, described with the guide's vocabulary.
    private struct Endpoint: Connector {
        var baseURL: URL
        var endpoint: String
        var method: HTTPMethod = .get
        var headers: [HTTPHeader] = []
        var parameters: (any ParametersRepresentable)?
        var timeout: TimeInterval = 60
    }

    private var server: LocalServer!
    private var connect: Connect!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
    }

    override func tearDown() {
        connect.cancelAllRequests()
        server.stop()
        server = nil
        connect = nil
    }

    private func endpoint(
        _ path: String,
        method: HTTPMethod = .get,
        parameters: (any ParametersRepresentable)? = nil
    ) -> Endpoint {
        Endpoint(baseURL: server.baseURL, endpoint: path, method: method, parameters: parameters)
    }

    func testGetAndDecode() throws {
        server.route("GET", "/todos/:id") { request in
            .json(Todo(userId: 1, id: Int(request.pathParameters["id"] ?? "") ?? -1, title: "Served", completed: true))
        }
        let todo = try connect.request(endpoint("/todos/{id}", parameters: Parameter.path(key: "id", value: "42")))
            .decoded(toType: Todo.self)
            .wait()
        XCTAssertEqual(todo, Todo(userId: 1, id: 42, title: "Served", completed: true))
        XCTAssertEqual(server.requests.first?.header("Accept"), "application/json")
    }

    /// A field value does not include the blanks around it (RFC 9110 §5.5): the core trims them before any engine
    /// sees the request, so every engine sends the same value. libcurl leaves out a field whose value is blanks only
    /// (a value of nothing but blanks is its way to remove a field), where the other engines sent it empty.
    func testBlanksAroundAHeaderValueAreTrimmedOnEveryEngine() throws {
        server.route("GET", "/echo") { _ in .text("ok") }
        let headers = [HTTPHeader(name: "X-Padded", value: " \tvalue \t"), HTTPHeader(name: "X-Blank", value: " \t ")]

        // Plain, and through the core's exchange (URLSession's two paths)
        for options in [RequestOptions(), RequestOptions(maxResponseBytes: 1 << 20)] {
            let padded = Route("/echo", baseURL: server.baseURL, headers: headers, timeout: 10, options: options)
            _ = try connect.request(padded).wait()

            let received = try XCTUnwrap(server.requests.last)
            XCTAssertEqual(received.header("X-Padded"), "value")
            XCTAssertEqual(received.header("X-Blank"), "", "\(received.headers)")
        }
        // A request handed to the transport itself, past the client's stages, on both of URLSession's paths
        var direct = ConnectRequest(url: server.baseURL.appendingPathComponent("echo"))
        direct.headerFields = ["X-Padded": " \tvalue \t", "X-Blank": " \t "]
        for transfer in [TransferOptions(), TransferOptions(maxResponseBytes: 1 << 20)] {
            _ = try TransportUnderTest.make().send(direct, transfer: transfer).wait()

            let received = try XCTUnwrap(server.requests.last)
            XCTAssertEqual(received.header("X-Padded"), "value")
            XCTAssertEqual(received.header("X-Blank"), "", "direct: \(received.headers)")
        }
    }

    /// A header value with non-ASCII text (`é`, an emoji) is refused, naming the field, before anything is sent: RFC
    /// 9110 gives such bytes no charset, SwiftNIO and libcurl sent the UTF-8 bytes, and nothing says what Apple's
    /// URLSession sends. A connector's field, a middleware's, and a request handed to the transport itself.
    func testANonASCIIHeaderValueIsRefusedNamingTheFieldOnEveryEngine() throws {
        server.route("*", "/echo") { _ in .text("ok") }
        func assertRefused(
            _ call: () throws -> Void, _ what: String, file: StaticString = #filePath, line: UInt = #line
        ) {
            XCTAssertThrowsError(try call(), what, file: file, line: line) { error in
                let error = error as? ConnectError
                XCTAssertEqual(error?.kind, .invalidRequest, what, file: file, line: line)
                XCTAssertEqual(
                    error?.invalidRequestReason, .invalidHeader(name: "X-Name"), what, file: file, line: line)
                XCTAssertTrue(
                    error?.message.contains("ASCII") ?? false, "\(String(describing: error))", file: file, line: line)
            }
        }
        for value in ["caf\u{e9}", "\u{1F680} launch", "Ren\u{e9}e\u{301}"] {
            let header = HTTPHeader(name: "X-Name", value: value)
            // A connector's field
            assertRefused(
                {
                    _ = try connect.request(Route("/echo", baseURL: server.baseURL, headers: [header], timeout: 10))
                        .wait()
                }, value)
            // A middleware's
            let adapting = connect.adding(middlewares: [.adapter { $0.setValue(value, forHTTPHeaderField: "X-Name") }])
            assertRefused(
                { _ = try adapting.request(Route("/echo", baseURL: server.baseURL, timeout: 10)).wait() }, value)
            // Handed to the transport itself, through the core's exchange
            var direct = ConnectRequest(method: .post, url: server.baseURL.appendingPathComponent("echo"))
            direct.body = .bytes(Data("a".utf8))
            direct.headerFields = ["X-Name": value]
            assertRefused({ _ = try TransportUnderTest.make().send(direct, transfer: TransferOptions()).wait() }, value)
        }
        XCTAssertEqual(server.requests.map { $0.header("X-Name") ?? "none" }, [], "nothing is sent")
    }

    /// A blank `Content-Type` on a request handed to the transport itself (past the client's stages) names none, as
    /// it does on a connector and through the client: the engine sends what it sends for a request without one, never
    /// an empty field. With and without a body, on both of URLSession's paths.
    func testABlankContentTypeHandedToTheTransportIsNotSent() throws {
        server.route("*", "/echo") { _ in .text("ok") }
        let transport = TransportUnderTest.make()
        for body in [nil, Data("a=1".utf8)] {
            for transfer in [TransferOptions(), TransferOptions(maxResponseBytes: 1 << 20)] {
                // Given: what the engine sends for a request without the field
                var request = ConnectRequest(
                    method: body == nil ? .delete : .post, url: server.baseURL.appendingPathComponent("echo"))
                request.body = body.map { .bytes($0) } ?? .none
                _ = try transport.send(request, transfer: transfer).wait()
                let unset = try XCTUnwrap(server.requests.last).header("Content-Type")
                // URLSession (Apple's and FoundationNetworking) gives a POST with a body and no type a form's, as
                // `Parameter.body`'s documentation says; AsyncHTTPClient sends none.
                let enginesDefault = body != nil && TransportUnderTest.isURLSession
                XCTAssertEqual(unset, enginesDefault ? "application/x-www-form-urlencoded" : nil)
                for blank in ["", " ", " \t "] {
                    // When
                    request.headerFields = ["Content-Type": blank]
                    _ = try transport.send(request, transfer: transfer).wait()
                    // Then
                    let received = try XCTUnwrap(server.requests.last)
                    XCTAssertEqual(
                        received.header("Content-Type"), unset, "\(blank.debugDescription): \(received.headers)")
                }
            }
        }
    }

    /// The connection-specific fields of HTTP/1.1 (`Connection`, `Keep-Alive`, `Proxy-Connection`, `Upgrade`) a
    /// caller sets go as set over HTTP/1.1 on every engine: the core neither refuses nor drops them, each engine's
    /// HTTP/2 codec leaves them out there (RFC 9113 §8.2.2), as libcurl and SwiftNIO do.
    func testConnectionSpecificFieldsGoAsSetOverHTTP11() throws {
        server.route("GET", "/echo") { _ in .text("ok") }
        let headers = [
            HTTPHeader(name: "Connection", value: "close"), HTTPHeader(name: "Keep-Alive", value: "timeout=5"),
            HTTPHeader(name: "Proxy-Connection", value: "keep-alive"), HTTPHeader(name: "Upgrade", value: "example/1"),
        ]

        for options in [RequestOptions(), RequestOptions(maxResponseBytes: 1 << 20)] {
            let route = Route("/echo", baseURL: server.baseURL, headers: headers, timeout: 10, options: options)
            _ = try connect.request(route).wait()

            let received = try XCTUnwrap(server.requests.last)
            for header in headers {
                XCTAssertEqual(received.header(header.name), header.value, "\(received.headers)")
            }
        }
    }

    func testGuideUpdateSendsPathQueryAndJSONBody() throws {
        server.route("PUT", "/users/:userId/todos/:todoId") { request in
            .data(request.body, contentType: "application/json")
        }
        let todo = Todo(userId: 2, id: 1, title: "Test Todo", completed: false)
        let parameters = CompositeParameters(
            .path(key: "userId", value: "1"),
            .path(key: "todoId", value: "2"),
            .query(key: "action", value: "update"),
            .jsonObject(value: todo)
        )
        let echoed = try connect.request(
            endpoint("/users/{userId}/todos/{todoId}", method: .put, parameters: parameters)
        )
        .decoded(toType: Todo.self)
        .wait()
        XCTAssertEqual(echoed, todo)
        let received = try XCTUnwrap(server.requests.first)
        XCTAssertEqual(received.method, "PUT")
        XCTAssertEqual(received.target, "/users/1/todos/2?action=update")
        XCTAssertEqual(received.header("Content-Type"), "application/json")
    }

    func testServerMessagesOn4xxAnd5xxBecomeTypedErrors() throws {
        server.route("GET", "/missing") { _ in
            LocalServer.Response.json(string: #"{"message":"Todo 9 not found"}"#, status: 404).withHeader(
                "X-Request-ID", "abc")
        }
        server.route("GET", "/broken") { _ in .json(string: #"{"error":{"message":"database down"}}"#, status: 503) }

        let notFound = try XCTUnwrap(error(of: connect.request(endpoint("/missing"))) as? ConnectError)
        XCTAssertEqual(notFound.kind, .serverMessage)
        XCTAssertEqual(notFound.statusCode, 404)
        XCTAssertEqual(notFound.message, "Todo 9 not found")
        XCTAssertEqual(notFound.headers["X-Request-ID"] ?? notFound.headers["x-request-id"], "abc")

        let unavailable = try XCTUnwrap(error(of: connect.request(endpoint("/broken"))) as? ConnectError)
        XCTAssertEqual(unavailable.kind, .serverMessage)
        XCTAssertEqual(unavailable.statusCode, 503)
        XCTAssertEqual(unavailable.message, "database down")
    }

    func testHTMLErrorBodyGivesAnHTTPStatusErrorWithTheBodyKept() throws {
        let html = "<html><body><h1>502 Bad Gateway</h1></body></html>"
        server.route("GET", "/gateway") { _ in .text(html, status: 502, contentType: "text/html") }
        let failure = try XCTUnwrap(error(of: connect.request(endpoint("/gateway"))) as? ConnectError)
        XCTAssertEqual(failure.kind, .httpStatus)
        XCTAssertEqual(failure.statusCode, 502)
        XCTAssertEqual(failure.body.map { String(decoding: $0, as: UTF8.self) }, html)
        XCTAssertTrue(failure.description.contains("502"), failure.description)
    }

    func testCancellingOneSlowRequestEndsItAndCancelsTheTask() throws {
        server.route("GET", "/slow") { _ in LocalServer.Response.json(["late": true]).delayed(by: 60) }
        server.route("GET", "/fast") { _ in .json(["ok": true]) }
        let client = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)

        let slow = client.request(endpoint("/slow")).decoded(toType: [String: Bool].self)
        let other = client.request(endpoint("/fast"))
        slow.cancel()

        let failure = try XCTUnwrap(error(of: slow) as? ConnectError)
        XCTAssertEqual(failure.kind, .cancelled)
        XCTAssertNoThrow(try other.wait(), "cancelling one request leaves the others alone")

        // The transport's task was cancelled: its connection closed long before the 60 s answer. (Asked of the
        // server, not of `URLSession.getAllTasks`, which FoundationNetworking can crash in right after a cancel.)
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the cancelled request still holds its connection")
    }

    func testCancelAllRequestsWithFiftyInFlight() throws {
        let arrived = DispatchSemaphore(value: 0)
        server.route("GET", "/hang") { _ in
            arrived.signal()
            return LocalServer.Response.json(["late": true]).delayed(by: 60)
        }
        let completions = Counter()
        let allDone = expectation(description: "every future completed")
        allDone.expectedFulfillmentCount = 50
        let futures = (0..<50).map { _ in connect.request(endpoint("/hang")) }
        for future in futures {
            future.observe { _ in
                completions.increment()
                allDone.fulfill()
            }
        }
        // Wait until the server has some requests in hand, so cancellation hits requests on the wire.
        // (URLSession opens at most `httpMaximumConnectionsPerHost` connections: 6 by default; the rest queue.)
        for _ in 0..<5 { XCTAssertEqual(arrived.wait(timeout: .now() + 10), .success) }
        XCTAssertEqual(connect.requestsInFlight, 50)

        connect.cancelAllRequests()

        wait(for: [allDone], timeout: 10)
        XCTAssertEqual(completions.value, 50, "each future completed exactly once")
        for future in futures {
            guard case .failure(let error as ConnectError)? = future.result else { return XCTFail("not cancelled") }
            XCTAssertEqual(error.kind, .cancelled)
        }
        XCTAssertEqual(connect.requestsInFlight, 0)
    }

    func testAServerThatNeverAnswersTimesOutWithATypedError() throws {
        server.route("GET", "/silent") { _ in LocalServer.Response.json(["late": true]).delayed(by: 60) }
        var silent = endpoint("/silent")
        silent.timeout = 0.5
        let failure = try XCTUnwrap(error(of: connect.request(silent), timeout: 20) as? ConnectError)
        XCTAssertEqual(failure.kind, .timedOut)
        XCTAssertNotNil(failure.underlyingError, "the engine's timeout, which a retry policy may retry")
    }

    func testTransportFailureIsTyped() throws {
        server.route("GET", "/drop") { _ in LocalServer.Response.json(["x": 1]).withFault(.closeBeforeHeaders) }
        let failure = try XCTUnwrap(error(of: connect.request(endpoint("/drop"))) as? ConnectError)
        // An answer that never came: lost, on every engine (libcurl's "Empty reply from server" included).
        XCTAssertEqual(failure.kind, .connectionLost, "\(failure)")
        XCTAssertTrue(failure.isTransportFailure)
        XCTAssertNotNil(failure.underlyingError)
    }
}
