import Foundation
import XCTest

@_spi(Engine) @testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What `print`, `dump`, `String(describing:)`, `String(reflecting:)` and interpolation show of the library's values:
/// no secret, and what is harmless, so that the output still helps to debug.
final class SecretPrintingTests: XCTestCase {
    /// Every way a value is turned into text: `description`, `String(reflecting:)`, interpolation and `dump`.
    private func printed(_ value: Any) -> String {
        var dumped = ""
        dump(value, to: &dumped)
        return [String(describing: value), String(reflecting: value), "\(value)", dumped].joined(separator: "\n")
    }

    // MARK: - Header fields

    /// A header line pasted in as a field's name (`Authorization: Bearer …`) showed whole in the descriptions and the
    /// reflection of the field, of the request that holds it and of an error about it; cURL output cut it.
    func testAHeaderLinePastedInAsANameShowsNoSecret() throws {
        let name = "Authorization: Bearer PASTEDTOKEN7"
        let field = HeaderField(name: HeaderField.Name(name), value: "x")
        let header = HTTPHeader(name: name, value: "x")
        var request = ConnectRequest(url: try XCTUnwrap(URL(string: "https://a.test/me")))
        request.headerFields.append(field)
        request.headerFields.append(HeaderField(name: "X-Trace", value: "trace-1"))
        var foundation = URLRequest(url: try XCTUnwrap(URL(string: "https://a.test/me")))
        foundation.setValue("x", forHTTPHeaderField: name)
        let error = ConnectError(.httpStatus, message: "refused", request: foundation)

        for value: Any in [field, header, request, request.headerFields, [header], error] {
            let shown = printed(value)
            // Foundation on Linux capitalises a name it stores (`Pastedtoken7`).
            XCTAssertFalse(shown.lowercased().contains("pastedtoken7"), shown)
            XCTAssertTrue(shown.contains("Authorization…"), shown)
        }
        XCTAssertTrue(printed(request).contains("X-Trace: trace-1"), printed(request))
        XCTAssertTrue(cURLCommand(for: foundation).contains("Authorization…"), "cURL output cuts it the same way")
    }

    /// A request's description and mirror hid a value by its field's name only: a custom field quoting the
    /// `Authorization` token showed it, where cURL output hid it.
    func testAFieldQuotingAnotherFieldsSecretHidesItAsCURLDoes() throws {
        let url = try XCTUnwrap(URL(string: "https://a.test/me?access_token=QUERYSECRET9&page=2"))
        var request = ConnectRequest(url: url)
        request.headerFields[.authorization] = "Bearer BEARERSECRET8"
        request.headerFields["X-Upstream-Auth"] = "Bearer BEARERSECRET8"
        request.headerFields["X-Echo"] = "q=QUERYSECRET9"
        request.headerFields[.accept] = "application/json"
        let head = try XCTUnwrap(RequestHead(method: .get, url: url, headerFields: request.headerFields))

        let shown = printed(request) + "\n" + printed(head)

        XCTAssertFalse(shown.contains("SECRET"), shown)
        XCTAssertTrue(shown.contains("X-Upstream-Auth: <redacted>"), shown)
        XCTAssertTrue(shown.contains("X-Echo: q=<redacted>"), shown)
        XCTAssertTrue(shown.contains("Accept: application/json"), shown)
        XCTAssertTrue(shown.contains("GET https://a.test/me?access_token=<redacted>&page=2"), shown)
        let curl = cURLCommand(for: request.urlRequest)
        XCTAssertTrue(curl.contains("X-Upstream-Auth: <redacted>"), curl)
    }
}
