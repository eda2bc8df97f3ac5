import Foundation
import XCTest

@_spi(Engine) @testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The core's own HTTP model: fields in order with case-insensitive names, heads, and Foundation only at the edge.
final class HTTPModelTests: XCTestCase {
    func testNamesCompareAndHashWithoutRegardToCaseAndKeepTheirSpelling() {
        let name = HeaderField.Name("X-Request-ID")
        XCTAssertEqual(name, "x-request-id")
        XCTAssertEqual(name.hashValue, HeaderField.Name("X-REQUEST-ID").hashValue)
        XCTAssertEqual(name.rawName, "X-Request-ID")
        XCTAssertEqual(name.canonicalName, "x-request-id")
        XCTAssertNotEqual(name, "X-Request-IDs")
        XCTAssertEqual(Set<HeaderField.Name>(["Accept", "accept", "ACCEPT"]).count, 1)
    }

    func testRepeatedFieldsKeepTheirOrderAndJoinWhenReadAsOne() {
        var fields: HeaderFields = [.accept: "text/plain", "X-Trace": "1"]
        fields.append(HeaderField(name: .setCookie, value: "a=1"))
        fields.append(HeaderField(name: "set-cookie", value: "b=2"))
        fields.append(HeaderField(name: .cookie, value: "c=3"))
        fields.append(HeaderField(name: .cookie, value: "d=4"))

        XCTAssertEqual(
            fields.map(\.name.rawName), ["Accept", "X-Trace", "Set-Cookie", "set-cookie", "Cookie", "Cookie"])
        XCTAssertEqual(fields[values: .setCookie], ["a=1", "b=2"])
        XCTAssertEqual(fields["SET-COOKIE"], "a=1, b=2")
        XCTAssertEqual(fields[.cookie], "c=3; d=4", "Cookie joins with a semicolon (RFC 9110 5.3)")
        XCTAssertNil(fields["X-Missing"])
        XCTAssertTrue(fields.contains("x-trace"))
    }

    func testSettingAValueReplacesEveryFieldOfTheNameWhereTheFirstStood() {
        var fields: HeaderFields = ["A": "1", "B": "2", "b": "3", "C": "4"]
        fields["B"] = "new"
        XCTAssertEqual(fields.map(\.description), ["A: 1", "B: new", "C: 4"])
        fields[values: "a"] = ["x", "y"]
        XCTAssertEqual(fields.map(\.description), ["a: x", "a: y", "B: new", "C: 4"])
        fields["b"] = nil
        XCTAssertEqual(fields.map(\.description), ["a: x", "a: y", "C: 4"])
        fields["D"] = "appended"
        XCTAssertEqual(fields.last?.description, "D: appended")
    }

    func testInvalidNamesAndValuesAreFoundBeforeAnythingIsSent() {
        XCTAssertNil(([.accept: "a", "X-Ok": "tab\tis fine"] as HeaderFields).firstInvalid)
        for value in ["a\r\nInjected: 1", "a\nb", "nul\u{0}", "del\u{7F}"] {
            let fields: HeaderFields = ["X-Value": value]
            XCTAssertEqual(fields.firstInvalid?.name, "X-Value", value.debugDescription)
        }
        for name in ["", "Bad Name", "Bad:Name", "Ünicode"] {
            let fields = HeaderFields([HeaderField(name: HeaderField.Name(name), value: "v")])
            XCTAssertEqual(fields.firstInvalid?.name.rawName, name, name.debugDescription)
        }
    }

    func testDescriptionsHideSecrets() {
        let fields: HeaderFields = [.authorization: "Bearer s3cr3t", .cookie: "session=s3cr3t", "X-Api-Key": "s3cr3t"]
        XCTAssertFalse(fields.description.contains("s3cr3t"), fields.description)
        XCTAssertTrue(fields.description.contains("Authorization: <redacted>"), fields.description)
        var dumped = ""
        dump(fields, to: &dumped)
        dump(
            RequestHead(method: .get, scheme: "https", authority: "a.test", path: "/", headerFields: fields),
            to: &dumped)
        XCTAssertFalse(dumped.contains("s3cr3t"), dumped)
        XCTAssertTrue(dumped.contains("Authorization"), dumped)
    }

    /// A secret in the query of a request or a head showed in `print`, `String(reflecting:)` and `dump`: the URL (and a
    /// request's Foundation base) went out as sent.
    func testPrintingARequestOrAHeadShowsNoSecretOfItsURL() throws {
        let url = try XCTUnwrap(URL(string: "https://user:SECRET-PW-1@a.test/me?access_token=SECRET-TOK-1&page=2"))
        var request = try ConnectRequest(URLRequest(url: url))
        request.headerFields[.authorization] = "Bearer SECRET-TOK-2"
        request.body = .bytes(Data("password=SECRET-PW-3".utf8))
        let head = try XCTUnwrap(RequestHead(method: .get, url: url, headerFields: request.headerFields))
        var shown = "\(request)\n\(head)\n" + String(reflecting: request) + String(reflecting: head)
        dump(request, to: &shown)
        dump(head, to: &shown)
        XCTAssertFalse(shown.contains("SECRET-"), shown)
        XCTAssertTrue(shown.contains("GET https://a.test/me?access_token=<redacted>&page=2"), shown)
        XCTAssertTrue(shown.contains("Authorization: <redacted>"), shown)
    }

    func testARequestHeadSplitsAURLAsItGoesOnTheWire() throws {
        let url = try XCTUnwrap(URL(string: "HTTPS://user:pw@Example.com:8443/todos/a%2Fb?q=1&r=%20#frag"))
        let head = try XCTUnwrap(RequestHead(method: .post, url: url, headerFields: [.accept: "*/*"]))
        XCTAssertEqual(head.method, .post)
        XCTAssertEqual(head.scheme, "https")
        XCTAssertEqual(head.authority, "Example.com:8443", "no user info in the head")
        XCTAssertEqual(head.path, "/todos/a%2Fb?q=1&r=%20", "percent-encoding kept, no fragment")
        XCTAssertEqual(head.url?.absoluteString, "https://Example.com:8443/todos/a%2Fb?q=1&r=%20")

        let bare = try XCTUnwrap(RequestHead(method: .get, url: try XCTUnwrap(URL(string: "http://[::1]"))))
        XCTAssertEqual(bare.authority, "[::1]")
        XCTAssertEqual(bare.path, "/")
        XCTAssertNil(RequestHead(method: .get, url: try XCTUnwrap(URL(string: "/relative/only"))))
    }

    func testEveryShapeOfURLSplitsAsURLComponentsWould() throws {
        let cases: [(String, (String, String, String)?)] = [
            ("http://host?x=1", ("http", "host", "/?x=1")),
            ("http://host#top", ("http", "host", "/")),
            ("http://ann@host/a?b#c", ("http", "host", "/a?b")),
            ("http://a%40b:p%3A@host:81/", ("http", "host:81", "/")),
            ("https://[fe80::1%25en0]:8443/x", ("https", "[fe80::1%25en0]:8443", "/x")),
            ("http://host/a/../b;p?q=%2F", ("http", "host", "/a/../b;p?q=%2F")),
            ("http:///nohost", nil),
            ("http://:80/", nil),
            ("mailto:ann@example.com", nil),
        ]
        for (text, expected) in cases {
            let url = try XCTUnwrap(URL(string: text), text)
            let head = RequestHead(method: .get, url: url)
            XCTAssertEqual(head?.scheme, expected?.0, text)
            XCTAssertEqual(head?.authority, expected?.1, text)
            XCTAssertEqual(head?.path, expected?.2, text)
        }
        let resolved = try XCTUnwrap(URL(string: "b?c=1", relativeTo: URL(string: "https://api.test/v1/a")))
        XCTAssertEqual(RequestHead(method: .get, url: resolved)?.path, "/v1/b?c=1", "relative to its base")
    }

    func testAURLRequestBecomesAHead() throws {
        var request = URLRequest(url: try XCTUnwrap(URL(string: "https://api.example.com/items?page=2")))
        request.httpMethod = "PUT"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let head = try XCTUnwrap(RequestHead(request))
        XCTAssertEqual(head.method, .put)
        XCTAssertEqual(head.path, "/items?page=2")
        XCTAssertEqual(head.headerFields[.contentType], "application/json")
    }

    func testAResponseKeepsItsRepeatedFieldsAndMakesFoundationsResponseOnlyWhenAsked() throws {
        let request = URLRequest(url: try XCTUnwrap(URL(string: "https://api.example.com/login")))
        var fields: HeaderFields = [.contentType: "application/json"]
        fields.append(HeaderField(name: .setCookie, value: "a=1"))
        fields.append(HeaderField(name: .setCookie, value: "b=2"))
        let response = try XCTUnwrap(
            ConnectResponse(request: request, head: ResponseHead(status: 201, headerFields: fields)))

        XCTAssertEqual(response.statusCode, 201)
        XCTAssertEqual(response.head.headerFields[values: .setCookie], ["a=1", "b=2"])
        XCTAssertEqual(response.header("content-type"), "application/json")
        guard case .parts(let parts) = response.storedHead else { return XCTFail("made Foundation's response") }
        XCTAssertFalse(parts.isMadeForTesting)

        // Foundation's response, when asked for, has them as Foundation keeps them: joined.
        XCTAssertEqual(response.response.statusCode, 201)
        XCTAssertEqual(response.response.value(forHTTPHeaderField: "Set-Cookie"), "a=1, b=2")
        XCTAssertTrue(parts.isMadeForTesting)
    }

    func testAFoundationResponseReadsAsAHead() throws {
        let url = try XCTUnwrap(URL(string: "https://api.example.com/"))
        let foundation = try XCTUnwrap(
            HTTPURLResponse(url: url, statusCode: 404, httpVersion: nil, headerFields: ["X-Reason": "gone"]))
        let response = ConnectResponse(request: URLRequest(url: url), response: foundation, data: Data())
        XCTAssertEqual(response.head, ResponseHead(status: 404, headerFields: ["X-Reason": "gone"]))
    }

    func testSetCookieFieldsFoundationJoinedAreOneFieldACookieAgain() throws {
        // Given: Foundation's one value for two cookies, one with a comma in its date
        let url = try XCTUnwrap(URL(string: "https://api.example.com/"))
        let joined = "a=1; Expires=Wed, 09 Jun 2041 10:18:14 GMT; Path=/, b=2; HttpOnly"
        let foundation = try XCTUnwrap(
            HTTPURLResponse(
                url: url, statusCode: 200, httpVersion: nil, headerFields: ["Set-Cookie": joined, "X-A": "x, y"]))
        // When
        let head = ResponseHead(foundation)
        // Then: each cookie is a field; other fields stay as Foundation has them
        XCTAssertEqual(
            head.headerFields[values: .setCookie],
            ["a=1; Expires=Wed, 09 Jun 2041 10:18:14 GMT; Path=/", "b=2; HttpOnly"])
        XCTAssertEqual(head.headerFields[values: "X-A"], ["x, y"])
    }

    func testAStatusOutsideTheRangeIsRefused() throws {
        let request = URLRequest(url: try XCTUnwrap(URL(string: "https://api.example.com/")))
        XCTAssertNil(ConnectResponse(request: request, head: ResponseHead(status: 99)))
        XCTAssertNil(ConnectResponse(request: request, head: ResponseHead(status: 1000)))
    }
}
