import Foundation
import SwiftConnectTesting
import XCTest

@_spi(Engine) @testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The conformance suite, run against engines that each break one thing an engine owes the core (`SocketEngine`
/// with one mutation): the suite must report each mutant, in the check that names what it breaks. A mutant the core
/// makes harmless passes those checks, and that is asserted too: the core's protection is the evidence.
///
/// Two mutants were tried once and are not kept, as each costs the suite's own wait: an engine that never ends a
/// body ("statuses are responses" reports it after its 30 s wait) and one that keeps a connection open when its body
/// is let go ("size limit stops reading", after 10 s). The checks caught both before the checks these tests guard.
final class ConformanceMutationTests: XCTestCase {
    /// Runs `only` against `mutation`, and returns the checks that failed.
    private func failedChecks(_ mutation: Mutation, _ only: Set<String>) -> Set<String> {
        let names = Set(TransportConformance.checks.map(\.name))
        XCTAssertTrue(only.isSubset(of: names), "\(mutation): no check is named \(only.subtracting(names))")
        let outcomes = TransportConformance.run(only: only.intersection(names)) { MutantEngine(mutation: mutation) }
        for outcome in outcomes { print("\(mutation): \(outcome)") }
        return Set(outcomes.filter { $0.failure != nil }.map(\.check))
    }

    /// Each mutant fails the check named with it.
    private func assertCaught(
        _ mutation: Mutation, by check: String, file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertEqual(
            failedChecks(mutation, [check]), [check], "\(mutation) passed \"\(check)\"", file: file, line: line)
    }

    func testAnEngineThatDropsTheRequestBodyIsCaught() {
        assertCaught(.dropsRequestBody, by: "methods and bodies")
    }

    func testAnEngineThatSendsAFileBodyOnceIsCaught() {
        assertCaught(.sendsAFileOnce, by: "body sent again")
    }

    func testAnEngineThatSendsAKnownLengthBodyChunkedIsCaught() {
        assertCaught(.sendsKnownLengthBodyChunked, by: "methods and bodies")
    }

    func testAnEngineThatDropsRepeatedRequestFieldsIsCaught() {
        assertCaught(.dropsRepeatedRequestFields, by: "repeated header fields")
    }

    func testAnEngineThatReordersRepeatedResponseFieldsIsCaught() {
        assertCaught(.reordersRepeatedResponseFields, by: "repeated header fields")
    }

    func testAnEngineThatLowercasesResponseValuesIsCaught() {
        assertCaught(.lowercasesResponseValues, by: "repeated header fields")
    }

    func testAnEngineThatLowercasesRequestValuesIsCaught() {
        assertCaught(.lowercasesRequestValues, by: "repeated header fields")
    }

    func testAnEngineThatSwallowsAResetMidBodyIsCaught() {
        assertCaught(.swallowsBodyFailure, by: "truncated body")
    }

    func testAnEngineThatKeepsReadingWhenCancelledIsCaught() {
        assertCaught(.ignoresCancellation, by: "cancellation closes the connection")
    }

    func testAnEngineThatReportsGenericFailuresIsCaught() {
        assertCaught(.opaqueFailures, by: "truncated body")
        assertCaught(.opaqueFailures, by: "refused connection")
    }

    func testAnEngineThatFollowsRedirectsIsCaught() {
        assertCaught(.followsRedirects, by: "redirects keep credentials home")
    }

    func testAnEngineThatFollowsRedirectsDroppingOnlyAuthorizationIsCaught() {
        assertCaught(.followsRedirectsDroppingAuthorization, by: "redirects keep credentials home")
    }

    func testAnEngineThatDecodesGzipSecretlyIsCaught() {
        assertCaught(.decodesGzipUndeclared, by: "compressed bodies")
    }

    /// Mutants the core's exchange makes harmless: each passes the checks of what it breaks.
    func testTheCoreProtectsAgainstTheRest() {
        // Bytes after a stop are read only if the core asks for them; a body an engine ends after a cancellation is
        // cut, not complete (`Task.checkCancellation()` after the loop); the core's timer ends the exchange at the
        // deadline, whatever the engine does with `EngineRequest.deadline` (SocketEngine itself never reads it).
        let checks: Set<String> = [
            "cancellation closes the connection", "deadline covers the body", "sub-second deadline",
            "size limit stops reading",
        ]
        XCTAssertEqual(failedChecks(.bytesAfterStop, checks), [])
        XCTAssertEqual(failedChecks(.ignoresDeadline, ["sub-second deadline", "deadline covers the body"]), [])
    }
}

/// One thing a mutant engine does wrong.
enum Mutation: String, Sendable {
    /// Sends no body, whatever the hop has.
    case dropsRequestBody
    /// Sends a body of known length chunked, with no `Content-Length`.
    case sendsKnownLengthBodyChunked
    /// Sends only the first field of a repeated name.
    case dropsRepeatedRequestFields
    /// Hands over repeated response fields in reverse order.
    case reordersRepeatedResponseFields
    /// Lowercases the values of response fields.
    case lowercasesResponseValues
    /// Lowercases the values of request fields.
    case lowercasesRequestValues
    /// Ends the body cleanly at any failure (a reset mid-body is a clean end).
    case swallowsBodyFailure
    /// At any failure (a cancellation included), delivers more bytes, then ends the body cleanly.
    case bytesAfterStop
    /// Waits for the head in a task the exchange's cancellation does not reach, then reads the whole body ahead in
    /// another, which holds the connection until the body ends: neither a cancellation nor the body let go unread
    /// (the core may drop it before iterating it, when the cancellation lands as the head arrives) stops the reading.
    case ignoresCancellation
    /// Reports every failure as an error nobody can classify.
    case opaqueFailures
    /// Follows a redirect itself, with the same head.
    case followsRedirects
    /// Follows a redirect itself, with the same head but for `Authorization` on a hop to another origin (the `Cookie`
    /// and API key the caller set go along).
    case followsRedirectsDroppingAuthorization
    /// Decodes gzip itself while not declaring it in `decodedContentCodings`.
    case decodesGzipUndeclared
    /// Waits for the head in a task cancellation does not reach.
    case ignoresDeadline
    /// Reads a file body once: the same file sent again (a 307's second hop, a retry) goes as zeros of its length,
    /// as from a reader left at the file's end.
    case sendsAFileOnce
}

/// An error the core cannot classify.
struct OpaqueEngineFailure: Error {}

/// `SocketEngine` with one ``Mutation``.
struct MutantEngine: HTTPEngine {
    let mutation: Mutation
    /// The files this engine has sent (``Mutation/sendsAFileOnce``).
    private let sentFiles = Protected<Set<URL>>([])

    init(mutation: Mutation) {
        self.mutation = mutation
    }

    func send(_ hop: EngineRequest) async throws -> EngineResponse<MutantBody> {
        do {
            return try await mutatedSend(hop)
        } catch {
            throw mutation == .opaqueFailures ? OpaqueEngineFailure() : error
        }
    }

    private func mutatedSend(_ hop: EngineRequest) async throws -> EngineResponse<MutantBody> {
        var hop = hop
        switch mutation {
        case .dropsRequestBody:
            hop.body = .none
        case .sendsKnownLengthBodyChunked:
            if case .bytes(let data) = hop.body {
                let chunks = RequestBodyChunks { _ in
                    var sent = false
                    return RequestBodyChunks.Iterator {
                        defer { sent = true }
                        return sent ? nil : data
                    }
                }
                hop.body = .stream(chunks, length: nil)
            }
        case .dropsRepeatedRequestFields:
            var seen = Set<HeaderField.Name>()
            hop.head.headerFields = HeaderFields(hop.head.headerFields.filter { seen.insert($0.name).inserted })
        case .lowercasesRequestValues:
            hop.head.headerFields = HeaderFields(
                hop.head.headerFields.map { HeaderField(name: $0.name, value: $0.value.lowercased()) })
        case .sendsAFileOnce:
            if case .file(let url, let length) = hop.body, !sentFiles.withLock({ $0.insert(url).inserted }) {
                hop.body = .bytes(Data(count: Int(length)))
            }
        default:
            break
        }
        var response: EngineResponse<SocketBody>
        if mutation == .ignoresDeadline || mutation == .ignoresCancellation {
            let sent = hop
            response = try await Task.detached { try await SocketEngine().send(sent) }.value
        } else {
            response = try await SocketEngine().send(hop)
        }
        var redirects = 0
        let follows = mutation == .followsRedirects || mutation == .followsRedirectsDroppingAuthorization
        let first = hop.head.url
        while follows, (300..<400).contains(response.head.status), redirects < 5,
            let location = response.head.headerFields["Location"],
            let target = URL(string: location, relativeTo: hop.head.url)?.absoluteURL,
            let head = RequestHead(
                method: .get, url: target,
                headerFields: HeaderFields(
                    hop.head.headerFields.filter { field in
                        let crosses = target.host != first?.host || target.port != first?.port
                        return mutation != .followsRedirectsDroppingAuthorization || !crosses
                            || field.name != "Authorization"
                    }))
        {
            redirects += 1
            hop = EngineRequest(head: head)
            response = try await SocketEngine().send(hop)
        }
        var head = response.head
        switch mutation {
        case .reordersRepeatedResponseFields:
            var fields = HeaderFields()
            for field in head.headerFields where !fields.contains(field.name) {
                for value in head.headerFields[values: field.name].reversed() {
                    fields.append(HeaderField(name: field.name, value: value))
                }
            }
            head.headerFields = fields
        case .lowercasesResponseValues:
            head.headerFields = HeaderFields(
                head.headerFields.map { HeaderField(name: $0.name, value: $0.value.lowercased()) })
        default:
            break
        }
        let decodes = mutation == .decodesGzipUndeclared && head.headerFields["Content-Encoding"] == "gzip"
        let readAhead = mutation == .ignoresCancellation ? Self.readAhead(response.body) : nil
        return EngineResponse(
            head: head, httpVersion: response.httpVersion,
            body: MutantBody(base: response.body, mutation: mutation, decodesGzip: decodes, readAhead: readAhead))
    }

    /// The pieces of `body`, read from now on by a detached task that keeps its own iterator (and so the connection)
    /// until the body ends or fails: the reading stops neither when the reader's task is cancelled nor when the
    /// stream is let go, and pieces nobody takes any more are dropped.
    private static func readAhead(_ body: SocketBody) -> AsyncThrowingStream<Data, any Error> {
        let (pieces, continuation) = AsyncThrowingStream.makeStream(of: Data.self)
        Task.detached {
            do {
                for try await piece in body { continuation.yield(piece) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        return pieces
    }
}

/// A `SocketBody`, read with the engine's mutation.
struct MutantBody: AsyncSequence, Sendable {
    let base: SocketBody
    let mutation: Mutation
    let decodesGzip: Bool
    /// The body as read ahead since the head came (``Mutation/ignoresCancellation``), or `nil`.
    let readAhead: AsyncThrowingStream<Data, any Error>?

    func makeAsyncIterator() -> Iterator {
        Iterator(
            base: decodesGzip || readAhead != nil ? nil : base.makeAsyncIterator(),
            decoded: decodesGzip ? DecodedBody(base: base, coding: .gzip).makeAsyncIterator() : nil,
            readAhead: readAhead?.makeAsyncIterator(),
            mutation: mutation)
    }

    struct Iterator: AsyncIteratorProtocol {
        var base: SocketBody.Iterator?
        var decoded: DecodedBody<SocketBody>.AsyncIterator?
        var readAhead: AsyncThrowingStream<Data, any Error>.AsyncIterator?
        let mutation: Mutation
        var ended = false

        mutating func next() async throws -> Data? {
            guard !ended else { return nil }
            do {
                return try await basePiece()
            } catch {
                switch mutation {
                case .swallowsBodyFailure:
                    ended = true
                    return nil
                case .bytesAfterStop:
                    ended = true
                    return Data("bytes after the stop".utf8)
                case .opaqueFailures:
                    throw OpaqueEngineFailure()
                default:
                    throw error
                }
            }
        }

        private mutating func basePiece() async throws -> Data? {
            if decoded != nil { return try await decoded!.next() }
            if readAhead != nil { return try await readAhead!.next() }
            return try await base!.next()
        }
    }
}
