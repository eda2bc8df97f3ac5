import Foundation

/// Where SwiftConnect reports misuse of futures and promises that is not worth a crash.
///
/// In debug builds, completing a ``Promise`` a second time is reported here (the second result is ignored
/// in every build). By default the report is written to standard error; install a handler to send it to your
/// logger, or, in tests, to assert on it.
///
/// ```swift
/// FutureDiagnostics.handler = { message in XCTFail(message) }
/// ```
public enum FutureDiagnostics {
    private static let storage = Protected<(@Sendable (String) -> Void)?>(nil)

    /// Receives each diagnostic message; `nil` restores the default (standard error).
    public static var handler: (@Sendable (String) -> Void)? {
        get { storage.snapshot }
        set {
            // Released outside the lock: what the handler held may run deinit code that reads or sets the handler.
            _ = storage.replace(with: newValue)
        }
    }

    @usableFromInline
    static func reportDoubleCompletion<Value>(of type: Value.Type, at location: SourceLocation) {
        #if DEBUG
            let message =
                "Promise<\(Value.self)> completed more than once (at \(location.file):\(location.line)); "
                + "the later result was ignored"
            if let handler = storage.snapshot {
                handler(message)
            } else {
                FileHandle.standardError.write(Data("[SwiftConnect] warning: \(message)\n".utf8))
            }
        #endif
    }
}
