import Foundation

/// A URL's host written with `%XX` escapes (`localhos%74`, `b%C3%BCcher.example`), read as the host name it stands
/// for: ASCII as it is, non-ASCII in its IDNA (punycode) form as Foundation makes it for a ``ServerConfiguration``'s
/// host. URLSession decodes such a host itself, while engines driven by the core are handed the authority as written
/// (`Host: localhos%74`): one rule for every URL the core builds (a connector's base URL), sends (a request of the
/// caller's, a middleware's rewrite, a redirect's `Location`) or compares (the origin checks that guard
/// credentials). Escapes that make no host name (a `/`, `@`, `:`, space or control, bytes that are not UTF-8), which
/// decoded would send the request elsewhere, are a `Problem`. A bracketed IPv6 address (its zone's `%25`) is left
/// alone.
enum EscapedHost {
    /// Why a host written with escapes stands for no host name the core can send.
    struct Problem: Error {
        let text: String
    }

    /// `url` (an absolute URL's text) with its host, written with escapes, written as the name it stands for; `nil`
    /// when the host has no escape, or a failure when the escapes make no host name.
    static func plainURL(_ url: String) -> Result<String, Problem>? {
        // Most URLs have no escape at all: they are not copied.
        guard url.utf8.contains(UInt8(ascii: "%")) else { return nil }
        let bytes = Array(url.utf8)
        guard let host = escapedHost(in: bytes) else { return nil }
        switch name(bytes[host]) {
        case .success(let plain):
            var rebuilt = bytes[..<host.lowerBound]
            rebuilt.append(contentsOf: plain.utf8)
            rebuilt.append(contentsOf: bytes[host.upperBound...])
            return .success(String(decoding: rebuilt, as: UTF8.self))
        case .failure(let problem):
            return .failure(problem)
        }
    }

    /// The name the host of `url`, written with escapes, stands for (as `plainURL(_:)` writes it); `nil` when the
    /// host has no escape.
    static func plainName(of url: URL) -> Result<String, Problem>? {
        let text = url.absoluteString
        guard text.utf8.contains(UInt8(ascii: "%")) else { return nil }
        let bytes = Array(text.utf8)
        return escapedHost(in: bytes).map { name(bytes[$0]) }
    }

    /// The name `host` stands for, a host as a URL writes it (with escapes, or decoded to non-ASCII text), as
    /// `plainURL(_:)` writes it; or why it stands for none.
    static func name(ofWritten host: String) -> Result<String, Problem> {
        name(Array(host.utf8)[...])
    }

    /// Where the host of `bytes` (an absolute URL's text, `scheme://[userinfo@]host[:port]…`) lies, when it is a name
    /// with at least one escape in it; `nil` for any other URL, a bracketed address included.
    private static func escapedHost(in bytes: [UInt8]) -> Range<Int>? {
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
            bytes[(colon + 1)...].starts(with: "//".utf8)
        else { return nil }
        let authorityStart = colon + 3
        let authorityEnd =
            bytes[authorityStart...].firstIndex {
                $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
            } ?? bytes.endIndex
        let hostStart = (bytes[authorityStart..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) ?? colon + 2) + 1
        guard hostStart < authorityEnd, bytes[hostStart] != UInt8(ascii: "[") else { return nil }
        let hostEnd = bytes[hostStart..<authorityEnd].firstIndex(of: UInt8(ascii: ":")) ?? authorityEnd
        guard bytes[hostStart..<hostEnd].contains(UInt8(ascii: "%")) else { return nil }
        return hostStart..<hostEnd
    }

    /// The host name `escaped` (a host as a URL writes it) stands for, or why it stands for none.
    private static func name(_ escaped: ArraySlice<UInt8>) -> Result<String, Problem> {
        let shown = Redaction.urlText(String(decoding: escaped, as: UTF8.self))
        guard let decoded = String(decoding: escaped, as: UTF8.self).removingPercentEncoding else {
            return .failure(Problem(text: "the host '\(shown)' holds escapes that are not UTF-8 text"))
        }
        /// Letters, digits, `-`, `.` and `_`: the ASCII of a host name.
        func isNameByte(_ byte: UInt8) -> Bool { hostNameBytes.contains(byte) }
        let noName = Problem(
            text: "the host '\(shown)' holds escapes that make no host name (only letters, digits, '-', '.' and '_')")
        var plain = decoded
        if decoded.utf8.contains(where: { $0 >= 0x80 }) {
            guard !decoded.unicodeScalars.contains(where: { $0.isASCII && !isNameByte(UInt8($0.value)) })
            else { return .failure(noName) }
            // IDNA through Foundation, which writes a non-ASCII host as punycode where it can.
            var components = URLComponents()
            components.scheme = "http"
            components.host = decoded
            guard let text = components.url?.absoluteString, text.hasPrefix("http://") else { return .failure(noName) }
            plain = String(text.dropFirst("http://".count))
            guard !plain.isEmpty, plain.utf8.allSatisfy(isNameByte) else {
                return .failure(
                    Problem(
                        text: "the host '\(shown)' is not ASCII and cannot be written as punycode here: write it in "
                            + "its xn-- form"))
            }
        }
        guard !plain.isEmpty, plain.utf8.allSatisfy(isNameByte) else { return .failure(noName) }
        return .success(plain)
    }

    private static let hostNameBytes = ASCIIByteSet(ASCIIByteSet.alphanumerics + "-._")
}
