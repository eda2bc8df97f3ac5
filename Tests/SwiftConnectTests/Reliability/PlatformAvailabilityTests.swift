import Foundation
import XCTest

/// The sources compile on every system the packages declare (macOS 10.15, iOS 13, tvOS 13, watchOS 6) and on every
/// Linux C library, although CI builds them on Linux with glibc alone: a Foundation API newer than those systems
/// must sit under `#available`, and the C library is imported by what can be imported, not by `os(Linux)` (the
/// static Linux SDK's Musl). Read from the source files, as no Apple toolchain builds them here.
final class PlatformAvailabilityTests: XCTestCase {
    /// Foundation calls newer than the packages' oldest systems, found in these sources before; each needs an
    /// `#available` check on one of the three lines above it (the guarded helpers: `FileHandle.writePortably(_:)`).
    private static let newerAPIs: [(pattern: String, needs: String)] = [
        (#"\.write\(contentsOf:"#, "FileHandle.write(contentsOf:) needs macOS 10.15.4, iOS 13.4"),
        (#"\.read\(upToCount:"#, "FileHandle.read(upToCount:) needs macOS 10.15.4, iOS 13.4"),
        (#"\.readToEnd\(\)"#, "FileHandle.readToEnd() needs macOS 10.15.4, iOS 13.4"),
        (#"\.seekToEnd\(\)"#, "FileHandle.seekToEnd() needs macOS 10.15.4, iOS 13.4"),
        (#"\((percentEncoded|filePath|directoryHint):"#, "URL's percentEncoded:/filePath: API needs macOS 13, iOS 16"),
        (#"\.appending\((path|component|queryItems):"#, "URL.appending(path:) needs macOS 13, iOS 16"),
        (#"\bDate\.now\b"#, "Date.now needs macOS 12, iOS 15"),
        (#"\.formatted\("#, "formatted() needs macOS 12, iOS 15"),
        (#"\b(ContinuousClock|SuspendingClock)\b|Task\.sleep\((for|until):"#, "clocks need macOS 13, iOS 16"),
        (#"\b(Mutex|Atomic)<"#, "Synchronization needs macOS 15, iOS 18"),
        (#"\.(firstRange|ranges)\(of:"#, "Collection.ranges(of:) needs macOS 13, iOS 16"),
        (#"withDiscardingTaskGroup"#, "withDiscardingTaskGroup needs macOS 14, iOS 17"),
    ]

    func testFoundationAPINewerThanTheOldestSystemsIsGuarded() throws {
        var found: [String] = []
        for file in try Self.sourceFiles() {
            let text = try String(contentsOf: file, encoding: .utf8)
            // One search over the file first: most files use none of them.
            let any = Self.newerAPIs.map { "(\($0.pattern))" }.joined(separator: "|")
            guard text.range(of: any, options: .regularExpression) != nil else { continue }
            let lines = text.components(separatedBy: "\n")
            for (index, line) in lines.enumerated() where !Self.isComment(line) {
                for api in Self.newerAPIs where line.range(of: api.pattern, options: .regularExpression) != nil {
                    let above = lines[max(0, index - 3)..<index]
                    if !above.contains(where: { $0.contains("#available(") }) {
                        found.append("\(Self.relative(file)):\(index + 1): \(api.needs), unguarded")
                    }
                }
            }
        }
        XCTAssertEqual(found, [], found.joined(separator: "\n"))
    }

    func testTheCLibraryIsImportedByWhatCanBeImported() throws {
        var found: [String] = []
        for file in try Self.sourceFiles() {
            let lines = try String(contentsOf: file, encoding: .utf8).components(separatedBy: "\n")
            for (index, line) in lines.enumerated() {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                guard trimmed == "import Glibc" || trimmed == "import Musl" else { continue }
                let library = trimmed.dropFirst("import ".count)
                let condition = index > 0 ? lines[index - 1].trimmingCharacters(in: .whitespaces) : ""
                if !condition.hasSuffix("canImport(\(library))") {
                    found.append("\(Self.relative(file)):\(index + 1): \(trimmed) under `\(condition)`")
                }
            }
        }
        XCTAssertEqual(found, [], found.joined(separator: "\n"))
    }

    /// The check itself: it sees an unguarded call, and accepts a guarded one.
    func testTheCheckTellsAGuardedCallFromAnUnguardedOne() {
        let pattern = Self.newerAPIs[0].pattern
        XCTAssertNotNil("        try handle.write(contentsOf: data)".range(of: pattern, options: .regularExpression))
        XCTAssertNil("        handle.write(data)".range(of: pattern, options: .regularExpression))
        XCTAssertNotNil(
            "url.user(percentEncoded: false)".range(of: Self.newerAPIs[4].pattern, options: .regularExpression))
        XCTAssertTrue(Self.isComment("    /// `FileHandle.write(contentsOf:)` needs newer systems"))
    }

    private static func isComment(_ line: String) -> Bool {
        line.trimmingCharacters(in: .whitespaces).hasPrefix("//")
    }

    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    private static func relative(_ file: URL) -> String {
        String(file.path.dropFirst(root.path.count + 1))
    }

    /// The Swift files of the packages' libraries and of the Playground, which declare the oldest systems.
    private static func sourceFiles() throws -> [URL] {
        var folders = [root.appendingPathComponent("Sources"), root.appendingPathComponent("Playground")]
        for group in ["Transports", "Integrations"] {
            let packages = root.appendingPathComponent(group)
            for package in try FileManager.default.contentsOfDirectory(atPath: packages.path) {
                folders.append(packages.appendingPathComponent(package).appendingPathComponent("Sources"))
            }
        }
        var files: [URL] = []
        for folder in folders {
            guard let walk = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else {
                continue
            }
            for case let file as URL in walk where file.pathExtension == "swift" { files.append(file) }
        }
        XCTAssertGreaterThan(files.count, 100)
        return files
    }
}
