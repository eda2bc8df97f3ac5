import Foundation
import SwiftConnect
import SwiftConnectAsyncHTTPClient
import SwiftConnectOpenAPI
import SwiftConnectTesting
import XCTest

/// The README's "Using with OpenAPI" example (also the DocC article's), run against a loopback server: the block below is the README's,
/// verbatim (checked), with the names it leaves to the reader (`token`, `renewToken`, `serverURL`) defined here.
final class ReadmeExampleTests: XCTestCase {
    func testTheReadmeExampleRunsAsWritten() async throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/api/todos/:id") { request in
            request.header("Authorization") == "Bearer fresh"
                ? .json(string: #"{"id":7,"title":"Buy milk","completed":true}"#) : .status(401)
        }
        let token: AuthorizationToken = .bearer(token: "stale")
        let renewToken: AuthenticationMiddleware.Refresh = { _ in Future(value: .bearer(token: "fresh")) }
        let serverURL = server.baseURL.appendingPathComponent("api")

        // README: begin
        let connect = Connect(
            transport: AsyncHTTPClientTransport(),
            middlewares: [AuthenticationMiddleware(credential: token, refresh: renewToken)],
            retryPolicy: RetryPolicy(addsIdempotencyKey: true)
        )
        let client = Client(serverURL: serverURL, transport: ConnectClientTransport(connect: connect))
        let todo = try await client.getTodo(path: .init(id: 7)).ok.body.json
        // README: end

        XCTAssertEqual(todo.title, "Buy milk")
    }

    func testTheReadmeAndTheArticleHaveThisExampleVerbatim() throws {
        let here = URL(fileURLWithPath: #filePath)
        let root = here.deletingLastPathComponent().appendingPathComponent("../../../..").standardized
        let source = try String(contentsOf: here, encoding: .utf8)
        let begin = try XCTUnwrap(source.range(of: "        // README: begin\n"))
        let end = try XCTUnwrap(source.range(of: "        // README: end\n"))
        let block = source[begin.upperBound..<end.lowerBound]
            .split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.dropFirst(8) }
            .joined(separator: "\n")
        for document in ["README.md", "Sources/SwiftConnect/SwiftConnect.docc/UsingWithOpenAPI.md"] {
            let text = try String(contentsOf: root.appendingPathComponent(document), encoding: .utf8)
            XCTAssertTrue(text.contains("```swift\n" + block + "```"), "\(document) no longer shows:\n\(block)")
        }
    }
}
