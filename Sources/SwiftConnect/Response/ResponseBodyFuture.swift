import Foundation

/// The former name of the future ``Connect/request(_:debugResponse:)`` returns, which is now a plain `Future<Data>`.
///
/// That future still knows the response its body comes from and the client's decoders, and so do the futures that
/// ``Future/timeout(after:on:)``, ``Future/receive(on:)``, ``Future/always(on:_:)``, ``Future/mapError(_:)`` and
/// `recover` make of it: ``Future/decoded(toType:decoder:)`` chooses the decoder for the response's `Content-Type`
/// after any of them (a value `recover` gives in place of a failure comes from no response: it decodes with the
/// client's fallback decoder; a body future a recovery returns decodes as that future does).
@available(*, deprecated, message: "Use Future<Data>: Connect returns a Future<Data> that knows its response")
public typealias ResponseBodyFuture = Future<Data>

/// What the body future of a response that ``Connect`` returned knows besides the body: the client's decoders and,
/// once it arrived, the response. It is the future's ``Future/attachment``, kept by the operators that pass the
/// body through unchanged, and read by ``Future/decoded(toType:decoder:)`` to choose a decoder by content type:
///
/// ```swift
/// var decoders = ResponseDecoders.default
/// decoders.register(PropertyListDecoder(), for: "application/x-plist")
/// let connect = Connect(settings: Connect.Settings(decoders: decoders))
/// connect.request(SettingsConnector.get())  // answers with Content-Type: application/x-plist
///     .timeout(after: 5)
///     .decoded(toType: Settings.self)       // decoded with the PropertyListDecoder
/// ```
@usableFromInline
final class ResponseBodySource: Sendable {
    /// The client's decoders.
    private let ownDecoders: ResponseDecoders
    /// The response, written once, before the body future succeeds: whoever sees the body sees the response too.
    private let received = Protected<ConnectResponse?>(nil)
    /// For the future an asynchronous `recover` makes: the source of the body its value came from (the failed future's
    /// own on a success, the recovery's), whose response and decoders are this one's; `nil` for a value from no
    /// response. Set once, before the value is seen.
    private let origin = Protected<ResponseBodySource?>(nil)

    init(decoders: ResponseDecoders) {
        ownDecoders = decoders
    }

    /// The client's decoders, or those of the client whose body a recovery gave.
    @usableFromInline var decoders: ResponseDecoders { origin.snapshot?.decoders ?? ownDecoders }

    /// The response the body came from; `nil` until the body arrived.
    @usableFromInline var response: ConnectResponse? { origin.snapshot?.response ?? received.snapshot }

    /// The source of the future an asynchronous `recover` makes of the body future `self` is the source of: it knows
    /// what ``adopt(_:)`` says the value came from.
    func recovering() -> ResponseBodySource {
        ResponseBodySource(decoders: ownDecoders)
    }

    /// Says where the value of a `recover`'s future came from: `source`'s body, or none.
    ///
    /// Kept one level deep: `source`'s own origin, if it has one (set before its value was seen), in its place. A
    /// recovery's source pointing at the recovery before it made a list as long as the chain, which reading
    /// ``response`` or ``decoders``, and freeing the last source, walked recursively: 50,000 asynchronous `recover`s
    /// (a recursive retry) overflowed a 512 KiB thread's stack.
    func adopt(_ source: ResponseBodySource?) {
        let flattened = source.map { $0.origin.snapshot ?? $0 }
        origin.withLock { $0 = flattened }
    }

    /// The body future of `response`: it succeeds with the response's body, after recording the response here.
    static func body(of response: Future<ConnectResponse>, decoders: ResponseDecoders) -> Future<Data> {
        let source = ResponseBodySource(decoders: decoders)
        let body = Future<Data>(callbackQueue: response.callbackQueue, attachment: source)
        body.setUpstream(response)
        response.whenCompleteReturningWork { result in
            if case .success(let answer) = result { source.received.withLock { $0 = answer } }
            return body.resolve(result.map(\.data))
        }.run()
        return body
    }

    /// `body` decoded as `type`: by `decoder` if given, else by the decoder registered for the response's
    /// content type; a failure names the request and response.
    @inlinable
    func decoded<Decoded: Decodable & Sendable>(
        _ body: Future<Data>,
        as type: Decoded.Type,
        decoder: (any ResponseBodyDecoder)?
    ) -> Future<Decoded> {
        body.map { [self] data in
            // Both set before the body arrived: an asynchronous `recover` says only then whose body it gave.
            let response = self.response
            let decoders = self.decoders
            let chosen = decoder ?? response.map { decoders.decoder(for: $0) } ?? decoders.fallback
            return try decodeBody(data, as: type, with: chosen, response: response)
        }
    }
}
