import Foundation
import SwiftConnectAsyncHTTPClient
import XCTest

@testable import SwiftConnect

/// The engine the shared integration tests (`Shared/`, the root package's `Tests/SwiftConnectTests/Integration`
/// files) run on here: ``AsyncHTTPClientTransport``.
enum TransportUnderTest {
    /// A new transport with a client of its own (shut down by itself when released).
    static func make() -> any Transport { AsyncHTTPClientTransport() }

    /// A new transport that opens up to `connectionsPerHost` connections to one host at once.
    static func make(connectionsPerHost: Int) -> any Transport {
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connectionsPerHost
        return AsyncHTTPClientTransport(configuration: configuration)
    }

    /// The same: this engine keeps no cookie store between requests.
    static func makeCookieless() -> any Transport { AsyncHTTPClientTransport() }

    /// Whether the engine is URLSession: not here.
    static let isURLSession = false
}

/// The class the shared integration tests derive from: plain `XCTestCase` here. The replay tests
/// (`Tests/SwiftConnectReplayTests`) compile the same files over a class that runs each test twice, recording then
/// replaying.
typealias IntegrationTestCase = XCTestCase
