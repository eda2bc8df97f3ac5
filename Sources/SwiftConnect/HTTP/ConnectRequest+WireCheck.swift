import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension ConnectRequest {
    /// Why this request cannot go on the wire as it is, or `nil`: the checks every request meets just before an
    /// engine sends it, however it was made (a connector, a ``ConnectRequest`` of the caller's, a middleware's
    /// change), so that a connector's build-time rules hold for all of them.
    ///
    /// - a method that is not an RFC 9110 token (`GET / HTTP/1.1\r\n…` would be written into the request line);
    /// - a body (in memory, a stream or a file) on a GET or a HEAD, where it has no meaning (RFC 9110 9.3.1, 9.3.2):
    ///   many servers drop it, URLSession refuses a GET's and sends a HEAD without its body (lost, the call a
    ///   success); or on a TRACE, which must not carry one (RFC 9110 9.3.8);
    /// - a header field whose name is not a token or whose value has a control character other than tab (CR, LF,
    ///   NUL…) or DEL, or text that is not ASCII, which engines send differently (`HTTPHeader.isSendableValue(_:)`);
    /// - a `Content-Length` that is not the length of the body: a larger one leaves the server waiting for bytes
    ///   that never come, a smaller one cuts the body and leaves its rest to be read as the next request on the
    ///   connection. A body sent from a file (`bodyFile`) is checked when its file is opened to be sent
    ///   (``contentLengthProblem(bodyLength:)``), a stream of unknown length by the core as it is read;
    /// - a `Transfer-Encoding` field, whatever the body: the engine frames the body itself (see `TransferEncoding`);
    /// - a `TE` field other than `TE: trailers`: the answer's transfer codings are the connection's, which the engine
    ///   negotiates, and HTTP/2 forbids any other value (see `TransferCodings`);
    /// - more than one `Host` field, or one whose value is a list (`a, b`): it names no one server, RFC 9112 §3.2 has a
    ///   server answer 400, and a proxy and the server behind it may each pick another (`RequestHost`); one `Host`
    ///   goes out as set (a virtual host behind an address);
    /// - a host written with escapes that make no host name (`localhos%74%2F`): decoded, as URLSession decodes it,
    ///   it would send the request elsewhere (`EscapedHost`; one that makes a name goes as that name);
    /// - a user name in the URL whose escapes decode to a colon (`ann%3Ax:pw@`): sent as Basic credentials
    ///   (`ann:x:pw`), it would be split at that colon and read as another user; or a user info whose escapes decode
    ///   to a control character (`pw%0A`), which RFC 7617 forbids as well (`BasicUserinfo`);
    /// - a body stream that announces a length below 0: it would go out as a `Content-Length` no server reads as a
    ///   length, and a transport that does not read the body would answer it as if nothing were wrong.
    ///
    /// The other connection-specific fields (`Connection`, `Keep-Alive`, `Proxy-Connection`, `Upgrade`) are not
    /// refused: they mean something over HTTP/1.1 (`Connection: close`), where every engine sends them as set, and
    /// over HTTP/2, which forbids them (RFC 9113 §8.2.2), each engine's codec leaves them out (libcurl's, SwiftNIO's).
    ///
    /// - Parameter bodyFile: The file the body is sent from, if any.
    /// - Returns: The error to fail the call with, or `nil`.
    func wireProblem(bodyFile: URL?) -> ConnectError? {
        if !HTTPHeader.isValidName(method.rawValue) {
            return ConnectError.invalidRequest(.invalidMethod(method.rawValue), sent: self)
        }
        if method.refusesBody, body.isPresent || bodyFile != nil {
            var error = ConnectError.invalidRequest(.bodyNotAllowed(method: method.rawValue), sent: self)
            // The code URLSession fails a GET's body with, for code that reads it.
            if method == .get { error.underlyingError = URLError(.dataLengthExceedsMaximum) }
            return error
        }
        if let invalid = headerFields.first(where: { !$0.name.isValid || !HTTPHeader.isSendableValue($0.value) }) {
            var error = ConnectError.invalidRequest(
                .invalidHeader(name: HTTPHeader.shownName(invalid.name.rawName)), sent: self)
            if invalid.name.isValid,
                let message = HTTPHeader.unsendableValueMessage(name: invalid.name.rawName, value: invalid.value)
            {
                error.message = message
            }
            return error
        }
        if case .stream(let stream) = body, let length = stream.length, length < 0 {
            return ConnectError.invalidRequest(
                .bodyEncodingFailed(
                    "the body's stream announces \(length) bytes: a length counts bytes, nil for one not known"),
                sent: self)
        }
        if let field = headerFields.first(where: { $0.name == TransferEncoding.name }) {
            var error = ConnectError.invalidRequest(.invalidHeader(name: field.name.rawName), sent: self)
            error.message = TransferEncoding.message(name: field.name.rawName)
            return error
        }
        if let field = headerFields.first(where: {
            $0.name == TransferCodings.name && !TransferCodings.isAllowed($0.value)
        }) {
            var error = ConnectError.invalidRequest(.invalidHeader(name: field.name.rawName), sent: self)
            error.message = TransferCodings.message(name: field.name.rawName, value: field.value)
            return error
        }
        if let problem = RequestHost.problem(in: headerFields) {
            var error = ConnectError.invalidRequest(.invalidHeader(name: problem.name), sent: self)
            error.message = problem.message
            return error
        }
        if case .failure(let problem)? = EscapedHost.plainName(of: url) {
            var error = ConnectError.invalidRequest(.invalidURL(Redaction.urlText(url.absoluteString)), sent: self)
            error.message += ": " + problem.text
            return error
        }
        if let problem = BasicUserinfo.problem(of: url) {
            var error = ConnectError.invalidRequest(.invalidURL(Redaction.urlText(url.absoluteString)), sent: self)
            error.message += ": " + problem
            return error
        }
        guard bodyFile == nil else { return nil }
        let length: Int64
        switch body {
        case .none: length = 0
        case .bytes(let data): length = Int64(data.count)
        case .stream(let stream):
            guard let announced = stream.length else {
                // A stream of unknown length is held to a `Content-Length` its caller set, as it is read (the
                // exchange announces it to the engine): one that is not a length frames nothing.
                guard let declared = headerFields[.contentLength], ContentLength.value(of: declared) == nil else {
                    return nil
                }
                var error = ConnectError.invalidRequest(
                    .invalidHeader(name: HeaderField.Name.contentLength.rawName), sent: self)
                error.message =
                    "the header 'Content-Length' says \(SingleLineText.make(declared.debugDescription, limit: 40)), "
                    + "which is not a length: leave it out, a stream of unknown length is sent in chunks"
                return error
            }
            length = announced
        }
        return contentLengthProblem(bodyLength: length)
    }

    /// Why this request's `Content-Length`, if any, cannot frame a body of `length` bytes, or `nil`: checked by
    /// ``wireProblem(bodyFile:)`` for a body in memory or a stream of announced length, and by the exchange for a
    /// body sent from a file, once it knows the file's length.
    func contentLengthProblem(bodyLength length: Int64) -> ConnectError? {
        guard let declared = headerFields[.contentLength], !ContentLength.is(declared, length) else { return nil }
        var error = ConnectError.invalidRequest(
            .invalidHeader(name: HeaderField.Name.contentLength.rawName), sent: self)
        error.message =
            "the header 'Content-Length' says \(SingleLineText.make(declared.debugDescription, limit: 40)) but the "
            + "body has \(length) bytes: leave it out, the length is sent from the body"
        return error
    }
}

extension ConnectRequest {
    /// The length a one-shot body of this request is held to: the stream's own, else a `Content-Length` its caller
    /// set (the wire check makes sure it is one); `nil` when neither says one. Every engine's exchange, the fake
    /// transport and a recording hold the body to it alike.
    ///
    /// - Parameter stream: The request's one-shot body.
    /// - Returns: The length, or `nil`.
    package func announcedLength(of stream: OneShotStream) -> Int64? {
        stream.length ?? headerFields[.contentLength].flatMap { ContentLength.value(of: $0) }
    }
}

/// Reading a `Content-Length` value.
enum ContentLength {
    /// Whether `value` says `length`: digits, with blanks around them allowed.
    static func `is`(_ value: String, _ length: Int64) -> Bool {
        Self.value(of: value) == length
    }

    /// The length `value` says: digits, with blanks around them allowed; `nil` for anything else.
    static func value(of value: String) -> Int64? {
        var digits = Substring(value)
        while let first = digits.first, first == " " || first == "\t" { digits.removeFirst() }
        while let last = digits.last, last == " " || last == "\t" { digits.removeLast() }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int64(digits)
    }
}

/// A request's `Transfer-Encoding` field, which no request may set: the engine frames the body itself
/// (`Content-Length`, or chunks for a body of unknown length). Set by hand, `gzip` announces a coding the body does
/// not have, `chunked` on a request without a body leaves the connection waiting for chunks until the deadline, and
/// HTTP/2 forbids the field (RFC 9113 §8.2.2).
enum TransferEncoding {
    static let name: HeaderField.Name = "Transfer-Encoding"

    /// Why a request with the field `name` is refused.
    static func message(name: String) -> String {
        "the header '\(name)' frames the body, which the transport does itself (a body of unknown length is sent in "
            + "chunks): leave it out"
    }
}

/// A request's `TE` field, the transfer codings it accepts in the answer (RFC 9110 §10.1.4): hop by hop (over HTTP/1.1
/// it must be named in `Connection` as well), and the connection's codings are the engine's to negotiate. Only
/// `TE: trailers` may be set (gRPC sends it), the one value HTTP/2 allows (RFC 9113 §8.2.2). Another value (`gzip`)
/// went out over HTTP/1.1 as set, while over HTTP/2 SwiftNIO's codec failed the stream (AsyncHTTPClient) and libcurl
/// left the field out (URLSession on Linux): refused on every engine alike, before anything is sent.
enum TransferCodings {
    static let name: HeaderField.Name = "TE"

    /// Whether `value` is `trailers`, blanks around it allowed: in lower case, as HTTP/2 writes it (SwiftNIO's codec
    /// refuses `Trailers`).
    static func isAllowed(_ value: String) -> Bool {
        value.trimmingCharacters(in: [" ", "\t"]) == "trailers"
    }

    /// Why a request with the field `name` set to `value` is refused.
    static func message(name: String, value: String) -> String {
        "the header '\(name)' asks for the transfer codings \(SingleLineText.make(value.debugDescription, limit: 40)), "
            + "which the transport negotiates itself (HTTP/2 allows only 'trailers', in lower case): leave it out, or set "
            + "it to 'trailers'"
    }
}

/// A request's `Host` field, which a caller may set to name a virtual host behind the URL's address: one field, one
/// host (RFC 9112 §3.2: `uri-host [":" port]`). Two fields, or a list in one, name no one server: a server answers 400,
/// engines send them differently (URLSession joins them into one list, SwiftNIO writes each line), and a proxy and the
/// server behind it may each read another one, the ground of request smuggling.
enum RequestHost {
    static let name: HeaderField.Name = "Host"

    /// The name of the field at fault, as written, and why, when `fields` hold more than one `Host` or one that is a
    /// list; `nil` otherwise.
    static func problem(in fields: HeaderFields) -> (name: String, message: String)? {
        var found: HeaderField?
        for field in fields where field.name == name {
            if found != nil {
                return (
                    field.name.rawName,
                    "the request has more than one '\(field.name.rawName)' header, which names no one server (a "
                        + "server answers 400, a proxy and the server behind it may each take another): set one"
                )
            }
            if field.value.contains(",") {
                return (
                    field.name.rawName,
                    "the header '\(field.name.rawName)' is a list, which names no one server (a server answers 400, a "
                        + "proxy and the server behind it may each take another): set one host, with its port if any"
                )
            }
            found = field
        }
        return nil
    }
}

/// The user name of a URL's user info, which every engine sends as `Authorization: Basic` (user name, colon,
/// password, decoded).
enum BasicUserinfo {
    /// `url`'s user name and password, decoded (no password: empty), or `nil` when it names no user or its user info
    /// decodes to no UTF-8 text: what every engine sends as `Authorization: Basic`.
    static func credentials(of url: URL) -> (user: String, password: String)? {
        let (escapedUser, escapedPassword) = escaped(of: url)
        guard let user = escapedUser?.removingPercentEncoding else { return nil }
        return (user, escapedPassword?.removingPercentEncoding ?? "")
    }

    /// `url`'s user name and password as written (escaped). Read through `URLComponents`, not
    /// `URL.user(percentEncoded:)`, which needs macOS 13, iOS 16, tvOS 16 and watchOS 9, newer than the package's
    /// oldest systems; decoded here with `removingPercentEncoding`, which reads escapes as UTF-8 on every platform.
    private static func escaped(of url: URL) -> (user: String?, password: String?) {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        return (components?.percentEncodedUser, components?.percentEncodedPassword)
    }

    /// Why `url`'s user info cannot be sent as Basic credentials, or `nil`: its user name, decoded, holds a colon (an
    /// escaped one, `%3A`: a plain one ends the user name). RFC 7617 forbids one in the user-id: the server splits the
    /// credentials at the first colon and would read another user, with the rest of the name as the password, as
    /// ``AuthorizationToken/basic(username:password:)`` refuses too. Or its user name or password, decoded, holds a
    /// control character (`pw%0A`), which RFC 7617 forbids as well: sent base64-encoded, it would be rejected by the
    /// server for a character no one sees. One rule for both: ``BasicCredentials``.
    ///
    /// Or its user name or password holds escapes that decode to no UTF-8 text (`p%E4ss`, ISO-8859-1's `ä`): Foundation
    /// reads no decoded value then, and the engines would send other credentials than the URL's (`user:` with no
    /// password, no `Authorization` at all, or libcurl's raw bytes), for a `401` nobody could explain.
    static func problem(of url: URL) -> String? {
        let (escapedUser, escapedPassword) = escaped(of: url)
        if (escapedUser != nil && escapedUser?.removingPercentEncoding == nil)
            || (escapedPassword != nil && escapedPassword?.removingPercentEncoding == nil)
        {
            return "the URL's user name or password holds escapes that decode to no UTF-8 text (such as %E4 for an "
                + "ISO-8859-1 'ä'): write them as UTF-8 escapes (%C3%A4), which Basic credentials are sent in"
        }
        guard let (user, password) = credentials(of: url) else { return nil }
        switch BasicCredentials.problem(username: user, password: password) {
        case nil:
            return nil
        case .colonInUsername:
            return "the URL's user name holds a colon (%3A), which Basic credentials cannot carry (RFC 7617): the "
                + "server would read the name up to it as the user and the rest as the password"
        case .controlCharacter:
            return "the URL's user name or password holds an escaped control character (such as %0A), which Basic "
                + "credentials cannot carry (RFC 7617)"
        }
    }
}
