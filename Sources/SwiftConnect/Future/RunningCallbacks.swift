#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Android)
    import Android
#endif

/// Which future's callbacks this thread is running, so that a callback adding another callback to the same
/// (complete) future queues it behind the callbacks registered before it, instead of running it at once,
/// ahead of them.
///
/// Kept per thread, in a frame on the stack of the thread running the callbacks: nothing is allocated and
/// no lock is taken unless a callback is queued. Nested runs (a callback completing another future whose
/// callbacks then run at once) stack their frames.
enum RunningCallbacks {
    private struct Frame {
        let owner: ObjectIdentifier
        var queued: [() -> CallbackList] = []
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed with \(status)")
        return key
    }()

    /// Runs `callbacks` (which run `owner`'s callbacks) marked as such, then the callbacks they queued, in
    /// order, until none is left; returns what they all resolved.
    static func run(of owner: AnyObject, _ callbacks: () -> CallbackList) -> CallbackList {
        var frame = Frame(owner: ObjectIdentifier(owner))
        let outer = pthread_getspecific(key)
        return withUnsafeMutablePointer(to: &frame) { frame in
            pthread_setspecific(key, frame)
            defer { pthread_setspecific(key, outer) }
            var list = callbacks()
            while !frame.pointee.queued.isEmpty {
                let queued = frame.pointee.queued
                frame.pointee.queued = []
                for callback in queued { list.append(callback()) }
            }
            return list
        }
    }

    /// Whether this thread is running `owner`'s callbacks.
    static func areRunning(of owner: AnyObject) -> Bool {
        guard let frame = pthread_getspecific(key) else { return false }
        return frame.assumingMemoryBound(to: Frame.self).pointee.owner == ObjectIdentifier(owner)
    }

    /// Queues `callback` behind the running ones; only after ``areRunning(of:)`` said yes.
    static func queue(_ callback: @escaping () -> CallbackList) {
        guard let frame = pthread_getspecific(key) else { return }
        frame.assumingMemoryBound(to: Frame.self).pointee.queued.append(callback)
    }
}
