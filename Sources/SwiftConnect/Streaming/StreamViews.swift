import Foundation

// The three views share their shape: an iterator pulls one chunk from the base only when everything the last chunk
// gave has been taken (never reading ahead), hands the chunk to a parser, and returns what it completed one by
// one. A parser's failure comes after what the chunk completed before the failing line, as it would with the
// chunks cut elsewhere; an error of the base comes as it is. After an error or the end, `next()` returns `nil`; an
// error stops the base's transfer (nothing more is read from it), even while the caller keeps the iterator.
// A cancelled loop is handed nothing more: once its task is cancelled, or its `ResponseStream` (the call) is, the
// next `next()` throws `.cancelled`, as the stream's own iterator does, and what the chunk in hand still held is
// dropped (checked before each element, not once a chunk: a chunk can hold thousands of lines).

// MARK: - Lines

/// The lines of a streamed body, as they arrive: each line as a `String`, without its line end.
///
/// A line ends with LF or CRLF (the two bytes of a CRLF may come in different chunks). A lone CR is not a line
/// end: it stays in the line. Lines are decoded as UTF-8, invalid bytes becoming U+FFFD; a character whose bytes
/// come in two chunks decodes whole. The last line counts even without a line end after it; an empty last line
/// does not (`"a\nb\n"` is two lines).
///
/// Apply it to any asynchronous sequence of `Data` chunks, such as a response stream or your own transport's:
///
/// ```swift
/// for try await line in ResponseLines(chunks) {
///     print(line)
/// }
/// ```
///
/// The iterator reads the next chunk only when the lines of the last one have all been taken: a slow consumer
/// slows the reading (back-pressure, on an engine that can pause the transfer; see
/// ``StreamingOptions/bufferLimit``). A line longer than `maximumLineLength` bytes fails the iteration with a
/// ``ConnectError`` of kind ``ConnectError/Kind/responseTooLarge``, so that a server that never ends its line
/// cannot fill the memory; an error of the base sequence comes as it is. Once the task that iterates is cancelled,
/// or the ``ResponseStream`` it reads is (``ResponseStream/cancel()``, ``Connect/cancelAllRequests()``), the next
/// line is not handed out, even one already read: `next()` throws ``ConnectError/Kind/cancelled``, as the stream's
/// own iterator does. The sequence is `Sendable` when its base is.
public struct ResponseLines<Base: AsyncSequence>: AsyncSequence where Base.Element == Data {
    /// A line of the body, without its line end.
    public typealias Element = String

    let base: Base
    let maximumLineLength: Int

    /// Reads the lines of `base`.
    ///
    /// - Parameters:
    ///   - base: The chunks of the body.
    ///   - maximumLineLength: The longest line accepted, in bytes without its line end (1 MiB by default).
    public init(_ base: Base, maximumLineLength: Int = 1 << 20) {
        self.base = base
        self.maximumLineLength = maximumLineLength
    }

    /// Makes an iterator that reads the base from its start.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), splitter: LineSplitter(maximumLineLength: maximumLineLength))
    }

    /// Gives the lines of a ``ResponseLines`` one by one, reading a chunk of the base only when it needs one.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private var base: Base.AsyncIterator
        private var splitter: LineSplitter
        private var lines: PendingElements<String>

        init(base: Base.AsyncIterator, splitter: LineSplitter) {
            self.base = base
            self.splitter = splitter
            // The base, when it can tell that its body was cancelled and be stopped (a `ResponseStream`'s).
            lines = PendingElements(stopping: base as? any StoppableChunks)
        }

        /// The next line; `nil` at the end of the body.
        public mutating func next() async throws -> String? {
            while true {
                try lines.checkCancellation()
                if let line = try lines.take() { return line }
                guard !lines.isFinished else { return nil }
                do {
                    let chunk = try await base.next()
                    // Read as the task or the body was cancelled: not handed out, even as the end (a base that
                    // ends when its task is cancelled, an `AsyncStream`, did not end the body).
                    if lines.isCancelled { continue }
                    consume(chunk)
                } catch {
                    lines.finish(throwing: error)
                }
            }
        }

        /// The next line, reading the base on `actor`; `nil` at the end of the body.
        ///
        /// - Parameter actor: The actor the caller runs on, where the base is read.
        @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> String? {
            while true {
                try lines.checkCancellation()
                if let line = try lines.take() { return line }
                guard !lines.isFinished else { return nil }
                do {
                    let chunk = try await base.next(isolation: actor)
                    // Read as the task or the body was cancelled: not handed out, even as the end (a base that
                    // ends when its task is cancelled, an `AsyncStream`, did not end the body).
                    if lines.isCancelled { continue }
                    consume(chunk)
                } catch {
                    lines.finish(throwing: error)
                }
            }
        }

        private mutating func consume(_ chunk: Data?) {
            guard let chunk else {
                lines.refill(splitter.finish().map { [$0] } ?? [], finishing: true)
                return
            }
            var completed: [String] = []
            do {
                try splitter.append(chunk) { completed.append(String(decoding: $0, as: UTF8.self)) }
                lines.refill(completed)
            } catch {
                lines.refill(completed, finishing: true, throwing: error)
            }
        }
    }
}

extension ResponseLines: Sendable where Base: Sendable {}

// MARK: - JSON Lines

/// The values of a JSON Lines (NDJSON) body, as they arrive: one JSON value per line, decoded into `Element`.
///
/// Lines are split as in ``ResponseLines`` (LF or CRLF); lines of only JSON whitespace (spaces, tabs, CRs) are
/// skipped. Each other line is decoded with the given `JSONDecoder` when the consumer asks for it.
///
/// ```swift
/// struct Token: Decodable { let text: String }
///
/// for try await token in ResponseJSONLines(chunks, as: Token.self) {
///     print(token.text, terminator: "")
/// }
/// ```
///
/// A line that does not decode fails the iteration with a ``ConnectError`` of kind ``ConnectError/Kind/decoding``
/// whose message starts with `line N of the stream: ` (lines count from 1, blank ones included), whose
/// ``ConnectError/body`` is that line's bytes and whose ``ConnectError/codingPath`` and
/// ``ConnectError/underlyingError`` tell what failed in it. The values of the lines before it come first. A line
/// longer than `maximumLineLength` fails with ``ConnectError/Kind/responseTooLarge``; an error of the base comes
/// as it is. The next chunk is read only when the lines of the last one have all been taken. A cancelled task, or a
/// cancelled ``ResponseStream``, gets ``ConnectError/Kind/cancelled`` from the next `next()`, as with
/// ``ResponseLines``. The sequence is `Sendable` when its base is.
public struct ResponseJSONLines<Base: AsyncSequence, Element: Decodable>: AsyncSequence where Base.Element == Data {
    private let base: Base
    private let decoder: JSONDecoder
    private let maximumLineLength: Int
    /// The answer whose body this is, when known (a ``ResponseStream``'s head): a line that fails to decode is reported
    /// with its request and head, so that their secret values (a token in the request, a session cookie the answer
    /// sets) are hidden in the line the error shows, and the error names the status.
    var answer: @Sendable () -> ConnectResponse? = { nil }

    /// Reads the JSON values of `base`, one per line.
    ///
    /// - Parameters:
    ///   - base: The chunks of the body.
    ///   - type: The type of each line's value.
    ///   - decoder: The decoder for each line, such as one with your date strategy.
    ///   - maximumLineLength: The longest line accepted, in bytes without its line end (1 MiB by default).
    public init(
        _ base: Base,
        as type: Element.Type = Element.self,
        decoder: JSONDecoder = JSONDecoder(),
        maximumLineLength: Int = 1 << 20
    ) {
        self.base = base
        self.decoder = decoder
        self.maximumLineLength = maximumLineLength
    }

    /// Makes an iterator that reads the base from its start.
    public func makeAsyncIterator() -> AsyncIterator {
        var iterator = AsyncIterator(
            base: base.makeAsyncIterator(),
            splitter: LineSplitter(maximumLineLength: maximumLineLength),
            decoder: decoder
        )
        iterator.answer = answer
        return iterator
    }

    /// Gives the values of a ``ResponseJSONLines`` one by one, reading a chunk of the base only when it needs one
    /// and decoding a line only when asked for its value.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private var base: Base.AsyncIterator
        private var splitter: LineSplitter
        private let decoder: JSONDecoder
        /// The lines to decode, with their numbers.
        private var lines: PendingElements<(number: Int, bytes: Data)>
        /// How many lines the body has had so far.
        private var lineCount = 0
        /// ``ResponseJSONLines/answer``.
        var answer: @Sendable () -> ConnectResponse? = { nil }

        init(base: Base.AsyncIterator, splitter: LineSplitter, decoder: JSONDecoder) {
            self.base = base
            self.splitter = splitter
            self.decoder = decoder
            // The base, when it can tell that its body was cancelled and be stopped (a `ResponseStream`'s).
            lines = PendingElements(stopping: base as? any StoppableChunks)
        }

        /// The next value; `nil` at the end of the body.
        public mutating func next() async throws -> Element? {
            while true {
                try lines.checkCancellation()
                if let line = try lines.take() { return try decode(line) }
                guard !lines.isFinished else { return nil }
                do {
                    let chunk = try await base.next()
                    // Read as the task or the body was cancelled: not handed out, even as the end (a base that
                    // ends when its task is cancelled, an `AsyncStream`, did not end the body).
                    if lines.isCancelled { continue }
                    consume(chunk)
                } catch {
                    lines.finish(throwing: error)
                }
            }
        }

        /// The next value, reading the base on `actor`; `nil` at the end of the body.
        ///
        /// - Parameter actor: The actor the caller runs on, where the base is read.
        @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> Element? {
            while true {
                try lines.checkCancellation()
                if let line = try lines.take() { return try decode(line) }
                guard !lines.isFinished else { return nil }
                do {
                    let chunk = try await base.next(isolation: actor)
                    // Read as the task or the body was cancelled: not handed out, even as the end (a base that
                    // ends when its task is cancelled, an `AsyncStream`, did not end the body).
                    if lines.isCancelled { continue }
                    consume(chunk)
                } catch {
                    lines.finish(throwing: error)
                }
            }
        }

        private mutating func consume(_ chunk: Data?) {
            var number = lineCount
            var completed: [(number: Int, bytes: Data)] = []
            func add(_ line: UnsafeBufferPointer<UInt8>) {
                number += 1
                // JSON's whitespace: space, tab, CR (an LF ends the line).
                guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { return }
                completed.append((number, Data(line)))
            }
            defer { lineCount = number }
            guard let chunk else {
                splitter.finish(lastLine: add)
                lines.refill(completed, finishing: true)
                return
            }
            do {
                try splitter.append(chunk, eachLine: add)
                lines.refill(completed)
            } catch {
                lines.refill(completed, finishing: true, throwing: error)
            }
        }

        private mutating func decode(_ line: (number: Int, bytes: Data)) throws -> Element {
            do {
                return try decoder.decode(Element.self, from: line.bytes)
            } catch {
                lines.discard()
                var failure = ConnectError.decoding(
                    error, body: line.bytes, as: Element.self, keyDecodingStrategy: decoder.keyDecodingStrategy)
                // The answer first: its request's and head's secrets are hidden from the message before it is read
                // (and cut) below, and the explanations read its `Content-Type`.
                if let answer = answer() {
                    failure.storedRequest = answer.storedRequest
                    failure.storedHead = answer.storedHead
                }
                if JSONNumberFit.isMisfitReport(error, decoding: line.bytes) {
                    // JSONDecoder calls a number that does not fit its type "not valid JSON", with no path.
                    failure.explainNumberMisfit(
                        JSONNumberFit.locate(Element.self, in: line.bytes, with: decoder), decoding: Element.self)
                } else if JSONNumberFit.isISO8601DateReport(error),
                    let date = JSONNumberFit.locateDate(Element.self, in: line.bytes, with: decoder)
                {
                    failure.explainDateMisfit(date, decoding: Element.self)
                }
                failure.message = "line \(line.number) of the stream: " + failure.message
                throw failure
            }
        }
    }
}

extension ResponseJSONLines: Sendable where Base: Sendable {}

// MARK: - Server-sent events

/// The events of a `text/event-stream` body (server-sent events), as they arrive.
///
/// The stream is read as the WHATWG HTML standard says, as browsers' `EventSource` reads it (see
/// ``ServerSentEvent``): comments and blocks without data dispatch nothing, and an event not ended by a blank line
/// when the body ends is dropped. Read over a ``ResponseStream``, a response that declares a `Content-Type` other than
/// `text/event-stream` fails the iteration with ``ConnectError/Kind/rejected`` naming the type, its transfer
/// stopped (one that declares none is read); the chunks of another sequence are read as they are.
///
/// ```swift
/// for try await event in ResponseEvents(chunks) where event.event == "completion" {
///     print(event.data)
/// }
/// ```
///
/// To resume after a dropped connection, a client needs the last event ID and the reconnection time the server
/// asked for. The iterator has both (``AsyncIterator/lastEventID``, ``AsyncIterator/reconnectionTime``): as of the
/// last event it handed out, and, once the iteration has ended (at the end of the body, or with an error), as of
/// the end, with what the blocks after the last event set too:
///
/// ```swift
/// var lastEventID = ""
/// var delay = 3_000
/// while !Task.isCancelled {
///     var events = ResponseEvents(try await openFeed(lastEventID: lastEventID), lastEventID: lastEventID)
///         .makeAsyncIterator()
///     do {
///         while let event = try await events.next() { show(event) }
///     } catch {
///         print("feed dropped:", error)
///     }
///     lastEventID = events.lastEventID
///     delay = events.reconnectionTime ?? delay
///     // A server's `retry` may be any number of milliseconds: capped, it cannot overflow the nanoseconds.
///     try await Task.sleep(nanoseconds: UInt64(min(delay, 3_600_000)) * 1_000_000)
/// }
/// ```
///
/// Inside a `for try await` loop, where the iterator is out of reach, `onProgress` gets the same values at the same
/// moments, for instance to save the ID where the next launch of the app finds it.
///
/// The iterator reads the next chunk only when the events of the last one have all been taken. A line longer than
/// `maximumLineLength`, or an event with more than `maximumDataLength` bytes of data, fails the iteration with a
/// ``ConnectError`` of kind ``ConnectError/Kind/responseTooLarge``; an error of the base comes as it is. Once the
/// task that iterates is cancelled, or the ``ResponseStream`` it reads is, the next event is not handed out, even one
/// already read: `next()` throws ``ConnectError/Kind/cancelled``, and the last event ID and reconnection time stay
/// as of the last event handed out (a reconnection from there gets the events dropped). The sequence is `Sendable`
/// when its base is.
public struct ResponseEvents<Base: AsyncSequence>: AsyncSequence where Base.Element == Data {
    /// An event of the stream.
    public typealias Element = ServerSentEvent

    let base: Base
    let lastEventID: String?
    let maximumLineLength: Int
    let maximumDataLength: Int
    let onProgress: (@Sendable (_ lastEventID: String, _ reconnectionTime: Int?) -> Void)?
    /// Whether a `lastEventID` of `""` is an ID the server reset, which the events without an `id` carry: an
    /// ``EventSource`` reconnecting after a reset.
    var keepsEmptyLastEventID = false

    /// Reads the events of `base`.
    ///
    /// - Parameters:
    ///   - base: The chunks of the body.
    ///   - lastEventID: The last event ID of the connection this one resumes, if any: the events without an `id`
    ///     of their own carry it until the server sets another, as in a browser's `EventSource`. `nil` or `""` for
    ///     none.
    ///   - maximumLineLength: The longest line accepted, in bytes without its line end (1 MiB by default).
    ///   - maximumDataLength: The most data an event may gather, in bytes counting a line feed per `data` line
    ///     (16 MiB by default).
    ///   - onProgress: Called, on the consumer's task, as each event is handed out, with the last event ID (`""`
    ///     for none) and the reconnection time in milliseconds (`nil` until a `retry` field sets one) in effect at
    ///     its dispatch; and once when the iteration ends, at the end of the body or with an error, with their
    ///     final values (after a cancellation, those of the last event handed out). Not called again when you stop
    ///     iterating early. Read through ``batches``, it is called once a batch instead of once an event.
    public init(
        _ base: Base,
        lastEventID: String? = nil,
        maximumLineLength: Int = 1 << 20,
        maximumDataLength: Int = 16 << 20,
        onProgress: (@Sendable (_ lastEventID: String, _ reconnectionTime: Int?) -> Void)? = nil
    ) {
        self.base = base
        self.lastEventID = lastEventID
        self.maximumLineLength = maximumLineLength
        self.maximumDataLength = maximumDataLength
        self.onProgress = onProgress
    }

    /// Makes an iterator that reads the base from its start.
    public func makeAsyncIterator() -> AsyncIterator {
        let parser = ServerSentEventParser(
            lastEventID: lastEventID,
            keepsEmptyID: keepsEmptyLastEventID,
            maximumLineLength: maximumLineLength,
            maximumDataLength: maximumDataLength
        )
        return AsyncIterator(base: base.makeAsyncIterator(), parser: parser, onProgress: onProgress)
    }

    /// Gives the events of a ``ResponseEvents`` one by one, reading a chunk of the base only when it needs one.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private var base: Base.AsyncIterator
        private var parser: ServerSentEventParser
        private let onProgress: (@Sendable (String, Int?) -> Void)?
        /// The events to hand out, with the reconnection time at their dispatch.
        private var events: PendingElements<(event: ServerSentEvent, reconnectionTime: Int?)>
        private var reportedEnd = false

        /// The last event ID as of the last event handed out, or, once the iteration has ended, as of the end:
        /// `""` when none is set. Send it in `Last-Event-ID` when reconnecting, unless it is empty.
        public private(set) var lastEventID: String
        /// The reconnection time in milliseconds as of the last event handed out, or of the end once the iteration
        /// has ended: `nil` until a `retry` field sets one.
        public private(set) var reconnectionTime: Int?
        /// ``lastEventID``, `nil` when no `id` field has set one (nor the stream this one resumes), `""` after a
        /// reset: what an ``EventSource`` resumes from.
        private(set) var lastEventIDIfSet: String?

        init(
            base: Base.AsyncIterator,
            parser: ServerSentEventParser,
            onProgress: (@Sendable (String, Int?) -> Void)?
        ) {
            self.base = base
            self.parser = parser
            self.onProgress = onProgress
            self.lastEventID = parser.lastEventID
            self.lastEventIDIfSet = parser.dispatchedEventID
            self.reconnectionTime = parser.reconnectionTime
            // The base, when it can tell that its body was cancelled and be stopped (a `ResponseStream`'s).
            let stoppable = base as? any StoppableChunks
            events = PendingElements(stopping: stoppable)
            stoppable?.require(mediaType: "text/event-stream")
        }

        /// The next event; `nil` at the end of the body.
        public mutating func next() async throws -> ServerSentEvent? {
            while true {
                try checkCancellation()
                if let event = try take() { return event }
                guard !events.isFinished else { return nil }
                do {
                    let chunk = try await base.next()
                    // Read as the task or the body was cancelled: not handed out, even as the end (a base that
                    // ends when its task is cancelled, an `AsyncStream`, did not end the body).
                    if events.isCancelled { continue }
                    consume(chunk)
                } catch {
                    events.finish(throwing: error)
                }
            }
        }

        /// The next event, reading the base on `actor`; `nil` at the end of the body.
        ///
        /// - Parameter actor: The actor the caller runs on, where the base is read.
        @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> ServerSentEvent? {
            while true {
                try checkCancellation()
                if let event = try take() { return event }
                guard !events.isFinished else { return nil }
                do {
                    let chunk = try await base.next(isolation: actor)
                    // Read as the task or the body was cancelled: not handed out, even as the end (a base that
                    // ends when its task is cancelled, an `AsyncStream`, did not end the body).
                    if events.isCancelled { continue }
                    consume(chunk)
                } catch {
                    events.finish(throwing: error)
                }
            }
        }

        /// The next event parsed, after reporting its progress; at the end, reports the final state once.
        private mutating func take() throws -> ServerSentEvent? {
            do {
                guard let next = try events.take() else {
                    if events.isFinished { reportEnd() }
                    return nil
                }
                lastEventID = next.event.id ?? ""
                lastEventIDIfSet = next.event.id
                reconnectionTime = next.reconnectionTime
                onProgress?(lastEventID, reconnectionTime)
                return next.event
            } catch {
                reportEnd()
                throw error
            }
        }

        /// Ends the iteration with `.cancelled` if its task or body was cancelled. The last event ID and
        /// reconnection time stay as of the last event handed out, and are reported so once: those of the events
        /// dropped with the chunk in hand would have a reconnection skip them.
        private mutating func checkCancellation() throws {
            do {
                try events.checkCancellation()
            } catch {
                if !reportedEnd {
                    reportedEnd = true
                    onProgress?(lastEventID, reconnectionTime)
                }
                throw error
            }
        }

        private mutating func reportEnd() {
            guard !reportedEnd else { return }
            reportedEnd = true
            lastEventID = parser.lastEventID
            lastEventIDIfSet = parser.dispatchedEventID
            reconnectionTime = parser.reconnectionTime
            onProgress?(lastEventID, reconnectionTime)
        }

        private mutating func consume(_ chunk: Data?) {
            guard let chunk else {
                _ = parser.finish()
                events.refill([], finishing: true)
                return
            }
            var completed: [(event: ServerSentEvent, reconnectionTime: Int?)] = []
            do {
                try parser.append(chunk) { completed.append(($0, $1)) }
                events.refill(completed)
            } catch {
                events.refill(completed, finishing: true, throwing: error)
            }
        }
    }
}

extension ResponseEvents: Sendable where Base: Sendable {}

// MARK: - Shared

/// The chunks of a body that can be cancelled from outside the loop that reads them (``ResponseStream/cancel()``,
/// the client's `cancelAllRequests()`): a view over them asks before handing out each element of a chunk in hand.
protocol StoppableChunks {
    /// Whether the body was cancelled: a view hands out nothing more of it.
    var isCancelled: Bool { get }
    /// Cancels the body, stopping its transfer: a view's loop was cancelled.
    func cancel()
    /// Makes a response that declares another media type fail the reading with ``ConnectError/Kind/rejected``,
    /// its transfer stopped: a view that parses one format (server-sent events).
    func require(mediaType: String)
}

/// What an iterator has parsed and not handed out yet, and how its base ended.
struct PendingElements<Element> {
    /// The base, when it can be stopped (a ``ResponseStream``'s): stopped once the iteration ends with an error,
    /// since nothing more will be read from it, even if the caller keeps the iterator.
    private let source: (any StoppableChunks)?
    private var elements: [Element] = []
    private var index = 0
    /// Whether the base has ended (or failed, or the parser failed): nothing more is read from it.
    private(set) var isFinished = false
    /// The error to throw once the elements before it are taken.
    private var error: (any Error)?

    /// Makes an empty list for the elements read from `source`.
    ///
    /// - Parameter source: The base, when it can be stopped.
    init(stopping source: (any StoppableChunks)?) {
        self.source = source
    }

    /// Puts in what a chunk completed, when everything before has been taken; with `finishing`, nothing more is
    /// read, and `error`, if any, is thrown after these elements.
    mutating func refill(_ completed: [Element], finishing: Bool = false, throwing error: (any Error)? = nil) {
        elements = completed
        index = 0
        if finishing { finish(throwing: error) }
    }

    /// Nothing more is read; `error`, if any, is thrown after the elements already there.
    mutating func finish(throwing error: (any Error)?) {
        isFinished = true
        self.error = error
    }

    /// Nothing more is handed out: the elements still there are dropped, and the source is stopped.
    mutating func discard() {
        elements = []
        index = 0
        finish(throwing: nil)
        source?.cancel()
    }

    /// Whether the task that reads, or the source, was cancelled.
    var isCancelled: Bool { Task.isCancelled || source?.isCancelled == true }

    /// Whether the iteration has ended, its elements taken and its error thrown: `next()` returns `nil`.
    private var isOver: Bool { isFinished && index >= elements.count && error == nil }

    /// Ends the iteration with ``ConnectError/Kind/cancelled`` when the task that reads is cancelled, or the source
    /// (the base) was: the elements still there are dropped, and the source is cancelled, which stops its transfer.
    /// Nothing happens once the iteration is over.
    mutating func checkCancellation() throws {
        guard !isOver, isCancelled else { return }
        discard()
        throw ConnectError.cancelled()
    }

    /// The next element; `nil` when there is none (read the base unless ``isFinished``). Throws the error that
    /// ended the iteration once the elements before it are taken, once, and stops the source: a parser's failure
    /// (a line too long) leaves the transfer running otherwise, as long as the caller keeps the iterator.
    mutating func take() throws -> Element? {
        if index < elements.count {
            defer { index += 1 }
            return elements[index]
        }
        if let error {
            self.error = nil
            source?.cancel()
            throw error
        }
        return nil
    }
}
