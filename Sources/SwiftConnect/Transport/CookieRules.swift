import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// RFC 6265's rules for cookies, written once for the places where SwiftConnect, not the platform, handles them: the
/// cookies a redirect sets for its next hop (``RedirectRule``, every engine), and on Linux the session's cookie
/// storage (``SessionCookies``), where FoundationNetworking's own handling sent a `Secure` cookie over plain http, took
/// no `Max-Age` (so no cookie could be deleted), stored a cookie for a whole top-level domain and sent cookies by
/// domain alone.
///
/// - **Storing** (§5.2, §5.3): ``cookie(from:setBy:now:)``. A cookie without `=` or without a name is ignored, and so
///   is one whose name and value are over 4096 octets together (RFC 6265bis §5.6), or an attribute whose value is over
///   1024 octets (the attribute alone); the last of an attribute counts; `Max-Age` wins over `Expires`, and one of 0 or
///   less expires the cookie (which deletes the one it replaces); `Expires` is read as §5.1.1 reads a cookie date
///   (two-digit years included); a `Domain` the host is not in, a `Domain` of one label (a top-level domain: this
///   library has no public suffix list, so `co.uk` still passes) and any `Domain` but the host itself for an IP address
///   make the cookie ignored; a `Domain` that is the host's own name makes a domain cookie (for the hosts below it
///   too), no `Domain` a host-only one, and so do `Domain=` (ignored) and `Domain=.` (empty once its dot is removed); a
///   `Path` that is not absolute is the default path (§5.1.4), the request's directory; a `Secure` cookie set over
///   plain http is ignored (RFC 6265bis §5.7), and so is one set over plain http that would replace or shadow a
///   `Secure` one (``overwritesSecureCookie(_:setBy:in:now:)``), except from a loopback host, which counts as secure
///   (``isSecure(_:)``); `HttpOnly` is kept as the cookie's `isHTTPOnly` (it changes nothing in what an HTTP client
///   sends).
/// - **Sending** (§5.4): ``sends(_:to:now:)`` and ``header(for:from:keeping:now:)``. A cookie goes to its host
///   (host-only) or to a host in its domain (never to an IP address by suffix), to its path or one below it, over https
///   (or plain http to a loopback host) only when `Secure`, until it expires; the longest paths first, then the oldest
///   (a cookie that replaced another keeps that one's creation time, §5.3 step 11.3:
///   ``keepCreationTimes(of:replacing:now:)``).
///
/// - **Bounds** (§6.1, RFC 6265bis's eviction order): ``evictions(toStore:in:now:maxPerDomain:maxTotal:)``. The
///   session's storage keeps at most 50 cookies per domain and 3000 in all; a new cookie past a bound evicts expired
///   cookies first, then those that are not `Secure`, then the others, the least recently used first: set, or sent
///   (§5.4 step 3 updates a cookie's last-access time as it is sent: ``recordUse(of:at:)``).
///
/// Cookies are `HTTPCookie`s, as the platform's storage keeps them: a domain with a leading `.` is a domain cookie,
/// one without is host-only (FoundationNetworking's own convention).
enum CookieRules {
    // MARK: - Storing

    /// The cookie that `setCookie`, one cookie of a `Set-Cookie` field, sets for a response from `url` at `now`;
    /// `nil` when RFC 6265 ignores it. An expired cookie (`Max-Age=0`, an `Expires` in the past) is returned: it
    /// deletes the one of the same name, domain and path.
    static func cookie(from setCookie: Substring, setBy url: URL, now: Date) -> HTTPCookie? {
        guard let host = canonicalHost(of: url) else { return nil }
        let pieces = setCookie.split(separator: ";", omittingEmptySubsequences: false)
        guard let pair = pieces.first, let equals = pair.firstIndex(of: "=") else { return nil }
        let name = trimmed(pair[..<equals])
        let value = trimmed(pair[pair.index(after: equals)...])
        // RFC 6265bis §5.6: a name and value over 4096 octets together make the cookie ignored (a server's 100 KB
        // cookie was kept and sent back on every request).
        guard !name.isEmpty, name.utf8.count + value.utf8.count <= maxNameAndValueOctets else { return nil }

        var expires: Date?
        var maxAge: Date?
        var domain: String?
        var path: String?
        var secure = false
        var httpOnly = false
        for attribute in pieces.dropFirst() {
            let split = attribute.firstIndex(of: "=")
            let attributeName = trimmed(attribute[..<(split ?? attribute.endIndex)]).lowercased()
            let attributeValue = split.map { trimmed(attribute[attribute.index(after: $0)...]) } ?? ""
            // RFC 6265bis §5.6: an attribute whose value is over 1024 octets is ignored, the cookie kept.
            guard attributeValue.utf8.count <= maxAttributeValueOctets else { continue }
            switch attributeName {
            case "expires":
                if let date = cookieDate(attributeValue) { expires = date }
            case "max-age":
                if let seconds = maxAgeSeconds(attributeValue) {
                    maxAge = seconds <= 0 ? Date(timeIntervalSince1970: 0) : now.addingTimeInterval(seconds)
                }
            case "domain":
                // §5.2.3: an empty value is ignored; one leading dot is removed, and `..example.com` keeps an empty
                // label and matches no host. `Domain=.` leaves an empty domain: a host-only cookie (§5.3 step 6).
                if !attributeValue.isEmpty {
                    domain = String(attributeValue.hasPrefix(".") ? attributeValue.dropFirst() : attributeValue[...])
                        .lowercased()
                }
            case "path":
                path = attributeValue.hasPrefix("/") ? attributeValue : nil
            case "secure":
                secure = true
            case "httponly":
                httpOnly = true
            default:
                break
            }
        }
        // RFC 6265bis §5.7: only a secure origin sets a `Secure` cookie.
        if secure, !isSecure(url) { return nil }
        // RFC 6265bis §4.1.3, as browsers enforce them: a `__Secure-` cookie is `Secure`; a `__Host-` one is also
        // host-only with the path `/`, so that a sibling host (`evil.example.com`) cannot set one for its parent.
        let lowercasedName = name.lowercased()
        if lowercasedName.hasPrefix("__secure-"), !secure { return nil }
        // The latest draft's storage model asks for a host-only cookie, not for no `Domain` at all: `Domain=` and
        // `Domain=.` (empty once its dot is removed) leave the cookie host-only, and so are allowed; any other
        // `Domain`, the host's own name included, makes a domain cookie, refused.
        if lowercasedName.hasPrefix("__host-"), !secure || !(domain ?? "").isEmpty || path != "/" { return nil }
        var storedDomain = host
        if let domain, !domain.isEmpty, domain != host {
            // §5.3 steps 5 and 6: a domain the host is in, of more than one label, never for an IP address.
            guard hasMoreThanOneLabel(domain), !isIPAddress(host), host.hasSuffix("." + domain) else { return nil }
            storedDomain = "." + domain
        } else if domain == host, hasMoreThanOneLabel(host), !isIPAddress(host) {
            // §5.3 step 6: the host's own name as `Domain` makes a domain cookie too, for the hosts below it
            // (§4.1.2.3: `Domain=example.com` goes to `www.example.com`); only an address or one label stays host-only.
            storedDomain = "." + host
        }
        var properties: [HTTPCookiePropertyKey: Any] = [
            .name: name, .value: value, .domain: storedDomain, .path: path ?? defaultPath(of: url),
        ]
        if secure { properties[.secure] = "TRUE" }
        // §5.3 step 10: kept for whoever reads the storage (FoundationNetworking's own parser kept it); an HTTP
        // client sends such a cookie all the same.
        if httpOnly { properties[HTTPCookiePropertyKey("HttpOnly")] = "TRUE" }
        if let expiry = maxAge ?? expires { properties[.expires] = expiry }
        return HTTPCookie(properties: properties)
    }

    /// Whether `domain` has more than one label, its trailing dots aside: `com.` (a host written fully qualified,
    /// `evil.com.`, sets it) is a top-level domain as `com` is, and a cookie for it would go to every `*.com.` host.
    private static func hasMoreThanOneLabel(_ domain: String) -> Bool {
        var bare = domain[...]
        while bare.hasSuffix(".") { bare = bare.dropLast() }
        return bare.contains(".")
    }

    /// The cookies of `stored` to delete before `cookie` is stored, so that its domain keeps at most `maxPerDomain`
    /// cookies and the storage `maxTotal` (RFC 6265 §6.1's minimums by default); none when `cookie` replaces a stored
    /// one (the same name, domain and path) or deletes one (it has expired).
    static func evictions(
        toStore cookie: HTTPCookie, in stored: [HTTPCookie], now: Date,
        maxPerDomain: Int = maxCookiesPerDomain, maxTotal: Int = maxCookies
    ) -> [HTTPCookie] {
        if let expires = cookie.expiresDate, expires <= now { return [] }
        guard !stored.contains(where: { isSameCookie($0, cookie) }) else { return [] }
        let domain = bareDomain(of: cookie)
        var left = stored
        var evicted: [HTTPCookie] = []
        /// Takes the `count` first of `candidates` in RFC 6265bis's order out of `left` and into `evicted`.
        func evict(_ count: Int, of candidates: [HTTPCookie], by priority: (HTTPCookie) -> Int) {
            guard count > 0 else { return }
            let chosen = candidates.map { (cookie: $0, priority: priority($0), used: lastUseTime(of: $0)) }
                .sorted { ($0.priority, $0.used) < ($1.priority, $1.used) }
                .prefix(count).map(\.cookie)
            evicted += chosen
            left.removeAll { kept in chosen.contains { isSameCookie($0, kept) } }
        }
        func isExpired(_ cookie: HTTPCookie) -> Bool { cookie.expiresDate.map { $0 <= now } ?? false }
        // Its domain's: expired first, then those that are not `Secure`, then the others; the least recently used
        // (set or sent) first within each.
        let sameDomain = left.filter { bareDomain(of: $0) == domain }
        evict(sameDomain.count - maxPerDomain + 1, of: sameDomain) { isExpired($0) ? 0 : $0.isSecure ? 2 : 1 }
        // Then the whole storage's: expired first, then any, the least recently used first.
        evict(left.count - maxTotal + 1, of: left) { isExpired($0) ? 0 : 1 }
        return evicted
    }

    /// When `cookie` was last used (RFC 6265 §5.3's last-access time): sent (``recordUse(of:at:)``), or else set;
    /// `-infinity` when neither is known. The storage keeps no last-access time, so this record does.
    static func lastUseTime(of cookie: HTTPCookie) -> Double {
        guard let made = madeTime(of: cookie) else { return -.infinity }
        let use = lastUses.withLock { $0[CookieIdentity(cookie)] }
        return use.flatMap { $0.made == made ? Swift.max($0.used, made) : nil } ?? made
    }

    /// Records that `cookies` were sent at `now` (RFC 6265 §5.4 step 3: their last-access time), for the eviction
    /// order (``evictions(toStore:in:now:maxPerDomain:maxTotal:)``): a cookie sent on every request (a login's) was
    /// evicted as the oldest set, ahead of cookies never sent. One lock and a dictionary write per cookie sent; the
    /// record lives as long as the process, one per name, domain and path, at most ``maxKeptCreationTimes`` (past
    /// that, it starts again empty, which only changes the eviction order). A cookie set again (another `Created`)
    /// does not take the record of the one it replaced: it was just set.
    static func recordUse(of cookies: [HTTPCookie], at now: Date) {
        guard !cookies.isEmpty else { return }
        let used = now.timeIntervalSinceReferenceDate
        let records = cookies.compactMap { cookie in
            madeTime(of: cookie).map { (CookieIdentity(cookie), LastUse(made: $0, used: used)) }
        }
        lastUses.withLock { uses in
            if uses.count + records.count > maxKeptCreationTimes { uses.removeAll() }
            for (identity, use) in records { uses[identity] = use }
        }
    }

    /// When a cookie was last sent, with its own `Created`, to know it again.
    private struct LastUse {
        /// The cookie's own `Created`.
        let made: Double
        /// When it was last sent, seconds since 2001.
        let used: Double
    }

    /// The last-access times ``recordUse(of:at:)`` keeps.
    private static let lastUses = Protected<[CookieIdentity: LastUse]>([:])

    /// When `cookie` was last set: the time its `HTTPCookie` was made (`Created`), not the creation time it keeps
    /// from a cookie it replaced; `nil` when its properties do not say.
    private static func madeTime(of cookie: HTTPCookie) -> Double? {
        switch cookie.properties?[HTTPCookiePropertyKey("Created")] {
        case let seconds as Double: return seconds
        case let number as NSNumber: return number.doubleValue
        case let date as Date: return date.timeIntervalSinceReferenceDate
        default: return nil
        }
    }

    /// The most cookies a session's storage keeps for one domain: RFC 6265 §6.1's minimum.
    static let maxCookiesPerDomain = 50
    /// The most cookies a session's storage keeps in all: RFC 6265 §6.1's minimum.
    static let maxCookies = 3000

    /// The most octets a cookie's name and value may have together (RFC 6265bis §5.6): a longer cookie is ignored.
    static let maxNameAndValueOctets = 4096

    /// The most octets an attribute's value may have (RFC 6265bis §5.6): a longer attribute is ignored.
    static let maxAttributeValueOctets = 1024

    /// Whether `cookie`, set by a response from `url` at `now`, must be ignored because it would replace or shadow a
    /// `Secure` cookie of `stored` (RFC 6265bis §5.7, step 16, "Leave Secure Cookies Alone"): a cookie that is not
    /// `Secure`, set over plain http, whose name is that of a `Secure` cookie not yet expired, whose domain and that
    /// cookie's match one way or the other, and whose path is that cookie's or below it. Without this, any server on
    /// plain http for the host (or an attacker on the network) could replace or delete (`Max-Age=0`) the session
    /// cookie that only https may set and read.
    static func overwritesSecureCookie(_ cookie: HTTPCookie, setBy url: URL, in stored: [HTTPCookie], now: Date)
        -> Bool
    {
        guard !cookie.isSecure, !isSecure(url) else { return false }
        let domain = bareDomain(of: cookie)
        return stored.contains { existing in
            guard existing.isSecure, existing.name == cookie.name else { return false }
            if let expires = existing.expiresDate, expires <= now { return false }
            let existingDomain = bareDomain(of: existing)
            return (domainMatches(domain, existingDomain) || domainMatches(existingDomain, domain))
                && pathMatches(cookie.path, existing.path)
        }
    }

    /// A stored cookie's domain without the leading `.` that marks a domain cookie, lowercased.
    private static func bareDomain(of cookie: HTTPCookie) -> String {
        let domain = cookie.domain.lowercased()
        return domain.hasPrefix(".") ? String(domain.dropFirst()) : domain
    }

    /// Whether `host` domain-matches `domain` (§5.1.3): the same, or a name below it (never an IP address by suffix).
    private static func domainMatches(_ host: String, _ domain: String) -> Bool {
        host == domain || (!isIPAddress(host) && host.hasSuffix("." + domain))
    }

    /// The default path of a cookie set by `url` (§5.1.4): its path up to its last `/`, or `/`.
    static func defaultPath(of url: URL) -> String {
        let path = requestPath(of: url)
        guard path.hasPrefix("/"), let last = path.lastIndex(of: "/"), last != path.startIndex else { return "/" }
        return String(path[..<last])
    }

    /// A `Max-Age` value's seconds (§5.2.2): an optional `-` and digits, saturating; `nil` for anything else.
    private static func maxAgeSeconds(_ text: String) -> TimeInterval? {
        let negative = text.hasPrefix("-")
        let digits = negative ? Substring(text.dropFirst()) : Substring(text)
        guard let seconds = ResponseFreshness.deltaSeconds(digits) else { return nil }
        return negative ? -seconds : seconds
    }

    /// A cookie date (§5.1.1), as lenient as browsers: the first time (`hh:mm:ss`), day of month, month name and
    /// year among its tokens, in any order, a two-digit year 70–99 in the 1900s and 0–69 in the 2000s; `nil` when
    /// one is missing or out of range (a day past the month's end included).
    static func cookieDate(_ text: String) -> Date? {
        var time: (hour: Int, minute: Int, second: Int)?
        var day: Int?
        var month: Int?
        var year: Int?
        for token in text.split(whereSeparator: isDateDelimiter) {
            if time == nil, let parsed = timeOfDay(token) {
                time = parsed
            } else if day == nil, let parsed = leadingNumber(token, digits: 1...2) {
                day = parsed
            } else if month == nil, let parsed = monthNumber(token) {
                month = parsed
            } else if year == nil, let parsed = leadingNumber(token, digits: 2...4) {
                year = parsed
            }
        }
        guard let time, let day, let month, var year else { return nil }
        if (70...99).contains(year) { year += 1900 } else if (0...69).contains(year) { year += 2000 }
        guard (1...31).contains(day), year >= 1601, time.hour <= 23, time.minute <= 59, time.second <= 59 else {
            return nil
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let components = DateComponents(
            year: year, month: month, day: day, hour: time.hour, minute: time.minute, second: time.second)
        guard let date = calendar.date(from: components), calendar.component(.day, from: date) == day else {
            return nil
        }
        return date
    }

    /// §5.1.1's delimiters: tab, space to `/`, `;` to `@`, `[` to `` ` ``, `{` to `~`.
    private static func isDateDelimiter(_ character: Character) -> Bool {
        guard let ascii = character.asciiValue else { return false }
        return ascii == 0x09 || (0x20...0x2F).contains(ascii) || (0x3B...0x40).contains(ascii)
            || (0x5B...0x60).contains(ascii) || (0x7B...0x7E).contains(ascii)
    }

    /// A number of `digits` digits at the start of `token`, followed by nothing or a non-digit.
    private static func leadingNumber(_ token: Substring, digits: ClosedRange<Int>) -> Int? {
        let prefix = token.prefix { $0.isASCII && $0.isNumber }
        guard digits.contains(prefix.count) else { return nil }
        return Int(prefix)
    }

    /// `hh:mm:ss`, each one or two digits, at the start of `token` (§5.1.1's `time`).
    private static func timeOfDay(_ token: Substring) -> (hour: Int, minute: Int, second: Int)? {
        let parts = token.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let hour = oneOrTwoDigits(parts[0]), let minute = oneOrTwoDigits(parts[1]),
            let second = leadingNumber(parts[2], digits: 1...2)
        else { return nil }
        return (hour, minute, second)
    }

    /// One or two digits, and nothing else.
    private static func oneOrTwoDigits(_ text: Substring) -> Int? {
        guard (1...2).contains(text.count), text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(text)
    }

    /// The month a token's first three letters name (`jan`…`dec`, any case), 1 to 12.
    private static func monthNumber(_ token: Substring) -> Int? {
        let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        guard token.count >= 3 else { return nil }
        return months.firstIndex(of: token.prefix(3).lowercased()).map { $0 + 1 }
    }

    // MARK: - Sending

    /// Whether `cookie` goes with a request to `url` at `now` (§5.4): its host or a host in its domain, its path or
    /// one below, over https when `Secure`, not expired.
    static func sends(_ cookie: HTTPCookie, to url: URL, now: Date) -> Bool {
        guard let host = canonicalHost(of: url) else { return false }
        if cookie.isSecure, !isSecure(url) { return false }
        if let expires = cookie.expiresDate, expires <= now { return false }
        let domain = cookie.domain.lowercased()
        let matchesHost =
            domain.hasPrefix(".")
            ? host == domain.dropFirst() || (!isIPAddress(host) && host.hasSuffix(domain)) : host == domain
        return matchesHost && pathMatches(requestPath(of: url), cookie.path)
    }

    /// The `Cookie` header for a request to `url` that already carries `existing` (a caller's own, kept whole: its
    /// cookies win over stored ones of the same name), with those of `cookies` that go there in §5.4's order: the
    /// longest paths first, then the oldest (``creationTime(of:)``), then as `cookies` lists them (a storage's list
    /// has no order: FoundationNetworking's comes from a dictionary); `nil` when there is nothing to send.
    static func header(for url: URL, from cookies: [HTTPCookie], keeping existing: String?, now: Date) -> String? {
        headerAndSent(for: url, from: cookies, keeping: existing, now: now).header
    }

    /// ``header(for:from:keeping:now:)``, and the stored cookies it sends (for ``recordUse(of:at:)``).
    static func headerAndSent(for url: URL, from cookies: [HTTPCookie], keeping existing: String?, now: Date)
        -> (header: String?, sent: [HTTPCookie])
    {
        let own = pieces(of: existing)
        let stored =
            cookies
            .filter { sends($0, to: url, now: now) && !own.map(\.name).contains($0.name) }
            .enumerated()
            .map { (cookie: $0.element, created: creationTime(of: $0.element) ?? .infinity, listed: $0.offset) }
            .sorted { left, right in
                guard left.cookie.path.count == right.cookie.path.count else {
                    return left.cookie.path.count > right.cookie.path.count
                }
                return (left.created, left.listed) < (right.created, right.listed)
            }
            .map(\.cookie)
        let all = own.map(\.text) + stored.map { "\($0.name)=\($0.value)" }
        return (all.isEmpty ? nil : all.joined(separator: "; "), stored)
    }

    /// When `cookie` was made, as its `properties` say (`Created`, seconds since 2001, which `HTTPCookie` sets as it
    /// is made), or the time it kept from the cookie it replaced (``keepCreationTimes(of:replacing:now:)``); `nil`
    /// when they do not say. RFC 6265 sends the older of two cookies of equal path length first.
    static func creationTime(of cookie: HTTPCookie) -> Double? {
        guard let made = madeTime(of: cookie) else { return nil }
        let kept = keptCreationTimes.withLock { $0[CookieIdentity(cookie)] }
        return kept.flatMap { $0.replacement == made ? $0.created : nil } ?? made
    }

    /// Records that each of `cookies` that replaces one of `stored` (the same name, domain and path, RFC 6265 §5.3
    /// step 11) keeps that one's creation time (step 11.3), for ``creationTime(of:)`` to read: `HTTPCookie` sets its
    /// own as it is made and takes none from its properties. Without this, a session cookie renewed on every response
    /// went after every cookie of its path length. An expired one is skipped: it deletes, and is never sent.
    ///
    /// The record lives as long as the process, one per name, domain and path, at most
    /// ``maxKeptCreationTimes`` (past that, it starts again empty: a renewed cookie then takes its own time, which
    /// only changes the order); a cookie made again from its properties (a storage read from disk) has another time
    /// of its own and takes its own time too.
    static func keepCreationTimes(of cookies: [HTTPCookie], replacing stored: [HTTPCookie], now: Date = Date()) {
        var kept: [(CookieIdentity, KeptCreationTime)] = []
        for cookie in cookies where !(cookie.expiresDate.map { $0 <= now } ?? false) {
            guard let replaced = stored.first(where: { isSameCookie($0, cookie) }),
                let created = creationTime(of: replaced), let made = creationTime(of: cookie)
            else { continue }
            kept.append((CookieIdentity(cookie), KeptCreationTime(replacement: made, created: created)))
        }
        guard !kept.isEmpty else { return }
        keptCreationTimes.withLock { times in
            if times.count + kept.count > maxKeptCreationTimes { times.removeAll() }
            for (identity, time) in kept { times[identity] = time }
        }
    }

    /// The most creation times ``keepCreationTimes(of:replacing:now:)`` records.
    static let maxKeptCreationTimes = 10_000

    /// Whether `one` and `other` are the same cookie as RFC 6265 §5.3 step 11 tells them apart: the same name, domain
    /// (the leading `.` of a domain cookie included: a host-only cookie is another) and path.
    static func isSameCookie(_ one: HTTPCookie, _ other: HTTPCookie) -> Bool {
        CookieIdentity(one) == CookieIdentity(other)
    }

    /// A cookie's name, domain (lowercased, its leading `.` kept) and path: what RFC 6265 §5.3 step 11 compares.
    private struct CookieIdentity: Hashable {
        let name: String
        let domain: String
        let path: String

        init(_ cookie: HTTPCookie) {
            name = cookie.name
            domain = cookie.domain.lowercased()
            path = cookie.path
        }
    }

    /// The creation time a cookie that replaced another keeps, with its own, to know it again.
    private struct KeptCreationTime {
        /// The replacing cookie's own `Created`.
        let replacement: Double
        /// The creation time it keeps.
        let created: Double
    }

    /// The creation times replacing cookies keep (``keepCreationTimes(of:replacing:now:)``).
    private static let keptCreationTimes = Protected<[CookieIdentity: KeptCreationTime]>([:])

    /// The pieces of a `Cookie` header as written, in order, the blanks around each trimmed and empty ones left out,
    /// each with the name ``pairs(of:)`` reads in it (empty for `=abc`): a caller's own header is sent as it wrote it,
    /// a piece without `=` (`consent`, a nameless cookie of RFC 6265bis) or without a name included, not rewritten
    /// as `consent=` (a cookie named `consent`) or dropped.
    static func pieces(of header: String?) -> [(name: String, text: String)] {
        guard let header else { return [] }
        return header.split(separator: ";").compactMap { part in
            let text = trimmed(part)
            guard !text.isEmpty else { return nil }
            let name = trimmed(text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0])
            return (name, text)
        }
    }

    /// The `name=value` pairs of a `Cookie` header, in order; a piece without a name is left out.
    static func pairs(of header: String?) -> [(name: String, value: String)] {
        guard let header else { return [] }
        return header.split(separator: ";").compactMap { part in
            let pair = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = trimmed(pair[0])
            guard !name.isEmpty else { return nil }
            return (name, pair.count > 1 ? trimmed(pair[1]) : "")
        }
    }

    /// Whether a request to `path` gets a cookie of `cookiePath` (§5.1.4): the same path, or one below it, so that
    /// `/api` covers `/api/items` but not `/apiary`.
    static func pathMatches(_ path: String, _ cookiePath: String) -> Bool {
        guard path.hasPrefix(cookiePath) else { return false }
        return path.count == cookiePath.count || cookiePath.hasSuffix("/")
            || path.dropFirst(cookiePath.count).hasPrefix("/")
    }

    // MARK: - Parts

    /// The path of `url` as sent, its trailing `/` kept (`URL.path` drops it on Linux); `/` when empty.
    static func requestPath(of url: URL) -> String {
        let path = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedPath ?? url.path
        return path.isEmpty ? "/" : path
    }

    /// The host of `url` as the engine is sent to it (`ComparableHost`): lowercased, escapes and Unicode as the
    /// name they stand for, an IP address in one form without brackets; a trailing dot kept (another host, as
    /// browsers keep cookies).
    private static func canonicalHost(of url: URL) -> String? {
        ComparableHost.of(url)
    }

    /// Whether `host` is an IP address: IPv6 (it has a `:`) or IPv4 (digits and dots).
    private static func isIPAddress(_ host: String) -> Bool {
        host.contains(":") || (!host.isEmpty && host.allSatisfy { $0 == "." || ($0.isASCII && $0.isNumber) })
    }

    /// Whether `url` is a channel a `Secure` cookie may use: https (or wss), or http (or ws) to a loopback host
    /// (`127.0.0.0/8`, `::1`, `localhost`). RFC 6265bis leaves "secure" to the client, and browsers (Chrome 89,
    /// Firefox 75) count loopback origins as secure contexts (W3C Secure Contexts, "potentially trustworthy"): a
    /// developer's local server over plain http sets and gets its `Secure` session cookie, which never leaves the
    /// machine. No other plain-http host does, `*.localhost` included: a browser resolves those names to loopback
    /// itself, but the engines leave them to the system's resolver, which may ask DNS and send the cookie elsewhere
    /// in clear text.
    static func isSecure(_ url: URL) -> Bool {
        let scheme = url.scheme?.lowercased()
        if scheme == "https" || scheme == "wss" { return true }
        guard scheme == "http" || scheme == "ws", LoopbackHost.contains(url) else { return false }
        return ComparableHost.of(url, droppingTrailingDot: true)?.hasSuffix(".localhost") != true
    }

    private static func trimmed(_ text: Substring) -> String {
        text.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
    }
}
