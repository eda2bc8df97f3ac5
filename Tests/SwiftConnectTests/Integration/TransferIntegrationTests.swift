import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// Uploads, downloads, limits and progress through real URLSession to LocalServer, checked by the server's
/// own multipart parser and SHA-256.
final class TransferIntegrationTests: IntegrationTestCase {
    private var server: LocalServer!
    private var connect: Connect!
    private var temporaryFiles: [URL] = []

    override func setUpWithError() throws {
        server = try LocalServer.started()
        connect = Connect(
            transport: TransportUnderTest.make(),
            retryPolicy: nil,
            configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: server.port)
        )
        // Answers with what the server's own parser saw: name, filename, type, size and SHA-256 of each part.
        server.route("POST", "/upload") { request in
            guard let type = request.header("Content-Type") else { return .status(400) }
            do {
                let parts = try MultipartParser.parse(request.body, contentType: type)
                return .json(
                    parts.map {
                        ReceivedPart(
                            $0.name, $0.filename, $0.contentType, $0.data.count, SHA256.hex(SHA256.hash($0.data)))
                    })
            } catch {
                return .json(string: #"{"error":"\#(error)"}"#, status: 400)
            }
        }
        server.streamingRoute("POST", "/upload-stream") { request, body in
            guard let type = request.header("Content-Type") else { return .status(400) }
            do {
                let parts = try MultipartParser.parseStreaming(body, contentType: type)
                return .json(
                    parts.map { ReceivedPart($0.name, $0.filename, $0.contentType, $0.byteCount, $0.sha256Hex) })
            } catch {
                return .json(string: #"{"error":"\#(error)"}"#, status: 400)
            }
        }
    }

    override func tearDown() {
        server.stop()
        for file in temporaryFiles { try? FileManager.default.removeItem(at: file) }
    }

    private func temporaryURL(_ suffix: String) -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("SC-\(UUID().uuidString)-\(suffix)")
        temporaryFiles.append(url)
        return url
    }

    private struct ReceivedPart: Codable, Equatable, Sendable {
        let name: String
        let filename: String?
        let contentType: String?
        let size: Int
        let sha256: String
        init(_ name: String, _ filename: String?, _ contentType: String?, _ size: Int, _ sha256: String) {
            self.name = name
            self.filename = filename
            self.contentType = contentType
            self.size = size
            self.sha256 = sha256
        }
    }

    func testServerParsesEveryPartExactly() throws {
        let binary =
            Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }) + Data("\r\n--SwiftConnect-\r\n".utf8)
        let files = [
            File(name: "note.txt", key: "small", mimeType: .plainText, data: Data("hello".utf8)),
            File(name: "empty.bin", key: "empty", mimeType: .octetStream, data: Data()),
            File(name: "blob.bin", key: "binary", mimeType: .octetStream, data: binary),
            File(name: "we\"ird\\name\r\n.pdf", key: "quote\"key", mimeType: .pdf, data: Data([1, 2, 3])),
            File(name: "résumé 📄.pdf", key: "ünïcode", mimeType: .pdf, data: Data([4, 5])),
        ]
        let received = try connect.upload(
            files: files, fields: [("title", "Holiday ☀️")], to: Route("/upload", method: .post)
        )
        .decoded(toType: [ReceivedPart].self)
        .wait()

        var expected = [
            ReceivedPart("title", nil, nil, "Holiday ☀️".utf8.count, SHA256.hex(SHA256.hash(Data("Holiday ☀️".utf8))))
        ]
        for file in files {
            guard case .data(let data) = file.content else { return XCTFail("in-memory files only") }
            expected.append(
                ReceivedPart(file.key, file.name, file.mimeType.rawValue, data.count, SHA256.hex(SHA256.hash(data))))
        }
        XCTAssertEqual(received, expected)
    }

    func testDiskFileIsStreamedAndArrivesIntact() throws {
        let source = temporaryURL("source.bin")
        let size = 3 << 20
        try LocalServer.writeGeneratedBytes(count: size, seed: 11, to: source)
        let received = try connect.upload(
            files: [File(key: "blob", fileURL: source)], to: Route("/upload-stream", method: .post)
        )
        .decoded(toType: [ReceivedPart].self)
        .wait(timeout: 60)
        XCTAssertEqual(received.first?.size, size)
        XCTAssertEqual(received.first?.filename, source.lastPathComponent)
        XCTAssertEqual(received.first?.sha256, SHA256.hex(LocalServer.generatedBytesSHA256(count: size, seed: 11)))
    }

    /// The stated bound: streaming a 256 MiB file keeps the process's resident memory within 64 MiB of where
    /// it started (client and server both run in this process). A figure, not a timing.
    func testLargeStreamedUploadKeepsMemoryBounded() throws {
        let size = ProcessMemory.isSanitized ? 32 << 20 : 256 << 20
        let source = temporaryURL("large.bin")
        try LocalServer.writeGeneratedBytes(count: size, seed: 5, to: source)
        let expectedHash = SHA256.hex(LocalServer.generatedBytesSHA256(count: size, seed: 5))
        guard let before = ProcessMemory.residentBytes() else { throw XCTSkip("no /proc/self/status here") }

        let sampler = MemorySampler()
        let received = try connect.upload(
            files: [File(key: "video", fileURL: source)], to: Route("/upload-stream", method: .post)
        )
        .decoded(toType: [ReceivedPart].self)
        .wait(timeout: 600)
        let peak = sampler.stop()

        XCTAssertEqual(received.first?.size, size)
        XCTAssertEqual(received.first?.sha256, expectedHash)
        let growth = peak - before
        print(
            "Streamed upload of \(size >> 20) MiB: resident memory \(before >> 20) MiB before, peak \(peak >> 20) MiB (+\(growth >> 20) MiB)"
        )
        if !ProcessMemory.isSanitized {
            XCTAssertLessThan(growth, 64 << 20, "memory grew by \(growth >> 20) MiB")
        }
    }

    /// A body made by an async sequence streams: 256 MiB produced 64 KiB at a time reach the server whole, and the
    /// process's resident memory stays within 64 MiB of where it started (the body is never held whole).
    func testALargeBodyFromASequenceStreamsWithMemoryBounded() throws {
        let count = ProcessMemory.isSanitized ? 512 : 4096  // chunks of 64 KiB: 32 or 256 MiB
        let chunk = Data((0..<(64 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 17 &+ 3) })
        var expected = SHA256()
        for _ in 0..<count { expected.update(chunk) }
        server.streamingRoute("PUT", "/blob") { _, body in
            var hash = SHA256()
            var size = 0
            while let piece = body.read(maxBytes: 64 << 10) {
                hash.update(piece)
                size += piece.count
            }
            return .text("\(size) \(hash.hexDigest) \(body.isComplete)")
        }
        let produced = ChunkCount()
        let body = ConnectRequest.OneShotStream(
            ProducedChunks(chunk: chunk, count: count, produced: produced), length: Int64(count * chunk.count))
        var request = ConnectRequest(
            method: .put, url: server.baseURL.appendingPathComponent("blob"), body: .stream(body),
            timeoutInterval: 600)
        request.headerFields["Content-Type"] = "application/octet-stream"
        guard let before = ProcessMemory.residentBytes() else { throw XCTSkip("no /proc/self/status here") }

        let sampler = MemorySampler()
        let response = try connect.response(for: request, name: "blob").wait(timeout: 600)
        let peak = sampler.stop()

        XCTAssertEqual(
            String(decoding: response.data, as: UTF8.self), "\(count * chunk.count) \(expected.hexDigest) true")
        XCTAssertEqual(produced.value, count)
        let growth = peak - before
        print(
            "Body of \((count * chunk.count) >> 20) MiB from a sequence: resident memory \(before >> 20) MiB before, "
                + "peak \(peak >> 20) MiB (+\(growth >> 20) MiB)")
        if !ProcessMemory.isSanitized {
            XCTAssertLessThan(growth, 64 << 20, "memory grew by \(growth >> 20) MiB")
        }
    }

    func testDownloadToDiskMatchesByteForByte() throws {
        let size = 8 << 20
        server.route("GET", "/big") { _ in .generatedBytes(count: size, seed: 3) }
        let destination = temporaryURL("download.bin")
        let file = try connect.download(Route("/big"), to: destination).wait(timeout: 60)
        XCTAssertEqual(file, destination)
        let data = try Data(contentsOf: destination)
        XCTAssertEqual(data.count, size)
        XCTAssertEqual(SHA256.hash(data), LocalServer.generatedBytesSHA256(count: size, seed: 3))
        XCTAssertTrue(
            try FileManager.default.contentsOfDirectory(atPath: destination.deletingLastPathComponent().path)
                .filter { $0.hasPrefix(".\(destination.lastPathComponent)") }.isEmpty,
            "no temporary file is left behind"
        )
    }

    func testDownloadReplacesAnExistingFile() throws {
        server.route("GET", "/file") { _ in .data(Data("new contents".utf8)) }
        let destination = temporaryURL("existing.bin")
        try Data("old contents".utf8).write(to: destination)
        XCTAssertEqual(try connect.download(Route("/file"), to: destination).wait(timeout: 60), destination)
        XCTAssertEqual(try Data(contentsOf: destination), Data("new contents".utf8))
    }

    /// A download over a file only its owner may read keeps it so: the new file is never more open than the old one
    /// (it was created 0644, readable by every local user, and replaced the 0600 file with it).
    func testADownloadOverAPrivateFileKeepsItPrivate() throws {
        server.route("GET", "/file") { _ in .data(Data("new secret".utf8)) }
        let destination = temporaryURL("private.bin")
        try Data("old secret".utf8).write(to: destination)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: destination.path)
        XCTAssertEqual(try connect.download(Route("/file"), to: destination).wait(timeout: 60), destination)
        XCTAssertEqual(try Data(contentsOf: destination), Data("new secret".utf8))
        let mode = try FileManager.default.attributesOfItem(atPath: destination.path)[.posixPermissions] as? NSNumber
        XCTAssertEqual(mode?.intValue, 0o600)
    }

    /// A destination whose name is near the 255-byte limit is written (the temporary file's name, built from it, went
    /// over the limit, and the download failed once the request had gone out).
    func testADownloadToALongFileNameIsWritten() throws {
        server.route("GET", "/file") { _ in .data(Data("payload".utf8)) }
        let destination = temporaryURL(String(repeating: "r", count: 196) + ".bin")
        XCTAssertEqual(destination.lastPathComponent.utf8.count, 240)
        XCTAssertEqual(try connect.download(Route("/file"), to: destination).wait(timeout: 60), destination)
        XCTAssertEqual(try Data(contentsOf: destination), Data("payload".utf8))
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: destination.deletingLastPathComponent().path)
                .filter { $0.hasPrefix("." + destination.lastPathComponent.prefix(40)) }, [],
            "no temporary file is left behind")
    }

    /// A download onto an existing directory deleted it, with everything in it.
    func testDownloadOntoAnExistingDirectoryIsRefusedBeforeAnythingIsSent() throws {
        server.route("GET", "/file") { _ in .data(Data("payload".utf8)) }
        let folder = temporaryURL("folder")
        let precious = folder.appendingPathComponent("precious.txt")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data("user data".utf8).write(to: precious)
        XCTAssertThrowsError(try connect.download(Route("/file"), to: folder).wait(timeout: 60)) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess)
        }
        XCTAssertEqual(server.requestCount, 0)
        XCTAssertEqual(try Data(contentsOf: precious), Data("user data".utf8))
    }

    /// A directory that appears at the destination while the body arrives is kept: the download fails.
    func testADirectoryAppearingDuringADownloadIsKept() throws {
        server.route("GET", "/file") { _ in .data(Data("payload".utf8)) }
        let folder = temporaryURL("appearing")
        let precious = folder.appendingPathComponent("precious.txt")
        let made = Recorder<Bool>()
        let options = RequestOptions(progress: { _ in
            guard made.values.isEmpty else { return }
            made.append(true)
            try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try? Data("user data".utf8).write(to: precious)
        })
        XCTAssertThrowsError(try connect.download(Route("/file"), to: folder, options: options).wait(timeout: 60)) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess)
        }
        XCTAssertEqual(made.values, [true])
        XCTAssertEqual(try Data(contentsOf: precious), Data("user data".utf8))
        XCTAssertEqual(try Self.leftovers(of: folder), [], "no temporary file is left behind")
    }

    /// A cancellation that lands once the finished download is in place (during the last progress report) is what
    /// the future reports, and the new file stays: removing it would leave nothing where the old one was.
    func testACancellationAfterTheFileIsInPlaceKeepsTheNewFile() throws {
        server.route("GET", "/file") { _ in .data(Data("new contents".utf8)) }
        let destination = temporaryURL("placed.bin")
        try Data("old contents".utf8).write(to: destination)
        let download = Recorder<Future<URL>>()
        let cancelled = Recorder<Bool>()
        let options = RequestOptions(progress: { _ in
            guard cancelled.values.isEmpty, (try? Data(contentsOf: destination)) == Data("new contents".utf8),
                let future = download.values.first
            else { return }
            cancelled.append(true)
            future.cancel()
        })
        download.append(connect.download(Route("/file"), to: destination, options: options))

        XCTAssertThrowsError(try download.values.first?.wait(timeout: 60)) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .cancelled, "\($0)")
        }
        XCTAssertEqual(cancelled.values, [true])
        XCTAssertEqual(try Data(contentsOf: destination), Data("new contents".utf8))
        XCTAssertEqual(try Self.leftovers(of: destination), [], "no temporary file is left behind")
    }

    /// When the finished download cannot be moved into place, the file it would have replaced is still there.
    func testAFailedMoveKeepsTheFileItWouldHaveReplaced() throws {
        // Chunked: with no declared length, the report of the body's bytes comes before the move (the end of a body
        // of declared length is reported only once the file is in place).
        server.route("GET", "/file") { _ in .data(Data("new contents".utf8)).withFault(.chunked) }
        let destination = temporaryURL("kept.bin")
        try Data("old contents".utf8).write(to: destination)
        let folder = destination.deletingLastPathComponent()
        let removed = Recorder<String>()
        // Take the temporary file away once the body is in it: the final move must fail.
        let options = RequestOptions(progress: { report in
            guard removed.values.isEmpty, report.bytesReceived > 0 else { return }
            for name in (try? Self.leftovers(of: destination)) ?? [] {
                try? FileManager.default.removeItem(at: folder.appendingPathComponent(name))
                removed.append(name)
            }
        })
        let download = connect.download(Route("/file"), to: destination, options: options)
        XCTAssertThrowsError(try download.wait(timeout: 60)) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess)
        }
        XCTAssertEqual(removed.values.count, 1)
        XCTAssertEqual(try Data(contentsOf: destination), Data("old contents".utf8))
    }

    /// A destination in a folder that does not exist was reported as a permission problem.
    func testDownloadIntoAMissingFolderSaysSoBeforeAnythingIsSent() {
        server.route("GET", "/file") { _ in .data(Data("payload".utf8)) }
        let destination = temporaryURL("missing-folder").appendingPathComponent("x.bin")
        XCTAssertThrowsError(try connect.download(Route("/file"), to: destination).wait(timeout: 60)) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .fileAccess)
            XCTAssertTrue((error as? ConnectError)?.message.contains("does not exist") ?? false, "\(error)")
            XCTAssertFalse("\(error)".contains("permission"), "\(error)")
        }
        XCTAssertEqual(server.requestCount, 0)
    }

    /// A destination whose folder is a regular file (no folder can be made there, for root too) is refused before the
    /// request is sent, saying so, not once the answer's head has come.
    func testDownloadUnderARegularFileIsRefusedBeforeAnythingIsSent() throws {
        server.route("GET", "/file") { _ in .data(Data("payload".utf8)) }
        let notAFolder = temporaryURL("regular-file")
        try Data("user data".utf8).write(to: notAFolder)
        let destination = notAFolder.appendingPathComponent("x.bin")
        XCTAssertThrowsError(try connect.download(Route("/file"), to: destination).wait(timeout: 60)) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .fileAccess)
            XCTAssertTrue((error as? ConnectError)?.message.contains("is not a folder") ?? false, "\(error)")
        }
        XCTAssertEqual(server.requestCount, 0)
        XCTAssertEqual(try Data(contentsOf: notAFolder), Data("user data".utf8))
    }

    /// The folder goes away after the request is sent and before the answer arrives: the error says so.
    func testAFolderRemovedBeforeTheAnswerIsReportedAsMissing() throws {
        let folder = temporaryURL("vanishing")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        server.route("GET", "/file") { _ in
            try? FileManager.default.removeItem(at: folder)
            return .data(Data("payload".utf8))
        }
        let destination = folder.appendingPathComponent("x.bin")
        XCTAssertThrowsError(try connect.download(Route("/file"), to: destination).wait(timeout: 60)) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .fileAccess)
            XCTAssertTrue((error as? ConnectError)?.message.contains("does not exist") ?? false, "\(error)")
            XCTAssertFalse("\(error)".contains("permission"), "\(error)")
        }
        XCTAssertEqual(server.requestCount, 1)
    }

    /// The names of the temporary download files of `destination`, left in its folder.
    private static func leftovers(of destination: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: destination.deletingLastPathComponent().path)
            .filter { $0.hasPrefix(".\(destination.lastPathComponent).") && $0.hasSuffix(".download") }
    }

    func testDownloadOfAnErrorStatusReportsTheServerMessageAndWritesNothing() {
        server.route("GET", "/missing") { _ in .json(string: #"{"message":"no such report"}"#, status: 404) }
        let destination = temporaryURL("missing.bin")
        XCTAssertThrowsError(try connect.download(Route("/missing"), to: destination).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.message, "no such report")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path))
    }

    func testSizeLimitFiresOnADeclaredLength() {
        server.route("GET", "/declared") { _ in .generatedBytes(count: 4 << 20, seed: 1) }
        let limited = RequestOptions(maxResponseBytes: 1 << 20)
        XCTAssertThrowsError(try connect.request(Route("/declared"), options: limited).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .responseTooLarge)
            XCTAssertEqual((error as? ConnectError)?.statusCode, 200)
        }
    }

    /// A negative limit is a mistake in the call, not a body too large: it failed even an empty body with "exceeds
    /// the limit of -1 bytes", after sending the request.
    func testANegativeSizeLimitFailsTheCallUnsent() {
        server.route("GET", "/empty") { _ in .status(204) }
        let negative = RequestOptions(maxResponseBytes: -1)
        XCTAssertThrowsError(try connect.request(Route("/empty"), options: negative).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .invalidRequest)
        }
        XCTAssertTrue(server.requests.isEmpty)
    }

    /// A declared length over the limit stops the transfer, not only the future: the body the server goes on
    /// writing once the client has given up is refused (the connection is gone), rather than received and dropped.
    func testSizeLimitOnADeclaredLengthStopsTheTransfer() throws {
        let clientFailed = DispatchSemaphore(value: 0)
        let producerDone = expectation(description: "server finished writing")
        let pieceCount = 1 << 10  // 64 MiB in all
        let piecesSent = Guarded(0)
        server.route("GET", "/declared-endless") { _ in
            .stream(contentLength: pieceCount << 16) { write in
                let piece = Data(count: 1 << 16)
                // The head is out: hold the body back until the client has given up on it.
                _ = clientFailed.wait(timeout: .now() + 60)
                for _ in 0..<pieceCount {
                    guard write(piece) else { break }
                    piecesSent.withLock { $0 += 1 }
                }
                producerDone.fulfill()
            }
        }
        server.route("GET", "/small") { _ in .json(["ok": true]) }
        let limitedClient = sizeLimitedClient(maxResponseBytes: 1 << 20)
        XCTAssertThrowsError(try limitedClient.request(Route("/declared-endless")).wait(timeout: 60)) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .responseTooLarge)
        }
        clientFailed.signal()
        wait(for: [producerDone], timeout: 60)
        // Socket buffers take a few MiB at most; a client that kept reading takes all 1,024 pieces.
        XCTAssertLessThan(piecesSent.snapshot, pieceCount / 2, "the client stopped reading the body")
        XCTAssertNoThrow(try limitedClient.request(Route("/small")).wait(timeout: 30), "the client keeps working")
    }

    /// A body of unknown length over the limit: the request fails as soon as the limit is passed, while the
    /// server is still holding back the rest of the body, which is then discarded, not kept.
    func testSizeLimitFailsAnUndeclaredBodyAsSoonAsItIsExceeded() throws {
        let clientFailed = DispatchSemaphore(value: 0)
        let producerDone = expectation(description: "server finished writing")
        server.route("GET", "/endless") { _ in
            .stream(contentLength: nil) { write in
                let piece = Data(count: 64 << 10)
                for index in 0..<(1 << 10) {  // 64 MiB in all
                    // After 8 MiB, hold on until the client has given up: the failure cannot wait for the end.
                    if index == 128 { _ = clientFailed.wait(timeout: .now() + 60) }
                    guard write(piece) else { break }
                }
                producerDone.fulfill()
            }
        }
        server.route("GET", "/small") { _ in .json(["ok": true]) }
        let limitedClient = sizeLimitedClient(maxResponseBytes: 2 << 20)
        XCTAssertThrowsError(try limitedClient.request(Route("/endless")).wait(timeout: 60)) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .responseTooLarge)
        }
        clientFailed.signal()
        wait(for: [producerDone], timeout: 60)
        XCTAssertNoThrow(try limitedClient.request(Route("/small")).wait(timeout: 30), "the client keeps working")
    }

    /// A new, empty folder for a download, removed after the test.
    private func emptyFolder() throws -> URL {
        let folder = temporaryURL("folder")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    private func trickling() {
        server.route("GET", "/trickle") { _ in
            LocalServer.Response(fault: .trickle(chunk: Data(repeating: 1, count: 1000), interval: 0.05))
        }
    }

    /// A download that failed part-way left its partial `.download` file beside the destination when its future
    /// completed; it went only later, when the task's completion came.
    func testADownloadThatTimesOutLeavesNoPartialFileWhenItFails() throws {
        trickling()
        let folder = try emptyFolder()
        let received = expectation(description: "part of the body arrived")
        received.assertForOverFulfill = false
        let download = connect.download(
            Route("/trickle", timeout: 1), to: folder.appendingPathComponent("report.bin"),
            options: RequestOptions(progress: { if $0.bytesReceived > 0 { received.fulfill() } }))
        wait(for: [received], timeout: 10)
        XCTAssertThrowsError(try download.wait(timeout: 20)) { XCTAssertEqual(($0 as? ConnectError)?.kind, .timedOut) }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
    }

    func testACancelledDownloadLeavesNoPartialFile() throws {
        trickling()
        let folder = try emptyFolder()
        let received = expectation(description: "part of the body arrived")
        received.assertForOverFulfill = false
        let download = connect.download(
            Route("/trickle"), to: folder.appendingPathComponent("report.bin"),
            options: RequestOptions(progress: { if $0.bytesReceived > 0 { received.fulfill() } }))
        wait(for: [received], timeout: 10)
        download.cancel()
        XCTAssertThrowsError(try download.wait(timeout: 20)) { XCTAssertEqual(($0 as? ConnectError)?.kind, .cancelled) }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
    }

    func testADownloadOverTheLimitLeavesNoPartialFileWhenItFails() throws {
        server.route("GET", "/undeclared") { _ in
            .stream(contentLength: nil) { write in
                for _ in 0..<64 { guard write(Data(count: 64 << 10)) else { break } }
            }
        }
        let folder = try emptyFolder()
        let download = connect.download(
            Route("/undeclared"), to: folder.appendingPathComponent("report.bin"),
            options: RequestOptions(maxResponseBytes: 100_000))
        XCTAssertThrowsError(try download.wait(timeout: 20)) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .responseTooLarge)
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
    }

    func testProgressIsOrderedAndReachesCompletion() throws {
        let size = 2 << 20
        server.route("GET", "/progress") { _ in .generatedBytes(count: size, seed: 9) }
        let downloads = Recorder<TransferProgress>()
        let destination = temporaryURL("progress.bin")
        _ = try connect.download(
            Route("/progress"), to: destination, options: RequestOptions(progress: { downloads.append($0) })
        )
        .wait(timeout: 60)
        let received = downloads.values.map(\.bytesReceived)
        XCTAssertEqual(received, received.sorted(), "reports are in order")
        XCTAssertEqual(downloads.values.last?.downloadFraction, 1)
        XCTAssertEqual(downloads.values.last?.bytesReceived, Int64(size))

        let uploads = Recorder<TransferProgress>()
        let file = File(name: "p.bin", key: "p", mimeType: .octetStream, data: Data(count: 1 << 20))
        _ = try connect.upload(
            files: [file], fields: [], to: Route("/upload", method: .post),
            options: RequestOptions(progress: { uploads.append($0) })
        )
        .wait(timeout: 60)
        let sent = uploads.values.map(\.bytesSent)
        XCTAssertEqual(sent, sent.sorted())
        XCTAssertEqual(uploads.values.last?.uploadFraction, 1)
        XCTAssertGreaterThan(uploads.values.last?.bytesSent ?? 0, 1 << 20)
    }

    /// A client of `server` that never retries, with a size limit on every response.
    private func sizeLimitedClient(maxResponseBytes: Int) -> Connect {
        Connect(
            transport: TransportUnderTest.make(), retryPolicy: nil,
            configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: server.port),
            settings: Connect.Settings(maxResponseBytes: maxResponseBytes))
    }
}

/// `count` copies of `chunk`, each made when asked for (an upload produced as it goes), counted in `produced`.
private struct ProducedChunks: AsyncSequence, Sendable {
    typealias Element = Data
    let chunk: Data
    let count: Int
    let produced: ChunkCount

    func makeAsyncIterator() -> Iterator { Iterator(chunk: chunk, remaining: count, produced: produced) }

    struct Iterator: AsyncIteratorProtocol {
        let chunk: Data
        var remaining: Int
        let produced: ChunkCount

        mutating func next() async -> Data? {
            guard remaining > 0 else { return nil }
            remaining -= 1
            produced.increment()
            // A fresh copy each time, as a producer reading a source would make.
            return Data(chunk)
        }
    }
}

/// A count shared by a producer and the test.
// @unchecked Sendable: `lock` protects `count`.
private final class ChunkCount: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }

    func increment() {
        lock.lock()
        count += 1
        lock.unlock()
    }
}
