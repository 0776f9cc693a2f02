import Foundation
import StowageCore
import StowageHousekeeping
import StowageTestSupport
import Testing

@testable import StowageCache

/// Clears and removals reach every open handle: memory tiers, staged writes, other processes.
@Suite("Store generations")
struct StoreGenerationTests {
    @Test("a clear through another handle empties this handle's memory tier before its next read")
    func clearReachesMemoryTier() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let reader = try HybridCache.strings(at: directory)
        let clearer = try DiskCache(directory: directory)
        try await reader.setValue("secret", forKey: "k")
        #expect(try await reader.value(forKey: "k") == "secret")  // now in memory
        try await clearer.removeAll()
        #expect(try await reader.value(forKey: "k") == nil)
        #expect(reader.memory.count == 0)
        // The cache works on afterwards.
        try await reader.setValue("new", forKey: "k")
        #expect(try await reader.value(forKey: "k") == "new")
        #expect(try await clearer.data(forKey: "k") == Data("new".utf8))
    }

    @Test("a clear in another process empties this process's memory tier")
    func clearFromAnotherProcess() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let cache = try HybridCache.strings(at: directory)
        for number in 0..<50 { try await cache.setValue("value \(number)", forKey: "key-\(number)") }
        #expect(try await cache.value(forKey: "key-7") == "value 7")
        #expect(try await CacheWorker.run(["clear", directory.path, "0", "0"]) == "cleared")
        for number in 0..<50 { #expect(try await cache.value(forKey: "key-\(number)") == nil) }
    }

    @Test("writes staged before another handle's clear are dropped, not committed after it")
    func stagedWritesFromBeforeAClearAreDropped() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        var configuration = DiskCache.Configuration(name: "staged")
        configuration.durability = .deferred(maximumDelay: .seconds(60))
        // Never advanced: only the test commits, however late a loaded machine runs.
        configuration.deferredCommitClock = SteppedClock()
        let writer = try DiskCache(directory: directory, configuration: configuration)
        try await writer.setData(Data("before".utf8), forKey: "old")
        try await writer.setData(Data(repeating: 7, count: 100_000), forKey: "old-file")
        let files = scratch.dataFiles()
        #expect(files.count == 1)
        #expect(try await CacheWorker.run(["clear", directory.path, "0", "0"]) == "cleared")
        #expect(try await writer.data(forKey: "old") == nil)
        try await writer.setData(Data("after".utf8), forKey: "new")
        try await writer.flush()
        let other = try DiskCache(directory: directory)
        #expect(try await other.data(forKey: "old") == nil)
        #expect(try await other.data(forKey: "old-file") == nil)
        #expect(try await other.data(forKey: "new") == Data("after".utf8))
        #expect(scratch.dataFiles().isEmpty)  // the dropped write's file went with it
    }

    @Test("a cache whose directory is removed while open reads nothing and refuses writes with .notFound")
    func removedDirectoryRetiresOpenHandles() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "caches/thumbnails")
        let disk = try DiskCache(directory: directory)
        let hybrid = HybridCache(
            memory: try MemoryCache<String, String>(configuration: .init(costLimit: 1 << 20)),
            disk: disk,
            serializer: StringSerializer()
        )
        try await hybrid.setValue("inline secret", forKey: "k")
        #expect(try await hybrid.value(forKey: "k") == "inline secret")
        // A cleaner or a wipe deletes the tree; the handles still hold the index open.
        let report = try await DirectoryClearing.clearContents(of: scratch.url.appending(path: "caches"))
        #expect(report.isComplete)
        #expect(disk.isRemoved)
        #expect(try await hybrid.value(forKey: "k") == nil)
        #expect(try await disk.data(forKey: "k") == nil)
        let error = try #require(throws: StowageError.self) { try disk.setData(Data("x".utf8), forKey: "k") }
        #expect(error.code == .notFound)
        #expect(error.message.contains("open it again"))
        await #expect(throws: StowageError.self) { try await hybrid.setValue("again", forKey: "k") }
        #expect(try await hybrid.value(forKey: "k") == nil)
        // Opening the path again starts a new, empty cache; the old handle stays retired.
        let reopened = try DiskCache(directory: directory)
        #expect(!reopened.isRemoved)
        #expect(try await reopened.data(forKey: "k") == nil)
        try await reopened.setData(Data("fresh".utf8), forKey: "k")
        #expect(try await disk.data(forKey: "k") == nil)
    }

    @Test("a removal through the cleaner retires the caches it deletes")
    func cleanerRetiresCaches() async throws {
        let scratch = try TemporaryDirectory()
        let container = Container(root: scratch.url, identifier: "org.stowage.tests")
        let caches = try await container.directory(for: .caches)
        let cache = try HybridCache.strings(at: caches.appending(path: "feed"))
        try await cache.setValue("v", forKey: "k")
        #expect(try await cache.value(forKey: "k") == "v")
        let manifest = CleanManifest(tasks: [.path("Library/Caches", entries: [])])
        let report = try await CacheCleaner(container: container).run(manifest).report()
        #expect(report.tasks.allSatisfy { $0.isSuccess })
        #expect(cache.disk.isRemoved)
        #expect(try await cache.value(forKey: "k") == nil)
    }

    @Test("a generation file that is garbled, truncated, a link or a FIFO is replaced, never followed")
    func damagedGenerationFilesAreReplaced() throws {
        let scratch = try TemporaryDirectory()
        let outside = scratch.url.appending(path: "outside")
        try Data("precious".utf8).write(to: outside)
        for damage in ["garbled", "truncated", "link", "fifo"] {
            let directory = scratch.url.appending(path: damage, directoryHint: .isDirectory)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let path = directory.appending(path: StoreGeneration.fileName).path
            switch damage {
            case "garbled": try Data(repeating: 0xFF, count: 16).write(to: URL(filePath: path))
            case "truncated": try Data("STWGEN".utf8).write(to: URL(filePath: path))
            case "link": try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: outside.path)
            default: #expect(mkfifo(path, 0o600) == 0)
            }
            let cache = try DiskCache(directory: directory)
            try cache.setData(Data("v".utf8), forKey: "k")
            try cache.removeAll()  // advances the fresh file
            #expect(!cache.isRemoved, "\(damage)")
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect(attributes[.type] as? FileAttributeType == .typeRegular, "\(damage)")
            #expect(attributes[.size] as? Int == 16, "\(damage)")
        }
        #expect(try Data(contentsOf: outside) == Data("precious".utf8))
    }
}
