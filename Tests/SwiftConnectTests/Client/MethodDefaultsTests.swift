import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Defaults per method and per call (issue 38, item 4): headers, deadline and cache rule, the most specific level
/// winning: call, then connector, then the method's, then the client's.
final class MethodDefaultsTests: XCTestCase {
    private func level(_ name: String) -> HTTPHeader { HTTPHeader(name: "X-Level", value: name) }

    private func client(_ transport: FakeTransport, cache: ResponseCache? = nil) -> Connect {
        Connect(
            transport: transport, responseCache: cache, configuration: ServerConfiguration(host: "api.test"),
            settings: Connect.Settings(
                options: RequestOptions(headers: [level("client")], timeout: 50),
                methodOptions: [
                    .get: RequestOptions(cache: CacheRule(timeToLive: 60), headers: [level("method")], timeout: 10)
                ]))
    }

    func testHeadersTheMostSpecificLevelWins() throws {
        let transport = FakeTransport.answering(.status(204))
        let connect = client(transport)
        let calls: [(Route, RequestOptions, String)] = [
            (Route("/a", method: .post), RequestOptions(), "client"),
            (Route("/a"), RequestOptions(), "method"),
            (Route("/a", headers: [level("connector")]), RequestOptions(), "connector"),
            (
                Route("/a", headers: [level("connector")], options: RequestOptions(headers: [level("options")])),
                RequestOptions(), "options"
            ),
            (Route("/a", headers: [level("connector")]), RequestOptions(headers: [level("call")]), "call"),
            (Route("/a", method: .post), RequestOptions(headers: [level("call")]), "call"),
        ]
        for (route, options, _) in calls {
            _ = value(of: connect.request(route, options: options))
        }
        XCTAssertEqual(
            transport.requests.map { $0.value(forHTTPHeaderField: "x-level") }, calls.map { $0.2 },
            "each request carries the most specific level's value, once")
        // The client's other default headers stay.
        XCTAssertEqual(transport.requests.first?.value(forHTTPHeaderField: "Accept"), "application/json")
    }

    /// Within one level, a name given twice sends its last value, at every level alike (it was the first at the
    /// client's, the method's and the server's, the last at the connector's and the call's).
    func testANameGivenTwiceInOneLevelSendsItsLastValueAtEveryLevel() throws {
        let twice = [HTTPHeader(name: "X-Twice", value: "base"), HTTPHeader(name: "x-twice", value: "override")]
        let transport = FakeTransport.answering(.status(204))
        let clients = [
            Connect(transport: transport, settings: Connect.Settings(options: RequestOptions(headers: twice))),
            Connect(transport: transport, settings: Connect.Settings(defaultHeaders: twice)),
            Connect(
                transport: transport, settings: Connect.Settings(methodOptions: [.get: RequestOptions(headers: twice)])),
            Connect(transport: transport, configuration: ServerConfiguration(host: "api.test", defaultHeaders: twice)),
            Connect(transport: transport),
        ]
        for (index, connect) in clients.enumerated() {
            let options = index == clients.count - 1 ? RequestOptions(headers: twice) : RequestOptions()
            _ = try connect.request(Route("/a", baseURL: URL(string: "https://api.test")!), options: options).wait()
            XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "X-Twice"), "override", "client \(index)")
            _ = try connect.response(for: ConnectRequest(url: URL(string: "https://api.test/b")!), options: options)
                .wait()
            XCTAssertEqual(
                transport.requests.last?.value(forHTTPHeaderField: "X-Twice"), "override", "built, client \(index)")
        }
    }

    func testTheDeadlineTheMostSpecificLevelWins() throws {
        let transport = FakeTransport.answering(.status(204))
        let connect = client(transport)
        let calls: [(Route, RequestOptions, TimeInterval)] = [
            (Route("/a", method: .post), RequestOptions(), 50),  // the client's
            (Route("/a"), RequestOptions(), 10),  // the method's, the connector keeping its default
            (Route("/a", timeout: 5), RequestOptions(), 5),  // the connector's own
            (Route("/a", timeout: 5, options: RequestOptions(timeout: 4)), RequestOptions(), 4),
            (Route("/a", timeout: 5), RequestOptions(timeout: 3), 3),  // the call's
        ]
        for (route, options, _) in calls {
            _ = value(of: connect.request(route, options: options))
        }
        XCTAssertEqual(transport.requests.map(\.timeoutInterval), calls.map { $0.2 })
    }

    /// The call's deadline is the call's deadline: an answer that never comes fails with `timedOut`.
    func testACallsDeadlineEndsTheCall() {
        let transport = FakeTransport.answering(.never)
        let error = connectError(
            of: Connect(transport: transport).request(
                Route(url: URL(string: "https://api.test/slow")!), options: RequestOptions(timeout: 0.05)))
        XCTAssertEqual(error?.kind, .timedOut)
    }

    func testTheMethodsCacheRuleCachesItsRequestsOnly() {
        let transport = FakeTransport.answering(.json(string: #"{"n":1}"#))
        let connect = client(transport, cache: ResponseCache())
        for _ in 0..<3 { _ = value(of: connect.request(Route("/cached"))) }
        for _ in 0..<2 { _ = value(of: connect.request(Route("/posted", method: .post))) }
        XCTAssertEqual(transport.requests.map(\.httpMethod), ["GET", "POST", "POST"])
    }

    func testBadValuesFromOptionsFailTheCallUnsent() {
        let transport = FakeTransport.answering(.status(204))
        let connect = client(transport)
        for timeout in [0, -1, .nan] as [TimeInterval] {
            let error = connectError(of: connect.request(Route("/a"), options: RequestOptions(timeout: timeout)))
            XCTAssertEqual(error?.kind, .invalidRequest)
            guard case .invalidTimeout? = error?.invalidRequestReason else {
                return XCTFail("\(String(describing: error?.invalidRequestReason))")
            }
        }
        let injected = HTTPHeader(name: "X-Note", value: "a\r\nX-Admin: 1")
        let error = connectError(of: connect.request(Route("/a"), options: RequestOptions(headers: [injected])))
        XCTAssertEqual(error?.kind, .invalidRequest)
        let method = Connect(
            transport: transport,
            settings: Connect.Settings(methodOptions: [.get: RequestOptions(headers: [injected])]))
        XCTAssertEqual(
            connectError(of: method.request(Route(url: URL(string: "https://api.test")!)))?.kind, .invalidRequest)
        XCTAssertTrue(transport.requests.isEmpty)
    }
}
