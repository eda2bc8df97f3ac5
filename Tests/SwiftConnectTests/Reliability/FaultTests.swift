import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Reliability, item 1: faults, through real `URLSession` to a ``LocalServer`` on 127.0.0.1.
///
/// Each fault must end in the documented ``ConnectError/Kind``, within a generous bound (no timing assertion
/// beyond that bound), with the process healthy; then a normal request on the same client must succeed.
///
/// | Fault                                          | Expected outcome                                          |
/// |------------------------------------------------|-----------------------------------------------------------|
/// | connection closed before headers               | `.transport` (Linux: `URLError.badServerResponse`)        |
/// | connection closed mid-body (FIN, short body)   | `.transport` (`URLError.networkConnectionLost`)           |
/// | connection reset mid-body (RST)                | `.transport` (`URLError.networkConnectionLost`)           |
/// | `Content-Length` larger than the body, silence | `.timedOut` (the request's timeout bounds the exchange)   |
/// | headers that never finish                      | `.timedOut`                                               |
/// | a body that trickles forever                   | `.timedOut` (the timeout bounds the whole exchange)       |
/// | empty 200 decoded as a struct                  | `.decoding`                                               |
/// | 204 decoded as `Todo?` / `EmptyResponse`       | `nil` / success; as `Todo`: `.decoding`                   |
/// | 500 with an HTML body                          | `.httpStatus`, status 500, body kept byte for byte        |
/// | malformed JSON, invalid UTF-8 in JSON          | `.decoding`                                               |
/// | JSON nested 10,000 levels deep                 | `.decoding` (200), `.httpStatus` (500), log withheld      |
/// | `1e400` or a 30-digit integer into `Int`       | `.decoding` (Foundation gives no coding path)             |
/// | the same into `Double` / `Decimal`             | Foundation's answer (see the test), never a crash         |
/// | a response over the size limit                 | `.responseTooLarge`, declared or streamed without end     |
/// | a redirect loop                                | `.transport` (`URLError.httpTooManyRedirects`)            |
///
/// Foundation's JSON parser refuses nesting deeper than 512 levels with an error, so the 10,000-level body
/// never reaches a recursive step. Debug output re-serialises JSON to pretty-print it, and that recursion
/// overflows a 512 KiB thread stack (Apple's dispatch worker threads) from about 300 levels: debug output now
/// leaves JSON deeper than 128 levels unparsed, withheld when redacting (see `JSONDepthGuardTests`).
///
/// The `URLError` codes asserted are FoundationNetworking's (libcurl's); on Apple platforms only the kind is.
final class FaultTests: XCTestCase {
    private typealias Todo = ClientFixtures.Todo

    /// A model with one number, to see what a huge number decodes to.
    private struct Box<Number: Decodable & Sendable>: Decodable, Sendable {
        let value: Number
    }

    /// The longest any faulty exchange may take: generous, far above the timeouts used.
    private static let bound: TimeInterval = 10

    private var server: LocalServer!
    private var logger: MemoryLogger!
    private var connect: Connect!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        server.route("GET", "/todo") { _ in .json(Todo.sample) }
        logger = MemoryLogger()
        connect = Connect(
            transport: URLSessionTransport(), retryPolicy: nil, settings: Connect.Settings(logger: logger))
    }

    override func tearDown() {
        connect.cancelAllRequests()
        server.stop()
        server = nil
        logger = nil
        connect = nil
    }

    // MARK: - Helpers

    /// A route on the test server, with a short timeout when a timeout is the expected outcome.
    private func route(_ path: String, timeout: TimeInterval = 5) -> Route {
        Route(path, baseURL: server.baseURL, timeout: timeout)
    }

    /// Waits at most ``bound`` seconds for `future` to fail, and returns its ``ConnectError``.
    ///
    /// Prints the time it took, for the record; the only timing assertion is the bound itself.
    private func failure<Value>(
        of future: Future<Value>,
        _ fault: String,
        within bound: TimeInterval = FaultTests.bound,
        file: StaticString = #filePath,
        line: UInt = #line
    ) -> ConnectError? {
        let start = DispatchTime.now().uptimeNanoseconds
        let result: Result<Value, any Error>
        do {
            result = try future.waitForResult(timeout: bound)
        } catch {
            future.cancel()
            XCTFail("\(fault): no outcome within \(bound) s, the fault became a hang", file: file, line: line)
            return nil
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        switch result {
        case .success(let value):
            XCTFail("\(fault): expected a failure, got \(value)", file: file, line: line)
            return nil
        case .failure(let error as ConnectError):
            let urlError = error.urlError.map { " (URLError \($0.code.rawValue))" } ?? ""
            print("[FaultTests] \(fault) → \(error.kind)\(urlError) in \(String(format: "%.3f", elapsed)) s")
            return error
        case .failure(let error):
            XCTFail("\(fault): expected a ConnectError, got \(type(of: error)): \(error)", file: file, line: line)
            return nil
        }
    }

    /// Waits at most ``bound`` seconds for `future` to succeed, and returns its value.
    private func success<Value>(
        of future: Future<Value>,
        _ fault: String,
        file: StaticString = #filePath,
        line: UInt = #line
    ) -> Value? {
        do {
            return try future.wait(timeout: FaultTests.bound)
        } catch {
            future.cancel()
            XCTFail("\(fault): expected a value, got \(error)", file: file, line: line)
            return nil
        }
    }

    /// Checks the aftermath of a fault: the client has nothing left in flight, the server was released by the
    /// client (no exchange still hanging), and a normal request on the same client succeeds.
    private func assertClientRecovers(file: StaticString = #filePath, line: UInt = #line) {
        // The client forgets a request before any observer of its future runs, so this holds at once.
        XCTAssertEqual(
            connect.requestsInFlight, 0, "the client still tracks a request in flight", file: file, line: line)
        XCTAssertTrue(
            server.waitUntilIdle(timeout: FaultTests.bound),
            "the client did not let go of the faulty exchange", file: file, line: line)
        let todo = success(of: connect.request(route("/todo")).decoded(toType: Todo.self), "follow-up request")
        XCTAssertEqual(todo, Todo.sample, "a normal request after the fault", file: file, line: line)
    }

    /// `{"a":{"a":…1…}}`, `depth` objects deep.
    private static func nestedObjects(depth: Int) -> String {
        String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
    }

    /// `[[[…]]]`, `depth` arrays deep.
    private static func nestedArrays(depth: Int) -> String {
        String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    }

    // MARK: - The connection breaks

    func testConnectionClosedBeforeHeadersIsATransportFailure() {
        // Given a server that accepts the connection and closes it without a byte
        server.route("GET", "/fault") { _ in .json(Todo.sample).withFault(.closeBeforeHeaders) }

        // When
        let error = failure(of: connect.request(route("/fault")), "closed before headers")

        // Then: a lost connection, as Apple's URLSession and AsyncHTTPClient say (libcurl's "Empty reply from server",
        // which FoundationNetworking reports as `badServerResponse`, included)
        XCTAssertEqual(error?.kind, .connectionLost)
        XCTAssertNil(error?.response)
        #if canImport(FoundationNetworking)
            XCTAssertEqual(error?.urlError?.code, .networkConnectionLost)
            XCTAssertEqual(error?.urlError?.localizedDescription, "Empty reply from server", "libcurl's message")
        #endif
        assertClientRecovers()
    }

    func testConnectionClosedMidBodyIsATransportFailure() {
        // Given a body cut after 8 of its bytes, then a clean close
        server.route("GET", "/fault") { _ in
            .text(String(repeating: "0123456789", count: 100)).withFault(.closeMidBody(afterBytes: 8))
        }

        // When
        let error = failure(of: connect.request(route("/fault")), "closed mid-body")

        // Then: a short body is never handed out as a success
        XCTAssertEqual(error?.kind, .connectionLost)
        XCTAssertNotNil(error?.urlError)
        // libcurl's "transfer closed with bytes remaining" has no URLError of its own in FoundationNetworking
        // (it says `.unknown`); the transport reports a body cut short of its length as a lost connection, as
        // Apple's URLSession does, so the retry policy treats it alike on every platform.
        XCTAssertEqual(error?.urlError?.code, .networkConnectionLost)
        assertClientRecovers()
    }

    func testConnectionResetMidBodyIsATransportFailure() throws {
        // Given a second server that sends part of a body, then is stopped, which resets the connection
        let doomed = try LocalServer.started()
        defer { doomed.stop() }
        doomed.route("GET", "/fault") { _ in .text("partial body").withFault(.lieAboutLength(extra: 1_000)) }
        let bodyArrived = DispatchSemaphore(value: 0)
        let options = RequestOptions(progress: { report in
            if report.bytesReceived > 0 { bodyArrived.signal() }
        })

        // When the connection is reset once the first body bytes are in
        let future = connect.request(Route("/fault", baseURL: doomed.baseURL, timeout: 30), options: options)
        XCTAssertEqual(bodyArrived.wait(timeout: .now() + FaultTests.bound), .success, "no body bytes arrived")
        doomed.stop()
        let error = failure(of: future, "reset mid-body")

        // Then
        XCTAssertEqual(error?.kind, .connectionLost)
        #if canImport(FoundationNetworking)
            XCTAssertEqual(error?.urlError?.code, .networkConnectionLost)
        #endif
        assertClientRecovers()
    }

    // MARK: - The server goes silent

    func testContentLengthLargerThanTheBodyTimesOut() {
        // Given a response declaring 100 bytes more than it sends, then silence on an open connection
        server.route("GET", "/fault") { _ in .json(Todo.sample).withFault(.lieAboutLength(extra: 100)) }

        // When
        let error = failure(of: connect.request(route("/fault", timeout: 0.5)), "Content-Length larger than body")

        // Then: the request's timeout ends the wait for bytes that never come
        XCTAssertEqual(error?.kind, .timedOut)
        XCTAssertEqual(error?.urlError?.code, .timedOut)
        assertClientRecovers()
    }

    func testHeadersThatNeverFinishTimeOut() {
        // Given a server that sends half a header line, then nothing
        server.route("GET", "/fault") { _ in .json(Todo.sample).withFault(.neverFinishHeaders) }

        // When
        let error = failure(of: connect.request(route("/fault", timeout: 0.5)), "headers never finish")

        // Then
        XCTAssertEqual(error?.kind, .timedOut)
        XCTAssertNil(error?.response)
        assertClientRecovers()
    }

    func testABodyThatTricklesForeverTimesOut() {
        // Given a chunked body of one byte every 50 ms, for ever: each byte alone would keep an idle timer happy
        server.route("GET", "/fault") { _ in
            .status(200).withFault(.trickle(chunk: Data("x".utf8), interval: 0.05))
        }

        // When
        let error = failure(of: connect.request(route("/fault", timeout: 0.5)), "trickle")

        // Then: the timeout bounds the whole exchange, not the gap between bytes
        XCTAssertEqual(error?.kind, .timedOut)
        assertClientRecovers()
    }

    // MARK: - Empty bodies

    func testAnEmpty200DecodedAsAStructIsADecodingError() {
        // Given
        server.route("GET", "/fault") { _ in .status(200) }

        // When
        let error = failure(of: connect.request(route("/fault")).decoded(toType: Todo.self), "empty 200")

        // Then
        XCTAssertEqual(error?.kind, .decoding)
        XCTAssertEqual(error?.body, Data())
        assertClientRecovers()
    }

    func testA204DecodesAsNilOrEmptyResponseAndFailsAsAStruct() {
        // Given
        server.route("DELETE", "/fault") { _ in .status(204) }
        let delete = Route("/fault", baseURL: server.baseURL, method: .delete, timeout: 5)

        // When / Then: an optional is nil, EmptyResponse succeeds
        let optional = success(of: connect.request(delete).decoded(toType: Todo?.self), "204 as Todo?")
        XCTAssertEqual(optional, .some(nil))
        let empty = success(of: connect.request(delete).decoded(toType: EmptyResponse.self), "204 as EmptyResponse")
        XCTAssertEqual(empty, EmptyResponse())

        // When / Then: a required value is missing
        let error = failure(of: connect.request(delete).decoded(toType: Todo.self), "204 as Todo")
        XCTAssertEqual(error?.kind, .decoding)
        assertClientRecovers()
    }

    // MARK: - Error statuses

    func testA500WithAnHTMLBodyIsAnHTTPStatusErrorKeepingTheBody() {
        // Given a proxy-style error page
        let html = "<html><body><h1>500 Internal Server Error</h1><p>nginx</p></body></html>"
        server.route("GET", "/fault") { _ in .text(html, status: 500, contentType: "text/html") }

        // When
        let error = failure(of: connect.request(route("/fault")).decoded(toType: Todo.self), "500 HTML")

        // Then
        XCTAssertEqual(error?.kind, .httpStatus)
        XCTAssertEqual(error?.statusCode, 500)
        XCTAssertEqual(error?.body, Data(html.utf8))
        assertClientRecovers()
    }

    // MARK: - Bad JSON

    func testMalformedJSONIsADecodingError() {
        // Given a body cut in the middle of an object
        server.route("GET", "/fault") { _ in .json(string: #"{"userId": 1, "id": 1, "title": "#) }

        // When
        let error = failure(of: connect.request(route("/fault")).decoded(toType: Todo.self), "malformed JSON")

        // Then
        XCTAssertEqual(error?.kind, .decoding)
        XCTAssertEqual(error?.body, Data(#"{"userId": 1, "id": 1, "title": "#.utf8))
        assertClientRecovers()
    }

    func testInvalidUTF8InJSONIsADecodingError() {
        // Given a string holding bytes that are not UTF-8 (a lone continuation byte, 0xFF, a cut sequence)
        var body = Data(#"{"userId":1,"id":1,"title":""#.utf8)
        body.append(contentsOf: [0x80, 0xFF, 0xC3])
        body.append(contentsOf: Data(#"","completed":false}"#.utf8))
        server.route("GET", "/fault") { [body] _ in .data(body, contentType: "application/json") }

        // When
        let error = failure(of: connect.request(route("/fault")).decoded(toType: Todo.self), "invalid UTF-8")

        // Then
        XCTAssertEqual(error?.kind, .decoding)
        XCTAssertEqual(error?.body, body)
        assertClientRecovers()
    }

    // MARK: - Deep nesting

    func testJSONNested10000LevelsDeepIsADecodingErrorNotACrash() {
        // Given 200 bodies nested 10,000 levels deep: a recursive parser would overflow the stack
        let objects = Self.nestedObjects(depth: 10_000)
        let arrays = Self.nestedArrays(depth: 10_000)
        server.route("GET", "/objects") { _ in .json(string: objects) }
        server.route("GET", "/arrays") { _ in .json(string: arrays) }

        // When / Then: decoding fails with an error naming the cause, whatever the target type
        for path in ["/objects", "/arrays"] {
            let asTodo = failure(of: connect.request(route(path)).decoded(toType: Todo.self), "deep \(path) → Todo")
            XCTAssertEqual(asTodo?.kind, .decoding)
            XCTAssertEqual(asTodo?.message.contains("nested deeper than 512 levels"), true, asTodo?.message ?? "")
            let asEmpty = failure(
                of: connect.request(route(path)).decoded(toType: EmptyResponse.self), "deep \(path) → EmptyResponse")
            XCTAssertEqual(asEmpty?.kind, .decoding)
        }
        assertClientRecovers()
    }

    func testA500NestedDeepGoesThroughTheErrorHandlerAsNotJSON() {
        // Given an error body nested 10,000 levels deep, with a message at the top the handler would find
        let deep = #"{"message":"never read","detail":"# + Self.nestedObjects(depth: 10_000) + "}"
        server.route("GET", "/fault") { _ in .json(string: deep, status: 500) }

        // When
        let error = failure(of: connect.request(route("/fault")).decoded(toType: Todo.self), "deep 500")

        // Then: the body is not treated as JSON, and it is kept
        XCTAssertEqual(error?.kind, .httpStatus)
        XCTAssertEqual(error?.statusCode, 500)
        XCTAssertEqual(error?.body?.count, deep.utf8.count)
        assertClientRecovers()
    }

    func testDebugOutputOfDeepJSONIsNotReserialised() {
        // Given bodies nested 10,000 levels (beyond the parser's limit) and 400 levels (within it, but deeper than
        // re-serialising can safely recurse on a 512 KiB thread stack), as a success and as an error
        let tooDeep = Self.nestedObjects(depth: 10_000)
        let deep = Self.nestedObjects(depth: 400)
        server.route("GET", "/too-deep") { _ in .json(string: tooDeep) }
        server.route("GET", "/deep") { _ in .json(string: deep) }
        server.route("GET", "/deep-500") { _ in .json(string: deep, status: 500) }
        let showing = Connect(
            transport: URLSessionTransport(), retryPolicy: nil,
            settings: Connect.Settings(logger: logger, redactsSecrets: false))

        for client in [connect!, showing] {
            logger.removeAll()

            // When
            let tooDeepBody = success(of: client.request(route("/too-deep"), debugResponse: true), "debug, 10,000")
            let deepBody = success(of: client.request(route("/deep"), debugResponse: true), "debug, 400 deep")
            let error = failure(of: client.request(route("/deep-500"), debugResponse: true), "debug, 400 deep 500")

            // Then: the bodies arrive intact; the log withholds them when redacting, or shows them as they came
            XCTAssertEqual(tooDeepBody?.count, tooDeep.utf8.count)
            XCTAssertEqual(deepBody?.count, deep.utf8.count)
            XCTAssertEqual(error?.kind, .httpStatus)
            XCTAssertEqual(error?.statusCode, 500)
            let responses = logger.messages.filter { $0.contains("HTTP ") && $0.contains(" ← GET ") }
            XCTAssertEqual(responses.count, 3, "one response log per request")
            for message in responses {
                if client.settings.redactsSecrets {
                    let withheld = message.contains("nested deeper than 128 levels, not shown")
                    XCTAssertTrue(withheld, String(message.prefix(300)))
                } else {
                    XCTAssertTrue(message.contains(#"{"a":{"a":{"a":"#), "the raw body, not pretty-printed JSON")
                }
            }
        }
        assertClientRecovers()
    }

    // MARK: - Huge numbers

    func testHugeNumbersFailToDecodeIntoInt() {
        // Given numbers no Int holds
        server.route("GET", "/exponent") { _ in .json(string: #"{"value": 1e400}"#) }
        server.route("GET", "/digits") { _ in .json(string: #"{"value": 123456789012345678901234567890}"#) }

        // When / Then: Foundation reports an unrepresentable number as invalid JSON at the top, without a path
        for path in ["/exponent", "/digits"] {
            let error = failure(
                of: connect.request(route(path)).decoded(toType: Box<Int>.self), "huge number \(path) → Int")
            XCTAssertEqual(error?.kind, .decoding)
            XCTAssertNotNil(error?.body)
        }
        assertClientRecovers()
    }

    func testHugeNumbersIntoDoubleAndDecimalDoWhatFoundationDoes() {
        // Given
        server.route("GET", "/exponent") { _ in .json(string: #"{"value": 1e400}"#) }
        server.route("GET", "/digits") { _ in .json(string: #"{"value": 123456789012345678901234567890}"#) }

        // When / Then: 1e400 is out of Double's range, and Foundation refuses it rather than answer infinity
        let exponentAsDouble = failure(
            of: connect.request(route("/exponent")).decoded(toType: Box<Double>.self), "1e400 → Double")
        XCTAssertEqual(exponentAsDouble?.kind, .decoding)

        // When / Then: Decimal's exponent stops at 127, so 1e400 is refused too
        let exponentAsDecimal = failure(
            of: connect.request(route("/exponent")).decoded(toType: Box<Decimal>.self), "1e400 → Decimal")
        XCTAssertEqual(exponentAsDecimal?.kind, .decoding)

        // When / Then: 30 digits round to the nearest Double, and fit a Decimal exactly
        let digitsAsDouble = success(
            of: connect.request(route("/digits")).decoded(toType: Box<Double>.self), "30 digits → Double")
        XCTAssertEqual(digitsAsDouble?.value, 1.234_567_890_123_456_8e29)
        let digitsAsDecimal = success(
            of: connect.request(route("/digits")).decoded(toType: Box<Decimal>.self), "30 digits → Decimal")
        XCTAssertEqual(digitsAsDecimal?.value, Decimal(string: "123456789012345678901234567890"))
        assertClientRecovers()
    }

    // MARK: - Size limit

    func testAResponseOverTheSizeLimitIsStopped() {
        // Given a declared 64 KiB body, and a 32 MiB chunked body of undeclared length. (Not an endless one: on
        // Linux, FoundationNetworking cannot abort a body transfer under way, so the bytes after the limit are
        // read and dropped, on a session of the request's own, until the server stops sending.)
        server.route("GET", "/declared") { _ in .data(Data(count: 64 * 1_024)) }
        server.route("GET", "/endless") { _ in
            .stream(contentLength: nil) { write in
                let piece = Data(count: 16 * 1_024)
                for _ in 0..<2_048 where !write(piece) { break }
            }
        }
        let limited = RequestOptions(maxResponseBytes: 1_024)

        // When / Then: refused on the declared length, and cut as the bytes arrive
        for path in ["/declared", "/endless"] {
            let error = failure(of: connect.request(route(path), options: limited), "over the size limit \(path)")
            XCTAssertEqual(error?.kind, .responseTooLarge)
            XCTAssertEqual(error?.statusCode, 200)
        }
        assertClientRecovers()
    }

    // MARK: - Redirects

    func testARedirectLoopIsATransportFailure() {
        // Given a route that redirects to itself
        server.route("GET", "/loop") { _ in .redirect(to: "/loop") }

        // When
        let error = failure(of: connect.request(route("/loop")), "redirect loop")

        // Then: FoundationNetworking gives up after a fixed number of redirects
        XCTAssertEqual(error?.kind, .transport)
        XCTAssertEqual(error?.urlError?.code, .httpTooManyRedirects)
        print("[FaultTests] redirect loop: \(server.requestCount(for: "GET", path: "/loop")) requests before giving up")
        assertClientRecovers()
    }

    // MARK: - With retries

    func testRetriesEndATransientFaultInBoundedTime() {
        // Given the default retry policy and a server that always closes before the headers
        let retrying = Connect(transport: URLSessionTransport(), settings: Connect.Settings(logger: logger))
        server.route("GET", "/fault") { _ in .json(Todo.sample).withFault(.closeBeforeHeaders) }

        // When
        let error = failure(of: retrying.request(route("/fault")), "closed before headers, default retries")

        // Then: every attempt was made, and the last failure stands
        XCTAssertEqual(error?.kind, .connectionLost)
        XCTAssertEqual(server.requestCount(for: "GET", path: "/fault"), RetryPolicy.default.maxAttempts)
        let todo = success(of: retrying.request(route("/todo")).decoded(toType: Todo.self), "follow-up")
        XCTAssertEqual(todo, Todo.sample)
        assertClientRecovers()
    }

    func testRetriesOfATimeoutStayBoundedByTheTimeout() {
        // Given the default retry policy and headers that never finish
        let retrying = Connect(transport: URLSessionTransport(), settings: Connect.Settings(logger: logger))
        server.route("GET", "/fault") { _ in .json(Todo.sample).withFault(.neverFinishHeaders) }

        // When
        // (2 s: the request reaches the server well before, however busy the machine)
        let error = failure(of: retrying.request(route("/fault", timeout: 2)), "headers never finish, retries")

        // Then: the timeout is the call's deadline: the first attempt takes all of it, and no retry follows
        XCTAssertEqual(error?.kind, .timedOut)
        XCTAssertTrue(server.waitUntilIdle(timeout: FaultTests.bound), "the attempt's exchange was let go")
        XCTAssertEqual(server.requestCount(for: "GET", path: "/fault"), 1)
        let todo = success(of: retrying.request(route("/todo")).decoded(toType: Todo.self), "follow-up")
        XCTAssertEqual(todo, Todo.sample)
        assertClientRecovers()
    }
}
