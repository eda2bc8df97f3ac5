import CSwiftConnectZlib
import Foundation

/// A content coding the core decodes itself, for an engine that hands a body over as the server sent it:
/// `gzip` (RFC 1952, `x-gzip` too) and `deflate` (RFC 9110: zlib, RFC 1950; raw RFC 1951 as some servers send it).
enum ContentCoding: String, Sendable {
    case gzip
    case deflate

    /// The coding a `Content-Encoding` token names, or `nil` when the core cannot decode it.
    init?(token: String) {
        switch token {
        case "gzip", "x-gzip": self = .gzip
        case "deflate": self = .deflate
        default: return nil
        }
    }
}

/// Why a compressed body could not be decoded: the core reports it as ``ConnectError/Kind/transport``, this
/// kept as the underlying error.
struct ContentDecodingFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The body's coding.
    let coding: ContentCoding
    /// What is wrong with it.
    let reason: String

    var description: String { "the \(coding.rawValue) body cannot be decoded: \(reason)" }
}

/// A response body decoded from `coding` as it is read, in parts of at most ``Inflater/step`` bytes.
///
/// This is what bounds a decompression bomb: the size limit and a stream's back-pressure see each part as it is
/// made, so a megabyte that decodes to a gigabyte is stopped at the limit plus one part, and no further input is
/// read while the reader is behind. (AsyncHTTPClient's own decompressor decodes each read of the socket whole:
/// about a thousand times the read for such a body, buffered before a limit can stop it.)
struct DecodedBody<Base: AsyncSequence>: AsyncSequence where Base.Element == Data {
    typealias Element = Data

    let base: Base
    let coding: ContentCoding

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), inflater: Inflater(coding))
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let inflater: Inflater
        var done = false

        mutating func next() async throws -> Data? {
            while !done {
                if let part = try inflater.step() { return part }
                guard let input = try await base.next() else {
                    done = true
                    try inflater.finish()
                    return nil
                }
                inflater.feed(input)
            }
            return nil
        }
    }
}

/// zlib's inflate over a body that arrives in chunks: ``feed(_:)`` a chunk, then take ``step()`` until it returns
/// `nil`, and ``finish()`` at the end of the input. Not `Sendable`: one exchange's task owns it.
final class Inflater {
    /// The most one step decodes.
    static let step = 64 << 10
    /// The most input one call of `inflate` takes: zlib counts it in 32 bits (`uInt`), and a chunk longer than that
    /// (over 4 GiB) goes over several calls.
    static let largestInputPiece = Int(clamping: uInt.max)

    private let coding: ContentCoding
    /// The most input one call of `inflate` takes: ``largestInputPiece``, less in tests.
    private let inputPiece: Int
    /// zlib's state, on the heap: zlib keeps a pointer back to it, so it must not move between calls.
    private let stream: UnsafeMutablePointer<z_stream> = {
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        return stream
    }()
    /// Whether `stream` was initialized (`deflate` waits for its first two bytes to tell zlib's from raw).
    private var started = false
    /// Whether the compressed data has ended (a gzip member, or the deflate stream).
    private var ended = false
    /// Input not yet decoded, from `offset`.
    private var input = Data()
    private var offset = 0
    /// Whether any input arrived: a body of no bytes at all decodes to nothing.
    private var sawInput = false
    /// Whether the last step filled its buffer: zlib may have more to give without more input.
    private var outputPending = false
    /// Where each step decodes to, reused: a part is copied out at its exact size, so that small parts of a
    /// stream (a gzip'd event stream) do not each hold a step's worth of memory.
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: Inflater.step, alignment: 1)

    init(_ coding: ContentCoding, inputPiece: Int = Inflater.largestInputPiece) {
        self.coding = coding
        self.inputPiece = min(max(inputPiece, 1), Inflater.largestInputPiece)
    }

    deinit {
        if started { inflateEnd(stream) }
        stream.deinitialize(count: 1)
        stream.deallocate()
        scratch.deallocate()
    }

    /// Adds a chunk of the compressed body.
    func feed(_ chunk: Data) {
        guard !chunk.isEmpty else { return }
        sawInput = true
        if offset == input.count {
            input = chunk
            offset = 0
        } else {
            input.append(chunk)
        }
    }

    /// Decodes up to ``step`` bytes of what was fed, or returns `nil` when it needs more input.
    func step() throws -> Data? {
        while offset < input.count || outputPending {
            if ended {
                // More after the end: another gzip member (RFC 1952 allows several), else data that is no part of it.
                guard coding == .gzip, input[input.startIndex + offset] == 0x1F else {
                    throw failure("there are bytes after the end of the compressed data")
                }
                guard inflateReset(stream) == Z_OK else { throw failure("zlib could not start the next member") }
                ended = false
            }
            if !started {
                guard let windowBits = windowBits() else { return nil }
                guard CSwiftConnectZlib_inflateInit2(stream, windowBits) == Z_OK else {
                    throw failure("zlib could not start (\(message ?? "out of memory"))")
                }
                started = true
            }
            let (produced, consumed, status) = inflateStep()
            offset += consumed
            // A full step may leave output in zlib's window that needs no more input.
            outputPending = produced == Self.step && status == Z_OK
            switch status {
            case Z_OK, Z_BUF_ERROR:
                break
            case Z_STREAM_END:
                ended = true
            case Z_NEED_DICT:
                throw failure("it needs a preset dictionary")
            case Z_MEM_ERROR:
                throw failure("zlib ran out of memory")
            default:
                throw failure("the data is corrupt (\(message ?? "zlib error \(status)"))")
            }
            if offset == input.count {
                input = Data()
                offset = 0
            }
            if produced > 0 { return Data(bytes: scratch.baseAddress!, count: produced) }
            if consumed == 0, !ended { return nil }
        }
        return nil
    }

    /// One call of `inflate` over the input from `offset`, at most ``inputPiece`` of it, into `scratch`: the bytes
    /// made and taken, and zlib's status. The rest of a longer input is left for the next call.
    private func inflateStep() -> (produced: Int, consumed: Int, status: Int32) {
        input.withUnsafeBytes { bytes in
            let available = min(bytes.count - offset, inputPiece)
            // No input (output left from the last step): zlib accepts no pointer with a count of zero.
            stream.pointee.next_in =
                available > 0
                ? UnsafeMutablePointer(
                    mutating: bytes.baseAddress!.advanced(by: offset).assumingMemoryBound(to: Bytef.self))
                : nil
            stream.pointee.avail_in = uInt(available)
            stream.pointee.next_out = scratch.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_out = uInt(Self.step)
            let status = inflate(stream, Z_NO_FLUSH)
            let consumed = available - Int(stream.pointee.avail_in)
            // zlib keeps what it needs in its own window: the pointers are not used after this call.
            stream.pointee.next_in = nil
            stream.pointee.next_out = nil
            return (Self.step - Int(stream.pointee.avail_out), consumed, status)
        }
    }

    /// Checks that the compressed data ended with the input.
    func finish() throws {
        guard sawInput, !ended else { return }
        throw failure("the body ended before the end of the compressed data")
    }

    /// zlib's `windowBits` for the coding, or `nil` until `deflate` has the two bytes that tell a zlib header
    /// (RFC 1950: compression method 8, a window of at most 32 KiB, a check of the two bytes) from raw data.
    private func windowBits() -> Int32? {
        switch coding {
        case .gzip:
            return 15 + 16
        case .deflate:
            guard input.count - offset >= 2 else { return nil }
            let first = input[input.startIndex + offset]
            let second = input[input.startIndex + offset + 1]
            let zlibHeader = first & 0x0F == 8 && first >> 4 <= 7 && (UInt16(first) << 8 | UInt16(second)) % 31 == 0
            return zlibHeader ? 15 : -15
        }
    }

    /// zlib's message for the last failure, if it gave one.
    private var message: String? { stream.pointee.msg.map { String(cString: $0) } }

    private func failure(_ reason: String) -> ContentDecodingFailure {
        ContentDecodingFailure(coding: coding, reason: reason)
    }
}
