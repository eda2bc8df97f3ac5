import Foundation
import SwiftConnect

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// Reads the message of an XML error body, for a backend that answers its errors in XML: Amazon S3's (and other AWS
/// REST APIs') `<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`, a SOAP
/// fault's `<faultcode>` and `<faultstring>` (SOAP 1.2's `<Code><Value>` and `<Reason><Text>`), or
/// `<error><message>…</message></error>`. The default ``ErrorHandler`` reads JSON only: such an answer failed as
/// "the server answered 404", its message left in the body.
///
/// ```swift
/// let connect = Connect(errorHandler: XMLErrorHandler())
/// // A 404 from S3 fails with ConnectError(.serverMessage): "NoSuchKey: The specified key does not exist."
/// ```
///
/// The message is the text of the first element named `Message`, `msg`, `faultstring`, `Reason` (SOAP 1.2's
/// `Reason/Text`), `detail`, `description` or `error` (names compared without their namespace prefix and ignoring case),
/// in that order, text directly inside the element only; a code (`Code`, SOAP 1.2's `Code/Value`, `faultcode`,
/// `errorCode`) goes before it: `NoSuchKey: The specified key does not exist.`. Either alone is the message. A body that is not XML (its `Content-Type` says neither XML nor HTML and it
/// does not start with `<`), or an XML one with neither, goes to `fallback`, which reads JSON by default.
///
/// The body is read as ``XMLBodyDecoder`` reads one: in the charset its `Content-Type` names, and not at all when it
/// declares entities, nests more than 256 levels deep or has an element with more than 256 attributes (it then goes to
/// `fallback`, whose error keeps the body). No external entity is ever read.
public struct XMLErrorHandler: ErrorHandling {
    private let fallback: any ErrorHandling

    /// Creates the handler.
    ///
    /// - Parameter fallback: What reads a body that is not XML, or an XML one without a message: the default
    ///   ``ErrorHandler`` (JSON) unless you give another.
    public init(fallback: any ErrorHandling = ErrorHandler()) {
        self.fallback = fallback
    }

    /// Asks `fallback`: the JSON object of a body is not XML.
    public func handle(response: [String: Any]) -> (any Error)? {
        fallback.handle(response: response)
    }

    /// A ``ConnectError`` of kind ``ConnectError/Kind/serverMessage`` with the message of an XML error body, the
    /// response's status, headers and body kept; `fallback`'s answer for any other body.
    public func handle(_ response: ConnectResponse) -> (any Error)? {
        guard let message = Self.message(of: response) else { return fallback.handle(response) }
        // Made from the response itself: its request keeps the secrets the connector declared, hidden in the error.
        return ConnectError(.serverMessage, message: message, response: response)
    }

    /// The message of `response`'s body if it is XML with one.
    static func message(of response: ConnectResponse) -> String? {
        let type = response.mediaType ?? ""
        guard !type.contains("html"), !type.contains("json") else { return nil }
        guard type.contains("xml") || startsLikeXML(response.data) else { return nil }
        guard let data = try? XMLCharset.prepared(response.data, contentType: response.header("Content-Type")),
            (try? XMLPreflight.check(data, refusesTrailingContent: false, refusesPastLimits: false)) != nil
        else { return nil }
        let reader = ErrorFields()
        let parser = XMLParser(data: data)
        parser.delegate = reader
        _ = parser.parse()
        let message = messageNames.lazy.compactMap { reader.texts[$0] }.first
        let code = codeNames.lazy.compactMap { reader.texts[$0] }.first
        switch (code, message) {
        case (let code?, let message?) where code != message: return shortened(code + ": " + message)
        case (_, let message?): return shortened(message)
        case (let code?, nil): return shortened(code)
        case (nil, nil): return nil
        }
    }

    /// The names of the elements whose text is the message, lowercased, by rank.
    static let messageNames = ["message", "msg", "faultstring", "reason", "detail", "description", "error"]
    /// The names of the elements whose text is the error's code, lowercased, by rank.
    static let codeNames = ["code", "faultcode", "errorcode"]

    /// Whether `data` starts, after a byte order mark and white space, with `<`: an XML body sent without an XML type.
    private static func startsLikeXML(_ data: Data) -> Bool {
        var bytes = data.prefix(256)[...]
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) { return true }
        return bytes.first { ![0x20, 0x09, 0x0D, 0x0A].contains($0) } == UInt8(ascii: "<")
    }

    /// `text` on one line, white space runs made one space, at most 1,024 characters.
    private static func shortened(_ text: String) -> String {
        let line = text.split(whereSeparator: { $0.isWhitespace || $0.isNewline }).joined(separator: " ")
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: line.unicodeScalars.filter { !CharacterSet.controlCharacters.contains($0) })
        let printable = String(scalars)
        return printable.count > 1_024 ? String(printable.prefix(1_023)) + "…" : printable
    }

    /// Keeps, for each element name (lowercased, without its prefix), the first text found directly in such an
    /// element; SOAP 1.2's `Code/Value` and `Reason/Text` as the text of `code` and `reason`. One per parse, on the
    /// parsing thread.
    private final class ErrorFields: NSObject, XMLParserDelegate {
        private(set) var texts: [String: String] = [:]
        /// The open elements' names and the text read directly in each so far.
        private var open: [(name: String, text: String)] = []

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
        ) {
            let local = elementName.split(separator: ":").last.map(String.init) ?? elementName
            open.append((local.lowercased(), ""))
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            guard !open.isEmpty else { return }
            open[open.count - 1].text += string
        }

        func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
            guard !open.isEmpty, let string = String(data: CDATABlock, encoding: .utf8) else { return }
            open[open.count - 1].text += string
        }

        func parser(
            _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?
        ) {
            guard let element = open.popLast() else { return }
            var name = element.name
            if let parent = open.last?.name,
                (name == "value" && parent == "code") || (name == "text" && parent == "reason")
            {
                name = parent
            }
            let text = element.text.trimmingCharacters(in: .whitespacesAndNewlines)
            if !text.isEmpty, texts[name] == nil { texts[name] = text }
        }

        func parser(_ parser: XMLParser, resolveExternalEntityName name: String, systemID: String?) -> Data? {
            nil
        }
    }
}
