import Foundation
import SwiftConnect
import XMLCoder

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// Decodes XML response bodies with XMLCoder, for ``ResponseDecoders``: `decoded(toType:)` of an
/// `application/xml` or `text/xml` answer then gives a `Decodable` model, as JSON answers do.
///
/// ```swift
/// let connect = Connect(settings: Connect.Settings(decoders: .default.withXML()))
/// let feed = try await connect.request(FeedConnector()).decoded(toType: Feed.self).value
/// ```
///
/// Each body gets a decoder of its own (XMLCoder's are classes, not safe to share across threads), set up by
/// `configure`. Leave XMLCoder's `errorContextLength` at 0: with a length set, XMLCoder 0.18 indexes past the end
/// of its line list for malformed XML with blank lines or a body that is not UTF-8, and the process stops.
///
/// The body's encoding is found as RFC 7303 ranks the clues: its byte order mark; else the `charset` of the
/// response's `Content-Type` (`text/xml; charset=ISO-8859-1`), which wins over the document's XML declaration; else
/// that declaration; else UTF-8. A `charset` that is not an encoding name, or one the XML parser does not know, fails
/// as a decoding error.
///
/// A document with a text of 10,000,000 bytes or more (a file of 7.5 MB in base64), or a name over 50,000 characters,
/// fails as a decoding error that says which limit it reached: they are libxml2's, which Foundation's `XMLParser`
/// offers no way to lift, and ``XMLBodyEncoder`` writes such a document all the same for a server that reads it.
///
/// A document whose elements nest more than 256 levels deep (the root counted) fails as a decoding error too:
/// XMLCoder reads a document by recursion, and one nested a few hundred levels deeper would overflow a thread's stack.
/// So does one with an element of more than 256 attributes (namespace declarations counted), counted before the XML
/// parser runs: the parser checks each attribute against every one before it, and took minutes over a few megabytes
/// of them.
/// So does one that declares entities (`<!DOCTYPE note [<!ENTITY e "…">]>`), or refers to an entity it does not
/// declare under an external DTD: the parser would drop their text and the value would come out wrong. So does one
/// whose markup is not ASCII (EBCDIC): its declarations cannot be checked. So does content after the root element (a
/// second document, a warning printed after it), where the parser stops without failing. XML's own entities
/// (`&amp;`, `&lt;`…) and character references (`&#233;`) decode as ever, and an external entity is never read: no
/// file, no network.
///
/// A text value is trimmed at its ends, as XMLCoder does by default (`<name>  Bob </name>` decodes as `Bob`), and keeps
/// the white space inside it: XMLCoder's trimming dropped white space between two references (`&#233; &#233;` decoded
/// as `éé`, `a &amp; &lt; b` as `a &< b`, `a&#160;b` as `ab`), as the US-ASCII and ISO-8859-1 bodies of
/// ``XMLBodyEncoder`` write them. Such a document is written again, each value trimmed and that white space kept, and
/// XMLCoder reads it with `trimValueWhitespaces` off; names, attributes, CDATA sections and namespaces are kept. A
/// decoder configured with `trimValueWhitespaces = false` reads every value as it is.
///
/// An element that is absent reads as `nil` into an `Optional`; an empty one (`<title/>`, `<title></title>`) reads as
/// `""` into a `String?`, not as `nil`, and fails as a `DecodingError.valueNotFound` into a number, a `Bool` or a
/// `Date`, optional or not (decode such a field as `String?` and convert it where an empty element means none).
/// XMLCoder decides this in its unboxing, which offers no hook.
///
/// Numbers and text are read as XMLCoder reads them, with Swift's own parsers. A `Decimal` keeps 38 significant digits
/// and rounds off more, as `JSONDecoder` does. Unlike `JSONDecoder`, a `Double` or a `Float` past its range reads as
/// infinity or zero (`1e400`, `1e-400`, `3.5e38` for a `Float`), and `NaN`, `INF` and `-INF` (in any case) read as
/// such, whatever `nonConformingFloatDecodingStrategy` says; a `String` read from an element that holds elements is
/// empty (for mixed content, its first text); a `Bool` reads `yes`, `y`, `no` and `n` as well as XML Schema's `true`,
/// `false`, `1` and `0`. XMLCoder decides these in its unboxing, which offers no hook: its decoder never reads
/// `nonConformingFloatDecodingStrategy`, has no strategy for numbers or text, and hands each nested model a decoder of
/// its own, so this package sees neither the text nor the element such a value came from. Check such a value in the
/// model's `init(from:)` where it matters
/// (`guard amount.isFinite else { throw DecodingError.dataCorruptedError(…) }`), and read an element that may hold
/// elements as a model of its own. An integer that does not fit its type fails as a `DecodingError`, and so
/// does a `Date` read as seconds or milliseconds since 1970 (`.secondsSince1970`, the default, or
/// `.millisecondsSince1970`) whose number is infinite, not a number or past a `Double`'s range, which XMLCoder read as
/// a date that is no point in time, or as the epoch.
///
/// `Data` is read from base64 as XML Schema's `base64Binary` is: white space in it (base64 sent in lines) is left out,
/// and an empty element is empty data, as ``XMLBodyEncoder`` writes `Data()`; XMLCoder's `.base64` refused both. An
/// element that holds elements fails as a `DecodingError.typeMismatch`, where XMLCoder read empty data. A
/// `dataDecodingStrategy` set in `configure` is used instead.
public struct XMLBodyDecoder: ResponseBodyDecoder {
    private let configure: @Sendable (XMLDecoder) -> Void

    /// Creates a decoder.
    ///
    /// - Parameter configure: Sets up each XMLCoder decoder: key and date strategies, whitespace handling.
    public init(configure: @escaping @Sendable (XMLDecoder) -> Void = { _ in }) {
        self.configure = configure
    }

    /// Decodes `type` from the XML in `data`: in the encoding its byte order mark or its XML declaration names, else
    /// UTF-8.
    ///
    /// - Parameters:
    ///   - type: The model type.
    ///   - data: The body.
    /// - Returns: The model.
    /// - Throws: XMLCoder's `DecodingError`, or `DecodingError.dataCorrupted` for a document the XML parser cannot
    ///   read (saying where and why, the parser's error as its underlying error), nested more than 256 elements deep,
    ///   with an element of more than 256 attributes, whose entities would be lost, whose markup is not ASCII (EBCDIC)
    ///   or that has content after its root element; the client reports either as ``ConnectError/Kind/decoding``.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try decode(type, from: data, contentType: nil)
    }

    /// Decodes `type` from the XML in `data`, the body of a response whose `Content-Type` is `contentType`: its
    /// `charset`, if any, is the body's encoding unless a byte order mark says otherwise.
    ///
    /// - Parameters:
    ///   - type: The model type.
    ///   - data: The body.
    ///   - contentType: The response's `Content-Type`; `nil` reads the body as ``decode(_:from:)`` does.
    /// - Returns: The model.
    /// - Throws: XMLCoder's `DecodingError`, or `DecodingError.dataCorrupted` for a `charset` that is not an
    ///   encoding name, a UTF-16 or UTF-32 body that is not valid in it, a document the XML parser cannot read (saying
    ///   where and why, the parser's error as its underlying error), or a document nested more than 256 elements
    ///   deep, with an element of more than 256 attributes, whose entities would be lost, whose markup is not ASCII
    ///   (EBCDIC) or that has content after its root element; the client reports each as
    ///   ``ConnectError/Kind/decoding``.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data, contentType: String?) throws -> T {
        let prepared: Data
        do {
            prepared = try XMLCharset.prepared(data, contentType: contentType)
        } catch let problem as XMLCharset.Problem {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: [], debugDescription: problem.description, underlyingError: problem))
        }
        try XMLPreflight.check(prepared)
        let decoder = XMLDecoder()
        // XMLCoder's `.base64` reads an empty element (how `Data()` is written) as no value, and refuses base64 with
        // white space in it, which XML Schema's base64Binary allows and senders write (lines of 76 characters).
        decoder.dataDecodingStrategy = .custom(Self.base64Data(from:))
        configure(decoder)
        // XMLCoder reads a number of seconds with `Double(_:)` and nothing more: `1e400`, `inf` or `nan` gave a date
        // that is no point in time (whose `description` stops the process), `1e-400` the epoch. The same strategy,
        // strict about the number; another strategy is left as it is.
        switch decoder.dateDecodingStrategy {
        case .secondsSince1970:
            decoder.dateDecodingStrategy = .custom { try Self.date(from: $0, unitsPerSecond: 1) }
        case .millisecondsSince1970:
            decoder.dateDecodingStrategy = .custom { try Self.date(from: $0, unitsPerSecond: 1_000) }
        default:
            break
        }
        // XMLCoder's trimming drops white space between two references (`&#233; &#233;` decoded as `éé`): such a
        // document is written again with its values trimmed and that space kept, and read without trimming.
        var body = prepared
        if decoder.trimValueWhitespaces, let restored = XMLWhitespace.restored(prepared) {
            decoder.trimValueWhitespaces = false
            body = restored
        }
        do {
            return try decoder.decode(type, from: body)
        } catch let error as NSError where error.domain == XMLParser.errorDomain {
            // XMLCoder throws the parser's own error, which says neither what nor where ("Code=9 (null)").
            throw Self.unreadable(body, error: error, contentType: contentType)
        }
    }

    /// The bytes of a base64 text, XML's white space (space, tab, line feed, carriage return) in it left out; an
    /// empty text is empty data.
    ///
    /// - Throws: `DecodingError.typeMismatch` for an element that holds elements (XMLCoder reads its text as empty,
    ///   or as the text before its first element), `DecodingError.dataCorrupted` for a text that is not base64.
    private static func base64Data(from decoder: any Decoder) throws -> Data {
        let text = try decoder.singleValueContainer().decode(String.self)
        if holdsElements(decoder) {
            throw DecodingError.typeMismatch(
                Data.self,
                DecodingError.Context(
                    codingPath: decoder.codingPath,
                    debugDescription: "Expected Base64 text for Data but found an element that holds elements."))
        }
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: text.unicodeScalars.filter { !["\u{20}", "\t", "\n", "\r"].contains($0) })
        guard let data = Data(base64Encoded: String(scalars)) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "the text is not valid Base64"))
        }
        return data
    }

    /// Whether the element `decoder` reads holds elements, as XMLCoder's containers show it: its unkeyed container
    /// lists the element's elements and text nodes, not its attributes; its keyed container's keys name all three, a
    /// text node as `""` (`"#CDATA"` for a CDATA section). An element XMLCoder offers neither container for (an empty
    /// one) holds none.
    private static func holdsElements(_ decoder: any Decoder) -> Bool {
        guard let nodes = try? decoder.unkeyedContainer().count, nodes > 0,
            let keys = try? decoder.container(keyedBy: XMLName.Key.self).allKeys
        else { return false }
        return nodes > keys.filter { $0.stringValue == "" || $0.stringValue == "#CDATA" }.count
    }

    /// The date a number of seconds (`unitsPerSecond` 1) or milliseconds (1,000) since 1970 is, as XMLCoder's
    /// `.secondsSince1970` and `.millisecondsSince1970` read it, a number that is not finite refused.
    ///
    /// - Throws: `DecodingError.valueNotFound` for an empty element (or one holding elements), as XMLCoder's
    ///   strategies do, and
    ///   `DecodingError.dataCorrupted` for a text that is no number, or whose number is infinite, not a number, or
    ///   too large or too small for a `Double` (`1e400`, `1e-400`), as `JSONDecoder` refuses one.
    private static func date(from decoder: any Decoder, unitsPerSecond: Double) throws -> Date {
        let unit = unitsPerSecond == 1 ? "seconds" : "milliseconds"
        // XMLCoder reads an empty element, or one holding elements, as the empty text.
        let text = try decoder.singleValueContainer().decode(String.self)
        guard !text.isEmpty else {
            throw DecodingError.valueNotFound(
                Date.self,
                DecodingError.Context(
                    codingPath: decoder.codingPath, debugDescription: "Expected Date value but found null instead."))
        }
        guard let number = Double(text) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath,
                    debugDescription: "Expected date string to be formatted in \(unit) since 1970."))
        }
        guard number.isFinite, number != 0 || !hasNonZeroDigit(inMantissaOf: text) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath,
                    debugDescription:
                        "The number of \(unit) since 1970 <\(text.prefix(64))> is not finite or does not fit in Double."
                ))
        }
        // A date past what `time_t` holds (`1e19` seconds) decodes, then stops the process when printed (Foundation's
        // `Date.description` converts it to `time_t`): refused as the number it cannot stand for.
        let seconds = number / unitsPerSecond
        guard abs(seconds) < Double(Int64.max) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath,
                    debugDescription:
                        "The number of \(unit) since 1970 <\(text.prefix(64))> is past any date a Date can show."))
        }
        return Date(timeIntervalSince1970: seconds)
    }

    /// Whether the part of a number `text` (that `Double(_:)` reads) before its exponent has a digit other than 0:
    /// read as zero, such a number was too small for a `Double`, not zero.
    private static func hasNonZeroDigit(inMantissaOf text: String) -> Bool {
        let lowercased = text.lowercased()
        let unsigned = lowercased.drop { $0 == "+" || $0 == "-" }
        if unsigned.hasPrefix("0x") {
            return unsigned.dropFirst(2).prefix { $0 != "p" }.contains { "123456789abcdef".contains($0) }
        }
        return unsigned.prefix { $0 != "e" }.contains { "123456789".contains($0) }
    }

    /// The parser's `error` for `data` as a `DecodingError` that says where the parser stopped and why.
    private static func unreadable(_ data: Data, error: NSError, contentType: String?) -> DecodingError {
        let parser = XMLParser(data: data)
        let watcher = FirstError()
        parser.delegate = watcher
        _ = parser.parse()
        let code = watcher.code ?? error.code
        let place = watcher.code.map { _ in " at line \(watcher.line), column \(watcher.column)" } ?? ""
        let reason: String
        switch code {
        case 1, 110:
            reason = XMLPreflight.limitReason(code: code) ?? "libxml2's error \(code) (xmlParserErrors)"
        case 4:
            reason = "it holds no element: it is not XML, or not in the encoding it is read in"
        case 9:
            reason =
                "it holds a character XML 1.0 does not allow (a control character, U+FFFE, U+FFFF), or "
                + "bytes that are not valid in the encoding it is read in"
        case 32:
            let charset = contentType.flatMap(XMLCharset.charset(of:)).map { " (\($0))" } ?? ""
            reason = "its encoding\(charset) is not one the XML parser knows"
        case 40:
            // `XML_ERR_ATTRIBUTE_NOT_FINISHED`, which libxml2 reports for a value reaching its 10,000,000 bytes too.
            reason =
                "an attribute's value does not end: its closing quote is missing, or it reaches the XML parser's "
                + "limit of 10,000,000 bytes (libxml2's XML_MAX_TEXT_LENGTH)"
        case 42:
            reason = "an element has the same attribute twice"
        case 76:
            reason = "an end tag does not match its start tag"
        case 5, 77:
            reason =
                "it ends before its elements close: one is not closed, or bytes that are not valid in the "
                + "encoding it is read in cut it short"
        case 81:
            reason = "its bytes are not valid in the encoding it declares"
        default:
            reason = "libxml2's error \(code) (xmlParserErrors)"
        }
        return .dataCorrupted(
            DecodingError.Context(
                codingPath: [],
                debugDescription: "the XML is not well-formed\(place) (XMLParser error \(code)): \(reason)",
                underlyingError: error))
    }

    /// Notes where the parser finds its first error that is not about namespaces (those it reads past). One per
    /// parse, on the parsing thread.
    private final class FirstError: NSObject, XMLParserDelegate {
        private(set) var code: Int?
        private(set) var line = 0
        private(set) var column = 0

        func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
            let code = (parseError as NSError).code
            guard self.code == nil, !(200..<300).contains(code) else { return }
            self.code = code
            line = parser.lineNumber
            column = parser.columnNumber
        }

        func parser(_ parser: XMLParser, resolveExternalEntityName name: String, systemID: String?) -> Data? {
            nil
        }
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
///
/// A `Date` is written as seconds since 1970 (`1700000000`), as ``XMLBodyDecoder`` reads one; XMLCoder's own encoder
/// wrote seconds since 2001, which read back 31 years early. Set `dateEncodingStrategy` in `configure` for another
/// form (`.iso8601` for XML Schema's `dateTime`).
///
/// A `nil` property is written as no element, and reads back as `nil`. A `nil` inside an array is written as an empty
/// element (`<note />`), which reads back as `""` into a `[String?]` and fails into a `[Int?]`: XMLCoder has no way to
/// write one `nil` in a list, and this encoder no hook to refuse it. An array of one element is written as that element
/// alone and an empty array as no element; both read back as sent. A text's white space at its ends is written as it
/// is, but ``XMLBodyDecoder`` trims it, as XMLCoder does by default (`" two words "` reads back as `two words`): keep
/// it with `trimValueWhitespaces = false` on the decoder, or send it in an attribute, whose value reads back whole.
///
/// A value that is a single value alone (a `String`, a number, a `Date`, an enum with a raw value, `nil`) is the root
/// element's text: `Parameter.xml("hello", rootKey: "greeting")` sends `<greeting>hello</greeting>` (`nil`, an empty
/// root element), which ``XMLBodyDecoder`` reads back as the value.
public struct XMLBodyEncoder: RequestBodyEncoder, Sendable {
    /// The name of the root element; `nil` names it after the value's type, which must then be an XML name (a
    /// generic type such as `[Order]` is not: the body fails to encode, nothing sent).
    public var rootKey: String?
    /// Whether the body starts with `<?xml version="1.0" encoding="UTF-8"?>` (naming the charset of ``contentType``
    /// when it names another). `true` by default.
    public var includesHeader: Bool
    /// The `Content-Type` the body is sent with: `application/xml; charset=utf-8` by default. The body is written in
    /// the charset it names (UTF-8 when it names none), which the XML declaration names too: UTF-8, UTF-16, UTF-32,
    /// ISO-8859-1 or US-ASCII (in which a character they cannot carry is written as a character reference, `&#xE9;`);
    /// another fails to encode.
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

    /// Encodes `value` as an XML document. A carriage return, and in an attribute a line feed or a tab, is written
    /// as a character reference (`&#13;`), which XML parsers read as sent; written as it is, they read it as a line
    /// feed (or as a space in an attribute).
    ///
    /// - Parameter value: The value.
    /// - Returns: The body.
    /// - Throws: XMLCoder's `EncodingError`, or `EncodingError.invalidValue` when a key (as the key strategy gives it)
    /// or the root's name is no XML name with at most one colon (`two words`, `a>b`, `a:b:c`; the key `""`, XMLCoder's
    ///   for an element's own text, is not a name), when what XMLCoder wrote is not well-formed XML (a value holding a
    ///   character XML 1.0 cannot carry: a control character other than tab, line feed and carriage return, U+FFFE,
    ///   U+FFFF), or when ``contentType``
    ///   names a charset this encoder does not write or that cannot carry a character of a name (in a text or an
    ///   attribute value such a character is written as a character reference, `&#xE9;`), or, with XMLCoder's `.cdata`
    ///   string strategy, when a value holds `]]>` or a carriage return, which a CDATA section cannot carry as it is
    ///   (`]]>` would end it, and what follows would be read as markup); the request then fails
    ///   with ``ConnectError/InvalidRequestReason/bodyEncodingFailed(_:)``, nothing sent.
    public func encode<T: Encodable>(_ value: T) throws -> Data {
        let encoder = XMLEncoder()
        // XML reads a carriage return in text as a line feed (XML 1.0 §2.11), and a line break or a tab in an
        // attribute as a space (§3.3.3): written as character references, they arrive as sent.
        encoder.charactersEscapedInElements.append(("\r", "&#13;"))
        encoder.charactersEscapedInAttributes += [("\r", "&#13;"), ("\n", "&#10;"), ("\t", "&#9;")]
        // XMLCoder writes a date as Foundation's own number (seconds since 2001) but reads one as seconds since 1970:
        // a date sent came back, and reached a server reading Unix time, 31 years early.
        encoder.dateEncodingStrategy = .secondsSince1970
        configure(encoder)
        // A server reads the body in the charset of its Content-Type (RFC 7303 §3.2): UTF-8 bytes under another one
        // reach it wrong (`Café` read as `CafÃ©`). The body is written in that charset, its declaration naming it.
        let charset = try Self.charset(of: contentType, for: T.self)
        let header = includesHeader ? XMLHeader(version: 1.0, encoding: charset?.name ?? "UTF-8") : nil
        // XMLCoder names the root after the type as Swift writes it: `Array<Order>` is no XML name, and the server
        // would get a document it cannot parse.
        let name = rootKey ?? String(describing: T.self)
        guard XMLName.isQualifiedName(name) else {
            // The type, not the value: the error's text is shown, and the value may hold a password.
            let advice = rootKey == nil ? ": give a rootKey (such as \"orders\")" : ""
            throw EncodingError.invalidValue(
                String(describing: T.self),
                EncodingError.Context(
                    codingPath: [], debugDescription: "'\(name)' is not an XML element name" + advice))
        }
        // XMLCoder stops the process on a value that is no container ("Unrecognized top-level element"): such a value
        // is the root element's text.
        let isSingleValue = XMLSingleValue.isSingleValue(value)
        func write() throws -> Data {
            guard isSingleValue else { return try encoder.encode(value, withRootKey: name, header: header) }
            return try encoder.encode(XMLSingleValue.Root(value: value), withRootKey: name, header: header)
        }
        // Each key, as the key strategy gives it, is checked as XMLCoder asks for it: a key with markup in it (`a>b`)
        // would be written as a well-formed document of another shape. XMLCoder's own conversions (snake case…) keep
        // a key a name or not, and are checked by their keys in a second pass, which sees them before conversion.
        let names = XMLName.Check()
        let strategy = encoder.keyEncodingStrategy
        let checksAsItWrites: Bool
        switch strategy {
        case .useDefaultKeys:
            encoder.keyEncodingStrategy = .custom { path in
                let key = path[path.count - 1]
                names.check(key)
                return key
            }
            checksAsItWrites = true
        case .custom(let convert):
            encoder.keyEncodingStrategy = .custom { path in
                let key = convert(path)
                names.check(key)
                return key
            }
            checksAsItWrites = true
        default:
            checksAsItWrites = false
        }
        var body = try write()
        if !checksAsItWrites {
            encoder.keyEncodingStrategy = .custom { path in
                let key = path[path.count - 1]
                names.check(key)
                return key
            }
            _ = try write()
            encoder.keyEncodingStrategy = strategy
        }
        if let refused = names.refused {
            throw EncodingError.invalidValue(
                String(describing: T.self),
                EncodingError.Context(
                    codingPath: [],
                    debugDescription: "the key '\(Self.printable(refused))' is not an XML name, which an element or "
                        + "an attribute needs (a letter or '_' first, then letters, digits, '-', '_' or '.', and at "
                        + "most one ':' after a prefix): rename it in CodingKeys or with a keyEncodingStrategy"))
        }
        if case .cdata = encoder.stringEncodingStrategy {
            // XMLCoder writes a value inside `<![CDATA[…]]>` as it is: `]]>` in it ends the section, and what follows
            // is read as markup (elements of the sender's choosing); a carriage return is read as a line feed. The
            // body must read as the same value written as escaped text.
            encoder.stringEncodingStrategy = .deferredToString
            let escaped = try write()
            encoder.stringEncodingStrategy = .cdata
            // libxml2 keeps a carriage return in a CDATA section, which XML 1.0 (§2.11) has read as a line feed.
            let expected = Self.content(of: escaped)
            // The parser does not judge the characters of a CDATA section: a control character is found as text.
            if expected == nil, let problem = Self.wellFormednessProblem(of: escaped) {
                throw Self.notWellFormed(T.self, problem)
            }
            let carriesCarriageReturn = expected?.contains { $0.hasPrefix("#") && $0.unicodeScalars.contains("\r") }
            if Self.content(of: body) != expected || carriesCarriageReturn == true {
                throw EncodingError.invalidValue(
                    String(describing: T.self),
                    EncodingError.Context(
                        codingPath: [],
                        debugDescription: "a value holds ']]>' or a carriage return, which a CDATA section cannot "
                            + "carry as it is: encode strings with XMLCoder's .deferredToString strategy"))
            }
        }
        if let charset {
            // A character the charset cannot carry is written as a character reference where XML allows one.
            guard
                let referenced = Self.referencingUnwritable(
                    String(decoding: body, as: UTF8.self), in: charset.encoding),
                let written = referenced.data(using: charset.encoding)
            else {
                throw EncodingError.invalidValue(
                    String(describing: T.self),
                    EncodingError.Context(
                        codingPath: [],
                        debugDescription: "a name (or a comment, CDATA section or processing instruction) holds a "
                            + "character \(charset.name), the charset of the Content-Type, cannot carry; a text or "
                            + "an attribute value would carry it as a character reference"))
            }
            body = written
        }
        // XMLCoder writes names and text as they are: a key that is no XML name (`two words`) or a character XML
        // cannot carry (a control character such as ESC) would reach the server as a document it cannot parse. It is
        // judged as the decoder reads it: the parser takes UTF-32's byte order mark for UTF-16's, and reads no
        // little-endian UTF-32 without one.
        let readable = (try? XMLCharset.prepared(body, contentType: contentType)) ?? body
        if let problem = Self.wellFormednessProblem(of: readable) {
            throw Self.notWellFormed(T.self, problem)
        }
        return body
    }

    /// At most 64 characters of `text` (a key), each outside printable ASCII and not a letter shown as `?`: fit for a
    /// message.
    private static func printable(_ text: String) -> String {
        let shown = text.unicodeScalars.prefix(64).map { scalar in
            (0x20..<0x7F).contains(scalar.value) || (scalar.value >= 0xA0 && scalar.properties.isAlphabetic)
                ? Character(scalar) : "?"
        }
        return String(shown) + (text.unicodeScalars.count > 64 ? "…" : "")
    }

    /// The error for a body of `type` that is not well-formed XML, as the parser's `problem` says.
    private static func notWellFormed<T>(_ type: T.Type, _ problem: String) -> EncodingError {
        // The type, not the value: the error's text is shown, and the value may hold a password.
        EncodingError.invalidValue(
            String(describing: T.self),
            EncodingError.Context(
                codingPath: [],
                debugDescription: "the XML written is not well-formed (\(problem)): a key is no XML element "
                    + "name, or a value holds a character XML 1.0 cannot carry (a control character)"))
    }

    /// The charset `contentType` names and its encoding, or `nil` for UTF-8 (named or not), which XMLCoder writes.
    ///
    /// - Throws: `EncodingError.invalidValue` for a charset this encoder does not write.
    static func charset<T>(of contentType: String, for type: T.Type) throws -> (
        name: String, encoding: String.Encoding
    )? {
        guard let name = XMLCharset.charset(of: contentType), !["utf-8", "utf8"].contains(name.lowercased()) else {
            return nil
        }
        guard let encoding = XMLCharset.writableEncoding(name) else {
            throw EncodingError.invalidValue(
                String(describing: T.self),
                EncodingError.Context(
                    codingPath: [],
                    debugDescription: "the Content-Type names the charset \(name), which XMLBodyEncoder does not "
                        + "write: name UTF-8, UTF-16, UTF-32, ISO-8859-1 or US-ASCII"))
        }
        return (name, encoding)
    }

    /// `xml` with each character `encoding` cannot carry (US-ASCII: past U+007F; ISO-8859-1: past U+00FF) written as
    /// a character reference (`&#xE9;`), which XML allows in text and in attribute values (XML 1.0 §4.1); `nil` when
    /// one is where no reference is read as a character: in a name, a comment, a CDATA section or a processing
    /// instruction. `xml` unchanged for an encoding that carries every character (UTF-16, UTF-32).
    static func referencingUnwritable(_ xml: String, in encoding: String.Encoding) -> String? {
        let limit: UInt32
        switch encoding {
        case .ascii: limit = 0x80
        case .isoLatin1: limit = 0x100
        default: return xml
        }
        guard xml.unicodeScalars.contains(where: { $0.value >= limit }) else { return xml }
        enum Place {
            case text
            /// Inside `<…>` (a tag, or a declaration such as `<!DOCTYPE`), in an attribute value if `quote` is set.
            case markup(quote: Unicode.Scalar?)
            /// Inside a comment, CDATA section or processing instruction, until `end`.
            case literal(end: String.UnicodeScalarView.SubSequence)
        }
        let scalars = xml.unicodeScalars
        var result = String.UnicodeScalarView()
        var place = Place.text
        var index = scalars.startIndex
        while index < scalars.endIndex {
            let scalar = scalars[index]
            let rest = scalars[index...]
            switch place {
            case .text where scalar == "<":
                if rest.starts(with: "<!--".unicodeScalars) {
                    place = .literal(end: "-->".unicodeScalars[...])
                } else if rest.starts(with: "<![CDATA[".unicodeScalars) {
                    place = .literal(end: "]]>".unicodeScalars[...])
                } else if rest.starts(with: "<?".unicodeScalars) {
                    place = .literal(end: "?>".unicodeScalars[...])
                } else {
                    place = .markup(quote: nil)
                }
            case .markup(nil) where scalar == ">":
                place = .text
            case .markup(nil) where scalar == "\"" || scalar == "'":
                place = .markup(quote: scalar)
            case .markup(let quote?) where scalar == quote:
                place = .markup(quote: nil)
            case .literal(let end) where rest.starts(with: end):
                result.append(contentsOf: end)
                index = scalars.index(index, offsetBy: end.count)
                place = .text
                continue
            default:
                break
            }
            if scalar.value >= limit {
                switch place {
                case .text, .markup(quote: _?):
                    result.append(contentsOf: "&#x\(String(scalar.value, radix: 16, uppercase: true));".unicodeScalars)
                    index = scalars.index(after: index)
                    continue
                case .markup(quote: nil), .literal:
                    return nil
                }
            }
            result.append(scalar)
            index = scalars.index(after: index)
        }
        return String(result)
    }

    /// What the XML parser finds wrong with `body`, or `nil` when it reads it whole. A namespace prefix the document
    /// does not declare (`<soap:Body>` alone) is well-formed XML 1.0, and what passes the parser's own size limits (a
    /// text over 10 MB, a name over 50,000 characters) is not judged: both are let through as before.
    static func wellFormednessProblem(of body: Data) -> String? {
        let parser = XMLParser(data: body)
        let watcher = ParseErrorWatcher()
        parser.delegate = watcher
        _ = parser.parse()
        return watcher.problem
    }

    /// What an XML parser reads in `body`: each element's name (after `<` or `</`) and attributes (after `@`), and
    /// the text between tags (after `#`, a CDATA section's joined to the text around it); `nil` when it cannot read it
    /// whole.
    static func content(of body: Data) -> [String]? {
        let parser = XMLParser(data: body)
        let reader = ContentReader()
        parser.delegate = reader
        return parser.parse() ? reader.content + ["#" + reader.text] : nil
    }

    /// Notes each start and end tag and each run of text, for ``content(of:)``. One per parse, on the parsing thread.
    private final class ContentReader: NSObject, XMLParserDelegate {
        private(set) var content: [String] = []
        /// The text read since the last tag.
        private(set) var text = ""

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
        ) {
            content += ["#" + text, "<" + elementName, "@\(attributeDict.sorted { $0.key < $1.key })"]
            text = ""
        }

        func parser(
            _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?
        ) {
            content += ["#" + text, "</" + elementName]
            text = ""
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            text += string
        }

        func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
            text += String(decoding: CDATABlock, as: UTF8.self)
        }

        func parser(_ parser: XMLParser, resolveExternalEntityName name: String, systemID: String?) -> Data? {
            nil
        }
    }

    /// Notes the parser's first error that is not about namespaces, and its line, unless it is one of the parser's
    /// limits (the errors after that follow from it). One per parse, on the parsing thread.
    private final class ParseErrorWatcher: NSObject, XMLParserDelegate {
        private(set) var problem: String?
        private var isJudged = false

        func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
            let code = (parseError as NSError).code
            // libxml2's namespace errors (`XML_NS_ERR_…`, 200 to 299) are read past.
            guard !isJudged, !(200..<300).contains(code) else { return }
            isJudged = true
            // libxml2's limits: `XML_ERR_INTERNAL_ERROR` (1: a text over 10 MB), `XML_ERR_NO_MEMORY` (2),
            // `XML_ERR_NAME_TOO_LONG` (110).
            guard ![1, 2, 110].contains(code) else { return }
            problem = "XMLParser error \(code) at line \(parser.lineNumber)"
        }

        func parser(_ parser: XMLParser, resolveExternalEntityName name: String, systemID: String?) -> Data? {
            nil
        }
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
