import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The migration guides' claims about where SwiftConnect behaves differently from Remotli, Konex and JustAPIs (and
/// what to write instead), each shown on a fake transport: the guides' snippets themselves run in
/// `MigrationGuideTests`.
final class MigrationSemanticsTests: XCTestCase {
    private static let gateway = URL(string: "http://gateway.test:5000/")!

    /// JustAPIs wrote an array as `ids[]=1&ids[]=2`; SwiftConnect repeats the key as written, so the guide says to
    /// name it `ids[]`.
    func testAnArrayRepeatsItsKeyAsWrittenSoJustAPIsBracketsGoInTheName() throws {
        let transport = FakeTransport.answering(.status(200))
        let gateway = Connect(baseURL: Self.gateway, transport: transport)
        _ = try gateway.request("/foo", parameters: ["ids": [1, 2]]).wait()
        _ = try gateway.request("/foo", parameters: ["ids[]": [1, 2]]).wait()
        let sent = transport.requests.map { request in
            URLComponents(url: request.url!, resolvingAgainstBaseURL: false)?.queryItems ?? []
        }
        XCTAssertEqual(sent.first, [URLQueryItem(name: "ids", value: "1"), URLQueryItem(name: "ids", value: "2")])
        XCTAssertEqual(sent.last, [URLQueryItem(name: "ids[]", value: "1"), URLQueryItem(name: "ids[]", value: "2")])
    }

    /// JustAPIs' `params` were query items whatever the method; a dictionary here is a POST's body, and query items
    /// are written as `.query`.
    func testADictionaryIsAPostsBodyAndQueryItemsAreWrittenAsSuch() throws {
        let transport = FakeTransport.answering(.status(200))
        let gateway = Connect(baseURL: Self.gateway, transport: transport)
        _ = try gateway.request("/search", method: .post, parameters: ["page": 2]).wait()
        let body = Data(#"{"q":"swift"}"#.utf8)
        let query = Parameter.query(key: "page", value: "2")
        let post = Route(
            "/search", method: .post,
            parameters: CompositeParameters(query, .body(body, contentType: "application/json")))
        _ = try gateway.request(post).wait()
        let (dictionary, written) = (transport.requests[0], transport.requests[1])
        XCTAssertEqual(dictionary.url?.absoluteString, "http://gateway.test:5000/search")
        XCTAssertEqual(dictionary.httpBody.map { String(decoding: $0, as: UTF8.self) }, #"{"page":2}"#)
        XCTAssertEqual(written.url?.absoluteString, "http://gateway.test:5000/search?page=2")
        XCTAssertEqual(written.httpBody, body)
        XCTAssertEqual(written.value(forHTTPHeaderField: "Content-Type"), "application/json")
    }

    /// A JustAPIs gateway handed a 404 to the callback as a response; here it fails, unless the call accepts every
    /// status. Konex handed it to `onSuccess` (it read no status at all), and its validators saw it: here validators
    /// see only the responses the error handler accepted.
    func testAnErrorStatusFailsTheCallUnlessTheCallAcceptsEveryStatus() throws {
        let transport = FakeTransport()
        transport.stub(.get, "/missing", with: .json(string: #"{"message":"no such thing"}"#, status: 404))
        let (validated, processed) = (Counter(), Counter())
        let validator = AnyResponseValidator { _ in validated.increment() }
        let processor = AnyResponseProcessor { response in
            processed.increment()
            return response
        }
        let gateway = Connect(
            transport: transport, configuration: ServerConfiguration(baseURL: Self.gateway),
            settings: Connect.Settings(options: RequestOptions(validators: [validator], processors: [processor])))

        let error = try XCTUnwrap(connectError(of: gateway.response(for: Route("/missing"))))
        XCTAssertEqual(error.kind, .serverMessage)
        XCTAssertEqual(error.statusCode, 404)
        XCTAssertEqual(error.message, "no such thing")
        XCTAssertEqual(error.body.map { String(decoding: $0, as: UTF8.self) }, #"{"message":"no such thing"}"#)

        let everyStatus = RequestOptions(acceptsEveryStatus: true)
        let missing = try gateway.response(for: Route("/missing"), options: everyStatus).wait()
        XCTAssertEqual(missing.statusCode, 404)
        XCTAssertEqual(validated.value, 0, "validators see only the responses the error handler accepted")
        XCTAssertEqual(processed.value, 0, "and so do processors")
    }

    /// JustAPIs' `CompoundResponseProcessor` skipped the processors after one that signalled an error; so does the
    /// list of processors here, and the error arrives as a `.rejected` ConnectError with it underneath.
    func testAProcessorThatThrowsSkipsTheProcessorsAfterIt() {
        struct MissingRequestID: Error {}
        let later = Counter()
        let options = RequestOptions(processors: [
            AnyResponseProcessor { _ in throw MissingRequestID() },
            AnyResponseProcessor { response in
                later.increment()
                return response
            },
        ])
        let connect = Connect(
            transport: FakeTransport.answering(.status(200)), configuration: ServerConfiguration(baseURL: Self.gateway))
        let error = connectError(of: connect.request(Route("/foo"), options: options))
        XCTAssertEqual(error?.kind, .rejected)
        XCTAssertTrue(error?.underlyingError is MissingRequestID)
        XCTAssertEqual(later.value, 0)
    }

    /// JustAPIs stored a response with `cacheResponseWithExpiration` above 0 only; a rule of 0 seconds here neither
    /// serves nor stores.
    func testACacheRuleOfZeroSecondsNeitherServesNorStores() throws {
        let transport = FakeTransport.answering(.json(string: #"{"id":1}"#))
        let cache = ResponseCache()
        let connect = Connect(
            transport: transport, responseCache: cache, configuration: ServerConfiguration(baseURL: Self.gateway))
        let never = RequestOptions(cache: CacheRule(timeToLive: 0))
        let keep = RequestOptions(cache: CacheRule(timeToLive: 300))
        _ = try connect.request(Route("/foo"), options: never).wait()
        _ = try connect.request(Route("/foo"), options: keep).wait()  // nothing stored by the first: fetched
        _ = try connect.request(Route("/foo"), options: keep).wait()  // stored by the second: served
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(cache.hitCount, 1)
    }

    /// The default key is the method and the whole URL, query included, as JustAPIs' method, path and params were.
    func testTheDefaultCacheKeyNamesTheQuery() throws {
        let transport = FakeTransport.answering(.json(string: #"{"id":1}"#))
        let cache = ResponseCache()
        let connect = Connect(
            transport: transport, responseCache: cache, configuration: ServerConfiguration(baseURL: Self.gateway))
        let keep = RequestOptions(cache: CacheRule(timeToLive: 300))
        for id in [1, 2, 1] {
            _ = try connect.request(Route("/foo", parameters: ["id": id]), options: keep).wait()
        }
        XCTAssertEqual(transport.requests.compactMap { $0.url?.query }, ["id=1", "id=2"])
        XCTAssertEqual(cache.hitCount, 1)
    }

    /// A request waits in a paused queue within its deadline (the connector's `timeout`, 60 s by default), not for
    /// ever as in a paused JustAPIs gateway: then it fails `.timedOut`, unsent, and leaves the queue.
    func testARequestWaitingInAPausedQueueEndsAtItsDeadlineUnsent() {
        let transport = FakeTransport.answering(.status(200))
        let queue = RequestQueue(maxConcurrentRequests: 2)
        let connect = Connect(
            transport: transport, requestQueue: queue, configuration: ServerConfiguration(baseURL: Self.gateway))
        queue.pause()
        let waiting = connect.request(Route("/foo", timeout: 0.2))
        XCTAssertEqual(connectError(of: waiting)?.kind, .timedOut)
        XCTAssertEqual(queue.pendingCount, 0)
        queue.resume()
        XCTAssertTrue(transport.requests.isEmpty)
    }
}
