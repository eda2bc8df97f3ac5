import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An observer of requests, for logging, metrics and activity indicators.
///
/// A plugin is told about every attempt that leaves the client's middlewares: ``willSend(_:context:)`` before it
/// goes to the transport, then ``didReceive(_:context:)`` when a response (of any status) arrives, or
/// ``didFail(_:request:context:)`` when none does: the transport failed, the attempt was cancelled or timed out, or
/// the client refused the request before sending it (a header field a middleware set with CR or LF in it, so that a
/// monitor sees that failure too). Each call is balanced: one `willSend`, then exactly one of the other two. The
/// request a plugin is told of is the one the middlewares made, before the fields an observer adds
/// (``ConnectObserver``'s `traceparent`). A request a middleware hands on after its call has ended (cancelled, or
/// past its deadline, while the middleware held it) is not sent, and plugins hear nothing of it. The error of
/// `didFail` is classified as the caller's is: a transport's `URLError` arrives as a ``ConnectError`` of the kind it
/// stands for (``ConnectError/Kind/timedOut``, ``ConnectError/Kind/connectionLost``…).
///
/// A plugin hears of requests, not of calls: identical calls that share one request in flight
/// (``Connect/Settings/coalescesIdenticalRequests``) are one send to the client's plugins, one `willSend` and one
/// answer, with the context of the call that made the request, however many calls share it. A call with plugins of
/// its own or its connector's (``RequestOptions/plugins``) is never shared, so those plugins hear each of its attempts.
/// To follow each call, a ``ConnectObserver`` hears every one of them, a call that joined another's request included.
///
/// Plugins run on the plugin queue, one event after another in the order they happened, never on the request's
/// own path: a slow plugin delays other plugins, not requests. The queue is one for the process, so that a plugin
/// shared by several clients (a client and one made from it with `adding(plugins:)`) is never called from two
/// threads at once. An event waits there with what it carries (the request, and the response with its body): a plugin
/// slower than the requests it hears keeps them in memory until it catches up, as an Alamofire `EventMonitor` on its
/// queue does, with no bound. Keep plugins quick, or hand their work to a queue of yours that drops what it cannot keep
/// up with. Implement only what you need:
///
/// ```swift
/// final class ActivityCounter: ConnectPlugin, @unchecked Sendable {
///     // @unchecked Sendable: only touched on the serial plugin queue.
///     var active = 0
///     func willSend(_ request: URLRequest, context: RequestContext) { active += 1 }
///     func didReceive(_ response: ConnectResponse, context: RequestContext) { active -= 1 }
///     func didFail(_ error: Error, request: URLRequest, context: RequestContext) { active -= 1 }
/// }
/// ```
public protocol ConnectPlugin: Sendable {
    /// A request is about to be sent.
    ///
    /// - Parameters:
    ///   - request: The request as the middlewares made it.
    ///   - context: Facts about the call.
    func willSend(_ request: URLRequest, context: RequestContext)

    /// A response arrived (any status).
    ///
    /// - Parameters:
    ///   - response: The response.
    ///   - context: Facts about the call.
    func didReceive(_ response: ConnectResponse, context: RequestContext)

    /// No response arrived: the transport failed, the request was cancelled or timed out, or the client refused
    /// it before sending it.
    ///
    /// - Parameters:
    ///   - error: Why.
    ///   - request: The request that failed.
    ///   - context: Facts about the call.
    func didFail(_ error: any Error, request: URLRequest, context: RequestContext)
}

extension ConnectPlugin {
    /// Does nothing.
    public func willSend(_ request: URLRequest, context: RequestContext) {}
    /// Does nothing.
    public func didReceive(_ response: ConnectResponse, context: RequestContext) {}
    /// Does nothing.
    public func didFail(_ error: any Error, request: URLRequest, context: RequestContext) {}
}

/// A plugin made of closures.
///
/// ```swift
/// let logSends = AnyPlugin(willSend: { request, _ in print("→", request.url!) })
/// ```
public struct AnyPlugin: ConnectPlugin {
    private let onWillSend: (@Sendable (URLRequest, RequestContext) -> Void)?
    private let onDidReceive: (@Sendable (ConnectResponse, RequestContext) -> Void)?
    private let onDidFail: (@Sendable (any Error, URLRequest, RequestContext) -> Void)?

    /// Creates a plugin from closures; leave out what you don't need.
    ///
    /// - Parameters:
    ///   - willSend: Called before each attempt.
    ///   - didReceive: Called when a response arrives.
    ///   - didFail: Called when no response arrives.
    public init(
        willSend: (@Sendable (URLRequest, RequestContext) -> Void)? = nil,
        didReceive: (@Sendable (ConnectResponse, RequestContext) -> Void)? = nil,
        didFail: (@Sendable (any Error, URLRequest, RequestContext) -> Void)? = nil
    ) {
        onWillSend = willSend
        onDidReceive = didReceive
        onDidFail = didFail
    }

    /// Calls the `willSend` closure.
    public func willSend(_ request: URLRequest, context: RequestContext) { onWillSend?(request, context) }
    /// Calls the `didReceive` closure.
    public func didReceive(_ response: ConnectResponse, context: RequestContext) { onDidReceive?(response, context) }
    /// Calls the `didFail` closure.
    public func didFail(_ error: any Error, request: URLRequest, context: RequestContext) {
        onDidFail?(error, request, context)
    }
}

/// The innermost middleware of a call: tells the plugins about each attempt, on the plugin queue.
struct PluginNotifier: Middleware {
    let plugins: [any ConnectPlugin]
    let queue: DispatchQueue

    func intercept(_ request: ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<ConnectResponse>
    {
        // The call ended while a stage held the request (its deadline passed, it was cancelled): the chain sends
        // nothing now, and a plugin hears of no send after the call's end, as an observer does.
        if context.callHasEnded?() == true { return next(request) }
        let plugins = self.plugins
        // Plugins are told in Foundation's terms: the URLRequest is made on the plugin queue, off the request's path.
        let sent = request
        queue.async { for plugin in plugins { plugin.willSend(sent.urlRequest, context: context) } }
        let response = next(request)
        response.whenComplete { [queue] result in
            queue.async {
                // A transport's `URLError` as the caller gets it: a ConnectError of the kind it stands for.
                let result = result.mapError { error -> any Error in
                    error is URLError ? ConnectError.transportFailure(.reported(error), sent: sent) : error
                }
                for plugin in plugins {
                    switch result {
                    case .success(let response): plugin.didReceive(response, context: context)
                    case .failure(let error): plugin.didFail(error, request: sent.urlRequest, context: context)
                    }
                }
            }
        }
        return response
    }
}
