import AsyncHTTPClient
import Benchmark
import BenchmarkFixtures
import Foundation
import NIOCore
import SwiftConnect
import SwiftConnectAsyncHTTPClient

// Issue 23, item 4: Connect over AsyncHTTPClientTransport beside raw AsyncHTTPClient (`execute` with the body
// collected, then decoded) and raw URLSession, to the same loopback server, sequentially and 16 in flight. Raw
// AsyncHTTPClient runs twice: with its default configuration, as the issue names it, and with the transport's
// (`AsyncHTTPClientTransport.defaultConfiguration`; until 30 November 2026 it turned AsyncHTTPClient's decompression
// on, which added NIO's decompressor to every connection; SwiftConnect's core decodes now, and asks for gzip in an
// `Accept-Encoding` of its own), so that the engine's own work is told apart from SwiftConnect's. The four clients take turns within each sample (see `registerInterleaved` in
// LoopbackBenchmarks.swift for why), and peak memory is measured apart, one client per process.

func registerEngineBenchmarks() {
    for width in [1, 16] {
        let name = width == 1 ? "Engines/GET 1 KiB JSON sequential" : "Engines/GET 1 KiB JSON \(width) in flight"
        registerEngineTurns(name: name, width: width)
        let config = configuration(scalingFactor: .kilo, metrics: memoryMetrics, maxDuration: .seconds(12))
        Benchmark(name + "/SwiftConnect Connect over AsyncHTTPClient", configuration: config) { benchmark in
            let client = LoopbackClients.client { EngineClients() }.connect
            var failures = 0
            benchmark.measure { failures = client.run(count: benchmark.operations, width: width) }
            if failures > 0 { benchmark.fail("\(failures) requests failed") }
        }
        Benchmark(name + "/raw AsyncHTTPClient", configuration: config) { benchmark in
            let client = LoopbackClients.client { EngineClients() }.rawAHC
            var failures = 0
            benchmark.measure { failures = client.run(count: benchmark.operations, width: width) }
            if failures > 0 { benchmark.fail("\(failures) requests failed") }
        }
    }
}

/// Per-request wall and CPU time of each client over its steady batches, in one sample.
let engineMetrics: [BenchmarkMetric] = [
    .custom("Engine Connect over AHC time (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("Engine raw AHC time (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("Engine raw URLSession time (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("Engine raw AHC transport configuration time (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("Engine Connect over AHC CPU (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("Engine raw AHC CPU (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("Engine raw URLSession CPU (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("Engine raw AHC transport configuration CPU (ns)", polarity: .prefersSmaller, useScalingFactor: true),
]

/// Voluntary context switches per request (`getrusage`, the whole process) of Connect over AsyncHTTPClient and of raw
/// AsyncHTTPClient, in thousandths of a switch: a hop to another thread that had to wake up is one.
let engineSwitchMetrics: [BenchmarkMetric] = [
    .custom(
        "Engine Connect over AHC voluntary switches (per mille)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("Engine raw AHC voluntary switches (per mille)", polarity: .prefersSmaller, useScalingFactor: true),
]

/// Each sample's ratio of raw AsyncHTTPClient's wall time to Connect's over it, in thousandths (900 is 0.9×): their
/// spread over the samples shows how far one sample's ratio is from another's, which the medians alone hide.
let engineRatioMetrics: [BenchmarkMetric] = [
    .custom("Engine ratio raw AHC to Connect (per mille)", polarity: .prefersLarger, useScalingFactor: false),
    .custom(
        "Engine ratio raw AHC transport configuration to Connect (per mille)", polarity: .prefersLarger,
        useScalingFactor: false),
]

private func registerEngineTurns(name: String, width: Int) {
    let config = configuration(
        scalingFactor: .kilo, metrics: coreMetrics + engineMetrics + engineRatioMetrics + engineSwitchMetrics,
        maxDuration: .seconds(25),
        maxIterations: 10_000)
    Benchmark(
        name + "/SwiftConnect Connect over AsyncHTTPClient, raw AsyncHTTPClient, raw URLSession, interleaved",
        configuration: config
    ) { benchmark in
        let engines = LoopbackClients.client { EngineClients() }
        let clients: [any LoopbackClient] = [
            engines.connect, engines.rawAHC, engines.rawURLSession, engines.rawAHCAsTransport,
        ]
        let total = benchmark.operations
        var turns = InterleavedTurns()
        benchmark.measure {
            turns = interleavedTurns(
                clients, total: total, width: width, batch: max(1, min(total, width == 1 ? 100 : 250)))
        }
        let (wall, cpu, failures) = (turns.wall, turns.cpu, turns.failures)
        if failures > 0 { return benchmark.fail("\(failures) requests failed") }
        for (metric, value) in zip(engineMetrics, wall + cpu) { benchmark.measurement(metric, value) }
        // Issue 37, item 2: voluntary context switches per request, Connect's beside raw AsyncHTTPClient's, in
        // thousandths of a switch (the sample's total over its requests, scaled like the other figures).
        for (metric, value) in zip(engineSwitchMetrics, turns.switches.prefix(2)) {
            benchmark.measurement(metric, value * 1000)
        }
        if wall[0] > 0 {
            benchmark.measurement(engineRatioMetrics[0], wall[1] * 1000 / wall[0])
            benchmark.measurement(engineRatioMetrics[1], wall[3] * 1000 / wall[0])
        }
    }
}

/// The clients, made once per benchmark process.
private final class EngineClients: Sendable {
    let connect = ConnectOverAHC()
    let rawAHC = RawAHC(configuration: HTTPClient.Configuration())
    let rawURLSession = RawClient(path: "/todos/1k", configuration: .default)
    /// Raw AsyncHTTPClient with the configuration `AsyncHTTPClientTransport()` gives its own client.
    let rawAHCAsTransport = RawAHC(configuration: AsyncHTTPClientTransport.defaultConfiguration)
}

/// `Connect(transport: AsyncHTTPClientTransport())`, the defaults otherwise, `send` of a typed connector to `path`.
final class ConnectOverAHC: LoopbackClient {
    let connect = Connect(transport: AsyncHTTPClientTransport())
    let path: String

    init(path: String = "/todos/1k") {
        self.path = path
        _ = LoopbackServer.shared
    }

    func start(_ done: @escaping @Sendable (Bool) -> Void) {
        connect.send(GetTodos(path: path)).observe { result in
            if case .success(let todos) = result { done(!todos.isEmpty) } else { done(false) }
        }
    }
}

/// AsyncHTTPClient as its README shows it: `execute`, check the status, collect the body, decode.
final class RawAHC: LoopbackClient {
    let client: HTTPClient
    let url: String
    /// Whether `client` is this object's own, to shut down with it.
    private let ownsClient: Bool

    init(configuration: HTTPClient.Configuration, path: String = "todos/1k") {
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        url = LoopbackServer.baseURL.appendingPathComponent(path).absoluteString
        ownsClient = true
    }

    /// Over `client`, shared with another benchmark client.
    init(client: HTTPClient) {
        self.client = client
        url = LoopbackServer.baseURL.appendingPathComponent("todos/1k").absoluteString
        ownsClient = false
    }

    /// A client released without `shutdown()` leaks its connections, and traps in a debug build (the smoke pass's).
    deinit {
        if ownsClient { try? client.syncShutdown() }
    }

    func start(_ done: @escaping @Sendable (Bool) -> Void) {
        Task { [client, url] in
            do {
                var request = HTTPClientRequest(url: url)
                request.headers.add(name: "Accept", value: "application/json")
                let response = try await client.execute(request, timeout: .seconds(30))
                let body = try await response.body.collect(upTo: 1 << 20)
                guard response.status == .ok else { return done(false) }
                let todos = try JSONDecoder().decode([Todo].self, from: Data(body.readableBytesView))
                done(!todos.isEmpty)
            } catch {
                done(false)
            }
        }
    }
}
