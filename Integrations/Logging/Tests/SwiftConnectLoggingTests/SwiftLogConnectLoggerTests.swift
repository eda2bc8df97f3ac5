import Foundation
import InMemoryLogging
import Logging
import SwiftConnect
import SwiftConnectLogging
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What `SwiftLogConnectLogger` writes of the library's own output: levels, the logger's metadata provider, where the
/// lines say they come from, and that nothing secret or forged reaches them.
final class SwiftLogConnectLoggerTests: XCTestCase {
    private var server: LocalServer!
    private var handler: InMemoryLogHandler!
    private var logger: Logger!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        let handler = InMemoryLogHandler()
        self.handler = handler
        logger = Logger(label: "tests") { _ in handler }
        logger.logLevel = .trace
    }

    override func tearDown() {
        server.stop()
    }

    private struct GetTodo: Connector {
        var baseURL: URL
        var endpoint: String { "/todos/7" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: ParametersRepresentable? { nil }
    }

    /// A `Connect` that writes its own output to the bridge and its events to `LoggingObserver`, both to `logger`.
    private func client(_ logger: Logger) -> Connect {
        Connect(
            retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            settings: Connect.Settings(logger: SwiftLogConnectLogger(logger), observers: [LoggingObserver(logger)]))
    }

    /// The lines name SwiftConnect as their `source`, the bridge's and the observer's alike, so that a handler that
    /// filters or routes by source finds the library's lines under its name, not under the bridge module's.
    func testTheLinesNameSwiftConnectAsTheirSource() throws {
        // Given
        server.route("GET", "/todos/7") { _ in .json(string: "{}") }
        let recorder = RecordingLogHandler()
        var logger = Logger(label: "tests") { _ in recorder }
        logger.logLevel = .trace
        // When
        _ = try client(logger).request(GetTodo(baseURL: server.baseURL), debugResponse: true).wait()
        // Then: the request's and the response's debug output, the attempt's and the call's lines
        XCTAssertEqual(recorder.events.count, 4)
        XCTAssertEqual(recorder.events.map(\.source), Array(repeating: "SwiftConnect", count: 4))
    }
}

/// A `LogHandler` that keeps every event whole (source, file, function and line too), for the tests that read them.
/// Its copies (each `Logger` holds one) share what they keep.
struct RecordingLogHandler: LogHandler {
    private let recorded = Locked<[LogEvent]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    var metadataProvider: Logger.MetadataProvider?

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Keeps `event`, its metadata merged as swift-log's handlers merge it: the handler's, the provider's, the line's.
    func log(event: LogEvent) {
        var event = event
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        merged.merge(event.metadata ?? [:]) { _, new in new }
        event.metadata = merged
        recorded.withLock { $0.append(event) }
    }

    /// The events logged so far, oldest first.
    var events: [LogEvent] { recorded.withLock { $0 } }
}
