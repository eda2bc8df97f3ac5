import Foundation

/// Finds the secrets of an XML body by name, as `Redaction` finds those of JSON by key: the content of each element
/// whose name is sensitive (`<password>…</password>`, `<api:accessToken>…</api:accessToken>`, everything inside it),
/// and the value of each attribute whose name is sensitive (`<login password="…"/>`). A name is judged without its
/// namespace prefix, by `Redaction/isSensitiveField(_:)`.
///
/// The text is scanned, not parsed, so that a body cut short or not quite XML is still read: an element whose end tag
/// never comes is hidden to the end of the text. Comments, CDATA sections, processing instructions and a DOCTYPE are
/// skipped over as units (a sensitive element's content hides them with the rest).
///
/// `package`, for the test kit's recordings, which hide the same secrets of an XML answer.
package enum XMLRedaction {
    /// Whether a body of media type `type` (lowercased, without parameters) is XML to redact: a type that says so
    /// (`application/xml`, `text/xml`, any `+xml`), or one that is neither JSON nor a form and whose text starts,
    /// after a byte order mark and white space, with `<`.
    package static func isXML(type: String, text: String) -> Bool {
        if type.contains("xml") { return true }
        if type.contains("json") || type.hasPrefix("application/x-www-form-urlencoded")
            || type.hasPrefix("multipart/")
        {
            return false
        }
        return text.unicodeScalars.first { $0 != "\u{FEFF}" && !isSpace($0) } == "<"
    }

    /// `text` with each secret (`secretRanges(in:)`) replaced by `Redaction/placeholder`.
    static func redacted(_ text: String) -> String {
        let bytes = Array(text.utf8)
        let ranges = secretRanges(in: bytes)
        guard !ranges.isEmpty else { return text }
        var shown: [UInt8] = []
        shown.reserveCapacity(bytes.count)
        var position = 0
        for range in ranges {
            shown += bytes[position..<range.lowerBound]
            shown += Array(Redaction.placeholder.utf8)
            position = range.upperBound
        }
        shown += bytes[position...]
        // Every cut is next to `<`, `>` or a quote, so never inside a character.
        return String(decoding: shown, as: UTF8.self)
    }

    /// The secret values of `text`, to hide by value wherever they show again: every text and CDATA section inside
    /// an element whose name is sensitive, and every attribute value in one or named like a secret, each as written
    /// and with XML's character references decoded.
    package static func secretValues(in text: String) -> [String] {
        let bytes = Array(text.utf8)
        var found: [String] = []
        func add(_ slice: ArraySlice<UInt8>) {
            let written = String(decoding: slice, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !written.isEmpty else { return }
            found.append(written)
            let decoded = decodingReferences(written)
            if decoded != written { found.append(decoded) }
        }
        for range in secretRanges(in: bytes) {
            // The pieces of text between the markup inside the range, and the values of its attributes.
            var scanner = Scanner(bytes: bytes, end: range.upperBound)
            scanner.index = range.lowerBound
            var textStart = range.lowerBound
            while let token = scanner.next() {
                add(bytes[textStart..<token.start])
                textStart = token.end
                switch token.kind {
                case .cdata:
                    // `<![CDATA[` is 9 bytes; `]]>` is missing from a section cut short.
                    let closed = bytes[token.start..<token.end].suffix(3).elementsEqual("]]>".utf8)
                    add(bytes[(token.start + 9)..<max(token.start + 9, token.end - (closed ? 3 : 0))])
                case .start(_, _, let attributes):
                    for attribute in attributes { add(bytes[attribute.value]) }
                default: break
                }
            }
            add(bytes[textStart..<range.upperBound])
        }
        return found
    }

    /// The byte ranges of `bytes` that hold secrets, in order and not overlapping: the content of each element whose
    /// name is sensitive (to the end when it is not closed), and the value of each sensitive attribute outside such
    /// an element.
    static func secretRanges(in bytes: [UInt8]) -> [Range<Int>] {
        namedSecretRanges(in: bytes).map(\.range)
    }

    /// `secretRanges(in:)`, each with the name that makes it secret: the element's or the attribute's, without
    /// its namespace prefix, or for the value of a name/value pair the name the pair gives.
    ///
    /// A name/value pair is read as in JSON (``Redaction/isNamedSecretValue(_:in:)``): the content of an element
    /// named `Value` whose sibling `Name` or `Key` element holds a secret's name (`<Key>api_key</Key><Value>…</Value>`,
    /// as AWS tags and SOAP parameter lists write one), in either order, and the `value` attribute of a start tag whose
    /// `name` or `key` attribute names one (`<add key="ApiKey" value="…"/>`, `<param name="token" value="…"/>`). Names
    /// are judged by ``Redaction/isSensitiveQueryItem(_:)``, element and attribute names ignoring ASCII case.
    package static func namedSecretRanges(in bytes: [UInt8]) -> [(name: String, range: Range<Int>)] {
        var ranges: [(name: String, range: Range<Int>)] = []
        var scanner = Scanner(bytes: bytes, end: bytes.count)
        var depth = 0
        // The start of the content of the sensitive element being read, and the depth it opened at.
        var hidden: (name: String, contentStart: Int, depth: Int)?
        // Per open element, by depth: the secret's name a `Name` or `Key` child gave, and the contents of its `Value`
        // children not yet hidden (a `Value` may come before its `Key`).
        var pairs: [Int: (secretName: String?, values: [Range<Int>])] = [:]
        // The `Name`, `Key` or `Value` child being read, with where its content starts and the depth it opened at.
        var pairMember: (isValue: Bool, contentStart: Int, depth: Int)?
        while let token = scanner.next() {
            switch token.kind {
            case .start(let name, let selfClosing, let attributes):
                guard hidden == nil else {
                    if !selfClosing { depth += 1 }
                    continue
                }
                let pairName = attributes.lazy.compactMap { attribute -> String? in
                    let attributeName = localName(bytes[attribute.name])
                    guard Self.isPairName(attributeName) else { return nil }
                    let value = String(decoding: bytes[attribute.value], as: UTF8.self)
                    return Redaction.isSensitiveQueryItem(value) ? value : nil
                }.first
                for attribute in attributes {
                    let attributeName = localName(bytes[attribute.name])
                    if Redaction.isSensitiveField(attributeName) {
                        ranges.append((attributeName, attribute.value))
                    } else if let pairName, HTTPHeader.asciiCaseInsensitiveEquals(attributeName, "value") {
                        ranges.append((pairName, attribute.value))
                    }
                }
                if selfClosing { continue }
                depth += 1
                pairs[depth] = nil
                let elementName = localName(bytes[name])
                if Redaction.isSensitiveField(elementName) {
                    hidden = (elementName, token.end, depth)
                } else if Self.isPairName(elementName) || HTTPHeader.asciiCaseInsensitiveEquals(elementName, "value") {
                    pairMember = (HTTPHeader.asciiCaseInsensitiveEquals(elementName, "value"), token.end, depth)
                }
            case .end:
                if let open = hidden, depth == open.depth {
                    ranges.append((open.name, open.contentStart..<token.start))
                    hidden = nil
                } else if hidden == nil, let member = pairMember, depth == member.depth {
                    pairMember = nil
                    let content = member.contentStart..<token.start
                    var pair = pairs[depth - 1] ?? (nil, [])
                    if member.isValue {
                        if let secretName = pair.secretName {
                            ranges.append((secretName, content))
                        } else {
                            pair.values.append(content)
                        }
                    } else {
                        let name = String(decoding: bytes[content], as: UTF8.self)
                            .trimmingCharacters(in: .whitespacesAndNewlines)
                        if Redaction.isSensitiveQueryItem(name) {
                            pair.secretName = name
                            ranges += pair.values.map { (name, $0) }
                            pair.values = []
                        }
                    }
                    pairs[depth - 1] = pair
                }
                depth = max(0, depth - 1)
            case .cdata, .other:
                continue
            }
        }
        if let open = hidden { ranges.append((open.name, open.contentStart..<bytes.count)) }
        // In order, and none inside another (a sensitive element inside a `Value` hidden after it).
        var ordered: [(name: String, range: Range<Int>)] = []
        for entry in ranges.filter({ !$0.range.isEmpty }).sorted(by: { $0.range.lowerBound < $1.range.lowerBound }) {
            if let last = ordered.last, entry.range.lowerBound < last.range.upperBound {
                if entry.range.upperBound > last.range.upperBound {
                    ordered[ordered.count - 1].range = last.range.lowerBound..<entry.range.upperBound
                }
                continue
            }
            ordered.append(entry)
        }
        return ordered
    }

    /// Whether an element or attribute name is the name of a name/value pair: `name` or `key`, ignoring ASCII case.
    private static func isPairName(_ name: String) -> Bool {
        HTTPHeader.asciiCaseInsensitiveEquals(name, "name") || HTTPHeader.asciiCaseInsensitiveEquals(name, "key")
    }

    /// A name without its namespace prefix (`api:token` gives `token`).
    private static func localName(_ name: ArraySlice<UInt8>) -> String {
        let local = name.lastIndex(of: UInt8(ascii: ":")).map { name[($0 + 1)...] } ?? name
        return String(decoding: local, as: UTF8.self)
    }

    /// `text` with XML's five predefined entities and its numeric character references decoded; anything else as is.
    private static func decodingReferences(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var result = ""
        var rest = text[...]
        while let ampersand = rest.firstIndex(of: "&") {
            result += rest[..<ampersand]
            let afterAmpersand = rest.index(after: ampersand)
            guard let semicolon = rest[afterAmpersand...].prefix(12).firstIndex(of: ";") else {
                result += "&"
                rest = rest[afterAmpersand...]
                continue
            }
            let name = rest[afterAmpersand..<semicolon]
            if let character = character(forReference: name) {
                result.append(character)
                rest = rest[rest.index(after: semicolon)...]
            } else {
                result += "&"
                rest = rest[afterAmpersand...]
            }
        }
        return result + rest
    }

    /// The character `&name;` stands for, if it is a predefined entity or a numeric reference.
    private static func character(forReference name: Substring) -> Character? {
        switch name {
        case "amp": return "&"
        case "lt": return "<"
        case "gt": return ">"
        case "quot": return "\""
        case "apos": return "'"
        default:
            guard name.hasPrefix("#") else { return nil }
            let digits = name.dropFirst()
            let value =
                digits.first == "x" || digits.first == "X" ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits)
            return value.flatMap(Unicode.Scalar.init).map(Character.init)
        }
    }

    private static func isSpace(_ scalar: Unicode.Scalar) -> Bool {
        scalar == " " || scalar == "\t" || scalar == "\r" || scalar == "\n"
    }

    /// The markup of XML text, token by token; the text between tokens is content.
    struct Scanner {
        /// A piece of markup, from `start` up to `end` (after its `>`, or the end of the text).
        struct Token {
            enum Kind {
                /// A start tag (or an empty-element tag), with its name and its attributes' names and values.
                case start(name: Range<Int>, selfClosing: Bool, attributes: [(name: Range<Int>, value: Range<Int>)])
                /// An end tag.
                case end
                /// A CDATA section, `<![CDATA[` to `]]>`.
                case cdata
                /// A comment, a processing instruction, a DOCTYPE or a lone `<`.
                case other
            }

            var kind: Kind
            var start: Int
            var end: Int
        }

        let bytes: [UInt8]
        /// Where the scan stops.
        let end: Int
        var index = 0

        init(bytes: [UInt8], end: Int) {
            self.bytes = bytes
            self.end = end
        }

        /// The next piece of markup, or `nil` at the end.
        mutating func next() -> Token? {
            while index < end, bytes[index] != UInt8(ascii: "<") { index += 1 }
            guard index < end else { return nil }
            let start = index
            if starts(with: "<!--") {
                return Token(kind: .other, start: start, end: skip(past: "-->", from: start + 4))
            }
            if starts(with: "<![CDATA[") {
                return Token(kind: .cdata, start: start, end: skip(past: "]]>", from: start + 9))
            }
            if starts(with: "<?") {
                return Token(kind: .other, start: start, end: skip(past: "?>", from: start + 2))
            }
            if starts(with: "<!") { return Token(kind: .other, start: start, end: skipDeclaration(from: start + 2)) }
            if starts(with: "</") {
                return Token(kind: .end, start: start, end: skip(past: ">", from: start + 2))
            }
            index = start + 1
            let nameStart = index
            while index < end, !isNameEnd(bytes[index]) { index += 1 }
            guard index > nameStart else { return Token(kind: .other, start: start, end: index) }
            let name = nameStart..<index
            var attributes: [(name: Range<Int>, value: Range<Int>)] = []
            while index < end {
                skipSpaces()
                guard index < end else { break }
                let byte = bytes[index]
                if byte == UInt8(ascii: ">") {
                    index += 1
                    return Token(
                        kind: .start(name: name, selfClosing: false, attributes: attributes), start: start, end: index)
                }
                if byte == UInt8(ascii: "/"), index + 1 < end, bytes[index + 1] == UInt8(ascii: ">") {
                    index += 2
                    return Token(
                        kind: .start(name: name, selfClosing: true, attributes: attributes), start: start, end: index)
                }
                let attributeStart = index
                while index < end, !isNameEnd(bytes[index]), bytes[index] != UInt8(ascii: "=") { index += 1 }
                guard index > attributeStart else {
                    // A stray character (`/` alone, a quote): passed over.
                    index += 1
                    continue
                }
                let attributeName = attributeStart..<index
                skipSpaces()
                guard index < end, bytes[index] == UInt8(ascii: "=") else { continue }
                index += 1
                skipSpaces()
                guard index < end else { break }
                let quote = bytes[index]
                if quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") {
                    let valueStart = index + 1
                    index = valueStart
                    while index < end, bytes[index] != quote { index += 1 }
                    attributes.append((attributeName, valueStart..<index))
                    if index < end { index += 1 }
                } else {
                    // An unquoted value, as HTML writes one: to the next space or `>`.
                    let valueStart = index
                    while index < end, !Scanner.isSpace(bytes[index]), bytes[index] != UInt8(ascii: ">") { index += 1 }
                    attributes.append((attributeName, valueStart..<index))
                }
            }
            // A start tag cut short: what it has is still looked at.
            return Token(kind: .start(name: name, selfClosing: true, attributes: attributes), start: start, end: index)
        }

        private func starts(with prefix: StaticString) -> Bool {
            let count = prefix.utf8CodeUnitCount
            guard index + count <= end else { return false }
            return prefix.withUTF8Buffer { prefix in
                (0..<count).allSatisfy { bytes[index + $0] == prefix[$0] }
            }
        }

        /// The index after the first `terminator` from `from`, or the end; the scan goes on from there.
        private mutating func skip(past terminator: StaticString, from: Int) -> Int {
            index = from
            while index < end {
                if starts(with: terminator) {
                    index += terminator.utf8CodeUnitCount
                    return index
                }
                index += 1
            }
            return index
        }

        /// The index after a declaration's `>` (a DOCTYPE, with an internal subset in brackets and quoted literals).
        /// A comment or processing instruction of the internal subset is passed over whole: a quote in it (`it's`)
        /// starts no literal.
        private mutating func skipDeclaration(from: Int) -> Int {
            index = from
            var brackets = 0
            var quote: UInt8?
            while index < end {
                if quote == nil, brackets > 0 {
                    if starts(with: "<!--") {
                        _ = skip(past: "-->", from: index + 4)
                        continue
                    }
                    if starts(with: "<?") {
                        _ = skip(past: "?>", from: index + 2)
                        continue
                    }
                }
                let byte = bytes[index]
                index += 1
                if let open = quote {
                    if byte == open { quote = nil }
                } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                    quote = byte
                } else if byte == UInt8(ascii: "[") {
                    brackets += 1
                } else if byte == UInt8(ascii: "]") {
                    brackets = max(0, brackets - 1)
                } else if byte == UInt8(ascii: ">"), brackets == 0 {
                    return index
                }
            }
            return index
        }

        private mutating func skipSpaces() {
            while index < end, Scanner.isSpace(bytes[index]) { index += 1 }
        }

        /// Whether `byte` ends a name: white space, `>`, `/`, `=` or `<`.
        private func isNameEnd(_ byte: UInt8) -> Bool {
            Scanner.isSpace(byte) || byte == UInt8(ascii: ">") || byte == UInt8(ascii: "/")
                || byte == UInt8(ascii: "=") || byte == UInt8(ascii: "<")
        }

        private static func isSpace(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A
        }
    }
}
