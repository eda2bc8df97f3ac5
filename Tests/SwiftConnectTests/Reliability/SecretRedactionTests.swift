import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Secrets stay out of everything SwiftConnect prints, and credentials stay home when a redirect leaves.
///
/// `DebugOutputTests` checks each redaction rule with a fake transport; these send every kind of secret at once
/// through `URLSession` to a ``LocalServer`` that echoes secrets back, and search all the text produced
/// (logs, cURL commands, error descriptions, `dump`) for any of them. Every secret contains `SECRET-`, so one
/// search finds any of them, whatever redaction rule missed it.
final class SecretRedactionTests: XCTestCase {
    /// One value per kind of secret.
    private enum Secret {
        static let marker = "SECRET-"
        static let bearer = "bearer-SECRET-01"
        static let basicPassword = "basic-SECRET-02"
        static let custom = "Token custom-SECRET-03"
        static let cookie = "cookie-SECRET-04"
        static let apiKey = "apikey-SECRET-05"
        static let password = "password-SECRET-06"
        static let refreshToken = "refresh-SECRET-07"
        static let listSecret = "list-SECRET-08"
        static let formPassword = "form-SECRET-09"
        static let accessToken = "query-SECRET-10"
        static let responseCookie = "response-cookie-SECRET-11"
        static let responseToken = "response-token-SECRET-12"
        static let errorToken = "error-token-SECRET-13"

        /// `Basic <base64>`: does not contain the marker, so it is searched for on its own.
        static let basicHeaderValue = AuthorizationToken.basic(username: "amy", password: basicPassword).headerValue
        static let basicBase64 = String(basicHeaderValue.dropFirst("Basic ".count))

        /// What must not appear in redacted text.
        static let searched = [marker, basicBase64]
        /// What must appear with redaction off: one of each kind.
        static let all = [
            bearer, basicBase64, custom, cookie, apiKey, password, refreshToken, listSecret, formPassword,
            accessToken, responseCookie, responseToken, errorToken,
        ]
    }

    private typealias Endpoint = ConfigurableConnector

    private struct Nested: Encodable {
        var refresh_token: String
        var device: String
    }

    private struct Item: Encodable {
        var secret: String
        var label: String
    }

    /// `{"password": …, "nested": {"refresh_token": …}, "list": [{"secret": …}], "username": "amy"}`
    private struct LoginBody: Encodable {
        var username = "amy"
        var password = Secret.password
        var nested = Nested(refresh_token: Secret.refreshToken, device: "phone")
        var list = [Item(secret: Secret.listSecret, label: "first")]
    }

    private var server: LocalServer!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        let setCookie = "sid=\(Secret.responseCookie); Path=/; HttpOnly"
        server.route("GET", "/me") { _ in
            .json(string: #"{"id":1,"name":"amy","token":"\#(Secret.responseToken)"}"#)
                .withHeader("Set-Cookie", setCookie)
        }
        server.route("POST", "/login") { _ in
            .json(string: #"{"message":"bad credentials","token":"\#(Secret.errorToken)"}"#, status: 401)
                .withHeader("Set-Cookie", setCookie)
        }
        server.route("POST", "/form") { _ in .status(204) }
    }

    override func tearDown() {
        server.stop()
        server = nil
    }

    // MARK: - The requests

    /// Bearer token, cookie, API key header and a secret query item.
    private var profile: Endpoint {
        Endpoint(
            baseURL: server.baseURL,
            endpoint: "/me",
            headers: [
                HTTPHeader(name: "Cookie", value: "sid=\(Secret.cookie)"),
                HTTPHeader(name: "X-Api-Key", value: Secret.apiKey),
            ],
            parameters: CompositeParameters(
                .query(key: "access_token", value: Secret.accessToken), .query(key: "page", value: "2")),
            authorizationToken: .bearer(token: Secret.bearer)
        )
    }

    /// Basic credentials and a JSON body with secrets at three depths; answered 401 with a secret.
    private var login: Endpoint {
        Endpoint(
            baseURL: server.baseURL,
            endpoint: "/login",
            method: .post,
            parameters: Parameter.jsonObject(value: LoginBody()),
            authorizationToken: .basic(username: "amy", password: Secret.basicPassword)
        )
    }

    /// A custom token and a form body with a password.
    private var form: Endpoint {
        Endpoint(
            baseURL: server.baseURL,
            endpoint: "/form",
            method: .post,
            parameters: CompositeParameters(
                .form(key: "user", value: "amy"), .form(key: "password", value: Secret.formPassword)),
            authorizationToken: .custom(token: Secret.custom)
        )
    }

    // MARK: - Debug output, cURL and errors

    func testNoSecretAppearsInDebugOutputCURLOrErrors() throws {
        // Given
        let logger = MemoryLogger()
        let connect = Connect(
            transport: Self.cookielessTransport(), retryPolicy: nil, settings: Connect.Settings(logger: logger))
        // When
        let outcomes = try [profile, login, form].map { try connect.request($0, debugResponse: true).waitForResult() }
        // Then
        guard case .failure(let loginError as ConnectError) = outcomes[1] else {
            return XCTFail("the login should fail with a ConnectError: \(outcomes[1])")
        }
        XCTAssertEqual(loginError.statusCode, 401)
        XCTAssertEqual(logger.messages.count, 6, "a request and an outcome for each call")
        assertNoSecret(in: logger.messages.joined(separator: "\n"), "debug output")
        for connector in [profile, login, form] {
            assertNoSecret(in: cURLCommand(for: try connector.asURLRequest()), "cURL of \(connector.endpoint)")
        }
        assertNoSecret(in: loginError.description, "ConnectError.description")
        assertNoSecret(in: String(describing: loginError), "String(describing: ConnectError)")
        assertNoSecret(in: loginError.localizedDescription, "ConnectError.localizedDescription")
        // What the server got was not redacted: only the text is.
        XCTAssertEqual(server.requests.first?.header("Authorization"), "Bearer \(Secret.bearer)")
        XCTAssertEqual(server.requests.first?.queryItem("access_token"), Secret.accessToken)
    }

    /// Header names outside the old short list, each one also a query item and a JSON field: the one list of
    /// secret names covers headers and fields alike.
    private static let namesLikeSecrets = [
        "X-Authorization", "X-Session-Id", "X-Credential", "X-Signature", "X-Passwd", "X-Client-Cookie",
        "X-Private-Key", "X-API-KEY", "Proxy-Authorization",
    ]

    func testHeadersAndFieldsNamedLikeSecretsAreRedactedInCURLAndDebugOutput() throws {
        // Given
        server.route("POST", "/names") { _ in .status(204) }
        let headers = Self.namesLikeSecrets.enumerated().map { index, name in
            HTTPHeader(name: name, value: "header-SECRET-\(index)")
        }
        var fields: [String: String] = ["label": "visible"]
        var queries: [Parameter] = [.query(key: "page", value: "2")]
        for (index, name) in Self.namesLikeSecrets.enumerated() {
            fields[name.lowercased().replacingOccurrences(of: "-", with: "_")] = "field-SECRET-\(index)"
            queries.append(.query(key: name, value: "query-SECRET-\(index)"))
        }
        let endpoint = Endpoint(
            baseURL: server.baseURL,
            endpoint: "/names",
            method: .post,
            headers: headers + [HTTPHeader(name: "X-Trace", value: "trace-visible")],
            parameters: CompositeParameters(queries + [.jsonObject(value: fields)])
        )
        let logger = MemoryLogger()
        let connect = Connect(
            transport: Self.cookielessTransport(), retryPolicy: nil, settings: Connect.Settings(logger: logger))
        // When
        _ = try connect.request(endpoint, debugResponse: true).wait(timeout: 10)
        let command = cURLCommand(for: try endpoint.asURLRequest())
        // Then
        for text in [command, logger.messages.joined(separator: "\n")] {
            assertNoSecret(in: text, "output")
            for name in Self.namesLikeSecrets {
                XCTAssertTrue(text.contains("\(name): <redacted>"), "\(name) is not shown redacted:\n\(text)")
            }
            for visible in ["X-Trace: trace-visible", "page=2", "visible", "Content-Type: application/json"] {
                XCTAssertTrue(text.contains(visible), "\(visible) is missing:\n\(text)")
            }
        }
        let received = try XCTUnwrap(server.requests.last)
        XCTAssertEqual(received.header("X-Session-Id"), "header-SECRET-1", "only the text is redacted")
    }

    func testSecretMultipartFieldsAreRedacted() throws {
        // Given
        server.route("POST", "/upload") { _ in .status(204) }
        let logger = MemoryLogger()
        let connect = Connect(
            transport: Self.cookielessTransport(), retryPolicy: nil, settings: Connect.Settings(logger: logger))
        let note = File(name: "note.txt", key: "client_secret", mimeType: .plainText, data: Data(Secret.apiKey.utf8))
        let fields = [("password", Secret.formPassword), ("refresh_token", Secret.refreshToken), ("album", "Holiday")]
        let upload = Route("/upload", baseURL: server.baseURL, method: .post)
        // When
        _ = try connect.upload(files: [note], fields: fields, to: upload, debugResponse: true).wait(timeout: 10)
        // Then
        let output = logger.messages.joined(separator: "\n")
        assertNoSecret(in: output, "debug output of a multipart upload")
        XCTAssertTrue(output.contains("name=\"password\"\r\n\r\n<redacted>\r\n"), output)
        XCTAssertTrue(output.contains("name=\"album\"\r\n\r\nHoliday\r\n"), output)
        let received = try XCTUnwrap(server.requests.last?.bodyText)
        XCTAssertTrue(received.contains(Secret.formPassword), "only the log is redacted")
    }

    func testRedactedOutputStillShowsWhatIsNotSecret() throws {
        // Given
        let logger = MemoryLogger()
        let connect = Connect(
            transport: Self.cookielessTransport(), retryPolicy: nil, settings: Connect.Settings(logger: logger))
        // When
        _ = try connect.request(login, debugResponse: true).waitForResult()
        // Then
        let output = logger.messages.joined(separator: "\n")
        for visible in [#""username":"amy""#, #""device":"phone""#, #""label":"first""#, "HTTP 401", "bad credentials"]
        {
            XCTAssertTrue(output.contains(visible), "\(visible) is missing:\n\(output)")
        }
        XCTAssertTrue(output.contains("'Authorization: <redacted>'"), output)
        XCTAssertTrue(output.contains("Set-Cookie: <redacted>"), output)
    }

    func testTransportFailureDescriptionsHideTheSecretQueryValue() throws {
        // Given: a port nobody listens on any more
        let logger = MemoryLogger()
        let connect = Connect(
            transport: Self.cookielessTransport(), retryPolicy: nil, settings: Connect.Settings(logger: logger))
        var request = profile
        server.stop()
        request.baseURL = server.baseURL
        // When
        let result = try connect.request(request, debugResponse: true).waitForResult()
        // Then
        guard case .failure(let error as ConnectError) = result else {
            return XCTFail("expected a transport failure, got \(result)")
        }
        XCTAssertEqual(error.kind, .cannotConnect)
        assertNoSecret(in: error.description, "description")
        assertNoSecret(in: logger.messages.joined(separator: "\n"), "debug output")
    }

    /// `debugDescription` adds the response body and the underlying error (whose `URLError` names the URL)
    /// to the description.
    func testErrorDebugDescriptionHidesSecretsOfTheBodyAndTheUnderlyingError() throws {
        // Given: an error status whose body holds a token, and a failure to connect to a URL with a token
        let connect = Connect(transport: Self.cookielessTransport(), retryPolicy: nil)
        let statusError = try XCTUnwrap(connectError(of: connect.request(login)))
        var unreachable = profile
        server.stop()
        unreachable.baseURL = server.baseURL
        let transportError = try XCTUnwrap(connectError(of: connect.request(unreachable)))
        // When
        let texts = [statusError.debugDescription, transportError.debugDescription]
        // Then
        for text in texts {
            assertNoSecret(in: text, "debugDescription")
        }
    }

    /// An engine's error quotes the URL that failed, which after a redirect is neither the request's nor the
    /// response's: a signed download URL's signature showed in `debugDescription` and `dump`.
    func testAnUnderlyingErrorsOwnURLIsRedactedToo() throws {
        // Given: a request to one URL whose engine failed on another (a redirect's target), as URLError says
        let target = try XCTUnwrap(
            URL(string: "https://bucket.example.com/o?X-Amz-Credential=SECRET-CRED-1&X-Amz-Signature=SECRET-SIG-2&v=1"))
        let failure = URLError(
            .cannotConnectToHost,
            userInfo: [NSURLErrorFailingURLErrorKey: target, "NSErrorFailingURLStringKey": target.absoluteString])
        let error = ConnectError(
            .cannotConnect, message: "could not connect", request: URLRequest(url: URL(string: "https://a.test/dl")!),
            underlyingError: failure)
        // When
        var shown = error.debugDescription
        dump(error, to: &shown)
        // Then
        XCTAssertFalse(shown.contains("SECRET-"), shown)
        XCTAssertTrue(shown.contains("X-Amz-Signature=<redacted>&v=1"), shown)
    }

    func testURLsInTextAreEachRedactedAndTheRestKept() {
        XCTAssertEqual(
            Redaction.urlsInText(
                "failed (https://u:pw@h.test/a?token=T1&b=2), then \"http://h.test/?api_key=K, x\"; see ftp://h/x."),
            "failed (https://h.test/a?token=<redacted>&b=2), then \"http://h.test/?api_key=<redacted>, x\"; see ftp://h/x."
        )
        // A bracket inside a URL does not end it (Foundation leaves `(`, `)` and `'` unescaped).
        XCTAssertEqual(
            Redaction.urlsInText("Key=https://cdn.test/report(1).pdf?X-Amz-Signature=S1, other=('https://h/?key=K')"),
            "Key=https://cdn.test/report(1).pdf?X-Amz-Signature=<redacted>, other=('https://h/?key=<redacted>')")
        XCTAssertEqual(Redaction.urlsInText("no URL: a://"), "no URL: a://")
        XCTAssertEqual(Redaction.urlsInText("://?token=T"), "://?token=T")
    }

    func testInvalidRequestErrorsHideSecretsOfTheURL() {
        // Given: URLs the builder refuses, carrying credentials in the base URL or the endpoint's literal query
        let connectors = [
            Endpoint(baseURL: URL(string: "https://amy:\(Secret.basicPassword)@api.example.com")!, endpoint: "/a b"),
            Endpoint(baseURL: URL(string: "https://api.example.com")!, endpoint: "/s?token=\(Secret.bearer)&x={"),
            Endpoint(baseURL: URL(string: "https://api.example.com?api_key=\(Secret.apiKey)")!, endpoint: "/a|b"),
        ]
        let logger = MemoryLogger()
        let connect = Connect(transport: FakeTransport(), retryPolicy: nil, settings: Connect.Settings(logger: logger))
        for connector in connectors {
            // When
            let error = connectError(of: connect.request(connector, debugResponse: true))
            // Then
            XCTAssertEqual(error?.kind, .invalidRequest)
            assertNoSecret(in: error?.description ?? "", "description of \(connector.endpoint)")
            assertNoSecret(in: error?.debugDescription ?? "", "debugDescription of \(connector.endpoint)")
        }
        assertNoSecret(in: logger.messages.joined(separator: "\n"), "debug output")
    }

    func testURLTextOfAnInvalidURLHidesUserInfoAndSecretQueryValues() {
        XCTAssertEqual(
            Redaction.urlText(
                "https://amy:\(Secret.basicPassword)@api.example.com/a b?token=\(Secret.bearer)&page=2#top"),
            "https://api.example.com/a b?token=<redacted>&page=2#top")
        XCTAssertEqual(Redaction.urlText("relative/api/todos"), "relative/api/todos")
        XCTAssertEqual(Redaction.urlText("https://api.example.com/a@b|c"), "https://api.example.com/a@b|c")
        XCTAssertEqual(Redaction.urlText("/s?page={"), "/s?page={")
        // A network-path reference, as a `Location` may be: the authority starts after `//`.
        XCTAssertEqual(
            Redaction.urlText("//amy:\(Secret.basicPassword)@api.example.com/a?page=2"), "//api.example.com/a?page=2")
        XCTAssertEqual(Redaction.urlText("//api.example.com/a@b"), "//api.example.com/a@b")
        XCTAssertEqual(Redaction.urlText("//amy:pw@api.example.com/a://b"), "//api.example.com/a://b")
    }

    // MARK: - Bodies whose secrets cannot be found

    /// JSON with a secret that parses but cannot be re-serialised, or does not parse at all.
    private static let unreadableJSON = [
        #"{"password":"\#(Secret.password)","n":1e400}"#,
        #"{"password":"\#(Secret.password)","n":-1e999}"#,
        #"{"password":"\#(Secret.password)","s":"\ud800"}"#,
        #"{"password":"\#(Secret.password)", "#,
        #"[{"token":"\#(Secret.bearer)"}"#,
        #"{"token":"\#(Secret.bearer)"} trailing"#,
        "{\"password\":\"\(Secret.password)\"}\n{\"broken\"",
    ]

    func testJSONThatCannotBeParsedOrReserialisedIsWithheldWhenRedacting() {
        for body in Self.unreadableJSON {
            let data = Data(body.utf8)
            for contentType in ["application/json", "application/problem+json; charset=utf-8", "text/plain", nil] {
                for pretty in [false, true] {
                    // When
                    let text = Redaction.bodyText(data, contentType: contentType, redacting: true, pretty: pretty)
                    // Then
                    assertNoSecret(in: text, "body \(body) as \(contentType ?? "no type")")
                    // Withheld, with its size; or, where the platform's parser reads it after all, redacted.
                    XCTAssertTrue(
                        text.contains("\(data.count) bytes") || text.contains(Redaction.placeholder),
                        "neither withheld nor redacted: \(text)")
                }
            }
            let shown = Redaction.bodyText(data, contentType: "application/json", redacting: false, pretty: true)
            XCTAssertTrue(shown.contains(Secret.marker), "without redaction the body is shown: \(shown)")
        }
    }

    /// A body typed as JSON that holds no `{` nor `[` (an error page's plain text) holds no field: it is shown as text,
    /// a credential in it hidden, not withheld as JSON that does not parse. One after an anti-hijacking prefix still is.
    func testPlainTextTypedAsJSONIsShownAsText() {
        let plain = Redaction.bodyText(
            Data("Internal Server Error".utf8), contentType: "application/json", redacting: true, pretty: true)
        XCTAssertEqual(plain, "Internal Server Error")
        let bearer = Redaction.bodyText(
            Data("Bearer \(Secret.bearer)".utf8), contentType: "application/json", redacting: true, pretty: false)
        assertNoSecret(in: bearer, "a credential as text")
        let prefixed = ")]}'\n{\"access_token\":\"\(Secret.bearer)\"}"
        let withheld = Redaction.bodyText(
            Data(prefixed.utf8), contentType: "application/json", redacting: true, pretty: false)
        assertNoSecret(in: withheld, "JSON after a prefix")
        XCTAssertTrue(withheld.contains("bytes"), withheld)
    }

    func testJSONLinesAreRedactedLineByLine() {
        // Given
        let body =
            "{\"token\":\"\(Secret.bearer)\",\"id\":1}\r\n\n{\"id\":2,\"note\":\"plain\"}\n"
            + "[{\"password\":\"\(Secret.password)\"}]\n"
        for contentType in ["application/x-ndjson", "application/jsonl", nil] {
            // When
            let text = Redaction.bodyText(Data(body.utf8), contentType: contentType, redacting: true, pretty: true)
            // Then
            XCTAssertEqual(
                text,
                #"{"id":1,"token":"<redacted>"}"# + "\n" + #"{"id":2,"note":"plain"}"# + "\n"
                    + #"[{"password":"<redacted>"}]"#,
                "\(contentType ?? "no type")")
        }
    }

    func testJSONWithAByteOrderMarkIsRedactedAndReadableTextIsStillShown() {
        let bom = Data([0xEF, 0xBB, 0xBF]) + Data(#"{"password":"\#(Secret.password)","user":"amy"}"#.utf8)
        let redacted = Redaction.bodyText(bom, contentType: "application/json", redacting: true, pretty: false)
        assertNoSecret(in: redacted, "JSON after a byte order mark")
        XCTAssertTrue(redacted.contains(#""user":"amy""#), redacted)
        // JSON without secrets is shown byte for byte; text that is not JSON is shown as is.
        let plain = #"{"b":1,  "a":[2,3]}"#
        XCTAssertEqual(
            Redaction.bodyText(Data(plain.utf8), contentType: "application/json", redacting: true, pretty: false),
            plain)
        XCTAssertEqual(
            Redaction.bodyText(Data("not json {".utf8), contentType: "text/plain", redacting: true, pretty: true),
            "not json {")
    }

    func testUnreadableJSONResponseIsWithheldFromDebugOutputAndErrors() throws {
        // Given
        server.route("GET", "/huge") { _ in
            .json(string: #"{"access_token":"\#(Secret.responseToken)","expires":1e400}"#)
        }
        server.route("GET", "/cut") { _ in
            .json(string: #"{"error":"bad","token":"\#(Secret.errorToken)","#, status: 400)
        }
        let logger = MemoryLogger()
        let connect = Connect(
            transport: Self.cookielessTransport(), retryPolicy: nil, settings: Connect.Settings(logger: logger))
        // When
        _ = try connect.request(Route("/huge", baseURL: server.baseURL), debugResponse: true).waitForResult()
        let failure = try connect.request(Route("/cut", baseURL: server.baseURL), debugResponse: true)
            .waitForResult()
        // Then
        assertNoSecret(in: logger.messages.joined(separator: "\n"), "debug output")
        guard case .failure(let error as ConnectError) = failure else { return XCTFail("\(failure)") }
        XCTAssertEqual(error.statusCode, 400)
        assertNoSecret(in: error.debugDescription, "debugDescription")
    }

    func testFormAndMultipartFieldsWithSemicolonsAreRedacted() {
        // Given: `;` as a form separator, and in quoted multipart field names
        let form = "user=amy;password=\(Secret.formPassword)&note=a;b"
        XCTAssertEqual(
            Redaction.bodyText(
                Data(form.utf8), contentType: "application/x-www-form-urlencoded", redacting: true, pretty: true),
            "user=amy;password=<redacted>&note=a;b")
        let parts = [
            #"form-data; name="user;password""#, "form-data; name=password", #"form-data; NAME="Password""#,
            #"form-data; filename="a;b.txt"; name="api_key""#, #"form-data; name="x\"token""#,
        ]
        var multipart = ""
        for (index, disposition) in parts.enumerated() {
            multipart += "--B\r\nContent-Disposition: \(disposition)\r\n\r\nmp-SECRET-\(index)\r\n"
        }
        multipart += "--B\r\nContent-Disposition: form-data; name=\"album;x\"\r\n\r\nHoliday\r\n--B--\r\n"
        for contentType in ["multipart/form-data; boundary=B", #"multipart/form-data; boundary="B""#] {
            // When
            let text = Redaction.bodyText(
                Data(multipart.utf8), contentType: contentType, redacting: true, pretty: true)
            // Then
            assertNoSecret(in: text, "multipart body")
            XCTAssertTrue(text.contains("\r\n\r\nHoliday\r\n"), text)
            XCTAssertEqual(text.components(separatedBy: "<redacted>").count, parts.count + 1, text)
        }
    }

    /// A `;` or `?` inside a secret's value (a form a client built with `URLComponents`, which escapes neither) does
    /// not end what is hidden: a form reader takes the value up to the next `&`, and the rest of the password would
    /// show. An echo of either reading is hidden too.
    func testASemicolonOrQuestionMarkInASecretValueHidesTheWholeValue() throws {
        for form in ["user=amy&password=pa;ss-Secret-42&x=1", "user=amy&password=pa?ss-Secret-42&x=1"] {
            let shown = Redaction.bodyText(
                Data(form.utf8), contentType: "application/x-www-form-urlencoded", redacting: true, pretty: true)
            XCTAssertEqual(shown, "user=amy&password=<redacted>&x=1")
            let url = try XCTUnwrap(URL(string: "https://api.example.com/login?\(form)"))
            XCTAssertEqual(
                Redaction.url(url, redacting: true), "https://api.example.com/login?user=amy&password=<redacted>&x=1")
        }
        let request = ConnectRequest(url: URL(string: "https://api.example.com/login?password=pa;ss-Secret-42")!)
        XCTAssertEqual(
            SecretValues(of: request).hiding(in: "rejected pa;ss-Secret-42, and pa alone"),
            "rejected <redacted>, and pa alone",
            "the value to the `&`; `pa` is too short to hide alone")
    }

    func testSecretValuesInAURLFragmentAreRedacted() throws {
        // Given: what OAuth's implicit flow puts in a fragment
        let fragment = "access_token=\(Secret.accessToken)&expires_in=3600&state=xyz"
        let url = try XCTUnwrap(URL(string: "https://amy:\(Secret.basicPassword)@api.example.com/cb#\(fragment)"))
        let withQuery = try XCTUnwrap(
            URL(string: "https://api.example.com/cb?page=2&token=\(Secret.bearer)#\(fragment)"))
        // When / Then
        XCTAssertEqual(
            Redaction.url(url, redacting: true),
            "https://api.example.com/cb#access_token=<redacted>&expires_in=3600&state=xyz")
        XCTAssertEqual(
            Redaction.url(withQuery, redacting: true),
            "https://api.example.com/cb?page=2&token=<redacted>#access_token=<redacted>&expires_in=3600&state=xyz")
        XCTAssertEqual(
            Redaction.urlText("https://api.example.com/a b?page=2#id_token=\(Secret.bearer)&state=xyz"),
            "https://api.example.com/a b?page=2#id_token=<redacted>&state=xyz")
        XCTAssertEqual(
            Redaction.url(URL(string: "https://api.example.com/doc#top")!, redacting: true),
            "https://api.example.com/doc#top")
        XCTAssertEqual(
            Redaction.urlText("https://api.example.com/a b#/route?x=1"), "https://api.example.com/a b#/route?x=1")
        XCTAssertTrue(Redaction.url(url, redacting: false).contains(Secret.accessToken), "shown without redaction")
        var request = URLRequest(url: withQuery)
        request.httpMethod = "GET"
        assertNoSecret(in: cURLCommand(for: request), "cURL of a URL with a fragment")
    }

    func testInvalidURLErrorsHideSecretsOfTheFragment() {
        // Given
        let logger = MemoryLogger()
        let connect = Connect(transport: FakeTransport(), retryPolicy: nil, settings: Connect.Settings(logger: logger))
        let invalid = Endpoint(
            baseURL: URL(string: "https://api.example.com")!, endpoint: "/a b#access_token=\(Secret.accessToken)")
        // When
        let error = connectError(of: connect.request(invalid, debugResponse: true))
        // Then
        XCTAssertEqual(error?.kind, .invalidRequest)
        XCTAssertTrue(error?.description.contains("#access_token=<redacted>") == true, "\(String(describing: error))")
        assertNoSecret(in: error?.description ?? "", "description")
        assertNoSecret(in: error?.debugDescription ?? "", "debugDescription")
        assertNoSecret(in: logger.messages.joined(separator: "\n"), "debug output")
    }

    func testPrintingTokensAndHeadersShowsNoSecret() {
        // Given
        let tokens: [AuthorizationToken] = [
            .bearer(token: Secret.bearer), .basic(username: "amy", password: Secret.basicPassword),
            .custom(token: Secret.custom),
        ]
        let headers =
            tokens.map(\.header) + [
                HTTPHeader(name: "Cookie", value: Secret.cookie), HTTPHeader(name: "X-Api-Key", value: Secret.apiKey),
                HTTPHeader(name: "set-cookie", value: Secret.responseCookie),
                HTTPHeader(name: "X-Refresh-Token", value: Secret.refreshToken),
                HTTPHeader(name: "Proxy-Authorization", value: Secret.basicHeaderValue),
            ]
        // When
        var texts: [String] = []
        for value in tokens.map({ $0 as Any }) + headers.map({ $0 as Any }) + [tokens as Any, headers as Any] {
            var dumped = ""
            dump(value, to: &dumped)
            texts += [String(describing: value), String(reflecting: value), "\(value)", dumped]
        }
        // Then
        for text in texts {
            assertNoSecret(in: text, "printed value")
        }
    }

    // MARK: - Turning redaction off

    func testWithRedactionOffEverySecretAppears() throws {
        // Given
        let logger = MemoryLogger()
        let connect = Connect(
            transport: Self.cookielessTransport(), retryPolicy: nil,
            settings: Connect.Settings(logger: logger, redactsSecrets: false))
        // When
        _ = try [profile, login, form].map { try connect.request($0, debugResponse: true).waitForResult() }
        let commands = try [profile, login, form].map {
            cURLCommand(for: try $0.asURLRequest(), redactingSecrets: false)
        }
        // Then
        let output = logger.messages.joined(separator: "\n")
        for secret in Secret.all {
            XCTAssertTrue(output.contains(secret), "\(secret) is missing from the unredacted output:\n\(output)")
        }
        let curl = commands.joined(separator: "\n")
        for secret in Secret.all.prefix(10) {
            XCTAssertTrue(curl.contains(secret), "\(secret) is missing from the unredacted cURL:\n\(curl)")
        }
        XCTAssertFalse(output.contains(Redaction.placeholder), output)
    }

    // MARK: - Redirects, end to end

    func testCredentialsAreDroppedWhenA307RedirectOfAPOSTLeavesTheOrigin() throws {
        // Given
        let other = try LocalServer.started()
        defer { other.stop() }
        other.route("POST", "/landing") { _ in .status(204) }
        let target = other.baseURL.appendingPathComponent("landing").absoluteString
        server.route("POST", "/submit") { _ in .redirect(to: target, status: 307) }
        let connect = Connect(transport: Self.cookielessTransport(), retryPolicy: nil)
        let submit = Endpoint(
            baseURL: server.baseURL,
            endpoint: "/submit",
            method: .post,
            headers: [HTTPHeader(name: "Cookie", value: "sid=\(Secret.cookie)")],
            parameters: Parameter.jsonObject(value: ["note": "hello"]),
            authorizationToken: .bearer(token: Secret.bearer)
        )
        // When
        let result = try connect.request(submit).waitForResult(timeout: 10)
        // Then
        let first = try XCTUnwrap(server.requests.first { $0.path == "/submit" })
        XCTAssertEqual(first.header("Authorization"), "Bearer \(Secret.bearer)")
        XCTAssertEqual(first.bodyText, #"{"note":"hello"}"#)
        // On Linux the transport sends the request again itself (FoundationNetworking cannot resend the body).
        XCTAssertNoThrow(try result.get())
        let landed = try XCTUnwrap(other.requests.first)
        XCTAssertEqual(landed.method, "POST", "307 keeps the method")
        XCTAssertEqual(landed.bodyText, #"{"note":"hello"}"#, "and the body")
        XCTAssertNil(landed.header("Authorization"), "credentials must not follow a redirect to another origin")
        XCTAssertNil(landed.header("Cookie"))
    }

    func testCredentialsFollowSameOriginHopsAndStopAtTheFirstCrossOriginHop() throws {
        // Given: A /one → A /two → B /landing
        let other = try LocalServer.started()
        defer { other.stop() }
        other.route("GET", "/landing") { _ in .json(["ok": true]) }
        let target = other.baseURL.appendingPathComponent("landing").absoluteString
        server.route("GET", "/one") { _ in .redirect(to: "/two", status: 302) }
        server.route("GET", "/two") { _ in .redirect(to: target, status: 301) }
        let connect = Connect(transport: Self.cookielessTransport(), retryPolicy: nil)
        let start = Endpoint(
            baseURL: server.baseURL,
            endpoint: "/one",
            headers: [
                HTTPHeader(name: "Cookie", value: "sid=\(Secret.cookie)"),
                HTTPHeader(name: "Proxy-Authorization", value: Secret.basicHeaderValue),
            ],
            authorizationToken: .bearer(token: Secret.bearer)
        )
        // When
        _ = try connect.request(start).wait(timeout: 10)
        // Then
        XCTAssertEqual(server.requests.map(\.path), ["/one", "/two"])
        for request in server.requests {
            XCTAssertEqual(request.header("Authorization"), "Bearer \(Secret.bearer)", "same origin: \(request.path)")
            XCTAssertEqual(request.header("Cookie"), "sid=\(Secret.cookie)", "same origin: \(request.path)")
        }
        let landed = try XCTUnwrap(other.requests.first)
        XCTAssertNil(landed.header("Authorization"))
        XCTAssertNil(landed.header("Proxy-Authorization"))
        XCTAssertNil(landed.header("Cookie"))
        XCTAssertEqual(landed.header("Accept"), "application/json", "other headers still follow")
    }

    // MARK: - Redirect rule

    /// https → http cannot be served on loopback without TLS, so the rule itself is checked here.
    func testRedirectRuleDropsCredentialsOnEveryOriginChange() throws {
        let changes = [
            ("https://api.example.com/a", "http://api.example.com/b"),  // downgrade
            ("https://api.example.com/a", "http://api.example.com:443/b"),  // downgrade, same port number
            ("http://api.example.com/a", "https://api.example.com/b"),  // upgrade: another origin all the same
            ("https://api.example.com/a", "https://api.example.com:8443/b"),  // same host, other port
            ("http://127.0.0.1:8080/a", "http://127.0.0.1:8081/b"),
            ("https://api.example.com/a", "https://evil.example.com/b"),  // other host
            ("https://api.example.com/a", "https://api.example.com.evil.net/b"),
            ("https://example.com/a", "https://api.example.com/b"),  // subdomain
            ("http://localhost:8080/a", "http://127.0.0.1:8080/b"),  // same machine, other name
        ]
        for (from, to) in changes {
            let followed = RedirectRules.redirect(
                try ConnectRequest(signedRequest(to)), from: ConnectRequest(url: URL(string: from)!))
            for name in ["Authorization", "Proxy-Authorization", "Cookie"] {
                XCTAssertNil(followed.value(forHTTPHeaderField: name), "\(name) kept from \(from) to \(to)")
            }
            XCTAssertEqual(followed.value(forHTTPHeaderField: "Accept"), "application/json", "\(from) → \(to)")
        }
    }

    func testRedirectRuleKeepsCredentialsWithinTheSameOrigin() throws {
        let sameOrigin = [
            ("https://api.example.com/a", "https://api.example.com/b?page=2"),
            ("https://API.Example.COM/a", "https://api.example.com/b"),  // hosts compare ignoring case
            ("HTTPS://api.example.com/a", "https://api.example.com/b"),  // so do schemes
            ("https://api.example.com/a", "https://api.example.com:443/b"),  // the default port, written out
            ("http://api.example.com:80/a", "http://api.example.com/b"),
            ("http://127.0.0.1:8080/a", "http://127.0.0.1:8080/b"),
        ]
        for (from, to) in sameOrigin {
            let followed = RedirectRules.redirect(
                try ConnectRequest(signedRequest(to)), from: ConnectRequest(url: URL(string: from)!))
            XCTAssertEqual(
                followed.value(forHTTPHeaderField: "Authorization"), "Bearer \(Secret.bearer)", "\(from) → \(to)")
            XCTAssertEqual(followed.value(forHTTPHeaderField: "Cookie"), "sid=\(Secret.cookie)", "\(from) → \(to)")
        }
    }

    // MARK: - Helpers

    /// A request to `url` carrying every credential header.
    private func signedRequest(_ url: String) -> URLRequest {
        var request = URLRequest(url: URL(string: url)!)
        request.setValue("Bearer \(Secret.bearer)", forHTTPHeaderField: "Authorization")
        request.setValue(Secret.basicHeaderValue, forHTTPHeaderField: "Proxy-Authorization")
        request.setValue("sid=\(Secret.cookie)", forHTTPHeaderField: "Cookie")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        return request
    }

    /// A transport whose session neither stores nor sends cookies, so the `Set-Cookie` these tests receive
    /// cannot reach other tests through the shared cookie storage (cookies ignore ports: both servers are
    /// 127.0.0.1).
    private static func cookielessTransport() -> URLSessionTransport {
        let configuration = URLSessionTransport.defaultConfiguration
        configuration.httpCookieStorage = nil
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpShouldSetCookies = false
        return URLSessionTransport(configuration: configuration)
    }

    private func assertNoSecret(in text: String, _ label: String, file: StaticString = #filePath, line: UInt = #line) {
        for secret in Secret.searched where text.contains(secret) {
            XCTFail("a secret (\(secret)) leaked into the \(label):\n\(text)", file: file, line: line)
        }
    }
}
