import Foundation
import SwiftConnectTesting
import XCTest

final class MultipartParserTests: XCTestCase {
    private let contentType = "multipart/form-data; boundary=XyZ-boundary"

    // MARK: - In-memory parsing

    func testParsesAFieldAndAFile() throws {
        // Given
        let body = Self.body([
            (#"Content-Disposition: form-data; name="user""#, Data("ada".utf8)),
            (
                "Content-Disposition: form-data; name=\"avatar\"; filename=\"me.png\"\r\nContent-Type: image/png",
                Data([0x89, 0x50, 0x4E, 0x47])
            ),
        ])

        // When
        let parts = try MultipartParser.parse(body, contentType: contentType)

        // Then
        XCTAssertEqual(parts.map(\.name), ["user", "avatar"])
        XCTAssertEqual(parts.map(\.filename), [nil, "me.png"])
        XCTAssertEqual(parts.map(\.contentType), [nil, "image/png"])
        XCTAssertEqual(parts[0].data, Data("ada".utf8))
        XCTAssertEqual(parts[1].data, Data([0x89, 0x50, 0x4E, 0x47]))
        XCTAssertEqual(parts[1].headers.map(\.name), ["Content-Disposition", "Content-Type"])
        XCTAssertEqual(parts[1].header("content-type"), "image/png")
    }

    func testEmptyFilePartsAndEmptyFields() throws {
        // Given: an empty file input (empty filename), an empty file, and an empty field.
        let body = Self.body([
            (
                "Content-Disposition: form-data; name=\"none\"; filename=\"\"\r\nContent-Type: application/octet-stream",
                Data()
            ),
            (#"Content-Disposition: form-data; name="empty"; filename="empty.txt""#, Data()),
            (#"Content-Disposition: form-data; name="blank""#, Data()),
        ])

        // When
        let parts = try MultipartParser.parse(body, contentType: contentType)

        // Then
        XCTAssertEqual(parts.map(\.name), ["none", "empty", "blank"])
        XCTAssertEqual(parts.map(\.filename), ["", "empty.txt", nil])
        XCTAssertEqual(parts.map(\.data), [Data(), Data(), Data()])
    }

    func testBinaryContentWithCRLFAndPartialBoundariesIsKeptExactly() throws {
        // Given
        let binary = Self.trickyBinary
        let body = Self.body([(#"Content-Disposition: form-data; name="bin"; filename="b.bin""#, binary)])

        // When
        let parts = try MultipartParser.parse(body, contentType: contentType)

        // Then
        XCTAssertEqual(parts.count, 1)
        XCTAssertEqual(parts[0].data, binary)
    }

    func testDelimiterFollowedByOtherBytesIsContent() throws {
        // Given: "CRLF--boundary" then "X": not a delimiter line, so it belongs to the part.
        let content = Data("before\r\n--XyZ-boundaryX after".utf8)
        let body = Self.body([(#"Content-Disposition: form-data; name="a""#, content)])

        // When / Then
        XCTAssertEqual(try MultipartParser.parse(body, contentType: contentType).first?.data, content)
    }

    func testWHATWGEscapesAreDecodedAndOtherPercentSequencesKept() throws {
        // Given
        let body = Self.body([
            (
                #"Content-Disposition: form-data; name="a%22b%0D%0Ac%5Cd"; filename="x%41%2%0d%0a%5c%22.txt""#,
                Data("1".utf8)
            )
        ])

        // When
        let part = try XCTUnwrap(MultipartParser.parse(body, contentType: contentType).first)

        // Then
        XCTAssertEqual(part.name, "a\"b\r\nc\\d")
        XCTAssertEqual(part.filename, "x%41%2\r\n\\\".txt")
    }

    /// Only the letters of an escape's second digit are read in either case: `%2` then the control byte 0x12 is not
    /// `%22` (it was, `0x12 | 0x20` being the digit 2).
    func testAControlByteAfterPercentTwoIsNotAQuote() throws {
        // Given
        let body = Self.body([("Content-Disposition: form-data; name=\"%2\u{12}\"", Data("1".utf8))])

        // When
        let part = try XCTUnwrap(MultipartParser.parse(body, contentType: contentType).first)

        // Then
        XCTAssertEqual(part.name, "%2\u{12}")
    }

    func testRawUTF8NamesAndFilenames() throws {
        // Given
        let body = Self.body([
            ("Content-Disposition: form-data; name=\"pièce\"; filename=\"résumé 📄.pdf\"", Data("%PDF".utf8))
        ])

        // When
        let part = try XCTUnwrap(MultipartParser.parse(body, contentType: contentType).first)

        // Then
        XCTAssertEqual(part.name, "pièce")
        XCTAssertEqual(part.filename, "résumé 📄.pdf")
    }

    func testQuotedPairsTokensAndParameterCase() throws {
        // Given
        let body = Self.body([
            (#"content-disposition: Form-Data; NAME="say \"hi\" \\ there"; FileName="a\"b.txt""#, Data("x".utf8)),
            ("Content-Disposition: form-data ; name = plain ; filename = file.txt ", Data("y".utf8)),
        ])

        // When
        let parts = try MultipartParser.parse(body, contentType: contentType)

        // Then
        XCTAssertEqual(parts.map(\.name), [#"say "hi" \ there"#, "plain"])
        XCTAssertEqual(parts.map(\.filename), [#"a"b.txt"#, "file.txt"])
    }

    func testBoundaryIsReadQuotedOrNotAmongOtherParameters() throws {
        XCTAssertEqual(try MultipartParser.boundary(in: "multipart/form-data; boundary=abc"), "abc")
        XCTAssertEqual(
            try MultipartParser.boundary(in: #"Multipart/Form-Data; charset=utf-8; Boundary="a b;c""#), "a b;c")
        XCTAssertEqual(try MultipartParser.boundary(in: "multipart/mixed;boundary=\"q\\\"x\""), "q\"x")
    }

    func testPreambleEpiloguePaddingAndNoParts() throws {
        // Given
        let body = Data(
            ("This is a preamble.\r\n--XyZ-boundary \t\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1"
                + "\r\n--XyZ-boundary--\r\nThis is an epilogue.\r\n--XyZ-boundary\r\n").utf8)

        // When
        let parts = try MultipartParser.parse(body, contentType: contentType)

        // Then
        XCTAssertEqual(parts.map(\.name), ["a"])
        XCTAssertEqual(parts.first?.data, Data("1".utf8))
        XCTAssertEqual(try MultipartParser.parse(Data("--XyZ-boundary--\r\n".utf8), contentType: contentType), [])
    }

    // MARK: - Errors

    func testContentTypeErrors() {
        assertError(.notMultipart(contentType: "application/json"), parsing: Data(), contentType: "application/json")
        assertError(.missingBoundary, parsing: Data(), contentType: "multipart/form-data")
        assertError(.missingBoundary, parsing: Data(), contentType: "multipart/form-data; boundary=")
        assertError(.missingBoundary, parsing: Data(), contentType: #"multipart/form-data; boundary="""#)
        assertError(
            .missingBoundary, parsing: Data(),
            contentType: "multipart/form-data; boundary=" + String(repeating: "b", count: 257))
    }

    func testBodyWithoutAnyDelimiterIsMissingItsOpeningBoundary() {
        assertError(.missingOpeningBoundary, parsing: Data(), contentType: contentType)
        assertError(.missingOpeningBoundary, parsing: Data("just text\r\n--other\r\n".utf8), contentType: contentType)
    }

    func testTruncatedBodiesAreMissingTheirClosingBoundary() {
        let body = Self.body([(#"Content-Disposition: form-data; name="a""#, Data("hello".utf8))])
        for cut in [body.count - 4, body.count - 10, 20, 40] {
            assertError(.missingClosingBoundary, parsing: body.prefix(cut), contentType: contentType, "cut at \(cut)")
        }
    }

    func testMalformedPartsReportTheirIndex() {
        let good = #"Content-Disposition: form-data; name="ok""#
        let cases: [(String, String)] = [
            ("no disposition", "Content-Type: text/plain"),
            ("no name", "Content-Disposition: form-data; filename=\"a.txt\""),
            ("not form-data", "Content-Disposition: attachment; name=\"a\""),
            ("unterminated quote", "Content-Disposition: form-data; name=\"a"),
            ("junk after quote", "Content-Disposition: form-data; name=\"a\"b"),
            ("line without colon", "Content-Disposition: form-data; name=\"a\"\r\nnot a header"),
            ("fold with nothing before", " folded"),
            ("empty header block", ""),
            ("huge header block", "X-Big: " + String(repeating: "a", count: 20_000)),
        ]
        for (label, badHeaders) in cases {
            let body = Self.body([(good, Data("1".utf8)), (badHeaders, Data("2".utf8))])
            assertError(.malformedPart(index: 1), parsing: body, contentType: contentType, label)
        }
    }

    func testUnterminatedHeaderBlockLargerThanTheLimitFailsEarly() throws {
        // Given: headers that never end, fed piece by piece.
        var parser = try MultipartParser(contentType: contentType)
        try parser.consume(Data("--XyZ-boundary\r\nX-Big: ".utf8))

        // When / Then: the parser gives up once the header block passes 16 KiB, and keeps failing.
        XCTAssertThrowsError(try parser.consume(Data(repeating: 0x61, count: 17 * 1024))) { error in
            XCTAssertEqual(error as? MultipartParser.Error, .malformedPart(index: 0))
        }
        XCTAssertThrowsError(try parser.consume(Data("\r\n\r\n".utf8)))
        XCTAssertThrowsError(try parser.finish()) { error in
            XCTAssertEqual(error as? MultipartParser.Error, .malformedPart(index: 0))
        }
    }

    // MARK: - Streaming parser

    func testStreamingGivesTheSameResultAsInMemoryForAwkwardChunkSizes() throws {
        // Given
        let body = Self.richBody
        let expected = try MultipartParser.parse(body, contentType: contentType).map { $0.digest() }
        XCTAssertEqual(expected.count, 6)

        // When / Then
        for size in [1, 2, 3, 7, 13, 64, 1000, 65_536, body.count] {
            XCTAssertEqual(try streamed(body, chunkSizes: [size]), expected, "chunks of \(size)")
        }
        XCTAssertEqual(try streamed(body, chunkSizes: [1, 7, 2, 31, 5, 1024, 3]), expected, "mixed sizes")
    }

    func testStreamingWithASplitAtEveryPositionAroundEachDelimiter() throws {
        // Given: a body small enough to split in two at every position, so that every delimiter, CRLF and header
        // terminator is straddled.
        let body = Self.body([
            (#"Content-Disposition: form-data; name="a""#, Data("one\r\n--XyZ-bound".utf8)),
            (#"Content-Disposition: form-data; name="b"; filename="b%22.txt""#, Data("\r\n--XyZ-boundaryX".utf8)),
            (#"Content-Disposition: form-data; name="c""#, Data()),
        ])
        let expected = try MultipartParser.parse(body, contentType: contentType).map { $0.digest() }

        // When / Then
        for split in 0...body.count {
            var parser = try MultipartParser(contentType: contentType)
            try parser.consume(body.prefix(split))
            try parser.consume(body.dropFirst(split))
            XCTAssertEqual(try parser.finish(), expected, "split at \(split)")
        }
    }

    func testStreamingKeepsSmallPartsAndOnlyDigestsLargeOnes() throws {
        // Given
        let large = LocalServer.generatedBytes(count: 100_000, seed: 5)
        let body = Self.body([
            (#"Content-Disposition: form-data; name="note""#, Data("hello".utf8)),
            ("Content-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\nContent-Type: x/y", large),
        ])

        // When
        var parser = try MultipartParser(contentType: contentType, retainingPartsUpTo: 1024)
        try parser.consume(body)
        let parts = try parser.finish()

        // Then
        XCTAssertEqual(parts.map(\.name), ["note", "file"])
        XCTAssertEqual(parts[0].data, Data("hello".utf8))
        XCTAssertNil(parts[1].data)
        XCTAssertEqual(parts[1].byteCount, 100_000)
        XCTAssertEqual(parts[1].sha256, SHA256.hash(large))
        XCTAssertEqual(parts[1].sha256Hex, SHA256.hex(SHA256.hash(large)))
        XCTAssertEqual(parts[1].contentType, "x/y")
    }

    func testStreamingReportsTheSameErrorsAsInMemory() throws {
        let bodies: [Data] = [
            Data(),
            Data("no delimiter here".utf8),
            Self.body([(#"Content-Disposition: form-data; name="a""#, Data("x".utf8))]).dropLast(5),
            Self.body([("Content-Type: text/plain", Data("x".utf8))]),
        ]
        for body in bodies {
            let inMemory = Result { try MultipartParser.parse(body, contentType: contentType).map { $0.digest() } }
            let streaming = Result { try streamed(body, chunkSizes: [1]) }
            XCTAssertNotNil(inMemory.error)
            XCTAssertEqual(inMemory.error, streaming.error)
        }
    }

    func testMutatedBodiesNeverCrashAndBothParsersAgree() throws {
        // Given: a valid body, then thousands of deterministic random mutations and truncations of it.
        let original = Self.body([
            (#"Content-Disposition: form-data; name="a"; filename="f%22.txt""#, Data("first\r\n--XyZ".utf8)),
            (#"Content-Disposition: form-data; name="b""#, Data("second".utf8)),
        ])
        var random = SplitMix(state: 42)
        let alphabet = Array("\r\n-\"\\;=:% XyZ-boundary".utf8) + [0x00, 0xFF, 0xC3]

        for round in 0..<2_000 {
            var body = [UInt8](original)
            for _ in 0...(random.next() % 4) {
                let position = Int(random.next() % UInt64(body.count + 1))
                switch random.next() % 3 {
                case 0:
                    if position < body.count { body[position] = alphabet[Int(random.next() % UInt64(alphabet.count))] }
                case 1: if position < body.count { body.remove(at: position) }
                default: body.insert(alphabet[Int(random.next() % UInt64(alphabet.count))], at: position)
                }
            }
            if random.next() % 4 == 0 { body = Array(body.prefix(Int(random.next() % UInt64(body.count + 1)))) }
            let data = Data(body)

            // When
            let inMemory = Result { try MultipartParser.parse(data, contentType: contentType).map { $0.digest() } }
            let streaming = Result { try streamed(data, chunkSizes: [Int(random.next() % 9) + 1]) }

            // Then
            switch (inMemory, streaming) {
            case (.success(let lhs), .success(let rhs)): XCTAssertEqual(lhs, rhs, "round \(round)")
            default: XCTAssertEqual(inMemory.error, streaming.error, "round \(round)")
            }
        }
    }

    // MARK: - Helpers

    private func assertError(
        _ expected: MultipartParser.Error,
        parsing body: Data,
        contentType: String,
        _ label: String = "",
        file: StaticString = #filePath,
        line: UInt = #line
    ) {
        XCTAssertThrowsError(try MultipartParser.parse(body, contentType: contentType), label, file: file, line: line) {
            XCTAssertEqual($0 as? MultipartParser.Error, expected, label, file: file, line: line)
        }
        XCTAssertThrowsError(
            try streamed(body, chunkSizes: [3], contentType: contentType), label, file: file, line: line
        ) {
            XCTAssertEqual($0 as? MultipartParser.Error, expected, "streaming: \(label)", file: file, line: line)
        }
    }

    /// Feeds `body` to a streaming parser in pieces whose sizes cycle through `chunkSizes`.
    private func streamed(_ body: Data, chunkSizes: [Int], contentType: String? = nil) throws -> [MultipartPartDigest] {
        var parser = try MultipartParser(contentType: contentType ?? self.contentType)
        var start = body.startIndex
        var turn = 0
        while start < body.endIndex {
            let end = min(start + chunkSizes[turn % chunkSizes.count], body.endIndex)
            try parser.consume(body[start..<end])
            start = end
            turn += 1
        }
        return try parser.finish()
    }

    /// Bytes 0 to 255, then CRLFs and prefixes of the delimiter in every position, then the boundary without its
    /// CRLF, and a lone CR at the very end (just before the real delimiter).
    static let trickyBinary: Data = {
        var data = Data((0...255).map { UInt8($0) })
        data += Data("\r\n\r\n--\r\n--X\r\n--XyZ-bound\r\n--XyZ-boundar".utf8)
        data += Data("--XyZ-boundary".utf8)
        data += Data("\n--XyZ-boundary\r".utf8)
        return data
    }()

    /// Six parts: a field, a UTF-8 file name, escapes, tricky binary, an empty file and 200 KB of generated bytes.
    static let richBody = body([
        (#"Content-Disposition: form-data; name="title""#, Data("Quarterly report".utf8)),
        (
            "Content-Disposition: form-data; name=\"doc\"; filename=\"résumé 📄.pdf\"\r\nContent-Type: application/pdf",
            Data("%PDF-1.7\r\n".utf8)
        ),
        (#"Content-Disposition: form-data; name="q%22%0D%0A%5C"; filename="a\"b""#, Data("esc".utf8)),
        (
            "Content-Disposition: form-data; name=\"bin\"; filename=\"x.bin\"\r\nContent-Type: application/octet-stream",
            trickyBinary
        ),
        (#"Content-Disposition: form-data; name="empty"; filename="""#, Data()),
        (
            #"Content-Disposition: form-data; name="big"; filename="big.bin""#,
            LocalServer.generatedBytes(count: 200_000, seed: 9)
        ),
    ])

    /// A body with boundary `XyZ-boundary`, built by hand (independent of the library's encoder).
    static func body(_ parts: [(headers: String, content: Data)]) -> Data {
        var body = Data()
        for part in parts {
            body += Data("--XyZ-boundary\r\n\(part.headers)\r\n\r\n".utf8)
            body += part.content
            body += Data("\r\n".utf8)
        }
        body += Data("--XyZ-boundary--\r\n".utf8)
        return body
    }
}

/// A deterministic generator for the mutation test.
private struct SplitMix {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension Result where Failure == any Error {
    /// The error as a multipart error, or `nil` on success.
    fileprivate var error: MultipartParser.Error? {
        if case .failure(let error) = self { return error as? MultipartParser.Error }
        return nil
    }
}
