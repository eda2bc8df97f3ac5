import AsyncHTTPClient
import Benchmark
import BenchmarkFixtures
import Foundation
import SwiftConnect
import SwiftConnectAsyncHTTPClient

// SwiftConnect's core decodes gzip for `AsyncHTTPClientTransport` (since 30 November 2026; the transport's client
// decompressed before, with NIO's decompressor). This puts the two side by side on the same answer: the 100 KiB JSON
// of `GET /todos/100k`, gzip'd once by the loopback server (`GET /todos/100k.gz`), fetched and decoded sequentially
// by Connect over `AsyncHTTPClientTransport()` and by raw AsyncHTTPClient with `decompression: .enabled`, taking turns
// within each sample. The ratio is raw's time over Connect's.

/// Per-request wall and CPU time of each client over its steady batches, in one sample, and their ratio.
let compressedMetrics: [BenchmarkMetric] = [
    .custom("Gzip Connect over AHC time (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("Gzip raw AHC decompressing time (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("Gzip Connect over AHC CPU (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("Gzip raw AHC decompressing CPU (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom(
        "Gzip ratio raw AHC decompressing to Connect (per mille)", polarity: .prefersLarger, useScalingFactor: false),
]

func registerCompressedBenchmarks() {
    let config = configuration(
        scalingFactor: .kilo, metrics: coreMetrics + compressedMetrics, maxDuration: .seconds(45),
        maxIterations: 10_000)
    Benchmark(
        "Engines/GET 100 KiB JSON gzip sequential/SwiftConnect Connect over AsyncHTTPClient, raw AsyncHTTPClient "
            + "decompressing, interleaved",
        configuration: config
    ) { benchmark in
        let clients = LoopbackClients.client { CompressedClients() }
        let total = benchmark.operations
        var turns = InterleavedTurns()
        benchmark.measure {
            turns = interleavedTurns(
                [clients.connect, clients.raw], total: total, width: 1, batch: max(1, min(total, 50)))
        }
        if turns.failures > 0 { return benchmark.fail("\(turns.failures) requests failed") }
        for (metric, value) in zip(compressedMetrics, turns.wall + turns.cpu) { benchmark.measurement(metric, value) }
        if turns.wall[0] > 0 { benchmark.measurement(compressedMetrics[4], turns.wall[1] * 1000 / turns.wall[0]) }
    }
}

/// The clients, made once per benchmark process.
private final class CompressedClients: Sendable {
    let connect = ConnectOverAHC(path: "/todos/100k.gz")
    let raw = RawAHC(configuration: decompressing, path: "todos/100k.gz")

    /// AsyncHTTPClient's defaults with its decompressor on, which asks for gzip and decodes it.
    private static var decompressing: HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.decompression = .enabled(limit: .none)
        return configuration
    }
}
