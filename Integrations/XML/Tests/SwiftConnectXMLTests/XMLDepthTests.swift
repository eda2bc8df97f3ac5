import Foundation
import SwiftConnect
import SwiftConnectTesting
import SwiftConnectXML
import XCTest

/// How deeply an XML answer may nest: XMLCoder builds its tree of a document by recursion, one call per level, so a
/// document nested deep enough (a few hundred levels on a 512 KiB thread stack, the size of Apple's dispatch worker
/// threads; about ten thousand on an 8 MiB one) overflowed the stack and stopped the process, even when the model
/// read none of those levels.
final class XMLDepthTests: XCTestCase {
    private struct Note: Codable, Equatable, Sendable {
        var title: String
    }

    /// A note whose title is followed by `depth` elements nested inside one another, which the model ignores.
    private static func note(nesting depth: Int) -> Data {
        Data(
            ("<note><title>t</title>" + String(repeating: "<a>", count: depth) + String(repeating: "</a>", count: depth)
                + "</note>").utf8)
    }

    func testADocumentNestedDeeperThanTheLimitFailsAsADecodingErrorNotACrash() throws {
        // Given an answer nested 20 000 levels deep (140 KB)
        let transport = FakeTransport.answering(
            .data(Self.note(nesting: 20_000), headers: ["Content-Type": "application/xml"]))
        let connect = Connect(transport: transport, settings: Connect.Settings(decoders: .default.withXML()))

        // When it is decoded, Then it fails as a decoding error that says why
        XCTAssertThrowsError(
            try connect.request(Route(url: URL(string: "https://api.test/note")!)).decoded(toType: Note.self)
                .wait(timeout: 30)
        ) { error in
            let error = error as? ConnectError
            XCTAssertEqual(error?.kind, .decoding)
            XCTAssertTrue(error?.message.contains("nests deeper than 256 elements") == true, error?.message ?? "")
        }
    }

    /// The limit, 256 levels (the root counted), on a thread with the stack of Apple's dispatch worker threads:
    /// a document that deep decodes there, one level more fails, and neither overflows the stack.
    func testTheLimitIs256LevelsAndADocumentThatDeepDecodesOnASmallStack() throws {
        let outcome = Promise<(atLimit: Result<Note, any Error>, beyond: Result<Note, any Error>)>()
        let thread = Thread { [outcome] in
            let decoder = XMLBodyDecoder()
            // The note itself is one level, its nested elements the other 255.
            let atLimit = Result { try decoder.decode(Note.self, from: Self.note(nesting: 255)) }
            let beyond = Result {
                try decoder.decode(Note.self, from: Self.note(nesting: 256), contentType: "text/xml; charset=utf-8")
            }
            _ = outcome.succeed((atLimit, beyond))
        }
        thread.stackSize = 512 << 10
        thread.start()
        let (atLimit, beyond) = try outcome.future.wait(timeout: 60)
        XCTAssertEqual(try atLimit.get(), Note(title: "t"))
        XCTAssertThrowsError(try beyond.get()) { error in
            guard case DecodingError.dataCorrupted(let context) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(context.debugDescription.contains("deeper than 256"), context.debugDescription)
        }
    }
}
