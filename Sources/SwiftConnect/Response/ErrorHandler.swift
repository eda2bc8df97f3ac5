import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Turns a response with an error status (outside 200..<300) into a Swift error.
///
/// Backends disagree on how they report errors, so this is pluggable. Implement the usage guide's
/// ``handle(response:)``, which receives the JSON object of the body, and return the error to fail with,
/// or `nil` to treat the response as a success:
///
/// ```swift
/// struct MyBackendErrors: ErrorHandlerProtocol {
///     func handle(response: [String: Any]) -> Error? {
///         // Another shape: the default handler reads it (`nil` would make the response a success).
///         guard let code = response["code"] as? Int else { return ErrorHandler().handle(response: response) }
///         return MyBackendError(code: code)
///     }
/// }
/// let connect = Connect(middleware: ConnectMiddleware(), errorHandler: MyBackendErrors())
/// ```
///
/// For the status code, headers and raw body (to decode the body into an error type of yours), implement
/// ``handle(_:)`` as well: ``handle(response:)`` has no default, so return
/// `ErrorHandler().handle(response: response)` there. The error either returns reaches the caller as it is.
///
/// The client asks ``handle(_:)`` about every response whose status is outside 200..<300, whatever its body: empty,
/// plain text, HTML, or bytes in any charset. Its default asks ``handle(response:)`` only about a body that is a JSON
/// object (or an array holding one) of at most 64 KiB, nested at most 128 levels, and answers any other with a
/// ``ConnectError`` of kind ``ConnectError/Kind/httpStatus`` (never a success, whatever ``handle(response:)`` would
/// say of an empty object): for a backend whose errors are plain text, or larger, implement ``handle(_:)``.
///
/// The client's retry loop asks the handler about every error response before its ``RetryPolicy`` retries by
/// status: returning `nil` for, say, a 500 makes that 500 the answer, a success, and the request is not sent
/// again for it.
public protocol ErrorHandling: Sendable {
    /// Returns the error a JSON error body stands for, or `nil` to treat the response as a success.
    ///
    /// - Parameter response: The body, parsed as a JSON object.
    /// - Returns: The error to fail with, or `nil` for success.
    func handle(response: [String: Any]) -> (any Error)?

    /// Returns the error a complete error response stands for, or `nil` to treat it as a success.
    ///
    /// The default parses the body as a JSON object and asks ``handle(response:)``, completing a
    /// ``ConnectError`` it returns with the response's request, status, headers and body; a body that is not a
    /// JSON object, or is over 64 KiB or nested over 128 levels (not parsed), gives a ``ConnectError`` of kind
    /// ``ConnectError/Kind/httpStatus`` with the body kept.
    ///
    /// - Parameter response: The response, whose status is outside 200..<300.
    /// - Returns: The error to fail with, or `nil` for success.
    func handle(_ response: ConnectResponse) -> (any Error)?
}

/// The usage guide's name for ``ErrorHandling``.
public typealias ErrorHandlerProtocol = ErrorHandling

extension ErrorHandling {
    /// Parses the body as a JSON object and asks ``handle(response:)``; other bodies give an HTTP-status error.
    ///
    /// A ``ConnectError`` that ``handle(response:)`` returns gets the response's request, status, headers and
    /// body where it has none of its own (that method sees only the JSON object).
    public func handle(_ response: ConnectResponse) -> (any Error)? {
        guard let object = ErrorBody.jsonObject(response.data, contentType: response.header("Content-Type")) else {
            return ConnectError.httpStatus(response)
        }
        let error = handle(response: object)
        if let connectError = error as? ConnectError { return connectError.from(response) }
        return error
    }
}

/// The default error handler: finds the server's message in the common places.
///
/// It looks, in order, for:
/// - an RFC 7807 problem (`application/problem+json`): `title` and `detail`;
/// - the keys `msg`, `message`, `messge` (as the usage guide spells it), `error`, `err` holding a string, an
///   object holding a `message`, or a list of these (its first message: `"message": ["email is invalid"]`); an
///   OAuth 2 error (RFC 6749) gives its code and its `error_description`: `invalid_grant: The token has expired.`;
///   an object without a `message` (or `msg`, `detail`, `description`) gives its `Message` (AWS), `reason`
///   (Elasticsearch: `{"error": {"type": …, "reason": "no such index [logs]"}}`), `title` (a JSON:API error
///   without a `detail`), or the message of an `error` inside it (`{"error": {"error": {"message": …}}}`);
/// - AWS's capitalised `Message` (`{"__type": …, "Message": …}`), and its `Error` object;
/// - `errors`: a list's first message (`errors[0].message`, or `errors[0]` as a string), or, keyed by field as
///   Rails and Laravel send validation errors (`{"email": ["is invalid"]}`), each field with its first message,
///   sorted by field: `email: is invalid; name: can't be blank` (Rails' `base` without its name);
/// - `title` and `detail`, for a problem sent with another content type;
/// - validation errors keyed by field at the top level, every value a list of messages, as a Rails scaffold
///   (`render json: @user.errors`) and Django REST framework send them: as under `errors`, Django's
///   `non_field_errors` without its name.
///
/// A problem without a `detail` gives the first error of its `errors` (RFC 9457's validation example) after the
/// title: `Your request is not valid.: must be a positive integer (#/age)`; `errors` keyed by field (ASP.NET Core's
/// validation problem) gives each field with its first message, as under `errors` above.
///
/// Only text is a message: a number or a boolean (`"error": true`, `"message": 404`) is skipped. A body that is a
/// JSON array is read as its first object (`[1, {"message": "…"}]` as the object), or, with no object in it, as a
/// list of messages, as Rails sends `errors.full_messages` (`["Email can't be blank"]`: its first). A body that is a
/// JSON string (`"Invalid id"`, as Express's `res.json("Invalid id")` sends it) is the message.
///
/// A body over 64 KiB, or nested over 128 levels, is not parsed: a message is a line, and such a body is a dump. A
/// value Foundation's parser refuses though JSON allows it, a number beyond `Double`'s range (`1e400`) or a lone
/// surrogate escape (`"\ud800"`), is read as `null` or U+FFFD: the message in another field is kept, and
/// ``ErrorHandling/handle(response:)`` sees the object so.
///
/// A message found gives a ``ConnectError`` of kind ``ConnectError/Kind/serverMessage``; none gives
/// ``ConnectError/Kind/httpStatus``. Either way the error carries the status, headers and body. A short `text/plain`
/// body (up to 1 KiB, as Go's `http.Error` and many proxies send one) is no server message, but the
/// ``ConnectError/Kind/httpStatus`` error says it after the status, on one line: `the server answered 401
/// Unauthorized: Invalid token`.
///
/// ```swift
/// let connect = Connect(middleware: ConnectMiddleware(), errorHandler: ErrorHandler())
/// ```
public struct ErrorHandler: ErrorHandling {
    /// The keys searched for a message, in order.
    public var messageKeys: [String]

    /// Creates the default handler.
    ///
    /// - Parameter messageKeys: The keys to search, in order. Defaults to `msg`, `message`, `messge`, `error`,
    ///   `err`.
    public init(messageKeys: [String] = ["msg", "message", "messge", "error", "err"]) {
        self.messageKeys = messageKeys
    }

    /// The guide's entry point: the error for a JSON error body, without status or headers.
    public func handle(response: [String: Any]) -> (any Error)? {
        guard let message = message(in: response, problem: false) else {
            return ConnectError(.httpStatus, message: "the server returned an error without a message")
        }
        return ConnectError(.serverMessage, message: message)
    }

    /// The error for a complete error response: a server message with status, headers and body, or an
    /// HTTP-status error.
    public func handle(_ response: ConnectResponse) -> (any Error)? {
        let body = ErrorBody.json(response.data, contentType: response.header("Content-Type"))
        let message: String?
        if let object = body.flatMap(ErrorBody.firstObject) {
            message = self.message(in: object, problem: response.mediaType == "application/problem+json")
        } else if let list = body as? [Any] {
            // A list of messages, as Rails sends `errors.full_messages`: its first.
            message = ErrorBody.text(list)
        } else if let text = body as? String {
            // One message, as Express's `res.status(400).json("Invalid id")` sends it.
            message = ErrorBody.string(text)
        } else {
            message = nil
        }
        guard let message else { return ConnectError.httpStatus(response) }
        return ConnectError(
            .serverMessage,
            message: message,
            request: response.storedRequest,
            head: response.storedHead,
            body: response.data
        )
    }

    /// The server's message in a JSON error object, if there is one.
    func message(in object: [String: Any], problem: Bool) -> String? {
        if problem, let text = problemMessage(object) { return text }
        for key in messageKeys {
            guard let text = ErrorBody.text(object[key]) else { continue }
            // OAuth 2 (RFC 6749 §5.2): `error` is a code, `error_description` says it in words; both are kept.
            if key == "error", object[key] is String, let description = ErrorBody.string(object["error_description"]) {
                return SingleLineText.make("\(text): \(description)", limit: SingleLineText.keptLimit)
            }
            return text
        }
        for key in ErrorBody.topLevelKeys where !messageKeys.contains(key) {
            if let text = ErrorBody.text(object[key]) { return text }
        }
        if let errors = object["errors"] {
            // An object without a message of its own is a map of fields to their messages.
            let text: String? =
                if let fields = errors as? [String: Any], !ErrorBody.hasOwnMessage(fields) {
                    ErrorBody.fieldMessages(fields)
                } else {
                    ErrorBody.text(errors)
                }
            if let text { return text }
        }
        if let text = problemMessage(object) { return text }
        // Validation errors keyed by field at the top level, as a Rails scaffold (`render json: @user.errors`) and
        // Django REST framework send them: every value a list of messages.
        if !object.isEmpty, object.values.allSatisfy(ErrorBody.isMessageList) { return ErrorBody.fieldMessages(object) }
        return nil
    }

    private func problemMessage(_ object: [String: Any]) -> String? {
        let title = ErrorBody.string(object["title"])
        // FastAPI's validation errors: `"detail": [{"loc": […], "msg": "field required"}]`, read by its first message.
        // Without a detail, RFC 9457's `errors` extension, by its first error.
        let detail = ErrorBody.text(object["detail"]) ?? ErrorBody.problemError(object["errors"])
        switch (title, detail) {
        case (let title?, let detail?):
            return SingleLineText.make("\(title): \(detail)", limit: SingleLineText.keptLimit)
        case (let title?, nil): return title
        case (nil, let detail?): return detail
        default: return nil
        }
    }
}

/// Reading error bodies.
enum ErrorBody {
    /// The largest error body parsed for a server's message, in bytes, as received (64 KiB).
    ///
    /// A message is a line or two, cut to ``SingleLineText/keptLimit`` characters anyway; a larger body is a dump (a
    /// stack trace, a list of every failed record), and parsing it whole to find that line costs memory and CPU
    /// in proportion to whatever the server sends when no `maxResponseBytes` is set. 64 KiB is what others keep of
    /// an error body (``StreamingOptions/errorBodyLimit`` reads a streamed one that far): a body over it gives an
    /// HTTP-status error with the body kept, as one that is not JSON does. Nesting is bounded as the logs bound it
    /// (``Redaction/maximumJSONDepth``): a handler that walks or re-serialises the object recurses once per level.
    static let messageBodyLimit = 64 << 10

    /// The longest plain-text body taken as the error's text, in bytes: longer, it is a stack trace or a page, not a
    /// message.
    static let plainTextLimit = 1_024

    /// A short `text/plain` body, trimmed and on one line (in the charset it declares, UTF-8 by default); `nil` for
    /// another type, a longer body, one that is not text, or nothing that shows (``visibleText(_:)``).
    static func plainText(of response: ConnectResponse) -> String? {
        guard response.mediaType == "text/plain", response.data.count <= plainTextLimit else { return nil }
        let contentType = response.header("Content-Type")
        guard
            let text = unicodeText(response.data, contentType: contentType)
                ?? String(data: BodyCharset.utf8(response.data, contentType: contentType), encoding: .utf8)
        else { return nil }
        guard let visible = visibleText(text) else { return nil }
        let line = SingleLineText.make(visible)
        return line.isEmpty ? nil : line
    }

    /// `text` without the blanks and byte order marks at its ends (U+FEFF: a server that writes its strings with
    /// one sends it), or `nil` when nothing that shows is left: only white space, control characters and code points
    /// that show as nothing (Unicode's default ignorable ones: zero-width spaces and joiners, bidirectional marks,
    /// word joiners, Hangul fillers). Such a text would make an error read "Server error: ", a message of nothing.
    static func visibleText(_ text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: blanksAndByteOrderMarks)
        return trimmed.unicodeScalars.contains(where: shows) ? trimmed : nil
    }

    /// Whether `scalar` shows: not white space, a control character or a default ignorable code point.
    private static func shows(_ scalar: Unicode.Scalar) -> Bool {
        let properties = scalar.properties
        if properties.isWhitespace || properties.isDefaultIgnorableCodePoint { return false }
        return properties.generalCategory != .control
    }

    private static let blanksAndByteOrderMarks = CharacterSet.whitespacesAndNewlines.union(
        CharacterSet(charactersIn: "\u{FEFF}"))

    /// `data` read in the UTF-16 or UTF-32 that `contentType` declares (`charset=utf-16`, `utf-16le`, `utf-32be`…),
    /// without its byte order mark; `nil` for another charset, or bytes that are not in it. `utf-16` and `utf-32` name
    /// no byte order: the mark says it, else the zeros of the first character (an ASCII one, the usual case), else
    /// big-endian (RFC 2781, 4.3).
    ///
    /// A body with neither a byte order mark nor a zero byte that is valid UTF-8 is UTF-8 under a wrong label (`nil`):
    /// UTF-32 has a zero in every character, and UTF-16 text in a script without one is seldom valid UTF-8, while in
    /// the label's encoding such a body's letters pair into CJK characters.
    static func unicodeText(_ data: Data, contentType: String?) -> String? {
        guard let charset = contentType.flatMap({ MimeType(rawValue: $0).parameter("charset") }) else { return nil }
        guard charset.lowercased().contains("utf-16") || charset.lowercased().contains("utf-32") else { return nil }
        // (A UTF-16 byte order mark is not valid UTF-8, and UTF-32's has zeros.)
        if !data.contains(0), String(data: data, encoding: .utf8) != nil {
            return nil
        }
        var bytes = data[...]
        let encoding: String.Encoding
        switch charset.trimmingCharacters(in: .whitespaces).lowercased() {
        case "utf-16le": encoding = .utf16LittleEndian
        case "utf-16be": encoding = .utf16BigEndian
        case "utf-32le": encoding = .utf32LittleEndian
        case "utf-32be": encoding = .utf32BigEndian
        case "utf-16":
            if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) {
                encoding = bytes.first == 0xFF ? .utf16LittleEndian : .utf16BigEndian
                bytes = bytes.dropFirst(2)
            } else {
                encoding =
                    bytes.count >= 2 && bytes.first != 0 && bytes.dropFirst().first == 0
                    ? .utf16LittleEndian : .utf16BigEndian
            }
        case "utf-32":
            if bytes.starts(with: JSONSyntax.utf32LittleEndianMark) || bytes.starts(with: JSONSyntax.utf32BigEndianMark)
            {
                encoding = bytes.first == 0xFF ? .utf32LittleEndian : .utf32BigEndian
                bytes = bytes.dropFirst(4)
            } else {
                encoding = bytes.first != 0 ? .utf32LittleEndian : .utf32BigEndian
            }
        default:
            return nil
        }
        guard var text = String(data: Data(bytes), encoding: encoding) else { return nil }
        // The mark, when the label names the byte order too (`utf-16le` with one).
        if text.first == "\u{FEFF}" { text.removeFirst() }
        return text
    }

    /// The body as a JSON object (the first element of a JSON array that is an object), or `nil` when it is not
    /// one, or is over the bounds of ``json(_:contentType:)``.
    ///
    /// A byte order mark before the JSON is allowed: UTF-8's is skipped, and a body starting with UTF-32's or
    /// UTF-16's (big- or little-endian) is read in that encoding. UTF-32's are looked for first: little-endian,
    /// it begins with UTF-16's. Without a mark, UTF-16 and UTF-32, in either byte order, are told by where the zeros
    /// of the first character are, a blank before the JSON included. A body that is not UTF-8 is read in the
    /// single-byte charset `contentType` declares, if any (`BodyCharset`).
    static func jsonObject(_ data: Data, contentType: String?) -> [String: Any]? {
        json(data, contentType: contentType).flatMap(firstObject)
    }

    /// The object a parsed JSON body stands for: itself, or the first element of an array that is an object.
    static func firstObject(_ value: Any) -> [String: Any]? {
        // Some servers send a list of errors: its first object stands for the body.
        if let array = value as? [Any] {
            for element in array {
                if let object = element as? [String: Any] { return object }
            }
            return nil
        }
        return value as? [String: Any]
    }

    /// The body parsed as a JSON object, array or string, read as `jsonObject(_:contentType:)` reads it; `nil` for
    /// a body that is none of these, or larger than ``messageBodyLimit`` or nested deeper than
    /// ``Redaction/maximumJSONDepth``, which is not parsed. A number beyond `Double`'s range is `NSNull` in it, and a
    /// lone surrogate escape U+FFFD (``JSONSyntax/value(of:)``): Foundation refuses the whole body for either.
    static func json(_ data: Data, contentType: String?) -> Any? {
        guard data.count <= messageBodyLimit,
            let data = JSONSyntax.utf8(BodyCharset.utf8(data, contentType: contentType)),
            !JSONDepth.exceeds(data, limit: Redaction.maximumJSONDepth)
        else { return nil }
        guard let first = data.first(where: { !JSONSyntax.isWhitespace($0) }) else { return nil }
        // A value Foundation cannot hold (`1e400`, a lone `\ud800`) in a field nobody reads keeps the rest readable.
        if first == UInt8(ascii: "\"") { return JSONSyntax.value(of: data) as? String }
        guard first == UInt8(ascii: "{") || first == UInt8(ascii: "[") else { return nil }
        return JSONSyntax.value(of: data)
    }

    /// A message from a JSON value: a non-empty string, an object's `message` (or `msg`, `detail`,
    /// `description`), or the first message in an array (`"message": ["email must be an email", …]`, as NestJS
    /// validation errors send it).
    ///
    /// An object without one of these is read by the keys well-known APIs use (``fallbackKeys``): AWS's `Message`,
    /// Elasticsearch's `reason`, JSON:API's `title`, and an `error` wrapped in another. The search goes at most
    /// ``Redaction/maximumJSONDepth`` levels down: ``ErrorHandler/handle(response:)`` is public, and an object built in
    /// code is not bounded by the parse.
    ///
    /// The message is put on one line and cut to ``SingleLineText/keptLimit`` characters (errors show at most
    /// ``SingleLineText/messageLimit`` of them, secrets hidden first): it is the server's text, and it ends up in
    /// logs.
    static func text(_ value: Any?) -> String? {
        text(value, depth: 0)
    }

    private static func text(_ value: Any?, depth: Int) -> String? {
        if let string = string(value) { return string }
        // Deeper, it is no message: a line is not buried this far, and each level is a stack frame.
        guard depth < Redaction.maximumJSONDepth else { return nil }
        if let object = value as? [String: Any] {
            for key in messageKeys {
                if let text = text(object[key], depth: depth + 1) { return text }
            }
            for key in fallbackKeys {
                if let text = text(object[key], depth: depth + 1) { return text }
            }
        } else if let array = value as? [Any] {
            for element in array {
                if let text = text(element, depth: depth + 1) { return text }
            }
        }
        return nil
    }

    /// The keys of an error object's message where it has none at ``messageKeys``, as well-known APIs send them:
    /// AWS's capitalised `Message` (`{"Error": {"Code": …, "Message": …}}`), Elasticsearch's `reason`
    /// (`{"error": {"type": …, "reason": …}}`), JSON:API's `title` (an error without a `detail`), and an error
    /// wrapped in another (`{"error": {"error": {"message": …}}}`, as gateways pass an upstream's on). Not read to
    /// tell one error from a map of fields (``hasOwnMessage(_:)``): a field may be called `title` or `reason`.
    private static let fallbackKeys = ["Message", "reason", "title", "error", "Error"]

    /// The keys well-known APIs put their message under at the top level, read after ``ErrorHandler/messageKeys``:
    /// AWS's JSON protocols capitalise it (`{"__type": …, "Message": …}`), its query protocol wraps it in `Error`.
    static let topLevelKeys = ["Message", "Error"]

    /// The first error of RFC 9457's `errors` extension, with its JSON pointer if it has one:
    /// `[{"detail": "must be a positive integer", "pointer": "#/age"}]` gives `must be a positive integer (#/age)`.
    /// An object of them keyed by field, as ASP.NET Core's `ValidationProblemDetails` sends them
    /// (`{"Name": ["The Name field is required."]}`), gives each field with its first message (``fieldMessages(_:)``);
    /// one error with a message of its own, that message.
    static func problemError(_ value: Any?) -> String? {
        if let fields = value as? [String: Any] { return hasOwnMessage(fields) ? text(fields) : fieldMessages(fields) }
        guard let errors = value as? [Any] else { return nil }
        for error in errors {
            guard let message = text(error) else { continue }
            guard let object = error as? [String: Any], let pointer = string(object["pointer"]) else { return message }
            return SingleLineText.make("\(message) (\(pointer))", limit: SingleLineText.keptLimit)
        }
        return nil
    }

    /// The keys of an error object's own message, in the order ``text(_:)`` reads them.
    private static let messageKeys = ["message", "msg", "detail", "description"]

    /// Whether `object` is one error with a message of its own (a text at one of ``messageKeys``), rather than a
    /// map of fields to their messages.
    static func hasOwnMessage(_ object: [String: Any]) -> Bool {
        messageKeys.contains { string(object[$0]) != nil }
    }

    /// The messages of validation errors keyed by field, as Rails and Laravel send them
    /// (`{"email": ["is invalid", "is taken"], "name": ["can't be blank"]}`): each field with its first message,
    /// sorted by field (a JSON object has no order), joined by `; `, the fields of the record as a whole
    /// (`wholeRecordFields`) without their name: `email: is invalid; name: can't be blank`. `nil` when no field
    /// has a message.
    static func fieldMessages(_ fields: [String: Any]) -> String? {
        var result = ""
        for field in fields.keys.sorted() {
            guard let message = text(fields[field]) else { continue }
            if !result.isEmpty { result += "; " }
            let name = field.trimmingCharacters(in: .whitespacesAndNewlines)
            result += name.isEmpty || ErrorBody.wholeRecordFields.contains(name) ? message : name + ": " + message
            if result.utf8.count > SingleLineText.keptLimit * 4 { break }  // cut to the limit below anyway
        }
        return result.isEmpty ? nil : SingleLineText.make(result, limit: SingleLineText.keptLimit)
    }

    /// The fields that stand for the record as a whole, shown without their name: Rails' `base`, Django REST
    /// framework's `non_field_errors`.
    static let wholeRecordFields: Set<String> = ["base", "non_field_errors"]

    /// Whether `value` is a non-empty list of strings, as a field's validation messages are.
    static func isMessageList(_ value: Any) -> Bool {
        guard let list = value as? [Any], !list.isEmpty else { return false }
        return list.allSatisfy { $0 is String }
    }

    /// A JSON string value on one line, at most ``SingleLineText/keptLimit`` characters (what shows is cut to
    /// ``SingleLineText/messageLimit`` later); `nil` when it is not a string, or nothing that shows
    /// (``visibleText(_:)``: spaces, control characters, a byte order mark).
    static func string(_ value: Any?) -> String? {
        guard let string = value as? String, let visible = visibleText(string) else { return nil }
        let text = SingleLineText.make(visible, limit: SingleLineText.keptLimit)
        return text.isEmpty ? nil : text
    }
}

extension ConnectError {
    /// A response whose status is not three digits (``ResponseHead/statusCodes``): a malformed answer
    /// (``Kind/badResponse``), as an engine reports a status line it cannot read, not a status of the server's for the
    /// error handler.
    static func notAnHTTPStatus(_ status: Int, request: ConnectResponse.StoredRequest?) -> ConnectError {
        ConnectError(
            .badResponse, message: "the server's status \(status) is not an HTTP status (100 to 999)",
            request: request, underlyingError: URLError(.badServerResponse))
    }

    /// ``notAnHTTPStatus(_:request:)`` of a request in Foundation's form: the test kit's `FakeTransport` fails as an
    /// engine does.
    package static func notAnHTTPStatus(_ status: Int, request: URLRequest) -> ConnectError {
        notAnHTTPStatus(status, request: .foundation(request))
    }

    /// An error status with no message the handler recognised; the body is kept, and said to be only its start
    /// when it is (a download's or a stream's error body, read in part for the error handler). A short plain-text
    /// body of a 4xx or 5xx ("Invalid token") is said after the status; the kind stays ``Kind/httpStatus``: such a
    /// text is as often a proxy's or a framework's as the backend's, no message to show a user as
    /// ``Kind/serverMessage`` ones are.
    static func httpStatus(_ response: ConnectResponse) -> ConnectError {
        let status = response.statusCode
        let reason = HTTPURLResponse.localizedString(forStatusCode: status)
        let isRedirect = (300...399).contains(status)
        let redirect = isRedirect ? RedirectRules.notFollowed(response) : ""
        let cut = response.bodyCut == nil ? "" : " (only the first \(response.data.count) bytes of its body were read)"
        // Not a redirect's: its text ("Found. Redirecting to /login") is the framework's, and the `Location` is said.
        let text = status >= 400 && response.bodyCut == nil ? ErrorBody.plainText(of: response).map { ": " + $0 } : nil
        var error = ConnectError(
            .httpStatus,
            message: "the server answered \(status) \(reason)\(redirect)\(text ?? "")\(cut)",
            request: response.storedRequest,
            head: response.storedHead,
            body: response.data
        )
        if isRedirect {
            // The `Location` as it came, for a client set not to redact: the message above hides its secrets.
            let unredacted = RedirectRules.notFollowed(response, redacting: false)
            if unredacted != redirect {
                error.messageShowingSecrets = "the server answered \(status) \(reason)\(unredacted)\(cut)"
            }
        }
        return error
    }
}
