import Foundation
@_spi(Observability) import SwiftConnect
import Tracing

/// Traces a client's calls with swift-distributed-tracing: one CLIENT span per attempt (per send of it, when a
/// middleware sends an attempt's request more than once), the caller's trace context propagated in `traceparent` (or
/// whatever the tracer injects).
///
/// One line turns it on:
///
/// ```swift
/// let connect = Connect(settings: Connect.Settings(observers: [TracingObserver()]))
/// ```
///
/// Each attempt's span:
/// - is named `{method} {url.template}` (`GET /v1/todos/{id}`), from the URL's path template, or the name the
///   call was given (an OpenAPI operation's ID) when there is no template, or `{method}` alone when there is neither;
///   `{method}` is the method the attempt went out with, after every middleware (`POST` for a `PATCH` a middleware
///   tunnels through `POST`), and `HTTP` for a method other than the nine OpenTelemetry knows (RFC 9110's and
///   `PATCH`), such as `PROPFIND`, or than those ``init(tracer:knownMethods:)`` or
///   `OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS` lists;
/// - is a child of the trace context of the task that made the call (a `Future` call included: the context is read
///   when the call starts, on the caller's task);
/// - carries `http.request.method` (`_OTHER` for a method OpenTelemetry does not know, the method itself then in
///   `http.request.method_original`), `server.address` (in lower case), `server.port`, `url.full` (through the
///   library's redaction: no user info, secret query values and credentials hidden), `url.template` (the URL's path
///   template up to its query: the base URL's path, then the connector's endpoint; none for a request built elsewhere),
///   `swiftconnect.call` (the call's name), `http.request.resend_count` (from the call's second send: a retry,
///   or a middleware's second send of an attempt), `http.response.status_code`, and for a failure
///   `error.type` (the status code for 4xx and 5xx, the ``SwiftConnect/ConnectError/Kind`` for a failure with no
///   response, the error's type when a middleware's own error ended the call during the attempt) with the span's
///   status set to error;
/// - has an event for each redirect the client followed, and for the queue wait, the time held while offline and
///   the token refresh that came before the attempt. Such events that no send followed (a refresh that failed after
///   the last attempt's `401`, a queue wait before a cancellation) are told on an INTERNAL span named as the
///   attempts' spans are (`GET /v1/todos/{id}`), with the call's `error.type` when it failed, and so is one told after
///   the call ended (the end of a refresh the last attempt's `401` started: the call answers with the `401` without
///   waiting for it).
///
/// OpenTelemetry's HTTP client conventions ask for a span per request sent over the wire, each redirect hop one of
/// its own. Redirects are followed within an attempt, below the observer, so here the attempt's one span covers all of
/// its hops: each hop after the first sends the same trace context, each redirect is an event of the span (its status
/// and the `Location` followed, redacted), and `url.full`, `server.address` and `server.port` describe the last hop,
/// whose status the span carries (`http.request.method` stays the attempt's, when a `303` made the next hop a `GET`).
///
/// A middleware that sends an attempt's request again (calling `next` twice, a hedge) makes one span per send, each
/// send carrying its own span's context. The end of a send does not say which send it was: the sends of one attempt
/// end their spans oldest first, and a redirect is an event of the oldest one still open.
///
/// A call that shares an identical call's request (``SwiftConnect/Connect/Settings/coalescesIdenticalRequests``) has
/// its CLIENT span for its attempt, marked `swiftconnect.request.shared` (`true`): the request on the wire carries the
/// other call's trace context, not this span's, and a backend that counts requests from CLIENT spans skips it. When
/// the call that made the request leaves (cancelled) before the request is sent, the request goes for the earliest
/// call still sharing it, with that call's context, and its span is not marked.
///
/// A call answered by the client's cache sends nothing and makes no CLIENT span; what it met before the cache answered
/// (a wait while offline) is told on an INTERNAL span, as any event no send followed.
public struct TracingObserver: ConnectObserver {
    /// The tracer; `nil` for the process's (`InstrumentationSystem.tracer`), read at each call.
    private let tracer: (any Tracer)?
    /// The methods `http.request.method` names as themselves.
    private let methods: OpenTelemetryMethods

    /// Creates an observer that starts spans with `tracer`, or with the process's tracer when `nil`.
    ///
    /// - Parameters:
    ///   - tracer: The tracer; `nil` (the default) for `InstrumentationSystem.tracer`.
    ///   - knownMethods: The methods `http.request.method` names as themselves (case-sensitive; the others are
    ///     `_OTHER`, and their spans' names say `HTTP`), in place of the default, not beside it; `nil` (the default)
    ///     for the process's `OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS` (comma-separated), else RFC 9110's methods
    ///     and `PATCH`.
    public init(tracer: (any Tracer)? = nil, knownMethods: Set<String>? = nil) {
        self.tracer = tracer
        methods = OpenTelemetryMethods(known: knownMethods)
    }

    /// Reads the caller's trace context and returns the call's tracer; `nil` (nothing to do for the call) when the
    /// tracer is a `NoOpTracer`, as the process's is until one is bootstrapped.
    public func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? {
        let tracer = tracer ?? InstrumentationSystem.tracer
        if tracer is NoOpTracer { return nil }
        return CallTracing(
            tracer: tracer, parent: InstrumentationContext.current ?? .topLevel, call: call, methods: methods)
    }
}

/// The spans of one call: the sends in flight, and what happened before them.
///
/// A send is one trip of an attempt's request to the transport. An attempt is usually sent once; a middleware that
/// calls `next` again (a hedge) sends it more than once, and each send has its span. The core asks for a send's
/// header fields just before it tells the send started: a span is started when its fields are asked for, and the send
/// told started is matched to it by the fields its request carries (to the oldest span of the attempt not yet told
/// started when the tracer injects nothing). The end of a send does not say which send it is: the oldest span of the
/// attempt still open takes it, as does a redirect.
final class CallTracing: ConnectCallObserver, @unchecked Sendable {
    // `lock` protects `unsent`, `open`, `pending`, `endedBecause`, `latestRequest` and `sends`; the tracer and the call
    // never change.
    private let lock = NSLock()
    private let tracer: any Tracer
    private let parent: InstrumentationContext
    private let name: String
    /// The URL's path template (``ConnectCall/pathTemplate``) up to its query, `nil` when it has none.
    private let template: String?
    private let call: ConnectCall
    private let methods: OpenTelemetryMethods
    /// The spans whose fields were asked for and whose send is not yet told started, by attempt, oldest first.
    private var unsent: [Int: [(span: any Span, fields: HeaderFields)]] = [:]
    /// The span of each send told started and not yet ended, by attempt, oldest first. Usually one: more when a
    /// middleware sends an attempt's request again, or when an attempt abandoned at its `attemptTimeout` is told
    /// ended only after the next one started (a retry with no wait).
    private var open: [Int: [any Span]] = [:]
    /// Events that happened before the next attempt (a queue wait, a token refresh): told on its span.
    private var pending: [SpanEvent] = []
    /// The call's reason once it has ended, as its spans left open are told (`cancelled` for a call that succeeded);
    /// `nil` while it runs.
    private var endedBecause: String?
    /// Whether the call has ended: an event told later (the end of a refresh its last `401` started) has no attempt
    /// to wait for, and fields asked for later start no span.
    private var hasEnded: Bool { endedBecause != nil }
    /// The latest attempt's request as it went out: a redirect's `Location` is shown with its secret values hidden.
    private var latestRequest: ConnectRequest?
    /// The sends told started so far: each after the first is a resend (`http.request.resend_count`), a retry's or a
    /// middleware's second send of an attempt alike.
    private var sends = 0

    init(tracer: any Tracer, parent: InstrumentationContext, call: ConnectCall, methods: OpenTelemetryMethods) {
        self.tracer = tracer
        self.parent = parent
        self.call = call
        self.methods = methods
        template = Self.template(of: call.pathTemplate)
        name = Self.spanName(method: methods.name(of: call.method), target: template ?? call.name)
    }

    /// A span's name: `{method} {target}`, as OpenTelemetry names an HTTP client span. A method it does not know is
    /// `HTTP`, not `_OTHER`; a span with no low-cardinality target (no template, no name) is named by its method alone.
    static func spanName(method: String, target: String) -> String {
        (method == "_OTHER" ? "HTTP" : method) + (target.isEmpty ? "" : " " + target)
    }

    /// The trace context of a new span for the send about to start, as the tracer writes it into headers.
    ///
    /// No span, and no fields, once the call has ended (a span started as it ended is ended at once, with the call's
    /// reason): the first caller of a coalesced request may leave as the shared request reaches the transport's door,
    /// between its fields and its start, and then hears neither the start nor the end of that send.
    func headerFields(forAttempt attempt: Int) -> HeaderFields {
        guard let span = lock.withLock({ hasEnded ? nil : startSpanLocked() }) else { return [:] }
        var fields = HeaderFields()
        tracer.inject(span.context, into: &fields, using: HeaderFieldsInjector())
        let reason = lock.withLock { () -> String? in
            if endedBecause == nil { unsent[attempt, default: []].append((span, fields)) }
            return endedBecause
        }
        guard let reason else { return fields }
        Self.end(span, cutShortBy: reason)
        return [:]
    }

    func record(_ event: ConnectEvent) {
        switch event {
        case .attemptStarted(let attempt, let request):
            let (span, resends) = lock.withLock { () -> (any Span, Int) in
                latestRequest = request
                let span = takeUnsent(ofAttempt: attempt, sending: request) ?? startSpanLocked()
                open[attempt, default: []].append(span)
                defer { sends += 1 }
                return (span, sends)
            }
            // A span the tracer does not record (sampled out) is not worth the attributes' strings.
            guard span.isRecording else { return }
            let method = methods.name(of: request.method)
            // Named by the call's method when it started; a middleware may send the attempt with another (a `PATCH`
            // tunnelled through `POST`): the name says the method `http.request.method` does.
            if request.method != call.method {
                span.operationName = Self.spanName(method: method, target: template ?? call.name)
            }
            span.updateAttributes { attributes in
                attributes["http.request.method"] = method
                if method != request.method.rawValue {
                    attributes["http.request.method_original"] = request.method.rawValue
                }
                // Lower-cased as the metrics' label is: DNS names are case-insensitive (RFC 4343).
                attributes["server.address"] = request.url.host?.lowercased() ?? ""
                attributes["server.port"] = Self.port(of: request.url)
                attributes["url.full"] = request.redactedURL
                if let template { attributes["url.template"] = template }
                attributes["swiftconnect.call"] = call.name
                // Every send after the call's first, whatever its cause (OpenTelemetry's definition).
                if resends > 0 { attributes["http.request.resend_count"] = resends }
                // Another call's request answers this one (coalescing): nothing went on the wire for it.
                if request.sharesAnotherCallsRequest { attributes["swiftconnect.request.shared"] = true }
            }
        case .attemptEnded(let attempt, let status, let error, _, _):
            guard let span = takeOpen(ofAttempt: attempt) else { return }
            if let status {
                span.attributes["http.response.status_code"] = status
                if status >= 400 {
                    span.attributes["error.type"] = String(status)
                    span.setStatus(SpanStatus(code: .error))
                }
            } else if let error {
                span.attributes["error.type"] = error.kind.rawValue
                span.recordError(error)
                span.setStatus(SpanStatus(code: .error, message: error.kind.rawValue))
            }
            span.end()
        case .redirected(let status, let location):
            let (span, latest) = lock.withLock {
                (open.max { $0.key < $1.key }?.value.first, latestRequest)
            }
            guard let span else { return }
            // The `Location` as the attempt's request would show it: a secret it carries (a token the server echoes in
            // the URL it redirects to) hidden by value, as by name.
            var shown = latest ?? call.request
            shown.url = location
            let url = shown.redactedURL
            span.addEvent(
                SpanEvent(
                    name: "redirect",
                    attributes: ["http.response.status_code": .int64(Int64(status)), "url.full": .string(url)]))
            // The span's status will be the last hop's: its URL and server are that hop's too.
            guard span.isRecording else { return }
            span.updateAttributes { attributes in
                attributes["server.address"] = location.host?.lowercased() ?? ""
                attributes["server.port"] = Self.port(of: location)
                attributes["url.full"] = url
            }
        case .queueWaited(let seconds):
            remember(SpanEvent(name: "queued", attributes: ["swiftconnect.queue.wait_seconds": .double(seconds)]))
        case .connectivityWaited(let seconds):
            remember(
                SpanEvent(
                    name: "held while offline", attributes: ["swiftconnect.offline.wait_seconds": .double(seconds)]))
        case .tokenRefreshStarted:
            remember(SpanEvent(name: "token refresh started"))
        case .tokenRefreshEnded(let succeeded):
            remember(SpanEvent(name: "token refresh ended", attributes: ["swiftconnect.succeeded": .bool(succeeded)]))
        case .cacheLookup:
            break
        case .callEnded(_, let error, _):
            // The call's reason: its kind, or the type of an error of another kind (a middleware's own); `cancelled`
            // for the sends a call that succeeded left behind.
            let kind = error.map { ($0 as? ConnectError)?.kind.rawValue ?? "\(type(of: $0))" } ?? "cancelled"
            // A send still open (the call was cancelled, or timed out, while it was in flight) ends here.
            let (left, untold, lastMethod) = lock.withLock { () -> ([any Span], [SpanEvent], HTTPMethod?) in
                defer {
                    open = [:]
                    unsent = [:]
                    pending = []
                    endedBecause = kind
                }
                let sent = open.sorted { $0.key < $1.key }.flatMap(\.value)
                return (
                    sent + unsent.sorted { $0.key < $1.key }.flatMap { $0.value.map(\.span) }, pending,
                    latestRequest?.method
                )
            }
            if !untold.isEmpty {
                // Events no send followed (a token refresh that failed after the last attempt's 401, a queue wait
                // before a cancellation): told on a span still open, or on an INTERNAL span of their own, not lost.
                let span =
                    left.first
                    ?? Self.start(internalName(after: lastMethod), tracer: tracer, parent: parent, kind: .internal)
                for event in untold { span.addEvent(event) }
                if left.isEmpty {
                    if error != nil {
                        span.attributes["error.type"] = kind
                        span.setStatus(SpanStatus(code: .error, message: kind))
                    }
                    span.end()
                }
            }
            for span in left { Self.end(span, cutShortBy: kind) }
        }
    }

    /// Ends a span the call's end cut short, with the call's reason.
    private static func end(_ span: any Span, cutShortBy kind: String) {
        span.attributes["error.type"] = kind
        span.setStatus(SpanStatus(code: .error, message: kind))
        span.end()
    }

    /// A new span, with the events that came before it. `lock` held.
    private func startSpanLocked() -> any Span {
        let started = Self.start(name, tracer: tracer, parent: parent)
        for event in pending { started.addEvent(event) }
        pending = []
        return started
    }

    /// Takes out the span whose fields `request` carries, among those of `attempt` not yet told started; the oldest
    /// when none is told apart by its fields. `lock` held.
    private func takeUnsent(ofAttempt attempt: Int, sending request: ConnectRequest) -> (any Span)? {
        guard var spans = unsent[attempt], !spans.isEmpty else { return nil }
        let index =
            spans.firstIndex { entry in
                !entry.fields.isEmpty && entry.fields.allSatisfy { request.headerFields[$0.name] == $0.value }
            } ?? spans.startIndex
        let span = spans.remove(at: index).span
        unsent[attempt] = spans.isEmpty ? nil : spans
        return span
    }

    /// Takes out the oldest open span of `attempt`, to end it.
    private func takeOpen(ofAttempt attempt: Int) -> (any Span)? {
        lock.withLock {
            guard var spans = open[attempt], !spans.isEmpty else { return nil }
            let span = spans.removeFirst()
            open[attempt] = spans.isEmpty ? nil : spans
            return span
        }
    }

    private func remember(_ event: SpanEvent) {
        let (isLate, sent) = lock.withLock { () -> (Bool, HTTPMethod?) in
            if !hasEnded { pending.append(event) }
            return (hasEnded, latestRequest?.method)
        }
        guard isLate else { return }
        // After the call: the refresh its last attempt started ends after the call answered with its `401`.
        let span = Self.start(internalName(after: sent), tracer: tracer, parent: parent, kind: .internal)
        span.addEvent(event)
        span.end()
    }

    /// The name of an INTERNAL span, as the attempts' spans are named: by the method the latest attempt went out with
    /// (`sent`), which a middleware may have changed; by the call's when none went out.
    private func internalName(after sent: HTTPMethod?) -> String {
        guard let sent, sent != call.method else { return name }
        return Self.spanName(method: methods.name(of: sent), target: template ?? call.name)
    }

    /// The path of a call's template (`/search` of `/search?type=x`): `url.template` is a path template, and a
    /// query written into the endpoint is no part of it. `nil` when there is no template.
    static func template(of pathTemplate: String) -> String? {
        let path = pathTemplate.prefix { $0 != "?" && $0 != "#" }
        return path.isEmpty ? nil : String(path)
    }

    /// A span of `tracer`, whatever its concrete type: a CLIENT span unless `kind` says otherwise.
    private static func start<T: Tracer>(
        _ name: String, tracer: T, parent: InstrumentationContext, kind: SpanKind = .client
    ) -> any Span {
        tracer.startSpan(name, context: parent, ofKind: kind)
    }

    /// The port the URL names, or its scheme's default.
    private static func port(of url: URL) -> Int {
        if let port = url.port { return port }
        return url.scheme?.lowercased() == "http" ? 80 : 443
    }
}

/// Writes the tracer's propagation fields (`traceparent`, `tracestate`…) into a request's header fields.
struct HeaderFieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into fields: inout HeaderFields) {
        fields[HeaderField.Name(key)] = value
    }
}
