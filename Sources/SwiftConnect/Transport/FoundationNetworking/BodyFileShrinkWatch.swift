import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Watches a request's body file while FoundationNetworking uploads it, and reports the moment it holds fewer bytes
/// than the length the request announced.
///
/// Defect: FoundationNetworking hands libcurl the file's length, then reads the file as libcurl asks. A file that
/// shrinks meanwhile (truncated by another writer) ends early: libcurl stops sending, and the server waits for the
/// rest of the `Content-Length` it was told, so the call hung until its timeout and reported `.timedOut`, naming
/// neither the file nor the cause. `AsyncHTTPClientTransport` reads the file itself and fails at once. This watch
/// (inotify, so nothing polls) sees the file shrink and the hop fails with ``ConnectError/Kind/invalidRequest``
/// naming the file and both lengths. The task itself is left to end on its own (the server's answer, or its
/// timeout): FoundationNetworking may still be reading the file, and cancelling its upload then can stop the process
/// (RELIABILITY.md).
///
/// Test: `URLSessionTransportTests.testABodyFileThatShrinksWhileSentFailsAsAnInvalidRequest`.
///
/// Only on Linux; elsewhere it watches nothing. It ends when ``cancel()`` is called, and reports at most once.
final class BodyFileShrinkWatch: Sendable {
    #if os(Linux)
        /// The inotify descriptor's read source, until cancelled; its cancel handler closes both descriptors. Behind
        /// a lock: a Dispatch source is not `Sendable` in Swift's terms, and the lock makes the cancellation happen once.
        private let source: Protected<(any DispatchSourceRead)?>
    #endif

    /// Starts watching `file`, which must hold `length` bytes: `shrank` is called once, on a queue of the watch's
    /// own, with the error to report, if it ever holds fewer before ``cancel()``. Returns `nil` where nothing can
    /// watch (not Linux, or inotify refused: then the hop goes on as before, unwatched).
    ///
    /// - Parameters:
    ///   - file: The body file, as the upload task reads it.
    ///   - length: The length the request announced.
    ///   - shrank: Told the error once: ``ConnectError/Kind/invalidRequest``.
    init?(_ file: URL, length: Int64, shrank: @escaping @Sendable (ConnectError) -> Void) {
        #if os(Linux)
            let descriptors = file.withUnsafeFileSystemRepresentation { path -> (watch: Int32, file: Int32)? in
                guard let path else { return nil }
                let watch = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
                guard watch >= 0 else { return nil }
                // A truncation is a modification (`IN_MODIFY`), as is any write. Opened without waiting and judged
                // again, as `MultipartFormData.openRegularFile` opens: a pipe swapped in since the file was checked
                // would hold this thread until a writer came, and it has no size to watch.
                let opened = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
                var status = stat()
                guard opened >= 0, fstat(opened, &status) == 0, status.st_mode & S_IFMT == S_IFREG,
                    inotify_add_watch(watch, path, UInt32(IN_MODIFY)) >= 0
                else {
                    if opened >= 0 { close(opened) }
                    close(watch)
                    return nil
                }
                return (watch, opened)
            }
            guard let descriptors else { return nil }
            let reported = Protected(false)
            let check: @Sendable () -> Void = {
                var status = stat()
                guard fstat(descriptors.file, &status) == 0, Int64(status.st_size) < length else { return }
                let isFirst = reported.withLock { reported in
                    defer { reported = true }
                    return !reported
                }
                guard isFirst else { return }
                shrank(Self.error(file, length: length, now: Int64(status.st_size)))
            }
            let source = DispatchSource.makeReadSource(
                fileDescriptor: descriptors.watch, queue: DispatchQueue(label: "SwiftConnect.BodyFileShrinkWatch"))
            source.setEventHandler {
                // The events themselves say nothing the size does not: drained, then the size read.
                var buffer = [UInt8](repeating: 0, count: 4096)
                while read(descriptors.watch, &buffer, buffer.count) > 0 {}
                check()
            }
            source.setCancelHandler {
                close(descriptors.watch)
                close(descriptors.file)
            }
            // A file that shrank between the length read and the watch: seen now, on the watch's queue.
            source.setRegistrationHandler(handler: check)
            source.activate()
            self.source = Protected(source)
        #else
            return nil
        #endif
    }

    /// Stops watching; nothing is reported after the watch's queue has run what it was running.
    func cancel() {
        #if os(Linux)
            source.withLock { source in
                source?.cancel()
                source = nil
            }
        #endif
    }

    /// The error of a body file that holds `now` bytes of the `length` its request announced.
    static func error(_ file: URL, length: Int64, now: Int64) -> ConnectError {
        RequestBodyChunks.failure(
            "the body file \(file.path) shrank to \(now) bytes while it was sent, but the request announced \(length)",
            underlying: nil)
    }
}
