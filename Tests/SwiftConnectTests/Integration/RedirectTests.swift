import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Credentials never follow a redirect to another origin.
final class RedirectTests: IntegrationTestCase {
    private struct Endpoint: Connector, AuthorizedConnector {
        var baseURL: URL
        var endpoint: String
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [HTTPHeader(name: "Cookie", value: "session=abc")] }
        var parameters: (any ParametersRepresentable)? { nil }
        var authorizationToken: AuthorizationToken? { .bearer(token: "secret-token") }
    }

    /// Two servers: `origin` answers `/start` with a redirect to `/landing` on `other`, a different port.
    private func startRedirectingToAnotherOrigin() throws -> (origin: LocalServer, other: LocalServer) {
        let origin = try LocalServer.started()
        let other = try LocalServer.started()
        other.route("GET", "/landing") { _ in .json(["ok": true]) }
        origin.route("GET", "/start") { _ in
            .redirect(to: other.baseURL.appendingPathComponent("landing").absoluteString)
        }
        return (origin, other)
    }

    /// A redirect's short body is read to its end, the engine's included, so that its connection carries the next
    /// hop: dropped as its last byte came, before the engine saw the end, it cost AsyncHTTPClient the connection.
    func testARedirectsShortBodyLeavesItsConnectionForTheNextHop() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/start") { _ in
            var moved = LocalServer.Response.redirect(to: "/next", status: 301)
            moved.body = Data("moved".utf8)
            return moved
        }
        server.route("GET", "/next") { _ in .json(["ok": true]) }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        for _ in 0..<20 {
            _ = try connect.request(Route("/start", baseURL: server.baseURL)).wait(timeout: 20)
        }
        let connections = Set(server.requests.map(\.connectionID))
        XCTAssertEqual(connections.count, 1, "\(server.requests.map(\.connectionID))")
    }

    func testAuthorizationIsDroppedWhenARedirectChangesHost() throws {
        let (origin, other) = try startRedirectingToAnotherOrigin()
        defer {
            origin.stop()
            other.stop()
        }

        // Cookieless: the request's own `Cookie` must not cross, whatever the shared storage (which FoundationNetworking
        // keeps on disk) holds for the other host.
        let connect = Connect(transport: TransportUnderTest.makeCookieless(), retryPolicy: nil)
        XCTAssertNoThrow(try connect.request(Endpoint(baseURL: origin.baseURL, endpoint: "/start")).wait())

        XCTAssertEqual(origin.requests.first?.header("Authorization"), "Bearer secret-token")
        let landed = try XCTUnwrap(other.requests.first)
        XCTAssertNil(landed.header("Authorization"), "credentials must not reach another origin")
        XCTAssertNil(landed.header("Cookie"))
    }

    func testEveryHeaderNamedLikeASecretIsDroppedWhenARedirectChangesHost() throws {
        let (origin, other) = try startRedirectingToAnotherOrigin()
        defer {
            origin.stop()
            other.stop()
        }
        let secrets = [
            "X-Authorization", "X-Session-Id", "X-Credential", "X-Signature", "X-Passwd", "X-Client-Cookie",
            "X-Private-Key", "X-Api-Key", "X-Auth-Token",
        ]
        let headers = secrets.map { HTTPHeader(name: $0, value: "secret-of-\($0)") }
        let start = Route(
            "/start", baseURL: origin.baseURL, headers: headers + [HTTPHeader(name: "X-Trace", value: "trace-1")])

        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        XCTAssertNoThrow(try connect.request(start).wait())

        let sent = try XCTUnwrap(origin.requests.first)
        let landed = try XCTUnwrap(other.requests.first)
        for name in secrets {
            XCTAssertEqual(sent.header(name), "secret-of-\(name)", "the origin gets \(name)")
            XCTAssertNil(landed.header(name), "\(name) must not reach another origin")
        }
        XCTAssertEqual(landed.header("X-Trace"), "trace-1", "other headers still follow")
    }

    func testAuthorizationIsKeptOnASameOriginRedirect() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/landing") { _ in .json(["ok": true]) }
        server.route("GET", "/start") { _ in .redirect(to: "/landing") }

        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        XCTAssertNoThrow(try connect.request(Endpoint(baseURL: server.baseURL, endpoint: "/start")).wait())
        XCTAssertEqual(server.requests.last?.header("Authorization"), "Bearer secret-token")
    }

    /// `server` answers `POST /a` with `status` to `/b`, which answers with the size of the body it got.
    private func startRedirectingABody(status: Int) throws -> LocalServer {
        let server = try LocalServer.started()
        server.route("POST", "/a") { _ in .redirect(to: "/b", status: status) }
        server.route("*", "/b") { request in .json(["received": request.body.count]) }
        return server
    }

    private func file(of size: Int) -> File {
        File(name: "a.bin", key: "file", mimeType: .octetStream, data: Data(repeating: 7, count: size))
    }

    /// FoundationNetworking follows a 307 without the body but with its `Content-Length`: an upload waited for
    /// the server, which waited for the body, until the timeout. The upload is sent again whole, from memory or
    /// from its file, on every platform.
    func testAnUploadRedirectedWith307NeitherHangsNorArrivesEmpty() throws {
        let server = try startRedirectingABody(status: 307)
        defer { server.stop() }
        let onDisk = FileManager.default.temporaryDirectory.appendingPathComponent("redirect-\(UUID().uuidString)")
        try Data(repeating: 7, count: 1000).write(to: onDisk)
        defer { try? FileManager.default.removeItem(at: onDisk) }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        for file in [file(of: 1000), File(key: "file", fileURL: onDisk)] {  // in memory, then streamed from disk
            server.resetStatistics()
            let upload = connect.upload(
                files: [file], fields: [], to: Route("/a", baseURL: server.baseURL, method: .post, timeout: 10))
            XCTAssertNoThrow(try upload.wait(timeout: 20))
            XCTAssertEqual(server.requests.map(\.path), ["/a", "/b"])
            XCTAssertEqual(server.requests.last?.body, server.requests.first?.body, "the same body, again")
            XCTAssertGreaterThan(server.requests.last?.body.count ?? 0, 1000)
        }
    }

    /// A POST with a body redirected by a 308 reached the new location with an empty body, and succeeded. It is
    /// sent again with its body, on every platform.
    func testABodyIsNeverSentEmptyAfterA308() throws {
        let server = try startRedirectingABody(status: 308)
        defer { server.stop() }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        let post = Route(
            "/a", baseURL: server.baseURL, method: .post,
            parameters: Parameter.body(Data(#"{"name":"report"}"#.utf8), contentType: "application/json"))
        let progress = RequestOptions(progress: { _ in })
        for options in [RequestOptions(), progress] {  // the plain path and the streaming one
            XCTAssertNoThrow(try connect.request(post, options: options).wait(timeout: 20))
        }
        XCTAssertEqual(server.requestCount(for: "POST", path: "/b"), 2)
        for request in server.requests where request.path == "/b" {
            XCTAssertEqual(request.body.count, 17, "the body is sent again, or not at all")
        }
    }

    /// An upload answered 303 is followed with a GET, without the upload's `Content-Length`, which made the
    /// server wait for a body that never came.
    func testAnUploadRedirectedWith303IsFollowedWithAPlainGET() throws {
        let server = try startRedirectingABody(status: 303)
        defer { server.stop() }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        let upload = connect.upload(
            files: [file(of: 1000)], fields: [], to: Route("/a", baseURL: server.baseURL, method: .post, timeout: 10))
        XCTAssertNoThrow(try upload.wait(timeout: 20))
        let landed = try XCTUnwrap(server.requests.last)
        XCTAssertEqual(landed.method, "GET")
        XCTAssertEqual(landed.path, "/b")
        XCTAssertNil(landed.header("Content-Length"))
        XCTAssertNil(landed.header("Content-Type"))
    }

    /// A redirect to a `file:`, `data:`, `mailto:` or `ftp:` URL is not followed: FoundationNetworking took such a
    /// `Location` as a path on the same server (`file:///etc/hostname` became `GET /etc/hostname`), and its answer
    /// was handed out as the one from the URL the server named.
    func testARedirectToAnotherSchemeIsNotFollowedAndIsNeverSentToTheSameServer() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "*") { request in .text("served \(request.path)") }
        let locations = [
            "file:///etc/hostname", "data:text/plain,hello", "mailto:someone@example.com",
            "ftp://127.0.0.1:\(server.port)/pub", "FILE:///etc/hostname", "javascript:alert(1)",
        ]
        for (location, error) in errorsOfRedirects(to: locations, on: server) {
            XCTAssertEqual(error?.kind, .httpStatus, location)
            XCTAssertTrue(
                error?.message.hasSuffix("not followed: it leaves HTTP") ?? false, error?.message ?? location)
        }
    }

    /// A `Location` with a `user:password@` part is not followed: libcurl turned it into `Authorization: Basic`
    /// for the new URL (replacing the request's own credentials, on another host too), so whoever wrote the
    /// `Location` chose the credentials sent, silently.
    func testARedirectToAURLWithUserinfoIsNotFollowed() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "*") { _ in .json(["ok": true]) }
        let locations = [
            "http://user:pass@localhost:\(server.port)/landing", "http://user:pass@127.0.0.1:\(server.port)/landing",
            "http://user@localhost:\(server.port)/landing", "//user:pass@localhost:\(server.port)/landing",
        ]
        for (location, error) in errorsOfRedirects(
            to: locations, on: server, headers: [.authorization("Bearer mine")])
        {
            XCTAssertTrue(
                error?.message.hasSuffix("not followed: its URL carries credentials (user:password@)") ?? false,
                error?.message ?? location)
            XCTAssertFalse(error?.description.contains("pass@") ?? true, error?.description ?? location)
        }
    }

    /// Sends a request that `server` redirects to each of `locations`, plainly and size-limited (the two paths of
    /// the transport), and checks that the 302 was the answer and nothing else was requested. Returns each
    /// request's error, for the caller to check why the redirect was not followed.
    private func errorsOfRedirects(
        to locations: [String], on server: LocalServer, headers: [HTTPHeader] = [],
        file: StaticString = #filePath, line: UInt = #line
    ) -> [(location: String, error: ConnectError?)] {
        for (index, location) in locations.enumerated() {
            server.route("GET", "/away/\(index)") { _ in .redirect(to: location) }
        }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        var errors: [(location: String, error: ConnectError?)] = []
        for (index, location) in locations.enumerated() {
            for options in [RequestOptions(), RequestOptions(maxResponseBytes: 1 << 20)] {
                server.resetStatistics()
                let route = Route(
                    "/away/\(index)", baseURL: server.baseURL, headers: headers, timeout: 10, options: options)

                let error = connectError(of: connect.request(route))

                XCTAssertEqual(error?.statusCode, 302, location, file: file, line: line)
                XCTAssertEqual(server.requests.map(\.path), ["/away/\(index)"], location, file: file, line: line)
                errors.append((location, error))
            }
        }
        return errors
    }

    /// The userinfo of the request's own URL is the caller's: a same-origin redirect keeps it, as it keeps the
    /// other credentials.
    func testTheRequestsOwnUserinfoFollowsASameOriginRedirect() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/landing") { _ in .json(["ok": true]) }
        server.route("GET", "/start") { _ in .redirect(to: "/landing") }
        let base = try XCTUnwrap(URL(string: "http://me:secret@127.0.0.1:\(server.port)"))
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)

        XCTAssertNoThrow(try connect.request(Route("/start", baseURL: base, timeout: 10)).wait(timeout: 20))

        XCTAssertEqual(server.requests.map(\.path), ["/start", "/landing"])
        XCTAssertEqual(server.requests.last?.header("Authorization"), "Basic bWU6c2VjcmV0")
    }

    /// `maxRedirects = 0` makes a redirect the answer (JustAPIs' `followRedirects = false`, Alamofire's
    /// `.doNotFollow`, AsyncHTTPClient's `.disallow`): its status and `Location`, the target never asked.
    func testNoRedirectIsFollowedWithMaxRedirectsZero() async throws {
        // Given
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/s/x7") { _ in .redirect(to: "/landing") }
        server.route("GET", "/landing") { _ in .json(["ok": true]) }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        // When: the documented example, pointed at the test's server
        var options = RequestOptions(acceptsEveryStatus: true)
        options.maxRedirects = 0
        let link = Route("/s/x7", baseURL: server.baseURL)
        let response = try await connect.response(for: link, options: options).value
        let target = response.header("Location")
        // Then
        XCTAssertEqual(response.statusCode, 302)
        XCTAssertEqual(target, "/landing")
        XCTAssertEqual(server.requests.map(\.path), ["/s/x7"])

        // And without `acceptsEveryStatus`, the error handler reports the redirect as any status outside 2xx
        var strict = RequestOptions()
        strict.maxRedirects = 0
        do {
            _ = try await connect.request(link, options: strict).value
            XCTFail("expected the 302 to fail the call")
        } catch let error as ConnectError {
            XCTAssertEqual(error.statusCode, 302)
        }
        XCTAssertEqual(server.requests.map(\.path), ["/s/x7", "/s/x7"])
    }

    /// A limit counts the redirects followed: as many as it allows are followed, one more fails the call.
    func testMaxRedirectsBoundsTheRedirectsFollowed() throws {
        // Given: /hop/3 redirects to /hop/2, then /hop/1, then /hop/0, which answers
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/hop/:n") { request in
            let left = Int(request.path.split(separator: "/").last ?? "") ?? 0
            return left == 0 ? .json(["ok": true]) : .redirect(to: "/hop/\(left - 1)")
        }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        var three = RequestOptions()
        three.maxRedirects = 3
        var two = RequestOptions()
        two.maxRedirects = 2
        // When, then
        XCTAssertNoThrow(try connect.request(Route("/hop/3", baseURL: server.baseURL), options: three).wait())
        XCTAssertThrowsError(try connect.request(Route("/hop/3", baseURL: server.baseURL), options: two).wait()) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .transport)
            XCTAssertTrue("\($0)".contains("more than 2"), "\($0)")
        }
    }

    /// Redirects that go round (`/ping` to `/pong` and back) fail at the limit saying they loop, and where; a chain
    /// that only goes on (above) says no such thing.
    func testRedirectsThatGoRoundSayTheyLoop() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/ping") { _ in .redirect(to: "/pong") }
        server.route("GET", "/pong") { _ in .redirect(to: "/ping?token=s3cr3t") }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        var options = RequestOptions()
        options.maxRedirects = 4
        XCTAssertThrowsError(try connect.request(Route("/ping", baseURL: server.baseURL), options: options).wait()) {
            let message = ($0 as? ConnectError)?.message ?? "\($0)"
            XCTAssertEqual(($0 as? ConnectError)?.kind, .transport, message)
            XCTAssertTrue(message.contains("more than 4 times, in a loop: "), message)
            XCTAssertTrue(message.contains("/pong → "), message)
            XCTAssertTrue(message.contains("/ping?token="), message)
            XCTAssertTrue(message.hasSuffix("/pong"), message)
            XCTAssertFalse(message.contains("s3cr3t"), message)
        }
        let chain = RedirectRule.loop(
            through: (1...8).map { URL(string: "https://a.test/\($0)")! }, next: URL(string: "https://a.test/2")!)
        XCTAssertEqual(
            chain,
            ", in a loop: https://a.test/2 → https://a.test/3 → … (4 more) → https://a.test/8 → https://a.test/2")
        XCTAssertEqual(
            RedirectRule.loop(
                through: [URL(string: "https://a.test/1")!], next: URL(string: "https://a.test/2")!), "")
    }

    /// A negative limit is a mistake: the call fails, nothing sent.
    func testANegativeMaxRedirectsFailsTheCallUnsent() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        var options = RequestOptions()
        options.maxRedirects = -1
        XCTAssertThrowsError(try connect.request(Route("/s/x7", baseURL: server.baseURL), options: options).wait()) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .invalidRequest)
        }
        XCTAssertTrue(server.requests.isEmpty)
    }

    func testTheSchemeOfALocationIsReadAsRFC3986Does() {
        XCTAssertEqual(RedirectRules.scheme(of: "HTTPS://example.com/a"), "HTTPS")
        XCTAssertEqual(RedirectRules.scheme(of: "svn+ssh://host/x"), "svn+ssh")
        XCTAssertEqual(RedirectRules.scheme(of: "data:text/plain,hi"), "data")
        for relative in ["/next?to=http://x", "next/a:b", "./a:b", "//other.example/x", "?q=a:b", "#a:b", "1a:b", ""] {
            XCTAssertNil(RedirectRules.scheme(of: relative), relative)
        }
    }

    func testRedirectRuleForDowngradeAndPorts() {
        var request = ConnectRequest(url: URL(string: "http://example.com/next")!)
        request.setValue("Bearer x", forHTTPHeaderField: "Authorization")
        let fromHTTPS = ConnectRequest(url: URL(string: "https://example.com/start")!)
        XCTAssertNil(RedirectRules.redirect(request, from: fromHTTPS).value(forHTTPHeaderField: "Authorization"))
        let samePortImplicit = ConnectRequest(url: URL(string: "http://example.com:80/start")!)
        XCTAssertEqual(
            RedirectRules.redirect(request, from: samePortImplicit).value(forHTTPHeaderField: "Authorization"),
            "Bearer x"
        )
    }
}
