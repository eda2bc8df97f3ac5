import Foundation
import XCTest

@testable import SwiftConnect

/// The engine the shared integration tests (`Integration/`) run on.
///
/// Here it is ``URLSessionTransport``. The AsyncHTTPClient package (`Transports/AsyncHTTPClient`) compiles the same
/// test files with a `TransportUnderTest` of its own, so the client's behaviour is proven on both engines by one
/// set of tests. A test that checks one engine's own behaviour asks ``isURLSession``.
enum TransportUnderTest {
    /// A new transport.
    static func make() -> any Transport { URLSessionTransport() }

    /// A new transport that opens up to `connectionsPerHost` connections to one host at once.
    static func make(connectionsPerHost: Int) -> any Transport {
        let configuration = URLSessionTransport.defaultConfiguration
        configuration.httpMaximumConnectionsPerHost = connectionsPerHost
        return URLSessionTransport(configuration: configuration)
    }

    /// A transport with no cookie store, so that only the request's own `Cookie` header and the cookies one call's
    /// redirects set count (those of AsyncHTTPClient's, which keeps no store). Made with a delegate that keeps the
    /// redirects' cookies: a configuration with cookies off would drop them too, as URLSession's redirects do.
    static func makeCookieless() -> any Transport {
        let configuration = URLSessionTransport.defaultConfiguration
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        // FoundationNetworking parses every response's cookies unless it accepts none (`SessionCookies`).
        configuration.httpCookieAcceptPolicy = .never
        return URLSessionTransport(configuration: configuration, delegate: SessionDelegate())
    }

    /// Whether the engine is URLSession (Apple's or FoundationNetworking): libcurl's and Apple's framing rules,
    /// which AsyncHTTPClient's parser (llhttp) is stricter than.
    static let isURLSession = true
}

/// The class the shared integration tests derive from: plain `XCTestCase` here. The replay tests
/// (`Tests/SwiftConnectReplayTests`) compile the same files over a class that runs each test twice, recording then
/// replaying.
typealias IntegrationTestCase = XCTestCase
