import Foundation
import HTTPTypes
import OpenAPIRuntime
import SwiftConnect
import SwiftConnectTesting
import XCTest

@testable import SwiftConnectOpenAPI

/// The transport's conversions between swift-http-types' heads and the core's model.
final class ConversionTests: XCTestCase {
    func testOnlyAnOperationThatAcceptsJSONAloneIsReadWhole() {
        func accepts(_ values: String...) -> Bool {
            var fields = HTTPFields()
            for value in values { fields.append(HTTPField(name: .accept, value: value)) }
            return OpenAPIConversion.acceptsOnlyJSON(fields)
        }
        XCTAssertTrue(accepts("application/json"))
        XCTAssertTrue(accepts("application/problem+json; q=0.9, Application/JSON"))
        XCTAssertTrue(accepts("application/json", "application/vnd.api+json"))
        XCTAssertFalse(accepts("application/json, text/event-stream"), "an event stream is streamed")
        XCTAssertFalse(accepts("application/octet-stream"))
        XCTAssertFalse(accepts("*/*"))
        XCTAssertFalse(accepts(), "no Accept: streamed, whatever comes")
    }

    func testTheURLJoinsTheServerAndThePathWithItsQuery() throws {
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/todos/7?expand=user%20info")
        let joined = try OpenAPIConversion.url(for: request, baseURL: URL(string: "https://api.example.com/v1/")!)
        XCTAssertEqual(joined.absoluteString, "https://api.example.com/v1/todos/7?expand=user%20info")
        let bad = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/todos")
        XCTAssertThrowsError(try OpenAPIConversion.url(for: bad, baseURL: URL(string: "relative/path")!)) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .invalidRequest)
        }
    }

    /// The error for a URL that cannot be made quoted the server URL and the operation's path as they were: a password
    /// of the server URL, an API key in either query.
    func testTheInvalidURLErrorHidesTheSecretsOfTheServerURLAndThePath() throws {
        let cases = [
            // A port that is not a number: the joined text is no URL.
            ("https://amy:PASSWORD-SECRET1@api.example.com", ":bad/todos?access_token=TOKEN-SECRET2&page=2"),
            // A server URL without a scheme, so without a host.
            ("api.example.com/v1?api_key=KEY-SECRET3&v=2", "/todos?access_token=TOKEN-SECRET4&page=2"),
        ]
        for (server, path) in cases {
            let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: path)
            XCTAssertThrowsError(try OpenAPIConversion.url(for: request, baseURL: try XCTUnwrap(URL(string: server)))) {
                let error = $0 as? ConnectError
                XCTAssertEqual(error?.kind, .invalidRequest)
                var dumped = ""
                dump(error, to: &dumped)
                let shown = [error?.message ?? "", "\($0)", String(reflecting: $0), dumped].joined(separator: "\n")
                XCTAssertFalse(shown.contains("SECRET"), shown)
                XCTAssertTrue(shown.contains("access_token=<redacted>&page=2"), shown)
            }
        }
        XCTAssertEqual(OpenAPIConversion.redacted(path: "/a b?token=TOKEN-SECRET5&x=1"), "/a%20b?token=<redacted>&x=1")
    }

    /// A server URL with a query keeps it before the operation's, and the operation's path joins the server URL's
    /// path, not its query: `?tenant=7/todos/7` went out, the path lost in the query.
    func testAServerURLsQueryComesAfterThePathAndBeforeTheOperationsQuery() throws {
        func joined(_ base: String, _ path: String) throws -> String {
            let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: path)
            return try OpenAPIConversion.url(for: request, baseURL: URL(string: base)!).absoluteString
        }
        XCTAssertEqual(
            try joined("https://api.example.com/v1?tenant=7", "/todos/7"),
            "https://api.example.com/v1/todos/7?tenant=7")
        XCTAssertEqual(
            try joined("https://api.example.com/v1/?tenant=7", "/todos/7?expand=user%20info"),
            "https://api.example.com/v1/todos/7?tenant=7&expand=user%20info")
        XCTAssertEqual(
            try joined("https://api.example.com/v1?key=k&", "/todos?page=2"),
            "https://api.example.com/v1/todos?key=k&page=2",
            "one & between the queries")
        XCTAssertEqual(
            try joined("https://api.example.com/v1?", "/a%2Fb/c"), "https://api.example.com/v1/a%2Fb/c",
            "percent-encoding kept as given; an empty query dropped")
        XCTAssertEqual(try joined("https://api.example.com", "/todos"), "https://api.example.com/todos")
    }

    /// An operation's path whose first segment is empty (`/{tenant}/todos` with an empty tenant renders as
    /// `//todos`) was read as a reference with an authority: `todos` taken for a host and dropped, and the request sent
    /// to the server URL itself (or, for `//files/a.txt`, to `/v1/a.txt`).
    func testAPathThatStartsWithTwoSlashesKeepsEverySegment() throws {
        func joined(_ base: String, _ path: String) throws -> String {
            let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: path)
            return try OpenAPIConversion.url(for: request, baseURL: URL(string: base)!).absoluteString
        }
        XCTAssertEqual(
            try joined("https://api.example.com/v1", "//todos?page=2"), "https://api.example.com/v1//todos?page=2")
        XCTAssertEqual(
            try joined("https://api.example.com/v1?tenant=7", "//files/a.txt"),
            "https://api.example.com/v1//files/a.txt?tenant=7")
        XCTAssertEqual(
            try joined("https://api.example.com", "//other.example/x"), "https://api.example.com//other.example/x")
    }

    /// Only a `HEAD` answer and a `CONNECT`'s 2xx (a tunnel) have no body: a `TRACE`'s 200 carries the request as the
    /// server received it (`message/http`), and a refused `CONNECT`'s says why. Read whole and streamed alike.
    func testOnlyHEADAndASuccessfulCONNECTHaveNoBody() async throws {
        let cases: [(HTTPRequest.Method, Int, String?)] = [
            (.trace, 200, "TRACE /echo HTTP/1.1"), (.connect, 407, "proxy credentials needed"), (.connect, 200, nil),
            (.head, 200, nil), (.get, 200, "a body"),
        ]
        for (method, status, expected) in cases {
            for accept in ["application/json", "message/http"] {
                let body = expected ?? "a body the answer has not"
                let transport = FakeTransport.answering(.data(Data(body.utf8), status: status))
                let sender = ConnectClientTransport(connect: Connect(transport: transport))
                var fields = HTTPFields()
                fields[.accept] = accept
                let request = HTTPRequest(
                    method: method, scheme: nil, authority: nil, path: "/echo", headerFields: fields)
                let (response, received) = try await sender.send(
                    request, body: nil, baseURL: URL(string: "https://api.example.com")!, operationID: "echo")
                XCTAssertEqual(response.status.code, status, "\(method) \(status), \(accept)")
                var text: String?
                if let received { text = try await String(collecting: received, upTo: 1 << 20) }
                XCTAssertEqual(text, expected, "\(method) \(status), \(accept)")
            }
        }
    }

    func testRepeatedFieldsKeepTheirOrderBothWays() async throws {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .init("X-Tag")!, value: "a"))
        fields.append(HTTPField(name: .init("X-Tag")!, value: "b"))
        let request = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/x", headerFields: fields)
        let built = try await OpenAPIConversion.request(
            request, body: nil, baseURL: URL(string: "https://api.example.com")!)
        XCTAssertEqual(built.headerFields[values: "X-Tag"], ["a", "b"])
        XCTAssertEqual(built.method, .post)
        let head = ResponseHead(
            status: 200,
            headerFields: HeaderFields([
                HeaderField(name: "Set-Cookie", value: "a=1"), HeaderField(name: "Set-Cookie", value: "b=2"),
            ]))
        XCTAssertEqual(OpenAPIConversion.fields(of: head)[values: .setCookie], ["a=1", "b=2"])
    }

    /// A body the generated code can iterate again, read into memory, whose bytes are not as many as its declared
    /// length fails with the client's `invalidRequest` before anything is sent: neither cut short nor sent shorter
    /// than the length the operation was given.
    func testABodyReadIntoMemoryThatIsNotItsDeclaredLengthIsAnInvalidRequest() async throws {
        for (bytes, declared) in [(3, 5), (7, 5)] {
            let body = HTTPBody(
                AsyncStream<ArraySlice<UInt8>> { continuation in
                    continuation.yield(ArraySlice(repeating: 1, count: bytes))
                    continuation.finish()
                }, length: .known(Int64(declared)), iterationBehavior: .multiple)
            let request = HTTPRequest(method: .put, scheme: nil, authority: nil, path: "/files/a")
            do {
                let built = try await OpenAPIConversion.request(
                    request, body: body, baseURL: URL(string: "https://api.example.com")!)
                XCTFail("\(bytes) bytes declared \(declared) made a request: \(String(describing: built.body))")
            } catch {
                XCTAssertEqual((error as? ConnectError)?.kind, .invalidRequest, "\(bytes) of \(declared): \(error)")
            }
        }
    }

    /// A body whose declared length is negative is no body of that length: the request fails with the client's
    /// `invalidRequest`, saying so, before any byte is read, whether the generated code can iterate it again or once.
    func testABodyWithANegativeLengthIsAnInvalidRequestThatSaysSo() async throws {
        for behavior in [IterationBehavior.multiple, .single] {
            let body = HTTPBody(
                AsyncStream<ArraySlice<UInt8>> { $0.finish() }, length: .known(-1), iterationBehavior: behavior)
            let request = HTTPRequest(method: .put, scheme: nil, authority: nil, path: "/files/a")
            do {
                let built = try await OpenAPIConversion.request(
                    request, body: body, baseURL: URL(string: "https://api.example.com")!)
                XCTFail("\(behavior): a length of -1 made a request: \(String(describing: built.body))")
            } catch {
                let error = error as? ConnectError
                XCTAssertEqual(error?.kind, .invalidRequest, "\(behavior)")
                XCTAssertTrue(error?.message.contains("negative length") == true, error?.message ?? "")
            }
        }
    }

    /// A status without a body (1xx, 204, 304) has a body of 0 bytes whatever its `Content-Length` says (a 304's
    /// describes the stored answer): the generated code was told its length was that, and got none.
    func testABodilessStatusHasABodyOfNoBytes() {
        for status in [204, 304] {
            let head = ResponseHead(
                status: status, headerFields: HeaderFields([HeaderField(name: "Content-Length", value: "42")]))
            XCTAssertEqual(OpenAPIConversion.length(of: head), .known(0), "\(status)")
        }
        let ok = ResponseHead(
            status: 200, headerFields: HeaderFields([HeaderField(name: "Content-Length", value: "42")]))
        XCTAssertEqual(OpenAPIConversion.length(of: ok), .known(42))
    }

    /// The length is the one the core reads from `Content-Length` (RFC 9112 §6.3) for its own checks (the size limit,
    /// a body cut short): a value that is not digits alone (`+5`, `-0`) declares nothing, the same length repeated
    /// (`5, 5`) is that length, and `identity` is no content coding. The generated code is never told a length the
    /// core does not hold the body to.
    func testTheLengthIsTheOneTheCoreReadsFromContentLength() {
        func length(_ fields: [(String, String)], status: Int = 200) -> HTTPBody.Length {
            OpenAPIConversion.length(
                of: ResponseHead(
                    status: status,
                    headerFields: HeaderFields(fields.map { HeaderField(name: .init($0.0), value: $0.1) })))
        }
        let cases: [(String, HTTPBody.Length)] = [
            ("42", .known(42)), ("007", .known(7)), ("0", .known(0)), ("5, 5", .known(5)), ("+5", .unknown),
            ("-0", .unknown), ("-1", .unknown), ("5, 6", .unknown), ("5x", .unknown), ("", .unknown),
            ("99999999999999999999", .unknown),
        ]
        for (value, expected) in cases {
            XCTAssertEqual(length([("Content-Length", value)]), expected, "Content-Length: \(value)")
        }
        XCTAssertEqual(length([("Content-Length", "3"), ("Content-Encoding", "identity")]), .known(3))
        XCTAssertEqual(length([("Content-Length", "3"), ("Content-Encoding", "gzip")]), .unknown)
        // A transfer coding overrides the length beside it (RFC 9112 §6.3), in the core and here alike.
        XCTAssertEqual(length([("Content-Length", "3"), ("Transfer-Encoding", "chunked")]), .unknown)
        XCTAssertEqual(length([]), .unknown)
    }
}
