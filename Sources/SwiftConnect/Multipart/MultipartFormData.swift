import Foundation

/// A `multipart/form-data` body (RFC 7578): text fields and files, encoded in memory or streamed to a file.
///
/// Field names and file names follow the HTML form encoding: inside the quoted `name` and `filename`
/// parameters, `"` is sent as `%22`, CR as `%0D`, LF as `%0A` and `\` as `%5C`, and the other control characters but
/// the tab (NUL, DEL, C1's NEL…) as their UTF-8 bytes' `%XX` too; other characters, non-ASCII included, are sent as
/// UTF-8. A part's name (a field's, a file's key) must not be empty: encoding the form fails with
/// ``ConnectError/InvalidRequestReason/invalidParameter(key:reason:)``, as an empty `.query` or `.form` name does; a
/// file name may be (a browser sends `filename=""` for a file input left empty). The boundary is random (a test can
/// pass its own).
///
/// A file part streamed from disk must be a `file:` URL naming a regular file (a symbolic link to one is
/// followed): a directory, a device, a pipe or a remote URL fails with ``ConnectError/Kind/fileAccess``.
///
/// A form with no parts (every optional field of a form left out) is sent as browsers send it: the closing
/// delimiter alone (`--boundary--` and CRLF). RFC 2046 asks for one or more parts, but the HTML standard's encoding
/// gives this for an empty form, so servers take it; refusing it would fail an app's legitimate empty form.
///
/// ```swift
/// var form = MultipartFormData()
/// form.append(field: "title", value: "Holiday")
/// form.append(File(name: "beach.jpg", key: "photo", mimeType: .jpg, data: jpeg))
/// let body = try form.encodedData()
/// request.setValue(form.contentType, forHTTPHeaderField: "Content-Type")
/// ```
public struct MultipartFormData: Sendable {
    private enum Part: Sendable {
        case field(name: String, value: String)
        case file(File)

        /// The part's `name` parameter: a field's name, a file's key.
        var name: String {
            switch self {
            case .field(let name, _): return name
            case .file(let file): return file.key
            }
        }

        /// The part as reflection shows it: its name, a file's name and media type, and the size of its content,
        /// never the content itself.
        var shown: RedactedText {
            switch self {
            case .field(let name, let value):
                return RedactedText("field \(name.debugDescription) (\(value.utf8.count) bytes)")
            case .file(let file):
                let size: String
                switch file.content {
                case .data(let data): size = "\(data.count) bytes"
                case .file: size = "read from disk when sent"
                }
                return RedactedText(
                    "file \(file.key.debugDescription): \(file.name.debugDescription) (\(file.mimeType), \(size))")
            }
        }
    }

    /// The boundary between parts.
    package let boundary: String
    private var parts: [Part] = []

    /// Creates an empty body.
    ///
    /// - Parameter boundary: The boundary; random by default. It must be 1 to 70 characters from RFC 2046's set
    ///   (letters, digits and `'()+_,-./:=? `), not ending in a space; otherwise encoding fails with
    ///   ``ConnectError/InvalidRequestReason/invalidHeader(name:)`` for `Content-Type`. It must also not occur in
    ///   any part (RFC 2046): a part whose content holds the delimiter (CR LF `--` and the boundary, or a lone LF or
    ///   CR before `--` and the boundary, which lenient parsers such as Werkzeug's read as one) would end early and
    ///   the parts after it would be lost, so encoding fails with
    ///   ``ConnectError/InvalidRequestReason/bodyEncodingFailed(_:)`` instead. The random default never occurs.
    public init(boundary: String = MultipartFormData.randomBoundary()) {
        self.boundary = boundary
    }

    /// A fresh random boundary: `SwiftConnect-` followed by 32 hexadecimal digits.
    @usableFromInline static func randomBoundary() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        let hex = String(high, radix: 16) + String(low, radix: 16)
        return "SwiftConnect-" + String(repeating: "0", count: max(0, 32 - hex.count)) + hex
    }

    /// The `Content-Type` header value: `multipart/form-data; boundary=…`, the boundary quoted when it
    /// contains a character that a bare parameter value cannot (RFC 2045 `tspecials` or a space).
    public var contentType: String {
        let needsQuotes = boundary.utf8.contains { Self.quotedBoundaryCharacters.contains($0) }
        return "multipart/form-data; boundary=" + (needsQuotes ? "\"\(boundary)\"" : boundary)
    }

    /// Whether the body has no parts.
    var isEmpty: Bool { parts.isEmpty }

    /// Whether every part is in memory (no file to stream from disk).
    package var isInMemory: Bool {
        parts.allSatisfy { part in
            if case .file(let file) = part, case .file = file.content { return false }
            return true
        }
    }

    /// Adds a text field.
    ///
    /// - Parameters:
    ///   - name: The field name; not empty (encoding fails with
    ///     ``ConnectError/InvalidRequestReason/invalidParameter(key:reason:)``).
    ///   - value: The value, sent as UTF-8.
    public mutating func append(field name: String, value: String) {
        parts.append(.field(name: name, value: value))
    }

    /// Adds a file.
    ///
    /// - Parameter file: The file.
    public mutating func append(_ file: File) {
        parts.append(.file(file))
    }

    /// The size of the encoded body in bytes (file sizes read from disk).
    ///
    /// - Throws: ``ConnectError`` of kind ``ConnectError/Kind/fileAccess`` when a file is not a readable regular
    ///   file, or of kind ``ConnectError/Kind/invalidRequest`` when the boundary or a header would be invalid.
    package func contentLength() throws -> Int64 {
        try checkBoundary()
        var total: Int64 = 0
        for part in parts {
            total += Int64(try header(of: part).count)
            switch part {
            case .field(_, let value): total += Int64(value.utf8.count)
            case .file(let file):
                switch file.content {
                case .data(let data): total += Int64(data.count)
                case .file(let url): total += try Self.regularFileSize(url)
                }
            }
            total += 2  // CRLF after the content
        }
        return total + Int64(closing.count)
    }

    /// The whole body in memory. Files on disk are read; prefer ``write(to:)`` for large ones.
    ///
    /// - Returns: The encoded body.
    /// - Throws: ``ConnectError`` when the boundary or a header would be invalid or a file cannot be read.
    public func encodedData() throws -> Data {
        try checkBoundary()
        var body = Data()
        for (index, part) in parts.enumerated() {
            body.append(try header(of: part))
            var scan = DelimiterScan(boundary: boundary)
            let content: Data
            switch part {
            case .field(_, let value): content = Data(value.utf8)
            case .file(let file):
                switch file.content {
                case .data(let data): content = data
                case .file(let url):
                    _ = try Self.regularFileSize(url)
                    let input = try Self.openRegularFile(url)
                    defer { try? input.close() }
                    do { content = try Self.readToEnd(input) } catch {
                        throw ConnectError.fileAccess(error, url: url, request: nil)
                    }
                }
            }
            try check(&scan, content, part: index)
            body.append(content)
            body.append(Self.crlf)
        }
        body.append(closing)
        return body
    }

    /// Writes the body to a file, copying files from disk in 1 MiB pieces so memory stays bounded.
    ///
    /// The body goes to a new file beside `url`, renamed over it once whole: a failure leaves `url` as it was, and
    /// a part that streams from `url` itself reads its old content. A file it replaces keeps its permissions; a
    /// symbolic link there is replaced, never followed. `url` is held to the rules of a download's destination
    /// (``TransferOptions/destination``): a directory, pipe, device or socket there, or a missing folder, fails with
    /// ``ConnectError/Kind/fileAccess`` and is left as it is.
    ///
    /// - Parameter url: Where to write; replaced if it exists.
    /// - Throws: ``ConnectError`` when the boundary or a header would be invalid or a file cannot be read or
    ///   written.
    public func write(to url: URL) throws {
        try checkBoundary()
        // What a download's destination may be: a pipe, device or directory there is refused and kept, never replaced.
        try TransferOptions.checkDestination(url, stored: nil)
        let partial = ReplacementFile.url(besides: url, suffix: "partial")
        do {
            let output: FileHandle
            do {
                output = try ReplacementFile.create(partial, replacing: url)
            } catch {
                throw ConnectError.fileAccess(error, url: url, request: nil)
            }
            defer { try? output.close() }
            _ = try write(to: output, url: url)
            try Self.posix(url: url) {
                partial.withUnsafeFileSystemRepresentation { from in
                    url.withUnsafeFileSystemRepresentation { to in
                        guard let from, let to else { return -1 }
                        return rename(from, to)
                    }
                }
            }
        } catch {
            try? FileManager.default.removeItem(at: partial)
            throw error
        }
    }

    /// Writes the body to a new file that only its owner can read or write (mode 0600 from its creation, so
    /// no other local user can open it, even for a moment), and returns the number of bytes written: the
    /// body's true length, even if a file on disk grew or shrank since its length was read.
    ///
    /// - Parameter url: Where to write; must not exist.
    /// - Returns: The size of the body written.
    /// - Throws: ``ConnectError`` when the boundary or a header would be invalid or a file cannot be read or
    ///   written.
    func writePrivately(to url: URL) throws -> Int64 {
        try checkBoundary()
        var descriptor: Int32 = -1
        try Self.posix(url: url) {
            descriptor = url.withUnsafeFileSystemRepresentation { path -> Int32 in
                guard let path else { return -1 }
                return open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            }
            return descriptor
        }
        let output = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        defer { try? output.close() }
        return try write(to: output, url: url)
    }

    /// Runs a system call that returns -1 and sets `errno` on failure; a failure becomes
    /// ``ConnectError/Kind/fileAccess`` for `url`.
    private static func posix(url: URL, _ call: () -> Int32) throws {
        guard call() == -1 else { return }
        let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        throw ConnectError.fileAccess(error, url: url, request: nil)
    }

    /// Writes every part to `output` and returns the number of bytes written.
    private func write(to output: FileHandle, url: URL) throws -> Int64 {
        var written: Int64 = 0
        func put(_ data: Data) throws {
            try Self.write(data, to: output, url: url)
            written += Int64(data.count)
        }
        for (index, part) in parts.enumerated() {
            try put(try header(of: part))
            var scan = DelimiterScan(boundary: boundary)
            switch part {
            case .field(_, let value):
                let content = Data(value.utf8)
                try check(&scan, content, part: index)
                try put(content)
            case .file(let file):
                switch file.content {
                case .data(let data):
                    try check(&scan, data, part: index)
                    try put(data)
                case .file(let source):
                    written += try copy(source, to: output, url: url) { try check(&scan, $0, part: index) }
                }
            }
            try put(Self.crlf)
        }
        try put(closing)
        return written
    }

    // MARK: Encoding

    private static let crlf = Data("\r\n".utf8)
    private var closing: Data { Data("--\(boundary)--\r\n".utf8) }

    private func header(of part: Part) throws -> Data {
        var text = "--\(boundary)\r\n"
        try checkName(of: part)
        switch part {
        case .field(let name, _):
            text += "Content-Disposition: form-data; name=\"\(Self.escaped(name))\"\r\n\r\n"
        case .file(let file):
            guard HTTPHeader.isValidValue(file.mimeType.rawValue), Self.isMediaType(file.mimeType.rawValue) else {
                var error = ConnectError.invalidRequest(.invalidHeader(name: "Content-Type"))
                error.message =
                    "the Content-Type \(file.mimeType.rawValue.debugDescription) of part \(file.key.debugDescription) "
                    + "is not a media type (type/subtype, RFC 9110 8.3.1)"
                throw error
            }
            text += "Content-Disposition: form-data; name=\"\(Self.escaped(file.key))\"; "
            text += "filename=\"\(Self.escaped(file.name))\"\r\n"
            text += "Content-Type: \(file.mimeType.rawValue)\r\n\r\n"
        }
        return Data(text.utf8)
    }

    /// Fails when `part` has an empty name: `name=""` names nothing (a server's form parser drops the part or keys it
    /// under ""), as `.query(key: "")` and `.form(key: "")` name nothing and are refused. A file's empty file name is
    /// fine: it is what a browser sends for a file input left empty.
    private func checkName(of part: Part) throws {
        guard part.name.isEmpty else { return }
        let kind: String
        switch part {
        case .field: kind = "a field"
        case .file: kind = "a file"
        }
        // The first part with an empty name is the first checked: parts are encoded in order.
        let index = (parts.firstIndex { $0.name.isEmpty } ?? 0) + 1
        throw ConnectError.invalidRequest(
            .invalidParameter(
                key: "",
                reason: "part \(index) (\(kind)) of the multipart form has an empty name (it would go out as "
                    + "name=\"\"); give it the name the server expects"))
    }

    /// Whether `value` starts with a media type, `type/subtype` (two RFC 9110 tokens), before any parameters.
    static func isMediaType(_ value: String) -> Bool {
        let essence = value.prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces)
        let halves = essence.split(separator: "/", omittingEmptySubsequences: false)
        return halves.count == 2 && halves.allSatisfy { HTTPHeader.isValidName(String($0)) }
    }

    /// A `name` or `filename` value for a quoted string: `"` CR LF percent-encoded, as the WHATWG form encoding does,
    /// and `\` too, which that encoding sends as it is: a server that reads RFC 2616 quoted pairs would take `a\"`
    /// for an escaped quote, or drop the backslash of `C:\x`. The other control characters but the tab (NUL, which a
    /// C parser takes for the end of the name, DEL, and C1's, whose NEL some parsers take for a line end) are
    /// percent-encoded as well, byte by byte in UTF-8: no header line may carry them.
    /// The rest as is.
    static func escaped(_ value: String) -> String {
        var result = ""
        result.reserveCapacity(value.utf8.count)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": result += "%22"
            case "\\": result += "%5C"
            case "\t": result.unicodeScalars.append(scalar)
            case "\u{00}"..."\u{1F}", "\u{7F}"..."\u{9F}":
                // C0, DEL and C1 (NEL, U+0085, ends a line for some parsers): each UTF-8 byte escaped.
                for byte in String(scalar).utf8 {
                    let hex = String(byte, radix: 16, uppercase: true)
                    result += hex.count == 1 ? "%0\(hex)" : "%\(hex)"
                }
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    // MARK: Boundary

    /// The characters RFC 2046 allows in a boundary besides letters and digits (`bchars`).
    private static let boundarySymbols = Set("'()+_,-./:=? ".utf8)
    /// The boundary characters that make a bare `boundary=` parameter value invalid: RFC 2045 `tspecials`
    /// and the space.
    private static let quotedBoundaryCharacters = Set("(),/:=? ".utf8)

    /// Whether `boundary` is one RFC 2046 allows: 1 to 70 `bchars`, the last not a space.
    static func isValidBoundary(_ boundary: String) -> Bool {
        let bytes = boundary.utf8
        guard (1...70).contains(bytes.count), bytes.last != UInt8(ascii: " ") else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "a")...UInt8(ascii: "z"):
                return true
            default:
                return boundarySymbols.contains(byte)
            }
        }
    }

    /// Fails when the boundary is not one RFC 2046 allows: it would corrupt the body, or with CR or LF the
    /// `Content-Type` header.
    private func checkBoundary() throws {
        guard Self.isValidBoundary(boundary) else {
            var error = ConnectError.invalidRequest(.invalidHeader(name: "Content-Type"))
            error.message =
                "the multipart boundary \(String(boundary.prefix(80)).debugDescription) is invalid: RFC 2046 allows "
                + "1 to 70 letters, digits and '()+_,-./:=? characters, not ending in a space"
            throw error
        }
    }

    /// Fails when `content`, the next piece of part `index`, completes the delimiter: the part would end there.
    private func check(_ scan: inout DelimiterScan, _ content: Data, part index: Int) throws {
        guard scan.found(in: content) else { return }
        let name = parts[index].name
        throw ConnectError.invalidRequest(
            .bodyEncodingFailed(
                "part \(index + 1) (\(name.debugDescription)) contains the multipart boundary "
                    + "\(boundary.debugDescription) after a line break: the part would end there and the rest be lost; "
                    + "use another boundary (the random default never occurs)"))
    }

    // MARK: Files

    /// The size of the file a part streams from, once checked to be a `file:` URL naming a regular file (a
    /// symbolic link is followed). A directory, device or pipe would fail or never end when read, and its
    /// size is not that of its content; another scheme is not a local file at all.
    static func regularFileSize(_ url: URL) throws -> Int64 {
        guard url.isFileURL else {
            let error = CocoaError(.fileReadUnsupportedScheme, userInfo: [NSURLErrorKey: url])
            throw ConnectError(
                .fileAccess,
                message: "\(Redaction.url(url, redacting: true)) is not a file URL: only local files can be uploaded",
                underlyingError: error
            )
        }
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: url.resolvingSymlinksInPath().path)
        } catch {
            throw ConnectError.fileAccess(error, url: url, request: nil)
        }
        guard let type = attributes[.type] as? FileAttributeType, type == .typeRegular else {
            throw notRegularFile(url, isDirectory: attributes[.type] as? FileAttributeType == .typeDirectory)
        }
        return (attributes[.size] as? NSNumber)?.int64Value ?? 0
    }

    /// `url`'s file opened for reading (a symbolic link is followed), refused as ``regularFileSize(_:)`` refuses it
    /// when the open file is not a regular file. The open does not wait (`O_NONBLOCK`): a pipe put in place of a
    /// checked file would hold the thread until a writer came. The open file is judged by its descriptor (`fstat`),
    /// not by its path again. Engines open a request's body file with it too.
    @_spi(Engine) public static func openRegularFile(_ url: URL) throws -> FileHandle {
        var openError: Int32 = 0
        let descriptor = url.withUnsafeFileSystemRepresentation { path -> Int32 in
            guard let path else {
                openError = ENOENT
                return -1
            }
            let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            openError = errno
            return descriptor
        }
        guard descriptor >= 0 else {
            throw ConnectError.fileAccess(
                POSIXError(POSIXErrorCode(rawValue: openError) ?? .EIO), url: url, request: nil)
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let code = errno
            close(descriptor)
            throw ConnectError.fileAccess(POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO), url: url, request: nil)
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw notRegularFile(url, isDirectory: status.st_mode & S_IFMT == S_IFDIR)
        }
        // A read of a regular file never waits; blocking reads all the same, as any other file handle's.
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    /// The error for `url` when it is not a regular file.
    private static func notRegularFile(_ url: URL, isDirectory: Bool) -> ConnectError {
        ConnectError(
            .fileAccess,
            message: "could not read \(url.path): \(isDirectory ? "it is a directory" : "it is not a regular file")",
            underlyingError: POSIXError(isDirectory ? .EISDIR : .EINVAL)
        )
    }

    private static func write(_ data: Data, to output: FileHandle, url: URL) throws {
        do {
            try output.writePortably(data)
        } catch {
            throw ConnectError.fileAccess(error, url: url, request: nil)
        }
    }

    /// Copies `source` to `output` and returns the number of bytes copied (read to its end, whatever size the
    /// file said it had); `inspect` sees each piece before it is written.
    private func copy(_ source: URL, to output: FileHandle, url: URL, inspect: (Data) throws -> Void) throws -> Int64 {
        _ = try Self.regularFileSize(source)
        let input = try Self.openRegularFile(source)
        defer { try? input.close() }
        var copied: Int64 = 0
        while true {
            let chunk: Data
            do {
                chunk = try autoreleasing { try input.readPortably(upTo: 1 << 20) }
            } catch {
                throw ConnectError.fileAccess(error, url: source, request: nil)
            }
            if chunk.isEmpty { return copied }
            try inspect(chunk)
            try Self.write(chunk, to: output, url: url)
            copied += Int64(chunk.count)
        }
    }

    /// The rest of `input`, read in 1 MiB pieces (`FileHandle.readToEnd()` needs newer Apple systems than the package's
    /// oldest). A read error is thrown, never trapped on.
    static func readToEnd(_ input: FileHandle) throws -> Data {
        var whole = Data()
        while true {
            let chunk = try input.readPortably(upTo: 1 << 20)
            if chunk.isEmpty { return whole }
            whole.append(chunk)
        }
    }
}

/// Runs `body` in an autorelease pool where there is one (Apple platforms), so copied chunks are freed at once.
@inline(__always)
func autoreleasing<T>(_ body: () throws -> T) rethrows -> T {
    #if canImport(ObjectiveC)
        return try autoreleasepool { try body() }
    #else
        return try body()
    #endif
}

/// Looks for `--boundary` after a line break in a part's content, fed in pieces (RFC 2046: the boundary must not
/// occur in any part). The delimiter is CR LF `--` and the boundary, but lenient parsers also end a part at a lone LF
/// or CR before `--boundary` (Werkzeug, behind Flask, matches `(\r\n|\n|\r)--boundary`), so either of those counts:
/// LF `--` boundary covers CR LF. The content is read as following a CR LF, the blank line after the part's header, so
/// content that starts with `--boundary` is found too.
struct DelimiterScan {
    /// LF `--` boundary, and CR `--` boundary: the same length.
    private let delimiters: [[UInt8]]
    /// The length of each delimiter.
    private let length: Int
    /// The last bytes seen, fewer than a delimiter's length: where a delimiter split across pieces starts.
    private var carry: [UInt8] = [0x0D, 0x0A]

    init(boundary: String) {
        delimiters = [Array("\n--\(boundary)".utf8), Array("\r--\(boundary)".utf8)]
        length = delimiters[0].count
    }

    /// Whether `piece`, after the pieces fed before, completes a delimiter.
    mutating func found(in piece: Data) -> Bool {
        var seam = carry
        seam.append(contentsOf: piece.prefix(length - 1))
        if seam.withUnsafeBytes({ Self.containsAny($0, delimiters) }) { return true }
        if piece.withUnsafeBytes({ Self.containsAny($0, delimiters) }) { return true }
        carry = Array(seam.suffix(length - 1))
        if piece.count >= length - 1 { carry = Array(piece.suffix(length - 1)) }
        return false
    }

    /// Whether any of `needles` occurs in `haystack`.
    private static func containsAny(_ haystack: UnsafeRawBufferPointer, _ needles: [[UInt8]]) -> Bool {
        needles.contains { contains(haystack, $0) }
    }

    /// Whether `needle` occurs in `haystack`: `memchr` to each occurrence of its first byte, then `memcmp`, so an
    /// upload's bytes are not looked at one by one in Swift.
    private static func contains(_ haystack: UnsafeRawBufferPointer, _ needle: [UInt8]) -> Bool {
        guard let base = haystack.baseAddress, haystack.count >= needle.count else { return false }
        let lastStart = haystack.count - needle.count
        var start = 0
        return needle.withUnsafeBytes { wanted in
            while start <= lastStart {
                guard let found = memchr(base + start, Int32(wanted[0]), lastStart - start + 1) else { return false }
                start = base.distance(to: UnsafeRawPointer(found))
                if memcmp(base + start, wanted.baseAddress!, needle.count) == 0 { return true }
                start += 1
            }
            return false
        }
    }
}

extension MultipartFormData: CustomReflectable {
    /// The boundary and the parts in order, each by its name: a field with its value's size, a file with its file
    /// name, media type and size. What `print(form)` and `dump(form)` show.
    ///
    /// No field's value is shown, whatever its name: a form carries what a person typed under names no list of secret
    /// names foresees (`pin`, `otp`, `cvc`, `answer`), so hiding the values of secret names only, as the output of a
    /// body hides them, would still print some secrets; a size tells whether a field was filled, which is what
    /// debugging a form usually needs.
    public var customMirror: Mirror {
        Mirror(self, children: ["boundary": boundary, "parts": parts.map(\.shown)], displayStyle: .struct)
    }
}
