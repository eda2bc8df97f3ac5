import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Certificate pinning, the same on every engine: the public keys a host's certificate chain must contain, as
/// SHA-256 hashes of their SubjectPublicKeyInfo, base64-encoded (the `pin-sha256` of RFC 7469, as TrustKit writes
/// them; OkHttp's form, with `sha256/` before the hash, is the same pin).
///
/// ```swift
/// let pins = try CertificatePins([
///     "api.example.com": ["r/mIkG3eEpVdm+u/ko/cwxzOMo1bk4TyHIlByibiA5E=", "backupPinForTheNextKeyxxxxxxxxxxxxxxxxxxxxxx="],
///     "*.cdn.example.com": ["YLh1dUR9y6Kja30RrAn7JKnbQG/uEtLMkBgFF2Fuihg="],
/// ])
/// ```
///
/// A host matches its exact name, else the most specific `*.` pattern it is a subdomain of (at any depth:
/// `*.example.com` covers `a.example.com` and `a.b.example.com`, not `example.com` itself; never an IP address, so a
/// pattern whose last label is a number is refused). Several pins per host allow a key rotation: a chain passes when
/// any certificate in it has any of the host's pins. A host without pins is not pinned.
///
/// Engines check pins during the TLS handshake, in the chain they validated (``accepts(host:chain:)``):
/// ``URLSessionTransport`` on Apple platforms and `AsyncHTTPClientTransport` on Linux. A server whose chain has none
/// of its host's pins fails with ``ConnectError/Kind/certificatePinning`` naming the host, before the request is
/// sent. Before that, every engine asks `refusal(of:by:checksHandshake:)` about each request and redirect hop: a
/// pinned host that cannot be checked is refused instead of sent unpinned (``URLSessionTransport`` on Linux,
/// `AsyncHTTPClientTransport` on Apple platforms, and plain `http` everywhere; see SECURITY.md for each engine).
public struct CertificatePins: Sendable, Equatable {
    /// The pins of each host pattern, lowercased.
    private var pinsByPattern: [String: Set<Data>] = [:]

    /// No host pinned.
    public init() {}

    /// Pins each host pattern (an exact name, or `*.` and a domain) to the base64 SHA-256 hashes given.
    ///
    /// - Parameter pins: Host pattern → base64-encoded SHA-256 hashes of SubjectPublicKeyInfo, each alone or after
    ///   `sha256/` (as OkHttp writes them).
    /// - Throws: ``ConnectError/Kind/certificatePinning`` for a hash that is not 32 bytes of base64, an empty
    ///   list, or a malformed pattern.
    public init(_ pins: [String: [String]]) throws {
        for (pattern, hashes) in pins { try pin(pattern, sha256Base64: hashes) }
    }

    /// Adds `hashes` to the pins of `pattern`.
    ///
    /// - Parameters:
    ///   - pattern: A host name, or `*.` followed by a domain.
    ///   - hashes: Base64-encoded SHA-256 hashes of SubjectPublicKeyInfo, each alone or after `sha256/`.
    mutating func pin(_ pattern: String, sha256Base64 hashes: [String]) throws {
        var key = pattern.lowercased()
        let isWildcard = key.hasPrefix("*.")
        var name = isWildcard ? String(key.dropFirst(2)) : key
        guard !name.isEmpty, !name.contains("*"), !name.hasPrefix("."), !name.hasSuffix("."), !hashes.isEmpty else {
            throw Self.invalid("'\(pattern)' with \(hashes.count) pins is not a host pattern with pins")
        }
        // A pattern that can never equal a URL's host (a scheme, a port, a path, blanks) would leave the host
        // unpinned without a word: refused. An IPv6 address is kept without its brackets, as hosts are looked up.
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name.contains(":") {
            guard !isWildcard, Self.isIPv6Address(name) else {
                throw Self.invalid(
                    "'\(pattern)' is not a host name: pin the host alone (such as api.example.com), without a scheme, "
                        + "a port or a path")
            }
        } else {
            guard Self.isHostName(name) else {
                throw Self.invalid(
                    "'\(pattern)' is not a host name: pin the host alone (such as api.example.com), without a scheme, "
                        + "a port, a path or blanks, a name in another script in its ASCII form (xn--…)")
            }
            // No domain name ends in a number (RFC 3696 §2): such a wildcard could only match IPv4 addresses, which a
            // wildcard never covers (RFC 6125 §6.4.3), and would pin them unasked.
            if isWildcard, name.split(separator: ".").last?.utf8.allSatisfy({ (0x30...0x39).contains($0) }) == true {
                throw Self.invalid(
                    "'\(pattern)' would match IP addresses only: a wildcard covers host names, so pin each IP address "
                        + "by writing it out")
            }
        }
        // An address written in another form (`127.1`, `[0:0::1]`, `::ffff:127.0.0.1`) is kept as every URL's host
        // is looked up.
        if !isWildcard { key = Self.addressPinned(ComparableHost.normalized(key) ?? key) }
        var decoded = Set<Data>()
        for hash in hashes {
            guard let bytes = Data(base64Encoded: Self.withoutAlgorithmPrefix(hash)),
                bytes.count == SHA256Hasher.digestByteCount
            else {
                throw Self.invalid("'\(hash)' (for \(pattern)) is not a base64 SHA-256 hash")
            }
            decoded.insert(bytes)
        }
        pinsByPattern[key, default: []].formUnion(decoded)
    }

    /// `hash` without OkHttp's `sha256/` before it (in any case), which names the algorithm every pin here uses: the
    /// pin an Android app's `CertificatePinner` is configured with is the same pin. Any other text is left as it is
    /// (a `sha1/` pin then fails as not a SHA-256 hash).
    static func withoutAlgorithmPrefix(_ hash: String) -> String {
        let prefix = "sha256/"
        guard hash.utf8.count > prefix.utf8.count, hash.prefix(prefix.count).lowercased() == prefix else {
            return hash
        }
        return String(hash.dropFirst(prefix.count))
    }

    /// Whether no host is pinned.
    public var isEmpty: Bool { pinsByPattern.isEmpty }

    /// Whether `name` is a host name in ASCII (an IPv4 address is one): dot-separated labels of 1 to 63 letters,
    /// digits, `-` (not first or last) and `_` (seen in real names, though not in RFC 1123's).
    static func isHostName(_ name: String) -> Bool {
        guard name.utf8.count <= 253 else { return false }
        return name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            guard (1...63).contains(label.utf8.count), label.first != "-", label.last != "-" else { return false }
            return label.utf8.allSatisfy { byte in
                (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x5F
            }
        }
    }

    /// The address whose pins apply to `name`, a host as `ComparableHost` writes it: an IPv6 address without its zone
    /// (`fe80::1%eth0` is `fe80::1` on one link), an IPv4-mapped IPv6 address as its IPv4 address (the system reaches
    /// `::ffff:127.0.0.1` over IPv4, at 127.0.0.1); any other name as it is.
    static func addressPinned(_ name: String) -> String {
        guard name.contains(":") else { return name }
        let address = String(name.prefix { $0 != "%" })
        var bytes = in6_addr()
        guard address.withCString({ inet_pton(AF_INET6, $0, &bytes) }) == 1 else { return name }
        let octets = withUnsafeBytes(of: &bytes) { Array($0) }
        guard octets[..<10].allSatisfy({ $0 == 0 }), octets[10] == 0xFF, octets[11] == 0xFF else { return address }
        return octets[12...].map { String($0) }.joined(separator: ".")
    }

    /// Whether `text` is an IPv6 address, as `inet_pton` reads one.
    static func isIPv6Address(_ text: String) -> Bool {
        var address = in6_addr()
        return text.withCString { inet_pton(AF_INET6, $0, &address) } == 1
    }

    /// The pins that apply to `host`: its exact name's, else the most specific matching `*.` pattern's; `nil`
    /// when the host is not pinned.
    ///
    /// The host is read as the engine is sent to it, however it is written: in any case, with a trailing dot, with
    /// `%XX` escapes, in Unicode for its `xn--` form, an IP address in any of its forms (`[0:0::1]` for `::1`,
    /// `127.1` and `[::ffff:127.0.0.1]` for `127.0.0.1`, `[fe80::1%25eth0]` for `fe80::1`).
    ///
    /// - Parameter host: A host name, as in a URL.
    /// - Returns: The SHA-256 hashes, or `nil`.
    public func pins(for host: String) -> Set<Data>? {
        let name = Self.comparableHost(host)
        if let exact = pinsByPattern[name] { return exact }
        var rest = Substring(name)
        while let dot = rest.firstIndex(of: ".") {
            rest = rest[rest.index(after: dot)...]
            if let wildcard = pinsByPattern["*." + rest] { return wildcard }
        }
        return nil
    }

    /// `host` as ``pins(for:)`` reads it: lower-cased, without brackets or trailing dots, an address in one form (as
    /// every pattern is kept). One name per host however a URL writes it (`LOCALHOST`, `127.1`, `example.com.`), for
    /// an engine that keeps something per pinned host (`AsyncHTTPClientTransport`'s relays).
    @_spi(Engine) public static func comparableHost(_ host: String) -> String {
        addressPinned(ComparableHost.normalized(host, droppingTrailingDot: true) ?? host.lowercased())
    }

    /// Whether a server of `host` presenting `chain` passes: `host` is not pinned, or a certificate of `chain`
    /// (DER, leaf first) has a public key pinned for it. A certificate that cannot be read matches no pin.
    ///
    /// - Parameters:
    ///   - host: The host the request goes to.
    ///   - chain: The certificates the server presented, DER-encoded.
    /// - Returns: Whether the request may go on.
    public func accepts(host: String, chain: [Data]) -> Bool {
        // A host that cannot be read as a name could be any pinned host: with pins set, it fails closed.
        guard let pins = pins(for: host) else { return isEmpty || ComparableHost.normalized(host) != nil }
        return chain.contains { certificate in
            guard let hash = try? Self.spkiSHA256(ofCertificate: certificate) else { return false }
            return pins.contains(hash)
        }
    }

    /// The SHA-256 hash of a certificate's SubjectPublicKeyInfo: what a pin is.
    ///
    /// - Parameter certificate: The certificate, DER-encoded (X.509, RFC 5280).
    /// - Returns: The 32 bytes of the hash.
    /// - Throws: ``ConnectError/Kind/certificatePinning`` when the bytes are not a certificate.
    public static func spkiSHA256(ofCertificate certificate: Data) throws -> Data {
        Data(SHA256Hasher.hash(try subjectPublicKeyInfo(ofCertificate: [UInt8](certificate))))
    }

    /// The DER bytes of the SubjectPublicKeyInfo of a DER certificate: Certificate → TBSCertificate → [0] version
    /// (optional), serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo.
    static func subjectPublicKeyInfo(ofCertificate der: [UInt8]) throws -> ArraySlice<UInt8> {
        var reader = DERReader(der[...])
        var certificate = DERReader(try reader.read(tag: 0x30).content)
        var tbs = DERReader(try certificate.read(tag: 0x30).content)
        if tbs.peekTag == 0xA0 { _ = try tbs.read(tag: 0xA0) }
        _ = try tbs.read(tag: 0x02)  // serialNumber
        for _ in 0..<4 { _ = try tbs.read(tag: 0x30) }  // signature, issuer, validity, subject
        return try tbs.read(tag: 0x30).whole
    }

    private static func invalid(_ message: String) -> ConnectError {
        ConnectError(.certificatePinning, message: "invalid certificate pins: " + message)
    }

    /// Why a transport must refuse `request` before sending anything, or `nil` when it may go: the one rule every
    /// engine applies (both of SwiftConnect's, and a transport of your own), to each request and each redirect hop.
    ///
    /// A request to a host without pins may always go. One to a pinned host is refused when the transport cannot
    /// check certificates during the handshake (`checksHandshake: false`), or when it goes over plain `http`,
    /// where there is no certificate to check: refused, rather than sent unpinned.
    ///
    /// ```swift
    /// if let refusal = pins.refusal(of: request, by: "MyTransport", checksHandshake: true) {
    ///     return Future(error: refusal)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - request: The request about to be sent, or the next hop of a redirect.
    ///   - engine: The transport, for the message.
    ///   - checksHandshake: Whether the transport checks the pins of `https` hosts during the handshake. A
    ///     transport that cannot refuses every pinned host.
    /// - Returns: An error of kind ``ConnectError/Kind/certificatePinning`` naming the host, or `nil`.
    public func refusal(of request: URLRequest, by engine: String, checksHandshake: Bool = false) -> ConnectError? {
        guard let url = request.url, var refusal = refusal(of: url, by: engine, checksHandshake: checksHandshake)
        else { return nil }
        refusal.request = request
        return refusal
    }

    /// Why a hop to `url` must not be sent, or `nil`: the same rule as for a `URLRequest`, for an engine of the core's
    /// exchange (`HTTPEngine`) or a transport that works with the core's ``ConnectRequest``, which have a URL.
    ///
    /// - Parameters:
    ///   - url: The URL of the hop about to be sent.
    ///   - engine: The engine, for the message.
    ///   - checksHandshake: Whether the engine checks the pins of `https` hosts during the handshake.
    /// - Returns: An error of kind ``ConnectError/Kind/certificatePinning`` naming the host, or `nil`.
    public func refusal(of url: URL, by engine: String, checksHandshake: Bool = false) -> ConnectError? {
        guard !isEmpty, let written = url.host, !written.isEmpty else { return nil }
        // The host the engine is sent to, however the URL writes it (escapes, Unicode, another form of an address).
        guard let host = ComparableHost.of(url, droppingTrailingDot: true) else {
            return ConnectError(
                .certificatePinning,
                message: "the host of '\(Redaction.urlText(url.absoluteString))' is not a host name that pins can be "
                    + "looked up for: the request is refused rather than sent unpinned")
        }
        guard pins(for: host) != nil else { return nil }
        guard checksHandshake else {
            return ConnectError(
                .certificatePinning,
                message: "\(host) is pinned, and \(engine) cannot check a server's certificates during the "
                    + "handshake: the request is refused rather than sent unpinned"
            )
        }
        guard url.scheme?.lowercased() == "https" else {
            return ConnectError(
                .certificatePinning,
                message: "\(host) is pinned, and plain http has no certificate to check: the request is refused "
                    + "rather than sent unpinned")
        }
        return nil
    }
}

/// Reads DER TLVs (definite lengths, low tag numbers: all a certificate's outer structure needs).
struct DERReader {
    private var bytes: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
    }

    var peekTag: UInt8? { bytes.first }

    /// Whether every element has been read.
    var isAtEnd: Bool { bytes.isEmpty }

    /// The DER encoding of an element: `tag`, the length of `content` (short or long form), then `content`.
    static func encode(tag: UInt8, content: [UInt8]) -> [UInt8] {
        var length: [UInt8] = []
        if content.count < 0x80 {
            length = [UInt8(content.count)]
        } else {
            var count = content.count
            while count > 0 {
                length.insert(UInt8(count & 0xFF), at: 0)
                count >>= 8
            }
            length.insert(0x80 | UInt8(length.count), at: 0)
        }
        return [tag] + length + content
    }

    /// Reads the next element, which must have `tag`: its content and its whole encoding.
    mutating func read(tag: UInt8) throws -> (content: ArraySlice<UInt8>, whole: ArraySlice<UInt8>) {
        let start = bytes.startIndex
        guard bytes.count >= 2, bytes[start] == tag else { throw Self.malformed }
        var index = start + 1
        let first = bytes[index]
        index += 1
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard count >= 1, count <= 4, bytes.endIndex - index >= count else { throw Self.malformed }
            for _ in 0..<count {
                length = length << 8 | Int(bytes[index])
                index += 1
            }
        }
        guard length <= bytes.endIndex - index else { throw Self.malformed }
        let end = index + length
        defer { bytes = bytes[end...] }
        return (bytes[index..<end], bytes[start..<end])
    }

    private static var malformed: ConnectError {
        ConnectError(.certificatePinning, message: "the bytes are not a DER X.509 certificate")
    }
}
