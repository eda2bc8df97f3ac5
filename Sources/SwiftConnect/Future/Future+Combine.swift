import Dispatch

// MARK: - Combining futures

extension Future {
    /// A future of both values, once both futures succeed; it fails as soon as either fails, and the other is then
    /// cancelled (a request's network task with it), as a task group cancels its other tasks when one throws.
    ///
    /// ```swift
    /// connect.send(GetUser(id: 1)).zip(connect.send(GetTodos(userID: 1))).onSuccess { user, todos in
    ///     print(user.name, todos.count)
    /// }
    /// ```
    ///
    /// The other future's work is stopped before anyone hears of the failure, and it is cancelled for everyone that
    /// holds it: to keep a future you share running, zip a future of your own that follows it (see ``value``).
    /// Cancelling the returned future cancels both.
    ///
    /// - Parameter other: The second future.
    /// - Returns: A future of the pair of values.
    public func zip<Other>(_ other: Future<Other>) -> Future<(Value, Other)> {
        // Chained after this future: on its ``receive(on:)`` queue, as `map` would be.
        let derived = Future<(Value, Other)>(callbackQueue: callbackQueue)
        let values = Protected<(Value?, Other?)>((nil, nil))
        derived.waitOn(CombinedInputs([self, other]))
        whenCompleteReturningWork { [weak other] result in
            switch result {
            case .failure(let error):
                // The other's work is stopped before anyone hears of the failure: cancelled here and now, not queued
                // for a cancellation running on this thread (this failure may come from inside one, through a cancel
                // handler that cancels or fails an input), which would cancel it only after `work` has run.
                let (failed, work) = derived.complete(.failure(error), reportingDoubleCompletionAt: nil)
                if failed { other?.cancel() }
                return work
            case .success(let value):
                let pair = values.withLock { state -> (Value, Other)? in
                    state.0 = value
                    return state.1.map { (value, $0) }
                }
                return pair.map { derived.resolve(.success($0)) } ?? .empty
            }
        }.run()
        other.whenCompleteReturningWork { [weak self] result in
            switch result {
            case .failure(let error):
                let (failed, work) = derived.complete(.failure(error), reportingDoubleCompletionAt: nil)
                if failed { self?.cancel() }
                return work
            case .success(let otherValue):
                let pair = values.withLock { state -> (Value, Other)? in
                    state.1 = otherValue
                    return state.0.map { ($0, otherValue) }
                }
                return pair.map { derived.resolve(.success($0)) } ?? .empty
            }
        }.run()
        return derived
    }

    /// A future of every value, in the order of `futures`, once all succeed; it fails with the first error, and
    /// every future still pending is then cancelled (a request's network task with it), as a task group cancels its
    /// other tasks when one throws.
    ///
    /// ```swift
    /// let todos: Future<[Todo]> = Future.all((1...3).map { connect.send(GetTodo(id: $0)) })
    /// ```
    ///
    /// The others' work is stopped before anyone hears of the failure, and each is cancelled for everyone that holds
    /// it; to wait for every result whatever fails, use ``allSettled(_:)``. Cancelling the returned future cancels
    /// every future still pending. An empty array succeeds at once with `[]`.
    ///
    /// - Parameter futures: The futures to wait for.
    /// - Returns: A future of the values in order.
    public static func all<Element>(_ futures: [Future<Element>]) -> Future<[Element]> where Value == [Element] {
        if futures.isEmpty { return Future(value: []) }
        let derived = Future<[Element]>(callbackQueue: sharedQueue(of: futures))
        let state = Protected(AllState<Element>(count: futures.count))
        let inputs = CombinedInputs(futures)
        derived.waitOn(inputs)
        for (index, future) in futures.enumerated() {
            future.whenCompleteReturningWork { result in
                switch result {
                case .failure(let error):
                    // The others' work is stopped before anyone hears of the failure, here and now, as in `zip` (this
                    // input, complete, stays as it is).
                    let (failed, work) = derived.complete(.failure(error), reportingDoubleCompletionAt: nil)
                    if failed { inputs.cancelAll() }
                    return work
                case .success(let value):
                    let values = state.withLock { $0.store(value, at: index) }
                    return values.map { derived.resolve(.success($0)) } ?? .empty
                }
            }.run()
        }
        return derived
    }

    /// A future of the result of whichever future completes first, success or failure; the others are then
    /// cancelled.
    ///
    /// ```swift
    /// // Ask two mirrors; the slower request is cancelled as soon as one answers.
    /// let file = Future.race([primary.send(GetFile(name: "a")), mirror.send(GetFile(name: "a"))])
    /// ```
    ///
    /// The first result wins, a failure included (as with PromiseKit's `race`). The losers are cancelled before
    /// the returned future's callbacks run, for everyone that holds them. A future already complete when `race` is
    /// called wins at once (the first such one in the array). Cancelling the returned future cancels every input
    /// still pending.
    ///
    /// An empty array fails at once with ``FutureError/emptyRace``: with nothing to wait for, nothing could ever
    /// come first.
    ///
    /// - Parameter futures: The futures to race.
    /// - Returns: A future of the first result.
    public static func race(_ futures: [Future<Value>]) -> Future<Value> {
        if futures.isEmpty { return Future(error: FutureError.emptyRace) }
        let derived = Future<Value>(callbackQueue: sharedQueue(of: futures))
        // A complete input wins at once, read here: its callback may be delivered later, on its `receive(on:)`
        // queue, after one of a pending input that completes meanwhile.
        if let complete = futures.first(where: { $0.isCompleted }), let result = complete.result {
            let (_, work) = derived.complete(result, reportingDoubleCompletionAt: nil)
            for input in futures where input !== complete { input.cancel() }
            work.run()
            return derived
        }
        // Its cancellation and timeout are reported as the first input's chain reports them (a race of requests:
        // the client's error): the inputs lead there (`followsFirst`).
        let inputs = CombinedInputs(futures, followsFirst: true)
        derived.waitOn(inputs)
        for future in futures {
            // Unowned: the callback is stored in `future` and only `future` runs it.
            future.whenCompleteReturningWork { [unowned future] result in
                let (won, work) = derived.complete(result, reportingDoubleCompletionAt: nil)
                guard won else { return work }
                // The losers' work is stopped before anyone hears of the winner. Their failures (`cancelled`)
                // cannot reach `derived` any more.
                inputs.cancelAll(except: future)
                return work
            }.run()
        }
        return derived
    }

    /// A future of every result, success or failure, in the order of `futures`, once all are complete.
    ///
    /// ```swift
    /// Future.allSettled(ids.map { connect.send(GetTodo(id: $0)) }).onSuccess { results in
    ///     let todos = results.compactMap { try? $0.get() }
    ///     print("\(todos.count) of \(results.count) loaded")
    /// }
    /// ```
    ///
    /// Unlike ``all(_:)``, one failure neither fails it nor ends the wait: it never fails, unless it is itself
    /// cancelled (like PromiseKit's `when(resolved:)` and SwiftNIO's `whenAllComplete`). Cancelling it cancels
    /// every input still pending, and fails it with ``FutureError/cancelled``. An empty array succeeds at
    /// once with `[]`.
    ///
    /// - Parameter futures: The futures to wait for.
    /// - Returns: A future of the results in order.
    public static func allSettled<Element>(
        _ futures: [Future<Element>]
    ) -> Future<[Result<Element, any Error>]> where Value == [Result<Element, any Error>] {
        if futures.isEmpty { return Future(value: []) }
        let derived = Future<[Result<Element, any Error>]>(callbackQueue: sharedQueue(of: futures))
        let state = Protected(AllState<Result<Element, any Error>>(count: futures.count))
        derived.waitOn(CombinedInputs(futures))
        for (index, future) in futures.enumerated() {
            future.whenCompleteReturningWork { result in
                let results = state.withLock { $0.store(result, at: index) }
                return results.map { derived.resolve(.success($0)) } ?? .empty
            }.run()
        }
        return derived
    }
}

/// The inputs of a combination (``Future/zip(_:)``, ``Future/all(_:)``, ``Future/allSettled(_:)``,
/// ``Future/race(_:)``), held weakly: each input's callback holds the combination, so holding the inputs too would
/// make a cycle that keeps a combination abandoned while pending (and its inputs) alive forever.
///
/// The combination's upstream link points here (``Future/waitOn(_:)``), so a walk up a chain reaches every future a
/// combination waits on: ``Future/waitsFor(_:)`` finds a `flatMap` step that returned a combination of its own
/// future. To cancellation, it is a stage that completes nothing: the combination's cancel handler cancels the inputs
/// (``cancelAsInputs()``), and a walk up the chain stops here, or, for a race, goes on to its first input.
final class CombinedInputs: CancellableFuture {
    /// A weak reference to one input.
    private struct Input {
        weak var future: (any CancellableFuture)?
    }

    private let inputs: [Input]
    /// Whether a walk up the chain goes on to the first input (a race: it reports a cancellation as that input's
    /// chain does).
    private let followsFirst: Bool

    /// Holds `futures` weakly.
    ///
    /// - Parameters:
    ///   - futures: The combination's inputs, in order.
    ///   - followsFirst: Whether ``pendingUpstream`` is the first input, for a race.
    init(_ futures: [any CancellableFuture], followsFirst: Bool = false) {
        inputs = futures.map { Input(future: $0) }
        self.followsFirst = followsFirst
    }

    /// The inputs still alive.
    var combinationInputs: [any CancellableFuture]? {
        inputs.compactMap(\.future)
    }

    /// Cancels every input, from the combination's cancel handler: queued for the cancellation running on this
    /// thread, if any (``Future/cancelAsInput()``).
    func cancelAsInputs() {
        for input in inputs { input.future?.cancelAsInput() }
    }

    /// Cancels every input but `winner`, here and now: a combination that failed or was won stops the others' work
    /// before anyone hears of its result.
    func cancelAll(except winner: AnyObject? = nil) {
        for input in inputs where input.future !== winner { input.future?.cancel() }
    }

    func cancel() {
        cancelAsInputs()
    }

    func cancelStep(failingWith error: any Error) -> (upstream: (any CancellableFuture)?, hasCallbacks: Bool) {
        (pendingUpstream, false)
    }

    func runCancellationCallbacks() {}

    func cancelStepsAsInput(notifying toNotify: inout [any CancellableFuture]) {}

    func cancelAsInput() {
        cancelAsInputs()
    }

    func ownReport(of error: FutureError) -> (any Error)? { nil }

    var pendingUpstream: (any CancellableFuture)? {
        followsFirst ? inputs.first?.future : nil
    }

    func reporterForDerived() -> (any FutureErrorReporting.Type)? {
        pendingUpstream?.reporterForDerived()
    }
}

/// The values gathered so far by ``Future/all(_:)`` (and the results, by ``Future/allSettled(_:)``).
struct AllState<Element> {
    private var values: [Element?]
    private var remaining: Int

    init(count: Int) {
        values = Array(repeating: nil, count: count)
        remaining = count
    }

    /// Stores a value; returns every value once the last one arrives.
    mutating func store(_ value: Element, at index: Int) -> [Element]? {
        values[index] = value
        remaining -= 1
        guard remaining == 0 else { return nil }
        return values.map { $0! }
    }
}

extension Future {
    /// Makes this combination wait on `inputs`: its cancellation cancels them, and its upstream link points at them
    /// (held by the cancel handler while this future is pending: the link is weak).
    func waitOn(_ inputs: CombinedInputs) {
        setCancelHandler { inputs.cancelAsInputs() }
        setUpstream(inputs)
    }

    /// The ``receive(on:)`` queue every one of `futures` delivers on, if they share one: a combination of them is
    /// chained after each, so its callbacks run there too; `nil` when they have none, or different ones.
    static func sharedQueue<Element>(of futures: [Future<Element>]) -> DispatchQueue? {
        guard let queue = futures.first?.callbackQueue, futures.allSatisfy({ $0.callbackQueue === queue }) else {
            return nil
        }
        return queue
    }
}
