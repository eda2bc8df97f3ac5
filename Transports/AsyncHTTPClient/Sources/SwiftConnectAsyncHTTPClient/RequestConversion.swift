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
    /// first).
    static func request(for hop: URLRequest, bodyFile: URL?, sent: (@Sendable (Int64) -> Void)?) throws
        -> HTTPClientRequest
    {
        guard let url = hop.url else { throw HTTPClientError.invalidURL }
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = NIOHTTP1.HTTPMethod(rawValue: hop.httpMethod ?? "GET")
        if let fields = hop.allHTTPHeaderFields {
            request.headers.reserveCapacity(fields.count)
            for (name, value) in fields { request.headers.add(name: name, value: value) }
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
