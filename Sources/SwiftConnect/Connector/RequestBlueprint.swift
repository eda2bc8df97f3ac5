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
    /// The header fields in the order they were set (a connector's own, in its order, then the defaults), their names
    /// unique ignoring case; empty for none. A `URLRequest` keeps no order, the core's ``ConnectRequest`` does.
    let headers: [(name: String, value: String)]
    /// Secret values nothing in the request names (``ConnectRequest/declaredSecrets``).
    let declaredSecrets: [String]

    init(
        url: URL,
        cachePolicy: URLRequest.CachePolicy,
        timeout: TimeInterval,
        method: String,
        body: Data?,
        headers: [(name: String, value: String)],
        declaredSecrets: [String] = []
    ) {
        self.url = url
        self.cachePolicy = cachePolicy
        self.timeout = timeout
        self.method = method
        self.body = body
        self.headers = headers
        self.declaredSecrets = declaredSecrets
    }

    /// This blueprint with another URL (the client's default query items added).
    func with(url: URL) -> RequestBlueprint {
        RequestBlueprint(
            url: url, cachePolicy: cachePolicy, timeout: timeout, method: method, body: body, headers: headers,
            declaredSecrets: declaredSecrets)
    }

    /// The request as it enters the client's pipeline, its header fields in the order they were set.
    func makeConnectRequest() -> ConnectRequest {
        var request = ConnectRequest(
            method: HTTPMethod(rawValue: method), url: url,
            headerFields: HeaderFields(headers.map { HeaderField(name: HeaderField.Name($0.name), value: $0.value) }),
            body: body.map(ConnectRequest.Body.bytes) ?? .none, timeoutInterval: timeout, cachePolicy: cachePolicy)
        request.declaredSecrets = declaredSecrets
        return request
    }

    /// The request as a `URLRequest` (``Connector/asURLRequest()``): the one way the request builder makes one, so a
    /// request made again equals the first.
    func makeRequest() -> URLRequest {
        var request = URLRequest(url: url, cachePolicy: cachePolicy, timeoutInterval: timeout)
        // A new URLRequest already says GET; setting it again costs a normalisation pass in Foundation.
        if method != "GET" { request.httpMethod = method }
        if let body { request.httpBody = body }
        if !headers.isEmpty {
            // One assignment rather than a `setValue` per field: the names are already unique ignoring case, and on
            // Linux each `setValue` re-validates and capitalises (about three times slower).
            var dictionary: [String: String] = Dictionary(minimumCapacity: headers.count)
            for field in headers { dictionary[field.name] = field.value }
            request.allHTTPHeaderFields = dictionary
        }
        return request
    }
}
