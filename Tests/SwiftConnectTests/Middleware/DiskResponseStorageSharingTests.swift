import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A disk storage's folder shared with another storage, and what of a response's URL reaches the disk.
final class DiskResponseStorageSharingTests: DiskStorageFolderTestCase {
    /// A file another storage on the folder replaced with a larger one (a newer answer under the same key) counts at
    /// its new size: counted at the size this storage wrote, the folder grew past the bound.
    func testAFileAnotherStorageReplacedCountsAtItsNewSize() throws {
        // Given two storages on one folder, the second replacing a small file of the first's with a large one
        let first = try DiskResponseStorage(directory: folder, maxBytes: 2_000)
        let second = try DiskResponseStorage(directory: folder, maxBytes: 2_000)
        first.store(storedRecord(bodyBytes: 10), forKey: "a")
        second.store(storedRecord(bodyBytes: 1_000), forKey: "a")
        XCTAssertLessThanOrEqual(try responseFileBytes(in: folder), 2_000)

        // When the first stores another response
        first.store(storedRecord(bodyBytes: 600), forKey: "b")

        // Then the folder is still within the bound, the least recently written file gone
        XCTAssertLessThanOrEqual(try responseFileBytes(in: folder), 2_000)
        XCTAssertNil(first.response(forKey: "a"))
        XCTAssertNotNil(first.response(forKey: "b"))
    }

    /// A redirect to a URL that carries a secret (a signed link, `?access_token=`) keeps the response off the disk:
    /// its file would hold the URL that answered, secret and all, although the request carried none. The older
    /// answer the disk had under the key goes: after a restart, it would be served in place of the newer one.
    func testARedirectToAURLWithASecretNeverReachesTheDisk() throws {
        // Given /avatar stored on disk as answered by itself, then answered from a signed URL it redirects to
        let signed = try XCTUnwrap(URL(string: "https://cdn.test/avatar.png?access_token=s3cret"))
        let transport = FakeTransport()
        transport.stub(
            "/avatar",
            with: [
                .data(Data("old".utf8)),
                .handler { request in
                    guard
                        let answer = ConnectResponse(
                            request: request, statusCode: 200, data: Data("new".utf8), url: signed)
                    else { return .failure(URLError(.badServerResponse)) }
                    return .success(answer)
                },
            ])
        let connect = Connect(
            transport: transport,
            responseCache: ResponseCache(storage: try DiskResponseStorage(directory: folder)),
            configuration: ServerConfiguration(host: "api.test"))
        let rule = RequestOptions(cache: CacheRule(timeToLive: 300))
        let refetch = RequestOptions(cache: CacheRule(timeToLive: 300, bypassesCache: true))
        XCTAssertEqual(
            try connect.response(for: Route("/avatar"), options: rule).wait(timeout: 10).data, Data("old".utf8))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path).count, 1)

        // When it is fetched again
        let answer = try connect.response(for: Route("/avatar"), options: refetch).wait(timeout: 10)
        XCTAssertEqual(answer.data, Data("new".utf8))

        // Then no file holds the secret, nor the older answer; memory still serves the newer one
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
        XCTAssertEqual(
            try connect.response(for: Route("/avatar"), options: rule).wait(timeout: 10).data, Data("new".utf8))
        XCTAssertEqual(transport.requests.count, 2)
    }
}

/// A response whose `Location` or `Content-Location` names a URL with a secret (user info, `?access_token=`, a
/// `#access_token=` fragment) stays off the disk, as one that a redirect brought from such a URL does: its file would
/// hold the header, secret and all.
final class DiskResponseStorageHeaderSecretTests: DiskStorageFolderTestCase {
    /// Stores /todos on disk, then fetches it again answered with `name: value`, and returns what the folder then
    /// holds and the body memory serves next.
    private func refetch(answeredWith name: String, _ value: String) throws -> (files: [String], served: Data) {
        try? FileManager.default.removeItem(at: folder)
        let transport = FakeTransport()
        transport.stub(
            "/todos", with: [.json(string: "{\"v\":1}"), .json(string: "{\"v\":2}", headers: [name: value])])
        let connect = Connect(
            transport: transport,
            responseCache: ResponseCache(storage: try DiskResponseStorage(directory: folder)),
            configuration: ServerConfiguration(host: "api.test"))
        let rule = RequestOptions(cache: CacheRule(timeToLive: 300))
        _ = try connect.response(for: Route("/todos"), options: rule).wait(timeout: 10)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path).count, 1, value)
        let answer = try connect.response(
            for: Route("/todos"), options: RequestOptions(cache: CacheRule(timeToLive: 300, bypassesCache: true))
        )
        .wait(timeout: 10)
        XCTAssertEqual(answer.header(name), value)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        let served = try connect.response(for: Route("/todos"), options: rule).wait(timeout: 10).data
        XCTAssertEqual(transport.requests.count, 2, "memory served the last one")
        return (files, served)
    }

    func testALocationWithASecretNeverReachesTheDisk() throws {
        for value in [
            "https://amy:pw@api.test/todos/2", "/todos/2?access_token=s3cret", "/todos/2#access_token=s3cret",
            "//amy:pw@cdn.test/todos/2", "https:amy:pw@api.test/todos/2",
        ] {
            let (files, served) = try refetch(answeredWith: "Location", value)
            XCTAssertEqual(files, [], "neither the new answer nor the older one is on disk: \(value)")
            XCTAssertEqual(served, Data("{\"v\":2}".utf8), value)
        }
    }

    func testAContentLocationWithASecretNeverReachesTheDisk() throws {
        for value in ["/todos/2?api_key=s3cret", "https://amy:pw@api.test/todos/2", "https://api.test/t?token=s3cret"] {
            let (files, served) = try refetch(answeredWith: "Content-Location", value)
            XCTAssertEqual(files, [], "neither the new answer nor the older one is on disk: \(value)")
            XCTAssertEqual(served, Data("{\"v\":2}".utf8), value)
        }
    }

    /// A response header named like a secret (as redaction judges names: a token, a key, a session) keeps the
    /// response off the disk, as a `Location` with a secret does: its file would hold the value. Dropping the field
    /// from the file instead would serve a response without it after a restart.
    func testAHeaderNamedLikeASecretKeepsTheResponseOffTheDisk() throws {
        for name in ["X-Auth-Token", "Authorization", "Proxy-Authorization", "X-Api-Key", "X-Session-Id"] {
            let (files, served) = try refetch(answeredWith: name, "s3cret-value")
            XCTAssertEqual(files, [], "neither the new answer nor the older one is on disk: \(name)")
            XCTAssertEqual(served, Data("{\"v\":2}".utf8), name)
        }
    }

    /// An ordinary header does not keep a response off the disk.
    func testAnOrdinaryHeaderReachesTheDisk() throws {
        for name in ["X-Request-Id", "ETag", "Set-Cookie"] {
            let (files, _) = try refetch(answeredWith: name, "\"v2\"")
            XCTAssertEqual(files.count, 1, name)
        }
    }

    /// A `Location` or `Content-Location` without a secret is stored as any other header.
    func testALocationWithoutASecretReachesTheDisk() throws {
        for name in ["Location", "Content-Location"] {
            let (files, _) = try refetch(answeredWith: name, "https://api.test/todos/2?page=2")
            XCTAssertEqual(files.count, 1, name)
        }
    }
}

/// A successful write to the URL a redirected response was asked for reaches it on disk after a restart.
final class DiskResponseStorageRedirectInvalidationTests: DiskStorageFolderTestCase {
    /// A response a redirect brought from `/profile/photo`, asked for as `/me/photo` under a custom key, is removed
    /// by a successful PUT to `/me/photo` in the next process too: memory knew both URLs, the file only the one that
    /// answered, and the disk served the photo the PUT had replaced.
    func testAWriteToTheURLAskedForRemovesARedirectedResponseFromTheDisk() throws {
        // Given the photo stored on disk by an earlier process, under a custom key
        let answered = try XCTUnwrap(URL(string: "https://api.test/profile/photo"))
        let transport = FakeTransport()
        transport.stub(
            .get, "/me/photo",
            with: .handler { request in
                let body = Data("photo \(request.url?.query ?? "")".utf8)
                guard let answer = ConnectResponse(request: request, statusCode: 200, data: body, url: answered)
                else { return .failure(URLError(.badServerResponse)) }
                return .success(answer)
            })
        transport.stub(.put, "/me/photo", with: .status(204))
        let rule = RequestOptions(cache: CacheRule(timeToLive: 300, key: "photo"))
        let client = { () throws -> Connect in
            Connect(
                transport: transport,
                responseCache: ResponseCache(storage: try DiskResponseStorage(directory: self.folder)),
                configuration: ServerConfiguration(host: "api.test"))
        }
        _ = try client().response(for: Route("/me/photo"), options: rule).wait(timeout: 10)
        let restarted = try client()

        // When the next process replaces the photo
        XCTAssertEqual(try restarted.response(for: Route("/me/photo", method: .put)).wait(timeout: 10).statusCode, 204)

        // Then the stored photo is gone, and the next read goes to the network
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
        _ = try restarted.response(for: Route("/me/photo"), options: rule).wait(timeout: 10)
        XCTAssertEqual(transport.requests.map(\.httpMethod), ["GET", "PUT", "GET"])
    }
}

/// A custom key spelled in another Unicode normalization (`é` as one scalar, or as `e` and a combining accent) is one
/// key to memory, which answers either spelling: removing it by either spelling removes it.
final class ResponseCacheUnicodeKeyTests: DiskStorageFolderTestCase {
    func testRemovingAKeyByAnotherNormalizationRemovesIt() throws {
        // Given a response stored under the composed spelling of a key, in memory and on disk
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        XCTAssertNotEqual(Array(composed.utf8), Array(decomposed.utf8))
        let transport = FakeTransport()
        transport.stub("/menu", with: (1...2).map { .json(string: #"{"menu":\#($0)}"#) })
        let cache = ResponseCache(storage: try DiskResponseStorage(directory: folder))
        let connect = Connect(
            transport: transport, responseCache: cache, configuration: ServerConfiguration(host: "api.test"))
        let asked = { (key: String) in
            try connect.response(
                for: Route("/menu"), options: RequestOptions(cache: CacheRule(timeToLive: 300, key: key))
            )
            .wait(timeout: 10).data
        }
        XCTAssertEqual(try asked(composed), Data(#"{"menu":1}"#.utf8))

        // When the app removes the key by its decomposed spelling
        cache.removeResponse(forKey: decomposed)

        // Then neither memory nor the disk has it: that spelling is answered by the network
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [])
        XCTAssertEqual(try asked(decomposed), Data(#"{"menu":2}"#.utf8))
        XCTAssertEqual(transport.requests.count, 2)
    }
}
