import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server's default query items follow the rules of a connector's `.query` items.
final class ServerConfigurationQueryItemTests: XCTestCase {
    /// `?=v` names nothing a server could look up: a `.query` item with an empty name is refused, and so is a default.
    func testADefaultQueryItemWithAnEmptyNameFailsTheCallNothingSent() throws {
        for item in [URLQueryItem(name: "", value: "x"), URLQueryItem(name: "", value: nil)] {
            let transport = FakeTransport.answering(.json(string: "{}"))
            let configuration = ServerConfiguration(
                host: "h", defaultQueryItems: [URLQueryItem(name: "v", value: "2"), item])
            let connect = Connect(transport: transport, retryPolicy: nil, configuration: configuration)
            let built = ConnectRequest(method: .get, url: try XCTUnwrap(URL(string: "https://h/b")))
            for call in [connect.request(Route("/a")).map { _ in () }, connect.response(for: built).map { _ in () }] {
                XCTAssertThrowsError(try call.wait(timeout: 5), "\(item)") { error in
                    XCTAssertEqual((error as? ConnectError)?.kind, .invalidRequest, "\(error)")
                    XCTAssertEqual(
                        (error as? ConnectError)?.invalidRequestReason?.isInvalidParameter, true, "\(error)")
                }
            }
            XCTAssertEqual(transport.requests.map { $0.url?.absoluteString }, [], "\(item)")
        }
    }

    /// A base URL's own query is sent as it was written, `?=x` included: it is the URL's text, as an endpoint's is.
    func testABaseURLsWrittenQueryIsSentAsWritten() throws {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let configuration = ServerConfiguration(baseURL: try XCTUnwrap(URL(string: "https://h/api?=x&k=1")))
        let connect = Connect(transport: transport, retryPolicy: nil, configuration: configuration)
        _ = try connect.request(Route("/a")).wait(timeout: 5)
        XCTAssertEqual(transport.requests.map { $0.url?.absoluteString }, ["https://h/api/a?=x&k=1"])
    }
}

extension ConnectError.InvalidRequestReason {
    fileprivate var isInvalidParameter: Bool {
        if case .invalidParameter(let key, _) = self { return key.isEmpty }
        return false
    }
}
