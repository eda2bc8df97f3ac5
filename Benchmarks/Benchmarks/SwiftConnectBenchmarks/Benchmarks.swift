import Benchmark

// SwiftConnect's benchmarks (issue 6): every SwiftConnect figure beside the alternative a user would pick
// instead, measured in the same run. `swift package benchmark` from Benchmarks/ runs them all; names are
// "<area>/<case>/<variant>", and scripts/benchmarks.sh turns a run into BENCHMARKS.md.
//
// SWIFTCONNECT_BENCHMARK_SMOKE=1 runs each benchmark once with one operation (CI's smoke pass).
let benchmarks: @Sendable () -> Void = {
    // This executable is also the loopback server of the HTTP benchmarks, in a child process.
    LoopbackServer.runIfServerProcess()
    // The Scale/ benchmarks hold 1,000 connections open: a socket each here and in the server, which inherits the
    // limit on open files.
    FileLimit.raiseToHardLimit()

    registerFutureBenchmarks()
    registerPipelineBenchmarks()
    registerLoopbackBenchmarks()
    registerTransferBenchmarks()
    registerEngineBenchmarks()
    registerCompressedBenchmarks()
    registerStreamingBenchmarks()
    registerJSONLinesBenchmarks()
    registerOpenAPIBenchmarks()
    registerObservabilityBenchmarks()
    registerScaleBenchmarks()

    // The smoke pass compares this with the number that ran: run on its own, the runner ends early with status 0
    // when a benchmark's setup throws.
    if RunMode.isSmoke { print("Benchmarks registered: \(Benchmark.benchmarks.count)") }
}
