import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The body-encoder seam (`Parameter.encoded(value:encoder:)`) that formats other than JSON plug into.
final class EncodedBodyTests: XCTestCase {
    private struct Settings: Codable, Equatable {
        var theme: String
        var volume: Int
    }

    private struct Refusing: RequestBodyEncoder {
        struct Refused: Error {}
        var contentType: String { "text/csv" }
        func encode<T: Encodable>(_ value: T) throws -> Data { throw Refused() }
    }

    private struct Lying: RequestBodyEncoder {
        var contentType: String { "text/csv\r\nX-Injected: 1" }
        func encode<T: Encodable>(_ value: T) throws -> Data { Data("a,b".utf8) }
    }

    private struct Typeless: RequestBodyEncoder {
        var contentType: String
        func encode<T: Encodable>(_ value: T) throws -> Data { Data("a,b".utf8) }
    }

    private func route(_ parameters: any ParametersRepresentable, headers: [HTTPHeader] = []) -> Route {
        Route(url: URL(string: "https://api.test/settings")!, method: .put, parameters: parameters, headers: headers)
    }

    func testAnEncoderWritesTheBodyWithItsContentType() throws {
        let settings = Settings(theme: "dark", volume: 7)
        let request = try route(Parameter.encoded(value: settings, encoder: PropertyListEncoder())).asURLRequest()
        XCTAssertEqual(request.value(forHTTPHeaderField: "Content-Type"), "application/x-plist")
        let body = try XCTUnwrap(request.httpBody)
        XCTAssertEqual(try PropertyListDecoder().decode(Settings.self, from: body), settings)
    }

    func testTheConnectorsContentTypeWinsAndPathValuesStillApply() throws {
        let request = try Route(
            url: URL(string: "https://api.test")!, method: .put,
            parameters: CompositeParameters(
                .query(key: "v", value: "2"),
                .encoded(value: Settings(theme: "x", volume: 1), encoder: PropertyListEncoder())),
            headers: [.contentType("application/vnd.app+plist")]
        ).asURLRequest()
        XCTAssertEqual(request.value(forHTTPHeaderField: "Content-Type"), "application/vnd.app+plist")
        XCTAssertEqual(request.url?.query, "v=2")
    }

    func testARefusedValueOrABadContentTypeFailsTheBuild() {
        XCTAssertThrowsError(try route(Parameter.encoded(value: 1, encoder: Refusing())).asURLRequest()) { error in
            guard case .bodyEncodingFailed? = (error as? ConnectError)?.invalidRequestReason else {
                return XCTFail("\(error)")
            }
            XCTAssertTrue((error as? ConnectError)?.underlyingError is Refusing.Refused)
        }
        XCTAssertThrowsError(try route(Parameter.encoded(value: 1, encoder: Lying())).asURLRequest()) { error in
            XCTAssertEqual((error as? ConnectError)?.invalidRequestReason, .invalidHeader(name: "Content-Type"))
        }
        let twoBodies = CompositeParameters(
            .jsonObject(value: 1), .encoded(value: 1, encoder: PropertyListEncoder()))
        XCTAssertThrowsError(try route(twoBodies).asURLRequest()) { error in
            XCTAssertEqual((error as? ConnectError)?.invalidRequestReason, .multipleBodies)
        }
    }

    func testAnEncoderWithABlankContentTypeSendsNoContentTypeField() throws {
        for blank in ["", " ", "\t", " \t "] {
            // Given
            let typeless = route(Parameter.encoded(value: 1, encoder: Typeless(contentType: blank)))
            let transport = FakeTransport.answering(.status(204))

            // When
            let built = try typeless.asURLRequest()
            let sent = value(of: Connect(transport: transport, retryPolicy: nil).response(for: typeless))

            // Then: no empty `Content-Type:` line, as for a raw body without a type; the body still goes
            XCTAssertNil(built.value(forHTTPHeaderField: "Content-Type"), "\(blank.debugDescription)")
            XCTAssertEqual(sent?.statusCode, 204)
            let request = try XCTUnwrap(transport.requests.first)
            XCTAssertNil(request.value(forHTTPHeaderField: "Content-Type"), "\(blank.debugDescription)")
            XCTAssertEqual(request.httpBody, Data("a,b".utf8))
        }
    }

    func testAnEncoderWithABlankContentTypeLeavesTheClientsDefaultType() throws {
        // Given: a client whose default headers name a type
        let transport = FakeTransport.answering(.status(204))
        let client = Connect(
            transport: transport, retryPolicy: nil,
            settings: Connect.Settings(defaultHeaders: [.contentType("text/csv")]))

        // When
        _ = value(of: client.response(for: route(Parameter.encoded(value: 1, encoder: Typeless(contentType: " ")))))

        // Then
        XCTAssertEqual(transport.requests.first?.value(forHTTPHeaderField: "Content-Type"), "text/csv")
    }

    /// A connector's blank `Content-Type` header leaves the client's default type, as an encoder's blank type does
    /// (it sent an empty `Content-Type:` field, keeping the default out).
    func testABlankContentTypeHeaderLeavesTheClientsDefaultType() throws {
        // Given
        let transport = FakeTransport.answering(.status(204))
        let client = Connect(
            transport: transport, retryPolicy: nil,
            settings: Connect.Settings(defaultHeaders: [.contentType("text/csv")]))
        let blank = route(Parameter.body(Data("a,b".utf8), contentType: ""), headers: [.contentType("  ")])

        // When
        _ = value(of: client.response(for: blank))

        // Then
        XCTAssertEqual(transport.requests.first?.value(forHTTPHeaderField: "Content-Type"), "text/csv")
    }

    /// A `JSONObject` is placed by the type the request goes with: a connector's blank type names none, so the
    /// client's default form type places it as a form, and the body is what its `Content-Type` says.
    func testABlankContentTypeHeaderPlacesAJSONObjectByTheClientsDefaultType() throws {
        // Given
        let transport = FakeTransport.answering(.status(204))
        let client = Connect(
            transport: transport, retryPolicy: nil,
            settings: Connect.Settings(defaultHeaders: [.contentType("application/x-www-form-urlencoded")]))
        let object: JSONObject = ["a": 1]

        // When
        _ = value(of: client.response(for: route(object, headers: [.contentType(" ")])))

        // Then
        let sent = try XCTUnwrap(transport.requests.first)
        let type = try XCTUnwrap(sent.value(forHTTPHeaderField: "Content-Type"))
        XCTAssertTrue(type.hasPrefix("application/x-www-form-urlencoded"), type)
        XCTAssertEqual(sent.httpBody, Data("a=1".utf8))
    }

    /// A client's default form type naming a charset (a legacy server's Latin-1) is the type the form goes with, and
    /// the body is escaped for it: the default made the object a form, then the request went out as UTF-8
    /// (`Jos%C3%A9` under `charset=utf-8`), unlike the same header set on the connector.
    func testAClientsDefaultFormTypeKeepsItsCharsetAndEscapesTheBodyInIt() throws {
        let latin = "application/x-www-form-urlencoded; charset=iso-8859-1"
        let settings = [
            Connect.Settings(defaultHeaders: [.contentType(latin)]),
            Connect.Settings(methodOptions: [.put: RequestOptions(headers: [.contentType(latin)])]),
        ]
        for setting in settings {
            // Given
            let transport = FakeTransport.answering(.status(204))
            let client = Connect(transport: transport, retryPolicy: nil, settings: setting)
            let object: JSONObject = ["name": "Jos\u{E9}"]

            // When
            _ = value(of: client.response(for: route(object)))

            // Then
            let sent = try XCTUnwrap(transport.requests.first)
            XCTAssertEqual(sent.value(forHTTPHeaderField: "Content-Type"), latin)
            XCTAssertEqual(sent.httpBody.map { String(decoding: $0, as: UTF8.self) }, "name=Jos%E9")
        }
    }

    /// A blank `Content-Type` in a call's options or a client's default headers means none too: the body's type goes.
    func testABlankContentTypeInOptionsOrDefaultsMeansNone() throws {
        let body = Parameter.body(Data("a,b".utf8), contentType: "text/csv")
        for blank in ["", "  "] {
            // Given: the call's options
            let transport = FakeTransport.answering(.status(204))
            let client = Connect(transport: transport, retryPolicy: nil)

            // When
            _ = value(of: client.response(for: route(body), options: RequestOptions(headers: [.contentType(blank)])))

            // Then
            XCTAssertEqual(
                transport.requests.first?.value(forHTTPHeaderField: "Content-Type"), "text/csv", blank.debugDescription)

            // Given: the client's default headers, and no body type
            let defaults = FakeTransport.answering(.status(204))
            let defaulted = Connect(
                transport: defaults, retryPolicy: nil, settings: Connect.Settings(defaultHeaders: [.contentType(blank)])
            )

            // When
            _ = value(of: defaulted.response(for: route(Parameter.body(Data("a,b".utf8), contentType: ""))))

            // Then
            XCTAssertNil(defaults.requests.first?.value(forHTTPHeaderField: "Content-Type"), blank.debugDescription)
        }
    }

    /// A `Content-Type` set on the connector or in a call's options whose charset is not the one the encoder's own
    /// type names fails the request, nothing sent: the body went out in the encoder's charset under the other label,
    /// and a server reading by that label read `Café` (UTF-8) as `CafÃ©`. The same charset (in any case, or by another
    /// name), or a type naming none, goes as before; so does any type when the encoder names no charset.
    func testAContentTypeNamingAnotherCharsetThanTheEncodersFailsTheRequest() throws {
        let encoded = Parameter.encoded(value: 1, encoder: Typeless(contentType: "text/csv; charset=utf-8"))
        XCTAssertThrowsError(
            try route(encoded, headers: [.contentType("text/csv; charset=ISO-8859-1")]).asURLRequest()
        ) { error in
            guard case .bodyEncodingFailed(let reason)? = (error as? ConnectError)?.invalidRequestReason else {
                return XCTFail("\(error)")
            }
            XCTAssertTrue(reason.contains("ISO-8859-1") && reason.contains("utf-8"), reason)
        }

        // Given: the call's options name another charset
        let transport = FakeTransport.answering(.status(204))
        let client = Connect(transport: transport, retryPolicy: nil)

        // When
        let result = self.result(
            of: client.response(
                for: route(encoded), options: RequestOptions(headers: [.contentType("text/csv; charset=utf-16")])))

        // Then
        guard case .failure(let error) = result,
            case .bodyEncodingFailed? = (error as? ConnectError)?.invalidRequestReason
        else { return XCTFail(String(describing: result)) }
        XCTAssertEqual(transport.requests.count, 0)

        for type in ["text/csv; charset=UTF-8", "text/csv;charset=\"utf8\"", "application/vnd.app+csv"] {
            let request = try route(encoded, headers: [.contentType(type)]).asURLRequest()
            XCTAssertEqual(request.value(forHTTPHeaderField: "Content-Type"), type)
        }
        let plist = Parameter.encoded(value: Settings(theme: "x", volume: 1), encoder: PropertyListEncoder())
        XCTAssertNoThrow(
            try route(plist, headers: [.contentType("application/x-plist; charset=utf-16")]).asURLRequest())
        // Other names of one charset are that charset, as a form's charset reads them (one table for both).
        for (written, named) in [
            ("ISO-8859-1", "ISO_8859-1:1987"), ("windows-1252", "cp1252"), ("us-ascii", "iso-ir-6"),
            ("US-ASCII", "iso646-us"),
        ] {
            let latin = Parameter.encoded(value: 1, encoder: Typeless(contentType: "text/csv; charset=\(written)"))
            XCTAssertNoThrow(
                try route(latin, headers: [.contentType("text/csv; charset=\(named)")]).asURLRequest(), named)
        }
    }

    /// A JSON body is written in UTF-8: sent under a `Content-Type` naming another charset (the connector's, or the
    /// options'), a server reading by that label read `Zürich` as `ZÃ¼rich`. Its characters beyond ASCII go as `\u`
    /// escapes, which read the same in every charset that keeps ASCII's bytes; a charset that does not (UTF-16) fails
    /// the request, nothing sent. A `JSONObject` body and a JSON `Codable` body alike.
    func testAJSONBodyUnderAnotherCharsetReadsAsWrittenOrIsRefused() throws {
        // Given
        let latin1: [HTTPHeader] = [.contentType("application/json; charset=iso-8859-1")]
        let encodable = Parameter.jsonObject(["city": "Zürich 🏔"])
        let object: JSONObject = ["city": "Zürich 🏔"]

        // When
        let fromEncodable = try route(encodable, headers: latin1).asURLRequest()
        let fromObject = try route(object, headers: latin1).asURLRequest()
        let utf8 = try route(encodable, headers: [.contentType("application/json; charset=utf-8")]).asURLRequest()

        // Then
        let escaped = #"{"city":"Z\u00fcrich \ud83c\udfd4"}"#
        XCTAssertEqual(fromEncodable.httpBody.map { String(decoding: $0, as: UTF8.self) }, escaped)
        XCTAssertEqual(fromObject.httpBody.map { String(decoding: $0, as: UTF8.self) }, escaped)
        XCTAssertEqual(fromObject.value(forHTTPHeaderField: "Content-Type"), "application/json; charset=iso-8859-1")
        let decoded = try JSONDecoder().decode([String: String].self, from: fromObject.httpBody ?? Data())
        XCTAssertEqual(decoded, ["city": "Zürich 🏔"])
        XCTAssertEqual(utf8.httpBody.map { String(decoding: $0, as: UTF8.self) }, #"{"city":"Zürich 🏔"}"#)

        // The options' type counts as the connector's does; UTF-16 is refused before anything is sent.
        let transport = FakeTransport.answering(.status(204))
        let client = Connect(transport: transport, retryPolicy: nil)
        let options = RequestOptions(headers: [.contentType("application/json; charset=utf-16")])
        guard case .failure(let error) = result(of: client.response(for: route(object), options: options)),
            case .bodyEncodingFailed(let reason)? = (error as? ConnectError)?.invalidRequestReason
        else { return XCTFail("a JSON body under charset=utf-16 was sent") }
        XCTAssertTrue(reason.contains("utf-16"), reason)
        XCTAssertEqual(transport.requests.count, 0)
    }

    /// A JSON body of ASCII alone went out unchecked under any charset, UTF-16 too, whose bytes for it differ, and so
    /// did one under a charset not known to keep ASCII's bytes (EBCDIC's `ibm037`, `unicode`): each is refused now,
    /// whatever the body holds. Charsets that keep ASCII's bytes (Latin-1, windows-1252, US-ASCII) still carry it.
    func testAJSONBodyUnderACharsetThatDoesNotKeepASCIIIsRefusedEvenWhenASCII() throws {
        let ascii: JSONObject = ["a": "x"]
        for charset in ["utf-16", "UTF-32", "unicode", "iso-10646-ucs-2", "ibm037", "shift_jis"] {
            let headers: [HTTPHeader] = [.contentType("application/json; charset=\(charset)")]
            XCTAssertThrowsError(try route(ascii, headers: headers).asURLRequest(), charset) { error in
                guard case .bodyEncodingFailed? = (error as? ConnectError)?.invalidRequestReason else {
                    return XCTFail("\(charset): \(error)")
                }
            }
        }
        for charset in [
            "us-ascii", "ISO-8859-15", "windows-1252", "latin1", "utf8", "cp819", "x-cp1252", "csASCII", "l1",
            "euc-kr", "gb18030", "big5", "cp367", "l2", "csISOLatin2", "x-gbk", "cp936", "ks_c_5601-1987", "cp949",
            "cp950", "csKOI8R", "x-euc-jp", "x-mac-roman",
        ] {
            let headers: [HTTPHeader] = [.contentType("application/json; charset=\(charset)")]
            XCTAssertEqual(
                try route(ascii, headers: headers).asURLRequest().httpBody.map { String(decoding: $0, as: UTF8.self) },
                #"{"a":"x"}"#, charset)
        }
    }
}
