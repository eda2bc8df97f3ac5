import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// POST /upload, with the parameters a test gives it.
private struct Upload: Connector {
    var parameters: (any ParametersRepresentable)? = nil
    var baseURL: URL { URL(string: "https://api.example.com")! }
    var endpoint: String { "/upload" }
    var method: HTTPMethod { .post }
    var headers: [HTTPHeader] = []
}

/// Uploads, downloads, size limits and progress through the fake transport (in-memory transfers).
final class TransferTests: XCTestCase {
    private struct Download: Connector {
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/file" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
    }

    private func temporaryURL(_ name: String = UUID().uuidString) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("transfer-\(name)")
    }

    func testGuideUploadSendsAMultipartBody() throws {
        let transport = FakeTransport.answering(.json(string: #"{"stored":true}"#, status: 201))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let file = File(name: "me.png", key: "avatar", mimeType: .png, data: Data([0x89, 0x50, 0x4E, 0x47]))
        _ = try connect.upload(files: [file], to: Upload(parameters: Parameter.form(key: "user", value: "ada"))).wait()

        let sent = try XCTUnwrap(transport.requests.first)
        let contentType = try XCTUnwrap(sent.value(forHTTPHeaderField: "Content-Type"))
        XCTAssertTrue(contentType.hasPrefix("multipart/form-data; boundary=SwiftConnect-"))
        let body = try XCTUnwrap(sent.httpBody)
        XCTAssertEqual(sent.value(forHTTPHeaderField: "Content-Length"), String(body.count))
        let parts = try MultipartParser.parse(body, contentType: contentType)
        XCTAssertEqual(parts.map(\.name), ["user", "avatar"])
        XCTAssertEqual(parts[1].filename, "me.png")
        XCTAssertEqual(parts[1].contentType, "image/png")
        XCTAssertEqual(parts[1].data, Data([0x89, 0x50, 0x4E, 0x47]))
    }

    private struct SortedUpload: Connector {
        var parameters: (any ParametersRepresentable)?
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/upload" }
        var method: HTTPMethod { .post }
        var headers: [HTTPHeader] { [] }
        var jsonEncoder: JSONEncoder {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            return encoder
        }
    }

    /// A `Parameter.jsonObject` stays a JSON body whatever `Content-Type` the connector's headers give it: its keys
    /// are still the fields when that type says form (they were read as one field named after the whole JSON text).
    func testUploadReadsAJSONObjectAsJSONThoughTheHeaderSaysForm() throws {
        struct FormTyped: Connector {
            var baseURL: URL { URL(string: "https://api.example.com")! }
            var endpoint: String { "/upload" }
            var method: HTTPMethod { .post }
            var headers: [HTTPHeader] { [HTTPHeader(name: "Content-Type", value: "application/x-www-form-urlencoded")] }
            var parameters: (any ParametersRepresentable)? { Parameter.jsonObject(value: ["name": "Ada"]) }
        }
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(transport: transport, retryPolicy: nil)

        _ = try connect.upload(files: [], to: FormTyped()).wait()

        let sent = try XCTUnwrap(transport.requests.first)
        let contentType = try XCTUnwrap(sent.value(forHTTPHeaderField: "Content-Type"))
        let parts = try MultipartParser.parse(try XCTUnwrap(sent.httpBody), contentType: contentType)
        XCTAssertEqual(parts.map(\.name), ["name"])
        XCTAssertEqual(parts.map { String(decoding: $0.data, as: UTF8.self) }, ["Ada"])
    }

    /// Profile fields beside an avatar: the connector's `.jsonObject` becomes one text part per key, in the
    /// order the connector's encoder wrote them (sorted here).
    func testUploadSendsAJSONObjectsKeysAsTextFields() throws {
        struct Address: Encodable {
            let city: String
            let zip: [Int]
        }
        struct Profile: Encodable {
            let name: String
            let age: Int
            let score: Double
            let verified: Bool
            let bio: String?
            let address: Address
            let quote: String
        }
        let profile = Profile(
            name: "Ada Lovelace", age: 36, score: 9.5, verified: true, bio: nil,
            address: Address(city: "London", zip: [1, 2]), quote: "say \"hi\"\n\u{E9}")
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let avatar = File(name: "me.png", key: "avatar", mimeType: .png, data: Data([0x89, 0x50]))

        _ = try connect.upload(
            files: [avatar], fields: [("extra", "1")],
            to: SortedUpload(parameters: Parameter.jsonObject(value: profile))
        ).wait()

        let sent = try XCTUnwrap(transport.requests.first)
        let contentType = try XCTUnwrap(sent.value(forHTTPHeaderField: "Content-Type"))
        XCTAssertTrue(contentType.hasPrefix("multipart/form-data; boundary="))
        let parts = try MultipartParser.parse(try XCTUnwrap(sent.httpBody), contentType: contentType)
        XCTAssertEqual(parts.map(\.name), ["address", "age", "name", "quote", "score", "verified", "extra", "avatar"])
        let text = parts.map { String(decoding: $0.data, as: UTF8.self) }
        XCTAssertEqual(text[0], #"{"city":"London","zip":[1,2]}"#)
        XCTAssertEqual(text[1], "36")
        XCTAssertEqual(text[2], "Ada Lovelace")
        XCTAssertEqual(text[3], "say \"hi\"\n\u{E9}")
        XCTAssertEqual(text[4], "9.5")
        XCTAssertEqual(text[5], "true")
        XCTAssertEqual(text[6], "1")
        XCTAssertNil(parts[0].filename)
        XCTAssertEqual(parts[7].filename, "me.png")
    }

    /// A `JSONObject` route declared a URL-encoded form (as Remotli's routes were) sends its fields beside the files.
    func testUploadSendsAFormRoutesFieldsAsTextFields() throws {
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(host: "api.test", transport: transport)
        let route = Route(
            "/upload", method: .post, parameters: ["album": "Summer & sea", "n": 2],
            headers: ["Content-Type": "application/x-www-form-urlencoded"])
        let photo = File(name: "a.png", key: "photo", mimeType: .png, data: Data([0x89, 0x50]))

        _ = try connect.upload(files: [photo], to: route).wait()

        let sent = try XCTUnwrap(transport.requests.first)
        let contentType = try XCTUnwrap(sent.value(forHTTPHeaderField: "Content-Type"))
        let parts = try MultipartParser.parse(try XCTUnwrap(sent.httpBody), contentType: contentType)
        XCTAssertEqual(parts.map(\.name), ["album", "n", "photo"])
        XCTAssertEqual(parts.prefix(2).map { String(decoding: $0.data, as: UTF8.self) }, ["Summer & sea", "2"])
    }

    /// A form route's `JSONObject` gives the fields that form would, as `upload`'s documentation says: an array a field
    /// per value, `null` none; a nested object is refused, nothing sent.
    func testAFormRoutesArraysAndNullsGiveTheFormsFieldsAndANestedObjectIsRefused() throws {
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(host: "api.test", transport: transport)
        let form = [HTTPHeader(name: "Content-Type", value: "application/x-www-form-urlencoded")]
        let photo = File(name: "a.png", key: "photo", mimeType: .png, data: Data([0x89, 0x50]))
        let listed = Route(
            "/upload", method: .post, parameters: ["tags": ["a", "b"], "note": nil] as JSONObject, headers: form)

        _ = try connect.upload(files: [photo], to: listed).wait()

        let sent = try XCTUnwrap(transport.requests.first)
        let contentType = try XCTUnwrap(sent.value(forHTTPHeaderField: "Content-Type"))
        let parts = try MultipartParser.parse(try XCTUnwrap(sent.httpBody), contentType: contentType)
        XCTAssertEqual(parts.map(\.name), ["tags", "tags", "photo"])
        XCTAssertEqual(parts.prefix(2).map { String(decoding: $0.data, as: UTF8.self) }, ["a", "b"])

        let nested = Route("/upload", method: .post, parameters: ["meta": ["k": 1]] as JSONObject, headers: form)
        XCTAssertThrowsError(try connect.upload(files: [photo], to: nested).wait()) { error in
            guard case .invalidParameter(let key, _)? = (error as? ConnectError)?.invalidRequestReason else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(key, "meta")
        }
        XCTAssertEqual(transport.requests.count, 1, "nothing sent")
    }

    /// A `JSONObject` on a DELETE goes in the query, as it does for any DELETE: the upload sends the files with that
    /// query. It failed with "its top level must be a JSON object", reading the body the object was never put in.
    func testADELETEUploadSendsAJSONObjectInTheQueryAsADELETEDoes() throws {
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(host: "api.test", transport: transport)
        let route = Route("/photos", method: .delete, parameters: ["album": "Summer & sea", "n": 2])
        let photo = File(name: "a.png", key: "photo", mimeType: .png, data: Data([0x89, 0x50]))

        _ = try connect.upload(files: [photo], to: route).wait()

        let sent = try XCTUnwrap(transport.requests.first)
        XCTAssertEqual(sent.httpMethod, "DELETE")
        XCTAssertEqual(sent.url?.absoluteString, "https://api.test/photos?album=Summer%20%26%20sea&n=2")
        let contentType = try XCTUnwrap(sent.value(forHTTPHeaderField: "Content-Type"))
        let parts = try MultipartParser.parse(try XCTUnwrap(sent.httpBody), contentType: contentType)
        XCTAssertEqual(parts.map(\.name), ["photo"])
    }

    /// Also under a form's content type, which places a `JSONObject` as fields but not a `Parameter.jsonObject`: that
    /// body (`[1,2]`, `"a=1&b=2"`) was read as a form and sent as made-up fields.
    func testUploadWithAJSONBodyThatIsNotAnObjectIsRefused() {
        for (value, headers) in [
            ([1, 2] as any Encodable & Sendable, [HTTPHeader]()),
            ([1, 2], [.contentType("application/x-www-form-urlencoded")]),
            ("a=1&b=2", [.contentType("application/x-www-form-urlencoded")]),
        ] {
            let transport = FakeTransport.answering(.status(200))
            let connect = Connect(transport: transport)
            var upload = Upload(parameters: Parameter.jsonObject(value: value))
            upload.headers = headers
            XCTAssertThrowsError(try connect.upload(files: [], to: upload).wait()) { error in
                guard case .bodyEncodingFailed(let reason)? = (error as? ConnectError)?.invalidRequestReason else {
                    return XCTFail("\(error)")
                }
                XCTAssertTrue(reason.contains("JSON object"), reason)
            }
            XCTAssertTrue(transport.requests.isEmpty, "\(value)")
        }
    }

    /// A multipart body on a GET or HEAD is refused as a connector's own body is (`bodyNotAllowed`), nothing sent:
    /// URLSession sends a HEAD without its body (the upload lost, the call a success), and fails a GET's as "resource
    /// exceeds maximum size". Parameters a GET places in its query, not in a body, do not change that.
    func testUploadOnAGETOrHEADIsRefusedNotSentWithoutItsBody() {
        let file = File(name: "a.txt", key: "doc", mimeType: .plainText, data: Data("hi".utf8))
        for method in [HTTPMethod.get, .head] {
            for parameters: JSONObject? in [nil, ["q": "x"]] {
                let transport = FakeTransport.answering(.status(200))
                let connect = Connect(transport: transport, retryPolicy: nil)
                let route = Route(
                    "/upload", baseURL: URL(string: "https://api.example.com")!, method: method,
                    parameters: parameters)
                let context = "\(method.rawValue), parameters \(parameters.map { "\($0.keys)" } ?? "none")"

                XCTAssertThrowsError(try connect.upload(files: [file], to: route).wait(), context) { error in
                    XCTAssertEqual(
                        (error as? ConnectError)?.invalidRequestReason, .bodyNotAllowed(method: method.rawValue),
                        "\(context): \(error)")
                }
                XCTAssertTrue(transport.requests.isEmpty, context)
            }
        }
    }

    /// A `Content-Length` of the caller's on an upload's connector is held to the multipart body as built: one
    /// that disagrees was refused saying "the body has 0 bytes" (the connector's own, not the one sent), and `0`
    /// was replaced by the real length without a word. Both are refused saying the body's real length; one
    /// that agrees is sent.
    func testUploadHoldsACallersContentLengthToTheMultipartBody() throws {
        let file = File(name: "a.txt", key: "doc", mimeType: .plainText, data: Data("hi".utf8))
        /// The length of the body an upload to a connector with `parameters` and no `Content-Length` sends.
        func sentLength(_ parameters: Parameter?) throws -> Int {
            let plain = FakeTransport.answering(.status(200))
            _ = try Connect(transport: plain, retryPolicy: nil)
                .upload(files: [file], fields: [], to: Upload(parameters: parameters), boundary: "b0undary").wait()
            return try XCTUnwrap(plain.requests.first?.httpBody?.count)
        }
        let length = try sentLength(nil)
        // `8` is the length of the connector's own form body, `user=ada`, which is not the body sent.
        let form = Parameter.form(key: "user", value: "ada")
        let cases: [(String, Parameter?)] = [("5", nil), ("0", nil), ("8", form)]
        for (declared, parameters) in cases {
            // Given
            let real = try sentLength(parameters)
            let transport = FakeTransport.answering(.status(200))
            let route = Upload(parameters: parameters, headers: [HTTPHeader(name: "Content-Length", value: declared)])

            // When
            let future = Connect(transport: transport, retryPolicy: nil)
                .upload(files: [file], fields: [], to: route, boundary: "b0undary")

            // Then
            XCTAssertThrowsError(try future.wait(), declared) { error in
                let error = error as? ConnectError
                XCTAssertEqual(error?.invalidRequestReason, .invalidHeader(name: "Content-Length"), declared)
                let message = error?.message ?? ""
                XCTAssertTrue(message.contains("the body has \(real) bytes"), "\(declared): \(message)")
            }
            XCTAssertTrue(transport.requests.isEmpty, declared)
        }

        // A length set in the call's options is held to the body too.
        let optioned = FakeTransport.answering(.status(200))
        let wrong = RequestOptions(headers: [HTTPHeader(name: "Content-Length", value: "5")])
        XCTAssertThrowsError(
            try Connect(transport: optioned, retryPolicy: nil)
                .upload(files: [file], fields: [], to: Upload(), boundary: "b0undary", options: wrong).wait()
        ) { error in
            let message = (error as? ConnectError)?.message ?? ""
            XCTAssertTrue(message.contains("the body has \(length) bytes"), message)
        }
        XCTAssertTrue(optioned.requests.isEmpty)

        let transport = FakeTransport.answering(.status(200))
        let agreeing = Upload(headers: [HTTPHeader(name: "Content-Length", value: String(length))])
        _ = try Connect(transport: transport, retryPolicy: nil)
            .upload(files: [file], fields: [], to: agreeing, boundary: "b0undary").wait()
        XCTAssertEqual(transport.requests.first?.value(forHTTPHeaderField: "Content-Length"), String(length))
    }

    func testUploadWithARawBodyIsRefused() {
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(transport: transport)
        let raw = Parameter.body(Data("x".utf8), contentType: "text/plain")
        let future = connect.upload(files: [], to: Upload(parameters: raw))
        XCTAssertThrowsError(try future.wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.invalidRequestReason, .multipleBodies)
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }

    func testUploadOfAMissingFileFailsBeforeAnyIO() {
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(transport: transport)
        let missing = File(key: "f", fileURL: URL(fileURLWithPath: "/nonexistent/\(UUID().uuidString).bin"))
        XCTAssertThrowsError(try connect.upload(files: [missing], to: Upload()).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .fileAccess)
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }

    /// Uploading a directory trapped inside Foundation's `FileHandle` while the body was written.
    func testUploadOfADirectoryFailsBeforeAnyIO() throws {
        let directory = temporaryURL()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(transport: transport, retryPolicy: nil)
        XCTAssertThrowsError(try connect.upload(files: [File(key: "f", fileURL: directory)], to: Upload()).wait()) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess)
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }

    /// Coalescing two downloads of the same URL to different files gave both callers the first file.
    func testCoalescedDownloadsToDifferentFilesEachWriteTheirOwn() throws {
        let gate = Promise<Void>()
        let transport = FakeTransport()
        transport.stub("/file", with: FakeResponse.data(Data("payload".utf8)).released(by: gate.future))
        let connect = Connect(
            transport: transport, retryPolicy: nil, settings: Connect.Settings(coalescesIdenticalRequests: true))
        let first = temporaryURL()
        let second = temporaryURL()
        defer {
            try? FileManager.default.removeItem(at: first)
            try? FileManager.default.removeItem(at: second)
        }
        let one = connect.download(Download(), to: first)
        let two = connect.download(Download(), to: second)
        gate.succeed(())
        XCTAssertEqual(try one.wait(timeout: 10), first)
        XCTAssertEqual(try two.wait(timeout: 10), second)
        XCTAssertEqual(try Data(contentsOf: second), Data("payload".utf8))
    }

    /// The transport itself refuses a body file that is a directory, before it makes a task.
    func testTransportRefusesADirectoryAsTheBodyFile() throws {
        let directory = temporaryURL()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var request = URLRequest(url: try XCTUnwrap(URL(string: "http://127.0.0.1:9/upload")))
        request.httpMethod = "POST"
        let sent = URLSessionTransport().send(request, transfer: TransferOptions(bodyFile: directory))
        XCTAssertThrowsError(try sent.wait(timeout: 10)) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .fileAccess)
            XCTAssertEqual((error as? ConnectError)?.request?.url, request.url)
        }
    }

    /// A remote URL was read as a local path and the local file uploaded.
    func testUploadOfANonFileURLFailsBeforeAnyIO() throws {
        let local = temporaryURL()
        try Data("local".utf8).write(to: local)
        defer { try? FileManager.default.removeItem(at: local) }
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let remote = File(key: "f", fileURL: try XCTUnwrap(URL(string: "https://cdn.example.invalid" + local.path)))
        XCTAssertThrowsError(try connect.upload(files: [remote], to: Upload()).wait()) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess)
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }

    func testUploadWithAnInvalidBoundaryIsRefused() {
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let file = File(name: "a.txt", key: "f", mimeType: .plainText, data: Data("x".utf8))
        for boundary in ["B\r\nX-Injected: 1", "", String(repeating: "b", count: 71)] {
            let future = connect.upload(files: [file], fields: [], to: Upload(), boundary: boundary)
            XCTAssertThrowsError(try future.wait(), boundary.debugDescription) {
                XCTAssertEqual(($0 as? ConnectError)?.invalidRequestReason, .invalidHeader(name: "Content-Type"))
            }
        }
        XCTAssertTrue(transport.requests.isEmpty, "nothing is sent")
    }

    func testDownloadWritesTheBodyToTheDestination() throws {
        let bytes = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0) })
        let connect = Connect(transport: FakeTransport.answering(.data(bytes)), retryPolicy: nil)
        let destination = temporaryURL()
        defer { try? FileManager.default.removeItem(at: destination) }
        let written = try connect.download(Download(), to: destination).wait()
        XCTAssertEqual(written, destination)
        XCTAssertEqual(try Data(contentsOf: destination), bytes)
    }

    /// A download through a transport that ignores transfer options, whose folder stops being one while the request
    /// is out, fails with ``ConnectError/Kind/fileAccess`` naming the destination and carrying the answer's status:
    /// the server answered, and the caller learns how.
    func testADownloadThroughAnInMemoryTransportThatCannotBeWrittenCarriesTheAnswersStatus() throws {
        // Given a folder that becomes a regular file once the request is out
        let folder = temporaryURL()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("report.bin")
        let gate = Promise<Void>()
        let transport = FakeTransport.answering(FakeResponse.data(Data(count: 1000)).released(by: gate.future))
        let download = Connect(transport: transport, retryPolicy: nil).download(Download(), to: destination)
        try FileManager.default.removeItem(at: folder)
        XCTAssertTrue(FileManager.default.createFile(atPath: folder.path, contents: Data("not a folder".utf8)))

        // When the answer comes
        gate.succeed(())

        // Then
        XCTAssertThrowsError(try download.wait(timeout: 10)) {
            guard let error = $0 as? ConnectError else { return XCTFail("\($0)") }
            XCTAssertEqual(error.kind, .fileAccess, "\(error)")
            XCTAssertTrue(error.message.contains(destination.path), error.message)
            XCTAssertEqual(error.statusCode, 200)
        }
        XCTAssertEqual(try Data(contentsOf: folder), Data("not a folder".utf8))
    }

    /// A transport that ignores transfer options has its body written by the core: over a private file, the file
    /// stays private (`Data.write(options: .atomic)` made it 0644, readable by every local user).
    func testADownloadThroughATransportThatIgnoresTransfersKeepsAPrivateFilePrivate() throws {
        let connect = Connect(transport: FakeTransport.answering(.data(Data("new".utf8))), retryPolicy: nil)
        let destination = temporaryURL()
        defer { try? FileManager.default.removeItem(at: destination) }
        try Data("old".utf8).write(to: destination)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: destination.path)
        XCTAssertEqual(try connect.download(Download(), to: destination).wait(), destination)
        XCTAssertEqual(try Data(contentsOf: destination), Data("new".utf8))
        let mode = try FileManager.default.attributesOfItem(atPath: destination.path)[.posixPermissions] as? NSNumber
        XCTAssertEqual(mode?.intValue, 0o600)
    }

    /// A new folder holding `precious.txt` ("user data"), which a download must not destroy.
    private func makeFolderHoldingAFile() throws -> (folder: URL, precious: URL) {
        let folder = temporaryURL()
        let precious = folder.appendingPathComponent("precious.txt")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data("user data".utf8).write(to: precious)
        return (folder, precious)
    }

    /// A download onto an existing directory deleted it, with everything in it.
    func testDownloadOntoADirectoryIsRefusedAndKeepsIt() throws {
        let (folder, precious) = try makeFolderHoldingAFile()
        defer { try? FileManager.default.removeItem(at: folder) }
        let transport = FakeTransport.answering(.data(Data("payload".utf8)))
        let connect = Connect(transport: transport, retryPolicy: nil)
        XCTAssertThrowsError(try connect.download(Download(), to: folder).wait()) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess)
        }
        XCTAssertTrue(transport.requests.isEmpty, "refused before anything is sent")
        XCTAssertEqual(try Data(contentsOf: precious), Data("user data".utf8))
    }

    /// The in-memory way of honouring transfer options refuses a directory too, whoever calls it.
    func testInMemoryTransferRefusesADirectoryDestination() throws {
        let (folder, precious) = try makeFolderHoldingAFile()
        defer { try? FileManager.default.removeItem(at: folder) }
        let transport = FakeTransport.answering(.data(Data("payload".utf8)))
        let request = URLRequest(url: URL(string: "https://api.example.com/file")!)
        XCTAssertThrowsError(try transport.send(request, transfer: TransferOptions(destination: folder)).wait()) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess)
        }
        XCTAssertTrue(transport.requests.isEmpty, "refused before anything is sent")
        XCTAssertEqual(try Data(contentsOf: precious), Data("user data".utf8))
    }

    /// A negative limit handed to a transport directly (no `Connect` to check it first) is a mistake in the call, as
    /// it is through the client and every engine's exchange: the in-memory way sent the request and then failed even
    /// an empty body with `responseTooLarge(limit: -1)`.
    func testInMemoryTransferRefusesANegativeLimitUnsent() throws {
        let transport = FakeTransport.answering(.status(204))
        let request = URLRequest(url: try XCTUnwrap(URL(string: "https://api.example.com/empty")))
        let transfer = TransferOptions(maxResponseBytes: -1)
        XCTAssertThrowsError(try transport.send(request, transfer: transfer).wait(timeout: 5)) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .invalidRequest, "\(error)")
        }
        XCTAssertTrue(transport.requests.isEmpty, "refused before anything is sent")
    }

    /// A destination in a folder that does not exist was reported as a permission problem.
    func testDownloadIntoAMissingFolderSaysSo() {
        let transport = FakeTransport.answering(.data(Data("payload".utf8)))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let destination = temporaryURL().appendingPathComponent("x.bin")
        XCTAssertThrowsError(try connect.download(Download(), to: destination).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .fileAccess)
            XCTAssertTrue((error as? ConnectError)?.message.contains("does not exist") ?? false, "\(error)")
        }
        XCTAssertTrue(transport.requests.isEmpty, "refused before anything is sent")
    }

    /// A URL with another scheme is not a place on disk: its path is not written to.
    func testDownloadToANonFileURLIsRefused() throws {
        let local = temporaryURL()
        let transport = FakeTransport.answering(.data(Data("payload".utf8)))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let remote = try XCTUnwrap(URL(string: "https://cdn.example.invalid" + local.path))
        XCTAssertThrowsError(try connect.download(Download(), to: remote).wait()) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess)
        }
        XCTAssertTrue(transport.requests.isEmpty, "refused before anything is sent")
        XCTAssertFalse(FileManager.default.fileExists(atPath: local.path))
    }

    func testDownloadOfAnErrorStatusLeavesNoFile() {
        let connect = Connect(
            transport: FakeTransport.answering(.json(string: #"{"message":"gone"}"#, status: 410)), retryPolicy: nil)
        let destination = temporaryURL()
        XCTAssertThrowsError(try connect.download(Download(), to: destination).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.message, "gone")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path))
    }

    /// An error handler that lets an error status through (as the usage guide's does for a body without a
    /// `code`): a download of a 404 replaced the file at the destination with the server's error page.
    func testDownloadOfAnErrorStatusLetThroughByTheErrorHandlerKeepsTheExistingFile() throws {
        struct LenientErrors: ErrorHandling {
            func handle(response: [String: Any]) -> (any Error)? {
                guard let code = response["code"] as? Int else { return nil }
                return TestError(code)
            }
        }
        let connect = Connect(
            transport: FakeTransport.answering(.json(string: #"{"message":"no such report"}"#, status: 404)),
            errorHandler: LenientErrors(),
            retryPolicy: nil
        )
        let destination = temporaryURL()
        defer { try? FileManager.default.removeItem(at: destination) }
        try Data("user data".utf8).write(to: destination)
        XCTAssertThrowsError(try connect.download(Download(), to: destination).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .httpStatus)
            XCTAssertEqual((error as? ConnectError)?.statusCode, 404)
        }
        XCTAssertEqual(try Data(contentsOf: destination), Data("user data".utf8), "the file is kept")
    }

    /// Through a transport that answers in memory, a download's error page over 1 MiB failed with `responseTooLarge`,
    /// never seen by the error handler: it is the status error, with the page's first MiB and the cut said.
    func testADownloadsLargeErrorPageThroughAnInMemoryTransportIsCutToItsFirstMiB() throws {
        let page = Data(repeating: UInt8(ascii: "x"), count: 3 << 20)
        let connect = Connect(
            transport: FakeTransport.answering(.data(page, status: 500, headers: ["Content-Type": "text/html"])),
            retryPolicy: nil)
        let destination = temporaryURL()
        defer { try? FileManager.default.removeItem(at: destination) }
        try Data("user data".utf8).write(to: destination)
        XCTAssertThrowsError(try connect.download(Download(), to: destination).wait()) {
            guard let error = $0 as? ConnectError else { return XCTFail("\($0)") }
            XCTAssertEqual(error.kind, .httpStatus, "\(error)")
            XCTAssertEqual(error.body, page.prefix(1 << 20))
            XCTAssertTrue(error.description.contains("only the first 1048576 bytes of its body were read"), "\(error)")
        }
        XCTAssertEqual(try Data(contentsOf: destination), Data("user data".utf8), "the file is kept")
    }

    func testClientAndRequestSizeLimits() {
        let big = FakeTransport.answering(.data(Data(count: 2_000)))
        let limited = Connect(transport: big, retryPolicy: nil, settings: Connect.Settings(maxResponseBytes: 1_000))
        XCTAssertThrowsError(try limited.request(Download()).wait()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .responseTooLarge)
        }
        XCTAssertNoThrow(
            try limited.request(Download(), options: RequestOptions(maxResponseBytes: 5_000)).wait(),
            "a request's own limit overrides the client's"
        )
        let unlimited = Connect(transport: big, retryPolicy: nil)
        XCTAssertThrowsError(try unlimited.request(Download(), options: RequestOptions(maxResponseBytes: 10)).wait())
    }

    /// Through a transport that works in memory, the one progress report of a download comes once its file is in
    /// place: it came before the file was written, and a caller that opened the file on 1.0 found the old one.
    func testADownloadsProgressThroughAnInMemoryTransportComesOnceTheFileIsInPlace() throws {
        let body = Data("new contents".utf8)
        let connect = Connect(transport: FakeTransport.answering(.data(body)), retryPolicy: nil)
        let destination = temporaryURL()
        defer { try? FileManager.default.removeItem(at: destination) }
        try Data("old contents".utf8).write(to: destination)
        let seen = Recorder<Data?>()

        _ = try connect.download(
            Download(), to: destination,
            options: RequestOptions(progress: { _ in seen.append(try? Data(contentsOf: destination)) })
        ).wait()

        XCTAssertEqual(seen.values, [body])
    }

    func testProgressEndsAtCompletion() throws {
        let reports = Recorder<TransferProgress>()
        let connect = Connect(transport: FakeTransport.answering(.data(Data(count: 500))), retryPolicy: nil)
        _ = try connect.request(Download(), options: RequestOptions(progress: { reports.append($0) })).wait()
        XCTAssertEqual(reports.values.last?.bytesReceived, 500)
        XCTAssertEqual(reports.values.last?.downloadFraction, 1)
    }
}

/// The temporary multipart body of `upload(files:to:)`: who can read it, and that its `Content-Length` is the
/// size of what was written.
final class UploadBodyFileTests: XCTestCase {
    /// Answers 200 after noting the permissions of the body file as the transport sees it.
    private final class PermissionsRecordingTransport: Transport {
        let seen = Protected<[Int]>([])
        let bodyFiles = Protected<[URL]>([])

        func send(_ request: URLRequest) -> Future<ConnectResponse> {
            Future(value: ConnectResponse(request: request, statusCode: 200, data: Data())!)
        }

        func send(_ request: URLRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
            if let file = transfer.bodyFile {
                let attributes = try? FileManager.default.attributesOfItem(atPath: file.path)
                let permissions = (attributes?[.posixPermissions] as? NSNumber)?.intValue ?? -1
                seen.withLock { $0.append(permissions) }
                bodyFiles.withLock { $0.append(file) }
            }
            return send(request)
        }
    }

    func testTheTemporaryBodyFileIsReadableByItsOwnerOnly() throws {
        let source = FileManager.default.temporaryDirectory.appendingPathComponent("upload-\(UUID().uuidString).txt")
        try Data("private notes".utf8).write(to: source)
        defer { try? FileManager.default.removeItem(at: source) }
        let transport = PermissionsRecordingTransport()
        let connect = Connect(transport: transport, retryPolicy: nil)

        _ = try connect.upload(files: [File(key: "notes", fileURL: source)], to: Upload()).wait()

        XCTAssertEqual(transport.seen.snapshot, [0o600], "the body file must be readable by its owner only")
        let file = try XCTUnwrap(transport.bodyFiles.snapshot.first)
        XCTAssertFalse(FileManager.default.fileExists(atPath: file.path), "the body file is removed afterwards")
    }

    #if os(Linux)
        /// `/proc` files say they are empty yet have content: the size read before copying disagrees with
        /// what is copied, as with a file that grows in between. (A `/sys` file says 4096 bytes and has fewer,
        /// as with one that shrinks.)
        func testContentLengthIsTheSizeOfTheBodyActuallyWritten() throws {
            var sources = [URL(fileURLWithPath: "/proc/self/status")]
            let shrinking = "/sys/kernel/mm/transparent_hugepage/enabled"
            if FileManager.default.isReadableFile(atPath: shrinking) { sources.append(URL(fileURLWithPath: shrinking)) }
            for source in sources {
                let transport = FakeTransport.answering(.status(200))
                let connect = Connect(transport: transport, retryPolicy: nil)
                _ = try connect.upload(files: [File(key: "status", fileURL: source)], to: Upload()).wait()

                let sent = try XCTUnwrap(transport.requests.first)
                let body = try XCTUnwrap(sent.httpBody)
                XCTAssertEqual(sent.value(forHTTPHeaderField: "Content-Length"), String(body.count), source.path)
                let contentType = try XCTUnwrap(sent.value(forHTTPHeaderField: "Content-Type"))
                let parts = try MultipartParser.parse(body, contentType: contentType)
                XCTAssertEqual(parts.count, 1)
                XCTAssertFalse(parts.first?.data.isEmpty ?? true, source.path)
            }
        }
    #endif
}
