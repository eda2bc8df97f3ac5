import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Default headers are set only where a request has no field of that name, ignoring case: one field each.
final class DefaultHeaderOverrideTests: XCTestCase {
    func testARequestsFieldReplacesADefaultWrittenInAnotherCase() throws {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let configuration = ServerConfiguration(
            host: "h",
            defaultHeaders: [
                HTTPHeader(name: "content-type", value: "text/plain"), HTTPHeader(name: "X-M", value: "1"),
                HTTPHeader(name: "x-m", value: "2"),
            ])
        let connect = Connect(
            transport: transport, retryPolicy: nil, configuration: configuration,
            settings: Connect.Settings(defaultHeaders: [HTTPHeader(name: "ACCEPT", value: "text/csv")]))
        let route = Route(
            "/x", method: .post,
            headers: [
                HTTPHeader(name: "Content-Type", value: "application/json"), HTTPHeader(name: "accept", value: "*/*"),
            ])
        _ = try connect.request(route).wait(timeout: 5)
        let fields = try XCTUnwrap(transport.requests.first?.allHTTPHeaderFields)
        XCTAssertEqual(fields.count, 3, "\(fields)")
        XCTAssertEqual(transport.requests.first?.value(forHTTPHeaderField: "Content-Type"), "application/json")
        XCTAssertEqual(transport.requests.first?.value(forHTTPHeaderField: "Accept"), "*/*")
        XCTAssertEqual(transport.requests.first?.value(forHTTPHeaderField: "X-M"), "2", "the later default")
    }

    func testADefaultHeaderWithCRLFFailsTheCallNothingSent() {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let configuration = ServerConfiguration(
            host: "h", defaultHeaders: [HTTPHeader(name: "X-A", value: "a\r\nX-Evil: 1")])
        let connect = Connect(transport: transport, retryPolicy: nil, configuration: configuration)
        XCTAssertThrowsError(try connect.request(Route("/x")).wait(timeout: 5)) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .invalidRequest, "\(error)")
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }
}
