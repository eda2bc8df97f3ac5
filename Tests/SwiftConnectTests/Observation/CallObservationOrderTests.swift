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
    /// under a parent already closed). The end is now told after the start, by the thread telling the start, and
    /// what waits for the end to be told (the call's future) runs after it; the thread that ended the call waits for
    /// nobody.
    func testAStartToldAsAnotherThreadEndsTheCallReachesEveryObserverBeforeTheEnd() {
        let holding = HoldingObserver()
        let listing = ListingObserver()
        let observation = CallObservation(observers: [holding, listing])
        let request = ConnectRequest(url: URL(string: "https://api.example.com/a")!)
        let started = DispatchSemaphore(value: 0)
        let ending = DispatchSemaphore(value: 0)
        let completed = DispatchSemaphore(value: 0)
        // When: the start is being told to the first observer while the call ends on another thread
        DispatchQueue.global().async {
            observation.recordStart(of: 1, request: request)
            started.signal()
        }
        XCTAssertEqual(holding.inside.wait(timeout: .now() + 10), .success)
        DispatchQueue.global().async {
            observation.record(.callEnded(status: nil, error: nil, attempts: 1))
            observation.afterTold { completed.signal() }
            ending.signal()
        }
        // Then: the ending thread went on at once, and nothing of the end was told yet
        XCTAssertEqual(ending.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(listing.events.values, [])
        XCTAssertEqual(completed.wait(timeout: .now()), .timedOut, "the call completed before its end was told")
        holding.go.signal()
        XCTAssertEqual(started.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(completed.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(listing.events.values, ["started", "callEnded"])
    }

    /// Two calls whose observers each end the other as they hear of an attempt's end, told on two threads at once:
    /// each thread tells its call's end after the event it is telling, and neither waits for the other. Told under a
    /// lock held while the observers heard the event, each thread held its call's and waited for the other's.
    func testObserversThatEndEachOthersCallsFromTwoThreadsDoNotWaitForEachOther() {
        final class EndingTheOther: ConnectCallObserver {
            let inside: DispatchSemaphore
            let otherInside: DispatchSemaphore
            let other: Guarded<CallObservation?> = Guarded(nil)
            let events = Recorder<String>()
            init(inside: DispatchSemaphore, otherInside: DispatchSemaphore) {
                (self.inside, self.otherInside) = (inside, otherInside)
            }
            func record(_ event: ConnectEvent) {
                switch event {
                case .attemptEnded:
                    events.append("attemptEnded")
                    inside.signal()
                    _ = otherInside.wait(timeout: .now() + 10)
                    other.snapshot?.record(.callEnded(status: nil, error: nil, attempts: 1))
                case .callEnded: events.append("callEnded")
                default: break
                }
            }
        }
        let (insideX, insideY) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let observerX = EndingTheOther(inside: insideX, otherInside: insideY)
        let observerY = EndingTheOther(inside: insideY, otherInside: insideX)
        let (x, y) = (CallObservation(observers: [observerX]), CallObservation(observers: [observerY]))
        observerX.other.withLock { $0 = y }
        observerY.other.withLock { $0 = x }
        let done = DispatchGroup()
        for observation in [x, y] {
            DispatchQueue.global().async(group: done) {
                observation.recordEnd(of: 1, status: 200, error: nil)
            }
        }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success, "the two threads waited for each other")
        XCTAssertEqual(observerX.events.values, ["attemptEnded", "callEnded"])
        XCTAssertEqual(observerY.events.values, ["attemptEnded", "callEnded"])
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
