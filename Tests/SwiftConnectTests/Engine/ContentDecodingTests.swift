import CSwiftConnectZlib
import Foundation
import XCTest

@testable @_spi(Engine) import SwiftConnect

/// The core's decoding of gzip and deflate bodies (`ContentDecoding.swift`): what arrives in any chunking decodes to
/// the original bytes, in parts no larger than a step, and every malformed body fails with a reason.
final class ContentDecodingTests: XCTestCase {
    /// Bytes that compress, but not to nothing: a counter's text.
    private static let text = Data((0..<60_000).map { "line \($0)\n" }.joined().utf8)

    /// Decodes `body`, handed over in chunks of `chunkSize`, and returns the parts.
    private func parts(of body: Data, coding: ContentCoding, chunkSize: Int) async throws -> [Data] {
        let chunks = stride(from: 0, to: body.count, by: chunkSize).map {
            body.subdata(in: $0..<min($0 + chunkSize, body.count))
        }
        var parts: [Data] = []
        for try await part in DecodedBody(base: Chunks(chunks), coding: coding) { parts.append(part) }
        return parts
    }

    /// The failure decoding `body` ends with.
    private func failure(of body: Data, coding: ContentCoding) async throws -> ContentDecodingFailure {
        do {
            let parts = try await parts(of: body, coding: coding, chunkSize: 1_000)
            throw XCTSkip("unreachable: decoded \(parts.count) parts")
        } catch let failure as ContentDecodingFailure {
            return failure
        }
    }

    func testGzipDecodesWhateverTheChunking() async throws {
        let gzip = Zlib.encode(Self.text, format: .gzip)
        for chunkSize in [1, 7, 1_000, 64 << 10, gzip.count] {
            let parts = try await parts(of: gzip, coding: .gzip, chunkSize: chunkSize)
            XCTAssertEqual(parts.reduce(Data(), +), Self.text, "chunks of \(chunkSize)")
            XCTAssertLessThanOrEqual(parts.map(\.count).max() ?? 0, Inflater.step)
        }
    }

    func testDeflateDecodesZlibAndRawData() async throws {
        for format in [Zlib.Format.zlib, .raw] {
            let body = Zlib.encode(Self.text, format: format)
            for chunkSize in [1, 1_000, body.count] {
                let parts = try await parts(of: body, coding: .deflate, chunkSize: chunkSize)
                XCTAssertEqual(parts.reduce(Data(), +), Self.text, "\(format), chunks of \(chunkSize)")
            }
        }
    }

    /// A megabyte that decodes to 256 MiB comes out a step at a time: a reader that stops after a few parts has
    /// never held more than those parts.
    func testABombComesOutAStepAtATime() async throws {
        let zeros = Data(count: 256 << 20)
        let bomb = Zlib.encode(zeros, format: .gzip)
        XCTAssertLessThan(bomb.count, 1 << 20)

        var decoded = 0
        var parts = 0
        for try await part in DecodedBody(base: Chunks([bomb]), coding: .gzip) {
            XCTAssertLessThanOrEqual(part.count, Inflater.step)
            decoded += part.count
            parts += 1
            if parts == 3 { break }
        }

        XCTAssertEqual(parts, 3)
        XCTAssertLessThanOrEqual(decoded, 3 * Inflater.step)
    }

    /// What is fed to zlib in one call is at most a piece (zlib counts its input in 32 bits): a chunk longer than a
    /// piece goes over several calls and decodes as a whole, whatever the piece size.
    func testAChunkLongerThanAPieceDecodesOverSeveralCalls() throws {
        for format in [Zlib.Format.gzip, .zlib, .raw] {
            let body = Zlib.encode(Self.text, format: format)
            for piece in [1, 7, 1_000] {
                let inflater = Inflater(format == .gzip ? .gzip : .deflate, inputPiece: piece)
                inflater.feed(body)
                var decoded = Data()
                while let part = try inflater.step() {
                    XCTAssertLessThanOrEqual(part.count, Inflater.step)
                    decoded += part
                }
                XCTAssertNoThrow(try inflater.finish(), "\(format), pieces of \(piece)")
                XCTAssertEqual(decoded, Self.text, "\(format), pieces of \(piece)")
            }
        }
        XCTAssertEqual(Inflater.largestInputPiece, Int(clamping: UInt32.max))
    }

    #if canImport(Glibc)
        /// A chunk over 4 GiB (here mapped, never written, so it costs no memory: its pages read as zeros) once
        /// trapped converting its length to zlib's 32-bit count; it is now fed in pieces, and its zeros fail as the
        /// corrupt gzip they are.
        func testAChunkOver4GiBFailsAsCorruptInsteadOfTrapping() async throws {
            let length = Int(UInt32.max) + 2
            guard
                let mapped = mmap(nil, length, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0),
                mapped != MAP_FAILED
            else { throw XCTSkip("could not map \(length) bytes") }
            let zeros = Data(bytesNoCopy: mapped, count: length, deallocator: .custom { munmap($0, $1) })

            do {
                for try await part in DecodedBody(base: Chunks([zeros]), coding: .gzip) {
                    XCTFail("decoded \(part.count) bytes from zeros")
                }
                XCTFail("zeros decoded as gzip")
            } catch let failure as ContentDecodingFailure {
                XCTAssertTrue(failure.reason.hasPrefix("the data is corrupt"), failure.reason)
            }
        }
    #endif

    func testSeveralGzipMembersDecodeOneAfterTheOther() async throws {
        let first = Data("first member, ".utf8)
        let second = Data("second member".utf8)
        let body = Zlib.encode(first, format: .gzip) + Zlib.encode(second, format: .gzip)

        for chunkSize in [1, body.count] {
            let parts = try await parts(of: body, coding: .gzip, chunkSize: chunkSize)
            XCTAssertEqual(parts.reduce(Data(), +), first + second)
        }
    }

    func testAnEmptyBodyDecodesToNothing() async throws {
        let parts = try await parts(of: Data(), coding: .gzip, chunkSize: 1)
        XCTAssertEqual(parts, [])
    }

    func testATruncatedBodyFails() async throws {
        let gzip = Zlib.encode(Self.text, format: .gzip)
        let cut = try await failure(of: gzip.prefix(gzip.count / 2), coding: .gzip)
        let lonelyByte = try await failure(of: Data([0x78]), coding: .deflate)

        XCTAssertEqual(cut.reason, "the body ended before the end of the compressed data")
        XCTAssertEqual(lonelyByte.reason, "the body ended before the end of the compressed data")
    }

    func testCorruptDataFails() async throws {
        var gzip = Zlib.encode(Self.text, format: .gzip)
        gzip[gzip.startIndex + 20] ^= 0xFF
        let corrupt = try await failure(of: gzip, coding: .gzip)
        let notGzip = try await failure(of: Data("plain text, not gzip".utf8), coding: .gzip)

        XCTAssertTrue(corrupt.reason.hasPrefix("the data is corrupt"), corrupt.reason)
        XCTAssertTrue(notGzip.reason.hasPrefix("the data is corrupt"), notGzip.reason)
        XCTAssertEqual(notGzip.description.prefix(35), "the gzip body cannot be decoded: th")
    }

    func testBytesAfterTheEndFail() async throws {
        let gzip = Zlib.encode(Self.text, format: .gzip) + Data("junk".utf8)
        let deflate = Zlib.encode(Self.text, format: .zlib) + Data([0x1F, 0x8B])

        let afterGzip = try await failure(of: gzip, coding: .gzip)
        let afterDeflate = try await failure(of: deflate, coding: .deflate)

        XCTAssertEqual(afterGzip.reason, "there are bytes after the end of the compressed data")
        XCTAssertEqual(afterDeflate.reason, "there are bytes after the end of the compressed data")
    }

    /// Every body, good or bad, gives the same outcome (its bytes, or the same reason) in one piece, byte by byte,
    /// and cut in two anywhere: no decision waits on where a chunk ends (the deflate header's two bytes, the start
    /// of a second gzip member, bytes after the end, a body cut short).
    func testEveryOutcomeIsTheSameWhereverTheChunksAreCut() async throws {
        let small = Data("a few words, a few words, a few words".utf8)
        let gzip = Zlib.encode(small, format: .gzip)
        var corrupt = gzip
        corrupt[corrupt.startIndex + 12] ^= 0xFF
        let bodies: [(name: String, body: Data, coding: ContentCoding)] = [
            ("gzip", gzip, .gzip), ("two members", gzip + Zlib.encode(small, format: .gzip), .gzip),
            ("member and junk", gzip + Data("junk".utf8), .gzip), ("member and 0x1F", gzip + Data([0x1F]), .gzip),
            ("cut short", gzip.prefix(gzip.count - 3), .gzip), ("corrupt", corrupt, .gzip),
            ("zlib", Zlib.encode(small, format: .zlib), .deflate), ("raw", Zlib.encode(small, format: .raw), .deflate),
            ("zlib and junk", Zlib.encode(small, format: .zlib) + Data([0x1F, 0x8B]), .deflate),
            ("one byte", Data([0x78]), .deflate),
        ]
        func outcome(_ chunks: [Data], _ coding: ContentCoding) async -> String {
            var decoded = Data()
            do {
                for try await part in DecodedBody(base: Chunks(chunks), coding: coding) { decoded += part }
                return "decoded \(String(decoding: decoded, as: UTF8.self))"
            } catch {
                return "failed: \(error)"
            }
        }
        for (name, body, coding) in bodies {
            let whole = await outcome([body], coding)
            XCTAssertEqual(whole.hasPrefix("decoded"), ["gzip", "two members", "zlib", "raw"].contains(name), whole)
            let bytes = await outcome(body.map { Data([$0]) }, coding)
            XCTAssertEqual(bytes, whole, "\(name), byte by byte")
            for cut in 1..<body.count {
                let halves = [body.prefix(cut), body.dropFirst(cut)].map { Data($0) }
                let split = await outcome(halves, coding)
                XCTAssertEqual(split, whole, "\(name), cut at \(cut)")
            }
        }
    }
}

/// Chunks handed over one by one, as an engine's body.
struct Chunks: AsyncSequence, Sendable {
    typealias Element = Data
    let chunks: [Data]

    init(_ chunks: [Data]) { self.chunks = chunks }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(remaining: chunks[...]) }

    struct AsyncIterator: AsyncIteratorProtocol {
        var remaining: ArraySlice<Data>

        mutating func next() async throws -> Data? { remaining.popFirst() }
    }
}

/// zlib's encoder, for test bodies.
enum Zlib {
    enum Format {
        case gzip, zlib, raw

        var windowBits: Int32 {
            switch self {
            case .gzip: return 15 + 16
            case .zlib: return 15
            case .raw: return -15
            }
        }
    }

    /// `data` compressed in `format`.
    static func encode(_ data: Data, format: Format) -> Data {
        var stream = z_stream()
        precondition(CSwiftConnectZlib_deflateInit2(&stream, 6, format.windowBits) == Z_OK)
        defer { deflateEnd(&stream) }
        var output = Data(count: Int(deflateBound(&stream, uLong(data.count))))
        let written = data.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out in
                stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = out.bindMemory(to: Bytef.self).baseAddress
                stream.avail_out = uInt(out.count)
                precondition(deflate(&stream, Z_FINISH) == Z_STREAM_END)
                return out.count - Int(stream.avail_out)
            }
        }
        return output.prefix(written)
    }
}
