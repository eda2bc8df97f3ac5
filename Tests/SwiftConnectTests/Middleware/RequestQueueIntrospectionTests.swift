import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `RequestQueue.waitingRequests` and `cancel(_:)`: the list of waiting requests, each cancellable by itself.
final class RequestQueueIntrospectionTests: XCTestCase {
    typealias Endpoint = ClientFixtures.Endpoint

    private struct Thumbnail: Connector {
        let id: Int
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/thumbs/\(id)" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { Parameter.query(key: "token", value: "s3cret") }
    }

    func testWaitingRequestsAreListedInOrderAndOneCanBeCancelledAlone() throws {
        // Given: one slot, held by the first request
        let transport = FakeTransport()
        let gate = Promise<Void>()
        transport.stub(.get, "/thumbs/1", with: FakeResponse.status(200).released(by: gate.future))
        transport.stub(.get, "/thumbs/2", with: .status(200))
        transport.stub(.get, "/thumbs/3", with: .status(200))
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let first = connect.request(Thumbnail(id: 1))
        let second = connect.request(Thumbnail(id: 2))
        let third = connect.request(Thumbnail(id: 3))

        // When
        let waiting = queue.waitingRequests

        // Then: the two waiting, in order, described without the secret
        XCTAssertEqual(waiting.map(\.url.path), ["/thumbs/2", "/thumbs/3"])
        XCTAssertEqual(waiting.map(\.connectorName), ["Thumbnail", "Thumbnail"])
        XCTAssertEqual(waiting.map(\.method), [.get, .get])
        XCTAssertFalse(waiting[0].description.contains("s3cret"), waiting[0].description)
        XCTAssertTrue(waiting[0].description.hasPrefix("GET https://api.example.com/thumbs/2"), waiting[0].description)

        // When: the second is cancelled by its id
        XCTAssertTrue(queue.cancel(waiting[0].id))
        XCTAssertFalse(queue.cancel(waiting[0].id), "already gone")

        // Then: it fails as cancelled, never sent; the third keeps its place and goes next
        XCTAssertEqual(connectError(of: second)?.kind, .cancelled)
        XCTAssertEqual(queue.waitingRequests.map(\.url.path), ["/thumbs/3"])
        gate.succeed(())
        XCTAssertNotNil(value(of: first))
        XCTAssertNotNil(value(of: third))
        XCTAssertEqual(transport.requests.compactMap { $0.url?.path }, ["/thumbs/1", "/thumbs/3"])
        XCTAssertTrue(queue.waitingRequests.isEmpty)
    }

    /// A waiting request hands back what it is (JustAPIs' `pendingRequests`): taken out and cancelled, it can be sent
    /// again later as it was, body and credentials included.
    func testAWaitingRequestCanBeTakenOutAndSentAgainLater() throws {
        // Given: a paused queue holding a POST with a body and a credential
        let transport = FakeTransport()
        transport.stub(.post, "/todos", with: .json(string: #"{"id":1}"#, status: 201))
        let queue = RequestQueue(maxConcurrentRequests: 1)
        queue.pause()
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let route = Route(
            url: URL(string: "https://api.example.com/todos")!, method: .post,
            parameters: Parameter.jsonObject(["title": "milk"]),
            headers: [HTTPHeader(name: "Authorization", value: "Bearer tok-1234")])
        let waitingCall = connect.request(route)
        // When: the app takes it out and cancels it
        let saved = try XCTUnwrap(queue.waitingRequests.first).request
        queue.cancelPending()
        XCTAssertEqual(connectError(of: waitingCall)?.kind, .cancelled)
        XCTAssertTrue(transport.requests.isEmpty)
        // Then: sent again later, it goes out as it was
        queue.resume()
        let response = try connect.response(for: saved).wait(timeout: 10)
        XCTAssertEqual(response.statusCode, 201)
        let sent = try XCTUnwrap(transport.requests.first)
        XCTAssertEqual(sent.httpMethod, "POST")
        XCTAssertEqual(sent.value(forHTTPHeaderField: "Authorization"), "Bearer tok-1234")
        let body = sent.httpBody.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: String] }
        XCTAssertEqual(body, ["title": "milk"])
        XCTAssertFalse("\(saved)".contains("tok-1234"), "printing it hides the credential")
    }

    /// A request the client's cache sent to revalidate what it stores waits with the `If-None-Match` the cache
    /// added: handed back to the app with it, sent again later it was answered `304` with no body, which no call
    /// then turned into the stored answer. It comes back as the caller made it.
    func testAWaitingRevalidationComesBackWithoutTheCachesConditionalFields() throws {
        let transport = FakeTransport()
        transport.stub(
            .get, "/foo",
            with: .json(string: #"{"v":1}"#, headers: ["ETag": "\"v1\"", "Cache-Control": "no-cache"]))
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let connect = Connect(
            transport: transport, retryPolicy: nil, requestQueue: queue, responseCache: ResponseCache())
        let url = URL(string: "https://api.example.com/foo")!
        let rule = RequestOptions(cache: CacheRule(timeToLive: 300))
        _ = try connect.request(Route(url: url), options: rule).wait(timeout: 10)
        queue.pause()
        let waitingCall = connect.request(
            Route(url: url, headers: [HTTPHeader(name: "X-Trace", value: "x")]), options: rule)
        // When
        let saved = try XCTUnwrap(queue.waitingRequests.first).request
        queue.cancelPending()
        XCTAssertEqual(connectError(of: waitingCall)?.kind, .cancelled)
        // Then
        XCTAssertNil(saved.value(forHTTPHeaderField: "If-None-Match"))
        XCTAssertEqual(saved.value(forHTTPHeaderField: "X-Trace"), "x", "the caller's own fields stay")
    }

    /// An upload whose body goes from a file waits with the file beside its request: taken out, the request has no
    /// body, and sending it again is refused (its `Content-Length` names bytes it no longer has), as the waiting
    /// request's documentation says; nothing goes out empty.
    func testAWaitingUploadFromAFileComesBackWithoutItsBodyAndIsRefusedIfSentAgain() throws {
        let transport = FakeTransport()
        transport.stub(.post, "/up", with: .json(string: "{}", status: 201))
        let queue = RequestQueue(maxConcurrentRequests: 1)
        queue.pause()
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("movie-\(UUID().uuidString).bin")
        try Data(repeating: 7, count: 1_000).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let upload = connect.upload(
            files: [File(key: "video", fileURL: file)],
            to: Route(url: URL(string: "https://api.example.com/up")!, method: .post))
        let saved = try XCTUnwrap(queue.waitingRequests.first).request
        queue.cancelPending()
        XCTAssertEqual(connectError(of: upload)?.kind, .cancelled)

        guard case .none = saved.body else { return XCTFail("expected no body, got \(saved.body)") }
        queue.resume()
        let error = connectError(of: connect.response(for: saved))
        XCTAssertEqual(error?.kind, .invalidRequest, String(describing: error))
        XCTAssertTrue(transport.requests.isEmpty, "nothing went out")
    }

    func testARunningRequestIsNotCancelledByItsWaitingID() throws {
        let transport = FakeTransport()
        let gate = Promise<Void>()
        transport.stub(.get, "/thumbs/1", with: FakeResponse.status(200).released(by: gate.future))
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        queue.pause()
        let only = connect.request(Thumbnail(id: 1))
        let id = try XCTUnwrap(queue.waitingRequests.first?.id)

        queue.resume()

        XCTAssertTrue(queue.waitingRequests.isEmpty)
        XCTAssertFalse(queue.cancel(id), "started: cancelled through its own future, not the queue's list")
        gate.succeed(())
        XCTAssertNotNil(value(of: only))
    }
}
