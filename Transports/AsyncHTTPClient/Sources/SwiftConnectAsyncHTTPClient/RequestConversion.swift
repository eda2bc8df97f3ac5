import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A `URLRequest` as AsyncHTTPClient takes it.
enum RequestConversion {
    /// The request to send for `hop`: its URL, method and header fields, and its body: from `bodyFile` when given
    /// (streamed from disk, each chunk counted by `sent`), else from memory or its `httpBodyStream` (read whole
    /// first). With `relay`, it goes to that Unix socket (a pinned host's, see ``PinnedRoutes``), with the host's
    /// name in its `Host` field.
    static func request(for hop: URLRequest, bodyFile: URL?, sent: (@Sendable (Int64) -> Void)?, relay: String? = nil)
        throws -> HTTPClientRequest
    {
        guard let url = hop.url else { throw HTTPClientError.invalidURL }
        var request = HTTPClientRequest(url: try relay.map { try target(of: url, through: $0) } ?? url.absoluteString)
        request.method = NIOHTTP1.HTTPMethod(rawValue: hop.httpMethod ?? "GET")
        if let fields = hop.allHTTPHeaderFields {
            request.headers.reserveCapacity(fields.count)
            for (name, value) in fields { request.headers.add(name: name, value: value) }
        }
        if relay != nil, !request.headers.contains(name: "Host"), let host = url.host {
            let name = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
            request.headers.add(name: "Host", value: url.port.map { name + ":\($0)" } ?? name)
        }
        if let user = url.user(percentEncoded: false), !request.headers.contains(name: "Authorization") {
            // The URL's `user:password@` part, as URLSession sends it (AsyncHTTPClient ignores it).
            let credentials = "\(user):\(url.password(percentEncoded: false) ?? "")"
            request.headers.add(name: "Authorization", value: "Basic " + Data(credentials.utf8).base64EncodedString())
        }
        if let bodyFile {
            let size = try FileManager.default.attributesOfItem(atPath: bodyFile.path)[.size] as? Int64 ?? 0
            request.body = .stream(FileChunks(file: bodyFile, size: size, sent: sent), length: .known(size))
        } else if let data = hop.httpBody, !data.isEmpty {
            request.body = .bytes(ByteBuffer(data: data))
        } else if let stream = hop.httpBodyStream {
            request.body = .bytes(ByteBuffer(data: read(stream)))
        }
        return request
    }

    /// `url`'s path and query, sent to the Unix socket at `socketPath`.
    private static func target(of url: URL, through socketPath: String) throws -> String {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        var uri = components?.percentEncodedPath ?? ""
        if uri.isEmpty { uri = "/" }
        if let query = components?.percentEncodedQuery { uri += "?" + query }
        guard let target = URL(httpURLWithSocketPath: socketPath, uri: uri) else { throw HTTPClientError.invalidURL }
        return target.absoluteString
    }

    /// The number of bytes of `hop`'s body, when known before sending.
    static func bodyLength(of hop: URLRequest, bodyFile: URL?) -> Int64? {
        if let bodyFile {
            return (try? FileManager.default.attributesOfItem(atPath: bodyFile.path)[.size]) as? Int64
        }
        if hop.httpBodyStream != nil { return nil }
        return Int64(hop.httpBody?.count ?? 0)
    }

    /// Everything `stream` holds.
    private static func read(_ stream: InputStream) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        stream.open()
        defer { stream.close() }
        while true {
            let count = stream.read(&buffer, maxLength: buffer.count)
            guard count > 0 else { break }
            data.append(buffer, count: count)
        }
        return data
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
    let sent: (@Sendable (Int64) -> Void)?

    func makeAsyncIterator() -> Iterator {
        Iterator(file: file, remaining: size, sent: sent)
    }

    struct Iterator: AsyncIteratorProtocol {
        let file: URL
        var remaining: Int64
        let sent: (@Sendable (Int64) -> Void)?
        var handle: FileHandle?

        init(file: URL, remaining: Int64, sent: (@Sendable (Int64) -> Void)?) {
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
            sent?(Int64(chunk.count))
            return ByteBuffer(data: chunk)
        }
    }
}

/// Why `file` cannot be uploaded, or `nil` when it can: it must be a readable regular file (a directory, device or
/// pipe has no length to announce, or no end).
func unusableBodyFile(_ file: URL, request: URLRequest) -> ConnectError? {
    do {
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        guard attributes[.type] as? FileAttributeType == .typeRegular else {
            return ConnectError.fileAccess(POSIXError(.EINVAL), url: file, request: request)
        }
        guard FileManager.default.isReadableFile(atPath: file.path) else {
            return ConnectError.fileAccess(POSIXError(.EACCES), url: file, request: request)
        }
        return nil
    } catch {
        return ConnectError.fileAccess(error, url: file, request: request)
    }
}
