import SwiftConnect

extension LocalServer {
    /// The ports a test's servers listen on, kept from one run of the test to the next.
    ///
    /// The replay tests (`Tests/SwiftConnectReplayTests`) run each integration test twice: recording, then replaying
    /// from what was recorded. Each run starts its servers anew; with a plan, the second run's servers listen on the
    /// first run's ports, in the order they started, so the URLs the test asks for are the URLs recorded.
    package final class PortPlan: Sendable {
        private struct State {
            var ports: [Int] = []
            var next = 0
            var isReplaying = false
        }

        private let state = Protected(State())

        /// An empty plan: the servers started while it is active pick their ports, which it keeps.
        package init() {}

        /// A plan that hands out `ports`, in order (kept by an earlier run, perhaps in another process).
        package init(replaying ports: [Int]) {
            state.withLock { state in
                state.ports = ports
                state.isReplaying = true
            }
        }

        /// The ports kept so far, in the order the servers started.
        package var ports: [Int] { state.withLock { $0.ports } }

        /// From now on, servers take the kept ports, in order.
        package func replay() {
            state.withLock { state in
                state.isReplaying = true
                state.next = 0
            }
        }

        /// The port the next server should listen on: a kept one when replaying, else 0 (any).
        func nextPort() -> Int {
            state.withLock { state in
                guard state.isReplaying, state.next < state.ports.count else { return 0 }
                defer { state.next += 1 }
                return state.ports[state.next]
            }
        }

        /// A server started on `port`: kept, when not replaying.
        func started(on port: Int) {
            state.withLock { state in
                if !state.isReplaying { state.ports.append(port) }
            }
        }
    }

    /// The plan servers follow when they start, if any (one test at a time sets it: see ``PortPlan``).
    package static let portPlan = Protected<PortPlan?>(nil)
}
