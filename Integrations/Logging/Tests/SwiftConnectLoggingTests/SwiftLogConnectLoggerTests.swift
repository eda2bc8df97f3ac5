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
final class SwiftLogConnectLoggerTests: LoggingTestCase {
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

    /// Each SwiftConnect level is the swift-log level of the same name, and the logger's level filters them.
    func testEachLevelIsTheSwiftLogLevelOfTheSameNameAndTheLoggersLevelFilters() {
        // Given
        var logger = self.logger!
        logger.logLevel = .info
        let bridge = SwiftLogConnectLogger(logger)
        // When
        for level in LogLevel.allCases { bridge.log(level, "\(level)") }
        // Then: `debug` is below the logger's level
        XCTAssertEqual(handler.entries.map(\.level), [.info, .warning, .error])
        XCTAssertEqual(handler.entries.map { "\($0.message)" }, ["info", "warning", "error"])
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

    /// Nothing the request or the response carries as a secret reaches a line, in its message or its metadata: the
    /// URL's user info, a secret query item, `Authorization`, `Cookie`, `Set-Cookie`, a secret field of the body.
    func testNoSecretReachesALineOrItsMetadata() throws {
        // Given
        server.route("GET", "/todos/7") { _ in
            LocalServer.Response.json(string: #"{"token":"b0dy-T0KEN-77","page":2}"#)
                .withHeader("Set-Cookie", "sid=SET-c00kie-55; HttpOnly")
        }
        struct Secretive: Connector {
            var baseURL: URL
            var endpoint: String { "/todos/7" }
            var method: HTTPMethod { .get }
            var headers: [HTTPHeader] {
                [
                    HTTPHeader(name: "Authorization", value: "Bearer AUTH-t0ken-12345"),
                    HTTPHeader(name: "Cookie", value: "sid=REQ-c00kie-99"),
                ]
            }
            var parameters: ParametersRepresentable? {
                CompositeParameters(.query(key: "api_key", value: "QUERY-s3cr3t"))
            }
        }
        var components = try XCTUnwrap(URLComponents(url: server.baseURL, resolvingAgainstBaseURL: false))
        components.user = "amy"
        components.password = "USER-pa55w0rd"
        let recorder = RecordingLogHandler()
        var logger = Logger(label: "tests") { _ in recorder }
        logger.logLevel = .trace
        // When
        _ = try client(logger).request(Secretive(baseURL: try XCTUnwrap(components.url)), debugResponse: true).wait()
        // Then
        XCTAssertEqual(recorder.events.count, 4)
        let written = recorder.events.map { event in
            "\(event.message) " + (event.metadata ?? [:]).map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        for secret in [
            "USER-pa55w0rd", "QUERY-s3cr3t", "AUTH-t0ken-12345", "REQ-c00kie-99", "SET-c00kie-55", "b0dy-T0KEN-77",
        ] {
            XCTAssertFalse(written.contains { $0.contains(secret) }, "\(secret) in \(written)")
        }
    }

    /// A server's text with line breaks (a validation message in its error body) forges no line: what the call's
    /// lines quote of the failure (the error's description) is on one line, and the observer's lines quote none of
    /// the server's text.
    func testAServersLineBreaksForgeNoLineOfTheFailure() throws {
        // Given
        server.route("GET", "/todos/7") { _ in
            .json(string: #"{"message":"bad\r\n2026-01-01T00:00:00 critical : FORGED"}"#, status: 422)
        }
        struct Todo: Decodable {}
        let recorder = RecordingLogHandler()
        var logger = Logger(label: "tests") { _ in recorder }
        logger.logLevel = .trace
        // When
        XCTAssertThrowsError(
            try client(logger).request(GetTodo(baseURL: server.baseURL)).decoded(toType: Todo.self).wait())
        // Then
        XCTAssertFalse(recorder.events.isEmpty)
        for event in recorder.events {
            let values = (event.metadata ?? [:]).values.map { "\($0)" } + ["\(event.message)"]
            XCTAssertFalse(
                values.contains { $0.contains("FORGED") || $0.contains("\n") || $0.contains("\r") }, "\(values)")
        }
    }

    /// Each line of a call carries what the logger's metadata provider gives on the task that makes the call (a trace
    /// ID read from a task local), the lines written on the engine's threads too: the failed outcome's debug output
    /// and the retry loop's note that a one-shot body is not sent again. The provider is read once per call.
    func testEachLineOfACallCarriesTheProvidersMetadataOfTheCallersTask() throws {
        // Given: a logger whose provider reads a task-local request ID and counts its reads
        server.route("GET", "/todos/7") { _ in .json(string: #"{"error":"down"}"#, status: 500) }
        server.route("PUT", "/files/1") { _ in LocalServer.Response.status(503).withHeader("Retry-After", "0") }
        let recorder = RecordingLogHandler()
        let reads = Locked(0)
        var logger = Logger(label: "tests") { _ in recorder }
        logger.logLevel = .trace
        logger.handler.metadataProvider = Logger.MetadataProvider {
            reads.withLock { $0 += 1 }
            return RequestID.current.map { ["request.id": .string($0)] } ?? [:]
        }
        let connect = Connect(
            retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            settings: Connect.Settings(logger: SwiftLogConnectLogger(logger)))
        let chunks = AsyncStream<Data> { continuation in
            continuation.yield(Data("made as it goes".utf8))
            continuation.finish()
        }
        let upload = ConnectRequest(
            method: .put, url: server.baseURL.appendingPathComponent("files/1"),
            body: .stream(ConnectRequest.OneShotStream(chunks)))

        // When: a failed call with debug output, and a call whose one-shot body is not retried, each with an ID
        try RequestID.$current.withValue("r-42") {
            XCTAssertThrowsError(try connect.request(GetTodo(baseURL: server.baseURL), debugResponse: true).wait())
        }
        try RequestID.$current.withValue("r-43") {
            let response = try connect.response(for: upload, options: RequestOptions(acceptsEveryStatus: true)).wait()
            XCTAssertEqual(response.statusCode, 503)
        }

        // Then: the request's and the outcome's debug output, then the note, each with its call's ID
        let events = recorder.events
        XCTAssertEqual(events.count, 3, "\(events.map(\.message))")
        XCTAssertEqual(events.map { $0.metadata?["request.id"] }, ["r-42", "r-42", "r-43"])
        XCTAssertTrue(events.last.map { "\($0.message)".contains("not retried after attempt 1") } ?? false)
        // Once for each call, on its caller's task: no line reads it again
        XCTAssertEqual(reads.withLock { $0 }, 2)
    }
}

/// A `LogHandler` that keeps every event whole (source, file, function and line too), for the tests that read them.
/// Its copies (each `Logger` holds one) share what they keep.
struct RecordingLogHandler: LogHandler {
    private let recorded = Locked<[LogEvent]>([])
    private let metadataSets = Locked(0)
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    var metadataProvider: Logger.MetadataProvider?

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set {
            metadataSets.withLock { $0 += 1 }
            metadata[key] = newValue
        }
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

    /// How many times a metadata value was set on this handler or a copy of it: what a logger was made ready with.
    var metadataSetCount: Int { metadataSets.withLock { $0 } }
}
