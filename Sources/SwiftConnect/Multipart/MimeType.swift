import Foundation

/// A media type for an uploaded file, such as `image/jpeg`. Extensible:
///
/// ```swift
/// extension MimeType {
///     static let myAwesomeType = MimeType(rawValue: "awesome/type")
/// }
/// let type = MimeType(fileExtension: "png")  // .png
/// ```
///
/// Type, subtype and parameter names are case-insensitive (RFC 9110 §8.3.1): they are kept in lower case, so that
/// `MimeType(rawValue: "IMAGE/JPEG")` is ``MimeType/jpg``. Parameter values keep their case.
public struct MimeType: RawRepresentable, Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The media type, such as `image/png`: type, subtype and parameter names in lower case, values as given.
    public let rawValue: String

    /// Creates a media type.
    ///
    /// - Parameter rawValue: The media type, such as `application/zip`, in any case: its type, subtype and
    ///   parameter names are kept in lower case (`Text/Plain; Charset=UTF-8` is `text/plain; charset=UTF-8`).
    public init(rawValue: String) {
        self.rawValue = Self.foldingCase(of: rawValue)
    }

    /// `text` with its type, subtype and parameter names in ASCII lower case, everything else as given: parameter
    /// values, blanks, and any quoted string, whose `;` and `=` separate nothing (as ``parameter(_:)`` reads them).
    private static func foldingCase(of text: String) -> String {
        let isUpper = { (byte: UInt8) in byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") }
        guard text.utf8.contains(where: isUpper) else { return text }
        var bytes = Array(text.utf8)
        var isType = true  // before the first `;`: the type and subtype
        var isName = true  // in the type and subtype, or in a parameter's name
        var isQuoted = false
        var isEscaped = false
        // Right after a parameter's `=` and any blanks: the only place a quoted string starts (a stray `"` in a
        // token is an ordinary character, as ``parameter(_:)`` reads it).
        var isValueStart = false
        for index in bytes.indices {
            let byte = bytes[index]
            if isEscaped {
                isEscaped = false
            } else if isQuoted {
                if byte == UInt8(ascii: "\\") {
                    isEscaped = true
                } else if byte == UInt8(ascii: "\"") {
                    isQuoted = false
                }
            } else if byte == UInt8(ascii: "\""), isValueStart {
                isQuoted = true
                isValueStart = false
            } else if byte == UInt8(ascii: ";") {
                isType = false
                isName = true
                isValueStart = false
            } else if byte == UInt8(ascii: "="), !isType, isName {
                isName = false
                isValueStart = true
            } else {
                if byte != UInt8(ascii: " "), byte != UInt8(ascii: "\t") { isValueStart = false }
                if isName, isUpper(byte) { bytes[index] = byte + 32 }
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The media type for a file extension (`"jpg"`, `"PDF"`, `".png"`), or `application/octet-stream`
    /// for an unknown one. A text type names no charset (`"txt"` is `text/plain`): the file's bytes are not read.
    ///
    /// - Parameter fileExtension: The extension, with or without the dot, in any case.
    public init(fileExtension: String) {
        var key = fileExtension.lowercased()
        if key.hasPrefix(".") { key.removeFirst() }
        self = MimeType.byExtension[key] ?? .octetStream
    }

    /// The media type for a file's extension.
    ///
    /// - Parameter url: The file.
    /// - Returns: The inferred type, or `application/octet-stream`.
    public static func inferred(from url: URL) -> MimeType {
        MimeType(fileExtension: url.pathExtension)
    }

    /// A short human-readable form.
    public var description: String { rawValue }

    /// The value of the parameter `name` (in any case), unquoted, or `nil` when the media type has none: how a
    /// ``ResponseBodyDecoder`` of your own reads the `charset` of the `Content-Type` it is given. A `;` inside a
    /// quoted value separates nothing.
    ///
    /// ```swift
    /// MimeType(rawValue: #"text/csv; Charset="ISO-8859-1""#).parameter("charset")  // "ISO-8859-1"
    /// ```
    ///
    /// - Parameter name: The parameter's name, such as `"charset"` or `"boundary"`.
    /// - Returns: Its value, without the quotes and backslash escapes of a quoted string.
    public func parameter(_ name: String) -> String? {
        HeaderParameters.value(of: name, in: rawValue)
    }

    /// `image/jpeg`.
    public static let jpg = MimeType(rawValue: "image/jpeg")
    /// `image/png`.
    public static let png = MimeType(rawValue: "image/png")
    /// `image/gif`.
    public static let gif = MimeType(rawValue: "image/gif")
    /// `image/webp`.
    public static let webp = MimeType(rawValue: "image/webp")
    /// `image/heic`.
    public static let heic = MimeType(rawValue: "image/heic")
    /// `image/svg+xml`.
    public static let svg = MimeType(rawValue: "image/svg+xml")
    /// `video/mp4`.
    public static let mp4 = MimeType(rawValue: "video/mp4")
    /// `video/quicktime`.
    public static let mov = MimeType(rawValue: "video/quicktime")
    /// `audio/mpeg`.
    public static let mp3 = MimeType(rawValue: "audio/mpeg")
    /// `audio/wav`.
    public static let wav = MimeType(rawValue: "audio/wav")
    /// `application/pdf`.
    public static let pdf = MimeType(rawValue: "application/pdf")
    /// `application/json`.
    public static let json = MimeType(rawValue: "application/json")
    /// `application/xml`.
    public static let xml = MimeType(rawValue: "application/xml")
    /// `application/zip`.
    public static let zip = MimeType(rawValue: "application/zip")
    /// `text/plain; charset=utf-8`.
    public static let plainText = MimeType(rawValue: "text/plain; charset=utf-8")
    /// `text/csv`.
    public static let csv = MimeType(rawValue: "text/csv")
    /// `text/html; charset=utf-8`.
    public static let html = MimeType(rawValue: "text/html; charset=utf-8")
    /// `application/octet-stream`: any bytes.
    public static let octetStream = MimeType(rawValue: "application/octet-stream")

    /// Text types here name no charset (unlike ``plainText`` and ``html``, for text the app hands over as a
    /// `String`): a file's bytes are not read, so its charset is not known, and a wrong label makes a server that
    /// honours it read the file wrong. Browsers send a file part so, and Apple's `UTType` names the types so.
    private static let byExtension: [String: MimeType] = [
        "jpg": .jpg, "jpeg": .jpg, "png": .png, "gif": .gif, "webp": .webp, "heic": .heic, "svg": .svg,
        "mp4": .mp4, "m4v": .mp4, "mov": .mov, "mp3": .mp3, "wav": .wav, "pdf": .pdf, "json": .json,
        "xml": .xml, "zip": .zip, "txt": MimeType(rawValue: "text/plain"), "text": MimeType(rawValue: "text/plain"),
        "csv": .csv, "html": MimeType(rawValue: "text/html"), "htm": MimeType(rawValue: "text/html"),
    ]
}
