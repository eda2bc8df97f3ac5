import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a redirected request carries, end to end through `URLSessionTransport` and two local servers: the
/// credentials from every source the library adds them from, the body, and what is logged and cached.
final class RedirectCredentialTests: IntegrationTestCase {
    private static let secretHeaders = RedirectFixtures.secretHeaders

    /// `localhost` and `127.0.0.1` are two hosts, even on the same port: the credentials stay with the first.
    /// Two local servers, two origins (their ports differ), stopped when the test ends.
    private func twoOrigins() throws -> (origin: LocalServer, other: LocalServer) {
        let origin = try LocalServer.started()
        addTeardownBlock { origin.stop() }
        let other = try LocalServer.started()
        addTeardownBlock { other.stop() }
        return (origin, other)
    }

    func testAnotherHostNameForTheSameServerGetsNoCredentials() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/landing") { _ in .json(["ok": true]) }
        server.route("GET", "/start") { _ in .redirect(to: "http://localhost:\(server.port)/landing") }
        let connect = Connect(transport: TransportUnderTest.makeCookieless(), retryPolicy: nil)
        let headers = Self.secretHeaders + [HTTPHeader(name: "X-Trace", value: "trace-1")]

        for options in [RequestOptions(), RequestOptions(maxResponseBytes: 1 << 20)] {
            server.resetStatistics()
            let route = Route("/start", baseURL: server.baseURL, headers: headers, timeout: 10, options: options)
            XCTAssertNoThrow(try connect.request(route).wait(timeout: 20))

            XCTAssertEqual(server.requests.map(\.path), ["/start", "/landing"])
            let sent = try XCTUnwrap(server.requests.first)
            let landed = try XCTUnwrap(server.requests.last)
            XCTAssertEqual(landed.header("Host"), "localhost:\(server.port)")
            for header in Self.secretHeaders {
                XCTAssertEqual(sent.header(header.name), header.value)
                XCTAssertNil(landed.header(header.name), "\(header.name) reached another host")
            }
            XCTAssertEqual(landed.header("X-Trace"), "trace-1")
        }
    }

    /// The server configuration's default headers and query items, and the credential an
    /// `AuthenticationMiddleware` signs with, stay with the origin too.
    func testConfigurationDefaultsAndTheMiddlewaresCredentialStayWithTheOrigin() throws {
        let (origin, other) = try twoOrigins()
        other.route("GET", "/landing") { _ in .json(["ok": true]) }
        origin.route("GET", "/start") { _ in .redirect(to: "http://127.0.0.1:\(other.port)/landing") }
        let configuration = ServerConfiguration(
            scheme: .http, host: "127.0.0.1", port: origin.port,
            defaultHeaders: [HTTPHeader(name: "X-API-Key", value: "secret-key")],
            defaultQueryItems: [URLQueryItem(name: "api_key", value: "secret-query-key")])
        let authentication = AuthenticationMiddleware(credential: .bearer(token: "secret-token")) { _ in
            Future(value: .bearer(token: "renewed"))
        }
        let connect = Connect(
            transport: TransportUnderTest.makeCookieless(), middlewares: [authentication], retryPolicy: nil,
            configuration: configuration)

        XCTAssertNoThrow(try connect.request(Route("/start", timeout: 10)).wait(timeout: 20))

        let sent = try XCTUnwrap(origin.requests.first)
        XCTAssertEqual(sent.header("X-API-Key"), "secret-key")
        XCTAssertEqual(sent.header("Authorization"), "Bearer secret-token")
        XCTAssertEqual(sent.queryItems.first?.value, "secret-query-key")
        let landed = try XCTUnwrap(other.requests.first)
        XCTAssertNil(landed.header("X-API-Key"))
        XCTAssertNil(landed.header("Authorization"))
        XCTAssertTrue(landed.queryItems.isEmpty, "the query is the Location's, not the original one's")
    }

    /// Once they have left for another origin, credentials do not come back when it redirects to the first one.
    func testCredentialsDoNotComeBackAfterARoundTripThroughAnotherOrigin() throws {
        let (origin, other) = try twoOrigins()
        origin.route("GET", "/start") { _ in .redirect(to: "http://127.0.0.1:\(other.port)/bounce") }
        other.route("GET", "/bounce") { _ in .redirect(to: "http://127.0.0.1:\(origin.port)/back") }
        origin.route("GET", "/back") { _ in .json(["ok": true]) }
        let connect = Connect(transport: TransportUnderTest.makeCookieless(), retryPolicy: nil)
        let route = Route("/start", baseURL: origin.baseURL, headers: Self.secretHeaders, timeout: 10)

        XCTAssertNoThrow(try connect.request(route).wait(timeout: 20))

        XCTAssertEqual(origin.requests.map(\.path), ["/start", "/back"])
        for landed in other.requests + origin.requests.dropFirst() {
            for header in Self.secretHeaders {
                XCTAssertNil(landed.header(header.name), "\(header.name) reached \(landed.path)")
            }
        }
    }

    /// A POST answered 301, 302 or 303 is followed with a GET, without its body or the headers describing it.
    func testAPOSTRedirectedWith301302Or303BecomesAGETWithoutItsBody() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        for status in [301, 302, 303] {
            server.route("POST", "/a\(status)") { _ in .redirect(to: "/b", status: status) }
        }
        server.route("*", "/b") { request in .json(["received": request.body.count]) }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        let body = Parameter.body(Data(#"{"name":"report"}"#.utf8), contentType: "application/json")

        for status in [301, 302, 303] {
            server.resetStatistics()
            let post = Route("/a\(status)", baseURL: server.baseURL, method: .post, parameters: body, timeout: 10)
            XCTAssertNoThrow(try connect.request(post).wait(timeout: 20), "\(status)")

            let landed = try XCTUnwrap(server.requests.last)
            XCTAssertEqual(landed.method, "GET", "\(status)")
            XCTAssertEqual(landed.path, "/b", "\(status)")
            XCTAssertEqual(landed.body.count, 0, "\(status)")
            XCTAssertNil(landed.header("Content-Type"), "\(status)")
            XCTAssertNil(landed.header("Content-Length"), "\(status)")
        }
    }

    /// A redirect loop ends at once with URLSession's "too many redirects", not at the timeout.
    func testARedirectLoopFailsWithTooManyRedirects() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/loop") { _ in .redirect(to: "/loop") }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)

        for options in [RequestOptions(), RequestOptions(maxResponseBytes: 1 << 20)] {
            server.resetStatistics()
            let route = Route("/loop", baseURL: server.baseURL, timeout: 60, options: options)
            let error = connectError(of: connect.request(route))

            XCTAssertEqual(error?.kind, .transport, "\(String(describing: error))")
            XCTAssertEqual((error?.underlyingError as? URLError)?.code, .httpTooManyRedirects)
            XCTAssertLessThanOrEqual(server.requests.count, 21)
        }
    }

    /// A `Location` with a fragment is followed to its path; the fragment is never sent.
    func testALocationWithAFragmentIsFollowedWithoutSendingIt() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/landing") { _ in .json(["ok": true]) }
        server.route("GET", "/start") { _ in .redirect(to: "landing?page=2#section") }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)

        XCTAssertNoThrow(try connect.request(Route("/start", baseURL: server.baseURL, timeout: 10)).wait(timeout: 20))

        XCTAssertEqual(server.requests.map(\.target), ["/start", "/landing?page=2"])
    }

    /// A `Location` without a fragment keeps the request's (RFC 9110, 10.2.2): the answer's URL names it, and it is
    /// never sent.
    func testARequestsFragmentFollowsARedirectThatNamesNone() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/landing") { _ in .json(["ok": true]) }
        server.route("GET", "/start") { _ in .redirect(to: "/landing") }
        let url = try XCTUnwrap(URL(string: "\(server.baseURL.absoluteString)/start#section"))

        let response = try TransportUnderTest.make().send(URLRequest(url: url, timeoutInterval: 10)).wait(timeout: 20)

        XCTAssertEqual(response.response.url?.absoluteString, "\(server.baseURL.absoluteString)/landing#section")
        XCTAssertEqual(server.requests.map(\.target), ["/start", "/landing"])
    }

    /// Debug output of a redirected request shows the request as sent, redacted, and nothing of the URL it
    /// was redirected to.
    func testDebugOutputOfARedirectedRequestShowsNoSecret() throws {
        let (origin, other) = try twoOrigins()
        other.route("GET", "/landing") { _ in .json(["ok": true]) }
        origin.route("GET", "/start") { _ in
            .redirect(to: "http://127.0.0.1:\(other.port)/landing?token=secret-in-location")
        }
        let logger = MemoryLogger()
        let connect = Connect(
            transport: TransportUnderTest.makeCookieless(), retryPolicy: nil, settings: Connect.Settings(logger: logger)
        )
        let route = Route("/start?api_key=secret-query", baseURL: origin.baseURL, headers: Self.secretHeaders)

        XCTAssertNoThrow(try connect.request(route, debugResponse: true).wait(timeout: 20))

        let output = logger.messages.joined(separator: "\n")
        XCTAssertFalse(output.isEmpty)
        for secret in ["secret-token", "cHJveHk6c2VjcmV0", "secret-cookie", "secret-key", "secret-auth-token"]
            + ["secret-query", "secret-in-location"]
        {
            XCTAssertFalse(output.contains(secret), "\(secret) is shown:\n\(output)")
        }
    }

    /// A retried request starts again from the original URL, with its credentials, and the origin it was
    /// redirected to still gets none.
    func testARetryAfterARedirectStartsAgainFromTheOrigin() throws {
        let (origin, other) = try twoOrigins()
        let answered = Protected(0)
        other.route("GET", "/landing") { _ in
            let count = answered.withLock { count in
                count += 1
                return count
            }
            return count == 1 ? .status(503) : .json(["ok": true])
        }
        origin.route("GET", "/start") { _ in .redirect(to: "http://127.0.0.1:\(other.port)/landing") }
        let policy = RetryPolicy(jitter: RetryPolicy.noJitter, clock: ImmediateRetryClock())
        let connect = Connect(transport: TransportUnderTest.makeCookieless(), retryPolicy: policy)
        let route = Route("/start", baseURL: origin.baseURL, headers: Self.secretHeaders, timeout: 10)

        XCTAssertNoThrow(try connect.request(route).wait(timeout: 20))

        XCTAssertEqual(origin.requests.map(\.path), ["/start", "/start"])
        XCTAssertEqual(other.requests.map(\.path), ["/landing", "/landing"])
        for sent in origin.requests { XCTAssertEqual(sent.header("Authorization"), "Bearer secret-token") }
        for landed in other.requests {
            for header in Self.secretHeaders { XCTAssertNil(landed.header(header.name)) }
        }
    }

    /// The response cache stores a redirected response under the URL that was asked for, and serves it from
    /// there without following the redirect again.
    func testTheCacheKeysARedirectedResponseOnTheURLAskedFor() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/landing") { _ in .json(["ok": true]) }
        server.route("GET", "/start") { _ in .redirect(to: "/landing") }
        let cache = ResponseCache()
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil, responseCache: cache)
        let route = Route(
            "/start", baseURL: server.baseURL, timeout: 10, options: RequestOptions(cache: CacheRule(timeToLive: 60)))

        let first = try connect.request(route).wait(timeout: 20)
        let second = try connect.request(route).wait(timeout: 20)

        XCTAssertEqual(first, second)
        XCTAssertEqual(server.requests.map(\.path), ["/start", "/landing"], "the second answer came from the cache")
        XCTAssertEqual(cache.count, 1)
        let key = ResponseCache.key(for: try route.asURLRequest(), rule: CacheRule(timeToLive: 60))
        XCTAssertTrue(key.hasSuffix("/start"), key)
    }
}
