import Foundation

// MARK: - Batches of server-sent events

/// The events of a `text/event-stream` body a chunk at a time, their data as bytes (``BytesView``): no `String` is
/// made for an event's data unless you ask for one.
///
/// ``ResponseEvents`` hands out one ``ServerSentEvent`` per event, its data a `String`, and takes an asynchronous
/// step per event: a fast stream of small events (a language model's tokens over a fast network) is then parsed
/// several times slower than it is read. `batches` hands out, for each chunk, a ``ServerSentEventBatch`` of the
/// events that chunk completed; an event of one `data` line that lies whole in the chunk is a view over the chunk's
/// bytes, and the data of the others (split between chunks, of several lines) shares one buffer a batch:
///
/// ```swift
/// for try await batch in stream.events.batches {
///     for event in batch where !event.data.elementsEqual("[DONE]".utf8) {
///         reply += event.data.string
///     }
/// }
/// ```
///
/// The events are exactly those of ``ResponseEvents``, parsed by the same rules and limits: the next chunk is read
/// only when the caller asks for the next batch, and a line or an event's data over its limit fails the iteration
/// with ``ConnectError/Kind/responseTooLarge`` after a batch of the events before it. A chunk that completes no
/// event gives no batch. Over a ``ResponseStream``, a response that declares another `Content-Type` than
/// `text/event-stream` fails the iteration with ``ConnectError/Kind/rejected``, as ``ResponseEvents`` does. The
/// sequence is `Sendable` when its base is.
public struct ResponseEventBatches<Base: AsyncSequence>: AsyncSequence where Base.Element == Data {
    /// The events one chunk completed.
    public typealias Element = ServerSentEventBatch

    private let base: Base
    private let lastEventID: String?
    private let maximumLineLength: Int
    private let maximumDataLength: Int
    /// The `onProgress` of the ``ResponseEvents`` these batches were made from: called once a batch and once at
    /// the end.
    fileprivate var onProgress: (@Sendable (_ lastEventID: String, _ reconnectionTime: Int?) -> Void)?

    /// Reads the events of `base`, a batch a chunk (see ``ResponseEvents/init(_:lastEventID:maximumLineLength:maximumDataLength:onProgress:)``
    /// for the parameters).
    ///
    /// - Parameters:
    ///   - base: The chunks of the body.
    ///   - lastEventID: The last event ID of the connection this one resumes, if any.
    ///   - maximumLineLength: The longest line accepted, in bytes without its line end (1 MiB by default).
    ///   - maximumDataLength: The most data an event may gather, in bytes (16 MiB by default).
    public init(
        _ base: Base, lastEventID: String? = nil, maximumLineLength: Int = 1 << 20, maximumDataLength: Int = 16 << 20
    ) {
        self.base = base
        self.lastEventID = lastEventID
        self.maximumLineLength = maximumLineLength
        self.maximumDataLength = maximumDataLength
    }

    /// Makes an iterator that reads the base from its start.
    public func makeAsyncIterator() -> AsyncIterator {
        let parser = ServerSentEventParser(
            lastEventID: lastEventID, maximumLineLength: maximumLineLength, maximumDataLength: maximumDataLength)
        return AsyncIterator(base: base.makeAsyncIterator(), parser: parser, onProgress: onProgress)
    }

    /// Gives the batches of a ``ResponseEventBatches``, reading chunks of the base until one completes an event.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private var batches: BatchedChunks<Base.AsyncIterator, EventBatching>

        /// The last event ID as of the last batch handed out (its last event's), or, once the iteration has ended,
        /// as of the end: `""` when none is set. Send it in `Last-Event-ID` when reconnecting, unless it is empty.
        public private(set) var lastEventID: String
        /// The reconnection time in milliseconds as of the last batch handed out, or of the end once the
        /// iteration has ended: `nil` until a `retry` field sets one.
        public private(set) var reconnectionTime: Int?
        private let onProgress: (@Sendable (String, Int?) -> Void)?
        /// Whether `onProgress` has been told of the end.
        private var reportedEnd = false

        init(
            base: Base.AsyncIterator, parser: ServerSentEventParser,
            onProgress: (@Sendable (String, Int?) -> Void)? = nil
        ) {
            (base as? any StoppableChunks)?.require(mediaType: "text/event-stream")
            batches = BatchedChunks(base: base, batching: EventBatching(parser: parser))
            lastEventID = parser.lastEventID
            reconnectionTime = parser.reconnectionTime
            self.onProgress = onProgress
        }

        /// The events the next chunks complete; `nil` at the end of the body.
        public mutating func next() async throws -> ServerSentEventBatch? {
            do {
                return progress(try await batches.next())
            } catch {
                _ = progress(nil, ended: true)
                throw error
            }
        }

        /// The events the next chunks complete, reading the base on `actor`; `nil` at the end of the body.
        ///
        /// - Parameter actor: The actor the caller runs on, where the base is read.
        @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> ServerSentEventBatch? {
            do {
                return progress(try await batches.next(isolation: actor))
            } catch {
                _ = progress(nil, ended: true)
                throw error
            }
        }

        /// `batch`, with the last event ID and reconnection time as of it, or as of the end once the body ended or
        /// failed; after a cancellation they stay as of the last batch handed out, as ``ResponseEvents``' do (those of
        /// the events dropped with it would have a reconnection skip them). `onProgress` hears of each batch, and of
        /// the end (`ended`: with an error) once.
        private mutating func progress(_ batch: ServerSentEventBatch?, ended: Bool = false) -> ServerSentEventBatch? {
            if batches.isFinished && !batches.wasCancelled {
                lastEventID = batches.batching.parser.lastEventID
                reconnectionTime = batches.batching.parser.reconnectionTime
            } else if let batch, let last = batch.entries.last {
                let fields = batch.fields[last.fields]
                lastEventID = fields.id ?? ""
                reconnectionTime = fields.reconnectionTime
            }
            if let onProgress, !reportedEnd {
                if batch == nil || batches.isFinished || ended { reportedEnd = true }
                onProgress(lastEventID, reconnectionTime)
            }
            return batch
        }
    }
}

/// The event parser as a batched view uses it: an event found whole in the chunk (one `data` line and its blank
/// line, the common case) points into the chunk; the data of the others (split between chunks, several `data`
/// lines…) is copied into one buffer a batch.
struct EventBatching: ChunkBatching {
    private(set) var parser: ServerSentEventParser

    mutating func batch(of chunk: Data?) -> (batch: ServerSentEventBatch?, failure: (any Error)?) {
        guard let chunk else {
            _ = parser.finish()
            return (nil, nil)
        }
        var builder = Builder(chunk: chunk)
        var failure: (any Error)?
        do {
            try parser.append(chunk, to: &builder)
        } catch {
            failure = error
        }
        guard !builder.entries.isEmpty else { return (nil, failure) }
        let gathered = builder.gathered.isEmpty ? LineStorage.empty : LineStorage(Data(builder.gathered))
        let batch = ServerSentEventBatch(
            chunk: LineStorage(chunk), gathered: gathered, entries: builder.entries, fields: builder.fields)
        return (batch, failure)
    }

    /// The events of one chunk as the parser hands them out.
    private struct Builder: ServerSentEventSink {
        let chunk: Data
        /// The data of the events of the general path.
        var gathered: [UInt8] = []
        var entries: [ServerSentEventBatch.Entry] = []
        var fields: [ServerSentEventBatch.Fields] = []

        init(chunk: Data) {
            self.chunk = chunk
        }

        mutating func event(_ parts: ServerSentEventParser.EventParts) throws {
            reserve(firstData: parts.data)
            fields.append(
                ServerSentEventBatch.Fields(
                    type: parts.type, id: parts.id, retry: parts.retry, reconnectionTime: parts.reconnectionTime))
            entries.append(
                ServerSentEventBatch.Entry(data: gather(parts.data), isInChunk: false, fields: fields.count - 1))
        }

        mutating func wholeEventFields(id: String?, reconnectionTime: Int?) {
            fields.append(
                ServerSentEventBatch.Fields(type: "message", id: id, retry: nil, reconnectionTime: reconnectionTime))
        }

        mutating func wholeEvent(data: UnsafeBufferPointer<UInt8>, chunkRange: Range<Int>?) throws {
            reserve(firstData: data)
            entries.append(
                ServerSentEventBatch.Entry(
                    data: chunkRange ?? gather(data), isInChunk: chunkRange != nil, fields: fields.count - 1))
        }

        /// Copies `data` into the gathered buffer; its range there.
        private mutating func gather(_ data: UnsafeBufferPointer<UInt8>) -> Range<Int> {
            let start = gathered.count
            gathered.append(contentsOf: data)
            return start..<gathered.count
        }

        /// Room for the events of the chunk before the first: as many as fit if all were the size of the first
        /// (one allocation for most chunks), at most 1,024 at first.
        private mutating func reserve(firstData: UnsafeBufferPointer<UInt8>) {
            guard entries.isEmpty else { return }
            // "data:", the data and two line ends: at least 7 bytes more than the data.
            entries.reserveCapacity(min(chunk.count / (firstData.count + 7) + 4, 1024))
        }
    }
}

extension ResponseEventBatches: Sendable where Base: Sendable {}

extension ResponseEvents {
    /// The same events a chunk at a time, their data as bytes (``ResponseEventBatches``): for a fast stream of
    /// small events, where a `String` and a step per event would cost more than reading the stream.
    ///
    /// The batches keep this view's last event ID, limits and `onProgress`, which they call once a batch, with the
    /// last event ID and reconnection time as of its last event, and once at the end, as the view does; their
    /// iterator has the same values (``ResponseEventBatches/AsyncIterator/lastEventID``,
    /// ``ResponseEventBatches/AsyncIterator/reconnectionTime``).
    public var batches: ResponseEventBatches<Base> {
        var batches = ResponseEventBatches(
            base, lastEventID: lastEventID, maximumLineLength: maximumLineLength, maximumDataLength: maximumDataLength)
        batches.onProgress = onProgress
        return batches
    }
}

/// The events one chunk of a stream completed, in order (``ServerSentEventBatch/Event``): their data views over
/// the chunk's bytes where an event lay whole in it, else over one buffer a batch; none copied again.
public struct ServerSentEventBatch: RandomAccessCollection, Sendable {
    /// One event: its data, a range of the chunk or of the gathered buffer, and its fields.
    @usableFromInline struct Entry: Sendable {
        @usableFromInline let data: Range<Int>
        /// Whether `data` is a range of the chunk (else of the gathered buffer).
        @usableFromInline let isInChunk: Bool
        /// The position of its fields in `fields`, which the events after it share while they do not change.
        @usableFromInline let fields: Int
    }

    /// The fields of one event or more.
    @usableFromInline struct Fields: Sendable {
        @usableFromInline let type: String
        @usableFromInline let id: String?
        @usableFromInline let retry: Int?
        let reconnectionTime: Int?
    }

    /// The chunk, which the data of the events found whole in it are views over.
    @usableFromInline let chunk: LineStorage
    /// The data of the other events, one after the other (``LineStorage/empty`` when there are none).
    @usableFromInline let gathered: LineStorage
    /// The events.
    @usableFromInline let entries: [Entry]
    /// The events' fields, once for events in a row that share them.
    @usableFromInline let fields: [Fields]

    init(chunk: LineStorage, gathered: LineStorage, entries: [Entry], fields: [Fields]) {
        self.chunk = chunk
        self.gathered = gathered
        self.entries = entries
        self.fields = fields
    }

    /// An event of a batch: ``ServerSentEvent``'s fields, its data as bytes.
    public struct Event: Sendable {
        /// The event type: `message` unless the block set another.
        public let event: String
        /// The data, its lines joined by LFs: read it as text with ``BytesView/string``.
        public let data: BytesView
        /// The last event ID at its dispatch (`nil` for none), as ``ServerSentEvent/id``.
        public let id: String?
        /// The reconnection time its block's `retry` field set, in milliseconds.
        public let retry: Int?

        @inlinable init(event: String, data: BytesView, id: String?, retry: Int?) {
            self.event = event
            self.data = data
            self.id = id
            self.retry = retry
        }

        /// The event as ``ResponseEvents`` hands it out, its data made a `String`.
        public var serverSentEvent: ServerSentEvent {
            ServerSentEvent(event: event, data: data.string, id: id, retry: retry)
        }
    }

    /// The position of the first event: 0.
    @inlinable public var startIndex: Int { 0 }
    /// The number of events.
    @inlinable public var endIndex: Int { entries.count }

    /// The event at `position`.
    @inlinable public subscript(position: Int) -> Event {
        let entry = entries[position]
        let fields = fields[entry.fields]
        // A view over the chunk or over the gathered buffer, each made from the batch's own reference: chosen
        // first, the reference would cost a retain and a release per event in the caller's loop.
        return Event(
            event: fields.type, data: BytesView(storage: entry.isInChunk ? chunk : gathered, range: entry.data),
            id: fields.id, retry: fields.retry)
    }
}
