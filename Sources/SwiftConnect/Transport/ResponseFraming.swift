import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension URLSessionTransport {
    /// Why a response URLSession delivered as complete cannot be trusted to be, or `nil` when it can.
    ///
    /// First the rules every engine's head is held to (``ConnectError/unusableHead(_:request:head:)``): among them, a
    /// `Content-Length` that is not one length of digits (`3, 5`: two headers that disagree; `+5`, which libcurl read
    /// as 5; `5x`) is refused, as RFC 9112, 6.3 makes it an unrecoverable error and SwiftNIO's parser refuses it;
    /// libcurl went by the last header, or by the number it could read, and FoundationNetworking delivered the body as
    /// complete. The same length repeated (`5, 5`) is that length, as the RFC allows. Then libcurl's own gap: a length
    /// past 64 bits, which libcurl ignores (reading until the connection closes, then reporting success), is a body cut
    /// short: `networkConnectionLost`, as when the connection closes before a length libcurl counts; a bodiless answer
    /// (HEAD, 1xx, 204, 304) has no body for such a length to cut.
    ///
    /// A response costs a scan of its field values (``ConnectError/unusableHead(_:request:head:)``) and of its
    /// `Content-Length`.
    static func framingError(of response: HTTPURLResponse, request: URLRequest) -> ConnectError? {
        let fields = HeadFields(response)
        if let error = ConnectError.unusableHead(
            fields, request: .foundation(request), head: .foundation(response))
        {
            return error
        }
        guard response.expectedContentLength < 0, fields.transferEncoding == nil,
            let declared = fields.contentLength, DeclaredLength(declared) == .uncountable,
            !TaskHandler.hasNoBody(response, request: request)
        else { return nil }
        return ConnectError.transportFailure(
            .lengthTooLargeToCount(declared: declared, response: response), request: request)
    }
}

/// What the core's rules for a response head read of it (``ConnectError/unusableHead(_:request:head:)``), from either
/// form an engine hands over: Foundation's response or the core's head.
struct HeadFields {
    /// The status code.
    var status: Int
    /// The protocol version the status line named (`HTTP/1.0`), `nil` where the engine does not say
    /// (FoundationNetworking: `HTTPURLResponse` keeps none).
    var httpVersion: String?
    /// The `Transfer-Encoding` fields' value, repeated fields joined with `", "`.
    var transferEncoding: String?
    /// The `Content-Length` fields' value, repeated fields joined with `", "`.
    var contentLength: String?
    /// The name of the first field whose value holds a CR, LF or NUL, if any.
    var fieldWithForbiddenCharacter: String?

    init(_ response: HTTPURLResponse) {
        status = response.statusCode
        httpVersion = nil
        transferEncoding = response.value(forHTTPHeaderField: "Transfer-Encoding")
        contentLength = response.value(forHTTPHeaderField: "Content-Length")
        fieldWithForbiddenCharacter = nil
        for (name, value) in response.allHeaderFields {
            if let value = value as? String, Self.hasForbiddenCharacter(value) {
                fieldWithForbiddenCharacter = (name as? String) ?? "\(name)"
                break
            }
        }
    }

    init(_ head: ResponseHead, httpVersion: String) {
        status = head.status
        self.httpVersion = httpVersion
        transferEncoding = head.headerFields[TransferEncoding.name]
        contentLength = head.headerFields[.contentLength]
        fieldWithForbiddenCharacter = head.headerFields.first { Self.hasForbiddenCharacter($0.value) }?.name.rawName
    }

    /// Whether `value` holds a CR, LF or NUL, which RFC 9110 §5.5 makes a field value invalid with.
    static func hasForbiddenCharacter(_ value: String) -> Bool {
        value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 }
    }
}

extension ConnectError {
    /// Why a response head cannot be the answer, whatever engine read it, or `nil` when it can: the one place the core
    /// holds every engine's head to HTTP/1.1's rules that an engine's parser may let through (libcurl's lets each of
    /// them through; SwiftNIO's refuses most), checked on URLSession's paths
    /// (``URLSessionTransport/framingError(of:request:)``) and in the exchange of every ``HTTPEngine``. Each is
    /// ``Kind/badResponse``:
    /// - a CR, LF or NUL inside a field value (RFC 9110 §5.5: a recipient rejects the message or replaces them);
    /// - a `101 Switching Protocols`: the core never asks for an upgrade, so the connection would speak a protocol
    ///   nobody reads (RFC 9110 §15.2.2: a server switches only to a protocol the request named in `Upgrade`);
    /// - a `Transfer-Encoding` beside a `Content-Length`
    ///   (``framedTwice(transferEncoding:contentLength:request:head:)``);
    /// - `chunked` applied more than once (RFC 9112 §6.1 forbids it: one parser removes one layer, another two);
    /// - a `Transfer-Encoding` in an HTTP/1.0 answer, where the engine names the version (RFC 9112 §6.1: the framing
    ///   is faulty, as HTTP/1.0 has no transfer codings);
    /// - a `Content-Length` that is not one length of digits (RFC 9112 §6.3: an unrecoverable error): lengths that
    ///   disagree (`3, 5`), a sign (`+5`, `-5`), anything but digits (`5x`), nothing at all; on any answer, a bodiless
    ///   one too, as SwiftNIO's parser refuses it there. The same length repeated (`5, 5`) is that length.
    static func unusableHead(
        _ fields: HeadFields, request: ConnectResponse.StoredRequest, head: @autoclosure () -> ConnectResponse.Head
    ) -> ConnectError? {
        func badResponse(_ message: String) -> ConnectError {
            ConnectError(
                .badResponse, message: message, request: request, head: head(),
                underlyingError: URLError(.badServerResponse))
        }
        if let name = fields.fieldWithForbiddenCharacter {
            return badResponse(
                "the server's answer has a CR, LF or NUL inside the value of its field '\(HTTPHeader.shownName(name))', "
                    + "which makes the head invalid (RFC 9110, 5.5)")
        }
        if fields.status == 101 {
            return badResponse(
                "the server switched protocols (101) though the request asked for no upgrade: its answer is not HTTP "
                    + "(RFC 9110, 15.2.2)")
        }
        if let coding = fields.transferEncoding {
            if let length = fields.contentLength {
                return framedTwice(transferEncoding: coding, contentLength: length, request: request, head: head())
            }
            let chunked = coding.split(separator: ",").filter {
                $0.trimmingCharacters(in: [" ", "\t"]).caseInsensitiveCompare("chunked") == .orderedSame
            }
            if chunked.count > 1 {
                return badResponse(
                    "the server's answer applies chunked more than once (Transfer-Encoding: "
                        + "\(SingleLineText.make(coding, limit: 80))), which frames its body more than one way "
                        + "(RFC 9112, 6.1)")
            }
            if fields.httpVersion == "HTTP/1.0" {
                return badResponse(
                    "the server's HTTP/1.0 answer has a Transfer-Encoding (\(SingleLineText.make(coding, limit: 80))), "
                        + "which HTTP/1.0 does not have: its framing cannot be trusted (RFC 9112, 6.1)")
            }
        }
        if let declared = fields.contentLength, DeclaredLength(declared) == .invalid {
            return badResponse(
                "the server's answer has no single valid Content-Length (\(SingleLineText.make(declared, limit: 80))): "
                    + "its body cannot be trusted")
        }
        return nil
    }

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
