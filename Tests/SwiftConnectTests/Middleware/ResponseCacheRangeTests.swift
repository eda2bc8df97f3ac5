import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A GET with `Range` (RFC 9110 §14.2) and a stored complete response: the cache does not answer it with the whole
/// stored body (which the app asked a part of) and builds no 206 of its own; the request goes to the server as it is,
/// and the server's 206 or 416 reaches the caller and leaves the stored response whole.
final class ResponseCacheRangeTests: XCTestCase {
    private let base = URL(string: "https://api.example.com")!
    private let rule = RequestOptions(cache: CacheRule(timeToLive: 60))
    private static let body = "0123456789"

    /// A server that honours a valid single or multiple `Range` (206), refuses one past the end (416) and ignores one
    /// it cannot read, answering `200` with the whole body, as RFC 9110 §14.2 allows; without `Range`, `200`.
    private static func answer(_ request: URLRequest) -> Result<ConnectResponse, any Error> {
        let whole = ["ETag": "\"v1\"", "Content-Length": String(body.utf8.count)]
        let (status, headers, text): (Int, [String: String], String)
        switch request.value(forHTTPHeaderField: "Range") {
        case "bytes=0-2"?: (status, headers, text) = (206, ["ETag": "\"v1\"", "Content-Range": "bytes 0-2/10"], "012")
        case "bytes=0-1,5-6"?:
            (status, headers, text) = (
                206, ["ETag": "\"v1\"", "Content-Type": "multipart/byteranges; boundary=B"],
                "--B\r\nContent-Range: bytes 0-1/10\r\n\r\n01\r\n--B\r\nContent-Range: bytes 5-6/10\r\n\r\n56\r\n--B--"
            )
        case "bytes=100-199"?: (status, headers, text) = (416, ["Content-Range": "bytes */10"], "")
        default: (status, headers, text) = (200, whole, body)
        }
        return .success(ConnectResponse(request: request, statusCode: status, headers: headers, data: Data(text.utf8))!)
    }

    private func client(storage: (any ResponseCacheStorage)? = nil) -> (Connect, FakeTransport) {
        let transport = FakeTransport.answering(.handler { Self.answer($0) })
        let cache = ResponseCache(maxBytes: 1_000_000, storage: storage)
        return (Connect(transport: transport, retryPolicy: nil, responseCache: cache), transport)
    }

    /// The status and body that reached the caller of `GET /a` with `headers`, as a response or as an error.
    private func outcome(_ connect: Connect, headers: [HTTPHeader] = []) -> (status: Int?, body: String) {
        do {
            let response = try connect.response(for: Route("/a", baseURL: base, headers: headers), options: rule)
                .wait(timeout: 5)
            return (response.statusCode, String(decoding: response.data, as: UTF8.self))
        } catch let error as ConnectError {
            return (error.statusCode, String(decoding: error.body ?? Data(), as: UTF8.self))
        } catch {
            XCTFail("\(error)")
            return (nil, "")
        }
    }

    /// A single range, several ranges and one past the end each reach the server as asked, and the caller gets the
    /// server's answer; the stored 200 keeps answering plain GETs whole, from memory and from the storage.
    func testARangeRequestGoesToTheServerAndLeavesTheStoredResponse() throws {
        let cases: [(range: String, status: Int, body: String)] = [
            ("bytes=0-2", 206, "012"),
            ("bytes=0-1,5-6", 206, "01"),
            ("bytes=100-199", 416, ""),
        ]
        for (range, status, body) in cases {
            let storage = MemoryResponseStorage()
            let (connect, transport) = client(storage: storage)
            XCTAssertEqual(outcome(connect).body, Self.body)

            let partial = outcome(connect, headers: [HTTPHeader(name: "Range", value: range)])
            XCTAssertEqual(transport.requests.count, 2, "sent to the server: \(range)")
            XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "Range"), range)
            XCTAssertEqual(partial.status, status, range)
            XCTAssertTrue(body.isEmpty || partial.body.contains(body), "\(range): \(partial.body)")
            XCTAssertNotEqual(partial.body, Self.body, range)

            XCTAssertEqual(outcome(connect).body, Self.body, range)
            XCTAssertEqual(transport.requests.count, 2, "the stored 200 still answers: \(range)")
            let (restarted, restartedTransport) = client(storage: storage)
            XCTAssertEqual(outcome(restarted).body, Self.body, range)
            XCTAssertEqual(restartedTransport.requests.count, 0, "served from the storage: \(range)")
        }
    }

    /// A `Range` the server cannot read (RFC 9110 §14.2: it ignores it) reaches it too; its whole 200 is served and
    /// stored as any 200 is.
    func testARangeTheServerIgnoresGetsTheServersWholeResponse() throws {
        let (connect, transport) = client()
        XCTAssertEqual(outcome(connect).body, Self.body)

        let answer = outcome(connect, headers: [HTTPHeader(name: "Range", value: "bytes=two-three")])
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "Range"), "bytes=two-three")
        XCTAssertEqual(answer.status, 200)
        XCTAssertEqual(answer.body, Self.body)
        XCTAssertEqual(outcome(connect).body, Self.body)
        XCTAssertEqual(transport.requests.count, 2)
    }

    /// A stale stored response with a validator is not revalidated for a `Range` request: a 304 would serve the whole
    /// stored body to a request for part of it. The request goes as it is, without the cache's conditions.
    func testAStaleStoredResponseIsNotRevalidatedForARangeRequest() throws {
        let (connect, transport) = client()
        let stale = [HTTPHeader(name: "Cache-Control", value: "max-age=0")]
        XCTAssertEqual(outcome(connect).body, Self.body)

        let partial = outcome(connect, headers: stale + [HTTPHeader(name: "Range", value: "bytes=0-2")])
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertNil(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match"))
        XCTAssertEqual(partial.status, 206)
        XCTAssertEqual(partial.body, "012")
    }

    /// `only-if-cached` with `Range`: the cache answers no range from what it stores and may send nothing, so the
    /// call fails with nothing sent, and the error says why.
    func testOnlyIfCachedWithARangeFailsWithNothingSentAndSaysWhy() throws {
        let (connect, transport) = client()
        XCTAssertEqual(outcome(connect).body, Self.body)

        let route = Route(
            "/a", baseURL: base,
            headers: [
                HTTPHeader(name: "Range", value: "bytes=0-2"),
                HTTPHeader(name: "Cache-Control", value: "only-if-cached"),
            ])
        XCTAssertThrowsError(try connect.response(for: route, options: rule).wait(timeout: 5)) { error in
            let message = (error as? ConnectError)?.message ?? ""
            XCTAssertTrue(message.contains("Range"), message)
            XCTAssertFalse(message.contains("no stored response"), message)
        }
        XCTAssertEqual(transport.requests.count, 1)
    }
}
