import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// A check named in `only` or `knownDefects` that does not exist (a typo, a check renamed) is a failed outcome, not
/// a check silently never run, which would let a conformance test pass having checked nothing.
final class TransportConformanceNamesTests: XCTestCase {
    func testAnUnknownCheckNameInOnlyIsAFailedOutcomeNamingIt() {
        // When
        let outcomes = TransportConformance.run(only: ["method and bodies"]) { FakeTransport() }
        // Then
        XCTAssertEqual(outcomes.map(\.check), ["method and bodies"])
        XCTAssertEqual(outcomes.map(\.isAsExpected), [false])
        let failure = outcomes.first?.failure ?? ""
        XCTAssertTrue(failure.contains("no check is named"), failure)
        XCTAssertTrue(failure.contains("methods and bodies"), "lists the names there are: \(failure)")
    }

    func testAnUnknownCheckNameInKnownDefectsIsAFailedOutcome() {
        // When: the one check run is unknown too, so that nothing real runs
        let outcomes = TransportConformance.run(
            knownDefects: ["sub-second deadlines": "curl rounds up"], only: ["nothing"]
        ) { FakeTransport() }
        // Then
        XCTAssertEqual(Set(outcomes.map(\.check)), ["nothing", "sub-second deadlines"])
        XCTAssertTrue(outcomes.allSatisfy { !$0.isAsExpected }, "\(outcomes)")
    }

    func testKnownNamesRunWithoutAnExtraOutcome() {
        // Given: a real check, expected to fail against a transport that answers 404 to everything
        let name = "methods and bodies"
        // When
        let outcomes = TransportConformance.run(knownDefects: [name: "answers 404"], only: [name]) {
            FakeTransport()
        }
        // Then
        XCTAssertEqual(outcomes.map(\.check), [name])
        XCTAssertEqual(outcomes.map(\.isAsExpected), [true], "\(outcomes)")
    }
}
