import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A stage wrapped around the transport: it sees every request on its way out and every response on its
/// way back.
///
/// Middlewares form an onion. With `Connect(middlewares: [a, b])` a request passes `a`, then `b`, then the
/// transport; the response comes back through `b`, then `a`. A middleware can change the request, look at
/// or replace the response, call `next` again to retry, or answer without calling `next` at all.
///
/// ```swift
/// struct APIKeyMiddleware: Middleware {
///     let key: String
///     func intercept(
///         _ request: consuming URLRequest,
///         context: RequestContext,
///         next: @escaping Next
///     ) -> Future<ConnectResponse> {
///         request.setValue(key, forHTTPHeaderField: "X-API-Key")
///         return next(request)
///     }
/// }
/// ```
///
/// The request is handed over `consuming`: declared that way, as above, a middleware owns it and changes it in
/// place. `Connect` keeps no other reference to it on the way in (a retry makes it again), so no copy is made.
/// A middleware written with a plain `_ request: URLRequest` parameter still conforms; its first change
/// copies the request (about 7,000 instructions on Linux).
///
/// Headers a middleware leaves on the request are checked before the transport: a name that is not a token, or
/// a value with CR, LF or NUL, fails the call with ``ConnectError/InvalidRequestReason/invalidHeader(name:)``.
/// On Linux, though, FoundationNetworking's `setValue(_:forHTTPHeaderField:)` and `addValue` silently ignore a
/// value with CR or LF, so the check never sees it and the request goes out without that header; check a value
/// that comes from outside (a token read from a file) before setting it.
///
/// Test one with a closure as `next`: no client or network needed.
public protocol Middleware: Sendable {
    /// The rest of the pipeline: the following middlewares and the transport.
    typealias Next = @Sendable (consuming URLRequest) -> Future<ConnectResponse>

    /// Handles one request.
    ///
    /// - Parameters:
    ///   - request: The request so far, owned by the middleware from here on.
    ///   - context: Facts about the call that are not in the request.
    ///   - next: Sends a request through the rest of the pipeline; may be called again to retry, or not at all.
    /// - Returns: A future of the response to hand back to the previous stage.
    func intercept(_ request: consuming URLRequest, context: RequestContext, next: @escaping Next) -> Future<
        ConnectResponse
    >
}

/// What a middleware knows about a call beyond the `URLRequest` itself.
public struct RequestContext: Sendable {
    /// The request method.
    public var method: HTTPMethod
    /// The connector's type name, for logs and metrics (`"TodoConnector"`).
    public var connectorName: String
    /// The connector's and the call's options, merged. Of the client's own options, only `isRetrySafe` and
    /// `cache` are included, where the connector and the call leave them unset.
    public var options: RequestOptions
    /// The logger of the client sending the request.
    public var logger: any ConnectLogger
    /// Uploads from files, downloads to files, size limits and progress for this request.
    public var transfer = TransferOptions()
    /// What the request entering the pipeline was made from, when `Connect` built it and nothing changed it
    /// since: a retry stage with only pass-through stages before it makes the request again from this rather
    /// than keeping it (see ``RequestBlueprint``).
    var blueprint: RequestBlueprint?
    /// The slots the request holds in the ``RequestQueue``s before this stage that come before an
    /// ``AuthenticationMiddleware``: that middleware gives them back while the request waits for a refresh.
    var queueSlots = HeldQueueSlots()

    /// Creates a context.
    ///
    /// - Parameters:
    ///   - method: The request method.
    ///   - connectorName: The connector's name.
    ///   - options: The connector's and call's options.
    ///   - logger: Where to log.
    public init(
        method: HTTPMethod,
        connectorName: String,
        options: RequestOptions = RequestOptions(),
        logger: any ConnectLogger = ConnectLogging.logger
    ) {
        self.method = method
        self.connectorName = connectorName
        self.options = options
        self.logger = logger
    }

    /// Whether the request may be sent again after a failure: its method is idempotent, or the connector or
    /// call marked it ``RequestOptions/isRetrySafe``.
    public var isRetrySafe: Bool { options.isRetrySafe ?? method.isIdempotent }
}

/// A middleware of SwiftConnect's own that never adds or changes a header with a value from outside (a UUID
/// idempotency key at most), so headers it passes on need no second check.
protocol PreservesValidHeaders {}

/// A middleware of SwiftConnect's own that hands every request on exactly as it received it (or answers
/// without sending), so a retry stage after it can make the request again from its blueprint.
protocol PassesRequestThrough {}

/// Runs a request through `middlewares` in order, then `transport`.
struct MiddlewareChain: Sendable {
    let middlewares: [any Middleware]
    let transport: any Transport
    /// Whether a middleware may have set headers the request builder did not check.
    private let checksHeaders: Bool
    /// The index and policy of the first retry stage, if only pass-through stages come before it: it receives
    /// the request exactly as built, so it can make it again from the blueprint instead of keeping it.
    private let leadingRetry: (index: Int, policy: SharedRetryPolicy)?
    /// The queues listed before an ``AuthenticationMiddleware``, by index: they hand the slot a request holds down
    /// the pipeline, so that the middleware can give it back while the request waits for a refresh. Usually `nil`
    /// (no such queue), which costs a copy of the chain nothing to retain.
    private let queuesBeforeAuthentication: [(index: Int, queue: RequestQueue, owner: RequestQueue.Owner?)]?

    init(middlewares: [any Middleware], transport: any Transport) {
        self.middlewares = middlewares
        self.transport = transport
        checksHeaders = middlewares.contains { !($0 is any PreservesValidHeaders) }
        let firstOther = middlewares.firstIndex { !($0 is any PassesRequestThrough) }
        if let index = firstOther, let retry = middlewares[index] as? RetryMiddleware {
            leadingRetry = (index, retry.shared)
        } else {
            leadingRetry = nil
        }
        var queues: [(index: Int, queue: RequestQueue, owner: RequestQueue.Owner?)] = []
        if let lastAuthentication = middlewares.lastIndex(where: { $0 is AuthenticationMiddleware }) {
            for (index, middleware) in middlewares[..<lastAuthentication].enumerated() {
                if let queue = middleware as? RequestQueue {
                    queues.append((index, queue, nil))
                } else if let entry = middleware as? ClientRequestQueue {
                    queues.append((index, entry.queue, entry.owner))
                }
            }
        }
        queuesBeforeAuthentication = queues.isEmpty ? nil : queues
    }

    func send(_ request: consuming URLRequest, context: RequestContext) -> Future<ConnectResponse> {
        send(consume request, context: context, from: 0)
    }

    private func send(_ request: consuming URLRequest, context: RequestContext, from index: Int) -> Future<
        ConnectResponse
    > {
        guard index < middlewares.count else {
            // Middlewares may have added headers after the builder checked them: check again before the wire. This
            // sees values assigned through `allHTTPHeaderFields` (and, on Apple platforms, through `setValue`);
            // FoundationNetworking's `setValue` drops a value with CR/LF before anyone can see it.
            if checksHeaders {
                for (name, value) in request.allHTTPHeaderFields ?? [:]
                where !HTTPHeader.isValidName(name) || !HTTPHeader.isValidValue(value) {
                    return Future(error: ConnectError.invalidRequest(.invalidHeader(name: name), request: request))
                }
            }
            return context.transfer.isPlain
                ? transport.send(request) : transport.send(request, transfer: context.transfer)
        }
        if let queuesBeforeAuthentication,
            let entry = queuesBeforeAuthentication.first(where: { $0.index == index })
        {
            return entry.queue.enqueue(consume request, owner: entry.owner) { request, slot in
                var context = context
                context.queueSlots.append(slot)
                return self.send(consume request, context: context, from: index + 1)
            }
        }
        let next: Middleware.Next = { request in self.send(consume request, context: context, from: index + 1) }
        if let leadingRetry, leadingRetry.index == index, let blueprint = context.blueprint {
            return leadingRetry.policy.intercept(consume request, context: context, next: next, blueprint: blueprint)
        }
        return middlewares[index].intercept(consume request, context: context, next: next)
    }
}
