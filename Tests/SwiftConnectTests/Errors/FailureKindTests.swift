import Foundation
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The engine-neutral failure kinds: one table from URLSession's codes, and the adapter for code that compared
/// `kind == .transport`.
final class FailureKindTests: XCTestCase {
    func testURLErrorCodesBecomeTheKindsTheyName() {
        let expected: [(URLError.Code, ConnectError.Kind)] = [
            (.cancelled, .cancelled),
            (.timedOut, .timedOut),
            (.cannotConnectToHost, .cannotConnect),
            (.notConnectedToInternet, .cannotConnect),
            (.cannotFindHost, .nameResolution),
            (.dnsLookupFailed, .nameResolution),
            (.networkConnectionLost, .connectionLost),
            (.secureConnectionFailed, .secureConnection),
            (.serverCertificateUntrusted, .untrustedCertificate),
            (.serverCertificateHasBadDate, .untrustedCertificate),
            (.badServerResponse, .badResponse),
            (.cannotDecodeContentData, .transport),
            (.badURL, .transport),
            (.resourceUnavailable, .transport),
            // The session cancelled an authentication challenge, not the caller.
            (.userCancelledAuthentication, .transport),
        ]
        for (code, kind) in expected {
            XCTAssertEqual(ConnectError.Kind(code), kind, "URLError \(code.rawValue)")
        }
    }

    func testTheFinerKindsAreTransportFailures() {
        let transportKinds: Set<ConnectError.Kind> = [
            .transport, .cannotConnect, .nameResolution, .connectionLost, .secureConnection, .untrustedCertificate,
            .badResponse,
        ]
        for kind in ConnectError.Kind.allCases {
            let error = ConnectError(kind, message: "x")
            XCTAssertEqual(error.isTransportFailure, transportKinds.contains(kind), kind.rawValue)
        }
    }

    func testATransportsURLErrorIsClassifiedWithTheEngineErrorKept() {
        let request = URLRequest(url: URL(string: "https://example.invalid/items")!)
        let error = ConnectError.transportFailure(.reported(URLError(.networkConnectionLost)), request: request)
        XCTAssertEqual(error.kind, .connectionLost)
        XCTAssertEqual(error.urlError?.code, .networkConnectionLost)
        XCTAssertTrue(error.description.hasPrefix("Connection lost:"), error.description)
    }

    /// FoundationNetworking says `.unknown` for libcurl failures it has no code for; their message names them
    /// (`ConnectError.cutShort(_:)`). Any other `.unknown` stays a plain transport failure.
    func testLibcurlsUnnamedFailuresAreNamedByTheirMessage() {
        let request = URLRequest(url: URL(string: "http://10.214.1.2:8080/items")!)
        let cases: [(message: String, kind: ConnectError.Kind)] = [
            ("Failed to connect to 10.214.1.2 port 8080 after 0 ms: Couldn't connect to server", .cannotConnect),
            ("Recv failure: No route to host", .connectionLost),
            ("Send failure: Network is unreachable", .connectionLost),
            ("transfer closed with 992 bytes remaining to read", .connectionLost),
            ("Error while processing content unencoding: invalid code lengths set", .transport),
            // A chunk size that is not a number, or too long for one, as AsyncHTTPClient's parser reports it.
            ("Illegal or missing hexadecimal sequence in chunked-encoding", .badResponse),
            ("Too long hexadecimal number in chunked-encoding", .badResponse),
            ("Malformed encoding found in chunked-encoding", .badResponse),
            // A head larger than libcurl holds, as AsyncHTTPClient reports one.
            ("Too large response headers: 312572 > 307200", .badResponse),
        ]
        for (message, kind) in cases {
            let urlError = URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: message])
            let error = ConnectError.transportFailure(.reported(urlError), request: request)
            XCTAssertEqual(error.kind, kind, message)
            XCTAssertEqual(error.urlError?.localizedDescription, message, "libcurl's message is kept")
        }
    }

    /// libcurl's "Empty reply from server" is a connection closed before any byte of an answer: Apple's URLSession
    /// and AsyncHTTPClient report a lost connection; FoundationNetworking says `badServerResponse`.
    func testAnEmptyReplyIsALostConnection() {
        let request = URLRequest(url: URL(string: "http://127.0.0.1:8080/items")!)
        let empty = URLError(.badServerResponse, userInfo: [NSLocalizedDescriptionKey: "Empty reply from server"])
        let error = ConnectError.transportFailure(.reported(empty), request: request)
        XCTAssertEqual(error.kind, .connectionLost)
        XCTAssertEqual(error.urlError?.localizedDescription, "Empty reply from server", "libcurl's message is kept")

        let other = URLError(.badServerResponse, userInfo: [NSLocalizedDescriptionKey: "something else"])
        XCTAssertEqual(ConnectError.transportFailure(.reported(other), request: request).kind, .badResponse)
    }
}
