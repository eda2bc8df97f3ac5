import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request with a body redirected by a status that keeps its method (307, 308, or 301/302 for a method other
/// than POST) reaches the new location with its method, body and headers, on every platform: on Linux the
/// transport sends it again itself, FoundationNetworking being unable to. Two local servers are two origins.
final class BodyRedirectTests: IntegrationTestCase {
    private static let json = Data(#"{"name":"report"}"#.utf8)

    private static let secretHeaders = RedirectFixtures.secretHeaders

    /// The plain (completion-handler) path and the streaming (delegate) one.
    private static let paths = [RequestOptions(), RequestOptions(progress: { _ in })]

    private static func route(
        _ path: String, on server: LocalServer, method: HTTPMethod = .post, headers: [HTTPHeader] = [],
        timeout: TimeInterval = 10, options: RequestOptions = RequestOptions()
    ) -> Route {
        Route(
            path, baseURL: server.baseURL, method: method,
            parameters: Parameter.body(json, contentType: "application/json"), headers: headers, timeout: timeout,
            options: options)
    }

    private func assertCarriesTheBody(
        _ request: LocalServer.Request?, method: String, _ context: String, file: StaticString = #filePath,
        line: UInt = #line
    ) {
        guard let request else { return XCTFail("no request: \(context)", file: file, line: line) }
        XCTAssertEqual(request.method, method, context, file: file, line: line)
        XCTAssertEqual(request.body, Self.json, context, file: file, line: line)
        XCTAssertEqual(request.header("Content-Length"), "\(Self.json.count)", context, file: file, line: line)
        XCTAssertEqual(request.header("Content-Type"), "application/json", context, file: file, line: line)
    }

    func testA307Or308KeepsTheMethodAndTheBody() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        for status in [307, 308] { server.route("*", "/a\(status)") { _ in .redirect(to: "/b", status: status) } }
        server.route("*", "/b") { request in .json(["received": request.body.count]) }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)

        for status in [307, 308] {
            for method in [HTTPMethod.post, .put, .patch, .delete] {
                for (index, options) in Self.paths.enumerated() {
                    let context = "\(status) \(method.rawValue) path \(index)"
                    server.resetStatistics()
                    let route = Self.route("/a\(status)", on: server, method: method, options: options)

                    XCTAssertNoThrow(try connect.request(route).wait(timeout: 20), context)

                    XCTAssertEqual(server.requests.map(\.path), ["/a\(status)", "/b"], context)
                    assertCarriesTheBody(server.requests.last, method: method.rawValue, context)
                }
            }
        }
    }

    /// A 301 or 302 keeps a PUT (only a POST becomes a GET): the body goes too.
    func testA301Or302KeepsAPUTAndItsBody() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        for status in [301, 302] { server.route("PUT", "/a\(status)") { _ in .redirect(to: "/b", status: status) } }
        server.route("*", "/b") { _ in .json(["ok": true]) }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)

        for status in [301, 302] {
            for (index, options) in Self.paths.enumerated() {
                server.resetStatistics()
                let route = Self.route("/a\(status)", on: server, method: .put, options: options)

                XCTAssertNoThrow(try connect.request(route).wait(timeout: 20), "\(status)")

                XCTAssertEqual(server.requests.map(\.path), ["/a\(status)", "/b"], "\(status) path \(index)")
                assertCarriesTheBody(server.requests.last, method: "PUT", "\(status) path \(index)")
            }
        }
    }

    /// To another origin the body goes, the credentials do not.
    func testACrossOriginRedirectKeepsTheBodyAndDropsTheCredentials() throws {
        let origin = try LocalServer.started()
        let other = try LocalServer.started()
        defer {
            origin.stop()
            other.stop()
        }
        origin.route("POST", "/a") { _ in .redirect(to: "http://127.0.0.1:\(other.port)/b", status: 307) }
        other.route("POST", "/b") { _ in .json(["ok": true]) }
        let connect = Connect(transport: TransportUnderTest.makeCookieless(), retryPolicy: nil)
        let headers = Self.secretHeaders + [HTTPHeader(name: "X-Trace", value: "trace-1")]

        for (index, options) in Self.paths.enumerated() {
            origin.resetStatistics()
            other.resetStatistics()
            let route = Self.route("/a", on: origin, headers: headers, options: options)

            XCTAssertNoThrow(try connect.request(route).wait(timeout: 20), "path \(index)")

            let sent = try XCTUnwrap(origin.requests.first)
            let landed = try XCTUnwrap(other.requests.first)
            assertCarriesTheBody(landed, method: "POST", "path \(index)")
            for header in Self.secretHeaders {
                XCTAssertEqual(sent.header(header.name), header.value, "path \(index)")
                XCTAssertNil(landed.header(header.name), "\(header.name) reached another origin, path \(index)")
            }
            XCTAssertEqual(landed.header("X-Trace"), "trace-1", "path \(index)")
        }
    }

    /// A → (307) A → (308) B → 200: every hop gets the body; B gets no credentials, A gets them twice.
    func testAChainOf307And308IsFollowedToTheEnd() throws {
        let origin = try LocalServer.started()
        let other = try LocalServer.started()
        defer {
            origin.stop()
            other.stop()
        }
        origin.route("POST", "/a") { _ in .redirect(to: "/b", status: 307) }
        origin.route("POST", "/b") { _ in .redirect(to: "http://127.0.0.1:\(other.port)/c", status: 308) }
        other.route("POST", "/c") { _ in .json(["ok": true]) }
        let transport = TransportUnderTest.makeCookieless()
        let connect = Connect(transport: transport, retryPolicy: nil)
        let headers = [HTTPHeader(name: "Authorization", value: "Bearer secret-token")]

        for (index, options) in Self.paths.enumerated() {
            origin.resetStatistics()
            other.resetStatistics()

            XCTAssertNoThrow(
                try connect.request(Self.route("/a", on: origin, headers: headers, options: options)).wait(timeout: 20))

            XCTAssertEqual(origin.requests.map(\.path), ["/a", "/b"], "path \(index)")
            XCTAssertEqual(other.requests.map(\.path), ["/c"], "path \(index)")
            for sent in origin.requests + other.requests { assertCarriesTheBody(sent, method: "POST", sent.path) }
            XCTAssertEqual(origin.requests.last?.header("Authorization"), "Bearer secret-token")
            XCTAssertNil(other.requests.first?.header("Authorization"))
        }
    }

    /// The response names the URL that answered; the request is the one the caller sent (what debug output shows
    /// and what a retry starts again from), as for the redirects URLSession follows itself.
    func testTheResponseNamesTheFinalURLAndTheRequestSent() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("POST", "/a") { _ in .redirect(to: "/b", status: 307) }
        server.route("POST", "/b") { _ in .json(["ok": true]) }
        var request = URLRequest(url: server.baseURL.appendingPathComponent("a"), timeoutInterval: 10)
        request.httpMethod = "POST"
        request.httpBody = Self.json
        let transport = TransportUnderTest.make()

        for transfer in [TransferOptions(), TransferOptions(maxResponseBytes: 1 << 20)] {
            let response = try transport.send(request, transfer: transfer).wait(timeout: 20)

            XCTAssertEqual(response.statusCode, 200)
            XCTAssertEqual(response.response.url?.path, "/b")
            XCTAssertEqual(response.request.url?.path, "/a")
        }
    }

    /// A loop of 307s ends as a loop of 302s does, with URLSession's "too many redirects", not at the timeout.
    func testALoopOf307sFailsWithTooManyRedirects() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("POST", "/loop") { _ in .redirect(to: "/loop", status: 307) }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)

        for (index, options) in Self.paths.enumerated() {
            server.resetStatistics()
            let error = connectError(
                of: connect.request(Self.route("/loop", on: server, timeout: 60, options: options)))

            XCTAssertEqual(error?.kind, .transport, "path \(index): \(String(describing: error))")
            XCTAssertEqual((error?.underlyingError as? URLError)?.code, .httpTooManyRedirects, "path \(index)")
            XCTAssertEqual(error?.request?.url?.path, "/loop")
            XCTAssertLessThanOrEqual(server.requests.count, 21, "path \(index)")
            XCTAssertGreaterThanOrEqual(server.requests.count, 2, "path \(index)")
        }
    }

    /// A hop the transport sends itself and one URLSession follows count against the same limit: a 307 to a loop
    /// of 302s (GET after a 303) ends with "too many redirects" just as soon.
    func testTheHopLimitCountsEveryHop() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("POST", "/a") { _ in .redirect(to: "/b", status: 307) }
        server.route("POST", "/b") { _ in .redirect(to: "/loop", status: 303) }
        server.route("GET", "/loop") { _ in .redirect(to: "/loop") }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        let plain = try LocalServer.started()
        defer { plain.stop() }
        plain.route("GET", "/loop") { _ in .redirect(to: "/loop") }
        _ = connectError(of: connect.request(Route("/loop", baseURL: plain.baseURL, timeout: 60)))
        let limit = plain.requests.count

        for (index, options) in Self.paths.enumerated() {
            server.resetStatistics()
            let error = connectError(of: connect.request(Self.route("/a", on: server, timeout: 60, options: options)))

            XCTAssertEqual((error?.underlyingError as? URLError)?.code, .httpTooManyRedirects, "path \(index)")
            XCTAssertEqual(server.requests.count, limit, "path \(index)")
        }
    }

    /// A 307 to a `file:` URL or to a URL with its own `user:password@` is not followed, body or not: the 3xx
    /// is the answer.
    func testA307LeavingHTTPOrBringingCredentialsIsNotFollowed() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("*", "*") { request in .text("served \(request.path)") }
        let cases = [
            ("file:///etc/hostname", "not followed: it leaves HTTP"),
            (
                "http://user:pass@127.0.0.1:\(server.port)/b",
                "not followed: its URL carries credentials (user:password@)"
            ),
        ]
        for (index, (location, _)) in cases.enumerated() {
            server.route("POST", "/away/\(index)") { _ in .redirect(to: location, status: 307) }
        }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)

        for (index, (location, reason)) in cases.enumerated() {
            for options in Self.paths {
                server.resetStatistics()
                let error = connectError(
                    of: connect.request(Self.route("/away/\(index)", on: server, options: options)))

                XCTAssertEqual(error?.statusCode, 307, location)
                XCTAssertEqual(server.requests.map(\.path), ["/away/\(index)"], location)
                XCTAssertTrue(error?.message.hasSuffix(reason) ?? false, error?.message ?? location)
            }
        }
    }

    /// A body streamed from an `InputStream` cannot be read twice: the 307 is the answer, on every platform (the
    /// core follows the redirects of every request with a body, and a stream is not sent again).
    func testAStreamBodyIsNotSentAgain() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("POST", "/a") { _ in .redirect(to: "/b", status: 307) }
        server.route("*", "/b") { _ in .json(["ok": true]) }
        var request = URLRequest(url: server.baseURL.appendingPathComponent("a"), timeoutInterval: 10)
        request.httpMethod = "POST"
        request.httpBodyStream = InputStream(data: Self.json)
        request.setValue("\(Self.json.count)", forHTTPHeaderField: "Content-Length")

        let transport = TransportUnderTest.make()

        let response = try transport.send(request).wait(timeout: 20)

        XCTAssertEqual(response.statusCode, 307)
        XCTAssertEqual(
            RedirectRules.notFollowed(response),
            " to '/b', not followed: the request body came from a stream, which cannot be read again")
        XCTAssertEqual(server.requestCount(for: "POST", path: "/b"), 0)
    }

    /// A 303 after a POST whose body came from a stream needs no body again: it is followed with a plain GET, with
    /// no `Content-Length` left to make the server wait for a body.
    func testAStreamBodysPOSTIsFollowedThroughA303WithAPlainGET() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("POST", "/a") { _ in .redirect(to: "/b", status: 303) }
        server.route("GET", "/b") { _ in .json(["ok": true]) }
        var request = URLRequest(url: server.baseURL.appendingPathComponent("a"), timeoutInterval: 10)
        request.httpMethod = "POST"
        request.httpBodyStream = InputStream(data: Self.json)
        request.setValue("\(Self.json.count)", forHTTPHeaderField: "Content-Length")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")

        let response = try TransportUnderTest.make().send(request).wait(timeout: 20)

        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(server.requests.map { "\($0.method) \($0.path)" }, ["POST /a", "GET /b"])
        XCTAssertEqual(server.requests.first?.body, Self.json)
        XCTAssertNil(server.requests.last?.header("Content-Length"))
        XCTAssertNil(server.requests.last?.header("Content-Type"))
    }

    /// An upload from a file is read again for the new location.
    func testAnUploadFromAFileIsSentAgain() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("POST", "/a") { _ in .redirect(to: "/b", status: 307) }
        server.route("POST", "/b") { request in .json(["received": request.body.count]) }
        let onDisk = FileManager.default.temporaryDirectory.appendingPathComponent("redirect-\(UUID().uuidString)")
        try Data(repeating: 7, count: 5000).write(to: onDisk)
        defer { try? FileManager.default.removeItem(at: onDisk) }
        var request = URLRequest(url: server.baseURL.appendingPathComponent("a"), timeoutInterval: 10)
        request.httpMethod = "POST"
        request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")

        let transport = TransportUnderTest.make()

        let response = try transport.send(request, transfer: TransferOptions(bodyFile: onDisk)).wait(timeout: 20)

        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(server.requests.map(\.path), ["/a", "/b"])
        XCTAssertEqual(server.requests.last?.body, Data(repeating: 7, count: 5000))
        XCTAssertEqual(server.requests.last?.header("Content-Type"), "application/octet-stream")
    }

    /// A download and a size-limited request (each on a session of its own, on Linux) follow the 307 too: the file
    /// holds the final answer, and the last progress report is the final hop's.
    func testADownloadAndASizeLimitedRequestFollowTheRedirect() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        let payload = Data(repeating: 9, count: 3000)
        server.route("POST", "/a") { _ in .redirect(to: "/b", status: 307) }
        server.route("POST", "/b") { _ in .data(payload) }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("redirect-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("answer.bin")
        let reports = Protected<[TransferProgress]>([])
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        let options = RequestOptions(progress: { report in reports.withLock { $0.append(report) } })

        let file = try connect.download(Self.route("/a", on: server, options: options), to: destination)
            .wait(timeout: 20)

        XCTAssertEqual(try Data(contentsOf: file), payload)
        XCTAssertEqual(reports.snapshot.last?.bytesReceived, 3000)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["answer.bin"])
        assertCarriesTheBody(server.requests.last, method: "POST", "download")

        server.resetStatistics()
        let limited = Self.route("/a", on: server, options: RequestOptions(maxResponseBytes: 1 << 20))
        XCTAssertEqual(try connect.request(limited).wait(timeout: 20), payload)
        assertCarriesTheBody(server.requests.last, method: "POST", "size limit")
    }

    /// Cancelling while the second hop is in flight cancels that hop; nothing more is sent.
    func testCancellingDuringTheSecondHopStopsIt() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        let arrived = DispatchSemaphore(value: 0)
        server.route("POST", "/a") { _ in .redirect(to: "/b", status: 307) }
        server.route("POST", "/b") { _ in
            arrived.signal()
            return .status(200).withFault(.neverFinishHeaders)
        }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)

        for (index, options) in Self.paths.enumerated() {
            server.resetStatistics()
            let future = connect.request(Self.route("/a", on: server, timeout: 60, options: options))
            XCTAssertEqual(arrived.wait(timeout: .now() + 20), .success, "path \(index)")

            future.cancel()

            XCTAssertEqual(connectError(of: future)?.kind, .cancelled, "path \(index)")
            XCTAssertTrue(server.waitUntilIdle(timeout: 20), "the second hop was let go, path \(index)")
            XCTAssertEqual(server.requests.map(\.path), ["/a", "/b"], "path \(index)")
        }
    }

    /// The timeout counts from the first send: a second hop that never answers fails the request when the
    /// original timeout passes, not a whole timeout after the redirect.
    func testTheTimeoutSpansEveryHop() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("POST", "/a") { _ in .redirect(to: "/b", status: 307).delayed(by: 1.5) }
        server.route("POST", "/b") { _ in .status(200).withFault(.neverFinishHeaders) }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)

        for (index, options) in Self.paths.enumerated() {
            server.resetStatistics()
            let started = Date()
            let error = connectError(of: connect.request(Self.route("/a", on: server, timeout: 2, options: options)))
            let elapsed = Date().timeIntervalSince(started)

            XCTAssertEqual(error?.kind, .timedOut, "path \(index)")
            XCTAssertEqual(error?.request?.url?.path, "/a", "path \(index)")
            XCTAssertEqual(server.requests.map(\.path), ["/a", "/b"], "path \(index)")
            // Restarted at the redirect, it would have ended 3.5 s after the start at the earliest.
            XCTAssertLessThan(elapsed, 3.3, "path \(index)")
        }
    }
}
