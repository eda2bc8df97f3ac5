import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The usage guide's middleware shape: adapt each request before it goes out.
///
/// Conform and implement ``adapt(_:)``; the ``Middleware/intercept(_:context:next:)`` requirement is
/// provided. Throwing from `adapt` fails the request with your error before anything is sent.
///
/// ```swift
/// struct LocaleMiddleware: ConnectMiddlewareProtocol {
///     func adapt(_ request: URLRequest) throws -> URLRequest {
///         var request = request
///         request.setValue("en-US", forHTTPHeaderField: "Accept-Language")
///         return request
///     }
/// }
/// let connect = Connect(middleware: LocaleMiddleware(), errorHandler: ErrorHandler())
/// ```
public protocol ConnectMiddlewareProtocol: Middleware {
    /// Returns the request to send instead of `request`.
    ///
    /// - Parameter request: The request so far.
    /// - Returns: The adapted request.
    /// - Throws: Any error, to fail the request without sending it.
    func adapt(_ request: URLRequest) throws -> URLRequest
}

extension ConnectMiddlewareProtocol {
    /// Leaves the request as it is.
    public func adapt(_ request: URLRequest) throws -> URLRequest { request }

    /// Adapts the request, then sends it.
    public func intercept(_ request: URLRequest, context: RequestContext, next: @escaping Next) -> Future<ConnectResponse> {
        do {
            return next(try adapt(request))
        } catch {
            return Future(error: error)
        }
    }
}

/// The default middleware of the usage guide: passes requests through unchanged.
///
/// ```swift
/// let connect = Connect(middleware: ConnectMiddleware(), errorHandler: ErrorHandler())
/// ```
public struct ConnectMiddleware: ConnectMiddlewareProtocol {
    /// Creates the pass-through middleware.
    public init() {}
}
