import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `AuthenticationMiddleware`: signing, one refresh for many rejected requests, replays, failures, cancellation.
///
/// Deterministic: transports answer on the calling thread (or when the test says so), and every refresh is a
/// `Promise` the test completes.
final class TokenRefreshTests: XCTestCase {
    typealias Endpoint = ClientFixtures.Endpoint

    private static let old = AuthorizationToken.bearer(token: "old")
    private static let new = AuthorizationToken.bearer(token: "new")

    // MARK: - Doubles

    /// A refresh closure whose every call returns a new pending future the test completes.
    private final class RefreshStub: Sendable {
        private let calls = Recorder<(expired: AuthorizationToken?, promise: Promise<AuthorizationToken>)>()

        var refresh: AuthenticationMiddleware.Refresh {
            { [calls] expired in
                let promise = Promise<AuthorizationToken>()
                calls.append((expired, promise))
                return promise.future
            }
        }

        var callCount: Int { calls.values.count }
        var expiredCredentials: [AuthorizationToken?] { calls.values.map(\.expired) }
        func future(ofCall index: Int) -> Future<AuthorizationToken> { calls.values[index].promise.future }

        func succeed(_ token: AuthorizationToken, call index: Int = 0) {
            calls.values[index].promise.succeed(token)
        }

        func fail(_ error: any Error, call index: Int = 0) {
            calls.values[index].promise.fail(error)
        }
    }

    /// 200 when the request carries `token`, 401 otherwise.
    private static func accepting(only token: AuthorizationToken) -> FakeResponse {
        .handler { request in
            let status = request.value(forHTTPHeaderField: "Authorization") == token.headerValue ? 200 : 401
            return .success(ConnectResponse(request: request, statusCode: status, data: Data(#"{"ok":true}"#.utf8))!)
        }
    }

    private func client(_ transport: any Transport, _ auth: AuthenticationMiddleware) -> Connect {
        Connect(transport: transport, middlewares: [auth], retryPolicy: nil)
    }

    private func authorization(_ requests: [URLRequest]) -> [String?] {
        requests.map { $0.value(forHTTPHeaderField: "Authorization") }
    }

    // MARK: - Signing

    func testEveryRequestCarriesTheCredentialReplacingItsOwn() {
        // Given
        let fake = FakeTransport.answering(.status(200))
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: RefreshStub().refresh)
        let connect = client(fake, auth)
        // When
        _ = value(of: connect.request(Endpoint(endpoint: "/plain")))
        _ = value(of: connect.request(Endpoint(endpoint: "/own", headers: [.authorization("Token own")])))
        // Then
        XCTAssertEqual(authorization(fake.requests), ["Bearer old", "Bearer old"])
        XCTAssertEqual(auth.credential, Self.old)
    }

    func testDiscoverableAsAStaticMemberWithASynchronousRefresh() {
        // Given
        let fake = FakeTransport.answering(Self.accepting(only: Self.new))
        let refreshes = Counter()
        let connect = Connect(
            transport: fake,
            middlewares: [
                .authentication(credential: Self.old) { _ in
                    refreshes.increment()
                    return Future(value: Self.new)
                }
            ],
            retryPolicy: nil
        )
        // When
        let data = value(of: connect.request(Endpoint()))
        // Then
        XCTAssertNotNil(data)
        XCTAssertEqual(refreshes.value, 1)
        XCTAssertEqual(authorization(fake.requests), ["Bearer old", "Bearer new"])
    }

    func testCustomUnauthorizedRule() {
        // Given: this server says 419 for an expired session
        let fake = FakeTransport()
        fake.stub(.get, "/items", with: [.status(419), .status(200)])
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(
            credential: Self.old, isUnauthorized: { $0.statusCode == 419 }, refresh: stub.refresh)
        // When
        let future = client(fake, auth).request(Endpoint())
        stub.succeed(Self.new)
        // Then
        XCTAssertNotNil(value(of: future))
        XCTAssertEqual(authorization(fake.requests), ["Bearer old", "Bearer new"])
    }

    func testRefreshAndUnauthorizedRuleRunOutsideTheLock() {
        // Given: closures that use the middleware itself (the lock is not recursive: this would deadlock under it)
        let fake = FakeTransport.answering(Self.accepting(only: Self.new))
        let middleware = Recorder<AuthenticationMiddleware>()
        let seen = Recorder<AuthorizationToken?>()
        let auth = AuthenticationMiddleware(
            credential: Self.old,
            isUnauthorized: { response in
                seen.append(middleware.values.first?.credential)
                return response.statusCode == 401
            },
            refresh: { _ in
                seen.append(middleware.values.first?.credential)
                return Future(value: Self.new)
            }
        )
        middleware.append(auth)
        // When
        let data = value(of: client(fake, auth).request(Endpoint()))
        // Then
        XCTAssertNotNil(data)
        XCTAssertEqual(seen.values, [Self.old, Self.old, Self.new], "rule, refresh, rule")
    }

    // MARK: - One refresh for many

    func testTwentyConcurrentRejectionsShareOneRefreshAndAllSucceed() {
        // Given: 20 requests sent at once with the old token, their 401s held back by a gate
        let gate = Promise<Void>()
        let fake = FakeTransport(fallback: Self.accepting(only: Self.new).released(by: gate.future))
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = client(fake, auth)
        let futures = Recorder<Future<Data>>()
        DispatchQueue.concurrentPerform(iterations: 20) { index in
            futures.append(connect.request(Endpoint(endpoint: "/items/\(index)")))
        }
        XCTAssertEqual(fake.requests.count, 20)
        // When: the 401s arrive, then the refresh succeeds
        gate.succeed(())
        XCTAssertEqual(stub.callCount, 1, "one refresh for 20 rejections")
        XCTAssertEqual(stub.expiredCredentials, [Self.old])
        XCTAssertTrue(futures.values.allSatisfy { !$0.isCompleted }, "all wait for the refresh")
        stub.succeed(Self.new)
        // Then
        for future in futures.values { XCTAssertNotNil(value(of: future)) }
        XCTAssertEqual(stub.callCount, 1)
        XCTAssertEqual(auth.credential, Self.new)
        let headers = authorization(fake.requests)
        XCTAssertEqual(headers.count, 40)
        XCTAssertEqual(headers.filter { $0 == "Bearer old" }.count, 20)
        XCTAssertEqual(headers.filter { $0 == "Bearer new" }.count, 20)
        let replayedPaths = fake.requests.filter { $0.value(forHTTPHeaderField: "Authorization") == "Bearer new" }.map(
            \.url?.path)
        XCTAssertEqual(Set(replayedPaths).count, 20, "each request replayed exactly once")
    }

    func testRequestStartedDuringTheRefreshWaitsAndGoesOutOnlyWithTheNewToken() {
        // Given: a first request was rejected and the refresh is running
        let fake = FakeTransport.answering(Self.accepting(only: Self.new))
        let stub = RefreshStub()
        let connect = client(fake, AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh))
        let first = connect.request(Endpoint(endpoint: "/first"))
        XCTAssertEqual(stub.callCount, 1)
        // When
        let second = connect.request(Endpoint(endpoint: "/second"))
        // Then: nothing is sent until the refresh ends
        XCTAssertTrue(fake.requests(to: "/second").isEmpty)
        XCTAssertFalse(second.isCompleted)
        stub.succeed(Self.new)
        XCTAssertNotNil(value(of: first))
        XCTAssertNotNil(value(of: second))
        XCTAssertEqual(authorization(fake.requests(to: "/second")), ["Bearer new"])
        XCTAssertEqual(authorization(fake.requests(to: "/first")), ["Bearer old", "Bearer new"])
        XCTAssertEqual(stub.callCount, 1)
    }

    // MARK: - Failures

    func testRefreshFailureFailsEveryWaitingRequestWithOneErrorAndSendsNothingMore() throws {
        // Given
        let gate = Promise<Void>()
        let fake = FakeTransport(fallback: Self.accepting(only: Self.new).released(by: gate.future))
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = client(fake, auth)
        let futures = (0..<20).map { connect.request(Endpoint(endpoint: "/items/\($0)")) }
        gate.succeed(())
        // When
        stub.fail(TestError(7))
        // Then
        let errors = futures.compactMap { connectError(of: $0) }
        XCTAssertEqual(errors.count, 20)
        let first = try XCTUnwrap(errors.first)
        XCTAssertEqual(first.kind, .authenticationFailed)
        XCTAssertEqual(first.underlyingError as? TestError, TestError(7))
        for error in errors {
            XCTAssertEqual(error.kind, first.kind)
            XCTAssertEqual(error.message, first.message)
            XCTAssertEqual(error.underlyingError as? TestError, TestError(7))
        }
        XCTAssertEqual(fake.requests.count, 20, "no request is sent again")
        XCTAssertEqual(stub.callCount, 1)
        XCTAssertEqual(auth.credential, Self.old, "the credential is kept")
    }

    func testRefreshFailureErrorsCarryTheRejectionOfEachRequest() throws {
        // Given: /a and /b rejected, each with its own 401; /c started during the refresh, never sent
        let transport = ManualTransport()
        let stub = RefreshStub()
        let connect = client(transport, AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh))
        let a = connect.request(Endpoint(endpoint: "/a"))
        let b = connect.request(Endpoint(endpoint: "/b"))
        for (index, reason) in ["expired", "revoked"].enumerated() {
            transport.respond(
                to: index, status: 401, headers: ["WWW-Authenticate": #"Bearer error="\#(reason)""#],
                body: Data(#"{"error":"\#(reason)"}"#.utf8))
        }
        let c = connect.request(Endpoint(endpoint: "/c"))
        // When
        stub.fail(TestError(7))
        // Then: each rejected request's error has its own response, as an error status would
        for (future, reason, path) in [(a, "expired", "/a"), (b, "revoked", "/b")] {
            let error = try XCTUnwrap(connectError(of: future))
            XCTAssertEqual(error.kind, .authenticationFailed)
            XCTAssertEqual(error.underlyingError as? TestError, TestError(7))
            XCTAssertEqual(error.statusCode, 401)
            XCTAssertEqual(error.headers["WWW-Authenticate"], #"Bearer error="\#(reason)""#)
            XCTAssertEqual(error.body.map { String(decoding: $0, as: UTF8.self) }, #"{"error":"\#(reason)"}"#)
            XCTAssertEqual(error.request?.url?.path, path)
            XCTAssertEqual(error.request?.value(forHTTPHeaderField: "Authorization"), "Bearer old", "as it was sent")
        }
        // and the request that never went out names itself, with no response
        let unsent = try XCTUnwrap(connectError(of: c))
        XCTAssertEqual(unsent.kind, .authenticationFailed)
        XCTAssertEqual(unsent.underlyingError as? TestError, TestError(7))
        XCTAssertEqual(unsent.request?.url?.path, "/c")
        XCTAssertNil(unsent.response)
        XCTAssertNil(unsent.body)
        XCTAssertEqual(transport.requests.count, 2)
    }

    func testAfterAFailedRefreshTheNextRequestMayRefreshAgain() {
        // Given: a refresh failed
        let fake = FakeTransport.answering(Self.accepting(only: Self.new))
        let stub = RefreshStub()
        let connect = client(fake, AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh))
        let failed = connect.request(Endpoint(endpoint: "/failed"))
        stub.fail(TestError(1))
        XCTAssertEqual(connectError(of: failed)?.kind, .authenticationFailed)
        // When: a new request is rejected with the kept credential
        let later = connect.request(Endpoint(endpoint: "/later"))
        XCTAssertEqual(stub.callCount, 2)
        XCTAssertEqual(stub.expiredCredentials, [Self.old, Self.old])
        stub.succeed(Self.new, call: 1)
        // Then
        XCTAssertNotNil(value(of: later))
        XCTAssertEqual(authorization(fake.requests(to: "/later")), ["Bearer old", "Bearer new"])
    }

    /// A 401 from another origin than the request's, where a redirect led it (without the credential: the transports
    /// keep it home), says nothing of the credential: it is the answer, and no refresh starts. It once renewed the
    /// server's credential, for another host's answer.
    func testA401FromAnotherOriginAfterARedirectIsTheAnswerWithoutARefresh() throws {
        // Given: a server that redirects to a sign-in page on another host, which answers 401
        let elsewhere = URL(string: "https://login.example.net/session")!
        let fake = FakeTransport(
            fallback: .handler { .success(ConnectResponse(request: $0, statusCode: 401, url: elsewhere)!) })
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = client(fake, auth)
        // When
        let error = try XCTUnwrap(connectError(of: connect.request(Endpoint())))
        // Then: the 401 is the answer, unrefreshed
        XCTAssertEqual(error.kind, .httpStatus)
        XCTAssertEqual(error.statusCode, 401)
        XCTAssertEqual(stub.callCount, 0, "another origin's 401 started a refresh")
        XCTAssertEqual(fake.requests.count, 1)
    }

    /// A stage after the middleware that sends the signed request to another host (a mirror) gets its 401 refreshed:
    /// the origin that counts is the one the request reached the transport with.
    func testA401OfARequestAStageAfterTheMiddlewareSentElsewhereIsRefreshed() {
        let fake = FakeTransport.answering(Self.accepting(only: Self.new))
        let stub = RefreshStub()
        let mirror = AnyMiddleware.adapter { request in
            request.url = URL(string: "https://mirror.example.net" + request.url.path)!
        }
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = Connect(transport: fake, middlewares: [auth, mirror], retryPolicy: nil)
        let future = connect.request(Endpoint())
        XCTAssertEqual(stub.callCount, 1)
        stub.succeed(Self.new)
        XCTAssertNotNil(value(of: future))
        XCTAssertEqual(authorization(fake.requests), ["Bearer old", "Bearer new"])
        XCTAssertEqual(fake.requests.compactMap { $0.url?.host }, ["mirror.example.net", "mirror.example.net"])
    }

    /// A 401 to a request whose credential a stage after the middleware replaced (a client made with
    /// `adding(middlewares:)` that signs as another user) answers that credential, not the middleware's: no refresh of
    /// the middleware's, nor a wait of its other requests behind one. And a success of it proves nothing of it.
    func testA401ToACredentialALaterStageReplacedStartsNoRefresh() {
        let fake = FakeTransport.answering(Self.accepting(only: Self.old))
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let api = Connect(transport: fake, middlewares: [auth], retryPolicy: nil)
        let otherUser = api.adding(middlewares: [
            .adapter { $0.setValue("Bearer B", forHTTPHeaderField: "Authorization") }
        ])

        XCTAssertEqual(connectError(of: otherUser.request(Endpoint()))?.statusCode, 401)
        XCTAssertEqual(stub.callCount, 0, "the middleware's credential was never sent")
        XCTAssertNotNil(value(of: api.request(Endpoint())), "its own requests go on, signed, unheld")
        XCTAssertEqual(authorization(fake.requests), ["Bearer B", "Bearer old"])
    }

    /// A call that takes every status as its answer (what the OpenAPI transport sets: a generated client reads a
    /// documented 401) gets the 401 when the middleware cannot get past it, its renewed credential rejected too or its
    /// refresh failed, not the middleware's `authenticationFailed`.
    func testACallThatAcceptsEveryStatusGetsTheRejectionTheMiddlewareCannotGetPast() throws {
        let everyStatus = RequestOptions(acceptsEveryStatus: true)
        for refreshFails in [false, true] {
            let fake = FakeTransport.answering(.status(401))
            let stub = RefreshStub()
            let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
            let connect = Connect(
                transport: fake, middlewares: [auth], retryPolicy: RetryPolicy(clock: ImmediateRetryClock()))
            let call = connect.response(for: Endpoint(), options: everyStatus)
            XCTAssertEqual(stub.callCount, 1)
            if refreshFails {
                stub.fail(ConnectError(.transport, message: "the token endpoint is down"))
            } else {
                stub.succeed(Self.new)
            }
            let response = try call.wait(timeout: 5)
            XCTAssertEqual(response.statusCode, 401, "refresh fails: \(refreshFails)")
            XCTAssertEqual(fake.requests.count, refreshFails ? 1 : 2, "refresh fails: \(refreshFails)")
        }
    }

    /// Nor does a success from another origin prove a renewed credential, which that origin never saw: it once did, and
    /// the server's rejection of the renewed credential then started a second refresh.
    func testAResponseFromAnotherOriginDoesNotProveARenewedCredential() throws {
        // Given: a renewed credential, whose first request the server redirects to another host answering 200
        let elsewhere = URL(string: "https://cdn.example.net/items")!
        let fake = FakeTransport()
        fake.stub(
            .get, "/items",
            with: [
                .status(401),
                .handler { .success(ConnectResponse(request: $0, statusCode: 200, url: elsewhere)!) },
                .status(401), .status(200),
            ])
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = Connect(transport: fake, middlewares: [auth], retryPolicy: RetryPolicy(maxAttempts: 5))
        let first = connect.request(Endpoint())
        stub.succeed(Self.new)
        XCTAssertNotNil(value(of: first))
        // When: the server rejects the renewed credential, which it never read
        let second = connect.request(Endpoint())
        // Then: no second refresh: the renewal is still unproven
        XCTAssertEqual(try XCTUnwrap(connectError(of: second)).kind, .authenticationFailed)
        XCTAssertEqual(stub.callCount, 1, "another origin's 200 proved the renewed credential")
    }

    func testRejectionOfTheReplayFailsWithoutASecondRefresh() throws {
        // Given: a server that rejects every token
        let fake = FakeTransport.answering(.json(string: #"{"error":"revoked"}"#, status: 401))
        let stub = RefreshStub()
        let connect = client(fake, AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh))
        // When
        let future = connect.request(Endpoint())
        stub.succeed(Self.new)
        // Then
        let error = try XCTUnwrap(connectError(of: future))
        XCTAssertEqual(error.kind, .authenticationFailed)
        XCTAssertEqual(error.statusCode, 401)
        XCTAssertEqual(error.request?.value(forHTTPHeaderField: "Authorization"), "Bearer new")
        XCTAssertEqual(error.body.map { String(decoding: $0, as: UTF8.self) }, #"{"error":"revoked"}"#)
        XCTAssertTrue(error.description.hasPrefix("Authentication failed: "), error.description)
        XCTAssertEqual(stub.callCount, 1)
        XCTAssertEqual(fake.requests.count, 2)
    }

    func testTenRequestsWhoseRenewedCredentialIsRejectedTooCauseOneRefresh() throws {
        // Given: a server that rejects every credential; ten requests rejected together, on the default client
        let gate = Promise<Void>()
        let fake = FakeTransport(
            fallback: FakeResponse.json(string: #"{"error":"revoked"}"#, status: 401).released(by: gate.future))
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = Connect(transport: fake, middlewares: [auth])
        let futures = (0..<10).map { connect.request(Endpoint(endpoint: "/items/\($0)")) }
        gate.succeed(())
        XCTAssertEqual(stub.callCount, 1)
        // When: the refresh succeeds, and the server rejects the renewed credential as well
        stub.succeed(Self.new)
        // Then: each request was replayed once, and fails with its own rejection; nobody refreshed again
        for (index, future) in futures.enumerated() {
            let error = try XCTUnwrap(connectError(of: future))
            XCTAssertEqual(error.kind, .authenticationFailed)
            XCTAssertEqual(error.statusCode, 401)
            XCTAssertEqual(error.request?.url?.path, "/items/\(index)", "each failure names its own request")
        }
        XCTAssertEqual(stub.callCount, 1, "one refresh for ten requests")
        XCTAssertEqual(authorization(fake.requests).filter { $0 == "Bearer new" }.count, 10)
        XCTAssertEqual(fake.requests.count, 20)
        // And a later request rejected with that credential fails without a refresh, until the credential changes
        let later = connectError(of: connect.request(Endpoint(endpoint: "/later")))
        XCTAssertEqual(later?.kind, .authenticationFailed)
        XCTAssertEqual(later?.request?.url?.path, "/later")
        XCTAssertEqual(stub.callCount, 1)
        XCTAssertEqual(fake.requests.count, 21)
        auth.setCredential(.bearer(token: "other"))
        let afterSignIn = connect.request(Endpoint())
        XCTAssertEqual(stub.callCount, 2, "a credential set by the app may be refreshed")
        stub.fail(URLError(.userAuthenticationRequired), call: 1)
        XCTAssertEqual(connectError(of: afterSignIn)?.kind, .authenticationFailed)
    }

    /// A server that accepts the `Authorization` values in `accepted` and rejects the others with 401; with
    /// `rejectingOnce`, it rejects the first request with that value too.
    private func server(accepting accepted: Protected<Set<String>>, rejectingOnce: String? = nil) -> FakeTransport {
        let sightings = Protected(0)
        return FakeTransport.answering(
            .handler { request in
                let value = request.value(forHTTPHeaderField: "Authorization") ?? ""
                let firstSighting =
                    value == rejectingOnce
                    && sightings.withLock {
                        $0 += 1
                        return $0 == 1
                    }
                let status = !firstSighting && accepted.withLock { $0.contains(value) } ? 200 : 401
                return .success(ConnectResponse(request: request, statusCode: status)!)
            })
    }

    func testARenewedCredentialTheServerAcceptedOnceMayBeRefreshedWhenItExpiresLater() {
        // Given: the renewed credential works once, then the server rejects it (it expired)
        let accepted = Protected(Set<String>(["Bearer new"]))
        let fake = server(accepting: accepted)
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = client(fake, auth)
        let first = connect.request(Endpoint())
        stub.succeed(Self.new)
        XCTAssertNotNil(value(of: first))
        // When: the credential expires
        accepted.withLock { $0 = ["Bearer newer"] }
        let second = connect.request(Endpoint())
        // Then: a second refresh, and the request goes through with its result
        XCTAssertEqual(stub.callCount, 2)
        stub.succeed(.bearer(token: "newer"), call: 1)
        XCTAssertNotNil(value(of: second))
    }

    func testARenewedCredentialRejectedOnceThenAcceptedMayBeRefreshedWhenItExpiresLater() throws {
        // Given: the server rejects the first request with the renewed credential (a replica that has not heard of
        // it yet), then accepts it
        let accepted = Protected(Set<String>(["Bearer new"]))
        let fake = server(accepting: accepted, rejectingOnce: "Bearer new")
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = client(fake, auth)
        let first = connect.request(Endpoint())
        stub.succeed(Self.new)
        XCTAssertEqual(connectError(of: first)?.kind, .authenticationFailed, "the renewed credential was rejected")
        XCTAssertNotNil(value(of: connect.request(Endpoint())), "then accepted")
        // When: the credential expires
        accepted.withLock { $0 = ["Bearer newer"] }
        let third = connect.request(Endpoint())
        // Then: accepted once, it is refreshed as any other credential, and the request goes through
        XCTAssertEqual(stub.callCount, 2)
        stub.succeed(.bearer(token: "newer"), call: 1)
        XCTAssertNotNil(value(of: third))
    }

    func testAServerErrorDoesNotProveARenewedCredential() throws {
        // Given: the server answers the renewed credential's first request with 503 (its auth service is down), then
        // rejects it
        let answers = Protected([503, 401])
        let fake = FakeTransport.answering(
            .handler { request in
                let isNew = request.value(forHTTPHeaderField: "Authorization") == "Bearer new"
                let status = isNew ? answers.withLock { $0.isEmpty ? 401 : $0.removeFirst() } : 401
                return .success(ConnectResponse(request: request, statusCode: status)!)
            })
        let stub = RefreshStub()
        let connect = client(fake, AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh))
        let first = connect.request(Endpoint())
        stub.succeed(Self.new)
        XCTAssertEqual(connectError(of: first)?.statusCode, 503)
        // When: the next request with it is rejected
        let second = connectError(of: connect.request(Endpoint()))
        // Then: the renewed credential was never accepted: no second refresh, the request fails as rejected
        XCTAssertEqual(second?.kind, .authenticationFailed)
        XCTAssertEqual(stub.callCount, 1, "a 503 counted as the server accepting the renewed credential")
    }

    // MARK: - Invalid credentials

    private func assertInvalidAuthorizationHeader(
        _ future: Future<Data>,
        file: StaticString = #filePath,
        line: UInt = #line
    ) {
        let error = connectError(of: future)
        XCTAssertEqual(error?.kind, .invalidRequest, "\(String(describing: error))", file: file, line: line)
        XCTAssertEqual(error?.invalidRequestReason, .invalidHeader(name: "Authorization"), file: file, line: line)
        XCTAssertFalse(
            error?.description.contains("abc") ?? true, "the credential is not shown", file: file, line: line)
    }

    func testCredentialWithALineBreakFailsTheRequestWithoutSendingIt() {
        for token in ["abc\n", "abc\r\nX-Injected: 1", "abc\u{0}"] {
            // Given: a token read from a file with its trailing newline, say
            let fake = FakeTransport.answering(Self.accepting(only: Self.new))
            let stub = RefreshStub()
            let connect = client(
                fake, AuthenticationMiddleware(credential: .bearer(token: token), refresh: stub.refresh))
            // When
            let future = connect.request(Endpoint())
            // Then
            assertInvalidAuthorizationHeader(future)
            XCTAssertEqual(fake.requests.count, 0, "nothing goes out unsigned")
            XCTAssertEqual(stub.callCount, 0, "no refresh either")
        }
    }

    func testRefreshedCredentialWithALineBreakFailsTheWaitingRequestsWithoutSendingThem() {
        // Given
        let fake = FakeTransport.answering(Self.accepting(only: Self.new))
        let stub = RefreshStub()
        let connect = client(fake, AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh))
        let first = connect.request(Endpoint(endpoint: "/first"))
        let second = connect.request(Endpoint(endpoint: "/second"))  // waits for the refresh
        // When
        stub.succeed(.bearer(token: "abc\n"))
        // Then
        assertInvalidAuthorizationHeader(first)
        assertInvalidAuthorizationHeader(second)
        XCTAssertEqual(authorization(fake.requests), ["Bearer old"], "only the first attempt went out")
        XCTAssertEqual(stub.callCount, 1)
    }

    func testSetCredentialWithALineBreakFailsTheNextRequestsWithoutSendingThem() {
        // Given
        let fake = FakeTransport.answering(Self.accepting(only: Self.new))
        let auth = AuthenticationMiddleware(credential: Self.new, refresh: RefreshStub().refresh)
        let connect = client(fake, auth)
        // When
        auth.setCredential(.custom(token: "abc\r\n"))
        // Then
        assertInvalidAuthorizationHeader(connect.request(Endpoint()))
        XCTAssertEqual(fake.requests.count, 0)
        auth.setCredential(Self.new)
        XCTAssertNotNil(value(of: connect.request(Endpoint())), "a valid credential signs requests again")
    }

    // MARK: - Stale credentials

    func testRequestRejectedWithAnOlderCredentialReplaysWithoutRefreshing() {
        // Given: two requests out with the old token; the first one's 401 led to a finished refresh
        let transport = ManualTransport()
        let stub = RefreshStub()
        let connect = client(transport, AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh))
        let a = connect.request(Endpoint(endpoint: "/a"))
        let b = connect.request(Endpoint(endpoint: "/b"))
        transport.respond(to: 0, status: 401)
        stub.succeed(Self.new)
        transport.respond(to: 2, status: 200)
        XCTAssertNotNil(value(of: a))
        // When: the second request's 401 arrives late
        transport.respond(to: 1, status: 401)
        // Then: it is sent again at once with the new token
        XCTAssertEqual(transport.requests.count, 4)
        XCTAssertEqual(transport.requests.last?.url?.path, "/b")
        XCTAssertEqual(authorization(transport.requests), ["Bearer old", "Bearer old", "Bearer new", "Bearer new"])
        transport.respond(to: 3, status: 200)
        XCTAssertNotNil(value(of: b))
        XCTAssertEqual(stub.callCount, 1)
    }

    func testRequestRejectedWithAnOlderCredentialAfterTheRenewedOneWasRejectedReplaysOnceWithIt() throws {
        // Given: two requests out with the old token; the first one's 401 led to a refresh, and its replay with the
        // renewed token was rejected too
        let transport = ManualTransport()
        let stub = RefreshStub()
        let connect = client(transport, AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh))
        let a = connect.request(Endpoint(endpoint: "/a"))
        let b = connect.request(Endpoint(endpoint: "/b"))
        transport.respond(to: 0, status: 401)
        stub.succeed(Self.new)
        transport.respond(to: 2, status: 401)
        XCTAssertEqual(connectError(of: a)?.kind, .authenticationFailed)
        // When: the second request's 401, of the old token, arrives late
        transport.respond(to: 1, status: 401)
        // Then: it is sent again once, with the current token, without a refresh
        XCTAssertFalse(b.isCompleted, "failed without trying the current token")
        guard transport.requests.count == 4 else {
            return XCTFail("\(transport.requests.count) requests sent: \(connectError(of: b) as Any)")
        }
        XCTAssertEqual(transport.requests.last?.url?.path, "/b")
        XCTAssertEqual(authorization(transport.requests).last, "Bearer new")
        transport.respond(to: 3, status: 200)
        XCTAssertNotNil(value(of: b))
        XCTAssertEqual(stub.callCount, 1)
    }

    func testAReplayWithTheCurrentCredentialRejectedAfterItsRenewalWasRejectedFailsWithoutARefresh() throws {
        // Given: as above, the late 401 of the old token replayed with the renewed token, already rejected once
        let transport = ManualTransport()
        let stub = RefreshStub()
        let connect = client(transport, AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh))
        _ = connect.request(Endpoint(endpoint: "/a"))
        let b = connect.request(Endpoint(endpoint: "/b"))
        transport.respond(to: 0, status: 401)
        stub.succeed(Self.new)
        transport.respond(to: 2, status: 401)
        transport.respond(to: 1, status: 401)
        guard transport.requests.count == 4 else { return XCTFail("\(transport.requests.count) requests sent") }
        // When: the server rejects the replay too
        transport.respond(to: 3, status: 401)
        // Then: it fails typed, with its own rejection, and nothing more is sent or refreshed
        let error = try XCTUnwrap(connectError(of: b))
        XCTAssertEqual(error.kind, .authenticationFailed)
        XCTAssertEqual(error.statusCode, 401)
        XCTAssertEqual(error.request?.url?.path, "/b")
        XCTAssertEqual(transport.requests.count, 4)
        XCTAssertEqual(stub.callCount, 1)
    }

    func testRequestRejectedWithACredentialWhoseRefreshFailedFailsWithTheSameError() throws {
        // Given: two requests out; the first one's 401 led to a failed refresh
        let transport = ManualTransport()
        let stub = RefreshStub()
        let connect = client(transport, AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh))
        let a = connect.request(Endpoint(endpoint: "/a"))
        let b = connect.request(Endpoint(endpoint: "/b"))
        transport.respond(to: 0, status: 401)
        stub.fail(TestError(3))
        let first = try XCTUnwrap(connectError(of: a))
        // When: the second request's 401 arrives late
        transport.respond(to: 1, status: 401)
        // Then
        let second = try XCTUnwrap(connectError(of: b))
        XCTAssertEqual(second.kind, .authenticationFailed)
        XCTAssertEqual(second.message, first.message)
        XCTAssertEqual(second.underlyingError as? TestError, TestError(3))
        XCTAssertEqual(second.statusCode, 401, "its own rejection")
        XCTAssertEqual(second.request?.url?.path, "/b")
        XCTAssertEqual(first.request?.url?.path, "/a")
        XCTAssertEqual(transport.requests.count, 2, "not sent again with a credential known to fail")
        XCTAssertEqual(stub.callCount, 1)
    }

    // MARK: - Cancellation

    func testCancellingOneWaitingRequestRemovesOnlyThatOne() {
        // Given: a, b, c rejected and waiting for the refresh; d started during the refresh
        let transport = ManualTransport()
        let stub = RefreshStub()
        let connect = client(transport, AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh))
        let a = connect.request(Endpoint(endpoint: "/a"))
        let b = connect.request(Endpoint(endpoint: "/b"))
        let c = connect.request(Endpoint(endpoint: "/c"))
        for index in 0..<3 { transport.respond(to: index, status: 401) }
        let d = connect.request(Endpoint(endpoint: "/d"))
        XCTAssertEqual(transport.requests.count, 3)
        // When
        b.cancel()
        d.cancel()
        // Then
        XCTAssertEqual(connectError(of: b)?.kind, .cancelled)
        XCTAssertEqual(connectError(of: d)?.kind, .cancelled)
        XCTAssertFalse(stub.future(ofCall: 0).isCancelled, "the refresh goes on for the others")
        stub.succeed(Self.new)
        XCTAssertEqual(transport.requests.dropFirst(3).map(\.url?.path), ["/a", "/c"])
        XCTAssertEqual(authorization(Array(transport.requests.dropFirst(3))), ["Bearer new", "Bearer new"])
        transport.respond(to: 3, status: 200)
        transport.respond(to: 4, status: 200)
        XCTAssertNotNil(value(of: a))
        XCTAssertNotNil(value(of: c))
        XCTAssertEqual(stub.callCount, 1)
    }

    func testCancellingEveryWaitingRequestLetsTheRefreshFinish() {
        // Given
        let transport = ManualTransport()
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = client(transport, auth)
        let a = connect.request(Endpoint(endpoint: "/a"))
        transport.respond(to: 0, status: 401)
        let b = connect.request(Endpoint(endpoint: "/b"))
        // When
        a.cancel()
        b.cancel()
        stub.succeed(Self.new)
        // Then
        XCTAssertEqual(connectError(of: a)?.kind, .cancelled)
        XCTAssertEqual(connectError(of: b)?.kind, .cancelled)
        XCTAssertEqual(transport.requests.count, 1, "cancelled requests are not sent")
        XCTAssertEqual(auth.credential, Self.new, "the refresh's result is still stored")
    }

    /// A request cancelled as its rejection arrives, the one that starts the refresh, is not held until the refresh
    /// ends: it is not among its waiters, and nothing keeps what its pipeline holds.
    func testARequestCancelledAsItsRejectionStartsTheRefreshIsNotKeptByIt() {
        // Given: the rule that reads the 401 is where the caller cancels, before the middleware decides
        final class Sentinel: Sendable {}
        weak var weakSentinel: Sentinel?
        let stub = RefreshStub()
        let callers = Recorder<Future<ConnectResponse>>()
        let auth = AuthenticationMiddleware(
            credential: Self.old,
            isUnauthorized: { response in
                callers.values.first?.cancel()
                return response.statusCode == 401
            },
            refresh: stub.refresh)
        let request = ConnectRequest(url: URL(string: "https://api.example.com/a")!)
        let rejection = Promise<ConnectResponse>()
        do {
            let sentinel = Sentinel()
            weakSentinel = sentinel
            callers.append(
                auth.intercept(request, context: RequestContext(method: .get, connectorName: "A")) { _ in
                    withExtendedLifetime(sentinel) {}
                    return rejection.future
                })
        }
        // When
        rejection.succeed(ConnectResponse(request: request, statusCode: 401, data: Data())!)
        // Then
        XCTAssertEqual(stub.callCount, 1, "the refresh starts for the requests to come")
        XCTAssertTrue(callers.values[0].isCancelled)
        XCTAssertNil(weakSentinel, "the cancelled request's pipeline is let go before the refresh ends")
        stub.succeed(Self.new)
        XCTAssertEqual(auth.credential, Self.new)
    }

    // MARK: - Setting the credential

    func testSetCredentialSignsTheNextRequestsAndNilSendsThemAsTheyAre() {
        // Given
        let fake = FakeTransport.answering(.status(200))
        let auth = AuthenticationMiddleware(credential: nil, refresh: RefreshStub().refresh)
        let connect = client(fake, auth)
        XCTAssertNil(auth.credential)
        _ = value(of: connect.request(Endpoint(endpoint: "/anonymous")))
        // When
        auth.setCredential(.bearer(token: "signed-in"))
        _ = value(of: connect.request(Endpoint(endpoint: "/signed-in")))
        auth.setCredential(nil)
        _ = value(of: connect.request(Endpoint(endpoint: "/signed-out", headers: [.authorization("Token own")])))
        // Then
        XCTAssertNil(auth.credential)
        XCTAssertEqual(authorization(fake.requests), [nil, "Bearer signed-in", "Token own"])
    }

    /// Signed out (`setCredential(nil)`), a rejection is the answer: it called `refresh(nil)`, whose new token signed
    /// the user back in without a word. A middleware made without a credential still refreshes on the first one.
    func testARejectionAfterSigningOutRefreshesNothing() {
        // Given: a user signed in, then out
        let fake = FakeTransport.answering(Self.accepting(only: Self.new))
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = client(fake, auth)
        auth.setCredential(nil)
        // When
        let error = connectError(of: connect.request(Endpoint(endpoint: "/me")))
        // Then
        XCTAssertEqual(error?.statusCode, 401)
        XCTAssertEqual(stub.callCount, 0)
        XCTAssertNil(auth.credential)
        // And: signed in again, a rejection refreshes as before
        auth.setCredential(Self.old)
        let again = connect.request(Endpoint(endpoint: "/me"))
        XCTAssertEqual(stub.callCount, 1)
        stub.succeed(Self.new)
        XCTAssertNotNil(value(of: again))
        XCTAssertEqual(auth.credential, Self.new)
    }

    func testSetCredentialDuringARefreshReleasesTheWaitersAndIgnoresTheLateResult() {
        // Given: a rejected request waits for a refresh, another request waits to be sent
        let fake = FakeTransport.answering(Self.accepting(only: Self.new))
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = client(fake, auth)
        let a = connect.request(Endpoint(endpoint: "/a"))
        let b = connect.request(Endpoint(endpoint: "/b"))
        // When
        auth.setCredential(Self.new)
        // Then
        XCTAssertNotNil(value(of: a))
        XCTAssertNotNil(value(of: b))
        XCTAssertEqual(authorization(fake.requests), ["Bearer old", "Bearer new", "Bearer new"])
        stub.succeed(.bearer(token: "late"))
        XCTAssertEqual(auth.credential, Self.new)
        XCTAssertEqual(stub.callCount, 1)
    }

    func testACredentialSetDuringARefreshAndRejectedTooIsRefreshedOnlyAfterThatRefreshEnds() {
        // Given: a server that rejects every credential, and a refresh of the first in flight
        let fake = FakeTransport.answering(.status(401))
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = client(fake, auth)
        let a = connect.request(Endpoint(endpoint: "/a"))
        XCTAssertEqual(stub.callCount, 1)
        // When: the app sets a credential while it runs, and the server rejects that one too
        auth.setCredential(Self.new)
        // Then: the refresh of the new credential waits for the first to end (a rotating refresh token used twice
        // at once can revoke the session)
        XCTAssertEqual(authorization(fake.requests), ["Bearer old", "Bearer new"])
        XCTAssertEqual(stub.callCount, 1, "refresh was called while another call of it ran")
        stub.succeed(.bearer(token: "late"), call: 0)
        XCTAssertEqual(stub.callCount, 2)
        XCTAssertEqual(stub.expiredCredentials.last, Self.new)
        XCTAssertEqual(auth.credential, Self.new, "the superseded refresh's result is ignored")
        // And: the second refresh's credential is tried, and its rejection ends the call
        stub.succeed(.bearer(token: "renewed"), call: 1)
        XCTAssertEqual(authorization(fake.requests).last, "Bearer renewed")
        XCTAssertEqual(connectError(of: a)?.kind, .authenticationFailed)
    }

    // MARK: - Memory

    func testCompletedRequestsDoNotKeepTheMiddlewareAlive() {
        weak var weakAuth: AuthenticationMiddleware?
        var kept: [Future<Data>] = []
        do {
            let fake = FakeTransport.answering(Self.accepting(only: Self.new))
            let stub = RefreshStub()
            let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
            weakAuth = auth
            let connect = client(fake, auth)
            kept.append(connect.request(Endpoint(endpoint: "/rejected")))
            let cancelled = connect.request(Endpoint(endpoint: "/waiting"))
            cancelled.cancel()
            kept.append(cancelled)
            stub.succeed(Self.new)
            kept.append(connect.request(Endpoint(endpoint: "/after")))
        }
        XCTAssertEqual(kept.map { $0.isCompleted }, [true, true, true])
        XCTAssertEqual(kept.map { $0.isCancelled }, [false, true, false])
        XCTAssertNil(weakAuth, "neither the completed futures nor the refresh keep the middleware")
    }

    /// A refresh that sends its call through the client it refreshes for would wait for itself for ever: that
    /// call fails at once instead, and so does the refresh, with a clear error.
    func testARefreshSendingThroughItsOwnMiddlewareFailsInsteadOfWaitingForItself() throws {
        // Given: the refresh call goes through the same client
        let fake = FakeTransport()
        fake.stub(.get, "/items", with: Self.accepting(only: Self.new))
        fake.stub(.post, "/token", with: .json(string: #"{"token":"new"}"#))
        let clients = Recorder<Connect>()
        let auth = AuthenticationMiddleware(credential: Self.old) { _ in
            clients.values[0].request(Endpoint(endpoint: "/token", method: .post)).map { _ in Self.new }
        }
        let connect = client(fake, auth)
        clients.append(connect)
        // When
        let error = try XCTUnwrap(error(of: connect.request(Endpoint()), timeout: 5) as? ConnectError)
        // Then
        XCTAssertEqual(error.kind, .authenticationFailed)
        let cause = try XCTUnwrap(error.underlyingError as? ConnectError)
        XCTAssertEqual(cause.kind, .authenticationFailed)
        XCTAssertTrue(cause.message.contains("refresh"), cause.message)
        XCTAssertEqual(fake.requests(to: "/token").count, 0, "the refresh call was not sent")
    }
}
