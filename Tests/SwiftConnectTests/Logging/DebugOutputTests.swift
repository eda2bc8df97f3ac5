import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `debugResponse: true` output through the client's logger, `cURLCommand(for:)`, and redaction of secrets.
final class DebugOutputTests: XCTestCase {
    typealias Todo = ClientFixtures.Todo
    typealias TodoConnector = ClientFixtures.TodoConnector
    typealias Endpoint = ClientFixtures.Endpoint

    // MARK: - debugResponse

    func testDebugResponseLogsACURLCommandThenTheResponse() {
        // Given
        let logger = MemoryLogger()
        let fake = FakeTransport()
        fake.stub(.put, "/todos/1", with: .json(Todo.sample))
        let connect = Connect(transport: fake, retryPolicy: nil, settings: Connect.Settings(logger: logger))
        // When
        _ = value(of: connect.request(TodoConnector.update(id: 1, todo: .sample), debugResponse: true))
        // Then
        let entries = logger.entries
        XCTAssertEqual(entries.count, 2, "\(logger.messages)")
        XCTAssertTrue(entries.allSatisfy { $0.level == .debug })
        let request = entries.first?.message ?? ""
        XCTAssertTrue(request.contains("curl"), request)
        XCTAssertTrue(request.contains("-X PUT"), request)
        XCTAssertTrue(request.contains("'https://jsonplaceholder.typicode.com/todos/1'"), request)
        XCTAssertTrue(request.contains(#""title":"Test Todo""#), request)
        XCTAssertTrue(request.contains("'Content-Type: application/json'"), request)
        let response = entries.last?.message ?? ""
        XCTAssertTrue(response.contains("HTTP 200"), response)
        XCTAssertTrue(response.contains("PUT https://jsonplaceholder.typicode.com/todos/1"), response)
        XCTAssertTrue(
            response.contains("\n  \"title\" : \"Test Todo\""), "the body is pretty-printed JSON: \(response)")
    }

    /// An upload from disk sends its body from a file: the command still sends a body (`@body.bin`, named in a note),
    /// or curl would announce the length and send nothing, and the server wait; so does one of a request whose body
    /// is a stream.
    func testTheCommandForABodyFromAFileOrAStreamSendsOne() throws {
        let logger = MemoryLogger()
        let fake = FakeTransport()
        fake.stub(.post, "/upload", with: .status(204))
        let connect = Connect(transport: fake, retryPolicy: nil, settings: Connect.Settings(logger: logger))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("curl-\(UUID().uuidString).txt")
        try Data("hello".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let route = Route("/upload", baseURL: URL(string: "https://api.example.com")!, method: .post)
        _ = try connect.upload(files: [File(key: "f", fileURL: file)], to: route, debugResponse: true).wait()
        let command = try XCTUnwrap(logger.entries.first?.message)
        XCTAssertTrue(command.contains("--data-binary @body.bin"), command)
        XCTAssertTrue(command.contains("# body.bin: the "), command)

        var streamed = URLRequest(url: URL(string: "https://api.example.com/upload")!)
        streamed.httpMethod = "POST"
        streamed.httpBodyStream = InputStream(data: Data("x".utf8))
        XCTAssertTrue(cURLCommand(for: streamed).contains("--data-binary @body.bin"))
        XCTAssertFalse(cURLCommand(for: URLRequest(url: URL(string: "https://api.example.com")!)).contains("body.bin"))
    }

    func testWithoutDebugResponseNothingIsLogged() {
        // Given
        let logger = MemoryLogger()
        let connect = Connect(
            transport: FakeTransport.answering(.json(Todo.sample)), retryPolicy: nil,
            settings: Connect.Settings(logger: logger))
        // When
        _ = value(of: connect.request(TodoConnector.get(id: 1)))
        // Then
        XCTAssertEqual(logger.messages, [])
    }

    func testErrorStatusLogsTheResponseAndTheFailure() {
        // Given
        let logger = MemoryLogger()
        let connect = Connect(
            transport: FakeTransport.answering(.json(string: #"{"message":"no such todo"}"#, status: 404)),
            retryPolicy: nil, settings: Connect.Settings(logger: logger))
        // When
        _ = error(of: connect.request(TodoConnector.get(id: 9), debugResponse: true))
        // Then
        let output = logger.messages.last ?? ""
        XCTAssertTrue(output.contains("HTTP 404"), output)
        XCTAssertTrue(output.contains("\"message\" : \"no such todo\""), output)
        XCTAssertTrue(output.contains("FAILED"), output)
    }

    func testInvalidRequestWithDebugResponseLogsTheFailure() {
        // Given
        let logger = MemoryLogger()
        let fake = FakeTransport()
        let connect = Connect(transport: fake, retryPolicy: nil, settings: Connect.Settings(logger: logger))
        // When
        _ = error(of: connect.request(Endpoint(endpoint: "/todos/{id}"), debugResponse: true))
        // Then
        XCTAssertEqual(logger.messages.count, 1)
        XCTAssertTrue(logger.messages.first?.contains("{id}") ?? false, logger.messages.first ?? "")
        XCTAssertTrue(fake.requests.isEmpty)
    }

    /// A failure that is not a `ConnectError` (a middleware's `URLError`, whose failing URL a redirect may have made
    /// of another token; a `DecodingError` quoting a URL) is logged with the secrets of the URLs its text quotes
    /// hidden by name, as `ConnectError` hides those of its underlying error.
    func testAFailureThatIsNotAConnectErrorIsLoggedWithTheSecretsOfItsURLsHidden() throws {
        // Given: a middleware that fails with platform errors quoting URLs with tokens the request never carried
        let failingURL = try XCTUnwrap(URL(string: "https://cdn.example.com/f?access_token=tok-REDIRECT-8642"))
        let failures: [any Error] = [
            URLError(.cannotConnectToHost, userInfo: [NSURLErrorFailingURLErrorKey: failingURL]),
            DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: "bad link https://x.example.com/?sig=sig-SECRET-97531")),
        ]
        for failure in failures {
            let logger = MemoryLogger()
            let failing = AnyMiddleware { _, _, _ in Future(error: failure) }
            let connect = Connect(
                transport: FakeTransport(), middlewares: [failing], retryPolicy: nil,
                settings: Connect.Settings(logger: logger))
            // When
            _ = error(of: connect.request(TodoConnector.get(id: 1), debugResponse: true))
            // Then
            let output = logger.messages.last ?? ""
            XCTAssertTrue(output.contains("FAILED GET https://jsonplaceholder.typicode.com/todos/1"), output)
            XCTAssertFalse(output.contains("tok-REDIRECT-8642"), output)
            XCTAssertFalse(output.contains("sig-SECRET-97531"), output)
        }
    }

    /// The server's text in the response block (its body, a header value) keeps its line breaks but sends no control
    /// character to the terminal or log viewer that shows it: ESC (a terminal's escape sequences), a lone CR (which
    /// writes over the line it ends), NEL, the Unicode line separators and the bidirectional overrides are shown as
    /// escapes. The body was written as it came.
    func testTheServersControlCharactersAreShownAsEscapesNotSentToTheTerminal() {
        // Given
        let logger = MemoryLogger()
        let body = "first\r\nsecond\rhidden \u{1B}[2J \u{202E}desrever\u{85}\u{2028}end\tx"
        let fake = FakeTransport.answering(
            .handler { request in
                let headers = ["Content-Type": "text/plain", "X-Note": "a\u{1B}]0;owned\u{7}b"]
                guard
                    let response = ConnectResponse(
                        request: request, statusCode: 200, headers: headers, data: Data(body.utf8))
                else { return .failure(ConnectError(.badResponse, message: "no response")) }
                return .success(response)
            })
        let connect = Connect(transport: fake, retryPolicy: nil, settings: Connect.Settings(logger: logger))
        // When
        _ = value(of: connect.request(Endpoint(), debugResponse: true))
        // Then
        let output = logger.messages.last ?? ""
        let unsafe = output.unicodeScalars.filter { scalar in
            scalar != "\n" && scalar != "\t"
                && (scalar.value < 0x20 || (0x7F..<0xA0).contains(scalar.value)
                    || [0x2028, 0x202E].contains(scalar.value))
        }
        XCTAssertEqual(unsafe.map(\.value), [], output.debugDescription)
        XCTAssertTrue(
            output.contains("\nfirst\nsecond\\u{D}hidden \\u{1B}[2J \\u{202E}desrever\\u{85}\\u{2028}end\tx\n"), output)
        XCTAssertTrue(output.contains("X-Note: a\\u{1B}]0;owned\\u{7}b"), output)
    }

    // MARK: - Redaction

    func testAuthorizationAndCookiesAreRedactedEverywhere() {
        // Given
        let logger = MemoryLogger()
        let fake = FakeTransport.answering(
            .json(
                string: #"{"id":1,"token":"response-token-value"}"#,
                headers: ["Set-Cookie": "sid=response-cookie-value"]
            ))
        let connect = Connect(transport: fake, retryPolicy: nil, settings: Connect.Settings(logger: logger))
        // When
        _ = value(of: connect.request(SignedIn(token: .bearer(token: "secret-token")), debugResponse: true))
        // Then
        let output = logger.messages.joined(separator: "\n")
        for secret in ["secret-token", "session-cookie-value", "response-token-value", "response-cookie-value"] {
            XCTAssertFalse(output.contains(secret), "\(secret) leaked into the logs:\n\(output)")
        }
        XCTAssertTrue(output.contains("'Authorization: <redacted>'"), output)
        XCTAssertTrue(output.contains("'Cookie: <redacted>'"), output)
        XCTAssertTrue(output.contains("\"id\" : 1"), "non-secret fields stay: \(output)")
        XCTAssertEqual(
            fake.requests.first?.value(forHTTPHeaderField: "Authorization"), "Bearer secret-token",
            "only the logs are redacted, not the request"
        )
    }

    func testSecretsInAURLValuedResponseHeaderAreRedacted() {
        // Given: a redirect answered as it is (a login form's 303) or a 201, whose Location holds a token
        let logger = MemoryLogger()
        let fake = FakeTransport.answering(
            .status(
                303,
                headers: [
                    "Location":
                        "https://app.example.com/callback?code=ok-code-1&access_token=location-token#id_token=frag",
                    "Content-Location": "https://user:location-password@files.example.com/a?signature=sig-value",
                ]))
        let connect = Connect(transport: fake, retryPolicy: nil, settings: Connect.Settings(logger: logger))
        // When
        _ = try? connect.request(Endpoint(), debugResponse: true).waitForResult(timeout: 5)
        // Then
        let output = logger.messages.joined(separator: "\n")
        for secret in ["location-token", "ok-code-1", "frag", "location-password", "sig-value"] {
            XCTAssertFalse(output.contains(secret), "\(secret) leaked into the logs:\n\(output)")
        }
        XCTAssertTrue(
            output.contains("Location: https://app.example.com/callback?code=<redacted>&access_token=<redacted>"),
            output)
    }

    /// The response's header names were logged whole: a header line pasted in as a name (by a fake, a recording or a
    /// transport of your own) showed its secret, where the request's names were cut.
    func testAResponseHeaderNameThatIsAPastedHeaderLineIsCut() {
        // Given
        let logger = MemoryLogger()
        // Through `.handler`, as a transport of your own would answer: `.status` now fails on such a name, as an engine.
        let headers = ["X-Echo: Bearer PASTEDTOKEN1": "x", "X-Request-ID": "req-1"]
        let fake = FakeTransport.answering(
            .handler { request in
                guard let response = ConnectResponse(request: request, statusCode: 200, headers: headers) else {
                    return .failure(ConnectError(.badResponse, message: "no response"))
                }
                return .success(response)
            })
        let connect = Connect(transport: fake, retryPolicy: nil, settings: Connect.Settings(logger: logger))
        // When
        _ = value(of: connect.request(Endpoint(), debugResponse: true))
        // Then
        let output = logger.messages.joined(separator: "\n")
        XCTAssertFalse(output.lowercased().contains("pastedtoken1"), output)
        XCTAssertTrue(output.lowercased().contains("x-echo…: <redacted>"), output)
        XCTAssertTrue(output.contains("X-Request-ID: req-1"), output)
    }

    func testVendorKeyHeadersAndShortSecretQueryNamesAreRedacted() {
        // Given: credentials in headers and query items named as common services name them
        let logger = MemoryLogger()
        let connect = Connect(
            transport: FakeTransport.answering(.status(204)), retryPolicy: nil,
            settings: Connect.Settings(logger: logger))
        let endpoint = Endpoint(
            endpoint: "/maps",
            headers: [
                HTTPHeader(name: "X-Auth-Key", value: "cloudflare-key"),
                HTTPHeader(name: "Ocp-Apim-Subscription-Key", value: "azure-subscription"),
                HTTPHeader(name: "x-functions-key", value: "azure-function"),
                HTTPHeader(name: "Authentication", value: "auth-header"),
                HTTPHeader(name: "Idempotency-Key", value: "idempotency-visible"),
                HTTPHeader(name: "X-Sentry-Auth", value: "Sentry sentry_key=sentry-public-key, sentry_version=7"),
                HTTPHeader(name: "Fastly-Key", value: "fastly-api-token"),
                // S3's SSE-C key (the AES key itself), beside Google's and Azure's customer-supplied keys
                HTTPHeader(name: "x-amz-server-side-encryption-customer-key", value: "sse-c-aes-key"),
                HTTPHeader(name: "x-goog-encryption-key", value: "csek-aes-key"),
            ],
            parameters: CompositeParameters(
                .query(key: "key", value: "query-api-key"), .query(key: "SIG", value: "sas-signature"),
                .query(key: "monkey", value: "visible-value"))
        )
        // When
        _ = value(of: connect.request(endpoint, debugResponse: true))
        // Then
        let output = logger.messages.joined(separator: "\n")
        for secret in [
            "query-api-key", "sas-signature", "cloudflare-key", "azure-subscription", "azure-function", "auth-header",
            "sentry-public-key", "fastly-api-token", "sse-c-aes-key", "csek-aes-key",
        ] {
            XCTAssertFalse(output.contains(secret), "\(secret) leaked into the logs:\n\(output)")
        }
        XCTAssertTrue(output.contains("visible-value"), output)
        XCTAssertTrue(output.contains("idempotency-visible"), output)
    }

    func testSecretJSONBodyFieldsAreRedacted() {
        // Given
        let logger = MemoryLogger()
        let connect = Connect(
            transport: FakeTransport.answering(.status(204)), retryPolicy: nil,
            settings: Connect.Settings(logger: logger))
        let login = Endpoint(
            endpoint: "/login",
            method: .post,
            parameters: Parameter.jsonObject(value: Login(username: "amy", password: "hunter2", token: "tok-999"))
        )
        // When
        _ = value(of: connect.request(login, debugResponse: true))
        // Then
        let output = logger.messages.joined(separator: "\n")
        XCTAssertFalse(output.contains("hunter2"), output)
        XCTAssertFalse(output.contains("tok-999"), output)
        XCTAssertTrue(output.contains(#""password":"<redacted>""#), output)
        XCTAssertTrue(output.contains(#""token":"<redacted>""#), output)
        XCTAssertTrue(output.contains(#""username":"amy""#), output)
    }

    /// JSON or a form carried as a JSON string (an API Gateway event's `"body"`, a Step Functions `"input"`, an SNS
    /// `"Message"`) has its secrets hidden as the document's: the string was shown as it came, `password` and all.
    /// A string that holds no secret, or no document, is shown as it is.
    func testSecretsOfJSONOrAFormCarriedAsAStringAreRedacted() throws {
        // Given
        let logger = MemoryLogger()
        let answer =
            #"{"body":"{\"user\":\"amy\",\"password\":\"hunter2-in-json\"}","#
            + #""input":"user=amy&client_secret=s3cr3t-in-form","#
            + #""nested":"{\"Message\":\"{\\\"token\\\":\\\"tok-two-deep\\\"}\"}","#
            + #""plain":"{\"page\":2}","filter":"status=active","note":"a: b"}"#
        let connect = Connect(
            transport: FakeTransport.answering(.json(string: answer)), retryPolicy: nil,
            settings: Connect.Settings(logger: logger))
        let request = try Endpoint(
            endpoint: "/events", method: .post,
            parameters: Parameter.body(
                Data(#"{"input":"{\"password\":\"hunter2-sent\"}"}"#.utf8), contentType: "application/json")
        ).asURLRequest()

        // When
        _ = value(of: connect.request(Endpoint(endpoint: "/events"), debugResponse: true))
        let command = cURLCommand(for: request)

        // Then
        let output = logger.messages.joined(separator: "\n")
        for secret in ["hunter2-in-json", "s3cr3t-in-form", "tok-two-deep"] {
            XCTAssertFalse(output.contains(secret), "\(secret) leaked:\n\(output)")
        }
        XCTAssertFalse(command.contains("hunter2-sent"), command)
        XCTAssertTrue(output.contains("amy"), output)
        XCTAssertTrue(output.contains(#"{\"page\":2}"#), output)
        XCTAssertTrue(output.contains("status=active"), output)
        XCTAssertTrue(output.contains("a: b"), output)
    }

    /// JSON Web Tokens under names no rule knows (Strapi's `"jwt"`, SimpleJWT's `"access"` and `"refresh"`) are
    /// hidden, and so are their echoes; a dotted string that is no token is shown.
    func testJSONWebTokensAreHiddenWhateverTheirName() throws {
        // Given
        let logger = MemoryLogger()
        let access = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbXkifQ.c2lnbmF0dXJlLWFjY2Vzcw"
        let refresh = "eyJhbGciOiJIUzI1NiJ9.eyJyZWZyZXNoIjp0cnVlfQ.c2lnbmF0dXJlLXJlZnJlc2g"
        let strapi = "eyJhbGciOiJIUzI1NiJ9.eyJpZCI6MX0.c2lnbmF0dXJlLXN0cmFwaQ"
        let answer =
            #"{"access":"\#(access)","refresh":"\#(refresh)","jwt":"\#(strapi)","version":"1.2.3","#
            + #""echo":"your token is \#(access)"}"#
        let connect = Connect(
            transport: FakeTransport.answering(.json(string: answer)), retryPolicy: nil,
            settings: Connect.Settings(logger: logger))

        // When
        _ = value(of: connect.request(Endpoint(endpoint: "/token"), debugResponse: true))

        // Then
        let output = logger.messages.joined(separator: "\n")
        for token in [access, refresh, strapi] {
            XCTAssertFalse(output.contains(token), "\(token) leaked:\n\(output)")
        }
        XCTAssertTrue(output.contains("1.2.3"), output)
    }

    func testSecretFormFieldsAreRedacted() throws {
        // Given
        let request = try Endpoint(
            endpoint: "/login",
            method: .post,
            parameters: CompositeParameters(.form(key: "user", value: "amy"), .form(key: "password", value: "hunter2"))
        ).asURLRequest()
        // When
        let command = cURLCommand(for: request)
        // Then
        XCTAssertFalse(command.contains("hunter2"), command)
        XCTAssertTrue(command.contains("user=amy"), command)
    }

    /// A form's `Content-Type` written with blanks around it is still a form's: its body was built as one, and its
    /// secret fields are hidden as one's.
    func testSecretFormFieldsAreRedactedWhateverBlanksSurroundTheContentType() throws {
        for contentType in [" application/x-www-form-urlencoded", "Application/X-WWW-Form-URLEncoded ; charset=utf-8"] {
            var request = try Endpoint(
                endpoint: "/login", method: .post,
                parameters: CompositeParameters(.form(key: "password", value: "hunter22"))
            ).asURLRequest()
            request.httpBody = Data("user=amy&password=hunter22".utf8)
            request.setValue(contentType, forHTTPHeaderField: "Content-Type")

            let command = cURLCommand(for: request)

            XCTAssertFalse(command.contains("hunter22"), "\(contentType): \(command)")
            XCTAssertTrue(command.contains("user=amy"), "\(contentType): \(command)")
        }
    }

    func testUserInfoInTheURLIsRedacted() throws {
        // Given
        let request = try Endpoint(baseURL: URL(string: "https://amy:hunter2@api.example.com")!).asURLRequest()
        // When
        let command = cURLCommand(for: request)
        // Then
        XCTAssertFalse(command.contains("hunter2"), command)
        XCTAssertTrue(command.contains("api.example.com/items"), command)
    }

    /// Runs in a child process: setting `<redacted>` into `URLComponents.percentEncodedQuery` traps on
    /// swift-foundation, which would otherwise end the whole test run.
    func testSecretQueryValueIsRedacted() throws {
        try runIsolated {
            // Given
            let request = try Endpoint(
                endpoint: "/search",
                parameters: CompositeParameters(
                    .query(key: "token", value: "query-secret"), .query(key: "page", value: "2"))
            ).asURLRequest()
            // When
            let command = cURLCommand(for: request)
            // Then
            XCTAssertFalse(command.contains("query-secret"), command)
            XCTAssertTrue(command.contains("page=2"), command)
            XCTAssertTrue(command.contains("token="), command)
        }
    }

    /// Runs in a child process for the same reason as ``testSecretQueryValueIsRedacted()``.
    func testSecretQueryValueIsRedactedInDebugResponseLogs() throws {
        try runIsolated {
            // Given
            let logger = MemoryLogger()
            let connect = Connect(
                transport: FakeTransport.answering(.status(200)), retryPolicy: nil,
                settings: Connect.Settings(logger: logger))
            let search = Endpoint(
                endpoint: "/search", parameters: Parameter.query(key: "api_key", value: "query-secret"))
            // When
            _ = self.value(of: connect.request(search, debugResponse: true))
            // Then
            let output = logger.messages.joined(separator: "\n")
            XCTAssertEqual(logger.messages.count, 2)
            XCTAssertFalse(output.contains("query-secret"), output)
        }
    }

    /// Runs in a child process for the same reason as ``testSecretQueryValueIsRedacted()``.
    func testErrorDescriptionRedactsSecretQueryValue() throws {
        try runIsolated {
            // Given
            let connect = Connect(
                transport: FakeTransport.answering(.failure(URLError(.notConnectedToInternet))), retryPolicy: nil)
            let search = Endpoint(endpoint: "/search", parameters: Parameter.query(key: "token", value: "query-secret"))
            let error = self.connectError(of: connect.request(search))
            // When
            let description = error.map(String.init(describing:)) ?? ""
            // Then
            XCTAssertTrue(description.contains("GET https://api.example.com/search"), description)
            XCTAssertFalse(description.contains("query-secret"), description)
        }
    }

    func testWithRedactionOffTheValuesAppear() {
        // Given
        let logger = MemoryLogger()
        let connect = Connect(
            transport: FakeTransport.answering(.status(200)), retryPolicy: nil,
            settings: Connect.Settings(logger: logger, redactsSecrets: false))
        let connector = SignedIn(
            token: .bearer(token: "secret-token"),
            query: "query-secret",
            body: Login(username: "amy", password: "hunter2", token: "tok-999")
        )
        // When
        _ = value(of: connect.request(connector, debugResponse: true))
        // Then
        let output = logger.messages.joined(separator: "\n")
        XCTAssertFalse(connect.settings.redactsSecrets)
        for secret in ["Bearer secret-token", "session-cookie-value", "query-secret", "hunter2", "tok-999"] {
            XCTAssertTrue(output.contains(secret), "\(secret) missing from:\n\(output)")
        }
        XCTAssertFalse(output.contains("<redacted>"), output)
    }

    // MARK: - cURL command

    func testCURLCommandPassesShellSyntaxCheck() throws {
        // Given
        let request = try SignedIn(
            token: .bearer(token: "secret-token"),
            extraHeaders: [HTTPHeader(name: "X-Note", value: "it's \"quoted\" $HOME `x` \\ done")],
            body: Login(username: "O'Brien", password: "p", token: "t")
        ).asURLRequest()
        let command = cURLCommand(for: request)
        // When
        let result = try shell(["-n", "-c", command])
        // Then
        XCTAssertEqual(result.status, 0, "sh -n rejected:\n\(command)\n\(result.stderr)")
    }

    func testCURLCommandEscapesSingleQuotes() throws {
        // Given
        let request = try Endpoint(headers: [HTTPHeader(name: "X-Note", value: "it's")]).asURLRequest()
        // When
        let command = cURLCommand(for: request)
        // Then
        XCTAssertTrue(command.contains(#"'X-Note: it'\''s'"#), command)
    }

    func testCURLCommandArgumentsSurviveTheShell() throws {
        // Given
        let note = "it's \"quoted\" $HOME `x` \\ done"
        let request = try SignedIn(
            token: nil,
            extraHeaders: [HTTPHeader(name: "X-Note", value: note)],
            body: Login(username: "O'Brien", password: "p", token: "t")
        ).asURLRequest()
        let command = cURLCommand(for: request)
        // When: `curl` replaced by `printf`, the shell prints each argument it would pass to curl
        let arguments = try shellArguments(of: command)
        // Then
        XCTAssertEqual(arguments.first, "-v")
        XCTAssertTrue(arguments.contains("X-Note: \(note)"), "\(arguments)")
        XCTAssertEqual(arguments.last, "https://api.example.com/me")
        let dataIndex = try XCTUnwrap(arguments.firstIndex(of: "--data-raw"))
        let body = try XCTUnwrap(arguments[dataIndex + 1].data(using: .utf8))
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: body) as? [String: String])
        XCTAssertEqual(json["username"], "O'Brien")
    }

    func testCURLCommandWithBinaryBodyKeepsTheURLAnArgument() throws {
        // Given
        let binary = Data([0xFF, 0xFE, 0x00, 0x80])
        let request = try Endpoint(
            endpoint: "/upload",
            method: .post,
            parameters: Parameter.body(binary, contentType: "application/octet-stream")
        ).asURLRequest()
        let command = cURLCommand(for: request)
        // When
        let arguments = try shellArguments(of: command)
        // Then
        XCTAssertEqual(
            arguments.last, "https://api.example.com/upload", "the URL must still be passed to curl:\n\(command)")
        XCTAssertTrue(arguments.contains("--data-binary"), "\(arguments)")
    }

    /// Text that runs a command, or ends the argument, if the shell reads it unquoted.
    private static let hostile = "a'b\"c `echo PWNED` $(echo PWNED) ${HOME} ;echo PWNED| & \\ #\necho PWNED"

    func testCURLCommandQuotesAHostileMethod() throws {
        for method in [
            "GET;echo PWNED", "`echo PWNED`", "$(echo PWNED)", "A|B&C", "it's", "GET\necho PWNED", Self.hostile,
        ] {
            // Given: a raw request can hold any method
            var request = URLRequest(url: URL(string: "https://api.example.com/me")!)
            request.httpMethod = method
            let command = cURLCommand(for: request)
            // When
            let arguments = try shellArguments(of: command)
            // Then: the method reaches curl as one argument, and nothing else runs
            XCTAssertEqual(arguments, ["-v", "-X", request.httpMethod ?? "", "https://api.example.com/me"], command)
        }
    }

    func testCURLCommandQuotesHostileHeadersBodyAndURL() throws {
        // Given: a raw request with hostile text in every part, redaction off so it is all shown
        let url = try XCTUnwrap(URL(string: "https://api.example.com/a'b;c$(d)&e|f?q='$(echo%20PWNED)'#x;y"))
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("v'1 `echo PWNED` $(echo PWNED) ;echo PWNED", forHTTPHeaderField: "X-Note")
        request.setValue("plain", forHTTPHeaderField: "X-It's`id`$(id)")
        request.httpBody = Data(Self.hostile.utf8)
        XCTAssertEqual(
            request.allHTTPHeaderFields?.count, 2, "both headers are kept: \(request.allHTTPHeaderFields ?? [:])")
        for redacting in [false, true] {
            let command = cURLCommand(for: request, redactingSecrets: redacting)
            // When
            let arguments = try shellArguments(of: command)
            // Then
            let headers = (request.allHTTPHeaderFields ?? [:]).sorted { $0.key.lowercased() < $1.key.lowercased() }
            var expected = ["-v", "-X", "POST"]
            for (name, value) in headers { expected += ["-H", "\(name): \(value)"] }
            expected += ["--data-raw", Self.hostile, url.absoluteString]
            XCTAssertEqual(arguments, expected, command)
        }
    }

    func testCURLCommandOfAHEADUsesHeadNotDashXHEAD() throws {
        // Given: `curl -X HEAD` waits for the body the response's Content-Length announces, and hangs
        let request = try Endpoint(endpoint: "/todos", method: .head).asURLRequest()
        // When
        let arguments = try shellArguments(of: cURLCommand(for: request))
        // Then
        XCTAssertEqual(arguments, ["-v", "--head", "https://api.example.com/todos"])
    }

    func testCURLCommandSendsAHeaderWithAnEmptyValue() throws {
        // Given: curl drops `-H 'X-Empty: '` (and `-H 'X-Empty:'`) instead of sending it empty
        let request = try Endpoint(headers: [HTTPHeader(name: "X-Empty", value: "")]).asURLRequest()
        XCTAssertEqual(request.value(forHTTPHeaderField: "X-Empty"), "")
        // When
        let arguments = try shellArguments(of: cURLCommand(for: request))
        // Then: `Name;` is curl's way to send a header with no value
        XCTAssertTrue(arguments.contains("X-Empty;"), "\(arguments)")
        XCTAssertFalse(arguments.contains { $0.hasPrefix("X-Empty:") }, "\(arguments)")
    }

    func testCURLCommandOfATextBodyWithANULByteSendsItAsBinary() throws {
        // Given: a shell argument cannot hold a NUL byte, so `--data-raw` would send a cut or altered body
        let request = try Endpoint(
            endpoint: "/upload",
            method: .post,
            parameters: Parameter.body(Data("a\u{0}b".utf8), contentType: "text/plain")
        ).asURLRequest()
        // When
        let command = cURLCommand(for: request)
        // Then
        XCTAssertFalse(command.utf8.contains(0), "the command holds a NUL byte: \(command.debugDescription)")
        let arguments = try shellArguments(of: command)
        XCTAssertTrue(arguments.contains("--data-binary"), "\(arguments)")
        XCTAssertFalse(arguments.contains("--data-raw"), "\(arguments)")
        XCTAssertEqual(arguments.last, "https://api.example.com/upload")
    }

    func testCURLCommandOfAGETHasMethodAndURL() throws {
        // Given
        let request = try TodoConnector.get(id: 123).asURLRequest()
        // When
        let command = cURLCommand(for: request)
        // Then
        XCTAssertEqual(command, "curl -v \\\n    -X GET \\\n    'https://jsonplaceholder.typicode.com/todos/123'")
    }
}

// MARK: - Doubles

private struct Login: Encodable {
    let username: String
    let password: String
    let token: String
}

/// A connector with credentials, a cookie and optionally a secret query item and a JSON body.
private struct SignedIn: Connector, AuthorizedConnector {
    var token: AuthorizationToken?
    var query: String = ""
    var extraHeaders: [HTTPHeader] = []
    var body: Login? = nil

    var baseURL: URL { URL(string: "https://api.example.com")! }
    var endpoint: String { "/me" }
    var method: HTTPMethod { body == nil ? .get : .post }
    var headers: [HTTPHeader] { [HTTPHeader(name: "Cookie", value: "session=session-cookie-value")] + extraHeaders }
    var authorizationToken: AuthorizationToken? { token }
    var parameters: ParametersRepresentable? {
        var list: [Parameter] = []
        if !query.isEmpty { list.append(.query(key: "token", value: query)) }
        if let body { list.append(.jsonObject(value: body)) }
        return CompositeParameters(list)
    }
}

// MARK: - Running shells and child processes

extension DebugOutputTests {
    private static let childEnvironmentKey = "SWIFTCONNECT_ISOLATED_TEST"

    /// Runs `body` in a child copy of this test process, so that a trap in library code fails this test with
    /// the child's output instead of ending the whole run. In the child, runs `body` directly.
    private func runIsolated(
        _ function: String = #function,
        file: StaticString = #filePath,
        line: UInt = #line,
        _ body: () throws -> Void
    ) throws {
        let testName = String(function.prefix { $0 != "(" })
        if ProcessInfo.processInfo.environment[Self.childEnvironmentKey] == testName {
            try body()
            return
        }
        guard let executable = Bundle.main.executablePath ?? CommandLine.arguments.first,
            FileManager.default.isExecutableFile(atPath: executable)
        else {
            throw XCTSkip("cannot find the test executable to run \(testName) in a child process")
        }
        var environment = ProcessInfo.processInfo.environment
        environment[Self.childEnvironmentKey] = testName
        environment["SWIFT_BACKTRACE"] = "enable=no"
        let result = try run(executable, ["SwiftConnectTests.DebugOutputTests/\(testName)"], environment: environment)
        let output = result.stdout + result.stderr
        let keyLines = output.split(separator: "\n")
            .filter { $0.contains("Fatal error") || $0.contains("error:") || $0.contains("Executed") }
            .joined(separator: "\n")
        let summary = keyLines.isEmpty ? String(output.suffix(2000)) : keyLines
        XCTAssertEqual(
            result.status, 0, "\(testName) failed or crashed in its child process:\n\(summary)", file: file, line: line)
        if result.status == 0 {
            XCTAssertTrue(
                output.contains("Executed 1 test"), "the child did not run \(testName):\n\(summary)", file: file,
                line: line)
        }
    }

    /// The arguments the shell would pass to curl, found by running the command with `printf` in its place.
    /// Each argument is followed by the record separator (U+001E), so arguments may hold newlines.
    private func shellArguments(of command: String) throws -> [String] {
        XCTAssertTrue(command.hasPrefix("curl "), command)
        let script = "printf '%s\\036' " + command.dropFirst("curl ".count)
        let result = try shell(["-c", script])
        XCTAssertEqual(result.status, 0, "the shell failed on:\n\(command)\n\(result.stderr)")
        XCTAssertEqual(result.stderr, "", "the shell complained about:\n\(command)")
        var arguments = result.stdout.components(separatedBy: "\u{1E}")
        if arguments.last == "" { arguments.removeLast() }
        return arguments
    }

    private func shell(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: "/bin/sh"), "/bin/sh is missing")
        return try run("/bin/sh", arguments, environment: ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent"])
    }

    private func run(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String]
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        // Read stderr concurrently so that neither pipe can fill up and block the child.
        let errorData = Recorder<Data>()
        let errorRead = DispatchGroup()
        errorRead.enter()
        DispatchQueue.global().async {
            errorData.append(stderr.fileHandleForReading.readDataToEndOfFile())
            errorRead.leave()
        }
        let outputData = stdout.fileHandleForReading.readDataToEndOfFile()
        errorRead.wait()
        process.waitUntilExit()
        return (
            process.terminationStatus,
            String(decoding: outputData, as: UTF8.self),
            String(decoding: errorData.values.first ?? Data(), as: UTF8.self)
        )
    }
}
