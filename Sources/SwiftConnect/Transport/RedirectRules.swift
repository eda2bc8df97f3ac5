import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Every redirect rule, in one place: which redirects are followed, what a followed request keeps, and how many hops
/// an exchange may take. The core's exchange asks ``nextHop(after:answeredBy:location:hasBody:)`` (through
/// ``RedirectRule``) for every 3xx of every engine, URLSession's included: URLSession's delegate declines every
/// redirect, so the session follows none itself. The rules read and write the core's ``ConnectRequest`` and
/// ``ConnectResponse``: no `URLRequest` or `HTTPURLResponse` is made to follow a redirect. The rules:
///
/// - **Only http and https.** A redirect to any other scheme is not followed, on any platform: the 3xx response
///   is the answer. FoundationNetworking takes a `Location` with another scheme and no host (`file:///etc/passwd`,
///   `data:…`, `mailto:…`) for a path on the same server and sends the request there (``leavesHTTP(_:to:)``).
/// - **A host to go to.** A redirect to a URL without a host, or with one that no host name or IP address could be
///   (`//a%20b/`), is not followed (``namesNoHost(_:)``).
/// - **A port to connect to.** Nor is one whose port is outside 1...65535 (`:0`, `:99999`): no server listens there,
///   and each engine failed it in its own way (``namesNoUsablePort(_:)``).
/// - **No credentials from the server.** Nor is a redirect to a URL with a `user:password@` part that the original
///   URL did not have, or to another origin with any: libcurl would send those credentials as
///   `Authorization: Basic` (``bringsCredentialsOfItsOwn(_:to:from:)``).
/// - **Credentials stay home.** Every header ``HTTPHeader`` treats as sensitive (`Authorization`, `Cookie`,
///   `X-Api-Key`, `*-Token`…) is removed from a redirected request that changes scheme, host or port, and so is a
///   `Host` the caller set (``redirect(_:from:droppedBody:)``).
/// - **Method and body by status.** 307 and 308 keep the method and the body, as do 301 and 302 for a method
///   other than POST; 303, and 301/302 of a POST, become a GET without the body and without the headers that
///   described it, empty or not (``keepsMethod(_:status:)``, ``describesBody(_:)``). The core sends the body again
///   itself, on every engine (so FoundationNetworking, which never sends a body again after a redirect, is never
///   asked to). A body it cannot read twice (a stream) is not sent again: a redirect that keeps the method is not
///   followed, and the 3xx response is the answer, which the error handler reports (``notFollowed(_:)``).
/// - **One target.** A response with several `Location` fields that differ is the answer (``location(of:)``), and so
///   is one whose `Location` has a space or a control character inside, once the blanks around it are trimmed
///   (``hasBlankOrControlInside(_:)``).
/// - **At most ``maxRedirects`` hops.**
enum RedirectRules {
    /// Whether `request` (uploading `bodyFile`, if any) has a body the core can send again on a redirect: one in
    /// memory or in a file, never a stream.
    static func hasBodyToSendAgain(_ request: ConnectRequest, bodyFile: URL? = nil) -> Bool {
        bodyFile != nil || !(request.httpBody?.isEmpty ?? true)
    }

    /// The request to follow: `request`, without credentials when it changes scheme, host or port, and without
    /// the headers describing a body (``describesBody(_:)``) when `droppedBody` and it became a GET or HEAD.
    static func redirect(_ request: ConnectRequest, from original: ConnectRequest?, droppedBody: Bool = false)
        -> ConnectRequest
    {
        var redirected = request
        if droppedBody, isBodyless(request) {
            for field in request.headerFields where describesBody(field.name) {
                redirected.headerFields[field.name] = nil
            }
        }
        guard let from = original?.url, !from.hasSameOrigin(as: request.url) else { return redirected }
        for field in request.headerFields where HTTPHeader.isSensitive(name: field.name.rawName) {
            redirected.headerFields[field.name] = nil
        }
        // A `Host` the caller set names the first server (a virtual host behind an address): sent to another origin,
        // it would reach the wrong site there and tell it an internal name. The engine writes the new target's.
        redirected.headerFields[HeaderField.Name("Host")] = nil
        return redirected
    }

    /// Whether following a redirect would send credentials that its `Location` names
    /// (`http://user:password@host/`) and the original request's URL did not: an engine turns a URL's userinfo
    /// into `Authorization: Basic`, which replaced the request's own credentials, so the server that wrote the
    /// `Location` chose what was sent. The original URL's own userinfo, the caller's, may follow a redirect to the
    /// same origin only. The `Location` (`location`, resolved) is read as well as the request to follow, as
    /// Foundation's URL parsing drops the userinfo of a `//user@host/` reference on Linux and keeps it on Apple.
    static func bringsCredentialsOfItsOwn(_ location: URL?, to request: ConnectRequest, from original: URL?) -> Bool {
        [request.url, location].contains { target in
            guard let target, target.user != nil || target.password != nil else { return false }
            guard let from = original, from.hasSameOrigin(as: target) else { return true }
            return target.user != from.user || target.password != from.password
        }
    }

    /// What to add to the message of a 3xx `response` that came back as the answer: where it pointed (its
    /// `Location`, redacted) and why the rules did not follow it, when they explain it; empty without a `Location`.
    /// Built on the error path only. "Cannot be read again" is for a body from an `InputStream`. With `redacting`
    /// `false`, the `Location` is quoted as it came, for a client set not to redact (``Connect/Settings/redactsSecrets``).
    static func notFollowed(_ response: ConnectResponse, redacting: Bool = true) -> String {
        guard let location = response.header("Location") else { return "" }
        let shown = redacting ? Redaction.urlText(location) : location
        let text = " to '\(SingleLineText.make(shown))', not followed"
        if self.location(of: response) == nil { return text + ": it has several Location fields" }
        if let scheme = scheme(of: location), !isHTTP(scheme) { return text + ": it leaves HTTP" }
        if let trimmed = self.location(of: response), hasBlankOrControlInside(trimmed) {
            return text + ": it has a space or a control character inside"
        }
        let request = response.sentRequest
        let target = target(of: location, answeredBy: response.storedHead.url ?? request.url)
        if let target, namesNoUsablePort(ConnectRequest(url: target)) {
            return text + ": its port is not in 1...65535"
        }
        if bringsCredentialsOfItsOwn(target, to: request, from: request.url) {
            return text + ": its URL carries credentials (user:password@)"
        }
        if !request.body.isReplayable, keepsMethod(request, status: response.statusCode) {
            return text + ": the request body came from a stream, which cannot be read again"
        }
        return text
    }

    /// Whether a redirect with `status` keeps the method of `request` (and so would need its body again): 307 and
    /// 308 always, 301 and 302 for methods other than POST, never for GET or HEAD.
    static func keepsMethod(_ request: ConnectRequest, status: Int) -> Bool {
        guard !isBodyless(request) else { return false }
        switch status {
        case 307, 308: return true
        case 301, 302: return request.method.rawValue.uppercased() != "POST"
        default: return false
        }
    }

    /// The URL `location` names, resolved against `url` (the URL that answered), its encoding kept; `nil` for a
    /// `location` that is no URI reference.
    static func target(of location: String, answeredBy url: URL) -> URL? {
        URL(string: location, relativeTo: url)?.absoluteURL
    }

    /// `url`, the target of a redirect of a request to `original`, with `original`'s fragment when it has none of its
    /// own (RFC 9110, 10.2.2): the fragment is never sent, but the answer's URL names it.
    static func keepingFragment(of original: URL, in url: URL) -> URL {
        guard url.fragment == nil, original.fragment != nil,
            let fragment = URLComponents(url: original, resolvingAgainstBaseURL: true)?.percentEncodedFragment,
            var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        else { return url }
        components.percentEncodedFragment = fragment
        return components.url ?? url
    }

    /// Whether `request`, the next hop of a redirect, names no host a connection could be made to: none (`///x`), or
    /// one with characters that no host name or IP address has once percent-decoded (a space, `/`, `@`, NUL…:
    /// `//a%20b/`). An engine would otherwise look such a name up in the DNS, or fail in its own way. A host written
    /// with escapes that make a name (`localhos%74`, `b%C3%BCcher.example`) is followed: the engine is sent to that
    /// name, as for a base URL (`EscapedHost`).
    static func namesNoHost(_ request: ConnectRequest) -> Bool {
        switch EscapedHost.plainName(of: request.url) {
        case .success?: return false
        case .failure?: return true
        case nil: break
        }
        guard let host = request.url.host, !host.isEmpty else { return true }
        let isIPv6 = host.contains(":")
        return !host.unicodeScalars.allSatisfy { scalar in
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", "-", ".", "_": return true
            case ":": return isIPv6
            case "%": return isIPv6  // an IPv6 zone (`fe80::1%eth0`)
            default: return false
            }
        }
    }

    /// Whether `request`, the next hop of a redirect, names a port no connection can use: one outside 1...65535
    /// (`:0`, `:99999`). Foundation's URL takes any number of digits there; URLSession failed such a hop with
    /// `URLError(.badURL)` against the first URL, and another engine could cut the number to 16 bits and reach another
    /// port.
    static func namesNoUsablePort(_ request: ConnectRequest) -> Bool {
        guard let port = request.url.port else { return false }
        return !(1...65_535).contains(port)
    }

    /// Whether a redirect leaves HTTP: its `location` names a scheme other than http or https, or the request to
    /// follow has one. Both are looked at, since Foundation's URL resolution makes an http URL of a `file:`
    /// reference on Linux.
    static func leavesHTTP(_ location: String, to request: ConnectRequest) -> Bool {
        if let scheme = scheme(of: location), !isHTTP(scheme) { return true }
        guard let scheme = request.url.scheme else { return true }
        return !isHTTP(scheme)
    }

    private static func isHTTP(_ scheme: Substring) -> Bool {
        scheme.caseInsensitiveCompare("http") == .orderedSame || scheme.caseInsensitiveCompare("https") == .orderedSame
    }

    private static func isHTTP(_ scheme: String) -> Bool { isHTTP(Substring(scheme)) }

    /// The scheme of a URI reference, or `nil` for a relative reference (RFC 3986, 3.1 and 4.2: a scheme is a
    /// letter then letters, digits, `+`, `-` or `.`, before the first `:`, which comes before any `/`, `?` or `#`).
    static func scheme(of reference: String) -> Substring? {
        let trimmed = reference.drop { $0 == " " || $0 == "\t" }
        guard let colon = trimmed.firstIndex(of: ":") else { return nil }
        let candidate = trimmed[..<colon]
        guard let first = candidate.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else {
            return nil
        }
        let allowed = candidate.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII
                && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                    || "+-.".unicodeScalars.contains(scalar))
        }
        return allowed ? candidate : nil
    }

    /// Whether the field `name` describes a request body, meaningless once the redirect has none: every `Content-*`
    /// field (fetch's request-body-header names among them: `Content-Type`, `Content-Encoding`, `Content-Language`,
    /// `Content-Location`; and `Content-Length`, `Content-MD5`, `Content-Digest`…), `Transfer-Encoding`, and the
    /// body's other digests (`Digest`, `Repr-Digest`).
    static func describesBody(_ name: HeaderField.Name) -> Bool {
        let name = name.canonicalName
        return name.hasPrefix("content-") || name == "transfer-encoding" || name == "digest" || name == "repr-digest"
    }

    /// The `Location` of `response`, trimmed; `nil` without one, or when several fields name different targets:
    /// RFC 9110 (10.2.2) allows one field, and browsers follow none of several. Their values joined (`/a, /b`) are
    /// no URL either field named. The same value repeated is that value.
    ///
    /// URLSession joins repeated fields into one value, with `", "`, before the core sees them, so a value is read
    /// as joined fields wherever `,` is followed by a space or a tab: a URI reference has no bare whitespace
    /// (RFC 3986, 2 and 4.1), while a `,` on its own is legal in one (`/a,b` stays one target). A single field
    /// written that way by a server is no valid `Location` either, so every engine reads it the same way: as the
    /// fields it would be joined from. Test:
    /// `ResponseFramingTests.testSeveralLocationFieldsThatDifferAreNotFollowedOnEveryPath`.
    static func location(of response: ConnectResponse) -> String? {
        let values = response.storedHead.head.headerFields[values: .location].flatMap(joinedFields)
        guard let first = values.first else { return nil }
        for value in values.dropFirst() where value != first { return nil }
        return first
    }

    /// Whether `location`, a `Location` without the blanks around it, has a space, a tab or another control character
    /// (U+0000–U+001F, U+007F) inside. A URI reference has none (RFC 3986, 2): such a `Location` is not followed on
    /// any engine, rather than sent to what Foundation's parser makes of it (`/a b` became `/a%20b`, `/a\u{1}b` became
    /// `/a%01b`, where browsers drop a tab and keep the rest): the server's own target is unknown, and a control
    /// character there is more often an injection than a path.
    static func hasBlankOrControlInside(_ location: String) -> Bool {
        location.unicodeScalars.contains { $0.value <= 0x20 || $0.value == 0x7F }
    }

    /// The fields `value` was joined from (`/a, /b`: `/a` and `/b`), each trimmed; `value` trimmed when it has no
    /// `,` followed by whitespace.
    private static func joinedFields(_ value: String) -> [String] {
        var fields: [String] = []
        var rest = Substring(value)
        while let comma = rest.indices.first(where: { index in
            rest[index] == "," && rest.index(after: index) < rest.endIndex
                && (rest[rest.index(after: index)] == " " || rest[rest.index(after: index)] == "\t")
        }) {
            fields.append(rest[..<comma].trimmingCharacters(in: .whitespaces))
            rest = rest[rest.index(after: comma)...]
        }
        fields.append(rest.trimmingCharacters(in: .whitespaces))
        return fields
    }

    /// The most redirects one request follows, as FoundationNetworking and Apple's URLSession allow.
    static let maxRedirects = 20

    /// The request to send for the redirect `response` (its `Location` already read: `location`) of `hop`; `nil`
    /// when `response` is the answer.
    ///
    /// A 303, or a 301/302 of a POST, becomes a GET without the body and the headers that described it. The
    /// `Location` is resolved against the URL that answered. No redirect is followed to a URL that is not http or
    /// https (``leavesHTTP(_:to:)``) or that carries credentials of its own
    /// (``bringsCredentialsOfItsOwn(_:to:from:)``), and credentials are removed on a change of origin
    /// (``redirect(_:from:droppedBody:)``).
    ///
    /// - Returns: The request to send and whether it keeps the body (a `bodyFile` is uploaded again only then).
    static func nextHop(
        after hop: ConnectRequest, answeredBy response: ConnectResponse, location: String, hasBody: Bool
    )
        -> (request: ConnectRequest, keepsBody: Bool)?
    {
        let status = response.statusCode
        guard status == 301 || status == 302 || status == 303 || status == 307 || status == 308,
            let url = target(of: location, answeredBy: response.storedHead.url ?? hop.url)
        else { return nil }
        let keepsMethod = keepsMethod(hop, status: status)
        let becomesGET = !keepsMethod && !isBodyless(hop)
        // A body from a stream cannot be sent again: only a redirect that drops it (a 303, a 301/302 of a POST) is
        // followed.
        guard hop.body.isReplayable || becomesGET else { return nil }
        var next = hop
        next.url = keepingFragment(of: hop.url, in: url)
        if becomesGET {
            next.method = .get
            next.body = .none
        }
        guard !leavesHTTP(location, to: next), !namesNoHost(next), !namesNoUsablePort(next),
            !bringsCredentialsOfItsOwn(url, to: next, from: hop.url)
        else {
            return nil
        }
        // The fields that described the body go with it: a POST's become a GET's, its body empty or not.
        let droppedBody = becomesGET || hasBody || !hop.body.isReplayable
        return (redirect(next, from: hop, droppedBody: droppedBody), hasBody && !becomesGET)
    }

    /// Whether the request's method is GET or HEAD.
    private static func isBodyless(_ request: ConnectRequest) -> Bool {
        let method = request.method.rawValue.uppercased()
        return method == "GET" || method == "HEAD"
    }
}

/// SwiftConnect's redirect rules as the core's exchange asks them for each 3xx (`EngineExchange`, for every
/// `HTTPEngine`), over the core's own model: the next hop, after at most ``maxHops``. ``URLSessionTransport``'s
/// plain path asks too, to know whether to hand a 3xx over to the core.
///
/// - only to http and https URLs with a host and a port in 1...65535, never to a `Location` carrying
///   `user:password@` credentials of its own;
/// - every credential header (`Authorization`, `Cookie`, `X-Api-Key`, `*-Token`…, as ``HTTPHeader`` judges them)
///   is removed when the redirect changes scheme, host or port;
/// - 307 and 308 keep the method and the body, as do 301 and 302 for a method other than POST; 303, and 301/302
///   of a POST, become a GET without the body or the headers describing it;
/// - a body that cannot be sent again (a stream) stops a redirect that keeps the method: the 3xx response is the
///   answer.
enum RedirectRule {
    /// The most redirects one request follows (20, as URLSession allows).
    static let maxHops = RedirectRules.maxRedirects

    /// What a redirect past the limit adds to its error when it goes back to a URL a hop went to: the loop, from that
    /// URL's last visit round to it again (a server's misconfiguration, which a higher limit would not end); an empty
    /// string for a chain that only went on. The URLs are shown with their secrets redacted, at most six of them.
    static func loop(through hops: [URL], next: URL) -> String {
        guard let start = hops.lastIndex(where: { $0.absoluteString == next.absoluteString }) else { return "" }
        let loop = hops[start...].map { Redaction.url($0, redacting: true) }
        let shown =
            loop.count <= 5 ? loop : Array(loop.prefix(2)) + ["… (\(loop.count - 3) more)"] + [loop[loop.count - 1]]
        return ", in a loop: " + (shown + [Redaction.url(next, redacting: true)]).joined(separator: " → ")
    }

    /// The next request of a redirected exchange.
    struct Hop: Sendable {
        /// The request to send next: its URL is the resolved `Location`.
        var request: ConnectRequest
        /// Whether the next request carries the body again (a body from a file is uploaded again only then).
        var keepsBody: Bool
    }

    /// The request to send after `response` answered `hop`, or `nil` when `response` is the answer: not a
    /// redirect, no usable `Location`, or a redirect the rules refuse.
    ///
    /// - Parameters:
    ///   - hop: The request that `response` answered (a body from a stream cannot be sent again: a redirect that
    ///     keeps the body of such a request is not followed).
    ///   - response: The response, a 3xx or not.
    ///   - bodyFile: The file `hop`'s body was uploaded from, if any (see ``TransferOptions/bodyFile``).
    /// - Returns: The next hop, or `nil`.
    static func next(after hop: ConnectRequest, answeredBy response: ConnectResponse, bodyFile: URL? = nil) -> Hop? {
        var cookies = RedirectCookies()
        guard let next = next(after: hop, answeredBy: response, bodyFile: bodyFile, cookies: &cookies) else {
            return nil
        }
        return Hop(request: cookies.applied(to: next.request), keepsBody: next.keepsBody)
    }

    /// The next hop of an exchange that keeps the cookies its redirects set in `cookies`, and `response`'s in
    /// `cookies`: the hop's request carries only its own `Cookie` header (the caller's, kept by the rules); send
    /// `cookies.applied(to:)` of it. Each hop then gets the cookies that apply to it, not those the hops before it had.
    static func next(
        after hop: ConnectRequest, answeredBy response: ConnectResponse, bodyFile: URL? = nil,
        cookies: inout RedirectCookies
    ) -> Hop? {
        // A `Location` that is empty or not a URI reference is no redirect: the 3xx is the answer, as URLSession
        // makes it (an empty reference would resolve to the same URL, again and again). So are several that differ.
        guard (300..<400).contains(response.statusCode), let location = RedirectRules.location(of: response),
            !location.isEmpty, !RedirectRules.hasBlankOrControlInside(location), URLComponents(string: location) != nil
        else { return nil }
        let hasBody = RedirectRules.hasBodyToSendAgain(hop, bodyFile: bodyFile)
        guard let next = RedirectRules.nextHop(after: hop, answeredBy: response, location: location, hasBody: hasBody)
        else { return nil }
        if hop.foundationExtras.handlesCookies { cookies.take(setBy: response) }
        return Hop(request: next.request, keepsBody: next.keepsBody)
    }

    /// `request` with those of `cookies` that apply to its URL (domain, path, `Secure`) in its `Cookie` header, after
    /// the request's own and each in place of any of its own of the same name, in RFC 6265 §5.4's order: the longest
    /// paths first, then as `cookies` lists them (the order they were first set, the oldest first); an expired one
    /// removes its name from the header.
    static func adding(_ cookies: [HTTPCookie], to request: ConnectRequest, now: Date = Date()) -> ConnectRequest {
        let applying = cookies.compactMap { cookie -> (cookie: HTTPCookie, isExpired: Bool)? in
            let isExpired = cookie.expiresDate.map { $0 <= now } ?? false
            // An expired cookie would not be sent: asking `sends` with a time before it tells whether it applies.
            let applies = CookieRules.sends(cookie, to: request.url, now: isExpired ? .distantPast : now)
            return applies ? (cookie, isExpired) : nil
        }
        guard !applying.isEmpty else { return request }
        let names = Set(applying.map(\.cookie.name))
        // The request's own pieces as written (a nameless cookie too), but those a cookie of the redirect replaces.
        let own = CookieRules.pieces(of: request.headerFields[.cookie]).filter { !names.contains($0.name) }
        let added = applying.filter { !$0.isExpired }.enumerated()
            .sorted { left, right in
                let (leftPath, rightPath) = (left.element.cookie.path.count, right.element.cookie.path.count)
                return leftPath != rightPath ? leftPath > rightPath : left.offset < right.offset
            }
            .map { "\($0.element.cookie.name)=\($0.element.cookie.value)" }
        let pieces = own.map(\.text) + added
        var request = request
        request.headerFields[.cookie] = pieces.isEmpty ? nil : pieces.joined(separator: "; ")
        return request
    }
}

/// The cookies the redirects of one exchange set, as a browser or URLSession's cookie storage keeps them for the
/// hops that follow: a login that sets its session cookie on a 302 has it on the next hop. Each hop gets those that
/// apply to its URL (``applied(to:now:)``), so a cookie for `/app` set on the way does not go on to `/public`, and one
/// a later 3xx deletes (`Max-Age=0`, an `Expires` in the past) is no longer sent. Read by RFC 6265's rules
/// (``CookieRules``): a cookie for a domain the setter is not in (`evil.example` setting one for `bank.example` on its
/// way there), for a top-level domain, `Secure` from plain http, or from plain http in place of a `Secure` one set
/// on the way, is ignored. Kept apart from the request's own
/// `Cookie` header, which the redirect rules keep or drop by origin.
///
/// Bounded by RFC 6265 §6.1's minimums: at most ``maxCookiesPerDomain`` (50) cookies alive for one domain (a
/// host-only cookie's host, a domain cookie's domain) and ``maxCookies`` (3000) kept in all; past a limit a new cookie
/// evicts the oldest, as a session's storage does (``CookieRules/evictions(toStore:in:now:maxPerDomain:maxTotal:)``):
/// in its domain the oldest not `Secure`, then the oldest; in all, the deletions (expired cookies kept to take their
/// names out of the request's header) first, then the oldest. Ignoring the new one instead kept the first 50 a server
/// set, and a login's cookie set after them never went on. A server that set 500 cookies on each of 20 redirects had
/// every one sent on the hops after. The cost is a scan of the kept cookies only when a bound is passed.
///
/// None is kept when the transport's cookies are off (``init(isOn:)``): a `URLSessionTransport` whose configuration
/// sends no cookies (`httpShouldSetCookies = false`) or keeps none (no `httpCookieStorage`, or an accept policy of
/// `.never`, the configuration's or the storage's), as URLSession's own redirects would send none. A cookie set over
/// plain http that would replace a `Secure` one of that storage is not kept either (``init(isOn:stored:)``).
struct RedirectCookies: Sendable {
    /// The cookies set so far, the oldest first, one per name, domain and path (RFC 6265 §5.3, step 11): a later one
    /// replaces an earlier one in its place, keeping its creation time (step 11.3) and so its place in the order they
    /// are sent in; an expired one stays, to take its name out of the request's own header.
    private(set) var cookies: [HTTPCookie] = []
    /// How many of ``cookies`` each domain has (lowercased, without the leading `.` of a domain cookie).
    private var perDomain: [String: Int] = [:]
    /// Whether redirects' cookies are kept at all.
    private let isOn: Bool
    /// The cookies the transport's storage holds, read only for a cookie set over plain http: one that would replace
    /// a `Secure` cookie stored there is not kept either. Otherwise the storage refused it but the next hop's `Cookie`
    /// header carried it, where the storage's cookies of its name give way to it (they count as the caller's own).
    private let stored: (@Sendable () -> [HTTPCookie])?

    /// The most cookies kept for one domain: RFC 6265 §6.1's minimum.
    static let maxCookiesPerDomain = 50
    /// The most cookies kept in all: RFC 6265 §6.1's minimum.
    static let maxCookies = 3000

    /// Cookies kept as redirects set them, or none at all when `isOn` is `false` (the transport's cookies are off);
    /// `stored` reads the transport's cookie storage, whose `Secure` cookies a cookie from plain http leaves alone.
    init(isOn: Bool = true, stored: (@Sendable () -> [HTTPCookie])? = nil) {
        self.isOn = isOn
        self.stored = stored
    }

    /// Keeps the cookies `response` sets: only those in visible ASCII, as RFC 6265 writes them (``SetCookieFields``).
    /// Each `Set-Cookie` field is one cookie, as RFC 6265 and browsers read them: an engine hands the core each field
    /// (URLSession's joined fields are split again as its head is made, `ResponseHead.init(_:)`), so a comma in a
    /// field's value is the value's.
    mutating func take(setBy response: ConnectResponse, now: Date = Date()) {
        guard isOn, let from = response.storedHead.url else { return }
        let values = response.storedHead.head.headerFields[values: "Set-Cookie"]
        for value in values.map({ Substring($0) }) where SetCookieFields.isVisibleASCII(value) {
            guard let cookie = CookieRules.cookie(from: value, setBy: from, now: now),
                !CookieRules.overwritesSecureCookie(cookie, setBy: from, in: cookies, now: now),
                !overwritesStoredSecureCookie(cookie, setBy: from, now: now)
            else { continue }
            if let replaced = cookies.firstIndex(where: { CookieRules.isSameCookie($0, cookie) }) {
                cookies[replaced] = cookie
                continue
            }
            let domain = Self.domain(of: cookie)
            cookies.append(cookie)
            perDomain[domain, default: 0] += 1
            evictPastBounds(of: domain, now: now)
        }
    }

    /// Whether `cookie`, set by a response from `url`, would replace or shadow a `Secure` cookie of the transport's
    /// storage (``CookieRules/overwritesSecureCookie(_:setBy:in:now:)``); the storage is read only for a cookie that
    /// is not `Secure`, set over plain http.
    private func overwritesStoredSecureCookie(_ cookie: HTTPCookie, setBy url: URL, now: Date) -> Bool {
        guard let stored, !cookie.isSecure, !CookieRules.isSecure(url) else { return false }
        return CookieRules.overwritesSecureCookie(cookie, setBy: url, in: stored(), now: now)
    }

    /// Removes the cookie that the one just added to `domain` takes the place of, when a bound is passed: in the
    /// domain, past ``maxCookiesPerDomain`` alive (a deletion does not count), the oldest not `Secure`, else the
    /// oldest; in all, past ``maxCookies``, the oldest deletion, else the oldest. ``cookies`` lists them the oldest
    /// first (a replacement keeps its place, RFC 6265 §5.3 step 11.3): one call's hops have no other time to go by.
    private mutating func evictPastBounds(of domain: String, now: Date) {
        func isExpired(_ cookie: HTTPCookie) -> Bool { cookie.expiresDate.map { $0 <= now } ?? false }
        if perDomain[domain, default: 0] > Self.maxCookiesPerDomain {
            let alive = cookies.indices.filter { Self.domain(of: cookies[$0]) == domain && !isExpired(cookies[$0]) }
            if alive.count > Self.maxCookiesPerDomain,
                let oldest = alive.first(where: { !cookies[$0].isSecure }) ?? alive.first
            {
                remove(at: oldest)
            }
        }
        if cookies.count > Self.maxCookies {
            remove(at: cookies.firstIndex(where: isExpired) ?? cookies.startIndex)
        }
    }

    /// Removes the cookie at `index` and its count.
    private mutating func remove(at index: Int) {
        let removed = cookies.remove(at: index)
        perDomain[Self.domain(of: removed), default: 1] -= 1
    }

    /// The domain a cookie counts against: its domain, lowercased, without the leading `.` of a domain cookie.
    private static func domain(of cookie: HTTPCookie) -> String {
        let domain = cookie.domain.lowercased()
        return domain.hasPrefix(".") ? String(domain.dropFirst()) : domain
    }

    /// `request` with the cookies that apply to its URL in its `Cookie` header, in RFC 6265 §5.4's order, each
    /// replacing any of the request's own of the same name;
    /// an expired one takes its name out.
    func applied(to request: ConnectRequest, now: Date = Date()) -> ConnectRequest {
        cookies.isEmpty ? request : RedirectRule.adding(cookies, to: request, now: now)
    }
}

/// What a `URLSessionTransport`'s configuration says of the cookies a redirect sets, for the call's next hops
/// (``RedirectCookies``): URLSession sends them only when it both stores them and sends cookies. So they go on only
/// when the configuration sends cookies (`httpShouldSetCookies`), has a `httpCookieStorage`, and neither it
/// (`httpCookieAcceptPolicy`) nor the storage (`cookieAcceptPolicy`, read at each call) accepts `.never`.
/// `.onlyFromMainDocumentDomain` accepts them: a request of this library names no main document, and URLSession
/// then takes the cookies.
struct RedirectCookieConsent: Sendable {
    /// The storage whose policy is read at each call; `nil` when the configuration keeps or sends none.
    private let storage: HTTPCookieStorage?

    /// The consent of a session made from `configuration` (read before the transport takes its cookies over).
    init(_ configuration: URLSessionConfiguration) {
        let on = configuration.httpShouldSetCookies && configuration.httpCookieAcceptPolicy != .never
        storage = on ? configuration.httpCookieStorage : nil
    }

    /// Whether a call made now keeps its redirects' cookies for its next hops.
    private var isGiven: Bool {
        guard let storage else { return false }
        return storage.cookieAcceptPolicy != .never
    }

    /// What a call made now keeps of its redirects' cookies: none without consent; else those that leave the
    /// storage's `Secure` cookies alone.
    func redirectCookies() -> RedirectCookies {
        guard isGiven, let storage else { return RedirectCookies(isOn: false) }
        return RedirectCookies(isOn: true, stored: { storage.cookies ?? [] })
    }
}
