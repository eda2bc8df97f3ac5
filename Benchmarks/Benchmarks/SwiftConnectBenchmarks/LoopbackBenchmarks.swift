import Benchmark
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
        if failures > 0 { benchmark.error("\(failures) of \(benchmark.operations) requests failed") }
    }
}

/// One client per benchmark process.
private enum LoopbackClients {
    nonisolated(unsafe) static var current: AnyObject?

    static func client<Client: LoopbackClient>(_ make: () -> Client) -> Client {
        if let client = current as? Client { return client }
        let client = make()
        current = client
        return client
    }
}

private protocol LoopbackClient: AnyObject, Sendable {
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
private struct GetTodos: TypedConnector {
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
private final class RawClient: LoopbackClient {
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
