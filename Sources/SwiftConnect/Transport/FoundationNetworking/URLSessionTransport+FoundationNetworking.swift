import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// The workarounds for FoundationNetworking (URLSession on Linux, built on libcurl), one section per platform
// defect: what goes wrong, what the transport does about it, and the test that shows it. The transport's main
// files (URLSessionTransport.swift, SessionDelegate.swift) describe the portable behaviour and call the hooks
// below. Two defects have a file of their own in this folder: ``IsolatedSessionInvalidation`` (invalidating a
// session twice races) and ``BodyFileShrinkWatch`` (a body file that shrinks while it is sent leaves the server
// waiting). FoundationNetworking's loss of a request body on a redirect needs no workaround any more:
// a request with a body runs through the core's exchange (``URLSessionHopEngine``), which follows every redirect
// itself and sends the body again; nor do its relative redirects losing their encoded slashes, or a redirect's next
// hop going without the session's cookies: URLSession's delegate declines every redirect, and the core builds each
// next hop (``RedirectRule``), a new task to which the transport adds the stored cookies (``SessionCookies``).

// MARK: - A timeout that is not a whole number of seconds fires early

extension URLSessionTransport {
    /// `request` as the session gets it: on Linux, with a timeout FoundationNetworking's own timer cannot fire
    /// before the transport's deadline.
    ///
    /// Defect: FoundationNetworking truncates a request's timeout to whole seconds for its timer: a timeout under a
    /// second (set with `timeoutInterval =`) failed the request within milliseconds, and 1.5 s failed it after 1 s.
    /// The transport's deadline enforces the request's own timeout on every platform, so a timeout that is not a
    /// whole number of seconds goes to FoundationNetworking rounded up, plus a second.
    ///
    /// Defect: FoundationNetworking applies the session's `timeoutIntervalForRequest` to a request whose timeout it
    /// was never told was set: one made with `URLRequest(url:cachePolicy:timeoutInterval:)`, as the core makes them,
    /// keeps its "set" flag false. A 10 s request on a session of 1 s failed at 1 s (a plain GET; a request with a
    /// body took its own). Every timeout is set through the setter, whole seconds too.
    ///
    /// Test: `TimeoutPrecisionTests` (`testAFractionalTimeoutIsNotCutToWholeSeconds`,
    /// `testAHalfSecondTimeoutLetsAnAnswerAfterATenthOfASecondThrough`),
    /// `URLSafetyTests.testARequestsOwnTimeoutOutlastsAShorterSessionTimeout`.
    static func forSession(_ request: URLRequest) -> URLRequest {
        #if canImport(FoundationNetworking)
            let timeout = request.timeoutInterval
            guard timeout > 0, timeout.isFinite else { return request }
            var request = request
            request.timeoutInterval = timeout.rounded(.down) == timeout ? timeout : timeout.rounded(.up) + 1
            return request
        #else
            return request
        #endif
    }
}

// MARK: - A body stream of known length goes out chunked, beside its Content-Length

extension URLSessionTransport {
    /// The `Content-Length` field a request whose body is a stream of `length` bytes goes out with: on Linux, none.
    ///
    /// Defect: FoundationNetworking tells libcurl that a body stream's size is unknown (it asks an `InputStream` for
    /// no length), so libcurl sends the body in chunks, with `Transfer-Encoding: chunked`, and keeps a
    /// `Content-Length` field it was given beside it: a request RFC 9112 §6.2 forbids, which servers refuse as a
    /// smuggling attempt (Node's parser answers 400) or must close the connection after. No field makes libcurl
    /// send a stream unchunked (`Transfer-Encoding: identity` is no transfer coding any more), so on Linux the
    /// stream goes chunked alone; the core still holds it to its length. A server that needs the length gets it
    /// from a body in memory or a file, or over `AsyncHTTPClientTransport`.
    ///
    /// Test: conformance "streamed request body has one framing" (`TransportConformanceTests`), and the known
    /// defect "streamed request body keeps its length".
    static func contentLengthField(forStreamOf length: Int64?) -> String? {
        #if canImport(FoundationNetworking)
            return nil
        #else
            return length.map(String.init)
        #endif
    }
}

// MARK: - A body file that grows while it is sent puts its new bytes on the connection

extension URLSessionTransport {
    /// The `Connection` field a hop that uploads a body file goes out with: on Linux, `close`; elsewhere the
    /// request's own.
    ///
    /// Defect: FoundationNetworking tells libcurl the file's length when the upload starts, then reads the file to
    /// its end, and libcurl sends every byte read. A file that grows meanwhile (a log file still written to) puts
    /// the bytes past the announced `Content-Length` on the connection: the server read them as the next request
    /// and answered it, and the next call on that connection was handed that answer as its own. With
    /// `Connection: close` the server reads the announced length, answers, and reads nothing more from the
    /// connection, which is not used again (RFC 9112 §9.6); the server gets the file as it was when the upload
    /// started, as over `AsyncHTTPClientTransport`, which reads no more than the length.
    ///
    /// Test: `URLSessionTransportTests.testABodyFileThatGrowsWhileSentPutsNothingPastItsLengthOnTheConnection`.
    static func connectionField(forBodyFileOf request: URLRequest) -> String? {
        #if canImport(FoundationNetworking)
            return "close"
        #else
            return request.value(forHTTPHeaderField: "Connection")
        #endif
    }
}

// MARK: - A timeout too large for libcurl's milliseconds stops the process

extension URLSessionTransport {
    /// The longest timeout handed to URLSession: a year, as good as never for a request.
    static let longestTimeout: TimeInterval = 365 * 24 * 3600

    /// `request` with a timeout FoundationNetworking can take.
    ///
    /// Defect: FoundationNetworking converts the timeout to whole milliseconds for libcurl and stops the process
    /// when they do not fit (`.infinity`, `1e300`, set by a middleware, say). Applied on every platform, where a
    /// year is as good as never: the request the session gets is the same everywhere.
    ///
    /// Test: `URLSafetyTests.testAnInfiniteTimeoutGoesThroughURLSession`.
    static func withUsableTimeout(_ request: URLRequest) -> URLRequest {
        guard !(request.timeoutInterval <= longestTimeout) else { return request }  // NaN is replaced too
        var request = request
        request.timeoutInterval = longestTimeout
        return request
    }

    /// `configuration` with timeouts FoundationNetworking can take: a copy, when one of its own is too large for
    /// whole milliseconds (`.infinity`, `1e300`) or NaN, a year in its place.
    ///
    /// Defect: FoundationNetworking converts the session's `timeoutIntervalForRequest` to milliseconds for every
    /// request, before it looks at the request's own, and stops the process when they do not fit: a session made to
    /// leave idle timing to ``RequestOptions/idleTimeout`` (`timeoutIntervalForRequest = .infinity`) stopped it at its
    /// first request. Applied on every platform, where a year is as good as never.
    ///
    /// Test: `URLSafetyTests.testASessionTimeoutTooLargeForFoundationNetworkingGoesThrough`.
    static func withUsableTimeouts(_ configuration: URLSessionConfiguration) -> URLSessionConfiguration {
        let usable = { (seconds: TimeInterval) in seconds <= longestTimeout }
        guard !usable(configuration.timeoutIntervalForRequest) || !usable(configuration.timeoutIntervalForResource),
            let copy = configuration.copy() as? URLSessionConfiguration
        else { return configuration }
        if !usable(copy.timeoutIntervalForRequest) { copy.timeoutIntervalForRequest = longestTimeout }
        if !usable(copy.timeoutIntervalForResource) { copy.timeoutIntervalForResource = longestTimeout }
        return copy
    }

    /// Why a session of the app's cannot send on FoundationNetworking, or `nil`: one of its timeouts does not fit in
    /// whole milliseconds (``withUsableTimeouts(_:)``). Always `nil` on other platforms.
    ///
    /// Defect: as for ``withUsableTimeouts(_:)``; the session is the app's (``init(session:)``) and its configuration
    /// fixed once it was made, so each request fails, typed, instead of the process stopping at the first.
    ///
    /// Test: `URLSafetyTests.testAnAppsSessionWithATimeoutTooLargeForFoundationNetworkingFailsTyped`.
    static func unusableSessionTimeout(of configuration: URLSessionConfiguration) -> ConnectError? {
        #if canImport(FoundationNetworking)
            let timeouts = [
                ("timeoutIntervalForRequest", configuration.timeoutIntervalForRequest),
                ("timeoutIntervalForResource", configuration.timeoutIntervalForResource),
            ]
            for (name, seconds) in timeouts where !(seconds <= longestTimeout) {
                return ConnectError(
                    .transport,
                    message: "the session's \(name) (\(seconds) s) is more than FoundationNetworking can take "
                        + "(it stops the process as it converts it to milliseconds): give the session a year at most, "
                        + "or use URLSessionTransport(configuration:), which takes a year in its place; nothing was sent"
                )
            }
        #endif
        return nil
    }
}

// MARK: - A URL whose host is an IPv6 address literal fails as a bare badURL

extension ConnectError {
    /// Whether `url`'s host is an IPv6 address literal (`http://[::1]:8080/`), which FoundationNetworking cannot
    /// send to. Always `false` on other platforms.
    ///
    /// Defect: FoundationNetworking's check that libcurl reads the same host as `URL` compares `::1` with `[::1]`
    /// and fails the task with a bare `badURL` before anything is sent. No other URL has a colon in its host.
    ///
    /// Test: `URLSessionTransportTests.testAnIPv6LiteralFailsAtOnceSayingFoundationNetworkingCannotSendToIt`.
    static func isIPv6Literal(_ url: URL?) -> Bool {
        #if canImport(FoundationNetworking)
            url?.host?.contains(":") ?? false
        #else
            false
        #endif
    }

    /// The ``Kind/invalidRequest`` error for a URL with an IPv6 literal host (``isIPv6Literal(_:)``): it says
    /// why, and what to do instead.
    static func ipv6LiteralRefused(_ urlError: URLError, request: ConnectResponse.StoredRequest) -> ConnectError {
        let text = Redaction.urlText((urlError.failingURL ?? request.url)?.absoluteString ?? "")
        var error = invalidRequest(.invalidURL(text), stored: request)
        error.message =
            "'\(text)' names its host by an IPv6 address, which FoundationNetworking (URLSession on Linux) cannot "
            + "send to: give the server a host name that resolves to that address"
        error.underlyingError = urlError
        return error
    }
}

// MARK: - A body cut short, a failed connect, a broken connection or chunk are unknown errors; so is an empty reply

extension ConnectError {
    /// libcurl's messages for a chunked body it cannot read.
    private static let malformedChunks: Set<String> = [
        "Illegal or missing hexadecimal sequence in chunked-encoding",
        "Too long hexadecimal number in chunked-encoding", "Malformed encoding found in chunked-encoding",
    ]

    /// `error`, or the code Apple's URLSession reports for the same failure when it is one of libcurl's that
    /// FoundationNetworking reports as `.unknown`, so that the retry policy treats it alike on every platform:
    /// - a body cut short of its declared length becomes `networkConnectionLost`;
    /// - a connection that could not be opened, for any reason but a refusal, becomes `cannotConnectToHost`;
    /// - a connection that failed while sending or receiving, for any reason but a reset, becomes
    ///   `networkConnectionLost`;
    /// - a chunked body libcurl cannot read (a chunk size that is not a hexadecimal number, or too long for one),
    ///   or a head larger than it holds ("Too large response headers", over 300 KiB), becomes
    ///   `cannotParseResponse`, a malformed answer as AsyncHTTPClient reports it;
    /// - a connection closed before any byte of an answer ("Empty reply from server", reported as
    ///   `badServerResponse`) becomes `networkConnectionLost`;
    /// - a status of other than three digits ("Unsupported response code in HTTP response", reported as
    ///   `unsupportedURL`) becomes `cannotParseResponse`;
    /// - a `Content-Length` libcurl cannot read as a length, negative (`-5`) or empty ("Invalid Content-Length:
    ///   value", reported as `unknown` before any head reaches the transport) becomes `cannotParseResponse`, as the
    ///   core refuses the lengths libcurl does read (`+5`, `3, 5`: ``ConnectError/unusableHead(_:request:head:)``)
    ///   and SwiftNIO's parser refuses them all.
    ///
    /// Defect: FoundationNetworking names a libcurl failure by libcurl's code and the socket's `errno` together
    /// (`_EasyHandle.urlErrorCode(for:)`), and says `.unknown` for every pair it has no entry for: "transfer closed
    /// with bytes remaining"; a connect that fails with `EHOSTUNREACH`, `ENETUNREACH` or `EINVAL` (a host that does not
    /// answer ARP, a link that is down, a `blackhole` route); a receive that fails with `ETIMEDOUT` or `EHOSTUNREACH`;
    /// a chunk libcurl cannot read ("Illegal or missing hexadecimal sequence", "Too long hexadecimal number",
    /// "Malformed encoding found", each "in chunked-encoding"); a negative or empty `Content-Length` ("Invalid
    /// Content-Length: value"). libcurl's own message, which FoundationNetworking keeps as the description, tells them
    /// apart from other failures with the same code, such as a body that does not decode as its `Content-Encoding`
    /// says, which no new attempt would fix. Bytes counted against `Content-Length` cannot tell a body cut short (a
    /// body that fails to decode counts none). libcurl says nothing when a `Content-Length` is too large to count:
    /// ``URLSessionTransport/framingError(of:request:)`` catches that one. FoundationNetworking reports libcurl's
    /// "Empty reply from server" as `badServerResponse`, where Apple's URLSession reports a connection closed before
    /// any answer as `networkConnectionLost`. No other platform reports these messages.
    ///
    /// Tests: `FaultTests.testConnectionClosedMidBodyIsATransportFailure`,
    /// `ResponseFramingTests.testABodyCutShortIsALostConnectionOnEveryPath`,
    /// `ResponseFramingTests.testABrokenContentEncodingIsNotALostConnectionNorRetried`,
    /// `OddServerTests.testAnInvalidChunkSizeIsABadServerResponse`,
    /// `OddServerTests.testAServerThatClosesWithoutAnsweringIsALostConnection`,
    /// `OddServerTests.testAHeadTooLargeToHoldIsATypedError`,
    /// `OddServerTests.testAStatusOfOtherThanThreeDigitsIsAMalformedAnswer`,
    /// `ResponseFramingTests.testANegativeOrEmptyContentLengthIsABadServerResponseOnEveryPath`,
    /// `FailureKindTests.testLibcurlsUnnamedFailuresAreNamedByTheirMessage`,
    /// `FailureKindTests.testAnEmptyReplyIsALostConnection`, and, end to end through a `blackhole`
    /// route, `NetworkFaultTests.testARouteThatSwallowsPacketsEndsCallsTypedAndNeverSendsAPostTwice`.
    static func cutShort(_ error: any Error) -> any Error {
        guard let urlError = error as? URLError else { return error }
        let message = urlError.localizedDescription
        if urlError.code == .badServerResponse, message == "Empty reply from server" {
            // A connection closed before any byte of an answer: a lost connection for Apple's URLSession and
            // AsyncHTTPClient, retried alike.
            return URLError(.networkConnectionLost, userInfo: urlError.userInfo)
        }
        if urlError.code == .unsupportedURL, message == "Unsupported response code in HTTP response" {
            // A status of other than three digits: the URL was sent, the answer is malformed.
            return URLError(.cannotParseResponse, userInfo: urlError.userInfo)
        }
        guard urlError.code == .unknown else { return error }
        // libcurl fails a negative or empty `Content-Length` with "Invalid Content-Length: value", which
        // FoundationNetworking reports as `.unknown`: a malformed head, as the core and SwiftNIO's parser say.
        if Self.malformedChunks.contains(message) || message.hasPrefix("Too large response headers")
            || message.hasPrefix("Invalid Content-Length")
        {
            // Not "Bad content-encoding found in chunked-encoding": a body that does not decode stays as it is.
            return URLError(.cannotParseResponse, userInfo: urlError.userInfo)
        }
        if message.hasPrefix("transfer closed with") || message.hasPrefix("Recv failure:")
            || message.hasPrefix("Send failure:")
        {
            return URLError(.networkConnectionLost, userInfo: urlError.userInfo)
        }
        if message.hasPrefix("Failed to connect to") {
            return URLError(.cannotConnectToHost, userInfo: urlError.userInfo)
        }
        return error
    }
}

// MARK: - A transfer under way does not stop when its task is cancelled

extension URLSessionTransport {
    /// Whether stopping a transfer under way needs its session invalidated (FoundationNetworking).
    ///
    /// Defect: FoundationNetworking cannot stop a body transfer under way: `cancel()` fails the task but libcurl
    /// keeps receiving, and every piece still goes through the session's delegate queue, which would slow every
    /// other request of the session. A request that may have to stop mid-body (size limit, download) runs there
    /// on a short-lived session of its own, invalidated to stop it (``IsolatedSessionInvalidation``), so that its
    /// pieces do not hold up the delegate queue of the client's other requests. libcurl's work queue, which every
    /// session of the process shares, they still hold up until the stop lands
    /// (``stopOffTheCaller(sparing:_:)``).
    ///
    /// Tests: `IsolatedSessionTests`, `TransferIntegrationTests.testSizeLimitOnADeclaredLengthStopsTheTransfer`,
    /// `FaultTests.testAResponseOverTheSizeLimitIsStopped`.
    #if canImport(FoundationNetworking)
        static let stopsOnlyWithItsSession = true
    #else
        static let stopsOnlyWithItsSession = false
    #endif

    /// Whether a transfer runs on a short-lived session of its own (``stopsOnlyWithItsSession``): one that may
    /// have to stop mid-body, for a size limit, a download or a stream its reader stops, or that sends a one-shot
    /// stream as its body (FoundationNetworking reads it on the session's work queue, which waits for each chunk:
    /// see `ChunkedBodyInputStream`). Not for an idle timeout alone: it stops a transfer that has gone quiet, which a
    /// `cancel()` stops at once, and a session per request would cost every call of a client that sets one its
    /// connection reuse.
    static func needsSessionOfItsOwn(_ transfer: TransferOptions, body: ConnectRequest.Body = .none) -> Bool {
        guard stopsOnlyWithItsSession else { return false }
        if case .stream = body { return true }
        return transfer.maxResponseBytes != nil || transfer.destination != nil || transfer.streaming != nil
    }
}

// MARK: - A stop waits for libcurl's queue, which a fast sender keeps busy

extension URLSessionTransport {
    /// Runs `stop`, which cancels a hop's task and invalidates its session, or cancels a plain exchange's task: on
    /// Linux on a thread of its own, which the caller waits for half a second at most (`delegateQueue`, the
    /// session's delegate queue, not at all); at once elsewhere.
    ///
    /// Defect: FoundationNetworking's `cancel()` and `invalidateAndCancel()` wait for the session's work queue
    /// (`workQueue.sync`), where libcurl reads; every session's work queue targets one serial queue of the process
    /// (swift-corelibs-foundation 6.3.1), which libcurl keeps busy while a fast sender keeps its socket full: on
    /// loopback, a stop asked for 10 MiB into a 512 MiB body landed anywhere from 13 MiB to the body's end, and into
    /// a 4 GiB body as late as its end (10 s). The wait held whoever asked for the stop:
    /// - the delegate queue, when a stream's buffer overflowed under a slow reader (``ResponseBodyStream/offer(_:)``):
    ///   every piece libcurl read meanwhile piled up behind it. A slow reader of a 256 MiB stream with an 8 MiB buffer
    ///   limit raised peak resident memory by 45 to 268 MiB (seven runs on loopback), +0 to +16 MiB (seventeen runs)
    ///   once the stop ran elsewhere, the delegate queue dropping each piece as it comes;
    /// - the caller of `cancel()` on a plain exchange's future: held until the stop landed (0.06 to 2.4 s into a
    ///   fast 512 MiB body), and for as long as another request's body stream waited for its producer, which holds
    ///   the same queue (`PlainTaskCancellationTests`);
    /// - the exchange's task, when the core refused a body over its size limit or a stream's reader left: a
    ///   cooperative thread of Swift concurrency, blocked for seconds, and the caller's `.responseTooLarge` delivered
    ///   only when the stop landed (5.3 and 9.0 s into a fast 4 GiB body, in 2 runs of 6).
    ///
    /// The thread is one of its own: run on Dispatch's global queues, whose few workers also run the delegate queue,
    /// the waiting stop slowed the delegate queue, and the pieces piled up (+286 MiB over a fast 4 GiB body). The
    /// caller waits for it a little, so that where the stop lands at once, when the socket is quiet, the call still
    /// fails with the transfer stopped, its connection closed (`TransferIntegrationTests`, a declared length over the
    /// limit whose body the server sends only after the call failed); only where it lands late does the call fail
    /// first, half a second at most after the limit.
    ///
    /// The stop itself cannot land sooner: `suspend()` waits for the same queue (and takes the transfer off libcurl's
    /// multi handle: resuming starts the request again), and libcurl's receive pause is not reachable through
    /// FoundationNetworking. Nor can the wait be kept from the process's other requests: every URLSession task's
    /// work runs on that queue, and a request on another transport, started 0.1 s into such a flood, waited for the
    /// stop to land: 1.5 to 8.9 s in 5 runs of 6, 0.1 s in the sixth.
    ///
    /// What a late stop still costs in memory is FoundationNetworking's, and nothing here bounds it. On each piece
    /// libcurl hands over, the easy handle replaces its timeout timer with a new dispatch source, and the sources it
    /// drops are freed only once that shared queue is free: about 380 bytes a 16 KiB piece, 2.3 % of what crosses (a
    /// 1 GiB gzip bomb, 65,536 pieces, costs about 23 MiB, as 65,536 timers made and dropped on a busy queue did
    /// outside URLSession: +25 MiB). And the pieces wait on the delegate queue whenever it gets less CPU than
    /// libcurl: over a fast 512 MiB body, +106 and +131 MiB in 2 runs of 17. A delegate queue that made libcurl wait
    /// while 256 pieces were queued was tried twice and dropped: it rarely had to wait, and runs went as high (+60 to
    /// +112 MiB).
    ///
    /// Tests: `MemoryBoundTests` (`testASlowReaderOfAStreamStaysWithinItsMemoryBound`,
    /// `testAFast4GiBResponseOverTheSizeLimitFailsAtOnceWithinItsMemoryBound`), `IsolatedSessionTests`,
    /// `PlainTaskCancellationTests`.
    static func stopOffTheCaller(sparing delegateQueue: OperationQueue, _ stop: @escaping @Sendable () -> Void) {
        #if canImport(FoundationNetworking)
            let stopped = DispatchSemaphore(value: 0)
            let thread = Thread {
                stop()
                stopped.signal()
            }
            thread.name = "SwiftConnect stop"
            thread.start()
            guard OperationQueue.current !== delegateQueue else { return }
            _ = stopped.wait(timeout: .now() + longestWaitForAStop)
        #else
            stop()
        #endif
    }

    /// How long the caller of ``stopOffTheCaller(sparing:_:)`` waits for the stop at most, in seconds.
    static let longestWaitForAStop: TimeInterval = 0.5
}

// MARK: - A body stream waiting for its producer holds every thread that starts a task

extension URLSessionTransport {
    /// Whether tasks may have to be created and resumed off the caller, on the transport's ``submissionQueue``: on
    /// Linux, while a streamed request body is in flight (``StreamedBodyClaim``).
    #if canImport(FoundationNetworking)
        static let startsTasksOffTheCaller = true
    #else
        static let startsTasksOffTheCaller = false
    #endif

    /// Whether a task started now must start off the caller: a streamed request body is in flight in the process
    /// (Linux), or tasks handed to ``submissionQueue`` earlier have not all started (they keep their order).
    var startsOffTheCaller: Bool {
        Self.startsTasksOffTheCaller && (StreamedBodyClaim.inFlight.snapshot > 0 || queuedStarts.snapshot > 0)
    }

    /// Runs `start`, which creates or resumes a task: later, on ``submissionQueue``, when ``startsOffTheCaller``;
    /// otherwise at once.
    ///
    /// Defect: creating a task and `resume()` wait for the one serial queue that every session of the process
    /// works on (`workQueue.sync`), and a streamed request body waiting for its producer's next chunk holds that
    /// queue (``ChunkedBodyInputStream``): the thread that sent any other request was held until the chunk came or
    /// the upload timed out (a GET's `send`: 60 s). Over the core's exchange that thread is one of Swift's
    /// concurrency pool, which the producer itself needs. Off the caller, on the transport's serial queue, one
    /// thread per transport at most waits there, and its requests are started in the order they were sent; they are
    /// still answered only once URLSession's queue is free (no way around that through FoundationNetworking's API).
    ///
    /// Only while a streamed body is in flight: a hand-off per request costs a thread switch, which took sequential
    /// plain requests on loopback from 1.07–1.22× raw URLSession's rate to 0.99× (BENCHMARKS.md). A stream counts
    /// from when its hop is made, before its task exists, so a request that started on its caller is normally in
    /// URLSession's hands before any stream can wait for its producer; one whose check came just before a stream's
    /// hop was made can still meet that wait (microseconds against the milliseconds a stream takes to be read).
    ///
    /// Tests: `SlowStreamBodyTests`, `RequestsFromCallbacksTests`, `SubmissionDeadlineTests`.
    func startOffTheCaller(_ start: @escaping @Sendable () -> Void) {
        guard startsOffTheCaller else { return start() }
        startFromSubmissionQueue(start)
    }

    /// Runs `start` on ``submissionQueue``, after every start handed to it before.
    func startFromSubmissionQueue(_ start: @escaping @Sendable () -> Void) {
        queuedStarts.withLock { $0 += 1 }
        submissionQueue.async { [queuedStarts] in
            start()
            queuedStarts.withLock { $0 -= 1 }
        }
    }

    /// What `make` makes (a task), made as ``startOffTheCaller(_:)`` starts.
    func madeOffTheCaller<Made: Sendable>(_ make: @escaping @Sendable () -> Made) async -> Made {
        guard startsOffTheCaller else { return make() }
        return await withCheckedContinuation { continuation in
            startFromSubmissionQueue { continuation.resume(returning: make()) }
        }
    }
}

/// One streamed request body in flight over URLSession: counted in ``inFlight`` from when its hop is made until the
/// body is read to its end, fails, or is let go (``release()``, at most once). While any is counted, tasks start off
/// their caller on Linux (``URLSessionTransport/startOffTheCaller(_:)``).
final class StreamedBodyClaim: Sendable {
    /// The streamed bodies in flight in the process.
    static let inFlight = Protected(0)
    private let released = Protected(false)

    init() {
        Self.inFlight.withLock { $0 += 1 }
    }

    deinit { release() }

    /// The body is over: no longer counted. Later calls do nothing.
    func release() {
        let first = released.withLock { released in
            defer { released = true }
            return !released
        }
        if first { Self.inFlight.withLock { $0 -= 1 } }
    }
}

// MARK: - A Basic challenge nothing can answer never completes

extension SessionDelegate {
    /// Whether an authentication challenge that nothing can answer must be declined explicitly.
    ///
    /// Defect: FoundationNetworking turns a 401 with a `WWW-Authenticate: Basic` challenge into a challenge for the
    /// session; with no credential to propose, its default handling never completes the task, which then waits
    /// for its whole timeout. Apple's URLSession delivers the 401. Declining cancels the task: the transport
    /// reports the 401 instead of that cancellation. A task with a completion handler (the plain path) loses the 401's
    /// body with the cancellation, which FoundationNetworking keeps to itself: the error handler sees an empty body
    /// (RELIABILITY.md). A task of the delegate's path has handed its body over before the challenge, and keeps it.
    ///
    /// Tests: `AuthenticationChallengeTests`.
    #if canImport(FoundationNetworking)
        static let declinesChallengesItCannotAnswer = true
    #else
        static let declinesChallengesItCannotAnswer = false
    #endif

    /// The 401 answer of `challenge` when the challenge must be declined (``declinesChallengesItCannotAnswer``),
    /// or `nil` when it is the platform's to handle: a credential from the session's storage is tried once.
    static func unanswerable401(of challenge: URLAuthenticationChallenge) -> HTTPURLResponse? {
        guard declinesChallengesItCannotAnswer,
            challenge.proposedCredential == nil || challenge.previousFailureCount > 0
        else { return nil }
        return challenge.failureResponse as? HTTPURLResponse
    }
}

// MARK: - A body libcurl sends again goes out empty

#if canImport(FoundationNetworking)
    extension SessionDelegate {
        /// FoundationNetworking asks for the body of `task` again, from its start: libcurl is about to send the
        /// request a second time. The transport gives none, and fails the task with `networkConnectionLost`.
        ///
        /// Defect: when a server closes a reused connection without answering, libcurl sends the request again on a
        /// new connection and asks FoundationNetworking to rewind the body. FoundationNetworking rewinds only a body
        /// stream the delegate hands it here, and stops the process if the task's body was data or a file; given
        /// none, it leaves the body at its end, and libcurl sends the head again, `Content-Length` included, without
        /// the body. The server waits for the announced body, and the request for its whole timeout (60 s by
        /// default), on every request with a body: POST, PUT, PATCH, uploads. Failing at once is what
        /// AsyncHTTPClient does: the engine never sends a request twice, and ``RetryPolicy`` decides whether it is
        /// sent again (a replay-safe request, yes; a POST without an idempotency key, no). Requests without a body
        /// never get here: libcurl sends them again by itself, as Apple's URLSession does.
        ///
        /// Tests: `TransportConformanceTests` ("reset of a POST on a reused connection"),
        /// `ReusedConnectionTests`.
        func urlSession(
            _ session: URLSession,
            task: URLSessionTask,
            needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void
        ) {
            completionHandler(nil)
            // Only a hop has a body: a plain exchange sends none (``URLSessionTransport/send(_:transfer:)``).
            guard case .hop(let handler)? = handler(for: task) else { return }
            handler.verdict.fail(ConnectError.bodyNotSentAgain(request: handler.request))
            // Stopped as the transport stops any of its tasks, but from another queue: this runs inside libcurl, on
            // the session's own queue, where no version of FoundationNetworking may wait for itself.
            DispatchQueue.global().async { handler.body.cancel() }
        }
    }

    extension ConnectError {
        /// The failure of a request whose body FoundationNetworking would have sent again empty
        /// (``SessionDelegate/urlSession(_:task:needNewBodyStream:)``).
        static func bodyNotSentAgain(request: URLRequest) -> ConnectError {
            ConnectError(
                .connectionLost,
                message: "the server closed the connection without answering, and the request was not sent again",
                request: request,
                underlyingError: URLError(.networkConnectionLost)
            )
        }
    }
#endif

// MARK: - A redirect answered after its task was cancelled stops the process

extension SessionDelegate {
    /// Whether a redirect's answer must not reach a task that was cancelled meanwhile.
    ///
    /// Defect: FoundationNetworking stops the process ("Received callback for HTTP redirection, but we're not
    /// waiting for it") when a redirect is answered after its task was cancelled. The delegate answers redirects
    /// and cancels tasks under one lock (``SessionDelegate/cancel(_:)``), and on Linux answers only a task still
    /// running; a cancelled one ends as cancelled. Apple's URLSession takes such an answer and ignores it, so
    /// there every redirect is answered, as its documentation asks.
    ///
    /// Tests: `RedirectCancellationTests`.
    #if canImport(FoundationNetworking)
        static let answersOnlyRunningTasks = true
    #else
        static let answersOnlyRunningTasks = false
    #endif

    /// Whether the redirect of `task` may be answered now (called under the lock that cancellations take).
    static func mayAnswerRedirect(of task: URLSessionTask) -> Bool {
        !answersOnlyRunningTasks || task.state == .running
    }
}

// MARK: - Cookies: a parser that stops the process, and rules RFC 6265 does not follow

/// The cookie storage that a transport's own session keeps and sends cookies from, in FoundationNetworking's place.
///
/// Defects:
/// - FoundationNetworking parses each `Set-Cookie` line of every response as it arrives, unless the
///   configuration's `httpCookieAcceptPolicy` is `.never`, with a parser that stops the process on a cookie name
///   holding a character outside the Basic Multilingual Plane (`Set-Cookie: 😀=`, see ``SetCookieFields``). Any
///   server could stop a Linux client with one response.
/// - Its parser ignores `Max-Age` (a cookie with one never expires, and `Max-Age=0` deletes nothing), reads a
///   two-digit year as the first century, defaults a cookie's path to `/`, and stores a cookie for a whole top-level
///   domain (`Domain=com`) or an IP address's suffix, which then went to every site in it.
/// - It sends the cookies its storage holds for a host by domain alone: a `Secure` cookie went over plain http, a
///   cookie for `/admin` to every path, an expired one until the next store; and it replaced a `Cookie` header the
///   request carried.
/// - Its storage has no bound: a server that set a new cookie on every call grew it, and every request's `Cookie`,
///   without end.
///
/// So the transport's own sessions run with `httpCookieAcceptPolicy = .never` and `httpShouldSetCookies = false`,
/// and the transport does both itself by RFC 6265 (``CookieRules``), in the storage the configuration names: it keeps
/// each response's cookies (``keep(from:)``) when the configuration accepts cookies, and adds the ones that apply to
/// each request (``adding(to:)``) when it sets them, after the request's own. It keeps at most 50 cookies per domain
/// and 3000 in all (RFC 6265 §6.1), evicting others for a new one past a bound, the least recently used (set or
/// sent) first (``CookieRules/evictions(toStore:in:now:maxPerDomain:maxTotal:)``). A session given with
/// ``URLSessionTransport/init(session:)`` is used as it is: the defects stay with it.
///
/// Tests: `SetCookieSafetyTests`, `LinuxCookieTests`.
struct SessionCookies: Sendable {
    /// Where the configuration keeps cookies.
    let storage: HTTPCookieStorage
    /// Whether the configuration accepts cookies: then each response's are kept.
    let accepts: Bool
    /// Whether the configuration sends cookies (`httpShouldSetCookies`): then each request gets the ones that apply.
    let sends: Bool

    /// The configuration a transport's session runs with, and the cookies the transport keeps for it: on Linux, a
    /// copy of `configuration` whose session neither parses nor sends a cookie, and the storage that
    /// `configuration` would have kept and sent them from (`nil` when it has none, or does neither); elsewhere,
    /// `configuration` itself and `nil`.
    static func takingOver(_ configuration: URLSessionConfiguration) -> (URLSessionConfiguration, SessionCookies?) {
        #if canImport(FoundationNetworking)
            let accepts = configuration.httpCookieAcceptPolicy != .never
            let sends = configuration.httpShouldSetCookies
            // Without a storage too: FoundationNetworking parses every response's cookies all the same.
            guard accepts || sends, let copy = configuration.copy() as? URLSessionConfiguration else {
                return (configuration, nil)
            }
            copy.httpCookieAcceptPolicy = .never
            copy.httpShouldSetCookies = false
            let cookies = configuration.httpCookieStorage.map {
                SessionCookies(storage: $0, accepts: accepts, sends: sends)
            }
            return (copy, cookies)
        #else
            return (configuration, nil)
        #endif
    }

    /// Stores the cookies `response` sets, by RFC 6265, for its URL; an expired one deletes the stored one it replaces,
    /// one that replaces a stored one keeps its creation time (§5.3, step 11.3), and one from plain http in place of a
    /// stored `Secure` one is ignored (RFC 6265bis §5.7). Nothing for a `request`
    /// that handles no cookies (`httpShouldHandleCookies = false`: "whether cookies will be sent with and set for this
    /// request").
    func keep(from response: URLResponse?, of request: URLRequest?) {
        guard accepts, request?.httpShouldHandleCookies ?? true, let response = response as? HTTPURLResponse,
            let url = response.url
        else { return }
        let fields = SetCookieFields.readable(of: response)
        guard !fields.isEmpty else { return }
        let now = Date()
        var cookies = fields.values.flatMap(SetCookieFields.cookies(in:)).compactMap {
            CookieRules.cookie(from: $0, setBy: url, now: now)
        }
        // Over plain http, a cookie in place of a `Secure` one is ignored (RFC 6265bis §5.7, step 16).
        if !cookies.allSatisfy(\.isSecure), let stored = storage.cookies, stored.contains(where: \.isSecure) {
            cookies.removeAll {
                CookieRules.overwritesSecureCookie($0, setBy: url, in: stored, now: now)
                    || Self.replacesSecureCookieByKey($0, setBy: url, in: stored)
            }
        }
        guard !cookies.isEmpty else { return }
        // RFC 6265 §5.3, step 11.3: a cookie that replaces a stored one keeps its creation time (its place in §5.4).
        CookieRules.keepCreationTimes(of: cookies, replacing: storage.cookies ?? [], now: now)
        // One by one: `setCookies(_:for:mainDocumentURL:)` drops each whose domain is not the URL's host as written
        // (`127.1`, `[0:0::1]`), where `CookieRules` set it for the host it is; every cookie here was checked already.
        // `setCookie` still heeds the storage's own accept policy, and an expired cookie deletes.
        guard storage.cookieAcceptPolicy != .never else { return }
        // RFC 6265 §6.1: at most 50 cookies per domain and 3000 in all; a new cookie past a bound evicts others
        // first (``CookieRules/evictions(toStore:in:now:maxPerDomain:maxTotal:)``). FoundationNetworking's storage
        // has no bound: a server setting a new cookie on every call grew it, and every request's `Cookie`, forever.
        var current = storage.cookies ?? []
        for cookie in cookies {
            for evicted in CookieRules.evictions(toStore: cookie, in: current, now: now) {
                storage.deleteCookie(evicted)
                current.removeAll { CookieRules.isSameCookie($0, evicted) }
            }
            storage.setCookie(cookie)
            current.removeAll { CookieRules.isSameCookie($0, cookie) }
            if !(cookie.expiresDate.map { $0 <= now } ?? false) { current.append(cookie) }
        }
    }

    /// Whether `cookie`, set by a response from `url`, would take the place of another, `Secure`, cookie of `stored`
    /// in FoundationNetworking's storage, which keys a cookie by its domain, path and name run together: `d` of path
    /// `/si` is `sid` of path `/` there (`a.example.com/sid`), and replaces or, expired, deletes it. A cookie that is
    /// not `Secure`, set over plain http, must leave a `Secure` one alone (RFC 6265bis §5.7, step 16): it is ignored.
    /// Two cookies of such keys over https still take each other's place, as the storage keeps one of them.
    static func replacesSecureCookieByKey(_ cookie: HTTPCookie, setBy url: URL, in stored: [HTTPCookie]) -> Bool {
        guard !cookie.isSecure, !CookieRules.isSecure(url) else { return false }
        let key = cookie.domain + cookie.path + cookie.name
        return stored.contains { $0.isSecure && $0.domain + $0.path + $0.name == key }
    }

    /// `request` with the stored cookies that apply to its URL added to its `Cookie` header, after the cookies it
    /// carries already (which win over stored ones of the same name); as it is when the configuration sends no
    /// cookies or the request handles none (`httpShouldHandleCookies = false`).
    func adding(to request: URLRequest) -> URLRequest {
        guard sends, request.httpShouldHandleCookies, let url = request.url, let stored = storage.cookies,
            !stored.isEmpty
        else { return request }
        let existing = request.value(forHTTPHeaderField: "Cookie")
        let now = Date()
        let (header, sent) = CookieRules.headerAndSent(for: url, from: stored, keeping: existing, now: now)
        // RFC 6265 §5.4 step 3: the cookies sent are the most recently used, the last the bound evicts.
        CookieRules.recordUse(of: sent, at: now)
        guard let header, header != existing else { return request }
        var request = request
        request.setValue(header, forHTTPHeaderField: "Cookie")
        return request
    }
}
