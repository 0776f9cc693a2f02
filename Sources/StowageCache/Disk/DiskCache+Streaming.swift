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
        private let state: Mutex<State>

        private struct State: ~Copyable {
            /// The temporary file, `nil` once committed or cancelled.
            var file: TemporaryFile?
            var size: Int64 = 0
            var checksum: UInt32 = 0
        }

        fileprivate init(cache: DiskCache, key: String) throws {
            self.cache = cache
            self.key = key
            state = Mutex(State(file: try cache.files.makeTemporaryFile()))
        }

        deinit { cancel() }

        /// The bytes written so far.
        package var size: Int64 { state.withLock { $0.size } }

        /// Appends `bytes` to the value.
        package func write(_ bytes: UnsafeRawBufferPointer) throws {
            try cache.checkOpen()
            try state.withLock { state in
                guard state.file != nil else { throw finishedError() }
                try state.file!.write(bytes, action: "write cache file")
                state.size += Int64(bytes.count)
                state.checksum = CRC32C.checksum(bytes, continuing: state.checksum)
            }
        }

        /// Makes the value visible under its key, replacing any previous value.
        ///
        /// - Parameter timeToLive: Seconds until the value expires; `nil` uses the cache's default.
        package func commit(timeToLive: TimeInterval? = nil) throws {
            let name = DiskCacheFileName.make(forKey: key)
            let (size, checksum): (Int64, UInt32) = try state.withLock { state in
                guard let file = state.file.take() else { throw finishedError() }
                // After close() the value goes with its temporary (dropped here), never into data/.
                try cache.checkOpen()
                try cache.files.moveIntoPlace(file, as: name)
                return (state.size, state.checksum)
            }
            try cache.recordFile(name, size: size, checksum: checksum, forKey: key, timeToLive: timeToLive)
        }

        /// Abandons the value and removes what was written.
        package func cancel() {
            // Dropping the temporary file closes and removes it.
            _ = state.withLock { $0.file.take() }
        }

        private func finishedError() -> StowageError {
            StowageError.invalidArgument("the streaming write of '\(key)' is already finished")
        }
    }

    /// A value opened for reading: small values come whole, large ones as an open file.
    package enum OpenedValue: Sendable {
        /// A value that lives in the index.
        case data(Data)
        /// A value in a file, already open; read it with ``FileReader/read(upTo:)``.
        case file(FileReader)

        /// `value` without its modification date.
        fileprivate init(_ value: StoredValue) {
            switch value {
            case .whole(let stored): self = .data(stored.data)
            case .file(let reader): self = .file(reader)
            }
        }
    }

    /// A value opened for reading with what a read through the levels needs of it: a value read
    /// whole comes with its modification date (a copy older than the shared level's horizon is
    /// confirmed before use), a larger one as an open file.
    package enum StoredValue: Sendable {
        /// The whole value and when it was stored.
        case whole(StoredData)
        /// A value in a file, already open; read it with ``FileReader/read(upTo:)``.
        case file(FileReader)

        /// The value's length in bytes.
        package var byteCount: Int {
            switch self {
            case .whole(let stored): stored.data.count
            case .file(let reader): Int(reader.size)
            }
        }
    }

    /// An open value file, read sequentially; closed when released.
    ///
    /// The value's checksum is computed as it is read and compared at the end: bytes already
    /// handed out cannot be taken back, so damage found there ends the read with a `.corrupt`
    /// error (a cut response, never a complete wrong one) and removes the entry.
    package final class FileReader: Sendable {
        /// The value's length in bytes.
        package let size: Int64
        private let descriptor: Int32
        private let path: String
        private let check: (cache: DiskCache, key: String, entry: DiskCacheIndex.Entry)
        private let progress = Mutex((read: Int64(0), checksum: UInt32(0)))

        fileprivate init(descriptor: Int32, path: String, cache: DiskCache, key: String, entry: DiskCacheIndex.Entry) {
            self.descriptor = descriptor
            self.size = entry.size
            self.path = path
            self.check = (cache, key, entry)
        }

        deinit { FileDescriptorIO.close(descriptor) }

        /// The next at most `count` bytes; empty at the end.
        ///
        /// - Throws: `StowageError` `.corrupt` when the value's bytes, read to the end, do not
        ///   have the checksum stored with them, or the file is shorter than recorded.
        package func read(upTo count: Int) throws -> [UInt8] {
            var buffer = [UInt8](repeating: 0, count: count)
            let received = try buffer.withUnsafeMutableBytes { raw in
                try FileDescriptorIO.read(into: raw, from: descriptor, action: "read cache file", path: path)
            }
            buffer.removeLast(count - received)
            let (total, checksum) = progress.withLock { progress in
                progress.read += Int64(received)
                progress.checksum = CRC32C.checksum(buffer, continuing: progress.checksum)
                return progress
            }
            let isEnd = received == 0 || total == size
            if isEnd, total != size || (check.entry.checksum.map { $0 != checksum } ?? false) {
                try check.cache.discardDamaged(key: check.key, entry: check.entry, reason: "checksum mismatch")
                throw StowageError(
                    code: .corrupt,
                    message: "the cache value of \(PathInput.quoted(check.key)) in '\(path)' is damaged (its bytes "
                        + "do not match the checksum stored with them); it was removed and will be fetched again",
                    path: path
                )
            }
            return buffer
        }
    }

    /// Starts writing the value of `key` in pieces.
    package func beginStreamingWrite(forKey key: String) throws -> StreamingWrite {
        try Self.checkStorable(key: key, tag: nil)
        try checkOpen()
        return try StreamingWrite(cache: self, key: key)
    }

    /// Opens the value of `key` for reading without loading a file value into memory.
    ///
    /// - Returns: `nil` for a miss (absent, expired, or a file that is gone or has the wrong length).
    package func openValue(forKey key: String) throws -> OpenedValue? {
        let now = configuration.clock.now().timeIntervalSince1970
        switch try lookUp(key: key, now: now) {
        case .done(let stored):
            return stored.map { .data($0.data) }
        case .needsBlockingWork(let entry):
            return try open(entry, forKey: key, now: now).map(OpenedValue.init)
        }
    }

    /// The rest of `openValue(forKey:)` once the index found `entry`: the value file
    /// opened, or an inline value that failed its checks removed.
    private func open(_ entry: DiskCacheIndex.Entry, forKey key: String, now: Double) throws -> StoredValue? {
        guard let file = entry.file else {
            // An inline value that failed its checks: removed and counted as a miss.
            return try finishLookUp(key: key, entry: entry, now: now).map { .whole($0) }
        }
        guard let descriptor = try files.openValue(file, expectedSize: entry.size) else {
            if !files.isGone(file) {
                try discardDamaged(key: key, entry: entry, reason: "not a regular file of the recorded size")
            }
            counters.recordMiss()
            return nil
        }
        counters.recordHit(bytes: Int(entry.size))
        recordAccess(key: key, at: now)
        return .file(
            FileReader(descriptor: descriptor, path: files.path(of: file), cache: self, key: key, entry: entry)
        )
    }

    /// Opens the value of `key` for serving: a value of at most `wholeLimit` bytes comes whole
    /// (an inline one without leaving the caller, a file one in one hop and one buffer, its
    /// checksum checked), a larger one as an open file to stream.
    ///
    /// - Returns: `nil` for a miss, as the synchronous `openValue(forKey:)`.
    package func openValue(forKey key: String, readingWholeUpTo wholeLimit: Int64) async throws -> OpenedValue? {
        try await openStoredValue(forKey: key, readingWholeUpTo: wholeLimit).map(OpenedValue.init)
    }

    /// ``openValue(forKey:readingWholeUpTo:)`` with the modification date of a value read whole
    /// (`Int64.max`: every value whole, as ``storedData(forKey:)`` reads it, at the same cost).
    package func openStoredValue(forKey key: String, readingWholeUpTo wholeLimit: Int64) async throws -> StoredValue? {
        let now = configuration.clock.now().timeIntervalSince1970
        switch try lookUp(key: key, now: now) {
        case .done(let stored):
            return stored.map { .whole($0) }
        case .needsBlockingWork(let entry) where entry.file == nil || entry.size <= wholeLimit:
            return try await BlockingWork.run { try self.finishLookUp(key: key, entry: entry, now: now) }
                .map { .whole($0) }
        case .needsBlockingWork(let entry):
            return try await BlockingWork.run { try self.open(entry, forKey: key, now: now) }
        }
    }

    /// Points `key` at the complete file `name` under `data/` (as ``setData(_:forKey:timeToLive:)`` does).
    fileprivate func recordFile(
        _ name: String,
        size: Int64,
        checksum: UInt32,
        forKey key: String,
        timeToLive: TimeInterval?
    ) throws {
        let now = configuration.clock.now().timeIntervalSince1970
        let lifetime = timeToLive ?? configuration.defaultTimeToLive?.timeInterval
        let entry = DiskCacheIndex.Entry(
            file: name,
            inline: nil,
            size: size,
            created: now,
            modified: now,
            accessed: now,
            expires: lifetime.map { now + $0 },
            checksum: checksum
        )
        try commit(entry, forKey: key)
    }
}
