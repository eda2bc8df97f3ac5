import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOSSL
import SwiftConnect
import XCTest

@testable import SwiftConnectAsyncHTTPClient

/// The classification table, read with errors made here as AsyncHTTPClient and SwiftNIO make them: the kind a
/// ``SwiftConnect/RetryPolicy`` reads, the engine's error kept underneath. Failures a loopback server
/// cannot cause (a stream reset by an HTTP/2 server) are checked here only.
final class ErrorClassificationTests: XCTestCase {
    /// Each error, the kind it must have, and why.
    private let table: [(error: any Error, kind: ConnectError.Kind, why: String)] = [
        (IOError(errnoCode: ECONNREFUSED, reason: "connect(descriptor:addr:size:)"), .cannotConnect, "refused"),
        (HTTPClientError.connectTimeout, .timedOut, "connect timeout"),
        (HTTPClientError.readTimeout, .timedOut, "read timeout"),
        (HTTPClientError.remoteConnectionClosed, .connectionLost, "closed mid-body"),
        (HTTPClientError.cancelled, .cancelled, "cancelled"),
        (CancellationError(), .cancelled, "task cancelled"),
        (NIOSSLError.handshakeFailed(.sslError([])), .secureConnection, "TLS handshake"),
        // An HTTP/2 server that resets the stream (`RST_STREAM`), or refuses it as it goes away (`GOAWAY`): the
        // connection's exchange was lost, as URLSession reports it (`networkConnectionLost`).
        (NIOHTTP2Errors.streamClosed(streamID: 1, errorCode: .refusedStream), .connectionLost, "refused stream"),
        (NIOHTTP2Errors.streamClosed(streamID: 3, errorCode: .internalError), .connectionLost, "reset stream"),
        // The server's answer that is not HTTP.
        (HTTPParserError.invalidStatus, .badResponse, "not HTTP"),
    ]

    func testEachEngineErrorHasTheKindURLSessionGivesTheSameFailure() {
        for (error, kind, why) in table {
            let classified = ErrorClassification.connectError(error, timeout: nil)
            XCTAssertEqual(classified.kind, kind, "\(why): \(error) → \(classified)")
        }
    }

    func testTheEnginesErrorIsKeptUnderneath() {
        for (error, _, why) in table {
            let classified = ErrorClassification.connectError(error, timeout: nil)
            XCTAssertEqual(
                classified.underlyingError.map { String(reflecting: $0) }, String(reflecting: error), "\(why)")
        }
    }
}
