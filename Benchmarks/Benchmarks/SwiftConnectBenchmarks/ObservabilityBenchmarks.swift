import Benchmark
import BenchmarkFixtures
import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import SwiftConnectTracing
import Tracing

// Issue 40, item 2: what the tracing integration costs with a no-op tracer (the process's tracer when none is
// bootstrapped), over no integration at all: a 1 KiB JSON GET decoded through FakeTransport, each request of one client
// followed by the same request of the other, in every sample, so that drift pairs away. The figure is the difference
// of their per-request times (target: at most 1 µs).

func registerObservabilityBenchmarks() {
    let transport = FakeTransport.answering(.data(Payload.small, headers: ["Content-Type": "application/json"]))
    let plain = Connect(transport: transport)
    let traced = Connect(
        transport: transport, settings: Connect.Settings(observers: [TracingObserver(tracer: NoOpTracer())]))
    let config = configuration(
        scalingFactor: .kilo, metrics: coreMetrics + observabilityMetrics, maxDuration: .seconds(4))
    Benchmark(
        "Observability/1 KiB JSON via FakeTransport/without and with a no-op TracingObserver, interleaved",
        configuration: config
    ) { benchmark in
        transport.removeRecordedRequests()
        var nanoseconds = [0, 0]
        var failures = 0
        benchmark.measure {
            for index in benchmark.scaledIterations {
                // Which goes first alternates, so that neither always runs on a warmer cache.
                for step in 0..<2 {
                    let which = (index + step) % 2
                    let start = DispatchTime.now().uptimeNanoseconds
                    let todos = (which == 0 ? plain : traced).send(ListTodos())
                    nanoseconds[which] += Int(DispatchTime.now().uptimeNanoseconds - start)
                    if case .success(let value)? = todos.result, !value.isEmpty {} else { failures += 1 }
                }
            }
        }
        transport.removeRecordedRequests()
        if failures > 0 { return benchmark.fail("\(failures) requests failed") }
        benchmark.measurement(observabilityMetrics[0], nanoseconds[0])
        benchmark.measurement(observabilityMetrics[1], nanoseconds[1])
    }
}

/// Per-request time of each client, in one sample.
let observabilityMetrics: [BenchmarkMetric] = [
    .custom("Observability no integration time (ns)", polarity: .prefersSmaller, useScalingFactor: true),
    .custom("Observability no-op tracing time (ns)", polarity: .prefersSmaller, useScalingFactor: true),
]

/// A typed GET of the to-do list, answered by the fake transport.
private struct ListTodos: TypedConnector {
    typealias Response = [Todo]
    var baseURL: URL { URL(string: "https://api.example.com")! }
    var endpoint: String { "/todos" }
    var method: HTTPMethod { .get }
    var headers: [HTTPHeader] { [] }
    var parameters: ParametersRepresentable? { nil }
}
