import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import SwiftConnect
import XCTest

@testable import SwiftConnectAsyncHTTPClient

/// The classification table, read with errors made here as AsyncHTTPClient and SwiftNIO make them: the kind a
/// ``SwiftConnect/RetryPolicy`` reads, the engine's error kept underneath, and a message that never quotes
/// what the request carried. Failures a loopback server cannot cause (a stream reset by an HTTP/2 server, a proxy's
/// refusal) are checked here only.
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
        // The same event as `NIOSSLError.uncleanShutdown`: a TLS connection closed without `close_notify`.
        (HTTPClientError.uncleanShutdown, .connectionLost, "unclean TLS shutdown"),
        // An HTTP/2 server that resets the stream (`RST_STREAM`), or refuses it as it goes away (`GOAWAY`): the
        // connection's exchange was lost, as URLSession reports it (`networkConnectionLost`).
        (NIOHTTP2Errors.streamClosed(streamID: 1, errorCode: .refusedStream), .connectionLost, "refused stream"),
        (NIOHTTP2Errors.streamClosed(streamID: 3, errorCode: .internalError), .connectionLost, "reset stream"),
        // TLS agreed on a protocol AsyncHTTPClient does not speak: a failed secure connection, not a bad answer.
        (HTTPClientError.serverOfferedUnsupportedApplicationProtocol("h3"), .secureConnection, "ALPN"),
        // The proxy refused the tunnel: nothing reached the server.
        (HTTPClientError.invalidProxyResponse, .cannotConnect, "proxy refused the tunnel"),
        // The proxy wants credentials the configuration does not have: another attempt gets the same answer.
        (HTTPClientError.proxyAuthenticationRequired, .transport, "proxy authentication"),
        // What AsyncHTTPClient refuses to send: the request's fault, nothing sent, not the server's answer.
        (HTTPClientError.invalidHeaderFieldNames(["X Bad"]), .invalidRequest, "header name"),
        (HTTPClientError.invalidHeaderFieldValues(["Bearer SECRET-71\r\n"]), .invalidRequest, "header value"),
        (HTTPClientError.traceRequestWithBody, .invalidRequest, "TRACE with a body"),
        (HTTPClientError.unsupportedScheme("ftp"), .invalidRequest, "scheme"),
        (HTTPClientError.identityCodingIncorrectlyPresent, .invalidRequest, "identity coding"),
        // AsyncHTTPClient's own faults: not the server's answer, and not retried as one.
        (HTTPClientError.writeAfterRequestSent, .transport, "write after the request"),
        (HTTPClientError.internalStateFailure(), .transport, "internal state"),
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

    /// A name that resolves to no address at all (its A and AAAA answers both empty) is a failure to resolve it, as
    /// URLSession reports it (`cannotFindHost`), not a failure to connect: no address was ever tried. SwiftNIO then
    /// reports a `NIOConnectionError` with no DNS error and no connection error; made here by SwiftNIO itself, with
    /// a resolver that answers so.
    /// An engine timer that fires before the request's deadline (connecting to a host that drops SYNs, the TLS
    /// handshake, a read) says which: every timeout read "no complete response within the timeout", as if the request's
    /// deadline had passed. The deadline's own keeps that wording.
    func testAnEnginesTimeoutSaysWhichTimerFired() {
        let cases: [(any Error, String)] = [
            (HTTPClientError.connectTimeout, "connecting timed out"),
            (ChannelError.connectTimeout(.seconds(10)), "connecting timed out"),
            (HTTPClientError.tlsHandshakeTimeout, "TLS handshake timed out"),
            (HTTPClientError.readTimeout, "read timeout"),
            (HTTPClientError.getConnectionFromPoolTimeout, "no connection to the host was free"),
            (HTTPClientError.deadlineExceeded, "no complete response within the timeout of 60.0 s"),
        ]
        for (error, words) in cases {
            let failure = ErrorClassification.connectError(error, timeout: 60)
            XCTAssertEqual(failure.kind, .timedOut, "\(error)")
            XCTAssertTrue(failure.message.contains(words), "\(error): \(failure.message)")
        }
    }

    func testANameWithNoAddressIsANameResolutionFailure() throws {
        struct NoAddress: Resolver, Sendable {
            let loop: any EventLoop
            func initiateAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
                loop.makeSucceededFuture([])
            }
            func initiateAAAAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
                loop.makeSucceededFuture([])
            }
            func cancelQueries() {}
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()

        let connected = ClientBootstrap(group: loop).resolver(NoAddress(loop: loop))
            .connect(host: "nowhere.sc-lab.test", port: 80)
        let error = try XCTUnwrap(Result { try connected.wait() }.failureValue)

        XCTAssertTrue(error is NIOConnectionError, "\(error)")
        let classified = ErrorClassification.connectError(error, timeout: nil)
        XCTAssertEqual(classified.kind, .nameResolution, "\(classified)")
        XCTAssertTrue(classified.message.contains("nowhere.sc-lab.test"), classified.message)
    }

    /// AsyncHTTPClient's error for a header value it refuses quotes the value: an `Authorization`'s token, say.
    func testARefusedHeaderValueIsNotQuotedInTheMessage() {
        let error = HTTPClientError.invalidHeaderFieldValues(["Bearer SECRET-71\r\n"])

        let classified = ErrorClassification.connectError(error, timeout: nil)

        XCTAssertFalse(classified.message.contains("SECRET-71"), classified.message)
        XCTAssertFalse(classified.description.contains("SECRET-71"), classified.description)
    }

    /// A body on a `TRACE` is refused with the reason the core gives it.
    func testATraceWithABodyIsRefusedAsTheCoreRefusesIt() {
        let classified = ErrorClassification.connectError(HTTPClientError.traceRequestWithBody, timeout: nil)

        XCTAssertEqual(classified.invalidRequestReason, .bodyNotAllowed(method: "TRACE"))
    }
}

extension Result {
    /// The failure, or `nil` for a success.
    fileprivate var failureValue: Failure? {
        guard case .failure(let error) = self else { return nil }
        return error
    }
}
