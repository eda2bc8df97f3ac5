#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Android)
    import Android
#endif

/// A minimal non-recursive mutex over the platform's fastest primitive.
///
/// `os_unfair_lock` on Apple platforms (iOS 10 / macOS 10.12 and later), `pthread_mutex_t` elsewhere.
/// The primitive lives in its own heap cell because Swift gives no stable address to a stored property.
/// The owner calls ``destroy()`` exactly once, from its `deinit`.
/// `Synchronization.Mutex` would avoid the extra cell but needs macOS 15 / iOS 18.
@usableFromInline
package struct Lock {
    #if canImport(Darwin)
        @usableFromInline typealias Primitive = os_unfair_lock
    #else
        @usableFromInline typealias Primitive = pthread_mutex_t
    #endif

    @usableFromInline let primitive: UnsafeMutablePointer<Primitive>

    @inlinable
    package init() {
        primitive = .allocate(capacity: 1)
        #if canImport(Darwin)
            primitive.initialize(to: os_unfair_lock())
        #else
            primitive.initialize(to: pthread_mutex_t())
            let status = pthread_mutex_init(primitive, nil)
            precondition(status == 0, "pthread_mutex_init failed with \(status)")
        #endif
    }

    /// Releases the primitive. Call once, when nothing can use the lock any more.
    package func destroy() {
        #if !canImport(Darwin)
            pthread_mutex_destroy(primitive)
        #endif
        primitive.deinitialize(count: 1)
        primitive.deallocate()
    }

    @inlinable
    package func lock() {
        #if canImport(Darwin)
            os_unfair_lock_lock(primitive)
        #else
            pthread_mutex_lock(primitive)
        #endif
    }

    @inlinable
    package func unlock() {
        #if canImport(Darwin)
            os_unfair_lock_unlock(primitive)
        #else
            pthread_mutex_unlock(primitive)
        #endif
    }

    @inlinable
    package func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// A value of type `Value` that is only ever read or written while holding its own lock.
///
/// Use it for the mutable state of reference types: one `Protected` per type holding one `State` struct.
// @unchecked Sendable: `value` is only accessed inside `lock`, in `withLock`; nothing else touches it.
package final class Protected<Value>: @unchecked Sendable {
    private let lock = Lock()
    private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    deinit {
        lock.destroy()
    }

    /// Runs `body` with exclusive access to the value. Never call out to user code from `body`.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    /// A copy of the value, read under the lock.
    package var snapshot: Value {
        withLock { $0 }
    }

    /// Puts `newValue` in place and returns the value it replaced, for the caller to let go of outside the lock: what
    /// it held may run deinit code that reads or sets this value again, which would wait for the lock for ever.
    package func replace(with newValue: Value) -> Value {
        withLock { value in
            defer { value = newValue }
            return value
        }
    }
}

extension Protected: CustomReflectable {
    /// The value as read under the lock: `dump(_:)` or a debugger reading a client while its calls run on other
    /// threads would otherwise read the value unlocked, racing its writers.
    package var customMirror: Mirror {
        Mirror(self, children: ["value": snapshot as Any])
    }
}

/// A lock that guards no value but keeps sections of code from running at the same time, such as two calls into
/// a platform API that must not cross. Where it is used says what it keeps apart.
// @unchecked Sendable: `lock` is the only stored property, and a mutex is made to be used from any thread.
package final class ExclusiveSection: @unchecked Sendable {
    private let lock = Lock()

    package init() {}

    deinit {
        lock.destroy()
    }

    /// Runs `body` while no other section of this lock runs. Never call out to user code from `body`.
    package func run<Result>(_ body: () throws -> Result) rethrows -> Result {
        try lock.withLock(body)
    }
}
