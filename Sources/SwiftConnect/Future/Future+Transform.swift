// MARK: - Transforming values

extension Future {
    /// Transforms the value when the future succeeds; errors pass through untouched.
    ///
    /// An error thrown by `transform` fails the returned future.
    ///
    /// ```swift
    /// let title: Future<String> = todo.map { $0.title }
    /// ```
    ///
    /// - Parameter transform: Turns the value into a new value. Runs on the thread that completes `self`
    ///   (or at once, if `self` is already complete).
    /// - Returns: A future of the transformed value.
    @inlinable
    public func map<NewValue>(
        _ transform: @escaping @Sendable (Value) throws -> NewValue
    ) -> Future<NewValue> {
        // Created resolved (no lock, so no callback queue and a state that never changes): transform at once,
        // compiled into the caller and specialised for its types. One allocation, the resolved future.
        guard lock == nil else { return mapSlowPath(transform) }
        return Self.resolved(resolvedResult, mappedBy: transform)
    }

    /// A resolved future of `result` with `transform` applied to its value: the one allocation of a `map`
    /// stage on a complete future.
    @inlinable
    static func resolved<NewValue>(
        _ result: Result<Value, any Error>, mappedBy transform: (Value) throws -> NewValue
    ) -> Future<NewValue> {
        switch result {
        case .success(let value):
            do { return Future<NewValue>(result: .success(try transform(value))) } catch {
                return Future<NewValue>(result: .failure(error))
            }
        case .failure(let error):
            return Future<NewValue>(result: .failure(error))
        }
    }

    /// ``map(_:)`` for a future that has a lock: pending, or resolved by a promise or an operator.
    @inlinable
    func mapSlowPath<NewValue>(
        _ transform: @escaping @Sendable (Value) throws -> NewValue
    ) -> Future<NewValue> {
        // Already complete, its callbacks run: transform at once. Only the resolved future is allocated, not the
        // closure that the general path below wraps around `transform` (issue 6: a `map` stage costs at most one
        // allocation).
        if let result = resultForImmediateTransform { return Self.resolved(result, mappedBy: transform) }
        return transformResult { result in result.flatMap { value in Result { try transform(value) } } }
    }

    /// Chains an asynchronous step: when the future succeeds, starts the future `transform` returns.
    ///
    /// ```swift
    /// let comments = connect.send(GetTodo(id: 1)).flatMap { todo in
    ///     connect.send(GetComments(todoID: todo.id))
    /// }
    /// ```
    ///
    /// A step that returns the future `flatMap` returned, or one that waits for it (a later stage of its chain, or a
    /// `zip`, `all`, `allSettled` or `race` with such a future among its inputs), could never complete: the returned
    /// future fails instead, with an error that says so.
    ///
    /// - Parameter transform: Starts the next step from the value. An error it throws fails the result.
    /// - Returns: A future of the next step's value.
    @inlinable
    public func flatMap<NewValue>(
        _ transform: @escaping @Sendable (Value) throws -> Future<NewValue>
    ) -> Future<NewValue> {
        // Created resolved: start the next step at once. A next step created resolved too is returned as it
        // is (nothing about it can change); any other is followed as the general path does.
        guard lock == nil else { return flatMapSlowPath(transform) }
        switch resolvedResult {
        case .success(let value):
            let next: Future<NewValue>
            do { next = try transform(value) } catch { return Future<NewValue>(result: .failure(error)) }
            return next.lock == nil ? next : next.followed()
        case .failure(let error):
            return Future<NewValue>(result: .failure(error))
        }
    }

    /// ``flatMap(_:)`` for a future that has a lock.
    @inlinable
    func flatMapSlowPath<NewValue>(
        _ transform: @escaping @Sendable (Value) throws -> Future<NewValue>
    ) -> Future<NewValue> {
        chain { result in
            switch result {
            case .success(let value):
                do { return .next(try transform(value)) } catch { return .done(.failure(error)) }
            case .failure(let error):
                return .done(.failure(error))
            }
        }
    }

    /// Transforms the error when the future fails; values pass through untouched.
    ///
    /// ```swift
    /// let future = todo.mapError { error in AppError.network(error) }
    /// ```
    ///
    /// - Parameter transform: Turns the error into another error.
    /// - Returns: A future with the transformed error.
    @inlinable
    public func mapError(_ transform: @escaping @Sendable (any Error) -> any Error) -> Future<Value> {
        guard lock == nil else { return mapErrorSlowPath(transform) }
        return Future(result: resolvedResult.mapError { transform($0) })
    }

    /// ``mapError(_:)`` for a future that has a lock.
    @usableFromInline
    func mapErrorSlowPath(_ transform: @escaping @Sendable (any Error) -> any Error) -> Future<Value> {
        transformFailure { result in result.mapError { transform($0) } }
    }

    /// Replaces a failure with a value.
    ///
    /// ```swift
    /// let todos = connect.send(ListTodos()).recover { _ in [] }
    /// ```
    ///
    /// - Parameter body: Returns a value for the error, or throws to keep failing.
    /// - Returns: A future that fails only if `body` throws.
    @inlinable
    public func recover(_ body: @escaping @Sendable (any Error) throws -> Value) -> Future<Value> {
        guard lock == nil else { return recoverSlowPath(body) }
        let result = resolvedResult
        switch result {
        case .success: return Future(result: result)
        case .failure(let error): return Future(result: Result { try body(error) })
        }
    }

    /// The synchronous ``recover(_:)`` for a future that has a lock.
    @usableFromInline
    func recoverSlowPath(_ body: @escaping @Sendable (any Error) throws -> Value) -> Future<Value> {
        transformFailure { result in
            switch result {
            case .success: return result
            case .failure(let error): return Result { try body(error) }
            }
        }
    }

    /// Replaces a failure with another asynchronous attempt.
    ///
    /// ```swift
    /// let todo = primary.request(endpoint).recover { _ in fallback.request(endpoint) }
    /// ```
    ///
    /// As with ``flatMap(_:)``, a recovery that returns the future `recover` returned, or one that waits for it,
    /// fails that future with an error that says so, instead of leaving it pending for good.
    ///
    /// - Parameter body: Returns the future to use instead, or throws to keep failing.
    /// - Returns: A future of the value, from `self` or from the recovery.
    public func recover(_ body: @escaping @Sendable (any Error) throws -> Future<Value>) -> Future<Value> {
        // Whether the recovery ran, with the response body its future carries, if any: the value comes from it then.
        // Its source, not the future: the future holds the chain that holds this, a cycle that kept a recovery that
        // never completes alive, and with it every observer of the chain, after everybody let go of it.
        let recovery = Protected<ResponseBodySource??>(nil)
        let recovered = chain { result -> Step<Value> in
            switch result {
            case .success:
                return .done(result)
            case .failure(let error):
                do {
                    let next = try body(error)
                    recovery.withLock { $0 = .some(next.attachment as? ResponseBodySource) }
                    return .next(next)
                } catch {
                    return .done(.failure(error))
                }
            }
        }
        guard let attachment else { return recovered }
        guard let source = attachment as? ResponseBodySource else {
            // A success passes through unchanged: keep what this future knows of it, as the synchronous `recover`
            // does.
            let derived = Future<Value>(callbackQueue: callbackQueue, attachment: attachment)
            derived.setUpstream(recovered)
            recovered.whenCompleteReturningWork { derived.resolve($0) }.run()
            return derived
        }
        // A response body: decoded as the body it is, this one's on a success, the recovery's body future's when it
        // gave the value (its response's content type and charset, its client's decoders), with the fallback
        // decoder when the recovery's future knows of no response.
        let derivedSource = source.recovering()
        let derived = Future<Value>(callbackQueue: callbackQueue, attachment: derivedSource)
        derived.setUpstream(recovered)
        recovered.whenCompleteReturningWork { result in
            if case .success = result {
                if let recovered = recovery.snapshot {
                    derivedSource.adopt(recovered)
                } else {
                    derivedSource.adopt(source)
                }
            }
            return derived.resolve(result)
        }.run()
        return derived
    }

    /// Discards the value, keeping only success or failure.
    ///
    /// - Returns: A future that succeeds with `()` when `self` succeeds.
    @inlinable
    public func asVoid() -> Future<Void> {
        map { _ in () }
    }
}

// MARK: - Primitives the operators share

extension Future {
    /// The primitive behind every synchronous operator: derives a future whose result is computed from
    /// this one's. On an already complete future it computes at once and allocates one resolved future.
    @inlinable
    func transformResult<NewValue>(
        _ transform: @escaping @Sendable (Result<Value, any Error>) -> Result<NewValue, any Error>
    ) -> Future<NewValue> {
        if let result = resultForImmediateTransform { return Future<NewValue>(result: transform(result)) }
        return deriveResult(transform)
    }

    /// ``transformResult(_:)`` for the operators that act on a failure and pass a success through (``mapError(_:)``,
    /// ``recover(_:)``): the failure that cancelling the returned future causes runs no `transform`. As a success
    /// passes through unchanged, the returned future keeps this one's ``attachment`` (``passingThrough()``): a
    /// response body decodes by its response's content type after these operators too.
    func transformFailure(
        _ transform: @escaping @Sendable (Result<Value, any Error>) -> Result<Value, any Error>
    ) -> Future<Value> {
        if attachment == nil, let result = resultForImmediateTransform { return Future(result: transform(result)) }
        let derived = passingThrough()
        whenCompleteReturningWork { result in
            // As in `chain`: the failure that cancelling `derived` caused runs no `recover` or `mapError` closure.
            if case .failure = result, derived.isCompleted { return .empty }
            return derived.resolve(transform(result))
        }.run()
        return derived
    }

    /// ``transformResult(_:)`` without its look at whether the future is complete, for a caller that has just
    /// looked (each look takes the lock). Still right if the future completed since: the callback then runs at
    /// once.
    @inlinable
    func deriveResult<NewValue>(
        _ transform: @escaping @Sendable (Result<Value, any Error>) -> Result<NewValue, any Error>
    ) -> Future<NewValue> {
        let derived: Future<NewValue> = makeDerived()
        whenCompleteReturningWork { result in
            // As in `chain`: cancelling `derived` cancels this future, or finds it already resolved with its callbacks
            // still to run (on its `receive(on:)` queue, or on the thread completing it); either way `transform` must
            // not run (a `map` of the caller's, a decode, a response's check) for a result nobody waits for.
            if derived.isCompleted { return .empty }
            return derived.resolve(transform(result))
        }.run()
        return derived
    }

    /// A derived future that completes with this future's result and whose cancellation cancels this
    /// future: what ``chain(_:)`` returns when its step starts this future. For ``flatMap(_:)`` on a future
    /// created resolved.
    @inlinable
    func followed() -> Future<Value> {
        let derived = Future<Value>()
        derived.setUpstream(self)
        whenCompleteReturningWork { derived.resolve($0) }.run()
        return derived
    }

    /// What an asynchronous step decided: a final result, or another future to follow.
    @usableFromInline
    enum Step<NewValue: Sendable> {
        case done(Result<NewValue, any Error>)
        case next(Future<NewValue>)
    }

    /// The primitive behind every asynchronous operator: derives a future that follows the future `step`
    /// returns, with cancellation pointed at whichever future is running. On an already complete future it
    /// steps at once: a final result allocates one resolved future, as ``transformResult(_:)`` does.
    @inlinable
    func chain<NewValue>(
        _ step: @escaping @Sendable (Result<Value, any Error>) -> Step<NewValue>
    ) -> Future<NewValue> {
        if let result = resultForImmediateTransform {
            switch step(result) {
            case .done(let newResult): return Future<NewValue>(result: newResult)
            case .next(let next): return next.lock == nil ? next : next.followed()
            }
        }
        let derived: Future<NewValue> = makeDerived()
        whenCompleteReturningWork { result in
            // Cancelling `derived` cancels this future, or finds it already resolved with its callbacks still to
            // run (on its `receive(on:)` queue, or on the thread completing it): either way the step must not run
            // (`flatMap` would start a request, `recover` work, that nobody waits for).
            if derived.isCompleted { return .empty }
            switch step(result) {
            case .done(let newResult):
                return derived.resolve(newResult)
            case .next(let next):
                derived.setUpstream(next)
                // A step that returned `derived` itself, or a future that waits for it, closed a loop that nothing
                // could ever complete (and that a walk up the chain, to report a cancellation, would go round for
                // good): it fails instead. Looked for once the link is set, so that of two steps closing a loop at
                // once on two threads, at least one sees the other's link.
                if next.waitsFor(derived) { return derived.resolve(.failure(FutureCycleError())) }
                return next.whenCompleteReturningWork { derived.resolve($0) }
            }
        }.run()
        return derived
    }

    /// Whether this future is `future`, or waits for it through the futures it follows while pending (the link
    /// ``cancel()`` follows up the chain) and the inputs of the combinations among them (`zip`, `all`, `allSettled`,
    /// `race`): a step of ``chain(_:)`` that completes `future` with it would wait for itself.
    ///
    /// A walk up a chain of one-source stages takes each stage's lock once and allocates nothing; only once it
    /// reaches a combination does it search the futures waited on as a graph, each looked at once (inputs shared by
    /// several combinations are no reason to look again).
    @usableFromInline
    func waitsFor(_ future: AnyObject) -> Bool {
        var next: (any CancellableFuture)? = self
        while let current = next {
            if current === future { return true }
            if let inputs = current.combinationInputs { return Self.anyWaits(inputs, for: future) }
            next = current.pendingUpstream
        }
        return false
    }

    /// Whether one of `inputs` is `future` or waits for it (``waitsFor(_:)``), searched depth-first.
    private static func anyWaits(_ inputs: [any CancellableFuture], for future: AnyObject) -> Bool {
        var toVisit = inputs
        // The futures looked at, held until the search ends so that an identifier is never reused meanwhile.
        var visited: [ObjectIdentifier: any CancellableFuture] = [:]
        while let current = toVisit.popLast() {
            guard visited.updateValue(current, forKey: ObjectIdentifier(current)) == nil else { continue }
            if current === future { return true }
            if let inputs = current.combinationInputs {
                toVisit.append(contentsOf: inputs)
            } else if let upstream = current.pendingUpstream {
                toVisit.append(upstream)
            }
        }
        return false
    }
}
