import Foundation
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `RedirectRule`, the redirect rules a transport that follows redirects itself applies (AsyncHTTPClientTransport).
final class RedirectRuleTests: XCTestCase {
    private let origin = URL(string: "https://api.example.com/start")!

    private func redirect(_ status: Int, to location: String?, headers: [String: String] = [:]) -> ConnectResponse {
        var fields = headers
        if let location { fields["Location"] = location }
        return ConnectResponse(request: ConnectRequest(url: origin), statusCode: status, headers: fields)!
    }

    private func request(_ method: String = "GET", body: Data? = nil, headers: [String: String] = [:])
        -> ConnectRequest
    {
        var request = ConnectRequest(url: origin)
        request.httpMethod = method
        request.httpBody = body
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    func testA307KeepsTheMethodAndTheBodyAndA303BecomesAGET() throws {
        let post = request("POST", body: Data("x=1".utf8), headers: ["Content-Type": "text/plain"])

        let kept = try XCTUnwrap(RedirectRule.next(after: post, answeredBy: redirect(307, to: "/next")))
        let changed = try XCTUnwrap(RedirectRule.next(after: post, answeredBy: redirect(303, to: "/next")))

        XCTAssertEqual(kept.request.httpMethod, "POST")
        XCTAssertEqual(kept.request.httpBody, Data("x=1".utf8))
        XCTAssertTrue(kept.keepsBody)
        XCTAssertEqual(changed.request.httpMethod, "GET")
        XCTAssertNil(changed.request.httpBody)
        XCTAssertNil(changed.request.value(forHTTPHeaderField: "Content-Type"))
        XCTAssertFalse(changed.keepsBody)
        XCTAssertEqual(changed.request.url.absoluteString, "https://api.example.com/next")
    }

    func testCredentialsStayHome() throws {
        let signed = request(headers: ["Authorization": "Bearer t", "X-Api-Key": "k", "Accept": "application/json"])

        let sameOrigin = try XCTUnwrap(RedirectRule.next(after: signed, answeredBy: redirect(302, to: "/b")))
        let elsewhere = try XCTUnwrap(
            RedirectRule.next(after: signed, answeredBy: redirect(302, to: "https://other.example.com/b")))

        XCTAssertEqual(sameOrigin.request.value(forHTTPHeaderField: "Authorization"), "Bearer t")
        XCTAssertNil(elsewhere.request.value(forHTTPHeaderField: "Authorization"))
        XCTAssertNil(elsewhere.request.value(forHTTPHeaderField: "X-Api-Key"))
        XCTAssertEqual(elsewhere.request.value(forHTTPHeaderField: "Accept"), "application/json")
    }

    func testRedirectsThatAreNoRedirectsAreNotFollowed() {
        for location in [nil, "", "   ", "http://[::1", "file:///etc/passwd", "https://user:pw@evil.example.com/"] {
            XCTAssertNil(
                RedirectRule.next(after: request(), answeredBy: redirect(302, to: location)), "\(location ?? "nil")")
        }
        XCTAssertNil(RedirectRule.next(after: request(), answeredBy: redirect(200, to: "/b")))
        XCTAssertNil(RedirectRule.next(after: request(), answeredBy: redirect(304, to: "/b")))
    }

    func testARedirectToNoHostOrToAHostNoNameCouldBeIsNotFollowed() throws {
        for location in ["///x", "//a%20b/x", "//a%2Fb/x", "//a%00b/x", "//a%40b/x", "http://exa%0Dmple.com/"] {
            XCTAssertNil(RedirectRule.next(after: request(), answeredBy: redirect(302, to: location)), location)
        }
        // Host names and IP addresses, IPv6 among them, are followed.
        for location in ["//[::1]:8443/x", "//[fe80::1%25eth0]/x", "//10.0.0.1/x", "//a_b.example-1.com/x"] {
            XCTAssertNotNil(RedirectRule.next(after: request(), answeredBy: redirect(302, to: location)), location)
        }
    }

    func testABodyFromAStreamIsNotSentAgain() {
        var streamed = request("POST")
        streamed.httpBodyStream = InputStream(data: Data("x".utf8))

        XCTAssertNil(RedirectRule.next(after: streamed, answeredBy: redirect(307, to: "/b")))
    }

    func testACookieSetByTheRedirectGoesOnTheNextHopOnlyWhereItApplies() throws {
        let response = redirect(302, to: "/home", headers: ["Set-Cookie": "session=abc; Path=/"])
        let withCookie = request(headers: ["Cookie": "theme=dark; session=old"])

        let next = try XCTUnwrap(RedirectRule.next(after: withCookie, answeredBy: response))
        let elsewhere = try XCTUnwrap(
            RedirectRule.next(
                after: request(),
                answeredBy: redirect(
                    302, to: "https://other.example.com/", headers: ["Set-Cookie": "session=abc; Path=/"])))

        XCTAssertEqual(next.request.value(forHTTPHeaderField: "Cookie"), "theme=dark; session=abc")
        XCTAssertNil(elsewhere.request.value(forHTTPHeaderField: "Cookie"))
    }

    /// An engine reports repeated `Set-Cookie` fields one by one (AsyncHTTPClient does): each cookie reaches the
    /// next hop, read from the core's head without a Foundation response.
    func testCookiesOfRepeatedSetCookieFieldsAllGoOnTheNextHop() throws {
        let head = ResponseHead(
            status: 302,
            headerFields: [
                "Location": "/home", "Set-Cookie": "a=1; Path=/",
                "Set-Cookie": "b=2; Expires=Sun, 06 Nov 2077 08:49:37 GMT",
            ])
        let response = try XCTUnwrap(ConnectResponse(request: request(), head: head))

        let next = try XCTUnwrap(RedirectRule.next(after: request(), answeredBy: response))

        XCTAssertEqual(next.request.value(forHTTPHeaderField: "Cookie"), "a=1; b=2")
        guard case .parts(let parts) = response.storedHead else { return XCTFail("made Foundation's response") }
        XCTAssertFalse(parts.isMadeForTesting)
    }
}
