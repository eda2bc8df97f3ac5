import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension Connector {
    /// Builds the `URLRequest` this connector describes. Pure: no I/O, no shared state.
    ///
    /// - The URL is ``baseURL`` followed by ``endpoint``, with exactly one `/` between them. Each `{name}`
    ///   placeholder is replaced by its `.path` value, percent-encoded as one path segment (`a/b` → `a%2Fb`).
    ///   A value that would make its segment `.` or `..` is refused, and so is such a segment written in the
    ///   endpoint's path (`../admin`), which engines resolve differently, out of the base path. Placeholders may
    ///   sit inside a segment (`/files/{name}.json`), in the endpoint's query (`/search?q={q}`), or repeat.
    ///   Non-ASCII text written in the endpoint is percent-encoded as its UTF-8 bytes (`/café` → `/caf%C3%A9`), not
    ///   normalized.
    /// - `.query` items follow any query already in the base URL or the endpoint, in order, with every
    ///   character outside RFC 3986 *unreserved* percent-encoded (`&` → `%26`, `=` → `%3D`, `+` → `%2B`,
    ///   space → `%20`), so no value can inject another item.
    /// - The body is the `.jsonObject` (encoded with ``jsonEncoder``, `Content-Type: application/json`), the
    ///   `.form` fields (`application/x-www-form-urlencoded; charset=utf-8`), or the raw `.body`. A
    ///   `Content-Type` in ``headers`` takes precedence over these defaults; an empty or blank one names none and is
    ///   passed over, as if it were not set. One that names another `charset` than an `.encoded` body's encoder
    ///   (whose body is in the charset of its own type) fails as
    ///   ``ConnectError/InvalidRequestReason/bodyEncodingFailed(_:)``: the server would read the body wrong.
    /// - ``headers`` are set in order, a later one replacing an earlier one of the same name (ignoring case).
    ///   If the connector is an ``AuthorizedConnector`` with a token, the token's `Authorization` replaces any
    ///   in ``headers``.
    /// - ``timeout``, ``cachePolicy`` and ``method`` are copied as they are.
    ///
    /// ```swift
    /// let request = try AdvancedTodoConnector.update(userId: 1, todoId: 2, action: .update, object: todo)
    ///     .asURLRequest()
    /// // PUT https://myserver.com/users/1/todos/2?action=update, Content-Type: application/json
    /// ```
    ///
    /// - Returns: The request, ready to send.
    /// - Throws: ``ConnectError`` of kind ``ConnectError/Kind/invalidRequest`` whose
    ///   ``ConnectError/invalidRequestReason`` says what is wrong: a placeholder without a value
    ///   (`missingPathValue`), a `.path` value that is empty in the path (`?q={q}` may be empty), repeated or
    ///   unused, or that would make its path
    ///   segment `.` or `..` (`dotSegmentPathValue`, also as `%2E`), an invalid URL (`invalidURL`: also an endpoint
    ///   whose path has a `.` or `..` segment of its own, a relative ``baseURL``, such as a ``Route``'s without
    ///   one, which only a client's server completes, or a user name with an escaped colon, `ann%3Ax:pw@`, which
    ///   Basic credentials cannot carry; reported without `user:password@` and with sensitive query values hidden,
    ///   as in logs), an invalid
    ///   method, a header name that is not a token, a value with CR/LF/NUL, a `Content-Length` that is not the
    ///   body's length or a `Transfer-Encoding`, which the transport sets itself (`invalidHeader`), two bodies
    ///   (`multipleBodies`), a body on a GET, HEAD or TRACE
    ///   (`bodyNotAllowed`), a body that failed to encode (`bodyEncodingFailed`), or a `.query` item or `.form` field
    ///   with an empty name (`invalidParameter`).
    public func asURLRequest() throws -> URLRequest {
        // A relative base (a `Route` without one, `/v1`) means "the client's server": there is none here.
        if RelativeBase.isRelative(baseURL) { throw RelativeBase.noServer(endpoint: endpoint) }
        // The value's own type, not the declared one: a subclass that adopts `AuthorizedConnector` keeps its token.
        return try makeURLRequest(defaultHeaders: [], [], traits: ConnectorTraits.of(type(of: self)))
    }

    /// ``asURLRequest()``, also setting each of `defaultHeaders` (both lists, in order) that the request does
    /// not set itself: in the same pass, without Foundation's case-insensitive header lookups. `traits` are
    /// those of the connector's type (for a wrapper, of the type it wraps).
    func makeURLRequest(
        defaultHeaders first: [HTTPHeader],
        _ second: [HTTPHeader],
        traits: ConnectorTraits
    ) throws -> URLRequest {
        try makeBlueprint(defaultHeaders: first, second, traits: traits).makeRequest()
    }

    /// The parts of the request ``makeURLRequest(defaultHeaders:_:traits:)`` makes, checked: what the request
    /// is made from, and made from again for a retry.
    ///
    /// - Parameter optionsContentType: The `Content-Type` the call's or the connector's options set, which replaces
    ///   the connector's own once the request is built: a ``JSONObject`` is placed by it, so that the body is what
    ///   the request says it is.
    /// - Parameter bodyIsReplaced: Whether the caller replaces the body once the request is built (an upload's
    ///   multipart body): a `Content-Length` is then held to that body, not to the connector's.
    func makeBlueprint(
        defaultHeaders first: [HTTPHeader],
        _ second: [HTTPHeader],
        traits: ConnectorTraits,
        optionsContentType: String? = nil,
        bodyIsReplaced: Bool = false
    ) throws -> RequestBlueprint {
        let parameterList: [Parameter]
        if let object = parameters as? JSONObject {
            // Placed by method and content type, as the libraries with `[String: Any]` parameters did: the type the
            // request goes with, whoever set it (the options, the connector, then the defaults, in that rank).
            // A blank type names none (`namesAType`), at every level: it is passed over, as it is when sent.
            func isContentType(_ header: HTTPHeader) -> Bool {
                header.name.caseInsensitiveCompare("Content-Type") == .orderedSame && Self.namesAType(header.value)
            }
            let optionsType = optionsContentType.flatMap { Self.namesAType($0) ? $0 : nil }
            let contentType =
                optionsType ?? headers.last(where: isContentType)?.value
                ?? first.first(where: isContentType)?.value ?? second.first(where: isContentType)?.value
            parameterList = try object.parameters(
                method: method.rawValue, contentType: contentType, encoder: jsonEncoder)
        } else {
            parameterList = parameters?.parameterList ?? []
        }
        // A `.path` value under a secret name becomes a plain segment nothing else marks as secret: the request, and
        // every error about it, carry it to be hidden wherever they show the URL.
        let declared = Parameter.declaredSecrets(in: parameterList)
        do {
            var parts = try RequestParts(parameterList)
            var baseURL = self.baseURL
            // A client applies a connector's port itself (it resolves the connector first); this is for
            // `asURLRequest()`.
            if let port, !RelativeBase.isRelative(baseURL) {
                baseURL = try Route.url(baseURL, withPort: port)
            }
            let url = try parts.makeURL(baseURL: baseURL, endpoint: endpoint, parameters: parameterList)
            let cachePolicy = self.cachePolicy
            let timeout = self.timeout
            /// The request so far, for an error to report.
            func partialRequest(method: String = "GET", body: Data? = nil) -> URLRequest {
                RequestBlueprint(
                    url: url, cachePolicy: cachePolicy, timeout: timeout, method: method, body: body, headers: []
                ).makeRequest()
            }

            let method = self.method.rawValue
            guard HTTPHeader.isValidName(method) else {
                throw ConnectError.invalidRequest(.invalidMethod(method), request: partialRequest())
            }
            // Zero, negative or NaN would turn the deadline off without a word (libcurl does not enforce them
            // either): a silent server would then hold the request forever.
            guard timeout > 0 else {
                throw ConnectError.invalidRequest(.invalidTimeout(timeout), request: partialRequest(method: method))
            }

            let headers = self.headers
            var fields = AssembledHeaders(capacity: headers.count + 2)
            for header in headers where !Self.isBlankContentType(header) {
                try fields.set(name: header.name, value: header.value, request: partialRequest(method: method))
            }
            if traits.isAuthorized, let authorized = self as? any AuthorizedConnector,
                let token = authorized.authorizationToken
            {
                guard token.isSendable else {
                    throw token.unsendableError(request: .foundation(partialRequest(method: method)))
                }
                try fields.set(name: "Authorization", value: token.headerValue, request: partialRequest(method: method))
            }

            var body: Data?
            switch parts.body {
            case nil:
                break
            case .json(let value)?:
                body = try Self.encodedBody {
                    // A `JSONObject` in its order: encoded as any value, it would be a dictionary, in an order of its
                    // own.
                    if let object = value as? JSONObject { return try object.orderedJSON(encoder: jsonEncoder) }
                    return try JSONSyntax.encoded(value, by: jsonEncoder)
                } request: {
                    partialRequest(method: method)
                }
                fields.setIfAbsent(name: "Content-Type", value: "application/json")
                if !bodyIsReplaced, let written = body {
                    let sentType =
                        optionsContentType.flatMap { Self.namesAType($0) ? $0 : nil }
                        ?? fields.field(named: "Content-Type")?.value
                    body = try Self.jsonBody(written, sentAs: sentType) {
                        partialRequest(method: method, body: written)
                    }
                }
            case .encoded(let value, let encoder)?:
                body = try Self.encodedBody {
                    try encoder.encode(value)
                } request: {
                    partialRequest(method: method)
                }
                let contentType = encoder.contentType
                guard HTTPHeader.isSendableValue(contentType) else {
                    throw ConnectError.invalidRequest(
                        .invalidHeader(name: "Content-Type"), request: partialRequest(method: method))
                }
                if Self.namesAType(contentType) { fields.setIfAbsent(name: "Content-Type", value: contentType) }
                // The body is in the charset the encoder's own type names: sent under a type (the connector's, or the
                // options', which replaces it once built) naming another, the server would read it wrong (`Café` in
                // UTF-8 read as Latin-1 is `CafÃ©`). An upload replaces the body with one of its own.
                let optionsType = optionsContentType.flatMap { Self.namesAType($0) ? $0 : nil }
                if !bodyIsReplaced, let sentType = optionsType ?? fields.field(named: "Content-Type")?.value,
                    let written = MimeType(rawValue: contentType).parameter("charset"),
                    let sent = MimeType(rawValue: sentType).parameter("charset"),
                    !Self.namesSameCharset(written, sent)
                {
                    throw ConnectError.invalidRequest(
                        .bodyEncodingFailed(
                            "the body is written in charset "
                                + "\(SingleLineText.make(written.debugDescription, limit: 40)), "
                                + "as its encoder's Content-Type says, but the request's Content-Type names charset "
                                + "\(SingleLineText.make(sent.debugDescription, limit: 40)): give the encoder that "
                                + "Content-Type instead (XMLBodyEncoder(contentType:) writes its charset)"),
                        request: partialRequest(method: method, body: body))
                }
            case .form(var bytes)?:
                // A default's form type (the client's, a server's, a method's: `…; charset=iso-8859-1`) is the one
                // the request goes with when it names none: the body is escaped for it, not sent under UTF-8's.
                let defaultFormType = (first + second).first {
                    $0.name.caseInsensitiveCompare("Content-Type") == .orderedSame
                        && ConnectResponse.mediaType(of: $0.value) == "application/x-www-form-urlencoded"
                        && HTTPHeader.isSendableValue($0.value)
                }?.value
                fields.setIfAbsent(
                    name: "Content-Type", value: defaultFormType ?? "application/x-www-form-urlencoded; charset=utf-8")
                // Escaped as the bytes of the charset the request's type names (the options' replaces the connector's
                // once built), so that a server decoding that charset reads the text sent. An upload replaces the body
                // with a multipart one, whose fields are UTF-8: it reads the fields from this one as written.
                let optionsType = optionsContentType.flatMap { Self.namesAType($0) ? $0 : nil }
                if !bodyIsReplaced, let contentType = optionsType ?? fields.field(named: "Content-Type")?.value,
                    let encoding = try FormBodyCharset.encoding(
                        of: contentType, request: partialRequest(method: method))
                {
                    let charset = MimeType(rawValue: contentType).parameter("charset") ?? ""
                    bytes = try FormBodyCharset.reencoded(
                        bytes, as: encoding, charset: charset, request: partialRequest(method: method))
                }
                body = Data(bytes)
            case .raw(let data, let contentType)?:
                guard HTTPHeader.isSendableValue(contentType) else {
                    throw ConnectError.invalidRequest(
                        .invalidHeader(name: "Content-Type"), request: partialRequest(method: method))
                }
                body = data
                if Self.namesAType(contentType) { fields.setIfAbsent(name: "Content-Type", value: contentType) }
                // JSON written in UTF-8 (a `JSONObject`'s body, or bytes given as JSON without another charset),
                // sent under a type naming another charset.
                let mediaType = ConnectResponse.mediaType(of: contentType)
                if !bodyIsReplaced, mediaType == "application/json" || mediaType.hasSuffix("+json"),
                    Self.namesSameCharset(MimeType(rawValue: contentType).parameter("charset") ?? "utf-8", "utf-8")
                {
                    let sentType =
                        optionsContentType.flatMap { Self.namesAType($0) ? $0 : nil }
                        ?? fields.field(named: "Content-Type")?.value
                    body = try Self.jsonBody(data, sentAs: sentType) { partialRequest(method: method, body: data) }
                }
            }

            if let body, !body.isEmpty, self.method.refusesBody {
                throw ConnectError.invalidRequest(
                    .bodyNotAllowed(method: method), request: partialRequest(method: method))
            }

            for header in first where !Self.isBlankContentType(header) {
                try fields.setIfAbsent(checking: header, request: partialRequest(method: method, body: body))
            }
            for header in second where !Self.isBlankContentType(header) {
                try fields.setIfAbsent(checking: header, request: partialRequest(method: method, body: body))
            }
            // A length that disagrees with the body leaves the server waiting for bytes that never come, or reading
            // the rest of the body as the start of the next request on the connection.
            if !bodyIsReplaced, let (name, declared) = fields.field(named: "Content-Length"),
                !Self.isLength(declared, of: body)
            {
                var error = ConnectError.invalidRequest(
                    .invalidHeader(name: name), request: partialRequest(method: method, body: body))
                error.message =
                    "the header '\(name)' says \(SingleLineText.make(declared.debugDescription, limit: 40)) but the "
                    + "body has \(body?.count ?? 0) bytes: leave it out, the length is sent from the body"
                throw error
            }
            if let (name, _) = fields.field(named: TransferEncoding.name.rawName) {
                var error = ConnectError.invalidRequest(
                    .invalidHeader(name: name), request: partialRequest(method: method, body: body))
                error.message = TransferEncoding.message(name: name)
                throw error
            }
            if let (name, value) = fields.field(named: TransferCodings.name.rawName), !TransferCodings.isAllowed(value)
            {
                var error = ConnectError.invalidRequest(
                    .invalidHeader(name: name), request: partialRequest(method: method, body: body))
                error.message = TransferCodings.message(name: name, value: value)
                throw error
            }
            return RequestBlueprint(
                url: url, cachePolicy: cachePolicy, timeout: timeout, method: method, body: body,
                headers: fields.ordered, declaredSecrets: declared)
        } catch var error as ConnectError where !declared.isEmpty {
            error.declaredSecrets += declared
            throw error
        }
    }
}

extension Connector {
    /// Whether two `charset` labels name the same charset, by the labels a form body's charset is read by
    /// (`FormBodyCharset.namesSameCharset(_:_:)`): one table for both.
    static func namesSameCharset(_ first: String, _ second: String) -> Bool {
        FormBodyCharset.namesSameCharset(first, second)
    }

    /// The body `encode` makes, or its failure as ``ConnectError/InvalidRequestReason/bodyEncodingFailed(_:)``
    /// carrying the request built so far: one rule for JSON and every other body encoder.
    fileprivate static func encodedBody(_ encode: () throws -> Data, request: () -> URLRequest) throws -> Data {
        do {
            return try encode()
        } catch {
            var failure = ConnectError.invalidRequest(
                .bodyEncodingFailed(String(describing: error)), request: request())
            failure.underlyingError = error
            throw failure
        }
    }

    /// `json`, a JSON body written in UTF-8, as it reads under `sentType`, the request's `Content-Type`: as it is when
    /// that names no charset or UTF-8, or when the body is ASCII under a charset that keeps ASCII's bytes (US-ASCII,
    /// the ISO 8859 family, windows-125x, KOI8, EUC, GBK, GB18030, Big5, by their common names); under one of those,
    /// its characters beyond ASCII written as `\u` escapes, which read the same there, where UTF-8's bytes would read
    /// as other characters (`Zürich` as `ZÃ¼rich`). Any other charset (UTF-16, UTF-32, EBCDIC's, Shift_JIS, whose `\`
    /// is another character) is refused with ``ConnectError/InvalidRequestReason/bodyEncodingFailed(_:)``, whatever
    /// the body holds: even ASCII's bytes read as other characters there.
    static func jsonBody(_ json: Data, sentAs sentType: String?, request: () -> URLRequest) throws -> Data {
        guard let sentType, let charset = MimeType(rawValue: sentType).parameter("charset"),
            !namesSameCharset(charset, "utf-8")
        else { return json }
        let folded = charset.lowercased().filter { $0 != "-" && $0 != "_" }
        // Every name of a form's charsets (`cp819`, `x-cp1252`), the families that keep ASCII's bytes, and their
        // common aliases (WHATWG's Encoding labels).
        let keepsASCII =
            FormBodyCharset.isWritten(charset) || asciiKeepingCharsetAliases.contains(folded)
            || [
                "usascii", "ascii", "latin", "iso8859", "windows125", "cp125", "koi8", "euc", "gbk", "gb2312",
                "gb18030", "big5", "windows874", "tis620", "macintosh", "csisolatin", "cskoi8", "xeuc", "xgbk",
            ].contains { folded.hasPrefix($0) }
        guard keepsASCII else {
            throw ConnectError.invalidRequest(
                .bodyEncodingFailed(
                    "the JSON body is written in UTF-8, but the request's Content-Type names charset "
                        + "\(SingleLineText.make(charset.debugDescription, limit: 40)), not one known to write ASCII "
                        + "as ASCII's bytes: send it as application/json (UTF-8)"),
                request: request())
        }
        guard json.contains(where: { $0 >= 0x80 }), let text = String(data: json, encoding: .utf8) else { return json }
        var escaped = ""
        escaped.reserveCapacity(json.count + 16)
        for scalar in text.unicodeScalars {
            if scalar.isASCII {
                escaped.unicodeScalars.append(scalar)
            } else {
                for unit in String(scalar).utf16 {
                    let hex = String(unit, radix: 16)
                    escaped += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                }
            }
        }
        return Data(escaped.utf8)
    }

    /// Whether a content type (a raw body's, an encoder's, a connector header's) names one: an empty or blank one
    /// means none, and the request goes without `Content-Type` (or with the body's or a default header's; an engine
    /// may add its own, as URLSession does to a `POST`), not with an empty field that says nothing a server could use
    /// (the blanks around a value are not sent).
    static func namesAType(_ contentType: String) -> Bool {
        contentType.contains { $0 != " " && $0 != "\t" }
    }

    /// Whether `header` is a `Content-Type` that names no type (``namesAType(_:)``): set by hand (in a connector's
    /// headers, its options, a default header), it is passed over as if it were not there, so that no empty field
    /// goes out and the body's or another level's type goes instead.
    static func isBlankContentType(_ header: HTTPHeader) -> Bool {
        header.isBlankContentType
    }

    /// Whether a `Content-Length` value is the length of `body` (none counts as 0): digits, blanks around them.
    fileprivate static func isLength(_ value: String, of body: Data?) -> Bool {
        ContentLength.is(value, Int64(body?.count ?? 0))
    }
}

// MARK: - Parameters

/// The parameters of one request, sorted out: path values to substitute and the body. Query items are
/// written straight from the parameter list, after the endpoint.
struct RequestParts {
    struct PathValue {
        let key: String
        let value: String
        var isUsed = false
    }

    enum Body {
        case json(any Encodable)
        case encoded(any Encodable, any RequestBodyEncoder)
        /// The encoded `key=value&…` form, built as the fields arrive.
        case form([UInt8])
        case raw(Data, contentType: String)
    }

    /// A handful at most, so a linear scan beats hashing.
    private(set) var pathValues: [PathValue] = []
    private(set) var body: Body?

    /// Sorts `parameters` out, checking path values and that there is at most one body.
    init(_ parameters: [Parameter]) throws {
        for parameter in parameters {
            switch parameter {
            case .query(let key, _):
                // `?=v` names nothing a server could look up: most likely a name left empty by mistake. One that is
                // meant is written in the endpoint (`/search?=v`), as it goes.
                guard !key.isEmpty else {
                    throw Self.emptyName(
                        "the .query item has an empty name (it would go out as ?=value); write one that is meant in "
                            + "the endpoint")
                }
            case .path(let key, let value):
                guard !pathValues.contains(where: { $0.key == key }) else {
                    throw ConnectError.invalidRequest(.duplicatePathParameter(key: key))
                }
                pathValues.append(PathValue(key: key, value: value))
            case .jsonObject(let value):
                guard body == nil else { throw ConnectError.invalidRequest(.multipleBodies) }
                body = .json(value)
            case .form(let key, let value):
                // `=v` in a form names nothing either, as a `.query` item's empty name; one that is meant goes in a
                // `.body` of its own.
                guard !key.isEmpty else {
                    throw Self.emptyName(
                        "the .form field has an empty name (it would go out as =value); send a .body to mean one")
                }
                // Form fields use the same strict encoding as query items, with a space written as `+`
                // (the HTML form convention); a literal `+` is `%2B`, so decoding is unambiguous.
                var bytes: [UInt8]
                switch body {
                case nil:
                    bytes = []
                    bytes.reserveCapacity(key.utf8.count + value.utf8.count + 16)
                case .form(let existing)?:
                    bytes = existing
                    body = nil  // leave `bytes` the only reference, so appending does not copy
                    bytes.append(0x26)  // &
                default:
                    throw ConnectError.invalidRequest(.multipleBodies)
                }
                PercentEncoding.append(key, to: &bytes, spaceAsPlus: true)
                bytes.append(0x3D)  // =
                PercentEncoding.append(value, to: &bytes, spaceAsPlus: true)
                body = .form(bytes)
            case .body(let data, let contentType):
                guard body == nil else { throw ConnectError.invalidRequest(.multipleBodies) }
                body = .raw(data, contentType: contentType)
            case .encoded(let value, let encoder):
                guard body == nil else { throw ConnectError.invalidRequest(.multipleBodies) }
                body = .encoded(value, encoder)
            }
        }
    }

    /// The error for a `.query` item or `.form` field whose name is empty, saying `why`.
    private static func emptyName(_ why: String) -> ConnectError {
        ConnectError.invalidRequest(.invalidParameter(key: "", reason: why))
    }

    // MARK: URL

    /// Joins the base URL and the expanded endpoint, then appends the query items.
    mutating func makeURL(baseURL: URL, endpoint: String, parameters: [Parameter]) throws -> URL {
        var base = baseURL.absoluteString
        // A user name in the base URL is checked here too, as the wire check does, for `asURLRequest()`'s callers;
        // only a URL with an `@` has one.
        let userProblem = base.utf8.contains(UInt8(ascii: "@")) ? BasicUserinfo.problem(of: baseURL) : nil
        if let problem = Self.baseProblem(base) ?? Self.endpointProblem(endpoint) ?? userProblem {
            var error = InvalidURLContext(base: base, endpoint: endpoint).error()
            error.message += ": " + problem
            throw error
        }
        // A host written with escapes goes as the name it stands for, on every engine (`EscapedHost`).
        switch EscapedHost.plainURL(base) {
        case nil: break
        case .success(let plain)?: base = plain
        case .failure(let problem)?:
            var error = InvalidURLContext(base: base, endpoint: endpoint).error()
            error.message += ": " + problem.text
            throw error
        }
        var endpoint = endpoint
        endpoint.makeContiguousUTF8()
        var out: [UInt8] = []
        out.reserveCapacity(base.utf8.count + endpoint.utf8.count + 64)

        // The base URL up to its own query or fragment, which are put back after the endpoint's path.
        let baseUTF8 = base.utf8
        let baseDelimiter = baseUTF8.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
        out.append(contentsOf: baseUTF8[..<(baseDelimiter ?? baseUTF8.endIndex)])

        let invalidURL = InvalidURLContext(base: base, endpoint: endpoint)
        var marks = EndpointMarks()
        let expanded: Bool? = try endpoint.utf8.withContiguousStorageIfAvailable { bytes in
            try expand(bytes, into: &out, marks: &marks, invalidURL: invalidURL)
            return true
        }
        if expanded == nil {  // Unreachable after makeContiguousUTF8(); kept for safety.
            try Array(endpoint.utf8).withUnsafeBufferPointer { bytes in
                try expand(bytes, into: &out, marks: &marks, invalidURL: invalidURL)
            }
        }
        if let unused = pathValues.first(where: { !$0.isUsed }) {
            throw ConnectError.invalidRequest(.unusedPathParameter(key: unused.key))
        }

        // The endpoint's fragment wins over the base URL's; either goes last.
        var fragment: [UInt8] = []
        if let start = marks.fragment {
            fragment = Array(out[start...])
            out.removeSubrange(start...)
        } else if let delimiter = baseDelimiter, let hash = baseUTF8[delimiter...].firstIndex(of: UInt8(ascii: "#")) {
            fragment = Array(baseUTF8[hash...])
        }

        // Query: the base URL's, then the endpoint's, then the `.query` items, joined by one `&` (none after a
        // query that already ends with one, such as a base URL's `?key=k&`).
        let ampersand = UInt8(ascii: "&")
        var hasQuery = false
        if let start = marks.query {
            if out.count == start + 1 { out.removeLast() } else { hasQuery = true }  // drop a lone "?"
        }
        if let delimiter = baseDelimiter, baseUTF8[delimiter] == UInt8(ascii: "?") {
            let queryEnd = baseUTF8[delimiter...].firstIndex(of: UInt8(ascii: "#")) ?? baseUTF8.endIndex
            let baseQuery = baseUTF8[baseUTF8.index(after: delimiter)..<queryEnd]
            if !baseQuery.isEmpty {
                if let start = marks.query, hasQuery {
                    var joined = Array(baseQuery)
                    if joined.last != ampersand { joined.append(ampersand) }
                    out.insert(contentsOf: joined, at: start + 1)
                } else {
                    out.append(UInt8(ascii: "?"))
                    out.append(contentsOf: baseQuery)
                }
                hasQuery = true
            }
        }
        for case .query(let key, let value) in parameters {
            if !hasQuery {
                out.append(UInt8(ascii: "?"))
            } else if out.last != ampersand {
                out.append(ampersand)
            }
            hasQuery = true
            PercentEncoding.append(key, to: &out)
            out.append(UInt8(ascii: "="))
            PercentEncoding.append(value, to: &out)
        }
        out.append(contentsOf: fragment)

        let string = String(decoding: out, as: UTF8.self)
        guard let url = URL(string: string), url.scheme != nil else {
            throw ConnectError.invalidRequest(.invalidURL(Redaction.urlText(string)))
        }
        return url
    }

    /// Why a base URL cannot be joined with an endpoint, or `nil`: it names no host (`https://`, `https:`,
    /// `mailto:`…), so the endpoint, or a `.path` value in it, would become the host; its port is outside
    /// 1...65535 (Foundation parses `:99999`; the transport would only fail with an unexplained "bad URL"); or its
    /// path has a `.` or `..` segment (`/api/../admin`, `%2E` read as a dot), which the engines resolve differently. A
    /// `file:` URL is let through: ``Connector/asURLRequest()`` and the client treat it as relative first.
    static func baseProblem(_ base: String) -> String? {
        // On UTF-8 bytes, not Characters: an absolute URL string is ASCII, and this runs for every request.
        let bytes = Array(base.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else {
            return "the base URL has no scheme and no host"
        }
        let scheme = bytes[..<colon]
        if scheme.count == 4, zip(scheme, "file".utf8).allSatisfy({ $0 | 0x20 == $1 }) { return nil }
        let rest = bytes[(colon + 1)...]
        guard rest.starts(with: "//".utf8) else { return "the base URL has no host" }
        let afterSlashes = rest.dropFirst(2)
        var authority = afterSlashes.prefix {
            $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#")
        }
        // Joined as written, a `.` or `..` segment would be resolved by URLSession before sending and by the server
        // after other engines sent it: refused, as in a ServerConfiguration's base path.
        let path = afterSlashes[authority.endIndex...].prefix { $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        if path.split(separator: UInt8(ascii: "/")).contains(where: PercentEncoding.isDotSegment) {
            return "the base URL's path has a '.' or '..' segment, which engines resolve differently: write the path "
                + "it stands for"
        }
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) { authority = authority[(at + 1)...] }
        let host: ArraySlice<UInt8>
        let afterHost: ArraySlice<UInt8>
        if authority.first == UInt8(ascii: "[") {
            let bracketed = authority.prefix { $0 != UInt8(ascii: "]") }
            host = bracketed.dropFirst()
            afterHost = authority[bracketed.endIndex...].dropFirst()
        } else {
            host = authority.prefix { $0 != UInt8(ascii: ":") }
            afterHost = authority[host.endIndex...]
        }
        if host.isEmpty { return "the base URL has no host" }
        // An empty port (`host:`) means the scheme's default.
        if afterHost.count > 1 {
            let port = String(decoding: afterHost.dropFirst(), as: UTF8.self)
            guard let number = Int(port), (1...65_535).contains(number) else {
                return "the base URL's port \(port) is not in 1...65535"
            }
        }
        return nil
    }

    /// Why an endpoint cannot be joined to a base URL, or `nil`: it is a whole URL (`https://other.example/x`),
    /// which would otherwise be sent to the base URL's server as a path.
    static func endpointProblem(_ endpoint: String) -> String? {
        var sawScheme = false
        for byte in endpoint.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
                sawScheme = true
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."):
                guard sawScheme else { return nil }
            case UInt8(ascii: ":"):
                guard sawScheme,
                    endpoint.utf8.dropFirst(endpoint.utf8.prefix { $0 != UInt8(ascii: ":") }.count + 1)
                        .starts(with: "//".utf8)
                else { return nil }
                return "the endpoint is a whole URL: put the server in the base URL and the path in the endpoint"
            default:
                return nil
            }
        }
        return nil
    }

    /// What an `invalidURL` error reports: the base URL and the endpoint as written, secrets hidden (errors are
    /// printed and logged).
    struct InvalidURLContext {
        let base: String
        let endpoint: String

        func error() -> ConnectError {
            ConnectError.invalidRequest(.invalidURL(shown))
        }

        /// The base URL and the endpoint joined as the URL is, with one `/` between them (`…/v1/` and `/x` show as
        /// `…/v1/x`, not `…/v1//x`); next to a query or fragment of the base URL's own, which the endpoint's path
        /// would go before, as `base + endpoint`. Each is redacted on its own, as it was written.
        private var shown: String {
            let base = Redaction.urlText(base)
            let endpoint = Redaction.urlText(endpoint)
            if base.contains("?") || base.contains("#") { return base + " + " + endpoint }
            return URLJoin.joined(base: base, endpoint: endpoint, keepsSchemeSlashes: true)
        }
    }

    /// Where the endpoint's literal `?` and `#` landed in the output buffer.
    struct EndpointMarks {
        var query: Int?
        var fragment: Int?
    }

    /// Appends the endpoint to `out` (which holds the base URL), joining them with exactly one slash and
    /// replacing each `{placeholder}`, in one pass over the endpoint's UTF-8. The join is `URLJoin`'s rule, written
    /// here on bytes; a change to one belongs in the other.
    private mutating func expand(
        _ endpoint: UnsafeBufferPointer<UInt8>,
        into out: inout [UInt8],
        marks: inout EndpointMarks,
        invalidURL: InvalidURLContext
    ) throws {
        let slash = UInt8(ascii: "/")
        let count = endpoint.count
        var index = 0
        while index < count, endpoint[index] == slash { index += 1 }

        // Join: unless the endpoint has no path at all ("", "?a=1"), the base loses its trailing slashes and
        // gets exactly one. The slashes of "scheme://" or "file:///" are never removed; any other colon before
        // them (an empty port, `/v1:`) is ordinary text, so the endpoint cannot be read as its port.
        let hasPath = index > 0 || (count > 0 && endpoint[0] != UInt8(ascii: "?") && endpoint[0] != UInt8(ascii: "#"))
        if hasPath {
            var end = out.count
            while end > 0, out[end - 1] == slash { end -= 1 }
            let schemeEnd = (out.firstIndex(of: UInt8(ascii: ":")) ?? -1) + 1
            if end != schemeEnd {
                out.removeSubrange(end...)
                out.append(slash)
            }
        }

        let literal = PercentEncoding.endpointLiteral
        // The path segment being written: where it starts in `out`, and the first placeholder in it (an index in
        // `pathValues`), whose value may make it a dot-segment. Only a segment with a placeholder is checked.
        var segmentStart = out.count
        var segmentPlaceholder: Int?
        while index < count {
            let byte = endpoint[index]
            switch byte {
            case UInt8(ascii: "{"):
                let nameStart = index + 1
                var nameEnd = nameStart
                while nameEnd < count, endpoint[nameEnd] != UInt8(ascii: "}") {
                    switch endpoint[nameEnd] {
                    case UInt8(ascii: "{"), slash, UInt8(ascii: "?"), UInt8(ascii: "#"): throw invalidURL.error()
                    default: nameEnd += 1
                    }
                }
                guard nameEnd < count, nameEnd > nameStart else { throw invalidURL.error() }
                let name = UnsafeBufferPointer(rebasing: endpoint[nameStart..<nameEnd])
                guard let match = pathValues.firstIndex(where: { $0.key.utf8.elementsEqual(name) }) else {
                    throw ConnectError.invalidRequest(
                        .missingPathValue(placeholder: String(decoding: name, as: UTF8.self)))
                }
                pathValues[match].isUsed = true
                // In the path (not in the endpoint's query or fragment, where `?q=` is a legitimate value).
                if marks.query == nil && marks.fragment == nil {
                    guard !pathValues[match].value.isEmpty else {
                        throw ConnectError.invalidRequest(.emptyPathValue(key: pathValues[match].key))
                    }
                    if segmentPlaceholder == nil { segmentPlaceholder = match }
                }
                PercentEncoding.appendPathSegment(pathValues[match].value, to: &out)
                index = nameEnd + 1
            case slash where marks.query == nil && marks.fragment == nil:
                try checkSegment(out, from: segmentStart, placeholder: segmentPlaceholder, invalidURL: invalidURL)
                out.append(byte)
                index += 1
                segmentStart = out.count
                segmentPlaceholder = nil
            case UInt8(ascii: "?") where marks.query == nil && marks.fragment == nil:
                try checkSegment(out, from: segmentStart, placeholder: segmentPlaceholder, invalidURL: invalidURL)
                segmentPlaceholder = nil
                marks.query = out.count
                out.append(byte)
                index += 1
            case UInt8(ascii: "#") where marks.fragment == nil:
                try checkSegment(out, from: segmentStart, placeholder: segmentPlaceholder, invalidURL: invalidURL)
                segmentPlaceholder = nil
                marks.fragment = out.count
                out.append(byte)
                index += 1
            case UInt8(ascii: "%"):
                guard index + 2 < count,
                    PercentEncoding.isHexDigit(endpoint[index + 1]),
                    PercentEncoding.isHexDigit(endpoint[index + 2])
                else { throw invalidURL.error() }
                out.append(contentsOf: endpoint[index...(index + 2)])
                index += 3
            case UInt8(ascii: "["), UInt8(ascii: "]"):
                // Brackets, a query convention (`filter[status]=open`, `ids[]=1`), are escaped as `URL(string:)`
                // escapes them on current Apple OSes: they mean something only in a host, which an endpoint has not.
                PercentEncoding.appendEscape(byte, to: &out)
                index += 1
            case 0x80...:
                // Non-ASCII text (`/café`, `?q=é`) goes as its UTF-8 bytes percent-encoded, as a path value does and
                // as `URL(string:)` encodes it on current Apple OSes: the bytes written, not normalized. No byte of it
                // is ASCII, so none can be read as a delimiter, and a `%` already written stays as it is.
                PercentEncoding.appendEscape(byte, to: &out)
                index += 1
            default:
                guard literal.contains(byte) else {
                    var error = invalidURL.error()
                    if byte == UInt8(ascii: " ") {
                        // Most likely a typo in the endpoint's own text; when meant, it is written as an escape.
                        error.message += ": the endpoint holds a space (write %20 if one is meant)"
                    }
                    throw error
                }
                out.append(byte)
                index += 1
            }
        }
        try checkSegment(out, from: segmentStart, placeholder: segmentPlaceholder, invalidURL: invalidURL)
    }

    /// Throws when the path segment `out[start...]` of the endpoint is a dot-segment (`.` or `..`, `%2E` or not):
    /// servers and proxies that normalise URLs would resolve it to another path. One that holds the value of
    /// `pathValues[placeholder]` is that value's error; one written in the endpoint is an invalid URL: `URLSession`
    /// resolves it before sending (`/api/v2/../admin` goes as `/api/admin`, out of the base path) and other engines
    /// send it as written, so that the path the server sees would depend on the engine.
    private func checkSegment(_ out: [UInt8], from start: Int, placeholder: Int?, invalidURL: InvalidURLContext) throws
    {
        guard PercentEncoding.isDotSegment(out[start...]) else { return }
        if let placeholder {
            throw ConnectError.invalidRequest(.dotSegmentPathValue(key: pathValues[placeholder].key))
        }
        var error = invalidURL.error()
        error.message +=
            ": the endpoint's path has a '.' or '..' segment, which URLSession resolves away (out of the base path) "
            + "and other engines send as written: write the path it stands for"
        throw error
    }
}

// MARK: - Headers

/// The request's header fields while they are assembled: unique names (ignoring case), in first-set order.
struct AssembledHeaders {
    private var fields: [(name: String, value: String)] = []

    init(capacity: Int) {
        fields.reserveCapacity(capacity)
    }

    /// Checks and sets a field, replacing any with the same name (ignoring case).
    mutating func set(name: String, value: String, request: @autoclosure () -> URLRequest) throws {
        guard HTTPHeader.isValidName(name), HTTPHeader.isSendableValue(value) else {
            throw Self.invalidHeaderError(name: name, value: value, request: request())
        }
        if let index = fields.firstIndex(where: { HTTPHeader.asciiCaseInsensitiveEquals($0.name, name) }) {
            fields[index] = (name, value)
        } else {
            fields.append((name, value))
        }
    }

    /// The field named `name` (ignoring case), as it was set.
    func field(named name: String) -> (name: String, value: String)? {
        fields.first { HTTPHeader.asciiCaseInsensitiveEquals($0.name, name) }
    }

    /// Sets a field unless one with the same name (ignoring case) is already set.
    mutating func setIfAbsent(name: String, value: String) {
        guard !fields.contains(where: { HTTPHeader.asciiCaseInsensitiveEquals($0.name, name) }) else { return }
        fields.append((name, value))
    }

    /// Checks `header` and sets it unless a field with the same name (ignoring case) is already set.
    mutating func setIfAbsent(checking header: HTTPHeader, request: @autoclosure () -> URLRequest) throws {
        guard HTTPHeader.isValidName(header.name), HTTPHeader.isSendableValue(header.value) else {
            throw Self.invalidHeaderError(name: header.name, value: header.value, request: request())
        }
        setIfAbsent(name: header.name, value: header.value)
    }

    /// The error for a header whose name or value cannot be sent, saying which; the value is not repeated (it
    /// may be a secret).
    private static func invalidHeaderError(name: String, value: String, request: URLRequest) -> ConnectError {
        let shown = HTTPHeader.shownName(name)
        var error = ConnectError.invalidRequest(.invalidHeader(name: shown), request: request)
        if !HTTPHeader.isValidName(name) {
            error.message =
                "the header name \(SingleLineText.make(shown.debugDescription, limit: 100)) is not an RFC 9110 token "
                + "(letters, digits and !#$%&'*+-.^_`|~ only)"
        } else if let message = HTTPHeader.unsendableValueMessage(name: name, value: value) {
            error.message = message
        }
        return error
    }

    /// The fields in the order they were first set, each with the name and value it was last set with.
    var ordered: [(name: String, value: String)] { fields }
}

extension HTTPHeader {
    /// Whether this is a `Content-Type` that names no type (empty or blanks only): set by hand at any level, it is
    /// passed over as if it were not there (`Connector.isBlankContentType(_:)` for a connector's).
    var isBlankContentType: Bool {
        value.allSatisfy { $0 == " " || $0 == "\t" } && HTTPHeader.asciiCaseInsensitiveEquals(name, "Content-Type")
    }
}

/// Charset labels, folded as `Connector.jsonBody(_:sentAs:request:)` folds them (lower case, no `-` or `_`), that name
/// a charset keeping ASCII's bytes under no prefix it knows: US-ASCII's `cp367`, Latin-2's `l2`, the Korean, Chinese
/// and Mac ones.
private let asciiKeepingCharsetAliases: Set<String> = [
    "cp367", "ibm367", "l2", "l3", "l4", "l5", "l6", "l9", "cp936", "cp949", "cp950", "ksc56011987", "ksc5601",
    "windows949", "xmacroman", "xmaccyrillic", "xxbig5", "cp866", "ibm866",
]
