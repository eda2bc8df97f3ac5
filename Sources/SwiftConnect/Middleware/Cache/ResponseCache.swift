import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// STUB — replaced by the cache implementation.
public final class ResponseCache: Middleware {
    /// Creates a cache.
    public init(maxBytes: Int) {}

    /// Sends the request.
    public func intercept(_ request: URLRequest, context: RequestContext, next: @escaping Next) -> Future<ConnectResponse> {
        next(request)
    }
}
