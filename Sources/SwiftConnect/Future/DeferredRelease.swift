#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Android)
    import Android
#endif

/// Frees chains of objects one link at a time instead of recursively.
///
/// Releasing the last reference to an object runs its deinit, which releases what it holds, and so on down a
/// chain: one stack frame per link. ``Future``'s deinit hands what it holds here instead. The first call on a
/// thread becomes the loop: it frees the items one after another, and every call made meanwhile by the deinits
/// those frees run (on the same thread) only queues its item. The stack stays a few frames deep however long
/// the chain is.
enum DeferredRelease {
    /// The items queued on one thread while its loop runs.
    private final class Queue {
        var items: [Any] = []
    }

    /// The running loop's queue, per thread; unset when no loop runs on the thread.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed with \(status)")
        return key
    }()

    /// Frees `item` now or, inside a running loop, soon after, on this thread.
    static func release(_ item: consuming Any) {
        if let running = pthread_getspecific(key) {
            // Moved, not copied: a copy left with the caller would be freed when it returns, recursively.
            Unmanaged<Queue>.fromOpaque(running).takeUnretainedValue().items.append(consume item)
            return
        }
        let queue = Queue()
        queue.items.append(consume item)
        pthread_setspecific(key, Unmanaged.passUnretained(queue).toOpaque())
        defer { pthread_setspecific(key, nil) }
        // Each item is dropped at the end of an iteration; the deinits that runs queue what they held.
        while !queue.items.isEmpty {
            _ = queue.items.removeLast()
        }
    }
}
