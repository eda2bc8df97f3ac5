import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Security) && !canImport(FoundationNetworking)
    import Security
#endif

/// Certificate pinning in ``URLSessionTransport``: where the platform lets it be checked, and how.
///
/// - **Apple platforms:** the session delegate answers the server-trust challenge of a pinned host. The chain is
///   evaluated by the system (`SecTrustEvaluateWithError`, with the SSL policy for the host), then the pins are
///   looked for in the evaluated chain (``CertificatePins/accepts(host:chain:)``). A chain without a pinned key
///   cancels the challenge, so the request is never sent, and the transport reports
///   ``ConnectError/Kind/certificatePinning`` naming the host.
/// - **FoundationNetworking (Linux):** libcurl verifies certificates itself and offers no server-trust challenge,
///   so a pinned host is refused before anything is sent, never reached unpinned.
///
/// On every platform a pinned host asked for over plain `http` is refused: there is no certificate to check.
enum ServerTrustPinning {
    /// What to answer a server-trust challenge.
    enum Verdict {
        /// The system's default handling: the host is not pinned, or its chain is not trusted anyway (the system
        /// then fails the request as untrusted).
        case defaultHandling
        /// Trusted, with a pinned key: go on with this credential.
        case accept(URLCredential)
        /// Trusted, but without any key pinned for the host: cancel, nothing is sent.
        case reject(host: String)
    }

    /// Whether the platform lets ``URLSessionTransport`` check pins during the handshake.
    #if canImport(Security) && !canImport(FoundationNetworking)
        static let checksDuringHandshake = true
    #else
        static let checksDuringHandshake = false
    #endif

    /// Why `request` is refused before it is sent, or `nil` when it may go: its host is pinned, and either it goes
    /// over plain `http`, or the platform cannot check pins (FoundationNetworking).
    static func refusal(of request: URLRequest, pins: CertificatePins) -> ConnectError? {
        pins.refusal(
            of: request, by: checksDuringHandshake ? "URLSessionTransport" : "URLSessionTransport on Linux",
            checksHandshake: checksDuringHandshake)
    }

    /// The error of a request whose server failed its pins.
    static func mismatch(host: String, request: URLRequest) -> ConnectError {
        ConnectError(
            .certificatePinning,
            message: "the certificate chain of \(host) has none of the keys pinned for it: nothing was sent",
            request: request,
            underlyingError: URLError(.serverCertificateUntrusted))
    }

    /// The answer to `challenge` by `pins`, or `nil` when it is not a server-trust challenge.
    static func verdict(for challenge: URLAuthenticationChallenge, pins: CertificatePins) -> Verdict? {
        #if canImport(Security) && !canImport(FoundationNetworking)
            let space = challenge.protectionSpace
            guard space.authenticationMethod == NSURLAuthenticationMethodServerTrust, let trust = space.serverTrust
            else { return nil }
            guard !pins.isEmpty, pins.pins(for: space.host) != nil else { return .defaultHandling }
            SecTrustSetPolicies(trust, SecPolicyCreateSSL(true, space.host as CFString))
            var error: CFError?
            guard SecTrustEvaluateWithError(trust, &error) else { return .defaultHandling }
            guard pins.accepts(host: space.host, chain: evaluatedChain(of: trust)) else {
                return .reject(host: space.host)
            }
            return .accept(URLCredential(trust: trust))
        #else
            return nil
        #endif
    }

    #if canImport(Security) && !canImport(FoundationNetworking)
        /// The chain the evaluation built, leaf first, DER-encoded.
        private static func evaluatedChain(of trust: SecTrust) -> [Data] {
            let certificates: [SecCertificate]
            if #available(macOS 12.0, iOS 15.0, tvOS 15.0, watchOS 8.0, *) {
                certificates = (SecTrustCopyCertificateChain(trust) as? [SecCertificate]) ?? []
            } else {
                certificates = (0..<SecTrustGetCertificateCount(trust)).compactMap {
                    SecTrustGetCertificateAtIndex(trust, $0)
                }
            }
            return certificates.map { SecCertificateCopyData($0) as Data }
        }
    #endif
}
