import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The migration guides' claims about where SwiftConnect behaves differently from Remotli, Konex, JustAPIs and
/// Alamofire (and what to write instead), each shown on a fake transport or a local server: the guides' snippets
/// themselves run in `MigrationGuideTests`.
final class MigrationSemanticsTests: XCTestCase {
    private static let gateway = URL(string: "http://gateway.test:5000/")!

    /// Remotli's `port` is `Route`'s `port:`, another origin than the client's server: such a route is signed only
    /// when it says `requiresAuthentication: true`, as the Remotli guide says.
    func testARouteOnAnotherPortIsSignedOnlyWhenItSaysSo() throws {
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(
            transport: transport, middlewares: [.basicAuthentication(username: "gate", password: "s3cret")],
            configuration: ServerConfiguration(host: "api.example.com"))
        _ = try connect.request(Route("/x")).wait()
        _ = try connect.request(Route("/x", port: 8443)).wait()
        _ = try connect.request(Route("/x", port: 8443, options: RequestOptions(requiresAuthentication: true))).wait()
        XCTAssertEqual(
            transport.requests.map { $0.url?.port.map(String.init) ?? "-" }, ["-", "8443", "8443"])
        XCTAssertEqual(
            transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") != nil }, [true, false, true])
    }

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

    // MARK: Coming from Alamofire

    /// Alamofire calls `uploadProgress` and `downloadProgress` on the main queue; the guide says the progress handler
    /// runs on a thread of the transport's instead, and reports the whole body.
    func testProgressIsReportedOffTheMainThread() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("POST", "/upload") { _ in .json(string: #"{"ok":true}"#) }
        let onMain = Guarded<[Bool]>([])
        let fractions = Guarded<[Double]>([])
        let options = RequestOptions(progress: { report in
            onMain.withLock { $0.append(Thread.isMainThread) }
            fractions.withLock { $0.append(report.uploadFraction ?? 0) }
        })
        let connect = Connect(baseURL: server.baseURL)
        let photo = File(name: "a.jpg", key: "photo", mimeType: .jpg, data: Data(repeating: 1, count: 64 * 1024))
        _ = try connect.upload(files: [photo], fields: [], to: Route("/upload", method: .post), options: options).wait()
        XCTAssertFalse(onMain.withLock { $0 }.isEmpty)
        XCTAssertFalse(onMain.withLock { $0 }.contains(true))
        XCTAssertEqual(fractions.withLock { $0 }.last, 1)
    }

    /// Cancelling the task that awaits a call throws `ConnectError` of kind `.cancelled`, not `CancellationError`.
    func testCancellingTheAwaitingTaskThrowsACancelledConnectError() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/slow", with: .never)
        let connect = Connect(transport: transport, configuration: ServerConfiguration(baseURL: Self.gateway))
        let task = Task { try await connect.request(Route("/slow")).value }
        _ = try await transport.requestsReceived(count: 1).value
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("the call should fail")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .cancelled)
        }
    }

    /// As Alamofire's `AuthenticationInterceptor`, one refresh serves every request rejected or waiting meanwhile.
    func testConcurrentRequestsShareOneRefresh() throws {
        let transport = FakeTransport()
        transport.stub(
            .get, "/me",
            with: .handler { request in
                let fresh = request.value(forHTTPHeaderField: "Authorization") == "Bearer new"
                let head = HTTPURLResponse(
                    url: request.url!, statusCode: fresh ? 200 : 401, httpVersion: "HTTP/1.1", headerFields: [:])!
                return .success(ConnectResponse(request: request, response: head, data: Data()))
            })
        let (refreshes, renewed) = (Counter(), Promise<AuthorizationToken>())
        let auth = AuthenticationMiddleware(credential: .bearer(token: "old")) { _ in
            refreshes.increment()
            return renewed.future
        }
        let connect = Connect(
            transport: transport, middlewares: [auth], configuration: ServerConfiguration(baseURL: Self.gateway))
        let calls = (1...3).map { _ in connect.request(Route("/me")) }
        _ = renewed.succeed(.bearer(token: "new"))
        XCTAssertEqual(try Future.all(calls).wait().count, 3)
        XCTAssertEqual(refreshes.value, 1)
    }

    /// The default policy retries a GET on 503 (3 attempts) and sends a POST once; a `ConnectMiddlewareProtocol`'s
    /// `retry` does not check the method.
    func testTheDefaultPolicyRetriesIdempotentMethodsAndTheHookAnyMethod() throws {
        struct RetryConflicts: ConnectMiddlewareProtocol {
            func retry(_ request: URLRequest, dueTo error: any Error, attempt: Int) -> RetryDecision {
                (error as? ConnectError)?.statusCode == 409 ? .retry : .doNotRetry
            }
        }
        let transport = FakeTransport()
        transport.stub(.get, "/todos", with: .status(503))
        transport.stub(.post, "/todos", with: .status(503))
        transport.stub(.post, "/conflict", with: [.status(409), .status(201)])
        let connect = Connect(
            transport: transport, middlewares: [RetryConflicts()],
            retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            configuration: ServerConfiguration(baseURL: Self.gateway))
        XCTAssertEqual(connectError(of: connect.request(Route("/todos")))?.attempts, 3)
        XCTAssertEqual(connectError(of: connect.request(Route("/todos", method: .post)))?.attempts, 1)
        _ = try connect.request(Route("/conflict", method: .post)).wait()
        XCTAssertEqual(transport.requests(to: "/conflict").count, 2)
    }

    /// An empty body decodes as `EmptyResponse` or `nil` whatever the status (not only 204 and 205), and fails
    /// `.decoding` as any other type; the `Content-Type` is not compared with `Accept`.
    func testAnEmptyBodyDecodesAsEmptyResponseAndContentTypeIsNotValidated() throws {
        let transport = FakeTransport()
        transport.stub(.get, "/empty", with: .status(200))
        transport.stub(.get, "/text", with: .data(Data("ok".utf8), headers: ["Content-Type": "text/plain"]))
        let connect = Connect(transport: transport, configuration: ServerConfiguration(baseURL: Self.gateway))
        XCTAssertEqual(try connect.request(Route("/empty")).decoded(toType: EmptyResponse.self).wait(), EmptyResponse())
        XCTAssertNil(try connect.request(Route("/empty")).decoded(toType: JSONValue?.self).wait())
        XCTAssertEqual(
            connectError(of: connect.request(Route("/empty")).decoded(toType: JSONValue.self))?.kind, .decoding)
        XCTAssertEqual(try connect.request(Route("/text")).wait(), Data("ok".utf8))
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "Accept"), "application/json")
    }
}
