import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A `ConnectError` shows no secret to reflection (`dump`, `Mirror` to any depth, `String(reflecting:)`), while its
/// request and response stay whole through its API (issue 24, item 2).
final class ErrorReflectionTests: XCTestCase {
    /// One value of each kind of secret a request carries.
    private static let secrets = [
        "s3cr3t-bearer-token",  // Authorization: Bearer
        "dXNlcjpwYTU1d29yZC14",  // Basic credentials, base64 of "user:pa55word-x"
        "pa55word-x",  // the same, in the URL's user info
        "qu3ry-t0ken",  // ?access_token=
        "c00kie-s3ssion",  // Cookie
        "ap1-k3y-value",  // X-Api-Key
        "b0dy-passw0rd",  // a body field named password
    ]

    private func signedRequest(to base: URL) -> URLRequest {
        var components = URLComponents(url: base.appendingPathComponent("me"), resolvingAgainstBaseURL: false)!
        components.user = "user"
        components.password = "pa55word-x"
        components.queryItems = [URLQueryItem(name: "access_token", value: "qu3ry-t0ken")]
        var request = URLRequest(url: components.url!, timeoutInterval: 10)
        request.httpMethod = "POST"
        request.setValue("Bearer s3cr3t-bearer-token", forHTTPHeaderField: "Authorization")
        request.setValue("Basic dXNlcjpwYTU1d29yZC14", forHTTPHeaderField: "Proxy-Authorization")
        request.setValue("session=c00kie-s3ssion", forHTTPHeaderField: "Cookie")
        request.setValue("ap1-k3y-value", forHTTPHeaderField: "X-Api-Key")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(#"{"user":"me","password":"b0dy-passw0rd"}"#.utf8)
        return request
    }

    /// Every text reflection can produce for `value`: its description and its children's, to full depth.
    private func reflectedTexts(of value: Any, depth: Int = 0) -> [String] {
        var texts = [String(describing: value), String(reflecting: value)]
        guard depth < 64 else { return texts }
        for child in Mirror(reflecting: value).children {
            texts += reflectedTexts(of: child.value, depth: depth + 1)
        }
        return texts
    }

    private func assertNoSecret(in error: ConnectError, file: StaticString = #filePath, line: UInt = #line) {
        var dumped = ""
        dump(error, to: &dumped)
        let texts =
            reflectedTexts(of: error) + [
                dumped, error.description, error.debugDescription, "\(error)", error.localizedDescription,
            ]
        for text in texts {
            for secret in Self.secrets where text.contains(secret) {
                XCTFail("\(secret) shows in: \(text)", file: file, line: line)
            }
        }
    }

    /// An error status answered to a request carrying every kind of secret.
    func testAnHTTPErrorShowsNoSecretToReflection() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("POST", "/me") { _ in .json(["message": "not allowed"], status: 403) }
        let request = signedRequest(to: server.baseURL)
        let connect = Connect(transport: URLSessionTransport(), retryPolicy: nil)

        let error = try XCTUnwrap(
            connect.request(RawRequestConnector(request: request)).waitForResult(timeout: 10).failure as? ConnectError)

        XCTAssertEqual(error.statusCode, 403)
        assertNoSecret(in: error)
        // The API still gives the whole request to code that needs it.
        XCTAssertEqual(error.request?.value(forHTTPHeaderField: "Authorization"), "Bearer s3cr3t-bearer-token")
        XCTAssertEqual(error.request?.httpBody, request.httpBody)
    }

    /// A transport failure, whose platform error quotes the URL, to a port nothing listens on.
    func testATransportFailureShowsNoSecretToReflection() throws {
        let server = try LocalServer.started()
        let base = server.baseURL
        server.stop()
        let request = signedRequest(to: base)

        let result = try URLSessionTransport().send(request).waitForResult(timeout: 20)

        guard case .failure(let error as ConnectError) = result else { return XCTFail("\(result)") }
        assertNoSecret(in: error)
    }

    /// An error made by hand with every field set, the underlying error an error that quotes the URL.
    func testEveryFieldIsRedactedUnderReflection() {
        let request = signedRequest(to: URL(string: "https://api.example.com")!)
        let response = HTTPURLResponse(
            url: request.url!, statusCode: 401, httpVersion: "HTTP/1.1",
            headerFields: ["Set-Cookie": "session=c00kie-s3ssion", "WWW-Authenticate": "Bearer"])!
        let underlying = URLError(.userAuthenticationRequired, userInfo: [NSURLErrorFailingURLErrorKey: request.url!])
        var error = ConnectError(
            .authenticationFailed, message: "refused", request: request, response: response,
            body: Data(#"{"password":"b0dy-passw0rd","token":"s3cr3t-bearer-token"}"#.utf8),
            underlyingError: underlying)
        error.codingPath = "user.name"

        assertNoSecret(in: error)
        let wrapped = ConnectError(.transport, message: "wrapped", request: request, underlyingError: error)
        assertNoSecret(in: wrapped)
    }

    /// A message quoting a URL with the request's own token (a transport's "cannot reach https://…?access_token=…")
    /// shows one placeholder where the token was, in the description, the reflection and an outer error that wraps
    /// it: hiding by value then by name wrote `access_token=<redacted><redacted>`, the URL read as ending at the first
    /// placeholder's `<` and its now empty value hidden again.
    func testAURLWithTheRequestsOwnTokenInAMessageShowsOnePlaceholder() {
        // Given
        var request = URLRequest(url: URL(string: "https://api.example.com/me?access_token=tok-OWN-5544332211")!)
        request.setValue("Bearer tok-OWN-5544332211", forHTTPHeaderField: "Authorization")
        let inner = ConnectError(
            .cannotConnect, message: "cannot reach https://api.example.com/me?access_token=tok-OWN-5544332211&x=1",
            request: request)
        let outer = ConnectError(.transport, message: "relay failed", request: request, underlyingError: inner)
        // When
        var texts = [inner.description, String(reflecting: inner), String(reflecting: outer)]
        var dumped = ""
        dump(inner, to: &dumped)
        texts.append(dumped)
        // Then
        for text in texts {
            XCTAssertFalse(text.contains("tok-OWN-5544332211"), text)
            XCTAssertFalse(text.contains("<redacted><redacted>"), text)
            XCTAssertTrue(text.contains("access_token=<redacted>&x=1"), text)
        }
    }
}

/// A connector that sends a ready-made request's parts: its URL's user info, its `access_token` query item, its
/// header fields and its JSON body.
private struct RawRequestConnector: Connector {
    let request: URLRequest
    var baseURL: URL {
        var components = URLComponents(url: request.url!, resolvingAgainstBaseURL: false)!
        components.path = ""
        components.query = nil
        return components.url!
    }
    var endpoint: String { request.url!.path }
    var method: HTTPMethod { .post }
    var headers: [HTTPHeader] {
        (request.allHTTPHeaderFields ?? [:]).filter { $0.key != "Content-Type" }
            .map { HTTPHeader(name: $0.key, value: $0.value) }
    }
    var parameters: ParametersRepresentable? {
        CompositeParameters(
            .query(key: "access_token", value: "qu3ry-t0ken"),
            .body(request.httpBody!, contentType: "application/json"))
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
