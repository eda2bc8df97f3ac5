import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Hostile path, query and header input, checked on what a real server received.
///
/// `ConnectorBuildingTests` and `PercentEncodingTests` check the URL the builder makes; these send it through
/// `URLSession` (libcurl on Linux) to a ``LocalServer`` and look at the request target as it arrived, so any
/// normalisation on the way (dot segments, `%2E`, NUL) would show.
final class HostileInputTests: XCTestCase {
    /// `/files/{name}/meta?q=<query>`: one path value, one query item.
    private struct FileMeta: Connector {
        var baseURL: URL
        var name: String
        var query: String
        var endpoint: String { "/files/{name}/meta" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? {
            CompositeParameters(.path(key: "name", value: name), .query(key: "q", value: query))
        }
    }

    /// A connector whose headers, token and body a test chooses.
    private struct Signed: Connector, AuthorizedConnector {
        var baseURL: URL
        var endpoint = "/signed"
        var method: HTTPMethod = .get
        var headers: [HTTPHeader] = []
        var parameters: (any ParametersRepresentable)?
        var authorizationToken: AuthorizationToken?
    }

    /// What the echo route saw, as it saw it.
    private struct Received: Codable, Sendable {
        struct Item: Codable, Sendable {
            var name: String
            var value: String
        }
        /// The raw request target, percent-encoding intact.
        var target: String
        /// The decoded path segments.
        var segments: [String]
        /// The decoded query items, in order.
        var query: [Item]
    }

    private var server: LocalServer!
    private var connect: Connect!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        server.route("*", "*") { request in
            .json(
                Received(
                    target: request.target,
                    segments: request.decodedPathSegments,
                    query: request.queryItems.map { Received.Item(name: $0.name, value: $0.value) }
                ))
        }
        connect = Connect(transport: URLSessionTransport(), retryPolicy: nil)
    }

    override func tearDown() {
        connect.cancelAllRequests()
        server.stop()
        server = nil
        connect = nil
    }

    // MARK: - Path and query values, end to end

    /// Values that would change the path or the query if they were not encoded, or that a client could
    /// normalise away.
    static let hostileValues = [
        "a/b", "../../etc/passwd", "...", "./", "/..", "//", "/", "a?b=c", "?", "#", "#frag", "a#b?c",
        "100%", "%", "%2F", "%2f", "%2E%2E", ".%2E", "%00", "%zz", "a b", " ", "  ", "\t", "a+b", "&q=evil",
        "x&q=evil#y", "q=1", ";jsessionid=1", "a\\b", "\"quoted\"", "<script>", "caf\u{E9}", "cafe\u{301}",
        "\u{301}", "\u{1F600}", "\u{1F469}\u{200D}\u{1F4BB}", "\u{4E2D}\u{6587}", "\u{FEFF}", "\u{2028}",
        "\u{FEFF}a", "\u{212B}", "a\r\nX-Evil: 1", "\r\n\r\nGET / HTTP/1.1", "\u{7F}", "\u{1B}[31m",
    ]

    func testHostilePathAndQueryValuesArriveExactlyInTheirOwnSegmentAndItem() throws {
        for value in Self.hostileValues {
            // Given
            let connector = FileMeta(baseURL: server.baseURL, name: value, query: value)
            // When
            let received = try connect.request(connector).decoded(toType: Received.self).wait(timeout: 10)
            // Then
            assertDelivered(value, received)
        }
    }

    /// NUL is delivered as `%00` and decoded back to U+0000: it is neither refused by `URLSession` nor cut off.
    func testNULInPathAndQueryValuesIsDeliveredExactly() throws {
        for value in ["\u{0}", "a\u{0}b", "a\u{0}", "\u{0}/..", "..\u{0}"] {
            // Given
            let connector = FileMeta(baseURL: server.baseURL, name: value, query: value)
            // When
            let received = try connect.request(connector).decoded(toType: Received.self).wait(timeout: 10)
            // Then
            assertDelivered(value, received)
            XCTAssertTrue(received.target.contains("%00"), received.target)
        }
    }

    /// `%2E` and `%2E%2E` are still dot-segments to servers and proxies that normalise URLs: refused, unsent.
    func testDotSegmentValuesAreRefusedBeforeAnythingIsSent() throws {
        for value in [".", ".."] {
            // Given
            let connector = FileMeta(baseURL: server.baseURL, name: value, query: "x")
            // When
            let error = connectError(of: connect.request(connector))
            // Then
            XCTAssertEqual(error?.invalidRequestReason, .dotSegmentPathValue(key: "name"), value)
        }
        XCTAssertEqual(server.requestCount, 0)
        let received = try connect.request(FileMeta(baseURL: server.baseURL, name: "...", query: "x"))
            .decoded(toType: Received.self).wait(timeout: 10)
        XCTAssertEqual(received.segments, ["files", "...", "meta"], "target: \(received.target)")
    }

    func testAQueryValueCannotAddOrReplaceAnItem() throws {
        // Given
        let injected = "1&admin=true&q=2#&x=y"
        let connector = Signed(
            baseURL: server.baseURL,
            endpoint: "/search",
            parameters: CompositeParameters(.query(key: "q", value: injected), .query(key: "page=2&admin", value: "1"))
        )
        // When
        let received = try connect.request(connector).decoded(toType: Received.self).wait(timeout: 10)
        // Then
        XCTAssertEqual(received.query.map(\.name), ["q", "page=2&admin"], received.target)
        XCTAssertEqual(received.query.map(\.value), [injected, "1"], received.target)
        XCTAssertFalse(received.target.contains("#"), received.target)
    }

    // MARK: - Property: what is encoded decodes back exactly

    /// Through the builder and `URLComponents`: fast, so many cases.
    func testRandomValuesRoundTripThroughTheBuiltURL() throws {
        var generator = HostileStringGenerator(seed: PropertySeed.value)
        let base = try XCTUnwrap(URL(string: "https://api.example.com"))
        for index in 0..<10_000 {
            let value = generator.next()
            let context = PropertySeed.context(case: index, value: value)
            // When
            if value == "." || value == ".." {  // would be a dot-segment: refused
                XCTAssertThrowsError(try FileMeta(baseURL: base, name: value, query: value).asURLRequest(), context)
                continue
            }
            let request = try FileMeta(baseURL: base, name: value, query: value).asURLRequest()
            // Then
            let url = try XCTUnwrap(request.url, context)
            let components = try XCTUnwrap(URLComponents(url: url, resolvingAgainstBaseURL: false), context)
            let segments = components.percentEncodedPath.split(separator: "/", omittingEmptySubsequences: false)
            let items = (components.percentEncodedQuery ?? "").split(separator: "&", omittingEmptySubsequences: false)
            let item = items.first?.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false) ?? []
            let failure: String? =
                if segments.count != 4 || segments[1] != "files" || segments[3] != "meta" {
                    "path structure changed: \(components.percentEncodedPath)"
                } else if !sameScalars(exactlyDecoded(segments[2]), value) {
                    "path value changed: \(segments[2])"
                } else if items.count != 1 || item.count != 2 || item[0] != "q" {
                    "query structure changed: \(components.percentEncodedQuery ?? "nil")"
                } else if !sameScalars(exactlyDecoded(item[1]), value) {
                    "query value changed: \(item[1])"
                } else if components.queryItems?.map(\.name) != ["q"] || components.fragment != nil {
                    "URLComponents reads it differently: \(url.absoluteString)"
                } else {
                    nil
                }
            if let failure {
                return XCTFail("\(failure) (\(context))")
            }
        }
    }

    /// Through `URLSession` to the server: what arrived decodes to the value sent.
    func testRandomValuesArriveExactlyAtTheServer() throws {
        var generator = HostileStringGenerator(seed: PropertySeed.value)
        let batchSize = 8
        var index = 0
        var refused = 0  // "." and "..", which would be dot-segments
        while index < 2_000 {
            let values = (0..<batchSize).map { _ in generator.next() }
            let futures = values.map { value in
                connect.request(FileMeta(baseURL: server.baseURL, name: value, query: value))
                    .decoded(toType: Received.self)
            }
            for (offset, (value, future)) in zip(values, futures).enumerated() {
                let context = PropertySeed.context(case: index + offset, value: value)
                let received: Received
                do {
                    received = try future.wait(timeout: 10)
                } catch let error as ConnectError
                    where error.invalidRequestReason == .dotSegmentPathValue(key: "name")
                {
                    refused += 1
                    XCTAssert(value == "." || value == "..", "\(error) (\(context))")
                    continue
                } catch {
                    return XCTFail("request failed: \(error) (\(context))")
                }
                if let failure = deliveryFailure(value, received) {
                    return XCTFail("\(failure) (\(context))")
                }
            }
            index += batchSize
        }
        XCTAssertEqual(server.requestCount, 2_000 - refused)
    }

    // MARK: - Header injection

    func testHeadersWithControlCharactersAreRefusedBeforeAnythingIsSent() throws {
        // Given
        let evilValues = [
            "a\r\nX-Evil: 1", "a\nX-Evil: 1", "a\rX-Evil: 1", "a\u{0}b", "\r\n", "a\r\n\r\nGET / HTTP/1.1",
            "a\u{0B}b", "a\u{1B}[31m", "a\u{7F}",
        ]
        // Each name, and the error's: cut where a value could start (it may be a pasted line with a secret after it).
        let evilNames: KeyValuePairs = [
            "X-Evil\r\n": "X-Evil…", "X-Note\r\nX-Evil": "X-Note…", "X Evil": "X…", "X-Evil:": "X-Evil…",
            "X\u{0}": "X…",
            "": "", "Caf\u{E9}": "Caf\u{E9}", "X\tY": "X…",
        ]
        var cases: [(label: String, connector: Signed, header: String)] = []
        for value in evilValues {
            let header = HTTPHeader(name: "X-Note", value: value)
            cases.append(("value \(value.debugDescription)", signed(headers: [header]), "X-Note"))
        }
        for (name, shown) in evilNames {
            cases.append(
                ("name \(name.debugDescription)", signed(headers: [HTTPHeader(name: name, value: "1")]), shown))
        }
        cases.append(("bearer", signed(token: .bearer(token: "x\r\nX-Evil: 1")), "Authorization"))
        cases.append(("custom", signed(token: .custom(token: "Token x\nX-Evil: 1")), "Authorization"))
        cases.append(("custom NUL", signed(token: .custom(token: "Token x\u{0}")), "Authorization"))
        let body = Parameter.body(Data("x".utf8), contentType: "text/plain\r\nX-Evil: 1")
        cases.append(("body content type", signed(parameters: body), "Content-Type"))

        for (label, connector, header) in cases {
            // When
            let error = try refusal(of: connect.request(connector), label)
            // Then
            XCTAssertEqual(error.kind, .invalidRequest, label)
            XCTAssertEqual(error.invalidRequestReason, .invalidHeader(name: header), label)
        }
        XCTAssertEqual(server.requestCount, 0, "a refused request reached the server")
    }

    func testAHeaderValueWithATabIsSent() throws {
        // Given: the tab is the one control character RFC 9110 allows in a field value
        let header = HTTPHeader(name: "X-Note", value: "a\tb c")
        // When
        let response = try connect.response(for: signed(headers: [header])).wait()
        // Then
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(server.requestCount, 1)
    }

    /// Base64 would keep CR and LF from splitting the header, but RFC 7617 forbids control characters in Basic
    /// credentials: the server would decode them and answer 401. Refused, nothing sent.
    func testBasicCredentialsWithCRLFAreRefusedBeforeAnythingIsSent() throws {
        // Given
        // (The injection sits in the password: a username with ':' is refused before anything is sent.)
        let token = AuthorizationToken.basic(username: "amy\r\n", password: "p\r\nX-Evil: 1\r\n")
        // When
        let error = try refusal(of: connect.request(signed(token: token)), "Basic credentials")
        // Then
        XCTAssertEqual(error.kind, .invalidRequest)
        XCTAssertEqual(error.invalidRequestReason, .invalidHeader(name: "Authorization"))
        XCTAssertEqual(server.requestCount, 0)
    }

    func testInvalidMethodIsRefusedBeforeAnythingIsSent() throws {
        // Given
        let connector = signed(method: HTTPMethod(rawValue: "GET /admin HTTP/1.1\r\nX-Evil: 1\r\n\r\nGET"))
        // When
        let error = try refusal(of: connect.request(connector), "method")
        // Then
        XCTAssertEqual(error.kind, .invalidRequest)
        XCTAssertEqual(error.invalidRequestReason, .invalidMethod(connector.method.rawValue))
        XCTAssertEqual(server.requestCount, 0)
    }

    func testClientAndServerDefaultHeadersWithCRLFAreRefused() throws {
        // Given
        let evil = HTTPHeader(name: "X-Default", value: "v\r\nX-Evil: 1")
        let clientDefaults = Connect(
            transport: URLSessionTransport(), retryPolicy: nil, settings: Connect.Settings(defaultHeaders: [evil]))
        let configuration = ServerConfiguration(
            scheme: .http, host: "127.0.0.1", port: server.port, defaultHeaders: [evil])
        let serverDefaults = Connect(transport: URLSessionTransport(), retryPolicy: nil, configuration: configuration)
        let badName = Connect(
            transport: URLSessionTransport(), retryPolicy: nil,
            settings: Connect.Settings(defaultHeaders: [HTTPHeader(name: "X-Default\r\nX-Evil", value: "1")]))
        // When
        let errors = [
            try refusal(of: clientDefaults.request(signed()), "Connect(settings: Connect.Settings(defaultHeaders:))"),
            try refusal(of: serverDefaults.request(Route("/signed")), "ServerConfiguration.defaultHeaders"),
            try refusal(of: badName.request(signed()), "default header name"),
        ]
        // Then
        XCTAssertEqual(
            errors.map(\.invalidRequestReason),
            [
                .invalidHeader(name: "X-Default"), .invalidHeader(name: "X-Default"),
                .invalidHeader(name: "X-Default…"),
            ]
        )
        XCTAssertEqual(server.requestCount, 0)
    }

    /// A whole header line pasted in as a name (`Authorization: Bearer …`) is refused without its secret showing in
    /// the error or in the debug log's cURL line.
    func testAHeaderLinePastedAsANameNeverShowsItsSecret() throws {
        let secret = "sk_live_abcdef123456"
        let route = Route(
            "/x", baseURL: URL(string: "https://api.example.com")!,
            headers: [HTTPHeader(name: "Authorization: Bearer \(secret)", value: "")])
        XCTAssertThrowsError(try route.asURLRequest()) { error in
            XCTAssertEqual((error as? ConnectError)?.invalidRequestReason, .invalidHeader(name: "Authorization…"))
            XCTAssertFalse(String(reflecting: error).contains(secret), String(reflecting: error))
            XCTAssertFalse("\(error)".contains(secret), "\(error)")
        }
        let logger = MemoryLogger()
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(transport: transport, retryPolicy: nil, settings: Connect.Settings(logger: logger))
        let pasted = RequestOptions(headers: [HTTPHeader(name: "X-Key: \(secret)", value: "")])
        let error = connectError(
            of: connect.request(Route("/x", baseURL: route.baseURL), debugResponse: true, options: pasted))
        XCTAssertEqual(error?.invalidRequestReason, .invalidHeader(name: "X-Key…"))
        XCTAssertFalse(logger.messages.joined().contains(secret), logger.messages.joined())
        XCTAssertTrue(transport.requests.isEmpty)
    }

    func testAConnectorHeaderSharingADefaultHeadersNameIsStillChecked() throws {
        // Given: a default header would be skipped because the connector sets the same name…
        let connect = Connect(
            transport: URLSessionTransport(), retryPolicy: nil,
            settings: Connect.Settings(defaultHeaders: [.accept("application/json")]))
        // When: …but the connector's own value is the hostile one
        let error = try refusal(
            of: connect.request(signed(headers: [.accept("*/*\r\nX-Evil: 1")])), "connector header over default")
        // Then
        XCTAssertEqual(error.invalidRequestReason, .invalidHeader(name: "Accept"))
        XCTAssertEqual(server.requestCount, 0)
    }

    /// A middleware runs after the builder's checks: a CR/LF it sets is refused by the client's check before the
    /// transport, as a typed error, on every platform (FoundationNetworking's `URLRequest.setValue` used to drop it
    /// silently), and nothing reaches the server.
    func testHeadersSetByMiddlewareAreRefusedNotInjectedOnTheWire() throws {
        // Given
        struct Hostile: Middleware {
            func intercept(_ request: ConnectRequest, context: RequestContext, next: @escaping Next)
                -> Future<ConnectResponse>
            {
                var request = request
                request.setValue("v\r\nX-Evil: 1", forHTTPHeaderField: "X-Note")
                request.setValue("v\nX-Evil: 2", forHTTPHeaderField: "X-Other")
                return next(request)
            }
        }
        let auth = AuthenticationMiddleware(credential: .bearer(token: "t\r\nX-Evil: 3")) { _ in
            Future(value: .bearer(token: "fresh"))
        }
        let connect = Connect(transport: URLSessionTransport(), middlewares: [Hostile()], retryPolicy: nil)
        let signing = Connect(transport: URLSessionTransport(), middlewares: [Hostile(), auth], retryPolicy: nil)
        // When
        let error = try refusal(of: connect.request(signed()), "CR/LF from a middleware")
        let signingError = try refusal(of: signing.request(signed()), "CR/LF from a middleware and a credential")
        // Then
        XCTAssertEqual(error.invalidRequestReason, .invalidHeader(name: "X-Note"))
        XCTAssertEqual(signingError.invalidRequestReason, .invalidHeader(name: "Authorization"))
        XCTAssertTrue(server.requests.isEmpty, "nothing is sent")
        for request in server.requests {
            XCTAssertNil(request.header("X-Evil"), "injected through a middleware: \(request.headers)")
            XCTAssertFalse(request.headers.contains { $0.value.contains("X-Evil") }, "\(request.headers)")
        }
    }

    // MARK: - Helpers

    private func signed(
        method: HTTPMethod = .get,
        headers: [HTTPHeader] = [],
        parameters: (any ParametersRepresentable)? = nil,
        token: AuthorizationToken? = nil
    ) -> Signed {
        Signed(
            baseURL: server.baseURL, method: method, headers: headers, parameters: parameters,
            authorizationToken: token)
    }

    /// The `ConnectError` a refused request fails with; fails the test if it was sent.
    private func refusal<Value>(
        of future: Future<Value>,
        _ label: String,
        file: StaticString = #filePath,
        line: UInt = #line
    ) throws -> ConnectError {
        switch try future.waitForResult(timeout: 10) {
        case .success:
            XCTFail("\(label): the request was sent", file: file, line: line)
            return ConnectError(.transport, message: "unexpected success")
        case .failure(let error):
            return try XCTUnwrap(error as? ConnectError, "\(label): \(error)", file: file, line: line)
        }
    }

    private func assertDelivered(
        _ value: String,
        _ received: Received,
        file: StaticString = #filePath,
        line: UInt = #line
    ) {
        if let failure = deliveryFailure(value, received) {
            XCTFail("\(value.debugDescription): \(failure)", file: file, line: line)
        }
    }

    /// Why `received` is not exactly `/files/<value>/meta?q=<value>`, or `nil` if it is.
    ///
    /// Values are decoded from the raw target with ``exactlyDecoded(_:)``, not with the server's decoded forms:
    /// Foundation's `removingPercentEncoding` drops a leading U+FEFF, which would hide (or fake) a difference.
    private func deliveryFailure(_ value: String, _ received: Received) -> String? {
        let target = received.target
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let rawSegments = parts[0].split(separator: "/", omittingEmptySubsequences: false)
        let rawItems = parts.count == 2 ? parts[1].split(separator: "&", omittingEmptySubsequences: false) : []
        let rawItem = rawItems.first?.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false) ?? []
        if !target.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) {
            return "raw target has a byte that is not printable ASCII: \(target.debugDescription)"
        }
        if target.contains("#") || parts.count != 2 || parts[1].contains("?") {
            return "raw target has an unencoded ? or #: \(target)"
        }
        if rawSegments.count != 4 || rawSegments[1] != "files" || rawSegments[3] != "meta"
            || received.segments.count != 3
        {
            return "path structure changed: \(target), segments \(received.segments)"
        }
        if rawSegments[2] == "." || rawSegments[2] == ".." {
            return "the value arrived as a dot segment: \(target)"
        }
        if !sameScalars(exactlyDecoded(rawSegments[2]), value) {
            return "path value changed: \(rawSegments[2])"
        }
        if rawItems.count != 1 || rawItem.count != 2 || rawItem[0] != "q" || received.query.map(\.name) != ["q"] {
            return "query structure changed: \(target), items \(received.query.map(\.name))"
        }
        if !sameScalars(exactlyDecoded(rawItem[1]), value) {
            return "query value changed: \(rawItem[1])"
        }
        return nil
    }
}

// MARK: - Property-test support

/// Exact equality of Unicode scalars: `"e\u{301}"` and `"\u{E9}"` are different values here, though Swift's
/// `String ==` calls them equal.
private func sameScalars(_ lhs: String?, _ rhs: String) -> Bool {
    guard let lhs else { return false }
    return Array(lhs.unicodeScalars) == Array(rhs.unicodeScalars)
}

/// Percent-decodes `text` byte for byte, then reads the bytes as UTF-8; `nil` for a malformed escape or
/// invalid UTF-8. Unlike Foundation's `removingPercentEncoding`, it keeps a leading U+FEFF.
private func exactlyDecoded(_ text: some StringProtocol) -> String? {
    func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
    let encoded = Array(text.utf8)
    var bytes: [UInt8] = []
    var index = 0
    while index < encoded.count {
        guard encoded[index] == UInt8(ascii: "%") else {
            bytes.append(encoded[index])
            index += 1
            continue
        }
        guard index + 2 < encoded.count, let high = hexValue(encoded[index + 1]), let low = hexValue(encoded[index + 2])
        else { return nil }
        bytes.append(high << 4 | low)
        index += 3
    }
    let decoded = String(decoding: bytes, as: UTF8.self)
    return Array(decoded.utf8) == bytes ? decoded : nil
}

/// The seed of the property tests: `SWIFTCONNECT_PROPERTY_SEED` (decimal or `0x` hex) if set, else a fixed one.
private enum PropertySeed {
    static let value: UInt64 = {
        let text = ProcessInfo.processInfo.environment["SWIFTCONNECT_PROPERTY_SEED"] ?? ""
        if text.lowercased().hasPrefix("0x"), let seed = UInt64(text.dropFirst(2), radix: 16) { return seed }
        return UInt64(text) ?? 0x5EC0_12E5_EED0_0001
    }()

    /// The seed, case number and value (with its scalars), for a failure message that can be replayed.
    static func context(case index: Int, value: String) -> String {
        let scalars = value.unicodeScalars.map { "U+" + String($0.value, radix: 16, uppercase: true) }
        return "SWIFTCONNECT_PROPERTY_SEED=0x\(String(Self.value, radix: 16)), case \(index), "
            + "value \(value.debugDescription) = [\(scalars.joined(separator: " "))]"
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny deterministic generator, seeded by the caller.
private struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

/// Random non-empty strings made of the pieces most likely to break encoding.
private struct HostileStringGenerator {
    /// ASCII that URLs give meaning to, ASCII that they don't, whitespace and control characters, then
    /// 2-, 3- and 4-byte UTF-8, combining marks and things that look like escapes.
    static let pieces: [String] = [
        "a", "Z", "0", "9", "-", "_", "~", ".", "..",
        "/", "?", "#", "%", "&", "=", "+", ";", ":", "@", "[", "]", "!", "$", "'", "(", ")", "*", ",",
        "{", "}", "|", "\\", "^", "`", "\"", "<", ">",
        " ", "\t", "\n", "\r", "\r\n", "\u{0}", "\u{1}", "\u{1B}", "\u{1F}", "\u{7F}",
        "\u{E9}", "\u{DF}", "\u{3A9}", "\u{85}", "\u{A0}",
        "\u{20AC}", "\u{4E2D}", "\u{2028}", "\u{FEFF}", "\u{FFFD}", "\u{200B}", "\u{212B}", "\u{FB01}",
        "\u{1F600}", "\u{1D11E}", "\u{1F1EB}\u{1F1F7}", "\u{1F469}\u{200D}\u{1F4BB}", "\u{10FFFF}",
        "\u{301}", "\u{308}", "\u{20DD}", "e\u{301}",
        "%2F", "%2E", "%00", "%25", "%G1", "%%",
    ]

    private var random: SplitMix64

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    /// A value of 1 to 16 pieces; one in 32 is made only of dots (`...` to `.....`: `.` and `..` are refused).
    mutating func next() -> String {
        if random.next(below: 32) == 0 {
            return String(repeating: ".", count: 3 + random.next(below: 3))
        }
        let count = 1 + random.next(below: 16)
        var value = ""
        for _ in 0..<count { value += Self.pieces[random.next(below: Self.pieces.count)] }
        return value
    }
}
