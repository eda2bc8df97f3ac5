import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// Every Swift block of the DocC articles is code a test or the Playground compiles (the migration guides have their
/// own check, `MigrationGuideTests`): an article that shows an API that changed fails here, not in a reader's editor.
final class DocCExamplesTests: XCTestCase {
    func testEveryArticleSwiftBlockIsCompiledCode() throws {
        let root = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let docc = root.appendingPathComponent("Sources/SwiftConnect/SwiftConnect.docc")
        var folders = [root.appendingPathComponent("Tests"), root.appendingPathComponent("Playground")]
        for group in ["Transports", "Integrations"] {
            let packages = root.appendingPathComponent(group)
            for package in (try? FileManager.default.contentsOfDirectory(atPath: packages.path)) ?? [] {
                folders.append(packages.appendingPathComponent(package).appendingPathComponent("Tests"))
            }
        }
        let haystack = MarkdownCode.normalized(folders.map(Self.swiftSources(under:)).joined(separator: "\n"))
        let articles = try FileManager.default.contentsOfDirectory(atPath: docc.path)
            .filter { $0.hasSuffix(".md") && !$0.hasPrefix("ComingFrom") }.sorted()
        XCTAssertGreaterThan(articles.count, 5)
        for article in articles {
            let text = try String(contentsOf: docc.appendingPathComponent(article), encoding: .utf8)
            for block in MarkdownCode.swiftBlocks(in: text) {
                XCTAssertTrue(
                    haystack.contains(MarkdownCode.normalized(block)),
                    "\(article): a block that no test runs:\n\(block)")
            }
        }
    }

    /// What the Getting Started article's connector reaches: jsonplaceholder's todos, answered by a fake.
    private static let todos: FakeTransport = {
        let transport = FakeTransport()
        transport.stub(
            .get, "/todos/1", with: .json(string: #"{"userId":1,"id":1,"title":"delectus","completed":false}"#))
        transport.stub(
            .get, "/todos/123", with: .json(string: #"{"userId":7,"id":123,"title":"ipsum","completed":true}"#))
        return transport
    }()
    private static let todosClient = Connect(transport: todos)

    /// GettingStarted.md's and the overview's (SwiftConnect.md) blocks, as written, run. The article names a public
    /// server and `Connect.default`, the process's real client: here `Connect` is a local name whose `default` is a
    /// client on a fake transport, and `print` is where the overview's callback is heard.
    func testGettingStartedAndTheOverviewRunAsWritten() async throws {
        let printed = expectation(description: "the overview's callback prints")
        let lines = Recorder<String>()
        @Sendable func print(_ item: Any) {
            lines.append("\(item)")
            printed.fulfill()
        }
        enum Connect {
            static var `default`: SwiftConnect.Connect { DocCExamplesTests.todosClient }
        }

        enum TodoConnector: Connector {
            case get(id: Int)

            var baseURL: URL { URL(string: "https://jsonplaceholder.typicode.com")! }
            var endpoint: String { "/todos/{id}" }
            var method: HTTPMethod { .get }
            var headers: [HTTPHeader] { [] }
            var parameters: ParametersRepresentable? {
                switch self {
                case .get(let id): return Parameter.path(key: "id", value: "\(id)")
                }
            }
        }

        struct Todo: Decodable {
            let id: Int
            let title: String
            let completed: Bool
        }

        let todo = try await Connect.default.request(TodoConnector.get(id: 1))
            .decoded(toType: Todo.self)
            .value

        XCTAssertEqual(todo.id, 1)
        XCTAssertEqual(todo.title, "delectus")
        XCTAssertFalse(todo.completed)

        Connect.default.request(TodoConnector.get(id: 123))
            .decoded(toType: Todo.self)
            .observe { result in
                switch result {
                case .success(let todo): print(todo)
                case .failure(let error): print(error)
                }
            }

        await fulfillment(of: [printed], timeout: 30)
        XCTAssertEqual(lines.values, [#"Todo(id: 123, title: "ipsum", completed: true)"#])
        XCTAssertEqual(
            Self.todos.requests.map { $0.url?.absoluteString },
            [
                "https://jsonplaceholder.typicode.com/todos/1", "https://jsonplaceholder.typicode.com/todos/123",
            ])
    }

    /// The text of every `.swift` file below `folder`.
    private static func swiftSources(under folder: URL) -> String {
        guard let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else { return "" }
        var sources: [String] = []
        for case let file as URL in files where file.pathExtension == "swift" && !file.path.contains("/.build") {
            if let text = try? String(contentsOf: file, encoding: .utf8) { sources.append(text) }
        }
        return sources.joined(separator: "\n")
    }
}
