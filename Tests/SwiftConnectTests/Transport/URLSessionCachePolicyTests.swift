import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request's `cachePolicy` reaches URLSession on every path through ``URLSessionTransport``: the hops the core
/// sends itself (a size limit, progress, a redirect followed) were made without it, so a connector's
/// `.reloadIgnoringLocalCacheData` was lost there and a session with a URL cache (Apple's) answered from it.
/// FoundationNetworking's URL cache answers nothing (two calls to a `max-age=600` answer reach the server twice), so
/// the policy is read from the tasks the session runs, which the delegate sees at each redirect.
final class URLSessionCachePolicyTests: XCTestCase {
    func testEveryHopCarriesTheRequestsCachePolicy() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/a") { _ in .redirect(to: "/b") }
        server.route("GET", "/b") { _ in .redirect(to: "/c") }
        server.route("GET", "/c") { _ in .json(["ok": true]) }
        let policies = Recorder<String>()
        let delegate = SessionDelegate(beforeAnsweringRedirect: { task in
            let path = task.originalRequest?.url?.path ?? "?"
            let policy = task.originalRequest?.cachePolicy == .reloadIgnoringLocalCacheData ? "reload" : "other"
            policies.append("\(path) \(policy)")
        })
        let transport = URLSessionTransport(configuration: URLSessionTransport.defaultConfiguration, delegate: delegate)
        var limited = TransferOptions()
        limited.maxResponseBytes = 1 << 20
        for transfer in [TransferOptions(), limited] {
            let request = ConnectRequest(
                url: server.baseURL.appendingPathComponent("a"), cachePolicy: .reloadIgnoringLocalCacheData)
            let response = try transport.send(request, transfer: transfer).wait(timeout: 10)
            XCTAssertEqual(response.statusCode, 200)
        }
        XCTAssertEqual(policies.values, ["/a reload", "/b reload", "/a reload", "/b reload"])
    }
}
