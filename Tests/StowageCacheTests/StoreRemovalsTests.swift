import Foundation
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageCache

/// A removal through one memory-fronted handle is final for every other handle on the same
/// directory, in this process or another (`StoreRemovals`): their memory goes before their next
/// read, and a read that began before the removal keeps nothing. A handle's own removals leave
/// the rest of its memory alone.
@Suite("Store removals")
struct StoreRemovalsTests {
    @Test("a removal through another handle is final for this handle's memory tier")
    func removalThroughAnotherHandle() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let reader = try HybridCache.strings(at: directory)
        let remover = try HybridCache.strings(at: directory)
        try await reader.setValue("token", forKey: "session")
        try await reader.setValue("kept", forKey: "other")
        #expect(try await reader.value(forKey: "session") == "token")  // in the reader's memory
        #expect(reader.memory.count == 2)
        try await remover.removeValue(forKey: "session")
        #expect(try await reader.value(forKey: "session") == nil)
        // The rest of the reader's memory went with it; the disk copies are read back.
        #expect(try await reader.value(forKey: "other") == "kept")
        #expect(reader.memory.count == 1)
    }

    @Test("a removal in another process is final here")
    func removalFromAnotherProcess() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let cache = try HybridCache.strings(at: directory)
        for number in 0..<20 { try await cache.setValue("value \(number)", forKey: "key-\(number)") }
        #expect(try await cache.value(forKey: "key-3") == "value 3")
        #expect(try await CacheWorker.run(["remove", directory.path, "key-3"]) == "removed")
        #expect(try await cache.value(forKey: "key-3") == nil)
        #expect(try await cache.value(forKey: "key-4") == "value 4")
    }

    @Test("a sign-out's tagged removal in another process reaches this memory tier")
    func taggedRemovalFromAnotherProcess() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let cache = try HybridCache.strings(at: directory)
        try await cache.setValue("alice's feed", forKey: "feed", tag: "user:alice")
        try await cache.setValue("alice's avatar", forKey: "avatar", tag: "user:alice")
        try await cache.setValue("public", forKey: "banner")
        #expect(try await cache.value(forKey: "feed") == "alice's feed")
        #expect(try await CacheWorker.run(["remove-tagged", directory.path, "user:alice"]) == "removed")
        #expect(try await cache.value(forKey: "feed") == nil)
        #expect(try await cache.value(forKey: "avatar") == nil)
        #expect(try await cache.value(forKey: "banner") == "public")
    }

    @Test("a handle's own removals leave the rest of its memory")
    func ownRemovalsKeepMemory() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try HybridCache.strings(at: scratch.url.appending(path: "cache"))
        for number in 0..<10 { try await cache.setValue("value \(number)", forKey: "key-\(number)") }
        #expect(cache.memory.count == 10)
        for number in 0..<5 { try await cache.removeValue(forKey: "key-\(number)") }
        _ = try await cache.removeAll(tagged: "no such tag")
        #expect(try await cache.value(forKey: "key-9") == "value 9")
        #expect(cache.memory.count == 5)
    }

    @Test("a read that began before another handle's removal keeps nothing in memory")
    func readRacingAnotherHandlesRemoval() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let reader = try HybridCache.strings(at: directory)
        let remover = try HybridCache.strings(at: directory)
        try await remover.setValue("old", forKey: "k")
        // The reader found the disk copy (read begun), then the other handle removed it.
        let mark = reader.levels.beginRead()
        try await remover.removeValue(forKey: "k")
        #expect(!reader.levels.keepInMemory("old", forKey: "k", cost: 3, readAt: mark))
        #expect(reader.memory.value(forKey: "k") == nil)
        #expect(try await reader.value(forKey: "k") == nil)
    }

    @Test("a write whose memory copy lands after another handle's removal does not keep it")
    func writeRacingAnotherHandlesRemoval() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let writer = try HybridCache.strings(at: directory)
        let remover = try HybridCache.strings(at: directory)
        // The other handle's removal commits after this write's disk half, before its memory half.
        try await writer.levels.write("new", forKey: "k", cost: 3) {
            try await writer.disk.setData(Data("new".utf8), forKey: "k")
            try await remover.removeValue(forKey: "k")
        }
        #expect(writer.memory.value(forKey: "k") == nil)
        #expect(try await writer.value(forKey: "k") == nil)
    }

    @Test("many removals from two handles at once: no value outlives its removal in either memory")
    func concurrentRemovalsFromTwoHandles() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let first = try HybridCache.strings(at: directory)
        let second = try HybridCache.strings(at: directory)
        let keys = (0..<200).map { "key-\($0)" }
        for key in keys { try await first.setValue(key, forKey: key) }
        for key in keys { _ = try await second.value(forKey: key) }  // both memories hold them all
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, key) in keys.enumerated() {
                let remover = index.isMultiple(of: 2) ? first : second
                group.addTask { try await remover.removeValue(forKey: key) }
                group.addTask { _ = try await first.value(forKey: key) }
                group.addTask { _ = try await second.value(forKey: key) }
            }
            try await group.waitForAll()
        }
        for key in keys {
            #expect(try await first.value(forKey: key) == nil, "\(key)")
            #expect(try await second.value(forKey: key) == nil, "\(key)")
        }
    }

    @Test("a removals file that is garbled, truncated or a link is replaced, never followed")
    func damagedRemovalsFileIsReplaced() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appending(path: StoreRemovals.fileName).path
        let target = scratch.url.appending(path: "elsewhere")
        try Data("keep me".utf8).write(to: target)
        for damage in ["garbled", "truncated", "link"] {
            try? FileManager.default.removeItem(atPath: path)
            switch damage {
            case "garbled": try Data(repeating: 0xAB, count: 16).write(to: URL(filePath: path))
            case "truncated": try Data("STWRMV01".utf8).write(to: URL(filePath: path))
            default: try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target.path)
            }
            let cache = try HybridCache.strings(at: directory)
            try await cache.setValue("v", forKey: "k")
            try await cache.removeValue(forKey: "k")
            let bytes = try Data(contentsOf: URL(filePath: path))
            #expect(bytes.count == 16, "\(damage)")
            #expect(bytes.prefix(8) == Data("STWRMV01".utf8), "\(damage)")
            #expect(try Data(contentsOf: target) == Data("keep me".utf8), "\(damage)")
        }
    }

    @Test("a revalidation in flight while another process removes the value does not store it back")
    func revalidationRacingRemovalInAnotherProcess() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let cache = try HybridCache.strings(at: directory)
        try await cache.setValue("token", forKey: "session")
        let path = directory.path
        // The source says "not modified" after another process (a sign-out in the app's
        // extension) removed the value: keeping it would store the removed value back.
        let kept = try await cache.value(
            forKey: "session",
            timeToLive: .seconds(600),
            policy: .revalidate { _ in
                let said = try await CacheWorker.run(["remove", path, "session"])
                return said == "removed" ? .notModified : .modified(said)
            },
            orLoad: { "loaded" }
        )
        #expect(kept == "token")
        #expect(try await cache.value(forKey: "session") == nil)
        let other = try HybridCache.strings(at: directory)
        #expect(try await other.value(forKey: "session") == nil)
    }

    @Test("a storm of own removals from many tasks never empties the rest of this handle's memory")
    func ownRemovalStormKeepsMemory() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try HybridCache.strings(at: scratch.url.appending(path: "cache"))
        let kept = (0..<50).map { "kept-\($0)" }
        let removed = (0..<400).map { "gone-\($0)" }
        for key in kept + removed { try await cache.setValue(key, forKey: key) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for key in removed {
                group.addTask { try await cache.removeValue(forKey: key) }
                group.addTask { _ = try await cache.value(forKey: kept[abs(key.hashValue) % kept.count]) }
            }
            group.addTask { _ = try await cache.removeAll(tagged: "no such tag") }
            try await group.waitForAll()
        }
        #expect(cache.memory.count == kept.count)
        for key in kept { #expect(cache.memory.value(forKey: key) == key, "\(key)") }
    }

    @Test("a removals file that is a directory, a FIFO, or not writable fails the open with its path")
    func unusableRemovalsFile() async throws {
        let scratch = try TemporaryDirectory()
        for kind in ["fifo", "directory", "read-only"] {
            let directory = scratch.url.appending(path: kind)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let path = directory.appending(path: StoreRemovals.fileName).path
            switch kind {
            case "fifo": #expect(mkfifo(path, 0o600) == 0)
            case "directory": try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            default:
                try Data("STWRMV01".utf8 + [UInt8](repeating: 0, count: 8)).write(to: URL(filePath: path))
                try FileManager.default.setAttributes([.posixPermissions: 0o400], ofItemAtPath: path)
            }
            do {
                let cache = try HybridCache.strings(at: directory)
                // Opened: a FIFO is replaced by a fresh file; root may write a read-only file.
                try await cache.setValue("v", forKey: "k")
                try await cache.removeValue(forKey: "k")
                let bytes = try Data(contentsOf: URL(filePath: path))
                #expect(bytes.count == 16, "\(kind)")
            } catch {
                #expect(kind != "fifo", "\(error)")
                #expect("\(error)".contains(StoreRemovals.fileName), "\(kind): \(error)")
            }
        }
    }

    @Test("a removal count that wraps past UInt64.max still tells own removals from others'")
    func countWrapsAround() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var count = UInt64.max - 1
        let bytes = Data("STWRMV01".utf8) + withUnsafeBytes(of: &count) { Data($0) }
        try bytes.write(to: directory.appending(path: StoreRemovals.fileName))
        let reader = try HybridCache.strings(at: directory)
        let remover = try HybridCache.strings(at: directory)
        for key in ["a", "b", "c", "d"] { try await reader.setValue(key, forKey: key) }
        // Own removals across the wrap keep the rest of memory.
        try await reader.removeValue(forKey: "a")
        try await reader.removeValue(forKey: "b")
        reader.levels.followStoreChanges()
        #expect(reader.memory.count == 2)
        // Another handle's removal after the wrap still empties it.
        try await remover.removeValue(forKey: "c")
        #expect(try await reader.value(forKey: "c") == nil)
        #expect(reader.memory.value(forKey: "d") == nil)
        #expect(try await reader.value(forKey: "d") == "d")
    }
}
