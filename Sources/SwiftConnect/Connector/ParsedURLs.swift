import Foundation

/// The URLs requests were built with recently, by their text, so that a repeated endpoint is not parsed again.
///
/// `URL(string:)` validates the whole string against RFC 3986 on every call. Warm, that is a fraction of a
/// microsecond; right after other work (a large decode, say) its code is cold and it took 3.8 to 4.1 µs per
/// request on the benchmark machine (BENCHMARKS.md), about half of building the request. Apps call a handful of
/// endpoints again and again, so the same strings come back.
///
/// The cache holds at most ``capacity`` URLs and empties itself when full: no eviction bookkeeping, and an app
/// whose URLs never repeat (a search box, say) pays one lookup per request and a cleared dictionary every
/// `capacity` requests. Only URLs that parsed, with a scheme, are kept.
enum ParsedURLs {
    static let capacity = 128

    private static let cache = Protected<[String: URL]>([:])

    /// The URL for `string`, parsed once while it stays in the cache; `nil` if it is not a URL with a scheme.
    static func url(_ string: String) -> URL? {
        if let url = cache.withLock({ $0[string] }) { return url }
        guard let url = URL(string: string), url.scheme != nil else { return nil }
        cache.withLock { urls in
            if urls.count >= capacity { urls.removeAll(keepingCapacity: true) }
            urls[string] = url
        }
        return url
    }

    /// How many URLs are cached (for tests).
    static var count: Int { cache.withLock { $0.count } }
}
