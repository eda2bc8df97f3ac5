import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request cancelled while its redirect waits for the transport's answer ends as cancelled and follows nothing.
///
/// On Linux, FoundationNetworking stopped the process ("Received callback for HTTP redirection, but we're not
/// waiting for it") when the redirect was answered after the cancellation. These tests hold the answer back until
/// the request has been cancelled: without the fix, the first of them crashes the test process.
final class RedirectCancellationTests: XCTestCase {
    /// A server whose `/start` redirects to `/landing`.
    private func startRedirectingServer() throws -> LocalServer {
        let server = try LocalServer.started()
        server.route("GET", "/landing") { _ in .json(["ok": true]) }
        server.route("GET", "/start") { _ in .redirect(to: "/landing") }
        return server
    }

    /// Sends `/start` through a transport that holds its first redirect's answer, cancels the request while the
    /// answer is held, then lets the answer go; returns the cancelled request's outcome.
    private func cancelWhileTheRedirectIsHeld(
        on server: LocalServer, transfer: TransferOptions
    ) throws -> (result: Result<ConnectResponse, any Error>, transport: URLSessionTransport) {
        let reached = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holdsNext = Protected(true)
        let delegate = SessionDelegate(beforeAnsweringRedirect: { _ in
            guard
                holdsNext.withLock({ holds in
                    defer { holds = false }
                    return holds
                })
            else { return }
            reached.signal()
            release.wait()
        })
        let transport = URLSessionTransport(
            configuration: URLSessionTransport.defaultConfiguration, delegate: delegate)

        let future = transport.send(URLRequest(url: server.baseURL.appendingPathComponent("start")), transfer: transfer)
        XCTAssertEqual(reached.wait(timeout: .now() + 30), .success, "the redirect reached the transport")
        future.cancel()
        release.signal()
        let result = try XCTUnwrap(future.waitForResult(timeout: 30))
        return (result, transport)
    }

    /// After the cancelled request, the same transport still answers: the session's work queue has run whatever
    /// the held answer queued (the crash happened there), and the server saw no request for the redirect's target.
    private func assertTheTransportStillWorks(
        _ transport: URLSessionTransport, server: LocalServer, file: StaticString = #filePath, line: UInt = #line
    ) {
        let landing = server.baseURL.appendingPathComponent("landing")
        XCTAssertEqual(
            server.requestCount(for: "GET", path: "/landing"), 0, "the redirect was not followed", file: file,
            line: line)
        XCTAssertNoThrow(try transport.send(URLRequest(url: landing)).wait(), file: file, line: line)
        XCTAssertEqual(server.requestCount(for: "GET", path: "/landing"), 1, file: file, line: line)
    }

    func testAPlainRequestCancelledWhileItsRedirectIsAnsweredEndsCancelled() throws {
        let server = try startRedirectingServer()
        defer { server.stop() }

        let (result, transport) = try cancelWhileTheRedirectIsHeld(on: server, transfer: TransferOptions())

        guard case .failure(let error) = result else { return XCTFail("the cancelled request succeeded") }
        XCTAssertEqual((error as? ConnectError)?.kind, .cancelled)
        assertTheTransportStillWorks(transport, server: server)
    }

    func testATransferCancelledWhileItsRedirectIsAnsweredEndsCancelled() throws {
        let server = try startRedirectingServer()
        defer { server.stop() }

        // A size limit makes it a transfer with its own delegate (on Linux, its own session too).
        let (result, transport) = try cancelWhileTheRedirectIsHeld(
            on: server, transfer: TransferOptions(maxResponseBytes: 1 << 20))

        guard case .failure(let error) = result else { return XCTFail("the cancelled request succeeded") }
        XCTAssertEqual((error as? ConnectError)?.kind, .cancelled)
        assertTheTransportStillWorks(transport, server: server)
    }

    func testARedirectAnsweredBeforeAnyCancellationIsFollowed() throws {
        let server = try startRedirectingServer()
        defer { server.stop() }
        let answered = Protected(0)
        let delegate = SessionDelegate(beforeAnsweringRedirect: { _ in answered.withLock { $0 += 1 } })
        let transport = URLSessionTransport(
            configuration: URLSessionTransport.defaultConfiguration, delegate: delegate)

        let response = try transport.send(URLRequest(url: server.baseURL.appendingPathComponent("start"))).wait()

        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(answered.snapshot, 1)
        XCTAssertEqual(server.requestCount(for: "GET", path: "/landing"), 1)
    }
}
