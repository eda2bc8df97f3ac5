import Foundation
import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Why a ``RecordingTransport`` could not answer a request, or found its recording wanting.
///
/// A request fails with a ``SwiftConnect/ConnectError`` of kind ``SwiftConnect/ConnectError/Kind/transport`` (which
/// no retry policy retries by default) whose ``SwiftConnect/ConnectError/underlyingError`` is this error, and whose
/// message is this error's:
///
/// ```swift
/// if case .failure(let error as ConnectError) = result,
///     let recording = error.underlyingError as? RecordingError, recording.reason == .noMatch {
///     print(recording.nearest?.url as Any, recording.differences)
/// }
/// ```
public struct RecordingError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Reason: String, Sendable, Equatable {
        /// No unused recorded request matches the request (replay, the default mode, sends nothing).
        case noMatch
        /// The recording file does not exist; in replay mode every request fails until it is recorded.
        case missingRecording
        /// The recording file is not a HAR file a replay can read.
        case unreadableRecording
        /// The request asks for what recording does not support. No request does today: downloads to a file and
        /// bodies sent from a file, which this reason named, are recorded and replayed. Kept for code that matches on
        /// it.
        case unsupportedTransfer
        /// The mode sends requests, but the transport wraps none to send them with.
        case noTransport
        /// The recording could not be written.
        case writeFailed
        /// Recorded requests were never asked for (``RecordingTransport/verifyAllRecordingsUsed()``).
        case unusedRecordings
    }

    /// What went wrong.
    public let reason: Reason
    /// A sentence saying what went wrong and what to do, secrets already replaced by placeholders.
    public let message: String
    /// The recording file.
    public let fileURL: URL
    /// For ``Reason/noMatch``: the recorded request nearest to the one sent, if the recording holds any.
    public let nearest: RecordedRequest?
    /// For ``Reason/noMatch``: how the request differs from ``nearest`` (`path: request has /a, recording has /b`).
    public let differences: [String]

    init(
        _ reason: Reason, _ message: String, fileURL: URL, nearest: RecordedRequest? = nil, differences: [String] = []
    ) {
        self.reason = reason
        self.message = message
        self.fileURL = fileURL
        self.nearest = nearest
        self.differences = differences
    }

    /// The message.
    public var description: String { message }

    /// This error as a request's failure: a ``SwiftConnect/ConnectError`` of kind
    /// ``SwiftConnect/ConnectError/Kind/transport`` carrying it.
    func connectError(for request: ConnectRequest) -> ConnectError {
        ConnectError(.transport, message: message, request: request.urlRequest, underlyingError: self)
    }
}
