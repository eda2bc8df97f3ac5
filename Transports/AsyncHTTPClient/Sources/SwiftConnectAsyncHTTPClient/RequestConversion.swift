import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A hop of the core's exchange as AsyncHTTPClient takes it: a field-by-field copy of its head, no URL parsed
/// again and no Foundation request made.
enum RequestConversion {
    /// The request to send for `hop`: its method, target and header fields in order, and its body: from memory, or
    /// streamed from its file (each chunk counted by `hop.sent`). With `relay`, it goes to that Unix socket (a pinned
    /// host's, see ``PinnedRoutes``), with the host's authority in its `Host` field.
    static func request(for hop: EngineRequest, relay: String? = nil) throws -> HTTPClientRequest {
        let head = hop.head
        let url =
            try relay.map { try target(head.path, through: $0) } ?? "\(head.scheme)://\(head.authority)\(head.path)"
        var request = HTTPClientRequest(url: url)
        request.method = NIOHTTP1.HTTPMethod(rawValue: head.method.rawValue)
        request.headers.reserveCapacity(head.headerFields.count + 1)
        for field in head.headerFields { request.headers.add(name: field.name.rawName, value: field.value) }
        if relay != nil, !request.headers.contains(name: "Host") {
            request.headers.add(name: "Host", value: head.authority)
        }
        switch hop.body {
        case .none:
            break
        case .bytes(let data):
            request.body = .bytes(ByteBuffer(data: data))
        case .file(let file, let length):
            request.body = .stream(FileChunks(file: file, size: length, sent: hop.sent), length: .known(length))
        }
        return request
    }

    /// `path` (with its query), sent to the Unix socket at `socketPath`.
    private static func target(_ path: String, through socketPath: String) throws -> String {
        guard let target = URL(httpURLWithSocketPath: socketPath, uri: path) else { throw HTTPClientError.invalidURL }
        return target.absoluteString
    }
}

/// A request body read from a file chunk by chunk, each chunk read when the connection is ready for it.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    /// How much of the file is read at a time.
    static let chunkSize = 64 << 10

    let file: URL
    /// The length announced: the reading stops there, even if the file grew meanwhile.
    let size: Int64
    /// Told the length of each chunk handed over.
    let sent: @Sendable (Int64) -> Void

    func makeAsyncIterator() -> Iterator {
        Iterator(file: file, remaining: size, sent: sent)
    }

    struct Iterator: AsyncIteratorProtocol {
        let file: URL
        var remaining: Int64
        let sent: @Sendable (Int64) -> Void
        var handle: FileHandle?

        init(file: URL, remaining: Int64, sent: @escaping @Sendable (Int64) -> Void) {
            self.file = file
            self.remaining = remaining
            self.sent = sent
        }

        mutating func next() async throws -> ByteBuffer? {
            guard remaining > 0 else {
                try? handle?.close()
                handle = nil
                return nil
            }
            if handle == nil { handle = try FileHandle(forReadingFrom: file) }
            let chunk = try handle?.read(upToCount: Int(Swift.min(Int64(FileChunks.chunkSize), remaining))) ?? Data()
            guard !chunk.isEmpty else {
                // The file shrank: AsyncHTTPClient reports the body shorter than announced.
                try? handle?.close()
                handle = nil
                return nil
            }
            remaining -= Int64(chunk.count)
            sent(Int64(chunk.count))
            return ByteBuffer(data: chunk)
        }
    }
}
