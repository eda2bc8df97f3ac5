import Foundation
import SwiftConnectTesting
import XCTest

@_spi(Engine) @testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What `print`, `dump`, `String(describing:)`, `String(reflecting:)` and interpolation show of the library's values:
/// no secret, and what is harmless, so that the output still helps to debug.
final class SecretPrintingTests: XCTestCase {
    /// Every way a value is turned into text: `description`, `String(reflecting:)`, interpolation and `dump`.
    private func printed(_ value: Any) -> String {
        var dumped = ""
        dump(value, to: &dumped)
        return [String(describing: value), String(reflecting: value), "\(value)", dumped].joined(separator: "\n")
    }

    // MARK: - A middleware's context

    /// A middleware that prints its context (`print(context)`) showed a download's presigned URL and the client's
    /// base URL whole: the context's transfer options and server URL had no redacting reflection.
    func testARequestContextShowsNoSecretOfItsDownloadOrItsServer() throws {
        // Given
        let seen = Guarded<[String]>([])
        let printing = AnyMiddleware { request, context, next in
            var dumped = ""
            dump(context, to: &dumped)
            seen.withLock { $0 += [String(describing: context), String(reflecting: context), dumped] }
            return next(request)
        }
        let connect = Connect(
            transport: FakeTransport.answering(.data(Data("file".utf8))), middlewares: [printing], retryPolicy: nil,
            configuration: ServerConfiguration(
                baseURL: try XCTUnwrap(URL(string: "https://a.test/v1?api_key=SRVKEY123"))))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ctx-\(UUID()).bin")
        defer { try? FileManager.default.removeItem(at: file) }
        let presigned = Route(url: try XCTUnwrap(URL(string: "https://a.test/f.zip?X-Amz-Signature=SIGNED456")))

        // When
        _ = try connect.download(presigned, to: file).wait(timeout: 10)
        _ = try connect.request(Route("/me")).wait(timeout: 10)

        // Then
        let shown = seen.withLock { $0.joined(separator: "\n") }
        XCTAssertFalse(shown.contains("SIGNED456"), shown)
        XCTAssertFalse(shown.contains("SRVKEY123"), shown)
        XCTAssertTrue(shown.contains("f.zip"), shown)
    }

    // MARK: - Header fields

    /// A header line pasted in as a field's name (`Authorization: Bearer …`) showed whole in the descriptions and the
    /// reflection of the field, of the request that holds it and of an error about it; cURL output cut it.
    func testAHeaderLinePastedInAsANameShowsNoSecret() throws {
        let name = "Authorization: Bearer PASTEDTOKEN7"
        let field = HeaderField(name: HeaderField.Name(name), value: "x")
        let header = HTTPHeader(name: name, value: "x")
        var request = ConnectRequest(url: try XCTUnwrap(URL(string: "https://a.test/me")))
        request.headerFields.append(field)
        request.headerFields.append(HeaderField(name: "X-Trace", value: "trace-1"))
        var foundation = URLRequest(url: try XCTUnwrap(URL(string: "https://a.test/me")))
        foundation.setValue("x", forHTTPHeaderField: name)
        let error = ConnectError(.httpStatus, message: "refused", request: foundation)

        for value: Any in [field, header, request, request.headerFields, [header], error] {
            let shown = printed(value)
            // Foundation on Linux capitalises a name it stores (`Pastedtoken7`).
            XCTAssertFalse(shown.lowercased().contains("pastedtoken7"), shown)
            XCTAssertTrue(shown.contains("Authorization…"), shown)
        }
        XCTAssertTrue(printed(request).contains("X-Trace: trace-1"), printed(request))
        XCTAssertTrue(cURLCommand(for: foundation).contains("Authorization…"), "cURL output cuts it the same way")
    }

    /// A field's name printed on its own (`print(field.name)`, `dump`, interpolation) showed a header line pasted in as
    /// the name whole, where the field, cURL output and errors cut it.
    func testAFieldNameThatIsAPastedHeaderLineShowsNoSecretPrintedOnItsOwn() {
        let pasted = HeaderField.Name("Authorization: Bearer PASTEDTOKEN8")
        let cookie = HeaderField.Name("Cookie=sid PASTEDCOOKIE9")

        for name in [pasted, cookie] {
            let shown = printed(name) + "\n" + printed([name])
            XCTAssertFalse(shown.contains("PASTED"), shown)
        }
        XCTAssertEqual(pasted.description, "Authorization…")
        XCTAssertEqual("\(cookie)", "Cookie…")
        XCTAssertEqual(pasted.rawName, "Authorization: Bearer PASTEDTOKEN8", "the name itself keeps what was given")
        for token: HeaderField.Name in [.authorization, "X-Request-ID", "x-custom_header.v2"] {
            XCTAssertEqual(String(describing: token), token.rawName, "a token prints as it is")
            XCTAssertTrue(printed(token).contains(token.rawName), printed(token))
        }
    }

    /// A request's description and mirror hid a value by its field's name only: a custom field quoting the
    /// `Authorization` token showed it, where cURL output hid it.
    func testAFieldQuotingAnotherFieldsSecretHidesItAsCURLDoes() throws {
        let url = try XCTUnwrap(URL(string: "https://a.test/me?access_token=QUERYSECRET9&page=2"))
        var request = ConnectRequest(url: url)
        request.headerFields[.authorization] = "Bearer BEARERSECRET8"
        request.headerFields["X-Upstream-Auth"] = "Bearer BEARERSECRET8"
        request.headerFields["X-Echo"] = "q=QUERYSECRET9"
        request.headerFields[.accept] = "application/json"
        let head = try XCTUnwrap(RequestHead(method: .get, url: url, headerFields: request.headerFields))

        let shown = printed(request) + "\n" + printed(head)

        XCTAssertFalse(shown.contains("SECRET"), shown)
        XCTAssertTrue(shown.contains("X-Upstream-Auth: Bearer <redacted>"), shown)
        XCTAssertTrue(shown.contains("X-Echo: q=<redacted>"), shown)
        XCTAssertTrue(shown.contains("Accept: application/json"), shown)
        XCTAssertTrue(shown.contains("GET https://a.test/me?access_token=<redacted>&page=2"), shown)
        let curl = cURLCommand(for: request.urlRequest)
        XCTAssertTrue(curl.contains("X-Upstream-Auth: Bearer <redacted>"), curl)
    }

    // MARK: - Responses

    /// A response had no description or mirror of its own: `print` and `dump` showed the request's URL with its
    /// password and token, its `Authorization`, the `Set-Cookie` it got and a presigned URL's signature, in every form
    /// it keeps them (Foundation's request and response, or the parts a transport reported and what is made of them).
    func testPrintingAResponseShowsNoSecret() throws {
        let url = try XCTUnwrap(URL(string: "https://amy:PASSWORD-SECRET1@a.test/me?access_token=QUERY-SECRET2&page=2"))
        var foundationRequest = URLRequest(url: url)
        foundationRequest.setValue("Bearer BEARER-SECRET3", forHTTPHeaderField: "Authorization")
        let foundationResponse = try XCTUnwrap(
            HTTPURLResponse(
                url: url, statusCode: 201, httpVersion: "HTTP/1.1",
                headerFields: [
                    "Set-Cookie": "sid=COOKIE-SECRET4", "X-Request-ID": "req-77", "X-Echo": "BEARER-SECRET3",
                ]))
        let fromFoundation = ConnectResponse(
            request: foundationRequest, response: foundationResponse, data: Data("{\"ok\":true}".utf8))

        var request = ConnectRequest(url: url)
        request.headerFields[.authorization] = "Bearer BEARER-SECRET3"
        let presigned = try XCTUnwrap(
            URL(string: "https://s3.test/bucket/a.pdf?X-Amz-Expires=60&X-Amz-Signature=SIGNATURE-SECRET5"))
        let head = ResponseHead(
            status: 200, headerFields: [.setCookie: "sid=COOKIE-SECRET4", "X-Request-ID": "req-78"])
        let fromModel = try XCTUnwrap(
            ConnectResponse(request: request, head: head, data: Data("abc".utf8), url: presigned))
        // Foundation's request and response, made from the parts and kept: a default mirror showed them too.
        _ = (fromModel.request, fromModel.response)

        for response in [fromFoundation, fromModel] {
            let shown = printed(response)
            XCTAssertFalse(shown.contains("SECRET"), shown)
            XCTAssertTrue(
                shown.contains("HTTP \(response.statusCode) ← GET https://a.test/me?access_token=<redacted>&page=2"),
                shown)
            XCTAssertTrue(shown.contains("Set-Cookie: <redacted>"), shown)
            XCTAssertTrue(shown.contains("X-Request-ID: req-7"), shown)
            XCTAssertTrue(shown.contains("\(response.data.count) bytes"), shown)
        }
        XCTAssertTrue(printed(fromFoundation).contains("X-Echo: <redacted>"), "a field repeating the token")
        XCTAssertTrue(printed(fromModel).contains("X-Amz-Expires=60&X-Amz-Signature=<redacted>"), printed(fromModel))
    }

    // MARK: - Observer events

    /// A redirect's event printed its `Location` as the server sent it: a presigned URL's signature, a password.
    func testARedirectEventShowsItsLocationRedacted() throws {
        let location = try XCTUnwrap(
            URL(string: "https://amy:PASSWORD-SECRET6@s3.test/a.pdf?X-Amz-Expires=60&X-Amz-Signature=SIGNATURE-SECRET7")
        )
        let event = ConnectEvent.redirected(status: 302, location: location)

        let shown = printed(event)

        XCTAssertFalse(shown.contains("SECRET"), shown)
        XCTAssertEqual(
            String(describing: event),
            "redirected(status: 302, location: https://s3.test/a.pdf?X-Amz-Expires=60&X-Amz-Signature=<redacted>)")
        XCTAssertTrue(
            shown.contains("- location: https://s3.test/a.pdf?X-Amz-Expires=60&X-Amz-Signature=<redacted>"), shown)
    }

    /// The other events print as they did; an ending error of another type than `ConnectError` shows its URLs redacted.
    func testOtherEventsPrintAsBefore() throws {
        struct Refused: Error, CustomStringConvertible {
            var description: String { "refused https://amy:PASSWORD-SECRET8@a.test/x?token=TOKEN-SECRET9" }
        }
        let request = ConnectRequest(url: try XCTUnwrap(URL(string: "https://a.test/x?page=2")))
        let failure = ConnectError(.httpStatus, message: "no")

        XCTAssertEqual("\(ConnectEvent.queueWaited(seconds: 0.5))", "queueWaited(seconds: 0.5)")
        XCTAssertEqual("\(ConnectEvent.connectivityWaited(seconds: 2))", "connectivityWaited(seconds: 2.0)")
        XCTAssertEqual("\(ConnectEvent.cacheLookup(hit: true))", "cacheLookup(hit: true)")
        XCTAssertEqual("\(ConnectEvent.tokenRefreshStarted)", "tokenRefreshStarted")
        XCTAssertEqual("\(ConnectEvent.tokenRefreshEnded(succeeded: false))", "tokenRefreshEnded(succeeded: false)")
        XCTAssertEqual(
            "\(ConnectEvent.attemptStarted(attempt: 1, request: request))",
            "attemptStarted(attempt: 1, request: GET https://a.test/x?page=2)")
        XCTAssertEqual(
            "\(ConnectEvent.attemptEnded(attempt: 2, status: 503, error: nil, bytesSent: 0, bytesReceived: nil))",
            "attemptEnded(attempt: 2, status: Optional(503), error: nil, bytesSent: Optional(0), bytesReceived: nil)")
        XCTAssertEqual(
            "\(ConnectEvent.callEnded(status: nil, error: failure, attempts: 1))",
            "callEnded(status: nil, error: Optional(\(failure.debugDescription)), attempts: 1)")
        let foreign = printed(ConnectEvent.callEnded(status: nil, error: Refused(), attempts: 3))
        XCTAssertFalse(foreign.contains("SECRET"), foreign)
        XCTAssertTrue(foreign.contains("refused https://a.test/x?token=<redacted>"), foreign)
    }

    // MARK: - Request queue

    /// A waiting request described itself redacted but had no mirror: `dump(queue.waitingRequests)` showed its URL's
    /// password and API key.
    func testDumpingTheWaitingRequestsShowsNoSecretOfTheirURLs() throws {
        let transport = FakeTransport()
        transport.stub(.get, "/thumbs/1", with: .status(200))
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        queue.pause()
        let url = try XCTUnwrap(
            URL(string: "https://amy:PASSWORD-SECRET10@a.test/thumbs/1?api_key=KEY-SECRET11&size=2"))
        let waiting = connect.request(Route(url: url))

        let shown = printed(queue.waitingRequests)

        XCTAssertFalse(shown.contains("SECRET"), shown)
        XCTAssertTrue(shown.contains("https://a.test/thumbs/1?api_key=<redacted>&size=2"), shown)
        XCTAssertTrue(shown.contains("connectorName: \"Route\""), shown)
        queue.resume()
        XCTAssertNotNil(value(of: waiting))
    }

    /// A waiting request's description and mirror hid its URL's secrets by name only: a secret the request carries
    /// elsewhere (its token, repeated in a path segment) showed, where the request's own description hides it.
    func testPrintingTheWaitingRequestsHidesTheirSecretValues() throws {
        let transport = FakeTransport()
        transport.stub(.get, "/thumbs/TOKEN-SECRET56", with: .status(200))
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        queue.pause()
        let url = try XCTUnwrap(URL(string: "https://a.test/thumbs/TOKEN-SECRET56?size=2"))
        let waiting = connect.request(Route(url: url, authorizationToken: .bearer(token: "TOKEN-SECRET56")))

        let shown = printed(queue.waitingRequests)

        XCTAssertFalse(shown.contains("SECRET"), shown)
        XCTAssertTrue(shown.contains("GET https://a.test/thumbs/<redacted>?size=2 (Route)"), shown)
        XCTAssertTrue(shown.contains(#"url: "https://a.test/thumbs/<redacted>?size=2""#), shown)
        XCTAssertEqual(queue.waitingRequests.first?.url, url, "the URL itself is kept")
        queue.resume()
        XCTAssertNotNil(value(of: waiting))
    }

    /// A cache storage's record (what a storage of yours saves, and may log) printed its URL's query, a `Set-Cookie`
    /// and the `Authorization` its `Vary` names, as they were.
    func testPrintingAStoredResponseHidesItsSecrets() throws {
        let stored = StoredResponse(
            url: try XCTUnwrap(URL(string: "https://amy:PASSWORD-SECRET81@a.test/feed?api_key=KEY-SECRET82&page=2")),
            method: "GET", statusCode: 200,
            headers: [
                .init(name: "Content-Type", value: "application/json"),
                .init(name: "Set-Cookie", value: "session=COOKIE-SECRET83"),
            ],
            body: Data(#"{"token":"BODY-SECRET84"}"#.utf8), expiry: Date(timeIntervalSince1970: 0),
            varying: [.init(name: "authorization", value: "Bearer TOKEN-SECRET85"), .init(name: "accept", value: nil)])

        let shown = printed(stored)

        XCTAssertFalse(shown.contains("SECRET"), shown)
        XCTAssertTrue(shown.contains("https://a.test/feed?api_key=<redacted>&page=2"), shown)
        XCTAssertTrue(shown.contains("Content-Type: application/json"), shown)
        XCTAssertTrue(shown.contains("25 bytes"), shown)
        XCTAssertTrue(shown.contains("accept: (absent)"), shown)
    }

    // MARK: - Bodies

    /// A JSON value printed what secret keys held (`{"access_token":"…"}`), at any depth.
    func testPrintingAJSONValueHidesWhatSecretKeysHold() throws {
        let value: JSONValue = [
            "access_token": "TOKEN-SECRET12", "expires_in": 3600,
            "user": ["name": "amy", "password": "PASSWORD-SECRET13", "keys": [["api_key": "KEY-SECRET14"]]],
            "session": ["id": "SESSION-SECRET15"],
        ]

        let shown = printed(value)

        XCTAssertFalse(shown.contains("SECRET"), shown)
        XCTAssertEqual(
            value.description,
            #"{"access_token":"<redacted>","expires_in":3600,"#
                + #""session":"<redacted>","user":{"keys":[{"api_key":"<redacted>"}],"name":"amy","#
                + #""password":"<redacted>"}}"#)
        XCTAssertTrue(shown.contains(#"- string: "amy""#), shown)
        XCTAssertEqual(value["access_token"]?.stringValue, "TOKEN-SECRET12", "the value itself keeps it")
    }

    /// A JSON Web Token, a credential after a scheme and JSON carried as a string are hidden under any key, as the
    /// bodies SwiftConnect prints hide them: printing a value or a parameter showed SimpleJWT's `refresh` whole.
    func testPrintingAJSONValueHidesTokensWhateverTheirKey() throws {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI0MiJ9.c2lnbmF0dXJlLXNlY3JldA"
        let value: JSONValue = [
            "refresh": .string(jwt), "upstream": "Bearer abcdefgh1234", "body": #"{"password":"pw-123456"}"#,
            "note": "fine",
        ]
        let parameter = Parameter.jsonObject(["refresh": jwt, "note": "fine"] as JSONObject)

        for shown in [printed(value), value.description, printed(parameter), "\(parameter)"] {
            XCTAssertFalse(shown.contains("eyJ"), shown)
            XCTAssertFalse(shown.contains("abcdefgh1234"), shown)
            XCTAssertFalse(shown.contains("pw-123456"), shown)
            XCTAssertTrue(shown.contains("fine"), shown)
        }
    }

    /// A multipart form had no mirror: printing it showed `Part.field(name: "password", value: "…")`.
    func testPrintingAMultipartFormShowsNamesAndSizesButNoValue() throws {
        var form = MultipartFormData(boundary: "b0undary")
        form.append(field: "title", value: "Holiday")
        form.append(field: "password", value: "PASSWORD-SECRET16")
        form.append(field: "pin", value: "PIN-SECRET17")
        form.append(File(name: "beach.jpg", key: "photo", mimeType: .jpg, data: Data("IMAGE-SECRET18".utf8)))

        let shown = printed(form)

        XCTAssertFalse(shown.contains("SECRET"), shown)
        XCTAssertFalse(shown.contains("Holiday"), "no value is shown, whatever its name: \(shown)")
        XCTAssertTrue(shown.contains("b0undary"), shown)
        XCTAssertTrue(shown.contains(#"field "title" (7 bytes)"#), shown)
        XCTAssertTrue(shown.contains(#"field "password" (17 bytes)"#), shown)
        XCTAssertTrue(shown.contains(#"file "photo": "beach.jpg" (image/jpeg, 14 bytes)"#), shown)
    }

    // MARK: - Connectors

    /// A login's model, sent as a JSON body.
    private struct Login: Encodable {
        let username: String
        let password: String
    }

    /// Printing a route, a parameter or a JSON object showed query and form values of secret names, a body's password
    /// and a URL's password.
    func testPrintingARouteItsParametersOrAJSONObjectShowsNoSecret() throws {
        let base = try XCTUnwrap(URL(string: "https://amy:PASSWORD-SECRET20@a.test/v1?api_key=KEY-SECRET21&v=2"))
        let object: JSONObject = [
            "username": "ada", "password": "PASSWORD-SECRET22", "profile": ["refresh_token": "TOKEN-SECRET23"],
            "attempt": 2,
        ]
        let parameters: [Parameter] = [
            .query(key: "access_token", value: "TOKEN-SECRET24"), .query(key: "page", value: "3"),
            .form(key: "client_secret", value: "SECRET-SECRET25"), .form(key: "grant_type", value: "password"),
            .path(key: "id", value: "42"), .jsonObject(value: Login(username: "ada", password: "PASSWORD-SECRET26")),
            .jsonObject(value: object),
            .encoded(value: Login(username: "ada", password: "PASSWORD-SECRET27"), encoder: PropertyListEncoder()),
        ]
        let route = Route(
            "/items/{id}?sig=SIGNATURE-SECRET28&sort=asc", baseURL: base, method: .post,
            parameters: CompositeParameters(parameters), headers: [.authorization(bearerToken: "BEARER-SECRET29")])
        let login = Route("/login", method: .post, parameters: object)

        var shown = ""
        for value: Any in [route, login, object, CompositeParameters(parameters)] + parameters {
            shown += printed(value) + "\n"
        }

        XCTAssertFalse(shown.contains("SECRET"), shown)
        for harmless in [
            "https://a.test/v1?api_key=<redacted>&v=2", "/items/{id}?sig=<redacted>&sort=asc",
            #"query(key: "page", value: "3")"#, #"query(key: "access_token", value: "<redacted>")"#,
            #"form(key: "grant_type", value: "password")"#, #"path(key: "id", value: "42")"#,
            #"jsonObject(value: {"password":"<redacted>","username":"ada"})"#,
            #"JSONObject(username: "ada", password: "<redacted>", profile: {"refresh_token":"<redacted>"}, attempt: 2)"#,
        ] {
            XCTAssertTrue(shown.contains(harmless), "\(harmless) in \(shown)")
        }
    }

    /// A route's mirror hid a value by its field's name only: the same value under a name that is not secret (a custom
    /// header repeating the token, a query item or a body field quoting it) showed, where the request the route makes
    /// prints it hidden (``ConnectRequest``'s description hides the request's secret values wherever they show).
    func testPrintingARouteHidesItsSecretValuesWhereverTheyShow() throws {
        let base = try XCTUnwrap(URL(string: "https://amy:PASSWORD-SECRET30@a.test/v1?api_key=KEY-SECRET31&v=2"))
        let object: JSONObject = [
            "password": "PASSWORD-SECRET32", "confirm": "PASSWORD-SECRET32", "note": "ticket TOKEN-SECRET33",
            "user": ["name": "ada", "hint": "KEY-SECRET31"] as JSONObject, "pin": 424_242, "attempt": 2,
        ]
        let route = Route(
            "/items/{id}?sig=SIGNATURE-SECRET34&echo=SIGNATURE-SECRET34", baseURL: base, method: .post,
            parameters: CompositeParameters(
                .path(key: "id", value: "42"), .query(key: "state", value: "PASSWORD-SECRET30"),
                .query(key: "page", value: "3"), .form(key: "client_secret", value: "SECRET-SECRET35"),
                .form(key: "echo", value: "x SECRET-SECRET35 y"), .jsonObject(value: object)),
            headers: [
                .authorization(bearerToken: "BEARER-SECRET36"),
                HTTPHeader(name: "X-Upstream", value: "BEARER-SECRET36"),
                HTTPHeader(name: "X-Token-Echo", value: "TOKEN-SECRET33"), .accept("application/json"),
            ],
            authorizationToken: .basic(username: "amy", password: "PASSWORD-SECRET37"),
            options: RequestOptions(headers: [HTTPHeader(name: "X-Basic-Echo", value: "PASSWORD-SECRET37")]))
        let login = Route(
            "/login", method: .post,
            parameters: ["username": "ada", "password": "PASSWORD-SECRET38", "repeat": "PASSWORD-SECRET38"])
        let search = Route(
            "/search", parameters: ["q": "BEARER-SECRET39", "api_key": "KEY-SECRET40", "echo": "KEY-SECRET40"],
            authorizationToken: .bearer(token: "BEARER-SECRET39"))

        var shown = ""
        for value: Any in [route, login, search] { shown += printed(value) + "\n" }

        XCTAssertFalse(shown.contains("SECRET"), shown)
        for harmless in [
            "https://a.test/v1?api_key=<redacted>&v=2", "/items/{id}?sig=<redacted>&echo=<redacted>",
            #"query(key: "state", value: "<redacted>")"#, #"query(key: "page", value: "3")"#,
            #"path(key: "id", value: "42")"#, #"form(key: "echo", value: "x <redacted> y")"#,
            #"confirm: "<redacted>", note: "ticket <redacted>""#, #"hint":"<redacted>","name":"ada""#,
            #"attempt: 2"#, #"X-Upstream: <redacted>"#, #"X-Token-Echo: <redacted>"#, "Accept: application/json",
            #"X-Basic-Echo: <redacted>"#, #"repeat: "<redacted>""#, #"username: "ada""#, #"q: "<redacted>""#,
            #"echo: "<redacted>""#,
        ] {
            XCTAssertTrue(shown.contains(harmless), "\(harmless) in \(shown)")
        }
    }

    /// A JSON object's mirror hid what secret keys hold, but not the same value under another key (a password's
    /// confirmation, a token quoted in a note), where the request body it makes is printed with them hidden.
    func testPrintingAJSONObjectHidesItsSecretValuesUnderEveryKey() {
        let object: JSONObject = [
            "password": "PASSWORD-SECRET41", "repeat": "PASSWORD-SECRET41", "pin": 1_234_567,
            "profile": ["refresh_token": "TOKEN-SECRET42", "note": "see TOKEN-SECRET42"] as JSONObject,
            "tokens": ["api_key": 98_765_432], "code": 98_765_432, "count": 7, "name": "ada",
        ]

        let shown = printed(object) + "\n" + printed(Parameter.jsonObject(value: object))

        XCTAssertFalse(shown.contains("SECRET"), shown)
        XCTAssertFalse(shown.contains("98765432"), shown)
        for harmless in [
            #"password: "<redacted>", repeat: "<redacted>", pin: 1234567"#,
            #"{"note":"see <redacted>","refresh_token":"<redacted>"}"#, #"code: "<redacted>", count: 7, name: "ada""#,
        ] {
            XCTAssertTrue(shown.contains(harmless), "\(harmless) in \(shown)")
        }
    }

    /// A sign-up's model, whose confirmation repeats the password under a name that is not secret.
    private struct SignUp: Encodable {
        let username: String
        let password: String
        let confirmation: String
        let hints: [String]
    }

    /// A parameter's body encoded from a model showed the password again under another name (its confirmation).
    func testPrintingAParameterHidesTheSecretValuesOfItsBodyUnderEveryKey() {
        let signUp = SignUp(
            username: "ada", password: "PASSWORD-SECRET43", confirmation: "PASSWORD-SECRET43",
            hints: ["not PASSWORD-SECRET43", "blue"])
        let parameters: [Parameter] = [
            .jsonObject(value: signUp), .encoded(value: signUp, encoder: PropertyListEncoder()),
        ]

        let shown = parameters.map(printed).joined(separator: "\n")

        XCTAssertFalse(shown.contains("SECRET"), shown)
        XCTAssertTrue(
            shown.contains(
                #"{"confirmation":"<redacted>","hints":["not <redacted>","blue"],"password":"<redacted>","username":"ada"}"#
            ), shown)
    }

    // MARK: - Errors and log lines

    /// An error's message can quote a URL the request did not carry (a server's "link expired: https://…", a decoding
    /// error of your own): the description, `debugDescription` and reflection showed it whole, where they redact every
    /// URL an underlying error quotes.
    func testAnErrorMessageQuotingAURLShowsItRedacted() throws {
        let request = URLRequest(url: try XCTUnwrap(URL(string: "https://a.test/upload")))
        let message =
            "link expired: https://s3.test/a.pdf?X-Amz-Expires=60&X-Amz-Signature=SIGNATURE-SECRET50, "
            + "retry at https://amy:PASSWORD-SECRET51@b.test/x"
        let error = ConnectError(.serverMessage, message: message, request: request)

        let shown = printed(error)

        XCTAssertFalse(shown.contains("SECRET"), shown)
        XCTAssertTrue(
            shown.contains(
                "link expired: https://s3.test/a.pdf?X-Amz-Expires=60&X-Amz-Signature=<redacted>, "
                    + "retry at https://b.test/x"), shown)
        // The message, which apps log, redacts it too; the server's body keeps what it said.
        XCTAssertFalse(error.message.contains("SECRET"), error.message)
        XCTAssertEqual((ConnectError.showingSecrets(error) as? ConnectError)?.message, message)
        let shownAsIs = printed(ConnectError.showingSecrets(error))
        XCTAssertTrue(shownAsIs.contains("SIGNATURE-SECRET50"), "a client that does not redact shows it: \(shownAsIs)")
    }

    /// The log line that says a call with a one-shot body is not retried showed its URL redacted by name only: a
    /// secret the request carries elsewhere (its token, in a path segment) showed, where every other output hides it.
    func testTheNotRetriedLogLineHidesTheRequestsSecretValues() throws {
        let logger = MemoryLogger()
        let transport = FakeTransport()
        transport.stub(
            "/v1/files/TOKEN-SECRET52", with: [.status(503, headers: ["Retry-After": "0"]), .status(200)])
        let connect = Connect(
            transport: transport, retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            settings: Connect.Settings(logger: logger))
        let chunks = AsyncStream<Data> { continuation in
            continuation.yield(Data("made as it goes".utf8))
            continuation.finish()
        }
        var request = ConnectRequest(
            method: .put,
            url: try XCTUnwrap(URL(string: "https://a.test/v1/files/TOKEN-SECRET52?api_key=KEY-SECRET53")),
            body: .stream(ConnectRequest.OneShotStream(chunks)))
        request.headerFields[.authorization] = "Bearer TOKEN-SECRET52"

        let response = try connect.response(for: request, options: RequestOptions(acceptsEveryStatus: true)).wait()

        XCTAssertEqual(response.statusCode, 503)
        let lines = logger.messages.joined(separator: "\n")
        XCTAssertTrue(lines.contains("PUT https://a.test/v1/files/<redacted>?api_key=<redacted>"), lines)
        XCTAssertTrue(lines.contains("not retried after attempt 1"), lines)
        XCTAssertFalse(lines.contains("SECRET"), lines)
    }

    /// A server configuration's description hid a default header's or query item's value by its name only: a default
    /// query item or header repeating the `Authorization` token or the API key showed it.
    func testAServerConfigurationHidesItsSecretValuesWhereverTheyShow() {
        let configuration = ServerConfiguration(
            host: "api.example.com",
            defaultHeaders: [
                .authorization(bearerToken: "BEARER-SECRET54"), HTTPHeader(name: "X-Echo", value: "BEARER-SECRET54"),
                .accept("application/json"),
            ],
            defaultQueryItems: [
                URLQueryItem(name: "api_key", value: "KEY-SECRET55"), URLQueryItem(name: "echo", value: "KEY-SECRET55"),
                URLQueryItem(name: "v", value: "2"),
            ])

        let shown = printed(configuration)

        XCTAssertFalse(shown.contains("SECRET"), shown)
        XCTAssertTrue(
            shown.contains(
                "ServerConfiguration(https://api.example.com?api_key=<redacted>&echo=<redacted>&v=2, "
                    + "Authorization: <redacted>, X-Echo: <redacted>, Accept: application/json)"), shown)
    }

    // MARK: - Clients and transports

    /// A client made with every kind of credential the core holds (a token-refresh middleware, basic-auth credentials,
    /// an `Authorization` default header, a cookie and an API key in its options' and a method's headers, a server
    /// configuration's header and query item, certificate pins) dumps none of them.
    func testAClientDumpsNoCredentialItHolds() throws {
        let authentication = AuthenticationMiddleware(credential: .bearer(token: "REFRESHABLE-SECRET61")) { _ in
            Future(value: .bearer(token: "RENEWED-SECRET62"))
        }
        let settings = Connect.Settings(
            options: RequestOptions(headers: [
                .authorization(bearerToken: "OPTION-SECRET63"),
                HTTPHeader(name: "Cookie", value: "sid=COOKIE-SECRET64"),
            ]),
            defaultHeaders: [.authorization(username: "amy", password: "BASIC-SECRET65")],
            methodOptions: [.post: RequestOptions(headers: [HTTPHeader(name: "X-Api-Key", value: "METHOD-SECRET66")])])
        let configuration = ServerConfiguration(
            host: "api.test", defaultHeaders: [HTTPHeader(name: "X-Auth-Token", value: "SERVER-SECRET67")],
            defaultQueryItems: [URLQueryItem(name: "api_key", value: "QUERY-SECRET68")])
        let pins = try CertificatePins(["api.test": [Data(repeating: 7, count: 32).base64EncodedString()]])
        let connect = Connect(
            transport: URLSessionTransport(configuration: .ephemeral, pins: pins),
            middlewares: [authentication, .basicAuthentication(username: "gate", password: "GATE-SECRET69")],
            configuration: configuration, settings: settings)

        let shown = printed(connect)

        XCTAssertFalse(shown.contains("SECRET"), shown)
        let basic = Data("amy:BASIC-SECRET65".utf8).base64EncodedString()
        let gate = Data("gate:GATE-SECRET69".utf8).base64EncodedString()
        XCTAssertFalse(shown.contains(basic) || shown.contains(gate), shown)
    }

    /// A transport's mirror showed its `URLSession`, and through it the session's configuration and stores: a cookie
    /// the server had set, and the `Authorization` field of the `httpAdditionalHeaders` of a session passed in.
    func testAURLSessionTransportDumpsNoSecretOfItsSession() throws {
        let configuration = URLSessionConfiguration.ephemeral
        let cookie = try XCTUnwrap(
            HTTPCookie(properties: [.name: "sid", .value: "STORED-SECRET71", .domain: "a.test", .path: "/"]))
        configuration.httpCookieStorage?.setCookie(cookie)
        let own = URLSessionTransport(configuration: configuration)
        let shared = URLSessionConfiguration.ephemeral
        shared.httpAdditionalHeaders = ["Authorization": "Bearer SESSION-SECRET72"]
        let session = URLSession(configuration: shared)
        defer { session.finishTasksAndInvalidate() }
        let passedIn = URLSessionTransport(session: session)

        for transport in [own, passedIn] {
            let shown = printed(transport) + printed(Connect(transport: transport))
            XCTAssertFalse(shown.contains("SECRET"), shown)
        }
    }
}
