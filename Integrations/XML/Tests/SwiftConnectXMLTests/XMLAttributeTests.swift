import Foundation
import SwiftConnect
import SwiftConnectTesting
import SwiftConnectXML
import XCTest

/// How many attributes one element of an XML answer may have: the XML parser (libxml2 2.9 on Linux) checks each
/// attribute of an element against every one before it, so the time an element takes grows with the square of its
/// attributes (40,000 of them, a body of half a megabyte, took seconds; a few hundred thousand, minutes).
final class XMLAttributeTests: XCTestCase {
    private struct Note: Codable, Equatable, Sendable {
        var title: String
    }

    /// A note whose root element has `count` attributes, and whose title is `t`.
    private static func note(attributes count: Int) -> Data {
        let attributes = (0..<count).map { " a\($0)=\"1\"" }.joined()
        return Data("<note\(attributes)><title>t</title></note>".utf8)
    }

    func testAnElementWithMoreAttributesThanTheLimitFailsAsADecodingError() throws {
        // Given an answer whose root element has 20,000 attributes
        let transport = FakeTransport.answering(
            .data(Self.note(attributes: 20_000), headers: ["Content-Type": "application/xml"]))
        let connect = Connect(transport: transport, settings: Connect.Settings(decoders: .default.withXML()))

        // When it is decoded, Then it fails as a decoding error that says why, before the parser reads it
        XCTAssertThrowsError(
            try connect.request(Route(url: URL(string: "https://api.test/note")!)).decoded(toType: Note.self)
                .wait(timeout: 60)
        ) { error in
            let error = error as? ConnectError
            XCTAssertEqual(error?.kind, .decoding)
            XCTAssertTrue(error?.message.contains("more than 256 attributes") == true, error?.message ?? "")
        }
    }

    /// The limit, 256 attributes an element, namespace declarations counted; `=` in a quoted value, a comment, a
    /// CDATA section, a processing instruction or text counts for none.
    func testTheLimitIs256AttributesAnElementAndOnlyAttributesCount() throws {
        XCTAssertEqual(try XMLBodyDecoder().decode(Note.self, from: Self.note(attributes: 256)), Note(title: "t"))
        XCTAssertThrowsError(try XMLBodyDecoder().decode(Note.self, from: Self.note(attributes: 257))) { error in
            guard case DecodingError.dataCorrupted(let context) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(context.debugDescription.contains("more than 256 attributes"), context.debugDescription)
        }
        let equals = String(repeating: "=", count: 300)
        let elsewhere = """
            <?xml version="1.0"?><?pi \(equals) ?><!-- \(equals) --><note xmlns:x="urn:x" a="\(equals)" b='\(equals)'>\
            <title><![CDATA[\(equals)]]></title><x>\(equals)</x></note>
            """
        XCTAssertEqual(try XMLBodyDecoder().decode(Note.self, from: Data(elsewhere.utf8)), Note(title: equals))
        // Each element counts its own: many elements of a few attributes each decode.
        let many = "<note>" + String(repeating: #"<x a="1" b="2" c="3"/>"#, count: 1_000) + "<title>t</title></note>"
        XCTAssertEqual(try XMLBodyDecoder().decode(Note.self, from: Data(many.utf8)), Note(title: "t"))
    }
}
