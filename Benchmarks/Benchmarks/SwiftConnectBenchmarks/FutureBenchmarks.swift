import Benchmark
import Dispatch
import Foundation
import OpenCombine
import OpenCombineDispatch
import SwiftConnect

// Issue 6, item 2: SwiftConnect's Future beside OpenCombine and plain async/await, in the same run.
// Names are "Futures/<case>/<variant>"; scripts/benchmarks.sh pairs them up by case.

func registerFutureBenchmarks() {
    registerMapChain()
    registerCrossQueueFlatMap()
    registerHundredObservers()
    registerTenThousandPromises()
    registerAllOfThousand()
    registerPendingChain()
    registerPendingChainsInFlight()
}

@inline(never)
@Sendable func addOne(_ value: Int) -> Int { value &+ 1 }

@inline(never)
func addOneAsync(_ value: Int) async -> Int { value &+ 1 }

/// Somewhere for results to go so the optimizer keeps the work.
// @unchecked Sendable: benchmarks that share one across threads write it under `lock`.
final class Sink: @unchecked Sendable {
    let lock = NSLock()
    var total = 0

    func add(_ value: Int) {
        lock.lock()
        total &+= value
        lock.unlock()
    }
}

// MARK: - 10-stage map chain on a resolved value

private func registerMapChain() {
    let stages = 10

    Benchmark("Futures/map x10 on a resolved value/SwiftConnect Future", configuration: configuration()) {
        benchmark in
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                var future = SwiftConnect.Future(value: 0)
                for _ in 0..<stages { future = future.map(addOne) }
                blackHole(future.result)
            }
        }
    }

    // A chain of Publishers.Map on Just, as in generic publisher code (and the issue's ~105 ns reference).
    Benchmark("Futures/map x10 on a resolved value/OpenCombine Just", configuration: configuration()) { benchmark in
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                var value = 0
                _ = mapTenTimes(Just(0)).sink { value = $0 }
                blackHole(value)
            }
        }
    }

    // Just's own `map`, which applies the transform at once and returns another Just: no subscription at all.
    Benchmark("Futures/map x10 on a resolved value/OpenCombine Just.map (eager)", configuration: configuration()) {
        benchmark in
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                var value = 0
                var just = Just(0)
                for _ in 0..<stages { just = just.map { addOne($0) } }
                _ = just.sink { value = $0 }
                blackHole(value)
            }
        }
    }

    Benchmark("Futures/map x10 on a resolved value/OpenCombine Future", configuration: configuration()) { benchmark in
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                var value = 0
                let future = OpenCombine.Future<Int, Never> { promise in promise(.success(0)) }
                _ = mapTenTimes(future).sink { value = $0 }
                blackHole(value)
            }
        }
    }

    Benchmark("Futures/map x10 on a resolved value/async-await", configuration: configuration()) { benchmark in
        await benchmark.measureAsync {
            for _ in benchmark.scaledIterations {
                var value = 0
                for _ in 0..<stages { value = await addOneAsync(value) }
                blackHole(value)
            }
        }
    }
}

/// Ten `Publishers.Map` stages of `addOne`, written out as a user would chain them.
@inline(__always)
private func mapTenTimes<Upstream: Publisher>(_ upstream: Upstream) -> some Publisher<Int, Never>
where Upstream.Output == Int, Upstream.Failure == Never {
    // Two stages a line: 2, 4, 6, 8, 10 (the first line had one, and the chain nine).
    let stage1 = Publishers.Map(upstream: Publishers.Map(upstream: upstream) { addOne($0) }) { addOne($0) }
    let stage2 = Publishers.Map(upstream: Publishers.Map(upstream: stage1) { addOne($0) }) { addOne($0) }
    let stage3 = Publishers.Map(upstream: Publishers.Map(upstream: stage2) { addOne($0) }) { addOne($0) }
    let stage4 = Publishers.Map(upstream: Publishers.Map(upstream: stage3) { addOne($0) }) { addOne($0) }
    return Publishers.Map(upstream: Publishers.Map(upstream: stage4) { addOne($0) }) { addOne($0) }
}

// MARK: - flatMap chain resolving on another queue

private func registerCrossQueueFlatMap() {
    let other = DispatchQueue(label: "benchmarks.other")

    @Sendable func nextOnOtherQueue(_ value: Int) -> SwiftConnect.Future<Int> {
        let promise = Promise<Int>()
        other.async { promise.succeed(value &+ 1) }
        return promise.future
    }

    Benchmark("Futures/flatMap x10 across queues/SwiftConnect Future", configuration: configuration()) { benchmark in
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                var future = SwiftConnect.Future(value: 0)
                for _ in 0..<10 { future = future.flatMap(nextOnOtherQueue) }
                let done = DispatchSemaphore(value: 0)
                future.observe { _ in done.signal() }
                done.wait()
                blackHole(future.result)
            }
        }
    }

    func stage(_ value: Int) -> Publishers.ReceiveOn<OpenCombine.Future<Int, Never>, DispatchQueue.OCombine> {
        OpenCombine.Future { promise in promise(.success(value &+ 1)) }.receive(on: other.ocombine)
    }

    Benchmark(
        "Futures/flatMap x10 across queues/OpenCombine Future + receive(on:)", configuration: configuration()
    ) { benchmark in
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                let done = DispatchSemaphore(value: 0)
                var value = 0
                let stage1 = Just(0).flatMap(stage).flatMap(stage).flatMap(stage)
                let stage2 = stage1.flatMap(stage).flatMap(stage).flatMap(stage)
                let stage3 = stage2.flatMap(stage).flatMap(stage).flatMap(stage).flatMap(stage)
                let cancellable =
                    stage3
                    .sink {
                        value = $0
                        done.signal()
                    }
                done.wait()
                cancellable.cancel()
                blackHole(value)
            }
        }
    }

    Benchmark("Futures/flatMap x10 across queues/async-await continuations", configuration: configuration()) {
        benchmark in
        await benchmark.measureAsync {
            for _ in benchmark.scaledIterations {
                var value = 0
                for _ in 0..<10 {
                    let current = value
                    value = await withCheckedContinuation { continuation in
                        other.async { continuation.resume(returning: current &+ 1) }
                    }
                }
                blackHole(value)
            }
        }
    }
}

// MARK: - 100 observers on one future

private func registerHundredObservers() {
    let observers = 100

    Benchmark("Futures/100 observers on one future/SwiftConnect Future", configuration: configuration()) {
        benchmark in
        let sink = Sink()
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                let promise = Promise<Int>()
                for _ in 0..<observers {
                    promise.future.observe { result in sink.total &+= (try? result.get()) ?? 0 }
                }
                promise.succeed(1)
            }
        }
        blackHole(sink.total)
    }

    Benchmark("Futures/100 observers on one future/OpenCombine Future", configuration: configuration()) {
        benchmark in
        let sink = Sink()
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                var complete: ((Result<Int, Never>) -> Void)?
                let future = OpenCombine.Future<Int, Never> { complete = $0 }
                var cancellables: [AnyCancellable] = []
                cancellables.reserveCapacity(observers)
                for _ in 0..<observers { cancellables.append(future.sink { sink.total &+= $0 }) }
                complete?(.success(1))
                blackHole(cancellables)
            }
        }
        blackHole(sink.total)
    }

    Benchmark("Futures/100 observers on one future/async-await Task.value", configuration: configuration()) {
        benchmark in
        await benchmark.measureAsync {
            for _ in benchmark.scaledIterations {
                let shared = Task { 1 }
                let total = await withTaskGroup(of: Int.self) { group in
                    for _ in 0..<observers { group.addTask { await shared.value } }
                    var total = 0
                    for await value in group { total &+= value }
                    return total
                }
                blackHole(total)
            }
        }
    }
}

// MARK: - 10,000 promises completed from 2 threads

private func registerTenThousandPromises() {
    let count = RunMode.isSmoke ? 100 : 10_000
    // One operation is all `count` promises: made, observed once each, completed by two threads (even and odd
    // indices) at the same time.
    let config = configuration(scalingFactor: .one)

    Benchmark("Futures/10,000 promises completed from 2 threads/SwiftConnect Promise", configuration: config) {
        benchmark in
        let sink = Sink()
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                let promises = (0..<count).map { _ in Promise<Int>() }
                for promise in promises { promise.future.observe { sink.add((try? $0.get()) ?? 0) } }
                DispatchQueue.concurrentPerform(iterations: 2) { thread in
                    for index in stride(from: thread, to: count, by: 2) { promises[index].succeed(index) }
                }
            }
        }
        blackHole(sink.total)
    }

    Benchmark("Futures/10,000 promises completed from 2 threads/OpenCombine Future", configuration: config) {
        benchmark in
        let sink = Sink()
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                var completions: [(Result<Int, Never>) -> Void] = []
                completions.reserveCapacity(count)
                var cancellables: [AnyCancellable] = []
                cancellables.reserveCapacity(count)
                for _ in 0..<count {
                    let future = OpenCombine.Future<Int, Never> { completions.append($0) }
                    cancellables.append(future.sink { sink.add($0) })
                }
                let complete = completions
                DispatchQueue.concurrentPerform(iterations: 2) { thread in
                    for index in stride(from: thread, to: count, by: 2) { complete[index](.success(index)) }
                }
                blackHole(cancellables)
            }
        }
        blackHole(sink.total)
    }

    Benchmark(
        "Futures/10,000 promises completed from 2 threads/async-await continuations", configuration: config
    ) { benchmark in
        await benchmark.measureAsync {
            for _ in benchmark.scaledIterations {
                let store = ContinuationStore(count: count)
                let total = await withTaskGroup(of: Int.self) { group in
                    for index in 0..<count {
                        group.addTask { await withCheckedContinuation { store.register($0, at: index) } }
                    }
                    await store.allRegistered()
                    for thread in 0..<2 {
                        DispatchQueue.global().async {
                            for index in stride(from: thread, to: count, by: 2) { store.resume(index) }
                        }
                    }
                    var total = 0
                    for await value in group { total &+= value }
                    return total
                }
                blackHole(total)
            }
        }
    }
}

/// Continuations registered by child tasks, resumed by index from other threads.
private final class ContinuationStore: @unchecked Sendable {
    // @unchecked Sendable: everything mutable is touched under `lock`.
    private let lock = NSLock()
    private var continuations: [CheckedContinuation<Int, Never>?]
    private var registered = 0
    private var whenAllRegistered: CheckedContinuation<Void, Never>?

    init(count: Int) {
        continuations = Array(repeating: nil, count: count)
    }

    func register(_ continuation: CheckedContinuation<Int, Never>, at index: Int) {
        lock.lock()
        continuations[index] = continuation
        registered += 1
        let waiter = registered == continuations.count ? whenAllRegistered : nil
        if waiter != nil { whenAllRegistered = nil }
        lock.unlock()
        waiter?.resume()
    }

    func allRegistered() async {
        await withCheckedContinuation { continuation in
            lock.lock()
            if registered == continuations.count {
                lock.unlock()
                continuation.resume()
            } else {
                whenAllRegistered = continuation
                lock.unlock()
            }
        }
    }

    func resume(_ index: Int) {
        lock.lock()
        let continuation = continuations[index]
        continuations[index] = nil
        lock.unlock()
        continuation?.resume(returning: index)
    }
}

// MARK: - all of 1,000 futures

private func registerAllOfThousand() {
    let count = RunMode.isSmoke ? 10 : 1_000
    let config = configuration(scalingFactor: .one)

    Benchmark("Futures/all of 1,000 futures/SwiftConnect Future.all", configuration: config) { benchmark in
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                let promises = (0..<count).map { _ in Promise<Int>() }
                let all = SwiftConnect.Future.all(promises.map(\.future))
                for (index, promise) in promises.enumerated() { promise.succeed(index) }
                blackHole(all.result)
            }
        }
    }

    // OpenCombine 0.14 has neither MergeMany nor ZipMany: a sequence publisher flat-mapped with unlimited demand
    // is the same merge.
    Benchmark("Futures/all of 1,000 futures/OpenCombine Sequence.flatMap + collect", configuration: config) {
        benchmark in
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                var completions: [(Result<Int, Never>) -> Void] = []
                completions.reserveCapacity(count)
                let futures = (0..<count).map { _ in OpenCombine.Future<Int, Never> { completions.append($0) } }
                var values: [Int] = []
                let merged = Publishers.Sequence<[OpenCombine.Future<Int, Never>], Never>(sequence: futures)
                    .flatMap { $0 }
                let cancellable = merged.collect().sink { values = $0 }
                for (index, complete) in completions.enumerated() { complete(.success(index)) }
                cancellable.cancel()
                blackHole(values)
            }
        }
    }

    Benchmark("Futures/all of 1,000 futures/async-await withTaskGroup", configuration: config) { benchmark in
        await benchmark.measureAsync {
            for _ in benchmark.scaledIterations {
                let values = await withTaskGroup(of: (Int, Int).self) { group in
                    for index in 0..<count { group.addTask { (index, index) } }
                    var values = [Int](repeating: 0, count: count)
                    for await (index, value) in group { values[index] = value }
                    return values
                }
                blackHole(values)
            }
        }
    }
}

// MARK: - The pending path: resolved later, on another queue

/// What every network response goes through: a future resolved on a serial queue, `flatMap` to a second such
/// future, `map`, `observe`. Beside the same chain on `MinimalFuture` (a mutex and a callback list) and on
/// async/await, in the same run.
private func registerPendingChain() {
    let first = DispatchQueue(label: "benchmarks.pending.first")
    let second = DispatchQueue(label: "benchmarks.pending.second")

    Benchmark("Futures/pending flatMap-map-observe/SwiftConnect Future", configuration: configuration()) { benchmark in
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                let done = DispatchSemaphore(value: 0)
                swiftConnectPendingChain(first: first, second: second) { done.signal() }
                done.wait()
            }
        }
    }

    Benchmark("Futures/pending flatMap-map-observe/minimal mutex future", configuration: configuration()) {
        benchmark in
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                let done = DispatchSemaphore(value: 0)
                minimalPendingChain(first: first, second: second) { done.signal() }
                done.wait()
            }
        }
    }

    // The first two in turns within each sample, so that both see the same machine: apart, this benchmark's ratio
    // moved between runs by more than the futures' difference (0.78× to 1.09× for the same code).
    let turnConfig = configuration(
        scalingFactor: .one, metrics: coreMetrics + pendingTurnMetrics, maxDuration: .seconds(6), maxIterations: 1_000)
    Benchmark(
        "Futures/pending flatMap-map-observe/interleaved: SwiftConnect Future and minimal mutex future",
        configuration: turnConfig
    ) { benchmark in
        let chains = RunMode.isSmoke ? 2 : 100
        /// `chains` chains one after another, each waited for before the next starts.
        func run(_ chain: (@escaping @Sendable () -> Void) -> Void) {
            for _ in 0..<chains {
                let done = DispatchSemaphore(value: 0)
                chain { done.signal() }
                done.wait()
            }
        }
        var time = (first: UInt64(0), second: UInt64(0))
        benchmark.measure {
            time = takeTurns(rounds: 2) {
                run { swiftConnectPendingChain(first: first, second: second, done: $0) }
            } _: {
                run { minimalPendingChain(first: first, second: second, done: $0) }
            }
        }
        let (ours, minimal) = time
        benchmark.measurement(pendingTurnMetrics[0], Int(ours) / (2 * chains))
        benchmark.measurement(pendingTurnMetrics[1], Int(minimal) / (2 * chains))
        if ours > 0 { benchmark.measurement(pendingTurnMetrics[2], Int(minimal * 1000 / ours)) }
    }

    Benchmark("Futures/pending flatMap-map-observe/async-await", configuration: configuration()) { benchmark in
        await benchmark.measureAsync {
            for _ in benchmark.scaledIterations {
                let value = await withCheckedContinuation { continuation in
                    first.async { continuation.resume(returning: 1) }
                }
                let next = await withCheckedContinuation { continuation in
                    second.async { continuation.resume(returning: value &+ 1) }
                }
                blackHole(addOne(next))
            }
        }
    }
}

/// Each future's wall time per pending chain over a sample, and the sample's ratio of the minimal future's to
/// SwiftConnect's, in thousandths (1000 is level).
let pendingTurnMetrics: [BenchmarkMetric] = [
    .custom("Pending turns SwiftConnect time (ns)", polarity: .prefersSmaller, useScalingFactor: false),
    .custom("Pending turns minimal time (ns)", polarity: .prefersSmaller, useScalingFactor: false),
    .custom(
        "Pending turns ratio minimal to SwiftConnect (per mille)", polarity: .prefersLarger, useScalingFactor: false),
]

/// The pending chain on SwiftConnect's `Future`: completed on `first`, `flatMap` to a future completed on `second`,
/// `map`, `observe`; `done` runs at the end.
private func swiftConnectPendingChain(
    first: DispatchQueue, second: DispatchQueue, done: @escaping @Sendable () -> Void
) {
    let start = Promise<Int>()
    start.future
        .flatMap { value -> SwiftConnect.Future<Int> in
            let next = Promise<Int>()
            second.async { next.succeed(value &+ 1) }
            return next.future
        }
        .map(addOne)
        .observe { result in
            blackHole(result)
            done()
        }
    first.async { start.succeed(1) }
}

/// The same chain on `MinimalFuture`.
private func minimalPendingChain(first: DispatchQueue, second: DispatchQueue, done: @escaping @Sendable () -> Void) {
    let start = MinimalFuture<Int>()
    start
        .flatMap { value -> MinimalFuture<Int> in
            let next = MinimalFuture<Int>()
            second.async { next.succeed(value &+ 1) }
            return next
        }
        .map(addOne)
        .observe { value in
            blackHole(value)
            done()
        }
    first.async { start.succeed(1) }
}

// MARK: - 10,000 pending chains in flight at once (issue 37, item 5)

/// The chain above (a future completed later on another queue, `flatMap` to a second such future, `map`, `observe`),
/// 10,000 of them in flight at once, the batch waited with a `DispatchGroup`: one operation is one batch. Beside the
/// same on `MinimalFuture` and on async/await (10,000 tasks in a task group), in the same run.
private func registerPendingChainsInFlight() {
    let chains = RunMode.isSmoke ? 100 : 10_000
    let first = DispatchQueue(label: "benchmarks.inflight.first")
    let second = DispatchQueue(label: "benchmarks.inflight.second")
    let config = configuration(scalingFactor: .one, maxDuration: .seconds(6), maxIterations: 200)
    let name = "Futures/10,000 pending chains in flight (one batch)"

    Benchmark(name + "/SwiftConnect Future", configuration: config) { benchmark in
        benchmark.measure {
            let group = DispatchGroup()
            for _ in 0..<chains {
                group.enter()
                swiftConnectPendingChain(first: first, second: second) { group.leave() }
            }
            group.wait()
        }
    }

    Benchmark(name + "/minimal mutex future", configuration: config) { benchmark in
        benchmark.measure {
            let group = DispatchGroup()
            for _ in 0..<chains {
                group.enter()
                minimalPendingChain(first: first, second: second) { group.leave() }
            }
            group.wait()
        }
    }

    Benchmark(name + "/async-await", configuration: config) { benchmark in
        await benchmark.measureAsync {
            await withTaskGroup(of: Int.self) { group in
                for _ in 0..<chains {
                    group.addTask {
                        let value = await withCheckedContinuation { continuation in
                            first.async { continuation.resume(returning: 1) }
                        }
                        let next = await withCheckedContinuation { continuation in
                            second.async { continuation.resume(returning: value &+ 1) }
                        }
                        return addOne(next)
                    }
                }
                for await value in group { blackHole(value) }
            }
        }
    }
}
