import Foundation
import GRDB
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageCache

#if canImport(Glibc)
import Glibc
#endif

/// Damaged bytes are a miss, never a wrong answer. Every value carries a
/// CRC-32C verified on read; value files are opened without following links and without
/// blocking, and must be regular files.
@Suite("DiskCache integrity")
struct DiskCacheIntegrityTests {
    /// 200 values, half inline (100 B), half in files (20 KB), each bytes derived from its key.
    static func fill(_ cache: DiskCache) throws -> [String: Data] {
        var values: [String: Data] = [:]
        for index in 0..<200 {
            let size = index % 2 == 0 ? 100 : 20_000
            let value = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) })
            values["k\(index)"] = value
            try cache.setData(value, forKey: "k\(index)")
        }
        return values
    }

    @Test("inline values garbled in place (same length) are misses, counted and removed; the rest read right")
    func garbledInline() throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let cache = try DiskCache(directory: directory)
        let values = try Self.fill(cache)
        let garbled = ["k0", "k10", "k20", "k30", "k40"]
        try DatabaseQueue(path: directory.appending(path: "index.sqlite").path).write { db in
            for key in garbled {
                var bytes = [UInt8](values[key]!)
                bytes[50] ^= 0x01
                try db.execute(sql: "UPDATE entry SET inline = ? WHERE key = ?", arguments: [Data(bytes), key])
            }
        }
        for (key, value) in values {
            let read = try cache.data(forKey: key)
            if garbled.contains(key) {
                #expect(read == nil, "\(key) must be a miss, never the garbled bytes")
            } else {
                #expect(read == value, "\(key)")
            }
        }
        #expect(cache.statistics.damaged == garbled.count)
        for key in garbled { #expect(try cache.contains(key: key) == false, "removed: \(key)") }
    }

    @Test("value files garbled in place (same length) are misses; none is served wrong")
    func garbledFiles() throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let cache = try DiskCache(directory: directory)
        let values = try Self.fill(cache)
        let files = try DatabaseQueue(path: directory.appending(path: "index.sqlite").path).read { db in
            try Row.fetchAll(db, sql: "SELECT key, file FROM entry WHERE file IS NOT NULL ORDER BY key LIMIT 20")
                .map { ($0[0] as String, $0[1] as String) }
        }
        for (_, file) in files {
            let path = directory.path(percentEncoded: false) + "/data/" + file
            let descriptor = open(path, O_WRONLY)
            var byte: UInt8 = 0xEE
            #expect(pwrite(descriptor, &byte, 1, 10_000) == 1)
            close(descriptor)
        }
        var wrong = 0
        for (key, value) in values {
            if let read = try cache.data(forKey: key), read != value { wrong += 1 }
        }
        #expect(wrong == 0)
        #expect(cache.statistics.damaged == files.count)
    }

    @Test("a directory in a value file's place is a miss, and is collected: no name is damaged for good")
    func directoryInValuePlace() throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        var cache: DiskCache? = try DiskCache(directory: directory)
        try cache?.setData(Data(repeating: 1, count: 30_000), forKey: "v")
        let file = try #require(
            try DatabaseQueue(path: directory.appending(path: "index.sqlite").path).read { db in
                try String.fetchOne(db, sql: "SELECT file FROM entry WHERE key = 'v'")
            }
        )
        let path = directory.path(percentEncoded: false) + "/data/" + file
        #expect(unlink(path) == 0)
        #expect(mkdir(path, 0o700) == 0)
        #expect(try cache?.data(forKey: "v") == nil)
        #expect(cache?.statistics.damaged == 1)
        #expect(!FileManager.default.fileExists(atPath: path), "the damaged entry's directory is removed with it")
        // One planted where no entry points: collected as an orphan when the cache opens.
        let orphan = directory.path(percentEncoded: false) + "/data/" + file.prefix(2) + "/orphan"
        #expect(mkdir(orphan, 0o700) == 0)
        // Closed, not only dropped: a dropped handle keeps its process lock until its last
        // reference goes (a job on its maintenance lane may hold one on a loaded machine), and an
        // open beside another user spares files younger than the orphan grace period.
        try cache?.close()
        cache = nil
        cache = try DiskCache(directory: directory)
        #expect(!FileManager.default.fileExists(atPath: orphan), "an orphan directory is collected")
        try cache?.setData(Data(repeating: 2, count: 30_000), forKey: "v")
        #expect(try cache?.data(forKey: "v") == Data(repeating: 2, count: 30_000))
    }

    @Test("a value file replaced by a symbolic link to an outside file of the same size is a miss")
    func symlinkedFile() throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let cache = try DiskCache(directory: directory)
        try cache.setData(Data(repeating: 1, count: 30_000), forKey: "v")
        let file = try #require(
            try DatabaseQueue(path: directory.appending(path: "index.sqlite").path).read { db in
                try String.fetchOne(db, sql: "SELECT file FROM entry WHERE key = 'v'")
            }
        )
        let outside = scratch.url.appending(path: "secret")
        try Data(repeating: 9, count: 30_000).write(to: outside)
        let path = directory.path(percentEncoded: false) + "/data/" + file
        unlink(path)
        #expect(symlink(outside.path(percentEncoded: false), path) == 0)
        #expect(try cache.data(forKey: "v") == nil, "the outside file's bytes must never be served")
        #expect(cache.statistics.damaged == 1)
        #expect(try Data(contentsOf: outside) == Data(repeating: 9, count: 30_000), "the outside file is untouched")
    }

    @Test(
        "a hash subdirectory replaced by a link to an outside directory: reads miss, writes and removals never reach it"
    )
    func symlinkedSubdirectory() throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let cache = try DiskCache(directory: directory)
        try cache.setData(Data(repeating: 1, count: 30_000), forKey: "v")
        let file = try #require(
            try DatabaseQueue(path: directory.appending(path: "index.sqlite").path).read { db in
                try String.fetchOne(db, sql: "SELECT file FROM entry WHERE key = 'v'")
            }
        )
        let subdirectory = String(file.prefix(while: { $0 != "/" }))
        let name = String(file.dropFirst(subdirectory.count + 1))
        // The real subdirectory moves outside the cache; a link to it takes its place.
        let outside = scratch.path + "/outside"
        let linked = directory.path(percentEncoded: false) + "/data/" + subdirectory
        #expect(rename(linked, outside) == 0)
        #expect(symlink(outside, linked) == 0)

        #expect(try cache.data(forKey: "v") == nil, "read through the link: a miss")
        try cache.setData(Data(repeating: 2, count: 30_000), forKey: "v")
        try cache.setData(Data(repeating: 3, count: 30_000), forKey: "w")
        #expect(try Data(contentsOf: URL(filePath: outside + "/" + name)) == Data(repeating: 1, count: 30_000))
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside) == [name], "no write landed outside")
        #expect(try cache.data(forKey: "v") == Data(repeating: 2, count: 30_000))
        try cache.removeData(forKey: "v")
        try cache.removeData(forKey: "w")
        #expect(FileManager.default.fileExists(atPath: outside + "/" + name), "no removal reached outside")

        // `data` and `tmp` themselves replaced by links: the next open puts real directories back.
        try cache.close()
        let elsewhere = scratch.path + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: false)
        for part in ["data", "tmp"] {
            let path = directory.path(percentEncoded: false) + "/" + part
            #expect(rename(path, scratch.path + "/old-" + part) == 0)
            #expect(symlink(elsewhere, path) == 0)
        }
        let reopened = try DiskCache(directory: directory)
        try reopened.setData(Data(repeating: 4, count: 30_000), forKey: "x")
        #expect(try reopened.data(forKey: "x") == Data(repeating: 4, count: 30_000))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty,
            "nothing written through a link"
        )
        for part in ["data", "tmp"] {
            let type = try FileManager.default.attributesOfItem(
                atPath: directory.path(percentEncoded: false) + "/" + part
            )[.type]
            #expect(type as? FileAttributeType == .typeDirectory)
        }
        try reopened.close()
    }

    @Test("a value file replaced by a FIFO is a prompt miss, not a hang (also for a streamed read)")
    func fifoFile() throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let cache = try DiskCache(directory: directory)
        for key in ["a", "b"] { try cache.setData(Data(repeating: 2, count: 30_000), forKey: key) }
        let rows = try DatabaseQueue(path: directory.appending(path: "index.sqlite").path).read { db in
            try String.fetchAll(db, sql: "SELECT file FROM entry ORDER BY key")
        }
        for file in rows {
            let path = directory.path(percentEncoded: false) + "/data/" + file
            unlink(path)
            #expect(mkfifo(path, 0o600) == 0)
        }
        // A hang here would stop the test run: the regression shows as a timeout.
        #expect(try cache.data(forKey: "a") == nil)
        #expect(try cache.openValue(forKey: "b") == nil)
        #expect(cache.statistics.damaged == 2)
    }

    @Test("a streamed read of a garbled file ends with .corrupt, and the entry is gone")
    func streamedGarbled() throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let cache = try DiskCache(directory: directory)
        let write = try cache.beginStreamingWrite(forKey: "s")
        for _ in 0..<10 { try Data(repeating: 3, count: 10_000).withUnsafeBytes { try write.write($0) } }
        try write.commit()
        let file = try #require(
            try DatabaseQueue(path: directory.appending(path: "index.sqlite").path).read { db in
                try String.fetchOne(db, sql: "SELECT file FROM entry WHERE key = 's'")
            }
        )
        let descriptor = open(directory.path(percentEncoded: false) + "/data/" + file, O_WRONLY)
        var byte: UInt8 = 4
        #expect(pwrite(descriptor, &byte, 1, 55_555) == 1)
        close(descriptor)
        guard case .file(let reader) = try #require(try cache.openValue(forKey: "s")) else {
            Issue.record("a 100 KB value is a file")
            return
        }
        let error = try #require(throws: StowageError.self) {
            while try !reader.read(upTo: 16_384).isEmpty {}
        }
        #expect(error.code == .corrupt)
        #expect(try cache.contains(key: "s") == false)
    }

    @Test("opening for serving: small values whole (a garbled one a miss), large ones as a file")
    func openValueForServing() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let cache = try DiskCache(directory: directory)
        try await cache.setData(Data("inline".utf8), forKey: "inline")
        try await cache.setData(Data(repeating: 5, count: 100_000), forKey: "whole")
        try await cache.setData(Data(repeating: 6, count: 300_000), forKey: "large")
        guard case .data(let inline) = try await cache.openValue(forKey: "inline", readingWholeUpTo: 200_000),
            case .data(let whole) = try await cache.openValue(forKey: "whole", readingWholeUpTo: 200_000),
            case .file(let reader) = try await cache.openValue(forKey: "large", readingWholeUpTo: 200_000)
        else {
            Issue.record("inline and 100 KB values come whole, a 300 KB one as a file")
            return
        }
        #expect(inline == Data("inline".utf8))
        #expect(whole == Data(repeating: 5, count: 100_000))
        #expect(reader.size == 300_000)
        #expect(try await cache.openValue(forKey: "absent", readingWholeUpTo: 200_000) == nil)

        let file = try #require(
            try await DatabaseQueue(path: directory.appending(path: "index.sqlite").path).read { db in
                try String.fetchOne(db, sql: "SELECT file FROM entry WHERE key = 'whole'")
            }
        )
        let descriptor = open(directory.path(percentEncoded: false) + "/data/" + file, O_WRONLY)
        var byte: UInt8 = 4
        #expect(pwrite(descriptor, &byte, 1, 77_777) == 1)
        close(descriptor)
        #expect(try await cache.openValue(forKey: "whole", readingWholeUpTo: 200_000) == nil)
        #expect(try await cache.contains(key: "whole") == false)
    }

    @Test("values written by a format-2 index (no checksum) still read; new writes carry one")
    func legacyRowsWithoutChecksum() throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let cache = try DiskCache(directory: directory)
        try cache.setData(Data("old".utf8), forKey: "old")
        try DatabaseQueue(path: directory.appending(path: "index.sqlite").path).write { db in
            try db.execute(sql: "UPDATE entry SET checksum = NULL")
        }
        #expect(try cache.data(forKey: "old") == Data("old".utf8))
        try cache.setData(Data("new".utf8), forKey: "new")
        let checksum = try DatabaseQueue(path: directory.appending(path: "index.sqlite").path).read { db in
            try Int64.fetchOne(db, sql: "SELECT checksum FROM entry WHERE key = 'new'")
        }
        #expect(checksum == Int64(CRC32C.checksum(Data("new".utf8))))
    }
}
