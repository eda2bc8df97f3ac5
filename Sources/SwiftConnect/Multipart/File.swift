import Foundation

/// A file to upload in a `multipart/form-data` body: in memory, or streamed from disk.
///
/// ```swift
/// let avatar = File(name: "me.png", key: "avatar", mimeType: .png, data: pngData)
/// let video = File(key: "video", fileURL: movieURL)  // name and type from the URL, read in pieces
/// Connect.default.upload(files: [avatar, video], to: ProfileConnector.upload)
/// ```
public struct File: Sendable, Equatable {
    /// Where a file's bytes come from.
    public enum Content: Sendable, Equatable {
        /// Bytes in memory.
        case data(Data)
        /// A file on disk, read in pieces, so its size does not count against memory. An upload
        /// (``Connect/upload(files:fields:to:boundary:debugResponse:options:)``) reads it when called, copying it
        /// into the temporary file the body is sent from (the disk needs room for that copy): a change to the file
        /// after the call is not sent.
        case file(URL)
    }

    /// The file name sent to the server (`filename=` in the part's `Content-Disposition`).
    public let name: String
    /// The form field name (`name=` in the part's `Content-Disposition`).
    public let key: String
    /// The part's `Content-Type`.
    public let mimeType: MimeType
    /// The bytes.
    public let content: Content

    /// A file from bytes in memory, as in the usage guide.
    ///
    /// - Parameters:
    ///   - name: The file name sent to the server.
    ///   - key: The form field name.
    ///   - mimeType: The part's media type.
    ///   - data: The bytes.
    public init(name: String, key: String, mimeType: MimeType, data: Data) {
        self.name = name
        self.key = key
        self.mimeType = mimeType
        self.content = .data(data)
    }

    /// A file on disk, read in pieces (see ``Content/file(_:)``): nothing is read until the body is made.
    ///
    /// - Parameters:
    ///   - name: The file name sent to the server; defaults to the URL's last path component.
    ///   - key: The form field name.
    ///   - mimeType: The part's media type; defaults to the one inferred from the file extension.
    ///   - fileURL: The file.
    public init(name: String? = nil, key: String, mimeType: MimeType? = nil, fileURL: URL) {
        self.name = name ?? fileURL.lastPathComponent
        self.key = key
        self.mimeType = mimeType ?? MimeType.inferred(from: fileURL)
        self.content = .file(fileURL)
    }
}
