import Foundation
import SwiftConnect
import SwiftConnectAsyncHTTPClient
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What AsyncHTTPClient makes possible for memory, measured as resident memory of this process (client and
/// server both run in it): figures, not timings.
final class AsyncHTTPClientMemoryTests: XCTestCase {
    private var server: LocalServer!

    override func setUpWithError() throws {
        server = LocalServer(recordsRequests: false)
        try server.start()
    }

    override func tearDown() {
        server.stop()
    }

    /// A 50 MB body refused at 1 MB raises peak resident memory by less than 8 MB: the transport stops reading
    /// and closes the connection instead of taking in the rest.
    func testA50MBBodyRefusedAt1MBKeepsMemoryFlat() throws {
        server.route("GET", "/big") { _ in
            .stream(contentLength: 50_000_000) { write in
                let piece = Data(count: 50_000)
                for _ in 0..<1_000 {
                    guard write(piece) else { break }
                }
            }
        }
        let transport = AsyncHTTPClientTransport()
        let request = URLRequest(url: server.baseURL.appendingPathComponent("big"), timeoutInterval: 60)
        let limit = TransferOptions(maxResponseBytes: 1_000_000)
        // Warm up: the connection pool, the event loops and the server's threads exist before measuring.
        _ = try transport.send(request, transfer: limit).waitForResult(timeout: 60)
        guard let before = ProcessMemory.residentBytes() else { throw XCTSkip("no /proc/self/status here") }

        let sampler = MemorySampler()
        let result = try transport.send(request, transfer: limit).waitForResult(timeout: 60)
        let peak = sampler.stop()

        guard case .failure(let error as ConnectError) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(error.kind, .responseTooLarge)
        let growth = peak - before
        print("50 MB body refused at 1 MB: peak resident memory +\(growth >> 10) KiB")
        if !ProcessMemory.isSanitized {
            XCTAssertLessThan(growth, 8_000_000, "memory grew by \(growth >> 10) KiB")
        }
    }

    /// A 1 GiB stream read by a consumer slower than the server keeps peak resident memory growth under 64 MiB:
    /// the engine reads no further while the reader is behind (back-pressure), so the server waits instead.
    func testA1GiBStreamReadSlowlyKeepsMemoryBounded() async throws {
        let total = 1 << 30
        server.route("GET", "/export") { _ in
            .stream(contentLength: total) { write in
                let piece = Data(repeating: 0x2A, count: 64 << 10)
                for _ in 0..<(total / piece.count) {
                    guard write(piece) else { return }
                }
            }
        }
        let connect = Connect(transport: AsyncHTTPClientTransport(), retryPolicy: nil)
        let route = Route("/export", baseURL: server.baseURL)
        guard let before = ProcessMemory.residentBytes() else { throw XCTSkip("no /proc/self/status here") }

        let sampler = MemorySampler()
        var received = 0
        var chunks = 0
        for try await chunk in connect.stream(route) {
            received += chunk.count
            chunks += 1
            // Slower than the server: a pause every 64 chunks, so that a full buffer would pile up.
            if chunks % 64 == 0 { try await Task.sleep(nanoseconds: 1_000_000) }
        }
        let peak = sampler.stop()

        XCTAssertEqual(received, total)
        let growth = peak - before
        print("1 GiB stream read slowly: peak resident memory +\(growth >> 20) MiB over \(chunks) chunks")
        if !ProcessMemory.isSanitized {
            XCTAssertLessThan(growth, 64 << 20, "memory grew by \(growth >> 20) MiB")
        }
    }

    /// 100,000 requests after a warm-up grow resident memory by less than 5 MB: nothing is kept per request.
    func test100000RequestsDoNotGrowMemory() throws {
        server.route("GET", "/small") { _ in .data(Data(count: 64)) }
        let transport = AsyncHTTPClientTransport()
        let request = URLRequest(url: server.baseURL.appendingPathComponent("small"), timeoutInterval: 30)
        let total = ProcessMemory.isSanitized ? 5_000 : 100_000
        let inFlight = 16
        func run(_ count: Int) throws {
            let done = DispatchSemaphore(value: 0)
            let failures = Guarded(0)
            let slots = DispatchSemaphore(value: inFlight)
            for _ in 0..<count {
                slots.wait()
                transport.send(request).observe { result in
                    if case .failure = result { failures.withLock { $0 += 1 } }
                    slots.signal()
                    done.signal()
                }
            }
            for _ in 0..<count { done.wait() }
            XCTAssertEqual(failures.snapshot, 0)
        }
        try run(total / 10)  // warm-up
        guard let before = ProcessMemory.residentBytes() else { throw XCTSkip("no /proc/self/status here") }

        try run(total)
        guard let after = ProcessMemory.residentBytes() else { return }

        let growth = after - before
        print("\(total) requests after warm-up: resident memory +\(growth >> 10) KiB")
        if !ProcessMemory.isSanitized {
            XCTAssertLessThan(growth, 5_000_000, "memory grew by \(growth >> 10) KiB")
        }
    }
}
