import Foundation

// MARK: - Responses

extension LocalServer.Response {
    /// A response of `count` deterministic pseudo-random bytes, produced in 64 KiB pieces while they are sent.
    ///
    /// The same `count` and `seed` always give the same bytes: compare what a client received with
    /// ``LocalServer/generatedBytesSHA256(count:seed:)``, or write them to a file with
    /// ``LocalServer/writeGeneratedBytes(count:seed:to:)``. Memory stays at one piece, whatever `count`.
    ///
    /// ```swift
    /// server.route("GET", "/big") { _ in .generatedBytes(count: 256 << 20, seed: 7) }
    /// // … download it, then:
    /// XCTAssertEqual(SHA256.hash(downloaded), LocalServer.generatedBytesSHA256(count: 256 << 20, seed: 7))
    /// ```
    ///
    /// - Parameters:
    ///   - count: The number of bytes, sent as `Content-Length`. Add `.withFault(.chunked)` to send them chunked.
    ///   - seed: Chooses the sequence.
    ///   - contentType: The `Content-Type`; `application/octet-stream` by default.
    ///   - status: The status code; 200 by default.
    /// - Returns: The response.
    public static func generatedBytes(
        count: Int,
        seed: UInt64,
        contentType: String = "application/octet-stream",
        status: Int = 200
    ) -> Self {
        let count = max(0, count)
        return .stream(contentLength: count, contentType: contentType, status: status) { write in
            LocalServer.forEachGeneratedPiece(count: count, seed: seed) { piece in
                write(Data(bytes: piece.baseAddress!, count: piece.count))
            }
        }
    }
}

// MARK: - Client side

extension LocalServer {
    /// The bytes of ``Response/generatedBytes(count:seed:contentType:status:)``, in memory.
    ///
    /// - Parameters:
    ///   - count: The number of bytes.
    ///   - seed: Chooses the sequence.
    /// - Returns: The same bytes the response sends.
    public static func generatedBytes(count: Int, seed: UInt64) -> Data {
        var data = Data(capacity: max(0, count))
        forEachGeneratedPiece(count: count, seed: seed) { piece in
            data.append(piece.bindMemory(to: UInt8.self))
            return true
        }
        return data
    }

    /// The SHA-256 of the bytes of ``Response/generatedBytes(count:seed:contentType:status:)``, computed without
    /// holding them.
    ///
    /// - Parameters:
    ///   - count: The number of bytes.
    ///   - seed: Chooses the sequence.
    /// - Returns: The 32 bytes of the digest.
    public static func generatedBytesSHA256(count: Int, seed: UInt64) -> [UInt8] {
        var hash = SHA256()
        forEachGeneratedPiece(count: count, seed: seed) { piece in
            hash.update(bufferPointer: piece)
            return true
        }
        return hash.finalize()
    }

    /// Writes the bytes of ``Response/generatedBytes(count:seed:contentType:status:)`` to a file, 64 KiB at a
    /// time: an upload source of any size.
    ///
    /// - Parameters:
    ///   - count: The number of bytes.
    ///   - seed: Chooses the sequence.
    ///   - url: A file URL; the file is created, or replaced.
    /// - Throws: The error of creating or writing the file.
    public static func writeGeneratedBytes(count: Int, seed: UInt64, to url: URL) throws {
        guard let stream = OutputStream(url: url, append: false) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSURLErrorKey: url])
        }
        stream.open()
        defer { stream.close() }
        var failed = stream.streamStatus == .error
        forEachGeneratedPiece(count: count, seed: seed) { piece in
            var offset = 0
            while !failed, offset < piece.count {
                let written = stream.write(
                    piece.baseAddress!.assumingMemoryBound(to: UInt8.self) + offset, maxLength: piece.count - offset)
                if written <= 0 { failed = true }
                offset += max(0, written)
            }
            return !failed
        }
        if failed {
            throw stream.streamError ?? CocoaError(.fileWriteUnknown, userInfo: [NSURLErrorKey: url])
        }
    }

    /// The size of the pieces the generator produces.
    static let generatedPieceSize = 64 * 1024

    /// Produces the generated sequence in pieces of ``generatedPieceSize`` bytes (the last one shorter).
    ///
    /// The bytes are the little-endian 64-bit words of a xorshift64 generator whose state starts at the
    /// SplitMix64 mix of `seed` (never zero), truncated to `count`.
    ///
    /// - Parameter body: Gets each piece, valid during the call only; returns `false` to stop early.
    static func forEachGeneratedPiece(count: Int, seed: UInt64, _ body: (UnsafeRawBufferPointer) -> Bool) {
        var state = seed &+ 0x9E37_79B9_7F4A_7C15
        state = (state ^ (state &>> 30)) &* 0xBF58_476D_1CE4_E5B9
        state = (state ^ (state &>> 27)) &* 0x94D0_49BB_1331_11EB
        state ^= state &>> 31
        if state == 0 { state = 0x2545_F491_4F6C_DD1D }

        let wordsPerPiece = generatedPieceSize / 8
        let words = UnsafeMutablePointer<UInt64>.allocate(capacity: wordsPerPiece)
        defer { words.deallocate() }
        var remaining = max(0, count)
        while remaining > 0 {
            let pieceSize = min(remaining, generatedPieceSize)
            let wordCount = (pieceSize + 7) / 8
            var index = 0
            while index < wordCount {
                state ^= state &<< 13
                state ^= state &>> 7
                state ^= state &<< 17
                words[index] = state.littleEndian
                index &+= 1
            }
            guard body(UnsafeRawBufferPointer(start: words, count: pieceSize)) else { return }
            remaining -= pieceSize
        }
    }
}
