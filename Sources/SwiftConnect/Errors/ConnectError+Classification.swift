import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension ConnectError.Kind {
    /// Whether the kind says the transport failed before a complete response arrived.
    var isTransportFailure: Bool {
        switch self {
        case .transport, .cannotConnect, .nameResolution, .connectionLost, .secureConnection, .untrustedCertificate,
            .badResponse:
            return true
        default:
            return false
        }
    }

    /// Whether the kind says the attempt failed before its request was sent: no connection (``cannotConnect``,
    /// ``notConnected``), no name (``nameResolution``), no TLS session (``secureConnection``,
    /// ``untrustedCertificate``, ``certificatePinning``), or a request refused as it was built (``invalidRequest``).
    var isBeforeTheRequestWasSent: Bool {
        switch self {
        case .invalidRequest, .cannotConnect, .notConnected, .nameResolution, .secureConnection, .untrustedCertificate,
            .certificatePinning:
            return true
        default:
            return false
        }
    }

    /// The kind of failure a `URLError` code reports: the one table that turns URLSession's vocabulary (and that of
    /// any transport reporting `URLError`s) into the engine-neutral kinds that ``RetryPolicy`` and middlewares read.
    ///
    /// - Parameter code: The `URLError` code an engine reported.
    public init(_ code: URLError.Code) {
        switch code {
        case .cancelled:
            self = .cancelled
        // An authentication challenge the session cancelled, not the caller: not retried, and not `cancelled`,
        // which would stop an event source or a retry hook that the caller's cancellation stops.
        case .userCancelledAuthentication:
            self = .transport
        case .timedOut:
            self = .timedOut
        case .cannotConnectToHost, .notConnectedToInternet, .internationalRoamingOff, .callIsActive,
            .dataNotAllowed:
            self = .cannotConnect
        case .cannotFindHost, .dnsLookupFailed:
            self = .nameResolution
        case .networkConnectionLost:
            self = .connectionLost
        case .secureConnectionFailed, .clientCertificateRejected, .clientCertificateRequired:
            self = .secureConnection
        case .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid,
            .serverCertificateHasUnknownRoot:
            self = .untrustedCertificate
        case .badServerResponse, .cannotParseResponse, .zeroByteResource:
            self = .badResponse
        default:
            // Among them `.badURL` and `.unsupportedURL`, `.cannotDecodeContentData` (a body in an encoding that cannot be decoded: a retry gets
            // the same bytes), `.resourceUnavailable`, `.fileDoesNotExist`, `.userAuthenticationRequired`.
            self = .transport
        }
    }
}
