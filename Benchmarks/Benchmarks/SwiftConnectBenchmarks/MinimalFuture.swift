import Foundation

/// The smallest thread-safe future that does the job: a mutex, a state, a callback list. The yardstick for
/// SwiftConnect's `Future` on the path every network response takes (pending, completed later on another queue).
// @unchecked Sendable: `lock` protects `result` and `callbacks`.
final class MinimalFuture<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var result: Value?
    private var callbacks: [@Sendable (Value) -> Void] = []

    init() {}

    init(value: Value) {
        result = value
    }

    /// Completes the future once; later calls are ignored.
    func succeed(_ value: Value) {
        lock.lock()
        guard result == nil else {
            lock.unlock()
            return
        }
        result = value
        let pending = callbacks
        callbacks = []
        lock.unlock()
        for callback in pending { callback(value) }
    }

    /// Runs `callback` with the value, now if it is there, else when it comes.
    func observe(_ callback: @escaping @Sendable (Value) -> Void) {
        lock.lock()
        if let result {
            lock.unlock()
            callback(result)
            return
        }
        callbacks.append(callback)
        lock.unlock()
    }

    func map<New: Sendable>(_ transform: @escaping @Sendable (Value) -> New) -> MinimalFuture<New> {
        let next = MinimalFuture<New>()
        observe { next.succeed(transform($0)) }
        return next
    }

    func flatMap<New: Sendable>(_ transform: @escaping @Sendable (Value) -> MinimalFuture<New>) -> MinimalFuture<New> {
        let next = MinimalFuture<New>()
        observe { transform($0).observe { next.succeed($0) } }
        return next
    }
}
