import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// STUB — replaced by the queue implementation.
public final class RequestQueue: Middleware {
    /// Creates a queue.
    public init(maxConcurrentRequests: Int) {}

    /// Sends the request.
    public func intercept(_ request: URLRequest, context: RequestContext, next: @escaping Next) -> Future<ConnectResponse> {
        next(request)
    }
}
