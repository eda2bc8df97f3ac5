import Foundation

/// The methods OpenTelemetry's HTTP conventions let `http.request.method` name, for the observability packages
/// (`SwiftConnectTracing`, `SwiftConnectMetrics`, `SwiftConnectLogging`), which reach it with
/// `@_spi(Observability) import SwiftConnect`; not API for apps, whose way to set the list is each observer's
/// `knownMethods` or the environment.
///
/// A method outside the list is named `_OTHER`, so that a metric's labels and a log's values stay bounded whatever
/// a caller sends. The list is RFC 9110's methods and `PATCH`, compared case-sensitively, unless the app sets one:
/// the observer's `knownMethods`, else `OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS` (a comma-separated list that
/// replaces the default, not one added to it, as the conventions ask of an instrumentation that maps methods to
/// `_OTHER`). An empty variable counts as unset, as OpenTelemetry reads every variable of its own.
@_spi(Observability)
public struct OpenTelemetryMethods: Sendable {
    /// The methods named as themselves.
    let known: Set<String>

    /// The methods the conventions know when the app sets none.
    static let conventional: Set<String> = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
    ]

    /// The list an observer uses: `known` when given, else the process's `OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS`,
    /// else the conventions' own.
    ///
    /// - Parameter known: The observer's `knownMethods`, case-sensitive; `nil` to read the environment.
    public init(known: Set<String>?) {
        self.init(known: known, environment: ProcessInfo.processInfo.environment)
    }

    /// The list from `known`, else from `environment`'s `OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS`, else the
    /// conventions' own.
    package init(known: Set<String>?, environment: [String: String]) {
        if let known {
            self.known = known
        } else if let variable = environment["OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS"],
            case let methods = variable.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) })
                .filter({ !$0.isEmpty }),
            !methods.isEmpty
        {
            self.known = Set(methods)
        } else {
            self.known = Self.conventional
        }
    }

    /// `method` as `http.request.method` has it: its name when the list holds it, else `_OTHER`.
    ///
    /// - Parameter method: The request's method.
    /// - Returns: The name to record.
    public func name(of method: HTTPMethod) -> String {
        known.contains(method.rawValue) ? method.rawValue : "_OTHER"
    }
}
