import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Parses `multipart/form-data` bodies (RFC 7578), to check in a test what a client uploaded.
///
/// Independent of the library's own encoder, so a test compares the client against a second implementation.
/// Small bodies are parsed in one call, every part with its bytes:
///
/// ```swift
/// let parts = try MultipartParser.parse(request.body, contentType: request.header("Content-Type") ?? "")
/// XCTAssertEqual(parts.map(\.name), ["user", "avatar"])
/// XCTAssertEqual(parts[1].filename, "me.png")
/// ```
///
/// Large bodies are parsed as they arrive, keeping a SHA-256 and a byte count of every part instead of its bytes,
/// so memory stays bounded by the pieces fed and the boundary search window:
///
/// ```swift
/// server.streamingRoute("POST", "/upload") { request, body in
///     let parts = try? MultipartParser.parseStreaming(body, contentType: request.header("Content-Type") ?? "")
///     return .json(parts?.map(\.sha256Hex) ?? [])
/// }
/// ```
///
/// or, piece by piece, with ``consume(_:)`` and ``finish()``.
///
/// `name` and `filename` parameters are read as quoted strings (with RFC 2616 `\"` quoted pairs) or tokens,
/// then the WHATWG form escapes `%22`, `%0D`, `%0A`, and `%5C` (which SwiftConnect adds for `\`), are decoded (in
/// either case); any other `%`
/// sequence is left alone, and non-ASCII characters are taken as UTF-8. Invalid input, however hostile, ends in
/// an ``Error``, never a crash.
public struct MultipartParser: Sendable {
    /// Why a body could not be parsed.
    public enum Error: Swift.Error, Equatable, Sendable, CustomStringConvertible {
        /// The content type is not `multipart/…`.
        case notMultipart(contentType: String)
        /// The content type has no usable `boundary` parameter: missing, empty, longer than 256 bytes, or
        /// containing CR or LF.
        case missingBoundary
        /// The body contains no boundary delimiter line at all.
        case missingOpeningBoundary
        /// The part at `index` (counting from 0) is invalid: its header block is larger than 16 KiB or has a line
        /// without a colon (a body that ends inside a header block fails with ``missingClosingBoundary``); it has no `Content-Disposition: form-data` field with a `name`; or the
        /// field's parameters are malformed (an unterminated quoted string, for example).
        case malformedPart(index: Int)
        /// The body ends before the closing delimiter `--boundary--`.
        case missingClosingBoundary

        /// A sentence describing the error.
        public var description: String {
            switch self {
            case .notMultipart(let contentType): "MultipartParser: not a multipart content type: \(contentType)"
            case .missingBoundary: "MultipartParser: the content type has no usable boundary parameter"
            case .missingOpeningBoundary: "MultipartParser: the body contains no boundary delimiter"
            case .malformedPart(let index): "MultipartParser: part \(index) is malformed"
            case .missingClosingBoundary: "MultipartParser: the body ends before the closing boundary"
            }
        }
    }

    /// The boundary, as given in the content type.
    public let boundary: String

    /// Parts whose size is at most this many bytes keep their bytes in ``MultipartPartDigest/data``.
    public let retainedPartLimit: Int

    private var scanner: MultipartScanner
    private var collector: DigestCollector

    /// Creates a parser for a body of type `contentType`, to be fed with ``consume(_:)``.
    ///
    /// - Parameters:
    ///   - contentType: The request's `Content-Type`, for example `multipart/form-data; boundary="x y"`.
    ///   - retainedPartLimit: Parts of at most this many bytes keep their bytes (text fields, typically); larger
    ///     ones only their digest. 16 KiB by default; 0 keeps only the (empty) bytes of empty parts.
    /// - Throws: ``Error/notMultipart(contentType:)`` or ``Error/missingBoundary``.
    public init(contentType: String, retainingPartsUpTo retainedPartLimit: Int = 16 * 1024) throws(Error) {
        boundary = try MultipartParser.boundary(in: contentType)
        self.retainedPartLimit = max(0, retainedPartLimit)
        scanner = MultipartScanner(boundary: Array(boundary.utf8))
        collector = DigestCollector(retainedPartLimit: self.retainedPartLimit)
    }

    /// Parses the next bytes of the body.
    ///
    /// - Parameter bytes: The next bytes, split anywhere.
    /// - Throws: ``Error/malformedPart(index:)``; once thrown, every later call throws the same error.
    public mutating func consume(_ bytes: some DataProtocol) throws(Error) {
        for region in bytes.regions {
            // `withUnsafeBytes` rethrows untyped errors: carry the typed one out in a `Result`.
            try region.withUnsafeBytes { buffer in
                Result { () throws(Error) in try scanner.consume(buffer, into: &collector) }
            }.get()
        }
    }

    /// Ends the body and returns its parts.
    ///
    /// - Returns: One digest per part, in order.
    /// - Throws: ``Error/missingOpeningBoundary``, ``Error/missingClosingBoundary`` or the error an earlier call
    ///   threw.
    public mutating func finish() throws(Error) -> [MultipartPartDigest] {
        try scanner.finish()
        return collector.parts
    }

    // MARK: - One-call parsing

    /// Parses a whole body held in memory.
    ///
    /// - Parameters:
    ///   - body: The body.
    ///   - contentType: The request's `Content-Type`, which carries the boundary.
    /// - Returns: The parts, in order, each with its bytes.
    /// - Throws: ``Error``.
    public static func parse(_ body: Data, contentType: String) throws(Error) -> [MultipartPart] {
        var scanner = MultipartScanner(boundary: Array(try boundary(in: contentType).utf8))
        var collector = PartCollector()
        try body.withUnsafeBytes { buffer in
            Result { () throws(Error) in try scanner.consume(buffer, into: &collector) }
        }.get()
        try scanner.finish()
        return collector.parts
    }

    /// Parses a body as it is read from a streaming route, without keeping the parts' bytes.
    ///
    /// - Parameters:
    ///   - body: The reader the streaming route's handler got; read to its end.
    ///   - contentType: The request's `Content-Type`, which carries the boundary.
    ///   - readSize: The most bytes read at a time; 64 KiB by default.
    ///   - retainedPartLimit: Parts of at most this many bytes keep their bytes; 16 KiB by default.
    /// - Returns: One digest per part, in order.
    /// - Throws: ``Error``; ``Error/missingClosingBoundary`` if the body was cut short.
    public static func parseStreaming(
        _ body: LocalServer.BodyReader,
        contentType: String,
        readSize: Int = 64 * 1024,
        retainingPartsUpTo retainedPartLimit: Int = 16 * 1024
    ) throws(Error) -> [MultipartPartDigest] {
        var parser = try MultipartParser(contentType: contentType, retainingPartsUpTo: retainedPartLimit)
        while let piece = body.read(maxBytes: readSize) {
            try parser.consume(piece)
        }
        return try parser.finish()
    }

    // MARK: - Content type

    /// The longest boundary accepted (RFC 2046 allows 70 bytes; longer ones are accepted, up to this).
    static let maximumBoundaryLength = 256

    /// Extracts the `boundary` parameter, quoted or not, from a multipart content type.
    ///
    /// - Parameter contentType: For example `multipart/form-data; charset=utf-8; boundary="a b"`.
    /// - Returns: The boundary, unquoted.
    /// - Throws: ``Error/notMultipart(contentType:)`` or ``Error/missingBoundary``.
    public static func boundary(in contentType: String) throws(Error) -> String {
        let bytes = Array(contentType.utf8)
        guard let value = HeaderParameters(bytes) else { throw .notMultipart(contentType: contentType) }
        guard String(decoding: value.token, as: UTF8.self).lowercased().hasPrefix("multipart/") else {
            throw .notMultipart(contentType: contentType)
        }
        guard let boundary = value.parameters.first(where: { $0.name == "boundary" })?.value,
            !boundary.isEmpty, boundary.count <= maximumBoundaryLength,
            !boundary.contains(0x0D), !boundary.contains(0x0A)
        else { throw .missingBoundary }
        return String(decoding: boundary, as: UTF8.self)
    }
}

// MARK: - Parts

/// One part of a `multipart/form-data` body, with its bytes, as ``MultipartParser/parse(_:contentType:)`` gives.
public struct MultipartPart: Sendable, Equatable {
    /// The `name` parameter of the part's `Content-Disposition`, escapes decoded.
    public var name: String

    /// The `filename` parameter, escapes decoded; `nil` for a plain field, `""` for an empty file input.
    public var filename: String?

    /// The part's `Content-Type` field, as sent; `nil` if there is none.
    public var contentType: String?

    /// Every header field of the part, in order, with names as sent.
    public var headers: [(name: String, value: String)]

    /// The part's bytes.
    public var data: Data

    /// Creates a part.
    ///
    /// - Parameters:
    ///   - name: The field name.
    ///   - filename: The file name, `nil` for a plain field.
    ///   - contentType: The part's content type.
    ///   - headers: The part's header fields.
    ///   - data: The part's bytes.
    public init(
        name: String,
        filename: String? = nil,
        contentType: String? = nil,
        headers: [(name: String, value: String)] = [],
        data: Data
    ) {
        self.name = name
        self.filename = filename
        self.contentType = contentType
        self.headers = headers
        self.data = data
    }

    /// The value of the first header field called `name`, compared case-insensitively.
    ///
    /// - Parameter name: The field name.
    /// - Returns: The value, or `nil` if the part has no such field.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// What the streaming parser would report for this part, to compare its results with ``data``'s.
    ///
    /// - Parameter retainedPartLimit: Keep ``data`` in the digest if it has at most this many bytes, as the
    ///   streaming parser does; 16 KiB by default.
    /// - Returns: The part's metadata with the SHA-256 and length of ``data``.
    public func digest(retainingUpTo retainedPartLimit: Int = 16 * 1024) -> MultipartPartDigest {
        MultipartPartDigest(
            name: name,
            filename: filename,
            contentType: contentType,
            headers: headers,
            byteCount: data.count,
            sha256: SHA256.hash(data),
            data: data.count <= retainedPartLimit ? data : nil
        )
    }

    /// Compares everything, headers included.
    public static func == (lhs: MultipartPart, rhs: MultipartPart) -> Bool {
        lhs.name == rhs.name && lhs.filename == rhs.filename && lhs.contentType == rhs.contentType
            && lhs.headers.elementsEqual(rhs.headers, by: ==) && lhs.data == rhs.data
    }
}

/// One part of a `multipart/form-data` body as the streaming parser reports it: its metadata, its length and its
/// SHA-256, and its bytes only if it is small.
public struct MultipartPartDigest: Sendable, Equatable {
    /// The `name` parameter of the part's `Content-Disposition`, escapes decoded.
    public var name: String

    /// The `filename` parameter, escapes decoded; `nil` for a plain field.
    public var filename: String?

    /// The part's `Content-Type` field, as sent; `nil` if there is none.
    public var contentType: String?

    /// Every header field of the part, in order, with names as sent.
    public var headers: [(name: String, value: String)]

    /// The number of bytes in the part.
    public var byteCount: Int

    /// The SHA-256 of the part's bytes.
    public var sha256: [UInt8]

    /// The part's bytes if there are at most ``MultipartParser/retainedPartLimit`` of them, else `nil`.
    public var data: Data?

    /// Creates a part digest.
    ///
    /// - Parameters:
    ///   - name: The field name.
    ///   - filename: The file name, `nil` for a plain field.
    ///   - contentType: The part's content type.
    ///   - headers: The part's header fields.
    ///   - byteCount: The number of bytes in the part.
    ///   - sha256: The SHA-256 of the part's bytes.
    ///   - data: The part's bytes, if kept.
    public init(
        name: String,
        filename: String? = nil,
        contentType: String? = nil,
        headers: [(name: String, value: String)] = [],
        byteCount: Int,
        sha256: [UInt8],
        data: Data? = nil
    ) {
        self.name = name
        self.filename = filename
        self.contentType = contentType
        self.headers = headers
        self.byteCount = byteCount
        self.sha256 = sha256
        self.data = data
    }

    /// ``sha256`` as 64 lowercase hexadecimal digits.
    public var sha256Hex: String {
        SHA256.hex(sha256)
    }

    /// The value of the first header field called `name`, compared case-insensitively.
    ///
    /// - Parameter name: The field name.
    /// - Returns: The value, or `nil` if the part has no such field.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// Compares everything, headers included.
    public static func == (lhs: MultipartPartDigest, rhs: MultipartPartDigest) -> Bool {
        lhs.name == rhs.name && lhs.filename == rhs.filename && lhs.contentType == rhs.contentType
            && lhs.headers.elementsEqual(rhs.headers, by: ==) && lhs.byteCount == rhs.byteCount
            && lhs.sha256 == rhs.sha256 && lhs.data == rhs.data
    }
}

// MARK: - Collectors

/// Receives what a ``MultipartScanner`` finds: the head of each part, its bytes in pieces, its end.
protocol MultipartSink {
    mutating func beginPart(_ head: MultipartScanner.PartHead)
    mutating func appendToPart(_ bytes: UnsafeRawBufferPointer)
    mutating func endPart()
}

/// Keeps every part with its bytes.
private struct PartCollector: MultipartSink {
    var parts: [MultipartPart] = []

    mutating func beginPart(_ head: MultipartScanner.PartHead) {
        parts.append(
            MultipartPart(
                name: head.name, filename: head.filename, contentType: head.contentType, headers: head.headers,
                data: Data()))
    }

    mutating func appendToPart(_ bytes: UnsafeRawBufferPointer) {
        parts[parts.count - 1].data.append(contentsOf: bytes)
    }

    mutating func endPart() {}
}

/// Keeps every part's metadata, length and SHA-256, and the bytes of the small ones.
private struct DigestCollector: MultipartSink {
    let retainedPartLimit: Int
    var parts: [MultipartPartDigest] = []
    private var current: MultipartScanner.PartHead?
    private var hash = SHA256()
    private var byteCount = 0
    /// The part's bytes so far, while they fit in the limit.
    private var retained: Data? = Data()

    init(retainedPartLimit: Int) {
        self.retainedPartLimit = retainedPartLimit
    }

    mutating func beginPart(_ head: MultipartScanner.PartHead) {
        current = head
        hash = SHA256()
        byteCount = 0
        retained = Data()
    }

    mutating func appendToPart(_ bytes: UnsafeRawBufferPointer) {
        hash.update(bufferPointer: bytes)
        byteCount += bytes.count
        if byteCount > retainedPartLimit {
            retained = nil
        } else {
            retained?.append(contentsOf: bytes)
        }
    }

    mutating func endPart() {
        guard let head = current else { return }
        parts.append(
            MultipartPartDigest(
                name: head.name, filename: head.filename, contentType: head.contentType, headers: head.headers,
                byteCount: byteCount, sha256: hash.finalize(), data: retained))
        current = nil
    }
}

// MARK: - Scanner

/// The incremental multipart state machine shared by both parsers.
///
/// The body is scanned as if preceded by CRLF, so every delimiter, the first included, reads
/// `CRLF--boundary`. A delimiter must be followed by `--` (the close delimiter) or by optional spaces and tabs
/// then CRLF; a `CRLF--boundary` followed by anything else is content, as in Go's `mime/multipart`. Bytes
/// that might start a delimiter are held back until the next bytes decide, so at most one boundary's worth of a
/// part's bytes (plus padding) is ever held, and at most 16 KiB of headers.
struct MultipartScanner {
    /// What a part's header block says.
    struct PartHead {
        var name: String
        var filename: String?
        var contentType: String?
        var headers: [(name: String, value: String)]
    }

    private enum State {
        /// Before the first delimiter: bytes are dropped.
        case preamble
        /// After a delimiter line; the buffer starts with the CRLF that ends it.
        case headers(index: Int)
        /// In the bytes of part `index`.
        case body(index: Int)
        /// After the close delimiter: bytes are dropped.
        case epilogue
        case failed(MultipartParser.Error)
    }

    /// What follows a `CRLF--boundary` found in the buffer.
    private enum Delimiter {
        /// `--`: the close delimiter, which ends at `end`.
        case close(end: Int)
        /// Optional padding then CRLF, which starts at `lineEnd`.
        case open(lineEnd: Int)
        /// Anything else: the match is content.
        case none
        /// Too few bytes yet to tell.
        case undecided
    }

    static let maximumHeaderBlock = 16 * 1024
    private static let maximumPadding = 1024

    private let delimiter: [UInt8]
    private var buffer: [UInt8] = [0x0D, 0x0A]
    private var state = State.preamble

    init(boundary: [UInt8]) {
        delimiter = [0x0D, 0x0A, 0x2D, 0x2D] + boundary
    }

    /// Scans `bytes`, reporting parts to `sink`.
    mutating func consume(_ bytes: UnsafeRawBufferPointer, into sink: inout some MultipartSink)
        throws(MultipartParser.Error)
    {
        if case .failed(let error) = state { throw error }
        if case .epilogue = state { return }
        buffer.append(contentsOf: bytes)
        do {
            try scan(into: &sink)
        } catch {
            state = .failed(error)
            buffer = []
            throw error
        }
    }

    /// Checks that the body ended after its close delimiter.
    mutating func finish() throws(MultipartParser.Error) {
        switch state {
        case .epilogue: return
        case .failed(let error): throw error
        case .preamble: throw .missingOpeningBoundary
        case .headers, .body: throw .missingClosingBoundary
        }
    }

    private mutating func scan(into sink: inout some MultipartSink) throws(MultipartParser.Error) {
        while true {
            switch state {
            case .failed, .epilogue:
                buffer = []
                return
            case .preamble, .body:
                guard try scanForDelimiter(into: &sink) else { return }
            case .headers(let index):
                guard let end = offset(of: MultipartScanner.headerTerminator, from: 0) else {
                    // The terminator, when it comes, cannot start before `buffer.count - 3` any more.
                    if buffer.count - 3 > MultipartScanner.maximumHeaderBlock { throw .malformedPart(index: index) }
                    return
                }
                guard end <= MultipartScanner.maximumHeaderBlock else { throw .malformedPart(index: index) }
                // `end` is 0 for an empty header block: the delimiter line's CRLF is the terminator's first half.
                let head = buffer.withUnsafeBytes { all in
                    MultipartScanner.parseHead(UnsafeRawBufferPointer(rebasing: all[min(2, end)..<end]))
                }
                guard let head else { throw .malformedPart(index: index) }
                buffer.removeFirst(end + MultipartScanner.headerTerminator.count)
                sink.beginPart(head)
                state = .body(index: index)
            }
        }
    }

    /// Looks for the next delimiter, passing the bytes before it to `sink` if in a part.
    ///
    /// - Returns: Whether the state changed and scanning can go on; `false` if more bytes are needed.
    private mutating func scanForDelimiter(into sink: inout some MultipartSink) throws(MultipartParser.Error) -> Bool {
        var from = 0
        while true {
            guard let found = offset(of: delimiter, from: from) else {
                // Keep what could be the start of a delimiter; the rest is content.
                release(buffer.count - min(buffer.count, delimiter.count - 1), into: &sink)
                return false
            }
            switch delimiterKind(at: found + delimiter.count) {
            case .none:
                from = found + 1
            case .undecided:
                release(found, into: &sink)
                return false
            case .close(let end):
                release(found, into: &sink)
                if case .body = state { sink.endPart() }
                buffer.removeFirst(end - found)
                state = .epilogue
                return true
            case .open(let lineEnd):
                release(found, into: &sink)
                let next: Int
                if case .body(let index) = state {
                    sink.endPart()
                    next = index + 1
                } else {
                    next = 0
                }
                buffer.removeFirst(lineEnd - found)
                state = .headers(index: next)
                return true
            }
        }
    }

    /// Removes the first `count` bytes of the buffer, giving them to `sink` if in a part.
    private mutating func release(_ count: Int, into sink: inout some MultipartSink) {
        guard count > 0 else { return }
        if case .body = state {
            buffer.withUnsafeBytes { sink.appendToPart(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        }
        buffer.removeFirst(count)
    }

    private func delimiterKind(at start: Int) -> Delimiter {
        guard buffer.count - start >= 2 else { return .undecided }
        if buffer[start] == 0x2D, buffer[start + 1] == 0x2D { return .close(end: start + 2) }
        var index = start
        while index < buffer.count, buffer[index] == 0x20 || buffer[index] == 0x09 {
            index += 1
            if index - start > MultipartScanner.maximumPadding { return .none }
        }
        guard index + 1 < buffer.count else { return .undecided }
        return buffer[index] == 0x0D && buffer[index + 1] == 0x0A ? .open(lineEnd: index) : .none
    }

    private static let headerTerminator: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A]

    /// The offset of the first occurrence of `needle` in the buffer at or after `start`, found with `memchr`.
    private func offset(of needle: [UInt8], from start: Int) -> Int? {
        buffer.withUnsafeBytes { all -> Int? in
            guard let base = all.baseAddress else { return nil }
            let last = all.count - needle.count
            var candidate = start
            while candidate <= last {
                guard let hit = memchr(base + candidate, Int32(needle[0]), last - candidate + 1) else { return nil }
                candidate = base.distance(to: UnsafeRawPointer(hit))
                if needle.withUnsafeBytes({ memcmp(base + candidate, $0.baseAddress!, needle.count) }) == 0 {
                    return candidate
                }
                candidate += 1
            }
            return nil
        }
    }

    // MARK: - Part headers

    /// Parses a part's header block (without its final blank line).
    ///
    /// - Returns: `nil` if a line has no colon, a folded line has nothing to continue, or `Content-Disposition`
    ///   is missing, not `form-data`, has no `name` or malformed parameters.
    static func parseHead(_ block: UnsafeRawBufferPointer) -> PartHead? {
        var headers: [(name: [UInt8], value: [UInt8])] = []
        for rawLine in block.split(separator: 0x0A, omittingEmptySubsequences: false) {
            var line = rawLine[...]
            if line.last == 0x0D { line = line.dropLast() }
            if line.isEmpty { continue }
            if line.first == 0x20 || line.first == 0x09 {
                guard !headers.isEmpty else { return nil }  // obs-fold: continues the previous field.
                headers[headers.count - 1].value += [0x20] + trimmed(line)
                continue
            }
            guard let colon = line.firstIndex(of: 0x3A) else { return nil }
            let name = trimmed(line[..<colon])
            guard !name.isEmpty else { return nil }
            headers.append((Array(name), Array(trimmed(line[(colon + 1)...]))))
        }
        let fields = headers.map {
            (name: String(decoding: $0.name, as: UTF8.self), value: String(decoding: $0.value, as: UTF8.self))
        }
        guard let disposition = headers.first(where: { isName($0.name, "content-disposition") }),
            let parsed = HeaderParameters(disposition.value),
            isName(parsed.token, "form-data"),
            let name = parsed.parameters.first(where: { $0.name == "name" })
        else { return nil }
        let filename = parsed.parameters.first { $0.name == "filename" }
        return PartHead(
            name: decodedFormValue(name.value),
            filename: filename.map { decodedFormValue($0.value) },
            contentType: fields.first { $0.name.caseInsensitiveEquals("content-type") }?.value,
            headers: fields
        )
    }

    /// Decodes the WHATWG escapes of a `name` or `filename`: `%22`, `%0D`, `%0A`, `%5C`, in either case.
    static func decodedFormValue(_ bytes: [UInt8]) -> String {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == 0x25, index + 2 < bytes.count {
                // Lowercases the second digit when it is a letter (A to F): only there, or a control byte such as
                // 0x12 would read as the digit 2.
                let second = bytes[index + 2]
                let escape = (bytes[index + 1], (0x41...0x46).contains(second) ? second | 0x20 : second)
                let decoded: UInt8? =
                    switch escape {
                    case (0x32, 0x32): 0x22  // %22 "
                    case (0x30, 0x64): 0x0D  // %0D CR
                    case (0x30, 0x61): 0x0A  // %0A LF
                    case (0x35, 0x63): 0x5C  // %5C \
                    default: nil
                    }
                if let decoded {
                    result.append(decoded)
                    index += 3
                    continue
                }
            }
            result.append(bytes[index])
            index += 1
        }
        return String(decoding: result, as: UTF8.self)
    }

    private static func isName(_ bytes: some Collection<UInt8>, _ lowercase: String) -> Bool {
        bytes.count == lowercase.utf8.count
            && zip(bytes, lowercase.utf8).allSatisfy { $0 == $1 || ($0 | 0x20 == $1 && $1 >= 0x61 && $1 <= 0x7A) }
    }

    private static func trimmed<C: BidirectionalCollection<UInt8>>(_ bytes: C) -> C.SubSequence {
        var slice = bytes[...]
        while let first = slice.first, first == 0x20 || first == 0x09 { slice = slice.dropFirst() }
        while let last = slice.last, last == 0x20 || last == 0x09 { slice = slice.dropLast() }
        return slice
    }
}

// MARK: - Header parameters

/// A header value of the form `token *( ";" name "=" ( token / quoted-string ) )`, as in `Content-Type` and
/// `Content-Disposition`.
///
/// Parameter names are lowercased; values are unquoted, quoted pairs (`\"`) resolved, and otherwise kept as
/// bytes. A parameter without `=` is skipped.
struct HeaderParameters {
    var token: [UInt8]
    var parameters: [(name: String, value: [UInt8])]

    /// Parses `bytes`; `nil` if a quoted string is unterminated or followed by something other than `;`.
    init?(_ bytes: [UInt8]) {
        var index = 0
        func skipSpaces() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
        }
        func trimmedSlice(_ start: Int, _ end: Int) -> [UInt8] {
            var (start, end) = (start, end)
            while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
            while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
            return Array(bytes[start..<end])
        }

        let tokenStart = index
        while index < bytes.count, bytes[index] != 0x3B { index += 1 }
        token = trimmedSlice(tokenStart, index)
        parameters = []

        while index < bytes.count {
            index += 1  // The ";".
            skipSpaces()
            let nameStart = index
            while index < bytes.count, bytes[index] != 0x3D, bytes[index] != 0x3B { index += 1 }
            let name = String(decoding: trimmedSlice(nameStart, index), as: UTF8.self).lowercased()
            guard index < bytes.count, bytes[index] == 0x3D else { continue }  // No "=": skipped.
            index += 1
            skipSpaces()
            var value: [UInt8] = []
            if index < bytes.count, bytes[index] == 0x22 {
                index += 1
                var closed = false
                while index < bytes.count {
                    let byte = bytes[index]
                    index += 1
                    if byte == 0x22 {
                        closed = true
                        break
                    }
                    if byte == 0x5C, index < bytes.count {
                        value.append(bytes[index])
                        index += 1
                    } else {
                        value.append(byte)
                    }
                }
                guard closed else { return nil }
                skipSpaces()
                guard index == bytes.count || bytes[index] == 0x3B else { return nil }
            } else {
                let valueStart = index
                while index < bytes.count, bytes[index] != 0x3B { index += 1 }
                value = trimmedSlice(valueStart, index)
            }
            if !name.isEmpty { parameters.append((name, value)) }
        }
    }
}
