import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A reader whose task is cancelled stops, whether or not the body has already arrived whole: a cancelled loop
/// over lines or events does not go on reading what is buffered. It stops when it takes its next chunk: the lines or
/// events left of the chunk in hand still come, as Foundation's `AsyncLineSequence` hands them (an `EventSource`
/// checks before each event, `EventSourceStopTests`).
final class CancelledReaderTests: XCTestCase {
    private let base = URL(string: "https://api.example.com")!

    /// The body is complete and buffered before the reader starts; its task is cancelled: it gets `.cancelled`,
    /// not the body and a normal end.
    func testACancelledReaderOfABodyAlreadyCompleteGetsCancelled() async throws {
        let transport = FakeTransport()
        transport.stub(
            .get, "/whole",
            with: .handler { request in
                var response = ConnectResponse(request: request, statusCode: 200, headers: [:])!
                response.bodyStream = .finished(with: Data("one\ntwo\n".utf8))
                return .success(response)
            })
        let connect = Connect(transport: transport, retryPolicy: nil)
        let stream = connect.stream(Route("/whole", baseURL: base))
        _ = try await stream.response
        let outcome = await Task { () -> [String] in
            withUnsafeCurrentTask { $0?.cancel() }
            var outcome: [String] = []
            do {
                for try await line in stream.lines { outcome.append(line) }
                outcome.append("end")
            } catch let error as ConnectError {
                outcome.append("\(error.kind)")
            } catch {
                outcome.append("\(type(of: error))")
            }
            return outcome
        }.value
        XCTAssertEqual(outcome, ["\(ConnectError.Kind.cancelled)"])
    }

    /// A reader whose task is not cancelled reads a complete body as before.
    func testAReaderOfABodyAlreadyCompleteReadsIt() async throws {
        let transport = FakeTransport()
        transport.stub(
            .get, "/whole",
            with: .handler { request in
                var response = ConnectResponse(request: request, statusCode: 200, headers: [:])!
                response.bodyStream = .finished(with: Data("one\ntwo\n".utf8))
                return .success(response)
            })
        let connect = Connect(transport: transport, retryPolicy: nil)
        var lines: [String] = []
        for try await line in connect.stream(Route("/whole", baseURL: base)).lines { lines.append(line) }
        XCTAssertEqual(lines, ["one", "two"])
    }
}
