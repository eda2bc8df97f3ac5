import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// decoded(toType:) chooses its decoder by the response's Content-Type through an extensible registry.
final class ContentTypeDecodingTests: XCTestCase {
    private struct Item: Codable, Equatable, Sendable { let name: String }

    private struct Endpoint: TypedConnector {
        typealias Response = Item
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/item" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
    }

    /// A toy format: `name=<value>`.
    private struct KeyValueDecoder: ResponseBodyDecoder {
        let calls: Counter
        func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
            calls.increment()
            let text = String(decoding: data, as: UTF8.self)
            let json = try JSONSerialization.data(withJSONObject: ["name": String(text.dropFirst("name=".count))])
            return try JSONDecoder().decode(type, from: json)
        }
    }

    /// A decoder that reads the body as `name=<value>` and records the content type it was given.
    private struct CharsetAwareDecoder: ResponseBodyDecoder {
        let seen: Guarded<[String?]>
        func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
            try decode(type, from: data, contentType: "(none: the content type was not asked for)")
        }
        func decode<T: Decodable>(_ type: T.Type, from data: Data, contentType: String?) throws -> T {
            seen.withLock { $0.append(contentType) }
            let text = String(decoding: data, as: UTF8.self)
            let json = try JSONSerialization.data(withJSONObject: ["name": String(text.dropFirst("name=".count))])
            return try JSONDecoder().decode(type, from: json)
        }
    }

    /// A decoder is told the response's whole `Content-Type`, `charset` included, on every way of decoding a
    /// response's body; a body that comes from no response has none.
    func testADecoderIsGivenTheResponsesContentTypeWithItsParameters() throws {
        let seen = Guarded<[String?]>([])
        let decoder = CharsetAwareDecoder(seen: seen)
        var decoders = ResponseDecoders.default
        decoders.register(decoder, for: "text/x-key-value")
        let contentType = "text/x-key-value; charset=ISO-8859-1"
        let transport = FakeTransport.answering(.data(Data("name=kv".utf8), headers: ["Content-Type": contentType]))
        let connect = Connect(transport: transport, retryPolicy: nil, settings: Connect.Settings(decoders: decoders))

        XCTAssertEqual(try connect.request(Endpoint()).decoded(toType: Item.self).wait(), Item(name: "kv"))
        XCTAssertEqual(try connect.send(Endpoint()).wait(), Item(name: "kv"))
        XCTAssertEqual(try connect.request(Endpoint()).timeout(after: 5).decoded(toType: Item.self).wait().name, "kv")
        let explicit = try connect.request(Endpoint()).decoded(toType: Item.self, decoder: decoder).wait()
        XCTAssertEqual(explicit.name, "kv")
        XCTAssertEqual(seen.withLock { $0 }, Array(repeating: contentType, count: 4))

        let unattached = try Future(value: Data("name=x".utf8)).decoded(toType: Item.self, decoder: decoder).wait()
        XCTAssertEqual(unattached.name, "x")
        XCTAssertEqual(seen.withLock { $0.last }, .some(nil))
    }

    /// A body recovered asynchronously again and again (a recursive retry of `recover { _ in connect.request(…) }`)
    /// decodes and is freed on a thread with a small stack: each recovery's body source points at the response's
    /// source, not at the recovery before it, so neither reading the response nor freeing walks a list as long as
    /// the chain (50,000 links overflowed a 512 KiB stack).
    func testFiftyThousandAsyncRecoversOnABodyDecodeAndAreFreedOnASmallStack() throws {
        let transport = FakeTransport()
        transport.stub(.get, "/item", with: .json(string: #"{"name":"deep"}"#))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let outcome = Guarded<String>("not run")
        let done = expectation(description: "decoded and freed")
        let thread = Thread {
            var body: Future<Data>? = connect.request(Endpoint())
            for _ in 0..<50_000 { body = body?.recover { _ in Future(value: Data()) } }
            let decoded = body.map { (try? $0.decoded(toType: Item.self).wait())?.name ?? "failed" }
            body = nil
            outcome.withLock { $0 = decoded ?? "no body" }
            done.fulfill()
        }
        thread.stackSize = 512 << 10
        thread.start()
        wait(for: [done], timeout: 60)
        XCTAssertEqual(outcome.withLock { $0 }, "deep")
    }

    /// README: "operator order does not change how a body decodes". `mapError` and `recover` pass a body through
    /// unchanged, as `timeout(after:)`, `receive(on:)` and `always` do, so the body keeps its response and decodes by
    /// its content type, whether the request is still running or already complete; a body `recover` made in place
    /// of a failure comes from no response, and decodes with the client's fallback.
    func testMapErrorAndRecoverKeepTheBodysResponse() throws {
        let calls = Counter()
        var decoders = ResponseDecoders.default
        decoders.register(KeyValueDecoder(calls: calls), for: "text/x-key-value")
        let transport = FakeTransport()
        transport.stub(
            .get, "/item", with: .data(Data("name=kv".utf8), headers: ["Content-Type": "text/x-key-value"]))
        let connect = Connect(transport: transport, retryPolicy: nil, settings: Connect.Settings(decoders: decoders))
        let operators: [(String, @Sendable (Future<Data>) -> Future<Data>)] = [
            ("mapError", { $0.mapError { $0 } }),
            ("recover", { $0.recover { _ in Data() } }),
            ("recover with a future", { $0.recover { _ in Future(value: Data()) } }),
        ]
        for (name, passing) in operators {
            let running = connect.request(Endpoint())
            XCTAssertEqual(try passing(running).decoded(toType: Item.self).wait(), Item(name: "kv"), name)
            let complete = connect.request(Endpoint())
            _ = try complete.wait()
            XCTAssertEqual(try passing(complete).decoded(toType: Item.self).wait(), Item(name: "kv"), name)
        }
        XCTAssertEqual(calls.value, 6)

        transport.stub(.get, "/missing", with: .status(404))
        struct Missing: Connector {
            var baseURL: URL { URL(string: "https://api.example.com")! }
            var endpoint: String { "/missing" }
        }
        let recovered = connect.request(Missing()).recover { _ in Data(#"{"name":"fallback"}"#.utf8) }
        XCTAssertEqual(try recovered.decoded(toType: Item.self).wait(), Item(name: "fallback"))

        // A recovery that sends a request gives that request's body: decoded by its response's content type (with
        // its client's decoders), as that request's own future is, not as a body from no response.
        let fromRecovery = connect.request(Missing()).recover { _ in connect.request(Endpoint()) }
        XCTAssertEqual(try fromRecovery.decoded(toType: Item.self).wait(), Item(name: "kv"))
        let plain = Connect(transport: transport, retryPolicy: nil)
        let throughOtherClient = plain.request(Missing()).recover { _ in connect.request(Endpoint()) }
        XCTAssertEqual(try throughOtherClient.decoded(toType: Item.self).wait(), Item(name: "kv"))
        // Decoding asked for while the failing request still runs: the recovery's client is known only once it ran.
        let gate = Promise<Void>()
        transport.stub(.get, "/missing-later", with: FakeResponse.status(404).released(by: gate.future))
        struct MissingLater: Connector {
            var baseURL: URL { URL(string: "https://api.example.com")! }
            var endpoint: String { "/missing-later" }
        }
        let pending = plain.request(MissingLater()).recover { _ in connect.request(Endpoint()) }
            .decoded(toType: Item.self)
        gate.succeed(())
        XCTAssertEqual(try pending.wait(), Item(name: "kv"), "decoded with the first client's decoders")
        // A recovery whose future knows of no response decodes with the fallback.
        let unattached = connect.request(Missing()).recover { _ in Future(value: Data(#"{"name":"f"}"#.utf8)) }
        XCTAssertEqual(try unattached.decoded(toType: Item.self).wait(), Item(name: "f"))
    }

    func testRegisteredDecoderIsChosenByContentType() throws {
        let calls = Counter()
        var decoders = ResponseDecoders.default
        decoders.register(KeyValueDecoder(calls: calls), for: "text/x-key-value")
        let transport = FakeTransport.answering(
            .data(Data("name=kv".utf8), headers: ["Content-Type": "text/x-key-value; charset=utf-8"]))
        let connect = Connect(transport: transport, retryPolicy: nil, settings: Connect.Settings(decoders: decoders))

        XCTAssertEqual(try connect.request(Endpoint()).decoded(toType: Item.self).wait(), Item(name: "kv"))
        XCTAssertEqual(try connect.send(Endpoint()).wait(), Item(name: "kv"))
        XCTAssertEqual(calls.value, 2)
    }

    /// "matched ignoring case and parameters": a media type registered with parameters or surrounding spaces,
    /// as copied from a `Content-Type` header, is matched like the bare type, not silently never used.
    func testAMediaTypeRegisteredWithParametersIsMatched() throws {
        for registered in ["text/x-key-value; charset=utf-8", " Text/X-Key-Value ", "text/x-key-value;"] {
            let calls = Counter()
            var decoders = ResponseDecoders.default
            decoders.register(KeyValueDecoder(calls: calls), for: registered)
            let transport = FakeTransport.answering(
                .data(Data("name=kv".utf8), headers: ["Content-Type": "text/x-key-value"]))
            let connect = Connect(
                transport: transport, retryPolicy: nil, settings: Connect.Settings(decoders: decoders))

            XCTAssertEqual(try connect.send(Endpoint()).wait(), Item(name: "kv"), registered)
            XCTAssertEqual(calls.value, 1, registered)
        }
    }

    /// ResponseDecoders' documented example registers Foundation's `PropertyListDecoder` as it is.
    func testThePropertyListDecoderOfTheDocumentedExampleRegistersAsIs() throws {
        var decoders = ResponseDecoders.default
        decoders.register(PropertyListDecoder(), for: "application/x-plist")
        let plist = try PropertyListEncoder().encode(Item(name: "p"))
        let transport = FakeTransport.answering(.data(plist, headers: ["Content-Type": "application/x-plist"]))
        let connect = Connect(transport: transport, retryPolicy: nil, settings: Connect.Settings(decoders: decoders))

        XCTAssertEqual(try connect.send(Endpoint()).wait(), Item(name: "p"))
        XCTAssertEqual(try connect.request(Endpoint()).decoded(toType: Item.self).wait(), Item(name: "p"))
    }

    func testJSONIsBuiltInForJSONAndPlusJSONTypes() throws {
        for type in ["application/json", "application/vnd.api+json", "application/problem+json; charset=utf-8"] {
            let transport = FakeTransport.answering(.data(Data(#"{"name":"j"}"#.utf8), headers: ["Content-Type": type]))
            let connect = Connect(transport: transport, retryPolicy: nil)
            XCTAssertEqual(try connect.send(Endpoint()).wait(), Item(name: "j"), type)
        }
    }

    func testUnknownOrMissingContentTypeFallsBackToJSON() throws {
        let transport = FakeTransport.answering(
            .data(Data(#"{"name":"f"}"#.utf8), headers: ["Content-Type": "text/plain"]))
        XCTAssertEqual(try Connect(transport: transport, retryPolicy: nil).send(Endpoint()).wait(), Item(name: "f"))
        let bare = FakeTransport.answering(.data(Data(#"{"name":"g"}"#.utf8)))
        XCTAssertEqual(try Connect(transport: bare, retryPolicy: nil).send(Endpoint()).wait(), Item(name: "g"))
    }

    func testAnExplicitDecoderWinsOverTheRegistry() throws {
        let calls = Counter()
        var decoders = ResponseDecoders.default
        decoders.register(KeyValueDecoder(calls: calls), for: "application/json")
        let transport = FakeTransport.answering(.json(string: #"{"name":"explicit"}"#))
        let connect = Connect(transport: transport, retryPolicy: nil, settings: Connect.Settings(decoders: decoders))
        let item = try connect.request(Endpoint()).decoded(toType: Item.self, decoder: JSONDecoder()).wait()
        XCTAssertEqual(item, Item(name: "explicit"))
        XCTAssertEqual(calls.value, 0)
    }

    func testSuffixRegistration() {
        let calls = Counter()
        var decoders = ResponseDecoders.default
        decoders.register(KeyValueDecoder(calls: calls), for: "+kv")
        XCTAssertTrue(decoders.decoder(for: "application/vnd.thing+kv") is KeyValueDecoder)
        XCTAssertTrue(decoders.decoder(for: "application/json") is JSONDecoder)
        XCTAssertTrue(decoders.decoder(for: nil) is JSONDecoder)
    }

    /// JSON, counting its calls; a class, so that one instance can be told from another.
    private final class CountingJSONDecoder: ResponseBodyDecoder {
        let calls = Counter()
        func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
            calls.increment()
            return try JSONDecoder().decode(type, from: data)
        }
    }

    private func decodedItem(
        contentType: String?, decoders: ResponseDecoders, file: StaticString = #filePath, line: UInt = #line
    ) throws -> Item {
        let headers = contentType.map { ["Content-Type": $0] } ?? [:]
        let transport = FakeTransport.answering(.data(Data(#"{"name":"n"}"#.utf8), headers: headers))
        let connect = Connect(transport: transport, retryPolicy: nil, settings: Connect.Settings(decoders: decoders))
        let sent = try connect.send(Endpoint()).wait()
        XCTAssertEqual(try connect.request(Endpoint()).decoded(toType: Item.self).wait(), sent, file: file, line: line)
        return sent
    }

    func testOneDecoderForEveryTypeIsUsedWhateverTheContentType() throws {
        let shared = CountingJSONDecoder()
        var decoders = ResponseDecoders.default
        decoders.fallback = shared
        decoders.register(shared, for: "application/json")
        for type in ["application/json", "text/plain", "application/vnd.api+json", nil] {
            XCTAssertEqual(try decodedItem(contentType: type, decoders: decoders), Item(name: "n"))
        }
        XCTAssertEqual(shared.calls.value, 8)
    }

    func testRegisteringAnotherDecoderStillChoosesByContentType() throws {
        let shared = CountingJSONDecoder()
        let other = CountingJSONDecoder()
        var decoders = ResponseDecoders.default
        decoders.fallback = shared
        decoders.register(shared, for: "application/json")
        decoders.register(other, for: "application/x-other")
        _ = try decodedItem(contentType: "application/x-other; charset=utf-8", decoders: decoders)
        _ = try decodedItem(contentType: "application/json", decoders: decoders)
        _ = try decodedItem(contentType: nil, decoders: decoders)
        XCTAssertEqual(other.calls.value, 2)
        XCTAssertEqual(shared.calls.value, 4)
    }

    /// A client's JSON decoder (snake_case keys, ISO 8601 dates), registered for `application/json`, is also the
    /// one for answers with another type or none: the fallback is "JSON". It was the plain `JSONDecoder`, so a
    /// server that sends JSON as `text/plain` or without a `Content-Type` had the client's strategies ignored, and an
    /// optional property came out `nil` without an error.
    func testTheJSONDecoderRegisteredForJSONIsTheFallback() throws {
        struct Profile: Decodable, Sendable { let displayName: String? }
        let snake = JSONDecoder()
        snake.keyDecodingStrategy = .convertFromSnakeCase
        var decoders = ResponseDecoders.default
        decoders.register(snake, for: "application/json")
        XCTAssertTrue(decoders.fallback as AnyObject === snake)
        XCTAssertTrue(decoders.decoder(for: nil) as AnyObject === snake)

        for contentType in ["text/plain", "text/json", nil] {
            let headers = contentType.map { ["Content-Type": $0] } ?? [:]
            let transport = FakeTransport.answering(.data(Data(#"{"display_name":"Ada"}"#.utf8), headers: headers))
            let connect = Connect(
                transport: transport, retryPolicy: nil, settings: Connect.Settings(decoders: decoders))
            let profile = try connect.request(Endpoint()).decoded(toType: Profile.self).wait()
            XCTAssertEqual(profile.displayName, "Ada", contentType ?? "no Content-Type")
        }

        // A fallback set by hand stays, whatever is registered after it.
        let plain = JSONDecoder()
        decoders.fallback = plain
        decoders.register(JSONDecoder(), for: "application/json")
        XCTAssertTrue(decoders.fallback as AnyObject === plain)
    }

    func testAnotherFallbackIsUsedOnlyForTypesWithoutADecoder() throws {
        let fallback = CountingJSONDecoder()
        var decoders = ResponseDecoders.default
        decoders.fallback = fallback
        _ = try decodedItem(contentType: "application/json", decoders: decoders)
        _ = try decodedItem(contentType: "application/problem+json", decoders: decoders)
        XCTAssertEqual(fallback.calls.value, 0)
        _ = try decodedItem(contentType: "text/plain", decoders: decoders)
        _ = try decodedItem(contentType: nil, decoders: decoders)
        XCTAssertEqual(fallback.calls.value, 4)
    }
}
