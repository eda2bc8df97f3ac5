import Dispatch
import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 41, item 1: what a limit bounds in memory, not only in what the caller gets. Through the engine under test
/// (`URLSessionTransport` here; the AsyncHTTPClient package runs this file over its engine) to LocalServer, the four
/// cases of the issue, each against a sender as fast as loopback: a response over
/// `maxResponseBytes`, a gzip or deflate bomb, a stream its reader leaves, and a slow reader of a stream. Each
/// measures the peak resident memory (the server runs in this process too) until the transfer has really stopped,
/// and reports how much the server wrote.
///
/// On Linux (FoundationNetworking), a stop lands only once libcurl has caught up with the sender: every way to stop
/// a task waits for the work queue all sessions share, which libcurl holds while data is there to read. Until then
/// the body crosses the connection and is dropped piece by piece on the delegate queue, and FoundationNetworking
/// keeps about 380 bytes a 16 KiB piece (a timeout timer it replaces on each) until that queue is free. A slow
/// reader's stream stays within the buffer limit plus 50 MiB in every run measured, and its test says so. A stream
/// its reader leaves did too until full-suite CI runs went to +65 MiB and, on a slower machine, +266 MiB: the delegate
/// queue's backlog, which only the machine's load decides. That test pins it under 384 MiB on URLSession, under the
/// 512 MiB body, so that a stream keeping the whole body still fails. A size limit and a bomb stay
/// within the limit plus 50 MiB in most runs, not all (+106 and +131 MiB in 2 runs of 17 over a 512 MiB body, +92 to
/// +113 MiB when a 4 GiB body was read to its end): those tests pin the cases under 256 MiB, to notice if they get worse
/// (SECURITY.md, "Time and size limits").
///
/// `AsyncHTTPClientTransport` closes the connection at the limit and pauses a slow reader's connection, so on it
/// every case is held to the limit (or the buffer limit) plus 50 MiB.
///
/// Memory figures are meaningless under a sanitizer: the tests are skipped there.
final class MemoryBoundTests: XCTestCase {
    private static let mebibyte = 1 << 20

    private var server: LocalServer!

    override func setUpWithError() throws {
        if ProcessMemory.isSanitized { throw XCTSkip("memory figures are meaningless under a sanitizer") }
        server = try LocalServer.started()
    }

    override func tearDown() {
        server?.stop()
    }

    // MARK: - Measuring

    /// What one case cost: the peak growth of resident memory, and the body bytes the server wrote.
    private struct Cost: CustomStringConvertible {
        var growth: Int
        var written: Int
        var seconds: Double

        var description: String {
            "peak resident memory +\(growth / MemoryBoundTests.mebibyte) MiB, "
                + "server wrote \(written >> 10) KiB, \(String(format: "%.2f", seconds)) s"
        }
    }

    /// Counts the body bytes a route's producer writes, and tells when it has stopped.
    private final class Producer: Sendable {
        /// The bytes written so far, whether the producer has stopped, and the readers waiting for it to get ahead.
        private struct Progress {
            var written = 0
            var stopped = false
            var waiters: [(bytes: Int, continuation: CheckedContinuation<Void, Never>)] = []

            /// Takes out the waiters whose wait is over.
            mutating func readyWaiters() -> [CheckedContinuation<Void, Never>] {
                let ready = waiters.filter { stopped || written >= $0.bytes }
                waiters.removeAll { stopped || written >= $0.bytes }
                return ready.map(\.continuation)
            }
        }
        private let progress = Protected(Progress())
        private let done = DispatchSemaphore(value: 0)
        /// Whether the client's call had failed when the producer had written ``probeAfter`` bytes.
        private let failedAtProbe = Protected<Bool?>(nil)
        private let callFailed = Protected(false)
        private let probeAfter: Int
        /// Whether the producer wrote its whole body.
        private let finished = Protected(false)

        /// A producer that notes whether the client's call had failed (``callHasFailed()``) by the time it had
        /// written `probeAfter` bytes.
        init(probeAfter: Int = .max) {
            self.probeAfter = probeAfter
        }

        /// The client's call failed.
        func callHasFailed() {
            callFailed.withLock { $0 = true }
        }

        /// Whether the client's call had failed when ``probeAfter`` bytes were written; `nil` if fewer were.
        var hadFailedAtProbe: Bool? { failedAtProbe.snapshot }

        /// Writes `total` bytes in pieces of `piece` bytes (the last may be shorter), each from `bytes`, until the
        /// client stops reading.
        func write(
            total: Int, piece: Int = 64 << 10, with write: (Data) -> Bool,
            bytes: (Range<Int>) -> Data = { Data(count: $0.count) }
        ) {
            defer {
                let ready = progress.withLock { progress in
                    progress.stopped = true
                    return progress.readyWaiters()
                }
                for waiter in ready { waiter.resume() }
                done.signal()
            }
            var offset = 0
            while offset < total {
                let range = offset..<min(total, offset + piece)
                guard write(bytes(range)) else { return }
                let ready = progress.withLock { progress in
                    progress.written += range.count
                    return progress.readyWaiters()
                }
                for waiter in ready { waiter.resume() }
                if offset < probeAfter, range.upperBound >= probeAfter {
                    let failed = callFailed.snapshot
                    failedAtProbe.withLock { $0 = failed }
                }
                offset = range.upperBound
            }
            finished.withLock { $0 = true }
        }

        /// Whether the whole body was written: the client read it to its end (but what the socket's buffers hold).
        var wroteAll: Bool { finished.snapshot }

        /// The bytes written so far.
        var written: Int { progress.withLock { $0.written } }

        /// Returns once the producer has written `bytes` bytes, or has stopped.
        func waitUntilWritten(_ bytes: Int) async {
            await withCheckedContinuation { continuation in
                let isReady = progress.withLock { progress -> Bool in
                    guard !progress.stopped, progress.written < bytes else { return true }
                    progress.waiters.append((bytes, continuation))
                    return false
                }
                if isReady { continuation.resume() }
            }
        }

        /// Waits until the producer has stopped (the whole body written, or the connection gone).
        func waitUntilDone(timeout: TimeInterval = 120) -> Bool {
            done.wait(timeout: .now() + timeout) == .success
        }
    }

    /// Runs `body` with a sampler of resident memory, from a baseline taken once freed memory went back to the
    /// system (glibc keeps it in its arenas otherwise), until the transfer has really stopped, however late: the
    /// producer has stopped, and the client has closed the connection, which it does when its stop lands (not when
    /// it read the whole body: the connection then waits in libcurl's pool). A bomb is written whole at once, and
    /// libcurl may decode it for seconds after the call failed: `decoded` waits for the close whatever was written.
    private func measure(_ producer: Producer, decoded: Bool = false, _ body: () async throws -> Void) async throws
        -> Cost
    {
        Self.trimMalloc()
        guard let before = ProcessMemory.residentBytes() else { throw XCTSkip("no /proc/self/status here") }
        let start = Date()
        let sampler = MemorySampler()
        try await body()
        XCTAssertTrue(producer.waitUntilDone(), "the server stopped writing")
        if decoded || !producer.wroteAll {
            XCTAssertTrue(server.waitUntilNoConnection(timeout: 120), "the client closed the connection")
        }
        let peak = sampler.stop()
        return Cost(growth: peak - before, written: producer.written, seconds: Date().timeIntervalSince(start))
    }

    /// Gives the memory glibc keeps in its arenas back to the system (`malloc_trim(0)`, which Glibc's module
    /// does not export).
    private static func trimMalloc() {
        #if canImport(Glibc)
            typealias Trim = @convention(c) (Int) -> Int32
            guard let handle = dlopen(nil, RTLD_NOW) else { return }
            defer { dlclose(handle) }
            guard let symbol = dlsym(handle, "malloc_trim") else { return }
            _ = unsafeBitCast(symbol, to: Trim.self)(0)
        #endif
    }

    private func client(maxResponseBytes: Int? = nil) -> Connect {
        Connect(
            transport: TransportUnderTest.make(), retryPolicy: nil,
            settings: Connect.Settings(maxResponseBytes: maxResponseBytes))
    }

    private func route(_ path: String) -> Route {
        Route(path, baseURL: server.baseURL, timeout: 300)
    }

    /// The peak growth a size limit is held to (bombs: `checkBomb`): the limit plus 50 MiB on an engine that closes the
    /// connection at the limit; on URLSession, 256 MiB, where a run went highest with room (SECURITY.md).
    private func bound(limit: Int) -> Int {
        TransportUnderTest.isURLSession ? 256 * Self.mebibyte : limit + 50 * Self.mebibyte
    }

    private func report(_ name: String, _ cost: Cost, _ detail: String = "") {
        print("MemoryBound \(name): \(cost)\(detail.isEmpty ? "" : "; \(detail)")")
    }

    // MARK: - A size limit

    /// Most runs stay within the limit plus 50 MiB, not all (SECURITY.md): the case is pinned where a run went
    /// highest, +131 MiB, with room, to notice if it gets worse.
    func testAResponseOverTheSizeLimitFailsAndStaysUnder256MiB() async throws {
        // Given: 512 MiB sent as fast as the connection takes them, without a declared length, and a limit of 10 MiB
        let producer = Producer()
        server.route("GET", "/fast") { _ in
            .stream(contentLength: nil) { write in producer.write(total: 512 << 20, with: write) }
        }
        let limit = 10 << 20
        let connect = client(maxResponseBytes: limit)

        // When
        let cost = try await measure(producer) {
            let result = try connect.request(route("/fast")).waitForResult(timeout: 300)
            guard case .failure(let error as ConnectError) = result else { return XCTFail("\(result)") }
            XCTAssertEqual(error.kind, .responseTooLarge)
        }

        // Then
        report("size limit", cost, cost.growth < limit + 50 * Self.mebibyte ? "" : "over the limit plus 50 MiB")
        XCTAssertLessThan(cost.growth, bound(limit: limit), "\(cost)")
    }

    /// The boundary where the bound above fails on Linux: a fast sender keeps libcurl reading, and the stop lands
    /// late, up to the end of the body (SECURITY.md). Pinned at what was measured, to notice if it gets worse. The
    /// caller still gets its error within half a second: in a run where the stop lands late, the call had failed
    /// before the server had written 1 GiB (the error waited for the stop to land, before).
    func testAFast4GiBResponseOverTheSizeLimitFailsAtOnceWithinItsMemoryBound() async throws {
        // Given: 4 GiB sent as fast as the connection takes them, without a declared length, and a limit of 10 MiB
        let producer = Producer(probeAfter: 1 << 30)
        server.route("GET", "/fast") { _ in
            .stream(contentLength: nil) { write in producer.write(total: 4 << 30, with: write) }
        }
        let connect = client(maxResponseBytes: 10 << 20)

        // When
        let cost = try await measure(producer) {
            let result = try connect.request(route("/fast")).waitForResult(timeout: 300)
            producer.callHasFailed()
            guard case .failure(let error as ConnectError) = result else { return XCTFail("\(result)") }
            XCTAssertEqual(error.kind, .responseTooLarge)
        }

        // Then: measured on Linux, the stop landed after 17 MiB to 4 GiB (37 runs), at +11 to +113 MiB, and once,
        // inside a full CI run (1 December), after 1.9 GiB at +316 MiB: libcurl's reads outran the delegate queue
        // that drops them. On URLSession the bound is that run's with room, to notice if it gets worse.
        report(
            "size limit, 4 GiB", cost,
            "failed before 1 GiB was written: \(producer.hadFailedAtProbe.map { "\($0)" } ?? "n/a")")
        let bound = TransportUnderTest.isURLSession ? 512 * Self.mebibyte : bound(limit: 10 << 20)
        XCTAssertLessThan(cost.growth, bound, "\(cost)")
        if let failed = producer.hadFailedAtProbe {
            XCTAssertTrue(failed, "the call failed only once the transfer was stopped, not at the limit")
        }
    }

    // MARK: - Decompression bombs

    func testAGzipBombFailsWithinItsMemoryBound() async throws {
        try await checkBomb(coding: "gzip")
    }

    func testADeflateBombFailsWithinItsMemoryBound() async throws {
        try await checkBomb(coding: "deflate")
    }

    /// An engine that hands the body over as sent (AsyncHTTPClient's default configuration) has it decoded by the
    /// core, in parts of at most 64 KiB that the limit sees: held to the limit plus 50 MiB (+8 to +17 MiB measured).
    /// Before, AsyncHTTPClient's decompressor decoded each socket read whole, about a thousand times its size, and a
    /// CI run of 29 November went to +140 MiB. libcurl decodes under URLSession on Linux, all of it before the limit
    /// sees a byte (SECURITY.md): pinned under 256 MiB there.
    private func checkBomb(coding: String) async throws {
        // Given: 1 GiB of zeros in about 1 MiB of `coding`, and a limit of 10 MiB
        let bomb = Bomb.encoded(coding)
        let producer = Producer()
        server.route("GET", "/bomb") { _ in
            .stream(contentLength: nil) { write in
                producer.write(total: bomb.count, with: write) { bomb.subdata(in: $0) }
            }
            .withHeader("Content-Encoding", coding)
        }
        let limit = 10 << 20
        let connect = client(maxResponseBytes: limit)

        // When
        let cost = try await measure(producer, decoded: true) {
            let result = try connect.request(route("/bomb")).waitForResult(timeout: 300)
            guard case .failure(let error as ConnectError) = result else { return XCTFail("\(result)") }
            XCTAssertEqual(error.kind, .responseTooLarge)
        }

        // Then
        report(
            "\(coding) bomb (\(bomb.count >> 10) KiB)", cost,
            cost.growth < limit + 50 * Self.mebibyte ? "" : "over the limit plus 50 MiB")
        XCTAssertLessThan(
            cost.growth, TransportUnderTest.isURLSession ? 256 * Self.mebibyte : limit + 50 * Self.mebibyte, "\(cost)")
    }

    // MARK: - Streams

    /// On URLSession most runs stay within the buffer limit plus 50 MiB (+2 to +28 MiB), not all: full-suite CI runs
    /// went to +65 MiB and, on a machine 1.5 times slower, +266 MiB (SECURITY.md), what FoundationNetworking's delegate
    /// queue holds when it falls behind libcurl. Pinned under 384 MiB there, below the 512 MiB body, so that a stream
    /// that kept the whole body fails; held to the buffer limit plus 50 MiB on an engine that closes the connection when
    /// the reader leaves.
    func testAStreamItsReaderLeavesStopsWithinItsMemoryBound() async throws {
        // Given: a stream of 512 MiB sent as fast as the connection takes them
        let producer = Producer()
        server.route("GET", "/fast") { _ in
            .stream(contentLength: nil) { write in producer.write(total: 512 << 20, with: write) }
        }
        let connect = client()

        // When: the reader leaves its loop after three chunks
        let cost = try await measure(producer) {
            var chunks = 0
            for try await _ in connect.stream(route("/fast")) {
                chunks += 1
                if chunks == 3 { break }
            }
            XCTAssertEqual(chunks, 3)
        }

        // Then
        let usual = StreamingOptions().bufferLimit + 50 * Self.mebibyte
        report("stream left after 3 chunks", cost, cost.growth < usual ? "" : "over the buffer limit plus 50 MiB")
        XCTAssertLessThan(cost.growth, TransportUnderTest.isURLSession ? 384 * Self.mebibyte : usual, "\(cost)")
    }

    func testASlowReaderOfAStreamStaysWithinItsMemoryBound() async throws {
        // Given: a stream of 256 MiB sent as fast as the connection takes them, and a buffer limit of 8 MiB
        let size = 256 << 20
        let bufferLimit = 8 << 20
        let producer = Producer()
        server.route("GET", "/fast") { _ in
            .stream(contentLength: nil) { write in producer.write(total: size, with: write) }
        }
        let connect = client()

        // When: the reader stays behind: every 256 KiB it reads, it waits until the producer is ahead of it (or has
        // stopped). With back-pressure, the engine reads until 256 KiB wait in the stream, so the reader waits for
        // 128 KiB. Without it (URLSession reads on, into the stream), for more than the buffer holds: the producer
        // gets that far ahead (part of it in the sockets' buffers), or the stream overflows and the producer stops.
        let lag = TransportUnderTest.isURLSession ? bufferLimit + (1 << 20) : 128 << 10
        var read = 0
        var failure: (any Error)?
        let cost = try await measure(producer) {
            var sincePause = 0
            do {
                let stream = connect.stream(route("/fast"), streaming: StreamingOptions(bufferLimit: bufferLimit))
                for try await chunk in stream {
                    read += chunk.count
                    sincePause += chunk.count
                    if sincePause >= 256 << 10 {
                        sincePause = 0
                        await producer.waitUntilWritten(read + lag)
                    }
                }
            } catch {
                failure = error
            }
        }

        // Then: URLSession cannot pause the transfer, so the stream fails if its buffer fills (how much the sockets'
        // buffers hold decides whether it does); with back-pressure the reader reads the whole body. Either way,
        // memory stays within the buffer limit
        report("slow reader", cost, "read \(read >> 20) MiB, \(failure.map { "\($0)" } ?? "no error")")
        if TransportUnderTest.isURLSession {
            if let failure { XCTAssertEqual((failure as? ConnectError)?.kind, .responseTooLarge, "\(failure)") }
            if failure == nil { XCTAssertEqual(read, size) }
        } else {
            XCTAssertNil(failure)
            XCTAssertEqual(read, size)
        }
        // URLSession: the usual run stays within the buffer limit plus 50 MiB (+11 to +30 MiB), not every one: a full CI
        // run of the suite saw +67 MiB (FoundationNetworking's delegate queue behind libcurl, SECURITY.md). Pinned
        // there under 192 MiB, below the 256 MiB body, so that a stream that kept the whole body still fails.
        let bound = TransportUnderTest.isURLSession ? 192 * Self.mebibyte : bufferLimit + 50 * Self.mebibyte
        XCTAssertLessThan(cost.growth, bound, "\(cost)")
    }
}

/// A decompression bomb: a single deflate block (dynamic Huffman codes) of one literal zero followed by matches of
/// 258 bytes at distance 1, each coded in 2 bits, so about 1 MiB decodes to 1 GiB of zeros. Its trailer's checksum
/// is not computed (zeros): a limit stops reading long before it.
private enum Bomb {
    /// The number of 258-byte matches: 1 + 258 × 4,161,800 bytes = 1 GiB and 2.6 KiB decoded.
    static let matches = 4_161_800

    /// The body in `coding`: `gzip` (RFC 1952) or `deflate` (zlib, RFC 1950).
    static func encoded(_ coding: String) -> Data {
        let deflated = deflate()
        if coding == "gzip" {
            return Data([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF]) + deflated + Data(count: 8)
        }
        return Data([0x78, 0x01]) + deflated + Data(count: 4)
    }

    /// The deflate stream (RFC 1951).
    private static func deflate() -> Data {
        var bits = BitWriter()
        bits.put(1, count: 1)  // the final block
        bits.put(2, count: 2)  // dynamic Huffman codes
        bits.put(286 - 257, count: 5)  // literal/length codes: 0...285
        bits.put(1 - 1, count: 5)  // one distance code
        bits.put(18 - 4, count: 4)  // code length codes, in their order up to symbol 1
        // Code lengths of the code length alphabet, in RFC 1951's order: 18 has 1 bit ("0"), 1 and 2 have 2
        // ("10", "11"); the others none.
        let order = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1]
        let lengths = [18: 1, 1: 2, 2: 2]
        for symbol in order { bits.put(lengths[symbol] ?? 0, count: 3) }
        // Literal/length code lengths: 0 and 256 have 2 bits ("10", "11"), 285 (length 258) has 1 ("0").
        bits.code(0b11, length: 2)  // 0: length 2
        bits.code(0, length: 1)  // 18: 138 zeros (1...138)
        bits.put(138 - 11, count: 7)
        bits.code(0, length: 1)  // 18: 117 zeros (139...255)
        bits.put(117 - 11, count: 7)
        bits.code(0b11, length: 2)  // 256: length 2
        bits.code(0, length: 1)  // 18: 28 zeros (257...284)
        bits.put(28 - 11, count: 7)
        bits.code(0b10, length: 2)  // 285: length 1
        bits.code(0b10, length: 2)  // distance code 0 (distance 1): length 1 ("0")
        // The data: a literal zero, then every match: length 258 ("0"), distance 1 ("0").
        bits.code(0b10, length: 2)
        bits.zeros(2 * matches)
        bits.code(0b11, length: 2)  // the end of the block
        return Data(bits.bytes)
    }

    /// Writes bits as deflate packs them: from the least significant bit of each byte.
    private struct BitWriter {
        var bytes: [UInt8] = []
        private var count = 0

        /// `value`'s `count` low bits, least significant first (a field).
        mutating func put(_ value: Int, count: Int) {
            for index in 0..<count { bit((value >> index) & 1) }
        }

        /// A Huffman code of `length` bits, most significant first.
        mutating func code(_ code: Int, length: Int) {
            for index in (0..<length).reversed() { bit((code >> index) & 1) }
        }

        /// `count` zero bits.
        mutating func zeros(_ count: Int) {
            var left = count
            while left > 0, self.count % 8 != 0 {
                bit(0)
                left -= 1
            }
            bytes.append(contentsOf: repeatElement(0, count: left / 8))
            self.count += left / 8 * 8
            for _ in 0..<(left % 8) { bit(0) }
        }

        private mutating func bit(_ bit: Int) {
            if count % 8 == 0 { bytes.append(0) }
            if bit == 1 { bytes[bytes.count - 1] |= UInt8(1 << (count % 8)) }
            count += 1
        }
    }
}
