import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Servers that answer in ways HTTP allows but few do, or in ways it does not, written byte for byte by a
/// ``LocalServer`` on 127.0.0.1: every engine must give the caller the same value, or the same kind of error.
final class OddServerTests: IntegrationTestCase {
    private var server: LocalServer!
    private var connect: Connect!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
    }

    override func tearDown() {
        connect.cancelAllRequests()
        server.stop()
        server = nil
        connect = nil
    }

    private func route(_ path: String, method: HTTPMethod = .get, options: RequestOptions = RequestOptions()) -> Route {
        Route(path, baseURL: server.baseURL, method: method, timeout: 10, options: options)
    }

    /// Answers `path` with exactly `bytes`, head included, then closes the connection; `Connection: close` is added
    /// to the head when missing (the server does close: see `ResponseFramingTests.rawRoute`).
    private func rawRoute(_ path: String, _ bytes: Data) {
        var bytes = bytes
        if bytes.range(of: Data("\r\nConnection: close\r\n".utf8)) == nil, let end = bytes.range(of: Data("\r\n".utf8))
        {
            bytes.insert(contentsOf: Data("Connection: close\r\n".utf8), at: end.upperBound)
        }
        let answer = bytes
        server.route("*", path) { _ in LocalServer.Response().withFault(.raw(answer)) }
    }

    private func rawRoute(_ path: String, _ text: String) { rawRoute(path, Data(text.utf8)) }

    /// Whether the engine is FoundationNetworking's URLSession (Linux), whose own defects some tests name.
    private static var isFoundationNetworking: Bool {
        #if canImport(FoundationNetworking)
            return TransportUnderTest.isURLSession
        #else
            return false
        #endif
    }

    /// FoundationNetworking's header callback refuses some heads that libcurl reads ("Failed writing header",
    /// `URLError.unknown`): the call fails with a typed error where other engines answer. Asserts that, on it.
    private func assertRefusedByFoundationNetworking(
        _ future: Future<ConnectResponse>, file: StaticString = #filePath, line: UInt = #line
    ) {
        let error = connectError(of: future, file: file, line: line)
        XCTAssertEqual(error?.kind, .transport, String(describing: error), file: file, line: line)
        XCTAssertTrue(error?.message.contains("Failed writing header") ?? false, file: file, line: line)
    }

    /// Each way an engine runs an exchange: plain, with a size limit, with progress reports.
    private let everyPath = [
        RequestOptions(), RequestOptions(maxResponseBytes: 1 << 20), RequestOptions(progress: { _ in }),
    ]

    // MARK: - Framing

    func testABodyLongerThanItsContentLengthIsCutAtTheLength() throws {
        rawRoute("/long", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef")

        for options in everyPath {
            let body = value(of: connect.request(route("/long", options: options)))
            XCTAssertEqual(body, Data("abc".utf8))
        }
    }

    func testAChunkedBodyCutInsideAChunkIsALostConnection() throws {
        rawRoute("/cut", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\na\r\nabc")

        for options in everyPath {
            let error = connectError(of: connect.request(route("/cut", options: options)))
            XCTAssertEqual(error?.kind, .connectionLost, String(describing: error))
        }
    }

    func testAChunkedBodyCutBeforeItsLastChunkIsALostConnection() throws {
        rawRoute("/cut", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")

        for options in everyPath {
            let error = connectError(of: connect.request(route("/cut", options: options)))
            XCTAssertEqual(error?.kind, .connectionLost, String(describing: error))
        }
    }

    /// A chunked body that ends with trailer fields (RFC 9112 §7.1.2): the body is the chunks' bytes, whole, and the
    /// trailer's lines are neither part of it nor mistaken for its end.
    /// On FoundationNetworking the answer stops the process ("Transfer completed, but there's no response"): libcurl
    /// hands the trailer's lines to the header callback. Not run there; `FoundationNetworkingProcessStopTests` notices
    /// when that is fixed (SECURITY.md, "Known platform flaws").
    func testAChunkedBodyWithTrailerFieldsIsTheChunksWhole() throws {
        if Self.isFoundationNetworking {
            throw XCTSkip("trailer fields stop the process on FoundationNetworking")
        }
        rawRoute(
            "/trailers",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum, X-Count\r\n\r\n"
                + "5\r\nhello\r\n6\r\n world\r\n0\r\nX-Checksum: abc123\r\nX-Count: 2\r\n\r\n")

        for options in everyPath {
            let response = value(of: connect.response(for: route("/trailers", options: options)))
            XCTAssertEqual(response?.statusCode, 200)
            XCTAssertEqual(response.map { String(decoding: $0.data, as: UTF8.self) }, "hello world")
        }
    }

    func testAnInvalidChunkSizeIsABadServerResponse() throws {
        rawRoute("/letters", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n")
        rawRoute(
            "/overflow", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nabc\r\n0\r\n\r\n")

        for path in ["/letters", "/overflow"] {
            for options in everyPath {
                let error = connectError(of: connect.request(route(path, options: options)))
                XCTAssertEqual(error?.kind, .badResponse, "\(path): \(String(describing: error))")
            }
        }
    }

    // MARK: - Content codings

    /// "hello" as gzip (no name, no time).
    private static let gzippedHello = Data(base64Encoded: "H4sIAAAAAAACA8tIzcnJBwCGphA2BQAAAA==")!
    /// "hello" as zlib-wrapped deflate (RFC 1950), then as raw deflate (RFC 1951).
    private static let zlibHello = Data(base64Encoded: "eJzLSM3JyQcABiwCFQ==")!
    private static let rawDeflateHello = Data(base64Encoded: "y0jNyckHAA==")!

    private func encodedRoute(_ path: String, coding: String, _ body: Data) {
        rawRoute(
            path,
            Data("HTTP/1.1 200 OK\r\nContent-Encoding: \(coding)\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
    }

    func testEveryEngineAsksForAndDecodesGzipAndDeflate() throws {
        encodedRoute("/gzip", coding: "gzip", Self.gzippedHello)
        encodedRoute("/upper", coding: "GZIP", Self.gzippedHello)
        encodedRoute("/x-gzip", coding: "x-gzip", Self.gzippedHello)
        encodedRoute("/zlib", coding: "deflate", Self.zlibHello)
        encodedRoute("/raw", coding: "deflate", Self.rawDeflateHello)
        encodedRoute("/identity", coding: "identity", Data("hello".utf8))

        for path in ["/gzip", "/upper", "/x-gzip", "/zlib", "/raw", "/identity"] {
            for options in everyPath {
                let body = value(of: connect.request(route(path, options: options)))
                XCTAssertEqual(body.map { String(decoding: $0, as: UTF8.self) }, "hello", path)
            }
        }
        // Asked for: both codings announced on every request that set no Accept-Encoding of its own.
        for request in server.requests {
            let asked = (request.header("Accept-Encoding") ?? "").lowercased()
            XCTAssertTrue(asked.contains("gzip") && asked.contains("deflate"), "\(request.path): \(asked)")
        }
    }

    /// A transfer coding other than `chunked` (RFC 9112 §7) reaches the caller decoded, as libcurl decodes it:
    /// AsyncHTTPClient's parser removes the chunks and hands the gzip bytes over, which went to the caller as the body.
    func testAGzipTransferCodingIsDecoded() throws {
        let hex = String(Self.gzippedHello.count, radix: 16)
        rawRoute(
            "/chunked",
            Data("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n\(hex)\r\n".utf8) + Self.gzippedHello
                + Data("\r\n0\r\n\r\n".utf8))
        rawRoute("/to-close", Data("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n".utf8) + Self.gzippedHello)

        for path in ["/chunked", "/to-close"] {
            for options in everyPath {
                let body = value(of: connect.request(route(path, options: options)))
                XCTAssertEqual(body.map { String(decoding: $0, as: UTF8.self) }, "hello", path)
            }
        }
    }

    func testAnEncodedAnswerWithoutABodyIsEmpty() throws {
        let gzip = "Content-Encoding: gzip\r\nContent-Length: \(Self.gzippedHello.count)\r\n"
        rawRoute("/head", "HTTP/1.1 200 OK\r\n\(gzip)\r\n")
        rawRoute("/no-content", "HTTP/1.1 204 No Content\r\nContent-Encoding: gzip\r\n\r\n")
        rawRoute("/empty", "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 0\r\n\r\n")

        for options in everyPath {
            let head = value(of: connect.response(for: route("/head", method: .head, options: options)))
            XCTAssertEqual(head?.statusCode, 200)
            XCTAssertEqual(head?.data, Data())
            let noContent = value(of: connect.response(for: route("/no-content", options: options)))
            XCTAssertEqual(noContent?.statusCode, 204)
            XCTAssertEqual(noContent?.data, Data())
            let empty = value(of: connect.response(for: route("/empty", options: options)))
            XCTAssertEqual(empty?.data, Data())
        }
    }

    // MARK: - Bodiless answers

    func testAHeadAnswersLengthIsKeptAndNoBodyIsRead() throws {
        rawRoute("/head", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")

        for options in everyPath {
            let head = value(of: connect.response(for: route("/head", method: .head, options: options)))
            XCTAssertEqual(head?.statusCode, 200)
            XCTAssertEqual(head?.data, Data())
            XCTAssertEqual(head?.header("Content-Length"), "5")
        }
    }

    func testA304WithABodyIsA304WithoutOne() throws {
        rawRoute("/cached", "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nContent-Length: 5\r\n\r\nhello")
        let everyPath = [
            RequestOptions(acceptsEveryStatus: true), RequestOptions(maxResponseBytes: 2, acceptsEveryStatus: true),
            RequestOptions(progress: { _ in }, acceptsEveryStatus: true),
        ]
        for options in everyPath {
            let response = value(of: connect.response(for: route("/cached", options: options)))
            XCTAssertEqual(response?.statusCode, 304)
            XCTAssertEqual(response?.data, Data())
            XCTAssertEqual(response?.header("ETag"), "\"v1\"")
        }
    }

    // MARK: - Status lines

    func testEarlyHintsBeforeTheFinalAnswerAreSkipped() throws {
        rawRoute(
            "/hints",
            "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
                + "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")

        for options in everyPath {
            let response = value(of: connect.response(for: route("/hints", options: options)))
            XCTAssertEqual(response?.statusCode, 200)
            XCTAssertEqual(response?.data, Data("ok".utf8))
            XCTAssertNil(response?.header("Link"), "the 103's fields are not the answer's")
        }
    }

    func testAStatusLineWithAnUnusualReasonIsReadByItsCode() throws {
        rawRoute("/blank", "HTTP/1.1 200 \r\nContent-Length: 2\r\n\r\nok")
        rawRoute("/odd", "HTTP/1.1 200 Fine, thanks: all (mostly) good!\r\nContent-Length: 2\r\n\r\nok")
        rawRoute("/unknown", "HTTP/1.1 299 Whatever\r\nContent-Length: 2\r\n\r\nok")

        for (path, status) in [("/blank", 200), ("/odd", 200), ("/unknown", 299)] {
            for options in everyPath {
                let response = value(of: connect.response(for: route(path, options: options)))
                XCTAssertEqual(response?.statusCode, status, path)
                XCTAssertEqual(response?.data, Data("ok".utf8), path)
            }
        }
    }

    func testAThreeDigitStatusAbove599IsAnErrorStatusOfTheServers() throws {
        rawRoute("/600", "HTTP/1.1 600 Odd\r\nContent-Length: 2\r\n\r\nno")
        rawRoute("/999", "HTTP/1.1 999 Odder\r\nContent-Length: 2\r\n\r\nno")

        for (path, status) in [("/600", 600), ("/999", 999)] {
            for options in everyPath {
                let error = connectError(of: connect.response(for: route(path, options: options)))
                XCTAssertEqual(error?.kind, .httpStatus, String(describing: error))
                XCTAssertEqual(error?.statusCode, status, path)
                var accepting = options
                accepting.acceptsEveryStatus = true
                let response = value(of: connect.response(for: route(path, options: accepting)))
                XCTAssertEqual(response?.statusCode, status, path)
                XCTAssertEqual(response?.data, Data("no".utf8), path)
            }
        }
    }

    func testAStatusOfOtherThanThreeDigitsIsAMalformedAnswer() throws {
        rawRoute("/four", "HTTP/1.1 2000 Big\r\nContent-Length: 2\r\n\r\nok")
        rawRoute("/two", "HTTP/1.1 20 Small\r\nContent-Length: 2\r\n\r\nok")
        rawRoute("/zero", "HTTP/1.1 000 None\r\nContent-Length: 2\r\n\r\nok")
        // Three digits below 100 stop the process under AsyncHTTPClient 1.37 (SECURITY.md says so).
        let paths = TransportUnderTest.isURLSession ? ["/four", "/two", "/zero"] : ["/four", "/two"]

        for path in paths {
            for options in everyPath {
                var accepting = options
                accepting.acceptsEveryStatus = true
                let error = connectError(of: connect.response(for: route(path, options: accepting)))
                XCTAssertEqual(error?.kind, .badResponse, "\(path): \(String(describing: error))")
            }
        }
    }

    func testAStatusLineWithoutAReasonIsReadByItsCode() throws {
        rawRoute("/none", "HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok")

        for options in everyPath {
            guard !Self.isFoundationNetworking else {
                assertRefusedByFoundationNetworking(connect.response(for: route("/none", options: options)))
                continue
            }
            let response = value(of: connect.response(for: route("/none", options: options)))
            XCTAssertEqual(response?.statusCode, 200)
            XCTAssertEqual(response?.data, Data("ok".utf8))
        }
    }

    func testAStatusLineWithANonASCIIReasonIsReadByItsCode() throws {
        let reason = Data("Tr".utf8) + Data([0xE8]) + Data("s bien".utf8)
        rawRoute("/latin", Data("HTTP/1.1 200 ".utf8) + reason + Data("\r\nContent-Length: 2\r\n\r\nok".utf8))

        for options in everyPath {
            guard !Self.isFoundationNetworking else {
                assertRefusedByFoundationNetworking(connect.response(for: route("/latin", options: options)))
                continue
            }
            let response = value(of: connect.response(for: route("/latin", options: options)))
            XCTAssertEqual(response?.statusCode, 200)
            XCTAssertEqual(response?.data, Data("ok".utf8))
        }
    }

    func testAnInformationalAnswerBeforeTheFinalOneIsSkipped() throws {
        rawRoute(
            "/continue",
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")

        for options in everyPath {
            let response = value(of: connect.response(for: route("/continue", options: options)))
            XCTAssertEqual(response?.statusCode, 200)
            XCTAssertEqual(response?.data, Data("ok".utf8))
        }
    }

    func testAnHTTP10AnswerEndsWithItsConnection() throws {
        rawRoute("/old", "HTTP/1.0 200 OK\r\n\r\nthe whole body")

        for options in everyPath {
            let body = value(of: connect.request(route("/old", options: options)))
            XCTAssertEqual(body.map { String(decoding: $0, as: UTF8.self) }, "the whole body")
        }
    }

    // MARK: - Header fields

    func testAFoldedHeaderValueIsUnfolded() throws {
        rawRoute("/folded", "HTTP/1.1 200 OK\r\nX-Folded: one\r\n two\r\nContent-Length: 2\r\n\r\nok")

        for options in everyPath {
            guard TransportUnderTest.isURLSession else {
                // AsyncHTTPClient's parser (llhttp) refuses any obs-fold ("invalid character in header"), which
                // RFC 9112, 5.2 lets a user agent unfold: a typed error, not a value.
                let error = connectError(of: connect.response(for: route("/folded", options: options)))
                XCTAssertEqual(error?.kind, .badResponse, String(describing: error))
                continue
            }
            let response = value(of: connect.response(for: route("/folded", options: options)))
            XCTAssertEqual(response?.data, Data("ok".utf8))
            // RFC 9112, 5.2: a recipient replaces each obs-fold with one or more spaces.
            let folded = response?.header("X-Folded")?.split(separator: " ", omittingEmptySubsequences: true)
            XCTAssertEqual(folded, ["one", "two"], String(describing: response?.header("X-Folded")))
        }
    }

    func testAHeaderValueInUTF8IsReadAsUTF8() throws {
        rawRoute("/utf8", "HTTP/1.1 200 OK\r\nX-Name: caf\u{E9}\r\nContent-Length: 2\r\n\r\nok")

        for options in everyPath {
            let response = value(of: connect.response(for: route("/utf8", options: options)))
            XCTAssertEqual(response?.data, Data("ok".utf8))
            XCTAssertEqual(response?.header("X-Name"), "caf\u{E9}")
        }
    }

    func testAHeaderValueInLatin1IsKept() throws {
        let field = Data("X-Latin: caf".utf8) + Data([0xE9]) + Data("\r\n".utf8)
        rawRoute("/latin1", Data("HTTP/1.1 200 OK\r\n".utf8) + field + Data("Content-Length: 2\r\n\r\nok".utf8))

        for options in everyPath {
            guard !Self.isFoundationNetworking else {
                assertRefusedByFoundationNetworking(connect.response(for: route("/latin1", options: options)))
                continue
            }
            let response = value(of: connect.response(for: route("/latin1", options: options)))
            XCTAssertEqual(response?.data, Data("ok".utf8))
            XCTAssertNotNil(response?.header("X-Latin"))
        }
    }

    func testManyHeaderFieldsAreAllKept() throws {
        let fields = (0..<300).map { "X-Field-\($0): value \($0)\r\n" }.joined()
        rawRoute("/many", "HTTP/1.1 200 OK\r\n\(fields)Content-Length: 2\r\n\r\nok")

        for options in everyPath {
            let response = value(of: connect.response(for: route("/many", options: options)))
            XCTAssertEqual(response?.data, Data("ok".utf8))
            XCTAssertEqual(response?.header("X-Field-0"), "value 0")
            XCTAssertEqual(response?.header("X-Field-299"), "value 299")
        }
    }

    func testALongHeaderValueIsKept() throws {
        let value = String(repeating: "v", count: 60_000)
        rawRoute("/long", "HTTP/1.1 200 OK\r\nX-Long: \(value)\r\nContent-Length: 2\r\n\r\nok")

        for options in everyPath {
            let response = self.value(of: connect.response(for: route("/long", options: options)))
            XCTAssertEqual(response?.header("X-Long")?.count, 60_000)
        }
    }

    func testAHeadTooLargeToHoldIsATypedError() throws {
        // 1 MiB of fields: past what libcurl holds (100 KiB a field, 300 KiB in all)
        let value = String(repeating: "v", count: 8_000)
        let fields = (0..<128).map { "X-Field-\($0): \(value)\r\n" }.joined()
        rawRoute("/huge", "HTTP/1.1 200 OK\r\n\(fields)Content-Length: 2\r\n\r\nok")

        for options in everyPath {
            let error = connectError(of: connect.response(for: route("/huge", options: options)))
            XCTAssertEqual(error?.kind, .badResponse, String(describing: error))
        }
    }

    // MARK: - Connections

    func testAServerThatClosesWithoutAnsweringIsALostConnection() throws {
        server.route("GET", "/drop") { _ in LocalServer.Response().withFault(.closeBeforeHeaders) }

        for options in everyPath {
            let error = connectError(of: connect.request(route("/drop", options: options)))
            XCTAssertEqual(error?.kind, .connectionLost, String(describing: error))
        }
    }

    func testAGETOnAKeptConnectionTheServerClosedIsSentAgainOnANewOne() throws {
        // Given a connection kept open after a first answer, which the server closes when the next request arrives
        let attempts = Protected(0)
        server.route("GET", "/first") { _ in .text("first") }
        server.route("GET", "/second") { _ in
            let attempt = attempts.withLock { count -> Int in
                count += 1
                return count
            }
            return attempt == 1 ? LocalServer.Response().withFault(.closeBeforeHeaders) : .text("second")
        }
        let retrying = Connect(transport: TransportUnderTest.make(), retryPolicy: RetryPolicy(baseDelay: 0))
        XCTAssertEqual(value(of: retrying.request(route("/first"))), Data("first".utf8))

        // When
        let second = value(of: retrying.request(route("/second")))

        // Then: a request safe to replay, unanswered on a reused connection, goes again on a new one (libcurl sends
        // it again itself; AsyncHTTPClient reports the connection lost, and the retry policy sends it again)
        XCTAssertEqual(second, Data("second".utf8))
        XCTAssertEqual(attempts.withLock { $0 }, 2)
        let kept = server.requests.first { $0.path == "/first" }?.connectionID
        let connections = server.requests.filter { $0.path == "/second" }.map(\.connectionID)
        XCTAssertEqual(connections.first, kept, "the first attempt went on the kept connection")
        XCTAssertEqual(Set(connections).count, 2, "the second on a new one")
    }
}
