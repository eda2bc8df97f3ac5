import Dispatch

/// A one-shot timer for one exchange: its handler runs once, on a global queue, when the time passes, unless
/// ``cancel()`` comes first.
///
/// The core ends an exchange that outlives its request's `timeoutInterval`, the body included, whatever the engine's
/// own timers cover: FoundationNetworking (libcurl) does not time out a server that accepts the connection and then
/// stays silent, and AsyncHTTPClient's deadline ends with the response's head. The core's exchange (every
/// `HTTPEngine`), ``URLSessionTransport``, the client's retry loop and a stream's idle timeout arm one each; an
/// exchange's idle timeout (`IdleWatch`) arms one at a time, re-armed for what is left when bytes came meanwhile.
///
/// Deadlines share one timer, armed for the earliest of them: arming and cancelling one is a dictionary update
/// under a lock, not a timer of its own to set up, wake a thread for and tear down.
final class TransportDeadline: Sendable {
    /// When the deadline passes.
    let time: DispatchTime
    /// How long after its creation it passes, in seconds (for messages).
    let seconds: Double
    private let scheduler: DeadlineScheduler

    /// A deadline `seconds` from now, or `nil` when `seconds` is not a positive finite number: no deadline.
    ///
    /// - Parameter seconds: The time allowed, such as a request's `timeoutInterval`; more than a year counts as a
    ///   year.
    convenience init?(seconds: Double) {
        self.init(seconds: seconds, scheduler: .shared)
    }

    /// A deadline `seconds` from now, or at `latest` if that comes first (then possibly passed already): a streamed
    /// body held to its call's deadline too, part of which the call's waits and earlier attempts spent. `seconds`
    /// stays the time allowed, as messages name it; `nil` as for ``init(seconds:)``.
    convenience init?(seconds: Double, notAfter latest: DispatchTime?) {
        self.init(seconds: seconds, scheduler: .shared, notAfter: latest)
    }

    /// A deadline on `scheduler` (tests use schedulers of their own).
    init?(seconds: Double, scheduler: DeadlineScheduler, notAfter latest: DispatchTime? = nil) {
        guard seconds > 0, seconds.isFinite else { return nil }
        // Capped so that adding it to `now` cannot overflow (a year is as good as never for a request).
        let nanoseconds = UInt64(min(seconds, 365 * 24 * 3600) * 1_000_000_000)
        let own = DispatchTime(uptimeNanoseconds: DispatchTime.now().uptimeNanoseconds &+ nanoseconds)
        time = latest.map { min($0, own) } ?? own
        self.seconds = seconds
        self.scheduler = scheduler
    }

    deinit {
        cancel()
    }

    /// Arms the deadline; `handler` runs once, on a global queue, unless ``cancel()`` comes first. Call it once.
    ///
    /// - Parameter handler: What to do when the time passes: stop the exchange and report it timed out.
    func start(_ handler: @escaping @Sendable () -> Void) {
        scheduler.add(ObjectIdentifier(self), at: time, handler: handler)
    }

    /// Disarms the deadline and releases its handler. Safe to call more than once, from any thread.
    func cancel() {
        scheduler.remove(ObjectIdentifier(self))
    }
}

/// One timer for many deadlines.
///
/// The timer is armed for the earliest pending deadline and re-armed only when a new deadline comes earlier
/// than that, or when it fires. Requests with the same timeout therefore never touch the timer between their
/// start and their end: adding and removing a deadline is a dictionary update under a lock.
// @unchecked Sendable: `lock` protects `entries` and `armedAt`; the DispatchSource itself is thread-safe.
final class DeadlineScheduler: @unchecked Sendable {
    /// The scheduler every transport uses.
    static let shared = DeadlineScheduler()

    private struct Entry {
        let time: DispatchTime
        let handler: @Sendable () -> Void
    }

    private let lock = Lock()
    private var entries: [ObjectIdentifier: Entry] = [:]
    /// When the timer is set to fire; `nil` when it is idle.
    private var armedAt: DispatchTime?
    private let timer: any DispatchSourceTimer
    /// Where expired handlers run, each on its own, so a slow one delays no other; handed out in time order.
    private let handlerQueue: DispatchQueue

    /// - Parameters:
    ///   - handlerQueue: Where expired handlers run.
    ///   - timerQueue: Where the timer fires (a queue of its own by default). Tests suspend it to hold every deadline
    ///     back while they arrange what must happen before one could fire.
    init(handlerQueue: DispatchQueue = .global(), timerQueue: DispatchQueue? = nil) {
        self.handlerQueue = handlerQueue
        timer = DispatchSource.makeTimerSource(
            queue: timerQueue ?? DispatchQueue(label: "SwiftConnect.DeadlineScheduler"))
        timer.setEventHandler { [weak self] in self?.fire() }
        timer.schedule(deadline: .distantFuture, leeway: .milliseconds(10))
        timer.activate()
    }

    deinit {
        timer.cancel()
        lock.destroy()
    }

    /// The number of deadlines waiting (for tests).
    var pendingCount: Int { lock.withLock { entries.count } }

    /// Runs `handler` at `time` unless `key` is removed first.
    func add(_ key: ObjectIdentifier, at time: DispatchTime, handler: @escaping @Sendable () -> Void) {
        lock.withLock {
            entries[key] = Entry(time: time, handler: handler)
            if let armedAt, armedAt <= time { return }
            armedAt = time
            timer.schedule(deadline: time, leeway: .milliseconds(10))
        }
    }

    /// Forgets the deadline of `key`, releasing its handler. The timer stays as it is: if it fires for
    /// nothing, it re-arms for what is left.
    func remove(_ key: ObjectIdentifier) {
        let removed = lock.withLock { entries.removeValue(forKey: key) }
        _ = removed  // released outside the lock: its captures may run deinit code
    }

    private func fire() {
        let expired: [Entry] = lock.withLock {
            let now = DispatchTime.now()
            var expiredKeys: [ObjectIdentifier] = []
            var earliest: DispatchTime?
            for (key, entry) in entries {
                if entry.time <= now {
                    expiredKeys.append(key)
                } else if earliest.map({ entry.time < $0 }) ?? true {
                    earliest = entry.time
                }
            }
            // In time order: a timer that fires late (a busy machine) finds several expired, and the dictionary's
            // order is no order.
            let expired = expiredKeys.compactMap { entries.removeValue(forKey: $0) }.sorted { $0.time < $1.time }
            armedAt = earliest
            timer.schedule(deadline: earliest ?? .distantFuture, leeway: .milliseconds(10))
            return expired
        }
        for entry in expired { handlerQueue.async(execute: entry.handler) }
    }
}

extension DispatchTime {
    /// The seconds from now until this time, at least a millisecond: what is left of a deadline, as a timeout to hand
    /// on (a hop's `timeoutInterval`, the rest of an exchange).
    var secondsLeft: Double {
        let now = DispatchTime.now().uptimeNanoseconds
        guard uptimeNanoseconds > now else { return 0.001 }
        return max(0.001, Double(uptimeNanoseconds - now) / 1e9)
    }
}
