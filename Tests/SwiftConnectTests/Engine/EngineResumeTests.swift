import Foundation
import XCTest

@testable import SwiftConnect

/// The exchange core's checks of a download's `206`: it goes on from the part the download resumed and to the end of
/// the body, holds the bytes its `Content-Range` names, answers a request that asked for a range, and a length near
/// `Int64.max` after the part is refused rather than counted; a resume stopped while its part is copied keeps that
/// part.
final class EngineResumeTests: XCTestCase {
    private typealias Answer = EngineExchangeTests.ScriptedEngine.Answer
    private var folder: URL!
    private var destination: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("engine-resume-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        destination = folder.appendingPathComponent("file.bin")
        try Data("as it was".utf8).write(to: destination)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: folder)
    }

    private let url = URL(string: "http://api.test/files/7")!

    /// A part of the body `abcdefghij`: its first four bytes, in a file of the test's.
    private func part(_ bytes: Data = Data("abcd".utf8), at file: URL? = nil, total: Int64? = 10) throws
        -> PartialDownload
    {
        let file = file ?? folder.appendingPathComponent("part-\(UUID().uuidString)")
        if !FileManager.default.fileExists(atPath: file.path) { try bytes.write(to: file) }
        return PartialDownload(
            bytesReceived: Int64(bytes.count), fileURL: file, validator: "\"v1\"", source: url, totalLength: total)
    }

    /// Options for a download to ``destination``, resuming `part` when given.
    private func download(resuming part: PartialDownload? = nil) -> TransferOptions {
        var transfer = TransferOptions()
        transfer.destination = destination
        transfer.downloadSource = url
        transfer.resuming = part
        return transfer
    }

    private func answer206(_ range: String, _ body: String, length: Bool = true) -> Answer {
        var fields: HeaderFields = ["Content-Range": range, "ETag": "\"v1\""]
        if length { fields[HeaderField.Name("Content-Length")] = "\(body.utf8.count)" }
        return Answer(status: 206, fields: fields, chunks: body.isEmpty ? [] : [Data(body.utf8)])
    }

    private func result(
        _ answer: Answer, transfer: TransferOptions, range: String? = nil
    ) throws -> Result<ConnectResponse, ConnectError> {
        var request = ConnectRequest(url: url, timeoutInterval: 10)
        if let range { request.setValue(range, forHTTPHeaderField: "Range") }
        switch try EngineExchangeTests.ScriptedEngine([answer]).send(request, transfer: transfer)
            .waitForResult(timeout: 10)
        {
        case .success(let response): return .success(response)
        case .failure(let error): return .failure(try XCTUnwrap(error as? ConnectError, "\(error)"))
        }
    }

    private func failure(
        _ answer: Answer, transfer: TransferOptions, file: StaticString = #filePath, line: UInt = #line
    ) throws -> ConnectError {
        switch try result(answer, transfer: transfer) {
        case .success(let response):
            XCTFail("expected an error, got a \(response.statusCode) response", file: file, line: line)
            throw CancellationError()
        case .failure(let error): return error
        }
    }

    /// A 206 that goes on from the part but stops before the body's end, by its `Content-Range` or by its length, is
    /// no whole file: refused, the part as it was, the destination untouched.
    func testA206ThatStopsBeforeTheEndIsRefusedAndKeepsThePart() throws {
        let kept = try part()
        let short = try failure(answer206("bytes 4-6/10", "efg"), transfer: download(resuming: kept))
        XCTAssertEqual(short.kind, .badResponse, "\(short)")
        XCTAssertTrue(short.message.contains("not the rest of the body"), short.message)
        let shorter = try failure(answer206("bytes 4-9/10", "efg"), transfer: download(resuming: kept))
        XCTAssertEqual(shorter.kind, .badResponse, "\(shorter)")
        XCTAssertEqual(try Data(contentsOf: kept.fileURL), Data("abcd".utf8))
        XCTAssertEqual(try String(contentsOf: destination, encoding: .utf8), "as it was")
    }

    /// A 206 with no declared length whose body ends before its range does was cut: the bytes that came are kept
    /// after the part, for the next resume; one that goes on past its range is refused, keeping only the range's.
    func testA206BodyThatDoesNotFitItsRangeIsCutOrRefused() throws {
        let cut = try failure(answer206("bytes 4-9/10", "ef", length: false), transfer: download(resuming: try part()))
        XCTAssertEqual(cut.kind, .connectionLost, "\(cut)")
        let newer = try XCTUnwrap(cut.partialDownload, "\(cut)")
        defer { newer.discard() }
        XCTAssertEqual(try Data(contentsOf: newer.fileURL), Data("abcdef".utf8))

        let long = try failure(
            answer206("bytes 4-9/10", "efghijkl", length: false), transfer: download(resuming: try part()))
        XCTAssertEqual(long.kind, .badResponse, "\(long)")
        if let kept = long.partialDownload {
            defer { kept.discard() }
            XCTAssertEqual(try Data(contentsOf: kept.fileURL), Data("abcd".utf8), "only the range's bytes")
        }
        XCTAssertEqual(try String(contentsOf: destination, encoding: .utf8), "as it was")
    }

    /// A body cut part-way keeps a part only when its bytes are the body's as a `Range` counts them: not a
    /// content-encoded one, which arrives decoded (the engine decodes its `gzip`).
    func testACutContentEncodedBodyKeepsNoPart() throws {
        func cut(_ fields: HeaderFields) throws -> ConnectError {
            let answer = Answer(
                status: 200, fields: fields, chunks: [Data("abcd".utf8)],
                failure: ConnectError(.connectionLost, message: "cut"))
            let engine = EngineExchangeTests.ScriptedEngine([answer], decodes: ["gzip"])
            let result = try engine.send(ConnectRequest(url: url, timeoutInterval: 10), transfer: download())
                .waitForResult(timeout: 10)
            guard case .failure(let error as ConnectError) = result else {
                XCTFail("\(result)")
                throw CancellationError()
            }
            return error
        }
        let plain = try cut(["ETag": "\"v1\"", "Content-Length": "10"])
        XCTAssertEqual(plain.kind, .connectionLost, "\(plain)")
        let kept = try XCTUnwrap(plain.partialDownload, "the control: a plain body's part is kept")
        kept.discard()
        let coded = try cut(["ETag": "\"v1\"", "Content-Length": "10", "Content-Encoding": "gzip"])
        XCTAssertEqual(coded.kind, .connectionLost, "\(coded)")
        XCTAssertNil(coded.partialDownload, "decoded bytes are no part a Range counts")
    }

    /// A 206 to a download that asked for no range is part of a body, not the file: refused. A `Range` the app set
    /// itself asked for that part, which is then written.
    func testA206ToADownloadThatAskedForNoRangeIsRefused() throws {
        let unasked = try failure(answer206("bytes 5-9/10", "fghij"), transfer: download())
        XCTAssertEqual(unasked.kind, .badResponse, "\(unasked)")
        XCTAssertTrue(unasked.message.contains("asked for no range"), unasked.message)
        XCTAssertNil(unasked.partialDownload)
        XCTAssertEqual(try String(contentsOf: destination, encoding: .utf8), "as it was")

        let asked = try result(answer206("bytes 5-9/10", "fghij"), transfer: download(), range: "bytes=5-")
        XCTAssertEqual(try asked.get().statusCode, 206)
        XCTAssertEqual(try String(contentsOf: destination, encoding: .utf8), "fghij")
    }

    /// A declared length that, after the part, no file could have (past `Int64.max`) is over any limit, and unknown
    /// to progress: a typed error, never an overflow.
    func testALengthPastInt64AfterThePartIsRefusedNotOverflowed() throws {
        let huge = Int64.max - 3
        let fields: HeaderFields = [
            "Content-Range": "bytes 4-\(Int64.max)/*", "ETag": "\"v1\"", "Content-Length": "\(huge)",
        ]
        let answer = Answer(status: 206, fields: fields, chunks: [Data("ef".utf8)])
        var limited = download(resuming: try part(total: nil))
        limited.maxResponseBytes = 100
        let tooLarge = try failure(answer, transfer: limited)
        XCTAssertEqual(tooLarge.kind, .responseTooLarge, "\(tooLarge)")

        let reports = Protected<[TransferProgress]>([])
        var counted = download(resuming: try part(total: nil))
        counted.progress = { report in reports.withLock { $0.append(report) } }
        let cut = try failure(answer, transfer: counted)
        XCTAssertEqual(cut.kind, .connectionLost, "\(cut)")
        cut.partialDownload?.discard()
        XCTAssertNil(reports.snapshot.first?.totalBytesToReceive, "\(reports.snapshot)")
    }

    /// A resume stopped while it copies its part (from a pipe here, which the test feeds) hands over no shorter part
    /// in place of the one it copies: the call's newest part stays the one it had.
    func testAResumeStoppedWhileCopyingItsPartKeepsThatPart() throws {
        let pipe = folder.appendingPathComponent("part-pipe")
        XCTAssertEqual(mkfifo(pipe.path, 0o600), 0)
        let piece = 1 << 20
        let original = try part(Data(count: 2 * piece), at: pipe, total: nil)
        let resumption = DownloadResumption(starting: original)
        var transfer = download(resuming: original)
        transfer.resumption = resumption
        let answer = Answer(
            status: 206,
            fields: [
                "Content-Range": "bytes \(2 * piece)-\(2 * piece + 8)/*", "ETag": "\"v1\"",
                "Content-Length": "9",
            ],
            chunks: [Data("123456789".utf8)])
        let partsBefore = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        let call = EngineExchangeTests.ScriptedEngine([answer]).send(
            ConnectRequest(url: url, timeoutInterval: 30), transfer: transfer)
        // The copy reads a MiB at a time: once a MiB and a half went into the pipe, which holds 64 KiB, its first MiB
        // is in the download's file and it waits for the second. The pipe gets exactly the part's bytes: the copy
        // reads them all, so it never closes the pipe while the test still writes.
        // The writes happen on a thread of their own, so that a copy that never reads fails the test, not hangs it.
        let halfway = DispatchSemaphore(value: 0)
        let goOn = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { done.signal() }
            guard let writer = try? FileHandle(forWritingTo: pipe) else { return }
            try? writer.write(contentsOf: Data(count: piece + piece / 2))
            halfway.signal()
            goOn.wait()
            try? writer.write(contentsOf: Data(count: piece / 2))
            try? writer.close()
        }
        guard halfway.wait(timeout: .now() + 30) == .success else {
            call.cancel()
            goOn.signal()
            Self.drain(pipe, until: done)
            return XCTFail("the resume never copied its part's first MiB")
        }
        call.cancel()
        goOn.signal()
        guard done.wait(timeout: .now() + 30) == .success else {
            Self.drain(pipe, until: done)
            return XCTFail("the copy stopped reading its part")
        }
        XCTAssertThrowsError(try call.wait(timeout: 10))
        XCTAssertEqual(resumption.latest, original, "the part it was copying stays the newest")
        XCTAssertEqual(
            Set(try FileManager.default.contentsOfDirectory(atPath: folder.path)), Set(partsBefore),
            "no shorter part, no download file left")
    }

    /// Reads `pipe` until `writing` says its writer is done: unblocks a writer nobody reads, when a test failed.
    private static func drain(_ pipe: URL, until writing: DispatchSemaphore) {
        let descriptor = open(pipe.path, O_RDONLY | O_NONBLOCK)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while writing.wait(timeout: .now() + 0.05) == .timedOut {
            _ = read(descriptor, &buffer, buffer.count)
        }
    }
}
