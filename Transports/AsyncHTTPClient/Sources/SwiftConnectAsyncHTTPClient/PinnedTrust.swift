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
/// (RFC 5280, the server's identity, and the purpose check BoringSSL makes of a server's chain, against the same
/// trust roots as the client's `TLSConfiguration`), and the pins are looked for in that *validated* chain, never in
/// what the server presented: a server could append a pinned certificate that its real chain does not use.
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
            ServerAuthenticationPurposePolicy()
            if let identity { identity }
        }
        switch await verifier.validate(leaf: leaf, intermediates: intermediates) {
        case .couldNotValidate(let failures):
            return .untrusted(
                failures.first.map { Self.summary(of: "\($0.policyFailureReason)") } ?? "no chain to a trust root")
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

    /// A short reason for a failure swift-certificates describes: its descriptions print whole certificates (serial,
    /// names, key, extensions: text the server chose, kilobytes of it), which must not end up in an error's message
    /// and the app's logs.
    static func summary(of reason: String) -> String {
        let text = reason.lowercased()
        if text.contains("has expired") { return "a certificate in the chain has expired" }
        if text.contains("not yet valid") { return "a certificate in the chain is not valid yet" }
        if text.contains("not marked as a ca") {
            return "a certificate that signs another is not a certificate authority"
        }
        if text.contains("san ") || text.contains("san field") || text.contains("common name")
            || text.contains("hostname")
        {
            return "the certificate does not name the host"
        }
        if text.contains("name constraint") { return "the chain breaks a name constraint of its authority" }
        if text.contains(ServerAuthenticationPurposePolicy.failure) {
            return "a certificate in the chain is not for a TLS server (its extended key usage)"
        }
        // Another failure: the policy that gave it, never the certificate the description may quote.
        let policy = reason.prefix { $0 != ":" }
        return policy.count < reason.count && policy.count <= 40
            ? "the chain failed \(policy)'s checks" : "no chain to a trust root"
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

/// The purpose check that BoringSSL makes of a TLS server's chain (`X509_PURPOSE_SSL_SERVER`), which
/// swift-certificates' policies do not: a certificate of the chain below its trust root that lists extended key
/// usages must list `serverAuth` or `anyExtendedKeyUsage`.
///
/// Without it a certificate a trusted authority issued for another purpose (a client certificate for the same name,
/// say) would pass a pinned host's check, and be refused on the same host unpinned.
struct ServerAuthenticationPurposePolicy: VerifierPolicy {
    /// The words of this policy's failure, which ``PinnedTrust/summary(of:)`` recognises.
    static let failure = "extended key usage does not allow a tls server"

    /// The policy enforces the extended key usage extension, so a certificate may mark it critical.
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [.X509ExtensionID.extendedKeyUsage]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        // The trust root is trusted for what it is, as BoringSSL checks only the certificates below it.
        for certificate in chain.dropLast() {
            let usages: ExtendedKeyUsage?
            do {
                usages = try certificate.extensions.extendedKeyUsage
            } catch {
                return .failsToMeetPolicy(reason: "ServerAuthenticationPurposePolicy: unreadable \(Self.failure)")
            }
            guard let usages else { continue }
            guard usages.contains(.serverAuth) || usages.contains(.any) else {
                return .failsToMeetPolicy(reason: "ServerAuthenticationPurposePolicy: \(Self.failure)")
            }
        }
        return .meetsPolicy
    }
}
