import Foundation
import SwiftConnect
import XCTest

/// A process a test starts: often this test binary again, to run one test in a process of its own.
enum ChildProcess {
    /// Runs `executable` with `arguments` and this process's environment plus `environment`, and waits for it to end.
    ///
    /// - Returns: Its exit status, and everything it wrote to standard output and standard error, in order.
    static func run(
        _ executable: String, _ arguments: [String], adding environment: [String: String] = [:]
    ) throws -> (status: Int32, output: String) {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: executable)
        child.arguments = arguments
        child.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        child.standardOutput = output
        child.standardError = output
        try child.run()
        // Read to the end before waiting: a full pipe would stop the child.
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        return (child.terminationStatus, text)
    }
}

/// A thread-safe counter for asserting how many times something ran.
final class Counter: @unchecked Sendable {
    // @unchecked Sendable: `lock` protects `count`.
    private let lock = NSLock()
    private var count = 0

    func increment() {
        lock.lock()
        count += 1
        lock.unlock()
    }

    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }
}

/// A thread-safe list for recording events in the order they happened.
final class Recorder<Element>: @unchecked Sendable {
    // @unchecked Sendable: `condition` protects `elements`.
    private let condition = NSCondition()
    private var elements: [Element] = []

    func append(_ element: Element) {
        condition.lock()
        elements.append(element)
        condition.broadcast()
        condition.unlock()
    }

    var values: [Element] {
        condition.lock()
        defer { condition.unlock() }
        return elements
    }

    /// Waits until at least `count` values are recorded (an event, not a poll), for at most `timeout` seconds.
    ///
    /// - Returns: Whether they were.
    @discardableResult
    func wait(forCount count: Int, timeout: TimeInterval = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while elements.count < count {
            guard condition.wait(until: deadline) else { return elements.count >= count }
        }
        return true
    }
}

/// An object to watch with a weak reference.
final class Token: Sendable {}

struct TestError: Error, Equatable {
    let code: Int
    init(_ code: Int = 0) { self.code = code }
}

extension XCTestCase {
    /// Waits for the future to complete and returns its result; fails the test on timeout.
    func result<Value>(
        of future: Future<Value>,
        timeout: TimeInterval = 10,
        file: StaticString = #filePath,
        line: UInt = #line
    ) -> Result<Value, any Error>? {
        let done = expectation(description: "future completes")
        future.observe { _ in done.fulfill() }
        wait(for: [done], timeout: timeout)
        return future.result
    }

    /// Waits for the future and returns its error; fails the test if it succeeds.
    func error<Value>(
        of future: Future<Value>,
        timeout: TimeInterval = 10,
        file: StaticString = #filePath,
        line: UInt = #line
    ) -> (any Error)? {
        switch result(of: future, timeout: timeout, file: file, line: line) {
        case .failure(let error): return error
        case .success(let value):
            XCTFail("expected a failure, got \(value)", file: file, line: line)
            return nil
        case nil: return nil
        }
    }
}

/// Opens once; until then `wait` blocks (bounded). Broadcast: every waiter is released.
final class Gate: Sendable {
    private let group = DispatchGroup()
    private let isOpen = Guarded(false)

    init() {
        group.enter()
    }

    func wait(timeout: TimeInterval) {
        _ = group.wait(timeout: .now() + timeout)
    }

    func open() {
        let wasOpen = isOpen.withLock { isOpen in
            defer { isOpen = true }
            return isOpen
        }
        if !wasOpen { group.leave() }
    }
}

/// A clock a test moves by hand, starting at 1,000,000 seconds after 1970 (for a ``ResponseCache``'s `now`).
final class ManualClock: @unchecked Sendable {
    // @unchecked Sendable: `lock` protects `current`.
    private let lock = NSLock()
    private var current = Date(timeIntervalSince1970: 1_000_000)

    /// The clock's time.
    var now: Date {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    /// Moves the clock `seconds` forward.
    func advance(_ seconds: TimeInterval) {
        lock.lock()
        current += seconds
        lock.unlock()
    }
}

/// A value read and written under a lock, for the tests shared with the AsyncHTTPClient package, which cannot see
/// the library's `package` types.
final class Guarded<Value>: @unchecked Sendable {
    // @unchecked Sendable: `lock` protects `value`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    var snapshot: Value { withLock { $0 } }
}

/// Returns once the current task is cancelled: the iteration of an `AsyncStream` that never yields ends then.
func waitUntilCancelled() async {
    var continuation: AsyncStream<Never>.Continuation?
    let never = AsyncStream<Never> { continuation = $0 }
    for await _ in never {}
    continuation?.finish()
}

/// A one-shot upload's producer as an app writes one: an `AsyncThrowingStream` whose task yields `first`, then waits
/// until it is cancelled, which only the stream's `onTermination` does (the consumer stopped). It never ends the body
/// itself, so a call that sends it ends only when it is cancelled or answered early.
///
/// ```swift
/// let producer = StalledProducer(first: Data(count: 1_000))
/// request.body = .stream(ConnectRequest.OneShotStream(producer))
/// try producer.taken.future.wait(timeout: 10)  // the engine has the chunk
/// ```
struct StalledProducer: AsyncSequence, Sendable {
    typealias Element = Data

    /// Succeeds once the first chunk was taken from the stream.
    let taken = Promise<Void>()
    /// Succeeds once the producer's task was cancelled: the stream's consumer told it that it stopped.
    let released = Promise<Void>()
    private let chunks: AsyncThrowingStream<Data, any Error>

    init(first: Data) {
        let released = released
        chunks = AsyncThrowingStream { continuation in
            let task = Task {
                continuation.yield(first)
                await waitUntilCancelled()
                _ = released.succeed(())
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    func makeAsyncIterator() -> Iterator { Iterator(base: chunks.makeAsyncIterator(), taken: taken) }

    /// Reads the stream, telling ``taken`` when a chunk was read.
    struct Iterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<Data, any Error>.Iterator
        let taken: Promise<Void>

        mutating func next() async throws -> Data? {
            let chunk = try await base.next()
            if chunk != nil { _ = taken.succeed(()) }
            return chunk
        }
    }
}

/// A new folder on another file system than the temporary directory's (`/dev/shm`, a tmpfs on Linux), named `prefix`
/// and a UUID, for what differs when a rename across the two cannot be done; skips the test where there is none.
func folderOnAnotherFileSystem(named prefix: String) throws -> URL {
    var shm = stat()
    var temporary = stat()
    guard stat("/dev/shm", &shm) == 0, stat(FileManager.default.temporaryDirectory.path, &temporary) == 0,
        shm.st_dev != temporary.st_dev
    else { throw XCTSkip("no file system other than the temporary directory's at /dev/shm") }
    let folder = URL(fileURLWithPath: "/dev/shm").appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder
}
