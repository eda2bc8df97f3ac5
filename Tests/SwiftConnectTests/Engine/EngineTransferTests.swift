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

    /// A download's error body stays in memory, for the error handler: its first MiB, even when the call's own limit,
    /// meant for the file, is larger (the whole 2 MiB page was kept in memory then, and a server's endless error body
    /// would have been read up to that limit). The rest is let go, and the answer is marked as cut: the error handler's
    /// status error says so. (It failed with `responseTooLarge`, which the error handler and the retry policy's
    /// statuses never saw.)
    func testADownloadsErrorBodyIsCutToItsFirstMiBEvenUnderALargerLimit() throws {
        let page = Data((0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 / 1000) })
        let step = 100_000
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
            for limit in [nil, 100 << 20] {
                let transfer = TransferOptions(destination: destination, maxResponseBytes: limit)

                let response = try outcome(of: ScriptedEngine([answer]), transfer: transfer).get()

                XCTAssertEqual(response.statusCode, 500, name)
                XCTAssertEqual(response.data, page.prefix(1 << 20), name)
                XCTAssertNil(response.fileURL, name)
                XCTAssertEqual((response.bodyCut as? ConnectError)?.kind, .responseTooLarge, name)
                let error = try XCTUnwrap(ErrorHandler().handle(response) as? ConnectError, name)
                XCTAssertEqual(error.kind, .httpStatus, name)
                XCTAssertEqual(error.body?.count, 1 << 20, name)
                XCTAssertTrue(error.message.hasSuffix("(only the first 1048576 bytes of its body were read)"), name)
            }
        }
        XCTAssertEqual(try Data(contentsOf: destination), Data("kept".utf8))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["file.bin"])
    }

    /// An error body of exactly 1 MiB is whole: not marked as cut.
    func testADownloadsErrorBodyOfExactlyOneMiBIsWhole() throws {
        let answer = ScriptedEngine.Answer(status: 404, chunks: [Data(count: 1 << 19), Data(count: 1 << 19)])
        let transfer = TransferOptions(destination: folder.appendingPathComponent("file.bin"))

        let response = try outcome(of: ScriptedEngine([answer]), transfer: transfer).get()

        XCTAssertEqual(response.data.count, 1 << 20)
        XCTAssertNil(response.bodyCut)
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

    /// A download reaches 1.0 once, in the last report, when the whole body is there (for a download, in place at
    /// its destination), and no report repeats the one before. The last chunk of a body of declared length was
    /// reported as 1.0, before the file was in place (a caller that opened it then found the old one), then reported
    /// again as it was once it was.
    func testProgressReachesCompletionOnceWhenTheBodyIsInPlace() throws {
        let chunks = [Data(count: 100), Data(count: 100), Data(count: 100)]
        let answers: [(String, ScriptedEngine.Answer)] = [
            ("declared", .init(status: 200, fields: ["Content-Length": "300"], chunks: chunks)),
            ("undeclared", .init(status: 200, chunks: chunks)),
            ("empty", .init(status: 200, fields: ["Content-Length": "0"])),
        ]
        for (name, answer) in answers {
            for download in [false, true] {
                let destination = folder.appendingPathComponent("file.bin")
                try Data("old".utf8).write(to: destination)
                let expected = answer.chunks.reduce(Data(), +)
                // Whether the destination held the new body, for each report of 1.0.
                let inPlace = Protected<[Bool]>([])
                let reports = Protected<[TransferProgress]>([])
                var transfer = TransferOptions(progress: { report in
                    if report.downloadFraction == 1 {
                        inPlace.withLock { $0.append((try? Data(contentsOf: destination)) == expected) }
                    }
                    reports.withLock { $0.append(report) }
                })
                if download { transfer.destination = destination }

                _ = try outcome(of: ScriptedEngine([answer]), transfer: transfer).get()

                let seen = reports.snapshot
                let context = "\(name), \(download ? "to a file" : "in memory"): \(seen)"
                XCTAssertEqual(seen.filter { $0.downloadFraction == 1 }.count, 1, context)
                XCTAssertEqual(seen.last?.downloadFraction, 1, context)
                // The whole exchange too: a GET uploads nothing, so it is not done before its body is.
                XCTAssertEqual(seen.filter { $0.fractionCompleted == 1 }.count, 1, context)
                XCTAssertEqual(seen.last?.fractionCompleted, 1, context)
                XCTAssertFalse(zip(seen, seen.dropFirst()).contains { $0 == $1 }, context)
                if download { XCTAssertEqual(inPlace.snapshot, [true], context) }
            }
        }
    }
}
