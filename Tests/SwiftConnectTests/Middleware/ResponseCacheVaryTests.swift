import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// RFC 9111 §4.1: a stored response whose `Vary` names request headers answers only a request whose headers it names
/// match the first request's; `Vary: *` never matches.
final class ResponseCacheVaryTests: XCTestCase {
    /// A client whose server answers with the fields `vary` (one `Vary` field each) and a body counting the
    /// requests, with a cache, and a function that asks `GET /a` with some headers and returns the body.
    private func client(vary: [String]) -> (transport: FakeTransport, get: ([(String, String)]) throws -> String) {
        let transport = FakeTransport()
        let count = Protected(0)
        transport.stub(
            "/a",
            with: .handler { request in
                let number = count.withLock { count in
                    count += 1
                    return count
                }
                let fields = HeaderFields(vary.map { HeaderField(name: "Vary", value: $0) })
                return .success(
                    ConnectResponse(
                        request: request, head: ResponseHead(status: 200, headerFields: fields),
                        data: Data("\(number)".utf8))!)
            })
        let connect = Connect(
            transport: transport, retryPolicy: nil, responseCache: ResponseCache(),
            configuration: ServerConfiguration(host: "api.example.com"))
        let rule = RequestOptions(cache: CacheRule(timeToLive: 300))
        return (
            transport,
            { headers in
                let route = Route("/a", headers: headers.map { HTTPHeader(name: $0.0, value: $0.1) })
                return String(decoding: try connect.request(route, options: rule).wait(timeout: 5), as: UTF8.self)
            }
        )
    }

    /// A header the first request did not have matches only its absence, not an empty value, and the other way
    /// round.
    func testAnAbsentHeaderMatchesOnlyAnAbsentOne() throws {
        let (_, get) = client(vary: ["X-Variant"])
        XCTAssertEqual(try get([]), "1")
        XCTAssertEqual(try get([]), "1")
        XCTAssertEqual(try get([("X-Variant", "")]), "2", "an empty value is not an absent one")
        XCTAssertEqual(try get([("X-Variant", "")]), "2")
        XCTAssertEqual(try get([]), "3", "an absent value is not an empty one")
    }

    /// The names `Vary` lists match request headers in any case.
    func testTheNamesMatchInAnyCase() throws {
        let (transport, get) = client(vary: ["x-VARIANT"])
        XCTAssertEqual(try get([("X-Variant", "a")]), "1")
        XCTAssertEqual(try get([("x-variant", "a")]), "1")
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(try get([("X-VARIANT", "b")]), "2")
    }

    /// `*` in any of several `Vary` fields, or among other names, keeps the response out of the cache.
    func testAStarAnywhereIsNeverServed() throws {
        for vary in [["*"], ["Accept", "*"], ["Accept, *"], [" * "]] {
            let (transport, get) = client(vary: vary)
            XCTAssertEqual(try get([]), "1", "\(vary)")
            XCTAssertEqual(try get([]), "2", "\(vary)")
            XCTAssertEqual(transport.requests.count, 2, "\(vary)")
        }
    }

    /// The names of several `Vary` fields all count.
    func testTheNamesOfSeveralFieldsAllCount() throws {
        let (_, get) = client(vary: ["X-One", "X-Two"])
        XCTAssertEqual(try get([("X-One", "1"), ("X-Two", "1")]), "1")
        XCTAssertEqual(try get([("X-One", "1"), ("X-Two", "1")]), "1")
        XCTAssertEqual(try get([("X-One", "1"), ("X-Two", "2")]), "2", "the second field's name counts")
    }

    /// The blanks around a value are not sent (the transport's door trims them): values that differ only in them are
    /// the same value, a blank one the empty one.
    func testValuesThatDifferOnlyInBlanksAroundThemMatch() throws {
        let (transport, get) = client(vary: ["X-Variant"])
        XCTAssertEqual(try get([("X-Variant", "a")]), "1")
        XCTAssertEqual(try get([("X-Variant", " a\t")]), "1")
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(try get([("X-Variant", "")]), "2")
        XCTAssertEqual(try get([("X-Variant", "  ")]), "2")
        XCTAssertEqual(transport.requests.count, 2)
    }

    /// Credentials that differ only in the blanks around them are the same credentials, sent alike: one stored answer.
    func testCredentialsThatDifferOnlyInBlanksAroundThemShareTheirAnswer() throws {
        let (transport, get) = client(vary: [])
        XCTAssertEqual(try get([("Authorization", "Bearer t")]), "1")
        XCTAssertEqual(try get([("Authorization", "Bearer t ")]), "1")
        XCTAssertEqual(try get([("Authorization", "Bearer u")]), "2")
        XCTAssertEqual(transport.requests.count, 2)
    }
}
