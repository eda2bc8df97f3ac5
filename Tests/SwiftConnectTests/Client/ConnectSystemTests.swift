import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `ConnectSystem`: the process's transport, set once at start-up, and a transport scoped to a task for tests.
///
/// The bootstrap is the process's: each test here starts from and leaves a fresh state (`resetForTesting`), and XCTest
/// runs them one after the other.
final class ConnectSystemTests: XCTestCase {
    override func setUp() {
        super.setUp()
        ConnectSystem.resetForTesting()
    }

    override func tearDown() {
        ConnectSystem.resetForTesting()
        super.tearDown()
    }

    func testABootstrappedTransportSendsForEveryClientMadeWithoutOne() {
        // Given
        let fake = FakeTransport()
        fake.stub("/ping", with: .json(string: #"{"ok":true}"#))

        // When
        XCTAssertNoThrow(try ConnectSystem.bootstrap(transport: fake))
        let first = Connect(host: "api.test")
        let second = Connect(host: "api.test", transport: ConnectSystem.defaultTransport)

        // Then
        XCTAssertTrue(ConnectSystem.isBootstrapped)
        XCTAssertNotNil(value(of: first.request("/ping")))
        XCTAssertNotNil(value(of: second.request("/ping")))
        XCTAssertEqual(fake.requests(to: "/ping").count, 2)
    }

    func testASecondBootstrapFailsAndKeepsTheFirstTransport() {
        // Given
        let first = FakeTransport()
        first.stub("/ping", with: .status(204))
        let second = FakeTransport()
        XCTAssertNoThrow(try ConnectSystem.bootstrap(transport: first))

        // When
        var refusal: ConnectSystem.BootstrapError?
        do { try ConnectSystem.bootstrap(transport: second) } catch { refusal = error }

        // Then
        XCTAssertEqual(refusal, .alreadyBootstrapped)
        XCTAssertNotNil(value(of: Connect(host: "api.test").request("/ping")))
        XCTAssertEqual(first.requests.count, 1)
        XCTAssertEqual(second.requests.count, 0)
    }

    func testABootstrapAfterAClientTookTheDefaultFailsAndChangesNothing() {
        // Given: a client made before the bootstrap, on the default engine
        let early = Connect()

        // When
        var refusal: ConnectSystem.BootstrapError?
        do { try ConnectSystem.bootstrap(transport: FakeTransport()) } catch { refusal = error }

        // Then
        XCTAssertEqual(refusal, .defaultAlreadyUsed)
        XCTAssertFalse(ConnectSystem.isBootstrapped)
        XCTAssertTrue(early.transport is URLSessionTransport)
        XCTAssertTrue(Connect().transport is URLSessionTransport)
        XCTAssertTrue(refusal?.description.contains("start-up") ?? false)
    }

    func testWithoutABootstrapEachClientGetsASessionOfItsOwn() {
        let first = Connect().transport as? URLSessionTransport
        let second = Connect().transport as? URLSessionTransport

        XCTAssertNotNil(first)
        XCTAssertNotNil(second)
        XCTAssertFalse(first === second)
    }

    func testAScopedTransportReachesOnlyClientsMadeInItsScopeAndIsNotAFirstUse() {
        // Given
        let fake = FakeTransport()
        fake.stub("/ping", with: .status(204))

        // When
        let scoped = ConnectSystem.withDefaultTransport(fake) { Connect(host: "api.test") }
        let outside = Connect(host: "api.test")

        // Then
        XCTAssertTrue(scoped.transport as? FakeTransport === fake)
        XCTAssertTrue(outside.transport is URLSessionTransport)
        XCTAssertNotNil(value(of: scoped.request("/ping")))
        XCTAssertEqual(fake.requests.count, 1)
    }

    func testAScopeAllowsABootstrapAfterItAndWinsOverIt() throws {
        // Given: a scope used before start-up's bootstrap does not count as taking the default
        let scopedFake = FakeTransport()
        _ = ConnectSystem.withDefaultTransport(scopedFake) { Connect() }
        let processFake = FakeTransport()

        // When
        try ConnectSystem.bootstrap(transport: processFake)

        // Then
        XCTAssertTrue(Connect().transport as? FakeTransport === processFake)
        let scoped = ConnectSystem.withDefaultTransport(scopedFake) { Connect() }
        XCTAssertTrue(scoped.transport as? FakeTransport === scopedFake)
    }

    func testAScopeReachesChildTasksAndEndsWithTheOperation() async {
        // Given
        let fake = FakeTransport()

        // When
        let fromChild = await ConnectSystem.withDefaultTransport(fake) {
            await Task { Connect().transport as? FakeTransport === fake }.value
        }
        let afterScope = Connect().transport as? FakeTransport === fake

        // Then
        XCTAssertTrue(fromChild)
        XCTAssertFalse(afterScope)
    }
}
