import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Field names, media types, schemes and hosts are case-insensitive (RFC 9110 §5.1, §8.3.1, RFC 3986 §3.1, §3.2.2):
/// what a server or a caller writes in another case is read as the same thing.
final class HeaderCaseTests: XCTestCase {
    private struct Item: Codable, Equatable, Sendable { let name: String }

    private struct Endpoint: TypedConnector {
        typealias Response = Item
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/item" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
    }

    /// Reads `name=<value>` bodies.
    private struct KeyValueDecoder: ResponseBodyDecoder {
        func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
            let text = String(decoding: data, as: UTF8.self)
            let json = try JSONSerialization.data(withJSONObject: ["name": String(text.dropFirst("name=".count))])
            return try JSONDecoder().decode(type, from: json)
        }
    }

    private let origin = URL(string: "https://api.example.com/start")!

    private func redirect(to location: String) -> ConnectResponse {
        ConnectResponse(request: ConnectRequest(url: origin), statusCode: 302, headers: ["Location": location])!
    }

    private func signed() -> ConnectRequest {
        var request = ConnectRequest(url: origin)
        request.setValue("Bearer t", forHTTPHeaderField: "AUTHORIZATION")
        request.setValue("k", forHTTPHeaderField: "x-API-key")
        request.setValue("a=1", forHTTPHeaderField: "COOKIE")
        return request
    }

    func testARedirectInAnotherCaseStaysOnTheOriginAndLeavingItDropsCredentialsInAnyCase() throws {
        for location in ["HTTPS://API.EXAMPLE.COM/b", "Https://Api.Example.Com:443/b"] {
            let next = try XCTUnwrap(RedirectRule.next(after: signed(), answeredBy: redirect(to: location)))
            XCTAssertEqual(next.request.value(forHTTPHeaderField: "Authorization"), "Bearer t", location)
        }
        for location in ["HTTPS://OTHER.EXAMPLE.COM/b", "HTTP://API.EXAMPLE.COM/b", "https://api.example.com./b"] {
            let next = try XCTUnwrap(RedirectRule.next(after: signed(), answeredBy: redirect(to: location)))
            XCTAssertNil(next.request.value(forHTTPHeaderField: "Authorization"), location)
            XCTAssertNil(next.request.value(forHTTPHeaderField: "X-Api-Key"), location)
            XCTAssertNil(next.request.value(forHTTPHeaderField: "Cookie"), location)
            XCTAssertTrue(next.request.headerFields.isEmpty, "\(location): \(next.request.headerFields)")
        }
    }

    func testAResponsesMediaTypeChoosesItsDecoderInAnyCase() throws {
        var decoders = ResponseDecoders.default
        decoders.register(KeyValueDecoder(), for: "Text/X-Key-Value")
        let cases: [(String, String)] = [
            ("TEXT/X-KEY-VALUE; CHARSET=UTF-8", "name=kv"),
            ("Application/JSON; Charset=UTF-8", #"{"name":"kv"}"#),
            ("Application/Problem+JSON", #"{"name":"kv"}"#),
        ]
        for (type, body) in cases {
            let transport = FakeTransport.answering(.data(Data(body.utf8), headers: ["content-TYPE": type]))
            let connect = Connect(
                transport: transport, retryPolicy: nil, settings: Connect.Settings(decoders: decoders))
            XCTAssertEqual(try connect.request(Endpoint()).decoded(toType: Item.self).wait(), Item(name: "kv"), type)
        }
    }

    func testAnErrorBodyIsReadByItsMediaTypeInAnyCase() throws {
        let problem = #"{"type":"about:blank","title":"Forbidden","detail":"no access"}"#
        let answers: [(String, String)] = [
            ("Application/Problem+JSON; Charset=UTF-8", problem),
            ("TEXT/PLAIN; CHARSET=UTF-8", "the plain reason"),
        ]
        var messages: [String?] = []
        for (type, body) in answers {
            let transport = FakeTransport.answering(
                .data(Data(body.utf8), status: 403, headers: ["CONTENT-TYPE": type]))
            let connect = Connect(transport: transport, retryPolicy: nil)
            XCTAssertThrowsError(try connect.request(Endpoint()).decoded(toType: Item.self).wait(), type) {
                messages.append(($0 as? ConnectError)?.message)
            }
        }
        XCTAssertEqual(messages.count, 2)
        XCTAssertTrue(messages.first??.contains("Forbidden: no access") ?? false, "\(messages)")
        XCTAssertTrue(messages.last??.contains("the plain reason") ?? false, "\(messages)")
    }

    func testFieldNamesInAnyCaseAreOneName() {
        var fields: HeaderFields = ["content-type": "a", "CONTENT-TYPE": "b"]
        XCTAssertEqual(fields[.contentType], "a, b")
        XCTAssertEqual(fields[values: "Content-type"], ["a", "b"])
        fields["cOOKIE"] = "x=1"
        fields.append(HeaderField(name: "Cookie", value: "y=2"))
        XCTAssertEqual(fields[.cookie], "x=1; y=2")
        XCTAssertEqual(Set([HeaderField.Name("X-A"), "x-a", "X-a"]).count, 1)
        XCTAssertEqual(ResponseHead(status: 200, headerFields: ["ETAG": "1"]).headerFields["etag"], "1")
    }

    func testSecretFieldsInAnyCaseAreHidden() {
        let fields: HeaderFields = [
            "AUTHORIZATION": "Bearer s3cr3t", "set-COOKIE": "sid=s3cr3t", "X-API-KEY": "s3cr3t",
        ]
        XCTAssertFalse(fields.description.contains("s3cr3t"), fields.description)
        var request = ConnectRequest(url: origin)
        request.setValue("Bearer s3cr3t", forHTTPHeaderField: "aUtHoRiZaTiOn")
        XCTAssertFalse(request.description.contains("s3cr3t"), request.description)
        XCTAssertFalse(String(reflecting: request).contains("s3cr3t"))
    }

    /// An event source is recognised by its media type in any case, a `charset` parameter beside it.
    func testAnEventStreamInAnotherCaseIsAnEventStream() async throws {
        let transport = FakeTransport()
        let headers = ["content-type": "Text/Event-Stream; Charset=UTF-8"]
        transport.stub(.get, "/events", with: .stream([Data("data: a\n\n".utf8)], headers: headers))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let source = connect.eventSource(Route("/events", baseURL: URL(string: "https://api.example.com")!))
        var events = source.makeAsyncIterator()
        let first = try await events.next()
        XCTAssertEqual(first?.data, "a")
    }
}
