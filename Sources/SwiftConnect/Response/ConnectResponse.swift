import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A complete HTTP response: the request that produced it, the status and headers, and the body.
///
/// ```swift
/// connect.response(for: TodoConnector.get(id: 1)).observe { result in
///     if case .success(let response) = result {
///         print(response.statusCode, response.header("Content-Type") ?? "", response.data.count)
///     }
/// }
/// ```
public struct ConnectResponse: Sendable {
    /// The request as it was sent, after every middleware.
    public var request: URLRequest
    /// How many requests were sent to get this error response (outside 200..<300): more than 1 when a retry loop
    /// sent the request again and ended with it, so that the error the error handler makes of the response says
    /// so (``ConnectError/attempts``). Always 1 on a success.
    ///
    /// An `Int32` right after `request`: on Linux it fills the padding after the `URLRequest`, and a response is
    /// copied at every stage of a request.
    var attempts: Int32 = 1
    /// The HTTP response: status code and headers.
    public var response: HTTPURLResponse
    /// The body (empty when there was none, or when it was written to ``fileURL``).
    public var data: Data
    /// Where the body was written, for a download to a file; `nil` when the body is in ``data``.
    public var fileURL: URL?
    /// The body still arriving, for a streamed request (``TransferOptions/streaming``); ``data`` is then empty.
    /// `nil` otherwise.
    public var bodyStream: ResponseBodyStream?

    /// Creates a response.
    ///
    /// - Parameters:
    ///   - request: The request as sent.
    ///   - response: The HTTP response.
    ///   - data: The body.
    public init(request: URLRequest, response: HTTPURLResponse, data: Data) {
        self.request = request
        self.response = response
        self.data = data
    }

    /// Creates a response from its parts, for fake transports and middlewares that answer by themselves.
    ///
    /// Fails only when Foundation cannot represent the response (for example a status code below 100).
    ///
    /// - Parameters:
    ///   - request: The request being answered; its URL becomes the response's URL.
    ///   - statusCode: The status code.
    ///   - headers: The response headers.
    ///   - data: The body.
    public init?(request: URLRequest, statusCode: Int, headers: [String: String] = [:], data: Data = Data()) {
        guard (100...999).contains(statusCode),
            let url = request.url,
            let response = HTTPURLResponse(
                url: url, statusCode: statusCode, httpVersion: "HTTP/1.1", headerFields: headers)
        else { return nil }
        self.init(request: request, response: response, data: data)
    }

    /// The HTTP status code.
    public var statusCode: Int { response.statusCode }

    /// Whether the status is in 200..<300.
    public var isSuccess: Bool { (200..<300).contains(statusCode) }

    /// The value of a response header, looked up case-insensitively.
    ///
    /// - Parameter name: The header name.
    /// - Returns: The value, or `nil` when absent.
    public func header(_ name: String) -> String? {
        if let value = response.value(forHTTPHeaderField: name) { return value }
        let lowered = name.lowercased()
        for (key, value) in response.allHeaderFields {
            if let key = key as? String, key.lowercased() == lowered { return value as? String }
        }
        return nil
    }

    /// The media type of the body, lowercased and without parameters (`application/json`), if declared.
    public var mediaType: String? {
        header("Content-Type").map(ConnectResponse.mediaType(of:))
    }

    /// The media type of a `Content-Type` value: lowercased, without parameters and surrounding blanks.
    static func mediaType(of contentType: String) -> String {
        // By hand over the UTF-8 bytes: Foundation's `trimmingCharacters(in:)` cost more than the rest of a
        // small request's pipeline (measured with callgrind).
        var type = contentType.utf8[...]
        if let semicolon = type.firstIndex(of: UInt8(ascii: ";")) { type = type[..<semicolon] }
        let isBlank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        while let first = type.first, isBlank(first) { type = type.dropFirst() }
        while let last = type.last, isBlank(last) { type = type.dropLast() }
        return Substring(type).lowercased()
    }
}
