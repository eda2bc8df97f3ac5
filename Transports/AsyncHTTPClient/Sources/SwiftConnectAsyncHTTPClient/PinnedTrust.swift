import Foundation
import NIOCore
import NIOSSL
import SwiftASN1
import SwiftConnect
import X509

/// How the certificates of a pinned host are judged, during the TLS handshake of a connection the transport makes
/// itself (``PinnedRoutes``): first trust, as AsyncHTTPClient's own connections judge it, then the pins.
///
/// NIOSSL hands a custom verification callback the certificates exactly as the server presented them, and the
/// callback replaces OpenSSL's verification. So the chain is built and checked here with swift-certificates
/// (RFC 5280 and the server's identity, against the same trust roots as the client's `TLSConfiguration`), and the
/// pins are looked for in that *validated* chain, never in what the server presented: a server could append a
/// pinned certificate that its real chain does not use.
struct PinnedTrust: Sendable {
    /// What a chain was judged to be.
    enum Verdict: Sendable {
        /// Trusted, and it has a pinned key: the chain from the server's certificate to the trust root.
        case trusted(NIOSSL.ValidatedCertificateChain)
        /// Not trusted by the trust roots (or not for this host), whatever its pins.
        case untrusted(String)
        /// Trusted, but no certificate of its validated chain has a key pinned for the host.
        case pinMismatch
    }

    let roots: CertificateStore
    /// Whether the server's identity is checked (off for `.noHostnameVerification`).
    let checksHostname: Bool
    let pins: CertificatePins

    /// The trust of `tls`: its trust roots (the system's by default) and additional roots, loaded now.
    ///
    /// - Throws: When a trust root file cannot be read.
    init(tls: TLSConfiguration, pins: CertificatePins) throws {
        var certificates: [Certificate] = []
        var system = false
        switch tls.trustRoots {
        case .none, .default: system = true
        case .certificates(let list): certificates += try list.map(Self.certificate)
        case .file(let path): certificates += try Self.certificates(at: path)
        }
        for extra in tls.additionalTrustRoots {
            switch extra {
            case .certificates(let list): certificates += try list.map(Self.certificate)
            case .file(let path): certificates += try Self.certificates(at: path)
            }
        }
        roots = (system ? CertificateStore.systemTrustRoots : CertificateStore()).appending(contentsOf: certificates)
        checksHostname = tls.certificateVerification == .fullVerification
        self.pins = pins
    }

    /// Judges the chain `presented` by the server of `host`.
    func evaluate(_ presented: [NIOSSLCertificate], host: String) async -> Verdict {
        guard let first = presented.first, let leaf = try? Self.certificate(first) else {
            return .untrusted("the server presented no readable certificate")
        }
        let intermediates = CertificateStore(presented.dropFirst().compactMap { try? Self.certificate($0) })
        let identity =
            checksHostname
            ? ServerIdentityPolicy(
                serverHostname: PinnedRoutes.isIPAddress(host) ? nil : host,
                serverIP: PinnedRoutes.isIPAddress(host) ? host : nil)
            : nil
        var verifier = Verifier(rootCertificates: roots) {
            RFC5280Policy()
            if let identity { identity }
        }
        switch await verifier.validate(leaf: leaf, intermediates: intermediates) {
        case .couldNotValidate(let failures):
            let reasons = failures.map { "\($0.policyFailureReason)" }
            return .untrusted(reasons.first ?? "no chain to a trust root")
        case .validCertificate(let chain):
            let der = chain.compactMap { certificate -> Data? in
                var serializer = DER.Serializer()
                guard (try? serializer.serialize(certificate)) != nil else { return nil }
                return Data(serializer.serializedBytes)
            }
            guard pins.accepts(host: host, chain: der) else { return .pinMismatch }
            let validated = der.compactMap { try? NIOSSLCertificate(bytes: [UInt8]($0), format: .der) }
            guard validated.count == der.count, !validated.isEmpty else {
                return .untrusted("the validated chain could not be handed back to NIOSSL")
            }
            return .trusted(NIOSSL.ValidatedCertificateChain(validated))
        }
    }

    private static func certificate(_ certificate: NIOSSLCertificate) throws -> Certificate {
        try Certificate(derEncoded: certificate.toDERBytes())
    }

    /// The certificates of a PEM file, or of every PEM file of a directory (as OpenSSL reads a trust root path).
    private static func certificates(at path: String) throws -> [Certificate] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path])
        }
        guard isDirectory.boolValue else { return try NIOSSLCertificate.fromPEMFile(path).map(certificate) }
        let names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        return names.flatMap { name in
            (try? NIOSSLCertificate.fromPEMFile(path + "/" + name).map(certificate)) ?? []
        }
    }
}
