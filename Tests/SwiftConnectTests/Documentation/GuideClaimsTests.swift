import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// More of the migration guides' claims (`SwiftConnect.docc/ComingFrom*.md`), each on a fake transport.
final class GuideClaimsTests: XCTestCase {
    /// `/posts` on the client's server, with options of its own (the connector's level of the three).
    private struct Posts: Connector {
        let options: RequestOptions
        var baseURL: URL { URL(string: "/")! }
        var endpoint: String { "/posts" }
    }

    private static let server = URL(string: "http://gateway.test:5000/")!

    private struct Refused: Error, Equatable {}

    /// Remotli: `port` is `Route`'s `port:`, the client's server on another port.
    func testARoutesPortReplacesTheServersPort() throws {
        let transport = FakeTransport.answering(.status(200))
        let client = Connect(baseURL: Self.server, transport: transport)
        _ = try client.request(Route("/metrics", port: 9090)).wait()
        XCTAssertEqual(transport.requests.last?.url?.absoluteString, "http://gateway.test:9090/metrics")
    }

    /// Remotli: a number or a Boolean in a query is written as text.
    func testNumbersAndBooleansInAQueryAreWrittenAsText() throws {
        let transport = FakeTransport.answering(.status(200))
        let client = Connect(baseURL: Self.server, transport: transport)
        _ = try client.request("/user", parameters: ["page": 2, "verified": true, "ratio": 1.5]).wait()
        let items = URLComponents(url: transport.requests[0].url!, resolvingAgainstBaseURL: false)?.queryItems ?? []
        XCTAssertEqual(
            Set(items),
            [
                URLQueryItem(name: "page", value: "2"), URLQueryItem(name: "verified", value: "true"),
                URLQueryItem(name: "ratio", value: "1.5"),
            ])
    }

    /// Remotli: `Connect(host:)` is `Remotli(host:)`, https.
    func testAHostAloneIsHTTPS() throws {
        let transport = FakeTransport.answering(.status(200))
        let client = Connect(host: "my-remote-api.com", transport: transport)
        _ = try client.request("/user/login").wait()
        XCTAssertEqual(transport.requests.last?.url?.absoluteString, "https://my-remote-api.com/user/login")
    }

    /// Konex: validators, then processors, each list at the client's, the connector's and the call's level, in
    /// that order.
    func testValidatorsThenProcessorsRunClientConnectorCall() throws {
        let trail = Recorder<String>()
        func validator(_ name: String) -> AnyResponseValidator {
            AnyResponseValidator { _ in trail.append("validate " + name) }
        }
        func processor(_ name: String) -> AnyResponseProcessor {
            AnyResponseProcessor { response in
                trail.append("process " + name)
                return response
            }
        }
        let transport = FakeTransport.answering(.json(string: "[]"))
        let client = Connect(
            transport: transport, configuration: ServerConfiguration(baseURL: Self.server),
            settings: Connect.Settings(
                options: RequestOptions(validators: [validator("client")], processors: [processor("client")])))
        let connector = Posts(
            options: RequestOptions(validators: [validator("connector")], processors: [processor("connector")]))
        let call = RequestOptions(validators: [validator("call")], processors: [processor("call")])
        _ = try client.request(connector, options: call).wait()
        XCTAssertEqual(
            trail.values,
            [
                "validate client", "validate connector", "validate call", "process client", "process connector",
                "process call",
            ])
    }

    /// Konex: a validator's error fails the call as `.rejected`, yours as the underlying error; a `ConnectError`
    /// you throw is kept.
    func testAValidatorsErrorIsRejectedAndAConnectErrorIsKept() throws {
        let transport = FakeTransport.answering(.json(string: "[]"))
        let client = Connect(baseURL: Self.server, transport: transport)
        let refusing = RequestOptions(validators: [AnyResponseValidator { _ in throw Refused() }])
        XCTAssertThrowsError(try client.request(Route("/posts"), options: refusing).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .rejected)
            XCTAssertEqual((error as? ConnectError)?.underlyingError as? Refused, Refused())
        }
        let own = ConnectError(.timedOut, message: "mine")
        let keeping = RequestOptions(validators: [AnyResponseValidator { _ in throw own }])
        XCTAssertThrowsError(try client.request(Route("/posts"), options: keeping).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .timedOut)
            XCTAssertEqual((error as? ConnectError)?.message, "mine")
        }
    }

    /// Konex: a plugin is told of each attempt, `willSend` then `didReceive` (any status) or `didFail`.
    func testAPluginIsToldOfEachAttempt() throws {
        let trail = Recorder<String>()
        let told = expectation(description: "six events")  // plugins run on their own queue, after the call
        told.expectedFulfillmentCount = 6
        let plugin = AnyPlugin(
            willSend: { _, _ in
                trail.append("willSend")
                told.fulfill()
            },
            didReceive: { response, _ in
                trail.append("didReceive \(response.statusCode)")
                told.fulfill()
            },
            didFail: { _, _, _ in
                trail.append("didFail")
                told.fulfill()
            })
        let transport = FakeTransport()
        transport.stub(
            .get, "/flaky",
            with: [.status(503), .failure(URLError(.networkConnectionLost)), .json(string: "{}")])
        let client = Connect(
            transport: transport, retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            configuration: ServerConfiguration(baseURL: Self.server),
            settings: Connect.Settings(options: RequestOptions(plugins: [plugin])))
        _ = try client.request(Route("/flaky")).wait()
        wait(for: [told], timeout: 30)
        XCTAssertEqual(
            trail.values, ["willSend", "didReceive 503", "willSend", "didFail", "willSend", "didReceive 200"])
    }

    /// JustAPIs: the server's default headers and query items are added where the request has none of the same
    /// name.
    func testServerDefaultsGiveWayToTheRequestsOwn() throws {
        let transport = FakeTransport.answering(.status(200))
        let configuration = ServerConfiguration(
            baseURL: Self.server, defaultHeaders: [HTTPHeader(name: "X-App", value: "demo")])
        var withQuery = configuration
        withQuery.defaultQueryItems = [URLQueryItem(name: "lang", value: "en"), URLQueryItem(name: "v", value: "1")]
        let client = Connect(transport: transport, configuration: withQuery)
        _ = try client.request(Route("/foo", parameters: ["lang": "fr"], headers: ["X-App": "mine"])).wait()
        _ = try client.request(Route("/foo")).wait()
        let (own, plain) = (transport.requests[0], transport.requests[1])
        XCTAssertEqual(own.value(forHTTPHeaderField: "X-App"), "mine")
        XCTAssertEqual(own.url?.query, "lang=fr&v=1")
        XCTAssertEqual(plain.value(forHTTPHeaderField: "X-App"), "demo")
        XCTAssertEqual(plain.url?.query, "lang=en&v=1")
    }

    /// JustAPIs: a decoder registered for a content type is used for it (`setParser`), and a decoder given to
    /// `decoded(toType:decoder:)` whatever the content type.
    func testADecoderRegisteredForAContentTypeAndAForcedOne() throws {
        struct Settings: Codable, Equatable { var name: String }
        let plist = try PropertyListEncoder().encode(Settings(name: "plist"))
        let transport = FakeTransport()
        transport.stub(.get, "/plist", with: .data(plist, headers: ["Content-Type": "application/x-plist"]))
        transport.stub(
            .get, "/text", with: .data(Data(#"{"name":"text"}"#.utf8), headers: ["Content-Type": "text/plain"]))
        var decoders = ResponseDecoders.default
        decoders.register(PropertyListDecoder(), for: "application/x-plist")
        let client = Connect(
            transport: transport, configuration: ServerConfiguration(baseURL: Self.server),
            settings: Connect.Settings(decoders: decoders))
        XCTAssertEqual(
            try client.request(Route("/plist")).decoded(toType: Settings.self).wait(), Settings(name: "plist"))
        XCTAssertEqual(
            try client.request(Route("/text")).decoded(toType: Settings.self, decoder: JSONDecoder()).wait(),
            Settings(name: "text"))
    }

    /// Konex: a DELETE's dictionary parameters go to its query.
    func testADeletesDictionaryGoesToItsQuery() throws {
        let transport = FakeTransport.answering(.status(204))
        let client = Connect(baseURL: Self.server, transport: transport)
        _ = try client.request("/posts/1", method: .delete, parameters: ["soft": true]).wait()
        XCTAssertEqual(transport.requests.last?.url?.query, "soft=true")
        XCTAssertNil(transport.requests.last?.httpBody)
    }

    /// Alamofire: an adapter's error reaches you as it is.
    func testAnAdaptersErrorReachesTheCallerAsItIs() throws {
        struct Refusing: ConnectMiddlewareProtocol {
            func adapt(_ request: URLRequest) throws -> URLRequest { throw Refused() }
        }
        let transport = FakeTransport.answering(.status(200))
        let client = Connect(
            transport: transport, middlewares: [Refusing()], configuration: ServerConfiguration(baseURL: Self.server))
        XCTAssertThrowsError(try client.request(Route("/posts")).wait()) { error in
            XCTAssertEqual(error as? Refused, Refused())
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }

    /// Alamofire: there is no `requestRetryFailed`, the last attempt's outcome stands, with its attempts.
    func testTheLastAttemptsOutcomeStandsWithItsAttempts() throws {
        let transport = FakeTransport()
        transport.stub(.get, "/down", with: [.status(503), .status(503), .status(500)])
        let client = Connect(
            transport: transport, retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            configuration: ServerConfiguration(baseURL: Self.server))
        XCTAssertThrowsError(try client.request(Route("/down")).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.statusCode, 500)
            XCTAssertEqual((error as? ConnectError)?.attempts, 3)
        }
    }

    /// Konex: a full URL, as Konex's `path` was, is `Route(url:)` or a connector whose `baseURL` is that URL; it
    /// goes where it names, whatever the client's server, as written.
    func testAFullURLGoesWhereItNames() throws {
        struct GetAllPostsRequest: Connector {
            var baseURL: URL { URL(string: "https://jsonplaceholder.typicode.com/posts/")! }
            var endpoint: String { "" }
        }
        let transport = FakeTransport.answering(.json(string: "[]"))
        let client = Connect(baseURL: Self.server, transport: transport)
        let full = URL(string: "https://jsonplaceholder.typicode.com/posts/?page=2")!
        _ = try client.request(Route(url: full)).wait()
        _ = try client.request(GetAllPostsRequest()).wait()
        XCTAssertEqual(
            transport.requests.map { $0.url?.absoluteString },
            [
                "https://jsonplaceholder.typicode.com/posts/?page=2",
                "https://jsonplaceholder.typicode.com/posts/",
            ])
    }

    /// Remotli and JustAPIs: `Connect(baseURL:)` takes the scheme, port and path, with or without a final slash.
    func testABaseURLKeepsItsPortAndPath() throws {
        let transport = FakeTransport.answering(.status(200))
        for base in ["http://my-justapi-server.local:5000/api/", "http://my-justapi-server.local:5000/api"] {
            let client = Connect(baseURL: URL(string: base)!, transport: transport)
            _ = try client.request("/foo", parameters: ["id": 123]).wait()
            XCTAssertEqual(
                transport.requests.last?.url?.absoluteString, "http://my-justapi-server.local:5000/api/foo?id=123",
                base)
        }
    }

    /// Getting Started: the errors a `map` or `flatMap` closure on a request's future throws reach you as they are.
    func testAMapOrFlatMapClosuresErrorReachesTheCallerAsItIs() throws {
        let transport = FakeTransport.answering(.json(string: #"{"id":1}"#))
        let client = Connect(baseURL: Self.server, transport: transport)
        let mapped = client.request(Route("/todos/1")).decoded(toType: JSONValue.self).map { _ -> Int in
            throw Refused()
        }
        let chained = client.request(Route("/todos/1")).flatMap { _ -> Future<Data> in throw Refused() }
        XCTAssertThrowsError(try mapped.wait()) { XCTAssertEqual($0 as? Refused, Refused()) }
        XCTAssertThrowsError(try chained.wait()) { XCTAssertEqual($0 as? Refused, Refused()) }
    }

    /// The usage guide: an error handler that returns `nil` accepts the response, whose body goes on to decoding;
    /// the error it returns reaches you as it is.
    func testAnErrorHandlersNilAcceptsAndItsErrorReachesTheCallerAsItIs() throws {
        struct Lenient: ErrorHandlerProtocol {
            func handle(response: [String: Any]) -> Error? {
                response["fatal"] as? Bool == true ? Refused() : nil
            }
        }
        let transport = FakeTransport()
        transport.stub(.get, "/soft", with: .json(string: #"{"id":7}"#, status: 400))
        transport.stub(.get, "/hard", with: .json(string: #"{"fatal":true}"#, status: 500))
        let client = Connect(
            transport: transport, errorHandler: Lenient(), retryPolicy: nil,
            configuration: ServerConfiguration(baseURL: Self.server))
        XCTAssertEqual(try client.request(Route("/soft")).decoded(toType: JSONValue.self).wait()["id"]?.intValue, 7)
        XCTAssertThrowsError(try client.request(Route("/hard")).wait()) { XCTAssertEqual($0 as? Refused, Refused()) }
    }

    /// Konex called its plugins on the request's path, before `onSuccess`; here a plugin is told on a queue of its
    /// own, so the call can complete before its plugins have heard of it (the Konex guide says so).
    func testACallCanCompleteBeforeItsPluginsHeardOfIt() throws {
        let callCompleted = DispatchSemaphore(value: 0)
        let trail = Recorder<String>()
        let heard = expectation(description: "didReceive")
        let plugin = AnyPlugin(
            willSend: { _, _ in
                let completed = callCompleted.wait(timeout: .now() + 30) == .success
                trail.append(completed ? "told after the call completed" : "told before the call completed")
            },
            didReceive: { _, _ in heard.fulfill() })
        let transport = FakeTransport.answering(.json(string: "[]"))
        let client = Connect(
            transport: transport, configuration: ServerConfiguration(baseURL: Self.server),
            settings: Connect.Settings(options: RequestOptions(plugins: [plugin])))
        _ = try client.request(Route("/posts")).wait()
        callCompleted.signal()
        wait(for: [heard], timeout: 30)
        XCTAssertEqual(trail.values, ["told after the call completed"])
    }

    /// Remotli: `Configuration(scheme:host:)` is `ServerConfiguration(scheme:host:)`, `addRequestPlugin` is a
    /// middleware (`adding(middlewares:)` for a client made already), and a class conforming to `Routable` sent
    /// with `send(requestFor:completion:)` is a connector of yours given to `request`, then `observe(completion:)`.
    func testRemotlisConfigurationRequestPluginAndRoutableClass() throws {
        final class ConfigurationRoute: BasicConnector, @unchecked Sendable {
            // @unchecked Sendable: `appID` is a `let`, set once in `init`.
            let appID: String
            init(appID: String) { self.appID = appID }
            override var endpoint: String { "/api/mas/0.2/app_config/fetch" }
            override var method: HTTPMethod { .post }
            override var headers: [HTTPHeader] {
                [HTTPHeader(name: "Content-Type", value: "application/x-www-form-urlencoded")]
            }
            override var parameters: (any ParametersRepresentable)? { ["app_id": appID, "token": ""] as JSONObject }
        }
        let transport = FakeTransport.answering(.json(string: #"{"ok":true}"#))
        let google = Connect(
            transport: transport, configuration: ServerConfiguration(scheme: .https, host: "google.com"))
        let stamped = google.adding(middlewares: [
            AnyMiddleware.adapter { $0.setValue("1", forHTTPHeaderField: "X-Plugin") }
        ])
        let answered = expectation(description: "completion")
        let outcome = Recorder<String>()
        stamped.request(ConfigurationRoute(appID: "MY_APP_ID")).decoded(toType: JSONValue.self)
            .observe { (config: JSONValue?, error: Error?) in
                outcome.append(config?["ok"]?.boolValue == true && error == nil ? "ok" : "failed")
                answered.fulfill()
            }
        wait(for: [answered], timeout: 30)
        XCTAssertEqual(outcome.values, ["ok"])
        let sent = try XCTUnwrap(transport.requests.last)
        XCTAssertEqual(sent.url?.absoluteString, "https://google.com/api/mas/0.2/app_config/fetch")
        XCTAssertEqual(sent.value(forHTTPHeaderField: "X-Plugin"), "1")
        XCTAssertEqual(sent.httpBody.map { String(decoding: $0, as: UTF8.self) }, "app_id=MY_APP_ID&token=")
    }

    /// Remotli: its `FormDataPlugin`'s multipart bodies are `upload(files:to:debugResponse:)`; a route's dictionary
    /// parameters become the text fields, as they were Remotli's form fields.
    func testAnUploadsRouteDictionaryBecomesItsTextFields() throws {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let client = Connect(baseURL: Self.server, transport: transport)
        let photo = File(name: "beach.jpg", key: "photo", mimeType: .jpg, data: Data("jpeg".utf8))
        _ = try client.upload(files: [photo], to: Route("/upload", method: .post, parameters: ["title": "Holiday"]))
            .wait()
        let sent = try XCTUnwrap(transport.requests.last)
        let body = String(decoding: sent.httpBody ?? Data(), as: UTF8.self)
        XCTAssertTrue(body.contains("name=\"title\"\r\n\r\nHoliday\r\n"), body)
        XCTAssertTrue(body.contains("filename=\"beach.jpg\""), body)
        XCTAssertTrue(sent.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("multipart/form-data") ?? false)
    }

    /// Every guide: a POST is retried only when it is marked `isRetrySafe` or carries an `Idempotency-Key`.
    func testAPostWithAnIdempotencyKeyOrMarkedRetrySafeIsRetried() throws {
        let transport = FakeTransport()
        transport.stub(.post, "/keyed", with: [.status(503), .json(string: "{}")])
        transport.stub(.post, "/marked", with: [.status(503), .json(string: "{}")])
        transport.stub(.post, "/plain", with: [.status(503), .json(string: "{}")])
        let client = Connect(
            transport: transport, retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            configuration: ServerConfiguration(baseURL: Self.server))
        let keyed = Route("/keyed", method: .post, parameters: ["a": 1], headers: ["idempotency-key": "k-1"])
        let marked = Route("/marked", method: .post, parameters: ["a": 1])
        _ = try client.request(keyed).wait()
        _ = try client.request(marked, options: RequestOptions(isRetrySafe: true)).wait()
        XCTAssertThrowsError(try client.request(Route("/plain", method: .post, parameters: ["a": 1])).wait())
        XCTAssertEqual(transport.requests(to: "/keyed").count, 2)
        XCTAssertEqual(transport.requests(to: "/marked").count, 2)
        XCTAssertEqual(transport.requests(to: "/plain").count, 1)
    }

    /// README: your own `JSONDecoder` registered for `application/json` also decodes `…+json` types and, as the
    /// fallback, answers of any other type or none.
    func testYourJSONDecoderAlsoDecodesPlusJSONAndUntypedAnswers() throws {
        struct Profile: Decodable, Equatable { let firstName: String }
        let body = Data(#"{"first_name":"Ada"}"#.utf8)
        let transport = FakeTransport()
        transport.stub(.get, "/problem", with: .data(body, headers: ["Content-Type": "application/problem+json"]))
        transport.stub(.get, "/text", with: .data(body, headers: ["Content-Type": "text/plain; charset=utf-8"]))
        transport.stub(.get, "/none", with: .data(body))
        let snakeCase = JSONDecoder()
        snakeCase.keyDecodingStrategy = .convertFromSnakeCase
        var decoders = ResponseDecoders.default
        decoders.register(snakeCase, for: "application/json")
        let client = Connect(
            transport: transport, configuration: ServerConfiguration(baseURL: Self.server),
            settings: Connect.Settings(decoders: decoders))
        for path in ["/problem", "/text", "/none"] {
            XCTAssertEqual(
                try client.request(Route(path)).decoded(toType: Profile.self).wait(), Profile(firstName: "Ada"), path)
        }
    }

    /// Alamofire: `responseDecodable(of:decoder:)` is `decoded(toType:decoder:)`, the call's decoder, which wins
    /// over the client's ``ResponseDecoders``: a date in seconds since 1970 that the default decoder reads as
    /// seconds since 2001 comes out as written.
    func testAlamofiresDecoderOfOneCallIsDecodedToTypesDecoder() throws {
        struct Event: Decodable, Equatable, Sendable { let at: Date }
        let transport = FakeTransport.answering(.json(string: #"{"at":1700000000}"#))
        let client = Connect(transport: transport, configuration: ServerConfiguration(baseURL: Self.server))
        let epoch = JSONDecoder()
        epoch.dateDecodingStrategy = .secondsSince1970
        let event = try client.request("/event").decoded(toType: Event.self, decoder: epoch).wait()
        XCTAssertEqual(event, Event(at: Date(timeIntervalSince1970: 1_700_000_000)))
        let byDefault = try client.request("/event").decoded(toType: Event.self).wait()
        XCTAssertEqual(byDefault, Event(at: Date(timeIntervalSinceReferenceDate: 1_700_000_000)))
    }

    /// Konex: plugins at the client's, the connector's and the call's level are told in that order.
    func testPluginsAreToldClientConnectorCall() throws {
        let trail = Recorder<String>()
        let told = expectation(description: "three plugins")
        told.expectedFulfillmentCount = 3
        func plugin(_ name: String) -> AnyPlugin {
            AnyPlugin(willSend: { _, _ in
                trail.append(name)
                told.fulfill()
            })
        }
        let transport = FakeTransport.answering(.json(string: "[]"))
        let client = Connect(
            transport: transport, configuration: ServerConfiguration(baseURL: Self.server),
            settings: Connect.Settings(options: RequestOptions(plugins: [plugin("client")])))
        let connector = Posts(options: RequestOptions(plugins: [plugin("connector")]))
        _ = try client.request(connector, options: RequestOptions(plugins: [plugin("call")])).wait()
        wait(for: [told], timeout: 30)
        XCTAssertEqual(trail.values, ["client", "connector", "call"])
    }

    /// Alamofire: an empty body decoded as a type other than `EmptyResponse` or an Optional fails `.decoding`,
    /// saying the body is empty.
    func testAnEmptyBodyDecodedAsAValueSaysTheBodyIsEmpty() throws {
        struct Todo: Decodable { let id: Int }
        let transport = FakeTransport.answering(.status(200))
        let client = Connect(baseURL: Self.server, transport: transport)
        XCTAssertThrowsError(try client.request(Route("/todos/1")).decoded(toType: Todo.self).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .decoding)
            XCTAssertTrue((error as? ConnectError)?.message.lowercased().contains("empty") ?? false, "\(error)")
        }
    }

    /// JustAPIs: a waiting request handed back by `waitingRequests` is sent again with `response(for:)`; it does not
    /// carry its connector's or call's options, so a route that went unsigned is signed unless the options are given
    /// again (the JustAPIs guide and `WaitingRequest.request` say so).
    func testAWaitingRequestSentAgainTakesItsOptionsAgain() throws {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let queue = RequestQueue(maxConcurrentRequests: 2)
        let client = Connect(
            transport: transport, middlewares: [.basicAuthentication(username: "site-user", password: "secret")],
            requestQueue: queue, configuration: ServerConfiguration(baseURL: Self.server))
        let unsigned = RequestOptions(requiresAuthentication: false)
        queue.pause()
        let waiting = client.request(
            Route("/v1/tokens", method: .post, parameters: ["type": "ANONYMOUS"], options: unsigned))
        let pending = queue.waitingRequests
        queue.cancel(pending[0].id)
        queue.resume()
        XCTAssertThrowsError(try waiting.wait())
        XCTAssertNil(pending[0].request.value(forHTTPHeaderField: "Authorization"))

        _ = try client.response(for: pending[0].request, options: unsigned).wait()
        XCTAssertNil(transport.requests.last?.value(forHTTPHeaderField: "Authorization"))
        XCTAssertEqual(transport.requests.last?.httpBody, Data(#"{"type":"ANONYMOUS"}"#.utf8))
        _ = try client.response(for: pending[0].request).wait()
        XCTAssertNotNil(transport.requests.last?.value(forHTTPHeaderField: "Authorization"))
    }
}
