import BenchmarkFixtures
import Foundation
import SwiftConnectTesting

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The loopback server of the HTTP benchmarks: SwiftConnectTesting's `LocalServer`, run in a child process
/// (this same executable, started with `SWIFTCONNECT_BENCHMARK_ROLE=server`) so that the client's CPU time,
/// allocations and peak memory are measured without the server's.
///
/// Routes: `GET /todos/1k` and `GET /todos/100k` answer JSON arrays of to-dos of about 1 KiB and 100 KiB
/// (`GET /todos/100k.gz` the latter gzip'd, whatever the request asks);
/// `POST /upload` reads the request body to the end and answers `{"bytes":N}`; `GET /stream/events` and
/// `GET /stream/lines` (and `/stream/json-lines`, ~80-byte JSON objects) stream 16 MiB of ~80-byte server-sent events or
/// lines, chunked (with `/paced` at the end,
/// at 1 Gbit/s); `GET /stream/held` sends three events and holds the stream open until `POST /stream/release`.
enum LoopbackServer {
    static let roleVariable = "SWIFTCONNECT_BENCHMARK_ROLE"

    /// The child server for this benchmark process, started on first use; it exits when this process does.
    static let shared: Child = Child.start()

    static var baseURL: URL { shared.baseURL }

    /// Runs the server in this process if it was started as the server, and never returns then.
    static func runIfServerProcess() {
        guard ProcessInfo.processInfo.environment[roleVariable] == "server" else { return }
        let server = LocalServer(recordsRequests: false)
        let small = Payload.small
        let large = Payload.large
        server.route("GET", "/todos/1k") { _ in .data(small, contentType: "application/json") }
        server.route("GET", "/todos/100k") { _ in .data(large, contentType: "application/json") }
        let largeGzip = gzipped(large)
        server.route("GET", "/todos/100k.gz") { _ in
            .data(largeGzip, contentType: "application/json").withHeader("Content-Encoding", "gzip")
        }
        let streams = [
            ("/stream/events", StreamingPayload.small.body, "text/event-stream"),
            ("/stream/large-events", StreamingPayload.large.body, "text/event-stream"),
            ("/stream/lines", StreamingPayload.lines.body, "text/plain"),
            ("/stream/json-lines", StreamingPayload.jsonLines.body, "application/jsonl"),
        ]
        for (path, body, type) in streams {
            server.route("GET", path) { _ in
                .stream(contentLength: nil, contentType: type) { write in
                    var offset = 0
                    while offset < body.count {
                        let end = min(offset + (64 << 10), body.count)
                        guard write(body[offset..<end]) else { return }
                        offset = end
                    }
                }
            }
            // The same body at most 1 Gbit/s (about 119 MB/s), as a fast real network delivers it.
            server.route("GET", path + "/paced") { _ in
                .stream(contentLength: nil, contentType: type) { write in
                    let started = Date()
                    var offset = 0
                    while offset < body.count {
                        let end = min(offset + (64 << 10), body.count)
                        guard write(body[offset..<end]) else { return }
                        offset = end
                        let due = Double(offset) / 125_000_000 - Date().timeIntervalSince(started)
                        if due > 0 { Thread.sleep(forTimeInterval: due) }
                    }
                }
            }
        }
        // Scale/ benchmarks: events 1 to 3 at once, then the stream is held open until `POST /stream/release`, then
        // events 4 and 5 and the end. A held stream gives up after 120 s.
        let held = HeldStreams()
        server.route("GET", "/stream/held") { _ in
            let generation = held.generation
            return .stream(contentLength: nil, contentType: "text/event-stream") { write in
                for id in 1...3 { guard write(Data("id: \(id)\ndata: event \(id)\n\n".utf8)) else { return } }
                guard held.wait(past: generation) else { return }
                for id in 4...5 { guard write(Data("id: \(id)\ndata: event \(id)\n\n".utf8)) else { return } }
            }
        }
        server.route("POST", "/stream/release") { _ in
            held.release()
            return .status(204)
        }
        server.streamingRoute("POST", "/upload") { _, body in
            var bytes = 0
            while let piece = body.read(maxBytes: 256 << 10) { bytes += piece.count }
            return .json(["bytes": bytes])
        }
        do {
            try server.start()
        } catch {
            FileHandle.standardError.write(Data("loopback server: \(error)\n".utf8))
            exit(1)
        }
        // The parent reads the port from the first line, then holds our standard input open while it lives. Each
        // line it sends asks for the number of connections accepted so far, answered on a line of its own.
        print(server.port)
        fflush(stdout)
        while readLine() != nil {
            print(server.connectionCount)
            fflush(stdout)
        }
        server.stop()
        exit(0)
    }

    /// The held streams of `/stream/held`: each waits until the generation it started in is released.
    final class HeldStreams: @unchecked Sendable {
        // @unchecked Sendable: `condition` guards `current`.
        private let condition = NSCondition()
        private var current = 0

        var generation: Int {
            condition.lock()
            defer { condition.unlock() }
            return current
        }

        /// Waits until `generation` is released; `false` after 120 s.
        func wait(past generation: Int) -> Bool {
            condition.lock()
            defer { condition.unlock() }
            let deadline = Date().addingTimeInterval(120)
            while current == generation {
                if !condition.wait(until: deadline) { return false }
            }
            return true
        }

        func release() {
            condition.lock()
            current += 1
            condition.broadcast()
            condition.unlock()
        }
    }

    /// A running child server process.
    final class Child: Sendable {
        let baseURL: URL
        private let process: Process
        private let input: Pipe
        private let output: Pipe
        private let queryLock = NSLock()

        private init(baseURL: URL, process: Process, input: Pipe, output: Pipe) {
            self.baseURL = baseURL
            self.process = process
            self.input = input
            self.output = output
        }

        /// How many TCP connections the server has accepted since it started (a round trip through its pipes).
        func connectionsAccepted() -> Int {
            queryLock.lock()
            defer { queryLock.unlock() }
            input.fileHandleForWriting.write(Data("connections\n".utf8))
            return Int(Self.readLine(from: output)) ?? -1
        }

        private static func readLine(from pipe: Pipe) -> String {
            var line = Data()
            while true {
                let byte = pipe.fileHandleForReading.readData(ofLength: 1)
                if byte.isEmpty || byte == Data("\n".utf8) { break }
                line.append(byte)
            }
            return String(decoding: line, as: UTF8.self)
        }

        static func start() -> Child {
            var environment = ProcessInfo.processInfo.environment
            environment[LoopbackServer.roleVariable] = "server"
            let (process, input, output) = LoopbackServer.run(
                executablePath(), environment: environment, failure: "could not start the loopback server")
            guard let port = Int(readLine(from: output)) else {
                fatalError("the loopback server did not report its port")
            }
            let child = Child(
                baseURL: URL(string: "http://127.0.0.1:\(port)")!, process: process, input: input, output: output)
            atexit {
                // Closing our end of its standard input tells the server to stop.
                try? LoopbackServer.shared.input.fileHandleForWriting.close()
            }
            return child
        }

        private static func executablePath() -> String {
            #if os(Linux)
                if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
                    return path
                }
            #endif
            return Bundle.main.executablePath ?? CommandLine.arguments[0]
        }
    }
}

extension LoopbackServer {
    /// `data` gzip'd by the system's `gzip` (level 6, no name or time stamp), as a server would send it.
    static func gzipped(_ data: Data) -> Data {
        let (process, input, output) = run(
            "/usr/bin/env", arguments: ["gzip", "-c", "-6", "-n"], failure: "the benchmark server needs gzip")
        // Written from another thread: gzip's output must be read while its input is written.
        let writer = Thread {
            input.fileHandleForWriting.write(data)
            try? input.fileHandleForWriting.close()
        }
        writer.start()
        let result = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        precondition(process.terminationStatus == 0 && !result.isEmpty, "gzip failed")
        return result
    }

    /// Starts `executable` with its standard input and output on pipes; a benchmark cannot go on without it.
    static func run(
        _ executable: String, arguments: [String] = [], environment: [String: String]? = nil, failure: String
    ) -> (process: Process, input: Pipe, output: Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        do {
            try process.run()
        } catch {
            fatalError("\(failure): \(error)")
        }
        return (process, input, output)
    }
}
