import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How much of an error body the error handlers parse for a message: at most `ErrorBody.messageBodyLimit` bytes,
/// nested at most `Redaction.maximumJSONDepth` levels. A larger or deeper body gives an HTTP-status error with the
/// body kept, on every engine (the check is the core's), rather than a parse of megabytes for a message of a line.
final class ErrorMessageBodyLimitTests: XCTestCase {
    typealias Endpoint = ClientFixtures.Endpoint

    /// A handler of the usage guide's kind that records the objects it is asked about.
    private struct SpyHandler: ErrorHandling {
        let asked = Counter()

        func handle(response: [String: Any]) -> (any Error)? {
            asked.increment()
            return ErrorHandler().handle(response: response)
        }
    }

    /// `{"message":"Quota exceeded","padding":"xx…"}`, exactly `size` bytes.
    private static func messageBody(size: Int) -> Data {
        let start = #"{"message":"Quota exceeded","padding":""#
        let end = #""}"#
        let padding = String(repeating: "x", count: size - start.utf8.count - end.utf8.count)
        return Data((start + padding + end).utf8)
    }

    /// `{"message":"Quota exceeded","data":[[…]]}`, its list `depth` levels deep.
    private static func nestedBody(depth: Int) -> Data {
        let list = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        return Data((#"{"message":"Quota exceeded","data":"# + list + "}").utf8)
    }

    private func error(
        for body: Data, handler: any ErrorHandling = ErrorHandler(), file: StaticString = #filePath,
        line: UInt = #line
    ) -> ConnectError? {
        let connect = Connect(
            transport: FakeTransport.answering(
                .data(body, status: 429, headers: ["Content-Type": "application/json"])),
            errorHandler: handler,
            retryPolicy: nil)
        return connectError(of: connect.request(Endpoint()), file: file, line: line)
    }

    func testTheBoundIsSixtyFourKiB() {
        XCTAssertEqual(ErrorBody.messageBodyLimit, 64 * 1_024)
    }

    func testAJSONBodyAtTheBoundGivesItsMessage() {
        let body = Self.messageBody(size: ErrorBody.messageBodyLimit)
        let error = error(for: body)
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "Quota exceeded")
    }

    /// A body one byte over the bound is not parsed: the error says the status and keeps the body whole.
    func testAJSONBodyOverTheBoundIsNotParsedForAMessage() {
        let body = Self.messageBody(size: ErrorBody.messageBodyLimit + 1)
        let error = error(for: body)
        XCTAssertEqual(error?.kind, .httpStatus)
        XCTAssertEqual(error?.message, "the server answered 429 Too Many Requests")
        XCTAssertEqual(error?.statusCode, 429)
        XCTAssertEqual(error?.body, body)
    }

    /// The protocol's default `handle(_:)` does not parse such a body either: the usage guide's
    /// `handle(response:)` is not asked, and the answer is an HTTP-status error, never a success.
    func testACustomHandlerIsNotAskedAboutABodyOverTheBound() {
        let spy = SpyHandler()
        let small = error(for: Self.messageBody(size: 1_024), handler: spy)
        XCTAssertEqual(small?.message, "Quota exceeded")
        XCTAssertEqual(spy.asked.value, 1)

        let large = error(for: Self.messageBody(size: 8 << 20), handler: spy)
        XCTAssertEqual(large?.kind, .httpStatus)
        XCTAssertEqual(spy.asked.value, 1, "the 8 MiB body was parsed for the handler")
    }

    /// The bound counts the bytes received: a UTF-16 body over it is not transcoded and parsed either.
    func testAUTF16BodyOverTheBoundIsNotParsed() throws {
        let text = String(decoding: Self.messageBody(size: ErrorBody.messageBodyLimit / 2 + 8), as: UTF8.self)
        let body = try XCTUnwrap(text.data(using: .utf16LittleEndian))
        XCTAssertGreaterThan(body.count, ErrorBody.messageBodyLimit)
        XCTAssertEqual(error(for: body)?.kind, .httpStatus)
    }

    /// A body nested deeper than the logs read JSON (`Redaction.maximumJSONDepth`) is no error message: it is not
    /// parsed, so no handler walks or re-serialises it level by level on a small thread stack.
    func testAJSONBodyNestedDeeperThanTheLogsReadIsNotParsed() {
        let spy = SpyHandler()
        let shallow = error(for: Self.nestedBody(depth: Redaction.maximumJSONDepth - 1), handler: spy)
        XCTAssertEqual(shallow?.message, "Quota exceeded")
        XCTAssertEqual(spy.asked.value, 1)

        let body = Self.nestedBody(depth: Redaction.maximumJSONDepth)
        let deep = error(for: body, handler: spy)
        XCTAssertEqual(deep?.kind, .httpStatus)
        XCTAssertEqual(deep?.body, body)
        XCTAssertEqual(spy.asked.value, 1, "the deep body was parsed for the handler")
        XCTAssertEqual(error(for: body)?.kind, .httpStatus)
    }
}
