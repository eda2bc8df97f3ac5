import XCTest

@testable import SwiftConnect

/// How Apple platforms' monitor reads a network path (`PathConnectivityRule`), tested here on every platform.
final class PathConnectivityRuleTests: XCTestCase {
    func testASatisfiedPathOverARealInterfaceIsConnected() {
        let wifi = PathConnectivityRule.connectivity(status: .satisfied, interfaces: [.wifi], usesLoopback: false)
        XCTAssertEqual(wifi, Connectivity(isConnected: true, interfaces: [.wifi]))
    }

    func testLoopbackAloneOrAnUnsatisfiedPathIsDisconnected() {
        XCTAssertEqual(
            PathConnectivityRule.connectivity(status: .satisfied, interfaces: [], usesLoopback: true), .disconnected)
        XCTAssertEqual(
            PathConnectivityRule.connectivity(status: .unsatisfied, interfaces: [.wifi], usesLoopback: false),
            .disconnected)
    }

    /// A path that requires a connection (VPN On Demand) comes up when a request is sent: read as offline, it held
    /// every request waiting for connectivity until its deadline, and failed those that fail fast.
    func testAPathThatRequiresAConnectionIsConnected() {
        let onDemand = PathConnectivityRule.connectivity(
            status: .requiresConnection, interfaces: [.other], usesLoopback: false)
        XCTAssertTrue(onDemand.isConnected)
        XCTAssertEqual(onDemand.interfaces, [.other])
    }
}
