import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A caller's own conditional GET or HEAD meeting a fresh stored response (RFC 9111 §4.3.2, RFC 9110 §13): the cache
/// answers `If-None-Match` and `If-Modified-Since` itself, and sends a request with a condition only the origin server
/// can judge (`If-Match`, `If-Unmodified-Since`, `If-Range`), whose answer leaves the stored response whole.
final class ResponseCacheConditionalRequestTests: XCTestCase {
    private let base = URL(string: "https://api.example.com")!
    private let rule = RequestOptions(cache: CacheRule(timeToLive: 60))
    private static let lastModified = "Mon, 12 Jan 1970 13:46:40 GMT"

    /// An origin server: an unconditional request gets `200 version <n>` with `headers(n)`; a request with any
    /// condition gets `conditionalAnswer` while set.
    private final class Origin: @unchecked Sendable {
        // @unchecked Sendable: `lock` protects every var.
        private let lock = NSLock()
        private var _version = 1
        private var _headers: @Sendable (Int) -> [String: String] = { ["ETag": "\"v\($0)\""] }
        private var _conditionalAnswer: (status: Int, headers: [String: String], body: String)?

        var version: Int {
            get { lock.withLock { _version } }
            set { lock.withLock { _version = newValue } }
        }

        var headers: @Sendable (Int) -> [String: String] {
            get { lock.withLock { _headers } }
            set { lock.withLock { _headers = newValue } }
        }

        var conditionalAnswer: (status: Int, headers: [String: String], body: String)? {
            get { lock.withLock { _conditionalAnswer } }
            set { lock.withLock { _conditionalAnswer = newValue } }
        }

        func answer(_ request: URLRequest) -> Result<ConnectResponse, any Error> {
            let (version, headers, conditional) = lock.withLock { (_version, _headers, _conditionalAnswer) }
            let fields = ["If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range"]
            if let conditional, fields.contains(where: { request.value(forHTTPHeaderField: $0) != nil }) {
                var answerHeaders = conditional.headers
                answerHeaders["Content-Length"] = String(conditional.body.utf8.count)
                return .success(
                    ConnectResponse(
                        request: request, statusCode: conditional.status, headers: answerHeaders,
                        data: Data(conditional.body.utf8))!)
            }
            let body = request.httpMethod == "HEAD" ? Data() : Data("version \(version)".utf8)
            var answerHeaders = headers(version)
            answerHeaders["Content-Length"] = String("version \(version)".utf8.count)
            return .success(ConnectResponse(request: request, statusCode: 200, headers: answerHeaders, data: body)!)
        }
    }

    private func client(
        _ origin: Origin, storage: (any ResponseCacheStorage)? = nil
    ) -> (Connect, FakeTransport, ResponseCache) {
        let transport = FakeTransport.answering(.handler { origin.answer($0) })
        let cache = ResponseCache(maxBytes: 1_000_000, storage: storage)
        let connect = Connect(transport: transport, retryPolicy: nil, responseCache: cache)
        return (connect, transport, cache)
    }

    /// What reached the caller of `method /a` with `headers` under the rule: the response, or the status and body of
    /// the error it came as.
    private func outcome(
        _ connect: Connect, method: HTTPMethod = .get, headers: [HTTPHeader] = []
    ) -> (status: Int?, body: String, headers: [String: String]) {
        do {
            let response = try connect.response(
                for: Route("/a", baseURL: base, method: method, headers: headers), options: rule
            ).wait(timeout: 5)
            var fields: [String: String] = [:]
            for field in response.head.headerFields { fields[field.name.canonicalName] = field.value }
            return (response.statusCode, String(decoding: response.data, as: UTF8.self), fields)
        } catch let error as ConnectError {
            var fields: [String: String] = [:]
            for (name, value) in error.headers { fields[name.lowercased()] = value }
            return (error.statusCode, String(decoding: error.body ?? Data(), as: UTF8.self), fields)
        } catch {
            XCTFail("\(error)")
            return (nil, "", [:])
        }
    }

    // MARK: - Conditions for the origin server (RFC 9111 §4.3.2: "not applicable to a cache")

    /// `If-Match`, `If-Unmodified-Since` and `If-Range` (with a `Range`) are the origin server's to judge: a fresh
    /// stored response does not answer them; the request goes to the network as it is, and its caller gets the
    /// server's answer (here a 412 for the first two, a 206 for the range).
    func testAFreshStoredResponseDoesNotAnswerConditionsForTheOrigin() throws {
        let cases: [(headers: [HTTPHeader], status: Int, body: String)] = [
            ([HTTPHeader(name: "If-Match", value: "\"v0\"")], 412, ""),
            ([HTTPHeader(name: "If-Match", value: "\"v1\"")], 412, ""),
            ([HTTPHeader(name: "If-Unmodified-Since", value: "Thu, 01 Jan 1970 00:00:00 GMT")], 412, ""),
            (
                [HTTPHeader(name: "Range", value: "bytes=0-2"), HTTPHeader(name: "If-Range", value: "\"v1\"")], 206,
                "ver"
            ),
        ]
        for (headers, status, body) in cases {
            let origin = Origin()
            let (connect, transport, _) = client(origin)
            XCTAssertEqual(outcome(connect).body, "version 1")
            origin.conditionalAnswer = (status, ["ETag": "\"v1\"", "Content-Range": "bytes 0-2/9"], body)

            let answer = outcome(connect, headers: headers)
            XCTAssertEqual(transport.requests.count, 2, "sent to the origin: \(headers)")
            for header in headers {
                XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: header.name), header.value)
            }
            XCTAssertEqual(answer.status, status, "\(headers)")
            XCTAssertEqual(answer.body, body, "\(headers)")
        }
    }

    /// A 412 to `If-Match` leaves the stored response as it was, in memory and in the storage.
    func testA412ToIfMatchLeavesTheStoredResponse() throws {
        let origin = Origin()
        let storage = MemoryResponseStorage()
        let (connect, transport, _) = client(origin, storage: storage)
        XCTAssertEqual(outcome(connect).body, "version 1")
        origin.version = 2
        origin.conditionalAnswer = (412, ["ETag": "\"v2\""], "")

        XCTAssertEqual(outcome(connect, headers: [HTTPHeader(name: "If-Match", value: "\"v1\"")]).status, 412)
        XCTAssertEqual(transport.requests.count, 2)

        let served = outcome(connect)
        XCTAssertEqual(transport.requests.count, 2, "served from memory")
        XCTAssertEqual(served.status, 200)
        XCTAssertEqual(served.body, "version 1")
        XCTAssertEqual(served.headers["etag"], "\"v1\"")
        let (restarted, restartedTransport, _) = client(origin, storage: storage)
        XCTAssertEqual(outcome(restarted, headers: [HTTPHeader(name: "If-Match", value: "\"v1\"")]).status, 412)
        XCTAssertEqual(restartedTransport.requests.count, 1, "a response read from the storage does not answer it")
        XCTAssertEqual(outcome(restarted).body, "version 1")
        XCTAssertEqual(restartedTransport.requests.count, 1, "served from the storage")
    }

    /// A write its call's rule caches as a read (a PUT under a custom key) with `If-Match`, the guard against lost
    /// updates, reaches the server: the stored answer of an earlier PUT does not answer it in the server's place.
    func testAPutARuleCachesWithIfMatchReachesTheServer() throws {
        let origin = Origin()
        let (connect, transport, _) = client(origin)
        let putRule = RequestOptions(cache: CacheRule(timeToLive: 60, key: "put-a", keyIncludesBody: true))
        let put = { (headers: [HTTPHeader]) in
            try connect.response(
                for: Route(
                    "/a", baseURL: self.base, method: .put, parameters: ["x": 1] as JSONObject, headers: headers),
                options: putRule
            ).wait(timeout: 5)
        }
        XCTAssertEqual(try put([]).statusCode, 200)
        XCTAssertEqual(try put([]).statusCode, 200)
        XCTAssertEqual(transport.requests.count, 1, "the rule makes the PUT a read")
        origin.conditionalAnswer = (412, [:], "")

        XCTAssertThrowsError(try put([HTTPHeader(name: "If-Match", value: "\"v0\"")])) { error in
            XCTAssertEqual((error as? ConnectError)?.statusCode, 412)
        }
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "If-Match"), "\"v0\"")
    }

    /// `only-if-cached` with `If-Match`: no stored response can answer the condition, and nothing may be sent, so the
    /// call fails with nothing sent, as it does when nothing is stored; its error says that a response is stored and
    /// why it cannot answer, not that none is.
    func testOnlyIfCachedWithIfMatchFailsWithNothingSent() throws {
        let origin = Origin()
        let (connect, transport, _) = client(origin)
        XCTAssertEqual(outcome(connect).body, "version 1")

        for field in ["If-Match", "If-Unmodified-Since"] {
            let route = Route(
                "/a", baseURL: base,
                headers: [
                    HTTPHeader(name: field, value: field == "If-Match" ? "\"v1\"" : Self.lastModified),
                    HTTPHeader(name: "Cache-Control", value: "only-if-cached"),
                ])
            XCTAssertThrowsError(try connect.response(for: route, options: rule).wait(timeout: 5)) { error in
                let message = (error as? ConnectError)?.message ?? ""
                XCTAssertFalse(message.contains("no stored response"), message)
                XCTAssertTrue(message.contains(field), message)
            }
        }
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(outcome(connect).body, "version 1")
        XCTAssertEqual(transport.requests.count, 1)
    }

    /// A 206 to `If-Range` with a `Range` is the caller's, never stored, and never served as a 200: the stored 200
    /// keeps answering, whole, from memory and from the storage.
    func testA206ToIfRangeIsNotStoredAndLeavesTheStoredResponse() throws {
        let origin = Origin()
        let storage = MemoryResponseStorage()
        let (connect, transport, _) = client(origin, storage: storage)
        XCTAssertEqual(outcome(connect).body, "version 1")
        origin.conditionalAnswer = (206, ["ETag": "\"v1\"", "Content-Range": "bytes 0-2/9"], "ver")

        let partial = outcome(
            connect,
            headers: [HTTPHeader(name: "Range", value: "bytes=0-2"), HTTPHeader(name: "If-Range", value: "\"v1\"")]
        )
        XCTAssertEqual(partial.status, 206)
        XCTAssertEqual(partial.body, "ver")

        let served = outcome(connect)
        XCTAssertEqual(transport.requests.count, 2, "served from memory")
        XCTAssertEqual(served.status, 200)
        XCTAssertEqual(served.body, "version 1")
        XCTAssertNil(served.headers["content-range"])
        let (restarted, restartedTransport, _) = client(origin, storage: storage)
        let fromStorage = outcome(restarted)
        XCTAssertEqual(restartedTransport.requests.count, 0, "served from the storage")
        XCTAssertEqual(fromStorage.status, 200)
        XCTAssertEqual(fromStorage.body, "version 1")
    }

    /// A 200 with new validators (an `If-Range` whose tag is not current gets the whole new representation) replaces
    /// the stored response, in memory and in the storage, as any new 200 does.
    func testA200WithNewValidatorsToIfRangeReplacesTheStoredResponse() throws {
        let origin = Origin()
        let storage = MemoryResponseStorage()
        let (connect, transport, _) = client(origin, storage: storage)
        XCTAssertEqual(outcome(connect).body, "version 1")
        origin.version = 2
        origin.conditionalAnswer = (200, ["ETag": "\"v2\""], "version 2")

        let answer = outcome(
            connect,
            headers: [HTTPHeader(name: "Range", value: "bytes=0-2"), HTTPHeader(name: "If-Range", value: "\"v1\"")]
        )
        XCTAssertEqual(answer.status, 200)
        XCTAssertEqual(answer.body, "version 2")

        let served = outcome(connect)
        XCTAssertEqual(transport.requests.count, 2, "served from memory")
        XCTAssertEqual(served.body, "version 2")
        XCTAssertEqual(served.headers["etag"], "\"v2\"")
        let (restarted, restartedTransport, _) = client(origin, storage: storage)
        XCTAssertEqual(outcome(restarted).body, "version 2")
        XCTAssertEqual(restartedTransport.requests.count, 0, "served from the storage")
    }

    /// A 304 to a request with `If-None-Match` and `If-Match` that validates the stored response refreshes it, as a
    /// 304 to the caller's own conditional request does; its caller gets the 304.
    func testA304ToIfNoneMatchWithIfMatchRefreshesTheStoredResponse() throws {
        let origin = Origin()
        let storage = MemoryResponseStorage()
        let (connect, transport, _) = client(origin, storage: storage)
        XCTAssertEqual(outcome(connect).body, "version 1")
        origin.conditionalAnswer = (304, ["ETag": "\"v1\"", "X-Refreshed": "yes"], "")

        let answer = outcome(
            connect,
            headers: [
                HTTPHeader(name: "If-None-Match", value: "\"v1\""), HTTPHeader(name: "If-Match", value: "\"v1\""),
            ])
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(answer.status, 304)

        let served = outcome(connect)
        XCTAssertEqual(transport.requests.count, 2, "served from memory")
        XCTAssertEqual(served.body, "version 1")
        XCTAssertEqual(served.headers["x-refreshed"], "yes")
        let (restarted, restartedTransport, _) = client(origin, storage: storage)
        let fromStorage = outcome(restarted)
        XCTAssertEqual(restartedTransport.requests.count, 0, "served from the storage")
        XCTAssertEqual(fromStorage.body, "version 1")
        XCTAssertEqual(fromStorage.headers["x-refreshed"], "yes")
    }

    // MARK: - If-Modified-Since without a stored Last-Modified (RFC 9111 §4.3.2, RFC 9110 §13.1.3)

    /// Without a `Last-Modified`, `If-Modified-Since` is compared with the stored response's `Date`: not older than
    /// it, a 304; older, the stored 200.
    func testIfModifiedSinceIsComparedWithTheStoredDateWithoutLastModified() throws {
        let origin = Origin()
        origin.headers = { ["ETag": "\"v\($0)\"", "Date": Self.lastModified] }
        let (connect, transport, _) = client(origin)
        XCTAssertEqual(outcome(connect).body, "version 1")

        for (value, status) in [
            (Self.lastModified, 304), ("Tue, 13 Jan 1970 00:00:00 GMT", 304), ("Mon, 12 Jan 1970 13:46:39 GMT", 200),
            ("yesterday", 200),
        ] {
            let served = outcome(connect, headers: [HTTPHeader(name: "If-Modified-Since", value: value)])
            XCTAssertEqual(transport.requests.count, 1, value)
            XCTAssertEqual(served.status, status, value)
            XCTAssertEqual(served.body.isEmpty, status == 304, value)
            if status == 304 {
                XCTAssertEqual(served.headers["date"], Self.lastModified, value)
                XCTAssertEqual(served.headers["etag"], "\"v1\"", value)
            }
        }
    }

    /// A stored `Date` that is no HTTP-date, or none, cannot judge `If-Modified-Since`: the stored 200 answers.
    func testIfModifiedSinceWithoutAValidStoredDateIsServedTheStoredResponse() throws {
        for date in ["yesterday", nil] {
            let origin = Origin()
            origin.headers = { version in ["ETag": "\"v\(version)\""].merging(date.map { ["Date": $0] } ?? [:]) { $1 } }
            let (connect, transport, _) = client(origin)
            XCTAssertEqual(outcome(connect).body, "version 1")

            let served = outcome(connect, headers: [HTTPHeader(name: "If-Modified-Since", value: Self.lastModified)])
            XCTAssertEqual(transport.requests.count, 1)
            XCTAssertEqual(served.status, 200, "\(date ?? "no Date")")
            XCTAssertEqual(served.body, "version 1")
        }
    }

    // MARK: - If-None-Match and its combinations

    /// `If-None-Match` wins over `If-Modified-Since` (RFC 9110 §13.1.3, §13.2.2): a matching tag gets a 304 whatever
    /// the date says, a tag that does not match the stored 200 whatever the date says.
    func testIfNoneMatchWinsOverIfModifiedSince() throws {
        let origin = Origin()
        origin.headers = { ["ETag": "\"v\($0)\"", "Last-Modified": Self.lastModified] }
        let (connect, transport, _) = client(origin)
        XCTAssertEqual(outcome(connect).body, "version 1")

        let older = "Thu, 01 Jan 1970 00:00:00 GMT"
        let matching = outcome(
            connect,
            headers: [
                HTTPHeader(name: "If-None-Match", value: "\"v1\""), HTTPHeader(name: "If-Modified-Since", value: older),
            ])
        XCTAssertEqual(matching.status, 304)
        let other = outcome(
            connect,
            headers: [
                HTTPHeader(name: "If-None-Match", value: "\"v0\""),
                HTTPHeader(name: "If-Modified-Since", value: Self.lastModified),
            ])
        XCTAssertEqual(other.status, 200)
        XCTAssertEqual(other.body, "version 1")
        XCTAssertEqual(transport.requests.count, 1)
    }

    /// `If-None-Match` compares weakly (RFC 9110 §13.1.2): a stored weak `ETag` matches its tag written weak or strong,
    /// in a list too; `*` matches any stored response; a list naming none of it gets the stored 200.
    func testIfNoneMatchComparesAWeakStoredETagWeakly() throws {
        let origin = Origin()
        origin.headers = { ["ETag": "W/\"v\($0)\""] }
        let (connect, transport, _) = client(origin)
        XCTAssertEqual(outcome(connect).body, "version 1")

        for (value, status) in [
            ("\"v1\"", 304), ("W/\"v1\"", 304), ("\"a\", W/\"v1\"", 304), ("\"a\",\"v1\"", 304), ("*", 304),
            ("\"a\", \"b\"", 200), ("W/\"v2\"", 200), ("v1", 200),
        ] {
            let served = outcome(connect, headers: [HTTPHeader(name: "If-None-Match", value: value)])
            XCTAssertEqual(served.status, status, value)
            XCTAssertEqual(served.body, status == 304 ? "" : "version 1", value)
        }
        XCTAssertEqual(transport.requests.count, 1)
    }

    /// A 304 stands for a `200 OK` (RFC 9110 §15.4.5; RFC 9111 §4.3.2 evaluates conditions against a stored 200 or
    /// 206): a fresh stored 203, 204 or 201 whose `ETag` the caller's `If-None-Match` names is served as it is, whole,
    /// never turned into a 304; nothing is sent.
    func testOnlyAStored200AnswersIfNoneMatchWithA304() throws {
        for status in [203, 204, 201] {
            let transport = FakeTransport.answering(
                .handler { request in
                    .success(
                        ConnectResponse(
                            request: request, statusCode: status,
                            headers: [
                                "ETag": "\"v1\"", "Cache-Control": "max-age=60", "Last-Modified": Self.lastModified,
                            ],
                            data: Data(status == 204 ? "".utf8 : "version 1".utf8))!)
                })
            let connect = Connect(
                transport: transport, retryPolicy: nil, responseCache: ResponseCache(maxBytes: 1_000_000))
            XCTAssertEqual(outcome(connect).status, status)

            for condition in [
                HTTPHeader(name: "If-None-Match", value: "\"v1\""),
                HTTPHeader(name: "If-Modified-Since", value: Self.lastModified),
            ] {
                let served = outcome(connect, headers: [condition])
                XCTAssertEqual(transport.requests.count, 1, "served from memory: \(status) \(condition.name)")
                XCTAssertEqual(served.status, status, "\(condition.name)")
                XCTAssertEqual(served.body, status == 204 ? "" : "version 1", "\(status) \(condition.name)")
            }
        }
    }

    /// `only-if-cached` meeting a stored response that is stale: the error says it is not fresh enough, not that
    /// nothing is stored.
    func testOnlyIfCachedWithAStaleStoredResponseSaysItIsStale() throws {
        let origin = Origin()
        origin.headers = { ["ETag": "\"v\($0)\"", "Cache-Control": "max-age=0"] }
        let (connect, transport, _) = client(origin)
        XCTAssertEqual(outcome(connect).body, "version 1")

        let route = Route("/a", baseURL: base, headers: [HTTPHeader(name: "Cache-Control", value: "only-if-cached")])
        XCTAssertThrowsError(try connect.response(for: route, options: rule).wait(timeout: 5)) { error in
            let message = (error as? ConnectError)?.message ?? ""
            XCTAssertFalse(message.contains("no stored response"), message)
            XCTAssertTrue(message.contains("not fresh enough"), message)
        }
        XCTAssertEqual(transport.requests.count, 1)
    }

    /// A HEAD with `If-None-Match` is answered 304 by a fresh HEAD response stored under its own key, and is not
    /// answered from a stored GET (it goes to the network); a GET is not answered from a stored HEAD.
    func testAConditionalHeadIsAnsweredOnlyFromAStoredHead() throws {
        let origin = Origin()
        let (connect, transport, _) = client(origin)
        XCTAssertEqual(outcome(connect).body, "version 1")
        let condition = [HTTPHeader(name: "If-None-Match", value: "\"v1\"")]

        origin.conditionalAnswer = (304, ["ETag": "\"v1\""], "")
        XCTAssertEqual(outcome(connect, method: .head, headers: condition).status, 304)
        XCTAssertEqual(transport.requests.count, 2, "a HEAD is not answered from the stored GET")
        origin.conditionalAnswer = nil
        XCTAssertEqual(outcome(connect, method: .head).status, 200)
        XCTAssertEqual(transport.requests.count, 3)

        let head = outcome(connect, method: .head, headers: condition)
        XCTAssertEqual(transport.requests.count, 3, "answered from the stored HEAD")
        XCTAssertEqual(head.status, 304)
        let get = outcome(connect, headers: condition)
        XCTAssertEqual(transport.requests.count, 3, "answered from the stored GET")
        XCTAssertEqual(get.status, 304)
        XCTAssertEqual(outcome(connect).body, "version 1", "the GET's body, not the HEAD's")
    }
}
