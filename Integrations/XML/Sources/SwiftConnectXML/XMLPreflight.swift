import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// What is refused before XMLCoder reads a document, each as a decoding error that says why: a document nested deeper
/// than `depthLimit`, one with an element of more than `attributeLimit` attributes, one whose entities the parser would
/// drop, one whose markup is not ASCII (EBCDIC), whose entity declarations cannot be checked, and (for a decoded
/// answer) one with content after its root element.
///
/// Depth: XMLCoder turns a parsed document into its tree of values by recursion, one call per level, whether the model
/// reads those levels or not: a document nested a few hundred levels deep overflowed a 512 KiB thread stack (the size
/// of Apple's dispatch worker threads, where an engine completes a response), about ten thousand levels an 8 MiB one,
/// and the process stopped. The parser's own limit is higher than that.
///
/// Attributes: the parser (libxml2 2.9, on Linux) checks each attribute of an element against every one before it for
/// a duplicate, so an element's time grew with the square of its attributes: 40,000 of them, half a megabyte, took
/// seconds, and a few megabytes of them took the parser minutes. They are counted before any parser runs.
///
/// Entities: the parser drops the text of an entity the document declares (`<!ENTITY e "text">`: `a&e;b` decoded as
/// `ab`; an external one, `SYSTEM "file:…"`, took the rest of the text with it), and that of an undeclared entity when
/// the document names an external DTD (`&nbsp;` under `<!DOCTYPE html SYSTEM …>`). Refusing declarations also ends
/// expansion attacks (a billion laughs, a large entity used many times) before the parser starts. External entities
/// are never resolved either way: no file is read and nothing is fetched. XML's own entities (`&amp;`, `&lt;`…) and
/// character references (`&#233;`) are not entities declared by the document, and decode as ever.
enum XMLPreflight {
    /// The deepest nesting decoded, the root element counted: libxml2's own default (`xmlParserMaxDepth`), far beyond
    /// any API's answer, and well within a 512 KiB stack.
    static let depthLimit = 256

    /// The most attributes an element may have, namespace declarations counted: far beyond any API's answer, and few
    /// enough that the parser's check for duplicates (each attribute against those before it) stays a small part of
    /// its time, however many such elements a document has.
    static let attributeLimit = 256

    /// Throws when `data` declares entities, refers to one the parser cannot read, nests deeper than `depthLimit`,
    /// has an element with more than `attributeLimit` attributes, or has markup the parser reads but that is not ASCII
    /// (nor UTF-16 or UTF-32, which are read as the parser does).
    /// When `refusesTrailingContent`, throws too for content after the root element (a second document, a warning
    /// printed after it), at which the parser stops without failing: the document before it would decode as if the
    /// rest were not there. When `refusesPastLimits`, throws for a document past one of the parser's size limits
    /// (``limitReason(code:)``), which no later step can read either: refused here, it fails at once, where each
    /// later step took seconds over a 10 MB text first. Another document the parser cannot read is not judged here:
    /// XMLCoder reports it as it does.
    ///
    /// - Throws: `DecodingError.dataCorrupted` saying what is refused.
    static func check(_ data: Data, refusesTrailingContent: Bool = true, refusesPastLimits: Bool = true) throws {
        let bytes = asciiCompatible(data)
        if let encoding = declaredEncoding(in: bytes), hidesMarkup(encoding) {
            throw refusal(
                "the XML is in \(encoding), an encoding whose ASCII bytes need not be the markup they look like: its "
                    + "entity declarations cannot be checked, so it is not decoded")
        }
        if hasElementPastAttributeLimit(bytes) {
            throw refusal("the XML has an element with more than \(attributeLimit) attributes, which is not decoded")
        }
        let prolog = self.prolog(of: bytes)
        if prolog == .declaresEntities {
            throw refusal(
                "the XML declares entities (<!ENTITY …>), which are not decoded: the parser would drop their text")
        }
        // A parser that only counts levels and watches for entities it cannot read: a few percent of XMLCoder's time.
        // Markup the parser reads but the check cannot (EBCDIC, which the parser knows by its first bytes): its entity
        // declarations are unseen, and the parser would drop their text. It stops at the root element, before any
        // reference is expanded.
        let watcher = Watcher(stopsAtRoot: prolog == .unreadable)
        let parser = XMLParser(data: data)
        parser.delegate = watcher
        _ = parser.parse()
        if watcher.sawElement, prolog == .unreadable {
            throw refusal(
                "the XML's markup is not ASCII (an EBCDIC document, say), which is not decoded: its entity "
                    + "declarations cannot be checked")
        }
        if refusesPastLimits, let code = watcher.firstErrorCode, let reason = limitReason(code: code) {
            throw refusal(
                "the XML is not read at line \(watcher.errorLine), column \(watcher.errorColumn) (XMLParser error "
                    + "\(code)): \(reason)")
        }
        if watcher.isTooDeep {
            throw refusal("the XML nests deeper than \(depthLimit) elements, which is not decoded")
        }
        if refusesTrailingContent, watcher.hasTrailingContent {
            throw refusal("the XML has content after its root element, which is no XML document")
        }
        if let entity = watcher.unreadEntity {
            throw refusal(
                "the XML refers to the entity &\(printable(entity));, which it does not declare: its text would be lost"
            )
        }
    }

    /// What limit of libxml2's the parser's error `code` says a document is past, or `nil` for another error.
    /// Foundation's `XMLParser` parses without `XML_PARSE_HUGE` and offers no way to set it (on Linux nor on Apple's
    /// platforms), so a document past these limits cannot be read at all, though ``XMLBodyEncoder`` writes it.
    static func limitReason(code: Int) -> String? {
        switch code {
        case 1:
            // `XML_ERR_INTERNAL_ERROR`, which libxml2 reports for a text or a CDATA section reaching
            // `XML_MAX_TEXT_LENGTH`.
            return "a text reaches the XML parser's limit of 10,000,000 bytes (libxml2's XML_MAX_TEXT_LENGTH), "
                + "which XMLParser offers no way to lift"
        case 110:
            // `XML_ERR_NAME_TOO_LONG`.
            return "a name is longer than the XML parser's limit of 50,000 characters (libxml2's XML_MAX_NAME_LENGTH), "
                + "which XMLParser offers no way to lift"
        default:
            return nil
        }
    }

    private static func refusal(_ description: String) -> DecodingError {
        .dataCorrupted(DecodingError.Context(codingPath: [], debugDescription: description))
    }

    /// At most 64 characters of `text` (a server's), each outside printable ASCII shown as `?`: fit for a message.
    private static func printable(_ text: String) -> String {
        String(text.unicodeScalars.prefix(64).map { (0x20..<0x7F).contains($0.value) ? Character($0) : "?" })
    }

    /// Counts open elements and stops the parser past `depthLimit` (or at the root element when `stopsAtRoot`);
    /// notes an entity the parser asks to have read. One per parse, on the parsing thread.
    private final class Watcher: NSObject, XMLParserDelegate {
        private let stopsAtRoot: Bool
        private var depth = 0
        private(set) var isTooDeep = false
        private(set) var sawElement = false
        private(set) var hasTrailingContent = false
        private var sawError = false
        /// The parser's first error that is not about namespaces, and where it stopped.
        private(set) var firstErrorCode: Int?
        private(set) var errorLine = 0
        private(set) var errorColumn = 0

        init(stopsAtRoot: Bool) {
            self.stopsAtRoot = stopsAtRoot
        }
        private(set) var unreadEntity: String?

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
        ) {
            depth += 1
            sawElement = true
            if stopsAtRoot {
                parser.abortParsing()
            } else if depth > XMLPreflight.depthLimit {
                isTooDeep = true
                parser.abortParsing()
            }
        }

        func parser(
            _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?
        ) {
            depth -= 1
        }

        func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
            // libxml2's `XML_ERR_DOCUMENT_END`, "Extra content at the end of the document", as the first error once
            // the root element has closed: it stops there, and reports success to XMLCoder. After another error (a
            // mismatched or missing end tag) it follows from that one, which XMLCoder reports. libxml2's namespace
            // errors (`XML_NS_ERR_…`, 200 to 299: a prefix the document does not declare) are read past.
            let code = (parseError as NSError).code
            guard !(200..<300).contains(code) else { return }
            defer { sawError = true }
            if firstErrorCode == nil {
                firstErrorCode = code
                errorLine = parser.lineNumber
                errorColumn = parser.columnNumber
            }
            if !sawError, sawElement, depth == 0, code == 5 { hasTrailingContent = true }
        }

        func parser(_ parser: XMLParser, resolveExternalEntityName name: String, systemID: String?) -> Data? {
            // Never read: the parser then drops the reference and goes on, and the value would lack its text.
            if unreadEntity == nil { unreadEntity = name }
            return nil
        }
    }

    // MARK: - Entity declarations

    /// The encoding the XML declaration of `bytes` names (`<?xml version="1.0" encoding="UTF-7"?>`), at most 64
    /// characters of it, or `nil`.
    static func declaredEncoding(in bytes: [UInt8]) -> String? {
        var start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        guard bytes[start...].starts(with: Array("<?xml".utf8)) else { return nil }
        start += 5
        let end = bytes[start...].firstIndex(of: UInt8(ascii: ">")) ?? bytes.endIndex
        let declaration = String(decoding: bytes[start..<end], as: UTF8.self)
        guard let name = declaration.range(of: "encoding") else { return nil }
        let rest = declaration[name.upperBound...].drop { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" }
        guard rest.first == "=" else { return nil }
        let value = rest.dropFirst().drop { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" }
        guard let quote = value.first, quote == "\"" || quote == "'" else { return nil }
        let encoding = value.dropFirst().prefix { $0 != quote }
        return String(encoding.prefix(64).map { $0.isASCII && !$0.isNewline ? $0 : "?" })
    }

    /// Whether `encoding` (a name as an XML declaration writes it) is one whose ASCII bytes can stand for other
    /// characters, so that markup the check reads as text (`+ADw-!ENTITY` in UTF-7) is markup to the parser, which
    /// decodes it (libxml2 through iconv): UTF-7 (and IMAP's, `UTF-7-IMAP`, which writes `<` as `&ADw-`), HZ and the
    /// ISO-2022 encodings, whose escapes switch what the bytes mean.
    static func hidesMarkup(_ encoding: String) -> Bool {
        let name = String(encoding.lowercased().filter { $0.isLetter || $0.isNumber })
        return name.contains("utf7") || name.hasPrefix("hz") || name.hasPrefix("iso2022")
            || name.hasPrefix("csiso2022")
    }

    /// What the prolog, read as ASCII markup, shows.
    enum Prolog: Equatable {
        /// The document's type declaration declares an entity.
        case declaresEntities
        /// The prolog ends at the root element's `<` with no entity declared.
        case declaresNone
        /// Where markup was due, a byte that is no ASCII markup: a document in an encoding whose markup is not
        /// ASCII (EBCDIC), or no XML at all.
        case unreadable
    }

    /// Whether the document's type declaration (`<!DOCTYPE … [ … ]>`, before the root element) declares an entity,
    /// as far as ASCII markup shows it (UTF-16 and UTF-32 read as the parser reads them). Only the prolog is read:
    /// `<!ENTITY` inside the document (in a CDATA section) is text.
    static func prolog(of data: Data) -> Prolog {
        prolog(of: asciiCompatible(data))
    }

    /// The prolog of a document whose bytes are as `asciiCompatible(_:)` gives them.
    private static func prolog(of bytes: [UInt8]) -> Prolog {
        var index = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        func starts(with prefix: String) -> Bool {
            let prefix = Array(prefix.utf8)
            return index + prefix.count <= bytes.count && bytes[index..<(index + prefix.count)].elementsEqual(prefix)
        }
        func skip(past terminator: String) {
            while index < bytes.count, !starts(with: terminator) { index += 1 }
            index = min(bytes.count, index + terminator.utf8.count)
        }
        while index < bytes.count {
            if isSpace(bytes[index]) {
                index += 1
            } else if starts(with: "<?") {
                skip(past: "?>")
            } else if starts(with: "<!--") {
                skip(past: "-->")
            } else if starts(with: "<!DOCTYPE") {
                // To the `>` that ends it, outside quoted literals and its internal subset's brackets. A `]` inside a
                // declaration of the subset (`<!ELEMENT … >`) does not end it: in Shift_JIS, GBK or Big5 it can be a
                // character's second byte (`ゾ` is `83 5D`), in a name the parser reads as one.
                var inSubset = false
                var inDeclaration = false
                index += 9
                while index < bytes.count {
                    if starts(with: "<!ENTITY") { return .declaresEntities }
                    if starts(with: "<!--") {
                        skip(past: "-->")
                        continue
                    }
                    // A processing instruction's text is no literal: a quote in it (`<?pi " ?>`) opens none.
                    if starts(with: "<?") {
                        skip(past: "?>")
                        continue
                    }
                    if inSubset, starts(with: "<!") {
                        inDeclaration = true
                        index += 2
                        continue
                    }
                    let byte = bytes[index]
                    index += 1
                    if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                        while index < bytes.count, bytes[index] != byte { index += 1 }
                        index += 1
                    } else if byte == UInt8(ascii: "[") {
                        inSubset = true
                    } else if byte == UInt8(ascii: "]"), !inDeclaration {
                        inSubset = false
                    } else if byte == UInt8(ascii: ">"), inDeclaration {
                        inDeclaration = false
                    } else if byte == UInt8(ascii: ">"), !inSubset {
                        break
                    }
                }
            } else {
                // The root element: the prolog is over. Any other byte is no ASCII markup. A declaration where the
                // root element is due is one the type declaration held, ended early by a byte the check misread.
                if starts(with: "<!ENTITY") { return .declaresEntities }
                return bytes[index] == UInt8(ascii: "<") ? .declaresNone : .unreadable
            }
        }
        return .declaresNone
    }

    // MARK: - Attributes

    /// Whether a start tag in `bytes` (markup in ASCII) has more than `attributeLimit` attributes: more than that many
    /// `=` outside its quoted values. Comments, CDATA sections, processing instructions, the document type declaration
    /// and text are skipped; markup that is not well-formed is the parser's to refuse.
    static func hasElementPastAttributeLimit(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { bytes in
            let count = bytes.count
            var index = 0
            func starts(with prefix: StaticString) -> Bool {
                let length = prefix.utf8CodeUnitCount
                guard index + length <= count else { return false }
                return (0..<length).allSatisfy { bytes[index + $0] == prefix.utf8Start[$0] }
            }
            func skip(past terminator: StaticString) {
                while index < count, !starts(with: terminator) { index += 1 }
                index = min(count, index + terminator.utf8CodeUnitCount)
            }
            /// Moves past the `>` that ends a tag or declaration, outside quoted literals (and, for a declaration,
            /// its internal subset's brackets), and returns how many `=` it passed outside quotes.
            func skipTag() -> Int {
                var equals = 0
                var inSubset = false
                while index < count {
                    let byte = bytes[index]
                    index += 1
                    switch byte {
                    case UInt8(ascii: "\""), UInt8(ascii: "'"):
                        while index < count, bytes[index] != byte { index += 1 }
                        index += 1
                    case UInt8(ascii: "="): equals += 1
                    case UInt8(ascii: "["): inSubset = true
                    case UInt8(ascii: "]"): inSubset = false
                    case UInt8(ascii: ">") where !inSubset: return equals
                    default: break
                    }
                }
                return equals
            }
            while index < count {
                guard bytes[index] == UInt8(ascii: "<") else {
                    index += 1
                    continue
                }
                if starts(with: "<!--") {
                    skip(past: "-->")
                } else if starts(with: "<![CDATA[") {
                    skip(past: "]]>")
                } else if starts(with: "<?") {
                    skip(past: "?>")
                } else if starts(with: "<!") {
                    _ = skipTag()
                } else if skipTag() > attributeLimit {
                    return true
                }
            }
            return false
        }
    }

    /// `data` as bytes in which markup is ASCII: as it is, or turned into UTF-8 when it is in UTF-16 or UTF-32 (known
    /// by its byte order mark or by how `<` is written, as the parser knows it).
    private static func asciiCompatible(_ data: Data) -> [UInt8] {
        let head = Array(data.prefix(4))
        let unit: (size: Int, bigEndian: Bool)
        switch head {
        case [0x00, 0x00, 0xFE, 0xFF], [0x00, 0x00, 0x00, 0x3C]: unit = (4, true)
        case [0xFF, 0xFE, 0x00, 0x00], [0x3C, 0x00, 0x00, 0x00]: unit = (4, false)
        case _ where head.starts(with: [0xFE, 0xFF]) || head.starts(with: [0x00, 0x3C]): unit = (2, true)
        case _ where head.starts(with: [0xFF, 0xFE]) || head.starts(with: [0x3C, 0x00]): unit = (2, false)
        default: return Array(data)
        }
        // A byte order mark becomes U+FEFF in UTF-8, which `prolog(of:)` skips. Read leniently, as the parser reads
        // it: libxml2 drops a last unit cut short (an odd byte count in UTF-16) and parses the rest, so a strict
        // decoding that gave up on such a document saw no markup at all, and passed the entities it declared.
        let bytes = Array(data)
        let whole = bytes.count / unit.size * unit.size
        func value(at index: Int) -> UInt32 {
            var value: UInt32 = 0
            for offset in 0..<unit.size {
                let byte = UInt32(bytes[index + (unit.bigEndian ? offset : unit.size - 1 - offset)])
                value = value << 8 | byte
            }
            return value
        }
        if unit.size == 2 {
            let units = stride(from: 0, to: whole, by: 2).map { UInt16(truncatingIfNeeded: value(at: $0)) }
            return Array(String(decoding: units, as: UTF16.self).utf8)
        }
        var scalars = String.UnicodeScalarView()
        for index in stride(from: 0, to: whole, by: 4) {
            scalars.append(Unicode.Scalar(value(at: index)) ?? "\u{FFFD}")
        }
        return Array(String(scalars).utf8)
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A
    }
}
