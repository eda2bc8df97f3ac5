import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

/// Files in a disk storage's folder that no storage wrote: only a regular file within the bound is read. A named pipe
/// would make a read wait for a writer for ever; a huge file would be read whole into memory.
final class DiskResponseStorageForeignFileTests: DiskStorageFolderTestCase {
    /// Runs `work` on a thread of its own and fails if it has not returned within a minute, as a read blocked on the
    /// named pipe `fifo` would not: the pipe is then opened for writing and closed, which ends that read, so that the
    /// thread finishes before the folder goes.
    private func assertReturns(
        unblocking fifo: URL, file: StaticString = #filePath, line: UInt = #line, _ work: @escaping @Sendable () -> Void
    ) {
        let returned = expectation(description: "returned")
        Thread {
            work()
            returned.fulfill()
        }.start()
        guard XCTWaiter().wait(for: [returned], timeout: 60) != .completed else { return }
        XCTFail("blocked on the named pipe", file: file, line: line)
        let writer = open(fifo.path, O_WRONLY | O_NONBLOCK)
        if writer >= 0 { close(writer) }
        wait(for: [returned], timeout: 60)
    }

    /// Makes a named pipe at `url`.
    private func makeFIFO(at url: URL) throws {
        guard mkfifo(url.path, 0o600) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    /// A named pipe where a key's file would be is a miss: the read does not wait for a writer.
    func testAPipeInPlaceOfAKeysFileIsAMiss() throws {
        // Given a storage whose file for "k" was replaced by a named pipe
        let storage = try DiskResponseStorage(directory: folder)
        let fifo = try storedFile(of: storage, in: folder)
        try FileManager.default.removeItem(at: fifo)
        try makeFIFO(at: fifo)

        // When it reads "k", then it returns, finding nothing
        let found = Protected<StoredResponse?>(storedRecord())
        assertReturns(unblocking: fifo) { found.withLock { $0 = storage.response(forKey: "k") } }
        XCTAssertNil(found.withLock { $0 })
    }

    /// A named pipe with a name no key has is skipped when a removal reads the files it does not know, and the
    /// removal still removes what it should.
    func testAForeignPipeDoesNotBlockARemoval() throws {
        // Given a folder with a response under "k" and a named pipe another program left there
        let fifo = try XCTUnwrap(folder?.appendingPathComponent("foreign.response"))
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try makeFIFO(at: fifo)
        try DiskResponseStorage(directory: folder).store(storedRecord(), forKey: "k body:1")
        let storage = try DiskResponseStorage(directory: folder)

        // When a storage opened on it (a restart) removes "k" and its variants, then it returns, and they went
        assertReturns(unblocking: fifo) { storage.removeResponses(forKey: "k") }
        XCTAssertNil(storage.response(forKey: "k body:1"))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["foreign.response"])
    }

    /// A file larger than the storage's bound (another storage on the folder with a larger one wrote it) is not read:
    /// it is a miss, and a removal that cannot learn its key without reading it removes it (the bound would make it
    /// go anyway), rather than leave a response it should have removed.
    func testAFileLargerThanTheBoundIsNeitherReadNorLeftBehind() throws {
        // Given a response of 5,000 bytes that a storage bounded at 1 MB wrote, under "big" and under a variant
        let larger = try DiskResponseStorage(directory: folder, maxBytes: 1_000_000)
        larger.store(storedRecord(bodyBytes: 5_000), forKey: "big")
        larger.store(storedRecord(bodyBytes: 5_000), forKey: "big body:1")

        // When a storage bounded at 2,000 bytes reads it, then it finds nothing
        let smaller = try DiskResponseStorage(directory: folder, maxBytes: 2_000)
        XCTAssertNil(smaller.response(forKey: "big"), "a file over the bound is not read")

        // And when it removes "big" and its variants, then both go, the variant's too (its key unread)
        smaller.removeResponses(forKey: "big")
        XCTAssertNil(larger.response(forKey: "big body:1"))
        XCTAssertEqual(try responseFileBytes(in: folder), 0)
    }

    /// A folder named like a response file (another program's, a user's) is no file a storage wrote: neither
    /// `removeAll()` nor an eviction past the bound deletes it or what it holds, and a symbolic link named like one
    /// never has what it points to deleted. A recursive removal lost them all.
    func testAFolderOrALinkNamedLikeAResponseIsNeverDeleted() throws {
        // Given a folder "x.response" holding a file, older than any response, and a link to a file outside
        let manager = FileManager.default
        let subfolder = folder.appendingPathComponent("x.response")
        let inside = subfolder.appendingPathComponent("keep.txt")
        try manager.createDirectory(at: subfolder, withIntermediateDirectories: true)
        try Data("precious".utf8).write(to: inside)
        try manager.setAttributes([.modificationDate: Date(timeIntervalSince1970: 0)], ofItemAtPath: subfolder.path)
        let outside = manager.temporaryDirectory.appendingPathComponent("target-\(UUID().uuidString)")
        defer { try? manager.removeItem(at: outside) }
        try Data("elsewhere".utf8).write(to: outside)
        try manager.createSymbolicLink(
            at: folder.appendingPathComponent("y.response"), withDestinationURL: outside)

        // When a storage on the folder stores past its bound, then the folder and the link's file stay
        let storage = try DiskResponseStorage(directory: folder, maxBytes: 2_500)
        for index in 0..<3 { storage.store(storedRecord(bodyBytes: 1_000), forKey: "k\(index)") }
        XCTAssertEqual(try? Data(contentsOf: inside), Data("precious".utf8), "an eviction deleted the folder")
        XCTAssertNotNil(storage.response(forKey: "k2"), "the newest response is kept")

        // And when it removes everything, then only its own files go
        storage.removeAll()
        XCTAssertEqual(try? Data(contentsOf: inside), Data("precious".utf8), "removeAll() deleted the folder")
        XCTAssertEqual(try? Data(contentsOf: outside), Data("elsewhere".utf8))
        XCTAssertEqual(try manager.contentsOfDirectory(atPath: folder.path).sorted(), ["x.response", "y.response"])
    }
}
