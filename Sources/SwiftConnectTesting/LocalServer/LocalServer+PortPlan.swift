import SwiftConnect

extension LocalServer {
    /// The ports a test's servers listen on, kept from one run of the test to the next.
    ///
    /// The replay tests (`Tests/SwiftConnectReplayTests`) run each integration test twice: recording, then replaying
    /// from what was recorded, in another process. With a plan, the recording run's servers keep their ports, and the
    /// replay's servers take them in the order they started, without listening: the URLs a test asks for are the
    /// URLs it recorded.
    ///
    /// The replay's ports are named, not held: no socket is bound to them. Binding a recorded port again fails while
    /// connections of the recording run linger there in TIME_WAIT (a bind without `SO_REUSEADDR`, as
    /// `Socket.boundOnLoopback()` holds a port), and a bind with it would not keep another socket from listening there.
    /// No wrong answer follows: a replay's transports send nothing (a ``RecordingTransport`` replaying wraps none), so
    /// nothing connects to these ports; a test that sent through a transport of its own could reach whatever program
    /// listens there by then, and is not one a replay can run (`ReplayHarness.outOfScope`).
    package final class PortPlan: Sendable {
        private struct State {
            var ports: [Int] = []
            var next = 0
            var isReplaying = false
        }

        private let state = Protected(State())

        /// An empty plan: the servers started while it is active pick their ports, which it keeps.
        package init() {}

        /// A plan that hands out `ports`, in order, to servers that do not listen (kept by a recording run).
        package init(replaying ports: [Int]) {
            state.withLock { state in
                state.ports = ports
                state.isReplaying = true
            }
        }

        /// The ports kept so far, in the order the servers started.
        package var ports: [Int] { state.withLock { $0.ports } }

        /// When replaying, the next kept port, for a server that must not listen (0 once they run out); else `nil`.
        func portToReserve() -> Int? {
            state.withLock { state in
                guard state.isReplaying else { return nil }
                defer { state.next += 1 }
                return state.next < state.ports.count ? state.ports[state.next] : 0
            }
        }

        /// A server started on `port`: kept, when recording.
        func started(on port: Int) {
            state.withLock { state in
                if !state.isReplaying { state.ports.append(port) }
            }
        }
    }

    /// The plan servers follow when they start, if any (one test at a time sets it: see ``PortPlan``).
    package static let portPlan = Protected<PortPlan?>(nil)
}
