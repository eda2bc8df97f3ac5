import Foundation
import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// MARK: - The file

extension RecordingTransport {
    /// The file of a test: `directory/name.har`, by default `__Recordings__/TestFile.testName.har` beside the test (the
    /// test's class is not known here: two classes of one file with a test of the same name share the default).
    static func fileURL(name: String?, directory: URL?, filePath: String, function: String) -> URL {
        let testFile = URL(fileURLWithPath: filePath)
        let folder = directory ?? testFile.deletingLastPathComponent().appendingPathComponent("__Recordings__")
        let test = function.split(separator: "(").first.map(String.init) ?? function
        let stem = name ?? "\(testFile.deletingPathExtension().lastPathComponent).\(test)"
        let safe = String(stem.map { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) ? $0 : "_" })
        return folder.appendingPathComponent(safe + ".har")
    }

    /// The state of a replay from `url`: its entries, or why it cannot be read.
    ///
    /// - Parameter required: Whether a missing file is a failure (replay) or an empty recording (record missing).
    static func load(_ url: URL, required: Bool) -> State {
        var state = State()
        guard FileManager.default.fileExists(atPath: url.path) else {
            if required {
                let message =
                    "RecordingTransport: no recording at \(url.path). Record it once against the real server: run "
                    + "the test with \(RecordingMode.environmentVariable)=record (or make the transport with "
                    + "mode: .record), then commit the file." + RecordingMode.misspeltEnvironmentNote
                state.loadFailure = RecordingError(.missingRecording, message, fileURL: url)
            }
            return state
        }
        do {
            let bytes = try Data(contentsOf: url)
            let har = try HAR(data: bytes)
            state.fileBytes = bytes
            state.fileComment = har.log.comment
            state.fileEntries = har.log.entries
            state.entries = har.log.entries
            state.requests = har.log.entries.map { RecordedRequest($0.request).map(RecordingRedaction.request) }
            state.used = Array(repeating: false, count: har.log.entries.count)
        } catch {
            let message = "RecordingTransport: \(url.path) is not a HAR file a replay can read: \(error)"
            state.loadFailure = RecordingError(.unreadableRecording, message, fileURL: url)
        }
        return state
    }

    /// Writes `data` to `url` atomically: to a temporary file beside it, then renamed over it (`Data`'s `.atomic`),
    /// so a reader, or a test run stopped half-way, never sees half a file.
    static func write(_ data: Data, to url: URL) throws {
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: url, options: .atomic)
        writtenThisRun.withLock { _ = $0.insert(url.standardizedFileURL.path) }
    }

    /// The files transports of this process have written (standardized paths): a transport made later to record one
    /// of them (the second client of a test, made after the first had recorded) adds to it, where one made for a
    /// file of an earlier run replaces it.
    private static let writtenThisRun = Protected<Set<String>>([])

    /// Whether a transport of this process has written the file at `url`.
    static func wasWrittenThisRun(_ url: URL) -> Bool {
        writtenThisRun.withLock { $0.contains(url.standardizedFileURL.path) }
    }
}
