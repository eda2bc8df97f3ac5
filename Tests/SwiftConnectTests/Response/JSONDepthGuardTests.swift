import Dispatch
import Foundation
import XCTest

@testable import SwiftConnect

/// `JSONDepth`, the single-pass nesting scanner, and what it protects: debug output of deeply nested JSON on a
/// small thread stack, and the decoding error for JSON deeper than Foundation accepts.
final class JSONDepthGuardTests: XCTestCase {
    /// Apple's dispatch worker threads have 512 KiB stacks; responses are decoded and logged on them.
    private static let workerStackSize = 512 * 1_024

    private static func exceeds(_ text: String, _ limit: Int) -> Bool {
        JSONDepth.exceeds(Data(text.utf8), limit: limit)
    }

    /// `{"a":{"a":…1…}}`, `depth` objects deep.
    private static func nestedObjects(depth: Int) -> String {
        String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
    }

    /// `[[[…]]]`, `depth` arrays deep.
    private static func nestedArrays(depth: Int) -> String {
        String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    }

    /// Runs `body` on a thread with a stack the size of an Apple dispatch worker's, and returns its result.
    private func onWorkerSizedStack<Value: Sendable>(_ body: @escaping @Sendable () -> Value) -> Value? {
        let result = Protected<Value?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let value = body()
            result.withLock { $0 = value }
            done.signal()
        }
        thread.stackSize = Self.workerStackSize
        thread.start()
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success, "the work did not finish")
        return result.snapshot
    }

    // MARK: - Counting

    func testFlatAndEmptyInputsNeverExceed() {
        XCTAssertFalse(Self.exceeds("", 0))
        XCTAssertFalse(Self.exceeds("42", 0))
        XCTAssertFalse(Self.exceeds(#""text""#, 0))
        XCTAssertTrue(Self.exceeds("[]", 0))
        XCTAssertFalse(Self.exceeds("[]", 1))
    }

    func testTheLimitItselfIsAllowedAndOneMoreIsNot() {
        for depth in [1, 2, 128, 512] {
            XCTAssertFalse(Self.exceeds(Self.nestedArrays(depth: depth), depth), "arrays \(depth)")
            XCTAssertTrue(Self.exceeds(Self.nestedArrays(depth: depth + 1), depth), "arrays \(depth + 1)")
            XCTAssertFalse(Self.exceeds(Self.nestedObjects(depth: depth), depth), "objects \(depth)")
            XCTAssertTrue(Self.exceeds(Self.nestedObjects(depth: depth + 1), depth), "objects \(depth + 1)")
        }
        XCTAssertTrue(Self.exceeds(#"{"a":[{"b":[1]}]}"#, 3), "arrays and objects count alike")
        XCTAssertFalse(Self.exceeds(#"{"a":[{"b":[1]}]}"#, 4))
    }

    func testSiblingsDoNotAddUp() {
        XCTAssertFalse(Self.exceeds(#"[[1],[2],[3],{"a":[4]}]"#, 3))
        XCTAssertFalse(Self.exceeds(String(repeating: "[[]]", count: 10_000), 2))
    }

    func testBracketsInsideStringsDoNotCount() {
        XCTAssertFalse(Self.exceeds(#"["[[[[{{{{"]"#, 1))
        XCTAssertFalse(Self.exceeds(#"{"[[[[": "}}}}{{{{"}"#, 1))
    }

    func testEscapedQuotesKeepTheStringOpen() {
        // \" does not end the string: the brackets after it are still text
        XCTAssertFalse(Self.exceeds(#"["a\"[[[["]"#, 1))
        // \\ is a whole escape: the quote after it ends the string, and the brackets after that count
        XCTAssertTrue(Self.exceeds(#"["a\\"[[[["]"#, 1))
        // \u escapes and other escapes are skipped like any string content
        XCTAssertFalse(Self.exceeds(#"["\u005B\n\t\/[["]"#, 1))
    }

    func testMultiByteCharactersAreNeverBrackets() {
        XCTAssertFalse(Self.exceeds(#"["é€😀", {"ключ": "值"}]"#, 2))
        XCTAssertFalse(JSONDepth.exceeds(Data([0x5B, 0xE2, 0x80, 0x9B, 0xF0, 0x9F, 0x98, 0x80, 0x5D]), limit: 1))
    }

    func testStrayClosingBracketsNeverGoBelowZero() {
        // Without the floor, ten closers would let ten more openers pass unseen
        XCTAssertTrue(Self.exceeds(String(repeating: "]", count: 10) + Self.nestedArrays(depth: 3), 2))
        XCTAssertFalse(Self.exceeds("]]]}}}[[", 2))
    }

    func testMalformedInputIsMeasuredAsFarAsItGoes() {
        XCTAssertTrue(Self.exceeds(String(repeating: "[", count: 600), 512), "never closed")
        XCTAssertFalse(Self.exceeds(#"["unterminated [[[[[[["#, 1), "an unterminated string hides the rest")
        XCTAssertFalse(JSONDepth.exceeds(Data([0xFF, 0xFE, 0x00, 0x5B, 0x5D]), limit: 1), "binary")
    }

    /// UTF-16 and UTF-32 JSON, which Foundation parses, is measured as its characters: `∀` (U+2200) is `00 22` in
    /// UTF-16LE, a quote to a byte scan, which then never left the "string" and let 500 levels through.
    func testUTF16AndUTF32TextIsMeasuredAsItsCharacters() {
        let deep = "[\"∀\"," + Self.nestedArrays(depth: 500) + "]"
        for encoding: String.Encoding in [.utf16LittleEndian, .utf16BigEndian, .utf32LittleEndian, .utf16, .utf32] {
            let data = deep.data(using: encoding)!
            XCTAssertTrue(JSONDepth.exceeds(data, limit: 128), "\(encoding)")
            XCTAssertFalse(JSONDepth.exceeds(#"["∀", [1]]"#.data(using: encoding)!, limit: 2), "\(encoding)")
        }
    }

    func testAMillionLevelsAreMeasuredWithoutRecursion() {
        let deep = Data(Self.nestedArrays(depth: 1_000_000).utf8)
        let result = onWorkerSizedStack {
            (JSONDepth.exceeds(deep, limit: 512), JSONDepth.exceeds(deep, limit: 1_000_000))
        }
        XCTAssertEqual(result?.0, true)
        XCTAssertEqual(result?.1, false)
    }

    // MARK: - Debug output

    func testDebugOutputOfDeepJSONDoesNotOverflowAWorkerThreadStack() {
        // Given 400 levels: accepted by Foundation's parser, but re-serialising it overflowed a 512 KiB stack
        let deep = Data(Self.nestedObjects(depth: 400).utf8)

        // When
        let texts = onWorkerSizedStack {
            [
                Redaction.bodyText(deep, contentType: "application/json", redacting: true, pretty: true),
                Redaction.bodyText(deep, contentType: "application/json", redacting: false, pretty: true),
            ]
        }

        // Then: withheld when redacting (its secrets cannot be found), as it came otherwise
        XCTAssertEqual(
            texts?.first, "<\(deep.count) bytes nested deeper than 128 levels, not shown: secrets stay hidden>")
        XCTAssertEqual(texts?.last, String(decoding: deep, as: UTF8.self))
    }

    func testDebugOutputStillPrettyPrintsAndRedactsJSONAtTheLimit() {
        // Given JSON exactly as deep as the debug output accepts, with a secret at the bottom
        let depth = Redaction.maximumJSONDepth
        let json =
            String(repeating: #"{"a":"#, count: depth - 1) + #"{"password":"hunter2"}"#
            + String(repeating: "}", count: depth - 1)

        // When, on a worker-sized stack
        let text = onWorkerSizedStack {
            Redaction.bodyText(Data(json.utf8), contentType: "application/json", redacting: true, pretty: true)
        }

        // Then
        XCTAssertEqual(text?.contains(#""password" : "<redacted>""#), true)
        XCTAssertEqual(text?.contains("hunter2"), false)
        XCTAssertEqual(text?.contains("\n"), true, "pretty-printed")
    }

    // MARK: - Decoding

    func testJSONDeeperThanFoundationAcceptsSaysSoWhenDecodingFails() throws {
        // Given
        let atLimit = Data(Self.nestedArrays(depth: JSONDepth.foundationLimit).utf8)
        let tooDeep = Data(Self.nestedArrays(depth: JSONDepth.foundationLimit + 1).utf8)

        // When / Then: 512 levels still decode
        XCTAssertNoThrow(try decodeBody(atLimit, as: EmptyResponse.self, with: JSONDecoder()))

        // When / Then: 513 levels fail with a decoding error that names the cause
        XCTAssertThrowsError(try decodeBody(tooDeep, as: EmptyResponse.self, with: JSONDecoder())) { error in
            let connectError = error as? ConnectError
            XCTAssertEqual(connectError?.kind, .decoding)
            XCTAssertEqual(connectError?.body, tooDeep)
            XCTAssertEqual(connectError?.message.contains("nested deeper than 512 levels"), true)
        }
    }

    func testOtherDecodingFailuresKeepTheirMessage() {
        XCTAssertThrowsError(try decodeBody(Data("[1,".utf8), as: [Int].self, with: JSONDecoder())) { error in
            let connectError = error as? ConnectError
            XCTAssertEqual(connectError?.kind, .decoding)
            XCTAssertEqual(connectError?.message.contains("nested deeper"), false)
        }
    }
}
