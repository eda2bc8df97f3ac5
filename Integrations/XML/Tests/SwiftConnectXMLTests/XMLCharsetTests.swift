import Foundation
import SwiftConnect
import SwiftConnectTesting
import SwiftConnectXML
import XCTest

/// An XML answer's encoding, found as RFC 7303 §3.2 ranks the clues: byte order mark, then the `charset` of its
/// `Content-Type`, then its XML declaration, then UTF-8.
final class XMLCharsetTests: XCTestCase {
    private struct Note: Codable, Equatable, Sendable {
        var title: String
    }

    /// `body` answered with `contentType`, decoded as a ``Note`` by a client that decodes XML; its title or its error.
    private func title(of body: Data, contentType: String) -> Result<String, any Error> {
        let transport = FakeTransport.answering(.data(body, headers: ["Content-Type": contentType]))
        let connect = Connect(transport: transport, settings: Connect.Settings(decoders: .default.withXML()))
        let route = Route(url: URL(string: "https://api.test/note")!)
        return Result { try connect.request(route).decoded(toType: Note.self).wait(timeout: 5).title }
    }

    private func latin1(_ text: String) throws -> Data {
        try XCTUnwrap(text.data(using: .isoLatin1))
    }

    func testTheContentTypesCharsetIsTheEncodingOfADocumentWithoutADeclaration() throws {
        // Given a Latin-1 document with no declaration, its charset only in the header
        let body = try latin1("<note><title>Café crème</title></note>")

        // Then it decodes as Latin-1, however the header spells it
        for contentType in [
            "text/xml; charset=ISO-8859-1", "application/xml;charset=iso-8859-1", #"text/xml; Charset="latin1""#,
        ] {
            XCTAssertEqual(try title(of: body, contentType: contentType).get(), "Café crème", contentType)
        }
        // And without the charset it is not UTF-8: a decoding error, as before
        XCTAssertThrowsError(try title(of: body, contentType: "text/xml").get())
    }

    func testTheCharsetWinsOverTheDeclarationWhichKeepsItsVersionAndStandalone() throws {
        let body = try latin1(
            "<?xml version='1.0' encoding='UTF-8' standalone='yes'?>\n<note><title>Ça va</title></note>")
        XCTAssertEqual(try title(of: body, contentType: "text/xml; charset=ISO-8859-1").get(), "Ça va")
        // A declaration that already agrees is read as it is.
        let agreeing = try latin1(#"<?xml version="1.0" encoding="iso-8859-1"?><note><title>Ça</title></note>"#)
        XCTAssertEqual(try title(of: agreeing, contentType: "text/xml; charset=ISO-8859-1").get(), "Ça")
    }

    func testAByteOrderMarkWinsOverTheCharset() throws {
        let body = Data([0xEF, 0xBB, 0xBF]) + Data("<note><title>Café</title></note>".utf8)
        XCTAssertEqual(try title(of: body, contentType: "text/xml; charset=ISO-8859-1").get(), "Café")
    }

    func testUTF16WithoutAByteOrderMarkIsReadByItsCharset() throws {
        let text = #"<?xml version="1.0" encoding="UTF-16"?><note><title>Grüße</title></note>"#
        let little = try XCTUnwrap(text.data(using: .utf16LittleEndian))
        let big = try XCTUnwrap(text.data(using: .utf16BigEndian))
        XCTAssertEqual(try title(of: little, contentType: "application/xml; charset=UTF-16LE").get(), "Grüße")
        XCTAssertEqual(try title(of: big, contentType: "application/xml; charset=utf-16").get(), "Grüße")
        // An odd number of bytes is no UTF-16: a decoding error, not a crash.
        let failure = title(of: little.dropLast(), contentType: "application/xml; charset=UTF-16LE")
        XCTAssertThrowsError(try failure.get()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .decoding)
        }
    }

    /// A UTF-16 body without a byte order mark served as plain `charset=utf-16` is read in the byte order its first
    /// `<` shows (XML 1.0 Appendix F), as the parser reads it: read big-endian, a little-endian one failed to decode.
    func testUnmarkedUTF16IsReadInTheByteOrderItsFirstCharacterShows() throws {
        let text = #"<?xml version="1.0" encoding="UTF-16"?><note><title>Grüße</title></note>"#
        let little = try XCTUnwrap(text.data(using: .utf16LittleEndian))
        let big = try XCTUnwrap(text.data(using: .utf16BigEndian))
        for contentType in ["application/xml; charset=utf-16", "application/xml; charset=UCS-2"] {
            XCTAssertEqual(try title(of: little, contentType: contentType).get(), "Grüße", contentType)
            XCTAssertEqual(try title(of: big, contentType: contentType).get(), "Grüße", contentType)
        }
        let wide = try XCTUnwrap("<note><title>Grüße</title></note>".data(using: .utf32LittleEndian))
        XCTAssertEqual(try title(of: wide, contentType: "text/xml; charset=UTF-32").get(), "Grüße")
    }

    /// A UTF-32 body with its byte order mark is read by it, as RFC 7303 ranks the mark first: the XML parser knows
    /// no UTF-32 mark, took `FF FE 00 00` for UTF-16's, and failed.
    func testUTF32WithAByteOrderMarkIsReadByIt() throws {
        let text = "<note><title>Grüße</title></note>"
        let little = Data([0xFF, 0xFE, 0, 0]) + (try XCTUnwrap(text.data(using: .utf32LittleEndian)))
        let big = Data([0, 0, 0xFE, 0xFF]) + (try XCTUnwrap(text.data(using: .utf32BigEndian)))
        for (name, body) in [("little", little), ("big", big)] {
            for contentType in ["application/xml", "application/xml; charset=utf-32"] {
                XCTAssertEqual(try title(of: body, contentType: contentType).get(), "Grüße", "\(name) \(contentType)")
            }
            // And so does the decoder called without a Content-Type.
            XCTAssertEqual(try XMLBodyDecoder().decode(Note.self, from: body).title, "Grüße", name)
        }
    }

    /// A UTF-32 body without a byte order mark and without a `charset` is read in the byte order its first `<` shows
    /// (XML 1.0 Appendix F), as ``XMLBodyEncoder`` writes `charset=UTF-32LE`: the parser reads big-endian UTF-32 so,
    /// but failed on little-endian ("XMLParser error 6003").
    func testUnmarkedUTF32IsReadInTheByteOrderItsFirstCharacterShows() throws {
        let text = #"<?xml version="1.0" encoding="UTF-32"?><note><title>Grüße</title></note>"#
        for encoding in [String.Encoding.utf32LittleEndian, .utf32BigEndian] {
            let body = try XCTUnwrap(text.data(using: encoding))
            XCTAssertEqual(try title(of: body, contentType: "application/xml").get(), "Grüße", "\(encoding)")
            XCTAssertEqual(try XMLBodyDecoder().decode(Note.self, from: body).title, "Grüße", "\(encoding)")
        }
    }

    func testACharsetThatIsNoEncodingNameFailsAsADecodingErrorThatSaysSo() throws {
        let body = Data("<note><title>a</title></note>".utf8)
        for contentType in [#"text/xml; charset="utf-8\"?><evil/>""#, "text/xml; charset=9x", "text/xml; charset=ü"] {
            XCTAssertThrowsError(try title(of: body, contentType: contentType).get(), contentType) { error in
                let error = error as? ConnectError
                XCTAssertEqual(error?.kind, .decoding, contentType)
                XCTAssertTrue(error?.message.contains("not an encoding name") == true, error?.message ?? "")
            }
        }
    }

    func testAnEncodingTheParserDoesNotKnowFailsAsADecodingError() throws {
        let body = Data("<note><title>a</title></note>".utf8)
        XCTAssertThrowsError(try title(of: body, contentType: "text/xml; charset=x-no-such-encoding").get()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .decoding)
        }
    }

    func testUTF8AndASCIICharsetsLeaveAPlainDocumentAsItIs() throws {
        let body = Data("<note><title>naïve</title></note>".utf8)
        XCTAssertEqual(try title(of: body, contentType: "text/xml; charset=utf-8").get(), "naïve")
        XCTAssertEqual(
            try title(of: Data("<note><title>a</title></note>".utf8), contentType: "text/xml; charset=us-ascii").get(),
            "a")
    }

    /// A body served as US-ASCII is read as UTF-8, which carries every US-ASCII body as it is, whether it has an XML
    /// declaration or not: one with `<?xml version="1.0" encoding="UTF-8"?>` and a non-ASCII character (a server
    /// labelling XML as `text/xml; charset=us-ascii`, RFC 3023's old default) failed as not well-formed, while the
    /// same body without its declaration decoded. Bytes that are not UTF-8 (Latin-1) still fail.
    func testAUSASCIIBodyIsReadAsUTF8WithOrWithoutADeclaration() throws {
        let contentType = "text/xml; charset=us-ascii"
        for declaration in ["", #"<?xml version="1.0"?>"#, #"<?xml version="1.0" encoding="UTF-8"?>"#] {
            let body = Data((declaration + "<note><title>naïve</title></note>").utf8)
            XCTAssertEqual(try title(of: body, contentType: contentType).get(), "naïve", declaration)
            XCTAssertEqual(try title(of: body, contentType: "text/xml; charset=ASCII").get(), "naïve", declaration)
        }
        let ascii = Data(#"<?xml version="1.0" encoding="ISO-8859-1"?><note><title>a</title></note>"#.utf8)
        XCTAssertEqual(try title(of: ascii, contentType: contentType).get(), "a")
        let notUTF8 = try latin1(#"<?xml version="1.0"?><note><title>naïve</title></note>"#)
        XCTAssertThrowsError(try title(of: notUTF8, contentType: contentType).get()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .decoding)
        }
    }

    func testAStylesheetInstructionIsNotTakenForADeclaration() throws {
        let body = try latin1(#"<?xml-stylesheet href="a.xsl"?><note><title>Olá</title></note>"#)
        XCTAssertEqual(try title(of: body, contentType: "text/xml; charset=ISO-8859-1").get(), "Olá")
    }

    func testASemicolonInsideAnotherParametersQuotedValueSeparatesNothing() throws {
        // Given a UTF-8 body whose Content-Type hides a charset inside another parameter's quoted value
        let body = Data("<note><title>naïve</title></note>".utf8)
        let contentType = #"text/xml; profile="a;charset=UTF-16;\"b"; charset=utf-8"#
        // Then the real charset counts
        XCTAssertEqual(try title(of: body, contentType: contentType).get(), "naïve")
    }

    func testUCS2IsReadAsUTF16() throws {
        let body = try XCTUnwrap("<note><title>Grüße</title></note>".data(using: .utf16BigEndian))
        XCTAssertEqual(try title(of: body, contentType: "text/xml; charset=ISO-10646-UCS-2").get(), "Grüße")
    }

    func testADeclarationWithAQuoteInAValueIsLeftForTheParserToRefuse() throws {
        let body = try latin1(#"<?xml version='1.0"' encoding='UTF-8'?><note><title>a</title></note>"#)
        XCTAssertThrowsError(try title(of: body, contentType: "text/xml; charset=ISO-8859-1").get()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .decoding)
        }
    }
}
