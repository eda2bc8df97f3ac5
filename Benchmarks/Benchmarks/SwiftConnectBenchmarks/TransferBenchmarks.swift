import Benchmark
import Foundation
import SwiftConnect
import SwiftConnectTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Issue 6, item 5: multipart encoding throughput, beside copying the same bytes by hand (the lower bound), and
// the peak memory of a streamed upload of a large file (a figure: client and server run in separate processes,
// so the client's peak is its own).

/// Registers the transfer benchmarks. The size in a case's name ("2 MiB", "9 MiB") is the bytes per operation:
/// scripts/benchmarks.sh reads it for the throughput column.
func registerTransferBenchmarks() {
    let megabyte = 1 << 20
    let fileA = LocalServer.generatedBytes(count: megabyte, seed: 1)
    let fileB = LocalServer.generatedBytes(count: megabyte, seed: 2)
    let fields = (1...4).map { ("field\($0)", String(repeating: "value \($0) ", count: 8)) }

    func memoryForm() -> MultipartFormData {
        var form = MultipartFormData(boundary: "SwiftConnect-benchmark-boundary")
        for (name, value) in fields { form.append(field: name, value: value) }
        form.append(File(name: "a.bin", key: "a", mimeType: .octetStream, data: fileA))
        form.append(File(name: "b.bin", key: "b", mimeType: .octetStream, data: fileB))
        return form
    }

    let multipart = configuration(scalingFactor: .one, maxIterations: 2_000)

    Benchmark("Transfers/multipart encodedData 2 MiB/SwiftConnect MultipartFormData", configuration: multipart) {
        benchmark in
        let form = memoryForm()
        benchmark.measure {
            for _ in benchmark.scaledIterations { blackHole(try? form.encodedData()) }
        }
    }

    Benchmark("Transfers/multipart encodedData 2 MiB/by hand: Data appends", configuration: multipart) {
        benchmark in
        let pieces = fields.map { Data($0.1.utf8) } + [fileA, fileB]
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                var body = Data()
                for piece in pieces { body.append(piece) }
                blackHole(body)
            }
        }
    }

    // write(to:) with a part on disk: 1 MiB in memory plus 8 MiB streamed from a file in 1 MiB pieces.
    let directory = FileManager.default.temporaryDirectory
    let source = directory.appendingPathComponent("SwiftConnect-benchmark-\(getpid())-source.bin")
    let destination = directory.appendingPathComponent("SwiftConnect-benchmark-\(getpid())-form.bin")
    let fileSize = 8 * megabyte
    let fileConfiguration = configuration(
        scalingFactor: .one, maxIterations: 500,
        setup: { try LocalServer.writeGeneratedBytes(count: fileSize, seed: 3, to: source) },
        teardown: {
            try? FileManager.default.removeItem(at: source)
            try? FileManager.default.removeItem(at: destination)
        })

    Benchmark("Transfers/multipart write(to:) 9 MiB/SwiftConnect MultipartFormData", configuration: fileConfiguration) {
        benchmark in
        var form = MultipartFormData(boundary: "SwiftConnect-benchmark-boundary")
        for (name, value) in fields { form.append(field: name, value: value) }
        form.append(File(name: "a.bin", key: "a", mimeType: .octetStream, data: fileA))
        form.append(File(key: "video", mimeType: .octetStream, fileURL: source))
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                do { try form.write(to: destination) } catch { benchmark.fail("\(error)") }
            }
        }
    }

    Benchmark("Transfers/multipart write(to:) 9 MiB/by hand: FileHandle copy", configuration: fileConfiguration) {
        benchmark in
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                do {
                    _ = FileManager.default.createFile(atPath: destination.path, contents: nil)
                    let output = try FileHandle(forWritingTo: destination)
                    let input = try FileHandle(forReadingFrom: source)
                    for (_, value) in fields { try output.write(contentsOf: Data(value.utf8)) }
                    try output.write(contentsOf: fileA)
                    while let piece = try input.read(upToCount: megabyte), !piece.isEmpty {
                        try output.write(contentsOf: piece)
                    }
                    try input.close()
                    try output.close()
                } catch {
                    benchmark.fail("\(error)")
                }
            }
        }
    }

    registerStreamedUpload()
}

// MARK: - Streamed upload

private func registerStreamedUpload() {
    let size = RunMode.isSmoke ? 8 << 20 : 256 << 20
    let label = "\(size >> 20) MiB"
    let file = FileManager.default.temporaryDirectory
        .appendingPathComponent("SwiftConnect-benchmark-\(getpid())-upload.bin")
    let config = configuration(
        scalingFactor: .one,
        metrics: memoryMetrics + [.peakMemoryResidentDelta],
        maxDuration: .seconds(30),
        maxIterations: 3,
        setup: { try LocalServer.writeGeneratedBytes(count: size, seed: 5, to: file) },
        teardown: { try? FileManager.default.removeItem(at: file) }
    )

    Benchmark("Transfers/streamed upload \(label)/SwiftConnect Connect.upload", configuration: config) { benchmark in
        let connect = Connect(
            retryPolicy: nil,
            configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: LoopbackServer.baseURL.port)
        )
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                do {
                    let body = try connect.upload(
                        files: [File(key: "video", fileURL: file)], to: Route("/upload", method: .post)
                    )
                    .decoded(toType: [String: Int].self)
                    .wait(timeout: 600)
                    guard let bytes = body["bytes"], bytes > size else {
                        return benchmark.fail("the server received \(body["bytes"] ?? 0) bytes")
                    }
                } catch {
                    benchmark.fail("\(error)")
                }
            }
        }
    }

    Benchmark("Transfers/streamed upload \(label)/raw URLSession uploadTask(fromFile:)", configuration: config) {
        benchmark in
        let session = URLSession(configuration: .default)
        let url = LoopbackServer.baseURL.appendingPathComponent("upload")
        benchmark.measure {
            for _ in benchmark.scaledIterations {
                var request = URLRequest(url: url)
                request.httpMethod = "POST"
                request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
                let done = DispatchSemaphore(value: 0)
                nonisolated(unsafe) var received = 0
                session.uploadTask(with: request, fromFile: file) { data, _, _ in
                    received = data.flatMap { try? JSONDecoder().decode([String: Int].self, from: $0) }?["bytes"] ?? 0
                    done.signal()
                }.resume()
                done.wait()
                if received != size { benchmark.fail("the server received \(received) bytes") }
            }
        }
    }
}
