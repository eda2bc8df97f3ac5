import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Invalidates the short-lived session of one transfer exactly once: cancelling its task when the transfer is
/// stopped, or letting it finish when the transfer has ended.
///
/// Both can be asked for: a transfer that times out fails its future first (which lets the session go when it
/// ends) and is then stopped. FoundationNetworking's `invalidateAndCancel()` and `finishTasksAndInvalidate()` each
/// read the session's delegate on the session's work queue and clear it on its delegate queue, without a lock, so
/// calling both on one session is a data race in FoundationNetworking: it crashed an AddressSanitizer run, reading
/// a freed delegate. Only the first call here invalidates the session. A stop that comes after an end still
/// cancels the task (the caller does that first), and the task's end then lets the session go.
final class IsolatedSessionInvalidation: Sendable {
    private let session: URLSession
    /// Whether the session has been invalidated.
    private let isInvalidated = Protected(false)
    /// The transport's count of invalidations, which tests read.
    private let count: Protected<Int>
    /// The transport's count of those that cancelled the task, which tests read.
    private let cancellations: Protected<Int>

    init(_ session: URLSession, counting count: Protected<Int>, cancellations: Protected<Int>) {
        self.session = session
        self.count = count
        self.cancellations = cancellations
    }

    /// Invalidates the session unless that was done already: `invalidateAndCancel()` when `cancellingTasks`,
    /// else `finishTasksAndInvalidate()`.
    func invalidate(cancellingTasks: Bool) {
        claim(cancellingTasks: cancellingTasks)?()
    }

    /// Counts the invalidation now, unless it was claimed already, and returns the call that invalidates the
    /// session, for the caller to make elsewhere (``URLSessionTransport/stopOffTheCaller(sparing:_:)``): `nil`
    /// when the session was claimed before.
    func claim(cancellingTasks: Bool) -> (@Sendable () -> Void)? {
        let isFirst = isInvalidated.withLock { isInvalidated in
            defer { isInvalidated = true }
            return !isInvalidated
        }
        guard isFirst else { return nil }
        count.withLock { $0 += 1 }
        let session = session
        guard cancellingTasks else { return { session.finishTasksAndInvalidate() } }
        cancellations.withLock { $0 += 1 }
        return { session.invalidateAndCancel() }
    }
}
