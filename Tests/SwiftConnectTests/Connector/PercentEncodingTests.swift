import Foundation
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

final class PercentEncodingTests: XCTestCase {
    /// A connector with one path value and one query item, both set to the same string.
    struct Echo: Connector {
        var value: String
        var baseURL: URL { URL(string: "https://api.example.com/v1")! }
        var endpoint: String { "/items/{value}/end" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? {
            CompositeParameters(.path(key: "value", value: value), .query(key: "q", value: value))
        }
    }

    /// xorshift64*: tiny, deterministic, good enough to pick characters.
    struct XorShift {
        private var state: UInt64

        init(seed: UInt64) { state = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed }

        mutating func next() -> UInt64 {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return state &* 0x2545_F491_4F6C_DD1D
        }

        mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }
    }

    // MARK: - Byte sets

    func testUnreservedSetIsExactlyRFC3986Unreserved() {
        let expected = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
        for byte in UInt8.min...UInt8.max {
            XCTAssertEqual(PercentEncoding.unreserved.contains(byte), expected.contains(byte), "byte \(byte)")
        }
    }

    func testEndpointLiteralSetHasNoSpaceBraceOrControlCharacters() {
        for byte in Array(" {}<>\"\\^`|[]\u{7F}".utf8) + Array(0..<0x20) + Array(0x80...0xFF) {
            XCTAssertFalse(PercentEncoding.endpointLiteral.contains(byte), "byte \(byte)")
        }
        for byte in "/:@?#!$&'()*+,;=-._~aZ9".utf8 {
            XCTAssertTrue(PercentEncoding.endpointLiteral.contains(byte), "byte \(byte)")
        }
    }

    // MARK: - Encoding

    func testReservedCharactersAreEncodedWithUppercaseHex() {
        XCTAssertEqual(PercentEncoding.encoded("a/b?c#d%"), "a%2Fb%3Fc%23d%25")
        XCTAssertEqual(PercentEncoding.encoded("&=+# "), "%26%3D%2B%23%20")
        XCTAssertEqual(PercentEncoding.encoded(":@!$'()*,;[]"), "%3A%40%21%24%27%28%29%2A%2C%3B%5B%5D")
        XCTAssertEqual(PercentEncoding.encoded("Az09-._~"), "Az09-._~")
        XCTAssertEqual(PercentEncoding.encoded(""), "")
    }

    func testNonASCIIIsEncodedAsUTF8Bytes() {
        XCTAssertEqual(PercentEncoding.encoded("\u{e9}"), "%C3%A9")
        XCTAssertEqual(PercentEncoding.encoded("\u{20AC}"), "%E2%82%AC")
        XCTAssertEqual(PercentEncoding.encoded("\u{1F600}"), "%F0%9F%98%80")
        XCTAssertEqual(PercentEncoding.encoded("\u{0}\u{7F}"), "%00%7F")
    }

    func testSpaceAsPlusOnlyChangesSpaces() {
        XCTAssertEqual(PercentEncoding.encoded("a b+c", spaceAsPlus: true), "a+b%2Bc")
        XCTAssertEqual(PercentEncoding.encoded("a b+c"), "a%20b%2Bc")
    }

    func testPathSegmentEncodingEscapesDotOnlyValues() {
        XCTAssertEqual(PercentEncoding.encodedPathSegment("."), "%2E")
        XCTAssertEqual(PercentEncoding.encodedPathSegment(".."), "%2E%2E")
        XCTAssertEqual(PercentEncoding.encodedPathSegment("..a"), "..a")
        XCTAssertEqual(PercentEncoding.encodedPathSegment("a/b"), "a%2Fb")
    }

    // MARK: - Property: encoding round-trips through the platform's decoders

    func testDotSegmentsAreRecognisedWithOrWithoutPercentEncoding() {
        for segment in [".", "..", "%2E", "%2e", ".%2E", "%2e.", "%2E%2e"] {
            XCTAssertTrue(PercentEncoding.isDotSegment(ArraySlice(segment.utf8)), segment)
        }
        for segment in ["", "...", "%2E%2E%2E", "%2", "%2F", "%252E", ".a", "%3E", "%2E%2", "..%20", "%2E%2E."] {
            XCTAssertFalse(PercentEncoding.isDotSegment(ArraySlice(segment.utf8)), segment)
        }
    }

    func testAPathHasADotSegmentWhenAnyOfItsSegmentsIsOne() {
        for path in ["/a/../b", "/a/%2E/b", "..", "/v1/.", "./v1", "//%2e%2E//"] {
            XCTAssertTrue(PercentEncoding.hasDotSegment(inPath: path), path)
        }
        for path in ["", "/", "//", "/a/...b/c", "/a.b/c..", "/%252E/", "/v1/..%20/"] {
            XCTAssertFalse(PercentEncoding.hasDotSegment(inPath: path), path)
        }
    }

    func testRandomStringsRoundTripAsPathAndQueryValues() throws {
        let seed: UInt64 = 0x5EED_2024_C0DE_F00D
        var random = XorShift(seed: seed)
        let alphabet: [String] = [
            "a", "Z", "0", "9", "-", ".", "_", "~", "/", "?", "#", "%", "&", "=", "+", " ", ";", ":", "@", "{", "}",
            "[", "]", "!", "*", "'", "\"", "\\", "\n", "\r", "\t", "\u{0}", "\u{7F}", "\u{e9}", "\u{20AC}", "\u{4E2D}",
            "\u{1F600}", "\u{1F1EB}\u{1F1F7}", "e\u{301}", "%2F", "%41", "..",
        ]
        var failures = 0
        for iteration in 0..<2_000 {
            // Given
            let length = 1 + random.next(below: 12)
            let value = (0..<length).map { _ in alphabet[random.next(below: alphabet.count)] }.joined()
            let context = "seed 0x\(String(seed, radix: 16)), iteration \(iteration), value \(value.debugDescription)"

            // When
            if value == "." || value == ".." {  // would be a dot-segment: refused (ConnectorBuildingTests)
                XCTAssertThrowsError(try Echo(value: value).asURLRequest(), context)
                continue
            }
            let request = try Echo(value: value).asURLRequest()
            let url = try XCTUnwrap(request.url, context)
            let components = try XCTUnwrap(URLComponents(url: url, resolvingAgainstBaseURL: false), context)
            let segments = components.percentEncodedPath.split(separator: "/", omittingEmptySubsequences: false)

            // Then
            let pathOK = segments.count == 5 && segments[3].removingPercentEncoding == value && segments[4] == "end"
            let queryOK = components.queryItems?.count == 1 && components.queryItems?.first?.value == value
            if !pathOK || !queryOK {
                failures += 1
                XCTFail("round trip failed (\(context)): \(url.absoluteString)")
                if failures > 5 { break }
            }
        }
    }
}
