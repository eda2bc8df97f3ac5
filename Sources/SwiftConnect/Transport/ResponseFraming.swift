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
    /// connection closes before a length libcurl counts. `Transfer-Encoding` overrides `Content-Length`, and a bodiless
    /// answer (HEAD, 1xx, 204, 304) has no body for it to frame.
    ///
    /// A response with one valid length costs a comparison: URLSession parsed it (`expectedContentLength`), and
    /// libcurl held the body to it.
    static func framingError(of response: HTTPURLResponse, request: URLRequest) -> ConnectError? {
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
