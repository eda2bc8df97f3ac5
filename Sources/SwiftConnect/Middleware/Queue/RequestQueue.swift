import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Android)
    import Android
#endif

/// Caps how many requests of a client are in flight at once; the others wait their turn, first in, first out.
///
/// Give one to a client; every request of that client then passes through it, just before the plugins and
/// the transport (so a retried request queues again for each attempt, and a request answered by the cache
/// or shared by coalescing never takes a slot):
///
/// ```swift
/// let queue = RequestQueue(maxConcurrentRequests: 2)
/// let connect = Connect(requestQueue: queue)
///
/// for id in 1...10 {
///     connect.request(TodoConnector.get(id: id)).observe { print($0) }
/// }
/// print(queue.runningCount, queue.pendingCount)  // 2 8
///
/// queue.pause()          // going offline: nothing new starts, running requests finish
/// queue.resume()         // back online: waiting requests start in order, up to the cap
/// queue.cancelPending()  // or give up on the ones still waiting
/// ```
///
/// A request takes one slot of a queue, however many times the client lists it: a queue given as
/// `Connect(requestQueue:)` and also among the middlewares (the client's, a connector's or a call's) sits only
/// where `requestQueue:` puts it, and a queue listed twice among the middlewares sits at its first place.
///
/// ## Requests waiting for a credential refresh
/// Listed among the middlewares before an ``AuthenticationMiddleware`` (the client's, a connector's or a call's),
/// a queue takes back the slot of a request while the request waits for a credential refresh, and gives it to the
/// next request in line: so a refresh sent through a client that shares the queue always gets a slot, however full
/// the queue was. When the refresh ends, each of those requests takes a slot again before it is sent again, ahead
/// of the requests that never started (and even while the queue is paused: they had started), within the cap.
/// A request waiting for a refresh counts neither in ``runningCount`` nor in ``pendingCount``. (A queue given as
/// `Connect(requestQueue:)` comes after every middleware: a request never waits for a refresh in it.)
///
/// ## Cancellation
/// Cancelling the future of a waiting request removes it from the queue: it is never sent. Cancelling the
/// future of a running request cancels its transport call; its slot is freed and the next request starts.
///
/// ## Sharing a queue between clients
/// Several clients may share one queue, to cap their requests together (say, every client talking to one
/// slow server). The cap, the order and ``pause()`` then apply to all of them. The queue knows which client
/// each waiting request came from, so a client's `Connect/cancelAllRequests()` cancels only that client's
/// requests: another client's waiting requests stay in line and take the slots it frees. ``cancelPending()``
/// is the queue's own and cancels every waiting request, whichever client it came from.
///
/// ## Threads
/// The queue never hops threads: a waiting request starts on the thread that freed its slot (the thread
/// that completed the previous request, or the one where a request started waiting for a credential refresh), or
/// on the thread that submitted it or called ``resume()``; a request back from a refresh is sent again on the
/// thread that ended the refresh, or on the one that freed a slot for it. When a
/// running request completes, the next one starts before the completed request's future is completed, so
/// by the time you observe a result the next request is already on its way. Requests that complete at once
/// (a stub, a fake transport) are started in a loop, so thousands of them use constant stack.
public final class RequestQueue: Middleware {
    /// A request waiting for a slot.
    private struct Waiting {
        let request: URLRequest
        let next: Sender
        let promise: Promise<ConnectResponse>
        /// The client that sent it (see ``Owner``); `nil` when the queue is used as a plain middleware.
        let owner: Owner?
    }

    /// Names the client a request came from, so that ``Connect/cancelAllRequests()`` cancels only that
    /// client's waiting requests when clients share a queue. Unique for the life of the process.
    struct Owner: Hashable, Sendable {
        private let id: UInt64
        private static let lastID = Protected<UInt64>(0)

        /// A new owner, different from every other.
        init() {
            id = Owner.lastID.withLock { last in
                last &+= 1
                return last
            }
        }
    }

    /// What sends a request when its turn comes: the rest of the pipeline, told which slot the request holds when
    /// something after the queue may give the slot back (see ``Slot``).
    enum Sender {
        /// The rest of the pipeline, as a middleware's `next`.
        case plain(Next)
        /// The rest of the pipeline, given the slot the request holds.
        case holdingSlot(@Sendable (consuming URLRequest, Slot) -> Future<ConnectResponse>)
    }

    /// The slot a running request holds, handed down the pipeline in its ``RequestContext``, so that an
    /// ``AuthenticationMiddleware`` after the queue can give it back while the request waits for a credential
    /// refresh (``park(_:)``) and take it again before sending the request again (``unpark(_:then:)``).
    struct Slot: Sendable {
        /// The queue the slot belongs to.
        let queue: RequestQueue
        /// The request's id in `queue`.
        let id: UInt64
        /// Whether the request was started by the call that queued it, on the thread that queued it, rather than
        /// later, by whatever freed a slot: only such a request can have been sent from inside a `refresh` call.
        let isStartedBySubmitter: Bool
    }

    /// A request that took a slot and must be started, outside the lock.
    private enum Start {
        /// A request that never started: send it.
        case first(id: UInt64, waiting: Waiting)
        /// A request back from waiting for a refresh, which took a slot again: go on with it.
        case returning(Returning)
    }

    /// A request back from waiting for a refresh, waiting for a slot again.
    private struct Returning {
        let id: UInt64
        /// Sends the request again, once it holds a slot.
        let resume: @Sendable () -> Void
    }

    /// Everything that changes, behind one lock.
    private struct MutableState {
        var isPaused = false
        var nextID: UInt64 = 0
        /// Waiting requests by id.
        var pending: [UInt64: Waiting] = [:]
        /// The order of arrival. May still list ids that left `pending` (cancelled); they are skipped.
        var order: [UInt64] = []
        /// The index in `order` of the oldest id not yet taken.
        var head = 0
        /// The requests holding a slot, with their transport future once `next` has returned it. Holding the
        /// future keeps it, and the callback that frees the slot, alive until it completes.
        var running: [UInt64: Future<ConnectResponse>?] = [:]
        /// The started requests that gave their slot back while they wait for a credential refresh (see
        /// ``park(_:)``), with their future as in `running`.
        var parked: [UInt64: Future<ConnectResponse>?] = [:]
        /// The parked requests whose refresh ended, waiting for a slot again, in the order they came back. They
        /// take free slots before any request in `order`, even while the queue is paused.
        var returning: [Returning] = []
        /// The threads running `startWaitingRequests(force:)` for this queue: a slot freed on one
        /// of them is left to that loop instead of starting a new, nested one (the trampoline).
        var drainingThreads: [pthread_t] = []
    }

    /// The most requests in flight at once (at least 1).
    public let maxConcurrentRequests: Int
    private let state = Protected(MutableState())

    /// Creates a queue.
    ///
    /// ```swift
    /// let connect = Connect(requestQueue: RequestQueue(maxConcurrentRequests: 4))
    /// ```
    ///
    /// - Parameter maxConcurrentRequests: The most requests in flight at once. A value below 1 is treated
    ///   as 1: the queue always lets at least one request run.
    public init(maxConcurrentRequests: Int) {
        self.maxConcurrentRequests = max(1, maxConcurrentRequests)
    }

    /// The number of requests waiting for a slot (not started yet).
    public var pendingCount: Int {
        state.withLock { $0.pending.count }
    }

    /// The number of requests started and not completed, less those waiting for a credential refresh (see
    /// "Requests waiting for a credential refresh" above): the number of slots taken.
    public var runningCount: Int {
        state.withLock { $0.running.count }
    }

    /// Whether the queue is paused: see ``pause()``.
    public var isPaused: Bool {
        state.withLock { $0.isPaused }
    }

    /// Stops starting requests. Running requests finish normally (one sent again after a credential refresh
    /// counts as running); new and waiting requests wait until ``resume()``.
    ///
    /// Use it when the device goes offline, for example.
    public func pause() {
        state.withLock { $0.isPaused = true }
    }

    /// Starts requests again: the waiting ones start in the order they arrived, up to the cap.
    ///
    /// Requests start on the calling thread, before this method returns.
    public func resume() {
        state.withLock { $0.isPaused = false }
        startWaitingRequests(force: true)
    }

    /// Fails every waiting request with ``ConnectError/Kind/cancelled``; none of them reaches the transport.
    ///
    /// Running requests are not affected. The waiting requests' futures are cancelled (``Future/isCancelled``
    /// is `true`), so whatever was chained after them is cancelled too.
    ///
    /// This cancels the waiting requests of every client that shares the queue. To cancel one client's
    /// requests only, call that client's ``Connect/cancelAllRequests()``.
    public func cancelPending() {
        let cancelled: [Waiting] = state.withLock { state in
            let waiting = state.order[state.head...].compactMap { state.pending[$0] }
            state.pending.removeAll()
            state.order.removeAll()
            state.head = 0
            return waiting
        }
        for waiting in cancelled { waiting.promise.future.cancel() }
    }

    /// Fails the waiting requests that `owner` sent, as ``cancelPending()`` does; other waiting requests keep
    /// their place.
    func cancelPending(of owner: Owner) {
        let cancelled: [Waiting] = state.withLock { state in
            var cancelled: [Waiting] = []
            for id in state.order[state.head...] {
                guard let waiting = state.pending[id], waiting.owner == owner else { continue }
                state.pending[id] = nil
                cancelled.append(waiting)
            }
            // The ids left in `order` are skipped when their turn comes.
            return cancelled
        }
        for waiting in cancelled { waiting.promise.future.cancel() }
    }

    /// Queues the request, and starts it at once if a slot is free and nobody is waiting.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - context: Facts about the call (unused).
    ///   - next: The plugins and the transport; called when the request's turn comes, or never if its
    ///     future is cancelled while it waits.
    /// - Returns: A future of the response; it completes when the transport answers, or fails with
    ///   ``ConnectError/Kind/cancelled`` if cancelled (see ``cancelPending()``).
    public func intercept(_ request: consuming URLRequest, context: RequestContext, next: @escaping Next) -> Future<
        ConnectResponse
    > {
        enqueue(request, owner: nil, next: .plain(next))
    }

    /// ``intercept(_:context:next:)`` for a request of the client `owner`.
    func enqueue(_ request: consuming URLRequest, owner: Owner?, next: @escaping Next) -> Future<ConnectResponse> {
        enqueue(request, owner: owner, next: .plain(next))
    }

    /// Queues a request whose `next` is told which slot it holds: what ``MiddlewareChain`` uses for a queue listed
    /// before an ``AuthenticationMiddleware``.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - owner: The client that sent it, or `nil`.
    ///   - next: Sends the request through the rest of the pipeline, given its ``Slot``.
    /// - Returns: A future of the response, as ``intercept(_:context:next:)`` returns.
    func enqueue(
        _ request: consuming URLRequest,
        owner: Owner?,
        holdingSlot next: @escaping @Sendable (consuming URLRequest, Slot) -> Future<ConnectResponse>
    ) -> Future<ConnectResponse> {
        enqueue(request, owner: owner, next: .holdingSlot(next))
    }

    /// Queues a request, and starts waiting requests while slots are free.
    private func enqueue(_ request: consuming URLRequest, owner: Owner?, next: Sender) -> Future<ConnectResponse> {
        let promise = Promise<ConnectResponse>()
        let waiting = Waiting(request: request, next: next, promise: promise, owner: owner)
        let id: UInt64 = state.withLock { state in
            state.nextID &+= 1
            state.pending[state.nextID] = waiting
            state.order.append(state.nextID)
            return state.nextID
        }
        promise.setCancelHandler { [weak self] in self?.cancel(id) }
        // Forced: if this thread is already starting requests (a request submitted from the callback of one
        // that completed at once), a caller blocking on the new request would otherwise wait forever.
        startWaitingRequests(force: true, submitted: id)
        return promise.future
    }
}

// MARK: - Requests waiting for a credential refresh

extension RequestQueue {
    /// Gives back the slot of running request `id`, which waits for a credential refresh; call
    /// ``startFreedSlots()`` next, outside any lock. Does nothing if the request completed or gave it back already.
    ///
    /// Takes only the queue's lock and calls no code of anyone else: an ``AuthenticationMiddleware`` calls it under
    /// its own lock, so that the request cannot come back (``unpark(_:then:)``) before it left.
    func park(_ id: UInt64) {
        state.withLock { state in
            guard let index = state.running.index(forKey: id) else { return }
            let future = state.running.values[index]
            state.running.remove(at: index)
            state.parked[id] = future
        }
    }

    /// Starts waiting requests in the slots ``park(_:)`` freed, on this thread unless it is already starting
    /// requests of this queue further up its stack.
    func startFreedSlots() {
        startWaitingRequests(force: false)
    }

    /// Calls `resume` once request `id`, back from waiting for a refresh, holds a slot again: at once if one is
    /// free, else when one is freed, before any request that never started. Calls it at once if the request holds
    /// no slot to take back (it never gave it back, or the queue no longer knows it).
    func unpark(_ id: UInt64, then resume: @escaping @Sendable () -> Void) {
        let queued: Bool = state.withLock { state in
            guard state.parked[id] != nil, !state.returning.contains(where: { $0.id == id }) else { return false }
            state.returning.append(Returning(id: id, resume: resume))
            return true
        }
        guard queued else { return resume() }
        startWaitingRequests(force: true)
    }
}

/// The queue slots a request holds on its way down the pipeline, outermost queue first (see
/// ``RequestQueue/Slot``); empty unless a ``RequestQueue`` comes before an ``AuthenticationMiddleware``.
///
/// Empty, it is one `nil` reference: copying a ``RequestContext`` that holds it retains nothing.
struct HeldQueueSlots: Sendable {
    /// Every slot, outermost first; `nil` for none.
    private(set) var all: [RequestQueue.Slot]?

    /// Whether the request holds no slot.
    var isEmpty: Bool { all == nil }

    /// Whether a request with these slots may have been sent from inside a `refresh` call on this thread: it holds
    /// no slot, or was started at once by the call that queued it in every queue.
    var mayComeFromTheCallingThread: Bool {
        all?.allSatisfy(\.isStartedBySubmitter) ?? true
    }

    /// Adds the slot of the next queue down the pipeline.
    mutating func append(_ slot: RequestQueue.Slot) {
        all = (all ?? []) + [slot]
    }

    /// Gives every slot back (see ``RequestQueue/park(_:)``). Takes the queues' locks only.
    func park() {
        for slot in all ?? [] { slot.queue.park(slot.id) }
    }

    /// Starts waiting requests in the slots ``park()`` freed.
    func startFreedSlots() {
        for slot in all ?? [] { slot.queue.startFreedSlots() }
    }

    /// Takes every slot again, outermost first, then calls `resume` (see ``RequestQueue/unpark(_:then:)``).
    func unpark(then resume: @escaping @Sendable () -> Void) {
        Self.unpark((all ?? [])[...], then: resume)
    }

    /// Takes the slots of `slots` again, in order, then calls `resume`.
    private static func unpark(_ slots: ArraySlice<RequestQueue.Slot>, then resume: @escaping @Sendable () -> Void) {
        guard let slot = slots.first else { return resume() }
        let rest = slots.dropFirst()
        slot.queue.unpark(slot.id) { unpark(rest, then: resume) }
    }
}

// MARK: - Starting requests

extension RequestQueue {
    /// Starts waiting requests while slots are free, in a loop on the calling thread.
    ///
    /// - Parameters:
    ///   - force: Whether to loop even if this thread already runs the loop further up its stack.
    ///     `false` when a slot was freed: the loop further up starts the next request, which keeps the stack
    ///     flat when requests complete at once.
    ///   - submitted: The id of the request the calling ``enqueue(_:owner:next:)`` queued, if any: started by this
    ///     loop, it is started by its submitter (see ``Slot/isStartedBySubmitter``).
    private func startWaitingRequests(force: Bool, submitted: UInt64? = nil) {
        let thread = pthread_self()
        let entered: Bool = state.withLock { state in
            if !force, state.drainingThreads.contains(where: { pthread_equal($0, thread) != 0 }) { return false }
            state.drainingThreads.append(thread)
            return true
        }
        guard entered else { return }
        while let start = state.withLock({ takeNextInsideLock(&$0, leaving: thread) }) {
            switch start {
            case .first(let id, let waiting):
                run(id, waiting, isStartedBySubmitter: id == submitted)
            case .returning(let returning):
                returning.resume()
            }
        }
    }

    /// Moves the oldest request back from a refresh, else the oldest waiting request, into a free slot; with
    /// nothing to start, takes `thread` off the draining threads (in the same critical section, so no freed slot
    /// goes unnoticed).
    private func takeNextInsideLock(_ state: inout MutableState, leaving thread: pthread_t) -> Start? {
        if state.running.count < maxConcurrentRequests, !state.returning.isEmpty {
            let returning = state.returning.removeFirst()
            let future = state.parked.removeValue(forKey: returning.id) ?? nil
            state.running[returning.id] = future
            return .returning(returning)
        }
        if !state.isPaused, state.running.count < maxConcurrentRequests {
            while state.head < state.order.count {
                let id = state.order[state.head]
                state.head += 1
                guard let waiting = state.pending.removeValue(forKey: id) else { continue }
                compactOrderInsideLock(&state)
                state.running[id] = .some(nil)
                return .first(id: id, waiting: waiting)
            }
            compactOrderInsideLock(&state)
        }
        if let index = state.drainingThreads.lastIndex(where: { pthread_equal($0, thread) != 0 }) {
            state.drainingThreads.remove(at: index)
        }
        return nil
    }

    /// Drops the ids already taken from the front of `order`, once they are the larger part of it.
    private func compactOrderInsideLock(_ state: inout MutableState) {
        if state.head == state.order.count {
            state.order.removeAll(keepingCapacity: true)
            state.head = 0
        } else if state.head >= 1024, state.head * 2 >= state.order.count {
            state.order.removeFirst(state.head)
            state.head = 0
        }
    }

    /// Sends a request that holds a slot, and frees the slot when its transport future completes.
    private func run(_ id: UInt64, _ waiting: Waiting, isStartedBySubmitter: Bool) {
        let promise = waiting.promise
        // Cancelled between leaving `pending` and now: never send it.
        if promise.future.isCompleted {
            state.withLock { _ = $0.running.removeValue(forKey: id) }
            return
        }
        let sent: Future<ConnectResponse>
        switch waiting.next {
        case .plain(let next):
            sent = next(waiting.request)
        case .holdingSlot(let next):
            sent = next(waiting.request, Slot(queue: self, id: id, isStartedBySubmitter: isStartedBySubmitter))
        }
        state.withLock { state in
            // Parked already if it waits for a refresh that `next` started.
            if let index = state.running.index(forKey: id) {
                state.running.values[index] = sent
            } else {
                state.parked[id] = sent
            }
        }
        // `cancel(_:)` found no future to cancel if it ran before the line above; it set `isCancelled` first.
        if promise.future.isCancelled { sent.cancel() }
        sent.whenComplete { result in
            self.finish(id, with: result, promise: promise)
        }
    }

    /// Frees the slot of a completed request, starts the next one, then completes the caller's future.
    private func finish(
        _ id: UInt64, with result: Result<ConnectResponse, any Error>, promise: Promise<ConnectResponse>
    ) {
        let dropped: Returning? = state.withLock { state in
            guard state.running.removeValue(forKey: id) == nil else { return nil }
            // It held no slot: it waited for a refresh, or for a slot after one.
            guard state.parked.removeValue(forKey: id) != nil,
                let index = state.returning.firstIndex(where: { $0.id == id })
            else { return nil }
            return state.returning.remove(at: index)
        }
        // Released outside the lock: what the request's `resume` holds (the rest of the pipeline, down to the
        // transport of a client that is gone) may run deinit code, which may use this queue.
        _ = dropped
        startWaitingRequests(force: false)
        promise.completeIfPending(with: result)
    }

    /// Runs when a caller cancels its future: a waiting request leaves the queue, a running one is cancelled
    /// (its completion frees the slot), and so is one waiting for a refresh.
    private func cancel(_ id: UInt64) {
        let running: Future<ConnectResponse>? = state.withLock { state in
            if state.pending.removeValue(forKey: id) != nil { return nil }
            return state.running[id] ?? state.parked[id] ?? nil
        }
        running?.cancel()
    }
}

extension RequestQueue: PreservesValidHeaders {}

/// A client's entry into its ``RequestQueue``: queues each request as that client's, so that the client's
/// ``Connect/cancelAllRequests()`` cancels its own waiting requests and no other client's.
struct ClientRequestQueue: Middleware, PreservesValidHeaders {
    let queue: RequestQueue
    let owner: RequestQueue.Owner

    func intercept(_ request: consuming URLRequest, context: RequestContext, next: @escaping Next) -> Future<
        ConnectResponse
    > {
        queue.enqueue(request, owner: owner, next: next)
    }
}
