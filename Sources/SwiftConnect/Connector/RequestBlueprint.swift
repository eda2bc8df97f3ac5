import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The parts of a request built from a ``Connector``: its URL, method, headers, body and timeout, checked, from
/// which ``makeRequest()`` makes the `URLRequest`. The client adds its defaults to these parts before the request
/// is made.
final class RequestBlueprint: Sendable {
    let url: URL
    let cachePolicy: URLRequest.CachePolicy
    let timeout: TimeInterval
    /// The method, `GET` included.
    let method: String
    let body: Data?
    /// The header fields; empty for none.
    let headers: [String: String]

    init(
        url: URL,
        cachePolicy: URLRequest.CachePolicy,
        timeout: TimeInterval,
        method: String,
        body: Data?,
        headers: [String: String]
    ) {
        self.url = url
        self.cachePolicy = cachePolicy
        self.timeout = timeout
        self.method = method
        self.body = body
        self.headers = headers
    }

    /// This blueprint with another URL (the client's default query items added).
    func with(url: URL) -> RequestBlueprint {
        RequestBlueprint(
            url: url, cachePolicy: cachePolicy, timeout: timeout, method: method, body: body, headers: headers)
    }

    /// The request as it enters the client's pipeline.
    func makeConnectRequest() -> ConnectRequest {
        ConnectRequest(
            method: HTTPMethod(rawValue: method), url: url, headerFields: HeaderFields(foundation: headers),
            body: body.map(ConnectRequest.Body.bytes) ?? .none, timeoutInterval: timeout, cachePolicy: cachePolicy)
    }

    /// The request as a `URLRequest` (``Connector/asURLRequest()``): the one way the request builder makes one, so a
    /// request made again equals the first.
    func makeRequest() -> URLRequest {
        var request = URLRequest(url: url, cachePolicy: cachePolicy, timeoutInterval: timeout)
        // A new URLRequest already says GET; setting it again costs a normalisation pass in Foundation.
        if method != "GET" { request.httpMethod = method }
        if let body { request.httpBody = body }
        if !headers.isEmpty { request.allHTTPHeaderFields = headers }
        return request
    }
}
