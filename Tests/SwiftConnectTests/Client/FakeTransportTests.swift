import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The `FakeTransport` double itself: matching, ordering of stubs and answers, the fallback, recording.
final class FakeTransportTests: XCTestCase {
    typealias Todo = ClientFixtures.Todo

    /// Sends a request straight to the transport.
    private func send(
        _ transport: FakeTransport,
        _ url: String,
        method: String = "GET"
    ) -> Future<ConnectResponse> {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        return transport.send(request)
    }

    private func status(
        _ transport: FakeTransport,
        _ url: String,
        method: String = "GET",
        file: StaticString = #filePath,
        line: UInt = #line
    ) -> Int? {
        value(of: send(transport, url, method: method), file: file, line: line)?.statusCode
    }

    /// A request whose URL was made `relativeTo:` a base is matched by the whole path it is sent to, not its relative
    /// part; a stub path written without its first `/` matches as with it; query values are compared byte for byte.
    func testMatchingReadsTheWholeURLARootlessPathAndQueryBytes() throws {
        let fake = FakeTransport()
        fake.stub(.get, "/v1/todos", query: ["page": "2"], with: .status(204))
        fake.stub(.get, "todos/1", with: .status(201))
        fake.stub(.get, "/search", query: ["q": "caf\u{E9}"], with: .status(200))
        let base = try XCTUnwrap(URL(string: "https://api.test/v1/"))
        let relative = try XCTUnwrap(URL(string: "todos?page=2", relativeTo: base))

        let answer = try fake.send(ConnectRequest(url: relative), transfer: TransferOptions()).wait(timeout: 5)

        XCTAssertEqual(answer.statusCode, 204)
        XCTAssertEqual(fake.requests(to: "/v1/todos").count, 1)
        XCTAssertEqual(status(fake, "https://api.test/todos/1"), 201)
        XCTAssertEqual(fake.requests(to: "todos/1").count, 1)
        XCTAssertEqual(status(fake, "https://api.test/search?q=caf%C3%A9"), 200)
        XCTAssertEqual(status(fake, "https://api.test/search?q=cafe%CC%81"), 404, "another value on the wire")
    }

    /// An engine hands over no body for a `HEAD`, a `1xx`, `204` or `304` (RFC 9110 §6.4.1): neither does the fake,
    /// whatever its stub holds, so that a test whose stub answers every method sees a `HEAD` as the app will. The
    /// headers stay; a pending answer and a streamed one are emptied too.
    func testAnswersThatCarryNoBodyAreHandedOverEmpty() async throws {
        let fake = FakeTransport()
        fake.stub(nil, "/meta", with: .data(Data("abc".utf8), headers: ["X-Count": "3"]))
        fake.stub(nil, "/gone", with: .json(["a": 1], status: 204))
        fake.stub(nil, "/same", with: .data(Data("abc".utf8), status: 304))
        let gate = Promise<Void>()
        fake.stub(nil, "/later", with: FakeResponse.data(Data("abc".utf8)).released(by: gate.future))
        fake.stub(nil, "/streamed", with: .stream([Data("abc".utf8)]))

        let head = try XCTUnwrap(value(of: send(fake, "https://api.test/meta", method: "HEAD")))
        XCTAssertEqual(head.data, Data())
        XCTAssertEqual(head.header("X-Count"), "3")
        XCTAssertEqual(value(of: send(fake, "https://api.test/meta"))?.data, Data("abc".utf8), "a GET gets the body")
        XCTAssertEqual(value(of: send(fake, "https://api.test/gone"))?.data, Data())
        XCTAssertEqual(value(of: send(fake, "https://api.test/same"))?.data, Data())
        let later = send(fake, "https://api.test/later", method: "HEAD")
        gate.succeed(())
        XCTAssertEqual(value(of: later)?.data, Data())
        let streamed = try XCTUnwrap(value(of: send(fake, "https://api.test/streamed", method: "HEAD")))
        let stream = try XCTUnwrap(streamed.bodyStream)
        let first = try await stream.next()
        XCTAssertNil(first, "the stream ends at once")
    }

    // MARK: - Matching

    func testMatchesByMethod() {
        // Given
        let fake = FakeTransport()
        fake.stub(.post, "/todos", with: .status(201))
        // When / Then
        XCTAssertEqual(status(fake, "https://api.example.com/todos", method: "POST"), 201)
        XCTAssertEqual(status(fake, "https://api.example.com/todos", method: "GET"), 404)
    }

    func testNilMethodMatchesAnyMethod() {
        // Given
        let fake = FakeTransport()
        fake.stub(nil, "/todos", with: .status(202))
        // When / Then
        XCTAssertEqual(status(fake, "https://api.example.com/todos", method: "GET"), 202)
        XCTAssertEqual(status(fake, "https://api.example.com/todos", method: "DELETE"), 202)
    }

    func testMatchesThePathExactly() {
        // Given
        let fake = FakeTransport()
        fake.stub(.get, "/todos/1", with: .status(200))
        // When / Then
        XCTAssertEqual(status(fake, "https://api.example.com/todos/1"), 200)
        XCTAssertEqual(status(fake, "https://api.example.com/todos/10"), 404)
        XCTAssertEqual(status(fake, "https://api.example.com/todos"), 404)
        XCTAssertEqual(
            status(fake, "https://api.example.com/todos/1?extra=1"), 200, "no query stub: the query is ignored")
    }

    func testATrailingSlashIsPartOfThePath() {
        // Given: an API whose paths end with a slash (Django REST Framework's default), and one without
        let fake = FakeTransport()
        fake.stub(.get, "/notes/", with: .status(200))
        fake.stub(.get, "/tags", with: .status(204))
        // When / Then: `URL.path` drops the trailing slash, which made "/notes/" unmatchable
        XCTAssertEqual(status(fake, "https://api.example.com/notes/"), 200)
        XCTAssertEqual(status(fake, "https://api.example.com/notes"), 404)
        XCTAssertEqual(status(fake, "https://api.example.com/tags"), 204)
        XCTAssertEqual(status(fake, "https://api.example.com/tags/"), 404)
        XCTAssertEqual(fake.requests(to: "/notes/").count, 1)
        XCTAssertEqual(fake.requests(to: "/notes").count, 1)
    }

    func testAStubPathWrittenWithTextAURLCannotHoldMatchesItsEscapes() {
        // Given: a space and non-ASCII text, which have one form on the wire: their UTF-8 escaped
        let fake = FakeTransport()
        fake.stub(.get, "/folders/a b/notes/café", with: .status(200))
        fake.stub(.get, "/", with: .status(204))
        // When / Then
        XCTAssertEqual(status(fake, "https://api.example.com/folders/a%20b/notes/caf%C3%A9"), 200)
        XCTAssertEqual(status(fake, "https://api.example.com/folders/a%20b/notes/caf%c3%a9"), 200)
        XCTAssertEqual(status(fake, "https://api.example.com/"), 204)
        XCTAssertEqual(status(fake, "https://api.example.com"), 204, "no path is the root")
    }

    func testAnEscapedSlashIsNotThePathSeparator() {
        // Given: a route for one segment holding "a/b", and one for two segments
        let fake = FakeTransport()
        fake.stub(.get, "/files/a%2Fb", with: .status(200))
        fake.stub(.get, "/docs/a/b", with: .status(204))
        // When / Then: matched as sent, so a test fails when the app sends the other URL
        XCTAssertEqual(status(fake, "https://api.example.com/files/a%2Fb"), 200)
        XCTAssertEqual(status(fake, "https://api.example.com/files/a%2fb"), 200, "hex digits in either case")
        XCTAssertEqual(status(fake, "https://api.example.com/files/a/b"), 404)
        XCTAssertEqual(status(fake, "https://api.example.com/docs/a/b"), 204)
        XCTAssertEqual(status(fake, "https://api.example.com/docs/a%2Fb"), 404)
        XCTAssertEqual(fake.requests(to: "/files/a%2Fb").count, 2)
        XCTAssertEqual(fake.requests(to: "/docs/a/b").count, 1)
    }

    func testAnEscapedUnreservedCharacterIsTheCharacter() {
        // Given
        let fake = FakeTransport()
        fake.stub(.get, "/files/my-file_1.txt", with: .status(200))
        // When / Then: RFC 3986 §6.2.2.2, the escape of an unreserved character is the character
        XCTAssertEqual(status(fake, "https://api.example.com/files/%6Dy%2Dfile%5F1%2etxt"), 200)
    }

    func testAReservedCharacterAndItsEscapeAreDifferentPaths() {
        // Given: a path parameter (`;v=1`) and a segment holding a semicolon
        let fake = FakeTransport()
        fake.stub(.get, "/items/x;v=1", with: .status(200))
        fake.stub(.get, "/items/y%3Bv%3D1", with: .status(204))
        // When / Then
        XCTAssertEqual(status(fake, "https://api.example.com/items/x;v=1"), 200)
        XCTAssertEqual(status(fake, "https://api.example.com/items/x%3Bv%3D1"), 404)
        XCTAssertEqual(status(fake, "https://api.example.com/items/y%3Bv%3D1"), 204)
        XCTAssertEqual(status(fake, "https://api.example.com/items/y;v=1"), 404)
    }

    func testAQueryPlusIsASpaceAndAnEscapedPlusIsAPlus() {
        // Given: query values as the server reads them (a `+` is a space in a query)
        let fake = FakeTransport()
        fake.stub(.get, "/search", query: ["q": "a+b"], with: .status(200))
        fake.stub(.get, "/find", query: ["q": "a b", "tag": "x&y=z"], with: .status(204))
        // When / Then
        XCTAssertEqual(status(fake, "https://api.example.com/search?q=a%2Bb"), 200)
        XCTAssertEqual(status(fake, "https://api.example.com/search?q=a+b"), 404, "the server reads a b")
        XCTAssertEqual(status(fake, "https://api.example.com/find?tag=x%26y%3Dz&q=a+b"), 204, "in any order")
        XCTAssertEqual(status(fake, "https://api.example.com/find?q=a%20b&tag=x%26y%3dz"), 204)
        XCTAssertEqual(status(fake, "https://api.example.com/find?q=a%2Bb&tag=x%26y%3Dz"), 404)
    }

    func testAQueryItemWithoutAValueMatchesAnEmptyValue() {
        // Given: a flag sent as `?flag` (`URLQueryItem(name: "flag", value: nil)`), which a server reads as empty
        let fake = FakeTransport()
        fake.stub(.get, "/todos", query: ["done": ""], with: .status(204))
        // When / Then
        XCTAssertEqual(status(fake, "https://api.example.com/todos?done"), 204)
        XCTAssertEqual(status(fake, "https://api.example.com/todos?done="), 204)
        XCTAssertEqual(status(fake, "https://api.example.com/todos?done=no"), 404)
        XCTAssertEqual(status(fake, "https://api.example.com/todos?undone"), 404)
    }

    func testAQueryWrittenInTheStubsPathIsRequiredAsQueryItemsAre() {
        // Given: the query written in the path, as in a URL, alone or beside `query:`
        let fake = FakeTransport()
        fake.stub(.get, "/search?q=swift&tag=a%26b", with: .status(200))
        fake.stub(.get, "/todos?page=2", query: ["sort": "asc"], with: .status(206))
        fake.stub(.get, "/notes#top", with: .status(204))
        // When / Then: matched as a server reads the query, items in any order
        XCTAssertEqual(status(fake, "https://api.example.com/search?tag=a%26b&q=swift"), 200)
        XCTAssertEqual(status(fake, "https://api.example.com/search?q=swift"), 404, "tag is required too")
        XCTAssertEqual(status(fake, "https://api.example.com/search?q=kotlin&tag=a%26b"), 404)
        XCTAssertEqual(status(fake, "https://api.example.com/todos?sort=asc&page=2"), 206)
        XCTAssertEqual(status(fake, "https://api.example.com/todos?page=2"), 404, "sort is required too")
        XCTAssertEqual(status(fake, "https://api.example.com/notes"), 204, "a fragment is never sent")
        XCTAssertEqual(fake.requests(to: "/todos?page=2").count, 2)
        XCTAssertEqual(fake.requests(to: "/todos?sort=asc").count, 1)
    }

    func testMatchesRequiredQueryItems() {
        // Given
        let fake = FakeTransport()
        fake.stub(.get, "/todos", query: ["page": "2"], with: .status(206))
        // When / Then
        XCTAssertEqual(status(fake, "https://api.example.com/todos?page=2"), 206)
        XCTAssertEqual(status(fake, "https://api.example.com/todos?sort=asc&page=2"), 206, "other items may be present")
        XCTAssertEqual(status(fake, "https://api.example.com/todos?page=3"), 404)
        XCTAssertEqual(status(fake, "https://api.example.com/todos"), 404)
    }

    // MARK: - Which answer

    func testMostRecentMatchingStubWins() {
        // Given
        let fake = FakeTransport()
        fake.stub(.get, "/todos/1", with: .status(200))
        fake.stub(.get, "/todos/1", with: .status(410))
        // When / Then
        XCTAssertEqual(status(fake, "https://api.example.com/todos/1"), 410)
    }

    /// A stub given no responses (say, built from an empty fixture list) is a mistake in the test: its requests
    /// fail saying so, instead of silently getting an earlier stub's answer or the 404 fallback.
    func testAStubWithNoResponsesFailsItsRequestsSayingSo() {
        // Given
        let fake = FakeTransport()
        fake.stub(.get, "/todos/1", with: .status(200))
        let fixtures: [FakeResponse] = []
        fake.stub(.get, "/todos/1", with: fixtures)
        // When
        let error = connectError(of: send(fake, "https://api.example.com/todos/1"))
        // Then
        XCTAssertEqual(error?.kind, .transport)
        XCTAssertTrue(error?.message.contains("no responses") ?? false, error?.message ?? "no error")
        XCTAssertTrue(error?.message.contains("/todos/1") ?? false, error?.message ?? "no error")
    }

    func testMoreSpecificEarlierStubLosesToALaterGeneralOne() {
        // Given
        let fake = FakeTransport()
        fake.stub(.get, "/todos", query: ["page": "2"], with: .status(206))
        fake.stub(nil, "/todos", with: .status(200))
        // When / Then
        XCTAssertEqual(status(fake, "https://api.example.com/todos?page=2"), 200)
    }

    func testSequenceIsServedInOrderThenRepeatsTheLast() {
        // Given
        let fake = FakeTransport()
        fake.stub(.get, "/flaky", with: [.failure(URLError(.networkConnectionLost)), .status(500), .status(200)])
        // When
        let first = send(fake, "https://api.example.com/flaky")
        let statuses = (0..<3).map { _ in status(fake, "https://api.example.com/flaky") }
        // Then
        XCTAssertEqual((error(of: first) as? URLError)?.code, .networkConnectionLost)
        XCTAssertEqual(statuses, [500, 200, 200])
    }

    func testEachRouteCountsItsOwnSequence() {
        // Given
        let fake = FakeTransport()
        fake.stub(.get, "/a", with: [.status(201), .status(202)])
        fake.stub(.get, "/b", with: [.status(301), .status(302)])
        // When
        let answers = [
            status(fake, "https://x.test/a"), status(fake, "https://x.test/b"), status(fake, "https://x.test/a"),
            status(fake, "https://x.test/b"),
        ]
        // Then
        XCTAssertEqual(answers, [201, 301, 202, 302])
    }

    func testUnmatchedRequestGetsTheFallback404() throws {
        // Given
        let fake = FakeTransport()
        // When
        let response = value(of: send(fake, "https://api.example.com/nothing"))
        // Then
        XCTAssertEqual(response?.statusCode, 404)
        let body = try XCTUnwrap(response?.data)
        XCTAssertEqual(
            try JSONSerialization.jsonObject(with: body) as? [String: String], ["error": "no stub for this request"])
    }

    func testFallbackThroughTheClientIsAServerMessage() {
        // Given
        let connect = Connect(transport: FakeTransport())
        // When
        let error = connectError(of: connect.request(ClientFixtures.Endpoint()))
        // Then
        XCTAssertEqual(error?.statusCode, 404)
        XCTAssertEqual(error?.message, "no stub for this request")
    }

    func testCustomFallback() {
        // Given
        let fake = FakeTransport(fallback: .status(418))
        // When / Then
        XCTAssertEqual(status(fake, "https://api.example.com/anything"), 418)
    }

    // MARK: - Recording

    func testRecordsEveryRequestInOrderIncludingUnmatchedOnes() {
        // Given
        let fake = FakeTransport()
        fake.stub(.get, "/a", with: .status(200))
        // When
        _ = send(fake, "https://x.test/a", method: "GET")
        _ = send(fake, "https://x.test/b", method: "POST")
        _ = send(fake, "https://x.test/a?n=2", method: "GET")
        // Then
        XCTAssertEqual(
            fake.requests.map { "\($0.httpMethod ?? "") \($0.url?.absoluteString ?? "")" },
            [
                "GET https://x.test/a", "POST https://x.test/b", "GET https://x.test/a?n=2",
            ])
        XCTAssertEqual(fake.requests(to: "/a").count, 2)
        XCTAssertEqual(fake.requests(to: "/b").map(\.httpMethod), ["POST"])
    }

    func testRemoveRecordedRequestsKeepsTheStubs() {
        // Given
        let fake = FakeTransport()
        fake.stub(.get, "/a", with: .status(201))
        _ = send(fake, "https://x.test/a")
        // When
        fake.removeRecordedRequests()
        // Then
        XCTAssertTrue(fake.requests.isEmpty)
        XCTAssertEqual(status(fake, "https://x.test/a"), 201)
        XCTAssertEqual(fake.requests.count, 1)
    }

    // MARK: - Answers

    func testJSONAnswerEncodesTheValueAndSetsContentType() {
        // Given
        let fake = FakeTransport.answering(.json(Todo.sample, headers: ["X-Extra": "1"]))
        // When
        let response = value(of: send(fake, "https://x.test/t"))
        // Then
        XCTAssertEqual(response?.header("Content-Type"), "application/json")
        XCTAssertEqual(response?.header("X-Extra"), "1")
        XCTAssertEqual(response.flatMap { try? JSONDecoder().decode(Todo.self, from: $0.data) }, Todo.sample)
    }

    func testJSONAnswerUsesTheGivenEncoderSoAClientWithAMatchingDecoderReadsIt() throws {
        // Given: an API with snake_case keys and ISO 8601 dates, and a client configured for it.
        struct Event: Codable, Equatable, Sendable {
            let startsAt: Date
        }
        let event = Event(startsAt: Date(timeIntervalSince1970: 1_700_000_000))
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        var decoders = ResponseDecoders.default
        decoders.register(decoder, for: "application/json")
        let fake = FakeTransport.answering(.json(event, encoder: encoder))
        let connect = Connect(transport: fake, retryPolicy: nil, settings: Connect.Settings(decoders: decoders))

        // When
        let response = value(of: send(fake, "https://x.test/events/1"))
        let decoded = value(of: connect.request(ClientFixtures.Endpoint()).decoded(toType: Event.self))

        // Then
        let body = response.map { String(decoding: $0.data, as: UTF8.self) }
        XCTAssertEqual(body, #"{"starts_at":"2023-11-14T22:13:20Z"}"#)
        XCTAssertEqual(response?.header("Content-Type"), "application/json")
        XCTAssertEqual(decoded, event)
    }

    func testJSONAnswerKeepsAnExplicitContentType() {
        // Given
        let fake = FakeTransport.answering(
            .json(string: "{}", status: 400, headers: ["content-type": "application/problem+json"]))
        // When
        let response = value(of: send(fake, "https://x.test/t"))
        // Then
        XCTAssertEqual(response?.mediaType, "application/problem+json")
        XCTAssertEqual(response?.statusCode, 400)
    }

    func testHandlerAnswerSeesTheRequest() {
        // Given
        let fake = FakeTransport.answering(
            .handler { request in
                .success(ConnectResponse(request: request, statusCode: 200, data: request.httpBody ?? Data())!)
            })
        var request = URLRequest(url: URL(string: "https://x.test/echo")!)
        request.httpMethod = "POST"
        request.httpBody = Data("ping".utf8)
        // When
        let response = value(of: fake.send(request))
        // Then
        XCTAssertEqual(response?.data, Data("ping".utf8))
    }

    func testAStatusNotOfThreeDigitsFailsAsAnEnginesBadResponse() {
        for status in [0, -1, 42, 99, 1000] {
            for answer: FakeResponse in [
                .status(status), .json(string: "{}", status: status), .data(Data("x".utf8), status: status),
                .stream([Data("x".utf8)], status: status),
            ] {
                // Given
                let fake = FakeTransport.answering(answer)
                // When
                let error = connectError(of: send(fake, "https://x.test/t"))
                // Then: as an engine fails on such a status line (EngineExchange), with the core's message
                XCTAssertEqual(error?.kind, .badResponse, "\(status): \(String(describing: error))")
                XCTAssertEqual(
                    error?.message, "the server's status \(status) is not an HTTP status (100 to 999)", "\(status)")
                XCTAssertEqual(error?.urlError?.code, .badServerResponse, "\(status)")
                XCTAssertEqual(error?.request?.url?.absoluteString, "https://x.test/t", "\(status)")
            }
        }
    }

    func testAStatusNotOfThreeDigitsFailsTheCallAsABadResponse() {
        // Given
        let client = Connect(transport: FakeTransport.answering(.status(0)), retryPolicy: nil)
        let endpoint = ClientFixtures.Endpoint(endpoint: "/items/1")
        for options in [RequestOptions(), RequestOptions(acceptsEveryStatus: true)] {
            // When
            let error = connectError(of: client.response(for: endpoint, options: options))
            // Then
            XCTAssertEqual(error?.kind, .badResponse, String(describing: error))
            XCTAssertEqual(error?.message, "the server's status 0 is not an HTTP status (100 to 999)")
        }
    }

    /// A stub's header with CR or LF (`"a\r\nSet-Cookie: x"`), NUL, or a name that is not a token was handed over as
    /// one field: no server can send such a field (the line would split), and an engine fails on what comes out.
    /// It fails as an engine's malformed answer, naming the header.
    func testAStubHeaderAnEngineCouldNotReceiveFailsAsABadResponse() {
        let invalid: [(name: String, value: String, shown: String)] = [
            ("X-Note", "a\r\nSet-Cookie: session=stolen", "X-Note"), ("X-Note", "a\nb", "X-Note"),
            ("X-Note", "a\u{0}b", "X-Note"), ("X Note", "v", "X…"), ("", "v", ""),
            ("X-Note\r\nX-Other", "v", "X-Note…"),
        ]
        for header in invalid {
            for answer: FakeResponse in [
                .status(200, headers: [header.name: header.value]),
                .json(string: "{}", headers: [header.name: header.value]),
                .data(Data("x".utf8), headers: [header.name: header.value]),
                .stream([Data("x".utf8)], headers: [header.name: header.value]),
            ] {
                // Given
                let fake = FakeTransport.answering(answer)
                // When
                let error = connectError(of: send(fake, "https://x.test/t"))
                // Then
                let label = "\(header.name.debugDescription): \(String(describing: error))"
                XCTAssertEqual(error?.kind, .badResponse, label)
                XCTAssertTrue(error?.message.contains("header \(header.shown.debugDescription)") == true, label)
                XCTAssertEqual(error?.urlError?.code, .badServerResponse, label)
                XCTAssertEqual(error?.request?.url?.absoluteString, "https://x.test/t", label)
            }
        }
        // A tab and text beyond ASCII are what servers send: answered.
        let fine = FakeTransport.answering(.status(200, headers: ["X-Note": "a\tb é"]))
        XCTAssertEqual(try send(fine, "https://x.test/t").wait(timeout: 5).header("X-Note"), "a\tb é")
    }

    func testNeverAnswerStaysPendingUntilCancelled() {
        // Given
        let fake = FakeTransport.answering(.never)
        let future = send(fake, "https://x.test/t")
        XCTAssertFalse(future.isCompleted)
        // When
        future.cancel()
        // Then
        XCTAssertEqual(connectError(of: future)?.kind, .cancelled)
    }

    func testReleasedAnswerWaitsForTheGate() {
        // Given
        let gate = Promise<Void>()
        let fake = FakeTransport.answering(FakeResponse.status(200).released(by: gate.future))
        let future = send(fake, "https://x.test/t")
        XCTAssertFalse(future.isCompleted)
        // When
        gate.succeed(())
        // Then
        XCTAssertEqual(value(of: future)?.statusCode, 200)
    }

    func testCancellingOneGatedRequestLeavesTheGateAndTheOthers() {
        // Given
        let gate = Promise<Void>()
        let fake = FakeTransport.answering(FakeResponse.status(200).released(by: gate.future))
        let cancelled = send(fake, "https://x.test/one")
        let kept = send(fake, "https://x.test/two")
        // When
        cancelled.cancel()
        gate.succeed(())
        // Then
        XCTAssertFalse(gate.future.isCancelled)
        XCTAssertEqual(connectError(of: cancelled)?.kind, .cancelled)
        XCTAssertEqual(value(of: kept)?.statusCode, 200)
    }

    /// A streamed answer given after its request was cancelled (the gate opened, the delay passed) reached nobody,
    /// and its body was never stopped: its producer waited for ever on a full buffer, as an engine would hold its
    /// connection.
    func testAStreamedAnswerGivenAfterItsRequestWasCancelledIsStopped() {
        // Given
        let gate = Promise<Void>()
        let stopped = Recorder<Void>()
        let chunk = Data(count: 64 * 1_024)
        let fake = FakeTransport.answering(
            FakeResponse.stream { body in
                while await body.send(chunk) {}
                stopped.append(())
            }.released(by: gate.future))
        let future = send(fake, "https://x.test/stream")
        // When
        future.cancel()
        gate.succeed(())
        // Then
        XCTAssertEqual(connectError(of: future)?.kind, .cancelled)
        XCTAssertTrue(stopped.wait(forCount: 1, timeout: 10), "the producer still writes to a body nobody reads")
    }

    func testDelayedAnswerArrivesLater() {
        // Given
        let fake = FakeTransport.answering(FakeResponse.status(200).delayed(by: 0.3))
        // When
        let future = send(fake, "https://x.test/t")
        // Then
        XCTAssertFalse(future.isCompleted, "not answered synchronously")
        XCTAssertEqual(value(of: future)?.statusCode, 200)
    }

    func testDelayedAnswerWithANaNDelayFailsAtOnceSayingSo() throws {
        // Given: a delay computed from a missing value; Dispatch reads NaN seconds as "never".
        let fake = FakeTransport.answering(FakeResponse.status(200).delayed(by: .nan))
        // When
        let result = self.result(of: send(fake, "https://x.test/t"), timeout: 5)
        // Then
        guard case .failure(let error as ConnectError)? = result else {
            return XCTFail("expected a ConnectError, got \(String(describing: result))")
        }
        XCTAssertTrue(error.message.contains("NaN"), "\(error)")
    }

    func testConcurrentSendsAreAllRecorded() {
        // Given
        let fake = FakeTransport()
        fake.stub(.get, "/c", with: .status(200))
        // When
        DispatchQueue.concurrentPerform(iterations: 100) { _ in
            _ = fake.send(URLRequest(url: URL(string: "https://x.test/c")!))
        }
        // Then
        XCTAssertEqual(fake.requests.count, 100)
    }

    // MARK: - A streamed stub meets the transfer's rules

    /// 2 MiB in 64 KiB pieces.
    private static let feed = FakeResponse.stream(Array(repeating: Data(repeating: 7, count: 64 << 10), count: 32))

    func testAStreamedStubIsHeldToTheSizeLimitAsAnEngineHoldsIt() async throws {
        // Given: a client with a 1 MiB limit
        let transport = FakeTransport(fallback: Self.feed)
        let connect = Connect(transport: transport, retryPolicy: nil, settings: .init(maxResponseBytes: 1 << 20))
        // When: streamed, and read whole
        var received = 0
        do {
            for try await chunk in connect.stream(ClientFixtures.Endpoint(endpoint: "/feed")) {
                received += chunk.count
            }
            XCTFail("the whole feed arrived: \(received) bytes")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .responseTooLarge)
        }
        let whole = connectError(of: connect.request(ClientFixtures.Endpoint(endpoint: "/feed")))
        // Then
        XCTAssertLessThanOrEqual(received, 1 << 20)
        XCTAssertEqual(whole?.kind, .responseTooLarge)
    }

    func testAStreamedStubIsReadWholeForARequestOrADownload() throws {
        let transport = FakeTransport(fallback: Self.feed)
        let connect = Connect(transport: transport, retryPolicy: nil)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("feed.bin")

        let data = try connect.request(ClientFixtures.Endpoint(endpoint: "/feed")).wait()
        let file = try connect.download(ClientFixtures.Endpoint(endpoint: "/feed"), to: destination).wait()

        XCTAssertEqual(data.count, 2 << 20)
        XCTAssertEqual(try Data(contentsOf: file).count, 2 << 20)
    }
}
