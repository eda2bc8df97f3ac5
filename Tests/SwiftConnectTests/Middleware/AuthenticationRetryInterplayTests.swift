import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `AuthenticationMiddleware` with the client's retry loop, its deadline, `Future.timeout(after:)`, coalescing and
/// the retry policy: what an Alamofire `AuthenticationInterceptor` + `RetryPolicy` user expects.
final class AuthenticationRetryInterplayTests: XCTestCase {
    typealias Endpoint = ClientFixtures.Endpoint

    private static let old = AuthorizationToken.bearer(token: "OLDSECRET1")
    private static let new = AuthorizationToken.bearer(token: "NEWSECRET2")

    /// A refresh closure whose every call returns a pending future the test completes.
    private final class RefreshStub: Sendable {
        private let calls = Recorder<Promise<AuthorizationToken>>()

        var refresh: AuthenticationMiddleware.Refresh {
            { [calls] _ in
                let promise = Promise<AuthorizationToken>()
                calls.append(promise)
                return promise.future
            }
        }

        var callCount: Int { calls.values.count }
        func promise(_ index: Int = 0) -> Promise<AuthorizationToken> { calls.values[index] }
    }

    /// 200 when the request carries `token`, 401 otherwise.
    private static func accepting(only token: AuthorizationToken) -> FakeResponse {
        .handler { request in
            let status = request.value(forHTTPHeaderField: "Authorization") == token.headerValue ? 200 : 401
            return .success(ConnectResponse(request: request, statusCode: status, data: Data(#"{"ok":true}"#.utf8))!)
        }
    }

    private func authorization(_ requests: [URLRequest]) -> [String?] {
        requests.map { $0.value(forHTTPHeaderField: "Authorization") }
    }

    // MARK: - Deadlines and timeouts during a refresh

    func testTheCallsDeadlinePassingWhileARejectedRequestWaitsForTheRefreshFailsItAsTimedOut() throws {
        // Given: a request rejected with the old token, and a refresh that does not end
        let transport = ManualTransport()
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = Connect(
            transport: transport, middlewares: [auth], retryPolicy: RetryPolicy(clock: ImmediateRetryClock()))
        let call = connect.request(Endpoint(timeout: 0.3))
        transport.respond(to: 0, status: 401)
        XCTAssertEqual(stub.callCount, 1)
        // When: its deadline passes
        let error = try XCTUnwrap(connectError(of: call))
        // Then: it fails as any call whose deadline passed, and is not sent again once the refresh ends
        XCTAssertEqual(error.kind, .timedOut)
        XCTAssertTrue(error.message.contains("0.3 s"), error.message)
        stub.promise().succeed(Self.new)
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(auth.credential, Self.new)
    }

    func testTheCallsDeadlinePassingWhileAnUnsentRequestWaitsForTheRefreshFailsOnlyIt() throws {
        // Given: a first request rejected and waiting for the refresh, and a second, with a short deadline, waiting
        // to be sent
        let transport = ManualTransport()
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = Connect(
            transport: transport, middlewares: [auth], retryPolicy: RetryPolicy(clock: ImmediateRetryClock()))
        let first = connect.request(Endpoint(endpoint: "/first", timeout: 30))
        transport.respond(to: 0, status: 401)
        let second = connect.request(Endpoint(endpoint: "/second", timeout: 0.3))
        // When
        let error = try XCTUnwrap(connectError(of: second))
        // Then
        XCTAssertEqual(error.kind, .timedOut)
        XCTAssertEqual(error.request?.url?.path, "/second")
        XCTAssertFalse(first.isCompleted)
        stub.promise().succeed(Self.new)
        XCTAssertEqual(transport.requests.map(\.url?.path), ["/first", "/first"], "the timed-out request is not sent")
        XCTAssertEqual(authorization(transport.requests), ["Bearer OLDSECRET1", "Bearer NEWSECRET2"])
        transport.respond(to: 1, status: 200)
        XCTAssertNotNil(value(of: first))
    }

    func testFutureTimeoutOnARequestWaitingForTheRefreshFailsItAndLeavesTheOthers() throws {
        // Given
        let transport = ManualTransport()
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = Connect(transport: transport, middlewares: [auth], retryPolicy: nil)
        let first = connect.request(Endpoint(endpoint: "/first"))
        let second = connect.request(Endpoint(endpoint: "/second")).timeout(after: 0.2)
        transport.respond(to: 0, status: 401)
        transport.respond(to: 1, status: 401)
        // When
        let error = try XCTUnwrap(connectError(of: second))
        // Then
        XCTAssertEqual(error.kind, .timedOut)
        stub.promise().succeed(Self.new)
        XCTAssertEqual(transport.requests.map(\.url?.path), ["/first", "/second", "/first"])
        transport.respond(to: 2, status: 200)
        XCTAssertNotNil(value(of: first))
        XCTAssertEqual(stub.callCount, 1)
    }

    // MARK: - Failed refreshes

    func testARefreshWhosePromiseIsDroppedFailsTheWaitersTypedAndTheNextRequestRefreshesAgain() throws {
        // Given: a refresh whose promise its owner drops without completing it
        let fake = FakeTransport.answering(Self.accepting(only: Self.new))
        let calls = Counter()
        let auth = AuthenticationMiddleware(credential: Self.old) { _ in
            calls.increment()
            if calls.value == 1 { return Promise<AuthorizationToken>().future }
            return Future(value: Self.new)
        }
        let connect = Connect(transport: fake, middlewares: [auth], retryPolicy: nil)
        // When
        let error = try XCTUnwrap(connectError(of: connect.request(Endpoint())))
        // Then: it fails at once, typed, instead of waiting until its deadline (60 s)
        XCTAssertEqual(error.kind, .authenticationFailed)
        let cause = try XCTUnwrap(error.underlyingError as? ConnectError)
        XCTAssertTrue(cause.message.contains("freed without completing"), cause.message)
        XCTAssertEqual(fake.requests.count, 1)
        XCTAssertNotNil(value(of: connect.request(Endpoint())), "a later request refreshes again")
        XCTAssertEqual(calls.value, 2)
    }

    func testARefreshFailingWithA401OfTheTokenRouteFailsTheWaitersAndRecovers() throws {
        // Given: the token route rejects the refresh token once, then renews
        let authServer = FakeTransport()
        authServer.stub(.post, "/token", with: [.status(401), .json(string: #"{"token":"NEWSECRET2"}"#)])
        let authClient = Connect(transport: authServer, retryPolicy: nil)
        let fake = FakeTransport.answering(Self.accepting(only: Self.new))
        let auth = AuthenticationMiddleware(credential: Self.old) { _ in
            authClient.request(Endpoint(endpoint: "/token", method: .post)).map { _ in Self.new }
        }
        let connect = Connect(
            transport: fake, middlewares: [auth], retryPolicy: RetryPolicy(clock: ImmediateRetryClock()))
        // When
        let error = try XCTUnwrap(connectError(of: connect.request(Endpoint())))
        // Then
        XCTAssertEqual(error.kind, .authenticationFailed)
        XCTAssertEqual((error.underlyingError as? ConnectError)?.statusCode, 401)
        XCTAssertEqual(fake.requests.count, 1, "not sent again after the failed refresh")
        XCTAssertNotNil(value(of: connect.request(Endpoint())), "the next request refreshes again")
        XCTAssertEqual(authServer.requests.count, 2)
    }

    // MARK: - Bounded replays

    func testARenewedTokenRejectedAgainUnderAGenerousPolicyEndsTypedAfterOneReplay() throws {
        // Given: a server that rejects every token, and a policy allowing ten attempts
        let fake = FakeTransport.answering(.status(401))
        let calls = Counter()
        let auth = AuthenticationMiddleware(credential: Self.old) { _ in
            calls.increment()
            return Future(value: .bearer(token: "NEWSECRET\(calls.value)"))
        }
        let connect = Connect(
            transport: fake, middlewares: [auth],
            retryPolicy: RetryPolicy(maxAttempts: 10, retryableStatusCodes: [401, 503], clock: ImmediateRetryClock()))
        // When
        let error = try XCTUnwrap(connectError(of: connect.request(Endpoint())))
        // Then
        XCTAssertEqual(error.kind, .authenticationFailed)
        XCTAssertEqual(calls.value, 1)
        XCTAssertEqual(fake.requests.count, 2)
    }

    /// The replay after a refresh is one of the call's attempts (`RetryPolicy.maxAttempts`, as the middleware's
    /// documentation says), wherever the rejection comes: the policy's own retries after it share the same budget, and
    /// the call sends no more requests than the policy allows.
    func testTheReplayAfterARefreshCountsAgainstTheCallsAttempts() throws {
        for (answers, expected) in [
            ([401, 503, 503, 503, 200], ["Bearer OLDSECRET1", "Bearer NEWSECRET2", "Bearer NEWSECRET2"]),
            ([503, 401, 503, 503, 200], ["Bearer OLDSECRET1", "Bearer OLDSECRET1", "Bearer NEWSECRET2"]),
        ] {
            // Given: three attempts, and a server that answers in turn
            let fake = FakeTransport()
            fake.stub("/items", with: answers.map { .status($0) })
            let auth = AuthenticationMiddleware(credential: Self.old) { _ in Future(value: Self.new) }
            let connect = Connect(
                transport: fake, middlewares: [auth],
                retryPolicy: RetryPolicy(maxAttempts: 3, clock: ImmediateRetryClock()))
            // When
            let error = connectError(of: connect.request(Endpoint()))
            // Then
            XCTAssertEqual(error?.statusCode, 503, "\(answers)")
            XCTAssertEqual(authorization(fake.requests), expected, "\(answers)")
        }
    }

    /// A rejection, its refresh and the replay are two attempts, no more, wherever they are counted: the error's
    /// `attempts`, its description and the observers' attempt numbers and call end; a refresh that fails leaves one.
    func testARejectionAndItsReplayAreTwoAttemptsInTheErrorAndTheEvents() throws {
        for (refreshSucceeds, attempts, events) in [
            (
                true, 2,
                [
                    "start 1 -", "end 1 401", "refresh", "refreshed true", "start 2 -", "end 2 401",
                    "call authenticationFailed after 2",
                ]
            ),
            (false, 1, ["start 1 -", "end 1 401", "refresh", "refreshed false", "call authenticationFailed after 1"]),
        ] {
            // Given: a server that rejects every token, and a policy allowing five attempts
            let fake = FakeTransport.answering(.status(401))
            let observer = ConnectObserverTests.RecordingObserver()
            let auth = AuthenticationMiddleware(credential: Self.old) { _ in
                refreshSucceeds ? Future(value: Self.new) : Future(error: URLError(.notConnectedToInternet))
            }
            let connect = Connect(
                transport: fake, middlewares: [auth],
                retryPolicy: RetryPolicy(maxAttempts: 5, clock: ImmediateRetryClock()),
                settings: Connect.Settings(observers: [observer]))
            // When
            let error = try XCTUnwrap(connectError(of: connect.request(Endpoint())))
            // Then
            XCTAssertEqual(error.kind, .authenticationFailed)
            XCTAssertEqual(error.attempts, attempts)
            XCTAssertEqual(error.description.contains("(after 2 attempts)"), attempts == 2, error.description)
            XCTAssertEqual(fake.requests.count, attempts)
            XCTAssertEqual(observer.events.values, events)
        }
    }

    func testAPostRejectedWith401IsReplayedOnceWithTheRenewedTokenButNotOnA503() throws {
        // Given
        let fake = FakeTransport()
        fake.stub(.post, "/orders", with: [.status(401), .status(503), .status(200)])
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = Connect(
            transport: fake, middlewares: [auth], retryPolicy: RetryPolicy(clock: ImmediateRetryClock()))
        // When
        let call = connect.request(Endpoint(endpoint: "/orders", method: .post))
        stub.promise().succeed(Self.new)
        // Then: the 401 is replayed (the server did not act on it), the 503 is not (it may have)
        XCTAssertEqual(connectError(of: call)?.statusCode, 503)
        XCTAssertEqual(authorization(fake.requests), ["Bearer OLDSECRET1", "Bearer NEWSECRET2"])
    }

    func testABackoffThenARejectionThenASuccessUseOneLoop() throws {
        // Given: 503, then 401 with the old token, then 200 with the new
        let answers = Protected([503])
        let fake = FakeTransport.answering(
            .handler { request in
                let status =
                    answers.withLock { $0.isEmpty ? nil : $0.removeFirst() }
                    ?? (request.value(forHTTPHeaderField: "Authorization") == "Bearer NEWSECRET2" ? 200 : 401)
                return .success(ConnectResponse(request: request, statusCode: status, data: Data("{}".utf8))!)
            })
        let clock = ImmediateRetryClock()
        let auth = AuthenticationMiddleware(credential: Self.old) { _ in Future(value: Self.new) }
        let connect = Connect(
            transport: fake, middlewares: [auth],
            retryPolicy: RetryPolicy(jitter: RetryPolicy.noJitter, clock: clock))
        // When
        XCTAssertNotNil(value(of: connect.request(Endpoint())))
        // Then
        XCTAssertEqual(clock.delays, [0.5])
        XCTAssertEqual(
            authorization(fake.requests), ["Bearer OLDSECRET1", "Bearer OLDSECRET1", "Bearer NEWSECRET2"])
    }

    func testARejectionOnTheCallsLastAttemptIsItsAnswerAtOnceAndStillStartsTheRefresh() throws {
        // Given: a client that makes one attempt, and a refresh that has not ended
        let fake = FakeTransport.answering(Self.accepting(only: Self.new))
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = Connect(transport: fake, middlewares: [auth], retryPolicy: RetryPolicy(maxAttempts: 1))
        // When: its request is rejected
        let call = connect.request(Endpoint())
        // Then: no replay can follow, so the rejection is the answer now, not after a refresh it cannot use
        XCTAssertTrue(call.isCompleted, "the call waited for a refresh whose credential it could not send")
        XCTAssertEqual(connectError(of: call)?.statusCode, 401)
        // And: the refresh started for the requests to come, which go out with its credential
        XCTAssertEqual(stub.callCount, 1)
        stub.promise().succeed(Self.new)
        XCTAssertNotNil(value(of: connect.request(Endpoint())))
        XCTAssertEqual(authorization(fake.requests), ["Bearer OLDSECRET1", "Bearer NEWSECRET2"])
        XCTAssertEqual(stub.callCount, 1)
    }

    func testARejectionOnTheLastAttemptWhileARefreshRunsDoesNotWaitForIt() throws {
        // Given: two requests sent with the old token, the first of a call that may be replayed, the second of a call
        // on its last attempt
        let transport = ManualTransport()
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let replayable = Connect(
            transport: transport, middlewares: [auth], retryPolicy: RetryPolicy(clock: ImmediateRetryClock()))
        let once = Connect(transport: transport, middlewares: [auth], retryPolicy: RetryPolicy(maxAttempts: 1))
        let first = replayable.request(Endpoint(endpoint: "/first"))
        let last = once.request(Endpoint(endpoint: "/last"))
        XCTAssertEqual(transport.requests.count, 2)
        // When: both are rejected while the first one's refresh runs
        transport.respond(to: 0, status: 401)
        XCTAssertEqual(stub.callCount, 1)
        transport.respond(to: 1, status: 401)
        // Then: the call that cannot be replayed ends with its rejection at once; the other waits for the refresh
        XCTAssertTrue(last.isCompleted, "the call waited for a refresh whose credential it could not send")
        XCTAssertEqual(connectError(of: last)?.statusCode, 401)
        XCTAssertFalse(first.isCompleted)
        stub.promise().succeed(Self.new)
        XCTAssertTrue(transport.wait(forRequests: 3))
        transport.respond(to: 2)
        XCTAssertNotNil(value(of: first))
        XCTAssertEqual(
            authorization(transport.requests), ["Bearer OLDSECRET1", "Bearer OLDSECRET1", "Bearer NEWSECRET2"])
        XCTAssertEqual(transport.requests.map { $0.url?.path }, ["/first", "/last", "/first"])
        XCTAssertEqual(stub.callCount, 1)
    }

    func testARejectionOnTheLastAttemptWhoseRefreshWaitsForASupersededOneIsItsAnswerAtOnce() throws {
        // Given: a client that makes one attempt, whose first rejection started a refresh that the app's
        // setCredential then superseded
        let fake = FakeTransport.answering(.status(401))
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = Connect(transport: fake, middlewares: [auth], retryPolicy: RetryPolicy(maxAttempts: 1))
        let first = connect.request(Endpoint(endpoint: "/first"))
        XCTAssertEqual(stub.callCount, 1)
        auth.setCredential(Self.new)
        // When: the credential set is rejected too, while the superseded refresh still runs
        let second = connect.request(Endpoint(endpoint: "/second"))
        // Then: both calls end with their rejections at once
        XCTAssertTrue(first.isCompleted)
        XCTAssertTrue(second.isCompleted, "the call waited for a refresh whose credential it could not send")
        XCTAssertEqual(connectError(of: second)?.statusCode, 401)
        // And: the refresh of the credential set starts once the superseded one ends, and renews it
        XCTAssertEqual(stub.callCount, 1, "refresh was called while another call of it ran")
        stub.promise(0).succeed(.bearer(token: "LATESECRET3"))
        XCTAssertEqual(stub.callCount, 2)
        XCTAssertEqual(auth.credential, Self.new, "the superseded refresh's result is ignored")
        stub.promise(1).succeed(.bearer(token: "RENEWEDSECRET4"))
        XCTAssertEqual(auth.credential, .bearer(token: "RENEWEDSECRET4"))
        XCTAssertEqual(authorization(fake.requests), ["Bearer OLDSECRET1", "Bearer NEWSECRET2"])
    }

    /// Tells each call's refresh events, named by the call's path.
    private struct RefreshEvents: ConnectObserver {
        let events: Recorder<String>
        func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? {
            Call(path: call.request.url.path, events: events)
        }
        struct Call: ConnectCallObserver {
            let path: String
            let events: Recorder<String>
            func record(_ event: ConnectEvent) {
                switch event {
                case .tokenRefreshStarted: events.append("\(path) refresh started")
                case .tokenRefreshEnded(let succeeded): events.append("\(path) refresh ended \(succeeded)")
                default: break
                }
            }
        }
    }

    /// Sends `GET /ping` through the client it is given when a call hears its refresh start (telemetry, say).
    private struct PingOnRefresh: ConnectObserver {
        let client: Recorder<Connect>
        let pings: Recorder<Future<Data>>
        func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? { Call(client: client, pings: pings) }
        struct Call: ConnectCallObserver {
            let client: Recorder<Connect>
            let pings: Recorder<Future<Data>>
            func record(_ event: ConnectEvent) {
                guard case .tokenRefreshStarted = event, let connect = client.values.first else { return }
                pings.append(connect.request(Endpoint(endpoint: "/ping")))
            }
        }
    }

    /// A request an observer sends on hearing a refresh start waits for the refresh, as any other request does, and
    /// goes with the renewed credential: it was refused at once as one `refresh` itself sent (the observer ran on the
    /// thread about to call `refresh`).
    func testARequestAnObserverSendsAsARefreshStartsWaitsForIt() throws {
        let fake = FakeTransport()
        fake.stub("/profile", with: [.status(401), .json(string: "{}")])
        fake.stub("/ping", with: .json(string: "{}"))
        let stub = RefreshStub()
        let client = Recorder<Connect>()
        let pings = Recorder<Future<Data>>()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = Connect(
            transport: fake, middlewares: [auth], retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            settings: Connect.Settings(observers: [PingOnRefresh(client: client, pings: pings)]))
        client.append(connect)
        let profile = connect.request(Endpoint(endpoint: "/profile"))
        let ping = try XCTUnwrap(pings.values.first)
        XCTAssertFalse(ping.isCompleted, "it waits for the refresh")
        stub.promise().succeed(Self.new)
        XCTAssertNoThrow(try profile.wait(timeout: 5))
        XCTAssertNoThrow(try ping.wait(timeout: 5))
        let sentPing = fake.requests.last { $0.url?.path == "/ping" }
        XCTAssertEqual(sentPing?.value(forHTTPHeaderField: "Authorization"), "Bearer NEWSECRET2")
    }

    /// The call whose rejection asked for a refresh hears it start and end, also when the refresh waited for one that
    /// setCredential superseded, and the call did not wait (its last attempt).
    func testTheCallWhoseRejectionStartsADeferredRefreshHearsIt() throws {
        // Given: one attempt per call; a first rejection's refresh, superseded by setCredential
        let fake = FakeTransport.answering(.status(401))
        let stub = RefreshStub()
        let events = Recorder<String>()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = Connect(
            transport: fake, middlewares: [auth], retryPolicy: RetryPolicy(maxAttempts: 1),
            settings: Connect.Settings(observers: [RefreshEvents(events: events)]))
        _ = connect.request(Endpoint(endpoint: "/first"))
        auth.setCredential(Self.new)
        // When: the credential set is rejected too, and its refresh starts once the superseded one ends
        let second = connect.request(Endpoint(endpoint: "/second"))
        XCTAssertEqual(connectError(of: second)?.statusCode, 401)
        stub.promise(0).succeed(.bearer(token: "LATESECRET3"))
        XCTAssertEqual(stub.callCount, 2)
        stub.promise(1).succeed(.bearer(token: "RENEWEDSECRET4"))
        // Then
        XCTAssertEqual(
            events.values,
            [
                "/first refresh started", "/first refresh ended false", "/second refresh started",
                "/second refresh ended true",
            ])
    }

    /// A refresh whose result setCredential made moot tells its call it gave no credential, even when its future
    /// succeeds.
    func testARefreshSupersededBySetCredentialEndsAsNotSucceededForItsCall() throws {
        // Given: a rejection's refresh running, and the app setting a credential meanwhile, which the server accepts
        let fake = FakeTransport.answering(Self.accepting(only: Self.new))
        let stub = RefreshStub()
        let events = Recorder<String>()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = Connect(
            transport: fake, middlewares: [auth], retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            settings: Connect.Settings(observers: [RefreshEvents(events: events)]))
        let call = connect.request(Endpoint(endpoint: "/call"))
        XCTAssertEqual(stub.callCount, 1)
        auth.setCredential(Self.new)
        XCTAssertNotNil(value(of: call))
        // When: the superseded refresh's future succeeds late
        stub.promise().succeed(.bearer(token: "LATESECRET3"))
        // Then: its token is not used, and the call's observers hear that the refresh gave none
        XCTAssertEqual(auth.credential, Self.new)
        XCTAssertEqual(events.values, ["/call refresh started", "/call refresh ended false"])
    }

    /// A refresh that hands its token to setCredential itself (a token store that pushes every new token to the
    /// middleware) and returns it too gave the credential in use: it ended as succeeded.
    func testARefreshThatSetsItsOwnTokenBeforeReturningItEndsAsSucceeded() throws {
        // Given: a refresh closure that sets the renewed token on the middleware, then returns it
        let fake = FakeTransport.answering(Self.accepting(only: Self.new))
        let events = Recorder<String>()
        let middleware = Recorder<AuthenticationMiddleware>()
        let auth = AuthenticationMiddleware(credential: Self.old) { _ in
            middleware.values.first?.setCredential(Self.new)
            return Future(value: Self.new)
        }
        middleware.append(auth)
        let connect = Connect(
            transport: fake, middlewares: [auth], retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            settings: Connect.Settings(observers: [RefreshEvents(events: events)]))
        // When
        XCTAssertNotNil(value(of: connect.request(Endpoint(endpoint: "/call"))))
        // Then
        XCTAssertEqual(auth.credential, Self.new)
        XCTAssertEqual(events.values, ["/call refresh started", "/call refresh ended true"])
    }

    /// A refresh that waited for a superseded one is called on the thread that completed that one's future.
    func testARefreshThatWaitedForASupersededOneIsCalledWhereThatOneEnded() throws {
        // Given: a refresh superseded by setCredential, and a rejection of the credential set
        let fake = FakeTransport.answering(.status(401))
        let promises = Recorder<Promise<AuthorizationToken>>()
        let labels = Recorder<String?>()
        let key = DispatchSpecificKey<String>()
        let auth = AuthenticationMiddleware(credential: Self.old) { _ in
            labels.append(DispatchQueue.getSpecific(key: key))
            let promise = Promise<AuthorizationToken>()
            promises.append(promise)
            return promise.future
        }
        let connect = Connect(transport: fake, middlewares: [auth], retryPolicy: RetryPolicy(maxAttempts: 1))
        _ = connect.request(Endpoint(endpoint: "/first"))
        auth.setCredential(Self.new)
        _ = connect.request(Endpoint(endpoint: "/second"))
        XCTAssertEqual(promises.values.count, 1)
        // When: the superseded refresh ends on a queue of its own
        let queue = DispatchQueue(label: "superseded-refresh-ends-here")
        queue.setSpecific(key: key, value: "superseded-refresh-ends-here")
        queue.sync { _ = promises.values[0].succeed(.bearer(token: "LATESECRET3")) }
        // Then
        XCTAssertEqual(labels.values, [nil, "superseded-refresh-ends-here"])
        XCTAssertEqual(promises.values.count, 2)
    }

    func testARejectedUploadOfItsOwnOneShotBodyDoesNotWaitForARefreshItCannotBeReplayedWith() throws {
        // Given: a request whose own body is a one-shot stream (an OpenAPI upload), which the retry loop cannot send
        // again, and a refresh that has not ended
        let fake = FakeTransport.answering(.status(401))
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = Connect(
            transport: fake, middlewares: [auth], retryPolicy: RetryPolicy(clock: ImmediateRetryClock()))
        let request = ConnectRequest.oneShotUpload()
        // When: it is rejected
        let call = connect.response(for: request)
        // Then: its rejection is its answer before the refresh it started ends; nothing was sent twice
        XCTAssertEqual(connectError(of: call)?.statusCode, 401)
        XCTAssertEqual(stub.callCount, 1)
        XCTAssertFalse(stub.promise().future.isCompleted)
        stub.promise().succeed(Self.new)
        XCTAssertEqual(fake.requests.count, 1)
        XCTAssertEqual(auth.credential, Self.new)
    }

    // MARK: - Coalescing

    func testIdenticalRejectedRequestsSharingOneCallRefreshOnceAndBothSucceed() throws {
        // Given: two identical GETs sharing one call, rejected together
        let gate = Promise<Void>()
        let fake = FakeTransport(fallback: Self.accepting(only: Self.new).released(by: gate.future))
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = Connect(
            transport: fake, middlewares: [auth], retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            settings: Connect.Settings(coalescesIdenticalRequests: true))
        let a = connect.request(Endpoint())
        let b = connect.request(Endpoint())
        XCTAssertEqual(fake.requests.count, 1)
        gate.succeed(())
        // When
        XCTAssertEqual(stub.callCount, 1)
        stub.promise().succeed(Self.new)
        // Then
        XCTAssertNotNil(value(of: a))
        XCTAssertNotNil(value(of: b))
        XCTAssertEqual(authorization(fake.requests).filter { $0 == "Bearer OLDSECRET1" }.count, 1)
        XCTAssertEqual(stub.callCount, 1)
    }

    // MARK: - The cache

    func testARejectionAndARetriedServerErrorAreNotCachedAndTheReplaysAnswerIs() throws {
        // Given: a cached route answered 401 with the old token, then 503 and 200 with the new
        let answers = Protected([503])
        let fake = FakeTransport.answering(
            .handler { request in
                let isNew = request.value(forHTTPHeaderField: "Authorization") == "Bearer NEWSECRET2"
                let status = isNew ? (answers.withLock { $0.isEmpty ? nil : $0.removeFirst() } ?? 200) : 401
                return .success(ConnectResponse(request: request, statusCode: status, data: Data("{}".utf8))!)
            })
        let auth = AuthenticationMiddleware(credential: Self.old) { _ in Future(value: Self.new) }
        let connect = Connect(
            transport: fake, middlewares: [auth],
            retryPolicy: RetryPolicy(maxAttempts: 4, clock: ImmediateRetryClock()), responseCache: ResponseCache())
        let cached = RequestOptions(cache: CacheRule(timeToLive: 60))
        // When
        XCTAssertNotNil(value(of: connect.request(Endpoint(), options: cached)))
        XCTAssertNotNil(value(of: connect.request(Endpoint(), options: cached)))
        // Then: 401, 503, 200 from the wire; the second call from the cache
        XCTAssertEqual(
            authorization(fake.requests), ["Bearer OLDSECRET1", "Bearer NEWSECRET2", "Bearer NEWSECRET2"])
    }

    // MARK: - Secrets

    /// Every way a value is turned into text.
    private func printed(_ value: Any) -> String {
        var dumped = ""
        dump(value, to: &dumped)
        return [String(describing: value), String(reflecting: value), "\(value)", dumped].joined(separator: "\n")
    }

    func testNoTokenShowsInTheMiddlewareTheClientOrTheErrorsPrinted() throws {
        // Given: a refresh in flight with a rejected request and an unsent one waiting for it
        let transport = ManualTransport()
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = Connect(transport: transport, middlewares: [auth], retryPolicy: nil)
        let a = connect.request(Endpoint(endpoint: "/a"))
        transport.respond(to: 0, status: 401, headers: ["WWW-Authenticate": "Bearer error=\"invalid_token\""])
        let b = connect.request(Endpoint(endpoint: "/b"))
        // Then: while waiting
        // (The client is not printed: its transport, the test's, keeps the requests it was given as they are.)
        var shown = printed(auth) + printed(Optional(auth.credential) as Any)
        XCTAssertFalse(shown.contains("SECRET"), shown)
        // And: after the renewed credential is rejected too
        stub.promise().succeed(Self.new)
        transport.respond(to: 1, status: 401)
        transport.respond(to: 2, status: 401)
        let errors = [try XCTUnwrap(connectError(of: a)), try XCTUnwrap(connectError(of: b))]
        shown = printed(auth) + errors.map(printed).joined() + errors.map(\.message).joined()
        XCTAssertFalse(shown.contains("SECRET"), shown)
    }

    /// Prints every event of every call it observes into `lines`.
    private struct PrintingObserver: ConnectObserver, ConnectCallObserver {
        let lines: Recorder<String>
        func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? {
            lines.append(printedCall(call))
            return self
        }
        func record(_ event: ConnectEvent) {
            var dumped = ""
            dump(event, to: &dumped)
            lines.append("\(event)\n\(String(reflecting: event))\n\(dumped)")
        }
        private func printedCall(_ call: ConnectCall) -> String {
            var dumped = ""
            dump(call, to: &dumped)
            return "\(call)\n\(dumped)"
        }
    }

    func testNoTokenShowsInTheDebugLogOrTheObserversEventsOfARefreshedCall() throws {
        // Given: a client that logs requests and responses and tells an observer everything, through a refresh
        // whose renewed token is rejected too, then a call that succeeds with a third token
        let lines = Recorder<String>()
        let fake = FakeTransport.answering(Self.accepting(only: .bearer(token: "THIRDSECRET3")))
        let stub = RefreshStub()
        let auth = AuthenticationMiddleware(credential: Self.old, refresh: stub.refresh)
        let connect = Connect(
            transport: fake, middlewares: [auth], retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
            settings: Connect.Settings(
                logger: RecordingLogger(lines: lines), observers: [PrintingObserver(lines: lines)]))
        // When
        let rejected = connect.request(Endpoint(), debugResponse: true)
        stub.promise().succeed(Self.new)
        let error = try XCTUnwrap(connectError(of: rejected))
        auth.setCredential(.bearer(token: "THIRDSECRET3"))
        XCTAssertNotNil(value(of: connect.request(Endpoint(), debugResponse: true)))
        // Then
        XCTAssertEqual(error.kind, .authenticationFailed)
        XCTAssertGreaterThan(lines.values.count, 4)
        let shown = lines.values.joined(separator: "\n")
        XCTAssertTrue(shown.contains("api.example.com"), shown)
        XCTAssertTrue(shown.contains("Authorization: <redacted>"), "the signed requests were printed")
        XCTAssertTrue(shown.contains("tokenRefreshEnded"), shown)
        XCTAssertFalse(shown.contains("SECRET"), shown)
    }
}
