import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The bodies from an `InputStream` that one call's attempts sent: a stream is read once, so the same stream must
/// never go out again, and an attempt that sent one is not replayed by the ``RetryPolicy``.
///
/// The retry loop runs outside the middlewares, so it cannot see a stream a middleware set; the chain records each
/// one here as it hands the request to the transport, and the loop reads it before replaying. The streams are held
/// until the call ends, so that a stream's identity is not reused by another while the call runs.
final class OneShotBodies: Sendable {
    // InputStream is not Sendable: the streams are only compared and kept, never read, and only under the lock.
    private let state = Protected<(streams: [InputStream], attempts: Set<Int>)>(([], []))

    /// Records that `attempt` sends `stream`; `false` when an earlier attempt of the call sent that same stream
    /// (read already: it must not be sent again).
    func sending(_ stream: InputStream, attempt: Int) -> Bool {
        state.withLock { state in
            guard !state.streams.contains(where: { $0 === stream }) else { return false }
            state.streams.append(stream)
            state.attempts.insert(attempt)
            return true
        }
    }

    /// Whether `attempt` sent a body from a stream: the policy does not replay it.
    func sentOneShot(attempt: Int) -> Bool {
        state.withLock { $0.attempts.contains(attempt) }
    }

    /// The error of an attempt that would send a stream an earlier attempt read.
    static func alreadySent(_ request: URLRequest) -> ConnectError {
        ConnectError(
            .invalidRequest,
            message: "the body is an InputStream an earlier attempt of this call sent, and a stream can be read "
                + "once: set a new stream for each attempt, or send the body from memory or a file",
            request: request)
    }
}
