import Foundation
import XCTest

@testable import SwiftConnect

/// The order a call's observers hear its events in when two threads meet them at once.
final class CallObservationOrderTests: XCTestCase {
    /// Holds the attempt's start inside the first observer until the test lets it go.
    private final class HoldingObserver: ConnectCallObserver {
        let inside = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)

        func record(_ event: ConnectEvent) {
            guard case .attemptStarted = event else { return }
            inside.signal()
            _ = go.wait(timeout: .now() + 10)
        }
    }

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

    /// An attempt starting on one thread as the call's deadline ends it on another: the start was checked against the
    /// call's end, then told after it, so a second observer heard the call end, then an attempt start (a span opened
    /// under a parent already closed). The end now waits for the start to be told; then no event of the call comes
    /// after its end but the ends of its sends.
    func testAStartToldAsAnotherThreadEndsTheCallReachesEveryObserverBeforeTheEnd() {
        let holding = HoldingObserver()
        let listing = ListingObserver()
        let observation = CallObservation(observers: [holding, listing])
        let request = ConnectRequest(url: URL(string: "https://api.example.com/a")!)
        let started = DispatchSemaphore(value: 0)
        let ended = DispatchSemaphore(value: 0)
        // When: the start is being told to the first observer while the call ends on another thread
        DispatchQueue.global().async {
            observation.recordStart(of: 1, request: request)
            started.signal()
        }
        XCTAssertEqual(holding.inside.wait(timeout: .now() + 10), .success)
        DispatchQueue.global().async {
            observation.record(.callEnded(status: nil, error: nil, attempts: 1))
            ended.signal()
        }
        // The end cannot be told while the start is: given room, it stays waiting (told at once before the fix).
        XCTAssertEqual(ended.wait(timeout: .now() + 0.3), .timedOut, "the end was told while the start was")
        holding.go.signal()
        // Then
        XCTAssertEqual(started.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(ended.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(listing.events.values, ["started", "callEnded"])
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
