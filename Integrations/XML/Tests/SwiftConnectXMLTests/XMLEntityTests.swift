import Foundation
import SwiftConnect
import SwiftConnectTesting
import SwiftConnectXML
import XCTest

/// Entities other than XML's own five and character references. The parser under XMLCoder drops the text of a
/// declared entity (`a&e;b` decoded as `ab`, `a&xxe;b` as `a`) and of an undeclared one when the document names an
/// external DTD: a silently wrong value. Such documents now fail as decoding errors that say why. Whatever the
/// document, no file is read and nothing is fetched (external entities are never resolved).
final class XMLEntityTests: XCTestCase {
    private struct Note: Codable, Equatable, Sendable {
        var title: String
    }

    private func decoded(_ text: String, contentType: String = "application/xml") -> Result<String, any Error> {
        decoded(Data(text.utf8), contentType: contentType)
    }

    private func decoded(_ body: Data, contentType: String = "application/xml") -> Result<String, any Error> {
        let transport = FakeTransport.answering(.data(body, headers: ["Content-Type": contentType]))
        let connect = Connect(transport: transport, settings: Connect.Settings(decoders: .default.withXML()))
        let route = Route(url: URL(string: "https://api.test/note")!)
        return Result { try connect.request(route).decoded(toType: Note.self).wait(timeout: 30).title }
    }

    private func assertRefused(
        _ result: Result<String, any Error>, saying words: String, file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try result.get(), file: file, line: line) { error in
            let error = error as? ConnectError
            XCTAssertEqual(error?.kind, .decoding, file: file, line: line)
            XCTAssertTrue(error?.message.contains(words) == true, error?.message ?? "", file: file, line: line)
        }
    }

    func testADeclaredEntityFailsInsteadOfLosingItsText() {
        let body = #"<?xml version="1.0"?><!DOCTYPE note [<!ENTITY e "expanded">]><note><title>a&e;b</title></note>"#
        assertRefused(decoded(body), saying: "declares entities")
    }

    /// A quote inside a processing instruction of the internal subset is text, not the start of a literal: read as
    /// one, it hid the declarations after it up to the next quote, and their text was lost.
    func testADeclarationAfterAProcessingInstructionWithAQuoteIsFoundToo() {
        for quote in ["\"", "'"] {
            let body = """
                <!DOCTYPE note [<?pi \(quote) ?><!ENTITY e "expanded"><?pi \(quote) ?>]><note><title>a&e;b</title></note>
                """
            assertRefused(decoded(body), saying: "declares entities")
        }
    }

    func testAnExternalEntityIsRefusedAndNeitherAFileNorTheNetworkIsRead() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("xxe-\(UUID().uuidString).txt")
        try Data("FILE-CONTENT".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/entity") { _ in .text("NETWORK-CONTENT") }

        for system in [file.absoluteString, server.baseURL.appendingPathComponent("entity").absoluteString] {
            let general = """
                <?xml version="1.0"?><!DOCTYPE note [<!ENTITY x SYSTEM "\(system)">]><note><title>a&x;b</title></note>
                """
            let parameter = """
                <?xml version="1.0"?><!DOCTYPE note [<!ENTITY % p SYSTEM "\(system)"> %p;]><note><title>a</title></note>
                """
            assertRefused(decoded(general), saying: "declares entities")
            assertRefused(decoded(parameter), saying: "declares entities")
            // The parser itself, without the check, must not read them either.
            for body in [general, parameter] {
                let text = (try? XMLBodyDecoder().decode(Note.self, from: Data(body.utf8)).title) ?? ""
                XCTAssertFalse(text.contains("CONTENT"), text)
            }
        }
        XCTAssertEqual(server.requestCount, 0, "an external entity was fetched")
    }

    /// An external DTD (a file, or a URL on a server) is never loaded either: an entity it declares is refused as
    /// undeclared, and a default attribute value it declares never appears.
    func testAnExternalDTDIsNeitherReadNorFetched() throws {
        let dtd = FileManager.default.temporaryDirectory.appendingPathComponent("xxe-\(UUID().uuidString).dtd")
        let declarations = #"<!ENTITY e "FILE-CONTENT"><!ATTLIST note secret CDATA "FILE-CONTENT">"#
        try Data(declarations.utf8).write(to: dtd)
        defer { try? FileManager.default.removeItem(at: dtd) }
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/note.dtd") { _ in .text(declarations) }

        struct Secret: Decodable, Sendable {
            var title: String
            var secret: String?
        }
        for system in [dtd.absoluteString, server.baseURL.appendingPathComponent("note.dtd").absoluteString] {
            let entity = #"<?xml version="1.0"?><!DOCTYPE note SYSTEM "\#(system)"><note><title>a&e;b</title></note>"#
            assertRefused(decoded(entity), saying: "&e;")
            let attribute = #"<?xml version="1.0"?><!DOCTYPE note SYSTEM "\#(system)"><note><title>t</title></note>"#
            let secret = try XMLBodyDecoder().decode(Secret.self, from: Data(attribute.utf8))
            XCTAssertEqual(secret.title, "t")
            XCTAssertNil(secret.secret, system)
            // Nor does an error body read by `XMLErrorHandler` load it.
            let errorBody = #"<!DOCTYPE error SYSTEM "\#(system)"><error><message>a&e;b</message></error>"#
            let transport = FakeTransport.answering(
                .data(Data(errorBody.utf8), status: 400, headers: ["Content-Type": "application/xml"]))
            let connect = Connect(transport: transport, errorHandler: XMLErrorHandler(), retryPolicy: nil)
            XCTAssertThrowsError(
                try connect.request(Route(url: URL(string: "https://api.test/note")!)).wait(timeout: 30)
            ) {
                let message = ($0 as? ConnectError)?.message ?? "\($0)"
                XCTAssertFalse(message.contains("CONTENT"), message)
            }
        }
        XCTAssertEqual(server.requestCount, 0, "an external DTD was fetched")
    }

    func testEntityExpansionAttacksFailFast() {
        var laughs = #"<!ENTITY l0 "lollollollollollollollollollol">"#
        for level in 1...9 {
            laughs += "<!ENTITY l\(level) \"" + String(repeating: "&l\(level - 1);", count: 10) + "\">"
        }
        let billion = #"<?xml version="1.0"?><!DOCTYPE note [\#(laughs)]><note><title>&l9;</title></note>"#
        let quadratic =
            #"<?xml version="1.0"?><!DOCTYPE note [<!ENTITY a ""# + String(repeating: "x", count: 50_000)
            + #"">]><note><title>"# + String(repeating: "&a;", count: 50_000) + "</title></note>"
        assertRefused(decoded(billion), saying: "declares entities")
        assertRefused(decoded(quadratic), saying: "declares entities")
    }

    func testAnUndeclaredEntityUnderAnExternalDTDFailsInsteadOfVanishing() {
        let body = """
            <?xml version="1.0"?><!DOCTYPE note SYSTEM "note.dtd"><note><title>a&nbsp;b</title></note>
            """
        assertRefused(decoded(body), saying: "&nbsp;")
    }

    /// A DOCTYPE without entity declarations, XML's own entities and character references still decode, as does
    /// `<!ENTITY` as text inside the document.
    func testADocumentTypeWithoutEntitiesAndXMLsOwnReferencesStillDecode() throws {
        let plist = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE note PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <note><title>a&amp;b&#233;&#x41;</title></note>
            """
        XCTAssertEqual(try decoded(plist).get(), "a&béA")
        let subset = #"<!DOCTYPE note [<!-- <!ENTITY no "x"> --><!ELEMENT note ANY>]><note><title>t</title></note>"#
        XCTAssertEqual(try decoded(subset).get(), "t")
        let cdata = "<note><title><![CDATA[<!ENTITY e \"x\">]]></title></note>"
        XCTAssertEqual(try decoded(cdata).get(), #"<!ENTITY e "x">"#)
    }

    /// A document whose markup is not ASCII (EBCDIC, which the parser knows by its first four bytes) is refused: the
    /// check cannot read its declarations, and the parser dropped their text (`a&e;b` decoded as `ab`).
    func testADocumentWhoseMarkupIsNotASCIIIsRefusedInsteadOfLosingEntityText() {
        let declaration = #"<?xml version="1.0" encoding="IBM037"?>"#
        let declared = #"<!DOCTYPE note [<!ENTITY e "expanded">]><note><title>a&e;b</title></note>"#
        assertRefused(decoded(Self.ebcdic(declaration + declared)), saying: "markup is not ASCII")
        assertRefused(decoded(Self.ebcdic(declaration + "<note><title>ab</title></note>")), saying: "not ASCII")
    }

    /// `text` in EBCDIC (code page 037), for the characters the tests use.
    private static func ebcdic(_ text: String) -> Data {
        var table: [Character: UInt8] = [
            " ": 0x40, ".": 0x4B, "<": 0x4C, "&": 0x50, "!": 0x5A, ";": 0x5E, "-": 0x60, "/": 0x61, ">": 0x6E,
            "?": 0x6F, "=": 0x7E, "\"": 0x7F, "[": 0xBA, "]": 0xBB,
        ]
        for (letters, first) in [
            ("abcdefghi", 0x81), ("jklmnopqr", 0x91), ("stuvwxyz", 0xA2), ("ABCDEFGHI", 0xC1), ("JKLMNOPQR", 0xD1),
            ("STUVWXYZ", 0xE2), ("0123456789", 0xF0),
        ] {
            for (offset, letter) in letters.enumerated() { table[letter] = UInt8(first + offset) }
        }
        return Data(text.map { table[$0]! })
    }

    /// The check reads a document in UTF-16, with or without a byte order mark, as the parser does.
    func testAnEntityDeclarationInUTF16IsFoundToo() throws {
        let text =
            #"<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE note [<!ENTITY e "x">]><note><title>a&e;</title></note>"#
        let marked = Data([0xFF, 0xFE]) + (try XCTUnwrap(text.data(using: .utf16LittleEndian)))
        let unmarked = try XCTUnwrap(text.data(using: .utf16BigEndian))
        assertRefused(decoded(marked), saying: "declares entities")
        assertRefused(decoded(unmarked), saying: "declares entities")
        // One byte more, or a lone surrogate: not valid UTF-16, which the parser reads all the same (libxml2 drops
        // the last unit cut short), so the check reads it so too.
        assertRefused(decoded(marked + Data([0x0A])), saying: "declares entities")
        assertRefused(decoded(unmarked + Data([0xD8, 0x00])), saying: "declares entities")
        let wide = Data([0xFF, 0xFE, 0x00, 0x00]) + (try XCTUnwrap(text.data(using: .utf32LittleEndian)))
        assertRefused(decoded(wide + Data([0x0A])), saying: "declares entities")
    }

    /// UTF-7 writes `<` as `+ADw-`: an entity declaration the check reads as text is one to the parser, which decodes
    /// UTF-7 (libxml2 through iconv). A document in an encoding whose ASCII bytes need not be markup is refused,
    /// declared in its XML declaration or by the response's charset; one in an encoding that keeps ASCII is read.
    func testAnEncodingWhoseBytesCanHideMarkupIsRefused() throws {
        let hidden = #"<!DOCTYPE note [+ADw-!ENTITY e "x"+AD4-]><note><title>a&e;b</title></note>"#
        for encoding in ["UTF-7", "utf7", "UNICODE-1-1-UTF-7", "UTF-7-IMAP", "ISO-2022-JP", "HZ-GB-2312"] {
            let declared = Data(#"<?xml version="1.0" encoding="\#(encoding)"?>\#(hidden)"#.utf8)
            assertRefused(decoded(declared), saying: "need not be the markup")
        }
        assertRefused(
            decoded(Data(hidden.utf8), contentType: "text/xml; charset=UTF-7"), saying: "need not be the markup")
        let latin = Data(#"<?xml version="1.0" encoding="ISO-8859-1"?><note><title>ab</title></note>"#.utf8)
        XCTAssertEqual(try decoded(latin).get(), "ab")
    }

    /// In Shift_JIS (GBK and Big5 alike) the second byte of a character can be `]`: `ゾ` is `83 5D`. In a declaration of
    /// the internal subset it ended the subset for the check, whose next `>` ended the type declaration: an entity
    /// declared after it was taken for the root element, and the parser, which reads Shift_JIS, dropped its text.
    func testABracketByteInsideAMultibyteCharacterDoesNotEndTheSubset() throws {
        let zo: [UInt8] = [0x83, 0x5D]  // ゾ in Shift_JIS
        for (encoding, type) in [("Shift_JIS", "text/xml"), ("Shift_JIS", "text/xml; charset=Shift_JIS")] {
            let body =
                Data(#"<?xml version="1.0" encoding="\#(encoding)"?><!DOCTYPE note [<!ELEMENT "#.utf8) + Data(zo)
                + Data(#" ANY><!ENTITY e "x">]><note><title>a&e;b</title></note>"#.utf8)
            assertRefused(decoded(body, contentType: type), saying: "declares entities")
        }
        // The same character in an attribute list's default value, and a document without entities, read as they are.
        let plain =
            Data(#"<?xml version="1.0" encoding="Shift_JIS"?><!DOCTYPE note [<!ATTLIST note k CDATA ""#.utf8)
            + Data(zo) + Data(#"">]><note><title>ab</title></note>"#.utf8)
        XCTAssertEqual(try decoded(plain).get(), "ab")
    }
}
