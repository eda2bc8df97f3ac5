import Benchmark
import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: - Run modes

/// How this run was asked to behave, from the environment.
enum RunMode {
    /// `SWIFTCONNECT_BENCHMARK_SMOKE=1`: every benchmark runs once, one operation per sample, with small bodies,
    /// so CI can check that the benchmarks build and run without spending minutes on figures.
    static let isSmoke = ProcessInfo.processInfo.environment["SWIFTCONNECT_BENCHMARK_SMOKE"] == "1"
}

extension Benchmark {
    /// Fails this benchmark with `message`: package-benchmark reports it and fails the run.
    ///
    /// In the smoke pass the process also ends at once with status 1. That pass runs the debug build on its own,
    /// without package-benchmark's tool (whose release-built malloc interposer, preloaded into a debug build that
    /// links its own, crashes it at start), and a benchmark run on its own drops a failure and ends with status 0.
    func fail(_ message: String) {
        error(message)
        guard RunMode.isSmoke else { return }
        FileHandle.standardError.write(Data("error: \(name): \(message)\n".utf8))
        exit(1)
    }
}

/// Runs `first` and `second` in turns, `rounds` times, the order swapped every round so that neither always follows
/// the other, and returns each one's total wall time in nanoseconds: two ways of doing the same work compared on the
/// same machine state within one sample.
func takeTurns(rounds: Int, _ first: () -> Void, _ second: () -> Void) -> (first: UInt64, second: UInt64) {
    var time = (first: UInt64(0), second: UInt64(0))
    for round in 0..<rounds {
        for turn in 0..<2 {
            let isFirst = (turn == 0) == round.isMultiple(of: 2)
            let start = DispatchTime.now().uptimeNanoseconds
            if isFirst { first() } else { second() }
            let elapsed = DispatchTime.now().uptimeNanoseconds - start
            if isFirst { time.first += elapsed } else { time.second += elapsed }
        }
    }
    return time
}

// MARK: - Metrics

/// Process CPU time (all threads) from `CLOCK_PROCESS_CPUTIME_ID`, in nanoseconds per operation.
///
/// package-benchmark's own `cpuTotal` reads `/proc/self/stat`, whose 10 ms ticks cannot resolve operations of a
/// few microseconds; this clock has nanosecond resolution and covers URLSession's threads too.
let cpuTimeMetric = BenchmarkMetric.custom("CPU time (ns)", polarity: .prefersSmaller, useScalingFactor: true)

func processCPUNanoseconds() -> Int {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Int(time.tv_sec) * 1_000_000_000 + Int(time.tv_nsec)
}

/// The process's voluntary context switches so far, all threads (`getrusage(RUSAGE_SELF)`).
func voluntaryContextSwitches() -> Int {
    var usage = rusage()
    getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
    return Int(usage.ru_nvcsw)
}

/// How many operations each sample ran, so exported results (`--format influx`) can be turned into per-operation
/// figures by scripts/benchmarks.sh.
let operationsMetric = BenchmarkMetric.custom(
    "Operations per sample", polarity: .prefersLarger, useScalingFactor: false)

/// Wall time, CPU time, instructions (where the machine has hardware counters) and mallocs, per operation.
let coreMetrics: [BenchmarkMetric] = [
    .wallClock, .throughput, .instructions, .mallocCountTotal, cpuTimeMetric, operationsMetric,
]

/// The core metrics plus peak resident memory, for the benchmarks where memory is part of the question.
let memoryMetrics: [BenchmarkMetric] = coreMetrics + [.peakMemoryResident]

/// A configuration: `scalingFactor` operations per sample (the tables show per-operation figures with `--scale`),
/// at most `maxDuration` per benchmark. In smoke mode: one sample of one operation, no warm-up.
func configuration(
    scalingFactor: BenchmarkScalingFactor = .kilo,
    metrics: [BenchmarkMetric] = coreMetrics,
    maxDuration: Duration = .seconds(2),
    maxIterations: Int = 10_000,
    setup: Benchmark.BenchmarkSetupHook? = nil,
    teardown: Benchmark.BenchmarkTeardownHook? = nil
) -> Benchmark.Configuration {
    if RunMode.isSmoke {
        return .init(
            metrics: metrics, warmupIterations: 0, scalingFactor: .one, maxDuration: .seconds(5), maxIterations: 1,
            setup: setup, teardown: teardown)
    }
    return .init(
        metrics: metrics, warmupIterations: 1, scalingFactor: scalingFactor, maxDuration: maxDuration,
        maxIterations: maxIterations, setup: setup, teardown: teardown)
}

extension Benchmark {
    /// Runs `body` as the measured part of one sample and records the process CPU time it used.
    ///
    /// Work before and after `body` (per-sample set-up, clean-up) is left out of every metric.
    func measure(_ body: () throws -> Void) rethrows {
        startMeasurement()
        let cpuStart = processCPUNanoseconds()
        try body()
        let cpu = processCPUNanoseconds() - cpuStart
        stopMeasurement()
        measurement(cpuTimeMetric, cpu)
        measurement(operationsMetric, operations)
    }

    /// The asynchronous form of ``measure(_:)``.
    func measureAsync(_ body: () async throws -> Void) async rethrows {
        startMeasurement()
        let cpuStart = processCPUNanoseconds()
        try await body()
        let cpu = processCPUNanoseconds() - cpuStart
        stopMeasurement()
        measurement(cpuTimeMetric, cpu)
        measurement(operationsMetric, operations)
    }

    /// How many operations one sample performs.
    var operations: Int { scaledIterations.count }
}

// MARK: - Waiting

/// Counts operations down to zero from any thread; `wait()` blocks until then.
final class Countdown: @unchecked Sendable {
    // @unchecked Sendable: `remaining` is only touched under `lock`; the semaphore is thread-safe.
    private let lock = NSLock()
    private var remaining: Int
    private let done = DispatchSemaphore(value: 0)

    init(_ count: Int) {
        remaining = count
        if count == 0 { done.signal() }
    }

    func tick() {
        lock.lock()
        remaining -= 1
        let finished = remaining == 0
        lock.unlock()
        if finished { done.signal() }
    }

    func wait() {
        done.wait()
    }
}

/// Runs `total` operations with at most `width` in flight: `start(index, finished)` starts one and calls
/// `finished` (from any thread) when it ends. Returns when all have ended.
func runWindowed(total: Int, width: Int, start: @escaping @Sendable (Int, @escaping @Sendable () -> Void) -> Void) {
    guard total > 0 else { return }
    let window = Window(total: total, start: start)
    for _ in 0..<min(width, total) { window.launchNext() }
    window.countdown.wait()
}

/// The state of one ``runWindowed(total:width:start:)``.
private final class Window: @unchecked Sendable {
    // @unchecked Sendable: `started` is only touched under `lock`; the rest is immutable or thread-safe.
    let countdown: Countdown
    private let total: Int
    private let start: @Sendable (Int, @escaping @Sendable () -> Void) -> Void
    private let lock = NSLock()
    private var started = 0

    init(total: Int, start: @escaping @Sendable (Int, @escaping @Sendable () -> Void) -> Void) {
        self.total = total
        self.start = start
        countdown = Countdown(total)
    }

    func launchNext() {
        lock.lock()
        let index = started
        started += 1
        lock.unlock()
        guard index < total else { return }
        start(index) { [self] in
            countdown.tick()
            launchNext()
        }
    }
}
