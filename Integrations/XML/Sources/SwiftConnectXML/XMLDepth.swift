import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// How deeply a document's elements nest, measured before XMLCoder reads it.
///
/// XMLCoder turns a parsed document into its tree of values by recursion, one call per level, whether the model reads
/// those levels or not: a document nested a few hundred levels deep overflowed a 512 KiB thread stack (the size of
/// Apple's dispatch worker threads, where an engine completes a response), about ten thousand levels an 8 MiB one, and
/// the process stopped. The parser's own limit is higher than that. So the document is first read by a parser that
/// only counts levels (a pass that costs a few percent of XMLCoder's), and one nested deeper than `limit` is refused.
/// Elements an entity's replacement text makes are counted too: the parser reports them as elements.
enum XMLDepth {
    /// The deepest nesting decoded, the root element counted: libxml2's own default (`xmlParserMaxDepth`), far beyond
    /// any API's answer, and well within a 512 KiB stack.
    static let limit = 256

    /// Throws when `data`'s elements nest deeper than `limit`. A document the parser cannot read is not judged
    /// here: XMLCoder reports it as it does.
    ///
    /// - Throws: `DecodingError.dataCorrupted` saying how deep the limit is.
    static func check(_ data: Data) throws {
        let counter = Counter()
        let parser = XMLParser(data: data)
        parser.delegate = counter
        _ = parser.parse()
        if counter.exceeded {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: [],
                    debugDescription: "the XML nests deeper than \(limit) elements, which is not decoded"))
        }
    }

    /// Counts open elements and stops the parser past `XMLDepth/limit`. One per parse, on the parsing thread.
    private final class Counter: NSObject, XMLParserDelegate {
        private var depth = 0
        private(set) var exceeded = false

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
        ) {
            depth += 1
            if depth > XMLDepth.limit {
                exceeded = true
                parser.abortParsing()
            }
        }

        func parser(
            _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?
        ) {
            depth -= 1
        }
    }
}
