import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A `ConnectError` bridged to `NSError` (what crash reporters and analytics record, and what `print(error as
/// NSError)` shows) carries its underlying error as `NSUnderlyingErrorKey`: that error shows no secret either, though
/// a platform error quotes the failing URL in its user info.
final class ConnectErrorBridgingSecretsTests: XCTestCase {
    private let token = "bearer-SECRET-01"
    private let queryToken = "query-SECRET-02"

    /// The failure of a request with a bearer token and a secret query item, the transport's `URLError` quoting the
    /// URL a redirect led to (with a signature of its own and a password) and, inside, the request's token.
    private func failure() throws -> ConnectError {
        let failingURL = URL(
            string: "https://amy:pw-SECRET-03@cdn.example.com/a.pdf?X-Amz-Signature=sig-SECRET-04&part=2")!
        let inner = NSError(
            domain: "kCFErrorDomainCFNetwork", code: 310,
            userInfo: [NSLocalizedDescriptionKey: "proxy refused Bearer \(token)"])
        let urlError = URLError(
            .cannotConnectToHost,
            userInfo: [
                NSURLErrorFailingURLErrorKey: failingURL, "NSErrorFailingURLStringKey": failingURL.absoluteString,
                NSUnderlyingErrorKey: inner, NSLocalizedDescriptionKey: "Could not connect to the server.",
            ])
        let connect = Connect(transport: FakeTransport.answering(.failure(urlError)), retryPolicy: nil)
        let connector = ConfigurableConnector(
            baseURL: URL(string: "https://api.example.com")!, endpoint: "/reports",
            parameters: Parameter.query(key: "access_token", value: queryToken),
            authorizationToken: .bearer(token: token))
        return try XCTUnwrap(connectError(of: connect.request(connector)))
    }

    func testTheBridgedErrorAndItsUnderlyingErrorsShowNoSecret() throws {
        let error = try failure()
        let bridged = error as NSError

        for text in [
            "\(bridged)", bridged.debugDescription, "\(bridged.userInfo)", String(describing: bridged.userInfo),
        ] {
            XCTAssertFalse(text.contains("SECRET"), text)
            XCTAssertFalse(text.contains(token), text)
        }
        let underlying = try XCTUnwrap(bridged.userInfo[NSUnderlyingErrorKey] as? NSError)
        // What is not secret stays for whoever reads the report: the domain, the code, the host and path, the message.
        XCTAssertEqual(underlying.domain, NSURLErrorDomain)
        XCTAssertEqual(underlying.code, URLError.cannotConnectToHost.rawValue)
        XCTAssertEqual(underlying.localizedDescription, "Could not connect to the server.")
        let failingURL = try XCTUnwrap(underlying.userInfo[NSURLErrorFailingURLErrorKey] as? URL)
        XCTAssertTrue(
            failingURL.absoluteString.hasPrefix("https://cdn.example.com/a.pdf?X-Amz-Signature="),
            failingURL.absoluteString)
        XCTAssertTrue(failingURL.absoluteString.hasSuffix("&part=2"), failingURL.absoluteString)
        let innermost = try XCTUnwrap(underlying.userInfo[NSUnderlyingErrorKey] as? NSError)
        XCTAssertEqual(innermost.domain, "kCFErrorDomainCFNetwork")
        XCTAssertEqual(innermost.localizedDescription, "proxy refused <redacted>")
        // The error itself keeps everything for code that needs it.
        XCTAssertEqual(error.urlError?.failingURL?.absoluteString.contains("sig-SECRET-04"), true)
    }

    /// An underlying error with nothing secret in it is bridged as it is: its user info whole, the failing URL as it
    /// was.
    func testAnUnderlyingErrorWithoutSecretsIsBridgedAsItIs() {
        let url = URL(string: "https://api.example.com/reports?page=2")!
        let urlError = URLError(.networkConnectionLost, userInfo: [NSURLErrorFailingURLErrorKey: url])
        let bridged = ConnectError(.connectionLost, message: "reset", underlyingError: urlError) as NSError
        let underlying = bridged.userInfo[NSUnderlyingErrorKey] as? NSError
        XCTAssertEqual(underlying?.code, URLError.networkConnectionLost.rawValue)
        XCTAssertEqual(underlying?.userInfo[NSURLErrorFailingURLErrorKey] as? URL, url)
        XCTAssertEqual(underlying?.userInfo.count, (urlError as NSError).userInfo.count)
    }

    /// A Swift error of the app's own, whose text comes from `LocalizedError` rather than its user info, quoting the
    /// request's token and a URL with a secret.
    private struct RefusedError: LocalizedError {
        let token: String
        var errorDescription: String? { "proxy refused \(token) for https://h.test/?api_key=key-SECRET-06" }
    }

    func testAnUnderlyingSwiftErrorsLocalizedTextShowsNoSecret() throws {
        var request = URLRequest(url: URL(string: "https://api.example.com/reports")!)
        request.setValue(AuthorizationToken.bearer(token: token).headerValue, forHTTPHeaderField: "Authorization")
        let error = ConnectError(
            .transport, message: "the proxy refused", request: request, underlyingError: RefusedError(token: token))

        let underlying = try XCTUnwrap((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError)
        XCTAssertEqual(
            underlying.localizedDescription, "proxy refused <redacted> for https://h.test/?api_key=<redacted>")
        XCTAssertFalse("\(error as NSError)".contains("SECRET"), "\(error as NSError)")
    }

    /// With redaction off, the bridged error carries the underlying error as it came.
    func testWithRedactionOffTheUnderlyingErrorIsBridgedWhole() throws {
        let urlError = URLError(
            .cannotConnectToHost,
            userInfo: [NSURLErrorFailingURLErrorKey: URL(string: "https://h.test/?token=tok-SECRET-05")!])
        let connect = Connect(
            transport: FakeTransport.answering(.failure(urlError)), retryPolicy: nil,
            settings: Connect.Settings(redactsSecrets: false))
        let connector = ConfigurableConnector(baseURL: URL(string: "https://h.test")!, endpoint: "/")
        let error = try XCTUnwrap(connectError(of: connect.request(connector)))
        XCTAssertTrue("\(error as NSError)".contains("tok-SECRET-05"), "\(error as NSError)")
    }
}
