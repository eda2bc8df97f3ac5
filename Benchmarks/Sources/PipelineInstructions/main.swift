import BenchmarkFixtures
import Foundation

// Counts what one pipeline request costs where the machine has no hardware counters: scripts/benchmarks.sh runs
// this under callgrind (instructions) and dhat (allocations), with two request counts, and divides the
// difference, so start-up and warm-up cancel out. Without the malloc interposer of the benchmarks.
//
//     PipelineInstructions connect|by-hand 1k|100k REQUESTS [after-decode]
//
// With `after-decode`, an unrelated 100 KiB body is decoded before each request, as in the benchmark "After a
// 100 KiB decode": run under callgrind's cache and branch simulation, it shows what that request misses.
let arguments = CommandLine.arguments
guard arguments.count == 4 || (arguments.count == 5 && arguments[4] == "after-decode"),
    ["connect", "by-hand"].contains(arguments[1]), ["1k", "100k"].contains(arguments[2]),
    let count = Int(arguments[3]), count >= 0
else {
    FileHandle.standardError.write(
        Data("usage: PipelineInstructions connect|by-hand 1k|100k REQUESTS [after-decode]\n".utf8))
    exit(2)
}
let decodesBefore = arguments.count == 5
let requests = PipelineRequests(body: arguments[2] == "100k" ? Payload.large : Payload.small)
let run = arguments[1] == "connect" ? requests.viaConnect : requests.byHand
for _ in 0..<10 where !(requests.viaConnect() && requests.byHand()) {
    FileHandle.standardError.write(Data("a warm-up request did not succeed\n".utf8))
    exit(1)
}
let decoder = JSONDecoder()
for _ in 0..<count {
    if decodesBefore { withExtendedLifetime(try? decoder.decode([Todo].self, from: Payload.large)) {} }
    guard run() else {
        FileHandle.standardError.write(Data("a request did not succeed\n".utf8))
        exit(1)
    }
}
