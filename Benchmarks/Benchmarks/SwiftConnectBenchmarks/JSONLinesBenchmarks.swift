import Benchmark
import Foundation
import SwiftConnect

// Issue 37, item 4: `jsonLines` beside reading the same bytes and decoding each line with `JSONDecoder` by hand, in
// the same run. One operation is one whole 16 MiB stream of ~80-byte JSON objects, one per line, from the loopback
// server over AsyncHTTPClientTransport. The by-hand reader is what a user writes without the view: `Connect.stream`'s
// `Data` chunks, each split at its newlines with a line carried over between chunks, each line decoded from its
// bytes. Both decode into the same model with a decoder of their own.

/// One line of the JSON Lines stream.
struct StreamedToken: Decodable, Sendable {
    let id: Int
    let token: String
    let done: Bool
}

func registerJSONLinesBenchmarks() {
    let config = configuration(
        scalingFactor: .one, metrics: memoryMetrics, maxDuration: .seconds(6), maxIterations: 50)
    let payload = StreamingPayload.jsonLines
    let path = "/stream/json-lines"
    let name = "Streaming/JSON lines 80-byte 16 MiB over AsyncHTTPClient"
    Benchmark(name + "/plain Data read, each line decoded by hand with JSONDecoder", configuration: config) {
        benchmark in
        let connect = StreamingClient.shared.connect
        benchmark.measure {
            let count = blockingAwait {
                let decoder = JSONDecoder()
                var carried = Data()
                var values = 0
                for try await chunk in connect.stream(Route(path, baseURL: LoopbackServer.baseURL)) {
                    var start = chunk.startIndex
                    while let newline = chunk[start...].firstIndex(of: 0x0A) {
                        let token: StreamedToken
                        if carried.isEmpty {
                            token = try decoder.decode(StreamedToken.self, from: chunk[start..<newline])
                        } else {
                            carried.append(chunk[start..<newline])
                            token = try decoder.decode(StreamedToken.self, from: carried)
                            carried.removeAll(keepingCapacity: true)
                        }
                        values += token.done ? 0 : 1
                        start = chunk.index(after: newline)
                    }
                    carried.append(chunk[start...])
                }
                return values
            }
            if count != payload.elements { benchmark.fail("decoded \(count) lines") }
        }
    }
    Benchmark(name + "/SwiftConnect .jsonLines", configuration: config) { benchmark in
        let connect = StreamingClient.shared.connect
        benchmark.measure {
            let count = blockingAwait {
                var values = 0
                let stream = connect.stream(Route(path, baseURL: LoopbackServer.baseURL))
                for try await token in stream.jsonLines(of: StreamedToken.self) { values += token.done ? 0 : 1 }
                return values
            }
            if count != payload.elements { benchmark.fail("decoded \(count) lines") }
        }
    }
}

extension StreamingPayload {
    /// ~80-byte JSON objects, one per line (JSON Lines), as a log or a model's tokens arrive.
    static let jsonLines = StreamingPayload(
        unit: Data((#"{"id":123456,"token":"token token token token token","done":false}"# + "        \n").utf8))
}
