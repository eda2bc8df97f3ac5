import Foundation

/// A check a successful response must pass; throwing rejects it.
///
/// Validators run after the error handler, on responses it accepted, before processors and decoding. A
/// thrown error fails the request with a ``ConnectError`` of kind ``ConnectError/Kind/rejected`` whose
/// ``ConnectError/underlyingError`` is what you threw; a ``ConnectError`` you throw is kept, with the
/// response's status, headers, body and request added where it has none.
///
/// ```swift
/// struct RequireJSON: ResponseValidator {
///     func validate(_ response: ConnectResponse) throws {
///         guard response.mediaType == "application/json" else { throw NotJSON() }
///     }
/// }
/// ```
public protocol ResponseValidator: Sendable {
    /// Throws if the response is not acceptable.
    ///
    /// - Parameter response: The response.
    /// - Throws: Why it is rejected.
    func validate(_ response: ConnectResponse) throws
}

/// A transformation of a response before decoding, such as unwrapping an envelope `{"data": …}`.
///
/// Processors run after the validators, each on the previous one's output. A thrown error fails the
/// request with a ``ConnectError`` of kind ``ConnectError/Kind/rejected``.
///
/// ```swift
/// struct UnwrapData: ResponseProcessor {
///     func process(_ response: ConnectResponse) throws -> ConnectResponse {
///         let object = try JSONSerialization.jsonObject(with: response.data) as? [String: Any]
///         var response = response
///         response.data = try JSONSerialization.data(withJSONObject: object?["data"] ?? [:])
///         return response
///     }
/// }
/// ```
public protocol ResponseProcessor: Sendable {
    /// Returns the response to continue with.
    ///
    /// - Parameter response: The response so far.
    /// - Returns: The transformed response.
    /// - Throws: Why the response cannot be processed.
    func process(_ response: ConnectResponse) throws -> ConnectResponse
}

/// A validator made of a closure.
///
/// ```swift
/// let hasETag = AnyResponseValidator { response in
///     if response.header("ETag") == nil { throw MissingETag() }
/// }
/// ```
public struct AnyResponseValidator: ResponseValidator {
    private let body: @Sendable (ConnectResponse) throws -> Void

    /// Creates a validator.
    ///
    /// - Parameter body: Throws to reject the response.
    public init(_ body: @escaping @Sendable (ConnectResponse) throws -> Void) {
        self.body = body
    }

    /// Runs the closure.
    public func validate(_ response: ConnectResponse) throws { try body(response) }
}

/// A processor made of a closure.
///
/// ```swift
/// let trim = AnyResponseProcessor { response in
///     var response = response
///     response.data = response.data.dropFirst(6)  // strip a ")]}',\n" XSSI prefix
///     return response
/// }
/// ```
public struct AnyResponseProcessor: ResponseProcessor {
    private let body: @Sendable (ConnectResponse) throws -> ConnectResponse

    /// Creates a processor.
    ///
    /// - Parameter body: Returns the transformed response, or throws.
    public init(_ body: @escaping @Sendable (ConnectResponse) throws -> ConnectResponse) {
        self.body = body
    }

    /// Runs the closure.
    public func process(_ response: ConnectResponse) throws -> ConnectResponse { try body(response) }
}

extension ConnectError {
    /// A validator or processor rejected a response. A ``ConnectError`` it threw is kept, completed with the
    /// response's request, status, headers and body where it has none of its own.
    static func rejected(_ error: any Error, by stage: Any, response: ConnectResponse) -> ConnectError {
        if let connectError = error as? ConnectError { return connectError.from(response) }
        return ConnectError(
            .rejected,
            message: "\(type(of: stage)) rejected the response: \(error)",
            request: response.request,
            response: response.response,
            body: response.data,
            underlyingError: error
        )
    }
}
