import Foundation

extension URL {
    /// Whether `other` is on the same origin: the same scheme and host (both ignoring case) and the same port, an
    /// absent port being the scheme's default. A URL without a scheme or host shares no origin, not even with
    /// itself, so a check that guards credentials fails closed.
    func hasSameOrigin(as other: URL) -> Bool {
        guard let scheme = scheme?.lowercased(), scheme == other.scheme?.lowercased(),
            let host = host?.lowercased(), host == other.host?.lowercased()
        else { return false }
        return effectivePort == other.effectivePort
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
