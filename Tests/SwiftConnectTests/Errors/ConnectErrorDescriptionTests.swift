import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a `ConnectError` says about itself to code that knows only `Error`: `localizedDescription`, as alerts,
/// loggers and `NSError` bridging read it.
final class ConnectErrorDescriptionTests: XCTestCase {
    /// A 403 whose message echoes the request's bearer token.
    private func forbiddenError() throws -> ConnectError {
        let token = "tok-5ecret-4321"
        let connect = Connect(
            transport: FakeTransport.answering(
                .json(string: #"{"message":"token \#(token) may not read this"}"#, status: 403)),
            retryPolicy: nil)
        let connector = ConfigurableConnector(
            baseURL: URL(string: "https://api.example.com")!, endpoint: "/reports",
            authorizationToken: .bearer(token: token))
        return try XCTUnwrap(connectError(of: connect.request(connector)))
    }

    /// Code that sees only `any Error` (an alert, a logger, a `catch` in generic code) reads `localizedDescription`:
    /// it says what the error's description says (stage, message, request, status), not Foundation's "The operation
    /// could not be completed. (SwiftConnect.ConnectError error 9.)".
    func testLocalizedDescriptionSaysWhatFailed() throws {
        let error = try forbiddenError()
        let anyError: any Error = error

        XCTAssertEqual(anyError.localizedDescription, error.description)
        XCTAssertEqual((anyError as NSError).localizedDescription, error.description)
        XCTAssertTrue(anyError.localizedDescription.contains("may not read this"), anyError.localizedDescription)
        XCTAssertTrue(anyError.localizedDescription.contains("(HTTP 403)"), anyError.localizedDescription)
        XCTAssertFalse(anyError.localizedDescription.contains("tok-5ecret-4321"), anyError.localizedDescription)
    }

    /// Every kind has a localized description that names its stage.
    func testEveryKindHasALocalizedDescription() {
        for kind in ConnectError.Kind.allCases {
            let error: any Error = ConnectError(kind, message: "what went wrong")
            XCTAssertTrue(error.localizedDescription.hasSuffix(": what went wrong"), error.localizedDescription)
            XCTAssertFalse(error.localizedDescription.contains("could not be completed"), error.localizedDescription)
        }
    }
}
