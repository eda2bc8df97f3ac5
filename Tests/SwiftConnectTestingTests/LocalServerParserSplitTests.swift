import Foundation
import XCTest

@testable import SwiftConnectTesting

/// The local server's parser decides by the bytes of a request, never by how the reads split them: the same bytes
/// in one piece, a byte at a time, or cut at and around a limit give the same answer. A limit checked only while a
/// line or head is incomplete let one over it pass when a single read brought it whole (as the test engine's line
/// limit did, commit 2867a6bd), and one exactly at it fail when a read ended inside its line end.
final class LocalServerParserSplitTests: XCTestCase {
    /// What the parser made of the pieces fed to it.
    private enum Outcome: Equatable {
        /// A head found: its length and the bytes it takes with its empty line.
        case head(length: Int, consumed: Int)
        /// A chunked body decoded whole.
        case body(Data)
        /// The request refused, with the status the server answers.
        case refused(status: Int, message: String)
        /// The parser still waits for more bytes.
        case incomplete
    }

    /// The pieces `bytes` is fed in: whole, a byte at a time, and cut in two at each offset around `limit`.
    private static func splits(of bytes: Data, around limit: Int) -> [(name: String, pieces: [Data])] {
        let bytes = Data(bytes)
        var ways: [(name: String, pieces: [Data])] = [
            ("one piece", [bytes]), ("byte by byte", bytes.map { Data([$0]) }),
        ]
        for cut in max(1, limit - 3)...min(bytes.count - 1, limit + 4) {
            ways.append(("cut at \(cut)", [Data(bytes[..<cut]), Data(bytes[cut...])]))
        }
        return ways
    }

    /// Feeds `pieces` to the request head scan as a connection does, looking again from two bytes before the end.
    private static func scanHead(_ pieces: [Data]) -> Outcome {
        var buffer = ReceiveBuffer()
        var from = 0
        do {
            for piece in pieces {
                piece.withUnsafeBytes { buffer.append($0) }
                if let end = try HTTPParser.requestHeadEnd(in: buffer, from: from) {
                    return .head(length: end.headLength, consumed: end.consumed)
                }
                from = max(0, buffer.readableCount - 2)
            }
        } catch {
            return .refused(status: error.status, message: error.message)
        }
        return .incomplete
    }

    /// Feeds `pieces` to a chunked body decoder, as a connection reading a whole body does.
    private static func decodeChunked(_ pieces: [Data]) -> Outcome {
        var buffer = ReceiveBuffer()
        var decoder = ChunkedDecoder()
        do {
            for piece in pieces {
                piece.withUnsafeBytes { buffer.append($0) }
                if try decoder.decode(&buffer) { return .body(decoder.body) }
            }
        } catch {
            return .refused(status: error.status, message: error.message)
        }
        return .incomplete
    }

    private func assertEveryWay(
        _ bytes: Data, around limit: Int, give expected: Outcome, _ parse: ([Data]) -> Outcome,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        for way in Self.splits(of: bytes, around: limit) {
            XCTAssertEqual(parse(way.pieces), expected, way.name, file: file, line: line)
        }
    }

    func testARequestHeadAtTheLimitIsReadAndOneOverItRefusedWhateverTheReads() {
        let limit = HTTPParser.maximumHeadSize
        for terminator in ["\r\n\r\n", "\n\n", "\r\n\n", "\n\r\n"] {
            for length in [limit, limit + 1] {
                // Given: a head of `length` bytes before the line feed that starts its empty line
                let start = "GET / HTTP/1.1\r\nX-Big: "
                // (By bytes: "\r\n" is one `Character`.)
                let endOfLastLine = Array(terminator.utf8.prefix { $0 == 0x0D })
                let lineEnds = Array(terminator.utf8.drop { $0 == 0x0D })
                let filler = String(repeating: "a", count: length - start.utf8.count - endOfLastLine.count)
                let request = Data(Array((start + filler).utf8) + endOfLastLine + lineEnds + Array("GET /next".utf8))

                // When / Then: the same answer in one piece, byte by byte, and cut around the end of the head
                let expected: Outcome =
                    length <= limit
                    ? .head(length: length, consumed: length + lineEnds.count)
                    : .refused(status: 431, message: HTTPParseError.headersTooLarge.message)
                assertEveryWay(request, around: length, give: expected, Self.scanHead)
            }
        }
    }

    func testAChunkSizeLineAtTheLimitIsReadAndOneOverItRefusedWhateverTheReads() {
        let limit = 8 * 1024
        for length in [limit, limit + 1] {
            // Given: a size line of `length` bytes, made long by an extension
            let sizeLine = "5;x=" + String(repeating: "e", count: length - 4)
            let body = Data((sizeLine + "\r\nhello\r\n0\r\n\r\n").utf8)

            // When / Then
            let expected: Outcome =
                length <= limit ? .body(Data("hello".utf8)) : .refused(status: 400, message: "chunk line too long")
            assertEveryWay(body, around: length, give: expected, Self.decodeChunked)
        }
    }

    func testATrailerLineAtTheLimitIsReadAndOneOverItRefusedWhateverTheReads() {
        let limit = 8 * 1024
        for length in [limit, limit + 1] {
            // Given: a trailer field of `length` bytes after the last chunk
            let prefix = "3\r\nabc\r\n0\r\n"
            let trailer = "X-T: " + String(repeating: "t", count: length - 5)
            let body = Data((prefix + trailer + "\r\n\r\n").utf8)

            // When / Then
            let expected: Outcome =
                length <= limit ? .body(Data("abc".utf8)) : .refused(status: 400, message: "chunk line too long")
            assertEveryWay(body, around: prefix.utf8.count + length, give: expected, Self.decodeChunked)
        }
    }
}
