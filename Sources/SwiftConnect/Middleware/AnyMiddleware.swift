import Foundation

/// A middleware made of a closure: for a stage that needs no type of its own.
///
/// ```swift
/// let timing = AnyMiddleware { request, context, next in
///     let started = Date()
///     return next(request).always { print(context.connectorName, Date().timeIntervalSince(started)) }
/// }
/// let connect = Connect(middlewares: [timing])
/// ```
///
/// A closure that only changes the request is an adapter (``Middleware/adapter(_:)``).
public struct AnyMiddleware: Middleware {
    /// What the middleware does: the ``Middleware/intercept(_:context:next:)`` of the type it stands for.
    public typealias Intercept =
        @Sendable (_ request: ConnectRequest, _ context: RequestContext, _ next: @escaping Next) -> Future<
            ConnectResponse
        >

    private let body: Intercept

    /// Creates a middleware that runs `intercept` for each request.
    ///
    /// - Parameter intercept: Receives the request, the call's context and the rest of the pipeline, as
    ///   ``Middleware/intercept(_:context:next:)`` does.
    public init(_ intercept: @escaping Intercept) {
        body = intercept
    }

    /// Runs the closure.
    ///
    /// - Parameters:
    ///   - request: The request so far.
    ///   - context: Facts about the call.
    ///   - next: The rest of the pipeline.
    /// - Returns: What the closure returns.
    public func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
        ConnectResponse
    > {
        body(request, context, next)
    }
}

extension Middleware where Self == AnyMiddleware {
    /// A middleware that prepares each request with a closure before it goes on: JustAPIs' request preparer, in one
    /// line. Throwing fails the call with that error, nothing sent.
    ///
    /// ```swift
    /// let connect = Connect(middlewares: [
    ///     .adapter { request in request.setValue(Locale.current.identifier, forHTTPHeaderField: "Accept-Language") }
    /// ])
    /// ```
    ///
    /// - Parameter adapt: Changes the request in place, or throws.
    /// - Returns: The middleware.
    public static func adapter(_ adapt: @escaping @Sendable (inout ConnectRequest) throws -> Void) -> AnyMiddleware {
        AnyMiddleware { request, _, next in
            var request = request
            do {
                try adapt(&request)
            } catch {
                return Future(error: error)
            }
            return next(request)
        }
    }
}

extension Connect {
    /// A client that does what this one does, and more: `middlewares` after this client's own middlewares and those
    /// of its options (``Connect/Settings/options``), nearer the transport; `plugins`, `validators` and `processors`
    /// after those of its options. They are client-level stages, so the more specific levels still come after them:
    /// the client's options for the request's method (``Connect/Settings/methodOptions``), then a connector's, then a
    /// call's (see ``RequestOptions`` for the order). It shares this client's
    /// transport (its connections), request queue, response cache, error handler, retry policy, server and
    /// settings: Konex's plugins added at run time, without a second connection pool.
    ///
    /// ```swift
    /// let api = Connect(transport: transport, requestQueue: queue, responseCache: cache)
    /// let audited = api.adding(middlewares: [.adapter { $0.setValue("1", forHTTPHeaderField: "X-Audit") }],
    ///                          plugins: [auditLog])
    /// ```
    ///
    /// This client is unchanged. Each client cancels its own requests (``cancelAllRequests()``), also in the queue
    /// they share.
    ///
    /// - Parameters:
    ///   - middlewares: Stages that run after this client's client-level middlewares.
    ///   - plugins: Observers told after this client's client-level plugins.
    ///   - validators: Checks that run after this client's client-level validators.
    ///   - processors: Transformations that run after this client's client-level processors.
    /// - Returns: The new client.
    public func adding(
        middlewares: [any Middleware] = [],
        plugins: [any ConnectPlugin] = [],
        validators: [any ResponseValidator] = [],
        processors: [any ResponseProcessor] = []
    ) -> Connect {
        var settings = self.settings
        // Client-level options: the new stages run after this client's own and its options', and before its options
        // for a method, a connector's or a call's, as this client's options' stages do.
        settings.options = settings.options.merged(
            with: RequestOptions(
                middlewares: middlewares, plugins: plugins, validators: validators, processors: processors))
        return Connect(
            transport: transport, middlewares: self.middlewares, errorHandler: errorHandler,
            retryPolicy: retryPolicy, requestQueue: requestQueue, responseCache: responseCache,
            configuration: configuration, settings: settings)
    }
}
