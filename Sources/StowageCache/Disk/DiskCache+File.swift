import Foundation
import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// File access for decoders, `mmap` and `sendfile`: the value's file handed over open, without
// copying it into memory. SDWebImage's `defaultCachePathForKey:` gives a path instead, which a
// concurrent store overwrites under the reader; here a value file is never rewritten in place
// (a replacement is a new file renamed over it, a trim an unlink), so an open descriptor keeps
// reading the value it opened, whatever happens to the key meanwhile.

extension DiskCache {
    /// A stored value as an open, read-only file: what
    /// `withFile(forKey:verifyingChecksum:_:)` hands its closure.
    ///
    /// Valid only while that closure runs: the descriptor is closed when it returns. It pins the
    /// value: a concurrent replacement, removal or trim of the key (in this process or another)
    /// unlinks the file's name, not the open file, so the closure reads the value it was given to
    /// the end; the next read of the key sees the new value.
    public struct ValueFile: Sendable {
        /// An open, read-only descriptor of the value's bytes, at offset 0. Read it, `mmap` it or
        /// `sendfile` from it; don't close it, and don't keep it past the closure.
        public let descriptor: Int32
        /// The value's length in bytes.
        public let size: Int64
        /// Whether the value lived inside the index (at most
        /// ``DiskCache/Configuration/inlineThreshold`` bytes) and was copied into an unnamed
        /// temporary file for this call.
        public let isCopy: Bool

        /// A path that opens this same file while the closure runs, even after a concurrent
        /// replacement or trim has unlinked its name: `/proc/self/fd/N` on Linux, `/dev/fd/N` on
        /// Apple platforms. For APIs that take a path or a URL (an image decoder); there is no
        /// stable path to a stored value, because replacements are atomic renames of new files.
        ///
        /// On Apple platforms opening `/dev/fd/N` duplicates the descriptor, sharing its file
        /// offset: read at explicit offsets (`pread`, `mmap`) there.
        public var path: String {
            #if os(Linux)
            "/proc/self/fd/\(descriptor)"
            #else
            "/dev/fd/\(descriptor)"
            #endif
        }

        /// ``path`` as a file URL.
        public var url: URL { URL(fileURLWithPath: path, isDirectory: false) }
    }

    /// Hands the value of `key` to `body` as an open file, without reading it into memory.
    ///
    /// ```swift
    /// let image = try cache.withFile(forKey: "avatar/42") { file in
    ///     try decoder.decode(contentsOf: file.url)   // or mmap(file.descriptor), sendfile(…)
    /// }
    /// ```
    ///
    /// A value stored inline (small values, inside the index) is copied into an unnamed temporary
    /// file first, so every value can be handed over the same way (``ValueFile/isCopy``).
    ///
    /// - Parameters:
    ///   - key: The value's key.
    ///   - verifyingChecksum: Whether the file is read once and its CRC-32C compared with the
    ///     one stored with it before `body` runs (default `true`). A damaged value is removed and
    ///     is a miss, as `data(forKey:)` treats it. Pass `false` to skip that pass when the
    ///     reader checks the bytes itself (a decoder that rejects a truncated image): `body` may
    ///     then see damaged bytes.
    ///   - body: Runs with the pinned file; its result is returned.
    /// - Returns: `body`'s result, or `nil` for a miss (absent, expired or damaged), when `body`
    ///   does not run.
    /// - Throws: `StowageError` when the index or the file cannot be read, or what `body` throws.
    public func withFile<Result>(
        forKey key: String,
        verifyingChecksum: Bool = true,
        _ body: (ValueFile) throws -> Result
    ) throws -> Result? {
        guard let file = try openValueFile(forKey: key, verifyingChecksum: verifyingChecksum) else { return nil }
        defer { FileDescriptorIO.close(file.descriptor) }
        return try body(file)
    }

    /// See `withFile(forKey:verifyingChecksum:_:)`: the file is opened (and checked) on
    /// the blocking-work pool, then `body` runs on the calling task.
    public func withFile<Result>(
        forKey key: String,
        verifyingChecksum: Bool = true,
        _ body: (ValueFile) async throws -> Result
    ) async throws -> Result? {
        let opened = try await BlockingWork.run {
            try self.openValueFile(forKey: key, verifyingChecksum: verifyingChecksum)
        }
        guard let file = opened else { return nil }
        defer { FileDescriptorIO.close(file.descriptor) }
        return try await body(file)
    }

    /// Opens `key`'s value for `withFile(forKey:verifyingChecksum:_:)`: `nil` for a
    /// miss, with hits and misses counted as reads count them.
    private func openValueFile(forKey key: String, verifyingChecksum: Bool) throws -> ValueFile? {
        let now = configuration.clock.now().timeIntervalSince1970
        let entry: DiskCacheIndex.Entry
        switch try lookUp(key: key, now: now) {
        case .done(let stored):
            return try stored.map { try copyToUnnamedFile($0.data) }
        case .needsBlockingWork(let found):
            entry = found
        }
        guard let name = entry.file else {
            // An inline value that failed its checks: removed and counted as a miss.
            return try finishLookUp(key: key, entry: entry, now: now).map { try copyToUnnamedFile($0.data) }
        }
        guard let descriptor = try files.openValue(name, expectedSize: entry.size) else {
            let isGone = files.isGone(name)
            try discardDamaged(
                key: key,
                entry: entry,
                reason: isGone ? "file gone" : "not a regular file of the recorded size",
                isDamage: !isGone
            )
            counters.recordMiss()
            return nil
        }
        do {
            // Opened with O_NONBLOCK (a FIFO in a value's place must not hang the open); the
            // reader gets an ordinary blocking descriptor.
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
            if verifyingChecksum, let expected = entry.checksum {
                let actual = try Self.checksum(ofFile: descriptor, size: entry.size, path: files.path(of: name))
                guard actual == expected else {
                    FileDescriptorIO.close(descriptor)
                    try discardDamaged(key: key, entry: entry, reason: "checksum mismatch")
                    counters.recordMiss()
                    return nil
                }
            }
        } catch {
            FileDescriptorIO.close(descriptor)
            throw error
        }
        counters.recordHit(bytes: Int(clamping: entry.size))
        recordAccess(key: key, at: now)
        return ValueFile(descriptor: descriptor, size: entry.size, isCopy: false)
    }

    /// CRC-32C of the first `size` bytes of `descriptor`, read at explicit offsets (the
    /// descriptor's own offset stays at 0 for the reader); a shorter file is damage.
    private static func checksum(ofFile descriptor: Int32, size: Int64, path: String) throws -> UInt32? {
        let chunk = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        var crc: UInt32 = 0
        while offset < size {
            let wanted = Int(min(Int64(chunk), size - offset))
            let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[..<wanted])
            let count = try FileDescriptorIO.read(
                into: slice,
                from: descriptor,
                at: Int(offset),
                action: "read cache file",
                path: path
            )
            guard count == wanted else { return nil }
            crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[..<count]), continuing: crc)
            offset += Int64(count)
        }
        return crc
    }

    /// An inline value as an unnamed file under the cache's `tmp/`: created, written, unlinked
    /// at once (nothing is left behind, even if the process dies) and rewound.
    private func copyToUnnamedFile(_ data: Data) throws -> ValueFile {
        let descriptor = try TemporaryFile.unnamed(in: files.temporary, action: "create temporary file")
        let temporary = files.temporaryDirectory + " (unnamed file)"
        do {
            try data.withUnsafeBytes {
                try FileDescriptorIO.writeAll($0, to: descriptor, action: "write temporary file", path: temporary)
            }
            guard lseek(descriptor, 0, SEEK_SET) == 0 else {
                throw StowageError.syscall(.current, "rewind temporary file", path: temporary)
            }
        } catch {
            FileDescriptorIO.close(descriptor)
            throw error
        }
        return ValueFile(descriptor: descriptor, size: Int64(data.count), isCopy: true)
    }
}
