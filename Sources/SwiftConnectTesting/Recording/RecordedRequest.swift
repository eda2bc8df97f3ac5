import Foundation
import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request as a recording holds it, secrets replaced by placeholders: what a ``RequestMatcher`` compares.
///
/// ``RecordingTransport`` makes one of each request it is sent, redacted exactly as it would be recorded, and one of
/// each recorded entry; a matcher compares the two. Secret values (credentials, cookies, API keys, secret query items
/// and body fields) are placeholders on both sides, so a recording made with one token matches a replay run with
/// another.
///
/// ```swift
/// let samePathAndMethod = RequestMatcher { request, recorded in
///     request.method == recorded.method && request.url.path == recorded.url.path
/// }
/// ```
public struct RecordedRequest: Sendable, Equatable {
    /// The method, in upper case.
    public var method: String
    /// The URL, percent-encoded, secret query items and user info replaced by placeholders.
    public var url: URL
    /// The header fields, in order, secret values replaced by placeholders.
    public var headerFields: HeaderFields
    /// The body, secret fields and values replaced by placeholders; empty for none.
    public var body: Data

    /// A request of each part.
    ///
    /// - Parameters:
    ///   - method: The method.
    ///   - url: The URL.
    ///   - headerFields: The header fields.
    ///   - body: The body.
    public init(method: String, url: URL, headerFields: HeaderFields = [:], body: Data = Data()) {
        self.method = method.uppercased()
        self.url = url
        self.headerFields = headerFields
        self.body = body
    }

    /// The request an archive's entry holds, or `nil` when its URL does not parse or its body cannot be read (text
    /// that is not valid base64, or in another encoding).
    init?(_ request: HAR.Request) {
        guard let url = URL(string: request.url) else { return nil }
        var body = Data()
        if let postData = request.postData {
            guard let data = postData.data else { return nil }
            body = data
        }
        var fields = HeaderFields()
        for header in request.headers where !header.name.hasPrefix(":") {
            // HTTP/2 pseudo-headers (`:authority`) in a browser's export are not header fields.
            fields.append(HeaderField(name: HeaderField.Name(header.name), value: header.value))
        }
        self.init(method: request.method, url: url, headerFields: fields, body: body)
    }

    /// A one-line summary for messages: method, URL, and the start of the body.
    var summary: String {
        var text = "\(method) \(url.absoluteString)"
        if !body.isEmpty { text += " body: \(RequestNormalization.excerpt(of: body))" }
        return text
    }
}

// MARK: - The archive's request

extension HAR.Request {
    /// The archive's form of a request already redacted.
    init(_ request: RecordedRequest) {
        let items = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        self.init(
            method: request.method, url: request.url.absoluteString,
            headers: request.headerFields.map { HAR.NameValue(name: $0.name.rawName, value: $0.value) },
            queryString: items.map { HAR.NameValue(name: $0.name, value: $0.value ?? "") },
            postData: request.body.isEmpty
                ? nil : HAR.PostData(request.body, mimeType: request.headerFields[.contentType] ?? ""))
    }
}
