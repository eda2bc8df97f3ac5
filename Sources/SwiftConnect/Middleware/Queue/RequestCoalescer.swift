import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// STUB — replaced by the coalescing implementation.
struct RequestCoalescer: Middleware {
    func intercept(_ request: URLRequest, context: RequestContext, next: @escaping Next) -> Future<ConnectResponse> {
        next(request)
    }
}
