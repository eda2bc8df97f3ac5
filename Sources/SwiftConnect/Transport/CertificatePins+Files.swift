import Foundation

/// Pins from the certificate and key files apps already ship, as JustAPIs' `SSLCertificate` took them: the library
/// computes each SubjectPublicKeyInfo hash, so nobody runs `openssl` by hand.
extension CertificatePins {
    /// Pins each host pattern to the public keys of the certificates and keys in the given files.
    ///
    /// ```swift
    /// let certificate = Bundle.main.url(forResource: "api", withExtension: "pem")!
    /// let pins = try CertificatePins(files: ["api.example.com": [certificate]])
    /// ```
    ///
    /// A file may hold a DER certificate (`.cer`, `.der`: one, nothing after it), or PEM text (`.pem`, `.crt`) with
    /// one or more `CERTIFICATE`, `PUBLIC KEY` or `RSA PUBLIC KEY` blocks: each certificate and key counts as one pin
    /// of the host, so a chain file or a file with the backup key pins them all. Bytes a pin cannot be read from (a
    /// second DER certificate after the first, say) fail rather than being skipped.
    ///
    /// - Parameter files: Host pattern (an exact name, or `*.` and a domain) → the files of its keys.
    /// - Throws: ``ConnectError/Kind/fileAccess`` for a file that cannot be read or is not a regular file (a
    ///   directory, a pipe, a device); ``ConnectError/Kind/certificatePinning``
    ///   for one that holds no certificate or public key (a private key among them, which must never ship in an app,
    ///   is named as such), an empty list, or a malformed pattern.
    public init(files: [String: [URL]]) throws {
        var contents: [String: [Data]] = [:]
        for (pattern, urls) in files {
            contents[pattern] = try urls.map { url in
                // A directory, pipe or device is refused in words that say so (Foundation's are "You don't have
                // permission"), before it is opened: a pipe read whole may never end.
                _ = try MultipartFormData.regularFileSize(url)
                do {
                    return try Data(contentsOf: url)
                } catch {
                    throw ConnectError.fileAccess(error, url: url, request: nil)
                }
            }
        }
        try self.init(certificatesOrKeys: contents)
    }

    /// Pins each host pattern to the public keys of the certificates and keys given as bytes, DER or PEM (see
    /// ``init(files:)``).
    ///
    /// - Parameter certificatesOrKeys: Host pattern → the certificates or public keys, each DER or PEM.
    /// - Throws: ``ConnectError/Kind/certificatePinning`` for bytes that hold no certificate or public key, an empty
    ///   list, or a malformed pattern.
    public init(certificatesOrKeys: [String: [Data]]) throws {
        self.init()
        for (pattern, items) in certificatesOrKeys {
            let hashes = try items.flatMap { try Self.sha256Pins(ofPEMOrDER: $0) }
            try pin(pattern, sha256Base64: hashes)
        }
    }

    /// The pins (base64 SHA-256 hashes of SubjectPublicKeyInfo, as ``init(_:)`` takes them) of every certificate and
    /// public key in `data`: a DER certificate, or PEM text with `CERTIFICATE`, `PUBLIC KEY` or `RSA PUBLIC KEY`
    /// blocks.
    ///
    /// ```swift
    /// print(try CertificatePins.sha256Pins(ofPEMOrDER: Data(contentsOf: certificateURL)))  // ["r/mIkG3e…"]
    /// ```
    ///
    /// - Parameter data: The contents of a certificate or key file.
    /// - Returns: One pin for each certificate or key, in the order found.
    /// - Throws: ``ConnectError/Kind/certificatePinning`` when `data` holds none, or holds a private key.
    public static func sha256Pins(ofPEMOrDER data: Data) throws -> [String] {
        try publicKeyInfos(ofPEMOrDER: data).map { Data(SHA256Hasher.hash($0)).base64EncodedString() }
    }

    /// The DER SubjectPublicKeyInfo of every certificate and public key in `data`.
    static func publicKeyInfos(ofPEMOrDER data: Data) throws -> [[UInt8]] {
        let bytes = [UInt8](data)
        if let text = String(bytes: bytes, encoding: .utf8), let range = text.range(of: "PRIVATE KEY-----") {
            // Whatever else the file holds: a private key has no business in an app, nor in a pin.
            // Named by its BEGIN line's label only when that reads as one (`EC PRIVATE KEY`): a mangled BEGIN line
            // would make the "label" run from an earlier block through the key's bytes, into the message.
            let found = text[..<range.upperBound].components(separatedBy: "-----BEGIN ").last.map { $0.dropLast(5) }
            let isLabel =
                found.map {
                    $0.count <= 40 && $0.allSatisfy { $0.isASCII && ($0.isUppercase || $0.isNumber || $0 == " ") }
                }
                ?? false
            let label = isLabel ? String(found ?? "PRIVATE KEY") : "PRIVATE KEY"
            throw pinSource(
                "the file holds a private key (\(label)): pin with the certificate or the public key, "
                    + "and never ship a private key in an app")
        }
        guard let blocks = PEMBlock.all(in: bytes) else {
            // Not PEM: a DER certificate, or a DER SubjectPublicKeyInfo.
            if let info = keyInfo(ofWholeCertificate: bytes[...]) { return [info] }
            if isSubjectPublicKeyInfo(bytes[...]) { return [bytes] }
            // A certificate with more after it (another one, say): pinning the first alone would leave the rest
            // unpinned without a word, a backup key among them.
            var reader = DERReader(bytes[...])
            if let first = try? reader.read(tag: 0x30), (try? subjectPublicKeyInfo(ofCertificate: bytes)) != nil {
                throw pinSource(
                    "the DER certificate is followed by \(bytes.count - first.whole.count) more bytes (another "
                        + "certificate?): give each DER certificate a file of its own, or put them all in one PEM file")
            }
            throw pinSource("the bytes are neither a certificate nor a public key, in DER or PEM")
        }
        var infos: [[UInt8]] = []
        for block in blocks {
            switch block.label {
            case "CERTIFICATE", "X509 CERTIFICATE", "TRUSTED CERTIFICATE":
                let trustSettings = block.label == "TRUSTED CERTIFICATE"
                guard let info = keyInfo(ofWholeCertificate: block.der[...], trustSettingsAfter: trustSettings) else {
                    throw pinSource("a PEM CERTIFICATE block does not hold exactly one DER X.509 certificate")
                }
                infos.append(info)
            case "PUBLIC KEY":
                guard isSubjectPublicKeyInfo(block.der[...]) else {
                    throw pinSource("a PEM PUBLIC KEY block does not hold a SubjectPublicKeyInfo")
                }
                infos.append(block.der)
            case "RSA PUBLIC KEY":
                guard isRSAPublicKey(block.der[...]) else {
                    throw pinSource("a PEM RSA PUBLIC KEY block does not hold a PKCS #1 RSAPublicKey")
                }
                infos.append(rsaSubjectPublicKeyInfo(pkcs1: block.der))
            default:
                continue  // parameters, certificate requests…: not keys of the server
            }
        }
        guard !infos.isEmpty else { throw pinSource("the PEM text has no CERTIFICATE or PUBLIC KEY block") }
        return infos
    }

    /// The SubjectPublicKeyInfo of `der` when it is exactly one DER certificate, nothing after it, whose key is a
    /// SubjectPublicKeyInfo; else `nil`. Stricter than the handshake's reader
    /// (``subjectPublicKeyInfo(ofCertificate:)``): a file is where a pin comes from, and bytes it would skip may hold a
    /// key the caller meant to pin.
    ///
    /// - Parameters:
    ///   - der: The bytes.
    ///   - trustSettingsAfter: Whether one SEQUENCE may follow the certificate: OpenSSL's trust settings
    ///     (`X509_CERT_AUX`), which a `TRUSTED CERTIFICATE` block carries after it.
    private static func keyInfo(ofWholeCertificate der: ArraySlice<UInt8>, trustSettingsAfter: Bool = false)
        -> [UInt8]?
    {
        var outer = DERReader(der)
        guard (try? outer.read(tag: 0x30)) != nil else { return nil }
        if trustSettingsAfter, !outer.isAtEnd, (try? outer.read(tag: 0x30)) == nil { return nil }
        guard outer.isAtEnd,
            let info = try? subjectPublicKeyInfo(ofCertificate: Array(der)), isSubjectPublicKeyInfo(info)
        else { return nil }
        return Array(info)
    }

    /// Whether `der` is exactly one SubjectPublicKeyInfo: SEQUENCE { SEQUENCE algorithm, BIT STRING key }.
    private static func isSubjectPublicKeyInfo(_ der: ArraySlice<UInt8>) -> Bool {
        var outer = DERReader(der)
        guard let info = try? outer.read(tag: 0x30), outer.isAtEnd else { return false }
        var fields = DERReader(info.content)
        guard (try? fields.read(tag: 0x30)) != nil, (try? fields.read(tag: 0x03)) != nil else { return false }
        return fields.isAtEnd
    }

    /// Whether `der` is exactly one PKCS #1 `RSAPublicKey`: SEQUENCE { INTEGER modulus, INTEGER publicExponent }, both
    /// non-empty. A truncated or foreign block would otherwise become a pin no server ever matches.
    private static func isRSAPublicKey(_ der: ArraySlice<UInt8>) -> Bool {
        var outer = DERReader(der)
        guard let key = try? outer.read(tag: 0x30), outer.isAtEnd else { return false }
        var fields = DERReader(key.content)
        guard let modulus = try? fields.read(tag: 0x02), !modulus.content.isEmpty,
            let exponent = try? fields.read(tag: 0x02), !exponent.content.isEmpty
        else { return false }
        return fields.isAtEnd
    }

    /// The SubjectPublicKeyInfo of a PKCS #1 `RSAPublicKey` (RFC 8017): algorithm rsaEncryption with NULL parameters,
    /// and the key as the bit string, as `openssl rsa -RSAPublicKey_in -pubout` writes it.
    private static func rsaSubjectPublicKeyInfo(pkcs1: [UInt8]) -> [UInt8] {
        // SEQUENCE { OID 1.2.840.113549.1.1.1, NULL }
        let algorithm: [UInt8] = [
            0x30, 0x0D, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01, 0x05, 0x00,
        ]
        let key = DERReader.encode(tag: 0x03, content: [0x00] + pkcs1)
        return DERReader.encode(tag: 0x30, content: algorithm + key)
    }

    private static func pinSource(_ message: String) -> ConnectError {
        ConnectError(.certificatePinning, message: "no pin in the certificate or key given: " + message)
    }
}

/// One `-----BEGIN label-----` … `-----END label-----` block of PEM text (RFC 7468), its base64 decoded.
private struct PEMBlock {
    let label: String
    let der: [UInt8]

    /// The blocks of `bytes`, or `nil` when it is not PEM text (no `-----BEGIN ` line). A block without its END line,
    /// or whose body is not base64, makes the whole text not PEM.
    static func all(in bytes: [UInt8]) -> [PEMBlock]? {
        guard let text = String(bytes: bytes, encoding: .utf8), text.contains("-----BEGIN ") else { return nil }
        var blocks: [PEMBlock] = []
        var rest = Substring(text)
        while let begin = rest.range(of: "-----BEGIN ") {
            guard let labelEnd = rest[begin.upperBound...].range(of: "-----") else { return nil }
            let label = String(rest[begin.upperBound..<labelEnd.lowerBound])
            guard let end = rest[labelEnd.upperBound...].range(of: "-----END \(label)-----") else { return nil }
            let body = rest[labelEnd.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
            guard let der = Data(base64Encoded: String(body)) else { return nil }
            blocks.append(PEMBlock(label: label, der: [UInt8](der)))
            rest = rest[end.upperBound...]
        }
        return blocks
    }
}
