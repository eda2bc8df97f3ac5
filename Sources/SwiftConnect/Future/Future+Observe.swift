import Dispatch

// MARK: - Observing results

extension Future {
    /// Calls `callback` with the result once the future completes.
    ///
    /// ```swift
    /// Connect.default.request(TodoConnector.get(id: 123))
    ///     .decoded(toType: Todo.self)
    ///     .observe { result in
    ///         switch result {
    ///         case .success(let todo): print(todo)
    ///         case .failure(let error): print(error)
    ///         }
    ///     }
    /// ```
    ///
    /// - Parameters:
    ///   - queue: Where `callback` runs. `nil` (the default) runs it on the thread that completes the
    ///     future, or at once on this thread if the future is already complete. Pass `.main` for UI work.
    ///   - callback: Receives the result; runs exactly once.
    @inlinable
    public func observe(
        on queue: DispatchQueue? = nil,
        _ callback: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) {
        // Created resolved: deliver at once (or hand to `queue` at once), compiled into the caller.
        guard lock == nil else { return observeSlowPath(on: queue, callback) }
        let result = resolvedResult
        if let queue {
            queue.async { callback(result) }
        } else {
            callback(result)
        }
    }

    /// ``observe(on:_:)`` for a future that has a lock.
    @inlinable
    func observeSlowPath(
        on queue: DispatchQueue?,
        _ callback: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) {
        if let queue {
            whenComplete { result in queue.async { callback(result) } }
        } else {
            whenComplete(callback)
        }
    }

    /// Runs `callback` with the value if the future succeeds. Returns `self`, to keep chaining.
    ///
    /// - Parameters:
    ///   - queue: Where `callback` runs; `nil` runs it on the completing thread (see ``observe(on:_:)``).
    ///   - callback: Receives the value.
    /// - Returns: This future.
    @discardableResult
    public func onSuccess(
        on queue: DispatchQueue? = nil,
        _ callback: @escaping @Sendable (Value) -> Void
    ) -> Future<Value> {
        observe(on: queue) { result in
            if case .success(let value) = result { callback(value) }
        }
        return self
    }

    /// Runs `callback` with the error if the future fails. Returns `self`, to keep chaining.
    ///
    /// - Parameters:
    ///   - queue: Where `callback` runs; `nil` runs it on the completing thread (see ``observe(on:_:)``).
    ///   - callback: Receives the error.
    /// - Returns: This future.
    @discardableResult
    public func onFailure(
        on queue: DispatchQueue? = nil,
        _ callback: @escaping @Sendable (any Error) -> Void
    ) -> Future<Value> {
        observe(on: queue) { result in
            if case .failure(let error) = result { callback(error) }
        }
        return self
    }

    /// Runs `callback` when the future completes either way. Returns `self`, to keep chaining.
    ///
    /// - Parameters:
    ///   - queue: Where `callback` runs; `nil` runs it on the completing thread (see ``observe(on:_:)``).
    ///   - callback: Runs once the future is complete.
    /// - Returns: This future.
    @discardableResult
    public func always(on queue: DispatchQueue? = nil, _ callback: @escaping @Sendable () -> Void) -> Future<Value> {
        observe(on: queue) { _ in callback() }
        return self
    }

    /// A future with the same result whose callbacks all run on `queue`.
    ///
    /// Every stage chained after `receive(on:)` on this future (a callback, `map`, `flatMap`…) runs on `queue`, even
    /// when added after completion. A combination of several futures does not follow it: `zip` delivers on its
    /// receiver's queue, `all` and `race` on the queue all their inputs share, and otherwise on the thread that
    /// completes them, so `other.zip(todo.receive(on: .main))` may call back off the main queue. The callbacks
    /// are still `@Sendable` closures the compiler does not know run on the main actor; on `.main`, say so with
    /// `MainActor.assumeIsolated` to touch UI state:
    ///
    /// ```swift
    /// connect.send(GetTodo(id: 1))
    ///     .receive(on: .main)
    ///     .onSuccess { todo in
    ///         MainActor.assumeIsolated { label.text = todo.title }
    ///     }
    /// ```
    ///
    /// - Parameter queue: The queue that runs the returned future's callbacks.
    /// - Returns: A future with this future's result, delivering on `queue`.
    public func receive(on queue: DispatchQueue) -> Future<Value> {
        let derived = passingThrough(on: queue)
        whenCompleteReturningWork { result in derived.resolve(result) }.run()
        return derived
    }
}
