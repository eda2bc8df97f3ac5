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
}
