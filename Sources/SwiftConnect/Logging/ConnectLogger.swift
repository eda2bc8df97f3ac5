import Foundation

/// How important a log message is.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    /// Detail for debugging, such as `debugResponse` output.
    case debug
    /// Normal events.
    case info
    /// Something unexpected that SwiftConnect worked around.
    case warning
    /// Something failed.
    case error

    /// Whether `lhs` is less important than `rhs`.
    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The level's name, such as `warning`.
    public var description: String {
        switch self {
        case .debug: return "debug"
        case .info: return "info"
        case .warning: return "warning"
        case .error: return "error"
        }
    }
}

/// Where SwiftConnect writes what it has to say: debug output of requests and responses, and diagnostics.
///
/// SwiftConnect never calls `print`. Plug in your logging system by conforming a type:
///
/// ```swift
/// struct OSLogger: ConnectLogger {
///     func log(_ level: LogLevel, _ message: String) {
///         os_log("%{public}@", message)
///     }
/// }
/// ConnectLogging.logger = OSLogger()
/// ```
public protocol ConnectLogger: Sendable {
    /// Writes one message.
    ///
    /// - Parameters:
    ///   - level: How important the message is.
    ///   - message: The text, already redacted of secrets unless redaction was turned off.
    func log(_ level: LogLevel, _ message: String)

    /// Returns the logger that writes every line of one call.
    ///
    /// SwiftConnect asks for it once per call, when the call starts, on the caller's thread and task, and writes each
    /// of the call's lines through it: the debug output, the retry loop's notes, and what middlewares log through
    /// ``RequestContext/logger``. Some of those lines are written later on the transport's threads, where the caller's
    /// task locals are gone: read them here (a trace ID for a logging system's metadata) and keep them in the
    /// returned logger.
    ///
    /// - Returns: The call's logger. The default is `self`.
    func forCall() -> any ConnectLogger
}

extension ConnectLogger {
    /// Returns `self`: a logger that reads nothing of the caller's context writes a call's lines as it is.
    public func forCall() -> any ConnectLogger { self }
}

/// The default logger: writes each message as one line (or block) to standard error.
public struct StandardErrorLogger: ConnectLogger {
    /// Messages below this level are dropped.
    var minimumLevel: LogLevel

    /// Creates a logger writing to standard error.
    ///
    /// - Parameter minimumLevel: Messages below this level are dropped. Defaults to `.debug`.
    public init(minimumLevel: LogLevel = .debug) {
        self.minimumLevel = minimumLevel
    }

    /// Writes the message to standard error if its level is high enough.
    public func log(_ level: LogLevel, _ message: String) {
        guard level >= minimumLevel else { return }
        FileHandle.standardError.write(Data("[SwiftConnect] \(level): \(message)\n".utf8))
    }
}

/// A logger that collects messages in memory, for tests and for showing logs in an app's debug screen.
public final class MemoryLogger: ConnectLogger {
    private let storage = Protected<[(level: LogLevel, message: String)]>([])

    /// Creates an empty logger.
    public init() {}

    /// Keeps the message.
    public func log(_ level: LogLevel, _ message: String) {
        storage.withLock { $0.append((level, message)) }
    }

    /// The messages logged so far, oldest first.
    public var messages: [String] { storage.snapshot.map(\.message) }

    /// The messages logged so far with their levels, oldest first.
    public var entries: [(level: LogLevel, message: String)] { storage.snapshot }

    /// Forgets every message.
    public func removeAll() {
        storage.withLock { $0.removeAll() }
    }
}

/// The process-wide logger SwiftConnect uses when a client was not given one.
public enum ConnectLogging {
    private static let storage = Protected<any ConnectLogger>(StandardErrorLogger())

    /// The default logger for every ``Connect`` made without one, and for diagnostics.
    /// Defaults to a ``StandardErrorLogger``.
    public static var logger: any ConnectLogger {
        get { storage.snapshot }
        // Released outside the lock: the logger replaced may close a file in its deinit and log that it did.
        set { _ = storage.replace(with: newValue) }
    }
}
