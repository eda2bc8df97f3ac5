import Dispatch
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The idle timeout of one exchange (``RequestOptions/idleTimeout``): fails it when, for `limit` seconds, the engine
/// reports no byte sent and no byte of the answer arrives. Armed by ``EngineExchange`` when the request is handed to
/// the engine; each sign of activity (``touch()``) only notes the time, and the timer, when it fires, re-arms itself
/// for what is left: a body of many pieces costs no timer work per piece.
final class IdleWatch: Sendable {
    /// The longest quiet allowed, in seconds.
    let limit: TimeInterval
    /// When the network was last active, whether the answer's head came (for the error's wording), the deadline
    /// armed, and whether the watch is over.
    private let state = Protected<(last: DispatchTime, headCame: Bool, deadline: TransportDeadline?, over: Bool)>(
        (.now(), false, nil, false))

    /// A watch of `seconds`, or `nil` when there is none to keep (`nil`, or not a positive finite number).
    init?(seconds: TimeInterval?) {
        guard let seconds, seconds > 0, seconds.isFinite else { return nil }
        limit = seconds
    }

    /// Starts the clock; `onIdle` runs once, on a global queue, when the network stays quiet for ``limit``
    /// seconds, with whether the answer's head had come, unless ``stop()`` comes first.
    func start(_ onIdle: @escaping @Sendable (_ headCame: Bool) -> Void) {
        state.withLock { $0.last = .now() }
        arm(after: limit, onIdle)
    }

    /// The network was active now: bytes were sent or received.
    func touch() {
        state.withLock { $0.last = .now() }
    }

    /// A hop is handed to the engine (activity): its head is awaited.
    func hopStarted() {
        state.withLock {
            $0.last = .now()
            $0.headCame = false
        }
    }

    /// The answer's head came (activity too).
    func headCame() {
        state.withLock {
            $0.last = .now()
            $0.headCame = true
        }
    }

    /// Ends the watch: `onIdle` does not run. Safe to call more than once, from any thread.
    func stop() {
        let deadline = state.withLock { state -> TransportDeadline? in
            state.over = true
            defer { state.deadline = nil }
            return state.deadline
        }
        deadline?.cancel()
    }

    private func arm(after seconds: TimeInterval, _ onIdle: @escaping @Sendable (Bool) -> Void) {
        guard let deadline = TransportDeadline(seconds: seconds) else { return }
        let armed = state.withLock { state -> Bool in
            guard !state.over else { return false }
            state.deadline = deadline
            return true
        }
        guard armed else { return }
        // A stop between the two steps finds the deadline and cancels it before it is added: the handler then finds
        // the watch over.
        deadline.start { [weak self] in
            guard let self else { return }
            let quiet = state.withLock { state -> (seconds: Double, headCame: Bool)? in
                guard !state.over else { return nil }
                let quiet = Double(DispatchTime.now().uptimeNanoseconds - state.last.uptimeNanoseconds) / 1e9
                if quiet >= limit - 0.001 { state.over = true }
                return (quiet, state.headCame)
            }
            guard let quiet else { return }
            if quiet.seconds >= limit - 0.001 {
                onIdle(quiet.headCame)
            } else {
                arm(after: limit - quiet.seconds, onIdle)
            }
        }
    }
}

extension ConnectError {
    /// The error of an attempt whose network stayed quiet for `limit` seconds (``RequestOptions/idleTimeout``):
    /// worded for the head when none came (the request may still have been going out), else for the body.
    static func idleTimeout(after limit: TimeInterval, headCame: Bool, sent request: ConnectRequest) -> ConnectError {
        let what =
            headCame
            ? "the response body received no bytes for \(limit) s"
            : "no response head within \(limit) s after the request was handed to the transport, with no byte of it "
                + "reported sent meanwhile"
        return ConnectError(
            .timedOut, message: what + " (RequestOptions.idleTimeout)", request: .sent(request),
            underlyingError: URLError(.timedOut))
    }

    /// The refusal of an idle timeout that is not a positive number of seconds (zero, negative, NaN): the kind and
    /// reason ``RequestOptions/timeout``'s refusal has, its message naming `idleTimeout`.
    static func invalidIdleTimeout(_ seconds: TimeInterval, sent request: ConnectRequest) -> ConnectError {
        var error = ConnectError.invalidRequest(.invalidTimeout(seconds), sent: request)
        error.message = "the idleTimeout \(seconds) is not a positive number of seconds (nil or .infinity for none)"
        return error
    }
}

extension TransferOptions {
    /// The refusal of a negative ``maxRedirects`` or ``maxResponseBytes`` for `request`, or `nil`: checked by the
    /// client before any stage runs (every transport, a fake's too, gets a call that is sent) and by the engine
    /// exchange for a transport called directly.
    func negativeLimit(sent request: ConnectRequest) -> ConnectError? {
        if let limit = maxRedirects, limit < 0 {
            return ConnectError(
                .invalidRequest, message: "maxRedirects is \(limit): it counts redirects, 0 to follow none",
                request: .sent(request))
        }
        if let limit = maxResponseBytes, limit < 0 {
            return ConnectError(
                .invalidRequest, message: "maxResponseBytes is \(limit): it counts bytes, 0 for an empty body only",
                request: .sent(request))
        }
        return nil
    }

    /// `seconds` as ``idleTimeout`` takes it: `nil` for `.infinity` (none), so that such a call keeps URLSession's
    /// plain path. A value that is not positive is refused before it gets here.
    static func usableIdleTimeout(_ seconds: TimeInterval?) -> TimeInterval? {
        guard let seconds, seconds.isFinite else { return nil }
        return seconds
    }
}

extension StreamingOptions {
    /// ``idleTimeout`` when it is a positive finite number; `nil`, as documented, for any other value (zero, negative,
    /// NaN, infinity), which sets no limit and so does not stand in the way of one that would.
    var usableIdleTimeout: TimeInterval? {
        idleTimeout.flatMap { $0 > 0 && $0.isFinite ? $0 : nil }
    }

    /// How long an error response's body is read for its excerpt: ten seconds, or the idle timeout if shorter. A
    /// value that sets no idle limit (zero, negative, NaN) gives the ten seconds, as `nil` does: it read the body
    /// with no time limit at all, and a server trickling an error body held the call for ever.
    var errorExcerptTime: TimeInterval {
        min(usableIdleTimeout ?? MiddlewareChain.errorExcerptTime, MiddlewareChain.errorExcerptTime)
    }

    /// These options with `idle` (``RequestOptions/idleTimeout``) as their idle timeout when they set none: the
    /// stream's own wins.
    func takingIdleTimeout(_ idle: TimeInterval?) -> StreamingOptions {
        guard usableIdleTimeout == nil, let idle else { return self }
        var options = self
        options.idleTimeout = idle
        return options
    }
}
