import Foundation
import SwiftConnect

extension ConnectRequest.OneShotStream {
    /// Reads the stream whole, held to `length` through the core's length check (`RequestBodyChunks.counted`, as an
    /// engine's exchange reads a body), then answers with what `answer` makes of the bytes.
    ///
    /// The testing kit's transports (``FakeTransport``, ``RecordingTransport``) read a one-shot body this way before
    /// they match or record it. Cancelling the returned future stops the reading, or cancels `answer`'s future once
    /// it runs; a body cancelled while it is read is answered by nothing (the caller's cancellation already ended it).
    /// A body that fails, or has another length than `length`, fails the future with the core's error.
    func readingWhole(
        announcing length: Int64?,
        then answer: @escaping @Sendable (Data) -> Future<ConnectResponse>
    ) -> Future<ConnectResponse> {
        let promise = Promise<ConnectResponse>()
        // The handler that stops the reading is set before the reading starts: set after, it could replace the one the
        // task sets for the answer, and a late cancel would never reach that answer.
        let reading = Protected<Task<Void, Never>?>(nil)
        promise.setCancelHandler { reading.withLock { $0 }?.cancel() }
        let task = Task {
            do {
                var bytes = Data()
                for try await chunk in chunks.counted(announcing: length, sent: { _ in }) {
                    bytes.append(chunk)
                }
                // Cancelled while the body was read (a sequence may end early then): nothing is answered.
                guard !promise.future.isCancelled else { return }
                let answered = answer(bytes)
                promise.setCancelHandler { answered.cancel() }
                answered.observe { promise.completeIfPending(with: $0) }
            } catch {
                promise.completeIfPending(with: .failure(error))
            }
        }
        reading.withLock { $0 = task }
        // Cancelled before the task was kept: the handler had no task to stop.
        if promise.future.isCancelled { task.cancel() }
        return promise.future
    }
}
