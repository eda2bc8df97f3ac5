import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

final class ConnectorBuildingTests: XCTestCase {
    /// A connector whose every requirement is a stored property; `timeout`, `cachePolicy` and `jsonEncoder` are
    /// left to the protocol's defaults.
    struct Stub: Connector {
        var baseURL = URL(string: "https://api.example.com")!
        var endpoint = "/todos"
        var method: HTTPMethod = .get
        var headers: [HTTPHeader] = []
        var parameters: (any ParametersRepresentable)?
    }

    /// A connector overriding the defaulted requirements.
    struct Tuned: Connector {
        var baseURL = URL(string: "https://api.example.com")!
        var endpoint = "/todos"
        var method: HTTPMethod = .post
        var headers: [HTTPHeader] = []
        var parameters: (any ParametersRepresentable)?
        var timeout: TimeInterval = 5
        var cachePolicy: URLRequest.CachePolicy = .reloadIgnoringLocalCacheData
        var jsonEncoder: JSONEncoder {
            let encoder = JSONEncoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            encoder.outputFormatting = .sortedKeys
            return encoder
        }
    }

    /// A connector that is also an `AuthorizedConnector`.
    struct Authorized: Connector, AuthorizedConnector {
        var baseURL = URL(string: "https://api.example.com")!
        var endpoint = "/me"
        var method: HTTPMethod = .get
        var headers: [HTTPHeader] = []
        var parameters: (any ParametersRepresentable)?
        var authorizationToken: AuthorizationToken?
    }

    struct Payload: Encodable {
        var userName: String
        var score: Double
    }

    // MARK: - Helpers

    private func url(
        base: String = "https://api.example.com", _ endpoint: String, _ parameters: Parameter...,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> String {
        let connector = Stub(
            baseURL: URL(string: base)!, endpoint: endpoint,
            parameters: CompositeParameters(parameters))
        let request = try connector.asURLRequest()
        return try XCTUnwrap(request.url, file: file, line: line).absoluteString
    }

    private func assertInvalidRequest(
        _ connector: some Connector, _ expected: ConnectError.InvalidRequestReason,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try connector.asURLRequest(), file: file, line: line) { error in
            guard let error = error as? ConnectError else {
                return XCTFail("expected a ConnectError, got \(error)", file: file, line: line)
            }
            XCTAssertEqual(error.kind, .invalidRequest, file: file, line: line)
            XCTAssertEqual(error.invalidRequestReason, expected, file: file, line: line)
        }
    }

    private func pathSegments(of request: URLRequest, file: StaticString = #filePath, line: UInt = #line) throws
        -> [String]
    {
        let url = try XCTUnwrap(request.url, file: file, line: line)
        let components = try XCTUnwrap(URLComponents(url: url, resolvingAgainstBaseURL: false), file: file, line: line)
        return components.percentEncodedPath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
    }

    // MARK: - Method

    func testMethodIsCopiedAsRawValue() throws {
        // Given / When
        let request = try Stub(method: .patch).asURLRequest()
        let custom = try Stub(method: "PROPFIND").asURLRequest()
        // Then
        XCTAssertEqual(request.httpMethod, "PATCH")
        XCTAssertEqual(custom.httpMethod, "PROPFIND")
    }

    /// A standard method written in another case is sent, compared and retried in capitals on every platform
    /// (Foundation capitalises most, but not all, of them on its own); an extension method is kept as written.
    func testStandardMethodsInAnyCaseAreSentInCapitals() throws {
        for (written, sent) in [
            ("get", "GET"), ("post", "POST"), ("patch", "PATCH"), ("Delete", "DELETE"), ("options", "OPTIONS"),
            ("propfind", "propfind"), ("PROPFIND", "PROPFIND"), ("getter", "getter"),
        ] {
            let method = HTTPMethod(rawValue: written)
            XCTAssertEqual(method.rawValue, sent)
            XCTAssertEqual(try Stub(method: method).asURLRequest().httpMethod, sent)
        }
        XCTAssertEqual(HTTPMethod("get"), .get)
    }

    /// Only ASCII letters are capitalised: Unicode's case mapping turns `ſ` (long s) into `S` and `ﬆ` into `ST`, so
    /// "poſt" would go out as a POST, a method nobody wrote. Kept as written, it is no token, and refused as one.
    func testAMethodThatUnicodeUppercasesToAStandardOneIsNotSentAsIt() {
        for written in ["poſt", "poﬆ"] {
            XCTAssertEqual(HTTPMethod(rawValue: written).rawValue, written)
            assertInvalidRequest(Stub(method: HTTPMethod(rawValue: written)), .invalidMethod(written))
        }
    }

    /// A connector's headers are sent in the order written (``Connector/headers``), its credential and its body's type
    /// after them: the request a client's middlewares and engine get has them so, not in the order of a dictionary,
    /// which changes from one run to the next.
    func testHeadersReachThePipelineInTheOrderWritten() throws {
        let names = ["X-Zulu", "X-Alpha", "X-Mike", "X-Bravo", "X-Yankee", "X-Charlie", "X-Xray", "X-Delta"]
        let seen = Recorder<[String]>()
        let recording = AnyMiddleware { request, _, next in
            seen.append(request.headerFields.map(\.name.rawName))
            return next(request)
        }
        let connect = Connect(
            transport: FakeTransport.answering(.status(200)), middlewares: [recording], retryPolicy: nil)
        let route = Route(
            "/x", baseURL: URL(string: "https://api.example.com")!, method: .post,
            parameters: Parameter.jsonObject(value: ["a": 1]), headers: names.map { HTTPHeader(name: $0, value: "1") },
            authorizationToken: .bearer(token: "t"))
        _ = try connect.request(route).wait(timeout: 10)
        let sent = try XCTUnwrap(seen.values.first)
        XCTAssertEqual(Array(sent.prefix(names.count + 2)), names + ["Authorization", "Content-Type"], "\(sent)")
    }

    func testInvalidMethodIsRefused() {
        assertInvalidRequest(Stub(method: "GET\r\nX-Evil: 1"), .invalidMethod("GET\r\nX-Evil: 1"))
        assertInvalidRequest(Stub(method: "GE T"), .invalidMethod("GE T"))
        assertInvalidRequest(Stub(method: ""), .invalidMethod(""))
    }

    func testIdempotentMethodsFollowRFC9110() {
        let idempotent: [HTTPMethod] = [.get, .head, .put, .delete, .options, .trace, "get", "Delete"]
        let notIdempotent: [HTTPMethod] = [.post, .patch, .connect, "PROPFIND", "propfind", "post"]
        for method in idempotent { XCTAssertTrue(method.isIdempotent, "\(method)") }
        for method in notIdempotent { XCTAssertFalse(method.isIdempotent, "\(method)") }
        XCTAssertEqual(HTTPMethod.delete.description, "DELETE")
        XCTAssertEqual(HTTPMethod(rawValue: "GET"), .get)
    }

    // MARK: - URL joining

    func testBaseAndEndpointAreJoinedWithExactlyOneSlash() throws {
        XCTAssertEqual(try url(base: "https://a.com/api", "/todos"), "https://a.com/api/todos")
        XCTAssertEqual(try url(base: "https://a.com/api/", "/todos"), "https://a.com/api/todos")
        XCTAssertEqual(try url(base: "https://a.com/api/", "todos"), "https://a.com/api/todos")
        XCTAssertEqual(try url(base: "https://a.com/api", "todos"), "https://a.com/api/todos")
        XCTAssertEqual(try url(base: "https://a.com", "/todos"), "https://a.com/todos")
        XCTAssertEqual(try url(base: "https://a.com/", "//todos"), "https://a.com/todos")
    }

    /// A base URL ending with a colon that is not its scheme's (an empty port, a path such as `/v1:`) still gets
    /// its slash: the endpoint used to be glued to it, so `https://a.com:` + `8080/admin` went to port 8080.
    func testBaseURLEndingWithAColonIsStillJoinedWithASlash() throws {
        let glued = try XCTUnwrap(URL(string: try url(base: "https://a.com:", "8080/admin")))
        XCTAssertEqual(glued.host, "a.com")
        XCTAssertNil(glued.port)
        XCTAssertEqual(glued.path, "/8080/admin")
        XCTAssertEqual(try url(base: "https://a.com:", "/todos"), "https://a.com:/todos")
        XCTAssertEqual(try url(base: "https://a.com/v1:", "/todos"), "https://a.com/v1:/todos")
        XCTAssertEqual(try url(base: "https://a.com/v1:", "{id}", .path(key: "id", value: "7")), "https://a.com/v1:/7")
    }

    func testEmptyEndpointLeavesBaseURLUnchanged() throws {
        XCTAssertEqual(try url(base: "https://a.com/api", ""), "https://a.com/api")
        XCTAssertEqual(try url(base: "https://a.com/api/", ""), "https://a.com/api/")
    }

    func testTrailingSlashOfEndpointIsKept() throws {
        XCTAssertEqual(try url(base: "https://a.com/api", "/todos/"), "https://a.com/api/todos/")
        XCTAssertEqual(try url(base: "https://a.com/api", "/"), "https://a.com/api/")
    }

    func testEndpointLiteralQueryComesBeforeQueryItems() throws {
        XCTAssertEqual(
            try url("/todos?a=1", .query(key: "b", value: "2")), "https://api.example.com/todos?a=1&b=2")
        XCTAssertEqual(try url("/todos?", .query(key: "b", value: "2")), "https://api.example.com/todos?b=2")
        XCTAssertEqual(try url(base: "https://a.com/api", "?a=1"), "https://a.com/api?a=1")
    }

    func testBaseURLQueryAndFragmentAreKept() throws {
        XCTAssertEqual(
            try url(base: "https://a.com/api?key=k", "/todos", .query(key: "b", value: "2")),
            "https://a.com/api/todos?key=k&b=2")
        XCTAssertEqual(
            try url(base: "https://a.com/api?key=k#top", "/todos?a=1", .query(key: "b", value: "2")),
            "https://a.com/api/todos?key=k&a=1&b=2#top")
        XCTAssertEqual(
            try url("/todos#list", .query(key: "b", value: "2")), "https://api.example.com/todos?b=2#list")
    }

    /// A base URL whose query ends with `&` gets no second `&` before what follows; alone, it is kept as written.
    func testABaseQueryEndingWithAnAmpersandIsJoinedWithoutAnEmptyItem() throws {
        XCTAssertEqual(try url(base: "https://a.com/api?k=1&", "/todos?a=1"), "https://a.com/api/todos?k=1&a=1")
        XCTAssertEqual(
            try url(base: "https://a.com/api?k=1&", "/todos", .query(key: "b", value: "2")),
            "https://a.com/api/todos?k=1&b=2")
        XCTAssertEqual(
            try url(base: "https://a.com/api?k=1&", "/todos?a=1&", .query(key: "b", value: "2")),
            "https://a.com/api/todos?k=1&a=1&b=2")
        XCTAssertEqual(try url(base: "https://a.com/api?k=1&", "/todos"), "https://a.com/api/todos?k=1&")
        XCTAssertEqual(try url("/todos?a=1&", .query(key: "b", value: "2")), "https://api.example.com/todos?a=1&b=2")
        // Only the separator is not doubled: empty items written on purpose stay.
        XCTAssertEqual(try url(base: "https://a.com/api?k=1&&", "/todos?a=1"), "https://a.com/api/todos?k=1&&a=1")
    }

    func testEndpointNotValidInAURLThrowsInvalidURL() {
        for endpoint in ["/todos/a b", "/%zz", "/%4", "/{", "/{}", "/}", "/{a/b}", "/a|b", "/a\nb"] {
            assertInvalidRequest(
                Stub(endpoint: endpoint), .invalidURL("https://api.example.com" + endpoint))
        }
    }

    /// An `invalidURL` error shows the base URL and the endpoint joined as the URL would be, with one slash between
    /// them (not `…/v1//x`); next to a base URL's own query, as "base + endpoint"; secrets hidden either way.
    func testAnInvalidURLErrorShowsTheBaseAndTheEndpointJoined() {
        let cases: [(base: String, endpoint: String, shown: String)] = [
            ("https://api.example.com/v1/", "/a b", "https://api.example.com/v1/a b"),
            ("https://api.example.com/v1//", "//a b", "https://api.example.com/v1/a b"),
            ("https://api.example.com/v1", "a b", "https://api.example.com/v1/a b"),
            ("https://api.example.com/v1/", "?q=a b", "https://api.example.com/v1/?q=a b"),
            ("https://api.example.com/v1?k=1", "/a b", "https://api.example.com/v1?k=1 + /a b"),
        ]
        for (base, endpoint, shown) in cases {
            assertInvalidRequest(Stub(baseURL: URL(string: base)!, endpoint: endpoint), .invalidURL(shown))
        }
        let secret = Stub(
            baseURL: URL(string: "https://amy:s3cretPassw0rd@api.example.com/v1/?api_key=K3Y")!,
            endpoint: "/a b?token=T0KEN")
        XCTAssertThrowsError(try secret.asURLRequest()) { error in
            for hidden in ["s3cretPassw0rd", "K3Y", "T0KEN"] {
                XCTAssertFalse(String(reflecting: error).contains(hidden), "\(error)")
            }
        }
    }

    /// Non-ASCII text is no longer refused: it is sent as its UTF-8 bytes, percent-encoded (see
    /// `EndpointTextEncodingTests`).
    func testNonASCIIEndpointTextIsPercentEncoded() throws {
        XCTAssertEqual(try url("/caf\u{e9}"), "https://api.example.com/caf%C3%A9")
    }

    /// A base URL without scheme and host is relative: only a client's server completes it.
    func testBaseURLWithoutSchemeThrowsInvalidURL() {
        let relative = Stub(baseURL: URL(string: "relative/api")!, endpoint: "/todos")
        assertInvalidRequest(relative, .invalidURL("/todos"))
        XCTAssertThrowsError(try relative.asURLRequest()) { error in
            XCTAssertTrue((error as? ConnectError)?.message.contains("has no server") ?? false, "\(error)")
        }
    }

    func testValidPercentEscapesInEndpointAreKept() throws {
        XCTAssertEqual(try url("/a%20b/%E2%82%AC"), "https://api.example.com/a%20b/%E2%82%AC")
    }

    // MARK: - Path values

    func testPlaceholderIsReplacedByPathValue() throws {
        XCTAssertEqual(
            try url(
                "/users/{userId}/todos/{todoId}", .path(key: "todoId", value: "5"), .path(key: "userId", value: "1")),
            "https://api.example.com/users/1/todos/5")
    }

    func testPlaceholderInsideSegmentAndRepeatedPlaceholderAreReplaced() throws {
        XCTAssertEqual(
            try url("/files/{name}.json", .path(key: "name", value: "report")),
            "https://api.example.com/files/report.json")
        XCTAssertEqual(
            try url("/{id}/x/{id}", .path(key: "id", value: "7")), "https://api.example.com/7/x/7")
    }

    func testPlaceholderInLiteralQueryIsStrictlyEncoded() throws {
        XCTAssertEqual(
            try url("/search?q={term}", .path(key: "term", value: "a&b=c")),
            "https://api.example.com/search?q=a%26b%3Dc")
    }

    func testPathValueIsEncodedAsOneSegment() throws {
        XCTAssertEqual(
            try url("/f/{v}", .path(key: "v", value: "a/b?c#d%")), "https://api.example.com/f/a%2Fb%3Fc%23d%25")
        XCTAssertEqual(try url("/f/{v}", .path(key: "v", value: "a b")), "https://api.example.com/f/a%20b")
        XCTAssertEqual(
            try url("/f/{v}", .path(key: "v", value: "\u{e9}\u{1F600}")), "https://api.example.com/f/%C3%A9%F0%9F%98%80"
        )
        XCTAssertEqual(try url("/f/{v}", .path(key: "v", value: "a\u{0}b")), "https://api.example.com/f/a%00b")
        XCTAssertEqual(try url("/f/{v}", .path(key: "v", value: "A-z.0_9~")), "https://api.example.com/f/A-z.0_9~")
    }

    func testDotOnlyPathValuesCannotBecomeDotSegments() throws {
        XCTAssertEqual(try url("/f/{v}/g", .path(key: "v", value: "...")), "https://api.example.com/f/%2E%2E%2E/g")
        // Dots among other characters are harmless and stay readable.
        XCTAssertEqual(try url("/f/{v}", .path(key: "v", value: "a..b")), "https://api.example.com/f/a..b")
        XCTAssertEqual(try url("/f/{v}", .path(key: "v", value: ".hidden")), "https://api.example.com/f/.hidden")
    }

    /// `.` and `..` sent as `%2E` and `%2E%2E` are still dot-segments to servers and proxies that normalise URLs
    /// (RFC 3986 §6.2.2, WHATWG): `/files/%2E%2E/meta` reaches `/meta`. A value that would make its segment one is
    /// refused before anything is sent.
    func testAPathValueThatMakesADotSegmentIsRefused() {
        for value in [".", ".."] {
            for endpoint in ["/f/{v}/g", "/f/{v}", "{v}", "/f/{v}?q=1", "/f/{v}#top", "/f/{v}/"] {
                assertInvalidRequest(
                    Stub(endpoint: endpoint, parameters: Parameter.path(key: "v", value: value)),
                    .dotSegmentPathValue(key: "v"))
            }
        }
        // With the endpoint's own dots, or with another value, in the same segment.
        for endpoint in ["/f/.{v}", "/f/{v}.", "/f/%2e{v}", "/f/{v}%2E/g"] {
            assertInvalidRequest(
                Stub(endpoint: endpoint, parameters: Parameter.path(key: "v", value: ".")),
                .dotSegmentPathValue(key: "v"))
        }
        assertInvalidRequest(
            Stub(
                endpoint: "/f/{a}{b}/g",
                parameters: CompositeParameters(.path(key: "a", value: "."), .path(key: "b", value: "."))),
            .dotSegmentPathValue(key: "a"))
        // The error says what is wrong.
        XCTAssertThrowsError(
            try Stub(endpoint: "/f/{v}", parameters: Parameter.path(key: "v", value: "..")).asURLRequest()
        ) { error in
            let message = (error as? ConnectError)?.message ?? ""
            XCTAssertTrue(message.contains("'v'") && message.contains("dot-segment"), message)
        }
    }

    /// Values that only look like dot-segments are sent, encoded so that they stay what they are.
    func testValuesThatOnlyLookLikeDotSegmentsAreSent() throws {
        let expected = [
            "%2e": "%252e", "%2E%2E": "%252E%252E", ".%2E": ".%252E", "...": "%2E%2E%2E", "..;x": "..%3Bx",
            ".. ": "..%20", "a/..": "a%2F..", "./": ".%2F", "..\u{0}": "..%00",
        ]
        for (value, encoded) in expected {
            XCTAssertEqual(
                try url("/f/{v}/g", .path(key: "v", value: value)), "https://api.example.com/f/\(encoded)/g", value)
        }
        // A dot-segment takes the whole segment: dots beside other text, or in the query, are plain values.
        XCTAssertEqual(try url("/f/{v}.json", .path(key: "v", value: "..")), "https://api.example.com/f/%2E%2E.json")
        XCTAssertEqual(try url("/f/v{v}", .path(key: "v", value: ".")), "https://api.example.com/f/v%2E")
        XCTAssertEqual(
            try url("/search?q={v}", .path(key: "v", value: "..")), "https://api.example.com/search?q=%2E%2E")
        XCTAssertEqual(
            try url("/f/{a}{b}", .path(key: "a", value: "."), .path(key: "b", value: "...")),
            "https://api.example.com/f/%2E%2E%2E%2E")
    }

    func testHostilePathValuesNeverChangeThePathStructure() throws {
        let hostile = [
            "a/b?c#d%", "...", "./", "../../etc/passwd", " ", "a b", "\u{1F600}/\u{1F600}", "\u{0}", "%2F", "?", "#",
            ";x=1", "//",
        ]
        for value in hostile {
            // Given
            let connector = Stub(endpoint: "/users/{id}/todos", parameters: Parameter.path(key: "id", value: value))
            // When
            let request = try connector.asURLRequest()
            let segments = try pathSegments(of: request)
            // Then
            XCTAssertEqual(segments.count, 4, "\(value.debugDescription) → \(segments)")
            XCTAssertEqual(segments.first, "")
            XCTAssertEqual(segments.last, "todos")
            XCTAssertEqual(segments[1], "users")
            XCTAssertEqual(segments[2].removingPercentEncoding, value)
            XCTAssertNil(request.url?.query, "\(value.debugDescription) created a query")
            XCTAssertNil(request.url?.fragment, "\(value.debugDescription) created a fragment")
        }
    }

    func testPlaceholderWithoutValueThrowsMissingPathValue() {
        assertInvalidRequest(Stub(endpoint: "/todos/{id}"), .missingPathValue(placeholder: "id"))
        assertInvalidRequest(
            Stub(endpoint: "/u/{userId}/t/{todoId}", parameters: Parameter.path(key: "userId", value: "1")),
            .missingPathValue(placeholder: "todoId"))
    }

    func testPathParameterWithoutPlaceholderThrowsUnusedPathParameter() {
        assertInvalidRequest(
            Stub(endpoint: "/todos", parameters: Parameter.path(key: "id", value: "1")),
            .unusedPathParameter(key: "id"))
    }

    func testEmptyPathValueThrowsEmptyPathValue() {
        assertInvalidRequest(
            Stub(endpoint: "/todos/{id}", parameters: Parameter.path(key: "id", value: "")), .emptyPathValue(key: "id"))
    }

    /// An empty value is legitimate in the endpoint's query (`?q=`), not in its path.
    func testAnEmptyValueIsFineInTheEndpointsQueryButNotInItsPath() throws {
        XCTAssertEqual(try url("/search?q={q}", .path(key: "q", value: "")), "https://api.example.com/search?q=")
        XCTAssertEqual(
            try url("/search?q={q}&page=1", .path(key: "q", value: ""), .query(key: "x", value: "")),
            "https://api.example.com/search?q=&page=1&x=")
        XCTAssertEqual(
            try url("/items/{id}?q={q}", .path(key: "id", value: "7"), .path(key: "q", value: "")),
            "https://api.example.com/items/7?q=")
        XCTAssertEqual(try url("/items#{section}", .path(key: "section", value: "")), "https://api.example.com/items#")
        // Still refused in the path, also when the placeholder is used in the query too.
        assertInvalidRequest(
            Stub(endpoint: "/items/{id}?q={id}", parameters: Parameter.path(key: "id", value: "")),
            .emptyPathValue(key: "id"))
        assertInvalidRequest(
            Stub(endpoint: "/files/{name}.json", parameters: Parameter.path(key: "name", value: "")),
            .emptyPathValue(key: "name"))
    }

    func testRepeatedPathKeyThrowsDuplicatePathParameter() {
        assertInvalidRequest(
            Stub(
                endpoint: "/todos/{id}",
                parameters: CompositeParameters(.path(key: "id", value: "1"), .path(key: "id", value: "2"))),
            .duplicatePathParameter(key: "id"))
    }

    // MARK: - Query items

    func testQueryItemsKeepOrderAndDuplicates() throws {
        XCTAssertEqual(
            try url("/todos", .query(key: "b", value: "2"), .query(key: "a", value: "1"), .query(key: "b", value: "3")),
            "https://api.example.com/todos?b=2&a=1&b=3")
    }

    func testQueryNamesAndValuesEncodeEverythingButUnreserved() throws {
        XCTAssertEqual(
            try url("/s", .query(key: "q&x=y", value: "a&b=c+d#e f%"), .query(key: "k", value: "")),
            "https://api.example.com/s?q%26x%3Dy=a%26b%3Dc%2Bd%23e%20f%25&k=")
    }

    func testQueryValuesSurviveARoundTripThroughURLComponents() throws {
        // Given
        let values = ["a&b=c", "1+1=2", "#hash", "x y", "%41", "caf\u{e9} \u{1F600}", "a=b&c=d", "?", "/"]
        let connector = Stub(
            parameters: CompositeParameters(
                values.enumerated().map { Parameter.query(key: "k\($0.offset)", value: $0.element) }))
        // When
        let request = try connector.asURLRequest()
        let items = try XCTUnwrap(
            URLComponents(url: XCTUnwrap(request.url), resolvingAgainstBaseURL: false)?.queryItems)
        // Then
        XCTAssertEqual(items.map(\.name), values.indices.map { "k\($0)" })
        XCTAssertEqual(items.map(\.value), values)
    }

    // MARK: - Bodies

    func testJSONBodyIsEncodedWithTheConnectorsEncoder() throws {
        // Given
        let connector = Tuned(parameters: Parameter.jsonObject(value: Payload(userName: "ann", score: 1.5)))
        // When
        let request = try connector.asURLRequest()
        // Then
        XCTAssertEqual(
            request.httpBody.map { String(decoding: $0, as: UTF8.self) }, #"{"score":1.5,"user_name":"ann"}"#)
        XCTAssertEqual(request.value(forHTTPHeaderField: "Content-Type"), "application/json")
    }

    func testJSONContentTypeGivesWayToTheConnectorsHeader() throws {
        let connector = Stub(
            method: .post, headers: [.contentType("application/vnd.api+json")],
            parameters: Parameter.jsonObject(value: ["a": 1]))
        let request = try connector.asURLRequest()
        XCTAssertEqual(request.value(forHTTPHeaderField: "Content-Type"), "application/vnd.api+json")
        XCTAssertEqual(request.httpBody.map { String(decoding: $0, as: UTF8.self) }, #"{"a":1}"#)
    }

    func testFormFieldsMakeOneURLEncodedBodyInOrder() throws {
        // Given: space is written as "+", and a literal "+" as "%2B" (the HTML form convention).
        let connector = Stub(
            method: .post,
            parameters: CompositeParameters(
                .form(key: "name", value: "a b+c&d=e"), .query(key: "q", value: "1"),
                .form(key: "\u{e9}", value: "~.-_")))
        // When
        let request = try connector.asURLRequest()
        // Then
        XCTAssertEqual(request.httpBody.map { String(decoding: $0, as: UTF8.self) }, "name=a+b%2Bc%26d%3De&%C3%A9=~.-_")
        XCTAssertEqual(
            request.value(forHTTPHeaderField: "Content-Type"), "application/x-www-form-urlencoded; charset=utf-8")
        XCTAssertEqual(request.url?.absoluteString, "https://api.example.com/todos?q=1")
    }

    /// A form whose `Content-Type` names Latin-1 was escaped as UTF-8 all the same: the server read `é` as `Ã©`.
    func testFormFieldsAreEscapedInTheCharsetTheContentTypeNames() throws {
        let cases: [(charset: String, body: String)] = [
            ("ISO-8859-1", "name=Jos%E9+%D1&%FC=%A3"),
            ("latin1", "name=Jos%E9+%D1&%FC=%A3"),
            (#""iso-8859-1""#, "name=Jos%E9+%D1&%FC=%A3"),
            ("windows-1252", "name=Jos%E9+%D1&%FC=%A3"),
            ("utf-8", "name=Jos%C3%A9+%C3%91&%C3%BC=%C2%A3"),
            ("UTF8", "name=Jos%C3%A9+%C3%91&%C3%BC=%C2%A3"),
        ]
        for (charset, expected) in cases {
            // Given
            let contentType = "application/x-www-form-urlencoded; charset=\(charset)"
            let connector = Stub(
                method: .post, headers: [HTTPHeader(name: "Content-Type", value: contentType)],
                parameters: CompositeParameters(.form(key: "name", value: "José Ñ"), .form(key: "ü", value: "£")))
            // When
            let request = try connector.asURLRequest()
            // Then
            XCTAssertEqual(request.httpBody.map { String(decoding: $0, as: UTF8.self) }, expected, charset)
            XCTAssertEqual(request.value(forHTTPHeaderField: "Content-Type"), contentType)
        }
    }

    func testAJSONObjectSentAsAFormIsEscapedInItsCharset() throws {
        // Given
        let connector = Stub(
            method: .post,
            headers: [HTTPHeader(name: "Content-Type", value: "application/x-www-form-urlencoded;charset=latin1")],
            parameters: ["city": "Zürich"] as JSONObject)
        // When
        let request = try connector.asURLRequest()
        // Then
        XCTAssertEqual(request.httpBody.map { String(decoding: $0, as: UTF8.self) }, "city=Z%FCrich")
    }

    func testAFormFieldItsCharsetCannotHoldIsRefusedNamingTheField() {
        let cases: [(charset: String, key: String, value: String)] = [
            ("iso-8859-1", "price", "10 €"),
            ("iso-8859-1", "name", "Łódź"),
            ("us-ascii", "name", "é"),
            ("windows-1252", "greeting", "こんにちは"),
            ("iso-8859-1", "ключ", "v"),
        ]
        for (charset, key, value) in cases {
            let connector = Stub(
                method: .post,
                headers: [
                    HTTPHeader(name: "Content-Type", value: "application/x-www-form-urlencoded; charset=\(charset)")
                ],
                parameters: CompositeParameters(.form(key: "a", value: "1"), .form(key: key, value: value)))
            XCTAssertThrowsError(try connector.asURLRequest(), "\(charset) \(value)") { error in
                let error = error as? ConnectError
                XCTAssertEqual(error?.kind, .invalidRequest)
                guard case .invalidParameter(let named, let reason)? = error?.invalidRequestReason else {
                    return XCTFail("\(String(describing: error))")
                }
                XCTAssertEqual(named, key)
                XCTAssertTrue(reason.contains(charset), reason)
                XCTAssertFalse(reason.contains(value), "the value may be a secret: \(reason)")
            }
        }
    }

    func testAFormCharsetThatIsNotWrittenIsRefused() {
        let connector = Stub(
            method: .post,
            headers: [HTTPHeader(name: "Content-Type", value: "application/x-www-form-urlencoded; charset=Shift_JIS")],
            parameters: Parameter.form(key: "a", value: "b"))
        XCTAssertThrowsError(try connector.asURLRequest()) { error in
            let error = error as? ConnectError
            XCTAssertEqual(error?.kind, .invalidRequest)
            guard case .bodyEncodingFailed(let detail)? = error?.invalidRequestReason else {
                return XCTFail("\(String(describing: error))")
            }
            XCTAssertTrue(detail.contains("Shift_JIS"), detail)
        }
    }

    func testRawBodyIsSentAsIsWithItsContentType() throws {
        let data = Data([0x89, 0x50, 0x4E, 0x47, 0x00, 0xFF])
        let request = try Stub(method: .put, parameters: Parameter.body(data, contentType: "image/png")).asURLRequest()
        XCTAssertEqual(request.httpBody, data)
        XCTAssertEqual(request.value(forHTTPHeaderField: "Content-Type"), "image/png")
    }

    func testRawBodyWithAnEmptyContentTypeSendsNoContentType() throws {
        for contentType in ["", " ", "\t"] {
            let data = Data("plain bytes".utf8)
            let request = try Stub(method: .put, parameters: Parameter.body(data, contentType: contentType))
                .asURLRequest()
            XCTAssertEqual(request.httpBody, data)
            XCTAssertNil(request.value(forHTTPHeaderField: "Content-Type"), contentType.debugDescription)
        }
    }

    func testRawBodyContentTypeWithCRLFIsRefused() {
        assertInvalidRequest(
            Stub(parameters: Parameter.body(Data(), contentType: "text/plain\r\nX-Evil: 1")),
            .invalidHeader(name: "Content-Type"))
    }

    func testNoParametersMeansNoBodyAndNoContentType() throws {
        let request = try Stub().asURLRequest()
        XCTAssertNil(request.httpBody)
        XCTAssertNil(request.value(forHTTPHeaderField: "Content-Type"))
        XCTAssertEqual(request.url?.absoluteString, "https://api.example.com/todos")
    }

    func testTwoBodiesThrowMultipleBodies() {
        let bodies: [[Parameter]] = [
            [.jsonObject(value: 1), .jsonObject(value: 2)],
            [.jsonObject(value: 1), .form(key: "a", value: "b")],
            [.form(key: "a", value: "b"), .jsonObject(value: 1)],
            [.form(key: "a", value: "b"), .body(Data(), contentType: "text/plain")],
            [.body(Data(), contentType: "text/plain"), .body(Data(), contentType: "text/plain")],
        ]
        for parameters in bodies {
            assertInvalidRequest(Stub(parameters: CompositeParameters(parameters)), .multipleBodies)
        }
    }

    /// URLSession fails a GET with a body as "resource exceeds maximum size" (NSURLErrorDomain -1103, on Linux
    /// and Apple platforms alike) and sends a HEAD without its body. Such a request is refused when it is
    /// built, saying why; an empty body, and a body on any other method, are sent as before.
    func testABodyOnAGETOrHEADIsRefused() throws {
        let bodies: [Parameter] = [
            .jsonObject(value: ["a": 1]), .form(key: "a", value: "1"),
            .body(Data("x".utf8), contentType: "text/plain"),
        ]
        for method in [HTTPMethod.get, .head, HTTPMethod(rawValue: "get")] {
            for body in bodies {
                let connector = Stub(method: method, parameters: body)
                assertInvalidRequest(connector, .bodyNotAllowed(method: method.rawValue))
                XCTAssertThrowsError(try connector.asURLRequest()) { error in
                    let text = String(describing: error)
                    XCTAssertTrue(text.contains("a \(method.rawValue) request cannot carry a body"), text)
                    XCTAssertTrue(text.contains(".query"), text)
                }
            }
        }
        XCTAssertNoThrow(try Stub(method: .get, parameters: Parameter.body(Data(), contentType: "")).asURLRequest())
        for method in [HTTPMethod.post, .put, .patch, .delete, .options, HTTPMethod(rawValue: "QUERY")] {
            XCTAssertEqual(
                try Stub(method: method, parameters: bodies[0]).asURLRequest().httpBody, Data(#"{"a":1}"#.utf8))
        }
    }

    /// RFC 9110 §9.3.8: "A client MUST NOT send content in a TRACE request." A TRACE's body (a `JSONObject`'s too,
    /// placed in the body as for any method but GET, HEAD and DELETE) went out as given; it is refused when built, and
    /// by the wire check every request passes, nothing sent.
    func testABodyOnATRACEIsRefused() throws {
        let bodies: [any ParametersRepresentable] = [
            Parameter.jsonObject(value: ["a": 1]), Parameter.form(key: "a", value: "1"),
            Parameter.body(Data("x".utf8), contentType: "text/plain"), ["a": 1] as JSONObject,
        ]
        for method in [HTTPMethod.trace, HTTPMethod(rawValue: "trace")] {
            for body in bodies {
                let connector = Stub(method: method, parameters: body)
                assertInvalidRequest(connector, .bodyNotAllowed(method: "TRACE"))
                XCTAssertThrowsError(try connector.asURLRequest()) { error in
                    let text = String(describing: error)
                    XCTAssertTrue(text.contains("a TRACE request cannot carry a body"), text)
                    XCTAssertTrue(text.contains("RFC 9110"), text)
                }
                let transport = FakeTransport.answering(.json(string: "{}"))
                let result = try Connect(transport: transport, retryPolicy: nil).request(connector)
                    .waitForResult(timeout: 5)
                guard case .failure(let error as ConnectError) = result else { return XCTFail("sent: \(result)") }
                XCTAssertEqual(error.invalidRequestReason, .bodyNotAllowed(method: "TRACE"))
                XCTAssertEqual(transport.requests.count, 0, "nothing is sent")
            }
        }
        XCTAssertNoThrow(try Stub(method: .trace).asURLRequest())
    }

    func testBodyEncodingFailureThrowsBodyEncodingFailed() throws {
        // Given: JSONEncoder refuses NaN by default.
        let connector = Stub(parameters: Parameter.jsonObject(value: Payload(userName: "x", score: .nan)))
        // When / Then
        XCTAssertThrowsError(try connector.asURLRequest()) { error in
            let error = error as? ConnectError
            XCTAssertEqual(error?.kind, .invalidRequest)
            guard case .bodyEncodingFailed(let detail)? = error?.invalidRequestReason else {
                return XCTFail("unexpected reason \(String(describing: error?.invalidRequestReason))")
            }
            let underlying = try? XCTUnwrap(error?.underlyingError as? EncodingError)
            XCTAssertNotNil(underlying)
            XCTAssertEqual(detail, underlying.map { String(describing: $0) })
            XCTAssertTrue(detail.contains("invalidValue"), detail)
        }
    }

    // MARK: - Headers

    func testHeadersAreSetAndALaterNameReplacesAnEarlierOneIgnoringCase() throws {
        // Given
        let connector = Stub(headers: [
            .accept("text/html"), HTTPHeader(name: "X-Trace", value: "1"),
            HTTPHeader(name: "accept", value: "application/json"),
        ])
        // When
        let request = try connector.asURLRequest()
        // Then
        XCTAssertEqual(request.value(forHTTPHeaderField: "Accept"), "application/json")
        XCTAssertEqual(request.value(forHTTPHeaderField: "x-trace"), "1")
        XCTAssertEqual(request.allHTTPHeaderFields?.count, 2)
    }

    func testHeaderValueWithCROrLFOrNULIsRefused() {
        for value in ["a\r\nX-Evil: 1", "a\nb", "a\rb", "a\u{0}b"] {
            assertInvalidRequest(
                Stub(headers: [HTTPHeader(name: "X-Note", value: value)]), .invalidHeader(name: "X-Note"))
        }
    }

    /// The error said "forbidden characters (CR, LF or NUL)" for a name such as `X Note`, which has none of
    /// them. It now says which part is wrong, and never repeats the value (it may be a secret).
    func testAnInvalidHeaderErrorSaysWhetherTheNameOrTheValueIsWrong() {
        let names = ["X Note", "Caf\u{e9}", "", "(x)"]
        for name in names {
            XCTAssertThrowsError(try Stub(headers: [HTTPHeader(name: name, value: "1")]).asURLRequest()) { error in
                let message = (error as? ConnectError)?.message ?? ""
                XCTAssertTrue(message.contains("is not an RFC 9110 token"), message)
                XCTAssertFalse(message.contains("CR, LF"), message)
            }
        }
        let values = ["s3cret\r\nX-Evil: 1", "s3cret\u{1}", "s3cret\u{7F}"]
        for value in values {
            XCTAssertThrowsError(try Stub(headers: [HTTPHeader(name: "X-Key", value: value)]).asURLRequest()) {
                let error = $0 as? ConnectError
                XCTAssertTrue(error?.message.contains("value of the header 'X-Key'") ?? false, error?.message ?? "")
                XCTAssertTrue(error?.message.contains("control character") ?? false, error?.message ?? "")
                XCTAssertFalse(error.map(String.init(reflecting:))?.contains("s3cret") ?? true)
            }
        }
    }

    /// A `Content-Length` that disagrees with the body made the server wait for bytes that never came (a hang
    /// until the timeout), or cut the body and left its rest on the connection, where the server read it as the
    /// start of the next request. It is refused; one that agrees, in any case, is kept.
    func testContentLengthThatDisagreesWithTheBodyIsRefused() throws {
        let hello = Parameter.body(Data("hello".utf8), contentType: "text/plain")
        let refused: [(String, String, Parameter?)] = [
            ("Content-Length", "100", hello), ("content-length", "2", hello), ("Content-Length", "5 5", hello),
            ("CONTENT-LENGTH", "-5", hello), ("Content-Length", "", hello), ("Content-Length", "1", nil),
            ("Content-Length", "99999999999999999999999", hello),
            ("Content-Length", "8", .jsonObject(value: ["a": 1])),
        ]
        for (name, value, body) in refused {
            let connector = Stub(method: .post, headers: [HTTPHeader(name: name, value: value)], parameters: body)
            assertInvalidRequest(connector, .invalidHeader(name: name))
            XCTAssertThrowsError(try connector.asURLRequest()) { error in
                let message = (error as? ConnectError)?.message ?? ""
                // The body's real length: 5 for `hello`, 7 for `{"a":1}`, 0 for none.
                let length = body == nil ? 0 : value == "8" ? 7 : 5
                XCTAssertTrue(message.contains("but the body has \(length) bytes"), message)
            }
        }
        for (value, body) in [("5", hello), (" 5\t", hello), ("0", nil), ("7", .jsonObject(value: ["a": 1]))] {
            let connector = Stub(
                method: .post, headers: [HTTPHeader(name: "Content-Length", value: value)], parameters: body)
            XCTAssertEqual(try connector.asURLRequest().value(forHTTPHeaderField: "Content-Length"), value)
        }
    }

    /// A blank `Content-Type` in a connector's headers went out as an empty `Content-Type:` field and kept the
    /// body's type out: it names none, as a body encoder's blank type does, and is passed over as if not set: the
    /// body's type (or none, or an earlier one) is sent.
    func testABlankContentTypeHeaderMeansNone() throws {
        let json = Parameter.jsonObject(value: ["a": 1])
        for blank in ["", "  ", "\t", " \t "] {
            let header = HTTPHeader(name: "Content-Type", value: blank)
            let typed = Stub(method: .post, headers: [header], parameters: json)
            XCTAssertEqual(
                try typed.asURLRequest().value(forHTTPHeaderField: "Content-Type"), "application/json",
                blank.debugDescription)
            let untyped = Stub(method: .post, headers: [header])
            XCTAssertNil(try untyped.asURLRequest().value(forHTTPHeaderField: "Content-Type"), blank.debugDescription)
            let after = Stub(method: .post, headers: [HTTPHeader(name: "content-type", value: "text/csv"), header])
            XCTAssertEqual(
                try after.asURLRequest().value(forHTTPHeaderField: "Content-Type"), "text/csv", blank.debugDescription)
        }
    }

    /// `.query(key: "")` went out as `?=v` without a word: an empty name is refused, naming the parameter (an
    /// endpoint's own query, `?=v`, is still sent as written).
    func testAQueryItemWithAnEmptyNameIsRefused() throws {
        for parameters: any ParametersRepresentable in [
            Parameter.query(key: "", value: "v"),
            CompositeParameters(.query(key: "a", value: "1"), .query(key: "", value: "")),
            ["": 1] as JSONObject,
        ] {
            XCTAssertThrowsError(try Stub(parameters: parameters).asURLRequest()) { error in
                guard case .invalidParameter(let key, let reason)? = (error as? ConnectError)?.invalidRequestReason
                else { return XCTFail("\(error)") }
                XCTAssertEqual(key, "")
                XCTAssertTrue(reason.contains("empty name"), reason)
            }
        }
        let written = Stub(endpoint: "/todos?=v", parameters: Parameter.query(key: "a", value: "1"))
        XCTAssertEqual(try written.asURLRequest().url?.absoluteString, "https://api.example.com/todos?=v&a=1")
    }

    /// `.form(key: "")` went into the body as `=v`, as `.query(key: "")` went into the URL: refused the same way,
    /// also for a `JSONObject` placed as a form.
    func testAFormFieldWithAnEmptyNameIsRefused() throws {
        let form = [HTTPHeader.contentType("application/x-www-form-urlencoded")]
        for parameters: any ParametersRepresentable in [
            Parameter.form(key: "", value: "v"),
            CompositeParameters(.form(key: "a", value: "1"), .form(key: "", value: "")),
            ["": 1] as JSONObject,
        ] {
            XCTAssertThrowsError(try Stub(method: .post, headers: form, parameters: parameters).asURLRequest()) {
                guard case .invalidParameter(let key, let reason)? = ($0 as? ConnectError)?.invalidRequestReason
                else { return XCTFail("\($0)") }
                XCTAssertEqual(key, "")
                XCTAssertTrue(reason.contains("empty name"), reason)
            }
        }
    }

    /// The transport frames the body (`Content-Length`, or chunks for one of unknown length): a `Transfer-Encoding` of
    /// the connector's would announce a framing or a coding the body does not have.
    func testATransferEncodingHeaderIsRefused() {
        for value in ["chunked", "gzip, chunked", "identity"] {
            assertInvalidRequest(
                Stub(method: .post, headers: [HTTPHeader(name: "Transfer-Encoding", value: value)]),
                .invalidHeader(name: "Transfer-Encoding"))
        }
        assertInvalidRequest(
            Stub(headers: [HTTPHeader(name: "TRANSFER-ENCODING", value: "chunked")]),
            .invalidHeader(name: "TRANSFER-ENCODING"))
        // Other framing-free fields that look alike are sent.
        XCTAssertNoThrow(try Stub(headers: [HTTPHeader(name: "TE", value: "trailers")]).asURLRequest())
    }

    /// `TE` names transfer codings of the answer, which the engines own: only `trailers` (all HTTP/2 allows) is sent.
    func testATEHeaderOtherThanTrailersIsRefused() {
        for value in ["gzip", "trailers, deflate"] {
            assertInvalidRequest(Stub(headers: [HTTPHeader(name: "te", value: value)]), .invalidHeader(name: "te"))
        }
    }

    func testHeaderNameThatIsNotATokenIsRefused() {
        // The error shows a name only up to where a value could start: it may be a pasted line with a secret after it.
        let shown: KeyValuePairs = [
            "": "", "X Note": "X…", "X-Note:": "X-Note…", "X-Note\r\n": "X-Note…", "Caf\u{e9}": "Caf\u{e9}",
            "(x)": "(x)",
        ]
        for (name, shownName) in shown {
            assertInvalidRequest(Stub(headers: [HTTPHeader(name: name, value: "1")]), .invalidHeader(name: shownName))
        }
    }

    // MARK: - Authorization

    func testAuthorizationTokenWinsOverAnAuthorizationHeader() throws {
        let connector = Authorized(
            headers: [HTTPHeader(name: "authorization", value: "Bearer old")], authorizationToken: .bearer(token: "new")
        )
        let request = try connector.asURLRequest()
        XCTAssertEqual(request.value(forHTTPHeaderField: "Authorization"), "Bearer new")
        XCTAssertEqual(request.allHTTPHeaderFields?.count, 1)
    }

    func testNilAuthorizationTokenLeavesHeadersAlone() throws {
        let withHeader = Authorized(headers: [.authorization("Token t")], authorizationToken: nil)
        XCTAssertEqual(try withHeader.asURLRequest().value(forHTTPHeaderField: "Authorization"), "Token t")
        XCTAssertNil(try Authorized().asURLRequest().value(forHTTPHeaderField: "Authorization"))
    }

    func testAuthorizationTokenIsCheckedLikeAHeader() {
        assertInvalidRequest(
            Authorized(authorizationToken: .bearer(token: "t\r\nX-Evil: 1")), .invalidHeader(name: "Authorization"))
        assertInvalidRequest(
            Authorized(authorizationToken: .custom(token: "t\u{0}")), .invalidHeader(name: "Authorization"))
    }

    // MARK: - Timeout and cache policy

    func testTimeoutAndCachePolicyDefaults() throws {
        let stub = Stub()
        XCTAssertEqual(stub.timeout, 60)
        XCTAssertEqual(stub.cachePolicy, .useProtocolCachePolicy)
        let request = try stub.asURLRequest()
        XCTAssertEqual(request.timeoutInterval, 60)
        XCTAssertEqual(request.cachePolicy, .useProtocolCachePolicy)
    }

    func testTimeoutAndCachePolicyOverrides() throws {
        let request = try Tuned().asURLRequest()
        XCTAssertEqual(request.timeoutInterval, 5)
        XCTAssertEqual(request.cachePolicy, .reloadIgnoringLocalCacheData)
        XCTAssertEqual(request.httpMethod, "POST")
    }

    func testDefaultJSONEncoderIsPlain() throws {
        let encoder = Stub().jsonEncoder
        XCTAssertEqual(String(decoding: try encoder.encode(["a_b": 1]), as: UTF8.self), #"{"a_b":1}"#)
    }

    // MARK: - Errors carry context

    func testHeaderErrorCarriesThePartlyBuiltRequest() {
        XCTAssertThrowsError(try Stub(headers: [HTTPHeader(name: "X", value: "\n")]).asURLRequest()) { error in
            XCTAssertEqual((error as? ConnectError)?.request?.url?.absoluteString, "https://api.example.com/todos")
        }
    }
}
