import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Which recording answers a request: the default matcher, repeated requests, custom matchers.
final class RequestMatcherTests: XCTestCase {
    private var folder: URL!
    private let base = "http://api.test"

    override func setUpWithError() throws {
        folder = try makeRecordingFolder(for: self)
    }

    /// Records each request with a fake server answering `answers` in turn, then returns a replaying transport.
    private func recordThenReplay(
        _ requests: [ConnectRequest], answers: [FakeResponse] = [.json(["ok": true])],
        matcher: RequestMatcher = .default
    ) throws -> RecordingTransport {
        let fake = FakeTransport(fallback: .status(404))
        // Each path as sent (percent-encoded), as a stub matches it.
        let paths = requests.map {
            URLComponents(url: $0.url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? $0.url.path
        }
        for path in Set(paths) { fake.stub(path, with: answers) }
        let file = folder.appendingPathComponent("matching.har")
        let recorder = RecordingTransport(fileURL: file, wrapping: fake, mode: .record)
        for request in requests { _ = try recorder.send(request, transfer: TransferOptions()).wait() }
        return RecordingTransport(fileURL: file, mode: .replay, matcher: matcher)
    }

    private let json: HeaderFields = [.contentType: "application/json"]

    func testJSONBodiesMatchWhateverTheKeyOrderAndSpacing() throws {
        // Given
        let recorded = try connectRequest(
            .post, "\(base)/search", headers: json, body: Data(#"{"a":1,"b":{"c":[1,2],"d":"x"}}"#.utf8))
        let replayer = try recordThenReplay([recorded])
        // When
        let reordered = try connectRequest(
            .post, "\(base)/search", headers: json, body: Data(#"{ "b": {"d": "x", "c": [1, 2]}, "a": 1 }"#.utf8))
        // Then
        XCTAssertEqual(try replayer.send(reordered, transfer: TransferOptions()).wait().statusCode, 200)
    }

    func testADifferentJSONValueDoesNotMatchAndTheBodyIsNamed() throws {
        // Given
        let recorded = try connectRequest(.post, "\(base)/search", headers: json, body: Data(#"{"a":1}"#.utf8))
        let replayer = try recordThenReplay([recorded])
        // When
        let changed = try connectRequest(.post, "\(base)/search", headers: json, body: Data(#"{"a":2}"#.utf8))
        let error = try failure(of: replayer.send(changed, transfer: TransferOptions()))
        // Then
        let recording = try recordingError(of: error)
        XCTAssertEqual(recording.differences, [#"body: request has "{"a":2}", recording has "{"a":1}""#])
    }

    func testQueryItemsMatchInAnyOrder() throws {
        // Given
        let replayer = try recordThenReplay([try connectRequest(.get, "\(base)/q?a=1&b=2&b=3")])
        // When
        let reordered = try connectRequest(.get, "\(base)/q?b=2&a=1&b=3")
        // Then
        XCTAssertEqual(try replayer.send(reordered, transfer: TransferOptions()).wait().statusCode, 200)
    }

    /// Most servers read `?id=1&id=2` as a list: the values of one name are compared in their order.
    func testTheValuesOfARepeatedQueryItemMatchOnlyInTheirOrder() throws {
        // Given
        let replayer = try recordThenReplay([try connectRequest(.get, "\(base)/q?id=1&a=0&id=2")])
        // When
        let swapped = try connectRequest(.get, "\(base)/q?id=2&a=0&id=1")
        let error = try failure(of: replayer.send(swapped, transfer: TransferOptions()))
        // Then
        XCTAssertEqual(
            try recordingError(of: error).differences,
            ["query: request has [a=0, id=2, id=1], recording has [a=0, id=1, id=2]"])
    }

    /// A `+` sent as `%2B` is a plus sign to every server; a `+` sent as is, a space to one that reads a form.
    func testAPlusSentEscapedDoesNotMatchAPlusSentAsIs() throws {
        // Given
        let replayer = try recordThenReplay([try connectRequest(.get, "\(base)/q?email=a%2Bb@x.test")])
        // When
        let error = try failure(
            of: replayer.send(try connectRequest(.get, "\(base)/q?email=a+b@x.test"), transfer: TransferOptions()))
        // Then
        XCTAssertEqual(
            try recordingError(of: error).differences,
            ["query: request has [email=a+b@x.test], recording has [email=a%2Bb@x.test]"])
    }

    /// An escaped `=` belongs to the name or the value it is in: `?a%3D1=` is not `?a=1%3D`.
    func testAnEscapedEqualsSignStaysInItsNameOrValue() throws {
        // Given
        let replayer = try recordThenReplay([try connectRequest(.get, "\(base)/q?a%3D1=")])
        // When
        let error = try failure(
            of: replayer.send(try connectRequest(.get, "\(base)/q?a=1%3D"), transfer: TransferOptions()))
        // Then
        XCTAssertEqual(try recordingError(of: error).reason, .noMatch)
    }

    /// `%2f` and `%2F` are the same octet (RFC 3986 §6.2.2.1): a recording made with one spelling of a path's
    /// escapes answers a request with the other.
    func testPathEscapesMatchWhateverTheCaseOfTheirHexDigits() throws {
        // Given
        let replayer = try recordThenReplay([try connectRequest(.get, "\(base)/files/a%2fb%c3%a9")])
        // When
        let upper = try connectRequest(.get, "\(base)/files/a%2Fb%C3%A9")
        // Then
        XCTAssertEqual(try replayer.send(upper, transfer: TransferOptions()).wait().statusCode, 200)
    }

    /// Only the hex digits of an escape are compared in any case: the rest of the path keeps its case, another octet
    /// and the character an escape stands for (`%2F` and `/`) still differ.
    func testOnlyTheHexDigitsOfPathEscapesAreComparedInAnyCase() throws {
        func request(_ path: String) throws -> RecordedRequest {
            RecordedRequest(method: "GET", url: try XCTUnwrap(URL(string: "\(base)\(path)")))
        }
        let recorded = try request("/Files/a%2fb%e9cd")
        for matcher in [RequestMatcher.url, .path] {
            XCTAssertTrue(matcher.matches(try request("/Files/a%2Fb%E9cd"), recorded))
            XCTAssertFalse(matcher.matches(try request("/files/a%2Fb%E9cd"), recorded), "letters outside escapes")
            XCTAssertFalse(matcher.matches(try request("/Files/a%2Fb%E9CD"), recorded), "letters after an escape")
            XCTAssertFalse(matcher.matches(try request("/Files/a%2Eb%E9cd"), recorded), "another octet")
            XCTAssertFalse(matcher.matches(try request("/Files/a/b%E9cd"), recorded), "an escaped slash is no slash")
        }
    }

    func testMultipartBoundaryAndIdempotencyKeyDoNotPreventAMatch() throws {
        // Given: a form sent with one boundary and key
        func form(boundary: String, key: String) throws -> ConnectRequest {
            let body =
                "--\(boundary)\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nMilk\r\n--\(boundary)--\r\n"
            return try connectRequest(
                .post, "\(base)/upload",
                headers: ["Content-Type": "multipart/form-data; boundary=\(boundary)", "Idempotency-Key": key],
                body: Data(body.utf8))
        }
        let matcher = RequestMatcher.all([.default, .header("Idempotency-Key")])
        let replayer = try recordThenReplay([try form(boundary: "first-1111", key: "k-1")], matcher: matcher)
        // When: the next run's boundary and key are new
        let next = try form(boundary: "second-2222", key: "k-2")
        let response = replayer.send(next, transfer: TransferOptions())
        // Then
        XCTAssertEqual(try response.wait().statusCode, 200)
    }

    func testAMultipartBodyWithBinaryPartsMatchesWhateverItsBoundary() throws {
        // Given: a form with a part that is not UTF-8, sent with one boundary
        func form(boundary: String) throws -> ConnectRequest {
            var body = Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"blob\"\r\n\r\n".utf8)
            body.append(Data([0xFF, 0xFE, 0x00, 0x80]))
            body.append(Data("\r\n--\(boundary)--\r\n".utf8))
            return try connectRequest(
                .post, "\(base)/upload", headers: ["Content-Type": "multipart/form-data; boundary=\(boundary)"],
                body: body)
        }
        let replayer = try recordThenReplay([try form(boundary: "first-1111")])
        // When: the next run's boundary is new
        let response = replayer.send(try form(boundary: "second-2222"), transfer: TransferOptions())
        // Then
        XCTAssertEqual(try response.wait().statusCode, 200)
    }

    func testIdenticalRequestsGetTheRecordingsInRecordedOrder() throws {
        // Given: three identical requests answered 1, 2, 3
        let request = try connectRequest(.get, "\(base)/counter")
        let replayer = try recordThenReplay(
            [request, request, request], answers: [.json(string: "1"), .json(string: "2"), .json(string: "3")])
        // When
        let bodies = try (1...3).map { _ in try replayer.send(request, transfer: TransferOptions()).wait().data }
        let fourth = try failure(of: replayer.send(request, transfer: TransferOptions()))
        // Then
        XCTAssertEqual(bodies, [Data("1".utf8), Data("2".utf8), Data("3".utf8)])
        XCTAssertEqual(try recordingError(of: fourth).reason, .noMatch)
        XCTAssertTrue(fourth.message.contains("already used"), fourth.message)
    }

    func testANamedHeaderMatchesWhateverTheOrderOfOtherFieldsAndTheCaseOfNames() throws {
        // Given: a request with a tenant among other fields, and a matcher that compares the tenant
        let matcher = RequestMatcher.all([.default, .header("X-Tenant")])
        let replayer = try recordThenReplay(
            [try connectRequest(.get, "\(base)/todos", headers: ["X-Tenant": "acme", "Accept": "application/json"])],
            matcher: matcher)
        // When: the next run sends the fields in another order, their names in another case
        let reordered = try connectRequest(
            .get, "\(base)/todos", headers: ["accept": "application/json", "x-tenant": "acme"])
        let otherTenant = try connectRequest(.get, "\(base)/todos", headers: ["x-tenant": "globex"])
        // Then: the same values match; another value does not
        XCTAssertEqual(try replayer.send(reordered, transfer: TransferOptions()).wait().statusCode, 200)
        let error = try failure(of: replayer.send(otherTenant, transfer: TransferOptions()))
        XCTAssertEqual(try recordingError(of: error).reason, .noMatch)
        // And: a repeated field's values match only in their order
        func tenants(_ values: [String]) throws -> RecordedRequest {
            var fields = HeaderFields()
            for value in values { fields.append(HeaderField(name: "X-Tenant", value: value)) }
            return RecordedRequest(
                method: "GET", url: try XCTUnwrap(URL(string: "\(base)/todos")), headerFields: fields)
        }
        let header = RequestMatcher.header("x-tenant")
        XCTAssertTrue(header.matches(try tenants(["a", "b"]), try tenants(["a", "b"])))
        XCTAssertFalse(header.matches(try tenants(["b", "a"]), try tenants(["a", "b"])))
    }

    func testAnUnmatchedRequestIsNamedWithItsSecretsRedacted() throws {
        // Given: a recording of a request with a token in its query and its Authorization field
        let replayer = try recordThenReplay([
            try connectRequest(
                .get, "\(base)/todos?access_token=recorded-secret-1", headers: ["Authorization": "Bearer recorded-2"])
        ])
        // When: a request to another path, with other secrets
        let other = try connectRequest(
            .get, "\(base)/notes?access_token=sent-secret-3", headers: ["Authorization": "Bearer sent-secret-4"])
        let error = try failure(of: replayer.send(other, transfer: TransferOptions()))
        // Then: a typed error naming the request and the nearest recording, with no secret of either
        let recording = try recordingError(of: error)
        XCTAssertEqual(recording.reason, .noMatch)
        XCTAssertTrue(error.message.contains("/notes"), error.message)
        XCTAssertTrue(error.message.contains("/todos"), error.message)
        for secret in ["recorded-secret-1", "recorded-2", "sent-secret-3", "sent-secret-4"] {
            XCTAssertFalse("\(error)".contains(secret), "\(secret) in \(error)")
            XCTAssertFalse(String(reflecting: recording).contains(secret), "\(secret) in the RecordingError")
        }
    }

    func testACustomMatcherDecides() throws {
        // Given: a matcher that ignores the query
        let replayer = try recordThenReplay(
            [try connectRequest(.get, "\(base)/feed?since=1700000000")], matcher: .all([.method, .path]))
        // When
        let later = try connectRequest(.get, "\(base)/feed?since=1800000000")
        // Then
        XCTAssertEqual(try replayer.send(later, transfer: TransferOptions()).wait().statusCode, 200)
        let strict = RecordingTransport(fileURL: replayer.fileURL, mode: .replay)
        XCTAssertEqual(
            try recordingError(of: failure(of: strict.send(later, transfer: TransferOptions()))).reason, .noMatch)
    }

    func testAnotherMethodDoesNotMatch() throws {
        let replayer = try recordThenReplay([try connectRequest(.get, "\(base)/todos/1")])
        let error = try failure(
            of: replayer.send(try connectRequest(.delete, "\(base)/todos/1"), transfer: TransferOptions()))
        XCTAssertEqual(try recordingError(of: error).differences, ["method: request has DELETE, recording has GET"])
    }
}
