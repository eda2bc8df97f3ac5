import Foundation
import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The transport contract, as checks any ``SwiftConnect/Transport`` can be run against, yours included: each
/// check starts its own ``LocalServer`` on 127.0.0.1, sends through a transport you make, and says what went wrong.
///
/// ```swift
/// func testMyTransportKeepsTheContract() {
///     let outcomes = TransportConformance.run(knownDefects: [:]) { MyTransport() }
///     for outcome in outcomes where !outcome.isAsExpected { XCTFail(outcome.description) }
/// }
/// ```
///
/// A platform whose engine cannot keep part of the contract names it in `knownDefects` (check name → the defect):
/// that check must then fail, and one that starts passing is reported, so the exception is removed.
public enum TransportConformance {
    /// One clause of the contract.
    public struct Check: Sendable, CustomStringConvertible {
        /// A short name, the key of `knownDefects`.
        public let name: String
        let body: @Sendable (Context) throws -> Void

        /// The check's name.
        public var description: String { name }
    }

    /// What running a check came to.
    public struct Outcome: Sendable, CustomStringConvertible {
        /// The check.
        public let check: String
        /// Why it failed, or `nil` when it passed.
        public let failure: String?
        /// The known defect it was expected to fail for, if any.
        public let knownDefect: String?

        /// Whether the outcome is the expected one: passed with no known defect, or failed with one.
        public var isAsExpected: Bool { (failure == nil) == (knownDefect == nil) }

        /// A line saying what happened.
        public var description: String {
            switch (failure, knownDefect) {
            case (nil, nil): return "\(check): passed"
            case (let failure?, nil): return "\(check): FAILED: \(failure)"
            case (let failure?, let defect?): return "\(check): failed as expected (\(defect)): \(failure)"
            case (nil, let defect?): return "\(check): passed although marked as a known defect (\(defect))"
            }
        }
    }

    /// A failed expectation of a check.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// What a check works with.
    struct Context: Sendable {
        let makeTransport: @Sendable () -> any Transport

        /// Fails the check with `message` unless `condition` holds.
        func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws {
            if !condition { throw Failure(description: message()) }
        }

        /// A started server, stopped when `body` returns.
        func withServer<T>(_ body: (LocalServer) throws -> T) throws -> T {
            let server = try LocalServer.started()
            defer { server.stop() }
            return try body(server)
        }

        /// A port of 127.0.0.1 where a connection is refused, held for `body`: a socket is bound there and does not
        /// listen, so that no other one (of another process, say) can start listening there meanwhile, as on the
        /// port of a stopped server.
        func withRefusedPort<T>(_ body: (Int) throws -> T) throws -> T {
            let (socket, port) = try Socket.boundOnLoopback()
            defer { socket.closeNow() }
            return try body(port)
        }

        /// The outcome of sending `request` (bounded wait: a hang is a failure, not a hung test).
        func send(_ request: URLRequest, transfer: TransferOptions = TransferOptions(), within seconds: Double = 30)
            throws -> Result<ConnectResponse, any Error>
        {
            try outcome(of: makeTransport().send(request, transfer: transfer), within: seconds)
        }

        /// The outcome of `future` within `seconds`; a hang is a failure (the future is cancelled), not a hung test.
        func outcome(of future: Future<ConnectResponse>, within seconds: Double) throws -> Result<
            ConnectResponse, any Error
        > {
            do {
                return try future.waitForResult(timeout: seconds)
            } catch {
                future.cancel()
                throw Failure(description: "no answer within \(seconds) s: the transport hung")
            }
        }

        /// The response to `request`, or a failure saying what came instead.
        func response(_ request: URLRequest, transfer: TransferOptions = TransferOptions()) throws -> ConnectResponse {
            switch try send(request, transfer: transfer) {
            case .success(let response): return response
            case .failure(let error): throw Failure(description: "expected a response, got \(error)")
            }
        }

        /// The `ConnectError` `request` fails with, or a failure saying what came instead.
        func error(_ request: URLRequest, transfer: TransferOptions = TransferOptions()) throws -> ConnectError {
            switch try send(request, transfer: transfer) {
            case .success(let response):
                throw Failure(description: "expected an error, got a \(response.statusCode) response")
            case .failure(let error as ConnectError): return error
            case .failure(let error): throw Failure(description: "expected a ConnectError, got \(error)")
            }
        }
    }

    /// Runs every check (or those named in `only`) against transports made by `makeTransport`, one check after
    /// the other.
    ///
    /// - Parameters:
    ///   - knownDefects: Check names this transport is known to fail, each with the defect that explains it.
    ///   - only: The names of the checks to run; all when `nil`.
    ///   - makeTransport: Makes a transport; called once or more per check.
    /// - Returns: One outcome per check run, then a failed one for each name in `only` or `knownDefects` that no
    ///   check has (a typo, a check renamed), so that such a name never leaves a check silently unrun.
    public static func run(
        knownDefects: [String: String] = [:], only: Set<String>? = nil,
        makeTransport: @escaping @Sendable () -> any Transport
    ) -> [Outcome] {
        let context = Context(makeTransport: makeTransport)
        let outcomes = checks.filter { only?.contains($0.name) ?? true }.map { check in
            var failure: String?
            do {
                try check.body(context)
            } catch {
                failure = "\(error)"
            }
            return Outcome(check: check.name, failure: failure, knownDefect: knownDefects[check.name])
        }
        let names = Set(checks.map(\.name))
        let unknown = Set(only ?? []).union(knownDefects.keys).subtracting(names).sorted()
        let known = checks.map { "\"\($0.name)\"" }.joined(separator: ", ")
        return outcomes
            + unknown.map { name in
                let failure = "no check is named \"\(name)\" (the checks are \(known))"
                return Outcome(check: name, failure: failure, knownDefect: nil)
            }
    }

    /// Every check, in the order they run.
    public static let checks: [Check] = [
        methodsAndBodies, bodyFromAFile, bodyFromAStream, repeatedHeaderFields, unsendableRequestsAreRefused,
        fragmentStaysHome, statusesAreResponses,
        redirectsKeepCredentialsHome, cookieSetByARedirect, subSecondDeadline, deadlineCoversTheBody,
        deadlineEndsATricklingBody, cancellationClosesTheConnection, sizeLimitStopsReading, progress, truncatedBody,
        disagreeingLengths, refusedConnection,
        bodySentAgain,
        resetOfAPOSTOnAReusedConnection, compressedBodies, compressedBodyLimit, undecodedCodingIsRefused,
        truncatedCompressedBody, downloadToAFile, unusableFilesAreRefused,
        downloadErrorBodyLimit, streamedBodyArrivesAsItIsSent, requestBodyStreamsAsItIsMade,
        streamedRequestBodyKeepsItsLength, streamedRequestBodyHasOneFraming, failingRequestBodyStream,
        stalledRequestBodyStream,
    ]

    private static func request(
        _ server: LocalServer, _ path: String, method: String = "GET", body: Data? = nil, timeout: Double = 30
    ) -> URLRequest {
        var request = URLRequest(url: server.baseURL.appendingPathComponent(String(path.dropFirst())))
        request.httpMethod = method
        request.httpBody = body
        request.timeoutInterval = timeout
        return request
    }

    private static func text(_ response: ConnectResponse) -> String {
        String(decoding: response.data, as: UTF8.self)
    }

    // MARK: - The checks

    static let methodsAndBodies = Check(name: "methods and bodies") { context in
        try context.withServer { server in
            // A body of known length goes out with its `Content-Length` (some servers refuse a chunked request).
            server.route("*", "/echo") { request in
                .text("\(request.method) \(request.body.count) \(request.header("Content-Length") ?? "unannounced")")
            }
            let body = Data(repeating: 7, count: 10_000)
            for method in ["POST", "PUT", "PATCH", "DELETE"] {
                let response = try context.response(request(server, "/echo", method: method, body: body))
                try context.expect(
                    text(response) == "\(method) 10000 10000", "\(method): the server got \(text(response))")
            }
            let get = try context.response(request(server, "/echo"))
            try context.expect(text(get).hasPrefix("GET 0 "), "GET: the server got \(text(get))")
            let head = try context.response(request(server, "/echo", method: "HEAD"))
            try context.expect(head.statusCode == 200 && head.data.isEmpty, "HEAD: \(head.statusCode), \(head.data)")
        }
    }

    static let bodyFromAFile = Check(name: "body from a file") { context in
        try context.withServer { server in
            server.route("POST", "/upload") { request in .text(SHA256.hex(request.body)) }
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("conformance-\(UUID())")
            let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            try bytes.write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let response = try context.response(
                request(server, "/upload", method: "POST"), transfer: TransferOptions(bodyFile: file))
            try context.expect(text(response) == SHA256.hex(bytes), "the server got other bytes than the file's")
        }
    }

    /// A body that can be read again (bytes, a file) goes out whole each time the core sends it: on the second hop of
    /// a 307 or 308 redirect, which keeps the method and the body, and when the same request is sent again on the
    /// same transport, as a retry does.
    static let bodySentAgain = Check(name: "body sent again") { context in
        try context.withServer { server in
            let received = Protected<[String]>([])
            server.route("POST", "/hash") { request in
                received.withLock { $0.append("/hash \(SHA256.hex(SHA256.hash(request.body)))") }
                return .text(SHA256.hex(SHA256.hash(request.body)))
            }
            for status in [307, 308] {
                server.route("POST", "/\(status)") { request in
                    received.withLock { $0.append("/\(status) \(SHA256.hex(SHA256.hash(request.body)))") }
                    return .redirect(to: "/hash", status: status)
                }
            }
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("conformance-\(UUID())")
            let bytes = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 17) })
            try bytes.write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let hash = SHA256.hex(SHA256.hash(bytes))
            for source in ["bytes", "a file"] {
                let transfer = source == "bytes" ? TransferOptions() : TransferOptions(bodyFile: file)
                for status in [307, 308] {
                    received.withLock { $0 = [] }
                    var redirected = request(
                        server, "/\(status)", method: "POST", body: source == "bytes" ? bytes : nil)
                    redirected.setValue("\(bytes.count)", forHTTPHeaderField: "Content-Length")
                    let response = try context.response(redirected, transfer: transfer)
                    try context.expect(
                        text(response) == hash && received.snapshot == ["/\(status) \(hash)", "/hash \(hash)"],
                        "a \(status) redirect of a body from \(source): the server got \(received.snapshot), "
                            + "then answered \(response.statusCode); expected the body's SHA-256 \(hash) on each hop")
                }
                // The same request sent twice on one transport, as a retry sends it.
                received.withLock { $0 = [] }
                let transport = context.makeTransport()
                var again = request(server, "/hash", method: "POST", body: source == "bytes" ? bytes : nil)
                again.setValue("\(bytes.count)", forHTTPHeaderField: "Content-Length")
                for attempt in 1...2 {
                    let outcome = try context.outcome(of: transport.send(again, transfer: transfer), within: 30)
                    guard case .success(let response) = outcome, text(response) == hash else {
                        throw Failure(
                            description: "a body from \(source) sent again (attempt \(attempt)): got \(outcome); "
                                + "expected the body's SHA-256 \(hash)")
                    }
                }
                try context.expect(
                    received.snapshot == ["/hash \(hash)", "/hash \(hash)"],
                    "a body from \(source) sent twice: the server got \(received.snapshot)")
            }
        }
    }

    static let bodyFromAStream = Check(name: "body from a stream") { context in
        try context.withServer { server in
            server.route("POST", "/upload") { request in .text(SHA256.hex(request.body)) }
            let bytes = Data(repeating: 3, count: 50_000)
            var streamed = request(server, "/upload", method: "POST")
            streamed.httpBodyStream = InputStream(data: bytes)
            streamed.setValue("\(bytes.count)", forHTTPHeaderField: "Content-Length")
            let response = try context.response(streamed)
            try context.expect(text(response) == SHA256.hex(bytes), "the server got other bytes than the stream's")
        }
    }

    /// Header fields go both ways as they are: a repeated name keeps each value in order (a transport may join
    /// them with a comma), and no value is rewritten (the values are in mixed case).
    static let repeatedHeaderFields = Check(name: "repeated header fields") { context in
        try context.withServer { server in
            server.route("GET", "/headers") { request in
                let sent = request.headers.filter { $0.name.lowercased() == "x-sent" }.map(\.value)
                return LocalServer.Response.text(sent.joined(separator: ", "))
                    .withHeader("X-Multi", "First A").withHeader("X-Multi", "second B")
            }
            var head = HeaderFields()
            head.append(HeaderField(name: "X-Sent", value: "Value One"))
            head.append(HeaderField(name: "X-Sent", value: "value TWO"))
            let sent = ConnectRequest(
                method: .get, url: server.baseURL.appendingPathComponent("headers"), headerFields: head,
                timeoutInterval: 30)
            let response = try context.response(sent)
            let got = text(response)
            try context.expect(
                got == "Value One, value TWO" || got == "Value One,value TWO",
                "the server got X-Sent: \(got.debugDescription) for \"Value One\" then \"value TWO\"")
            let multi = response.header("X-Multi")
            try context.expect(
                multi == "First A, second B" || multi == "First A,second B",
                "X-Multi came back as \(multi ?? "nothing"), sent as \"First A\" then \"second B\"")
        }
    }

    /// A request that cannot go on the wire as it is fails with `invalidRequest`, nothing sent, when it is handed to
    /// the transport directly as much as through a client: a method or a field value with CR LF would be written into
    /// the request as a line of its own (request splitting), a field name that is not a token or a value that is not
    /// ASCII goes out differently on each engine. A plain GET and a POST with a body, which engines may send by
    /// different paths, are both held to it.
    static let unsendableRequestsAreRefused = Check(name: "unsendable requests are refused") { context in
        try context.withServer { server in
            server.route("*", "/echo") { _ in .text("sent") }
            let url = server.baseURL.appendingPathComponent("echo")
            let cases: [(label: String, method: HTTPMethod, field: HeaderField?)] = [
                ("a method with CR LF", "GET /other HTTP/1.1\r\nX-Injected: yes", nil),
                ("a method with a space", "GE T", nil),
                ("a value with CR LF", .get, HeaderField(name: "X-Note", value: "a\r\nX-Injected: yes")),
                ("a value with NUL", .get, HeaderField(name: "X-Note", value: "a\u{0}b")),
                ("a value that is not ASCII", .get, HeaderField(name: "X-Note", value: "caf\u{E9}")),
                ("a name with a space", .get, HeaderField(name: "X Note", value: "a")),
                ("a name with a colon", .get, HeaderField(name: "X-Note:", value: "a")),
            ]
            for (label, method, field) in cases {
                for body in method == .get ? [nil, Data("body".utf8)] : [nil] {
                    var request = ConnectRequest(method: body == nil ? method : .post, url: url, timeoutInterval: 30)
                    if let field { request.headerFields.append(field) }
                    if let body { request.body = .bytes(body) }
                    let outcome = try context.send(request)
                    guard case .failure(let error as ConnectError) = outcome, error.kind == .invalidRequest else {
                        throw Failure(
                            description: "\(label)\(body == nil ? "" : " and a body"): expected an invalidRequest "
                                + "error, nothing sent; got \(outcome)")
                    }
                }
            }
            try context.expect(
                server.requestCount == 0, "the server got \(server.requestCount) of the requests it should not have")
            // Counted by connection too: a request the server's parser refuses (a space in a name, a method with
            // one) is answered 400 and never counted as a request, though it was sent.
            try context.expect(
                server.connectionCount == 0,
                "the transport opened \(server.connectionCount) connections for requests it should not have sent")
        }
    }

    /// A URL's fragment (`#…`) is never sent (RFC 9110 §4.2.5): not in the request target, whether the URL has a path
    /// or not, nor in `Host`.
    static let fragmentStaysHome = Check(name: "fragment stays home") { context in
        try context.withServer { server in
            let received = Protected<[String]>([])
            for path in ["/", "/target"] {
                server.route("GET", path) { request in
                    received.withLock { $0.append("\(request.target) Host: \(request.header("Host") ?? "none")") }
                    return .text("ok")
                }
            }
            let base = server.baseURL.absoluteString
            let host = "Host: \(server.baseURL.host ?? "")\(server.baseURL.port.map { ":\($0)" } ?? "")"
            for (url, target) in [("\(base)/target?q=1#part", "/target?q=1"), ("\(base)#part", "/")] {
                received.withLock { $0 = [] }
                guard let url = URL(string: url) else { throw Failure(description: "no URL: \(url)") }
                let response = try context.response(ConnectRequest(url: url, timeoutInterval: 30))
                try context.expect(
                    response.statusCode == 200 && received.snapshot == ["\(target) \(host)"],
                    "GET \(url): the server got \(received.snapshot) and answered \(response.statusCode); expected "
                        + "\(target) with \(host)")
            }
        }
    }

    static let statusesAreResponses = Check(name: "statuses are responses") { context in
        try context.withServer { server in
            for status in [204, 400, 404, 500, 503] {
                server.route("GET", "/\(status)") { _ in .status(status) }
                let response = try context.response(request(server, "/\(status)"))
                try context.expect(response.statusCode == status, "\(status) came back as \(response.statusCode)")
            }
        }
    }

    /// The caller's credentials (`Authorization`, a `Cookie` it set, a header named like a secret) follow a redirect
    /// to the same origin, and none of them one to another origin (another port of the same host).
    static let redirectsKeepCredentialsHome = Check(name: "redirects keep credentials home") { context in
        let credentials = [("Authorization", "Bearer secret"), ("Cookie", "session=s3cret"), ("X-Api-Key", "k3y")]
        // The names of the caller's credentials a request carries (a `Cookie` may hold others, from a cookie store).
        let carried: @Sendable (LocalServer.Request) -> LocalServer.Response = { request in
            let names = credentials.filter { name, value in request.header(name)?.contains(value) ?? false }.map(\.0)
            return .text(names.isEmpty ? "none" : names.joined(separator: ", "))
        }
        try context.withServer { origin in
            try context.withServer { other in
                other.route("GET", "/landing", handler: carried)
                origin.route("GET", "/landing", handler: carried)
                origin.route("GET", "/away") { _ in .redirect(to: other.baseURL.absoluteString + "/landing") }
                origin.route("GET", "/home") { _ in .redirect(to: "/landing") }
                for (path, expected) in [("/away", "none"), ("/home", "Authorization, Cookie, X-Api-Key")] {
                    var signed = request(origin, path)
                    for (name, value) in credentials { signed.setValue(value, forHTTPHeaderField: name) }
                    let response = try context.response(signed)
                    try context.expect(
                        text(response) == expected,
                        "\(path): the redirect target got the caller's \(text(response)); expected \(expected)")
                }
            }
        }
    }

    static let cookieSetByARedirect = Check(name: "cookie set by a redirect") { context in
        try context.withServer { server in
            server.route("POST", "/login") { _ in
                LocalServer.Response.redirect(to: "/home").withHeader("Set-Cookie", "session=c0nf; Path=/")
            }
            server.route("GET", "/home") { request in .text(request.header("Cookie") ?? "none") }
            let response = try context.response(request(server, "/login", method: "POST", body: Data("u=me".utf8)))
            try context.expect(
                text(response).contains("session=c0nf"), "the next hop carried Cookie: \(text(response))")
        }
    }

    static let subSecondDeadline = Check(name: "sub-second deadline") { context in
        try context.withServer { server in
            server.route("GET", "/late") { _ in LocalServer.Response.text("late").delayed(by: 10) }
            let started = Date()
            let error = try context.error(request(server, "/late", timeout: 0.25))
            let elapsed = Date().timeIntervalSince(started)
            try context.expect(error.kind == .timedOut, "expected timedOut, got \(error.kind)")
            // A deadline rounded to whole seconds (as libcurl's timer does) would end at 1 s or later; one rounded
            // down to none, or a timeout that is not the deadline's, before 0.25 s.
            try context.expect(elapsed < 0.9, "a 0.25 s deadline ended after \(elapsed) s")
            try context.expect(elapsed >= 0.25, "a 0.25 s deadline ended after \(elapsed) s, before it was due")
        }
    }

    /// The request's timeout bounds the whole exchange: a body that stops coming after the head fails at the
    /// deadline, read into memory or streamed (where the call has ended with the head).
    static let deadlineCoversTheBody = Check(name: "deadline covers the body") { context in
        try context.withServer { server in
            server.route("GET", "/stalls") { _ in .text("the start of a body").withFault(.lieAboutLength(extra: 100)) }
            let started = Date()
            let error = try context.error(request(server, "/stalls", timeout: 0.5))
            let elapsed = Date().timeIntervalSince(started)
            try context.expect(error.kind == .timedOut, "in memory: expected timedOut, got \(error.kind): \(error)")
            try context.expect(elapsed >= 0.5, "in memory: a 0.5 s deadline ended after \(elapsed) s")
            try context.expect(elapsed < 5, "in memory: a 0.5 s deadline ended after \(elapsed) s, not at its time")

            let connect = Connect(transport: context.makeTransport(), retryPolicy: nil)
            let stream = connect.stream(SwiftConnect.Route("/stalls", baseURL: server.baseURL, timeout: 0.5))
            let ended = Promise<Void>()
            Task {
                do {
                    for try await _ in stream {}
                    _ = ended.fail(Failure(description: "streamed: the body ended as if complete"))
                } catch {
                    _ = ended.complete(with: .failure(error))
                }
            }
            let outcome: Result<Void, any Error>
            do {
                outcome = try ended.future.waitForResult(timeout: 20)
            } catch {
                stream.cancel()
                throw Failure(description: "streamed: the body was still open 20 s after a 0.5 s deadline")
            }
            guard case .failure(let failure as ConnectError) = outcome, failure.kind == .timedOut else {
                throw Failure(description: "streamed: expected timedOut, got \(outcome)")
            }
        }
    }

    /// The request's timeout bounds the exchange, not the time between two bytes: a body that keeps coming, a chunk
    /// every 0.1 s, still ends at the deadline. A server that goes silent cannot tell the two apart; this one can: a
    /// timer each byte re-arms (URLSession's `timeoutInterval`, an idle timeout) never fires, and the exchange runs
    /// as long as the body does.
    static let deadlineEndsATricklingBody = Check(name: "deadline ends a trickling body") { context in
        try context.withServer { server in
            server.route("GET", "/trickles") { _ in
                LocalServer.Response.text("x").withFault(.trickle(chunk: Data("x".utf8), interval: 0.1))
            }
            let started = Date()
            // Waited for 6 s, not the suite's 30: a transport that has not ended it by then has failed anyway.
            let error: ConnectError
            switch try context.send(request(server, "/trickles", timeout: 0.5), within: 6) {
            case .success(let response): throw Failure(description: "expected timedOut, got a \(response.statusCode)")
            case .failure(let failure as ConnectError): error = failure
            case .failure(let failure): throw Failure(description: "expected a ConnectError, got \(failure)")
            }
            let elapsed = Date().timeIntervalSince(started)
            try context.expect(error.kind == .timedOut, "expected timedOut, got \(error.kind): \(error)")
            try context.expect(
                elapsed < 5,
                "a 0.5 s deadline ended after \(elapsed) s while the body kept coming: a timer each byte re-arms is an "
                    + "idle timeout, not the exchange's deadline")
        }
    }

    /// How much the server of ``cancellationClosesTheConnection`` writes after the cancellation before it calls the
    /// transport's reading unstopped: 256 MiB. Endless, it had no bound but the machine's memory where reading goes
    /// on (FoundationNetworking piles the pieces of a cancelled task up on its delegate queue: 3.5 GB in 9 s on
    /// loopback here, and once the process was killed for want of memory).
    static let writtenAfterACancellationAtMost = 256 << 20

    static let cancellationClosesTheConnection = Check(name: "cancellation closes the connection") { context in
        try context.withServer { server in
            let started = DispatchSemaphore(value: 0)
            let cancelled = Protected(false)
            let afterTheCancellation = Protected(0)
            server.route("GET", "/endless") { _ in
                .stream(contentLength: nil) { write in
                    started.signal()
                    let piece = Data(count: 16_384)
                    while write(piece) {
                        guard cancelled.snapshot else { continue }
                        let written = afterTheCancellation.withLock { count in
                            count += piece.count
                            return count
                        }
                        if written >= writtenAfterACancellationAtMost { return }
                    }
                }
            }
            let future = context.makeTransport().send(request(server, "/endless", timeout: 60))
            try context.expect(started.wait(timeout: .now() + 10) == .success, "the request never reached the server")
            cancelled.withLock { $0 = true }
            future.cancel()
            try context.expect(server.waitUntilIdle(timeout: 10), "the server still streams to a cancelled request")
            try context.expect(
                afterTheCancellation.snapshot < writtenAfterACancellationAtMost,
                "the transport read \(writtenAfterACancellationAtMost >> 20) MiB after the cancellation: reading did "
                    + "not stop")
            let result = try? future.waitForResult(timeout: 10)
            guard case .failure(let error as ConnectError)? = result, error.kind == .cancelled else {
                throw Failure(description: "a cancelled request ended with \(String(describing: result))")
            }
        }
    }

    static let sizeLimitStopsReading = Check(name: "size limit stops reading") { context in
        try context.withServer { server in
            let pieces = Protected(0)
            server.route("GET", "/big") { _ in
                .stream(contentLength: nil) { write in
                    for _ in 0..<3_200 {  // 50 MiB
                        guard write(Data(count: 16_384)) else { break }
                        pieces.withLock { $0 += 1 }
                    }
                }
            }
            let error = try context.error(
                request(server, "/big"), transfer: TransferOptions(maxResponseBytes: 1 << 20))
            try context.expect(error.kind == .responseTooLarge, "expected responseTooLarge, got \(error.kind)")
            try context.expect(server.waitUntilIdle(timeout: 10), "the server still streams to a refused request")
            try context.expect(pieces.snapshot < 3_200, "the whole 50 MiB was read: reading did not stop")
        }
    }

    static let progress = Check(name: "progress") { context in
        try context.withServer { server in
            let size = 200_000
            server.route("GET", "/data") { _ in .data(Data(count: size)) }
            let reports = Protected<[TransferProgress]>([])
            let options = TransferOptions(progress: { report in reports.withLock { $0.append(report) } })
            let response = try context.response(request(server, "/data"), transfer: options)
            let seen = reports.snapshot
            try context.expect(response.data.count == size, "the body has \(response.data.count) bytes")
            try context.expect(!seen.isEmpty, "no progress report before the future completed")
            try context.expect(seen.last?.bytesReceived == Int64(size), "the last report says \(seen.last!)")
            let ordered = zip(seen, seen.dropFirst()).allSatisfy { $0.bytesReceived <= $1.bytesReceived }
            try context.expect(ordered, "progress went backwards")
        }
    }

    static let truncatedBody = Check(name: "truncated body") { context in
        try context.withServer { server in
            server.route("GET", "/cut") { _ in
                LocalServer.Response.data(Data(count: 10_000)).withFault(.closeMidBody(afterBytes: 1_000))
            }
            // Chunked, the length is the engine's to know: the core sees no `Content-Length` to check against.
            server.route("GET", "/cut-chunked") { _ in
                LocalServer.Response.stream(contentLength: nil) { write in
                    for _ in 0..<10 { guard write(Data(count: 1_000)) else { return } }
                }.withFault(.closeMidBody(afterBytes: 3_000))
            }
            for path in ["/cut", "/cut-chunked"] {
                switch try context.send(request(server, path)) {
                case .success(let response):
                    throw Failure(
                        description: "\(path): a body cut short came back as a \(response.statusCode) response of "
                            + "\(response.data.count) bytes")
                case .failure(let error):
                    try context.expect(
                        (error as? ConnectError)?.kind == .connectionLost,
                        "\(path): a body cut short came back as \(error)")
                }
            }
        }
    }

    /// Two `Content-Length` fields that disagree are an answer nobody can frame (RFC 9112 §6.3: an unrecoverable
    /// error, ``SwiftConnect/ConnectError/Kind/badResponse``), whatever the case of their names: `content-length` is
    /// the same field as `Content-Length` (RFC 9110 §5.1). Never a response of either length: one framed by the
    /// shorter is a body cut short, delivered as a success.
    static let disagreeingLengths = Check(name: "lengths that disagree are refused") { context in
        try context.withServer { server in
            let heads = [
                "/same-case": "Content-Length: 5\r\nContent-Length: 3",
                "/other-case": "Content-Length: 5\r\ncontent-length: 3",
            ]
            for (path, fields) in heads {
                let raw = "HTTP/1.1 200 OK\r\nConnection: close\r\n\(fields)\r\n\r\nabcde"
                server.route("GET", path) { _ in LocalServer.Response().withFault(.raw(Data(raw.utf8))) }
            }
            for path in heads.keys.sorted() {
                switch try context.send(request(server, path)) {
                case .success(let response):
                    throw Failure(
                        description: "\(path): lengths 5 and 3 came back as a \(response.statusCode) response of "
                            + "\(response.data.count) bytes")
                case .failure(let error):
                    try context.expect(
                        (error as? ConnectError)?.kind == .badResponse, "\(path): lengths 5 and 3 came back as \(error)"
                    )
                }
            }
        }
    }

    /// A connection refused (nothing listens on the port) fails with ``SwiftConnect/ConnectError/Kind/cannotConnect``:
    /// the kind a retry policy and the caller's message go by, not a generic transport failure.
    static let refusedConnection = Check(name: "refused connection") { context in
        try context.withRefusedPort { port in
            var refused = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/")!)
            refused.timeoutInterval = 10
            let error = try context.error(refused)
            try context.expect(error.kind == .cannotConnect, "a refused connection came back as \(error)")
        }
    }

    /// A POST on a kept-alive connection that the server closes without answering fails at once with
    /// ``SwiftConnect/ConnectError/Kind/connectionLost``, and the transport does not send it again (a POST is not
    /// replay-safe: whether it goes again is the retry policy's call, not the engine's).
    static let resetOfAPOSTOnAReusedConnection = Check(name: "reset of a POST on a reused connection") { context in
        try context.withServer { server in
            server.route("GET", "/warm") { _ in .text("ok") }
            server.route("POST", "/reset") { _ in LocalServer.Response().withFault(.closeBeforeHeaders) }
            let transport = context.makeTransport()
            // The warm-up opens the connection the POST is to reuse.
            let warm = try context.outcome(of: transport.send(request(server, "/warm", timeout: 10)), within: 20)
            guard case .success(let response) = warm, response.statusCode == 200, text(response) == "ok" else {
                throw Failure(description: "the warm-up GET, which opens the connection to reuse, ended with \(warm)")
            }
            let started = Date()
            let post = request(server, "/reset", method: "POST", body: Data("x".utf8), timeout: 8)
            let result = try context.outcome(of: transport.send(post), within: 30)
            let elapsed = Date().timeIntervalSince(started)
            guard case .failure(let error as ConnectError) = result else {
                throw Failure(description: "a reset POST ended with \(result)")
            }
            let posts = server.requestCount(for: "POST", path: "/reset")
            try context.expect(posts == 1, "the server got the POST \(posts) times: the transport sent it again")
            try context.expect(
                error.kind == .connectionLost, "a reset POST came back as \(error.kind), not connectionLost: \(error)")
            try context.expect(elapsed < 4, "a reset POST failed only after \(elapsed) s (its timeout is 8 s)")
        }
    }

    /// `"conformance " × 100`, gzip-compressed and zlib-wrapped deflate.
    private static let gzipped = Data(base64Encoded: "H4sIAAAAAAACA0vOz0vLL8pNzEtOVUgeZY+yR9mj7EHMBgBfY9NSsAQAAA==")!
    private static let deflated = Data(base64Encoded: "eJxLzs9Lyy/KTcxLTlVIHmWPskfZo+xBzAYA7k3S3A==")!
    /// 200,000 zero bytes, gzip-compressed to a few hundred.
    private static let gzippedZeros = Data(
        base64Encoded:
            "H4sIAAAAAAACA+3BMQEAAADCoPVPbQZ/oAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAACA1wB7WOBcQA0DAA=="
    )!

    static let compressedBodies = Check(name: "compressed bodies") { context in
        try context.withServer { server in
            server.route("GET", "/gzip") { _ in
                LocalServer.Response.data(gzipped, contentType: "text/plain").withHeader("Content-Encoding", "gzip")
            }
            server.route("GET", "/deflate") { _ in
                LocalServer.Response.data(deflated, contentType: "text/plain").withHeader("Content-Encoding", "deflate")
            }
            let expected = String(repeating: "conformance ", count: 100)
            for path in ["/gzip", "/deflate"] {
                var accepting = request(server, path)
                accepting.setValue("gzip, deflate", forHTTPHeaderField: "Accept-Encoding")
                let response = try context.response(accepting)
                try context.expect(text(response) == expected, "\(path): the body was not decoded")
            }
        }
    }

    /// A body in a coding nobody decodes is a transport failure (``SwiftConnect/ConnectError/Kind/transport`` with
    /// the coding named, for an engine of the core's exchange, which decodes gzip and deflate itself), never a success
    /// of bytes nobody can read (a server may send `br` whatever was asked).
    static let undecodedCodingIsRefused = Check(name: "undecoded content coding is refused") { context in
        try context.withServer { server in
            server.route("GET", "/brotli") { _ in
                LocalServer.Response.data(Data([0x1b, 0x0f, 0x00, 0xf8, 0x25, 0x42, 0x4c]), contentType: "text/plain")
                    .withHeader("Content-Encoding", "x-unknown-coding")
            }
            let error = try context.error(request(server, "/brotli"))
            try context.expect(
                error.isTransportFailure,
                "a body in an unknown coding came back as \(error)")
        }
    }

    /// A gzip body whose compressed data ends before it is complete (before its trailer, which checks it, or inside
    /// its deflate data), inside a `Content-Length` that counts exactly the bytes sent, is a transport failure: never
    /// the part decoded so far as a success. Nothing but the decoder can tell: every byte announced arrives.
    static let truncatedCompressedBody = Check(name: "truncated compressed body is refused") { context in
        try context.withServer { server in
            let cuts = ["/no-trailer": gzipped.dropLast(8), "/cut": gzipped.prefix(gzipped.count / 2)]
            for (path, body) in cuts {
                server.route("GET", path) { _ in
                    LocalServer.Response.data(Data(body), contentType: "text/plain")
                        .withHeader("Content-Encoding", "gzip")
                }
            }
            for path in cuts.keys.sorted() {
                var accepting = request(server, path)
                accepting.setValue("gzip", forHTTPHeaderField: "Accept-Encoding")
                switch try context.send(accepting) {
                case .success(let response):
                    throw Failure(
                        description: "\(path): a truncated gzip body came back as a \(response.statusCode) response "
                            + "of \(response.data.count) bytes")
                case .failure(let error):
                    try context.expect(
                        (error as? ConnectError)?.isTransportFailure == true,
                        "\(path): a truncated gzip body came back as \(error)")
                }
            }
        }
    }

    static let compressedBodyLimit = Check(name: "size limit counts decoded bytes") { context in
        try context.withServer { server in
            server.route("GET", "/zeros") { _ in
                LocalServer.Response.data(gzippedZeros).withHeader("Content-Encoding", "gzip")
            }
            var accepting = request(server, "/zeros")
            accepting.setValue("gzip", forHTTPHeaderField: "Accept-Encoding")
            let error = try context.error(accepting, transfer: TransferOptions(maxResponseBytes: 100_000))
            try context.expect(
                error.kind == .responseTooLarge, "200,000 decoded bytes under a 100,000 limit came back as \(error)")
        }
    }

    /// With ``SwiftConnect/TransferOptions/streaming``, the head and the first bytes reach the caller before the
    /// body is complete: the server sends the rest only once the client has the first chunk.
    static let streamedBodyArrivesAsItIsSent = Check(name: "streamed body arrives as it is sent") { context in
        try context.withServer { server in
            let firstReceived = DispatchSemaphore(value: 0)
            let serverWaited = Protected<Bool?>(nil)
            server.route("GET", "/live") { _ in
                .stream(contentLength: nil, contentType: "text/plain") { write in
                    guard write(Data("first\n".utf8)) else { return }
                    let signalled = firstReceived.wait(timeout: .now() + 5) == .success
                    serverWaited.withLock { $0 = signalled }
                    _ = write(Data("second\n".utf8))
                }
            }
            let connect = Connect(transport: context.makeTransport(), retryPolicy: nil)
            let stream = connect.stream(SwiftConnect.Route("/live", baseURL: server.baseURL))
            let received = Promise<String>()
            Task {
                var text = ""
                do {
                    for try await chunk in stream {
                        if text.isEmpty { firstReceived.signal() }
                        text += String(decoding: chunk, as: UTF8.self)
                    }
                    _ = received.succeed(text)
                } catch {
                    _ = received.fail(error)
                }
            }
            let text: String
            do {
                text = try received.future.wait(timeout: 30)
            } catch {
                stream.cancel()
                throw Failure(description: "the stream failed: \(error)")
            }
            try context.expect(text == "first\nsecond\n", "the stream delivered \(text.debugDescription)")
            try context.expect(
                serverWaited.snapshot == true,
                "the first chunk came only with the whole body: the transport does not stream (TransferOptions.streaming)"
            )
        }
    }

    /// A download answered with an error status keeps its body in memory, for the error handler: at most
    /// 1 MiB of it, declared or not, when no limit is set and under a larger limit (set for the file) alike. The
    /// core's exchange keeps that first MiB, for the error handler to make its status error of, and lets the rest go;
    /// a transport of its own may instead fail with ``ConnectError/Kind/responseTooLarge``.
    static let downloadErrorBodyLimit = Check(name: "download error body limit") { context in
        try context.withServer { server in
            let page = Data(repeating: 0x20, count: TransferOptions.downloadErrorBodyLimit + 100_000)
            server.route("GET", "/declared") { _ in .data(page, status: 500) }
            server.route("GET", "/chunked") { _ in .data(page, status: 500).withFault(.chunked) }
            server.route("GET", "/small") { _ in .data(Data("no such file".utf8), status: 404) }
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("conformance-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let transfer = TransferOptions(destination: folder.appendingPathComponent("download.bin"))
            var limited = transfer
            limited.maxResponseBytes = 100 << 20
            for path in ["/declared", "/chunked"] {
                for (name, options) in [("no limit", transfer), ("a limit of 100 MiB", limited)] {
                    switch try context.send(request(server, path), transfer: options) {
                    case .success(let response):
                        try context.expect(
                            response.statusCode == 500 && response.fileURL == nil
                                && response.data.count == TransferOptions.downloadErrorBodyLimit,
                            "\(path), \(name): expected the page's first MiB, got a \(response.statusCode) response "
                                + "with \(response.data.count) bytes in memory, "
                                + "file \(String(describing: response.fileURL))"
                        )
                    case .failure(let error):
                        try context.expect(
                            (error as? ConnectError)?.kind == .responseTooLarge,
                            "\(path), \(name): expected the page's first MiB or responseTooLarge, got \(error)")
                    }
                }
            }
            let small = try context.response(request(server, "/small"), transfer: transfer)
            try context.expect(
                small.statusCode == 404 && text(small) == "no such file" && small.fileURL == nil,
                "a small error body: \(small.statusCode), \(text(small).debugDescription), \(String(describing: small.fileURL))"
            )
            let left = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            try context.expect(left.isEmpty, "the folder holds \(left)")
        }
    }

    static let downloadToAFile = Check(name: "download to a file") { context in
        try context.withServer { server in
            let bytes = Data((0..<150_000).map { UInt8(truncatingIfNeeded: $0) })
            server.route("GET", "/file") { _ in .data(bytes) }
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("conformance-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let destination = folder.appendingPathComponent("download.bin")
            let response = try context.response(
                request(server, "/file"), transfer: TransferOptions(destination: destination))
            try context.expect(
                response.fileURL == destination, "the response names \(String(describing: response.fileURL))")
            try context.expect((try? Data(contentsOf: destination)) == bytes, "the file does not hold the body")
            let left = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            try context.expect(left == ["download.bin"], "the folder holds \(left)")
        }
    }

    /// A body file or a destination the transfer cannot use is refused before anything is sent, on every transport
    /// (``SwiftConnect/TransferOptions``): a directory as the body file or as the destination, with `.fileAccess`,
    /// what the folder holds kept; a caller's `Content-Length` other than the body file's length, with
    /// `.invalidRequest` (sent, the file's bytes past that length would be read as the next request on a kept-alive
    /// connection).
    static let unusableFilesAreRefused = Check(name: "unusable files are refused") { context in
        try context.withServer { server in
            server.route("*", "/upload") { _ in .text("sent") }
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("conformance-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = folder.appendingPathComponent("body.bin")
            let bytes = Data((0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
            try bytes.write(to: file)
            var announcing = request(server, "/upload", method: "POST")
            announcing.setValue("10", forHTTPHeaderField: "Content-Length")
            let cases: [(label: String, request: URLRequest, transfer: TransferOptions, kind: ConnectError.Kind)] = [
                (
                    "a directory as the body file", request(server, "/upload", method: "POST"),
                    TransferOptions(bodyFile: folder), .fileAccess
                ),
                (
                    "a directory as the destination", request(server, "/upload"), TransferOptions(destination: folder),
                    .fileAccess
                ),
                (
                    "a Content-Length of 10 for a body file of 10000 bytes", announcing,
                    TransferOptions(bodyFile: file),
                    .invalidRequest
                ),
            ]
            for (label, request, transfer, kind) in cases {
                let outcome = try context.send(request, transfer: transfer)
                guard case .failure(let error as ConnectError) = outcome, error.kind == kind else {
                    throw Failure(description: "\(label): expected a \(kind) error, nothing sent; got \(outcome)")
                }
            }
            try context.expect((try? Data(contentsOf: file)) == bytes, "the folder's file was changed")
            try context.expect(
                server.requestCount == 0, "the server got \(server.requestCount) of the requests it should not have")
            try context.expect(
                server.connectionCount == 0,
                "the transport opened \(server.connectionCount) connections for requests it should not have sent")
        }
    }
}
