import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `Connect(settings: Connect.Settings(coalescesIdenticalRequests: true))`: identical GETs in flight share one transport call.
final class RequestCoalescerTests: XCTestCase {
    typealias Todo = ClientFixtures.Todo
    typealias Endpoint = ClientFixtures.Endpoint

    /// A fake transport answering `/items` with a todo once the returned gate opens.
    private func gatedTransport() -> (FakeTransport, Promise<Void>) {
        let gate = Promise<Void>()
        let transport = FakeTransport()
        transport.stub("/items", with: FakeResponse.json(Todo.sample).released(by: gate.future))
        return (transport, gate)
    }

    private func coalescing(_ transport: any Transport) -> Connect {
        Connect(transport: transport, retryPolicy: nil, settings: Connect.Settings(coalescesIdenticalRequests: true))
    }

    // MARK: - Sharing

    func testIdenticalGetsInFlightShareOneTransportCall() {
        // Given
        let (transport, gate) = gatedTransport()
        let connect = coalescing(transport)
        // When
        let todos = (0..<5).map { _ in connect.request(Endpoint()).decoded(toType: Todo.self) }
        gate.succeed(())
        // Then
        XCTAssertEqual(transport.requests.count, 1)
        for todo in todos { XCTAssertEqual(value(of: todo), Todo.sample) }
    }

    /// A request joins only a call that began within the last tenth of its timeout: the shared exchange's deadline
    /// runs from then, and a caller joining 0.8 s into a 1 s call timed out after 0.2 s.
    func testARequestLaterThanATenthOfItsTimeoutGoesAlone() {
        let (transport, gate) = gatedTransport()
        // The client's coalescer, timed by a clock the test moves (the built-in stage is last in the chain, as here).
        let clock = Guarded<UInt64>(1_000_000_000)
        let connect = Connect(
            transport: transport, middlewares: [RequestCoalescer(now: { clock.withLock { $0 } })], retryPolicy: nil)
        let first = connect.request(Endpoint(timeout: 1))
        clock.withLock { $0 += 100_000_000 }  // a tenth of the timeout: still in time
        let joining = connect.request(Endpoint(timeout: 1))
        clock.withLock { $0 += 1 }  // past it
        let late = connect.request(Endpoint(timeout: 1))
        XCTAssertEqual(transport.requests.count, 2, "the second request joined, the third made a call of its own")
        gate.succeed(())
        XCTAssertNotNil(value(of: first))
        XCTAssertNotNil(value(of: joining))
        XCTAssertNotNil(value(of: late))
    }

    /// A call that joins a shared request already at the transport just as its answer arrives (the answer comes
    /// between its joining and its observers being told it started) still hears its attempt start, then end with the
    /// answer: not its call's end alone, which a tracer takes for a call that sent nothing.
    func testACallJoiningAsTheAnswerArrivesIsToldItsAttempt() {
        // Given: a coalescer that lets the answer in right after a caller joins a request at the transport
        let observer = ConnectObserverTests.PerCallObserver()
        let transport = ManualTransport()
        let answerNow = Guarded(false)
        let coalescer = RequestCoalescer(joinedAtDoor: {
            guard answerNow.withLock({ $0 }) else { return }
            transport.respond(to: 0, body: Data(#"{"id":1,"title":"a"}"#.utf8))
        })
        let connect = Connect(
            transport: transport, middlewares: [coalescer], retryPolicy: nil,
            settings: Connect.Settings(observers: [observer]))
        let first = connect.request(Endpoint())
        XCTAssertEqual(transport.requests.count, 1)
        // When
        answerNow.withLock { $0 = true }
        let joined = connect.request(Endpoint())
        // Then
        XCTAssertNotNil(value(of: first))
        XCTAssertNotNil(value(of: joined))
        XCTAssertEqual(transport.requests.count, 1, "the second call shared the first one's request")
        XCTAssertEqual(observer.events(ofCall: 1), ["start 1 - shared", "end 1 200", "call 200 after 1"])
    }

    func testIdenticalHeadRequestsShareOneTransportCall() {
        // Given
        let (transport, gate) = gatedTransport()
        let connect = coalescing(transport)
        // When
        let futures = (0..<3).map { _ in connect.response(for: Endpoint(method: .head)) }
        gate.succeed(())
        // Then
        XCTAssertEqual(transport.requests.count, 1)
        for future in futures { XCTAssertEqual(value(of: future)?.statusCode, 200) }
    }

    func testHeaderOrderAndNameCaseDoNotMatter() {
        // Given
        let (transport, gate) = gatedTransport()
        let connect = coalescing(transport)
        // When
        let first = connect.request(
            Endpoint(headers: [HTTPHeader(name: "X-A", value: "1"), HTTPHeader(name: "X-B", value: "2")]))
        let second = connect.request(
            Endpoint(headers: [HTTPHeader(name: "x-b", value: "2"), HTTPHeader(name: "x-a", value: "1")]))
        gate.succeed(())
        // Then
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertNotNil(value(of: first))
        XCTAssertNotNil(value(of: second))
    }

    /// The blanks around a value are not sent (the door trims them): requests the wire sends alike share a call.
    func testValuesThatDifferOnlyInBlanksAroundThemShareOneCall() {
        // Given
        let (transport, gate) = gatedTransport()
        let connect = coalescing(transport)
        // When
        let plain = connect.request(Endpoint(headers: [HTTPHeader(name: "Accept", value: "text/csv")]))
        let padded = connect.request(Endpoint(headers: [HTTPHeader(name: "Accept", value: " text/csv\t")]))
        gate.succeed(())
        // Then
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(transport.requests.first?.value(forHTTPHeaderField: "Accept"), "text/csv")
        XCTAssertNotNil(value(of: plain))
        XCTAssertNotNil(value(of: padded))
    }

    /// Fields of one name are one list, in order (RFC 9110 §5.3): the same values in another order are another request.
    func testRepeatedFieldsInAnotherOrderMakeSeparateCalls() {
        // Given
        let (transport, gate) = gatedTransport()
        let connect = coalescing(transport)
        func tagged(_ tags: [String]) -> RequestOptions {
            RequestOptions(middlewares: [AnyMiddleware.adapter { $0.headerFields[values: "X-Tag"] = tags }])
        }
        // When
        let first = connect.request(Endpoint(), options: tagged(["1", "2"]))
        let second = connect.request(Endpoint(), options: tagged(["2", "1"]))
        gate.succeed(())
        // Then
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(
            Set(transport.requests.compactMap { $0.value(forHTTPHeaderField: "X-Tag") }), ["1, 2", "2, 1"])
        XCTAssertNotNil(value(of: first))
        XCTAssertNotNil(value(of: second))
    }

    func testDifferentHeadersOrURLsMakeSeparateCalls() {
        // Given
        let (transport, gate) = gatedTransport()
        let connect = coalescing(transport)
        // When
        let alice = connect.request(Endpoint(headers: [.authorization(bearerToken: "alice")]))
        let bob = connect.request(Endpoint(headers: [.authorization(bearerToken: "bob")]))
        let anonymous = connect.request(Endpoint())
        let other = connect.request(Endpoint(parameters: Parameter.query(key: "page", value: "2")))
        gate.succeed(())
        // Then
        XCTAssertEqual(transport.requests.count, 4)
        XCTAssertEqual(
            Set(transport.requests.compactMap { $0.value(forHTTPHeaderField: "Authorization") }),
            ["Bearer alice", "Bearer bob"]
        )
        for future in [alice, bob, anonymous, other] { XCTAssertNotNil(value(of: future)) }
    }

    /// The fragment is never sent (RFC 9110 §4.2.5): requests that differ only there ask for one resource and share
    /// one call, each answered as the answer to its own request, its URL naming its own fragment.
    func testRequestsThatDifferOnlyInTheirFragmentShareOneCall() throws {
        // Given
        let (transport, gate) = gatedTransport()
        let connect = coalescing(transport)
        let url = try XCTUnwrap(URL(string: "https://api.example.com/items"))
        // When
        let futures = ["#a", "#b", ""].map { suffix in
            connect.response(for: ConnectRequest(url: URL(string: url.absoluteString + suffix) ?? url))
        }
        gate.succeed(())
        // Then
        XCTAssertEqual(transport.requests.count, 1)
        for (future, fragment) in zip(futures, ["a", "b", nil]) {
            let response = try future.wait(timeout: 5)
            XCTAssertEqual(response.sentRequest.url.fragment, fragment)
            XCTAssertEqual(response.response.url?.fragment, fragment)
            XCTAssertEqual(response.response.url?.path, "/items")
        }
    }

    func testPostIsNeverCoalesced() {
        // Given
        let (transport, gate) = gatedTransport()
        let connect = coalescing(transport)
        // When
        let futures = (0..<3).map { _ in connect.request(Endpoint(method: .post)) }
        gate.succeed(())
        // Then
        XCTAssertEqual(transport.requests.count, 3)
        for future in futures { XCTAssertNotNil(value(of: future)) }
    }

    func testWithoutCoalescingIdenticalGetsAreSentSeparately() {
        // Given
        let (transport, gate) = gatedTransport()
        let connect = Connect(transport: transport, retryPolicy: nil)
        // When
        let futures = (0..<3).map { _ in connect.request(Endpoint()) }
        gate.succeed(())
        // Then
        XCTAssertEqual(transport.requests.count, 3)
        for future in futures { XCTAssertNotNil(value(of: future)) }
    }

    func testACompletedCallIsForgotten() {
        // Given
        let transport = FakeTransport.answering(.json(Todo.sample))
        let connect = coalescing(transport)
        XCTAssertNotNil(value(of: connect.request(Endpoint())))
        // When
        let again = connect.request(Endpoint())
        // Then
        XCTAssertNotNil(value(of: again))
        XCTAssertEqual(transport.requests.count, 2)
    }

    func testAnIdenticalRequestFromACompletionCallbackMakesANewCall() {
        // Given
        let (transport, gate) = gatedTransport()
        let connect = coalescing(transport)
        let second = Recorder<Future<Data>>()
        connect.request(Endpoint()).observe { _ in second.append(connect.request(Endpoint())) }
        // When
        gate.succeed(())
        // Then
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertNotNil(second.values.first.flatMap { value(of: $0) })
    }

    func testFailuresAreSharedToo() {
        // Given
        let transport = ManualTransport()
        let connect = coalescing(transport)
        let futures = (0..<3).map { _ in connect.request(Endpoint()) }
        // When
        transport.respond(to: 0, status: 500)
        // Then
        XCTAssertEqual(transport.requests.count, 1)
        for future in futures { XCTAssertEqual(connectError(of: future)?.statusCode, 500) }
    }

    /// The client's `AuthenticationMiddleware` signs requests after this stage: a request made after the user
    /// changed must not share the previous user's call in flight.
    func testARequestSignedWithAnotherCredentialDoesNotShareTheCallInFlight() {
        // Given: alice's request in flight
        let transport = ManualTransport()
        let auth = AuthenticationMiddleware(credential: .bearer(token: "alice")) { _ in
            Future(error: URLError(.userAuthenticationRequired))
        }
        let connect = Connect(
            transport: transport, middlewares: [auth], retryPolicy: nil,
            settings: Connect.Settings(coalescesIdenticalRequests: true))
        let alice = connect.request(Endpoint())
        let aliceAgain = connect.request(Endpoint())
        // When: bob signs in and asks for the same resource
        auth.setCredential(.bearer(token: "bob"))
        let bob = connect.request(Endpoint())
        // Then: bob's request goes out on its own, signed as bob, and gets his answer
        XCTAssertEqual(
            transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") }, ["Bearer alice", "Bearer bob"])
        guard transport.requests.count == 2 else { return }
        transport.respond(to: 0, body: Data("alice".utf8))
        transport.respond(to: 1, body: Data("bob".utf8))
        XCTAssertEqual(value(of: alice), Data("alice".utf8))
        XCTAssertEqual(value(of: aliceAgain), Data("alice".utf8))
        XCTAssertEqual(value(of: bob), Data("bob".utf8))
    }

    /// Two users' cookies, or credentials in the URL, make two calls: neither gets the other's answer.
    func testRequestsWithOtherCookiesOrURLCredentialsMakeSeparateCalls() {
        // Given
        let transport = ManualTransport()
        let connect = coalescing(transport)
        var alice = Endpoint()
        alice.headers = [HTTPHeader(name: "Cookie", value: "session=alice")]
        var bob = Endpoint()
        bob.headers = [HTTPHeader(name: "Cookie", value: "session=bob")]
        var aliceInURL = Endpoint()
        aliceInURL.baseURL = URL(string: "https://alice:pw@api.example.com")!
        var bobInURL = Endpoint()
        bobInURL.baseURL = URL(string: "https://bob:pw@api.example.com")!
        // When
        let futures = [alice, bob, aliceInURL, bobInURL].map { connect.request($0) }
        // Then
        XCTAssertEqual(transport.requests.count, 4)
        for index in 0..<4 { transport.respond(to: index, body: Data("\(index)".utf8)) }
        for (index, future) in futures.enumerated() { XCTAssertEqual(value(of: future), Data("\(index)".utf8)) }
    }

    func testACredentialOfAnAuthenticationMiddlewareInTheClientsOptionsCountsToo() {
        // Given: alice's request in flight, signed by an AuthenticationMiddleware of the client's options
        let transport = ManualTransport()
        let auth = AuthenticationMiddleware(credential: .bearer(token: "alice")) { _ in
            Future(error: URLError(.userAuthenticationRequired))
        }
        let connect = Connect(
            transport: transport, retryPolicy: nil,
            settings: Connect.Settings(coalescesIdenticalRequests: true, options: RequestOptions(middlewares: [auth])))
        _ = connect.request(Endpoint())
        // When
        auth.setCredential(.bearer(token: "bob"))
        _ = connect.request(Endpoint())
        // Then
        XCTAssertEqual(
            transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") }, ["Bearer alice", "Bearer bob"])
    }

    /// A request's timeout and cache policy are its own: a request with another one does not wait on, or fail
    /// with, a call made with different ones.
    /// Requests whose fields differ are not identical, however their names and values read joined: a field named
    /// `X-A:b` (no valid name: a middleware's slip, refused before the wire) with the value `c` is not `X-A: b:c`.
    /// They shared one key, and the invalid request got the valid one's answer instead of its refusal.
    func testAFieldWhoseNameHoldsAColonIsNotAnotherFieldWithThatColonInItsValue() {
        // Given: a valid request at the transport
        let transport = ManualTransport()
        let connect = coalescing(transport)
        let valid = connect.request(Endpoint(headers: [HTTPHeader(name: "X-A", value: "b:c")]))
        XCTAssertEqual(transport.requests.count, 1)
        // When: a call whose middleware sets a field named `X-A:b`
        let slip = AnyMiddleware.adapter { $0.headerFields[HeaderField.Name("X-A:b")] = "c" }
        let invalid = connect.request(Endpoint(), options: RequestOptions(middlewares: [slip]))
        transport.respond(to: 0, body: Data("shared".utf8))
        // Then
        XCTAssertEqual(value(of: valid), Data("shared".utf8))
        XCTAssertEqual(connectError(of: invalid)?.kind, .invalidRequest)
        XCTAssertEqual(transport.requests.count, 1)
    }

    /// A request whose timeout a middleware set to NaN (the build refuses one a connector gives) goes as it would
    /// without coalescing. Its key, NaN in it, equalled no key, not even its own: the shared call it made was never
    /// found again, so it was taken for ended at the transport's door and never sent, and its caller waited for ever.
    func testARequestWhoseTimeoutIsNotANumberGoesAlone() {
        // Given
        let transport = ManualTransport()
        let connect = coalescing(transport)
        let slip = AnyMiddleware.adapter { $0.timeoutInterval = .nan }
        // When
        let call = connect.request(Endpoint(), options: RequestOptions(middlewares: [slip]))
        // Then
        XCTAssertTrue(transport.wait(forRequests: 1, timeout: 5), "sent")
        if transport.requests.count == 1 { transport.respond(to: 0, body: Data("x".utf8)) }
        XCTAssertEqual(value(of: call), Data("x".utf8))
    }

    func testRequestsWithAnotherTimeoutOrCachePolicyMakeSeparateCalls() {
        struct Items: Connector {
            var timeout: TimeInterval
            var cachePolicy: URLRequest.CachePolicy = .useProtocolCachePolicy
            var baseURL: URL { URL(string: "https://api.example.com")! }
            var endpoint: String { "/items" }
            var method: HTTPMethod { .get }
            var headers: [HTTPHeader] { [] }
            var parameters: (any ParametersRepresentable)? { nil }
        }
        // Given
        let transport = ManualTransport()
        let connect = coalescing(transport)
        // When
        _ = connect.request(Items(timeout: 300))
        _ = connect.request(Items(timeout: 5))
        _ = connect.request(Items(timeout: 5, cachePolicy: .reloadIgnoringLocalCacheData))
        // Then
        XCTAssertEqual(transport.requests.map(\.timeoutInterval), [300, 5, 5])
        XCTAssertEqual(transport.requests.last?.cachePolicy, .reloadIgnoringLocalCacheData)
    }

    /// Requests made from `URLRequest`s that differ only in what the model does not carry (here cookies) went as one:
    /// the caller that opted out of cookies got the answer to the request that sent them, or the other way round.
    func testRequestsMadeFromURLRequestsWithOtherSettingsMakeSeparateCalls() throws {
        // Given
        let transport = ManualTransport()
        let connect = coalescing(transport)
        var withCookies = URLRequest(url: URL(string: "https://api.example.com/items")!)
        withCookies.httpShouldHandleCookies = true
        var withoutCookies = withCookies
        withoutCookies.httpShouldHandleCookies = false
        // When
        _ = connect.response(for: try ConnectRequest(withCookies))
        _ = connect.response(for: try ConnectRequest(withoutCookies))
        _ = connect.response(for: try ConnectRequest(withCookies))
        // Then: the third joins the first; a request made from a plain URLRequest joins one made without any
        XCTAssertEqual(transport.requests.map(\.httpShouldHandleCookies), [true, false])
        _ = connect.response(for: ConnectRequest(url: URL(string: "https://api.example.com/items")!))
        XCTAssertEqual(transport.requests.count, 2)
    }

    /// A request's redirect limit (`RequestOptions.maxRedirects`) is its own: one that takes a redirect as its answer
    /// (`0`) joined a call that follows it, or the other way round, and got the other's answer.
    func testRequestsWithAnotherRedirectLimitMakeSeparateCalls() {
        // Given
        let transport = ManualTransport()
        let connect = coalescing(transport)
        var none = RequestOptions()
        none.maxRedirects = 0
        var two = RequestOptions()
        two.maxRedirects = 2
        // When
        _ = connect.request(Endpoint())
        _ = connect.request(Endpoint(), options: none)
        _ = connect.request(Endpoint(), options: two)
        _ = connect.request(Endpoint(), options: none)
        _ = connect.request(Endpoint())
        // Then: one call per limit, the last two joining the calls of their own limit
        XCTAssertEqual(transport.requests.count, 3)
    }

    /// A request's idle timeout (`RequestOptions.idleTimeout`) is its own: one that asked to fail after 5 s of quiet
    /// would wait in a call that waits a minute, or one that asked for none be failed by another's.
    func testRequestsWithAnotherIdleTimeoutMakeSeparateCalls() {
        // Given
        let transport = ManualTransport()
        let connect = coalescing(transport)
        let short = RequestOptions(idleTimeout: 5)
        let long = RequestOptions(idleTimeout: 60)
        // When
        _ = connect.request(Endpoint())
        _ = connect.request(Endpoint(), options: short)
        _ = connect.request(Endpoint(), options: long)
        _ = connect.request(Endpoint(), options: short)
        _ = connect.request(Endpoint())
        // Then: one call per idle timeout, the last two joining the calls of their own
        XCTAssertEqual(transport.requests.count, 3)
    }

    /// A request that must go whatever the connectivity does not wait in a call that may be held for the network.
    func testARequestThatIgnoresConnectivityGoesAlone() {
        // Given
        let transport = ManualTransport()
        let connect = coalescing(transport)
        // When
        _ = connect.request(Endpoint())
        _ = connect.request(Endpoint(), options: RequestOptions(connectivity: .ignore))
        // Then
        XCTAssertEqual(transport.requests.count, 2)
    }

    // MARK: - Events

    /// A transport that answers as ``ManualTransport`` does and, when asked, tells a request's observers that it
    /// followed a redirect (as the core's exchange tells them of each hop it follows).
    private final class RedirectingTransport: Transport {
        let manual = ManualTransport()
        private let transfers = Guarded<[TransferOptions]>([])

        func send(_ request: URLRequest) -> Future<ConnectResponse> { manual.send(request) }

        func send(_ request: ConnectRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
            transfers.withLock { $0.append(transfer) }
            return manual.send(request.urlRequest)
        }

        /// The observers request number `index` carries.
        func observation(of index: Int) -> CallObservation? {
            transfers.withLock { $0[index].observation }
        }

        /// Follows a redirect of request number `index` to `/new`, as its observers hear it.
        func redirect(_ index: Int) {
            let transfer = transfers.withLock { $0[index] }
            transfer.observation?.record(
                .redirected(status: 302, location: URL(string: "https://api.example.com/new")!))
        }
    }

    /// A call that joins a shared request hears the redirects it follows, as the call whose request it is does, and
    /// as it would alone: its attempt went to `/new` too. Before, only that first call heard them, and a joined call
    /// was told nothing when the first had no observers or had left.
    func testACallThatJoinsASharedRequestHearsItsRedirects() {
        // Given: an observer of every call but the first, whose request two more calls share
        final class SkippingTheFirst: ConnectObserver {
            let calls = ConnectObserverTests.PerCallObserver()
            private let seen = Guarded(0)
            func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? {
                let index = seen.withLock { seen -> Int in
                    seen += 1
                    return seen
                }
                return index == 1 ? nil : calls.observe(call)
            }
        }
        let observer = SkippingTheFirst()
        let transport = RedirectingTransport()
        let connect = Connect(
            transport: transport, retryPolicy: nil,
            settings: Connect.Settings(coalescesIdenticalRequests: true, observers: [observer]))
        let first = connect.request(Endpoint())
        let joined = connect.request(Endpoint())
        let leaving = connect.request(Endpoint())
        XCTAssertEqual(transport.manual.requests.count, 1)
        leaving.cancel()
        // When
        transport.redirect(0)
        transport.manual.respond(to: 0, body: Data("{}".utf8))
        // Then
        XCTAssertNotNil(value(of: first))
        XCTAssertNotNil(value(of: joined))
        XCTAssertEqual(
            observer.calls.events(ofCall: 0),
            ["start 1 - shared", "redirect 302 /new", "end 1 200", "call 200 after 1"])
        XCTAssertEqual(
            observer.calls.events(ofCall: 1), ["start 1 - shared", "call cancelled after 1", "end 1 cancelled"],
            "a call that left hears no more of the shared request")
    }

    /// The call whose request is shared hears its redirects once, and so does a call that joined it, also after the
    /// first has left.
    func testACallThatJoinsHearsTheRedirectsAfterTheFirstLeft() {
        // Given
        let observer = ConnectObserverTests.PerCallObserver()
        let transport = RedirectingTransport()
        let connect = Connect(
            transport: transport, retryPolicy: nil,
            settings: Connect.Settings(coalescesIdenticalRequests: true, observers: [observer]))
        let first = connect.request(Endpoint())
        let joined = connect.request(Endpoint())
        // When: a redirect, the first call leaves, another redirect
        transport.redirect(0)
        first.cancel()
        transport.redirect(0)
        transport.manual.respond(to: 0, body: Data("{}".utf8))
        // Then
        XCTAssertNotNil(value(of: joined))
        XCTAssertEqual(
            observer.events(ofCall: 0), ["start 1 -", "redirect 302 /new", "call cancelled after 1", "end 1 cancelled"])
        XCTAssertEqual(
            observer.events(ofCall: 1),
            ["start 1 - shared", "redirect 302 /new", "redirect 302 /new", "end 1 200", "call 200 after 1"])
    }

    /// A client without observers makes no event: the request its calls share carries no observers to relay to the
    /// calls that join it.
    func testASharedRequestOfAClientWithoutObserversCarriesNone() {
        let transport = RedirectingTransport()
        let connect = Connect(
            transport: transport, retryPolicy: nil, settings: Connect.Settings(coalescesIdenticalRequests: true))
        let first = connect.request(Endpoint())
        let joined = connect.request(Endpoint())
        XCTAssertEqual(transport.manual.requests.count, 1)
        XCTAssertNil(transport.observation(of: 0))
        transport.manual.respond(to: 0, body: Data("{}".utf8))
        XCTAssertNotNil(value(of: first))
        XCTAssertNotNil(value(of: joined))
    }

    /// A call that joins a shared request after it followed a redirect hears that redirect too, after its start and
    /// before its end: its answer comes from where the redirect led, as it would have alone.
    func testACallThatJoinsAfterARedirectHearsIt() {
        // Given: a shared request at the transport that followed a redirect
        let observer = ConnectObserverTests.PerCallObserver()
        let transport = RedirectingTransport()
        let connect = Connect(
            transport: transport, retryPolicy: nil,
            settings: Connect.Settings(coalescesIdenticalRequests: true, observers: [observer]))
        let first = connect.request(Endpoint())
        transport.redirect(0)
        // When
        let joined = connect.request(Endpoint())
        transport.redirect(0)
        transport.manual.respond(to: 0, body: Data("{}".utf8))
        // Then
        XCTAssertNotNil(value(of: first))
        XCTAssertNotNil(value(of: joined))
        XCTAssertEqual(transport.manual.requests.count, 1)
        let heard = ["start 1 -", "redirect 302 /new", "redirect 302 /new", "end 1 200", "call 200 after 1"]
        XCTAssertEqual(observer.events(ofCall: 0), heard)
        XCTAssertEqual(observer.events(ofCall: 1), ["start 1 - shared"] + heard.dropFirst())
    }

    // MARK: - Cancellation

    func testCancellingOneCallerLeavesTheOthersTheSharedResult() {
        // Given
        let transport = ManualTransport()
        let connect = coalescing(transport)
        let futures = (0..<3).map { _ in connect.request(Endpoint()) }
        XCTAssertEqual(transport.requests.count, 1)
        // When
        futures[0].cancel()
        transport.respond(to: 0, body: Data("shared".utf8))
        // Then
        XCTAssertEqual(connectError(of: futures[0])?.kind, .cancelled)
        XCTAssertEqual(value(of: futures[1]), Data("shared".utf8))
        XCTAssertEqual(value(of: futures[2]), Data("shared".utf8))
        XCTAssertEqual(transport.cancellations.value, 0, "the shared call is not cancelled")
    }

    func testCancellingEveryCallerCancelsTheSharedCall() {
        // Given
        let transport = ManualTransport()
        let connect = coalescing(transport)
        let futures = (0..<3).map { _ in connect.request(Endpoint()) }
        // When
        futures[0].cancel()
        futures[2].cancel()
        XCTAssertEqual(transport.cancellations.value, 0)
        futures[1].cancel()
        // Then
        XCTAssertEqual(transport.cancellations.value, 1)
        XCTAssertEqual(transport.futures.first?.isCancelled, true)
        for future in futures { XCTAssertEqual(connectError(of: future)?.kind, .cancelled) }
    }

    func testARequestAfterEveryCallerCancelledMakesANewCall() {
        // Given
        let transport = ManualTransport()
        let connect = coalescing(transport)
        connect.request(Endpoint()).cancel()
        // When
        let fresh = connect.request(Endpoint())
        transport.respond(to: 1)
        // Then
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertNotNil(value(of: fresh))
    }

    /// A client that coalesces identical requests, sending them through a queue of one slot.
    private func coalescingBehindOneSlot(_ transport: some Transport) -> (Connect, RequestQueue) {
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let connect = Connect(
            transport: transport, retryPolicy: nil, requestQueue: queue,
            settings: Connect.Settings(coalescesIdenticalRequests: true))
        return (connect, queue)
    }

    /// A caller that leaves while the shared request waits in the queue leaves it to the others: it keeps its place,
    /// is sent when a slot frees, and answers the callers that stayed.
    func testACallerLeavingASharedRequestThatWaitsInTheQueueLeavesItToTheOthers() {
        // Given: one slot, taken; two identical calls sharing one request that waits for it
        let transport = ManualTransport()
        let (connect, queue) = coalescingBehindOneSlot(transport)
        let blocker = connect.request(Endpoint(endpoint: "/blocker"))
        let first = connect.request(Endpoint())
        let second = connect.request(Endpoint())
        XCTAssertEqual(queue.pendingCount, 1)
        // When: the first caller leaves, then the slot frees
        first.cancel()
        XCTAssertEqual(queue.pendingCount, 1, "the shared request still waits for the other caller")
        transport.respond(to: 0)
        // Then
        XCTAssertEqual(transport.requests.map(\.url?.path), ["/blocker", "/items"])
        transport.respond(to: 1, body: Data("shared".utf8))
        XCTAssertNotNil(value(of: blocker))
        XCTAssertEqual(connectError(of: first)?.kind, .cancelled)
        XCTAssertEqual(value(of: second), Data("shared".utf8))
        XCTAssertEqual(queue.runningCount, 0)
    }

    /// When every caller of a shared request that waits in the queue has left, it leaves the queue: it is never sent
    /// and takes no slot.
    func testEveryCallerLeavingASharedRequestThatWaitsInTheQueueTakesItOut() {
        // Given
        let transport = ManualTransport()
        let (connect, queue) = coalescingBehindOneSlot(transport)
        let blocker = connect.request(Endpoint(endpoint: "/blocker"))
        let callers = [connect.request(Endpoint()), connect.request(Endpoint())]
        // When
        for caller in callers { caller.cancel() }
        // Then
        XCTAssertEqual(queue.pendingCount, 0)
        transport.respond(to: 0)
        XCTAssertNotNil(value(of: blocker))
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(queue.runningCount, 0)
    }

    /// A transport that answers each request on another thread.
    private final class AnsweringLater: Transport, Sendable {
        let sent = Protected(0)

        func send(_ request: URLRequest) -> Future<ConnectResponse> {
            sent.withLock { $0 += 1 }
            let promise = Promise<ConnectResponse>()
            DispatchQueue.global().async {
                promise.completeIfPending(with: .success(ConnectResponse(request: request, statusCode: 200)!))
            }
            return promise.future
        }
    }

    /// Callers joining and leaving shared requests from many threads, through a queue, while the answers come on
    /// others: every call ends, no slot stays taken, and no ended call is left to join (the next request is sent).
    func testCallersJoiningAndLeavingFromManyThreadsLeaveNoCallBehind() throws {
        // Given
        let transport = AnsweringLater()
        let queue = RequestQueue(maxConcurrentRequests: 2)
        let connect = Connect(
            transport: transport, retryPolicy: nil, requestQueue: queue,
            settings: Connect.Settings(coalescesIdenticalRequests: true))
        let futures = Protected<[Future<Data>]>([])
        // When: a third of the callers leave at once
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for index in 0..<300 {
                let future = connect.request(Endpoint(endpoint: "/items/\(index % 3)"))
                if (index + thread) % 3 == 0 { future.cancel() }
                futures.withLock { $0.append(future) }
            }
        }
        // Then
        for future in futures.withLock({ $0 }) { _ = try future.waitForResult(timeout: 10) }
        XCTAssertEqual(queue.runningCount, 0)
        XCTAssertEqual(queue.pendingCount, 0)
        XCTAssertEqual(connect.requestsInFlight, 0)
        let sent = transport.sent.withLock { $0 }
        XCTAssertNoThrow(try connect.request(Endpoint(endpoint: "/items/0")).wait(timeout: 5))
        XCTAssertEqual(transport.sent.withLock { $0 }, sent + 1)
    }

    func testCoalescingWorksWithARequestQueue() {
        // Given
        let (transport, gate) = gatedTransport()
        let (connect, queue) = coalescingBehindOneSlot(transport)
        // When
        let futures = (0..<4).map { _ in connect.request(Endpoint()) }
        // Then: one shared call, holding one slot
        XCTAssertEqual(queue.runningCount, 1)
        XCTAssertEqual(queue.pendingCount, 0)
        gate.succeed(())
        XCTAssertEqual(transport.requests.count, 1)
        for future in futures { XCTAssertNotNil(value(of: future)) }
    }
}
