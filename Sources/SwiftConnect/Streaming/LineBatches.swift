import Foundation

// MARK: - Batches of lines

/// The lines of a streamed body a chunk at a time, as views over the bytes that arrived: no `String` and no copy
/// is made for a line unless you ask for one.
///
/// ``ResponseLines`` hands out one `String` per line, which costs an allocation and a UTF-8 validation per line and
/// an asynchronous step per line: at network speed nobody notices, but a fast stream of short lines is then parsed
/// several times slower than it is read. `batches` hands out, for each chunk, a ``LineBatch`` of the lines that chunk
/// completed, each a ``BytesView`` over the chunk's bytes. Read a line as text, as `Data`, or byte by byte only
/// where you need it:
///
/// ```swift
/// for try await batch in stream.lines.batches {
///     for line in batch where line.starts(with: Array("data: ".utf8)) {
///         handle(line.string)
///     }
/// }
/// ```
///
/// The lines are exactly those of ``ResponseLines``: LF or CRLF ends a line (the two bytes of a CRLF may come in two
/// chunks), a lone CR stays in the line, the last line counts without a line end after it, and an empty last line
/// does not. The same limits hold: the next chunk is read only when the caller asks for the next batch (no
/// read-ahead), and a line longer than `maximumLineLength` bytes fails the iteration with a ``ConnectError`` of kind
/// ``ConnectError/Kind/responseTooLarge``, after a batch of the lines before it in its chunk. A chunk that
/// completes no line gives no batch. The sequence is `Sendable` when its base is.
///
/// A batch costs one or two allocations for the whole chunk (the lines' bounds; the line begun in earlier chunks),
/// nothing per line: each ``BytesView`` shares the chunk's bytes.
public struct ResponseLineBatches<Base: AsyncSequence>: AsyncSequence where Base.Element == Data {
    /// The lines one chunk completed.
    public typealias Element = LineBatch

    private let base: Base
    private let maximumLineLength: Int

    /// Reads the lines of `base`, a batch a chunk.
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

    /// Gives the batches of a ``ResponseLineBatches``, reading one chunk of the base for each.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private var batches: BatchedChunks<Base.AsyncIterator, LineSplitter>

        init(base: Base.AsyncIterator, splitter: LineSplitter) {
            batches = BatchedChunks(base: base, batching: splitter)
        }

        /// The lines the next chunk completes; `nil` at the end of the body.
        public mutating func next() async throws -> LineBatch? {
            try await batches.next()
        }

        /// The lines the next chunk completes, reading the base on `actor`; `nil` at the end of the body.
        ///
        /// - Parameter actor: The actor the caller runs on, where the base is read.
        @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> LineBatch? {
            try await batches.next(isolation: actor)
        }
    }
}

extension ResponseLineBatches: Sendable where Base: Sendable {}

extension LineSplitter: ChunkBatching {
    /// The lines `chunk` completes as a batch (`nil` for none); at the end of the body, the last line if it had no
    /// line end.
    mutating func batch(of chunk: Data?) -> (batch: LineBatch?, failure: (any Error)?) {
        guard let chunk else {
            return (finishData().map { LineBatch(chunk: Data(), regionStart: 0, lineEnds: [], first: $0) }, nil)
        }
        let (batch, failure): (LineBatch, ConnectError?) = batch(of: chunk)
        return (batch.isEmpty ? nil : batch, failure)
    }
}

extension ResponseLines {
    /// The same lines a chunk at a time, each a view over the bytes that arrived (``ResponseLineBatches``): for a
    /// fast stream of short lines, where a `String` per line would cost more than reading the stream.
    public var batches: ResponseLineBatches<Base> {
        ResponseLineBatches(base, maximumLineLength: maximumLineLength)
    }
}

/// The lines one chunk of a stream completed, in order: views over the chunk's bytes (``BytesView``), none copied.
///
/// A line that began in earlier chunks comes first, its bytes gathered in a buffer of its own. A batch is a value:
/// keep it, or a line of it, as long as you need; the chunk's bytes stay with it.
public struct LineBatch: RandomAccessCollection, Sendable {
    /// The chunk.
    @usableFromInline let chunk: LineStorage
    /// Where the chunk's first complete line starts, as an offset from the chunk's start.
    @usableFromInline let regionStart: Int
    /// For each line complete in the chunk, the offset of the LF that ends it, shifted left by one, with the low bit
    /// set when a CR precedes that LF within the line: the lines' bounds, found once when the chunk arrived.
    @usableFromInline let lineEnds: [Int]
    /// A line begun in earlier chunks, complete, before those of the chunk.
    @usableFromInline let first: LineStorage?
    /// The number of lines.
    public let endIndex: Int

    init(chunk: Data, regionStart: Int, lineEnds: [Int], first: Data?) {
        self.chunk = LineStorage(chunk)
        self.regionStart = regionStart
        self.lineEnds = lineEnds
        self.first = first.map(LineStorage.init)
        self.endIndex = lineEnds.count + (first == nil ? 0 : 1)
    }

    /// The position of the first line: 0.
    @inlinable public var startIndex: Int { 0 }

    /// The line at `position`.
    ///
    /// Inlinable, with the view's accessors, so that a loop over a batch in your module is compiled with them and
    /// pays no call and, where the line is only measured, no reference count per line.
    @inlinable public subscript(position: Int) -> BytesView {
        var index = position
        if let first {
            if index == 0 { return BytesView(storage: first, range: 0..<first.data.count) }
            index -= 1
        }
        let start = index == 0 ? regionStart : (lineEnds[index - 1] >> 1) + 1
        let end = (lineEnds[index] >> 1) - (lineEnds[index] & 1)
        return BytesView(storage: chunk, range: start..<end)
    }
}

/// The bytes lines are views over, shared by reference: a line view costs one reference count, not a copy of a
/// `Data`.
@usableFromInline final class LineStorage: Sendable {
    @usableFromInline let data: Data

    init(_ data: Data) {
        self.data = data
    }

    /// No bytes: what a batch holds where it needs no buffer of its own, shared rather than made each time.
    static let empty = LineStorage(Data())
}

/// Bytes of a streamed body, indexed from 0, shared with the chunk they arrived in rather than copied: a line of
/// ``LineBatch``, or the data of an event of ``ServerSentEventBatch``.
///
/// It is a collection of bytes (`line.starts(with: Array("data: ".utf8))`, `line.count`, `line.first`,
/// `event.data.elementsEqual("[DONE]".utf8)`); read it as text with ``string``, as `Data` with ``data``, or in
/// place with ``withUnsafeBytes(_:)``.
public struct BytesView: RandomAccessCollection, Sendable, CustomStringConvertible {
    /// The bytes the view lies in.
    @usableFromInline let storage: LineStorage
    /// Where the view is in `storage`, as offsets from its start.
    @usableFromInline let range: Range<Int>

    @inlinable init(storage: LineStorage, range: Range<Int>) {
        self.storage = storage
        self.range = range
    }

    /// The position of the first byte: 0.
    @inlinable public var startIndex: Int { 0 }
    /// One past the position of the last byte: the number of bytes.
    @inlinable public var endIndex: Int { range.count }

    /// The byte at `position`, from 0; a position outside `0..<count` stops the program, as an `Array`'s does (the
    /// chunk around the view would otherwise answer with the bytes of another line).
    @inlinable public subscript(position: Int) -> UInt8 {
        precondition(position >= 0 && position < range.count, "BytesView index out of range")
        return storage.data[storage.data.startIndex + range.lowerBound + position]
    }

    /// The bytes decoded as UTF-8, invalid bytes becoming U+FFFD: what ``ResponseLines`` hands out for a line.
    public var string: String {
        withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// The bytes, copied into a `Data` of their own (indexed from 0), for `JSONDecoder` and the like.
    public var data: Data {
        withUnsafeBytes { Data($0) }
    }

    /// Calls `body` with the bytes in place; the pointer is valid only during the call.
    ///
    /// - Parameter body: Reads the bytes.
    /// - Returns: What `body` returns.
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try storage.data.withUnsafeBytes { raw in
            try body(UnsafeRawBufferPointer(rebasing: raw[range]))
        }
    }

    /// The bytes as text (``string``).
    public var description: String { string }
}
