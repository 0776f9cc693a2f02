import Foundation
import StowageCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Streaming access for values too large to hold whole in memory (the HTTP cache's bodies):
// a value is written piece by piece to a temporary file and becomes visible only at `commit`,
// with the same rename-then-index order as `setData`; a read hands out an open descriptor, so
// a value replaced or trimmed meanwhile still reads back whole (the unlinked file lives on).

extension DiskCache {
    /// A value being written in pieces; nothing is visible until ``commit(timeToLive:)``.
    ///
    /// Used by one task at a time. Dropping it without committing removes the temporary file.
    package final class StreamingWrite: Sendable {
        private let cache: DiskCache
        private let key: String
        private let temporary: String
        private let state: Mutex<(descriptor: Int32, size: Int64, finished: Bool)>

        fileprivate init(cache: DiskCache, key: String) throws {
            self.cache = cache
            self.key = key
            temporary = cache.files.temporaryPath()
            let descriptor = openFile(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else {
                throw StowageError.syscall(.current, "create cache file", path: temporary)
            }
            state = Mutex((descriptor, 0, false))
        }

        deinit { cancel() }

        /// The bytes written so far.
        package var size: Int64 { state.withLock { $0.size } }

        /// Appends `bytes` to the value.
        package func write(_ bytes: UnsafeRawBufferPointer) throws {
            try state.withLock { state in
                guard !state.finished else {
                    throw StowageError.invalidArgument("the streaming write of '\(key)' is already finished")
                }
                try FileDescriptorIO.writeAll(bytes, to: state.descriptor, action: "write cache file", path: temporary)
                state.size += Int64(bytes.count)
            }
        }

        /// Makes the value visible under its key, replacing any previous value.
        ///
        /// - Parameter timeToLive: Seconds until the value expires; `nil` uses the cache's default.
        package func commit(timeToLive: TimeInterval? = nil) throws {
            let size: Int64 = try state.withLock { state in
                guard !state.finished else {
                    throw StowageError.invalidArgument("the streaming write of '\(key)' is already finished")
                }
                state.finished = true
                defer { close(state.descriptor) }
                if cache.configuration.synchronousWrites, fsync(state.descriptor) != 0 {
                    unlink(temporary)
                    throw StowageError.syscall(.current, "flush cache file", path: temporary)
                }
                return state.size
            }
            let name = DiskCacheFileName.make(forKey: key)
            do {
                try cache.files.moveIntoPlace(temporary, as: name)
            } catch {
                unlink(temporary)
                throw error
            }
            try cache.recordFile(name, size: size, forKey: key, timeToLive: timeToLive)
        }

        /// Abandons the value and removes what was written.
        package func cancel() {
            state.withLock { state in
                guard !state.finished else { return }
                state.finished = true
                close(state.descriptor)
                unlink(temporary)
            }
        }
    }

    /// A value opened for reading: small values come whole, large ones as an open file.
    package enum OpenedValue: Sendable {
        /// A value that lives in the index.
        case data(Data)
        /// A value in a file, already open; read it with ``FileReader/read(upTo:)``.
        case file(FileReader)
    }

    /// An open value file, read sequentially; closed when released.
    package final class FileReader: Sendable {
        /// The value's length in bytes.
        package let size: Int64
        private let descriptor: Int32
        private let path: String

        fileprivate init(descriptor: Int32, size: Int64, path: String) {
            self.descriptor = descriptor
            self.size = size
            self.path = path
        }

        deinit { close(descriptor) }

        /// The next at most `count` bytes; empty at the end.
        package func read(upTo count: Int) throws -> [UInt8] {
            var buffer = [UInt8](repeating: 0, count: count)
            let received = try buffer.withUnsafeMutableBytes { raw in
                let result = readBytes(descriptor, raw.baseAddress, count)
                guard result >= 0 else { throw StowageError.syscall(.current, "read cache file", path: path) }
                return result
            }
            buffer.removeLast(count - received)
            return buffer
        }
    }

    /// Starts writing the value of `key` in pieces.
    package func beginStreamingWrite(forKey key: String) throws -> StreamingWrite {
        try StreamingWrite(cache: self, key: key)
    }

    /// Opens the value of `key` for reading without loading a file value into memory.
    ///
    /// - Returns: `nil` for a miss (absent, expired, or a file that is gone or has the wrong length).
    package func openValueBlocking(forKey key: String) throws -> OpenedValue? {
        let now = configuration.clock.now().timeIntervalSince1970
        guard let entry = try indexCall({ try index.entry(forKey: key) }), !isExpired(entry, key: key, now: now) else {
            counters.recordMiss()
            return nil
        }
        guard let file = entry.file else {
            let value =
                entry.inline.flatMap { Int64($0.count) == entry.size ? $0 : nil } ?? (entry.size == 0 ? Data() : nil)
            guard let value else {
                counters.recordMiss()
                return nil
            }
            counters.recordHit()
            recordAccess(key: key, at: now)
            return .data(value)
        }
        let path = files.path(of: file)
        let descriptor = openFile(path, O_RDONLY | O_CLOEXEC, 0)
        guard descriptor >= 0 else {
            if errno == ENOENT {
                counters.recordMiss()
                return nil
            }
            throw StowageError.syscall(.current, "open cache file", path: path)
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0, Int64(status.st_size) == entry.size else {
            close(descriptor)
            counters.recordMiss()
            return nil
        }
        counters.recordHit()
        recordAccess(key: key, at: now)
        return .file(FileReader(descriptor: descriptor, size: entry.size, path: path))
    }

    /// Points `key` at the complete file `name` under `data/` (as ``setDataBlocking(_:forKey:timeToLive:)`` does).
    fileprivate func recordFile(_ name: String, size: Int64, forKey key: String, timeToLive: TimeInterval?) throws {
        let now = configuration.clock.now().timeIntervalSince1970
        let lifetime = timeToLive ?? configuration.defaultTimeToLive
        let entry = DiskCacheIndex.Entry(
            file: name,
            inline: nil,
            size: size,
            created: now,
            modified: now,
            accessed: now,
            expires: lifetime.map { now + $0 }
        )
        try commit(entry, forKey: key)
    }
}

#if canImport(Glibc)
private let readBytes = Glibc.read
private func openFile(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { Glibc.open(path, flags, mode) }
#elseif canImport(Darwin)
private let readBytes = Darwin.read
private func openFile(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { Darwin.open(path, flags, mode) }
#endif
