import Foundation
import XCTest

@testable import SwiftConnect

/// A reference reading of the WHATWG algorithm on a whole stream.
private func referenceEvents(_ input: [UInt8]) -> (events: [ServerSentEvent], lastEventID: String, retry: Int?) {
    var bytes = input[...]
    if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
    // Lines: CRLF, LF, CR; an unterminated tail is dropped.
    var lines: [[UInt8]] = []
    var current: [UInt8] = []
    var index = bytes.startIndex
    while index < bytes.endIndex {
        let byte = bytes[index]
        if byte == 0x0D {
            lines.append(current)
            current = []
            if index + 1 < bytes.endIndex, bytes[index + 1] == 0x0A { index += 1 }
        } else if byte == 0x0A {
            lines.append(current)
            current = []
        } else {
            current.append(byte)
        }
        index += 1
    }
    var events: [ServerSentEvent] = []
    var data: [UInt8] = []
    var type = ""
    var idBuffer: String?
    var lastEventID = ""
    var reconnection: Int?
    var blockRetry: Int?
    for line in lines {
        if line.isEmpty {
            lastEventID = idBuffer ?? ""
            if !data.isEmpty {
                data.removeLast()
                events.append(
                    ServerSentEvent(
                        event: type.isEmpty ? "message" : type, data: String(decoding: data, as: UTF8.self),
                        id: idBuffer, retry: blockRetry))
            }
            data = []
            type = ""
            blockRetry = nil
            continue
        }
        if line.first == 0x3A { continue }
        var name = line[...]
        var value: ArraySlice<UInt8> = []
        if let colon = line.firstIndex(of: 0x3A) {
            name = line[..<colon]
            value = line[(colon + 1)...]
            if value.first == 0x20 { value = value.dropFirst() }
        }
        switch String(decoding: name, as: UTF8.self) {
        case "data":
            data += value
            data.append(0x0A)
        case "event":
            type = String(decoding: value, as: UTF8.self)
        case "id":
            if !value.contains(0) { idBuffer = String(decoding: value, as: UTF8.self) }
        case "retry":
            if !value.isEmpty, value.allSatisfy({ (0x30...0x39).contains($0) }) {
                let number = Int(String(decoding: value, as: UTF8.self)) ?? Int.max
                reconnection = number
                blockRetry = number
            }
        default:
            break
        }
    }
    return (events, lastEventID, reconnection)
}

private struct Random: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

private let tokens: [[UInt8]] =
    [
        "data", "data:", "data: ", ":", " ", "id", "id:", "id: ", "retry:", "retry: ", "event:", "event: ", "x", "hi",
        "12", "9999999999999999999999", "data: ab\n", "data: x\r\n\r\n", "data:y\r\r", "id: 7\n", "id\n", "retry: 50\n",
        "retry: 5x\n", "event: e\n", ": c\n", "data: q\n\n", "data\n\n", "id: \0a\n", "\r", "\n", "\r\n", "\n\n",
        "\r\r", "é", "\0", "dat", "a", "ping",
    ].map { Array($0.utf8) } + [[0xEF, 0xBB, 0xBF], [0xEF], [0xBB, 0xBF], [0xFF], [0xE2, 0x82]]

private struct ReferenceChunks: AsyncSequence, Sendable {
    typealias Element = Data
    let chunks: [Data]
    func makeAsyncIterator() -> Iterator { Iterator(chunks: chunks) }
    struct Iterator: AsyncIteratorProtocol {
        var chunks: [Data]
        var index = 0
        mutating func next() async throws -> Data? {
            guard index < chunks.count else { return nil }
            defer { index += 1 }
            return chunks[index]
        }
    }
}

/// The stream parsers against plain readings of their rules, on thousands of random inputs cut into chunks at random
/// places (seeded: every run sees the same inputs). The server-sent events parser (`ServerSentEventParser`, through
/// `ResponseEvents` and `ResponseEventBatches`, whose one-line events take a path of their own) is compared with the
/// WHATWG algorithm ("Interpreting an event stream") read on the whole stream at once: a byte order mark, CR, LF and
/// CRLF line ends, comments, fields without a colon, `retry` with junk, an `id` with NUL, empty `data` lines and an
/// event left unterminated at the end, with its line and data limits too. The line views (`ResponseLines`,
/// `ResponseLineBatches`) are compared with splitting at LF and dropping the CR of each CRLF, multi-byte characters
/// cut anywhere, and the line limit.
final class StreamParsingReferenceTests: XCTestCase {
    func testEventsAreTheAlgorithmsWhereverTheChunksAreCut() async throws {
        var random = Random(state: 42)
        var total = 0
        for round in 0..<8000 {
            var input: [UInt8] = []
            if Bool.random(using: &random) { input += [0xEF, 0xBB, 0xBF] }
            for _ in 0..<Int.random(in: 0...40, using: &random) {
                input += tokens.randomElement(using: &random)!
            }
            let expected = referenceEvents(input)
            total += expected.events.count
            var cuts = Set<Int>()
            for _ in 0..<Int.random(in: 0...6, using: &random) where !input.isEmpty {
                cuts.insert(Int.random(in: 0...input.count, using: &random))
            }
            let offsets = cuts.sorted()
            let chunks = Self.chunks(of: input, cutAt: offsets)
            var parser = ServerSentEventParser()
            var events: [ServerSentEvent] = []
            for chunk in chunks { events += try parser.append(chunk) }
            _ = parser.finish()
            let text = String(decoding: input, as: UTF8.self).debugDescription
            XCTAssertEqual(events, expected.events, "round \(round) \(text) cut at \(offsets)")
            XCTAssertEqual(parser.lastEventID, expected.lastEventID, "round \(round) \(text)")
            XCTAssertEqual(parser.reconnectionTime, expected.retry, "round \(round) \(text)")

            var batched: [ServerSentEvent] = []
            var iterator = ResponseEventBatches(ReferenceChunks(chunks: chunks)).makeAsyncIterator()
            while let batch = try await iterator.next() { batched += batch.map(\.serverSentEvent) }
            XCTAssertEqual(batched, expected.events, "batches: round \(round) \(text) cut at \(offsets)")
            XCTAssertEqual(iterator.lastEventID, expected.lastEventID, "batches round \(round) \(text)")
            XCTAssertEqual(iterator.reconnectionTime, expected.retry, "batches round \(round) \(text)")

            var viewed: [ServerSentEvent] = []
            var viewIterator = ResponseEvents(ReferenceChunks(chunks: chunks)).makeAsyncIterator()
            while let event = try await viewIterator.next() { viewed.append(event) }
            XCTAssertEqual(viewed, expected.events, "view: round \(round) \(text) cut at \(offsets)")
            XCTAssertEqual(viewIterator.lastEventID, expected.lastEventID, "view round \(round) \(text)")
            if events != expected.events || batched != expected.events { return }
        }
        XCTAssertGreaterThan(total, 5000, "the inputs dispatch events")
    }

    func testLinesAreSplitAtLFWhereverTheChunksAreCut() async throws {
        var random = Random(state: 7)
        let lineTokens: [[UInt8]] =
            ["a", "\r", "\n", "\r\n", "é", "bc"].map { Array($0.utf8) } + [[0xE2], [0x82, 0xAC]]
        for round in 0..<8000 {
            var input: [UInt8] = []
            for _ in 0..<Int.random(in: 0...30, using: &random) { input += lineTokens.randomElement(using: &random)! }
            // Reference: split at LF, drop a CR before each LF, last line only if non-empty.
            var expected: [String] = []
            var current: [UInt8] = []
            for byte in input {
                if byte == 0x0A {
                    if current.last == 0x0D { current.removeLast() }
                    expected.append(String(decoding: current, as: UTF8.self))
                    current = []
                } else {
                    current.append(byte)
                }
            }
            if !current.isEmpty { expected.append(String(decoding: current, as: UTF8.self)) }
            var cuts = Set<Int>()
            for _ in 0..<Int.random(in: 0...6, using: &random) where !input.isEmpty {
                cuts.insert(Int.random(in: 0...input.count, using: &random))
            }
            let chunks = Self.chunks(of: input, cutAt: cuts.sorted())
            var lines: [String] = []
            for try await line in ResponseLines(ReferenceChunks(chunks: chunks)) { lines.append(line) }
            XCTAssertEqual(lines, expected, "round \(round) \(input) cut \(cuts.sorted())")
            var batched: [String] = []
            for try await batch in ResponseLineBatches(ReferenceChunks(chunks: chunks)) {
                batched += batch.map(\.string)
            }
            XCTAssertEqual(batched, expected, "batches round \(round) \(input) cut \(cuts.sorted())")
            if lines != expected || batched != expected { return }
        }
    }
}

/// Reference with limits: the events before the first line too long or data too large, and whether it failed.
private func referenceLimited(_ input: [UInt8], line lineLimit: Int, data dataLimit: Int) -> (
    events: [ServerSentEvent], failed: Bool
) {
    var bytes = input[...]
    if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
    var lines: [[UInt8]] = []
    var current: [UInt8] = []
    var index = bytes.startIndex
    var tooLongTail = false
    while index < bytes.endIndex {
        let byte = bytes[index]
        if byte == 0x0D {
            lines.append(current)
            current = []
            if index + 1 < bytes.endIndex, bytes[index + 1] == 0x0A { index += 1 }
        } else if byte == 0x0A {
            lines.append(current)
            current = []
        } else {
            current.append(byte)
        }
        index += 1
    }
    if current.count > lineLimit { tooLongTail = true }
    var events: [ServerSentEvent] = []
    var data: [UInt8] = []
    var type = ""
    var idBuffer: String?
    var blockRetry: Int?
    for line in lines {
        if line.count > lineLimit { return (events, true) }
        if line.isEmpty {
            if !data.isEmpty {
                data.removeLast()
                events.append(
                    ServerSentEvent(
                        event: type.isEmpty ? "message" : type, data: String(decoding: data, as: UTF8.self),
                        id: idBuffer, retry: blockRetry))
            }
            data = []
            type = ""
            blockRetry = nil
            continue
        }
        if line.first == 0x3A { continue }
        var name = line[...]
        var value: ArraySlice<UInt8> = []
        if let colon = line.firstIndex(of: 0x3A) {
            name = line[..<colon]
            value = line[(colon + 1)...]
            if value.first == 0x20 { value = value.dropFirst() }
        }
        switch String(decoding: name, as: UTF8.self) {
        case "data":
            if data.count + value.count + 1 > dataLimit { return (events, true) }
            data += value
            data.append(0x0A)
        case "event":
            type = String(decoding: value, as: UTF8.self)
        case "id":
            if !value.contains(0) { idBuffer = String(decoding: value, as: UTF8.self) }
        case "retry":
            if !value.isEmpty, value.allSatisfy({ (0x30...0x39).contains($0) }) {
                blockRetry = Int(String(decoding: value, as: UTF8.self)) ?? Int.max
            }
        default:
            break
        }
    }
    return (events, tooLongTail)
}

extension StreamParsingReferenceTests {
    func testTheEventLimitsFailWhereTheAlgorithmMeetsThem() async throws {
        var random = Random(state: 99)
        for round in 0..<8000 {
            var input: [UInt8] = []
            if Bool.random(using: &random) { input += [0xEF, 0xBB, 0xBF] }
            for _ in 0..<Int.random(in: 0...30, using: &random) {
                input += tokens.randomElement(using: &random)!
            }
            let lineLimit = Int.random(in: 0...14, using: &random)
            let dataLimit = Int.random(in: 0...14, using: &random)
            let expected = referenceLimited(input, line: lineLimit, data: dataLimit)
            var cuts = Set<Int>()
            for _ in 0..<Int.random(in: 0...6, using: &random) where !input.isEmpty {
                cuts.insert(Int.random(in: 0...input.count, using: &random))
            }
            let chunks = Self.chunks(of: input, cutAt: cuts.sorted())
            let text = String(decoding: input, as: UTF8.self).debugDescription
            var viewed: [ServerSentEvent] = []
            var failed = false
            do {
                for try await event in ResponseEvents(
                    ReferenceChunks(chunks: chunks), maximumLineLength: lineLimit, maximumDataLength: dataLimit)
                {
                    viewed.append(event)
                }
            } catch {
                failed = true
            }
            XCTAssertEqual(
                viewed, expected.events, "round \(round) \(text) cut \(cuts.sorted()) \(lineLimit)/\(dataLimit)")
            XCTAssertEqual(
                failed, expected.failed, "round \(round) \(text) cut \(cuts.sorted()) \(lineLimit)/\(dataLimit)")
            var batched: [ServerSentEvent] = []
            failed = false
            do {
                for try await batch in ResponseEventBatches(
                    ReferenceChunks(chunks: chunks), maximumLineLength: lineLimit, maximumDataLength: dataLimit)
                {
                    batched += batch.map(\.serverSentEvent)
                }
            } catch {
                failed = true
            }
            XCTAssertEqual(
                batched, expected.events, "batch round \(round) \(text) cut \(cuts.sorted()) \(lineLimit)/\(dataLimit)")
            XCTAssertEqual(
                failed, expected.failed, "batch round \(round) \(text) cut \(cuts.sorted()) \(lineLimit)/\(dataLimit)")
            if viewed != expected.events || batched != expected.events || failed != expected.failed { return }
        }
    }
}

extension StreamParsingReferenceTests {
    func testTheLineLimitFailsWhereSplittingMeetsIt() async throws {
        var random = Random(state: 5)
        let lineTokens: [[UInt8]] = ["a", "\r", "\n", "\r\n", "é", "bcd"].map { Array($0.utf8) }
        for round in 0..<8000 {
            var input: [UInt8] = []
            for _ in 0..<Int.random(in: 0...20, using: &random) { input += lineTokens.randomElement(using: &random)! }
            let limit = Int.random(in: 0...8, using: &random)
            var expected: [String] = []
            var expectFail = false
            var current: [UInt8] = []
            for byte in input {
                if byte == 0x0A {
                    if current.last == 0x0D { current.removeLast() }
                    if current.count > limit {
                        expectFail = true
                        break
                    }
                    expected.append(String(decoding: current, as: UTF8.self))
                    current = []
                } else {
                    current.append(byte)
                }
            }
            if !expectFail, !current.isEmpty {
                if current.count - (current.last == 0x0D ? 1 : 0) > limit {
                    expectFail = true
                } else {
                    expected.append(String(decoding: current, as: UTF8.self))
                }
            }
            var cuts = Set<Int>()
            for _ in 0..<Int.random(in: 0...6, using: &random) where !input.isEmpty {
                cuts.insert(Int.random(in: 0...input.count, using: &random))
            }
            let chunks = Self.chunks(of: input, cutAt: cuts.sorted())
            var lines: [String] = []
            var failed = false
            do {
                for try await line in ResponseLines(ReferenceChunks(chunks: chunks), maximumLineLength: limit) {
                    lines.append(line)
                }
            } catch { failed = true }
            var batched: [String] = []
            var batchFailed = false
            do {
                for try await batch in ResponseLineBatches(ReferenceChunks(chunks: chunks), maximumLineLength: limit) {
                    batched += batch.map(\.string)
                }
            } catch { batchFailed = true }
            let message =
                "round \(round) \(String(decoding: input, as: UTF8.self).debugDescription) cut \(cuts.sorted()) limit \(limit)"
            XCTAssertEqual(lines, expected, message)
            XCTAssertEqual(failed, expectFail, message)
            XCTAssertEqual(batched, expected, "batch " + message)
            XCTAssertEqual(batchFailed, expectFail, "batch " + message)
            if lines != expected || failed != expectFail || batched != expected || batchFailed != expectFail { return }
        }
    }
}

/// One stream with every rule in it, cut at every place and every pair of places, and in single bytes: the views
/// and their batches give what the parser gives for the stream in one chunk, with the same last event ID and
/// reconnection time, for a fresh stream and a resumed one (whose events without an `id` carry the ID it resumes
/// from).
extension StreamParsingReferenceTests {
    private static let trickyEvents: [UInt8] =
        [0xEF, 0xBB, 0xBF]
        + Array(
            (": hi\r\nretry: 1x\rretry: 250\nid: 1\0\ndata\ndata:  two\r\n\r\nevent: é\rdata:x\r\rid\ndata: y\n\n"
                + "id: 9\n\ndata: a\r\n\r\ndata: b\r\r\ndata: c\n\rdata: tail").utf8)

    private static let trickyLines = Array("a\r\nb\rc\n\r\n\néx\r\r\ny\r".utf8)

    /// Every way to cut `count` bytes in at most three chunks, and the cut into single bytes.
    private static func everyCut(of count: Int) -> [[Int]] {
        var cuts: [[Int]] = [[]]
        for first in 0...count {
            cuts.append([first])
            for second in first...count { cuts.append([first, second]) }
        }
        cuts.append(Array(0...count))
        return cuts
    }

    private static func chunks(of bytes: [UInt8], cutAt offsets: [Int]) -> [Data] {
        let whole = Data(bytes)
        var chunks: [Data] = []
        var start = 0
        for offset in offsets {
            chunks.append(whole[start..<offset])
            start = offset
        }
        chunks.append(whole[start...])
        return chunks
    }

    func testEventsAndTheirBatchesAreTheSameAtEveryCutOfOneStream() async throws {
        let input = Self.trickyEvents
        for resumedFrom in [nil, "7"] as [String?] {
            var whole = ServerSentEventParser(lastEventID: resumedFrom)
            let expected = try whole.append(Data(input))
            _ = whole.finish()
            XCTAssertEqual(expected.count, 6)
            for offsets in Self.everyCut(of: input.count) {
                let chunks = ReferenceChunks(chunks: Self.chunks(of: input, cutAt: offsets))
                let cut = "resumed from \(resumedFrom ?? "nothing"), cut at \(offsets)"
                var viewed: [ServerSentEvent] = []
                var view = ResponseEvents(chunks, lastEventID: resumedFrom).makeAsyncIterator()
                while let event = try await view.next() { viewed.append(event) }
                XCTAssertEqual(viewed, expected, cut)
                XCTAssertEqual(view.lastEventID, whole.lastEventID, cut)
                XCTAssertEqual(view.reconnectionTime, whole.reconnectionTime, cut)
                var batched: [ServerSentEvent] = []
                var batches = ResponseEventBatches(chunks, lastEventID: resumedFrom).makeAsyncIterator()
                while let batch = try await batches.next() {
                    batched += batch.map(\.serverSentEvent)
                    XCTAssertEqual(batches.lastEventID, batched.last?.id ?? "", "after a batch, " + cut)
                }
                XCTAssertEqual(batched, expected, cut)
                XCTAssertEqual(batches.lastEventID, whole.lastEventID, cut)
                XCTAssertEqual(batches.reconnectionTime, whole.reconnectionTime, cut)
                if viewed != expected || batched != expected { return }
            }
        }
    }

    func testLinesAndTheirBatchesAreTheSameAtEveryCutOfOneStream() async throws {
        let input = Self.trickyLines
        let expected = ["a", "b\rc", "", "", "éx\r", "y\r"]
        for offsets in Self.everyCut(of: input.count) {
            let chunks = ReferenceChunks(chunks: Self.chunks(of: input, cutAt: offsets))
            var lines: [String] = []
            for try await line in ResponseLines(chunks) { lines.append(line) }
            var batched: [String] = []
            for try await batch in ResponseLineBatches(chunks) { batched += batch.map(\.string) }
            XCTAssertEqual(lines, expected, "cut at \(offsets)")
            XCTAssertEqual(batched, expected, "cut at \(offsets)")
            if lines != expected || batched != expected { return }
        }
    }
}
