import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Base URLs, endpoints, server configurations and timeouts that cannot make a safe request fail with a typed
/// error before anything is sent: never a crash, never a request to a host the app did not name.
final class URLSafetyTests: XCTestCase {
    private typealias Endpoint = ConfigurableConnector

    /// Sends `connector` through a fake transport and returns the typed error, checking nothing was sent.
    private func refusal(
        _ connector: any Connector,
        configuration: ServerConfiguration? = nil,
        file: StaticString = #filePath,
        line: UInt = #line
    ) throws -> ConnectError {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(transport: transport, retryPolicy: nil, configuration: configuration)
        let result = try connect.request(connector).waitForResult(timeout: 5)
        XCTAssertEqual(transport.requests.count, 0, "nothing is sent", file: file, line: line)
        guard case .failure(let error as ConnectError) = result else {
            XCTFail("expected a ConnectError, got \(String(describing: result))", file: file, line: line)
            throw CancellationError()
        }
        XCTAssertEqual(error.kind, .invalidRequest, file: file, line: line)
        return error
    }

    // MARK: ServerConfiguration

    func testAServerConfigurationThatMakesNoURLIsATypedErrorNotACrash() throws {
        let cases: [(ServerConfiguration, String)] = [
            (ServerConfiguration(host: "api.example.com", basePath: "/v 2"), "base path"),
            (ServerConfiguration(host: "api.example.com", basePath: "/v%zz"), "base path"),
            (ServerConfiguration(host: "api.example.com", basePath: "/v2?x=1"), "base path"),
            (ServerConfiguration(host: "api.example.com", basePath: "/v2#top"), "base path"),
            (ServerConfiguration(host: "api.example.com", port: -1), "port -1"),
            (ServerConfiguration(host: "api.example.com", port: 0), "port 0"),
            (ServerConfiguration(host: "api.example.com", port: 70_000), "port 70000"),
            (ServerConfiguration(host: "api.example.com:8443"), "port:"),
            (ServerConfiguration(host: "https://api.example.com"), "scheme:"),
            (ServerConfiguration(host: ""), "empty"),
            (ServerConfiguration(host: "api example.com"), "cannot"),
            (ServerConfiguration(host: "user@api.example.com"), "cannot"),
            (ServerConfiguration(host: "::1"), "brackets"),
            (ServerConfiguration(host: "[::1]:8443"), "port:"),
            (ServerConfiguration(host: "[zz]"), "not an IPv6 address"),
            (ServerConfiguration(host: "[1.2.3.4]"), "not an IPv6 address"),
            (ServerConfiguration(host: "[]"), "not an IPv6 address"),
        ]
        for (configuration, words) in cases {
            XCTAssertNil(configuration.baseURL, "\(configuration)")
            let error = try refusal(Route("/todos"), configuration: configuration)
            XCTAssertTrue(error.message.contains(words), "\(error.message) should say \(words)")
        }
    }

    /// The refusal of a configuration that makes no URL quotes what it was given with its secrets hidden: a base path
    /// with a key in its query (`/v2?api_key=…`), a host with a password before a port.
    func testARefusedConfigurationShowsNoSecret() throws {
        let configurations = [
            ServerConfiguration(host: "api.example.com", basePath: "/v2?api_key=sk_live_9"),
            ServerConfiguration(host: "api.example.com", basePath: "/v2/../v3?access_token=sk_live_9"),
            ServerConfiguration(host: "amy:sk_live_9@api.example.com"),
            // A `/`, `?` or `#` in the password ended the authority before the `@` for the URL's redaction
            ServerConfiguration(host: "amy:sk_live/9@api.example.com"),
            ServerConfiguration(host: "amy:sk#live_9@api.example.com"),
            ServerConfiguration(host: "amy:sk?live_9@api.example.com"),
        ]
        for configuration in configurations {
            let error = try refusal(Route("/todos"), configuration: configuration)
            var dumped = ""
            dump(error, to: &dumped)
            for text in [error.message, "\(error)", String(reflecting: error), "\(configuration)", dumped] {
                for piece in ["sk_live_9", "sk_live/9", "sk#live_9", "sk?live_9"] {
                    XCTAssertFalse(text.contains(piece), text)
                }
            }
        }
    }

    /// A bracketed IPv6 host, with or without a zone, makes its URL.
    func testABracketedIPv6HostMakesItsURL() {
        XCTAssertEqual(ServerConfiguration(host: "[::1]", port: 8443).baseURL?.absoluteString, "https://[::1]:8443")
        XCTAssertEqual(
            ServerConfiguration(host: "[2001:db8::7]").baseURL?.absoluteString, "https://[2001:db8::7]")
        XCTAssertNotNil(ServerConfiguration(host: "[fe80::1%25eth0]").baseURL)
    }

    /// Printing or dumping a configuration shows no API key nor credential (the default printout showed them whole).
    func testAConfigurationPrintsNoSecret() {
        let configuration = ServerConfiguration(
            host: "api.example.com", basePath: "/v2",
            defaultHeaders: [.authorization(bearerToken: "tok-HEADER-1"), HTTPHeader(name: "Accept", value: "a/b")],
            defaultQueryItems: [
                URLQueryItem(name: "api_key", value: "ak-QUERY-2"), URLQueryItem(name: "page", value: "1"),
            ])
        var dumped = ""
        dump(configuration, to: &dumped)
        for shown in [configuration.description, "\(configuration)", dumped] {
            XCTAssertFalse(shown.contains("tok-HEADER-1"), shown)
            XCTAssertFalse(shown.contains("ak-QUERY-2"), shown)
            XCTAssertTrue(shown.contains("https://api.example.com/v2?api_key="), shown)
            XCTAssertTrue(shown.contains("page=1"), shown)
        }
    }

    /// A password written into `host` is never quoted in the refusal (the message showed it whole).
    func testAPasswordInTheHostIsNotShown() throws {
        let error = try refusal(
            Route("/todos"), configuration: ServerConfiguration(host: "admin:s3cret@api.example.com"))
        XCTAssertFalse(error.description.contains("s3cret"), error.description)
        XCTAssertTrue(error.message.contains("user name or password"), error.message)
    }

    /// A base URL with an IPv6 host makes its URL (Foundation hands the host over bracketed on Linux: bracketed again,
    /// it made no URL, and every request failed), and its query goes out as written: `+` stays `+` (it became
    /// `%2B`) and a bare flag stays bare (it became `debug=`).
    func testABaseURLsIPv6HostAndQueryAreKeptAsWritten() throws {
        let v6 = ServerConfiguration(baseURL: try XCTUnwrap(URL(string: "http://[::1]:8080/v2")))
        XCTAssertEqual(v6.baseURL?.absoluteString, "http://[::1]:8080/v2")
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(
            transport: transport, retryPolicy: nil,
            configuration: ServerConfiguration(
                baseURL: try XCTUnwrap(URL(string: "https://api.test/v1?fields=id+name&debug&q=a%20b"))))
        _ = try connect.request(Route("/todos?page=2")).wait(timeout: 5)
        XCTAssertEqual(transport.requests.first?.url?.query, "page=2&fields=id+name&debug&q=a%20b")
        // Changed by the app, the items are encoded as any: a value without a value is the name alone.
        var changed = ServerConfiguration(baseURL: try XCTUnwrap(URL(string: "https://api.test/v1?a=1")))
        changed.defaultQueryItems.append(URLQueryItem(name: "flag", value: nil))
        let other = FakeTransport.answering(.json(string: "{}"))
        _ = try Connect(transport: other, retryPolicy: nil, configuration: changed).request(Route("/todos")).wait(
            timeout: 5)
        XCTAssertEqual(other.requests.first?.url?.query, "a=1&flag")
    }

    func testValidServerConfigurationsStillMakeTheirURLs() throws {
        XCTAssertEqual(
            ServerConfiguration(host: "api.example.com", port: 8443, basePath: "v2/a%20b").baseURL?.absoluteString,
            "https://api.example.com:8443/v2/a%20b")
        XCTAssertEqual(
            ServerConfiguration(scheme: .http, host: "[::1]", port: 8080).baseURL?.absoluteString,
            "http://[::1]:8080")
        XCTAssertEqual(ServerConfiguration(host: "127.0.0.1").baseURL?.absoluteString, "https://127.0.0.1")
    }

    // MARK: Base URLs and endpoints

    func testABaseURLWithoutAHostIsRefusedSoAPathValueCannotBecomeTheHost() throws {
        for base in ["https://", "https:", "https://:443", "https://user@", "mailto:someone", "urn:isbn:1"] {
            let connector = Endpoint(
                baseURL: try XCTUnwrap(URL(string: base)), endpoint: "/{tenant}/profile",
                parameters: Parameter.path(key: "tenant", value: "evil.com"),
                authorizationToken: .bearer(token: "SECRET"))
            let error = try refusal(connector)
            XCTAssertTrue(error.message.contains("no host"), "\(base): \(error.message)")
            XCTAssertFalse(error.description.contains("SECRET"))
        }
    }

    /// A base URL whose port no connection can use (Foundation parses `:99999`) is refused before sending,
    /// saying so, instead of failing in the transport as an unexplained "bad URL" (NSURLErrorDomain -1000).
    func testABaseURLWithAPortOutOfRangeIsRefused() throws {
        for (base, port) in [
            ("https://api.example.com:99999", "99999"), ("http://127.0.0.1:65536/v1", "65536"),
            ("http://[::1]:0", "0"), ("https://user:pw@api.example.com:123456?k=1", "123456"),
        ] {
            let connector = Endpoint(
                baseURL: try XCTUnwrap(URL(string: base), base), endpoint: "/{id}",
                parameters: Parameter.path(key: "id", value: "1"))
            let error = try refusal(connector)
            XCTAssertTrue(error.message.contains("port \(port) is not in 1...65535"), "\(base): \(error.message)")
            XCTAssertFalse(error.description.contains("pw"), error.description)
        }
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(transport: transport, retryPolicy: nil)
        for base in ["https://api.example.com:65535", "https://api.example.com:", "http://[::1]:1/v1", "http://[::1]"] {
            _ = try connect.request(Endpoint(baseURL: try XCTUnwrap(URL(string: base)), endpoint: "/t")).wait(
                timeout: 5)
        }
        XCTAssertEqual(transport.requests.count, 4)
    }

    /// A user name whose escape decodes to a colon (`ann%3Ax:pw@`) is refused, nothing sent: it goes as Basic
    /// credentials, `ann:x:pw`, which the server splits at the first colon, reading the user `ann` with the password
    /// `x:pw` (RFC 7617 forbids a colon in the user-id, as ``AuthorizationToken/basic(username:password:)`` does).
    func testAUserNameWithAnEscapedColonIsRefusedRatherThanSentAsAnotherUser() throws {
        for base in ["https://ann%3Ax:pw@api.example.com", "http://ann%3a:pw@127.0.0.1:8080/v1"] {
            let error = try refusal(Endpoint(baseURL: try XCTUnwrap(URL(string: base)), endpoint: "/me"))
            guard case .invalidURL? = error.invalidRequestReason else { return XCTFail("\(base): \(error)") }
            XCTAssertTrue(error.message.contains("user name holds a colon"), error.message)
            XCTAssertFalse(error.description.contains(":pw"), error.description)
            // The request the connector describes is refused as well, for code that sends it another way.
            XCTAssertThrowsError(
                try Endpoint(baseURL: try XCTUnwrap(URL(string: base)), endpoint: "/me").asURLRequest(), base
            ) { XCTAssertTrue("\($0)".contains("user name holds a colon"), "\($0)") }
        }
        // A user name without one, and a colon in the password, which the split leaves whole, still go.
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(transport: transport, retryPolicy: nil)
        for base in ["https://ann:pw@api.example.com", "https://ann:p%3Aw:x@api.example.com"] {
            _ = try connect.request(Endpoint(baseURL: try XCTUnwrap(URL(string: base)), endpoint: "/me")).wait(
                timeout: 5)
        }
        XCTAssertEqual(transport.requests.count, 2)
    }

    /// RFC 7617 forbids control characters in the user-id and password a URL's user info is sent as: an escaped
    /// newline (`pw%0A`) went out base64-encoded in `Authorization: Basic`, for the server to reject unseen. Refused,
    /// nothing sent, the credentials not shown.
    func testAUserInfoWithAnEscapedControlCharacterIsRefusedRatherThanSentEncoded() throws {
        for base in [
            "https://ann:s3cret%0A@api.example.com", "https://ann%0D%0A:s3cret@api.example.com",
            "http://ann:s3%00cret@127.0.0.1:8080/v1", "https://ann:s3%09cret@api.example.com",
        ] {
            let error = try refusal(Endpoint(baseURL: try XCTUnwrap(URL(string: base)), endpoint: "/me"))
            guard case .invalidURL? = error.invalidRequestReason else { return XCTFail("\(base): \(error)") }
            XCTAssertTrue(error.message.contains("control character"), error.message)
            XCTAssertFalse(error.description.contains("cret"), error.description)
            XCTAssertThrowsError(
                try Endpoint(baseURL: try XCTUnwrap(URL(string: base)), endpoint: "/me").asURLRequest(), base
            ) { XCTAssertTrue("\($0)".contains("control character"), "\($0)") }
        }
    }

    func testAWholeURLAsTheEndpointIsRefused() throws {
        let base = try XCTUnwrap(URL(string: "https://api.example.com"))
        for endpoint in ["https://other.example.com/v1/items", "HTTP://other.example.com", "s3+x.y://bucket/key"] {
            let error = try refusal(Endpoint(baseURL: base, endpoint: endpoint))
            XCTAssertTrue(error.message.contains("whole URL"), error.message)
        }
        let quick = Connect(host: "api.example.com", transport: FakeTransport.answering(.json(string: "{}")))
        XCTAssertThrowsError(try quick.request("https://other.example.com/v1/items").wait(timeout: 5))
        // A colon later in a path is an ordinary path character.
        let transport = FakeTransport.answering(.json(string: "{}"))
        _ = try Connect(transport: transport, retryPolicy: nil)
            .request(Endpoint(baseURL: base, endpoint: "/items/a:b")).wait(timeout: 5)
        XCTAssertEqual(transport.requests.first?.url?.absoluteString, "https://api.example.com/items/a:b")
    }

    func testARelativeBaseURLKeepsItsPathUnderTheServer() throws {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(
            transport: transport, retryPolicy: nil,
            configuration: ServerConfiguration(host: "api.example.com", basePath: "/v2"))
        let relative = Endpoint(baseURL: try XCTUnwrap(URL(string: "/api/v1/")), endpoint: "/todos")
        _ = try connect.request(relative).wait(timeout: 5)
        _ = try connect.request(Route("/todos")).wait(timeout: 5)
        XCTAssertEqual(
            transport.requests.map { $0.url?.absoluteString },
            ["https://api.example.com/v2/api/v1/todos", "https://api.example.com/v2/todos"])
    }

    func testANoServerErrorHidesSecretsInTheEndpoint() throws {
        let error = try refusal(Route("/reset?token=SECRET1&page=2"))
        XCTAssertFalse(String(reflecting: error).contains("SECRET1"))
        XCTAssertFalse(error.invalidRequestReason.map { "\($0)" }?.contains("SECRET1") ?? true)
        XCTAssertTrue(error.message.contains("page=2"), error.message)

        let quick = Connect(transport: FakeTransport.answering(.json(string: "{}")))
        let result = try quick.request("/login?password=SECRET2").waitForResult(timeout: 5)
        guard case .failure(let quickError) = result else { return XCTFail("expected a failure") }
        XCTAssertFalse(String(reflecting: quickError).contains("SECRET2"))
    }

    // MARK: Timeouts

    /// FoundationNetworking stops the process on a timeout that does not fit in whole milliseconds; the
    /// transport hands it a year instead, whoever set it (a connector, or a middleware after the builder).
    func testAnInfiniteTimeoutGoesThroughURLSession() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/ok") { _ in .json(["ok": true]) }
        let endless = RequestOptions(middlewares: [TimeoutMiddleware(seconds: 1e300)])
        let connect = Connect(transport: URLSessionTransport(), retryPolicy: nil)
        let connector = Endpoint(baseURL: server.baseURL, endpoint: "/ok", timeout: .infinity)
        XCTAssertNoThrow(try connect.request(connector).wait(timeout: 30))
        XCTAssertNoThrow(try connect.request(connector, options: endless).wait(timeout: 30))
        XCTAssertEqual(server.requestCount(for: "GET", path: "/ok"), 2)
    }

    /// A session whose own request timeout is infinite (or too large for milliseconds), as one leaving idle timing to
    /// `RequestOptions.idleTimeout` sets it: FoundationNetworking converts it for every request before it looks at
    /// the request's, and stopped the process.
    func testASessionTimeoutTooLargeForFoundationNetworkingGoesThrough() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/ok") { _ in .json(["ok": true]) }
        for seconds in [TimeInterval.infinity, 1e300, .nan] {
            let configuration = URLSessionTransport.defaultConfiguration
            configuration.timeoutIntervalForRequest = seconds
            configuration.timeoutIntervalForResource = seconds
            let connect = Connect(transport: URLSessionTransport(configuration: configuration), retryPolicy: nil)
            XCTAssertNoThrow(try connect.request(Endpoint(baseURL: server.baseURL, endpoint: "/ok")).wait(timeout: 30))
        }
        XCTAssertEqual(server.requestCount(for: "GET", path: "/ok"), 3)
    }

    /// The same timeouts on a session of the app's, which the transport cannot change: on Linux each request fails,
    /// typed, nothing sent (FoundationNetworking stopped the process at the first); elsewhere they go through.
    func testAnAppsSessionWithATimeoutTooLargeForFoundationNetworkingFailsTyped() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/ok") { _ in .json(["ok": true]) }
        for seconds in [TimeInterval.infinity, 1e300, .nan] {
            for resource in [false, true] {
                let configuration = URLSessionTransport.defaultConfiguration
                if resource {
                    configuration.timeoutIntervalForResource = seconds
                } else {
                    configuration.timeoutIntervalForRequest = seconds
                }
                let session = URLSession(configuration: configuration)
                defer { session.finishTasksAndInvalidate() }
                let connect = Connect(transport: URLSessionTransport(session: session), retryPolicy: nil)
                let call = connect.request(Endpoint(baseURL: server.baseURL, endpoint: "/ok"))
                #if canImport(FoundationNetworking)
                    let error = try XCTUnwrap(connectError(of: call))
                    XCTAssertEqual(error.kind, .transport, error.description)
                    XCTAssertTrue(error.message.contains("URLSessionTransport(configuration:)"), error.message)
                #else
                    XCTAssertNoThrow(try call.wait(timeout: 30))
                #endif
            }
        }
        #if canImport(FoundationNetworking)
            XCTAssertEqual(server.requestCount(for: "GET", path: "/ok"), 0)
        #endif
    }

    /// A request's own timeout, not the session's, bounds a plain request (a GET, no body): FoundationNetworking
    /// takes the session's `timeoutIntervalForRequest` for a request whose timeout it was never told was set (one
    /// made with `URLRequest(url:cachePolicy:timeoutInterval:)`), so a 10 s request on a 1 s session failed at 1 s,
    /// said as "the timeout of 10 s".
    func testARequestsOwnTimeoutOutlastsAShorterSessionTimeout() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/slow") { _ in LocalServer.Response.json(["ok": true]).delayed(by: 2) }
        let configuration = URLSessionTransport.defaultConfiguration
        configuration.timeoutIntervalForRequest = 1
        let connect = Connect(transport: URLSessionTransport(configuration: configuration), retryPolicy: nil)
        XCTAssertNoThrow(
            try connect.request(Endpoint(baseURL: server.baseURL, endpoint: "/slow", timeout: 10)).wait(timeout: 30))
    }

    private struct TimeoutMiddleware: Middleware {
        let seconds: TimeInterval
        func intercept(
            _ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next
        ) -> Future<ConnectResponse> {
            request.timeoutInterval = seconds
            return next(request)
        }
    }

    func testATimeoutThatIsNotPositiveIsRefusedInsteadOfSilentlyWaitingForever() throws {
        let base = try XCTUnwrap(URL(string: "https://api.example.com"))
        for timeout in [0, -1, TimeInterval.nan, -TimeInterval.infinity] {
            let error = try refusal(Endpoint(baseURL: base, endpoint: "/todos", timeout: timeout))
            guard case .invalidTimeout(let reported)? = error.invalidRequestReason else {
                return XCTFail("\(timeout): \(String(describing: error.invalidRequestReason))")
            }
            XCTAssertTrue(reported.isNaN ? timeout.isNaN : reported == timeout)
        }
        let transport = FakeTransport.answering(.json(string: "{}"))
        _ = try Connect(transport: transport, retryPolicy: nil)
            .request(Endpoint(baseURL: base, endpoint: "/todos", timeout: .infinity)).wait(timeout: 5)
        XCTAssertEqual(transport.requests.count, 1, "infinity means no timeout")
    }
}
