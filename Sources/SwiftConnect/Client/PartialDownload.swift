import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The part of a download's body that arrived before the download failed, kept in a file so that the download can be
/// resumed (``Connect/download(_:to:resuming:debugResponse:options:)``) rather than started again: what Alamofire
/// calls resume data.
///
/// A download to a file keeps one when it fails after part of a successful body arrived (the connection was lost,
/// the transport failed mid-body, the connection stalled past ``RequestOptions/idleTimeout``, the call's deadline
/// passed), and the answer named a version of the body a server can check it against (a strong `ETag`, else a
/// `Last-Modified` a second or more before the answer's `Date`): ``ConnectError/partialDownload``. It keeps none
/// when the body was refused (a size limit, a file that could not be written), when nothing of it arrived, when the
/// call was cancelled (its part is removed), when the body was content-encoded (`Content-Encoding: gzip`: its bytes
/// arrive decoded, and a `Range` counts coded ones), or when it answered a `Range` of the request's own (its bytes
/// are that range's, not the body's start). For a large download, a short `idleTimeout` ends a stalled connection
/// early, in a part you can resume. A client that retries does so itself: its next attempt asks for the rest, and
/// only the part of the last attempt reaches you.
///
/// The file is the app's: nothing removes it but a resumed download that succeeds or keeps a newer part in its place.
/// Call ``discard()`` when the part is no longer wanted, as you would drop Alamofire's resume data.
///
/// ```swift
/// do {
///     _ = try await connect.download(VideoConnector.movie(id: 7), to: movieURL).value
/// } catch let error as ConnectError {
///     guard let partial = error.partialDownload else { throw error }
///     print("kept \(partial.bytesReceived) bytes")
///     _ = try await connect.download(VideoConnector.movie(id: 7), to: movieURL, resuming: partial).value
/// }
/// ```
public struct PartialDownload: Sendable, Hashable {
    /// How many bytes of the body the file holds, from its start.
    public let bytesReceived: Int64
    /// The file holding those bytes, readable by the owner only: in the temporary directory, or, for a destination on
    /// another file system, a hidden file beside the destination (moving it there would copy every byte).
    public let fileURL: URL
    /// The answer's validator, sent back as `If-Range`: its strong `ETag`, else its strong `Last-Modified`.
    let validator: String
    /// The URL of the request the body answered (the connector's, before the middlewares).
    let source: ShownURL
    /// The whole body's length, when the answer said it.
    let totalLength: Int64?

    init(bytesReceived: Int64, fileURL: URL, validator: String, source: URL, totalLength: Int64?) {
        self.init(
            bytesReceived: bytesReceived, fileURL: fileURL, validator: validator, source: ShownURL(url: source),
            totalLength: totalLength)
    }

    init(bytesReceived: Int64, fileURL: URL, validator: String, source: ShownURL, totalLength: Int64?) {
        self.bytesReceived = bytesReceived
        self.fileURL = fileURL
        self.validator = validator
        self.source = source
        self.totalLength = totalLength
    }

    /// Removes the file holding the bytes. The download can no longer be resumed from this part.
    public func discard() {
        try? FileManager.default.removeItem(at: fileURL)
    }

    /// The `Range` field that asks for the rest of the body.
    var range: String { "bytes=\(bytesReceived)-" }

    /// Fails with ``ConnectError/Kind/fileAccess`` unless the file is there with at least ``bytesReceived`` bytes.
    func checkFile(request: ConnectRequest) throws {
        var status = stat()
        guard stat(fileURL.path, &status) == 0 else {
            let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            throw ConnectError.fileAccess(error, url: fileURL, stored: .sent(request))
        }
        let size = Int64(status.st_size)
        guard size >= bytesReceived else {
            throw ConnectError(
                .fileAccess,
                message:
                    "the partial download at \(fileURL.path) holds \(size) bytes, not the \(bytesReceived) it kept",
                request: .sent(request))
        }
    }

    /// Fails with ``ConnectError/Kind/invalidRequest`` when `destination` is this part's own file (its path, or a link
    /// to it): the whole body would replace the part, which a resumed download then removes as a used part, and the
    /// call would hand over a file that is gone.
    func checkIsNot(destination: URL, request: ConnectRequest) throws {
        var part = stat()
        var target = stat()
        guard stat(fileURL.path, &part) == 0, stat(destination.path, &target) == 0, part.st_dev == target.st_dev,
            part.st_ino == target.st_ino
        else { return }
        throw ConnectError(
            .invalidRequest,
            message: "the destination \(destination.path) is the partial download's own file: download to another file "
                + "(the part is removed once the download succeeds)",
            request: .sent(request))
    }

    /// The validator the answer `head` carries: a strong `ETag` (a weak one, `W/`, may not be used with `If-Range`,
    /// RFC 9110 §13.1.5), else its `Last-Modified` when it is strong; `nil` if neither.
    ///
    /// A `Last-Modified` is strong only when the answer's `Date` is at least a second after it (RFC 9110 §8.8.2.2):
    /// a file changed again within the second it names keeps the same date, and a resume from it would splice the
    /// new version's bytes onto the old one's. Without such a `Date`, no part is kept and a retry starts over.
    static func validator(of head: ResponseHead) -> String? {
        if let tag = head.headerFields[HeaderField.Name("ETag")]?.trimmingCharacters(in: .whitespaces),
            !tag.isEmpty, !tag.hasPrefix("W/")
        {
            return tag
        }
        let field = { head.headerFields[HeaderField.Name($0)]?.trimmingCharacters(in: .whitespaces) ?? "" }
        let text = field("Last-Modified")
        if let modified = HTTPDate.date(from: text, now: Date()),
            let answered = HTTPDate.date(from: field("Date"), now: Date()), answered.timeIntervalSince(modified) >= 1
        {
            return text
        }
        return nil
    }

    /// A `Content-Range` field's first byte, last byte and complete length (`nil` for `*`), or `nil` if it is not
    /// `bytes first-last/length` in digits, or is invalid by RFC 9110 §14.4: a last byte before the first, or a
    /// complete length not past the last byte (a negative one, `-9223372036854775808`, made the last byte's check
    /// overflow and stop the process).
    static func contentRange(_ field: String?) -> (first: Int64, last: Int64, total: Int64?)? {
        guard let field = field?.trimmingCharacters(in: .whitespaces), field.lowercased().hasPrefix("bytes ") else {
            return nil
        }
        let spec = field.dropFirst("bytes ".count).trimmingCharacters(in: .whitespaces)
        let halves = spec.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let bounds = halves[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = digits(bounds[0]), let last = digits(bounds[1]), first <= last else {
            return nil
        }
        let total = halves[1] == "*" ? nil : digits(halves[1])
        if halves[1] != "*", total.map({ $0 > last }) != true { return nil }
        return (first, last, total)
    }

    /// A number written in ASCII digits only (no sign, no space), or `nil`, also when an `Int64` cannot hold it.
    private static func digits(_ text: some StringProtocol) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(text)
    }

    /// How many bytes a `Content-Range` field names (`last - first + 1`), or `nil` if it is not
    /// `bytes first-last/length` or names more than an `Int64` counts.
    static func rangeLength(_ field: String?) -> Int64? {
        guard let range = contentRange(field) else { return nil }
        let (length, overflow) = (range.last - range.first).addingReportingOverflow(1)
        return overflow ? nil : length
    }

    /// Whether a body with this `Content-Encoding` field is content-coded (a coding other than `identity`): its bytes
    /// then arrive decoded, and neither a `Range` nor a `Content-Range` counts them.
    static func isContentCoded(_ contentEncoding: String?) -> Bool {
        guard let coding = contentEncoding?.trimmingCharacters(in: .whitespaces) else { return false }
        return !coding.isEmpty && coding.lowercased() != "identity"
    }

    /// The complete length a `416`'s `Content-Range: bytes */N` names, or `nil`.
    static func unsatisfiedLength(_ field: String?) -> Int64? {
        guard let field = field?.trimmingCharacters(in: .whitespaces), field.lowercased().hasPrefix("bytes */") else {
            return nil
        }
        return digits(field.dropFirst("bytes */".count).trimmingCharacters(in: .whitespaces))
    }

    /// Why a `206` answering a resume (its `Content-Range` field) does not continue this part to the end of the body,
    /// or `nil` if it does: it must start at ``bytesReceived``, name the same complete length when both are known, end
    /// at the body's last byte when its length is known, and hold as many bytes as it names when `length`, the body's
    /// length as declared or read, is known. Anything else written after the part would be a file of the wrong bytes
    /// reported as a success.
    func rangeProblem(_ field: String?, length: Int64? = nil) -> String? {
        let asked = "asked for the bytes from \(bytesReceived) (Range: \(range))"
        guard let answered = Self.contentRange(field) else {
            return "\(asked), the server answered 206 with Content-Range: \(field ?? "(none)")"
        }
        if answered.first != bytesReceived {
            return "\(asked), the server answered 206 with the bytes from \(answered.first) "
                + "(Content-Range: \(field ?? ""))"
        }
        if let total = answered.total, let known = totalLength, total != known {
            return "\(asked) of a body of \(known) bytes, the server answered 206 for a body of \(total) bytes"
        }
        if let end = answered.total ?? totalLength, answered.last != end - 1 {
            return "\(asked), the server answered 206 with the bytes \(answered.first)-\(answered.last) of \(end), "
                + "not the rest of the body (Content-Range: \(field ?? ""))"
        }
        if let length, let named = Self.rangeLength(field), length != named {
            return "\(asked), the server answered 206 with \(length) bytes for the \(named) its Content-Range names "
                + "(Content-Range: \(field ?? ""))"
        }
        return nil
    }

    /// Why `head`, a `206` answering a resume, is a range of another version of the body than this part's, or `nil`:
    /// its `ETag` (or, for a part kept under a `Last-Modified`, its `Last-Modified`) is not the part's validator. A
    /// server that ignores `If-Range` (or a cache before it) sends the rest of the new version, which written after the
    /// part would be a file of two versions reported as a success (RFC 9110 §15.3.7.3: parts combine only under the
    /// same strong validator). An answer that names none is taken for the version asked for.
    func validatorProblem(of head: ResponseHead) -> String? {
        validatorProblem(status: 206) { head.headerFields[HeaderField.Name($0)] }
    }

    /// Why an answer of `status` to a resume, whose fields `field` reads, names another version of the body than this
    /// part's (``validatorProblem(of:)``), or `nil`.
    func validatorProblem(status: Int, field: (String) -> String?) -> String? {
        let isDate = HTTPDate.date(from: validator, now: Date()) != nil && !validator.hasPrefix("\"")
        let name = isDate ? "Last-Modified" : "ETag"
        guard let answered = field(name)?.trimmingCharacters(in: .whitespaces), !answered.isEmpty, answered != validator
        else { return nil }
        return "asked for the rest of the body whose version is \(validator) (If-Range), the server answered "
            + "\(status) with the version \(answered) (\(name))"
    }

    /// Why a `416` answering a resume of this part (its `Content-Range` field, the others read by `field`) does not
    /// say that the part is the whole body, or `nil` if it does: it must name ``bytesReceived`` as the body's length
    /// (`bytes */N`), which must be the length the part's own answer declared, if it declared one, and it must not
    /// name another version than the part's (``validatorProblem(status:field:)``). A server that ignores `If-Range`
    /// answers 416 for a newer version no longer than the part, and one that contradicts the length the part was read
    /// under says nothing the part can be trusted by: placing the part would be a file cut short, reported as a
    /// success.
    func unsatisfiedRangeProblem(_ contentRange: String?, field: (String) -> String?) -> String? {
        let asked = "asked for the bytes from \(bytesReceived) (Range: \(range))"
        guard Self.unsatisfiedLength(contentRange) == bytesReceived else {
            return "\(asked), the server answered 416 with Content-Range: \(contentRange ?? "(none)")"
        }
        if let totalLength, totalLength != bytesReceived {
            return "\(asked) of a body of \(totalLength) bytes, the server answered 416 for a body of \(bytesReceived) "
                + "bytes (Content-Range: \(contentRange ?? ""))"
        }
        return validatorProblem(status: 416, field: field)
    }

    /// Why a download's `206` answer cannot be written as its file, or `nil` if it can: one answering a resume must go
    /// on from `part` (``rangeProblem(_:length:)``) of the same version (``validatorProblem(of:)``); one answering a
    /// request that asked for no range (no `Range` field of the app's, no part) holds only part of a body, which
    /// written as the file would be a wrong file reported as a success. A `Range` the app set itself asked for part of
    /// a body: what it gets is what it asked for.
    ///
    /// - Parameters:
    ///   - part: The part the download resumed, if any.
    ///   - askedRange: Whether the request carried a `Range` field.
    ///   - head: The answer's head.
    ///   - length: The answer's body length, declared or read, when known.
    static func problem(resuming part: PartialDownload?, askedRange: Bool, head: ResponseHead, length: Int64?)
        -> String?
    {
        let field = head.headerFields[HeaderField.Name("Content-Range")]
        if let part { return part.validatorProblem(of: head) ?? part.rangeProblem(field, length: length) }
        if askedRange { return nil }
        return "the server answered 206 (Partial Content, Content-Range: \(field ?? "(none)")) to a download that "
            + "asked for no range: part of a body is not the file"
    }

    /// Writes the part (if `withPart`) then `rest` to `destination`, replacing what is there in one step as a
    /// download does (``ReplacementFile``).
    func place(at destination: URL, withPart: Bool, then rest: Data) throws {
        try ReplacementFile.write(to: destination) { handle in
            if withPart { try copyBytes { try handle.writePortably($0) } }
            try handle.writePortably(rest)
        }
        discard()
    }

    /// Copies the first ``bytesReceived`` bytes of the file to `write`, in pieces of 1 MiB.
    func copyBytes(to write: (Data) throws -> Void) throws {
        let input = try FileHandle(forReadingFrom: fileURL)
        defer { try? input.close() }
        var left = bytesReceived
        while left > 0 {
            let piece = try input.readPortably(upTo: Int(min(left, 1 << 20)))
            guard !piece.isEmpty else {
                throw CocoaError(.fileReadCorruptFile, userInfo: [NSFilePathErrorKey: fileURL.path])
            }
            try write(piece)
            left -= Int64(piece.count)
        }
    }
}

/// A URL whose descriptions and reflection hide its secrets (``Redaction/url(_:redacting:)``): a partial download
/// printed or dumped must not show a token in its query.
struct ShownURL: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    let url: URL
    /// The URL as shown: redacted, and `secrets` hidden wherever they are in it.
    private let shown: String

    /// `url`, shown with its secrets hidden, and `secrets` too: those of the request it is the URL of (a secret
    /// `.path` value in a segment, which the URL alone does not name as one).
    init(url: URL, hiding secrets: SecretValues = SecretValues()) {
        self.url = url
        shown = secrets.hiding(in: Redaction.url(url, redacting: true))
    }

    var description: String { shown }
    var debugDescription: String { description }
    var customMirror: Mirror { Mirror(self, children: ["url": description]) }
}

/// What a download needs to keep the part of its body that arrived, should it fail: set once a successful answer's
/// head names a validator.
struct PartialKeeping: Sendable {
    let validator: String
    let source: ShownURL
    let totalLength: Int64?
}

/// The newest part of a download that one call holds, shared by the call's attempts and its download method: a retry
/// resumes from it (`RetryingCall`), and the failure that ends the call hands it over
/// (``ConnectError/partialDownload``).
///
/// It starts with the part the app asked to resume, if any, which stays the app's: the download method removes it once
/// the call succeeds or hands over a newer one. A part an attempt of the call kept is the call's: removed when a newer
/// one replaces it, handed over by the call's failure, or removed when the call is cancelled or succeeds. An attempt
/// stopped from outside (its own timeout, the call's deadline, a cancellation) puts its part here too, from the
/// exchange's cancel handler: whoever ends the call decides its fate.
final class DownloadResumption: Sendable {
    private struct Parts {
        /// The part the next attempt resumes from.
        var latest: PartialDownload?
        /// Whether ``latest`` is the call's own (an attempt kept it), not the app's.
        var isTheCalls = false
    }

    private let parts: Protected<Parts>

    /// - Parameter part: The part the app asked to resume, or `nil` for a download from the start.
    init(starting part: PartialDownload?) {
        parts = Protected(Parts(latest: part))
    }

    /// The part the next attempt resumes from, if any.
    var latest: PartialDownload? {
        parts.withLock { $0.latest }
    }

    /// A failed attempt kept `newer`, which holds every byte of the part before it: the next attempt resumes from it,
    /// and the part before it goes if it was the call's.
    func advance(to newer: PartialDownload) {
        let replaced = parts.withLock { parts -> PartialDownload? in
            defer { parts = Parts(latest: newer, isTheCalls: true) }
            return parts.isTheCalls && parts.latest != newer ? parts.latest : nil
        }
        replaced?.discard()
    }

    /// Takes the call's own part, leaving the app's or none: for the failure that ends the call to hand over, or to
    /// remove when nobody will (the call was cancelled). Whoever takes it first owns it.
    func takeTheCalls() -> PartialDownload? {
        parts.withLock { parts -> PartialDownload? in
            guard parts.isTheCalls, let part = parts.latest else { return nil }
            parts = Parts()
            return part
        }
    }
}
