import Foundation
import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// MARK: - Request bodies that stream

extension TransportConformance {
    /// What the server saw of a streamed request body.
    private struct Received: Sendable {
        var byteCount = 0
        var hash = ""
        var declaredLength: Int?
        var isComplete = false
        /// The request's `Content-Length` and `Transfer-Encoding` fields as sent, whatever framed the body.
        var contentLengthField: String?
        var transferEncodingField: String?
    }

    /// A route at `path` that reads a body piece by piece, fulfils `first` once `threshold` bytes arrived, and
    /// reports what it saw to `seen` (also when the client goes away mid-body).
    private static func relayRoute(
        _ server: LocalServer, _ path: String, threshold: Int = 1, first: Promise<Void>? = nil,
        seen: Promise<Received>
    ) {
        server.streamingRoute("POST", path) { request, body in
            var received = Received(declaredLength: body.contentLength)
            received.contentLengthField = request.header("Content-Length")
            received.transferEncodingField = request.header("Transfer-Encoding")
            var hash = SHA256()
            while let piece = body.read(maxBytes: 64 << 10) {
                hash.update(piece)
                received.byteCount += piece.count
                if received.byteCount >= threshold { _ = first?.completeIfPending(with: .success(())) }
            }
            received.hash = hash.hexDigest
            received.isComplete = body.isComplete
            _ = seen.succeed(received)
            return .text("\(received.byteCount)")
        }
    }

    /// The chunks of a body made while it is sent: `first`, then whatever `rest` gives once it is awaited (the
    /// producer runs in a task of its own, cancelled when the body is let go).
    private static func producer(
        first: Data, rest: @escaping @Sendable () async throws -> [Data]
    ) -> AsyncThrowingStream<Data, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                continuation.yield(first)
                do {
                    for chunk in try await rest() { continuation.yield(chunk) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// A body made by an async sequence goes out as it is made, in chunks when its length is not known: the server
    /// has the first chunk before the producer makes the second (an engine that read the whole body before sending
    /// would wait for ever, and the check fails at the request's deadline).
    static let requestBodyStreamsAsItIsMade = Check(name: "request body streams as it is made") { context in
        try context.withServer { server in
            let first = Promise<Void>()
            let seen = Promise<Received>()
            relayRoute(server, "/relay", threshold: 100_000, first: first, seen: seen)
            let chunk = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            struct NotStreamed: Error {}
            let chunks = producer(first: chunk) {
                // Bounded: a transport that waits for the whole body would otherwise wait for ever.
                guard (try? await first.future.timeout(after: 5).value) != nil else { throw NotStreamed() }
                return [chunk, chunk]
            }
            let outcome = try context.send(
                ConnectRequest(
                    method: .post, url: server.baseURL.appendingPathComponent("relay"),
                    body: .stream(ConnectRequest.OneShotStream(chunks)), timeoutInterval: 10))
            if case .failure(let error as ConnectError) = outcome, error.underlyingError is NotStreamed {
                throw Failure(
                    description: "the server got nothing of the body while the transport read it: it does not stream "
                        + "request bodies (EngineRequest.Body.stream)")
            }
            let response = try outcome.get()
            let received = try seen.future.wait(timeout: 10)
            let whole = chunk + chunk + chunk
            try context.expect(
                response.statusCode == 200 && received.byteCount == whole.count
                    && received.hash == SHA256.hex(SHA256.hash(whole)) && received.isComplete,
                "the server got \(received.byteCount) bytes, complete: \(received.isComplete), status "
                    + "\(response.statusCode)")
            try context.expect(
                received.declaredLength == nil,
                "a body of unknown length came with Content-Length \(received.declaredLength ?? 0)")
        }
    }

    /// A streamed body with a length announced goes out with that `Content-Length` (a server may need it: a
    /// presigned upload, a server that refuses chunked requests).
    static let streamedRequestBodyKeepsItsLength = Check(name: "streamed request body keeps its length") { context in
        try context.withServer { server in
            let seen = Promise<Received>()
            relayRoute(server, "/relay", seen: seen)
            let chunk = Data(repeating: 9, count: 100_000)
            let chunks = producer(first: chunk) { [chunk] }
            let response = try context.response(
                ConnectRequest(
                    method: .post, url: server.baseURL.appendingPathComponent("relay"),
                    body: .stream(ConnectRequest.OneShotStream(chunks, length: 200_000)), timeoutInterval: 10))
            let received = try seen.future.wait(timeout: 10)
            try context.expect(
                response.statusCode == 200 && received.byteCount == 200_000 && received.isComplete,
                "the server got \(received.byteCount) bytes, complete: \(received.isComplete)")
            try context.expect(
                received.declaredLength == 200_000,
                "the server saw Content-Length \(received.declaredLength.map(String.init) ?? "none"), not 200000")
        }
    }

    /// A streamed body goes out with one framing: a `Content-Length` or chunks, never both (RFC 9112 §6.2: a sender
    /// must not send a `Content-Length` with a `Transfer-Encoding`; servers refuse such a request as a smuggling
    /// attempt, Node's parser among them, or must close the connection after it).
    static let streamedRequestBodyHasOneFraming = Check(name: "streamed request body has one framing") { context in
        try context.withServer { server in
            for length in [Int64(200_000), nil] {
                let seen = Promise<Received>()
                relayRoute(server, "/relay", seen: seen)
                let chunk = Data(repeating: 9, count: 100_000)
                let response = try context.response(
                    ConnectRequest(
                        method: .post, url: server.baseURL.appendingPathComponent("relay"),
                        body: .stream(ConnectRequest.OneShotStream(producer(first: chunk) { [chunk] }, length: length)),
                        timeoutInterval: 10))
                let received = try seen.future.wait(timeout: 10)
                try context.expect(
                    response.statusCode == 200 && received.byteCount == 200_000 && received.isComplete,
                    "length \(length.map(String.init) ?? "unknown"): the server got \(received.byteCount) bytes, "
                        + "complete: \(received.isComplete)")
                try context.expect(
                    received.contentLengthField == nil || received.transferEncodingField == nil,
                    "length \(length.map(String.init) ?? "unknown"): the request came with both Content-Length "
                        + "\(received.contentLengthField ?? "") and Transfer-Encoding "
                        + "\(received.transferEncodingField ?? "")")
            }
        }
    }

    /// A body whose producer fails, or gives another length than it announced, fails the call with
    /// `invalidRequest` (the producer's error underneath), and the server never gets it as a whole body: neither the
    /// chunks so far of a body of unknown length, nor a body shorter than its `Content-Length` said, whether its
    /// producer threw or ended early.
    static let failingRequestBodyStream = Check(name: "failing request body stream") { context in
        struct ProducerFailed: Error {}
        try context.withServer { server in
            let cases: [(String, Int64?, [Data], Bool)] = [
                ("a producer that throws", nil, [], true),
                ("a producer that throws after announcing a length", 200_000, [], true),
                ("a body shorter than announced", 200_000, [], false),
                ("a body one byte shorter than announced", 100_001, [], false),
                ("a body longer than announced", 150_000, [Data(repeating: 2, count: 100_000)], false),
            ]
            for (name, length, rest, throwing) in cases {
                let seen = Promise<Received>()
                relayRoute(server, "/relay", seen: seen)
                let chunks = producer(first: Data(repeating: 1, count: 100_000)) {
                    if throwing { throw ProducerFailed() }
                    return rest
                }
                let request = ConnectRequest(
                    method: .post, url: server.baseURL.appendingPathComponent("relay"),
                    body: .stream(ConnectRequest.OneShotStream(chunks, length: length)), timeoutInterval: 10)
                let error = try context.error(request)
                guard error.kind == .invalidRequest, case .bodyEncodingFailed? = error.invalidRequestReason else {
                    throw Failure(description: "\(name): expected invalidRequest (bodyEncodingFailed), got \(error)")
                }
                if throwing {
                    try context.expect(
                        error.underlyingError is ProducerFailed, "\(name): the producer's error was not kept: \(error)")
                }
                // The server may not have seen the request at all (nothing sent); if it did, the body was not whole.
                if let received = try? seen.future.wait(timeout: 10) {
                    try context.expect(
                        !received.isComplete || received.byteCount == 0,
                        "\(name): the server got a complete body of \(received.byteCount) bytes")
                }
            }
        }
    }

    /// A producer that stalls does not hold the call past its deadline: it fails with `timedOut`, and the producer
    /// is let go.
    static let stalledRequestBodyStream = Check(name: "stalled request body stream") { context in
        try context.withServer { server in
            let seen = Promise<Received>()
            relayRoute(server, "/relay", seen: seen)
            let never = Promise<Void>()
            let released = Promise<Void>()
            let chunks = producer(first: Data(repeating: 1, count: 1_000)) {
                await withTaskCancellationHandler {
                    _ = try? await never.future.value
                } onCancel: {
                    _ = released.succeed(())
                    _ = never.fail(CancellationError())
                }
                return []
            }
            let request = ConnectRequest(
                method: .post, url: server.baseURL.appendingPathComponent("relay"),
                body: .stream(ConnectRequest.OneShotStream(chunks)), timeoutInterval: 0.5)
            let error = try context.error(request)
            try context.expect(error.kind == .timedOut, "expected timedOut, got \(error)")
            try context.expect(
                (try? released.future.wait(timeout: 10)) != nil, "the producer was never cancelled: it is leaked")
        }
    }
}

extension TransportConformance.Context {
    /// The outcome of sending `request` through the transport (bounded wait).
    func send(_ request: ConnectRequest, transfer: TransferOptions = TransferOptions(), within seconds: Double = 30)
        throws -> Result<ConnectResponse, any Error>
    {
        try outcome(of: makeTransport().send(request, transfer: transfer), within: seconds)
    }

    /// The response to `request`, or a failure saying what came instead.
    func response(_ request: ConnectRequest) throws -> ConnectResponse {
        switch try send(request) {
        case .success(let response): return response
        case .failure(let error): throw TransportConformance.Failure(description: "expected a response, got \(error)")
        }
    }

    /// The `ConnectError` `request` fails with, or a failure saying what came instead.
    func error(_ request: ConnectRequest) throws -> ConnectError {
        switch try send(request) {
        case .success(let response):
            throw TransportConformance.Failure(description: "expected an error, got a \(response.statusCode) response")
        case .failure(let error as ConnectError): return error
        case .failure(let error):
            throw TransportConformance.Failure(description: "expected a ConnectError, got \(error)")
        }
    }
}
