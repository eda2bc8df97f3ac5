import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A 302 whose `Location` is scheme-relative (`//host/path`) with a host `URLComponents` cannot take: an IPv6
/// literal, or a host with characters no host name has (`//a%20b/x`).
///
/// The core does not follow a redirect to a host no name could be (`RedirectRules.namesNoHost`): the 302 is the
/// answer. An IPv6 host is followed. FoundationNetworking, though, stops the process on all of them
/// ("HTTPURLProtocol.swift: Fatal error: Invalid URL"): it rebuilds the next URL with `URLComponents` before the
/// transport's delegate hears of the redirect, and no API lets the transport act earlier: on Linux the URLSession
/// run of this test is skipped, and `FoundationNetworkingProcessStopTests` checks that known defect.
final class RedirectLocationSafetyTests: IntegrationTestCase {
    /// Locations with a host no name could be: never followed.
    static let hostsNoNameCouldBe = ["//a%20b/x", "//a%2Fb/x", "//a%00b/x", "//a%40b/x"]

    func testARedirectToAHostNoNameCouldBeIsNotFollowedAndOneToAnIPv6HostIs() throws {
        #if canImport(FoundationNetworking)
            if TransportUnderTest.isURLSession {
                throw XCTSkip(
                    "FoundationNetworking stops the process on these redirects before the transport hears of them: "
                        + "FoundationNetworkingProcessStopTests checks that known defect")
            }
        #endif
        for location in Self.hostsNoNameCouldBe {
            let result = try follow(location)
            guard case .success(let response) = result else { return XCTFail("\(location): got \(result)") }
            XCTAssertEqual(response.statusCode, 302, "\(location): the redirect is the answer")
        }
        // An IPv6 host is followed: nothing listens on [::1]:1, or IPv6 is off; either way a typed error.
        let ipv6 = try follow("//[::1]:1/x")
        guard case .failure(let error) = ipv6 else { return XCTFail("[::1]:1 answered: \(ipv6)") }
        XCTAssertTrue(error is ConnectError, "\(error)")
    }

    /// A `Location` whose port is outside 1...65535 names no server: the 302 is the answer, on every engine. One 65536
    /// above a listening server's port was followed, and the engine failed it in its own way (URLSession:
    /// `URLError(.badURL)` against the first URL); nothing reaches the server the port would wrap to.
    func testARedirectToAPortOutsideTheRangeIsNotFollowed() throws {
        let other = try LocalServer.started()
        defer { other.stop() }
        other.route("GET", "/x") { _ in .json(["wrapped": true]) }
        for location in ["http://127.0.0.1:\(Int(other.port) + 65536)/x", "http://127.0.0.1:0/x"] {
            let result = try follow(location)
            guard case .success(let response) = result else { return XCTFail("\(location): got \(result)") }
            XCTAssertEqual(response.statusCode, 302, "\(location): the redirect is the answer")
        }
        XCTAssertEqual(other.requests.count, 0)
    }

    /// Sends a GET that the server answers with a 302 to `location`, through the transport under test.
    private func follow(_ location: String) throws -> Result<ConnectResponse, any Error> {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/go") { _ in LocalServer.Response(status: 302, headers: [("Location", location)]) }
        let transport = TransportUnderTest.make()
        var request = URLRequest(url: server.baseURL.appendingPathComponent("go"))
        request.timeoutInterval = 10
        return try transport.send(request).waitForResult(timeout: 20)
    }
}
