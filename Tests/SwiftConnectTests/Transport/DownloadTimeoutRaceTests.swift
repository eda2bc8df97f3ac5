import Foundation
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A download whose deadline passes while it is finishing: what its future reports and what is on disk agree.
///
/// The handler's file mover is a gate: the deadline fires exactly inside the window under test, with no timing.
final class DownloadTimeoutRaceTests: XCTestCase {
    private let url = URL(string: "https://files.example.com/report.pdf")!

    private func makeDestination() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("race-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: folder) }
        return folder.appendingPathComponent("report.pdf")
    }

    private func makeHandler(
        destination: URL,
        promise: Promise<ConnectResponse>,
        moveIntoPlace: @escaping @Sendable (URL, URL) throws -> Void
    ) -> TaskHandler {
        TaskHandler(
            request: URLRequest(url: url, timeoutInterval: 5), transfer: TransferOptions(destination: destination),
            promise: promise, deadline: nil, moveIntoPlace: moveIntoPlace, stop: {})
    }

    /// Receives a whole 200 body of "%PDF".
    private func receiveBody(_ handler: TaskHandler) {
        let headers = ["Content-Length": "4"]
        let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: headers)!
        XCTAssertTrue(handler.didReceive(response))
        XCTAssertTrue(handler.didReceive(Data("%PDF".utf8)))
    }

    private func temporaryDownloads(beside destination: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: destination.deletingLastPathComponent().path)
            .filter { $0.hasSuffix(".download") }
    }

    /// Checks that the future's outcome and the disk agree: success with the body in place, or a failure and no
    /// file (nor a partial one).
    private func assertOutcomeMatchesDisk(
        _ future: Future<ConnectResponse>, destination: URL, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let result = try XCTUnwrap(future.result, "the future is complete", file: file, line: line)
        switch result {
        case .success(let response):
            XCTAssertEqual(response.fileURL, destination, file: file, line: line)
            XCTAssertEqual(try? Data(contentsOf: destination), Data("%PDF".utf8), file: file, line: line)
        case .failure(let error):
            XCTAssertEqual((error as? ConnectError)?.kind, .timedOut, file: file, line: line)
            XCTAssertFalse(
                FileManager.default.fileExists(atPath: destination.path),
                "the future reports \(error) but the file was put in place", file: file, line: line)
        }
        XCTAssertEqual(try temporaryDownloads(beside: destination), [], file: file, line: line)
    }

    /// The deadline fires while the finished download is being moved into place.
    func testTimeoutFiringWhileTheDownloadIsPutInPlaceAgreesWithTheDisk() throws {
        let destination = try makeDestination()
        let promise = Promise<ConnectResponse>()
        let handlerBox = Protected<TaskHandler?>(nil)
        let fired = Protected(false)
        let handler = makeHandler(destination: destination, promise: promise) { temporary, destination in
            handlerBox.snapshot?.timeOut()  // the deadline passes now, on another thread in real life
            fired.withLock { $0 = true }
            try TransferOptions.moveIntoPlace(temporary, to: destination)
        }
        handlerBox.withLock { $0 = handler }
        receiveBody(handler)

        handler.didComplete(error: nil)

        XCTAssertTrue(fired.snapshot)
        try assertOutcomeMatchesDisk(promise.future, destination: destination)
        handlerBox.withLock { $0 = nil }
    }

    /// The deadline fires first, then the task reports its completion.
    func testTimeoutBeforeTheCompletionLeavesNoFile() throws {
        let destination = try makeDestination()
        let promise = Promise<ConnectResponse>()
        let handler = makeHandler(
            destination: destination, promise: promise, moveIntoPlace: TransferOptions.moveIntoPlace)
        receiveBody(handler)

        handler.timeOut()
        handler.didComplete(error: nil)

        try assertOutcomeMatchesDisk(promise.future, destination: destination)
        XCTAssertThrowsError(try promise.future.result?.get())
    }

    /// The completion comes first, then the deadline fires: the download stands.
    func testTimeoutAfterTheCompletionKeepsTheDownload() throws {
        let destination = try makeDestination()
        let promise = Promise<ConnectResponse>()
        let handler = makeHandler(
            destination: destination, promise: promise, moveIntoPlace: TransferOptions.moveIntoPlace)
        receiveBody(handler)

        handler.didComplete(error: nil)
        handler.timeOut()

        try assertOutcomeMatchesDisk(promise.future, destination: destination)
        XCTAssertEqual(try promise.future.result?.get().fileURL, destination)
    }

    /// The caller cancels just as the task completes (before its cancel handler has run): no file appears.
    func testCancellationBeforeTheMoveLeavesNoFile() throws {
        let destination = try makeDestination()
        let promise = Promise<ConnectResponse>()
        let handler = makeHandler(
            destination: destination, promise: promise, moveIntoPlace: TransferOptions.moveIntoPlace)
        receiveBody(handler)

        promise.future.cancel()
        handler.didComplete(error: nil)

        XCTAssertEqual((promise.future.result.flatMap { try? $0.get() })?.fileURL, nil)
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path))
        XCTAssertEqual(try temporaryDownloads(beside: destination), [])
    }
    /// The caller cancels while the finished download is being moved into place, before or after the move itself
    /// (the cancel handler runs on the caller's thread): the future says cancelled, so no file stays.
    func testCancellationWhileTheDownloadIsPutInPlaceLeavesNoFile() throws {
        for cancelsAfterTheMove in [false, true] {
            let destination = try makeDestination()
            let promise = Promise<ConnectResponse>()
            let handlerBox = Protected<TaskHandler?>(nil)
            @Sendable func cancel() {
                promise.future.cancel()
                handlerBox.snapshot?.discardDownloadOnCancel()  // what the transport's cancel handler does
            }
            let handler = makeHandler(destination: destination, promise: promise) { temporary, destination in
                if !cancelsAfterTheMove { cancel() }
                try TransferOptions.moveIntoPlace(temporary, to: destination)
                if cancelsAfterTheMove { cancel() }
            }
            handlerBox.withLock { $0 = handler }
            receiveBody(handler)

            handler.didComplete(error: nil)

            let error = promise.future.result.flatMap { result -> ConnectError? in
                guard case .failure(let error) = result else { return nil }
                return error as? ConnectError
            }
            XCTAssertEqual(error?.kind, .cancelled, "cancelled after the move: \(cancelsAfterTheMove)")
            XCTAssertFalse(
                FileManager.default.fileExists(atPath: destination.path),
                "the future says cancelled but the file is in place (cancelled after the move: \(cancelsAfterTheMove))")
            XCTAssertEqual(try temporaryDownloads(beside: destination), [])
        }
    }
}
