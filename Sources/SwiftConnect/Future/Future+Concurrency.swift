// MARK: - Bridging to Swift concurrency

extension Future {
    /// Creates a future from an `async` operation, started at once in a new task.
    ///
    /// Cancelling the future cancels the task.
    ///
    /// ```swift
    /// let future = Future { try await loadConfiguration() }
    /// ```
    ///
    /// - Parameters:
    ///   - priority: The task's priority.
    ///   - operation: The work; its value or thrown error completes the future.
    public convenience init(
        priority: TaskPriority? = nil,
        _ operation: @escaping @Sendable () async throws -> Value
    ) {
        self.init()
        let task = Task(priority: priority) { [self] in
            let result: Result<Value, any Error>
            do {
                result = .success(try await operation())
            } catch {
                result = .failure(error)
            }
            resolve(result).run()
        }
        setCancelHandler { task.cancel() }
    }

    /// The value, awaited: `let todo = try await connect.send(GetTodo(id: 1)).value`.
    ///
    /// Cancelling the awaiting task cancels the future (and so the request behind it). It is cancelled for
    /// everyone: other tasks awaiting the same future, and its observers, get the cancellation too. To stop
    /// waiting for a future you share without cancelling it, await a future of your own that follows it:
    ///
    /// ```swift
    /// let mine = Promise<User>()
    /// shared.observe { mine.completeIfPending(with: $0) }
    /// let user = try await mine.future.value  // cancelling this task cancels only `mine`
    /// ```
    ///
    /// A request starts when its future is created, not when it is awaited: created in a task already cancelled,
    /// it is sent, then cancelled here. Call `try Task.checkCancellation()` first to send nothing.
    ///
    /// - Throws: The future's error; when cancelled, the error ``cancel()`` fails it with (``FutureError/cancelled``,
    ///   or for a request's future the client's error of kind `cancelled`), not `CancellationError`: test for
    ///   that error, not `error is CancellationError`.
    public var value: Value {
        get async throws {
            try await resultValue.get()
        }
    }

    /// The result, awaited, without throwing.
    ///
    /// Cancelling the awaiting task cancels the future.
    public var resultValue: Result<Value, any Error> {
        get async {
            if let result { return result }
            return await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    whenComplete { continuation.resume(returning: $0) }
                }
            } onCancel: {
                cancel()
            }
        }
    }
}
