import Foundation

extension URL {
    /// Whether `other` is on the same origin: the same scheme and host (both ignoring case) and the same port, an
    /// absent port being the scheme's default. A host written with escapes is the name an engine is sent to
    /// (`EscapedHost`): `localhos%74` is `localhost`, `b%C3%BCcher.example` is `xn--bcher-kva.example`; an IP address
    /// in another form is that address (`ComparableHost`), while a trailing dot makes another origin. A URL
    /// without a scheme or host, or with escapes that make no host name, shares no origin, not even with itself, so
    /// a check that guards credentials fails closed.
    func hasSameOrigin(as other: URL) -> Bool {
        guard let scheme = scheme?.lowercased(), scheme == other.scheme?.lowercased(),
            let host = originHost, host == other.originHost
        else { return false }
        return effectivePort == other.effectivePort
    }

    /// The host as the core compares it (`ComparableHost`: lower-cased, escapes and Unicode as the name they stand
    /// for, an address in one form); `nil` without a host, or when the escapes make no host name.
    private var originHost: String? { ComparableHost.of(self) }

    /// The URL's text without its fragment (`#…`), which no engine sends (RFC 9110 §4.2.5): what names the resource
    /// a request asks for, as the cache and coalescing keys compare it. A `#` in a URL's text always starts its
    /// fragment (elsewhere it is escaped as `%23`).
    var absoluteStringWithoutFragment: String {
        let text = absoluteString
        guard let hash = text.utf8.firstIndex(of: UInt8(ascii: "#")) else { return text }
        return String(text[..<hash])
    }

    /// The port, or the default port of http and https when none is given.
    var effectivePort: Int? {
        if let port { return port }
        switch scheme?.lowercased() {
        case "http": return 80
        case "https": return 443
        default: return nil
        }
    }
}
