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
    /// A server whose `/start` redirects to `/landing`, each answering after its delay in seconds.
    private func startRedirectingServer(redirectAfter: TimeInterval = 0, landingAfter: TimeInterval = 0) throws
        -> LocalServer
    {
        let server = try LocalServer.started()
        server.route("GET", "/landing") { _ in .json(["ok": true]).delayed(by: landingAfter) }
        server.route("GET", "/start") { _ in .redirect(to: "/landing").delayed(by: redirectAfter) }
        return server
    }

    /// Sends `/start` with `transfer` through a transport that holds its first redirect's answer, cancels the
    /// request while the answer is held, then lets the answer go. Checks that the request ended as cancelled, that
    /// the redirect was not followed, and that the same transport still answers afterwards: by then the session's
    /// work queue has run whatever the held answer queued (the crash happened there).
    private func assertCancelledWhileTheRedirectIsHeld(
        transfer: TransferOptions, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let server = try startRedirectingServer()
        defer { server.stop() }
        let reached = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let redirects = Protected(0)
        let delegate = SessionDelegate(beforeAnsweringRedirect: { _ in
            let isFirst = redirects.withLock { count in
                count += 1
                return count == 1
            }
            guard isFirst else { return }
            reached.signal()
            release.wait()
        })
        let transport = URLSessionTransport(
            configuration: URLSessionTransport.defaultConfiguration, delegate: delegate)

        let future = transport.send(URLRequest(url: server.baseURL.appendingPathComponent("start")), transfer: transfer)
        XCTAssertEqual(
            reached.wait(timeout: .now() + 30), .success, "no redirect reached the transport", file: file, line: line)
        future.cancel()
        release.signal()

        let result = try XCTUnwrap(future.waitForResult(timeout: 30), file: file, line: line)
        guard case .failure(let error) = result else {
            return XCTFail("the cancelled request succeeded", file: file, line: line)
        }
        XCTAssertEqual((error as? ConnectError)?.kind, .cancelled, file: file, line: line)
        let landing = server.baseURL.appendingPathComponent("landing")
        let followed = server.requestCount(for: "GET", path: "/landing")
        // On Linux the cancelled task gets no answer; Apple's URLSession is answered and decides itself.
        if SessionDelegate.answersOnlyRunningTasks {
            XCTAssertEqual(followed, 0, "the redirect was followed", file: file, line: line)
        }
        XCTAssertNoThrow(try transport.send(URLRequest(url: landing)).wait(), file: file, line: line)
        XCTAssertEqual(server.requestCount(for: "GET", path: "/landing"), followed + 1, file: file, line: line)
    }

    func testAPlainRequestCancelledWhileItsRedirectIsAnsweredEndsCancelled() throws {
        try assertCancelledWhileTheRedirectIsHeld(transfer: TransferOptions())
    }

    func testATransferCancelledWhileItsRedirectIsAnsweredEndsCancelled() throws {
        // A size limit makes it a transfer with its own delegate (on Linux, its own session too).
        try assertCancelledWhileTheRedirectIsHeld(transfer: TransferOptions(maxResponseBytes: 1 << 20))
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

    /// Without a held answer: requests cancelled at moments spread over their first 2 ms, so that some
    /// cancellations fall while the redirect is being answered. Without the fix, each of 5 runs of this test
    /// stopped the process. It passes whatever the timing, and checks that every request ends.
    func testRequestsCancelledAroundTheirRedirectAllEnd() throws {
        let server = try startRedirectingServer()
        defer { server.stop() }
        let transport = URLSessionTransport()
        let start = server.baseURL.appendingPathComponent("start")

        var ended = 0
        for index in 0..<1_000 {
            let future = transport.send(URLRequest(url: start))
            let cancelAt = DispatchTime.now().uptimeNanoseconds + UInt64(index % 100) * 20_000
            while DispatchTime.now().uptimeNanoseconds < cancelAt {}
            future.cancel()
            if (try? future.waitForResult(timeout: 30)) != nil { ended += 1 }
        }

        XCTAssertEqual(ended, 1_000)
        XCTAssertNoThrow(try transport.send(URLRequest(url: start)).wait())
    }

    /// Requests whose timeouts (1 to 5.5 ms) fall around a redirect answered after 1 ms. FoundationNetworking's
    /// own timer, when it fired while the answer was on its way, stopped the process too (3 of 3 runs of 600
    /// such requests, before its timer was moved past the transport's deadline); every request has to end.
    func testRequestsTimingOutAroundTheirRedirectAllEnd() throws {
        let server = try startRedirectingServer(redirectAfter: 0.001, landingAfter: 0.002)
        defer { server.stop() }
        let transport = URLSessionTransport()

        var ended = 0
        for batch in 0..<20 {
            let futures = (0..<30).map { index in
                var request = URLRequest(url: server.baseURL.appendingPathComponent("start"))
                request.timeoutInterval = 0.001 + Double((batch + index) % 10) * 0.0005
                return transport.send(request)
            }
            ended += futures.filter { (try? $0.waitForResult(timeout: 30)) != nil }.count
        }

        XCTAssertEqual(ended, 600)
    }
}
