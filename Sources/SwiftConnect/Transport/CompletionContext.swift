#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Android)
    import Android
#endif

/// Marks the thread while it delivers a response from a URLSession delegate queue to a request's future.
///
/// Everything a caller chains on a request (`map`, `flatMap`, `observe`…) runs inside that delivery, on the
/// session's delegate queue. A request started from there, the next step of a `flatMap` chain for example,
/// must not make URLSession block the delegate queue: creating and resuming a task waits for the session's
/// internal work queue (`DispatchQueue.sync` in FoundationNetworking), which is busy with the other requests
/// in flight, and every response of the session waits behind that. ``URLSessionTransport`` starts such
/// requests from a queue of its own instead.
enum CompletionContext {
    /// Thread-specific storage: non-nil while the thread is inside ``deliver(_:)``.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed with \(status)")
        return key
    }()

    /// Whether the current thread is delivering a response from a delegate queue.
    static var isDelivering: Bool {
        pthread_getspecific(key) != nil
    }

    /// Runs `body` (which completes a request's promise) marked as a delivery.
    static func deliver(_ body: () -> Void) {
        let outer = pthread_getspecific(key)
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1))
        defer { pthread_setspecific(key, outer) }
        body()
    }
}
