import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What ended an exchange without a response the client can use, as the transport saw it: the input of the one
/// classification of transport errors, ``ConnectError/transportFailure(_:request:)``.
enum TransportFailure {
    /// What URLSession reported (a `URLError`, mostly), or what another transport handed to the client.
    case reported(any Error)
    /// The exchange's deadline passed, `seconds` after it started; `nil`: the request's `timeoutInterval`.
    case deadlinePassed(after: TimeInterval?)
    /// URLSession completed the exchange without an HTTP response.
    case notHTTP
    /// The response's `Content-Length` (`declared`) is too large to count: libcurl read until the connection
    /// closed, so the body delivered as complete is cut short (``URLSessionTransport/framingError(of:request:)``).
    case lengthTooLargeToCount(declared: String, response: HTTPURLResponse)
}

extension ConnectError {
    /// The one place where a transport's failure becomes a ``ConnectError``: URLSession's errors, the transport's
    /// own deadline, and responses that cannot be trusted, on both of ``URLSessionTransport``'s paths. The client
    /// classifies the `URLError`s of other transports here too, so that one error means one thing whatever
    /// transport reported it.
    ///
    /// A `ConnectError` is kept as it is. A `URLError` becomes ``Kind/invalidRequest`` where the request could
    /// never have been sent (a GET with a body; an IPv6 literal host on Linux), and otherwise the kind its code
    /// names (``Kind/init(_:)``: ``Kind/cancelled``, ``Kind/timedOut``, ``Kind/connectionLost``…), keeping the
    /// `URLError` as the underlying error. Platform defects are answered by the hooks of
    /// `Transport/FoundationNetworking/` (``cutShort(_:)``, ``isIPv6Literal(_:)``).
    static func transportFailure(_ failure: TransportFailure, request: URLRequest) -> ConnectError {
        transportFailure(failure, stored: .foundation(request))
    }

    /// ``transportFailure(_:request:)`` for the core's request: Foundation's is made only if the error's
    /// ``ConnectError/request`` is read.
    static func transportFailure(_ failure: TransportFailure, sent request: ConnectRequest) -> ConnectError {
        transportFailure(failure, stored: .sent(request))
    }

    /// The failure of a call whose deadline of `seconds` passed, as every engine's exchange reports it: for a
    /// transport of the test kit's that keeps deadlines by recorded time.
    package static func deadlinePassed(after seconds: TimeInterval, sent request: ConnectRequest) -> ConnectError {
        transportFailure(.deadlinePassed(after: seconds), sent: request)
    }

    /// ``transportFailure(_:request:)`` with the request kept as it was reported.
    static func transportFailure(_ failure: TransportFailure, stored request: ConnectResponse.StoredRequest)
        -> ConnectError
    {
        switch failure {
        case .reported(let error):
            return reported(cutShort(error), request: request)
        case .deadlinePassed(let seconds):
            return timedOut(request, after: seconds)
        case .notHTTP:
            return ConnectError(.badResponse, message: "the server's answer was not an HTTP response", request: request)
        case .lengthTooLargeToCount(let declared, let response):
            // A body cut short, as libcurl's "transfer closed with bytes remaining" is (``cutShort(_:)``).
            return ConnectError(
                .connectionLost,
                message:
                    "the connection closed before the end of the body: the server announced \(declared) bytes",
                request: request,
                head: .foundation(response),
                underlyingError: URLError(.networkConnectionLost)
            )
        }
    }

    /// Classifies an error the engine reported: cancellation, timeout, a request that cannot be sent, or another
    /// transport failure.
    private static func reported(_ error: any Error, request: ConnectResponse.StoredRequest) -> ConnectError {
        if let connectError = error as? ConnectError { return connectError }
        guard let urlError = error as? URLError else {
            return ConnectError(
                .transport,
                message: "the request failed: \(error.localizedDescription)",
                request: request,
                underlyingError: error
            )
        }
        switch urlError.code {
        case .cancelled:
            return ConnectError(
                .cancelled, message: "the request was cancelled", request: request, underlyingError: urlError)
        case .timedOut:
            return timedOut(request)
        case .badURL where isIPv6Literal(urlError.failingURL ?? request.url):
            return ipv6LiteralRefused(urlError, request: request)
        case .dataLengthExceedsMaximum where isGETWithBody(request):
            // URLSession refuses to send a GET with a body, and says "resource exceeds maximum size". Connectors
            // are refused when built; this is a body a middleware or transport-level caller added.
            var error = invalidRequest(.bodyNotAllowed(method: "GET"), stored: request)
            error.underlyingError = urlError
            return error
        default:
            return ConnectError(
                Kind(urlError.code),
                message: "the request failed: \(urlError.localizedDescription) (URLError \(urlError.code.rawValue))",
                request: request,
                underlyingError: urlError
            )
        }
    }

    /// Whether `request` is a GET (the method by default) with a body.
    private static func isGETWithBody(_ request: ConnectResponse.StoredRequest) -> Bool {
        switch request {
        case .foundation(let request):
            let hasBody = !(request.httpBody?.isEmpty ?? true) || request.httpBodyStream != nil
            return hasBody && (request.httpMethod ?? "GET").uppercased() == "GET"
        case .model(let sent):
            return sent.request.body.isPresent && sent.request.method.rawValue.uppercased() == "GET"
        }
    }

    /// The request did not complete within `seconds`, by default its `timeoutInterval`.
    private static func timedOut(_ request: ConnectResponse.StoredRequest, after seconds: TimeInterval? = nil)
        -> ConnectError
    {
        let timeout: TimeInterval
        switch request {
        case .foundation(let request): timeout = request.timeoutInterval
        case .model(let sent): timeout = sent.request.timeoutInterval
        }
        return ConnectError(
            .timedOut,
            message: "no complete response within the timeout of \(seconds ?? timeout) s",
            request: request,
            underlyingError: URLError(.timedOut)
        )
    }
}
