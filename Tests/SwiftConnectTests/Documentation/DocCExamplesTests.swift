import Foundation
import SwiftConnect
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

    /// GettingStarted.md's and the overview's blocks, as written. Compiled, not run: the article's connector names a
    /// public server, and `Connect.default` is the process's real client.
    private static func gettingStarted() async throws {
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

        Connect.default.request(TodoConnector.get(id: 123))
            .decoded(toType: Todo.self)
            .observe { result in
                switch result {
                case .success(let todo): print(todo)
                case .failure(let error): print(error)
                }
            }
        _ = todo
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
