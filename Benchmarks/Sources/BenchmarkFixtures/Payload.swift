import Foundation

/// The JSON object the pipeline and loopback benchmarks decode: a to-do, about 100 bytes encoded.
public struct Todo: Codable, Sendable, Equatable {
    /// The owner.
    public let userId: Int
    /// The to-do's own identifier.
    public let id: Int
    /// What to do.
    public let title: String
    /// Whether it is done.
    public let completed: Bool

    /// A to-do with these fields.
    public init(userId: Int, id: Int, title: String, completed: Bool) {
        self.userId = userId
        self.id = id
        self.title = title
        self.completed = completed
    }
}

/// The response bodies of the benchmarks.
public enum Payload {
    /// A JSON array of to-dos of about `bytes` bytes (never less than one element).
    public static func todos(approximately bytes: Int) -> Data {
        var todos: [Todo] = []
        var size = 2
        while size < bytes {
            let todo = Todo(
                userId: todos.count % 10 + 1, id: todos.count + 1, title: "delectus aut autem \(todos.count)",
                completed: todos.count % 3 == 0)
            todos.append(todo)
            size += (try? JSONEncoder().encode(todo).count + 1) ?? 80
        }
        return (try? JSONEncoder().encode(todos)) ?? Data("[]".utf8)
    }

    /// About 1 KiB.
    public static let small = todos(approximately: 1 << 10)
    /// About 100 KiB.
    public static let large = todos(approximately: 100 << 10)
}
