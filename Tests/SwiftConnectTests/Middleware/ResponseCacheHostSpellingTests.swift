import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The ``ResponseCache``'s invalidation (RFC 9111 §4.4) reaches what was stored for a URL whatever the spelling of its
/// host in the unsafe request: escapes, upper case, a trailing dot, Unicode for punycode, another form of an IPv6
/// address all name the host the engine is sent to; and whatever the spelling of the escapes in its path and query.
final class ResponseCacheHostSpellingTests: XCTestCase {
    private let rule = RequestOptions(cache: CacheRule(timeToLive: 300))

    /// Stores a GET of `stored`/items/1, sends a PUT to `written`/items/1, and returns the body of the next GET.
    private func getAfterWrite(stored: String, written: String) throws -> String {
        let transport = FakeTransport()
        transport.stub(.get, "/items/1", with: (1...5).map { .json(string: #"{"version":\#($0)}"#) })
        transport.stub(.put, "/items/1", with: .status(200))
        let connect = Connect(
            transport: transport, retryPolicy: nil, responseCache: ResponseCache(),
            configuration: ServerConfiguration(host: "unused.example"))
        let route = Route("/items/1", baseURL: try XCTUnwrap(URL(string: stored)))
        func get() throws -> String {
            String(decoding: try connect.request(route, options: rule).wait(timeout: 5), as: UTF8.self)
        }
        XCTAssertEqual(try get(), #"{"version":1}"#)
        XCTAssertEqual(try get(), #"{"version":1}"#, "served from the cache")
        let put = ConnectRequest(method: .put, url: try XCTUnwrap(URL(string: written + "/items/1")))
        XCTAssertEqual(try connect.response(for: put).wait(timeout: 5).statusCode, 200)
        return try get()
    }

    func testAWriteToAnotherSpellingOfTheHostRemovesTheStoredResponse() throws {
        let cases = [
            ("https://api.example.com", "https://API.EXAMPLE.COM"),
            ("https://api.example.com", "https://api.exampl%65.com"),
            ("https://api.example.com", "https://api.example.com."),
            ("https://api.example.com.", "https://api.example.com"),
            ("https://api.example.com", "https://api.example.com:443"),
            ("https://xn--bcher-kva.example", "https://b%C3%BCcher.example"),
            ("https://bücher.example", "https://b%C3%BCcher.example"),
            ("https://[::1]", "https://[0:0:0:0:0:0:0:1]"),
        ]
        for (stored, written) in cases {
            XCTAssertEqual(
                try getAfterWrite(stored: stored, written: written), #"{"version":2}"#, "\(stored) then \(written)")
        }
    }

    /// The path and query name the resource whatever their escapes' spelling (RFC 3986 §6.2.2): hex digits in either
    /// case, and an unreserved character escaped or not, are one URL, and a write to one removes what the other stored.
    func testAWriteToAnotherSpellingOfThePathOrQueryRemovesTheStoredResponse() throws {
        let cases = [
            ("/items/caf%C3%A9", "/items/caf%c3%a9"),
            ("/items/caf%c3%a9", "/items/caf%C3%A9"),
            ("/items/%7Eamy", "/items/~amy"),
            ("/items/~amy", "/items/%7eamy"),
            ("/items/%61%2D1", "/items/a-1"),
            ("/items/a?q=caf%C3%A9", "/items/a?q=caf%c3%a9"),
            ("/items/a?q=%7E", "/items/a?q=~"),
        ]
        for (stored, written) in cases {
            let transport = FakeTransport()
            let path = try XCTUnwrap(URLComponents(string: stored)?.path)
            transport.stub(.get, path, with: (1...3).map { .json(string: #"{"version":\#($0)}"#) })
            transport.stub(.put, path, with: .status(200))
            let connect = Connect(transport: transport, retryPolicy: nil, responseCache: ResponseCache())
            let url = try XCTUnwrap(URL(string: "https://api.example.com" + stored))
            func get() throws -> String {
                let request = ConnectRequest(method: .get, url: url)
                return String(
                    decoding: try connect.response(for: request, options: rule).wait(timeout: 5).data, as: UTF8.self)
            }
            XCTAssertEqual(try get(), #"{"version":1}"#, stored)
            XCTAssertEqual(try get(), #"{"version":1}"#, "\(stored): served from the cache")
            let put = ConnectRequest(method: .put, url: try XCTUnwrap(URL(string: "https://api.example.com" + written)))
            XCTAssertEqual(try connect.response(for: put).wait(timeout: 5).statusCode, 200, written)
            XCTAssertEqual(try get(), #"{"version":2}"#, "\(stored) then \(written)")
        }
    }

    /// Escapes of reserved characters are not their characters: `%2F` is no path separator, and a write to `a/b`
    /// leaves what `a%2Fb` stored.
    func testAnEscapedReservedCharacterIsAnotherResource() throws {
        let transport = FakeTransport()
        transport.stub(.get, "/items/a%2Fb", with: (1...3).map { .json(string: #"{"version":\#($0)}"#) })
        transport.stub(.put, "/items/a/b", with: .status(200))
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: ResponseCache())
        let url = try XCTUnwrap(URL(string: "https://api.example.com/items/a%2Fb"))
        func get() throws -> String {
            let request = ConnectRequest(method: .get, url: url)
            return String(
                decoding: try connect.response(for: request, options: rule).wait(timeout: 5).data, as: UTF8.self)
        }
        XCTAssertEqual(try get(), #"{"version":1}"#)
        let put = ConnectRequest(method: .put, url: try XCTUnwrap(URL(string: "https://api.example.com/items/a/b")))
        XCTAssertEqual(try connect.response(for: put).wait(timeout: 5).statusCode, 200)
        XCTAssertEqual(try get(), #"{"version":1}"#)
    }

    /// Another host, or another port or scheme, is another origin: a write there leaves the stored response.
    func testAWriteToAnotherOriginLeavesTheStoredResponse() throws {
        for written in ["https://api.example.org", "https://api.example.com:8443", "http://api.example.com"] {
            XCTAssertEqual(
                try getAfterWrite(stored: "https://api.example.com", written: written), #"{"version":1}"#, written)
        }
    }
}
