import Foundation
import Logging
@_spi(Observability) import SwiftConnect

/// The `source` of every line this module writes: the library whose lines they are, so that a handler that routes or
/// filters by source finds them under SwiftConnect's name rather than the bridge module's.
let swiftConnectSource = "SwiftConnect"

/// SwiftConnect's own output (debug output, the retry loop's notes) through a swift-log `Logger`.
///
/// ```swift
/// let logger = Logger(label: "api")
/// let connect = Connect(
///     settings: Connect.Settings(logger: SwiftLogConnectLogger(logger), observers: [LoggingObserver(logger)]))
/// ```
///
/// What reaches it went through the library's redaction first, as everything it prints does (SECURITY.md):
/// credentials by name and by value, secret query items and body fields.
///
/// Each line's `source` is `SwiftConnect`. Its `file`, `function` and `line` are this bridge's: the library does not
/// say where in it a message was written.
///
/// The logger's metadata provider is read once for each call, on the task that makes it (``forCall()``), and what it
/// gives (a trace ID read from a task local) is on every line of that call, though the outcome's debug output and the
/// retry loop's notes are written on the engine's threads, where the provider would find none of that task's values.
/// A line written outside a call reads the provider as it is written, as for any swift-log line.
public struct SwiftLogConnectLogger: ConnectLogger {
    /// Where the lines go.
    public let logger: Logger

    /// Forwards to `logger`.
    ///
    /// - Parameter logger: The logger; its level filters as usual.
    public init(_ logger: Logger) {
        self.logger = logger
    }

    /// Logs `message` at the swift-log level of the same name.
    public func log(_ level: LogLevel, _ message: String) {
        logger.log(level: Self.level(of: level), "\(message)", source: swiftConnectSource)
    }

    /// Returns the logger of one call: this one, with what its metadata provider gives now, on the task that makes
    /// the call, as metadata of its own in place of the provider, so that the call's lines written on the engine's
    /// threads carry it too. A line's own metadata still wins over it, and the provider is not read again for the
    /// call's lines. Without a provider, the logger itself.
    public func forCall() -> any ConnectLogger {
        guard let provider = logger.metadataProvider else { return self }
        var logger = logger
        for (key, value) in provider.get() { logger[metadataKey: key] = value }
        logger.handler.metadataProvider = nil
        return SwiftLogConnectLogger(logger)
    }

    /// The swift-log level of a SwiftConnect level.
    static func level(of level: LogLevel) -> Logger.Level {
        switch level {
        case .debug: return .debug
        case .info: return .info
        case .warning: return .warning
        case .error: return .error
        }
    }
}

/// Logs what happens to a client's calls through a swift-log `Logger`, at the levels a server operator expects:
///
/// | what | level |
/// | --- | --- |
/// | a call that ended with a 2xx or 3xx | `debug` |
/// | each attempt's end, each redirect, a queue wait, a cache lookup | `debug` |
/// | a retry (once per attempt, however many sends), a token refresh, a request held while offline | `info` |
/// | an attempt that got no response | `info` (the call's end says how it ended) |
/// | a call that ended with a 4xx (the caller's to handle: a 404 may be an answer) | `info` |
/// | a call that ended with a 5xx, or with no response | `warning` |
/// | a call the app cancelled, and its attempt | `debug` |
/// | a token refresh that failed | `warning` |
///
/// Every line carries structured metadata: `swiftconnect.call` (the connector, or an OpenAPI operation's ID),
/// `http.request.method` (as OpenTelemetry has it: `_OTHER` for a method other than the nine it knows, RFC 9110's and
/// `PATCH`, or than those ``init(_:knownMethods:)`` or `OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS` lists, the method
/// itself then in `http.request.method_original`), `url.template`, `url.full` (through
/// ``SwiftConnect/ConnectRequest/redactedURL``: no user info, secret query values and credentials hidden), and where
/// known `attempt`, `http.response.status_code` and `error.type`; a redirect's line also `location`, the URL it
/// redirects to, redacted as `url.full` is and with the attempt's secret values hidden. An attempt's lines (sent again,
/// redirected, ended) carry the method its request went out with, after every middleware (`POST` for a `PATCH` a
/// middleware tunnels through `POST`), as `TracingObserver`'s span is named; the others, the call's. What the logger's
/// metadata provider gives on the task that makes the call (a trace ID) is on each of the call's lines, though they are
/// written from the engine's threads. Nothing is made for a level the logger does not log. Each line's `source` is
/// `SwiftConnect`; its `file`, `function` and `line` are where this module wrote it, one place for each kind of line.
public struct LoggingObserver: ConnectObserver {
    /// Where the lines go.
    public let logger: Logger

    /// The methods `http.request.method` names as themselves.
    private let methods: OpenTelemetryMethods

    /// Logs the calls of the clients it is given to through `logger`.
    ///
    /// - Parameters:
    ///   - logger: The logger.
    ///   - knownMethods: The methods `http.request.method` names as themselves (case-sensitive; the others are
    ///     `_OTHER`), in place of the default, not beside it; `nil` (the default) for the process's
    ///     `OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS` (comma-separated), else RFC 9110's methods and `PATCH`.
    public init(_ logger: Logger, knownMethods: Set<String>? = nil) {
        self.logger = logger
        methods = OpenTelemetryMethods(known: knownMethods)
    }

    /// Returns the call's logger, its metadata naming the call.
    ///
    /// The logger's metadata provider, if any, is read here, on the task that makes the call, and what it gives joins
    /// the call's metadata: the events come from the engine's threads, where a provider that reads task locals (a
    /// trace ID) would find none of that task's values, or another task's.
    ///
    /// A logger that logs none of the call's lines (none is above `warning`) declines it: nothing is made for it.
    public func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? {
        var logger = logger
        guard logger.logLevel <= .warning else { return nil }
        if let provider = logger.metadataProvider {
            for (key, value) in provider.get() { logger[metadataKey: key] = value }
            logger.handler.metadataProvider = nil
        }
        logger[metadataKey: "swiftconnect.call"] = .string(call.name)
        let method = methods.name(of: call.method)
        logger[metadataKey: "http.request.method"] = .string(method)
        if method != call.method.rawValue {
            logger[metadataKey: "http.request.method_original"] = .string(call.method.rawValue)
        }
        // A path template, as OpenTelemetry defines `url.template`: a query written into the endpoint is no part of it.
        let template = call.pathTemplate.prefix { $0 != "?" && $0 != "#" }
        if !template.isEmpty { logger[metadataKey: "url.template"] = .string(String(template)) }
        return CallLogging(logger: logger, request: call.request, methods: methods)
    }
}

/// The lines of one call.
struct CallLogging: ConnectCallObserver {
    /// The call's logger, its metadata naming the call (`http.request.method` the call's method).
    let logger: Logger
    /// The request as the call began: its URL, redacted, is each line's `url.full`.
    let request: ConnectRequest
    /// The methods `http.request.method` names as themselves.
    let methods: OpenTelemetryMethods
    /// The request of the latest attempt, as it went out (a middleware's credential added): a redirect's `Location`
    /// is shown with its secret values hidden.
    private let latest = LatestRequest()

    init(logger: Logger, request: ConnectRequest, methods: OpenTelemetryMethods) {
        self.logger = logger
        self.request = request
        self.methods = methods
    }

    /// The logger of an attempt that went out as `sent`: the call's, its `http.request.method` the method sent, which
    /// a middleware may have changed (a `PATCH` tunnelled through `POST`), as `TracingObserver`'s span names it.
    private func logger(sending sent: ConnectRequest) -> Logger {
        guard sent.method != request.method else { return logger }
        var logger = logger
        let method = methods.name(of: sent.method)
        logger[metadataKey: "http.request.method"] = .string(method)
        logger[metadataKey: "http.request.method_original"] =
            method == sent.method.rawValue ? nil : .string(sent.method.rawValue)
        return logger
    }

    /// The logger of the latest attempt's lines (its end, its redirects); the call's before any attempt.
    private var attemptLogger: Logger { latest.logger ?? logger }

    /// The call's URL, redacted: worked out for a line that is logged only (swift-log takes metadata as an
    /// autoclosure), as redacting it reads the request's body for secret values.
    private var url: String { request.redactedURL }

    func record(_ event: ConnectEvent) {
        switch event {
        case .attemptStarted(let attempt, let request):
            let logger = logger(sending: request)
            // A retry is said once, at its attempt's first send, however many sends the attempt makes (a hedge).
            let isNewAttempt = latest.set(request, logger: logger, attempt: attempt)
            guard attempt > 1, isNewAttempt else { return }
            logger.info(
                "sending again (attempt \(attempt))",
                metadata: ["attempt": "\(attempt)", "url.full": .string(request.redactedURL)],
                source: swiftConnectSource)
        case .attemptEnded(let attempt, let status, let error, _, _):
            let logger = attemptLogger
            if let status {
                logger.debug(
                    "attempt \(attempt) answered \(status)",
                    metadata: {
                        var metadata: Logger.Metadata = [
                            "attempt": "\(attempt)", "http.response.status_code": "\(status)", "url.full": .string(url),
                        ]
                        // A 4xx or 5xx is a failed attempt, as OpenTelemetry has it: its type is the status code.
                        if status >= 400 { metadata["error.type"] = "\(status)" }
                        return metadata
                    }(), source: swiftConnectSource)
            } else if let error {
                logger.log(
                    level: error.kind == .cancelled ? .debug : .info,
                    "attempt \(attempt) got no response: \(error.kind.rawValue)",
                    metadata: [
                        "attempt": "\(attempt)", "error.type": .string(error.kind.rawValue), "url.full": .string(url),
                    ], source: swiftConnectSource)
            }
        case .redirected(let status, let location):
            attemptLogger.debug(
                "followed a \(status) redirect",
                metadata: [
                    "http.response.status_code": "\(status)",
                    "location": .string(latest.redacted(location, else: request)), "url.full": .string(url),
                ], source: swiftConnectSource)
        case .queueWaited(let seconds):
            logger.debug(
                "waited \(Self.milliseconds(seconds)) ms in the request queue", metadata: ["url.full": .string(url)],
                source: swiftConnectSource)
        case .connectivityWaited(let seconds):
            logger.info(
                "held \(Self.milliseconds(seconds)) ms while offline", metadata: ["url.full": .string(url)],
                source: swiftConnectSource)
        case .cacheLookup(let hit):
            logger.debug(
                hit ? "answered from the cache" : "not in the cache", metadata: ["url.full": .string(url)],
                source: swiftConnectSource)
        case .tokenRefreshStarted:
            logger.info(
                "the server rejected the credential: refreshing it", metadata: ["url.full": .string(url)],
                source: swiftConnectSource)
        case .tokenRefreshEnded(let succeeded):
            if succeeded {
                logger.info("credential refreshed", metadata: ["url.full": .string(url)], source: swiftConnectSource)
            } else {
                // `false` also when the app set another credential while the refresh ran (its token went unused).
                logger.warning(
                    "refreshing the credential gave none in use: it failed, or the app set another",
                    metadata: ["url.full": .string(url)], source: swiftConnectSource)
            }
        case .callEnded(let status, let error, let attempts):
            if let error {
                let kind = (error as? ConnectError)?.kind.rawValue ?? "\(type(of: error))"
                // A call the app cancelled (a screen gone, a search replaced) is no trouble with the server.
                let isCancellation = (error as? ConnectError)?.kind == .cancelled || error is CancellationError
                logger.log(
                    level: isCancellation ? .debug : .warning,
                    "call \(isCancellation ? "cancelled" : "failed") after \(attempts) attempt\(attempts == 1 ? "" : "s"): \(kind)",
                    metadata: ["error.type": .string(kind), "url.full": .string(url)], source: swiftConnectSource)
            } else if let status, status >= 400 {
                logger.log(
                    level: status >= 500 ? .warning : .info,
                    "call ended with status \(status) after \(attempts) attempt\(attempts == 1 ? "" : "s")",
                    metadata: [
                        "http.response.status_code": "\(status)", "error.type": "\(status)", "url.full": .string(url),
                    ], source: swiftConnectSource)
            } else if let status {
                logger.debug(
                    "call succeeded with \(status)",
                    metadata: ["http.response.status_code": "\(status)", "url.full": .string(url)],
                    source: swiftConnectSource)
            }
        }
    }

    private static func milliseconds(_ seconds: TimeInterval) -> Int {
        Int((seconds * 1000).rounded())
    }
}

/// The request of a call's latest attempt, for hiding its secret values in a redirect's `Location` (a token sent in
/// `Authorization` that a server echoes in the URL it redirects to), the logger of that attempt's lines, and the
/// highest attempt told started.
final class LatestRequest:
    // Checked by hand: `lock` protects `request`, `attemptLogger` and `lastAttempt`.
    @unchecked Sendable
{
    private let lock = NSLock()
    private var request: ConnectRequest?
    private var attemptLogger: Logger?
    /// The highest attempt told started, 0 before any.
    private var lastAttempt = 0

    /// Keeps `request`, a send of `attempt`, and its `logger`. Returns whether it is the attempt's first send: a
    /// middleware may send an attempt's request more than once (a hedge).
    func set(_ request: ConnectRequest, logger: Logger, attempt: Int) -> Bool {
        lock.withLock {
            self.request = request
            attemptLogger = logger
            defer { lastAttempt = max(lastAttempt, attempt) }
            return attempt > lastAttempt
        }
    }

    /// The logger of the latest attempt's lines, `nil` before any attempt.
    var logger: Logger? {
        lock.withLock { attemptLogger }
    }

    /// `location` redacted as ``SwiftConnect/ConnectRequest/redactedURL`` redacts a URL, the latest request's secret
    /// values (or `fallback`'s, before any attempt) hidden in it too.
    func redacted(_ location: URL, else fallback: ConnectRequest) -> String {
        var shown = lock.withLock { request } ?? fallback
        shown.url = location
        return shown.redactedURL
    }
}
