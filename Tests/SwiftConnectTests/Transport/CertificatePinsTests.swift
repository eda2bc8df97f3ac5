import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `CertificatePins`: SPKI hashing against vectors computed by OpenSSL, host matching, and the refusal of pinned
/// requests by an engine that cannot check them.
final class CertificatePinsTests: XCTestCase {
    /// Self-signed certificates made once with `openssl req -x509` (their keys were discarded), and their pins by
    /// `openssl x509 -pubkey | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`.
    static let ecCertificate = Data(
        base64Encoded:
            "MIIBizCCATGgAwIBAgIUHU8dQ5EfF8a5GizNn1iUPR1kNtgwCgYIKoZIzj0EAwIwGzEZMBcGA1UEAwwQcGlucy5leGFtcGxlLmNvbTAeFw0yNjExMjYyMzA4MTVaFw0zNjExMjMyMzA4MTVaMBsxGTAXBgNVBAMMEHBpbnMuZXhhbXBsZS5jb20wWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAASTXLg6Lc2XUfYDWPXBWznwJsNKQ11L4DcN+qNNAs386yru9DL57rybAs36dh8yLoEIIZnfFifkRyOxms+hs8Iro1MwUTAdBgNVHQ4EFgQUwzQD2QgC8hvZi3RARghOVX8p6PQwHwYDVR0jBBgwFoAUwzQD2QgC8hvZi3RARghOVX8p6PQwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiBMU3kuV/3ED41XucyVZ0nhdSENOYz967DS1mP9wf/n5QIhAJEvuDRXAC2S0cWebiDQ55RVQChylPCRPw5FpZRCLYE6"
    )!
    static let ecPin = "So88jSErZAik3vN2xuBa9Vc9YJGEJeJ0Seiox9u1TzA="
    static let rsaCertificate = Data(
        base64Encoded:
            "MIIDFTCCAf2gAwIBAgIUNC/E0nxelFGIPOU0sXYcGpq21xUwDQYJKoZIhvcNAQELBQAwGjEYMBYGA1UEAwwPcnNhLmV4YW1wbGUuY29tMB4XDTI2MTEyNjIzMDgxNloXDTM2MTEyMzIzMDgxNlowGjEYMBYGA1UEAwwPcnNhLmV4YW1wbGUuY29tMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAs/NsTm0vURQHZgICk2cc88A9/w5C4fhThdpan93ijAMrX0KM3EO6M1UNFIwmT9lJT47ILsf1axq/VXUoOKFkvCWxK/PeY4fOZT1SjSyujrZLkIoVCs/KIa7usXY8elVckpGokygDT2kaNBmoYrJ78EsR8h9fiZt6T6eJZ13hyV9zhxv160pCz3qlRPzMnOAVP5EDKJTogPLq5KNGraZR17KVpe0IWs9OL0m4X46xB97bPfJX9PowCX0UNcMxL4IyiF54VjRbuM2oRS7woEPRrpGRqC8/C/ungUeJDKD/nNdUgGmrMjizbcP/UeaoOGf8v1oC31Tvaja0UPHP3dGNMwIDAQABo1MwUTAdBgNVHQ4EFgQUl/brCwhHGunqEBkgMWcxxlk9zIcwHwYDVR0jBBgwFoAUl/brCwhHGunqEBkgMWcxxlk9zIcwDwYDVR0TAQH/BAUwAwEB/zANBgkqhkiG9w0BAQsFAAOCAQEAiJ3wDM2s8Rgf5t9boyjbQIDBZ4FyM30mN3szocLFuvgiLyQ0e+s9p8XHd4QZFP0SciZoAaVs2330JCyEUPwWDK1rHYRvlKLQrgDrGu83a+pmLaAWFNFiGQ1AgSCzXPMiee7U8F0FN3ZEhY9AioSFe3btGd90MSrS4nP+PS1gOaMoJ2ab6hhcwwg+XHwJA6j8Lquf8uGyiTSxZxjCqqJ7NltnQxmZI5hY3Yg1rGhbdg4hVWlQgOvM+o7Mm4yU9ZmA0wH09peWP8iP2sKfu7HRk55teNlQqTdq3H9D6vrlsPMMwGg/blGvT5KygwqHkdnjRcO28TfUAJUwrFu36hDUkQ=="
    )!
    static let rsaPin = "KjEi170DhkV5kj+cvJ8fEet+rENS670dltohdZQ3L80="
    private static let otherPin = Data(repeating: 1, count: 32).base64EncodedString()

    func testSPKIHashesMatchOpenSSL() throws {
        XCTAssertEqual(
            try CertificatePins.spkiSHA256(ofCertificate: Self.ecCertificate).base64EncodedString(), Self.ecPin)
        XCTAssertEqual(
            try CertificatePins.spkiSHA256(ofCertificate: Self.rsaCertificate).base64EncodedString(), Self.rsaPin)
    }

    func testNotACertificateIsATypedError() {
        for bytes in [
            Data(), Data([0x30, 0x82, 0xFF]), Data("not a certificate".utf8), Self.ecCertificate.prefix(100),
        ] {
            XCTAssertThrowsError(try CertificatePins.spkiSHA256(ofCertificate: bytes)) { error in
                XCTAssertEqual((error as? ConnectError)?.kind, .certificatePinning)
            }
        }
    }

    func testAChainPassesWithAnyPinOfItsHost() throws {
        let pins = try CertificatePins(["pins.example.com": [Self.otherPin, Self.ecPin]])  // the backup pin first

        XCTAssertTrue(pins.accepts(host: "pins.example.com", chain: [Self.ecCertificate]))
        XCTAssertTrue(pins.accepts(host: "PINS.example.com.", chain: [Self.rsaCertificate, Self.ecCertificate]))
        XCTAssertFalse(pins.accepts(host: "pins.example.com", chain: [Self.rsaCertificate]))
        XCTAssertFalse(pins.accepts(host: "pins.example.com", chain: [Data("junk".utf8)]))
        XCTAssertTrue(pins.accepts(host: "unpinned.example.com", chain: [Self.rsaCertificate]), "not pinned")
    }

    func testHostPatterns() throws {
        let pins = try CertificatePins([
            "api.example.com": [Self.ecPin], "*.example.com": [Self.rsaPin], "*.cdn.example.com": [Self.otherPin],
        ])
        let ec = Data(base64Encoded: Self.ecPin)!
        let rsa = Data(base64Encoded: Self.rsaPin)!
        let other = Data(base64Encoded: Self.otherPin)!

        XCTAssertEqual(pins.pins(for: "api.example.com"), [ec], "the exact name wins")
        XCTAssertEqual(pins.pins(for: "www.example.com"), [rsa])
        XCTAssertEqual(pins.pins(for: "a.b.example.com"), [rsa], "any depth")
        XCTAssertEqual(pins.pins(for: "img.cdn.example.com"), [other], "the most specific pattern")
        XCTAssertNil(pins.pins(for: "example.com"), "*.example.com does not cover example.com")
        XCTAssertNil(pins.pins(for: "notexample.com"))
    }

    func testIPAddressesArePinnedAsURLsNameThem() throws {
        let pins = try CertificatePins([
            "[::1]": [Self.ecPin], "127.0.0.1": [Self.rsaPin], "xn--bcher-kva.example": [Self.ecPin],
        ])
        XCTAssertNotNil(pins.pins(for: "::1"))
        XCTAssertNotNil(pins.pins(for: "[::1]"))
        XCTAssertNotNil(pins.pins(for: "127.0.0.1"))
        XCTAssertNotNil(pins.pins(for: "XN--BCHER-KVA.example."))
    }

    func testMalformedPinsAreRefused() {
        for pins in [
            ["api.example.com": ["not base64!"]], ["api.example.com": ["AAAA"]], ["api.example.com": []],
            ["*.": [Self.ecPin]], ["a.*.example.com": [Self.ecPin]],
            // Patterns no URL's host can equal: the host would be left unpinned without a word.
            ["https://api.example.com": [Self.ecPin]], ["api.example.com:443": [Self.ecPin]],
            ["api.example.com/": [Self.ecPin]], [" api.example.com": [Self.ecPin]], ["bücher.example": [Self.ecPin]],
            ["*.[::1]": [Self.ecPin]], ["user@api.example.com": [Self.ecPin]], ["-bad.example.com": [Self.ecPin]],
        ] {
            XCTAssertThrowsError(try CertificatePins(pins), "\(pins)") { error in
                XCTAssertEqual((error as? ConnectError)?.kind, .certificatePinning)
            }
        }
    }

    /// A pin as OkHttp writes it (`sha256/` and the base64 hash), pasted from an Android app's configuration, is the
    /// same pin as the hash alone; it used to be refused as "not a base64 SHA-256 hash". Another algorithm's prefix
    /// (OkHttp's legacy `sha1/`) is still refused, by name.
    func testAPinWithOkHttpsSHA256PrefixIsTheSamePin() throws {
        let prefixed = try CertificatePins([
            "api.example.com": ["sha256/" + Self.ecPin], "*.example.org": ["SHA256/" + Self.rsaPin],
        ])
        XCTAssertEqual(
            prefixed, try CertificatePins(["api.example.com": [Self.ecPin], "*.example.org": [Self.rsaPin]]))
        XCTAssertTrue(prefixed.accepts(host: "api.example.com", chain: [Self.ecCertificate]))

        for pin in ["sha1/" + Self.ecPin, "sha256/", "sha256/sha256/" + Self.ecPin, "sha256:" + Self.ecPin] {
            XCTAssertThrowsError(try CertificatePins(["api.example.com": [pin]]), pin) { error in
                XCTAssertEqual((error as? ConnectError)?.kind, .certificatePinning)
                XCTAssertTrue("\(error)".contains("is not a base64 SHA-256 hash"), "\(error)")
            }
        }
    }

    /// A wildcard covers names, never IP addresses (RFC 6125 §6.4.3): a pattern whose last label is a number
    /// (`*.0.0.1`) could only ever match an IPv4 address, and used to pin 127.0.0.1 unasked. It is refused when the
    /// pins are made; an address is pinned by writing it out.
    func testAWildcardThatCouldOnlyMatchAnIPAddressIsRefused() throws {
        for pattern in ["*.0.0.1", "*.1", "*.example.123"] {
            XCTAssertThrowsError(try CertificatePins([pattern: [Self.ecPin]]), pattern) { error in
                XCTAssertEqual((error as? ConnectError)?.kind, .certificatePinning)
                XCTAssertTrue("\(error)".contains("IP address"), "\(error)")
            }
        }
        let pins = try CertificatePins([
            "*.example.com": [Self.ecPin], "127.0.0.1": [Self.rsaPin], "*.1x": [Self.ecPin],
        ])
        XCTAssertEqual(pins.pins(for: "127.0.0.1"), [Data(base64Encoded: Self.rsaPin)!])
        XCTAssertNil(pins.pins(for: "127.0.0.2"))
        XCTAssertNotNil(pins.pins(for: "a.1x"))
    }

    /// The one rule every engine applies before sending: a pinned host is refused by a transport that cannot check
    /// its certificates, and over plain http by any transport; every other request goes.
    func testTheRefusalRuleEveryEngineApplies() throws {
        let pins = try CertificatePins(["api.example.com": [Self.ecPin], "*.pinned.example": [Self.ecPin]])
        func request(_ url: String) -> URLRequest { URLRequest(url: URL(string: url)!) }

        for checks in [true, false] {
            XCTAssertNil(pins.refusal(of: request("https://other.example/x"), by: "T", checksHandshake: checks))
            XCTAssertNil(pins.refusal(of: request("http://other.example/x"), by: "T", checksHandshake: checks))
        }
        XCTAssertNil(pins.refusal(of: request("https://api.example.com/x"), by: "T", checksHandshake: true))
        XCTAssertNil(pins.refusal(of: request("HTTPS://a.pinned.example/x"), by: "T", checksHandshake: true))
        XCTAssertNil(CertificatePins().refusal(of: request("http://api.example.com/x"), by: "T"))

        let plain = try XCTUnwrap(
            pins.refusal(of: request("http://a.pinned.example/x"), by: "T", checksHandshake: true))
        XCTAssertEqual(plain.kind, .certificatePinning)
        XCTAssertTrue(plain.message.contains("a.pinned.example is pinned, and plain http"), plain.message)
        XCTAssertEqual(plain.request?.url?.absoluteString, "http://a.pinned.example/x")

        let unable = try XCTUnwrap(pins.refusal(of: request("https://api.example.com/x"), by: "MyTransport"))
        XCTAssertEqual(unable.kind, .certificatePinning)
        XCTAssertTrue(unable.message.contains("MyTransport cannot check"), unable.message)
    }

    /// A pinned host over plain http has no certificate to check: URLSessionTransport refuses it before anything is
    /// sent, on every platform; other hosts go.
    func testURLSessionTransportRefusesAPinnedHostAndSendsTheOthers() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/ok") { _ in .text("ok") }
        let pins = try CertificatePins(["localhost": [Self.ecPin]])
        let transport = URLSessionTransport(configuration: URLSessionTransport.defaultConfiguration, pins: pins)
        let pinned = URLRequest(url: URL(string: "http://localhost:\(server.port)/ok")!)
        let unpinned = URLRequest(url: server.baseURL.appendingPathComponent("ok"))

        let result = try transport.send(pinned).waitForResult(timeout: 10)
        let response = try transport.send(unpinned).wait(timeout: 10)

        guard case .failure(let error as ConnectError) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(error.kind, .certificatePinning)
        XCTAssertTrue(error.message.contains("localhost"), error.message)
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(server.requestCount, 1, "the pinned request was sent")
    }

    /// A redirect does not reach a pinned host unchecked: from an unpinned host (127.0.0.1) to a pinned one
    /// (`localhost`) over plain http, the session's own redirect (GET) and the one the transport follows itself on
    /// Linux (a POST with its body, 307) both end in the refusal, and the pinned host never sees the request.
    func testARedirectToAPinnedHostIsRefusedNotFollowedUnpinned() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        let pinned = "http://localhost:\(server.port)/secret"
        server.route("GET", "/go") { _ in .redirect(to: pinned) }
        server.route("POST", "/go") { _ in .redirect(to: pinned, status: 307) }
        server.route("*", "/secret") { _ in .text("secret") }
        let pins = try CertificatePins(["localhost": [Self.ecPin]])
        let transport = URLSessionTransport(configuration: URLSessionTransport.defaultConfiguration, pins: pins)
        var post = URLRequest(url: server.baseURL.appendingPathComponent("go"))
        post.httpMethod = "POST"
        post.httpBody = Data("body".utf8)

        for request in [URLRequest(url: server.baseURL.appendingPathComponent("go")), post] {
            let result = try transport.send(request).waitForResult(timeout: 10)

            guard case .failure(let error as ConnectError) = result else { return XCTFail("\(result)") }
            XCTAssertEqual(error.kind, .certificatePinning, error.description)
            XCTAssertTrue(error.message.contains("localhost"), error.message)
            XCTAssertEqual(error.request?.url, request.url)
        }
        XCTAssertEqual(server.requestCount, 2, "only the two /go requests arrive")
    }

    #if canImport(FoundationNetworking)
        /// FoundationNetworking has no server-trust challenge: an https request to a pinned host is refused, with a
        /// typed error naming the host, instead of going out unpinned (nothing listens on localhost's port 1: a
        /// request that tried to connect would fail as a transport error instead).
        func testFoundationNetworkingRefusesPinnedHTTPS() throws {
            let pins = try CertificatePins(["localhost": [Self.ecPin]])
            let transport = URLSessionTransport(configuration: URLSessionTransport.defaultConfiguration, pins: pins)

            let result = try transport.send(URLRequest(url: URL(string: "https://localhost:1/")!))
                .waitForResult(timeout: 10)

            guard case .failure(let error as ConnectError) = result else { return XCTFail("\(result)") }
            XCTAssertEqual(error.kind, .certificatePinning)
            XCTAssertTrue(error.message.contains("localhost"), error.message)
        }
    #endif
}
