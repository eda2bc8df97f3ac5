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
///         let envelope = try JSONDecoder().decode(JSONValue.self, from: response.data)
///         var response = response
///         response.data = try JSONEncoder().encode(envelope["data"] ?? .null)
///         return response
///     }
/// }
/// ```
///
/// A ``JSONValue`` holds numbers as `Int` or `Double`, so the processor above hands on an integer beyond `Int`'s
/// range (a `UInt64` ID over 2⁶³) or a decimal of more than 17 significant digits rounded. When the model holds such
/// numbers, decode the envelope as a type instead (`struct Envelope<T: Decodable>: Decodable { let data: T }`, then
/// `.map(\.data)`).
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
///
/// A processor that has to wait (for a key to decrypt with, a value from another service) is made the same way
/// with an `async` closure, or from an ``AsyncResponseProcessor``; the client awaits it, in its place in the list:
///
/// ```swift
/// let decrypt = AnyResponseProcessor { response in
///     var response = response
///     response.data = try await keyStore.decrypt(response.data)
///     return response
/// }
/// ```
public struct AnyResponseProcessor: ResponseProcessor {
    private let body: @Sendable (ConnectResponse) throws -> ConnectResponse
    /// The closure of a processor that waits; `nil` for one that does not.
    let waitingBody: (@Sendable (ConnectResponse) async throws -> ConnectResponse)?

    /// Creates a processor.
    ///
    /// - Parameter body: Returns the transformed response, or throws.
    public init(_ body: @escaping @Sendable (ConnectResponse) throws -> ConnectResponse) {
        self.body = body
        waitingBody = nil
    }

    /// Creates a processor that waits: the client awaits `body` before the next processor and the decoding. The
    /// call's `timeout` covers the wait: past the call's deadline it fails with ``ConnectError/Kind/timedOut``.
    ///
    /// - Parameter body: Returns the transformed response, or throws.
    public init(_ body: @escaping @Sendable (ConnectResponse) async throws -> ConnectResponse) {
        self.body = { _ in throw AsynchronousProcessorError() }
        waitingBody = body
    }

    /// A processor that waits, from a type of yours.
    ///
    /// - Parameter processor: The processor.
    public init(_ processor: some AsyncResponseProcessor) {
        self.init { response in try await processor.process(response) }
    }

    /// Runs the closure. For a processor that waits, this throws: the client awaits it instead.
    public func process(_ response: ConnectResponse) throws -> ConnectResponse { try body(response) }
}

/// A transformation of a response that has to wait, such as decrypting with a key fetched on demand. Add it to
/// ``RequestOptions/processors`` as `AnyResponseProcessor(myProcessor)`; the client awaits it in its place.
///
/// ```swift
/// struct Decrypt: AsyncResponseProcessor {
///     let keys: KeyStore
///     func process(_ response: ConnectResponse) async throws -> ConnectResponse {
///         var response = response
///         response.data = try await keys.decrypt(response.data)
///         return response
///     }
/// }
/// let options = RequestOptions(processors: [AnyResponseProcessor(Decrypt(keys: keys))])
/// ```
public protocol AsyncResponseProcessor: Sendable {
    /// Returns the response to continue with.
    ///
    /// - Parameter response: The response so far.
    /// - Returns: The transformed response.
    /// - Throws: Why the response cannot be processed; the call then fails with ``ConnectError/Kind/rejected``.
    func process(_ response: ConnectResponse) async throws -> ConnectResponse
}

/// Thrown by the synchronous `process(_:)` of a processor that waits, which only the client may run.
struct AsynchronousProcessorError: Error, CustomStringConvertible {
    var description: String { "this processor waits: the client awaits it, its synchronous form does nothing" }
}

extension ConnectError {
    /// A validator or processor rejected a response. A ``ConnectError`` it threw is kept, completed with the
    /// response's request, status, headers and body where it has none of its own.
    static func rejected(_ error: any Error, by stage: Any, response: ConnectResponse) -> ConnectError {
        if let connectError = error as? ConnectError { return connectError.from(response) }
        return ConnectError(
            .rejected,
            message: "\(type(of: stage)) rejected the response: \(error)",
            request: response.storedRequest,
            head: response.storedHead,
            body: response.data,
            underlyingError: error
        )
    }
}
