import Foundation
import SwiftConnectAsyncHTTPClient
import SwiftConnectTesting
import XCTest

// For `ConnectSystem.resetForTesting()`: the bootstrap is the process's, and this test leaves it as it found it.
@testable import SwiftConnect

/// The README's one line for a Linux server: AsyncHTTPClient as the engine of the whole process.
final class BootstrapTests: XCTestCase {
    func testTheReadmesBootstrapSendsEveryClientMadeWithoutATransportThroughAsyncHTTPClient() async throws {
        // Given
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/ok") { _ in .json(["ok": true]) }
        ConnectSystem.resetForTesting()
        defer { ConnectSystem.resetForTesting() }

        // When: the README's line
        try ConnectSystem.bootstrap(transport: AsyncHTTPClientTransport())

        // Then
        let connect = Connect(configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: server.port))
        let transport = try XCTUnwrap(connect.transport as? AsyncHTTPClientTransport)
        XCTAssertTrue(Connect().transport as? AsyncHTTPClientTransport === transport)
        let body = try await connect.request("/ok").value
        XCTAssertEqual(String(decoding: body, as: UTF8.self), #"{"ok":true}"#)
        try await transport.shutdown()
    }
}
