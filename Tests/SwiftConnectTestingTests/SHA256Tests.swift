import Foundation
import SwiftConnectTesting
import XCTest

final class SHA256Tests: XCTestCase {
    // MARK: - FIPS 180-4 / NIST example vectors

    func testEmptyMessage() {
        XCTAssertEqual(SHA256().hexDigest, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    func testABC() {
        XCTAssertEqual(hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    func testTwoBlockMessage448Bits() {
        XCTAssertEqual(
            hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        )
    }

    func testMessage896Bits() {
        XCTAssertEqual(
            hex(
                "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"
            ),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"
        )
    }

    func testOneMillionA() {
        // Given: one million "a", fed as 1,000 pieces of 1,000 bytes.
        let piece = Data(repeating: UInt8(ascii: "a"), count: 1000)
        var hash = SHA256()

        // When
        for _ in 0..<1000 { hash.update(piece) }

        // Then
        XCTAssertEqual(hash.byteCount, 1_000_000)
        XCTAssertEqual(hash.hexDigest, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    // MARK: - Padding edges (expected values from Python's hashlib)

    func testLengthsAroundThePaddingBoundary() {
        let expected: [Int: String] = [
            55: "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b",
            56: "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27",
            57: "35df609437dcfea3279283ab79fd554e2bf78f8f7ae2de532d8ee300b09e8f73",
            63: "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055",
            64: "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241",
            65: "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e",
            119: "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e",
            120: "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5",
            1000: "1e9bc38cbf860b9ec31918b065f9b52476c549a782e0e7990bed8ce3868d2371",
        ]
        for (length, digest) in expected {
            XCTAssertEqual(SHA256.hex(SHA256.hash(pattern(length))), digest, "length \(length)")
        }
    }

    // MARK: - Incremental use

    func testEverySplitOfAMessageGivesTheSameDigest() {
        // Given: 300 bytes, crossing several block boundaries.
        let message = pattern(300)
        let whole = SHA256.hash(message)

        // When / Then: split in two at every position, and in pieces of every size from 1 to 130.
        for split in 0...message.count {
            var hash = SHA256()
            hash.update(message.prefix(split))
            hash.update(message.dropFirst(split))
            XCTAssertEqual(hash.finalize(), whole, "split at \(split)")
        }
        for size in 1...130 {
            var hash = SHA256()
            var start = 0
            while start < message.count {
                let end = min(start + size, message.count)
                message[start..<end].withUnsafeBytes { hash.update(bufferPointer: $0) }
                start = end
            }
            XCTAssertEqual(hash.finalize(), whole, "pieces of \(size)")
        }
    }

    func testFinalizeLeavesTheHashUsable() {
        // Given
        var hash = SHA256()
        hash.update(Array("ab".utf8))
        _ = hash.finalize()

        // When
        hash.update(Array("c".utf8))

        // Then
        XCTAssertEqual(hash.hexDigest, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(hash.finalize().count, SHA256.digestByteCount)
    }

    func testUpdateWithEmptyInputChangesNothing() {
        var hash = SHA256()
        hash.update(Data())
        hash.update(bufferPointer: UnsafeRawBufferPointer(start: nil, count: 0))
        XCTAssertEqual(hash.byteCount, 0)
        XCTAssertEqual(hash.hexDigest, SHA256().hexDigest)
    }

    func testHexFormatsLowercaseWithLeadingZeros() {
        XCTAssertEqual(SHA256.hex([0x00, 0x0F, 0xA0, 0xFF]), "000fa0ff")
    }

    // MARK: - Helpers

    private func hex(_ text: String) -> String {
        SHA256.hex(SHA256.hash(Data(text.utf8)))
    }

    /// `length` bytes of the pattern `(i * 7 + 3) mod 256`.
    private func pattern(_ length: Int) -> Data {
        Data((0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
    }
}
