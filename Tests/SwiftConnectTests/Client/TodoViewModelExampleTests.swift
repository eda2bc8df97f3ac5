import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// An app developer's unit tests, written against the public API only: a small Todo API, a view model on the
// main actor that loads and adds todos with async/await, and FakeTransport standing in for the network.

private struct Todo: Codable, Equatable, Sendable {
    var id: Int
    var title: String
    var completed: Bool
}

private struct NewTodo: Codable, Equatable, Sendable {
    var title: String
}

private enum TodoAPI {
    struct List: TypedConnector {
        typealias Response = [Todo]
        var baseURL: URL { URL(string: "https://todos.example.com")! }
        var endpoint: String { "/todos" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: ParametersRepresentable? { nil }
    }

    struct Add: TypedConnector {
        typealias Response = Todo
        let todo: NewTodo
        var baseURL: URL { URL(string: "https://todos.example.com")! }
        var endpoint: String { "/todos" }
        var method: HTTPMethod { .post }
        var headers: [HTTPHeader] { [] }
        var parameters: ParametersRepresentable? { Parameter.jsonObject(value: todo) }
    }
}

@MainActor
private final class TodoListViewModel {
    private(set) var todos: [Todo] = []
    private(set) var isLoading = false
    private(set) var errorMessage: String?
    private let connect: Connect

    init(connect: Connect) {
        self.connect = connect
    }

    func load() async {
        isLoading = true
        defer { isLoading = false }
        do {
            todos = try await connect.send(TodoAPI.List()).value
            errorMessage = nil
        } catch let error as ConnectError where error.kind == .cancelled {
            // Left the screen: nothing to show.
        } catch {
            errorMessage = "Could not load your todos."
        }
    }

    func add(title: String) async {
        do {
            let added = try await connect.send(TodoAPI.Add(todo: NewTodo(title: title))).value
            todos.append(added)
        } catch {
            errorMessage = "Could not add \(title)."
        }
    }
}

final class TodoViewModelExampleTests: XCTestCase {
    private let todos = [Todo(id: 1, title: "Milk", completed: false), Todo(id: 2, title: "Eggs", completed: true)]

    @MainActor
    func testLoadShowsTheTodos() async {
        let transport = FakeTransport()
        transport.stub(.get, "/todos", with: .json(todos))
        let model = TodoListViewModel(connect: Connect(transport: transport))

        await model.load()

        XCTAssertEqual(model.todos, todos)
        XCTAssertNil(model.errorMessage)
        XCTAssertFalse(model.isLoading)
        XCTAssertEqual(transport.requests.count, 1)
    }

    @MainActor
    func testLoadShowsAnErrorWhenTheServerFails() async {
        let transport = FakeTransport()
        transport.stub(.get, "/todos", with: .status(404))
        let model = TodoListViewModel(connect: Connect(transport: transport))

        await model.load()

        XCTAssertEqual(model.todos, [])
        XCTAssertEqual(model.errorMessage, "Could not load your todos.")
    }

    @MainActor
    func testAddPostsTheNewTodoAsJSON() async throws {
        let transport = FakeTransport()
        transport.stub(.post, "/todos", with: .json(Todo(id: 3, title: "Bread", completed: false), status: 201))
        let model = TodoListViewModel(connect: Connect(transport: transport))

        await model.add(title: "Bread")

        XCTAssertEqual(model.todos.map(\.title), ["Bread"])
        let sent = try XCTUnwrap(transport.requests(to: "/todos").first)
        XCTAssertEqual(sent.httpMethod, "POST")
        let body = try XCTUnwrap(sent.httpBody)
        XCTAssertEqual(try JSONDecoder().decode(NewTodo.self, from: body), NewTodo(title: "Bread"))
    }

    /// While the request is in flight the model says it is loading; the test decides when the answer arrives.
    @MainActor
    func testIsLoadingWhileTheRequestIsInFlight() async throws {
        let transport = FakeTransport()
        let gate = Promise<Void>()
        transport.stub(.get, "/todos", with: FakeResponse.json(todos).released(by: gate.future))
        let model = TodoListViewModel(connect: Connect(transport: transport))

        let loading = Task { await model.load() }
        _ = try await transport.requestsReceived(count: 1).value(timeout: 10)
        XCTAssertTrue(model.isLoading)

        gate.succeed(())
        await loading.value
        XCTAssertFalse(model.isLoading)
        XCTAssertEqual(model.todos, todos)
    }

    /// Leaving the screen cancels the task; the request must be cancelled too, not left running.
    @MainActor
    func testCancellingTheTaskCancelsTheRequest() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/todos", with: .never)
        let model = TodoListViewModel(connect: Connect(transport: transport))

        let loading = Task { await model.load() }
        _ = try await transport.requestsReceived(count: 1).value(timeout: 10)
        loading.cancel()
        await loading.value

        XCTAssertEqual(transport.cancelledRequests.map(\.url?.path), ["/todos"])
        XCTAssertNil(model.errorMessage)
        XCTAssertFalse(model.isLoading)
    }

    /// Code that still uses completion-style futures, tested synchronously from the main thread.
    func testWaitingOnTheMainThreadForAFutureThatDeliversOnMain() throws {
        let transport = FakeTransport()
        transport.stub(.get, "/todos", with: .json(todos))
        let connect = Connect(transport: transport)

        let titles = connect.send(TodoAPI.List()).receive(on: .main).map { $0.map(\.title) }

        XCTAssertEqual(try titles.wait(timeout: 5), ["Milk", "Eggs"])
    }
}
