import Foundation
import SwiftConnectTesting
import XCTest

@testable @_spi(Engine) import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Downloads and progress through the core's exchange, over an engine that answers what a test scripts.
final class EngineTransferTests: XCTestCase {
    private typealias ScriptedEngine = EngineExchangeTests.ScriptedEngine

    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("engine-transfer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: folder)
    }

    /// The outcome of `engine` answering a GET of `http://api.test/file` under `transfer`.
    private func outcome(of engine: ScriptedEngine, transfer: TransferOptions) throws -> Result<
        ConnectResponse, any Error
    > {
        try engine.send(ConnectRequest(url: URL(string: "http://api.test/file")!), transfer: transfer)
            .waitForResult(timeout: 10)
    }

    /// A download's error body stays in memory, for the error handler: at most 1 MiB of it, even when the call's own
    /// limit, meant for the file, is larger (the whole 2 MiB page was kept in memory then, and a server's endless
    /// error body would have been read up to that limit).
    func testADownloadsErrorBodyIsLimitedEvenUnderALargerLimit() throws {
        let page = Data(repeating: 0x20, count: 2 << 20)
        let step = 64 << 10
        let chunks: [Data] = stride(from: 0, to: page.count, by: step).map { start in
            Data(page[start..<min(start + step, page.count)])
        }
        let declared = ScriptedEngine.Answer(
            status: 500, fields: ["Content-Length": String(page.count)], chunks: chunks)
        let answers: [(String, ScriptedEngine.Answer)] = [
            ("declared", declared), ("undeclared", ScriptedEngine.Answer(status: 500, chunks: chunks)),
        ]
        let destination = folder.appendingPathComponent("file.bin")
        try Data("kept".utf8).write(to: destination)
        for (name, answer) in answers {
            let transfer = TransferOptions(destination: destination, maxResponseBytes: 100 << 20)

            let result = try outcome(of: ScriptedEngine([answer]), transfer: transfer)

            guard case .failure(let error as ConnectError) = result else {
                let kept = (try? result.get().data.count) ?? -1
                return XCTFail("\(name): expected responseTooLarge, got a response with \(kept) bytes in memory")
            }
            XCTAssertEqual(error.kind, .responseTooLarge, "\(name): \(error)")
            XCTAssertEqual(error.statusCode, 500, name)
        }
        XCTAssertEqual(try Data(contentsOf: destination), Data("kept".utf8))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["file.bin"])
    }

    /// A smaller limit of the call's still applies to a download's error body.
    func testASmallerLimitStillAppliesToADownloadsErrorBody() throws {
        let answer = ScriptedEngine.Answer(status: 404, chunks: [Data(count: 600)])
        let destination = folder.appendingPathComponent("file.bin")

        let result = try outcome(
            of: ScriptedEngine([answer]), transfer: TransferOptions(destination: destination, maxResponseBytes: 500))

        guard case .failure(let error as ConnectError) = result else { return XCTFail("expected a failure") }
        XCTAssertEqual(error.kind, .responseTooLarge)
        XCTAssertTrue(error.message.contains("500 bytes"), error.message)
    }
}
