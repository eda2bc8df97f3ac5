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
/// transport's delegate hears of the redirect, and no API lets the transport act earlier. On Linux the
/// URLSession run of this test checks, in a child process, that this known defect is still there, so that a
/// FoundationNetworking that fixes it is noticed (SECURITY.md says what it means for a client).
final class RedirectLocationSafetyTests: XCTestCase {
    /// Locations with a host no name could be: never followed.
    static let hostsNoNameCouldBe = ["//a%20b/x", "//a%2Fb/x", "//a%00b/x", "//a%40b/x"]
    private static let childVariable = "SWIFTCONNECT_REDIRECT_LOCATION_CHILD"

    func testARedirectToAHostURLComponentsCannotTakeNeverStopsTheProcessButOnFoundationNetworking() throws {
        if let location = ProcessInfo.processInfo.environment[Self.childVariable] {
            // The child process: follow one such redirect; FoundationNetworking stops the process here.
            _ = try follow(location)
            return
        }
        #if canImport(FoundationNetworking)
            if TransportUnderTest.isURLSession {
                for location in ["//[::1]:1/x"] + Self.hostsNoNameCouldBe {
                    try expectFoundationNetworkingStops(on: location)
                }
                return
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

    #if canImport(FoundationNetworking)
        /// Runs this test in a child process that follows a redirect to `location`, and checks that
        /// FoundationNetworking stopped it.
        private func expectFoundationNetworkingStops(on location: String) throws {
            let child = Process()
            child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            child.arguments = ["SwiftConnectTests.RedirectLocationSafetyTests/" + Self.testName]
            var environment = ProcessInfo.processInfo.environment
            environment[Self.childVariable] = location
            environment["SWIFT_BACKTRACE"] = "enable=no"
            child.environment = environment
            let output = Pipe()
            child.standardOutput = output
            child.standardError = output
            let exited = DispatchSemaphore(value: 0)
            child.terminationHandler = { _ in exited.signal() }
            try child.run()
            let text = Protected(Data())
            let read = DispatchGroup()
            read.enter()
            DispatchQueue.global().async {
                let data = output.fileHandleForReading.readDataToEndOfFile()
                text.withLock { $0 = data }
                read.leave()
            }
            guard exited.wait(timeout: .now() + 120) == .success else {
                child.terminate()
                return XCTFail("\(location): the child process did not end within 120 s")
            }
            _ = read.wait(timeout: .now() + 10)
            let log = String(decoding: text.withLock { $0 }, as: UTF8.self)
            XCTAssertEqual(
                child.terminationReason, .uncaughtSignal,
                "\(location): FoundationNetworking no longer stops the process on this redirect. Remove the known "
                    + "defect from this test and from SECURITY.md.\n\(log.suffix(2_000))")
            XCTAssertTrue(log.contains("Invalid URL"), "\(location): \(log.suffix(2_000))")
        }

        private static let testName =
            "testARedirectToAHostURLComponentsCannotTakeNeverStopsTheProcessButOnFoundationNetworking"
    #endif
}
