import Foundation

// MARK: - Decoding

extension Future where Value == Data {
    /// Decodes the body into `type`.
    ///
    /// ```swift
    /// Connect.default.request(TodoConnector.get(id: 123))
    ///     .decoded(toType: Todo.self)
    ///     .observe { result in print(result) }
    /// ```
    ///
    /// Without a `decoder`, the body of a response that ``Connect`` returned is decoded by the client's
    /// ``ResponseDecoders`` for the response's `Content-Type` (JSON unless you registered others), also after
    /// operators that pass the body through unchanged (``timeout(after:on:)``, ``receive(on:)``,
    /// ``always(on:_:)``): `connect.request(…).timeout(after: 5).decoded(toType: Todo.self)` decodes as
    /// `connect.request(…).decoded(toType: Todo.self)` does. Any other `Future<Data>` (one you made, or one `map`
    /// returned) is decoded as JSON. An empty body, or one of only white space, decodes as `nil` when `type` is an
    /// `Optional`, and as ``EmptyResponse``. A JSON body that is not UTF-8 is read in the single-byte charset its
    /// response declares, if any (`application/json; charset=ISO-8859-1`, `windows-1252`).
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - decoder: The decoder to use whatever the content type, such as a `JSONDecoder` with your date
    ///     strategy; `nil` (the default) chooses by content type for a response's body, JSON otherwise.
    /// - Returns: A future of the decoded value. A decoding failure is a ``ConnectError`` of kind
    ///   ``ConnectError/Kind/decoding`` with the coding path and an excerpt of the body, and, for the body of a
    ///   response that ``Connect`` returned, the request and response.
    @inlinable
    public func decoded<Decoded: Decodable & Sendable>(
        toType type: Decoded.Type = Decoded.self,
        decoder: (any ResponseBodyDecoder)? = nil
    ) -> Future<Decoded> {
        // Inlinable, so that the caller's module specialises it for `Decoded`: run unspecialised, it took longer
        // per request after a large decode had left the runtime's generic code cold (BENCHMARKS.md).
        // A response's body future carries what it knows of its response, for decoding by content type.
        if let source = attachment as? ResponseBodySource { return source.decoded(self, as: type, decoder: decoder) }
        let decoder = decoder ?? JSONDecoder()
        return map { data in try decodeBody(data, as: type, with: decoder) }
    }
}

/// Decodes a response body, turning every failure into a ``ConnectError`` of kind `.decoding`.
///
/// - Parameters:
///   - data: The body.
///   - type: The type to decode.
///   - decoder: The decoder.
///   - response: The response the body came from, when known: its `Content-Type` goes to a decoder other than
///     `JSONDecoder`, and a failure carries its request, status and headers. Evaluated only for those.
@usableFromInline
func decodeBody<Decoded: Decodable>(
    _ data: Data,
    as type: Decoded.Type,
    with decoder: any ResponseBodyDecoder,
    response: @autoclosure () -> ConnectResponse? = nil
) throws -> Decoded {
    // The first byte is looked at before the type: a body that starts with a value costs no conformance lookup.
    if data.first.map(JSONSyntax.mayStartBlank) ?? true,
        let emptyType = type as? any EmptyDecodable.Type, JSONSyntax.isBlank(data),
        let empty = emptyType.emptyValue as? Decoded
    {
        // A body of only white space (a server's lone newline), after a byte order mark if any (as JSON bodies with
        // one decode), in UTF-8, UTF-16 or UTF-32 (as JSONDecoder reads them), has no value either: JSON has nothing
        // to decode in it.
        return empty
    }
    do {
        // JSON is UTF-8 (RFC 8259 §8.1; JSONDecoder also tells UTF-16 and UTF-32 by their bytes): its decoder needs
        // no header lookup. Other formats may read the `charset` of the response's content type.
        if decoder is JSONDecoder { return try decoder.decode(type, from: data) }
        return try decoder.decode(type, from: data, contentType: response()?.header("Content-Type"))
    } catch {
        let response = response()
        var error = error
        // The JSON parser reads UTF-8 (and UTF-16 and UTF-32): a body in the single-byte charset its response
        // declares (`charset=ISO-8859-1`) is read again in that charset, and a failure is told of that text. So is
        // a UTF-32LE body after its byte order mark, `FF FE 00 00`, which the parser takes for UTF-16LE's `FF FE`
        // followed by a NUL (seen with Swift 6.3's Foundation on Linux; a body it reads, it never gets here for).
        var text = data
        if decoder is JSONDecoder {
            text = BodyCharset.utf8(data, contentType: response?.header("Content-Type"))
            if text.starts(with: JSONSyntax.utf32LittleEndianMark) { text = JSONSyntax.utf8(text) ?? text }
            if text != data {
                do { return try decoder.decode(type, from: text) } catch let converted { error = converted }
            }
        }
        var failure = ConnectError.decoding(
            error, body: data, as: type, keyDecodingStrategy: (decoder as? JSONDecoder)?.keyDecodingStrategy)
        // The response first: what the failure says is read from its body in the charset its head declares.
        if let response {
            failure.storedRequest = response.storedRequest
            failure.storedHead = response.storedHead
        }
        if let message = ConnectError.noValueMessage(in: data, decoding: type) {
            failure.message = message
        } else if decoder is JSONDecoder, JSONDepth.exceeds(text, limit: JSONDepth.foundationLimit) {
            // Foundation calls valid JSON that is too deep "not valid JSON"; say what is wrong instead.
            failure.message =
                "could not decode \(type) from the response body: "
                + "the JSON is nested deeper than \(JSONDepth.foundationLimit) levels"
        } else if decoder is JSONDecoder, case .dataCorrupted(let context)? = error as? DecodingError,
            context.codingPath.isEmpty, let problem = JSONSyntax.problem(in: text)
        {
            // Foundation says only "The given data was not valid JSON.": say where, and what the server declared.
            failure.message = "could not decode \(type) from the response body: the response body is not valid JSON: "
            failure.message += problem + JSONSyntax.declaredTypeNote(response?.mediaType)
        } else if let json = decoder as? JSONDecoder, JSONNumberFit.isNotValidJSONReport(error) {
            // The JSON parses: Foundation says "not valid JSON", with no path, of a number that does not fit its type.
            failure.explainNumberMisfit(JSONNumberFit.locate(type, in: text, with: json), decoding: type)
        } else if let json = decoder as? JSONDecoder, JSONNumberFit.isISO8601DateReport(error),
            let date = JSONNumberFit.locateDate(type, in: text, with: json)
        {
            failure.explainDateMisfit(date, decoding: type)
        }
        throw failure
    }
}

/// A value that decodes from an empty body. `Optional` (as `nil`) and ``EmptyResponse`` conform.
protocol EmptyDecodable {
    static var emptyValue: Self { get }
}

extension Optional: EmptyDecodable {
    static var emptyValue: Self { nil }
}

/// The body of a response that has none, such as `204 No Content`.
///
/// ```swift
/// connect.request(DeleteTodo(id: 1)).decoded(toType: EmptyResponse.self)
/// ```
public struct EmptyResponse: Decodable, Sendable, Equatable, EmptyDecodable {
    /// Creates an empty response.
    public init() {}

    /// Decodes from any JSON value, ignoring it.
    public init(from decoder: any Decoder) throws {}

    static var emptyValue: EmptyResponse { EmptyResponse() }
}

extension ConnectError {
    /// The message of a failure to decode `type` from `data` when `data` holds no value at all: empty, or only white
    /// space (a server's lone newline, read as ``JSONSyntax/isBlank(_:)`` reads it); `nil` for a body with something
    /// in it. Foundation says "not valid JSON" or "Unexpected end of file" of such a body, which sends people looking
    /// for a syntax error.
    static func noValueMessage(in data: Data, decoding type: Any.Type) -> String? {
        let what: String
        if data.isEmpty {
            what = "is empty"
        } else if JSONSyntax.isBlank(data) {
            what = "has only white space"
        } else {
            return nil
        }
        return "could not decode \(type) from the response body: the response body \(what) "
            + "(decode an Optional or EmptyResponse for a response that may have no body)"
    }

    /// A decoding failure with the coding path of the value that failed and an excerpt of the body.
    ///
    /// - Parameter keyDecodingStrategy: The strategy of the `JSONDecoder` that failed, when known: with
    ///   `convertFromSnakeCase`, a missing key is named as the JSON would have it too.
    static func decoding(
        _ error: any Error, body: Data, as type: Any.Type,
        keyDecodingStrategy: JSONDecoder.KeyDecodingStrategy? = nil
    ) -> ConnectError {
        var detail = "\(error)"
        var path: String?
        if let decodingError = error as? DecodingError {
            (detail, path) = describe(decodingError)
        }
        var message = "could not decode \(type) from the response body: \(detail)"
        if let path { message += " at '\(path)'" }
        if case .keyNotFound(let key, _)? = error as? DecodingError, case .convertFromSnakeCase? = keyDecodingStrategy,
            let note = snakeCaseNote(forMissing: key.stringValue)
        {
            message += " (\(note))"
        }
        var result = ConnectError(.decoding, message: message, body: body, underlyingError: error)
        result.codingPath = path
        if let failed = (error as? DecodingError)?.codingPathOfFailure {
            result.secretKeysInPath = Redaction.dataKeysUnderSecretName(in: failed)
        }
        return result
    }

    /// This failure (of `JSONDecoder`'s "not valid JSON" report of valid JSON) told of the number that does not fit
    /// its type, found or not, and the path to it. A number under a secret name in ``body`` (a numeric `password`) is
    /// not quoted.
    /// Says where the date `JSONDecoder`'s `.iso8601` strategy refused is (``JSONNumberFit/locateDate(_:in:with:)``):
    /// Foundation names the path of the object that holds it, without its key.
    mutating func explainDateMisfit(_ misfit: JSONNumberFit.Misfit, decoding type: Any.Type) {
        codingPath = misfit.path
        secretKeysInPath += Redaction.dataKeysUnderSecretName(in: misfit.codingPath)
        // The string itself, not its JSON text (`ab\/cd`), and never cut: the message's own hiding matches a secret
        // whole (a token or cookie echoed into the field), so a longer string is only counted.
        let raw =
            (try? JSONSerialization.jsonObject(with: Data(misfit.number.utf8), options: .fragmentsAllowed)) as? String
        var value =
            raw.map { $0.count <= 40 ? "\"" + SingleLineText.make($0, limit: 40) + "\"" : "of \($0.count) characters" }
            ?? "found"
        if let body,
            Redaction.valueUnderSecretName(
                at: misfit.codingPath, inJSON: body, contentType: storedHead?.value(of: "Content-Type")) != nil
        {
            value = Redaction.placeholder
        }
        message =
            "could not decode \(type) from the response body: the value \(value)"
            + (misfit.path.map { " at '\($0)'" } ?? "")
            + " is not an ISO 8601 date (the decoder's dateDecodingStrategy is .iso8601)"
    }

    mutating func explainNumberMisfit(_ misfit: JSONNumberFit.Misfit?, decoding type: Any.Type) {
        codingPath = misfit?.path
        if let found = misfit { secretKeysInPath += Redaction.dataKeysUnderSecretName(in: found.codingPath) }
        var misfit = misfit
        if let found = misfit, let body,
            Redaction.valueUnderSecretName(
                at: found.codingPath, inJSON: body, contentType: storedHead?.value(of: "Content-Type")) != nil
        {
            misfit?.number = Redaction.placeholder
        }
        message = "could not decode \(type) from the response body: " + JSONNumberFit.explanation(of: misfit)
    }

    /// What to add when `JSONDecoder.KeyDecodingStrategy.convertFromSnakeCase` did not find `key`, the model's name,
    /// which is not the JSON's: `user_id in the JSON` for `userId`; for `user_id`, that the strategy reads it as
    /// `userId`. `nil` when there is nothing to add (`name`, or `imageURL`: no usual snake_case key becomes it).
    private static func snakeCaseNote(forMissing key: String) -> String? {
        if let name = snakeCaseName(of: key) { return "\(name) in the JSON" }
        let converted = JSONNumberFit.camelCase(fromSnakeCase: key)
        guard converted != key else { return nil }
        // No JSON key becomes a key with an underscore between words: the strategy converts them all.
        return "the decoder's convertFromSnakeCase reads \(key) in the JSON as \(converted)"
    }

    /// The snake_case key `JSONDecoder.KeyDecodingStrategy.convertFromSnakeCase` turns into `key` (`user_id` for
    /// `userId`), as `JSONEncoder`'s `convertToSnakeCase` writes it; `nil` when that is `key` itself, or does not turn
    /// back into `key` (`imageURL` is written `image_url`, which becomes `imageUrl`).
    private static func snakeCaseName(of key: String) -> String? {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        guard let data = try? encoder.encode(SnakeCaseProbe(key: key)),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any], object.count == 1,
            let name = object.keys.first, name != key, JSONNumberFit.camelCase(fromSnakeCase: name) == key
        else { return nil }
        return name
    }

    /// A one-line description and a dotted coding path (`todos[2].title`) for a `DecodingError`.
    private static func describe(_ error: DecodingError) -> (String, String?) {
        let context: DecodingError.Context
        let detail: String
        switch error {
        case .typeMismatch(let type, let errorContext):
            context = errorContext
            detail = "expected \(type): \(errorContext.debugDescription)"
        case .valueNotFound(let type, let errorContext):
            context = errorContext
            detail = "missing \(type) value: \(errorContext.debugDescription)"
        case .keyNotFound(let key, let errorContext):
            context = errorContext
            detail = "missing key '\(key.stringValue)'"
        case .dataCorrupted(let errorContext):
            context = errorContext
            detail = "invalid data: \(errorContext.debugDescription)"
        @unknown default:
            return ("\(error)", nil)
        }
        return (detail, codingPathDescription(context.codingPath))
    }

    /// `[todos, 2, title]` → `todos[2].title`; the empty path → `nil`. A map's key made of digits is a name
    /// (`scores.2024`), not an index.
    static func codingPathDescription(_ path: [any CodingKey]) -> String? {
        guard !path.isEmpty else { return nil }
        var text = ""
        for key in path {
            if key.isArrayIndex, let index = key.intValue {
                text += "[\(index)]"
            } else {
                if !text.isEmpty { text += "." }
                text += key.stringValue
            }
        }
        return text
    }
}

/// An object of one key, for `JSONEncoder` to write that key by its key strategy.
private struct SnakeCaseProbe: Encodable {
    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    let key: String

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encodeNil(forKey: Key(stringValue: key))
    }
}
