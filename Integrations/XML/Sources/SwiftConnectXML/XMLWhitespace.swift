import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// White space inside a text value, kept where XMLCoder's trimming dropped it.
///
/// The parser hands a text to XMLCoder in pieces: one for each reference (`&#233;`, `&amp;`), one for the text between
/// two of them, one on each side of a comment. XMLCoder, trimming values (`trimValueWhitespaces`, its default), drops
/// each piece that is white space alone before it trims the value at its ends: `<t>&#233; &#233;</t>` decoded as `éé`,
/// `a &amp; &lt; b` as `a &< b`, `a&#160;b` as `ab` (a no-break space is white space to its trimming). Our own encoder
/// writes such references in a US-ASCII or ISO-8859-1 body, so `é é` did not come back as sent.
///
/// A document where that happens, or whose texts come in so many pieces that XMLCoder would take long to join them
/// (``copyLimit``), is written again, as XMLCoder with trimming would read it had it kept those pieces:
/// each text value trimmed at its ends and white space alone between elements left out, the rest (names, attributes,
/// CDATA sections, the order of it all) as read. XMLCoder then reads it without trimming, which drops nothing. Any
/// other document is decoded as it is.
enum XMLWhitespace {
    /// `data` written again with the white space inside its text values kept and each in as few pieces as it can
    /// be, for XMLCoder to read with `trimValueWhitespaces` off; `nil` when XMLCoder with trimming reads it right and
    /// soon as it is, or when the parser cannot read it (XMLCoder reports that as ever).
    static func restored(_ data: Data) -> Data? {
        let writer = Writer()
        let parser = XMLParser(data: data)
        parser.delegate = writer
        guard parser.parse(), writer.dropsWhitespace || writer.copied > copyLimit else { return nil }
        return Data(writer.output.utf8)
    }

    /// How many bytes XMLCoder may copy joining the pieces of values before a document is written again with each
    /// value in one piece: it copies a value whole for each piece it adds, so a text split at many references (as a
    /// US-ASCII body carries non-ASCII text) took time growing with their number squared (a 4.5 MB body with a million
    /// references, a minute).
    static let copyLimit = 1 << 20

    /// XMLCoder's trimming: what it trims off a value's ends, and a piece of text made only of it is dropped.
    static func trimmed(_ text: String) -> String {
        text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Writes the document as it parses it, each text value as XMLCoder with trimming builds it, with the white space
    /// it would drop kept. One per parse, on the parsing thread.
    private final class Writer: NSObject, XMLParserDelegate {
        /// A text value as XMLCoder builds it: text read after a CDATA section joins that section's value.
        private struct Value {
            var isCDATA: Bool
            var text: String
            /// The length of `text` in UTF-8, as far as XMLCoder has joined it.
            var length = 0
        }

        private(set) var output = #"<?xml version="1.0" encoding="UTF-8"?>"#
        /// Whether a piece of white space XMLCoder would drop is inside a value.
        private(set) var dropsWhitespace = false
        /// How many bytes XMLCoder copies joining pieces of values, about.
        private(set) var copied = 0
        /// The names of the open elements.
        private var open: [String] = []
        /// The value being read directly in the innermost open element, if its last content is text.
        private var value: Value?
        /// White space read after `value`: part of it if more of it follows, else trimmed off its end.
        private var pending = ""

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
        ) {
            writeValue()
            output += "<" + elementName
            for (name, text) in attributeDict.sorted(by: { $0.key < $1.key }) {
                output += " " + name + #"=""# + Self.escaped(text, inAttribute: true) + #"""#
            }
            output += ">"
            open.append(elementName)
        }

        func parser(
            _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?
        ) {
            writeValue()
            guard let name = open.popLast() else { return }
            output += "</" + name + ">"
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            guard !open.isEmpty else { return }
            if XMLWhitespace.trimmed(string).isEmpty {
                // XMLCoder drops it; it belongs to the value if more text follows.
                if value != nil { pending += string }
                return
            }
            if value == nil {
                value = Value(isCDATA: false, text: "")
            }
            join(string)
        }

        func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
            // XMLCoder leaves out a section that is not UTF-8; it joins one to a value that began as a section.
            guard !open.isEmpty, let string = String(data: CDATABlock, encoding: .utf8) else { return }
            if value?.isCDATA != true {
                writeValue()
                value = Value(isCDATA: true, text: "")
            }
            join(string)
        }

        func parser(_ parser: XMLParser, resolveExternalEntityName name: String, systemID: String?) -> Data? {
            nil
        }

        /// Adds `string` to the value, after the white space read before it.
        private func join(_ string: String) {
            if !pending.isEmpty {
                dropsWhitespace = true
                value?.text += pending
                pending = ""
            }
            value?.text += string
            value?.length += string.utf8.count
            copied += value?.length ?? 0
        }

        /// Writes the value, trimmed, and starts none.
        private func writeValue() {
            pending = ""
            guard let value else { return }
            self.value = nil
            let text = XMLWhitespace.trimmed(value.text)
            if value.isCDATA {
                output += "<![CDATA[" + text.replacingOccurrences(of: "]]>", with: "]]]]><![CDATA[>") + "]]>"
            } else {
                output += Self.escaped(text, inAttribute: false)
            }
        }

        /// `text` as XML text or attribute value: markup escaped, and a carriage return (and in an attribute a line
        /// feed or a tab) as a character reference, which the parser reads as it is. Nothing else is a reference: the
        /// parser hands a text over in pieces split at each one.
        private static func escaped(_ text: String, inAttribute: Bool) -> String {
            var result = ""
            result.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
            for scalar in text.unicodeScalars {
                switch scalar {
                case "&": result += "&amp;"
                case "<": result += "&lt;"
                // `]]>` is no text; `>` alone is.
                case ">" where result.unicodeScalars.suffix(2).elementsEqual("]]".unicodeScalars): result += "&gt;"
                case "\r": result += "&#13;"
                case "\"" where inAttribute: result += "&quot;"
                case "\n" where inAttribute: result += "&#10;"
                case "\t" where inAttribute: result += "&#9;"
                default: result.unicodeScalars.append(scalar)
                }
            }
            return result
        }
    }
}
