import Foundation
import XCTest

@testable import SwiftConnectXML

/// White space inside a text value survives decoding. The parser hands a text over in pieces split at each reference
/// (`&#233; &#233;` as `é`, ` `, `é`), and XMLCoder, trimming values, dropped each piece that is white space alone:
/// `é é` decoded as `éé`, `a &amp; &lt; b` as `a &< b`. A value is still trimmed at its ends, as before.
final class XMLWhitespaceTests: XCTestCase {
    private struct Note: Codable, Equatable, Sendable {
        var t: String
    }

    private func decoded(_ xml: String, trimming: Bool = true) throws -> String {
        let decoder = XMLBodyDecoder { $0.trimValueWhitespaces = trimming }
        return try decoder.decode(Note.self, from: Data(xml.utf8)).t
    }

    func testWhiteSpaceBetweenTwoReferencesIsKept() throws {
        XCTAssertEqual(try decoded("<n><t>&#233; &#233;</t></n>"), "é é")
        XCTAssertEqual(try decoded("<n><t>a &amp; &lt; b</t></n>"), "a & < b")
        XCTAssertEqual(try decoded("<n><t>&#xE9;\n\t&#xE9;</t></n>"), "é\n\té")
        XCTAssertEqual(try decoded("<n><t>&quot; &apos; &gt;</t></n>"), "\" ' >")
        // A no-break space is white space to XMLCoder's trimming: written as a reference between two words, it went.
        XCTAssertEqual(try decoded("<n><t>a&#160;b</t></n>"), "a\u{A0}b")
        // A comment splits a text too; a processing instruction as well.
        XCTAssertEqual(try decoded("<n><t>&#233; <!-- c --> &#233;</t></n>"), "é  é")
        XCTAssertEqual(try decoded("<n><t>&#233; <?pi x?> &#233;</t></n>"), "é  é")
    }

    /// What a US-ASCII or ISO-8859-1 body carries as character references comes back whole with the default decoder.
    func testARoundTripThroughAUSASCIIBodyKeepsTheSpaces() throws {
        let note = Note(t: "é é, 5 € 🎉 & <b> ∑ x")
        for contentType in ["application/xml; charset=us-ascii", "text/xml; charset=ISO-8859-1"] {
            let body = try XMLBodyEncoder(rootKey: "note", contentType: contentType).encode(note)
            XCTAssertEqual(try XMLBodyDecoder().decode(Note.self, from: body, contentType: contentType), note)
            XCTAssertEqual(try XMLBodyDecoder().decode(Note.self, from: body), note)
        }
    }

    /// A document with white space between two references is written again for XMLCoder: each case decodes as the same
    /// document with the characters written as they are (`é é`), which XMLCoder always read right.
    private func assertDecodesAsWrittenOut<T: Decodable & Equatable>(
        _ type: T.Type, _ template: String, processingNamespaces: Bool = false, file: StaticString = #filePath,
        line: UInt = #line
    ) {
        let referenced = template.replacingOccurrences(of: "{e}", with: "&#233; &#233;")
        let literal = template.replacingOccurrences(of: "{e}", with: "é é")
        XCTAssertNotEqual(referenced, literal, file: file, line: line)
        let decoder = XMLBodyDecoder { $0.shouldProcessNamespaces = processingNamespaces }
        let expected = Result { try decoder.decode(type, from: Data(literal.utf8)) }
        let actual = Result { try decoder.decode(type, from: Data(referenced.utf8)) }
        switch (expected, actual) {
        case (.success(let expected), .success(let actual)): XCTAssertEqual(actual, expected, file: file, line: line)
        case (.failure(let expected), .failure(let actual)):
            XCTAssertEqual("\(actual)", "\(expected)", file: file, line: line)
        default: XCTFail("\(actual) is not \(expected)", file: file, line: line)
        }
    }

    private struct Person: Codable, Equatable, Sendable {
        struct Phones: Codable, Equatable, Sendable {
            var phone: [String]
        }
        var id: Int
        var kind: String
        var name: String
        var note: String
        var nickname: String?
        var empty: String
        var score: Double
        var active: Bool
        var phones: Phones
        var tag: [String]
        var code: String
    }

    func testADocumentWrittenAgainDecodesAsItsCharactersWrittenOutWould() throws {
        let person = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- a comment before the root -->
            <person kind="  a&#233; &#233;\tb  ">
              <id> 7 </id>
              <name>  Bob </name>
              <note>
                {e}
              </note>
              <empty/>
              <score>\t2.5\n</score>
              <active> true </active>
              <phones>
                <phone> 1 2 </phone>
                <phone>{e}</phone>
              </phones>
              <tag>x</tag>
              <tag>  </tag>
              <tag>{e}</tag>
              <code><![CDATA[ <b>x]]]]><![CDATA[> y</b> ]]></code>
            </person>
            """
        assertDecodesAsWrittenOut(Person.self, person)
        let decoded = try XMLBodyDecoder().decode(
            Person.self, from: Data(person.replacingOccurrences(of: "{e}", with: "&#233; &#233;").utf8))
        XCTAssertEqual(decoded.id, 7)
        XCTAssertEqual(decoded.kind, "  aé é b  ")
        XCTAssertEqual(decoded.name, "Bob")
        XCTAssertEqual(decoded.note, "é é")
        XCTAssertNil(decoded.nickname)
        XCTAssertEqual(decoded.empty, "")
        XCTAssertEqual(decoded.phones.phone, ["1 2", "é é"])
        XCTAssertEqual(decoded.tag, ["x", "", "é é"])
        XCTAssertEqual(decoded.code, "<b>x]]> y</b>")
    }

    private struct Titled: Codable, Equatable, Sendable {
        struct Title: Codable, Equatable, Sendable {
            var lang: String
            var value: String

            enum CodingKeys: String, CodingKey {
                case lang
                case value = ""
            }
        }
        struct Mixed: Codable, Equatable, Sendable {
            var b: String
        }
        var title: Title
        var c: String
        var m: String
        var p: Mixed
    }

    /// A text with an attribute, text after a CDATA section (XMLCoder joins them), and two sections around white space.
    func testAttributesCDATAAndMixedContentDecodeAsWrittenOut() throws {
        let document = """
            <doc>
              <title lang="fr"> {e} </title>
              <c><![CDATA[x]]> {e} <![CDATA[ y ]]></c>
              <m>a <![CDATA[]]> {e}</m>
              <p>Hello <b> {e} </b> {e} world</p>
            </doc>
            """
        assertDecodesAsWrittenOut(Titled.self, document)
        let decoded = try XMLBodyDecoder().decode(
            Titled.self, from: Data(document.replacingOccurrences(of: "{e}", with: "&#233; &#233;").utf8))
        XCTAssertEqual(decoded.title, Titled.Title(lang: "fr", value: "é é"))
        XCTAssertEqual(decoded.c, "x é é  y")
        XCTAssertEqual(decoded.p.b, "é é")
    }

    private struct Envelope: Codable, Equatable, Sendable {
        struct Body: Codable, Equatable, Sendable {
            var text: String
        }
        var body: Body

        enum CodingKeys: String, CodingKey {
            case body = "soap:Body"
        }
    }

    private struct LocalEnvelope: Codable, Equatable, Sendable {
        var Body: Envelope.Body
    }

    /// Prefixes and namespace declarations are kept: read with namespaces processed or not, as before.
    func testNamespacesAreKept() throws {
        let document = """
            <soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns="urn:d">
              <soap:Body><text>{e}</text></soap:Body>
            </soap:Envelope>
            """
        assertDecodesAsWrittenOut(Envelope.self, document)
        assertDecodesAsWrittenOut(LocalEnvelope.self, document, processingNamespaces: true)
        let body = Data(document.replacingOccurrences(of: "{e}", with: "&#233; &#233;").utf8)
        XCTAssertEqual(try XMLBodyDecoder().decode(Envelope.self, from: body).body.text, "é é")
        let local = XMLBodyDecoder { $0.shouldProcessNamespaces = true }
        XCTAssertEqual(try local.decode(LocalEnvelope.self, from: body).Body.text, "é é")
    }

    /// A decoder told not to trim keeps every value as it is, as before.
    func testADecoderThatDoesNotTrimIsLeftAsItIs() throws {
        XCTAssertEqual(try decoded("<n><t> &#233; &#233; </t></n>", trimming: false), " é é ")
        XCTAssertEqual(try decoded("<n><t>  Bob </t></n>", trimming: false), "  Bob ")
        XCTAssertEqual(try decoded("<n><t>  Bob </t></n>"), "Bob")
    }

    /// A document the parser cannot read still fails as XMLCoder reports it.
    func testAMalformedDocumentStillFails() {
        XCTAssertThrowsError(try decoded("<n><t>&#233; &#233;</t>"))
        XCTAssertThrowsError(try decoded("<n><t>&#233; &#233;</x></n>"))
    }

    /// A text split in many pieces (one per reference, as a US-ASCII body carries non-ASCII text) is written again in
    /// one piece, its characters as they are: XMLCoder joins the pieces of a value by copying it whole for each, so a
    /// 4.5 MB body of `&#xE9; a ` took a minute to decode, and twice as many references four times as long. Only `&`,
    /// `<` and a carriage return are written as references, and `>` after `]]`.
    func testATextInManyPiecesIsWrittenAgainInOne() throws {
        let text = String(repeating: "é a ", count: 5_000) + "<&> ]]> \r x"
        let body = try XMLBodyEncoder(rootKey: "note", contentType: "application/xml; charset=us-ascii")
            .encode(Note(t: text))
        let restored = try XCTUnwrap(XMLWhitespace.restored(body))
        let written = String(decoding: restored, as: UTF8.self)
        XCTAssertEqual(written.components(separatedBy: "&").count - 1, 4, String(written.suffix(80)))
        let tail = "&lt;&amp;> ]]&gt; &#13; x</t></note>"
        let expected = "<t>" + String(repeating: "é a ", count: 5_000) + tail
        XCTAssertTrue(written.hasSuffix(expected), String(written.suffix(80)))
        let decoder = XMLBodyDecoder { $0.trimValueWhitespaces = false }
        XCTAssertEqual(try XMLBodyDecoder().decode(Note.self, from: body).t, text)
        XCTAssertEqual(try decoder.decode(Note.self, from: body).t, text)
        // A text in few pieces is decoded as it is.
        XCTAssertNil(XMLWhitespace.restored(Data("<note><t>a &amp; b</t></note>".utf8)))
    }
}
