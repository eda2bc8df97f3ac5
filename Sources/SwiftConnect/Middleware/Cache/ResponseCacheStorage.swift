import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Android)
    import Android
#endif

/// Where a ``ResponseCache`` keeps responses beyond its own memory: a second tier it reads on a miss and writes
/// with every response it stores, such as ``DiskResponseStorage``, which survives a restart.
///
/// ```swift
/// let disk = try DiskResponseStorage(directory: cachesFolder.appendingPathComponent("api"), maxBytes: 50_000_000)
/// let connect = Connect(responseCache: ResponseCache(storage: disk))
/// ```
///
/// The cache decides what may be stored and for how long; a storage keeps what it is given and may forget it at
/// any time (to stay within its bounds). ``MemoryResponseStorage`` is the simplest one, for tests and as an example.
///
/// After a successful unsafe request (a PUT, a DELETE…), the cache removes the URL's responses: the built-in storages
/// find them by their ``StoredResponse/url`` (or by the URL a redirect led from, which they keep); of a storage of
/// yours, it removes the keys a GET or HEAD of the URL is stored under and the keys it holds in memory for the URL. A
/// response that such a storage keeps under a custom key and that this process's cache no longer holds in memory
/// (stored before a restart, say) stays until its expiry (and, for a request that accepts a stale response,
/// `max-stale` or `.returnCacheDataElseLoad`, until the storage drops it).
public protocol ResponseCacheStorage: Sendable {
    /// The response stored under `key`, or `nil`.
    func response(forKey key: String) -> StoredResponse?
    /// Stores `response` under `key`, replacing what was there.
    ///
    /// A storage that cannot keep it (too large for its bound, a write that fails) forgets what was there instead:
    /// `response` is the server's newest answer, and the older one must not be served in its place. The built-in
    /// storages do.
    func store(_ response: StoredResponse, forKey key: String)
    /// Forgets the response under `key` and its variants: every key that starts with `key` followed by `" host:"` (a
    /// `Host` field naming another authority than the URL's), by `" body:"` (the digest of a request's body,
    /// ``CacheRule/keyIncludesBody``) or by `" credentials:"` (the digest of a request's credentials), whatever comes
    /// after, compared as Swift strings are (a key in another Unicode
    /// normalization is the same key). ``ResponseCache/removeResponse(forKey:)`` passes the key as the
    /// app knows it: a storage that removes only `key` itself keeps the responses stored with their body's digest.
    func removeResponses(forKey key: String)
    /// Forgets every response.
    func removeAll()
}

/// A storage that can forget responses by the URL that answered them, whatever their keys: the built-in ones. After
/// a successful unsafe request, ``ResponseCache`` asks it to, and asks any other storage to remove the keys it
/// knows for the URL (``ResponseCacheStorage/removeResponses(forKey:)``).
protocol ResponseStorageByURL {
    /// Forgets every response whose ``StoredResponse/url`` names one of `resources` (``ResponseCache/resource(of:)``),
    /// or whose URL asked for does, when a redirect led from it (``StoredResponse/resources``).
    func removeResponses(forResources resources: Set<String>)
}

/// A storage that orders what it forgets by use and counts a response the cache served from memory as a use: the
/// disk one, whose reads a memory hit spares. Without it, a response served from memory all day is the least
/// recently used on disk, and the first to go when the folder is full.
protocol ResponseStorageUse: Sendable {
    /// Notes that the response under `key` was served now, from memory. Cheap: no file is touched.
    func noteUse(forKey key: String)
}

/// A response as a ``ResponseCacheStorage`` keeps it: what the cache needs to serve it again.
public struct StoredResponse: Sendable, Codable, Equatable {
    /// The URL that answered.
    public var url: URL
    /// The method of the request it answered.
    public var method: String
    /// The status code.
    public var statusCode: Int
    /// The header fields, in order.
    public var headers: [HeaderPair]
    /// The body.
    public var body: Data
    /// When it stops being served.
    public var expiry: Date
    /// The request headers its `Vary` names (lowercased), with the values of the request it answered (`nil`: absent).
    public var varying: [HeaderPair]
    /// When the cache received it, by the cache's clock: with its `Age` header, how old it is, for a request's
    /// `Cache-Control: max-age`. `nil` in a response stored before this property existed (its `Date` header then
    /// dates it; a response with neither never answers a request that sets `max-age`).
    public var receivedAt: Date?
    /// The URL the request asked for, when a redirect led from it to ``url`` (`nil` otherwise, and in a response
    /// stored before this property existed): a successful unsafe request to either removes the response.
    var requestURL: URL?

    /// A header field name and value; for ``varying``, a `nil` value means the request had no such field.
    public struct HeaderPair: Sendable, Codable, Equatable {
        /// The name.
        public var name: String
        /// The value.
        public var value: String?

        /// A pair.
        public init(name: String, value: String?) {
            self.name = name
            self.value = value
        }
    }

    /// A stored response with each part given.
    public init(
        url: URL, method: String, statusCode: Int, headers: [HeaderPair], body: Data, expiry: Date,
        varying: [HeaderPair]
    ) {
        self.url = url
        self.method = method
        self.statusCode = statusCode
        self.headers = headers
        self.body = body
        self.expiry = expiry
        self.varying = varying
    }

    /// The resources it is a response for (``ResponseCache/resource(of:)``): its URL's, and the URL's asked for when
    /// a redirect led from it. A successful unsafe request to one of them removes it.
    var resources: Set<String> {
        Set([url, requestURL].compactMap { $0.flatMap(ResponseCache.resource(of:)) })
    }

    /// About how many bytes it takes.
    var size: Int {
        body.count + url.absoluteString.utf8.count
            + headers.reduce(0) { $0 + $1.name.utf8.count + ($1.value?.utf8.count ?? 0) + 4 }
    }
}

extension StoredResponse: CustomReflectable {
    /// The fields as a storage of yours would print them (`print`, `dump`, a debugger), secrets hidden: the URL
    /// without `user:password@` and with secret query values hidden, the value of each sensitive header (`Set-Cookie`,
    /// and an `Authorization` its `Vary` names, kept in ``varying``) as `<redacted>`, and the body as its size.
    public var customMirror: Mirror {
        func shown(_ pairs: [HeaderPair]) -> [String] {
            pairs.map { pair in
                HTTPHeader.shownName(pair.name) + ": "
                    + (pair.value.map { Redaction.headerValue($0, name: pair.name, redacting: true) } ?? "(absent)")
            }
        }
        return Mirror(
            self,
            children: [
                "url": Redaction.url(url, redacting: true), "method": method, "statusCode": statusCode,
                "headers": shown(headers), "body": "\(body.count) bytes", "expiry": expiry,
                "varying": shown(varying), "receivedAt": receivedAt as Any,
            ],
            displayStyle: .struct)
    }
}

/// A ``ResponseCacheStorage`` in memory, bounded in bytes, forgetting the oldest first.
public final class MemoryResponseStorage: ResponseCacheStorage, ResponseStorageByURL {
    private struct State {
        var responses: [String: StoredResponse] = [:]
        /// The resources (``StoredResponse/resources``) of each key's response, worked out once when stored
        /// rather than for every entry on every unsafe request.
        var resources: [String: Set<String>] = [:]
        var order: [String] = []
        var bytes = 0
    }

    private let maxBytes: Int
    private let state = Protected(State())

    /// Creates an empty storage holding at most `maxBytes`.
    public init(maxBytes: Int = 10_000_000) {
        self.maxBytes = max(0, maxBytes)
    }

    /// The response under `key`.
    public func response(forKey key: String) -> StoredResponse? {
        state.withLock { $0.responses[key] }
    }

    /// Stores `response`, forgetting the oldest responses past the bound. A response larger than the bound is not
    /// kept, and the one it replaces is forgotten.
    public func store(_ response: StoredResponse, forKey key: String) {
        guard response.size <= maxBytes else {
            state.withLock { Self.remove(key, from: &$0) }
            return
        }
        let resources = response.resources
        state.withLock { state in
            Self.remove(key, from: &state)
            state.responses[key] = response
            state.resources[key] = resources
            state.order.append(key)
            state.bytes += response.size
            while state.bytes > maxBytes, let oldest = state.order.first { Self.remove(oldest, from: &state) }
        }
    }

    /// Forgets `key` and its variants (with the digest of a body or of credentials).
    public func removeResponses(forKey key: String) {
        state.withLock { state in
            for stored in Array(state.responses.keys) where ResponseCache.isKey(stored, orVariantOf: key) {
                Self.remove(stored, from: &state)
            }
        }
    }

    /// Forgets everything.
    public func removeAll() {
        state.withLock { $0 = State() }
    }

    /// Forgets the responses for `resources` (``ResponseStorageByURL``).
    func removeResponses(forResources resources: Set<String>) {
        state.withLock { state in
            let keys = state.resources.filter { !resources.isDisjoint(with: $0.value) }.map(\.key)
            for key in keys { Self.remove(key, from: &state) }
        }
    }

    private static func remove(_ key: String, from state: inout State) {
        guard let old = state.responses.removeValue(forKey: key) else { return }
        state.resources[key] = nil
        state.bytes -= old.size
        state.order.removeAll { $0 == key }
    }
}

/// A ``ResponseCacheStorage`` on disk: one file per response in a folder of its own, readable by the user only,
/// bounded in bytes (the least recently used go first: a response its cache serves from memory counts as used), and
/// still there after a restart. It reads only regular files no larger than its bound: another program's named pipe
/// or huge file in the folder is a miss (a huge one is removed when a removal would have to read it), and a file that
/// holds no response (cut short, emptied, overwritten) is a miss that is removed when read. It removes only
/// regular files, as it writes: a folder named like a response, a symbolic link or a named pipe stays, uncounted.
///
/// What reaches it is decided by ``ResponseCache``: never a response to a request that carried credentials when it
/// reached the cache (`Authorization`, a `Cookie` header, any header named like a secret), never one a redirect
/// brought from a URL that carries credentials (user info, a secret query item such as a signed link's
/// `access_token=`: the file would hold the URL) or whose `Location` or `Content-Location` names such a URL, never one
/// with a header named like a secret (`X-Auth-Token`, `Authorization`, `X-Api-Key`…, as logs redact them: the file
/// would hold its value, and one without the field would serve a response that lacks it), and never a response's
/// `Set-Cookie` fields. The cache tells users apart by a digest of their credentials that lasts one
/// process only; a lasting one would keep a hash of a password or token on disk. Cookies an engine adds from its own
/// cookie storage (``URLSessionTransport`` does by default) come after the cache, which cannot see them: an app that
/// signs users in with a session cookie gives its cached rules a key that names the user, and removes the folder's
/// responses (``removeAll()``, or ``ResponseCache/removeAll()``) when the user signs out.
public final class DiskResponseStorage: ResponseCacheStorage, ResponseStorageByURL, ResponseStorageUse {
    /// The folder.
    public let directory: URL
    private let maxBytes: Int
    /// File name → its size, last use, key and resources, read from the folder at start; the key and resources once
    /// a file is written or read (`""` and `nil` for a file that cannot be read), so that removing a key's or a
    /// URL's responses reads no file twice.
    private let index: Protected<[String: IndexEntry]>

    /// The last use stamped (``stamp()``): each stamp is later than the one before, whatever the clock does.
    private let lastUse = Protected(Date.distantPast)

    /// What the index knows of a file.
    private struct IndexEntry {
        var size: Int
        var used: Date
        /// The key, once the file was written or read; `""` when it cannot be read.
        var key: String?
        /// The resources of the response (``StoredResponse/resources``), once the file was written or read.
        var resources: Set<String>?
    }

    /// Opens (or creates) a storage in `directory`.
    ///
    /// - Parameters:
    ///   - directory: A folder for this storage alone; created with permissions 0700 if missing.
    ///   - maxBytes: The most bytes of files it keeps; 50 MB by default. A folder that holds more when it opens (filled
    ///     under a larger bound) is brought within it at once, the files written longest ago going first.
    /// - Throws: ``ConnectError/Kind/fileAccess`` when the folder cannot be created or read.
    public init(directory: URL, maxBytes: Int = 50_000_000) throws {
        self.directory = directory
        self.maxBytes = max(0, maxBytes)
        let manager = FileManager.default
        var index: [String: IndexEntry] = [:]
        do {
            try manager.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try manager.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
            for name in try manager.contentsOfDirectory(atPath: directory.path) {
                // A file a process stopped writing (it crashed, or was killed) is never renamed into place: it goes.
                if Self.isTemporary(name) {
                    Self.removeFile(at: directory.appendingPathComponent(name))
                    continue
                }
                // Only a regular file is a response: a folder or a link named like one is another program's.
                guard name.hasSuffix(".response"),
                    let file = Self.regularFile(at: directory.appendingPathComponent(name))
                else { continue }
                index[name] = IndexEntry(size: file.size, used: file.modified)
            }
        } catch {
            throw ConnectError.fileAccess(error, url: directory, request: nil)
        }
        // Not left for the next store: a storage that only reads (offline, say) would keep the folder over its bound.
        var total = index.values.reduce(0) { $0 + $1.size }
        for (name, entry) in index.sorted(by: { $0.value.used < $1.value.used }) where total > self.maxBytes {
            Self.removeFile(at: directory.appendingPathComponent(name))
            index[name] = nil
            total -= entry.size
        }
        self.index = Protected(index)
    }

    /// The response under `key`, read from its file. A file that holds no record (cut short, emptied, overwritten) is
    /// a miss, and goes.
    public func response(forKey key: String) -> StoredResponse? {
        let name = Self.fileName(forKey: key)
        let file = directory.appendingPathComponent(name)
        guard case .read(let data, let identity) = Self.contents(of: file, limit: maxBytes) else { return nil }
        guard let stored = try? JSONDecoder().decode(Record.self, from: data) else {
            removeDamagedFile(name, identity: identity)
            return nil
        }
        guard stored.key == key else { return nil }
        let used = stamp()
        index.withLock { index in
            index[name]?.used = used
            index[name]?.key = key
            index[name]?.resources = stored.response.resources
        }
        return stored.response
    }

    /// Writes `response` to its file (atomically, readable by the user only), then forgets the least recently used
    /// files past the bound: the folder's, those another storage on it wrote included. A response it cannot keep
    /// (larger than the bound, a write that fails: a full disk) removes the file it would have replaced.
    public func store(_ response: StoredResponse, forKey key: String) {
        let name = Self.fileName(forKey: key)
        let file = directory.appendingPathComponent(name)
        let forget = {
            Self.removeFile(at: file)
            self.index.withLock { $0[name] = nil }
        }
        guard let data = try? JSONEncoder().encode(Record(key: key, response: response)), data.count <= maxBytes
        else { return forget() }
        let temporary = directory.appendingPathComponent(".\(UUID().uuidString).tmp")
        guard Self.writeNewFile(data, to: temporary) else { return forget() }
        // One rename: a reader sees the old file or the new one, never part of one.
        guard rename(temporary.path, file.path) == 0 else {
            Self.removeFile(at: temporary)
            return forget()
        }
        // The folder as it is now: the bound holds for the folder, not for this storage's files.
        catchUp(except: name)
        let used = stamp()
        let evicted = index.withLock { index -> [String] in
            index[name] = IndexEntry(
                size: data.count, used: used, key: key, resources: response.resources)
            var total = index.values.reduce(0) { $0 + $1.size }
            var evicted: [String] = []
            for (old, entry) in index.sorted(by: { $0.value.used < $1.value.used }) where total > maxBytes {
                guard old != name else { continue }
                index[old] = nil
                total -= entry.size
                evicted.append(old)
            }
            return evicted
        }
        for old in evicted { Self.removeFile(at: directory.appendingPathComponent(old)) }
    }

    /// Notes that the cache served the response under `key` from memory (``ResponseStorageUse``): a use, as a read
    /// of its file is, for the order in which files go. Kept by this storage only, in memory: another storage on the
    /// folder, or the next process, orders the file by when it was written.
    func noteUse(forKey key: String) {
        let name = Self.fileName(forKey: key)
        let used = stamp()
        index.withLock { $0[name]?.used = used }
    }

    /// The time of a use: now, or just after the last use stamped if the clock has not moved on (or went back), so
    /// that of two uses the later one is always the more recent.
    private func stamp() -> Date {
        lastUse.withLock { last in
            last = max(Date(), last.addingTimeInterval(0.000_001))
            return last
        }
    }

    /// Forgets `key` and its variants (with the digest of a body or of credentials).
    ///
    /// Files an earlier process or another storage on the folder wrote are read once for their key; after that, the
    /// index knows every file's key, and a removal lists the folder but reads no file (a cache removes a key for
    /// each answer it may not store).
    public func removeResponses(forKey key: String) {
        let exact = Self.fileName(forKey: key)
        // Whether or not the index knows it (another storage on the folder may have written it).
        Self.removeFile(at: directory.appendingPathComponent(exact))
        readUnknownFiles(except: exact)
        removeFiles { name, entry in
            name == exact || entry.key.map { ResponseCache.isKey($0, orVariantOf: key) } ?? false
        }
    }

    /// Forgets the responses for `resources` (``ResponseStorageByURL``), reading no file twice as
    /// ``removeResponses(forKey:)`` does.
    func removeResponses(forResources resources: Set<String>) {
        readUnknownFiles(except: nil)
        removeFiles { _, entry in entry.resources.map { !resources.isDisjoint(with: $0) } ?? false }
    }

    /// Brings the index up to the folder, but for `skipped`: another storage on it (another client, another
    /// process) writes, replaces and removes files this one did not. A file it wrote is counted, its key and resource
    /// unknown until read; one it replaced is counted at its new size (its resource read again when needed); one it
    /// removed is forgotten. Each file is measured: a newer answer another storage wrote under a key this one knows is
    /// a file of another size, and counted at the old one, the folder would grow past the bound.
    private func catchUp(except skipped: String?) {
        // What the index knew before the listing: a file it learns of meanwhile is not taken for one that went, and
        // one this storage writes meanwhile keeps the size it wrote.
        let known = index.withLock { $0.mapValues(\.size) }
        let listed = Set(
            ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
                .filter { $0.hasSuffix(".response") })
        let skipped = skipped.map { [$0] } ?? []
        // A name that is no regular file (removed since the listing, a folder or a link named like a response) is
        // not counted: it is no file this storage could have written, and none it would remove.
        let regular = listed.subtracting(skipped).compactMap { name -> (String, IndexEntry)? in
            guard let file = Self.regularFile(at: directory.appendingPathComponent(name)) else { return nil }
            return (name, IndexEntry(size: file.size, used: file.modified))
        }
        let present = Set(regular.map(\.0))
        index.withLock { index in
            for (name, entry) in regular {
                guard let knownSize = known[name] else {
                    if index[name] == nil { index[name] = entry }
                    continue
                }
                // Replaced by another storage, unless this one wrote it again since the snapshot.
                guard let current = index[name], current.size == knownSize, entry.size != knownSize else { continue }
                index[name] = IndexEntry(size: entry.size, used: max(current.used, entry.used))
            }
            for gone in Set(known.keys).subtracting(present).subtracting(skipped) { index[gone] = nil }
        }
    }

    /// Reads the key and resource of each file the index does not know yet (an earlier process or another storage
    /// on the folder wrote it), but `skipped`.
    private func readUnknownFiles(except skipped: String?) {
        catchUp(except: skipped)
        let unknown = index.withLock { index in index.filter { $0.value.key == nil && $0.key != skipped }.map(\.key) }
        for name in unknown {
            let file = directory.appendingPathComponent(name)
            let stored: Record?
            switch Self.contents(of: file, limit: maxBytes) {
            case .tooLarge:
                // Its key cannot be known without reading it, and the bound makes it go anyway: it goes now, rather
                // than stay when it is a response this removal should have removed.
                Self.removeFile(at: file)
                index.withLock { $0[name] = nil }
                continue
            case .read(let bytes, let identity):
                // A file that holds no record (cut short, emptied, overwritten) is no response: it goes.
                guard let record = try? JSONDecoder().decode(Record.self, from: bytes) else {
                    removeDamagedFile(name, identity: identity)
                    continue
                }
                stored = record
            case .unreadable: stored = nil
            }
            index.withLock { index in
                index[name]?.key = stored?.key ?? ""
                index[name]?.resources = stored?.response.resources
            }
        }
    }

    /// Removes the file `name`, read as `identity` and found to hold no record (cut short, emptied, overwritten),
    /// unless another storage on the folder has put a new file in its place since (which may be whole).
    private func removeDamagedFile(_ name: String, identity: FileIdentity) {
        let file = directory.appendingPathComponent(name)
        var status = stat()
        guard lstat(file.path, &status) == 0, FileIdentity(status) == identity else { return }
        _ = unlink(file.path)
        index.withLock { $0[name] = nil }
    }

    /// Which file a path named when it was read: its device and inode.
    private struct FileIdentity: Equatable {
        var device: UInt64
        var inode: UInt64

        init(_ status: stat) {
            device = UInt64(status.st_dev)
            inode = UInt64(status.st_ino)
        }
    }

    /// What reading a file found (``contents(of:limit:)``).
    private enum FileContents {
        /// Its bytes, and which file they are of.
        case read(Data, FileIdentity)
        /// A regular file larger than the limit: not read.
        case tooLarge
        /// None to read: gone, not a regular file (a named pipe, whose read would wait for a writer for ever; a
        /// device; a folder; a symbolic link), or a read that failed.
        case unreadable
    }

    /// The bytes of the regular file at `url`, read only if it holds at most `limit` bytes: a file in the folder may
    /// be anything another program put there, and only a file this storage could have written is worth reading.
    private static func contents(of url: URL, limit: Int) -> FileContents {
        // Not blocking: opening a named pipe for reading would wait for a writer. A regular file ignores the flag.
        let descriptor = open(url.path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return .unreadable }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return .unreadable }
        guard status.st_size <= limit else { return .tooLarge }
        // To its end, but never past `limit`: the file may grow while it is read.
        var data = Data(capacity: Int(status.st_size))
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { return .read(data, FileIdentity(status)) }
            if count < 0 {
                if errno == EINTR { continue }
                return .unreadable
            }
            data.append(contentsOf: buffer[..<count])
            if data.count > limit { return .tooLarge }
        }
    }

    /// Removes the files the index entries `isRemoved` picks.
    private func removeFiles(where isRemoved: (String, IndexEntry) -> Bool) {
        let names = index.withLock { index in index.filter { isRemoved($0.key, $0.value) }.map(\.key) }
        for name in names {
            Self.removeFile(at: directory.appendingPathComponent(name))
            index.withLock { $0[name] = nil }
        }
    }

    /// Forgets every response: their files go, with any the index does not know (written by another storage on the
    /// folder, or by a process that stopped while writing one).
    public func removeAll() {
        var names = Set(
            index.withLock { index -> [String] in
                defer { index.removeAll() }
                return Array(index.keys)
            })
        let present = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        names.formUnion(present.filter { $0.hasSuffix(".response") || Self.isTemporary($0) })
        for name in names { Self.removeFile(at: directory.appendingPathComponent(name)) }
    }

    /// The size and modification date of the regular file at `url`; `nil` for anything else (gone, a folder, a
    /// symbolic link, a named pipe), which the folder's other programs may have put there under any name.
    private static func regularFile(at url: URL) -> (size: Int, modified: Date)? {
        var status = stat()
        guard lstat(url.path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        #if canImport(Darwin)
            let modified = status.st_mtimespec
        #else
            let modified = status.st_mtim
        #endif
        return (
            Int(status.st_size),
            Date(timeIntervalSince1970: TimeInterval(modified.tv_sec) + TimeInterval(modified.tv_nsec) / 1e9)
        )
    }

    /// Writes `data` to a new file at `url`, readable and writable by the user only from its creation, and flushes it
    /// to the disk; `false` when the name is taken (by anything: `O_EXCL` follows no link) or a write fails (a full
    /// disk), the part written then removed. Written here rather than by Foundation, whose atomic write goes through a
    /// temporary file of its own (`.dat.nosync…`) that a crash leaves in the folder, where no storage knows to remove
    /// it or counts it; the only file a crash here leaves is this `.tmp` one, which opening the folder removes.
    private static func writeNewFile(_ data: Data, to url: URL) -> Bool {
        let descriptor = open(url.path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return false }
        let written = data.withUnsafeBytes { bytes -> Bool in
            guard let base = bytes.baseAddress else { return true }
            var offset = 0
            while offset < bytes.count {
                let count = write(descriptor, base + offset, bytes.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += count
            }
            return true
        }
        let synced = written && fsync(descriptor) == 0
        guard close(descriptor) == 0, synced else {
            _ = unlink(url.path)
            return false
        }
        return true
    }

    /// Removes the file at `url` if it is a regular file, as every file this storage writes is: never a folder named
    /// like a response with everything in it (a recursive removal would), a symbolic link or what it points to, or
    /// a named pipe; another program put those there. `unlink` never removes a folder, whatever happens between the
    /// check and the removal.
    private static func removeFile(at url: URL) {
        guard regularFile(at: url) != nil else { return }
        _ = unlink(url.path)
    }

    /// Whether `name` is a file ``store(_:forKey:)`` writes before renaming it into place.
    private static func isTemporary(_ name: String) -> Bool {
        name.hasPrefix(".") && name.hasSuffix(".tmp")
    }

    /// The bytes of the files it keeps.
    var totalBytes: Int { index.withLock { $0.values.reduce(0) { $0 + $1.size } } }

    /// What a file holds: the key (a file name is its digest) and the response.
    private struct Record: Codable {
        var key: String
        var response: StoredResponse
    }

    /// A file name from the SHA-256 of `key`: keys may hold any character, and a name says nothing of the URL.
    private static func fileName(forKey key: String) -> String {
        SHA256Hasher.hex(SHA256Hasher.hash(Data(key.utf8))) + ".response"
    }
}
