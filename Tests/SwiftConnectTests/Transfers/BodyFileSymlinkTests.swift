import Foundation
import SwiftConnectTesting
import XCTest

@testable @_spi(Engine) import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A body sent from a symbolic link to a file (``TransferOptions/bodyFile``) is the file's bytes, all of them, on
/// every engine. FoundationNetworking announced the length of the link itself (the length of the path it holds, from
/// `lstat`): the server read the first 54 bytes of a 70,000-byte file as the whole body, the call succeeded, and the
/// rest of the file was read as the next request on the connection.
final class BodyFileSymlinkTests: XCTestCase {
    func testASymlinkedBodyFileSendsTheWholeFileOnBothEngines() throws {
        let server = try LocalServer.started()
        addTeardownBlock { server.stop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("symlink-body-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("video.bin")
        let bytes = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try bytes.write(to: file)
        let link = folder.appendingPathComponent("link.bin")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: file)
        server.route("POST", "/upload") { request in .text("\(request.body.count) \(request.body == bytes)") }
        let expected = "\(bytes.count) true"

        let transports: [(String, any Transport)] = [
            ("SocketEngine", SocketEngine()),
            ("URLSession", URLSessionTransport()),
        ]
        for (name, transport) in transports {
            var request = ConnectRequest(method: .post, url: server.baseURL.appendingPathComponent("upload"))
            request.timeoutInterval = 10
            let reports = Protected<[TransferProgress]>([])
            var transfer = TransferOptions(bodyFile: link)
            transfer.progress = { progress in reports.withLock { $0.append(progress) } }

            let response = try transport.send(request, transfer: transfer).wait(timeout: 20)

            XCTAssertEqual(String(decoding: response.data, as: UTF8.self), expected, name)
            XCTAssertEqual(reports.snapshot.last?.totalBytesToSend, Int64(bytes.count), name)
        }
        XCTAssertEqual(server.requests.count, 2, "no part of the file was read as a request of its own")
    }
}
