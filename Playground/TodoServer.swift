import Foundation
import SwiftConnect
import SwiftConnectTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

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

    /// Ends the Playground with status 1 when an example did not do what it shows: CI runs `swift run Playground`,
    /// and a demo that regressed must fail it rather than print and go on.
    static func unexpected(_ what: String) -> Never {
        FileHandle.standardError.write(Data("Playground: unexpected outcome: \(what)\n".utf8))
        exit(1)
    }
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
                return .json(
                    string: #"{"message":"Todo \#(request.pathParameters["id"] ?? "?") not found"}"#, status: 404)
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
        let flakyCalls = Protected(0)
        server.route("GET", "/flaky") { _ in
            let call = flakyCalls.withLock { count -> Int in
                count += 1
                return count
            }
            // Fails twice with 503, then succeeds: retries make it look reliable.
            return call % 3 == 0 ? .json(["attempt": call]) : .json(string: #"{"error":"warming up"}"#, status: 503)
        }
        server.route("GET", "/secure") { request in
            guard request.header("Authorization") == "Bearer fresh-token" else {
                return .json(string: #"{"error":"token expired"}"#, status: 401)
            }
            return .json(["secret": "42"])
        }
        server.route("POST", "/upload") { request in
            guard let contentType = request.header("Content-Type"),
                let parts = try? MultipartParser.parse(request.body, contentType: contentType)
            else { return .json(string: #"{"error":"not multipart"}"#, status: 400) }
            return .json(parts.map { "\($0.name): \($0.filename ?? "-") (\($0.data.count) bytes)" })
        }
        // A body read as it arrives: how many bytes, and how they were framed.
        server.streamingRoute("POST", "/ingest") { _, body in
            var count = 0
            while let piece = body.read(maxBytes: 64 << 10) { count += piece.count }
            return .text("\(count) bytes, " + (body.contentLength == nil ? "sent in chunks" : "with a Content-Length"))
        }
        server.route("GET", "/files/report") { _ in
            .data(Data(repeating: 0x2A, count: 300_000), contentType: "application/octet-stream")
        }
        // A language-model API: the reply streamed token by token as server-sent events, then `[DONE]`.
        server.route("POST", "/chat/completions") { _ in
            let tokens = ["Hello", "!", " I", " stream", " one", " token", " at", " a", " time", "."]
            let events = tokens.map { ServerSentEvent(data: #"{"text":"\#($0)"}"#) } + [ServerSentEvent(data: "[DONE]")]
            return .serverSentEvents(events, interval: 0.03)
        }
    }
}
