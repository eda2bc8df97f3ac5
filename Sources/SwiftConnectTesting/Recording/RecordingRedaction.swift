import Foundation
import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Keeps secrets out of recordings: by name with the library's own rules (`HTTPHeader.isSensitive(name:)` for header
/// and body field names, `Redaction.isSensitiveQueryItem` for query items and form fields), then by value with the
/// request's ``SwiftConnect/SecretValues`` (an echo of a token anywhere else, raw, percent-encoded or JSON-escaped).
///
/// A value hidden by name becomes `<redacted:Name>`, which replay can fill from values the test supplies
/// (``RecordingTransport``'s `placeholderValues`); a value hidden by value becomes the library's `<redacted>`, in the
/// UTF-8 stretches of a body that is not UTF-8 as a whole too. A body that is or claims to be JSON but cannot be read
/// becomes ``unreadableJSONBody`` whole. The request a recording is matched against is redacted the same way, so
/// matching never sees a secret.
enum RecordingRedaction {
    /// `secrets` and the base64 form of each of its longer values, as a server that echoes a secret encoded shows it
    /// (the library's own list has base64 only for `Basic` credentials, where the request itself carries it).
    static func withBase64Forms(_ secrets: SecretValues) -> SecretValues {
        secrets.union(SecretValues(values: secrets.anywhere.map { Data($0.utf8).base64EncodedString() }))
    }

    /// What a secret named `name` is replaced with: `<redacted:Authorization>`.
    static func placeholder(_ name: String) -> String { "<redacted:\(name)>" }

    /// `request` as it is recorded and matched.
    static func request(_ request: ConnectRequest, secrets: SecretValues) -> RecordedRequest {
        var fields = HeaderFields()
        for field in request.headerFields {
            let name = field.name.rawName
            let value =
                HTTPHeader.isSensitive(name: name) ? placeholder(name) : secrets.hiding(in: redactedIfURL(field))
            fields.append(HeaderField(name: field.name, value: value))
        }
        var body = Data()
        if case .bytes(let data) = request.body {
            let contentType = request.headerFields[.contentType]
            let byName = isXML(data, contentType: contentType) ? hidingXMLSecretsByName(in: data) : data
            body = requestBody(byName, contentType: contentType, secrets: secrets)
        }
        return RecordedRequest(
            method: request.method.rawValue, url: url(request.url, secrets: secrets), headerFields: fields, body: body)
    }

    /// A request read from an archive, redacted by name as a live request is: a browser's export holds its secrets
    /// as they were sent, and would match no live request (whose secrets are placeholders) nor keep them out of a
    /// message. A request this library recorded is unchanged (its placeholders redact to themselves).
    static func request(_ recorded: RecordedRequest) -> RecordedRequest {
        var fields = HeaderFields()
        for field in recorded.headerFields {
            let name = field.name.rawName
            fields.append(
                HeaderField(
                    name: field.name,
                    value: HTTPHeader.isSensitive(name: name) ? placeholder(name) : redactedIfURL(field)))
        }
        let body =
            recorded.body.isEmpty
            ? recorded.body
            : requestBody(
                recorded.body, contentType: recorded.headerFields[.contentType], secrets: SecretValues(values: []))
        return RecordedRequest(method: recorded.method, url: url(recorded.url), headerFields: fields, body: body)
    }

    /// A request field's value, with the secrets of the URL it holds replaced when it is a URL-valued field (a
    /// `Referer` quoting an OAuth callback's token), and those of the URLs another field quotes (an
    /// `X-Return-To: https://app.test/cb?access_token=…`), as the logs hide them.
    private static func redactedIfURL(_ field: HeaderField) -> String {
        requestURLValuedFields.contains(field.name)
            ? redactedURLText(field.value) : redactedURLsQuoted(in: field.value)
    }

    /// The request fields whose value is a URL: those the logs read as one (`Redaction.headerValue`).
    private static let requestURLValuedFields: [HeaderField.Name] = ["Referer", .location, "Content-Location"]

    /// `url` without its password (a placeholder instead), nor its username when that is the credential (no password,
    /// ``isCredential(user:password:)``), without its fragment (never sent), with `secrets` hidden in its
    /// path and query (a token an earlier response handed out, sent back as a path segment or under a name no rule
    /// knows), and with its secret query items' values replaced.
    ///
    /// Values are hidden before names are replaced, so a replayed request whose token is an unfilled placeholder
    /// redacts to the same URL as the recorded one.
    static func url(_ url: URL, secrets: SecretValues = SecretValues(values: [])) -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            // Not seen in practice for a URL a request was sent to; never recorded as it is, in case it holds one.
            return URL(fileURLWithPath: "/unparseable-url")
        }
        if isCredential(user: components.user, password: components.password) {
            components.percentEncodedUser = encoded(placeholder("user"))
        }
        if components.password != nil { components.percentEncodedPassword = encoded(placeholder("password")) }
        components.percentEncodedFragment = nil
        components.percentEncodedPath = redactedPathParameters(
            hidingValues(in: components.percentEncodedPath, secrets: secrets))
        if let query = components.percentEncodedQuery {
            components.percentEncodedQuery = redactedForm(hidingValues(in: query, secrets: secrets))
        }
        return components.url ?? URL(fileURLWithPath: "/unparseable-url")
    }

    /// Whether a URL's username is its credential: it has no password (an API key sent as the username,
    /// `https://sk_live_…@host`, which the engine sends as `Basic base64(key:)`), as ``SwiftConnect/SecretValues``
    /// judges it.
    private static func isCredential(user: String?, password: String?) -> Bool {
        guard let user, !user.isEmpty else { return false }
        return password?.isEmpty ?? true
    }

    /// Percent-encoded URL text with `secrets` hidden, the placeholder percent-encoded in turn.
    ///
    /// A value escaped beyond need (`tok%2Dabc` for `tok-abc`, which RFC 3986 6.2.2.2 makes the same URL) is found in
    /// the text with such escapes undone; text that holds no secret is kept byte for byte, so matching is unchanged.
    private static func hidingValues(in text: String, secrets: SecretValues) -> String {
        guard !secrets.isEmpty else { return text }
        var hidden = secrets.hiding(in: text)
        if hidden == text, text.contains("%") {
            let normalized = decodingUnreservedEscapes(text)
            let hiddenNormalized = secrets.hiding(in: normalized)
            if hiddenNormalized != normalized { hidden = hiddenNormalized }
        }
        guard hidden != text else { return text }
        return hidden.replacingOccurrences(of: Redaction.placeholder, with: encoded(Redaction.placeholder))
    }

    /// `text` with each `%XX` that stands for an unreserved character (a letter, a digit, `-`, `.`, `_`, `~`) replaced
    /// by the character.
    private static func decodingUnreservedEscapes(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = PercentEncoding.hexValue(bytes[index + 1]),
                let low = PercentEncoding.hexValue(bytes[index + 2])
            {
                let byte = high << 4 | low
                if PercentEncoding.unreserved.contains(byte) {
                    result.append(byte)
                    index += 3
                    continue
                }
            }
            result.append(bytes[index])
            index += 1
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// A request body with its secret fields replaced: JSON at any depth, URL-encoded forms, the credential of a
    /// plain-text body of credentials (`Basic …`); then secret values
    /// wherever they appear (multipart fields among them). JSON that cannot be read is withheld whole
    /// (``unreadableJSONBody``).
    static func requestBody(_ data: Data, contentType: String?, secrets: SecretValues) -> Data {
        guard !data.isEmpty else { return data }
        if carriesHTTPMessages(contentType) {
            // A batch: its inner `Content-Length`s made the lengths of the bodies as recorded.
            return withInnerLengths(
                of: data, in: requestBodyHidingSecrets(data, contentType: contentType, secrets: secrets),
                contentType: contentType)
        }
        return requestBodyHidingSecrets(data, contentType: contentType, secrets: secrets)
    }

    /// A request body with its secrets replaced, as ``requestBody(_:contentType:secrets:)`` records it.
    private static func requestBodyHidingSecrets(_ data: Data, contentType: String?, secrets: SecretValues) -> Data {
        var redacted = data
        if carriesHTTPMessages(contentType) {
            // A batch's inner requests (`application/http` parts), their fields and URLs as outer ones are.
            redacted = hidingHTTPMessageSecretsByName(in: data)
        }
        if let contentType, contentType.lowercased().hasPrefix("multipart/") {
            redacted = hidingJSONPartSecrets(
                in: hidingMultipartSecretsByName(in: redacted, contentType: contentType), contentType: contentType)
        } else if let text = utf8Text(data), isForm(contentType) || isFormAsText(text, contentType: contentType) {
            // A form sent without its type (URLSession and libcurl add it only as they send) too, as the cURL output
            // reads it.
            redacted = Data(redactedForm(text).utf8)
        } else if let text = hidingPlainTextCredential(in: data, contentType: contentType) {
            redacted = Data(text.utf8)
        } else if isUnreadableJSON(data, contentType: contentType) {
            return Data(unreadableJSONBody.utf8)
        } else if let json = redactedJSON(data) ?? redactedJSONLines(data) {
            redacted = json
        } else {
            redacted = hidingQuotedURLSecrets(in: redacted)
        }
        return hidingValues(in: redacted, secrets: secrets)
    }

    /// A multipart body with the content of each part whose field name is secret (`password`, `api_key`) replaced by
    /// the placeholder, read as bytes so that a binary part (a file) is kept as it is. A secret too short to be hidden
    /// by its value (``SecretValues``) is hidden so, and the placeholder is the one hiding by value puts there, so
    /// recordings made before match alike.
    static func hidingMultipartSecretsByName(in data: Data, contentType: String) -> Data {
        guard let boundary = SwiftConnect.HeaderParameters.value(of: "boundary", in: contentType),
            !boundary.isEmpty
        else {
            return data
        }
        let delimiter = Data(("--" + boundary).utf8)
        var delimiters: [Range<Data.Index>] = []
        var searchFrom = data.startIndex
        while let found = data.range(of: delimiter, in: searchFrom..<data.endIndex) {
            delimiters.append(found)
            searchFrom = found.upperBound
        }
        guard delimiters.count > 1 else { return data }
        let blankLine = Data("\r\n\r\n".utf8)
        let lineEnd = Data("\r\n".utf8)
        var result = Data(data[..<delimiters[0].upperBound])
        for (index, start) in delimiters.enumerated() {
            // A part runs from its delimiter to the next; what follows the last one (`--` and the epilogue) is kept.
            let end = index + 1 < delimiters.count ? delimiters[index + 1].lowerBound : data.endIndex
            let part = data[start.upperBound..<end]
            if index + 1 < delimiters.count, let headEnd = part.range(of: blankLine),
                let head = String(data: part[..<headEnd.lowerBound], encoding: .utf8),
                isSecretPart(head: head)
            {
                result.append(part[..<headEnd.upperBound])
                result.append(Data(Redaction.placeholder.utf8))
                // The CRLF before the next delimiter belongs to it.
                if part.count >= headEnd.upperBound - part.startIndex + lineEnd.count, part.suffix(2) == lineEnd {
                    result.append(lineEnd)
                }
            } else {
                result.append(part)
            }
            if index + 1 < delimiters.count { result.append(delimiter) }
        }
        return result
    }

    /// Whether a body of this type carries whole HTTP messages (`Redaction.carriesHTTPMessages(mediaType:)`: a batch's
    /// `multipart/mixed` of `application/http` parts).
    private static func carriesHTTPMessages(_ contentType: String?) -> Bool {
        guard let type = contentType?.split(separator: ";").first else { return false }
        return Redaction.carriesHTTPMessages(mediaType: type.trimmingCharacters(in: .whitespaces).lowercased())
    }

    /// A body that carries HTTP messages with their secrets replaced as an outer message's are: a secret header
    /// line's value by the placeholder of its name, the secret items of a request line's target and of the URLs the
    /// other lines quote as a `Location`'s. A body that is not UTF-8 text is kept as it is (its secrets hidden by value
    /// only), and so is one that holds no such secret, byte for byte. A recorded body redacts to itself.
    private static func hidingHTTPMessageSecretsByName(in data: Data) -> Data {
        guard let text = utf8Text(data) else { return data }
        let hidden = Redaction.httpMessageLines(
            text,
            field: { name, value in
                HTTPHeader.isSensitive(name: name) ? placeholder(name) : redactedURLsQuoted(in: value)
            },
            target: redactedURLText, other: redactedURLsQuoted)
        return hidden == text ? data : Data(hidden.utf8)
    }

    /// A multipart body with each part whose content is JSON with a secret key (`Redaction.jsonParts`: an upload's
    /// metadata, a batch's inner answer handing out a token) written as a JSON answer is recorded: sorted keys, the
    /// secret keys' values placeholders. A body that is not UTF-8 text, or holds no such part, is kept as it is. An
    /// inner message's `Content-Length` is set afterwards (``withInnerLengths(of:in:contentType:)``).
    private static func hidingJSONPartSecrets(in data: Data, contentType: String?) -> Data {
        guard let contentType, contentType.lowercased().hasPrefix("multipart/"), let text = utf8Text(data) else {
            return data
        }
        var shown = text
        let options: JSONSerialization.WritingOptions = [.sortedKeys, .withoutEscapingSlashes]
        // From the last part back, so that the ranges before stay valid.
        for (range, json) in Redaction.jsonParts(of: text, contentType: contentType).reversed()
        where containsSecretKey(json) {
            let redacted = try? JSONSerialization.data(withJSONObject: redactingSecretKeys(json), options: options)
            shown.replaceSubrange(
                range, with: redacted.map { String(decoding: $0, as: UTF8.self) } ?? placeholder("body"))
        }
        return shown == text ? data : Data(shown.utf8)
    }

    /// `redacted`, the recorded form of the batch body `original`, with the `Content-Length` of each inner message
    /// whose body redaction changed moved by as many bytes as its body: replay hands a batch parser, which reads each
    /// inner body by that length, parts it can read. A body that is not UTF-8 text, or whose parts redaction did not
    /// keep one for one, is returned as it is.
    static func withInnerLengths(of original: Data, in redacted: Data, contentType: String?) -> Data {
        guard original != redacted, let contentType, let before = utf8Text(original), let after = utf8Text(redacted)
        else { return redacted }
        let shown = innerLengthsMatched(before, after, contentType: contentType, depth: 0)
        return shown == after ? redacted : Data(shown.utf8)
    }

    /// `after`, the redacted form of the multipart text `before` (`depth` levels down in a batch), with its inner
    /// messages' `Content-Length`s moved as ``withInnerLengths(of:in:contentType:)`` moves them, in the changesets it
    /// holds (multipart parts of their own) too.
    private static func innerLengthsMatched(_ before: String, _ after: String, contentType: String, depth: Int)
        -> String
    {
        guard let boundary = SwiftConnect.HeaderParameters.value(of: "boundary", in: contentType), !boundary.isEmpty
        else { return after }
        let delimiter = "--" + boundary
        let originalParts = before.components(separatedBy: delimiter)
        var parts = after.components(separatedBy: delimiter)
        guard parts.count == originalParts.count else { return after }
        for index in parts.indices.dropFirst() where parts[index] != originalParts[index] {
            if depth < Redaction.maximumMultipartDepth, let head = parts[index].range(of: "\r\n\r\n"),
                let was = originalParts[index].range(of: "\r\n\r\n"),
                let nested = Redaction.multipartType(ofPartHead: parts[index][..<head.lowerBound])
            {
                // A changeset: its own parts, by its own boundary.
                parts[index] =
                    String(parts[index][..<head.upperBound])
                    + innerLengthsMatched(
                        String(originalParts[index][was.upperBound...]), String(parts[index][head.upperBound...]),
                        contentType: nested, depth: depth + 1)
                continue
            }
            guard let was = innerMessage(of: originalParts[index]), let now = innerMessage(of: parts[index]),
                let line = contentLengthLine(in: parts[index][now.head]),
                let colon = parts[index][line].firstIndex(of: ":"),
                let declared = Int(
                    parts[index][colon..<line.upperBound].dropFirst().trimmingCharacters(in: .whitespaces))
            else { continue }
            let length = declared + now.bodyLength - was.bodyLength
            guard length >= 0 else { continue }
            // The name as it was written.
            parts[index].replaceSubrange(colon..<line.upperBound, with: ": \(length)")
        }
        return parts.joined(separator: delimiter)
    }

    /// Where the head of the HTTP message a batch part carries lies (after the part's own head), and the length in
    /// bytes of the body after it, without the CRLF that belongs to the next delimiter; `nil` if the part has none.
    private static func innerMessage(of part: String) -> (head: Range<String.Index>, bodyLength: Int)? {
        guard let partHead = part.range(of: "\r\n\r\n"),
            let messageHead = part.range(of: "\r\n\r\n", range: partHead.upperBound..<part.endIndex)
        else { return nil }
        var body = part[messageHead.upperBound...]
        // CRLF is one `Character`.
        if body.hasSuffix("\r\n") { body = body.dropLast() }
        return (partHead.upperBound..<messageHead.lowerBound, body.utf8.count)
    }

    /// The range of the `Content-Length` line of a message head, without its line end.
    private static func contentLengthLine(in head: Substring) -> Range<String.Index>? {
        var start = head.startIndex
        while start < head.endIndex {
            let end = head[start...].range(of: "\r\n")?.lowerBound ?? head.endIndex
            if head[start..<end].lowercased().hasPrefix("content-length:") { return start..<end }
            start = end < head.endIndex ? head.index(end, offsetBy: 1) : end
        }
        return nil
    }

    /// Whether a multipart part's head names a secret field in its `Content-Disposition`.
    private static func isSecretPart(head: String) -> Bool {
        let disposition = head.components(separatedBy: "\r\n").first {
            $0.lowercased().hasPrefix("content-disposition:")
        }
        guard let disposition, let name = SwiftConnect.HeaderParameters.value(of: "name", in: disposition) else {
            return false
        }
        // A form field, as the logs judge it: `key`, `code`, `sig` too.
        return Redaction.isSensitiveQueryItem(name)
    }

    /// A response's header fields with secrets replaced: a cookie's value in `Set-Cookie` (name and attributes kept,
    /// so replay sets a cookie of the same name), other secret names' values, secret query items of a URL-valued
    /// field, of a `Link`'s references and of the URLs other fields quote, and the request's secret values anywhere.
    static func responseFields(_ fields: HeaderFields, secrets: SecretValues) -> HeaderFields {
        var redacted = HeaderFields()
        for field in fields {
            let name = field.name.rawName
            if field.name == .setCookie {
                // One field a cookie, as a HAR lists them: URLSession reports repeated fields joined with commas.
                for cookie in SetCookieFields.cookies(in: field.value) {
                    let value = secrets.hiding(in: redactedSetCookie(cookie.trimmingCharacters(in: .whitespaces)))
                    redacted.append(HeaderField(name: field.name, value: value))
                }
                continue
            }
            var value: String
            if HTTPHeader.isSensitive(name: name) {
                value = placeholder(name)
            } else if urlValuedFields.contains(field.name) {
                value = redactedURLText(field.value)
            } else if field.name == "Link" {
                // Its URI references, relative ones too: `</v1/items?page=2&access_token=…>; rel="next"`.
                value = Redaction.linkText(field.value, showing: redactedURLText)
            } else if field.name == "Refresh" {
                // Its URL, relative ones too: `0; url=/home?session_id=…`.
                value = Redaction.refreshText(field.value, showing: redactedURLText)
            } else {
                // The URLs another field quotes (`Refresh: 0; url=https://…?session_id=…`).
                value = redactedURLsQuoted(in: field.value)
            }
            value = secrets.hiding(in: value)
            redacted.append(HeaderField(name: field.name, value: value))
        }
        return redacted
    }

    /// A response body with secret fields replaced (a token endpoint's answer: JSON at any depth, JSON lines, a
    /// URL-encoded form, as GitHub's and OAuth 1.0a's answer by default, XML's elements and attributes, as a SOAP
    /// login's, or the JSON data of a server-sent event stream's events), the credential of a plain-text body of
    /// credentials (`Bearer …`), and the request's secret values hidden
    /// wherever they appear (a server that echoes the request). JSON that cannot be read is withheld whole
    /// (``unreadableJSONBody``).
    static func responseBody(_ data: Data, contentType: String?, secrets: SecretValues) -> Data {
        if carriesHTTPMessages(contentType) {
            // A batch's answers (`application/http` parts): their fields, a `Set-Cookie` among them, as outer ones, and
            // their JSON bodies as JSON answers.
            let byName = hidingJSONPartSecrets(in: hidingHTTPMessageSecretsByName(in: data), contentType: contentType)
            return withInnerLengths(
                of: data, in: hidingValues(in: byName, secrets: secrets), contentType: contentType)
        }
        if let text = utf8Text(data), isForm(contentType) || isFormAsText(text, contentType: contentType) {
            return hidingValues(in: Data(redactedForm(text).utf8), secrets: secrets)
        }
        if let text = hidingPlainTextCredential(in: data, contentType: contentType) {
            return hidingValues(in: Data(text.utf8), secrets: secrets)
        }
        if isEventStream(contentType), let text = utf8Text(data) {
            // Each event's JSON data as a JSON answer (a device login's token pushed once approved).
            return hidingValues(in: hidingQuotedURLSecrets(in: Data(redactedEventStream(text).utf8)), secrets: secrets)
        }
        if let (complete, tail) = cutJSONLines(data) {
            // A JSON Lines stream that broke mid-line: its complete lines as JSON lines, and what came of the cut one
            // with the values under a secret key it reached hidden (read token by token: it does not parse).
            let lines = redactedJSONLines(complete) ?? hidingQuotedURLSecrets(in: complete)
            let cut = hidingValues(in: tail, secrets: SecretValues(values: secretStringsScanned(in: tail)))
            return hidingValues(in: lines + cut, secrets: secrets)
        }
        if isUnreadableJSON(data, contentType: contentType) { return Data(unreadableJSONBody.utf8) }
        if isXML(data, contentType: contentType) {
            return hidingValues(inXML: hidingQuotedURLSecrets(in: redactedXML(data) ?? data), secrets: secrets)
        }
        let redacted = redactedJSON(data) ?? redactedJSONLines(data) ?? hidingQuotedURLSecrets(in: data)
        return hidingValues(in: redacted, secrets: secrets)
    }

    /// A plain-text body that is one line of credentials (`Bearer …`, `Basic …`:
    /// `Redaction.plainTextCredential(in:contentType:)`) with its credential replaced, as the logs hide it; `nil` for
    /// another body.
    private static func hidingPlainTextCredential(in data: Data, contentType: String?) -> String? {
        guard let text = utf8Text(data),
            let credential = Redaction.plainTextCredential(in: text, contentType: contentType)
        else { return nil }
        return text.replacingCharacters(in: credential, with: Redaction.placeholder)
    }

    /// UTF-8 text with the secrets of each URL it quotes (an error page's "see https://…?token=…", an XML
    /// `<Location>`) replaced as a `Location`'s are (``redactedURLText(_:)``), as the logs hide them; other bytes, and
    /// text that quotes no URL with a secret, as they are.
    private static func hidingQuotedURLSecrets(in data: Data) -> Data {
        guard let text = utf8Text(data), Redaction.quotesURL(text) else { return data }
        let hidden = redactedURLsQuoted(in: text)
        return hidden == text ? data : Data(hidden.utf8)
    }

    /// `text` with every absolute URL it quotes redacted as ``redactedURLText(_:)`` redacts a `Location`.
    static func redactedURLsQuoted(in text: String) -> String {
        Redaction.urlsInText(text, showing: redactedURLText)
    }

    /// Whether `data` is XML as the logs judge it (`XMLRedaction.isXML`: an XML media type, or text starting with
    /// `<` that claims to be neither JSON nor a form).
    ///
    /// Its start is read as UTF-8, leniently: XML's markup is ASCII in every charset but UTF-16, so a body in
    /// ISO-8859-1 or Windows-1252 (an older SOAP service's) is judged, and scanned byte by byte, alike.
    private static func isXML(_ data: Data, contentType: String?) -> Bool {
        guard !data.isEmpty else { return false }
        let type = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        return XMLRedaction.isXML(type: type, text: String(decoding: data.prefix(4096), as: UTF8.self))
    }

    /// XML with the content of each element and the value of each attribute whose name is secret (by the logs' rules,
    /// `XMLRedaction`) replaced by the placeholder of that name, escaped as XML text (`&lt;redacted:password&gt;`) so
    /// that the body is still XML a parser reads, and reads as `<redacted:password>`; `nil` when `data` holds no
    /// such secret (it is then kept byte for byte). The bytes between are kept as they are, in whatever charset they
    /// are.
    private static func redactedXML(_ data: Data) -> Data? {
        let bytes = [UInt8](data)
        let ranges = XMLRedaction.namedSecretRanges(in: bytes)
        guard !ranges.isEmpty else { return nil }
        var result = Data()
        result.reserveCapacity(bytes.count)
        var position = 0
        for (name, range) in ranges {
            result.append(contentsOf: bytes[position..<range.lowerBound])
            result.append(contentsOf: xmlEscaped(placeholder(name)).utf8)
            position = range.upperBound
        }
        result.append(contentsOf: bytes[position...])
        return result
    }

    /// XML with `secrets` hidden as ``hidingValues(in:secrets:)`` hides them, each placeholder escaped as XML text
    /// (`&lt;redacted&gt;`): a bare `<redacted>` reads as a tag, and is not allowed in an attribute's value. Left
    /// bare in XML that held the placeholder's text already, where the two could not be told apart.
    private static func hidingValues(inXML data: Data, secrets: SecretValues) -> Data {
        let placeholder = Data(Redaction.placeholder.utf8)
        let hidden = hidingValues(in: data, secrets: secrets)
        guard hidden != data, data.range(of: placeholder) == nil else { return hidden }
        let escaped = Data(xmlEscaped(Redaction.placeholder).utf8)
        return RequestNormalization.replacing(placeholder, in: hidden, with: escaped)
    }

    /// An XML request body with the content of each element and the value of each attribute whose name is secret
    /// replaced by the library's `<redacted>`: what hiding by value gives a longer secret there (so that recordings
    /// made before keep matching), for a short one too, which hiding by value leaves (a 3-character password).
    ///
    /// Only for a request being sent: a recorded body holds the bare placeholder, which a second pass would read as
    /// a tag never closed.
    private static func hidingXMLSecretsByName(in data: Data) -> Data {
        let bytes = [UInt8](data)
        let ranges = XMLRedaction.namedSecretRanges(in: bytes)
        guard !ranges.isEmpty else { return data }
        var result = Data()
        result.reserveCapacity(bytes.count)
        var position = 0
        for (_, range) in ranges {
            result.append(contentsOf: bytes[position..<range.lowerBound])
            result.append(contentsOf: Redaction.placeholder.utf8)
            position = range.upperBound
        }
        result.append(contentsOf: bytes[position...])
        return result
    }

    /// `text` escaped for XML content and attribute values: `&`, `<`, `>`, `"` and `'` as references.
    private static func xmlEscaped(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&apos;"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// Whether `contentType` is a URL-encoded form.
    private static func isForm(_ contentType: String?) -> Bool {
        contentType?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true
    }

    /// Whether `text` is a form answered as `text/plain` or without a type (an older OAuth provider's
    /// `access_token=…&expires=3600`), as the logs read one (`Redaction.readsAsForm`).
    private static func isFormAsText(_ text: String, contentType: String?) -> Bool {
        let type = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        return (type.isEmpty || type == "text/plain") && Redaction.readsAsForm(text)
    }

    /// The secret values a response hands out, to hide wherever a later exchange shows them: each secret cookie's value
    /// in `Set-Cookie` (``isSecretCookie(_:)``; the engine sends it back below the transport, where no redaction by
    /// name sees it), the value of a field named like a secret or holding credentials (`X-Auth-Token`,
    /// `X-Upstream: Bearer …`), and every string under a secret key of a JSON body (a token endpoint's
    /// `access_token`).
    static func secretsHandedOut(by response: ConnectResponse) -> [String] {
        secretsHandedOut(fields: response.head.headerFields, body: response.data)
    }

    /// The secret values a response with these fields and this body hands out: its cookies' and secret fields'
    /// values, the strings under a secret name of its body (JSON, JSON lines, a URL-encoded form, XML's secret
    /// elements and attributes, or an event stream's JSON data; JSON that cannot be parsed, read token by token), the
    /// credential of a plain-text body of credentials (`Bearer …`), and the secret items of the URLs it quotes (a
    /// `Location`'s `#access_token=…`, a `Link`'s, an upload link's `?upload_token=…` in the body).
    static func secretsHandedOut(fields: HeaderFields, body: Data) -> [String] {
        // The body, or a later request, may quote a secret field's value (an `X-Auth-Token` the JSON repeats).
        // Cookies by ``isSecretCookie(_:)``; the other fields as the logs read them.
        var others = HeaderFields()
        for field in fields where field.name != .setCookie { others.append(field) }
        var found =
            cookies(in: fields).filter(isSecretCookie).map(\.value) + SecretValues.values(handedOutIn: others)
            + secretsOfQuotedURLs(fields: fields, body: body)
        if let type = fields[.contentType], type.lowercased().hasPrefix("multipart/") {
            // The JSON parts of a multipart answer (a batch's inner login answer).
            for part in Redaction.jsonParts(of: String(decoding: body, as: UTF8.self), contentType: type) {
                collectSecretStrings(part.json, underSecretKey: false, into: &found)
            }
        }
        if isXML(body, contentType: fields[.contentType]) {
            return found + XMLRedaction.secretValues(in: String(decoding: body, as: UTF8.self))
        }
        if let text = String(data: body, encoding: .utf8),
            let credential = Redaction.plainTextCredential(in: text, contentType: fields[.contentType])
        {
            // Credentials answered as text (`Bearer …`).
            return found + [String(text[credential])]
        }
        if let text = String(data: body, encoding: .utf8),
            isForm(fields[.contentType]) || isFormAsText(text, contentType: fields[.contentType])
        {
            return found + SecretValues.formSecrets(text)
        }
        if isEventStream(fields[.contentType]), let text = String(data: body, encoding: .utf8) {
            return found + secretsHandedOut(byEventStream: text)
        }
        if isUnreadableJSON(body, contentType: fields[.contentType]) { return found + secretStringsScanned(in: body) }
        for document in jsonDocuments(in: body) {
            collectSecretStrings(document, underSecretKey: false, into: &found)
        }
        return found
    }

    /// The values of the secret items (query, fragment) and the passwords of the URLs a response quotes: its
    /// URL-valued fields, a `Link`'s references, the absolute URLs other fields and its text quote, and in JSON, each
    /// string that is a URL or a relative link (`Redaction.urlsInString`), the escaped `\/` of its text read as `/`.
    private static func secretsOfQuotedURLs(fields: HeaderFields, body: Data) -> [String] {
        var urls: [String] = []
        // Each URL `showing` is asked for is kept; the text it returns is not used.
        let collect = { (url: String) -> String in
            urls.append(url)
            return url
        }
        for field in fields where !HTTPHeader.isSensitive(name: field.name.rawName) {
            if urlValuedFields.contains(field.name) {
                urls.append(field.value)
            } else if field.name == "Link" {
                _ = Redaction.linkText(field.value, showing: collect)
            } else {
                _ = Redaction.urlsInText(field.value, showing: collect)
            }
        }
        let documents = jsonDocuments(in: body)
        if documents.isEmpty {
            // Text only: a binary body (a download) is not decoded to be searched.
            if let text = String(data: body, encoding: .utf8) { _ = Redaction.urlsInText(text, showing: collect) }
        } else {
            for document in documents { collectStrings(document) { _ = Redaction.urlsInString($0, showing: collect) } }
        }
        return urls.flatMap(secretsOfURL)
    }

    /// The values of the secret query and fragment items of `url` (`SecretValues.formSecrets`), and its password.
    private static func secretsOfURL(_ url: String) -> [String] {
        var found: [String] = []
        if let password = URLComponents(string: url)?.password, !password.isEmpty { found.append(password) }
        guard let mark = url.firstIndex(where: { $0 == "?" || $0 == "#" }) else { return found }
        return found + SecretValues.formSecrets(url[url.index(after: mark)...].replacingOccurrences(of: "#", with: "&"))
    }

    /// Calls `body` with every string of a JSON value, its objects' keys too, at any depth.
    private static func collectStrings(_ value: Any, _ body: (String) -> Void) {
        if let object = value as? [String: Any] {
            for (key, child) in object {
                body(key)
                collectStrings(child, body)
            }
        } else if let array = value as? [Any] {
            for child in array { collectStrings(child, body) }
        } else if let string = value as? String {
            body(string)
        }
    }

    /// The JSON value `body` is, or the values of its lines (JSON lines); none when it is neither, or nests too deep
    /// to walk.
    private static func jsonDocuments(in body: Data) -> [Any] {
        guard startsLikeJSON(body), !JSONDepth.exceeds(body, limit: Redaction.maximumJSONDepth) else { return [] }
        if let json = parsedJSON(body) { return [json] }
        return jsonLines(body) ?? []
    }

    /// Whether `data` starts with `{` or `[` after a byte order mark and white space.
    static func startsLikeJSON(_ data: Data) -> Bool {
        let first = withoutBOM(data).first { !jsonWhitespace.contains($0) }
        return first == UInt8(ascii: "{") || first == UInt8(ascii: "[")
    }

    /// The values of JSON lines (NDJSON), blank lines skipped; `nil` unless every other line is a JSON value.
    static func jsonLines(_ data: Data) -> [Any]? {
        guard data.contains(0x0A) else { return nil }
        var values: [Any] = []
        for line in withoutBOM(data).split(separator: 0x0A) {
            guard line.contains(where: { ![0x20, 0x09, 0x0D].contains($0) }) else { continue }
            guard let json = try? JSONSerialization.jsonObject(with: Data(line), options: [.fragmentsAllowed]) else {
                return nil
            }
            values.append(json)
        }
        return values.isEmpty ? nil : values
    }

    /// A body of JSON lines whose last line was cut (a stream that broke mid-line): its complete lines, each JSON or
    /// blank, and the cut line's bytes, which do not parse; `nil` for any other body.
    static func cutJSONLines(_ data: Data) -> (complete: Data, tail: Data)? {
        guard let lastLineEnd = data.lastIndex(of: 0x0A), lastLineEnd < data.index(before: data.endIndex) else {
            return nil
        }
        let complete = data[...lastLineEnd]
        let tail = data[data.index(after: lastLineEnd)...]
        guard tail.contains(where: { !jsonWhitespace.contains($0) }), parsedJSON(Data(tail)) == nil,
            !JSONDepth.exceeds(Data(complete), limit: Redaction.maximumJSONDepth), jsonLines(Data(complete)) != nil
        else { return nil }
        return (Data(complete), Data(tail))
    }

    /// JSON lines with the values of secret keys replaced line by line (a line without one kept byte for byte);
    /// `nil` when `data` is not JSON lines, nests too deep to walk, or has no secret key.
    private static func redactedJSONLines(_ data: Data) -> Data? {
        guard !JSONDepth.exceeds(data, limit: Redaction.maximumJSONDepth), let values = jsonLines(data),
            values.contains(where: containsSecretKey)
        else { return nil }
        let data = withoutBOM(data)
        let options: JSONSerialization.WritingOptions = [.sortedKeys, .withoutEscapingSlashes]
        var lines: [Data] = []
        for line in data.split(separator: 0x0A, omittingEmptySubsequences: false) {
            guard let json = try? JSONSerialization.jsonObject(with: Data(line), options: [.fragmentsAllowed]),
                containsSecretKey(json)
            else {
                lines.append(Data(line))
                continue
            }
            guard
                let redacted = try? JSONSerialization.data(withJSONObject: redactingSecretKeys(json), options: options)
            else { return Data(placeholder("body").utf8) }
            lines.append(redacted)
        }
        return Data(lines.joined(separator: [0x0A]))
    }

    /// A URL-valued response field (`Location`) with a password (and a username that is the credential) and the
    /// values of secret query and fragment items replaced: an OAuth answer's `Location: myapp://cb#access_token=…`
    /// keeps its shape, not its token. Text that holds none is kept byte for byte.
    private static func redactedURLText(_ text: String) -> String {
        // Text no URL parser takes is hidden as the logs hide it, rather than kept whole.
        guard var components = URLComponents(string: text) else { return Redaction.urlText(text) }
        var changed = false
        if isCredential(user: components.user, password: components.password) {
            components.percentEncodedUser = encoded(placeholder("user"))
            changed = true
        }
        if components.password != nil {
            components.percentEncodedPassword = encoded(placeholder("password"))
            changed = true
        }
        if let query = components.percentEncodedQuery, redactedForm(query) != query {
            components.percentEncodedQuery = redactedForm(query)
            changed = true
        }
        if let fragment = components.percentEncodedFragment, redactedForm(fragment) != fragment {
            components.percentEncodedFragment = redactedForm(fragment)
            changed = true
        }
        let path = redactedPathParameters(components.percentEncodedPath)
        if path != components.percentEncodedPath {
            components.percentEncodedPath = path
            changed = true
        }
        return changed ? components.string ?? placeholder("url") : text
    }

    static func collectSecretStrings(_ value: Any, underSecretKey: Bool, into found: inout [String]) {
        if let object = value as? [String: Any] {
            for (key, child) in object {
                let secret = HTTPHeader.isSensitive(name: key) || Redaction.isNamedSecretValue(key, in: object)
                collectSecretStrings(child, underSecretKey: underSecretKey || secret, into: &found)
            }
        } else if let array = value as? [Any] {
            for child in array { collectSecretStrings(child, underSecretKey: underSecretKey, into: &found) }
        } else if let string = value as? String {
            if underSecretKey || Redaction.isJSONWebToken(string) {
                found.append(string)
            } else if let credential = Redaction.schemeCredential(in: string) {
                found.append(String(string[credential]))
            }
        }
    }

    /// `text` with each `<redacted:Name>` whose name `values` has replaced by its value, each such placeholder
    /// escaped as XML writes it (`&lt;redacted:Name&gt;`, in an XML answer) by its value escaped alike, and each one
    /// percent-encoded as a URL's query or a form holds it (`%3Credacted%3AName%3E`, as ``url(_:secrets:)`` and a
    /// `Location` write it) by its value percent-encoded alike.
    static func filling(_ text: String, with values: [String: String]) -> String {
        guard !values.isEmpty,
            text.contains("<redacted:") || text.contains("&lt;redacted:") || text.contains(encodedPlaceholderStart)
        else { return text }
        var filled = text
        for (name, value) in values {
            filled = filled.replacingOccurrences(of: placeholder(name), with: value)
                .replacingOccurrences(of: xmlEscaped(placeholder(name)), with: xmlEscaped(value))
                .replacingOccurrences(of: encoded(placeholder(name)), with: encoded(value))
        }
        return filled
    }

    /// How every percent-encoded placeholder of a name starts.
    private static let encodedPlaceholderStart = "%3Credacted%3A"

    /// `data` filled as ``filling(_:with:)`` fills text, when it is UTF-8 text; as it is when it holds no placeholder
    /// to fill.
    static func filling(_ data: Data, with values: [String: String]) -> Data {
        guard !values.isEmpty, let text = utf8Text(data) else { return data }
        let filled = filling(text, with: values)
        return filled == text ? data : Data(filled.utf8)
    }

    /// `data` as UTF-8 text, a leading byte order mark kept (as U+FEFF), which `String(data:encoding:)` drops on
    /// Linux: a body written back from its text then loses three bytes the server sent. `nil` when `data` is not
    /// UTF-8.
    static func utf8Text(_ data: Data) -> String? {
        guard let text = String(data: data, encoding: .utf8) else { return nil }
        guard data.starts(with: [0xEF, 0xBB, 0xBF]), text.unicodeScalars.first != "\u{FEFF}" else { return text }
        return "\u{FEFF}" + text
    }

    /// The cookies `Set-Cookie` fields set, as an archive lists them.
    /// Whether a cookie a response sets is a secret to hide wherever a later exchange shows its value: one whose
    /// name says so (`session_id`, `auth_token`), or whose value is long enough to be a token (a session ID:
    /// `PHPSESSID`, `connect.sid`, `_gh_sess`), digits only excepted. A short value under another name (`beta=true`,
    /// `theme=dark`, `user_id=1042`, a timestamp) is data that later bodies and queries use as data: hidden by value,
    /// every `true` of a later JSON body became a placeholder (invalid JSON) and `?archived=true` matched nothing. The
    /// `Set-Cookie` and `Cookie` fields themselves are hidden whatever their cookies.
    static func isSecretCookie(_ cookie: HAR.Cookie) -> Bool {
        if !cookie.name.isEmpty, HTTPHeader.isSensitive(name: cookie.name) { return true }
        return cookie.value.count >= 12 && !cookie.value.allSatisfy({ $0.isASCII && $0.isNumber })
    }

    static func cookies(in fields: HeaderFields) -> [HAR.Cookie] {
        fields[values: .setCookie].flatMap(SetCookieFields.cookies(in:)).compactMap { value -> HAR.Cookie? in
            let (name, value) = nameAndValue(of: value)
            guard !name.isEmpty || !value.isEmpty else { return nil }
            return HAR.Cookie(name: name, value: value)
        }
    }

    /// The name and value of a `Set-Cookie` value, trimmed. A pair without `=` is a value without a name
    /// (RFC 6265bis §5.6, as browsers read it): all of it is the secret, none of it a name to keep.
    private static func nameAndValue(of setCookie: Substring) -> (name: String, value: String) {
        let pair = setCookie.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard let equals = pair.firstIndex(of: "=") else { return ("", pair.trimmingCharacters(in: .whitespaces)) }
        return (
            pair[..<equals].trimmingCharacters(in: .whitespaces),
            pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        )
    }

    // MARK: - Helpers

    /// The response fields whose value is a URL.
    private static let urlValuedFields: [HeaderField.Name] = [.location, "Content-Location"]

    /// `Set-Cookie: name=value; attributes` with the value replaced.
    private static func redactedSetCookie(_ value: String) -> String {
        let parts = value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)
        let name = nameAndValue(of: Substring(value)).name
        return "\(name)=\(placeholder(name))" + (parts.count > 1 ? ";" + String(parts[1]) : "")
    }

    /// A percent-encoded query or form with the values of secret names replaced by an encoded placeholder, read as
    /// the logs read it (``Redaction/secretItems(in:)``: a value runs to the next `&`); every separator before a
    /// hidden value kept.
    private static func redactedForm(_ text: String) -> String {
        Redaction.replacingSecretValues(in: text) { encoded(placeholder($0.name)) }
    }

    /// A percent-encoded path with the values of its secret path parameters (`/shop;jsessionid=…/cart`, after a
    /// segment's first `;`) replaced, as the logs hide them; a path without `;` as it is.
    private static func redactedPathParameters(_ path: String) -> String {
        guard path.contains(";") else { return path }
        return path.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            guard let semicolon = segment.firstIndex(of: ";") else { return String(segment) }
            return String(segment[...semicolon]) + redactedForm(String(segment[segment.index(after: semicolon)...]))
        }.joined(separator: "/")
    }

    /// `text` percent-encoded but for RFC 3986's unreserved characters.
    private static func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }

    private static let unreserved: CharacterSet = {
        var set = CharacterSet()
        set.insert(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return set
    }()

    /// JSON with the values of secret keys replaced at any depth, re-serialised with sorted keys; `nil` when `data`
    /// is not a JSON object or array, nests too deep to walk, or has no secret key. JSON with a secret key that cannot
    /// be re-serialised is withheld whole.
    private static func redactedJSON(_ data: Data) -> Data? {
        guard startsLikeJSON(data), !JSONDepth.exceeds(data, limit: Redaction.maximumJSONDepth),
            let json = parsedJSON(data), containsSecretKey(json)
        else { return nil }
        let options: JSONSerialization.WritingOptions = [.sortedKeys, .withoutEscapingSlashes]
        guard let redacted = try? JSONSerialization.data(withJSONObject: redactingSecretKeys(json), options: options)
        else { return Data(placeholder("body").utf8) }
        return redacted
    }

    /// Whether a JSON value cannot hold a secret: `true`, `false` or `null` (JSONSerialization reads a Boolean as an
    /// `NSNumber` of type `c`; a number `1` is one too, but of another type).
    private static func isSecretFree(_ value: Any) -> Bool {
        if value is NSNull { return true }
        guard let number = value as? NSNumber else { return false }
        return String(cString: number.objCType) == "c"
    }

    /// Whether a JSON value has a secret key at any depth, or a string quoting a URL with a secret in it (a presigned
    /// `download_url`, a relative `next` link: `Redaction.urlsInString`).
    static func containsSecretKey(_ value: Any) -> Bool {
        if let object = value as? [String: Any] {
            return object.contains { key, child in
                HTTPHeader.isSensitive(name: key) || Redaction.isNamedSecretValue(key, in: object)
                    || Redaction.urlsInString(key, showing: redactedURLText) != key
                    || containsSecretKey(child)
            }
        }
        if let array = value as? [Any] { return array.contains(where: containsSecretKey) }
        if let string = value as? String {
            return Redaction.schemeCredential(in: string) != nil || Redaction.isJSONWebToken(string)
                || Redaction.urlsInString(string, showing: redactedURLText) != string
                || Redaction.embeddedRedacted(string) != nil
        }
        return false
    }

    /// A JSON value with the values of secret keys replaced by placeholders, and the secrets of the URLs its strings
    /// and its keys quote (a map keyed by presigned URL) replaced as a `Location`'s are, at any depth. An object two of
    /// whose keys would read alike once hidden becomes `<redacted:body>`, rather than one entry standing for two.
    static func redactingSecretKeys(_ value: Any) -> Any {
        if let object = value as? [String: Any] {
            var result: [String: Any] = [:]
            for (key, child) in object {
                let shown = Redaction.urlsInString(key, showing: redactedURLText)
                if HTTPHeader.isSensitive(name: key), isSecretFree(child) {
                    // `"private": false`, `"session": null`: no secret, and a placeholder would be a string where
                    // the replayed answer's decoder expects a Bool (and would make `true` and `false` match alike).
                    result[shown] = child
                } else if HTTPHeader.isSensitive(name: key) {
                    result[shown] = placeholder(shown)
                } else if Redaction.isNamedSecretValue(key, in: object) {
                    // Named as the pair names it (`<redacted:Authorization>`), for a replay to fill.
                    result[shown] = placeholder(Redaction.secretPairName(of: object) ?? shown)
                } else {
                    result[shown] = redactingSecretKeys(child)
                }
            }
            return result.count == object.count ? result : placeholder("body")
        }
        if let array = value as? [Any] { return array.map(redactingSecretKeys) }
        if let string = value as? String {
            // `Bearer …` under a neutral key: credentials whatever the name, as the logs read them.
            if let credential = Redaction.schemeCredential(in: string) {
                return string.replacingCharacters(in: credential, with: placeholder("credential"))
            }
            // A JSON Web Token whatever its name (`"access": "eyJ…"`, Django REST framework's SimpleJWT).
            if Redaction.isJSONWebToken(string) { return placeholder("jwt") }
            // JSON or a form carried as a string (an API Gateway event's `"body"`), its secrets hidden as the logs
            // hide them.
            if let embedded = Redaction.embeddedRedacted(string) { return embedded }
            return Redaction.urlsInString(string, showing: redactedURLText)
        }
        return value
    }

    /// `data` with `secrets` hidden: as text when it is UTF-8; otherwise in each stretch of it that is UTF-8, the bytes
    /// between kept as they are. A secret is UTF-8 text, so it is found beside binary content too (a multipart
    /// upload's `password` field before an image, a Latin-1 page echoing a token), and the binary content is unchanged.
    private static func hidingValues(in data: Data, secrets: SecretValues) -> Data {
        guard !secrets.isEmpty, !data.isEmpty else { return data }
        if let text = utf8Text(data) {
            let hidden = secrets.hiding(in: text)
            return hidden == text ? data : Data(hidden.utf8)
        }
        var result = Data()
        data.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            // `bytes` up to `copied` are in `result`; the text being read starts at `textStart`.
            var copied = 0
            var textStart = 0
            var index = 0
            func hideInText() {
                guard index - textStart >= SecretValues.minimumLength else { return }
                let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[textStart..<index]), as: UTF8.self)
                let hidden = secrets.hiding(in: text)
                guard hidden != text else { return }
                result.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[copied..<textStart]))
                result.append(contentsOf: hidden.utf8)
                copied = index
            }
            while index < bytes.count {
                if let length = validUTF8Length(in: bytes, at: index) {
                    index += length
                    continue
                }
                // A byte that starts no character ends the text before it, and is kept.
                hideInText()
                index += 1
                textStart = index
            }
            hideInText()
            result.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[copied...]))
        }
        return result
    }

    /// The length of the well-formed UTF-8 character that starts at `index` (RFC 3629: no overlong form, no
    /// surrogate, nothing above U+10FFFF), or `nil` when none does.
    private static func validUTF8Length(in bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Int? {
        let lead = bytes[index]
        if lead < 0x80 { return 1 }
        // The length, and the range of the second byte where it is narrower than 0x80...0xBF.
        let length: Int
        var (low, high): (UInt8, UInt8) = (0x80, 0xBF)
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: (length, low) = (3, 0xA0)
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: (length, high) = (3, 0x9F)
        case 0xF0: (length, low) = (4, 0x90)
        case 0xF1...0xF3: length = 4
        case 0xF4: (length, high) = (4, 0x8F)
        default: return nil
        }
        guard index + length <= bytes.count, bytes[index + 1] >= low, bytes[index + 1] <= high else { return nil }
        var offset = 2
        while offset < length {
            guard bytes[index + offset] & 0xC0 == 0x80 else { return nil }
            offset += 1
        }
        return length
    }
}
