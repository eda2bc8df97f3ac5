import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A redirect goes where its `Location` says, encoding included: an encoded slash (`%2F`) in a relative `Location`
/// stays one on every engine (FoundationNetworking decoded it into a separator, asking for another resource: see
/// `SessionDelegate.withLocationAsSent(_:answering:)`).
final class RedirectEncodingTests: IntegrationTestCase {
    func testAnEncodedSlashInARedirectStaysEncoded() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/files/*") { request in .text(request.path) }
        let port = server.port
        // In order (not a dictionary, whose order changes from one process to the next): the replay tests run this
        // test again in another process, and the same `/go` must get the same answers in the same order.
        let cases: KeyValuePairs = [
            "/files/a%2Fb.txt": "/files/a%2Fb.txt",
            "files/c%2Fd.txt": "/files/c%2Fd.txt",
            "//127.0.0.1:\(port)/files/e%2Ff.txt": "/files/e%2Ff.txt",
            "http://127.0.0.1:\(port)/files/g%2Fh.txt": "/files/g%2Fh.txt",
        ]
        for (location, path) in cases {
            server.route("GET", "/go") { _ in LocalServer.Response(status: 302, headers: [("Location", location)]) }
            var request = URLRequest(url: server.baseURL.appendingPathComponent("go"))
            request.timeoutInterval = 10

            let response = try TransportUnderTest.make().send(request).wait(timeout: 20)

            XCTAssertEqual(response.statusCode, 200, location)
            XCTAssertEqual(String(decoding: response.data, as: UTF8.self), path, location)
            let answered = response.response.url.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: false) }
            XCTAssertEqual(answered?.percentEncodedPath, path, location)
        }
    }
}
