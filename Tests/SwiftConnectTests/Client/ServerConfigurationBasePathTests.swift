import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A base path's non-ASCII text is sent percent-encoded as its UTF-8 bytes, as an endpoint's is; every other rule of
/// a base path stays.
final class ServerConfigurationBasePathTests: XCTestCase {
    private func baseURL(_ basePath: String) -> String? {
        ServerConfiguration(host: "api.example.com", basePath: basePath).baseURL?.absoluteString
    }

    func testNonASCIITextIsPercentEncodedAsUTF8() {
        XCTAssertEqual(baseURL("/st\u{e4}dte"), "https://api.example.com/st%C3%A4dte")
        XCTAssertEqual(baseURL("v2/caf\u{e9}"), "https://api.example.com/v2/caf%C3%A9")
        // Escapes already written are kept; the text is not normalized (NFD stays NFD).
        XCTAssertEqual(baseURL("/caf%C3%A9/\u{e9}"), "https://api.example.com/caf%C3%A9/%C3%A9")
        XCTAssertEqual(baseURL("/e\u{301}"), "https://api.example.com/e%CC%81")
        XCTAssertEqual(baseURL("/\u{1F600}"), "https://api.example.com/%F0%9F%98%80")
    }

    /// The same bytes an endpoint with the same text gets, through a client.
    func testARequestUnderANonASCIIBasePathIsTheEndpointsEncoding() throws {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(
            transport: transport, retryPolicy: nil,
            configuration: ServerConfiguration(host: "api.example.com", basePath: "/st\u{e4}dte"))
        _ = try connect.request(Route("/z\u{fc}rich")).wait(timeout: 5)
        let plainBase = try XCTUnwrap(URL(string: "https://api.example.com"))
        let endpointOnly = try Route("/st\u{e4}dte/z\u{fc}rich", baseURL: plainBase).asURLRequest().url?.absoluteString
        XCTAssertEqual(transport.requests.map { $0.url?.absoluteString }, [endpointOnly])
        XCTAssertEqual(endpointOnly, "https://api.example.com/st%C3%A4dte/z%C3%BCrich")
    }

    /// Spaces, a query, a fragment and broken escapes are still refused, with or without non-ASCII text beside them.
    func testEveryOtherRuleStays() {
        for basePath in ["/st\u{e4}dte 2", "/\u{e9}?x=1", "/\u{e9}#top", "/\u{e9}%zz", "/\u{e9}%C", "/a\u{a0}b|"] {
            let configuration = ServerConfiguration(host: "api.example.com", basePath: basePath)
            XCTAssertNil(configuration.baseURL, basePath)
            let connect = Connect(
                transport: FakeTransport.answering(.json(string: "{}")), retryPolicy: nil,
                configuration: configuration)
            XCTAssertThrowsError(try connect.request(Route("/x")).wait(timeout: 5), basePath) { error in
                XCTAssertEqual((error as? ConnectError)?.kind, .invalidRequest, basePath)
                XCTAssertTrue((error as? ConnectError)?.message.contains("base path") ?? false, "\(error)")
            }
        }
    }
}
