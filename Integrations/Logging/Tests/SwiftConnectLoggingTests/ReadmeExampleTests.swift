import Foundation
import Logging
import SwiftConnect
import SwiftConnectLogging
import SwiftConnectTesting
import XCTest

/// The README's logging example (also the DocC article's), run: the block below is theirs, verbatim (checked).
final class ReadmeExampleTests: XCTestCase {
    func testTheReadmeExampleRunsAsWritten() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/todos") { _ in .json(string: "[]") }

        // README: begin
        let logger = Logger(label: "api")
        let connect = Connect(
            settings: Connect.Settings(logger: SwiftLogConnectLogger(logger), observers: [LoggingObserver(logger)]))
        // README: end

        let body = try connect.request(Route("/todos", baseURL: server.baseURL)).wait()
        XCTAssertEqual(body, Data("[]".utf8))
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
        for document in ["README.md", "Sources/SwiftConnect/SwiftConnect.docc/Logging.md"] {
            let text = try String(contentsOf: root.appendingPathComponent(document), encoding: .utf8)
            XCTAssertTrue(text.contains("```swift\n" + block + "```"), "\(document) no longer shows:\n\(block)")
        }
    }
}
