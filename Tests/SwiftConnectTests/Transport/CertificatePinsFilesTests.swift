import Foundation
import SwiftConnect
import XCTest

/// Pins from certificate and key files (PEM or DER), against the OpenSSL-computed pins of `CertificatePinsTests`'
/// certificates. The public keys are cut out of those certificates by their known DER prefixes, not by the reader
/// under test.
final class CertificatePinsFilesTests: XCTestCase {
    private typealias Vectors = CertificatePinsTests

    /// The SubjectPublicKeyInfo of the EC certificate: SEQUENCE (0x59 bytes) { SEQUENCE { id-ecPublicKey, … }, … }.
    private static var ecPublicKeyInfo: Data {
        slice(
            of: Vectors.ecCertificate, from: [0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE],
            length: 2 + 0x59)
    }

    /// The SubjectPublicKeyInfo of the RSA certificate: SEQUENCE (0x122 bytes) { SEQUENCE { rsaEncryption, NULL }, … }.
    private static var rsaPublicKeyInfo: Data {
        slice(of: Vectors.rsaCertificate, from: [0x30, 0x82, 0x01, 0x22, 0x30, 0x0D, 0x06, 0x09], length: 4 + 0x122)
    }

    /// The PKCS #1 `RSAPublicKey` inside it: what follows the BIT STRING's header (`03 82 01 0F 00`), 4 + 0x10A bytes.
    private static var rsaPKCS1: Data {
        slice(of: rsaPublicKeyInfo, from: [0x30, 0x82, 0x01, 0x0A], length: 4 + 0x10A)
    }

    private static func slice(of data: Data, from prefix: [UInt8], length: Int) -> Data {
        let bytes = [UInt8](data)
        let start = (0...(bytes.count - prefix.count)).first { Array(bytes[$0..<$0 + prefix.count]) == prefix }!
        return Data(bytes[start..<start + length])
    }

    private static func pem(_ label: String, _ der: Data, lineEnding: String = "\n") -> String {
        let base64 = der.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
            .replacingOccurrences(of: "\n", with: lineEnding)
        return "-----BEGIN \(label)-----\(lineEnding)\(base64)\(lineEnding)-----END \(label)-----\(lineEnding)"
    }

    private func pins(_ text: String) throws -> [String] {
        try CertificatePins.sha256Pins(ofPEMOrDER: Data(text.utf8))
    }

    func testADERCertificateGivesItsPin() throws {
        XCTAssertEqual(try CertificatePins.sha256Pins(ofPEMOrDER: Vectors.ecCertificate), [Vectors.ecPin])
        XCTAssertEqual(try CertificatePins.sha256Pins(ofPEMOrDER: Vectors.rsaCertificate), [Vectors.rsaPin])
    }

    func testAPEMChainGivesEveryCertificatesPinInOrder() throws {
        let chain =
            "subject=CN = rsa.example.com\n" + Self.pem("CERTIFICATE", Vectors.rsaCertificate, lineEnding: "\r\n")
            + Self.pem("CERTIFICATE", Vectors.ecCertificate)

        XCTAssertEqual(try pins(chain), [Vectors.rsaPin, Vectors.ecPin])
    }

    func testPublicKeysInPEMAndDERGiveTheSamePinAsTheirCertificate() throws {
        XCTAssertEqual(try pins(Self.pem("PUBLIC KEY", Self.ecPublicKeyInfo)), [Vectors.ecPin])
        XCTAssertEqual(try pins(Self.pem("PUBLIC KEY", Self.rsaPublicKeyInfo)), [Vectors.rsaPin])
        XCTAssertEqual(try CertificatePins.sha256Pins(ofPEMOrDER: Self.ecPublicKeyInfo), [Vectors.ecPin])
        XCTAssertEqual(try pins(Self.pem("RSA PUBLIC KEY", Self.rsaPKCS1)), [Vectors.rsaPin])
    }

    func testAPrivateKeyIsRefusedByName() {
        let text =
            Self.pem("CERTIFICATE", Vectors.ecCertificate)
            + "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"

        XCTAssertThrowsError(try pins(text)) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .certificatePinning)
            XCTAssertTrue("\(error)".contains("private key (EC PRIVATE KEY)"), "\(error)")
        }
    }

    /// A key whose BEGIN line was lost or mangled (four dashes): the label was read from the last BEGIN line before the
    /// first `PRIVATE KEY-----`, the END line's, and the message quoted everything between them, the key included.
    func testAPrivateKeyWithAMangledBeginLineIsRefusedWithoutQuotingIt() {
        for begin in ["", "----BEGIN PRIVATE KEY-----\n"] {
            let text =
                Self.pem("CERTIFICATE", Vectors.ecCertificate) + begin + "SECRETKEYBYTES\n-----END PRIVATE KEY-----\n"

            XCTAssertThrowsError(try pins(text)) { error in
                XCTAssertEqual((error as? ConnectError)?.kind, .certificatePinning)
                XCTAssertFalse("\(error)".contains("SECRETKEYBYTES"), "\(error)")
                XCTAssertTrue("\(error)".contains("private key (PRIVATE KEY)"), "\(error)")
            }
        }
    }

    func testBytesWithoutACertificateOrKeyAreATypedError() {
        let cases: [Data] = [
            Data(), Data("hello".utf8), Vectors.ecCertificate.prefix(100),
            Data(Self.pem("CERTIFICATE REQUEST", Data([0x30, 0x00])).utf8),  // no key of the server
            Data(Self.pem("CERTIFICATE", Data("junk".utf8)).utf8),  // a block that is not a certificate
            Data("-----BEGIN CERTIFICATE-----\nMIIB\n".utf8),  // no END line
            Data(Self.pem("PUBLIC KEY", Vectors.ecCertificate).utf8),  // a certificate where a key should be
            // PKCS #1 blocks that are no RSA key: junk, nothing, a key cut short
            Data(Self.pem("RSA PUBLIC KEY", Data("junk".utf8)).utf8), Data(Self.pem("RSA PUBLIC KEY", Data()).utf8),
            Data(Self.pem("RSA PUBLIC KEY", Self.rsaPKCS1.prefix(100)).utf8),
        ]
        for bytes in cases {
            XCTAssertThrowsError(try CertificatePins.sha256Pins(ofPEMOrDER: bytes)) { error in
                XCTAssertEqual((error as? ConnectError)?.kind, .certificatePinning, "\(error)")
            }
        }
    }

    /// A DER file or PEM block holding more than one certificate (two DER certificates one after the other, a
    /// certificate with bytes after it) is refused: it used to give the pin of the first certificate alone, so a backup
    /// key put in the same file was silently not pinned, and the app was locked out once the server rotated to it.
    func testBytesAfterACertificateAreRefusedNotIgnored() {
        let cases: [(Data, String)] = [
            (Vectors.ecCertificate + Vectors.rsaCertificate, "followed by \(Vectors.rsaCertificate.count) more bytes"),
            (Vectors.ecCertificate + Data([0, 0]), "followed by 2 more bytes"),
            (Data(Self.pem("CERTIFICATE", Vectors.ecCertificate + Data([0x30, 0x00])).utf8), "CERTIFICATE block"),
        ]
        for (bytes, words) in cases {
            XCTAssertThrowsError(try CertificatePins.sha256Pins(ofPEMOrDER: bytes), words) { error in
                XCTAssertEqual((error as? ConnectError)?.kind, .certificatePinning, "\(error)")
                XCTAssertTrue("\(error)".contains(words), "\(error)")
            }
        }
        // Each in a file of its own, or both in one PEM file, they give both pins.
        XCTAssertEqual(
            try pins(Self.pem("CERTIFICATE", Vectors.ecCertificate) + Self.pem("CERTIFICATE", Vectors.rsaCertificate)),
            [Vectors.ecPin, Vectors.rsaPin])
    }

    /// OpenSSL's `TRUSTED CERTIFICATE` block (`openssl x509 -trustout`) is a certificate followed by its trust
    /// settings (`X509_CERT_AUX`, a SEQUENCE): it gives the certificate's pin. Anything else after the certificate
    /// there is still refused.
    func testATrustedCertificateBlockGivesItsCertificatesPin() {
        // SEQUENCE { SEQUENCE { OID serverAuth } }: trusted for TLS servers.
        let aux = Data([0x30, 0x0C, 0x30, 0x0A, 0x06, 0x08, 0x2B, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01])
        XCTAssertEqual(try pins(Self.pem("TRUSTED CERTIFICATE", Vectors.ecCertificate + aux)), [Vectors.ecPin])
        XCTAssertEqual(try pins(Self.pem("TRUSTED CERTIFICATE", Vectors.rsaCertificate)), [Vectors.rsaPin])
        for trailing in [aux + aux, Data([0x02, 0x01, 0x00]), aux.prefix(5)] {
            XCTAssertThrowsError(try pins(Self.pem("TRUSTED CERTIFICATE", Vectors.ecCertificate + trailing))) { error in
                XCTAssertEqual((error as? ConnectError)?.kind, .certificatePinning, "\(error)")
            }
        }
    }

    func testPinsFromFilesInOneLine() throws {
        // Given: the files an app ships, one PEM chain and one DER backup certificate
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let chainFile = folder.appendingPathComponent("api.pem")
        let backupFile = folder.appendingPathComponent("backup.cer")
        try Data(Self.pem("CERTIFICATE", Vectors.ecCertificate).utf8).write(to: chainFile)
        try Vectors.rsaCertificate.write(to: backupFile)

        // When
        let pins = try CertificatePins(files: ["api.example.com": [chainFile, backupFile]])

        // Then
        XCTAssertEqual(
            pins.pins(for: "api.example.com"),
            [Data(base64Encoded: Vectors.ecPin)!, Data(base64Encoded: Vectors.rsaPin)!])
        XCTAssertTrue(pins.accepts(host: "api.example.com", chain: [Vectors.rsaCertificate]))
        XCTAssertEqual(pins, try CertificatePins(["api.example.com": [Vectors.ecPin, Vectors.rsaPin]]))
    }

    func testAMissingFileIsAFileAccessErrorNamingIt() {
        let missing = URL(fileURLWithPath: "/nonexistent/api.pem")

        XCTAssertThrowsError(try CertificatePins(files: ["api.example.com": [missing]])) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .fileAccess)
            XCTAssertTrue("\(error)".contains("api.pem"), "\(error)")
        }
        XCTAssertThrowsError(try CertificatePins(files: ["api.example.com": []])) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .certificatePinning)
        }
    }

    /// A pipe nobody writes to is refused as no regular file, named, and the call comes back: read whole, it would
    /// never end. A writer opens and closes the pipe if the call hangs, so that no thread is left blocked.
    func testAPipeIsRefusedWithoutWaitingOnIt() throws {
        let pipe = FileManager.default.temporaryDirectory.appendingPathComponent("pins-pipe-\(UUID().uuidString)")
        XCTAssertEqual(mkfifo(pipe.path, 0o600), 0)
        defer { try? FileManager.default.removeItem(at: pipe) }
        let done = DispatchSemaphore(value: 0)
        let outcome = Protected<Result<CertificatePins, any Error>?>(nil)
        DispatchQueue.global().async {
            let result = Result { try CertificatePins(files: ["api.example.com": [pipe]]) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        guard done.wait(timeout: .now() + 10) == .success else {
            let writer = open(pipe.path, O_WRONLY | O_NONBLOCK)
            if writer >= 0 { close(writer) }
            done.wait()
            return XCTFail("CertificatePins(files:) did not come back: it was reading the pipe")
        }
        guard case .failure(let error) = outcome.withLock({ $0 }) else { return XCTFail("a pipe gave pins") }
        XCTAssertEqual((error as? ConnectError)?.kind, .fileAccess, "\(error)")
        XCTAssertTrue((error as? ConnectError)?.message.contains(pipe.path) == true, "\(error)")
        // Why, in words: Foundation's own were "You don't have permission", for a pipe anyone may read.
        XCTAssertTrue((error as? ConnectError)?.message.contains("not a regular file") == true, "\(error)")
    }
}
