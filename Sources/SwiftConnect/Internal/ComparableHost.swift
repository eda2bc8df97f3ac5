import Foundation

/// A URL's host as the rules that guard a host compare it (certificate pins, cookies, the origin checks that keep
/// credentials, the cache's invalidation, the loopback check): one spelling for each host an engine is sent to,
/// however the URL writes it. Lower-cased; escapes read as the name they stand for, non-ASCII in its IDNA (punycode)
/// form (`EscapedHost`: `api.exampl%65.com` is `api.example.com`, `b%C3%BCcher.example` and `bücher.example` are
/// `xn--bcher-kva.example`); an IPv6 address without brackets, as `inet_ntop` writes it (`[0:0::1]` is `::1`); an
/// IPv4 address as `inet_aton` (and so the resolver) reads it, in dotted decimal (`127.1` and `0x7f.0.0.1` are
/// `127.0.0.1`). Each rule decides whether `example.com.`, the same name fully qualified (the engines connect to the
/// same server), is `example.com`: pins and the cache's invalidation drop the trailing dot, the origin checks that
/// keep credentials and cookies keep it (another origin, as browsers treat it: nothing is sent there that would not
/// be).
enum ComparableHost {
    /// The host of `url` as compared, without trailing dots when `droppingTrailingDot`; `nil` without a host, or
    /// when its escapes make no host name.
    static func of(_ url: URL, droppingTrailingDot: Bool = false) -> String? {
        // Most hosts are names in ASCII, as `URL` reads them (their escapes, if any, decoded to name bytes): no
        // second parse.
        if let host = url.host, !host.isEmpty, host.utf8.allSatisfy(nameBytes.contains) {
            return normalized(host, droppingTrailingDot: droppingTrailingDot)
        }
        let written = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedHost ?? url.host
        guard let written, !written.isEmpty else { return nil }
        return normalized(written, droppingTrailingDot: droppingTrailingDot)
    }

    /// `host`, a host as a URL writes it (with escapes or not, as Unicode text or punycode, an IPv6 address in
    /// brackets or not), as compared, without trailing dots when `droppingTrailingDot`; `nil` for an empty host,
    /// or one whose escapes make no host name.
    static func normalized(_ host: String, droppingTrailingDot: Bool = false) -> String? {
        var text = host
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        guard !text.isEmpty else { return nil }
        if text.contains(":") { return ipv6(text) }
        if text.utf8.contains(where: { $0 == UInt8(ascii: "%") || $0 >= 0x80 }) {
            guard case .success(let name) = EscapedHost.name(ofWritten: text) else { return nil }
            text = name
        }
        text = text.lowercased()
        // Every trailing dot: no resolver reaches another host through `example.com..`, so a pin fails closed.
        while droppingTrailingDot, text.count > 1, text.hasSuffix(".") { text.removeLast() }
        return ipv4(text) ?? text
    }

    /// An IPv6 address as `inet_ntop` writes it, its zone (`%25eth0`, `%eth0`) kept as written; lower-cased text
    /// when it is not an address.
    private static func ipv6(_ text: String) -> String {
        let lowered = text.lowercased()
        let zoneStart = lowered.firstIndex(of: "%") ?? lowered.endIndex
        var address = in6_addr()
        guard String(lowered[..<zoneStart]).withCString({ inet_pton(AF_INET6, $0, &address) }) == 1 else {
            return lowered
        }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return lowered }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            + lowered[zoneStart...]
    }

    /// An IPv4 address in any form `inet_aton` reads (`127.1`, `0x7f.0.0.1`, `2130706433`: the resolver connects to
    /// them as addresses), in dotted decimal; `nil` for a name.
    private static func ipv4(_ text: String) -> String? {
        guard let first = text.utf8.first, (0x30...0x39).contains(first),
            text.utf8.allSatisfy({ ipv4Bytes.contains($0) })
        else { return nil }
        var address = in_addr()
        guard text.withCString({ inet_aton($0, &address) }) != 0 else { return nil }
        let value = UInt32(bigEndian: address.s_addr)
        return [24, 16, 8, 0].map { String((value >> UInt32($0)) & 0xFF) }.joined(separator: ".")
    }

    /// Letters, digits, `-`, `.` and `_`: a host name in ASCII.
    private static let nameBytes = ASCIIByteSet(ASCIIByteSet.alphanumerics + "-._")

    /// Digits, dots, `x` and hex letters: the ASCII of an IPv4 address as `inet_aton` reads one.
    private static let ipv4Bytes = ASCIIByteSet("0123456789abcdefx.")
}
