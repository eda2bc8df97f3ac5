import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Android)
    import Android
#endif

/// One event of a `text/event-stream` response (server-sent events), as ``ResponseEvents`` delivers them.
///
/// The server sends each event as a block of `field: value` lines ended by a blank line:
///
/// ```text
/// event: price
/// id: 42
/// data: {"symbol": "ACME",
/// data:  "price": 12.5}
///
/// ```
///
/// which arrives as
///
/// ```swift
/// ServerSentEvent(event: "price", data: "{\"symbol\": \"ACME\",\n \"price\": 12.5}", id: "42")
/// ```
///
/// The fields are read as the WHATWG HTML standard says ("Interpreting an event stream"), as browsers'
/// `EventSource` reads them.
public struct ServerSentEvent: Sendable, Hashable {
    /// The event's type: the value of its `event` field, or `"message"` when it has none (or an empty one).
    public var event: String
    /// The event's data: the values of its `data` fields joined with line feeds (`"\n"`).
    ///
    /// An event has at least one `data` field, which may be empty; a block without one dispatches nothing.
    public var data: String
    /// The last event ID in effect when the event was dispatched: the value of the latest `id` field, of this
    /// event's block or an earlier one; `nil` when no `id` field has set one yet.
    ///
    /// An empty `id` field resets the ID: the events after it have `""`, on that connection and, read through an
    /// ``EventSource``, on the connections after it until the server sets another (``ResponseEvents`` given `""` as
    /// the ID to resume from starts from `nil`). Keep the last ID you processed and send it in the
    /// `Last-Event-ID` header when you reconnect (unless it is empty), so that the server resumes after it.
    public var id: String?
    /// The reconnection time in milliseconds that a `retry` field of this event's block set; `nil` when the block
    /// has none (the value an earlier block set still holds).
    public var retry: Int?

    /// Creates an event, as a server would send it (for tests, or a custom parser).
    ///
    /// - Parameters:
    ///   - event: The event's type; `"message"` by default.
    ///   - data: The event's data.
    ///   - id: The last event ID in effect; `nil` for none.
    ///   - retry: The reconnection time in milliseconds the event's block set; `nil` for none.
    public init(event: String = "message", data: String = "", id: String? = nil, retry: Int? = nil) {
        self.event = event
        self.data = data
        self.id = id
        self.retry = retry
    }
}

/// Parses a `text/event-stream` body into ``ServerSentEvent``s as its chunks arrive: the parsing of
/// ``ResponseEvents``.
///
/// It follows the WHATWG HTML standard, "Interpreting an event stream", to the letter:
///
/// - The stream is UTF-8 (invalid bytes become U+FFFD); a byte order mark at its very start is skipped, once.
/// - A line ends with CRLF, LF or a lone CR. A CR that ends one chunk and an LF that starts the next are one line
///   end: the CR ends the line at once (an event can be dispatched without waiting for the next chunk), and an LF
///   right after it is skipped.
/// - A blank line dispatches the event; a line starting with `:` is a comment; `name: value` is a field, one space
///   after the colon being dropped; a line without a colon is a field with an empty value.
/// - `event` sets the type, `data` adds a line to the data, `id` sets the last event ID (unless its value holds a
///   U+0000 NULL), `retry` sets ``reconnectionTime`` (only when its value is all ASCII digits); other fields are
///   ignored.
/// - A block without `data` dispatches nothing (its `id` still becomes ``lastEventID``).
/// - An event not ended by a blank line when the stream ends is dropped, as browsers drop it.
///
/// A line longer than ``maximumLineLength`` bytes, or an event whose data grows past ``maximumDataLength`` bytes,
/// makes ``append(_:)`` throw a ``ConnectError`` of kind ``ConnectError/Kind/responseTooLarge`` rather than
/// holding ever more bytes; after that, stop using the parser.
///
/// ```swift
/// var parser = ServerSentEventParser()
/// try parser.append(Data("data: hel".utf8))  // []
/// try parser.append(Data("lo\n\n".utf8))  // [ServerSentEvent(data: "hello")]
/// ```
struct ServerSentEventParser {
    private static let lineFeed: UInt8 = 0x0A
    private static let carriageReturn: UInt8 = 0x0D
    private static let colon: UInt8 = 0x3A
    private static let space: UInt8 = 0x20
    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// The longest line accepted, in bytes without its line end.
    let maximumLineLength: Int
    /// The most bytes of data an event may gather, counting a line feed after each of its `data` lines.
    let maximumDataLength: Int

    /// The last event ID: the one in effect at the latest dispatch (``ServerSentEvent/id`` of the latest event,
    /// or set by a block without data); `""` when none is set. Send it in `Last-Event-ID` when reconnecting,
    /// unless it is empty.
    var lastEventID: String { dispatchedEventID ?? "" }
    /// ``lastEventID``, `nil` when no `id` field has set one (nor the stream this one resumes), `""` after a
    /// reset (an empty `id` field).
    private(set) var dispatchedEventID: String?
    /// The reconnection time in milliseconds that the latest valid `retry` field set (at once, even in a block
    /// that is never dispatched, as the standard says); `nil` when none has.
    private(set) var reconnectionTime: Int?

    /// The first bytes of the stream while they may still be a byte order mark; `nil` once that is decided.
    private var streamHead: [UInt8]? = []
    /// The start of the line that the chunks so far have not ended: no CR or LF in it.
    private var pending: [UInt8] = []
    /// Whether the last byte seen was a CR that ended a line: an LF right after it belongs to that line end.
    private var skipsLineFeed = false
    /// The data buffer: each `data` value followed by an LF.
    private var data: [UInt8] = []
    /// The event type buffer.
    private var eventType = ""
    /// The last event ID buffer; `nil` until an `id` field sets it.
    private var eventID: String?
    /// The value of a valid `retry` field in the current block.
    private var retry: Int?
    /// Whether the sink was told the fields of whole events (``ServerSentEventSink/wholeEventFields(id:reconnectionTime:)``)
    /// since the current call began and since the last event ID or reconnection time last changed or an event of
    /// the general path was handed out.
    private var wholeEventFieldsTold = false

    /// Creates a parser for a new stream.
    ///
    /// - Parameters:
    ///   - lastEventID: The last event ID of an earlier connection that this one resumes: events without an `id`
    ///     of their own carry it until the server sets another, as in a browser's `EventSource`. `nil` or `""`
    ///     for none.
    ///   - keepsEmptyID: Whether a `lastEventID` of `""` is an ID the server reset (an ``EventSource`` that
    ///     reconnects after a reset), which the events without an `id` carry, rather than none.
    ///   - maximumLineLength: The longest line accepted, in bytes without its line end (1 MiB by default).
    ///   - maximumDataLength: The most data an event may gather, in bytes counting an LF per `data` line (16 MiB
    ///     by default).
    init(
        lastEventID: String? = nil, keepsEmptyID: Bool = false, maximumLineLength: Int = 1 << 20,
        maximumDataLength: Int = 16 << 20
    ) {
        let id = keepsEmptyID || lastEventID?.isEmpty == false ? lastEventID : nil
        self.dispatchedEventID = id
        self.eventID = id
        self.maximumLineLength = max(0, maximumLineLength)
        self.maximumDataLength = max(0, maximumDataLength)
    }

    /// The events that `chunk` completes.
    ///
    /// - Parameter chunk: The next bytes of the stream.
    /// - Returns: The events dispatched by the blank lines in `chunk`, in order; often none.
    /// - Throws: A ``ConnectError`` of kind ``ConnectError/Kind/responseTooLarge`` for a line longer than
    ///   ``maximumLineLength`` or an event's data longer than ``maximumDataLength``.
    mutating func append(_ chunk: Data) throws -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        try append(chunk) { event, _ in events.append(event) }
        return events
    }

    /// Calls `body` with each event that `chunk` completes and the ``reconnectionTime`` in effect when it was
    /// dispatched.
    ///
    /// When it throws, `body` has seen the events before the line that failed.
    ///
    /// - Parameters:
    ///   - chunk: The next bytes of the stream.
    ///   - body: Called for each event, in order.
    mutating func append(
        _ chunk: Data,
        eachEvent body: (_ event: ServerSentEvent, _ reconnectionTime: Int?) throws -> Void
    ) throws {
        try withoutActuallyEscaping(body) { body in
            var events = EventCalls(body: body)
            try append(chunk, to: &events)
        }
    }

    /// Makes a ``ServerSentEvent`` of each event and calls a closure with it: the sink of
    /// ``append(_:eachEvent:)``.
    private struct EventCalls: ServerSentEventSink {
        let body: (_ event: ServerSentEvent, _ reconnectionTime: Int?) throws -> Void
        /// The fields of the whole events, as last told.
        var id: String?
        var reconnectionTime: Int?

        init(body: @escaping (_ event: ServerSentEvent, _ reconnectionTime: Int?) throws -> Void) {
            self.body = body
        }

        func event(_ parts: EventParts) throws {
            let event = ServerSentEvent(
                event: parts.type, data: String(decoding: parts.data, as: UTF8.self), id: parts.id, retry: parts.retry)
            try body(event, parts.reconnectionTime)
        }

        mutating func wholeEventFields(id: String?, reconnectionTime: Int?) {
            self.id = id
            self.reconnectionTime = reconnectionTime
        }

        func wholeEvent(data: UnsafeBufferPointer<UInt8>, chunkRange: Range<Int>?) throws {
            try body(ServerSentEvent(data: String(decoding: data, as: UTF8.self), id: id), reconnectionTime)
        }
    }

    /// An event of the general path as the parser dispatches it, its data gathered, still bytes: what
    /// ``append(_:eachEvent:)`` makes a ``ServerSentEvent`` of, and what batches copy into one buffer a chunk.
    struct EventParts {
        /// The event's data, its lines joined by LFs; valid only during the call.
        var data: UnsafeBufferPointer<UInt8>
        /// The event type (`message` by default).
        var type: String
        /// The last event ID at its dispatch.
        var id: String?
        /// The `retry` field of its own block.
        var retry: Int?
        /// The reconnection time in effect at its dispatch.
        var reconnectionTime: Int?
    }

    /// Hands each event `chunk` completes to `sink`: an event found whole in the chunk (one `data` line and its
    /// blank line, from a state with nothing gathered) with its data in place (``ServerSentEventSink/wholeEvent(data:chunkRange:)``),
    /// any other with its data gathered (``ServerSentEventSink/event(_:)``).
    ///
    /// When it throws, `sink` has had the events before the line that failed.
    mutating func append<Sink: ServerSentEventSink>(_ chunk: Data, to sink: inout Sink) throws {
        wholeEventFieldsTold = false
        try chunk.withUnsafeBytes { raw in
            var bytes = raw.assumingMemoryBound(to: UInt8.self)
            if var head = streamHead {
                // Up to the third byte of the stream, it may begin with a byte order mark, perhaps split in chunks.
                let taken = min(bytes.count, 3 - head.count)
                head.append(contentsOf: bytes.prefix(taken))
                if head.count < 3, head[...] == ServerSentEventParser.byteOrderMark.prefix(head.count) {
                    streamHead = head
                    return
                }
                streamHead = nil
                if head == ServerSentEventParser.byteOrderMark {
                    bytes = UnsafeBufferPointer(rebasing: bytes[taken...])
                } else {
                    // Not a mark: the bytes held back come first.
                    let heldBack = head.count - taken
                    try head.withUnsafeBufferPointer {
                        try parse(UnsafeBufferPointer(rebasing: $0.prefix(heldBack)), chunkStart: nil, &sink)
                    }
                }
            }
            try parse(bytes, chunkStart: raw.baseAddress?.assumingMemoryBound(to: UInt8.self), &sink)
        }
    }

    /// Ends the stream: returns no event, since an event not ended by a blank line is dropped, as the standard
    /// says ("If the file ends in the middle of an event, before the final empty line, the incomplete event is not
    /// dispatched"). Here for symmetry with ``LineSplitter/finish()``.
    ///
    /// ``lastEventID`` and ``reconnectionTime`` keep their values; the parser is ready for a new stream.
    ///
    /// - Returns: `[]`.
    mutating func finish() -> [ServerSentEvent] {
        streamHead = []
        pending = []
        skipsLineFeed = false
        data = []
        eventType = ""
        retry = nil
        // An `id` of the block left undispatched goes with it: the next stream's events start from the last one.
        eventID = dispatchedEventID
        return []
    }

    // MARK: - Lines

    /// Splits `bytes` into lines at CR, LF and CRLF, and interprets each complete line.
    ///
    /// `chunkStart` is where the chunk `bytes` lie in begins (`nil` when `bytes` are the parser's own, the bytes a
    /// possible byte order mark held back): an event found whole in `bytes` reports its data's place in the chunk.
    private mutating func parse<Sink: ServerSentEventSink>(
        _ bytes: UnsafeBufferPointer<UInt8>,
        chunkStart: UnsafePointer<UInt8>?,
        _ sink: inout Sink
    ) throws {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        let count = bytes.count
        var start = 0
        if skipsLineFeed {
            skipsLineFeed = false
            if bytes[0] == ServerSentEventParser.lineFeed { start = 1 }
        }
        // Where the next LF is, at `start` or after (`count` for none): kept between lines, so that a chunk of many
        // lines ended by lone CRs is searched once for LFs, not once per line.
        var nextLineFeed = -1
        while start < count {
            if nextLineFeed < start {
                nextLineFeed = ServerSentEventParser.find(ServerSentEventParser.lineFeed, in: base, start, count)
            }
            // Between events, with nothing gathered: an event of one `data` line and its blank line, whole in
            // these bytes, is dispatched at once, its data pointing into them.
            if pending.isEmpty, data.isEmpty, eventType.isEmpty, retry == nil,
                let event = wholeEvent(in: base, from: start, to: count, nextLineFeed: nextLineFeed)
            {
                if !wholeEventFieldsTold {
                    // Until they are told again, the last event ID is already the one set here.
                    dispatchedEventID = eventID
                    sink.wholeEventFields(id: eventID, reconnectionTime: reconnectionTime)
                    wholeEventFieldsTold = true
                }
                let offset = chunkStart.map { UnsafeRawPointer($0).distance(to: UnsafeRawPointer(base)) }
                try sink.wholeEvent(
                    data: UnsafeBufferPointer(start: base + event.data.lowerBound, count: event.data.count),
                    chunkRange: offset.map { event.data.lowerBound + $0..<event.data.upperBound + $0 })
                start = event.end
                if event.endsWithCarriageReturn, start == count { skipsLineFeed = true }
                continue
            }
            let end = ServerSentEventParser.find(ServerSentEventParser.carriageReturn, in: base, start, nextLineFeed)
            guard end < count else { break }
            try completeLine(with: UnsafeBufferPointer(rebasing: bytes[start..<end]), &sink)
            start = end + 1
            if bytes[end] == ServerSentEventParser.carriageReturn {
                if start == count {
                    skipsLineFeed = true
                } else if bytes[start] == ServerSentEventParser.lineFeed {
                    start += 1
                }
            }
        }
        guard start < count else { return }
        guard pending.count + (count - start) <= maximumLineLength else { throw lineTooLong() }
        pending.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
    }

    /// An event that `base[start..<count]` begins with whole, as the general path would dispatch it: one `data` line
    /// (no other field, no comment), within the line and data limits, ended by CR, LF or CRLF, then a blank line.
    /// `nil` for anything else, which the general path then reads line by line.
    ///
    /// - Parameters:
    ///   - nextLineFeed: The first LF at `start` or after (`count` for none).
    /// - Returns: The data's bounds; where the next line starts (after the blank line's end, and after an LF
    ///   following a CR there when it is in `base`); whether the blank line ended with a CR at `count - 1`, which
    ///   an LF starting the next chunk would complete.
    private func wholeEvent(
        in base: UnsafePointer<UInt8>, from start: Int, to count: Int, nextLineFeed: Int
    ) -> (data: Range<Int>, end: Int, endsWithCarriageReturn: Bool)? {
        // "data:", a byte after it (a space or the value's first), a line end and a blank line: 7 bytes at least.
        guard count - start >= 7, base[start] == 0x64, base[start + 1] == 0x61, base[start + 2] == 0x74,
            base[start + 3] == 0x61, base[start + 4] == ServerSentEventParser.colon
        else { return nil }
        var valueStart = start + 5
        if base[valueStart] == ServerSentEventParser.space { valueStart += 1 }
        // The line ends at its first CR or LF; none before `count` and the event is not whole here.
        let lineEnd = ServerSentEventParser.find(
            ServerSentEventParser.carriageReturn, in: base, valueStart, nextLineFeed)
        guard lineEnd < count - 1, lineEnd - start <= maximumLineLength,
            lineEnd - valueStart < maximumDataLength
        else { return nil }
        var blank = lineEnd + 1
        if base[lineEnd] == ServerSentEventParser.carriageReturn, base[blank] == ServerSentEventParser.lineFeed {
            blank += 1
            guard blank < count else { return nil }
        }
        var end = blank + 1
        switch base[blank] {
        case ServerSentEventParser.lineFeed:
            return (valueStart..<lineEnd, end, false)
        case ServerSentEventParser.carriageReturn:
            guard end < count else { return (valueStart..<lineEnd, end, true) }
            if base[end] == ServerSentEventParser.lineFeed { end += 1 }
            return (valueStart..<lineEnd, end, false)
        default:
            return nil
        }
    }

    /// The index of the first `byte` in `base[start..<end]`, or `end`.
    private static func find(_ byte: UInt8, in base: UnsafePointer<UInt8>, _ start: Int, _ end: Int) -> Int {
        guard start < end, let found = memchr(base + start, Int32(byte), end - start) else { return end }
        return UnsafeRawPointer(base).distance(to: UnsafeRawPointer(found))
    }

    /// Ends the line made of `pending` and `piece` (the bytes before a line end) and interprets it.
    private mutating func completeLine<Sink: ServerSentEventSink>(
        with piece: UnsafeBufferPointer<UInt8>,
        _ sink: inout Sink
    ) throws {
        guard pending.count + piece.count <= maximumLineLength else { throw lineTooLong() }
        if pending.isEmpty {
            try interpret(piece, &sink)
            return
        }
        pending.append(contentsOf: piece)
        // The buffer is moved out while it is read, since interpreting the line changes other state.
        var line = pending
        pending = []
        try line.withUnsafeBufferPointer { try interpret($0, &sink) }
        LineSplitter.empty(&line)
        pending = line
    }

    private func lineTooLong() -> ConnectError {
        ConnectError.lineTooLong(limit: maximumLineLength)
    }

    // MARK: - Fields

    /// Interprets one line: a blank line dispatches, a comment is skipped, anything else is a field.
    private mutating func interpret<Sink: ServerSentEventSink>(
        _ line: UnsafeBufferPointer<UInt8>,
        _ sink: inout Sink
    ) throws {
        guard let first = line.first else {
            try dispatch(&sink)
            return
        }
        guard first != ServerSentEventParser.colon else { return }
        let name: UnsafeBufferPointer<UInt8>
        var value: UnsafeBufferPointer<UInt8>
        if let colon = line.firstIndex(of: ServerSentEventParser.colon) {
            name = UnsafeBufferPointer(rebasing: line[..<colon])
            value = UnsafeBufferPointer(rebasing: line[(colon + 1)...])
            if value.first == ServerSentEventParser.space { value = UnsafeBufferPointer(rebasing: value.dropFirst()) }
        } else {
            name = line
            value = UnsafeBufferPointer(rebasing: line[line.endIndex...])
        }
        // Field names are compared as bytes: the four known are ASCII, and bytes that are not UTF-8 (U+FFFD once
        // decoded) match none of them either way.
        if ServerSentEventParser.fieldName(name, is: "data") {
            guard data.count + value.count + 1 <= maximumDataLength else {
                throw ConnectError(
                    .responseTooLarge,
                    message: "an event of the stream has more than \(maximumDataLength) bytes of data "
                        + "(raise maximumDataLength if the server sends events that large)"
                )
            }
            data.append(contentsOf: value)
            data.append(ServerSentEventParser.lineFeed)
        } else if ServerSentEventParser.fieldName(name, is: "event") {
            eventType = String(decoding: value, as: UTF8.self)
        } else if ServerSentEventParser.fieldName(name, is: "id") {
            if !value.contains(0) {
                eventID = String(decoding: value, as: UTF8.self)
                wholeEventFieldsTold = false
            }
        } else if ServerSentEventParser.fieldName(name, is: "retry") {
            if let milliseconds = ServerSentEventParser.milliseconds(value) {
                reconnectionTime = milliseconds
                retry = milliseconds
                wholeEventFieldsTold = false
            }
        }
    }

    /// Whether the field name `name` is `field`, byte for byte.
    private static func fieldName(_ name: UnsafeBufferPointer<UInt8>, is field: StaticString) -> Bool {
        guard name.count == field.utf8CodeUnitCount, let base = name.baseAddress else { return false }
        return memcmp(base, field.utf8Start, name.count) == 0
    }

    /// The value of a `retry` field when it is all ASCII digits (at least one); too large a number gives
    /// `Int.max`.
    private static func milliseconds(_ value: UnsafeBufferPointer<UInt8>) -> Int? {
        guard !value.isEmpty else { return nil }
        var result = 0
        for byte in value {
            guard (0x30...0x39).contains(byte) else { return nil }
            let (times10, overflow1) = result.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int(byte - 0x30))
            result = overflow1 || overflow2 ? Int.max : sum
        }
        return result
    }

    /// Dispatches the event gathered since the last blank line, if it has data, and starts the next one.
    private mutating func dispatch<Sink: ServerSentEventSink>(_ sink: inout Sink) throws {
        dispatchedEventID = eventID
        defer {
            LineSplitter.empty(&data)
            if !eventType.isEmpty { eventType = "" }
            retry = nil
        }
        guard !data.isEmpty else { return }
        // Every data line added an LF: the one after the last goes.
        let type = eventType.isEmpty ? "message" : eventType
        let (id, retry, reconnectionTime) = (eventID, retry, reconnectionTime)
        wholeEventFieldsTold = false
        try data.withUnsafeBufferPointer {
            try sink.event(
                EventParts(
                    data: UnsafeBufferPointer(rebasing: $0.dropLast()), type: type, id: id, retry: retry,
                    reconnectionTime: reconnectionTime))
        }
    }
}

/// What receives the events of a ``ServerSentEventParser``: ``ServerSentEventParser/append(_:to:)`` is generic over
/// it, so that each use (a `String` an event, a batch of views) is compiled with its own calls.
protocol ServerSentEventSink {
    /// An event of the general path, its data gathered in the parser's buffer.
    mutating func event(_ parts: ServerSentEventParser.EventParts) throws
    /// The fields of the whole events that follow, until told again: the last event ID and the reconnection time in
    /// effect (their type is `message`, their block has no `retry`). Told before the first whole event of each
    /// call to ``ServerSentEventParser/append(_:to:)`` and whenever they may have changed since.
    mutating func wholeEventFields(id: String?, reconnectionTime: Int?)
    /// An event whose block lay whole in the chunk, one `data` line and its blank line, read from a state with
    /// nothing gathered: its data in place, valid only during the call, and where it lies in the chunk (offsets
    /// from its start; `nil` for bytes that are not the chunk's, those a possible byte order mark held back).
    mutating func wholeEvent(data: UnsafeBufferPointer<UInt8>, chunkRange: Range<Int>?) throws
}
