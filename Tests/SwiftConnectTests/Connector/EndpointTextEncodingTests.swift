import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Non-ASCII text written in an endpoint (`/café`, `/städte/{id}`, `?q=é`) is sent percent-encoded as its UTF-8
/// bytes, as written, the way path values already are; what changes a URL's meaning is refused as before.
final class EndpointTextEncodingTests: XCTestCase {
    private struct Endpoint: Connector {
        var baseURL = URL(string: "https://api.example.com")!
        var endpoint: String
        var method: HTTPMethod = .get
        var headers: [HTTPHeader] = []
        var parameters: (any ParametersRepresentable)?
    }

    private func url(_ endpoint: String, _ parameters: Parameter..., base: String = "https://api.example.com")
        throws -> String?
    {
        try Endpoint(
            baseURL: URL(string: base)!, endpoint: endpoint,
            parameters: parameters.isEmpty ? nil : CompositeParameters(parameters)
        ).asURLRequest().url?.absoluteString
    }

    func testNonASCIITextInTheEndpointIsPercentEncodedAsUTF8() throws {
        XCTAssertEqual(try url("/caf\u{e9}"), "https://api.example.com/caf%C3%A9")
        XCTAssertEqual(try url("/\u{1F600}"), "https://api.example.com/%F0%9F%98%80")
        XCTAssertEqual(try url("/\u{65E5}\u{672C}"), "https://api.example.com/%E6%97%A5%E6%9C%AC")
        XCTAssertEqual(
            try url("/st\u{e4}dte/{id}", .path(key: "id", value: "m\u{fc}nchen")),
            "https://api.example.com/st%C3%A4dte/m%C3%BCnchen")
        XCTAssertEqual(
            try url("/caf\u{e9}", base: "https://api.example.com/v1/"), "https://api.example.com/v1/caf%C3%A9")
    }

    func testALiteralQueryAndFragmentGetTheirNonASCIIEncodedToo() throws {
        XCTAssertEqual(try url("/search?q=\u{e9}"), "https://api.example.com/search?q=%C3%A9")
        XCTAssertEqual(
            try url("/search?q=\u{e9}", .query(key: "lang", value: "fran\u{e7}ais")),
            "https://api.example.com/search?q=%C3%A9&lang=fran%C3%A7ais")
        XCTAssertEqual(try url("/docs#r\u{e9}sum\u{e9}"), "https://api.example.com/docs#r%C3%A9sum%C3%A9")
    }

    /// The bytes the user wrote are sent: a decomposed `é` (e + U+0301) is not composed, nor the reverse.
    func testTheTextIsNotNormalized() throws {
        XCTAssertEqual(try url("/cafe\u{301}"), "https://api.example.com/cafe%CC%81")
        XCTAssertEqual(try url("/caf\u{e9}"), "https://api.example.com/caf%C3%A9")
    }

    /// An escape already written is kept as it is, never encoded a second time, beside the text encoded now.
    func testAnEscapeAlreadyWrittenIsNotEncodedTwice() throws {
        XCTAssertEqual(try url("/caf%C3%A9/\u{e9}%20x"), "https://api.example.com/caf%C3%A9/%C3%A9%20x")
        XCTAssertEqual(try url("/search?q=%C3%A9&r=\u{e9}"), "https://api.example.com/search?q=%C3%A9&r=%C3%A9")
    }

    /// Non-ASCII line and paragraph separators, a next line and a bidirectional override are encoded: none can
    /// split the request line or be read as structure.
    func testNonASCIIControlsAndSeparatorsAreEncodedNotSentRaw() throws {
        XCTAssertEqual(try url("/a\u{85}b"), "https://api.example.com/a%C2%85b")
        XCTAssertEqual(try url("/a\u{2028}b\u{2029}"), "https://api.example.com/a%E2%80%A8b%E2%80%A9")
        XCTAssertEqual(try url("/a\u{202E}b"), "https://api.example.com/a%E2%80%AEb")
    }

    /// Brackets, the query convention of Rails, PHP and JSON:API (`filter[status]=open`, `ids[]=1`), are sent as
    /// `%5B` and `%5D`, which servers read as the brackets, as `URL(string:)` encodes them on current Apple OSes: an
    /// endpoint holds no host, where alone they mean something.
    func testBracketsInTheEndpointArePercentEncoded() throws {
        XCTAssertEqual(
            try url("/todos?filter[status]=open&ids[]=1"),
            "https://api.example.com/todos?filter%5Bstatus%5D=open&ids%5B%5D=1")
        XCTAssertEqual(
            try url("/items/[{id}]?page[size]={n}", .path(key: "id", value: "7"), .path(key: "n", value: "10")),
            "https://api.example.com/items/%5B7%5D?page%5Bsize%5D=10")
        XCTAssertEqual(try url("/docs#[a]"), "https://api.example.com/docs#%5Ba%5D")
    }

    /// A space, an ASCII character a URL cannot hold, a broken escape and CR/LF are still refused, next to
    /// non-ASCII text or not: a space in an endpoint's own text is most likely a typo (write `%20` when meant).
    func testWhatWasRefusedBeforeStillIs() {
        let endpoints = [
            "/caf\u{e9} menu", "/caf\u{e9}|b", "/caf\u{e9}%zz", "/caf\u{e9}%4", "/caf\u{e9}\r\nX: y", "/\u{e9}{",
            "/{\u{e9}/x}", "/a b",
        ]
        for endpoint in endpoints {
            XCTAssertThrowsError(try url(endpoint), endpoint.debugDescription) { error in
                XCTAssertEqual(
                    (error as? ConnectError)?.invalidRequestReason,
                    .invalidURL("https://api.example.com" + endpoint), endpoint.debugDescription)
            }
        }
    }

    /// The refusal of a space says what to write instead.
    func testARefusedSpaceSaysToWriteAnEscape() {
        XCTAssertThrowsError(try url("/caf\u{e9} menu")) { error in
            XCTAssertTrue((error as? ConnectError)?.message.contains("space (write %20") ?? false, "\(error)")
        }
    }

    /// A non-ASCII secret in the endpoint's literal query reaches no printed output, as written or encoded.
    func testANonASCIISecretInTheLiteralQueryIsHiddenEncodedOrNot() throws {
        let secret = "t\u{f6}k\u{e9}n-4f7a9c2e81d3"
        let logger = MemoryLogger()
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(transport: transport, retryPolicy: nil, settings: Connect.Settings(logger: logger))
        let route = Route("/feed?access_token=\(secret)", baseURL: URL(string: "https://api.example.com")!)
        _ = try connect.request(route, debugResponse: true).wait(timeout: 5)
        let sent = try XCTUnwrap(transport.requests.first)
        XCTAssertEqual(
            sent.url?.absoluteString, "https://api.example.com/feed?access_token=t%C3%B6k%C3%A9n-4f7a9c2e81d3")
        // The debug log (the request and its response) and the route as `print` and `dump` show it.
        XCTAssertTrue(logger.messages.joined().contains("/feed?access_token="), "\(logger.messages)")
        let printed = [logger.messages.joined(separator: "\n"), String(describing: route), String(reflecting: route)]
        for text in printed {
            XCTAssertFalse(text.contains(secret), text)
            XCTAssertFalse(text.contains("t%C3%B6k%C3%A9n"), text)
        }
    }

    /// A placeholder's name may be non-ASCII, and its value is encoded as one segment whatever it holds.
    func testPlaceholdersKeepTheirRules() throws {
        XCTAssertEqual(
            try url("/st\u{e4}dte/{st\u{e4}dt}", .path(key: "st\u{e4}dt", value: "a/b?c#d")),
            "https://api.example.com/st%C3%A4dte/a%2Fb%3Fc%23d")
        XCTAssertThrowsError(try url("/\u{e9}/{id}", .path(key: "id", value: ".."))) { error in
            XCTAssertEqual((error as? ConnectError)?.invalidRequestReason, .dotSegmentPathValue(key: "id"))
        }
    }

    /// Through a real engine to a server on 127.0.0.1: the server receives the UTF-8 escapes, on URLSession and
    /// on an engine driven by the core's exchange alike.
    func testTheServerReceivesTheEncodedPath() throws {
        let server = try LocalServer.started()
        addTeardownBlock { server.stop() }
        server.route("GET", "*") { request in .text(request.target) }
        let transports: [(String, any Transport)] = [
            ("URLSession", TransportUnderTest.make()), ("SocketEngine", SocketEngine()),
        ]
        for (name, transport) in transports {
            let connect = Connect(transport: transport, retryPolicy: nil)
            let route = Route(
                "/st\u{e4}dte/{id}?q=caf\u{e9}", baseURL: server.baseURL,
                parameters: CompositeParameters(
                    .path(key: "id", value: "m\u{fc}nchen"), .query(key: "r", value: "\u{e9}")),
                timeout: 10)
            let body = try connect.request(route).wait(timeout: 20)
            XCTAssertEqual(
                String(decoding: body, as: UTF8.self), "/st%C3%A4dte/m%C3%BCnchen?q=caf%C3%A9&r=%C3%A9", name)
        }
    }
}
