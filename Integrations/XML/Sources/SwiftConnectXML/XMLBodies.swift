import Foundation
import SwiftConnect
import XMLCoder

/// Decodes XML response bodies with XMLCoder, for ``ResponseDecoders``: `decoded(toType:)` of an
/// `application/xml` or `text/xml` answer then gives a `Decodable` model, as JSON answers do.
///
/// ```swift
/// let connect = Connect(settings: Connect.Settings(decoders: .default.withXML()))
/// let feed = try await connect.request(FeedConnector()).decoded(toType: Feed.self).value
/// ```
///
/// Each body gets a decoder of its own (XMLCoder's are classes, not safe to share across threads), set up by
/// `configure`.
public struct XMLBodyDecoder: ResponseBodyDecoder {
    private let configure: @Sendable (XMLDecoder) -> Void

    /// Creates a decoder.
    ///
    /// - Parameter configure: Sets up each XMLCoder decoder: key and date strategies, whitespace handling.
    public init(configure: @escaping @Sendable (XMLDecoder) -> Void = { _ in }) {
        self.configure = configure
    }

    /// Decodes `type` from the XML in `data`.
    ///
    /// - Parameters:
    ///   - type: The model type.
    ///   - data: The body.
    /// - Returns: The model.
    /// - Throws: XMLCoder's `DecodingError`; the client reports it as ``ConnectError/Kind/decoding``.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        let decoder = XMLDecoder()
        configure(decoder)
        return try decoder.decode(type, from: data)
    }
}

extension ResponseDecoders {
    /// These decoders with `decoder` for `application/xml` and `text/xml` answers, and every `+xml` type
    /// (`application/atom+xml`, `application/problem+xml`…).
    ///
    /// ```swift
    /// Connect.Settings(decoders: .default.withXML())
    /// ```
    ///
    /// - Parameter decoder: The XML decoder; a plain one by default.
    /// - Returns: The decoders, XML added.
    public func withXML(_ decoder: XMLBodyDecoder = XMLBodyDecoder()) -> ResponseDecoders {
        var decoders = self
        decoders.register(decoder, for: "application/xml")
        decoders.register(decoder, for: "text/xml")
        decoders.register(decoder, for: "+xml")
        return decoders
    }
}

/// Encodes request bodies as XML with XMLCoder, for ``Parameter/encoded(value:encoder:)`` (or ``Parameter/xml(_:rootKey:)``).
///
/// ```swift
/// var parameters: ParametersRepresentable? { Parameter.xml(order, rootKey: "order") }
/// // Content-Type: application/xml; charset=utf-8
/// // <?xml version="1.0" encoding="UTF-8"?><order>…</order>
/// ```
public struct XMLBodyEncoder: RequestBodyEncoder, Sendable {
    /// The name of the root element; `nil` names it after the value's type.
    public var rootKey: String?
    /// Whether the body starts with `<?xml version="1.0" encoding="UTF-8"?>`. `true` by default.
    public var includesHeader: Bool
    /// The `Content-Type` the body is sent with: `application/xml; charset=utf-8` by default.
    public var contentType: String
    private let configure: @Sendable (XMLEncoder) -> Void

    /// Creates an encoder.
    ///
    /// - Parameters:
    ///   - rootKey: The name of the root element; `nil` names it after the value's type.
    ///   - includesHeader: Whether the body starts with an XML declaration.
    ///   - contentType: The `Content-Type` of the body.
    ///   - configure: Sets up each XMLCoder encoder: key and date strategies, attributes, formatting.
    public init(
        rootKey: String? = nil,
        includesHeader: Bool = true,
        contentType: String = "application/xml; charset=utf-8",
        configure: @escaping @Sendable (XMLEncoder) -> Void = { _ in }
    ) {
        self.rootKey = rootKey
        self.includesHeader = includesHeader
        self.contentType = contentType
        self.configure = configure
    }

    /// Encodes `value` as an XML document.
    ///
    /// - Parameter value: The value.
    /// - Returns: The body.
    /// - Throws: XMLCoder's `EncodingError`; the request then fails with
    ///   ``ConnectError/InvalidRequestReason/bodyEncodingFailed(_:)``, nothing sent.
    public func encode<T: Encodable>(_ value: T) throws -> Data {
        let encoder = XMLEncoder()
        configure(encoder)
        let header = includesHeader ? XMLHeader(version: 1.0, encoding: "UTF-8") : nil
        return try encoder.encode(value, withRootKey: rootKey, header: header)
    }
}

extension Parameter {
    /// An XML body made of `value`, as ``XMLBodyEncoder`` writes it.
    ///
    /// ```swift
    /// Route("/orders", method: .post, parameters: Parameter.xml(order, rootKey: "order"))
    /// ```
    ///
    /// - Parameters:
    ///   - value: The value.
    ///   - rootKey: The name of the root element; `nil` names it after the value's type.
    /// - Returns: The parameter.
    public static func xml(_ value: some Encodable, rootKey: String? = nil) -> Parameter {
        .encoded(value: value, encoder: XMLBodyEncoder(rootKey: rootKey))
    }
}
