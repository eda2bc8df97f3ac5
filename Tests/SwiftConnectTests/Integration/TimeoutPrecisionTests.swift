import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A timeout that is not a whole number of seconds is kept as it is.
///
/// FoundationNetworking truncates a timeout set with `timeoutInterval =` to whole seconds for its own timer: 0.5 s
/// failed a request within milliseconds, and 1.25 s failed it after 1 s. The transport's deadline keeps the
/// timeout and FoundationNetworking's timer is moved past it (``URLSessionTransport/forSession(_:)``).
final class TimeoutPrecisionTests: IntegrationTestCase {
    private var server: LocalServer!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        server.route("GET", "/soon") { _ in .json(["ok": true]).delayed(by: 0.1) }
        server.route("GET", "/silent") { _ in .json(["ok": true]).delayed(by: 30) }
    }

    override func tearDown() {
        server.stop()
        server = nil
    }

    private func request(_ path: String, timeout: TimeInterval) -> URLRequest {
        var request = URLRequest(url: server.baseURL.appendingPathComponent(path))
        request.timeoutInterval = timeout
        return request
    }

    func testAHalfSecondTimeoutLetsAnAnswerAfterATenthOfASecondThrough() throws {
        let response = try TransportUnderTest.make().send(request("/soon", timeout: 0.5)).wait()

        XCTAssertEqual(response.statusCode, 200)
    }

    func testAFractionalTimeoutIsNotCutToWholeSeconds() throws {
        let started = DispatchTime.now()

        let result = try TransportUnderTest.make().send(request("/silent", timeout: 1.25)).waitForResult(timeout: 30)

        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        guard case .failure(let error) = result else { return XCTFail("a silent server answered") }
        XCTAssertEqual((error as? ConnectError)?.kind, .timedOut)
        XCTAssertGreaterThanOrEqual(elapsed, 1.25, "the request gave up before its timeout")
    }

    func testATimeoutAMiddlewareSetsOnTheRequestIsKept() throws {
        let connect = Connect(
            transport: TransportUnderTest.make(), middlewares: [HalfSecondTimeout()], retryPolicy: nil)

        let response = try connect.response(for: Route("/soon", baseURL: server.baseURL)).wait()

        XCTAssertEqual(response.statusCode, 200)
    }
}

/// Sets every request's timeout to half a second, the way an app's middleware would.
private struct HalfSecondTimeout: Middleware {
    func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
        ConnectResponse
    > {
        request.timeoutInterval = 0.5
        return next(request)
    }
}
