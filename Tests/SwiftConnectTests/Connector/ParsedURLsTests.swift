import Foundation
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The cache of parsed URLs must never change which URL a request gets, and must stay bounded.
final class ParsedURLsTests: XCTestCase {
    private struct Endpoint: Connector {
        var baseURL = URL(string: "https://cache.example.com/v1")!
        var endpoint: String
        var method: HTTPMethod = .get
        var headers: [HTTPHeader] = []
        var parameters: (any ParametersRepresentable)?
    }

    func testARepeatedEndpointGetsTheSameURLAsAFreshParse() throws {
        // Given
        let connector = Endpoint(
            endpoint: "/items/{id}",
            parameters: CompositeParameters(.path(key: "id", value: "a b"), .query(key: "q", value: "x&y")))
        // When
        let first = try connector.asURLRequest().url
        let second = try connector.asURLRequest().url
        // Then
        let expected = URL(string: "https://cache.example.com/v1/items/a%20b?q=x%26y")
        XCTAssertEqual(first, expected)
        XCTAssertEqual(second, expected)
        XCTAssertEqual(second?.absoluteString, expected?.absoluteString)
    }

    func testDifferentValuesNeverShareACachedURL() throws {
        // When
        let urls = try (0..<20).map { index in
            try Endpoint(endpoint: "/items/{id}", parameters: Parameter.path(key: "id", value: "\(index % 5)"))
                .asURLRequest().url?.absoluteString
        }
        // Then
        XCTAssertEqual(urls, (0..<20).map { "https://cache.example.com/v1/items/\($0 % 5)" })
    }

    func testEndpointsAndBasesThatDifferSlightlyNeverShareAJoinedURL() throws {
        // Given: endpoints and bases without `.path` or `.query` parameters, each asked for twice
        let cases: [(base: String, endpoint: String, expected: String)] = [
            ("https://cache.example.com/v1", "/todos", "https://cache.example.com/v1/todos"),
            ("https://cache.example.com/v1", "/todos/", "https://cache.example.com/v1/todos/"),
            ("https://cache.example.com/v1", "todos?done=1", "https://cache.example.com/v1/todos?done=1"),
            ("https://cache.example.com/v1/", "/todos", "https://cache.example.com/v1/todos"),
            ("https://cache.example.com/v2", "/todos", "https://cache.example.com/v2/todos"),
            ("https://cache.example.com/v1?key=a", "/todos", "https://cache.example.com/v1/todos?key=a"),
        ]
        for _ in 0..<2 {
            for item in cases {
                // When
                let url = try Endpoint(baseURL: URL(string: item.base)!, endpoint: item.endpoint)
                    .asURLRequest().url?.absoluteString
                // Then
                XCTAssertEqual(url, item.expected, "\(item.base) + \(item.endpoint)")
            }
        }
    }

    func testAURLWithoutParametersIsKeptOnceUnderItsBaseAndEndpoint() throws {
        // When
        let url = try XCTUnwrap(Endpoint(endpoint: "/kept-once").asURLRequest().url)
        // Then: found by base URL and endpoint, not also by its text
        XCTAssertEqual(
            ParsedURLs.url(for: .joined(base: "https://cache.example.com/v1", endpoint: "/kept-once")), url)
        XCTAssertNil(ParsedURLs.url(for: .text(url.absoluteString)))
    }

    func testABodyParameterDoesNotChangeTheJoinedURL() throws {
        let plain = try Endpoint(endpoint: "/items").asURLRequest()
        let withBody = try Endpoint(
            endpoint: "/items", method: .post, parameters: Parameter.jsonObject(value: ["a": 1])
        ).asURLRequest()
        XCTAssertEqual(withBody.url, plain.url)
        XCTAssertNotNil(withBody.httpBody)
    }

    func testAPlaceholderWithoutItsValueFailsEveryTime() {
        for _ in 0..<2 {
            XCTAssertThrowsError(try Endpoint(endpoint: "/items/{id}").asURLRequest()) { error in
                XCTAssertEqual(
                    (error as? ConnectError)?.invalidRequestReason, .missingPathValue(placeholder: "id"))
            }
        }
    }

    func testAURLCarryingASecretIsNeverCached() throws {
        // Given: a secret in the query, in the user info, and, for comparison, none
        let token = Endpoint(endpoint: "/feed", parameters: Parameter.query(key: "access_token", value: "s3cr3t"))
        let password = Endpoint(baseURL: URL(string: "https://user:pw@cache.example.com")!, endpoint: "/feed")
        let plain = Endpoint(endpoint: "/feed", parameters: Parameter.query(key: "page", value: "2"))
        // When
        let urls = try [token, password, plain].map { try XCTUnwrap($0.asURLRequest().url?.absoluteString) }
        // Then: each request still gets its URL; only the one without a secret is kept
        XCTAssertEqual(
            urls,
            [
                "https://cache.example.com/v1/feed?access_token=s3cr3t", "https://user:pw@cache.example.com/feed",
                "https://cache.example.com/v1/feed?page=2",
            ])
        XCTAssertNil(ParsedURLs.url(for: .text(urls[0])))
        XCTAssertNil(ParsedURLs.url(for: .joined(base: "https://user:pw@cache.example.com", endpoint: "/feed")))
        XCTAssertNotNil(ParsedURLs.url(for: .text(urls[2])))
        XCTAssertEqual(try password.asURLRequest().url?.absoluteString, urls[1], "asked again, built again")
    }

    func testTheCacheStaysWithinItsCapacity() throws {
        // When: more distinct URLs than the cache holds
        for index in 0..<(ParsedURLs.capacity * 3) {
            _ = try Endpoint(endpoint: "/unique/\(index)").asURLRequest()
        }
        // Then
        XCTAssertLessThanOrEqual(ParsedURLs.count, ParsedURLs.capacity)
        XCTAssertEqual(
            try Endpoint(endpoint: "/unique/1").asURLRequest().url?.absoluteString,
            "https://cache.example.com/v1/unique/1")
    }

    func testAStringThatIsNotAURLIsNotCachedAndStillFails() {
        XCTAssertNil(ParsedURLs.url("no scheme here"))
        XCTAssertNil(ParsedURLs.url("no scheme here"), "asked twice, still no URL")
        XCTAssertThrowsError(try Endpoint(baseURL: URL(string: "example.com")!, endpoint: "/a").asURLRequest())
    }
}
