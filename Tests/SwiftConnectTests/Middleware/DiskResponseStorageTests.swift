import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A test case with a folder of its own for a disk storage: a new path for each test (not created: the storage
/// creates it), removed with what it holds after the test.
class DiskStorageFolderTestCase: XCTestCase {
    /// The test's folder.
    var folder: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("cache-\(UUID().uuidString)")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: folder)
        super.tearDown()
    }
}

/// A response cache's second tier (issue 38, item 3): a storage protocol, in memory and on disk, bounded, surviving
/// a restart, files for the user only, no response to a request with credentials on disk, `Vary` honoured.
final class DiskResponseStorageTests: DiskStorageFolderTestCase {
    private let rule = RequestOptions(cache: CacheRule(timeToLive: 300))

    private func answers(_ count: Int, body: (Int) -> String = { #"{"answer":\#($0)}"# }) -> FakeTransport {
        let transport = FakeTransport()
        transport.stub("/todos", with: (1...count).map { .json(string: body($0)) })
        return transport
    }

    /// A client over a fresh cache on `folder`, as after a restart.
    private func client(_ transport: FakeTransport, maxBytes: Int = 1_000_000, now: Date = Date()) throws -> Connect {
        let storage = try DiskResponseStorage(directory: folder, maxBytes: maxBytes)
        return Connect(
            transport: transport, responseCache: ResponseCache(storage: storage, now: { now }),
            configuration: ServerConfiguration(host: "api.test"))
    }

    private func body(_ future: Future<Data>) -> String? {
        value(of: future).map { String(decoding: $0, as: UTF8.self) }
    }

    func testAStoredResponseSurvivesARestart() throws {
        let transport = answers(2)
        XCTAssertEqual(body(try client(transport).request(Route("/todos"), options: rule)), #"{"answer":1}"#)
        let restarted = try client(transport)
        XCTAssertEqual(body(restarted.request(Route("/todos"), options: rule)), #"{"answer":1}"#)
        XCTAssertEqual(transport.requests.count, 1, "the second process read it from disk")
        let answer = try XCTUnwrap(value(of: restarted.response(for: Route("/todos"), options: rule)))
        XCTAssertEqual(answer.header("Content-Type"), "application/json", "headers come back too")
    }

    /// A key leaves the URL's fragment out (never sent): a file an earlier version wrote under a key with a fragment is
    /// missed cleanly (fetched again, never another resource's answer), and the answer stored then serves every
    /// fragment of the resource, after a restart too.
    func testAFileStoredUnderAKeyWithAFragmentIsMissedAndTheAnswerServesEveryFragment() throws {
        let transport = answers(2)
        let earlier = try DiskResponseStorage(directory: folder)
        let stale = StoredResponse(
            url: try XCTUnwrap(URL(string: "https://api.test/todos#a")), method: "GET", statusCode: 200, headers: [],
            body: Data("old".utf8), expiry: Date().addingTimeInterval(300), varying: [])
        earlier.store(stale, forKey: "GET https://api.test/todos#a")

        XCTAssertEqual(body(try client(transport).request(Route("/todos#a"), options: rule)), #"{"answer":1}"#)
        XCTAssertEqual(transport.requests.count, 1, "the file under the old key is not read")
        let restarted = try client(transport)
        XCTAssertEqual(body(restarted.request(Route("/todos#b"), options: rule)), #"{"answer":1}"#)
        XCTAssertEqual(transport.requests.count, 1, "another fragment is the same resource")
    }

    /// "Keep it for ever" reaches the disk too: an infinite expiry could not be written, and the entry stayed in
    /// memory only (the folder empty, the next process asking the network).
    func testAResponseKeptForEverSurvivesARestart() throws {
        let transport = answers(2)
        let forever = RequestOptions(cache: CacheRule(timeToLive: .infinity))
        XCTAssertEqual(body(try client(transport).request(Route("/todos"), options: forever)), #"{"answer":1}"#)
        let restarted = try client(transport, now: Date().addingTimeInterval(10 * 365 * 24 * 3600))
        XCTAssertEqual(body(restarted.request(Route("/todos"), options: forever)), #"{"answer":1}"#)
        XCTAssertEqual(transport.requests.count, 1, "the second process read it from disk, ten years on")
    }

    func testFilesAreForTheUserOnly() throws {
        _ = body(try client(answers(1)).request(Route("/todos"), options: rule))
        let manager = FileManager.default
        let folderMode = try manager.attributesOfItem(atPath: folder.path)[.posixPermissions] as? NSNumber
        XCTAssertEqual(folderMode?.intValue, 0o700)
        let files = try manager.contentsOfDirectory(atPath: folder.path)
        XCTAssertEqual(files.count, 1)
        for file in files {
            let mode = try manager.attributesOfItem(atPath: folder.appendingPathComponent(file).path)[.posixPermissions]
            XCTAssertEqual((mode as? NSNumber)?.intValue, 0o600, file)
            XCTAssertFalse(file.contains("todos"), "a file's name says nothing of the URL")
        }
    }

    /// A file cut short (a disk that filled, a copy that stopped), emptied or overwritten is a miss, in this
    /// process and the next: never a crash, never part of a body; a new answer replaces it.
    func testACorruptOrTruncatedFileIsAMiss() throws {
        let storage = try DiskResponseStorage(directory: folder)
        let file = try storedFile(of: storage, in: folder)
        let whole = try Data(contentsOf: file)
        for damaged in [whole.prefix(whole.count / 2), whole.dropLast(), Data("garbage".utf8), Data()] {
            try damaged.write(to: file)
            XCTAssertNil(storage.response(forKey: "k"), "\(damaged.count) bytes")
            XCTAssertNil(try DiskResponseStorage(directory: folder).response(forKey: "k"), "after a restart")
        }
        let answer = storedRecord(bodyBytes: 7)
        storage.store(answer, forKey: "k")
        XCTAssertEqual(storage.response(forKey: "k"), answer)
    }

    /// A file that holds no record goes when it is read, whether by a lookup of its key or by a removal that reads
    /// the folder's unknown files: it no longer counts against the bound, nor is read again.
    func testACorruptFileIsRemovedWhenRead() throws {
        let storage = try DiskResponseStorage(directory: folder)
        let file = try storedFile(of: storage, in: folder)
        let whole = try Data(contentsOf: file)
        try whole.prefix(whole.count / 2).write(to: file)
        XCTAssertNil(storage.response(forKey: "k"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: file.path), "a lookup leaves the damaged file")

        try Data("garbage".utf8).write(to: file)
        let restarted = try DiskResponseStorage(directory: folder)
        restarted.removeResponses(forKey: "another")
        XCTAssertFalse(FileManager.default.fileExists(atPath: file.path), "a removal leaves the damaged file")
    }

    /// Two storages on one folder (two clients, two processes) keep the folder within the bound: each counts the
    /// files the other wrote, which it never read.
    func testTwoStoragesSharingAFolderKeepItWithinTheBound() throws {
        let first = try DiskResponseStorage(directory: folder, maxBytes: 2_000)
        let second = try DiskResponseStorage(directory: folder, maxBytes: 2_000)
        first.store(storedRecord(bodyBytes: 600), forKey: "a")
        second.store(storedRecord(bodyBytes: 600), forKey: "b")
        second.store(storedRecord(bodyBytes: 600), forKey: "c")
        XCTAssertLessThanOrEqual(try responseFileBytes(in: folder), 2_000)
        XCTAssertNil(second.response(forKey: "a"), "the oldest file, the first storage's, went")
        XCTAssertNotNil(second.response(forKey: "c"))
        // A file the other storage removed is no longer counted: the first stores again without evicting.
        first.removeAll()
        second.store(storedRecord(bodyBytes: 600), forKey: "d")
        second.store(storedRecord(bodyBytes: 600), forKey: "e")
        XCTAssertNotNil(second.response(forKey: "d"))
        XCTAssertNotNil(second.response(forKey: "e"))
        XCTAssertLessThanOrEqual(try responseFileBytes(in: folder), 2_000)
    }

    /// A storage removes a key's variants and a URL's responses that another storage on the folder wrote after it
    /// opened (another client, another process): a response the app removed is not read back from the disk.
    func testRemovalsReachTheFilesAnotherStorageOnTheFolderWrote() throws {
        let first = try DiskResponseStorage(directory: folder)
        let second = try DiskResponseStorage(directory: folder)
        first.store(storedRecord(), forKey: "todos body:1")
        first.store(storedRecord(), forKey: "todos credentials:2")
        second.removeResponses(forKey: "todos")
        XCTAssertNil(first.response(forKey: "todos body:1"))
        XCTAssertNil(first.response(forKey: "todos credentials:2"))

        first.store(storedRecord(), forKey: "custom")
        let cache = ResponseCache(storage: second)
        let transport = FakeTransport()
        transport.stub(.put, "/todos", with: .status(204))
        let connect = Connect(
            transport: transport, responseCache: cache, configuration: ServerConfiguration(host: "api.test"))
        XCTAssertNotNil(value(of: connect.request(Route("/todos", method: .put))))
        XCTAssertNil(first.response(forKey: "custom"), "a write to its URL removed it")
    }

    /// A folder filled under a larger bound is brought within a lower one as the storage opens (an app that lowered
    /// its bound in an update), the files written longest ago going first: not only at the next store, which a
    /// storage that only reads never makes.
    func testAFolderOverALoweredBoundIsBroughtWithinItWhenOpened() throws {
        // Given: three responses of the same size, written in turn under a bound of 10,000
        let large = try DiskResponseStorage(directory: folder, maxBytes: 10_000)
        var named = Set<String>()
        for (index, key) in ["a", "b", "c"].enumerated() {
            large.store(storedRecord(bodyBytes: 600), forKey: key)
            let names = Set(try FileManager.default.contentsOfDirectory(atPath: folder.path))
            let name = try XCTUnwrap(names.subtracting(named).first { $0.hasSuffix(".response") })
            named.insert(name)
            // Written a day apart, so that their order does not depend on the clock's resolution.
            try FileManager.default.setAttributes(
                [.modificationDate: Date(timeIntervalSince1970: 86_400 * Double(index + 1))],
                ofItemAtPath: folder.appendingPathComponent(name).path)
        }
        let written = try responseFileBytes(in: folder)
        // When: the folder is opened with a bound a byte short of them
        let small = try DiskResponseStorage(directory: folder, maxBytes: written - 1)
        // Then: before anything is stored, the folder is within it: the oldest went, the others stay
        XCTAssertLessThan(try responseFileBytes(in: folder), written)
        XCTAssertNil(small.response(forKey: "a"))
        XCTAssertNotNil(small.response(forKey: "b"))
        XCTAssertNotNil(small.response(forKey: "c"))
    }

    func testTheStorageStaysWithinItsBytesForgettingTheLeastRecentlyUsed() throws {
        let big = String(repeating: "x", count: 1_000)
        let transport = FakeTransport()
        for name in ["a", "b", "c"] { transport.stub("/\(name)", with: .json(string: #"{"v":"\#(name)\#(big)"}"#)) }
        let connect = try client(transport, maxBytes: 4_000)
        for name in ["a", "b", "c"] { _ = body(connect.request(Route("/\(name)"), options: rule)) }
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        XCTAssertEqual(files.count, 2, "the oldest went to make room")
        let restarted = try client(transport, maxBytes: 4_000)
        _ = body(restarted.request(Route("/c"), options: rule))
        _ = body(restarted.request(Route("/a"), options: rule))
        XCTAssertEqual(transport.requests.map { $0.url?.path }, ["/a", "/b", "/c", "/a"])
    }

    /// A response served from memory is used as much as one read from disk: the disk does not evict it first for
    /// being read from the file long ago.
    func testAResponseServedFromMemoryIsRecentlyUsedOnDisk() throws {
        // Given /a and /b stored, filling the disk, then /a served again from memory
        let big = String(repeating: "x", count: 1_000)
        let transport = FakeTransport()
        for name in ["a", "b", "c"] { transport.stub("/\(name)", with: .json(string: #"{"v":"\#(name)\#(big)"}"#)) }
        let connect = try client(transport, maxBytes: 4_000)
        for name in ["a", "b", "a"] { _ = body(connect.request(Route("/\(name)"), options: rule)) }
        XCTAssertEqual(transport.requests.map { $0.url?.path }, ["/a", "/b"], "memory served /a again")

        // When /c is stored, and the disk must forget one
        _ = body(connect.request(Route("/c"), options: rule))

        // Then it forgot /b, the least recently used: after a restart, /a is read from disk and /b fetched
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path).count, 2)
        let restarted = try client(transport, maxBytes: 4_000)
        _ = body(restarted.request(Route("/a"), options: rule))
        _ = body(restarted.request(Route("/b"), options: rule))
        XCTAssertEqual(transport.requests.map { $0.url?.path }, ["/a", "/b", "/c", "/b"])
    }

    func testAResponseToARequestWithCredentialsNeverReachesTheDisk() throws {
        let transport = answers(3)
        let signed = Route("/todos", headers: [.authorization(bearerToken: "t0ken")])
        let connect = try client(transport)
        _ = body(connect.request(signed, options: rule))
        XCTAssertEqual(body(connect.request(signed, options: rule)), #"{"answer":1}"#, "memory still serves it")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
        XCTAssertEqual(body(try client(transport).request(signed, options: rule)), #"{"answer":2}"#)
    }

    /// Credentials in the URL (user info, a secret query item) keep the response off the disk too: its file would
    /// hold them, in its key and its URL.
    func testARequestWithCredentialsInItsURLNeverReachesTheDisk() throws {
        let transport = answers(2)
        let connect = try client(transport)
        let withUserInfo = Route("/todos", baseURL: try XCTUnwrap(URL(string: "https://amy:pw@api.test")))

        _ = body(connect.request(Route("/todos?access_token=s3cret"), options: rule))
        _ = body(connect.request(withUserInfo, options: rule))

        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
    }

    /// A response whose file is written while the app removes everything (a logout) does not stay on disk.
    func testAFileWrittenDuringARemovalGoesToo() throws {
        let storage = RemovingStorage(try DiskResponseStorage(directory: folder))
        let cache = ResponseCache(storage: storage)
        storage.cache = cache
        let transport = answers(2)
        let connect = Connect(
            transport: transport, responseCache: cache, configuration: ServerConfiguration(host: "api.test"))

        _ = body(connect.request(Route("/todos"), options: rule))

        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
        XCTAssertEqual(body(connect.request(Route("/todos"), options: rule)), #"{"answer":2}"#)
    }

    /// Removing a key removes its file and those of its credential variants, written by this process or an earlier
    /// one, and nothing else.
    func testRemovingAKeyRemovesItsVariantsAcrossARestart() throws {
        let response = StoredResponse(
            url: try XCTUnwrap(URL(string: "https://api.test/todos")), method: "GET", statusCode: 200, headers: [],
            body: Data("{}".utf8), expiry: Date().addingTimeInterval(60), varying: [])
        let earlier = try DiskResponseStorage(directory: folder)
        for key in ["GET /todos", "GET /todos credentials:1", "GET /todos/1"] { earlier.store(response, forKey: key) }
        let storage = try DiskResponseStorage(directory: folder)
        storage.store(response, forKey: "GET /todos credentials:2")

        storage.removeResponses(forKey: "GET /todos")

        XCTAssertNil(storage.response(forKey: "GET /todos"))
        XCTAssertNil(storage.response(forKey: "GET /todos credentials:1"))
        XCTAssertNil(storage.response(forKey: "GET /todos credentials:2"))
        XCTAssertNotNil(storage.response(forKey: "GET /todos/1"))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path).count, 1)
    }

    /// Removing a key removes the responses stored with a body's digest in the key too (a POST under
    /// `keyIncludesBody`), with or without credentials, in both built-in storages, and nothing else.
    func testRemovingAKeyRemovesItsBodyVariants() throws {
        // Given each storage holding a key's body variants, and other keys that only look alike
        let response = StoredResponse(
            url: try XCTUnwrap(URL(string: "https://api.test/search")), method: "POST", statusCode: 200, headers: [],
            body: Data("{}".utf8), expiry: Date().addingTimeInterval(60), varying: [])
        let removed = ["POST /search", "POST /search body:ab12", "POST /search body:ab12 credentials:1"]
        let kept = ["POST /search/1 body:ab12", "POST /searches body:ab12", "POST /search-body:ab12"]
        let earlier = try DiskResponseStorage(directory: folder)
        for key in removed + kept { earlier.store(response, forKey: key) }
        let memory = MemoryResponseStorage()
        for key in removed + kept { memory.store(response, forKey: key) }
        let disk = try DiskResponseStorage(directory: folder)

        // When the key is removed from each
        for storage in [disk, memory] as [any ResponseCacheStorage] {
            storage.removeResponses(forKey: "POST /search")

            // Then its variants are gone, and the other keys are still there
            for key in removed { XCTAssertNil(storage.response(forKey: key), "\(type(of: storage)): \(key)") }
            for key in kept { XCTAssertNotNil(storage.response(forKey: key), "\(type(of: storage)): \(key)") }
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path).count, kept.count)
    }

    /// The cache's removal by key reaches a POST's response that a disk storage kept with its body's digest in the
    /// key, after a restart too.
    func testACacheRemovesAPOSTStoredPerBodyFromTheDisk() throws {
        // Given a search stored per body on disk by an earlier process
        let transport = FakeTransport()
        transport.stub("/search", with: (1...2).map { .json(string: #"{"answer":\#($0)}"#) })
        let rule = RequestOptions(cache: CacheRule(timeToLive: 300, keyIncludesBody: true))
        let search = Route("/search", method: .post, parameters: ["q": "swift"] as JSONObject)
        _ = body(try client(transport).request(search, options: rule))
        let cache = ResponseCache(storage: try DiskResponseStorage(directory: folder))
        let restarted = Connect(
            transport: transport, responseCache: cache, configuration: ServerConfiguration(host: "api.test"))

        // When the app removes the endpoint's key
        cache.removeResponse(forKey: "POST https://api.test/search")

        // Then the file is gone, and the search goes to the network
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
        XCTAssertEqual(body(restarted.request(search, options: rule)), #"{"answer":2}"#)
    }

    /// A successful write removes the files of its URL's responses, whatever their keys, written by an earlier
    /// process too (RFC 9111 §4.4).
    func testASuccessfulWriteRemovesTheURLsFilesAcrossARestart() throws {
        // Given /todos stored on disk by an earlier process, under a custom key and under its own
        let transport = answers(3)
        transport.stub(.delete, "/todos", with: .status(204))
        let keyed = RequestOptions(cache: CacheRule(timeToLive: 300, key: "todos"))
        _ = body(try client(transport).request(Route("/todos"), options: keyed))
        _ = body(try client(transport).request(Route("/todos"), options: rule))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path).count, 2)
        let restarted = try client(transport)

        // When a DELETE to it succeeds
        XCTAssertNotNil(value(of: restarted.request(Route("/todos", method: .delete))))

        // Then its files are gone, and it is fetched again
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
        XCTAssertEqual(body(restarted.request(Route("/todos"), options: keyed)), #"{"answer":3}"#)
    }

    func testVaryAndExpiryHoldAfterARestart() throws {
        let transport = FakeTransport()
        transport.stub(
            "/todos",
            with: (1...3).map { .json(string: #"{"answer":\#($0)}"#, headers: ["Vary": "Accept-Language"]) })
        let start = Date(timeIntervalSince1970: 1_000_000)
        let french = RequestOptions(headers: [.acceptLanguage("fr")])
        _ = body(try client(transport, now: start).request(Route("/todos"), options: rule.mergedForTest(french)))
        let later = try client(transport, now: start.addingTimeInterval(10))
        XCTAssertEqual(
            body(later.request(Route("/todos"), options: rule.mergedForTest(french))), #"{"answer":1}"#)
        XCTAssertEqual(
            body(
                later.request(
                    Route("/todos"), options: rule.mergedForTest(RequestOptions(headers: [.acceptLanguage("de")])))),
            #"{"answer":2}"#, "another language is another variant")
        let expired = try client(transport, now: start.addingTimeInterval(301))
        XCTAssertEqual(
            body(expired.request(Route("/todos"), options: rule.mergedForTest(french))), #"{"answer":3}"#,
            "past its time to live")
    }

    func testRemovingEverythingRemovesTheFiles() throws {
        let storage = try DiskResponseStorage(directory: folder)
        let cache = ResponseCache(storage: storage)
        let connect = Connect(
            transport: answers(1), responseCache: cache, configuration: ServerConfiguration(host: "api.test"))
        _ = body(connect.request(Route("/todos"), options: rule))
        XCTAssertFalse(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
        cache.removeAll()
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
    }

    /// A response a storage cannot keep (over its bound here; a full disk is the same path) removes the one it was to
    /// replace: that older answer was served after a restart, although the server had answered anew since.
    func testAResponseTooLargeToKeepRemovesTheOneItReplaces() throws {
        let stored = { (body: String) in
            StoredResponse(
                url: URL(string: "https://api.test/todos")!, method: "GET", statusCode: 200, headers: [],
                body: Data(body.utf8), expiry: Date(timeIntervalSinceNow: 300), varying: [])
        }
        let disk = try DiskResponseStorage(directory: folder, maxBytes: 2_000)
        let memory = MemoryResponseStorage(maxBytes: 2_000)
        for storage in [disk, memory] as [any ResponseCacheStorage] {
            storage.store(stored("old"), forKey: "GET https://api.test/todos")
            XCTAssertEqual(storage.response(forKey: "GET https://api.test/todos")?.body, Data("old".utf8))
            storage.store(stored(String(repeating: "x", count: 5_000)), forKey: "GET https://api.test/todos")
            XCTAssertNil(storage.response(forKey: "GET https://api.test/todos"), "\(storage)")
        }
        XCTAssertNil(try DiskResponseStorage(directory: folder).response(forKey: "GET https://api.test/todos"))
    }

    /// A file a process stopped writing is removed when a storage opens the folder, and `removeAll()` removes the
    /// files another storage on the folder wrote, which its index does not know.
    func testLeftoversAndAnotherStoragesFilesAreRemoved() throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let leftover = folder.appendingPathComponent(".\(UUID().uuidString).tmp")
        try Data("half a response".utf8).write(to: leftover)
        let first = try DiskResponseStorage(directory: folder)
        XCTAssertFalse(FileManager.default.fileExists(atPath: leftover.path), "a crashed write's file stays for ever")
        let second = try DiskResponseStorage(directory: folder)
        second.store(
            StoredResponse(
                url: URL(string: "https://api.test/todos")!, method: "GET", statusCode: 200, headers: [],
                body: Data("{}".utf8), expiry: Date(timeIntervalSinceNow: 300), varying: []),
            forKey: "GET https://api.test/todos")
        first.removeAll()
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
    }

    /// A store leaves one file in the folder, its response's, readable by the user only and holding the record: no
    /// temporary file of the storage's or of Foundation's (a `.dat.nosync…` one, which a crash would leave and no
    /// storage would clean) is left behind.
    func testAStoreLeavesOnlyItsFileForTheUserOnly() throws {
        let storage = try DiskResponseStorage(directory: folder)
        let record = storedRecord(bodyBytes: 10)
        storage.store(record, forKey: "k")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        XCTAssertEqual(files.count, 1, "\(files)")
        let file = folder.appendingPathComponent(try XCTUnwrap(files.first))
        XCTAssertTrue(file.lastPathComponent.hasSuffix(".response"), file.lastPathComponent)
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? NSNumber
        XCTAssertEqual(mode?.intValue, 0o600)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
        XCTAssertEqual(object["key"] as? String, "k")
        let response = try JSONSerialization.data(withJSONObject: try XCTUnwrap(object["response"]))
        XCTAssertEqual(try JSONDecoder().decode(StoredResponse.self, from: response), record)
        XCTAssertEqual(try DiskResponseStorage(directory: folder).response(forKey: "k"), record)
    }

    /// `Set-Cookie` never reaches a storage: a session's cookie would outlive it in a file. The response in memory
    /// keeps it.
    func testSetCookieIsNotStored() throws {
        let storage = MemoryResponseStorage()
        let transport = FakeTransport()
        transport.stub(
            "/todos", with: .json(string: "{}", headers: ["Set-Cookie": "session=secret; HttpOnly", "ETag": "\"1\""]))
        let connect = Connect(
            transport: transport, responseCache: ResponseCache(storage: storage),
            configuration: ServerConfiguration(host: "api.test"))
        let answer = try XCTUnwrap(value(of: connect.response(for: Route("/todos"), options: rule)))
        XCTAssertEqual(answer.header("Set-Cookie"), "session=secret; HttpOnly")
        let key = ResponseCache.key(
            for: URLRequest(url: URL(string: "https://api.test/todos")!), rule: CacheRule(timeToLive: 300))
        let stored = try XCTUnwrap(storage.response(forKey: key))
        XCTAssertEqual(stored.headers.map(\.name).filter { $0.lowercased() == "set-cookie" }, [])
        XCTAssertTrue(stored.headers.contains { $0.name == "ETag" }, "the other fields are kept")
    }

    func testAMemoryStorageIsAStorageToo() {
        let storage = MemoryResponseStorage(maxBytes: 10_000)
        let transport = answers(2)
        let first = Connect(
            transport: transport, responseCache: ResponseCache(storage: storage),
            configuration: ServerConfiguration(host: "api.test"))
        _ = body(first.request(Route("/todos"), options: rule))
        let second = Connect(
            transport: transport, responseCache: ResponseCache(storage: storage),
            configuration: ServerConfiguration(host: "api.test"))
        XCTAssertEqual(body(second.request(Route("/todos"), options: rule)), #"{"answer":1}"#)
        XCTAssertEqual(transport.requests.count, 1)
    }
}

extension RequestOptions {
    /// These options with `more`'s headers (a test's shorthand).
    fileprivate func mergedForTest(_ more: RequestOptions) -> RequestOptions {
        var merged = self
        merged.headers += more.headers
        return merged
    }
}

/// A storage that removes everything from its cache as each response is being stored, as a logout on another thread
/// would while the file is written.
private final class RemovingStorage: ResponseCacheStorage, @unchecked Sendable {
    private let base: DiskResponseStorage
    // @unchecked Sendable: `removing` is only read and written under `lock`.
    private let lock = NSLock()
    private var removing: ResponseCache?

    init(_ base: DiskResponseStorage) { self.base = base }

    /// The cache to empty on each store: once, before the first request, then each store removes once.
    var cache: ResponseCache? {
        get { lock.withLock { removing } }
        set { lock.withLock { removing = newValue } }
    }

    func response(forKey key: String) -> StoredResponse? { base.response(forKey: key) }

    func store(_ response: StoredResponse, forKey key: String) {
        let cache = lock.withLock {
            defer { removing = nil }
            return removing
        }
        cache?.removeAll()
        base.store(response, forKey: key)
    }

    func removeResponses(forKey key: String) { base.removeResponses(forKey: key) }

    func removeAll() { base.removeAll() }
}

/// A response of `bodyBytes` bytes of body, fresh for five minutes: what the disk storage tests store.
func storedRecord(bodyBytes: Int = 4) -> StoredResponse {
    StoredResponse(
        url: URL(string: "https://api.test/todos")!, method: "GET", statusCode: 200,
        headers: [.init(name: "Content-Type", value: "text/plain")],
        body: Data(repeating: UInt8(ascii: "a"), count: bodyBytes), expiry: Date().addingTimeInterval(300),
        varying: [])
}

/// Stores `storedRecord()` under "k" in `storage`, whose folder is `folder`, and returns the file it wrote.
func storedFile(of storage: DiskResponseStorage, in folder: URL) throws -> URL {
    storage.store(storedRecord(), forKey: "k")
    let name = try XCTUnwrap(
        FileManager.default.contentsOfDirectory(atPath: folder.path).first { $0.hasSuffix(".response") })
    return folder.appendingPathComponent(name)
}

/// The bytes of `folder`'s response files.
func responseFileBytes(in folder: URL) throws -> Int {
    try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".response") }
        .reduce(0) { total, name in
            let path = folder.appendingPathComponent(name).path
            let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber
            return total + (size?.intValue ?? 0)
        }
}
