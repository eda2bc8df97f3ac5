import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The default `ErrorHandler` on the error bodies of well-known APIs: the message an app developer expects is the
/// human-readable one each sends.
final class ErrorHandlerWellKnownAPITests: XCTestCase {
    typealias Endpoint = ClientFixtures.Endpoint

    /// The error a client with `handler` fails with for a JSON error body.
    private func errorFor(
        _ body: String,
        status: Int = 400,
        handler: ErrorHandler = ErrorHandler(),
        endpoint: Endpoint = Endpoint(),
        file: StaticString = #filePath,
        line: UInt = #line
    ) -> ConnectError? {
        let connect = Connect(
            transport: FakeTransport.answering(
                .data(Data(body.utf8), status: status, headers: ["Content-Type": "application/json"])),
            errorHandler: handler,
            retryPolicy: nil)
        return connectError(of: connect.request(endpoint), file: file, line: line)
    }

    // MARK: - Read before

    /// Stripe, Google, GraphQL, GitHub, Slack and OAuth 2 were read before; kept as they are.
    func testTheShapesReadBeforeKeepTheirMessage() {
        let cases: [(String, String)] = [
            // Stripe
            (
                #"{"error":{"code":"resource_missing","message":"No such customer: 'cus_1'","type":"card_error"}}"#,
                "No such customer: 'cus_1'"
            ),
            // Google
            (
                #"{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT","details":[]}}"#,
                "API key not valid."
            ),
            // GraphQL
            (
                #"{"data":null,"errors":[{"message":"Cannot query field \"x\"","locations":[{"line":1,"column":3}]}]}"#,
                #"Cannot query field "x""#
            ),
            // GitHub
            (
                #"{"message":"Validation Failed","errors":[{"resource":"Issue","field":"title","code":"missing"}]}"#,
                "Validation Failed"
            ),
            // Slack
            (#"{"ok":false,"error":"invalid_auth"}"#, "invalid_auth"),
            // OAuth 2
            (#"{"error":"invalid_grant","error_description":"Bad code."}"#, "invalid_grant: Bad code."),
            // JSON:API with a detail
            (
                #"{"errors":[{"status":"422","title":"Invalid Attribute","detail":"First name is too short."}]}"#,
                "First name is too short."
            ),
            // AWS, lower case
            (#"{"__type":"ThrottlingException","message":"Rate exceeded"}"#, "Rate exceeded"),
        ]
        for (body, message) in cases {
            let error = errorFor(body)
            XCTAssertEqual(error?.kind, .serverMessage, body)
            XCTAssertEqual(error?.message, message, body)
        }
    }

    // MARK: - Not read before

    /// Elasticsearch's error is an object with a `reason` (and a machine `type`); before, no message was found.
    func testElasticsearchGivesTheReason() {
        let body = """
            {"error":{"root_cause":[{"type":"index_not_found_exception","reason":"no such index [logs]",
             "index":"logs"}],"type":"index_not_found_exception","reason":"no such index [logs]","index":"logs"},
             "status":404}
            """
        let error = errorFor(body, status: 404)
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "no such index [logs]")
    }

    /// AWS's JSON protocols capitalise the key (`Message`), with or without `__type`; the query protocol wraps it
    /// in `Error`. Before, none was read.
    func testAWSCapitalisedMessageIsRead() {
        let cases: [(String, String)] = [
            (
                #"{"__type":"com.amazon.coral.validate#ValidationException","Message":"1 validation error detected"}"#,
                "1 validation error detected"
            ),
            (#"{"Message":"User is not authorized"}"#, "User is not authorized"),
            (
                #"{"Error":{"Code":"InvalidParameterValue","Message":"Bad topic","Type":"Sender"},"RequestId":"r"}"#,
                "Bad topic"
            ),
        ]
        for (body, message) in cases {
            let error = errorFor(body)
            XCTAssertEqual(error?.kind, .serverMessage, body)
            XCTAssertEqual(error?.message, message, body)
        }
        // The lower-case key, where both are, comes first, as the key list says.
        XCTAssertEqual(errorFor(#"{"Message":"second","message":"first"}"#)?.message, "first")
    }

    /// An error wrapped in another `error` (as gateways pass an upstream's error on) gives the inner message;
    /// before, only an `error` holding a `message` was read.
    func testAnErrorInsideAnErrorGivesItsMessage() {
        XCTAssertEqual(
            errorFor(#"{"error":{"error":{"message":"upstream timed out"}}}"#)?.message, "upstream timed out")
        XCTAssertEqual(errorFor(#"{"error":{"code":5,"error":"quota exceeded"}}"#)?.message, "quota exceeded")
    }

    /// JSON:API errors without a `detail` have a `title`, its human-readable summary; before, none was read.
    func testJSONAPIErrorWithOnlyATitleGivesTheTitle() {
        let body = #"{"errors":[{"status":"404","title":"Resource not found","source":{"pointer":"/data"}}]}"#
        let error = errorFor(body, status: 404)
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "Resource not found")
    }

    /// The fall-back keys are read only in an error object with no message of its own: a field map keyed by a
    /// field called `title` or `reason` is still a field map.
    func testFieldsNamedLikeTheFallbackKeysStayFields() {
        let body = #"{"errors":{"title":"can't be blank","reason":"is too short"}}"#
        XCTAssertEqual(errorFor(body, status: 422)?.message, "reason: is too short; title: can't be blank")
    }

    // MARK: - A key list of the user's

    /// A key list of the user's keeps its meaning: its keys, in its order, come first.
    func testACustomKeyListComesFirst() {
        let handler = ErrorHandler(messageKeys: ["code"])
        XCTAssertEqual(errorFor(#"{"code":"E1","Message":"aws"}"#, handler: handler)?.message, "E1")
        XCTAssertEqual(errorFor(#"{"error":{"reason":"es"},"code":"E2"}"#, handler: handler)?.message, "E2")
    }

    // MARK: - Secrets and bounds

    /// A secret the request sent, quoted in a message read in a new place, is hidden as any message's is.
    func testASecretInAReasonIsHidden() throws {
        let secret = "sk-es-reason-16180339"
        let endpoint = Endpoint(headers: [HTTPHeader(name: "Authorization", value: "Bearer \(secret)")])
        let error = try XCTUnwrap(errorFor(#"{"error":{"reason":"key \#(secret) is revoked"}}"#, endpoint: endpoint))
        XCTAssertEqual(error.kind, .serverMessage)
        for text in [error.message, error.description, error.debugDescription, String(reflecting: error)] {
            XCTAssertFalse(text.contains(secret), text)
            XCTAssertTrue(text.contains("is revoked"), text)
        }
    }

    /// `handle(response:)` is public: an object nested 10,000 levels (built in code, not parsed, so not bounded by
    /// the parse) is searched to a bounded depth, on a thread with a small stack; before, the search recursed
    /// once per level.
    func testADeeplyNestedObjectIsSearchedToABoundedDepth() throws {
        var nestedArrays: Any = "deep"
        var nestedErrors: Any = ["message": "deep"]
        var nestedMessages: Any = "deep"
        for _ in 0..<10_000 {
            nestedArrays = [nestedArrays]
            nestedErrors = ["error": nestedErrors]
            nestedMessages = ["message": nestedMessages]
        }
        let objects: [[String: Any]] = [
            ["message": nestedArrays], ["errors": nestedArrays], ["errors": ["field": nestedArrays]],
            ["error": nestedErrors], ["error": nestedMessages], ["detail": nestedArrays, "title": "t"],
        ]
        let done = expectation(description: "searched")
        let kinds = Recorder<ConnectError.Kind?>()
        // Handed over in a box emptied once the thread is done: the values are freed here, on the main thread's stack
        // (freeing 10,000 levels recurses too), never by the thread releasing the last reference.
        let inputs = Guarded(objects)
        let count = objects.count
        let thread = Thread {
            let handler = ErrorHandler()
            for index in 0..<count {
                let object = inputs.withLock { $0[index] }
                kinds.append((handler.handle(response: object) as? ConnectError)?.kind)
            }
            done.fulfill()
        }
        thread.stackSize = 256 << 10
        thread.start()
        wait(for: [done], timeout: 30)
        inputs.withLock { $0 = [] }
        let found = kinds.values
        XCTAssertEqual(found.count, objects.count)
        // Too deep to be a message: none but the title is found.
        XCTAssertEqual(found.filter { $0 == .serverMessage }.count, 1, "\(found)")
        // A message at a depth a body can have is found.
        var shallow: Any = "found"
        for _ in 0..<100 { shallow = [shallow] }
        XCTAssertEqual((ErrorHandler().handle(response: ["errors": shallow]) as? ConnectError)?.message, "found")
    }
}
