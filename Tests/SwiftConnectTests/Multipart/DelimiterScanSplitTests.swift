import Foundation
import XCTest

@testable import SwiftConnect

/// The boundary check of a streamed multipart part (`DelimiterScan`) finds a delimiter in the content whatever
/// pieces the content is read in: whole, a byte at a time, or cut in two or three anywhere, a delimiter split between
/// pieces included.
final class DelimiterScanSplitTests: XCTestCase {
    /// Whether a scan fed `pieces` in order finds a delimiter of `boundary`.
    private static func finds(_ pieces: [Data], boundary: String) -> Bool {
        var scan = DelimiterScan(boundary: boundary)
        return pieces.contains { scan.found(in: $0) }
    }

    func testADelimiterIsFoundWhateverThePieces() {
        let boundary = "b0und"
        let contents: [(text: String, hasDelimiter: Bool)] = [
            ("plain text, no delimiter", false), ("--b0und at the start", true), ("almost \n--b0un", false),
            ("lf \n--b0und inside", true), ("cr \r--b0und inside", true), ("crlf \r\n--b0und", true),
            ("-b0und and --b0un d", false), ("\n-\n--b0und", true),
        ]
        for (text, hasDelimiter) in contents {
            let bytes = Data(text.utf8)
            var ways: [(String, [Data])] = [("whole", [bytes]), ("byte by byte", bytes.map { Data([$0]) })]
            for first in 0...bytes.count {
                for second in first...bytes.count {
                    let pieces = [bytes[..<first], bytes[first..<second], bytes[second...]].map { Data($0) }
                    ways.append(("cut at \(first), \(second)", pieces))
                }
            }
            for (name, pieces) in ways {
                XCTAssertEqual(Self.finds(pieces, boundary: boundary), hasDelimiter, "\(text.debugDescription) \(name)")
            }
        }
    }
}
