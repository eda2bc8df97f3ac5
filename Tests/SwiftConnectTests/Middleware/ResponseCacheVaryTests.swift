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
    /// With `storage`, the cache writes to it; `transport` and `count`, when given, are shared with another client
    /// (a second cache on the same storage, as after a restart).
    private func client(
        vary: [String], storage: (any ResponseCacheStorage)? = nil, transport: FakeTransport = FakeTransport(),
        count: Protected<Int> = Protected(0)
    ) -> (transport: FakeTransport, get: ([(String, String)]) throws -> String) {
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
        // A value with `|` becomes repeated field lines, one a part (a connector's headers replace each other).
        let repeating = AnyMiddleware { request, _, next in
            var request = request
            for field in request.headerFields where field.value.contains("|") {
                request.setValue(nil, forHTTPHeaderField: field.name.rawName)
                for part in field.value.split(separator: "|") {
                    request.addValue(String(part), forHTTPHeaderField: field.name.rawName)
                }
            }
            return next(request)
        }
        let connect = Connect(
            transport: transport, middlewares: [repeating], retryPolicy: nil,
            responseCache: ResponseCache(storage: storage),
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

    /// RFC 9111 §4.1: the values of list fields are compared without the blanks around their commas, which the
    /// field's syntax allows and which change nothing: `gzip,deflate` is `gzip, deflate`.
    func testListValuesThatDifferOnlyInBlanksAroundCommasMatch() throws {
        let (transport, get) = client(vary: ["Accept-Encoding"])
        XCTAssertEqual(try get([("Accept-Encoding", "gzip,deflate")]), "1")
        XCTAssertEqual(try get([("Accept-Encoding", "gzip, deflate")]), "1")
        XCTAssertEqual(try get([("Accept-Encoding", "gzip ,\tdeflate")]), "1")
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(try get([("Accept-Encoding", "gzip, br")]), "2", "another value is another variant")
        XCTAssertEqual(try get([("Accept-Encoding", "deflate, gzip")]), "3", "the order of the elements counts")
    }

    /// Repeated field lines are the one line that joins them (RFC 9110 §5.3), whatever blanks either had.
    func testRepeatedFieldLinesMatchTheirCombinedLine() throws {
        let (transport, get) = client(vary: ["Accept-Encoding"])
        XCTAssertEqual(try get([("Accept-Encoding", "gzip,deflate")]), "1")
        XCTAssertEqual(try get([("Accept-Encoding", "gzip|deflate")]), "1")
        XCTAssertEqual(try get([("Accept-Encoding", "gzip |\tdeflate")]), "1")
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(try get([("Accept-Encoding", "gzip|br")]), "2")
    }

    /// Only blanks are normalised: values that differ in case are different values (only some fields are
    /// case-insensitive, and the cache does not guess which), and so are blanks and commas inside a quoted string.
    func testCaseAndQuotedStringsAreComparedAsSent() throws {
        let (_, get) = client(vary: ["Accept-Encoding"])
        XCTAssertEqual(try get([("Accept-Encoding", "gzip")]), "1")
        XCTAssertEqual(try get([("Accept-Encoding", "GZIP")]), "2")
        let (quotedTransport, quoted) = client(vary: ["X-Variant"])
        XCTAssertEqual(try quoted([("X-Variant", "a, \"b, c\"")]), "1")
        XCTAssertEqual(try quoted([("X-Variant", "a,\"b, c\"")]), "1", "blanks outside the quotes go")
        XCTAssertEqual(try quoted([("X-Variant", "a, \"b,c\"")]), "2", "blanks inside the quotes stay")
        XCTAssertEqual(try quoted([("X-Variant", "a, \"b\\\", c\"")]), "3", "an escaped quote does not end it")
        XCTAssertEqual(try quoted([("X-Variant", "a, \"b\\\",c\"")]), "4")
        XCTAssertEqual(quotedTransport.requests.count, 4)
    }

    /// A response read from the storage (by another cache, as after a restart) matches so too.
    func testAStoredResponseReadFromTheStorageMatchesSo() throws {
        let storage = MemoryResponseStorage()
        let transport = FakeTransport()
        let count = Protected(0)
        let (_, first) = client(vary: ["Accept-Encoding"], storage: storage, transport: transport, count: count)
        XCTAssertEqual(try first([("Accept-Encoding", "gzip, deflate")]), "1")
        let (_, later) = client(vary: ["Accept-Encoding"], storage: storage, transport: transport, count: count)
        XCTAssertEqual(try later([("Accept-Encoding", "gzip,deflate")]), "1", "served from the storage")
        XCTAssertEqual(transport.requests.count, 1)
    }
}
