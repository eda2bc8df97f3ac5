import Foundation
import SwiftConnectAsyncHTTPClient
import XCTest

// For `Connect.transport`: the client made is over the guide's transport.
@testable import SwiftConnect

/// The "Coming from AsyncHTTPClient" guide's configuration block, which the core's tests cannot compile (they do not
/// import this package): written here word for word.
final class GuideConfigurationTests: XCTestCase {
    func testTheGuidesProxyAndPoolConfigurationMakesAClientOverTheTransport() async throws {
        let apiURL = try XCTUnwrap(URL(string: "http://127.0.0.1:1/v1"))

        // The guide's block (it names a proxy: nothing is sent).
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        configuration.proxy = .server(host: "proxy.internal", port: 3128)
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 32
        let transport = AsyncHTTPClientTransport(configuration: configuration)
        let client = Connect(baseURL: apiURL, transport: transport)
        try await transport.shutdown()  // when the app is done with it

        XCTAssertTrue(client.transport as? AsyncHTTPClientTransport === transport)
        XCTAssertEqual(configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit, 32)
    }
}
