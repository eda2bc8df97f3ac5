import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

// MARK: - Helpers

/// The bytes of `text`.
private func bytes(_ text: String) -> Data {
    Data(text.utf8)
}

/// `data` cut at `offsets` (ascending): slices of `data` itself, so that their indices do not start at 0.
private func chunks(of data: Data, at offsets: [Int]) -> [Data] {
    var result: [Data] = []
    var start = data.startIndex
    for offset in offsets {
        let end = data.startIndex + offset
        result.append(data[start..<end])
        start = end
    }
    result.append(data[start...])
    return result
}

/// `data` as one-byte chunks.
private func singleBytes(of data: Data) -> [Data] {
    data.map { Data([$0]) }
}

/// The lines a fresh splitter gives for `chunks`, the last unterminated one included.
private func splitLines(_ chunks: [Data], maximumLineLength: Int = 1 << 20) throws -> [String] {
    var splitter = LineSplitter(maximumLineLength: maximumLineLength)
    var lines: [String] = []
    for chunk in chunks { lines += try splitter.append(chunk) }
    if let last = splitter.finish() { lines.append(last) }
    return lines
}

/// The events a fresh parser gives for `chunks`, and its state at the end.
private func parseEvents(
    _ chunks: [Data],
    lastEventID: String? = nil
) throws -> (events: [ServerSentEvent], lastEventID: String, reconnectionTime: Int?) {
    var parser = ServerSentEventParser(lastEventID: lastEventID)
    var events: [ServerSentEvent] = []
    for chunk in chunks { events += try parser.append(chunk) }
    events += parser.finish()
    return (events, parser.lastEventID, parser.reconnectionTime)
}

/// The events of `text` given in one chunk.
private func events(_ text: String) throws -> [ServerSentEvent] {
    try parseEvents([bytes(text)]).events
}

/// Counts how often a ``ChunkSequence`` was read. Not `Sendable`: the views must not need it.
private final class PullCounter {
    var pulls = 0
}

private struct Boom: Error, Equatable {
    var code = 7
}

/// An asynchronous sequence of fixed chunks that counts its reads and may fail after the last chunk. Not
/// `Sendable`.
private struct ChunkSequence: AsyncSequence {
    typealias Element = Data

    var chunks: [Data]
    var failure: (any Error)?
    var counter = PullCounter()

    init(_ chunks: [Data], failure: (any Error)? = nil) {
        self.chunks = chunks
        self.failure = failure
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        var chunks: IndexingIterator<[Data]>
        var failure: (any Error)?
        let counter: PullCounter

        mutating func next() async throws -> Data? {
            counter.pulls += 1
            if let chunk = chunks.next() { return chunk }
            if let failure {
                self.failure = nil
                throw failure
            }
            return nil
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(chunks: chunks.makeIterator(), failure: failure, counter: counter)
    }
}

/// A `Sendable` sequence of `chunks`.
private func stream(_ chunks: [Data]) -> AsyncStream<Data> {
    AsyncStream { continuation in
        for chunk in chunks { continuation.yield(chunk) }
        continuation.finish()
    }
}

private func collect<S: AsyncSequence>(_ sequence: S) async throws -> [S.Element] {
    var result: [S.Element] = []
    for try await element in sequence { result.append(element) }
    return result
}

private func requireSendable<T: Sendable>(_ value: T) {}

private struct Item: Decodable, Equatable {
    var id: Int
    var name: String
}

/// Iterates a view on an actor, where `for try await` reads through `next(isolation:)`.
private actor Collector {
    func lines(of chunks: [Data]) async throws -> [String] {
        var result: [String] = []
        for try await line in ResponseLines(ChunkSequence(chunks)) { result.append(line) }
        return result
    }

    func events(of chunks: [Data]) async throws -> [ServerSentEvent] {
        var result: [ServerSentEvent] = []
        for try await event in ResponseEvents(ChunkSequence(chunks)) { result.append(event) }
        return result
    }

    func items(of chunks: [Data]) async throws -> [Item] {
        var result: [Item] = []
        for try await item in ResponseJSONLines(ChunkSequence(chunks), as: Item.self) { result.append(item) }
        return result
    }
}

// MARK: - Samples

/// A sample event stream with a byte order mark, CRLF, CR and LF line ends, comments, multi-line data, ids, retry
/// fields, a NULL in an id and characters of several UTF-8 lengths; its last event is not terminated.
private let eventSample: Data = {
    var data = Data([0xEF, 0xBB, 0xBF])
    data += bytes(": welcome\r\nretry: 2500\r\n\r\n")
    data += bytes("event: greeting\r\nid: 1\r\nretry: 3000\r\ndata: héllo wörld 👋\r\ndata:  two spaces\r\n\r\n")
    data += bytes("data:no space\rid: 2\r\r")
    data += bytes(": between\nevent: no-data\n\n")
    data += bytes("data: 日本語\ndata\n\n")
    data += bytes("id: bad\u{0}id\nretry: 12x\ndata: after\r\n\r\n")
    data += bytes("unknown: field\ndata: dropped at the end\n")
    return data
}()

private let expectedSampleEvents = [
    ServerSentEvent(event: "greeting", data: "héllo wörld 👋\n two spaces", id: "1", retry: 3000),
    ServerSentEvent(event: "message", data: "no space", id: "2"),
    ServerSentEvent(event: "message", data: "日本語\n", id: "2"),
    ServerSentEvent(event: "message", data: "after", id: "2"),
]

/// A sample of lines with LF, CRLF and lone CR, an empty line, multi-byte characters and no final line end.
private let lineSample = bytes("first\r\nsécond\n\nthird\rstill third\r\n😀 emoji €\nlast without end")

private let expectedSampleLines = ["first", "sécond", "", "third\rstill third", "😀 emoji €", "last without end"]

/// A sample of JSON Lines with CRLF, blank and whitespace-only lines, and no final line end.
private let jsonLinesSample = bytes(
    "{\"id\":1,\"name\":\"ä\"}\r\n\n  \t\n{\"id\":2,\"name\":\"😀\"}\n{\"id\":3,\"name\":\"x\"}"
)

private let expectedSampleItems = [Item(id: 1, name: "ä"), Item(id: 2, name: "😀"), Item(id: 3, name: "x")]

// MARK: - Line splitting

final class LineSplitterTests: XCTestCase {
    func testLinesEndWithLF() throws {
        var splitter = LineSplitter()
        XCTAssertEqual(try splitter.append(bytes("one\ntwo\nthr")), ["one", "two"])
        XCTAssertEqual(try splitter.append(bytes("ee\n")), ["three"])
        XCTAssertNil(splitter.finish())
    }

    func testLinesEndWithCRLF() throws {
        XCTAssertEqual(try splitLines([bytes("one\r\ntwo\r\n")]), ["one", "two"])
        XCTAssertEqual(try splitLines([bytes("mixed\r\nends\nhere\r\n")]), ["mixed", "ends", "here"])
    }

    func testCRLFSplitAcrossChunks() throws {
        var splitter = LineSplitter()
        XCTAssertEqual(try splitter.append(bytes("one\r")), [])
        XCTAssertEqual(try splitter.append(bytes("\ntwo\r")), ["one"])
        XCTAssertEqual(try splitter.append(bytes("\n")), ["two"])
        XCTAssertNil(splitter.finish())
    }

    func testLoneCRStaysInTheLine() throws {
        XCTAssertEqual(try splitLines([bytes("a\rb\n")]), ["a\rb"])
        XCTAssertEqual(try splitLines([bytes("a\r"), bytes("b\n")]), ["a\rb"])
        XCTAssertEqual(try splitLines([bytes("a\r\rb\r\r\n")]), ["a\r\rb\r"])
        // At the end of the stream, a CR is not followed by an LF: it stays.
        XCTAssertEqual(try splitLines([bytes("a\nb\r")]), ["a", "b\r"])
        XCTAssertEqual(try splitLines([bytes("\r")]), ["\r"])
    }

    func testFinalUnterminatedLine() throws {
        var splitter = LineSplitter()
        XCTAssertEqual(try splitter.append(bytes("done\npart")), ["done"])
        XCTAssertEqual(try splitter.append(bytes("ial")), [])
        XCTAssertEqual(splitter.finish(), "partial")
        // The splitter starts afresh.
        XCTAssertNil(splitter.finish())
        XCTAssertEqual(try splitter.append(bytes("next\n")), ["next"])
    }

    func testNoFinalLineAfterALineEndOrForAnEmptyStream() throws {
        XCTAssertEqual(try splitLines([bytes("a\n")]), ["a"])
        XCTAssertEqual(try splitLines([bytes("a\r\n")]), ["a"])
        XCTAssertEqual(try splitLines([]), [])
        XCTAssertEqual(try splitLines([Data(), Data()]), [])
    }

    func testEmptyLines() throws {
        XCTAssertEqual(try splitLines([bytes("\n\n")]), ["", ""])
        XCTAssertEqual(try splitLines([bytes("\r\n\r\n")]), ["", ""])
        XCTAssertEqual(try splitLines([bytes("a\n\n\nb\n")]), ["a", "", "", "b"])
        XCTAssertEqual(try splitLines([bytes("\r"), bytes("\n"), bytes("\n")]), ["", ""])
    }

    func testEmptyChunksChangeNothing() throws {
        XCTAssertEqual(try splitLines([Data(), bytes("a\r"), Data(), bytes("\nb"), Data()]), ["a", "b"])
    }

    func testMultiByteCharactersSplitAcrossChunks() throws {
        let text = "é€😀 and 日本\n"
        let data = bytes(text)
        for offset in 0...data.count {
            XCTAssertEqual(try splitLines(chunks(of: data, at: [offset])), ["é€😀 and 日本"], "cut at \(offset)")
        }
        XCTAssertEqual(try splitLines(singleBytes(of: data)), ["é€😀 and 日本"])
    }

    func testInvalidUTF8BecomesReplacementCharacters() throws {
        let data = Data([0x61, 0xFF, 0x62, 0x0A, 0xE2, 0x82, 0x0A, 0xF0, 0x9F])
        XCTAssertEqual(try splitLines([data]), ["a\u{FFFD}b", "\u{FFFD}", "\u{FFFD}"])
        XCTAssertEqual(try splitLines(singleBytes(of: data)), ["a\u{FFFD}b", "\u{FFFD}", "\u{FFFD}"])
    }

    func testLineAtTheLimitIsAccepted() throws {
        XCTAssertEqual(try splitLines([bytes("1234\n")], maximumLineLength: 4), ["1234"])
        XCTAssertEqual(try splitLines([bytes("1234\r\n")], maximumLineLength: 4), ["1234"])
        // A CR ending a chunk may start a CRLF: it does not count yet.
        XCTAssertEqual(try splitLines([bytes("1234\r"), bytes("\n")], maximumLineLength: 4), ["1234"])
        XCTAssertEqual(
            try splitLines(singleBytes(of: bytes("1234\r\n5678\n")), maximumLineLength: 4), ["1234", "5678"])
        XCTAssertEqual(try splitLines([bytes("12"), bytes("34")], maximumLineLength: 4), ["1234"])
    }

    func testOverlongLineThrowsResponseTooLarge() throws {
        XCTAssertThrowsError(try splitLines([bytes("12345\n")], maximumLineLength: 4)) { error in
            let error = error as? ConnectError
            XCTAssertEqual(error?.kind, .responseTooLarge)
            XCTAssertEqual(
                error?.message,
                "a line of the stream is longer than the limit of 4 bytes "
                    + "(raise maximumLineLength if the server sends lines that long)"
            )
        }
        XCTAssertThrowsError(try splitLines([bytes("123"), bytes("45\n")], maximumLineLength: 4))
        XCTAssertThrowsError(try splitLines([bytes("1234\r"), bytes("x\n")], maximumLineLength: 4))
        XCTAssertThrowsError(try splitLines(singleBytes(of: bytes("ok\n12345\n")), maximumLineLength: 4))
    }

    func testOverlongLineThrowsBeforeItsEndArrives() throws {
        var splitter = LineSplitter(maximumLineLength: 4)
        XCTAssertEqual(try splitter.append(bytes("1234")), [])
        XCTAssertThrowsError(try splitter.append(bytes("5"))) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .responseTooLarge)
        }
    }

    func testLinesBeforeAnOverlongLineAreHandedOut() throws {
        var splitter = LineSplitter(maximumLineLength: 4)
        var lines: [String] = []
        XCTAssertThrowsError(
            try splitter.append(bytes("ab\ncd\n123456\nef\n")) { lines.append(String(decoding: $0, as: UTF8.self)) }
        )
        XCTAssertEqual(lines, ["ab", "cd"])
    }

    func testLongLineInManyChunks() throws {
        let line = String(repeating: "x", count: 300_000)
        let data = bytes(line + "\r\nend\n")
        let pieces = stride(from: 0, to: data.count, by: 997).map { data[$0..<min($0 + 997, data.count)] }
        XCTAssertEqual(try splitLines(pieces), [line, "end"])
    }

    func testSampleCutAtEveryOffset() throws {
        XCTAssertEqual(try splitLines([lineSample]), expectedSampleLines)
        for offset in 0...lineSample.count {
            XCTAssertEqual(
                try splitLines(chunks(of: lineSample, at: [offset])), expectedSampleLines, "cut at \(offset)")
        }
    }

    func testSampleInSingleBytes() throws {
        XCTAssertEqual(try splitLines(singleBytes(of: lineSample)), expectedSampleLines)
    }

    func testSampleCutInThreeAtEveryPairOfOffsets() throws {
        for first in 0...lineSample.count {
            for second in first...lineSample.count {
                let lines = try splitLines(chunks(of: lineSample, at: [first, second]))
                if lines != expectedSampleLines {
                    XCTFail("cut at \(first) and \(second): \(lines)")
                    return
                }
            }
        }
    }
}

// MARK: - Server-sent events

final class ServerSentEventParserTests: XCTestCase {
    func testEventDefaults() {
        let event = ServerSentEvent()
        XCTAssertEqual(event.event, "message")
        XCTAssertEqual(event.data, "")
        XCTAssertNil(event.id)
        XCTAssertNil(event.retry)
    }

    func testSingleEvent() throws {
        XCTAssertEqual(try events("data: hello\n\n"), [ServerSentEvent(data: "hello")])
    }

    func testEventIsDispatchedByTheBlankLineOnly() throws {
        var parser = ServerSentEventParser()
        XCTAssertEqual(try parser.append(bytes("data: hel")), [])
        XCTAssertEqual(try parser.append(bytes("lo\n")), [])
        XCTAssertEqual(try parser.append(bytes("\n")), [ServerSentEvent(data: "hello")])
    }

    func testMultiLineData() throws {
        XCTAssertEqual(try events("data: YHOO\ndata: +2\ndata: 10\n\n"), [ServerSentEvent(data: "YHOO\n+2\n10")])
    }

    func testDataWithEmptyLines() throws {
        XCTAssertEqual(
            try events("data\n\ndata\ndata\n\ndata:\n"), [ServerSentEvent(data: ""), ServerSentEvent(data: "\n")])
    }

    func testCommentsAreIgnored() throws {
        XCTAssertEqual(try events(": a comment\n\n"), [])
        XCTAssertEqual(
            try events(":no space\ndata: a\n:: two colons\ndata: b\n: data: c\n\n"), [ServerSentEvent(data: "a\nb")])
    }

    func testFieldWithoutColonHasAnEmptyValue() throws {
        XCTAssertEqual(try events("data\n\n"), [ServerSentEvent(data: "")])
        XCTAssertEqual(try events("event\ndata: x\n\n"), [ServerSentEvent(event: "message", data: "x")])
        XCTAssertEqual(try events("id: 5\nid\ndata: x\n\n"), [ServerSentEvent(data: "x", id: "")])
    }

    func testOneLeadingSpaceIsRemovedFromTheValue() throws {
        XCTAssertEqual(
            try events("data:test\n\ndata: test\n\n"),
            [ServerSentEvent(data: "test"), ServerSentEvent(data: "test")]
        )
        XCTAssertEqual(try events("data:  two\n\n"), [ServerSentEvent(data: " two")])
        XCTAssertEqual(try events("data:\ttab\n\n"), [ServerSentEvent(data: "\ttab")])
        XCTAssertEqual(try events("data: trailing \n\n"), [ServerSentEvent(data: "trailing ")])
        XCTAssertEqual(try events("event:  spaced\ndata: x\n\n"), [ServerSentEvent(event: " spaced", data: "x")])
    }

    func testValueKeepsLaterColons() throws {
        XCTAssertEqual(try events("data: a: b:c\n\n"), [ServerSentEvent(data: "a: b:c")])
        XCTAssertEqual(try events("data::\n\n"), [ServerSentEvent(data: ":")])
    }

    func testFieldNameBeforeTheColonIsExact() throws {
        // "data " (with a space) is not "data"; names are case-sensitive.
        XCTAssertEqual(try events("data : x\nData: y\nDATA: z\n\n"), [])
    }

    func testUnknownFieldsAreIgnored() throws {
        XCTAssertEqual(
            try events("foo: bar\ndata: x\nretryx: 5\nidentity: 9\n\n"),
            [ServerSentEvent(data: "x")]
        )
    }

    func testByteOrderMarkAtTheStartIsSkipped() throws {
        let data = Data([0xEF, 0xBB, 0xBF]) + bytes("data: x\n\n")
        XCTAssertEqual(try parseEvents([data]).events, [ServerSentEvent(data: "x")])
        for offset in 0...4 {
            XCTAssertEqual(try parseEvents(chunks(of: data, at: [offset])).events, [ServerSentEvent(data: "x")])
        }
        XCTAssertEqual(try parseEvents(singleBytes(of: data)).events, [ServerSentEvent(data: "x")])
        XCTAssertEqual(
            try parseEvents([Data(), data.prefix(1), Data(), data.dropFirst()]).events, [ServerSentEvent(data: "x")])
    }

    func testByteOrderMarkIsSkippedOnlyOnce() throws {
        // A second mark is part of the first field's name, which is then unknown.
        let twice = Data([0xEF, 0xBB, 0xBF, 0xEF, 0xBB, 0xBF]) + bytes("data: x\n\ndata: y\n\n")
        XCTAssertEqual(try parseEvents([twice]).events, [ServerSentEvent(data: "y")])
        XCTAssertEqual(try parseEvents(singleBytes(of: twice)).events, [ServerSentEvent(data: "y")])
    }

    func testByteOrderMarkAfterTheStartIsNotSkipped() throws {
        XCTAssertEqual(try events("data: a\n\n\u{FEFF}data: b\n\n"), [ServerSentEvent(data: "a")])
        XCTAssertEqual(try events("data: \u{FEFF}c\n\n"), [ServerSentEvent(data: "\u{FEFF}c")])
    }

    func testPartialByteOrderMarkIsData() throws {
        // EF BB then "data": not a mark; the two bytes (one U+FFFD) belong to the first field's name.
        let data = Data([0xEF, 0xBB]) + bytes("data: x\n\ndata: y\n\n")
        XCTAssertEqual(try parseEvents([data]).events, [ServerSentEvent(data: "y")])
        XCTAssertEqual(try parseEvents(singleBytes(of: data)).events, [ServerSentEvent(data: "y")])
        // A stream of only part of a mark gives nothing.
        XCTAssertEqual(try parseEvents([Data([0xEF, 0xBB])]).events, [])
        XCTAssertEqual(try parseEvents([Data([0xEF])]).events, [])
    }

    func testLineEnds() throws {
        let expected = [ServerSentEvent(data: "a\nb")]
        XCTAssertEqual(try events("data: a\ndata: b\n\n"), expected)
        XCTAssertEqual(try events("data: a\r\ndata: b\r\n\r\n"), expected)
        XCTAssertEqual(try events("data: a\rdata: b\r\r"), expected)
        XCTAssertEqual(try events("data: a\rdata: b\n\r\n"), expected)
        // CR CR LF: a CR line end, then a CRLF ending an empty line.
        XCTAssertEqual(
            try events("data: a\r\r\ndata: b\n\n"), [ServerSentEvent(data: "a"), ServerSentEvent(data: "b")])
        // LF CR: two line ends.
        XCTAssertEqual(try events("data: a\n\rdata: b\n\n"), [ServerSentEvent(data: "a"), ServerSentEvent(data: "b")])
    }

    func testCRAtAChunkEndAndLFAtTheNextChunkStartAreOneLineEnd() throws {
        // Were the LF a second line end, it would be a blank line dispatching "a" alone.
        var parser = ServerSentEventParser()
        XCTAssertEqual(try parser.append(bytes("data: a\r")), [])
        XCTAssertEqual(try parser.append(bytes("\ndata: b\n\n")), [ServerSentEvent(data: "a\nb")])
        XCTAssertEqual(
            try parseEvents([bytes("data: a\r"), Data(), bytes("\ndata: b\n\n")]).events,
            [ServerSentEvent(data: "a\nb")])
        // Only one LF is skipped.
        XCTAssertEqual(try parseEvents([bytes("data: a\r"), bytes("\n\n")]).events, [ServerSentEvent(data: "a")])
    }

    func testCRDispatchesWithoutWaitingForTheNextChunk() throws {
        var parser = ServerSentEventParser()
        XCTAssertEqual(try parser.append(bytes("data: a\r\r")), [ServerSentEvent(data: "a")])
        XCTAssertEqual(try parser.append(bytes("\ndata: b\r\n\r\n")), [ServerSentEvent(data: "b")])
    }

    func testIdWithNullIsIgnored() throws {
        XCTAssertEqual(
            try events("id: 1\n\nid: 2\u{0}\ndata: x\n\n"),
            [ServerSentEvent(data: "x", id: "1")]
        )
        let result = try parseEvents([bytes("id: a\u{0}b\ndata: x\n\n")])
        XCTAssertEqual(result.events, [ServerSentEvent(data: "x", id: nil)])
        XCTAssertEqual(result.lastEventID, "")
    }

    func testIdPersistsAcrossEvents() throws {
        let result = try parseEvents([bytes("id: 7\ndata: a\n\ndata: b\n\nid: 8\ndata: c\n\ndata: d\n\n")])
        XCTAssertEqual(result.events.map(\.id), ["7", "7", "8", "8"])
        XCTAssertEqual(result.lastEventID, "8")
    }

    func testNoIdIsNil() throws {
        let result = try parseEvents([bytes("data: a\n\n")])
        XCTAssertEqual(result.events, [ServerSentEvent(data: "a", id: nil)])
        XCTAssertEqual(result.lastEventID, "")
    }

    func testEmptyIdResetsTheLastEventID() throws {
        let result = try parseEvents([
            bytes(": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n")
        ])
        XCTAssertEqual(
            result.events,
            [ServerSentEvent(data: "first event", id: "1"), ServerSentEvent(data: "second event", id: "")])
        XCTAssertEqual(result.lastEventID, "")
    }

    func testIdOfABlockWithoutDataStillBecomesTheLastEventID() throws {
        var parser = ServerSentEventParser()
        XCTAssertEqual(try parser.append(bytes("id: 41\n\n")), [])
        XCTAssertEqual(parser.lastEventID, "41")
        XCTAssertEqual(try parser.append(bytes("data: x\n\n")), [ServerSentEvent(data: "x", id: "41")])
    }

    func testIdTakesEffectAtDispatch() throws {
        var parser = ServerSentEventParser()
        XCTAssertEqual(try parser.append(bytes("data: x\nid: 3\n")), [])
        XCTAssertEqual(parser.lastEventID, "")
        XCTAssertEqual(try parser.append(bytes("\n")), [ServerSentEvent(data: "x", id: "3")])
        XCTAssertEqual(parser.lastEventID, "3")
        // An id in a block the stream never ends is not in effect.
        XCTAssertEqual(try parser.append(bytes("id: 4\ndata: y\n")), [])
        XCTAssertEqual(parser.finish(), [])
        XCTAssertEqual(parser.lastEventID, "3")
        // Nor in the next stream's events.
        XCTAssertEqual(try parser.append(bytes("data: z\n\n")), [ServerSentEvent(data: "z", id: "3")])
    }

    func testEmptyInitialLastEventIDIsNone() throws {
        let result = try parseEvents([bytes("data: a\n\n")], lastEventID: "")
        XCTAssertEqual(result.events, [ServerSentEvent(data: "a", id: nil)])
        XCTAssertEqual(result.lastEventID, "")
    }

    func testLastEventIDOutlivesFinish() throws {
        var parser = ServerSentEventParser()
        XCTAssertEqual(try parser.append(bytes("id: 1\ndata: a\n\ndata: cut")), [ServerSentEvent(data: "a", id: "1")])
        XCTAssertEqual(parser.finish(), [])
        XCTAssertEqual(parser.lastEventID, "1")
        XCTAssertEqual(try parser.append(bytes("data: b\n\n")), [ServerSentEvent(data: "b", id: "1")])
    }

    func testInitialLastEventID() throws {
        let result = try parseEvents([bytes("data: a\n\nid: 10\ndata: b\n\n")], lastEventID: "9")
        XCTAssertEqual(result.events.map(\.id), ["9", "10"])
        XCTAssertEqual(try parseEvents([], lastEventID: "9").lastEventID, "9")
    }

    func testRetryAcceptsOnlyASCIIDigits() throws {
        for value in ["12x", "-1", "+1", "1.5", "", " 100", "1 ", "１２", "0x10"] {
            let result = try parseEvents([bytes("retry: \(value)\ndata: x\n\n")])
            XCTAssertEqual(result.events, [ServerSentEvent(data: "x")], "retry: \(value)")
            XCTAssertNil(result.reconnectionTime, "retry: \(value)")
        }
        let result = try parseEvents([bytes("retry: 1500\ndata: x\n\nretry:0042\ndata: y\n\n")])
        XCTAssertEqual(result.events, [ServerSentEvent(data: "x", retry: 1500), ServerSentEvent(data: "y", retry: 42)])
        XCTAssertEqual(result.reconnectionTime, 42)
    }

    func testInvalidRetryKeepsTheEarlierValue() throws {
        let result = try parseEvents([bytes("retry: 1000\n\nretry: soon\ndata: x\n\n")])
        XCTAssertEqual(result.events, [ServerSentEvent(data: "x", retry: nil)])
        XCTAssertEqual(result.reconnectionTime, 1000)
    }

    func testRetryBelongsToItsBlockOnly() throws {
        let result = try parseEvents([bytes("retry: 5\ndata: a\n\ndata: b\n\n")])
        XCTAssertEqual(result.events, [ServerSentEvent(data: "a", retry: 5), ServerSentEvent(data: "b", retry: nil)])
        XCTAssertEqual(result.reconnectionTime, 5)
    }

    func testRetryTakesEffectAtOnce() throws {
        var parser = ServerSentEventParser()
        XCTAssertEqual(try parser.append(bytes("retry: 250\n")), [])
        XCTAssertEqual(parser.reconnectionTime, 250)
        XCTAssertEqual(parser.finish(), [])
        XCTAssertEqual(parser.reconnectionTime, 250)
    }

    func testHugeRetryIsClamped() throws {
        let result = try parseEvents([bytes("retry: 99999999999999999999999999\ndata: x\n\n")])
        XCTAssertEqual(result.reconnectionTime, Int.max)
        XCTAssertEqual(result.events.first?.retry, Int.max)
    }

    func testBlockWithoutDataDispatchesNothing() throws {
        XCTAssertEqual(try events("event: ping\n\n"), [])
        XCTAssertEqual(try events("id: 1\nevent: ping\nretry: 10\n\n"), [])
        XCTAssertEqual(try events("\n\n\n"), [])
    }

    func testEventTypeIsResetAfterABlockWithoutData() throws {
        XCTAssertEqual(try events("event: ping\n\ndata: x\n\n"), [ServerSentEvent(event: "message", data: "x")])
    }

    func testEventTypeIsResetAfterDispatch() throws {
        XCTAssertEqual(
            try events("event: add\ndata: 1\n\ndata: 2\n\nevent: remove\ndata: 3\n\n"),
            [
                ServerSentEvent(event: "add", data: "1"),
                ServerSentEvent(event: "message", data: "2"),
                ServerSentEvent(event: "remove", data: "3"),
            ]
        )
    }

    func testEmptyEventTypeIsMessage() throws {
        XCTAssertEqual(try events("event:\ndata: x\n\n"), [ServerSentEvent(event: "message", data: "x")])
        XCTAssertEqual(try events("event: a\nevent: b\ndata: x\n\n"), [ServerSentEvent(event: "b", data: "x")])
    }

    func testUnterminatedLastEventIsDropped() throws {
        XCTAssertEqual(try events("data: a\n\ndata: b\n"), [ServerSentEvent(data: "a")])
        XCTAssertEqual(try events("data: a\n\ndata: b"), [ServerSentEvent(data: "a")])
        XCTAssertEqual(try events("data: a\n\ndata: b\r"), [ServerSentEvent(data: "a")])
        var parser = ServerSentEventParser()
        XCTAssertEqual(try parser.append(bytes("data: never ended\n")), [])
        XCTAssertEqual(parser.finish(), [])
        // Finished, the parser reads a new stream.
        XCTAssertEqual(try parser.append(bytes("data: new\n\n")), [ServerSentEvent(data: "new")])
    }

    func testNonASCIIText() throws {
        XCTAssertEqual(
            try events("event: ünïcödé\ndata: 日本語 😀\nid: ид\n\n"),
            [ServerSentEvent(event: "ünïcödé", data: "日本語 😀", id: "ид")]
        )
    }

    func testInvalidUTF8BecomesReplacementCharacters() throws {
        let data =
            bytes("data: a") + Data([0xFF, 0xE2, 0x82]) + bytes("\ndata: ") + Data([0xF0, 0x9F]) + bytes("\n\n")
        let expected = [ServerSentEvent(data: "a\u{FFFD}\u{FFFD}\n\u{FFFD}")]
        XCTAssertEqual(try parseEvents([data]).events, expected)
        XCTAssertEqual(try parseEvents(singleBytes(of: data)).events, expected)
    }

    func testOverlongLineThrowsResponseTooLarge() throws {
        var parser = ServerSentEventParser(maximumLineLength: 8)
        XCTAssertEqual(try parser.append(bytes("data: 12\r\n\r\n")), [ServerSentEvent(data: "12")])
        XCTAssertThrowsError(try parser.append(bytes("data: 123\n"))) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .responseTooLarge)
        }
        var waiting = ServerSentEventParser(maximumLineLength: 8)
        XCTAssertEqual(try waiting.append(bytes("data: 12")), [])
        XCTAssertThrowsError(try waiting.append(bytes("3"))) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .responseTooLarge)
        }
    }

    func testEventsBeforeAnOverlongLineAreHandedOut() throws {
        var parser = ServerSentEventParser(maximumLineLength: 8)
        var events: [ServerSentEvent] = []
        XCTAssertThrowsError(
            try parser.append(bytes("data: a\n\ndata: 123456\n\n")) { event, _ in events.append(event) })
        XCTAssertEqual(events, [ServerSentEvent(data: "a")])
    }

    func testEventWithTooMuchDataThrowsResponseTooLarge() throws {
        // "a\n" + "b\n" = 4 bytes: accepted; a third line would make 6.
        var parser = ServerSentEventParser(maximumDataLength: 5)
        XCTAssertEqual(try parser.append(bytes("data: a\ndata: b\n\n")), [ServerSentEvent(data: "a\nb")])
        XCTAssertThrowsError(try parser.append(bytes("data: a\ndata: b\ndata: c\n\n"))) { error in
            let error = error as? ConnectError
            XCTAssertEqual(error?.kind, .responseTooLarge)
            XCTAssertEqual(
                error?.message,
                "an event of the stream has more than 5 bytes of data "
                    + "(raise maximumDataLength if the server sends events that large)"
            )
        }
    }

    func testWHATWGExampleStocks() throws {
        XCTAssertEqual(
            try events("data: YHOO\ndata: +2\ndata: 10\n\n"),
            [ServerSentEvent(data: "YHOO\n+2\n10")]
        )
    }

    func testSample() throws {
        let result = try parseEvents([eventSample])
        XCTAssertEqual(result.events, expectedSampleEvents)
        XCTAssertEqual(result.lastEventID, "2")
        XCTAssertEqual(result.reconnectionTime, 3000)
    }

    func testSampleCutAtEveryOffset() throws {
        for offset in 0...eventSample.count {
            let result = try parseEvents(chunks(of: eventSample, at: [offset]))
            XCTAssertEqual(result.events, expectedSampleEvents, "cut at \(offset)")
            XCTAssertEqual(result.lastEventID, "2", "cut at \(offset)")
            XCTAssertEqual(result.reconnectionTime, 3000, "cut at \(offset)")
        }
    }

    func testSampleInSingleBytes() throws {
        let result = try parseEvents(singleBytes(of: eventSample))
        XCTAssertEqual(result.events, expectedSampleEvents)
        XCTAssertEqual(result.lastEventID, "2")
        XCTAssertEqual(result.reconnectionTime, 3000)
    }

    func testSampleCutInThreeAtEveryPairOfOffsets() throws {
        for first in 0...eventSample.count {
            for second in first...eventSample.count {
                let result = try parseEvents(chunks(of: eventSample, at: [first, second]))
                if result.events != expectedSampleEvents || result.lastEventID != "2" || result.reconnectionTime != 3000
                {
                    XCTFail("cut at \(first) and \(second): \(result)")
                    return
                }
            }
        }
    }
}

// MARK: - Views

final class StreamViewTests: XCTestCase {
    func testViewsAreSendableWhenTheirBaseIs() {
        requireSendable(ResponseLines(stream([])))
        requireSendable(ResponseJSONLines(stream([]), as: Item.self))
        requireSendable(ResponseEvents(stream([])))
        requireSendable(ServerSentEvent())
    }

    func testLines() async throws {
        let lines = try await collect(ResponseLines(stream([bytes("a\r"), bytes("\nb\n\nc")])))
        XCTAssertEqual(lines, ["a", "b", "", "c"])
    }

    func testLinesOfTheSampleCutAtEveryOffset() async throws {
        for offset in 0...lineSample.count {
            let lines = try await collect(ResponseLines(ChunkSequence(chunks(of: lineSample, at: [offset]))))
            XCTAssertEqual(lines, expectedSampleLines, "cut at \(offset)")
        }
    }

    func testLinesDoNotReadAhead() async throws {
        let base = ChunkSequence([bytes("a\nb\n"), bytes("c\n"), bytes("d")])
        var iterator = ResponseLines(base).makeAsyncIterator()
        XCTAssertEqual(base.counter.pulls, 0)
        let expected: [(String?, Int)] = [("a", 1), ("b", 1), ("c", 2), ("d", 4), (nil, 4), (nil, 4)]
        for (line, pulls) in expected {
            let next = try await iterator.next()
            XCTAssertEqual(next, line)
            XCTAssertEqual(base.counter.pulls, pulls, "after \(line ?? "the end")")
        }
    }

    func testLinesPassBaseErrorsThroughUnchanged() async throws {
        let base = ChunkSequence([bytes("a\nb")], failure: Boom(code: 3))
        var iterator = ResponseLines(base).makeAsyncIterator()
        let first = try await iterator.next()
        XCTAssertEqual(first, "a")
        do {
            _ = try await iterator.next()
            XCTFail("no error")
        } catch {
            XCTAssertEqual(error as? Boom, Boom(code: 3))
        }
        let afterError = try await iterator.next()
        XCTAssertNil(afterError)
        XCTAssertEqual(base.counter.pulls, 2)
    }

    func testLinesBeforeAnOverlongLineComeFirst() async throws {
        let base = ChunkSequence([bytes("ok\nfine\n0123456789\nlost\n")])
        var iterator = ResponseLines(base, maximumLineLength: 5).makeAsyncIterator()
        let first = try await iterator.next()
        let second = try await iterator.next()
        XCTAssertEqual([first, second], ["ok", "fine"])
        do {
            _ = try await iterator.next()
            XCTFail("no error")
        } catch {
            XCTAssertEqual((error as? ConnectError)?.kind, .responseTooLarge)
        }
        let afterError = try await iterator.next()
        XCTAssertNil(afterError)
    }

    func testLinesOnAnActor() async throws {
        let lines = try await Collector().lines(of: [bytes("x\r"), bytes("\ny")])
        XCTAssertEqual(lines, ["x", "y"])
    }

    func testLinesEndWhenTheBaseEndsOnCancellation() async throws {
        let (base, baseContinuation) = AsyncStream<Data>.makeStream()
        let (lines, linesContinuation) = AsyncStream<String>.makeStream()
        baseContinuation.yield(bytes("first\n"))
        let task = Task {
            defer { linesContinuation.finish() }
            for try await line in ResponseLines(base) { linesContinuation.yield(line) }
        }
        var received = lines.makeAsyncIterator()
        let first = await received.next()
        XCTAssertEqual(first, "first")
        // The view waits in the base, which ends when its task is cancelled; a cancellation that lands before the
        // loop asks for its next line instead makes that `next()` throw `.cancelled` (ResponseLines' contract).
        // Either way the loop ends, and no line comes after it.
        task.cancel()
        do {
            try await task.value
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .cancelled)
        }
        let end = await received.next()
        XCTAssertNil(end)
        baseContinuation.finish()
    }

    // MARK: JSON Lines

    func testJSONLines() async throws {
        let items = try await collect(ResponseJSONLines(stream([jsonLinesSample]), as: Item.self))
        XCTAssertEqual(items, expectedSampleItems)
    }

    func testJSONLinesOfTheSampleCutAtEveryOffset() async throws {
        for offset in 0...jsonLinesSample.count {
            let base = ChunkSequence(chunks(of: jsonLinesSample, at: [offset]))
            let items = try await collect(ResponseJSONLines(base, as: Item.self))
            XCTAssertEqual(items, expectedSampleItems, "cut at \(offset)")
        }
        let items = try await collect(ResponseJSONLines(ChunkSequence(singleBytes(of: jsonLinesSample)), as: Item.self))
        XCTAssertEqual(items, expectedSampleItems)
    }

    func testJSONLinesSkipBlankLines() async throws {
        let base = stream([bytes("\n \t \r\n{\"id\":1,\"name\":\"a\"}\n\r\n\n")])
        let items = try await collect(ResponseJSONLines(base, as: Item.self))
        XCTAssertEqual(items, [Item(id: 1, name: "a")])
        let none = try await collect(ResponseJSONLines(stream([bytes("\n\n  ")]), as: Item.self))
        XCTAssertEqual(none, [])
    }

    func testJSONLinesUseTheGivenDecoder() async throws {
        struct Snake: Decodable, Equatable { var firstName: String }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let base = stream([bytes("{\"first_name\":\"Ada\"}\n")])
        let values = try await collect(ResponseJSONLines(base, as: Snake.self, decoder: decoder))
        XCTAssertEqual(values, [Snake(firstName: "Ada")])
    }

    func testJSONLinesBadLineNamesItsNumberAndCarriesItsBytes() async throws {
        let base = ChunkSequence([
            bytes("{\"id\":1,\"name\":\"a\"}\n{\"id\":2,\"na"), bytes("me\":\"b\"}\r\n{\"id\":\"three\"}\r\n{}\n"),
        ])
        var iterator = ResponseJSONLines(base, as: Item.self).makeAsyncIterator()
        let first = try await iterator.next()
        let second = try await iterator.next()
        XCTAssertEqual([first, second], [Item(id: 1, name: "a"), Item(id: 2, name: "b")])
        do {
            _ = try await iterator.next()
            XCTFail("no error")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .decoding)
            let badLine = bytes("{\"id\":\"three\"}")
            let expected = ConnectError.decoding(
                try XCTUnwrap(error.underlyingError),
                body: badLine,
                as: Item.self
            )
            XCTAssertEqual(error.message, "line 3 of the stream: " + expected.message)
            XCTAssertTrue(error.message.hasPrefix("line 3 of the stream: could not decode Item"), error.message)
            XCTAssertEqual(error.body, badLine)
            XCTAssertEqual(error.codingPath, "id")
            XCTAssertTrue(error.underlyingError is DecodingError)
        }
        // The iteration is over: the line after is not decoded.
        let afterError = try await iterator.next()
        XCTAssertNil(afterError)
    }

    func testJSONLinesCountBlankLinesInLineNumbers() async throws {
        let base = stream([bytes("{\"id\":1,\"name\":\"a\"}\n\n  \nnot json\n")])
        do {
            _ = try await collect(ResponseJSONLines(base, as: Item.self))
            XCTFail("no error")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .decoding)
            XCTAssertTrue(error.message.hasPrefix("line 4 of the stream: could not decode Item"), error.message)
            XCTAssertEqual(error.body, bytes("not json"))
        }
    }

    func testJSONLinesBadLastLineWithoutLineEnd() async throws {
        let base = stream([bytes("{\"id\":1,\"name\":\"a\"}\n{\"id\":")])
        do {
            _ = try await collect(ResponseJSONLines(base, as: Item.self))
            XCTFail("no error")
        } catch let error as ConnectError {
            XCTAssertTrue(error.message.hasPrefix("line 2 of the stream: "), error.message)
            XCTAssertEqual(error.body, bytes("{\"id\":"))
        }
    }

    /// A number that does not fit its type in a line (which JSONDecoder calls "not valid JSON", with no path) is
    /// named with its path, as in a response body; a line that is not JSON keeps JSONDecoder's message.
    func testJSONLinesNameANumberThatDoesNotFitItsType() async throws {
        let base = stream([bytes("{\"id\":1,\"name\":\"a\"}\n{\"id\":2.5,\"name\":\"b\"}\n")])
        do {
            _ = try await collect(ResponseJSONLines(base, as: Item.self))
            XCTFail("no error")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .decoding)
            XCTAssertEqual(error.codingPath, "id")
            XCTAssertEqual(
                error.message,
                "line 2 of the stream: could not decode Item from the response body: the number 2.5 at 'id' does not "
                    + "fit Int (the JSON is valid: JSONDecoder reports such a number as "
                    + "\"The given data was not valid JSON.\")")
            XCTAssertEqual(error.body, bytes("{\"id\":2.5,\"name\":\"b\"}"))
        }
        do {
            _ = try await collect(ResponseJSONLines(stream([bytes("{\"id\":1,\n")]), as: Item.self))
            XCTFail("no error")
        } catch let error as ConnectError {
            XCTAssertNil(error.codingPath)
            XCTAssertTrue(error.message.hasSuffix("invalid data: The given data was not valid JSON."), error.message)
        }
    }

    /// With `convertFromSnakeCase`, a missing key is named as the model has it and as the JSON would have it.
    func testJSONLinesNameAMissingKeyAsTheJSONWouldHaveIt() async throws {
        struct Snake: Decodable { var firstName: String }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        do {
            _ = try await collect(
                ResponseJSONLines(stream([bytes("{\"name\":\"Ada\"}\n")]), as: Snake.self, decoder: decoder))
            XCTFail("no error")
        } catch let error as ConnectError {
            XCTAssertEqual(
                error.message,
                "line 1 of the stream: could not decode Snake from the response body: missing key 'firstName' "
                    + "(first_name in the JSON)")
        }
    }

    func testJSONLinesDoNotReadAhead() async throws {
        let line = "{\"id\":1,\"name\":\"a\"}\n"
        let base = ChunkSequence([bytes(line + line), bytes("\n"), bytes(line)])
        var iterator = ResponseJSONLines(base, as: Item.self).makeAsyncIterator()
        var pulls: [Int] = []
        while try await iterator.next() != nil { pulls.append(base.counter.pulls) }
        pulls.append(base.counter.pulls)
        XCTAssertEqual(pulls, [1, 1, 3, 4])
    }

    func testJSONLinesPassBaseErrorsThroughUnchanged() async throws {
        let base = ChunkSequence([bytes("{\"id\":1,\"name\":\"a\"}\n")], failure: Boom())
        var items: [Item] = []
        do {
            for try await item in ResponseJSONLines(base, as: Item.self) { items.append(item) }
            XCTFail("no error")
        } catch {
            XCTAssertEqual(error as? Boom, Boom())
        }
        XCTAssertEqual(items, [Item(id: 1, name: "a")])
    }

    func testJSONLinesOnAnActor() async throws {
        let items = try await Collector().items(of: [jsonLinesSample])
        XCTAssertEqual(items, expectedSampleItems)
    }

    // MARK: Events

    func testEvents() async throws {
        let events = try await collect(ResponseEvents(stream([eventSample])))
        XCTAssertEqual(events, expectedSampleEvents)
    }

    func testEventsOfTheSampleCutAtEveryOffset() async throws {
        for offset in 0...eventSample.count {
            let events = try await collect(ResponseEvents(ChunkSequence(chunks(of: eventSample, at: [offset]))))
            XCTAssertEqual(events, expectedSampleEvents, "cut at \(offset)")
        }
        let events = try await collect(ResponseEvents(ChunkSequence(singleBytes(of: eventSample))))
        XCTAssertEqual(events, expectedSampleEvents)
    }

    func testEventsDoNotReadAhead() async throws {
        let base = ChunkSequence([bytes("data: a\n\ndata: b\n\n"), bytes(": ping\n\n"), bytes("data: c\n\n")])
        var iterator = ResponseEvents(base).makeAsyncIterator()
        var pulls: [Int] = []
        while try await iterator.next() != nil { pulls.append(base.counter.pulls) }
        pulls.append(base.counter.pulls)
        XCTAssertEqual(pulls, [1, 1, 3, 4])
    }

    func testEventsPassBaseErrorsThroughUnchanged() async throws {
        let base = ChunkSequence([bytes("data: a\n\ndata: b")], failure: Boom(code: 9))
        var events: [ServerSentEvent] = []
        do {
            for try await event in ResponseEvents(base) { events.append(event) }
            XCTFail("no error")
        } catch {
            XCTAssertEqual(error as? Boom, Boom(code: 9))
        }
        XCTAssertEqual(events, [ServerSentEvent(data: "a")])
    }

    func testEventsReportProgressForEachEventAndAtTheEnd() async throws {
        let reports = Protected<[String]>([])
        let base = stream([bytes("retry: 100\nid: 1\ndata: a\n\ndata: b\n\nid: 2\nretry: 200\n\nid: 3\ndata: lost\n")])
        let events = ResponseEvents(base) { id, retry in
            reports.withLock { $0.append("\(id) \(retry.map(String.init) ?? "nil")") }
        }
        var seen: [String] = []
        for try await event in events {
            seen.append(event.data)
            // Reported before the event is handed out.
            XCTAssertEqual(reports.withLock { $0.count }, seen.count)
        }
        XCTAssertEqual(seen, ["a", "b"])
        XCTAssertEqual(reports.withLock { $0 }, ["1 100", "1 100", "2 200"])
    }

    func testEventsProgressReportsTheReconnectionTimeAtEachEventsDispatch() async throws {
        let reports = Protected<[Int?]>([])
        let base = stream([bytes("data: a\n\nretry: 5\ndata: b\n\ndata: c\n\nretry: 6\n\n")])
        let events = ResponseEvents(base) { _, retry in reports.withLock { $0.append(retry) } }
        _ = try await collect(events)
        XCTAssertEqual(reports.withLock { $0 }, [nil, 5, 5, 6])
    }

    func testEventsReportProgressOnceWhenTheBaseFails() async throws {
        let reports = Protected<[String]>([])
        let base = ChunkSequence([bytes("id: 1\ndata: a\n\nid: 2\n\n")], failure: Boom())
        var iterator = ResponseEvents(base) { id, _ in reports.withLock { $0.append(id) } }.makeAsyncIterator()
        let first = try await iterator.next()
        XCTAssertEqual(first, ServerSentEvent(data: "a", id: "1"))
        do {
            _ = try await iterator.next()
            XCTFail("no error")
        } catch {
            XCTAssertEqual(error as? Boom, Boom())
        }
        let afterError = try await iterator.next()
        XCTAssertNil(afterError)
        XCTAssertEqual(reports.withLock { $0 }, ["1", "2"])
        XCTAssertEqual(iterator.lastEventID, "2")
    }

    func testEventsReportProgressWhenAnEventIsTooLarge() async throws {
        let reports = Protected<[String]>([])
        let base = ChunkSequence([bytes("id: 1\ndata: a\n\ndata: 0123456789\n\n")])
        let events = ResponseEvents(base, maximumLineLength: 8) { id, _ in reports.withLock { $0.append(id) } }
        var seen: [ServerSentEvent] = []
        do {
            for try await event in events { seen.append(event) }
            XCTFail("no error")
        } catch {
            XCTAssertEqual((error as? ConnectError)?.kind, .responseTooLarge)
        }
        XCTAssertEqual(seen, [ServerSentEvent(data: "a", id: "1")])
        XCTAssertEqual(reports.withLock { $0 }, ["1", "1"])
    }

    func testEventsIteratorKeepsTheResumeState() async throws {
        let base = ChunkSequence([bytes("data: a\n\nid: 5\nretry: 70\ndata: b\n\nid: 6\n\n")])
        var iterator = ResponseEvents(base, lastEventID: "4").makeAsyncIterator()
        XCTAssertEqual(iterator.lastEventID, "4")
        XCTAssertNil(iterator.reconnectionTime)
        let first = try await iterator.next()
        XCTAssertEqual(first, ServerSentEvent(data: "a", id: "4"))
        XCTAssertEqual(iterator.lastEventID, "4")
        let second = try await iterator.next()
        XCTAssertEqual(second, ServerSentEvent(data: "b", id: "5", retry: 70))
        // The id-only block is parsed, but its ID counts only once the iteration ends.
        XCTAssertEqual(iterator.lastEventID, "5")
        XCTAssertEqual(iterator.reconnectionTime, 70)
        let end = try await iterator.next()
        XCTAssertNil(end)
        XCTAssertEqual(iterator.lastEventID, "6")
        XCTAssertEqual(iterator.reconnectionTime, 70)
    }

    func testEventsOnAnActor() async throws {
        let events = try await Collector().events(of: singleBytes(of: eventSample))
        XCTAssertEqual(events, expectedSampleEvents)
    }
}

// MARK: - Batches of lines

/// `lines.batches`: the lines of `ResponseLines`, a batch a chunk, as views over the chunk's bytes.
final class LineBatchTests: XCTestCase {
    /// The lines of every batch of `base`, as text, and the batches' sizes.
    private func batches(_ base: ChunkSequence, maximumLineLength: Int = 1 << 20) async throws -> [[String]] {
        var result: [[String]] = []
        for try await batch in ResponseLineBatches(base, maximumLineLength: maximumLineLength) {
            result.append(batch.map(\.string))
        }
        return result
    }

    func testTheSampleCutAnywhereGivesTheLinesOfResponseLines() async throws {
        let whole = try await batches(ChunkSequence([lineSample])).flatMap { $0 }
        XCTAssertEqual(whole, expectedSampleLines)
        for first in 0...lineSample.count {
            for second in stride(from: first, through: lineSample.count, by: 3) {
                let lines = try await batches(ChunkSequence(chunks(of: lineSample, at: [first, second])))
                    .flatMap { $0 }
                if lines != expectedSampleLines {
                    return XCTFail("cut at \(first) and \(second): \(lines)")
                }
            }
        }
        let single = try await batches(ChunkSequence(singleBytes(of: lineSample))).flatMap { $0 }
        XCTAssertEqual(single, expectedSampleLines)
    }

    func testABatchAChunkAndNoneForAChunkThatEndsNoLine() async throws {
        let base = ChunkSequence([bytes("a\nb"), bytes("cd"), bytes("e\r"), bytes("\nf\ng\n"), bytes("tail")])

        let result = try await batches(base)

        XCTAssertEqual(result, [["a"], ["bcde", "f", "g"], ["tail"]], "a line begun earlier comes first in its batch")
    }

    func testBatchesDoNotReadAhead() async throws {
        let base = ChunkSequence([bytes("a\nb\n"), bytes("c"), bytes("\n")])
        var iterator = ResponseLineBatches(base).makeAsyncIterator()
        XCTAssertEqual(base.counter.pulls, 0)

        let first = try await iterator.next()
        XCTAssertEqual(first?.map(\.string), ["a", "b"])
        XCTAssertEqual(base.counter.pulls, 1)
        let second = try await iterator.next()
        XCTAssertEqual(second?.map(\.string), ["c"])
        XCTAssertEqual(base.counter.pulls, 3, "the chunk without a line end was read only to complete the line")
        let end = try await iterator.next()
        XCTAssertNil(end)
    }

    func testTheLinesBeforeAnOverlongLineComeFirstThenTheError() async throws {
        let base = ChunkSequence([bytes("ok\nfine\n0123456789\nlost\n")])
        var iterator = ResponseLineBatches(base, maximumLineLength: 5).makeAsyncIterator()

        let first = try await iterator.next()
        XCTAssertEqual(first?.map(\.string), ["ok", "fine"])
        do {
            _ = try await iterator.next()
            XCTFail("no error")
        } catch {
            XCTAssertEqual((error as? ConnectError)?.kind, .responseTooLarge)
        }
        let afterError = try await iterator.next()
        XCTAssertNil(afterError)
    }

    func testALineTooLongAmongShortOnesInOneChunkEndsTheBatchBeforeIt() async throws {
        // The chunk's lines together exceed the limit, so each is measured: CRLF ends do not count.
        let base = ChunkSequence([bytes("12345\r\n12345\r\n\r\n123456\r\nlost\n")])
        var iterator = ResponseLineBatches(base, maximumLineLength: 5).makeAsyncIterator()

        let first = try await iterator.next()
        XCTAssertEqual(first?.map(\.string), ["12345", "12345", ""])
        do {
            _ = try await iterator.next()
            XCTFail("no error")
        } catch {
            XCTAssertEqual((error as? ConnectError)?.kind, .responseTooLarge)
        }
    }

    func testALineTooLongAcrossChunksFailsBeforeItsEnd() async throws {
        let base = ChunkSequence([bytes("ab"), bytes("cdef"), bytes("gh\n")])
        var iterator = ResponseLineBatches(base, maximumLineLength: 5).makeAsyncIterator()

        do {
            _ = try await iterator.next()
            XCTFail("no error")
        } catch {
            XCTAssertEqual((error as? ConnectError)?.kind, .responseTooLarge)
        }
        XCTAssertEqual(base.counter.pulls, 2, "the line was refused as soon as it was too long")
    }

    func testBaseErrorsPassThroughUnchanged() async throws {
        let base = ChunkSequence([bytes("a\nb")], failure: Boom(code: 3))
        var iterator = ResponseLineBatches(base).makeAsyncIterator()

        let first = try await iterator.next()
        XCTAssertEqual(first?.map(\.string), ["a"])
        do {
            _ = try await iterator.next()
            XCTFail("no error")
        } catch {
            XCTAssertEqual(error as? Boom, Boom(code: 3))
        }
        let afterError = try await iterator.next()
        XCTAssertNil(afterError)
    }

    func testABytesViewReadsAsBytesTextAndData() async throws {
        // A chunk that is a slice of a larger Data: its indices do not start at 0.
        let whole = bytes("xxhé\r\nline two\n")
        let chunk = whole[2...]
        var iterator = ResponseLineBatches(ChunkSequence([chunk])).makeAsyncIterator()
        let next = try await iterator.next()
        let batch = try XCTUnwrap(next)

        XCTAssertEqual(batch.count, 2)
        XCTAssertFalse(batch.isEmpty)
        let lines = Array(batch)
        let line = lines[0]
        XCTAssertEqual(Array(line), Array("hé".utf8))
        XCTAssertEqual(line.count, 3)
        XCTAssertEqual(line[0], UInt8(ascii: "h"))
        XCTAssertEqual(line.string, "hé")
        XCTAssertEqual(line.data, Data("hé".utf8))
        XCTAssertEqual(line.data.startIndex, 0)
        XCTAssertEqual(line.withUnsafeBytes { Array($0) }, Array("hé".utf8))
        XCTAssertTrue(lines[1].starts(with: Array("line".utf8)))
        XCTAssertEqual("\(lines[1])", "line two")
        XCTAssertEqual(batch[1].string, "line two", "random access")
    }

    func testTheLinesViewHasBatchesAndTheyAreSendable() async throws {
        requireSendable(ResponseLines(stream([])).batches)
        var lines: [String] = []
        for try await batch in ResponseLines(stream([bytes("a\r"), bytes("\nb\n\nc")])).batches {
            requireSendable(batch)
            lines += batch.map(\.string)
        }
        XCTAssertEqual(lines, ["a", "b", "", "c"])
    }

    func testAResponseStreamsLinesInBatches() async throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/lines") { _ in .text("one\ntwo\r\nthree") }
        let connect = Connect(transport: TransportUnderTest.make())

        var lines: [String] = []
        for try await batch in connect.stream(Route("/lines", baseURL: server.baseURL)).lines.batches {
            lines += batch.map(\.string)
        }

        XCTAssertEqual(lines, ["one", "two", "three"])
    }
}

// MARK: - Batches of events

/// `events.batches`: the events of `ResponseEvents`, a batch a chunk, their data as bytes.
final class EventBatchTests: XCTestCase {
    /// The events of every batch of `base`, as `ServerSentEvent`s, and the iterator's state at the end.
    private func batches(_ base: ChunkSequence, lastEventID: String? = nil) async throws -> (
        batches: [[ServerSentEvent]], lastEventID: String, reconnectionTime: Int?
    ) {
        var iterator = ResponseEventBatches(base, lastEventID: lastEventID).makeAsyncIterator()
        var result: [[ServerSentEvent]] = []
        while let batch = try await iterator.next() { result.append(batch.map(\.serverSentEvent)) }
        return (result, iterator.lastEventID, iterator.reconnectionTime)
    }

    func testTheSampleCutAnywhereGivesTheEventsOfResponseEvents() async throws {
        for offset in 0...eventSample.count {
            let result = try await batches(ChunkSequence(chunks(of: eventSample, at: [offset])))
            XCTAssertEqual(result.batches.flatMap { $0 }, expectedSampleEvents, "cut at \(offset)")
            XCTAssertEqual(result.lastEventID, "2", "cut at \(offset)")
            XCTAssertEqual(result.reconnectionTime, 3000, "cut at \(offset)")
        }
        let single = try await batches(ChunkSequence(singleBytes(of: eventSample)))
        XCTAssertEqual(single.batches.flatMap { $0 }, expectedSampleEvents)
        XCTAssertTrue(single.batches.allSatisfy { $0.count == 1 }, "one event per batch when bytes come one by one")
    }

    func testAnEventOfAResumedStreamCarriesTheLastEventID() async throws {
        let result = try await batches(ChunkSequence([bytes("data: a\n\nid: 10\ndata: b\n\n")]), lastEventID: "9")

        XCTAssertEqual(result.batches, [[ServerSentEvent(data: "a", id: "9"), ServerSentEvent(data: "b", id: "10")]])
        XCTAssertEqual(result.lastEventID, "10")
    }

    /// The batches of a `ResponseEvents` call its `onProgress` once a batch, with the values as of its last event,
    /// and once at the end: an app that saves its resume ID there keeps saving it when it moves to batches.
    func testBatchesOfAViewCallItsOnProgressOnceABatchAndAtTheEnd() async throws {
        let base = ChunkSequence([
            bytes("id: 1\ndata: a\n\nid: 2\ndata: b\n\n"), bytes("retry: 500\ndata: c\n\n"), bytes("id: 3\n\n"),
        ])
        let reported = Protected<[String]>([])
        let view = ResponseEvents(base, lastEventID: "0") { id, retry in
            reported.withLock { $0.append("\(id)/\(retry.map(String.init) ?? "-")") }
        }
        var iterator = view.batches.makeAsyncIterator()
        var handedOut: [[String]] = []
        while let batch = try await iterator.next() { handedOut.append(batch.map(\.data.string)) }

        XCTAssertEqual(handedOut, [["a", "b"], ["c"]])
        XCTAssertEqual(
            reported.withLock { $0 }, ["2/-", "2/500", "3/500"],
            "each batch, then the end once (with the ID a block without data set)")
        let afterEnd = try await iterator.next()
        XCTAssertNil(afterEnd)
        XCTAssertEqual(reported.withLock { $0.count }, 3, "the end is reported once")
    }

    /// With an error, the end is reported once, with the values as of the last batch handed out.
    func testBatchesOfAViewReportTheEndOnceAfterAnError() async throws {
        let base = ChunkSequence([bytes("id: 7\ndata: a\n\ndata: b")], failure: Boom(code: 5))
        let reported = Protected<[String]>([])
        var iterator = ResponseEvents(base) { id, _ in reported.withLock { $0.append(id) } }.batches
            .makeAsyncIterator()

        _ = try await iterator.next()
        do {
            _ = try await iterator.next()
            XCTFail("no error")
        } catch {
            XCTAssertEqual(error as? Boom, Boom(code: 5))
        }
        XCTAssertEqual(reported.withLock { $0 }, ["7", "7"])
    }

    func testBatchesDoNotReadAheadAndTrackTheLastEventID() async throws {
        let base = ChunkSequence([bytes("id: 1\ndata: a\n\nid: 2\ndata: b\n\n"), bytes("data: c"), bytes("\n\n")])
        var iterator = ResponseEventBatches(base).makeAsyncIterator()
        XCTAssertEqual(base.counter.pulls, 0)

        let first = try await iterator.next()
        XCTAssertEqual(first?.map(\.data.string), ["a", "b"])
        XCTAssertEqual(iterator.lastEventID, "2")
        XCTAssertEqual(base.counter.pulls, 1)
        let second = try await iterator.next()
        XCTAssertEqual(second?.map(\.data.string), ["c"])
        XCTAssertEqual(second?.first?.id, "2")
        XCTAssertEqual(base.counter.pulls, 3)
        let end = try await iterator.next()
        XCTAssertNil(end)
    }

    func testTheEventsBeforeADataLimitComeFirstThenTheError() async throws {
        let base = ChunkSequence([bytes("data: ok\n\ndata: 0123456789\n\ndata: lost\n\n")])
        var iterator = ResponseEventBatches(base, maximumDataLength: 8).makeAsyncIterator()

        let first = try await iterator.next()
        XCTAssertEqual(first?.map(\.data.string), ["ok"])
        do {
            _ = try await iterator.next()
            XCTFail("no error")
        } catch {
            XCTAssertEqual((error as? ConnectError)?.kind, .responseTooLarge)
        }
        let afterError = try await iterator.next()
        XCTAssertNil(afterError)
    }

    func testBaseErrorsPassThroughUnchanged() async throws {
        let base = ChunkSequence([bytes("data: a\n\ndata: b")], failure: Boom(code: 5))
        var iterator = ResponseEventBatches(base).makeAsyncIterator()

        let first = try await iterator.next()
        XCTAssertEqual(first?.count, 1)
        do {
            _ = try await iterator.next()
            XCTFail("no error")
        } catch {
            XCTAssertEqual(error as? Boom, Boom(code: 5))
        }
    }

    func testAnEventReadsAsBytesAndAsAServerSentEvent() async throws {
        let base = ChunkSequence([bytes("event: token\nid: 7\nretry: 250\ndata: hé\ndata: [DONE]\n\n")])
        var iterator = ResponseEventBatches(base).makeAsyncIterator()
        let next = try await iterator.next()
        let batch = try XCTUnwrap(next)

        let event = try XCTUnwrap(batch.first)
        XCTAssertEqual(event.event, "token")
        XCTAssertEqual(event.id, "7")
        XCTAssertEqual(event.retry, 250)
        XCTAssertEqual(event.data.string, "hé\n[DONE]")
        XCTAssertEqual(event.data.count, Array("hé\n[DONE]".utf8).count)
        XCTAssertFalse(event.data.elementsEqual("[DONE]".utf8))
        XCTAssertEqual(event.serverSentEvent, ServerSentEvent(event: "token", data: "hé\n[DONE]", id: "7", retry: 250))
        XCTAssertEqual(iterator.reconnectionTime, 250)
    }

    // MARK: The fast path: events found whole in a chunk point into it

    /// The events, last event ID and reconnection time `.events` (the `String` API) gives for `chunks`.
    private func stringEvents(
        _ chunks: [Data], maximumLineLength: Int = 1 << 20, maximumDataLength: Int = 16 << 20
    ) async -> (events: [ServerSentEvent], lastEventID: String, reconnectionTime: Int?, failed: Bool) {
        let view = ResponseEvents(
            ChunkSequence(chunks), maximumLineLength: maximumLineLength, maximumDataLength: maximumDataLength)
        var iterator = view.makeAsyncIterator()
        var events: [ServerSentEvent] = []
        do {
            while let event = try await iterator.next() { events.append(event) }
        } catch {
            return (events, iterator.lastEventID, iterator.reconnectionTime, true)
        }
        return (events, iterator.lastEventID, iterator.reconnectionTime, false)
    }

    /// The same from `.events.batches`.
    private func batchedEvents(
        _ chunks: [Data], maximumLineLength: Int = 1 << 20, maximumDataLength: Int = 16 << 20
    ) async -> (events: [ServerSentEvent], lastEventID: String, reconnectionTime: Int?, failed: Bool) {
        let view = ResponseEventBatches(
            ChunkSequence(chunks), maximumLineLength: maximumLineLength, maximumDataLength: maximumDataLength)
        var iterator = view.makeAsyncIterator()
        var events: [ServerSentEvent] = []
        do {
            while let batch = try await iterator.next() { events += batch.map(\.serverSentEvent) }
        } catch {
            return (events, iterator.lastEventID, iterator.reconnectionTime, true)
        }
        return (events, iterator.lastEventID, iterator.reconnectionTime, false)
    }

    /// Asserts that `.events.batches` gives what `.events` gives for `text` cut at every offset and at every pair
    /// of offsets, and what `.events` gives for it a byte at a time (too short a chunk for any event to lie whole
    /// in it: the general path alone).
    private func assertBatchesMatchTheStringAPI(
        _ text: String, maximumLineLength: Int = 1 << 20, maximumDataLength: Int = 16 << 20,
        file: StaticString = #filePath, line: UInt = #line
    ) async {
        let data = bytes(text)
        let reference = await stringEvents(
            singleBytes(of: data), maximumLineLength: maximumLineLength, maximumDataLength: maximumDataLength)
        var cuts: [[Int]] = [[]]
        for first in 0...data.count {
            cuts.append([first])
            for second in first...data.count { cuts.append([first, second]) }
        }
        for offsets in cuts {
            let pieces = chunks(of: data, at: offsets)
            let strings = await stringEvents(
                pieces, maximumLineLength: maximumLineLength, maximumDataLength: maximumDataLength)
            let batched = await batchedEvents(
                pieces, maximumLineLength: maximumLineLength, maximumDataLength: maximumDataLength)
            for (name, result) in [(".events", strings), (".events.batches", batched)] {
                XCTAssertEqual(result.events, reference.events, "\(name), cut at \(offsets)", file: file, line: line)
                XCTAssertEqual(result.failed, reference.failed, "\(name), cut at \(offsets)", file: file, line: line)
                guard !reference.failed else { continue }
                XCTAssertEqual(
                    result.lastEventID, reference.lastEventID, "\(name), cut at \(offsets)", file: file, line: line)
                XCTAssertEqual(
                    result.reconnectionTime, reference.reconnectionTime, "\(name), cut at \(offsets)", file: file,
                    line: line)
            }
        }
    }

    func testOneLineEventsWhoseBlankLineStartsTheNextChunk() async {
        await assertBatchesMatchTheStringAPI("data: a\n\ndata:b\n\ndata: \n\n")
    }

    func testOneLineEventsEndedByCRLFOrLoneCRSplitAnywhere() async {
        await assertBatchesMatchTheStringAPI("data: a\r\n\r\ndata: b\r\rdata: c\n\r\ndata: d\r\n\n")
    }

    func testWholeEventsAmongMultiLineCommentedAndFieldedOnes() async {
        await assertBatchesMatchTheStringAPI(
            "data: one\n\n: note\ndata: two\n\nevent: e\ndata: 3\n\ndata: x\ndata: y\n\nid: 7\ndata: 4\n\n"
                + "retry: 5\ndata: 5\n\ndata: 6\n\ndata\n\ndata:\n\ndata:  sp\n\nid: a\u{0}b\nretry: 1x\ndata: 7\n\n")
    }

    func testWholeEventsAfterBlocksThatOnlySetTheIDOrTheRetry() async {
        await assertBatchesMatchTheStringAPI("data: a\n\nid: 5\n\ndata: b\n\nretry: 9\n\ndata: c\n\nid\n\ndata: d\n\n")
    }

    func testAByteOrderMarkBeforeAWholeEvent() async {
        await assertBatchesMatchTheStringAPI("\u{FEFF}data: bom\n\ndata: z\r\n\n")
        await assertBatchesMatchTheStringAPI("\u{FEFF}\u{FEFF}data: z\n\ndata: z\n\n")
    }

    func testWholeEventsAtTheLineAndDataLimits() async {
        // "data: 12345" is 11 bytes; its data needs 6 (an LF counted after each data line).
        for limit in 10...11 {
            await assertBatchesMatchTheStringAPI("data: 1\n\ndata: 12345\n\ndata: 2\n\n", maximumLineLength: limit)
        }
        for limit in 5...6 {
            await assertBatchesMatchTheStringAPI("data: 1\n\ndata: 12345\n\ndata: 2\n\n", maximumDataLength: limit)
        }
    }

    func testAWholeEventPointsIntoTheChunkAndOthersIntoTheGatheredBuffer() async throws {
        // "data: a" ends the first chunk: it is gathered; "b" and "d" lie whole in the second; "c" has two lines.
        let base = ChunkSequence([bytes("data: a"), bytes("\n\ndata: b\n\ndata: c\ndata: c\n\ndata: d\r\n\r\n")])
        var iterator = ResponseEventBatches(base).makeAsyncIterator()
        let next = try await iterator.next()
        let batch = try XCTUnwrap(next)

        XCTAssertEqual(batch.map(\.data.string), ["a", "b", "c\nc", "d"])
        XCTAssertEqual(batch.entries.map(\.isInChunk), [false, true, false, true])
        XCTAssertEqual(batch.map { $0.data.storage === batch.chunk }, [false, true, false, true])
        XCTAssertEqual(batch.gathered.data, bytes("ac\nc"))
    }

    func testABatchOfWholeEventsGathersNothing() async throws {
        let chunk = bytes("xxdata: a\n\ndata: b\n\n").dropFirst(2)
        var iterator = ResponseEventBatches(ChunkSequence([chunk])).makeAsyncIterator()
        let next = try await iterator.next()
        let batch = try XCTUnwrap(next)

        XCTAssertEqual(batch.map(\.data.string), ["a", "b"])
        XCTAssert(batch.gathered === LineStorage.empty)
    }

    func testTheEventsViewHasBatchesThatKeepItsSettings() async throws {
        requireSendable(ResponseEvents(stream([])).batches)
        var events: [ServerSentEvent] = []
        for try await batch in ResponseEvents(stream([bytes("data: a\n"), bytes("\n")]), lastEventID: "4").batches {
            requireSendable(batch)
            events += batch.map(\.serverSentEvent)
        }
        XCTAssertEqual(events, [ServerSentEvent(data: "a", id: "4")])
    }
}
