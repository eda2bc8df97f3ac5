import Foundation

/// What a ``RecordingTransport`` does with a request: send it and record the exchange, or answer from the recording.
///
/// ```swift
/// // In the test: replay by default, as CI runs it.
/// let transport = RecordingTransport(wrapping: URLSessionTransport())
/// ```
///
/// ```
/// # To re-record every recording, without editing a test:
/// SWIFTCONNECT_RECORD_MODE=record swift test
/// ```
public enum RecordingMode: String, Sendable, CaseIterable {
    /// Sends every request with the wrapped transport and records each exchange, replacing the file's entries (a file
    /// of an earlier run is emptied when the transport is made, so a test that no longer makes a request leaves no
    /// recording of it; its `log.comment` is kept).
    case record
    /// Answers every request from the recording and sends nothing: a request with no recording fails. What CI runs.
    case replay
    /// Answers from the recording what it holds and sends and records the rest, keeping the entries already there.
    case recordMissing

    /// The environment variable that chooses the mode: `SWIFTCONNECT_RECORD_MODE`.
    public static let environmentVariable = "SWIFTCONNECT_RECORD_MODE"

    /// The mode ``environmentVariable`` names, else ``replay``: the default of every ``RecordingTransport``.
    public static var `default`: RecordingMode { fromEnvironment() }

    /// The mode an environment names in ``environmentVariable``, or `fallback`.
    ///
    /// The value is read ignoring case, `-`, `_` and spaces: `record` (or VCR's `all`), `replay` (or `none`),
    /// `recordMissing`, `record_missing` (or VCR's `new_episodes`). Any other value gives `fallback`, and the errors
    /// of a replay (no recording, none that matches) say that the variable names no mode.
    ///
    /// - Parameters:
    ///   - environment: The variables; the process's by default.
    ///   - fallback: The mode when the variable is absent or not understood; ``replay`` by default.
    /// - Returns: The mode.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment, fallback: RecordingMode = .replay
    ) -> RecordingMode {
        guard let value = environment[environmentVariable] else { return fallback }
        return named(value) ?? fallback
    }

    /// The mode `value` names, read as ``fromEnvironment(_:fallback:)`` reads it; `nil` for none.
    private static func named(_ value: String) -> RecordingMode? {
        let folded = String(value.lowercased().filter { !"-_ ".contains($0) })
        switch folded {
        case "record", "all": return .record
        case "replay", "none", "playback": return .replay
        case "recordmissing", "newepisodes", "missing": return .recordMissing
        default: return nil
        }
    }

    /// For the errors of a replay: a sentence saying that ``environmentVariable`` names no mode (a typo, `recrod`),
    /// so that a reader who set it to record learns why the transport replayed; empty when it is unset or names one.
    static var misspeltEnvironmentNote: String {
        guard let value = ProcessInfo.processInfo.environment[environmentVariable], named(value) == nil else {
            return ""
        }
        let shown = value.count > 40 ? String(value.prefix(40)) + "…" : value
        return " Note: \(environmentVariable) is \"\(shown)\", which names no mode (record, replay, recordMissing): "
            + "the transports that take their mode from it replay."
    }
}
