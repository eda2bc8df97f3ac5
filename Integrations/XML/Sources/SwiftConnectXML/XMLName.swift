import Foundation

/// The names ``XMLBodyEncoder`` writes, checked: XMLCoder writes an element's or an attribute's name as its key is, so
/// a key with markup in it (`a>b`) gave a well-formed document of another shape (`<a>b>x</a>b>`: an element `a`, then
/// the text `b>`), which no check of the document after it is written can tell from one meant so.
enum XMLName {
    /// A coding key of any name: to list a keyed container's keys, or to write XMLCoder's key for an element's own
    /// text (``intrinsicText``).
    struct Key: CodingKey {
        /// XMLCoder's key for an element's own text: `""`.
        static let intrinsicText = Key(stringValue: "")

        let stringValue: String
        let intValue: Int? = nil

        init(stringValue: String) {
            self.stringValue = stringValue
        }

        init?(intValue: Int) {
            nil
        }
    }

    /// Whether `name` is a qualified name (Namespaces in XML 1.0 §4): an XML name (XML 1.0 §2.3) with at most one
    /// colon, between a prefix and a local name that are names themselves (`soap:Body`). A name with two colons, or one
    /// first or last, is a well-formed XML 1.0 name that no namespace-aware parser reads.
    static func isQualifiedName(_ name: String) -> Bool {
        let parts = name.unicodeScalars.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2 else { return false }
        return parts.allSatisfy { part in
            guard let first = part.first, isNameStart(first) else { return false }
            return part.dropFirst().allSatisfy(isNameCharacter)
        }
    }

    /// XML 1.0 (fifth edition) `NameStartChar`, the colon left out (it separates a prefix).
    private static func isNameStart(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x41...0x5A, 0x5F, 0x61...0x7A, 0xC0...0xD6, 0xD8...0xF6, 0xF8...0x2FF, 0x370...0x37D, 0x37F...0x1FFF,
            0x200C...0x200D, 0x2070...0x218F, 0x2C00...0x2FEF, 0x3001...0xD7FF, 0xF900...0xFDCF, 0xFDF0...0xFFFD,
            0x10000...0xEFFFF:
            return true
        default:
            return false
        }
    }

    /// XML 1.0 (fifth edition) `NameChar`, the colon left out.
    private static func isNameCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x2D, 0x2E, 0x30...0x39, 0xB7, 0x300...0x36F, 0x203F...0x2040: return true
        default: return isNameStart(scalar)
        }
    }

    /// Notes the first key, as XMLCoder's key strategy gives it, that is no name an element or an attribute can have.
    /// One per encoding, on the encoding thread.
    final class Check {
        /// The first key that is no qualified name, if any.
        private(set) var refused: String?
        /// The names found good so far: a key is met once for each value written under it.
        private var accepted: Set<String> = []

        /// Notes `key` if it is no name. The key `""` is XMLCoder's for an element's own text, and names nothing.
        func check(_ key: any CodingKey) {
            let name = key.stringValue
            guard refused == nil, !name.isEmpty, !accepted.contains(name) else { return }
            if XMLName.isQualifiedName(name) {
                accepted.insert(name)
            } else {
                refused = name
            }
        }
    }
}
