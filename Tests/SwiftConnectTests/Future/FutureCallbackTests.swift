import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// A screen as UI code writes it in Swift 6 mode: main-actor state and methods, touched from a future's callback.
@MainActor
private final class TodoScreen {
    private(set) var events: [String] = []

    func show(_ result: Result<String, any Error>) {
        XCTAssertTrue(Thread.isMainThread)
        switch result {
        case .success(let title): events.append("shown \(title)")
        case .failure(let error): events.append("failed \((error as? ConnectError)?.kind.rawValue ?? "\(error)")")
        }
    }

    func note(_ event: String) {
        events.append(event)
    }
}

/// `observeOnMainActor` and the completion-handler forms: callbacks that fit Swift 6 apps and callback code bases.
final class FutureCallbackTests: XCTestCase {
    @MainActor
    func testObserveOnMainActorCallsMainActorCodeWithTheResult() async {
        // Given
        let screen = TodoScreen()
        let promise = Promise<String>()

        // When: completed from another thread
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            promise.future.observeOnMainActor { result in
                screen.show(result)
                done.resume()
            }
            DispatchQueue.global().async { promise.succeed("Milk") }
        }

        // Then
        XCTAssertEqual(screen.events, ["shown Milk"])
    }

    @MainActor
    func testObserveOnMainActorRunsAfterTheCallerEvenWhenAlreadyComplete() async {
        let screen = TodoScreen()

        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Future(value: "Eggs").observeOnMainActor { result in
                screen.show(result)
                done.resume()
            }
            screen.note("caller went on")
        }

        XCTAssertEqual(screen.events, ["caller went on", "shown Eggs"])
    }

    @MainActor
    func testAMainActorCompletionHandlerGetsTheErrorOfARequest() async {
        // Given: a client whose server answers 404
        let transport = FakeTransport()
        transport.stub(.get, "/todos/1", with: .status(404))
        let connect = Connect(transport: transport)
        let screen = TodoScreen()

        // When: a handler as UI code bases declare it, not @Sendable
        let handler: @MainActor (Data?, (any Error)?) -> Void = { data, error in
            XCTAssertNil(data)
            screen.note("error \((error as? ConnectError)?.statusCode ?? 0)")
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            connect.request(Route("/todos/1", baseURL: URL(string: "https://api.test"))).observeOnMainActor {
                data, error in
                handler(data, error)
                done.resume()
            }
        }

        // Then
        XCTAssertEqual(screen.events, ["error 404"])
    }

    func testACompletionHandlerGetsTheValueOrTheErrorOnce() throws {
        // Given
        let succeeded = expectation(description: "value")
        let failed = expectation(description: "error")
        let values = Protected<[String]>([])

        // When
        Future(value: 7).observe { (value: Int?, error: (any Error)?) in
            values.withLock { $0.append("\(value ?? -1) \(error == nil)") }
            succeeded.fulfill()
        }
        Future<Int>(error: ConnectError(.cancelled, message: "stopped")).observe(on: .global()) { value, error in
            values.withLock { $0.append("\(value ?? -1) \((error as? ConnectError)?.kind == .cancelled)") }
            failed.fulfill()
        }

        // Then
        wait(for: [succeeded, failed], timeout: 10)
        XCTAssertEqual(Set(values.snapshot), ["7 true", "-1 true"])
    }

    /// The README-style callback API of a Remotli user: a `@Sendable` completion passed straight through.
    func testACallbackAPIPassesItsCompletionHandlerThrough() {
        let transport = FakeTransport()
        transport.stub(.get, "/users/1", with: .json(["name": "Ada"]))
        let connect = Connect(transport: transport)
        func fetchUser(completion: @escaping @Sendable (Data?, (any Error)?) -> Void) {
            connect.request(Route("/users/1", baseURL: URL(string: "https://api.test"))).observe(completion: completion)
        }
        let done = expectation(description: "completion")

        fetchUser { data, error in
            XCTAssertNil(error)
            XCTAssertEqual(data.map { String(decoding: $0, as: UTF8.self) }, #"{"name":"Ada"}"#)
            done.fulfill()
        }

        wait(for: [done], timeout: 10)
    }
}
