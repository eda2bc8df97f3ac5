import Benchmark
import BenchmarkFixtures
import Dispatch
import Foundation
import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Issue 6, item 4: the same JSON GET through Connect (URLSessionTransport) and through raw URLSession with a
// completion handler, to the same loopback server (a child process, see LoopbackServer), sequentially and with
// 16 requests in flight. Both sides check the status and decode the body into [Todo].

func registerLoopbackBenchmarks() {
    // About 1,000 requests per sample; the tables show per-request figures.
    let sequential = configuration(scalingFactor: .kilo, metrics: memoryMetrics, maxDuration: .seconds(12))
    let concurrent = configuration(scalingFactor: .kilo, metrics: memoryMetrics, maxDuration: .seconds(12))
    let large = configuration(
        scalingFactor: .kilo, metrics: memoryMetrics, maxDuration: .seconds(20), maxIterations: 5)

    for (path, label, config, widths) in [
        ("/todos/1k", "1 KiB", sequential, [1]),
        ("/todos/1k", "1 KiB", concurrent, [16]),
        ("/todos/100k", "100 KiB", large, [16]),
    ] {
        for width in widths {
            let name =
                width == 1 ? "Loopback/GET \(label) JSON sequential" : "Loopback/GET \(label) JSON \(width) in flight"
            registerInterleaved(name: name, path: path, width: width, large: path.hasSuffix("100k"))
            register(name: name + "/SwiftConnect Connect", config: config) {
                ConnectClient(path: path)
            } run: { client, count in
                client.run(count: count, width: width)
            }
            // Diagnostics: the same Connect over a session with URLSession's default configuration (URLCache on),
            // and with 16 connections per host instead of the default 6.
            register(name: name + "/SwiftConnect Connect, URLSession default configuration", config: config) {
                ConnectClient(path: path, transport: URLSessionTransport(configuration: .default))
            } run: { client, count in
                client.run(count: count, width: width)
            }
            if width > 1 {
                register(name: name + "/SwiftConnect Connect, 16 connections per host", config: config) {
                    let configuration = URLSessionTransport.defaultConfiguration
                    configuration.httpMaximumConnectionsPerHost = 16
                    return ConnectClient(path: path, transport: URLSessionTransport(configuration: configuration))
                } run: { client, count in
                    client.run(count: count, width: width)
                }
            }
            register(name: name + "/raw URLSession default configuration", config: config) {
                RawClient(path: path, configuration: .default)
            } run: { client, count in
                client.run(count: count, width: width)
            }
            register(name: name + "/raw URLSession without URLCache", config: config) {
                let configuration = URLSessionConfiguration.default
                configuration.urlCache = nil
                configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
                return RawClient(path: path, configuration: configuration)
            } run: { client, count in
                client.run(count: count, width: width)
            }
            if width > 1 {
                register(name: name + "/raw URLSession 16 connections per host", config: config) {
                    let configuration = URLSessionConfiguration.default
                    configuration.httpMaximumConnectionsPerHost = 16
                    return RawClient(path: path, configuration: configuration)
                } run: { client, count in
                    client.run(count: count, width: width)
                }
            }
        }
    }
}

/// Connect and raw URLSession (default configuration) in the same samples: each sample alternates turns between
/// the two clients, switching which goes first, and records each client's wall time, CPU time and the
/// connections the server accepted during its turns.
///
/// The separate benchmarks above run minutes apart, each in its own process, and this machine's speed drifts
/// between them by more than the differences they compare (±30 %). Batches of a few hundred requests put both
/// clients under the same conditions, so their ratio is measured, not the drift.
///
/// A turn is two batches of the same size. The first starts right after the other client's turn, when this
/// client's threads have been idle for tens of milliseconds; the second follows it at once. The steady figures
/// (the throughput the targets speak of) come from the second batches; the first ones are recorded apart, as
/// the figures of a burst after a pause. On Linux the first few hundred requests after even 50 ms of idleness
/// run slower while the scheduler spreads the client's threads over the cores again (BENCHMARKS.md).
private func registerInterleaved(name: String, path: String, width: Int, large: Bool) {
    let config = configuration(
        scalingFactor: .kilo, metrics: interleavedMetrics, maxDuration: .seconds(large ? 45 : 20),
        maxIterations: large ? 5 : 10_000)
    Benchmark(name + "/SwiftConnect Connect and raw URLSession, interleaved", configuration: config) { benchmark in
        let clients = LoopbackClients.client {
            ClientPair(connect: ConnectClient(path: path), raw: RawClient(path: path, configuration: .default))
        }
        let total = benchmark.operations
        // Batches of 100 requests sequentially, 250 with 16 in flight (the window fills and drains once per batch).
        let batch = max(1, min(total, width == 1 ? 100 : 250))
        var connect = Turns()
        var raw = Turns()
        var failures = 0
        benchmark.measure {
            var done = 0
            var connectFirst = true
            while done < total {
                let count = min(batch, total - done)
                for step in 0..<2 {
                    let isConnect = (step == 0) == connectFirst
                    let client: any LoopbackClient = isConnect ? clients.connect : clients.raw
                    let afterPause = timedBatch(client, count: count, width: width, failures: &failures)
                    let steady = timedBatch(client, count: count, width: width, failures: &failures)
                    if isConnect {
                        connect.add(afterPause: afterPause, steady: steady)
                    } else {
                        raw.add(afterPause: afterPause, steady: steady)
                    }
                }
                done += count
                connectFirst.toggle()
            }
        }
        if failures > 0 { return benchmark.fail("\(failures) requests failed") }
        benchmark.measurement(pairedConnectMetric, connect.steady.nanoseconds)
        benchmark.measurement(pairedRawMetric, raw.steady.nanoseconds)
        benchmark.measurement(pairedConnectCPUMetric, connect.steady.cpu)
        benchmark.measurement(pairedRawCPUMetric, raw.steady.cpu)
        benchmark.measurement(pairedConnectAfterPauseMetric, connect.afterPause.nanoseconds)
        benchmark.measurement(pairedRawAfterPauseMetric, raw.afterPause.nanoseconds)
        benchmark.measurement(connectConnectionsMetric, connect.afterPause.connections + connect.steady.connections)
        benchmark.measurement(rawConnectionsMetric, raw.afterPause.connections + raw.steady.connections)
    }
}

/// Clients taking turns in one sample, in batches of `batch` requests `width` at a time, each turn starting with a
/// different client: each client runs a batch after the others' turns, then the measured (steady) batch. Returns each
/// client's wall and CPU nanoseconds over its steady batches, and how many requests failed.
func interleavedTurns(
    _ clients: [any LoopbackClient], total: Int, width: Int, batch: Int
) -> InterleavedTurns {
    var turns = InterleavedTurns(clients: clients.count)
    var done = 0
    var first = 0
    while done < total {
        let count = min(batch, total - done)
        for step in 0..<clients.count {
            let index = (first + step) % clients.count
            turns.failures += clients[index].run(count: count, width: width)
            let steady = timedBatch(clients[index], count: count, width: width, failures: &turns.failures)
            turns.wall[index] += steady.nanoseconds
            turns.cpu[index] += steady.cpu
            turns.switches[index] += steady.voluntarySwitches
        }
        done += count
        first = (first + 1) % clients.count
    }
    return turns
}

/// Each client's totals over its steady batches of an interleaved sample, in the order the clients were given.
struct InterleavedTurns {
    var wall: [Int]
    var cpu: [Int]
    /// Voluntary context switches of the whole process (`getrusage`): a thread that waited, for a lock, a
    /// condition or I/O, and gave its core up. A hop from one thread to another to deliver an answer is one.
    var switches: [Int]
    var failures = 0

    init(clients: Int = 0) {
        wall = Array(repeating: 0, count: clients)
        cpu = wall
        switches = wall
    }
}

/// Runs one batch of `count` requests, `width` at a time, and measures it.
func timedBatch(_ client: any LoopbackClient, count: Int, width: Int, failures: inout Int) -> BatchTotals {
    let connectionsBefore = LoopbackServer.shared.connectionsAccepted()
    let switchesBefore = voluntaryContextSwitches()
    let cpuStart = processCPUNanoseconds()
    let start = DispatchTime.now().uptimeNanoseconds
    failures += client.run(count: count, width: width)
    return BatchTotals(
        nanoseconds: Int(DispatchTime.now().uptimeNanoseconds - start),
        cpu: processCPUNanoseconds() - cpuStart,
        connections: LoopbackServer.shared.connectionsAccepted() - connectionsBefore,
        voluntarySwitches: voluntaryContextSwitches() - switchesBefore)
}

/// One client's turns of an interleaved sample: the batches right after the other client's, and the batches
/// after its own.
private struct Turns {
    var afterPause = BatchTotals()
    var steady = BatchTotals()

    mutating func add(afterPause: BatchTotals, steady: BatchTotals) {
        self.afterPause.add(afterPause)
        self.steady.add(steady)
    }
}

/// One client's share of an interleaved sample.
struct BatchTotals {
    var nanoseconds = 0
    var cpu = 0
    var connections = 0
    var voluntarySwitches = 0

    mutating func add(_ other: BatchTotals) {
        nanoseconds += other.nanoseconds
        cpu += other.cpu
        connections += other.connections
        voluntarySwitches += other.voluntarySwitches
    }
}

/// Per sample of the interleaved benchmarks (scaled per request): each client's wall time and process CPU time
/// over its steady batches, its wall time over the batches right after the other client's, and the connections
/// the server accepted during all of its batches (twice as many requests as the sample's operations).
let pairedConnectAfterPauseMetric = BenchmarkMetric.custom(
    "Paired Connect time after a pause (ns)", polarity: .prefersSmaller, useScalingFactor: true)
let pairedRawAfterPauseMetric = BenchmarkMetric.custom(
    "Paired raw time after a pause (ns)", polarity: .prefersSmaller, useScalingFactor: true)
let pairedRawMetric = BenchmarkMetric.custom(
    "Paired raw time (ns)", polarity: .prefersSmaller, useScalingFactor: true)
let pairedConnectCPUMetric = BenchmarkMetric.custom(
    "Paired Connect CPU (ns)", polarity: .prefersSmaller, useScalingFactor: true)
let pairedRawCPUMetric = BenchmarkMetric.custom(
    "Paired raw CPU (ns)", polarity: .prefersSmaller, useScalingFactor: true)
let connectConnectionsMetric = BenchmarkMetric.custom(
    "Connect connections opened", polarity: .prefersSmaller, useScalingFactor: false)
let rawConnectionsMetric = BenchmarkMetric.custom(
    "Raw connections opened", polarity: .prefersSmaller, useScalingFactor: false)
private let interleavedMetrics: [BenchmarkMetric] =
    coreMetrics + [
        pairedConnectMetric, pairedRawMetric, pairedConnectCPUMetric, pairedRawCPUMetric,
        pairedConnectAfterPauseMetric, pairedRawAfterPauseMetric, connectConnectionsMetric, rawConnectionsMetric,
    ]

/// The two clients of an interleaved benchmark, made once per benchmark process.
private final class ClientPair: Sendable {
    let connect: ConnectClient
    let raw: RawClient

    init(connect: ConnectClient, raw: RawClient) {
        self.connect = connect
        self.raw = raw
    }
}

/// Registers a loopback benchmark whose client is made once per benchmark process (so connections are kept
/// alive across samples, as in an app) and fails the benchmark if any request failed.
private func register<Client: LoopbackClient>(
    name: String,
    config: Benchmark.Configuration,
    make: @escaping () -> Client,
    run: @escaping (Client, Int) -> Int
) {
    Benchmark(name, configuration: config) { benchmark in
        let client = LoopbackClients.client(make)
        var failures = 0
        benchmark.measure {
            failures = run(client, benchmark.operations)
        }
        if failures > 0 { benchmark.fail("\(failures) of \(benchmark.operations) requests failed") }
    }
}

/// One client per benchmark process.
enum LoopbackClients {
    nonisolated(unsafe) static var current: AnyObject?

    static func client<Client: AnyObject>(_ make: () -> Client) -> Client {
        if let client = current as? Client { return client }
        let client = make()
        current = client
        return client
    }
}

protocol LoopbackClient: AnyObject, Sendable {
    /// Starts one request; `done(succeeded)` is called from any thread when it ends.
    func start(_ done: @escaping @Sendable (Bool) -> Void)
}

extension LoopbackClient {
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

/// A typed GET of the to-do list.
struct GetTodos: TypedConnector {
    typealias Response = [Todo]
    let path: String

    var baseURL: URL { LoopbackServer.baseURL }
    var endpoint: String { path }
    var method: HTTPMethod { .get }
    var headers: [HTTPHeader] { [] }
    var parameters: (any ParametersRepresentable)? { nil }
}

/// SwiftConnect as an app would use it: `Connect()`'s defaults (URLSessionTransport, default retry policy,
/// ErrorHandler), `send` of a typed connector, decoded by the client.
private final class ConnectClient: LoopbackClient {
    let connect: Connect
    let connector: GetTodos

    init(path: String, transport: URLSessionTransport = URLSessionTransport()) {
        connect = Connect(transport: transport)
        connector = GetTodos(path: path)
        _ = LoopbackServer.shared
    }

    func start(_ done: @escaping @Sendable (Bool) -> Void) {
        connect.send(connector).observe { result in
            if case .success(let todos) = result {
                done(!todos.isEmpty)
            } else {
                done(false)
            }
        }
    }
}

/// Raw URLSession with a completion handler: check the status, decode with a JSONDecoder.
final class RawClient: LoopbackClient {
    let session: URLSession
    let url: URL

    init(path: String, configuration: URLSessionConfiguration) {
        session = URLSession(configuration: configuration)
        url = LoopbackServer.baseURL.appendingPathComponent(String(path.dropFirst()))
    }

    func start(_ done: @escaping @Sendable (Bool) -> Void) {
        var request = URLRequest(url: url)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        session.dataTask(with: request) { data, response, error in
            guard error == nil, let data, (response as? HTTPURLResponse)?.statusCode == 200,
                let todos = try? JSONDecoder().decode([Todo].self, from: data)
            else {
                done(false)
                return
            }
            done(!todos.isEmpty)
        }.resume()
    }
}
