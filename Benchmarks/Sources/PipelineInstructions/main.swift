import BenchmarkFixtures
import Foundation

// Counts what one pipeline request costs where the machine has no hardware counters: scripts/benchmarks.sh runs
// this under callgrind (instructions) and dhat (allocations), with two request counts, and divides the
// difference, so start-up and warm-up cancel out. Without the malloc interposer of the benchmarks.
//
//     PipelineInstructions connect|by-hand 1k|100k REQUESTS
let arguments = CommandLine.arguments
guard arguments.count == 4, ["connect", "by-hand"].contains(arguments[1]), ["1k", "100k"].contains(arguments[2]),
    let count = Int(arguments[3]), count >= 0
else {
    FileHandle.standardError.write(Data("usage: PipelineInstructions connect|by-hand 1k|100k REQUESTS\n".utf8))
    exit(2)
}
let requests = PipelineRequests(body: arguments[2] == "100k" ? Payload.large : Payload.small)
let run = arguments[1] == "connect" ? requests.viaConnect : requests.byHand
for _ in 0..<10 where !(requests.viaConnect() && requests.byHand()) {
    FileHandle.standardError.write(Data("a warm-up request did not succeed\n".utf8))
    exit(1)
}
for _ in 0..<count where !run() {
    FileHandle.standardError.write(Data("a request did not succeed\n".utf8))
    exit(1)
}
