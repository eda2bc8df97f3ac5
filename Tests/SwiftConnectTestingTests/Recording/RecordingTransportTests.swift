import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Recording real exchanges with `LocalServer` and `URLSessionTransport`, then replaying them with the server gone,
/// through `Connect`.
final class RecordingTransportTests: XCTestCase {
    private var server: LocalServer!
    private var folder: URL!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        folder = try makeRecordingFolder(for: self)
    }

    override func tearDown() {
        server.stop()
        server = nil
    }

    private func endpoint(_ path: String, method: HTTPMethod = .get, body: Parameter? = nil) -> RecordingEndpoint {
        RecordingEndpoint(baseURL: server.baseURL, endpoint: path, method: method, parameters: body)
    }

    private func transport(_ mode: RecordingMode, named name: String = "exchange") -> RecordingTransport {
        RecordingTransport(
            fileURL: folder.appendingPathComponent(name + ".har"),
            wrapping: mode == .replay ? nil : URLSessionTransport(), mode: mode)
    }

    // MARK: - Record, then replay

    func testReplayWithTheServerStoppedGivesByteIdenticalBodies() throws {
        // Given: JSON, an echoed POST body and binary bytes, recorded from a real server
        server.route("GET", "/todos") { _ in .json(string: #"{"todos":[{"id":1,"title":"Milk"}]}"#) }
        server.route("POST", "/echo") { request in .data(request.body, contentType: "application/json") }
        let binary = Data((0...255).map { UInt8($0) } + [0xFF, 0xFE, 0x00])
        server.route("GET", "/blob") { _ in .data(binary) }
        let calls = [
            endpoint("/todos"),
            endpoint(
                "/echo", method: .post, body: .body(Data(#"{"b":2,"a":"é"}"#.utf8), contentType: "application/json")),
            endpoint("/blob"),
        ]
        let recorder = Connect(transport: transport(.record), retryPolicy: nil)
        let recorded = try calls.map { try recorder.request($0).wait() }
        server.stop()
        // When: replayed by a transport that sends nothing
        let replayer = transport(.replay)
        let replay = Connect(transport: replayer, retryPolicy: nil)
        let replayed = try calls.map { try replay.request($0).wait() }
        // Then
        XCTAssertEqual(recorded[2], binary)
        XCTAssertEqual(replayed, recorded)
        XCTAssertEqual(replayed[1], Data(#"{"b":2,"a":"é"}"#.utf8))
        XCTAssertNoThrow(try replayer.verifyAllRecordingsUsed())
    }

    func testAHeadKeepsTheLengthTheServerAnnounced() throws {
        // Given: the head of a 100 kB resource, recorded
        server.route("*", "/big") { _ in .data(Data(count: 100_000)) }
        let recorder = Connect(transport: transport(.record), retryPolicy: nil)
        let recorded = try recorder.response(for: endpoint("/big", method: .head)).wait()
        server.stop()
        // When
        let replayed = try Connect(transport: transport(.replay), retryPolicy: nil)
            .response(for: endpoint("/big", method: .head)).wait()
        // Then: the length of the resource, not of the (empty) body
        XCTAssertEqual(recorded.header("Content-Length"), "100000")
        XCTAssertEqual(replayed.header("Content-Length"), "100000")
        XCTAssertEqual(replayed.data, Data())
    }

    func testReplayedResponseKeepsStatusAndHeaders() throws {
        // Given
        server.route("GET", "/teapot") { _ in
            LocalServer.Response.json(string: #"{"message":"short and stout"}"#, status: 418).withHeader("X-Pot", "tea")
        }
        let recorder = Connect(transport: transport(.record), retryPolicy: nil)
        let live = try failure(of: recorder.request(endpoint("/teapot")))
        server.stop()
        // When
        let replay = Connect(transport: transport(.replay), retryPolicy: nil)
        let replayed = try failure(of: replay.request(endpoint("/teapot")))
        // Then: the error handler sees the same answer
        XCTAssertEqual(replayed.kind, live.kind)
        XCTAssertEqual(replayed.statusCode, 418)
        XCTAssertEqual(replayed.message, live.message)
        XCTAssertEqual(replayed.headers["X-Pot"], "tea")
    }

    func testRedirectReplaysTheFinalAnswerAndItsURL() throws {
        // Given: a redirect URLSession follows by itself, recorded as one exchange
        server.route("GET", "/old") { _ in .redirect(to: "/new?x=1") }
        server.route("GET", "/new") { _ in .text("moved here") }
        let recorded = try Connect(transport: transport(.record), retryPolicy: nil).response(for: endpoint("/old"))
            .wait()
        server.stop()
        // When
        let replayed = try Connect(transport: transport(.replay), retryPolicy: nil).response(for: endpoint("/old"))
            .wait()
        // Then
        XCTAssertEqual(replayed.data, Data("moved here".utf8))
        XCTAssertEqual(replayed.data, recorded.data)
        XCTAssertEqual(replayed.response.url, recorded.response.url)
        XCTAssertEqual(replayed.response.url?.path, "/new")
    }

    func testRetried503ThenSuccessReplaysInRecordedOrder() throws {
        // Given: a route that answers 503 once, then 200, recorded through the client's retry loop
        let served = Protected(0)
        server.route("GET", "/flaky") { _ in
            let count = served.withLock { count -> Int in
                count += 1
                return count
            }
            return count == 1 ? .json(string: #"{"message":"warming up"}"#, status: 503) : .json(["ok": true])
        }
        let recordClock = ImmediateRetryClock()
        let recordingTransport = transport(.record)
        let recorder = Connect(
            transport: recordingTransport, retryPolicy: RetryPolicy(jitter: RetryPolicy.noJitter, clock: recordClock))
        XCTAssertEqual(
            try recorder.request(endpoint("/flaky")).decoded(toType: [String: Bool].self).wait(), ["ok": true])
        XCTAssertEqual(recordingTransport.entries.map(\.response.status), [503, 200])
        server.stop()
        // When
        let clock = ImmediateRetryClock()
        let replayer = transport(.replay)
        let replay = Connect(transport: replayer, retryPolicy: RetryPolicy(jitter: RetryPolicy.noJitter, clock: clock))
        let body = try replay.request(endpoint("/flaky")).decoded(toType: [String: Bool].self).wait()
        // Then: the retry saw the 503 first, then the 200
        XCTAssertEqual(body, ["ok": true])
        XCTAssertEqual(clock.delays, [0.5])
        XCTAssertEqual(replayer.unusedEntries.count, 0)
    }

    func testRetryAfterThirtySecondsReplaysWithoutWaitingOnTheTestClock() throws {
        // Given: a 429 asking for 30 s, then a 200, recorded on the test kit's clock
        let served = Protected(0)
        server.route("GET", "/limited") { _ in
            let count = served.withLock { count -> Int in
                count += 1
                return count
            }
            return count == 1 ? LocalServer.Response.status(429).withHeader("Retry-After", "30") : .text("done")
        }
        let policy = { (clock: ImmediateRetryClock) in RetryPolicy(jitter: RetryPolicy.noJitter, clock: clock) }
        _ = try Connect(transport: transport(.record), retryPolicy: policy(ImmediateRetryClock()))
            .request(endpoint("/limited")).wait()
        server.stop()
        // When
        let clock = ImmediateRetryClock()
        let body = try Connect(transport: transport(.replay), retryPolicy: policy(clock)).request(endpoint("/limited"))
            .wait(timeout: 5)
        // Then: the replayed 429 made the policy ask for 30 s, which the test clock did not wait
        XCTAssertEqual(body, Data("done".utf8))
        XCTAssertEqual(clock.delays, [30])
    }

    func testRefusedConnectionIsReplayedAsTheSameConnectErrorKind() throws {
        // Given: a port nobody listens on any more
        let gone = try LocalServer.started()
        let url = gone.baseURL
        gone.stop()
        let call = RecordingEndpoint(baseURL: url, endpoint: "/anything")
        let recordingTransport = transport(.record)
        let live = try failure(of: Connect(transport: recordingTransport, retryPolicy: nil).request(call))
        XCTAssertEqual(live.kind, .cannotConnect, "\(live)")
        XCTAssertEqual(recordingTransport.entries.first?.failure?.kind, "cannotConnect")
        // When
        let replayed = try failure(of: Connect(transport: transport(.replay), retryPolicy: nil).request(call))
        // Then
        XCTAssertEqual(replayed.kind, live.kind)
        XCTAssertEqual(replayed.urlError?.code, live.urlError?.code)
        XCTAssertTrue(replayed.isTransportFailure)
    }

    // MARK: - Failing closed

    func testUnmatchedRequestFailsNamingTheNearestRecordingAndTheDifference() throws {
        // Given
        server.route("GET", "/items") { request in .json(["page": request.queryItem("page") ?? ""]) }
        server.route("GET", "/users") { _ in .json([String]()) }
        let recorder = Connect(transport: transport(.record), retryPolicy: nil)
        _ = try recorder.request(endpoint("/items?page=1")).wait()
        _ = try recorder.request(endpoint("/users")).wait()
        server.stop()
        // When
        let replay = Connect(transport: transport(.replay))
        let error = try failure(of: replay.request(endpoint("/items?page=2")))
        // Then: not retried, and the message says which recording is nearest and how it differs
        XCTAssertEqual(error.attempts, 1)
        let recording = try recordingError(of: error)
        XCTAssertEqual(recording.reason, .noMatch)
        XCTAssertEqual(recording.nearest?.url.path, "/items")
        XCTAssertEqual(recording.differences, ["query: request has [page=2], recording has [page=1]"])
        XCTAssertTrue(error.message.contains("GET \(server.baseURL.absoluteString)/items?page=2"), error.message)
        XCTAssertTrue(error.message.contains("Nearest recorded: GET"), error.message)
    }

    func testReplayWithoutARecordingFailsSayingHowToRecordIt() throws {
        // Given
        let replay = Connect(transport: transport(.replay, named: "never-recorded"), retryPolicy: nil)
        // When
        let error = try failure(of: replay.request(endpoint("/todos")))
        // Then
        let recording = try recordingError(of: error)
        XCTAssertEqual(recording.reason, .missingRecording)
        XCTAssertTrue(recording.message.contains("never-recorded.har"), recording.message)
        XCTAssertTrue(recording.message.contains("SWIFTCONNECT_RECORD_MODE=record"), recording.message)
        XCTAssertEqual(server.requestCount, 0)
    }

    func testUnusedRecordingsAreReported() throws {
        // Given: two exchanges recorded, one replayed
        server.route("GET", "/a") { _ in .text("a") }
        server.route("GET", "/b") { _ in .text("b") }
        let recorder = Connect(transport: transport(.record), retryPolicy: nil)
        _ = try recorder.request(endpoint("/a")).wait()
        _ = try recorder.request(endpoint("/b")).wait()
        let replayer = transport(.replay)
        _ = try Connect(transport: replayer, retryPolicy: nil).request(endpoint("/a")).wait()
        // Then
        XCTAssertEqual(replayer.unusedEntries.map(\.request.url), ["\(server.baseURL.absoluteString)/b"])
        XCTAssertThrowsError(try replayer.verifyAllRecordingsUsed()) { error in
            XCTAssertEqual((error as? RecordingError)?.reason, .unusedRecordings)
            XCTAssertTrue("\(error)".contains("/b"), "\(error)")
        }
    }

    // MARK: - Modes

    func testRecordMissingReplaysWhatMatchesAndRecordsTheRest() throws {
        // Given: /a recorded
        server.route("GET", "/a") { _ in .text("a") }
        server.route("GET", "/b") { _ in .text("b") }
        _ = try Connect(transport: transport(.record), retryPolicy: nil).request(endpoint("/a")).wait()
        // When
        let topUp = transport(.recordMissing)
        let connect = Connect(transport: topUp, retryPolicy: nil)
        let bodies = try [endpoint("/a"), endpoint("/b")].map { try connect.request($0).wait() }
        // Then: /a came from the file, /b from the server, and both are in the file now
        XCTAssertEqual(bodies, [Data("a".utf8), Data("b".utf8)])
        XCTAssertEqual(server.requestCount(for: "GET", path: "/a"), 1)
        XCTAssertEqual(server.requestCount(for: "GET", path: "/b"), 1)
        let har = try HAR(contentsOf: topUp.fileURL)
        XCTAssertEqual(har.log.entries.map { URL(string: $0.request.url)?.path }, ["/a", "/b"])
    }

    func testModeComesFromTheEnvironmentVariable() {
        let variable = RecordingMode.environmentVariable
        XCTAssertEqual(variable, "SWIFTCONNECT_RECORD_MODE")
        XCTAssertEqual(RecordingMode.fromEnvironment([:]), .replay)
        XCTAssertEqual(RecordingMode.fromEnvironment([variable: "record"]), .record)
        XCTAssertEqual(RecordingMode.fromEnvironment([variable: "REPLAY"]), .replay)
        XCTAssertEqual(RecordingMode.fromEnvironment([variable: "record_missing"]), .recordMissing)
        XCTAssertEqual(RecordingMode.fromEnvironment([variable: "recordMissing"]), .recordMissing)
        XCTAssertEqual(RecordingMode.fromEnvironment([variable: "new_episodes"]), .recordMissing)
        XCTAssertEqual(RecordingMode.fromEnvironment([variable: "sometimes"]), .replay)
        XCTAssertEqual(RecordingMode.fromEnvironment([variable: "sometimes"], fallback: .record), .record)
    }

    /// A mode misspelt in the environment replays, as documented, but the errors of that replay say so: they tell
    /// the reader to record with the variable they believe they set.
    func testAModeTheEnvironmentMisspellsIsNamedInTheReplaysErrors() throws {
        // Given: the variable set to no mode, and a transport taking its mode from it
        let variable = RecordingMode.environmentVariable
        let previous = ProcessInfo.processInfo.environment[variable]
        setenv(variable, "recrod", 1)
        defer {
            if let previous { setenv(variable, previous, 1) } else { unsetenv(variable) }
        }
        let missing = RecordingTransport(fileURL: folder.appendingPathComponent("missing.har"))
        let emptyFile = folder.appendingPathComponent("empty.har")
        try HAR().encoded().write(to: emptyFile)
        let empty = RecordingTransport(fileURL: emptyFile)
        // When
        let request = try connectRequest(.get, "http://api.test/todos")
        let errors = [
            try failure(of: missing.send(request, transfer: TransferOptions())),
            try failure(of: empty.send(request, transfer: TransferOptions())),
        ]
        // Then
        XCTAssertEqual(missing.mode, .replay)
        for error in errors {
            XCTAssertTrue(error.message.contains(#"\#(variable) is "recrod", which names no mode"#), error.message)
        }
    }

    func testDefaultFileIsNamedAfterTheTestInARecordingsFolderBesideIt() {
        let transport = RecordingTransport(mode: .replay)
        let expected = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("__Recordings__")
            .appendingPathComponent(
                "RecordingTransportTests.testDefaultFileIsNamedAfterTheTestInARecordingsFolderBesideIt.har")
        XCTAssertEqual(transport.fileURL, expected)
        XCTAssertEqual(
            RecordingTransport("sign in/out", directory: folder, mode: .replay).fileURL.lastPathComponent,
            "sign_in_out.har")
    }

    // MARK: - Time

    func testReplayTakesTheRecordedTimeOnlyWhenAsked() throws {
        // Given: an exchange recorded as taking 150 ms
        let file = folder.appendingPathComponent("slow.har")
        let request = try connectRequest(.get, "http://api.test/slow")
        let recorder = RecordingTransport(
            fileURL: file, wrapping: FakeTransport.answering(.json(string: "{}")), mode: .record)
        _ = try recorder.send(request, transfer: TransferOptions()).wait()
        var har = try HAR(contentsOf: file)
        har.log.entries[0].timings = HAR.Timings(send: 0, wait: 150, receive: 0)
        har.log.entries[0].time = 150
        try har.encoded().write(to: file)
        // When
        let instant = RecordingTransport(fileURL: file, mode: .replay).send(request, transfer: TransferOptions())
        let started = Date()
        let slow = RecordingTransport(fileURL: file, mode: .replay, replaysLatencies: true)
            .send(request, transfer: TransferOptions())
        // Then
        XCTAssertTrue(instant.isCompleted)
        XCTAssertFalse(slow.isCompleted)
        XCTAssertEqual(try slow.wait().statusCode, 200)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.15)
    }

    // MARK: - Transfer options and cancellation

    func testReplayHonoursTheResponseSizeLimit() throws {
        // Given
        server.route("GET", "/big") { _ in .text(String(repeating: "x", count: 64)) }
        _ = try Connect(transport: transport(.record), retryPolicy: nil).request(endpoint("/big")).wait()
        let request = try connectRequest(.get, "\(server.baseURL.absoluteString)/big")
        // When
        let error = try failure(of: transport(.replay).send(request, transfer: TransferOptions(maxResponseBytes: 16)))
        // Then
        XCTAssertEqual(error.kind, .responseTooLarge)
    }

    func testCancellingARecordedExchangeCancelsTheLiveOneAndRecordsNothing() throws {
        // Given: an upstream that never answers
        let fake = FakeTransport.answering(.never)
        let recorder = RecordingTransport(
            fileURL: folder.appendingPathComponent("cancelled.har"), wrapping: fake, mode: .record)
        let future = recorder.send(try connectRequest(.get, "http://api.test/slow"), transfer: TransferOptions())
        _ = try fake.requestsReceived(count: 1).wait()
        // When
        future.cancel()
        // Then
        XCTAssertEqual(try failure(of: future).kind, .cancelled)
        XCTAssertEqual(fake.cancelledRequests.count, 1)
        XCTAssertEqual(recorder.entries.count, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: recorder.fileURL.path))
    }

    // MARK: - Files

    func testADownloadToAFileIsRecordedFromTheFileAndReplayedIntoOne() throws {
        // Given: a binary body downloaded to a file, recorded
        let bytes = LocalServer.generatedBytes(count: 200_000, seed: 9)
        server.route("GET", "/report") { _ in .data(bytes) }
        let request = try connectRequest(.get, "\(server.baseURL.absoluteString)/report")
        let recorded = folder.appendingPathComponent("recorded.bin")
        let live = try transport(.record).send(request, transfer: TransferOptions(destination: recorded)).wait()
        XCTAssertEqual(live.fileURL, recorded)
        server.stop()
        // When: replayed into another file, which exists already
        let replayedFile = folder.appendingPathComponent("replayed.bin")
        try Data("old".utf8).write(to: replayedFile)
        let replayer = transport(.replay)
        let replayed = try replayer.send(request, transfer: TransferOptions(destination: replayedFile)).wait()
        // Then: the same bytes, in the file, replaced
        XCTAssertEqual(replayed.fileURL, replayedFile)
        XCTAssertEqual(replayed.data, Data())
        XCTAssertEqual(try Data(contentsOf: recorded), bytes)
        XCTAssertEqual(try Data(contentsOf: replayedFile), bytes)
        XCTAssertNoThrow(try replayer.verifyAllRecordingsUsed())
    }

    /// A replayed download's progress report comes once its file is in place, as an engine's last one does: it came
    /// before, while the destination still held the old file.
    func testAReplayedDownloadsProgressComesOnceTheFileIsInPlace() throws {
        // Given: a download recorded
        server.route("GET", "/report") { _ in .data(Data("new report".utf8)) }
        let request = try connectRequest(.get, "\(server.baseURL.absoluteString)/report")
        _ = try transport(.record).send(request, transfer: TransferOptions()).wait()
        server.stop()
        let destination = folder.appendingPathComponent("replayed.bin")
        try Data("old report".utf8).write(to: destination)
        let seen = Protected<[Data?]>([])
        // When: replayed with a progress report
        let transfer = TransferOptions(
            destination: destination,
            progress: { _ in seen.withLock { $0.append(try? Data(contentsOf: destination)) } })
        _ = try transport(.replay).send(request, transfer: transfer).wait()
        // Then: the file held the new body when the report came
        XCTAssertEqual(seen.snapshot, [Data("new report".utf8)])
    }

    func testAReplayedDownloadIntoADirectoryFailsAsTheEnginesDo() throws {
        // Given
        server.route("GET", "/report") { _ in .data(Data("report".utf8)) }
        let request = try connectRequest(.get, "\(server.baseURL.absoluteString)/report")
        _ = try transport(.record).send(request, transfer: TransferOptions()).wait()
        server.stop()
        // When: the destination is a directory
        let error = try failure(of: transport(.replay).send(request, transfer: TransferOptions(destination: folder)))
        // Then: refused before anything is written
        XCTAssertEqual(error.kind, .fileAccess)
        XCTAssertTrue(error.message.contains("directory"), error.message)
    }

    func testABodyFromAFileIsRecordedAndMatchedByItsBytes() throws {
        // Given: an upload from a file, recorded
        server.route("POST", "/upload") { request in .json(["received": request.body.count]) }
        let upload = folder.appendingPathComponent("upload.bin")
        try LocalServer.generatedBytes(count: 70_000, seed: 4).write(to: upload)
        let request = try connectRequest(.post, "\(server.baseURL.absoluteString)/upload")
        let live = try transport(.record).send(request, transfer: TransferOptions(bodyFile: upload)).wait()
        XCTAssertEqual(String(decoding: live.data, as: UTF8.self), #"{"received":70000}"#)
        server.stop()
        // When: the same file replayed, then another
        let replayed = try transport(.replay).send(request, transfer: TransferOptions(bodyFile: upload)).wait()
        let other = folder.appendingPathComponent("other.bin")
        try LocalServer.generatedBytes(count: 70_000, seed: 5).write(to: other)
        let error = try failure(of: transport(.replay).send(request, transfer: TransferOptions(bodyFile: other)))
        // Then
        XCTAssertEqual(replayed.data, live.data)
        XCTAssertEqual(try recordingError(of: error).reason, .noMatch)
    }

    // MARK: - Parallel use

    func testConcurrentRequestsAreAllRecordedInOneValidFile() throws {
        // Given
        server.route("GET", "/n/:id") { request in .text(request.pathParameters["id"] ?? "") }
        let recordingTransport = transport(.record)
        let connect = Connect(transport: recordingTransport, retryPolicy: nil)
        // When: 16 requests at once
        let futures = (0..<16).map { connect.request(endpoint("/n/\($0)")) }
        let bodies = try futures.map { try $0.wait() }
        // Then: every exchange is in the file, which parses
        XCTAssertEqual(bodies, (0..<16).map { Data("\($0)".utf8) })
        let har = try HAR(contentsOf: recordingTransport.fileURL)
        XCTAssertEqual(Set(har.log.entries.compactMap(\.response.content.text)), Set((0..<16).map { "\($0)" }))
        server.stop()
        let replay = Connect(transport: transport(.replay), retryPolicy: nil)
        let replayed = try (0..<16).reversed().map { try replay.request(endpoint("/n/\($0)")).wait() }
        XCTAssertEqual(replayed, (0..<16).reversed().map { Data("\($0)".utf8) })
    }
}
