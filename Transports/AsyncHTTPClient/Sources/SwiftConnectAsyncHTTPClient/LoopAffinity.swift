import NIOConcurrencyHelpers
import NIOCore

/// Which of the client's event loops each request runs its callbacks on: the one the previous requests used, until
/// ``fill`` of them are in flight there, then the loop with the fewest.
///
/// Why: the transport uses AsyncHTTPClient's delegate API, whose callbacks run on the event loop the request names.
/// When the pooled connection it gets lives on another loop, every callback (the head, each body part, the end) is a
/// hop between the two loops' threads. The pool prefers an idle connection on the request's loop and opens new ones
/// there, so requests that keep to one loop keep to that loop's connections: sequential requests never hop, and a
/// request started as another ends finds that one's connection idle on its own loop. Naming a loop per request with
/// `any()` (round robin) instead made half of sequential requests hop, a cost BENCHMARKS.md measures. Spilling to the
/// least busy loop past ``fill`` keeps a busy server's requests spread over every loop, as AsyncHTTPClient's own async
/// API spreads them; spilling at 8 in flight instead of 16 measured slower at 16 in flight (BENCHMARKS.md).
final class LoopAffinity: Sendable {
    /// How many requests in flight on the current loop before new ones go to the least busy loop.
    static let fill = 16

    private let loops: [any EventLoop]
    private let group: any EventLoopGroup
    /// The loop new requests go to, and the requests in flight on each loop.
    private let state: NIOLockedValueBox<(current: Int, inFlight: [Int])>

    init(group: any EventLoopGroup) {
        self.group = group
        loops = Array(group.makeIterator())
        state = NIOLockedValueBox((0, Array(repeating: 0, count: loops.count)))
    }

    /// A loop for one request, and the ticket that ``release(_:)`` takes back when the request has ended.
    func take() -> (loop: any EventLoop, ticket: Int?) {
        guard !loops.isEmpty else { return (group.any(), nil) }
        let index = state.withLockedValue { state in
            if state.inFlight[state.current] >= Self.fill,
                let least = state.inFlight.indices.min(by: { state.inFlight[$0] < state.inFlight[$1] }),
                state.inFlight[least] < state.inFlight[state.current]
            {
                state.current = least
            }
            state.inFlight[state.current] += 1
            return state.current
        }
        return (loops[index], index)
    }

    /// Ends the request that ``take()`` gave `ticket` to.
    func release(_ ticket: Int?) {
        guard let ticket else { return }
        state.withLockedValue { $0.inFlight[ticket] -= 1 }
    }

    /// The requests in flight on each loop (for tests).
    var inFlight: [Int] { state.withLockedValue { $0.inFlight } }
}
