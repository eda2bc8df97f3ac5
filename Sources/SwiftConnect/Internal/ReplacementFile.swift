import Foundation

/// The new file that a download or a written multipart body goes to before one `rename(2)` puts it in place of its
/// destination: hidden, beside the destination (the same folder, so the rename is one step), with a name no other
/// writer has.
///
/// Two rules hold whatever the destination:
/// - **The name fits.** A file name is at most 255 bytes (`NAME_MAX`); the destination's own name, kept as a prefix
///   for whoever lists the folder, is cut to 100 bytes, so a long destination name still gets a file (it used to fail
///   with `ENAMETOOLONG` once the request had gone out).
/// - **The replacement is as private as the file it replaces.** A destination that exists keeps its permissions: the
///   new file has them from its creation (created `0600`, then set to the destination's mode before a byte is
///   written), where it used to be created `0644`, so a download over a private file made it readable by every local
///   user. A new destination gets `0666` less the process's umask, as any file the process creates.
/// - **A symbolic link is replaced, never followed.** The rename puts the file in place of a link at the destination,
///   and the link's target lends it nothing: the new file has the permissions of a new destination.
package enum ReplacementFile {
    /// The longest part of the destination's name kept in the replacement's, in UTF-8 bytes.
    static let namePrefixLimit = 100

    /// A hidden name beside `destination`, unique, at most 255 bytes long: `.<name>.<UUID>.<suffix>`.
    ///
    /// - Parameters:
    ///   - destination: The file to be replaced.
    ///   - suffix: What the file is (`download`, `partial`), at most 16 bytes.
    package static func url(besides destination: URL, suffix: String) -> URL {
        var name = Substring(destination.lastPathComponent)
        while name.utf8.count > namePrefixLimit { name = name.dropLast() }
        return destination.deletingLastPathComponent()
            .appendingPathComponent(".\(name).\(UUID().uuidString).\(suffix)")
    }

    /// Creates `file`, which must not exist, with the permissions of `destination` if that is a regular file (not a
    /// symbolic link, which is not followed), and opens it
    /// for writing.
    ///
    /// - Parameters:
    ///   - file: The replacement, from ``url(besides:suffix:)``.
    ///   - destination: The file it is to replace.
    /// - Returns: The open file, closed when released.
    /// - Throws: A `POSIXError` from `open(2)` or `fchmod(2)`; a file created but not set up is removed.
    static func create(_ file: URL, replacing destination: URL) throws -> FileHandle {
        var status = stat()
        let existing: mode_t? = destination.withUnsafeFileSystemRepresentation { path in
            // `lstat`: a symbolic link is replaced, not followed, so what it leads to says nothing of the new file
            // (a link to a world-writable file must not make the download world-writable).
            guard let path, lstat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return nil }
            return status.st_mode & 0o777
        }
        let descriptor = file.withUnsafeFileSystemRepresentation { path -> Int32 in
            guard let path else { return -1 }
            // Owner-only from its creation when it replaces a file: never, even for a moment, more open than that file.
            return open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, existing == nil ? 0o666 : 0o600)
        }
        guard descriptor >= 0 else { throw Self.lastError() }
        if let existing, fchmod(descriptor, existing) != 0 {
            let error = Self.lastError()
            close(descriptor)
            try? FileManager.default.removeItem(at: file)
            throw error
        }
        return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    /// Writes `data` in place of `destination` in one rename (the answer of a transport that ignores transfer options,
    /// a recorded download replayed), with the rules above, where `Data.write(to:options: .atomic)` makes the new file
    /// `0644` whatever it replaces. A failure leaves `destination` as it was.
    ///
    /// - Parameters:
    ///   - data: The whole body.
    ///   - destination: The file to write.
    /// - Throws: A `POSIXError` or the `FileHandle`'s error.
    package static func write(_ data: Data, to destination: URL) throws {
        try write(to: destination) { try $0.writePortably(data) }
    }

    /// Writes what `fill` writes to a new file beside `destination`, then puts it in place of `destination` in one
    /// rename, with the rules above (a resumed download's part then its rest). A failure, `fill`'s included, removes
    /// the new file and leaves `destination` as it was.
    ///
    /// - Parameters:
    ///   - destination: The file to write.
    ///   - fill: Writes the body to the new file's handle; the handle is closed after it.
    /// - Throws: A `POSIXError`, the `FileHandle`'s error or `fill`'s.
    package static func write(to destination: URL, _ fill: (FileHandle) throws -> Void) throws {
        let file = url(besides: destination, suffix: "download")
        do {
            let handle = try create(file, replacing: destination)
            do {
                try fill(handle)
                try handle.close()
            } catch {
                try? handle.close()
                throw error
            }
            try TransferOptions.moveIntoPlace(file, to: destination)
        } catch {
            try? FileManager.default.removeItem(at: file)
            throw error
        }
    }

    private static func lastError() -> POSIXError {
        POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
    }
}
