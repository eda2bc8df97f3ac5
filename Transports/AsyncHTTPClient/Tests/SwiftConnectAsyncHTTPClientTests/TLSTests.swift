import AsyncHTTPClient
import Crypto
import Foundation
import NIOSSL
import SwiftConnect
import SwiftConnectAsyncHTTPClient
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// HTTPS through `AsyncHTTPClientTransport` to a loopback TLS server whose CA the test makes at run time.
final class TLSTests: TLSServerTestCase {

    private func transport(trusting roots: [NIOSSLCertificate]?, http2: Bool = true) -> AsyncHTTPClientTransport {
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        var tls = TLSConfiguration.makeClientConfiguration()
        if let roots { tls.trustRoots = .certificates(roots) }
        configuration.tlsConfiguration = tls
        configuration.httpVersion = http2 ? .automatic : .http1Only
        return AsyncHTTPClientTransport(configuration: configuration)
    }

    private var request: URLRequest {
        URLRequest(url: server.baseURL.appendingPathComponent("version"), timeoutInterval: 10)
    }

    /// With the app's CA as the trust root, the request goes through, over HTTP/2 negotiated by ALPN.
    func testTheAppsTrustRootsAndHTTP2ByALPN() throws {
        let response = try transport(trusting: [pki.caCertificate]).send(request).wait(timeout: 10)

        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(String(decoding: response.data, as: UTF8.self), "HTTP/2")
    }

    /// HTTP/1.1 only: ALPN offers http/1.1 and the server speaks it.
    func testHTTP1OverTLSWhenHTTP2IsOff() throws {
        let response = try transport(trusting: [pki.caCertificate], http2: false).send(request).wait(timeout: 10)

        XCTAssertEqual(String(decoding: response.data, as: UTF8.self), "HTTP/1.1")
    }

    /// Without the app's CA, the throwaway certificate is not trusted: a typed error, no response.
    func testAnUntrustedCertificateFailsWithATypedError() throws {
        let result = try transport(trusting: nil).send(request).waitForResult(timeout: 10)

        guard case .failure(let error as ConnectError) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(error.kind, .untrustedCertificate, error.description)
        XCTAssertNotNil(error.underlyingError, "the engine's own error is kept")
    }

    /// The core's SPKI hash of a certificate made at run time equals swift-crypto's SHA-256 of its
    /// SubjectPublicKeyInfo as swift-certificates serializes it.
    func testThePinOfAGeneratedCertificate() throws {
        let ours = try CertificatePins.spkiSHA256(ofCertificate: Data(pki.serverDER))

        XCTAssertEqual(ours, Data(SHA256.hash(data: pki.serverSPKI)))
    }
}

/// A test case with a throwaway PKI and a loopback TLS server presenting its certificate, new for each test.
class TLSServerTestCase: XCTestCase {
    var pki: ThrowawayPKI!
    var server: TLSLoopbackServer!

    override func setUpWithError() throws {
        pki = try ThrowawayPKI()
        server = try TLSLoopbackServer(pki: pki)
    }

    override func tearDown() {
        server.stop()
    }
}
