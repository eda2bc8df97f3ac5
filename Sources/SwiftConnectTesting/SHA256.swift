import Foundation
import SwiftConnect

/// An incremental SHA-256 (FIPS 180-4), in pure Swift, for checking large bodies in tests without keeping them.
///
/// Feed the bytes in pieces of any size; the digest does not depend on how they were split.
///
/// ```swift
/// var hash = SHA256()
/// hash.update(Data("ab".utf8))
/// hash.update(Data("c".utf8))
/// XCTAssertEqual(hash.hexDigest, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
/// ```
///
/// It is a test helper, not a cryptographic library: it makes no attempt at constant-time behaviour.
public struct SHA256: Sendable {
    /// The length of a digest, in bytes.
    public static let digestByteCount = SHA256Hasher.digestByteCount

    private var hasher = SHA256Hasher()

    /// The number of bytes hashed so far.
    public var byteCount: Int { hasher.byteCount }

    /// Creates a hash of the empty message, ready for ``update(_:)``.
    public init() {}

    /// Hashes `bytes` after everything given so far.
    ///
    /// - Parameter bytes: The next bytes of the message: `Data`, `[UInt8]`, a slice, …
    public mutating func update(_ bytes: some DataProtocol) {
        hasher.update(bytes)
    }

    /// Hashes the bytes in `buffer` after everything given so far.
    ///
    /// - Parameter buffer: The next bytes of the message; only read during the call.
    public mutating func update(bufferPointer buffer: UnsafeRawBufferPointer) {
        hasher.update(bufferPointer: buffer)
    }

    /// The digest of everything given so far (the hash can go on receiving bytes afterwards).
    ///
    /// - Returns: The 32 bytes of the digest.
    public func finalize() -> [UInt8] {
        hasher.finalize()
    }

    /// The digest of everything given so far, as 64 lowercase hexadecimal digits.
    public var hexDigest: String { hasher.hexDigest }

    /// The digest of `bytes`.
    ///
    /// - Parameter bytes: The whole message.
    /// - Returns: The 32 bytes of the digest.
    public static func hash(_ bytes: some DataProtocol) -> [UInt8] {
        SHA256Hasher.hash(bytes)
    }

    /// Formats bytes, typically a digest, as lowercase hexadecimal digits.
    ///
    /// - Parameter bytes: The bytes to format.
    /// - Returns: Two digits per byte, with no separator.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        SHA256Hasher.hex(bytes)
    }
}
