import Foundation
import XCTest

@testable import SwiftConnect

/// What a call's observers are told once its end was.
final class CallObservationOrderTests: XCTestCase {
    private final class ListingObserver: ConnectCallObserver {
        let events = Recorder<String>()

        func record(_ event: ConnectEvent) {
            switch event {
            case .attemptStarted: events.append("started")
            case .callEnded: events.append("callEnded")
            default: events.append("other")
            }
        }
    }

    /// A start the call's end came before is not told, nor counted as a send in flight.
    func testAStartAfterTheEndIsNotTold() {
        let listing = ListingObserver()
        let observation = CallObservation(observers: [listing])
        observation.record(.callEnded(status: nil, error: nil, attempts: 1))
        observation.recordStart(of: 1, request: ConnectRequest(url: URL(string: "https://api.example.com/a")!))
        XCTAssertEqual(listing.events.values, ["callEnded"])
        XCTAssertFalse(observation.hasSendInFlight(of: 1))
    }
}
