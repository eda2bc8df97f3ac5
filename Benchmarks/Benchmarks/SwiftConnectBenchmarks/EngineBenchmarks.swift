import AsyncHTTPClient
import Benchmark
import BenchmarkFixtures
import Dispatch
import Foundation
import NIOCore
import SwiftConnect
import SwiftConnectAsyncHTTPClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Issue 23, item 4: Connect over AsyncHTTPClientTransport beside raw AsyncHTTPClient (`execute` with the body
// collected, then decoded) and raw URLSession, to the same loopback server, sequentially and 16 in flight. The
// three clients take turns within each sample (see `registerInterleaved` in LoopbackBenchmarks.swift for why),
// and peak memory is measured apart, one client per process.

func registerEngineBenchmarks() {
    for width in [1, 16] {
        let name = width == 1 ? "Engines/GET 1 KiB JSON sequential" : "Engines/GET 1 KiB JSON \(width) in flight"
        registerEngineTurns(name: name, width: width)
        let config = configuration(scalingFactor: .kilo, metrics: memoryMetrics, maxDuration: .seconds(12))
        Benchmark(name + "/SwiftConnect Connect over AsyncHTTPClient", configuration: config) { benchmark in
            let client = EngineClients.client { EngineTrio() }.connect
            var failures = 0
            benchmark.measure { failures = client.run(count: benchmark.operations, width: width) }
            if failures > 0 { benchmark.error("\(failures) requests failed") }
        }
        Benchmark(name + "/raw AsyncHTTPClient", configuration: config) { benchmark in
            let client = EngineClients.client { EngineTrio() }.rawAHC
            var failures = 0
            benchmark.measure { failures = client.run(count: benchmark.operations, width: width) }
            if failures > 0 { benchmark.error("\(failures) requests failed") }
        }
    }
}

/// Per-request wall and CPU time of each client over its steady batches, in one sample.
let engineMetrics: [BenchmarkMetric] = [
    .custom("Engine Connect over AHC time (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("Engine raw AHC time (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("Engine raw URLSession time (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("Engine Connect over AHC CPU (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("Engine raw AHC CPU (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("Engine raw URLSession CPU (ns)", polarity: .prefersSmaller, useScalingFactor: true),
]

private func registerEngineTurns(name: String, width: Int) {
    let config = configuration(
        scalingFactor: .kilo, metrics: coreMetrics + engineMetrics, maxDuration: .seconds(25), maxIterations: 10_000)
    Benchmark(
        name + "/SwiftConnect Connect over AsyncHTTPClient, raw AsyncHTTPClient, raw URLSession, interleaved",
        configuration: config
    ) { benchmark in
        let trio = EngineClients.client { EngineTrio() }
        let clients: [any EngineClient] = [trio.connect, trio.rawAHC, trio.rawURLSession]
        let total = benchmark.operations
        let batch = max(1, min(total, width == 1 ? 100 : 250))
        var wall = [0, 0, 0]
        var cpu = [0, 0, 0]
        var failures = 0
        benchmark.measure {
            var done = 0
            var first = 0
            while done < total {
                let count = min(batch, total - done)
                for step in 0..<3 {
                    let index = (first + step) % 3
                    // A batch after the other clients' turns, then the measured (steady) batch.
                    failures += clients[index].run(count: count, width: width)
                    let cpuStart = processCPUNanoseconds()
                    let start = DispatchTime.now().uptimeNanoseconds
                    failures += clients[index].run(count: count, width: width)
                    wall[index] += Int(DispatchTime.now().uptimeNanoseconds - start)
                    cpu[index] += processCPUNanoseconds() - cpuStart
                }
                done += count
                first = (first + 1) % 3
            }
        }
        if failures > 0 { return benchmark.error("\(failures) requests failed") }
        for (metric, value) in zip(engineMetrics, wall + cpu) { benchmark.measurement(metric, value) }
    }
}

/// The three clients, made once per benchmark process.
private final class EngineTrio: Sendable {
    let connect = ConnectOverAHC()
    let rawAHC = RawAHC()
    let rawURLSession = RawURLSession()
}

private enum EngineClients {
    nonisolated(unsafe) static var current: EngineTrio?

    static func client(_ make: () -> EngineTrio) -> EngineTrio {
        if let current { return current }
        let trio = make()
        current = trio
        return trio
    }
}

private protocol EngineClient: AnyObject, Sendable {
    /// Starts one request; `done(succeeded)` is called from any thread when it ends.
    func start(_ done: @escaping @Sendable (Bool) -> Void)
}

extension EngineClient {
    /// Runs `count` requests, at most `width` at a time. Returns how many failed.
    func run(count: Int, width: Int) -> Int {
        let failures = Sink()
        runWindowed(total: count, width: width) { _, finished in
            self.start { succeeded in
                if !succeeded { failures.add(1) }
                finished()
            }
        }
        return failures.total
    }
}

/// A typed GET of the to-do list (1 KiB).
private struct GetTodos: TypedConnector {
    typealias Response = [Todo]
    var baseURL: URL { LoopbackServer.baseURL }
    var endpoint: String { "/todos/1k" }
    var method: HTTPMethod { .get }
    var headers: [HTTPHeader] { [] }
    var parameters: (any ParametersRepresentable)? { nil }
}

/// `Connect(transport: AsyncHTTPClientTransport())`, the defaults otherwise, `send` of a typed connector.
private final class ConnectOverAHC: EngineClient {
    let connect = Connect(transport: AsyncHTTPClientTransport())

    init() {
        _ = LoopbackServer.shared
    }

    func start(_ done: @escaping @Sendable (Bool) -> Void) {
        connect.send(GetTodos()).observe { result in
            if case .success(let todos) = result { done(!todos.isEmpty) } else { done(false) }
        }
    }
}

/// AsyncHTTPClient as its README shows it: `execute`, check the status, collect the body, decode.
private final class RawAHC: EngineClient {
    let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
    let url = LoopbackServer.baseURL.appendingPathComponent("todos/1k").absoluteString

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

/// Raw URLSession (default configuration) with a completion handler, as in the Loopback benchmarks.
private final class RawURLSession: EngineClient {
    let session = URLSession(configuration: .default)
    let url = LoopbackServer.baseURL.appendingPathComponent("todos/1k")

    func start(_ done: @escaping @Sendable (Bool) -> Void) {
        var request = URLRequest(url: url)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        session.dataTask(with: request) { data, response, error in
            guard error == nil, let data, (response as? HTTPURLResponse)?.statusCode == 200,
                let todos = try? JSONDecoder().decode([Todo].self, from: data)
            else { return done(false) }
            done(!todos.isEmpty)
        }.resume()
    }
}
