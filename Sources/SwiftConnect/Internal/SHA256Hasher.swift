import Foundation

/// An incremental SHA-256 (FIPS 180-4), in pure Swift: the hashes of certificate pins (``CertificatePins``), and
/// `SwiftConnectTesting`'s `SHA256`, which wraps it.
///
/// It hashes public data only (certificates, test bodies): it makes no attempt at constant-time behaviour.
package struct SHA256Hasher: Sendable {
    /// The length of a digest, in bytes.
    package static let digestByteCount = 32

    /// The eight working words, H0 to H7.
    private var h0: UInt32 = 0x6a09_e667
    private var h1: UInt32 = 0xbb67_ae85
    private var h2: UInt32 = 0x3c6e_f372
    private var h3: UInt32 = 0xa54f_f53a
    private var h4: UInt32 = 0x510e_527f
    private var h5: UInt32 = 0x9b05_688c
    private var h6: UInt32 = 0x1f83_d9ab
    private var h7: UInt32 = 0x5be0_cd19

    /// Bytes received that do not fill a 64-byte block yet (at most 63).
    private var pending: [UInt8] = []

    /// The message length so far, in bytes.
    private var length: UInt64 = 0

    /// The number of bytes hashed so far.
    package var byteCount: Int {
        Int(truncatingIfNeeded: length)
    }

    /// Creates a hash of the empty message, ready for ``update(_:)``.
    package init() {
        pending.reserveCapacity(SHA256Hasher.blockSize)
    }

    /// Hashes `bytes` after everything given so far.
    ///
    /// - Parameter bytes: The next bytes of the message: `Data`, `[UInt8]`, a slice, …
    package mutating func update(_ bytes: some DataProtocol) {
        for region in bytes.regions {
            region.withUnsafeBytes { update(bufferPointer: $0) }
        }
    }

    /// Hashes the bytes in `buffer` after everything given so far.
    ///
    /// - Parameter buffer: The next bytes of the message; only read during the call.
    package mutating func update(bufferPointer buffer: UnsafeRawBufferPointer) {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        length &+= UInt64(buffer.count)
        var offset = 0
        if !pending.isEmpty {
            let taken = min(SHA256Hasher.blockSize - pending.count, buffer.count)
            pending.append(contentsOf: UnsafeRawBufferPointer(start: base, count: taken))
            offset = taken
            guard pending.count == SHA256Hasher.blockSize else { return }
            pending.withUnsafeBytes { compress(blocksAt: $0.baseAddress!, count: 1) }
            pending.removeAll(keepingCapacity: true)
        }
        let blocks = (buffer.count - offset) / SHA256Hasher.blockSize
        if blocks > 0 {
            compress(blocksAt: base + offset, count: blocks)
            offset += blocks * SHA256Hasher.blockSize
        }
        if offset < buffer.count {
            pending.append(contentsOf: UnsafeRawBufferPointer(start: base + offset, count: buffer.count - offset))
        }
    }

    /// The digest of everything given so far.
    ///
    /// The hash itself is left unchanged: more bytes can still be added, and the digest asked for again.
    ///
    /// - Returns: The 32 bytes of the digest.
    package func finalize() -> [UInt8] {
        var copy = self
        let bitLength = length &* 8
        // Padding: 0x80, zeros up to 56 mod 64, then the message length in bits, big-endian.
        var padding: [UInt8] = [0x80]
        let afterMarker = (pending.count + 1) % SHA256Hasher.blockSize
        let zeros = afterMarker <= 56 ? 56 - afterMarker : 120 - afterMarker
        padding.append(contentsOf: repeatElement(0, count: zeros))
        withUnsafeBytes(of: bitLength.bigEndian) { padding.append(contentsOf: $0) }
        padding.withUnsafeBytes { copy.update(bufferPointer: $0) }
        precondition(copy.pending.isEmpty, "SHA-256 padding must end on a block boundary")

        var digest: [UInt8] = []
        digest.reserveCapacity(SHA256Hasher.digestByteCount)
        for word in [copy.h0, copy.h1, copy.h2, copy.h3, copy.h4, copy.h5, copy.h6, copy.h7] {
            withUnsafeBytes(of: word.bigEndian) { digest.append(contentsOf: $0) }
        }
        return digest
    }

    /// The digest of everything given so far, as 64 lowercase hexadecimal digits.
    package var hexDigest: String {
        SHA256Hasher.hex(finalize())
    }

    /// The digest of `bytes`.
    ///
    /// - Parameter bytes: The whole message.
    /// - Returns: The 32 bytes of the digest.
    package static func hash(_ bytes: some DataProtocol) -> [UInt8] {
        var hash = SHA256Hasher()
        hash.update(bytes)
        return hash.finalize()
    }

    /// Formats bytes, typically a digest, as lowercase hexadecimal digits.
    ///
    /// - Parameter bytes: The bytes to format.
    /// - Returns: Two digits per byte, with no separator.
    package static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            text.append(digits[Int(byte &>> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    // MARK: - Compression

    private static let blockSize = 64

    /// The round constants: the first 32 bits of the fractional parts of the cube roots of the first 64 primes.
    private static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    /// Processes `count` consecutive 64-byte blocks starting at `blocks`.
    ///
    /// Written to be fast in debug builds too, where every generic call stays a call: masking shifts (`&>>`,
    /// inlined even at `-Onone`, unlike `>>`), `while` loops rather than range iterators, raw pointers for the
    /// schedule and the constants, and the working variables in locals.
    private mutating func compress(blocksAt blocks: UnsafeRawPointer, count: Int) {
        SHA256Hasher.roundConstants.withUnsafeBufferPointer { constants in
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { schedule in
                let k = constants.baseAddress!
                let w = schedule.baseAddress!
                var state = (h0, h1, h2, h3, h4, h5, h6, h7)
                var block = 0
                while block < count {
                    let bytes = blocks + block &* SHA256Hasher.blockSize
                    var t = 0
                    while t < 16 {
                        w[t] = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: t &* 4, as: UInt32.self))
                        t &+= 1
                    }
                    while t < 64 {
                        let x = w[t &- 15]
                        let y = w[t &- 2]
                        let s0 = (x &>> 7 | x &<< 25) ^ (x &>> 18 | x &<< 14) ^ (x &>> 3)
                        let s1 = (y &>> 17 | y &<< 15) ^ (y &>> 19 | y &<< 13) ^ (y &>> 10)
                        w[t] = w[t &- 16] &+ s0 &+ w[t &- 7] &+ s1
                        t &+= 1
                    }
                    var (a, b, c, d, e, f, g, h) = state
                    t = 0
                    while t < 64 {
                        let sigma1 = (e &>> 6 | e &<< 26) ^ (e &>> 11 | e &<< 21) ^ (e &>> 25 | e &<< 7)
                        let choice = (e & f) ^ (~e & g)
                        let t1 = h &+ sigma1 &+ choice &+ k[t] &+ w[t]
                        let sigma0 = (a &>> 2 | a &<< 30) ^ (a &>> 13 | a &<< 19) ^ (a &>> 22 | a &<< 10)
                        let majority = (a & b) ^ (a & c) ^ (b & c)
                        h = g
                        g = f
                        f = e
                        e = d &+ t1
                        d = c
                        c = b
                        b = a
                        a = t1 &+ sigma0 &+ majority
                        t &+= 1
                    }
                    state.0 &+= a
                    state.1 &+= b
                    state.2 &+= c
                    state.3 &+= d
                    state.4 &+= e
                    state.5 &+= f
                    state.6 &+= g
                    state.7 &+= h
                    block &+= 1
                }
                (h0, h1, h2, h3, h4, h5, h6, h7) = state
            }
        }
    }
}
