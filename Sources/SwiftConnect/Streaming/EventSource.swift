import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How an ``EventSource`` reconnects, as a browser's `EventSource` does.
public struct EventSourceReconnection: Sendable, Hashable {
    /// The wait before reconnecting, until the server sets another with a `retry:` field (half a second at least, as
    /// Firefox keeps it, and an hour at most, or this delay when longer; a value not all ASCII digits is ignored).
    /// Defaults to 3 s, the WHATWG default. Every reconnection waits 0.01 s at least, a delay of 0 included: a server
    /// that sends one event per connection and closes is not called in a loop. Each reconnection after the first in a
    /// row without an event waits twice as long as the one before (a delay of 0: 0.02 s, then 0.04 s…), up to 30 s (or
    /// this delay, when longer).
    public var delay: TimeInterval
    /// The most reconnections in a row without an event received in between; `nil` (the default) for no limit. One
    /// below 0 counts as 0: no reconnection.
    public var maxAttempts: Int?

    /// Creates a reconnection policy.
    ///
    /// - Parameters:
    ///   - delay: The first wait before reconnecting, in seconds.
    ///   - maxAttempts: The most reconnections in a row without an event; `nil` for no limit, and one below 0 is 0.
    public init(delay: TimeInterval = 3, maxAttempts: Int? = nil) {
        self.delay = max(0, delay)
        // Clamped rather than refused: the initializer does not throw, and a negative count can only mean "none".
        self.maxAttempts = maxAttempts.map { max(0, $0) }
    }
}

/// Server-sent events from one endpoint that survive the end of a connection: after the stream ends or breaks, the
/// source waits (`retry:` from the server, or ``EventSourceReconnection/delay``) and reconnects with a
/// `Last-Event-ID` header, so that the server resumes after the last event seen. Made by
/// ``Connect/eventSource(_:options:streaming:reconnection:)``.
///
/// ```swift
/// for try await event in connect.eventSource(PriceFeed()) {
///     show(event.data)
/// }
/// ```
///
/// To resume a feed from an ID saved in an earlier run, put it in the connector's (or the options') `Last-Event-ID`
/// header: the first connection sends it, the events without an `id` carry it, and the source goes on from there.
///
/// As the WHATWG rules say, a response that is not a `200` `text/event-stream` fails the source (no reconnection), and
/// a `204 No Content` ends it. A reconnection that fails in the network (the server restarting: no connection, a
/// timeout, no network) is tried again after the wait (which doubles while nothing gets through), and counts against
/// ``EventSourceReconnection/maxAttempts``; a failure that would come again on every reconnection (a redirect loop, a
/// certificate refused, a body no decoder reads) fails the source. The first connection's failure is thrown at once, so
/// that an endpoint that cannot be reached is reported rather than retried for ever (the client's ``RetryPolicy`` has
/// already retried it). A stream the network breaks is reconnected, and so is one whose body reaches the size limit
/// after handing out an event (``RequestOptions/maxResponseBytes`` counts one connection's body), or whose reader fell
/// behind an engine that cannot pause (URLSession's: ``StreamingOptions/bufferLimit`` filled) after an event with an
/// ID, from which the reconnection goes on; one that fails for what it carries (a line or an event's data over its
/// limit, a body that reaches the size limit before its first event, a full buffer with no event ID to go on from:
/// `.responseTooLarge`) fails the source, which would meet it again on every reconnection.
/// Cancel the task, or break out of the loop, to stop; the client's ``Connect/cancelAllRequests()`` stops it too, while
/// it reads or waits to reconnect.
///
/// The connector's `timeout` bounds each connection, as it bounds any stream: with the default 60 s, a feed quiet for
/// a minute is cut and reconnected (nothing is lost: it resumes from `Last-Event-ID`), and each such reconnection
/// without an event counts against ``EventSourceReconnection/maxAttempts`` and doubles the wait before the next one.
/// For a long-lived feed, give the connector (or `options`) a `timeout` of `.infinity` and the stream an idle timeout
/// that the server's heartbeat keeps from firing: `StreamingOptions(idleTimeout: 45)`. It also bounds the wait for
/// each connection's response head: a reconnection that gets none in time is cut and tried again, as a feed gone
/// quiet is; the first connection's is thrown, as any failure of the first connection.
public struct EventSource: AsyncSequence {
    /// An event.
    public typealias Element = ServerSentEvent

    let connect: Connect
    let connector: any Connector
    let options: RequestOptions
    let streaming: StreamingOptions
    let reconnection: EventSourceReconnection

    /// Makes the iterator; each iterator connects on its own.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(source: self)
    }

    /// Reads events, reconnecting as needed.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private let source: EventSource
        private var events: ResponseEvents<ResponseStream>.AsyncIterator?
        /// The last event ID seen, sent as `Last-Event-ID` when reconnecting. Until an event sets one, the
        /// `Last-Event-ID` the first request carried: an ID the app saved, put on the connector or its options to
        /// resume a feed from it, which the events without an `id` then carry, as after a reconnection.
        public private(set) var lastEventID = ""
        /// ``lastEventID``, `nil` while no `id` field (nor a saved ID) has set one, `""` after the server reset it:
        /// a reconnection's events without an `id` carry it, a reset one too, as on the connection that reset it.
        private var lastEventIDIfSet: String?
        private var delay: TimeInterval
        /// The wait before the next reconnection's back-off (``wait(_:failures:)``): the policy's delay, or the
        /// server's `retry:` once one came; read by tests, which do not wait it out.
        var reconnectionDelay: TimeInterval { delay }
        /// Reconnections since the last event.
        private var failures = 0
        private var isFinished = false
        /// Whether a connection was made once: from then on, one the network refuses is tried again.
        private var hasConnected = false
        /// Whether the current connection handed out an event: one that reaches the body's size limit before any
        /// would reach it again, at the same event, on every reconnection.
        private var deliveredOnConnection = false
        /// The event ID the current connection started from (a saved one, the last one before): a full buffer is
        /// reconnected only once the connection has moved it on.
        private var idAtOpen: String?
        /// The client's count of `cancelAllRequests()` when the first connection began, read once: one since then
        /// stops the source, whether it comes while a connection reads, while the source waits to reconnect, or in
        /// between (a wait just over, its task not yet resumed), where nothing of the source is in flight to cancel.
        private var cancellationsAtOpen: UInt64?
        /// The `Last-Event-ID` the first request went with, as the middlewares left it (a saved ID on the connector,
        /// its options or added by a middleware): the last event ID when the first connection fails with no request
        /// to read it from (cancelled before its answer).
        private let firstRequestID = Protected<String?>(nil)

        init(source: EventSource) {
            self.source = source
            delay = source.reconnection.delay
        }

        /// The next event, reconnecting first when the stream ended; `nil` once the server answered 204.
        public mutating func next() async throws -> ServerSentEvent? {
            while !isFinished {
                if events == nil {
                    // A cancelled reader sends nothing: a request made now would only be cancelled.
                    guard !Task.isCancelled else {
                        isFinished = true
                        throw ConnectError.cancelled()
                    }
                    let opened: ResponseEvents<ResponseStream>.AsyncIterator?
                    if cancellationsAtOpen == nil { cancellationsAtOpen = source.connect.inFlightCancellations }
                    do {
                        opened = try await open()
                    } catch let error as ConnectError
                        where hasConnected && Self.isNetworkFailure(error) && !Task.isCancelled
                    {
                        // A reconnection the network refused (the server restarting, say) is tried again, as a
                        // browser's EventSource does; the first connection's failure is the caller's to see.
                        try await waitToReconnect(after: error)
                        continue
                    } catch {
                        // A cancellation while waiting for the answer, or an answer that fails the source: it is
                        // over, as after a failure while reading, and a later `next()` sends no request.
                        isFinished = true
                        // The first connection's failure leaves the ID the app saved (on the connector, its options
                        // or a middleware's request) as the last event ID, where an app that saves it again finds it.
                        if !hasConnected, lastEventID.isEmpty,
                            let saved = (error as? ConnectError)?.request?.value(forHTTPHeaderField: "Last-Event-ID")
                                ?? firstRequestID.withLock({ $0 })
                        {
                            lastEventID = saved
                            lastEventIDIfSet = saved
                        }
                        throw error
                    }
                    guard let opened else {
                        isFinished = true
                        return nil
                    }
                    events = opened
                    idAtOpen = opened.lastEventIDIfSet
                    hasConnected = true
                    deliveredOnConnection = false
                } else if Task.isCancelled {
                    // The events left of a chunk already read are not handed to a cancelled loop (nor is the last
                    // event ID moved past them); letting the reader go stops the transfer, whether or not the caller
                    // keeps this iterator.
                    events = nil
                    isFinished = true
                    throw ConnectError.cancelled()
                }
                do {
                    if let event = try await events?.next() {
                        failures = 0
                        deliveredOnConnection = true
                        record(events)
                        return event
                    }
                    record(events)
                } catch let error as ConnectError where error.kind == .cancelled || Task.isCancelled {
                    // As of the last event handed out: until one is, the ID the connection resumed from (a saved
                    // one the app keeps again).
                    record(events)
                    events = nil
                    isFinished = true
                    throw error
                } catch let error as ConnectError where Self.isBodySizeLimit(error) {
                    // The size limit of one connection's body (a client-wide `maxResponseBytes`, say), or the
                    // reader's buffer full behind an engine that cannot pause: a reconnection starts its count again, from the last event ID, so a long-lived source is not
                    // ended by the total of its events. A connection that reached it before handing out an event
                    // (one event larger than the limit) would reach it again, there, on every reconnection: that
                    // fails the source, as an event over its own limit does.
                    record(events)
                    events = nil
                    // A reader behind a full buffer goes on only from an event ID this connection moved on: a feed
                    // without IDs (or with a saved one its events never change) would replay the same burst, or lose
                    // what came meanwhile, on every reconnection, for ever.
                    let resumes =
                        !(error.underlyingError is BufferOverflow)
                        || (lastEventIDIfSet?.isEmpty == false && lastEventIDIfSet != idAtOpen)
                    guard deliveredOnConnection, resumes else {
                        isFinished = true
                        throw error
                    }
                    try await waitToReconnect(after: error)
                    continue
                } catch let error as ConnectError where !Self.isNetworkFailure(error) {
                    // A limit (a line or an event's data too long) or another failure the stream's own bytes
                    // decide: a reconnection would meet it again, for ever. The reader is let go
                    // of, which stops the transfer, whether or not the caller keeps this iterator.
                    record(events)
                    events = nil
                    isFinished = true
                    throw error
                } catch {
                    record(events)
                    // A stream the network broke is reconnected like one that ended.
                    events = nil
                    try await waitToReconnect(after: error)
                    continue
                }
                events = nil
                try await waitToReconnect()
            }
            return nil
        }

        /// Counts a connection that ended, broke or could not be made, and waits before the next one; fails once
        /// more than ``EventSourceReconnection/maxAttempts`` came in a row without an event, with the kind of the last
        /// failure (`.notConnected` offline, `.nameResolution`…), or `.connectionLost` when the stream only ended.
        private mutating func waitToReconnect(after failure: (any Error)? = nil) async throws {
            failures += 1
            // Clamped here too: `maxAttempts` is a `var`, which an app may set below 0 after the initializer.
            if let limit = source.reconnection.maxAttempts.map({ Swift.max(0, $0) }), failures > limit {
                isFinished = true
                let message =
                    "the event stream ended or could not be reached \(failures) times in a row without an "
                    + "event: gave up after \(limit) reconnections"
                if let last = failure as? ConnectError {
                    var error = last
                    error.message = message + ", the last: " + last.message
                    throw error
                }
                throw ConnectError(
                    .connectionLost, message: message,
                    underlyingError: failure ?? URLError(.networkConnectionLost))
            }
            // The wait is in flight for the client, so that `cancelAllRequests()` stops it (and one that came since
            // the last connection began, which found nothing in flight if the stream had ended).
            let waiting = Promise<Void>()
            let nanoseconds = Self.nanoseconds(Self.wait(delay, failures: failures))
            let timer = Task {
                try? await Task.sleep(nanoseconds: nanoseconds)
                waiting.completeIfPending(with: .success(()))
            }
            waiting.setCancelHandler { timer.cancel() }
            source.connect.track(
                waiting.future, startedAfter: cancellationsAtOpen ?? source.connect.inFlightCancellations)
            do {
                try await waiting.future.value
            } catch {
                // Cancelled while waiting: the same error as a cancellation while reading.
                isFinished = true
                throw ConnectError.cancelled()
            }
        }

        /// Whether `error` is the size limit of a connection's whole body (it came with the response's head), or the
        /// reader's buffer filling behind an engine that cannot pause (URLSession's), as opposed to a line's or an
        /// event's limit, which the stream's own bytes decide: from its last event, a reconnection goes on.
        private static func isBodySizeLimit(_ error: ConnectError) -> Bool {
            error.kind == .responseTooLarge && (error.storedHead != nil || error.underlyingError is BufferOverflow)
        }

        /// The wait before reconnection number `failures` in a row without an event: `delay` (0.01 s at least),
        /// doubled for each one after the first, up to 30 s (or `delay` itself, when longer).
        ///
        /// The floor applies to the first reconnection too: each event starts the count again, so with a delay of 0
        /// a server that sent one event per connection and closed was called as fast as it answered, for ever. The
        /// app asked for 0, but WHATWG lets the client wait, and 0.01 s (at most 100 connections a second) is no
        /// delay a user notices. A `delay` set below 0 or to NaN (it is a `var`) waits the floor as well.
        static func wait(_ delay: TimeInterval, failures: Int) -> TimeInterval {
            let base = delay >= shortestBackoffStep ? delay : shortestBackoffStep
            guard failures > 1 else { return base }
            let doubled = base * Double(1 << Swift.min(failures - 1, 16))
            return Swift.min(doubled, Swift.max(base, longestBackoff))
        }

        /// The longest wait the doubling reaches, in seconds.
        static let longestBackoff: TimeInterval = 30
        /// The shortest wait before any reconnection, and the least the doubling starts from, in seconds: doubling a
        /// delay of 0 gave 0, and a server that answers and closes at once was called in a loop, as fast as it
        /// answered, for ever.
        static let shortestBackoffStep: TimeInterval = 0.01
        /// The shortest wait a server's `retry:` sets, in seconds: `retry: 0` from a server that answers and closes
        /// at once would otherwise reconnect thousands of times a second.
        static let shortestServerRetry: TimeInterval = 0.5

        /// The wait a server's `retry:` of `milliseconds` sets: half a second at least
        /// (``shortestServerRetry``), an hour at most, or the policy's own delay when that is longer
        /// (``longestServerRetry``).
        static func serverDelay(milliseconds: Int, reconnection: EventSourceReconnection) -> TimeInterval {
            let ceiling = Swift.max(longestServerRetry, reconnection.delay.isNaN ? 0 : reconnection.delay)
            return Swift.min(Swift.max(Double(milliseconds) / 1000, shortestServerRetry), ceiling)
        }

        /// The longest wait a server's `retry:` sets, in seconds, unless the policy's own delay is longer: WHATWG
        /// sets no bound, and `retry: 99999999999` (or a value past `Int`'s range, read as `Int.max`) made the source
        /// wait for years, a feed that never came back. An hour leaves a server room to shed load (a maintenance
        /// window, a flood of clients) far past the 30 s the back-off reaches on its own, and a source still comes
        /// back the same day; an app that wants longer waits sets that delay itself.
        static let longestServerRetry: TimeInterval = 3600

        /// `seconds` as a sleep, capped at a year: a server's `retry:` of 2^63 milliseconds (or an infinite delay)
        /// is a very long wait, not a trap converting it.
        static func nanoseconds(_ seconds: TimeInterval) -> UInt64 {
            guard seconds > 0 else { return 0 }
            return UInt64(Swift.min(seconds, 365 * 24 * 3600) * 1_000_000_000)
        }

        /// Whether `error` says the network did not carry the request (no connection, a timeout, no network), as
        /// opposed to an answer the server gave or a cancellation: the failures the default ``RetryPolicy`` retries,
        /// and no network. The other transport failures (a redirect loop, a body no decoder reads, a certificate
        /// refused, any `.transport` failure) come the same way on every reconnection, which would go on for ever.
        private static func isNetworkFailure(_ error: ConnectError) -> Bool {
            networkFailures.contains(error.kind)
        }

        /// The kinds of ``isNetworkFailure(_:)``.
        private static let networkFailures = RetryPolicy.defaultRetryableFailures.union([.notConnected])

        /// Keeps the last event ID and the server's reconnection time.
        private mutating func record(_ iterator: ResponseEvents<ResponseStream>.AsyncIterator?) {
            guard let iterator else { return }
            lastEventID = iterator.lastEventID
            lastEventIDIfSet = iterator.lastEventIDIfSet
            if let time = iterator.reconnectionTime {
                delay = Self.serverDelay(milliseconds: time, reconnection: source.reconnection)
            }
        }

        /// Connects, with `Last-Event-ID` when there is one; `nil` for a 204 (the server says: stop).
        private func open() async throws -> ResponseEvents<ResponseStream>.AsyncIterator? {
            let lastEventID = lastEventID
            let isReconnection = hasConnected
            var options = source.options
            if !isReconnection {
                // Read after every middleware of the app's (this call's come last): one may add the saved ID.
                let firstRequestID = firstRequestID
                options.middlewares.append(
                    AnyMiddleware.adapter { request in
                        firstRequestID.withLock { $0 = request.value(forHTTPHeaderField: "Last-Event-ID") }
                    })
            }
            let stream = source.connect.stream(
                source.connector, options: options, streaming: source.streaming, startedAfter: cancellationsAtOpen
            ) { request in
                request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
                request.setValue("no-cache", forHTTPHeaderField: "Cache-Control")
                // An id no header can carry (a control character: the parser only drops ids with NUL; text that is not
                // ASCII, which the core sends in no field) is not sent: the request would fail, and the source with
                // it, where a browser reconnects.
                if !lastEventID.isEmpty, HTTPHeader.isSendableValue(lastEventID) {
                    request.setValue(lastEventID, forHTTPHeaderField: "Last-Event-ID")
                } else if isReconnection {
                    // The server reset the ID (an empty `id` field): an ID the app saved on the connector is not
                    // sent again, which would resume the feed from before the reset.
                    request.setValue(nil, forHTTPHeaderField: "Last-Event-ID")
                }
            }
            let head = try await stream.response
            if head.statusCode == 204 {
                stream.cancel()
                return nil
            }
            // Any other status but 200 fails the source, as the standard says: an error body let through (options
            // that accept every status, an error handler that returns nil) is no event stream.
            guard head.statusCode == 200 else {
                stream.cancel()
                throw ConnectError(
                    .rejected, message: "the event source answered status \(head.statusCode), not 200",
                    request: head.request, response: head.response)
            }
            guard let type = head.mediaType, type == "text/event-stream" else {
                stream.cancel()
                let answered = head.mediaType.map { $0.isEmpty ? "an empty Content-Type" : $0 } ?? "no Content-Type"
                throw ConnectError(
                    .rejected, message: "the event source answered \(answered), not text/event-stream",
                    request: head.request, response: head.response)
            }
            // The first connection starts from the ID its request carried, if the app gave one (a saved ID); a
            // reconnection from the last one, a reset one (`""`) included: its events carry what those after the
            // reset on the connection before did.
            guard isReconnection else {
                let saved = head.sentRequest.value(forHTTPHeaderField: "Last-Event-ID")
                return ResponseEvents(stream, lastEventID: saved).makeAsyncIterator()
            }
            var events = ResponseEvents(stream, lastEventID: lastEventIDIfSet)
            events.keepsEmptyLastEventID = true
            return events.makeAsyncIterator()
        }
    }
}

extension Connect {
    /// Server-sent events from an endpoint, reconnecting as a browser's `EventSource` does: after the stream ends
    /// or breaks, it waits (the server's `retry:`, or the policy's delay) and resumes with `Last-Event-ID`.
    ///
    /// ```swift
    /// for try await event in connect.eventSource(Notifications(), reconnection: EventSourceReconnection(delay: 1)) {
    ///     handle(event)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - connector: The endpoint.
    ///   - options: Options for each connection.
    ///   - streaming: Buffer limit, idle timeout and error-body limit of each connection.
    ///   - reconnection: The wait before reconnecting and the most reconnections without an event.
    /// - Returns: The events; connecting starts when iteration does.
    public func eventSource(
        _ connector: any Connector, options: RequestOptions = RequestOptions(),
        streaming: StreamingOptions = StreamingOptions(),
        reconnection: EventSourceReconnection = EventSourceReconnection()
    ) -> EventSource {
        EventSource(
            connect: self, connector: connector, options: options, streaming: streaming, reconnection: reconnection)
    }
}
