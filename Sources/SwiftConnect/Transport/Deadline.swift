import Dispatch

/// A one-shot timer that fires unless cancelled first; cancelling releases its handler at once.
///
/// FoundationNetworking (libcurl) does not enforce `URLRequest.timeoutInterval` against a server that accepts
/// the connection and then stays silent, so the transport enforces the timeout itself on every platform.
// @unchecked Sendable: `lock` protects `timer`; the DispatchSource itself is thread-safe.
final class Deadline: @unchecked Sendable {
    private let lock = Lock()
    private var timer: (any DispatchSourceTimer)?

    /// A deadline `seconds` from now, or `nil` when `seconds` is not a positive finite number.
    init?(seconds: Double) {
        guard seconds > 0, seconds.isFinite else { return nil }
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + seconds, leeway: .milliseconds(10))
        self.timer = timer
    }

    deinit {
        cancel()
        lock.destroy()
    }

    /// Arms the timer; `handler` runs once, on a global queue, unless ``cancel()`` comes first.
    func start(_ handler: @escaping @Sendable () -> Void) {
        lock.withLock {
            timer?.setEventHandler { [weak self] in
                self?.cancel()
                handler()
            }
            timer?.resume()
        }
    }

    /// Stops the timer and releases its handler. Safe to call more than once, from any thread.
    func cancel() {
        let timer = lock.withLock { () -> (any DispatchSourceTimer)? in
            defer { self.timer = nil }
            return self.timer
        }
        guard let timer else { return }
        timer.setEventHandler {}
        timer.cancel()
    }
}
