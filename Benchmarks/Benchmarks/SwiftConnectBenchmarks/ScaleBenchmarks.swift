import AsyncHTTPClient
import Benchmark
import Foundation
import SwiftConnect
import SwiftConnectAsyncHTTPClient

#if canImport(Glibc)
    import Glibc
#endif

// Issue 37, item 6: 1,000 server-sent-event streams open at once from this process over AsyncHTTPClientTransport,
// against the loopback server in its child process. Each stream gets events 1 to 3, then is held open until every
// stream has them; the memory is read then, the streams are released (events 4 and 5, then the end), and read again
// once the transport is shut down. Not a timing: the figures are memory per open stream, and whether every event came
// in order.

let scaleMetrics: [BenchmarkMetric] = [
    .custom("Scale resident bytes per open stream", polarity: .prefersSmaller, useScalingFactor: false),
    .custom("Scale resident bytes left per stream after shutdown", polarity: .prefersSmaller, useScalingFactor: false),
    .custom("Scale streams with every event in order", polarity: .prefersLarger, useScalingFactor: false),
]

func registerScaleBenchmarks() {
    let streams = RunMode.isSmoke ? 50 : 1_000
    let config = configuration(scalingFactor: .one, metrics: scaleMetrics, maxDuration: .seconds(120), maxIterations: 3)
    Benchmark("Scale/\(streams) event streams open at once/SwiftConnect over AsyncHTTPClient", configuration: config) {
        benchmark in
        let figures = blockingAwait {
            do {
                return try await ScaleRun.run(streams: streams)
            } catch {
                FileHandle.standardError.write(Data("Scale: \(error)\n".utf8))
                throw error
            }
        }
        guard figures.ordered >= 0 else { return benchmark.fail("the run failed") }
        benchmark.measurement(scaleMetrics[0], figures.residentPerStream)
        benchmark.measurement(scaleMetrics[1], figures.residentLeftPerStream)
        benchmark.measurement(scaleMetrics[2], figures.ordered)
        if figures.ordered != streams {
            benchmark.fail("\(streams - figures.ordered) streams lost or reordered events")
        }
    }
}

enum ScaleRun {
    struct Figures: DefaultFailureValue {
        var residentPerStream = 0
        var residentLeftPerStream = 0
        var ordered = 0
        static var failure: Figures { Figures(ordered: -1) }
    }

    static func run(streams: Int) async throws -> Figures {
        // The per-host connection limit raised above the number of streams: AsyncHTTPClient's default soft limit is
        // 8, each open stream holds a connection, and the release needs one more.
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = streams + 1
        let transport = AsyncHTTPClientTransport(configuration: configuration)
        let connect = Connect(transport: transport, retryPolicy: nil)
        let base = LoopbackServer.baseURL
        Memory.trim()
        let residentBefore = Memory.resident()
        let ready = AsyncCountdown(streams)
        var figures = Figures()
        let ids = try await withThrowingTaskGroup(of: [String].self) { group in
            for _ in 0..<streams {
                group.addTask {
                    var ids: [String] = []
                    let route = Route("/stream/held", baseURL: base, timeout: .infinity)
                    for try await event in connect.stream(route, streaming: StreamingOptions(idleTimeout: 150)).events {
                        ids.append(event.id ?? "")
                        if ids.count == 3 { ready.arrive() }
                    }
                    return ids
                }
            }
            await ready.wait()
            figures.residentPerStream = (Memory.resident() - residentBefore) / streams
            _ = try await connect.request(Route("/stream/release", baseURL: base, method: .post)).value
            var all: [[String]] = []
            for try await ids in group { all.append(ids) }
            return all
        }
        figures.ordered = ids.filter { $0 == ["1", "2", "3", "4", "5"] }.count
        try await transport.shutdown()
        Memory.trim()
        figures.residentLeftPerStream = max(0, Memory.resident() - residentBefore) / streams
        return figures
    }
}

/// Waits until `count` arrivals.
final class AsyncCountdown: @unchecked Sendable {
    // @unchecked Sendable: `lock` guards `remaining` and `waiter`.
    private let lock = NSLock()
    private var remaining: Int
    private var waiter: CheckedContinuation<Void, Never>?

    init(_ count: Int) { remaining = count }

    func arrive() {
        lock.lock()
        remaining -= 1
        let resumed = remaining == 0 ? waiter : nil
        if resumed != nil { waiter = nil }
        lock.unlock()
        resumed?.resume()
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            lock.lock()
            if remaining <= 0 {
                lock.unlock()
                continuation.resume()
            } else {
                waiter = continuation
                lock.unlock()
            }
        }
    }
}

/// The process's resident memory, and the allocator's free memory given back to the system before it is read.
enum Memory {
    static func resident() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return (line.split(separator: " ").compactMap { Int($0) }.first ?? 0) * 1024
        }
        return 0
    }

    /// glibc's `malloc_trim(0)`, found at run time (Swift's Glibc module does not import `malloc.h`): freed memory
    /// otherwise stays resident in the allocator's arenas, and "released" could not be read from the resident size.
    static func trim() {
        typealias MallocTrim = @convention(c) (Int) -> Int32
        guard let symbol = dlsym(nil, "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: MallocTrim.self)(0)
    }
}

/// The process's limit on open files: raised before anything starts (Benchmarks.swift), since each stream of the
/// Scale/ benchmarks is a socket here and one in the server, and the soft limit is often 1,024.
enum FileLimit {
    static func raiseToHardLimit() {
        #if canImport(Glibc)
            var limit = rlimit()
            guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        #endif
    }
}
