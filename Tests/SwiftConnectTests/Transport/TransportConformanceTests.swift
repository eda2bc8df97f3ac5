import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `URLSessionTransport` against the transport contract (`TransportConformance`), each platform exception named
/// with the defect behind it. A known defect that starts passing fails this test, so the exception goes.
final class TransportConformanceTests: XCTestCase {
    /// What FoundationNetworking (libcurl) cannot do, and why.
    static var knownDefects: [String: String] {
        #if canImport(FoundationNetworking)
            return [
                "cancellation closes the connection":
                    "FoundationNetworking cannot stop a body transfer under way: the transport calls the task's "
                    + "cancel() at once, which waits for libcurl's work queue (workQueue.sync), busy while a fast "
                    + "sender keeps the socket full; a cancelled request's bytes keep coming until it is free, piling "
                    + "up in memory meanwhile (the server's 256 MiB after the cancellation were read in some runs on "
                    + "loopback, and stopped early in others)",
                "streamed request body keeps its length":
                    "FoundationNetworking tells libcurl a body stream's size is unknown, so it goes out in chunks and "
                    + "its Content-Length field is dropped (a server that needs the length gets it over "
                    + "AsyncHTTPClientTransport, or from a body in memory or a file)",
                "truncated compressed body is refused":
                    "FoundationNetworking has libcurl decode every gzip and deflate body "
                    + "(CURLOPT_HTTP_CONTENT_DECODING, set on every request by its HTTP protocol, with no API to turn "
                    + "it off), and libcurl ends a compressed stream that stops before its end without an error: "
                    + "the part decoded so far arrives as the whole body, and the core never sees the compressed "
                    + "bytes to check them (every byte its Content-Length announced did arrive)",
                "lengths that disagree are refused":
                    "FoundationNetworking keeps one value a field name: two Content-Length fields whose names differ "
                    + "only in case (Content-Length: 5, content-length: 3) reach HTTPURLResponse as the last one "
                    + "alone, not joined as fields of one spelling are, and libcurl frames the body by that last one: "
                    + "the answer is a 200 with the body cut to 3 bytes, and neither the response nor the bytes show "
                    + "the core that another length was sent",
                "size limit stops reading":
                    "FoundationNetworking cannot abort a transfer under way; the transport invalidates the "
                    + "request's own session, which stops it only once libcurl has caught up with the sender (the "
                    + "queue all sessions share is busy until then): meanwhile the rest is read and dropped",
            ]
        #else
            return [:]
        #endif
    }

    /// Known defects whose check passes in some runs and fails in others.
    static let racing: Set<String> = ["size limit stops reading", "cancellation closes the connection"]

    func testURLSessionTransportKeepsTheContract() {
        let outcomes = TransportConformance.run(knownDefects: Self.knownDefects) { URLSessionTransport() }

        XCTAssertEqual(outcomes.count, TransportConformance.checks.count)
        for outcome in outcomes {
            print(outcome)
            // Whether libcurl stops a transfer is a race with its reading on: either outcome is seen on Linux (the
            // size limit stopped 1 run in 4 here; cancellation failed to stop once, under ThreadSanitizer), so these
            // two are not held to one.
            if Self.racing.contains(outcome.check), Self.knownDefects[outcome.check] != nil { continue }
            XCTAssertTrue(outcome.isAsExpected, outcome.description)
        }
    }

    /// The streaming check can fail: a transport that implements only `send(_:)` gets the in-memory default, which
    /// hands over the body once it is complete.
    func testATransportThatDoesNotStreamFailsTheStreamingCheck() throws {
        struct WholeBodies: Transport {
            let engine = URLSessionTransport()
            func send(_ request: URLRequest) -> Future<ConnectResponse> { engine.send(request) }
        }
        let outcomes = TransportConformance.run(only: ["streamed body arrives as it is sent"]) { WholeBodies() }

        let outcome = try XCTUnwrap(outcomes.first)
        XCTAssertFalse(outcome.isAsExpected, outcome.description)
        XCTAssertTrue(outcome.failure?.contains("does not stream") ?? false, outcome.description)
    }

    /// A transport that implements only `send(_:)` still keeps at most 1 MiB of a download's error body, as every
    /// engine does: the in-memory default cuts it too.
    func testTheInMemoryDefaultLimitsADownloadsErrorBody() throws {
        struct WholeBodies: Transport {
            let engine = URLSessionTransport()
            func send(_ request: URLRequest) -> Future<ConnectResponse> { engine.send(request) }
        }
        let outcomes = TransportConformance.run(only: ["download error body limit"]) { WholeBodies() }

        let outcome = try XCTUnwrap(outcomes.first)
        XCTAssertTrue(outcome.isAsExpected, outcome.description)
    }

    /// The request streaming check can fail: a transport that reads the body before sending it (here, a
    /// `send(_:)`-only transport whose wrapper collects the stream first) is caught within the check's own bound.
    func testATransportThatCollectsTheBodyFailsTheRequestStreamingCheck() throws {
        struct CollectingBodies: Transport {
            let engine = URLSessionTransport()
            func send(_ request: URLRequest) -> Future<ConnectResponse> {
                let promise = Promise<ConnectResponse>()
                DispatchQueue.global().async {
                    var collected = request
                    if let stream = request.httpBodyStream {
                        var data = Data()
                        var buffer = [UInt8](repeating: 0, count: 65_536)
                        stream.open()
                        defer { stream.close() }
                        while true {
                            let count = stream.read(&buffer, maxLength: buffer.count)
                            if count == 0 { break }
                            guard count > 0 else {
                                _ = promise.fail(stream.streamError ?? URLError(.cannotDecodeRawData))
                                return
                            }
                            data.append(buffer, count: count)
                        }
                        collected.httpBodyStream = nil
                        collected.httpBody = data
                    }
                    engine.send(collected).observe { _ = promise.complete(with: $0) }
                }
                return promise.future
            }
        }
        let outcomes = TransportConformance.run(only: ["request body streams as it is made"]) { CollectingBodies() }

        let outcome = try XCTUnwrap(outcomes.first)
        XCTAssertFalse(outcome.isAsExpected, outcome.description)
        XCTAssertTrue(outcome.failure?.contains("does not stream request bodies") ?? false, outcome.description)
    }

    /// The reset check can fail: a transport that sends a failed POST again (here, once, on a new connection) still
    /// ends with a transport failure at once, but the server got the POST twice.
    func testATransportThatSendsAFailedPOSTAgainFailsTheResetCheck() throws {
        struct SendingAgain: Transport {
            let engine = URLSessionTransport()
            func send(_ request: URLRequest) -> Future<ConnectResponse> {
                let promise = Promise<ConnectResponse>()
                engine.send(request).observe { result in
                    guard case .failure = result else {
                        _ = promise.complete(with: result)
                        return
                    }
                    URLSessionTransport().send(request).observe { _ = promise.complete(with: $0) }
                }
                return promise.future
            }
        }
        let outcomes = TransportConformance.run(only: ["reset of a POST on a reused connection"]) { SendingAgain() }

        let outcome = try XCTUnwrap(outcomes.first)
        XCTAssertFalse(outcome.isAsExpected, outcome.description)
        XCTAssertTrue(outcome.failure?.contains("sent it again") ?? false, outcome.description)
    }

    /// The file check can fail: a transport that reads its body file itself (a directory read as nothing, as much of
    /// a file as the caller's `Content-Length` announces) sends requests the contract refuses unsent.
    func testATransportThatReadsItsBodyFileItselfFailsTheFileCheck() throws {
        struct ReadingItsOwnFile: Transport {
            let engine = URLSessionTransport()
            func send(_ request: URLRequest) -> Future<ConnectResponse> { engine.send(request) }
            func send(_ request: URLRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
                var request = request
                if let file = transfer.bodyFile {
                    let announced = request.value(forHTTPHeaderField: "Content-Length").flatMap { Int($0) }
                    let bytes = (try? Data(contentsOf: file)) ?? Data()
                    request.httpBody = announced.map { bytes.prefix($0) } ?? bytes
                }
                return engine.send(request)
            }
        }
        let outcomes = TransportConformance.run(only: ["unusable files are refused"]) { ReadingItsOwnFile() }

        let outcome = try XCTUnwrap(outcomes.first)
        XCTAssertFalse(outcome.isAsExpected, outcome.description)
        XCTAssertTrue(outcome.failure?.contains("a directory as the body file") ?? false, outcome.description)
    }

    /// Cancelling a call with transfer options reaches a `send(_:)`-only transport that keeps no reference to the
    /// future it handed out: the in-memory default keeps that future alive until the answer is over.
    func testCancellingTheInMemoryDefaultReachesTheTransport() {
        final class Unanswered: Transport, @unchecked Sendable {
            // `lock` guards `cancelled`.
            private let lock = NSLock()
            private var cancelled = false
            var wasCancelled: Bool { lock.withLock { cancelled } }
            func send(_ request: URLRequest) -> Future<ConnectResponse> {
                let promise = Promise<ConnectResponse>()
                promise.setCancelHandler { [self] in lock.withLock { cancelled = true } }
                return promise.future
            }
        }
        // Given: a call with progress, which is not a plain exchange
        let transport = Unanswered()
        let request = URLRequest(url: URL(string: "https://x.test/slow")!)
        let call = transport.send(request, transfer: TransferOptions(progress: { _ in }))
        // When
        call.cancel()
        // Then
        XCTAssertTrue(transport.wasCancelled)
    }
}
