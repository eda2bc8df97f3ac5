import AsyncHTTPClient
import Benchmark
import BenchmarkFixtures
import Foundation
import HTTPTypes
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import SwiftConnect
import SwiftConnectAsyncHTTPClient
import SwiftConnectOpenAPI

// Issue 40, item 1: what `ConnectClientTransport` (the OpenAPI transport) costs over `Connect` used directly, both
// over AsyncHTTPClientTransport, to the same loopback server: a 1 KiB JSON GET decoded into a model. The transport is
// called as generated code calls it (`send(_:body:baseURL:operationID:)`, the body collected, then decoded with
// JSONDecoder): the generated code's own work is the same for every transport. Generated code is `async`, so Connect
// runs twice: with a callback (`observe`), and awaited in a task (`try await …value`), which is what an async caller of
// Connect pays anyway; the transport's own cost is its difference from the latter. The clients take turns within each
// sample (wall and CPU per request); allocations are counted with one client per benchmark. For scale, the official
// transport of swift-openapi-async-http-client runs beside raw AsyncHTTPClient awaited the same way: its difference
// is what the OpenAPI runtime's types (HTTPRequest, HTTPBody, HTTPFields) cost any transport.

func registerOpenAPIBenchmarks() {
    let name = "OpenAPI/GET 1 KiB JSON sequential"
    let turns = configuration(
        scalingFactor: .kilo, metrics: coreMetrics + openAPIMetrics, maxDuration: .seconds(20), maxIterations: 10_000)
    Benchmark(
        name + "/Connect, Connect awaited and ConnectClientTransport over AsyncHTTPClient, interleaved",
        configuration: turns
    ) {
        benchmark in
        let clients = LoopbackClients.client { OpenAPIClients() }
        let pair: [any LoopbackClient] = [clients.connect, clients.awaited, clients.openAPI]
        let total = benchmark.operations
        var turns = InterleavedTurns()
        benchmark.measure { turns = interleavedTurns(pair, total: total, width: 1, batch: max(1, min(total, 100))) }
        let (wall, cpu, failures) = (turns.wall, turns.cpu, turns.failures)
        if failures > 0 { return benchmark.fail("\(failures) requests failed") }
        for (metric, value) in zip(openAPIMetrics, wall + cpu) { benchmark.measurement(metric, value) }
    }
    let officialTurns = configuration(
        scalingFactor: .kilo, metrics: coreMetrics + officialMetrics, maxDuration: .seconds(20), maxIterations: 10_000)
    Benchmark(
        name + "/raw AsyncHTTPClient and the official OpenAPI AsyncHTTPClient transport, interleaved",
        configuration: officialTurns
    ) {
        benchmark in
        let clients = LoopbackClients.client { OfficialClients() }
        let pair: [any LoopbackClient] = [clients.raw, clients.official]
        let total = benchmark.operations
        var turns = InterleavedTurns()
        benchmark.measure { turns = interleavedTurns(pair, total: total, width: 1, batch: max(1, min(total, 100))) }
        let (wall, cpu, failures) = (turns.wall, turns.cpu, turns.failures)
        if failures > 0 { return benchmark.fail("\(failures) requests failed") }
        for (metric, value) in zip(officialMetrics, wall + cpu) { benchmark.measurement(metric, value) }
    }
    let alone = configuration(scalingFactor: .kilo, metrics: coreMetrics, maxDuration: .seconds(8))
    let variants: [(String, @Sendable () -> any LoopbackClient)] = [
        ("raw AsyncHTTPClient", { LoopbackClients.client { OfficialClients() }.raw }),
        ("official OpenAPI AsyncHTTPClient transport", { LoopbackClients.client { OfficialClients() }.official }),
        ("Connect over AsyncHTTPClient", { LoopbackClients.client { OpenAPIClients() }.connect }),
        ("Connect awaited over AsyncHTTPClient", { LoopbackClients.client { OpenAPIClients() }.awaited }),
        ("ConnectClientTransport over AsyncHTTPClient", { LoopbackClients.client { OpenAPIClients() }.openAPI }),
    ]
    for (variant, makeClient) in variants {
        Benchmark(name + "/" + variant, configuration: alone) { benchmark in
            let client = makeClient()
            var failures = 0
            benchmark.measure { failures = client.run(count: benchmark.operations, width: 1) }
            if failures > 0 { benchmark.fail("\(failures) requests failed") }
        }
    }
}

/// Per-request wall and CPU time of each client over its steady batches, in one sample.
let openAPIMetrics: [BenchmarkMetric] = [
    .custom("OpenAPI Connect time (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("OpenAPI Connect awaited time (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("OpenAPI ConnectClientTransport time (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("OpenAPI Connect CPU (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("OpenAPI Connect awaited CPU (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("OpenAPI ConnectClientTransport CPU (ns)", polarity: .prefersSmaller, useScalingFactor: true),
]

/// Per-request wall and CPU time of raw AsyncHTTPClient and the official OpenAPI transport, in one sample.
let officialMetrics: [BenchmarkMetric] = [
    .custom("OpenAPI raw AHC time (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("OpenAPI official transport time (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("OpenAPI raw AHC CPU (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("OpenAPI official transport CPU (ns)", polarity: .prefersSmaller, useScalingFactor: true),
]

/// Raw AsyncHTTPClient and the official OpenAPI transport over one client of the same configuration as
/// `AsyncHTTPClientTransport()`'s own, made once per benchmark process.
private final class OfficialClients: Sendable {
    let client = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup,
        configuration: SwiftConnectAsyncHTTPClient.AsyncHTTPClientTransport.defaultConfiguration)
    let raw: RawAHC
    let official: OfficialOverAHC

    init() {
        _ = LoopbackServer.shared
        raw = RawAHC(client: client)
        official = OfficialOverAHC(client: client)
    }

    /// A client released without `shutdown()` leaks its connections, and traps in a debug build (the smoke pass's).
    deinit {
        try? client.syncShutdown()
    }
}

/// swift-openapi-async-http-client's transport, called as generated code calls it.
private final class OfficialOverAHC: LoopbackClient {
    let transport: OpenAPIAsyncHTTPClient.AsyncHTTPClientTransport
    let baseURL = LoopbackServer.baseURL

    init(client: HTTPClient) {
        transport = OpenAPIAsyncHTTPClient.AsyncHTTPClientTransport(configuration: .init(client: client))
    }

    func start(_ done: @escaping @Sendable (Bool) -> Void) {
        Task { [transport, baseURL] in
            await OpenAPICall.getTodos(through: transport, baseURL: baseURL, done: done)
        }
    }
}

/// A GET of the to-do list as generated code sends it through a `ClientTransport`: the head, the body collected,
/// then decoded.
enum OpenAPICall {
    static func getTodos(
        through transport: some ClientTransport, baseURL: URL, done: @escaping @Sendable (Bool) -> Void
    ) async {
        do {
            let request = HTTPRequest(
                method: .get, scheme: nil, authority: nil, path: "/todos/1k",
                headerFields: [.accept: "application/json"])
            let (response, body) = try await transport.send(
                request, body: nil, baseURL: baseURL, operationID: "getTodos")
            guard response.status == .ok, let body else { return done(false) }
            let todos = try JSONDecoder().decode([Todo].self, from: try await Data(collecting: body, upTo: 1 << 20))
            done(!todos.isEmpty)
        } catch {
            done(false)
        }
    }
}

/// The three clients, made once per benchmark process, each with a transport of its own.
private final class OpenAPIClients: Sendable {
    let connect = ConnectOverAHC()
    let awaited = ConnectAwaitedOverEngine()
    let openAPI = OpenAPIOverEngine()
}

/// `Connect(transport: AsyncHTTPClientTransport())`, `send` of a typed connector awaited in a task, as async code
/// (generated code among it) calls Connect.
private final class ConnectAwaitedOverEngine: LoopbackClient {
    let connect = Connect(transport: SwiftConnectAsyncHTTPClient.AsyncHTTPClientTransport())

    init() {
        _ = LoopbackServer.shared
    }

    func start(_ done: @escaping @Sendable (Bool) -> Void) {
        Task { [connect] in
            do {
                let todos = try await connect.send(GetTodos(path: "/todos/1k")).value
                done(!todos.isEmpty)
            } catch {
                done(false)
            }
        }
    }
}

/// `ConnectClientTransport` over `Connect(transport: AsyncHTTPClientTransport())`, called as generated code calls it.
private final class OpenAPIOverEngine: LoopbackClient {
    let transport = ConnectClientTransport(
        connect: Connect(transport: SwiftConnectAsyncHTTPClient.AsyncHTTPClientTransport()))
    let baseURL = LoopbackServer.baseURL

    init() {
        _ = LoopbackServer.shared
    }

    func start(_ done: @escaping @Sendable (Bool) -> Void) {
        Task { [transport, baseURL] in
            await OpenAPICall.getTodos(through: transport, baseURL: baseURL, done: done)
        }
    }
}
