import Foundation

/// The URLs requests were built with recently, so that a repeated endpoint is neither joined nor parsed again.
///
/// `URL(string:)` validates the whole string against RFC 3986 on every call. Warm, that is a fraction of a
/// microsecond; right after other work (a large decode, say) its code is cold and it took 3.8 to 4.1 µs per
/// request on the benchmark machine (BENCHMARKS.md), about half of building the request. Joining the base URL
/// and the endpoint took another 2.8 to 3.1 µs in the same conditions. Apps call a handful of endpoints again
/// and again, so the same URLs come back:
/// - a URL that depends only on the base URL and the endpoint (no `.path` or `.query` parameter) is kept under
///   those two, and found again without building anything;
/// - any other is kept under its text, and found again without parsing.
///
/// The cache holds at most ``capacity`` URLs and empties itself when full: no eviction bookkeeping, and an app
/// whose URLs never repeat (a search box, say) pays, per request, one lookup and the scan for secrets below, and a
/// cleared dictionary every `capacity` requests. Only URLs that parsed, with a scheme, are kept, and never one that carries a secret
/// (`user:password@`, or a query item named like one, as logs hide them): the cache must not keep a secret in
/// memory after the request that used it.
enum ParsedURLs {
    static let capacity = 128

    /// What a URL is kept under.
    enum Key: Hashable {
        /// A URL that is the base URL (its text) joined with the endpoint, as written.
        case joined(base: String, endpoint: String)
        /// A URL by its text.
        case text(String)
    }

    private static let cache = Protected<[Key: URL]>([:])

    /// The URL kept under `key`, if it is still cached.
    static func url(for key: Key) -> URL? {
        cache.withLock { $0[key] }
    }

    /// The URL for `string`, kept under `key` (by default the text itself) once parsed; `nil` if it is not a URL
    /// with a scheme.
    static func url(_ string: String, keptAs key: Key? = nil) -> URL? {
        let key = key ?? .text(string)
        if let url = url(for: key) { return url }
        guard let url = URL(string: string), url.scheme != nil else { return nil }
        guard Redaction.urlText(string) == string else { return url }
        cache.withLock { urls in
            if urls.count >= capacity { urls.removeAll(keepingCapacity: true) }
            urls[key] = url
        }
        return url
    }

    /// How many URLs are cached (for tests).
    static var count: Int { cache.withLock { $0.count } }
}
