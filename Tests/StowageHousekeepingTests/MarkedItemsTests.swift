import Foundation
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageHousekeeping

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("marked items")
struct MarkedItemsTests {
    private let now = Date().timeIntervalSince1970
    private let day = 86_400.0

    /// Marks `relative` purgeable; false where the file system has no user xattrs.
    private func mark(_ fixture: TestContainer, _ relative: String) throws -> Bool {
        do {
            try Marks.setPurgeable(true, at: fixture.url(relative))
            return true
        } catch StowageError.Code.unsupported {
            return false
        }
    }

    @Test("marked files and directories go oldest first, until the bytes asked for are freed; unmarked ones stay")
    func oldestFirstUntilEnough() async throws {
        let fixture = try TestContainer()
        try fixture.file("Documents/attachments/old.pdf", bytes: 40_960, modified: now - 30 * day)
        try fixture.file("Library/Application Support/exports/middle/a", bytes: 40_960, modified: now - 20 * day)
        try fixture.file("Library/Application Support/exports/middle/b", bytes: 40_960, modified: now - 20 * day)
        try fixture.file("Documents/attachments/new.pdf", bytes: 40_960, modified: now - day)
        try fixture.file("Documents/keep.txt", bytes: 40_960, modified: now - 90 * day)
        guard try mark(fixture, "Documents/attachments/old.pdf") else { return }
        #expect(try mark(fixture, "Library/Application Support/exports/middle"))
        #expect(try mark(fixture, "Documents/attachments/new.pdf"))
        let marked = MarkedItems(container: fixture.container)

        let scan = try await marked.scan()
        #expect(scan.items.map(\.path.lastPathComponent) == ["old.pdf", "middle", "new.pdf"])
        #expect(scan.items[1].isDirectory && scan.items[1].bytes >= ByteCount(81_920))
        #expect(scan.items[1].location == .applicationSupport)

        // 40 KiB asked: the oldest item alone is enough.
        let first = try await marked.purge(atLeast: ByteCount(40_000))
        #expect(first.removed.map(\.path.lastPathComponent) == ["old.pdf"])
        #expect(first.remaining == 2 && first.isComplete)
        #expect(!fixture.exists("Documents/attachments/old.pdf"))
        #expect(fixture.exists("Documents/attachments/new.pdf"))

        // A request for zero, as the monitor's "apply your own limits", removes nothing.
        #expect(try await marked.purge(PurgeRequest()) == .zero)

        let rest = try await marked.purge(atLeast: nil)
        #expect(rest.removed.map(\.path.lastPathComponent) == ["middle", "new.pdf"])
        #expect(!fixture.exists("Library/Application Support/exports/middle"))
        #expect(fixture.exists("Library/Application Support/exports"), "only the marked directory goes")
        #expect(fixture.exists("Documents/keep.txt"), "old but not marked")
    }

    @Test("the caches and temporary locations carry the mark themselves, but are never removed")
    func locationsStay() async throws {
        let fixture = try TestContainer()
        _ = try await fixture.container.directory(for: .caches)
        _ = try await fixture.container.directory(for: .temporary)
        try fixture.file("Library/Caches/thumbs/1.jpg")
        try fixture.file("tmp/scratch")
        guard try Marks.isPurgeable(fixture.container.url(for: .caches)) else { return }
        let report = try await MarkedItems(container: fixture.container).purge(atLeast: nil)
        #expect(report.removed.isEmpty)
        #expect(fixture.exists("Library/Caches/thumbs/1.jpg") && fixture.exists("tmp/scratch"))
    }

    @Test("a link is never followed: a marked target outside the container, or inside through a link, stays")
    func linksAreNotFollowed() async throws {
        let fixture = try TestContainer()
        let outside = try TemporaryDirectory("marked-outside")
        let target = outside.url.appending(path: "precious")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: target.appending(path: "file"))
        guard (try? Marks.setPurgeable(true, at: target)) != nil else { return }
        try fixture.file("Documents/real/marked.bin")
        #expect(try mark(fixture, "Documents/real/marked.bin"))
        try fixture.symlink("Documents/escape", to: target.path)
        try fixture.symlink("Documents/alias", to: fixture.url("Documents/real").path)

        let report = try await MarkedItems(container: fixture.container).purge(atLeast: nil)
        #expect(
            report.removed.map(\.path) == [fixture.url("Documents/real/marked.bin").path],
            "found once, by its own path"
        )
        #expect(FileManager.default.fileExists(atPath: target.appending(path: "file").path))
        #expect(fixture.exists("Documents/escape") && fixture.exists("Documents/alias"))
    }

    @Test("an entry replaced between the scan and the removal is left in place")
    func replacedEntryStays() async throws {
        let fixture = try TestContainer()
        try fixture.file("Documents/a.bin", modified: now - 10 * day)
        try fixture.file("Documents/b.bin", modified: now - 5 * day)
        guard try mark(fixture, "Documents/a.bin") else { return }
        #expect(try mark(fixture, "Documents/b.bin"))
        // The walk's own API: scan first, then swap b.bin for an unmarked file, then remove.
        let walk = MarkedItemsWalk(container: fixture.container, cancellation: nil)
        #expect(try walk.scan().items.count == 2)
        let report = try walk.purge(atLeast: nil) {
            // Called between the finding and the removal: replace b.bin by a new, unmarked file.
            try? FileManager.default.removeItem(at: fixture.url("Documents/b.bin"))
            try? Data("new".utf8).write(to: fixture.url("Documents/b.bin"))
        }
        #expect(report.removed.map(\.path.lastPathComponent) == ["a.bin"])
        #expect(report.failures.count == 1 && report.failures[0].contains("replaced"), "\(report.failures)")
        #expect(try String(contentsOf: fixture.url("Documents/b.bin"), encoding: .utf8) == "new")
    }

    @Test("an entry another purge removed first is neither reported removed nor counted as freed")
    func vanishedEntryIsNotCounted() async throws {
        let fixture = try TestContainer()
        try fixture.file("Documents/a.bin", bytes: 40_960, modified: now - 10 * day)
        try fixture.file("Documents/b.bin", bytes: 40_960, modified: now - 5 * day)
        guard try mark(fixture, "Documents/a.bin") else { return }
        #expect(try mark(fixture, "Documents/b.bin"))
        let walk = MarkedItemsWalk(container: fixture.container, cancellation: nil)
        let bBytes = try #require(try walk.scan().items.last?.bytes)
        // A.bin goes before this walk reaches it (another process purging the same container):
        // the goal is not met by it, so b.bin goes too.
        let report = try walk.purge(atLeast: ByteCount(1)) {
            try? FileManager.default.removeItem(at: fixture.url("Documents/a.bin"))
        }
        #expect(report.removed.map(\.path.lastPathComponent) == ["b.bin"])
        #expect(report.bytesFreed == bBytes)
        #expect(report.isComplete, "\(report.failures)")
        #expect(!fixture.exists("Documents/b.bin"))
    }

    @Test("a marked file with another hard link frees nothing, and the purge goes on to the next item")
    func hardLinkFreesNothing() async throws {
        let fixture = try TestContainer()
        let outside = try TemporaryDirectory("marked-hard-link")
        let kept = try outside.write("kept.bin", bytes: 409_600)
        try fixture.directory("Documents")
        #expect(link(kept.path, fixture.url("Documents/linked.bin").path) == 0)
        try setModificationTime(fixture.url("Documents/linked.bin"), now - 10 * day)
        try fixture.file("Documents/own.bin", bytes: 40_960, modified: now - 5 * day)
        guard try mark(fixture, "Documents/linked.bin") else { return }
        #expect(try mark(fixture, "Documents/own.bin"))
        let marked = MarkedItems(container: fixture.container)
        #expect(try await marked.scan().items.first?.bytes == .zero, "the blocks stay with the other link")

        let report = try await marked.purge(atLeast: ByteCount(1))
        #expect(report.removed.map(\.path.lastPathComponent) == ["linked.bin", "own.bin"])
        #expect(report.bytesFreed < ByteCount(409_600), "only own.bin's blocks came back")
        #expect(FileManager.default.fileExists(atPath: kept.path))
    }

    @Test("a marked directory that holds a location's directory (through a link inside the root) stays")
    func markedDirectoryHoldingALocationStays() async throws {
        let fixture = try TestContainer()
        try fixture.file("Documents/box/scratch/work.txt")
        try fixture.symlink("tmp", to: fixture.url("Documents/box/scratch").path)
        guard try mark(fixture, "Documents/box") else { return }
        let marked = MarkedItems(container: fixture.container)
        let scan = try await marked.scan()
        #expect(scan.items.isEmpty)
        #expect(scan.skipped.contains { $0.contains("location") }, "\(scan.skipped)")
        _ = try await marked.purge(atLeast: nil)
        #expect(fixture.exists("Documents/box/scratch/work.txt"), "the temporary location stays")
    }

    @Test("a mark value longer than any Stowage writes is not the mark: the walk goes on inside")
    func oversizedMarkValueIsUnmarked() async throws {
        let fixture = try TestContainer()
        try fixture.file("Documents/folder/inner/marked.bin")
        guard try mark(fixture, "Documents/folder/inner/marked.bin") else { return }
        try Marks.setAttribute(
            Marks.purgeableAttribute,
            to: String(repeating: "x", count: 300),
            of: fixture.url("Documents/folder")
        )
        #expect(try Marks.isPurgeable(fixture.url("Documents/folder")) == false)
        let scan = try await MarkedItems(container: fixture.container).scan()
        #expect(scan.items.map(\.path.lastPathComponent) == ["marked.bin"])
        #expect(scan.skipped.isEmpty, "\(scan.skipped)")
    }

    #if os(Linux)
    // Linux file systems take any bytes for a name; APFS refuses invalid UTF-8.
    @Test("a name that is not UTF-8 is skipped and reported, never removed as its look-alike")
    func nonUTF8NamesAreSkipped() async throws {
        let fixture = try TestContainer()
        try fixture.directory("Documents")
        // "caf\xFF": invalid UTF-8. Its repaired spelling "caf\u{FFFD}" is a different, unmarked
        // file. Python makes and marks it: a Swift String cannot hold the byte.
        let script = """
            import os, sys
            path = os.fsencode(sys.argv[1]) + b"/caf\\xff"
            open(path, "wb").close()
            os.setxattr(path, "user.stowage.purgeable", b"true")
            """
        guard (try? runCommand(["python3", "-c", script, fixture.url("Documents").path])) != nil else { return }
        try fixture.file("Documents/caf\u{FFFD}")

        let marked = MarkedItems(container: fixture.container)
        let scan = try await marked.scan()
        #expect(scan.items.isEmpty)
        #expect(scan.skipped.contains { $0.contains("not UTF-8") }, "\(scan.skipped)")
        _ = try await marked.purge(atLeast: nil)
        #expect(fixture.exists("Documents/caf\u{FFFD}"))
    }
    #endif

    @Test("under pressure the monitor removes marked items after the caches and before the purgeable sweep")
    func monitorOrder() async throws {
        let fixture = try TestContainer()
        try fixture.file("Documents/old-export.zip", bytes: 409_600, modified: now - 40 * day)
        guard try mark(fixture, "Documents/old-export.zip") else { return }
        let purgeable = PurgeableDirectories(container: fixture.container)
        let volume = StorageMonitorTests.FakeVolume()
        volume.available.withLock { $0 = 100 * .megabyte }
        let cache = StorageMonitorTests.CountingCache()
        let monitor = StorageMonitor(purgeable: purgeable, caches: [cache], capacity: { volume.read() })
        let report = try #require(try await monitor.check())
        #expect(cache.purges.load(ordering: .relaxed) >= 1)
        #expect(report.markedItems?.removed.map(\.path.lastPathComponent) == ["old-export.zip"])
        #expect(!fixture.exists("Documents/old-export.zip"))
        #expect(report.bytesFreed >= 5 * .megabyte + ByteCount(409_600))

        var off = StorageMonitor.Configuration()
        off.purgesMarkedItems = false
        try fixture.file("Documents/other.zip", modified: now - 40 * day)
        #expect(try mark(fixture, "Documents/other.zip"))
        let quiet = StorageMonitor(purgeable: purgeable, configuration: off, capacity: { volume.read() })
        #expect(try await quiet.check()?.markedItems == nil)
        #expect(fixture.exists("Documents/other.zip"))
    }
}

extension String {
    fileprivate var lastPathComponent: String { (self as NSString).lastPathComponent }
}
