import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Everything a request built from a ``Connector`` was made of, kept so the same request can be made again
/// without keeping the `URLRequest` itself.
///
/// A retry must send the request again as it entered the retry stage. Keeping that `URLRequest` for a second
/// attempt would make the first attempt's request shared, so the first middleware to change it (to add a
/// header, say) would copy it: a copy of a `URLRequest` costs about 7,000 instructions on Linux, half of them
/// in re-normalising the method (measured with callgrind). Kept here instead, the parts cost a few retains and
/// the request is made again only for a retry or an error that reports it.
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

    /// The request: the one way the request builder makes one, so a request made again equals the first.
    func makeRequest() -> URLRequest {
        var request = URLRequest(url: url, cachePolicy: cachePolicy, timeoutInterval: timeout)
        // A new URLRequest already says GET; setting it again costs a normalisation pass in Foundation.
        if method != "GET" { request.httpMethod = method }
        if let body { request.httpBody = body }
        if !headers.isEmpty { request.allHTTPHeaderFields = headers }
        return request
    }
}
