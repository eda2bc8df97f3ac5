import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The default `ErrorHandler`, through a client: where it finds the server's message, and the context every
/// error carries.
final class ErrorHandlerTests: XCTestCase {
    typealias Endpoint = ClientFixtures.Endpoint

    /// The error a client with the default handler fails with for a response.
    private func errorFor(
        body: String,
        status: Int = 400,
        headers: [String: String] = ["Content-Type": "application/json"],
        file: StaticString = #filePath,
        line: UInt = #line
    ) -> ConnectError? {
        let connect = Connect(
            transport: FakeTransport.answering(.data(Data(body.utf8), status: status, headers: headers)),
            retryPolicy: nil)
        return connectError(of: connect.request(Endpoint()), file: file, line: line)
    }

    // MARK: - Where the message is

    func testMsgKey() {
        let error = errorFor(body: #"{"msg":"Name is required"}"#)
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "Name is required")
    }

    func testMessageKey() {
        let error = errorFor(body: #"{"message":"Not allowed","code":7}"#, status: 403)
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "Not allowed")
    }

    func testErrorKeyWithString() {
        let error = errorFor(body: #"{"error":"invalid_grant"}"#, status: 401)
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "invalid_grant")
    }

    func testErrKey() {
        let error = errorFor(body: #"{"err":"disk full"}"#, status: 507)
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "disk full")
    }

    /// An OAuth 2 error (RFC 6749 §5.2), as every token endpoint sends it: `error` is a code, `error_description`
    /// says it in words. The message has both; before, only the code (`invalid_grant`) was kept.
    func testAnOAuthErrorGivesItsCodeAndItsDescription() {
        let error = errorFor(
            body: #"{"error":"invalid_grant","error_description":"The refresh token has expired.","error_uri":"x"}"#)
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "invalid_grant: The refresh token has expired.")
        // A description that is not text, or empty, leaves the code alone.
        XCTAssertEqual(
            errorFor(body: #"{"error":"invalid_client","error_description":" "}"#)?.message, "invalid_client")
        XCTAssertEqual(errorFor(body: #"{"error":"invalid_scope","error_description":3}"#)?.message, "invalid_scope")
    }

    func testErrorObjectWithMessage() {
        let error = errorFor(body: #"{"error":{"code":"E42","message":"Quota exceeded"}}"#, status: 429)
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "Quota exceeded")
    }

    func testErrorsArrayFirstMessage() {
        let error = errorFor(body: #"{"errors":[{"message":"Title is blank"},{"message":"Second"}]}"#, status: 422)
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "Title is blank")
    }

    func testKeysAreSearchedInTheGuidesOrder() {
        let error = errorFor(body: #"{"err":"fourth","error":"third","message":"second","msg":"first"}"#)
        XCTAssertEqual(error?.message, "first")
    }

    func testProblemJSONGivesTitleAndDetail() {
        // Given
        let body =
            #"{"type":"https://example.com/probs/out-of-credit","title":"You do not have enough credit.","detail":"Your balance is 30, but that costs 50.","status":403}"#
        // When
        let error = errorFor(
            body: body, status: 403, headers: ["Content-Type": "application/problem+json; charset=utf-8"])
        // Then
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "You do not have enough credit.: Your balance is 30, but that costs 50.")
        XCTAssertEqual(error?.statusCode, 403)
    }

    /// RFC 9457's own validation example: no `detail`, the specifics in its `errors` extension. The first error's
    /// detail and pointer follow the title; before, only the title ("Your request is not valid.") was kept.
    func testAProblemsErrorsGiveTheFirstErrorAfterTheTitle() {
        let body = """
            {"type":"https://example.net/validation-error","title":"Your request is not valid.",
             "errors":[{"detail":"must be a positive integer","pointer":"#/age"},
                       {"detail":"must be 'green', 'red' or 'blue'","pointer":"#/profile/color"}]}
            """
        let error = errorFor(body: body, status: 422, headers: ["Content-Type": "application/problem+json"])
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "Your request is not valid.: must be a positive integer (#/age)")
        // A detail of its own comes first; an error without a pointer is its detail alone.
        let detailed = ##"{"title":"Invalid","detail":"2 errors","errors":[{"detail":"x","pointer":"#/x"}]}"##
        XCTAssertEqual(
            errorFor(body: detailed, headers: ["Content-Type": "application/problem+json"])?.message,
            "Invalid: 2 errors")
        let unpointed = #"{"title":"Invalid","errors":[{"detail":"name is blank"}]}"#
        XCTAssertEqual(
            errorFor(body: unpointed, headers: ["Content-Type": "application/problem+json"])?.message,
            "Invalid: name is blank")
    }

    /// ASP.NET Core's validation problem (`ValidationProblemDetails`, what an `[ApiController]` answers a bad model
    /// with): no `detail`, its `errors` an object keyed by field. Each field's first message follows the title, as
    /// under `errors` in a body of another type; before, only the title ("One or more validation errors occurred.")
    /// was kept, which says nothing of what to fix.
    func testAProblemsErrorsKeyedByFieldFollowTheTitle() {
        let body = """
            {"type":"https://tools.ietf.org/html/rfc9110#section-15.5.1",
             "title":"One or more validation errors occurred.",
             "status":400,"traceId":"00-1f-01","errors":{"Name":["The Name field is required."],"Age":["Too young."]}}
            """
        let error = errorFor(body: body, headers: ["Content-Type": "application/problem+json; charset=utf-8"])
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(
            error?.message,
            "One or more validation errors occurred.: Age: Too young.; Name: The Name field is required.")
        // An `errors` object that is one error with a message of its own gives that message.
        let one = #"{"title":"Invalid","errors":{"message":"name is blank","code":7}}"#
        XCTAssertEqual(
            errorFor(body: one, headers: ["Content-Type": "application/problem+json"])?.message,
            "Invalid: name is blank")
    }

    func testCustomMessageKeys() {
        // Given
        let connect = Connect(
            transport: FakeTransport.answering(.json(string: #"{"msg":"ignored","reason":"custom"}"#, status: 400)),
            errorHandler: ErrorHandler(messageKeys: ["reason"]),
            retryPolicy: nil)
        // When
        let error = connectError(of: connect.request(Endpoint()))
        // Then
        XCTAssertEqual(error?.message, "custom")
    }

    // MARK: - No message

    func testUnrecognisedJSONIsHTTPStatus() {
        // Given / When
        let error = errorFor(body: #"{"status":"bad","code":12}"#, status: 400)
        // Then
        XCTAssertEqual(error?.kind, .httpStatus)
        XCTAssertEqual(error?.statusCode, 400)
        XCTAssertEqual(error?.body.map { String(decoding: $0, as: UTF8.self) }, #"{"status":"bad","code":12}"#)
    }

    func testEmptyMessageIsNotAMessage() {
        let error = errorFor(body: #"{"message":"   "}"#, status: 400)
        XCTAssertEqual(error?.kind, .httpStatus)
    }

    func testHTMLBodyIsHTTPStatusWithTheBodyKept() {
        // Given
        let html = "<html><body><h1>502 Bad Gateway</h1></body></html>"
        // When
        let error = errorFor(body: html, status: 502, headers: ["Content-Type": "text/html"])
        // Then
        XCTAssertEqual(error?.kind, .httpStatus)
        XCTAssertEqual(error?.statusCode, 502)
        XCTAssertEqual(error?.body, Data(html.utf8))
        XCTAssertTrue(error?.debugDescription.contains("502 Bad Gateway</h1>") ?? false, error?.debugDescription ?? "")
    }

    func testEmptyBodyIsHTTPStatus() {
        // Given / When
        let error = errorFor(body: "", status: 500, headers: [:])
        // Then
        XCTAssertEqual(error?.kind, .httpStatus)
        XCTAssertEqual(error?.statusCode, 500)
        XCTAssertEqual(error?.body, Data())
    }

    /// "Some people return an array" (the usage guide): its first object is read.
    func testJSONArrayBodyIsReadAsItsFirstObject() {
        let error = errorFor(body: #"[{"message":"in an array"},{"message":"second"}]"#, status: 400)
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "in an array")
        XCTAssertEqual(errorFor(body: "[]", status: 400)?.kind, .httpStatus)
    }

    /// A body that is one JSON string, as Express's `res.status(400).json("Invalid id")` sends, is the message, as a
    /// list of messages gives its first; a blank string is none.
    func testABodyThatIsAJSONStringIsTheMessage() {
        let body = " \"Invalid id\"\r\n"
        let error = errorFor(body: body)
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "Invalid id")
        XCTAssertEqual(error?.statusCode, 400)
        XCTAssertEqual(error?.body, Data(body.utf8))
        XCTAssertEqual(errorFor(body: #""Jeton \u00e9chu""#)?.message, "Jeton \u{E9}chu")
        for body in [#"" ""#, #""""#, "42", "true", "null", #""unterminated"#] {
            XCTAssertEqual(errorFor(body: body)?.kind, .httpStatus, body)
        }
    }

    /// A list of messages, as Rails sends `errors.full_messages`, gives its first message; it was taken for no
    /// message at all ("the server answered 422").
    func testAnArrayOfMessagesGivesItsFirst() {
        let error = errorFor(body: #"["Email can't be blank","Password is too short"]"#, status: 422)
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "Email can't be blank")
        XCTAssertEqual(error?.statusCode, 422)
        XCTAssertEqual(errorFor(body: #"[" ", 3, "third"]"#)?.message, "third")
        XCTAssertEqual(errorFor(body: #"[1, 2, null]"#)?.kind, .httpStatus)
    }

    /// A message key holding a list of messages (as NestJS's validation errors do, next to a generic `error`)
    /// gives its first message, not the generic text of a later key.
    func testMessageKeyHoldingAListGivesItsFirstMessage() {
        let body = #"{"statusCode":400,"message":["email must be an email","name is blank"],"error":"Bad Request"}"#
        let error = errorFor(body: body)
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "email must be an email")
        XCTAssertEqual(errorFor(body: #"{"message":[{"message":"in an object"}]}"#)?.message, "in an object")
        XCTAssertEqual(errorFor(body: #"{"message":[],"error":"Bad Request"}"#)?.message, "Bad Request")
        XCTAssertEqual(errorFor(body: #"{"message":[" ", 7, "third"]}"#)?.message, "third")
    }

    /// "Its first object" is the first element that is an object, wherever it is in the array.
    func testAnArrayBodyIsReadAsItsFirstObjectAfterOtherValues() {
        XCTAssertEqual(errorFor(body: #"[1, {"message":"x"}]"#)?.message, "x")
        XCTAssertEqual(errorFor(body: #"[1, {"message":"x"}]"#)?.kind, .serverMessage)
        XCTAssertEqual(errorFor(body: #"[null, "text", {"error":"y"}, {"error":"z"}]"#)?.message, "y")
        XCTAssertEqual(errorFor(body: #"[1, 2, true]"#)?.kind, .httpStatus)
        XCTAssertEqual(errorFor(body: #"[1, {"code":7}]"#)?.kind, .httpStatus)
    }

    /// `errors` keyed by field, as Rails and Laravel send validation errors: each field with its first message,
    /// sorted by field (a JSON object has no order), Rails' `base` (the record as a whole) without its name.
    func testValidationErrorsByFieldGiveEachFieldWithItsFirstMessage() {
        let byField = errorFor(body: #"{"errors":{"password":["is too short"],"email":["is invalid","is taken"]}}"#)
        XCTAssertEqual(byField?.kind, .serverMessage)
        XCTAssertEqual(byField?.message, "email: is invalid; password: is too short")
        XCTAssertEqual(errorFor(body: #"{"errors":{"email":"is invalid"}}"#)?.message, "email: is invalid")
        XCTAssertEqual(errorFor(body: #"{"errors":{"base":["Account is locked"]}}"#)?.message, "Account is locked")
        XCTAssertEqual(
            errorFor(body: #"{"errors":{"name":[],"email":[" "],"age":["must be a number"]}}"#)?.message,
            "age: must be a number")
        XCTAssertEqual(errorFor(body: #"{"errors":{"email":[],"name":[7]}}"#)?.kind, .httpStatus)
        // Laravel sends a summary first, which wins.
        let laravel = #"{"message":"The given data was invalid.","errors":{"email":["The email is required."]}}"#
        XCTAssertEqual(errorFor(body: laravel, status: 422)?.message, "The given data was invalid.")
        // An `errors` object that is one error, not a map of fields.
        XCTAssertEqual(errorFor(body: #"{"errors":{"message":"Rate limited","code":429}}"#)?.message, "Rate limited")
        // A field name is the server's text too: on one line.
        XCTAssertEqual(errorFor(body: #"{"errors":{"e\nmail":["bad"]}}"#)?.message, "e mail: bad")
    }

    /// Validation errors keyed by field at the top level, as a Rails scaffold (`render json: @user.errors`) and Django
    /// REST framework send them: every value a list of messages. They were taken for no message ("the server
    /// answered 422"). Django's `non_field_errors`, like Rails' `base`, is the record as a whole: no field name.
    func testValidationErrorsByFieldAtTheTopLevelGiveEachField() {
        let rails = #"{"password":["is too short (minimum is 8 characters)"],"email":["can't be blank","is invalid"]}"#
        let error = errorFor(body: rails, status: 422)
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "email: can't be blank; password: is too short (minimum is 8 characters)")
        let django = #"{"non_field_errors":["Unable to log in with provided credentials."]}"#
        XCTAssertEqual(errorFor(body: django)?.message, "Unable to log in with provided credentials.")
        XCTAssertEqual(
            errorFor(body: #"{"errors":{"non_field_errors":["Passwords differ."]}}"#)?.message, "Passwords differ.")
        // Anything else is not a map of fields: a value that is not a list of text, or an empty list.
        for body in [#"{"ids":[1,2]}"#, #"{"email":["is invalid"],"code":7}"#, #"{"email":[]}"#, "{}"] {
            XCTAssertEqual(errorFor(body: body)?.kind, .httpStatus, body)
        }
    }

    /// A number or a boolean where a message is expected (`"error": true`, `"message": 404`) is a flag or a code,
    /// not a message: it is skipped, and without another message the error is the status's.
    func testANumberOrABooleanIsNotAMessage() {
        for body in [
            #"{"message":404}"#, #"{"error":true}"#, #"{"success":false,"message":false}"#, #"{"msg":12.5}"#,
            #"{"error":{"message":1}}"#, #"{"errors":[1,2]}"#,
        ] {
            let error = errorFor(body: body)
            XCTAssertEqual(error?.kind, .httpStatus, body)
            XCTAssertEqual(error?.message.hasPrefix("the server answered 400 "), true, error?.message ?? body)
        }
        XCTAssertEqual(errorFor(body: #"{"error":true,"message":"Token expired"}"#)?.message, "Token expired")
        XCTAssertEqual(errorFor(body: #"{"message":404,"error":"Not Found"}"#)?.message, "Not Found")
        XCTAssertEqual(errorFor(body: #"{"errors":[404,{"message":"x"}]}"#)?.message, "x")
    }

    /// The usage guide lists the keys as "msg, messge, error, err": its spelling is read too.
    func testTheGuidesSpellingMessgeIsRead() {
        let error = errorFor(body: #"{"messge":"spelled as in the guide"}"#, status: 400)
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "spelled as in the guide")
    }

    /// A `type` or `title` key does not hide the message keys unless the body is declared a problem.
    func testMessageKeysComeBeforeTitleUnlessTheBodyIsAProblem() {
        let body = #"{"type":"auth","title":"Unauthorized","detail":"d","message":"token expired"}"#
        XCTAssertEqual(errorFor(body: body, status: 401)?.message, "token expired")
        XCTAssertEqual(
            errorFor(body: body, status: 401, headers: ["Content-Type": "application/problem+json"])?.message,
            "Unauthorized: d")
        XCTAssertEqual(errorFor(body: #"{"title":"Bad","detail":"worse"}"#, status: 400)?.message, "Bad: worse")
    }

    /// FastAPI's validation errors give `detail` as a list of objects: their first message is the error's (the
    /// server's words were lost, and the error said only the status).
    func testADetailListGivesItsFirstMessage() {
        let fastAPI = #"{"detail":[{"loc":["body","email"],"msg":"field required","type":"value_error.missing"}]}"#
        XCTAssertEqual(errorFor(body: fastAPI, status: 422)?.message, "field required")
        XCTAssertEqual(
            errorFor(body: #"{"detail":{"message":"quota exceeded"}}"#, status: 429)?.message, "quota exceeded")
    }

    // MARK: - Context every error carries

    func testServerMessageErrorCarriesStatusHeadersBodyAndRequest() {
        // Given
        let body = #"{"message":"Not found here"}"#
        // When
        let error = errorFor(
            body: body, status: 404, headers: ["Content-Type": "application/json", "X-Request-ID": "req-123"])
        // Then
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.statusCode, 404)
        XCTAssertEqual(error?.headers["X-Request-ID"], "req-123")
        XCTAssertEqual(error?.body, Data(body.utf8))
        XCTAssertEqual(error?.request?.url?.absoluteString, "https://api.example.com/items")
    }

    func testHTTPStatusErrorCarriesStatusHeadersAndBody() {
        // Given / When
        let error = errorFor(
            body: "upstream down", status: 503, headers: ["Content-Type": "text/plain", "X-Request-ID": "req-9"])
        // Then
        XCTAssertEqual(error?.kind, .httpStatus)
        XCTAssertEqual(error?.statusCode, 503)
        XCTAssertEqual(error?.headers["X-Request-ID"], "req-9")
        XCTAssertEqual(error?.body, Data("upstream down".utf8))
    }

    func testDescriptionNamesTheStageAndTheStatus() {
        // Given / When
        let message = errorFor(body: #"{"message":"Nope"}"#, status: 403)
        let status = errorFor(body: "<html></html>", status: 500, headers: ["Content-Type": "text/html"])
        // Then
        let messageText = message.map(String.init(describing:)) ?? ""
        XCTAssertTrue(messageText.hasPrefix("Server error: Nope"), messageText)
        XCTAssertTrue(messageText.contains("403"), messageText)
        XCTAssertTrue(messageText.contains("GET https://api.example.com/items"), messageText)
        let statusText = status.map(String.init(describing:)) ?? ""
        XCTAssertTrue(statusText.hasPrefix("HTTP error status:"), statusText)
        XCTAssertTrue(statusText.contains("500"), statusText)
    }

    // MARK: - A plain-text error body

    /// A short `text/plain` body ("Invalid token", as Go's `http.Error` and many proxies send one) was left in the
    /// body only: the error said "the server answered 401 Unauthorized". It is said after the status, on one line;
    /// the kind stays ``ConnectError/Kind/httpStatus`` (a proxy's text is no message of the backend's to show a user).
    func testAShortPlainTextBodyIsSaidAfterTheStatus() {
        let cases: [(body: String, type: String, message: String)] = [
            ("Invalid token\n", "text/plain", "the server answered 401 Unauthorized: Invalid token"),
            ("  Invalid token  ", "text/plain; charset=utf-8", "the server answered 401 Unauthorized: Invalid token"),
            ("Invalid\r\ntoken", "Text/Plain", "the server answered 401 Unauthorized: Invalid token"),
            ("Jeton \u{E9}chu", "text/plain; charset=utf-8", "the server answered 401 Unauthorized: Jeton \u{E9}chu"),
        ]
        for (body, type, message) in cases {
            let error = errorFor(body: body, status: 401, headers: ["Content-Type": type])
            XCTAssertEqual(error?.kind, .httpStatus, body)
            XCTAssertEqual(error?.message, message, body)
            XCTAssertEqual(error?.body, Data(body.utf8), "the body stays as it came")
        }
    }

    /// A plain-text body in the single-byte charset it declares is read in it.
    func testAPlainTextBodyIsReadInItsCharset() {
        let latin1 = Data("Jeton ".utf8) + Data([0xE9]) + Data("chu".utf8)
        let connect = Connect(
            transport: FakeTransport.answering(
                .data(latin1, status: 401, headers: ["Content-Type": "text/plain; charset=iso-8859-1"])),
            retryPolicy: nil)
        XCTAssertEqual(
            connectError(of: connect.request(Endpoint()))?.message,
            "the server answered 401 Unauthorized: Jeton \u{E9}chu")
    }

    /// A plain-text body in the UTF-16 or UTF-32 it declares (as .NET's `Encoding.Unicode` writes it) is read in it:
    /// its text was lost (its bytes are not UTF-8), or, in ASCII without a byte order mark, said with its zeros as
    /// blanks between the letters (`I n v a l i d`).
    func testAPlainTextBodyInTheUTF16OrUTF32ItDeclaresIsReadInIt() throws {
        let text = "Jeton \u{E9}chu"
        let cases: [(body: Data, charset: String, text: String)] = [
            (try XCTUnwrap("Invalid token".data(using: .utf16LittleEndian)), "utf-16", "Invalid token"),
            (try XCTUnwrap(text.data(using: .utf16)), "utf-16", text),  // with a byte order mark
            (try XCTUnwrap(text.data(using: .utf16LittleEndian)), "UTF-16", text),
            (try XCTUnwrap(text.data(using: .utf16BigEndian)), "utf-16", text),
            (try XCTUnwrap(text.data(using: .utf16LittleEndian)), "utf-16le", text),
            (Data([0xFE, 0xFF]) + (try XCTUnwrap(text.data(using: .utf16BigEndian))), "utf-16be", text),
            (try XCTUnwrap(text.data(using: .utf32)), "utf-32", text),
            (try XCTUnwrap(text.data(using: .utf32LittleEndian)), "utf-32", text),
            (try XCTUnwrap(text.data(using: .utf32BigEndian)), "\"utf-32be\"", text),
        ]
        for (body, charset, text) in cases {
            let connect = Connect(
                transport: FakeTransport.answering(
                    .data(body, status: 401, headers: ["Content-Type": "text/plain; charset=\(charset)"])),
                retryPolicy: nil)
            let error = connectError(of: connect.request(Endpoint()))
            XCTAssertEqual(error?.kind, .httpStatus, charset)
            XCTAssertEqual(error?.message, "the server answered 401 Unauthorized: \(text)", "\(charset) \(Array(body))")
            XCTAssertEqual(error?.body, body, "the body stays as it came")
        }
    }

    /// What is not a short plain text stays out of the message: another type, a long body (a stack trace, a page),
    /// nothing but spaces, bytes that are not text.
    func testOtherBodiesStayOutOfTheMessage() {
        let long = String(repeating: "at frame ", count: 200)
        let cases: [(body: Data, type: String?)] = [
            (Data("<p>Invalid token</p>".utf8), "text/html"),
            (Data("Invalid token".utf8), nil),
            (Data(long.utf8), "text/plain"),
            (Data(" \n\t ".utf8), "text/plain"),
            (Data([0xFF, 0xFE, 0x00, 0x41]), "text/plain; charset=utf-8"),
        ]
        for (body, type) in cases {
            let connect = Connect(
                transport: FakeTransport.answering(
                    .data(body, status: 401, headers: type.map { ["Content-Type": $0] } ?? [:])),
                retryPolicy: nil)
            let error = connectError(of: connect.request(Endpoint()))
            XCTAssertEqual(error?.kind, .httpStatus, "\(type ?? "no type")")
            XCTAssertEqual(error?.message, "the server answered 401 Unauthorized", "\(type ?? "no type")")
        }
    }

    /// A redirect's plain text ("Found. Redirecting to /login", as Express sends it) is the framework's: not said.
    func testARedirectsPlainTextIsNotSaid() {
        let error = errorFor(body: "Found. Redirecting to /login", status: 302, headers: ["Content-Type": "text/plain"])
        XCTAssertEqual(error?.kind, .httpStatus)
        XCTAssertFalse(error?.message.contains("Redirecting") ?? true, error?.message ?? "")
    }

    /// A plain-text body that echoes the request's token shows it nowhere the error prints.
    func testAPlainTextBodyEchoingTheTokenHidesIt() throws {
        let secret = "sk-plain-echo-31415926"
        let connect = Connect(
            transport: FakeTransport.answering(
                .data(Data("token \(secret) expired".utf8), status: 401, headers: ["Content-Type": "text/plain"])),
            retryPolicy: nil)
        let endpoint = Endpoint(headers: [HTTPHeader(name: "Authorization", value: "Bearer \(secret)")])
        let error = try XCTUnwrap(connectError(of: connect.request(endpoint)))
        XCTAssertTrue(error.message.hasPrefix("the server answered 401 Unauthorized: token "), error.message)
        for text in [error.message, error.description, error.debugDescription, String(reflecting: error)] {
            XCTAssertFalse(text.contains(secret), text)
        }
    }

    /// The same echo in the UTF-16 or UTF-32 the body declares: the message read it in that encoding and hid the
    /// token, but the body's excerpt read its bytes as UTF-8 (ASCII in UTF-16 is valid UTF-8, with zeros between the
    /// letters), where the token was not found, and showed it, letter-spaced. JSON with no secret field alike.
    func testABodyInTheUTF16ItDeclaresEchoingTheTokenHidesIt() throws {
        let secret = "sk-plain-echo-31415926"
        let bodies: [(text: String, encoding: String.Encoding, type: String)] = [
            ("token \(secret) expired", .utf16LittleEndian, "text/plain; charset=utf-16le"),
            ("token \(secret) expired", .utf16BigEndian, "text/plain; charset=utf-16"),
            ("token \(secret) expired", .utf32LittleEndian, "text/plain; charset=utf-32le"),
            (#"{"message":"token \#(secret) expired"}"#, .utf16LittleEndian, "application/json; charset=utf-16le"),
        ]
        for (text, encoding, type) in bodies {
            let body = try XCTUnwrap(text.data(using: encoding))
            let connect = Connect(
                transport: FakeTransport.answering(.data(body, status: 401, headers: ["Content-Type": type])),
                retryPolicy: nil)
            let endpoint = Endpoint(headers: [HTTPHeader(name: "Authorization", value: "Bearer \(secret)")])
            let error = try XCTUnwrap(connectError(of: connect.request(endpoint)))
            var dumped = ""
            dump(error, to: &dumped)
            for shown in [error.message, error.description, error.debugDescription, String(reflecting: error), dumped] {
                let squeezed = shown.unicodeScalars.filter { $0 != " " && $0 != "\0" }.map(String.init).joined()
                XCTAssertFalse(squeezed.contains(secret), "\(type): \(shown)")
            }
            XCTAssertTrue(
                error.debugDescription.contains("token <redacted> expired"), "\(type): \(error.debugDescription)")
        }
    }

    /// A UTF-8 body labelled UTF-16 or UTF-32 (a wrong label, no byte order mark, no zero byte) is read as the UTF-8 it
    /// is: in the label's encoding its letters paired into CJK characters.
    func testAUTF8BodyLabelledUTF16IsReadAsUTF8() {
        for charset in ["utf-16", "utf-16le", "utf-16be", "utf-32"] {
            let error = errorFor(
                body: "Invalid token.", status: 401, headers: ["Content-Type": "text/plain; charset=\(charset)"])
            XCTAssertEqual(error?.message, "the server answered 401 Unauthorized: Invalid token.", charset)
        }
    }

    // MARK: - The server's text is bounded and on one line

    func testLongServerMessageIsCutToAboutAThousandCharacters() {
        // Given: a 60 KB message (a larger body is not read for one: ErrorMessageBodyLimitTests)
        let long = String(repeating: "A", count: 60_000)
        // When
        let error = errorFor(body: #"{"message":"\#(long)"}"#, status: 500)
        // Then
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message.count, 1_024)
        XCTAssertEqual(error?.message.hasSuffix("AAA…"), true)
        XCTAssertLessThan(error.map(String.init(describing:))?.count ?? .max, 1_200)
    }

    func testControlCharactersInTheServerMessageBecomeOneSpace() {
        // Given: CR LF to forge a log line, ESC to colour a terminal, NEL and DEL
        let body = #"{"message":"bad\r\n[GET https://evil] (HTTP 200)\u001b[31m red\u0085\u007f end\t"}"#
        // When
        let error = errorFor(body: body)
        // Then
        XCTAssertEqual(error?.message, "bad [GET https://evil] (HTTP 200) [31m red end")
        let description = error.map(String.init(describing:)) ?? ""
        XCTAssertFalse(description.contains { $0.isNewline || $0 == "\u{1B}" }, description.debugDescription)
    }

    /// A message of one character can still be huge: a letter with 15,000 combining accents is one character of
    /// 30 KB, and the message, the description and the debug description were each that size. They are bounded in
    /// bytes too: a character keeps at most 31 scalars (UAX #15's stream-safe limit), a message at most 4 bytes a
    /// character it may show. (Two of them fit in a body the handler reads, at most 64 KiB.)
    func testAMessageOfOneLetterAndManyAccentsIsBoundedInBytes() {
        let zalgo = "a" + String(repeating: "\u{0301}", count: 15_000)
        let cases: [(body: String, type: String)] = [
            (#"{"message":"\#(zalgo)"}"#, "application/json"),
            (#"{"title":"\#(zalgo)","detail":"\#(zalgo)"}"#, "application/problem+json"),
            (#"{"errors":{"email":["\#(zalgo)"],"name":["\#(zalgo)"]}}"#, "application/json"),
        ]
        for (body, type) in cases {
            let error = errorFor(body: body, status: 422, headers: ["Content-Type": type])
            XCTAssertEqual(error?.kind, .serverMessage, type)
            XCTAssertEqual(error?.statusCode, 422, type)
            let message = error?.message ?? ""
            XCTAssertGreaterThan(message.unicodeScalars.filter { $0 == "\u{0301}" }.count, 1, type)
            XCTAssertLessThanOrEqual(message.utf8.count, 4 * 1_024, type)
            XCTAssertLessThan(error.map(String.init(describing:))?.utf8.count ?? .max, 5_000, type)
            XCTAssertLessThan(error?.debugDescription.utf8.count ?? .max, 8_000, type)
        }
        // A custom handler's message, said in the description.
        let custom = ConnectError(.serverMessage, message: zalgo)
        XCTAssertLessThan(custom.description.utf8.count, 5_000)
    }

    /// Unicode's bidirectional controls (embeddings, overrides and isolates, U+202A to U+202E and U+2066 to U+2069)
    /// in a server's message were kept: a log viewer then shows the rest of the line in another order than it is
    /// written ("Trojan Source", CVE-2021-42574). They become a space, as control characters do.
    func testBidirectionalControlsInTheServerMessageBecomeOneSpace() {
        let body = #"{"message":"user \u202Enimda\u202C logged in \u2066x\u2069 \u202Ay\u202Bz\u202D\u2067w\u2068"}"#
        let error = errorFor(body: body)
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.statusCode, 400)
        XCTAssertEqual(error?.message, "user nimda logged in x y z w")
        let description = error.map(String.init(describing:)) ?? ""
        XCTAssertFalse(
            description.unicodeScalars.contains {
                (0x202A...0x202E).contains($0.value) || (0x2066...0x2069).contains($0.value)
            },
            description.debugDescription)
    }

    func testProblemTitleAndDetailAreBoundedAndOnOneLine() {
        // Given
        let detail = String(repeating: "d", count: 5_000)
        let body = #"{"title":"Out\nof credit","detail":"\#(detail)"}"#
        // When
        let error = errorFor(body: body, status: 403, headers: ["Content-Type": "application/problem+json"])
        // Then
        XCTAssertEqual(error?.message.hasPrefix("Out of credit: ddd"), true, error?.message ?? "")
        XCTAssertEqual(error?.message.count, 1_024)
    }

    func testMessageOfNothingButControlCharactersIsNoMessage() {
        let error = errorFor(body: #"{"message":"\u001b\u0007"}"#)
        XCTAssertEqual(error?.kind, .httpStatus)
    }

    /// A message of nothing but characters that show as nothing (a byte order mark, U+FEFF, which a server that
    /// writes its strings with one sends; zero-width spaces and joiners; a word joiner; a Hangul filler) was the
    /// message: the error read "Server error: " and the next key was not read. It is no message, as blanks are.
    func testAMessageOfNothingButInvisibleCharactersIsNoMessage() {
        for invisible in [#"\ufeff"#, #"\u200b\ufeff"#, #" \u2060\u200d "#, #"\u3164"#, #"\u202e\u200f"#] {
            let alone = errorFor(body: #"{"message":"\#(invisible)"}"#)
            XCTAssertEqual(alone?.kind, .httpStatus, invisible)
            XCTAssertEqual(alone?.message, "the server answered 400 Bad Request", invisible)
            let next = errorFor(body: #"{"message":"\#(invisible)","error":"Quota exceeded"}"#)
            XCTAssertEqual(next?.kind, .serverMessage, invisible)
            XCTAssertEqual(next?.message, "Quota exceeded", invisible)
        }
        let plain = errorFor(body: "\u{FEFF}\u{200B}", status: 401, headers: ["Content-Type": "text/plain"])
        XCTAssertEqual(plain?.message, "the server answered 401 Unauthorized")
    }

    /// A byte order mark at the start or end of a message (a string written with one) is dropped, as blanks are;
    /// one inside it, and the joiners that make an emoji, stay.
    func testAByteOrderMarkAroundAMessageIsDropped() {
        XCTAssertEqual(errorFor(body: #"{"message":"\ufeff Invalid id\ufeff"}"#)?.message, "Invalid id")
        XCTAssertEqual(errorFor(body: #"{"message":"a\ufeffb"}"#)?.message, "a\u{FEFF}b")
        XCTAssertEqual(errorFor(body: #"{"message":"\ud83d\udc69\u200d\ud83d\udcbb"}"#)?.message, "👩\u{200D}💻")
        let plain = errorFor(body: "\u{FEFF}Invalid token", status: 401, headers: ["Content-Type": "text/plain"])
        XCTAssertEqual(plain?.message, "the server answered 401 Unauthorized: Invalid token")
    }

    func testDescriptionPutsAMessageFromElsewhereOnOneLine() {
        // Given: a custom handler's error quoting the server verbatim
        let error = ConnectError(.serverMessage, message: "line one\r\nDecoding failed: forged\u{1B}[0m")
        // Then
        XCTAssertEqual(error.description, "Server error: line one Decoding failed: forged [0m")
        XCTAssertEqual(error.message, "line one\r\nDecoding failed: forged\u{1B}[0m")
    }

    func testDescriptionSaysHowManyAttemptsOnlyWhenThereWereSeveral() {
        var error = ConnectError(.transport, message: "connection reset")
        XCTAssertEqual(error.attempts, 1)
        XCTAssertEqual(error.description, "Transport failure: connection reset")
        error.attempts = 2
        XCTAssertEqual(error.description, "Transport failure: connection reset (after 2 attempts)")
        XCTAssertEqual(error.debugDescription, "Transport failure: connection reset (after 2 attempts)")
    }

    // MARK: - Byte order marks

    func testUTF8ByteOrderMarkBeforeTheBodyKeepsTheMessage() {
        // Given
        let body = Data([0xEF, 0xBB, 0xBF]) + Data(#"{"message":"quota exceeded"}"#.utf8)
        let connect = Connect(
            transport: FakeTransport.answering(
                .data(body, status: 429, headers: ["Content-Type": "application/json"])),
            retryPolicy: nil)
        // When
        let error = connectError(of: connect.request(Endpoint()))
        // Then
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "quota exceeded")
        XCTAssertEqual(error?.body, body)
    }

    func testUTF16AndUTF32BodiesWithAByteOrderMarkKeepTheMessage() {
        let marks: [(String.Encoding, [UInt8])] = [
            (.utf16BigEndian, [0xFE, 0xFF]), (.utf16LittleEndian, [0xFF, 0xFE]),
            (.utf32BigEndian, [0x00, 0x00, 0xFE, 0xFF]), (.utf32LittleEndian, [0xFF, 0xFE, 0x00, 0x00]),
        ]
        for (encoding, bom) in marks {
            // Given
            let body = Data(bom) + #"{"message":"quota exceeded ✓"}"#.data(using: encoding)!
            let connect = Connect(
                transport: FakeTransport.answering(
                    .data(body, status: 429, headers: ["Content-Type": "application/json; charset=utf-16"])),
                retryPolicy: nil)
            // When
            let error = connectError(of: connect.request(Endpoint()))
            // Then
            XCTAssertEqual(error?.kind, .serverMessage, "\(encoding)")
            XCTAssertEqual(error?.message, "quota exceeded ✓", "\(encoding)")
        }
    }

    /// Without a byte order mark, a big-endian body starts with a zero byte: its message was lost (a plain
    /// `httpStatus` error), where the little-endian one kept it.
    func testUTF16AndUTF32BodiesWithoutAByteOrderMarkKeepTheMessage() {
        for encoding: String.Encoding in [.utf16BigEndian, .utf16LittleEndian, .utf32BigEndian, .utf32LittleEndian] {
            // Given
            let body = #"{"message":"bad ✓"}"#.data(using: encoding)!
            let connect = Connect(
                transport: FakeTransport.answering(
                    .data(body, status: 400, headers: ["Content-Type": "application/json"])),
                retryPolicy: nil)
            // When
            let error = connectError(of: connect.request(Endpoint()))
            // Then
            XCTAssertEqual(error?.kind, .serverMessage, "\(encoding)")
            XCTAssertEqual(error?.message, "bad ✓", "\(encoding)")
        }
    }

    /// A body without a byte order mark that starts with white space (a pretty-printer's or a framework's newline):
    /// little-endian, its first character is a blank followed by zeros, not the brace, and its message was lost (a
    /// plain `httpStatus` error); big-endian, it was read.
    func testUTF16AndUTF32BodiesWithoutAMarkThatStartWithWhiteSpaceKeepTheMessage() {
        for encoding: String.Encoding in [.utf16BigEndian, .utf16LittleEndian, .utf32BigEndian, .utf32LittleEndian] {
            for text in ["\n" + #"{"message":"bad ✓"}"#, "  " + #"["bad ✓"]"#, "\r\n" + #""bad ✓""#] {
                // Given
                let body = text.data(using: encoding)!
                let connect = Connect(
                    transport: FakeTransport.answering(
                        .data(body, status: 400, headers: ["Content-Type": "application/json"])),
                    retryPolicy: nil)
                // When
                let error = connectError(of: connect.request(Endpoint()))
                // Then
                XCTAssertEqual(error?.kind, .serverMessage, "\(encoding) \(text)")
                XCTAssertEqual(error?.message, "bad ✓", "\(encoding) \(text)")
            }
        }
    }

    /// The handler is asked about error statuses only: a 2xx whose body reads as an error (`{"error": …}`, as some
    /// APIs wrap a partial failure) is the answer, whatever the handler would say of it.
    func testA2xxWithAnErrorShapedBodyStaysASuccess() {
        struct EverythingFails: ErrorHandlerProtocol {
            func handle(response: [String: Any]) -> (any Error)? { ConnectError(.serverMessage, message: "no") }
            func handle(_ response: ConnectResponse) -> (any Error)? { ConnectError(.serverMessage, message: "no") }
        }
        let body = Data(#"{"error": "partial failure", "message": "one item failed"}"#.utf8)
        for status in [200, 201, 202, 206, 299] {
            for handler: any ErrorHandling in [ErrorHandler(), EverythingFails()] {
                let connect = Connect(
                    transport: FakeTransport.answering(
                        .data(body, status: status, headers: ["Content-Type": "application/json"])),
                    errorHandler: handler, retryPolicy: nil)
                XCTAssertEqual(value(of: connect.request(Endpoint())), body, "\(status) \(type(of: handler))")
            }
        }
    }

    // MARK: - Values Foundation cannot represent

    /// A number beyond `Double`'s range (`1e400`) is valid JSON that `JSONSerialization` refuses ("not representable
    /// in Swift"): in another field than the message, it took the message with it, and the error said only the status.
    func testANumberBeyondDoubleElsewhereKeepsTheMessage() {
        let huge = String(repeating: "9", count: 400)
        for number in ["1e400", "-1e400", "1.8e308", "1E+400", huge] {
            let error = errorFor(
                body: #"{"message": "Quota exceeded", "n": \#(number), "list": [\#(number)]}"#, status: 429)
            XCTAssertEqual(error?.kind, .serverMessage, number)
            XCTAssertEqual(error?.message, "Quota exceeded", number)
        }
        // In a problem, and in a body that is a list.
        let problem = errorFor(
            body: #"{"title":"Out of credit","detail":"Top up.","balance":-1e999}"#, status: 402,
            headers: ["Content-Type": "application/problem+json"])
        XCTAssertEqual(problem?.message, "Out of credit: Top up.")
        XCTAssertEqual(errorFor(body: #"[1e400, {"error": "too many"}]"#, status: 429)?.message, "too many")
    }

    /// A lone surrogate escape (`\ud800` without its pair, or a `\udc00` alone) is valid JSON's grammar that
    /// `JSONSerialization` refuses: elsewhere it took the message with it; in the message it reads as U+FFFD.
    func testALoneSurrogateElsewhereKeepsTheMessage() {
        for value in [#""\ud800""#, #""\udc00""#, #""\ud800\u0041""#, #""x\ud800\ud800\udc00""#] {
            let error = errorFor(body: #"{"message": "Quota exceeded", "s": \#(value)}"#, status: 429)
            XCTAssertEqual(error?.kind, .serverMessage, value)
            XCTAssertEqual(error?.message, "Quota exceeded", value)
        }
        XCTAssertEqual(errorFor(body: #"{"message": "Quota exceeded", "\udfff": 1}"#)?.message, "Quota exceeded")
        XCTAssertEqual(errorFor(body: #"{"message": "bad \ud800 name"}"#)?.message, "bad \u{FFFD} name")
        XCTAssertEqual(errorFor(body: #""Invalid id \udc01""#)?.message, "Invalid id \u{FFFD}")
        // A pair is one character, as before; an escaped backslash starts no escape.
        XCTAssertEqual(errorFor(body: #"{"message": "hi \ud83d\ude00", "n": 1e400}"#)?.message, "hi 😀")
        XCTAssertEqual(errorFor(body: #"{"message": "C:\\ud800", "n": 1e400}"#)?.message, #"C:\ud800"#)
    }

    /// Such a value is no message of its own, and text that is not JSON gives none, whatever it holds.
    func testAnUnrepresentableValueIsNoMessageAndNoJSONIsMade() {
        XCTAssertEqual(errorFor(body: #"{"message": 1e400}"#)?.kind, .httpStatus)
        for body in [
            #"{"message": "Quota exceeded", "n": 1e400"#,  // cut short
            #"{"message": "Quota exceeded", "n": 01e400}"#,  // a leading zero
            #"{"message": "Quota exceeded", "n": 1e400 1}"#,
            #"{"message": "Quota exceeded", "s": "\ud80"}"#,
            #"{"message": "Quota exceeded", 1e400}"#,
        ] {
            XCTAssertEqual(errorFor(body: body)?.kind, .httpStatus, body)
        }
    }

    /// A custom handler's ``ErrorHandling/handle(response:)`` sees the object: the value Foundation cannot represent
    /// is `NSNull` there, as JSON's `null`, and the rest is as sent.
    func testACustomHandlerSeesTheObjectWithAnUnrepresentableValueAsNull() throws {
        struct Seen: Error {
            var code: Int?
            var numberIsNull: Bool
            var text: String?
        }
        struct Handler: ErrorHandlerProtocol {
            func handle(response: [String: Any]) -> (any Error)? {
                Seen(
                    code: response["code"] as? Int, numberIsNull: response["n"] is NSNull,
                    text: response["s"] as? String)
            }
        }
        let connect = Connect(
            transport: FakeTransport.answering(
                .data(
                    Data(#"{"code": 7, "n": 1e400, "s": "a\ud800"}"#.utf8), status: 400,
                    headers: ["Content-Type": "application/json"])),
            errorHandler: Handler(), retryPolicy: nil)
        let error = try XCTUnwrap(self.error(of: connect.request(Endpoint())) as? Seen)
        XCTAssertEqual(error.code, 7)
        XCTAssertTrue(error.numberIsNull)
        XCTAssertEqual(error.text, "a\u{FFFD}")
    }

    /// The body that does not parse as it came is still withheld from the error's excerpt (its secrets could not be
    /// found there), and a secret it hands out under a secret name is hidden from the message that quotes it.
    func testAnUnrepresentableValueHidesNoSecretTheBodyHandsOut() throws {
        let token = "sess-UNREPR-27182818"
        let body = #"{"message": "session \#(token) is open elsewhere", "session_id": "\#(token)", "n": 1e400}"#
        let error = try XCTUnwrap(errorFor(body: body, status: 409))
        XCTAssertEqual(error.kind, .serverMessage)
        for text in [error.message, error.description, error.localizedDescription, error.debugDescription] {
            XCTAssertFalse(text.contains(token), text)
            XCTAssertTrue(text.contains("is open elsewhere"), text)
        }
        XCTAssertTrue(error.debugDescription.contains("of JSON that does not parse"), error.debugDescription)
    }

    // MARK: - Custom handlers

    /// The usage guide's custom handler: it sees only the JSON object, so a `ConnectError` it returns has no
    /// status, request or body of its own. The client fills them in, as it does for its own errors; what the
    /// handler did set is kept.
    func testAConnectErrorFromACustomHandlerGetsTheResponsesContext() throws {
        struct CodeHandler: ErrorHandlerProtocol {
            func handle(response: [String: Any]) -> (any Error)? {
                guard let code = response["code"] as? Int else { return nil }
                if code == 2 {
                    return ConnectError(.serverMessage, message: "kept", body: Data("mine".utf8))
                }
                return ConnectError(.serverMessage, message: "code \(code)")
            }
        }
        for (body, message, keptBody) in [(#"{"code":1}"#, "code 1", #"{"code":1}"#), (#"{"code":2}"#, "kept", "mine")]
        {
            let connect = Connect(
                transport: FakeTransport.answering(
                    .data(Data(body.utf8), status: 409, headers: ["Content-Type": "application/json", "X-Id": "r1"])),
                errorHandler: CodeHandler(),
                retryPolicy: nil)
            let error = try XCTUnwrap(connectError(of: connect.request(Endpoint())))
            XCTAssertEqual(error.message, message)
            XCTAssertEqual(error.statusCode, 409)
            XCTAssertEqual(error.headers["X-Id"], "r1")
            XCTAssertEqual(error.request?.url?.absoluteString, "https://api.example.com/items")
            XCTAssertEqual(error.body, Data(keptBody.utf8))
            XCTAssertTrue(error.description.contains("(HTTP 409)"), error.description)
        }
    }

    // MARK: - The guide's entry point

    func testHandleResponseDictionaryDirectly() {
        // Given
        let handler = ErrorHandler()
        // When
        let found = handler.handle(response: ["message": "direct"]) as? ConnectError
        let none = handler.handle(response: ["foo": 1]) as? ConnectError
        // Then
        XCTAssertEqual(found?.kind, .serverMessage)
        XCTAssertEqual(found?.message, "direct")
        XCTAssertEqual(none?.kind, .httpStatus)
    }
}
