import Foundation
@_spi(Observability) import SwiftConnect
import Tracing

/// Traces a client's calls with swift-distributed-tracing: one CLIENT span per attempt, as OpenTelemetry's HTTP
/// client conventions ask, the caller's trace context propagated in `traceparent` (or whatever the tracer injects).
///
/// One line turns it on:
///
/// ```swift
/// let connect = Connect(settings: Connect.Settings(observers: [TracingObserver()]))
/// ```
///
/// Each attempt's span:
/// - is named `{method} {url.template}` (`GET /todos/{id}`), from the connector's path template, or the name the
///   call was given (an OpenAPI operation's ID) when there is no template, or `{method}` alone when there is neither;
///   `{method}` is `HTTP` for a method other than the nine OpenTelemetry knows (RFC 9110's and `PATCH`), such as
///   `PROPFIND`, or than those ``init(tracer:knownMethods:)`` or `OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS` lists;
/// - is a child of the trace context of the task that made the call (a `Future` call included: the context is read
///   when the call starts, on the caller's task);
/// - carries `http.request.method` (`_OTHER` for a method OpenTelemetry does not know, the method itself then in
///   `http.request.method_original`), `server.address`, `server.port`, `url.full` (through the library's redaction:
///   no user info, secret query values and credentials hidden), `url.template` (the connector's path template up to
///   its query; none for a request built elsewhere), `swiftconnect.call` (the call's name),
///   `http.request.resend_count` (from the second attempt), `http.response.status_code`, and for a failure
///   `error.type` (the status code for 4xx and 5xx, the ``SwiftConnect/ConnectError/Kind`` for a failure with no
///   response) with the span's status set to error;
/// - has an event for each redirect the client followed, and for the queue wait, the time held while offline and
///   the token refresh that came before the attempt.
///
/// A call answered by the client's cache sends nothing and makes no span.
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

/// The spans of one call: the attempts in flight, and what happened before them.
final class CallTracing: ConnectCallObserver, @unchecked Sendable {
    // `lock` protects `spans`, `pending` and `latestRequest`; the tracer and the call never change.
    private let lock = NSLock()
    private let tracer: any Tracer
    private let parent: InstrumentationContext
    private let name: String
    /// The connector's path template up to its query, `nil` when it has none.
    private let template: String?
    private let call: ConnectCall
    private let methods: OpenTelemetryMethods
    /// The span of each attempt not yet ended, by attempt. Usually one; two when an attempt abandoned at its
    /// `attemptTimeout` is told ended only after the next one started (a retry with no wait).
    private var spans: [Int: any Span] = [:]
    /// Events that happened before the next attempt (a queue wait, a token refresh): told on its span.
    private var pending: [SpanEvent] = []
    /// The latest attempt's request as it went out: a redirect's `Location` is shown with its secret values hidden.
    private var latestRequest: ConnectRequest?

    init(tracer: any Tracer, parent: InstrumentationContext, call: ConnectCall, methods: OpenTelemetryMethods) {
        self.tracer = tracer
        self.parent = parent
        self.call = call
        self.methods = methods
        template = Self.template(of: call.pathTemplate)
        // OpenTelemetry names the span of a method it does not know `HTTP`, not `_OTHER`; a span with no low-cardinality
        // target (no template, no name) by its method alone.
        let method = methods.name(of: call.method)
        let target = template ?? call.name
        name = (method == "_OTHER" ? "HTTP" : method) + (target.isEmpty ? "" : " " + target)
    }

    /// The trace context of the attempt's span, as the tracer writes it into headers.
    func headerFields(forAttempt attempt: Int) -> HeaderFields {
        let span = span(forAttempt: attempt)
        var fields = HeaderFields()
        tracer.inject(span.context, into: &fields, using: HeaderFieldsInjector())
        return fields
    }

    func record(_ event: ConnectEvent) {
        switch event {
        case .attemptStarted(let attempt, let request):
            lock.withLock { latestRequest = request }
            let span = span(forAttempt: attempt)
            // A span the tracer does not record (sampled out) is not worth the attributes' strings.
            guard span.isRecording else { return }
            span.updateAttributes { attributes in
                let method = methods.name(of: request.method)
                attributes["http.request.method"] = method
                if method != request.method.rawValue {
                    attributes["http.request.method_original"] = request.method.rawValue
                }
                attributes["server.address"] = request.url.host ?? ""
                attributes["server.port"] = Self.port(of: request.url)
                attributes["url.full"] = request.redactedURL
                if let template { attributes["url.template"] = template }
                attributes["swiftconnect.call"] = call.name
                if attempt > 1 { attributes["http.request.resend_count"] = attempt - 1 }
            }
        case .attemptEnded(let attempt, let status, let error, _, _):
            guard let span = takeSpan(ofAttempt: attempt) else { return }
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
            let (span, latest) = lock.withLock { (spans.max { $0.key < $1.key }?.value, latestRequest) }
            guard let span else { return }
            // The `Location` as the attempt's request would show it: a secret it carries (a token the server echoes in
            // the URL it redirects to) hidden by value, as by name.
            var shown = latest ?? call.request
            shown.url = location
            span.addEvent(
                SpanEvent(
                    name: "redirect",
                    attributes: [
                        "http.response.status_code": .int64(Int64(status)),
                        "url.full": .string(shown.redactedURL),
                    ]))
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
            // An attempt still open (the call was cancelled, or timed out, while it was in flight) ends here.
            let open = lock.withLock { () -> [any Span] in
                defer { spans = [:] }
                return spans.sorted { $0.key < $1.key }.map(\.value)
            }
            let kind = (error as? ConnectError)?.kind.rawValue ?? "cancelled"
            for span in open {
                span.attributes["error.type"] = kind
                span.setStatus(SpanStatus(code: .error, message: kind))
                span.end()
            }
        }
    }

    /// The span of `attempt`, started now if it is not yet (with the events that came before it).
    private func span(forAttempt attempt: Int) -> any Span {
        lock.lock()
        defer { lock.unlock() }
        if let span = spans[attempt] { return span }
        let started = Self.start(name, tracer: tracer, parent: parent)
        for event in pending { started.addEvent(event) }
        pending = []
        spans[attempt] = started
        return started
    }

    /// Takes the span of `attempt` out, to end it.
    private func takeSpan(ofAttempt attempt: Int) -> (any Span)? {
        lock.withLock { spans.removeValue(forKey: attempt) }
    }

    private func remember(_ event: SpanEvent) {
        lock.withLock { pending.append(event) }
    }

    /// The path of a connector's template (`/search` of `/search?type=x`): `url.template` is a path template, and a
    /// query written into the endpoint is no part of it. `nil` when there is no template.
    static func template(of pathTemplate: String) -> String? {
        let path = pathTemplate.prefix { $0 != "?" && $0 != "#" }
        return path.isEmpty ? nil : String(path)
    }

    /// A CLIENT span of `tracer`, whatever its concrete type.
    private static func start<T: Tracer>(_ name: String, tracer: T, parent: InstrumentationContext) -> any Span {
        tracer.startSpan(name, context: parent, ofKind: .client)
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
