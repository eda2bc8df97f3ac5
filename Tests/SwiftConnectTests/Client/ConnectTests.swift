import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `Connect` over a `FakeTransport`: the request it sends, the responses it accepts, the errors it reports.
final class ConnectTests: XCTestCase {
    typealias Todo = ClientFixtures.Todo
    typealias TodoConnector = ClientFixtures.TodoConnector
    typealias GetTodo = ClientFixtures.GetTodo
    typealias DeleteTodo = ClientFixtures.DeleteTodo
    typealias Endpoint = ClientFixtures.Endpoint

    // MARK: - The usage guide

    func testGuideExampleDecodesTheTodoAndObservesIt() {
        // Given
        let fake = FakeTransport()
        fake.stub(.get, "/todos/123", with: .json(Todo(userId: 1, id: 123, title: "Guide", completed: true)))
        let observed = expectation(description: "observe runs")
        let received = Recorder<Result<Todo, Error>>()
        // When
        Connect(transport: fake, retryPolicy: nil, settings: Connect.Settings(logger: MemoryLogger()))
            .request(TodoConnector.get(id: 123), debugResponse: true)
            .decoded(toType: Todo.self)
            .observe { result in
                switch result {
                case .success(let todo):
                    received.append(.success(todo))
                case .failure(let error):
                    received.append(.failure(error))
                }
                observed.fulfill()
            }
        wait(for: [observed], timeout: 10)
        // Then
        XCTAssertEqual(received.values.count, 1)
        XCTAssertEqual(try received.values.first?.get(), Todo(userId: 1, id: 123, title: "Guide", completed: true))
        XCTAssertEqual(fake.requests.map { $0.url?.absoluteString }, ["https://jsonplaceholder.typicode.com/todos/123"])
    }

    func testGuideInitializerAndDefaultClientExist() {
        // Given / When
        let connect = Connect(middleware: ConnectMiddleware(), errorHandler: ErrorHandler())
        let shared: Connect = Connect.default
        // Then
        XCTAssertEqual(connect.middlewares.count, 1)
        XCTAssertTrue(connect.middlewares.first is ConnectMiddleware)
        XCTAssertTrue(connect.errorHandler is ErrorHandler)
        XCTAssertTrue(connect.transport is URLSessionTransport)
        XCTAssertTrue(shared === Connect.default, "Connect.default is one shared client")
        XCTAssertEqual(shared.requestsInFlight, 0)
    }

    // MARK: - The request as sent

    func testRequestIsSentAsTheConnectorBuildsIt() throws {
        // Given
        let fake = FakeTransport.answering(.json(Todo.sample))
        let connect = Connect(transport: fake, retryPolicy: nil)
        // When
        let data = value(of: connect.request(TodoConnector.update(id: 7, todo: .sample)))
        // Then
        XCTAssertNotNil(data)
        XCTAssertEqual(fake.requests.count, 1)
        let sent = try XCTUnwrap(fake.requests.first)
        XCTAssertEqual(sent.httpMethod, "PUT")
        XCTAssertEqual(sent.url?.absoluteString, "https://jsonplaceholder.typicode.com/todos/7")
        XCTAssertEqual(sent.value(forHTTPHeaderField: "Content-Type"), "application/json")
        XCTAssertEqual(try jsonObject(of: sent), ["userId": 2, "id": 1, "title": "Test Todo", "completed": false])
    }

    func testDefaultAcceptHeaderIsAddedToEveryRequest() throws {
        // Given
        let fake = FakeTransport.answering(.status(200))
        let connect = Connect(transport: fake, retryPolicy: nil)
        // When
        _ = value(of: connect.request(Endpoint()))
        // Then
        let sent = try XCTUnwrap(fake.requests.first)
        XCTAssertEqual(sent.value(forHTTPHeaderField: "Accept"), "application/json")
    }

    func testConnectorHeaderOverridesTheDefaultHeader() throws {
        // Given
        let fake = FakeTransport.answering(.status(200))
        let connect = Connect(transport: fake, retryPolicy: nil)
        let endpoint = Endpoint(headers: [
            HTTPHeader(name: "accept", value: "text/plain"), HTTPHeader(name: "X-Trace", value: "42"),
        ])
        // When
        _ = value(of: connect.request(endpoint))
        // Then
        let sent = try XCTUnwrap(fake.requests.first)
        XCTAssertEqual(sent.value(forHTTPHeaderField: "Accept"), "text/plain")
        XCTAssertEqual(sent.value(forHTTPHeaderField: "X-Trace"), "42")
        let acceptFields = (sent.allHTTPHeaderFields ?? [:]).filter { $0.key.lowercased() == "accept" }
        XCTAssertEqual(acceptFields.count, 1, "one Accept header, the connector's: \(acceptFields)")
    }

    func testCustomDefaultHeadersReplaceTheBuiltInOnes() throws {
        // Given
        let fake = FakeTransport.answering(.status(200))
        let connect = Connect(
            transport: fake, retryPolicy: nil, settings: Connect.Settings(defaultHeaders: [.userAgent("Tests/1.0")]))
        // When
        _ = value(of: connect.request(Endpoint()))
        // Then
        let sent = try XCTUnwrap(fake.requests.first)
        XCTAssertEqual(sent.value(forHTTPHeaderField: "User-Agent"), "Tests/1.0")
        XCTAssertNil(sent.value(forHTTPHeaderField: "Accept"))
    }

    func testMissingPathValueFailsAsInvalidRequestWithoutSending() {
        // Given
        let fake = FakeTransport.answering(.status(200))
        let connect = Connect(transport: fake, retryPolicy: nil)
        let endpoint = Endpoint(endpoint: "/todos/{id}")
        // When
        let error = connectError(of: connect.request(endpoint))
        // Then
        XCTAssertEqual(error?.kind, .invalidRequest)
        XCTAssertEqual(error?.invalidRequestReason, .missingPathValue(placeholder: "id"))
        XCTAssertTrue(fake.requests.isEmpty, "nothing may be sent")
        XCTAssertEqual(connect.requestsInFlight, 0)
    }

    func testHeaderWithCRLFFailsAsInvalidRequestWithoutSending() {
        // Given
        let fake = FakeTransport.answering(.status(200))
        let connect = Connect(transport: fake, retryPolicy: nil)
        let endpoint = Endpoint(headers: [HTTPHeader(name: "X-Note", value: "a\r\nX-Evil: 1")])
        // When
        let error = connectError(of: connect.response(for: endpoint))
        // Then
        XCTAssertEqual(error?.kind, .invalidRequest)
        XCTAssertEqual(error?.invalidRequestReason, .invalidHeader(name: "X-Note"))
        XCTAssertTrue(fake.requests.isEmpty, "nothing may be sent")
    }

    // MARK: - Responses

    func testResponseForGivesStatusHeadersAndBody() {
        // Given
        let fake = FakeTransport()
        fake.stub(.get, "/todos/1", with: .json(Todo.sample, status: 201, headers: ["ETag": "\"v1\""]))
        let connect = Connect(transport: fake, retryPolicy: nil)
        // When
        let response = value(of: connect.response(for: TodoConnector.get(id: 1)))
        // Then
        XCTAssertEqual(response?.statusCode, 201)
        XCTAssertEqual(response?.header("ETag"), "\"v1\"")
        XCTAssertEqual(response?.header("content-type"), "application/json")
        XCTAssertEqual(response?.mediaType, "application/json")
        XCTAssertEqual(response.flatMap { try? JSONDecoder().decode(Todo.self, from: $0.data) }, Todo.sample)
        XCTAssertEqual(response?.request.url?.path, "/todos/1")
    }

    func testMediaTypeIsLowercasedWithoutParametersOrBlanks() throws {
        let request = URLRequest(url: URL(string: "https://api.example.com/x")!)
        let cases: [(String?, String?)] = [
            ("application/json", "application/json"),
            ("Application/JSON; charset=UTF-8", "application/json"),
            (" \ttext/plain \t;charset=utf-8", "text/plain"),
            ("application/vnd.api+json;", "application/vnd.api+json"),
            (";charset=utf-8", ""),
            ("", ""),
            ("tëxt/plaîn", "tëxt/plaîn"),
            (nil, nil),
        ]
        for (header, expected) in cases {
            let headers = header.map { ["Content-Type": $0] } ?? [:]
            let response = try XCTUnwrap(ConnectResponse(request: request, statusCode: 200, headers: headers))
            XCTAssertEqual(response.mediaType, expected, "Content-Type: \(header ?? "none")")
        }
    }

    func testSendDecodesTheTypedConnectorsResponse() {
        // Given
        let fake = FakeTransport()
        fake.stub(.get, "/todos/5", with: .json(Todo(userId: 1, id: 5, title: "Five", completed: false)))
        let connect = Connect(transport: fake, retryPolicy: nil)
        // When
        let todo: Todo? = value(of: connect.send(GetTodo(id: 5)))
        // Then
        XCTAssertEqual(todo, Todo(userId: 1, id: 5, title: "Five", completed: false))
    }

    func testUndecodableBodyFailsWithDecodingError() {
        // Given
        let fake = FakeTransport.answering(.json(string: #"{"userId":1,"id":"five","title":"x","completed":false}"#))
        let connect = Connect(transport: fake, retryPolicy: nil)
        // When
        let error = connectError(of: connect.send(GetTodo(id: 5)))
        // Then
        XCTAssertEqual(error?.kind, .decoding)
        XCTAssertEqual(error?.codingPath, "id")
        XCTAssertNotNil(error?.body)
        // It says which call failed: the request and the response are attached, and the description shows them.
        XCTAssertEqual(error?.statusCode, 200)
        XCTAssertEqual(error?.request?.url?.path, "/todos/5")
        XCTAssertTrue(error?.description.contains("/todos/5") ?? false, error?.description ?? "")

        // The same through the usage guide's path, `request(_:)` then `decoded(toType:)`.
        let guided = connectError(of: connect.request(GetTodo(id: 5)).decoded(toType: Todo.self))
        XCTAssertEqual(guided?.kind, .decoding)
        XCTAssertEqual(guided?.statusCode, 200)
        XCTAssertEqual(guided?.request?.url?.path, "/todos/5")
    }

    func testEvery2xxStatusIsSuccess() {
        for status in [200, 201, 202, 299] {
            // Given
            let connect = Connect(
                transport: FakeTransport.answering(.json(string: #"{"ok":true}"#, status: status)), retryPolicy: nil)
            // When
            let data = value(of: connect.request(Endpoint()))
            // Then
            XCTAssertEqual(data.map { String(decoding: $0, as: UTF8.self) }, #"{"ok":true}"#, "status \(status)")
        }
    }

    func testNoContentWithEmptyBodyDecodesAsEmptyResponse() {
        // Given
        let fake = FakeTransport()
        fake.stub(.delete, "/todos/3", with: .status(204))
        let connect = Connect(transport: fake, retryPolicy: nil)
        // When
        let empty = value(of: connect.send(DeleteTodo(id: 3)))
        let data = value(of: connect.request(DeleteTodo(id: 3)))
        // Then
        XCTAssertEqual(empty, EmptyResponse())
        XCTAssertEqual(data, Data())
    }

    func testEveryNon2xxStatusGoesToTheErrorHandler() {
        for status in [100, 199, 300, 304, 400, 401, 404, 500, 503] {
            // Given
            let seen = Recorder<Int>()
            let connect = Connect(
                transport: FakeTransport.answering(.status(status)),
                errorHandler: ClosureErrorHandler { response in
                    seen.append(response.statusCode)
                    return TestError(status)
                },
                retryPolicy: nil)
            // When
            let error = error(of: connect.request(Endpoint()))
            // Then
            XCTAssertEqual(error as? TestError, TestError(status), "status \(status)")
            XCTAssertEqual(seen.values, [status])
        }
    }

    func testErrorHandlerIsNotAskedAbout2xx() {
        // Given
        let seen = Counter()
        let connect = Connect(
            transport: FakeTransport.answering(.status(200)),
            errorHandler: ClosureErrorHandler { _ in
                seen.increment()
                return TestError()
            },
            retryPolicy: nil)
        // When
        _ = value(of: connect.request(Endpoint()))
        // Then
        XCTAssertEqual(seen.value, 0)
    }

    func testHandlerReturningNilTurnsAnErrorStatusIntoSuccess() {
        // Given
        let connect = Connect(
            transport: FakeTransport.answering(.json(string: #"{"fine":true}"#, status: 409)),
            errorHandler: ClosureErrorHandler { _ in nil },
            retryPolicy: nil)
        // When
        let response = value(of: connect.response(for: Endpoint()))
        // Then
        XCTAssertEqual(response?.statusCode, 409)
        XCTAssertEqual(response.map { String(decoding: $0.data, as: UTF8.self) }, #"{"fine":true}"#)
    }

    func testGuideStyleHandlerSurfacesItsOwnError() {
        // Given
        let connect = Connect(
            transport: FakeTransport.answering(.json(string: #"{"code":42,"text":"quota"}"#, status: 429)),
            errorHandler: BackendErrors(),
            retryPolicy: nil)
        // When
        let error = error(of: connect.request(TodoConnector.get(id: 1)).decoded(toType: Todo.self))
        // Then
        XCTAssertEqual(error as? BackendError, BackendError(code: 42, text: "quota"))
    }

    func testGuideStyleHandlerReturningNilMeansSuccess() {
        // Given: a body without `code`, which BackendErrors accepts
        let connect = Connect(
            transport: FakeTransport.answering(.json(Todo.sample, status: 500)),
            errorHandler: BackendErrors(),
            retryPolicy: nil)
        // When
        let todo = value(of: connect.request(TodoConnector.get(id: 1)).decoded(toType: Todo.self))
        // Then
        XCTAssertEqual(todo, Todo.sample)
    }

    /// The guide's `handle(response:)` takes a JSON object, so it is asked only about a body that is one (or an
    /// array holding one): asking it about an empty, plain-text or HTML body with an empty dictionary would make a
    /// handler that returns `nil` for shapes it does not know, as the guide's do, accept an empty 500 as a success.
    /// Such a body gives an HTTP-status error with the status and the body kept; `handle(_:)` sees every one.
    func testGuideStyleHandlerIsNotAskedAboutABodyThatIsNoJSONObject() {
        let bodies: [(body: String, type: String?)] = [
            ("", nil), ("Service down", "text/plain"), ("<h1>502</h1>", "text/html"),
            (#"["down"]"#, "application/json"),
        ]
        for (body, type) in bodies {
            // Given: BackendErrors accepts every JSON object without a `code`
            let connect = Connect(
                transport: FakeTransport.answering(
                    .data(Data(body.utf8), status: 502, headers: type.map { ["Content-Type": $0] } ?? [:])),
                errorHandler: BackendErrors(),
                retryPolicy: nil)
            // When
            let error = connectError(of: connect.request(Endpoint()))
            // Then
            XCTAssertEqual(error?.kind, .httpStatus, body)
            XCTAssertEqual(error?.statusCode, 502, body)
            XCTAssertEqual(error?.body, Data(body.utf8), body)
        }
    }

    // MARK: - Transport failures

    func testURLErrorBecomesTransportConnectError() {
        // Given
        let connect = Connect(
            transport: FakeTransport.answering(.failure(URLError(.notConnectedToInternet))), retryPolicy: nil)
        // When
        let error = connectError(of: connect.request(Endpoint()))
        // Then
        XCTAssertEqual(error?.kind, .cannotConnect)
        XCTAssertEqual(error?.urlError?.code, .notConnectedToInternet)
        XCTAssertEqual(error?.request?.url?.absoluteString, "https://api.example.com/items")
        XCTAssertNil(error?.statusCode)
    }

    func testURLErrorTimedOutBecomesTimedOut() {
        // Given
        let connect = Connect(transport: FakeTransport.answering(.failure(URLError(.timedOut))), retryPolicy: nil)
        // When
        let error = connectError(of: connect.request(Endpoint()))
        // Then
        XCTAssertEqual(error?.kind, .timedOut)
        XCTAssertEqual(error?.urlError?.code, .timedOut)
    }

    func testTransportConnectErrorPassesThroughUnchanged() {
        // Given
        let original = ConnectError(.rejected, message: "the proxy refused")
        let connect = Connect(transport: FakeTransport.answering(.failure(original)), retryPolicy: nil)
        // When
        let error = connectError(of: connect.request(Endpoint()))
        // Then
        XCTAssertEqual(error?.kind, .rejected)
        XCTAssertEqual(error?.message, "the proxy refused")
    }

    func testTransportFailureDoesNotReachTheErrorHandler() {
        // Given
        let seen = Counter()
        let connect = Connect(
            transport: FakeTransport.answering(.failure(URLError(.networkConnectionLost))),
            errorHandler: ClosureErrorHandler { _ in
                seen.increment()
                return TestError()
            },
            retryPolicy: nil)
        // When
        let error = connectError(of: connect.request(Endpoint()))
        // Then
        XCTAssertEqual(error?.kind, .connectionLost)
        XCTAssertEqual(seen.value, 0)
    }
}

// MARK: - Doubles

/// An error handler implemented with a closure over the whole response.
private struct ClosureErrorHandler: ErrorHandling {
    let body: @Sendable (ConnectResponse) -> Error?

    init(_ body: @escaping @Sendable (ConnectResponse) -> Error?) {
        self.body = body
    }

    func handle(response: [String: Any]) -> Error? { TestError(-1) }

    func handle(_ response: ConnectResponse) -> Error? { body(response) }
}

/// The usage guide's kind of handler: only `handle(response:)`, returning the app's own error type.
private struct BackendErrors: ErrorHandlerProtocol {
    func handle(response: [String: Any]) -> Error? {
        guard let code = response["code"] as? Int else { return nil }
        return BackendError(code: code, text: response["text"] as? String ?? "")
    }
}

private struct BackendError: Error, Equatable {
    let code: Int
    let text: String
}
