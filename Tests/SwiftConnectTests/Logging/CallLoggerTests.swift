import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// The logger of one call (`ConnectLogger.forCall()`): asked once per call on the caller's side, and used for every
/// line of that call, those written on the transport's threads and by middlewares included.
final class CallLoggerTests: XCTestCase {
    /// The trace ID of the task that makes a call.
    private enum Trace {
        @TaskLocal static var id: String?
    }

    /// A logger whose call loggers tag each line with the trace ID of the task that started the call, and count how
    /// many call loggers were asked for. The client's own logger tags nothing.
    private struct TaggingLogger: ConnectLogger {
        let lines: MemoryLogger
        let calls: Counter
        var tag: String?

        func forCall() -> any ConnectLogger {
            calls.increment()
            return TaggingLogger(lines: lines, calls: calls, tag: Trace.id ?? "none")
        }

        func log(_ level: LogLevel, _ message: String) {
            lines.log(level, "[\(tag ?? "client")] \(message)")
        }
    }

    /// A middleware that writes one line through the call's logger on each attempt.
    private struct Noting: Middleware {
        func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next)
            -> Future<ConnectResponse>
        {
            context.logger.log(.info, "attempt \(context.attempt)")
            return next(request)
        }
    }

    private struct GetTodo: Connector {
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/todos/7" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
    }

    /// Each call asks the client's logger for its own once, on the caller's side (it reads the caller's task local),
    /// however many attempts it makes, and every line of the call goes through that one: the request's and the
    /// failed outcome's debug output, a middleware's line on each attempt, the retry loop's note that a one-shot body
    /// is not sent again.
    func testEachCallAsksForItsLoggerOnceOnTheCallersSideAndWritesEveryLineThroughIt() throws {
        // Given
        let lines = MemoryLogger()
        let calls = Counter()
        let transport = FakeTransport()
        transport.stub("/todos/7", with: [.status(503, headers: ["Retry-After": "0"])])
        transport.stub("/files/1", with: [.status(503, headers: ["Retry-After": "0"]), .status(200)])
        let connect = Connect(
            transport: transport, middlewares: [Noting()], retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            settings: Connect.Settings(logger: TaggingLogger(lines: lines, calls: calls)))
        let chunks = AsyncStream<Data> { continuation in
            continuation.yield(Data("made as it goes".utf8))
            continuation.finish()
        }
        let upload = ConnectRequest(
            method: .put, url: try XCTUnwrap(URL(string: "https://api.example.com/files/1")),
            body: .stream(ConnectRequest.OneShotStream(chunks)))

        // When: a call that fails after three attempts, with debug output, and one whose body cannot go again
        try Trace.$id.withValue("t-1") {
            XCTAssertThrowsError(try connect.request(GetTodo(), debugResponse: true).wait())
        }
        try Trace.$id.withValue("t-2") {
            let response = try connect.response(for: upload, options: RequestOptions(acceptsEveryStatus: true)).wait()
            XCTAssertEqual(response.statusCode, 503)
        }

        // Then
        XCTAssertEqual(calls.value, 2)
        let messages = lines.messages
        XCTAssertEqual(messages.count, 7, "\(messages)")
        XCTAssertEqual(
            messages.map { $0.prefix { $0 != " " } },
            ["[t-1]", "[t-1]", "[t-1]", "[t-1]", "[t-1]", "[t-2]", "[t-2]"], "\(messages)")
        XCTAssertTrue(messages[4].contains("503"), messages[4])
        XCTAssertTrue(messages[6].contains("not retried after attempt 1"), messages[6])
    }

    /// A call whose request cannot be built writes its debug output through the call's logger too.
    func testABuildFailuresDebugOutputGoesThroughTheCallsLogger() throws {
        // Given: a header value no request may carry
        struct Broken: Connector {
            var baseURL: URL { URL(string: "https://api.example.com")! }
            var endpoint: String { "/todos/7" }
            var method: HTTPMethod { .get }
            var headers: [HTTPHeader] { [HTTPHeader(name: "X-Bad", value: "a\u{0}b")] }
            var parameters: (any ParametersRepresentable)? { nil }
        }
        let lines = MemoryLogger()
        let calls = Counter()
        let connect = Connect(
            transport: FakeTransport(), settings: Connect.Settings(logger: TaggingLogger(lines: lines, calls: calls)))

        // When
        try Trace.$id.withValue("t-3") {
            XCTAssertThrowsError(try connect.request(Broken(), debugResponse: true).wait())
        }

        // Then
        XCTAssertEqual(calls.value, 1)
        XCTAssertEqual(lines.messages.count, 1, "\(lines.messages)")
        XCTAssertTrue(lines.messages.allSatisfy { $0.hasPrefix("[t-3] ") }, "\(lines.messages)")
    }

    /// A logger that does not implement it is its own call logger: its lines are as before.
    func testALoggerWithoutItsOwnCallLoggerIsUsedAsItIs() throws {
        // Given
        let lines = MemoryLogger()
        let transport = FakeTransport()
        transport.stub("/todos/7", with: .status(200))
        let connect = Connect(transport: transport, settings: Connect.Settings(logger: lines))

        // When
        _ = try connect.request(GetTodo(), debugResponse: true).wait()

        // Then: the request's and the response's debug output
        XCTAssertEqual(lines.messages.count, 2, "\(lines.messages)")
        XCTAssertTrue(lines.forCall() is MemoryLogger)
    }
}

/// The process-wide logger (``ConnectLogging/logger``) is let go outside its lock when replaced: a logger that says,
/// as it closes, that it did (its deinit reading the logger) would otherwise wait for that lock for ever.
final class ProcessLoggerTests: XCTestCase {
    /// Runs `onRelease` when freed.
    private final class ReleaseProbeLogger: ConnectLogger, @unchecked Sendable {
        // @unchecked Sendable: `onRelease` is set once, in `init`, and only read in `deinit`.
        let onRelease: @Sendable () -> Void
        init(onRelease: @escaping @Sendable () -> Void) { self.onRelease = onRelease }
        deinit { onRelease() }
        func log(_ level: LogLevel, _ message: String) {}
    }

    func testAReplacedLoggerIsReleasedOutsideTheLock() {
        let original = ConnectLogging.logger
        defer { ConnectLogging.logger = original }
        // Given: the process logger holds the last reference to a logger that reads the process logger when freed
        let readTheLogger = Recorder<Bool>()
        ConnectLogging.logger = ReleaseProbeLogger {
            // Read on another thread: on this one, a lock still held would hang the test instead of failing it.
            let read = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                _ = ConnectLogging.logger
                read.signal()
            }
            readTheLogger.append(read.wait(timeout: .now() + 5) == .success)
        }
        // When
        ConnectLogging.logger = MemoryLogger()
        // Then
        XCTAssertEqual(readTheLogger.values, [true], "the lock was free while the old logger was released")
    }
}
