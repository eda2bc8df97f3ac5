import Foundation
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A repeated endpoint gets the URL a fresh build gives, and slightly different ones never share one.
final class RepeatedURLTests: XCTestCase {
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

    func testAStringThatIsNotAURLStillFails() {
        XCTAssertThrowsError(try Endpoint(baseURL: URL(string: "example.com")!, endpoint: "/a").asURLRequest())
    }
}
