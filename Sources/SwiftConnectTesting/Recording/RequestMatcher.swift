import Foundation
import SwiftConnect

/// Decides whether a recorded request answers a request: ``default`` compares method, URL and body the way a server
/// reads them; a closure of yours compares whatever else matters.
///
/// Both requests are redacted (``RecordedRequest``), so secrets never take part. The default ignores what varies
/// between runs without changing the request's meaning:
/// - the order of query items of different names (`?b=2&a=1` matches `?a=1&b=2`; the values of one name keep their
///   order, a list to most servers), and the URL's fragment;
/// - the case of the hex digits of a path's percent-escapes (`%2f` matches `%2F`, the same octet);
/// - the order of JSON object keys, and JSON white space (bodies that parse as JSON are compared parsed);
/// - a multipart body's boundary, random in each run;
/// - header fields altogether, among them the `Idempotency-Key` a retry policy adds with a new UUID each run.
///
/// ```swift
/// // The default, and the tenant header too.
/// let matcher = RequestMatcher.all([.default, .header("X-Tenant")])
/// // Anything else: ignore a timestamp query item.
/// let lenient = RequestMatcher { request, recorded in
///     request.method == recorded.method && request.url.path == recorded.url.path
/// }
/// let transport = RecordingTransport(wrapping: URLSessionTransport(), matcher: matcher)
/// ```
public struct RequestMatcher: Sendable {
    private let predicate: @Sendable (RecordedRequest, RecordedRequest) -> Bool

    /// A matcher that asks `matches`.
    ///
    /// - Parameter matches: Whether `recorded` answers `request`; both redacted.
    public init(_ matches: @escaping @Sendable (_ request: RecordedRequest, _ recorded: RecordedRequest) -> Bool) {
        predicate = matches
    }

    /// Whether `recorded` answers `request`.
    ///
    /// - Parameters:
    ///   - request: The request being sent, redacted.
    ///   - recorded: A recorded request.
    /// - Returns: Whether the recording answers it.
    public func matches(_ request: RecordedRequest, _ recorded: RecordedRequest) -> Bool {
        predicate(request, recorded)
    }

    /// Method, URL and body, as ``method``, ``url`` and ``body`` compare them.
    public static let `default` = all([.method, .url, .body])

    /// The same method.
    public static let method = RequestMatcher { $0.method == $1.method }

    /// The same scheme, host, port and path (the host and scheme in any case, a missing port as the scheme's own),
    /// and the same query items, those of different names in any order (a `+` and a `%2B` differ).
    public static let url = RequestMatcher { RequestNormalization.url($0.url) == RequestNormalization.url($1.url) }

    /// The same path, whatever the query.
    public static let path = RequestMatcher { RequestNormalization.path($0.url) == RequestNormalization.path($1.url) }

    /// The same body: parsed when both are JSON (key order and white space aside), multipart boundaries aside,
    /// byte for byte otherwise.
    public static let body = RequestMatcher { RequestNormalization.body(of: $0) == RequestNormalization.body(of: $1) }

    /// The same values of the header fields named `name` (both absent matches), in the same order when the name is
    /// repeated; the name in any case, and fields of other names in any order. For `Idempotency-Key`, whose value is
    /// new in each run, being present on both sides is enough.
    ///
    /// - Parameter name: The field's name.
    /// - Returns: The matcher.
    public static func header(_ name: HeaderField.Name) -> RequestMatcher {
        RequestMatcher { request, recorded in
            if name == "Idempotency-Key" {
                return request.headerFields.contains(name) == recorded.headerFields.contains(name)
            }
            return request.headerFields[values: name] == recorded.headerFields[values: name]
        }
    }

    /// A matcher that matches when every one of `matchers` does.
    ///
    /// - Parameter matchers: The matchers, asked in order.
    /// - Returns: The matcher.
    public static func all(_ matchers: [RequestMatcher]) -> RequestMatcher {
        RequestMatcher { request, recorded in matchers.allSatisfy { $0.matches(request, recorded) } }
    }
}

/// The forms ``RequestMatcher`` compares, and the differences a failed match reports.
enum RequestNormalization {
    /// Scheme, host, port and path, with the query items sorted by name.
    struct NormalizedURL: Equatable {
        var scheme: String
        var host: String
        var port: Int?
        var path: String
        var query: [QueryItem]
    }

    /// A query item as compared: its name and value percent-decoded, except that a `+` sent as `%2B` (a plus sign to
    /// every server) stays apart from a `+` sent as is (a space, to a server reading a form). Compared as a pair, so
    /// an escaped `=` stays in the name or the value it was sent in.
    struct QueryItem: Hashable {
        /// The name's decoded pieces, between the `%2B` escapes.
        var name: [String]
        /// The value's decoded pieces, between the `%2B` escapes; a missing value is empty.
        var value: [String]

        init(percentEncodedName name: String, value: String?) {
            self.name = Self.decoded(name)
            self.value = Self.decoded(value ?? "")
        }

        /// `name=value`, decoded, an escaped plus shown as `%2B`.
        var description: String { name.joined(separator: "%2B") + "=" + value.joined(separator: "%2B") }

        /// The pieces of `text` between its `%2B` escapes (either case), each percent-decoded, or as it is when its
        /// escapes are not UTF-8.
        private static func decoded(_ text: String) -> [String] {
            text.replacingOccurrences(of: "%2b", with: "%2B").components(separatedBy: "%2B").map { piece in
                piece.removingPercentEncoding ?? piece
            }
        }
    }

    static func url(_ url: URL) -> NormalizedURL {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        let scheme = (components?.scheme ?? "").lowercased()
        let defaultPort = scheme == "https" ? 443 : scheme == "http" ? 80 : nil
        let items = (components?.percentEncodedQueryItems ?? []).map { item in
            QueryItem(percentEncodedName: item.name, value: item.value)
        }
        // By name, the values of one name in the order sent: most servers read `?id=1&id=2` as a list.
        let sorted = items.enumerated().sorted { first, second in
            let (firstName, secondName) = (first.element.name, second.element.name)
            return firstName == secondName
                ? first.offset < second.offset : firstName.lexicographicallyPrecedes(secondName)
        }
        return NormalizedURL(
            scheme: scheme, host: (components?.host ?? "").lowercased(), port: components?.port ?? defaultPort,
            path: path(url), query: sorted.map(\.element))
    }

    /// The percent-encoded path, `/` for none, the hex digits of its escapes in upper case: `%2f` and `%2F` are the
    /// same octet (RFC 3986 §6.2.2.1). The rest keeps its case, and an escape is not decoded (`%2F` is no `/`).
    static func path(_ url: URL) -> String {
        let path = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
        return path.isEmpty ? "/" : uppercasingEscapes(path)
    }

    /// `path` with the two hex digits after each `%` in upper case.
    private static func uppercasingEscapes(_ path: String) -> String {
        var bytes = Array(path.utf8)
        var index = 0
        while index + 2 < bytes.count {
            guard bytes[index] == UInt8(ascii: "%"), isHexDigit(bytes[index + 1]), isHexDigit(bytes[index + 2]) else {
                index += 1
                continue
            }
            for digit in index + 1...index + 2 where bytes[digit] >= UInt8(ascii: "a") {
                bytes[digit] -= UInt8(ascii: "a") - UInt8(ascii: "A")
            }
            index += 3
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }

    /// The body as compared: JSON re-serialised with sorted keys, a multipart boundary replaced, else the bytes.
    static func body(of request: RecordedRequest) -> Data {
        let body = request.body
        guard !body.isEmpty else { return body }
        if let json = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]),
            let sorted = try? JSONSerialization.data(withJSONObject: json, options: [.sortedKeys, .fragmentsAllowed])
        {
            return sorted
        }
        let contentType = request.headerFields[.contentType] ?? ""
        if contentType.lowercased().hasPrefix("multipart/"), let boundary = boundary(of: contentType) {
            // Byte for byte: a part may hold any bytes, which need not be UTF-8.
            return replacing(Data(boundary.utf8), in: body, with: Data("<boundary>".utf8))
        }
        return body
    }

    /// `data` with every occurrence of `pattern` replaced by `replacement`.
    static func replacing(_ pattern: Data, in data: Data, with replacement: Data) -> Data {
        guard !pattern.isEmpty else { return data }
        var result = Data()
        result.reserveCapacity(data.count)
        var index = data.startIndex
        while let found = data.range(of: pattern, in: index..<data.endIndex) {
            result.append(data[index..<found.lowerBound])
            result.append(replacement)
            index = found.upperBound
        }
        result.append(data[index...])
        return result
    }

    /// The `boundary` parameter of a `Content-Type`, unquoted.
    private static func boundary(of contentType: String) -> String? {
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "boundary" else {
                continue
            }
            let value = pair[1].trimmingCharacters(in: .whitespaces)
            let unquoted = value.hasPrefix("\"") && value.hasSuffix("\"") ? String(value.dropFirst().dropLast()) : value
            return unquoted.isEmpty ? nil : unquoted
        }
        return nil
    }

    /// One part in which two requests differ.
    struct Difference: Equatable {
        /// The part: `method`, `host`, `path`, `query`, `body`.
        var part: String
        /// The request's value.
        var request: String
        /// The recording's value.
        var recorded: String
        /// How far apart it puts the requests when looking for the nearest recording.
        var weight: Int

        var description: String { "\(part): request has \(request), recording has \(recorded)" }
    }

    /// Where `request` and `recorded` differ, in the parts the default matcher compares.
    static func differences(_ request: RecordedRequest, _ recorded: RecordedRequest) -> [Difference] {
        var differences: [Difference] = []
        if request.method != recorded.method {
            differences.append(
                Difference(part: "method", request: request.method, recorded: recorded.method, weight: 8))
        }
        let live = url(request.url)
        let old = url(recorded.url)
        let liveOrigin = "\(live.scheme)://\(live.host)\(live.port.map { ":\($0)" } ?? "")"
        let oldOrigin = "\(old.scheme)://\(old.host)\(old.port.map { ":\($0)" } ?? "")"
        if liveOrigin != oldOrigin {
            differences.append(Difference(part: "origin", request: liveOrigin, recorded: oldOrigin, weight: 2))
        }
        if live.path != old.path {
            differences.append(Difference(part: "path", request: live.path, recorded: old.path, weight: 8))
        }
        if live.query != old.query {
            let only = live.query.filter { !old.query.contains($0) }
            let onlyRecorded = old.query.filter { !live.query.contains($0) }
            differences.append(
                Difference(
                    part: "query", request: list(only.isEmpty ? live.query : only),
                    recorded: list(onlyRecorded.isEmpty ? old.query : onlyRecorded), weight: 2))
        }
        if body(of: request) != body(of: recorded) {
            differences.append(
                Difference(
                    part: "body", request: excerpt(of: request.body), recorded: excerpt(of: recorded.body), weight: 1))
        }
        return differences
    }

    private static func list(_ items: [QueryItem]) -> String {
        items.isEmpty ? "no items" : "[" + items.map(\.description).joined(separator: ", ") + "]"
    }

    /// The start of a body for a message: up to 120 characters of text, or a byte count.
    static func excerpt(of body: Data) -> String {
        if body.isEmpty { return "no body" }
        guard let text = String(data: body, encoding: .utf8) else { return "\(body.count) bytes" }
        let oneLine = text.replacingOccurrences(of: "\r", with: " ").replacingOccurrences(of: "\n", with: " ")
        return oneLine.count > 120 ? "\"" + String(oneLine.prefix(120)) + "…\"" : "\"" + oneLine + "\""
    }
}
