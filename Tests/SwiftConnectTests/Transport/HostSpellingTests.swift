import Foundation
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A host written differently from the way a rule names it (escapes, upper case, a trailing dot, another form of
/// an IP address, Unicode for punycode) is the same host to the rules that guard it: certificate pins (a pinned
/// host reached through another spelling is still pinned: fail closed) and cookies.
final class HostSpellingTests: XCTestCase {
    private static let pin = CertificatePinsTests.ecPin

    // MARK: - Certificate pins

    /// Each URL names a pinned host: a transport that cannot check pins refuses it, and plain http is refused by
    /// every transport, rather than the request going unpinned.
    func testAPinnedHostIsPinnedHoweverItsURLWritesIt() throws {
        let pins = try CertificatePins([
            "api.example.com": [Self.pin], "*.pinned.example": [Self.pin], "xn--bcher-kva.example": [Self.pin],
            "::1": [Self.pin], "2001:db8::7": [Self.pin], "127.0.0.1": [Self.pin],
        ])
        let spellings = [
            "api.example.com", "API.Example.COM", "api.example.com.", "api.exampl%65.com", "api.example.com%2E",
            "a.pinned.example", "A.PINNE%44.example", "b%C3%BCcher.example", "bücher.example", "B%C3%9CCHER.example",
            "xn--bcher-kva.example.", "api.example.com...", "api.example.com%2E%2E", "[::1]", "[0:0:0:0:0:0:0:1]",
            "[::0:1]", "[2001:DB8:0:0::7]", "127.0.0.1", "127.1", "0x7f.0.0.1", "2130706433", "0177.0.0.1",
        ]
        for host in spellings {
            for port in ["", ":8443"] {
                let https = try XCTUnwrap(URL(string: "https://\(host)\(port)/x"), host)
                let http = try XCTUnwrap(URL(string: "http://\(host)\(port)/x"), host)
                let unable = pins.refusal(of: https, by: "T", checksHandshake: false)
                XCTAssertEqual(unable?.kind, .certificatePinning, "\(https) went unpinned")
                let plain = pins.refusal(of: http, by: "T", checksHandshake: true)
                XCTAssertEqual(plain?.kind, .certificatePinning, "\(http) went over plain http")
                XCTAssertNil(pins.refusal(of: https, by: "T", checksHandshake: true), "\(https) may go, checked")
            }
        }
        XCTAssertNil(pins.refusal(of: URL(string: "https://api.example.org/x")!, by: "T"), "not pinned")
        XCTAssertNil(pins.refusal(of: URL(string: "https://127.0.0.2/x")!, by: "T"), "not pinned")
    }

    /// What an engine hands the pins during the handshake (Apple's `protectionSpace.host`, AsyncHTTPClient's URL
    /// host) is looked up the same way: a chain without the pin is refused whatever the host's spelling.
    func testTheHandshakeCheckFindsThePinsOfEverySpelling() throws {
        let pins = try CertificatePins([
            "api.example.com": [Self.pin], "xn--bcher-kva.example": [Self.pin], "::1": [Self.pin],
            "127.0.0.1": [Self.pin],
        ])
        let wrongChain = [CertificatePinsTests.rsaCertificate]
        for host in [
            "API.example.com", "api.exampl%65.com", "api.example.com.", "bücher.example", "BÜCHER.example",
            "b%C3%BCcher.example", "0:0:0:0:0:0:0:1", "[0::1]", "127.1", "0x7f000001",
        ] {
            XCTAssertNotNil(pins.pins(for: host), host)
            XCTAssertFalse(pins.accepts(host: host, chain: wrongChain), host)
            XCTAssertTrue(pins.accepts(host: host, chain: [CertificatePinsTests.ecCertificate]), host)
        }
    }

    /// A pin written for an address in another form than the URL's pins the address.
    func testAnAddressPinnedInAnotherFormIsPinned() throws {
        let pins = try CertificatePins(["[0:0:0:0:0:0:0:1]": [Self.pin], "2001:DB8::0:7": [Self.pin]])
        XCTAssertEqual(
            pins.refusal(of: URL(string: "https://[::1]/")!, by: "T")?.kind, .certificatePinning)
        XCTAssertEqual(
            pins.refusal(of: URL(string: "https://[2001:db8::7]/")!, by: "T")?.kind, .certificatePinning)
    }

    /// An IPv4 address written IPv4-mapped (`[::ffff:127.0.0.1]`, which the system reaches over IPv4), and an IPv6
    /// address with a zone (`[fe80::1%25eth0]`, that address on one link), are the pinned address: refused over plain
    /// http and by a transport that cannot check pins, never sent unpinned. A pin written mapped pins the address too.
    func testAnAddressWrittenMappedOrWithAZoneIsPinned() throws {
        let pins = try CertificatePins([
            "127.0.0.1": [Self.pin], "fe80::1": [Self.pin], "[::ffff:10.0.0.7]": [Self.pin],
        ])
        for host in [
            "[::ffff:127.0.0.1]", "[::FFFF:7f00:1]", "[0:0:0:0:0:ffff:127.0.0.1]", "[fe80::1%25eth0]",
            "[FE80:0::1%25lo]", "10.0.0.7", "[::ffff:a00:7]",
        ] {
            let https = try XCTUnwrap(URL(string: "https://\(host):8443/x"), host)
            let http = try XCTUnwrap(URL(string: "http://\(host)/x"), host)
            XCTAssertEqual(pins.refusal(of: https, by: "T")?.kind, .certificatePinning, "\(https) went unpinned")
            XCTAssertEqual(
                pins.refusal(of: http, by: "T", checksHandshake: true)?.kind, .certificatePinning,
                "\(http) went over plain http")
            XCTAssertNil(pins.refusal(of: https, by: "T", checksHandshake: true), "\(https) may go, checked")
            let written = try XCTUnwrap(https.host, host)
            XCTAssertFalse(pins.accepts(host: written, chain: [CertificatePinsTests.rsaCertificate]), written)
            XCTAssertTrue(pins.accepts(host: written, chain: [CertificatePinsTests.ecCertificate]), written)
        }
        // Another address stays unpinned: `::127.0.0.1` (IPv4-compatible) is an IPv6 address of its own.
        for host in ["[::127.0.0.1]", "[::ffff:127.0.0.2]", "[fe80::2%25eth0]"] {
            XCTAssertNil(pins.refusal(of: URL(string: "http://\(host)/x")!, by: "T"), host)
        }
    }

    /// A host whose escapes make no host name cannot be looked up: with pins set it is refused, not sent unpinned.
    func testAHostThatCannotBeReadIsRefusedWhilePinsAreSet() throws {
        let pins = try CertificatePins(["api.example.com": [Self.pin]])
        let url = try XCTUnwrap(URL(string: "https://api.example.com%2F.evil/x"))
        XCTAssertEqual(pins.refusal(of: url, by: "T", checksHandshake: true)?.kind, .certificatePinning)
        XCTAssertNil(CertificatePins().refusal(of: url, by: "T"), "without pins nothing is pinned")
    }

    // MARK: - Cookies

    private let now = Date(timeIntervalSince1970: 1_800_000_000)

    private func header(_ url: String, _ cookies: [HTTPCookie]) -> String? {
        CookieRules.header(for: URL(string: url)!, from: cookies, keeping: nil, now: now)
    }

    private func cookie(_ text: String, from url: String) -> HTTPCookie? {
        CookieRules.cookie(from: Substring(text), setBy: URL(string: url)!, now: now)
    }

    /// A cookie a host set goes back to it however the next URL writes that host, and is stored under one name.
    func testACookieGoesToItsHostWhateverTheSpelling() throws {
        let cases: [(setBy: String, sentTo: [String])] = [
            ("https://xn--bcher-kva.example/", ["https://b%C3%BCcher.example/", "https://bücher.example/"]),
            ("https://b%C3%BCcher.example/", ["https://xn--bcher-kva.example/", "https://XN--BCHER-KVA.example/"]),
            ("https://api.example.com/", ["https://api.exampl%65.com/", "https://API.EXAMPLE.COM/"]),
            ("http://[::1]:8080/", ["http://[0:0:0:0:0:0:0:1]:8080/"]),
            ("http://127.0.0.1/", ["http://127.1/", "http://0x7f.0.0.1/"]),
        ]
        for (setBy, targets) in cases {
            let set = try XCTUnwrap(cookie("a=1", from: setBy), setBy)
            for target in targets {
                XCTAssertEqual(header(target, [set]), "a=1", "set by \(setBy), sent to \(target)")
            }
            XCTAssertNil(header("https://other.example/", [set]))
        }
        XCTAssertEqual(cookie("a=1", from: "https://b%C3%BCcher.example/")?.domain, "xn--bcher-kva.example")
        XCTAssertEqual(cookie("a=1", from: "http://[0:0::1]/")?.domain, "::1")
    }

    /// An IPv4 address in another form is an address: it sets no cookie for a domain by suffix.
    func testAnAddressInAnotherFormSetsNoDomainCookie() {
        XCTAssertNil(cookie("a=1; Domain=0.0.1", from: "http://0x7f.0.0.1/"))
        XCTAssertNil(cookie("a=1; Domain=0.1", from: "http://127.0.1/"))
    }
}
