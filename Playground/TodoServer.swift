import Foundation
import SwiftConnect
import SwiftConnectTesting

/// The demo's backend: a small todo API on a loopback `LocalServer`, so the Playground needs no internet.
enum Demo {
    /// The running server; started on first use.
    static let server: LocalServer = {
        do {
            let server = try LocalServer.started()
            TodoServer.install(on: server)
            return server
        } catch {
            FileHandle.standardError.write(Data("Playground: could not start the local server: \(error)\n".utf8))
            exit(1)
        }
    }()

    /// Where the demo's connectors point, in place of a real API's URL.
    static var baseURL: URL { server.baseURL }
}

struct Todo: Codable, Sendable {
    var userId: Int
    var id: Int
    var title: String
    var completed: Bool
}

enum TodoServer {
    static let validToken = "secret-token"

    static func install(on server: LocalServer) {
        server.route("GET", "/todos/:id") { request in
            guard let id = Int(request.pathParameters["id"] ?? ""), id <= 200 else {
                return .json(string: #"{"message":"Todo \#(request.pathParameters["id"] ?? "?") not found"}"#, status: 404)
            }
            return .json(Todo(userId: 1, id: id, title: "Todo number \(id)", completed: id.isMultiple(of: 2)))
        }
        server.route("PUT", "/users/:userId/todos/:todoId") { request in
            guard request.queryItem("action") == "update",
                var todo = try? JSONDecoder().decode(Todo.self, from: request.body)
            else {
                return .json(string: #"{"error":{"message":"expected ?action=update and a todo"}}"#, status: 400)
            }
            todo.title += " (updated)"
            return .json(todo)
        }
        server.route("GET", "/me") { request in
            guard request.header("Authorization") == "Bearer \(validToken)" else {
                return .json(string: #"{"error":"missing or invalid token"}"#, status: 401)
            }
            return .json(["name": "Ada", "plan": "pro"])
        }
        server.route("GET", "/legacy/fail") { _ in
            .json(string: #"{"code":42,"reason":"quota exceeded"}"#, status: 429)
        }
        server.route("GET", "/slow") { _ in
            LocalServer.Response.json(["late": true]).delayed(by: 5)
        }
    }
}
