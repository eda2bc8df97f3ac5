import Foundation
import HTTPTypes
import OpenAPIRuntime
@_spi(Engine) import SwiftConnect

/// Converts between swift-http-types' heads, as the OpenAPI runtime hands them over, and the core's HTTP model:
/// field by field, in order, repeated fields kept.
enum OpenAPIConversion {
    /// The core's request for an operation: `baseURL` joined with the request's path and query, its fields, and
    /// its body: one the generated code can iterate again and whose known length is at most ``inMemoryLimit`` is
    /// read into memory (it is in memory already, a JSON body or `Data`, and so retries can send it again); any other
    /// (a stream, a multipart form with a file part, a large file) streams as a one-shot body, chunk by chunk as the
    /// connection takes it, with its length when known.
    static func request(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL) async throws -> ConnectRequest {
        let url = try url(for: request, baseURL: baseURL)
        var fields = HeaderFields()
        fields.reserveCapacity(request.headerFields.count)
        for field in request.headerFields {
            fields.append(HeaderField(name: HeaderField.Name(field.name.rawName), value: field.value))
        }
        var built = ConnectRequest(
            method: HTTPMethod(rawValue: request.method.rawValue), url: url, headerFields: fields)
        if let body {
            var length: Int64?
            if case .known(let known) = body.length {
                // Checked here, before a byte is read: compared with it, a body read into memory would be said to give
                // "more" or "fewer" bytes, and a streamed one would fail only when sent.
                guard known >= 0 else {
                    throw ConnectError(
                        .invalidRequest, message: "the request body declares a negative length (\(known) bytes)")
                }
                length = known
            }
            if body.iterationBehavior == .multiple, let length, length <= inMemoryLimit {
                built.body = .bytes(try await collect(body, length: length))
            } else {
                built.body = .stream(ConnectRequest.OneShotStream(body.map { Data($0) }, length: length))
            }
        }
        return built
    }

    /// The bytes of a body whose length is declared as `length`: a body that gives more or fewer is an invalid
    /// request (nothing is sent), not one cut short or sent shorter than the operation said. A body whose sequence
    /// fails is an invalid request too, its error underneath, as the core fails a streamed body that does.
    private static func collect(_ body: HTTPBody, length: Int64) async throws -> Data {
        var data = Data()
        data.reserveCapacity(Int(length))
        var isTooLong = false
        do {
            for try await chunk in body {
                guard data.count + chunk.count <= length else {
                    isTooLong = true
                    break
                }
                data.append(contentsOf: chunk)
            }
        } catch {
            // Whatever the sequence threw, its own `CancellationError` or another call's `ConnectError` too, as the
            // core fails a streamed body: the caller's own cancellation is told apart by `send`, which checks its task.
            throw ConnectError(
                .invalidRequest, message: "the request body's sequence failed: \(error)", underlyingError: error)
        }
        if isTooLong { throw wrongLength(length, "more") }
        guard data.count == length else { throw wrongLength(length, "fewer") }
        return data
    }

    private static func wrongLength(_ length: Int64, _ comparison: String) -> ConnectError {
        ConnectError(
            .invalidRequest,
            message: "the request body gave \(comparison) bytes than the \(length) its length declares")
    }

    /// The largest body read into memory so that a retry can send it again (8 MiB, as the core keeps a multipart
    /// form in memory): a larger one, or one of unknown length, streams instead of growing memory without bound.
    static let inMemoryLimit: Int64 = 8 << 20

    /// `baseURL` joined with the request's path and query: the server URL's path followed by the operation's
    /// (percent-encoding kept as given), as the OpenAPI runtime's transports join them, then the server URL's query
    /// (`?tenant=7`) followed by the operation's, as the core joins a connector's base URL and endpoint (those
    /// transports keep the operation's query alone, and drop the server URL's).
    ///
    /// The error for a URL that cannot be made shows both parts as the core shows a URL: without `user:password@`, and
    /// with the values of secret query items hidden (an API key the server URL or the operation's query carries).
    static func url(for request: HTTPRequest, baseURL: URL) throws -> URL {
        let path = request.path ?? ""
        var problem: ConnectError {
            ConnectError(
                .invalidRequest,
                message: "the operation's URL could not be made of the server URL '\(redacted(baseURL))' and the "
                    + "path '\(redacted(path: path))'")
        }
        guard var joined = URLComponents(url: baseURL, resolvingAgainstBaseURL: true),
            let operation = operationComponents(path)
        else { throw problem }
        var basePath = joined.percentEncodedPath
        if basePath.hasSuffix("/") { basePath.removeLast() }
        joined.percentEncodedPath = basePath + operation.percentEncodedPath
        // The server URL's query, then the operation's, joined by one `&` (none after a query that ends with one).
        let queries = [joined.percentEncodedQuery, operation.percentEncodedQuery].compactMap { $0 }.filter {
            !$0.isEmpty
        }
        if let first = queries.first {
            joined.percentEncodedQuery = queries.dropFirst().reduce(first) { query, next in
                query.hasSuffix("&") ? query + next : query + "&" + next
            }
        } else {
            joined.percentEncodedQuery = nil
        }
        if let fragment = operation.percentEncodedFragment { joined.percentEncodedFragment = fragment }
        guard let url = joined.url, url.host != nil else { throw problem }
        return url
    }

    /// The operation's path, query and fragment, parsed. A path is read as one of a URL with an authority, so that
    /// `//todos` (a first segment left empty, `/{tenant}/todos` with an empty tenant) stays a path: read on its own, it
    /// is a reference whose authority is `todos`, and that segment would be lost.
    private static func operationComponents(_ path: String) -> URLComponents? {
        // Only the path, the query and the fragment are read of it.
        path.hasPrefix("/") ? URLComponents(string: "http://operation" + path) : URLComponents(string: path)
    }

    /// `url` as the core's output shows it (``SwiftConnect/ConnectRequest/redactedURL``, as the tracing and logging
    /// integrations show one): without `user:password@`, with the values of secret query items and fragment pairs
    /// hidden, and with the credentials it carries hidden wherever they appear again.
    static func redacted(_ url: URL) -> String {
        ConnectRequest(url: url).redactedURL
    }

    /// The operation's path and query as ``redacted(_:)`` shows a URL; for text that is not a URL reference, only the
    /// part before its query or fragment, where a secret would be, then `…`.
    static func redacted(path: String) -> String {
        guard let reference = URL(string: path) else {
            let beforeQuery = path.prefix { $0 != "?" && $0 != "#" }
            return beforeQuery.count == path.count ? path : String(beforeQuery) + "…"
        }
        return redacted(reference)
    }

    /// Whether the operation accepts JSON only (every `Accept` value `application/json` or a `+json` type): its
    /// answer is then read whole, as the generated code reads it. Any other (`text/event-stream`, binary, none) is
    /// streamed.
    static func acceptsOnlyJSON(_ fields: HTTPFields) -> Bool {
        var sawOne = false
        for value in fields[values: .accept] {
            for item in value.split(separator: ",") {
                let type = item.split(separator: ";", maxSplits: 1).first.map {
                    $0.trimmingCharacters(in: .whitespaces)
                }
                guard let type = type?.lowercased(), type == "application/json" || type.hasSuffix("+json") else {
                    return false
                }
                sawOne = true
            }
        }
        return sawOne
    }

    /// The OpenAPI response for a response read whole (with no body when ``hasNoBody(method:status:)`` says so).
    static func response(_ answer: ConnectResponse, method: HTTPRequest.Method) -> (HTTPResponse, HTTPBody?) {
        let response = HTTPResponse(status: .init(code: answer.statusCode), headerFields: fields(of: answer.head))
        if hasNoBody(method: method, status: answer.statusCode) { return (response, nil) }
        return (response, HTTPBody(answer.data))
    }

    /// Whether the answer to `method` has no content (RFC 9110 §9.3.2, §9.3.6): the answer to `HEAD`, and a 2xx to
    /// `CONNECT` (the connection is then a tunnel). Any other has its body, a `TRACE`'s (the request as the server
    /// received it, `message/http`) and a refused `CONNECT`'s included.
    static func hasNoBody(method: HTTPRequest.Method, status: Int) -> Bool {
        method == .head || (method == .connect && (200..<300).contains(status))
    }

    /// The fields of a head, in order, repeated ones kept.
    static func fields(of head: ResponseHead) -> HTTPFields {
        var fields = HTTPFields()
        fields.reserveCapacity(head.headerFields.count)
        for field in head.headerFields {
            // An engine parses names by HTTP's token rule, which swift-http-types applies too: every name passes.
            guard let name = HTTPField.Name(field.name.rawName) else { continue }
            fields.append(HTTPField(name: name, value: field.value))
        }
        return fields
    }

    /// The OpenAPI response for the core's head, with `stream` as its body (none, the stream cancelled, when
    /// ``hasNoBody(method:status:)`` says so).
    static func response(_ head: ResponseHead, body stream: ResponseStream, method: HTTPRequest.Method) -> (
        HTTPResponse, HTTPBody?
    ) {
        let response = HTTPResponse(status: .init(code: head.status), headerFields: fields(of: head))
        if hasNoBody(method: method, status: head.status) {
            stream.cancel()
            return (response, nil)
        }
        return (response, HTTPBody(ResponseBody(stream), length: length(of: head), iterationBehavior: .single))
    }

    /// The body's length as `Content-Length` gives it, read by the core's rule (the one it holds the body to:
    /// `ResponseHead.declaredBodyLength(answering:)`); 0 for a status that has no body (1xx, 204, 304, whose field
    /// describes another answer); unknown when a content coding was decoded (the field then counts the encoded bytes)
    /// or the field is missing or not one length of digits.
    static func length(of head: ResponseHead) -> HTTPBody.Length {
        if head.status < 200 || head.status == 204 || head.status == 304 { return .known(0) }
        // A `HEAD`'s answer never gets here (`hasNoBody(method:status:)`): any other method reads the field.
        guard let count = head.declaredBodyLength(answering: nil) else { return .unknown }
        return .known(count)
    }
}

/// A response's body as the OpenAPI runtime reads it: the stream's chunks, and the end of the transfer once neither
/// the `HTTPBody` nor an iterator holds it (an undocumented answer the generated code never reads, say), so that its
/// connection is not held until the request's deadline.
final class ResponseBody: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>

    private let stream: ResponseStream

    init(_ stream: ResponseStream) {
        self.stream = stream
    }

    deinit {
        // Nothing once the body was read to its end.
        stream.cancel()
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        /// Keeps the body, and so the transfer, alive while the iterator is.
        let body: ResponseBody
        var chunks: ResponseStream.AsyncIterator

        mutating func next() async throws -> ArraySlice<UInt8>? {
            try await chunks.next().map { ArraySlice($0) }
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(body: self, chunks: stream.makeAsyncIterator())
    }
}
