/// The calls of one client that have not completed, for `Connect.cancelAllRequests()`.
///
/// A call started after a `cancelAllRequests()` that it did not see (it read ``cancellations`` before) is cancelled
/// as it is tracked, as that cancellation would have cancelled it.
final class InFlightCalls: Sendable {
    private let state = Protected(InFlightRequests())

    /// How many times ``removeAll()`` has run: read before starting a call to ``track(_:startedAfter:)`` it.
    var cancellations: UInt64 { state.withLock { $0.cancellations } }

    /// How many calls are pending.
    var count: Int { state.withLock { $0.count } }

    /// Remembers `future` until it completes; cancels it instead if ``removeAll()`` ran since `cancellations` was
    /// that count.
    func track<Value>(_ future: Future<Value>, startedAfter cancellations: UInt64) {
        guard !future.isCompleted else { return }
        guard let id = state.withLock({ $0.insert(future, startedAfter: cancellations) }) else {
            future.cancel()
            return
        }
        future.whenComplete { [state] _ in
            state.withLock { $0.remove(id) }
        }
    }

    /// Forgets every pending call and returns them, to be cancelled outside the lock.
    func removeAll() -> [any CancellableFuture] {
        state.withLock { $0.removeAll() }
    }
}

/// The requests of one client that have not completed.
struct InFlightRequests {
    private var requests: [UInt64: any CancellableFuture] = [:]
    private var nextID: UInt64 = 0
    /// How many times ``removeAll()`` ran: a request started when the count was lower is cancelled as it is
    /// inserted, as `cancelAllRequests()` would have cancelled it.
    private(set) var cancellations: UInt64 = 0

    var count: Int { requests.count }

    /// Adds `future` and returns its id, or returns `nil` if ``removeAll()`` ran since `cancellations` was read.
    mutating func insert(_ future: any CancellableFuture, startedAfter cancellations: UInt64) -> UInt64? {
        guard cancellations == self.cancellations else { return nil }
        nextID &+= 1
        requests[nextID] = future
        return nextID
    }

    mutating func remove(_ id: UInt64) {
        requests[id] = nil
    }

    mutating func removeAll() -> [any CancellableFuture] {
        cancellations &+= 1
        defer { requests.removeAll() }
        return Array(requests.values)
    }
}
