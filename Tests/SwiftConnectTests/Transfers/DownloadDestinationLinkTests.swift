import Foundation
import SwiftConnectTesting
import XCTest

@testable @_spi(Engine) import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A symbolic link at a download's destination is replaced by the downloaded file, never followed, on a real engine
/// and through a transport that works in memory alike: what the link leads to is neither written, nor refused as the
/// destination, nor asked for the new file's permissions (a link planted in a shared folder must not send a download
/// over another file, nor make it world-writable).
final class DownloadDestinationLinkTests: XCTestCase {
    private var server: LocalServer!
    private var folder: URL!
    private var destination: URL!
    private static let new = Data("the new report".utf8)

    override func setUpWithError() throws {
        server = try LocalServer.started()
        server.route("GET", "/report") { _ in .data(Self.new) }
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("link-destination-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        destination = folder.appendingPathComponent("report.bin")
    }

    override func tearDown() {
        server.stop()
        try? FileManager.default.removeItem(at: folder)
    }

    /// The same download through a real engine and through one that ignores transfer options (the core writes it).
    private var clients: [(String, Connect)] {
        [
            (
                "URLSession",
                Connect(
                    transport: URLSessionTransport(), retryPolicy: nil,
                    configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: server.port))
            ),
            (
                "in memory",
                Connect(
                    transport: FakeTransport.answering(.data(Self.new)), retryPolicy: nil,
                    configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: server.port))
            ),
        ]
    }

    private func type(of url: URL) throws -> FileAttributeType? {
        try FileManager.default.attributesOfItem(atPath: url.path)[.type] as? FileAttributeType
    }

    func testALinkToAFileIsReplacedAndTheFileKept() throws {
        for (name, connect) in clients {
            let target = folder.appendingPathComponent("target-\(UUID().uuidString).txt")
            try Data("someone else's file".utf8).write(to: target)
            try? FileManager.default.removeItem(at: destination)
            try FileManager.default.createSymbolicLink(at: destination, withDestinationURL: target)

            XCTAssertEqual(try connect.download(Route("/report"), to: destination).wait(timeout: 30), destination, name)

            XCTAssertEqual(try type(of: destination), .typeRegular, name)
            XCTAssertEqual(try Data(contentsOf: destination), Self.new, name)
            XCTAssertEqual(try Data(contentsOf: target), Data("someone else's file".utf8), name)
        }
    }

    /// Followed for its permissions, a link to a world-writable file made the download world-writable (and
    /// executable): `0777`, where a new file is `0666` less the umask.
    func testALinkLendsTheDownloadNoPermissions() throws {
        let mask = umask(0)
        umask(mask)
        for (name, connect) in clients {
            let target = folder.appendingPathComponent("open-\(UUID().uuidString).txt")
            try Data("world-writable".utf8).write(to: target)
            try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: target.path)
            try? FileManager.default.removeItem(at: destination)
            try FileManager.default.createSymbolicLink(at: destination, withDestinationURL: target)

            XCTAssertEqual(try connect.download(Route("/report"), to: destination).wait(timeout: 30), destination, name)

            let attributes = try FileManager.default.attributesOfItem(atPath: destination.path)
            let mode = attributes[.posixPermissions] as? NSNumber
            XCTAssertEqual(mode.map { String($0.intValue, radix: 8) }, String(0o666 & ~Int(mask), radix: 8), name)
            XCTAssertEqual(try Data(contentsOf: target), Data("world-writable".utf8), name)
        }
    }

    /// A link to a directory was refused as "a directory", though the download replaces the link, not the directory.
    func testALinkToADirectoryIsReplacedAndTheDirectoryKept() throws {
        let directory = folder.appendingPathComponent("kept")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        let precious = directory.appendingPathComponent("precious.txt")
        try Data("user data".utf8).write(to: precious)
        for (name, connect) in clients {
            try? FileManager.default.removeItem(at: destination)
            try FileManager.default.createSymbolicLink(at: destination, withDestinationURL: directory)

            XCTAssertEqual(try connect.download(Route("/report"), to: destination).wait(timeout: 30), destination, name)

            XCTAssertEqual(try type(of: destination), .typeRegular, name)
            XCTAssertEqual(try Data(contentsOf: destination), Self.new, name)
            XCTAssertEqual(try Data(contentsOf: precious), Data("user data".utf8), name)

            // A URL made from the path once the link is there (which Foundation may mark as a directory's) too.
            try FileManager.default.removeItem(at: destination)
            try FileManager.default.createSymbolicLink(at: destination, withDestinationURL: directory)
            let made = URL(fileURLWithPath: destination.path)
            XCTAssertEqual(try connect.download(Route("/report"), to: made).wait(timeout: 30), made, name)
            XCTAssertEqual(try type(of: destination), .typeRegular, name)
            XCTAssertEqual(try Data(contentsOf: precious), Data("user data".utf8), name)
        }
    }

    /// A directory itself is still refused, named, and kept.
    func testADirectoryIsStillRefused() throws {
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: false)
        for (name, connect) in clients {
            XCTAssertThrowsError(try connect.download(Route("/report"), to: destination).wait(timeout: 30)) {
                XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess, name)
                XCTAssertTrue(($0 as? ConnectError)?.message.contains(self.destination.path) == true, "\($0)")
            }
            XCTAssertEqual(try type(of: destination), .typeDirectory, name)
        }
    }

    /// A file that is both a request's body and its download's destination is sent as it was and then replaced by
    /// the answer, whole: the download is written beside it and renamed into place once the body has arrived.
    func testADownloadOverItsOwnBodyFileSendsTheOldAndKeepsTheNew() throws {
        server.route("POST", "/echo") { request in .data(Data("echo: ".utf8) + request.body) }
        let old = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        try old.write(to: destination)
        var request = ConnectRequest(method: .post, url: server.baseURL.appendingPathComponent("echo"))
        request.timeoutInterval = 20
        let transfer = TransferOptions(bodyFile: destination, destination: destination)

        let response = try URLSessionTransport().send(request, transfer: transfer).wait(timeout: 30)

        XCTAssertEqual(response.fileURL, destination)
        XCTAssertEqual(try Data(contentsOf: destination), Data("echo: ".utf8) + old)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["report.bin"])
    }
}

/// A destination whose name no file can have (over 255 bytes, `NAME_MAX`) is refused, named, before anything is sent:
/// it was found only by the last step's rename, once the whole body had been downloaded.
final class DownloadDestinationNameTests: XCTestCase {
    func testANameTooLongForAFileIsRefusedBeforeAnythingIsSent() throws {
        let server = try LocalServer.started()
        addTeardownBlock { server.stop() }
        server.route("GET", "/report") { _ in .data(Data(count: 100_000)) }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("long-name-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent(String(repeating: "é", count: 128) + ".bin")
        let connect = Connect(
            transport: URLSessionTransport(), retryPolicy: nil,
            configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: server.port))

        XCTAssertThrowsError(try connect.download(Route("/report"), to: destination).wait(timeout: 30)) {
            guard let error = $0 as? ConnectError else { return XCTFail("\($0)") }
            XCTAssertEqual(error.kind, .fileAccess, "\(error)")
            XCTAssertTrue(error.message.contains(destination.path), error.message)
            XCTAssertTrue(error.message.contains("255"), error.message)
        }
        XCTAssertEqual(server.requests.count, 0, "nothing was sent")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
    }

    /// A URL that names a directory (`isDirectory: true`, a path ending in `/`) that does not exist yet became a file of
    /// that name, where a caller who meant "into this folder" gets an error for an existing one.
    func testAURLThatNamesADirectoryIsRefusedBeforeAnythingIsSent() throws {
        let server = try LocalServer.started()
        addTeardownBlock { server.stop() }
        server.route("GET", "/report") { _ in .data(Data("the report".utf8)) }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("dir-url-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("reports", isDirectory: true)
        let connect = Connect(
            transport: URLSessionTransport(), retryPolicy: nil,
            configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: server.port))

        XCTAssertThrowsError(try connect.download(Route("/report"), to: destination).wait(timeout: 30)) {
            guard let error = $0 as? ConnectError else { return XCTFail("\($0)") }
            XCTAssertEqual(error.kind, .fileAccess, "\(error)")
            XCTAssertTrue(error.message.contains(destination.path), error.message)
        }
        XCTAssertEqual(server.requests.count, 0, "nothing was sent")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
    }
}

/// A destination that is neither a file nor a link nor a directory (a pipe, a device, a socket) is refused, named,
/// before anything is sent, and left as it is: the download's rename replaced it with a regular file (a pipe a reader
/// waited on, or, for a process allowed to write in `/dev`, a device such as `/dev/null`).
final class DownloadDestinationSpecialFileTests: XCTestCase {
    func testAPipeAtTheDestinationIsRefusedAndKept() throws {
        let server = try LocalServer.started()
        addTeardownBlock { server.stop() }
        server.route("GET", "/report") { _ in .data(Data("the report".utf8)) }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("special-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let pipe = folder.appendingPathComponent("report.pipe")
        XCTAssertEqual(mkfifo(pipe.path, 0o600), 0)
        let clients: [(String, any Transport)] = [
            ("URLSession", URLSessionTransport()), ("in memory", FakeTransport.answering(.data(Data("x".utf8)))),
        ]
        for (name, transport) in clients {
            let connect = Connect(
                transport: transport, retryPolicy: nil,
                configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: server.port))

            XCTAssertThrowsError(try connect.download(Route("/report"), to: pipe).wait(timeout: 30)) {
                guard let error = $0 as? ConnectError else { return XCTFail("\(name): \($0)") }
                XCTAssertEqual(error.kind, .fileAccess, "\(name): \(error)")
                XCTAssertTrue(error.message.contains(pipe.path), "\(name): \(error.message)")
            }
            var status = stat()
            XCTAssertEqual(lstat(pipe.path, &status), 0, name)
            XCTAssertEqual(status.st_mode & S_IFMT, S_IFIFO, "\(name): the pipe is still a pipe")
        }
        XCTAssertEqual(server.requests.count, 0, "nothing was sent")
    }
}
