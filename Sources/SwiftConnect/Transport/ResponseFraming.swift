import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension URLSessionTransport {
    /// Why a response URLSession delivered as complete cannot be trusted to be, or `nil` when it can.
    ///
    /// RFC 9112, 6.3 makes a `Content-Length` that is not one length (`3, 5`: two headers that disagree, or a
    /// value that is not a number) an unrecoverable error. libcurl goes by the last header and FoundationNetworking
    /// delivers the body as complete, so the transport fails it with `badServerResponse`. The same length repeated
    /// (`5, 5`) is that length, as the RFC allows. A length past 64 bits, which libcurl ignores (reading until the
    /// connection closes, then reporting success), is a body cut short: `networkConnectionLost`, as when the
    /// connection closes before a length libcurl counts. A `Transfer-Encoding` beside a `Content-Length` is refused
    /// (``ConnectError/framedTwice(transferEncoding:contentLength:request:head:)``), and a bodiless answer (HEAD, 1xx,
    /// 204, 304) has no body for a length to frame.
    ///
    /// A response with one valid length costs a comparison: URLSession parsed it (`expectedContentLength`), and
    /// libcurl held the body to it.
    static func framingError(of response: HTTPURLResponse, request: URLRequest) -> ConnectError? {
        if let coding = response.value(forHTTPHeaderField: "Transfer-Encoding"),
            let length = response.value(forHTTPHeaderField: "Content-Length")
        {
            return ConnectError.framedTwice(
                transferEncoding: coding, contentLength: length, request: .foundation(request),
                head: .foundation(response))
        }
        guard response.expectedContentLength < 0,
            let declared = response.value(forHTTPHeaderField: "Content-Length"),
            response.value(forHTTPHeaderField: "Transfer-Encoding") == nil,
            !TaskHandler.hasNoBody(response, request: request)
        else { return nil }
        switch DeclaredLength(declared) {
        case .length:
            return nil
        case .uncountable:
            return ConnectError.transportFailure(
                .lengthTooLargeToCount(declared: declared, response: response), request: request)
        case .invalid:
            return ConnectError.transportFailure(
                .invalidLength(declared: declared, response: response), request: request)
        }
    }
}

extension ConnectError {
    /// An answer whose head has both a `Transfer-Encoding` and a `Content-Length`: ``Kind/badResponse``, whatever its
    /// method or status.
    ///
    /// RFC 9112 §6.1 forbids a sender both fields, and §6.3 says such a message "might indicate an attempt to perform
    /// request smuggling or response splitting and ought to be handled as an error": the two fields frame the body
    /// two ways, and a client and a proxy on its way that pick different ones read different answers.
    /// AsyncHTTPClient's parser (llhttp) refuses such a head; libcurl reads the chunks and ignores the length. The
    /// core refuses it for every engine, in one rule: on URLSession's paths
    /// (``URLSessionTransport/framingError(of:request:)``, which sees both fields in `allHeaderFields`) and in the
    /// exchange of every ``HTTPEngine``.
    static func framedTwice(
        transferEncoding: String, contentLength: String, request: ConnectResponse.StoredRequest?,
        head: ConnectResponse.Head?
    ) -> ConnectError {
        ConnectError(
            .badResponse,
            message:
                "the server's answer has both Transfer-Encoding (\(transferEncoding)) and Content-Length "
                + "(\(contentLength)), which frame its body two ways: it cannot be trusted (RFC 9112, 6.1)",
            request: request, head: head, underlyingError: URLError(.badServerResponse))
    }
}

/// What a `Content-Length` field value declares (RFC 9112, 6.3), as URLSession reports it: the values of repeated
/// headers joined by commas.
enum DeclaredLength: Equatable {
    /// One length, maybe repeated.
    case length(Int64)
    /// One length, maybe repeated, too large for a 64-bit count: libcurl ignores it and reads until the connection
    /// closes, so the bytes it delivers are never the whole body.
    case uncountable
    /// Lengths that disagree, or a value that is not a length.
    case invalid

    init(_ value: String) {
        var declared: Substring.UTF8View.SubSequence?
        for element in value.split(separator: ",", omittingEmptySubsequences: false) {
            let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
            var digits = element.utf8.drop(while: isSpace)
            while let last = digits.last, isSpace(last) { digits = digits.dropLast() }
            guard !digits.isEmpty, digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
                self = .invalid
                return
            }
            let significant = digits.drop { $0 == UInt8(ascii: "0") }
            guard declared == nil || declared?.elementsEqual(significant) == true else {
                self = .invalid
                return
            }
            declared = significant
        }
        guard let declared else {
            self = .invalid
            return
        }
        if declared.isEmpty {
            self = .length(0)
        } else if let length = Int64(String(decoding: declared, as: UTF8.self)) {
            self = .length(length)
        } else {
            self = .uncountable
        }
    }
}

@_spi(Engine)
extension ResponseHead {
    /// The body length this head declares, when its `Content-Length` counts the bytes that follow (RFC 9112 §6.3):
    /// `nil` for a content-encoded body (the field counts the encoded bytes; `identity` is no coding), beside a
    /// `Transfer-Encoding` (which overrides it: the engine read the body by its chunks), where no body follows (the
    /// answer to `HEAD`, 1xx, 204, 304), and for a field that is not one length of digits (`3, 5`, `+5`, `-0`) or is
    /// too large to count; the same length repeated (`5, 5`) is that length. The core holds a body to it
    /// (the size limit, a body cut short); an adapter that passes a length on reads it here, so that both agree.
    ///
    /// - Parameter method: The method of the request this head answers.
    /// - Returns: The number of bytes, or `nil` when the head declares none the core can trust.
    public func declaredBodyLength(answering method: String?) -> Int64? {
        let bodiless = method?.uppercased() == "HEAD" || status < 200 || status == 204 || status == 304
        if headerFields.contains(TransferEncoding.name) { return nil }
        // `identity` is no coding at all (a server may name it); any other coding leaves the length unknown here.
        if let coding = headerFields[HeaderField.Name("Content-Encoding")],
            coding.trimmingCharacters(in: .whitespaces).lowercased() != "identity"
        {
            return nil
        }
        guard !bodiless, let field = headerFields[.contentLength] else { return nil }
        // Repeated, or a list: the same value each time is that value (RFC 9112 §6.3); values that differ declare
        // nothing the core can trust, and framing them is the engine's parser's business.
        guard case .length(let length) = DeclaredLength(field) else { return nil }
        return length
    }
}
