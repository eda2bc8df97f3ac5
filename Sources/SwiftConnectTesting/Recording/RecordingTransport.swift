import Foundation
import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A ``SwiftConnect/Transport`` that records real exchanges to a HAR file once, then answers from it for ever: the
/// test kit's cassette recorder, in the manner of Ruby's VCR, vcrpy and go-vcr.
///
/// It wraps any transport (``SwiftConnect/URLSessionTransport``, the AsyncHTTPClient engine, one of yours) and sits
/// where the network would, so every middleware, retry and error handler of ``SwiftConnect/Connect`` runs as in
/// production:
///
/// ```swift
/// final class TodoTests: XCTestCase {
///     func testListsTodos() throws {
///         // Replays __Recordings__/TodoTests.testListsTodos.har beside this file; records it when run with
///         // SWIFTCONNECT_RECORD_MODE=record.
///         let transport = RecordingTransport(wrapping: URLSessionTransport())
///         let connect = Connect(transport: transport)
///         let todos = try connect.request(ListTodos()).decoded(toType: [Todo].self).wait()
///         XCTAssertEqual(todos.count, 3)
///         XCTAssertNoThrow(try transport.verifyAllRecordingsUsed())
///     }
/// }
/// ```
///
/// - **Modes** (``RecordingMode``): ``RecordingMode/replay`` by default, which sends nothing and fails a request the
///   recording does not hold (what CI runs); ``RecordingMode/record`` sends everything and rewrites the file;
///   ``RecordingMode/recordMissing`` replays what it can and records the rest. `SWIFTCONNECT_RECORD_MODE` picks the
///   mode of every transport made without one.
/// - **Matching** (``RequestMatcher``): method, URL and body by default, JSON keys and query items of different names
///   in any order. The n-th identical request gets the n-th recorded answer, so a retry replays its 503 and then its
///   200. A request no recording answers fails with a ``SwiftConnect/ConnectError`` of kind `.transport` whose
///   `underlyingError` is a ``RecordingError`` naming the nearest recorded request and what differs.
/// - **Failures**: a request that got no response (refused, timed out, reset) is recorded in `_failure` and replays
///   as a ``SwiftConnect/ConnectError`` of the same kind, with the same `URLError` code underneath.
/// - **Secrets** never reach the file: credential and cookie headers, secret query items, JSON and form fields, an
///   answer's XML elements and attributes (`&lt;redacted:password&gt;` there, so that it is still XML), user
///   info and `Set-Cookie` values become placeholders (`<redacted:Authorization>`) by the library's own rules, and an
///   echo of a secret value anywhere else, in a binary body too, becomes `<redacted>`. A body that is or claims to be
///   JSON (declared so, or of no declared type and starting with `{` or `[`) but cannot be read (cut short, or nested
///   deeper than 128 levels, where the library's logs stop reading it too) is recorded whole as
///   `<redacted: unreadable JSON body>`, since its secrets cannot be found (text of another declared type is kept,
///   unless it names a secret): a request with such a body matches a recording of the same call with any such body,
///   and such an answer replays as the placeholder. Matching compares the placeholders, so replay works with any token; `placeholderValues` puts values
///   back into replayed responses (and their `Content-Length`, when they have one, is the filled body's).
/// - **Files**: HAR 1.2 (a browser's export replays too), pretty-printed with sorted keys, written atomically after
///   each recorded exchange. One transport owns one file: give each test its own (the default name is the test
///   file's and the test method's, not the test class's, so two classes of one file with a test of the same name
///   need a name for one of them), and tests can run in parallel. Transports of one process recording one file (two
///   clients of a test, made together or one after the other) each add to what the others wrote, rather than replace
///   it; a file no transport of the process wrote is an earlier run's, replaced. Two transports replaying one file
///   each replay it from its start: give each client its own file, or share one transport between them. A recorded
///   body is held to its answer's `Content-Length`, as an engine holds a live one (unless the length counts other
///   bytes: a content-encoded body, an answer to `HEAD`, a 204 or 304, a download's error page recorded cut): one of
///   another length (edited by hand, left out of a browser's export) fails with
///   ``RecordingError/Reason/unreadableRecording``.
///
/// - **Streams**: a streamed response (``SwiftConnect/TransferOptions/streaming``: server-sent events, JSON Lines)
///   is recorded with the time and size of each piece (`_chunks`), and a stream that broke after some pieces with why
///   (`_bodyFailure`: a stream the reader stopped reading too, so that a replay read further fails there rather than
///   end as if complete); replay hands the pieces over in order, then the same typed error. A one-shot request
///   body (from an `InputStream` or an async sequence) is read whole for matching and recorded like any body; one
///   that gives more or fewer bytes than the length it announces fails as every engine fails it
///   (``SwiftConnect/ConnectError/Kind/invalidRequest``), neither matched nor sent.
/// - **Time**: replay is instant, or, with `replaysLatencies`, takes each exchange's recorded time, a stream's pieces
///   coming at their recorded moments (a test of an idle timeout or of a reconnection). ``retryClock`` makes the
///   retry policy's waits instant in replay. Instant replay still keeps the deadlines by the recorded times: an
///   answer recorded after the request's `timeoutInterval` fails with ``SwiftConnect/ConnectError/Kind/timedOut`` at
///   once, and a stream's pieces stop, with the same error the client gives, at the first one recorded after its
///   deadline or after a silence longer than its `StreamingOptions.idleTimeout`.
///
/// - **Files**: a body sent from a file is read whole for matching and recorded like any body; a download to a file
///   is recorded from the file the wrapped transport wrote beside the destination, which gets it once the exchange is
///   in the recording (a recording that cannot be written fails the call, the destination as it was, and the last
///   progress report comes once it is in place); replay writes the recorded body to the destination
///   (after the same checks of it), so the caller gets the response with its ``SwiftConnect/ConnectResponse/fileURL``.
///   A download answered with an error status keeps the first MiB of its error page, as every transport does, and a
///   page the wrapped transport cut there is recorded as cut (`_bodyCut`): replayed, the error says so, as it did live.
public final class RecordingTransport: Transport, Sendable {
    /// The HAR file this transport reads and writes.
    public let fileURL: URL
    /// What the transport does with requests.
    public let mode: RecordingMode
    /// How a request finds its recording.
    public let matcher: RequestMatcher
    /// Whether a replayed answer comes after the exchange's recorded `time`, rather than at once.
    public let replaysLatencies: Bool

    /// The transport that sends, in the modes that record.
    let upstream: (any Transport)?
    /// Values for `<redacted:Name>` placeholders in replayed responses, by name.
    let placeholderValues: [String: String]
    /// The recording in memory, and which of its entries this run has used.
    let state: Protected<State>
    /// Keeps two writes of a recording file from crossing, those of two transports recording one file too: each
    /// reads the file, then writes it with its new entries added.
    static let writing = ExclusiveSection()
    /// The exchanges being recorded, not yet written.
    let recording = RecordingsInFlight()

    struct State {
        var entries: [HAR.Entry] = []
        /// Each entry's request, redacted as matching wants it; `nil` for one whose URL or body does not parse.
        var requests: [RecordedRequest?] = []
        /// Whether each entry has answered a request (or was recorded) in this run.
        var used: [Bool] = []
        /// Why the file cannot be replayed, if it cannot.
        var loadFailure: RecordingError?
        /// Secret values responses recorded so far handed out (cookies, tokens): hidden in later responses too.
        var handedOutSecrets: [String] = []
        /// The file's bytes as this transport last read or wrote them; `nil` when there was none.
        var fileBytes: Data?
        /// The entries this transport last wrote to the file (or read from it, in record-missing mode): what its next
        /// write adds to, unless the file has changed since (``fileBytes``).
        var fileEntries: [HAR.Entry] = []
        /// Entries recorded and not yet written.
        var unwritten: [HAR.Entry] = []
        /// The file's `log.comment` as last read or written, kept by each write (a note on how to re-record it).
        var fileComment: String?
    }

    /// A transport recording to, or replaying from, the HAR file at `fileURL`.
    ///
    /// - Parameters:
    ///   - fileURL: The HAR file. Read now in the modes that replay (a missing or unreadable file fails the requests
    ///     that need it, with ``RecordingError``); written after each recorded exchange, its folder created if needed.
    ///   - transport: The transport that sends requests when recording; `nil` for a transport that only replays
    ///     (recording then fails with ``RecordingError/Reason/noTransport``).
    ///   - mode: What to do with requests; by default ``RecordingMode/default``: the environment's
    ///     `SWIFTCONNECT_RECORD_MODE`, else replay.
    ///   - matcher: How a request finds its recording; ``RequestMatcher/default`` by default.
    ///   - placeholderValues: Values to put back in replayed responses, by the name in their placeholder:
    ///     `["access_token": "test-token"]` fills `<redacted:access_token>`. Give values of at least four characters:
    ///     a request that sends a filled value back (a token in a later path) is matched with it hidden, and, as
    ///     everywhere secrets are hidden by value, a shorter value is not looked for (`"t1"`: that request then
    ///     finds no recording).
    ///   - replaysLatencies: Whether a replayed answer waits for the exchange's recorded `time` (a test of a
    ///     timeout or of a loading state); `false`, answering at once, by default.
    public init(
        fileURL: URL,
        wrapping transport: (any Transport)? = nil,
        mode: RecordingMode = .default,
        matcher: RequestMatcher = .default,
        placeholderValues: [String: String] = [:],
        replaysLatencies: Bool = false
    ) {
        self.fileURL = fileURL
        self.upstream = transport
        self.mode = mode
        self.matcher = matcher
        self.placeholderValues = placeholderValues
        self.replaysLatencies = replaysLatencies
        retryClock = mode == .replay ? ImmediateRetryClock() : DispatchRetryClock()
        var state = State()
        if mode == .record {
            // Read to notice another transport writing the file meanwhile; the entries are replaced, unless a
            // transport of this run wrote them (an earlier client of the same test): those are added to.
            state.fileBytes = try? Data(contentsOf: fileURL)
            let har = state.fileBytes.flatMap { try? HAR(data: $0) }
            state.fileComment = har?.log.comment
            if Self.wasWrittenThisRun(fileURL) {
                state.fileEntries = har?.log.entries ?? []
            } else if state.fileBytes != nil, transport != nil {
                // An earlier run's file is replaced now, not at the first exchange: a test that no longer makes the
                // requests it recorded would otherwise leave them, which a replay then reports as never used. A
                // transport that wraps nothing cannot record them again (a browser's HAR export): its file is left.
                var emptied = HAR(entries: [])
                emptied.log.comment = state.fileComment
                if let data = try? emptied.encoded(), (try? Self.write(data, to: fileURL)) != nil {
                    state.fileBytes = data
                }
            }
        } else {
            state = RecordingTransport.load(fileURL, required: mode == .replay)
        }
        self.state = Protected(state)
    }

    /// A transport for the test calling it, its file named after the test: `__Recordings__/TodoTests.testList.har`
    /// beside the test file by default.
    ///
    /// ```swift
    /// let transport = RecordingTransport(wrapping: URLSessionTransport())       // this test's own file
    /// let named = RecordingTransport("TodoTests.login", wrapping: URLSessionTransport())  // TodoTests.login.har
    /// ```
    ///
    /// A name is one test's file still: two tests of a run that record under one name add to one file, and each
    /// one's replay then finds the other's recordings unused (``verifyAllRecordingsUsed()``).
    ///
    /// The default name is the test *file*'s name and the test method's (`#filePath` and `#function`), not the test
    /// class's: a default argument has no way to name the type its caller belongs to. Two test classes in one file
    /// with a method of the same name therefore share one file, and each recording overwrites the other's: give one
    /// of them a name of its own, as `RecordingTransport("OtherTodoTests.testList", wrapping: URLSessionTransport())`.
    ///
    /// - Parameters:
    ///   - name: The file's name without `.har`; by default the test file's name and the test method's, as
    ///     `TodoTests.testList` for `testList()` in `TodoTests.swift`, whichever class it is in. Characters other
    ///     than letters, digits, `.`, `-` and `_` become `_`.
    ///   - directory: The folder of the file; by default `__Recordings__` beside the test file.
    ///   - transport: The transport that sends requests when recording.
    ///   - mode: What to do with requests; ``RecordingMode/default`` by default.
    ///   - matcher: How a request finds its recording.
    ///   - placeholderValues: Values to put back in replayed responses, by placeholder name; of at least four
    ///     characters each, as for ``init(fileURL:wrapping:mode:matcher:placeholderValues:replaysLatencies:)``.
    ///   - replaysLatencies: Whether a replayed answer waits for the exchange's recorded `time`.
    ///   - filePath: The test file; leave the default.
    ///   - function: The test; leave the default.
    public convenience init(
        _ name: String? = nil,
        directory: URL? = nil,
        wrapping transport: (any Transport)? = nil,
        mode: RecordingMode = .default,
        matcher: RequestMatcher = .default,
        placeholderValues: [String: String] = [:],
        replaysLatencies: Bool = false,
        filePath: String = #filePath,
        function: String = #function
    ) {
        self.init(
            fileURL: RecordingTransport.fileURL(
                name: name, directory: directory, filePath: filePath, function: function),
            wrapping: transport, mode: mode, matcher: matcher, placeholderValues: placeholderValues,
            replaysLatencies: replaysLatencies)
    }

    /// The recorded exchanges, in order, as the file holds them (after this run's recordings, in the modes that
    /// record).
    public var entries: [HAR.Entry] { state.withLock { $0.entries } }

    /// The recorded exchanges no request has used in this run: a recording left over from a request the code no
    /// longer makes, or one more retry than the code now sends.
    public var unusedEntries: [HAR.Entry] {
        state.withLock { state in state.entries.indices.filter { !state.used[$0] }.map { state.entries[$0] } }
    }

    /// Throws when a recorded exchange was never used in this run, so a test fails when the code under test makes
    /// fewer requests than it was recorded making. Call it at the end of a test.
    ///
    /// - Throws: ``RecordingError`` with the reason ``RecordingError/Reason/unusedRecordings``, listing them.
    public func verifyAllRecordingsUsed() throws {
        let unused = unusedEntries
        guard !unused.isEmpty else { return }
        let list = unused.prefix(5).map { "\($0.request.method) \(Self.shown($0.request.url))" }.joined(separator: "; ")
        throw RecordingError(
            .unusedRecordings,
            "\(unused.count) recorded exchange(s) in \(fileURL.lastPathComponent) were never used: \(list)"
                + (unused.count > 5 ? "; …" : ""),
            fileURL: fileURL)
    }

    // MARK: - Transport

    /// Sends `request` as ``send(_:transfer:)`` does, with no transfer options.
    ///
    /// - Parameter request: The request.
    /// - Returns: A future of the recorded or live response.
    public func send(_ request: URLRequest) -> Future<ConnectResponse> {
        send(request, transfer: TransferOptions())
    }

    /// Sends `request` as ``send(_:transfer:)`` does, in the core's model.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - transfer: How to move the body and the response.
    /// - Returns: A future of the recorded or live response.
    public func send(_ request: URLRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
        do {
            return send(try ConnectRequest(request), transfer: transfer)
        } catch {
            return Future(error: error)
        }
    }

    /// Answers `request` from the recording, or sends it with the wrapped transport and records the exchange, as
    /// the ``mode`` says.
    ///
    /// - Parameters:
    ///   - request: The request, after every middleware.
    ///   - transfer: How to move the body and the response: a size limit, progress, streaming, a body from a file
    ///     and a download to a file are honoured in every mode.
    /// - Returns: A future of the response, or of the recorded failure; cancelling it cancels the live exchange.
    public func send(_ request: ConnectRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
        if let file = transfer.bodyFile {
            // A body from a file is read whole for matching and the recording; the wrapped transport still sends
            // it from the file.
            do {
                // Refused as every engine refuses it (a directory, a pipe), before reading it.
                var readable = request
                readable.body = .bytes(try TransferOptions.readBodyFile(file, request: request.urlRequest))
                return answer(readable, live: request, transfer: transfer)
            } catch let error as ConnectError {
                return Future(error: error)
            } catch {
                return Future(error: ConnectError.fileAccess(error, url: file, request: request.urlRequest))
            }
        }
        guard case .stream(let stream) = request.body else { return answer(request, live: request, transfer: transfer) }
        // A one-shot body is read whole first: matching and the file need its bytes. The wrapped transport still gets
        // a one-shot body, as it would have. It is held to the length it announces, or to the `Content-Length` its
        // caller set, as every engine holds it: a body of another length fails with the core's error, neither matched
        // nor sent.
        let length = request.announcedLength(of: stream)
        return stream.readingWhole(announcing: length) { bytes in
            var readable = request
            readable.body = .bytes(bytes)
            var live = request
            live.body = .stream(ConnectRequest.OneShotStream(Self.once(bytes), length: stream.length))
            return self.answer(readable, live: live, transfer: transfer)
        }
    }

    /// `bytes` as a sequence of one chunk.
    private static func once(_ bytes: Data) -> AsyncStream<Data> {
        AsyncStream { continuation in
            continuation.yield(bytes)
            continuation.finish()
        }
    }

    /// Answers `request` (its body in memory) from the recording, or sends `live` (the same request, its body as the
    /// wrapped transport must get it) and records the exchange.
    private func answer(_ request: ConnectRequest, live: ConnectRequest, transfer: TransferOptions) -> Future<
        ConnectResponse
    > {
        // The request's own secrets (those of a JSON body that cannot be parsed too, which the library's rules do not
        // read), and those earlier answers handed out (a login's token sent back in a path).
        let handedOut = state.withLock { $0.handedOutSecrets }
        let unparsed = RecordingRedaction.secretsOfUnreadableJSONBody(of: request)
        let secrets = RecordingRedaction.withBase64Forms(
            SecretValues(of: request).union(SecretValues(values: handedOut + unparsed)))
        let redacted = RecordingRedaction.request(request, secrets: secrets)
        if let destination = transfer.destination {
            // The checks every transport makes before sending (a directory, a missing folder): the caller's mistake,
            // neither recorded as the exchange's failure nor answered with a recording.
            do {
                try TransferOptions.checkDestination(destination, request: request.urlRequest)
            } catch {
                return Future(error: error)
            }
        }
        if mode == .record { return record(live, redacted: redacted, secrets: secrets, transfer: transfer) }
        switch claim(redacted) {
        case .success(let entry):
            noteSecretsHandedOut(by: entry)
            // The replay clock's `now` is when the answer was given: a `Retry-After` date is measured against it as it
            // was when recorded (against 2024, a wait of years, the client's policy would not retry).
            if let clock = retryClock as? ImmediateRetryClock, let date = Self.answeredAt(entry) { clock.now = date }
            if transfer.streaming != nil { return replayStreamed(entry, for: request, transfer: transfer) }
            if !replaysLatencies, let deadline = Self.deadline(of: request), entry.time > deadline {
                // Instant replay keeps the recorded time: an answer that came after the request's deadline is the
                // timeout the client would have met.
                return Future(error: Self.deadlinePassed(for: request))
            }
            if let broken = entry.bodyFailure {
                // A streamed answer that broke (or was cut short when recorded), read whole: the body's failure, as
                // an engine reading it whole gives, not its pieces as if they were the body.
                return Future(error: error(for: broken, request: request))
            }
            guard replaysLatencies else { return replay(entry, for: request, transfer: transfer) }
            // Made when it comes: a download reaches its file then, not before a deadline that ends the call first.
            return Self.delayed(byMilliseconds: entry.time) { [self] in
                replay(entry, for: request, transfer: transfer)
            }
        case .failure(let failure):
            if mode == .recordMissing, failure.reason == .noMatch || failure.reason == .missingRecording {
                return record(live, redacted: redacted, secrets: secrets, transfer: transfer)
            }
            return Future(error: failure.connectError(for: request))
        }
    }

    /// When a recorded answer was given: its `Date`, else when its request started (the archive's `startedDateTime`)
    /// plus the time it took; `nil` when it says neither.
    static func answeredAt(_ entry: HAR.Entry) -> Date? {
        let dateField = entry.response.headers.first { $0.name.lowercased() == "date" }?.value
        if let dateField, let date = HTTPDate.date(from: dateField.trimmingCharacters(in: .whitespaces), now: Date()) {
            return date
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let started = formatter.date(from: entry.startedDateTime)
        return started.map { $0.addingTimeInterval(max(0, entry.time) / 1000) }
    }

    /// Keeps the secrets a replayed answer hands out, as the client will see them (placeholders filled), so that a
    /// later request sending one back is redacted, and matched, as it was when recorded.
    private func noteSecretsHandedOut(by entry: HAR.Entry) {
        let body = entry.response.content.data.map { RecordingRedaction.filling($0, with: placeholderValues) }
        let handedOut = RecordingRedaction.secretsHandedOut(fields: replayedFields(of: entry), body: body ?? Data())
        guard !handedOut.isEmpty else { return }
        state.withLock { $0.handedOutSecrets += handedOut }
    }

    /// Waits until every exchange this transport is recording has been written to its file (or let go, for one the
    /// test cancelled), for at most `timeout` seconds; whether it came to that.
    ///
    /// A call's deadline ends the call before the transport has heard why, so the timeout it records may be written a
    /// moment after the caller has its error: wait before reading the file.
    package func waitUntilRecorded(timeout: TimeInterval = 10) -> Bool {
        recording.waitUntilNone(timeout: timeout)
    }

    /// A clock for the client's ``SwiftConnect/RetryPolicy`` that fits the mode: in replay, an
    /// ``ImmediateRetryClock`` (back-off and `Retry-After` waits end at once, and are listed in its `delays`), whose
    /// `now` is when the answer last replayed was given (its `Date`), so that a `Retry-After` date measures as it did
    /// when recorded; in the modes that record, the real clock, as the server expects.
    ///
    /// ```swift
    /// let transport = RecordingTransport(wrapping: URLSessionTransport())
    /// let connect = Connect(transport: transport, retryPolicy: RetryPolicy(clock: transport.retryClock))
    /// ```
    public let retryClock: any RetryClock
}

/// The exchanges a ``RecordingTransport`` is recording, for a test to wait until each is written.
final class RecordingsInFlight:
    // Checked by hand: `condition` protects `count`.
    @unchecked Sendable
{
    private let condition = NSCondition()
    private var count = 0

    /// An exchange starts.
    func begin() {
        condition.lock()
        count += 1
        condition.unlock()
    }

    /// An exchange is written, or let go.
    func end() {
        condition.lock()
        count -= 1
        if count == 0 { condition.broadcast() }
        condition.unlock()
    }

    /// Waits until no exchange is in flight, for at most `timeout` seconds; whether none is.
    func waitUntilNone(timeout: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while count > 0 {
            if !condition.wait(until: deadline) { return count == 0 }
        }
        return true
    }
}
