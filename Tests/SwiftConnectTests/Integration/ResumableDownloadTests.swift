import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// A download cut part-way keeps what arrived (``ConnectError/partialDownload``) when the answer named a validator,
/// and ``Connect/download(_:to:resuming:debugResponse:options:)`` goes on from there with `Range` and `If-Range`,
/// against a server that honours them as RFC 9110 §14 says.
final class ResumableDownloadTests: IntegrationTestCase {
    private var server: LocalServer!
    private var connect: Connect!
    private var folder: URL!
    private var destination: URL!
    private let site = Site()
    private static let body = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) })

    /// What the test server serves, and how it answers the next request.
    private final class Site: @unchecked Sendable {
        // Every field is read and written under `lock`.
        private let lock = NSLock()
        private var _body = ResumableDownloadTests.body
        private var _validator: (name: String, value: String)? = ("ETag", "\"v1\"")
        /// The bytes after which the next answers are cut, one an answer, in order.
        private var _cuts: [Int] = []
        /// How the next request with a `Range` is answered, whatever it asks.
        private var _rangeAnswer: RangeAnswer = .honour
        /// Whether answers are sent chunked, with no `Content-Length`.
        private var _chunked = false
        /// The `Date` answers carry, if any.
        private var _date: String?

        enum RangeAnswer {
            /// `.ignoringIfRange`: the range of the body there now, whatever `If-Range` says.
            case honour, ignore, fromStart, ignoringIfRange
            case unsatisfiedBy(extra: Int64)
        }

        func set(
            body: Data? = nil, validator: (name: String, value: String)?? = nil, cutAfter: Int?? = nil,
            cuts: [Int]? = nil, rangeAnswer: RangeAnswer? = nil, chunked: Bool? = nil, date: String?? = nil
        ) {
            lock.lock()
            defer { lock.unlock() }
            if let body { _body = body }
            if let validator { _validator = validator }
            if let cutAfter { _cuts = cutAfter.map { [$0] } ?? [] }
            if let cuts { _cuts = cuts }
            if let rangeAnswer { _rangeAnswer = rangeAnswer }
            if let chunked { _chunked = chunked }
            if let date { _date = date }
        }

        func answer(_ request: LocalServer.Request) -> LocalServer.Response {
            lock.lock()
            defer { lock.unlock() }
            var headers: [(name: String, value: String)] = [("Content-Type", "application/octet-stream")]
            if let validator = _validator { headers.append(validator) }
            if let date = _date { headers.append(("Date", date)) }
            var status = 200
            var slice = _body
            if let range = request.header("Range"), range.hasPrefix("bytes="), range.hasSuffix("-"),
                let first = Int(range.dropFirst("bytes=".count).dropLast())
            {
                let current = _validator?.value
                switch _rangeAnswer {
                case .ignore: break
                case .fromStart:
                    status = 206
                    headers.append(("Content-Range", "bytes 0-\(_body.count - 1)/\(_body.count)"))
                case .unsatisfiedBy(let extra):
                    // With the version there now, as a server that names it on every answer does.
                    return LocalServer.Response(
                        status: 416,
                        headers: [("Content-Range", "bytes */\(Int64(first) + extra)")]
                            + (_validator.map { [$0] } ?? []))
                // A `Range` without `If-Range` (a caller's own) is honoured whatever the validator.
                case .honour where request.header("If-Range").map { $0 == current && current != nil } ?? true:
                    guard first < _body.count else {
                        return LocalServer.Response(status: 416, headers: [("Content-Range", "bytes */\(_body.count)")])
                    }
                    status = 206
                    slice = _body.subdata(in: first..<_body.count)
                    headers.append(("Content-Range", "bytes \(first)-\(_body.count - 1)/\(_body.count)"))
                case .honour: break
                case .ignoringIfRange:
                    status = 206
                    slice = _body.subdata(in: min(first, _body.count)..<_body.count)
                    headers.append(("Content-Range", "bytes \(first)-\(_body.count - 1)/\(_body.count)"))
                }
            }
            if !_cuts.isEmpty {
                let cut = _cuts.removeFirst()
                if _chunked {
                    // Cut before the last chunk: the client never learns the body's length.
                    let body = slice
                    var response = LocalServer.Response.stream(contentLength: nil, status: status) { write in
                        _ = write(body)
                    }.withFault(.closeMidBody(afterBytes: cut))
                    response.headers += headers.filter { $0.name != "Content-Type" }
                    return response
                }
                return LocalServer.Response(
                    status: status, headers: headers, body: slice, fault: .closeMidBody(afterBytes: cut))
            }
            return LocalServer.Response(
                status: status, headers: headers, body: slice, fault: _chunked ? .chunked : .normal)
        }
    }

    override func setUpWithError() throws {
        server = try LocalServer.started()
        connect = Connect(
            transport: TransportUnderTest.make(), retryPolicy: nil,
            configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: server.port))
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("resume-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        destination = folder.appendingPathComponent("movie.bin")
        server.route("GET", "/movie") { [site] in site.answer($0) }
    }

    override func tearDown() {
        server.stop()
        try? FileManager.default.removeItem(at: folder)
    }

    /// The partial files of ours in the temporary directory.
    private static func partialFiles() -> Set<String> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: FileManager.default.temporaryDirectory.path))
        return Set((names ?? []).filter { $0.hasPrefix("SwiftConnect-partial-") })
    }

    /// Downloads `/movie` cut after `cut` bytes, and returns the part it kept, checked against the body.
    private func cutDownload(after cut: Int = 80_000, file: StaticString = #filePath, line: UInt = #line) throws
        -> PartialDownload
    {
        site.set(cutAfter: cut)
        let result = try connect.download(Route("/movie"), to: destination).waitForResult(timeout: 30)
        guard case .failure(let failure) = result, let error = failure as? ConnectError else {
            XCTFail("the cut download did not fail: \(result)", file: file, line: line)
            throw CancellationError()
        }
        XCTAssertEqual(error.kind, .connectionLost, "\(error)", file: file, line: line)
        let partial = try XCTUnwrap(error.partialDownload, "\(error)", file: file, line: line)
        XCTAssertGreaterThan(partial.bytesReceived, 0, file: file, line: line)
        XCTAssertLessThanOrEqual(partial.bytesReceived, Int64(cut), file: file, line: line)
        let kept = try Data(contentsOf: partial.fileURL)
        XCTAssertEqual(Int64(kept.count), partial.bytesReceived, file: file, line: line)
        XCTAssertEqual(kept, Self.body.prefix(kept.count), "the part is the body's start", file: file, line: line)
        let mode = try FileManager.default.attributesOfItem(atPath: partial.fileURL.path)[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o600, "the part is the owner's only", file: file, line: line)
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path), file: file, line: line)
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: folder.path), [], "nothing left beside it",
            file: file, line: line)
        return partial
    }

    /// Cut, then resumed: the destination holds exactly the whole body, the server was asked for the rest with the
    /// part's validator, and the part's file is gone.
    func testACutDownloadResumesFromItsPart() throws {
        let partial = try cutDownload()
        XCTAssertEqual(
            try connect.download(Route("/movie"), to: destination, resuming: partial).wait(timeout: 30), destination)
        XCTAssertEqual(try Data(contentsOf: destination), Self.body)
        let resume = try XCTUnwrap(server.requests.last)
        XCTAssertEqual(resume.header("Range"), "bytes=\(partial.bytesReceived)-")
        XCTAssertEqual(resume.header("If-Range"), "\"v1\"")
        XCTAssertFalse(FileManager.default.fileExists(atPath: partial.fileURL.path), "the part was used up")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["movie.bin"])
    }

    /// A download resumed into its part's own file (the path, or a link to it) is refused unsent, the part kept: the
    /// whole body replaced the part, which then went as a used part goes, and the call reported a file that was gone.
    func testAResumeIntoItsPartsOwnFileIsRefusedAndKeepsThePart() throws {
        let partial = try cutDownload()
        let requestsBefore = server.requests.count
        let link = folder.appendingPathComponent("link-to-part.bin")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: partial.fileURL)
        for target in [partial.fileURL, link] {
            XCTAssertThrowsError(try connect.download(Route("/movie"), to: target, resuming: partial).wait(timeout: 30))
            {
                XCTAssertEqual(($0 as? ConnectError)?.kind, .invalidRequest, "\($0)")
            }
        }
        XCTAssertEqual(server.requests.count, requestsBefore, "refused before anything is sent")
        XCTAssertEqual(try Data(contentsOf: partial.fileURL).count, Int(partial.bytesReceived), "the part is kept")
        XCTAssertEqual(
            try connect.download(Route("/movie"), to: destination, resuming: partial).wait(timeout: 30), destination)
        XCTAssertEqual(try Data(contentsOf: destination), Self.body)
    }

    /// A download to another file system than the temporary directory's (a tmpfs `/tmp`, an external drive) keeps its
    /// part where it was written, beside the destination: moving it meant copying every byte that arrived, on the
    /// thread that cancelled or timed out the call (a UI freezing for seconds), into a RAM-backed `/tmp` perhaps.
    func testAPartOnAnotherFileSystemThanTheTemporaryDirectoryStaysBesideTheDestination() throws {
        let elsewhere = try folderOnAnotherFileSystem(named: "resume")
        defer { try? FileManager.default.removeItem(at: elsewhere) }
        let target = elsewhere.appendingPathComponent("movie.bin")
        site.set(cutAfter: 80_000)
        let result = try connect.download(Route("/movie"), to: target).waitForResult(timeout: 30)
        guard case .failure(let error as ConnectError) = result else { return XCTFail("\(result)") }
        let partial = try XCTUnwrap(error.partialDownload, "\(error)")
        // Then: kept beside the destination, the owner's only, holding the body's start
        XCTAssertEqual(partial.fileURL.deletingLastPathComponent().path, elsewhere.path)
        let kept = try Data(contentsOf: partial.fileURL)
        XCTAssertEqual(Int64(kept.count), partial.bytesReceived)
        XCTAssertEqual(kept, Self.body.prefix(kept.count))
        let mode = try FileManager.default.attributesOfItem(atPath: partial.fileURL.path)[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o600)
        // And: resumed from there, nothing but the destination is left
        XCTAssertEqual(try connect.download(Route("/movie"), to: target, resuming: partial).wait(timeout: 30), target)
        XCTAssertEqual(try Data(contentsOf: target), Self.body)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path), ["movie.bin"])
    }

    /// A retry clock that says when a retry waits; one that `holds` never runs the retry (no wait is 0 s with it).
    private final class WaitingClock: RetryClock, @unchecked Sendable {
        // `actions` is read and written under `lock`.
        private let lock = NSLock()
        private var actions: [@Sendable () -> Void] = []
        let scheduled = DispatchSemaphore(value: 0)
        let holds: Bool

        init(holds: Bool) { self.holds = holds }

        var now: Date { Date() }

        func schedule(after seconds: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any RetryCancellable {
            if holds {
                lock.lock()
                actions.append(action)
                lock.unlock()
            } else {
                action()
            }
            scheduled.signal()
            return Cancel()
        }

        struct Cancel: RetryCancellable {
            func cancel() {}
        }
    }

    private func retryingClient(attempts: Int, clock: WaitingClock = WaitingClock(holds: false)) -> Connect {
        Connect(
            transport: TransportUnderTest.make(),
            retryPolicy: RetryPolicy(
                maxAttempts: attempts, baseDelay: clock.holds ? 1 : 0, jitter: RetryPolicy.noJitter, clock: clock),
            configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: server.port))
    }

    /// The `Range` start each request asked for (0 for none), in order.
    private func rangeStarts() -> [Int64] {
        server.requests.map { request in
            guard let range = request.header("Range") else { return 0 }
            return Int64(range.dropFirst("bytes=".count).dropLast()) ?? -1
        }
    }

    /// A retry after a cut resumes from the part the cut attempt kept, with its validator, rather than starting
    /// again: three attempts, each from where the one before stopped, write exactly the body; no part is left.
    func testARetryResumesFromThePartTheCutAttemptKept() throws {
        let before = Self.partialFiles()
        site.set(cuts: [80_000, 50_000])
        let connect = retryingClient(attempts: 3)
        XCTAssertEqual(try connect.download(Route("/movie"), to: destination).wait(timeout: 30), destination)
        XCTAssertEqual(try Data(contentsOf: destination), Self.body)
        let starts = rangeStarts()
        XCTAssertEqual(starts.count, 3, "\(starts)")
        XCTAssertEqual(starts.first, 0)
        XCTAssertEqual(starts, starts.sorted(), "each attempt goes on from the one before: \(starts)")
        XCTAssertGreaterThan(starts.last ?? 0, 80_000, "\(starts)")
        XCTAssertEqual(server.requests.dropFirst().map { $0.header("If-Range") }, ["\"v1\"", "\"v1\""])
        XCTAssertEqual(Self.partialFiles(), before, "no part is left")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["movie.bin"])
    }

    /// A download that asks for a range of its own keeps no part when cut: its bytes are the range's, which a retry
    /// (or a resume) took for the body's start, asking for the rest after them: the file was the range's first bytes
    /// and then the body from that count on. The retry asks for the caller's range again.
    func testACutDownloadOfARangeOfItsOwnKeepsNoPartAndItsRetryAsksForTheRangeAgain() throws {
        let before = Self.partialFiles()
        let route = Route("/movie", headers: [HTTPHeader(name: "Range", value: "bytes=100000-")])
        site.set(cuts: [30_000])
        let cut = try connect.download(route, to: destination).waitForResult(timeout: 30)
        guard case .failure(let failure as ConnectError) = cut else { return XCTFail("\(cut)") }
        XCTAssertEqual(failure.kind, .connectionLost, "\(failure)")
        XCTAssertNil(failure.partialDownload, "a part of the range, not of the body")
        XCTAssertEqual(Self.partialFiles(), before)

        site.set(cuts: [30_000])
        XCTAssertEqual(try retryingClient(attempts: 2).download(route, to: destination).wait(timeout: 30), destination)
        XCTAssertEqual(try Data(contentsOf: destination), Self.body.suffix(from: 100_000))
        XCTAssertEqual(rangeStarts().suffix(2), [100_000, 100_000])
        XCTAssertEqual(Self.partialFiles(), before, "no part is left")
    }

    /// The attempts run out: the failure hands over the newest part, which holds every byte so far (the older one is
    /// gone), and resuming it finishes the body.
    func testRetriesThatRunOutHandOverTheNewestPart() throws {
        let before = Self.partialFiles()
        site.set(cuts: [80_000, 50_000])
        let result = try retryingClient(attempts: 2).download(Route("/movie"), to: destination)
            .waitForResult(timeout: 30)
        guard case .failure(let failure as ConnectError) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(failure.kind, .connectionLost, "\(failure)")
        let part = try XCTUnwrap(failure.partialDownload, "\(failure)")
        // The second attempt went on from the first one's part, and its own part holds that and what came after.
        let resumedFrom = try XCTUnwrap(rangeStarts().last)
        XCTAssertGreaterThan(resumedFrom, 0, "\(rangeStarts())")
        XCTAssertGreaterThan(part.bytesReceived, resumedFrom, "\(rangeStarts())")
        XCTAssertLessThanOrEqual(part.bytesReceived, resumedFrom + 50_000, "\(rangeStarts())")
        XCTAssertEqual(try Data(contentsOf: part.fileURL), Self.body.prefix(Int(part.bytesReceived)))
        XCTAssertEqual(Self.partialFiles().subtracting(before), [part.fileURL.lastPathComponent])
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path))
        XCTAssertEqual(
            try connect.download(Route("/movie"), to: destination, resuming: part).wait(timeout: 30), destination)
        XCTAssertEqual(try Data(contentsOf: destination), Self.body)
        XCTAssertEqual(Self.partialFiles(), before)
    }

    /// Resuming the app's part with retries: a cut resume goes on from the newer part, and once the body is whole both
    /// parts are gone.
    func testAResumeThatIsCutAgainIsRetriedFromTheNewerPart() throws {
        let before = Self.partialFiles()
        let partial = try cutDownload()
        site.set(cuts: [30_000])
        XCTAssertEqual(
            try retryingClient(attempts: 2).download(Route("/movie"), to: destination, resuming: partial)
                .wait(timeout: 30), destination)
        XCTAssertEqual(try Data(contentsOf: destination), Self.body)
        let starts = Array(rangeStarts().suffix(2))
        XCTAssertEqual(starts.first, partial.bytesReceived, "\(starts)")
        XCTAssertGreaterThan(starts.last ?? 0, partial.bytesReceived, "from the newer part: \(starts)")
        XCTAssertLessThanOrEqual(starts.last ?? 0, partial.bytesReceived + 30_000, "\(starts)")
        XCTAssertEqual(Self.partialFiles(), before, "both parts are gone")
    }

    /// A call cancelled while it waits to retry removes the part its cut attempt kept: nobody will resume from it.
    func testACallCancelledBeforeItsRetryLeavesNoPart() throws {
        let before = Self.partialFiles()
        site.set(cuts: [80_000])
        let clock = WaitingClock(holds: true)
        let call = retryingClient(attempts: 2, clock: clock).download(Route("/movie"), to: destination)
        XCTAssertEqual(clock.scheduled.wait(timeout: .now() + 30), .success, "the retry never waited")
        call.cancel()
        XCTAssertThrowsError(try call.wait(timeout: 30))
        XCTAssertEqual(Self.partialFiles(), before)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
    }

    /// The size limit bounds the whole file: a resume whose part and rest together pass it is refused, whether the
    /// rest's length is declared (refused before any of it is read) or counted as it arrives (chunked); the part comes
    /// back untouched and nothing is at the destination. A limit the whole file fits lets the resume through.
    func testTheSizeLimitCountsThePartWithTheRest() throws {
        let partial = try cutDownload()
        defer { partial.discard() }
        let tooSmall = RequestOptions(maxResponseBytes: Self.body.count - 1)
        for chunked in [false, true] {
            site.set(chunked: chunked)
            XCTAssertThrowsError(
                try connect.download(Route("/movie"), to: destination, resuming: partial, options: tooSmall)
                    .wait(timeout: 30), "chunked: \(chunked)"
            ) {
                XCTAssertEqual(($0 as? ConnectError)?.kind, .responseTooLarge, "chunked: \(chunked): \($0)")
                XCTAssertEqual(($0 as? ConnectError)?.partialDownload, partial, "chunked: \(chunked)")
            }
            XCTAssertEqual(try Data(contentsOf: partial.fileURL), Self.body.prefix(Int(partial.bytesReceived)))
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [], "chunked: \(chunked)")
        }
        site.set(chunked: false)
        let fits = RequestOptions(maxResponseBytes: Self.body.count)
        XCTAssertEqual(
            try connect.download(Route("/movie"), to: destination, resuming: partial, options: fits).wait(timeout: 30),
            destination)
        XCTAssertEqual(try Data(contentsOf: destination), Self.body)
    }

    /// A `Last-Modified` in the second the answer is dated (a file written as it is served) is weak: the file can
    /// change again within that second and keep the date, and a resume from it spliced the new version's bytes onto
    /// the old one's. No part is kept, so a retry starts over.
    func testALastModifiedInTheSecondOfTheAnswersDateKeepsNoPart() throws {
        let date = "Tue, 01 Dec 2026 10:00:00 GMT"
        site.set(validator: .some(("Last-Modified", date)), cutAfter: 50_000, date: date)

        let cut = try connect.download(Route("/movie"), to: destination).waitForResult(timeout: 30)

        guard case .failure(let error as ConnectError) = cut else { return XCTFail("\(cut)") }
        XCTAssertEqual(error.kind, .connectionLost, "\(error)")
        XCTAssertNil(error.partialDownload, "a date in the answer's own second cannot be sent as If-Range")
    }

    /// A `Last-Modified` stands for the validator when there is no `ETag` and the answer's `Date` is a second or
    /// more after it (a strong date, RFC 9110 §8.8.2.2); a weak `ETag` does not count.
    func testALastModifiedIsTheValidatorWithoutAStrongETag() throws {
        let date = "Tue, 01 Dec 2026 10:00:00 GMT"
        site.set(validator: .some(("Last-Modified", date)), date: "Tue, 01 Dec 2026 10:00:07 GMT")
        let partial = try cutDownload()
        site.set(validator: .some(("ETag", "W/\"weak\"")))
        site.set(cutAfter: 50_000)
        let weak = try connect.download(Route("/movie"), to: destination).waitForResult(timeout: 30)
        guard case .failure(let error as ConnectError) = weak else { return XCTFail("\(weak)") }
        XCTAssertNil(error.partialDownload, "a weak ETag cannot be sent as If-Range")
        // The resume sends the date; this server only honours an ETag it matches, so it sends the whole body.
        XCTAssertEqual(
            try connect.download(Route("/movie"), to: destination, resuming: partial).wait(timeout: 30), destination)
        XCTAssertEqual(server.requests.last?.header("If-Range"), date)
        XCTAssertEqual(try Data(contentsOf: destination), Self.body)
    }

    /// A server that ignores `Range` answers 200 with the whole body: the part is dropped, the body written whole.
    func testAResumeAnswered200WritesTheWholeBody() throws {
        let partial = try cutDownload()
        site.set(rangeAnswer: .ignore)
        XCTAssertEqual(
            try connect.download(Route("/movie"), to: destination, resuming: partial).wait(timeout: 30), destination)
        XCTAssertEqual(try Data(contentsOf: destination), Self.body)
        XCTAssertFalse(FileManager.default.fileExists(atPath: partial.fileURL.path))
    }

    /// The body changed since the part (another ETag): the server sends the new one whole, and that is what is
    /// written, nothing of the old part.
    func testAChangedBodyIsWrittenWholeNotAppended() throws {
        let partial = try cutDownload()
        let new = Data(repeating: 7, count: 150_000)
        site.set(body: new, validator: .some(("ETag", "\"v2\"")))
        XCTAssertEqual(
            try connect.download(Route("/movie"), to: destination, resuming: partial).wait(timeout: 30), destination)
        XCTAssertEqual(try Data(contentsOf: destination), new)
        XCTAssertEqual(server.requests.last?.header("If-Range"), "\"v1\"")
    }

    /// A server (or a cache before it) that ignores `If-Range` answers a resume of a changed body with the rest of the
    /// new version, of the same length: a bad response naming both versions, the part kept, nothing at the
    /// destination. Written after the part, the file was two versions, reported as a success.
    func testTheRestOfAnotherVersionIsABadResponseAndKeepsThePart() throws {
        let partial = try cutDownload()
        defer { partial.discard() }
        site.set(
            body: Data(repeating: 7, count: Self.body.count), validator: .some(("ETag", "\"v2\"")),
            rangeAnswer: .ignoringIfRange)
        let result = try connect.download(Route("/movie"), to: destination, resuming: partial).waitForResult(
            timeout: 30)
        guard case .failure(let failure as ConnectError) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(failure.kind, .badResponse, "\(failure)")
        XCTAssertTrue(failure.message.contains("\"v2\""), failure.message)
        XCTAssertEqual(failure.partialDownload, partial)
        XCTAssertEqual(try Data(contentsOf: partial.fileURL), Self.body.prefix(Int(partial.bytesReceived)))
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path))
    }

    /// A 416 saying the body is as long as the part: the part was the whole body, and goes to the destination.
    /// A part kept for a URL whose path carries a secret (a `.path` value under a secret name) shows it in no
    /// output: not the part's description, nor the failure's dump, which showed the URL whole.
    func testAPartOfAURLWithASecretPathValueShowsItNowhere() throws {
        struct Export: Connector {
            var baseURL: URL
            var endpoint: String { "/exports/{token}" }
            var method: HTTPMethod { .get }
            var headers: [HTTPHeader] { [] }
            var parameters: ParametersRepresentable? { Parameter.path(key: "token", value: "exp_9f8e7d6c5b4a") }
        }
        server.route("GET", "/exports/:token") { [site] in site.answer($0) }
        site.set(cutAfter: 80_000)
        let result = try connect.download(Export(baseURL: server.baseURL), to: destination).waitForResult(timeout: 30)
        guard case .failure(let failure) = result, let error = failure as? ConnectError,
            let partial = error.partialDownload
        else { return XCTFail("no part kept: \(result)") }
        defer { partial.discard() }
        var dumped = ""
        dump(error, to: &dumped)
        var dumpedPart = ""
        dump(partial, to: &dumpedPart)
        for text in ["\(partial)", String(reflecting: partial), dumpedPart, dumped, "\(error)"] {
            XCTAssertFalse(text.contains("exp_9f8e7d6c5b4a"), text)
        }
        XCTAssertTrue("\(partial)".contains("/exports/"), "\(partial)")
    }

    /// A part whose body's length was never told (a chunked body cut before its last chunk), answered 416 for its own
    /// length by the same version: the part was the whole body.
    func testA416ForTheWholeLengthPlacesThePart() throws {
        site.set(chunked: true)
        let partial = try cutDownload()
        site.set(rangeAnswer: .unsatisfiedBy(extra: 0))
        XCTAssertEqual(
            try connect.download(Route("/movie"), to: destination, resuming: partial).wait(timeout: 30), destination)
        XCTAssertEqual(try Data(contentsOf: destination), Self.body.prefix(Int(partial.bytesReceived)))
        XCTAssertFalse(FileManager.default.fileExists(atPath: partial.fileURL.path))
    }

    /// A 416 that says the part is the whole body, where the part's own answer said the body was longer, or where it
    /// names another version than the part's: the answer contradicts the part, never a shorter file as a success.
    func testA416ThatContradictsThePartIsABadResponseAndKeepsThePart() throws {
        // The first answer said 200,000 bytes; the 416 says the 80,000 kept are all of it
        let known = try cutDownload()
        defer { known.discard() }
        site.set(rangeAnswer: .unsatisfiedBy(extra: 0))
        XCTAssertThrowsError(
            try connect.download(Route("/movie"), to: destination, resuming: known).wait(timeout: 30)
        ) {
            guard let error = $0 as? ConnectError else { return XCTFail("\($0)") }
            XCTAssertEqual(error.kind, .badResponse, "\(error)")
            XCTAssertTrue(error.message.contains("\(Self.body.count)"), error.message)
            XCTAssertEqual(error.partialDownload, known)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path))

        // A part of unknown length, and a 416 naming another version than the one it holds
        site.set(validator: ("ETag", "\"v1\""), rangeAnswer: .honour, chunked: true)
        let unknown = try cutDownload()
        defer { unknown.discard() }
        site.set(validator: ("ETag", "\"v2\""), rangeAnswer: .unsatisfiedBy(extra: 0))
        XCTAssertThrowsError(
            try connect.download(Route("/movie"), to: destination, resuming: unknown).wait(timeout: 30)
        ) {
            guard let error = $0 as? ConnectError else { return XCTFail("\($0)") }
            XCTAssertEqual(error.kind, .badResponse, "\(error)")
            XCTAssertTrue(error.message.contains("\"v2\""), error.message)
            XCTAssertEqual(error.partialDownload, unknown)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path))
    }

    /// Another 416, or a 206 that does not start where the part ends: a bad response naming what was asked and what
    /// came, the part kept for the app, nothing at the destination.
    func testARangeAnswerThatDoesNotFitIsABadResponseAndKeepsThePart() throws {
        let partial = try cutDownload()
        defer { partial.discard() }
        site.set(rangeAnswer: .unsatisfiedBy(extra: 5))
        XCTAssertThrowsError(
            try connect.download(Route("/movie"), to: destination, resuming: partial).wait(timeout: 30)
        ) {
            guard let error = $0 as? ConnectError else { return XCTFail("\($0)") }
            XCTAssertEqual(error.kind, .badResponse, "\(error)")
            XCTAssertTrue(error.message.contains("416"), error.message)
            XCTAssertTrue(error.message.contains("bytes=\(partial.bytesReceived)-"), error.message)
            XCTAssertEqual(error.partialDownload, partial)
        }
        site.set(rangeAnswer: .fromStart)
        XCTAssertThrowsError(
            try connect.download(Route("/movie"), to: destination, resuming: partial).wait(timeout: 30)
        ) {
            guard let error = $0 as? ConnectError else { return XCTFail("\($0)") }
            XCTAssertEqual(error.kind, .badResponse, "\(error)")
            XCTAssertTrue(error.message.contains("from 0"), error.message)
            XCTAssertEqual(error.partialDownload, partial)
        }
        XCTAssertEqual(try Data(contentsOf: partial.fileURL).count, Int(partial.bytesReceived), "the part is kept")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
    }

    /// A resume cut again keeps every byte so far in a new part (the old one goes), and that part resumes in turn.
    func testAResumeCutAgainKeepsEveryByteSoFar() throws {
        let first = try cutDownload(after: 50_000)
        site.set(cutAfter: 60_000)
        let result = try connect.download(Route("/movie"), to: destination, resuming: first).waitForResult(timeout: 30)
        guard case .failure(let failure as ConnectError) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(failure.kind, .connectionLost, "\(failure)")
        let second = try XCTUnwrap(failure.partialDownload, "\(failure)")
        XCTAssertGreaterThan(second.bytesReceived, first.bytesReceived)
        XCTAssertEqual(try Data(contentsOf: second.fileURL), Self.body.prefix(Int(second.bytesReceived)))
        XCTAssertFalse(FileManager.default.fileExists(atPath: first.fileURL.path), "the new part replaces the old")

        let reports = Reports()
        XCTAssertEqual(
            try connect.download(
                Route("/movie"), to: destination, resuming: second,
                options: RequestOptions(progress: { reports.append($0) })
            ).wait(timeout: 30), destination)
        XCTAssertEqual(try Data(contentsOf: destination), Self.body)
        // Progress counts the whole file: the part first, then the rest, of the whole length.
        let all = reports.all
        let total = Int64(Self.body.count)
        XCTAssertEqual(all.last?.bytesReceived, total)
        XCTAssertEqual(all.last?.totalBytesToReceive, total)
        let receiving = all.filter { $0.totalBytesToReceive != nil }
        XCTAssertFalse(receiving.isEmpty)
        for report in receiving {
            XCTAssertEqual(report.totalBytesToReceive, total, "\(report)")
            XCTAssertGreaterThanOrEqual(report.bytesReceived, second.bytesReceived, "\(report)")
        }
    }

    /// Without a validator nothing is kept, and no file is left behind.
    func testWithoutAValidatorNothingIsKept() throws {
        site.set(validator: .some(nil))
        let before = Self.partialFiles()
        site.set(cutAfter: 80_000)
        let result = try connect.download(Route("/movie"), to: destination).waitForResult(timeout: 30)
        guard case .failure(let error as ConnectError) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(error.kind, .connectionLost, "\(error)")
        XCTAssertNil(error.partialDownload)
        XCTAssertEqual(Self.partialFiles().subtracting(before), [])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
    }

    /// A part for another URL, or whose file is gone, is refused before anything is sent.
    func testAPartThatDoesNotFitTheRequestIsRefusedBeforeSending() throws {
        let partial = try cutDownload()
        defer { partial.discard() }
        let sent = server.requests.count
        XCTAssertThrowsError(
            try connect.download(Route("/other"), to: destination, resuming: partial).wait(timeout: 30)
        ) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .invalidRequest, "\($0)")
            XCTAssertTrue(($0 as? ConnectError)?.message.contains("/other") == true, "\($0)")
        }
        let handle = try FileHandle(forWritingTo: partial.fileURL)
        try handle.truncate(atOffset: UInt64(partial.bytesReceived - 1))
        try handle.close()
        XCTAssertThrowsError(
            try connect.download(Route("/movie"), to: destination, resuming: partial).wait(timeout: 30)
        ) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess, "\($0)")
        }
        partial.discard()
        XCTAssertThrowsError(
            try connect.download(Route("/movie"), to: destination, resuming: partial).wait(timeout: 30)
        ) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess, "\($0)")
        }
        XCTAssertEqual(server.requests.count, sent, "nothing was sent")
    }
}

/// Progress reports, collected from the transport's threads.
private final class Reports: @unchecked Sendable {
    // `reports` is read and written under `lock`.
    private let lock = NSLock()
    private var reports: [TransferProgress] = []

    func append(_ report: TransferProgress) {
        lock.lock()
        reports.append(report)
        lock.unlock()
    }

    var all: [TransferProgress] {
        lock.lock()
        defer { lock.unlock() }
        return reports
    }
}
