import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Secrets never reach a recording, and replay still works, against a server that echoes every kind of secret.
final class RecordingSecretsTests: XCTestCase {
    private var server: LocalServer!
    private var folder: URL!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        folder = try makeRecordingFolder(for: self)
        server.route("*", "/echo") { request in .echo(request) }
        server.route("POST", "/login") { _ in
            LocalServer.Response.json(string: #"{"access_token":"tok-RESPONSE-998877","expires_in":3600}"#)
                .withHeader("Set-Cookie", "session=tok-SETCOOKIE-112233; Path=/; HttpOnly")
        }
    }

    override func tearDown() {
        server.stop()
        server = nil
    }

    /// Every secret the requests below carry or the server gives, each unlike any other text in the file.
    private let secrets = [
        "tok-AUTH-abcdef123", "tok-COOKIE-778899", "tok-APIKEY-445566", "tok-QUERY-123456", "tok-PASSWORD-xyz789",
        "tok-SETCOOKIE-112233", "tok-RESPONSE-998877", "tok-USERINFO-556677",
    ]

    /// The calls, sent with the given secrets (index-aligned with ``secrets``' first five).
    private func calls(_ values: [String]) -> [RecordingEndpoint] {
        [
            RecordingEndpoint(
                baseURL: server.baseURL, endpoint: "/echo?page=1&access_token=\(values[3])",
                headers: [
                    .authorization(bearerToken: values[0]), HTTPHeader(name: "Cookie", value: "session=\(values[1])"),
                    HTTPHeader(name: "X-Api-Key", value: values[2]),
                ]),
            RecordingEndpoint(
                baseURL: server.baseURL, endpoint: "/echo", method: .post,
                parameters: Parameter.body(
                    Data(#"{"user":"amy","password":"\#(values[4])"}"#.utf8), contentType: "application/json")),
            RecordingEndpoint(baseURL: server.baseURL, endpoint: "/login", method: .post),
        ]
    }

    func testASecretEchoedInBase64IsHiddenToo() throws {
        // Given: a server that answers with the base64 of the key it was sent
        server.route("GET", "/encoded") { request in
            .json(["seen": Data((request.header("X-Api-Key") ?? "").utf8).base64EncodedString()])
        }
        let file = folder.appendingPathComponent("encoded.har")
        let recorder = Connect(
            transport: RecordingTransport(fileURL: file, wrapping: URLSessionTransport(), mode: .record),
            retryPolicy: nil)
        let call = RecordingEndpoint(
            baseURL: server.baseURL, endpoint: "/encoded",
            headers: [HTTPHeader(name: "X-Api-Key", value: "ak-27182818")])
        // When
        let live = try recorder.request(call).wait()
        // Then
        let encoded = Data("ak-27182818".utf8).base64EncodedString()
        XCTAssertTrue(String(decoding: live, as: UTF8.self).contains(encoded))
        XCTAssertFalse(try String(contentsOf: file, encoding: .utf8).contains(encoded))
    }

    /// An API key sent as the username with no password (`https://sk_live_…@host`, as Stripe takes it) is the
    /// credential: neither the URL the recording keeps nor the echo of the `Basic` header the engine makes of it shows
    /// it.
    func testAUsernameWithoutAPasswordIsKeptOutOfTheRecording() throws {
        let key = "sk_live_USERKEY-314159"
        let file = folder.appendingPathComponent("userkey.har")
        let recorder = Connect(
            transport: RecordingTransport(fileURL: file, wrapping: URLSessionTransport(), mode: .record),
            retryPolicy: nil)
        for base in ["http://\(key)@127.0.0.1:\(server.port)", "http://\(key):@127.0.0.1:\(server.port)"] {
            let live = try recorder.request(RecordingEndpoint(baseURL: XCTUnwrap(URL(string: base)), endpoint: "/echo"))
                .wait()
            XCTAssertTrue(String(decoding: live, as: UTF8.self).contains("Basic "), "the server echoes the header")
        }
        server.stop()
        let text = try String(contentsOf: file, encoding: .utf8)
        for form in [key, Data("\(key):".utf8).base64EncodedString()] {
            XCTAssertFalse(text.contains(form), "\(form) is in the recording: \(text)")
        }
        XCTAssertTrue(text.contains("127.0.0.1:\(server.port)/echo"), text)
        // A replay with another key (a CI machine's) finds the recording.
        let replay = Connect(transport: RecordingTransport(fileURL: file, mode: .replay), retryPolicy: nil)
        let other = try XCTUnwrap(URL(string: "http://sk_test_OTHER-271828@127.0.0.1:\(server.port)"))
        XCTAssertNoThrow(try replay.request(RecordingEndpoint(baseURL: other, endpoint: "/echo")).wait())
    }

    func testNoSecretReachesTheFileInAnyFormYetReplayPasses() throws {
        // Given: requests carrying secrets, answered by echoes and a token endpoint, recorded
        let file = folder.appendingPathComponent("secrets.har")
        let recorder = Connect(
            transport: RecordingTransport(fileURL: file, wrapping: URLSessionTransport(), mode: .record),
            retryPolicy: nil)
        let userInfo = try XCTUnwrap(URL(string: "http://amy:\(secrets[7])@127.0.0.1:\(server.port)"))
        _ = try recorder.request(RecordingEndpoint(baseURL: userInfo, endpoint: "/echo")).waitForResult()
        let live = try calls(secrets).map { try recorder.request($0).wait() }
        XCTAssertTrue(String(decoding: live[0], as: UTF8.self).contains("tok-AUTH-abcdef123"), "the server echoes it")
        // After the login: the session may send its cookie back below the transport, and the server echo it.
        _ = try recorder.request(RecordingEndpoint(baseURL: server.baseURL, endpoint: "/echo")).wait()
        server.stop()
        // Then: no secret in the file, raw, percent-encoded, JSON-escaped or base64
        let text = try String(contentsOf: file, encoding: .utf8)
        for secret in secrets {
            var forms = [
                secret, Data(secret.utf8).base64EncodedString(), Data("amy:\(secret)".utf8).base64EncodedString(),
            ]
            forms.append(secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? secret)
            forms.append(secret.replacingOccurrences(of: "/", with: "\\/"))
            for form in forms { XCTAssertFalse(text.contains(form), "\(form) is in the recording") }
        }
        XCTAssertTrue(text.contains("<redacted:Authorization>"), text)
        XCTAssertTrue(text.contains("session=<redacted:session>; Path=/; HttpOnly"), text)
        // When: replayed with other secrets, as on a CI machine that has other credentials
        let others = [
            "tok-AUTH-other", "tok-COOKIE-other", "tok-APIKEY-other", "tok-QUERY-other", "tok-PASSWORD-other",
        ]
        let replay = Connect(
            transport: RecordingTransport(
                fileURL: file, mode: .replay, placeholderValues: ["access_token": "test-token"]),
            retryPolicy: nil)
        let replayed = try calls(others).map { try replay.request($0).wait() }
        // Then: every request found its recording, and the test's value fills the token
        XCTAssertEqual(replayed.count, 3)
        let login = try JSONSerialization.jsonObject(with: replayed[2]) as? [String: Any]
        XCTAssertEqual(login?["access_token"] as? String, "test-token")
        XCTAssertEqual(login?["expires_in"] as? Int, 3600)
    }

    func testEveryCookieOfRepeatedSetCookieFieldsIsRedacted() throws {
        // Given: an answer that sets two cookies, one with a comma in its date; URLSession joins the fields
        server.route("GET", "/cookies") { _ in
            LocalServer.Response.json(string: "{}")
                .withHeader("Set-Cookie", "a=tok-FIRST-246810; Expires=Wed, 09 Jun 2041 10:18:14 GMT; Path=/")
                .withHeader("Set-Cookie", "b=tok-SECOND-135791; Path=/; HttpOnly")
        }
        let file = folder.appendingPathComponent("cookies.har")
        let recorder = Connect(
            transport: RecordingTransport(fileURL: file, wrapping: URLSessionTransport(), mode: .record),
            retryPolicy: nil)
        // When
        _ = try recorder.request(RecordingEndpoint(baseURL: server.baseURL, endpoint: "/cookies")).wait()
        // Then: neither value is in the file; each cookie is a field and an entry of its own, attributes kept
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("tok-FIRST-246810"), text)
        XCTAssertFalse(text.contains("tok-SECOND-135791"), text)
        let har = try JSONDecoder().decode(HAR.self, from: Data(contentsOf: file))
        let response = try XCTUnwrap(har.log.entries.first?.response)
        XCTAssertEqual(
            response.headers.filter { $0.name.lowercased() == "set-cookie" }.map(\.value),
            [
                "a=<redacted:a>; Expires=Wed, 09 Jun 2041 10:18:14 GMT; Path=/",
                "b=<redacted:b>; Path=/; HttpOnly",
            ])
        XCTAssertEqual(response.cookies.map(\.name), ["a", "b"])
    }

    /// A cookie without `=` is a value without a name (RFC 6265bis): its text was kept as the name, in the clear.
    /// An empty name (`=value`) lost its value the same way.
    func testACookieWithoutANameIsRedactedWhole() throws {
        server.route("GET", "/cookies") { _ in
            LocalServer.Response.json(string: "{}")
                .withHeader("Set-Cookie", "tok-NAMELESS-97531; Path=/")
                .withHeader("Set-Cookie", "=tok-EMPTYNAME-86420; Path=/")
        }
        let file = folder.appendingPathComponent("nameless.har")
        let recorder = Connect(
            transport: RecordingTransport(fileURL: file, wrapping: URLSessionTransport(), mode: .record),
            retryPolicy: nil)
        _ = try recorder.request(RecordingEndpoint(baseURL: server.baseURL, endpoint: "/cookies")).wait()
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("tok-NAMELESS-97531"), text)
        XCTAssertFalse(text.contains("tok-EMPTYNAME-86420"), text)
        let har = try JSONDecoder().decode(HAR.self, from: Data(contentsOf: file))
        let response = try XCTUnwrap(har.log.entries.first?.response)
        XCTAssertEqual(
            response.headers.filter { $0.name.lowercased() == "set-cookie" }.map(\.value),
            ["=<redacted:>; Path=/", "=<redacted:>; Path=/"])
    }

    /// A token endpoint that answers a URL-encoded form (GitHub's default, OAuth 1.0a), an answer of JSON lines, and
    /// a redirect whose `Location` carries a token in its fragment or a password: none of their secrets reach the
    /// file (each was written as it came), and a later echo of the form's token is hidden too.
    func testFormAndJSONLinesBodiesAndLocationsAreRedacted() throws {
        server.route("POST", "/oauth/access_token") { _ in
            LocalServer.Response(
                status: 200, headers: [("Content-Type", "application/x-www-form-urlencoded")],
                body: Data("access_token=tok-FORM-24680&scope=repo&token_type=bearer".utf8))
        }
        server.route("GET", "/lines") { _ in
            LocalServer.Response(
                status: 200, headers: [("Content-Type", "application/x-ndjson")],
                body: Data("{\"id\":1}\n{\"session_token\":\"tok-LINES-13579\"}\n".utf8))
        }
        server.route("GET", "/authorize") { _ in
            LocalServer.Response(
                status: 302, headers: [("Location", "myapp://cb#access_token=tok-FRAGMENT-11223&state=s1")])
        }
        server.route("GET", "/basic") { _ in
            LocalServer.Response(status: 302, headers: [("Location", "ftp://amy:tok-LOCPASS-44556@files.test/x")])
        }
        let file = folder.appendingPathComponent("forms.har")
        let recorder = Connect(
            transport: RecordingTransport(fileURL: file, wrapping: URLSessionTransport(), mode: .record),
            retryPolicy: nil)
        let form = try recorder.request(
            RecordingEndpoint(baseURL: server.baseURL, endpoint: "/oauth/access_token", method: .post)
        ).wait()
        XCTAssertTrue(String(decoding: form, as: UTF8.self).contains("tok-FORM-24680"), "the app gets the token")
        _ = try recorder.request(RecordingEndpoint(baseURL: server.baseURL, endpoint: "/echo?ref=tok-FORM-24680"))
            .wait()
        _ = try recorder.request(RecordingEndpoint(baseURL: server.baseURL, endpoint: "/lines")).wait()
        for path in ["/authorize", "/basic"] {
            // Not followed (another scheme): the 3xx is the answer, recorded whatever the client makes of it.
            _ = try? recorder.response(for: RecordingEndpoint(baseURL: server.baseURL, endpoint: path)).wait()
        }
        let text = try String(contentsOf: file, encoding: .utf8)
        for secret in ["tok-FORM-24680", "tok-LINES-13579", "tok-FRAGMENT-11223", "tok-LOCPASS-44556"] {
            XCTAssertFalse(text.contains(secret), "\(secret) in \(text)")
        }
        XCTAssertTrue(text.contains("scope=repo"), "the rest of the form is kept")
        XCTAssertTrue(text.contains("state=s1"), "the rest of the fragment is kept")
    }

    /// A redirect followed to a URL that holds the request's key: the final URL the file keeps (`_url`) has the key
    /// hidden, as the request's URL and a `Location` have.
    func testTheFinalURLOfARedirectHidesTheRequestsSecrets() throws {
        // Given: a redirect to a path made of the key the request sent
        server.route("GET", "/go") { request in .redirect(to: "/landing/\(request.header("X-Api-Key") ?? "none")") }
        server.route("GET", "/landing/*") { _ in .text("landed") }
        let file = folder.appendingPathComponent("redirect.har")
        let recorder = Connect(
            transport: RecordingTransport(fileURL: file, wrapping: URLSessionTransport(), mode: .record),
            retryPolicy: nil)
        let key = HTTPHeader(name: "X-Api-Key", value: "tok-APIKEY-445566")
        let call = RecordingEndpoint(baseURL: server.baseURL, endpoint: "/go", headers: [key])
        // When
        let live = try recorder.response(for: call).wait()
        // Then: the client followed it; the file has the final URL without the key
        XCTAssertEqual(live.response.url?.path, "/landing/tok-APIKEY-445566")
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("tok-APIKEY-445566"), text)
        let recorded = try XCTUnwrap(HAR(contentsOf: file).log.entries.first?.response.url)
        XCTAssertTrue(recorded.hasSuffix("/landing/%3Credacted%3E"), recorded)
    }

    /// A `Retry-After` date replays as it was recorded: the replay clock stands at the answer's `Date`, where it stood
    /// at 2024 and measured a wait of years, which the policy refused, so the recorded retry never came.
    func testARetryAfterDateReplaysItsRetry() throws {
        let answers = Protected(0)
        server.route("GET", "/busy") { _ in
            let count = answers.withLock {
                $0 += 1
                return $0
            }
            guard count == 1 else { return .json(string: #"{"ok":true}"#) }
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
            return LocalServer.Response(
                status: 503, headers: [("Retry-After", formatter.string(from: Date().addingTimeInterval(1)))])
        }
        let file = folder.appendingPathComponent("retry-after.har")
        let recording = RecordingTransport(fileURL: file, wrapping: URLSessionTransport(), mode: .record)
        let recorder = Connect(transport: recording, retryPolicy: RetryPolicy(clock: recording.retryClock))
        XCTAssertEqual(
            String(
                decoding: try recorder.request(RecordingEndpoint(baseURL: server.baseURL, endpoint: "/busy")).wait(
                    timeout: 30), as: UTF8.self), #"{"ok":true}"#)
        XCTAssertTrue(recording.waitUntilRecorded())
        let replaying = RecordingTransport(fileURL: file, mode: .replay)
        let replay = Connect(transport: replaying, retryPolicy: RetryPolicy(clock: replaying.retryClock))
        let replayed = try replay.request(RecordingEndpoint(baseURL: server.baseURL, endpoint: "/busy")).wait(
            timeout: 10)
        XCTAssertEqual(String(decoding: replayed, as: UTF8.self), #"{"ok":true}"#)
    }

    func testATokenAnEarlierAnswerHandedOutIsHiddenInLaterRequestURLsAndReplayStillMatches() throws {
        // Given: a login that hands out a token, then a call that sends it back in its path and under a query name
        // no rule knows
        server.route("GET", "/files/*") { _ in .json(string: #"{"ok":true}"#) }
        func use(_ token: String) -> RecordingEndpoint {
            // In the path as an app encodes it; in the query with every `-` escaped too, as some encoders do.
            let unreserved = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
            let path = token.addingPercentEncoding(withAllowedCharacters: unreserved) ?? token
            let query = token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? token
            return RecordingEndpoint(baseURL: server.baseURL, endpoint: "/files/\(path)?ref=\(query)&page=2")
        }
        func token(from login: Data) throws -> String {
            let json = try JSONSerialization.jsonObject(with: login) as? [String: Any]
            return try XCTUnwrap(json?["access_token"] as? String)
        }
        let login = RecordingEndpoint(baseURL: server.baseURL, endpoint: "/login", method: .post)
        let file = folder.appendingPathComponent("handed-out.har")
        let recorder = Connect(
            transport: RecordingTransport(fileURL: file, wrapping: URLSessionTransport(), mode: .record),
            retryPolicy: nil)
        // When: recorded
        let live = try token(from: recorder.request(login).wait())
        XCTAssertEqual(live, "tok-RESPONSE-998877")
        _ = try recorder.request(use(live)).wait()
        // Then: the token is nowhere in the file; the rest of the URL is
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("tok-RESPONSE-998877"), text)
        let har = try JSONDecoder().decode(HAR.self, from: Data(contentsOf: file))
        let url = try XCTUnwrap(har.log.entries.last?.request.url)
        XCTAssertTrue(url.hasSuffix("/files/%3Credacted%3E?ref=%3Credacted%3E&page=2"), url)
        // When: replayed, the test's token filled in, and again with the placeholder left as it is
        for values in [["access_token": "test-token"], [:]] {
            let replay = Connect(
                transport: RecordingTransport(fileURL: file, mode: .replay, placeholderValues: values),
                retryPolicy: nil)
            let replayed = try token(from: replay.request(login).wait())
            XCTAssertEqual(replayed, values["access_token"] ?? "<redacted:access_token>")
            // Then: the call that sends it back finds its recording
            let answer = try replay.request(use(replayed)).wait()
            XCTAssertEqual(String(decoding: answer, as: UTF8.self), #"{"ok":true}"#)
        }
    }

    /// A token handed out in a header field (`X-Auth-Token`, or credentials under a name no rule knows) stays out of
    /// the file wherever it shows again: the body that repeats it, a later request's path and query.
    func testATokenHandedOutInAHeaderFieldIsHiddenWhereverItShowsAgain() throws {
        // Given: a session endpoint that hands out a token in two fields and repeats it in its body
        server.route("POST", "/session") { _ in
            LocalServer.Response.json(string: #"{"user":"amy","id":"tok-FIELD-24680135","up":"tok-UPSTREAM-9753"}"#)
                .withHeader("X-Auth-Token", "tok-FIELD-24680135")
                .withHeader("X-Upstream", "Bearer tok-UPSTREAM-9753")
        }
        server.route("GET", "/sessions/*") { _ in .json(string: #"{"ok":true}"#) }
        let file = folder.appendingPathComponent("field-token.har")
        let recorder = Connect(
            transport: RecordingTransport(fileURL: file, wrapping: URLSessionTransport(), mode: .record),
            retryPolicy: nil)
        // When
        _ = try recorder.request(RecordingEndpoint(baseURL: server.baseURL, endpoint: "/session", method: .post))
            .wait()
        _ = try recorder.request(
            RecordingEndpoint(baseURL: server.baseURL, endpoint: "/sessions/tok-FIELD-24680135?sid=tok-UPSTREAM-9753")
        ).wait()
        // Then
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("tok-FIELD-24680135"), text)
        XCTAssertFalse(text.contains("tok-UPSTREAM-9753"), text)
        XCTAssertTrue(text.contains("/sessions/"), text)
    }

    /// A token handed out inside a URL (an upload link's query), then sent back in a path, stays out of the file as a
    /// token handed out under a secret JSON key does.
    func testATokenAnEarlierAnswerHandedOutInAURLIsHiddenInLaterRequestURLsAndReplayStillMatches() throws {
        // Given: an answer that hands out an upload link, whose token the app then sends back in a path
        server.route("POST", "/uploads") { _ in
            .json(string: #"{"upload_url":"/upload?upload_token=tok-URL-HANDED-778899","id":7}"#)
        }
        server.route("GET", "/files/*") { _ in .json(string: #"{"ok":true}"#) }
        let start = RecordingEndpoint(baseURL: server.baseURL, endpoint: "/uploads", method: .post)
        func use(_ answer: Data) throws -> RecordingEndpoint {
            let json = try JSONSerialization.jsonObject(with: answer) as? [String: Any]
            let link = try XCTUnwrap(URLComponents(string: try XCTUnwrap(json?["upload_url"] as? String)))
            let token = try XCTUnwrap(link.queryItems?.first { $0.name == "upload_token" }?.value)
            let path = token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? token
            return RecordingEndpoint(baseURL: server.baseURL, endpoint: "/files/\(path)")
        }
        let file = folder.appendingPathComponent("handed-out-url.har")
        let recorder = Connect(
            transport: RecordingTransport(fileURL: file, wrapping: URLSessionTransport(), mode: .record),
            retryPolicy: nil)
        // When: recorded
        _ = try recorder.request(use(recorder.request(start).wait())).wait()
        // Then
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("tok-URL-HANDED-778899"), text)
        let har = try JSONDecoder().decode(HAR.self, from: Data(contentsOf: file))
        let url = try XCTUnwrap(har.log.entries.last?.request.url)
        XCTAssertTrue(url.hasSuffix("/files/%3Credacted%3E"), url)
        // When: replayed, the app reading the link the recording holds
        let replay = Connect(transport: RecordingTransport(fileURL: file, mode: .replay), retryPolicy: nil)
        let answer = try replay.request(use(replay.request(start).wait())).wait()
        // Then: the call that sends it back finds its recording
        XCTAssertEqual(String(decoding: answer, as: UTF8.self), #"{"ok":true}"#)
    }

    /// A secret in a URL's query is recorded as a percent-encoded placeholder (`?upload_token=%3Credacted%3Aupload_token%3E`,
    /// a bare `<` being no URL character): replay fills it, in a body and a field, with the test's value encoded as a
    /// query value, as it fills a bare placeholder, and the call that sends the value back finds its recording.
    func testAPlaceholderPercentEncodedInAURLIsFilledOnReplayAndTheCallThatUsesItMatches() throws {
        // Given: an answer that hands out an upload link, in its body and in a field
        let link = "/upload?upload_token=tok-URL-FILL-445566&part=1"
        server.route("POST", "/uploads") { _ in
            LocalServer.Response.json(string: #"{"upload_url":"\#(link)"}"#).withHeader("Content-Location", link)
        }
        server.route("PUT", "/upload") { _ in .json(string: #"{"ok":true}"#) }
        let start = RecordingEndpoint(baseURL: server.baseURL, endpoint: "/uploads", method: .post)
        func uploadURL(_ answer: Data) throws -> String {
            let json = try JSONSerialization.jsonObject(with: answer) as? [String: Any]
            return try XCTUnwrap(json?["upload_url"] as? String)
        }
        func use(_ link: String) -> RecordingEndpoint {
            RecordingEndpoint(baseURL: server.baseURL, endpoint: link, method: .put)
        }
        let file = folder.appendingPathComponent("filled-in-url.har")
        let recorder = Connect(
            transport: RecordingTransport(fileURL: file, wrapping: URLSessionTransport(), mode: .record),
            retryPolicy: nil)
        _ = try recorder.request(use(uploadURL(recorder.request(start).wait()))).wait()
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("tok-URL-FILL-445566"), text)
        XCTAssertTrue(text.contains("upload_token=%3Credacted%3Aupload_token%3E"), text)
        // When: replayed with the test's value, which a query value must escape
        let replay = Connect(
            transport: RecordingTransport(
                fileURL: file, mode: .replay, placeholderValues: ["upload_token": "test upload/1"]),
            retryPolicy: nil)
        let response = try replay.response(for: start).wait()
        // Then: filled in the body and in the field
        let filled = "/upload?upload_token=test%20upload%2F1&part=1"
        XCTAssertEqual(try uploadURL(response.data), filled)
        XCTAssertEqual(response.header("Content-Location"), filled)
        // And the call that sends it back finds its recording
        let answer = try replay.request(use(filled)).wait()
        XCTAssertEqual(String(decoding: answer, as: UTF8.self), #"{"ok":true}"#)
    }

    /// The URL a redirect ended at, its secret query item recorded as a percent-encoded placeholder, is filled on
    /// replay as the answer's fields and body are.
    func testAPlaceholderInTheURLARedirectEndedAtIsFilledOnReplay() throws {
        // Given
        server.route("GET", "/go") { _ in .redirect(to: "/landing?session_token=tok-REDIR-775533&n=1") }
        server.route("GET", "/landing") { _ in .json(string: #"{"ok":true}"#) }
        let go = RecordingEndpoint(baseURL: server.baseURL, endpoint: "/go")
        let file = folder.appendingPathComponent("filled-redirect.har")
        let recorder = Connect(
            transport: RecordingTransport(fileURL: file, wrapping: URLSessionTransport(), mode: .record),
            retryPolicy: nil)
        _ = try recorder.request(go).wait()
        XCTAssertFalse(try String(contentsOf: file, encoding: .utf8).contains("tok-REDIR-775533"))
        // When
        let replay = Connect(
            transport: RecordingTransport(
                fileURL: file, mode: .replay, placeholderValues: ["session_token": "test-session"]),
            retryPolicy: nil)
        let response = try replay.response(for: go).wait()
        // Then
        XCTAssertEqual(response.response.url?.query, "session_token=test-session&n=1")
    }
}
