import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

@testable import SwiftConnectXML

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// XML answers decoded by content type, and XML request bodies (issue 38, item 8).
final class XMLBodiesTests: XCTestCase {
    private struct Book: Codable, Equatable, Sendable {
        var id: Int
        var title: String
        var tags: [String]

        enum CodingKeys: String, CodingKey {
            case id, title
            case tags = "tag"
        }
    }

    private struct Shelf: Codable, Equatable, Sendable {
        var book: [Book]
    }

    private let shelfXML = """
        <?xml version="1.0" encoding="UTF-8"?>
        <shelf><book><id>1</id><title>Dune &amp; more</title><tag>sf</tag><tag>classic</tag></book>\
        <book><id>2</id><title>Emma</title></book></shelf>
        """

    private func client(_ transport: FakeTransport) -> Connect {
        Connect(transport: transport, settings: Connect.Settings(decoders: .default.withXML()))
    }

    private let url = URL(string: "https://api.test/shelf")!

    func testXMLAnswersDecodeByContentType() throws {
        for contentType in [
            "application/xml", "text/xml; charset=utf-8", "Application/XML", "application/atom+xml",
            "application/problem+xml",
        ] {
            let transport = FakeTransport.answering(
                .data(Data(shelfXML.utf8), headers: ["Content-Type": contentType]))
            let shelf = try client(transport).request(Route(url: url)).decoded(toType: Shelf.self).wait(timeout: 5)
            XCTAssertEqual(shelf.book.map(\.title), ["Dune & more", "Emma"], contentType)
            XCTAssertEqual(shelf.book.first?.tags, ["sf", "classic"])
        }
    }

    /// An XML answer with an empty body, or an HTML error page where XML was expected, fails as a decoding error
    /// that says so: "the response body is empty", or names the type the server declared.
    func testAnEmptyOrHTMLAnswerFailsAsADecodingErrorThatSaysWhy() throws {
        let answers: [(body: String, type: String, says: String)] = [
            ("", "application/xml", "the response body is empty"),
            ("\n", "text/xml; charset=utf-8", "only white space"),
            ("<!DOCTYPE html><html><body>Bad gateway</body></html>", "text/html; charset=utf-8", "text/html"),
        ]
        for answer in answers {
            let transport = FakeTransport()
            transport.stub(.get, "/shelf", with: .data(Data(answer.body.utf8), headers: ["Content-Type": answer.type]))
            XCTAssertThrowsError(
                try client(transport).request(Route(url: url)).decoded(toType: Book.self).wait(timeout: 5)
            ) { error in
                XCTAssertEqual((error as? ConnectError)?.kind, .decoding, "\(error)")
                XCTAssertTrue("\(error)".contains(answer.says), "\(error)")
            }
        }
        // An empty body decodes as nil into an Optional, as a JSON one does.
        let transport = FakeTransport()
        transport.stub(.get, "/shelf", with: .data(Data(), headers: ["Content-Type": "application/xml"]))
        XCTAssertNil(try client(transport).request(Route(url: url)).decoded(toType: Book?.self).wait(timeout: 5))
    }

    func testJSONAnswersStillDecodeAsJSON() throws {
        let transport = FakeTransport.answering(.json(string: #"{"book":[{"id":3,"title":"Ulysses","tag":[]}]}"#))
        let shelf = try client(transport).request(Route(url: url)).decoded(toType: Shelf.self).wait(timeout: 5)
        XCTAssertEqual(shelf.book.first?.id, 3)
    }

    func testMalformedXMLFailsWithADecodingError() {
        let transport = FakeTransport.answering(
            .data(Data("<shelf><book>".utf8), headers: ["Content-Type": "application/xml"]))
        XCTAssertThrowsError(
            try client(transport).request(Route(url: url)).decoded(toType: Shelf.self).wait(timeout: 5)
        ) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .decoding)
        }
    }

    /// A document the parser cannot read fails as a `DecodingError` that says so, where, and the likely cause: it
    /// failed as the parser's bare `NSError` ("NSXMLParserErrorDomain Code=9 (null)"), which said none of it.
    func testADocumentTheParserCannotReadFailsWithAnErrorThatSaysWhy() throws {
        struct Note: Codable, Sendable {
            var t: String
        }
        let cases: [(body: Data, contentType: String?, words: [String])] = [
            (Data("<n>\n<t>x</n>".utf8), nil, ["not well-formed", "line 2"]),
            (Data("<n>\n\n<t>a&#1;b</t></n>".utf8), nil, ["not well-formed", "line 3", "character"]),
            (Data("<n><t>a\u{FFFE}b</t></n>".utf8), nil, ["character"]),
            (Data("<n><t>Caf".utf8) + Data([0xE9]) + Data("</t></n>".utf8), "text/xml", ["encoding"]),
            (Data("<n><t>x</t></n>".utf8), "text/xml; charset=x-unknown", ["x-unknown"]),
            (Data(#"<?xml version="1.0" encoding="US-ASCII"?><n><t>é</t></n>"#.utf8), nil, ["encoding"]),
            (Data(#"<?xml version="1.0" encoding="UTF-16"?><n><t>é</t></n>"#.utf8), nil, ["encoding"]),
            (Data("<n><t>x</t>".utf8), nil, ["not closed"]),
        ]
        for (body, contentType, words) in cases {
            let decoder = XMLBodyDecoder()
            XCTAssertThrowsError(try decoder.decode(Note.self, from: body, contentType: contentType)) { error in
                guard case .dataCorrupted(let context)? = error as? DecodingError else {
                    return XCTFail("not a DecodingError: \(error)")
                }
                for word in words {
                    XCTAssertTrue(context.debugDescription.contains(word), context.debugDescription)
                }
                XCTAssertEqual((context.underlyingError as? NSError)?.domain, XMLParser.errorDomain)
            }
        }
        let transport = FakeTransport.answering(
            .data(Data("<shelf><book>".utf8), headers: ["Content-Type": "application/xml"]))
        XCTAssertThrowsError(
            try client(transport).request(Route(url: url)).decoded(toType: Shelf.self).wait(timeout: 5)
        ) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .decoding)
            XCTAssertTrue((error as? ConnectError)?.message.contains("not well-formed") == true, "\(error)")
        }
    }

    /// What ``XMLBodyEncoder`` writes (``testABodyPastTheParsersLimitsOrWithAnUndeclaredPrefixIsStillSent()``) but
    /// the parser cannot read, past libxml2's limits, fails as a `DecodingError` that names the limit: a text of
    /// 10,000,000 bytes or more, a name over 50,000 characters (which failed as "libxml2's error 110", naming none),
    /// and an attribute value that does not end. The long text fails before any other step reads it, where it took
    /// seconds.
    func testADocumentPastTheParsersLimitsFailsSayingWhichLimit() throws {
        struct Note: Codable, Sendable {
            var data: String
        }
        let longText =
            Data("<note><data>".utf8) + Data(repeating: UInt8(ascii: "A"), count: 10_500_000)
            + Data("</data></note>".utf8)
        let name = String(repeating: "n", count: 60_000)
        let longName = Data("<note>\n<data>x</data><\(name)>x</\(name)></note>".utf8)
        let cases: [(body: Data, words: [String])] = [
            (longText, ["line 1", "10,000,000 bytes", "XML_MAX_TEXT_LENGTH"]),
            (longName, ["line 2", "50,000 characters", "XML_MAX_NAME_LENGTH"]),
            (Data(#"<note data="x/>"#.utf8), ["closing quote", "10,000,000 bytes"]),
        ]
        for (body, words) in cases {
            XCTAssertThrowsError(try XMLBodyDecoder().decode(Note.self, from: body)) { error in
                guard case .dataCorrupted(let context)? = error as? DecodingError else {
                    return XCTFail("not a DecodingError: \(error)")
                }
                for word in words {
                    XCTAssertTrue(context.debugDescription.contains(word), context.debugDescription)
                }
            }
        }
    }

    /// A `Decimal` keeps the 38 significant digits Foundation's `Decimal` holds and rounds off more, as `JSONDecoder`
    /// reads one: not refused, as documented on ``XMLBodyDecoder``. An integer past its type still fails.
    func testADecimalWithMoreDigitsThanItHoldsIsReadAsJSONDecoderReadsIt() throws {
        struct Price: Codable, Sendable {
            var amount: Decimal
        }
        struct Count: Codable, Sendable {
            var amount: Int
        }
        let digits = "1234567890123456789012345678901234567890.5"
        let xml = Data("<price><amount>\(digits)</amount></price>".utf8)
        let fromXML = try XMLBodyDecoder().decode(Price.self, from: xml)
        let fromJSON = try JSONDecoder().decode(Price.self, from: Data(#"{"amount":\#(digits)}"#.utf8))
        XCTAssertEqual(fromXML.amount, fromJSON.amount)
        XCTAssertEqual(fromXML.amount, Decimal(string: "1234567890123456789012345678901234567890"))
        let tooLarge = Data("<count><amount>99999999999999999999</amount></count>".utf8)
        XCTAssertThrowsError(try XMLBodyDecoder().decode(Count.self, from: tooLarge)) { error in
            XCTAssertNotNil(error as? DecodingError, "\(error)")
        }
    }

    /// What XMLCoder decides in its unboxing, with no hook for this package (as `XMLBodyDecoder`'s documentation
    /// says): a `Double` or a `Float` past its range reads as infinity, `NaN` and `INF` read as such although
    /// `nonConformingFloatDecodingStrategy` is `.throw`, and a `String` read from an element that holds elements is
    /// empty (for mixed content, its first text), where `JSONDecoder` would throw. Pinned, so that an XMLCoder that
    /// changes any of it is noticed and the documentation follows; the check the documentation suggests works.
    func testNumbersAndTextXMLCoderReadsWithoutAHookAreReadAsDocumented() throws {
        struct Reading: Decodable, Sendable {
            var value: Double
        }
        struct Small: Decodable, Sendable {
            var value: Float
        }
        struct Person: Decodable, Sendable {
            var name: String
        }
        func value(_ text: String) throws -> Double {
            let reading = try XMLBodyDecoder().decode(Reading.self, from: Data("<r><value>\(text)</value></r>".utf8))
            return reading.value
        }
        XCTAssertEqual(try value("1e400"), .infinity)
        XCTAssertEqual(try value("-1e400"), -.infinity)
        XCTAssertEqual(try value("1e-400"), 0)
        for text in ["inf", "INF", "Infinity"] { XCTAssertEqual(try value(text), .infinity, text) }
        XCTAssertEqual(try value("-INF"), -.infinity)
        XCTAssertTrue(try value("NaN").isNaN)
        let small = try XMLBodyDecoder().decode(Small.self, from: Data("<s><value>3.5e38</value></s>".utf8))
        XCTAssertEqual(small.value, .infinity)
        let strict = XMLBodyDecoder { XCTAssertEqual("\($0.nonConformingFloatDecodingStrategy)", "throw") }
        XCTAssertTrue(try strict.decode(Reading.self, from: Data("<r><value>nan</value></r>".utf8)).value.isNaN)
        let nested = Data("<p><name><first>Ada</first></name></p>".utf8)
        XCTAssertEqual(try XMLBodyDecoder().decode(Person.self, from: nested).name, "")
        let mixed = Data("<p><name>Ada <b>Lovelace</b></name></p>".utf8)
        XCTAssertEqual(try XMLBodyDecoder().decode(Person.self, from: mixed).name, "Ada")

        // The check the documentation suggests, in the model's `init(from:)`.
        struct CheckedReading: Decodable, Sendable {
            var value: Double
            enum CodingKeys: CodingKey { case value }
            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                value = try container.decode(Double.self, forKey: .value)
                guard value.isFinite else {
                    throw DecodingError.dataCorruptedError(
                        forKey: .value, in: container, debugDescription: "The value is not finite.")
                }
            }
        }
        XCTAssertThrowsError(
            try XMLBodyDecoder().decode(CheckedReading.self, from: Data("<r><value>1e400</value></r>".utf8))
        ) { error in
            guard case .dataCorrupted(let context)? = error as? DecodingError else { return XCTFail("\(error)") }
            XCTAssertEqual(context.codingPath.map(\.stringValue), ["value"])
        }
    }

    /// `Data` comes back as sent, the empty one too, and base64 that is line-wrapped, as XML senders wrap it (XML
    /// Schema's base64Binary allows white space), decodes: XMLCoder's `.base64` read `<v></v>` as no value ("found
    /// null") and refused base64 with a line break. Base64 that is not valid still fails; a strategy set in
    /// `configure` is used as before.
    func testDataRoundTripsAndLineWrappedBase64Decodes() throws {
        struct Blob: Codable, Equatable, Sendable {
            var v: Data
            var w: Data?
            var x: [Data]
        }
        let bytes = Data((0..<200).map { UInt8($0) })
        for blob in [
            Blob(v: Data(), w: Data(), x: [Data(), bytes]), Blob(v: bytes, w: nil, x: []),
            Blob(v: Data([0]), w: bytes, x: [Data()]),
        ] {
            let body = try XMLBodyEncoder(rootKey: "blob").encode(blob)
            let text = String(decoding: body, as: UTF8.self)
            XCTAssertEqual(try XMLBodyDecoder().decode(Blob.self, from: body), blob, text)
        }
        let wrapped = bytes.base64EncodedString(options: [.lineLength64Characters, .endLineWithCarriageReturn])
        XCTAssertTrue(wrapped.contains("\r"))
        let document = "<blob><v>\n  \(wrapped)\n</v><x>AA EC\t/w==</x></blob>"
        let decoded = try XMLBodyDecoder().decode(Blob.self, from: Data(document.utf8))
        XCTAssertEqual(decoded, Blob(v: bytes, w: nil, x: [Data([0, 1, 2, 255])]))
        for invalid in ["AAEC/w", "!!!!", "A"] {
            XCTAssertThrowsError(
                try XMLBodyDecoder().decode(Blob.self, from: Data("<blob><v>\(invalid)</v></blob>".utf8)), invalid
            ) { error in
                guard case .dataCorrupted(let context)? = error as? DecodingError else { return XCTFail("\(error)") }
                XCTAssertEqual(context.codingPath.map(\.stringValue), ["v"])
                XCTAssertTrue(context.debugDescription.contains("Base64"), context.debugDescription)
            }
        }
        let xmlCoders = XMLBodyDecoder { $0.dataDecodingStrategy = .base64 }
        XCTAssertThrowsError(try xmlCoders.decode(Blob.self, from: Data(document.utf8)))
    }

    /// `Data` read from an element that holds elements fails as a type mismatch: it came back as empty data (or as
    /// the text before the first element), the elements lost. Attributes, white space and a CDATA section are no
    /// elements: such a blob still decodes.
    func testDataFromAnElementThatHoldsElementsFailsAsATypeMismatch() throws {
        struct Blob: Decodable, Equatable, Sendable {
            var v: Data
        }
        for body in ["<blob><v><a>QUJD</a></v></blob>", "<blob><v><a/></v></blob>", "<blob><v>QUJD<a/></v></blob>"] {
            XCTAssertThrowsError(try XMLBodyDecoder().decode(Blob.self, from: Data(body.utf8)), body) { error in
                guard case .typeMismatch(let type, let context)? = error as? DecodingError else {
                    return XCTFail("\(body): \(error)")
                }
                XCTAssertTrue(type == Data.self, "\(type)")
                XCTAssertEqual(context.codingPath.map(\.stringValue), ["v"])
                XCTAssertTrue(context.debugDescription.contains("holds elements"), context.debugDescription)
            }
        }
        let abc = Data("ABC".utf8)
        for (body, expected) in [
            (#"<blob><v enc="b64"/></blob>"#, Data()), (#"<blob><v enc="b64">QUJD</v></blob>"#, abc),
            ("<blob><v>  </v></blob>", Data()), ("<blob><v><![CDATA[QUJD]]></v></blob>", abc),
            ("<blob><v/></blob>", Data()),
        ] {
            XCTAssertEqual(try XMLBodyDecoder().decode(Blob.self, from: Data(body.utf8)), Blob(v: expected), body)
        }
        // So does one in an array, an optional one, and a body that is one.
        struct Blobs: Decodable, Sendable {
            var v: [Data]
            var w: Data?
        }
        for body in ["<blobs><v>QUJD</v><v><a>QUJD</a></v></blobs>", "<blobs><w><a/></w></blobs>"] {
            XCTAssertThrowsError(try XMLBodyDecoder().decode(Blobs.self, from: Data(body.utf8)), body) { error in
                guard case .typeMismatch? = error as? DecodingError else { return XCTFail("\(body): \(error)") }
            }
        }
        XCTAssertThrowsError(try XMLBodyDecoder().decode(Data.self, from: Data("<v><a>QUJD</a></v>".utf8))) {
            guard case .typeMismatch? = $0 as? DecodingError else { return XCTFail("\($0)") }
        }
    }

    /// A `Date` comes back as sent: XMLCoder writes one as Foundation's own number (seconds since 2001) but reads one
    /// as seconds since 1970, so a date sent and read back by this package moved 31 years (2023 came back as 1992),
    /// and a server reading Unix time got the same. Dates are now written as seconds since 1970, as they are read;
    /// strategies set in `configure` are used as before.
    func testADateComesBackAsSent() throws {
        struct Event: Codable, Equatable, Sendable {
            var at: Date
        }
        let event = Event(at: Date(timeIntervalSince1970: 1_700_000_000))
        let body = try XMLBodyEncoder(rootKey: "event").encode(event)
        let text = String(decoding: body, as: UTF8.self)
        XCTAssertTrue(text.contains("<at>1700000000"), text)
        XCTAssertEqual(try XMLBodyDecoder().decode(Event.self, from: body), event, text)
        let fraction = Event(at: Date(timeIntervalSince1970: 1_700_000_000.25))
        let decoded = try XMLBodyDecoder().decode(Event.self, from: XMLBodyEncoder(rootKey: "event").encode(fraction))
        XCTAssertEqual(decoded.at.timeIntervalSince1970, 1_700_000_000.25, accuracy: 0.001)

        let iso = XMLBodyEncoder(rootKey: "event") { $0.dateEncodingStrategy = .iso8601 }
        let isoText = String(decoding: try iso.encode(event), as: UTF8.self)
        XCTAssertTrue(isoText.contains("<at>2023-11-14T22:13:20Z</at>"), isoText)
        let isoDecoder = XMLBodyDecoder { $0.dateDecodingStrategy = .iso8601 }
        XCTAssertEqual(try isoDecoder.decode(Event.self, from: Data(isoText.utf8)), event)
    }

    /// A date of seconds (or milliseconds) since 1970 whose number is infinite, not a number, or out of `Double`'s
    /// range fails as a `DecodingError`, as `JSONDecoder` refuses it: XMLCoder read `1e400`, `inf` and `nan` as a date
    /// that is no point in time (printing it stopped the process) and `1e-400` as the epoch. Numbers that are dates
    /// still decode, an attribute too, and an empty element still fails as no value.
    func testADateWhoseNumberIsNotFiniteFailsAsADecodingError() throws {
        struct Event: Codable, Equatable, Sendable {
            var at: Date
        }
        struct Events: Codable, Equatable, Sendable {
            var at: [Date]
        }
        let milliseconds = XMLBodyDecoder { $0.dateDecodingStrategy = .millisecondsSince1970 }
        let decoders = [XMLBodyDecoder(), XMLBodyDecoder { $0.dateDecodingStrategy = .secondsSince1970 }, milliseconds]
        for (index, decoder) in decoders.enumerated() {
            for number in ["1e400", "-1E400", "inf", "-inf", "INF", "nan", "NaN", "1e-400", "0x1p-5000"] {
                for body in ["<event><at>\(number)</at></event>", #"<event at="\#(number)"/>"#] {
                    XCTAssertThrowsError(try decoder.decode(Event.self, from: Data(body.utf8)), body) { error in
                        guard case .dataCorrupted(let context)? = error as? DecodingError else {
                            return XCTFail("not dataCorrupted: \(error)")
                        }
                        XCTAssertEqual(context.codingPath.map(\.stringValue), ["at"])
                        XCTAssertTrue(context.debugDescription.contains("not finite"), context.debugDescription)
                    }
                }
                let list = Data("<events><at>1</at><at>\(number)</at></events>".utf8)
                XCTAssertThrowsError(try decoder.decode(Events.self, from: list))
            }
            // Finite, but past what a `Date` prints without stopping the process (`time_t`).
            let past = index == 2 ? ["1e22", "-1e22"] : ["1e19", "-1e19", "9.3e18"]
            for number in past {
                let body = Data("<event><at>\(number)</at></event>".utf8)
                XCTAssertThrowsError(try decoder.decode(Event.self, from: body), number) { error in
                    guard case .dataCorrupted(let context)? = error as? DecodingError else {
                        return XCTFail("not dataCorrupted: \(error)")
                    }
                    XCTAssertTrue(context.debugDescription.contains("past any date"), context.debugDescription)
                }
            }
            let farthest = try decoder.decode(Event.self, from: Data("<event><at>253402300799</at></event>".utf8))
            XCTAssertFalse("\(farthest.at)".isEmpty, "year 9999, a common 'never', decodes and prints")
        }
        for (number, seconds) in [("1700000000", 1_700_000_000.0), ("0", 0), ("-0.0e-400", 0), ("4.9e-324", 0)] {
            let body = Data("<event><at>\(number)</at></event>".utf8)
            XCTAssertEqual(try XMLBodyDecoder().decode(Event.self, from: body).at.timeIntervalSince1970, seconds)
        }
        let attribute = Data(#"<event at="1700000000"/>"#.utf8)
        XCTAssertEqual(try XMLBodyDecoder().decode(Event.self, from: attribute).at.timeIntervalSince1970, 1_700_000_000)
        let late = Data("<event><at>1700000000250</at></event>".utf8)
        XCTAssertEqual(
            try milliseconds.decode(Event.self, from: late).at.timeIntervalSince1970, 1_700_000_000.25, accuracy: 0.001)
        XCTAssertThrowsError(try XMLBodyDecoder().decode(Event.self, from: Data("<event><at/></event>".utf8))) {
            guard case .valueNotFound? = $0 as? DecodingError else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try XMLBodyDecoder().decode(Event.self, from: Data("<event><at>x</at></event>".utf8))) {
            guard case .dataCorrupted? = $0 as? DecodingError else { return XCTFail("\($0)") }
        }
    }

    /// Content after the root element makes no XML document (a second document, a PHP warning printed after the
    /// answer): the parser stopped there, and the first document decoded as if the rest were not there. White space,
    /// comments and processing instructions after it are XML's own, and still decode.
    func testContentAfterTheRootElementFailsWithADecodingError() throws {
        let book = "<book><id>1</id><title>Dune</title></book>"
        // The last with a namespace prefix it does not declare, which the parser reports first.
        for (book, trailing) in [
            (book, "<book><id>2</id><title>Emma</title></book>"), (book, "\n<br />\n<b>Warning</b>: headers"),
            (book, "text"), ("<s:book><id>1</id><title>Dune</title></s:book>", "<s:book/>"),
        ] {
            let transport = FakeTransport.answering(
                .data(Data((book + trailing).utf8), headers: ["Content-Type": "application/xml"]))
            XCTAssertThrowsError(
                try client(transport).request(Route(url: url)).decoded(toType: Book.self).wait(timeout: 5), trailing
            ) { error in
                let error = error as? ConnectError
                XCTAssertEqual(error?.kind, .decoding, trailing)
                XCTAssertTrue(error?.message.contains("after its root element") == true, error?.message ?? "")
            }
        }
        // A document cut short, or whose tags do not match, is not said to have content after its root: it fails with
        // the parser's own error.
        for broken in ["<book><id>1</id><title>Dune</title>", "<book><id>1</id><title>Dune</book>"] {
            let transport = FakeTransport.answering(
                .data(Data(broken.utf8), headers: ["Content-Type": "application/xml"]))
            XCTAssertThrowsError(
                try client(transport).request(Route(url: url)).decoded(toType: Book.self).wait(timeout: 5), broken
            ) { error in
                let error = error as? ConnectError
                XCTAssertEqual(error?.kind, .decoding, broken)
                XCTAssertFalse(error?.message.contains("after its root element") == true, error?.message ?? "")
            }
        }
        let allowed = book + "\n<!-- served by api-7 -->\n<?cache hit?>\n"
        let transport = FakeTransport.answering(
            .data(Data(allowed.utf8), headers: ["Content-Type": "application/xml"]))
        let decoded = try client(transport).request(Route(url: url)).decoded(toType: Book.self).wait(timeout: 5)
        XCTAssertEqual(decoded.title, "Dune")
    }

    func testAnXMLBodyIsEncodedWithItsContentType() throws {
        let book = Book(id: 7, title: "Fish & Chips <2>", tags: ["food"])
        let request = try Route(url: url, method: .post, parameters: Parameter.xml(book, rootKey: "book"))
            .asURLRequest()
        XCTAssertEqual(request.value(forHTTPHeaderField: "Content-Type"), "application/xml; charset=utf-8")
        let body = try XCTUnwrap(request.httpBody.map { String(decoding: $0, as: UTF8.self) })
        XCTAssertTrue(body.hasPrefix(#"<?xml version="1.0" encoding="UTF-8"?>"#), body)
        XCTAssertTrue(body.contains("<title>Fish &amp; Chips &lt;2&gt;</title>"), body)
        XCTAssertEqual(try XMLBodyDecoder().decode(Book.self, from: Data(body.utf8)), book)
    }

    /// A value that is a text, a number, a date or `nil` alone is written as the root element's text
    /// (`<value>hello</value>`), and decodes back as sent: XMLCoder stopped the process on such a value ("Unrecognized
    /// top-level element of type: StringBox"). A value that encodes another through a single-value container (a
    /// wrapper) is written as that one is.
    func testASingleValueIsTheRootElementsTextNotACrash() throws {
        enum Status: String, Codable, Sendable {
            case active
        }
        struct Wrapper: Encodable {
            var book: Book

            func encode(to encoder: any Encoder) throws {
                var container = encoder.singleValueContainer()
                try container.encode(book)
            }
        }
        let encoder = XMLBodyEncoder(rootKey: "value")
        let decoder = XMLBodyDecoder()
        let text = try encoder.encode("Fish & Chips <2>")
        XCTAssertTrue(
            String(decoding: text, as: UTF8.self).hasSuffix("<value>Fish &amp; Chips &lt;2&gt;</value>"),
            String(decoding: text, as: UTF8.self))
        XCTAssertEqual(try decoder.decode(String.self, from: text), "Fish & Chips <2>")
        XCTAssertEqual(try decoder.decode(Int.self, from: encoder.encode(42)), 42)
        XCTAssertEqual(try decoder.decode(Bool.self, from: encoder.encode(true)), true)
        XCTAssertEqual(try decoder.decode(Status.self, from: encoder.encode(Status.active)), .active)
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        XCTAssertEqual(try decoder.decode(Date.self, from: encoder.encode(date)), date)
        let url = try XCTUnwrap(URL(string: "https://api.test/a?b=1&c=2"))
        XCTAssertEqual(try decoder.decode(URL.self, from: encoder.encode(url)), url)
        let amount = try XCTUnwrap(Decimal(string: "12.5"))
        XCTAssertEqual(try decoder.decode(Decimal.self, from: encoder.encode(amount)), amount)
        XCTAssertEqual(try decoder.decode(Data.self, from: encoder.encode(Data([1, 2, 3]))), Data([1, 2, 3]))
        XCTAssertEqual(try decoder.decode(Int?.self, from: encoder.encode(Int?.some(7))), 7)
        let none = String(decoding: try encoder.encode(String?.none), as: UTF8.self)
        XCTAssertTrue(none.hasSuffix("<value />"), none)
        let book = Book(id: 1, title: "Dune", tags: ["sf"])
        XCTAssertEqual(try encoder.encode(Wrapper(book: book)), try encoder.encode(book))
        // Through a client, unnamed: the root is named after the type.
        let request = try Route(url: url, method: .post, parameters: Parameter.xml("hello")).asURLRequest()
        let body = try XCTUnwrap(request.httpBody.map { String(decoding: $0, as: UTF8.self) })
        XCTAssertTrue(body.hasSuffix("<String>hello</String>"), body)
    }

    /// A root named after a generic type (`Array<Book>`) would be no XML: the request fails unsent instead; a plain
    /// type's name still names it.
    func testARootNamedAfterAGenericTypeIsRefusedNotSentAsBrokenXML() throws {
        let books = [Book(id: 1, title: "Dune", tags: [])]
        XCTAssertThrowsError(try Route(url: url, method: .post, parameters: Parameter.xml(books)).asURLRequest()) {
            error in
            XCTAssertEqual((error as? ConnectError)?.kind, .invalidRequest)
            XCTAssertTrue("\(error)".contains("rootKey"), "\(error)")
        }
        // The error names the type, not the value, whose text the request's error shows (it may hold a password).
        let secret = Book(id: 1, title: "hunter2", tags: [])
        XCTAssertThrowsError(
            try Route(url: url, method: .post, parameters: Parameter.xml(secret, rootKey: "two words")).asURLRequest()
        ) { error in
            XCTAssertTrue("\(error)".contains("two words"), "\(error)")
            XCTAssertFalse("\(error)".contains("hunter2"), "the error shows the value: \(error)")
        }
        let named = try Route(url: url, method: .post, parameters: Parameter.xml(books[0])).asURLRequest()
        let body = try XCTUnwrap(named.httpBody.map { String(decoding: $0, as: UTF8.self) })
        XCTAssertTrue(body.contains("<Book>"), body)
    }

    /// What XML 1.0 cannot carry (a control character such as ESC or NUL, a key that is no element name) fails to
    /// encode, nothing sent: XMLCoder wrote it as it was, and the server got a document it cannot parse.
    func testWhatXMLCannotCarryIsRefusedNotSentAsBrokenXML() throws {
        let transport = FakeTransport()
        transport.stub(.post, "/shelf", with: .status(201))
        let bodies: [Parameter] = [
            Parameter.xml(Book(id: 1, title: "colour \u{1B}[31mred", tags: []), rootKey: "book"),
            Parameter.xml(Book(id: 1, title: "nul\u{0}", tags: []), rootKey: "book"),
            Parameter.xml(["two words": "x"], rootKey: "fields"),
        ]
        for body in bodies {
            let route = Route(url: url, method: .post, parameters: body)
            XCTAssertThrowsError(try client(transport).request(route).wait(timeout: 5)) { error in
                guard case .bodyEncodingFailed(let reason)? = (error as? ConnectError)?.invalidRequestReason else {
                    return XCTFail("\(error)")
                }
                // A key is refused by name before the document is judged.
                XCTAssertTrue(reason.contains("not well-formed") || reason.contains("is not an XML name"), reason)
            }
        }
        XCTAssertEqual(transport.requests.count, 0, "a document the server cannot parse was sent")
    }

    /// A key that is no XML name fails to encode, nothing sent, as an element or an attribute, whatever the key
    /// strategy, and so does such a root name: a key with markup in it (`a>b`) was written as a well-formed document of
    /// another shape (`<a>b>x</a>b>`: an element `a`, then the text `b>`), and one with two colons (`a:b:c`), or a
    /// colon first or last, as a document no namespace-aware parser reads. The error names the key.
    func testAKeyThatIsNoXMLNameIsRefusedNotSentAsAnotherDocument() throws {
        let encoders = [
            XMLBodyEncoder(rootKey: "fields"),
            XMLBodyEncoder(rootKey: "fields") { $0.nodeEncodingStrategy = .custom { _, _ in { _ in .attribute } } },
            XMLBodyEncoder(rootKey: "fields") { $0.keyEncodingStrategy = .convertToSnakeCase },
            XMLBodyEncoder(rootKey: "fields") { $0.keyEncodingStrategy = .custom { $0.last! } },
        ]
        for key in ["a>b", "a:b:c", ":a", "a:", "a:1", "1abc", "a b", "a/b", "a=b", "a:\u{300}b"] {
            for (index, encoder) in encoders.enumerated() {
                XCTAssertThrowsError(try encoder.encode([key: "x"]), "\(key.debugDescription), encoder \(index)") {
                    XCTAssertTrue("\($0)".contains("is not an XML name"), "\($0)")
                }
            }
            XCTAssertThrowsError(try XMLBodyEncoder(rootKey: key).encode(["id": 1]), key.debugDescription) {
                XCTAssertTrue("\($0)".contains("is not an XML element name"), "\($0)")
            }
        }
        let renamed = XMLBodyEncoder(rootKey: "fields") {
            $0.keyEncodingStrategy = .custom { _ in XMLName.Key(stringValue: "a>b") }
        }
        XCTAssertThrowsError(try renamed.encode(["ok": "x"])) { XCTAssertTrue("\($0)".contains("'a>b'"), "\($0)") }
        // Names XML allows go out and come back as before: a prefix, letters of any script, a name led by `xml`, and
        // the element's own text (the key "").
        for key in ["soap:Body", "prénom", "名前", "xmlLang", "a-b.c_d·e", "_x", "a\u{300}"] {
            for (index, encoder) in encoders.enumerated() {
                let body = try encoder.encode([key: "x"])
                // The snake-case encoder (2) renames the key.
                guard index != 2 else { continue }
                XCTAssertEqual(try XMLBodyDecoder().decode([String: String].self, from: body), [key: "x"])
            }
        }
        let text = try XMLBodyEncoder(rootKey: "fields").encode(["": "x"])
        XCTAssertTrue(String(decoding: text, as: UTF8.self).hasSuffix("<fields>x</fields>"))
    }

    /// With XMLCoder's `.cdata` string strategy, a value a CDATA section cannot carry as it is fails to encode, nothing
    /// sent: XMLCoder wrote it inside `<![CDATA[…]]>` as it was, so `]]>` in a value ended the section and what
    /// followed was read as markup (`x]]><admin>true</admin><![CDATA[` gave the server an element of the sender's
    /// choosing), and a carriage return reached it as a line feed. Any other value, markup included, goes out as a
    /// CDATA section as before.
    func testAValueACDATASectionCannotCarryIsRefused() throws {
        struct Note: Codable, Equatable, Sendable {
            var title: String
        }
        let encoder = XMLBodyEncoder(rootKey: "note") { $0.stringEncodingStrategy = .cdata }
        for title in ["x]]><admin>true</admin><![CDATA[y", "x]]>y", "]]>", "one\r\ntwo"] {
            XCTAssertThrowsError(try encoder.encode(Note(title: title)), title.debugDescription) { error in
                XCTAssertTrue("\(error)".contains("CDATA"), "\(error)")
                XCTAssertFalse("\(error)".contains("admin"), "the error shows the value: \(error)")
            }
        }
        // The parser does not judge the characters of a CDATA section: a control character in one was sent.
        XCTAssertThrowsError(try encoder.encode(Note(title: "colour \u{1B}[31mred"))) { error in
            XCTAssertTrue("\(error)".contains("not well-formed"), "\(error)")
        }
        for title in ["<b>bold</b> & more", "a <![CDATA[ b", "x]] >y", "]]", "one\ntwo", ""] {
            let body = try encoder.encode(Note(title: title))
            let text = String(decoding: body, as: UTF8.self)
            XCTAssertTrue(title.isEmpty || text.contains("<![CDATA["), text)
            let decoder = XMLBodyDecoder { $0.trimValueWhitespaces = false }
            XCTAssertEqual(try decoder.decode(Note.self, from: body).title, title)
        }
    }

    /// The check judges no body by the XML parser's own limits: a text over its 10 MB (a large file in base64), a
    /// name over its 50,000 characters and an undeclared namespace prefix go out as before.
    func testABodyPastTheParsersLimitsOrWithAnUndeclaredPrefixIsStillSent() throws {
        let large = String(repeating: "QUJD", count: 3_000_000)
        let longName = String(repeating: "n", count: 60_000)
        for fields in [["data": large], [longName: "x"], ["soap:Body": "x"]] {
            let body = try XMLBodyEncoder(rootKey: "fields").encode(fields)
            XCTAssertTrue(String(decoding: body, as: UTF8.self).hasSuffix("</fields>"))
        }
    }

    /// A carriage return in a value arrives as sent: written as it is, every XML parser reads it as a line feed (XML
    /// 1.0 §2.11), and in an attribute as a space (§3.3.3), as it does a line feed and a tab.
    func testLineBreaksAndTabsArriveAsSent() throws {
        struct Note: Codable, Equatable, Sendable {
            var title: String
            var lang: String
        }
        let note = Note(title: "one\r\ntwo\rthree\n\tfour", lang: "en\r\n\tus")
        let encoder = XMLBodyEncoder(rootKey: "note") { encoder in
            encoder.nodeEncodingStrategy = .custom { _, _ in
                { key in key.stringValue == "lang" ? .attribute : .element }
            }
        }
        let body = try encoder.encode(note)
        let decoder = XMLBodyDecoder { $0.trimValueWhitespaces = false }
        XCTAssertEqual(try decoder.decode(Note.self, from: body), note, String(decoding: body, as: UTF8.self))
    }

    /// A body sent with another charset than UTF-8 in its `Content-Type` is written in that charset, its declaration
    /// naming it: sent as UTF-8 under that label, the server read `Café` as `CafÃ©` (in US-ASCII, as a character
    /// reference). A charset the encoder does not write fails to encode, nothing sent.
    func testABodyIsWrittenInTheCharsetItsContentTypeNames() throws {
        let book = Book(id: 7, title: "Café crème", tags: ["Grüße"])
        for contentType in [
            "text/xml; charset=ISO-8859-1", "application/xml; charset=\"utf-16\"", "application/xml;charset=us-ascii",
        ] {
            let encoder = XMLBodyEncoder(rootKey: "book", contentType: contentType)
            let body = try encoder.encode(book)
            // As the server reads it: by the charset of the Content-Type, or by the declaration alone.
            XCTAssertEqual(try XMLBodyDecoder().decode(Book.self, from: body, contentType: contentType), book)
            XCTAssertEqual(try XMLBodyDecoder().decode(Book.self, from: body), book, contentType)
        }
        XCTAssertThrowsError(
            try XMLBodyEncoder(rootKey: "book", contentType: "text/xml; charset=x-unknown").encode(book)
        ) { error in
            XCTAssertTrue("\(error)".contains("x-unknown"), "\(error)")
        }
        // UTF-8, named or not, is written as before.
        let plain = try XMLBodyEncoder(rootKey: "book", contentType: "text/xml").encode(book)
        XCTAssertEqual(plain, try XMLBodyEncoder(rootKey: "book").encode(book))
    }

    /// A connector's `Content-Type` naming another charset than the encoder's fails the request, nothing sent: the
    /// UTF-8 body went out labelled ISO-8859-1, and the server read `Café` as `CafÃ©`. The encoder given that type
    /// writes the body in it.
    func testAConnectorsContentTypeNamingAnotherCharsetFailsInsteadOfMislabellingTheBody() throws {
        let book = Book(id: 7, title: "Café", tags: [])
        let latin1 = "text/xml; charset=ISO-8859-1"
        let mislabelled = Route(
            url: url, method: .post, parameters: Parameter.xml(book, rootKey: "book"), headers: [.contentType(latin1)])
        XCTAssertThrowsError(try mislabelled.asURLRequest()) { error in
            guard case .bodyEncodingFailed(let reason)? = (error as? ConnectError)?.invalidRequestReason else {
                return XCTFail("\(error)")
            }
            XCTAssertTrue(reason.contains("ISO-8859-1"), reason)
        }
        let encoder = XMLBodyEncoder(rootKey: "book", contentType: latin1)
        let request = try Route(
            url: url, method: .post, parameters: Parameter.encoded(value: book, encoder: encoder),
            headers: [.contentType(latin1)]
        ).asURLRequest()
        let body = try XCTUnwrap(request.httpBody)
        XCTAssertTrue(body.contains(0xE9), "not Latin-1")
        XCTAssertEqual(try XMLBodyDecoder().decode(Book.self, from: body, contentType: latin1), book)
    }

    /// A body in UTF-32, as its `Content-Type` names it, is written: the check that what is sent is well-formed read
    /// it with a parser that takes UTF-32's byte order mark for UTF-16's and does not read little-endian UTF-32 without
    /// one, so every such body failed to encode as "not well-formed", nothing sent. A value XML cannot carry still
    /// fails.
    func testAUTF32BodyIsWritten() throws {
        let book = Book(id: 7, title: "Café 🎉", tags: ["Grüße"])
        for contentType in [
            "application/xml; charset=utf-32", "application/xml; charset=UTF-32LE", "application/xml; charset=utf-32be",
        ] {
            let body = try XMLBodyEncoder(rootKey: "book", contentType: contentType).encode(book)
            XCTAssertEqual(body.count % 4, 0, contentType)
            XCTAssertEqual(try XMLBodyDecoder().decode(Book.self, from: body, contentType: contentType), book)
            let broken = Book(id: 7, title: "a\u{1B}b", tags: [])
            XCTAssertThrowsError(try XMLBodyEncoder(rootKey: "book", contentType: contentType).encode(broken)) {
                XCTAssertTrue("\($0)".contains("not well-formed"), "\($0)")
            }
        }
    }

    /// A character the body's charset cannot carry, in a text or an attribute value, is written as a character
    /// reference (`&#xE9;`), which every XML parser reads as that character: a US-ASCII or ISO-8859-1 body carries
    /// any text. In a name, where XML allows no reference, it fails to encode, nothing written.
    func testACharacterTheCharsetCannotCarryIsWrittenAsACharacterReference() throws {
        struct Note: Codable, Equatable, Sendable {
            var title: String
            var lang: String
        }
        let note = Note(title: "Café crème, 5 € 🎉 <&>", lang: "fr-ç")
        for contentType in ["application/xml; charset=us-ascii", "text/xml; charset=ISO-8859-1"] {
            let encoder = XMLBodyEncoder(rootKey: "note", contentType: contentType) { encoder in
                encoder.nodeEncodingStrategy = .custom { _, _ in
                    { key in key.stringValue == "lang" ? .attribute : .element }
                }
            }
            let body = try encoder.encode(note)
            let limit: UInt8 = contentType.hasSuffix("us-ascii") ? 0x7F : 0xFF
            XCTAssertTrue(body.allSatisfy { $0 <= limit }, contentType)
            let text = String(decoding: body, as: UTF8.self)
            XCTAssertTrue(text.contains("&#x20AC;") && text.contains("&#x1F389;"), text)
            // As the server reads it: by the charset of the Content-Type, or by the declaration alone.
            let decoder = XMLBodyDecoder()
            XCTAssertEqual(try decoder.decode(Note.self, from: body, contentType: contentType), note, text)
            XCTAssertEqual(try decoder.decode(Note.self, from: body), note, text)
        }
        XCTAssertThrowsError(
            try XMLBodyEncoder(rootKey: "fields", contentType: "application/xml; charset=us-ascii")
                .encode(["prénom": "Zoé"])
        ) { error in
            XCTAssertTrue("\(error)".contains("us-ascii"), "\(error)")
        }
        // Nor in a CDATA section, where a reference is read as its own characters.
        let cdata = XMLBodyEncoder(rootKey: "note", contentType: "application/xml; charset=us-ascii") {
            $0.stringEncodingStrategy = .cdata
        }
        XCTAssertNoThrow(try cdata.encode(Note(title: "plain", lang: "en")))
        XCTAssertThrowsError(try cdata.encode(note)) { error in
            XCTAssertTrue("\(error)".contains("CDATA"), "\(error)")
        }
    }

    /// What comes back of `nil`, of empty and of padded values, as the encoder's and decoder's documentation says:
    /// XMLCoder decides it in its unboxing, which offers no hook. A `nil` property is no element and comes back `nil`;
    /// `""` is an empty element and comes back `""`, as an empty element read into a `String?` does; an empty element
    /// read into an `Int?` fails; `nil` in an array is an empty element, and comes back `""`; an array of one element
    /// or none comes back as sent; a text's white space at its ends is trimmed unless the decoder keeps it, an
    /// attribute's is kept.
    func testNilEmptyAndPaddedValuesComeBackAsDocumented() throws {
        struct Form: Codable, Equatable, Sendable {
            var title: String?
            var count: Int?
            var tag: [String]
            var note: [String?]
        }
        let encoder = XMLBodyEncoder(rootKey: "form")
        let decoder = XMLBodyDecoder()
        func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

        let absent = try encoder.encode(Form(title: nil, count: nil, tag: [], note: []))
        XCTAssertTrue(text(absent).hasSuffix("<form />"), text(absent))
        XCTAssertEqual(try decoder.decode(Form.self, from: absent), Form(title: nil, count: nil, tag: [], note: []))

        let empty = try encoder.encode(Form(title: "", count: 0, tag: ["only"], note: ["a", nil]))
        XCTAssertTrue(
            text(empty).hasSuffix("<form><title></title><count>0</count><tag>only</tag><note>a</note><note /></form>"),
            text(empty))
        XCTAssertEqual(
            try decoder.decode(Form.self, from: empty), Form(title: "", count: 0, tag: ["only"], note: ["a", ""]))

        let emptyElements = Data("<form><title/><tag/></form>".utf8)
        XCTAssertEqual(
            try decoder.decode(Form.self, from: emptyElements), Form(title: "", count: nil, tag: [""], note: []))
        XCTAssertThrowsError(try decoder.decode(Form.self, from: Data("<form><count/></form>".utf8))) { error in
            guard case .valueNotFound? = error as? DecodingError else { return XCTFail("\(error)") }
        }

        struct Flags: Codable, Sendable {
            var done: Bool?
            var due: Date?
        }
        for body in ["<flags><done/></flags>", "<flags><due/></flags>"] {
            XCTAssertThrowsError(try decoder.decode(Flags.self, from: Data(body.utf8)), body) { error in
                guard case .valueNotFound? = error as? DecodingError else { return XCTFail("\(error)") }
            }
        }

        struct Padded: Codable, Equatable, Sendable {
            var text: String
            var lang: String
        }
        let padded = XMLBodyEncoder(rootKey: "padded") { encoder in
            encoder.nodeEncodingStrategy = .custom { _, _ in
                { key in key.stringValue == "lang" ? .attribute : .element }
            }
        }
        let body = try padded.encode(Padded(text: "  two words \n", lang: " en "))
        XCTAssertEqual(try decoder.decode(Padded.self, from: body), Padded(text: "two words", lang: " en "))
        let keeping = XMLBodyDecoder { $0.trimValueWhitespaces = false }
        XCTAssertEqual(try keeping.decode(Padded.self, from: body), Padded(text: "  two words \n", lang: " en "))
    }

    /// Through a client, the body reaches the transport as encoded, and the XML answer decodes.
    func testARoundTripThroughAClient() throws {
        let transport = FakeTransport()
        transport.stub(
            .post, "/shelf",
            with: .handler { request in
                guard
                    let answer = ConnectResponse(
                        request: request, statusCode: 201, headers: ["Content-Type": "text/xml"],
                        data: request.httpBody ?? Data())
                else { return .failure(URLError(.badURL)) }
                return .success(answer)
            })
        let book = Book(id: 9, title: "Echo", tags: [])
        let echoed = try client(transport)
            .request(Route(url: url, method: .post, parameters: Parameter.xml(book, rootKey: "book")))
            .decoded(toType: Book.self).wait(timeout: 5)
        XCTAssertEqual(echoed, book)
    }

    private struct Receipt: Codable, Equatable, Sendable {
        var number: Int
    }

    /// The README's XML example, verbatim, against a server that answers with an XML receipt.
    func testReadmeExample() async throws {
        let transport = FakeTransport()
        transport.stub(
            .post, "/orders",
            with: .data(
                Data("<receipt><number>42</number></receipt>".utf8), headers: ["Content-Type": "application/xml"]))
        let newOrder = Book(id: 1, title: "Order", tags: [])
        let ordersURL = URL(string: "https://api.test/orders")!

        let connect = Connect(transport: transport, settings: Connect.Settings(decoders: .default.withXML()))
        let order = Route(url: ordersURL, method: .post, parameters: Parameter.xml(newOrder, rootKey: "order"))
        let receipt = try await connect.request(order).decoded(toType: Receipt.self).value

        XCTAssertEqual(receipt, Receipt(number: 42))
        let sent = try XCTUnwrap(transport.requests.first?.httpBody.map { String(decoding: $0, as: UTF8.self) })
        XCTAssertTrue(sent.contains("<order><id>1</id><title>Order</title></order>"), sent)
    }
}
