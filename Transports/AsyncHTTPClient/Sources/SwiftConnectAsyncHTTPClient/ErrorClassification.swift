import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTPCompression
import NIOPosix
import NIOSSL
import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What AsyncHTTPClient and SwiftNIO report, as the ``SwiftConnect/ConnectError`` that URLSession's equivalent
/// failure becomes: the same kind, and an underlying `URLError` with the code ``SwiftConnect/RetryPolicy`` reads
/// (the NIO error kept under `NSUnderlyingErrorKey`). A retry policy therefore retries the same failures on
/// either engine.
enum ErrorClassification {
    static func connectError(_ error: any Error, request: URLRequest, timeout: TimeInterval?) -> ConnectError {
        if let error = error as? ConnectError { return error }
        if let failure = error as? PinnedFailure { return failure.connectError(request: request, timeout: timeout) }
        let (code, message) = classify(error)
        switch code {
        case .cancelled:
            return ConnectError(
                .cancelled, message: "the request was cancelled", request: request,
                underlyingError: URLError(.cancelled, underlying: error))
        case .timedOut:
            let seconds = timeout.map { " of \($0) s" } ?? ""
            return ConnectError(
                .timedOut, message: "no complete response within the timeout\(seconds)", request: request,
                underlyingError: URLError(.timedOut, underlying: error))
        case .badURL:
            var failure = ConnectError.invalidRequest(.invalidURL(request.url?.absoluteString ?? ""), request: request)
            failure.message = message
            failure.underlyingError = URLError(code, underlying: error)
            return failure
        default:
            return ConnectError(
                .transport, message: message, request: request, underlyingError: URLError(code, underlying: error))
        }
    }

    /// The `URLError` code URLSession reports for the same failure, and what to say of it.
    private static func classify(_ error: any Error) -> (URLError.Code, String) {
        switch error {
        case let error as HTTPClientError:
            return classify(error)
        case is CancellationError:
            return (.cancelled, "the request was cancelled")
        case let error as HTTPParserError:
            switch error {
            case .invalidEOFState:
                return (.networkConnectionLost, "the connection closed before the end of the body")
            case .unexpectedContentLength, .invalidContentLength:
                return (
                    .badServerResponse,
                    "the server's answer has no single valid Content-Length (\(error)): its body cannot be trusted"
                )
            default:
                return (.badServerResponse, "the server's answer is not valid HTTP (\(error))")
            }
        case is NIOHTTPDecompression.DecompressionError, is NIOHTTPDecompression.ExtraDecompressionError:
            return (.cannotDecodeContentData, "the response body could not be decompressed (\(error))")
        case let error as NIOConnectionError:
            if error.dnsAError != nil || error.dnsAAAAError != nil, error.connectionErrors.isEmpty {
                return (.cannotFindHost, "could not resolve \(error.host)")
            }
            return (.cannotConnectToHost, "could not connect to \(error.host):\(error.port) (\(error))")
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED: return (.cannotConnectToHost, "the server refused the connection")
            case ECONNRESET, EPIPE: return (.networkConnectionLost, "the connection was reset (\(error))")
            default: return (.unknown, "the request failed: \(error)")
            }
        case let error as ChannelError:
            switch error {
            case .connectTimeout: return (.timedOut, "connecting timed out")
            case .ioOnClosedChannel, .eof, .alreadyClosed, .outputClosed, .inputClosed:
                return (.networkConnectionLost, "the connection closed before the response was complete")
            default: return (.unknown, "the request failed: \(error)")
            }
        case let error as NIOSSLError:
            if "\(error)".contains("CERTIFICATE_VERIFY_FAILED") {
                return (.serverCertificateUntrusted, "the server's certificate is not trusted (\(error))")
            }
            return (.secureConnectionFailed, "the TLS handshake failed (\(error))")
        case is NIOSSLExtraError, is BoringSSLError:
            return (.secureConnectionFailed, "the TLS connection failed (\(error))")
        default:
            return (.unknown, "the request failed: \(error)")
        }
    }

    private static func classify(_ error: HTTPClientError) -> (URLError.Code, String) {
        switch error {
        case .cancelled: return (.cancelled, "the request was cancelled")
        case .deadlineExceeded, .readTimeout, .writeTimeout, .connectTimeout, .tlsHandshakeTimeout,
            .getConnectionFromPoolTimeout:
            return (.timedOut, "the request timed out (\(error))")
        case .remoteConnectionClosed:
            return (.networkConnectionLost, "the connection closed before the response was complete")
        case .invalidURL, .emptyHost, .emptyScheme, .missingSocketPath:
            return (.badURL, "the request's URL cannot be sent (\(error))")
        case .alreadyShutdown:
            return (.unknown, "the AsyncHTTPClientTransport's client is shut down")
        case .bodyLengthMismatch:
            return (.unknown, "the request body did not have the length announced (a file changed while sent?)")
        default:
            return (.badServerResponse, "the request failed: \(error)")
        }
    }
}

extension URLError {
    /// A `URLError` with `code` whose underlying error is `underlying`.
    fileprivate init(_ code: URLError.Code, underlying: any Error) {
        self.init(code, userInfo: [NSUnderlyingErrorKey: underlying as NSError])
    }
}
