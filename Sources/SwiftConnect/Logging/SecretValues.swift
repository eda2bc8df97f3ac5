import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The secret values one request carried, to hide wherever they show up again: in a response body that echoes
/// the request, in a server's error message ("invalid token abc…"), in an underlying error's text.
///
/// Redaction by name (``Redaction``) hides a field called `Authorization` or `password`; it cannot see the same
/// value under another name, as `{"url": "…?access_token=abc…"}` or `"bad credentials for amy:hunter22"`.
/// This type finds the values by name in the request, once, and then hides them by value in any text.
///
/// What counts as a secret value:
/// - the value of each sensitive header (``HTTPHeader/isSensitive(name:)``), and the credential after its
///   scheme (`Bearer abc…` gives `abc…`); for `Basic`, the base64 text, `user:password` and the password;
///   for `Cookie`, each cookie's value that is a secret's (``isSecretCookie(name:value:)``: a session's, not
///   `consent=true`);
/// - the password of a URL's `user:password@`, and `user:password`; for a URL written without `//`
///   (`amy:pw@api.example.com`, whose `amy` Foundation reads as the scheme), what lies between its first `:` and `@`;
/// - the values of sensitive query items and fragment pairs (`?access_token=`, `#id_token=`), and the token of a path
///   shape that carries one (``Redaction/pathTokens(in:)``: a Telegram bot's, a webhook's);
/// - the values of sensitive fields of the body: JSON (at any depth; every string or number under a sensitive
///   key), URL-encoded forms, multipart forms and XML (every text and attribute value inside an element named
///   like a secret, and the value of an attribute named like one).
///
/// Each value is also hidden in the forms an echo writes it in: percent-encoded (`%2B`, and `+` for a space as
/// forms write it) and JSON-escaped (`\/`, `\"`).
///
/// Short values: a value of fewer than ``minimumLength`` characters is not hidden by value (a 3-character
/// secret is guessed in moments anyway, and hiding `abc` or `123` everywhere would garble ordinary text);
/// one of fewer than ``anywhereLength`` characters is hidden only where it stands as a whole word, not inside
/// longer words. By-name redaction still hides short values in their own fields. A username is not a secret:
/// it names an account without opening it, and is shown, unless there is no password: an API key sent as the username
/// (`https://sk_live_…@`, `Basic base64(key:)`) is the credential.
package struct SecretValues: Sendable, Equatable {
    /// Values of at least ``anywhereLength`` characters, in every form, longest first: hidden wherever found.
    package private(set) var anywhere: [String] = []
    /// Shorter values, in every form, longest first: hidden where they stand as a whole word.
    private(set) var wholeWords: [String] = []

    /// Values shorter than this are not hidden by value.
    package static let minimumLength = 4
    /// Values shorter than this are hidden only as whole words.
    static let anywhereLength = 6

    /// No values.
    init() {}

    /// The secret values of `request`, or none.
    package init(of request: URLRequest?) {
        guard let request else {
            self.init()
            return
        }
        self.init(
            fields: (request.allHTTPHeaderFields ?? [:]).map { ($0.key, $0.value) }, url: request.url,
            body: request.httpBody, contentType: request.value(forHTTPHeaderField: "Content-Type"))
    }

    /// The secret values of the core's `request`, read from its model: no `URLRequest` is made.
    package init(of request: ConnectRequest) {
        self.init(
            fields: request.headerFields.map { ($0.name.rawName, $0.value) }, url: request.url, body: request.httpBody,
            contentType: request.headerFields[.contentType])
        if !request.declaredSecrets.isEmpty { self = union(SecretValues(values: request.declaredSecrets)) }
    }

    /// The secret values of an engine's request head: its header fields and the query of its path.
    init(of head: RequestHead) {
        self.init(
            fields: head.headerFields.map { ($0.name.rawName, $0.value) }, url: head.url, body: nil, contentType: nil)
    }

    /// The secret values of a request's header fields, URL and body.
    init(fields: [(name: String, value: String)], url: URL?, body: Data?, contentType: String?) {
        var found: [String] = []
        for (name, value) in fields
        where HTTPHeader.isSensitive(name: name) || Redaction.schemeCredential(in: value) != nil {
            // A field named like a secret, or one whose value reads as credentials (`X-Auth: Bearer …`).
            found += Self.headerSecrets(value, name: name)
        }
        if let url, let components = URLComponents(url: url, resolvingAgainstBaseURL: false) {
            if let password = components.password, !password.isEmpty {
                // As sent: the engine turns `user:password@` into `Authorization: Basic base64(user:password)`.
                let pair = (components.user ?? "") + ":" + password
                found += [password, pair, Data(pair.utf8).base64EncodedString()]
            } else if let user = components.user, !user.isEmpty {
                // A username without a password is the credential (an API key, `https://sk_live_…@`), sent as
                // `Basic base64(user:)`.
                found += [user, user + ":", Data((user + ":").utf8).base64EncodedString()]
            }
            if components.percentEncodedHost == nil, let text = components.string,
                let range = Redaction.credentialsWithoutAuthority(in: text[...])
            {
                // Written without `//` (`amy:pw@api.example.com`): what Foundation took for the path's start.
                found += Self.credentialsWithoutAuthority(String(text[range]))
            }
            for part in [components.percentEncodedQuery, components.percentEncodedFragment].compactMap({ $0 }) {
                found += Self.formSecrets(part)
            }
            // A token the path carries in a segment (a Telegram bot's, a webhook's).
            found += Redaction.pathTokens(in: components.percentEncodedPath).map(\.value)
            // A session in a path parameter (`/app;jsessionid=…`).
            for parameters in Redaction.pathParameters(components.percentEncodedPath[...]) {
                found += Self.formSecrets(parameters)
            }
        }
        if let body, !body.isEmpty {
            found += Self.bodySecrets(body, contentType: contentType)
        }
        self.init(values: found)
    }

    /// The secret values of `route`, which the request it makes carries: those of its headers, the options' headers
    /// and its credential, of its base URL and the query of its endpoint, and of its parameters
    /// (``Parameter/secretValues``).
    init(of route: Route) {
        var fields = (route.headers + route.options.headers).map { (name: $0.name, value: $0.value) }
        if let token = route.authorizationToken { fields.append((name: "Authorization", value: token.headerValue)) }
        self.init(fields: fields, url: route.baseURL, body: nil, contentType: nil)
        var found = (route.parameters?.parameterList ?? []).flatMap(\.secretValues)
        if let mark = route.endpoint.firstIndex(of: "?") {
            // The query and a fragment after it, each `name=value` pairs.
            for part in route.endpoint[route.endpoint.index(after: mark)...].split(separator: "#") {
                found += Self.formSecrets(String(part))
            }
        }
        self = union(SecretValues(values: found))
    }

    /// The secrets a response hands out in its header fields (a login's `X-Auth-Token`, a `Set-Cookie`, an
    /// `X-Amz-Security-Token`), to hide wherever else what shows the response quotes them (its body, an error's
    /// message, another field): the value of each field named like a secret (``HTTPHeader/isSensitive(name:)``) as a
    /// request's header gives them, and of each field whose value reads as credentials (`X-Upstream: Bearer …`); for
    /// `Set-Cookie`, each cookie's value (its attributes, such as `Expires`, are not secret).
    init(handedOutIn fields: HeaderFields) {
        self.init(values: Self.values(handedOutIn: fields))
    }

    /// The values ``init(handedOutIn:)`` hides, as the fields give them: for a recording, which hides them in the
    /// exchanges after the one that handed them out too.
    ///
    /// - Parameter fields: A response's header fields.
    /// - Returns: The secret values, in the fields' order.
    package static func values(handedOutIn fields: HeaderFields) -> [String] {
        var found: [String] = []
        for field in fields {
            let name = field.name.rawName
            if name.lowercased().hasPrefix("set-cookie") {
                found += Self.setCookieValues(field.value)
            } else if HTTPHeader.isSensitive(name: name) || Redaction.schemeCredential(in: field.value) != nil {
                found += Self.headerSecrets(field.value, name: name)
            }
        }
        return found
    }

    /// The value of each cookie a `Set-Cookie` field sets (`sid=abc; Path=/` gives `abc`); fields joined with a comma
    /// give each one's, and the comma inside an `Expires` date starts no cookie (what follows it has no `name=`).
    private static func setCookieValues(_ value: String) -> [String] {
        value.split(separator: ",").compactMap { piece in
            let pair = piece.prefix { $0 != ";" }
            guard let equals = pair.firstIndex(of: "=") else { return nil }
            let name = pair[..<equals].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, HTTPHeader.isValidName(name) else { return nil }
            let cookie = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            // A quoted cookie value (RFC 6265 §4.1.1) without its quotes.
            let value =
                cookie.count >= 2 && cookie.hasPrefix("\"") && cookie.hasSuffix("\"")
                ? String(cookie.dropFirst().dropLast()) : cookie
            return isSecretCookie(name: name, value: value) ? value : nil
        }
    }

    /// Whether a cookie's value is hidden wherever else it shows: its name is a secret's (`sessionid`, `auth_token`),
    /// or its value reads as a credential (``Redaction/readsAsCredential(_:)``: one word with a digit, or of 20
    /// characters or more, as session identifiers are). A preference's `cookie_consent=true` or `theme=dark` is not:
    /// hiding `true` wherever it stood as a word garbled every JSON body shown beside it (`"enabled": <redacted>`).
    static func isSecretCookie(name: String, value: String) -> Bool {
        // `cookie` in a cookie's name says nothing (`cookie_consent`): the name is judged without it.
        let named = name.replacingOccurrences(of: "cookie", with: "", options: .caseInsensitive)
        return (!named.isEmpty && HTTPHeader.isSensitive(name: named)) || Redaction.readsAsCredential(value)
    }

    /// The given values, with the forms they take in echoes.
    package init(values: [String]) {
        var long = Set<String>()
        var short = Set<String>()
        for value in values {
            let trimmed = value.trimmingCharacters(in: .whitespaces)
            guard trimmed.count >= Self.minimumLength else { continue }
            for form in Self.forms(of: trimmed) {
                if form.count >= Self.anywhereLength { long.insert(form) } else { short.insert(form) }
            }
        }
        anywhere = long.sorted(by: Self.longestFirst)
        wholeWords = short.sorted(by: Self.longestFirst)
    }

    /// Whether there is nothing to hide.
    package var isEmpty: Bool { anywhere.isEmpty && wholeWords.isEmpty }

    /// The UTF-8 length of the longest value, in any form: how far past a cut a value that starts before it can
    /// reach.
    var longestLength: Int {
        max(anywhere.lazy.map(\.utf8.count).max() ?? 0, wholeWords.lazy.map(\.utf8.count).max() ?? 0)
    }

    /// These values and those of `other`.
    package func union(_ other: SecretValues) -> SecretValues {
        guard !other.isEmpty else { return self }
        guard !isEmpty else { return other }
        var result = SecretValues()
        result.anywhere = Array(Set(anywhere + other.anywhere)).sorted(by: Self.longestFirst)
        result.wholeWords = Array(Set(wholeWords + other.wholeWords)).sorted(by: Self.longestFirst)
        return result
    }

    /// `text` with every value replaced by ``Redaction/placeholder``. Longer values go first, so a value that
    /// contains another is hidden whole.
    package func hiding(in text: String) -> String {
        guard !isEmpty, !text.isEmpty else { return text }
        var result = text
        // A value with `%XX` escapes is found whatever the case of their hex digits (RFC 3986 §2.1: `%2f` and `%2F`
        // are one octet), as an echo that re-encodes it writes them.
        let hasEscapes = result.utf8.contains(UInt8(ascii: "%"))
        for value in anywhere {
            if hasEscapes, Self.hasEscape(value) {
                result = Self.replacingEscaped(value, in: result, wholeWords: false)
            } else if result.contains(value) {
                result = result.replacingOccurrences(of: value, with: Redaction.placeholder)
            }
        }
        for value in wholeWords {
            result =
                hasEscapes && Self.hasEscape(value)
                ? Self.replacingEscaped(value, in: result, wholeWords: true)
                : Self.replacingWholeWords(value, in: result)
        }
        return result
    }

    // MARK: - Finding the values

    /// The secrets of one sensitive header's value.
    private static func headerSecrets(_ value: String, name: String) -> [String] {
        var found = [value]
        // Repeated fields joined into one (a `URLRequest` joins them with a comma, and a space on Apple platforms):
        // the credentials of each too. A credential holds no comma (RFC 9110 token68, a cookie value).
        let items = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        if items.count > 1 {
            for item in items where !item.isEmpty { found += headerSecrets(item, name: name) }
            return found
        }
        if HTTPHeader.asciiCaseInsensitiveEquals(name, "Cookie") {
            for pair in value.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { continue }
                let cookie = String(parts[1]).trimmingCharacters(in: .whitespaces)
                let cookieName = String(parts[0]).trimmingCharacters(in: .whitespaces)
                if isSecretCookie(name: cookieName, value: cookie) { found.append(cookie) }
            }
            return found
        }
        // `Scheme credentials`, as `Bearer abc…` or `Basic dXNlcjpwYXNz`.
        let words = value.split(separator: " ", maxSplits: 1)
        guard words.count == 2 else { return found + authParamSecret(value) }
        let credentials = String(words[1]).trimmingCharacters(in: .whitespaces)
        found.append(credentials)
        found += authParamSecret(credentials)
        if words[0].lowercased() == "basic", let data = Data(base64Encoded: credentials),
            let pair = String(data: data, encoding: .utf8)
        {
            found.append(pair)
            if let colon = pair.firstIndex(of: ":") {
                let password = pair[pair.index(after: colon)...]
                // Without a password, the username is the credential (an API key, as Stripe's).
                found.append(String(password.isEmpty ? pair[..<colon] : password))
            }
        }
        return found
    }

    /// The value of an auth-param (`name=value` or `name="value"`, one item of a credential such as AWS Signature
    /// Version 4's `Signature=…` or OAuth 1.0a's `oauth_token="…"`) whose name is a secret's
    /// (``HTTPHeader/isSensitive(name:)``) or a Digest credential's `response`, without its quotes; none for another
    /// (`SignedHeaders`, `realm`) or for text that is no auth-param.
    private static func authParamSecret(_ item: String) -> [String] {
        guard let equals = item.firstIndex(of: "="), !item.contains(" ") else { return [] }
        let name = String(item[..<equals])
        // A Digest credential's `response` (RFC 7616) is the proof of the password for its nonce.
        guard HTTPHeader.isValidName(name),
            HTTPHeader.isSensitive(name: name) || HTTPHeader.asciiCaseInsensitiveEquals(name, "response")
        else { return [] }
        var value = item[item.index(after: equals)...]
        if value.count >= 2, value.first == "\"", value.last == "\"" { value = value.dropFirst().dropLast() }
        return value.isEmpty ? [] : [String(value)]
    }

    /// The secrets of the credentials of a URL written without `//` (``Redaction/credentialsWithoutAuthority(in:)``):
    /// the password, or `user:password` and the password (`https:amy:pw@host`), each as written and decoded.
    private static func credentialsWithoutAuthority(_ credentials: String) -> [String] {
        var found = [credentials]
        if let colon = credentials.firstIndex(of: ":") {
            found.append(String(credentials[credentials.index(after: colon)...]))
        }
        return found + found.compactMap { $0.removingPercentEncoding }
    }

    /// The values of sensitive names in a percent-encoded query, fragment or form: each as sent and decoded.
    package static func formSecrets(_ text: String) -> [String] {
        Redaction.secretItems(in: text).flatMap { item in
            // As a standard reader takes the value, and as one that ends it at a `;` or `?` does (the server may).
            [item.value, item.shortValue].flatMap { range in
                [String(text[range]), Redaction.formDecoded(text[range])]
            }
        }
    }

    /// The values of sensitive fields of a request body.
    static func bodySecrets(_ body: Data, contentType: String?) -> [String] {
        let type = contentType.map(ConnectResponse.mediaType(of:)) ?? ""
        if type.hasPrefix("application/x-www-form-urlencoded") {
            return String(data: body, encoding: .utf8).map(formSecrets) ?? []
        }
        if type.hasPrefix("multipart/"), let contentType {
            // Decoded leniently: a binary file part (an image) must not hide the text fields beside it.
            let text = String(decoding: body, as: UTF8.self)
            var found: [String] = []
            // The secret fields of each part that is JSON (an upload's metadata, a batch request's body).
            for part in Redaction.jsonParts(of: text, contentType: contentType) {
                collectJSONSecrets(part.json, underSensitiveKey: false, into: &found)
            }
            if type.hasPrefix("multipart/form-data") {
                return found + Redaction.sensitiveMultipartContents(text, contentType: contentType)
            }
            return found + httpMessageSecrets(text)
        }
        if Redaction.carriesHTTPMessages(mediaType: type) {
            return httpMessageSecrets(String(decoding: body, as: UTF8.self))
        }
        // Only a plain-text body is read as text here: a binary or JSON upload is not copied for it on every output.
        if let text = Redaction.plainText(of: body, contentType: contentType),
            Redaction.plainTextCredential(in: text, contentType: contentType) != nil
        {
            // Credentials posted as text (`Basic …`): the secrets of an `Authorization` value of that text.
            return headerSecrets(text.trimmingCharacters(in: .whitespacesAndNewlines), name: "Authorization")
        }
        let start = body.starts(with: [0xEF, 0xBB, 0xBF]) ? body.dropFirst(3) : body
        // The first character after white space, as JSON allows it and as redaction by name looks.
        let first = start.first { !Self.jsonWhitespace.contains($0) }
        if !type.contains("json"), type.contains("xml") || first == UInt8(ascii: "<"),
            let text = String(data: BodyCharset.utf8(body, contentType: contentType), encoding: .utf8)
        {
            return XMLRedaction.secretValues(in: text)
        }
        guard type.contains("json") || first == UInt8(ascii: "{") || first == UInt8(ascii: "["),
            !JSONDepth.exceeds(body, limit: Redaction.maximumJSONDepth),
            let json = try? JSONSerialization.jsonObject(with: Data(start), options: [.fragmentsAllowed])
        else { return [] }
        var found: [String] = []
        collectJSONSecrets(json, underSensitiveKey: false, into: &found)
        return found
    }

    /// The secrets of the HTTP messages a batch carries (``Redaction/carriesHTTPMessages(mediaType:)``): those of each
    /// sensitive header line, as of an outer field, and of the sensitive query items of each request line's target.
    private static func httpMessageSecrets(_ text: String) -> [String] {
        var found: [String] = []
        _ = Redaction.httpMessageLines(
            text,
            field: { name, value in
                if HTTPHeader.isSensitive(name: name) { found += headerSecrets(value, name: name) }
                return value
            },
            target: { target in
                if let mark = target.firstIndex(where: { $0 == "?" || $0 == "#" }) {
                    found += formSecrets(target[target.index(after: mark)...].replacingOccurrences(of: "#", with: "&"))
                }
                return target
            },
            other: { $0 })
        return found
    }

    /// JSON's white space: space, tab, line feed, carriage return.
    private static let jsonWhitespace: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]

    /// Every string and number under a sensitive key, at any depth.
    private static func collectJSONSecrets(_ value: Any, underSensitiveKey: Bool, into found: inout [String]) {
        if let object = value as? [String: Any] {
            for (key, child) in object {
                let sensitive = Redaction.isSensitiveField(key) || Redaction.isNamedSecretValue(key, in: object)
                collectJSONSecrets(child, underSensitiveKey: underSensitiveKey || sensitive, into: &found)
                // A GraphQL document's inline secret arguments (`login(password: "…")`).
                if !sensitive { found += Redaction.graphQLSecrets(ofMember: key, child) }
            }
        } else if let array = value as? [Any] {
            for child in array { collectJSONSecrets(child, underSensitiveKey: underSensitiveKey, into: &found) }
        } else if let string = value as? String, !underSensitiveKey, Redaction.isJSONWebToken(string) {
            // A token whatever its name (`"access": "eyJ…"`).
            found.append(string)
        } else if underSensitiveKey {
            if let string = value as? String {
                found.append(string)
            } else if let number = value as? NSNumber, !(value is Bool) {
                found.append(number.stringValue)
            }
        }
    }

    // MARK: - Forms and matching

    /// `value` as sent, percent-encoded (strictly, and as a form writes a space) and JSON-escaped.
    private static func forms(of value: String) -> Set<String> {
        var forms: Set<String> = [value]
        if let encoded = value.addingPercentEncoding(withAllowedCharacters: strictlyUnreserved) {
            forms.insert(encoded)
            forms.insert(encoded.replacingOccurrences(of: "%20", with: "+"))
        }
        if let data = try? JSONSerialization.data(withJSONObject: [value], options: []),
            let array = String(data: data, encoding: .utf8), array.count >= 4
        {
            // `["…"]`: the escaped string is between the first two and the last two characters.
            // Writers differ on `/`: one form with it escaped, one without.
            let unslashed = String(array.dropFirst(2).dropLast(2)).replacingOccurrences(of: "\\/", with: "/")
            forms.insert(unslashed)
            forms.insert(unslashed.replacingOccurrences(of: "/", with: "\\/"))
        }
        return forms.filter { !$0.isEmpty }
    }

    /// Letters, digits and `-._~`: what RFC 3986 never needs to escape.
    private static let strictlyUnreserved: CharacterSet = {
        var set = CharacterSet()
        set.insert(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return set
    }()

    private static func longestFirst(_ a: String, _ b: String) -> Bool {
        a.utf8.count != b.utf8.count ? a.utf8.count > b.utf8.count : a < b
    }

    /// `text` with each occurrence of `value` that is not part of a longer word replaced.
    private static func replacingWholeWords(_ value: String, in text: String) -> String {
        guard text.contains(value) else { return text }
        var result = ""
        var rest = text[...]
        while let range = rest.range(of: value) {
            let before = range.lowerBound > rest.startIndex ? rest[rest.index(before: range.lowerBound)] : nil
            let after = range.upperBound < rest.endIndex ? rest[range.upperBound] : nil
            let isWord = !isWordCharacter(before) && !isWordCharacter(after)
            result += rest[..<range.lowerBound]
            result += isWord ? Redaction.placeholder : String(rest[range])
            rest = rest[range.upperBound...]
        }
        return result + rest
    }

    /// Whether `value` holds a `%XX` escape.
    private static func hasEscape(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        return bytes.indices.contains { index in
            bytes[index] == UInt8(ascii: "%") && index + 2 < bytes.count && isHexDigit(bytes[index + 1])
                && isHexDigit(bytes[index + 2])
        }
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
            UInt8(ascii: "A")...UInt8(ascii: "F"):
            true
        default: false
        }
    }

    /// `text` with each occurrence of `value` replaced, the hex digits of `value`'s `%XX` escapes matched in either
    /// case and every other byte as it is; with `wholeWords`, only an occurrence that is not part of a longer word.
    ///
    /// Compared byte by byte: `value` is UTF-8 text, so a match starts and ends where characters do.
    private static func replacingEscaped(_ value: String, in text: String, wholeWords: Bool) -> String {
        let pattern = Array(value.utf8)
        let bytes = Array(text.utf8)
        guard !pattern.isEmpty, bytes.count >= pattern.count else { return text }
        // Which bytes of `pattern` are the hex digits of an escape.
        var folds = [Bool](repeating: false, count: pattern.count)
        var index = 0
        while index < pattern.count {
            if pattern[index] == UInt8(ascii: "%"), index + 2 < pattern.count, isHexDigit(pattern[index + 1]),
                isHexDigit(pattern[index + 2])
            {
                folds[index + 1] = true
                folds[index + 2] = true
                index += 3
            } else {
                index += 1
            }
        }
        func matches(at start: Int) -> Bool {
            for offset in 0..<pattern.count where bytes[start + offset] != pattern[offset] {
                // Hex digits alike but for case: a letter's ASCII case bit (0x20) is the only difference.
                guard folds[offset], isHexDigit(bytes[start + offset]),
                    bytes[start + offset] | 0x20 == pattern[offset] | 0x20
                else { return false }
            }
            return true
        }
        func isWholeWord(from start: Int, to end: Int) -> Bool {
            let before = String(decoding: bytes[max(0, start - 4)..<start], as: UTF8.self).unicodeScalars.last
            let after = String(decoding: bytes[end..<min(bytes.count, end + 4)], as: UTF8.self).unicodeScalars.first
            return !isWordCharacter(before.map(Character.init)) && !isWordCharacter(after.map(Character.init))
        }
        var result: [UInt8] = []
        var copied = 0
        var start = 0
        while start + pattern.count <= bytes.count {
            let end = start + pattern.count
            if matches(at: start), !wholeWords || isWholeWord(from: start, to: end) {
                result += bytes[copied..<start]
                result += Redaction.placeholder.utf8
                copied = end
                start = end
            } else {
                start += 1
            }
        }
        guard copied > 0 else { return text }
        result += bytes[copied...]
        return String(decoding: result, as: UTF8.self)
    }

    /// Whether `character` is a letter or a digit (which would make a match part of a longer word).
    private static func isWordCharacter(_ character: Character?) -> Bool {
        guard let character else { return false }
        return character.isLetter || character.isNumber
    }
}
