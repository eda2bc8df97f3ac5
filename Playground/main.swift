// The SwiftConnect Playground: `swift run Playground`.
//
// Starts a small todo API on 127.0.0.1 and walks through the README's examples against it.
// Everything runs locally; no internet needed. Each example prints what happened.

import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

func section(_ title: String) {
    print("\n── \(title) " + String(repeating: "─", count: max(0, 60 - title.count)))
}

print("SwiftConnect Playground — todo API running at \(Demo.baseURL.absoluteString)")

// MARK: 1. Request and decode (the usage guide's example)

section("1. Request and decode")
let done = DispatchSemaphore(value: 0)
Connect.default.request(TodoConnector.get(id: 123), debugResponse: true).decoded(toType: Todo.self).observe { result in
    switch result {
    case .success(let todo):
        print(todo)
    case .failure(let error):
        print(error)
    }
    done.signal()
}
done.wait()

// MARK: 2. Composite parameters: path + query + JSON body

section("2. Composite parameters")
let todo = Todo(userId: 2, id: 1, title: "Test Todo", completed: false)
let update = AdvancedTodoConnector.update(userId: 1, todoId: 2, action: .update, object: todo)
print(cURLCommand(for: try update.asURLRequest()))
let updated = try Connect.default.request(update).decoded(toType: Todo.self).wait()
print("Server answered:", updated.title)

// MARK: 3. Typed connectors and async/await

section("3. Typed connectors and async/await")
let seven = try await Connect.default.send(GetTodo(id: 7)).value
print("GetTodo(id: 7) →", seven.title)
let titles = try Future.all((1...3).map { Connect.default.send(GetTodo(id: $0)) }).map { $0.map(\.title) }.wait()
print("All three:", titles)
let first = try Connect.default.send(GetTodo(id: 1)).timeout(after: 5).wait()  // .timedOut, and cancelled, after 5 s
let every = try Future.allSettled((1...3).map { Connect.default.send(GetTodo(id: $0)) }).wait()  // [Result]
print(first.title, every.count)

// MARK: 4. Errors: the default handler and a custom one

section("4. Errors")
do {
    _ = try Connect.default.send(GetTodo(id: 999)).wait()
} catch let error as ConnectError {
    print("kind: \(error.kind), status: \(error.statusCode ?? 0), message: \(error.message)")
}

struct LegacyError: Error {
    let code: Int
    let reason: String
}

struct LegacyErrorHandler: ErrorHandlerProtocol {
    func handle(response: [String: Any]) -> Error? {
        // Not our shape: let the default handler read it (returning nil would accept the response as a success).
        guard let code = response["code"] as? Int else { return ErrorHandler().handle(response: response) }
        return LegacyError(code: code, reason: response["reason"] as? String ?? "unknown")
    }
}

let legacy = Connect(middleware: ConnectMiddleware(), errorHandler: LegacyErrorHandler())
do {
    _ = try legacy.request(LegacyEndpoint()).wait()
    Demo.unexpected("LegacyEndpoint succeeded; its handler should have failed it")
} catch let error as LegacyError {
    print("LegacyError code \(error.code): \(error.reason)")
}

// MARK: 5. Authorization

section("5. Authorization")
do {
    _ = try Connect.default.send(GetProfile(token: nil)).wait()
    Demo.unexpected("GetProfile without a token succeeded")
} catch let error as ConnectError {
    print("Without a token: HTTP \(error.statusCode ?? 0), \(error.message)")
}
let profile = try Connect.default.send(GetProfile(token: "secret-token"), debugResponse: true).wait()
print("With a token: \(profile.name) on the \(profile.plan) plan (the log above shows Authorization: <redacted>)")

// MARK: 6. Cancellation

section("6. Cancellation")
let slow = Connect.default.request(SlowEndpoint())
slow.cancel()
if case .failure(let error as ConnectError) = try slow.waitForResult() {
    print("Cancelled one request:", error.kind)
} else {
    Demo.unexpected("a cancelled request did not fail with a ConnectError")
}
let client = Connect()
let pending = (0..<5).map { _ in client.request(SlowEndpoint()) }
client.cancelAllRequests()
let cancelled = pending.filter { (try? $0.waitForResult())?.isCancellation == true }.count
print("cancelAllRequests() cancelled \(cancelled) of \(pending.count) requests")
if cancelled != pending.count { Demo.unexpected("cancelAllRequests() left \(pending.count - cancelled) requests") }

// MARK: 7. Middleware, retries and token refresh

section("7. Middleware, retries and token refresh")
struct AppVersionMiddleware: Middleware {
    func intercept(
        _ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next
    ) -> Future<ConnectResponse> {
        request.setValue("2.4.1", forHTTPHeaderField: "X-App-Version")
        return next(request)
    }
}

let patient = Connect(middlewares: [AppVersionMiddleware()], retryPolicy: RetryPolicy(maxAttempts: 3, baseDelay: 0.05))
let flaky = try patient.request(Route("/flaky", baseURL: Demo.baseURL)).decoded(toType: [String: Int].self).wait()
print("/flaky answered on attempt \(flaky["attempt"] ?? 0) (two 503s were retried)")

let apiServer = ServerConfiguration(baseURL: Demo.baseURL)
let auth = AuthenticationMiddleware(credential: .bearer(token: "expired-token")) { _ in
    Future(value: .bearer(token: "fresh-token"))  // call your token endpoint here
}
let signedIn = Connect(middlewares: [auth], configuration: apiServer)
let secret = try signedIn.request(Route("/secure", baseURL: Demo.baseURL)).decoded(toType: [String: String].self).wait()
print("After one refresh:", secret, "— credential now", auth.credential?.description ?? "none")

// MARK: 8. Uploads, downloads and quick calls

section("8. Uploads, downloads and quick calls")
let local = Connect(configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: Demo.server.port))
let quick = try local.request("/todos/{id}", parameters: Parameter.path(key: "id", value: "5"))
    .decoded(toType: Todo.self)
    .wait()
print("Quick call:", quick.title)

let photo = File(name: "beach.jpg", key: "photo", mimeType: .jpg, data: Data(repeating: 0xFF, count: 2_048))
let progress = RequestOptions(progress: { report in print("Progress:", report) })
let upload = Route("/upload", method: .post)
let receipt = try local.upload(files: [photo], fields: [("album", "Holiday")], to: upload, options: progress)
    .decoded(toType: [String].self)
    .wait()
print("Server received:", receipt)

let rows = AsyncStream<Data> { continuation in
    for row in 1...3 { continuation.yield(Data("row \(row)\n".utf8)) }  // made as the connection takes them
    continuation.finish()
}
let body = ConnectRequest.OneShotStream(rows)
let ingest = ConnectRequest(method: .post, url: Demo.baseURL.appendingPathComponent("ingest"), body: .stream(body))
let ingested = try local.response(for: ingest, name: "ingest").wait()
print("Streamed body:", String(decoding: ingested.data, as: UTF8.self))

let destination = FileManager.default.temporaryDirectory.appendingPathComponent("swiftconnect-report.bin")
let file = try local.download(Route("/files/report"), to: destination).wait()
let size = (try? Data(contentsOf: file).count) ?? 0
print("Downloaded \(size) bytes to \(file.lastPathComponent)")
try? FileManager.default.removeItem(at: file)

// MARK: 9. Streaming: a chat completion, token by token

section("9. Streaming: a chat completion, token by token")
let chat = Connect.default.stream(ChatCompletion(prompt: "Say hello"), streaming: StreamingOptions(idleTimeout: 10))
let replied = Promise<Void>()
chat.observeEvents { event in
    guard event.data != "[DONE]", let token = try? JSONDecoder().decode(ChatToken.self, from: Data(event.data.utf8))
    else { return }
    print(token.text, terminator: "")
    fflush(nil)  // token by token, not line by line
} completion: { result in
    print()
    replied.complete(with: result)
}
try replied.future.wait(timeout: 30)

// MARK: 10. Connectivity: a request waits out an outage

section("10. Connectivity: a request waits out an outage")
if let system = try? SystemConnectivityMonitor() {
    print("This machine's network:", system.current)
}
// A simulated outage: in an app, the monitor is `try SystemConnectivityMonitor()`.
let network = FakeConnectivityMonitor(.disconnected)
let api = FakeTransport()
api.stub(
    .get, "/todos/1", with: .json(string: #"{"userId":1,"id":1,"title":"Sent after the outage","completed":false}"#))
let offlineFirst = Connect(
    transport: api,
    middlewares: [ConnectivityMiddleware(monitor: network, policy: .waitForConnectivity)]
)
let waiting = offlineFirst.request(Route("/todos/1", baseURL: URL(string: "https://api.example.com")!))
print("Offline: the request waits (sent so far: \(api.requests.count))")
DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { network.goOnline(over: [.wifi]) }
let arrived = try waiting.decoded(toType: Todo.self).wait(timeout: 10)
print("Back online over Wi-Fi:", arrived.title)
// Another outage, for a client that fails fast. (A monitor of its own: the first one may still be telling its
// observers about the Wi-Fi coming back, and would tell them of a new outage only after that.)
let outage = FakeConnectivityMonitor(.disconnected)
let impatient = Connect(transport: api, middlewares: [ConnectivityMiddleware(monitor: outage, policy: .failFast)])
switch try impatient.request(Route("/todos/1", baseURL: URL(string: "https://api.example.com")!)).waitForResult() {
case .failure(let error as ConnectError):
    print("Fail fast while offline:", error.kind, "(nothing sent)")
case let outcome:
    Demo.unexpected("fail fast while offline: \(outcome)")
}

// MARK: 11. Record once, replay for ever

section("11. Record once, replay for ever")
let cassette = FileManager.default.temporaryDirectory.appendingPathComponent("swiftconnect-playground.har")
let recorder = RecordingTransport(fileURL: cassette, wrapping: URLSessionTransport(), mode: .record)
let recorded = try Connect(transport: recorder).request(TodoConnector.get(id: 1)).decoded(toType: Todo.self).wait()
print("Recorded from the server:", recorded.title, "→", cassette.lastPathComponent)
Demo.server.stop()
let player = RecordingTransport(fileURL: cassette, mode: .replay)
let replayed = try Connect(transport: player).request(TodoConnector.get(id: 1)).decoded(toType: Todo.self).wait()
print("Replayed with the server gone:", replayed.title)
try? FileManager.default.removeItem(at: cassette)

section("Done")
Demo.server.stop()

extension Result {
    var isCancellation: Bool {
        if case .failure(let error as ConnectError) = self { return error.kind == .cancelled }
        return false
    }
}
