import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A response made from its parts (as the AsyncHTTPClient transport and fake transports make them): what it reads
/// from the parts, and Foundation's `HTTPURLResponse` made from them when asked for.
final class ConnectResponseTests: XCTestCase {
    private let request = URLRequest(url: URL(string: "https://api.example.com/start")!)

    func testStatusAndHeadersAreReadFromThePartsWithoutMakingFoundationsResponse() throws {
        // Given
        let answer = try XCTUnwrap(
            ConnectResponse(
                request: request, statusCode: 201,
                headers: ["content-type": "application/json; charset=utf-8", "X-Trace": "a, b"],
                data: Data("{}".utf8)))

        // Then
        XCTAssertEqual(answer.statusCode, 201)
        XCTAssertTrue(answer.isSuccess)
        XCTAssertEqual(answer.header("Content-Type"), "application/json; charset=utf-8")
        XCTAssertEqual(answer.header("CONTENT-TYPE"), "application/json; charset=utf-8")
        XCTAssertEqual(answer.header("x-trace"), "a, b")
        XCTAssertNil(answer.header("Content-Length"))
        XCTAssertNil(answer.header("Content-Typ"))
        XCTAssertEqual(answer.mediaType, "application/json")
        guard case .parts(let parts) = answer.storedHead else { return XCTFail("made Foundation's response") }
        XCTAssertFalse(parts.isMadeForTesting)
    }

    func testFoundationsResponseIsMadeOnceFromTheParts() throws {
        // Given
        let finalURL = try XCTUnwrap(URL(string: "https://api.example.com/final"))
        let answer = try XCTUnwrap(
            ConnectResponse(
                request: request, statusCode: 404, headers: ["content-type": "text/plain", "x-request-id": "7"],
                url: finalURL, httpVersion: "HTTP/2"))

        // When
        let first = answer.response
        let copy = answer
        let second = copy.response

        // Then
        XCTAssertTrue(first === second, "each read returns the same instance")
        XCTAssertEqual(first.statusCode, 404)
        XCTAssertEqual(first.url, finalURL)
        XCTAssertEqual(answer.request.url, request.url)
        XCTAssertEqual(first.value(forHTTPHeaderField: "Content-Type"), "text/plain")
        XCTAssertEqual(first.value(forHTTPHeaderField: "X-Request-Id"), "7")
        XCTAssertEqual(first.mimeType, "text/plain")
    }

    func testFoundationsResponseIsMadeOnceUnderConcurrentReads() throws {
        let answer = try XCTUnwrap(ConnectResponse(request: request, statusCode: 200, headers: ["a": "1"]))
        let seen = Protected<[ObjectIdentifier]>([])
        DispatchQueue.concurrentPerform(iterations: 64) { _ in
            let made = ObjectIdentifier(answer.response)
            seen.withLock { $0.append(made) }
        }
        XCTAssertEqual(Set(seen.snapshot).count, 1)
        XCTAssertEqual(seen.snapshot.count, 64)
    }

    func testSettingTheResponseReplacesTheParts() throws {
        // Given
        var answer = try XCTUnwrap(ConnectResponse(request: request, statusCode: 200, headers: ["A": "1"]))
        let replacement = try XCTUnwrap(
            HTTPURLResponse(url: request.url!, statusCode: 503, httpVersion: nil, headerFields: ["B": "2"]))

        // When
        answer.response = replacement

        // Then
        XCTAssertTrue(answer.response === replacement)
        XCTAssertEqual(answer.statusCode, 503)
        XCTAssertEqual(answer.header("b"), "2")
        XCTAssertNil(answer.header("A"))
    }

    func testAStatusOutside100To999OrNoURLMakesNoResponse() {
        XCTAssertNil(ConnectResponse(request: request, statusCode: 99))
        XCTAssertNil(ConnectResponse(request: request, statusCode: 1000))
        XCTAssertNil(ConnectResponse(request: request, statusCode: 0))
        var noURL = request
        noURL.url = nil
        XCTAssertNil(ConnectResponse(request: noURL, statusCode: 200))
        XCTAssertNotNil(ConnectResponse(request: noURL, statusCode: 200, url: URL(string: "https://a.example")))
        XCTAssertNotNil(ConnectResponse(request: request, statusCode: 999))
    }

    func testAFoundationResponseWhoseStatusIsNotThreeDigitsIsABadResponse() throws {
        // Given: a transport of the user's answering with Foundation's response, which takes any status.
        for status in [0, -1, 99, 1000] {
            let transport = PartsTransport { request in
                let head = HTTPURLResponse(url: request.url!, statusCode: status, httpVersion: nil, headerFields: [:])!
                return ConnectResponse(request: request, response: head, data: Data("{}".utf8))
            }
            let client = Connect(transport: transport, retryPolicy: nil)
            let endpoint = ClientFixtures.Endpoint(endpoint: "/items/1")

            for options in [RequestOptions(), RequestOptions(acceptsEveryStatus: true)] {
                // When
                let error = connectError(of: client.response(for: endpoint, options: options))

                // Then: a malformed answer, as an engine reports a status line it cannot read, not a server's status
                XCTAssertEqual(error?.kind, .badResponse, "\(status): \(String(describing: error))")
                XCTAssertTrue(error?.message.contains("\(status)") ?? false, String(describing: error))
                XCTAssertEqual(error?.urlError?.code, .badServerResponse, "\(status)")
            }
        }
    }

    func testAThreeDigitStatusAbove599IsTheServersStatus() throws {
        // Given: statuses HTTP leaves undefined but three digits, which AsyncHTTPClient and URLSession hand over.
        for status in [600, 999] {
            let client = Connect(transport: FakeTransport.answering(.status(status)), retryPolicy: nil)
            let endpoint = ClientFixtures.Endpoint(endpoint: "/items/1")

            // When
            let error = connectError(of: client.response(for: endpoint))
            let accepted = value(of: client.response(for: endpoint, options: RequestOptions(acceptsEveryStatus: true)))

            // Then
            XCTAssertEqual(error?.kind, .httpStatus, String(describing: error))
            XCTAssertEqual(error?.statusCode, status)
            XCTAssertEqual(accepted?.statusCode, status)
        }
    }

    func testTheClientDecodesAPartsResponseWithoutMakingFoundationsResponse() throws {
        // Given: a transport answering with parts, as AsyncHTTPClientTransport does.
        let made = Protected<[ConnectResponse]>([])
        let transport = PartsTransport { request in
            let answer = ConnectResponse(
                request: request, statusCode: 200, headers: ["content-type": "application/json"],
                data: Data(#"{"id":1}"#.utf8))!
            made.withLock { $0.append(answer) }
            return answer
        }
        struct Item: Decodable, Equatable { let id: Int }

        // When
        let item = try Connect(transport: transport).request(ClientFixtures.Endpoint(endpoint: "/items/1"))
            .decoded(toType: Item.self).wait(timeout: 5)

        // Then
        XCTAssertEqual(item, Item(id: 1))
        let answer = try XCTUnwrap(made.snapshot.first)
        guard case .parts(let parts) = answer.storedHead else { return XCTFail("made Foundation's response") }
        XCTAssertFalse(parts.isMadeForTesting, "the success path read only the status and headers")
    }
}

/// A transport that answers every request with `answer`'s response.
private struct PartsTransport: Transport {
    let answer: @Sendable (URLRequest) -> ConnectResponse

    func send(_ request: URLRequest) -> Future<ConnectResponse> {
        Future(value: answer(request))
    }
}
