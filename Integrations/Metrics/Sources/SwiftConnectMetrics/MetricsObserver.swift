import CoreMetrics
import Dispatch
import Foundation
@_spi(Observability) import SwiftConnect

/// Measures a client's calls with swift-metrics, under OpenTelemetry's HTTP client names where there is one.
///
/// One line turns it on:
///
/// ```swift
/// let connect = Connect(settings: Connect.Settings(observers: [MetricsObserver()]))
/// ```
///
/// What it records, every metric labelled by `http.request.method` (`_OTHER` for a method other than the nine
/// OpenTelemetry knows, RFC 9110's and `PATCH`, such as `PROPFIND`, unless ``init(factory:knownMethods:)`` or
/// `OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS` lists it), `url.template` (the URL's path template up to its query: the
/// base URL's path, then the connector's endpoint, such as `/v1/todos/{id}`) or, for a request built elsewhere, which
/// has no template, `swiftconnect.call` (the name it was given, such as an OpenAPI operation's ID), and
/// `server.address` (the host the connector names, in lower case: the app's own servers), never by a URL or an ID, so
/// that label sets stay bounded, as long as endpoints name their IDs as placeholders (`/todos/{id}`; an endpoint with
/// the ID written in, `request("/todos/1")`, is a template of its own):
///
/// | metric | kind | more labels |
/// | --- | --- | --- |
/// | `http.client.request.duration` | timer, per attempt | `server.port`; `http.response.status_code`, `error.type` as below |
/// | `http.client.active_requests` | meter (attempts in flight) | `server.port` |
/// | `http.client.request.body.size`, `http.client.response.body.size` | recorder, bytes | `server.port`; `http.response.status_code`, `error.type` as below |
/// | `swiftconnect.client.retries` | counter (attempts after the first) | |
/// | `swiftconnect.client.token_refreshes` | counter | `outcome`: `success`, `failure` (failed, or the app set another credential while it ran) |
/// | `swiftconnect.client.queue.wait`, `swiftconnect.client.offline.wait` | timer | |
/// | `swiftconnect.client.cache.lookups` | counter | `outcome`: `hit`, `miss` |
///
/// How an attempt ended is in two labels, as in OpenTelemetry's conventions and on `TracingObserver`'s spans:
///
/// | attempt | `http.response.status_code` | `error.type` |
/// | --- | --- | --- |
/// | answered 2xx or 3xx | the status code | none |
/// | answered 4xx or 5xx (a failure) | the status code | the status code |
/// | no response | none | the ``SwiftConnect/ConnectError/Kind`` (`timedOut`, `cannotConnect`…); the error's type when a middleware's own error ended the call during the attempt |
///
/// An attempt a middleware sends more than once (calling `next` again, a hedge) is timed, and active, once per send.
/// A call that shares an identical request another call sent
/// (``SwiftConnect/Connect/Settings/coalescesIdenticalRequests``) sends nothing: its attempt has no duration, no
/// active request and no sizes, which count the requests that went on the wire, as OpenTelemetry's conventions do
/// (its retries, waits and cache lookups are still the call's). The request is the send of the call that made it: when
/// that call leaves (cancelled) before the request is sent, it is the send of the earliest call still sharing it; when
/// that call leaves once the request is on the wire, its send ends then, as cancelled, with no response size, while the
/// request goes on for the others, whose answer no send of theirs records.
///
/// The duration, active requests, sizes and retries of a send are labelled by the method its request went out with,
/// after every middleware (`POST` for a `PATCH` a middleware tunnels through `POST`), as `TracingObserver`'s span is
/// named; the waits, cache lookups and token refreshes, which belong to no send, by the call's.
///
/// `http.client.request.duration` is recorded in nanoseconds, as every swift-metrics timer is, and asks the backend to
/// show it in seconds, OpenTelemetry's unit for it; so do the two waits. Its histogram buckets are the backend's to
/// set: OpenTelemetry recommends ``durationBuckets`` (seconds), which swift-prometheus's `PrometheusMetricsFactory`
/// takes as `[Duration]`, by the metric's name:
///
/// ```swift
/// let buckets: [Duration] = MetricsObserver.durationBuckets.map { .seconds($0) }
/// factory.durationHistogramBuckets["http.client.request.duration"] = buckets
/// ```
///
/// One metric name gets more than one set of label names (a duration with `error.type` and one without):
/// swift-prometheus 2.0 and 2.1 stop the process when that happens, 2.2 and later accept it.
public struct MetricsObserver: ConnectObserver {
    /// The buckets, in seconds, that OpenTelemetry's HTTP conventions give `http.client.request.duration`.
    public static let durationBuckets: [Double] = [
        0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
    ]

    /// The factory; `nil` for the process's (`MetricsSystem.factory`), read at each call.
    private let factory: (any MetricsFactory)?
    /// The methods `http.request.method` names as themselves.
    private let methods: OpenTelemetryMethods

    /// Creates an observer that records with `factory`, or with the process's when `nil`.
    ///
    /// ```swift
    /// // A CDN's PURGE counted as itself; every method the list leaves out as _OTHER.
    /// MetricsObserver(knownMethods: ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "PURGE"])
    /// ```
    ///
    /// - Parameters:
    ///   - factory: The metrics factory; `nil` (the default) for `MetricsSystem.factory`.
    ///   - knownMethods: The methods `http.request.method` names as themselves (case-sensitive; the others are
    ///     `_OTHER`), in place of the default, not beside it; `nil` (the default) for the process's
    ///     `OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS` (comma-separated), else RFC 9110's methods and `PATCH`.
    public init(factory: (any MetricsFactory)? = nil, knownMethods: Set<String>? = nil) {
        self.factory = factory
        methods = OpenTelemetryMethods(known: knownMethods)
    }

    /// Returns the call's recorder.
    public func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? {
        CallMetrics(factory: factory ?? MetricsSystem.factory, call: call, methods: methods)
    }
}

/// The metrics of one call.
///
/// A send is one trip of an attempt's request to the transport: usually one per attempt, more when a middleware sends
/// an attempt's request again (a hedge). Each send is active, and timed, from its start to its end; as the end of a
/// send does not say which send it was, the sends of one attempt end oldest first.
final class CallMetrics: ConnectCallObserver, @unchecked Sendable {
    /// A send in flight: when it started, and the labels of its metrics.
    private typealias Send = (start: UInt64, labels: [(String, String)])

    // `lock` protects `started`, `sentLabels`, `shared` and `lastAttempt`; the rest never changes.
    private let lock = NSLock()
    private let factory: any MetricsFactory
    /// The call's method, which ``base`` names.
    private let method: HTTPMethod
    /// The methods `http.request.method` names as themselves.
    private let methods: OpenTelemetryMethods
    /// The labels every metric of the call carries, `http.request.method` the call's: a send's metrics name the method
    /// it went out with instead (``labels(of:)``).
    private let base: [(String, String)]
    /// `server.port`, which the metrics of a send carry beside its labels.
    private let port: (String, String)
    /// Each send not yet ended, by attempt, oldest first: when it started, and its labels. Usually one: more when a
    /// middleware sends an attempt's request again, or when an attempt abandoned at its `attemptTimeout` is told ended
    /// only after the next one started (a retry with no wait).
    private var started: [Int: [Send]] = [:]
    /// The labels of each attempt's latest send, kept after the call's end: a send it cut short is told ended after it,
    /// and its sizes are labelled as its duration was.
    private var sentLabels: [Int: [(String, String)]] = [:]
    /// The attempts, by number, whose start said they share an identical request another call sent (coalescing), not
    /// yet ended: they sent nothing, and record no send.
    private var shared: [Int: Int] = [:]
    /// The highest attempt told started: a retry is counted once, at its attempt's first send, however many sends
    /// the attempt makes.
    private var lastAttempt = 0

    init(factory: any MetricsFactory, call: ConnectCall, methods: OpenTelemetryMethods) {
        self.factory = factory
        method = call.method
        self.methods = methods
        // `url.template` is a path template: a query written into the endpoint is cut off, and a request built
        // elsewhere, with no template, is told apart by its name instead.
        let path = call.pathTemplate.prefix { $0 != "?" && $0 != "#" }
        base = [
            ("http.request.method", methods.name(of: call.method)),
            path.isEmpty ? ("swiftconnect.call", call.name) : ("url.template", String(path)),
            // Lower-cased: DNS names are case-insensitive (RFC 4343), and one server is one series.
            ("server.address", call.request.url.host?.lowercased() ?? ""),
        ]
        let port = call.request.url.port ?? (call.request.url.scheme?.lowercased() == "http" ? 80 : 443)
        self.port = ("server.port", String(port))
    }

    /// The labels of a send of `request`: ``base``, with the method it went out with, which a middleware may have
    /// changed (a `PATCH` tunnelled through `POST`), as `TracingObserver`'s span names it.
    private func labels(of request: ConnectRequest) -> [(String, String)] {
        guard request.method != method else { return base }
        let sent = methods.name(of: request.method)
        return base.map { label in label.0 == "http.request.method" ? (label.0, sent) : label }
    }

    func record(_ event: ConnectEvent) {
        switch event {
        case .attemptStarted(let attempt, let request):
            let labels = labels(of: request)
            let isShared = request.sharesAnotherCallsRequest
            let isNewAttempt = lock.withLock { () -> Bool in
                if isShared {
                    shared[attempt, default: 0] += 1
                } else {
                    started[attempt, default: []].append((DispatchTime.now().uptimeNanoseconds, labels))
                    sentLabels[attempt] = labels
                }
                defer { lastAttempt = max(lastAttempt, attempt) }
                return attempt > lastAttempt
            }
            // An attempt that shares another call's request is none on the wire: the duration, the active requests
            // and the sizes count the wire's requests, as OpenTelemetry's do. It is still the call's attempt.
            if !isShared {
                ActiveRequestMeters.shared.increment(dimensions: labels + [port], factory: factory)
            }
            if attempt > 1, isNewAttempt {
                Counter(label: "swiftconnect.client.retries", dimensions: labels, factory: factory).increment()
            }
        case .attemptEnded(let attempt, let status, let error, let bytesSent, let bytesReceived):
            let outcome = Self.outcome(status: status, error: error)
            let (send, sent, wasShared) = lock.withLock { () -> (Send?, [(String, String)]?, Bool) in
                if started[attempt]?.isEmpty ?? true, let count = shared[attempt], count > 0 {
                    shared[attempt] = count > 1 ? count - 1 : nil
                    return (nil, nil, true)
                }
                return (Self.takeOldest(of: attempt, from: &started), sentLabels[attempt], false)
            }
            if wasShared { return }
            if let send { end(send, outcome: outcome) }
            // A send the call's end cut short has ended already, under the labels it was sent with; an attempt told
            // ended with no start sent nothing: the call's labels.
            let withPort = (send?.labels ?? sent ?? base) + [port]
            if let bytesSent {
                Recorder(label: "http.client.request.body.size", dimensions: withPort + outcome, factory: factory)
                    .record(bytesSent)
            }
            if let bytesReceived {
                Recorder(label: "http.client.response.body.size", dimensions: withPort + outcome, factory: factory)
                    .record(bytesReceived)
            }
        case .callEnded(_, let error, _):
            // Sends the call's end cut short (its deadline, a cancellation) end with the call's reason.
            let open = lock.withLock { () -> [Send] in
                defer { started = [:] }
                return started.sorted { $0.key < $1.key }.flatMap(\.value)
            }
            // The call's reason: its kind, or the type of an error of another kind (a middleware's own), as
            // `LoggingObserver` names it; `cancelled` for the sends a call that succeeded left behind.
            let reason = error.map { ($0 as? ConnectError)?.kind.rawValue ?? "\(type(of: $0))" } ?? "cancelled"
            let outcome = [("error.type", reason)]
            for send in open { end(send, outcome: outcome) }
        // Durations, shown in seconds as the request's duration is: OpenTelemetry's unit for a duration.
        case .queueWaited(let seconds):
            Timer(
                label: "swiftconnect.client.queue.wait", dimensions: base, preferredDisplayUnit: .seconds,
                factory: factory
            ).recordSeconds(seconds)
        case .connectivityWaited(let seconds):
            Timer(
                label: "swiftconnect.client.offline.wait", dimensions: base, preferredDisplayUnit: .seconds,
                factory: factory
            ).recordSeconds(seconds)
        case .cacheLookup(let hit):
            Counter(
                label: "swiftconnect.client.cache.lookups", dimensions: base + [("outcome", hit ? "hit" : "miss")],
                factory: factory
            ).increment()
        case .tokenRefreshEnded(let succeeded):
            Counter(
                label: "swiftconnect.client.token_refreshes",
                dimensions: base + [("outcome", succeeded ? "success" : "failure")], factory: factory
            ).increment()
        case .tokenRefreshStarted, .redirected:
            break
        }
    }

    /// Takes out the oldest send of `attempt` not yet ended, if any. `lock` held.
    private static func takeOldest(of attempt: Int, from started: inout [Int: [Send]]) -> Send? {
        guard var starts = started[attempt], !starts.isEmpty else { return nil }
        let start = starts.removeFirst()
        started[attempt] = starts.isEmpty ? nil : starts
        return start
    }

    /// The labels of how an attempt ended, as OpenTelemetry's HTTP client conventions put them: a response's
    /// `http.response.status_code`, with `error.type` (the same code) when it is a failure, a 4xx or 5xx; the error's
    /// kind as `error.type` alone when no response came.
    private static func outcome(status: Int?, error: ConnectError?) -> [(String, String)] {
        guard let status else { return [("error.type", error?.kind.rawValue ?? "unknown")] }
        let code = String(status)
        guard status >= 400 else { return [("http.response.status_code", code)] }
        return [("http.response.status_code", code), ("error.type", code)]
    }

    /// Ends a send: its duration, and one fewer active request, under its own labels.
    private func end(_ send: Send, outcome: [(String, String)]) {
        let withPort = send.labels + [port]
        ActiveRequestMeters.shared.decrement(dimensions: withPort, factory: factory)
        // OpenTelemetry's unit for this histogram is the second: a backend that honours the hint shows it so.
        Timer(
            label: "http.client.request.duration", dimensions: withPort + outcome, preferredDisplayUnit: .seconds,
            factory: factory
        )
        .recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - send.start))
    }
}

/// The `http.client.active_requests` meters, one per factory and label set, for every call of the process, kept while
/// a send under those labels is active.
///
/// A backend without meters of its own (statsd's, opentelemetry-swift's: swift-metrics' default meter, which records
/// through a recorder) keeps the running count in the meter object: a meter made for each change recorded 1 and -1,
/// never the number of requests in flight. Kept for the factories that are objects (every backend's); another is
/// asked for a meter each time, its own to keep. An entry goes when its count is back to 0 (a later send makes a
/// meter afresh, from 0, which is the count then): kept for good, every factory a test or a screen made, and a meter
/// per host a client ever called, stayed in memory for the life of the process.
final class ActiveRequestMeters: @unchecked Sendable {
    /// The process's.
    static let shared = ActiveRequestMeters()

    /// A meter and the sends active under it.
    private struct Entry {
        let meter: Meter
        var active: Int
    }

    // `lock` protects `meters`, and is held while a meter changes, so that an entry removed at 0 and one made afresh
    // for the next send never both count.
    private let lock = NSLock()
    /// By factory, then by label set (names and values, in order). The factory is held while it has entries: freed,
    /// another could take its identifier, and be handed its meters.
    private var meters: [ObjectIdentifier: (factory: AnyObject, byLabels: [[String]: Entry])] = [:]

    /// One more active send under `dimensions`, on the meter made with `factory`.
    func increment(dimensions: [(String, String)], factory: any MetricsFactory) {
        change(by: 1, dimensions: dimensions, factory: factory)
    }

    /// One fewer active send under `dimensions`.
    func decrement(dimensions: [(String, String)], factory: any MetricsFactory) {
        change(by: -1, dimensions: dimensions, factory: factory)
    }

    /// How many label sets have a meter kept for `factory` (for tests).
    func keptLabelSets(of factory: any MetricsFactory) -> Int {
        guard type(of: factory) is AnyClass else { return 0 }
        return lock.withLock { meters[ObjectIdentifier(factory as AnyObject)]?.byLabels.count ?? 0 }
    }

    private func change(by delta: Int, dimensions: [(String, String)], factory: any MetricsFactory) {
        let make = { Meter(label: "http.client.active_requests", dimensions: dimensions, factory: factory) }
        guard type(of: factory) is AnyClass else {
            if delta > 0 { make().increment() } else { make().decrement() }
            return
        }
        let owner = ObjectIdentifier(factory as AnyObject)
        let key = dimensions.flatMap { [$0.0, $0.1] }
        lock.withLock {
            var entry = meters[owner]?.byLabels[key] ?? Entry(meter: make(), active: 0)
            if delta > 0 { entry.meter.increment() } else { entry.meter.decrement() }
            entry.active += delta
            if entry.active > 0 {
                meters[owner, default: (factory as AnyObject, [:])].byLabels[key] = entry
            } else {
                meters[owner]?.byLabels[key] = nil
                if meters[owner]?.byLabels.isEmpty == true { meters[owner] = nil }
            }
        }
    }
}
