import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// RFC 7578 encoding: exact bytes, escaping, lengths, streaming to a file, MIME types.
final class MultipartFormDataTests: XCTestCase {
    func testEncodesFieldsAndFilesExactly() throws {
        var form = MultipartFormData(boundary: "B")
        form.append(field: "title", value: "Holiday")
        form.append(File(name: "a.txt", key: "doc", mimeType: .plainText, data: Data("hi".utf8)))
        let expected =
            "--B\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nHoliday\r\n"
            + "--B\r\nContent-Disposition: form-data; name=\"doc\"; filename=\"a.txt\"\r\n"
            + "Content-Type: text/plain; charset=utf-8\r\n\r\nhi\r\n--B--\r\n"
        XCTAssertEqual(String(decoding: try form.encodedData(), as: UTF8.self), expected)
        XCTAssertEqual(form.contentType, "multipart/form-data; boundary=B")
        XCTAssertEqual(try form.contentLength(), Int64(expected.utf8.count))
    }

    func testNamesAndFilenamesAreEscaped() throws {
        var form = MultipartFormData(boundary: "B")
        form.append(File(name: "evil\"\r\nX-Injected: 1\\.txt", key: "k\"ey", mimeType: .octetStream, data: Data()))
        form.append(File(name: "résumé 📄.pdf", key: "cv", mimeType: .pdf, data: Data()))
        let text = String(decoding: try form.encodedData(), as: UTF8.self)
        XCTAssertTrue(text.contains(#"name="k%22ey"; filename="evil%22%0D%0AX-Injected: 1%5C.txt""#), text)
        XCTAssertFalse(text.contains("\r\nX-Injected"), "CR/LF in a file name cannot start a header")
        XCTAssertTrue(text.contains(#"filename="résumé 📄.pdf""#), "non-ASCII is sent as UTF-8")
    }

    func testControlCharactersInNamesAreEscapedButTheTab() throws {
        var form = MultipartFormData(boundary: "B")
        form.append(field: "a\u{0}b\u{1F}c\u{7F}d\te", value: "v")
        form.append(File(name: "x\u{0}.exe\u{8}.txt", key: "f", mimeType: .octetStream, data: Data()))
        let text = String(decoding: try form.encodedData(), as: UTF8.self)
        XCTAssertTrue(text.contains("name=\"a%00b%1Fc%7Fd\te\""), text)
        XCTAssertTrue(text.contains(#"filename="x%00.exe%08.txt""#), text)
        XCTAssertFalse(text.unicodeScalars.contains { $0 == "\u{0}" || $0 == "\u{7F}" || $0 == "\u{8}" })
        // C1 too, byte by byte: NEL (U+0085) ends a line for some parsers. Other non-ASCII goes as it is.
        var c1 = MultipartFormData(boundary: "B")
        c1.append(File(name: "a\u{85}b\u{9F}é.txt", key: "f", mimeType: .octetStream, data: Data()))
        let c1Text = String(decoding: try c1.encodedData(), as: UTF8.self)
        XCTAssertTrue(c1Text.contains(#"filename="a%C2%85b%C2%9Fé.txt""#), c1Text)
    }

    func testARandomBoundaryIsUniquePerBody() {
        let boundaries = Set((0..<100).map { _ in MultipartFormData().boundary })
        XCTAssertEqual(boundaries.count, 100)
        XCTAssertTrue(boundaries.allSatisfy { $0.hasPrefix("SwiftConnect-") && $0.count == 45 })
    }

    func testAMimeTypeWithCRLFIsRefused() {
        var form = MultipartFormData(boundary: "B")
        form.append(File(name: "x", key: "k", mimeType: MimeType(rawValue: "text/plain\r\nX: y"), data: Data()))
        XCTAssertThrowsError(try form.encodedData()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .invalidRequest)
        }
    }

    /// A part's `Content-Type` must be a media type: an empty one, or one without a subtype, was sent as it was.
    func testAMimeTypeThatIsNoMediaTypeIsRefused() throws {
        for raw in ["", "not a type", "text", "text/", "/plain", "text/plain/x", "te xt/plain"] {
            var form = MultipartFormData(boundary: "B")
            form.append(File(name: "x", key: "k", mimeType: MimeType(rawValue: raw), data: Data()))
            XCTAssertThrowsError(try form.encodedData(), raw.debugDescription) {
                XCTAssertEqual(
                    ($0 as? ConnectError)?.invalidRequestReason, .invalidHeader(name: "Content-Type"),
                    raw.debugDescription)
            }
        }
        for raw in ["text/plain; charset=utf-8", "application/vnd.api+json", "image/svg+xml", "awesome/type"] {
            var form = MultipartFormData(boundary: "B")
            form.append(File(name: "x", key: "k", mimeType: MimeType(rawValue: raw), data: Data()))
            XCTAssertNoThrow(try form.encodedData(), raw)
        }
    }

    func testStreamingToAFileGivesTheSameBytesAsInMemory() throws {
        let source = FileManager.default.temporaryDirectory.appendingPathComponent("mp-src-\(UUID().uuidString).bin")
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("mp-out-\(UUID().uuidString).bin")
        defer {
            try? FileManager.default.removeItem(at: source)
            try? FileManager.default.removeItem(at: output)
        }
        let bytes = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try bytes.write(to: source)
        var form = MultipartFormData(boundary: "stream")
        form.append(field: "a", value: "1")
        form.append(File(key: "blob", fileURL: source))
        XCTAssertFalse(form.isInMemory)
        try form.write(to: output)
        let written = try Data(contentsOf: output)
        XCTAssertEqual(written, try form.encodedData())
        XCTAssertEqual(Int64(written.count), try form.contentLength())
        XCTAssertTrue(
            String(decoding: written.prefix(300), as: UTF8.self).contains("filename=\"\(source.lastPathComponent)\""))
    }

    func testAMissingFileIsATypedError() {
        var form = MultipartFormData(boundary: "B")
        form.append(File(key: "f", fileURL: URL(fileURLWithPath: "/nonexistent/\(UUID().uuidString)")))
        XCTAssertThrowsError(try form.contentLength()) { XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess) }
        XCTAssertThrowsError(try form.encodedData()) { XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess) }
    }

    /// A directory was read as a file: its entry's size as the length, and a trap in `write(to:)`.
    func testADirectoryPartIsAFileAccessErrorEverywhere() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mp-dir-\(UUID().uuidString)")
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("mp-out-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer {
            try? FileManager.default.removeItem(at: directory)
            try? FileManager.default.removeItem(at: output)
        }
        var form = MultipartFormData(boundary: "B")
        form.append(File(key: "f", fileURL: directory))
        XCTAssertThrowsError(try form.contentLength()) { XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess) }
        XCTAssertThrowsError(try form.encodedData()) { XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess) }
        XCTAssertThrowsError(try form.write(to: output)) { XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess) }
    }

    /// Written onto a pipe (or a device), the body's rename put a regular file in its place; written onto a directory,
    /// it is refused. Both are left as they are, as a download's destination is, and named.
    func testWritingOntoAPipeOrADirectoryIsRefusedAndKeepsIt() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mp-special-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let pipe = folder.appendingPathComponent("body.pipe")
        XCTAssertEqual(mkfifo(pipe.path, 0o600), 0)
        let directory = folder.appendingPathComponent("body.dir")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        var form = MultipartFormData(boundary: "B")
        form.append(field: "title", value: "Holiday")

        for (output, type) in [(pipe, S_IFIFO), (directory, S_IFDIR)] {
            XCTAssertThrowsError(try form.write(to: output)) {
                XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess, "\($0)")
                XCTAssertTrue(($0 as? ConnectError)?.message.contains(output.path) == true, "\($0)")
            }
            var status = stat()
            XCTAssertEqual(lstat(output.path, &status), 0)
            XCTAssertEqual(status.st_mode & S_IFMT, type, "\(output.lastPathComponent) is as it was")
        }
        XCTAssertEqual(
            Set(try FileManager.default.contentsOfDirectory(atPath: folder.path)), ["body.pipe", "body.dir"])
    }

    /// A URL with another scheme named a remote file, yet its path was read from the local disk.
    func testANonFileURLIsAFileAccessErrorEverywhere() throws {
        let local = FileManager.default.temporaryDirectory.appendingPathComponent("mp-src-\(UUID().uuidString).txt")
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("mp-out-\(UUID().uuidString)")
        try Data("local secret".utf8).write(to: local)
        defer {
            try? FileManager.default.removeItem(at: local)
            try? FileManager.default.removeItem(at: output)
        }
        let remote = try XCTUnwrap(URL(string: "https://cdn.example.invalid" + local.path))
        var form = MultipartFormData(boundary: "B")
        form.append(File(key: "f", fileURL: remote))
        XCTAssertThrowsError(try form.contentLength()) { XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess) }
        XCTAssertThrowsError(try form.encodedData()) { XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess) }
        XCTAssertThrowsError(try form.write(to: output)) { XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess) }
    }

    /// A form with no parts is the closing delimiter alone, as a browser sends an empty form (decision: not refused,
    /// see `MultipartFormData`); encoded, written and measured alike.
    func testAFormWithNoPartsIsTheClosingDelimiterAlone() throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("mp-empty-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        let form = MultipartFormData(boundary: "B")
        XCTAssertEqual(String(decoding: try form.encodedData(), as: UTF8.self), "--B--\r\n")
        try form.write(to: output)
        XCTAssertEqual(try Data(contentsOf: output), try form.encodedData())
        XCTAssertEqual(try form.contentLength(), 7)
    }

    /// A symbolic link to a file counts the file's size, not the link's.
    func testASymbolicLinkToAFileIsFollowed() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mp-link-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("target.bin")
        try Data(count: 10_000).write(to: target)
        let link = directory.appendingPathComponent("link.bin")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "target.bin")
        var form = MultipartFormData(boundary: "B")
        form.append(File(key: "f", fileURL: link))
        let output = directory.appendingPathComponent("out")
        try form.write(to: output)
        let written = try Data(contentsOf: output)
        XCTAssertEqual(try form.contentLength(), Int64(written.count))
        XCTAssertEqual(try form.encodedData(), written)
    }

    func testAnInvalidBoundaryIsRefusedEverywhere() throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("mp-out-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        let invalid = [
            "", "B\r\nX-Injected: 1", "B\n", "B\r", String(repeating: "a", count: 71), "ends in a space ", "quote\"",
            "semi;colon", "tab\t", "é", "nul\u{0}",
        ]
        for boundary in invalid {
            var form = MultipartFormData(boundary: boundary)
            form.append(field: "a", value: "1")
            let expected = ConnectError.InvalidRequestReason.invalidHeader(name: "Content-Type")
            let label = boundary.debugDescription
            XCTAssertThrowsError(try form.contentLength(), label) {
                XCTAssertEqual(($0 as? ConnectError)?.invalidRequestReason, expected, label)
                XCTAssertTrue(($0 as? ConnectError)?.message.contains("multipart boundary") ?? false, "\($0)")
            }
            XCTAssertThrowsError(try form.encodedData(), label) {
                XCTAssertEqual(($0 as? ConnectError)?.invalidRequestReason, expected, label)
            }
            XCTAssertThrowsError(try form.write(to: output), label) {
                XCTAssertEqual(($0 as? ConnectError)?.invalidRequestReason, expected, label)
            }
        }
    }

    /// A field or a file part with an empty name went out as `name=""`, which names nothing (a server's form parser
    /// drops it or keys it under ""), as `.query(key: "")` would have gone out as `?=v`: refused the same way,
    /// naming the part, by every way of encoding the form. A file's empty file name stays: it is what a browser
    /// sends for a file input left empty.
    func testAPartWithAnEmptyNameIsRefusedEverywhere() throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("mp-out-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        var field = MultipartFormData(boundary: "B")
        field.append(field: "title", value: "Holiday")
        field.append(field: "", value: "1")
        var file = MultipartFormData(boundary: "B")
        file.append(File(name: "a.txt", key: "", mimeType: .plainText, data: Data("hi".utf8)))
        for (form, part) in [(field, "part 2 (a field)"), (file, "part 1 (a file)")] {
            let encodings: [() throws -> Void] = [
                { _ = try form.contentLength() }, { _ = try form.encodedData() }, { try form.write(to: output) },
            ]
            for encoding in encodings {
                XCTAssertThrowsError(try encoding(), part) { error in
                    guard case .invalidParameter(let key, let reason)? = (error as? ConnectError)?.invalidRequestReason
                    else { return XCTFail("\(part): \(error)") }
                    XCTAssertEqual(key, "", part)
                    XCTAssertTrue(reason.contains("empty name") && reason.contains(part), reason)
                }
            }
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: output.path))
        var unnamedFile = MultipartFormData(boundary: "B")
        unnamedFile.append(File(name: "", key: "doc", mimeType: .octetStream, data: Data()))
        let text = String(decoding: try unnamedFile.encodedData(), as: UTF8.self)
        XCTAssertTrue(text.contains(#"name="doc"; filename="""#), text)
    }

    /// Through `upload(files:fields:)`: refused before anything is sent, for a field, a connector's `.form` field
    /// (refused by the connector's own rule) and a file.
    func testAnUploadWithAnEmptyPartNameIsRefusedAndNothingIsSent() throws {
        let transport = FakeTransport.answering(.json(string: "{}"))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let endpoint = ClientFixtures.Endpoint(endpoint: "/upload", method: .post)
        let photo = File(name: "a.jpg", key: "photo", mimeType: .jpg, data: Data([1, 2, 3]))
        let unnamed = File(name: "a.jpg", key: "", mimeType: .jpg, data: Data([1, 2, 3]))
        let calls = [
            connect.upload(files: [photo], fields: [("", "Holiday")], to: endpoint),
            connect.upload(files: [unnamed], fields: [("title", "Holiday")], to: endpoint),
        ]
        for call in calls {
            XCTAssertThrowsError(try call.wait(timeout: 5)) { error in
                guard case .invalidParameter(let key, _)? = (error as? ConnectError)?.invalidRequestReason else {
                    return XCTFail("\(error)")
                }
                XCTAssertEqual(key, "")
            }
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }

    func testEveryRFC2046BoundaryCharacterIsAcceptedAndQuotedWhenNeeded() throws {
        for boundary in ["a'()+_,-./:=? z", String(repeating: "9", count: 70), "plain-Boundary_1.2+x'"] {
            var form = MultipartFormData(boundary: boundary)
            form.append(field: "a", value: "1")
            let body = try form.encodedData()
            XCTAssertEqual(try form.contentLength(), Int64(body.count))
            let parts = try MultipartParser.parse(body, contentType: form.contentType)
            XCTAssertEqual(parts.map(\.name), ["a"], boundary)
        }
        XCTAssertEqual(
            MultipartFormData(boundary: "a b").contentType, "multipart/form-data; boundary=\"a b\"",
            "a boundary with a space or a tspecial is quoted")
        XCTAssertEqual(MultipartFormData(boundary: "a-b_c").contentType, "multipart/form-data; boundary=a-b_c")
    }

    /// A boundary of the caller's that a part contains after a line break (RFC 2046: it must occur in none) would end
    /// that part early and lose the parts after it: refused, in memory, in a file and across a file's 1 MiB pieces.
    func testABoundaryThatAPartContainsIsRefusedEverywhere() throws {
        let folder = try temporaryFolder()
        let output = folder.appendingPathComponent("out.bin")
        // The delimiter split across the file's first two 1 MiB pieces.
        let split = folder.appendingPathComponent("split.bin")
        var bytes = Data(repeating: 0x61, count: (1 << 20) - 3)
        bytes.append(Data("\r\n--B--\r\n".utf8))
        try bytes.write(to: split)
        let contents: [(String, (inout MultipartFormData) -> Void)] = [
            ("a field", { $0.append(field: "note", value: "x\r\n--B--\r\n") }),
            ("a field that starts with it", { $0.append(field: "note", value: "--B\r\nContent-Disposition: x") }),
            ("data", { $0.append(File(name: "a", key: "doc", mimeType: .plainText, data: Data("x\r\n--B".utf8))) }),
            ("a file, across pieces", { $0.append(File(key: "doc", fileURL: split)) }),
        ]
        assertEachIsRefused(contents, writingTo: output)
        // Near misses are content like any other: without the line break, or another boundary's prefix.
        var form = MultipartFormData(boundary: "B")
        form.append(field: "a", value: "x--B\r\n--C")
        let parts = try MultipartParser.parse(try form.encodedData(), contentType: form.contentType)
        XCTAssertEqual(parts.map(\.name), ["a"])
    }

    /// Asserts that a form of boundary `B` holding each of `contents`, then a part after it, fails to encode with
    /// ``ConnectError/InvalidRequestReason/bodyEncodingFailed(_:)`` naming part 1, in memory and to `output`.
    private func assertEachIsRefused(
        _ contents: [(String, (inout MultipartFormData) -> Void)], writingTo output: URL,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        for (label, add) in contents {
            var form = MultipartFormData(boundary: "B")
            add(&form)
            form.append(File(name: "kept.txt", key: "later", mimeType: .plainText, data: Data("hi".utf8)))
            for (way, encode) in [
                ("in memory", { _ = try form.encodedData() }), ("to a file", { try form.write(to: output) }),
            ] {
                XCTAssertThrowsError(try encode(), "\(label), \(way)", file: file, line: line) { error in
                    guard case .bodyEncodingFailed(let why)? = (error as? ConnectError)?.invalidRequestReason else {
                        return XCTFail("\(label), \(way): \(error)", file: file, line: line)
                    }
                    XCTAssertTrue(why.contains("part 1"), why, file: file, line: line)
                }
            }
        }
    }

    /// Lenient parsers take a lone LF or CR before `--boundary` for a line break too (Werkzeug, behind Flask, matches
    /// `(\r\n|\n|\r)--boundary`): a part holding `x\n--B` was encoded without error and such a server ended it there,
    /// losing the parts after it. It is refused as the CR LF form is, in memory, to a file and across a file's pieces.
    func testABoundaryAfterALoneLineFeedOrCarriageReturnIsRefused() throws {
        let folder = try temporaryFolder()
        let output = folder.appendingPathComponent("out.bin")
        let split = folder.appendingPathComponent("split.bin")
        var bytes = Data(repeating: 0x61, count: (1 << 20) - 2)
        bytes.append(Data("\n--B\r\n".utf8))
        try bytes.write(to: split)
        let contents: [(String, (inout MultipartFormData) -> Void)] = [
            ("a field, LF", { $0.append(field: "note", value: "x\n--B\r\nContent-Disposition: x") }),
            ("a field, CR", { $0.append(field: "note", value: "x\r--B\r\n") }),
            ("data, LF", { $0.append(File(name: "a", key: "doc", mimeType: .plainText, data: Data("x\n--B".utf8))) }),
            ("a file, LF across pieces", { $0.append(File(key: "doc", fileURL: split)) }),
        ]
        assertEachIsRefused(contents, writingTo: output)
        // A line break inside the content that no `--B` follows is content like any other.
        var form = MultipartFormData(boundary: "B")
        form.append(field: "a", value: "x\n-B\r--C\n\r-x--B")
        let parts = try MultipartParser.parse(try form.encodedData(), contentType: form.contentType)
        XCTAssertEqual(parts.map(\.name), ["a"])
    }

    /// `write(to:)` replaces its destination only once the body is whole: a failure leaves the old file, and a part
    /// streamed from the destination itself reads its old content (it grew for ever before, having emptied it).
    func testWritingToAFileReplacesItOnlyOnceTheBodyIsWhole() throws {
        let folder = try temporaryFolder()
        let destination = folder.appendingPathComponent("form.bin")
        try Data("precious".utf8).write(to: destination)

        var failing = MultipartFormData(boundary: "B")
        failing.append(File(key: "f", fileURL: folder.appendingPathComponent("missing.bin")))
        XCTAssertThrowsError(try failing.write(to: destination)) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .fileAccess)
        }
        XCTAssertEqual(try Data(contentsOf: destination), Data("precious".utf8))

        var itself = MultipartFormData(boundary: "B")
        itself.append(File(key: "f", fileURL: destination))
        let expected = try itself.encodedData()
        try itself.write(to: destination)
        XCTAssertEqual(try Data(contentsOf: destination), expected)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["form.bin"], "no file left")
    }

    /// A file `write(to:)` replaces keeps its permissions (it became 0644 before: readable by every local user), and a
    /// destination whose name is near the 255-byte limit still gets its body (the partial file's name, built from it,
    /// went over the limit).
    func testWritingToAFileKeepsItsPermissionsAndFitsLongNames() throws {
        let folder = try temporaryFolder()
        var form = MultipartFormData(boundary: "B")
        form.append(field: "a", value: "b")
        let expected = try form.encodedData()

        let destination = folder.appendingPathComponent("private.bin")
        try Data("secret".utf8).write(to: destination)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: destination.path)
        try form.write(to: destination)
        XCTAssertEqual(try Data(contentsOf: destination), expected)
        let mode = try FileManager.default.attributesOfItem(atPath: destination.path)[.posixPermissions] as? NSNumber
        XCTAssertEqual(mode?.intValue, 0o600)

        let long = folder.appendingPathComponent(String(repeating: "é", count: 120) + ".bin")  // 244 bytes
        try form.write(to: long)
        XCTAssertEqual(try Data(contentsOf: long), expected)
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted(),
            [long.lastPathComponent, "private.bin"].sorted(), "no file left")
    }

    private func temporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: folder) }
        return folder
    }

    func testMimeTypesAreInferredFromExtensions() {
        XCTAssertEqual(MimeType(fileExtension: "JPG"), .jpg)
        XCTAssertEqual(MimeType(fileExtension: ".png"), .png)
        XCTAssertEqual(MimeType.inferred(from: URL(fileURLWithPath: "/tmp/movie.mp4")), .mp4)
        XCTAssertEqual(MimeType.inferred(from: URL(fileURLWithPath: "/tmp/doc.pdf")), .pdf)
        XCTAssertEqual(MimeType(fileExtension: "unknownext"), .octetStream)
        XCTAssertEqual(File(key: "k", fileURL: URL(fileURLWithPath: "/tmp/x.json")).mimeType, .json)
    }

    /// A text file's bytes are not read to guess its type, so its charset is not known: `notes.txt` in Latin-1 was
    /// sent as `text/plain; charset=utf-8`, and a server honouring the label read it wrong. A type told by the
    /// extension names no charset, as browsers send a file part and Apple's `UTType` names it.
    func testATextFilesTypeFromItsExtensionClaimsNoCharset() {
        for (name, type) in [
            ("notes.txt", "text/plain"), ("a.TEXT", "text/plain"), ("page.html", "text/html"),
            ("page.htm", "text/html"),
        ] {
            let inferred = MimeType.inferred(from: URL(fileURLWithPath: "/tmp/" + name))
            XCTAssertEqual(inferred.rawValue, type, name)
            XCTAssertNil(inferred.parameter("charset"), name)
            XCTAssertEqual(File(key: "k", fileURL: URL(fileURLWithPath: "/tmp/" + name)).mimeType.rawValue, type, name)
        }
        // The constants for text the app hands over as a `String` (UTF-8) keep saying so
        XCTAssertEqual(MimeType.plainText.parameter("charset"), "utf-8")
        XCTAssertEqual(MimeType.html.parameter("charset"), "utf-8")
    }

    func testAMediaTypesParametersAreReadByNameInAnyCaseQuotedOrNot() {
        // The documentation's example
        XCTAssertEqual(MimeType(rawValue: #"text/csv; Charset="ISO-8859-1""#).parameter("charset"), "ISO-8859-1")
        // Name in any case, blanks around, a token value
        XCTAssertEqual(MimeType(rawValue: "text/xml ;  CHARSET = utf-8 ").parameter("Charset"), "utf-8")
        // A `;` or the name inside another parameter's quoted value is not a parameter
        let quoted = MimeType(rawValue: #"text/xml; profile="a;charset=UTF-16"; charset=utf-8"#)
        XCTAssertEqual(quoted.parameter("charset"), "utf-8")
        XCTAssertEqual(quoted.parameter("profile"), "a;charset=UTF-16")
        // Escapes undone; absent, or part of the media type itself, is nil
        XCTAssertEqual(MimeType(rawValue: #"multipart/form-data; boundary="a"b""#).parameter("boundary"), #"a"b"#)
        XCTAssertNil(MimeType.json.parameter("charset"))
        XCTAssertNil(MimeType(rawValue: "charset=utf-8").parameter("charset"))
        XCTAssertEqual(MimeType.plainText.parameter("charset"), "utf-8")
    }

    /// Type, subtype and parameter names are case-insensitive (RFC 9110 §8.3.1): `IMAGE/JPEG` was not `.jpg`, and a
    /// set or dictionary keyed by media type held it twice. Parameter values keep their case.
    func testMediaTypesInAnotherCaseAreEqualAndKeepTheirParameterValues() {
        XCTAssertEqual(MimeType(rawValue: "IMAGE/JPEG"), .jpg)
        XCTAssertEqual(Set([MimeType(rawValue: "Image/PNG"), .png, MimeType(rawValue: "image/png")]).count, 1)
        XCTAssertEqual(MimeType(rawValue: "Text/Plain; Charset=utf-8"), .plainText)
        XCTAssertEqual(MimeType(rawValue: "IMAGE/JPEG").rawValue, "image/jpeg")
        // Values as given, a quoted one whole: its `;` and `=` separate nothing
        let quoted = MimeType(rawValue: #"Application/VND.API+JSON; Profile="A;B=C\"D"; Ext=XY"#)
        XCTAssertEqual(quoted.rawValue, #"application/vnd.api+json; profile="A;B=C\"D"; ext=XY"#)
        XCTAssertEqual(quoted.parameter("profile"), #"A;B=C"D"#)
        XCTAssertEqual(quoted.parameter("EXT"), "XY")
        XCTAssertNotEqual(MimeType(rawValue: "text/plain; charset=X"), MimeType(rawValue: "text/plain; charset=x"))
        // Non-ASCII left alone, and a part in another case is sent in lower case
        XCTAssertEqual(MimeType(rawValue: "TEXT/É").rawValue, "text/É")
        var form = MultipartFormData(boundary: "B")
        form.append(File(name: "a.jpg", key: "k", mimeType: MimeType(rawValue: "IMAGE/JPEG"), data: Data("x".utf8)))
        let encoded = String(decoding: (try? form.encodedData()) ?? Data(), as: UTF8.self)
        XCTAssertTrue(encoded.contains("Content-Type: image/jpeg\r\n"), encoded)
    }

    func testGuideStyleMimeTypeExtension() {
        XCTAssertEqual(MimeType.myAwesomeType.rawValue, "awesome/type")
    }
}

extension MimeType {
    static let myAwesomeType = MimeType(rawValue: "awesome/type")
}
