import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How long a ``ResponseCache`` may serve a response, by its rule and by the response's own `Cache-Control`,
/// `Expires`, `Age`, `Date` and `Pragma` headers, as RFC 9111 asks of a private cache.
enum ResponseFreshness {
    /// The number `delta-seconds` values saturate at (RFC 9111 §1.2.2): 2³¹.
    static let maxDeltaSeconds: TimeInterval = 2_147_483_648

    /// How a stored response may be served: for how long, how old it was when it came, and whether it is never
    /// served stale. Read once, when the response is stored.
    struct Freshness: Equatable {
        /// How long it may be served from its arrival on: positive, or 0 for a response that is stored only to be
        /// revalidated (`no-cache`, or stale on arrival, with a validator).
        var lifetime: TimeInterval
        /// Its age on arrival, in seconds (``initialAge(_:)``): its age is that plus the time since it
        /// came.
        var age: TimeInterval
        /// Whether it says `Cache-Control: must-revalidate` or `no-cache`: once stale, it is not served (RFC 9111
        /// §4.2.4) unless the app's own `.returnCacheData…` policy asks for it.
        var mustRevalidate: Bool
    }

    /// How `response` may be served from `now` on: its freshness lifetime is `timeToLive`, shortened (never
    /// lengthened) by the response's `max-age`, or without `max-age` by its `Expires` less its `Date`; its age on
    /// arrival (``initialAge(_:)``) counts against that lifetime, whichever sets it.
    ///
    /// - Parameters:
    ///   - response: The response, whose status was checked already.
    ///   - timeToLive: The rule's time to live, positive.
    ///   - now: When the response arrived: the `Date` of a response without one.
    /// - Returns: Its freshness, with a positive lifetime, or with none for a response that has a validator (`ETag`,
    ///   `Last-Modified`) and says `no-cache` (RFC 9111 §5.2.2.4: then never served stale either) or is stale on
    ///   arrival: stored to be revalidated before it is used. `nil` when the response must not be stored: `no-store`,
    ///   `Pragma: no-cache` without `Cache-Control`, and without a validator (nothing to revalidate it with)
    ///   `no-cache` or stale on arrival (a lifetime of 0 or less, an invalid `max-age`, or without `max-age` an
    ///   invalid `Expires`); or of a status not ``heuristicallyCacheable`` without `max-age`, `Expires` or `public`
    ///   (with `no-cache` too: it gives no lifetime).
    static func freshness(of response: ConnectResponse, timeToLive: TimeInterval, now: Date) -> Freshness? {
        let fields = freshnessFields(of: response.storedHead)
        let age = initialAge(response.header("Age"))
        var mustRevalidate = false
        // Whether the rule's time to live alone may give the response a lifetime (RFC 9111 §4.2.2).
        var isHeuristicallyCacheable = heuristicallyCacheable.contains(response.statusCode)
        if let cacheControl = fields.cacheControl {
            let directives = CacheDirectives(cacheControl)
            if directives.noStore { return nil }
            isHeuristicallyCacheable = isHeuristicallyCacheable || directives.isPublic
            if directives.noCache {
                // RFC 9111 §3: `no-cache` gives no lifetime; a status the rule alone may not store needs one of its
                // headers' (`max-age`, `Expires`) or `public`, or a `202 Accepted` would be stored to be revalidated.
                guard hasValidator(response),
                    isHeuristicallyCacheable || directives.maxAge != nil || fields.expires != nil
                else { return nil }
                return Freshness(lifetime: 0, age: age, mustRevalidate: true)
            }
            mustRevalidate = directives.mustRevalidate
            if let maxAge = directives.maxAge {
                return remaining(
                    of: min(timeToLive, maxAge), age: age, mustRevalidate: mustRevalidate, of: response)
            }
        } else if let pragma = fields.pragma, CacheDirectives(pragma).noCache {
            return nil
        }
        guard let expires = fields.expires else {
            guard isHeuristicallyCacheable else { return nil }
            return remaining(of: timeToLive, age: age, mustRevalidate: mustRevalidate, of: response)
        }
        // RFC 9111 §5.3: an invalid date, such as "0", means already expired.
        guard let expiry = HTTPDate.date(from: trimmed(expires), now: now) else {
            return remaining(of: 0, age: age, mustRevalidate: mustRevalidate, of: response)
        }
        let date = response.header("Date").flatMap { HTTPDate.date(from: trimmed($0), now: now) } ?? now
        return remaining(
            of: min(timeToLive, expiry.timeIntervalSince(date)), age: age, mustRevalidate: mustRevalidate,
            of: response)
    }

    /// The freshness of `response`, whose freshness lifetime (RFC 9111 §4.2.1) is `lifetime` and that was `age`
    /// seconds old on arrival: fresh for `lifetime` less `age` from its arrival on. When that is 0 or less (stale on
    /// arrival), a lifetime of 0 if it has a validator (stored to be revalidated before it is used), else `nil`.
    private static func remaining(
        of lifetime: TimeInterval, age: TimeInterval, mustRevalidate: Bool, of response: ConnectResponse
    ) -> Freshness? {
        let remaining = lifetime - age
        if remaining > 0 { return Freshness(lifetime: remaining, age: age, mustRevalidate: mustRevalidate) }
        return hasValidator(response) ? Freshness(lifetime: 0, age: age, mustRevalidate: mustRevalidate) : nil
    }

    /// The statuses a response may be stored with on the rule's time to live alone: those RFC 9110 (§15.1) defines
    /// as heuristically cacheable, of those the cache stores (2xx but 206). One of another status (a `202 Accepted`,
    /// whose work is not done; a `201 Created`) is stored only when its headers give it a lifetime (`max-age`,
    /// `Expires`) or say `public` (RFC 9111 §4.2.2), as URLCache does not store them either.
    static let heuristicallyCacheable: Set<Int> = [200, 203, 204]

    /// Whether `response` has a validator a conditional request can name: a non-empty `ETag` or `Last-Modified`.
    static func hasValidator(_ response: ConnectResponse) -> Bool {
        ["ETag", "Last-Modified"].contains { !trimmed(Substring(response.header($0) ?? "")).isEmpty }
    }

    /// Whether headers kept by a storage say `Cache-Control: must-revalidate` or `no-cache` (several lines read as
    /// one list): once stale, such a response is revalidated, not served stale.
    static func mustRevalidate(_ headers: [StoredResponse.HeaderPair]) -> Bool {
        let lines = headers.filter { HTTPHeader.asciiCaseInsensitiveEquals($0.name, "Cache-Control") }
            .compactMap(\.value)
        guard !lines.isEmpty else { return false }
        let directives = CacheDirectives(lines.joined(separator: ", "))
        return directives.mustRevalidate || directives.noCache
    }

    /// When a response kept by a storage was as old as nothing (RFC 9111 §4.2.3, from the cache's own clock): its
    /// arrival less its `Age` then. A response stored before ``StoredResponse/receivedAt`` existed, or by a storage
    /// that does not keep it, is dated by its `Date` (the server's clock); `nil` without either: its age is unknown.
    static func generated(_ stored: StoredResponse, now: Date) -> Date? {
        let header = { (name: String) in
            stored.headers.first { HTTPHeader.asciiCaseInsensitiveEquals($0.name, name) }?.value
        }
        if let receivedAt = stored.receivedAt {
            return receivedAt.addingTimeInterval(-initialAge(header("Age")))
        }
        return header("Date").flatMap { HTTPDate.date(from: trimmed($0), now: now) }
    }

    /// The `Cache-Control`, `Expires` and `Pragma` values of `response`, found in one pass over its headers: a
    /// response with none of them (the common case) costs no more than one header lookup that misses.
    static func freshnessFields(of head: ConnectResponse.Head) -> (
        cacheControl: String?, expires: String?, pragma: String?
    ) {
        let response: HTTPURLResponse
        switch head {
        case .parts(let parts):
            let fields = parts.head.headerFields
            return (fields["Cache-Control"], fields["Expires"], fields["Pragma"])
        case .foundation(let foundation): response = foundation
        }
        var fields: (cacheControl: String?, expires: String?, pragma: String?) = (nil, nil, nil)
        for (key, value) in response.allHeaderFields {
            guard let name = key as? String, let value = value as? String else { continue }
            // The length first: most names are none of the three, and most differ from them in length.
            switch name.utf8.count {
            case 13 where HTTPHeader.asciiCaseInsensitiveEquals(name, "Cache-Control"): fields.cacheControl = value
            case 7 where HTTPHeader.asciiCaseInsensitiveEquals(name, "Expires"): fields.expires = value
            case 6 where HTTPHeader.asciiCaseInsensitiveEquals(name, "Pragma"): fields.pragma = value
            default: break
            }
        }
        return fields
    }

    /// How old a response was when it arrived: its `Age`, or 0.
    ///
    /// RFC 9111 §4.2.3 also takes the time since its `Date` if that is more (`apparent_age`). This cache does not:
    /// that figure is the difference of two clocks, and a client's clock is often wrong (a phone set by hand, a
    /// laptop back from sleep): a device an hour ahead would find every response fresh for less than an hour stale on
    /// arrival, and cache nothing. An intermediary that holds a response says so in `Age`, as HTTP/1.1 asks of it.
    /// A `Date` still dates an `Expires` (the lifetime is `Expires` less `Date`, both the server's clock).
    ///
    /// - Parameters:
    ///   - age: Its `Age` value: the first member of a list (§5.1: `Age: 3600, 3600` from two joined fields is 3600),
    ///     ignored unless a non-negative integer.
    /// - Returns: Its age on arrival, in seconds, 0 or more.
    static func initialAge(_ age: String?) -> TimeInterval {
        age.flatMap { value in
            deltaSeconds(trimmed(value.split(separator: ",", omittingEmptySubsequences: false).first ?? ""))
        } ?? 0
    }

    /// `delta-seconds` (`1*DIGIT`, RFC 9111 §1.2.2), saturating at ``maxDeltaSeconds``; `nil` for anything else
    /// (empty, a sign, a fraction, other characters).
    static func deltaSeconds(_ text: Substring) -> TimeInterval? {
        guard !text.isEmpty else { return nil }
        var seconds: TimeInterval = 0
        // ASCII digits only, byte by byte: a Character range would also take a digit with a combining mark.
        for byte in text.utf8 {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            seconds = min(maxDeltaSeconds, seconds * 10 + TimeInterval(byte - UInt8(ascii: "0")))
        }
        return seconds
    }

    /// `text` without leading and trailing spaces and tabs (HTTP's optional whitespace).
    static func trimmed(_ text: Substring) -> Substring {
        let isBlank = { (character: Character) in character == " " || character == "\t" }
        guard let first = text.firstIndex(where: { !isBlank($0) }), let last = text.lastIndex(where: { !isBlank($0) })
        else { return text[text.endIndex...] }
        return text[first...last]
    }

    /// `text` without leading and trailing spaces and tabs, as a string.
    private static func trimmed(_ text: String) -> String {
        String(trimmed(Substring(text)))
    }
}

/// The directives of a `Cache-Control` (or `Pragma`) value this cache acts on (RFC 9111 §5.2).
///
/// The value is a comma-separated list of directives, `name` or `name=argument`, the argument a token or a quoted
/// string whose commas do not separate directives (one that never closes ends at the next comma, as if unquoted; a `"`
/// elsewhere than at an argument's start is an ordinary character);
/// names are compared ignoring ASCII case, and never as parts of longer names or of arguments. Several header lines,
/// which the platform joins with commas, read as one list. Other directives are skipped.
struct CacheDirectives {
    /// Whether `no-store` is present.
    var noStore = false
    /// Whether `no-cache` is present, with or without field names.
    var noCache = false
    /// The first `max-age` in seconds, saturating at ``ResponseFreshness/maxDeltaSeconds``; 0 when its argument
    /// is missing or not a non-negative integer (RFC 9111 §4.2.1: invalid freshness information means stale);
    /// `nil` without `max-age`.
    var maxAge: TimeInterval?
    /// A request's `max-stale` (RFC 9111 §5.2.1.2): how long past its expiry a stored response may still be served,
    /// in seconds; infinity without an argument; `nil` without `max-stale`, or with an argument that is not a
    /// non-negative integer (then no stale response is accepted: the safe reading).
    var maxStale: TimeInterval?
    /// A request's `min-fresh` (§5.2.1.3): how long a stored response must stay fresh to be served, in seconds;
    /// `nil` without it. An argument that is not a non-negative integer asks for a fresh response (infinity): the
    /// request wanted more freshness than it could say.
    var minFresh: TimeInterval?
    /// Whether a request's `only-if-cached` (§5.2.1.7) is present: a stored response or nothing, never the network.
    var onlyIfCached = false
    /// Whether a response's `must-revalidate` (§5.2.2.2) is present: never served stale, whatever the request
    /// accepts.
    var mustRevalidate = false
    /// Whether a response's `public` (§5.2.2.9) is present: it may be stored whatever its status.
    var isPublic = false

    /// Reads the directives of `value`.
    init(_ value: String) {
        let text = Substring(value)
        let bytes = text.utf8
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let start = index
            var equals: Substring.Index?
            var isQuoted = false
            var isEscaped = false
            var opening = index
            // Right after the `=` and any blanks: the only place a quoted string starts. A `"` inside a token
            // (`ext=a"b, no-store, x="y"`) is an ordinary character, or it would hide the directives up to the next
            // quote.
            var isArgumentStart = false
            // Up to the next comma outside a quoted string.
            while index < bytes.endIndex {
                let byte = bytes[index]
                if isQuoted {
                    if isEscaped {
                        isEscaped = false
                    } else if byte == UInt8(ascii: "\\") {
                        isEscaped = true
                    } else if byte == UInt8(ascii: "\"") {
                        isQuoted = false
                    }
                } else if byte == UInt8(ascii: ",") {
                    break
                } else if byte == UInt8(ascii: "\""), isArgumentStart {
                    isQuoted = true
                    isArgumentStart = false
                    opening = index
                } else if byte == UInt8(ascii: "="), equals == nil {
                    equals = index
                    isArgumentStart = true
                } else if byte != UInt8(ascii: " "), byte != UInt8(ascii: "\t") {
                    isArgumentStart = false
                }
                bytes.formIndex(after: &index)
            }
            if isQuoted {
                // A quoted string that never closes (a malformed value) would take every directive after it as its
                // text: `ext="x, no-store` would hide `no-store`. The directive ends at the next comma instead.
                index = bytes[opening...].firstIndex(of: UInt8(ascii: ",")) ?? bytes.endIndex
            }
            let end = index
            if index < bytes.endIndex { bytes.formIndex(after: &index) }
            let name = ResponseFreshness.trimmed(text[start..<(equals ?? end)])
            let argument = equals.map { ResponseFreshness.trimmed(text[bytes.index(after: $0)..<end]) }
            read(name: name, argument: argument)
        }
    }

    /// Records one directive, if it is one this cache acts on.
    private mutating func read(name: Substring, argument: Substring?) {
        if Self.isName(name, "no-store") {
            noStore = true
        } else if Self.isName(name, "no-cache") {
            noCache = true
        } else if Self.isName(name, "max-age"), maxAge == nil {
            maxAge = argument.flatMap { ResponseFreshness.deltaSeconds(Self.unquoted($0)) } ?? 0
        } else if Self.isName(name, "max-stale"), maxStale == nil {
            if let argument {
                maxStale = ResponseFreshness.deltaSeconds(Self.unquoted(argument))
            } else {
                maxStale = .infinity
            }
        } else if Self.isName(name, "min-fresh"), minFresh == nil {
            minFresh = argument.flatMap { ResponseFreshness.deltaSeconds(Self.unquoted($0)) } ?? .infinity
        } else if Self.isName(name, "only-if-cached") {
            onlyIfCached = true
        } else if Self.isName(name, "must-revalidate") {
            mustRevalidate = true
        } else if Self.isName(name, "public") {
            isPublic = true
        }
    }

    /// `argument` without the quotes of a quoted string (which a recipient accepts for any directive).
    private static func unquoted(_ argument: Substring) -> Substring {
        guard argument.utf8.count >= 2, argument.utf8.first == UInt8(ascii: "\""),
            argument.utf8.last == UInt8(ascii: "\"")
        else { return argument }
        return argument.dropFirst().dropLast()
    }

    /// Whether `name` is `lowercased` ignoring ASCII case.
    private static func isName(_ name: Substring, _ lowercased: String) -> Bool {
        guard name.utf8.count == lowercased.utf8.count else { return false }
        for (byte, expected) in zip(name.utf8, lowercased.utf8) {
            let folded = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
            if folded != expected { return false }
        }
        return true
    }
}
