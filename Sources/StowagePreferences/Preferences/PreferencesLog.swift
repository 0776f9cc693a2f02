import CStowageShims
import Foundation
import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The file behind one preferences suite: a 4 KiB header shared through `mmap`, then records.
///
/// Header layout (little-endian): magic `STWPREF1` (8 bytes), format version (UInt32), unused
/// (UInt32), the committed end (UInt64: the offset where the last complete record ends), a
/// superseded flag (UInt64), and the store's generation (UInt64 at offset 32, see
/// `StoreGeneration`: its top bit is set when a wipe or cleaner removes the file). The header page is mapped `MAP_SHARED`, so a store to it is seen at
/// once by every process that has the file open.
///
/// - A writer takes the `flock` exclusively, appends a record after the committed end with one
///   `pwrite`, then advances the committed end with an atomic store. A set is durable against
///   the process being killed once `pwrite` returns (the bytes are in the kernel's page cache);
///   ``Preferences/Durability/powerLoss`` adds an `fdatasync` (`F_FULLFSYNC` on Apple platforms).
/// - Readers need no lock: every byte before the committed end is already written, and the only
///   rewrite is compaction, which writes a new file and renames it over this one after setting
///   the superseded flag here (so holders of this file reopen the path).
/// - Opening takes the lock exclusively, drops a damaged or uncommitted tail (its checksum tells)
///   and clears a superseded flag left by a compaction that died before its rename.
///
/// Not thread-safe: ``Preferences`` serialises calls with its mutex.
final class PreferencesLog {
    static let headerSize = 4096
    static let formatVersion: UInt32 = 1
    private static let magic: [UInt8] = Array("STWPREF1".utf8)
    private static let committedEndOffset = 16
    private static let supersededOffset = 24
    private static let generationOffset = 32

    let path: String
    let descriptor: Int32
    private let header: UnsafeMutableRawPointer
    private let inode: UInt64

    private init(path: String, descriptor: Int32, header: UnsafeMutableRawPointer, inode: UInt64) {
        self.path = path
        self.descriptor = descriptor
        self.header = header
        self.inode = inode
    }

    deinit {
        munmap(header, Self.headerSize)
        close(descriptor)
    }

    // MARK: - Shared header

    /// Where the last complete record ends (an offset in the file).
    var committedEnd: Int {
        Int(stowage_atomic_load_u64(header.advanced(by: Self.committedEndOffset).assumingMemoryBound(to: UInt64.self)))
    }

    private func storeCommittedEnd(_ end: Int) {
        stowage_atomic_store_u64(
            header.advanced(by: Self.committedEndOffset).assumingMemoryBound(to: UInt64.self),
            UInt64(end)
        )
    }

    /// Set by a compaction that replaced this file at ``path``.
    var isSuperseded: Bool {
        stowage_atomic_load_u64(header.advanced(by: Self.supersededOffset).assumingMemoryBound(to: UInt64.self)) != 0
    }

    private func storeSuperseded(_ value: Bool) {
        stowage_atomic_store_u64(
            header.advanced(by: Self.supersededOffset).assumingMemoryBound(to: UInt64.self),
            value ? 1 : 0
        )
    }

    /// Set when the file was removed as part of a store (a user wipe, a cleaner) while open:
    /// its values are gone for everyone.
    var isRetired: Bool {
        StoreGeneration.isRetired(
            stowage_atomic_load_u64(header.advanced(by: Self.generationOffset).assumingMemoryBound(to: UInt64.self))
        )
    }

    /// Whether ``path`` names a different file than this one (a compaction renamed over it).
    var isReplacedAtPath: Bool {
        var status = stat()
        guard stat(path, &status) == 0 else { return true }
        return UInt64(status.st_ino) != inode
    }

    // MARK: - Locking

    func lockExclusive() throws {
        try LockFile.lock(descriptor, .exclusive, path: path)
    }

    func unlock() {
        LockFile.unlock(descriptor)
    }

    /// Clears a superseded flag whose compaction never renamed its file (it died first).
    /// Call with the exclusive lock held.
    func clearStaleSupersededFlag() {
        if isSuperseded && !isReplacedAtPath { storeSuperseded(false) }
    }

    // MARK: - Reading

    /// The records in `[start, end)`, stopping at the first one that is incomplete or damaged.
    ///
    /// - Returns: The records, the offset after the last sound one, and why reading stopped
    ///   early (`nil` when it reached `end`).
    func readRecords(
        from start: Int,
        to end: Int
    ) throws -> (records: [PreferencesLogRecord], end: Int, stopped: String?) {
        guard end > start else { return ([], start, nil) }
        let (bytes, filled) = try readBytes(from: start, to: end)
        var records: [PreferencesLogRecord] = []
        var offset = 0
        var stopped: String?
        bytes.withUnsafeBytes { all in
            let available = UnsafeRawBufferPointer(rebasing: all[0..<filled])
            while offset < available.count {
                switch PreferencesLogRecord.read(from: UnsafeRawBufferPointer(rebasing: available[offset...])) {
                case .record(let record, let size):
                    records.append(record)
                    offset += size
                case .incomplete:
                    stopped = "an incomplete record at byte \(start + offset)"
                    return
                case .damaged(let reason):
                    stopped = "a damaged record at byte \(start + offset) (\(reason))"
                    return
                }
            }
            if filled < bytes.count { stopped = "the file ends at byte \(start + filled)" }
        }
        return (records, start + offset, stopped)
    }

    /// The bytes in `[start, end)` and how many of them the file had.
    private func readBytes(from start: Int, to end: Int) throws -> (bytes: [UInt8], filled: Int) {
        var bytes = [UInt8](repeating: 0, count: end - start)
        let filled = try bytes.withUnsafeMutableBytes {
            try FileDescriptorIO.read(
                into: $0,
                from: descriptor,
                at: start,
                action: "read the preferences file",
                path: path
            )
        }
        return (bytes, filled)
    }

    /// What ``scanRecords(from:to:)`` found.
    struct Scan {
        var records: [PreferencesLogRecord] = []
        /// The offset after the last sound record.
        var end: Int
        /// Stretches that held no sound record but were followed by sound ones.
        var regions: [PreferencesRecovery.DamagedRegion] = []
        /// The stretch after the last sound record, when the file does not end there.
        var tail: PreferencesRecovery.DamagedRegion?
    }

    /// Reads every sound record in `[start, end)`, skipping damaged stretches: after a record
    /// that does not parse, the next offset where a sound record starts — followed by another
    /// sound record, the end, or an incomplete one — is where reading resumes. A CRC-32C over the
    /// payload makes a false start at random bytes a one-in-four-billion event, and the
    /// successor check makes it rarer still.
    func scanRecords(from start: Int, to end: Int) throws -> Scan {
        guard end > start else { return Scan(end: start) }
        let (bytes, filled) = try readBytes(from: start, to: end)
        var scan = Scan(end: start)
        bytes.withUnsafeBytes { all in
            let available = UnsafeRawBufferPointer(rebasing: all[0..<filled])
            func read(_ offset: Int) -> PreferencesLogRecord.Read {
                PreferencesLogRecord.read(from: UnsafeRawBufferPointer(rebasing: available[offset...]))
            }
            func startsChain(_ offset: Int) -> Bool {
                guard case .record(_, let size) = read(offset) else { return false }
                let next = offset + size
                if next == available.count { return true }
                switch read(next) {
                case .record, .incomplete: return true
                case .damaged: return false
                }
            }
            var offset = 0
            while offset < available.count {
                let reason: String
                switch read(offset) {
                case .record(let record, let size):
                    scan.records.append(record)
                    offset += size
                    scan.end = start + offset
                    continue
                case .incomplete: reason = "an incomplete record"
                case .damaged(let why): reason = why
                }
                var probe = offset + 1
                while probe + PreferencesLogRecord.prefixSize <= available.count, !startsChain(probe) { probe += 1 }
                guard probe + PreferencesLogRecord.prefixSize <= available.count else {
                    scan.tail = .init(offset: start + offset, length: available.count - offset, reason: reason)
                    return
                }
                scan.regions.append(.init(offset: start + offset, length: probe - offset, reason: reason))
                offset = probe
            }
        }
        return scan
    }

    /// Copies the file, as it is, to `PATH.damaged-SECONDS` (`now`, in seconds since 1970)
    /// before a repair rewrites it.
    ///
    /// - Returns: The copy's path.
    func keepDamagedCopy(now: Date) throws -> String {
        let (bytes, filled) = try readBytes(from: 0, to: try fileSize())
        var copy = path + ".damaged-\(Int(now.timeIntervalSince1970))"
        var output = systemOpen(copy, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        var attempt = 1
        while output < 0 && errno == EEXIST && attempt < 100 {
            copy = path + ".damaged-\(Int(now.timeIntervalSince1970))-\(attempt)"
            output = systemOpen(copy, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
            attempt += 1
        }
        guard output >= 0 else { throw StowageError.syscall(.current, "keep a copy of the damaged file", path: copy) }
        defer { close(output) }
        try bytes[0..<filled].withUnsafeBytes {
            try FileDescriptorIO.writeAll($0, to: output, action: "keep a copy of the damaged file", path: copy)
        }
        try FileDescriptorIO.synchronize(output, action: "flush the damaged copy", path: copy)
        return copy
    }

    // MARK: - Writing

    /// Appends `record` after the committed end and commits it. Call with the exclusive lock
    /// held and after catching up to the committed end.
    ///
    /// - Throws: `StowageError` (`.noSpace` on a full volume); the committed end then stays,
    ///   so the partial bytes are never read.
    func append(_ record: [UInt8], synchronously: Bool) throws -> Int {
        let end = committedEnd
        try record.withUnsafeBytes {
            try FileDescriptorIO.writeAll(
                $0,
                to: descriptor,
                at: end,
                action: "append to the preferences file",
                path: path
            )
        }
        if synchronously { try flush() }
        storeCommittedEnd(end + record.count)
        if synchronously { try flush() }
        return end + record.count
    }

    /// Writes the file's data and header to the device (`fdatasync` on Linux, `F_FULLFSYNC` on
    /// Apple platforms).
    func flush() throws {
        try FileDescriptorIO.synchronize(descriptor, dataOnly: true, action: "flush the preferences file", path: path)
    }

    /// Makes `end` the committed end and cuts the file there: used at open to drop a damaged
    /// or uncommitted tail. Call with the exclusive lock held.
    func truncate(to end: Int) throws {
        storeCommittedEnd(end)
        guard ftruncate(descriptor, off_t(end)) == 0 else {
            throw StowageError.syscall(.current, "truncate the preferences file", path: path)
        }
    }

    /// The file's size in bytes.
    func fileSize() throws -> Int {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw StowageError.syscall(.current, "inspect the preferences file", path: path)
        }
        return Int(status.st_size)
    }

    // MARK: - Opening and compaction

    /// Opens the log at `path`, creating an empty one if there is none. Does not lock.
    ///
    /// - Throws: `StowageError` `.corrupt` when the file is not a Stowage preferences file,
    ///   `.unsupported` when a newer format wrote it.
    static func open(path: String) throws -> PreferencesLog {
        while true {
            let descriptor = systemOpen(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
            if descriptor < 0 {
                guard errno == ENOENT else {
                    throw StowageError.syscall(.current, "open the preferences file", path: path)
                }
                try createEmpty(at: path)
                continue
            }
            do {
                return try map(descriptor: descriptor, path: path)
            } catch {
                close(descriptor)
                throw error
            }
        }
    }

    private static func map(descriptor: Int32, path: String) throws -> PreferencesLog {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw StowageError.syscall(.current, "inspect the preferences file", path: path)
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw StowageError(
                code: .invalidArgument,
                message: "the preferences file \(path) is not a regular file; remove it or choose another suite",
                path: path
            )
        }
        guard Int(status.st_size) >= headerSize else {
            throw StowageError(
                code: .corrupt,
                message: """
                    the preferences file \(path) is \(status.st_size) bytes, shorter than its \(headerSize)-byte \
                    header: it was truncated or is not a Stowage preferences file; move it aside to start empty
                    """,
                path: path
            )
        }
        guard let mapping = mmap(nil, headerSize, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0),
            mapping != MAP_FAILED
        else { throw StowageError.syscall(.current, "map the preferences file's header", path: path) }
        let header = UnsafeMutableRawPointer(mapping)
        let magicMatches = (0..<magic.count).allSatisfy { header.load(fromByteOffset: $0, as: UInt8.self) == magic[$0] }
        let version = UInt32(littleEndian: header.load(fromByteOffset: 8, as: UInt32.self))
        guard magicMatches, version >= 1 else {
            munmap(mapping, headerSize)
            throw StowageError(
                code: .corrupt,
                message: """
                    \(path) is not a Stowage preferences file (its header is wrong); move it aside to start \
                    empty, or open the file it was meant to be
                    """,
                path: path
            )
        }
        guard version <= formatVersion else {
            munmap(mapping, headerSize)
            throw StowageError(
                code: .unsupported,
                message: """
                    \(path) was written in preferences format \(version) by a newer Stowage (this one reads up \
                    to \(formatVersion)); upgrade Stowage to read it
                    """,
                path: path
            )
        }
        return PreferencesLog(path: path, descriptor: descriptor, header: header, inode: UInt64(status.st_ino))
    }

    /// Creates an empty log at `path` without ever exposing a half-written header: the file is
    /// written under a temporary name and linked into place, which fails harmlessly when another
    /// process created it first.
    private static func createEmpty(at path: String) throws {
        let file = try writeFile(at: path, records: [])
        do {
            // `false`: another process created it first.
            // Flushed with its directory: a log whose name a power loss takes back would take
            // every flushed append with it.
            _ = try file.commitIfAbsent(to: path, durability: .synchronized, action: "create the preferences file")
        } catch let error as StowageError where error.code == .notFound {
            // The temporary went before the link. Opens remove only temporaries of processes
            // that are gone, so only one that cannot see this process (another PID namespace:
            // a container sharing the directory) gets here; the caller looks at the path again.
        }
    }

    /// Writes a complete log (header and `records`) to a temporary file beside `path` and
    /// flushes it; committing (or dropping) it is the caller's.
    private static func writeFile(at path: String, records: [[UInt8]]) throws -> TemporaryFile {
        let file = try TemporaryFile(beside: path, permissions: 0o600)
        var contents = [UInt8](repeating: 0, count: headerSize)
        contents.replaceSubrange(0..<magic.count, with: magic)
        let end = headerSize + records.reduce(0) { $0 + $1.count }
        contents.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: formatVersion.littleEndian, toByteOffset: 8, as: UInt32.self)
            bytes.storeBytes(of: UInt64(end).littleEndian, toByteOffset: committedEndOffset, as: UInt64.self)
        }
        contents.reserveCapacity(end)
        for record in records { contents.append(contentsOf: record) }
        try file.write(contents, action: "write a temporary preferences file")
        try file.synchronize(action: "flush a temporary preferences file")
        return file
    }

    /// Rewrites the log as one record per value, replacing this file at ``path``, and returns
    /// the new log. Call with the exclusive lock held; this log is superseded afterwards.
    func compacted(values: [String: PreferenceValue]) throws -> PreferencesLog {
        let records = values.keys.sorted().map { PreferencesLogRecord.set(key: $0, value: values[$0]!).encoded() }
        let file = try Self.writeFile(at: path, records: records)
        let descriptor = systemOpen(file.path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else {
            throw StowageError.syscall(.current, "reopen the compacted preferences file", path: file.path)
        }
        let log: PreferencesLog
        do {
            log = try Self.map(descriptor: descriptor, path: path)
        } catch {
            close(descriptor)
            throw error
        }
        // Flag first: if the rename never happens, openers find the same file and clear it.
        storeSuperseded(true)
        do {
            // `.synchronized` for the directory: a rename a power loss takes back would bring the
            // old log back without the appends flushed to this one since.
            try file.commit(to: path, durability: .synchronized, action: "replace the preferences file")
        } catch {
            storeSuperseded(false)
            throw error
        }
        return log
    }
}

/// `open(2)`, named so that ``PreferencesLog/open(path:)`` does not shadow it.
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
    open(path, flags, mode)
}
