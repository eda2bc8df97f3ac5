import Benchmark
import BenchmarkFixtures
import Foundation
import SwiftConnect
import SwiftConnectTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Issue 6, item 3: the request pipeline without a network. Connect with a middleware, the default error
// handler and decoding, through FakeTransport; beside it, the same work written by hand (build the URLRequest,
// call the same FakeTransport, check the status, decode) and decoding alone, so the pipeline's own cost is the
// difference. Also: building a URLRequest from a Connector with composite parameters, beside building it by hand.

func registerPipelineBenchmarks() {
    for (label, body) in [("1 KiB", Payload.small), ("100 KiB", Payload.large)] {
        let scaling: BenchmarkScalingFactor = body.count > 10_000 ? .one : .kilo
        let maxIterations = body.count > 10_000 ? 2_000 : 10_000
        let name = "Pipeline/\(label) JSON via FakeTransport"
        // Made once per benchmark process, as an app makes its client once. The same two ways of making a request
        // run in every benchmark below.
        let requests = PipelineRequests(body: body)
        let transport = requests.transport
        let viaConnect = requests.viaConnect
        let byHand = requests.byHand

        for (variant, run) in [
            ("SwiftConnect Connect + middleware + decoding", viaConnect),
            ("by hand: URLRequest + FakeTransport + JSONDecoder", byHand),
        ] {
            Benchmark(
                name + "/" + variant,
                configuration: configuration(scalingFactor: scaling, maxIterations: maxIterations)
            ) { benchmark in
                transport.removeRecordedRequests()
                benchmark.measure {
                    for _ in benchmark.scaledIterations where !run() {
                        return benchmark.fail("the request did not succeed")
                    }
                }
            }
        }

        // The two above run in separate processes, minutes apart: for a 3 ms operation, drift between them is larger
        // than the pipeline's own microseconds. Here both run in the same sample, interleaved, so the difference of
        // their times is the pipeline's cost with the drift paired away. For 100 KiB one operation is 10 pairs, so
        // each sample sums enough requests.
        registerInterleaved(
            name, requests: requests, pairsPerOperation: body.count > 10_000 ? 10 : 1, scaling: scaling,
            maxDuration: .seconds(body.count > 10_000 ? 10 : 2), maxIterations: maxIterations)

        Benchmark(
            name + "/JSONDecoder alone",
            configuration: configuration(scalingFactor: scaling, maxIterations: maxIterations)
        ) { benchmark in
            benchmark.measure {
                for _ in benchmark.scaledIterations {
                    blackHole(try? JSONDecoder().decode([Todo].self, from: body))
                }
            }
        }
    }

    // What the pipeline adds on top of decoding, read directly: both ways decode with the same TimedDecoder, and the
    // time spent in it is taken out of each request. At 100 KiB the decode is 4 ms and moves by tens of µs with the
    // heap and code layout (a by-hand-versus-by-hand control shows how much), which drowns the pipeline's own µs in
    // the totals above. The control runs the same two ways, by hand on both sides.
    let decoder = TimedDecoder()
    let onTopRequests = PipelineRequests(body: Payload.large, decoder: decoder)
    let onTopFirsts: [(String, @Sendable () -> Bool)] = [
        ("SwiftConnect Connect and by hand, interleaved", { onTopRequests.viaConnect() }),
        ("control: by hand and by hand, interleaved", { onTopRequests.byHand() }),
    ]
    for (variant, first) in onTopFirsts {
        registerOnTopOfDecoding(
            "Pipeline/100 KiB JSON via FakeTransport, on top of decoding/" + variant, first: first,
            second: { onTopRequests.byHand() }, decoder: decoder, transport: onTopRequests.transport)
    }

    // The 1 KiB requests again, each after an untimed decode of an unrelated 100 KiB body: what the pipeline costs
    // when decoding a large body just ran, as it has before every request of the 100 KiB benchmarks.
    let coldRequests = PipelineRequests(body: Payload.small)
    let largeBody = Payload.large
    let largeDecoder = JSONDecoder()
    registerInterleaved(
        "Pipeline/After a 100 KiB decode: 1 KiB JSON via FakeTransport", requests: coldRequests,
        pairsPerOperation: 10, scaling: .one, maxDuration: .seconds(10), maxIterations: 2_000,
        beforeEachRequest: { blackHole(try? largeDecoder.decode([Todo].self, from: largeBody)) })

    Benchmark(
        "Pipeline/URLRequest from a Connector with composite parameters/SwiftConnect asURLRequest",
        configuration: configuration()
    ) { benchmark in
        let connector = UpdateTodo(userID: 7, todoID: 42, action: "update", todo: sampleTodo)
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                blackHole(try? connector.asURLRequest())
            }
        }
    }

    Benchmark(
        "Pipeline/URLRequest from a Connector with composite parameters/by hand: URLComponents + JSONEncoder",
        configuration: configuration()
    ) { benchmark in
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                blackHole(try? handBuiltUpdateRequest(userID: 7, todoID: 42, action: "update", todo: sampleTodo))
            }
        }
    }
}

/// Registers `name`/"SwiftConnect Connect and by hand, interleaved": in every sample, `pairsPerOperation` pairs of
/// requests per operation, one through Connect and one by hand, alternating which goes first. Each request is timed
/// on its own (into ``pairedConnectMetric`` and ``pairedByHandMetric``); `beforeEachRequest` runs untimed before each.
private func registerInterleaved(
    _ name: String,
    requests: PipelineRequests,
    pairsPerOperation: Int,
    scaling: BenchmarkScalingFactor,
    maxDuration: Duration,
    maxIterations: Int,
    beforeEachRequest: (@Sendable () -> Void)? = nil
) {
    let transport = requests.transport
    let viaConnect = requests.viaConnect
    let byHand = requests.byHand
    Benchmark(
        name + "/SwiftConnect Connect and by hand, interleaved",
        configuration: configuration(
            scalingFactor: scaling, metrics: pairedMetrics, maxDuration: maxDuration, maxIterations: maxIterations)
    ) { benchmark in
        transport.removeRecordedRequests()
        var connectNanoseconds = 0
        var handNanoseconds = 0
        var failed = false
        benchmark.measure {
            for iteration in 0..<(benchmark.operations * pairsPerOperation) {
                let connectFirst = iteration.isMultiple(of: 2)
                for step in 0..<2 {
                    let isConnect = (step == 0) == connectFirst
                    beforeEachRequest?()
                    let start = DispatchTime.now().uptimeNanoseconds
                    let succeeded = isConnect ? viaConnect() : byHand()
                    let elapsed = Int(DispatchTime.now().uptimeNanoseconds - start)
                    if isConnect { connectNanoseconds += elapsed } else { handNanoseconds += elapsed }
                    failed = failed || !succeeded
                }
            }
        }
        if failed { return benchmark.fail("a request did not succeed") }
        benchmark.measurement(pairedConnectMetric, connectNanoseconds / pairsPerOperation)
        benchmark.measurement(pairedByHandMetric, handNanoseconds / pairsPerOperation)
        // The difference within this sample, split by sign (the harness records no negative values): a quantile of
        // the differences is the same quantile of one of these two, so the report reads the median difference.
        let difference = (connectNanoseconds - handNanoseconds) / pairsPerOperation
        benchmark.measurement(pairedExcessMetric, max(difference, 0))
        benchmark.measurement(pairedShortfallMetric, max(-difference, 0))
    }
}

/// Registers `name`: in every sample, 20 pairs of requests, `first` and `second` alternating which goes first, each
/// timed without the time spent in `decoder`. Records the two ways' mean times (into ``pairedConnectMetric`` and
/// ``pairedByHandMetric``) and the median of the 20 differences, first minus second: a median, so that one request
/// slowed by the machine (preempted, say) does not move the sample.
private func registerOnTopOfDecoding(
    _ name: String,
    first: @escaping @Sendable () -> Bool,
    second: @escaping @Sendable () -> Bool,
    decoder: TimedDecoder,
    transport: FakeTransport
) {
    let pairs = 20
    Benchmark(
        name,
        configuration: configuration(
            scalingFactor: .one, metrics: pairedMetrics, maxDuration: .seconds(12), maxIterations: 2_000)
    ) { benchmark in
        transport.removeRecordedRequests()
        var firstNanoseconds = 0
        var secondNanoseconds = 0
        var differences: [Int] = []
        differences.reserveCapacity(benchmark.operations * pairs)
        var failed = false
        benchmark.measure {
            for iteration in 0..<(benchmark.operations * pairs) {
                let firstGoesFirst = iteration.isMultiple(of: 2)
                var times = (first: 0, second: 0)
                for step in 0..<2 {
                    let isFirst = (step == 0) == firstGoesFirst
                    _ = decoder.takeElapsed()
                    let start = DispatchTime.now().uptimeNanoseconds
                    let succeeded = isFirst ? first() : second()
                    let elapsed = Int(DispatchTime.now().uptimeNanoseconds - start) - decoder.takeElapsed()
                    if isFirst { times.first = elapsed } else { times.second = elapsed }
                    failed = failed || !succeeded
                }
                firstNanoseconds += times.first
                secondNanoseconds += times.second
                differences.append(times.first - times.second)
            }
        }
        if failed { return benchmark.fail("a request did not succeed") }
        differences.sort()
        let median = differences[differences.count / 2]
        benchmark.measurement(pairedConnectMetric, firstNanoseconds / pairs)
        benchmark.measurement(pairedByHandMetric, secondNanoseconds / pairs)
        benchmark.measurement(pairedExcessMetric, max(median, 0) * benchmark.operations)
        benchmark.measurement(pairedShortfallMetric, max(-median, 0) * benchmark.operations)
    }
}

/// Per sample: the time of the Connect requests and of the hand-written ones, interleaved in the same sample.
let pairedConnectMetric = BenchmarkMetric.custom(
    "Paired Connect time (ns)", polarity: .prefersSmaller, useScalingFactor: true)
let pairedByHandMetric = BenchmarkMetric.custom(
    "Paired by-hand time (ns)", polarity: .prefersSmaller, useScalingFactor: true)
/// Per sample: how much longer the Connect requests took than the hand-written ones in the same sample, or 0.
let pairedExcessMetric = BenchmarkMetric.custom(
    "Paired Connect minus by hand (ns)", polarity: .prefersSmaller, useScalingFactor: true)
/// Per sample: how much longer the hand-written requests took than the Connect ones in the same sample, or 0.
let pairedShortfallMetric = BenchmarkMetric.custom(
    "Paired by hand minus Connect (ns)", polarity: .prefersLarger, useScalingFactor: true)
private let pairedMetrics: [BenchmarkMetric] =
    coreMetrics + [pairedConnectMetric, pairedByHandMetric, pairedExcessMetric, pairedShortfallMetric]

private let sampleTodo = Todo(userId: 7, id: 42, title: "Write the benchmarks", completed: false)

/// The server of the request-building benchmarks (never contacted).
private let apiBase = URL(string: "https://api.example.com")!

/// Two path placeholders, a query item and a JSON body.
private struct UpdateTodo: Connector {
    let userID: Int
    let todoID: Int
    let action: String
    let todo: Todo

    var baseURL: URL { apiBase }
    var endpoint: String { "/users/{userId}/todos/{todoId}" }
    var method: HTTPMethod { .put }
    var headers: [HTTPHeader] { [HTTPHeader(name: "X-Client", value: "benchmarks")] }
    var parameters: (any ParametersRepresentable)? {
        CompositeParameters(
            .path(key: "userId", value: "\(userID)"),
            .path(key: "todoId", value: "\(todoID)"),
            .query(key: "action", value: action),
            .jsonObject(value: todo)
        )
    }
}

private func handBuiltUpdateRequest(userID: Int, todoID: Int, action: String, todo: Todo) throws -> URLRequest {
    var components = URLComponents(url: apiBase, resolvingAgainstBaseURL: false)!
    components.path = "/users/\(userID)/todos/\(todoID)"
    components.queryItems = [URLQueryItem(name: "action", value: action)]
    var request = URLRequest(url: components.url!)
    request.httpMethod = "PUT"
    request.setValue("benchmarks", forHTTPHeaderField: "X-Client")
    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    request.httpBody = try JSONEncoder().encode(todo)
    return request
}
