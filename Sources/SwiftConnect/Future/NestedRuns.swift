#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Android)
    import Android
#endif

/// Bounds how deep callback runs nest on one thread.
///
/// A callback that completes a promise runs that promise's callbacks inside its own (``CallbackList/run()``), and
/// one of those may complete another promise, and so on: one set of stack frames per link, so a line of a few
/// hundred such promises overflowed a 512 KiB stack. Up to ``limit`` runs nest as before; a deeper one is handed to
/// the outermost run on the thread, which runs it once the run in progress is over, before it returns itself.
@usableFromInline
enum NestedRuns {
    /// How many runs nest on a thread before the next is postponed.
    static let limit = 32

    /// The runs postponed on one thread, in the order they came.
    private final class Postponed {
        var lists: [CallbackList] = []
    }

    /// How many runs are in progress on this thread, as a pointer's bit pattern (no allocation).
    private static let depthKey: pthread_key_t = makeKey()
    /// The outermost run's ``Postponed``, retained; unset until a run is postponed.
    private static let postponedKey: pthread_key_t = makeKey()

    private static func makeKey() -> pthread_key_t {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed with \(status)")
        return key
    }

    private static var depth: Int {
        get { Int(bitPattern: pthread_getspecific(depthKey)) }
        set { pthread_setspecific(depthKey, UnsafeRawPointer(bitPattern: newValue)) }
    }

    /// Runs `list` (``CallbackList/runHere()``) unless too many runs are in progress on this thread: then the
    /// outermost runs it, after the run in progress.
    @usableFromInline
    static func run(_ list: CallbackList) {
        let current = depth
        guard current < limit else {
            postpone(list)
            return
        }
        depth = current + 1
        list.runHere()
        if current == 0 { runPostponed() }
        depth = current
    }

    private static func postpone(_ list: CallbackList) {
        if let box = pthread_getspecific(postponedKey) {
            Unmanaged<Postponed>.fromOpaque(box).takeUnretainedValue().lists.append(list)
            return
        }
        let postponed = Postponed()
        postponed.lists.append(list)
        pthread_setspecific(postponedKey, Unmanaged.passRetained(postponed).toOpaque())
    }

    /// Runs what deeper runs postponed, in order, still counted as the outermost run (so that what they complete
    /// nests again, up to the limit), then forgets the queue.
    private static func runPostponed() {
        guard let box = pthread_getspecific(postponedKey) else { return }
        let postponed = Unmanaged<Postponed>.fromOpaque(box)
        let queue = postponed.takeUnretainedValue()
        var index = 0
        while index < queue.lists.count {
            // Read first: running it may postpone more (an access to the array must not span the call).
            let list = queue.lists[index]
            queue.lists[index] = .empty  // what it holds is freed once it has run
            list.runHere()
            index += 1
        }
        pthread_setspecific(postponedKey, nil)
        postponed.release()
    }
}
