#if os(Linux)
    import Dispatch
    import Foundation
    import Glibc
    import SwiftConnectTesting
    import XCTest

    @testable import SwiftConnect

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// The faults a real network makes, made on one machine: the client (this process, ``TransportUnderTest``)
    /// reaches a `LocalServer` through a ``LabServer`` relay in a ``NetworkLab`` namespace, across a veth pair that
    /// the test breaks. Run by the root package over `URLSessionTransport` and by the AsyncHTTPClient package over
    /// its engine (the file is shared).
    ///
    /// Every test states the same three rules, ``XCTestCase/sendAcrossLab(_:with:file:line:)`` and the server's own counts:
    /// - every call ends within its deadline (plus a margin for the engine's own wind-down) with a response or a
    ///   typed ``ConnectError``: nothing hangs;
    /// - a request that is safe to send again succeeds through retries wherever the network lets one through;
    /// - a `POST` without an `Idempotency-Key` never reaches the server twice.
    ///
    /// The lab needs root, iproute2 and nftables: without them each test skips, saying why. Each test takes a few
    /// seconds (2,000 requests under loss about 3 s), so all run in every pass.
    final class NetworkFaultTests: XCTestCase {
        private typealias Endpoint = LabEndpoint

        private var server: LocalServer!
        private var lab: NetworkLab!
        private var relay: LabServer!
        private var connect: Connect!

        override func setUpWithError() throws {
            lab = try NetworkLab.make(for: self, needsPacketFilter: true)
            server = try LocalServer.started()
            relay = try LabServer(in: lab, .relay(toLoopbackPort: server.port))
            connect = Connect(transport: TransportUnderTest.make())
        }

        override func tearDown() {
            connect?.cancelAllRequests()
            connect = nil
            relay?.stop()
            relay = nil
            server?.stop()
            server = nil
            lab = nil
        }

        /// The relay's URL in the lab: what the client calls.
        private var labURL: URL { URL(string: "http://\(lab.labAddress):\(relay.port)")! }

        private func endpoint(
            _ path: String, method: HTTPMethod = .get, timeout: TimeInterval = 30, headers: [HTTPHeader] = []
        ) -> Endpoint {
            Endpoint(baseURL: labURL, endpoint: path, method: method, headers: headers, timeout: timeout)
        }

        /// Sends `connector`: see ``XCTestCase/sendAcrossLab(_:with:file:line:)``.
        @discardableResult
        private func send(
            _ connector: Endpoint, file: StaticString = #filePath, line: UInt = #line
        ) -> Result<ConnectResponse, ConnectError>? {
            sendAcrossLab(connector, with: connect, file: file, line: line)?.result
        }

        // MARK: - The lab itself

        func testTheLabCarriesARequestAcrossItsLink() throws {
            // Given: a route behind the relay
            server.route("GET", "/hello") { _ in .text("hello") }
            // When
            let response = try XCTUnwrap(send(endpoint("/hello"))).get()
            // Then: it came through the lab, from the host's end of the link
            XCTAssertEqual(String(decoding: response.data, as: UTF8.self), "hello")
            XCTAssertEqual(relay.clientPorts.count, 1)
        }

        /// Two test processes may make labs at once: a new lab never takes the subnet of one that exists.
        func testANewLabNeverChoosesTheSubnetOfALabThatExists() throws {
            // Given: this test's lab, in 10.214.N.0/24
            let subnet = try XCTUnwrap(Int(lab.hostAddress.split(separator: ".")[2]))
            // When: another lab's subnet is chosen, many times
            let chosen = Set((0..<2_000).map { _ in LabCommand.unusedSubnet(secondOctet: 214) })
            // Then: never this one, and still at random among the others
            XCTAssertFalse(chosen.contains(subnet))
            XCTAssertGreaterThan(chosen.count, 100)
        }

        // MARK: - Loss

        /// 10 % of the packets lost each way: TCP carries every body whole, a little later.
        func testTenPercentPacketLossDeliversEveryBodyWhole() throws {
            // Given
            let size = 256 * 1024
            server.route("GET", "/bytes/:seed") { request in
                .generatedBytes(count: size, seed: UInt64(request.pathParameters["seed"] ?? "") ?? 0)
            }
            try lab.dropPackets(percent: 10)
            // When / Then: sixteen bodies, each whole
            for seed in 1...16 {
                let response = try XCTUnwrap(send(endpoint("/bytes/\(seed)"))).get()
                XCTAssertEqual(response.data, LocalServer.generatedBytes(count: size, seed: UInt64(seed)), "\(seed)")
            }
            XCTAssertGreaterThan(try lab.droppedPackets(), 0, "the lab lost packets")
        }

        // MARK: - A refused connection

        /// Nothing listens on the port: the lab's kernel answers with a reset. `.cannotConnect`, retried for a GET
        /// (three attempts by default), never for a POST without a key.
        func testARefusedConnectionIsCannotConnectRetriedOnlyWhenSafe() throws {
            // Given: the relay's port, closed
            relay.stop()
            connect = Connect(transport: TransportUnderTest.make(), retryPolicy: RetryPolicy(baseDelay: 0.01))
            // When
            let get = try XCTUnwrap(send(endpoint("/item", timeout: 10)))
            let post = try XCTUnwrap(send(endpoint("/orders", method: .post, timeout: 10)))
            // Then
            guard case .failure(let getError) = get, case .failure(let postError) = post else {
                return XCTFail("an answer from a closed port")
            }
            XCTAssertEqual(getError.kind, .cannotConnect, "\(getError)")
            XCTAssertEqual(getError.attempts, 3)
            XCTAssertEqual(postError.kind, .cannotConnect, "\(postError)")
            XCTAssertEqual(postError.attempts, 1)
        }

        // MARK: - A slow link

        /// A link of 512 kbit/s: a 1 MiB body cannot arrive within 2 s; the call ends at its deadline, typed.
        func testASlowLinkEndsAtTheDeadlineWithTimedOut() throws {
            // Given
            server.route("GET", "/large") { _ in .generatedBytes(count: 1 << 20, seed: 3) }
            try lab.limitRate(kilobitsPerSecond: 512)
            // When
            let result = try XCTUnwrap(send(endpoint("/large", timeout: 2)))
            // Then
            guard case .failure(let error) = result else { return XCTFail("a 1 MiB body in 2 s at 512 kbit/s") }
            XCTAssertEqual(error.kind, .timedOut, "\(error)")
        }

        // MARK: - The link goes down

        /// The link goes down while the body is on its way and comes back a second later: TCP resends what was lost
        /// and the body arrives whole, within the deadline.
        func testALinkThatGoesDownMidTransferAndComesBackDeliversTheBodyWhole() throws {
            // Given: a body the slow link takes about 2 s to carry, and the link cut once the server answers
            let size = 128 * 1024
            let answering = DispatchSemaphore(value: 0)
            server.route("GET", "/large") { _ in
                answering.signal()
                return .generatedBytes(count: size, seed: 5)
            }
            try lab.limitRate(kilobitsPerSecond: 512)
            let future = connect.response(for: endpoint("/large", timeout: 30))
            XCTAssertEqual(answering.wait(timeout: .now() + 10), .success)
            try lab.setLink(up: false)
            let lab = self.lab!
            DispatchQueue.global().asyncAfter(deadline: .now() + 1) { try? lab.setLink(up: true) }
            // When
            let response = try future.waitForResult(timeout: 30 + Self.labMargin).get()
            // Then
            XCTAssertEqual(response.data, LocalServer.generatedBytes(count: size, seed: 5))
        }

        /// A link that stays down: the call ends at its deadline with `.timedOut`; once the link is back, the same
        /// client works again.
        func testALinkThatStaysDownEndsTheCallAtItsDeadlineAndTheClientRecovers() throws {
            // Given
            server.route("GET", "/item") { _ in .json(["id": 1]) }
            XCTAssertNoThrow(try XCTUnwrap(send(endpoint("/item"))).get())
            try lab.setLink(up: false)
            // When
            let result = try XCTUnwrap(send(endpoint("/item", timeout: 2)))
            // Then
            guard case .failure(let error) = result else { return XCTFail("an answer across a link that is down") }
            XCTAssertTrue([.timedOut, .cannotConnect, .connectionLost].contains(error.kind), "\(error)")
            try lab.setLink(up: true)
            XCTAssertNoThrow(try XCTUnwrap(send(endpoint("/item", timeout: 10))).get())
        }

        // MARK: - A route that swallows packets

        /// Every packet to the server vanishes (a `blackhole` route): a GET ends typed within its deadline, a POST
        /// without a key reaches the server at most once, and the client works again once the route is gone.
        func testARouteThatSwallowsPacketsEndsCallsTypedAndNeverSendsAPostTwice() throws {
            // Given: a connection in the pool, then the route
            server.route("GET", "/item") { _ in .json(["id": 1]) }
            server.route("POST", "/orders") { _ in .json(["ok": true]) }
            XCTAssertNoThrow(try XCTUnwrap(send(endpoint("/item"))).get())
            try lab.setRouteToNowhere(true)
            // When
            let get = try XCTUnwrap(send(endpoint("/item", timeout: 2)))
            let post = try XCTUnwrap(send(endpoint("/orders", method: .post, timeout: 2)))
            // Then
            for result in [get, post] {
                guard case .failure(let error) = result else { return XCTFail("an answer through a black hole") }
                XCTAssertTrue([.timedOut, .cannotConnect, .connectionLost].contains(error.kind), "\(error)")
            }
            XCTAssertLessThanOrEqual(server.requestCount(for: "POST", path: "/orders"), 1)
            try lab.setRouteToNowhere(false)
            XCTAssertNoThrow(try XCTUnwrap(send(endpoint("/item", timeout: 10))).get())
            XCTAssertLessThanOrEqual(server.requestCount(for: "POST", path: "/orders"), 1)
        }

        // MARK: - A pooled connection the peer dropped

        /// The connection a first GET left in the pool is dropped by the network without a word (no FIN, no RST):
        /// the next call on it ends within its deadline, typed or answered, and a POST without a key is never sent
        /// twice.
        func testAPooledConnectionDroppedSilentlyEndsTheNextCallWithinItsDeadline() throws {
            // Given: one pooled connection, then silence on it
            server.route("GET", "/item") { _ in .json(["id": 1]) }
            server.route("POST", "/orders") { _ in .json(["ok": true]) }
            XCTAssertNoThrow(try XCTUnwrap(send(endpoint("/item"))).get())
            let pooled = try XCTUnwrap(relay.clientPorts.last)
            try lab.dropConnection(clientPort: pooled)
            // When
            let get = try XCTUnwrap(send(endpoint("/item", timeout: 3)))
            let post = try XCTUnwrap(send(endpoint("/orders", method: .post, timeout: 3)))
            // Then: each is an answer or a typed failure, and the POST reached the server at most once
            for case .failure(let error) in [get, post] {
                XCTAssertTrue([.timedOut, .connectionLost].contains(error.kind), "\(error)")
            }
            XCTAssertLessThanOrEqual(server.requestCount(for: "POST", path: "/orders"), 1)
        }

        /// The same with ``RetryPolicy/attemptTimeout``: the GET is abandoned after its attempt's second and sent
        /// again on a new connection, which answers within the call's deadline. A POST without a key on another
        /// dropped connection is abandoned the same way, and never sent again.
        func testWithAnAttemptTimeoutAGETOnADroppedPooledConnectionSucceedsThroughARetry() throws {
            // Given
            server.route("GET", "/item") { _ in .json(["id": 1]) }
            server.route("POST", "/orders") { _ in .json(["ok": true]) }
            connect = Connect(
                transport: TransportUnderTest.make(), retryPolicy: RetryPolicy(baseDelay: 0.05, attemptTimeout: 1))
            XCTAssertNoThrow(try XCTUnwrap(send(endpoint("/item"))).get())
            try lab.dropConnection(clientPort: try XCTUnwrap(relay.clientPorts.last))
            // When
            let get = try XCTUnwrap(send(endpoint("/item", timeout: 10)))
            // Then: answered, by the second attempt (the first never reached the server)
            XCTAssertEqual(try get.get().statusCode, 200)
            XCTAssertEqual(server.requestCount(for: "GET", path: "/item"), 2)
            XCTAssertEqual(relay.clientPorts.count, 2, "the retry opened a new connection")
            // When: the new connection is dropped too, and a POST without a key goes out
            try lab.dropConnection(clientPort: try XCTUnwrap(relay.clientPorts.last))
            let post = try XCTUnwrap(send(endpoint("/orders", method: .post, timeout: 10)))
            // Then: answered on a connection of its own, or abandoned as timed out; at most once at the server
            if case .failure(let error) = post { XCTAssertEqual(error.kind, .timedOut, "\(error)") }
            XCTAssertLessThanOrEqual(server.requestCount(for: "POST", path: "/orders"), 1)
        }

        // MARK: - A TLS handshake that stalls

        /// A server that accepts the connection and never answers the TLS client hello: the call ends at its
        /// deadline with `.timedOut`.
        func testATLSHandshakeThatStallsEndsAtTheDeadline() throws {
            // Given
            let silent = try LabServer(in: lab, .silence)
            defer { silent.stop() }
            let connector = Endpoint(
                baseURL: URL(string: "https://\(lab.labAddress):\(silent.port)")!, endpoint: "/item", timeout: 2)
            // When
            let result = try XCTUnwrap(send(connector))
            // Then
            guard case .failure(let error) = result else { return XCTFail("an answer from a silent server") }
            XCTAssertEqual(error.kind, .timedOut, "\(error)")
            XCTAssertGreaterThanOrEqual(silent.clientPorts.count, 1, "the handshake never started")
        }

        // MARK: - Many requests under loss

        /// 2,000 requests, 64 in flight, with 5 % of the packets lost each way: a third GETs, a third POSTs without
        /// an `Idempotency-Key`, a third POSTs with one. Every caller gets an answer or a typed error; every GET and
        /// every keyed POST succeeds (through retries where needed); no POST without a key reaches the server twice.
        func testTwoThousandRequestsSixtyFourInFlightUnderFivePercentLoss() throws {
            // Given
            let arrivals = Protected([String: Int]())
            for method in ["GET", "POST"] {
                server.route(method, "/items/:id") { request in
                    let id = request.pathParameters["id"] ?? ""
                    arrivals.withLock { $0["\(method) \(id)", default: 0] += 1 }
                    return .json(["id": id])
                }
            }
            try lab.dropPackets(percent: 5)
            connect = Connect(
                transport: TransportUnderTest.make(connectionsPerHost: 64),
                retryPolicy: RetryPolicy(baseDelay: 0.05),
                requestQueue: RequestQueue(maxConcurrentRequests: 64))
            // 400 under a sanitizer, which slows everything down many times.
            let count = ProcessMemory.isSanitized ? 400 : 2_000
            let timeout: TimeInterval = 60
            // When: all submitted at once; the client's queue keeps 64 in flight
            let futures = (0..<count).map { index -> Future<ConnectResponse> in
                switch index % 3 {
                case 0:
                    return connect.response(for: endpoint("/items/\(index)", timeout: timeout))
                case 1:
                    return connect.response(for: endpoint("/items/\(index)", method: .post, timeout: timeout))
                default:
                    let key = HTTPHeader(name: "Idempotency-Key", value: "key-\(index)")
                    return connect.response(
                        for: endpoint("/items/\(index)", method: .post, timeout: timeout, headers: [key]))
                }
            }
            // Then: every call ended, with an answer or a typed error
            var failures: [Int: ConnectError] = [:]
            for (index, future) in futures.enumerated() {
                guard let result = try? future.waitForResult(timeout: timeout + Self.labMargin) else {
                    return XCTFail("request \(index) did not end within its deadline")
                }
                switch result {
                case .success(let response): XCTAssertEqual(response.statusCode, 200, "\(index)")
                case .failure(let error as ConnectError): failures[index] = error
                case .failure(let error): XCTFail("\(index): not a ConnectError: \(error)")
                }
            }
            // And: the safe ones all succeeded; no unkeyed POST arrived twice
            XCTAssertEqual(failures.filter { $0.key % 3 != 1 }.mapValues(\.kind), [:], "safe requests that failed")
            let seen = arrivals.snapshot
            let repeated = (0..<count).filter { $0 % 3 == 1 && seen["POST \($0)", default: 0] > 1 }
            XCTAssertEqual(repeated, [], "POSTs without a key that reached the server twice")
            let dropped = try lab.droppedPackets()
            XCTAssertGreaterThan(dropped, 0, "the lab lost packets")
            // And: nothing leaks: with the client gone, every connection it opened is closed
            XCTAssertEqual(connect.requestsInFlight, 0)
            connect = nil
            let released = DispatchTime.now()
            // (The relay closes its connection to the server once the client's closes.)
            XCTAssertTrue(server.waitUntilNoConnection(timeout: 30), "connections left open after the client went")
            let closedAfter = Double(DispatchTime.now().uptimeNanoseconds - released.uptimeNanoseconds) / 1e9
            print("NetworkFaultTests: every connection closed \(closedAfter) s after the client went")
            print(
                "NetworkFaultTests: \(count) requests under 5 % loss (\(dropped) packets lost): \(failures.count) failed "
                    + "(\(Set(failures.values.map(\.kind.rawValue)).sorted())), "
                    + "\(seen.values.reduce(0, +) - count + failures.count) arrivals beyond one per request")
        }
    }

    /// A name that does not resolve, a name with no address, and a name server that never answers, on both engines.
    ///
    /// The name server is the test's own (``LabNameServer``, in a ``NetworkLab``): the request runs in a child process
    /// (this test, started again) whose `/etc/resolv.conf` is replaced, in a mount namespace of its own (`unshare
    /// --mount`), by one naming only that server. So no query leaves the machine, and nothing outside the child sees
    /// the change.
    final class NameResolutionFaultTests: XCTestCase {
        private static let childVariable = "SWIFTCONNECT_LAB_RESOLUTION"

        /// A name server that answers "no such name": the call fails with `.nameResolution`.
        func testANameThatDoesNotResolveFailsWithNameResolution() throws {
            if ProcessInfo.processInfo.environment[Self.childVariable] != nil {
                return try resolveInChild(timeout: 20) { result in
                    guard case .failure(let error) = result else { return XCTFail("an answer for a name that is not") }
                    XCTAssertEqual(error.kind, .nameResolution, "\(error)")
                }
            }
            try runInChild(#function, behaviour: .noSuchName, resolverTimeout: 2)
        }

        /// A name server that answers that the name exists but has no address (NOERROR, no A and no AAAA record):
        /// the call fails with `.nameResolution` too, not `.cannotConnect`, since no address was ever tried.
        func testANameWithNoAddressFailsWithNameResolution() throws {
            if ProcessInfo.processInfo.environment[Self.childVariable] != nil {
                return try resolveInChild(timeout: 20) { result in
                    guard case .failure(let error) = result else {
                        return XCTFail("an answer for a name without an address")
                    }
                    XCTAssertEqual(error.kind, .nameResolution, "\(error)")
                }
            }
            try runInChild(#function, behaviour: .noAddress, resolverTimeout: 2)
        }

        /// A name server that never answers: the call still ends at its deadline, with `.timedOut`, although the
        /// system's resolver would wait 30 s.
        func testANameServerThatNeverAnswersEndsTheCallAtItsDeadline() throws {
            if ProcessInfo.processInfo.environment[Self.childVariable] != nil {
                return try resolveInChild(timeout: 2) { result in
                    guard case .failure(let error) = result else { return XCTFail("an answer without a name server") }
                    XCTAssertEqual(error.kind, .timedOut, "\(error)")
                }
            }
            try runInChild(#function, behaviour: .silence, resolverTimeout: 30)
        }

        /// The child's part: one GET to a name only the lab's name server is asked about.
        private func resolveInChild(
            timeout: TimeInterval, check: (Result<ConnectResponse, ConnectError>) -> Void
        ) throws {
            let connect = Connect(transport: TransportUnderTest.make())
            let connector = ClientFixtures.Endpoint(
                baseURL: URL(string: "http://api.sc-lab.test:8080")!, endpoint: "/items", timeout: timeout)
            let started = DispatchTime.now()
            let result = try connect.response(for: connector).waitForResult(timeout: timeout + 5)
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
            XCTAssertLessThanOrEqual(elapsed, timeout + 5)
            switch result {
            case .success(let response): check(.success(response))
            case .failure(let error as ConnectError): check(.failure(error))
            case .failure(let error): XCTFail("not a ConnectError: \(type(of: error)) \(error)")
            }
            print("NetworkFaultTests child: resolution checked")
        }

        /// The parent's part: a lab with a name server, and this test run again in a child that uses only it.
        private func runInChild(
            _ function: String, behaviour: LabNameServer.Behaviour, resolverTimeout: Int,
            file: StaticString = #filePath, line: UInt = #line
        ) throws {
            guard let unshare = LabCommand.path("unshare") else { throw XCTSkip("unshare (util-linux) is missing") }
            let lab = try NetworkLab.make(for: self)
            let nameServer = try LabNameServer(in: lab, behaviour)
            defer { nameServer.stop() }
            let resolvConf = FileManager.default.temporaryDirectory
                .appendingPathComponent("sc-lab-resolv-\(UUID().uuidString).conf")
            try "nameserver \(lab.labAddress)\noptions timeout:\(resolverTimeout) attempts:1\n"
                .write(to: resolvConf, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: resolvConf) }
            // `Module.Class/testMethod`, as XCTest on Linux takes a single test to run.
            let test = "\(String(reflecting: type(of: self)))/\(function.replacingOccurrences(of: "()", with: ""))"
            let (status, log) = try ChildProcess.run(
                unshare,
                [
                    "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
                    #"mount --bind "$0" /etc/resolv.conf && exec "$@""#,
                    resolvConf.path, CommandLine.arguments[0], test,
                ],
                adding: [Self.childVariable: "1"])
            XCTAssertEqual(status, 0, "the child failed:\n\(log.suffix(3_000))", file: file, line: line)
            XCTAssertTrue(log.contains("resolution checked"), "\(log.suffix(3_000))", file: file, line: line)
            XCTAssertGreaterThanOrEqual(
                nameServer.queries, 1, "the lab's name server was asked", file: file, line: line)
        }
    }
#endif
