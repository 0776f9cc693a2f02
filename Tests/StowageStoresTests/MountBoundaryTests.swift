import Foundation
import StowageCore
import StowageTestSupport
import Testing

/// The removal APIs beside a mount: `DirectoryClearing`, `UserSpaces.wipe` and a
/// `StorageMonitor` relief (its purgeable sweep and marked items) leave a tree bind-mounted inside
/// their directory whole and name the mount point in their report. Each runs in
/// `StowageTestWorker removals` inside a private mount namespace (PrivateMounts), never in the
/// test process.
@Suite(.enabled(if: PrivateMounts.isAvailable, "needs root to mount in a private mount namespace"))
struct MountBoundaryTests {
    private func names(_ failures: Any?, _ path: String) -> Bool {
        (failures as? [[String: Any]])?.contains {
            $0["path"] as? String == path && $0["message"] as? String == MountReports.skip
        }
            ?? false
    }

    @Test("DirectoryClearing leaves a bind mount inside the directory whole and names it")
    func directoryClearing() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: MountReports.worker(["clear", fixture.directoryPath]),
                expectingAfter: fixture.mountedFiles
            )
            #expect(outcome.status == 0, "\(outcome.standardError)")
            #expect(fixture.outsideIsIntact && outcome.missingAfter.isEmpty)
            #expect(fixture.ownFileIsGone)
            #expect(names(try MountReports.object(outcome)["failures"], fixture.mountPoint))
        }
    }

    @Test("UserSpaces.wipe leaves a bind mount in the user's data whole, names it, and still finishes")
    func wipe() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base, directory: "Library/Application Support/users/ada")
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: MountReports.worker(["wipe", fixture.root, "ada"])
            )
            #expect(outcome.status == 0, "\(outcome.standardError)")
            #expect(fixture.outsideIsIntact)
            #expect(fixture.ownFileIsGone)
            let report = try MountReports.object(outcome)
            let skipped = try #require(report["skipped"] as? [[String: Any]], "\(report)")
            #expect(skipped.count == 1 && skipped.first?["message"] as? String == MountReports.skip, "\(report)")
            // The wipe moved the directory away first: the mount point is named in its tombstone.
            #expect((skipped.first?["path"] as? String)?.hasSuffix("/mnt") == true, "\(report)")
            #expect(!FileManager.default.fileExists(atPath: fixture.directoryPath), "the user's space reads empty")
        }
    }

    @Test("a storage-pressure relief sweeps and purges marked items around a bind mount, naming it")
    func storageMonitorRelief() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base, directory: "Documents/attach", daysOld: 30)
            // A marked item holding a mount too, beside the registered directory.
            let marked = try MountFixture(in: base.appending(path: "second"), directory: "Documents/exports")
            try FileManager.default.createDirectory(
                atPath: fixture.root + "/Documents/exports/mnt",
                withIntermediateDirectories: true
            )
            try Data(repeating: 1, count: 10_000).write(to: URL(filePath: fixture.root + "/Documents/exports/own.txt"))
            do {
                try Marks.setPurgeable(true, at: URL(filePath: fixture.root + "/Documents/exports"))
            } catch StowageError.Code.unsupported {
                return
            }
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind, .bind(marked.outside, at: fixture.root + "/Documents/exports/mnt")],
                command: MountReports.worker(["relieve", fixture.root, fixture.directory])
            )
            #expect(outcome.status == 0, "\(outcome.standardError)")
            #expect(fixture.outsideIsIntact && marked.outsideIsIntact)
            #expect(fixture.ownFileIsGone)
            #expect(!FileManager.default.fileExists(atPath: fixture.root + "/Documents/exports/own.txt"))
            let report = try MountReports.object(outcome)
            let sweep = try #require(report["sweepFailures"] as? [String], "\(report)")
            let purge = try #require(report["markedFailures"] as? [String], "\(report)")
            #expect(sweep.contains("\(fixture.mountPoint): \(MountReports.skip)"), "\(report)")
            #expect(purge.contains("\(fixture.root)/Documents/exports/mnt: \(MountReports.skip)"), "\(report)")
        }
    }

    @Test("clear caches leaves a disk cache mounted in the caches location whole and names the mount")
    func clearCachesWithAMountedDiskCache() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base, directory: "Library/Caches")
            let mountedCache = fixture.outside + "/cache"
            let made = try await PrivateMounts.run(
                mounts: [],
                command: MountReports.worker(["make-cache", mountedCache])
            )
            try #require(made.status == 0, "\(made.standardError)")
            let before = listing(mountedCache)
            try #require(!before.isEmpty)
            let outcome = try await PrivateMounts.run(
                mounts: [.bind(mountedCache, at: fixture.mountPoint)],
                command: MountReports.worker(["clear-caches", fixture.root])
            )
            #expect(outcome.status == 0, "\(outcome.standardError)")
            #expect(listing(mountedCache) == before, "the mounted cache's files are untouched")
            #expect(fixture.ownFileIsGone)
            let tasks = try #require(
                try MountReports.object(outcome)["tasks"] as? [[String: Any]],
                "\(outcome.standardOutput)"
            )
            #expect(tasks.contains { names($0["failures"], fixture.mountPoint) }, "\(tasks)")
        }
    }
}
