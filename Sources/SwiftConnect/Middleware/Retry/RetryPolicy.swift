import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// STUB — replaced by the retry implementation.
public struct RetryPolicy: Sendable {
    /// The conservative default.
    public static let `default` = RetryPolicy()

    /// Creates a policy.
    public init() {}

    /// The middleware applying this policy.
    var middleware: any Middleware { PassThroughMiddleware() }
}

struct PassThroughMiddleware: Middleware {
    func intercept(_ request: URLRequest, context: RequestContext, next: @escaping Next) -> Future<ConnectResponse> {
        next(request)
    }
}
