import Dispatch

// MARK: - Callbacks for UI code and completion-handler code bases

extension Future {
    /// Calls `callback` on the main actor with the result, once the future completes: UI code calls its
    /// `@MainActor` methods and touches its state from it, in Swift 6 mode, without `MainActor.assumeIsolated`.
    ///
    /// ```swift
    /// @MainActor final class TodoViewController: UIViewController {
    ///     func load() {
    ///         connect.send(GetTodo(id: 1)).observeOnMainActor { result in
    ///             self.show(result)  // a @MainActor method
    ///         }
    ///     }
    /// }
    /// ```
    ///
    /// The callback runs from the main queue, after the code that called this returns, even when the future is
    /// already complete: the same order every time.
    ///
    /// - Parameter callback: Receives the result, on the main actor; runs exactly once.
    public func observeOnMainActor(_ callback: @escaping @MainActor (Result<Value, any Error>) -> Void) {
        observe(on: .main) { result in
            MainActor.assumeIsolated { callback(result) }
        }
    }

    /// Calls a completion handler of the form callback code bases use, `(Value?, Error?) -> Void`, on the main actor:
    /// the value and `nil`, or `nil` and the error (see ``observeOnMainActor(_:)`` for when it runs).
    ///
    /// A `@MainActor` handler needs no `@Sendable`: UI code passes its own handler, or a closure that touches its
    /// state, as it is.
    ///
    /// ```swift
    /// @MainActor func login(username: String, password: String, completion: @escaping @MainActor (User?, (any Error)?) -> Void) {
    ///     connect.send(UserRoute.login(username: username, password: password))
    ///         .observeOnMainActor(completion: completion)
    /// }
    /// ```
    ///
    /// - Parameter completion: Receives the value or the error, on the main actor; runs exactly once.
    public func observeOnMainActor(completion: @escaping @MainActor (Value?, (any Error)?) -> Void) {
        observeOnMainActor { result in
            switch result {
            case .success(let value): completion(value, nil)
            case .failure(let error): completion(nil, error)
            }
        }
    }

    /// Calls a completion handler of the form callback code bases use, `(Value?, Error?) -> Void`, once the future
    /// completes: the value and `nil`, or `nil` and the error.
    ///
    /// ```swift
    /// func login(username: String, password: String, completion: @escaping @Sendable (User?, (any Error)?) -> Void) {
    ///     connect.send(UserRoute.login(username: username, password: password)).observe(completion: completion)
    /// }
    /// ```
    ///
    /// In Swift 6 mode a handler that runs on another thread must be `@Sendable`; UI code that would rather not say
    /// so passes a `@MainActor` handler to ``observeOnMainActor(completion:)``.
    ///
    /// - Parameters:
    ///   - queue: Where `completion` runs; `nil` runs it on the completing thread (see ``observe(on:_:)``).
    ///   - completion: Receives the value or the error; runs exactly once.
    public func observe(
        on queue: DispatchQueue? = nil,
        completion: @escaping @Sendable (Value?, (any Error)?) -> Void
    ) {
        observe(on: queue) { result in
            switch result {
            case .success(let value): completion(value, nil)
            case .failure(let error): completion(nil, error)
            }
        }
    }
}
