import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a recording must keep whole: a replay hands over what the live call got, byte for byte and field for field.
final class RecordingRoundTripTests: XCTestCase {
    private var server: LocalServer!
    private var folder: URL!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        folder = try makeRecordingFolder(for: self)
    }

    override func tearDown() {
        server.stop()
        server = nil
    }

    private var file: URL { folder.appendingPathComponent("round-trip.har") }

    private func transport(_ mode: RecordingMode) -> RecordingTransport {
        RecordingTransport(fileURL: file, wrapping: mode == .replay ? nil : URLSessionTransport(), mode: mode)
    }

    /// Bytes that are no UTF-8 text: every byte value, then a pseudo-random run (a fixed seed), `count` in all.
    private static func binary(count: Int) -> Data {
        var bytes = [UInt8](repeating: 0, count: count)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for index in bytes.indices {
            if index < 256 {
                bytes[index] = UInt8(index)
            } else {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                bytes[index] = UInt8(truncatingIfNeeded: state >> 33)
            }
        }
        return Data(bytes)
    }

    func testRepeatedResponseFieldsReplayAsTheLiveCallGotThem() throws {
        // Given: an answer with two fields of each of two names, another between them
        server.route("GET", "/repeated") { _ in
            LocalServer.Response.json(["ok": true])
                .withHeader("X-Multi", "one").withHeader("Vary", "Accept")
                .withHeader("X-Multi", "two").withHeader("Vary", "Accept-Language")
        }
        let route = Route("/repeated", baseURL: server.baseURL)
        let live = try Connect(transport: transport(.record), retryPolicy: nil).response(for: route).wait()
        server.stop()
        // When
        let replayed = try Connect(transport: transport(.replay), retryPolicy: nil).response(for: route).wait()
        // Then: the same values, in the same order
        for name in ["X-Multi", "Vary"] {
            let field = HeaderField.Name(name)
            XCTAssertEqual(replayed.head.headerFields[values: field], live.head.headerFields[values: field], name)
            XCTAssertFalse(live.head.headerFields[values: field].isEmpty, name)
        }
    }

    func testALargeBinaryBodyReplaysByteForByte() throws {
        // Given: 6 MiB that are not text, answered whole and sent as a request body
        let body = Self.binary(count: 6 << 20)
        server.route("POST", "/binary") { request in .data(request.body) }
        var request = ConnectRequest(method: .post, url: server.baseURL.appendingPathComponent("binary"))
        request.body = .bytes(body)
        let live = try Connect(transport: transport(.record), retryPolicy: nil).response(for: request).wait()
        XCTAssertEqual(live.data, body)
        server.stop()
        // When
        let replayed = try Connect(transport: transport(.replay), retryPolicy: nil).response(for: request).wait()
        // Then: matched by the same bytes, and answered with them
        XCTAssertEqual(replayed.data.count, body.count)
        XCTAssertTrue(replayed.data == body, "the replayed body differs from the live one")
    }

    func testABinaryStreamReplaysItsPiecesByteForByte() async throws {
        // Given: a stream of binary pieces
        let body = Self.binary(count: 1 << 20)
        server.route("GET", "/binary-stream") { _ in
            .stream(contentLength: nil) { write in
                var offset = 0
                while offset < body.count {
                    let end = min(offset + 100_000, body.count)
                    guard write(body[offset..<end]) else { return }
                    offset = end
                }
            }
        }
        let route = Route("/binary-stream", baseURL: server.baseURL)
        var live = Data()
        for try await piece in Connect(transport: transport(.record), retryPolicy: nil).stream(route) {
            live.append(piece)
        }
        XCTAssertTrue(live == body, "the live body differs from the server's")
        server.stop()
        // When
        var replayed = Data()
        for try await piece in Connect(transport: transport(.replay), retryPolicy: nil).stream(route) {
            replayed.append(piece)
        }
        // Then
        XCTAssertEqual(replayed.count, body.count)
        XCTAssertTrue(replayed == body, "the replayed body differs from the live one")
    }
}
