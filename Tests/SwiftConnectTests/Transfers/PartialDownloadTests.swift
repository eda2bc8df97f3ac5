import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// ``PartialDownload`` on its own: what it shows of its URL, how it reads a server's ranges, and a resume through a
/// transport that answers in memory (``FakeTransport``).
final class PartialDownloadTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("partial-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: folder)
    }

    private func partial(_ bytes: Data, source: String = "https://api.example.com/files/7", total: Int64? = 10)
        throws -> PartialDownload
    {
        let file = folder.appendingPathComponent("part")
        try bytes.write(to: file)
        return PartialDownload(
            bytesReceived: Int64(bytes.count), fileURL: file, validator: "\"v1\"",
            source: try XCTUnwrap(URL(string: source)), totalLength: total)
    }

    /// Printed, described or dumped, a part shows no secret of its URL's query.
    func testItsDescriptionsHideTheURLsSecrets() throws {
        let part = try partial(Data("abc".utf8), source: "https://api.example.com/files/7?access_token=s3cr3t")
        var dumped = ""
        dump(part, to: &dumped)
        var error = ConnectError(.connectionLost, message: "cut")
        error.partialDownload = part
        var dumpedError = ""
        dump(error, to: &dumpedError)
        for text in ["\(part)", String(reflecting: part), dumped, dumpedError, "\(error)", error.debugDescription] {
            XCTAssertFalse(text.contains("s3cr3t"), text)
        }
        XCTAssertTrue("\(part)".contains("api.example.com/files/7"), "\(part)")
    }

    /// Which fields are validators, and which ranges continue a part.
    func testItReadsValidatorsAndRanges() throws {
        func head(_ fields: [(String, String)]) -> ResponseHead {
            ResponseHead(
                status: 200, headerFields: HeaderFields(fields.map { HeaderField(name: .init($0.0), value: $0.1) }))
        }
        XCTAssertEqual(PartialDownload.validator(of: head([("ETag", "\"a\"")])), "\"a\"")
        let modified = "Tue, 01 Dec 2026 10:00:00 GMT"
        XCTAssertEqual(
            PartialDownload.validator(
                of: head([("ETag", "W/\"a\""), ("Last-Modified", modified), ("Date", "Tue, 01 Dec 2026 10:00:01 GMT")])),
            modified)
        // A date is strong only a second or more before the answer's (RFC 9110 §8.8.2.2).
        XCTAssertNil(PartialDownload.validator(of: head([("Last-Modified", modified)])))
        XCTAssertNil(PartialDownload.validator(of: head([("Last-Modified", modified), ("Date", modified)])))
        XCTAssertNil(PartialDownload.validator(of: head([("Last-Modified", "yesterday"), ("Date", modified)])))
        XCTAssertNil(PartialDownload.validator(of: head([("ETag", "W/\"a\"")])))
        XCTAssertNil(PartialDownload.validator(of: head([])))

        let part = try partial(Data("abcd".utf8))
        XCTAssertNil(part.rangeProblem("bytes 4-9/10"))
        XCTAssertNil(part.rangeProblem("bytes 4-9/*"))
        XCTAssertNotNil(part.rangeProblem("bytes 0-9/10"))
        XCTAssertNotNil(part.rangeProblem("bytes 4-9/12"), "another length: another body")
        XCTAssertNotNil(part.rangeProblem(nil))
        XCTAssertNotNil(part.rangeProblem("bytes 4-9"))
        XCTAssertNotNil(part.rangeProblem("items 4-9/10"))
        XCTAssertNotNil(part.rangeProblem("bytes 4-6/10"), "stops before the end")
        XCTAssertNil(part.rangeProblem("bytes 4-9/10", length: 6))
        XCTAssertNotNil(part.rangeProblem("bytes 4-9/10", length: 3), "fewer bytes than the range names")
        XCTAssertNotNil(part.rangeProblem("bytes 4-9/*", length: 7), "more bytes than the range names")
        let ranged = head([("Content-Range", "bytes 5-9/10")])
        XCTAssertNil(PartialDownload.problem(resuming: nil, askedRange: true, head: ranged, length: 5))
        XCTAssertNotNil(PartialDownload.problem(resuming: nil, askedRange: false, head: ranged, length: 5))
        // The rest of another version of the body (a server that ignored `If-Range`) does not go on from the part.
        let rest = [("Content-Range", "bytes 4-9/10")]
        XCTAssertNil(PartialDownload.problem(resuming: part, askedRange: true, head: head(rest), length: 6))
        XCTAssertNil(part.validatorProblem(of: head(rest + [("ETag", "\"v1\"")])))
        XCTAssertNotNil(part.validatorProblem(of: head(rest + [("ETag", "\"v2\"")])))
        XCTAssertNotNil(part.validatorProblem(of: head(rest + [("ETag", "W/\"v1\"")])), "a weak one is no match")
        XCTAssertNotNil(
            PartialDownload.problem(resuming: part, askedRange: true, head: head(rest + [("ETag", "v2")]), length: 6))
        XCTAssertNil(part.validatorProblem(of: head(rest + [("Last-Modified", "Tue, 01 Dec 2026 10:00:00 GMT")])))
        let dated = PartialDownload(
            bytesReceived: 4, fileURL: part.fileURL, validator: "Tue, 01 Dec 2026 10:00:00 GMT",
            source: try XCTUnwrap(URL(string: "https://api.example.com/files/7")), totalLength: 10)
        XCTAssertNil(dated.validatorProblem(of: head(rest + [("Last-Modified", "Tue, 01 Dec 2026 10:00:00 GMT")])))
        XCTAssertNil(dated.validatorProblem(of: head(rest + [("ETag", "\"v9\"")])), "kept under a date: the date")
        XCTAssertNotNil(dated.validatorProblem(of: head(rest + [("Last-Modified", "Wed, 02 Dec 2026 10:00:00 GMT")])))
        XCTAssertNil(PartialDownload.rangeLength("bytes 0-\(Int64.max)/*"), "more than an Int64 counts")
        XCTAssertEqual(PartialDownload.rangeLength("bytes 4-9/10"), 6)
        XCTAssertEqual(PartialDownload.unsatisfiedLength("bytes */4"), 4)
        XCTAssertNil(PartialDownload.unsatisfiedLength("bytes 0-3/4"))
    }

    /// A `Content-Range` the server controls is refused when RFC 9110 §14.4 says it is invalid, never read as numbers
    /// that overflow: a negative complete length, `Int64.min`, stopped the process on the last byte's check when the
    /// first answer had no length.
    func testAnInvalidContentRangeIsAProblemNotACrash() throws {
        let unsized = try partial(Data("abcd".utf8), total: nil)
        for field in [
            "bytes 4-9/-9223372036854775808", "bytes 4-9/-1", "bytes 4-9/9", "bytes 4-9/0", "bytes +4-9/10",
            "bytes 4-+9/10", "bytes 4-9/+10", "bytes 4-9/ 10", "bytes 4-9/99999999999999999999",
        ] {
            XCTAssertNotNil(unsized.rangeProblem(field), field)
            XCTAssertNil(PartialDownload.contentRange(field), field)
        }
        XCTAssertNil(unsized.rangeProblem("bytes 4-9/10"))
        XCTAssertNil(unsized.rangeProblem("bytes 4-\(Int64.max - 1)/\(Int64.max)"))
        XCTAssertNil(PartialDownload.unsatisfiedLength("bytes */-4"))
        XCTAssertNil(PartialDownload.unsatisfiedLength("bytes */+4"))
    }

    /// A client over a ``FakeTransport`` that answers `/files/7` with the last 6 of its 10 bytes (`efghij`, a 206),
    /// and the destination to download to.
    private func inMemoryResume() -> (FakeTransport, Connect, URL) {
        let fake = FakeTransport()
        let connect = Connect(
            transport: fake, retryPolicy: nil,
            configuration: ServerConfiguration(scheme: .https, host: "api.example.com"))
        fake.stub(
            "/files/7",
            with: .data(Data("efghij".utf8), status: 206, headers: ["Content-Range": "bytes 4-9/10", "ETag": "\"v1\""]))
        return (fake, connect, folder.appendingPathComponent("file.bin"))
    }

    /// Through a transport that answers in memory, a 206 is written after the part and a 200 alone; the request
    /// carries `Range` and `If-Range`.
    func testAResumeThroughAnInMemoryTransport() throws {
        let (fake, connect, destination) = inMemoryResume()
        let part = try partial(Data("abcd".utf8))
        XCTAssertEqual(
            try connect.download(Route("/files/7"), to: destination, resuming: part).wait(timeout: 10), destination)
        XCTAssertEqual(try Data(contentsOf: destination), Data("abcdefghij".utf8))
        XCTAssertEqual(fake.requests.last?.value(forHTTPHeaderField: "Range"), "bytes=4-")
        XCTAssertEqual(fake.requests.last?.value(forHTTPHeaderField: "If-Range"), "\"v1\"")
        XCTAssertFalse(FileManager.default.fileExists(atPath: part.fileURL.path))

        fake.stub("/files/7", with: .data(Data("whole".utf8)))
        let again = try partial(Data("abcd".utf8))
        XCTAssertEqual(
            try connect.download(Route("/files/7"), to: destination, resuming: again).wait(timeout: 10), destination)
        XCTAssertEqual(try Data(contentsOf: destination), Data("whole".utf8))

        fake.stub("/files/7", with: .data(Data("x".utf8), status: 206, headers: ["Content-Range": "bytes 0-0/10"]))
        let third = try partial(Data("abcd".utf8))
        XCTAssertThrowsError(
            try connect.download(Route("/files/7"), to: destination, resuming: third).wait(timeout: 10)
        ) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .badResponse, "\($0)")
            XCTAssertEqual(($0 as? ConnectError)?.partialDownload, third)
        }
        XCTAssertEqual(try Data(contentsOf: destination), Data("whole".utf8), "the destination is as it was")
    }

    /// A transport that ignores transfer options altogether: the client's download method writes what it answers.
    private struct OptionBlindTransport: Transport {
        let fake: FakeTransport
        func send(_ request: URLRequest) -> Future<ConnectResponse> { fake.send(request) }
        func send(_ request: URLRequest, transfer: TransferOptions) -> Future<ConnectResponse> { fake.send(request) }
    }

    /// Through a transport that answers in memory (the transfer options applied by the core's default, or by the
    /// download method for a transport that ignores them), a 206 that is not the rest of the part's body, or that
    /// answers a download that asked for no range, is refused: the part as it was, the destination not written. A
    /// `Range` the app set itself gets the part it asked for.
    func testAnInMemory206ThatIsNotTheRestOrWasNotAskedForIsRefused() throws {
        let (fake, connect, destination) = inMemoryResume()
        let blind = Connect(
            transport: OptionBlindTransport(fake: fake), retryPolicy: nil,
            configuration: ServerConfiguration(scheme: .https, host: "api.example.com"))
        for client in [connect, blind] {
            XCTAssertThrowsError(try client.download(Route("/files/7"), to: destination).wait(timeout: 10)) {
                XCTAssertEqual(($0 as? ConnectError)?.kind, .badResponse, "\($0)")
                XCTAssertTrue(($0 as? ConnectError)?.message.contains("asked for no range") == true, "\($0)")
            }
            XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path))
        }
        fake.stub(
            "/files/7",
            with: .data(Data("efg".utf8), status: 206, headers: ["Content-Range": "bytes 4-6/10", "ETag": "\"v1\""]))
        for client in [connect, blind] {
            let part = try partial(Data("abcd".utf8))
            XCTAssertThrowsError(
                try client.download(Route("/files/7"), to: destination, resuming: part).wait(timeout: 10)
            ) {
                XCTAssertEqual(($0 as? ConnectError)?.kind, .badResponse, "\($0)")
                XCTAssertEqual(($0 as? ConnectError)?.partialDownload, part)
            }
            XCTAssertEqual(try Data(contentsOf: part.fileURL), Data("abcd".utf8))
            XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path))
        }
        fake.stub(
            "/files/7",
            with: .data(Data("efghij".utf8), status: 206, headers: ["Content-Range": "bytes 4-9/10"]))
        for client in [connect, blind] {
            let ranged = Route("/files/7", headers: [HTTPHeader(name: "Range", value: "bytes=4-")])
            XCTAssertEqual(try client.download(ranged, to: destination).wait(timeout: 10), destination)
            XCTAssertEqual(try Data(contentsOf: destination), Data("efghij".utf8))
            try FileManager.default.removeItem(at: destination)
        }
    }

    /// Through a transport that answers in memory, the size limit and progress count the part with the 206's body:
    /// the whole file. Over the limit, the part comes back untouched and the destination is not written.
    func testAnInMemoryResumeCountsThePartForTheLimitAndProgress() throws {
        let (_, connect, destination) = inMemoryResume()
        let part = try partial(Data("abcd".utf8))
        XCTAssertThrowsError(
            try connect.download(
                Route("/files/7"), to: destination, resuming: part, options: RequestOptions(maxResponseBytes: 9)
            ).wait(timeout: 10)
        ) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .responseTooLarge, "\($0)")
            XCTAssertEqual(($0 as? ConnectError)?.partialDownload, part)
        }
        XCTAssertEqual(try Data(contentsOf: part.fileURL), Data("abcd".utf8))
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path))

        let reports = Protected<[TransferProgress]>([])
        let options = RequestOptions(
            maxResponseBytes: 10, progress: { report in reports.withLock { $0.append(report) } })
        XCTAssertEqual(
            try connect.download(Route("/files/7"), to: destination, resuming: part, options: options).wait(
                timeout: 10),
            destination)
        XCTAssertEqual(try Data(contentsOf: destination), Data("abcdefghij".utf8))
        XCTAssertEqual(reports.snapshot.last?.bytesReceived, 10, "\(reports.snapshot)")
        XCTAssertEqual(reports.snapshot.last?.totalBytesToReceive, 10, "\(reports.snapshot)")
    }

    /// Recorded, a resumed download keeps in the recording the 206's body the server sent (not the whole file, which
    /// starts with the part): its replay, resuming the same part, writes the whole file again.
    func testARecordedResumeRecordsTheRestAndReplaysTheWholeFile() throws {
        let fake = FakeTransport()
        fake.stub(
            "/files/7",
            with: .data(
                Data("efghij".utf8), status: 206,
                headers: ["Content-Range": "bytes 4-9/10", "ETag": "\"v1\"", "Content-Length": "6"]))
        let har = folder.appendingPathComponent("resume.har")
        let destination = folder.appendingPathComponent("file.bin")
        func connect(_ transport: any Transport) -> Connect {
            Connect(
                transport: transport, retryPolicy: nil,
                configuration: ServerConfiguration(scheme: .https, host: "api.example.com"))
        }
        let recorder = RecordingTransport(fileURL: har, wrapping: fake, mode: .record)
        XCTAssertEqual(
            try connect(recorder).download(Route("/files/7"), to: destination, resuming: try partial(Data("abcd".utf8)))
                .wait(timeout: 10), destination)
        XCTAssertEqual(try Data(contentsOf: destination), Data("abcdefghij".utf8))
        XCTAssertEqual(try HAR(contentsOf: har).log.entries.first?.response.content.data, Data("efghij".utf8))

        try FileManager.default.removeItem(at: destination)
        let replay = RecordingTransport(fileURL: har, mode: .replay)
        let part = try partial(Data("abcd".utf8))
        XCTAssertEqual(
            try connect(replay).download(Route("/files/7"), to: destination, resuming: part).wait(timeout: 10),
            destination)
        XCTAssertEqual(try Data(contentsOf: destination), Data("abcdefghij".utf8))
        XCTAssertFalse(FileManager.default.fileExists(atPath: part.fileURL.path), "the part was used up")
    }

    /// A part kept where it was written (its destination on another file system than the temporary directory) is the
    /// part's file: the exchange failing as it is salvaged (its next write meets the closed file) discards the
    /// download's file, which removed the part handed to the call.
    func testAPartKeptInPlaceOutlivesTheDownloadsDiscard() throws {
        let elsewhere = try folderOnAnotherFileSystem(named: "part")
        defer { try? FileManager.default.removeItem(at: elsewhere) }
        let file = try DownloadFile(besides: elsewhere.appendingPathComponent("movie.bin"))
        try file.write(Data("abcd".utf8))
        let keeping = PartialKeeping(
            validator: "\"v1\"", source: ShownURL(url: try XCTUnwrap(URL(string: "https://api.example.com/m"))),
            totalLength: 10)
        let part = try XCTUnwrap(file.keep(keeping))
        XCTAssertEqual(part.fileURL.deletingLastPathComponent().path, elsewhere.path)
        // When: the exchange's next write fails on the closed file, and the exchange discards its file
        XCTAssertThrowsError(try file.write(Data("efgh".utf8)))
        file.discard()
        // Then
        XCTAssertEqual(try Data(contentsOf: part.fileURL), Data("abcd".utf8))
    }
}
