import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOHTTPCompression
import NIOPosix
import NIOSSL
import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Network)
    import Network
#endif

/// What AsyncHTTPClient and SwiftNIO report, as the ``SwiftConnect/ConnectError`` of the kind URLSession's
/// equivalent failure becomes (``SwiftConnect/ConnectError/Kind``), with the engine's own error as the underlying
/// error. A ``SwiftConnect/RetryPolicy`` reads the kind, so it retries the same failures on either engine.
///
/// TLS as URLSession reports it: a certificate that does not validate, or that does not name the host, is
/// ``SwiftConnect/ConnectError/Kind/untrustedCertificate`` (not retried); any other failure of the handshake or of
/// the TLS layer is ``SwiftConnect/ConnectError/Kind/secureConnection``; a TLS connection that closes without
/// `close_notify` (a body cut short) is ``SwiftConnect/ConnectError/Kind/connectionLost``. On Apple platforms,
/// AsyncHTTPClient's default event loops are Network.framework's, whose socket and TLS errors are classified the same
/// way. An HTTP/2 stream the server resets, or refuses as it goes away, is
/// ``SwiftConnect/ConnectError/Kind/connectionLost``, as URLSession reports it.
enum ErrorClassification {
    static func connectError(_ error: any Error, timeout: TimeInterval?) -> ConnectError {
        if let error = error as? ConnectError { return error }
        if let failure = error as? PinnedFailure { return failure.connectError(timeout: timeout) }
        let (kind, message) = classify(error)
        switch kind {
        case .cancelled:
            return ConnectError(.cancelled, message: message, underlyingError: error)
        case .timedOut:
            // The request's deadline says so; an engine timer that fired before it (connecting, the TLS handshake, a
            // read) keeps its own words, which the core keeps too (it rewrites only a timeout at its deadline).
            guard case .deadlineExceeded? = error as? HTTPClientError else {
                return ConnectError(.timedOut, message: message, underlyingError: error)
            }
            let seconds = timeout.map { " of \($0) s" } ?? ""
            return ConnectError(
                .timedOut, message: "no complete response within the timeout\(seconds)", underlyingError: error)
        case .invalidRequest:
            var failure = ConnectError.invalidRequest(invalidRequestReason(of: error))
            failure.message = message
            failure.underlyingError = error
            return failure
        default:
            return ConnectError(kind, message: message, underlyingError: error)
        }
    }

    /// The kind of failure URLSession reports for the same event, and what to say of it.
    private static func classify(_ error: any Error) -> (ConnectError.Kind, String) {
        switch error {
        case let error as HTTPClientError:
            return classify(error)
        case is CancellationError:
            return (.cancelled, "the request was cancelled")
        case let error as URLError:
            // The exchange's own checks (a head that cannot be a response) speak URLSession's codes.
            return (ConnectError.Kind(error.code), "the request failed: \(error.localizedDescription)")
        case let error as HTTPParserError:
            switch error {
            case .invalidEOFState:
                // Mid-head as mid-body: SwiftNIO's parser reports both so.
                return (.connectionLost, "the connection closed before the response was complete")
            case .unexpectedContentLength, .invalidContentLength:
                return (
                    .badResponse,
                    "the server's answer has no single valid Content-Length (\(error)): its body cannot be trusted"
                )
            default:
                return (.badResponse, "the server's answer is not valid HTTP (\(error))")
            }
        case is NIOHTTPDecompression.DecompressionError, is NIOHTTPDecompression.ExtraDecompressionError:
            // Not retried by default: another attempt gets the same bytes.
            return (.transport, "the response body could not be decompressed (\(error))")
        case let error as NIOConnectionError:
            // No address was tried: the resolver failed, or the name resolved to no address at all (its A and AAAA
            // answers both empty, which SwiftNIO reports with neither DNS error set). URLSession reports both as
            // `cannotFindHost`.
            if error.connectionErrors.isEmpty {
                guard error.dnsAError != nil || error.dnsAAAAError != nil else {
                    return (.nameResolution, "\(error.host) resolved to no address")
                }
                return (.nameResolution, "could not resolve \(error.host)")
            }
            return (.cannotConnect, "could not connect to \(error.host):\(error.port) (\(error))")
        case let error as IOError:
            if "\(error)".hasPrefix("connect(") {
                // Whatever the reason a connect failed (`EINVAL` through a `blackhole` route): nothing was sent.
                return (.cannotConnect, "the server could not be reached (\(error))")
            }
            return classify(errno: error.errnoCode, error)
        case let error as ChannelError:
            switch error {
            case .connectTimeout: return (.timedOut, "connecting timed out")
            case .ioOnClosedChannel, .eof, .alreadyClosed, .outputClosed, .inputClosed:
                return (.connectionLost, "the connection closed before the response was complete")
            default: return (.transport, "the request failed: \(error)")
            }
        case let error as NIOSSLError:
            if error == .uncleanShutdown {
                return (.connectionLost, "the TLS connection closed without close_notify (\(error))")
            }
            if "\(error)".contains("CERTIFICATE_VERIFY_FAILED") {
                return (.untrustedCertificate, "the server's certificate is not trusted (\(error))")
            }
            return (.secureConnection, "the TLS handshake failed (\(error))")
        case let error as NIOSSLExtraError where error == .failedToValidateHostname:
            return (.untrustedCertificate, "the server's certificate does not name the host (\(error))")
        case is NIOSSLExtraError, is BoringSSLError:
            return (.secureConnection, "the TLS connection failed (\(error))")
        case let error as NIOHTTP2Errors.StreamClosed:
            // An HTTP/2 server reset the stream (`RST_STREAM`), or refused it as it went away (`GOAWAY`: SwiftNIO
            // closes each stream it never processed with `REFUSED_STREAM`): the exchange is lost with its stream, as
            // URLSession reports it.
            return (
                .connectionLost,
                "the server closed the request's HTTP/2 stream before the response was complete (\(error.errorCode))"
            )
        default:
            #if canImport(Network)
                if let classified = classifyNetworkFramework(error) { return classified }
            #endif
            return (.transport, "the request failed: \(error)")
        }
    }

    /// A socket error by its `errno`, as URLSession classifies the same.
    private static func classify(errno code: Int32, _ error: any Error) -> (ConnectError.Kind, String) {
        switch code {
        case ECONNREFUSED, ENETUNREACH, EHOSTUNREACH:
            return (.cannotConnect, "the server could not be reached (\(error))")
        case ECONNRESET, EPIPE: return (.connectionLost, "the connection was reset (\(error))")
        case ETIMEDOUT: return (.connectionLost, "the connection stopped answering (\(error))")
        default: return (.transport, "the request failed: \(error)")
        }
    }

    #if canImport(Network)
        /// Network.framework's errors, as AsyncHTTPClient hands them over on its default event loops there
        /// (NIOTransportServices): its socket and TLS errors wrapped, the others as they are. `nil`: not one of them.
        private static func classifyNetworkFramework(_ error: any Error) -> (ConnectError.Kind, String)? {
            switch error {
            case let error as HTTPClient.NWPOSIXError:
                return classify(errno: error.errorCode.rawValue, error)
            case let error as HTTPClient.NWTLSError:
                return classify(tlsStatus: error.status, error)
            case let error as NWError:
                switch error {
                case .posix(let code): return classify(errno: code.rawValue, error)
                case .tls(let status): return classify(tlsStatus: status, error)
                case .dns: return (.nameResolution, "the host's name could not be resolved (\(error))")
                default: return nil
                }
            default:
                return nil
            }
        }

        /// A TLS failure by its Security framework status: the certificate's failures (`errSSLXCertChainInvalid`,
        /// `errSSLBadCert`, `errSSLUnknownRootCert`, `errSSLNoRootCert`, `errSSLCertExpired`,
        /// `errSSLCertNotYetValid`, `errSSLHostNameMismatch`) as URLSession reports them, the rest as a failed
        /// handshake.
        private static func classify(tlsStatus: OSStatus, _ error: any Error) -> (ConnectError.Kind, String) {
            if [-9807, -9808, -9812, -9813, -9814, -9815, -9843].contains(tlsStatus) {
                return (.untrustedCertificate, "the server's certificate is not trusted (\(error))")
            }
            return (.secureConnection, "the TLS handshake failed (\(error))")
        }
    #endif

    /// The reason of an error AsyncHTTPClient refuses a request with, as the core names the same fault.
    private static func invalidRequestReason(of error: any Error) -> ConnectError.InvalidRequestReason {
        guard let error = error as? HTTPClientError else { return .invalidURL("") }
        switch error {
        case .traceRequestWithBody: return .bodyNotAllowed(method: "TRACE")
        case .identityCodingIncorrectlyPresent: return .invalidHeader(name: "Transfer-Encoding")
        case _ where error.isOne(of: .invalidHeaderFieldNames([]), .invalidHeaderFieldValues([])):
            // AsyncHTTPClient names the values it refuses, not their fields: the name stays unknown.
            return .invalidHeader(name: "")
        default: return .invalidURL("")
        }
    }

    private static func classify(_ error: HTTPClientError) -> (ConnectError.Kind, String) {
        switch error {
        case .cancelled: return (.cancelled, "the request was cancelled")
        case .connectTimeout: return (.timedOut, "connecting timed out")
        case .tlsHandshakeTimeout: return (.timedOut, "the TLS handshake timed out")
        case .readTimeout: return (.timedOut, "no byte of the response came within the read timeout")
        case .writeTimeout: return (.timedOut, "sending the request timed out")
        case .getConnectionFromPoolTimeout: return (.timedOut, "no connection to the host was free in time")
        case .socksHandshakeTimeout, .httpProxyHandshakeTimeout: return (.timedOut, "the proxy's handshake timed out")
        case .deadlineExceeded: return (.timedOut, "the request timed out (\(error))")
        case .remoteConnectionClosed:
            return (.connectionLost, "the connection closed before the response was complete")
        case .uncleanShutdown:
            // As `NIOSSLError.uncleanShutdown`.
            return (.connectionLost, "the TLS connection closed without close_notify (\(error))")
        case .invalidURL, .emptyHost, .emptyScheme, .missingSocketPath:
            return (.invalidRequest, "the request's URL cannot be sent (\(error))")
        case .traceRequestWithBody:
            return (.invalidRequest, ConnectError.InvalidRequestReason.bodyNotAllowed(method: "TRACE").description)
        case .identityCodingIncorrectlyPresent:
            return (.invalidRequest, "the request's Transfer-Encoding names identity, which is no transfer coding")
        case .invalidProxyResponse:
            // The proxy answered its `CONNECT` with anything but a 2xx: nothing reached the server.
            return (.cannotConnect, "the proxy did not open a tunnel to the server: nothing was sent to it")
        case .proxyAuthenticationRequired:
            // The credentials are the configuration's: another attempt gets the same 407.
            return (
                .transport,
                "the proxy requires authentication (407): the client's configuration has no proxy credentials it "
                    + "accepts; nothing was sent to the server"
            )
        case .writeAfterRequestSent:
            return (.transport, "AsyncHTTPClient refused a part of the request body after the request ended")
        case .alreadyShutdown:
            return (.transport, "the AsyncHTTPClientTransport's client is shut down")
        case .invalidLocalAddress:
            // The client's configuration, every request alike: not the server's answer, and not worth a retry.
            return (
                .transport, "the client's configuration has a localAddress that is not an IP address: nothing was sent"
            )
        case .bodyLengthMismatch:
            return (.transport, "the request body did not have the length announced (a file changed while sent?)")
        // Those that carry a value: told apart by the description AsyncHTTPClient gives without it.
        case _ where error.isOne(of: .invalidHeaderFieldNames([]), .invalidHeaderFieldValues([])):
            // Its description quotes the names or values refused (an `Authorization` token): not repeated here.
            return (
                .invalidRequest,
                "AsyncHTTPClient refused a header field of the request (\(error.shortDescription.lowercased())): "
                    + "a name that is not an RFC 9110 token, or a value with a control character; nothing was sent"
            )
        case _ where error.isOne(of: .unsupportedScheme("")):
            return (.invalidRequest, "the request's URL has a scheme AsyncHTTPClient cannot send (\(error))")
        case _ where error.isOne(of: .serverOfferedUnsupportedApplicationProtocol("")):
            // The TLS handshake settled on it (ALPN): the secure connection is unusable, not its answer.
            return (.secureConnection, "the TLS handshake agreed on an application protocol not spoken (\(error))")
        // Its short description names the file and line (AsyncHTTPClient 1.37): its start names the case.
        case _ where error.shortDescription.hasPrefix("An internal state failure"):
            return (.transport, "AsyncHTTPClient reached a state it does not expect (\(error))")
        default:
            return (.badResponse, "the request failed: \(error)")
        }
    }
}

extension HTTPClientError {
    /// Whether this is one of `errors`, whatever value it carries: `HTTPClientError` compares the values too, and has
    /// no public case to match; ``shortDescription`` names the case alone.
    fileprivate func isOne(of errors: HTTPClientError...) -> Bool {
        errors.contains { $0.shortDescription == shortDescription }
    }
}
