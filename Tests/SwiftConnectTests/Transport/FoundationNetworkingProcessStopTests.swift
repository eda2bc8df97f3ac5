import Foundation
import XCTest

#if canImport(FoundationNetworking)
    /// What a server can send that stops a Linux process using `URLSessionTransport`: defects of FoundationNetworking
    /// that happen before the transport hears of the response, so that no code of the transport can stop them
    /// (SECURITY.md, "Known platform flaws"). Each test starts itself again in a child process
    /// (``KnownProcessStop``), which meets the defect; the test fails once FoundationNetworking fixes it.
    final class FoundationNetworkingProcessStopTests: XCTestCase {
        /// The connection closes after the status line, before the blank line that ends the head: a server that
        /// fails while answering. libcurl reports the transfer complete; FoundationNetworking has no response.
        func testAHeadCutShortStopsTheProcess() throws {
            if let answer = KnownProcessStop.answerToReceive { return try KnownProcessStop.receive(answer) }
            for head in ["HTTP/1.1 200 OK\r\n", "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\n"] {
                try KnownProcessStop.expect(
                    Self.test(#function), receiving: Data(head.utf8),
                    stopsWith: "Transfer completed, but there's no response")
            }
        }

        /// A redirect to a scheme-relative `Location` whose host `URLComponents` cannot take (see
        /// `RedirectLocationSafetyTests`): FoundationNetworking rebuilds the next URL before asking the delegate.
        func testASchemeRelativeRedirectToAHostURLComponentsCannotTakeStopsTheProcess() throws {
            if let answer = KnownProcessStop.answerToReceive { return try KnownProcessStop.receive(answer) }
            for location in ["//[::1]:1/x", "//a%20b/x"] {
                try KnownProcessStop.expect(
                    Self.test(#function),
                    receiving: Data("HTTP/1.1 302 Found\r\nLocation: \(location)\r\nContent-Length: 0\r\n\r\n".utf8),
                    stopsWith: "Invalid URL")
            }
        }

        /// A `Content-Length` of 2^63 − 1: libcurl hands it to FoundationNetworking as a `Double`, 2^63, which does
        /// not fit the integer it is converted to. (2^63 and more fail as they should: `ResponseFramingTests`.)
        func testAContentLengthOfInt64MaxStopsTheProcess() throws {
            if let answer = KnownProcessStop.answerToReceive { return try KnownProcessStop.receive(answer) }
            try KnownProcessStop.expect(
                Self.test(#function),
                receiving: Data("HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\nabc".utf8),
                stopsWith: nil)
        }

        /// A chunked body that ends with trailer fields (RFC 9112 §7.1.2), which a server may send unasked: libcurl
        /// hands the trailer's lines to the header callback, FoundationNetworking starts a new head with them and, at
        /// the transfer's end, has no response. (`OddServerTests` checks the body on the other engines.)
        func testAChunkedBodyWithTrailerFieldsStopsTheProcess() throws {
            if let answer = KnownProcessStop.answerToReceive { return try KnownProcessStop.receive(answer) }
            try KnownProcessStop.expect(
                Self.test(#function),
                receiving: Data(
                    ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + "5\r\nhello\r\n0\r\nX-Checksum: abc123\r\n\r\n").utf8),
                stopsWith: "Transfer completed, but there's no response")
        }

        /// `"Module.Class/method"` for XCTest's command line.
        private static func test(_ function: String) -> String {
            "\(String(reflecting: Self.self))/\(function.prefix { $0 != "(" })"
        }
    }
#endif
