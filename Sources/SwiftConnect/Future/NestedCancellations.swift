#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Android)
    import Android
#endif

/// Cancels the inputs of combinations one after another instead of recursively.
///
/// A future that combines others (`zip`, `all`, `allSettled`, `race`) cancels them from its cancel handler, and
/// cancelling one of those may reach another combination, and so on: a fold of 100,000 futures by `zip` took one
/// stack frame per stage and overflowed the stack. While a chain is being cancelled on a thread, the inputs its
/// handlers cancel are queued here instead, and that cancellation cancels them after its own chain, in the same
/// loop, before it tells anyone (``Future/cancel()``). Any other `cancel()` (a cancel handler of your own that
/// cancels something) still happens at once.
enum NestedCancellations {
    /// The futures queued by the cancellation running on one thread.
    final class Queue {
        var futures: [any CancellableFuture] = []
    }

    /// The innermost running cancellation's queue, per thread; unset when none runs on the thread.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed with \(status)")
        return key
    }()

    /// Makes `queue` the one ``enqueue(_:)`` adds to on this thread, until ``end(_:previous:)``.
    ///
    /// - Returns: The queue of the cancellation this one runs inside, to restore at its end.
    static func begin(_ queue: Queue) -> UnsafeMutableRawPointer? {
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, Unmanaged.passUnretained(queue).toOpaque())
        return previous
    }

    /// Ends what ``begin(_:)`` began, making `previous` current again.
    static func end(previous: UnsafeMutableRawPointer?) {
        pthread_setspecific(key, previous)
    }

    /// Queues `future` for the cancellation running on this thread.
    ///
    /// - Returns: `false` when no cancellation runs on this thread: the caller cancels `future` itself.
    static func enqueue(_ future: any CancellableFuture) -> Bool {
        guard let running = pthread_getspecific(key) else { return false }
        Unmanaged<Queue>.fromOpaque(running).takeUnretainedValue().futures.append(future)
        return true
    }
}
