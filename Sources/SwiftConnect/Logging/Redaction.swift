import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Hides secrets in what SwiftConnect logs: header values, query values and body fields that look like
/// credentials. Used by `debugResponse` output and ``cURLCommand(for:redactingSecrets:)``.
package enum Redaction {
    /// What a hidden value is replaced with.
    package static let placeholder = "<redacted>"

    /// Whether a query item or body field with this name holds a secret: by the same list of fragments
    /// (``HTTPHeader/sensitiveNameFragments``) as a header name.
    static func isSensitiveField(_ name: String) -> Bool {
        HTTPHeader.isSensitive(name: name)
    }

    /// The header value to show: the value, the placeholder for a sensitive header, or for a header whose value
    /// is a URL (`Location`, `Content-Location`, `Referer`) the URL hidden as ``urlText(_:)`` hides it: a
    /// redirect or a `201 Created` can point at a URL with a token in its query or fragment. The URI references of a
    /// `Link` field (`</v1/items?page=2&access_token=…>; rel="next"`, relative ones too) and a `Refresh` field's URL
    /// are hidden so, and the absolute URLs any other field quotes (`Refresh: 0; url=https://…?session_id=…`) as ``urlsInText(_:showing:)``
    /// hides them.
    static func headerValue(_ value: String, name: String, redacting: Bool) -> String {
        guard redacting else { return value }
        if HTTPHeader.isSensitive(name: name) { return placeholder }
        if let credential = schemeCredential(in: value) {
            return value.replacingCharacters(in: credential, with: placeholder)
        }
        if urlValuedHeaders.contains(where: { HTTPHeader.asciiCaseInsensitiveEquals($0, name) }) {
            return urlText(value)
        }
        if HTTPHeader.asciiCaseInsensitiveEquals(name, "Link") { return linkText(value) }
        if HTTPHeader.asciiCaseInsensitiveEquals(name, "Refresh") { return refreshText(value) }
        return urlsInText(value)
    }

    /// Where the credential lies in a value that reads as HTTP credentials whatever its name: `Bearer` (in any case),
    /// one blank, then one token68 (RFC 9110 §11.2) of 8 characters or more (`Bearer eyJ…`), or `Basic`, one blank,
    /// then the base64 of text with a `:` (`Basic dXNlcjpwYXNz`); `nil` for other text, such as `Bearer tokens are
    /// accepted` or a plan named `Basic Monthly`.
    package static func schemeCredential(in value: String) -> Range<String.Index>? {
        guard let blank = value.firstIndex(of: " ") else { return nil }
        let scheme = String(value[..<blank])
        let credential = value[value.index(after: blank)...]
        guard credential.unicodeScalars.allSatisfy({ token68Characters.contains($0) }) else { return nil }
        if HTTPHeader.asciiCaseInsensitiveEquals(scheme, "Bearer") {
            guard credential.count >= 8 else { return nil }
        } else if HTTPHeader.asciiCaseInsensitiveEquals(scheme, "Basic") {
            guard let data = Data(base64Encoded: String(credential)), let pair = String(data: data, encoding: .utf8),
                pair.contains(":")
            else { return nil }
        } else {
            return nil
        }
        return credential.startIndex..<credential.endIndex
    }

    /// The characters of a token68 (RFC 9110 §11.2).
    private static let token68Characters = Set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~+/=".unicodeScalars)

    /// A `Refresh` field's value (`0; url=/home?session_id=…`, as HTML's `meta http-equiv` reads it) with the URL
    /// reference after its `url=`, relative ones too, shown by `shown`, its quotes kept; other text as
    /// ``urlsInText(_:showing:)`` shows it.
    package static func refreshText(_ value: String, showing shown: (String) -> String = urlText) -> String {
        guard let url = value.range(of: "url=", options: .caseInsensitive) else {
            return urlsInText(value, showing: shown)
        }
        var reference = value[url.upperBound...]
        let quote = reference.first.flatMap { $0 == "\"" || $0 == "'" ? $0 : nil }
        if quote != nil { reference = reference.dropFirst() }
        let closing = quote.flatMap { reference.firstIndex(of: $0) } ?? reference.endIndex
        return urlsInText(String(value[..<url.upperBound]), showing: shown) + (quote.map(String.init) ?? "")
            + shown(String(reference[..<closing])) + String(reference[closing...])
    }

    /// A `Link` field's value (RFC 8288) with each URI reference between `<` and `>` shown by `shown`, and the absolute
    /// URLs its parameters quote (`anchor="https://…"`) as ``urlsInText(_:showing:)`` shows them.
    package static func linkText(_ value: String, showing shown: (String) -> String = urlText) -> String {
        guard value.contains("<") else { return urlsInText(value, showing: shown) }
        var result = ""
        var rest = Substring(value)
        while let open = rest.firstIndex(of: "<"), let close = rest[open...].firstIndex(of: ">") {
            result += urlsInText(String(rest[..<open]), showing: shown) + "<"
            result += shown(String(rest[rest.index(after: open)..<close])) + ">"
            rest = rest[rest.index(after: close)...]
        }
        return result + urlsInText(String(rest), showing: shown)
    }

    /// A string a body holds, as shown: every absolute URL it quotes shown by `shown` (``urlsInText(_:showing:)``),
    /// or all of it when it is a relative link with a query or a fragment (``isRelativeLink(_:)``), such as a page's
    /// `"next": "/v1/items?page=2&access_token=…"`.
    package static func urlsInString(_ string: String, showing shown: (String) -> String = urlText) -> String {
        if quotesURL(string) { return urlsInText(string, showing: shown) }
        return isRelativeLink(string) ? shown(string) : string
    }

    /// Whether `string` reads as a relative URL reference with `name=value` pairs in its query or fragment
    /// (`/v1/items?page=2&sig=…`, `?page=2`, `#access_token=…`): one word (no blank, quote or angle bracket, which a
    /// URL never holds unencoded) with a `=` after its first `?` or `#`.
    package static func isRelativeLink(_ string: String) -> Bool {
        guard let mark = string.firstIndex(where: { $0 == "?" || $0 == "#" }), string[mark...].contains("=") else {
            return false
        }
        return !string.contains { $0.isWhitespace || $0 == "\"" || $0 == "`" || $0 == "<" || $0 == ">" }
    }

    /// The headers whose value is a URL, which may carry a secret in its query, fragment or user info.
    private static let urlValuedHeaders = ["Location", "Content-Location", "Referer"]

    /// The URL to show: without `user:password@`, and with sensitive values hidden in the query, in a fragment of
    /// `name=value` pairs (`#access_token=…&state=…`, as OAuth's implicit flow returns) and in the path's parameters
    /// (`;jsessionid=…`, ``redactedPath(_:)``).
    static func url(_ url: URL, redacting: Bool) -> String {
        guard redacting else { return url.absoluteString }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return urlText(url.absoluteString)
        }
        // No authority: a URL written without `//` (`amy:pw@api.example.com`) has its credentials in what Foundation
        // reads as the scheme and the path, where only the text shows them.
        if components.percentEncodedHost == nil { return urlText(components.string ?? url.absoluteString) }
        components.user = nil
        components.password = nil
        let path = components.percentEncodedPath
        let query = components.percentEncodedQuery
        let fragment = components.percentEncodedFragment
        let shownPath = redactedPath(path)
        guard query != nil || fragment != nil || shownPath != path else {
            return components.string ?? urlText(url.absoluteString)
        }
        // The placeholder is not valid in a percent-encoded path or query, so the display string is assembled by hand.
        components.percentEncodedPath = ""
        components.percentEncodedQuery = nil
        components.percentEncodedFragment = nil
        guard let base = components.string else { return urlText(url.absoluteString) }
        return base + shownPath + (query.map { "?" + redactedQuery($0) } ?? "")
            + (fragment.map { "#" + redactedQuery($0) } ?? "")
    }

    /// A percent-encoded path with the values of its sensitive path parameters hidden: those after a `;` in a segment,
    /// `name=value` pairs as in a query (`/app;jsessionid=<redacted>/cart`, a servlet container's session for a
    /// client without cookies), and the tokens of the path shapes that carry one (``pathTokens(in:)``: a Telegram bot's
    /// `/bot123:<redacted>/getMe`, a webhook's `/services/T…/B…/<redacted>`). Other segments are shown.
    static func redactedPath(_ path: String) -> String {
        let tokens = pathTokens(in: path)
        guard path.contains(";") || !tokens.isEmpty else { return path }
        var segments = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        for token in tokens {
            segments[token.segment] = segments[token.segment].replacingOccurrences(of: token.value, with: placeholder)
        }
        return segments.map { segment in
            guard let semicolon = segment.firstIndex(of: ";") else { return segment }
            return String(segment[...semicolon]) + redactedQuery(String(segment[segment.index(after: semicolon)...]))
        }.joined(separator: "/")
    }

    /// The tokens a path carries in a segment of its own, each with the index of its segment (splitting at every `/`),
    /// found by three shapes only, so that ordinary ids are never taken for one:
    ///
    /// - a Telegram bot's token, `/bot<digits>:<token>/…` (the bot API's URLs), the token 30 or more of `A-Z a-z 0-9 _
    ///   -` after the `:` (also written `%3A`); the bot's number before it is shown;
    /// - a Slack webhook's secret, the segment after `/services/T…/B…/` (the workspace's and the bot's ids, capital
    ///   letters and digits), 16 or more letters and digits;
    /// - a webhook's token after its numeric id, `/webhooks/<digits>/<token>` (Discord's `/api/webhooks/…`), the id 5
    ///   digits or more and the token 30 or more of `A-Z a-z 0-9 _ -`.
    ///
    /// ``SecretValues`` counts these tokens among a request's secret values, so that recordings hide them too.
    static func pathTokens(in path: String) -> [(segment: Int, value: String)] {
        guard path.contains("/") else { return [] }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        var found: [(segment: Int, value: String)] = []
        for (index, segment) in segments.enumerated() {
            // `bot<digits>:<token>`, the segment up to a path parameter.
            let plain = segment.prefix { $0 != ";" }
            if plain.hasPrefix("bot") {
                let rest = plain.dropFirst(3)
                let digits = rest.prefix(while: { $0.isASCII && $0.isNumber })
                let afterDigits = rest[digits.endIndex...]
                let colon = ["%3A", "%3a", ":"].first { afterDigits.hasPrefix($0) }
                if !digits.isEmpty, let colon {
                    let token = afterDigits.dropFirst(colon.count)
                    if token.count >= 30, token.allSatisfy(isTokenCharacter) { found.append((index, String(token))) }
                }
            }
            if segment == "services", index + 3 < segments.count, isSlackID(segments[index + 1], "T"),
                isSlackID(segments[index + 2], "B")
            {
                let secret = segments[index + 3]
                if secret.count >= 16, secret.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) {
                    found.append((index + 3, String(secret)))
                }
            }
            if segment == "webhooks", index + 2 < segments.count {
                let id = segments[index + 1]
                let token = segments[index + 2]
                if id.count >= 5, id.allSatisfy({ $0.isASCII && $0.isNumber }), token.count >= 30,
                    token.allSatisfy(isTokenCharacter)
                {
                    found.append((index + 2, String(token)))
                }
            }
        }
        return found
    }

    /// Whether `character` may be in a token of ``pathTokens(in:)``: an ASCII letter or digit, `_` or `-`.
    private static func isTokenCharacter(_ character: Character) -> Bool {
        character.isASCII && (character.isLetter || character.isNumber || character == "_" || character == "-")
    }

    /// Whether `segment` reads as a Slack id starting with `letter`: it and 6 or more capital letters and digits.
    private static func isSlackID(_ segment: Substring, _ letter: Character) -> Bool {
        segment.first == letter && segment.count >= 7
            && segment.allSatisfy { $0.isASCII && ($0.isUppercase || $0.isNumber) }
    }

    /// The path parameters of a percent-encoded path: what follows the first `;` of each segment that has one.
    static func pathParameters(_ path: Substring) -> [String] {
        path.split(separator: "/").compactMap { segment in
            segment.firstIndex(of: ";").map { String(segment[segment.index(after: $0)...]) }
        }
    }

    /// A URL as text that need not parse as a `URL` (the subject of an invalid-URL error), hidden as
    /// ``url(_:redacting:)`` hides a URL: without `user:password@`, and with sensitive values hidden in the
    /// query and the fragment. A URL written without `//` (`amy:pw@api.example.com`) shows the placeholder between its
    /// first `:` and its `@` (``credentialsWithoutAuthority(in:)``): `amy:<redacted>@api.example.com`.
    package static func urlText(_ text: String) -> String {
        var rest = Substring(text)
        var fragment: Substring?
        if let hash = rest.firstIndex(of: "#") {
            fragment = rest[rest.index(after: hash)...]
            rest = rest[..<hash]
        }
        var query: Substring?
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        // The authority follows `scheme://`, or the `//` that starts a network-path reference (`//host/path`, as
        // a `Location` may be).
        let authorityStart =
            rest.hasPrefix("//") ? rest.index(rest.startIndex, offsetBy: 2) : rest.range(of: "://")?.upperBound
        if let credentials = credentialsWithoutAuthority(in: rest) {
            rest = rest[..<credentials.lowerBound] + placeholder + rest[credentials.upperBound...]
        } else if let authorityStart {
            let authority = rest[authorityStart...].prefix { $0 != "/" }
            if let at = authority.lastIndex(of: "@") {
                rest = rest[..<authorityStart] + rest[rest.index(after: at)...]
            }
        }
        // Path parameters as ``url(_:redacting:)`` hides them: the scheme and the authority hold no `;`.
        return redactedPath(String(rest)) + (query.map { "?" + redactedQuery(String($0)) } ?? "")
            + (fragment.map { "#" + redactedQuery(String($0)) } ?? "")
    }

    /// Where the credentials of a URL written without the `//` of an authority lie: from after the first `:` to the
    /// last `@` before the query and the fragment, when `text` starts with a scheme (letters, digits, `+-.`) and a `:`
    /// that `//` does not follow; `nil` otherwise.
    ///
    /// Foundation reads `amy:pw@api.example.com` as the scheme `amy` and the path `pw@api.example.com` (and
    /// `https:amy:pw@host` as the path `amy:pw@host`): there is no `user:password@` to take off, yet it is the password
    /// (or the user and the password) that the range covers. Such a URL names no server, so that hiding a path's
    /// `@` hides nothing worth reading. The schemes whose path is an address, `user@host` (`mailto:`, `sip:`…), are
    /// left as they are.
    static func credentialsWithoutAuthority(in text: Substring) -> Range<Substring.Index>? {
        guard let colon = text.firstIndex(of: ":"), let first = text.first, first.isASCII, first.isLetter,
            text[..<colon].allSatisfy({ schemeCharacters.contains($0) }),
            !addressSchemes.contains(where: { HTTPHeader.asciiCaseInsensitiveEquals($0, String(text[..<colon])) })
        else { return nil }
        let rest = text[text.index(after: colon)...].prefix { $0 != "?" && $0 != "#" }
        guard !rest.hasPrefix("//"), let at = rest.lastIndex(of: "@") else { return nil }
        return rest.startIndex..<at
    }

    /// The schemes whose path is an address, `user@host`, with no password in it.
    private static let addressSchemes = ["mailto", "sip", "sips", "xmpp", "acct"]

    /// The characters of a URL's scheme (RFC 3986 §3.1).
    private static let schemeCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")

    /// `text` with every absolute URL in it (`scheme://…`, up to white space, a quote or an angle bracket, which a
    /// URL never holds unencoded) hidden as ``urlText(_:)`` hides one: for text that quotes URLs it was not given,
    /// such as a platform error's failing URL or a body's `download_url`. Brackets end a URL only at its end
    /// (`report(1).pdf?token=…` is one URL). `shown` hides each URL found: ``urlText(_:)`` unless the caller shows
    /// it another way (a recording's placeholders, which name what they hide).
    package static func urlsInText(_ text: String, showing shown: (String) -> String = urlText) -> String {
        guard quotesURL(text) else { return text }
        // Each line end on its own: in a `String`, "\r\n" is one `Character`, and `Set(" \r\n")` held only that one, so
        // a URL ran on past a lone LF or CR.
        let ends: Set<Character> = [" ", "\t", "\r", "\n", "\r\n", "\"", "`", "<", ">"]
        var result = ""
        var rest = Substring(text)
        // The next escaped separator, looked for again only once `rest` has passed it: each search runs to the end of
        // the text when there is none, which once per URL made long text with many URLs slow to show.
        var escaped = rest.range(of: #":\/\/"#)
        while let separator = nextURLSeparator(in: rest, escaped: &escaped) {
            var start = separator.lowerBound
            while start > rest.startIndex, schemeCharacters.contains(rest[rest.index(before: start)]) {
                start = rest.index(before: start)
            }
            var end = rest[separator.upperBound...].firstIndex { ends.contains($0) } ?? rest.endIndex
            // Punctuation after a URL in a sentence, or between a list's items, is not part of it; nor is the
            // backslash of JSON's `\"` that ends an escaped one.
            while end > separator.upperBound, ",;.')]}\\".contains(rest[rest.index(before: end)]) {
                end = rest.index(before: end)
            }
            result += rest[..<start]
            result +=
                start == separator.lowerBound ? String(rest[start..<end]) : shownUnescaped(rest[start..<end], shown)
            rest = rest[end...]
        }
        return result + rest
    }

    /// Whether `text` may quote an absolute URL: it holds `://`, or JSON's escaped form of it, `:\/\/`.
    package static func quotesURL(_ text: String) -> Bool {
        text.contains("://") || text.contains(#":\/\/"#)
    }

    /// Where the first `://` of `text` lies, or its JSON-escaped form `:\/\/`, whichever comes first. `escaped` is the
    /// first escaped one at or after the start of `text` as last found (`nil`: there is none), found again here only when
    /// `text` starts past it.
    private static func nextURLSeparator(
        in text: Substring, escaped: inout Range<Substring.Index>?
    ) -> Range<Substring.Index>? {
        if let found = escaped, found.lowerBound < text.startIndex { escaped = text.range(of: #":\/\/"#) }
        guard let escapedSeparator = escaped else { return text.range(of: "://") }
        // A plain one only before the escaped one.
        let plain = text[..<escapedSeparator.lowerBound].range(of: "://")
        return plain ?? escapedSeparator
    }

    /// A URL found in text, shown by `shown`. One written JSON-escaped (`https:\/\/…`, `\u0026` for `&`: a page's
    /// inline script, JSON quoted in a JSON string) is read unescaped, as its reader reads it, and shown so when `shown`
    /// hides something in it; otherwise it is kept as it was written.
    private static func shownUnescaped(_ url: Substring, _ shown: (String) -> String) -> String {
        guard url.contains("\\") else { return shown(String(url)) }
        let plain = jsonUnescaped(url)
        let result = shown(plain)
        return result == plain ? String(url) : result
    }

    /// `text` with JSON's `\/` read as `/` and each `\uXXXX` as its character; other text as it is.
    private static func jsonUnescaped(_ text: Substring) -> String {
        var result = ""
        var rest = text
        while let backslash = rest.firstIndex(of: "\\") {
            result += rest[..<backslash]
            let escape = rest[rest.index(after: backslash)...]
            if escape.hasPrefix("/") {
                result += "/"
                rest = escape.dropFirst()
            } else if escape.hasPrefix("u"), escape.prefix(5).count == 5,
                let code = UInt32(escape.dropFirst().prefix(4), radix: 16),
                let scalar = Unicode.Scalar(code)
            {
                result.unicodeScalars.append(scalar)
                rest = escape.dropFirst(5)
            } else {
                result += "\\"
                rest = escape
            }
        }
        return result + rest
    }

    /// A percent-encoded query (or form body) with the values of sensitive names hidden (``secretItems(in:)``);
    /// every separator before a hidden value is kept as it was.
    static func redactedQuery(_ query: String) -> String {
        redactingEncodedDocuments(in: replacingSecretValues(in: query) { _ in placeholder })
    }

    /// `query` with the secrets of each value that holds a document percent-encoded hidden: JSON (a GraphQL GET's
    /// `variables=%7B%22token%22%3A…%7D`) as a JSON body's, a link or a form (`next=%2Freset%3Ftoken%3D…`) as a
    /// query's, re-encoded. A value not percent-encoded was read with the query (``secretItems(in:)`` splits at `?`).
    private static func redactingEncodedDocuments(in query: String) -> String {
        guard query.contains("%") else { return query }
        var result = ""
        var shownFrom = query.startIndex
        var itemStart = query.startIndex
        while itemStart < query.endIndex {
            let itemEnd = query[itemStart...].firstIndex(of: "&") ?? query.endIndex
            if let equals = query[itemStart..<itemEnd].firstIndex(of: "="), query[equals..<itemEnd].contains("%") {
                let valueStart = query.index(after: equals)
                let decoded = formDecoded(query[valueStart..<itemEnd])
                let trimmed = decoded.trimmingCharacters(in: .whitespaces)
                var hidden: String?
                if trimmed.hasPrefix("{") || trimmed.hasPrefix("[") {
                    hidden = embeddedRedacted(decoded)
                } else if decoded.contains("=") {
                    let linked = urlsInString(decoded)
                    let shown = linked != decoded ? linked : replacingSecretValues(in: decoded) { _ in placeholder }
                    hidden = shown == decoded ? nil : shown
                }
                if let hidden, let encoded = hidden.addingPercentEncoding(withAllowedCharacters: queryValueCharacters) {
                    result += query[shownFrom..<valueStart] + encoded
                    shownFrom = itemEnd
                }
            }
            guard itemEnd < query.endIndex else { break }
            itemStart = query.index(after: itemEnd)
        }
        return result + query[shownFrom...]
    }

    /// The characters a query value keeps unescaped when written back: RFC 3986's unreserved ones.
    private static let queryValueCharacters = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// `text`, a percent-encoded query or form, with the value of each of its ``secretItems(in:)`` replaced by
    /// `replacement` of the item.
    package static func replacingSecretValues(in text: String, with replacement: (SecretQueryItem) -> String)
        -> String
    {
        var result = ""
        var shownFrom = text.startIndex
        for item in secretItems(in: text) {
            result += text[shownFrom..<item.value.lowerBound] + replacement(item)
            shownFrom = item.value.upperBound
        }
        return result + text[shownFrom...]
    }

    /// An item of a query or form whose name holds a secret (``secretItems(in:)``).
    package struct SecretQueryItem {
        /// The item's name, percent-decoded, `+` read as a space.
        package let name: String
        /// Where its value is, as a standard form reader takes it: up to the next `&`.
        package let value: Range<String.Index>
        /// Where its value is as a reader that also splits at `;` and `?` takes it: a part of ``value``.
        package let shortValue: Range<String.Index>
    }

    /// The items of a percent-encoded query or form body whose name is sensitive (``isSensitiveQueryItem(_:)``) and
    /// whose value is not empty.
    ///
    /// Items are separated by `&`; also by `;` (which some servers accept), so `user=amy;password=x` hides the
    /// password too, and by `?` (a URL glued onto another, a return address such as `next=/cb?access_token=…`). A
    /// secret's value runs to the next `&`, as a standard form reader takes it: a `;` or `?` in a password
    /// (`password=pa;ss-word`) does not leave what follows it shown. An empty value hides nothing: text already
    /// redacted (`?access_token=<redacted>&x=1`, a message whose token was hidden by value) reads, a bare `<` ending
    /// a URL, as `?access_token=`, which would otherwise get a second placeholder.
    ///
    /// - Parameter text: The query or form.
    /// - Returns: The secret items, in order.
    package static func secretItems(in text: String) -> [SecretQueryItem] {
        var found: [SecretQueryItem] = []
        var itemStart = text.startIndex
        while true {
            let itemEnd = text[itemStart...].firstIndex(of: "&") ?? text.endIndex
            var pieceStart = itemStart
            while true {
                let separator = text[pieceStart..<itemEnd].firstIndex { $0 == ";" || $0 == "?" }
                let pieceEnd = separator ?? itemEnd
                if let equals = text[pieceStart..<pieceEnd].firstIndex(of: "=") {
                    let valueStart = text.index(after: equals)
                    let name = formDecoded(text[pieceStart..<equals])
                    if valueStart < itemEnd, isSensitiveQueryItem(name) {
                        found.append(
                            SecretQueryItem(name: name, value: valueStart..<itemEnd, shortValue: valueStart..<pieceEnd))
                        break
                    }
                }
                guard let separator else { break }
                pieceStart = text.index(after: separator)
            }
            guard itemEnd < text.endIndex else { return found }
            itemStart = text.index(after: itemEnd)
        }
    }

    /// Form text with `+` read as a space and percent escapes undone.
    package static func formDecoded(_ text: Substring) -> String {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }

    /// Whether the member `key` of a JSON object holds a secret because a sibling names one: the `value` of a name/value
    /// pair (`{"name": "Authorization", "value": "Bearer …"}`, as HAR files and servers echoing a request's header list
    /// write one; AWS's `{"Key": "api_key", "Value": "…"}`) whose `name` or `key` is a string that names a secret as a
    /// query item's name does (``isSensitiveQueryItem(_:)``). Member names compare ignoring ASCII case.
    package static func isNamedSecretValue(_ key: String, in object: [String: Any]) -> Bool {
        HTTPHeader.asciiCaseInsensitiveEquals(key, "value") && secretPairName(of: object) != nil
    }

    /// The secret's name a name/value pair's `name` or `key` member holds (`Authorization`), or `nil` when neither
    /// names a secret (``isNamedSecretValue(_:in:)``).
    package static func secretPairName(of object: [String: Any]) -> String? {
        for (member, name) in object {
            guard
                HTTPHeader.asciiCaseInsensitiveEquals(member, "name")
                    || HTTPHeader.asciiCaseInsensitiveEquals(member, "key"),
                let name = name as? String, isSensitiveQueryItem(name)
            else { continue }
            return name
        }
        return nil
    }

    /// Whether a query item (or form field, or multipart form part) with this name holds a secret: a sensitive field
    /// name, or a name too short or too common to match as a fragment of longer names that holds a secret when it is
    /// the whole name: an API key (`?key=`, `?appid=` as OpenWeatherMap and Wolfram|Alpha take it), a signed URL's
    /// signature (`?sig=`), an ID token (`?auth=`, Firebase's) and an OAuth authorization code (`?code=`, in the
    /// redirect back from the authorization server and in the token request that spends it, RFC 6749 §4.1). A JSON
    /// body's `code` (an error's `{"code": 42}`) or `auth` object is not one: JSON fields go by
    /// ``isSensitiveField(_:)``.
    package static func isSensitiveQueryItem(_ name: String) -> Bool {
        isSensitiveField(name)
            || ["key", "sig", "code", "auth", "appid"].contains { HTTPHeader.asciiCaseInsensitiveEquals(name, $0) }
    }

    /// The deepest JSON that logs parse and re-serialise. Both recurse once per level, and Foundation's writer
    /// overflows a 512 KiB thread stack (Apple's dispatch worker threads, where responses are logged) from
    /// about 300 levels: 128 leaves a wide margin and is plenty to read.
    package static let maximumJSONDepth = 128

    /// A body as text for logs: JSON pretty-printed (sensitive fields hidden), forms (URL-encoded or
    /// multipart) with sensitive values hidden, the HTTP messages a batch carries (`multipart/mixed` of
    /// `application/http` parts) with their header lines hidden as outer fields are (``redactedHTTPMessages(_:)``), XML with the content of sensitive elements and the values of
    /// sensitive attributes hidden (`XMLRedaction`), other text as is, binary as a byte count. Long bodies are cut
    /// at `limit` bytes.
    ///
    /// When redacting, a body that is or claims to be JSON (a `json` content type, or text that is not a form
    /// and starts with `{` or `[`) is never shown as it came unless it parses and holds no sensitive field: JSON lines (NDJSON) are
    /// redacted line by line, and JSON that cannot be parsed or re-serialised (a truncated body, a number
    /// beyond `Double`, a lone surrogate), or that nests deeper than ``maximumJSONDepth``, is withheld as a
    /// byte count, since the secrets in it cannot be found. A body that claims JSON but holds no `{` nor `[` (an error
    /// page's plain text) holds no field, and is shown as text.
    static func bodyText(
        _ data: Data, contentType: String?, redacting: Bool, pretty: Bool, limit: Int = 64 * 1024,
        hiding secrets: SecretValues? = nil
    ) -> String {
        if data.isEmpty { return "" }
        // A body in the charset it declares (an error page in ISO-8859-1, a .NET answer in UTF-16) is shown, and its
        // secrets looked for, as its text: ASCII in UTF-16 is valid UTF-8 with zeros between the letters, where no
        // secret is found by value.
        let data =
            ErrorBody.unicodeText(data, contentType: contentType).map { Data($0.utf8) }
            ?? BodyCharset.utf8(data, contentType: contentType)
        // Secrets by value are hidden before the cut at `limit`, so that one the cut would split is hidden whole.
        func truncated(_ text: String, limit: Int) -> String {
            Redaction.truncated(text, limit: limit, hiding: secrets)
        }
        // The media type as the body was built by (``ConnectResponse/mediaType(of:)``: blanks and parameters off).
        let type = contentType.map(ConnectResponse.mediaType(of:)) ?? ""
        let tooDeep = JSONDepth.exceeds(data, limit: maximumJSONDepth)
        let isForm = type.hasPrefix("application/x-www-form-urlencoded") || type.hasPrefix("multipart/form-data")
        let claimsJSON = type.contains("json") || (!isForm && startsLikeJSON(data))
        if !tooDeep, let json = try? JSONSerialization.jsonObject(with: withoutBOM(data), options: [.fragmentsAllowed])
        {
            let hidesField = redacting && containsSensitiveField(json)
            if pretty || hidesField {
                // Re-serialised only to pretty-print or to hide a field; otherwise the exact bytes are shown.
                if let output = serialised(redacting ? redactJSON(json) : json, pretty: pretty) {
                    // A secret the body hands out under a secret name, hidden where it quotes it again.
                    let handedOut = hidesField ? SecretValues(values: secretStrings(of: json)) : SecretValues()
                    return truncated(handedOut.hiding(in: output), limit: limit)
                }
                if hidesField { return withheld(data, reason: "of JSON that cannot be re-serialised") }
            }
        } else if redacting && claimsJSON && mayHoldJSONFields(data) {
            if tooDeep {
                return withheld(data, reason: "nested deeper than \(maximumJSONDepth) levels")
            }
            if let lines = redactedJSONLines(data) { return truncated(lines, limit: limit) }
            return withheld(data, reason: "of JSON that does not parse")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            return "<\(data.count) bytes of binary data>"
        }
        if tooDeep && redacting {
            return withheld(data, reason: "nested deeper than \(maximumJSONDepth) levels")
        }
        if redacting && type.hasPrefix("application/x-www-form-urlencoded") {
            return truncated(redactedQuery(text), limit: limit)
        }
        if redacting && carriesHTTPMessages(mediaType: type), let contentType {
            // A batch's inner requests and responses: their header lines hidden as outer fields are.
            return truncated(redactedHTTPMessages(redactedJSONParts(text, contentType: contentType)), limit: limit)
        }
        if redacting && type == "text/event-stream" {
            // Each event's JSON data as a JSON body is shown (a device login's token pushed once approved).
            return truncated(redactedEventStream(text), limit: limit)
        }
        if redacting && XMLRedaction.isXML(type: type, text: text) {
            return truncated(urlsInText(XMLRedaction.redacted(text)), limit: limit)
        }
        if redacting && type.hasPrefix("multipart/form-data"), let contentType {
            let parts = redactedJSONParts(redactedMultipart(text, contentType: contentType), contentType: contentType)
            return truncated(urlsInText(parts), limit: limit)
        }
        if redacting && isPlainText(mediaType: type) && readsAsForm(text) {
            // A form answered as text (an older OAuth provider's `access_token=…&expires=3600`).
            return truncated(redactedQuery(text), limit: limit)
        }
        // A body that claims JSON but is none (no field to find) is read as plain text is: `Bearer …` as an answer.
        if redacting, let credential = plainTextCredential(in: text, contentType: claimsJSON ? nil : contentType) {
            // Credentials as text (`Bearer …`), hidden as an `Authorization` value's are.
            return truncated(text.replacingCharacters(in: credential, with: placeholder), limit: limit)
        }
        // Text quoting a URL (an error page's "see https://…?token=…"): the URL's secrets hidden.
        return truncated(redacting ? urlsInText(text) : text, limit: limit)
    }

    /// Whether text reads as a URL-encoded form: one word (a line end after it aside) of `&`-separated `name=value`
    /// pairs, each with a name.
    package static func readsAsForm(_ text: String) -> Bool {
        let form = text.trimmingCharacters(in: .newlines)
        guard form.contains("="), !form.contains(where: \.isWhitespace) else { return false }
        return form.split(separator: "&", omittingEmptySubsequences: false).allSatisfy { pair in
            guard let equals = pair.firstIndex(of: "=") else { return false }
            return equals > pair.startIndex
        }
    }

    /// Where the credential lies in a plain-text body (`text/plain`, or one without a type) that is one line of HTTP
    /// credentials as an `Authorization` value reads them (``schemeCredential(in:)``: `Bearer …`, `Basic …`), the
    /// blanks and line ends around it aside, as around a field's value: a token endpoint that answers the value to
    /// send, a request that posts one, an event's data. `nil` for other text, such as `Bearer tokens are accepted`,
    /// and for a body of another type.
    package static func plainTextCredential(in text: String, contentType: String?) -> Range<String.Index>? {
        guard isPlainText(mediaType: contentType.map(ConnectResponse.mediaType(of:)) ?? ""),
            let first = text.firstIndex(where: { !$0.isWhitespace }),
            let last = text.lastIndex(where: { !$0.isWhitespace })
        else { return nil }
        let line = String(text[first...last])
        guard let credential = schemeCredential(in: line) else { return nil }
        // The credential runs to the line's end.
        let start = text.index(first, offsetBy: line.distance(from: line.startIndex, to: credential.lowerBound))
        return start..<text.index(after: last)
    }

    /// Whether a body of media type `type` (as ``ConnectResponse/mediaType(of:)`` reads it) is read as plain text for
    /// the secrets text can carry (a form, credentials): `text/plain`, or no type.
    static func isPlainText(mediaType type: String) -> Bool {
        type.isEmpty || type == "text/plain"
    }

    /// A plain-text body (``isPlainText(mediaType:)``) of at most ``bodySecretScanLimit`` bytes as text, in the charset
    /// its type declares; `nil` for another body, which is neither converted nor copied.
    static func plainText(of data: Data, contentType: String?) -> String? {
        guard !data.isEmpty, data.count <= bodySecretScanLimit,
            isPlainText(mediaType: contentType.map(ConnectResponse.mediaType(of:)) ?? "")
        else { return nil }
        return String(data: BodyCharset.utf8(data, contentType: contentType), encoding: .utf8)
    }

    /// The secrets a plain-text body (`text/plain`, or one without a type) of at most ``bodySecretScanLimit`` bytes
    /// hands out, to hide by value wherever they are quoted again (an error's message made of the body): the values of
    /// the secret fields of one that reads as a URL-encoded form (``readsAsForm(_:)``) that read as a credential
    /// (``readsAsCredential(_:)``, as a JSON body's), or the credential of one that reads as credentials
    /// (``plainTextCredential(in:contentType:)``); none for another body.
    static func plainTextSecrets(ofBody data: Data, contentType: String?) -> [String] {
        guard let text = plainText(of: data, contentType: contentType) else { return [] }
        if readsAsForm(text) {
            return SecretValues.formSecrets(text.trimmingCharacters(in: .newlines)).filter(readsAsCredential)
        }
        guard let credential = plainTextCredential(in: text, contentType: contentType) else { return [] }
        return [String(text[credential])]
    }

    /// What is shown instead of a body whose secrets cannot be found: its size and why.
    private static func withheld(_ data: Data, reason: String) -> String {
        "<\(data.count) bytes \(reason), not shown: secrets stay hidden>"
    }

    /// `data` without a leading UTF-8 byte order mark, which the JSON parser may refuse.
    static func withoutBOM(_ data: Data) -> Data {
        data.starts(with: [0xEF, 0xBB, 0xBF]) ? data.dropFirst(3) : data
    }

    /// Whether the first byte after a byte order mark and whitespace is `{` or `[`.
    static func startsLikeJSON(_ data: Data) -> Bool {
        let first = withoutBOM(data).first { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }
        return first == UInt8(ascii: "{") || first == UInt8(ascii: "[")
    }

    /// A JSON value as compact or pretty-printed text, keys sorted, or `nil` if the writer refuses it.
    static func serialised(_ value: Any, pretty: Bool) -> String? {
        var options: JSONSerialization.WritingOptions = [.fragmentsAllowed, .withoutEscapingSlashes, .sortedKeys]
        if pretty { options.insert(.prettyPrinted) }
        guard let output = try? JSONSerialization.data(withJSONObject: value, options: options) else { return nil }
        return String(decoding: output, as: UTF8.self)
    }

    /// JSON lines (NDJSON, JSON Lines) with the sensitive fields of each line hidden, one compact value a
    /// line; `nil` unless every non-blank line parses and every line with a sensitive field re-serialises.
    private static func redactedJSONLines(_ data: Data) -> String? {
        let lines = withoutBOM(data).split(separator: 0x0A).map { line in
            line.last == 0x0D ? line.dropLast() : line
        }
        var shown: [String] = []
        for line in lines {
            guard line.contains(where: { $0 != 0x20 && $0 != 0x09 }) else { continue }
            guard let json = try? JSONSerialization.jsonObject(with: Data(line), options: [.fragmentsAllowed]) else {
                return nil
            }
            if containsSensitiveField(json) {
                guard let text = serialised(redactJSON(json), pretty: false) else { return nil }
                shown.append(text)
            } else {
                shown.append(String(decoding: line, as: UTF8.self))
            }
        }
        return shown.isEmpty ? nil : shown.joined(separator: "\n")
    }

    /// A `multipart/form-data` body (RFC 7578) with the content of each part whose field name is sensitive
    /// hidden. Parts are found by the boundary of `contentType`; text that does not parse is left as is.
    static func redactedMultipart(_ text: String, contentType: String) -> String {
        guard let boundary = HeaderParameters.value(of: "boundary", in: contentType), !boundary.isEmpty else {
            return text
        }
        let delimiter = "--" + boundary
        var parts = text.components(separatedBy: delimiter)
        for index in parts.indices.dropFirst() {
            guard let headEnd = sensitivePartHeadEnd(parts[index]) else { continue }
            let part = parts[index]
            // The part's content ends with the CRLF that belongs to the next delimiter.
            parts[index] = String(part[..<headEnd]) + placeholder + (part.hasSuffix("\r\n") ? "\r\n" : "")
        }
        return parts.joined(separator: delimiter)
    }

    /// A multipart body with each part whose content is JSON holding a secret (an upload's metadata part, a batch
    /// request's body) shown as a JSON body is: compact, its sensitive fields hidden (``redactJSON(_:)``).
    static func redactedJSONParts(_ text: String, contentType: String) -> String {
        var shown = text
        // From the last part back, so that the ranges before stay valid.
        for (range, json) in jsonParts(of: text, contentType: contentType).reversed() where containsSensitiveField(json)
        {
            guard let redacted = serialised(redactJSON(json), pretty: false) else {
                shown.replaceSubrange(range, with: placeholder)
                continue
            }
            shown.replaceSubrange(range, with: redacted)
        }
        return shown
    }

    /// The JSON contents of the parts of a multipart body, each with where it lies in `text`: a part's content after
    /// its head, or, in a part that carries an HTTP message (`application/http`), after the message's head. A part that
    /// is a multipart body of its own (an OData batch's changeset of `application/http` parts) is read the same way,
    /// to ``maximumMultipartDepth`` levels.
    package static func jsonParts(of text: String, contentType: String) -> [(range: Range<String.Index>, json: Any)] {
        jsonParts(of: text[...], contentType: contentType, depth: 0)
    }

    /// How many levels of multipart bodies nested in a part ``jsonParts(of:contentType:)`` reads: OData nests one (a
    /// batch of changesets).
    package static let maximumMultipartDepth = 4

    /// ``jsonParts(of:contentType:)`` of `text`, a stretch of a body `depth` multipart levels down; the ranges lie in
    /// the body's string, which `text` shares its indices with.
    private static func jsonParts(of text: Substring, contentType: String, depth: Int) -> [(
        range: Range<String.Index>, json: Any
    )] {
        guard let boundary = HeaderParameters.value(of: "boundary", in: contentType), !boundary.isEmpty else {
            return []
        }
        let delimiter = "--" + boundary
        var found: [(range: Range<String.Index>, json: Any)] = []
        var rest = text
        while let start = rest.range(of: delimiter) {
            let afterDelimiter = rest[start.upperBound...]
            let end = afterDelimiter.range(of: delimiter)?.lowerBound ?? afterDelimiter.endIndex
            var part = afterDelimiter[..<end]
            // The CRLF before the next delimiter belongs to it (one `Character`).
            if part.hasSuffix("\r\n") { part = part.dropLast() }
            if depth < maximumMultipartDepth, let head = part.range(of: "\r\n\r\n"),
                let nested = multipartType(ofPartHead: part[..<head.lowerBound])
            {
                // A changeset: its own parts, by its own boundary.
                found += jsonParts(of: part[head.upperBound...], contentType: nested, depth: depth + 1)
                rest = afterDelimiter[end...]
                continue
            }
            // The content after the part's head, or after the head of the HTTP message it carries.
            var search = part[...]
            for _ in 0..<2 {
                guard let blank = search.range(of: "\r\n\r\n") else { break }
                let content = search[blank.upperBound...]
                // Its first character looked at before its bytes are copied: a file part can be large.
                let first = content.unicodeScalars.first { !jsonBlanks.contains($0) }
                guard first == "{" || first == "[" || first == "\u{FEFF}" else {
                    search = content
                    continue
                }
                let data = Data(content.utf8)
                if startsLikeJSON(data), !JSONDepth.exceeds(data, limit: maximumJSONDepth),
                    let json = try? JSONSerialization.jsonObject(with: withoutBOM(data), options: [.fragmentsAllowed])
                {
                    found.append((content.startIndex..<content.endIndex, json))
                    break
                }
                search = content
            }
            rest = afterDelimiter[end...]
        }
        return found
    }

    /// JSON's white space.
    private static let jsonBlanks: Set<Unicode.Scalar> = [" ", "\t", "\r", "\n"]

    /// The `Content-Type` a multipart part's head declares, when it is a multipart type with a boundary.
    package static func multipartType(ofPartHead head: Substring) -> String? {
        for line in head.components(separatedBy: "\r\n") where line.lowercased().hasPrefix("content-type:") {
            let value = line.dropFirst("content-type:".count).trimmingCharacters(in: .whitespaces)
            guard value.lowercased().hasPrefix("multipart/"), HeaderParameters.value(of: "boundary", in: value) != nil
            else { return nil }
            return value
        }
        return nil
    }

    /// The contents of the parts of a `multipart/form-data` body whose field name is sensitive.
    static func sensitiveMultipartContents(_ text: String, contentType: String) -> [String] {
        guard let boundary = HeaderParameters.value(of: "boundary", in: contentType), !boundary.isEmpty else {
            return []
        }
        return text.components(separatedBy: "--" + boundary).dropFirst().compactMap { part in
            guard let headEnd = sensitivePartHeadEnd(part) else { return nil }
            let content = part[headEnd...]
            // CRLF is one `Character`.
            return String(content.hasSuffix("\r\n") ? content.dropLast() : content)
        }
    }

    /// Where the head of a multipart part ends (after its blank line), when its field name is sensitive.
    private static func sensitivePartHeadEnd(_ part: String) -> String.Index? {
        guard let headEnd = part.range(of: "\r\n\r\n") else { return nil }
        let disposition = part[..<headEnd.lowerBound].components(separatedBy: "\r\n")
            .first { $0.lowercased().hasPrefix("content-disposition:") }
        // A form field, as in a URL-encoded body: `key`, `code`, `sig` too (`upload(files:fields:)` turns a form's
        // fields into parts).
        guard let disposition, let name = HeaderParameters.value(of: "name", in: disposition),
            isSensitiveQueryItem(name)
        else {
            return nil
        }
        return headEnd.upperBound
    }

    /// Whether a JSON value has a sensitive key (or the `value` of a pair whose name is one: ``isNamedSecretValue(_:in:)``)
    /// at any depth, or a string quoting a URL with a secret in it (a
    /// presigned `download_url`, a relative `next` link: ``urlsInString(_:showing:)``).
    static func containsSensitiveField(_ value: Any, embedding: Int = 0) -> Bool {
        if let object = value as? [String: Any] {
            return object.contains { key, child in
                isSensitiveField(key) || isNamedSecretValue(key, in: object) || urlsInString(key) != key
                    || !graphQLSecretLiterals(ofMember: key, child).isEmpty
                    || containsSensitiveField(child, embedding: embedding)
            }
        }
        if let array = value as? [Any] { return array.contains { containsSensitiveField($0, embedding: embedding) } }
        if let string = value as? String {
            return schemeCredential(in: string) != nil || isJSONWebToken(string) || urlsInString(string) != string
                || embeddedRedacted(string, embedding: embedding) != nil
        }
        return false
    }

    /// Whether `string` is a JSON Web Token (RFC 7519): a signed one's three base64url parts, or an encrypted one's
    /// five, the first a JSON header (`eyJ`, the base64 of `{"`). A credential whatever its name: Strapi answers a
    /// login with `"jwt"`, Django REST framework's SimpleJWT with `"access"` and `"refresh"`.
    package static func isJSONWebToken(_ string: String) -> Bool {
        guard string.utf8.count >= 24, string.hasPrefix("eyJ") else { return false }
        var parts = 1
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "."): parts += 1
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                continue
            default: return false
            }
        }
        return parts == 3 || parts == 5
    }

    /// The longest string a JSON value holds that is looked into as a document of its own
    /// (``embeddedRedacted(_:embedding:)``).
    static let embeddedDocumentLimit = 64 * 1024

    /// `string` redacted as the document it holds, when it holds one with a secret: JSON an API carries as a string
    /// (API Gateway's and Step Functions' `"body"` and `"input"`, SNS's `"Message"`: `"{\"password\":\"…\"}"`,
    /// nested no deeper than 32 levels), or a URL-encoded form (`"user=amy&password=…"`). `nil` when it holds neither,
    /// or one without a secret. Documents inside documents are looked into two levels down (`embedding` counts them),
    /// so that the stack a redaction takes stays bounded.
    package static func embeddedRedacted(_ string: String, embedding: Int = 0) -> String? {
        guard embedding < 2, string.utf8.count <= embeddedDocumentLimit,
            string.contains(where: { $0 == "=" || $0 == ":" })
        else { return nil }
        let trimmed = string.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("{") || trimmed.hasPrefix("[") {
            let data = Data(trimmed.utf8)
            guard !JSONDepth.exceeds(data, limit: 32), let value = JSONSyntax.value(of: data),
                value is [String: Any] || value is [Any], containsSensitiveField(value, embedding: embedding + 1)
            else { return nil }
            let redacted = redactJSON(value, embedding: embedding + 1)
            guard JSONSerialization.isValidJSONObject(redacted),
                let written = try? JSONSerialization.data(withJSONObject: redacted, options: [.sortedKeys])
            else { return placeholder }
            return String(decoding: written, as: UTF8.self)
        }
        // A URL, relative ones too (`/upload?upload_token=…`), is read as one (``urlsInString(_:showing:)``), not as
        // a form.
        guard !trimmed.contains("://"), !trimmed.contains("?"), !trimmed.hasPrefix("/"), readsAsForm(trimmed)
        else { return nil }
        let hidden = redactedQuery(trimmed)
        return hidden == trimmed ? nil : hidden
    }

    // MARK: - GraphQL documents

    /// The ranges of the string literals a GraphQL document gives to an argument or an input field named like a
    /// secret (`login(password: "…")`, `input: {refreshToken: "…"}`), quotes excluded, when `member` is a request's
    /// `query` and `value` its document; none otherwise. Block strings (`"""…"""`) are not read.
    static func graphQLSecretLiterals(ofMember member: String, _ value: Any) -> [Range<String.Index>] {
        guard member == "query", let document = value as? String, document.contains(":"), document.contains("\"")
        else { return [] }
        return graphQLSecretLiterals(in: document)
    }

    /// ``graphQLSecretLiterals(ofMember:_:)`` of a document.
    private static func graphQLSecretLiterals(in document: String) -> [Range<String.Index>] {
        var found: [Range<String.Index>] = []
        var index = document.startIndex
        while let open = document[index...].firstIndex(of: "\"") {
            // The literal runs to the next quote no backslash escapes.
            var end = document.index(after: open)
            while end < document.endIndex, document[end] != "\"" {
                end = document.index(after: end)
                if document[document.index(before: end)] == "\\", end < document.endIndex {
                    end = document.index(after: end)
                }
            }
            if let name = graphQLName(before: open, in: document), isSensitiveField(name) {
                found.append(document.index(after: open)..<end)
            }
            guard end < document.endIndex else { break }
            index = document.index(after: end)
        }
        return found
    }

    /// The name before `name: ` that ends at `quote`, when a colon and a GraphQL name (`[_A-Za-z][_0-9A-Za-z]*`) come
    /// before it, blanks aside.
    private static func graphQLName(before quote: String.Index, in document: String) -> String? {
        var index = quote
        func skipBlanks() {
            while index > document.startIndex, document[document.index(before: index)].isWhitespace {
                index = document.index(before: index)
            }
        }
        skipBlanks()
        guard index > document.startIndex, document[document.index(before: index)] == ":" else { return nil }
        index = document.index(before: index)
        skipBlanks()
        let end = index
        while index > document.startIndex {
            let character = document[document.index(before: index)]
            guard character == "_" || (character.isASCII && (character.isLetter || character.isNumber)) else { break }
            index = document.index(before: index)
        }
        return index < end ? String(document[index..<end]) : nil
    }

    /// A GraphQL document with the literals of ``graphQLSecretLiterals(ofMember:_:)`` replaced by the placeholder.
    static func graphQLText(_ document: String) -> String {
        var shown = document
        for range in graphQLSecretLiterals(in: document).reversed() { shown.replaceSubrange(range, with: placeholder) }
        return shown
    }

    /// The values of ``graphQLSecretLiterals(ofMember:_:)``, as written and with GraphQL's escapes (JSON's) undone.
    static func graphQLSecrets(ofMember member: String, _ value: Any) -> [String] {
        guard let document = value as? String else { return [] }
        return graphQLSecretLiterals(ofMember: member, value).flatMap { range -> [String] in
            let written = String(document[range])
            let data = Data(("\"" + written + "\"").utf8)
            let decoded = (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) as? String
            return [written] + (decoded.map { $0 == written ? [] : [$0] } ?? [])
        }
    }

    /// The strings a JSON value holds under sensitive keys (and as the `value` of pairs named like a secret), at any
    /// depth, that read as a credential (``readsAsCredential(_:)``): the secrets a body hands out (a token endpoint's
    /// `access_token`), hidden wherever else it quotes them (a message, a link) when it is shown. Numbers are left out:
    /// the same digits are ordinary elsewhere; so are words, such as a validation error's `{"password": "required"}`.
    static func secretStrings(of value: Any, underSensitiveKey: Bool = false) -> [String] {
        if let object = value as? [String: Any] {
            return object.flatMap { key, child in
                secretStrings(
                    of: child,
                    underSensitiveKey: underSensitiveKey || isSensitiveField(key) || isNamedSecretValue(key, in: object)
                )
            }
        }
        if let array = value as? [Any] {
            return array.flatMap { secretStrings(of: $0, underSensitiveKey: underSensitiveKey) }
        }
        if underSensitiveKey, let string = value as? String, readsAsCredential(string) { return [string] }
        if let string = value as? String, isJSONWebToken(string) { return [string] }
        return []
    }

    /// Whether a string a body holds under a secret name reads as a credential rather than as a message about one: one
    /// word (no white space) with a digit in it or of 20 characters or more (`tok-8f3a…`, a JWT, a base64 key), unlike
    /// `"is too short"` or `"required"`.
    static func readsAsCredential(_ string: String) -> Bool {
        guard !string.contains(where: \.isWhitespace) else { return false }
        return string.unicodeScalars.contains { $0.properties.numericType == .decimal } || string.count >= 20
    }

    /// The largest body (1 MiB) looked at for the secrets it hands out (``secretStrings(ofBody:contentType:limit:)``,
    /// ``valueUnderSecretName(at:inJSON:contentType:limit:)``): finding them means parsing and walking all of the JSON.
    static let bodySecretScanLimit = 1 << 20

    /// The strings a JSON body of at most `limit` bytes hands out under secret names (``secretStrings(of:underSensitiveKey:)``);
    /// none for a body that is larger, is not JSON or nests deeper than ``maximumJSONDepth``
    /// (``jsonBody(_:contentType:limit:)``): a message found in it never shows what it hands out.
    static func secretStrings(ofBody data: Data, contentType: String? = nil, limit: Int = bodySecretScanLimit)
        -> [String]
    {
        guard let json = jsonBody(data, contentType: contentType, limit: limit) else { return [] }
        return secretStrings(of: json)
    }

    /// The value of a JSON object or array body of at most `limit` bytes and at most ``maximumJSONDepth`` deep, read
    /// as the error handler reads it for its message and the decoder for a model: in the single-byte charset
    /// `contentType` declares, or in the UTF-16 or UTF-32 its byte order mark or its first character says
    /// (`JSONSyntax.utf8(_:)`), with a value Foundation cannot hold (a number beyond `Double`, a lone surrogate)
    /// replaced (``JSONSyntax/value(of:)``). `nil` for any other body. The one reading of a body looked at for secrets.
    static func jsonBody(_ data: Data, contentType: String?, limit: Int) -> Any? {
        guard !data.isEmpty, data.count <= limit,
            let text = JSONSyntax.utf8(BodyCharset.utf8(data, contentType: contentType)), startsLikeJSON(text),
            !JSONDepth.exceeds(text, limit: maximumJSONDepth)
        else { return nil }
        return JSONSyntax.value(of: text)
    }

    /// A JSON value with the values of sensitive keys (and of pairs named like a secret) replaced, and the secrets of the URLs its strings and its keys
    /// quote hidden (``urlsInString(_:showing:)``: a map of links keyed by URL), at any depth. An object two of whose
    /// keys would read alike once hidden is shown as the placeholder, rather than as one entry standing for two.
    static func redactJSON(_ value: Any, embedding: Int = 0) -> Any {
        if let object = value as? [String: Any] {
            var result: [String: Any] = [:]
            for (key, child) in object {
                let hidden = isSensitiveField(key) || isNamedSecretValue(key, in: object)
                if !hidden, let document = child as? String, !graphQLSecretLiterals(ofMember: key, child).isEmpty {
                    result[urlsInString(key)] = graphQLText(document)
                    continue
                }
                result[urlsInString(key)] = hidden ? placeholder : redactJSON(child, embedding: embedding)
            }
            return result.count == object.count ? result : placeholder
        }
        if let array = value as? [Any] { return array.map { redactJSON($0, embedding: embedding) } }
        if let string = value as? String { return redactedString(string, embedding: embedding) }
        return value
    }

    /// Whether a body that does not parse as JSON may still hold JSON fields whose secrets cannot be found: it has a
    /// `{` or a `[` (a document cut short, one after an anti-hijacking prefix such as `)]}'`). One without either (an
    /// error page's `Internal Server Error` sent as `application/json`) holds no field, and is shown as text is, its
    /// credentials and URLs' secrets hidden.
    private static func mayHoldJSONFields(_ data: Data) -> Bool {
        data.contains(UInt8(ascii: "{")) || data.contains(UInt8(ascii: "["))
    }

    /// A JSON string under a key that is not secret, as ``redactJSON(_:embedding:)`` shows it: credentials after a
    /// scheme (`Bearer …`) and JSON Web Tokens hidden whatever the key, JSON or a form it carries redacted as a
    /// document, and the secrets of the URLs it quotes hidden.
    static func redactedString(_ string: String, embedding: Int = 0) -> String {
        // `Bearer …` under a neutral key (a header list's `"X-Upstream"`): credentials whatever the name.
        if let credential = schemeCredential(in: string) {
            return string.replacingCharacters(in: credential, with: placeholder)
        }
        if isJSONWebToken(string) { return placeholder }
        // JSON or a form carried as a string: its secrets hidden, as the document's.
        if let embedded = embeddedRedacted(string, embedding: embedding) { return embedded }
        return urlsInString(string)
    }

    private static func truncated(_ text: String, limit: Int, hiding secrets: SecretValues?) -> String {
        let total = text.utf8.count
        guard let secrets, !secrets.isEmpty else {
            guard total > limit else { return text }
            return String(decoding: text.utf8.prefix(limit), as: UTF8.self) + "\n… (\(total) bytes in all)"
        }
        guard total > limit else { return secrets.hiding(in: text) }
        // Hidden over a window that reaches past the cut by the longest secret, once hidden: a secret that starts
        // before the cut ends inside it, and is hidden whole. Hiding shrinks what comes before (a 21-byte token is
        // `<redacted>`), which slid the echo the window ended inside, in part, under the cut: the window grows until
        // its hidden text still reaches that far, or holds the whole text.
        let reach = limit &+ secrets.longestLength
        var windowLength = reach
        var hidden = ""
        while true {
            hidden = secrets.hiding(in: String(decoding: text.utf8.prefix(windowLength), as: UTF8.self))
            if windowLength >= total || hidden.utf8.count >= reach { break }
            windowLength = min(total, windowLength &* 2)
        }
        return String(decoding: hidden.utf8.prefix(limit), as: UTF8.self) + "\n… (\(total) bytes in all)"
    }
}

/// Text already redacted, shown as it is inside a mirror: `print` writes it without quotes, as it wrote the value it
/// stands for (a `URL`), and `dump` as one line without children.
struct RedactedText: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The text, redacted by whoever made it.
    let description: String

    /// The text, without quotes.
    var debugDescription: String { description }

    /// No children: the text is all there is to show.
    var customMirror: Mirror { Mirror(self, children: [:]) }

    init(_ text: String) {
        description = text
    }
}
