import Foundation

/// The body of a response, as ``Connect/request(_:debugResponse:)`` returns it: a `Future<Data>` that also knows
/// the response it comes from and the client's decoders.
///
/// It is a `Future<Data>`: hold it as one, chain any operator on it. What it adds is for
/// ``Future/decoded(toType:decoder:)``, which then chooses the decoder registered in the client's
/// ``ResponseDecoders`` for the response's `Content-Type`, and says in a decoding failure which request and
/// response the body came from:
///
/// ```swift
/// var decoders = ResponseDecoders.default
/// decoders.register(PropertyListDecoder(), for: "application/x-plist")
/// let connect = Connect(settings: Connect.Settings(decoders: decoders))
/// connect.request(SettingsConnector.get())  // answers with Content-Type: application/x-plist
///     .decoded(toType: Settings.self)       // decoded with the PropertyListDecoder
///     .timeout(after: 5)
/// ```
///
/// The knowledge belongs to this future alone. An operator returns a plain `Future<Data>` that knows only the
/// body: `connect.request(…).timeout(after: 5).decoded(toType: Settings.self)` decodes JSON, and a failure names
/// no response. Decode first, then chain operators on the decoded value, or pass the decoder to `decoded`.
public final class ResponseBodyFuture: Future<Data>,
    // Checked by hand: `Future`'s lock also protects `storedResponse`, which is written once, under the lock,
    // before the future succeeds.
    @unchecked Sendable
{
    /// The client's decoders, to choose from by the response's content type.
    @usableFromInline let decoders: ResponseDecoders
    /// The response the body came from, once the future has succeeded with its body; guarded by the future's lock.
    private var storedResponse: ConnectResponse?

    /// Creates a pending body; ``complete(with:)`` completes it.
    init(decoders: ResponseDecoders, callbackQueue: DispatchQueue?) {
        self.decoders = decoders
        super.init(callbackQueue: callbackQueue)
    }

    /// The response the body came from: `nil` until the future has succeeded.
    @usableFromInline var response: ConnectResponse? {
        lock?.withLock { storedResponse } ?? nil
    }

    /// Completes the future with the body of a response, or with the failure that came instead of one.
    ///
    /// - Returns: The callbacks to run (``CallbackList/run()``).
    func complete(with result: Result<ConnectResponse, any Error>) -> CallbackList {
        switch result {
        case .success(let response):
            // Written before the body: whoever sees the body complete sees the response too.
            lock?.withLock { storedResponse = response }
            return resolve(.success(response.data))
        case .failure(let error):
            return resolve(.failure(error))
        }
    }

    /// ``Future/decoded(toType:decoder:)`` for a response's body: with `decoder`, or the client's decoder for the
    /// response's content type; a failure carries the request and the response.
    @inlinable
    func decodedByContentType<Decoded: Decodable & Sendable>(
        as type: Decoded.Type,
        decoder: (any ResponseBodyDecoder)?
    ) -> Future<Decoded> {
        let decoders = self.decoders
        // Unowned: the transform is stored in `self` while it is pending, and only `self` runs it (a strong
        // reference would keep a body abandoned while pending alive forever).
        return map { [unowned self] data in
            // Set before the body arrived; `nil` only for a body that did not come from a response.
            let response = self.response
            let chosen = decoder ?? response.map { decoders.decoder(for: $0) } ?? decoders.fallback
            return try decodeBody(data, as: type, with: chosen, response: response)
        }
    }
}
