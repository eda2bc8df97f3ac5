import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `ConnectRequest`, the request middlewares see: its URLRequest-named members, its body, and the conversions at
/// the edge.
final class ConnectRequestTests: XCTestCase {
    private let url = URL(string: "https://api.example.com/todos?page=2")!

    func testURLRequestNamedMembersReadAndWriteTheModel() {
        var request = ConnectRequest(url: url)

        request.httpMethod = "PATCH"
        request.setValue("application/json", forHTTPHeaderField: "content-type")
        request.setValue("a", forHTTPHeaderField: "X-Trace")
        request.addValue("b", forHTTPHeaderField: "x-trace")
        request.httpBody = Data("{}".utf8)

        XCTAssertEqual(request.method, .patch)
        XCTAssertEqual(request.value(forHTTPHeaderField: "Content-Type"), "application/json")
        XCTAssertEqual(request.headerFields[values: "X-Trace"], ["a", "b"], "repeated fields stay apart")
        XCTAssertEqual(request.value(forHTTPHeaderField: "X-TRACE"), "a, b")
        XCTAssertEqual(request.allHTTPHeaderFields?["X-Trace"], "a, b")
        XCTAssertEqual(request.httpBody, Data("{}".utf8))

        request.setValue(nil, forHTTPHeaderField: "X-Trace")
        request.httpMethod = nil
        XCTAssertNil(request.value(forHTTPHeaderField: "X-Trace"))
        XCTAssertEqual(request.method, .get)
    }

    func testAValueIsKeptAsSetForTheClientsCheck() {
        var request = ConnectRequest(url: url)

        request.setValue("v\r\nX-Evil: 1", forHTTPHeaderField: "X-Note")

        XCTAssertEqual(request.value(forHTTPHeaderField: "X-Note"), "v\r\nX-Evil: 1")
        XCTAssertEqual(request.headerFields.firstInvalid?.name, "X-Note")
    }

    func testOnlyAStreamBodyCannotBeSentAgain() {
        var request = ConnectRequest(url: url)
        XCTAssertTrue(request.body.isReplayable)

        request.httpBody = Data([1, 2])
        XCTAssertTrue(request.body.isReplayable)

        let stream = InputStream(data: Data([3]))
        request.httpBodyStream = stream
        XCTAssertFalse(request.body.isReplayable)
        XCTAssertTrue(request.httpBodyStream === stream)
        XCTAssertNil(request.httpBody)
    }

    func testARoundTripThroughURLRequestKeepsEveryPart() throws {
        // Given: a URLRequest with properties the model does not carry
        var original = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: 7)
        original.httpMethod = "PUT"
        original.httpBody = Data("body".utf8)
        original.setValue("1", forHTTPHeaderField: "X-One")
        original.httpShouldHandleCookies = false

        // When
        var request = try ConnectRequest(original)
        request.setValue("2", forHTTPHeaderField: "X-Two")
        let back = request.urlRequest

        // Then
        XCTAssertEqual(request.method, .put)
        XCTAssertEqual(request.timeoutInterval, 7)
        XCTAssertEqual(back.url, url)
        XCTAssertEqual(back.httpMethod, "PUT")
        XCTAssertEqual(back.httpBody, Data("body".utf8))
        XCTAssertEqual(back.value(forHTTPHeaderField: "X-One"), "1")
        XCTAssertEqual(back.value(forHTTPHeaderField: "X-Two"), "2")
        XCTAssertEqual(back.timeoutInterval, 7)
        XCTAssertEqual(back.cachePolicy, .reloadIgnoringLocalCacheData)
        XCTAssertFalse(back.httpShouldHandleCookies, "kept from the URLRequest it was made from")
    }

    func testAURLRequestWithoutAURLIsATypedError() {
        var request = URLRequest(url: url)
        request.url = nil

        XCTAssertThrowsError(try ConnectRequest(request)) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .invalidRequest)
        }
    }

    /// The client builds a `ConnectRequest`: a middleware sees the connector's method, URL, headers and body.
    func testAMiddlewareSeesTheConnectorsRequest() throws {
        struct Spy: Middleware {
            let seen: Recorder<String>
            func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next)
                -> Future<ConnectResponse>
            {
                let body = String(decoding: request.httpBody ?? Data(), as: UTF8.self)
                seen.append(
                    "\(request.method) \(request.url.absoluteString) \(request.headerFields[.accept] ?? "-") \(body)")
                return next(request)
            }
        }
        let transport = FakeTransport()
        transport.stub(.post, "/todos", with: .status(201))
        let seen = Recorder<String>()
        let connect = Connect(transport: transport, middlewares: [Spy(seen: seen)])
        let route = Route(
            "/todos", baseURL: URL(string: "https://api.example.com"), method: .post,
            parameters: Parameter.body(Data("hi".utf8), contentType: "text/plain"), headers: [.accept("text/plain")])

        _ = try connect.request(route).wait(timeout: 10)

        XCTAssertEqual(seen.values, ["POST https://api.example.com/todos text/plain hi"])
        XCTAssertEqual(transport.requests.first?.httpBody, Data("hi".utf8))
    }

    /// The blanks around a header value are not part of it (RFC 9110 §5.5): the transport gets the value without them
    /// (libcurl left out a field of blanks only, which other engines sent empty), and a middleware still sees the
    /// request as it was given.
    func testTheTransportGetsHeaderValuesWithoutTheBlanksAroundThem() throws {
        struct Spy: Middleware {
            let seen: Recorder<String>
            func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next)
                -> Future<ConnectResponse>
            {
                seen.append(request.headerFields["X-Padded"] ?? "-")
                return next(request)
            }
        }
        let transport = FakeTransport()
        transport.stub(.get, "/todos", with: .status(200))
        let seen = Recorder<String>()
        let connect = Connect(transport: transport, middlewares: [Spy(seen: seen)], retryPolicy: nil)
        let route = Route(
            "/todos", baseURL: URL(string: "https://api.example.com"),
            headers: [
                HTTPHeader(name: "X-Padded", value: "\t a  b \t"), HTTPHeader(name: "X-Blank", value: "  "),
                HTTPHeader(name: "X-Inner", value: "a \t b"),
            ])

        _ = try connect.request(route).wait(timeout: 10)

        let sent = try XCTUnwrap(transport.requests.first)
        XCTAssertEqual(sent.value(forHTTPHeaderField: "X-Padded"), "a  b")
        XCTAssertEqual(sent.value(forHTTPHeaderField: "X-Blank"), "")
        XCTAssertEqual(sent.value(forHTTPHeaderField: "X-Inner"), "a \t b")
        XCTAssertEqual(seen.values, ["\t a  b \t"])
    }
}
