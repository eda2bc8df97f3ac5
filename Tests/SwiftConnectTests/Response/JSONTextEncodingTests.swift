import Foundation
import XCTest

@testable import SwiftConnect

/// The one reading of a JSON body's encoding that decoding (a blank body) and the error handler (a message) share:
/// `JSONSyntax.utf8(_:)`, as `JSONDecoder` tells UTF-8, UTF-16 and UTF-32 apart.
final class JSONTextEncodingTests: XCTestCase {
    func testEveryEncodingOfTheSameJSONReadsAsTheSameUTF8() throws {
        // Given
        let json = #"{"message":"bad ✓"}"#
        let encodings: [(String.Encoding, mark: [UInt8])] = [
            (.utf8, []), (.utf8, [0xEF, 0xBB, 0xBF]),
            (.utf16BigEndian, []), (.utf16BigEndian, [0xFE, 0xFF]),
            (.utf16LittleEndian, []), (.utf16LittleEndian, [0xFF, 0xFE]),
            (.utf32BigEndian, []), (.utf32BigEndian, [0x00, 0x00, 0xFE, 0xFF]),
            (.utf32LittleEndian, []), (.utf32LittleEndian, [0xFF, 0xFE, 0x00, 0x00]),
        ]
        for (encoding, mark) in encodings {
            for text in [json, "\n" + json, "\r\n  " + json] {
                let body = Data(mark) + (try XCTUnwrap(text.data(using: encoding)))
                // When
                let utf8 = JSONSyntax.utf8(body)
                // Then: the text itself, its mark dropped
                XCTAssertEqual(utf8.map { String(decoding: $0, as: UTF8.self) }, text, "\(encoding) \(mark)")
            }
        }
    }

    func testShortAndBrokenBodies() {
        // A two-byte UTF-16 character, without a mark: told by its zero byte
        XCTAssertEqual(JSONSyntax.utf8(Data([0x0A, 0x00])), Data("\n".utf8))
        XCTAssertEqual(JSONSyntax.utf8(Data([0x00, 0x37])), Data("7".utf8))
        // A lone mark: nothing
        XCTAssertEqual(JSONSyntax.utf8(Data([0xFF, 0xFE])), Data())
        XCTAssertEqual(JSONSyntax.utf8(Data([0x00, 0x00, 0xFE, 0xFF])), Data())
        // Bytes that are not in the encoding they say: no text, not a wrong one
        XCTAssertNil(JSONSyntax.utf8(Data([0xFF, 0xFE, 0x20])))  // half a UTF-16 character
        XCTAssertNil(JSONSyntax.utf8(Data([0x00, 0x20, 0x00])))
        XCTAssertNil(JSONSyntax.utf8(Data([0xFE, 0xFF, 0xD8, 0x00])))  // a lone high surrogate
        // UTF-8 (and bytes in no Unicode encoding) is handed on as it is, for the parser to judge
        XCTAssertEqual(JSONSyntax.utf8(Data([0x7B, 0x7D])), Data([0x7B, 0x7D]))
        XCTAssertEqual(JSONSyntax.utf8(Data([0xE9])), Data([0xE9]))
    }

    func testBlankIsWhiteSpaceOnceRead() {
        XCTAssertTrue(JSONSyntax.isBlank(Data()))
        XCTAssertTrue(JSONSyntax.isBlank(Data(" \r\n\t".utf8)))
        XCTAssertTrue(JSONSyntax.isBlank(Data([0xEF, 0xBB, 0xBF, 0x0A])))
        XCTAssertTrue(JSONSyntax.isBlank(Data([0x0A, 0x00])))
        XCTAssertTrue(JSONSyntax.isBlank(Data([0x20, 0x00, 0x00, 0x00])))
        XCTAssertFalse(JSONSyntax.isBlank(Data([0x0A, 0x00, 0x00, 0x0A])))  // UTF-16LE line feed, NUL: not blank
        XCTAssertFalse(JSONSyntax.isBlank(Data([0xFF, 0xFE, 0x20])))
        XCTAssertFalse(JSONSyntax.isBlank(Data(" x".utf8)))
    }
}
