import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Sends one request and delivers its response: the seam between SwiftConnect and the network.
///
/// ``URLSessionTransport`` is the real one. Tests inject a fake: `SwiftConnectTesting` ships
/// `FakeTransport`, and writing one takes a few lines:
///
/// ```swift
/// struct EchoTransport: Transport {
///     func send(_ request: URLRequest) -> Future<ConnectResponse> {
///         guard let response = ConnectResponse(request: request, statusCode: 200, data: request.httpBody ?? Data())
///         else { return Future(error: ConnectError(.transport, message: "no URL")) }
///         return Future(value: response)
///     }
/// }
/// let connect = Connect(transport: EchoTransport())
/// ```
///
/// A transport reports every failure to deliver a response (no connection, reset, timeout…) as a failed
/// future, preferably a ``ConnectError``; any HTTP status, 404 or 500 included, is a successful response.
/// It must honour ``Future/cancel()`` on the future it returns by stopping the work.
public protocol Transport: Sendable {
    /// Sends `request` and returns a future of its response.
    ///
    /// - Parameter request: The fully built request.
    /// - Returns: A future of the response; cancelling it cancels the exchange.
    func send(_ request: URLRequest) -> Future<ConnectResponse>

    /// Sends `request` with a body streamed from a file, a response written to a file, a size limit or
    /// progress reports, as `transfer` asks.
    ///
    /// The default implementation suits transports that work in memory: it reads ``TransferOptions/bodyFile``
    /// into the body, sends with ``send(_:)``, then applies the size limit, writes the destination file and
    /// reports progress once at the end. ``URLSessionTransport`` streams instead.
    ///
    /// - Parameters:
    ///   - request: The fully built request.
    ///   - transfer: How to move the body and the response.
    /// - Returns: A future of the response.
    func send(_ request: URLRequest, transfer: TransferOptions) -> Future<ConnectResponse>

    /// Sends the client's request, in the core's own model, as `transfer` asks: what the client calls.
    ///
    /// The default implementation makes Foundation's `URLRequest` of it (``ConnectRequest/urlRequest``) and calls
    /// ``send(_:)`` or `send(_:transfer:)`: a transport that works with `URLRequest` needs nothing more. An engine
    /// of the core's exchange (`HTTPEngine`) takes the request as it is, and no `URLRequest` is made on its path.
    ///
    /// - Parameters:
    ///   - request: The fully built request, after every middleware.
    ///   - transfer: How to move the body and the response.
    /// - Returns: A future of the response.
    func send(_ request: ConnectRequest, transfer: TransferOptions) -> Future<ConnectResponse>
}

extension Transport {
    /// Makes the `URLRequest` and sends it with ``send(_:)``, or `send(_:transfer:)` when `transfer` asks for
    /// more than a plain exchange.
    public func send(_ request: ConnectRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
        transfer.isPlain ? send(request.urlRequest) : send(request.urlRequest, transfer: transfer)
    }

    /// Sends in memory and applies the transfer options afterwards (see `Transport.send(_:transfer:)`).
    public func send(_ request: URLRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
        if transfer.isPlain { return send(request) }
        return sendInMemory(request, transfer: transfer, using: self)
    }
}

/// The in-memory way to honour transfer options: read the body file, send, then check the size, write the
/// destination and report progress once.
func sendInMemory(_ request: URLRequest, transfer: TransferOptions, using transport: any Transport) -> Future<
    ConnectResponse
> {
    var request = request
    if let destination = transfer.destination {
        do {
            try TransferOptions.checkDestination(destination, request: request)
        } catch {
            return Future(error: error)
        }
    }
    if let file = transfer.bodyFile {
        do {
            request.httpBody = try Data(contentsOf: file)
        } catch {
            return Future(error: ConnectError.fileAccess(error, url: file, request: request))
        }
    }
    let sentBytes = Int64(request.httpBody?.count ?? 0)
    return transport.send(request).map { [request] response in
        // The limit every engine applies: the caller's, or 1 MiB for a download's error body.
        if let limit = transfer.responseBodyLimit(statusCode: response.statusCode), response.data.count > limit {
            throw ConnectError.responseTooLarge(limit: limit, request: request, response: response.response)
        }
        let received = Int64(response.data.count)
        transfer.progress?(
            TransferProgress(
                bytesSent: sentBytes,
                totalBytesToSend: sentBytes,
                bytesReceived: received,
                totalBytesToReceive: received
            )
        )
        if transfer.streaming != nil, response.bodyStream == nil {
            // No streaming here: the whole body, delivered as a finished stream.
            var streamed = response
            streamed.bodyStream = .finished(with: response.data)
            streamed.data = Data()
            return streamed
        }
        guard let destination = transfer.destination, response.isSuccess else { return response }
        do {
            try response.data.write(to: destination, options: .atomic)
        } catch {
            throw ConnectError.fileAccess(error, url: destination, request: request)
        }
        var written = response
        written.data = Data()
        written.fileURL = destination
        return written
    }
}
