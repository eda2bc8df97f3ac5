import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An in-memory cache of successful responses, bounded in bytes, evicting the least recently used.
///
/// Opt-in twice over: give the client a cache, then give the requests to cache a ``CacheRule`` (on the
/// connector's ``Connector/options`` or on a call). GET and HEAD responses with a 2xx status other than 206 (Partial
/// Content) are stored, and those of other methods whose own rule names the key (see ``CacheRule``: a rule of the
/// client's ``Connect/Settings/options``, like the cache's default rule, caches reads only); of the 2xx statuses,
/// only 200, 203 and 204 on the rule alone: another (a `202 Accepted`, whose work is not done) only when its headers
/// give it a lifetime (`max-age`, `Expires`) or say `public`, as RFC 9111 §4.2.2 asks. A request's own
/// `cachePolicy` is honoured as ``CacheRule`` says. A stored response is served until its time to live ends (the rule's
/// ``CacheRule/timeToLive``, which the response's headers can shorten but never lengthen, see below, less the age it
/// came with), without touching the network, except to a call whose
/// ``RequestOptions/maxResponseBytes`` it exceeds. A response served from the cache has an `Age` header of its
/// current age in whole seconds (RFC 9111 §5.1): the `Age` it came with plus the time it has been stored, by the
/// cache's clock, in place of the `Age` it came with. Downloads to a file
/// (``Connect/download(_:to:debugResponse:options:)``) always go to the network and are not stored.
///
/// ```swift
/// let cache = ResponseCache(maxBytes: 5_000_000)
/// let connect = Connect(responseCache: cache)
///
/// let rule = RequestOptions(cache: CacheRule(timeToLive: 300))
/// _ = try await connect.request(TodoConnector.get(id: 1), options: rule).value  // network
/// _ = try await connect.request(TodoConnector.get(id: 1), options: rule).value  // served from memory
/// ```
///
/// Only a completed response is served: an identical request sent while the first is still in flight goes to
/// the network too (turn on `coalescesIdenticalRequests` to share it). Answers to overlapping requests for one key
/// count in the order the requests were sent: an answer that comes after the answer to a request sent later is
/// served to its caller, but neither replaces what that answer stored (even once the size limit evicted it) nor undoes
/// its removal (`no-store`, a 404).
///
/// The client places the cache after its middlewares (the client's, the connector's and the call's), so it sees
/// each request as it goes on the wire, signed by an ``AuthenticationMiddleware`` or any middleware of yours. The
/// key is the method and full URL (without its fragment, never sent) unless the rule names one. A request that carries credentials
/// (`Authorization`, `Cookie` or any header named like a secret, user info in its URL, a secret query item such
/// as `access_token=`, or a body's secret field) is stored apart for each set of credentials, so one user's response is not served to
/// another, under a custom key too: the key then ends with a digest of them (see
/// ``key(for:rule:)-(ConnectRequest,_)``). A response served from the cache still passes back through your middlewares.
///
/// A fresh stored `200 OK` answers the caller's own conditional GET or HEAD as a server would (RFC 9111 §4.3.2):
/// when its `If-None-Match` names the stored `ETag` (compared weakly) or is `*`, or, without `If-None-Match`, its
/// `If-Modified-Since` is not older than the stored `Last-Modified` (without one, than the stored `Date`, as §4.3.2
/// says a cache "SHOULD use"; without a `Date` that is an HTTP-date, nothing is compared), the caller gets a
/// `304 Not Modified`, without the network: no body, and of the stored fields only `Cache-Control`,
/// `Content-Location`, `Date`, `ETag`, `Expires`, `Last-Modified`, `Vary` and `Age`. It reaches the caller as a
/// server's 304 does (an error of kind ``ConnectError/Kind/httpStatus``), and counts as a hit. A request whose
/// conditions do not match is served the stored response, and so is one meeting another stored 2xx (a 203, a 204),
/// whole: a 304 stands for a 200 (RFC 9110 §15.4.5). A request with `If-Match`, `If-Unmodified-Since` or
/// `If-Range` is never answered from what is stored, fresh or not: RFC 9111 §4.3.2 says "the If-Match and
/// If-Unmodified-Since conditional header fields are not applicable to a cache" and "A cache MUST NOT evaluate
/// conditional header fields that only apply to an origin server", and `If-Range` is for a cache that serves partial
/// responses (this one stores none). The cache cannot answer them itself either: a failed `If-Match` is a
/// `412 Precondition Failed` about the server's current representation, which it never saw. Such a request goes to
/// the network as it is (a miss), and its answer counts as below for the caller's own conditional request: a 304
/// that validates the stored response refreshes it, a 2xx other than 206 replaces it, and a 412 or a `206 Partial
/// Content` leaves it as it was, in memory and in the storage (a 206 is never stored).
///
/// A GET with `Range` is not answered from what is stored either: the whole stored body is not the part the app asked
/// for (RFC 9110 §14.2 lets a cache ignore `Range`, but an app may not expect it to), and the cache builds no `206` of
/// its own (RFC 9111 §3.4 allows, not asks, it). It goes to the network as it is, without the cache's conditions (a
/// 304 would serve the whole body again), and counts as a miss; its 206 or 416 reaches the caller and leaves the stored
/// response, a 200 (a server ignoring the `Range`) replaces it. With `only-if-cached` it fails, nothing sent.
///
/// A response a redirect led to (`/me/avatar` answering `302` to `/u1-v3.png`) is stored under the URL asked for, fresh
/// for no longer than its rule allows: the engine followed the redirect, and the cache never sees the `3xx` or its
/// fields (a `no-store` there, a redirect meant to change). Give an endpoint that redirects to something that changes
/// a short rule, or none.
///
/// The cache is private (its client's). It serves a response past its time to live only to a request that accepts one
/// (`max-stale`, `.returnCacheData…`, below); to any other, it revalidates it (RFC 9111 §4.3) when it can:
///
/// - A GET or HEAD whose stored response is stale (or not fresh enough for the request's `max-age` or `min-fresh`),
///   or that asks to revalidate what is stored, fresh or not (`Cache-Control: no-cache` or `max-age=0`, without
///   `Cache-Control` `Pragma: no-cache`, or the `.reloadRevalidatingCacheData` policy: RFC 9111 §5.2.1.4, as a
///   browser's reload asks, or with a condition only the server can judge: `If-Match`, `If-Unmodified-Since`,
///   `If-Range`, above), and whose stored response has a validator goes to the network conditional on it:
///   with `If-None-Match` naming its `ETag` and `If-Modified-Since` naming its `Last-Modified`, under the request's
///   own credentials and key. A request that is conditional already (`If-None-Match`, `If-Modified-Since`,
///   `If-Match`, `If-Unmodified-Since`, `If-Range`) goes as it is, and its caller gets the server's 304, which
///   refreshes the stored response as below when it validates it (RFC 9111 §4.3.4: its `ETag`, or without one its
///   `Last-Modified`, is the stored one's; without either, the request named the stored `ETag` alone in
///   `If-None-Match`, or its `Last-Modified` in `If-Modified-Since`). A response without a validator and one a
///   redirect led to are fetched in full, and so is any response for a request that bypasses the cache
///   (``CacheRule/bypassesCache``, `.reloadIgnoringLocalCacheData`, `.reloadIgnoringLocalAndRemoteCacheData`): those
///   ignore what is stored.
/// - A `304 Not Modified` is served as the stored response: its status and body, its headers updated by the 304's
///   (but `Content-Length`, `Content-Encoding`, `Transfer-Encoding`, `Content-Range` and the connection's fields), its
///   `Age` the 304's. It is stored again as a new answer would be: fresh for the rule's time to live (or the
///   updated `max-age`) from now. A 304 for another representation (an `ETag`, or without one a `Last-Modified`,
///   other than the stored one's) sends the request again without conditions, and that answer counts.
/// - Any other answer counts as it would without a stored response: a 2xx replaces it; a 404 or a 410 removes it; a
///   5xx or a failure (the network down) is the call's result, and the stale response is kept, not served in its
///   place (serve it offline with `max-stale` or `.returnCacheData…`).
/// - The conditional request and the 304 go between the cache and the network: your middlewares, which run before
///   the cache, see the request as it was made and the response served (a 200); the client's plugins, observers
///   and metrics, which see each attempt on the wire, see the conditional request and the 304: a
///   ``ConnectEvent/cacheLookup(hit:)`` miss, then an attempt that ended 304, then a call that ended 200. It counts
///   as a miss, not a hit (``hitCount``).
///
/// It reads the response's headers as RFC 9111 asks of a private cache:
///
/// - `Cache-Control` is a comma-separated list of directives: names in any case, arguments as tokens or quoted
///   strings (a comma inside quotes separates nothing); several `Cache-Control` lines count as one list. A
///   directive is matched by its whole name, never as part of another name or of an argument.
/// - `no-store` keeps the response out of the cache. `no-cache`, with or without field names, allows reuse only
///   after revalidation: a response that says it is stored stale, to be revalidated before every use (never served
///   stale to `max-stale`), when it has a validator (`ETag`, `Last-Modified`), and kept out without one.
/// - `Age` (when a non-negative integer, else 0; values over 2³¹ count as 2³¹) is how old the response was when it
///   came: it counts against the time to live, whichever sets it (the rule, `max-age` or `Expires`). A response
///   `Age: 3000` under a rule of 3600 seconds is served for 600 seconds more. The time the request took is not
///   added (RFC 9111 §4.2.3's `response_delay`): the cache sits before the client's ``RequestQueue``, so it would
///   count a paused queue's wait too, and a response that waited there longer than its rule would not be stored.
/// - `max-age=N` shortens the time to live to N seconds. Of several, the first counts; values over 2³¹ count as
///   2³¹. One that is not a non-negative integer makes the response stale, and a stale response (a time to live of
///   0 or less, `Age` counted) is not stored, unless it has a validator (`ETag`, `Last-Modified`): then it is
///   stored stale, to be revalidated before it is used (`max-age=0, must-revalidate` with an `ETag`, as many servers
///   send, is revalidated on every request).
/// - Without `max-age`, `Expires` shortens the time to live to the time from the response's `Date` (or, without
///   one, from its arrival) to that date. An `Expires` that is not an HTTP-date (such as `0`) means already
///   expired: the response is stale (not stored, or stored to be revalidated, as above).
/// - Without `Cache-Control`, `Pragma: no-cache` keeps the response out of the cache.
/// - `must-revalidate` keeps a response from being served stale to a `max-stale` request: it is revalidated instead
///   (the app's own `.returnCacheData…` policy still serves it, as URLSession's does).
/// - Other directives change nothing: `public` (but for a status other than 200, 203 and 204, above), `private`,
///   `s-maxage` and `proxy-revalidate` concern shared caches, and `immutable` only reloads. Without any of these
///   headers, the rule alone decides.
/// - A successful answer that is not stored (for any of these reasons, `Vary: *`, or its size) removes the
///   response stored under its key: after a refetch (``CacheRule/bypassesCache``) answered `no-store`, the older
///   response is not served in its place. So does a `404 Not Found` or a `410 Gone` (the resource is not there);
///   another error status (a 5xx, a 401) leaves it.
///
/// The request's own headers, as the cache sees them, are honoured too (RFC 9111 §5.2.1, §5.4), read as the response's
/// are (names and directives in any case, several lines as one list): `Cache-Control: no-store` sends it to the network
/// and stores nothing of its answer (what is stored stays); `no-cache`, `max-age=0` and, without `Cache-Control`,
/// `Pragma: no-cache` serve nothing stored as it is: a stored response with a validator is revalidated (above), one
/// without is fetched again in full, and the answer is stored; `min-fresh=N` serves only a response that stays fresh N
/// seconds more (a `min-fresh` that is not a number, or has none, is met by nothing stored, with `max-stale` too);
/// `max-stale` serves a response past its time to live too (`max-stale=N`: by at most N seconds; with
/// `min-fresh`, its N seconds less), unless it says `must-revalidate`; `only-if-cached` serves a stored response or
/// fails with nothing sent, as `.returnCacheDataDontLoad` does (RFC 9111's 504 is the answer of a shared cache; a
/// private one has no one to send it from), and with `no-store` too, storing nothing (as `.returnCacheDataDontLoad`
/// with `no-store` does). A response past its time to live
/// stays stored for such requests until a fresh answer replaces it or the size limit evicts it. A request the cache
/// does not take (no rule, a download, a streamed response) goes to the network with its directives, for the caches
/// there. `max-age=N` serves only a response at most N seconds old (and, without `max-stale`, fresh): its `Age` when it
/// came plus the time since, by the cache's clock (``StoredResponse/receivedAt``); a stored response from before that
/// property is dated by its `Date`, and one with neither never answers `max-age`.
///
/// ```swift
/// // Offline-first: any stored response, however old, else a typed failure and nothing sent.
/// let offline = [HTTPHeader(name: "Cache-Control", value: "only-if-cached, max-stale")]
/// ```
///
/// A non-error answer (2xx or 3xx) to a request of an unsafe method (any but GET, HEAD, OPTIONS and TRACE: a PUT, a
/// DELETE, a POST), with or without a rule, removes what is stored for its URL and for the URLs its `Location` and
/// `Content-Location` name on the same origin (RFC 9111 §4.4): under every key, custom keys included, for every set
/// of credentials, in memory and in the storage; a response to one of them still in flight is then not stored. A
/// request of such a method that its rule caches (a custom key or ``CacheRule/keyIncludesBody``: a POST search, the rule
/// given by its connector, its call or the client's options for its method) is a read by the rule's word, and removes
/// nothing.
///
/// A `200 OK` answer to a HEAD, with or without a rule, is checked against the GET response stored for its URL and
/// credentials that a GET with its headers would be served (RFC 9111 §4.3.5): when it carries an `ETag`, a
/// `Last-Modified` or a `Content-Length` other than the stored response's, that response is removed, from memory and
/// from the storage, and the next GET goes to the network. One that agrees updates it as a `304` would (above): its
/// headers from the HEAD's, and with them its freshness, from now, by its own rule's time to live (the HEAD's `max-age`
/// can refresh it, not lengthen what its rule allows), in memory and in the storage; a response the cache read back
/// from the storage, whose rule it does not know, is left as it is, unless the HEAD's answer says `no-store` or
/// `Vary: *`, which removes it there as in memory. A rule's custom key, which HEAD and GET share, keeps one response for both
/// already: a HEAD's answer stored there replaces the GET's; one that is not stored (it says `no-store` or `Vary: *`,
/// or the HEAD asked `no-store`) is checked against the GET response stored there as above. An answer to one method
/// under a custom key that is not stored leaves a response of another method stored there, in memory and in the storage
/// alike. A `404 Not Found` or a `410 Gone` answer to a HEAD, with or without a rule, removes that GET response, from
/// memory and from the storage, as the GET's own 404 would: the resource is not there.
///
/// A HEAD is not answered from a stored GET response, which RFC 9111 allows but does not ask: it is served only a HEAD
/// response stored under its own key, else it goes to the network. A HEAD asks the server what the resource is now
/// (whether it is there, its size, its validators), and the stored GET's fields describe the body as this client
/// received it (an engine may have decoded it), not as the server would answer a HEAD.
///
/// A response with a `Vary` header is served only to requests whose headers it names have the values the first request
/// had, as the wire sends them (one variant per key: another value replaces it), compared as RFC 9111 §4.1 allows:
/// without the blanks around a value or around the commas between its elements outside quoted strings, and repeated
/// fields as the one line that joins them, so that `gzip,deflate`, `gzip, deflate` and two fields `gzip` and
/// `deflate` are one value; the case of a value counts (the cache does not know which fields ignore it). One with
/// `Vary: *` is not stored. The cache is safe to share between threads and clients, with one caution: it tells
/// users apart only by the credentials it sees on a request. Cookies an engine adds from its own cookie storage
/// (``URLSessionTransport`` does by default) and a `URLSessionConfiguration`'s `httpAdditionalHeaders` are added after
/// the cache and are not in its key, so clients of two users signed in that way each need a cache of their own (or
/// rules whose key names the user).
public final class ResponseCache: Sendable {
    private struct Entry {
        var response: ConnectResponse
        /// When it expires, how old it is, whether it may be served stale.
        var freshness: StoredFreshness
        var size: Int
        var tick: UInt64
        /// The method of the stored request: a rule's custom key does not name it, and a HEAD response (no body)
        /// must not answer a GET.
        var method: HTTPMethod
        /// The request headers the response's `Vary` names (lowercased), with the stored request's values.
        var varying: [(name: String, value: String?)] = []
        /// The number of the network fetch that brought it (``State/fetches``): a fetch started earlier, ending
        /// later, does not replace it.
        var fetch: UInt64 = 0
        /// The resources it is a response for (``ResponseCache/resource(of:)``): the URL asked for, and the one
        /// that answered when a redirect led elsewhere. A successful unsafe request to one of them removes it.
        var resources: [String] = []
        /// Which insertion into memory put it there (``State/insertions``): a storage read tells by it whether memory
        /// changed under its key while it read.
        var insertion: UInt64 = 0
        /// The time to live of the rule it was stored under, which a HEAD's answer refreshing it must not lengthen
        /// (``refresh(_:underKey:for:by:fetch:generation:)``); `nil` for one read from the storage, which does not
        /// keep it.
        var timeToLive: TimeInterval?

        /// Whether `request` has the values of the headers the response varies on that the stored one had.
        func matches(_ request: ConnectRequest) -> Bool {
            varying.allSatisfy { ResponseCache.sameVaryValue($0.value, request.value(forHTTPHeaderField: $0.name)) }
        }

        /// Whether a redirect led to it: it answers the URL asked for from another.
        var isRedirected: Bool { resources.count > 1 }
    }

    /// An entry the size limit evicted from memory (``State/evicted``).
    private struct Eviction {
        /// The number of the fetch whose answer it was (``Entry/fetch``).
        var fetch: UInt64
        /// Which insertion into memory put it there (``Entry/insertion``).
        var insertion: UInt64
    }

    /// An answer that removed the response stored under a key and stored none (``State/superseded``).
    private struct Supersession {
        /// The number of the fetch it answered: the fetches numbered lower have older answers.
        var fetch: UInt64
        /// The number of the last fetch started before it came: those may have read the removed response from the
        /// storage.
        var lastFetchBefore: UInt64
    }

    private struct State {
        var entries: [String: Entry] = [:]
        /// Recency: tick → key. Ticks only grow, so the oldest live tick is found by scanning up from
        /// `oldestTick`, which is amortised constant time.
        var recency: [UInt64: String] = [:]
        var nextTick: UInt64 = 0
        var oldestTick: UInt64 = 0
        /// How many entries have gone into memory (``Entry/insertion``).
        var insertions: UInt64 = 0
        var totalBytes = 0
        var hits = 0
        var misses = 0
        /// Network fetches started, numbered in order.
        var fetches: UInt64 = 0
        /// Raised by ``removeAll()``, and when ``removals`` or ``invalidations`` overflow: a fetch started before it
        /// does not store its response.
        var generation: UInt64 = 0
        /// Key a ``removeResponse(forKey:)`` named → the last fetch started before it: those fetches, of that key and
        /// its variants, do not store their responses, nor serve a 304 for the removed body. Bounded as
        /// ``invalidations``: past ``maxInvalidations`` it is emptied and the generation raised instead.
        var removals: [String: UInt64] = [:]
        /// Resource → the last fetch started before a successful unsafe request to it removed its responses: those
        /// fetches do not store theirs (RFC 9111 §4.4). Bounded: past ``maxInvalidations`` it is emptied and the
        /// generation raised instead, which holds back every fetch then in flight.
        var invalidations: [String: UInt64] = [:]
        /// Key → the latest answer that removed the response stored there and stored none (`no-store`, a 404, a
        /// 410…). Answers count in the order their fetches started, not the order they come in: a fetch started
        /// before that one's has an older answer, and does not store it over the removal (nor, if it was stored
        /// first, leave its storage file behind); a storage read started before the removal does not keep what it
        /// read. Bounded as ``invalidations``.
        var superseded: [String: Supersession] = [:]
        /// Key → the entry the size limit evicted from memory there (the storage may still hold its response): a
        /// fetch started before its answer's has an older answer, and does not store it; a storage read started before
        /// it went in may have read what it replaced, and does not keep that. Bounded as ``invalidations``: past
        /// ``maxInvalidations``, the half with the oldest fetches goes and ``evictedFloor`` rises to the latest of
        /// them.
        var evicted: [String: Eviction] = [:]
        /// The latest fetch and insertion of the records ``evicted`` dropped: a fetch numbered up to it may be older
        /// than an answer no record remembers, and stores nothing; a storage read started before it keeps nothing.
        var evictedFloor = Eviction(fetch: 0, insertion: 0)

        /// The most resources ``invalidations`` holds.
        static let maxInvalidations = 256

        /// Removes the responses for `resources`, of every key, and holds back the fetches of them in flight.
        ///
        /// - Returns: The keys removed.
        mutating func invalidate(_ resources: Set<String>) -> [String] {
            if invalidations.count + resources.count > Self.maxInvalidations {
                invalidations.removeAll()
                generation &+= 1
            }
            for resource in resources { invalidations[resource] = fetches }
            let keys = entries.filter { !resources.isDisjoint(with: $0.value.resources) }.map(\.key)
            for key in keys { remove(key) }
            return keys
        }

        /// The number of the latest fetch whose answer is stored under `key` or removed the response stored there
        /// (``superseded``); 0 when none is known. A fetch numbered lower brings an older answer.
        func latestAnswer(forKey key: String) -> UInt64 {
            max(entries[key]?.fetch ?? 0, superseded[key]?.fetch ?? 0, evicted[key]?.fetch ?? 0)
        }

        /// Whether fetch number `fetch`, whose answer goes under `key`, is older than an answer the cache already had
        /// for it: stored (in memory now, or until the size limit evicted it), or removing it.
        func isOutdated(_ fetch: UInt64, forKey key: String) -> Bool {
            fetch <= evictedFloor.fetch || latestAnswer(forKey: key) >= fetch
        }

        /// Whether the size limit evicted an entry under `key` that went into memory after insertion number
        /// `insertion` (``evicted``): a storage read started then may have read what that entry replaced.
        func isEvicted(_ key: String, insertedAfter insertion: UInt64) -> Bool {
            evictedFloor.insertion > insertion || (evicted[key]?.insertion ?? 0) > insertion
        }

        /// Remembers that the size limit evicted `entry` from under `key` (``evicted``).
        private mutating func noteEviction(of key: String, entry: Entry) {
            if evicted[key] == nil, evicted.count >= Self.maxInvalidations {
                let oldest = evicted.sorted { $0.value.fetch < $1.value.fetch }.prefix(evicted.count / 2)
                for (dropped, record) in oldest {
                    evicted[dropped] = nil
                    evictedFloor.fetch = max(evictedFloor.fetch, record.fetch)
                    evictedFloor.insertion = max(evictedFloor.insertion, record.insertion)
                }
            }
            evicted[key] = Eviction(
                fetch: max(entry.fetch, evicted[key]?.fetch ?? 0),
                insertion: max(entry.insertion, evicted[key]?.insertion ?? 0))
        }

        /// Fetch number `fetch` was answered with a response that is not stored and removes the one under `key`:
        /// removes it, unless a fetch started later answered already (its answer is newer, and stays). Only a response
        /// of `method` goes from memory (a HEAD's answer says nothing of a GET's body under a shared custom key); `nil`
        /// for an answer that says the resource is gone (a 404, a 410), which removes a response of any method.
        ///
        /// - Returns: Whether the response was removed (the storage's copy goes too).
        mutating func supersede(_ key: String, method: HTTPMethod?, byFetch fetch: UInt64) -> Bool {
            guard latestAnswer(forKey: key) < fetch else { return false }
            if superseded[key] == nil, superseded.count >= Self.maxInvalidations {
                superseded.removeAll()
                generation &+= 1
            }
            superseded[key] = Supersession(fetch: fetch, lastFetchBefore: fetches)
            if method == nil || entries[key]?.method == method { remove(key) }
            return true
        }

        /// Whether an answer removed the response under `key` (``supersede(_:method:byFetch:)``) after fetch number
        /// `fetch` started: what that fetch read from the storage before may be what was removed.
        func isSuperseded(_ key: String, since fetch: UInt64) -> Bool {
            (superseded[key]?.lastFetchBefore ?? 0) >= fetch
        }

        /// Whether responses for one of `resources` were removed after fetch number `fetch` started.
        func isInvalidated(_ resources: [String], since fetch: UInt64) -> Bool {
            resources.contains { (invalidations[$0] ?? 0) >= fetch }
        }

        /// Holds back the fetches in flight of `key` and its variants (``removeResponse(forKey:)``).
        mutating func noteRemoval(of key: String) {
            if removals[key] == nil, removals.count >= Self.maxInvalidations {
                removals.removeAll()
                generation &+= 1
            }
            removals[key] = fetches
        }

        /// Whether fetch number `fetch`, whose response goes under `key`, started before the app removed that key or
        /// all: its response is not stored, nor a 304 of it served.
        func isRemoved(_ key: String, since fetch: UInt64, generation: UInt64) -> Bool {
            self.generation != generation
                || removals.contains { $0.value >= fetch && ResponseCache.isKey(key, orVariantOf: $0.key) }
        }

        mutating func touch(_ key: String) {
            guard let old = entries[key]?.tick else { return }
            recency[old] = nil
            entries[key]?.tick = nextTick
            recency[nextTick] = key
            nextTick += 1
        }

        mutating func remove(_ key: String) {
            guard let entry = entries.removeValue(forKey: key) else { return }
            recency[entry.tick] = nil
            totalBytes -= entry.size
        }

        mutating func insert(_ key: String, entry: Entry, limit: Int) {
            var entry = entry
            // The order of answers outlives what replaces or evicted them: a storage read's entry (fetch 0) keeps
            // the number of the latest answer known under its key.
            entry.fetch = max(entry.fetch, entries[key]?.fetch ?? 0, evicted.removeValue(forKey: key)?.fetch ?? 0)
            remove(key)
            while totalBytes + entry.size > limit, let oldest = popOldestKey() {
                let evicted = entries[oldest]
                remove(oldest)
                if let evicted { noteEviction(of: oldest, entry: evicted) }
            }
            insertions &+= 1
            entry.insertion = insertions
            entry.tick = nextTick
            entries[key] = entry
            recency[nextTick] = key
            nextTick += 1
            totalBytes += entry.size
        }

        private mutating func popOldestKey() -> String? {
            while oldestTick < nextTick {
                if let key = recency[oldestTick] { return key }
                oldestTick += 1
            }
            return nil
        }
    }

    /// The most bytes of bodies (plus a small estimate for headers) the cache holds.
    let maxBytes: Int
    private let now: @Sendable () -> Date
    private let state = Protected(State())
    /// The rule of requests that bring none (``init(maxBytes:defaultRule:storage:now:)``).
    let defaultRule: CacheRule?
    /// The second tier, read on a miss and written with each stored response (``ResponseCacheStorage``).
    let storage: (any ResponseCacheStorage)?
    /// ``storage`` when it counts a memory hit as a use (``ResponseStorageUse``): cast once, not at every hit.
    private let storageUse: (any ResponseStorageUse)?

    /// Creates an empty cache.
    ///
    /// ```swift
    /// // Caching on for every GET of the client, in one setting (a request's own rule still wins):
    /// let connect = Connect(responseCache: ResponseCache(defaultRule: CacheRule(timeToLive: 300)))
    /// ```
    ///
    /// - Parameters:
    ///   - maxBytes: The most bytes the cache holds; older entries are evicted to make room. Defaults to
    ///     10 MB. A response larger than this is never stored.
    ///   - defaultRule: The rule of requests whose client, connector and call set none; `nil` (the default)
    ///     caches only requests that bring a rule. It caches GET and HEAD requests only, each under its method and
    ///     URL, even when it names a key or the body: other methods are cached by a rule their connector, their call
    ///     or the client's options for their method (``Connect/Settings/methodOptions``) bring, not by one of the
    ///     client's own options.
    ///   - storage: A second tier, such as a ``DiskResponseStorage`` that survives a restart: read when memory has
    ///     no fresh response, written with every response stored, except responses to requests that carried
    ///     credentials, responses a redirect brought from a URL that carries them (user info, a secret query
    ///     item such as `access_token=`) or whose `Location` or `Content-Location` names such a URL, and responses
    ///     with a header named like a secret (`X-Auth-Token`, `Authorization`, `X-Api-Key`…, as logs redact them;
    ///     `Set-Cookie` aside, which is left out of what is written), which stay in memory. `nil` (the default) for
    ///     memory only.
    ///   - now: The clock for time to live; tests inject their own.
    public init(
        maxBytes: Int = 10_000_000, defaultRule: CacheRule? = nil, storage: (any ResponseCacheStorage)? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.maxBytes = max(0, maxBytes)
        self.defaultRule = defaultRule
        self.storage = storage
        self.storageUse = storage as? any ResponseStorageUse
        self.now = now
    }

    /// How many responses are stored.
    package var count: Int { state.withLock { $0.entries.count } }

    /// How many keys the cache remembers the latest evicted answer of (``State/evicted``): at most 256.
    package var evictionRecordCount: Int { state.withLock { $0.evicted.count } }

    /// How many bytes the stored responses take, by the cache's estimate.
    package var totalBytes: Int { state.withLock { $0.totalBytes } }

    /// How many requests were served from the cache.
    public var hitCount: Int { state.withLock { $0.hits } }

    /// How many cacheable requests (a `GET` or `HEAD`, or another method whose rule names its key, with a rule whose
    /// time to live is positive, not a download) found no fresh response and went to the network.
    package var missCount: Int { state.withLock { $0.misses } }

    /// Forgets every stored response. Nothing stored before is served after it: a revalidation in flight whose `304`
    /// comes later sends its request again, without conditions, and its caller gets that answer.
    public func removeAll() {
        // The generation first: a fetch that stores to the storage after its files went sees it changed, and takes
        // its file back (see `respond(to:context:next:)`).
        state.withLock { state in
            state.generation &+= 1
            state.invalidations.removeAll()
            state.removals.removeAll()
            state.superseded.removeAll()
            state.evicted.removeAll()
            state.entries.removeAll()
            state.recency.removeAll()
            state.totalBytes = 0
            state.oldestTick = state.nextTick
        }
        storage?.removeAll()
    }

    /// Forgets the responses stored under `key`, for every set of credentials, every body and every virtual host: the
    /// key as a rule names it, without the `" host:"`, `" body:"` and `" credentials:"` parts the cache adds to it
    /// (a URL's own credentials, user info or a secret query item such as `access_token`, may be left out too)
    /// (``key(for:rule:)-(ConnectRequest,_)``). As after ``removeAll()``, a revalidation of that key in flight whose
    /// `304` comes later sends its request again, without conditions; the fetches of other keys are not affected.
    ///
    /// - Parameter key: A rule's custom key, or `"GET https://…"` (method, space, full URL; a fragment, which keys
    ///   leave out, is ignored there).
    public func removeResponse(forKey key: String) {
        for key in Self.spellings(ofKey: key) {
            state.withLock { state in
                // This key's fetches in flight only: a revalidation of another key still serves its 304.
                state.noteRemoval(of: key)
                // A response to a URL that carries credentials is kept in memory only, under its URL's credentials:
                // the key the app knows (without them) finds it too, for every set of them.
                let bare = Self.withoutURLCredentials(key)
                for stored in Array(state.entries.keys)
                where Self.isKey(stored, orVariantOf: key)
                    || (stored.contains(Self.credentialsMarker)
                        && Self.isKey(Self.withoutURLCredentials(stored), orVariantOf: bare))
                {
                    state.remove(stored)
                }
            }
            storage?.removeResponses(forKey: key)
        }
    }

    /// `key`, and when it reads as a method and a URL with a fragment (`"GET https://…/a#x"`), the same without the
    /// fragment, as ``key(for:rule:)-(ConnectRequest,_)`` makes it: removing either is never a wrong answer, at worst
    /// a fetch again.
    private static func spellings(ofKey key: String) -> [String] {
        guard let space = key.firstIndex(of: " "), let hash = key.firstIndex(of: "#"), space < hash,
            let url = URL(string: String(key[key.index(after: space)...])), url.scheme != nil, url.fragment != nil
        else { return [key] }
        return [key, String(key[..<hash])]
    }

    /// The key a request is stored under: the rule's key, or the method and full URL without its fragment (never
    /// sent: `/a#x` and `/a#y` ask for one resource), followed by `" host:"` and a `Host` field that names another
    /// authority than the URL's (a virtual host reached at an address); with
    /// ``CacheRule/keyIncludesBody``, followed by `" body:"` and the SHA-256 of the body; for a request that carries
    /// credentials (a secret header, user info in its URL, a secret query item such as `access_token=` or a body's
    /// secret field), followed
    /// by `" credentials:"` and a digest of them (kept for this process only). A custom key replaces the URL, not
    /// the credentials in it: two users asking under one custom key are still stored apart.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - rule: The request's cache rule.
    /// - Returns: The key.
    public static func key(for request: ConnectRequest, rule: CacheRule) -> String {
        key(for: request, rule: rule, credentials: credentialsDigest(of: request))
    }

    /// ``key(for:rule:)-(ConnectRequest,_)`` with the digest of the request's credentials already made.
    private static func key(for request: ConnectRequest, rule: CacheRule, credentials digest: String?) -> String {
        key(for: request, named: rule.key, includesBody: rule.keyIncludesBody, credentials: digest)
    }

    /// The key `request` is stored under by a rule naming `custom` (`nil`: none) and whose key includes the body or
    /// not (``CacheRule/keyIncludesBody``), with `digest`, the digest of its credentials: the rule's parts of
    /// ``key(for:rule:)-(ConnectRequest,_)``, for a caller without a rule (a HEAD's look for the GET it checks).
    private static func key(
        for request: ConnectRequest, named custom: String?, includesBody: Bool, credentials digest: String?
    ) -> String {
        // Without the URL's fragment, which is never sent (RFC 9110 §4.2.5): `/a#x` and `/a#y` ask for one resource.
        var key = custom ?? "\(request.method.rawValue) \(request.url.absoluteStringWithoutFragment)"
        if custom == nil, let host = virtualHost(of: request) { key += hostMarker + host }
        if includesBody {
            key += bodyMarker + SHA256Hasher.hex(SHA256Hasher.hash(request.httpBody ?? Data()))
        }
        guard let digest else { return key }
        return key + credentialsMarker + digest
    }

    /// The key a `URLRequest` is stored under (see ``key(for:rule:)-(ConnectRequest,_)``).
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - rule: The request's cache rule.
    /// - Returns: The key.
    public static func key(for request: URLRequest, rule: CacheRule) -> String {
        guard let request = try? ConnectRequest(request) else { return rule.key ?? "GET " }
        return key(for: request, rule: rule)
    }

    /// The `Host` field `request` carries when it names another authority than its URL's (a virtual host reached at
    /// an address: `https://10.0.0.5/me` with `Host: tenant-a.example`), lowercased; `nil` otherwise. It is the
    /// target's authority (RFC 9112 §3.3): two such hosts are two resources.
    private static func virtualHost(of request: ConnectRequest) -> String? {
        guard let field = request.value(forHTTPHeaderField: "Host")?.trimmingCharacters(in: .whitespaces).lowercased(),
            !field.isEmpty
        else { return nil }
        let host = request.url.host?.lowercased() ?? ""
        let written = [host, "[\(host)]"]
        let authorities = written + (request.url.port.map { port in written.map { "\($0):\(port)" } } ?? [])
        return authorities.contains(field) ? nil : field
    }

    /// `key`, read as a method and a URL (then the key's other parts), with its URL's credentials left out: user info,
    /// and the query items whose names are secret (`access_token`, `api_key`, as redaction judges them); `key` itself
    /// when its URL carries none, or it reads as no method and URL (a rule's custom key).
    static func withoutURLCredentials(_ key: String) -> String {
        guard let space = key.firstIndex(of: " ") else { return key }
        let rest = key[key.index(after: space)...]
        let end =
            [hostMarker, bodyMarker, credentialsMarker].compactMap { rest.range(of: $0)?.lowerBound }.min()
            ?? rest.endIndex
        guard var components = URLComponents(string: String(rest[..<end])), components.scheme != nil else {
            return key
        }
        let items = components.percentEncodedQueryItems ?? []
        let kept = items.filter { !Redaction.isSensitiveQueryItem(Redaction.formDecoded(Substring($0.name))) }
        guard
            components.percentEncodedUser != nil || components.percentEncodedPassword != nil
                || kept.count < items.count
        else { return key }
        components.percentEncodedUser = nil
        components.percentEncodedPassword = nil
        if kept.count < items.count { components.percentEncodedQueryItems = kept.isEmpty ? nil : kept }
        guard let url = components.string else { return key }
        return key[...space] + url + rest[end...]
    }

    /// What separates a key from the `Host` field that names another authority than its URL's.
    private static let hostMarker = " host:"
    /// What separates a key from the digest of a request's credentials.
    private static let credentialsMarker = " credentials:"
    /// What separates a key from the digest of a request's body (``CacheRule/keyIncludesBody``).
    private static let bodyMarker = " body:"

    /// Whether `stored` is `key` or one of its variants: `key` followed by the digest of a body or of credentials
    /// (``ResponseCacheStorage/removeResponses(forKey:)`` says how a storage matches them). Compared as memory's
    /// dictionary compares keys, by canonical equivalence: a key spelled in another Unicode normalization (`é` as one
    /// scalar or as `e` and an accent) is the key memory answers, and removing either spelling removes it.
    static func isKey(_ stored: String, orVariantOf key: String) -> Bool {
        stored == key || stored.hasPrefix(key + hostMarker) || stored.hasPrefix(key + bodyMarker)
            || stored.hasPrefix(key + credentialsMarker)
    }

    /// Whether `url` carries credentials as a request's URL would (``credentialsDigest(of:)``): user info, or a
    /// secret query item (`access_token=`…, as redaction judges them).
    private static func carriesCredentials(_ url: URL?) -> Bool {
        guard let url else { return false }
        return url.user != nil || url.password != nil || !(url.query.map(SecretValues.formSecrets) ?? []).isEmpty
    }

    /// Whether a `Location` or `Content-Location` field of `response` names a URL that carries credentials, as
    /// ``carriesCredentials(_:)`` judges a URL (user info, a secret query item), or a secret item in its fragment
    /// (`#access_token=`, as OAuth's implicit flow returns one): a stored record would hold the field. A value that is
    /// no URL (it cannot be judged) or one written without `//` whose credentials Foundation reads as a path
    /// (`amy:pw@api.example.com`) counts as carrying them.
    private static func locationCarriesCredentials(_ response: ConnectResponse) -> Bool {
        response.head.headerFields.contains { field in
            guard
                HTTPHeader.asciiCaseInsensitiveEquals(field.name.rawName, "Location")
                    || HTTPHeader.asciiCaseInsensitiveEquals(field.name.rawName, "Content-Location")
            else { return false }
            let value = ResponseFreshness.trimmed(Substring(field.value))
            guard let url = URL(string: String(value)), Redaction.credentialsWithoutAuthority(in: value) == nil else {
                return true
            }
            return carriesCredentials(url) || !(url.fragment.map(SecretValues.formSecrets) ?? []).isEmpty
        }
    }

    /// Whether `response` has a header named like a secret, as redaction judges names
    /// (``HTTPHeader/isSensitive(name:)``: `X-Auth-Token`, `Authorization`, `X-Api-Key`, a session's…), other than
    /// `Set-Cookie`, which no record holds: a record would hold its value, and one written without the field would
    /// serve, after a restart, a response that silently lacks it.
    private static func hasSecretHeader(_ response: ConnectResponse) -> Bool {
        response.head.headerFields.contains { $0.name != .setCookie && HTTPHeader.isSensitive(name: $0.name.rawName) }
    }

    /// A digest of the credentials `request` carries, or `nil` if it carries none: its secret headers (names
    /// ignoring case, and values as sent, without the blanks around them), the user info of its URL, its secret query
    /// items (`access_token=`, `api_key=`…, as redaction judges them) and its body's secret fields (a form's
    /// `access_token=`, RFC 6750 §2.2; a JSON `password`). Those of the URL and the body count even when a custom key
    /// leaves them out. Seeded per process, like every `Hasher`: it tells sets of credentials apart without storing
    /// them.
    private static func credentialsDigest(of request: ConnectRequest) -> String? {
        let headers = request.headerFields
            .filter { HTTPHeader.isSensitive(name: $0.name.rawName) }
            .map { (name: $0.name.canonicalName, value: $0.value.trimmingCharacters(in: [" ", "\t"])) }
            .sorted { $0.name < $1.name }
        let url = request.url
        // Split as redaction splits it, at `&` and `;`: `?user=1;access_token=A` names a secret too.
        let querySecrets = url.query.map(SecretValues.formSecrets) ?? []
        let bodySecrets =
            request.httpBody.map { SecretValues.bodySecrets($0, contentType: request.headerFields[.contentType]) } ?? []
        guard
            !headers.isEmpty || url.user != nil || url.password != nil || !querySecrets.isEmpty || !bodySecrets.isEmpty
        else { return nil }
        var hasher = Hasher()
        hasher.combine(headers.count)
        for header in headers {
            hasher.combine(header.name)
            hasher.combine(header.value)
        }
        hasher.combine(url.user)
        hasher.combine(url.password)
        hasher.combine(querySecrets)
        hasher.combine(bodySecrets)
        return String(UInt(bitPattern: hasher.finalize()), radix: 16)
    }

    /// How the cache reads what it holds for one request: the rule, the request's directives, and what it accepts.
    private struct Reading {
        let rule: CacheRule
        let asks: RequestDirectives
        let policy: URLRequest.CachePolicy
        let limit: Int
        let servesRedirected: Bool
        let asksRange: Bool
        let bypasses: Bool
        let revalidates: Bool
        let servesStale: Bool

        /// Whether a stored response of `freshness` is served as it is, `now`.
        func accepts(_ freshness: StoredFreshness, now: Date) -> Bool {
            !revalidates
                && (servesStale || ResponseCache.accepts(freshness.within(rule.timeToLive), now: now, asks: asks))
        }
    }

    /// How the cache reads what it holds for `request` (``respond(to:context:next:)``), or `nil` when the request is
    /// not the cache's: it passes on as it is.
    private func reading(_ request: borrowing ConnectRequest, context: RequestContext) -> Reading? {
        // A download's body goes to its own file, not to memory: there is nothing to serve it from or to store. A
        // streamed call's goes to its reader, past the cache (``ResponseCacheStage``): so does its request here, where
        // the connectivity stage asks whether the cache would answer it.
        // The default rule and the client-wide one are for reads: under them, a DELETE or a POST is sent, not served
        // as a read of its key. Only a rule given for the request (its connector's, its call's or its method's) makes
        // a write a read.
        let isEveryRequestsRule = context.options.cache == nil || context.cacheRuleIsClientWide
        guard let given = context.options.cache ?? defaultRule, given.timeToLive > 0,
            Self.isCacheable(request, rule: given, readsOnly: isEveryRequestsRule),
            context.transfer.destination == nil, context.transfer.bodyFile == nil, context.transfer.streaming == nil
        else { return nil }
        // A custom key names one response: as every GET's key, it would answer `/b` with `/a`'s body.
        let rule = isEveryRequestsRule ? given.withoutKey : given
        let policy = request.cachePolicy
        // A reload fetches in full, ignoring what is stored; a request that asks to revalidate (RFC 9111 §5.2.1.4)
        // is served nothing as it is, but what is stored is revalidated, fresh or not.
        // A GET for part of the resource (`Range`, RFC 9110 §14.2) is not answered from a stored complete response:
        // the whole body, which a cache may serve (§14.2 lets a recipient ignore `Range`), is not what the app can
        // take for the part it asked, and this cache builds no 206 of its own (RFC 9111 §3.4 allows, not asks, it).
        // It goes to the server as it is, unconditional, and its 206 or 416 is not stored and leaves what is.
        let asksRange = request.method == .get && request.value(forHTTPHeaderField: "Range") != nil
        let asks = Self.requestDirectives(of: request)
        return Reading(
            rule: rule, asks: asks, policy: policy,
            limit: context.transfer.maxResponseBytes ?? .max,
            // A request with a redirect limit of its own (`RequestOptions.maxRedirects`, `0` to take a redirect as the
            // answer) is not served a response a redirect led to: how many redirects it took is not known.
            servesRedirected: context.transfer.maxRedirects == nil,
            asksRange: asksRange,
            bypasses: rule.bypassesCache || Self.ignoresStoredData(policy) || asksRange,
            // A condition only the origin server can judge (`If-Match`, `If-Unmodified-Since`, `If-Range`: RFC 9111
            // §4.3.2) is not answered from what is stored: the request is sent as it is, as a revalidation would be.
            revalidates: asks.revalidate || policy == .reloadRevalidatingCacheData
                || Self.originConditionFields.contains { request.value(forHTTPHeaderField: $0) != nil },
            // `returnCacheData…`: a stored response is served even past its time to live.
            servesStale: policy == .returnCacheDataElseLoad || policy == .returnCacheDataDontLoad)
    }

    /// Whether the cache holds a response it would serve `request` as it is, without the network: a fresh one, or a
    /// stale one the request accepts (`max-stale`, `.returnCacheData…`), in memory or in its storage. A
    /// ``ConnectivityMiddleware`` asks it offline, to let such a request on to the cache rather than hold it for the
    /// network. Counts nothing and changes nothing; what is stored may still change before the request gets here.
    func servesWithoutTheNetwork(_ request: ConnectRequest, context: RequestContext) -> Bool {
        guard let reading = reading(request, context: context), !reading.asks.noStore, !reading.bypasses,
            !reading.revalidates
        else { return false }
        let key = Self.key(for: request, rule: reading.rule, credentials: Self.credentialsDigest(of: request))
        let now = self.now()
        let method = context.method
        if let entry = state.withLock({ $0.entries[key] }), entry.method == method,
            entry.response.data.count <= reading.limit, entry.matches(request),
            reading.servesRedirected || !entry.isRedirected, reading.accepts(entry.freshness, now: now)
        {
            return true
        }
        guard
            let (stored, freshness) = fittingStoredResponse(
                forKey: key, request: request, method: method, limit: reading.limit, now: now),
            reading.servesRedirected || Self.resources(asked: request.url, answered: stored.url).count == 1
        else { return false }
        return reading.accepts(freshness, now: now)
    }

    /// The response ``storage`` keeps under `key` when it fits `request`: of its `method`, at most `limit` bytes, and
    /// with the request's values of the fields it varies on; with its freshness as of `now`.
    private func fittingStoredResponse(
        forKey key: String, request: ConnectRequest, method: HTTPMethod, limit: Int, now: Date
    ) -> (StoredResponse, StoredFreshness)? {
        guard let storage, let stored = storage.response(forKey: key), stored.method == method.rawValue,
            stored.body.count <= limit,
            stored.varying.allSatisfy({ Self.sameVaryValue($0.value, request.value(forHTTPHeaderField: $0.name)) })
        else { return nil }
        let freshness = StoredFreshness(
            expiry: stored.expiry, generated: ResponseFreshness.generated(stored, now: now),
            mustRevalidate: ResponseFreshness.mustRevalidate(stored.headers))
        return (stored, freshness)
    }

    /// Serves a fresh stored response, or sends the request through `next` and stores its response.
    func respond(
        to request: consuming ConnectRequest,
        context: RequestContext,
        next: @escaping Middleware.Next
    ) -> Future<ConnectResponse> {
        guard let reading = reading(request, context: context) else { return passing(request, to: next) }
        let rule = reading.rule
        let asks = reading.asks
        let policy = reading.policy
        // RFC 9111 §5.2.1.5: nothing of this exchange is stored. A stored response may still answer it; this cache
        // serves one only when the request also forbids the network, by `only-if-cached` or its cache policy
        // (`.returnCacheDataDontLoad`): it then sends, and stores, nothing.
        if asks.noStore, !asks.onlyIfCached, policy != .returnCacheDataDontLoad {
            return request.method == .head
                ? checkingStoredGET(request, rule: rule, sharesKey: rule.key != nil, next: next) : next(request)
        }
        let limit = reading.limit
        let servesRedirected = reading.servesRedirected
        let method = context.method
        let credentials = Self.credentialsDigest(of: request)
        let key = Self.key(for: request, rule: rule, credentials: credentials)
        let now = self.now()
        let asksRange = reading.asksRange
        let bypasses = reading.bypasses
        let revalidates = reading.revalidates
        let accepts = { (freshness: StoredFreshness) in reading.accepts(freshness, now: now) }
        let (found, stale, fetch, generation, seen, insertions) = state.withLock {
            state -> (Entry?, Entry?, UInt64, UInt64, UInt64?, UInt64) in
            var stale: Entry?
            // A body over this call's size limit is not served: the network makes the call fail as it should.
            if !bypasses, let entry = state.entries[key], entry.method == method,
                entry.response.data.count <= limit, entry.matches(request), servesRedirected || !entry.isRedirected
            {
                if accepts(entry.freshness) {
                    state.hits += 1
                    state.touch(key)
                    return (entry, nil, 0, 0, nil, 0)
                }
                // Kept, stale or not fresh enough for this request: a later one may accept it (`max-stale`, offline),
                // until this fetch's answer replaces it or the size limit evicts it. Until then, revalidated.
                stale = entry
            }
            state.misses += 1
            state.fetches &+= 1
            return (nil, stale, state.fetches, state.generation, state.entries[key]?.insertion, state.insertions)
        }
        // A memory hit is a use of the storage's copy too: it spared a read, and must not leave the copy the least
        // recently used there.
        if found != nil { storageUse?.noteUse(forKey: key) }
        var cached = found.map { Self.aged($0.response, generated: $0.freshness.generated, now: now) }
        var revalidated = stale
        if cached == nil, !bypasses, stale == nil {
            switch storedResponse(
                forKey: key, request: request, method: method, limit: limit, servesRedirected: servesRedirected,
                accepts: accepts, generation: generation, fetch: fetch, seen: seen, insertions: insertions)
            {
            case .fresh(let response): cached = response
            case .stale(let entry): revalidated = entry
            case .none: break
            }
        }
        context.transfer.observation?.record(.cacheLookup(hit: cached != nil))
        if var cached {
            // Stored for a request that may have named another fragment (not part of the key).
            cached = cached.answering(request)
            // The caller's own conditions, evaluated against what is served (RFC 9111 §4.3.2).
            if let notModified = Self.notModified(cached, for: request, now: now) { cached = notModified }
            // Nothing crossed the wire, but a progress bar still ends.
            Self.reportServed(cached, for: request, to: context.transfer.progress)
            return Future(value: cached)
        }
        if policy == .returnCacheDataDontLoad || asks.onlyIfCached {
            // Why nothing stored answers: the stored response found (`revalidated`) is not served as it is.
            let origin = Self.originConditionFields.first { request.value(forHTTPHeaderField: $0) != nil }
            let unanswered: String
            if asksRange {
                unanswered = "the cache answers no Range request from what it stores"
            } else if revalidated == nil {
                unanswered = "no stored response for this request"
            } else if let origin {
                unanswered =
                    "the stored response cannot answer its \(origin), a condition only the origin server judges"
            } else if revalidates {
                unanswered = "the stored response must be revalidated first, as the request asks"
            } else {
                unanswered = "the stored response is not fresh enough for this request"
            }
            let asking =
                policy == .returnCacheDataDontLoad
                ? "its cache policy (returnCacheDataDontLoad)" : "its Cache-Control (only-if-cached)"
            return Future(error: Self.unsent(request, because: unanswered, asking: asking))
        }
        // The headers as the cache saw them, for a response that varies on some of them.
        let requestHeaders = request.allHTTPHeaderFields ?? [:]
        let hasCredentials = credentials != nil
        let requestURL = request.url
        // A HEAD's answer is checked against the GET response stored for its URL (RFC 9111 §4.3.5).
        let head: ConnectRequest? = request.method == .head ? copy request : nil
        // The caller's own conditional request (sent as it is): a 304 that validates the stored response refreshes it
        // (RFC 9111 §4.3.4), as the cache's own revalidation would.
        let ownConditional: ConnectRequest? =
            revalidated != nil && Self.conditionalFields.contains { request.value(forHTTPHeaderField: $0) != nil }
            ? copy request : nil
        let storedStale = revalidated
        let response: Future<ConnectResponse>
        if let revalidated, let conditional = Self.conditional(request, for: revalidated) {
            // What the app removes meanwhile (a logout's removeAll(), removeResponse(forKey:)) is not served by the 304.
            let isRemoved: @Sendable () -> Bool = { [weak self] in
                self?.state.withLock { $0.isRemoved(key, since: fetch, generation: generation) } ?? false
            }
            response = Self.revalidating(
                revalidated, by: conditional, for: request, progress: context.transfer.progress, isRemoved: isRemoved,
                next: next)
        } else {
            response = next(request)
        }
        response.whenComplete { [weak self] result in
            guard let self, case .success(let response) = result else { return }
            if let head {
                self.checkStoredGET(for: head, rule: rule, against: response, fetch: fetch, generation: generation)
            }
            if response.statusCode == 304, let ownConditional, let storedStale, !storedStale.isRedirected {
                guard Self.validates(response, stored: storedStale.response, for: ownConditional) else { return }
                self.refresh(
                    storedStale, underKey: key, for: ownConditional, by: response, timeToLive: rule.timeToLive,
                    fetch: fetch, generation: generation, hasCredentials: hasCredentials)
                return
            }
            // The older response an answer supersedes, if any (a refetch), must not be served in its place, nor
            // the answer of a fetch started earlier and answered later (``State/superseded``). Under a custom key,
            // which another method's response may hold, memory keeps that one, and so does the storage.
            let removeSuperseded = { (method: HTTPMethod?) in
                guard self.state.withLock({ $0.supersede(key, method: method, byFetch: fetch) }) else { return }
                if let method, rule.key != nil, let record = self.storage?.response(forKey: key),
                    record.method != method.rawValue
                {
                    return
                }
                self.storage?.removeResponses(forKey: key)
            }
            guard Self.isStorable(response) else {
                // A 404 or a 410 is the server's word that the resource is not there (a server error says nothing
                // of it, and leaves what is stored): what any method stored under the key goes, as the storage's
                // record does (under a custom key HEAD and GET share, memory kept serving the GET's body).
                if Self.goneStatuses.contains(response.statusCode) { removeSuperseded(nil) }
                return
            }
            let resources = Self.resources(asked: requestURL, answered: response.storedHead.url)
            let size = Self.estimatedSize(of: response)
            let arrival = self.now()
            guard size <= self.maxBytes, let varying = Self.varying(of: response, requestHeaders: requestHeaders),
                let freshness = ResponseFreshness.freshness(of: response, timeToLive: rule.timeToLive, now: arrival)
            else {
                // The server's newest answer for this key may not be stored (`no-store`, stale, `Vary: *`, too
                // large). A HEAD's 200 says what it can of the GET response a custom key shares with it (§4.3.5).
                if let head, rule.key != nil {
                    self.checkStoredGET(
                        for: head, rule: rule, against: response, fetch: fetch, generation: generation, sharesKey: true)
                }
                removeSuperseded(method)
                return
            }
            let entry = Entry(
                response: response, freshness: StoredFreshness(freshness, arrival: arrival), size: size, tick: 0,
                method: method, varying: varying, fetch: fetch, resources: resources, timeToLive: rule.timeToLive)
            let stored = self.state.withLock { state -> Bool in
                // Not stored over what the app removed since the fetch started (a logout's removeAll(), an
                // invalidation after a write), nor over the answer of a fetch started later (stored, or removing).
                guard !state.isRemoved(key, since: fetch, generation: generation),
                    !state.isInvalidated(resources, since: fetch), !state.isOutdated(fetch, forKey: key)
                else { return false }
                state.insert(key, entry: entry, limit: self.maxBytes)
                return true
            }
            // A response to a request with credentials stays in memory (see `DiskResponseStorage`).
            if stored, !hasCredentials {
                self.write(
                    entry, forKey: key, asked: requestURL, arrival: arrival, fetch: fetch, generation: generation)
            }
        }
        return response
    }

    /// Writes `entry`, which fetch number `fetch` (started in `generation`) just stored in memory under `key`, for a
    /// request to `asked` without credentials, to the ``storage``, as having arrived at `arrival`.
    ///
    /// A response a redirect brought from a URL that carries credentials (a signed link), or whose `Location` or
    /// `Content-Location` names one, or with a header named like a secret, stays in memory: its record would hold that
    /// URL or value. What the storage has under the key is older than this answer, and goes.
    private func write(
        _ entry: Entry, forKey key: String, asked: URL, arrival: Date, fetch: UInt64, generation: UInt64
    ) {
        guard let storage else { return }
        let response = entry.response
        if Self.carriesCredentials(response.storedHead.url) || Self.locationCarriesCredentials(response)
            || Self.hasSecretHeader(response)
        {
            storage.removeResponses(forKey: key)
            return
        }
        var record = Self.stored(
            response, method: entry.method, expiry: entry.freshness.expiry, receivedAt: arrival,
            varying: entry.varying)
        // A redirect led here: a write to the URL asked for removes the file too, after a restart.
        if entry.isRedirected { record.requestURL = asked }
        storage.store(record, forKey: key)
        // The app removed responses while the file was written (a logout's removeAll(), a write to the resource), or
        // a fetch started later answered meanwhile, storing its answer (whose write this one may have overtaken) or
        // removing the key (`no-store`): an older answer must not stay in the storage, to be served after a restart.
        // It goes.
        let isRemoved = state.withLock {
            $0.isRemoved(key, since: fetch, generation: generation) || $0.isInvalidated(entry.resources, since: fetch)
                || $0.latestAnswer(forKey: key) > fetch
        }
        if isRemoved { storage.removeResponses(forKey: key) }
    }

    /// What decides whether a stored response may answer a request (``accepts(_:now:asks:)``).
    struct StoredFreshness {
        /// When it stops being fresh.
        var expiry: Date
        /// When its age was 0 (RFC 9111 §4.2.3): its arrival less its `Age` then; `nil` when unknown.
        var generated: Date?
        /// Whether it says `must-revalidate`: then never served stale (§4.2.4).
        var mustRevalidate: Bool

        /// This freshness for a request whose rule says `timeToLive`: a rule shorter than the one the response was
        /// stored under ends its lifetime sooner (``CacheRule/timeToLive`` is the longest a stored response is
        /// served), a longer one never lengthens it. A response of unknown age keeps its expiry.
        func within(_ timeToLive: TimeInterval) -> StoredFreshness {
            guard let generated, timeToLive.isFinite else { return self }
            var shortened = self
            shortened.expiry = min(expiry, generated.addingTimeInterval(timeToLive))
            return shortened
        }
    }

    /// Whether `stored` may be served `now` to a request that `asks` for `max-age`, `min-fresh` and `max-stale`
    /// (RFC 9111 §5.2.1.1 to §5.2.1.3): at most `max-age` seconds old (a response of unknown age never is); fresh
    /// for `min-fresh` more seconds, less the `max-stale` seconds of staleness the request accepts (both together:
    /// `min-fresh=10, max-stale=60` accepts a response stale by up to 50 seconds). A response that says
    /// `must-revalidate` is never served stale. An infinite `min-fresh` (an argument that is not a number,
    /// ``CacheDirectives/minFresh``) is met by no stored response, whatever `max-stale` accepts.
    static func accepts(_ stored: StoredFreshness, now: Date, asks: RequestDirectives) -> Bool {
        if let maxAge = asks.maxAge {
            guard let generated = stored.generated, now.timeIntervalSince(generated) <= maxAge else { return false }
        }
        let minFresh = asks.minFresh ?? 0
        // Less a bare `max-stale` (infinity), an infinite `min-fresh` would be ∞ − ∞, which the comparison below
        // reads as met: the request that asked for more freshness than it could say would get any stale response.
        guard minFresh.isFinite else { return false }
        let freshFor = stored.expiry.timeIntervalSince(now)
        guard freshFor > 0 || (asks.maxStale != nil && !stored.mustRevalidate) else { return false }
        return freshFor - minFresh >= -(asks.maxStale ?? 0)
    }

    /// The error of a request the cache cannot answer and must not send: `unanswered` says why nothing stored answers
    /// it (none is stored, or why the one stored cannot), `asking` what forbids the network.
    private static func unsent(_ request: ConnectRequest, because unanswered: String, asking: String) -> ConnectError {
        ConnectError(
            .transport, message: "\(unanswered), and \(asking) forbids the network",
            request: .sent(request), underlyingError: URLError(.resourceUnavailable))
    }

    /// What ``storage`` has for a request, as `storedResponse(forKey:…)` reads it.
    private enum StorageRead {
        /// A response the request accepts, to serve.
        case fresh(ConnectResponse)
        /// One the request does not accept as it is (stale, or not fresh enough for it): to revalidate.
        case stale(Entry)
    }

    /// A stored response from ``storage`` that `accepts` its expiry, for `request`, now also in memory unless memory
    /// changed under `key` while the storage was read (`seen`: the insertion of the entry there before, if any;
    /// `insertions`: how many insertions memory had had, so that an entry put there and evicted meanwhile counts as a
    /// change): a refetch's newer answer is not replaced by what a storage read found before it; or one it does not
    /// accept, to revalidate (neither served nor kept). `nil` when it has none that fits, only one a redirect led to
    /// and `servesRedirected` is `false`, or one read before a removal the app made meanwhile.
    private func storedResponse(
        forKey key: String, request: ConnectRequest, method: HTTPMethod, limit: Int, servesRedirected: Bool,
        accepts: (StoredFreshness) -> Bool,
        generation: UInt64, fetch: UInt64, seen: UInt64?, insertions: UInt64
    ) -> StorageRead? {
        guard
            let (stored, freshness) = fittingStoredResponse(
                forKey: key, request: request, method: method, limit: limit, now: now())
        else { return nil }
        var fields = HeaderFields()
        for header in stored.headers {
            fields.append(HeaderField(name: HeaderField.Name(header.name), value: header.value ?? ""))
        }
        guard
            let response = ConnectResponse(
                request: request, head: ResponseHead(status: stored.statusCode, headerFields: fields),
                data: stored.body, url: stored.url)
        else { return nil }
        let resources = Self.resources(asked: request.url, answered: stored.url)
        guard servesRedirected || resources.count == 1 else { return nil }
        let entry = Entry(
            response: response, freshness: freshness, size: Self.estimatedSize(of: response), tick: 0,
            method: method, varying: stored.varying.map { ($0.name, $0.value) }, resources: resources)
        let isAccepted = accepts(freshness)
        // Read before a removal the app made meanwhile (a logout's removeAll(), a write to the resource) or an answer
        // that removed the key (`no-store`, a 404): not served, nor kept, nor revalidated (a 304 would serve what was
        // removed).
        let isCurrent = state.withLock { state -> Bool in
            guard !state.isRemoved(key, since: fetch, generation: generation),
                !state.isInvalidated(resources, since: fetch), !state.isSuperseded(key, since: fetch)
            else { return false }
            guard isAccepted else { return true }
            state.hits += 1
            state.misses -= 1
            if entry.size <= maxBytes, state.entries[key]?.insertion == seen,
                !state.isEvicted(key, insertedAfter: insertions)
            {
                state.insert(key, entry: entry, limit: maxBytes)
            }
            return true
        }
        guard isCurrent else { return nil }
        return isAccepted ? .fresh(Self.aged(response, generated: freshness.generated, now: now())) : .stale(entry)
    }

    // MARK: - Revalidation

    /// The request fields that make a request conditional (RFC 9110 §13.1): a request that carries one is the
    /// caller's own conditional request, which the cache sends as it is.
    private static let conditionalFields = [
        "If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range",
    ]

    /// The request fields whose condition only the origin server can judge (RFC 9111 §4.3.2: "the If-Match and
    /// If-Unmodified-Since conditional header fields are not applicable to a cache"; "A cache MUST NOT evaluate
    /// conditional header fields that only apply to an origin server"), and `If-Range`, which only a cache that
    /// serves partial responses evaluates (this one stores none). A request that carries one is sent to the server,
    /// fresh stored response or not, and its answer counts as any answer to the caller's own conditional request.
    private static let originConditionFields = ["If-Match", "If-Unmodified-Since", "If-Range"]

    /// The fields of a stored response that a 304 the cache answers with keeps (RFC 9110 §15.4.5: those a server's 304
    /// sends, `Last-Modified` as a validator, and `Age`); the others describe the body it does not carry.
    private static let notModifiedFields: Set<String> = [
        "age", "cache-control", "content-location", "date", "etag", "expires", "last-modified", "vary",
    ]

    /// A `304 Not Modified` for `request`, the caller's own conditional GET or HEAD, when its conditions say that
    /// `served`, the fresh stored `200 OK` about to answer it (a 304 stands for a 200: another 2xx is served whole), is
    /// what the caller has already (RFC 9111 §4.3.2): its `If-None-Match` names the stored `ETag` (compared weakly) or
    /// is `*`, or, without `If-None-Match`, its `If-Modified-Since` is an HTTP-date not older than the stored
    /// `Last-Modified`, or without one the stored `Date` (RFC 9111 §4.3.2: "a cache SHOULD use the stored response's
    /// Date field value"). The 304 has no body, and of `served`'s fields only ``notModifiedFields``, as a server's 304
    /// would. `nil` when the conditions do not match (`served` answers), or cannot be judged: an `If-Modified-Since`
    /// that is no HTTP-date, a stored response without `Last-Modified` and without a `Date` (or with one that is no
    /// HTTP-date: its arrival time, which §4.3.2 allows next, is not the server's clock), an `If-None-Match` that is no
    /// list of entity tags. The request's `If-Match`, `If-Unmodified-Since` and `If-Range` are not evaluated here: a
    /// request with one is never served from what is stored (``originConditionFields``).
    static func notModified(_ served: ConnectResponse, for request: ConnectRequest, now: Date) -> ConnectResponse? {
        // RFC 9110 §15.4.5: a 304 says the request "would have resulted in a 200 (OK) response"; RFC 9111 §4.3.2
        // evaluates conditions against a stored 200 or 206 (never stored here). Another stored 2xx is served whole.
        guard request.method == .get || request.method == .head, served.statusCode == 200 else {
            return nil
        }
        let trimmed = { (value: String) in String(ResponseFreshness.trimmed(Substring(value))) }
        if let ifNoneMatch = request.value(forHTTPHeaderField: "If-None-Match") {
            guard let tags = entityTags(in: trimmed(ifNoneMatch)) else { return nil }
            if tags != ["*"] {
                guard let stored = served.header("ETag").map(trimmed), tags.contains(where: { isSameETag($0, stored) })
                else { return nil }
            }
        } else if let ifModifiedSince = request.value(forHTTPHeaderField: "If-Modified-Since") {
            // RFC 9111 §4.3.2: without `Last-Modified`, the cache "SHOULD use the stored response's Date field value".
            guard let since = HTTPDate.date(from: trimmed(ifModifiedSince), now: now),
                let modified = (served.header("Last-Modified") ?? served.header("Date"))
                    .flatMap({ HTTPDate.date(from: trimmed($0), now: now) }),
                modified <= since
            else { return nil }
        } else {
            return nil
        }
        var fields = HeaderFields()
        for field in served.head.headerFields where notModifiedFields.contains(field.name.canonicalName) {
            fields.append(field)
        }
        var notModified = replacingHead(
            of: served, with: ResponseHead(status: 304, headerFields: fields), url: request.url)
        notModified.data = Data()
        return notModified
    }

    /// The entity tags of an `If-None-Match` value (RFC 9110 §8.8.3, §13.1.2): `["*"]` for `*`, else each tag of the
    /// comma-separated list as written (`W/` kept; a tag may hold a comma inside its quotes). `nil` for a value that
    /// is neither.
    static func entityTags(in value: String) -> [String]? {
        if value == "*" { return ["*"] }
        var tags: [String] = []
        var rest = Substring(value)
        while true {
            rest = rest.drop { $0 == " " || $0 == "\t" || $0 == "," }
            guard !rest.isEmpty else { break }
            let weak = rest.hasPrefix("W/")
            let quoted = weak ? rest.dropFirst(2) : rest
            guard quoted.first == "\"", let close = quoted.dropFirst().firstIndex(of: "\"") else { return nil }
            tags.append(String(rest[..<quoted.index(after: close)]))
            rest = quoted[quoted.index(after: close)...]
            guard rest.isEmpty || rest.first == "," || rest.first == " " || rest.first == "\t" else { return nil }
        }
        return tags.isEmpty ? nil : tags
    }

    /// `request` made conditional on `stale` (RFC 9111 §4.3.1): with `If-None-Match` naming its `ETag` and
    /// `If-Modified-Since` its `Last-Modified`. `nil` when the response has no validator (or none that can be sent),
    /// when the request is not a GET or HEAD, when it is conditional already (its caller handles the 304), or when a
    /// redirect led to the stored response (a conditional request to the URL asked for would be about another
    /// resource than the one stored).
    private static func conditional(_ request: ConnectRequest, for stale: Entry) -> ConnectRequest? {
        guard request.method == .get || request.method == .head, !stale.isRedirected,
            !conditionalFields.contains(where: { request.value(forHTTPHeaderField: $0) != nil })
        else { return nil }
        var conditional = request
        var isConditional = false
        for (validator, field) in [("ETag", "If-None-Match"), ("Last-Modified", "If-Modified-Since")] {
            guard let header = stale.response.header(validator),
                case let value = String(ResponseFreshness.trimmed(Substring(header))), !value.isEmpty,
                HTTPHeader.isSendableValue(value)
            else { continue }
            conditional.setValue(value, forHTTPHeaderField: field)
            conditional.cacheConditionalFields.append(field)
            isConditional = true
        }
        return isConditional ? conditional : nil
    }

    /// Sends `conditional` through `next`; a 304 answer is served as the `stale` response it validated, with its
    /// headers updated (`updated(_:with:request:)`). A 304 that validates another response (its `ETag` or
    /// `Last-Modified` is not the stored one's, or a redirect the transport followed led to another resource), or one that comes after the app removed the stored response
    /// (`isRemoved`: ``removeAll()``, ``removeResponse(forKey:)``, which must serve nothing stored before them), sends
    /// `request` again, without conditions: its caller did not ask for a 304. Any other answer or failure is the
    /// call's, as it is.
    private static func revalidating(
        _ stale: Entry, by conditional: ConnectRequest, for request: ConnectRequest,
        progress: (@Sendable (TransferProgress) -> Void)?, isRemoved: @escaping @Sendable () -> Bool,
        next: @escaping Middleware.Next
    ) -> Future<ConnectResponse> {
        next(conditional).flatMap { answer in
            guard answer.statusCode == 304 else { return Future(value: answer) }
            guard !isRemoved(), let updated = updated(stale.response, with: answer, request: request) else {
                return next(request)
            }
            // The engine's last report was of the 304's empty body: the bar ends with the body served instead.
            reportServed(updated, for: request, to: progress)
            return Future(value: updated)
        }
    }

    /// Reports `served`, a response the cache serves from what it stores (a hit, or a 304's stored body), to a
    /// request's `progress` handler: one report of the whole body, as an engine's last one reads (the request's
    /// body counted as sent, the response's as received).
    private static func reportServed(
        _ served: ConnectResponse, for request: ConnectRequest, to progress: (@Sendable (TransferProgress) -> Void)?
    ) {
        guard let progress else { return }
        let sent = Int64(request.httpBody?.count ?? 0)
        let received = Int64(served.data.count)
        progress(
            TransferProgress(
                bytesSent: sent, totalBytesToSend: sent, bytesReceived: received, totalBytesToReceive: received))
    }

    /// The fields of a 304 or a HEAD's 200 that do not update a stored response (RFC 9111 §3.2): the stored body's own
    /// framing and coding, and the fields of the connection that carried the answer (with those its `Connection`
    /// names, ``updatingFields(of:with:url:)``).
    private static let fieldsNotUpdated: Set<String> = [
        "content-length", "content-encoding", "transfer-encoding", "content-range", "connection", "keep-alive",
        "proxy-connection", "te", "trailer", "upgrade",
    ]

    /// `stored` as a 304 `answer` validated it (RFC 9111 §4.3.4): its status and body, each of its fields the 304
    /// carries replaced by the 304's (but `fieldsNotUpdated`), its `Age` the 304's (none: 0), and `request` as the
    /// request it answers. `nil` when the 304 names another representation: an `ETag` other than the stored one's
    /// (compared weakly, as `If-None-Match` is), or, without `ETag`, a `Last-Modified` other than the stored one's.
    private static func updated(
        _ stored: ConnectResponse, with answer: ConnectResponse, request: ConnectRequest
    ) -> ConnectResponse? {
        guard !answersAnotherResource(answer, than: request) else { return nil }
        let trimmed = { (value: String?) in value.map { String(ResponseFreshness.trimmed(Substring($0))) } }
        if let etag = trimmed(answer.header("ETag")) {
            guard let storedETag = trimmed(stored.header("ETag")), isSameETag(storedETag, etag) else { return nil }
        } else if let lastModified = trimmed(answer.header("Last-Modified")),
            lastModified != trimmed(stored.header("Last-Modified"))
        {
            return nil
        }
        return updatingFields(of: stored, with: answer, url: request.url).answering(request)
    }

    /// `stored` with its header fields updated from `answer`, a 304 that validated it or a HEAD's 200 that agrees with
    /// it (RFC 9111 §3.2): "the cache MUST add each header field in the provided response to the stored response,
    /// replacing field values that are already present", but `fieldsNotUpdated` and the fields the answer's
    /// `Connection` names (§3.1: they are the connection's, RFC 9110 §7.6.1); its `Age` the answer's (none: 0: the
    /// answer is as old as it says). Its status and body are kept, and its URL (`url` when it has none).
    private static func updatingFields(of stored: ConnectResponse, with answer: ConnectResponse, url: URL)
        -> ConnectResponse
    {
        var fields = stored.head.headerFields
        fields[HeaderField.Name("Age")] = nil
        let connectionFields = Set(
            answer.head.headerFields[values: HeaderField.Name("Connection")]
                .flatMap { $0.split(separator: ",") }
                .map { HeaderField.Name(String(ResponseFreshness.trimmed($0))) })
        let updates = answer.head.headerFields.filter {
            !fieldsNotUpdated.contains($0.name.canonicalName) && !connectionFields.contains($0.name)
        }
        var names: [HeaderField.Name] = []
        for field in updates where !names.contains(field.name) { names.append(field.name) }
        for name in names {
            fields[values: name] = updates.filter { $0.name == name }.map(\.value)
        }
        return replacingHead(of: stored, with: ResponseHead(status: stored.statusCode, headerFields: fields), url: url)
    }

    /// `response` with `head` in place of its own, keeping its URL (`url` when it has none) and HTTP version.
    private static func replacingHead(of response: ConnectResponse, with head: ResponseHead, url: URL)
        -> ConnectResponse
    {
        let httpVersion: String
        switch response.storedHead {
        case .parts(let parts): httpVersion = parts.httpVersion
        case .foundation: httpVersion = "HTTP/1.1"
        }
        var replaced = response
        replaced.storedHead = .parts(
            ResponseParts(url: response.storedHead.url ?? url, head: head, httpVersion: httpVersion))
        return replaced
    }

    /// `response` as the cache serves it `now`: with one `Age` field, its current age in whole seconds (RFC 9111
    /// §5.1, §4.2.3: the time since `generated`, when its age was 0, by the cache's clock), in place of the `Age` it
    /// came with; 0 for a clock set back, and at most 2³¹ (§1.2.2). Unchanged when its age is unknown (a response of a
    /// storage that kept neither its arrival nor a `Date`).
    private static func aged(_ response: ConnectResponse, generated: Date?, now: Date) -> ConnectResponse {
        guard let generated else { return response }
        let seconds = now.timeIntervalSince(generated)
        // `min` and `max` would pass a NaN on (NaN compares false), and Int64(NaN) stops the process.
        let age = seconds > 0 ? min(seconds, ResponseFreshness.maxDeltaSeconds).rounded(.down) : 0
        var head = response.head
        head.headerFields[HeaderField.Name("Age")] = String(Int64(age))
        return replacingHead(of: response, with: head, url: response.storedRequest.url ?? RelativeBase.url)
    }

    /// Sends a request the cache neither serves nor stores; when its method is unsafe (RFC 9110 §9.2.1: any but
    /// GET, HEAD, OPTIONS and TRACE), a non-error answer removes what is stored for the resources it changed.
    func passing(_ request: consuming ConnectRequest, to next: @escaping Middleware.Next) -> Future<ConnectResponse> {
        if request.method == .head { return checkingStoredGET(request, rule: nil, next: next) }
        guard !Self.isSafe(request.method) else { return next(request) }
        let target = request.url
        let response = next(request)
        response.whenComplete { [weak self] result in
            guard let self, case .success(let response) = result else { return }
            self.invalidate(after: response, to: target)
        }
        return response
    }

    /// RFC 9111 §4.4: after a non-error (2xx or 3xx) answer to an unsafe request, removes the responses stored for
    /// its target URL and for the URLs its `Location` and `Content-Location` name on the same origin, whatever
    /// their keys and credentials, from memory and from the storage.
    private func invalidate(after response: ConnectResponse, to target: URL) {
        guard (200..<400).contains(response.statusCode) else { return }
        var urls = [target]
        if let answered = response.storedHead.url, answered.hasSameOrigin(as: target) { urls.append(answered) }
        for name in ["Location", "Content-Location"] {
            guard let value = response.header(name),
                let url = URL(string: String(ResponseFreshness.trimmed(Substring(value))), relativeTo: target)?
                    .absoluteURL,
                url.hasSameOrigin(as: target)
            else { continue }
            urls.append(url)
        }
        let resources = Set(urls.compactMap(Self.resource(of:)))
        guard !resources.isEmpty else { return }
        // First memory, holding back the fetches in flight: a response they bring from now on is stored nowhere,
        // and one whose file is written after the storage is cleared is taken back by its fetch, which checks.
        let keys = state.withLock { $0.invalidate(resources) }
        if let storage {
            (storage as? any ResponseStorageByURL)?.removeResponses(forResources: resources)
            // A storage of the app's own is searched by key: the keys a GET or HEAD of these URLs is stored under
            // (a redirected response keeps its URL asked for in its key), and those memory had for them.
            var storedKeys = Set(keys)
            for url in urls.map(\.absoluteStringWithoutFragment) {
                storedKeys.formUnion(["GET \(url)", "HEAD \(url)"])
            }
            for key in storedKeys { storage.removeResponses(forKey: key) }
            // Then memory again: a fetch that read the storage before it was cleared does not keep what it read.
            _ = state.withLock { $0.invalidate(resources) }
        }
    }

    // MARK: - HEAD answers (RFC 9111 §4.3.5)

    /// Sends `head`, a HEAD the cache neither serves nor stores, through `next`, and checks the GET response stored for
    /// its URL against its answer (``checkStoredGET(for:rule:against:fetch:generation:)``).
    private func checkingStoredGET(
        _ head: ConnectRequest, rule: CacheRule?, sharesKey: Bool = false, next: @escaping Middleware.Next
    ) -> Future<ConnectResponse> {
        // Numbered as a fetch: a GET sent later has a newer answer, which this one's neither removes nor updates.
        let (fetch, generation) = state.withLock { state -> (UInt64, UInt64) in
            state.fetches &+= 1
            return (state.fetches, state.generation)
        }
        let answer = next(head)
        answer.whenComplete { [weak self] result in
            guard let self, case .success(let response) = result else { return }
            self.checkStoredGET(
                for: head, rule: rule, against: response, fetch: fetch, generation: generation, sharesKey: sharesKey)
        }
        return answer
    }

    /// RFC 9111 §4.3.5: "When a cache makes an inbound HEAD request for a target URI and receives a 200 (OK) response,
    /// the cache SHOULD update or invalidate each of its stored GET responses that could have been chosen for that
    /// request (see Section 4.1). For each of the stored responses that could have been chosen, if the stored response
    /// and HEAD response have matching values for any received validator fields (ETag and Last-Modified) and, if the
    /// HEAD response has a Content-Length header field, the value of Content-Length matches that of the stored
    /// response, the cache SHOULD update the stored response as described below; otherwise, the cache SHOULD consider
    /// the stored response to be stale. If a cache updates a stored response with the metadata provided in a HEAD
    /// response, the cache MUST use the header fields provided in the HEAD response to update the stored response (see
    /// Section 3.2)."
    ///
    /// When `answer` to `head` is a `404 Not Found` or a `410 Gone`, the GET response stored under that key goes, from
    /// memory and from the storage, whatever its variant: the resource is not there, as a GET's 404 says.
    /// When `answer` to `head` is a `200 OK` that names another representation than the GET response stored for the
    /// same URL and credentials (``headAnswer(_:contradicts:bodyCount:)``), that response goes, from memory and from
    /// the storage: its body is not the resource's any more, and a GET must not be served it as fresh. (Removed rather
    /// than kept stale: one entry per key, and the storage has no way to mark a record stale.) One that agrees updates
    /// the response in memory as a 304 would, its freshness with it
    /// (``refresh(_:underKey:for:by:fetch:generation:)``). Only the response a GET with `head`'s headers would be
    /// served is checked (`Vary`), and only under a key a GET would have: without the rule's custom key, which does
    /// not name the method (a HEAD's answer stored there replaces the GET's already), unless `sharesKey`: then under
    /// the rule's custom key, for a HEAD's answer that is not stored there (`no-store`, `Vary: *`, or a HEAD that
    /// asked `no-store`), and a 404 or a 410 removes whatever method's response is there. `rule` is `nil` for a HEAD
    /// the cache does not take: the GET is then looked for under its method and URL. `fetch` numbers `head`'s fetch,
    /// started in `generation`: a GET fetch started later has a newer answer, which stays as it is.
    private func checkStoredGET(
        for head: ConnectRequest, rule: CacheRule?, against answer: ConnectResponse, fetch: UInt64,
        generation: UInt64, sharesKey: Bool = false
    ) {
        let isGone = Self.goneStatuses.contains(answer.statusCode)
        guard answer.statusCode == 200 || isGone, rule?.key == nil || sharesKey else { return }
        var get = head
        get.method = .get
        let credentials = Self.credentialsDigest(of: head)
        let key = Self.key(
            for: get, named: sharesKey ? rule?.key : nil, includesBody: rule?.keyIncludesBody ?? false,
            credentials: credentials)
        // A 404 or a 410 says the resource is not there, whatever its representation: the GET response goes, as a
        // GET's own 404 would remove it (its variants' key is the same), from memory and from the storage; under a
        // shared key, whatever method's response is there.
        if isGone {
            guard state.withLock({ $0.supersede(key, method: sharesKey ? nil : .get, byFetch: fetch) }) else { return }
            storage?.removeResponses(forKey: key)
            return
        }
        // A `200` a redirect led to (`/a` now answers `302` to `/b`) is another resource's: it refreshes nothing a GET
        // of `head`'s URL got, as a 304 from there validates nothing (`updated`). One that contradicts the stored
        // response still removes it: a GET of that URL would not be answered so now.
        let answersElsewhere = Self.answersAnotherResource(answer, than: head)
        // Memory first: what it has under the key is what a GET would be served. `nil` when it has nothing that a GET
        // with these headers would be served.
        let found = state.withLock { state -> HeadCheck? in
            guard let entry = state.entries[key], entry.method == .get, entry.matches(head) else { return nil }
            guard
                Self.headAnswer(
                    answer, contradicts: { entry.response.header($0) }, bodyCount: entry.response.data.count)
            else { return .agrees(entry) }
            return .contradicts(removed: state.supersede(key, method: .get, byFetch: fetch))
        }
        switch found {
        case .agrees(let entry):
            // A GET response a redirect led to is another resource's, as is an answer a redirect led to: the HEAD's
            // answer is not its revalidation.
            guard !entry.isRedirected, !answersElsewhere else { return }
            refresh(
                entry, underKey: key, for: head, by: answer, timeToLive: nil, fetch: fetch, generation: generation,
                hasCredentials: credentials != nil)
            return
        case .contradicts(let removed):
            if removed { storage?.removeResponses(forKey: key) }
            return
        case nil: break
        }
        guard let storage else { return }
        // Then the storage, which a GET reads when memory has nothing (after a restart, or an eviction).
        guard let record = storage.response(forKey: key), record.method == HTTPMethod.get.rawValue,
            record.varying.allSatisfy({ Self.sameVaryValue($0.value, head.value(forHTTPHeaderField: $0.name)) })
        else { return }
        let field = { (name: String) in
            record.headers.first { HTTPHeader.asciiCaseInsensitiveEquals($0.name, name) }?.value
        }
        // One that agrees leaves the record as it is (its rule is not known), unless its fields would keep the
        // updated response out of the cache, as they remove one memory has (`refresh`): `no-store`, `Vary: *`. Those
        // of another resource's answer (a redirect's) update nothing, as in memory.
        let cacheControl = ResponseFreshness.freshnessFields(of: answer.storedHead).cacheControl
        let forbidsStoring =
            !answersElsewhere
            && ((cacheControl.map { CacheDirectives($0).noStore } ?? false)
                || Self.varying(of: answer, requestHeaders: [:]) == nil)
        guard Self.headAnswer(answer, contradicts: field, bodyCount: record.body.count) || forbidsStoring,
            state.withLock({ $0.supersede(key, method: .get, byFetch: fetch) })
        else { return }
        storage.removeResponses(forKey: key)
    }

    /// What memory has for a HEAD's `200 OK` (``checkStoredGET(for:rule:against:fetch:generation:)``).
    private enum HeadCheck {
        /// A GET response that agrees with the answer: to update.
        case agrees(Entry)
        /// A GET response that does not: removed, unless a newer answer stood (then `removed` is `false`).
        case contradicts(removed: Bool)
    }

    /// Updates `entry`, the GET response memory has under `key`, from `answer`, the agreeing `200 OK` to `head` (RFC
    /// 9111 §4.3.5): its header fields as a 304's would (``updatingFields(of:with:url:)``, §3.2), and its freshness
    /// from them as if it had just arrived, by the time to live of the rule it was stored under (a HEAD's `max-age`
    /// refreshes it, but no longer than that rule allows; the HEAD's own rule is not the GET's). The storage's copy is
    /// written again, unless the request carries credentials (`hasCredentials`: it has none). `answer` may also be a
    /// 304 that validated `entry` for the caller's own conditional request `head` (§4.3.4): `timeToLive` is then that
    /// request's rule's, as for the cache's own revalidation, and `entry` may be one read from the storage (then
    /// updated only while memory has nothing under `key`); `nil` takes the rule `entry` was stored under.
    ///
    /// Nothing changes when a fetch started after `head`'s (number `fetch`, in `generation`) stored or removed the
    /// response meanwhile, when the app removed it, or when, without `timeToLive`, the entry was read from the storage
    /// (its rule's time to live is not known). An updated response that may no longer be stored (the answer says
    /// `no-store` or `Vary: *`, or it is stale without a validator) goes, as a GET's answer saying so would remove it.
    private func refresh(
        _ entry: Entry, underKey key: String, for head: ConnectRequest, by answer: ConnectResponse,
        timeToLive: TimeInterval?, fetch: UInt64, generation: UInt64, hasCredentials: Bool
    ) {
        guard let timeToLive = timeToLive ?? entry.timeToLive else { return }
        let response = Self.updatingFields(of: entry.response, with: answer, url: head.url)
        let size = Self.estimatedSize(of: response)
        let arrival = now()
        // The request headers its `Vary` names now, with `head`'s values: those chose the representation the HEAD
        // agrees on. `Vary: *` answers no request, and the response goes.
        guard size <= maxBytes,
            let varying = Self.varying(of: response, requestHeaders: head.allHTTPHeaderFields ?? [:]),
            let freshness = ResponseFreshness.freshness(of: response, timeToLive: timeToLive, now: arrival)
        else {
            guard state.withLock({ $0.supersede(key, method: .get, byFetch: fetch) }) else { return }
            storage?.removeResponses(forKey: key)
            return
        }
        var refreshed = entry
        refreshed.response = response
        refreshed.freshness = StoredFreshness(freshness, arrival: arrival)
        refreshed.size = size
        refreshed.varying = varying
        refreshed.fetch = fetch
        refreshed.timeToLive = timeToLive
        let stored = state.withLock { state -> Bool in
            // Only the entry read: one stored since came from a fetch that is newer, or that is older and lost to it.
            // One read from the storage (insertion 0) only while memory still has nothing under the key.
            guard (state.entries[key]?.insertion ?? 0) == entry.insertion,
                !state.isRemoved(key, since: fetch, generation: generation),
                !state.isInvalidated(entry.resources, since: fetch), !state.isOutdated(fetch, forKey: key)
            else { return false }
            state.insert(key, entry: refreshed, limit: maxBytes)
            return true
        }
        if stored, !hasCredentials {
            write(refreshed, forKey: key, asked: head.url, arrival: arrival, fetch: fetch, generation: generation)
        }
    }

    /// Whether `answer`, a 304 to `request`, the caller's own conditional request, validates `stored` (RFC 9111
    /// §4.3.4): the 304's `ETag` is the stored one's (compared weakly); without one, its `Last-Modified` is the stored
    /// one's; without either, the request's own condition named the stored response alone: an `If-None-Match` of its
    /// one `ETag`, or, without `If-None-Match`, an `If-Modified-Since` of its `Last-Modified`.
    static func validates(_ answer: ConnectResponse, stored: ConnectResponse, for request: ConnectRequest) -> Bool {
        guard !answersAnotherResource(answer, than: request) else { return false }
        let trimmed = { (value: String?) in value.map { String(ResponseFreshness.trimmed(Substring($0))) } }
        let storedETag = trimmed(stored.header("ETag"))
        let storedLastModified = trimmed(stored.header("Last-Modified"))
        if let etag = trimmed(answer.header("ETag")) {
            return storedETag.map { isSameETag($0, etag) } ?? false
        }
        if let lastModified = trimmed(answer.header("Last-Modified")) { return lastModified == storedLastModified }
        if let ifNoneMatch = trimmed(request.value(forHTTPHeaderField: "If-None-Match")) {
            // A list (or `*`) matched one of several: which one, the 304 does not say.
            guard !ifNoneMatch.contains(","), ifNoneMatch != "*", let storedETag else { return false }
            return isSameETag(storedETag, ifNoneMatch)
        }
        guard let ifModifiedSince = trimmed(request.value(forHTTPHeaderField: "If-Modified-Since")) else {
            return false
        }
        return ifModifiedSince == storedLastModified
    }

    /// Whether `answer`, a HEAD's `200 OK`, names another representation than a stored GET response whose fields
    /// `field` reads and whose body is `bodyCount` bytes long (RFC 9111 §4.3.5): an `ETag` it carries that the stored
    /// response does not have (compared weakly, as a 304's is), a `Last-Modified` it carries that differs, or a
    /// `Content-Length` other than the stored response's (its `Content-Length` field, else its body's length). A HEAD
    /// answer that carries none of them says nothing against the stored response.
    static func headAnswer(_ answer: ConnectResponse, contradicts field: (String) -> String?, bodyCount: Int) -> Bool {
        let trimmed = { (value: String?) in value.map { String(ResponseFreshness.trimmed(Substring($0))) } }
        if let etag = trimmed(answer.header("ETag")) {
            guard let stored = trimmed(field("ETag")), isSameETag(stored, etag) else { return true }
        }
        if let lastModified = trimmed(answer.header("Last-Modified")), lastModified != trimmed(field("Last-Modified")) {
            return true
        }
        if let length = trimmed(answer.header("Content-Length")).flatMap({ Int($0) }) {
            let stored = trimmed(field("Content-Length")).flatMap { Int($0) } ?? bodyCount
            if stored != length { return true }
        }
        return false
    }

    /// Whether two `ETag` values name one representation, compared weakly (RFC 9110 §8.8.3.2), as `If-None-Match`
    /// compares them: `W/"x"` and `"x"` do.
    private static func isSameETag(_ first: String, _ second: String) -> Bool {
        let weak = { (etag: String) in etag.hasPrefix("W/") ? etag.dropFirst(2) : Substring(etag) }
        return weak(first) == weak(second)
    }

    /// Whether `method` is safe (RFC 9110 §9.2.1): an answer to it changes nothing stored.
    private static func isSafe(_ method: HTTPMethod) -> Bool {
        method == .get || method == .head || method == .options || method == .trace
    }

    /// The resource `url` names, as invalidation compares URLs: its origin (``origin(of:)``: without user info, the
    /// default port written out), path (an empty one as `/`) and query, their escapes in one spelling
    /// (``normalizedEscapes(_:)``), without fragment; `nil` for a URL without a scheme or a host.
    static func resource(of url: URL) -> String? {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: true), let origin = origin(of: url)
        else { return nil }
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        return origin + normalizedEscapes(path)
            + (components.percentEncodedQuery.map { "?" + normalizedEscapes($0) } ?? "")
    }

    /// `text`, a percent-encoded part of a URL, with its escapes spelt one way (RFC 3986 §6.2.2.1, §6.2.2.2): hex
    /// digits in upper case, and an escaped unreserved character (a letter, a digit, `-`, `.`, `_`, `~`) as itself,
    /// so that `%7e`, `%7E` and `~` name one resource. Other escapes stay: `%2F` is no `/`.
    static func normalizedEscapes(_ text: String) -> String {
        let bytes = Array(text.utf8)
        guard bytes.contains(UInt8(ascii: "%")) else { return text }
        var normalized: [UInt8] = []
        normalized.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = PercentEncoding.hexValue(bytes[index + 1]),
                let low = PercentEncoding.hexValue(bytes[index + 2])
            else {
                normalized.append(bytes[index])
                index += 1
                continue
            }
            let value = high << 4 | low
            if PercentEncoding.unreserved.contains(value) {
                normalized.append(value)
            } else {
                PercentEncoding.appendEscape(value, to: &normalized)
            }
            index += 3
        }
        return String(decoding: normalized, as: UTF8.self)
    }

    /// The responses' resources of a request to `asked` answered from `answered`.
    private static func resources(asked: URL, answered: URL?) -> [String] {
        var resources = resource(of: asked).map { [$0] } ?? []
        if let answered = answered.flatMap(resource(of:)), !resources.contains(answered) {
            resources.append(answered)
        }
        return resources
    }

    /// Whether `answer` came from another resource than the one `request` asks for: the transport followed a redirect
    /// (`/a` now answers `301` to `/b`). A 304 from there validates nothing stored for `request`, whatever validator
    /// it names (a version number, `"0"`, can be any resource's).
    private static func answersAnotherResource(_ answer: ConnectResponse, than request: ConnectRequest) -> Bool {
        guard let answered = answer.storedHead.url.flatMap(resource(of:)), let asked = resource(of: request.url)
        else { return false }
        return answered != asked
    }

    /// `scheme://host:port` of `url`, in lower case and with the scheme's default port written out, its host as the
    /// engine is sent to it (`ComparableHost`, without a trailing dot), so that invalidation reaches what is stored
    /// for the host however a URL writes it; `nil` without a scheme or a host.
    private static func origin(of url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = ComparableHost.of(url, droppingTrailingDot: true)
        else { return nil }
        return "\(scheme)://\(host):\(url.effectivePort ?? -1)"
    }

    /// `response` as a storage keeps it: without its `Set-Cookie` fields, which carry a user's session to a file
    /// that outlives it (the engine stored the cookies when the response came; one served later sets none).
    private static func stored(
        _ response: ConnectResponse, method: HTTPMethod, expiry: Date, receivedAt: Date,
        varying: [(name: String, value: String?)]
    ) -> StoredResponse {
        var stored = StoredResponse(
            url: response.storedHead.url ?? response.storedRequest.url ?? RelativeBase.url, method: method.rawValue,
            statusCode: response.statusCode,
            headers: response.head.headerFields.compactMap {
                $0.name == .setCookie ? nil : StoredResponse.HeaderPair(name: $0.name.rawName, value: $0.value)
            },
            body: response.data, expiry: expiry,
            varying: varying.map { StoredResponse.HeaderPair(name: $0.name, value: $0.value) })
        stored.receivedAt = receivedAt
        return stored
    }

    /// Whether `request` may be served from and stored in the cache under `rule`: a GET or HEAD, or any other
    /// method when the rule names its key (a custom key, or the body) and is the request's own, not the default
    /// rule nor the client-wide one (`readsOnly`), with no body from a stream. A key that names the body cannot name one from a stream,
    /// whatever the method: every such body would share the digest of none.
    private static func isCacheable(_ request: ConnectRequest, rule: CacheRule, readsOnly: Bool) -> Bool {
        if case .stream = request.body, rule.keyIncludesBody || (request.method != .get && request.method != .head) {
            return false
        }
        let method = request.method
        if method == .get || method == .head { return true }
        return !readsOnly && (rule.key != nil || rule.keyIncludesBody)
    }

    /// What a request's own `Cache-Control` asks of the cache (RFC 9111 §5.2.1), or without one its `Pragma` (§5.4).
    struct RequestDirectives {
        /// `no-store`.
        var noStore = false
        /// No stored response served without a successful revalidation (RFC 9111 §5.2.1.4): `no-cache`, `max-age=0`
        /// (or a `max-age` that is not a number), and `Pragma: no-cache`.
        var revalidate = false
        /// A positive `max-age`, in seconds: the oldest response the request accepts (``CacheDirectives/maxAge``).
        var maxAge: TimeInterval?
        /// `min-fresh`, in seconds (``CacheDirectives/minFresh``).
        var minFresh: TimeInterval?
        /// `max-stale`, in seconds (``CacheDirectives/maxStale``).
        var maxStale: TimeInterval?
        /// `only-if-cached`: a stored response, or a failure with nothing sent.
        var onlyIfCached = false
    }

    /// Whether `request` forbids the network, to be answered from a cache or not at all: `Cache-Control:
    /// only-if-cached`, or the cache policy `.returnCacheDataDontLoad`. A ``ConnectivityMiddleware`` lets it through
    /// while offline, as it sends nothing.
    static func forbidsTheNetwork(_ request: ConnectRequest) -> Bool {
        request.cachePolicy == .returnCacheDataDontLoad || requestDirectives(of: request).onlyIfCached
    }

    /// What the request's own `Cache-Control` asks of the cache, or without one its `Pragma`. Repeated fields read
    /// as one list, names and directives in any case.
    private static func requestDirectives(of request: ConnectRequest) -> RequestDirectives {
        if let cacheControl = request.value(forHTTPHeaderField: "Cache-Control") {
            let directives = CacheDirectives(cacheControl)
            return RequestDirectives(
                noStore: directives.noStore, revalidate: directives.noCache || directives.maxAge == 0,
                maxAge: directives.maxAge, minFresh: directives.minFresh, maxStale: directives.maxStale,
                onlyIfCached: directives.onlyIfCached)
        }
        guard let pragma = request.value(forHTTPHeaderField: "Pragma") else { return RequestDirectives() }
        return RequestDirectives(revalidate: CacheDirectives(pragma).noCache)
    }

    /// Whether a request's cache policy asks for a full response whatever is stored (then stored), as
    /// ``CacheRule/bypassesCache`` does. (`.reloadRevalidatingCacheData` revalidates what is stored instead.)
    private static func ignoresStoredData(_ policy: URLRequest.CachePolicy) -> Bool {
        switch policy {
        case .reloadIgnoringLocalCacheData, .reloadIgnoringLocalAndRemoteCacheData:
            return true
        default:
            return false
        }
    }

    /// The request headers `response` varies on, with their values in `requestHeaders`, or `nil` for `Vary: *`
    /// (it varies on more than the request: never serve it again).
    private static func varying(
        of response: ConnectResponse,
        requestHeaders: [String: String]
    ) -> [(name: String, value: String?)]? {
        guard let vary = response.header("Vary") else { return [] }
        let names = vary.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty }
        if names.contains("*") { return nil }
        return names.map { name in
            (name, requestHeaders.first { $0.key.lowercased() == name }?.value)
        }
    }

    /// Whether a value a stored response's `Vary` names (`stored`, the request's it answered) and `sent`, the same
    /// field's in a new request, select the same response (RFC 9111 §4.1): equal once normalised
    /// (``varyNormalized(_:)``); an absent field matches only an absent one.
    static func sameVaryValue(_ stored: String?, _ sent: String?) -> Bool {
        varyNormalized(stored) == varyNormalized(sent)
    }

    /// `value` as RFC 9111 §4.1 lets a cache compare it: the blanks (spaces and tabs) around the commas that separate
    /// list elements removed, and at either end, so that `gzip,deflate`, `gzip, deflate` and the two fields `gzip`
    /// and `deflate` (joined with `", "`) are one value. A quoted string's own blanks and commas stay (a `\` escapes
    /// the character after it there); the case of a value counts (only some fields are case-insensitive, and the
    /// cache does not guess which), and so do empty elements. `nil` (no such field) stays `nil`.
    private static func varyNormalized(_ value: String?) -> String? {
        guard let value else { return nil }
        var result = ""
        var pendingBlanks = ""
        var isQuoted = false
        var isEscaped = false
        var afterComma = true  // at the start, as after a comma: leading blanks go
        for character in value {
            if isQuoted {
                result.append(character)
                if isEscaped {
                    isEscaped = false
                } else if character == "\\" {
                    isEscaped = true
                } else if character == "\"" {
                    isQuoted = false
                }
                continue
            }
            switch character {
            case " ", "\t":
                // Kept only if something other than a comma or the end follows, and not right after a comma.
                if !afterComma { pendingBlanks.append(character) }
            case ",":
                pendingBlanks = ""
                result.append(",")
                afterComma = true
            default:
                result += pendingBlanks
                pendingBlanks = ""
                result.append(character)
                afterComma = false
                if character == "\"" { isQuoted = true }
            }
        }
        return result
    }

    /// The statuses that say the resource is not there (`404 Not Found`, `410 Gone`): not stored, but an answer with
    /// one removes the response stored under its request's key, which must not be served after it.
    private static let goneStatuses: Set<Int> = [404, 410]

    /// Whether the status and body of `response` allow storing it; its headers decide for how long
    /// (``ResponseFreshness/freshness(of:timeToLive:now:)``).
    private static func isStorable(_ response: ConnectResponse) -> Bool {
        // A 206 holds only the part of the body its request's `Range` asked for, not the resource.
        response.isSuccess && response.statusCode != 206 && response.fileURL == nil
    }

    /// Body bytes plus a rough allowance for the URL and headers.
    private static func estimatedSize(of response: ConnectResponse) -> Int {
        var size = response.data.count + (response.storedRequest.url?.absoluteString.utf8.count ?? 0)
        for field in response.head.headerFields {
            size += field.name.rawName.utf8.count + field.value.utf8.count + 4
        }
        return size
    }
}

/// A client's stage for its ``ResponseCache``.
struct ResponseCacheStage: Middleware {
    let cache: ResponseCache

    func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
        ConnectResponse
    > {
        // A request the wire would refuse (a field with CR or LF a stage set, say) goes on, uncached, to the
        // transport's door, which refuses it and tells the plugins and observers: a stored answer must not make it
        // succeed, nor its write remove what is stored.
        if request.wireProblem(bodyFile: context.transfer.bodyFile) != nil { return next(request) }
        // The values as the wire has them, without the blanks around them that the transport's door trims: the
        // credentials of the key and the fields `Vary` names are compared as sent.
        request.headerFields.trimBlanks()
        // A streamed body is read once, by its caller: there is nothing to store or to serve again (a write's
        // answer still removes what is stored for its resource).
        guard context.transfer.streaming == nil else { return cache.passing(request, to: next) }
        return cache.respond(to: request, context: context, next: next)
    }
}

extension ResponseCache.StoredFreshness {
    /// The freshness of a response that arrived at `arrival` with `freshness`: a rule that keeps a response for ever
    /// (`timeToLive: .infinity`) keeps it until the distant future (an infinite date is no date a storage can write:
    /// JSON has no infinity).
    init(_ freshness: ResponseFreshness.Freshness, arrival: Date) {
        self.init(
            expiry: min(arrival.addingTimeInterval(freshness.lifetime), .distantFuture),
            generated: arrival.addingTimeInterval(-freshness.age), mustRevalidate: freshness.mustRevalidate)
    }
}

extension CacheRule {
    /// The rule with no custom key: its requests are stored under their method and URL.
    var withoutKey: CacheRule {
        var rule = self
        rule.key = nil
        return rule
    }
}

/// The response cache stage's option: how it stores and serves a request (``RequestOptions/cache``).
enum CacheRuleOption: RequestOptionKey {
    typealias Value = CacheRule
}
