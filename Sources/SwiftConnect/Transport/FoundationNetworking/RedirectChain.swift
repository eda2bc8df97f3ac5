import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An exchange whose redirects ``URLSessionTransport`` follows itself, on a platform whose session cannot send a
/// request body again (``RedirectRules/dropsBodyOnRedirect``): what every hop after the first shares.
///
/// Created at the first redirect the transport follows, never for a request that is not redirected. Every hop
/// reports the request the caller sent (``original``), as URLSession does for the redirects it follows itself,
/// and runs against the first hop's ``deadline``: the timeout counts from the first send.
final class RedirectChain: Sendable {
    /// What a task the transport sent for a redirect carries in `taskDescription`, so that the session's delegate
    /// lets the transport follow its redirects too (``RedirectRules/nextHop(after:answeredBy:hasBody:isFollowUp:)``).
    static let followUpMarker = "SwiftConnect.redirect-follow-up"

    /// The request the caller sent: what responses and errors report, and what a retry starts again from.
    let original: URLRequest
    /// The exchange's deadline, set when the first hop was sent; `nil` when it has none.
    let deadline: TransportDeadline?
    /// The hops followed so far.
    private let hops = Protected(0)

    /// A chain for the exchange that sent `original`, timed by `deadline`.
    init(original: URLRequest, deadline: TransportDeadline?) {
        self.original = original
        self.deadline = deadline
    }

    /// Counts one more hop. Returns `false`, counting nothing, when it would go over
    /// ``RedirectRules/maxRedirects``.
    func countHop() -> Bool {
        hops.withLock { hops in
            guard hops < RedirectRules.maxRedirects else { return false }
            hops += 1
            return true
        }
    }

    /// The failure of an exchange redirected too many times: URLSession's `httpTooManyRedirects`, as when the
    /// session stops a loop itself.
    func tooManyRedirects(at url: URL?) -> ConnectError {
        var userInfo: [String: any Sendable] = [:]
        if let url { userInfo[NSURLErrorFailingURLErrorKey] = url }
        return ConnectError.transportFailure(
            .reported(URLError(.httpTooManyRedirects, userInfo: userInfo)), request: original)
    }
}

extension URLSessionTransport {
    /// Follows the redirect `response` of `hop` itself, when the session could not
    /// (``RedirectRules/nextHop(after:answeredBy:hasBody:isFollowUp:)``): counts the hop, then calls `send` with the
    /// next request from ``submissionQueue``, unless the exchange's future completed meanwhile (cancelled, timed
    /// out). Only a transport that owns its session's delegate follows redirects itself.
    ///
    /// - Parameters:
    ///   - hop: The request as this hop sent it.
    ///   - response: Its 3xx answer.
    ///   - hasBody: Whether `hop` has a body the transport can send again.
    ///   - chain: The exchange's chain; `nil` on its first hop, when one is made from `hop` and `deadline`.
    ///   - deadline: The exchange's deadline.
    ///   - promise: The exchange's promise, failed here when there are too many redirects.
    ///   - send: Sends the next hop: its request, whether it keeps the body, and the chain.
    /// - Returns: Whether the redirect was taken over (followed, or failed for too many redirects); `false` when
    ///   `response` is the answer.
    func followsRedirect(
        of hop: URLRequest,
        answeredBy response: HTTPURLResponse,
        hasBody: Bool,
        chain: RedirectChain?,
        deadline: TransportDeadline?,
        promise: Promise<ConnectResponse>,
        send: @escaping @Sendable (_ next: URLRequest, _ keepsBody: Bool, _ chain: RedirectChain) -> Void
    ) -> Bool {
        guard ownsDelegate,
            let (next, keepsBody) = RedirectRules.nextHop(
                after: hop, answeredBy: response, hasBody: hasBody, isFollowUp: chain != nil)
        else { return false }
        let chain = chain ?? RedirectChain(original: hop, deadline: deadline)
        guard chain.countHop() else {
            let failure = chain.tooManyRedirects(at: next.url)
            CompletionContext.deliver { promise.completeIfPending(with: .failure(failure)) }
            return true
        }
        if var refusal = ServerTrustPinning.refusal(of: next, pins: pins) {
            // A pinned host is not reached unpinned by a redirect either.
            refusal.request = chain.original
            CompletionContext.deliver { promise.completeIfPending(with: .failure(refusal)) }
            return true
        }
        submissionQueue.async {
            guard !promise.future.isCompleted else { return }  // cancelled or timed out: no hop is sent
            if let deadline = chain.deadline, DispatchTime.now() >= deadline.time {
                let failure = ConnectError.transportFailure(
                    .deadlinePassed(after: deadline.seconds), request: chain.original)
                promise.completeIfPending(with: .failure(failure))
                return
            }
            send(next, keepsBody, chain)
        }
        return true
    }
}
