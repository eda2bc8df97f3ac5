import Foundation
import SwiftConnectTesting
import XCTest

@testable @_spi(Engine) import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The caller's `user:password@` follows a redirect to its own origin however the `Location` writes the host (upper
/// case, escapes, another form of an address), as the redirect rules judge the origin; never to another origin.
final class HostSpellingRedirectTests: XCTestCase {
    private typealias ScriptedEngine = EngineExchangeTests.ScriptedEngine

    /// The `Authorization` of each hop of a request to `start` redirected to `location`.
    private func authorizations(from start: String, to location: String) throws -> [String?] {
        let engine = ScriptedEngine([.init(status: 302, fields: [.location: location]), .init(status: 204)])
        let request = URLRequest(url: try XCTUnwrap(URL(string: start)))
        XCTAssertEqual(try engine.send(request).wait(timeout: 10).statusCode, 204, location)
        return engine.hops.map { $0.head.headerFields[.authorization] }
    }

    private let basic = "Basic " + Data("ann:pw".utf8).base64EncodedString()

    func testTheCallersCredentialsFollowASameOriginRedirectWhateverItsSpelling() throws {
        for location in [
            "http://api.test/next", "http://API.TEST/next", "http://api.tes%74/next", "HTTP://api.test/next",
            "http://api.test:80/next",
        ] {
            XCTAssertEqual(
                try authorizations(from: "http://ann:pw@api.test/start", to: location), [basic, basic], location)
        }
        XCTAssertEqual(
            try authorizations(from: "http://ann:pw@[::1]/start", to: "http://[0:0:0:0:0:0:0:1]/next"),
            [basic, basic])
    }

    func testTheCallersCredentialsNeverFollowARedirectToAnotherOrigin() throws {
        for location in [
            "http://api.test.evil/next", "https://api.test/next", "http://api.test:8080/next", "http://evil.test/",
            "http://api%2Etest.evil/next", "http://[::2]/next",
        ] {
            XCTAssertEqual(
                try authorizations(from: "http://ann:pw@api.test/start", to: location), [basic, nil], location)
        }
    }
}
